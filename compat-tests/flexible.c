/*
 * flexible.c - the flexible (KIP-482: compact strings and arrays, tagged
 * fields, request header v2, response header v1) and topic-id versions on
 * raw sockets. librdkafka 2.0.2 sends only ApiVersions v3 flexibly (it
 * stops at Metadata v4, Produce v7, Fetch v11, ListOffsets v2,
 * CreateTopics v4), so without this file the broker's newest advertised
 * versions would go untested.
 *
 * A topic is created through librdkafka; then, by hand: Metadata v12/v13
 * (brokers, topic id, partitions), Produce v9 (by name) and v13 (by topic
 * id) of hand-built record batches (CRC32C), Fetch v12 (name), v13 and v18
 * (topic id) returning those exact batches with their offsets assigned,
 * ListOffsets v7 earliest/latest/max-timestamp (KIP-734) and their leader
 * epochs, and finally librdkafka reads the records produced by hand. Every response is parsed
 * to its last byte. Layouts: Apache Kafka's message definitions for those
 * versions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "flex"
#define NPART 2

typedef struct topic_info {
	uint8_t id[16];
	int partitions;
	int32_t leader_epoch[NPART]; /* from Metadata */
} topic_info;

static void metadata(int fd, int16_t ver, const h_broker *b, topic_info *ti)
{
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, 2); /* one topic */
	kw_raw(&body, (uint8_t[16]){0}, 16);
	kw_cstr(&body, TOPIC);
	kw_tags0(&body);
	kw_u8(&body, 0); /* allow auto topic creation */
	kw_u8(&body, 0); /* include topic authorized operations */
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 3, ver, &body, &r);
	char what[32], host[256];
	snprintf(what, sizeof(what), "Metadata v%d", ver);

	kr_i32(&r, "throttle");
	int64_t nb = kr_carray(&r, "brokers");
	ck_assert_msg(nb == 1, "%s: %lld brokers", what, (long long)nb);
	int32_t node = kr_i32(&r, "node id");
	kr_cstr(&r, host, sizeof(host), "host");
	int32_t port = kr_i32(&r, "port");
	kr_cstr(&r, NULL, 0, "rack");
	kr_tags(&r, "broker tags");
	ck_assert_msg(!r.err && node == 0 && strcmp(host, "127.0.0.1") == 0 && port == b->port,
		      "%s: broker %d %s:%d", what, node, host, port);
	char cluster[128];
	ck_assert_msg(kr_cstr(&r, cluster, sizeof(cluster), "cluster id") > 0,
		      "%s: no cluster id", what);
	int32_t controller = kr_i32(&r, "controller id");
	ck_assert_msg(controller == 0, "%s: controller id %d", what, controller);
	int64_t nt = kr_carray(&r, "topics");
	ck_assert_msg(nt == 1, "%s: %lld topics", what, (long long)nt);
	int16_t terr = kr_i16(&r, "topic error");
	char name[64];
	kr_cstr(&r, name, sizeof(name), "topic name");
	kr_uuid(&r, ti->id, "topic id");
	kr_i8(&r, "is internal");
	ck_assert_msg(!r.err && terr == 0 && strcmp(name, TOPIC) == 0, "%s: topic %s error %d",
		      what, name, terr);
	static const uint8_t zero[16];
	ck_assert_msg(memcmp(ti->id, zero, 16) != 0, "%s: zero topic id", what);
	int64_t np = kr_carray(&r, "partitions");
	ck_assert_msg(np == NPART, "%s: %lld partitions", what, (long long)np);
	ti->partitions = (int)np;
	for (int64_t i = 0; i < np && !r.err; i++) {
		int16_t perr = kr_i16(&r, "partition error");
		int32_t idx = kr_i32(&r, "partition index");
		int32_t leader = kr_i32(&r, "leader");
		int32_t lep = kr_i32(&r, "leader epoch");
		if (i >= 0 && i < NPART)
			ti->leader_epoch[i] = lep;
		int64_t nrep = kr_carray(&r, "replicas");
		for (int64_t k = 0; k < nrep; k++)
			kr_i32(&r, "replica");
		int64_t nisr = kr_carray(&r, "isr");
		for (int64_t k = 0; k < nisr; k++)
			kr_i32(&r, "isr node");
		int64_t noff = kr_carray(&r, "offline");
		for (int64_t k = 0; k < noff; k++)
			kr_i32(&r, "offline node");
		kr_tags(&r, "partition tags");
		ck_assert_msg(!r.err && perr == 0 && idx == i && leader == 0 && nrep == 1 &&
				      nisr == 1 && noff == 0,
			      "%s: partition %lld: error %d index %d leader %d replicas %lld isr "
			      "%lld offline %lld",
			      what, (long long)i, perr, idx, leader, (long long)nrep,
			      (long long)nisr, (long long)noff);
	}
	kr_i32(&r, "topic authorized operations");
	kr_tags(&r, "topic tags");
	if (ver >= 13)
		ck_assert_int_eq(kr_i16(&r, "top-level error"), 0);
	kr_tags(&r, "response tags");
	kr_done(&r, what);
	free(resp);
}

