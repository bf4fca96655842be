/*
 * test_files.c - the descriptors the segments of a log hold: the index
 * files of every segment but the active one hold none (read into memory,
 * written through a descriptor opened for the write); a .log is opened
 * when first read, and only the file it was (device and inode); the
 * open-file cache (filecache.h) on its own, then logs sharing one: its
 * bound, a send keeping a segment open across eviction, a response
 * waiting to be sent holding none, index lookups
 * on closed segments, truncation, retention and recovery after a kill
 * with closed segments, running out of descriptors.
 */
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
#include <sys/wait.h>
#include <unistd.h>

#include "storage/filecache.h"
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
	snprintf(pdir, sizeof pdir, "%s/topic-0", dir);
	log_config_defaults(&cfg);
	cfg.segment_bytes = 1;         /* every append rolls */
	cfg.index_interval_bytes = 0;  /* an index entry for every batch but the first */
}

static void teardown(void) { tu_rmrf(dir); }

/* Descriptors of this process open on files of the partition directory
 * whose name ends with suffix. */
static int fds_on(const char *suffix)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char link[PATH_MAX + 64], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
		ssize_t len = readlink(link, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		size_t sl = strlen(suffix);
		if (strncmp(target, pdir, strlen(pdir)) == 0 && (size_t)len >= sl &&
		    strcmp(target + len - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static uint8_t bbuf[1 << 12];

/* n appends of two batches of 2 records each: n segments at segment_bytes
 * 1, each with an offset index entry (for its second batch). */
static void fill(log_partition *lp, int n, int64_t ts)
{
	for (int i = 0; i < n; i++) {
		tu_batch_opts o = { .nrecords = 2, .base_ts = ts + i, .ts_step = 1, .value_size = 100 };
		size_t len = tu_batch(bbuf, sizeof bbuf / 2, &o);
		memcpy(bbuf + len, bbuf, len);
		int64_t base;
		ck_assert_int_eq(log_append(lp, bbuf, 2 * len, 0, ts, &base), 0);
	}
}

/* Read every batch of the log, one log_read per batch. */
static void read_all(log_partition *lp)
{
	for (int64_t off = log_start_offset(lp); off < log_end_offset(lp);) {
		log_read_result r;
		ck_assert_int_eq(log_read(lp, off, INT64_MAX, 1, true, &r), 0);
		ck_assert_int_gt(r.len, 0);
		off = r.next_offset;
		log_segment_release(r.segment);
	}
}

START_TEST(closed_segments_hold_no_index_descriptor)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 30, 1000);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 30);
	/* the active segment's indexes at most */
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	read_all(lp);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	ck_assert_int_eq(log_flush(lp), 0);
	log_close(lp);
	ck_assert_int_eq(fds_on(""), 0);

	/* an unclean open rebuilds every index: still only the active's */
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 2000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 120);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	read_all(lp);
	fill(lp, 3, 3000);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	ck_assert_int_eq(fds_on(".txnindex"), 0);
	log_close(lp);
}
END_TEST

START_TEST(clean_open_opens_only_what_it_reads)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 30, 1000);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 120);
	ck_assert_int_eq(fds_on(".log"), 1); /* the active segment's tail was read */
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	ck_assert_int_eq(fds_on(".log"), 2);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

/* A segment is known by its file, not its name: a file put in its place
 * is not read as the segment. */
START_TEST(another_file_under_the_name_is_not_read)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 3, 1000);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	char path[PATH_MAX], moved[PATH_MAX + 8];
	tu_seg_path(path, sizeof path, pdir, 0, ".log");
	snprintf(moved, sizeof moved, "%s.away", path);
	size_t len;
	uint8_t *bytes = tu_read_file(path, &len);
	ck_assert_int_eq(rename(path, moved), 0);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), -ESTALE);
	ck_assert_int_eq(rename(moved, path), 0);
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

/* ---- the cache alone ---- */

typedef struct fake {
	log_fcache_entry e;
	bool busy, closed;
} fake;

static bool fake_evict(log_fcache_entry *e)
{
	fake *f = (fake *)(void *)e;
	if (f->busy)
		return false;
	f->closed = true;
	return true;
}

static void fake_add(log_file_cache *fc, fake *f, int32_t w)
{
	f->closed = false;
	log_fcache_add(fc, &f->e, w, fake_evict);
}

