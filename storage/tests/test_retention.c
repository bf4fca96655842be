/*
 * test_retention.c - deleting segments from the front of a log: the log
 * start offset (log_advance_start_offset), retention.bytes and retention.ms
 * (log_delete_old_segments), the high watermark bound, the active segment
 * (rolled, never deleted while active), the *.deleted files (renamed at once,
 * handed out, unlinked later, removed by log_open after a crash), the leader
 * epoch cache and producer snapshots cut at the front, and a fetch still
 * reading from a deleted segment.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/retention.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/topic-0", dir);
	log_config_defaults(&cfg);
	cfg.segment_bytes = 1000; /* about 3 batches of append_one per segment */
}

static void teardown(void) { tu_rmrf(dir); }

static uint8_t bbuf[1 << 16];

/* Append one batch of 5 records of 40 bytes at timestamp ts (epoch 3) and
 * move the high watermark to the log end. Returns the batch size. */
static int64_t append_one(log_partition *lp, int64_t ts, int32_t epoch)
{
	tu_batch_opts o = { .nrecords = 5, .base_ts = ts, .ts_step = 0, .value_size = 40 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, len, epoch, 1000, &base), 0);
	log_set_high_watermark(lp, log_end_offset(lp));
	return (int64_t)len;
}

static bool exists(int64_t base, const char *suffix)
{
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, base, suffix);
	struct stat st;
	return stat(p, &st) == 0;
}

/* A log of n batches (offsets 5 * i .. 5 * i + 4) with timestamps ts0 + i. */
static log_partition *fill(int n, int64_t ts0)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	for (int i = 0; i < n; i++)
		append_one(lp, ts0 + i, 3);
	return lp;
}

/* Unlink what the log handed out; returns how many files. */
static size_t unlink_deleted(log_partition *lp)
{
	log_deleted_files f;
	size_t n = log_take_deleted_files(lp, &f);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(f.paths[i]);
		ck_assert(l > 8 && strcmp(f.paths[i] + l - 8, ".deleted") == 0);
		struct stat st;
		ck_assert_int_eq(stat(f.paths[i], &st), 0);
	}
	ck_assert_int_eq(log_deleted_files_unlink(&f), 0);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		ck_assert_int_eq(stat(f.paths[i], &st), -1);
	}
	ck_assert_int_eq(log_deleted_files_unlink(&f), 0); /* gone already: fine */
	log_deleted_files_free(&f);
	return n;
}

START_TEST(advance_start_offset_deletes_whole_segments)
{
	log_partition *lp = fill(10, 1000); /* 50 offsets, segments of 3 batches */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4); /* bases 0, 15, 30, 45 */
	int64_t size = log_size_bytes(lp);

	/* above the high watermark: refused, nothing changes */
	log_set_high_watermark(lp, 40);
	ck_assert_int_eq(log_advance_start_offset(lp, 41), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_start_offset(lp), 0);
	log_set_high_watermark(lp, 50);

	/* 17 is inside the segment based at 15: only segment 0 goes */
	ck_assert_int_eq(log_advance_start_offset(lp, 17), 0);
	ck_assert_int_eq(log_start_offset(lp), 17);
	ck_assert(!exists(0, ".log") && exists(0, ".log.deleted"));
	ck_assert(!exists(0, ".index") && exists(0, ".index.deleted"));
	ck_assert(!exists(0, ".timeindex") && exists(0, ".timeindex.deleted"));
	ck_assert(exists(15, ".log"));
	ck_assert_int_lt(log_size_bytes(lp), size);

	log_read_result r;
	ck_assert_int_eq(log_read(lp, 16, INT64_MAX, 1 << 20, false, &r), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_read(lp, 17, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_gt(r.len, 0);
	log_segment_release(r.segment);

	/* not above the current start: nothing */
	ck_assert_int_eq(log_advance_start_offset(lp, 10), 0);
	ck_assert_int_eq(log_start_offset(lp), 17);

	/* exactly at a base offset: the segments below it go, that one stays */
	ck_assert_int_eq(log_advance_start_offset(lp, 45), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	ck_assert(exists(45, ".log"));

	/* to the high watermark (the log end): the active segment stays */
	ck_assert_int_eq(log_advance_start_offset(lp, 50), 0);
	ck_assert_int_eq(log_start_offset(lp), 50);
	ck_assert(exists(45, ".log"));
	ck_assert_int_eq(log_read(lp, 49, INT64_MAX, 1 << 20, false, &r), LOG_ERR_OFFSET_OUT_OF_RANGE);

	/* 3 segments x (.log, .index, .timeindex), and the producer snapshot at
	 * 30 (the snapshots at 30 and 45 were kept by the rolls) */
	ck_assert_uint_eq(unlink_deleted(lp), 10);
	ck_assert_int_eq(tu_count_files(pdir, ".deleted"), 0);
	ck_assert_uint_eq(unlink_deleted(lp), 0);

	/* appends go on */
	append_one(lp, 2000, 3);
	ck_assert_int_eq(log_end_offset(lp), 55);
	log_close(lp);
}
END_TEST

START_TEST(retention_bytes)
{
	log_partition *lp = fill(12, 1000); /* 60 offsets: bases 0, 15, 30, 45 */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".log");
	int64_t seg = tu_file_size(p); /* every segment holds 3 batches of the same size */
	int64_t size = log_size_bytes(lp);

	/* no limit, or the log within it: nothing */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, -1, 5000), 0);
	ck_assert_int_eq(log_delete_old_segments(lp, -1, size, 5000), 0);
	/* one byte less than the log: not even one whole segment to spare */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, size - 1, 5000), 0);
	/* exactly one segment to spare: one goes (size - seg >= limit) */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, size - seg, 5000), 1);
	ck_assert_int_eq(log_start_offset(lp), 15);
	ck_assert_int_eq(log_size_bytes(lp), size - seg);
	/* a limit of 1.5 segments (3 left): one more goes, the log stays above it */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, seg + seg / 2, 5000), 1);
	ck_assert_int_eq(log_start_offset(lp), 30);
	ck_assert_int_ge(log_size_bytes(lp), seg + seg / 2);
	/* limit 0: everything but the active segment, which is due as well
	 * (high watermark = log end): it is rolled, then deleted */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, 0, 5000), 2);
	ck_assert_int_eq(log_start_offset(lp), 60);
	ck_assert_int_eq(log_end_offset(lp), 60);
	ck_assert_int_eq(log_size_bytes(lp), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	ck_assert(exists(60, ".log"));
	/* the empty active segment is never deleted */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, 0, 5000), 0);
	ck_assert(exists(60, ".log"));
	log_close(lp);
}
END_TEST

