/*
 * test_txn.c - transactions in the partition log (KIP-98): transactional
 * batches start a producer's transaction, end markers (control batches)
 * complete it, fenced by producer and coordinator epochs; the last stable
 * offset with concurrent transactions; aborted transactions in the
 * .txnindex (file format, round trip, truncation) and their collection for
 * a fetch across segments; recovery rebuilding the ongoing transactions and
 * the .txnindex after an unclean stop; snapshots keeping the transaction
 * first offset.
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

#include "protocol/records.h"
#include "storage/fileio.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/producer_state.h"
#include "storage/tests/testutil.h"
#include "storage/txnindex.h"

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

/* A batch of n records from producer pid/epoch at sequence seq, transactional or not. */
static size_t pbatch(int64_t pid, int16_t epoch, int32_t seq, int n, bool txn)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = 1000, .ts_step = 1, .value_size = 10 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	log_put_be64(bbuf + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)pid);
	bbuf[PROTO_BATCH_OFF_PRODUCER_EPOCH] = (uint8_t)((uint16_t)epoch >> 8);
	bbuf[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = (uint8_t)epoch;
	log_put_be32(bbuf + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)seq);
	if (txn)
		bbuf[PROTO_BATCH_OFF_ATTRIBUTES + 1] |= PROTO_ATTR_TRANSACTIONAL;
	tu_batch_fix_crc(bbuf);
	return len;
}

/* Append a producer batch; returns the result, *base the base offset. */
static int tapp(log_partition *lp, int64_t pid, int16_t epoch, int32_t seq, int n, bool txn, int64_t *base)
{
	size_t len = pbatch(pid, epoch, seq, n, txn);
	log_append_info info;
	int rc = log_append_checked(lp, bbuf, len, 0, 1000, &info);
	if (rc == 0 && base)
		*base = info.base_offset;
	return rc;
}

static int64_t marker(log_partition *lp, int64_t pid, int16_t epoch, int32_t coord, bool commit)
{
	int64_t off = -1;
	ck_assert_int_eq(log_append_control(lp, pid, epoch, coord, commit, 0, 2000, &off), 0);
	return off;
}

static log_partition *open_log(bool clean, int64_t rp, int64_t now)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, clean, rp, -1, now, &lp), 0);
	return lp;
}

static int64_t txn_first(const log_partition *lp, int64_t pid)
{
	const log_producer_entry *e = log_pstate_find(&lp->producers, pid);
	return e ? e->txn_first_offset : -2;
}

/* Collecting aborted transactions into an array. */
typedef struct collected {
	log_aborted_txn v[32];
	int n;
} collected;

static int collect_fn(void *arg, const log_aborted_txn *a)
{
	collected *c = arg;
	if (c->n == 32)
		return -ENOSPC;
	c->v[c->n++] = *a;
	return 0;
}

static int aborted(log_partition *lp, int64_t from, int64_t upper, collected *c)
{
	memset(c, 0, sizeof *c);
	int rc = log_aborted_txns(lp, from, upper, collect_fn, c);
	if (rc >= 0)
		ck_assert_int_eq(rc, c->n);
	return rc;
}

static void txnindex_path(char *out, int64_t base)
{
	tu_seg_path(out, PATH_MAX, pdir, base, ".txnindex");
}

