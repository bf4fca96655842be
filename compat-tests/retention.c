/*
 * retention.c - retention and DeleteRecords against the real broker, with
 * 1 MiB segments (segment.bytes' minimum) and a retention check every
 * 200 ms (log.retention.check.interval.ms):
 *  - retention.bytes: the oldest segments are deleted while the log stays at
 *    or above the limit; their files are renamed *.deleted and gone after
 *    file.delete.delay.ms; the earliest offset (ListOffsets, low watermark)
 *    is the first segment kept, and a consumer from the beginning starts
 *    there;
 *  - retention.ms with segment.ms: records with old timestamps are deleted
 *    whole segments at a time, a segment.ms roll keeps new records apart;
 *    a log that is entirely expired is rolled first, so an empty active
 *    segment remains and appends go on at the log end offset;
 *  - DeleteRecords (librdkafka AdminClient): the low watermark answered is
 *    the new log start offset, the segments wholly below it are renamed at
 *    once and unlinked after file.delete.delay.ms, consumers from the
 *    beginning start at it, a consumer positioned below it gets
 *    OFFSET_OUT_OF_RANGE and follows auto.offset.reset (earliest: resumes
 *    at the log start; error: sees the error), offset -1 means the high
 *    watermark; the log start offset survives a restart, and a kill -9
 *    before the unlink leaves no *.deleted file after the restart;
 *  - DeleteRecords v2 on raw sockets: UNKNOWN_TOPIC_OR_PARTITION,
 *    OFFSET_OUT_OF_RANGE (above the high watermark, negative),
 *    POLICY_VIOLATION (cleanup.policy=compact), INVALID_TOPIC_EXCEPTION
 *    (__consumer_offsets), as Kafka's ReplicaManager.deleteRecords.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define SEGMENT "1048576"
#define VALUE_SIZE 1000

static const char *const overrides[] = { "log.retention.check.interval.ms=200", NULL };

/* ---- partition directory ---- */

typedef struct seg_list {
	int64_t base[256];
	int64_t size[256];
	int n;
	int deleted; /* *.deleted files */
} seg_list;

static int cmp_seg(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The .log files (base offsets ascending, sizes) of topic-0 in b's dir. */
static void list_segments(const h_broker *b, const char *topic, seg_list *out)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s-0", b->dir, topic);
	DIR *d = opendir(path);
	ck_assert_msg(d != NULL, "cannot open %s", path);
	memset(out, 0, sizeof(*out));
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 8 && strcmp(e->d_name + l - 8, ".deleted") == 0)
			out->deleted++;
		if (l != 24 || strcmp(e->d_name + 20, ".log") != 0)
			continue;
		ck_assert_int_lt(out->n, 256);
		out->base[out->n++] = strtoll(e->d_name, NULL, 10);
	}
	closedir(d);
	qsort(out->base, (size_t)out->n, sizeof(int64_t), cmp_seg);
	for (int i = 0; i < out->n; i++) {
		char f[PATH_MAX + 400];
		snprintf(f, sizeof(f), "%s/%020" PRId64 ".log", path, out->base[i]);
		struct stat st;
		out->size[i] = stat(f, &st) == 0 ? st.st_size : -1;
	}
}

static bool seg_file_exists(const h_broker *b, const char *topic, int64_t base, const char *suffix)
{
	char f[PATH_MAX + 400];
	snprintf(f, sizeof(f), "%s/%s-0/%020" PRId64 "%s", b->dir, topic, base, suffix);
	struct stat st;
	return stat(f, &st) == 0;
}

/* ---- clients ---- */

static void create_topic(rd_kafka_t *rk, const char *name, const char *const *configs)
{
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(rk, name, 1, 1, configs, errstr, sizeof(errstr));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_NO_ERROR, "CreateTopics %s: %s (%s)", name,
		      rd_kafka_err2name(err), errstr);
	c_wait_topic(rk, name, 1, 10000);
}

