/*
 * partitions.c - CreatePartitions, DescribeLogDirs and DescribeCluster.
 *
 *  - grow (librdkafka AdminClient): a topic of 2 partitions with data goes
 *    to 5; the new partitions have directories and a leader in Metadata,
 *    take records (explicit partitions and the default partitioner) and
 *    give them back; the old partitions keep theirs. A decrease or the same
 *    count is INVALID_PARTITIONS (37) with Kafka's message, an unknown
 *    topic UNKNOWN_TOPIC_OR_PARTITION (3), an assignment naming a broker
 *    that does not exist or not one per new partition
 *    INVALID_REPLICA_ASSIGNMENT (39), validate_only changes nothing, and a
 *    new partition whose log cannot be created (a file in the way) is
 *    KAFKA_STORAGE_ERROR (56) with nothing changed. After a SIGTERM and a
 *    restart the topic still has 5 partitions with their records, and
 *    after kill -9 too (the count is durable once the answer is sent).
 *  - raw_create_partitions (raw requests, v0 and v3): a Fetch waiting on
 *    partition 0 while the topic grows 11 times is woken by a produce to it
 *    (the partition never moves in memory); a name twice is one
 *    INVALID_REQUEST "Duplicate topic name." result and the other topic is
 *    still grown; TimeoutMs 0 is REQUEST_TIMED_OUT (7) for each entry and
 *    grows nothing, as Kafka's controller whose deadline has passed.
 *  - log_dirs (raw DescribeLogDirs v1-v5): one result, the broker's log
 *    dir, error 0; every partition with size 0 before producing; the sizes
 *    then equal the bytes of the partition's .log files and grow with
 *    each produce; a topics filter gives only the partitions asked for
 *    (unknown ones left out, and a topic with none left out); v4+ carry the
 *    volume's total and usable bytes as statvfs sees them, v3+ the
 *    top-level error code, v5 IsCordoned.
 *  - cluster (raw DescribeCluster v0-v2): the cluster id is the one in
 *    meta.properties, controller = broker.id, one broker with the
 *    advertised host and port and a null rack, authorized operations
 *    INT32_MIN unless asked for; EndpointType 2 is MISMATCHED_ENDPOINT_TYPE
 *    (114) and 3 UNSUPPORTED_ENDPOINT_TYPE (115), with Kafka's messages.
 * Every raw response is parsed to its last byte.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

enum {
	E_NONE = 0,
	E_UNKNOWN_TOPIC_OR_PARTITION = 3,
	E_REQUEST_TIMED_OUT = 7,
	E_INVALID_PARTITIONS = 37,
	E_INVALID_REQUEST = 42,
	E_MISMATCHED_ENDPOINT_TYPE = 114,
	E_UNSUPPORTED_ENDPOINT_TYPE = 115,
};

/* ---- librdkafka CreatePartitions ---- */

/* CreatePartitions of one topic to total; with replicas, the first nnew
 * new partitions each get that replica list as their assignment. Returns the
 * topic's error, errstr its message. */
static rd_kafka_resp_err_t create_partitions(rd_kafka_t *rk, const char *topic, int total,
					     const int32_t *replicas, size_t nreplicas, int nnew,
					     int validate_only, char *errstr, size_t errsize)
{
	char buf[512];
	rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, buf, sizeof(buf));
	ck_assert_msg(np != NULL, "rd_kafka_NewPartitions_new: %s", buf);
	for (int i = 0; replicas && i < nnew; i++)
		ck_assert(rd_kafka_NewPartitions_set_replica_assignment(np, i, (int32_t *)replicas,
									nreplicas, buf, sizeof(buf)) == 0);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, 10000, buf, sizeof(buf));
	rd_kafka_AdminOptions_set_request_timeout(opt, h_scaled_ms(15000), buf, sizeof(buf));
	if (validate_only)
		rd_kafka_AdminOptions_set_validate_only(opt, 1, buf, sizeof(buf));
	rd_kafka_CreatePartitions(rk, &np, 1, opt, q);
	rd_kafka_event_t *ev = NULL;
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	while (!ev && h_now_ms() < deadline) {
		ev = rd_kafka_queue_poll(q, 200);
		if (ev && rd_kafka_event_type(ev) != RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT) {
			rd_kafka_event_destroy(ev);
			ev = NULL;
		}
	}
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewPartitions_destroy(np);
	ck_assert_msg(ev != NULL, "CreatePartitions %s: no result", topic);
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	ck_assert_msg(err == 0, "CreatePartitions %s: request failed: %s (%s)", topic,
		      rd_kafka_err2name(err), rd_kafka_event_error_string(ev));
	size_t n;
	const rd_kafka_CreatePartitions_result_t *res = rd_kafka_event_CreatePartitions_result(ev);
	const rd_kafka_topic_result_t **tr = rd_kafka_CreatePartitions_result_topics(res, &n);
	ck_assert_msg(n == 1, "CreatePartitions %s: %zu topic results", topic, n);
	ck_assert_str_eq(rd_kafka_topic_result_name(tr[0]), topic);
	err = rd_kafka_topic_result_error(tr[0]);
	const char *es = rd_kafka_topic_result_error_string(tr[0]);
	snprintf(errstr, errsize, "%s", es ? es : "");
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

