/*
 * open_files.c - descriptors bounded by what is in use, not by what exists
 * (issue 15; storage/filecache.h, log.max.open.files): a broker under an
 * open file limit of 1024 (soft and hard, so it cannot raise it) takes
 * 3,000 partitions and a partition of 2,000 segments (segment.ms=1 and
 * record timestamps 10 ms apart: a segment per batch; Kafka 4's
 * log.segment.bytes is at least 1 MiB), takes a batch on every partition,
 * serves every batch back (each of the 2,000 segments opened again from
 * disk), also to a consumer assigned every partition (fetches of hundreds
 * of partitions each), restarts cleanly and after kill -9 at the same limit, and keeps
 * the descriptors it holds (/proc/<pid>/fd) under the limit all along, its
 * segment files within the cache's capacity (logged at start: 480 here,
 * half of what 1024 leaves after 64). Before the cache a partition held
 * up to 3 descriptors, each segment 1, and the broker refused partitions
 * past (1024 - 64) / 3 = 320.
 *
 * The limit is set in the test's own process (check forks one per test)
 * and inherited by the broker: the test needs CK_FORK.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define LIMIT 1024
#define CAPACITY 480      /* (1024 - 64) - (1024 - 64) / 2 */
#define TOPICS 6
#define PER_TOPIC 500     /* 3,000 partitions */
#define SEGMENTS 2000

/* What the broker holds: every descriptor, and those on a segment's .log. */
typedef struct fd_count {
	int all, logs;
} fd_count;

static fd_count max_seen;

static fd_count count_fds(const h_broker *b)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)b->pid);
	DIR *d = opendir(path);
	ck_assert_ptr_nonnull(d);
	fd_count c = { 0, 0 };
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		c.all++;
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 4) {
			target[n] = 0;
			/* in the data dir: its stdout and stderr go to a .log too */
			if (strncmp(target, b->dir, strlen(b->dir)) == 0 && strcmp(target + n - 4, ".log") == 0)
				c.logs++;
		}
	}
	closedir(d);
	if (c.all > max_seen.all)
		max_seen.all = c.all;
	if (c.logs > max_seen.logs)
		max_seen.logs = c.logs;
	return c;
}

static int64_t now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Produce one batch of one record (timestamp ts) to topic-partition;
 * returns its base offset. */
static int64_t produce(int fd, const char *topic, int32_t partition, int64_t ts)
{
	static k_wbuf batch, body;
	batch.len = body.len = 0;
	k_build_batch(&batch, 1, 0, ts, 0);
	k_produce_body(&body, topic, partition, 1, &batch);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
	int64_t base = -1;
	int16_t err = k_produce_parse(&r, &base);
	free(resp);
	ck_assert_msg(err == 0, "produce to %s-%d: error %d", topic, (int)partition, err);
	return base;
}

/* Fetch topic-partition from offset: the base offset of the first batch
 * returned (the test fails when there is none). */
static int64_t fetch(int fd, const char *topic, int32_t partition, int64_t offset)
{
	static k_wbuf body;
	body.len = 0;
	k_fetch_body(&body, topic, partition, offset, 0, 1);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
	int64_t hw = -1, len = 0;
	const uint8_t *rec = NULL;
	int16_t err = k_fetch_parse(&r, &hw, &rec, &len);
	ck_assert_msg(err == 0, "fetch %s-%d at %lld: error %d", topic, (int)partition,
		      (long long)offset, err);
	ck_assert_msg(rec && len >= 61, "fetch %s-%d at %lld: no records (high watermark %lld)",
		      topic, (int)partition, (long long)offset, (long long)hw);
	int64_t base = 0;
	for (int i = 0; i < 8; i++)
		base = base << 8 | rec[i];
	free(resp);
	return base;
}

/* sending: segments a response is being sent from, at most one per
 * connection, may be open beyond the capacity; so may the one file the
 * flush thread fsyncs at a time through a descriptor of its own (a roll
 * makes a flush due). */
#define FLUSHING 1
static void check_under(const h_broker *b, const char *when, int sending)
{
	fd_count c = count_fds(b);
	ck_assert_msg(c.all < LIMIT, "%s: the broker holds %d descriptors (limit %d)", when, c.all,
		      LIMIT);
	ck_assert_msg(c.logs <= CAPACITY + sending + FLUSHING,
		      "%s: %d segment files open, capacity %d", when, c.logs, CAPACITY);
}

/* Between round trips of one client: nothing is being sent. */
static void check_under_limit(const h_broker *b, const char *when) { check_under(b, when, 0); }

/* Read every batch back: the 2,000 segments in order, then each partition. */
static void read_everything(const h_broker *b, const char *when)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	for (int64_t off = 0; off < SEGMENTS; off++) {
		ck_assert_int_eq(fetch(fd, "long", 0, off), off);
		if (off % 250 == 0)
			check_under_limit(b, when);
	}
	for (int t = 0; t < TOPICS; t++) {
		char topic[16];
		snprintf(topic, sizeof(topic), "many%d", t);
		for (int32_t p = 0; p < PER_TOPIC; p++) {
			ck_assert_int_eq(fetch(fd, topic, p, 0), 0);
			if (p % 250 == 0)
				check_under_limit(b, when);
		}
	}
	check_under_limit(b, when);
	close(fd);
}

