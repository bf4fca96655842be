/*
 * test_truncate.c - a replica's truncation (log_truncate_to,
 * log_truncate_fully_and_start_at): mid-segment (indexes as if the cut
 * batches had never been written), at a straddling batch, across segments
 * (renamed *.deleted, a fetch holding one still reads it), at a segment's
 * base, at or past the log end (no-op), below the log start (refused); an
 * aborted transaction above the cut (.txnindex, last stable offset), the
 * epoch cache and the producer state after it (a sequence above the cut is
 * taken again); a flush in flight meanwhile; a failure after the commit
 * point; reopen (clean and unclean) giving the same state after each; and
 * a crash after each step of both, recovered by log_open to the whole
 * truncation (or none, before its commit point), never part of it.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "storage/fileio.h"
#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/retention.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/t-0", dir);
	log_config_defaults(&cfg);
}

static void teardown(void) { tu_rmrf(dir); }

static uint8_t bbuf[1 << 16];

static log_partition *open_start(const char *path, bool clean, int64_t rp, int64_t start)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(path, &cfg, clean, rp, start, 1000, &lp), 0);
	return lp;
}

static log_partition *open_at(const char *path, bool clean, int64_t rp)
{
	return open_start(path, clean, rp, -1);
}

/* Append n records as leader at epoch: plain (pid -1) or a producer's
 * batch at seq, transactional or not; timestamps ts.. */
static int64_t app(log_partition *lp, int n, int64_t pid, int32_t seq, bool txn, int32_t epoch, int64_t ts)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = ts, .ts_step = 1, .value_size = 20 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	if (pid >= 0)
		tu_batch_set_producer(bbuf, pid, 0, seq, txn);
	log_append_info info;
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, epoch, 1000, &info), 0);
	ck_assert(!info.duplicate);
	return info.base_offset;
}

static int64_t mark(log_partition *lp, int64_t pid, bool commit, int32_t epoch)
{
	int64_t off;
	ck_assert_int_eq(log_append_control(lp, pid, 0, 1, commit, epoch, 2000, &off), 0);
	return off;
}

static void state_at_leo(log_partition *lp, tu_log_state *st)
{
	log_set_high_watermark(lp, log_end_offset(lp));
	tu_log_state_get(lp, st);
}

/* The state of lp (high watermark at the log end) is the same after a
 * clean and after an unclean reopen (recovery point -1: every batch
 * checked); returns the log reopened. */
static log_partition *reopen_same(log_partition *lp, const char *path)
{
	tu_log_state a, b;
	state_at_leo(lp, &a);
	int64_t start = log_start_offset(lp); /* the broker's checkpoint */
	log_close(lp);
	lp = open_start(path, true, -1, start);
	state_at_leo(lp, &b);
	tu_log_state_assert_eq(&a, &b);
	tu_log_state_free(&b);
	log_close(lp);
	lp = open_start(path, false, -1, start);
	state_at_leo(lp, &b);
	tu_log_state_assert_eq(&a, &b);
	tu_log_state_free(&a);
	tu_log_state_free(&b);
	return lp;
}

static bool marker_exists(const char *path)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", path, LOG_TRUNCATION_FILE);
	return tu_file_size(p) >= 0;
}

static void assert_files_eq(const char *a, const char *b)
{
	size_t na, nb;
	uint8_t *pa = tu_read_file(a, &na), *pb = tu_read_file(b, &nb);
	ck_assert_ptr_nonnull(pa);
	ck_assert_ptr_nonnull(pb);
	ck_assert_uint_eq(na, nb);
	ck_assert(memcmp(pa, pb, na) == 0);
	free(pa);
	free(pb);
}

