/*
 * test_producer_state.c - idempotent producer state of a partition log:
 * sequence and epoch rules on append (in order, gap, duplicates of the last
 * 5, wrap-around, epochs, unknown producers), .snapshot files (round trip,
 * corruption, roll and clean close), rebuild from the log after an unclean
 * stop, and producer.id.expiration.ms.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/producer_state.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;
static uint8_t bbuf[1 << 16];

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/t-0", dir);
	log_config_defaults(&cfg);
}

static void teardown(void) { tu_rmrf(dir); }

/* A batch of n records from producer pid/epoch starting at sequence seq. */
static size_t pbatch(int64_t pid, int16_t epoch, int32_t seq, int n, int64_t ts)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = ts, .ts_step = 1, .value_size = 10 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	log_put_be64(bbuf + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)pid);
	bbuf[PROTO_BATCH_OFF_PRODUCER_EPOCH] = (uint8_t)((uint16_t)epoch >> 8);
	bbuf[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = (uint8_t)epoch;
	log_put_be32(bbuf + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)seq);
	tu_batch_fix_crc(bbuf);
	return len;
}

/* Append a producer batch; returns the log_append_checked result. */
static int papp(log_partition *lp, int64_t pid, int16_t epoch, int32_t seq, int n, int64_t now,
		log_append_info *info)
{
	size_t len = pbatch(pid, epoch, seq, n, now);
	log_append_info tmp;
	return log_append_checked(lp, bbuf, len, 0, now, info ? info : &tmp);
}

static log_partition *open_log(bool clean, int64_t rp, int64_t now)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, clean, rp, -1, now, &lp), 0);
	return lp;
}

static void snap_path(char *out, int64_t off)
{
	tu_seg_path(out, PATH_MAX, pdir, off, ".snapshot");
}

START_TEST(seq_arithmetic)
{
	ck_assert_int_eq(log_seq_add(INT32_MAX, 1), 0);
	ck_assert_int_eq(log_seq_add(INT32_MAX - 2, 4), 1);
	ck_assert_int_eq(log_seq_add(5, 4), 9);
	ck_assert_int_eq(log_seq_sub(1, 4), INT32_MAX - 2);
	ck_assert_int_eq(log_seq_sub(9, 4), 5);
}
END_TEST

