/*
 * cluster_describe.c - the describe APIs of a cluster of three brokers, by
 * raw request (kmsg.h), against ZooKeeper as the source of truth (the
 * partition state znodes and /brokers/topics/<t>, read through the test's
 * own session).
 *
 * describe   topics "dt" (7 partitions) and "dt2" (2), RF 3.
 *            DescribeTopicPartitions v0 (KIP-966) from every broker: per
 *            partition the leader, leader epoch and ISR of its state znode,
 *            the replicas of the topic znode in order, no offline replica,
 *            empty (not null) ELR and last known ELR, the topic id of the
 *            topic znode, every topic operation authorized. Paging from
 *            every broker: all topics with ResponsePartitionLimit 3 give
 *            every partition of a full answer exactly once, in order, each
 *            page at most 3 partitions and its NextCursor the first one left
 *            out (null on the last page); ["dt2", "dt"] with limit 7 ends
 *            exactly at dt's end and names (dt2, 0); a cursor past dt's end
 *            gives dt with no partitions. Errors: UNKNOWN_TOPIC_OR_PARTITION
 *            (zero id), INVALID_TOPIC_EXCEPTION for a bad name, and
 *            INVALID_REQUEST for every requested topic when the cursor's
 *            topic is not requested or its partition is negative.
 *            DescribeCluster v1 from every broker: the three brokers with
 *            their ports, the controller of /controller, the cluster id of
 *            Metadata. DescribeLogDirs v4 (Topics null) on broker 2, which
 *            follows every partition of "ld": each partition listed with its
 *            size, which grows after records are produced to the leaders
 *            and reaches the leader's own size, offset lag 0; a named
 *            partition that does not exist is left out.
 * killed     after kill -9 of a broker that is not the controller and leads
 *            partitions: DescribeCluster of the two others lists only them
 *            (and the same controller), and their DescribeTopicPartitions
 *            agrees with the state znodes: a new leader with a higher epoch
 *            where it led, the ISR without it, it alone offline, replicas
 *            unchanged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/tjson.h"

#define DTP_KEY 75
#define DESCRIBE_LOG_DIRS_KEY 35
#define DESCRIBE_CLUSTER_KEY 60

/* Kafka's error codes used here. */
#define E_UNKNOWN_TOPIC 3
#define E_INVALID_TOPIC 17
#define E_INVALID_REQUEST 42

/* Every topic operation (READ 3 ... ALTER_CONFIGS 11, not 9). */
#define TOPIC_ALL_OPERATIONS 0xdf8

/* ---- DescribeTopicPartitions by hand ---- */

typedef struct dtp_partition {
	int16_t err;
	int32_t index, leader, epoch;
	int nreplicas, nisr, noffline, nelr, nlast_elr; /* -1: null */
	int32_t replicas[HC_MAX_BROKERS], isr[HC_MAX_BROKERS], offline[HC_MAX_BROKERS];
} dtp_partition;

typedef struct dtp_topic {
	char name[256];
	int16_t err;
	uint8_t id[16];
	bool internal;
	int32_t auth_ops;
	int npartitions;
	dtp_partition p[64];
} dtp_topic;

typedef struct dtp_answer {
	int ntopics;
	dtp_topic t[16];
	bool cursor_null;
	char cursor_topic[256];
	int32_t cursor_partition;
} dtp_answer;

static int read_ids(k_rbuf *r, int32_t *out, const char *what)
{
	int64_t n = kr_carray(r, what);
	for (int64_t i = 0; i < n; i++) {
		int32_t v = kr_i32(r, what);
		if (i < HC_MAX_BROKERS)
			out[i] = v;
	}
	ck_assert_msg(n <= HC_MAX_BROKERS, "%s: %" PRId64 " ids", what, n);
	return (int)n;
}

/*
 * DescribeTopicPartitions v0 on broker id: topics[0..ntopics) (none: every
 * topic), limit, and a cursor when cursor_topic is not NULL. The whole
 * answer is parsed into *a (malloc'd by the caller).
 */