static int md_partitions(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md = c_metadata_all(rk);
	const rd_kafka_metadata_topic_t *t = c_md_topic(md, topic);
	int n = t ? t->partition_cnt : -1;
	rd_kafka_metadata_destroy(md);
	return n;
}

static bool dir_exists(const h_broker *b, const char *topic, int p)
{
	char path[PATH_MAX + 300];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s-%d", b->dir, topic, p);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

#define PER_PART 50

/* Produce PER_PART records "p<P>-<i>" to each of partitions [from, to). */
static void produce_range(rd_kafka_t *p, const char *topic, int from, int to, int round)
{
	static c_delivery d[8][PER_PART];
	char val[64];
	for (int part = from; part < to; part++)
		for (int i = 0; i < PER_PART; i++) {
			int len = snprintf(val, sizeof(val), "r%d-p%d-%d", round, part, i);
			c_msg m = {.topic = topic, .partition = part, .value = val, .value_len = (size_t)len};
			c_produce(p, &m, &d[part][i]);
		}
	c_flush(p, h_scaled_ms(15000));
	for (int part = from; part < to; part++)
		for (int i = 0; i < PER_PART; i++)
			ck_assert_msg(d[part][i].done && d[part][i].err == 0,
				      "produce to %s-%d: %s", topic, part, rd_kafka_err2str(d[part][i].err));
}

typedef struct expect {
	int part, n, rounds;
	char seen[PER_PART * 4];
} expect;

static int check_msg(const rd_kafka_message_t *m, void *opaque)
{
	expect *e = opaque;
	char want[64];
	int round = e->n / PER_PART, i = e->n % PER_PART;
	snprintf(want, sizeof(want), "r%d-p%d-%d", round, e->part, i);
	ck_assert_msg(m->offset == e->n, "partition %d: offset %lld, expected %d", e->part,
		      (long long)m->offset, e->n);
	ck_assert_msg(m->len == strlen(want) && memcmp(m->payload, want, m->len) == 0,
		      "partition %d offset %d: got '%.*s', expected '%s'", e->part, e->n, (int)m->len,
		      (const char *)m->payload, want);
	e->n++;
	return 0;
}

/* Every partition in [0, nparts) holds rounds[part] rounds of records. */
static void consume_all(const h_broker *b, const char *topic, int nparts, const int *rounds)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	for (int part = 0; part < nparts; part++) {
		expect e = {.part = part};
		long want = (long)rounds[part] * PER_PART;
		long got = c_consume(c, topic, part, RD_KAFKA_OFFSET_BEGINNING, want, h_scaled_ms(20000),
				     check_msg, &e);
		ck_assert_msg(got == want, "partition %d: %ld records, expected %ld", part, got, want);
		int64_t lo, hi;
		rd_kafka_resp_err_t err =
			rd_kafka_query_watermark_offsets(c, topic, part, &lo, &hi, h_scaled_ms(10000));
		ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
		ck_assert_msg(hi == want, "partition %d: high watermark %lld, expected %ld", part,
			      (long long)hi, want);
	}
	rd_kafka_destroy(c);
}

