/*
 * acks.c - the Produce acks setting means what Kafka says (Kafka producer
 * config "acks", protocol guide Produce.Acks):
 *  - acks=0: librdkafka gets no response and every record still arrives
 *    (consumed back in order); on the wire, a raw acks=0 Produce is followed
 *    by the response of the next request and nothing else;
 *  - acks=1: answered after the leader's append, with the offsets;
 *  - acks=all on a topic with min.insync.replicas=2 (CreateTopics config) on
 *    one broker: the delivery report says NOT_ENOUGH_REPLICAS and nothing is
 *    written, while acks=1 to the same topic succeeds; acks=all to a topic
 *    with the default min.insync.replicas=1 succeeds;
 *  - any other value: INVALID_REQUIRED_ACKS (21). librdkafka refuses such a
 *    value itself, so this one is a raw Produce v9 with acks=5 (kmsg.h).
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

#define NREC 2000

static void create(rd_kafka_t *rk, const char *topic, const char *const *configs)
{
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(rk, topic, 1, 1, configs, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics %s: %s %s", topic, rd_kafka_err2name(err), errstr);
	c_wait_topic(rk, topic, 1, h_scaled_ms(10000));
}

/* Produce NREC records "<tag>-<i>" to topic partition 0, flush, and fill dr. */
static void produce_n(rd_kafka_t *p, const char *topic, const char *tag, c_delivery *dr, long n)
{
	char value[64];
	for (long i = 0; i < n; i++) {
		c_msg m = {.topic = topic,
			   .partition = 0,
			   .value = value,
			   .value_len = (size_t)snprintf(value, sizeof(value), "%s-%ld", tag, i)};
		c_produce(p, &m, &dr[i]);
		if (i % 500 == 0)
			rd_kafka_poll(p, 0);
	}
	c_flush(p, h_scaled_ms(60000));
}

typedef struct seq_state {
	const char *tag;
	long next;
	char error[256];
} seq_state;

static int seq_cb(const rd_kafka_message_t *m, void *opaque)
{
	seq_state *s = opaque;
	char want[64];
	int n = snprintf(want, sizeof(want), "%s-%ld", s->tag, s->next);
	if (m->offset != s->next || m->len != (size_t)n || memcmp(m->payload, want, (size_t)n)) {
		snprintf(s->error, sizeof(s->error), "offset %lld holds \"%.*s\", expected \"%s\" at %ld",
			 (long long)m->offset, (int)(m->len > 60 ? 60 : m->len),
			 m->payload ? (const char *)m->payload : "", want, s->next);
		return 1;
	}
	s->next++;
	return 0;
}

/* Consume partition 0 from the beginning: exactly n records "<tag>-<i>" at
 * offsets 0..n-1, and the high watermark n (nothing more). */
static void expect_records(h_broker *b, const char *topic, const char *tag, long n)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	seq_state s = {.tag = tag};
	long got = c_consume(c, topic, 0, RD_KAFKA_OFFSET_BEGINNING, n, h_scaled_ms(60000), seq_cb,
			     &s);
	ck_assert_msg(!s.error[0], "%s: %s", topic, s.error);
	ck_assert_msg(got == n, "%s: consumed %ld of %ld records", topic, got, n);
	int64_t lo = -1, hi = -1;
	rd_kafka_resp_err_t err =
	    rd_kafka_query_watermark_offsets(c, topic, 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
	ck_assert_msg(hi == n, "%s: high watermark %lld, expected %ld", topic, (long long)hi, n);
	rd_kafka_destroy(c);
}

START_TEST(test_acks0_librdkafka)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "0", "linger.ms", "5", NULL});
	create(p, "acks0", NULL);
	c_delivery *dr = calloc(NREC, sizeof(*dr));
	ck_assert_ptr_nonnull(dr);
	produce_n(p, "acks0", "a0", dr, NREC);
	for (long i = 0; i < NREC; i++) {
		ck_assert_msg(dr[i].done, "record %ld: no delivery report", i);
		ck_assert_msg(dr[i].err == 0, "record %ld: %s", i, rd_kafka_err2str(dr[i].err));
		/* (no response, so the report's offset is librdkafka's own
		 * guess: not checked; the records are consumed back below) */
	}
	rd_kafka_destroy(p);
	expect_records(b, "acks0", "a0", NREC);
	free(dr);
	c_stop_broker(b);
}
END_TEST

/* Raw: Produce acks=0 then Metadata v12 on the same connection; the first
 * frame back must be the Metadata response (k_recv checks the correlation
 * id), so the Produce got none. Then both batches are in the log. */
