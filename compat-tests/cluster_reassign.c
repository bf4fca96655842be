/*
 * cluster_reassign.c - partition reassignment (CLUSTER.md 2.8, KIP-455;
 * 6.5 test 13) and topic deletion with a replica's broker down (2.9 point
 * 4; 6.5 test 12), on three brokers, with raw AlterPartitionReassignments
 * (45) and ListPartitionReassignments (46) requests (librdkafka 2.0.2 has
 * no reassignment API).
 *
 * move_under_load: two idempotent acks=all producers run while "mv3"
 * ({1,2,3}) gets the order {2,3,1} (nothing to copy: done at once, the
 * topic znode never has adding or removing replicas) and "mv2" ({1,2},
 * replication factor 2) moves to {2,3}: broker 3 copies the partition,
 * joins the ISR, 2 takes the leadership and 1 leaves. Each topic znode ends
 * clean, Metadata everywhere shows the new replicas, broker 1's directory
 * of mv2-0 is gone, and the checker finds every acknowledged record at its
 * offset, none twice.
 *
 * raise_rf_under_load: a topic of replication factor 1 on broker 1 gets
 * {1,2,3} while a producer runs: the two new replicas copy the log and the
 * reassignment completes when both are in the ISR; nothing is lost and the
 * three replicas hold the same batches.
 *
 * target_down: with broker 3 killed, the API refuses {2,3} for "td"
 * (INVALID_REPLICA_ASSIGNMENT: 3 is not alive), as Kafka does, but
 * /admin/reassign_partitions (the znode of Kafka's ZooKeeper-mode
 * kafka-reassign-partitions.sh) asks for it anyway: the reassignment waits
 * (ListPartitionReassignments on the controller shows replicas {2,3,1},
 * adding {3}, removing {1}; NOT_CONTROLLER elsewhere) until broker 3 is
 * started again, then completes, under load, and the znode is deleted.
 * A cancellation of a partition not being reassigned is
 * NO_REASSIGNMENT_IN_PROGRESS, an unknown one UNKNOWN_TOPIC_OR_PARTITION.
 *
 * delete_broker_down: DeleteTopics of a topic on all three brokers while
 * broker 3 is down: the topic leaves every running broker's Metadata and
 * the live brokers' directories at once, CreateTopics of its name answers
 * TOPIC_ALREADY_EXISTS ("marked for deletion") while its znodes wait for
 * broker 3; once broker 3 is back the deletion completes, broker 3's
 * directories are gone (not set aside as stray) and the name can be
 * created again.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"

#define RATE 200

enum {
	E_UNKNOWN_TOPIC_OR_PARTITION = 3,
	E_NOT_CONTROLLER = 41,
	E_TOPIC_ALREADY_EXISTS = 36,
	E_INVALID_REPLICA_ASSIGNMENT = 39,
	E_NO_REASSIGNMENT_IN_PROGRESS = 85,
};

/* ---- raw requests ---- */

/*
 * AlterPartitionReassignments v0 of topic-p on broker id: target
 * ids[0..n), or n < 0 to cancel. Returns the top-level error when set,
 * else the partition's; msg gets the message.
 */
