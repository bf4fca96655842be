/*
 * disk.c - what the broker leaves on disk and how it recovers it
 * (DESIGN.md 3 and 9): a partition is a directory <topic>-<partition> of
 * segments named by their 20-digit base offset; .log holds v2 record
 * batches as on the wire with offsets assigned and valid CRC32C, .index and
 * .timeindex hold 8- and 12-byte entries; Kafka's checkpoint files and
 * meta.properties are in the log dir. Small log.segment.bytes rolls
 * segments and reads stay whole across them and across a kill -9. After a
 * kill -9, a torn tail (garbage after the last batch, a batch cut short, a
 * batch whose CRC no longer matches) is truncated on restart: everything
 * before it reads back, the high watermark is the end of the last good
 * batch, and new records continue from there.
 * Start-up removes partition directories of no known topic (or past a
 * topic's partition count) and nothing else; a CreateTopics whose logs
 * cannot all be made (a file in the way) leaves no directory behind; the
 * broker raises its soft open file limit to the hard one (how it lives
 * within that limit: open_files.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/logcheck.h"

#define T0 1700000000000LL

/* Read a whole file; *len set. Caller frees. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	ck_assert(b != NULL);
	ck_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Padding that makes records big enough to fill 1 MiB segments. */
static const char pad[] = "................................................................"
			  "................................................................"
			  "................................................................";
static int use_pad;

static void value_of(char *buf, size_t cap, const char *topic, int i)
{
	snprintf(buf, cap, "%s-%d%s", topic, i, use_pad ? pad : "");
}

/* Produce n records "<topic>-<i>" with timestamps T0 + i, a flush every
 * per_batch records (so each flush is about one batch). */
static void produce_seq(h_broker *b, const char *topic, int first, int n, int per_batch)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", "linger.ms", "100",
							    NULL});
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	char val[256];
	for (int i = 0; i < n; i++) {
		value_of(val, sizeof(val), topic, first + i);
		c_msg m = {.topic = topic,
			   .partition = 0,
			   .key = "key",
			   .key_len = 3,
			   .value = val,
			   .value_len = strlen(val),
			   .timestamp = T0 + first + i};
		c_produce(p, &m, &d[i]);
		if ((i + 1) % per_batch == 0)
			c_flush(p, h_scaled_ms(20000));
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < n; i++) {
		ck_assert_msg(d[i].done && d[i].err == 0, "produce %s %d: %s", topic, first + i,
			      rd_kafka_err2str(d[i].err));
		ck_assert_msg(d[i].offset == first + i, "record %d of %s at offset %lld", first + i,
			      topic, (long long)d[i].offset);
	}
	free(d);
	rd_kafka_destroy(p);
}

typedef struct seq_check {
	const char *topic;
	int next;
	char error[256];
} seq_check;

static int seq_cb(const rd_kafka_message_t *m, void *opaque)
{
	seq_check *s = opaque;
	char want[256];
	value_of(want, sizeof(want), s->topic, s->next);
	rd_kafka_timestamp_type_t tt;
	if (m->offset != s->next || m->len != strlen(want) ||
	    memcmp(m->payload, want, m->len) != 0 ||
	    rd_kafka_message_timestamp(m, &tt) != T0 + s->next) {
		snprintf(s->error, sizeof(s->error), "offset %lld: %.*s, expected %.40s at %d",
			 (long long)m->offset, (int)(m->len > 40 ? 40 : m->len),
			 (const char *)m->payload, want, s->next);
		return 1;
	}
	s->next++;
	return 0;
}

/* Read offsets 0..n-1 of topic and check them; and the high watermark is n. */
static void read_seq(h_broker *b, const char *topic, int n, const char *when)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	seq_check s = {.topic = topic};
	long got = c_consume(c, topic, 0, RD_KAFKA_OFFSET_BEGINNING, n, h_scaled_ms(30000),
			     seq_cb, &s);
	ck_assert_msg(!s.error[0], "%s: %s", when, s.error);
	ck_assert_msg(got == n, "%s: read %ld of %d records", when, got, n);
	int64_t lo, hi;
	rd_kafka_resp_err_t err =
	    rd_kafka_query_watermark_offsets(c, topic, 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "%s: watermarks: %s", when, rd_kafka_err2str(err));
	ck_assert_msg(lo == 0 && hi == n, "%s: low %lld high %lld, expected 0 and %d", when,
		      (long long)lo, (long long)hi, n);
	rd_kafka_destroy(c);
}

