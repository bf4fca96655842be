/*
 * test_recover.c - opening a log after an unclean stop (torn tail, garbage,
 * bad CRC, drop of later segments, recovery point), index rebuilds (missing,
 * empty, damaged) and the leader epoch cache after recovery.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;
static uint8_t bbuf[1 << 16];

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/t-3", dir);
	log_config_defaults(&cfg);
	cfg.index_interval_bytes = 150;
}

static void teardown(void) { tu_rmrf(dir); }

static size_t append(log_partition *lp, int n, int64_t ts, int32_t epoch)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = ts, .ts_step = 1, .value_size = 20 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, len, epoch, 0, &base), 0);
	return len;
}

/* A log of nb batches of 5 records (same size), closed cleanly; returns the
 * batch size. */
static size_t make_log(int nb, int64_t segment_bytes)
{
	cfg.segment_bytes = segment_bytes;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	size_t sz = 0;
	for (int i = 0; i < nb; i++)
		sz = append(lp, 5, 1000 + 10 * i, 1 + i / 4);
	log_close(lp);
	return sz;
}

static void seg(char *out, int64_t base, const char *suffix) { tu_seg_path(out, PATH_MAX, pdir, base, suffix); }

static void flip_byte(const char *path, int64_t pos)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	ck_assert_int_eq(pread(fd, &b, 1, pos), 1);
	b ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &b, 1, pos), 1);
	close(fd);
}

static void append_bytes(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static void assert_open_stats(const log_partition *lp, int32_t segments, int32_t recovered, int32_t rebuilt)
{
	log_open_stats st;
	log_get_open_stats(lp, &st);
	ck_assert_int_eq(st.segments, segments);
	ck_assert_int_eq(st.recovered, recovered);
	ck_assert_int_eq(st.rebuilt, rebuilt);
}

/* Every offset below leo can be read and starts at a batch holding it. */
static void check_reads(log_partition *lp)
{
	int64_t leo = log_end_offset(lp);
	for (int64_t o = log_start_offset(lp); o < leo; o++) {
		log_read_result r;
		ck_assert_int_eq(log_read(lp, o, INT64_MAX, 1, true, &r), 0);
		ck_assert_int_gt(r.len, 0);
		uint8_t h[61];
		ck_assert_int_eq(pread(r.fd, h, sizeof h, r.file_pos), 61);
		int64_t base = 0;
		for (int i = 0; i < 8; i++)
			base = base << 8 | h[i];
		int32_t delta = (int32_t)((uint32_t)h[23] << 24 | (uint32_t)h[24] << 16 | (uint32_t)h[25] << 8 | h[26]);
		ck_assert_int_le(base, o);
		ck_assert_int_ge(base + delta, o);
		log_segment_release(r.segment);
	}
}

START_TEST(torn_tail_is_truncated)
{
	size_t sz = make_log(3, 1 << 30);
	char p[PATH_MAX];
	seg(p, 0, ".log");
	ck_assert_int_eq(truncate(p, (off_t)(2 * sz + sz / 2)), 0);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 10);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz));
	ck_assert_int_eq(log_size_bytes(lp), (int64_t)(2 * sz));
	ck_assert_int_eq(log_recovery_point(lp), 0);
	check_reads(lp);
	int64_t base;
	tu_batch_opts o = { .nrecords = 1, .base_ts = 1, .ts_step = 1, .value_size = 1 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	ck_assert_int_eq(log_append(lp, bbuf, len, 1, 0, &base), 0);
	ck_assert_int_eq(base, 10);
	log_close(lp);

	/* a tail shorter than a batch header */
	append_bytes(p, "\0\0\0\0\0\0\0", 7);
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 11);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz + len));
	log_close(lp);
}
END_TEST

START_TEST(garbage_tail_is_truncated)
{
	size_t sz = make_log(3, 1 << 30);
	char p[PATH_MAX];
	seg(p, 0, ".log");
	uint8_t junk[300];
	srand(7);
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)rand();
	append_bytes(p, junk, sizeof junk);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 15);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(3 * sz));
	check_reads(lp);
	log_close(lp);

	/* garbage that looks like a batch header with a valid length: the CRC catches it */
	memcpy(junk, bbuf, 61);
	junk[0] = 0;
	append_bytes(p, junk, sz);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 15);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(3 * sz));
	log_close(lp);
}
END_TEST