START_TEST(truncate_mid_segment)
{
	cfg.index_interval_bytes = 1; /* an index entry for every batch but the first */
	char ref[PATH_MAX];
	snprintf(ref, sizeof ref, "%s/ref-0", dir);
	log_partition *lp = open_at(pdir, false, -1), *r = open_at(ref, false, -1);
	for (int i = 0; i < 5; i++) {
		app(lp, 2, -1, 0, false, 1, 1000 * i);
		if (i < 3)
			app(r, 2, -1, 0, false, 1, 1000 * i);
	}
	ck_assert_int_eq(log_end_offset(lp), 10);
	ck_assert_int_eq(log_truncate_to(lp, 6, 1000), 0);
	ck_assert(!marker_exists(pdir));
	ck_assert_int_eq(log_end_offset(lp), 6);
	ck_assert_int_eq(log_size_bytes(lp), log_size_bytes(r));
	/* the files are those of a log that never had the two batches */
	const char *sfx[] = { ".log", ".index", ".timeindex" };
	for (int k = 0; k < 3; k++) {
		char a[PATH_MAX], b[PATH_MAX];
		tu_seg_path(a, sizeof a, pdir, 0, sfx[k]);
		tu_seg_path(b, sizeof b, ref, 0, sfx[k]);
		assert_files_eq(a, b);
	}
	int64_t off, ts;
	ck_assert_int_eq(log_offset_for_timestamp(lp, 3000, &off, &ts), 0);
	ck_assert_int_eq(off, -1);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, 5);
	ck_assert_int_eq(ts, 2001);
	log_read_result rr;
	ck_assert_int_eq(log_read(lp, 6, INT64_MAX, 1 << 20, true, &rr), 0);
	ck_assert_int_eq(rr.len, 0);
	ck_assert_int_eq(log_read(lp, 7, INT64_MAX, 1 << 20, true, &rr), LOG_ERR_OFFSET_OUT_OF_RANGE);
	/* the log goes on from there, a leader's batch of a new epoch */
	ck_assert_int_eq(app(lp, 3, -1, 0, false, 2, 9000), 6);
	ck_assert_int_eq(app(r, 3, -1, 0, false, 2, 9000), 6);
	for (int k = 0; k < 3; k++) {
		char a[PATH_MAX], b[PATH_MAX];
		tu_seg_path(a, sizeof a, pdir, 0, sfx[k]);
		tu_seg_path(b, sizeof b, ref, 0, sfx[k]);
		assert_files_eq(a, b);
	}
	log_close(r);
	lp = reopen_same(lp, pdir);
	ck_assert_int_eq(log_end_offset(lp), 9);
	log_close(lp);
}
END_TEST