static int file_has_line(const char *path, const char *line)
{
	size_t len;
	uint8_t *b = slurp(path, &len);
	char *s = malloc(len + 2);
	memcpy(s + 1, b, len);
	s[0] = '\n';
	s[len + 1] = 0;
	char want[256];
	snprintf(want, sizeof(want), "\n%s\n", line);
	int r = strstr(s, want) != NULL;
	free(s);
	free(b);
	return r;
}

START_TEST(test_layout)
{
	h_broker *b = c_start_broker(NULL);
	produce_seq(b, "disk", 0, 30, 10);
	int st = h_broker_stop(b, h_scaled_ms(20000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM status 0x%x",
		      st);

	char path[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/disk-0/00000000000000000000.log", b->dir);
	lc_segment s;
	lc_scan_log(path, 0, false, &s);
	ck_assert_msg(!s.error[0], "%s", s.error);
	ck_assert_msg(s.next_offset == 30 && s.batches >= 3,
		      "segment holds %d batches up to offset %lld, expected 30 records in >= 3",
		      s.batches, (long long)s.next_offset);

	snprintf(path, sizeof(path), "%s/disk-0/00000000000000000000.index", b->dir);
	long isz = file_size(path);
	ck_assert_msg(isz >= 0 && isz % 8 == 0, "%s: size %ld (8-byte entries)", path, isz);
	snprintf(path, sizeof(path), "%s/disk-0/00000000000000000000.timeindex", b->dir);
	long tsz = file_size(path);
	ck_assert_msg(tsz >= 0 && tsz % 12 == 0, "%s: size %ld (12-byte entries)", path, tsz);
	snprintf(path, sizeof(path), "%s/disk-0", b->dir);
	lc_result lr;
	lc_options lo = {.first = 0};
	ck_assert_msg(lc_check_dir(path, &lo, &lr) == 0, "%s", lr.error);
	ck_assert_int_eq(lr.next_offset, 30);

	snprintf(path, sizeof(path), "%s/replication-offset-checkpoint", b->dir);
	ck_assert_msg(file_size(path) > 0 && file_has_line(path, "disk 0 30"),
		      "%s has no line \"disk 0 30\" (Kafka's checkpoint: version, count, "
		      "\"topic partition offset\" lines)",
		      path);
	ck_assert_msg(file_has_line(path, "0"), "%s: no version line", path);
	snprintf(path, sizeof(path), "%s/recovery-point-offset-checkpoint", b->dir);
	ck_assert_msg(file_size(path) > 0 && file_has_line(path, "disk 0 30"),
		      "%s has no line \"disk 0 30\" after a clean shutdown", path);
	snprintf(path, sizeof(path), "%s/log-start-offset-checkpoint", b->dir);
	ck_assert_msg(file_size(path) > 0, "%s missing", path);
	snprintf(path, sizeof(path), "%s/meta.properties", b->dir);
	size_t mlen;
	char *meta = (char *)slurp(path, &mlen);
	meta = realloc(meta, mlen + 1);
	meta[mlen] = 0;
	ck_assert_msg(strstr(meta, "cluster.id=") && strstr(meta, "version="),
		      "meta.properties lacks cluster.id or version: %s", meta);
	free(meta);

	ck_assert_int_eq(h_broker_restart(b), 0);
	read_seq(b, "disk", 30, "after a clean restart");
	c_stop_broker(b);
}
END_TEST

/* Names of the .log files of dir, sorted; returns the count. */
static int segment_logs(const char *dir, char names[][32], int max)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "no partition dir %s", dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l == 24 && strcmp(e->d_name + 20, ".log") == 0 && n < max)
			memcpy(names[n++], e->d_name, l + 1); /* 24 characters and the NUL */
	}
	closedir(d);
	qsort(names, (size_t)n, 32, (int (*)(const void *, const void *))strcmp);
	return n;
}