START_TEST(test_grow)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	const char *topic = "grow";
	char msg[512];
	ck_assert_int_eq(c_create_topic(p, topic, 2, 1, NULL, msg, sizeof(msg)), 0);
	c_wait_topic(p, topic, 2, h_scaled_ms(10000));
	produce_range(p, topic, 0, 2, 0);

	/* Errors first: nothing changes. */
	rd_kafka_resp_err_t err = create_partitions(p, topic, 2, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_PARTITIONS, "same count: %s",
		      rd_kafka_err2name(err));
	ck_assert_str_eq(msg, "Topic already has 2 partition(s).");
	err = create_partitions(p, topic, 1, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_PARTITIONS, "decrease: %s", rd_kafka_err2name(err));
	ck_assert_str_eq(msg, "The topic grow currently has 2 partition(s); 1 would not be an increase.");
	err = create_partitions(p, "no-such-topic", 4, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "unknown topic: %s",
		      rd_kafka_err2name(err));
	int32_t bad[] = { 77 };
	err = create_partitions(p, topic, 3, bad, 1, 1, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT, "broker 77: %s",
		      rd_kafka_err2name(err));
	ck_assert_str_eq(msg, "The manual partition assignment includes broker 77, but no such broker "
			 "is registered.");
	err = create_partitions(p, topic, 7, NULL, 0, 0, 1, msg, sizeof(msg));
	ck_assert_msg(err == 0, "validate only: %s (%s)", rd_kafka_err2name(err), msg);
	ck_assert_int_eq(md_partitions(p, topic), 2);
	ck_assert(!dir_exists(b, topic, 2));

	/* An assignment for only one of three new partitions. */
	int32_t me[] = { 0 };
	err = create_partitions(p, topic, 5, me, 1, 1, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT, "one of three: %s",
		      rd_kafka_err2name(err));
	ck_assert_str_eq(msg, "Attempted to add 3 additional partition(s), but only 1 assignment(s) "
			 "were specified.");

	/* The log of a new partition cannot be created (a file holds the name
	 * of its directory): KAFKA_STORAGE_ERROR and nothing changes. */
	char blocker[PATH_MAX + 300];
	snprintf(blocker, sizeof(blocker), "%s/%s-3", b->dir, topic);
	FILE *bf = fopen(blocker, "w");
	ck_assert_ptr_nonnull(bf);
	fclose(bf);
	err = create_partitions(p, topic, 5, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR, "blocked: %s", rd_kafka_err2name(err));
	ck_assert_int_eq(md_partitions(p, topic), 2);
	ck_assert(!dir_exists(b, topic, 2));
	ck_assert_int_eq(unlink(blocker), 0);

	/* 2 -> 5 with an explicit assignment (this broker) for each new one. */
	err = create_partitions(p, topic, 5, me, 1, 3, 0, msg, sizeof(msg));
	ck_assert_msg(err == 0, "grow to 5: %s (%s)", rd_kafka_err2name(err), msg);
	c_wait_topic(p, topic, 5, h_scaled_ms(10000));
	for (int part = 0; part < 5; part++)
		ck_assert_msg(dir_exists(b, topic, part), "no directory %s-%d", topic, part);
	ck_assert(!dir_exists(b, topic, 5));
	err = create_partitions(p, topic, 4, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_PARTITIONS, "decrease after grow: %s",
		      rd_kafka_err2name(err));
	ck_assert_str_eq(msg, "The topic grow currently has 5 partition(s); 4 would not be an increase.");

	/* The producer learns the new partitions and writes to them. */
	produce_range(p, topic, 2, 5, 0);
	int rounds[5] = { 1, 1, 1, 1, 1 };
	consume_all(b, topic, 5, rounds);

	/* The default partitioner spreads keyed records over all 5. */
	rd_kafka_destroy(p);
	p = c_producer(b, NULL);
	c_delivery kd[200];
	char key[16];
	int hit[5] = { 0 };
	for (int i = 0; i < 200; i++) {
		int kl = snprintf(key, sizeof(key), "key-%d", i);
		c_msg m = {.topic = topic, .partition = RD_KAFKA_PARTITION_UA, .key = key,
			   .key_len = (size_t)kl, .value = "v", .value_len = 1};
		c_produce(p, &m, &kd[i]);
	}
	c_flush(p, h_scaled_ms(15000));
	for (int i = 0; i < 200; i++) {
		ck_assert_msg(kd[i].err == 0, "keyed produce: %s", rd_kafka_err2str(kd[i].err));
		ck_assert(kd[i].partition >= 0 && kd[i].partition < 5);
		hit[kd[i].partition]++;
	}
	for (int part = 2; part < 5; part++)
		ck_assert_msg(hit[part] > 0, "no keyed record went to new partition %d", part);
	rd_kafka_destroy(p);

	/* A clean restart: still 5 partitions, the records where they were. */
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(30000)), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	p = c_producer(b, NULL);
	c_wait_topic(p, topic, 5, h_scaled_ms(10000));
	rd_kafka_destroy(p);

	/* Grow again and kill -9 right after the answer: the count stays. */
	p = c_producer(b, NULL);
	err = create_partitions(p, topic, 6, NULL, 0, 0, 0, msg, sizeof(msg));
	ck_assert_msg(err == 0, "grow to 6: %s (%s)", rd_kafka_err2name(err), msg);
	rd_kafka_destroy(p);
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	p = c_producer(b, NULL);
	c_wait_topic(p, topic, 6, h_scaled_ms(10000));
	ck_assert(dir_exists(b, topic, 5));
	/* The partition added before the kill takes records too. */
	produce_range(p, topic, 5, 6, 0);
	rd_kafka_destroy(p);
	rd_kafka_t *c = c_consumer(b, NULL);
	expect e = {.part = 5};
	ck_assert_int_eq(c_consume(c, topic, 5, RD_KAFKA_OFFSET_BEGINNING, PER_PART, h_scaled_ms(20000),
				   check_msg, &e), PER_PART);
	/* The old partitions still start with their first records (the keyed
	 * ones follow them). */
	for (int part = 0; part < 2; part++) {
		expect e2 = {.part = part};
		ck_assert_int_eq(c_consume(c, topic, part, RD_KAFKA_OFFSET_BEGINNING, PER_PART,
					   h_scaled_ms(20000), check_msg, &e2), PER_PART);
	}
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