START_TEST(control_batch_format)
{
	uint8_t b[PROTO_CONTROL_BATCH_SIZE];
	proto_control_batch_build(b, 42, 3, 17, false, 5000);
	proto_batch_info h;
	ck_assert_int_eq(proto_batch_header(b, sizeof b, &h), 0);
	ck_assert_int_eq(h.size, PROTO_CONTROL_BATCH_SIZE);
	ck_assert(proto_batch_crc_ok(b, &h));
	ck_assert_int_eq(h.attributes, PROTO_ATTR_TRANSACTIONAL | PROTO_ATTR_CONTROL);
	ck_assert_int_eq(h.producer_id, 42);
	ck_assert_int_eq(h.producer_epoch, 3);
	ck_assert_int_eq(h.base_sequence, -1);
	ck_assert_int_eq(h.records_count, 1);
	ck_assert_int_eq(h.max_timestamp, 5000);
	/* key: version 0, type 0 (abort); value: version 0, coordinator epoch */
	proto_scratch sc;
	proto_scratch_init(&sc, 0);
	proto_record_iter it;
	proto_record r;
	ck_assert_int_eq(proto_record_iter_init(&it, b, sizeof b, &sc), 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(r.key_len, 4);
	ck_assert_mem_eq(r.key, "\0\0\0\0", 4);
	ck_assert_int_eq(r.value_len, 6);
	ck_assert_mem_eq(r.value, "\0\0\0\0\0\x11", 6);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 0);
	proto_scratch_free(&sc);
	int16_t type;
	int32_t ce;
	ck_assert_int_eq(proto_control_batch_parse(b, sizeof b, &type, &ce), 0);
	ck_assert_int_eq(type, PROTO_CONTROL_ABORT);
	ck_assert_int_eq(ce, 17);
	proto_control_batch_build(b, 42, 3, 18, true, 5000);
	ck_assert_int_eq(proto_control_batch_parse(b, sizeof b, &type, &ce), 0);
	ck_assert_int_eq(type, PROTO_CONTROL_COMMIT);
	ck_assert_int_eq(ce, 18);
	b[70] ^= 1; /* CRC no longer matches */
	ck_assert_int_eq(proto_control_batch_parse(b, sizeof b, &type, &ce), PROTO_ERR_INVALID);
}
END_TEST

START_TEST(begin_commit_abort)
{
	log_partition *lp = open_log(false, -1, 0);
	int64_t base;
	/* no transaction yet */
	ck_assert_int_eq(tapp(lp, 5, 0, 0, 2, false, NULL), 0);
	ck_assert_int_eq(txn_first(lp, 5), -1);
	/* the first transactional batch starts it, the next ones keep it */
	ck_assert_int_eq(tapp(lp, 5, 0, 2, 3, true, &base), 0);
	ck_assert_int_eq(base, 2);
	ck_assert_int_eq(txn_first(lp, 5), 2);
	ck_assert_int_eq(tapp(lp, 5, 0, 5, 1, true, NULL), 0);
	ck_assert_int_eq(txn_first(lp, 5), 2);
	ck_assert_uint_eq(lp->producers.ntxn, 1);
	/* plain writes inside a transaction are refused, nothing written */
	ck_assert_int_eq(tapp(lp, 5, 0, 6, 1, false, NULL), LOG_ERR_INVALID_TXN_STATE);
	ck_assert_int_eq(log_end_offset(lp), 6);
	log_set_high_watermark(lp, 6);
	ck_assert_int_eq(log_last_stable_offset(lp), 2);
	/* commit: the marker is a control batch at the end */
	int64_t m = marker(lp, 5, 0, 1, true);
	ck_assert_int_eq(m, 6);
	ck_assert_int_eq(log_end_offset(lp), 7);
	ck_assert_int_eq(txn_first(lp, 5), -1);
	ck_assert_int_eq(log_pstate_find(&lp->producers, 5)->coordinator_epoch, 1);
	ck_assert_int_eq(log_last_stable_offset(lp), 2); /* marker not below the hw yet */
	log_set_high_watermark(lp, 7);
	ck_assert_int_eq(log_last_stable_offset(lp), 7);
	ck_assert_uint_eq(lp->producers.ntxn, 0);
	char path[PATH_MAX];
	txnindex_path(path, 0);
	ck_assert_int_eq(tu_file_size(path), -1); /* commits are not indexed */
	/* the marker as read back */
	log_read_result rr;
	ck_assert_int_eq(log_read(lp, 6, 7, 1 << 20, true, &rr), 0);
	ck_assert_int_eq(rr.len, PROTO_CONTROL_BATCH_SIZE);
	uint8_t b[PROTO_CONTROL_BATCH_SIZE];
	ck_assert_int_eq(log_io_pread(rr.fd, b, sizeof b, rr.file_pos), 0);
	log_segment_release(rr.segment);
	int16_t type;
	int32_t ce;
	ck_assert_int_eq(proto_control_batch_parse(b, sizeof b, &type, &ce), 0);
	ck_assert_int_eq(type, PROTO_CONTROL_COMMIT);
	ck_assert_int_eq((int64_t)log_be64(b), 6);
	/* the sequence goes on after the marker */
	ck_assert_int_eq(tapp(lp, 5, 0, 6, 2, true, &base), 0);
	ck_assert_int_eq(base, 7);
	ck_assert_int_eq(txn_first(lp, 5), 7);
	/* abort: an entry in the .txnindex, Kafka's 34-byte layout */
	log_set_high_watermark(lp, 9);
	m = marker(lp, 5, 0, 1, false);
	ck_assert_int_eq(m, 9);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	size_t len;
	uint8_t *f = tu_read_file(path, &len);
	ck_assert_mem_eq(f, "\0\0", 2);
	ck_assert_int_eq((int64_t)log_be64(f + 2), 5);
	ck_assert_int_eq((int64_t)log_be64(f + 10), 7);
	ck_assert_int_eq((int64_t)log_be64(f + 18), 9);
	ck_assert_int_eq((int64_t)log_be64(f + 26), 10); /* no other transaction: marker + 1 */
	free(f);
	/* an empty transaction: a marker without data indexes nothing */
	m = marker(lp, 5, 0, 1, false);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	log_set_high_watermark(lp, log_end_offset(lp));
	ck_assert_int_eq(log_last_stable_offset(lp), log_end_offset(lp));
	collected c;
	ck_assert_int_eq(aborted(lp, 0, log_end_offset(lp), &c), 1);
	ck_assert_int_eq(c.v[0].producer_id, 5);
	ck_assert_int_eq(c.v[0].first_offset, 7);
	log_close(lp);
}
END_TEST

