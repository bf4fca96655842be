/*
 * torture.c - crash safety under load (issue 6): a librdkafka producer
 * writes records carrying a sequence number ("<seq>:" and padding) to one
 * partition while the broker is killed with kill -9 at random moments
 * (delays drawn from a seed that is printed; set TORTURE_SEED to replay a
 * run, TORTURE_KILLS to change the 20 kills). Each round:
 *
 *   1. the broker starts (or restarts on the same log dir and port),
 *   2. the producer writes for a random 20..620 ms, then the broker gets
 *      kill -9 while records are in flight,
 *   3. it restarts on the same dir (recovery after an unclean stop), the
 *      producer is flushed (its retries land), and the whole partition is
 *      read back by assignment from offset 0 to the high watermark,
 *   4. the broker gets kill -9 again, idle (every write done), and the
 *      partition directory is verified in full with logcheck (CRC of every
 *      batch, contiguous offsets, segment names, .index and .timeindex).
 *
 * Only records whose delivery report says success count as acknowledged.
 * What is asserted:
 *   - both variants: the log's offsets are 0..hw-1 without a hole; every
 *     acknowledged record is at the offset its delivery report gave, with
 *     its value; records appear in the order they were produced (a record
 *     seen for the first time has a larger sequence number than every
 *     record before it); logcheck passes.
 *   - acks=1 (no idempotence, max.in.flight 1 so a retry cannot reorder):
 *     a record written by the broker whose response the kill cut is sent
 *     again after the restart, so a record may be in the log twice, as in
 *     Kafka; such duplicates are allowed (the first-occurrence order above
 *     still holds, as only one request is in flight). With acks=1 and no
 *     replication, an acknowledged record is one the broker put in its
 *     page cache: kill -9 of the process (not the machine) keeps it.
 *   - acks=all with enable.idempotence=true: no record is in the log twice
 *     (the broker's producer state, rebuilt after each kill, rejects the
 *     retried batches it already holds), so every acknowledged record is
 *     there exactly once; records not acknowledged may be there or not.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/logcheck.h"

#define TOPIC "torture"
#define MAX_RECORDS 2000000
#define VALUE_LEN 100

/* One run's records: delivery reports by sequence number. */
static c_delivery *dr;
static int nproduced;

/* What the read-back found: the sequence number at each offset. */
typedef struct readback {
	int *seq_at;       /* by offset */
	int64_t n;         /* records read */
	int64_t hw;
	char error[512];
} readback;

static int parse_seq(const rd_kafka_message_t *m)
{
	if (m->len < 2 || m->len > VALUE_LEN)
		return -1;
	char buf[VALUE_LEN + 1];
	memcpy(buf, m->payload, m->len);
	buf[m->len] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	if (end == buf || *end != ':' || v < 0 || v >= MAX_RECORDS)
		return -1;
	return (int)v;
}

static int read_cb(const rd_kafka_message_t *m, void *opaque)
{
	readback *r = opaque;
	if (m->offset != r->n) {
		snprintf(r->error, sizeof(r->error), "offset %" PRId64 " read where %" PRId64 " was expected",
			 m->offset, r->n);
		return 1;
	}
	int s = parse_seq(m);
	if (s < 0) {
		snprintf(r->error, sizeof(r->error), "offset %" PRId64 ": value %.*s is no record of the test",
			 m->offset, (int)(m->len > 40 ? 40 : m->len), (const char *)m->payload);
		return 1;
	}
	r->seq_at[r->n++] = s;
	return 0;
}

static void produce_one(rd_kafka_t *p)
{
	ck_assert_msg(nproduced < MAX_RECORDS, "more than %d records", MAX_RECORDS);
	char val[VALUE_LEN];
	int n = snprintf(val, sizeof(val), "%d:", nproduced);
	memset(val + n, 'x', sizeof(val) - (size_t)n);
	c_msg m = {.topic = TOPIC, .partition = 0, .value = val, .value_len = sizeof(val)};
	c_produce(p, &m, &dr[nproduced]);
	nproduced++;
}

