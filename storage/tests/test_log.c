/*
 * test_log.c - the partition log: append (offset and epoch patching,
 * rollback of a failed write), read (max_bytes, min_one, max_offset, out of
 * range, across segments), roll by size and time, offsets by timestamp,
 * max timestamp, clean reopen, flush, leader epochs, delete and segment
 * references; the epoch-for-offset lookup and directory removal helpers;
 * blocks reserved ahead of a busy segment and given back at roll and close.
 */
#define _GNU_SOURCE /* fallocate(2) */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "protocol/batch.h"
#include "storage/fileio.h"
#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/topic-0", dir);
	log_config_defaults(&cfg);
}

static void teardown(void) { tu_rmrf(dir); }

static uint8_t bbuf[1 << 16];

/* Append one batch of n records (timestamps ts, ts+1, ...); returns its size. */
static size_t append(log_partition *lp, int n, int64_t ts, int value_size, int32_t epoch, int64_t now,
		     int64_t *base)
{
	tu_batch_opts o = { .nrecords = n, .base_ts = ts, .ts_step = 1, .value_size = value_size };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	ck_assert_int_eq(log_append(lp, bbuf, len, epoch, now, base), 0);
	return len;
}

static int64_t read_be64(int fd, int64_t pos)
{
	uint8_t b[8];
	ck_assert_int_eq(pread(fd, b, 8, pos), 8);
	int64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

START_TEST(append_patches_offsets_and_reads_back)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 0);
	int64_t base;
	size_t sz[3];
	for (int i = 0; i < 3; i++) {
		sz[i] = append(lp, 5, 1000 + 10 * i, 20, 4, 1000, &base);
		ck_assert_int_eq(base, 5 * i);
	}
	ck_assert_int_eq(log_end_offset(lp), 15);
	ck_assert_int_eq(log_size_bytes(lp), (int64_t)(sz[0] + sz[1] + sz[2]));
	ck_assert_int_eq(log_latest_epoch(lp), 4);
	ck_assert_int_eq(log_high_watermark(lp), 0);

	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, 0);
	ck_assert_int_eq(r.len, (int32_t)(sz[0] + sz[1] + sz[2]));
	/* base offsets and epochs were patched, CRC still right */
	uint8_t b[1024];
	ck_assert_int_eq(pread(r.fd, b, (size_t)r.len, 0), r.len);
	size_t pos = 0;
	for (int i = 0; i < 3; i++) {
		proto_batch_info h;
		ck_assert_int_eq(proto_batch_header(b + pos, (size_t)r.len - pos, &h), 0);
		ck_assert_int_eq(h.base_offset, 5 * i);
		ck_assert_int_eq(h.partition_leader_epoch, 4);
		ck_assert(proto_batch_crc_ok(b + pos, &h));
		pos += (size_t)h.size;
	}
	log_segment_release(r.segment);

	/* an offset inside the second batch starts at that batch */
	ck_assert_int_eq(log_read(lp, 7, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, (int64_t)sz[0]);
	ck_assert_int_eq(read_be64(r.fd, r.file_pos), 5);
	log_segment_release(r.segment);

	/* log end offset: empty; beyond or below: out of range */
	ck_assert_int_eq(log_read(lp, 15, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.len, 0);
	ck_assert_ptr_null(r.segment);
	ck_assert_int_eq(log_read(lp, 16, INT64_MAX, 1 << 20, false, &r), LOG_ERR_OFFSET_OUT_OF_RANGE);
	ck_assert_int_eq(log_read(lp, -1, INT64_MAX, 1 << 20, false, &r), LOG_ERR_OFFSET_OUT_OF_RANGE);

	/* the high watermark is clamped to [log start, log end] */
	log_set_high_watermark(lp, 100);
	ck_assert_int_eq(log_high_watermark(lp), 15);
	log_set_high_watermark(lp, -5);
	ck_assert_int_eq(log_high_watermark(lp), 0);
	log_close(lp);
}
END_TEST

START_TEST(read_max_bytes_min_one_max_offset)
{
	cfg.index_interval_bytes = 100; /* several index entries */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t sz = 0;
	for (int i = 0; i < 20; i++)
		sz = append(lp, 2, 100 + i, 50, 0, 0, &base); /* all the same size */
	ck_assert_int_eq(log_end_offset(lp), 40);
	log_read_result r;

	/* 2.5 batches of room: two whole batches */
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, (int32_t)(sz * 5 / 2), false, &r), 0);
	ck_assert_int_eq(r.len, (int32_t)(2 * sz));
	log_segment_release(r.segment);
	/* from the middle, limit falling far from an index entry */
	ck_assert_int_eq(log_read(lp, 21, INT64_MAX, (int32_t)(sz * 7 + 3), false, &r), 0);
	ck_assert_int_eq(r.file_pos, (int64_t)(10 * sz));
	ck_assert_int_eq(r.len, (int32_t)(7 * sz));
	log_segment_release(r.segment);
	/* less than one batch: nothing, unless min_one (KIP-74) */
	ck_assert_int_eq(log_read(lp, 4, INT64_MAX, 10, false, &r), 0);
	ck_assert_int_eq(r.len, 0);
	ck_assert_ptr_null(r.segment);
	ck_assert_int_eq(log_read(lp, 4, INT64_MAX, 10, true, &r), 0);
	ck_assert_int_eq(r.file_pos, (int64_t)(2 * sz));
	ck_assert_int_eq(r.len, (int32_t)sz);
	log_segment_release(r.segment);
	/* the high watermark ends the read: batches up to offset 12 */
	ck_assert_int_eq(log_read(lp, 3, 12, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, (int64_t)sz);
	ck_assert_int_eq(r.len, (int32_t)(5 * sz));
	log_segment_release(r.segment);
	/* a batch straddling max_offset is not returned */
	ck_assert_int_eq(log_read(lp, 0, 13, 1 << 20, true, &r), 0);
	ck_assert_int_eq(r.len, (int32_t)(6 * sz));
	log_segment_release(r.segment);
	/* at the high watermark: nothing even with min_one */
	ck_assert_int_eq(log_read(lp, 12, 12, 1 << 20, true, &r), 0);
	ck_assert_int_eq(r.len, 0);
	/* max_bytes and max_offset together: the smaller wins */
	ck_assert_int_eq(log_read(lp, 0, 30, (int32_t)(3 * sz), false, &r), 0);
	ck_assert_int_eq(r.len, (int32_t)(3 * sz));
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

START_TEST(roll_by_size_and_read_across)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t sz = append(lp, 3, 10, 100, 0, 0, &base);
	cfg.segment_bytes = (int64_t)(sz * 2 + sz / 2);
	log_set_config(lp, &cfg);
	for (int i = 1; i < 7; i++)
		append(lp, 3, 10 + i, 100, 0, 0, &base);
	/* 2 batches per segment: bases 0, 6, 12, 18 */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 4);
	char p[PATH_MAX];
	int64_t bases[] = { 0, 6, 12, 18 };
	for (int i = 0; i < 4; i++) {
		tu_seg_path(p, sizeof p, pdir, bases[i], ".log");
		ck_assert_int_eq(tu_file_size(p), i < 3 ? (int64_t)(2 * sz) : (int64_t)sz);
		tu_seg_path(p, sizeof p, pdir, bases[i], ".index");
		ck_assert_int_ge(tu_file_size(p), 0);
		tu_seg_path(p, sizeof p, pdir, bases[i], ".timeindex");
		/* rolled segments end with their max timestamp entry */
		ck_assert_int_ge(tu_file_size(p), i < 3 ? 12 : 0);
	}
	ck_assert_int_eq(log_end_offset(lp), 21);
	log_read_result r;
	/* a read stays in one segment */
	ck_assert_int_eq(log_read(lp, 2, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, 0);
	ck_assert_int_eq(r.len, (int32_t)(2 * sz));
	log_segment_release(r.segment);
	ck_assert_int_eq(log_read(lp, 13, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, 0);
	ck_assert_int_eq(read_be64(r.fd, 0), 12);
	ck_assert_int_eq(r.len, (int32_t)(2 * sz));
	log_segment_release(r.segment);
	ck_assert_int_eq(log_read(lp, 15, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(r.file_pos, (int64_t)sz);
	ck_assert_int_eq(read_be64(r.fd, r.file_pos), 15);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

/* Bytes of disk blocks held by a file, and whether the file system can
 * reserve blocks past the end at all. */
static int64_t allocated_bytes(const char *path)
{
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	return (int64_t)st.st_blocks * 512;
}

static bool can_preallocate(void)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/probe", dir);
	int fd = open(p, O_RDWR | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	bool ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
	close(fd);
	unlink(p);
	return ok;
}

/* A busy active segment has blocks reserved ahead of its end (the file size
 * stays the data's); rolling and closing give them back. */
START_TEST(preallocated_ahead_and_trimmed)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base, total = 0;
	/* up to 1 MiB nothing is reserved; the next append reserves as much
	 * again past its end */
	while (total < (1 << 20))
		total += (int64_t)append(lp, 50, 10, 1000, 0, 0, &base);
	total += (int64_t)append(lp, 50, 10, 1000, 0, 0, &base);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".log");
	ck_assert_int_eq(tu_file_size(p), total);
	if (can_preallocate())
		ck_assert_int_ge(allocated_bytes(p), total + (1 << 20));
	ck_assert_int_eq(log_roll(lp, 0), 0);
	ck_assert_int_eq(tu_file_size(p), total);
	ck_assert_int_lt(allocated_bytes(p), total + (64 << 10));
	/* the next segment, then close */
	int64_t second = 0, first_next = log_end_offset(lp);
	while (second < total)
		second += (int64_t)append(lp, 50, 10, 1000, 0, 0, &base);
	log_close(lp);
	tu_seg_path(p, sizeof p, pdir, first_next, ".log");
	ck_assert_int_eq(tu_file_size(p), second);
	ck_assert_int_lt(allocated_bytes(p), second + (64 << 10));
	/* what was written reads back after the reserve and trims */
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 2 * first_next); /* the same batches twice */
	log_close(lp);
}
END_TEST

START_TEST(roll_by_time)
{
	cfg.segment_ms = 1000;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	/* Kafka's rule: the new batch's timestamp against the segment's first */
	append(lp, 1, 10000, 10, 0, 0, &base);
	append(lp, 1, 10900, 10, 0, 0, &base);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	append(lp, 1, 11001, 10, 0, 0, &base);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 2, ".log");
	ck_assert_int_gt(tu_file_size(p), 0);
	/* batches without timestamps: the segment's age by the broker clock */
	append(lp, 1, -1, 10, 0, 50000, &base); /* rolls: 11001 -> -1? no: -1 - 11001 < 0 */
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	log_close(lp);
	tu_rmrf(pdir);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	append(lp, 1, -1, 10, 0, 1500, &base);
	append(lp, 1, -1, 10, 0, 2000, &base);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 1);
	append(lp, 1, -1, 10, 0, 2001, &base);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 2);
	log_close(lp);
}
END_TEST