START_TEST(markers_fenced_by_epochs)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, 8, 3, 0, 1, true, NULL), 0);
	int64_t leo = log_end_offset(lp), size = log_size_bytes(lp), off = -1;
	/* an older producer epoch */
	ck_assert_int_eq(log_append_control(lp, 8, 2, 0, true, 0, 2000, &off), LOG_ERR_INVALID_PRODUCER_EPOCH);
	ck_assert_int_eq(log_end_offset(lp), leo);
	ck_assert_int_eq(log_size_bytes(lp), size);
	ck_assert_int_eq(txn_first(lp, 8), 0);
	/* a marker from coordinator epoch 4 ... */
	ck_assert_int_eq(log_append_control(lp, 8, 3, 4, false, 0, 2000, &off), 0);
	ck_assert_int_eq(off, 1);
	ck_assert_int_eq(tapp(lp, 8, 3, 1, 1, true, NULL), 0);
	leo = log_end_offset(lp);
	size = log_size_bytes(lp);
	/* ... fences an older coordinator */
	ck_assert_int_eq(log_append_control(lp, 8, 3, 3, true, 0, 2000, &off),
			 LOG_ERR_TRANSACTION_COORDINATOR_FENCED);
	ck_assert_int_eq(log_end_offset(lp), leo);
	ck_assert_int_eq(log_size_bytes(lp), size);
	ck_assert_int_eq(txn_first(lp, 8), 2);
	/* the same or a newer coordinator epoch, and a newer producer epoch
	 * (the coordinator's abort after a bump), are taken */
	ck_assert_int_eq(log_append_control(lp, 8, 4, 4, false, 0, 2000, &off), 0);
	ck_assert_int_eq(off, 3);
	const log_producer_entry *e = log_pstate_find(&lp->producers, 8);
	ck_assert_int_eq(e->epoch, 4);
	ck_assert_int_eq(e->coordinator_epoch, 4);
	ck_assert_int_eq(e->txn_first_offset, -1);
	/* the producer's old epoch is now fenced for data too */
	ck_assert_int_eq(tapp(lp, 8, 3, 2, 1, true, NULL), LOG_ERR_INVALID_PRODUCER_EPOCH);
	/* bad arguments */
	ck_assert_int_eq(log_append_control(lp, -1, 0, 0, true, 0, 2000, &off), -EINVAL);
	/* a marker for a producer the partition never saw is written */
	ck_assert_int_eq(log_append_control(lp, 77, 0, 0, true, 0, 2000, &off), 0);
	ck_assert_int_eq(off, 4);
	log_close(lp);
}
END_TEST