/* ---- raw requests ---- */

/* A classic (non-flexible) request: header v1, response header v0.
 * Returns the malloc'd frame; r is set to the body after the correlation
 * id. */
static uint8_t *classic_roundtrip(int fd, int16_t key, int16_t ver, const k_wbuf *body, k_rbuf *r)
{
	static uint8_t frame[70000];
	static int32_t cid = 5000;
	cid++;
	int n = w_build_request(frame, sizeof(frame), key, ver, cid, "partitions-test", body->b,
				body->len);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(w_send_all(fd, frame, (size_t)n, h_scaled_ms(10000)), 0);
	uint8_t *resp = NULL;
	int32_t len = 0;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 1 << 24, h_scaled_ms(15000)), WIRE_OK);
	ck_assert_int_ge(len, 4);
	ck_assert_int_eq(w_get32(resp), cid);
	r->b = resp + 4;
	r->len = (size_t)len - 4;
	r->pos = 0;
	r->err = NULL;
	return resp;
}

static void kw_str16(k_wbuf *w, const char *s)
{
	kw_i16(w, (int16_t)strlen(s));
	kw_raw(w, s, strlen(s));
}

static int64_t kr_str16(k_rbuf *r, char *out, size_t cap, const char *what)
{
	int16_t n = kr_i16(r, what);
	if (out && cap)
		out[0] = '\0';
	if (n < 0)
		return -1;
	if (!kr_need(r, (size_t)n, what))
		return 0;
	if (out && cap) {
		size_t c = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->b + r->pos, c);
		out[c] = '\0';
	}
	r->pos += (size_t)n;
	return n;
}

typedef struct cp_result {
	char name[64];
	int16_t err;
	char msg[256];
	int64_t msg_len;
} cp_result;

/* CreatePartitions v0 (classic) or v3 (flexible) of n topics each to
 * counts[i], assignments null. Returns the number of results. */
static int raw_create_partitions(int fd, int16_t ver, const char *const *names,
				 const int32_t *counts, int n, int32_t timeout_ms, cp_result *out, int max)
{
	k_wbuf body = {.len = 0};
	bool flex = ver >= 2;
	if (flex)
		kw_uvarint(&body, (uint64_t)n + 1);
	else
		kw_i32(&body, n);
	for (int i = 0; i < n; i++) {
		if (flex) {
			kw_cstr(&body, names[i]);
			kw_i32(&body, counts[i]);
			kw_uvarint(&body, 0); /* null assignments */
			kw_tags0(&body);
		} else {
			kw_str16(&body, names[i]);
			kw_i32(&body, counts[i]);
			kw_i32(&body, -1);
		}
	}
	kw_i32(&body, timeout_ms);
	kw_u8(&body, 0);
	if (flex)
		kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = flex ? k_roundtrip(fd, 37, ver, &body, &r)
			     : classic_roundtrip(fd, 37, ver, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	int64_t cnt = flex ? kr_carray(&r, "results") : kr_i32(&r, "results");
	ck_assert_int_le(cnt, max);
	for (int64_t i = 0; i < cnt; i++) {
		cp_result *o = &out[i];
		if (flex)
			kr_cstr(&r, o->name, sizeof(o->name), "name");
		else
			kr_str16(&r, o->name, sizeof(o->name), "name");
		o->err = kr_i16(&r, "error code");
		o->msg_len = flex ? kr_cstr(&r, o->msg, sizeof(o->msg), "message")
				  : kr_str16(&r, o->msg, sizeof(o->msg), "message");
		if (flex)
			kr_tags(&r, "result tags");
	}
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "CreatePartitions");
	free(resp);
	return (int)cnt;
}