/* n records of VALUE_SIZE bytes to topic-0 with timestamp ts (0: now). */
static void produce(rd_kafka_t *rk, const char *topic, int n, int64_t ts)
{
	static char value[VALUE_SIZE];
	memset(value, 'v', sizeof(value));
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	ck_assert_ptr_nonnull(d);
	for (int i = 0; i < n; i++) {
		c_msg m = { .topic = topic, .partition = 0, .value = value, .value_len = sizeof(value),
			    .timestamp = ts };
		c_produce(rk, &m, &d[i]);
	}
	c_flush(rk, 60000);
	for (int i = 0; i < n; i++)
		ck_assert_msg(d[i].done && d[i].err == 0, "delivery %d: %s", i, rd_kafka_err2name(d[i].err));
	free(d);
}

static void watermarks(rd_kafka_t *rk, const char *topic, int64_t *lo, int64_t *hi)
{
	rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, topic, 0, lo, hi, 10000);
	ck_assert_msg(err == 0, "watermarks of %s: %s", topic, rd_kafka_err2name(err));
}

/* ListOffsets earliest (-2) through offsets_for_times' sibling: the low
 * watermark above is ListOffsets earliest already; this is the same
 * question asked of a fresh client, after a restart. */
static int64_t low_watermark(const h_broker *b, const char *topic)
{
	rd_kafka_t *rk = c_producer(b, NULL);
	int64_t lo, hi;
	watermarks(rk, topic, &lo, &hi);
	rd_kafka_destroy(rk);
	return lo;
}

static int first_cb(const rd_kafka_message_t *m, void *opaque)
{
	*(int64_t *)opaque = m->offset;
	return 1;
}

/* The offset of the first record a consumer starting at start gets. */
static int64_t first_consumed(const h_broker *b, const char *topic, int64_t start, const char *reset)
{
	const char *const kv[] = { "auto.offset.reset", reset, NULL };
	rd_kafka_t *c = c_consumer(b, kv);
	int64_t first = -1;
	long n = c_consume(c, topic, 0, start, 1, h_scaled_ms(20000), first_cb, &first);
	rd_kafka_destroy(c);
	ck_assert_int_eq(n, 1);
	return first;
}

/* DeleteRecords of topic-0 up to offset through the AdminClient: the
 * partition's error, *low its low watermark. */