START_TEST(truncate_straddling_batch)
{
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 5; i++)
		app(lp, 2, -1, 0, false, 1, 1000 * i); /* batches at 0 2 4 6 8 */
	/* 7 is inside the batch 6..7: it goes whole */
	ck_assert_int_eq(log_truncate_to(lp, 7, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 6);
	ck_assert_int_eq(log_truncate_to(lp, 5, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 4);
	/* a batch straddling the log start offset takes it down with it */
	log_set_high_watermark(lp, 4);
	ck_assert_int_eq(log_advance_start_offset(lp, 3), 0);
	ck_assert_int_eq(log_truncate_to(lp, 2, 1000), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_end_offset(lp), 4);
	ck_assert_int_eq(log_truncate_to(lp, 3, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 2);
	ck_assert_int_eq(log_start_offset(lp), 2);
	ck_assert_int_eq(log_high_watermark(lp), 2);
	ck_assert_int_le(log_recovery_point(lp), 2);
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

START_TEST(truncate_at_or_past_end_is_noop)
{
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 3; i++)
		app(lp, 2, 7, 2 * i, false, 1, 1000 * i);
	tu_log_state a, b;
	state_at_leo(lp, &a);
	ck_assert_int_eq(log_truncate_to(lp, 6, 1000), 0);
	ck_assert_int_eq(log_truncate_to(lp, 100, 1000), 0);
	ck_assert(!marker_exists(pdir));
	state_at_leo(lp, &b);
	tu_log_state_assert_eq(&a, &b);
	tu_log_state_free(&a);
	tu_log_state_free(&b);
	ck_assert_int_eq(log_truncate_to(lp, -1, 1000), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_end_offset(lp), 6);
	log_close(lp);
}
END_TEST

START_TEST(truncate_across_segments)
{
	cfg.segment_bytes = 250; /* two batches a segment: 0 4 8 12 16 */
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 10; i++)
		app(lp, 2, -1, 0, false, 1, 1000 * i);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 5);
	/* a fetch is sending from segment 12 */
	log_read_result held;
	ck_assert_int_eq(log_read(lp, 13, INT64_MAX, 1 << 20, true, &held), 0);
	ck_assert_int_gt(held.len, 0);
	int64_t size_before = log_size_bytes(lp);
	ck_assert_int_eq(log_truncate_to(lp, 6, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 6);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	ck_assert_int_eq(tu_count_files(pdir, ".log.deleted"), 3);
	ck_assert_int_lt(log_size_bytes(lp), size_before);
	log_deleted_files df;
	ck_assert_uint_ge(log_take_deleted_files(lp, &df), 3);
	ck_assert_int_eq(log_deleted_files_unlink(&df), 0);
	log_deleted_files_free(&df);
	uint8_t b[8];
	ck_assert_int_eq(pread(held.fd, b, 8, held.file_pos), 8);
	ck_assert_int_eq((int64_t)log_be64(b), 12);
	log_segment_release(held.segment);
	/* segment 4 is the active one again and fills up before rolling */
	ck_assert_int_eq(app(lp, 2, -1, 0, false, 2, 9000), 6);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	ck_assert_int_eq(app(lp, 2, -1, 0, false, 2, 9001), 8);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 3);
	lp = reopen_same(lp, pdir);
	/* at a segment's base: it stays, empty and active */
	ck_assert_int_eq(log_truncate_to(lp, 8, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 8);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 8, ".log");
	ck_assert_int_eq(tu_file_size(p), 0);
	ck_assert_int_eq(app(lp, 1, -1, 0, false, 2, 9002), 8);
	ck_assert_int_gt(tu_file_size(p), 0);
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

static int collect(void *arg, const log_aborted_txn *a)
{
	(*(int *)arg)++;
	(void)a;
	return 0;
}

START_TEST(truncate_aborted_txn_above)
{
	log_partition *lp = open_at(pdir, false, -1);
	app(lp, 2, 5, 0, true, 1, 1000);     /* 0-1 P5 txn */
	app(lp, 2, -1, 0, false, 1, 1000);   /* 2-3 */
	app(lp, 2, 6, 0, true, 1, 1000);     /* 4-5 P6 txn */
	ck_assert_int_eq(mark(lp, 6, true, 1), 6);
	app(lp, 2, 5, 2, true, 1, 1000);     /* 7-8 */
	ck_assert_int_eq(mark(lp, 5, false, 1), 9);
	app(lp, 2, -1, 0, false, 1, 1000);   /* 10-11 */
	log_set_high_watermark(lp, 12);
	ck_assert_int_eq(log_last_stable_offset(lp), 12);
	int n = 0;
	ck_assert_int_eq(log_aborted_txns(lp, 0, 12, collect, &n), 1);
	char tix[PATH_MAX];
	tu_seg_path(tix, sizeof tix, pdir, 0, ".txnindex");
	ck_assert_int_eq(tu_file_size(tix), LOG_TXNINDEX_ENTRY_SIZE);

	/* the abort marker goes: P5's transaction is open again */
	ck_assert_int_eq(log_truncate_to(lp, 9, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 9);
	ck_assert_int_eq(log_high_watermark(lp), 9);
	n = 0;
	ck_assert_int_eq(log_aborted_txns(lp, 0, 9, collect, &n), 0);
	ck_assert_int_le(tu_file_size(tix), 0);
	ck_assert_int_eq(log_producer_find(lp, 5)->txn_first_offset, 0);
	ck_assert_int_eq(log_producer_find(lp, 6)->txn_first_offset, -1);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	lp = reopen_same(lp, pdir);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	/* as leader: its abort comes again, at 9 */
	ck_assert_int_eq(mark(lp, 5, false, 2), 9);
	log_set_high_watermark(lp, 10);
	n = 0;
	ck_assert_int_eq(log_aborted_txns(lp, 0, 10, collect, &n), 1);
	ck_assert_int_eq(log_last_stable_offset(lp), 10);

	/* the commit marker goes: P6's transaction is open again, and with
	 * P5's (aborted at 9, cut too) they bound the last stable offset */
	ck_assert_int_eq(log_truncate_to(lp, 6, 1000), 0);
	ck_assert_int_eq(log_producer_find(lp, 6)->txn_first_offset, 4);
	ck_assert_int_eq(log_producer_find(lp, 5)->txn_first_offset, 0);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

static void assert_end_for(log_partition *lp, int32_t epoch, int32_t want_epoch, int64_t want_end)
{
	int32_t e;
	int64_t end;
	log_end_offset_for_epoch(lp, epoch, &e, &end);
	ck_assert_int_eq(e, want_epoch);
	ck_assert_int_eq(end, want_end);
}

START_TEST(truncate_epoch_cache)
{
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 5; i++)
		app(lp, 2, -1, 0, false, 1, 1000); /* epoch 1: 0-9 */
	for (int i = 0; i < 5; i++)
		app(lp, 2, -1, 0, false, 3, 1000); /* epoch 3: 10-19 */
	for (int i = 0; i < 5; i++)
		app(lp, 2, -1, 0, false, 5, 1000); /* epoch 5: 20-29 */
	ck_assert_int_eq(log_truncate_to(lp, 16, 1000), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 3);
	assert_end_for(lp, 3, 3, 16);
	assert_end_for(lp, 1, 1, 10);
	assert_end_for(lp, 5, -1, -1);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", pdir, LOG_EPOCH_FILE);
	size_t len;
	uint8_t *text = tu_read_file(p, &len);
	ck_assert_uint_eq(len, strlen("0\n2\n1 0\n3 10\n"));
	ck_assert(memcmp(text, "0\n2\n1 0\n3 10\n", len) == 0);
	free(text);
	lp = reopen_same(lp, pdir);
	/* at the start of epoch 3: it goes */
	ck_assert_int_eq(log_truncate_to(lp, 10, 1000), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 1);
	assert_end_for(lp, 1, 1, 10);
	assert_end_for(lp, 3, -1, -1);
	/* a new leader epoch then starts there */
	ck_assert_int_eq(log_assign_leader_epoch(lp, 6), 0);
	assert_end_for(lp, 1, 1, 10);
	assert_end_for(lp, 6, 6, 10);
	app(lp, 2, -1, 0, false, 6, 1000);
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

START_TEST(truncate_producer_state)
{
	cfg.segment_bytes = 300; /* rolls, so snapshots above and below the cut */
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 8; i++)
		app(lp, 2, 7, 2 * i, false, 1, 1000 + i); /* seq 2i..2i+1 at offsets 2i.. */
	int nsnap = tu_count_files(pdir, ".snapshot");
	ck_assert_int_ge(nsnap, 2);
	ck_assert_int_eq(log_truncate_to(lp, 6, 1000), 0);
	/* no snapshot above the cut is left */
	int64_t *offs;
	size_t n;
	ck_assert_int_eq(log_pstate_list_snapshots(pdir, &offs, &n), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_le(offs[i], 6);
	free(offs);
	const log_producer_entry *e = log_producer_find(lp, 7);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(log_pentry_last(e)->last_seq, 5);
	ck_assert_int_eq(log_pentry_last(e)->last_offset, 5);
	/* sequences 6-7 were above the cut: taken again, not a duplicate */
	tu_batch_opts o = { .nrecords = 2, .base_ts = 5000, .ts_step = 1, .value_size = 20 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	tu_batch_set_producer(bbuf, 7, 0, 6, false);
	log_append_info info;
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, 2, 1000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(info.base_offset, 6);
	/* 4-5 is still a duplicate, 10 out of order */
	len = tu_batch(bbuf, sizeof bbuf, &o);
	tu_batch_set_producer(bbuf, 7, 0, 4, false);
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, 2, 1000, &info), 0);
	ck_assert(info.duplicate);
	ck_assert_int_eq(info.base_offset, 4);
	len = tu_batch(bbuf, sizeof bbuf, &o);
	tu_batch_set_producer(bbuf, 7, 0, 10, false);
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, 2, 1000, &info), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	lp = reopen_same(lp, pdir);
	/* below every snapshot: rebuilt from the first segment */
	ck_assert_int_eq(log_truncate_to(lp, 1, 1000), 0);
	ck_assert_int_eq(log_end_offset(lp), 0);
	ck_assert_ptr_null(log_producer_find(lp, 7));
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

START_TEST(truncate_during_flush)
{
	cfg.flush_messages = 1;
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 5; i++)
		app(lp, 2, -1, 0, false, 1, 1000);
	log_flush_job *job;
	ck_assert_int_eq(log_flush_begin(lp, &job), 0); /* target 10 */
	ck_assert_int_eq(log_truncate_to(lp, 4, 1000), 0);
	for (int i = 0; i < 4; i++)
		app(lp, 2, -1, 0, false, 2, 1000); /* 4..11: not what the job syncs */
	ck_assert_int_eq(log_flush_run(job), 0);
	ck_assert_int_eq(log_flush_end(lp, job), 0);
	ck_assert_int_eq(log_recovery_point(lp), 4);
	ck_assert(log_flush_due(lp, INT64_MAX / 2));
	ck_assert_int_eq(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 12);
	log_close(lp);
}
END_TEST

START_TEST(full_truncation)
{
	cfg.segment_bytes = 250;
	log_partition *lp = open_at(pdir, false, -1);
	for (int i = 0; i < 6; i++)
		app(lp, 2, 7, 2 * i, true, 1, 1000); /* segments 0 4 8 */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 3);
	log_read_result held;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1 << 20, true, &held), 0);
	/* at the base of an existing segment: its name is taken over */
	ck_assert_int_eq(log_truncate_fully_and_start_at(lp, 4, 2000), 0);
	ck_assert(!marker_exists(pdir));
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot"), 0);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 4, ".log");
	ck_assert_int_eq(tu_file_size(p), 0);
	ck_assert_int_eq(log_start_offset(lp), 4);
	ck_assert_int_eq(log_end_offset(lp), 4);
	ck_assert_int_eq(log_high_watermark(lp), 4);
	ck_assert_int_eq(log_recovery_point(lp), 4);
	ck_assert_int_eq(log_size_bytes(lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), -1);
	ck_assert_uint_eq(log_producer_count(lp), 0);
	ck_assert_int_eq(log_last_stable_offset(lp), 4);
	uint8_t b[8];
	ck_assert_int_eq(pread(held.fd, b, 8, held.file_pos), 8); /* the fetch still reads */
	log_segment_release(held.segment);
	/* a follower's batch at 4 */
	tu_batch_opts o = { .nrecords = 2, .base_ts = 1000, .ts_step = 1, .value_size = 20 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	proto_batch_set_base_offset(bbuf, 4);
	proto_batch_set_leader_epoch(bbuf, 3);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(lp, bbuf, len, 2000, &fi), 0);
	ck_assert_int_eq(log_end_offset(lp), 6);
	lp = reopen_same(lp, pdir);
	ck_assert_int_eq(log_start_offset(lp), 4);
	/* below and above the current offsets */
	ck_assert_int_eq(log_truncate_fully_and_start_at(lp, 1, 2000), 0);
	ck_assert_int_eq(log_end_offset(lp), 1);
	lp = reopen_same(lp, pdir);
	ck_assert_int_eq(log_start_offset(lp), 1);
	ck_assert_int_eq(log_truncate_fully_and_start_at(lp, 1000, 2000), 0);
	lp = reopen_same(lp, pdir);
	ck_assert_int_eq(log_start_offset(lp), 1000);
	ck_assert_int_eq(log_end_offset(lp), 1000);
	ck_assert_int_eq(log_truncate_fully_and_start_at(lp, -1, 2000), -EINVAL);
	log_close(lp);
}
END_TEST

