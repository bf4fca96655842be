/*
 * truncate.c - a replica cutting its log from the end (log_truncate_to) or
 * starting it over (log_truncate_fully_and_start_at), Kafka's
 * UnifiedLog.truncateTo and truncateFullyAndStartAt, and log_open
 * completing one a crash interrupted (log_truncation_redo).
 *
 * Crash safety rests on one file in the partition directory,
 * truncation-pending, written (tmp, fsync, rename, fsync of the directory)
 * before anything is removed and removed once every change is fsynced:
 *
 *   0\n                                       version
 *   <new log end offset> <base> <position>\n  base: the segment cut, position:
 *                                             its new size in bytes; base -1:
 *                                             every segment goes, a new one
 *                                             starts at the new log end offset
 *
 * Its rename is the commit point. A crash before it leaves the log as it
 * was; a crash after it (before the removal) leaves some of the changes
 * done, and the next log_open does them all again (every step can be
 * repeated) before loading anything, so nothing at or above the new log
 * end offset comes back, whatever was reached. Without the file a crash
 * could leave part of the segments above the cut in place, which recovery
 * would take as the log (batches there are as valid as below).
 *
 * The directory fsyncs make the renames, unlinks and the file's own
 * removal durable against a power loss too; the truncation blocks on them
 * (5 to 7 fsyncs, on the log's thread), as it is rare: a follower after a
 * leader change whose log diverged, never on the produce path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/partition.h"
#include "storage/timeindex.h"

/* Tests: the step just done (a simulated crash may follow). */
static void step(log_partition *lp, int n)
{
	if (lp->truncate_hook)
		lp->truncate_hook(lp, n);
}

static int write_marker(const char *dir, int64_t leo, int64_t base, int64_t pos)
{
	char buf[96];
	int len = snprintf(buf, sizeof buf, "0\n%" PRId64 " %" PRId64 " %" PRId64 "\n", leo, base, pos);
	return log_io_write_atomic(dir, LOG_TRUNCATION_FILE, buf, (size_t)len, true);
}

int log_truncation_done(const char *dir)
{
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/%s", dir, LOG_TRUNCATION_FILE);
	if (rc < 0)
		return rc;
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return log_io_fsync_dir(dir);
}

/* A name of 20 digits and suffix. */
static bool base_named(const char *name, const char *suffix, int64_t *base)
{
	size_t n = strlen(name), sl = strlen(suffix);
	if (n != 20 + sl || strcmp(name + 20, suffix) != 0)
		return false;
	int64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (name[i] - '0');
	}
	*base = v;
	return true;
}

static const char *const seg_suffixes[] = { ".log", ".index", ".timeindex", LOG_TXNINDEX_SUFFIX };

/* Unlink the files of the segments above base (all of them when base is
 * -1, and the producer snapshots and epoch checkpoint then too). */
static int remove_above(const char *dir, int64_t base)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		int64_t b;
		bool go = false;
		for (size_t k = 0; k < sizeof seg_suffixes / sizeof seg_suffixes[0] && !go; k++)
			go = base_named(de->d_name, seg_suffixes[k], &b) && b > base;
		if (base < 0)
			go = go || base_named(de->d_name, LOG_SNAPSHOT_SUFFIX, &b) ||
			     strcmp(de->d_name, LOG_EPOCH_FILE) == 0;
		if (go && unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT && rc == 0)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

