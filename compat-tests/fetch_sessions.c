/*
 * fetch_sessions.c - incremental fetch sessions (KIP-227) on raw Fetch v12
 * requests (Kafka's FetchSession.scala rules): a full fetch at epoch 0 gets
 * a nonzero session id; an incremental fetch listing no partitions answers
 * only the partitions that changed (a produce in between); forgotten topics
 * stop being answered; a wrong epoch gets INVALID_FETCH_SESSION_EPOCH (71),
 * an unknown id FETCH_SESSION_ID_NOT_FOUND (70); epoch -1 closes the
 * session. On v13/v17 (topic ids): a session by topic id, a v12 request
 * on it gets FETCH_SESSION_TOPIC_ID_ERROR (106), a delayed incremental
 * fetch (long poll) answers the session's partition that got data,
 * forgotten topics by id, and forgetting the last partition closes the
 * session. With max.incremental.fetch.session.cache.slots=1 a second
 * client's full fetch is answered with session id 0 (no room, no eviction
 * of a recently created session). librdkafka (session id 0, epoch -1)
 * consumers are covered by the rest of the suite.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "fsess"
#define NPART 2

typedef struct fresp {
	int16_t error;
	int32_t session_id;
	int nparts;          /* partitions answered */
	int32_t part[8];
	int64_t hw[8];
	int64_t rlen[8];
} fresp;

/* A fetch request: version, session, partitions listed and forgotten. */
typedef struct freq {
	int16_t ver;          /* 12 (names) or 13+ (topic id) */
	const uint8_t *tid;   /* the topic id, v13+ */
	int32_t sid, epoch;
	const int32_t *parts; /* listed partitions, from offsets offs */
	const int64_t *offs;
	int npart;
	const int32_t *forget;
	int nforget;
	int32_t max_wait_ms;  /* with min bytes 1 when > 0 */
} freq;

static void topic_ref(k_wbuf *body, const freq *q)
{
	if (q->ver >= 13)
		kw_raw(body, q->tid, 16);
	else
		kw_cstr(body, TOPIC);
}

static int32_t fetch_send(int fd, const freq *q)
{
	k_wbuf body = {.len = 0};
	if (q->ver <= 14)
		kw_i32(&body, -1); /* replica id */
	kw_i32(&body, q->max_wait_ms);
	kw_i32(&body, q->max_wait_ms > 0 ? 1 : 0); /* min bytes */
	kw_i32(&body, 1 << 20); /* max bytes */
	kw_u8(&body, 0);
	kw_i32(&body, q->sid);
	kw_i32(&body, q->epoch);
	if (q->npart > 0) {
		kw_uvarint(&body, 2);
		topic_ref(&body, q);
		kw_uvarint(&body, (uint64_t)q->npart + 1);
		for (int i = 0; i < q->npart; i++) {
			kw_i32(&body, q->parts[i]);
			kw_i32(&body, -1);
			kw_i64(&body, q->offs[i]);
			kw_i32(&body, -1);
			kw_i64(&body, -1);
			kw_i32(&body, 1 << 20);
			kw_tags0(&body);
		}
		kw_tags0(&body);
	} else {
		kw_uvarint(&body, 1);
	}
	if (q->nforget > 0) {
		kw_uvarint(&body, 2);
		topic_ref(&body, q);
		kw_uvarint(&body, (uint64_t)q->nforget + 1);
		for (int i = 0; i < q->nforget; i++)
			kw_i32(&body, q->forget[i]);
		kw_tags0(&body);
	} else {
		kw_uvarint(&body, 1);
	}
	kw_cstr(&body, "");
	kw_tags0(&body);
	return k_send(fd, 1, q->ver, &body);
}