/* ---- crashes ---- */

/*
 * A log over 4 segments with epochs 1-3, an idempotent producer (7), an
 * aborted transaction that ends above the cut (8), a committed one below
 * (9), a snapshot at each roll; closed cleanly. The cut (offset 18) falls
 * inside the batch 17-19, in a middle segment; 31 is the log end.
 */
static int64_t build(const char *path)
{
	log_partition *lp = open_at(path, false, -1);
	for (int i = 0; i < 3; i++)
		app(lp, 2, 7, 2 * i, false, 1, 1000 + i); /* 0-5 */
	app(lp, 2, 9, 0, true, 1, 1100);                 /* 6-7 */
	mark(lp, 9, true, 2);                             /* 8 */
	app(lp, 2, 8, 0, true, 2, 1200);                 /* 9-10 */
	for (int i = 3; i < 6; i++)
		app(lp, 2, 7, 2 * i, false, 2, 1000 + i); /* 11-16 */
	app(lp, 3, 7, 12, false, 3, 1300);               /* 17-19 */
	app(lp, 2, 8, 2, true, 3, 1400);                 /* 20-21 */
	mark(lp, 8, false, 3);                            /* 22 */
	for (int i = 0; i < 4; i++)
		app(lp, 2, -1, 0, false, 3, 1500 + i);   /* 23-30 */
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	return leo;
}