static void dtp(hc_cluster *c, int id, const char *const *topics, int ntopics, int32_t limit,
		const char *cursor_topic, int32_t cursor_partition, dtp_answer *a)
{
	static k_wbuf body;
	body.len = 0;
	kw_uvarint(&body, (uint64_t)ntopics + 1);
	for (int i = 0; i < ntopics; i++) {
		kw_cstr(&body, topics[i]);
		kw_tags0(&body);
	}
	kw_i32(&body, limit);
	if (cursor_topic) {
		kw_u8(&body, 1);
		kw_cstr(&body, cursor_topic);
		kw_i32(&body, cursor_partition);
		kw_tags0(&body);
	} else {
		kw_u8(&body, 0xff);
	}
	kw_tags0(&body);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, DTP_KEY, 0, &body, &r);
	close(fd);
	memset(a, 0, sizeof(*a));
	kr_i32(&r, "throttle");
	int64_t nt = kr_carray(&r, "topics");
	ck_assert_msg(nt >= 0 && nt <= 16, "%" PRId64 " topics", nt);
	a->ntopics = (int)nt;
	for (int t = 0; t < a->ntopics; t++) {
		dtp_topic *rt = &a->t[t];
		rt->err = kr_i16(&r, "topic error");
		ck_assert_msg(kr_cstr(&r, rt->name, sizeof(rt->name), "topic name") >= 0,
			      "a null topic name");
		kr_uuid(&r, rt->id, "topic id");
		rt->internal = kr_i8(&r, "is internal") != 0;
		int64_t np = kr_carray(&r, "partitions");
		ck_assert_msg(np >= 0 && np <= 64, "%" PRId64 " partitions", np);
		rt->npartitions = (int)np;
		for (int k = 0; k < rt->npartitions; k++) {
			dtp_partition *p = &rt->p[k];
			int32_t elr[HC_MAX_BROKERS];
			p->err = kr_i16(&r, "partition error");
			p->index = kr_i32(&r, "partition index");
			p->leader = kr_i32(&r, "leader");
			p->epoch = kr_i32(&r, "leader epoch");
			p->nreplicas = read_ids(&r, p->replicas, "replicas");
			p->nisr = read_ids(&r, p->isr, "isr");
			p->nelr = read_ids(&r, elr, "eligible leader replicas");
			p->nlast_elr = read_ids(&r, elr, "last known elr");
			p->noffline = read_ids(&r, p->offline, "offline replicas");
			kr_tags(&r, "partition tags");
		}
		rt->auth_ops = kr_i32(&r, "topic authorized operations");
		kr_tags(&r, "topic tags");
	}
	int8_t marker = kr_i8(&r, "next cursor");
	a->cursor_null = marker < 0;
	if (!a->cursor_null) {
		kr_cstr(&r, a->cursor_topic, sizeof(a->cursor_topic), "cursor topic");
		a->cursor_partition = kr_i32(&r, "cursor partition");
		kr_tags(&r, "cursor tags");
	}
	kr_tags(&r, "response tags");
	kr_done(&r, "DescribeTopicPartitions response");
	free(frame);
}

static const dtp_topic *dtp_find(const dtp_answer *a, const char *name)
{
	for (int i = 0; i < a->ntopics; i++)
		if (strcmp(a->t[i].name, name) == 0)
			return &a->t[i];
	return NULL;
}

/* ---- ZooKeeper's view ---- */

/* The replicas of topic/partition in /brokers/topics/<topic>; their count. */
static int zk_replicas(hc_cluster *c, const char *topic, int32_t partition, int32_t *out)
{
	char path[300], key[16], *data;
	int len;
	snprintf(path, sizeof(path), "/brokers/topics/%s", topic);
	ck_assert_int_eq(hc_zk_get(c, path, &data, &len, NULL), CTL_ZK_OK);
	tj *v = data ? tj_parse(data, (size_t)len, NULL, 0) : NULL;
	ck_assert_msg(v != NULL, "%s: %s", path, data ? data : "(null)");
	snprintf(key, sizeof(key), "%d", (int)partition);
	int n = tj_get_int_array(tj_get(v, "partitions"), key, out, HC_MAX_BROKERS);
	ck_assert_msg(n > 0, "%s: no replicas for partition %d", path, (int)partition);
	tj_free(v);
	free(data);
	return n;
}

