/*
 * test_disk_full.c - storage on a full disk: a failed index write leaves no
 * torn entry, a roll that fails (its segment file cannot be created, the
 * closing time index entry cannot be written, or the first append to the
 * new segment fails) leaves the log as it was, a failed checkpoint
 * write leaves the old file, and a leader epoch the checkpoint could not
 * take pins the recovery point until it is written. Short writes come from RLIMIT_FSIZE (EFBIG,
 * handled as ENOSPC); no check assertion runs while the limit holds (check
 * may write its own messages to a file).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/index.h"
#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;
static struct rlimit saved;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/topic-0", dir);
	log_config_defaults(&cfg);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &saved);
}

static void teardown(void)
{
	setrlimit(RLIMIT_FSIZE, &saved);
	tu_rmrf(dir);
}

/* Files may not grow past bytes from now on (0 on success). */
static int limit_files(rlim_t bytes)
{
	struct rlimit lim = saved;
	lim.rlim_cur = bytes;
	return setrlimit(RLIMIT_FSIZE, &lim);
}

static void unlimit_files(void) { setrlimit(RLIMIT_FSIZE, &saved); }

static uint8_t bbuf[1 << 16];

static size_t make_batch(int n, int64_t ts, int value_size)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = ts, .ts_step = 1, .value_size = value_size };
	return tu_batch(bbuf, sizeof bbuf, &o);
}

START_TEST(epoch_checkpoint_failure_pins_recovery_point)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	size_t len = make_batch(2, 1000, 10);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, len, 1, 0, &base), 0);
	ck_assert_int_eq(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 2);
	/* A directory where the checkpoint's temporary file goes: rewriting
	 * leader-epoch-checkpoint fails as on a full disk. */
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s/leader-epoch-checkpoint.tmp", pdir);
	ck_assert_int_eq(mkdir(tmp, 0755), 0);
	make_batch(2, 2000, 10);
	ck_assert_int_eq(log_append(lp, bbuf, len, 2, 0, &base), 0); /* epoch 2 from offset 2 */
	ck_assert_int_eq(log_latest_epoch(lp), 2);
	/* The flush cannot write the epoch: the recovery point stays below it. */
	ck_assert_int_lt(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 2);
	/* Space again: the flush writes the epoch, then moves on. */
	ck_assert_int_eq(rmdir(tmp), 0);
	ck_assert_int_eq(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 4);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, 4, 0, 0, &lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 2);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 1), 1);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 2), 2);
	log_close(lp);
}
END_TEST

START_TEST(index_short_write_leaves_no_torn_entry)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/x.index", dir);
	log_entfile ef;
	ck_assert_int_eq(log_ef_init(&ef, p, LOG_INDEX_ENTRY_SIZE), 0);
	ck_assert_int_eq(log_ef_reset(&ef), 0);
	ck_assert_int_eq(log_index_add(&ef, 1, 0), 0);
	ck_assert_int_eq(log_ef_sync(&ef), 0);
	ck_assert_int_eq(log_index_add(&ef, 2, 100), 0);
	ck_assert_int_eq(log_index_add(&ef, 3, 200), 0);
	/* room for one and a half more entries: the write is short */
	int lrc = limit_files(LOG_INDEX_ENTRY_SIZE * 2 + 4);
	int rc = log_ef_sync(&ef);
	unlimit_files();
	ck_assert_int_eq(lrc, 0);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert_int_eq(tu_file_size(p), LOG_INDEX_ENTRY_SIZE);
	ck_assert_uint_eq(ef.nfile, 1);
	/* the rollback drops them from memory; a later write starts clean */
	ck_assert_int_eq(log_ef_truncate(&ef, 1), 0);
	ck_assert_int_eq(log_index_add(&ef, 4, 300), 0);
	ck_assert_int_eq(log_ef_sync(&ef), 0);
	ck_assert_int_eq(tu_file_size(p), 2 * LOG_INDEX_ENTRY_SIZE);
	log_ef_destroy(&ef);
}
END_TEST

/* A log of one segment with one batch, segment.bytes so small that the next
 * append rolls; *tsize: its .timeindex size. */
static log_partition *one_full_segment(int64_t *tsize, size_t *len)
{
	cfg.segment_bytes = 200;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	*len = make_batch(2, 1000, 60);
	ck_assert_uint_gt(*len, 100);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, *len, 0, 0, &base), 0);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".timeindex");
	*tsize = tu_file_size(p);
	return lp;
}

/* The log still has one segment of len bytes, offsets 0-1, timeindex of tsize. */
static void check_unchanged(log_partition *lp, size_t len, int64_t tsize)
{
	char p[PATH_MAX];
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	ck_assert_int_eq(tu_count_files(pdir, ".index"), 1);
	ck_assert_int_eq(tu_count_files(pdir, ".timeindex"), 1);
	tu_seg_path(p, sizeof p, pdir, 0, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)len);
	tu_seg_path(p, sizeof p, pdir, 0, ".timeindex");
	ck_assert_int_eq(tu_file_size(p), tsize);
	ck_assert_int_eq(log_end_offset(lp), 2);
	ck_assert_int_eq(log_size_bytes(lp), (int64_t)len);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1 << 20, true, &r), 0);
	ck_assert_int_eq(r.len, (int32_t)len);
	log_segment_release(r.segment);
}