/* Produce one batch to partition; returns the base offset. */
static int64_t produce(int fd, int16_t ver, const topic_info *ti, int32_t partition,
		       const k_wbuf *batch)
{
	k_wbuf body = {.len = 0};
	kw_cstr(&body, NULL); /* transactional id */
	kw_i16(&body, 1);     /* acks */
	kw_i32(&body, 10000);
	kw_uvarint(&body, 2);
	if (ver >= 13)
		kw_raw(&body, ti->id, 16);
	else
		kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_uvarint(&body, batch->len + 1);
	kw_raw(&body, batch->b, batch->len);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, ver, &body, &r);
	char what[32];
	snprintf(what, sizeof(what), "Produce v%d", ver);
	ck_assert_int_eq(kr_carray(&r, "responses"), 1);
	if (ver >= 13) {
		uint8_t id[16];
		kr_uuid(&r, id, "topic id");
		ck_assert_msg(!r.err && memcmp(id, ti->id, 16) == 0, "%s: other topic id", what);
	} else {
		char name[64];
		kr_cstr(&r, name, sizeof(name), "topic name");
		ck_assert_msg(!r.err && strcmp(name, TOPIC) == 0, "%s: topic %s", what, name);
	}
	ck_assert_int_eq(kr_carray(&r, "partition responses"), 1);
	int32_t idx = kr_i32(&r, "index");
	int16_t err = kr_i16(&r, "error code");
	int64_t base = kr_i64(&r, "base offset");
	kr_i64(&r, "log append time");
	kr_i64(&r, "log start offset");
	int64_t nre = kr_carray(&r, "record errors");
	char emsg[256];
	kr_cstr(&r, emsg, sizeof(emsg), "error message");
	kr_tags(&r, "partition tags");
	ck_assert_msg(!r.err && idx == partition && err == 0 && nre == 0,
		      "%s: partition %d error %d (%s), %lld record errors", what, idx, err, emsg,
		      (long long)nre);
	kr_tags(&r, "topic tags");
	kr_i32(&r, "throttle");
	kr_tags(&r, "response tags");
	kr_done(&r, what);
	free(resp);
	return base;
}

/*
 * Fetch partition from offset; the records must be exactly the batch
 * bytes sent (base offset and leader epoch aside). Returns the high
 * watermark.
 */