/* The topic id of /brokers/topics/<topic> (base64url, as Kafka writes it). */
static void zk_topic_id(hc_cluster *c, const char *topic, uint8_t id[16])
{
	char path[300], *data;
	int len;
	snprintf(path, sizeof(path), "/brokers/topics/%s", topic);
	ck_assert_int_eq(hc_zk_get(c, path, &data, &len, NULL), CTL_ZK_OK);
	tj *v = data ? tj_parse(data, (size_t)len, NULL, 0) : NULL;
	const char *s = tj_get_str(v, "topic_id");
	ck_assert_msg(s && strlen(s) == 22, "%s: topic_id", path);
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	uint32_t acc = 0;
	int bits = 0, n = 0;
	for (const char *q = s; *q; q++) {
		const char *at = strchr(alphabet, *q);
		ck_assert_msg(at != NULL, "%s: topic_id %s", path, s);
		acc = acc << 6 | (uint32_t)(at - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n < 16)
				id[n++] = (uint8_t)(acc >> bits);
		}
	}
	ck_assert_int_eq(n, 16);
	tj_free(v);
	free(data);
}

static bool ids_have(const int32_t *v, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/*
 * Whether partition p of broker id's answer agrees with ZooKeeper (leader,
 * epoch, ISR as a set, replicas in order) with exactly `dead` offline (-1:
 * none). why gets the difference.
 */
static bool partition_agrees(hc_cluster *c, int id, const char *topic, const dtp_partition *p,
			     int dead, char *why, size_t cap)
{
	hc_state st;
	int32_t replicas[HC_MAX_BROKERS];
	if (hc_zk_state(c, topic, p->index, &st) != CTL_ZK_OK) {
		snprintf(why, cap, "%s-%d: no state znode", topic, (int)p->index);
		return false;
	}
	int nrep = zk_replicas(c, topic, p->index, replicas);
	bool isr_ok = p->nisr == st.nisr;
	for (int i = 0; isr_ok && i < p->nisr; i++)
		isr_ok = hc_isr_has(&st, p->isr[i]);
	bool rep_ok = p->nreplicas == nrep;
	for (int i = 0; rep_ok && i < nrep; i++)
		rep_ok = p->replicas[i] == replicas[i];
	bool off_ok = dead < 0 ? p->noffline == 0
			       : (p->noffline == 1 && p->offline[0] == dead) ||
					 (p->noffline == 0 && !ids_have(replicas, nrep, dead));
	if (p->err == 0 && p->leader == st.leader && p->epoch == st.leader_epoch && isr_ok &&
	    rep_ok && off_ok && p->nelr == 0 && p->nlast_elr == 0)
		return true;
	snprintf(why, cap,
		 "broker %d: %s-%d: error %d leader %d epoch %d isr %d (ok %d) replicas %d (ok %d) "
		 "offline %d (ok %d) elr %d last elr %d; state %s",
		 id, topic, (int)p->index, p->err, (int)p->leader, (int)p->epoch, p->nisr, isr_ok,
		 p->nreplicas, rep_ok, p->noffline, off_ok, p->nelr, p->nlast_elr, st.json);
	return false;
}

/* Broker id's answer for topic (npart partitions) agrees with ZooKeeper. */
static bool topic_agrees(hc_cluster *c, int id, const char *topic, int npart, int dead,
			 char *why, size_t cap)
{
	dtp_answer *a = calloc(1, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	const char *const names[] = {topic};
	dtp(c, id, names, 1, 2000, NULL, 0, a);
	bool ok = false;
	const dtp_topic *t = a->ntopics == 1 ? &a->t[0] : NULL;
	if (!t || strcmp(t->name, topic) != 0 || t->err != 0 || t->npartitions != npart ||
	    !a->cursor_null) {
		snprintf(why, cap, "broker %d: %d topics, error %d, %d partitions, cursor %s", id,
			 a->ntopics, t ? t->err : -1, t ? t->npartitions : -1,
			 a->cursor_null ? "null" : a->cursor_topic);
		goto out;
	}
	for (int k = 0; k < npart; k++) {
		if (t->p[k].index != k) {
			snprintf(why, cap, "broker %d: partition %d at position %d", id,
				 (int)t->p[k].index, k);
			goto out;
		}
		if (!partition_agrees(c, id, topic, &t->p[k], dead, why, cap))
			goto out;
	}
	ok = true;
out:
	free(a);
	return ok;
}

/* ---- DescribeCluster and DescribeLogDirs by hand ---- */

typedef struct dc_answer {
	int16_t err;
	char cluster_id[64];
	int32_t controller;
	int n;
	int32_t id[HC_MAX_BROKERS], port[HC_MAX_BROKERS];
} dc_answer;

/* DescribeCluster v1 (brokers) on broker id. */
static void describe_cluster(hc_cluster *c, int id, dc_answer *a)
{
	k_wbuf body;
	body.len = 0;
	kw_u8(&body, 0); /* IncludeClusterAuthorizedOperations */
	kw_u8(&body, 1); /* EndpointType: brokers */
	kw_tags0(&body);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, DESCRIBE_CLUSTER_KEY, 1, &body, &r);
	close(fd);
	memset(a, 0, sizeof(*a));
	kr_i32(&r, "throttle");
	a->err = kr_i16(&r, "error");
	kr_cstr(&r, NULL, 0, "error message");
	ck_assert_int_eq(kr_i8(&r, "endpoint type"), 1);
	kr_cstr(&r, a->cluster_id, sizeof(a->cluster_id), "cluster id");
	a->controller = kr_i32(&r, "controller");
	int64_t n = kr_carray(&r, "brokers");
	ck_assert_msg(n >= 0 && n <= HC_MAX_BROKERS, "%" PRId64 " brokers", n);
	a->n = (int)n;
	for (int i = 0; i < a->n; i++) {
		a->id[i] = kr_i32(&r, "broker id");
		kr_cstr(&r, NULL, 0, "host");
		a->port[i] = kr_i32(&r, "port");
		kr_cstr(&r, NULL, 0, "rack");
		kr_tags(&r, "broker tags");
	}
	kr_i32(&r, "cluster authorized operations");
	kr_tags(&r, "response tags");
	kr_done(&r, "DescribeCluster response");
	free(frame);
}

/* The brokers of a are exactly the running ones (ids and ports) and its
 * controller is /controller's. */
static bool cluster_agrees(hc_cluster *c, const dc_answer *a, char *why, size_t cap)
{
	int running = 0;
	for (int id = 1; id <= c->n; id++)
		running += hc_alive(c, id);
	int ctl = hc_zk_controller(c);
	bool ok = a->err == 0 && a->n == running && a->controller == ctl;
	for (int i = 0; ok && i < a->n; i++)
		ok = a->id[i] >= 1 && a->id[i] <= c->n && hc_alive(c, a->id[i]) &&
		     a->port[i] == c->b[a->id[i]]->port;
	if (!ok)
		snprintf(why, cap, "error %d, %d brokers (%d running), controller %d (/controller %d)",
			 a->err, a->n, running, (int)a->controller, ctl);
	return ok;
}

typedef struct ld_partition {
	int32_t index;
	int64_t size, lag;
	bool future;
} ld_partition;

typedef struct ld_answer {
	char dir[512];
	int64_t total;
	int n; /* partitions of the topic asked about */
	ld_partition p[64];
} ld_answer;

/*
 * DescribeLogDirs v4 on broker id: every partition (parts NULL) or
 * partitions parts[0..nparts) of topic; the one log dir's answer for topic
 * into *a.
 */
static void describe_log_dirs(hc_cluster *c, int id, const char *topic, const int32_t *parts,
			      int nparts, ld_answer *a)
{
	k_wbuf body;
	body.len = 0;
	if (!parts) {
		kw_uvarint(&body, 0);
	} else {
		kw_uvarint(&body, 2);
		kw_cstr(&body, topic);
		kw_uvarint(&body, (uint64_t)nparts + 1);
		for (int i = 0; i < nparts; i++)
			kw_i32(&body, parts[i]);
		kw_tags0(&body);
	}
	kw_tags0(&body);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, DESCRIBE_LOG_DIRS_KEY, 4, &body, &r);
	close(fd);
	memset(a, 0, sizeof(*a));
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_i16(&r, "error"), 0);
	ck_assert_int_eq(kr_carray(&r, "results"), 1);
	ck_assert_int_eq(kr_i16(&r, "dir error"), 0);
	kr_cstr(&r, a->dir, sizeof(a->dir), "log dir");
	int64_t nt = kr_carray(&r, "topics");
	for (int64_t t = 0; t < nt; t++) {
		char name[256];
		kr_cstr(&r, name, sizeof(name), "topic");
		int64_t np = kr_carray(&r, "partitions");
		for (int64_t k = 0; k < np; k++) {
			ld_partition p;
			p.index = kr_i32(&r, "partition");
			p.size = kr_i64(&r, "size");
			p.lag = kr_i64(&r, "offset lag");
			p.future = kr_i8(&r, "is future") != 0;
			kr_tags(&r, "partition tags");
			if (strcmp(name, topic) == 0) {
				ck_assert_int_lt(a->n, 64);
				a->p[a->n++] = p;
			}
		}
		kr_tags(&r, "topic tags");
	}
	a->total = kr_i64(&r, "total bytes");
	kr_i64(&r, "usable bytes");
	kr_tags(&r, "result tags");
	kr_tags(&r, "response tags");
	kr_done(&r, "DescribeLogDirs response");
	free(frame);
}

