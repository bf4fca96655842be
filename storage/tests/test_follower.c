/*
 * test_follower.c - a replica's append (log_append_follower): a follower
 * fed a leader's batches (data, idempotent, transactional, markers, several
 * leader epochs) ends with the leader's bytes, epochs, producers, aborted
 * transactions and last stable offset, and as leader later recognises a
 * duplicate retry; offsets that do not follow, CRC damage and bad framing
 * are refused with nothing written; a partial trailing batch is left out;
 * rolls by size, time and relative offset; a failed write leaves nothing;
 * reopening (clean and unclean) gives the same state. The epoch cache on
 * becoming leader (log_assign_leader_epoch, KAFKA-7415) and
 * OffsetsForLeaderEpoch's answers (Kafka's endOffsetFor).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "protocol/records.h"
#include "storage/fileio.h"
#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char ldir[PATH_MAX], fdir[PATH_MAX];
static log_config cfg;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(ldir, sizeof ldir, "%s/leader-0", dir);
	snprintf(fdir, sizeof fdir, "%s/follower-0", dir);
	log_config_defaults(&cfg);
}

static void teardown(void) { tu_rmrf(dir); }

static uint8_t bbuf[1 << 16];

/* A batch of n records at bbuf as a producer sends it (pid -1: plain). */
static size_t pbatch(int n, int64_t pid, int16_t epoch, int32_t seq, bool txn)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = 1000, .ts_step = 1, .value_size = 10 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	if (pid >= 0)
		tu_batch_set_producer(bbuf, pid, epoch, seq, txn);
	return len;
}

/* The same as a leader wrote it: base offset and partition leader epoch set. */
static size_t fbatch(uint8_t *out, int n, int64_t base, int32_t epoch, int64_t pid, int32_t seq, bool txn)
{
	size_t len = pbatch(n, pid, 0, seq, txn);
	proto_batch_set_base_offset(bbuf, base);
	proto_batch_set_leader_epoch(bbuf, epoch);
	memcpy(out, bbuf, len);
	return len;
}

static void lapp(log_partition *lp, int n, int64_t pid, int32_t seq, bool txn, int32_t epoch)
{
	log_append_info info;
	size_t len = pbatch(n, pid, 0, seq, txn);
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, epoch, 1000, &info), 0);
	ck_assert(!info.duplicate);
}

static void lmark(log_partition *lp, int64_t pid, bool commit, int32_t epoch)
{
	int64_t off;
	ck_assert_int_eq(log_append_control(lp, pid, 0, 3, commit, epoch, 2000, &off), 0);
}

/*
 * A leader log of mixed batches over epochs 1, 2 and 4: plain, idempotent
 * (7), an aborted transaction (8), a committed one (9), one still open
 * (10). *out gets every byte of it (caller frees).
 */
static log_partition *leader_log(uint8_t **out, size_t *len)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(ldir, &cfg, false, -1, -1, 1000, &lp), 0);
	lapp(lp, 3, -1, 0, false, 1);
	lapp(lp, 2, 7, 0, false, 1);
	lapp(lp, 2, 8, 0, true, 2);
	lapp(lp, 1, 7, 2, false, 2);
	lapp(lp, 1, 8, 2, true, 2);
	lmark(lp, 8, false, 2);
	lapp(lp, 3, 9, 0, true, 4);
	lmark(lp, 9, true, 4);
	lapp(lp, 1, 10, 0, true, 4);
	lapp(lp, 2, 7, 3, false, 4);
	log_set_high_watermark(lp, log_end_offset(lp));
	tu_log_state st;
	tu_log_state_get(lp, &st);
	*out = st.bytes;
	*len = st.nbytes;
	return lp;
}

/* The state of lp with the high watermark at the log end. */
static void state_at_leo(log_partition *lp, tu_log_state *st)
{
	log_set_high_watermark(lp, log_end_offset(lp));
	tu_log_state_get(lp, st);
}