/* After the failure is gone the append rolls and lands at offset 2. */
static void append_rolls(log_partition *lp, size_t len)
{
	int64_t base;
	make_batch(2, 2000, 60);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	ck_assert_int_eq(base, 2);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	ck_assert_int_eq(log_end_offset(lp), 4);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 4);
	log_close(lp);
}

START_TEST(roll_cannot_create_segment)
{
	int64_t tsize;
	size_t len;
	log_partition *lp = one_full_segment(&tsize, &len);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 2, ".log");
	ck_assert_int_eq(mkdir(p, 0755), 0); /* the new .log cannot be opened */
	make_batch(2, 2000, 60);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), -EISDIR);
	ck_assert_int_eq(rmdir(p), 0);
	check_unchanged(lp, len, tsize);
	append_rolls(lp, len);
}
END_TEST

/* A log whose next append rolls; files may not grow past the limit
 * limit_of(tsize, len) gives during that append: it fails with EFBIG and
 * leaves the log unchanged; with the limit gone it rolls. */
static void roll_fails_under_limit(rlim_t (*limit_of)(int64_t tsize, size_t len))
{
	int64_t tsize;
	size_t len;
	log_partition *lp = one_full_segment(&tsize, &len);
	make_batch(2, 2000, 60);
	int lrc = limit_files(limit_of(tsize, len));
	int64_t base;
	int rc = log_append(lp, bbuf, len, 0, 0, &base);
	unlimit_files();
	ck_assert_int_eq(lrc, 0);
	ck_assert_int_eq(rc, -EFBIG);
	check_unchanged(lp, len, tsize);
	append_rolls(lp, len);
}

/* The closing time index entry (12 bytes past tsize) does not fit. */
static rlim_t no_room_for_seal(int64_t tsize, size_t len)
{
	(void)len;
	return (rlim_t)tsize + 4;
}

/* The roll succeeds, the batch does not fit in the new segment. */
static rlim_t no_room_for_batch(int64_t tsize, size_t len)
{
	(void)tsize;
	return (rlim_t)len - 10;
}

START_TEST(roll_cannot_seal_timeindex)
{
	roll_fails_under_limit(no_room_for_seal);
}
END_TEST

START_TEST(first_append_after_roll_fails)
{
	roll_fails_under_limit(no_room_for_batch);
}
END_TEST

START_TEST(mid_batch_short_write_then_space_freed)
{
	cfg.index_interval_bytes = 1; /* an index entry with every batch */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t len = make_batch(3, 1000, 100);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	char lpath[PATH_MAX], ipath[PATH_MAX], tpath[PATH_MAX];
	tu_seg_path(lpath, sizeof lpath, pdir, 0, ".log");
	tu_seg_path(ipath, sizeof ipath, pdir, 0, ".index");
	tu_seg_path(tpath, sizeof tpath, pdir, 0, ".timeindex");
	int64_t isize = tu_file_size(ipath), tsize = tu_file_size(tpath);
	int lrc = limit_files(2 * len + len / 2);
	int rc = log_append(lp, bbuf, len, 0, 0, &base);
	unlimit_files();
	ck_assert_int_eq(lrc, 0);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert_int_eq(tu_file_size(lpath), (int64_t)(2 * len));
	ck_assert_int_eq(tu_file_size(ipath), isize);
	ck_assert_int_eq(tu_file_size(tpath), tsize);
	ck_assert_int_eq(log_end_offset(lp), 6);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	ck_assert_int_eq(base, 6);
	log_close(lp);
	/* an unclean reopen finds three whole batches */
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 9);
	log_close(lp);
}
END_TEST

START_TEST(checkpoint_write_failure_keeps_old_file)
{
	ck_assert_int_eq(log_io_write_atomic(dir, "ckpt", "0\n1\nold 1\n", 10, true), 0);
	char big[256];
	memset(big, 'x', sizeof big);
	int lrc = limit_files(20);
	int rc = log_io_write_atomic(dir, "ckpt", big, sizeof big, true);
	unlimit_files();
	ck_assert_int_eq(lrc, 0);
	ck_assert_int_eq(rc, -EFBIG);
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/ckpt", dir);
	size_t n;
	uint8_t *b = tu_read_file(p, &n);
	ck_assert_uint_eq(n, 10);
	ck_assert_int_eq(memcmp(b, "0\n1\nold 1\n", 10), 0);
	free(b);
	ck_assert_int_eq(tu_count_files(dir, ".tmp"), 0);
}
END_TEST

int main(void)
{
	tu_begin();
	Suite *s = suite_create("disk_full");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, index_short_write_leaves_no_torn_entry);
	tcase_add_test(tc, roll_cannot_create_segment);
	tcase_add_test(tc, roll_cannot_seal_timeindex);
	tcase_add_test(tc, first_append_after_roll_fails);
	tcase_add_test(tc, mid_batch_short_write_then_space_freed);
	tcase_add_test(tc, checkpoint_write_failure_keeps_old_file);
	tcase_add_test(tc, epoch_checkpoint_failure_pins_recovery_point);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_end();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