START_TEST(test_small_segments)
{
	/* Kafka 4's smallest log.segment.bytes is 1 MiB (KIP-1030). */
	h_broker *b = c_start_broker((const char *const[]){"log.segment.bytes=1048576",
							  "log.index.interval.bytes=512", NULL});
	use_pad = 1;
	const int n = 20000; /* about 5 MB */
	produce_seq(b, "seg", 0, n, 500);
	read_seq(b, "seg", n, "with small segments");

	char dir[PATH_MAX + 32], path[PATH_MAX + 128];
	snprintf(dir, sizeof(dir), "%s/seg-0", b->dir);
	static char names[512][32];
	int nseg = segment_logs(dir, names, 512);
	ck_assert_msg(nseg >= 4, "%d segments with log.segment.bytes=1048576 for ~5 MB", nseg);
	int64_t next = 0;
	for (int i = 0; i < nseg; i++) {
		long long named = atoll(names[i]);
		ck_assert_msg(named == next, "segment %s: expected base offset %lld", names[i],
			      (long long)next);
		snprintf(path, sizeof(path), "%s/%.31s", dir, names[i]);
		lc_segment s;
		lc_scan_log(path, next, false, &s);
		ck_assert_msg(!s.error[0], "%s", s.error);
		ck_assert_msg(file_size(path) <= 1048576,
			      "%s is %ld bytes with log.segment.bytes=1048576", names[i],
			      file_size(path));
		next = s.next_offset;
	}
	ck_assert_int_eq(next, n);
	lc_result lr;
	lc_options lo = {.first = 0};
	ck_assert_msg(lc_check_dir(dir, &lo, &lr) == 0, "%s", lr.error);
	ck_assert_msg(lr.segments == nseg && lr.next_offset == n, "logcheck: %d segments up to %lld",
		      lr.segments, (long long)lr.next_offset);

	/* Lookups by time land in the right segment. */
	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t probes[] = {0, 1, 4777, 10000, 15001, n - 1};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, "seg", 0)->offset = T0 + probes[i];
		rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(c, l, h_scaled_ms(10000));
		ck_assert_msg(err == 0 && l->elems[0].err == 0, "offsets_for_times: %s",
			      rd_kafka_err2str(err ? err : l->elems[0].err));
		ck_assert_msg(l->elems[0].offset == probes[i],
			      "time T0+%lld: offset %lld, expected %lld", (long long)probes[i],
			      (long long)l->elems[0].offset, (long long)probes[i]);
		rd_kafka_topic_partition_list_destroy(l);
	}
	rd_kafka_destroy(c);

	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	read_seq(b, "seg", n, "small segments after kill -9");
	produce_seq(b, "seg", n, 1000, 500);
	read_seq(b, "seg", n + 1000, "small segments, appended after kill -9");
	c_stop_broker(b);
}
END_TEST

enum damage { APPEND_GARBAGE, CUT_LAST_BATCH, BAD_CRC_LAST_BATCH };