START_TEST(lso_two_producers)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, 1, 0, 0, 2, true, NULL), 0);  /* P1 txn at 0 */
	ck_assert_int_eq(tapp(lp, -1, -1, -1, 1, false, NULL), 0); /* plain at 2 */
	ck_assert_int_eq(tapp(lp, 2, 0, 0, 2, true, NULL), 0);  /* P2 txn at 3 */
	ck_assert_int_eq(tapp(lp, 1, 0, 2, 1, true, NULL), 0);  /* P1 at 5 */
	ck_assert_int_eq(log_end_offset(lp), 6);
	/* the LSO never passes the high watermark */
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	log_set_high_watermark(lp, 6);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	/* P1 commits at 6: still unstable until the hw passes its marker */
	ck_assert_int_eq(marker(lp, 1, 0, 0, true), 6);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	log_set_high_watermark(lp, 7);
	ck_assert_int_eq(log_last_stable_offset(lp), 3); /* P2's first offset */
	/* P1 starts again at 7; P2 aborts at 8 with P1's txn ongoing */
	ck_assert_int_eq(tapp(lp, 1, 0, 3, 1, true, NULL), 0);
	ck_assert_int_eq(marker(lp, 2, 0, 0, false), 8);
	log_set_high_watermark(lp, 9);
	ck_assert_int_eq(log_last_stable_offset(lp), 7);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, 9, &c), 1);
	ck_assert_int_eq(c.v[0].producer_id, 2);
	ck_assert_int_eq(c.v[0].first_offset, 3);
	ck_assert_int_eq(c.v[0].last_offset, 8);
	ck_assert_int_eq(c.v[0].last_stable_offset, 7); /* P1's ongoing txn */
	/* P1 aborts: everything stable once the hw passes */
	ck_assert_int_eq(marker(lp, 1, 0, 0, false), 9);
	ck_assert_int_eq(log_last_stable_offset(lp), 7);
	log_set_high_watermark(lp, 10);
	ck_assert_int_eq(log_last_stable_offset(lp), 10);
	ck_assert_int_eq(aborted(lp, 0, 10, &c), 2);
	ck_assert_int_eq(c.v[1].producer_id, 1);
	ck_assert_int_eq(c.v[1].first_offset, 7);
	ck_assert_int_eq(c.v[1].last_stable_offset, 10);
	log_close(lp);
}
END_TEST

START_TEST(aborted_across_segments)
{
	cfg.segment_bytes = 300; /* a couple of batches per segment */
	log_partition *lp = open_log(false, -1, 0);
	int64_t first[4], mark[4];
	int32_t seq[4] = { 0 };
	/* four producers, each: a transaction spanning a few batches, aborted
	 * (odd ids) or committed (even ids), overlapping each other */
	for (int p = 0; p < 4; p++) {
		ck_assert_int_eq(tapp(lp, 100 + p, 0, seq[p], 2, true, &first[p]), 0);
		seq[p] += 2;
	}
	for (int p = 0; p < 4; p++) {
		ck_assert_int_eq(tapp(lp, 100 + p, 0, seq[p], 2, true, NULL), 0);
		seq[p] += 2;
		mark[p] = marker(lp, 100 + p, 0, 0, p % 2 == 0);
	}
	ck_assert_int_gt(lp->nseg, 3);
	int64_t leo = log_end_offset(lp);
	log_set_high_watermark(lp, leo);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, leo, &c), 2);
	ck_assert_int_eq(c.v[0].producer_id, 101);
	ck_assert_int_eq(c.v[0].first_offset, first[1]);
	ck_assert_int_eq(c.v[0].last_offset, mark[1]);
	ck_assert_int_eq(c.v[1].producer_id, 103);
	ck_assert_int_eq(c.v[1].first_offset, first[3]);
	ck_assert_int_eq(c.v[1].last_offset, mark[3]);
	/* the entries are in the segments of their markers */
	size_t s1 = log_seg_floor(lp, mark[1]), s3 = log_seg_floor(lp, mark[3]);
	ck_assert_uint_ne(s1, s3);
	char path[PATH_MAX];
	txnindex_path(path, lp->segs[s1]->base_offset);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	txnindex_path(path, lp->segs[s3]->base_offset);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	ck_assert_int_eq(tu_count_files(pdir, ".txnindex"), 2);
	/* a fetch ending before a transaction began does not see it */
	ck_assert_int_eq(aborted(lp, 0, first[3], &c), 1);
	ck_assert_int_eq(c.v[0].producer_id, 101);
	/* a fetch after a marker does not see its transaction */
	ck_assert_int_eq(aborted(lp, mark[1] + 1, leo, &c), 1);
	ck_assert_int_eq(c.v[0].producer_id, 103);
	/* a fetch starting in a segment before the marker's */
	ck_assert_int_eq(aborted(lp, first[3], first[3] + 1, &c), 2);
	log_close(lp);
	/* the indexes survive a clean reopen */
	lp = open_log(true, -1, 3000);
	log_set_high_watermark(lp, leo);
	ck_assert_int_eq(aborted(lp, 0, leo, &c), 2);
	ck_assert_int_eq(c.v[1].last_offset, mark[3]);
	log_close(lp);
}
END_TEST