START_TEST(bad_crc_in_last_batch)
{
	size_t sz = make_log(4, 1 << 30);
	char p[PATH_MAX];
	seg(p, 0, ".log");
	flip_byte(p, (int64_t)(3 * sz + 17)); /* the stored CRC */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 15);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(3 * sz));
	log_close(lp);

	/* a flipped byte in the records of the (new) last batch */
	flip_byte(p, (int64_t)(2 * sz + 80));
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 10);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz));
	check_reads(lp);
	log_close(lp);
}
END_TEST

START_TEST(corruption_drops_later_segments)
{
	size_t sz = make_log(1, 1 << 30);
	tu_rmrf(pdir);
	make_log(8, (int64_t)(2 * sz)); /* segments 0, 10, 20, 30 of two batches */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4);
	char p[PATH_MAX];
	seg(p, 10, ".log");
	flip_byte(p, (int64_t)(sz + 70)); /* offsets 15..19 */
	log_partition *lp;
	/* below the recovery point nothing is checked */
	ck_assert_int_eq(log_open(pdir, &cfg, false, 30, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 40);
	ck_assert_int_eq(log_recovery_point(lp), 30);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, false, 12, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 15);
	ck_assert_int_eq(log_recovery_point(lp), 12);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	ck_assert_int_eq(tu_count_files(pdir, ".index"), 2);
	ck_assert_int_eq(tu_count_files(pdir, ".timeindex"), 2);
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
	ck_assert_int_eq(log_size_bytes(lp), (int64_t)(3 * sz));
	check_reads(lp);
	int64_t base;
	tu_batch_opts o = { .nrecords = 2, .base_ts = 1, .ts_step = 1, .value_size = 1 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	ck_assert_int_eq(log_append(lp, bbuf, len, 1, 0, &base), 0);
	ck_assert_int_eq(base, 15);
	log_close(lp);
}
END_TEST

/* Remove (or empty) the indexes, reopen cleanly, compare with the originals. */
static void index_rebuild_case(bool empty)
{
	size_t sz = make_log(1, 1 << 30);
	tu_rmrf(pdir);
	make_log(12, (int64_t)(5 * sz)); /* segments 0, 25, 50 (the active one) */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 3);
	const char *suffix[] = { ".index", ".timeindex" };
	int64_t bases[] = { 0, 25, 50 };
	uint8_t *orig[3][2];
	size_t olen[3][2];
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2; k++) {
			char p[PATH_MAX];
			seg(p, bases[i], suffix[k]);
			orig[i][k] = tu_read_file(p, &olen[i][k]);
			ck_assert_ptr_nonnull(orig[i][k]);
			if (empty)
				ck_assert_int_eq(truncate(p, 0), 0);
			else
				ck_assert_int_eq(unlink(p), 0);
		}
	ck_assert_uint_gt(olen[0][0], 0);
	ck_assert_uint_gt(olen[2][0], 0);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, true, 60, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 60);
	/* closed segments: rebuilt; the active one: rebuilt when its index is
	 * missing, its entries added back by the tail scan when emptied */
	assert_open_stats(lp, 3, 0, empty ? 2 : 3);
	int64_t off, ts;
	ck_assert_int_eq(log_offset_for_timestamp(lp, 1052, &off, &ts), 0);
	ck_assert_int_eq(off, 27);
	check_reads(lp);
	log_close(lp);
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2; k++) {
			char p[PATH_MAX];
			size_t len;
			seg(p, bases[i], suffix[k]);
			uint8_t *now = tu_read_file(p, &len);
			ck_assert_ptr_nonnull(now);
			ck_assert_uint_eq(len, olen[i][k]);
			ck_assert_int_eq(memcmp(now, orig[i][k], len), 0);
			free(now);
			free(orig[i][k]);
		}
}