static void torn_tail(enum damage how)
{
	static const char *names[] = {"garbage", "cut", "crc"};
	char topic[32];
	snprintf(topic, sizeof(topic), "torn-%s", names[how]);
	h_broker *b = c_start_broker(NULL);
	produce_seq(b, topic, 0, 200, 10);
	ck_assert_int_eq(h_broker_kill(b), 0);

	char path[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/%s-0/00000000000000000000.log", b->dir, topic);
	lc_segment s;
	lc_scan_log(path, 0, false, &s);
	ck_assert_msg(!s.error[0], "before damage: %s", s.error);
	ck_assert_int_eq(s.next_offset, 200);
	ck_assert_msg(s.batches >= 2, "only %d batches", s.batches);

	int expect;
	int fd = open(path, O_RDWR);
	ck_assert(fd >= 0);
	if (how == APPEND_GARBAGE) {
		uint8_t junk[37];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 37 + 11);
		ck_assert(pwrite(fd, junk, sizeof(junk), (off_t)s.end) == (ssize_t)sizeof(junk));
		expect = 200;
	} else if (how == CUT_LAST_BATCH) {
		ck_assert(ftruncate(fd, (off_t)(s.end - 25)) == 0);
		expect = (int)s.last_base;
	} else {
		uint8_t byte;
		off_t at = (off_t)(s.end - 3); /* inside the last record */
		ck_assert(pread(fd, &byte, 1, at) == 1);
		byte ^= 0x5a;
		ck_assert(pwrite(fd, &byte, 1, at) == 1);
		expect = (int)s.last_base;
	}
	close(fd);

	ck_assert_msg(h_broker_restart(b) == 0, "no restart after a damaged tail (%s)",
		      names[how]);
	char when[64];
	snprintf(when, sizeof(when), "after restart with damage '%s'", names[how]);
	read_seq(b, topic, expect, when);
	produce_seq(b, topic, expect, 10, 10);
	read_seq(b, topic, expect + 10, "appending after the recovery");
	c_stop_broker(b);
}

START_TEST(test_torn_garbage)
{
	torn_tail(APPEND_GARBAGE);
}
END_TEST

START_TEST(test_torn_cut)
{
	torn_tail(CUT_LAST_BATCH);
}
END_TEST

START_TEST(test_torn_crc)
{
	torn_tail(BAD_CRC_LAST_BATCH);
}
END_TEST

/* ---- directories of no topic, failed creations, fd limit ---- */

static void make_in(const h_broker *b, const char *name, bool dir)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s", b->dir, name);
	if (dir) {
		ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
		snprintf(path, sizeof(path), "%s/%s/00000000000000000000.log", b->dir, name);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
}

static int count_records(const rd_kafka_message_t *m, void *opaque)
{
	(void)m;
	(*(long *)opaque)++;
	return 0;
}