START_TEST(cache_closes_least_recently_used)
{
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	fake f[6] = { 0 };
	for (int i = 0; i < 3; i++)
		fake_add(&fc, &f[i], 1);
	ck_assert_int_eq(fc.held, 3);
	ck_assert(!f[0].closed);
	fake_add(&fc, &f[3], 1); /* 0 is the least recently used */
	ck_assert(f[0].closed && !f[0].e.cache);
	log_fcache_touch(&f[1].e);
	fake_add(&fc, &f[4], 1); /* 1 was used since: 2 goes */
	ck_assert(f[2].closed && !f[1].closed);
	ck_assert_int_eq(fc.held, 3);
	ck_assert_int_eq(fc.entries, 3);
	/* growing an entry closes others, never itself */
	log_fcache_reweigh(&f[4].e, 3);
	ck_assert(!f[4].closed && f[3].closed && f[1].closed);
	ck_assert_int_eq(fc.held, 3);
	ck_assert_uint_eq(fc.evictions, 4);
	/* a lower capacity trims at once */
	log_fcache_set_capacity(&fc, 1);
	ck_assert(f[4].closed);
	ck_assert_int_eq(fc.held, 0);
	/* an entry alone over the capacity stays, until another comes */
	fake_add(&fc, &f[5], 3);
	ck_assert(!f[5].closed);
	ck_assert_int_eq(fc.held, 3);
	fake_add(&fc, &f[4], 1);
	ck_assert(f[5].closed && !f[4].closed);
	ck_assert_int_eq(fc.held, 1);
	log_fcache_remove(&f[4].e);
	log_fcache_remove(&f[4].e); /* in no list: a no-op */
	ck_assert_int_eq(fc.held, 0);
	log_fcache_destroy(&fc);
}
END_TEST

START_TEST(cache_keeps_entries_in_use)
{
	log_file_cache fc;
	log_fcache_init(&fc, 2);
	fake f[4] = { 0 };
	fake_add(&fc, &f[0], 1);
	fake_add(&fc, &f[1], 1);
	f[0].busy = true;
	fake_add(&fc, &f[2], 1); /* 0 in use: asked, kept, to the front; 1 goes */
	ck_assert(!f[0].closed && f[1].closed);
	ck_assert_uint_eq(fc.busy, 1);
	ck_assert_int_eq(fc.held, 2);
	f[2].busy = true;
	fake_add(&fc, &f[3], 1); /* both others in use: over the capacity */
	ck_assert(!f[0].closed && !f[2].closed && !f[3].closed);
	ck_assert_int_eq(fc.held, 3);
	f[0].busy = f[2].busy = false; /* released: the next trim closes them */
	ck_assert_int_eq(log_fcache_trim(&fc, &f[3].e), 1);
	ck_assert_int_eq(fc.held, 2);
	ck_assert_int_eq(log_fcache_shed(&fc, NULL), 2);
	ck_assert_int_eq(fc.held, 0);
	log_fcache_destroy(&fc);
}
END_TEST

/* ---- logs sharing a cache ---- */

#define CAP 4

/* Every file of the partition directory this process holds open. */
static int held(void) { return fds_on(""); }

START_TEST(cache_bounds_descriptors_and_reopens)
{
	log_file_cache fc;
	log_fcache_init(&fc, CAP);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	for (int i = 0; i < 50; i++) {
		fill(lp, 1, 1000 + 10 * i);
		ck_assert_int_le(held(), CAP);
	}
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 50);
	tu_log_state a;
	tu_log_state_get(lp, &a); /* reads every batch: reopens every segment */
	ck_assert_int_le(held(), CAP);
	ck_assert_int_le(fc.held, CAP);
	ck_assert_uint_gt(fc.evictions, 40);
	ck_assert_int_eq(log_flush(lp), 0);
	log_close(lp);
	ck_assert_int_eq(held(), 0);
	ck_assert_int_eq(fc.entries, 0);
	/* the same log, read without a cache */
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	tu_log_state b;
	tu_log_state_get(lp, &b);
	tu_log_state_assert_eq(&a, &b);
	ck_assert_int_eq(fds_on(".log"), 50);
	log_close(lp);
	tu_log_state_free(&a);
	tu_log_state_free(&b);
	log_fcache_destroy(&fc);
}
END_TEST