static const ld_partition *ld_find(const ld_answer *a, int32_t index)
{
	for (int i = 0; i < a->n; i++)
		if (a->p[i].index == index)
			return &a->p[i];
	return NULL;
}

/* ---- the tests ---- */

#define NPART 7
#define NPART2 2

typedef struct agree_arg {
	const char *topic;
	int npart;
	int dead;
	char why[1024];
} agree_arg;

/* Every running broker's DescribeTopicPartitions agrees with ZooKeeper. */
static bool all_agree(hc_cluster *c, void *arg)
{
	agree_arg *a = arg;
	for (int id = 1; id <= c->n; id++)
		if (hc_alive(c, id) && !topic_agrees(c, id, a->topic, a->npart, a->dead, a->why,
						     sizeof(a->why)))
			return false;
	return true;
}

/* The (topic, partition) pairs of a, appended to names/idx from *n. */
static void flatten(const dtp_answer *a, char (*names)[256], int32_t *idx, int *n, int cap)
{
	for (int t = 0; t < a->ntopics; t++)
		for (int k = 0; k < a->t[t].npartitions; k++) {
			ck_assert_int_lt(*n, cap);
			snprintf(names[*n], 256, "%s", a->t[t].name);
			idx[(*n)++] = a->t[t].p[k].index;
		}
}