static rd_kafka_resp_err_t delete_records(rd_kafka_t *rk, const char *topic, int64_t offset,
					  int64_t *low)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0)->offset = offset;
	rd_kafka_DeleteRecords_t *dr = rd_kafka_DeleteRecords_new(l);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteRecords(rk, &dr, 1, NULL, q);
	rd_kafka_DeleteRecords_destroy(dr);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(30000));
	ck_assert_msg(ev != NULL, "no DeleteRecords result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	const rd_kafka_DeleteRecords_result_t *res = rd_kafka_event_DeleteRecords_result(ev);
	ck_assert_ptr_nonnull(res);
	const rd_kafka_topic_partition_list_t *out = rd_kafka_DeleteRecords_result_offsets(res);
	*low = -1;
	if (out && out->cnt == 1) {
		*low = out->elems[0].offset;
		if (out->elems[0].err)
			err = out->elems[0].err;
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

/* Wait (polling) until cond(b, topic, arg) or timeout_ms (scaled). */
static bool wait_until(bool (*cond)(const h_broker *, const char *, void *), const h_broker *b,
		       const char *topic, void *arg, int timeout_ms)
{
	long long end = h_now_ms() + h_scaled_ms(timeout_ms);
	while (h_now_ms() < end) {
		if (cond(b, topic, arg))
			return true;
		usleep(50000);
	}
	return cond(b, topic, arg);
}

static bool no_deleted_files(const h_broker *b, const char *topic, void *arg)
{
	(void)arg;
	seg_list s;
	list_segments(b, topic, &s);
	return s.deleted == 0;
}

/* The log is within retention.bytes (*arg) plus less than its oldest
 * segment, with at least the limit kept. */
static bool within_bytes(const h_broker *b, const char *topic, void *arg)
{
	int64_t limit = *(int64_t *)arg, total = 0;
	seg_list s;
	list_segments(b, topic, &s);
	for (int i = 0; i < s.n; i++)
		total += s.size[i];
	return s.n > 0 && total >= limit && total - s.size[0] < limit;
}

static bool low_reaches(const h_broker *b, const char *topic, void *arg)
{
	return low_watermark(b, topic) >= *(int64_t *)arg;
}

/* ---- retention.bytes ---- */

START_TEST(test_retention_bytes)
{
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "20", NULL });
	const char *const cfg[] = { "segment.bytes", SEGMENT, "retention.bytes", "2097152",
				    "file.delete.delay.ms", "300", NULL };
	create_topic(p, "rbytes", cfg);
	produce(p, "rbytes", 6000, 0); /* about 6 MiB: 6 or 7 segments */

	int64_t limit = 2097152;
	ck_assert_msg(wait_until(within_bytes, b, "rbytes", &limit, 30000),
		      "the log did not shrink to retention.bytes");
	ck_assert_msg(wait_until(no_deleted_files, b, "rbytes", NULL, 30000),
		      "*.deleted files still there after file.delete.delay.ms");
	seg_list s;
	list_segments(b, "rbytes", &s);
	ck_assert_int_ge(s.n, 2);
	ck_assert_int_le(s.n, 4);
	int64_t lo, hi;
	watermarks(p, "rbytes", &lo, &hi);
	ck_assert_int_eq(hi, 6000);
	ck_assert_int_eq(lo, s.base[0]); /* the log start offset is the first segment kept */
	ck_assert_int_gt(lo, 0);
	ck_assert_int_eq(first_consumed(b, "rbytes", RD_KAFKA_OFFSET_BEGINNING, "earliest"), lo);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* ---- retention.ms ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_retention_ms)
{
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "20", NULL });
	/* segment.ms 10 s: the first new record rolls away from the old ones */
	const char *const cfg[] = { "segment.bytes", SEGMENT, "segment.ms", "10000", "retention.ms",
				    "3600000", "file.delete.delay.ms", "0", NULL };
	create_topic(p, "rtime", cfg);
	produce(p, "rtime", 2500, now_ms() - 2 * 3600000); /* two hours old: due */
	produce(p, "rtime", 100, 0);                       /* now: kept */
	int64_t want = 2500;
	ck_assert_msg(wait_until(low_reaches, b, "rtime", &want, 30000),
		      "the expired records were not deleted");
	int64_t lo, hi;
	watermarks(p, "rtime", &lo, &hi);
	ck_assert_int_eq(lo, 2500); /* exactly the old records, never a new one */
	ck_assert_int_eq(hi, 2600);
	ck_assert_msg(wait_until(no_deleted_files, b, "rtime", NULL, 30000), "*.deleted files remain");
	seg_list s;
	list_segments(b, "rtime", &s);
	ck_assert_int_eq(s.base[0], 2500);
	ck_assert_int_eq(first_consumed(b, "rtime", RD_KAFKA_OFFSET_BEGINNING, "earliest"), 2500);

	/* an entirely expired log: rolled, then deleted; an empty active
	 * segment stays at the log end offset and appends go on there */
	create_topic(p, "rtime2", cfg);
	produce(p, "rtime2", 10, now_ms() - 2 * 3600000);
	want = 10;
	ck_assert_msg(wait_until(low_reaches, b, "rtime2", &want, 30000),
		      "the expired log was not deleted");
	ck_assert_msg(wait_until(no_deleted_files, b, "rtime2", NULL, 30000), "*.deleted files remain");
	list_segments(b, "rtime2", &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.base[0], 10);
	ck_assert_int_eq(s.size[0], 0);
	watermarks(p, "rtime2", &lo, &hi);
	ck_assert_int_eq(lo, 10);
	ck_assert_int_eq(hi, 10);
	produce(p, "rtime2", 1, 0);
	ck_assert_int_eq(first_consumed(b, "rtime2", RD_KAFKA_OFFSET_BEGINNING, "earliest"), 10);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* ---- DeleteRecords ---- */

/* A consumer with auto.offset.reset=error at offset start: the first
 * event is an error; returns its code. */