static int64_t be64_at(int fd, int64_t pos)
{
	uint8_t b[8];
	ck_assert_int_eq(pread(fd, b, 8, pos), 8);
	int64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* A send in progress (a pinned segment: log_segment_pin) keeps its
 * segment open while the cache closes everything else, and while retention
 * removes it; unpinned, it is closed by a later trim. (3: the active
 * segment's .log and indexes.) */
START_TEST(pinned_segment_stays_open_across_eviction)
{
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 20, 1000);
	log_close(lp);
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	log_set_high_watermark(lp, log_end_offset(lp));
	log_read_result held0;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &held0), 0);
	ck_assert_int_gt(held0.len, 0);
	int fd0 = log_segment_pin(held0.segment);
	ck_assert_int_ge(fd0, 0);
	struct stat a, b;
	ck_assert_int_eq(fstat(fd0, &a), 0);
	read_all(lp); /* every other segment opened and closed again */
	ck_assert_uint_gt(fc.evictions, 10);
	ck_assert_uint_gt(fc.busy, 0);
	ck_assert_int_eq(fds_on("00000000000000000000.log"), 1);
	ck_assert_int_le(held(), 3 + 1);
	ck_assert_int_eq(fstat(fd0, &b), 0); /* the same file, still open */
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	ck_assert_int_eq(be64_at(fd0, held0.file_pos), 0);
	/* retention takes the segment away: the send still reads it */
	ck_assert_int_eq(log_advance_start_offset(lp, 8), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".log.deleted"), 2);
	ck_assert_int_eq(fds_on("00000000000000000000.log.deleted"), 1);
	ck_assert_int_eq(be64_at(fd0, held0.file_pos), 0);
	log_segment_unpin(held0.segment);
	log_segment_release(held0.segment); /* its last reference: closed */
	ck_assert_int_eq(fds_on("00000000000000000000.log.deleted"), 0);
	/* a segment still in the log: closed by a later trim once unpinned */
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 40, INT64_MAX, 1, true, &r), 0);
	ck_assert_int_ge(log_segment_pin(r.segment), 0);
	read_all(lp);
	ck_assert_int_eq(fds_on("00000000000000000040.log"), 1);
	log_segment_unpin(r.segment);
	log_segment_release(r.segment);
	read_all(lp);
	ck_assert_int_eq(fds_on("00000000000000000040.log"), 0);
	ck_assert_int_le(held(), 3);
	log_close(lp);
	log_fcache_destroy(&fc);
}
END_TEST

/* A response waiting to be sent holds a reference, not the descriptor:
 * the cache closes the segment meanwhile, and the send opens it again
 * (log_segment_pin), also after the segment left the log (its file renamed
 * *.deleted), where the drop opens it for the reference holders. */
START_TEST(waiting_response_holds_no_descriptor)
{
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 20, 1000);
	log_set_high_watermark(lp, log_end_offset(lp));
	log_read_result r0, r40;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r0), 0);
	ck_assert_int_eq(log_read(lp, 40, INT64_MAX, 1, true, &r40), 0);
	read_all(lp);
	ck_assert_int_eq(fds_on("00000000000000000000.log"), 0);
	ck_assert_int_eq(fds_on("00000000000000000040.log"), 0);
	ck_assert_uint_eq(fc.busy, 0);
	/* sent now: opened again, the bytes those of the read */
	int fd = log_segment_pin(r40.segment);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(be64_at(fd, r40.file_pos), 40);
	log_segment_unpin(r40.segment);
	log_segment_release(r40.segment);
	/* retention removes segment 0 while a response holds it: the drop
	 * opens its renamed file for it, the send reads the same bytes */
	ck_assert_int_eq(log_advance_start_offset(lp, 8), 0);
	ck_assert_int_eq(fds_on("00000000000000000000.log.deleted"), 1);
	fd = log_segment_pin(r0.segment);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(be64_at(fd, r0.file_pos), 0);
	log_segment_unpin(r0.segment);
	log_segment_release(r0.segment);
	ck_assert_int_eq(fds_on(".deleted"), 0);
	log_close(lp);
	log_fcache_destroy(&fc);
}
END_TEST

/* Index lookups (by offset and by time) on segments the cache closed,
 * whose indexes went back to disk. */