START_TEST(retention_ms)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	/* segment 0: timestamps 1000-1002; 15: 5000-5002; 30: 9000-9002; 45 active: 20000 */
	for (int s = 0; s < 3; s++)
		for (int i = 0; i < 3; i++)
			append_one(lp, 1000 + 4000 * s + i, 3);
	append_one(lp, 20000, 3);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4);

	/* retention.ms -1: forever */
	ck_assert_int_eq(log_delete_old_segments(lp, -1, -1, 1000000), 0);
	/* now 7002, retention 2000: segment 0 (1002) is 6000 old, 15 (5002) exactly 2000: kept */
	ck_assert_int_eq(log_delete_old_segments(lp, 2000, -1, 7002), 1);
	ck_assert_int_eq(log_start_offset(lp), 15);
	ck_assert(exists(0, ".log.deleted") && exists(15, ".log"));
	ck_assert_int_eq(log_delete_old_segments(lp, 2000, -1, 7003), 1);
	ck_assert_int_eq(log_start_offset(lp), 30);

	/* the high watermark bounds deletion: segment 30 ends at 45 > hw 44 */
	log_set_high_watermark(lp, 44);
	ck_assert_int_eq(log_delete_old_segments(lp, 2000, -1, 100000), 0);
	ck_assert_int_eq(log_start_offset(lp), 30);
	log_set_high_watermark(lp, 45);
	ck_assert_int_eq(log_delete_old_segments(lp, 2000, -1, 100000), 1);
	ck_assert_int_eq(log_start_offset(lp), 45);
	/* the active segment is due too but holds offsets at the high watermark */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	ck_assert_int_eq(log_end_offset(lp), 50);

	/* a timestamp in the future is never due */
	log_set_high_watermark(lp, 50);
	ck_assert_int_eq(log_delete_old_segments(lp, 0, -1, 19000), 0);
	ck_assert(exists(45, ".log"));
	/* whole log due: rolled first, the old active segment deleted */
	ck_assert_int_eq(log_delete_old_segments(lp, 2000, -1, 30000), 1);
	ck_assert_int_eq(log_start_offset(lp), 50);
	ck_assert(exists(50, ".log") && !exists(45, ".log"));
	ck_assert_int_eq(log_end_offset(lp), 50);
	append_one(lp, 30000, 3);
	ck_assert_int_eq(log_end_offset(lp), 55);
	log_close(lp);
}
END_TEST

START_TEST(segment_without_timestamps_uses_mtime)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	for (int i = 0; i < 4; i++)
		append_one(lp, -1, 3); /* no timestamps: the file's mtime counts */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	int64_t now = (int64_t)time(NULL) * 1000;
	/* written just now: not older than an hour */
	ck_assert_int_eq(log_delete_old_segments(lp, 3600000, -1, now), 0);
	/* an hour from now it is */
	ck_assert_int_eq(log_delete_old_segments(lp, 3600000, -1, now + 3600000 + 5000), 2);
	ck_assert_int_eq(log_start_offset(lp), 20);
	log_close(lp);
}
END_TEST