START_TEST(missing_indexes_rebuilt)
{
	index_rebuild_case(false);
}
END_TEST

START_TEST(empty_indexes_rebuilt)
{
	index_rebuild_case(true);
}
END_TEST

START_TEST(damaged_index_rebuilt)
{
	size_t sz = make_log(1, 1 << 30);
	tu_rmrf(pdir);
	make_log(12, (int64_t)(5 * sz));
	char p[PATH_MAX];
	/* entries that go backwards: noticed when first loaded */
	seg(p, 0, ".index");
	size_t len;
	uint8_t *orig = tu_read_file(p, &len);
	ck_assert_uint_ge(len, 16);
	int fd = open(p, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "\0\0\0\x30\0\0\0\x01", 8, 0), 8);
	close(fd);
	/* an entry pointing past the .log: noticed at open */
	seg(p, 25, ".index");
	fd = open(p, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "\0\0\0\x30\0\x10\0\0", 8), 8);
	close(fd);
	/* a torn entry in a time index */
	seg(p, 25, ".timeindex");
	append_bytes(p, "\0\0\0", 3);
	/* an orphan index is removed */
	seg(p, 99, ".index");
	append_bytes(p, "\0\0\0\0\0\0\0\0", 8);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, true, 60, -1, 0, &lp), 0);
	ck_assert_int_eq(tu_file_size(p), -1);
	check_reads(lp);
	seg(p, 0, ".index");
	uint8_t *now = tu_read_file(p, &len);
	ck_assert_int_eq(memcmp(now, orig, len), 0);
	free(now);
	free(orig);
	seg(p, 25, ".timeindex");
	ck_assert_int_eq(tu_file_size(p) % 12, 0);
	log_close(lp);
}
END_TEST

/* Segments of one batch each, larger than index.interval.bytes: their
 * offset index is empty, as Kafka's LogSegment.append leaves it (an entry
 * goes in only once more than the interval was written before a batch).
 * Returns the batch size; segments 0, 5, 10, 15 (the active one). */
static size_t make_single_batch_segments(void)
{
	size_t sz = make_log(1, 1 << 30);
	ck_assert_uint_gt(sz, (size_t)cfg.index_interval_bytes);
	tu_rmrf(pdir);
	make_log(4, (int64_t)sz);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4);
	char p[PATH_MAX];
	for (int64_t base = 0; base < 15; base += 5) {
		seg(p, base, ".index");
		ck_assert_int_eq(tu_file_size(p), 0);
		seg(p, base, ".timeindex");
		ck_assert_int_eq(tu_file_size(p), 12); /* the closing entry of the roll */
	}
	return sz;
}

/* A clean start reads no closed segment whose indexes pass the sanity
 * checks, an empty offset index included: a byte flipped inside the records
 * of a closed segment (which nothing reads at open; Kafka does not either)
 * is still there afterwards, where a recovery of the segment would have
 * cut it (issue 15: every start rebuilt such segments). */
START_TEST(clean_start_keeps_empty_offset_index)
{
	size_t sz = make_single_batch_segments();
	char p[PATH_MAX];
	seg(p, 0, ".log");
	flip_byte(p, (int64_t)sz - 3);
	seg(p, 5, ".log");
	flip_byte(p, (int64_t)sz - 3);
	for (int round = 0; round < 2; round++) {
		log_partition *lp;
		ck_assert_int_eq(log_open(pdir, &cfg, true, 20, -1, 0, &lp), 0);
		ck_assert_int_eq(log_end_offset(lp), 20);
		ck_assert_int_eq(log_size_bytes(lp), (int64_t)(4 * sz));
		assert_open_stats(lp, 4, 0, 0);
		log_close(lp);
		for (int64_t base = 0; base < 20; base += 5) {
			seg(p, base, ".log");
			ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
		}
		seg(p, 0, ".index");
		ck_assert_int_eq(tu_file_size(p), 0);
	}
}
END_TEST

/* Segments whose batches carry no timestamp have an empty time index (as
 * in Kafka: the closing entry of a roll is written only for a timestamp):
 * valid too, not rebuilt at a clean start. An emptied time index of a
 * segment with timestamps is damage and is rebuilt (empty_indexes_rebuilt). */