START_TEST(index_lookups_on_closed_segments)
{
	log_file_cache fc;
	log_fcache_init(&fc, 2);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 20, 100000); /* segment i: offsets 4i..4i+3, timestamps 100000 + i */
	read_all(lp);
	log_segment *s5 = lp->segs[5];
	ck_assert_int_eq(s5->base_offset, 20);
	ck_assert(!s5->oidx.loaded && !s5->tidx.loaded); /* closed, indexes unloaded */
	ck_assert_uint_eq(s5->oidx.n, 1);
	ck_assert_int_eq(fds_on("00000000000000000020.log"), 0);
	for (int round = 0; round < 2; round++) {
		/* offset 22 is the second batch: found through the index entry */
		log_read_result r;
		ck_assert_int_eq(log_read(lp, 22, INT64_MAX, 1, true, &r), 0);
		ck_assert_ptr_eq(r.segment, s5);
		ck_assert_int_gt(r.file_pos, 0);
		ck_assert_int_eq(be64_at(r.fd, r.file_pos), 22);
		log_segment_release(r.segment);
		ck_assert(s5->oidx.loaded);
		int64_t off, ts;
		/* segment 4 (offsets 16..19, closed) has the first timestamp
		 * >= 100005: its second record */
		ck_assert(!lp->segs[4]->tidx.loaded);
		ck_assert_int_eq(log_offset_for_timestamp(lp, 100005, &off, &ts), 0);
		ck_assert_int_eq(off, 17);
		ck_assert_int_eq(ts, 100005);
		read_all(lp); /* closes it again */
		ck_assert(!s5->oidx.loaded);
	}
	log_close(lp);
	log_fcache_destroy(&fc);
}
END_TEST

/* Truncation, DeleteRecords and retention of segments the cache closed. */
START_TEST(truncation_and_retention_of_closed_segments)
{
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 30, 1000);
	read_all(lp);
	ck_assert_int_eq(fds_on("00000000000000000040.log"), 0);
	/* cut segment 10 (offsets 40..43, closed) at its second batch */
	ck_assert_int_eq(log_truncate_to(lp, 42, 5000), 0);
	ck_assert_int_eq(log_end_offset(lp), 42);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 11);
	ck_assert_int_le(held(), 3);
	fill(lp, 2, 6000);
	ck_assert_int_eq(log_end_offset(lp), 50);
	tu_log_state a;
	tu_log_state_get(lp, &a);
	/* DeleteRecords up to 10, then retention.bytes of 6 segments' worth */
	log_set_high_watermark(lp, log_end_offset(lp));
	ck_assert_int_eq(log_advance_start_offset(lp, 10), 0);
	ck_assert_int_eq(log_start_offset(lp), 10);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 11);
	int64_t one = lp->segs[1]->size;
	ck_assert_int_ge(log_delete_old_segments(lp, -1, 6 * one, 7000), 1);
	ck_assert_int_ge(log_start_offset(lp), 16);
	ck_assert_int_le(held(), 3);
	tu_log_state b;
	tu_log_state_get(lp, &b);
	ck_assert_int_eq(b.leo, 50);
	/* the bytes kept are the tail of what was there */
	ck_assert_uint_le(b.nbytes, a.nbytes);
	ck_assert_int_eq(memcmp(a.bytes + (a.nbytes - b.nbytes), b.bytes, b.nbytes), 0);
	log_deleted_files f;
	log_take_deleted_files(lp, &f);
	log_deleted_files_unlink(&f);
	log_deleted_files_free(&f);
	int64_t start = log_start_offset(lp);
	log_close(lp);
	/* an unclean open from scratch finds the same log */
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, start, 8000, &lp), 0);
	tu_log_state c;
	tu_log_state_get(lp, &c);
	ck_assert_int_eq(c.leo, 50);
	ck_assert_uint_eq(c.nbytes, b.nbytes);
	ck_assert_int_eq(memcmp(c.bytes, b.bytes, b.nbytes), 0);
	ck_assert_int_le(held(), 3);
	log_close(lp);
	tu_log_state_free(&a);
	tu_log_state_free(&b);
	tu_log_state_free(&c);
	log_fcache_destroy(&fc);
}
END_TEST

/* A flush job waiting for the flush thread holds no segment: the cache
 * closes the segments it will sync, and it syncs them by path. */