START_TEST(follower_copies_leader)
{
	uint8_t *all;
	size_t n;
	log_partition *leader = leader_log(&all, &n);
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 1000, &f), 0);
	/* fed as fetches cut at max bytes would: a growing window, whatever
	 * whole batches it holds are taken, the rest comes again */
	size_t taken = 0, calls = 0;
	int32_t batches = 0;
	for (size_t end = 37; taken < n; end = end + 37 < n ? end + 37 : n) {
		log_append_follower_info fi;
		ck_assert_int_eq(log_append_follower(f, all + taken, end - taken, 1000, &fi), 0);
		if (fi.batches > 0) {
			ck_assert_int_eq(fi.first_offset, log_end_offset(f) - (fi.last_offset - fi.first_offset + 1));
			ck_assert_int_eq(fi.last_offset, log_end_offset(f) - 1);
		} else {
			ck_assert_uint_eq(fi.bytes, 0);
			ck_assert_int_eq(fi.first_offset, -1);
		}
		taken += fi.bytes;
		batches += fi.batches;
		calls++;
	}
	ck_assert_int_eq(batches, 10);
	ck_assert_uint_gt(calls, 10);
	tu_log_state ls, fs;
	state_at_leo(leader, &ls);
	state_at_leo(f, &fs);
	tu_log_state_assert_eq(&ls, &fs);
	/* what the state holds, spelled out */
	ck_assert_int_eq(fs.latest_epoch, 4);
	ck_assert_int_eq(fs.naborted, 1);
	ck_assert_int_eq(fs.aborted[0].producer_id, 8);
	ck_assert_int_eq(fs.lso, log_producer_find(f, 10)->txn_first_offset);
	ck_assert_uint_eq(fs.nproducers, 4);
	int32_t e;
	int64_t end;
	log_end_offset_for_epoch(f, 1, &e, &end);
	ck_assert_int_eq(e, 1);
	ck_assert_int_eq(end, 5); /* epoch 2 starts with producer 8's batch */
	tu_log_state_free(&ls);

	/* reopened, clean and unclean: the same */
	log_close(f);
	ck_assert_int_eq(log_open(fdir, &cfg, true, -1, -1, 1000, &f), 0);
	tu_log_state rs;
	state_at_leo(f, &rs);
	tu_log_state_assert_eq(&fs, &rs);
	tu_log_state_free(&rs);
	log_close(f);
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 1000, &f), 0);
	state_at_leo(f, &rs);
	tu_log_state_assert_eq(&fs, &rs);
	tu_log_state_free(&rs);

	/* leader now: producer 7's retry of its last batch (seq 3-4) is a
	 * duplicate, the next sequence is taken, a gap refused */
	int64_t leo = log_end_offset(f);
	log_append_info info;
	size_t len = pbatch(2, 7, 0, 3, false);
	ck_assert_int_eq(log_append_checked(f, bbuf, len, 5, 3000, &info), 0);
	ck_assert(info.duplicate);
	ck_assert_int_eq(info.last_offset, leo - 1);
	ck_assert_int_eq(info.base_offset, leo - 2);
	ck_assert_int_eq(log_end_offset(f), leo);
	len = pbatch(1, 7, 0, 7, false);
	ck_assert_int_eq(log_append_checked(f, bbuf, len, 5, 3000, &info), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	len = pbatch(1, 7, 0, 5, false);
	ck_assert_int_eq(log_append_checked(f, bbuf, len, 5, 3000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(info.base_offset, leo);
	/* producer 10's transaction is still open: a plain write is refused */
	len = pbatch(1, 10, 0, 1, false);
	ck_assert_int_eq(log_append_checked(f, bbuf, len, 5, 3000, &info), LOG_ERR_INVALID_TXN_STATE);
	tu_log_state_free(&fs);
	free(all);
	log_close(f);
	log_close(leader);
}
END_TEST

/* The files of the follower's first segment hold size bytes. */
static void assert_log_bytes(int64_t size)
{
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, fdir, 0, ".log");
	ck_assert_int_eq(tu_file_size(p), size);
}

START_TEST(follower_refuses_offsets)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	uint8_t in[4096];
	size_t a = fbatch(in, 3, 0, 1, -1, 0, false);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(f, in, a, 0, &fi), 0);
	ck_assert_int_eq(log_end_offset(f), 3);
	int64_t size = log_size_bytes(f);
	/* below the log end offset: refused, nothing of the input written */
	size_t len = fbatch(in, 2, 2, 1, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_UNEXPECTED_OFFSET);
	ck_assert_int_eq(fi.batches, 0);
	ck_assert_int_eq(fi.last_offset, -1);
	/* a good first batch, a second going backwards: neither written */
	len = fbatch(in, 2, 3, 1, -1, 0, false);
	len += fbatch(in + len, 2, 4, 1, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_UNEXPECTED_OFFSET);
	/* the same offset twice */
	len = fbatch(in, 1, 3, 1, -1, 0, false);
	len += fbatch(in + len, 1, 3, 1, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_UNEXPECTED_OFFSET);
	ck_assert_int_eq(log_end_offset(f), 3);
	ck_assert_int_eq(log_size_bytes(f), size);
	assert_log_bytes(size);
	/* a gap (the leader's compaction removed 3..9) is taken */
	len = fbatch(in, 2, 10, 1, -1, 0, false);
	len += fbatch(in + len, 1, 14, 1, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 2);
	ck_assert_int_eq(fi.first_offset, 10);
	ck_assert_int_eq(fi.last_offset, 14);
	ck_assert_int_eq(log_end_offset(f), 15);
	log_read_result r;
	ck_assert_int_eq(log_read(f, 5, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, size); /* offset 5 reads from the batch at 10 */
	log_segment_release(r.segment);
	log_close(f);
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	ck_assert_int_eq(log_end_offset(f), 15);
	log_close(f);
}
END_TEST