static bool exists_in(const h_broker *b, const char *name)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s", b->dir, name);
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Entries of the data dir named <prefix><anything>. */
static int count_prefixed(const h_broker *b, const char *prefix)
{
	DIR *d = opendir(b->dir);
	ck_assert(d != NULL);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

START_TEST(test_stray_dirs_set_aside)
{
	h_broker *b = h_broker_new(NULL);
	ck_assert(b != NULL);
	/* Before the first start: partition directories of no topic are
	 * renamed <dir>.<id>-stray (kept, no longer a partition), whatever
	 * does not look like one stays as it is. */
	make_in(b, "ghost-0", true);
	make_in(b, "ghost.two-17", true);
	make_in(b, "keep-me", true);        /* no partition index */
	make_in(b, "ghost-01", true);       /* not how an index is written */
	make_in(b, "ghost-3", false);       /* a file */
	make_in(b, "ghost-4.abc-delete", true);
	ck_assert_msg(h_broker_start(b) == 0, "broker did not start (log above)");
	ck_assert_msg(!exists_in(b, "ghost-0"), "ghost-0 (no such topic) is still there");
	ck_assert_msg(!exists_in(b, "ghost.two-17"), "ghost.two-17 (no such topic) is still there");
	const char *kept[] = {"keep-me", "ghost-01", "ghost-3", "ghost-4.abc-delete"};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		ck_assert_msg(exists_in(b, kept[i]), "%s was removed but is no partition directory",
			      kept[i]);
	ck_assert_msg(count_prefixed(b, "ghost-0.") == 1 && count_prefixed(b, "ghost.two-17.") == 1,
		      "the stray directories were not kept as <dir>.<id>-stray");
	char *log = h_broker_read_log(b);
	ck_assert_msg(log && strstr(log, "ghost-0") && strstr(log, "setting aside"),
		      "setting ghost-0 aside is not logged");
	free(log);

	/* A known topic: its partitions stay, an index past its count goes. */
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(p, "known", 2, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	rd_kafka_destroy(p);
	produce_seq(b, "known", 0, 5, 5);
	int st = h_broker_stop(b, h_scaled_ms(20000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM status 0x%x",
		      st);
	make_in(b, "known-2", true);
	make_in(b, "known-10", true);
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart (log above)");
	ck_assert_msg(!exists_in(b, "known-2") && !exists_in(b, "known-10"),
		      "directories past topic known's 2 partitions are still there");
	ck_assert_msg(count_prefixed(b, "known-2.") == 1 && count_prefixed(b, "known-10.") == 1,
		      "directories past topic known's 2 partitions were not kept as -stray");
	ck_assert_msg(exists_in(b, "known-0") && exists_in(b, "known-1"),
		      "a partition of topic known was removed");
	rd_kafka_t *c = c_consumer(b, NULL);
	long got = 0;
	long n = c_consume(c, "known", 0, RD_KAFKA_OFFSET_BEGINNING, 5, h_scaled_ms(20000),
			   count_records, &got);
	ck_assert_msg(n == 5, "read %ld of the 5 records of known-0 after the restart", n);
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

/* Create a topic whose logs cannot all be made: CreateTopics fails with
 * KAFKA_STORAGE_ERROR, no directory of it stays, the topic does not exist,
 * and the same name can be created once the cause is gone. */
static void failed_create_leaves_nothing(h_broker *b, const char *topic, int partitions,
					 const char *blocker)
{
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512], prefix[128];
	rd_kafka_resp_err_t err = c_create_topic(p, topic, partitions, 1, NULL, errstr,
						 sizeof(errstr));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
		      "CreateTopics %s (%d partitions): %s %s, expected KAFKA_STORAGE_ERROR", topic,
		      partitions, rd_kafka_err2name(err), errstr);
	snprintf(prefix, sizeof(prefix), "%s-", topic);
	int left = count_prefixed(b, prefix) - (blocker ? 1 : 0);
	ck_assert_msg(left == 0, "%d directories of the failed topic %s are left in %s", left,
		      topic, b->dir);
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	ck_assert_msg(c_md_topic(md, topic) == NULL || c_md_topic(md, topic)->err != 0,
		      "the failed topic %s is listed in Metadata", topic);
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(p);
	c_assert_broker_serving(b);
}

START_TEST(test_failed_create_blocked)
{
	h_broker *b = c_start_broker(NULL);
	/* A file where partition 6's directory goes: partitions 0-5 are made
	 * first, then the creation fails. */
	make_in(b, "blocked-6", false);
	failed_create_leaves_nothing(b, "blocked", 12, "blocked-6");
	ck_assert_msg(exists_in(b, "blocked-6"), "the file in the way was removed");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/blocked-6", b->dir);
	ck_assert_int_eq(unlink(path), 0);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(p, "blocked", 12, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics again: %s %s", rd_kafka_err2name(err), errstr);
	rd_kafka_destroy(p);
	ck_assert_int_eq(count_prefixed(b, "blocked-"), 12);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_fd_limit_raised)
{
	struct rlimit old;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_msg(old.rlim_max > 256, "hard open file limit %llu is too low to test",
		      (unsigned long long)old.rlim_max);
	struct rlimit low = {.rlim_cur = 256, .rlim_max = old.rlim_max};
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	h_broker *b = h_broker_new(NULL);
	int started = b ? h_broker_start(b) : -1;
	setrlimit(RLIMIT_NOFILE, &old); /* the soft limit can go back up */
	ck_assert_msg(started == 0, "broker did not start (log above)");
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)b->pid);
	FILE *f = fopen(path, "r");
	ck_assert(f != NULL);
	unsigned long long soft = 0, hard = 0;
	bool found = false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Max open files", 14) == 0) {
			found = sscanf(line + 14, "%llu %llu", &soft, &hard) == 2;
			break;
		}
	fclose(f);
	ck_assert_msg(found, "no numeric 'Max open files' line in %s", path);
	ck_assert_msg(soft == hard && hard == (unsigned long long)old.rlim_max,
		      "broker's open file limit is soft %llu hard %llu, expected both %llu", soft,
		      hard, (unsigned long long)old.rlim_max);
	char *log = h_broker_read_log(b);
	ck_assert_msg(log && strstr(log, "RLIMIT_NOFILE"), "the open file limit is not logged");
	free(log);
	c_stop_broker(b);
}
END_TEST