START_TEST(flush_job_keeps_nothing_open)
{
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 10, 1000);
	log_flush_job *j;
	ck_assert_int_eq(log_flush_begin(lp, &j), 0);
	fill(lp, 10, 2000); /* 10 more segments through the cache meanwhile */
	read_all(lp);
	ck_assert_int_eq(fds_on("00000000000000000000.log"), 0);
	ck_assert_int_le(held(), 3);
	ck_assert_uint_eq(fc.busy, 0);
	ck_assert_int_eq(log_flush_run(j), 0);
	ck_assert_int_eq(log_flush_end(lp, j), 0);
	ck_assert_int_eq(log_recovery_point(lp), 40);
	ck_assert_int_eq(log_flush(lp), 0);
	ck_assert_int_eq(log_recovery_point(lp), 80);
	log_close(lp);
	log_fcache_destroy(&fc);
}
END_TEST

/* A process killed while its log's segments come and go through the
 * cache: the next (unclean) open recovers every batch written, reading the
 * segments through a small cache too. */
START_TEST(recovery_after_kill_with_a_cache)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		log_file_cache fc;
		log_fcache_init(&fc, 3);
		log_partition *lp;
		if (log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 1000, &lp) != 0)
			_exit(2);
		fill(lp, 40, 1000);
		read_all(lp);
		if (log_flush(lp) != 0)
			_exit(3);
		fill(lp, 10, 2000); /* not flushed: in the page cache only */
		raise(SIGKILL);
		_exit(4);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	log_file_cache fc;
	log_fcache_init(&fc, 3);
	log_partition *lp;
	ck_assert_int_eq(log_open_with_files(&fc, pdir, &cfg, false, -1, -1, 3000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 200);
	ck_assert_int_le(held(), 3);
	tu_log_state a;
	tu_log_state_get(lp, &a);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 4000, &lp), 0);
	tu_log_state b;
	tu_log_state_get(lp, &b);
	tu_log_state_assert_eq(&a, &b);
	log_close(lp);
	tu_log_state_free(&a);
	tu_log_state_free(&b);
	log_fcache_destroy(&fc);
}
END_TEST

/* A cache larger than the descriptors the process may open: an open that
 * fails with EMFILE makes room in the cache and is tried again, and a
 * damaged index is not assumed. */
START_TEST(out_of_descriptors_sheds)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 40, 1000);
	tu_log_state a;
	tu_log_state_get(lp, &a);
	log_close(lp);
	char ix[PATH_MAX];
	tu_seg_path(ix, sizeof ix, pdir, 80, ".index");
	struct stat before;
	ck_assert_int_eq(stat(ix, &before), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* room for 12 more descriptors: the cache allows 1000 */
		int n = 0;
		DIR *d = opendir("/proc/self/fd");
		while (d && readdir(d))
			n++;
		if (d)
			closedir(d);
		struct rlimit rl = { (rlim_t)n + 10, (rlim_t)n + 10 };
		log_file_cache fc;
		log_fcache_init(&fc, 1000);
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
		    log_open_with_files(&fc, pdir, &cfg, true, -1, -1, 2000, &lp) != 0)
			_exit(2);
		tu_log_state b;
		tu_log_state_get(lp, &b);
		if (b.nbytes != a.nbytes || memcmp(a.bytes, b.bytes, a.nbytes) != 0)
			_exit(3);
		if (fc.evictions == 0)
			_exit(4);
		log_close(lp);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: %d", WEXITSTATUS(st));
	struct stat after;
	ck_assert_int_eq(stat(ix, &after), 0); /* not rebuilt */
	ck_assert(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	tu_log_state_free(&a);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("files");
	TCase *tc = tcase_create("descriptors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, closed_segments_hold_no_index_descriptor);
	tcase_add_test(tc, clean_open_opens_only_what_it_reads);
	tcase_add_test(tc, another_file_under_the_name_is_not_read);
	suite_add_tcase(s, tc);
	tc = tcase_create("cache");
	tcase_add_test(tc, cache_closes_least_recently_used);
	tcase_add_test(tc, cache_keeps_entries_in_use);
	suite_add_tcase(s, tc);
	tc = tcase_create("shared");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cache_bounds_descriptors_and_reopens);
	tcase_add_test(tc, pinned_segment_stays_open_across_eviction);
	tcase_add_test(tc, waiting_response_holds_no_descriptor);
	tcase_add_test(tc, index_lookups_on_closed_segments);
	tcase_add_test(tc, truncation_and_retention_of_closed_segments);
	tcase_add_test(tc, flush_job_keeps_nothing_open);
	tcase_add_test(tc, recovery_after_kill_with_a_cache);
	tcase_add_test(tc, out_of_descriptors_sheds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tu_begin();
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_end();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
