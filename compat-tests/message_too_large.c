/*
 * message_too_large.c - a record batch above the broker's message.max.bytes
 * is refused with MESSAGE_TOO_LARGE (error 10) and nothing of it is
 * appended; a later small record on the same partition succeeds at offset 0
 * (Kafka broker config docs: message.max.bytes, the largest record batch
 * size allowed after compression).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdlib.h>
#include <string.h>

#include "compat-tests/compat.h"

#define TOPIC "big"
#define BIG 50000

static int first_cb(const rd_kafka_message_t *m, void *opaque)
{
	rd_kafka_message_t *out = opaque;
	out->offset = m->offset;
	out->len = m->len;
	return 1;
}

START_TEST(test_too_large)
{
	h_broker *b = c_start_broker((const char *const[]){"message.max.bytes=10000", NULL});
	/* Raise the producer's own limit so librdkafka sends the record. */
	rd_kafka_t *p = c_producer(b, (const char *const[]){"message.max.bytes", "1000000",
							    "compression.codec", "none",
							    "acks", "1", NULL});
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, TOPIC, 1, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, TOPIC, 1, h_scaled_ms(10000));

	unsigned char *big = malloc(BIG);
	ck_assert(big != NULL);
	uint32_t x = 42;
	for (int i = 0; i < BIG; i++) {
		x = x * 1103515245u + 12345u;
		big[i] = (unsigned char)(x >> 16);
	}
	c_delivery d;
	c_msg m = {.topic = TOPIC, .partition = 0, .value = big, .value_len = BIG};
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(20000));
	free(big);
	ck_assert_msg(d.done, "no delivery report for the large record");
	ck_assert_msg(d.err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
		      "large record: delivery %s (%s), expected MSG_SIZE_TOO_LARGE",
		      rd_kafka_err2name(d.err), rd_kafka_err2str(d.err));
	c_assert_broker_serving(b);

	c_msg small = {.topic = TOPIC, .partition = 0, .value = "small", .value_len = 5};
	c_produce(p, &small, &d);
	c_flush(p, h_scaled_ms(20000));
	ck_assert_msg(d.done && d.err == 0, "small record after the large one: %s",
		      rd_kafka_err2str(d.err));
	ck_assert_msg(d.offset == 0, "small record at offset %lld: the large one was appended",
		      (long long)d.offset);
	rd_kafka_destroy(p);

	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo = -1, hi = -1;
	err = rd_kafka_query_watermark_offsets(c, TOPIC, 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
	ck_assert_msg(lo == 0 && hi == 1, "low %lld high %lld, expected 0 and 1", (long long)lo,
		      (long long)hi);
	rd_kafka_message_t first = {0};
	long n = c_consume(c, TOPIC, 0, RD_KAFKA_OFFSET_BEGINNING, 1, h_scaled_ms(10000),
			   first_cb, &first);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(first.offset, 0);
	ck_assert_int_eq(first.len, 5);
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("message_too_large");
	TCase *tc = tcase_create("message_max_bytes");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_too_large);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