static rd_kafka_resp_err_t consume_error(const h_broker *b, const char *topic, int64_t start)
{
	const char *const kv[] = { "auto.offset.reset", "error", NULL };
	rd_kafka_t *c = c_consumer(b, kv);
	rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
	ck_assert_int_eq(rd_kafka_consume_start(t, 0, start), 0);
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
	long long end = h_now_ms() + h_scaled_ms(20000);
	while (!err && h_now_ms() < end) {
		rd_kafka_message_t *m = rd_kafka_consume(t, 0, 200);
		if (!m)
			continue;
		if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
			err = m->err;
		else if (!m->err)
			ck_abort_msg("got offset %" PRId64 " from below the log start", m->offset);
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consume_stop(t, 0);
	rd_kafka_topic_destroy(t);
	rd_kafka_destroy(c);
	return err;
}

START_TEST(test_delete_records)
{
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "20", NULL });
	char delay[32];
	snprintf(delay, sizeof(delay), "%d", h_scaled_ms(4000));
	const char *const cfg[] = { "segment.bytes", SEGMENT, "file.delete.delay.ms", delay, NULL };
	create_topic(p, "drec", cfg);
	produce(p, "drec", 4000, 0);
	seg_list before;
	list_segments(b, "drec", &before);
	ck_assert_int_ge(before.n, 4);

	int64_t low;
	ck_assert_int_eq(delete_records(p, "drec", 2500, &low), 0);
	ck_assert_int_eq(low, 2500);
	/* at once: the segments wholly below 2500 left the log, renamed */
	int gone = 0;
	for (int i = 0; i + 1 < before.n; i++) {
		if (before.base[i + 1] > 2500)
			break;
		ck_assert(!seg_file_exists(b, "drec", before.base[i], ".log"));
		ck_assert(seg_file_exists(b, "drec", before.base[i], ".log.deleted"));
		gone++;
	}
	ck_assert_int_ge(gone, 1);
	ck_assert(seg_file_exists(b, "drec", before.base[gone], ".log"));
	int64_t lo, hi;
	watermarks(p, "drec", &lo, &hi);
	ck_assert_int_eq(lo, 2500);
	ck_assert_int_eq(hi, 4000);
	ck_assert_int_eq(first_consumed(b, "drec", RD_KAFKA_OFFSET_BEGINNING, "earliest"), 2500);
	/* below the log start: OFFSET_OUT_OF_RANGE, then auto.offset.reset */
	ck_assert_int_eq(first_consumed(b, "drec", 100, "earliest"), 2500);
	ck_assert_int_eq(first_consumed(b, "drec", 2499, "earliest"), 2500);
	ck_assert_int_eq(consume_error(b, "drec", 100), RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET);
	/* a lower offset changes nothing */
	ck_assert_int_eq(delete_records(p, "drec", 1000, &low), 0);
	ck_assert_int_eq(low, 2500);
	/* above the high watermark */
	ck_assert_int_eq(delete_records(p, "drec", 4001, &low), RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);
	/* the files go after file.delete.delay.ms */
	ck_assert_msg(wait_until(no_deleted_files, b, "drec", NULL, 30000), "*.deleted files remain");
	ck_assert(!seg_file_exists(b, "drec", before.base[0], ".log.deleted"));

	/* -1: up to the high watermark */
	ck_assert_int_eq(delete_records(p, "drec", RD_KAFKA_OFFSET_END, &low), 0);
	ck_assert_int_eq(low, 4000);
	produce(p, "drec", 5, 0);
	ck_assert_int_eq(first_consumed(b, "drec", RD_KAFKA_OFFSET_BEGINNING, "earliest"), 4000);
	rd_kafka_destroy(p);

	/* the log start offset survives a restart (checkpoint at shutdown) */
	ck_assert_int_ne(h_broker_stop(b, 30000), -1);
	ck_assert_int_eq(h_broker_restart(b), 0);
	ck_assert_int_eq(low_watermark(b, "drec"), 4000);

	/* killed before the unlink: no *.deleted file after the restart, and
	 * the log starts at least at the first segment kept */
	p = c_producer(b, (const char *const[]){ "linger.ms", "20", NULL });
	const char *const cfg2[] = { "segment.bytes", SEGMENT, "file.delete.delay.ms", "600000", NULL };
	create_topic(p, "drkill", cfg2);
	produce(p, "drkill", 3000, 0);
	list_segments(b, "drkill", &before);
	ck_assert_int_ge(before.n, 3);
	ck_assert_int_eq(delete_records(p, "drkill", before.base[2], &low), 0);
	ck_assert_int_eq(low, before.base[2]);
	seg_list mid;
	list_segments(b, "drkill", &mid);
	ck_assert_int_gt(mid.deleted, 0);
	rd_kafka_destroy(p);
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	list_segments(b, "drkill", &mid);
	ck_assert_int_eq(mid.deleted, 0);
	ck_assert_int_eq(mid.base[0], before.base[2]);
	ck_assert_int_eq(low_watermark(b, "drkill"), before.base[2]);
	c_stop_broker(b);
}
END_TEST