static int crash_at;

static void crash_hook(log_partition *lp, int step)
{
	(void)lp;
	if (step == crash_at)
		_exit(0);
}

/* In a child: open path, truncate (fully when full) with a crash after
 * step, without closing. */
static void crash_in_child(const char *path, bool full, int64_t offset, int step)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		log_partition *lp;
		if (log_open(path, &cfg, true, -1, -1, 1000, &lp) != 0)
			_exit(2);
		crash_at = step;
		lp->truncate_hook = crash_hook;
		int rc = full ? log_truncate_fully_and_start_at(lp, offset, 1000) : log_truncate_to(lp, offset, 1000);
		_exit(rc == 0 ? 3 : 4); /* the step was never reached */
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

/* The state of the log at path after an unclean open with recovery
 * point rp (a checkpoint from before the truncation, stale). */
static void state_after_crash(const char *path, int64_t rp, tu_log_state *st)
{
	log_partition *lp = open_at(path, false, rp);
	ck_assert(!marker_exists(path));
	state_at_leo(lp, st);
	/* and it stays so */
	lp = reopen_same(lp, path);
	log_close(lp);
}

static void crash_case(bool full, int64_t offset, int first_step, int last_step)
{
	cfg.segment_bytes = 300;
	char ref[PATH_MAX], path[PATH_MAX];
	snprintf(ref, sizeof ref, "%s/ref-0", dir);
	/* what it was, and what the whole truncation gives */
	int64_t leo = build(ref);
	tu_log_state before, after, got;
	log_partition *lp = open_at(ref, true, -1);
	state_at_leo(lp, &before);
	int rc = full ? log_truncate_fully_and_start_at(lp, offset, 1000) : log_truncate_to(lp, offset, 1000);
	ck_assert_int_eq(rc, 0);
	log_close(lp);
	state_after_crash(ref, -1, &after);
	ck_assert_int_eq(after.leo, full ? offset : 17);
	for (int step = first_step; step <= last_step; step++) {
		snprintf(path, sizeof path, "%s/crash%d-0", dir, step);
		ck_assert_int_eq(build(path), leo);
		crash_in_child(path, full, offset, step);
		state_after_crash(path, leo, &got);
		/* before the commit point: as it was; after: all of it */
		tu_log_state_assert_eq(step == first_step ? &before : &after, &got);
		tu_log_state_free(&got);
	}
	tu_log_state_free(&before);
	tu_log_state_free(&after);
}