static int16_t alter(hc_cluster *c, int id, const char *topic, int32_t p, const int32_t *ids, int n,
		     char *msg, size_t cap)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	kw_i32(w, 30000);
	kw_uvarint(w, 2);
	kw_cstr(w, topic);
	kw_uvarint(w, 2);
	kw_i32(w, p);
	if (n < 0) {
		kw_uvarint(w, 0);
	} else {
		kw_uvarint(w, (uint64_t)n + 1);
		for (int i = 0; i < n; i++)
			kw_i32(w, ids[i]);
	}
	kw_tags0(w);
	kw_tags0(w);
	kw_tags0(w);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 45, 0, w, &r);
	close(fd);
	free(w);
	kr_i32(&r, "throttle");
	int16_t err = kr_i16(&r, "error");
	msg[0] = '\0';
	kr_cstr(&r, msg, cap, "message");
	int64_t nt = kr_carray(&r, "responses");
	for (int64_t i = 0; i < nt; i++) {
		kr_cstr(&r, NULL, 0, "name");
		int64_t np = kr_carray(&r, "partitions");
		for (int64_t k = 0; k < np; k++) {
			kr_i32(&r, "partition");
			int16_t e = kr_i16(&r, "partition error");
			char m[512] = "";
			kr_cstr(&r, m, sizeof(m), "partition message");
			kr_tags(&r, "partition tags");
			if (!err) {
				err = e;
				snprintf(msg, cap, "%s", m);
			}
		}
		kr_tags(&r, "topic tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "AlterPartitionReassignments response");
	if (nt == 0 && !err)
		err = -1; /* no answer for the partition */
	free(frame);
	return err;
}

/* One partition of a ListPartitionReassignments answer. */
typedef struct ongoing {
	char topic[64];
	int32_t partition;
	int nrs, nar, nrr;
	int32_t rs[8], ar[8], rr[8];
} ongoing;

static int read_ids(k_rbuf *r, int32_t *out, int cap, const char *what)
{
	int64_t n = kr_carray(r, what);
	for (int64_t i = 0; i < n; i++) {
		int32_t v = kr_i32(r, what);
		if (i < cap)
			out[i] = v;
	}
	return n < cap ? (int)n : cap;
}

/* ListPartitionReassignments v0 (every partition) on broker id: the
 * top-level error; up to cap entries into out (*n). */
static int16_t list(hc_cluster *c, int id, ongoing *out, int cap, int *n)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	kw_i32(w, 30000);
	kw_uvarint(w, 0); /* null: all */
	kw_tags0(w);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 46, 0, w, &r);
	close(fd);
	free(w);
	kr_i32(&r, "throttle");
	int16_t err = kr_i16(&r, "error");
	kr_cstr(&r, NULL, 0, "message");
	*n = 0;
	int64_t nt = kr_carray(&r, "topics");
	for (int64_t i = 0; i < nt; i++) {
		char name[64];
		kr_cstr(&r, name, sizeof(name), "name");
		int64_t np = kr_carray(&r, "partitions");
		for (int64_t k = 0; k < np; k++) {
			ongoing o = { 0 };
			snprintf(o.topic, sizeof(o.topic), "%s", name);
			o.partition = kr_i32(&r, "partition");
			o.nrs = read_ids(&r, o.rs, 8, "replicas");
			o.nar = read_ids(&r, o.ar, 8, "adding");
			o.nrr = read_ids(&r, o.rr, 8, "removing");
			kr_tags(&r, "partition tags");
			if (*n < cap)
				out[(*n)++] = o;
		}
		kr_tags(&r, "topic tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "ListPartitionReassignments response");
	free(frame);
	return err;
}

/* CreateTopics v5 of topic (partitions, RF) on broker id: the topic's
 * error, msg its message. */
static int16_t create_raw(hc_cluster *c, int id, const char *topic, int32_t npart, int16_t rf,
			  char *msg, size_t cap)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	kw_uvarint(w, 2);
	kw_cstr(w, topic);
	kw_i32(w, npart);
	kw_i16(w, rf);
	kw_uvarint(w, 1); /* no assignments */
	kw_uvarint(w, 1); /* no configs */
	kw_tags0(w);
	kw_i32(w, 30000);
	kw_u8(w, 0);
	kw_tags0(w);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 19, 5, w, &r);
	close(fd);
	free(w);
	kr_i32(&r, "throttle");
	int64_t nt = kr_carray(&r, "topics");
	ck_assert_int_eq(nt, 1);
	kr_cstr(&r, NULL, 0, "name");
	int16_t err = kr_i16(&r, "error");
	msg[0] = '\0';
	kr_cstr(&r, msg, cap, "message");
	ck_assert_msg(!r.err, "CreateTopics response: %s", r.err);
	free(frame);
	return err;
}