/* ---- damaged index files and checkpoints (issue 6: torn and corrupt
 * files): the broker recovers what is intact, names the file and what it
 * dropped on stderr, and serves ---- */

/* The broker's log from byte `from` on (what it wrote since then), as a
 * malloc'd string. */
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

enum file_damage { ZERO_FILL, CUT_ODD, GARBAGE, TRUNCATE_HALF, EMPTY };
static const char *damage_name[] = {"zero-filled", "cut to an odd size", "garbage",
				    "truncated", "empty"};

static void damage_file(const char *path, enum file_damage how)
{
	long size = file_size(path);
	ck_assert_msg(size >= 0, "%s is missing", path);
	int fd = open(path, O_RDWR);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	if (how == ZERO_FILL) {
		ck_assert_msg(size > 0, "%s is empty", path);
		char *z = calloc((size_t)size, 1);
		ck_assert(pwrite(fd, z, (size_t)size, 0) == (ssize_t)size);
		free(z);
	} else if (how == CUT_ODD) {
		ck_assert_msg(size > 3, "%s: %ld bytes", path, size);
		ck_assert(ftruncate(fd, size - 3) == 0);
	} else if (how == GARBAGE) {
		static const char junk[] = "\x01\xfe garbage \x7f\n-12 x\n\xff\xff";
		ck_assert(ftruncate(fd, 0) == 0);
		ck_assert(pwrite(fd, junk, sizeof(junk) - 1, 0) == (ssize_t)(sizeof(junk) - 1));
	} else if (how == TRUNCATE_HALF) {
		ck_assert_msg(size > 1, "%s: %ld bytes", path, size);
		ck_assert(ftruncate(fd, size / 2) == 0);
	} else {
		ck_assert(ftruncate(fd, 0) == 0);
	}
	close(fd);
}

/* Damage every file of dir ending in suffix; returns how many. */
static int damage_all(const char *dir, const char *suffix, enum file_damage how)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "no dir %s", dir);
	int n = 0;
	struct dirent *e;
	char path[PATH_MAX + 300];
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), sl = strlen(suffix);
		if (l < sl || strcmp(e->d_name + l - sl, suffix) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (file_size(path) <= 3 && how != EMPTY && how != GARBAGE)
			continue;
		damage_file(path, how);
		n++;
	}
	closedir(d);
	return n;
}

static void stop_and_check(h_broker *b, const char *topic, int n)
{
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM status 0x%x", st);
	char dir[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/%s-0", b->dir, topic);
	lc_result lr;
	lc_options lo = {.first = 0};
	ck_assert_msg(lc_check_dir(dir, &lo, &lr) == 0, "logcheck: %s", lr.error);
	ck_assert_int_eq(lr.next_offset, n);
	h_broker_free(b);
}

/* The time lookups of a log of n records T0 + i land on their offsets. */
static void check_times(h_broker *b, const char *topic, int n)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t probes[] = {0, 1, n / 3, n / 2, n - 2, n - 1};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, topic, 0)->offset = T0 + probes[i];
		rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(c, l, h_scaled_ms(10000));
		ck_assert_msg(err == 0 && l->elems[0].err == 0, "offsets_for_times: %s",
			      rd_kafka_err2str(err ? err : l->elems[0].err));
		ck_assert_msg(l->elems[0].offset == probes[i], "time T0+%lld: offset %lld, expected %lld",
			      (long long)probes[i], (long long)l->elems[0].offset, (long long)probes[i]);
		rd_kafka_topic_partition_list_destroy(l);
	}
	rd_kafka_destroy(c);
}

/* Two segments and more of padded records, stopped cleanly; every .index and
 * .timeindex damaged; the restart rebuilds them and says so. */