static int stop_fn(void *arg, const log_aborted_txn *a)
{
	(void)a;
	(*(int *)arg)++;
	return -EINTR;
}

START_TEST(search_stops)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, 1, 0, 0, 1, true, NULL), 0);
	marker(lp, 1, 0, 0, false);
	ck_assert_int_eq(tapp(lp, 1, 0, 1, 1, true, NULL), 0);
	marker(lp, 1, 0, 0, false);
	int calls = 0;
	ck_assert_int_eq(log_aborted_txns(lp, 0, 4, stop_fn, &calls), -EINTR);
	ck_assert_int_eq(calls, 1);
	log_close(lp);
}
END_TEST

START_TEST(txnindex_round_trip_and_truncate)
{
	ck_assert_int_eq(mkdir(pdir, 0755), 0);
	log_txnindex ti;
	ck_assert_int_eq(log_txnindex_init(&ti, pdir, 100), 0);
	char path[PATH_MAX];
	txnindex_path(path, 100);
	ck_assert_int_eq(log_txnindex_load(&ti), 0); /* missing: empty */
	ck_assert_uint_eq(ti.n, 0);
	ck_assert_int_eq(log_txnindex_last_offset(&ti), -1);
	for (int i = 0; i < 5; i++) {
		log_aborted_txn a = { .producer_id = 7 + i, .first_offset = 100 + i * 10,
				      .last_offset = 105 + i * 10, .last_stable_offset = 106 + i * 10 };
		ck_assert_int_eq(log_txnindex_append(&ti, &a), 0);
	}
	/* last offsets must grow */
	log_aborted_txn bad = { .producer_id = 1, .first_offset = 100, .last_offset = 145, .last_stable_offset = 1 };
	ck_assert_int_eq(log_txnindex_append(&ti, &bad), -EINVAL);
	ck_assert_int_eq(tu_file_size(path), 5 * LOG_TXNINDEX_ENTRY_SIZE);
	log_txnindex_destroy(&ti);

	ck_assert_int_eq(log_txnindex_init(&ti, pdir, 100), 0);
	ck_assert_int_eq(log_txnindex_load(&ti), 0);
	ck_assert_uint_eq(ti.n, 5);
	ck_assert_int_eq(ti.v[3].producer_id, 10);
	ck_assert_int_eq(ti.v[3].first_offset, 130);
	ck_assert_int_eq(ti.v[3].last_offset, 135);
	ck_assert_int_eq(ti.v[3].last_stable_offset, 136);
	/* Kafka's truncateTo: entries with last offset >= offset go */
	ck_assert_int_eq(log_txnindex_truncate(&ti, 126), 0);
	ck_assert_uint_eq(ti.n, 3);
	ck_assert_int_eq(tu_file_size(path), 3 * LOG_TXNINDEX_ENTRY_SIZE);
	ck_assert_int_eq(log_txnindex_truncate(&ti, 125), 0);
	ck_assert_uint_eq(ti.n, 2);
	ck_assert_int_eq(log_txnindex_last_offset(&ti), 115);
	log_aborted_txn a = { .producer_id = 3, .first_offset = 116, .last_offset = 120, .last_stable_offset = 121 };
	ck_assert_int_eq(log_txnindex_append(&ti, &a), 0);
	log_txnindex_destroy(&ti);

	/* a torn tail and a bad version: the good prefix stays */
	int fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "\0\0\0\0\0\0\0", 7), 7);
	close(fd);
	ck_assert_int_eq(log_txnindex_init(&ti, pdir, 100), 0);
	ck_assert_int_eq(log_txnindex_load(&ti), 0);
	ck_assert_uint_eq(ti.n, 3);
	ck_assert_int_eq(tu_file_size(path), 3 * LOG_TXNINDEX_ENTRY_SIZE);
	log_txnindex_destroy(&ti);
	fd = open(path, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "\0\1", 2, LOG_TXNINDEX_ENTRY_SIZE), 2);
	close(fd);
	ck_assert_int_eq(log_txnindex_init(&ti, pdir, 100), 0);
	ck_assert_int_eq(log_txnindex_load(&ti), 0);
	ck_assert_uint_eq(ti.n, 1);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	/* collect: overlap rule and the completeness stop */
	bool complete;
	collected c = { .n = 0 };
	ck_assert_int_eq(log_txnindex_collect(&ti, 0, 1000, collect_fn, &c, &complete), 1);
	ck_assert(!complete);
	ck_assert_int_eq(log_txnindex_collect(&ti, 106, 1000, collect_fn, &c, &complete), 0);
	ck_assert_int_eq(log_txnindex_collect(&ti, 0, 100, collect_fn, &c, &complete), 0);
	ck_assert(complete); /* last stable offset 106 >= 100 */
	ck_assert_int_eq(log_txnindex_remove(&ti), 0);
	ck_assert_int_eq(tu_file_size(path), -1);
	log_txnindex_destroy(&ti);
}
END_TEST