/* Paging every topic with limit 3 on broker id: every partition of the
 * full answer once, in order, with the right cursors. */
static void check_paging(hc_cluster *c, int id)
{
	enum { CAP = 256 };
	static char all_names[CAP][256], paged_names[CAP][256];
	static int32_t all_idx[CAP], paged_idx[CAP];
	dtp_answer *a = calloc(1, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	int nall = 0, npaged = 0, pages = 0;
	dtp(c, id, NULL, 0, 2000, NULL, 0, a);
	ck_assert_msg(a->cursor_null, "broker %d: a cursor after the full answer", id);
	ck_assert_ptr_nonnull(dtp_find(a, "dt"));
	ck_assert_ptr_nonnull(dtp_find(a, "dt2"));
	for (int t = 1; t < a->ntopics; t++)
		ck_assert_msg(strcmp(a->t[t - 1].name, a->t[t].name) < 0, "broker %d: %s before %s",
			      id, a->t[t - 1].name, a->t[t].name);
	flatten(a, all_names, all_idx, &nall, CAP);
	const char *cursor = NULL;
	char cursor_buf[256];
	int32_t cursor_part = 0;
	for (;;) {
		ck_assert_int_lt(pages++, CAP);
		dtp(c, id, NULL, 0, 3, cursor, cursor_part, a);
		int before = npaged;
		flatten(a, paged_names, paged_idx, &npaged, CAP);
		ck_assert_msg(npaged - before <= 3, "broker %d: a page of %d partitions", id,
			      npaged - before);
		for (int i = before; i < npaged; i++)
			ck_assert_msg(i < nall && strcmp(paged_names[i], all_names[i]) == 0 &&
					      paged_idx[i] == all_idx[i],
				      "broker %d: paged partition %d is %s-%d", id, i, paged_names[i],
				      (int)paged_idx[i]);
		if (a->cursor_null)
			break;
		/* the cursor names the first partition left out */
		ck_assert_msg(npaged < nall && strcmp(a->cursor_topic, all_names[npaged]) == 0 &&
				      a->cursor_partition == all_idx[npaged],
			      "broker %d: cursor %s-%d after %d partitions", id, a->cursor_topic,
			      (int)a->cursor_partition, npaged);
		snprintf(cursor_buf, sizeof(cursor_buf), "%s", a->cursor_topic);
		cursor = cursor_buf;
		cursor_part = a->cursor_partition;
	}
	ck_assert_msg(npaged == nall, "broker %d: %d partitions paged, %d in all", id, npaged,
		      nall);
	cc_log("broker %d: %d partitions in %d pages of 3", id, npaged, pages);
	free(a);
}

START_TEST(test_describe)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "dt", NPART, 3, NULL, NULL);
	cc_create_topic(&c, "dt2", NPART2, 3, NULL, NULL);
	/* broker 2 follows every partition of "ld" */
	static const int32_t ld_assign[] = {1, 2, 3, 1, 3, 2, 3, 1, 2};
	cc_create_topic(&c, "ld", 3, 3, ld_assign, NULL);
	int ctl = hc_zk_controller(&c);
	ck_assert_int_ge(ctl, 1);

	/* DescribeTopicPartitions agrees with ZooKeeper on every broker */
	uint8_t id_dt[16];
	zk_topic_id(&c, "dt", id_dt);
	dtp_answer *a = calloc(1, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	for (int id = 1; id <= 3; id++) {
		char why[1024];
		ck_assert_msg(topic_agrees(&c, id, "dt", NPART, -1, why, sizeof(why)), "%s", why);
		ck_assert_msg(topic_agrees(&c, id, "dt2", NPART2, -1, why, sizeof(why)), "%s", why);
		const char *const one[] = {"dt"};
		dtp(&c, id, one, 1, 2000, NULL, 0, a);
		ck_assert_msg(memcmp(a->t[0].id, id_dt, 16) == 0, "broker %d: topic id", id);
		ck_assert(!a->t[0].internal);
		ck_assert_int_eq(a->t[0].auth_ops, TOPIC_ALL_OPERATIONS);
	}
	cc_log("DescribeTopicPartitions of every broker agrees with ZooKeeper");

	/* paging */
	for (int id = 1; id <= 3; id++)
		check_paging(&c, id);
	const char *const both[] = {"dt2", "dt"};
	dtp(&c, 1, both, 2, NPART, NULL, 0, a);
	ck_assert_int_eq(a->ntopics, 1);
	ck_assert_str_eq(a->t[0].name, "dt");
	ck_assert_int_eq(a->t[0].npartitions, NPART);
	ck_assert_msg(!a->cursor_null && strcmp(a->cursor_topic, "dt2") == 0 &&
			      a->cursor_partition == 0,
		      "limit used up at dt's end: cursor %s-%d", a->cursor_topic,
		      (int)a->cursor_partition);
	dtp(&c, 1, both, 2, 4, "dt", 4, a);
	ck_assert_int_eq(a->ntopics, 2);
	ck_assert_int_eq(a->t[0].npartitions, 3);
	ck_assert_int_eq(a->t[0].p[0].index, 4);
	ck_assert_int_eq(a->t[1].npartitions, 1);
	ck_assert_msg(!a->cursor_null && strcmp(a->cursor_topic, "dt2") == 0 &&
			      a->cursor_partition == 1,
		      "cursor %s-%d", a->cursor_topic, (int)a->cursor_partition);
	const char *const only_dt[] = {"dt"};
	dtp(&c, 2, only_dt, 1, 2000, "dt", 100, a);
	ck_assert_msg(a->ntopics == 1 && a->t[0].err == 0 && a->t[0].npartitions == 0 &&
			      a->cursor_null,
		      "cursor past the end: %d topics", a->ntopics);

	/* errors */
	const char *const unknown[] = {"dt", "no-such-topic", "bad/name"};
	dtp(&c, 3, unknown, 3, 2000, NULL, 0, a);
	ck_assert_int_eq(a->ntopics, 3);
	const dtp_topic *t = dtp_find(a, "no-such-topic");
	static const uint8_t zero[16];
	ck_assert_msg(t && t->err == E_UNKNOWN_TOPIC && t->npartitions == 0 &&
			      memcmp(t->id, zero, 16) == 0,
		      "unknown topic: error %d", t ? t->err : -1);
	t = dtp_find(a, "bad/name");
	ck_assert_msg(t && t->err == E_INVALID_TOPIC, "bad name: error %d", t ? t->err : -1);
	ck_assert_int_eq(dtp_find(a, "dt")->npartitions, NPART);
	dtp(&c, 3, both, 2, 2000, "dt3", 0, a);
	ck_assert_int_eq(a->ntopics, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(a->t[i].err == E_INVALID_REQUEST && a->t[i].npartitions == 0,
			      "cursor topic not requested: %s error %d", a->t[i].name, a->t[i].err);
	ck_assert(a->cursor_null);
	dtp(&c, 3, both, 2, 2000, "dt", -1, a);
	ck_assert_int_eq(a->ntopics, 2);
	ck_assert_int_eq(a->t[0].err, E_INVALID_REQUEST);
	ck_assert_int_eq(a->t[1].err, E_INVALID_REQUEST);
	free(a);
	cc_log("paging and errors as Kafka");

	/* DescribeCluster on every broker */
	hc_md md;
	ck_assert_int_eq(hc_metadata(&c, 1, NULL, &md, 5000), 0);
	for (int id = 1; id <= 3; id++) {
		dc_answer d;
		char why[256];
		describe_cluster(&c, id, &d);
		ck_assert_msg(cluster_agrees(&c, &d, why, sizeof(why)), "broker %d: %s", id, why);
		ck_assert_str_eq(d.cluster_id, md.cluster_id);
		ck_assert_int_eq(d.controller, ctl);
	}
	hc_md_free(&md);

	/* DescribeLogDirs on a follower */
	ld_answer before, after, leader;
	describe_log_dirs(&c, 2, "ld", NULL, 0, &before);
	ck_assert_msg(before.dir[0] == '/', "log dir %s", before.dir);
	ck_assert_int_gt(before.total, 0);
	ck_assert_msg(before.n == 3, "broker 2 lists %d partitions of ld", before.n);
	for (int32_t p = 0; p < 3; p++) {
		const ld_partition *lp = ld_find(&before, p);
		ck_assert_msg(lp && lp->lag == 0 && !lp->future, "ld-%d on broker 2", (int)p);
	}
	for (int32_t p = 0; p < 3; p++) {
		int leader_id = cc_leader(&c, "ld", p, NULL);
		ck_assert_int_ne(leader_id, 2);
		int64_t base;
		ck_assert_int_eq(cc_raw_produce(&c, leader_id, "ld", p, -1, 50, 0, &base), 0);
	}
	const int32_t named[] = {0, 1, 2, 9};
	for (int i = 0;; i++) {
		describe_log_dirs(&c, 2, "ld", named, 4, &after);
		ck_assert_msg(after.n == 3, "broker 2 lists %d partitions of ld (9 asked too)",
			      after.n);
		bool caught_up = true;
		for (int32_t p = 0; p < 3; p++) {
			int leader_id = cc_leader(&c, "ld", p, NULL);
			describe_log_dirs(&c, leader_id, "ld", NULL, 0, &leader);
			const ld_partition *f = ld_find(&after, p), *l = ld_find(&leader, p);
			ck_assert(f && l);
			ck_assert_int_eq(f->lag, 0);
			if (f->size <= ld_find(&before, p)->size || f->size != l->size)
				caught_up = false;
		}
		if (caught_up)
			break;
		ck_assert_msg(i < 200, "broker 2's replicas of ld do not reach the leaders' sizes");
		usleep(50 * 1000);
	}
	cc_log("broker 2 (follower): ld sizes %" PRId64 " %" PRId64 " %" PRId64 " -> %" PRId64
	       " %" PRId64 " %" PRId64,
	       ld_find(&before, 0)->size, ld_find(&before, 1)->size, ld_find(&before, 2)->size,
	       ld_find(&after, 0)->size, ld_find(&after, 1)->size, ld_find(&after, 2)->size);
	cc_finish(&c);
}
END_TEST

typedef struct dc_arg {
	char why[512];
} dc_arg;

/* Every running broker's DescribeCluster lists the running brokers. */
static bool cluster_shrunk(hc_cluster *c, void *arg)
{
	dc_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		dc_answer d;
		describe_cluster(c, id, &d);
		if (!cluster_agrees(c, &d, a->why, sizeof(a->why)))
			return false;
	}
	return true;
}