START_TEST(follower_refuses_corrupt)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	uint8_t in[4096];
	size_t a = fbatch(in, 2, 0, 1, -1, 0, false);
	size_t len = a + fbatch(in + a, 2, 2, 1, -1, 0, false);
	log_append_follower_info fi;
	/* a flipped byte in the second batch's records */
	in[a + 70] ^= 0x40;
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_CORRUPT);
	ck_assert_int_eq(fi.batches, 0);
	ck_assert_int_eq(log_end_offset(f), 0);
	assert_log_bytes(0);
	in[a + 70] ^= 0x40;
	/* magic 1, fixed CRC */
	in[a + PROTO_BATCH_OFF_MAGIC] = 1;
	tu_batch_fix_crc(in + a);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_CORRUPT);
	in[a + PROTO_BATCH_OFF_MAGIC] = 2;
	tu_batch_fix_crc(in + a);
	/* a batch length below the header, even as the last, partial one */
	log_put_be32(in + a + PROTO_BATCH_OFF_LENGTH, 30);
	ck_assert_int_eq(log_append_follower(f, in, a + 12, 0, &fi), LOG_ERR_CORRUPT);
	log_put_be32(in + a + PROTO_BATCH_OFF_LENGTH, (uint32_t)(len - a - 12));
	/* a negative last offset delta */
	log_put_be32(in + a + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)-3);
	tu_batch_fix_crc(in + a);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), LOG_ERR_CORRUPT);
	ck_assert_int_eq(log_end_offset(f), 0);
	assert_log_bytes(0);
	/* a last offset with no offset after it */
	size_t m = fbatch(in + len, 2, INT64_MAX - 1, 1, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in + len, m, 0, &fi), LOG_ERR_CORRUPT);
	ck_assert_int_eq(log_end_offset(f), 0);
	/* repaired, both go in */
	log_put_be32(in + a + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 1);
	tu_batch_fix_crc(in + a);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 2);
	ck_assert_int_eq(log_end_offset(f), 4);
	log_close(f);
}
END_TEST