START_TEST(clean_start_keeps_empty_time_index)
{
	tu_batch_opts o = { .nrecords = 5, .base_ts = -1, .value_size = 20 };
	size_t sz = tu_batch(bbuf, sizeof bbuf, &o);
	cfg.segment_bytes = (int64_t)sz;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	for (int i = 0; i < 3; i++) {
		int64_t base;
		sz = tu_batch(bbuf, sizeof bbuf, &o);
		ck_assert_int_eq(log_append(lp, bbuf, sz, 0, 0, &base), 0);
	}
	log_close(lp);
	char p[PATH_MAX];
	seg(p, 0, ".timeindex");
	ck_assert_int_eq(tu_file_size(p), 0);
	seg(p, 0, ".log");
	flip_byte(p, (int64_t)sz - 3);
	ck_assert_int_eq(log_open(pdir, &cfg, true, 15, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 15);
	log_close(lp);
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
}
END_TEST

/* After an unclean stop only the segments from the one holding the
 * recovery point on are checked batch by batch (Kafka's LogLoader.recoverLog:
 * segments.values(recoveryPoint, end)); those below it are left alone when
 * their indexes pass the sanity checks. */
START_TEST(unclean_start_recovers_from_recovery_point)
{
	size_t sz = make_single_batch_segments();
	char p[PATH_MAX];
	seg(p, 0, ".log");
	flip_byte(p, (int64_t)sz - 3); /* below the recovery point: not read */
	seg(p, 15, ".log");
	append_bytes(p, bbuf, sz / 2); /* a torn batch at the end: cut */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, 12, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 20);
	ck_assert_int_eq(log_recovery_point(lp), 12);
	assert_open_stats(lp, 4, 2, 0); /* segments 10 and 15 */
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
	seg(p, 0, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
	log_close(lp);
	/* from a recovery point in segment 0 the flipped byte is found and
	 * everything after it goes */
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 0);
	ck_assert_int_eq(tu_file_size(p), 0);
	assert_open_stats(lp, 1, 1, 0);
	log_close(lp);
}
END_TEST

/* A roll makes a flush due (Kafka's UnifiedLog.roll flushes the segments
 * before the new one), so the recovery point follows the rolled segments
 * and a crash recovers only the segment holding it and those after. The
 * writer runs in a child that exits without closing the log (a crash: the
 * page cache keeps what it wrote, unflushed or not). */
START_TEST(recovery_point_follows_rolls)
{
	size_t sz = make_log(1, 1 << 30);
	tu_rmrf(pdir);
	cfg.segment_bytes = (int64_t)(3 * sz); /* segments 0, 15, 30, 45 */
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		log_partition *lp;
		int64_t rp = -1;
		if (log_open(pdir, &cfg, false, -1, -1, 0, &lp) == 0) {
			int flushes = 0;
			for (int i = 0; i < 10; i++) {
				append(lp, 5, 1000 + i, 1);
				bool rolled = i > 0 && i % 3 == 0;
				if (log_flush_due(lp, 0) != rolled)
					_exit(10 + i); /* due exactly after each roll */
				if (rolled && log_flush(lp) == 0)
					flushes++;
			}
			append(lp, 5, 2000, 1); /* offsets 50..54, never flushed */
			if (flushes == 3 && !log_flush_due(lp, 0))
				rp = log_recovery_point(lp);
		}
		ck_assert_int_eq(write(fds[1], &rp, sizeof rp), (ssize_t)sizeof rp);
		_exit(0);
	}
	close(fds[1]);
	int64_t rp = -2;
	ssize_t got = read(fds[0], &rp, sizeof rp);
	close(fds[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "writer: status 0x%x (exit 10 + i: log_flush_due wrong after append i)", status);
	ck_assert_int_eq(got, (ssize_t)sizeof rp);
	ck_assert_int_eq(rp, 50); /* flushed when offsets 45..49 rolled segment 45 in */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, rp, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 55);
	assert_open_stats(lp, 4, 1, 0); /* segment 45 only */
	log_close(lp);
}
END_TEST