/* Read the whole partition and check it against the delivery reports. */
static void verify(h_broker *b, bool idempotent, int round)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo, hi;
	rd_kafka_resp_err_t err =
	    rd_kafka_query_watermark_offsets(c, TOPIC, 0, &lo, &hi, h_scaled_ms(20000));
	ck_assert_msg(err == 0, "round %d: watermarks: %s", round, rd_kafka_err2str(err));
	ck_assert_msg(lo == 0, "round %d: log start offset %" PRId64, round, lo);
	readback r = {.seq_at = calloc((size_t)hi + 1, sizeof(int)), .hw = hi};
	ck_assert(r.seq_at != NULL);
	if (hi > 0)
		c_consume(c, TOPIC, 0, RD_KAFKA_OFFSET_BEGINNING, (long)hi, h_scaled_ms(120000), read_cb,
			  &r);
	rd_kafka_destroy(c);
	ck_assert_msg(!r.error[0], "round %d: %s", round, r.error);
	ck_assert_msg(r.n == hi, "round %d: read %" PRId64 " of %" PRId64 " records", round, r.n, hi);

	/* in order of production; duplicates only without idempotence */
	char *seen = calloc((size_t)nproduced + 1, 1);
	ck_assert(seen != NULL);
	int max_seen = -1, dups = 0;
	for (int64_t o = 0; o < r.n; o++) {
		int s = r.seq_at[o];
		ck_assert_msg(s < nproduced, "round %d: offset %" PRId64 " holds record %d, never produced",
			      round, o, s);
		if (seen[s]) {
			ck_assert_msg(!idempotent,
				      "round %d: record %d is in the log twice (again at offset %" PRId64
				      ") with enable.idempotence=true", round, s, o);
			dups++;
			continue;
		}
		seen[s] = 1;
		ck_assert_msg(s > max_seen,
			      "round %d: record %d first appears at offset %" PRId64 ", after record %d",
			      round, s, o, max_seen);
		max_seen = s;
	}
	int acked = 0;
	for (int s = 0; s < nproduced; s++) {
		if (!dr[s].done || dr[s].err)
			continue;
		acked++;
		ck_assert_msg(dr[s].offset >= 0 && dr[s].offset < r.n && r.seq_at[dr[s].offset] == s,
			      "round %d: acknowledged record %d (offset %" PRId64 ") is %s", round, s,
			      dr[s].offset,
			      dr[s].offset < 0 || dr[s].offset >= r.n ? "past the high watermark"
								       : "not at its offset");
	}
	free(seen);
	free(r.seq_at);
	fprintf(stderr, "torture: round %d: %d produced, %d acknowledged, %" PRId64
		" in the log, %d duplicates\n", round, nproduced, acked, hi, dups);
}

static void check_files(h_broker *b, int round)
{
	char dir[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/" TOPIC "-0", b->dir);
	lc_options o = {.first = 0};
	lc_result r;
	ck_assert_msg(lc_check_dir(dir, &o, &r) == 0, "round %d: logcheck: %s", round, r.error);
}

static void torture(bool idempotent)
{
	const char *env = getenv("TORTURE_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	env = getenv("TORTURE_KILLS");
	int kills = env ? atoi(env) : 20;
	fprintf(stderr, "torture (%s): TORTURE_SEED=%u, %d kills\n",
		idempotent ? "acks=all, idempotent" : "acks=1", seed, kills);

	dr = calloc(MAX_RECORDS, sizeof(*dr));
	ck_assert(dr != NULL);
	nproduced = 0;
	h_broker *b = c_start_broker((const char *const[]){"log.segment.bytes=1048576",
							  "log.index.interval.bytes=4096", NULL});
	rd_kafka_t *p = c_producer(
	    b, idempotent ? (const char *const[]){"acks", "all", "enable.idempotence", "true",
						   "linger.ms", "5", "message.timeout.ms", "300000",
						   "reconnect.backoff.max.ms", "200", NULL}
			  : (const char *const[]){"acks", "1", "enable.idempotence", "false",
						   "max.in.flight.requests.per.connection", "1",
						   "linger.ms", "5", "message.timeout.ms", "300000",
						   "reconnect.backoff.max.ms", "200", NULL});
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(p, TOPIC, 1, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);

	for (int round = 1; round <= kills; round++) {
		int delay = 20 + (int)(rand_r(&seed) % 600);
		long long until = h_now_ms() + h_scaled_ms(delay);
		/* about 10 records a millisecond at most */
		while (h_now_ms() < until) {
			for (int i = 0; i < 10; i++)
				produce_one(p);
			rd_kafka_poll(p, 1);
		}
		ck_assert_int_eq(h_broker_kill(b), 0);
		ck_assert_msg(h_broker_restart(b) == 0, "round %d: no restart after kill -9 (%d ms)",
			      round, delay);
		c_flush(p, h_scaled_ms(120000));
		char fatal[256];
		err = rd_kafka_fatal_error(p, fatal, sizeof(fatal));
		ck_assert_msg(err == 0, "round %d: producer fatal error %s: %s", round,
			      rd_kafka_err2name(err), fatal);
		verify(b, idempotent, round);
		ck_assert_int_eq(h_broker_kill(b), 0);
		check_files(b, round);
		ck_assert_msg(h_broker_restart(b) == 0, "round %d: no restart after the idle kill -9",
			      round);
	}
	rd_kafka_destroy(p);
	c_stop_broker(b);
	free(dr);
	dr = NULL;
}

START_TEST(test_kill9_acks1)
{
	torture(false);
}
END_TEST

START_TEST(test_kill9_idempotent)
{
	torture(true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torture");
	TCase *tc = tcase_create("kill9");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_kill9_acks1);
	tcase_add_test(tc, test_kill9_idempotent);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