START_TEST(follower_partial_tail)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	uint8_t in[4096];
	size_t a = fbatch(in, 2, 0, 1, -1, 0, false);
	size_t b = fbatch(in + a, 3, 2, 1, -1, 0, false);
	size_t c = fbatch(in + a + b, 1, 5, 1, -1, 0, false);
	log_append_follower_info fi;
	/* nothing whole: taken is nothing, not an error */
	ck_assert_int_eq(log_append_follower(f, in, 0, 0, &fi), 0);
	ck_assert_int_eq(log_append_follower(f, in, 11, 0, &fi), 0);
	ck_assert_int_eq(log_append_follower(f, in, a - 1, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 0);
	ck_assert_int_eq(log_end_offset(f), 0);
	assert_log_bytes(0);
	/* two whole batches and 30 bytes of the third */
	ck_assert_int_eq(log_append_follower(f, in, a + b + 30, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 2);
	ck_assert_uint_eq(fi.bytes, a + b);
	ck_assert_int_eq(fi.first_offset, 0);
	ck_assert_int_eq(fi.last_offset, 4);
	ck_assert_int_eq(log_end_offset(f), 5);
	assert_log_bytes((int64_t)(a + b));
	/* the rest when it comes */
	ck_assert_int_eq(log_append_follower(f, in + a + b, c, 0, &fi), 0);
	ck_assert_int_eq(log_end_offset(f), 6);
	log_close(f);
}
END_TEST

START_TEST(follower_rolls)
{
	uint8_t in[8192];
	size_t one = fbatch(in, 2, 0, 1, -1, 0, false);
	cfg.segment_bytes = (int64_t)(one * 2); /* two batches a segment */
	cfg.segment_ms = 1000000;
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	size_t len = 0;
	for (int i = 0; i < 5; i++)
		len += fbatch(in + len, 2, 2 * i, 1, 5, 2 * i, false);
	log_append_follower_info fi;
	/* one append rolls at most once, before it: 5 batches in a row go together */
	ck_assert_int_eq(log_append_follower(f, in, one, 0, &fi), 0);
	ck_assert_int_eq(log_append_follower(f, in + one, one, 0, &fi), 0);
	ck_assert_int_eq(log_append_follower(f, in + 2 * one, one, 0, &fi), 0);
	ck_assert_int_eq(tu_count_files(fdir, ".log"), 2);
	ck_assert_int_eq(log_append_follower(f, in + 3 * one, 2 * one, 0, &fi), 0);
	ck_assert_int_eq(tu_count_files(fdir, ".log"), 3);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, fdir, 4, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)one);
	tu_seg_path(p, sizeof p, fdir, 6, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)(2 * one));
	/* the producer snapshot written at each roll */
	tu_seg_path(p, sizeof p, fdir, 6, ".snapshot");
	ck_assert_int_ge(tu_file_size(p), 10);
	/* after a gap: the new segment is named after its first batch */
	len = fbatch(in, 1, 100, 2, -1, 0, false);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	tu_seg_path(p, sizeof p, fdir, 100, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)len);
	ck_assert_int_eq(log_end_offset(f), 101);
	/* by time: batch timestamps against the segment's first (segment.ms) */
	cfg.segment_bytes = 1 << 20;
	cfg.segment_ms = 500;
	log_set_config(f, &cfg);
	len = fbatch(in, 1, 101, 2, -1, 0, false);
	log_put_be64(in + PROTO_BATCH_OFF_MAX_TIMESTAMP, 1501);
	tu_batch_fix_crc(in);
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	tu_seg_path(p, sizeof p, fdir, 101, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)len);
	log_close(f);
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	ck_assert_int_eq(log_end_offset(f), 102);
	ck_assert_int_eq(log_latest_epoch(f), 2);
	log_close(f);
}
END_TEST

/* Relative offsets stay within int32: a batch far past an empty segment's
 * base gets its own segment, and a batch too far past the first of the
 * same input waits for the next call. */