static int64_t fetch(int fd, int16_t ver, const topic_info *ti, int32_t partition,
		     int64_t offset, const k_wbuf *expect, int64_t expect_base)
{
	k_wbuf body = {.len = 0};
	if (ver <= 14)
		kw_i32(&body, -1); /* replica id */
	kw_i32(&body, 100);        /* max wait ms */
	kw_i32(&body, 1);          /* min bytes */
	kw_i32(&body, 1 << 20);    /* max bytes */
	kw_u8(&body, 0);           /* isolation level */
	kw_i32(&body, 0);          /* session id */
	kw_i32(&body, -1);         /* session epoch */
	kw_uvarint(&body, 2);
	if (ver >= 13)
		kw_raw(&body, ti->id, 16);
	else
		kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_i32(&body, -1);      /* current leader epoch */
	kw_i64(&body, offset);
	kw_i32(&body, -1);      /* last fetched epoch */
	kw_i64(&body, -1);      /* log start offset */
	kw_i32(&body, 1 << 20); /* partition max bytes */
	kw_tags0(&body);
	kw_tags0(&body);
	kw_uvarint(&body, 1); /* forgotten topics: none */
	kw_cstr(&body, "");   /* rack id */
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, ver, &body, &r);
	char what[32];
	snprintf(what, sizeof(what), "Fetch v%d", ver);
	kr_i32(&r, "throttle");
	int16_t top = kr_i16(&r, "error code");
	kr_i32(&r, "session id");
	ck_assert_msg(top == 0, "%s: error %d", what, top);
	ck_assert_int_eq(kr_carray(&r, "responses"), 1);
	if (ver >= 13) {
		uint8_t id[16];
		kr_uuid(&r, id, "topic id");
		ck_assert_msg(!r.err && memcmp(id, ti->id, 16) == 0, "%s: other topic id", what);
	} else {
		char name[64];
		kr_cstr(&r, name, sizeof(name), "topic");
		ck_assert_msg(!r.err && strcmp(name, TOPIC) == 0, "%s: topic %s", what, name);
	}
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	int32_t idx = kr_i32(&r, "partition index");
	int16_t err = kr_i16(&r, "error code");
	int64_t hw = kr_i64(&r, "high watermark");
	int64_t lso = kr_i64(&r, "last stable offset");
	int64_t lstart = kr_i64(&r, "log start offset");
	int64_t nab = kr_carray(&r, "aborted transactions");
	for (int64_t i = 0; i < nab; i++) {
		kr_i64(&r, "producer id");
		kr_i64(&r, "first offset");
		kr_tags(&r, "aborted tags");
	}
	kr_i32(&r, "preferred read replica");
	int64_t rlen = (int64_t)kr_uvarint(&r, "records") - 1;
	ck_assert_msg(!r.err && idx == partition && err == 0,
		      "%s: partition %d error %d (%s)", what, idx, err, r.err ? r.err : "");
	ck_assert_msg(lstart == 0 && lso == hw, "%s: log start %lld, LSO %lld, HW %lld", what,
		      (long long)lstart, (long long)lso, (long long)hw);
	ck_assert_msg(rlen >= 0 && kr_need(&r, (size_t)rlen, "records"), "%s: no records",
		      what);
	const uint8_t *rec = r.b + r.pos;
	r.pos += (size_t)rlen;
	/* The first batch of the answer must be the one produced there. */
	ck_assert_msg((size_t)rlen >= expect->len, "%s: %lld bytes of records, expected >= %zu",
		      what, (long long)rlen, expect->len);
	int64_t base = 0;
	for (int i = 0; i < 8; i++)
		base = base << 8 | rec[i];
	ck_assert_msg(base == expect_base, "%s: batch base offset %lld, expected %lld", what,
		      (long long)base, (long long)expect_base);
	ck_assert_msg(memcmp(rec + 8, expect->b + 8, 4) == 0 &&
			      memcmp(rec + 16, expect->b + 16, expect->len - 16) == 0,
		      "%s: the fetched batch differs from the produced one", what);
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "response tags");
	kr_done(&r, what);
	free(resp);
	return hw;
}

/* ListOffsets v7 (flexible) for one timestamp; returns the offset and
 * sets *ts to the returned timestamp and *epoch to the leader epoch. */
static int64_t list_offsets(int fd, int32_t partition, int64_t timestamp, int64_t *ts,
			    int32_t *epoch)
{
	k_wbuf body = {.len = 0};
	kw_i32(&body, -1); /* replica id */
	kw_u8(&body, 0);   /* isolation level */
	kw_uvarint(&body, 2);
	kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_i32(&body, -1); /* current leader epoch */
	kw_i64(&body, timestamp);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 2, 7, &body, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	kr_cstr(&r, NULL, 0, "name");
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	int32_t idx = kr_i32(&r, "partition index");
	int16_t err = kr_i16(&r, "error code");
	*ts = kr_i64(&r, "timestamp");
	int64_t off = kr_i64(&r, "offset");
	*epoch = kr_i32(&r, "leader epoch");
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "response tags");
	kr_done(&r, "ListOffsets v7");
	ck_assert_msg(idx == partition && err == 0, "ListOffsets v7 (%lld): error %d",
		      (long long)timestamp, err);
	free(resp);
	return off;
}

typedef struct seen {
	int n;
	char error[256];
} seen;

static int check_cb(const rd_kafka_message_t *m, void *opaque)
{
	seen *s = opaque;
	char want[32];
	snprintf(want, sizeof(want), "rec-%d", s->n);
	rd_kafka_headers_t *h = NULL;
	const void *hv;
	size_t hl;
	if (m->offset != s->n || m->len != strlen(want) || memcmp(m->payload, want, m->len) ||
	    m->key_len != 1 || rd_kafka_message_headers(m, &h) ||
	    rd_kafka_header_get_last(h, "hk", &hv, &hl) || hl != 2 || memcmp(hv, "hv", 2)) {
		snprintf(s->error, sizeof(s->error), "offset %lld: unexpected record %.*s",
			 (long long)m->offset, (int)m->len, (const char *)m->payload);
		return 1;
	}
	s->n++;
	return 0;
}