START_TEST(test_acks0_wire)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	create(p, "acks0w", NULL);
	rd_kafka_destroy(p);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	static k_wbuf batch, body;
	for (int k = 0; k < 2; k++) {
		batch.len = 0;
		k_build_batch(&batch, 3, 3 * k, 1700000000000LL, 0);
		k_produce_body(&body, "acks0w", 0, 0, &batch);
		k_send(fd, 0, 9, &body);
	}
	body.len = 0;
	kw_uvarint(&body, 0); /* topics: null = all */
	kw_u8(&body, 0);      /* allow auto topic creation */
	kw_u8(&body, 0);      /* include topic authorized operations */
	kw_tags0(&body);
	int32_t cid = k_send(fd, 3, 12, &body);
	k_rbuf r;
	uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(5000));
	ck_assert_ptr_nonnull(resp);
	free(resp);
	/* and nothing else arrives */
	uint8_t *extra = NULL;
	int32_t len = 0;
	ck_assert_int_eq(w_recv_frame(fd, &extra, &len, 1 << 20, h_scaled_ms(500)), WIRE_TIMEOUT);
	free(extra);
	close(fd);

	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo = -1, hi = -1;
	rd_kafka_resp_err_t err =
	    rd_kafka_query_watermark_offsets(c, "acks0w", 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
	ck_assert_msg(hi == 6, "high watermark %lld after two acks=0 batches of 3", (long long)hi);
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_acks1)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", NULL});
	create(p, "acks1", NULL);
	c_delivery *dr = calloc(NREC, sizeof(*dr));
	ck_assert_ptr_nonnull(dr);
	produce_n(p, "acks1", "a1", dr, NREC);
	for (long i = 0; i < NREC; i++) {
		ck_assert_msg(dr[i].done && dr[i].err == 0, "record %ld: %s", i,
			      rd_kafka_err2str(dr[i].err));
		ck_assert_msg(dr[i].offset == i, "record %ld at offset %lld", i,
			      (long long)dr[i].offset);
	}
	rd_kafka_destroy(p);
	expect_records(b, "acks1", "a1", NREC);
	free(dr);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_acks_all_min_isr)
{
	h_broker *b = c_start_broker(NULL);
	/* retries=0: NOT_ENOUGH_REPLICAS is retriable, and the delivery report
	 * must carry it rather than a message timeout */
	rd_kafka_t *pall = c_producer(b, (const char *const[]){"acks", "all", "retries", "0",
							       "message.timeout.ms", "20000", NULL});
	create(pall, "minisr2", (const char *const[]){"min.insync.replicas", "2", NULL});
	create(pall, "minisr1", NULL);

	c_delivery d;
	c_msg m = {.topic = "minisr2", .partition = 0, .value = "all-0", .value_len = 5};
	c_produce(pall, &m, &d);
	c_flush(pall, h_scaled_ms(30000));
	ck_assert_msg(d.done, "acks=all: no delivery report");
	ck_assert_msg(d.err == RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
		      "acks=all with ISR 1 < min.insync.replicas 2: %s, expected "
		      "NOT_ENOUGH_REPLICAS",
		      rd_kafka_err2name(d.err));

	/* acks=all where min.insync.replicas=1: fine */
	c_msg m1 = {.topic = "minisr1", .partition = 0, .value = "all1-0", .value_len = 6};
	c_produce(pall, &m1, &d);
	c_flush(pall, h_scaled_ms(30000));
	ck_assert_msg(d.done && d.err == 0, "acks=all, min.insync.replicas=1: %s",
		      rd_kafka_err2name(d.err));
	ck_assert_int_eq(d.offset, 0);
	rd_kafka_destroy(pall);

	/* acks=1 to the min.insync.replicas=2 topic succeeds, at offset 0: the
	 * refused acks=all record was not written */
	rd_kafka_t *p1 = c_producer(b, (const char *const[]){"acks", "1", NULL});
	c_msg m2 = {.topic = "minisr2", .partition = 0, .value = "one-0", .value_len = 5};
	c_produce(p1, &m2, &d);
	c_flush(p1, h_scaled_ms(30000));
	ck_assert_msg(d.done && d.err == 0, "acks=1 to the min.insync.replicas=2 topic: %s",
		      rd_kafka_err2name(d.err));
	ck_assert_int_eq(d.offset, 0);
	rd_kafka_destroy(p1);
	expect_records(b, "minisr2", "one", 1);
	c_stop_broker(b);
}
END_TEST

/* Raw Produce v9 with acks=5 (and -2, 2): INVALID_REQUIRED_ACKS, nothing
 * written, the connection stays usable. */
START_TEST(test_invalid_acks)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	create(p, "badacks", NULL);
	rd_kafka_destroy(p);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	static k_wbuf batch, body;
	static const int16_t bad[] = {5, 2, -2, 32767};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		batch.len = 0;
		k_build_batch(&batch, 2, 0, 1700000000000LL, 0);
		k_produce_body(&body, "badacks", 0, bad[i], &batch);
		k_rbuf r;
		uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
		int64_t base = 0;
		int16_t err = k_produce_parse(&r, &base);
		free(resp);
		ck_assert_msg(err == 21, "acks=%d: error %d, expected INVALID_REQUIRED_ACKS (21)",
			      bad[i], err);
		ck_assert_msg(base == -1, "acks=%d: base offset %lld", bad[i], (long long)base);
	}
	/* same connection, acks=1: written at offset 0 */
	batch.len = 0;
	k_build_batch(&batch, 2, 0, 1700000000000LL, 0);
	k_produce_body(&body, "badacks", 0, 1, &batch);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
	int64_t base = -1;
	int16_t err = k_produce_parse(&r, &base);
	free(resp);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(base, 0);
	close(fd);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acks");
	TCase *tc = tcase_create("acks");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_acks0_librdkafka);
	tcase_add_test(tc, test_acks0_wire);
	tcase_add_test(tc, test_acks1);
	tcase_add_test(tc, test_acks_all_min_isr);
	tcase_add_test(tc, test_invalid_acks);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