START_TEST(in_order_and_gap)
{
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	ck_assert_int_eq(papp(lp, 7, 0, 0, 5, 1000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(info.base_offset, 0);
	ck_assert_int_eq(papp(lp, 7, 0, 5, 3, 1000, &info), 0);
	ck_assert_int_eq(info.base_offset, 5);
	ck_assert_int_eq(info.last_offset, 7);
	int64_t size = log_size_bytes(lp);
	/* a gap: refused, nothing written */
	ck_assert_int_eq(papp(lp, 7, 0, 9, 2, 1000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(log_end_offset(lp), 8);
	ck_assert_int_eq(log_size_bytes(lp), size);
	/* below the expected sequence and not a cached batch */
	ck_assert_int_eq(papp(lp, 7, 0, 6, 2, 1000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(log_end_offset(lp), 8);
	ck_assert_int_eq(papp(lp, 7, 0, 8, 2, 1000, &info), 0);
	ck_assert_int_eq(info.base_offset, 8);
	/* another producer interleaved keeps its own sequence */
	ck_assert_int_eq(papp(lp, 8, 0, 0, 1, 1000, &info), 0);
	ck_assert_int_eq(papp(lp, 7, 0, 10, 1, 1000, &info), 0);
	ck_assert_int_eq(info.base_offset, 11);
	/* producer id -1: no checks */
	tu_batch_opts o = { .nrecords = 2, .base_ts = 1000, .ts_step = 1, .value_size = 10 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	int64_t base;
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 1000, &base), 0);
	ck_assert_int_eq(base, 12);
	ck_assert_uint_eq(lp->producers.n, 2);
	log_close(lp);
}
END_TEST

START_TEST(duplicates_of_last_five)
{
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(papp(lp, 42, 3, i * 5, 5, 1000 + i, &info), 0);
		ck_assert_int_eq(info.base_offset, i * 5);
	}
	int64_t size = log_size_bytes(lp);
	for (int i = 1; i < 6; i++) {
		ck_assert_int_eq(papp(lp, 42, 3, i * 5, 5, 5000, &info), 0);
		ck_assert(info.duplicate);
		ck_assert_int_eq(info.base_offset, i * 5);
		ck_assert_int_eq(info.last_offset, i * 5 + 4);
		ck_assert_int_eq(info.dup_max_timestamp, 1000 + i + 4);
	}
	ck_assert_int_eq(log_end_offset(lp), 30);
	ck_assert_int_eq(log_size_bytes(lp), size);
	/* the first batch is no longer cached: out of order, as Kafka */
	ck_assert_int_eq(papp(lp, 42, 3, 0, 5, 5000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	/* same first sequence, other range: not a duplicate */
	ck_assert_int_eq(papp(lp, 42, 3, 25, 4, 5000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(log_end_offset(lp), 30);
	/* a duplicate with another epoch is not one */
	ck_assert_int_eq(papp(lp, 42, 2, 25, 5, 5000, NULL), LOG_ERR_INVALID_PRODUCER_EPOCH);
	log_close(lp);
}
END_TEST

START_TEST(sequence_wraps)
{
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	/* unknown producer: any sequence; this batch runs INT32_MAX-2 .. 1 */
	ck_assert_int_eq(papp(lp, 5, 0, INT32_MAX - 2, 4, 1000, &info), 0);
	const log_producer_entry *e = log_pstate_find(&lp->producers, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(log_pentry_last(e)->last_seq, 0);
	ck_assert_int_eq(papp(lp, 5, 0, 1, 1, 1000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(papp(lp, 5, 0, INT32_MAX - 2, 4, 1000, &info), 0);
	ck_assert(info.duplicate);
	ck_assert_int_eq(info.base_offset, 0);
	/* a batch ending exactly at INT32_MAX, then 0 */
	ck_assert_int_eq(papp(lp, 6, 0, INT32_MAX - 1, 2, 1000, &info), 0);
	ck_assert_int_eq(papp(lp, 6, 0, 0, 1, 1000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(papp(lp, 6, 0, 2, 1, 1000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	log_close(lp);
}
END_TEST

START_TEST(epochs)
{
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	ck_assert_int_eq(papp(lp, 9, 4, 0, 5, 1000, &info), 0);
	/* new epoch must start at 0 */
	ck_assert_int_eq(papp(lp, 9, 5, 5, 1, 1000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(papp(lp, 9, 5, 0, 2, 1000, &info), 0);
	ck_assert_int_eq(info.base_offset, 5);
	/* old epoch fenced */
	ck_assert_int_eq(papp(lp, 9, 4, 5, 1, 1000, NULL), LOG_ERR_INVALID_PRODUCER_EPOCH);
	ck_assert_int_eq(papp(lp, 9, 4, 0, 5, 1000, NULL), LOG_ERR_INVALID_PRODUCER_EPOCH);
	ck_assert_int_eq(log_end_offset(lp), 7);
	/* the new epoch dropped the old batches */
	ck_assert_uint_eq(log_pstate_find(&lp->producers, 9)->nbatches, 1);
	/* unknown producer, first epoch, any sequence */
	ck_assert_int_eq(papp(lp, 10, 0, 1234, 1, 1000, NULL), 0);
	ck_assert_int_eq(papp(lp, 10, 0, 1235, 1, 1000, NULL), 0);
	log_close(lp);
}
END_TEST

START_TEST(multi_batch_append)
{
	/* two batches of the same producer in one append are checked in turn */
	log_partition *lp = open_log(false, -1, 0);
	uint8_t two[4096];
	size_t a = pbatch(3, 0, 0, 2, 1000);
	memcpy(two, bbuf, a);
	size_t b = pbatch(3, 0, 2, 2, 1000);
	memcpy(two + a, bbuf, b);
	log_append_info info;
	ck_assert_int_eq(log_append_checked(lp, two, a + b, 0, 1000, &info), 0);
	ck_assert_int_eq(info.last_offset, 3);
	ck_assert_int_eq(log_pentry_last(log_pstate_find(&lp->producers, 3))->last_seq, 3);
	/* a gap in the second batch refuses both */
	a = pbatch(3, 0, 4, 1, 1000);
	memcpy(two, bbuf, a);
	b = pbatch(3, 0, 9, 1, 1000);
	memcpy(two + a, bbuf, b);
	ck_assert_int_eq(log_append_checked(lp, two, a + b, 0, 1000, &info), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(log_end_offset(lp), 4);
	ck_assert_int_eq(log_pentry_last(log_pstate_find(&lp->producers, 3))->last_seq, 3);
	log_close(lp);
}
END_TEST

START_TEST(snapshot_round_trip)
{
	log_producer_state ps, back;
	log_pstate_init(&ps);
	log_pstate_init(&back);
	ck_assert_int_eq(mkdir(pdir, 0755), 0);
	for (int64_t id = 0; id < 100; id++) {
		log_producer_entry e;
		log_pentry_empty(&e, id * 1000);
		proto_batch_info h = { .producer_id = id * 1000, .producer_epoch = (int16_t)(id % 7),
				       .base_sequence = (int32_t)id * 3, .last_offset_delta = 2,
				       .max_timestamp = 5000 + id };
		log_pentry_add_batch(&e, &h, id * 10);
		h.base_sequence += 3;
		log_pentry_add_batch(&e, &h, id * 10 + 3);
		ck_assert_int_eq(log_pstate_put(&ps, &e), 0);
	}
	log_producer_entry none;
	log_pentry_empty(&none, 777777);
	none.epoch = 2;
	ck_assert_int_eq(log_pstate_put(&ps, &none), 0);
	ck_assert_int_eq(log_pstate_write_snapshot(&ps, pdir, 1234, true), 0);
	char path[PATH_MAX];
	snap_path(path, 1234);
	ck_assert_int_eq(tu_file_size(path), LOG_SNAPSHOT_HEADER_SIZE + 101 * LOG_SNAPSHOT_ENTRY_SIZE);
	ck_assert_int_eq(log_pstate_read_snapshot(&back, path, 1234, 6000, 86400000), 0);
	ck_assert_uint_eq(back.n, 101);
	ck_assert_int_eq(back.map_end_offset, 1234);
	for (int64_t id = 0; id < 100; id++) {
		const log_producer_entry *e = log_pstate_find(&back, id * 1000);
		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->epoch, id % 7);
		ck_assert_int_eq(e->nbatches, 1); /* a snapshot keeps the last batch */
		const log_producer_batch *b = log_pentry_last(e);
		ck_assert_int_eq(b->first_seq, id * 3 + 3);
		ck_assert_int_eq(b->last_seq, id * 3 + 5);
		ck_assert_int_eq(b->last_offset, id * 10 + 5);
		ck_assert_int_eq(b->offset_delta, 2);
		ck_assert_int_eq(e->last_ts, 5000 + id);
		ck_assert_int_eq(e->coordinator_epoch, -1);
		ck_assert_int_eq(e->txn_first_offset, -1);
	}
	const log_producer_entry *e = log_pstate_find(&back, 777777);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->epoch, 2);
	ck_assert_int_eq(e->nbatches, 0);
	/* expiry at load: last timestamps 5000..5099, expiration 1000 at 6050 */
	ck_assert_int_eq(log_pstate_read_snapshot(&back, path, 1234, 6050, 1000), 0);
	ck_assert_uint_eq(back.n, 49);

	/* layout: version 1, CRC32C over the rest, count, first entry's id */
	size_t len;
	uint8_t *raw = tu_read_file(path, &len);
	ck_assert_int_eq(raw[0], 0);
	ck_assert_int_eq(raw[1], 1);
	ck_assert_uint_eq(log_be32(raw + 2), proto_crc32c(0, raw + 6, len - 6));
	ck_assert_uint_eq(log_be32(raw + 6), 101);
	/* any flipped byte: refused */
	for (size_t pos = 0; pos < len; pos += 7) {
		raw[pos] ^= 0x10;
		int fd = open(path, O_WRONLY | O_TRUNC);
		ck_assert_int_eq(write(fd, raw, len), (ssize_t)len);
		close(fd);
		ck_assert_int_eq(log_pstate_read_snapshot(&back, path, 1234, 6000, 86400000), LOG_ERR_CORRUPT);
		ck_assert_uint_eq(back.n, 0);
		raw[pos] ^= 0x10;
	}
	/* truncated */
	int fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, raw, len - 3), (ssize_t)(len - 3));
	close(fd);
	ck_assert_int_eq(log_pstate_read_snapshot(&back, path, 1234, 6000, 86400000), LOG_ERR_CORRUPT);
	free(raw);
	log_pstate_free(&ps);
	log_pstate_free(&back);
}
END_TEST

START_TEST(hash_removal_keeps_lookups)
{
	log_producer_state ps;
	log_pstate_init(&ps);
	for (int64_t id = 0; id < 1000; id++) {
		log_producer_entry e;
		log_pentry_empty(&e, id);
		e.last_ts = id % 2 ? 100 : 10000; /* odd ids expire */
		ck_assert_int_eq(log_pstate_put(&ps, &e), 0);
	}
	log_pstate_expire(&ps, 10000, 5000);
	ck_assert_uint_eq(ps.n, 500);
	for (int64_t id = 0; id < 1000; id++)
		ck_assert((log_pstate_find(&ps, id) != NULL) == (id % 2 == 0));
	log_pstate_free(&ps);
}
END_TEST

START_TEST(rebuild_after_unclean_stop)
{
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(papp(lp, 11, 1, i * 4, 4, 1000, NULL), 0);
	log_close(lp);
	/* as after kill -9: no snapshot at the log end offset */
	char path[PATH_MAX];
	snap_path(path, 32);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot"), 0);
	lp = open_log(false, -1, 2000);
	const log_producer_entry *e = log_pstate_find(&lp->producers, 11);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->nbatches, 5);
	/* every one of the last 5 batches is detected */
	for (int i = 3; i < 8; i++) {
		ck_assert_int_eq(papp(lp, 11, 1, i * 4, 4, 3000, &info), 0);
		ck_assert(info.duplicate);
		ck_assert_int_eq(info.base_offset, i * 4);
	}
	ck_assert_int_eq(papp(lp, 11, 1, 36, 1, 3000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	ck_assert_int_eq(papp(lp, 11, 1, 32, 1, 3000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(info.base_offset, 32);
	log_close(lp);
}
END_TEST

START_TEST(rebuild_across_segments_from_roll_snapshot)
{
	cfg.segment_bytes = 400; /* a few batches per segment */
	log_partition *lp = open_log(false, -1, 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(papp(lp, 12, 0, i * 2, 2, 1000, NULL), 0);
	ck_assert_int_gt(lp->nseg, 3);
	/* snapshots at the last two rolls: named after the segments */
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot"), 2);
	char path[PATH_MAX];
	snap_path(path, log_active(lp)->base_offset);
	ck_assert_int_ge(tu_file_size(path), LOG_SNAPSHOT_HEADER_SIZE + LOG_SNAPSHOT_ENTRY_SIZE);
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	snap_path(path, leo);
	ck_assert_int_eq(unlink(path), 0);
	/* unclean, recovery point at the end: recovery scans nothing, the
	 * state comes from the roll snapshot plus the tail after it */
	lp = open_log(false, leo, 2000);
	const log_producer_entry *e = log_pstate_find(&lp->producers, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(log_pentry_last(e)->last_seq, 39);
	log_append_info info;
	ck_assert_int_eq(papp(lp, 12, 0, 38, 2, 3000, &info), 0);
	ck_assert(info.duplicate);
	ck_assert_int_eq(info.base_offset, 38);
	ck_assert_int_eq(papp(lp, 12, 0, 40, 2, 3000, &info), 0);
	ck_assert(!info.duplicate);
	log_close(lp);

	/* a corrupt latest snapshot is removed and an older one used */
	lp = open_log(true, -1, 4000);
	leo = log_end_offset(lp);
	log_close(lp);
	snap_path(path, leo);
	int fd = open(path, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "\xff", 1, 8), 1);
	close(fd);
	lp = open_log(true, -1, 5000);
	ck_assert_int_eq(tu_file_size(path), -1);
	e = log_pstate_find(&lp->producers, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(log_pentry_last(e)->last_seq, 41);
	ck_assert_int_eq(papp(lp, 12, 0, 40, 2, 6000, &info), 0);
	ck_assert(info.duplicate);
	log_close(lp);
}
END_TEST

START_TEST(truncated_log_drops_later_snapshot)
{
	log_partition *lp = open_log(false, -1, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(papp(lp, 13, 0, i * 3, 3, 1000, NULL), 0);
	size_t one = pbatch(13, 0, 9, 3, 1000);
	char logp[PATH_MAX];
	tu_seg_path(logp, sizeof logp, pdir, 0, ".log");
	log_close(lp);
	/* cut the last batch in half, as a torn write */
	ck_assert_int_eq(truncate(logp, tu_file_size(logp) - (int64_t)one / 2), 0);
	lp = open_log(false, -1, 2000);
	ck_assert_int_eq(log_end_offset(lp), 9);
	char path[PATH_MAX];
	snap_path(path, 12);
	ck_assert_int_eq(tu_file_size(path), -1);
	const log_producer_entry *e = log_pstate_find(&lp->producers, 13);
	ck_assert_int_eq(log_pentry_last(e)->last_seq, 8);
	/* the lost batch can be sent again */
	log_append_info info;
	ck_assert_int_eq(papp(lp, 13, 0, 9, 3, 3000, &info), 0);
	ck_assert(!info.duplicate);
	ck_assert_int_eq(info.base_offset, 9);
	log_close(lp);
}
END_TEST

START_TEST(clean_open_reads_the_snapshot)
{
	log_partition *lp = open_log(false, -1, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(papp(lp, 14, 0, i, 1, 1000, NULL), 0);
	log_close(lp);
	char path[PATH_MAX];
	snap_path(path, 3);
	ck_assert_int_ge(tu_file_size(path), 0);
	/* replace the snapshot by one naming a producer absent from the log:
	 * a clean open that takes it (and does not replay the log) knows only
	 * that producer */
	log_producer_state ps;
	log_pstate_init(&ps);
	log_producer_entry e;
	log_pentry_empty(&e, 99);
	proto_batch_info h = { .producer_id = 99, .producer_epoch = 2, .base_sequence = 40,
			       .last_offset_delta = 1, .max_timestamp = 1500 };
	log_pentry_add_batch(&e, &h, 1);
	ck_assert_int_eq(log_pstate_put(&ps, &e), 0);
	ck_assert_int_eq(log_pstate_write_snapshot(&ps, pdir, 3, true), 0);
	log_pstate_free(&ps);
	lp = open_log(true, -1, 2000);
	ck_assert_ptr_null(log_pstate_find(&lp->producers, 14));
	const log_producer_entry *got = log_pstate_find(&lp->producers, 99);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(got->epoch, 2);
	ck_assert_int_eq(log_pentry_last(got)->last_seq, 41);
	log_append_info info;
	ck_assert_int_eq(papp(lp, 99, 2, 42, 1, 2000, &info), 0);
	ck_assert_int_eq(papp(lp, 99, 2, 44, 1, 2000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	log_close(lp);
	/* the close wrote a snapshot at the new end and kept two */
	snap_path(path, 4);
	ck_assert_int_ge(tu_file_size(path), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".snapshot"), 2);
}
END_TEST

START_TEST(producers_expire)
{
	cfg.producer_id_expiration_ms = 60000;
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(papp(lp, 15, 0, 0, 1, 1000, NULL), 0);
	ck_assert_int_eq(papp(lp, 15, 0, 5, 1, 1000, NULL), LOG_ERR_OUT_OF_ORDER_SEQUENCE);
	/* the expiry check runs at most every 10 minutes: first at 1000 */
	ck_assert_int_eq(papp(lp, 16, 0, 0, 1, 1000 + 600000, NULL), 0);
	ck_assert_ptr_null(log_pstate_find(&lp->producers, 15));
	/* an expired producer is accepted at any sequence, as Kafka */
	ck_assert_int_eq(papp(lp, 15, 0, 5, 1, 1000 + 600000, NULL), 0);
	log_close(lp);
	/* expired at open */
	lp = open_log(true, -1, 1000 + 600000 + 60000);
	ck_assert_uint_eq(lp->producers.n, 0);
	log_close(lp);
}
END_TEST

/* Found by fuzz/fuzz_recover (corpus/fuzz_recover/regress-expire-overflow):
 * a batch whose max timestamp is near INT64_MIN (read from a corrupt segment)
 * made the expiry's now - last timestamp overflow (UBSan), and in a plain
 * build the wrapped difference kept the producer forever. */
START_TEST(expire_ancient_timestamp)
{
	cfg.producer_id_expiration_ms = 60000;
	log_partition *lp = open_log(false, -1, 0);
	log_append_info info;
	size_t len = pbatch(15, 0, 0, 1, INT64_MIN + 1000); /* record timestamps */
	ck_assert_int_eq(log_append_checked(lp, bbuf, len, 0, 1000, &info), 0);
	ck_assert_int_eq(papp(lp, 16, 0, 0, 1, 1000 + 600000, NULL), 0);
	ck_assert_ptr_null(log_pstate_find(&lp->producers, 15));
	log_close(lp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("producer_state");
	TCase *tc = tcase_create("producer_state");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, seq_arithmetic);
	tcase_add_test(tc, in_order_and_gap);
	tcase_add_test(tc, duplicates_of_last_five);
	tcase_add_test(tc, sequence_wraps);
	tcase_add_test(tc, epochs);
	tcase_add_test(tc, multi_batch_append);
	tcase_add_test(tc, snapshot_round_trip);
	tcase_add_test(tc, hash_removal_keeps_lookups);
	tcase_add_test(tc, rebuild_after_unclean_stop);
	tcase_add_test(tc, rebuild_across_segments_from_roll_snapshot);
	tcase_add_test(tc, truncated_log_drops_later_snapshot);
	tcase_add_test(tc, clean_open_reads_the_snapshot);
	tcase_add_test(tc, producers_expire);
	tcase_add_test(tc, expire_ancient_timestamp);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