START_TEST(crash_mid_truncation)
{
	crash_case(false, 18, 1, 7);
}
END_TEST

START_TEST(crash_mid_full_truncation)
{
	crash_case(true, 40, 0, 6);
}
END_TEST

/* A crash while log_open completes a truncation: doing it again is fine. */
START_TEST(crash_during_redo)
{
	cfg.segment_bytes = 300;
	int64_t leo = build(pdir);
	crash_in_child(pdir, false, 18, 3);
	log_truncation t;
	ck_assert_int_eq(log_truncation_redo(pdir, &t), 0);
	ck_assert(t.pending);
	ck_assert_int_eq(t.log_end_offset, 17);
	ck_assert_int_eq(log_truncation_redo(pdir, &t), 0);
	ck_assert(marker_exists(pdir));
	tu_log_state st;
	state_after_crash(pdir, leo, &st);
	ck_assert_int_eq(st.leo, 17);
	ck_assert_int_eq(st.naborted, 0);
	tu_log_state_free(&st);
}
END_TEST

/* A failure after the commit point (a rename refused: a directory in the
 * way) stops appends until the reopen that completes the truncation. */
static void block_rename_hook(log_partition *lp, int step)
{
	if (step != 2)
		return;
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, lp->dir, lp->segs[lp->nseg - 1]->base_offset, ".log.deleted");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	char q[PATH_MAX + 8];
	snprintf(q, sizeof q, "%s/x", p);
	FILE *f = fopen(q, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
}

