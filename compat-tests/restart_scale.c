/*
 * restart_scale.c - stopping and starting a broker with many partitions
 * (issue 15): the time goes with what needs flushing or recovering, not with
 * the number of partitions.
 *
 * One broker, 2,000 small partitions with records in each, plus a topic
 * whose 1 MiB segments hold one 600 KB record each (an empty offset index
 * is right for them: no batch follows index.interval.bytes). The broker's
 * one-line reports are read: "loaded L partition logs (S segments) in T ms
 * after a clean|an unclean shutdown: R segments recovered from the recovery
 * point, X with indexes rebuilt" at start and "shutdown: D of L partition
 * logs had data to flush" at a clean stop.
 *  - clean: a clean stop flushes the logs written to; the restart recovers
 *    nothing and rebuilds no index (no line about an index at all); a stop
 *    right after flushes nothing.
 *  - kill -9: with log.flush.offset.checkpoint.interval.ms=200, records to
 *    the big topic (rolling 3 segments) and to some partitions, then kill -9:
 *    the restart recovers exactly one segment per partition, the one holding
 *    its recovery point (the rolls flushed the big topic's older segments and
 *    moved its recovery point past them), and every record is there.
 *  - a low open file limit: started again with a soft limit of 1024, far
 *    below the partitions' files, the broker starts (the segments share the
 *    open-file cache), recovers and rebuilds nothing, calls nothing damaged
 *    and serves every partition, and so does the next start.
 *  - unreadable checkpoint: a recovery-point-offset-checkpoint that cannot
 *    be read (a directory in its place) fails the start, naming it, instead
 *    of sending every log into a recovery from its start.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"

#define MANY 2000
#define BIG_VALUE (600 * 1024)

/* What the broker's log says after byte `from`. */
static char *log_since(const h_broker *b, size_t from)
{
	char *all = h_broker_read_log(b);
	ck_assert(all != NULL);
	size_t n = strlen(all);
	char *r = strdup(from < n ? all + from : "");
	free(all);
	return r;
}

static size_t log_len(const h_broker *b)
{
	char *all = h_broker_read_log(b);
	size_t n = all ? strlen(all) : 0;
	free(all);
	return n;
}

typedef struct load_report {
	long logs, segments, ms, recovered, rebuilt;
	bool clean;
} load_report;

/* The start-up report in text (the last one); fails the test without one. */
static load_report parse_load(const char *text)
{
	const char *p = NULL;
	for (const char *q = text; (q = strstr(q, "samsa: loaded ")); q++)
		p = q;
	ck_assert_msg(p != NULL, "no start-up report in the broker's log:\n%s", text);
	load_report r;
	char how[16];
	int n = sscanf(p, "samsa: loaded %ld partition logs (%ld segments) in %ld ms after %15s", &r.logs,
		       &r.segments, &r.ms, how);
	ck_assert_msg(n == 4, "start-up report does not parse: %.200s", p);
	r.clean = strcmp(how, "a") == 0;
	const char *c = strstr(p, "shutdown: ");
	ck_assert(c != NULL);
	n = sscanf(c, "shutdown: %ld segments recovered from the recovery point, %ld with indexes rebuilt",
		   &r.recovered, &r.rebuilt);
	ck_assert_msg(n == 2, "start-up report does not parse: %.200s", p);
	return r;
}

/* The shutdown report: how many logs had data to flush (of how many). */
static void parse_shutdown(const char *text, long *dirty, long *logs)
{
	const char *p = strstr(text, "samsa: shutdown: ");
	ck_assert_msg(p != NULL, "no shutdown report in the broker's log:\n%s", text);
	ck_assert_msg(sscanf(p, "samsa: shutdown: %ld of %ld partition logs", dirty, logs) == 2,
		      "shutdown report does not parse: %.200s", p);
}

/* No line of the storage layer at all: no index rebuilt, no segment
 * recovered or cut, no leftover removed. */
static void assert_storage_silent(const char *text)
{
	const char *line = strstr(text, "samsa storage");
	ck_assert_msg(line == NULL, "the storage layer reported: %.300s", line ? line : "");
}