START_TEST(failed_append_leaves_nothing)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t sz = append(lp, 2, 5, 30, 0, 0, &base);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".log");
	/* the file may not grow past sz + 20 bytes: the next write is short */
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = sz + 20;
	tu_batch_opts o = { .nrecords = 2, .base_ts = 5, .ts_step = 1, .value_size = 30 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	/* no check assertion while the limit holds: check writes its own
	 * messages to a file when CK_FORK=no */
	int lrc = setrlimit(RLIMIT_FSIZE, &lim);
	int rc = log_append(lp, bbuf, len, 0, 0, &base);
	setrlimit(RLIMIT_FSIZE, &old);
	ck_assert_int_eq(lrc, 0);
	ck_assert(rc == -EFBIG || rc == -ENOSPC);
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
	ck_assert_int_eq(log_end_offset(lp), 2);
	ck_assert_int_eq(log_size_bytes(lp), (int64_t)sz);
	/* garbage is refused before anything is written */
	memset(bbuf, 0x5a, 100);
	ck_assert_int_eq(log_append(lp, bbuf, 100, 0, 0, &base), -EINVAL);
	ck_assert_int_eq(log_append(lp, bbuf, 10, 0, 0, &base), -EINVAL);
	ck_assert_int_eq(tu_file_size(p), (int64_t)sz);
	/* and the next append takes the same offsets */
	append(lp, 2, 5, 30, 0, 0, &base);
	ck_assert_int_eq(base, 2);
	log_close(lp);
}
END_TEST