/* DeleteTopics v4 of topic on broker id: the topic's error. */
static int16_t delete_raw(hc_cluster *c, int id, const char *topic)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	kw_uvarint(w, 2);
	kw_cstr(w, topic);
	kw_i32(w, 30000);
	kw_tags0(w);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 20, 4, w, &r);
	close(fd);
	free(w);
	kr_i32(&r, "throttle");
	int64_t nt = kr_carray(&r, "responses");
	ck_assert_int_eq(nt, 1);
	kr_cstr(&r, NULL, 0, "name");
	int16_t err = kr_i16(&r, "error");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "tags");
	kr_done(&r, "DeleteTopics response");
	free(frame);
	return err;
}

/* ---- conditions ---- */

typedef struct clean_arg {
	const char *topic;
	const char *replicas; /* "[2,3]" */
	char why[1024];
} clean_arg;

/* The topic znode's partition 0 is `replicas` with no reassignment left. */
static bool clean_cond(hc_cluster *c, void *arg)
{
	clean_arg *a = arg;
	char path[256], want[64];
	snprintf(path, sizeof(path), "/brokers/topics/%s", a->topic);
	snprintf(want, sizeof(want), "\"partitions\":{\"0\":%s}", a->replicas);
	char *d = NULL;
	int len;
	if (hc_zk_get(c, path, &d, &len, NULL) != CTL_ZK_OK || !d)
		return false;
	bool ok = strstr(d, want) && strstr(d, "\"adding_replicas\":{},\"removing_replicas\":{}");
	snprintf(a->why, sizeof(a->why), "%s", d);
	free(d);
	return ok;
}

static void wait_clean(hc_cluster *c, const char *topic, const char *replicas, int timeout_ms)
{
	clean_arg a = { topic, replicas, "" };
	ck_assert_msg(hc_wait(c, timeout_ms, clean_cond, &a) >= 0,
		      "%s: the topic znode did not end as %s without adding/removing: %s", topic,
		      replicas, a.why);
}

typedef struct md_arg {
	const char *topic;
	const int32_t *rs;
	int n;
	char why[256];
} md_arg;

/* every running broker's Metadata shows topic-0 with replicas rs. */
static bool md_replicas_cond(hc_cluster *c, void *arg)
{
	md_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0)
			return false;
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), 0);
		bool ok = p && p->nreplicas == a->n &&
			  memcmp(p->replicas, a->rs, (size_t)a->n * sizeof(int32_t)) == 0;
		hc_md_free(&md);
		if (!ok) {
			snprintf(a->why, sizeof(a->why), "broker %d's Metadata", id);
			return false;
		}
	}
	return true;
}

typedef struct gone_arg {
	const char *path;
} gone_arg;

static bool path_gone_cond(hc_cluster *c, void *arg)
{
	(void)c;
	struct stat st;
	return stat(((gone_arg *)arg)->path, &st) != 0;
}

static void wait_dir_gone(hc_cluster *c, int id, const char *topic, int32_t p, int timeout_ms)
{
	char dir[4096];
	hc_partition_dir(c, id, topic, p, dir, sizeof(dir));
	gone_arg a = { dir };
	ck_assert_msg(hc_wait(c, timeout_ms, path_gone_cond, &a) >= 0, "%s is still there", dir);
}

static bool dir_exists(hc_cluster *c, int id, const char *topic, int32_t p)
{
	char dir[4096];
	struct stat st;
	return stat(hc_partition_dir(c, id, topic, p, dir, sizeof(dir)), &st) == 0;
}