static const cp_result *find_result(const cp_result *res, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(res[i].name, name) == 0)
			return &res[i];
	return NULL;
}

START_TEST(test_raw_create_partitions)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char msg[256];
	ck_assert_int_eq(c_create_topic(p, "ra", 1, 1, NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(c_create_topic(p, "rb", 1, 1, NULL, msg, sizeof(msg)), 0);
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	cp_result res[8];

	/* A Fetch parked on rw-0 (its watch lives in the partition) while rw
	 * grows 1 -> 2 -> ... -> 12: the partition must not move, and the
	 * produce that follows wakes the Fetch long before its MaxWaitMs
	 * (an ASan build also sees any use of a moved partition). */
	ck_assert_int_eq(c_create_topic(p, "rw", 1, 1, NULL, msg, sizeof(msg)), 0);
	int fetcher = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fetcher, 0);
	static k_wbuf fbody, batch, pbody;
	k_fetch_body(&fbody, "rw", 0, 0, 120000, 1);
	int32_t fcid = k_send(fetcher, 1, 12, &fbody);
	usleep(300 * 1000); /* let it park */
	for (int32_t count = 2; count <= 12; count++) {
		int n = raw_create_partitions(fd, 3, (const char *const[]){ "rw" }, &count, 1, 5000, res, 8);
		ck_assert_int_eq(n, 1);
		ck_assert_msg(res[0].err == E_NONE, "rw to %d: error %d %s", count, res[0].err, res[0].msg);
	}
	k_build_batch(&batch, 3, 0, 1700000000000LL, 0);
	k_produce_body(&pbody, "rw", 0, 1, &batch);
	k_rbuf pr;
	uint8_t *presp = k_roundtrip(fd, 0, 9, &pbody, &pr);
	int64_t base;
	ck_assert_int_eq(k_produce_parse(&pr, &base), 0);
	free(presp);
	k_rbuf fr;
	uint8_t *fresp = k_recv(fetcher, fcid, &fr, h_scaled_ms(60000));
	int64_t hw, rlen;
	const uint8_t *rec;
	ck_assert_int_eq(k_fetch_parse(&fr, &hw, &rec, &rlen), 0);
	ck_assert_int_eq(hw, 3);
	ck_assert_msg(rec && rlen > 61, "the woken Fetch carries %lld bytes", (long long)rlen);
	free(fresp);
	close(fetcher);
	ck_assert_int_eq(md_partitions(p, "rw"), 12);

	for (int16_t ver = 0; ver <= 3; ver += 3) {
		/* A timeout of 0: the deadline has passed, nothing changes. */
		int32_t want = ver == 0 ? 2 : 3;
		int n = raw_create_partitions(fd, ver, (const char *const[]){ "ra", "ra", "nope" },
					      (const int32_t[]){ want, want, want }, 3, 0, res, 8);
		ck_assert_int_eq(n, 3);
		for (int i = 0; i < n; i++) {
			ck_assert_int_eq(res[i].err, E_REQUEST_TIMED_OUT);
			ck_assert_int_eq(res[i].msg_len, -1);
		}
		ck_assert_int_eq(md_partitions(p, "ra"), want - 1);

		/* ra twice: one INVALID_REQUEST result; rb grows; unknown topic. */
		n = raw_create_partitions(fd, ver, (const char *const[]){ "ra", "rb", "ra", "nope" },
					  (const int32_t[]){ want, want, want, want }, 4, 5000, res, 8);
		ck_assert_int_eq(n, 3);
		const cp_result *ra = find_result(res, n, "ra"), *rb = find_result(res, n, "rb"),
				*no = find_result(res, n, "nope");
		ck_assert(ra && rb && no);
		ck_assert_int_eq(ra->err, E_INVALID_REQUEST);
		ck_assert_str_eq(ra->msg, "Duplicate topic name.");
		ck_assert_int_eq(rb->err, E_NONE);
		ck_assert_int_eq(rb->msg_len, -1);
		ck_assert_int_eq(no->err, E_UNKNOWN_TOPIC_OR_PARTITION);
		ck_assert_int_eq(no->msg_len, -1);
		ck_assert_int_eq(md_partitions(p, "ra"), want - 1);
		ck_assert_int_eq(md_partitions(p, "rb"), want);

		/* ra alone grows; then the same count again is refused. */
		n = raw_create_partitions(fd, ver, (const char *const[]){ "ra" }, &want, 1, 5000, res, 8);
		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(res[0].err, E_NONE);
		n = raw_create_partitions(fd, ver, (const char *const[]){ "ra" }, &want, 1, 5000, res, 8);
		ck_assert_int_eq(res[0].err, E_INVALID_PARTITIONS);
		snprintf(msg, sizeof(msg), "Topic already has %d partition(s).", want);
		ck_assert_str_eq(res[0].msg, msg);
		ck_assert_int_eq(md_partitions(p, "ra"), want);
	}
	close(fd);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* ---- DescribeLogDirs ---- */

typedef struct ld_part {
	char topic[64];
	int32_t index;
	int64_t size;
} ld_part;

typedef struct ld_answer {
	int16_t top_error;
	int nresults;
	int16_t dir_error;
	char dir[PATH_MAX];
	int ntopics;
	ld_part parts[512];
	int nparts;
	int64_t total, usable;
	int cordoned;
} ld_answer;

/* DescribeLogDirs of version ver; filter NULL = every partition, else one
 * topic with the given partitions. */
static void describe_log_dirs(int fd, int16_t ver, const char *topic, const int32_t *parts,
			      int nparts, ld_answer *a)
{
	memset(a, 0, sizeof(*a));
	a->total = a->usable = -2;
	bool flex = ver >= 2;
	k_wbuf body = {.len = 0};
	if (!topic) {
		if (flex)
			kw_uvarint(&body, 0);
		else
			kw_i32(&body, -1);
	} else if (flex) {
		kw_uvarint(&body, 2);
		kw_cstr(&body, topic);
		kw_uvarint(&body, (uint64_t)nparts + 1);
		for (int i = 0; i < nparts; i++)
			kw_i32(&body, parts[i]);
		kw_tags0(&body);
	} else {
		kw_i32(&body, 1);
		kw_str16(&body, topic);
		kw_i32(&body, nparts);
		for (int i = 0; i < nparts; i++)
			kw_i32(&body, parts[i]);
	}
	if (flex)
		kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = flex ? k_roundtrip(fd, 35, ver, &body, &r)
			     : classic_roundtrip(fd, 35, ver, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	if (ver >= 3)
		a->top_error = kr_i16(&r, "error code");
	a->nresults = (int)(flex ? kr_carray(&r, "results") : kr_i32(&r, "results"));
	for (int i = 0; i < a->nresults; i++) {
		a->dir_error = kr_i16(&r, "dir error");
		if (flex)
			kr_cstr(&r, a->dir, sizeof(a->dir), "log dir");
		else
			kr_str16(&r, a->dir, sizeof(a->dir), "log dir");
		int64_t nt = flex ? kr_carray(&r, "topics") : kr_i32(&r, "topics");
		a->ntopics = (int)nt;
		for (int64_t t = 0; t < nt; t++) {
			char name[64];
			if (flex)
				kr_cstr(&r, name, sizeof(name), "topic");
			else
				kr_str16(&r, name, sizeof(name), "topic");
			int64_t np = flex ? kr_carray(&r, "partitions") : kr_i32(&r, "partitions");
			ck_assert_msg(np > 0, "topic %s listed without partitions", name);
			for (int64_t k = 0; k < np; k++) {
				ck_assert_int_lt(a->nparts, 512);
				ld_part *lp = &a->parts[a->nparts++];
				snprintf(lp->topic, sizeof(lp->topic), "%s", name);
				lp->index = kr_i32(&r, "partition");
				lp->size = kr_i64(&r, "size");
				ck_assert_int_eq(kr_i64(&r, "offset lag"), 0);
				ck_assert_int_eq(kr_i8(&r, "is future"), 0);
				if (flex)
					kr_tags(&r, "partition tags");
			}
			if (flex)
				kr_tags(&r, "topic tags");
		}
		if (ver >= 4) {
			a->total = kr_i64(&r, "total bytes");
			a->usable = kr_i64(&r, "usable bytes");
		}
		if (ver >= 5)
			a->cordoned = kr_i8(&r, "is cordoned");
		if (flex)
			kr_tags(&r, "result tags");
	}
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "DescribeLogDirs");
	free(resp);
}

static const ld_part *ld_find(const ld_answer *a, const char *topic, int32_t index)
{
	for (int i = 0; i < a->nparts; i++)
		if (strcmp(a->parts[i].topic, topic) == 0 && a->parts[i].index == index)
			return &a->parts[i];
	return NULL;
}

/* Bytes of the .log segment files of <topic>-<p> in b's dir. */
static int64_t log_bytes(const h_broker *b, const char *topic, int p)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s-%d", b->dir, topic, p);
	DIR *d = opendir(path);
	ck_assert_ptr_nonnull(d);
	int64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 4 || strcmp(e->d_name + l - 4, ".log") != 0)
			continue;
		char f[PATH_MAX + 600];
		struct stat st;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		ck_assert_int_eq(stat(f, &st), 0);
		sum += st.st_size;
	}
	closedir(d);
	return sum;
}