static void damaged_indexes(enum file_damage how)
{
	char topic[32];
	snprintf(topic, sizeof(topic), "idx-%d", (int)how);
	h_broker *b = c_start_broker((const char *const[]){"log.segment.bytes=1048576",
							  "log.index.interval.bytes=4096", NULL});
	use_pad = 1;
	const int n = 9000; /* 2 segments of 1 MiB and more */
	produce_seq(b, topic, 0, n, 500);
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM status 0x%x", st);
	char dir[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/%s-0", b->dir, topic);
	int nidx = damage_all(dir, ".index", how);
	int ntidx = damage_all(dir, ".timeindex", how);
	ck_assert_msg(nidx >= 2 && ntidx >= 2, "%d .index and %d .timeindex files damaged", nidx,
		      ntidx);
	size_t mark = log_len(b);
	ck_assert_msg(h_broker_restart(b) == 0, "no restart with %s indexes", damage_name[how]);
	read_seq(b, topic, n, damage_name[how]);
	check_times(b, topic, n);
	char *log = log_since(b, mark);
	ck_assert_msg(strstr(log, ".index") || strstr(log, ".log: "),
		      "the restart with %s indexes does not name the file: %s", damage_name[how], log);
	ck_assert_msg(strstr(log, "index"), "the restart with %s indexes does not say it rebuilt one: %s",
		      damage_name[how], log);
	free(log);
	produce_seq(b, topic, n, 100, 100);
	read_seq(b, topic, n + 100, "appending after the index rebuild");
	stop_and_check(b, topic, n + 100);
}

START_TEST(test_index_zero_filled)
{
	damaged_indexes(ZERO_FILL);
}
END_TEST

START_TEST(test_index_cut_odd)
{
	damaged_indexes(CUT_ODD);
}
END_TEST

/* Produce records first..first+n-1 of topic with an idempotent producer
 * (so the log has producer state and .snapshot files). */
static void produce_idem(h_broker *b, const char *topic, int first, int n)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"enable.idempotence", "true",
							    "linger.ms", "50", NULL});
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	char val[256];
	for (int i = 0; i < n; i++) {
		value_of(val, sizeof(val), topic, first + i);
		c_msg m = {.topic = topic, .partition = 0, .key = "key", .key_len = 3,
			   .value = val, .value_len = strlen(val), .timestamp = T0 + first + i};
		c_produce(p, &m, &d[i]);
		if ((i + 1) % 10 == 0)
			c_flush(p, h_scaled_ms(20000));
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < n; i++)
		ck_assert_msg(d[i].done && d[i].err == 0 && d[i].offset == first + i,
			      "produce %s %d: %s at %lld", topic, first + i, rd_kafka_err2str(d[i].err),
			      (long long)d[i].offset);
	free(d);
	rd_kafka_destroy(p);
}

/*
 * A broken checkpoint file (in the log dir, or with in_partition in the
 * partition's dir, or every file ending in name there): garbage, truncated,
 * empty. Each after a kill -9 (an unclean stop, so the recovery point
 * matters), or with clean after a SIGTERM (a producer snapshot is read
 * only then: after an unclean stop recovery starts below it and rebuilds
 * the state from the batches): the broker starts, names the file in its log, every record
 * reads back, producing goes on. Kafka fails the log dir on a checkpoint
 * it cannot read; Samsa treats the file as absent: a missing recovery
 * point recovers the whole log, a missing log start offset is the first
 * segment's base, a missing leader epoch file or producer snapshot is
 * rebuilt from the batches.
 */