START_TEST(offset_for_timestamp)
{
	cfg.index_interval_bytes = 1;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base, off, ts;
	ck_assert_int_eq(log_offset_for_timestamp(lp, 0, &off, &ts), 0);
	ck_assert_int_eq(off, -1);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, -1);
	ck_assert_int_eq(ts, -1);
	/* batch i: 10 records with timestamps 1000*i + 0..9 */
	size_t sz = 0;
	for (int i = 1; i <= 6; i++)
		sz = append(lp, 10, 1000 * i, 5, 0, 0, &base);
	cfg.segment_bytes = (int64_t)sz * 2;
	log_set_config(lp, &cfg);
	for (int i = 7; i <= 10; i++)
		append(lp, 10, 1000 * i, 5, 0, 0, &base);
	ck_assert_int_gt(tu_count_files(pdir, ".log"), 1);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 0, &off, &ts), 0);
	ck_assert_int_eq(off, 0);
	ck_assert_int_eq(ts, 1000);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 3004, &off, &ts), 0);
	ck_assert_int_eq(off, 24); /* the record, not the batch */
	ck_assert_int_eq(ts, 3004);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 3500, &off, &ts), 0);
	ck_assert_int_eq(off, 30);
	ck_assert_int_eq(ts, 4000);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 8009, &off, &ts), 0); /* in a later segment */
	ck_assert_int_eq(off, 79);
	ck_assert_int_eq(ts, 8009);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 10010, &off, &ts), 0);
	ck_assert_int_eq(off, -1);
	ck_assert_int_eq(ts, -1);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, 99);
	ck_assert_int_eq(ts, 10009);

	/* an older batch after: max timestamp stays; LogAppendTime gives the batch start */
	append(lp, 3, 500, 5, 0, 0, &base);
	tu_batch_opts o = { .nrecords = 4, .base_ts = 20000, .ts_step = 1, .value_size = 5, .log_append_time = true };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	ck_assert_int_eq(base, 103);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 20001, &off, &ts), 0);
	ck_assert_int_eq(off, 103);
	ck_assert_int_eq(ts, 20003);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, 103);
	ck_assert_int_eq(ts, 20003);

	/* the same after a clean reopen (time indexes from disk) */
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 3004, &off, &ts), 0);
	ck_assert_int_eq(off, 24);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 8009, &off, &ts), 0);
	ck_assert_int_eq(off, 79);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, 103);
	ck_assert_int_eq(ts, 20003);
	log_close(lp);
}
END_TEST