START_TEST(failure_after_commit)
{
	cfg.segment_bytes = 300;
	int64_t leo = build(pdir);
	ck_assert_int_eq(leo, 31);
	log_partition *lp = open_at(pdir, true, -1);
	lp->truncate_hook = block_rename_hook;
	ck_assert_int_lt(log_truncate_to(lp, 18, 1000), 0);
	lp->truncate_hook = NULL;
	ck_assert(marker_exists(pdir));
	int64_t base;
	tu_batch_opts o = { .nrecords = 1, .base_ts = 1000, .ts_step = 1, .value_size = 20 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	ck_assert_int_eq(log_append(lp, bbuf, len, 4, 1000, &base), -EIO);
	ck_assert_int_eq(log_truncate_to(lp, 10, 1000), -EIO);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(lp, bbuf, len, 1000, &fi), -EIO);
	log_close(lp);
	/* a clean close, yet the open completes the truncation first */
	lp = open_at(pdir, true, leo);
	ck_assert(!marker_exists(pdir));
	ck_assert_int_eq(log_end_offset(lp), 17);
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

/* A truncation-pending file that does not parse: every segment is
 * checked, and the file goes. */
START_TEST(unreadable_marker)
{
	cfg.segment_bytes = 300;
	int64_t leo = build(pdir);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", pdir, LOG_TRUNCATION_FILE);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("0\n17 banana\n", f);
	fclose(f);
	log_truncation t;
	ck_assert_int_eq(log_truncation_redo(pdir, &t), 0);
	ck_assert(t.pending);
	ck_assert_int_eq(t.base, -2);
	log_partition *lp = open_at(pdir, true, leo);
	ck_assert(!marker_exists(pdir));
	ck_assert_int_eq(log_end_offset(lp), leo);
	ck_assert_int_eq(log_recovery_point(lp), 0); /* all checked: nothing known flushed */
	lp = reopen_same(lp, pdir);
	log_close(lp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("truncate");
	TCase *tc = tcase_create("truncate");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, truncate_mid_segment);
	tcase_add_test(tc, truncate_straddling_batch);
	tcase_add_test(tc, truncate_at_or_past_end_is_noop);
	tcase_add_test(tc, truncate_across_segments);
	tcase_add_test(tc, truncate_aborted_txn_above);
	tcase_add_test(tc, truncate_epoch_cache);
	tcase_add_test(tc, truncate_producer_state);
	tcase_add_test(tc, truncate_during_flush);
	tcase_add_test(tc, full_truncation);
	tcase_add_test(tc, crash_mid_truncation);
	tcase_add_test(tc, crash_mid_full_truncation);
	tcase_add_test(tc, crash_during_redo);
	tcase_add_test(tc, failure_after_commit);
	tcase_add_test(tc, unreadable_marker);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