/* No "<topic>-<p>.*" entry (a stray or deleted copy) in broker id's log dir. */
static void assert_no_copy(hc_cluster *c, int id, const char *topic, int32_t p)
{
	char dir[4096];
	hc_partition_dir(c, id, topic, p, dir, sizeof(dir));
	char *slash = strrchr(dir, '/');
	ck_assert_ptr_nonnull(slash);
	char prefix[300];
	snprintf(prefix, sizeof(prefix), "%s.", slash + 1);
	*slash = '\0';
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	while ((de = readdir(d)))
		ck_assert_msg(strncmp(de->d_name, prefix, strlen(prefix)) != 0,
			      "broker %d kept %s/%s", id, dir, de->d_name);
	closedir(d);
}

/* ---- the checker over a producer's run ---- */

static void check_producer(hc_cluster *c, cc_producer *p, const char *topic, int npart,
			   const char *what)
{
	ck_assert_msg(!p->fatal[0], "the producer hit a fatal error: %s", p->fatal);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(c, topic, npart, h);
	chk_report r;
	chk_options opt = { .idempotent = true };
	cc_check(h, &opt, &r, what);
	printf("cluster_reassign: %s: %ld records acknowledged, %ld failed, %ld indeterminate, "
	       "none lost or duplicated; longest time without a successful produce %" PRId64
	       " ms\n",
	       what, r.acked, r.failed, r.indeterminate, r.longest_gap_ms);
	chk_free(h);
}

static int controller_of(hc_cluster *c)
{
	int ctl = hc_zk_controller(c);
	ck_assert_msg(ctl >= 1 && ctl <= c->n, "no controller");
	return ctl;
}

/* ---- tests ---- */

START_TEST(test_move_under_load)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	const int32_t a3[] = { 1, 2, 3 }, a2[] = { 1, 2 };
	cc_create_topic(&c, "mv3", 1, 3, a3, (const char *const[]){ "min.insync.replicas", "2", NULL });
	cc_create_topic(&c, "mv2", 1, 2, a2, NULL);
	cc_producer *p3 = cc_producer_start(&c, "mv3", 1, 1, RATE, NULL);
	cc_producer *p2 = cc_producer_start(&c, "mv2", 1, 2, RATE, NULL);
	ck_assert(cc_producer_wait_ack_after(p3, -1, 0, 20000) >= 0);
	ck_assert(cc_producer_wait_ack_after(p2, -1, 0, 20000) >= 0);
	usleep(1000 * 1000);
	int ctl = controller_of(&c);
	char msg[512];

	/* {1,2,3} -> {2,3,1}: nothing to copy */
	const int32_t t231[] = { 2, 3, 1 };
	int16_t e = alter(&c, ctl, "mv3", 0, t231, 3, msg, sizeof(msg));
	ck_assert_msg(e == 0, "mv3 -> {2,3,1}: %d %s", e, msg);
	wait_clean(&c, "mv3", "[2,3,1]", 10000);
	md_arg m3 = { "mv3", t231, 3, "" };
	ck_assert_msg(hc_wait(&c, 10000, md_replicas_cond, &m3) >= 0, "%s", m3.why);
	cc_log("mv3 has the order {2,3,1}");

	/* {1,2} -> {2,3} */
	const int32_t t23[] = { 2, 3 };
	int64_t t0 = h_now_ms();
	e = alter(&c, ctl, "mv2", 0, t23, 2, msg, sizeof(msg));
	ck_assert_msg(e == 0, "mv2 -> {2,3}: %d %s", e, msg);
	wait_clean(&c, "mv2", "[2,3]", 30000);
	cc_log("mv2 moved to {2,3} in %lld ms", (long long)(h_now_ms() - t0));
	md_arg m2 = { "mv2", t23, 2, "" };
	ck_assert_msg(hc_wait(&c, 10000, md_replicas_cond, &m2) >= 0, "%s", m2.why);
	ck_assert_int_eq(cc_wait_leader(&c, "mv2", 0, 1, 10000), 2);
	wait_dir_gone(&c, 1, "mv2", 0, 10000);
	assert_no_copy(&c, 1, "mv2", 0);
	int nl = 0;
	ongoing o[4];
	ck_assert_int_eq(list(&c, ctl, o, 4, &nl), 0);
	ck_assert_int_eq(nl, 0);
	ck_assert(cc_producer_wait_ack_after(p2, 0, h_now_ms(), 20000) >= 0);
	usleep(1000 * 1000);
	cc_producer_stop(p3, 30000);
	cc_producer_stop(p2, 30000);
	check_producer(&c, p3, "mv3", 1, "{1,2,3} -> {2,3,1} under load");
	check_producer(&c, p2, "mv2", 1, "{1,2} -> {2,3} under load");
	char why[512];
	ck_assert_msg(cc_logs_equal(&c, "mv2", 0, (const int[]){ 2, 3 }, 2, why, sizeof(why)),
		      "mv2-0: the replicas differ: %s", why);
	cc_producer_free(p3);
	cc_producer_free(p2);
	cc_finish(&c);
}
END_TEST