START_TEST(snapshot_keeps_ongoing_txn)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, 1, 0, 0, 1, false, NULL), 0);
	ck_assert_int_eq(tapp(lp, 2, 0, 0, 2, true, NULL), 0);
	ck_assert_int_eq(tapp(lp, 1, 0, 1, 1, false, NULL), 0);
	log_close(lp);
	/* a clean open reads the snapshot only: the txn comes from its field */
	char path[PATH_MAX];
	tu_seg_path(path, sizeof path, pdir, 4, ".snapshot");
	size_t len;
	uint8_t *f = tu_read_file(path, &len);
	ck_assert_uint_eq(len, LOG_SNAPSHOT_HEADER_SIZE + 2 * LOG_SNAPSHOT_ENTRY_SIZE);
	free(f);
	lp = open_log(true, -1, 1000);
	ck_assert_int_eq(txn_first(lp, 2), 1);
	ck_assert_int_eq(txn_first(lp, 1), -1);
	log_set_high_watermark(lp, 4);
	ck_assert_int_eq(log_last_stable_offset(lp), 1);
	ck_assert_int_eq(marker(lp, 2, 0, 0, false), 4);
	log_set_high_watermark(lp, 5);
	ck_assert_int_eq(log_last_stable_offset(lp), 5);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, 5, &c), 1);
	ck_assert_int_eq(c.v[0].first_offset, 1);
	log_close(lp);
}
END_TEST

/* The state every recovery test expects: P1's txn from 0 aborted at 3
 * (first segment), P2's txn ongoing from 2, P3 committed. */
static void write_txns(log_partition *lp, int64_t *m1)
{
	ck_assert_int_eq(tapp(lp, 1, 0, 0, 2, true, NULL), 0);  /* 0-1 */
	ck_assert_int_eq(tapp(lp, 2, 0, 0, 1, true, NULL), 0);  /* 2 */
	*m1 = marker(lp, 1, 0, 5, false);                       /* 3 */
	ck_assert_int_eq(tapp(lp, 3, 0, 0, 1, true, NULL), 0);  /* 4 */
	marker(lp, 3, 0, 5, true);                              /* 5 */
	ck_assert_int_eq(tapp(lp, 2, 0, 1, 1, true, NULL), 0);  /* 6 */
}

static void check_recovered(log_partition *lp, int64_t m1)
{
	ck_assert_int_eq(txn_first(lp, 2), 2);
	ck_assert_int_eq(txn_first(lp, 1), -1);
	ck_assert_int_eq(txn_first(lp, 3), -1);
	ck_assert_int_eq(log_pstate_find(&lp->producers, 1)->coordinator_epoch, 5);
	log_set_high_watermark(lp, log_end_offset(lp));
	ck_assert_int_eq(log_last_stable_offset(lp), 2);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, log_end_offset(lp), &c), 1);
	ck_assert_int_eq(c.v[0].producer_id, 1);
	ck_assert_int_eq(c.v[0].first_offset, 0);
	ck_assert_int_eq(c.v[0].last_offset, m1);
	ck_assert_int_eq(c.v[0].last_stable_offset, 2);
	/* the coordinator epoch came back: an older coordinator is fenced */
	int64_t off;
	ck_assert_int_eq(log_append_control(lp, 1, 0, 4, false, 0, 3000, &off),
			 LOG_ERR_TRANSACTION_COORDINATOR_FENCED);
	/* P2 can finish its transaction */
	int64_t m2 = marker(lp, 2, 0, 5, false);
	log_set_high_watermark(lp, m2 + 1);
	ck_assert_int_eq(log_last_stable_offset(lp), m2 + 1);
	ck_assert_int_eq(aborted(lp, 0, m2 + 1, &c), 2);
	ck_assert_int_eq(c.v[1].first_offset, 2);
}