/* gzip the records of a batch built by tu_batch (in place); returns the new size. */
static size_t gzip_batch(uint8_t *b, size_t len)
{
	static uint8_t out[1 << 16];
	z_stream z = { 0 };
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = b + PROTO_BATCH_HEADER_SIZE;
	z.avail_in = (uInt)(len - PROTO_BATCH_HEADER_SIZE);
	z.next_out = out;
	z.avail_out = sizeof out;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t clen = z.total_out;
	deflateEnd(&z);
	memcpy(b + PROTO_BATCH_HEADER_SIZE, out, clen);
	size_t size = PROTO_BATCH_HEADER_SIZE + clen;
	uint32_t blen = (uint32_t)(size - 12);
	b[8] = (uint8_t)(blen >> 24);
	b[9] = (uint8_t)(blen >> 16);
	b[10] = (uint8_t)(blen >> 8);
	b[11] = (uint8_t)blen;
	b[PROTO_BATCH_OFF_ATTRIBUTES + 1] |= PROTO_COMPRESSION_GZIP;
	tu_batch_fix_crc(b);
	return size;
}

START_TEST(offset_for_timestamp_compressed)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base, off, ts;
	append(lp, 4, 100, 10, 0, 0, &base);
	tu_batch_opts o = { .nrecords = 20, .base_ts = 1000, .ts_step = 10, .value_size = 40 };
	size_t len = gzip_batch(bbuf, tu_batch(bbuf, sizeof bbuf, &o));
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	ck_assert_int_eq(base, 4);
	ck_assert_int_eq(log_offset_for_timestamp(lp, 1055, &off, &ts), 0);
	ck_assert_int_eq(off, 4 + 6);
	ck_assert_int_eq(ts, 1060);
	ck_assert_int_eq(log_max_timestamp(lp, &off, &ts), 0);
	ck_assert_int_eq(off, 23);
	ck_assert_int_eq(ts, 1190);
	log_close(lp);
}
END_TEST