static void stop_clean(h_broker *b)
{
	int st = h_broker_stop(b, h_scaled_ms(60000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean stop failed (0x%x)", st);
}

/* The recovery point of topic-partition in the broker's
 * recovery-point-offset-checkpoint (storage/logdir.h's format), -1 when it
 * is not there. */
static long long recovery_point(const h_broker *b, const char *topic, int partition)
{
	char path[PATH_MAX + 40];
	snprintf(path, sizeof(path), "%s/recovery-point-offset-checkpoint", b->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512], t[256];
	int part;
	long long off, r = -1;
	while (r < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %d %lld", t, &part, &off) == 3 && strcmp(t, topic) == 0 &&
		    part == partition)
			r = off;
	fclose(f);
	return r;
}

static void produce_big(rd_kafka_t *p, int n)
{
	char *v = malloc(BIG_VALUE);
	ck_assert(v != NULL);
	memset(v, 'b', BIG_VALUE);
	for (int i = 0; i < n; i++) {
		c_msg m = { .topic = "big", .partition = 0, .value = v, .value_len = BIG_VALUE };
		c_produce(p, &m, NULL);
		c_flush(p, h_scaled_ms(30000)); /* one record per batch */
	}
	free(v);
}

static void produce_many(rd_kafka_t *p, int from, int to, int per)
{
	for (int i = from; i < to; i++)
		for (int k = 0; k < per; k++) {
			char v[32];
			int len = snprintf(v, sizeof(v), "p%d-%d", i, k);
			c_msg m = { .topic = "many", .partition = i, .value = v, .value_len = (size_t)len };
			c_produce(p, &m, NULL);
		}
	c_flush(p, h_scaled_ms(60000));
}

static int count_cb(const rd_kafka_message_t *m, void *opaque)
{
	(void)m;
	(void)opaque;
	return 0;
}

static long count_records(const h_broker *b, const char *topic, int32_t partition, long want)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	long n = c_consume(c, topic, partition, RD_KAFKA_OFFSET_BEGINNING, want, h_scaled_ms(30000),
			   count_cb, NULL);
	rd_kafka_destroy(c);
	return n;
}

START_TEST(test_restart_scale)
{
	const char *overrides[] = { "log.flush.offset.checkpoint.interval.ms=200", NULL };
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "5", NULL });
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, "many", MANY, 1, NULL, errstr, sizeof(errstr)), 0);
	const char *big_cfg[] = { "segment.bytes", "1048576", NULL };
	ck_assert_int_eq(c_create_topic(p, "big", 1, 1, big_cfg, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, "many", MANY, h_scaled_ms(60000));
	c_wait_topic(p, "big", 1, h_scaled_ms(10000));
	produce_many(p, 0, MANY, 2);
	produce_big(p, 4); /* segments 0..3, one record each */
	rd_kafka_destroy(p);

	/* clean stop and start */
	size_t mark = log_len(b);
	stop_clean(b);
	ck_assert_int_eq(h_broker_restart(b), 0);
	char *text = log_since(b, mark);
	long dirty, logs;
	parse_shutdown(text, &dirty, &logs);
	ck_assert_int_eq(logs, MANY + 1);
	load_report r = parse_load(text);
	ck_assert_msg(r.clean, "the start after SIGTERM is not clean");
	ck_assert_int_eq(r.logs, MANY + 1);
	ck_assert_int_eq(r.segments, MANY + 4);
	ck_assert_int_eq(r.recovered, 0);
	ck_assert_int_eq(r.rebuilt, 0);
	assert_storage_silent(text);
	free(text);
	fprintf(stderr, "restart_scale: %ld logs: the clean stop flushed %ld of them, the start took %ld ms\n",
		logs, dirty, r.ms);

	/* nothing written since the start: a stop flushes nothing */
	mark = log_len(b);
	stop_clean(b);
	text = log_since(b, mark);
	parse_shutdown(text, &dirty, &logs);
	ck_assert_msg(dirty == 0, "a stop right after a clean start flushed %ld logs", dirty);
	free(text);

	/* kill -9: one segment per log recovered */
	ck_assert_int_eq(h_broker_restart(b), 0);
	p = c_producer(b, (const char *const[]){ "linger.ms", "5", NULL });
	produce_big(p, 3); /* rolls to segments 4, 5, 6 */
	produce_many(p, 0, 50, 3);
	rd_kafka_destroy(p);
	/* the flushes after the rolls, then a recovery point checkpoint that
	 * has big-0's at its active segment (6): waited for, not slept on */
	long long t0 = h_now_ms();
	while (recovery_point(b, "big", 0) < 6) {
		ck_assert_msg(h_now_ms() - t0 < h_scaled_ms(30000),
			      "big-0's checkpointed recovery point is %lld after 30 s, not 6",
			      recovery_point(b, "big", 0));
		usleep(20 * 1000);
	}
	fprintf(stderr, "restart_scale: big-0's recovery point checkpointed at 6 after %lld ms\n",
		h_now_ms() - t0);
	mark = log_len(b);
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	text = log_since(b, mark);
	r = parse_load(text);
	ck_assert_msg(!r.clean, "the start after kill -9 says clean");
	ck_assert_int_eq(r.logs, MANY + 1);
	ck_assert_int_eq(r.segments, MANY + 7);
	ck_assert_msg(r.recovered == MANY + 1,
		      "%ld segments recovered after kill -9, expected one per log (%d): the big "
		      "topic's rolled segments should be below its recovery point",
		      r.recovered, MANY + 1);
	ck_assert_int_eq(r.rebuilt, 0);
	free(text);
	ck_assert_int_eq(count_records(b, "big", 0, 7), 7);
	ck_assert_int_eq(count_records(b, "many", 7, 5), 5);
	ck_assert_int_eq(count_records(b, "many", MANY - 1, 2), 2);

	/* An open file limit of 1024, far below the partitions' files: the
	 * segments share the open-file cache (log.max.open.files), so the start
	 * opens no segment, calls nothing damaged and serves every partition.
	 * (Out of descriptors in the storage layer itself: test_recover.c.) */
	stop_clean(b);
	mark = log_len(b);
	/* soft and hard (the broker raises its soft limit to the hard one),
	 * for the rest of this test's process: the broker inherits it */
	struct rlimit low = { .rlim_cur = 1024, .rlim_max = 1024 };
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	text = log_since(b, mark);
	ck_assert_msg(strstr(text, "RLIMIT_NOFILE) 1024"), "the limit was not 1024:\n%s", text);
	r = parse_load(text);
	ck_assert(r.clean);
	ck_assert_int_eq(r.logs, MANY + 1);
	ck_assert_int_eq(r.recovered, 0);
	ck_assert_int_eq(r.rebuilt, 0);
	ck_assert_msg(!strstr(text, "damaged") && !strstr(text, "rebuilding") &&
			      !strstr(text, "recovering the segment"),
		      "a file taken for damage at a low limit:\n%s", text);
	free(text);
	ck_assert_int_eq(count_records(b, "big", 0, 7), 7);
	ck_assert_int_eq(count_records(b, "many", MANY - 1, 2), 2);
	stop_clean(b);
	mark = log_len(b);
	ck_assert_int_eq(h_broker_restart(b), 0);
	text = log_since(b, mark);
	r = parse_load(text);
	ck_assert(r.clean);
	ck_assert_int_eq(r.recovered, 0);
	ck_assert_int_eq(r.rebuilt, 0);
	free(text);
	ck_assert_int_eq(count_records(b, "big", 0, 7), 7);
	c_stop_broker(b);
}
END_TEST