START_TEST(test_raise_rf_under_load)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	const int32_t a1[] = { 1 };
	cc_create_topic(&c, "rf", 1, 1, a1, NULL);
	cc_producer *p = cc_producer_start(&c, "rf", 1, 1, RATE, NULL);
	ck_assert(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0);
	usleep(1500 * 1000);
	int ctl = controller_of(&c);
	const int32_t t123[] = { 1, 2, 3 };
	char msg[512];
	int64_t t0 = h_now_ms();
	int16_t e = alter(&c, ctl, "rf", 0, t123, 3, msg, sizeof(msg));
	ck_assert_msg(e == 0, "rf -> {1,2,3}: %d %s", e, msg);
	wait_clean(&c, "rf", "[1,2,3]", 30000);
	cc_log("replication factor 1 -> 3 in %lld ms", (long long)(h_now_ms() - t0));
	ck_assert(hc_wait_isr(&c, "rf", 0, t123, 3, 10000) >= 0);
	md_arg m = { "rf", t123, 3, "" };
	ck_assert_msg(hc_wait(&c, 10000, md_replicas_cond, &m) >= 0, "%s", m.why);
	ck_assert(cc_producer_wait_ack_after(p, 0, h_now_ms(), 20000) >= 0);
	usleep(1000 * 1000);
	cc_producer_stop(p, 30000);
	check_producer(&c, p, "rf", 1, "replication factor 1 -> 3 under load");
	char why[512];
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (!cc_logs_equal(&c, "rf", 0, (const int[]){ 1, 2, 3 }, 3, why, sizeof(why)) &&
	       h_now_ms() < deadline)
		usleep(200 * 1000);
	ck_assert_msg(cc_logs_equal(&c, "rf", 0, (const int[]){ 1, 2, 3 }, 3, why, sizeof(why)),
		      "rf-0: the replicas differ: %s", why);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