START_TEST(recovery_rebuilds_txn_state)
{
	log_partition *lp = open_log(false, -1, 0);
	int64_t m1;
	write_txns(lp, &m1);
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	/* as after kill -9 before anything was flushed: no snapshot, no
	 * .txnindex, recovery from the start */
	char path[PATH_MAX];
	tu_seg_path(path, sizeof path, pdir, leo, ".snapshot");
	ck_assert_int_eq(unlink(path), 0);
	txnindex_path(path, 0);
	ck_assert_int_eq(unlink(path), 0);
	lp = open_log(false, -1, 2000);
	ck_assert_int_eq(log_end_offset(lp), leo);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	check_recovered(lp, m1);
	log_close(lp);
}
END_TEST

START_TEST(recovery_keeps_existing_entries)
{
	log_partition *lp = open_log(false, -1, 0);
	int64_t m1;
	write_txns(lp, &m1);
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	/* the .txnindex survived (no duplicate entry), and a stale entry past
	 * the log end goes */
	char path[PATH_MAX];
	tu_seg_path(path, sizeof path, pdir, leo, ".snapshot");
	ck_assert_int_eq(unlink(path), 0);
	log_txnindex ti;
	ck_assert_int_eq(log_txnindex_init(&ti, pdir, 0), 0);
	log_aborted_txn stale = { .producer_id = 9, .first_offset = 50, .last_offset = 60, .last_stable_offset = 61 };
	ck_assert_int_eq(log_txnindex_append(&ti, &stale), 0);
	log_txnindex_destroy(&ti);
	txnindex_path(path, 0);
	ck_assert_int_eq(tu_file_size(path), 2 * LOG_TXNINDEX_ENTRY_SIZE);
	lp = open_log(false, -1, 2000);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	check_recovered(lp, m1);
	log_close(lp);
}
END_TEST

START_TEST(recovery_from_roll_snapshot)
{
	cfg.segment_bytes = 250;
	log_partition *lp = open_log(false, -1, 0);
	int64_t m1;
	write_txns(lp, &m1);
	ck_assert_int_gt(lp->nseg, 2);
	int64_t leo = log_end_offset(lp);
	size_t sm = log_seg_floor(lp, m1);
	int64_t mbase = lp->segs[sm]->base_offset;
	log_close(lp);
	char path[PATH_MAX];
	tu_seg_path(path, sizeof path, pdir, leo, ".snapshot");
	ck_assert_int_eq(unlink(path), 0);
	txnindex_path(path, mbase);
	ck_assert_int_eq(unlink(path), 0);
	/* recovery from the segment holding the marker on */
	lp = open_log(false, mbase, 2000);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	check_recovered(lp, m1);
	log_close(lp);
	/* and with nothing to recover: the state from the latest roll snapshot
	 * plus the batches after it */
	lp = open_log(true, -1, 3000);
	leo = log_end_offset(lp);
	log_close(lp);
	tu_seg_path(path, sizeof path, pdir, leo, ".snapshot");
	ck_assert_int_eq(unlink(path), 0);
	lp = open_log(false, leo, 4000);
	ck_assert_int_eq(txn_first(lp, 2), -1);
	log_set_high_watermark(lp, leo);
	ck_assert_int_eq(log_last_stable_offset(lp), leo);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, leo, &c), 2);
	log_close(lp);
}
END_TEST