/* A recovery point checkpoint that cannot be read (here a directory in
 * its place: EISDIR) fails the start: it must not make the broker recover
 * every log from its start, as one that does not parse does. */
START_TEST(test_unreadable_checkpoint)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, "few", 4, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, "few", 4, h_scaled_ms(10000));
	rd_kafka_destroy(p);
	c_produce_seq(b, "few", 20, 0, "1");
	stop_clean(b);
	char ck[PATH_MAX + 64], aside[PATH_MAX + 64];
	snprintf(ck, sizeof(ck), "%s/recovery-point-offset-checkpoint", b->dir);
	snprintf(aside, sizeof(aside), "%s/rp-aside", b->dir);
	ck_assert_int_eq(rename(ck, aside), 0);
	ck_assert_int_eq(mkdir(ck, 0755), 0);
	size_t mark = log_len(b);
	ck_assert_int_eq(h_broker_launch(b), 0);
	int st = h_broker_wait_exit(b, h_scaled_ms(30000));
	char *text = log_since(b, mark);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "an unreadable checkpoint: the broker ended with 0x%x, expected exit 1:\n%s", st, text);
	ck_assert_msg(strstr(text, "recovery-point-offset-checkpoint: Is a directory"),
		      "the unreadable checkpoint is not named:\n%s", text);
	ck_assert_msg(!strstr(text, "segments from offset"), "logs were recovered from their start:\n%s",
		      text);
	free(text);
	ck_assert_int_eq(rmdir(ck), 0);
	ck_assert_int_eq(rename(aside, ck), 0);
	mark = log_len(b);
	ck_assert_int_eq(h_broker_restart(b), 0);
	text = log_since(b, mark);
	load_report r = parse_load(text);
	ck_assert(r.clean);
	ck_assert_int_eq(r.recovered, 0);
	free(text);
	c_expect_seq(b, "few", 20);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("restart_scale");
	TCase *tc = tcase_create("restart_scale");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_restart_scale);
	tcase_add_test(tc, test_unreadable_checkpoint);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