START_TEST(test_log_dirs)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char msg[256];
	ck_assert_int_eq(c_create_topic(p, "ld", 2, 1, NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(c_create_topic(p, "other", 1, 1, NULL, msg, sizeof(msg)), 0);
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	char absdir[PATH_MAX];
	ck_assert_ptr_nonnull(realpath(b->dir, absdir));

	ld_answer a;
	int64_t last[2] = { 0, 0 };
	for (int round = 0; round < 3; round++) {
		for (int16_t ver = 1; ver <= 5; ver++) {
			describe_log_dirs(fd, ver, NULL, NULL, 0, &a);
			ck_assert_int_eq(a.top_error, 0);
			ck_assert_int_eq(a.nresults, 1);
			ck_assert_int_eq(a.dir_error, 0);
			char got[PATH_MAX];
			ck_assert_ptr_nonnull(realpath(a.dir, got));
			ck_assert_str_eq(got, absdir);
			ck_assert_msg(a.dir[0] == '/', "log dir %s is not absolute", a.dir);
			for (int part = 0; part < 2; part++) {
				const ld_part *lp = ld_find(&a, "ld", part);
				ck_assert_msg(lp != NULL, "v%d: ld-%d missing", ver, part);
				ck_assert_int_eq(lp->size, log_bytes(b, "ld", part));
				if (round == 0)
					ck_assert_int_eq(lp->size, 0);
				else if (part == 1)
					ck_assert_msg(lp->size > last[part], "v%d round %d: size %lld not above %lld",
						      ver, round, (long long)lp->size, (long long)last[part]);
				else
					ck_assert_int_eq(lp->size, 0);
			}
			ck_assert_ptr_nonnull(ld_find(&a, "other", 0));
			if (ver >= 4) {
				struct statvfs v;
				ck_assert_int_eq(statvfs(b->dir, &v), 0);
				ck_assert_int_eq(a.total, (int64_t)v.f_blocks * (int64_t)v.f_frsize);
				ck_assert_msg(a.usable > 0 && a.usable <= a.total, "usable %lld total %lld",
					      (long long)a.usable, (long long)a.total);
			}
			ck_assert_int_eq(a.cordoned, 0);
		}
		last[1] = ld_find(&a, "ld", 1)->size;
		/* Produce to partition 1 only; the next round sees it grow. */
		c_delivery d[20];
		for (int i = 0; i < 20; i++) {
			c_msg m = {.topic = "ld", .partition = 1, .value = "some bytes", .value_len = 10};
			c_produce(p, &m, &d[i]);
		}
		c_flush(p, h_scaled_ms(15000));
		for (int i = 0; i < 20; i++)
			ck_assert_int_eq(d[i].err, 0);
	}

	/* The filter: partitions asked for, unknown ones left out. */
	for (int16_t ver = 1; ver <= 5; ver += 4) {
		describe_log_dirs(fd, ver, "ld", (const int32_t[]){ 1, 9, 1 }, 3, &a);
		ck_assert_int_eq(a.nresults, 1);
		ck_assert_int_eq(a.ntopics, 1);
		ck_assert_int_eq(a.nparts, 1);
		ck_assert_str_eq(a.parts[0].topic, "ld");
		ck_assert_int_eq(a.parts[0].index, 1);
		ck_assert_int_gt(a.parts[0].size, 0);
		describe_log_dirs(fd, ver, "nope", (const int32_t[]){ 0 }, 1, &a);
		ck_assert_int_eq(a.nresults, 1);
		ck_assert_int_eq(a.dir_error, 0);
		ck_assert_int_eq(a.ntopics, 0);
		describe_log_dirs(fd, ver, "ld", (const int32_t[]){ 5 }, 1, &a);
		ck_assert_int_eq(a.ntopics, 0);
	}
	close(fd);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* ---- DescribeCluster ---- */

typedef struct dc_answer {
	int16_t err;
	char msg[256];
	int8_t endpoint_type;
	char cluster_id[64];
	int32_t controller;
	int nbrokers;
	int32_t broker_id, port;
	char host[64];
	int64_t rack_len;
	int8_t fenced;
	int32_t ops;
} dc_answer;

static void describe_cluster(int fd, int16_t ver, bool ops, int8_t endpoint_type, dc_answer *a)
{
	memset(a, 0, sizeof(*a));
	k_wbuf body = {.len = 0};
	kw_u8(&body, ops);
	if (ver >= 1)
		kw_u8(&body, (uint8_t)endpoint_type);
	if (ver >= 2)
		kw_u8(&body, 1); /* include fenced brokers */
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 60, ver, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	a->err = kr_i16(&r, "error code");
	kr_cstr(&r, a->msg, sizeof(a->msg), "error message");
	a->endpoint_type = ver >= 1 ? kr_i8(&r, "endpoint type") : 1;
	kr_cstr(&r, a->cluster_id, sizeof(a->cluster_id), "cluster id");
	a->controller = kr_i32(&r, "controller id");
	a->nbrokers = (int)kr_carray(&r, "brokers");
	for (int i = 0; i < a->nbrokers; i++) {
		a->broker_id = kr_i32(&r, "broker id");
		kr_cstr(&r, a->host, sizeof(a->host), "host");
		a->port = kr_i32(&r, "port");
		a->rack_len = kr_cstr(&r, NULL, 0, "rack");
		if (ver >= 2)
			a->fenced = kr_i8(&r, "is fenced");
		kr_tags(&r, "broker tags");
	}
	a->ops = kr_i32(&r, "authorized operations");
	kr_tags(&r, "tags");
	kr_done(&r, "DescribeCluster");
	free(resp);
}

START_TEST(test_cluster)
{
	h_broker *b = c_start_broker((const char *const[]){ "broker.id=3", NULL });
	char path[PATH_MAX + 32], line[256], cluster_id[64] = "";
	snprintf(path, sizeof(path), "%s/meta.properties", b->dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "cluster.id=", 11) == 0)
			snprintf(cluster_id, sizeof(cluster_id), "%.*s", (int)strcspn(line + 11, "\r\n"),
				 line + 11);
	fclose(f);
	ck_assert_msg(cluster_id[0], "no cluster.id in %s", path);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	dc_answer a;
	for (int16_t ver = 0; ver <= 2; ver++) {
		for (int ops = 0; ops <= 1; ops++) {
			describe_cluster(fd, ver, ops, 1, &a);
			ck_assert_int_eq(a.err, 0);
			ck_assert_str_eq(a.msg, "");
			ck_assert_int_eq(a.endpoint_type, 1);
			ck_assert_str_eq(a.cluster_id, cluster_id);
			ck_assert_int_eq(a.controller, 3);
			ck_assert_int_eq(a.nbrokers, 1);
			ck_assert_int_eq(a.broker_id, 3);
			ck_assert_str_eq(a.host, "127.0.0.1");
			ck_assert_int_eq(a.port, b->port);
			ck_assert_int_eq(a.rack_len, -1);
			ck_assert_int_eq(a.fenced, 0);
			/* CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS
			 * ALTER_CONFIGS IDEMPOTENT_WRITE */
			ck_assert_int_eq(a.ops, ops ? 0x1fa0 : INT32_MIN);
		}
	}
	for (int16_t ver = 1; ver <= 2; ver++) {
		describe_cluster(fd, ver, false, 2, &a);
		ck_assert_int_eq(a.err, E_MISMATCHED_ENDPOINT_TYPE);
		ck_assert_str_eq(a.msg, "The request was sent to an endpoint of type BROKER, but we wanted "
				 "an endpoint of type CONTROLLER");
		ck_assert_int_eq(a.nbrokers, 0);
		ck_assert_str_eq(a.cluster_id, "");
		ck_assert_int_eq(a.controller, -1);
		describe_cluster(fd, ver, false, 3, &a);
		ck_assert_int_eq(a.err, E_UNSUPPORTED_ENDPOINT_TYPE);
		ck_assert_str_eq(a.msg, "Unsupported endpoint type 3");
		ck_assert_int_eq(a.nbrokers, 0);
	}
	close(fd);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("partitions");
	TCase *tc = tcase_create("partitions");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_grow);
	tcase_add_test(tc, test_raw_create_partitions);
	tcase_add_test(tc, test_log_dirs);
	tcase_add_test(tc, test_cluster);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