START_TEST(follower_far_offsets)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	uint8_t in[4096];
	int64_t far = 3000000000LL;
	size_t a = fbatch(in, 1, far, 1, -1, 0, false);
	size_t b = fbatch(in + a, 1, far + INT32_MAX + 10LL, 1, -1, 0, false);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(f, in, a + b, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 1);
	ck_assert_uint_eq(fi.bytes, a);
	ck_assert_int_eq(log_end_offset(f), far + 1);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, fdir, far, ".log");
	ck_assert_int_eq(tu_file_size(p), (int64_t)a);
	ck_assert_int_eq(log_append_follower(f, in + a, b, 0, &fi), 0);
	ck_assert_int_eq(fi.batches, 1);
	ck_assert_int_eq(log_end_offset(f), far + INT32_MAX + 11LL);
	ck_assert_int_eq(tu_count_files(fdir, ".log"), 3);
	log_close(f);
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	ck_assert_int_eq(log_end_offset(f), far + INT32_MAX + 11LL);
	log_read_result r;
	ck_assert_int_eq(log_read(f, far, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.len, (int32_t)a);
	log_segment_release(r.segment);
	log_close(f);
}
END_TEST

START_TEST(follower_failed_write_leaves_nothing)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	uint8_t in[4096];
	size_t a = fbatch(in, 2, 0, 1, 7, 0, false);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(f, in, a, 0, &fi), 0);
	tu_log_state before;
	state_at_leo(f, &before);
	/* producer 7 goes on in epoch 3, producer 8 starts a transaction */
	size_t len = fbatch(in, 2, 2, 3, 7, 2, false);
	len += fbatch(in + len, 2, 4, 3, 8, 0, true);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = a + 20;
	/* no check assertion while the limit holds (CK_FORK=no writes a file) */
	int lrc = setrlimit(RLIMIT_FSIZE, &lim);
	int rc = log_append_follower(f, in, len, 0, &fi);
	setrlimit(RLIMIT_FSIZE, &old);
	ck_assert_int_eq(lrc, 0);
	ck_assert(rc == -EFBIG || rc == -ENOSPC);
	ck_assert_int_eq(fi.batches, 0);
	tu_log_state after;
	state_at_leo(f, &after);
	tu_log_state_assert_eq(&before, &after);
	assert_log_bytes((int64_t)a);
	/* and it goes in once there is room */
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	ck_assert_int_eq(log_latest_epoch(f), 3);
	ck_assert_int_eq(log_producer_find(f, 8)->txn_first_offset, 4);
	tu_log_state_free(&before);
	tu_log_state_free(&after);
	log_close(f);
}
END_TEST

static void assert_epoch_file(const char *want)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", fdir, LOG_EPOCH_FILE);
	size_t len;
	uint8_t *text = tu_read_file(p, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert(memcmp(text, want, len) == 0);
	free(text);
}

static void assert_end_for(log_partition *lp, int32_t epoch, int32_t want_epoch, int64_t want_end)
{
	int32_t e;
	int64_t end;
	log_end_offset_for_epoch(lp, epoch, &e, &end);
	ck_assert_int_eq(e, want_epoch);
	ck_assert_int_eq(end, want_end);
}