/* Every file of the partition directory with its size and first bytes. */
typedef struct dir_image {
	int n;
	char name[32][64];
	int64_t size[32];
	uint8_t head[32][64];
} dir_image;

static void take_image(dir_image *im)
{
	memset(im, 0, sizeof *im);
	DIR *d = opendir(pdir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		ck_assert_int_lt(im->n, 32);
		char p[PATH_MAX + 64];
		ck_assert_uint_lt(strlen(de->d_name), sizeof im->name[0]);
		memcpy(im->name[im->n], de->d_name, strlen(de->d_name) + 1);
		snprintf(p, sizeof p, "%s/%s", pdir, im->name[im->n]);
		im->size[im->n] = tu_file_size(p);
		int fd = open(p, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_ge(pread(fd, im->head[im->n], sizeof im->head[0], 0), 0);
		close(fd);
		im->n++;
	}
	closedir(d);
}

static void assert_same_image(const dir_image *a, const dir_image *b, long limit)
{
	ck_assert_int_eq(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		int j = 0;
		while (j < b->n && strcmp(a->name[i], b->name[j]) != 0)
			j++;
		ck_assert_msg(j < b->n, "open file limit %ld: %s is gone", limit, a->name[i]);
		ck_assert_msg(a->size[i] == b->size[j] && memcmp(a->head[i], b->head[j], sizeof a->head[0]) == 0,
			      "open file limit %ld: %s changed (%lld bytes, now %lld)", limit, a->name[i],
			      (long long)a->size[i], (long long)b->size[j]);
	}
}

/* The descriptor the next open would get: with the open file limit at it
 * nothing can be opened (the limit bounds descriptor numbers, and every
 * number below it is taken). */
static long lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	close(fd);
	return fd;
}

/* An open that runs out of descriptors (EMFILE) fails with -EMFILE and
 * changes nothing: a file that cannot be opened is never taken for a
 * damaged one (issue 15: a healthy index reported damaged and emptied at a
 * low open file limit). Every limit from "nothing can be opened" up to
 * "enough" is tried. */
START_TEST(open_out_of_descriptors_changes_nothing)
{
	size_t sz = make_log(1, 1 << 30);
	tu_rmrf(pdir);
	make_log(14, (int64_t)(5 * sz)); /* segments 0, 25, 50 (active: 4 batches, indexed) */
	char p[PATH_MAX];
	seg(p, 50, ".index");
	ck_assert_int_gt(tu_file_size(p), 0);
	dir_image before, after;
	take_image(&before);
	struct rlimit old;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	long first = lowest_free_fd();
	int failed = 0;
	bool opened = false;
	for (long extra = 0; extra < 40 && !opened; extra++) {
		struct rlimit rl = { .rlim_cur = (rlim_t)(first + extra), .rlim_max = old.rlim_max };
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
		log_partition *lp = NULL;
		int rc = log_open(pdir, &cfg, true, 70, -1, 0, &lp);
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
		if (rc == 0) {
			opened = true;
			ck_assert_int_eq(log_end_offset(lp), 70);
			log_close(lp);
			break;
		}
		ck_assert_msg(rc == -EMFILE, "open file limit %ld: log_open returned %d", first + extra, rc);
		failed++;
		take_image(&after);
		assert_same_image(&before, &after, first + extra);
	}
	ck_assert(opened);
	ck_assert_int_gt(failed, 0);
}
END_TEST

START_TEST(clean_flag_with_bad_tail)
{
	size_t sz = make_log(3, 1 << 30);
	char p[PATH_MAX];
	seg(p, 0, ".log");
	ck_assert_int_eq(truncate(p, (off_t)(3 * sz - 1)), 0);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, true, 15, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 10);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz));
	log_close(lp);
}
END_TEST