/* Cut dir/<base>.log to pos bytes when longer, durably. */
static int cut_log_file(const char *dir, int64_t base, int64_t pos)
{
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/%020" PRId64 ".log", dir, base);
	if (rc < 0)
		return rc;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || (st.st_size > pos && ftruncate(fd, (off_t)pos) < 0) || fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int log_truncation_redo(const char *dir, log_truncation *out)
{
	out->pending = false;
	char path[PATH_MAX], *text;
	size_t len;
	int rc = log_io_path(path, sizeof path, "%s/%s", dir, LOG_TRUNCATION_FILE);
	if (rc == 0)
		rc = log_io_read_small(path, 4096, &text, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	long long leo, base, pos;
	int used = 0;
	bool ok = sscanf(text, "0\n%lld %lld %lld\n%n", &leo, &base, &pos, &used) == 3 && (size_t)used == len &&
		  leo >= 0 && base >= -1 && base <= leo && pos >= 0;
	free(text);
	out->pending = true;
	if (!ok) {
		/* written whole through a rename: not ours, or damaged */
		fprintf(stderr, "samsa storage: %s/%s does not parse; checking every segment\n", dir,
			LOG_TRUNCATION_FILE);
		out->log_end_offset = -1;
		out->base = -2;
		return 0;
	}
	out->log_end_offset = leo;
	out->base = base;
	fprintf(stderr, "samsa storage: %s: completing a truncation to offset %lld cut short by a crash\n", dir,
		leo);
	rc = remove_above(dir, base);
	if (rc == 0 && base >= 0)
		rc = cut_log_file(dir, base, pos);
	if (rc == 0)
		rc = log_io_fsync_dir(dir);
	return rc;
}

/* ---- cutting one segment ---- */

/* Where segment s is cut for a truncation to offset: the first batch whose
 * last offset is >= offset (Kafka's LogSegment.truncateTo). */
typedef struct seg_cut {
	int64_t pos;        /* bytes kept */
	int64_t next;       /* offset after the last batch kept (base when none) */
	int64_t max_ts, max_ts_offset; /* largest timestamp of the batches kept */
	int64_t rolling_ts; /* the first batch's max timestamp, -1 when none kept */
	size_t oidx_n, tidx_n; /* index entries kept */
	int64_t since_index; /* bytes from the last offset index entry kept */
} seg_cut;

static int find_cut(log_segment *s, int64_t offset, seg_cut *c)
{
	log_scan sc;
	log_scan_init(&sc, s, s->size);
	/* from the last index entry wholly below offset: a batch boundary */
	int64_t pos = 0;
	if (offset - 1 - s->base_offset >= 0)
		pos = log_index_lookup(&s->oidx, offset - 1 - s->base_offset, NULL);
	c->next = s->base_offset;
	c->max_ts = -1;
	c->max_ts_offset = s->base_offset;
	for (;;) {
		proto_batch_info h;
		int rc = log_scan_header(&sc, pos, &h);
		if (rc == 1)
			break;
		if (rc < 0)
			return rc;
		int64_t last = log_batch_last_offset(&h);
		if (last >= offset)
			break;
		c->next = last + 1;
		if (h.max_timestamp > c->max_ts) {
			c->max_ts = h.max_timestamp;
			c->max_ts_offset = last;
		}
		pos += h.size;
	}
	c->pos = pos;
	/* index entries of the batches kept; the time index's last one kept
	 * has the largest timestamp before the scan's start */
	c->oidx_n = s->oidx.n;
	while (c->oidx_n > 0 && (int64_t)log_be32(log_ef_at(&s->oidx, c->oidx_n - 1) + 4) >= c->pos)
		c->oidx_n--;
	c->since_index = c->oidx_n > 0 ? c->pos - (int64_t)log_be32(log_ef_at(&s->oidx, c->oidx_n - 1) + 4)
				       : c->pos;
	c->tidx_n = s->tidx.n;
	while (c->tidx_n > 0 &&
	       s->base_offset + (int32_t)log_be32(log_ef_at(&s->tidx, c->tidx_n - 1) + 8) >= c->next)
		c->tidx_n--;
	if (c->tidx_n > 0) {
		const uint8_t *t = log_ef_at(&s->tidx, c->tidx_n - 1);
		int64_t ts = (int64_t)log_be64(t);
		if (ts > c->max_ts) {
			c->max_ts = ts;
			c->max_ts_offset = s->base_offset + (int32_t)log_be32(t + 8);
		}
	}
	c->rolling_ts = -1;
	if (c->pos > 0) {
		proto_batch_info h;
		int rc = log_scan_header(&sc, 0, &h);
		if (rc < 0)
			return rc;
		c->rolling_ts = h.max_timestamp;
	}
	return 0;
}

/* Apply c to segs[i] (memory and files). */
static int apply_cut(log_partition *lp, size_t i, const seg_cut *c)
{
	log_segment *s = lp->segs[i];
	int rc = log_ef_truncate(&s->oidx, c->oidx_n);
	int r = log_ef_truncate(&s->tidx, c->tidx_n);
	if (rc == 0)
		rc = r;
	if (c->pos < s->size) {
		lp->size_bytes -= s->size - c->pos;
		r = log_seg_truncate_file(s, c->pos);
		if (r < 0) {
			/* the bytes past pos are no longer the log's either way */
			lp->size_bytes += s->size - c->pos;
			s->size = c->pos;
			if (rc == 0)
				rc = r;
		}
	}
	s->allocated = s->size; /* the truncation gave back the reserve */
	s->next_offset = c->next;
	s->max_ts = c->max_ts;
	s->max_ts_offset = c->max_ts_offset;
	s->rolling_ts = c->rolling_ts;
	s->bytes_since_index = c->since_index;
	s->dirty = true;
	r = log_txnindex_truncate(&lp->tix[i], c->next);
	return rc < 0 ? rc : r;
}

/* Take segs[from..] out of the log (files renamed *.deleted, references
 * dropped; a fetch holding one keeps reading it). */
static int drop_from(log_partition *lp, size_t from)
{
	int rc = 0;
	for (size_t j = from; j < lp->nseg; j++) {
		log_segment *s = lp->segs[j];
		int r = log_retire_segment_files(lp, s);
		if (r < 0 && rc == 0)
			rc = r;
		lp->size_bytes -= s->size;
		log_txnindex_destroy(&lp->tix[j]);
		log_seg_drop(s);
	}
	if (lp->nseg > from)
		lp->dir_unsynced = true;
	lp->nseg = from;
	if (from > 0)
		log_seg_set_active(log_active(lp), true);
	return rc;
}

/* fsync what a truncation changed: segs[i] (none when i is nseg), the
 * epoch checkpoint and the directory. */
static int sync_cut(log_partition *lp, size_t i)
{
	int rc = 0;
	if (i < lp->nseg) {
		log_segment *s = lp->segs[i];
		int fd = log_seg_fd(s);
		if (fd < 0)
			rc = fd;
		else if (fsync(fd) < 0)
			rc = -errno;
		if (rc == 0)
			rc = log_ef_fsync(&s->oidx);
		if (rc == 0)
			rc = log_ef_fsync(&s->tidx);
		if (rc == 0)
			rc = log_io_fsync_file(lp->tix[i].path);
	}
	if (rc == 0)
		rc = log_epoch_sync(&lp->epochs);
	if (rc == 0)
		rc = log_io_fsync_dir(lp->dir);
	return rc;
}

static void note_epoch_rc(log_partition *lp, int rc)
{
	if (rc < 0)
		fprintf(stderr, "samsa storage: %s: cannot write %s: %s (written at the next flush, "
			"which fails until it is)\n", lp->dir, LOG_EPOCH_FILE, strerror(-rc));
}

/* After the commit point: a failure leaves the marker, and the log refuses
 * appends until reopened (log_open then finishes the truncation). */
static int failed_after_commit(log_partition *lp, int rc)
{
	fprintf(stderr,
		"samsa storage: %s: truncation failed after it was committed (%s): the log takes no "
		"appends until it is reopened, which completes it\n",
		lp->dir, strerror(-rc));
	lp->truncate_failed = true;
	return rc;
}

/* The offsets after a truncation to leo (the new log end offset). */
static void clamp_offsets(log_partition *lp, int64_t leo)
{
	if (lp->log_start > leo)
		lp->log_start = leo;
	if (lp->recovery_point > leo)
		lp->recovery_point = leo;
	if (lp->flush_in_flight && leo < lp->flush_cap)
		lp->flush_cap = leo;
	log_set_high_watermark(lp, lp->hw < leo ? lp->hw : leo);
}

/*
 * Order of a truncation to offset (the comment at the top says why):
 *   1. (nothing on disk changes) find the cut: segment i holding offset,
 *      the position of its first batch whose last offset is >= offset, the
 *      new log end offset N after the batches kept; build the producer
 *      state for N aside (the latest snapshot <= N, then the batches below
 *      N replayed). A failure returns with the log as it was.
 *   2. write truncation-pending "N base(i) position", fsynced: committed.
 *   3. the segments above i leave the log: files renamed *.deleted (as
 *      retention does, handed out by log_take_deleted_files for unlinking
 *      later; a fetch holding a reference keeps its fd).
 *   4. segs[i] is cut: index and time index entries of the batches cut
 *      dropped (memory and file), the .log truncated at the position,
 *      .txnindex entries of markers >= N dropped.
 *   5. the epoch cache loses the entries starting at or after N
 *      (checkpoint rewritten), the producer state of step 1 replaces the
 *      current one, snapshots above N are removed; the log start offset,
 *      high watermark (and with it the completed transactions that bound
 *      the last stable offset) and recovery point go no higher than N.
 *   6. fsync segs[i]'s .log, .index, .timeindex and .txnindex, the epoch
 *      checkpoint and the directory.
 *   7. remove truncation-pending, fsync the directory.
 * A crash between 2 and 7: log_open (log_truncation_redo) unlinks every
 * segment above base(i), cuts base(i).log to the position, then recovers
 * from base(i) on as after an unclean stop, which rebuilds its indexes
 * and .txnindex, the producer state (from a snapshot <= base(i)) and the
 * epochs of its batches; the cache is cut at the log end offset and the
 * snapshots above it removed, as for any open.
 */
int log_truncate_to(log_partition *lp, int64_t offset, int64_t now_ms)
{
	if (lp->truncate_failed)
		return -EIO;
	if (offset >= log_end_offset(lp))
		return 0;
	if (offset < lp->log_start)
		return LOG_ERR_OFFSET_OUT_OF_RANGE;
	/* 1 */
	size_t i = log_seg_floor(lp, offset);
	log_segment *s = lp->segs[i];
	int rc = log_seg_ready(lp, s);
	seg_cut c;
	if (rc == 0)
		rc = find_cut(s, offset, &c);
	if (rc < 0)
		return rc;
	log_producer_state before = lp->producers;
	log_pstate_init(&lp->producers);
	rc = log_rebuild_producers(lp, c.next, true, now_ms);
	log_producer_state after = lp->producers;
	lp->producers = before;
	if (rc < 0) {
		log_pstate_free(&after);
		return rc;
	}
	step(lp, 1);
	/* 2 */
	rc = write_marker(lp->dir, c.next, s->base_offset, c.pos);
	if (rc < 0) {
		log_pstate_free(&after);
		return rc;
	}
	step(lp, 2);
	/* 3 */
	int err = drop_from(lp, i + 1);
	step(lp, 3);
	/* 4 */
	rc = apply_cut(lp, i, &c);
	if (err == 0)
		err = rc;
	step(lp, 4);
	/* 5 */
	note_epoch_rc(lp, log_epoch_truncate_from_end(&lp->epochs, c.next));
	log_pstate_free(&lp->producers);
	lp->producers = after;
	log_remove_snapshots_above(lp, c.next);
	clamp_offsets(lp, c.next);
	step(lp, 5);
	/* 6 */
	if (err == 0)
		err = sync_cut(lp, i);
	step(lp, 6);
	/* 7 */
	if (err == 0)
		err = log_truncation_done(lp->dir);
	step(lp, 7);
	return err < 0 ? failed_after_commit(lp, err) : 0;
}

/*
 * Order of a full truncation:
 *   1. write truncation-pending "offset -1 0", fsynced: committed.
 *   2. every segment leaves the log (files renamed *.deleted, as above),
 *      every producer snapshot is removed.
 *   3. an empty segment is created at offset (its name is free now).
 *   4. the epoch cache and producer state are emptied (checkpoint
 *      rewritten); every offset becomes offset.
 *   5. fsync the new segment's .log, the checkpoint and the directory.
 *   6. remove truncation-pending, fsync the directory.
 * A crash between 1 and 6: log_open unlinks every segment file, snapshot
 * and the epoch checkpoint, and creates the empty segment at offset.
 */
int log_truncate_fully_and_start_at(log_partition *lp, int64_t offset, int64_t now_ms)
{
	if (lp->truncate_failed)
		return -EIO;
	if (offset < 0)
		return -EINVAL;
	step(lp, 0);
	/* 1 */
	int rc = write_marker(lp->dir, offset, -1, 0);
	if (rc < 0)
		return rc;
	step(lp, 1);
	/* 2: the old segments' files out of the way first (the new one may
	 * take one of their names); the old references stay in segs[] until
	 * the new segment is in place */
	int err = 0;
	for (size_t j = 0; j < lp->nseg; j++) {
		int r = log_retire_segment_files(lp, lp->segs[j]);
		if (r < 0 && err == 0)
			err = r;
	}
	log_remove_snapshots_above(lp, -1);
	lp->dir_unsynced = true;
	step(lp, 2);
	/* 3 */
	log_segment *ns = NULL;
	log_txnindex nt = { .path = NULL };
	if (err == 0)
		err = log_seg_create(lp->dir, offset, now_ms, &ns);
	if (err == 0)
		err = log_txnindex_init(&nt, lp->dir, offset);
	if (err < 0) {
		/* the old segments stay in memory (their fds still read) */
		log_txnindex_destroy(&nt);
		if (ns)
			log_segment_release(ns);
		return failed_after_commit(lp, err);
	}
	log_txnindex_remove(&nt); /* a leftover of that name */
	for (size_t j = 0; j < lp->nseg; j++) {
		log_txnindex_destroy(&lp->tix[j]);
		log_seg_drop(lp->segs[j]);
	}
	log_seg_attach(ns, lp->files);
	lp->segs[0] = ns;
	lp->tix[0] = nt;
	lp->nseg = 1;
	lp->size_bytes = 0;
	step(lp, 3);
	/* 4 */
	note_epoch_rc(lp, log_epoch_truncate_from_end(&lp->epochs, -1));
	log_pstate_clear(&lp->producers);
	lp->producers.map_end_offset = lp->producers.snap_offset = offset;
	lp->log_start = offset;
	lp->hw = offset;
	lp->recovery_point = offset;
	if (lp->flush_in_flight && offset < lp->flush_cap)
		lp->flush_cap = offset;
	lp->unflushed_since_ms = -1;
	step(lp, 4);
	/* 5 */
	int fd = log_seg_fd(ns);
	err = fd < 0 ? fd : fsync(fd) < 0 ? -errno : 0;
	if (err == 0)
		err = log_epoch_sync(&lp->epochs);
	if (err == 0)
		err = log_io_fsync_dir(lp->dir);
	step(lp, 5);
	/* 6 */
	if (err == 0)
		err = log_truncation_done(lp->dir);
	step(lp, 6);
	return err < 0 ? failed_after_commit(lp, err) : 0;
}