START_TEST(assign_leader_epoch)
{
	log_partition *f;
	ck_assert_int_eq(log_open(fdir, &cfg, false, -1, -1, 0, &f), 0);
	/* nothing known: every answer undefined; an epoch with no data yet */
	assert_end_for(f, 0, -1, -1);
	ck_assert_int_eq(log_assign_leader_epoch(f, -1), -EINVAL);
	ck_assert_int_eq(log_assign_leader_epoch(f, 0), 0);
	assert_end_for(f, 0, 0, 0);
	/* follower of epoch 1 for 5 records */
	uint8_t in[4096];
	size_t len = fbatch(in, 5, 0, 1, -1, 0, false);
	log_append_follower_info fi;
	ck_assert_int_eq(log_append_follower(f, in, len, 0, &fi), 0);
	assert_epoch_file("0\n1\n1 0\n"); /* epoch 0 began nothing: replaced */
	/* leader of epoch 3: answers for 3 before any append */
	ck_assert_int_eq(log_assign_leader_epoch(f, 3), 0);
	assert_epoch_file("0\n2\n1 0\n3 5\n");
	ck_assert_int_eq(log_latest_epoch(f), 3);
	assert_end_for(f, 3, 3, 5);
	assert_end_for(f, 1, 1, 5);
	assert_end_for(f, 2, 1, 5);
	/* lower or equal epochs change nothing */
	ck_assert_int_eq(log_assign_leader_epoch(f, 2), 0);
	ck_assert_int_eq(log_assign_leader_epoch(f, 3), 0);
	assert_epoch_file("0\n2\n1 0\n3 5\n");
	/* its first append as leader neither */
	int64_t base;
	len = pbatch(2, -1, 0, 0, false);
	ck_assert_int_eq(log_append(f, bbuf, len, 3, 0, &base), 0);
	ck_assert_int_eq(base, 5);
	assert_epoch_file("0\n2\n1 0\n3 5\n");
	assert_end_for(f, 3, 3, 7);
	/* leader again at 4 with nothing appended in between: 4 starts at 7 */
	ck_assert_int_eq(log_assign_leader_epoch(f, 4), 0);
	ck_assert_int_eq(log_assign_leader_epoch(f, 5), 0); /* and 5 replaces it at the same offset */
	assert_epoch_file("0\n3\n1 0\n3 5\n5 7\n");
	assert_end_for(f, 4, 3, 7);
	assert_end_for(f, 5, 5, 7);
	log_close(f);
	/* an entry with no batch does not survive a reopen (Kafka's LogLoader
	 * also cuts the cache at the log end offset): the broker assigns it
	 * again when it becomes leader again */
	ck_assert_int_eq(log_open(fdir, &cfg, true, -1, -1, 0, &f), 0);
	assert_end_for(f, 5, -1, -1);
	assert_end_for(f, 3, 3, 7);
	ck_assert_int_eq(log_assign_leader_epoch(f, 5), 0);
	assert_end_for(f, 5, 5, 7);
	assert_end_for(f, 3, 3, 7);
	log_close(f);
}
END_TEST

/* Kafka's LeaderEpochFileCache.endOffsetFor, every case (CLUSTER.md 3.7). */
START_TEST(end_offset_for_epoch_cases)
{
	log_epoch_cache c = { 0 };
	int32_t e;
	int64_t end;
	log_epoch_end_offset_for(&c, 3, 100, &e, &end); /* empty */
	ck_assert_int_eq(e, -1);
	ck_assert_int_eq(end, -1);
	log_epoch_entry v[] = { { 2, 10 }, { 5, 40 }, { 6, 40 }, { 9, 70 } };
	c.e = v;
	c.n = 4;
	static const struct {
		int32_t epoch, want_epoch;
		int64_t want_end;
	} cases[] = {
		{ 9, 9, 100 },   /* latest: the log end offset */
		{ 6, 6, 70 },    /* a known older one: where the next begins */
		{ 5, 5, 40 },    /* one without data (the next starts at once) */
		{ 7, 6, 70 },    /* unknown, between: the largest known below, the next start */
		{ 3, 2, 40 },
		{ 2, 2, 40 },
		{ 1, 1, 10 },    /* below every known: itself, the first start */
		{ 0, 0, 10 },
		{ 10, -1, -1 },  /* above every known */
		{ -1, -1, -1 },  /* undefined */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		log_epoch_end_offset_for(&c, cases[i].epoch, 100, &e, &end);
		ck_assert_int_eq(e, cases[i].want_epoch);
		ck_assert_int_eq(end, cases[i].want_end);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("follower");
	TCase *tc = tcase_create("follower");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, follower_copies_leader);
	tcase_add_test(tc, follower_refuses_offsets);
	tcase_add_test(tc, follower_refuses_corrupt);
	tcase_add_test(tc, follower_partial_tail);
	tcase_add_test(tc, follower_rolls);
	tcase_add_test(tc, follower_far_offsets);
	tcase_add_test(tc, follower_failed_write_leaves_nothing);
	tcase_add_test(tc, assign_leader_epoch);
	tcase_add_test(tc, end_offset_for_epoch_cases);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