START_TEST(epochs_and_snapshots_cut_at_the_front)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	/* epochs 1 at 0, 2 at 10, 5 at 25, 6 at 40 */
	int32_t ep[] = { 1, 1, 2, 2, 2, 5, 5, 5, 6, 6 };
	for (int i = 0; i < 10; i++) {
		tu_batch_opts o = { .nrecords = 5, .base_ts = 1000, .value_size = 40 };
		size_t len = tu_batch(bbuf, sizeof bbuf, &o);
		int64_t base;
		ck_assert_int_eq(log_append(lp, bbuf, len, ep[i], 1000, &base), 0);
	}
	log_set_high_watermark(lp, log_end_offset(lp));
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot"), 2); /* 30 and 45 kept */

	ck_assert_int_eq(log_advance_start_offset(lp, 32), 0);
	int32_t e;
	int64_t end;
	/* epoch 2 ended before the start: asking for it gives the first kept epoch's entry */
	log_end_offset_for_epoch(lp, 5, &e, &end);
	ck_assert_int_eq(e, 5);
	ck_assert_int_eq(end, 40);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 32), 5);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 31), -1);
	/* the checkpoint file says the same: 5 at 32, 6 at 40 */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", pdir, LOG_EPOCH_FILE);
	size_t len;
	uint8_t *text = tu_read_file(p, &len);
	const char *want = "0\n2\n5 32\n6 40\n";
	ck_assert_uint_eq(len, strlen(want));
	ck_assert(memcmp(text, want, len) == 0);
	free(text);
	/* segment 30 is the first kept: the snapshot at 30 stays, none below */
	ck_assert(exists(30, ".snapshot"));
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot.deleted"), 0);
	ck_assert_int_eq(log_advance_start_offset(lp, 46), 0);
	ck_assert(!exists(30, ".snapshot") && exists(30, ".snapshot.deleted"));
	ck_assert(exists(45, ".snapshot"));
	log_close(lp);
}
END_TEST

START_TEST(deleted_files_removed_at_open)
{
	log_partition *lp = fill(10, 1000);
	ck_assert_int_eq(log_advance_start_offset(lp, 32), 0);
	ck_assert_int_gt(tu_count_files(pdir, ".deleted"), 0);
	/* a crash before the unlink: the files stay renamed; the broker's
	 * checkpoint kept the start offset */
	log_close(lp);
	ck_assert_int_gt(tu_count_files(pdir, ".deleted"), 0);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, 32, 1000, &lp), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".deleted"), 0);
	ck_assert_int_eq(log_start_offset(lp), 32);
	ck_assert_int_eq(log_end_offset(lp), 50);
	log_close(lp);
	/* without a checkpoint the first segment's base is the start */
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 1000, &lp), 0);
	ck_assert_int_eq(log_start_offset(lp), 30);
	log_close(lp);
}
END_TEST

START_TEST(fetch_keeps_a_deleted_segment_readable)
{
	log_partition *lp = fill(10, 1000);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_gt(r.len, 0);
	ck_assert_int_eq(log_advance_start_offset(lp, 45), 0);
	ck_assert_uint_eq(unlink_deleted(lp), 10);
	/* the fetch still sends from the unlinked file through its fd */
	uint8_t b[8];
	ck_assert_int_eq(pread(r.fd, b, 8, r.file_pos), 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(b[i], 0); /* base offset 0 */
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

START_TEST(take_on_a_closed_log_frees)
{
	/* pending names are freed with the log (sanitizer build: no leak) */
	log_partition *lp = fill(10, 1000);
	ck_assert_int_eq(log_advance_start_offset(lp, 45), 0);
	log_close(lp);
	lp = fill(1, 5000);
	ck_assert_int_eq(log_start_offset(lp), 45);
	log_deleted_files f;
	ck_assert_uint_eq(log_take_deleted_files(lp, &f), 0);
	log_deleted_files_free(&f);
	ck_assert_int_eq(log_delete(lp), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("retention");
	TCase *tc = tcase_create("retention");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, advance_start_offset_deletes_whole_segments);
	tcase_add_test(tc, retention_bytes);
	tcase_add_test(tc, retention_ms);
	tcase_add_test(tc, segment_without_timestamps_uses_mtime);
	tcase_add_test(tc, epochs_and_snapshots_cut_at_the_front);
	tcase_add_test(tc, deleted_files_removed_at_open);
	tcase_add_test(tc, fetch_keeps_a_deleted_segment_readable);
	tcase_add_test(tc, take_on_a_closed_log_frees);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