START_TEST(test_killed)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "dk", NPART, 3, NULL, NULL);
	int ctl = hc_zk_controller(&c);
	int victim = ctl == 1 ? 2 : 1;
	int32_t epochs[NPART];
	int leaders[NPART], led = 0;
	for (int32_t p = 0; p < NPART; p++) {
		leaders[p] = cc_leader(&c, "dk", p, &epochs[p]);
		led += leaders[p] == victim;
	}
	ck_assert_int_gt(led, 0);
	cc_log("killing broker %d (leads %d partitions; controller %d)", victim, led, ctl);
	ck_assert_int_eq(hc_kill(&c, victim), 0);

	dc_arg d;
	long ms = hc_wait(&c, HC_SESSION_MS + 15000, cluster_shrunk, &d);
	ck_assert_msg(ms >= 0, "DescribeCluster: %s", d.why);
	cc_log("DescribeCluster lists two brokers after %ld ms", ms);

	agree_arg g = {.topic = "dk", .npart = NPART, .dead = victim};
	ms = hc_wait(&c, 30000, all_agree, &g);
	ck_assert_msg(ms >= 0, "DescribeTopicPartitions: %s", g.why);
	for (int32_t p = 0; p < NPART; p++) {
		hc_state st;
		ck_assert_int_eq(hc_zk_state(&c, "dk", p, &st), CTL_ZK_OK);
		ck_assert_msg(st.leader >= 1 && st.leader != victim && !hc_isr_has(&st, victim),
			      "dk-%d: %s", (int)p, st.json);
		ck_assert_msg(leaders[p] == victim ? st.leader_epoch > epochs[p]
						   : st.leader_epoch >= epochs[p],
			      "dk-%d: epoch %d before the kill, now %s", (int)p, (int)epochs[p],
			      st.json);
	}
	cc_log("DescribeTopicPartitions shows new leaders and ISRs without %d after %ld ms", victim,
	       ms);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_describe");
	TCase *tc = tcase_create("describe");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_killed);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