START_TEST(clean_reopen_keeps_everything)
{
	cfg.index_interval_bytes = 200;
	cfg.segment_bytes = 3000;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t sz = 0;
	for (int i = 0; i < 40; i++)
		sz = append(lp, 3, 100 * i, 40, i / 10, 0, &base);
	int64_t leo = log_end_offset(lp), bytes = log_size_bytes(lp);
	int nseg = tu_count_files(pdir, ".log");
	ck_assert_int_gt(nseg, 2);
	log_read_result r1;
	ck_assert_int_eq(log_read(lp, 61, INT64_MAX, 500, true, &r1), 0);
	log_close(lp);
	/* the fd of a held segment survives the close */
	ck_assert_int_eq(read_be64(r1.fd, r1.file_pos), 60);

	/* clean open scans no batch: a flipped byte in the first batch's records
	 * stays unnoticed (it would be cut by a recovery) */
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".log");
	int fd = open(p, O_RDWR);
	ck_assert_int_eq(pwrite(fd, "Z", 1, 70), 1);
	close(fd);

	ck_assert_int_eq(log_open(pdir, &cfg, true, leo, -1, 0, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), leo);
	ck_assert_int_eq(log_size_bytes(lp), bytes);
	ck_assert_int_eq(log_recovery_point(lp), leo);
	ck_assert_int_eq(log_latest_epoch(lp), 3);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), nseg);
	log_read_result r2;
	ck_assert_int_eq(log_read(lp, 61, INT64_MAX, 500, true, &r2), 0);
	ck_assert_int_eq(r2.file_pos, r1.file_pos);
	ck_assert_int_eq(r2.len, r1.len);
	log_segment_release(r1.segment);
	log_segment_release(r2.segment);
	append(lp, 3, 5000, 40, 3, 0, &base);
	ck_assert_int_eq(base, leo);
	log_close(lp);
	(void)sz;
}
END_TEST

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

START_TEST(offset_for_timestamp_loads_one_segment)
{
	/* A lookup of a recent timestamp must not read the indexes of the older
	 * segments (each load reads the files and keeps two fds open): their max
	 * timestamps are known from open. */
	cfg.segment_bytes = 500; /* two batches per segment */
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	for (int i = 0; i < 60; i++)
		append(lp, 3, 100 * i, 40, 0, 0, &base);
	int nseg = tu_count_files(pdir, ".log");
	ck_assert_int_ge(nseg, 20);
	ck_assert_int_eq(log_flush(lp), 0);
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, leo, -1, 0, &lp), 0);
	int before = count_open_fds();
	int64_t off, ts;
	/* batch 55 (offsets 165..167, timestamps 5500..5502): not the active segment */
	ck_assert_int_eq(log_offset_for_timestamp(lp, 5501, &off, &ts), 0);
	ck_assert_int_eq(off, 166);
	ck_assert_int_eq(ts, 5501);
	/* at most the .index and .timeindex of the segment holding the answer */
	ck_assert_int_le(count_open_fds(), before + 2);
	/* an older timestamp still finds its (now loaded) segment */
	ck_assert_int_eq(log_offset_for_timestamp(lp, 201, &off, &ts), 0);
	ck_assert_int_eq(off, 7);
	ck_assert_int_eq(ts, 201);
	ck_assert_int_le(count_open_fds(), before + 4);
	log_close(lp);
}
END_TEST