static void fetch_recv(int fd, int32_t cid, const freq *q, fresp *out)
{
	k_rbuf r;
	uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(30000));
	char what[32];
	snprintf(what, sizeof(what), "Fetch v%d", q->ver);
	memset(out, 0, sizeof(*out));
	kr_i32(&r, "throttle");
	out->error = kr_i16(&r, "error code");
	out->session_id = kr_i32(&r, "session id");
	int64_t nt = kr_carray(&r, "responses");
	for (int64_t t = 0; t < nt; t++) {
		if (q->ver >= 13) {
			uint8_t id[16];
			kr_uuid(&r, id, "topic id");
			ck_assert_msg(memcmp(id, q->tid, 16) == 0, "%s: other topic id", what);
		} else {
			char name[64];
			kr_cstr(&r, name, sizeof(name), "topic");
			ck_assert_msg(strcmp(name, TOPIC) == 0, "%s: topic %s", what, name);
		}
		int64_t np = kr_carray(&r, "partitions");
		for (int64_t j = 0; j < np; j++) {
			int k = out->nparts++;
			ck_assert(k < 8);
			out->part[k] = kr_i32(&r, "partition index");
			kr_i16(&r, "error code");
			out->hw[k] = kr_i64(&r, "high watermark");
			kr_i64(&r, "last stable offset");
			kr_i64(&r, "log start offset");
			int64_t nab = kr_carray(&r, "aborted transactions");
			for (int64_t i = 0; i < nab; i++) {
				kr_i64(&r, "producer id");
				kr_i64(&r, "first offset");
				kr_tags(&r, "aborted tags");
			}
			kr_i32(&r, "preferred read replica");
			int64_t rlen = (int64_t)kr_uvarint(&r, "records") - 1;
			out->rlen[k] = rlen;
			if (rlen > 0) {
				ck_assert(kr_need(&r, (size_t)rlen, "records"));
				r.pos += (size_t)rlen;
			}
			kr_tags(&r, "partition tags");
		}
		kr_tags(&r, "topic tags");
	}
	kr_tags(&r, "response tags");
	kr_done(&r, what);
	free(resp);
}

static void fetchq(int fd, const freq *q, fresp *out)
{
	fetch_recv(fd, fetch_send(fd, q), q, out);
}

/* Fetch v12 (names) with the given session, listing partitions parts[]
 * (npart of them, from offset offs[]) and forgetting forget[] (nforget). */
static void fetch12(int fd, int32_t sid, int32_t epoch, const int32_t *parts,
		    const int64_t *offs, int npart, const int32_t *forget, int nforget, fresp *out)
{
	freq q = { .ver = 12, .sid = sid, .epoch = epoch, .parts = parts, .offs = offs,
		   .npart = npart, .forget = forget, .nforget = nforget };
	fetchq(fd, &q, out);
}

/* The topic id from Metadata v12. */
static void topic_id(int fd, uint8_t id[16])
{
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, 2);
	kw_raw(&body, (uint8_t[16]){0}, 16);
	kw_cstr(&body, TOPIC);
	kw_tags0(&body);
	kw_u8(&body, 0);
	kw_u8(&body, 0);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 3, 12, &body, &r);
	kr_i32(&r, "throttle");
	int64_t nb = kr_carray(&r, "brokers");
	for (int64_t i = 0; i < nb; i++) {
		kr_i32(&r, "node");
		kr_cstr(&r, NULL, 0, "host");
		kr_i32(&r, "port");
		kr_cstr(&r, NULL, 0, "rack");
		kr_tags(&r, "broker tags");
	}
	kr_cstr(&r, NULL, 0, "cluster id");
	kr_i32(&r, "controller id");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	ck_assert_int_eq(kr_i16(&r, "topic error"), 0);
	kr_cstr(&r, NULL, 0, "topic name");
	kr_uuid(&r, id, "topic id");
	ck_assert(!r.err);
	free(resp);
}

static void produce_one(rd_kafka_t *p, int32_t partition)
{
	c_msg m = { .topic = TOPIC, .partition = partition, .value = "v", .value_len = 1 };
	c_produce(p, &m, NULL);
	c_flush(p, h_scaled_ms(10000));
}