START_TEST(test_flexible_versions)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	rd_kafka_destroy(p);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	topic_info ti, ti13;
	metadata(fd, 12, b, &ti);
	metadata(fd, 13, b, &ti13);
	ck_assert_msg(memcmp(ti.id, ti13.id, 16) == 0, "topic id differs between requests");

	const int64_t ts0 = 1700000000000LL;
	k_wbuf b1 = {.len = 0}, b2 = {.len = 0}, b3 = {.len = 0};
	k_build_batch(&b1, 5, 0, ts0, 0);         /* offsets 0-4 */
	k_build_batch(&b2, 3, 5, ts0 + 1000, 1);  /* 5-7, max timestamp at 5 */
	k_build_batch(&b3, 2, 8, ts0 + 2000, 0);  /* 8-9 */
	ck_assert_int_eq(produce(fd, 9, &ti, 0, &b1), 0);
	ck_assert_int_eq(produce(fd, 13, &ti, 0, &b2), 5);
	ck_assert_int_eq(produce(fd, 11, &ti, 0, &b3), 8);

	ck_assert_int_eq(fetch(fd, 12, &ti, 0, 0, &b1, 0), 10);
	ck_assert_int_eq(fetch(fd, 13, &ti, 0, 5, &b2, 5), 10);
	ck_assert_int_eq(fetch(fd, 18, &ti, 0, 8, &b3, 8), 10);
	/* An offset inside a batch returns the whole batch. */
	ck_assert_int_eq(fetch(fd, 16, &ti, 0, 6, &b2, 5), 10);

	int64_t ts;
	int32_t ep, lep = ti.leader_epoch[0];
	ck_assert_int_ge(lep, 0);
	/* Leader epochs answered (Kafka's Partition.fetchOffsetForTimestamp):
	 * every batch here was written in the current epoch. */
	ck_assert_int_eq(list_offsets(fd, 0, -2, &ts, &ep), 0);
	ck_assert_int_eq(ep, lep);
	ck_assert_int_eq(list_offsets(fd, 0, -1, &ts, &ep), 10);
	ck_assert_int_eq(ep, lep);
	/* An empty partition: LATEST carries the current leader epoch, and so
	 * does EARLIEST: the epoch began at offset 0 when this broker became
	 * leader (Kafka's Partition.makeLeader assigns it, KAFKA-7415). */
	ck_assert_int_eq(list_offsets(fd, 1, -1, &ts, &ep), 0);
	ck_assert_int_eq(ep, ti.leader_epoch[1]);
	ck_assert_int_eq(list_offsets(fd, 1, -2, &ts, &ep), 0);
	ck_assert_int_eq(ep, ti.leader_epoch[1]);
	int64_t off = list_offsets(fd, 0, -3, &ts, &ep);
	ck_assert_int_eq(ep, lep);
	ck_assert_msg(off == 5 && ts == ts0 + 1000 + 100000,
		      "ListOffsets max timestamp: offset %lld timestamp %lld, expected 5 and %lld",
		      (long long)off, (long long)ts, (long long)(ts0 + 101000));
	off = list_offsets(fd, 0, ts0 + 15, &ts, &ep);
	ck_assert_int_eq(ep, lep);
	ck_assert_msg(off == 2 && ts == ts0 + 20, "ListOffsets by time: offset %lld ts %lld",
		      (long long)off, (long long)ts);
	close(fd);

	/* What was produced by hand is what a client reads. */
	rd_kafka_t *c = c_consumer(b, NULL);
	seen s = {0};
	long n = c_consume(c, TOPIC, 0, RD_KAFKA_OFFSET_BEGINNING, 10, h_scaled_ms(20000),
			   check_cb, &s);
	ck_assert_msg(!s.error[0], "%s", s.error);
	ck_assert_int_eq(n, 10);
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

/* A flexible request whose tagged fields carry unknown tags (which a
 * receiver must skip, KIP-482) is served like one without them. */
START_TEST(test_unknown_tagged_fields)
{
	h_broker *b = c_start_broker(NULL);
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, 0); /* topics: null = all */
	kw_u8(&body, 0);
	kw_u8(&body, 0);
	kw_uvarint(&body, 2); /* two unknown tags */
	kw_uvarint(&body, 90);
	kw_uvarint(&body, 3);
	kw_raw(&body, "abc", 3);
	kw_uvarint(&body, 91);
	kw_uvarint(&body, 0);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 3, 12, &body, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "brokers"), 1);
	free(resp);
	/* The connection still works. */
	ck_assert_int_eq(w_api_versions_v0(fd, 7, h_scaled_ms(5000)), 0);
	close(fd);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flexible");
	TCase *tc = tcase_create("flexible");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_flexible_versions);
	tcase_add_test(tc, test_unknown_tagged_fields);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