/* ---- DeleteRecords errors, raw v2 ---- */

typedef struct dr_part {
	const char *topic;
	int32_t partition;
	int64_t offset;
	int16_t want_err;
	int64_t want_low;
} dr_part;

START_TEST(test_delete_records_errors)
{
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, NULL);
	create_topic(p, "drok", NULL);
	create_topic(p, "drcompact", (const char *const[]){ "cleanup.policy", "compact", NULL });
	produce(p, "drok", 10, 0);
	rd_kafka_destroy(p);

	/* one topic entry per case, in the order of the answer */
	const dr_part cases[] = {
		{ "nosuch", 0, 0, 3, -1 },            /* UNKNOWN_TOPIC_OR_PARTITION */
		{ "drok", 5, 0, 3, -1 },              /* partition out of range */
		{ "drok", 0, 11, 1, -1 },             /* OFFSET_OUT_OF_RANGE: above the HW */
		{ "drok", 0, -5, 1, -1 },             /* negative (not -1) */
		{ "drcompact", 0, 0, 44, -1 },        /* POLICY_VIOLATION */
		{ "__consumer_offsets", 0, 0, 17, -1 }, /* INVALID_TOPIC_EXCEPTION */
		{ "drok", 0, 4, 0, 4 },               /* fine: low watermark 4 */
		{ "drok", 0, 2, 0, 4 },               /* lower: no change */
	};
	int n = (int)(sizeof(cases) / sizeof(cases[0]));
	k_wbuf body = { .len = 0 };
	kw_uvarint(&body, (uint64_t)n + 1);
	for (int i = 0; i < n; i++) {
		kw_cstr(&body, cases[i].topic);
		kw_uvarint(&body, 2);
		kw_i32(&body, cases[i].partition);
		kw_i64(&body, cases[i].offset);
		kw_tags0(&body);
		kw_tags0(&body);
	}
	kw_i32(&body, 30000);
	kw_tags0(&body);
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 21, 2, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "ThrottleTimeMs"), 0);
	ck_assert_int_eq(kr_carray(&r, "Topics"), n);
	for (int i = 0; i < n; i++) {
		char name[256];
		kr_cstr(&r, name, sizeof(name), "Name");
		ck_assert_str_eq(name, cases[i].topic);
		ck_assert_int_eq(kr_carray(&r, "Partitions"), 1);
		ck_assert_int_eq(kr_i32(&r, "PartitionIndex"), cases[i].partition);
		int64_t low = kr_i64(&r, "LowWatermark");
		int16_t err = kr_i16(&r, "ErrorCode");
		ck_assert_msg(err == cases[i].want_err && low == cases[i].want_low,
			      "case %d (%s-%d at %" PRId64 "): error %d low %" PRId64 ", expected %d %" PRId64,
			      i, cases[i].topic, cases[i].partition, cases[i].offset, err, low,
			      cases[i].want_err, cases[i].want_low);
		kr_tags(&r, "partition tags");
		kr_tags(&r, "topic tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "DeleteRecords v2 response");
	free(frame);
	close(fd);
	ck_assert_int_eq(low_watermark(b, "drok"), 4);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("retention");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_retention_bytes);
	tcase_add_test(tc, test_retention_ms);
	tcase_add_test(tc, test_delete_records);
	tcase_add_test(tc, test_delete_records_errors);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