START_TEST(test_incremental)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	produce_one(p, 0);
	produce_one(p, 1);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	fresp f;
	int32_t parts[2] = { 0, 1 };
	int64_t offs[2] = { 1, 1 };
	/* full fetch, epoch 0: a session */
	fetch12(fd, 0, 0, parts, offs, 2, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_ne(f.session_id, 0);
	ck_assert_int_eq(f.nparts, 2);
	int32_t sid = f.session_id;

	/* nothing changed: an empty incremental response */
	fetch12(fd, sid, 1, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.session_id, sid);
	ck_assert_int_eq(f.nparts, 0);

	/* a produce to partition 1: only it is answered, with its data */
	produce_one(p, 1);
	fetch12(fd, sid, 2, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 1);
	ck_assert_int_eq(f.part[0], 1);
	ck_assert_int_eq(f.hw[0], 2);
	ck_assert_int_gt(f.rlen[0], 0);

	/* the client moves partition 1 on; nothing new */
	int32_t p1[1] = { 1 };
	int64_t o2[1] = { 2 };
	fetch12(fd, sid, 3, p1, o2, 1, NULL, 0, &f);
	ck_assert_int_eq(f.nparts, 0);

	/* forget partition 0: a produce there is not answered any more */
	int32_t fg[1] = { 0 };
	fetch12(fd, sid, 4, NULL, NULL, 0, fg, 1, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 0);
	produce_one(p, 0);
	fetch12(fd, sid, 5, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 0);

	/* wrong epoch -> 71, unknown id -> 70 (no partitions, session id 0) */
	fetch12(fd, sid, 9, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 71);
	ck_assert_int_eq(f.nparts, 0);
	fetch12(fd, sid ^ 0x40000000, 1, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 70);
	ck_assert_int_eq(f.session_id, 0);
	/* the session still works at the right epoch */
	fetch12(fd, sid, 6, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);

	/* epoch -1 closes it: sessionless answer, then the id is unknown */
	fetch12(fd, sid, -1, parts, offs, 2, NULL, 0, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.session_id, 0);
	ck_assert_int_eq(f.nparts, 2);
	fetch12(fd, sid, 7, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 70);

	close(fd);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_topic_ids)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	uint8_t tid[16];
	topic_id(fd, tid);
	int32_t parts[2] = { 0, 1 };
	int64_t offs[2] = { 0, 0 };
	fresp f;
	/* v17 full fetch by topic id: a session */
	freq q = { .ver = 17, .tid = tid, .sid = 0, .epoch = 0, .parts = parts, .offs = offs,
		   .npart = 2 };
	fetchq(fd, &q, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_ne(f.session_id, 0);
	ck_assert_int_eq(f.nparts, 2);
	int32_t sid = f.session_id;
	freq inc = { .ver = 17, .tid = tid, .sid = sid, .epoch = 1 };
	fetchq(fd, &inc, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 0);

	/* a v12 request (names) on a topic-id session: 106 */
	fetch12(fd, sid, 2, NULL, NULL, 0, NULL, 0, &f);
	ck_assert_int_eq(f.error, 106);
	ck_assert_int_eq(f.nparts, 0);

	/* a delayed incremental fetch (long poll, nothing listed) is answered
	 * with the session's partition that got data */
	inc.epoch = 2;
	inc.max_wait_ms = h_scaled_ms(20000);
	int32_t cid = fetch_send(fd, &inc);
	usleep(200 * 1000);
	produce_one(p, 1);
	fetch_recv(fd, cid, &inc, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 1);
	ck_assert_int_eq(f.part[0], 1);
	ck_assert_int_gt(f.rlen[0], 0);

	/* v13: forget partition 1 by topic id; new data there is not answered,
	 * partition 0's is */
	int32_t fg[1] = { 1 };
	freq inc13 = { .ver = 13, .tid = tid, .sid = sid, .epoch = 3, .forget = fg, .nforget = 1 };
	fetchq(fd, &inc13, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 0);
	produce_one(p, 1);
	produce_one(p, 0);
	inc13.epoch = 4;
	inc13.nforget = 0;
	fetchq(fd, &inc13, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.nparts, 1);
	ck_assert_int_eq(f.part[0], 0);

	/* forgetting the last partition closes the session */
	int32_t fg0[1] = { 0 };
	inc13.epoch = 5;
	inc13.forget = fg0;
	inc13.nforget = 1;
	fetchq(fd, &inc13, &f);
	ck_assert_int_eq(f.error, 0);
	ck_assert_int_eq(f.session_id, 0);
	inc13.epoch = 6;
	inc13.nforget = 0;
	fetchq(fd, &inc13, &f);
	ck_assert_int_eq(f.error, 70);

	close(fd);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_one_slot)
{
	const char *ov[] = { "max.incremental.fetch.session.cache.slots=1", NULL };
	h_broker *b = c_start_broker(ov);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	int fd1 = w_connect(b->port, h_scaled_ms(5000));
	int fd2 = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd1 >= 0 && fd2 >= 0);
	int32_t parts[2] = { 0, 1 };
	int64_t offs[2] = { 0, 0 };
	fresp f1, f2;
	fetch12(fd1, 0, 0, parts, offs, 2, NULL, 0, &f1);
	ck_assert_int_ne(f1.session_id, 0);
	/* no room and nothing evictable: answered without a session */
	fetch12(fd2, 0, 0, parts, offs, 2, NULL, 0, &f2);
	ck_assert_int_eq(f2.error, 0);
	ck_assert_int_eq(f2.session_id, 0);
	ck_assert_int_eq(f2.nparts, 2);
	/* the first session is still there */
	fetch12(fd1, f1.session_id, 1, NULL, NULL, 0, NULL, 0, &f1);
	ck_assert_int_eq(f1.error, 0);
	close(fd1);
	close(fd2);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fetch_sessions");
	TCase *tc = tcase_create("fetch_sessions");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_incremental);
	tcase_add_test(tc, test_topic_ids);
	tcase_add_test(tc, test_one_slot);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