static void broken_checkpoint(const char *name, bool in_partition, bool clean)
{
	const char *topic = "ckpt";
	h_broker *b = c_start_broker((const char *const[]){"log.segment.bytes=1048576", NULL});
	use_pad = 0;
	char dir[PATH_MAX + 64], path[PATH_MAX + 128];
	snprintf(dir, sizeof(dir), "%s/%s-0", b->dir, topic);
	int n = 0;
	enum file_damage kinds[] = {GARBAGE, TRUNCATE_HALF, EMPTY};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		/* a clean stop writes every checkpoint, records after it make
		 * the kill -9 an unclean stop with work for recovery */
		produce_idem(b, topic, n, 60);
		n += 60;
		int st = h_broker_stop(b, h_scaled_ms(30000));
		ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM 0x%x", st);
		ck_assert_int_eq(h_broker_restart(b), 0);
		produce_idem(b, topic, n, 40);
		n += 40;
		if (clean) {
			st = h_broker_stop(b, h_scaled_ms(30000));
			ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM 0x%x", st);
		} else {
			ck_assert_int_eq(h_broker_kill(b), 0);
		}
		if (name[0] == '.') {
			ck_assert_msg(damage_all(dir, name, kinds[k]) > 0, "no %s file in %s", name, dir);
		} else {
			snprintf(path, sizeof(path), "%s/%s", in_partition ? dir : b->dir, name);
			if (file_size(path) < 0) {
				/* not written by this run (no compacted topic): a
				 * broken one is still read at start-up */
				int fd = open(path, O_WRONLY | O_CREAT, 0644);
				ck_assert(fd >= 0 && write(fd, "0\n0\n", 4) == 4);
				close(fd);
			}
			damage_file(path, kinds[k]);
		}
		size_t mark = log_len(b);
		ck_assert_msg(h_broker_restart(b) == 0, "no restart with a %s %s",
			      damage_name[kinds[k]], name);
		char *log = log_since(b, mark);
		ck_assert_msg(strstr(log, name), "the restart with a %s %s does not name it:\n%s",
			      damage_name[kinds[k]], name, log);
		if (getenv("DISK_SHOW_LOG"))
			fprintf(stderr, "---- %s %s:\n%s", damage_name[kinds[k]], name, log);
		free(log);
		char when[128];
		snprintf(when, sizeof(when), "after a restart with a %s %s", damage_name[kinds[k]], name);
		read_seq(b, topic, n, when);
		produce_idem(b, topic, n, 10);
		n += 10;
		read_seq(b, topic, n, when);
	}
	stop_and_check(b, topic, n);
}

START_TEST(test_ckpt_recovery_point)
{
	broken_checkpoint("recovery-point-offset-checkpoint", false, false);
}
END_TEST

START_TEST(test_ckpt_log_start)
{
	broken_checkpoint("log-start-offset-checkpoint", false, false);
}
END_TEST

START_TEST(test_ckpt_replication)
{
	broken_checkpoint("replication-offset-checkpoint", false, false);
}
END_TEST

START_TEST(test_ckpt_cleaner)
{
	broken_checkpoint("cleaner-offset-checkpoint", false, false);
}
END_TEST

START_TEST(test_ckpt_leader_epoch)
{
	broken_checkpoint("leader-epoch-checkpoint", true, false);
}
END_TEST

START_TEST(test_ckpt_producer_snapshot)
{
	broken_checkpoint(".snapshot", true, true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("disk");
	TCase *tc = tcase_create("layout");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_small_segments);
	suite_add_tcase(s, tc);
	tc = tcase_create("recovery");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_torn_garbage);
	tcase_add_test(tc, test_torn_cut);
	tcase_add_test(tc, test_torn_crc);
	suite_add_tcase(s, tc);
	tc = tcase_create("damaged_files");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_index_zero_filled);
	tcase_add_test(tc, test_index_cut_odd);
	tcase_add_test(tc, test_ckpt_recovery_point);
	tcase_add_test(tc, test_ckpt_log_start);
	tcase_add_test(tc, test_ckpt_replication);
	tcase_add_test(tc, test_ckpt_cleaner);
	tcase_add_test(tc, test_ckpt_leader_epoch);
	tcase_add_test(tc, test_ckpt_producer_snapshot);
	suite_add_tcase(s, tc);
	tc = tcase_create("housekeeping");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_stray_dirs_set_aside);
	tcase_add_test(tc, test_failed_create_blocked);
	tcase_add_test(tc, test_fd_limit_raised);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