START_TEST(epochs_after_recovery)
{
	/* epochs 1 (offsets 0..19), 2 (20..39), 3 (40..44) */
	size_t sz = make_log(9, 1 << 30);
	char p[PATH_MAX], ep[PATH_MAX + 32];
	seg(p, 0, ".log");
	snprintf(ep, sizeof ep, "%s/leader-epoch-checkpoint", pdir);
	ck_assert_int_eq(truncate(p, (off_t)(8 * sz + 3)), 0);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 40);
	ck_assert_int_eq(log_latest_epoch(lp), 2); /* epoch 3 started past the end */
	log_close(lp);
	/* a lost checkpoint is rebuilt from the batches */
	ck_assert_int_eq(unlink(ep), 0);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 2);
	int32_t e;
	int64_t end;
	log_end_offset_for_epoch(lp, 1, &e, &end);
	ck_assert_int_eq(e, 1);
	ck_assert_int_eq(end, 20);
	log_close(lp);
	/* a checkpoint that does not parse: rebuilt too */
	FILE *f = fopen(ep, "w");
	fputs("0\n5\nbanana\n", f);
	fclose(f);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 2);
	log_close(lp);
	size_t len;
	uint8_t *text = tu_read_file(ep, &len);
	ck_assert_uint_eq(len, strlen("0\n2\n1 0\n2 20\n"));
	ck_assert_int_eq(memcmp(text, "0\n2\n1 0\n2 20\n", len), 0);
	free(text);
}
END_TEST

START_TEST(log_start_offset_kept)
{
	make_log(4, 1 << 30);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, true, 20, 7, 0, &lp), 0);
	ck_assert_int_eq(log_start_offset(lp), 7);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 6, INT64_MAX, 100, true, &r), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_read(lp, 7, INT64_MAX, 100, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	log_segment_release(r.segment);
	log_set_high_watermark(lp, 3);
	ck_assert_int_eq(log_high_watermark(lp), 7);
	log_close(lp);
	/* a new log with a known start offset begins its first segment there */
	tu_rmrf(pdir);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, 42, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 42);
	ck_assert_int_eq(log_start_offset(lp), 42);
	append(lp, 1, 1, 0);
	log_close(lp);
	char p[PATH_MAX];
	seg(p, 42, ".log");
	ck_assert_int_gt(tu_file_size(p), 0);
}
END_TEST

START_TEST(legacy_format_is_refused_not_cut)
{
	size_t sz = make_log(2, 1 << 30);
	char p[PATH_MAX];
	seg(p, 0, ".log");
	/* a v1 message: offset 10, size 34, crc, magic 1, attributes, timestamp, null key, 4-byte value */
	uint8_t m[46] = { 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 34, 1, 2, 3, 4, 1, 0 };
	m[34] = 0xff, m[35] = 0xff, m[36] = 0xff, m[37] = 0xff; /* key length -1 */
	m[41] = 4;
	append_bytes(p, m, sizeof m);
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, 0, -1, 0, &lp), -ENOTSUP);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz + sizeof m));
	ck_assert_int_eq(log_open(pdir, &cfg, true, 10, -1, 0, &lp), -ENOTSUP);
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * sz + sizeof m));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("recover");
	TCase *tc = tcase_create("recover");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, torn_tail_is_truncated);
	tcase_add_test(tc, garbage_tail_is_truncated);
	tcase_add_test(tc, bad_crc_in_last_batch);
	tcase_add_test(tc, corruption_drops_later_segments);
	tcase_add_test(tc, missing_indexes_rebuilt);
	tcase_add_test(tc, empty_indexes_rebuilt);
	tcase_add_test(tc, damaged_index_rebuilt);
	tcase_add_test(tc, clean_start_keeps_empty_offset_index);
	tcase_add_test(tc, clean_start_keeps_empty_time_index);
	tcase_add_test(tc, unclean_start_recovers_from_recovery_point);
	tcase_add_test(tc, recovery_point_follows_rolls);
	tcase_add_test(tc, open_out_of_descriptors_changes_nothing);
	tcase_add_test(tc, clean_flag_with_bad_tail);
	tcase_add_test(tc, epochs_after_recovery);
	tcase_add_test(tc, log_start_offset_kept);
	tcase_add_test(tc, legacy_format_is_refused_not_cut);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