/* A consumer assigned all 3,000 partitions: its fetches ask for hundreds
 * of partitions at once, and a response holds one segment per partition
 * while it waits to be sent; a segment's descriptor is taken only while
 * its bytes go out. */
static void consume_everything(const h_broker *b, const char *when)
{
	static const char *const kv[] = { "group.id", "open_files", "fetch.wait.max.ms", "10", NULL };
	rd_kafka_t *c = c_consumer(b, kv);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(TOPICS * PER_TOPIC);
	for (int t = 0; t < TOPICS; t++) {
		char topic[16];
		snprintf(topic, sizeof(topic), "many%d", t);
		for (int32_t p = 0; p < PER_TOPIC; p++)
			rd_kafka_topic_partition_list_add(l, topic, p)->offset = 0;
	}
	ck_assert_int_eq(rd_kafka_assign(c, l), 0);
	rd_kafka_topic_partition_list_destroy(l);
	long got = 0;
	long long deadline = h_now_ms() + h_scaled_ms(120000);
	while (got < TOPICS * PER_TOPIC && h_now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
		if (m) {
			ck_assert_msg(!m->err, "%s: consumer: %s", when, rd_kafka_message_errstr(m));
			got++;
			rd_kafka_message_destroy(m);
		}
		if (got % 200 == 0)
			check_under(b, when, 4); /* the consumer's connections */
	}
	ck_assert_msg(got == TOPICS * PER_TOPIC, "%s: the consumer got %ld of %d records", when, got,
		      TOPICS * PER_TOPIC);
	check_under_limit(b, when);
	rd_kafka_consumer_close(c);
	rd_kafka_destroy(c);
}

START_TEST(test_partitions_and_segments_at_a_low_limit)
{
	const char *fork_env = getenv("CK_FORK");
	if (fork_env && strcmp(fork_env, "no") == 0) {
		fprintf(stderr, "open_files: needs CK_FORK (lowers RLIMIT_NOFILE for good)\n");
		return;
	}
	struct rlimit rl = { .rlim_cur = LIMIT, .rlim_max = LIMIT };
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	h_broker *b = c_start_broker(NULL);
	char *log = h_broker_read_log(b);
	char want[96];
	snprintf(want, sizeof(want), "segment files hold at most %d descriptors", CAPACITY);
	ck_assert_msg(log && strstr(log, want), "the broker does not log '%s'", want);
	free(log);

	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	for (int t = 0; t < TOPICS; t++) {
		char topic[16];
		snprintf(topic, sizeof(topic), "many%d", t);
		rd_kafka_resp_err_t err = c_create_topic(p, topic, PER_TOPIC, 1, NULL, errstr, sizeof(errstr));
		ck_assert_msg(err == 0, "CreateTopics %s: %s %s", topic, rd_kafka_err2name(err), errstr);
		check_under_limit(b, "creating topics");
	}
	static const char *const seg_ms[] = { "segment.ms", "1", NULL };
	rd_kafka_resp_err_t err = c_create_topic(p, "long", 1, 1, seg_ms, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics long: %s %s", rd_kafka_err2name(err), errstr);
	rd_kafka_destroy(p);

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	int64_t ts = now_ms() - 10 * SEGMENTS - 60000;
	for (int t = 0; t < TOPICS; t++) {
		char topic[16];
		snprintf(topic, sizeof(topic), "many%d", t);
		for (int32_t i = 0; i < PER_TOPIC; i++) {
			ck_assert_int_eq(produce(fd, topic, i, ts), 0);
			if (i % 250 == 0)
				check_under_limit(b, "producing to every partition");
		}
	}
	for (int64_t i = 0; i < SEGMENTS; i++) {
		ck_assert_int_eq(produce(fd, "long", 0, ts + 10 * i), i);
		if (i % 250 == 0)
			check_under_limit(b, "producing 2,000 segments");
	}
	close(fd);
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/long-0", b->dir);
	int nseg = 0;
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		nseg += n == 24 && strcmp(de->d_name + 20, ".log") == 0;
	}
	closedir(d);
	ck_assert_msg(nseg >= SEGMENTS, "long-0 has %d segments, expected %d", nseg, SEGMENTS);

	read_everything(b, "reading everything back");
	consume_everything(b, "a consumer of every partition");
	fd_count running = count_fds(b);

	/* a clean restart, then a kill -9 and a recovery, at the same limit */
	int st = h_broker_stop(b, h_scaled_ms(60000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean stop failed");
	ck_assert_msg(h_broker_restart(b) == 0, "restart at the open file limit failed");
	fd_count restarted = count_fds(b);
	check_under_limit(b, "after a clean restart");
	read_everything(b, "reading after a clean restart");
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_msg(h_broker_restart(b) == 0, "restart after kill -9 at the open file limit failed");
	check_under_limit(b, "after kill -9 and recovery");
	read_everything(b, "reading after kill -9");
	fprintf(stderr,
		"open_files: 3,000 partitions + 2,000 segments at a limit of %d: %d descriptors (%d on "
		"segment files) after reading everything, %d after a restart; at most %d (%d) seen\n",
		LIMIT, running.all, running.logs, restarted.all, max_seen.all, max_seen.logs);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("open_files");
	TCase *tc = tcase_create("open_files");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_partitions_and_segments_at_a_low_limit);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