START_TEST(new_log_holds_one_fd)
{
	/* An empty partition keeps only its .log open: the index files exist
	 * but get an fd with their first entry (many partitions, few fds). */
	cfg.index_interval_bytes = 200;
	int before = count_open_fds();
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(count_open_fds(), before + 1);
	char ix[PATH_MAX], tix[PATH_MAX];
	tu_seg_path(ix, sizeof ix, pdir, 0, ".index");
	tu_seg_path(tix, sizeof tix, pdir, 0, ".timeindex");
	ck_assert_int_eq(tu_file_size(ix), 0);
	ck_assert_int_eq(tu_file_size(tix), 0);
	int64_t base;
	for (int i = 0; i < 20; i++)
		append(lp, 3, 100 * i, 40, 0, 0, &base);
	ck_assert_int_gt(tu_file_size(ix), 0);
	ck_assert_int_gt(tu_file_size(tix), 0);
	ck_assert_int_eq(log_flush(lp), 0);
	int64_t leo = log_end_offset(lp);
	log_close(lp);
	ck_assert_int_eq(count_open_fds(), before);
	/* The lazily written indexes are whole: a clean open uses them. */
	ck_assert_int_eq(log_open(pdir, &cfg, true, leo, -1, 0, &lp), 0);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 31, INT64_MAX, 100, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	ck_assert_int_eq(read_be64(r.fd, r.file_pos), 30);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

START_TEST(flush_and_recovery_point)
{
	cfg.flush_messages = 5;
	cfg.flush_ms = 1000;
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	ck_assert(!log_flush_due(lp, 0));
	append(lp, 2, 1, 10, 0, 100, &base);
	ck_assert_int_eq(log_recovery_point(lp), 0);
	ck_assert(!log_flush_due(lp, 500));
	ck_assert(log_flush_due(lp, 1100)); /* flush.ms since the first unflushed append */
	append(lp, 3, 1, 10, 0, 200, &base);
	ck_assert(log_flush_due(lp, 200)); /* flush.messages */
	log_flush_job *job;
	ck_assert_int_eq(log_flush_begin(lp, &job), 0);
	ck_assert(!log_flush_due(lp, 5000));
	append(lp, 1, 1, 10, 0, 300, &base);
	ck_assert_int_eq(log_flush_run(job), 0);
	ck_assert_int_eq(log_flush_end(lp, job), 0);
	ck_assert_int_eq(log_recovery_point(lp), 5);
	ck_assert(!log_flush_due(lp, 1299));
	ck_assert(log_flush_due(lp, 1300));
	ck_assert_int_eq(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 6);
	ck_assert(!log_flush_due(lp, 100000));
	log_close(lp);
}
END_TEST

/* A clean close writes and fsyncs nothing for a log nothing was written to
 * since its last flush (issue 15: a clean shutdown fsynced every
 * partition); after appends, one flush covers the data, the closing time
 * index entry and the producer snapshot. */
START_TEST(idle_close_flushes_nothing)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	tu_batch_opts o = { .nrecords = 3, .base_ts = 100, .ts_step = 1, .value_size = 10 };
	size_t len = tu_batch(bbuf, sizeof bbuf, &o);
	tu_batch_set_producer(bbuf, 7, 0, 0, false);
	ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
	log_close(lp);
	char snap[PATH_MAX];
	tu_seg_path(snap, sizeof snap, pdir, 3, ".snapshot");
	ck_assert_int_gt(tu_file_size(snap), 0);

	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(log_open(pdir, &cfg, true, 3 + round * 3, -1, 0, &lp), 0);
		log_prepare_close(lp);
		log_flush_job *job;
		ck_assert_int_eq(log_flush_begin(lp, &job), 0);
		ck_assert_msg(log_flush_job_empty(job), "round %d: an idle log has something to flush", round);
		ck_assert_int_eq(log_flush_run(job), 0);
		ck_assert_int_eq(log_flush_end(lp, job), 0);
		if (round == 1) {
			log_close(lp);
			break;
		}
		/* an append: its data, the closing time index entry and the
		 * snapshot at the new end go in one flush */
		tu_batch_set_producer(bbuf, 7, 0, 3, false);
		ck_assert_int_eq(log_append(lp, bbuf, len, 0, 0, &base), 0);
		log_prepare_close(lp);
		tu_seg_path(snap, sizeof snap, pdir, 6, ".snapshot");
		ck_assert_int_gt(tu_file_size(snap), 0);
		ck_assert_int_eq(log_flush_begin(lp, &job), 0);
		ck_assert(!log_flush_job_empty(job));
		ck_assert_int_eq(log_flush_run(job), 0);
		ck_assert_int_eq(log_flush_end(lp, job), 0);
		ck_assert_int_eq(log_recovery_point(lp), 6);
		log_prepare_close(lp);
		ck_assert_int_eq(log_flush_begin(lp, &job), 0);
		ck_assert(log_flush_job_empty(job));
		ck_assert_int_eq(log_flush_run(job), 0);
		ck_assert_int_eq(log_flush_end(lp, job), 0);
		log_close(lp);
	}
}
END_TEST

