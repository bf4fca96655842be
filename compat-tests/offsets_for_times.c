/*
 * offsets_for_times.c - ListOffsets through librdkafka: records produced
 * with explicit CreateTime timestamps, rd_kafka_offsets_for_times gives the
 * earliest offset whose timestamp is >= the target (Kafka's
 * offsetsForTimes), -1 (RD_KAFKA_OFFSET_END) past the last one; and
 * rd_kafka_query_watermark_offsets gives the log start offset and the high
 * watermark (ListOffsets -2 / -1).
 *
 * Partition 0 gets one batch per record (a flush after each), partition 1
 * one batch holding all records (linger), so the lookup is checked both
 * across batches and inside a batch.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <string.h>

#include "compat-tests/compat.h"

#define TOPIC "oft"
#define NREC 20
#define T0 1700000000000LL /* ms; record k has T0 + 1000 * k */

static void produce_partition(rd_kafka_t *p, int32_t part, int flush_each)
{
	c_delivery dr[NREC];
	char val[32];
	for (int k = 0; k < NREC; k++) {
		snprintf(val, sizeof(val), "record-%d", k);
		c_msg m = {.topic = TOPIC,
			   .partition = part,
			   .key = "k",
			   .key_len = 1,
			   .value = val,
			   .value_len = strlen(val),
			   .timestamp = T0 + 1000LL * k};
		c_produce(p, &m, &dr[k]);
		if (flush_each)
			c_flush(p, h_scaled_ms(10000));
	}
	c_flush(p, h_scaled_ms(10000));
	for (int k = 0; k < NREC; k++) {
		ck_assert_msg(dr[k].done && dr[k].err == 0, "partition %d record %d: %s",
			      (int)part, k, rd_kafka_err2str(dr[k].err));
		ck_assert_int_eq(dr[k].offset, k);
	}
}

static void check_lookup(rd_kafka_t *c, int32_t part, int64_t ts, int64_t expect)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, TOPIC, part)->offset = ts;
	rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(c, l, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "offsets_for_times: %s", rd_kafka_err2str(err));
	ck_assert_msg(l->elems[0].err == 0, "offsets_for_times partition %d: %s", (int)part,
		      rd_kafka_err2str(l->elems[0].err));
	ck_assert_msg(l->elems[0].offset == expect,
		      "partition %d, timestamp T0%+lld ms: offset %lld, expected %lld", (int)part,
		      (long long)(ts - T0), (long long)l->elems[0].offset, (long long)expect);
	rd_kafka_topic_partition_list_destroy(l);
}

START_TEST(test_offsets_for_times)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", "linger.ms", "50",
							    NULL});
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, TOPIC, 2, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, TOPIC, 2, h_scaled_ms(10000));
	produce_partition(p, 0, 1);
	produce_partition(p, 1, 0);
	rd_kafka_destroy(p);

	rd_kafka_t *c = c_consumer(b, NULL);
	for (int32_t part = 0; part < 2; part++) {
		check_lookup(c, part, T0 - 5000, 0);            /* before everything */
		check_lookup(c, part, T0, 0);                   /* exact first */
		check_lookup(c, part, T0 + 1, 1);               /* just after first */
		check_lookup(c, part, T0 + 7000, 7);            /* exact middle */
		check_lookup(c, part, T0 + 12500, 13);          /* between 12 and 13 */
		check_lookup(c, part, T0 + 1000LL * (NREC - 1), NREC - 1); /* last */
		check_lookup(c, part, T0 + 1000LL * NREC, RD_KAFKA_OFFSET_END); /* past */

		int64_t lo = -1, hi = -1;
		err = rd_kafka_query_watermark_offsets(c, TOPIC, part, &lo, &hi,
						       h_scaled_ms(10000));
		ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
		ck_assert_msg(lo == 0 && hi == NREC,
			      "partition %d: low %lld high %lld, expected 0 and %d", (int)part,
			      (long long)lo, (long long)hi, NREC);
	}
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

/* Watermarks move with produce: empty partition 0/0, then 0/n. */
START_TEST(test_watermarks_follow_produce)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", NULL});
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, "wm", 1, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, "wm", 1, h_scaled_ms(10000));

	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo = -1, hi = -1;
	err = rd_kafka_query_watermark_offsets(c, "wm", 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
	ck_assert_msg(lo == 0 && hi == 0, "empty partition: low %lld high %lld", (long long)lo,
		      (long long)hi);
	for (int round = 1; round <= 3; round++) {
		c_delivery dr;
		c_msg m = {.topic = "wm", .partition = 0, .value = "x", .value_len = 1};
		for (int k = 0; k < 5; k++)
			c_produce(p, &m, &dr);
		c_flush(p, h_scaled_ms(10000));
		err = rd_kafka_query_watermark_offsets(c, "wm", 0, &lo, &hi, h_scaled_ms(10000));
		ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
		ck_assert_msg(lo == 0 && hi == 5 * round, "after %d records: low %lld high %lld",
			      5 * round, (long long)lo, (long long)hi);
	}
	/* Latest offset by timestamp -1 (OFFSET_END) is the high watermark. */
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, "wm", 0)->offset = RD_KAFKA_OFFSET_END;
	err = rd_kafka_offsets_for_times(c, l, h_scaled_ms(10000));
	ck_assert_msg(err == 0 && l->elems[0].err == 0, "offsets_for_times(-1): %s",
		      rd_kafka_err2str(err ? err : l->elems[0].err));
	ck_assert_msg(l->elems[0].offset == 15, "offsets_for_times(-1) gave %lld, expected 15",
		      (long long)l->elems[0].offset);
	rd_kafka_topic_partition_list_destroy(l);

	rd_kafka_destroy(c);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("offsets_for_times");
	TCase *tc = tcase_create("list_offsets");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_offsets_for_times);
	tcase_add_test(tc, test_watermarks_follow_produce);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