START_TEST(test_target_down)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	int ctl = controller_of(&c);
	if (ctl == 3) {
		/* broker 3 goes down below: let another one be the controller */
		ck_assert_int_eq(hc_kill(&c, 3), 0);
		ck_assert(hc_restart(&c, 3) == 0);
		ck_assert(hc_wait_formed(&c, 30000) == 0);
		ctl = controller_of(&c);
	}
	ck_assert_int_ne(ctl, 3);
	int other = ctl == 1 ? 2 : 1;
	const int32_t a12[] = { 1, 2 };
	cc_create_topic(&c, "td", 1, 2, a12, NULL);
	cc_producer *p = cc_producer_start(&c, "td", 1, 1, RATE, NULL);
	ck_assert(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0);
	char msg[512];
	int32_t t3[] = { 3 };
	ck_assert_int_eq(alter(&c, ctl, "td", 0, NULL, -1, msg, sizeof(msg)),
			 E_NO_REASSIGNMENT_IN_PROGRESS);
	ck_assert_int_eq(alter(&c, ctl, "nope", 0, t3, 1, msg, sizeof(msg)),
			 E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(alter(&c, other, "td", 0, a12, 2, msg, sizeof(msg)), E_NOT_CONTROLLER);
	ck_assert_int_eq(hc_kill(&c, 3), 0);
	const bool up12[] = { false, true, true, false };
	ck_assert(hc_wait_registered(&c, up12, HC_SESSION_MS + 10000) >= 0);
	const int32_t t23[] = { 2, 3 };
	int16_t e = alter(&c, ctl, "td", 0, t23, 2, msg, sizeof(msg));
	ck_assert_msg(e == E_INVALID_REPLICA_ASSIGNMENT, "{2,3} with 3 down: %d %s", e, msg);
	cc_log("the API refuses a broker that is down: %s", msg);

	/* the znode of the ZooKeeper-mode tool: no liveness check */
	const char *js = "{\"version\":1,\"partitions\":[{\"topic\":\"td\",\"partition\":0,"
			 "\"replicas\":[2,3]}]}";
	ctl_zk *zk = hc_zk_session(&c);
	ck_assert_ptr_nonnull(zk);
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/reassign_partitions", js, (int)strlen(js),
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	ongoing o[4];
	int n = 0;
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	do {
		usleep(100 * 1000);
		ck_assert_int_eq(list(&c, ctl, o, 4, &n), 0);
	} while (n == 0 && h_now_ms() < deadline);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(o[0].topic, "td");
	ck_assert_int_eq(o[0].partition, 0);
	ck_assert_int_eq(o[0].nrs, 3);
	ck_assert(o[0].rs[0] == 2 && o[0].rs[1] == 3 && o[0].rs[2] == 1);
	ck_assert(o[0].nar == 1 && o[0].ar[0] == 3);
	ck_assert(o[0].nrr == 1 && o[0].rr[0] == 1);
	ck_assert_int_eq(list(&c, other, o, 4, &n), E_NOT_CONTROLLER);
	cc_log("ListPartitionReassignments shows td-0 {2,3,1} +3 -1 while 3 is down");
	/* it waits for broker 3 */
	usleep(2000 * 1000);
	ck_assert_int_eq(list(&c, ctl, o, 4, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(hc_zk_exists(&c, "/admin/reassign_partitions", NULL), CTL_ZK_OK);
	int64_t t0 = h_now_ms();
	ck_assert(hc_restart(&c, 3) == 0);
	wait_clean(&c, "td", "[2,3]", 30000);
	cc_log("td-0 moved to {2,3} %lld ms after broker 3 started", (long long)(h_now_ms() - t0));
	ck_assert_int_eq(cc_wait_leader(&c, "td", 0, 1, 10000), 2);
	md_arg m = { "td", t23, 2, "" };
	ck_assert_msg(hc_wait(&c, 10000, md_replicas_cond, &m) >= 0, "%s", m.why);
	deadline = h_now_ms() + h_scaled_ms(10000);
	while (hc_zk_exists(&c, "/admin/reassign_partitions", NULL) == CTL_ZK_OK &&
	       h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_int_eq(hc_zk_exists(&c, "/admin/reassign_partitions", NULL), CTL_ZK_NONODE);
	wait_dir_gone(&c, 1, "td", 0, 10000);
	ck_assert_int_eq(list(&c, ctl, o, 4, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert(cc_producer_wait_ack_after(p, 0, h_now_ms(), 20000) >= 0);
	cc_producer_stop(p, 30000);
	check_producer(&c, p, "td", 1, "{1,2} -> {2,3} with 3 down, then back");
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

typedef struct md_gone_arg {
	const char *topic;
	char why[128];
} md_gone_arg;

static bool md_gone_cond(hc_cluster *c, void *arg)
{
	md_gone_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		hc_md md;
		if (hc_metadata(c, id, NULL, &md, 2000) < 0)
			return false;
		bool has = hc_md_find(&md, a->topic) != NULL;
		hc_md_free(&md);
		if (has) {
			snprintf(a->why, sizeof(a->why), "broker %d still lists %s", id, a->topic);
			return false;
		}
	}
	return true;
}

START_TEST(test_delete_broker_down)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	int ctl = controller_of(&c);
	int down = ctl == 3 ? 2 : 3;
	cc_create_topic(&c, "dd", 2, 3, NULL, NULL);
	int64_t base;
	for (int32_t q = 0; q < 2; q++)
		ck_assert_int_eq(cc_raw_produce(&c, hc_leader(&c, "dd", q, NULL), "dd", q, -1, 10, 0,
						&base), 0);
	const int32_t all[] = { 1, 2, 3 };
	for (int32_t q = 0; q < 2; q++)
		ck_assert(hc_wait_isr(&c, "dd", q, all, 3, 10000) >= 0);
	ck_assert(dir_exists(&c, down, "dd", 0) && dir_exists(&c, down, "dd", 1));
	ck_assert_int_eq(hc_kill(&c, down), 0);
	bool up[4] = { false, true, true, true };
	up[down] = false;
	ck_assert(hc_wait_registered(&c, up, HC_SESSION_MS + 10000) >= 0);

	ck_assert_int_eq(delete_raw(&c, ctl, "dd"), 0);
	md_gone_arg g = { "dd", "" };
	ck_assert_msg(hc_wait(&c, 10000, md_gone_cond, &g) >= 0, "%s", g.why);
	for (int id = 1; id <= 3; id++)
		if (id != down)
			for (int32_t q = 0; q < 2; q++)
				wait_dir_gone(&c, id, "dd", q, 10000);
	char msg[512];
	int16_t e = create_raw(&c, ctl, "dd", 1, 1, msg, sizeof(msg));
	ck_assert_msg(e == E_TOPIC_ALREADY_EXISTS && strstr(msg, "marked for deletion"),
		      "CreateTopics of a topic being deleted: %d %s", e, msg);
	usleep(1000 * 1000);
	ck_assert_int_eq(hc_zk_exists(&c, "/brokers/topics/dd", NULL), CTL_ZK_OK);
	ck_assert_int_eq(hc_zk_exists(&c, "/admin/delete_topics/dd", NULL), CTL_ZK_OK);
	ck_assert(dir_exists(&c, down, "dd", 0));
	cc_log("dd is gone from Metadata and cannot be made again while broker %d is down", down);

	ck_assert(hc_restart(&c, down) == 0);
	long long deadline = h_now_ms() + h_scaled_ms(20000);
	while ((hc_zk_exists(&c, "/brokers/topics/dd", NULL) == CTL_ZK_OK ||
		hc_zk_exists(&c, "/admin/delete_topics/dd", NULL) == CTL_ZK_OK) &&
	       h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_int_eq(hc_zk_exists(&c, "/brokers/topics/dd", NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(hc_zk_exists(&c, "/admin/delete_topics/dd", NULL), CTL_ZK_NONODE);
	for (int32_t q = 0; q < 2; q++) {
		wait_dir_gone(&c, down, "dd", q, 10000);
		assert_no_copy(&c, down, "dd", q);
	}
	cc_log("deletion of dd completed once broker %d came back; its directories are gone", down);
	e = create_raw(&c, ctl, "dd", 1, 1, msg, sizeof(msg));
	ck_assert_msg(e == 0, "CreateTopics after the deletion: %d %s", e, msg);
	cc_wait_topic(&c, "dd", 1, 20000);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_reassign");
#define ADD(name, fn)                            \
	do {                                     \
		TCase *tc = tcase_create(name);  \
		tcase_set_timeout(tc, 180);      \
		tcase_add_test(tc, fn);          \
		suite_add_tcase(s, tc);          \
	} while (0)
	ADD("move_under_load", test_move_under_load);
	ADD("raise_rf_under_load", test_raise_rf_under_load);
	ADD("target_down", test_target_down);
	ADD("delete_broker_down", test_delete_broker_down);
#undef ADD
	return cc_run_suite(s);
}