START_TEST(leader_epochs)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), -1);
	int64_t base;
	append(lp, 5, 1, 10, 3, 0, &base);
	append(lp, 5, 1, 10, 3, 0, &base);
	append(lp, 5, 1, 10, 7, 0, &base);
	append(lp, 5, 1, 10, 2, 0, &base); /* lower epoch: not recorded */
	ck_assert_int_eq(log_latest_epoch(lp), 7);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/leader-epoch-checkpoint", pdir);
	size_t len;
	uint8_t *text = tu_read_file(p, &len);
	ck_assert_uint_eq(len, strlen("0\n2\n3 0\n7 10\n"));
	ck_assert_int_eq(memcmp(text, "0\n2\n3 0\n7 10\n", len), 0);
	free(text);
	int32_t e;
	int64_t end;
	log_end_offset_for_epoch(lp, 7, &e, &end);
	ck_assert_int_eq(e, 7);
	ck_assert_int_eq(end, 20);
	log_end_offset_for_epoch(lp, 5, &e, &end);
	ck_assert_int_eq(e, 3);
	ck_assert_int_eq(end, 10);
	log_end_offset_for_epoch(lp, 1, &e, &end);
	ck_assert_int_eq(e, 1);
	ck_assert_int_eq(end, 0);
	log_end_offset_for_epoch(lp, 9, &e, &end);
	ck_assert_int_eq(e, -1);
	ck_assert_int_eq(end, -1);
	/* the epoch of the batch holding an offset (epochForOffset) */
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 0), 3);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 9), 3);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 10), 7);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 19), 7);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, 1000), 7);
	ck_assert_int_eq(log_leader_epoch_for_offset(lp, -1), -1);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 0, &lp), 0);
	ck_assert_int_eq(log_latest_epoch(lp), 7);
	log_close(lp);
}
END_TEST

START_TEST(delete_and_segment_refs)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 0, &lp), 0);
	int64_t base;
	size_t sz = append(lp, 4, 1, 10, 0, 0, &base);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1 << 20, false, &r), 0);
	ck_assert_int_eq(log_delete(lp), 0);
	struct stat st;
	ck_assert_int_eq(stat(pdir, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* the fetch still sends from its segment */
	uint8_t b[512];
	ck_assert_int_eq(pread(r.fd, b, (size_t)r.len, r.file_pos), (ssize_t)sz);
	proto_batch_info h;
	ck_assert_int_eq(proto_batch_header(b, sz, &h), 0);
	ck_assert(proto_batch_crc_ok(b, &h));
	log_segment_keep(r.segment);
	log_segment_release(r.segment);
	log_segment_release(r.segment);
}
END_TEST

START_TEST(epoch_for_offset_cache)
{
	log_epoch_cache c = { 0 };
	ck_assert_int_eq(log_epoch_for_offset(&c, 0), -1);
	log_epoch_entry e[] = { { 2, 100 }, { 5, 150 }, { 9, 400 } };
	c.e = e;
	c.n = 3;
	ck_assert_int_eq(log_epoch_for_offset(&c, 99), -1); /* below the first entry */
	ck_assert_int_eq(log_epoch_for_offset(&c, 100), 2);
	ck_assert_int_eq(log_epoch_for_offset(&c, 149), 2);
	ck_assert_int_eq(log_epoch_for_offset(&c, 150), 5);
	ck_assert_int_eq(log_epoch_for_offset(&c, 399), 5);
	ck_assert_int_eq(log_epoch_for_offset(&c, 400), 9);
	ck_assert_int_eq(log_epoch_for_offset(&c, INT64_MAX), 9);
}
END_TEST

START_TEST(remove_dir)
{
	ck_assert_int_eq(mkdir(pdir, 0755), 0);
	char p[PATH_MAX + 16];
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/f%d", pdir, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "x", 1), 1);
		close(fd);
	}
	ck_assert_int_eq(log_io_remove_dir(pdir), 0);
	struct stat st;
	ck_assert_int_eq(stat(pdir, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(log_io_remove_dir(pdir), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, append_patches_offsets_and_reads_back);
	tcase_add_test(tc, read_max_bytes_min_one_max_offset);
	tcase_add_test(tc, roll_by_size_and_read_across);
	tcase_add_test(tc, roll_by_time);
	tcase_add_test(tc, failed_append_leaves_nothing);
	tcase_add_test(tc, offset_for_timestamp);
	tcase_add_test(tc, offset_for_timestamp_compressed);
	tcase_add_test(tc, clean_reopen_keeps_everything);
	tcase_add_test(tc, offset_for_timestamp_loads_one_segment);
	tcase_add_test(tc, new_log_holds_one_fd);
	tcase_add_test(tc, flush_and_recovery_point);
	tcase_add_test(tc, idle_close_flushes_nothing);
	tcase_add_test(tc, leader_epochs);
	tcase_add_test(tc, delete_and_segment_refs);
	tcase_add_test(tc, epoch_for_offset_cache);
	tcase_add_test(tc, remove_dir);
	tcase_add_test(tc, preallocated_ahead_and_trimmed);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