START_TEST(truncation_cuts_txnindex)
{
	cfg.segment_bytes = 250;
	log_partition *lp = open_log(false, -1, 0);
	int64_t m1;
	write_txns(lp, &m1);
	/* a second abort later, in another segment */
	ck_assert_int_eq(tapp(lp, 4, 0, 0, 1, true, NULL), 0);
	ck_assert_int_eq(tapp(lp, 4, 0, 1, 1, true, NULL), 0);
	int64_t m4 = marker(lp, 4, 0, 0, false);
	size_t s1 = log_seg_floor(lp, m1), s4 = log_seg_floor(lp, m4);
	ck_assert_uint_gt(s4, s1);
	int64_t base1 = lp->segs[s1]->base_offset, base4 = lp->segs[s4]->base_offset;
	ck_assert_int_eq(tu_count_files(pdir, ".txnindex"), 2);
	log_close(lp);
	/* corrupt a batch after m1 in its segment: recovery cuts there and
	 * deletes the later segments with their .txnindex */
	char logp[PATH_MAX];
	tu_seg_path(logp, sizeof logp, pdir, base1, ".log");
	int64_t size = tu_file_size(logp);
	int fd = open(logp, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "\xff\xff", 2, size - 5), 2);
	close(fd);
	lp = open_log(false, -1, 2000);
	ck_assert_int_lt(log_end_offset(lp), base4);
	ck_assert_int_gt(log_end_offset(lp), m1); /* m1's marker stays */
	char path[PATH_MAX];
	txnindex_path(path, base4);
	ck_assert_int_eq(tu_file_size(path), -1);
	ck_assert_int_eq(tu_count_files(pdir, ".txnindex"), 1);
	collected c;
	log_set_high_watermark(lp, log_end_offset(lp));
	ck_assert_int_eq(aborted(lp, 0, log_end_offset(lp), &c), 1);
	ck_assert_int_eq(c.v[0].last_offset, m1);
	ck_assert_int_eq(txn_first(lp, 4), -2); /* its batches went with the cut */
	log_close(lp);
}
END_TEST

START_TEST(cut_below_marker_drops_entry)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, 1, 0, 0, 2, true, NULL), 0);
	int64_t m = marker(lp, 1, 0, 0, false);
	char path[PATH_MAX];
	txnindex_path(path, 0);
	ck_assert_int_eq(tu_file_size(path), LOG_TXNINDEX_ENTRY_SIZE);
	log_close(lp);
	char logp[PATH_MAX];
	tu_seg_path(logp, sizeof logp, pdir, 0, ".log");
	/* a torn marker: the log ends before it, the entry goes, the
	 * transaction is ongoing again */
	ck_assert_int_eq(truncate(logp, tu_file_size(logp) - 10), 0);
	lp = open_log(false, -1, 2000);
	ck_assert_int_eq(log_end_offset(lp), m);
	ck_assert_int_eq(tu_file_size(path), 0);
	ck_assert_int_eq(txn_first(lp, 1), 0);
	log_set_high_watermark(lp, m);
	ck_assert_int_eq(log_last_stable_offset(lp), 0);
	log_close(lp);
}
END_TEST

START_TEST(orphan_txnindex_removed)
{
	log_partition *lp = open_log(false, -1, 0);
	log_close(lp);
	char path[PATH_MAX];
	txnindex_path(path, 500);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	close(fd);
	lp = open_log(true, -1, 1000);
	ck_assert_int_eq(tu_file_size(path), -1);
	log_close(lp);
}
END_TEST

START_TEST(plain_and_idempotent_unchanged)
{
	log_partition *lp = open_log(false, -1, 0);
	ck_assert_int_eq(tapp(lp, -1, -1, -1, 3, false, NULL), 0);
	ck_assert_int_eq(tapp(lp, 9, 0, 0, 3, false, NULL), 0);
	ck_assert_int_eq(tapp(lp, 9, 0, 3, 3, false, NULL), 0);
	log_set_high_watermark(lp, 9);
	ck_assert_int_eq(log_last_stable_offset(lp), 9);
	collected c;
	ck_assert_int_eq(aborted(lp, 0, 9, &c), 0);
	ck_assert_uint_eq(lp->producers.ntxn, 0);
	ck_assert_int_eq(tu_count_files(pdir, ".txnindex"), 0);
	log_close(lp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txn");
	TCase *tc = tcase_create("txn");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, control_batch_format);
	tcase_add_test(tc, begin_commit_abort);
	tcase_add_test(tc, markers_fenced_by_epochs);
	tcase_add_test(tc, lso_two_producers);
	tcase_add_test(tc, aborted_across_segments);
	tcase_add_test(tc, search_stops);
	tcase_add_test(tc, txnindex_round_trip_and_truncate);
	tcase_add_test(tc, snapshot_keeps_ongoing_txn);
	tcase_add_test(tc, recovery_rebuilds_txn_state);
	tcase_add_test(tc, recovery_keeps_existing_entries);
	tcase_add_test(tc, recovery_from_roll_snapshot);
	tcase_add_test(tc, truncation_cuts_txnindex);
	tcase_add_test(tc, cut_below_marker_drops_entry);
	tcase_add_test(tc, orphan_txnindex_removed);
	tcase_add_test(tc, plain_and_idempotent_unchanged);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
