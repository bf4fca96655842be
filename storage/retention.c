/*
 * retention.c - segment deletion from the front of a partition log: the log
 * start offset (log_advance_start_offset, log.h), retention.bytes and
 * retention.ms (log_delete_old_segments), and the *.deleted files handed out
 * for unlinking later (see retention.h).
 */
#include "storage/retention.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/partition.h"

/* ---- the pending *.deleted list ---- */

size_t log_take_deleted_files(log_partition *lp, log_deleted_files *out)
{
	out->paths = lp->deleted;
	out->n = lp->ndeleted;
	lp->deleted = NULL;
	lp->ndeleted = lp->deleted_cap = 0;
	return out->n;
}

int log_deleted_files_unlink(const log_deleted_files *f)
{
	int first = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (unlink(f->paths[i]) < 0 && errno != ENOENT && first == 0)
			first = -errno;
	}
	return first;
}

void log_deleted_files_free(log_deleted_files *f)
{
	for (size_t i = 0; f->paths && i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	f->paths = NULL;
	f->n = 0;
}

/* ---- removing segments ---- */

/* Kafka's UnifiedLog.maybeIncrementLogStartOffset, minus the high watermark
 * check (done by the callers): the start offset and the epoch cache. */
static void move_start(log_partition *lp, int64_t offset)
{
	if (offset <= lp->log_start)
		return;
	lp->log_start = offset;
	int rc = log_epoch_truncate_from_start(&lp->epochs, offset);
	if (rc < 0)
		fprintf(stderr, "samsa storage: %s: cannot rewrite %s: %s\n", lp->dir, LOG_EPOCH_FILE,
			strerror(-rc));
}

/* The producer snapshots below the first segment describe offsets that are
 * gone (Kafka's deleteProducerSnapshots of the deleted segments). */
static void remove_old_snapshots(log_partition *lp)
{
	int64_t *offs;
	size_t n;
	if (log_pstate_list_snapshots(lp->dir, &offs, &n) < 0)
		return;
	int64_t first = lp->segs[0]->base_offset;
	for (size_t i = 0; i < n && offs[i] < first; i++) {
		char path[PATH_MAX];
		int rc = log_io_path(path, sizeof path, "%s/%020" PRId64 "%s", lp->dir, offs[i],
				     LOG_SNAPSHOT_SUFFIX);
		if (rc == 0)
			rc = log_retire_file(lp, path);
		if (rc < 0)
			fprintf(stderr, "samsa storage: %s: cannot set aside the producer snapshot at %" PRId64
				": %s\n", lp->dir, offs[i], strerror(-rc));
	}
	free(offs);
}

/* Take segs[0..k) out of the log (k < nseg): files renamed, references
 * dropped. Returns the number removed; on a failed rename the segments from
 * that one on stay, and *err gets the error. */
static size_t remove_front(log_partition *lp, size_t k, int *err)
{
	size_t done = 0;
	*err = 0;
	for (; done < k; done++) {
		log_segment *s = lp->segs[done];
		int rc = log_retire_segment_files(lp, s);
		if (rc < 0) {
			fprintf(stderr, "samsa storage: %s: cannot delete segment %s: %s\n", lp->dir,
				s->log_path, strerror(-rc));
			*err = rc;
			break;
		}
		lp->size_bytes -= s->size;
		/* The .txnindex belongs to the log (a flush job in flight has its
		 * own dup of the fd); the segment's fd and indexes close with its
		 * last reference, which is this one unless a fetch is still
		 * sending from it, a flush job is syncing it or the cleaner is
		 * reading it (they may use its fd and indexes until they let go). */
		log_txnindex_destroy(&lp->tix[done]);
		log_seg_drop(s);
	}
	if (done > 0) {
		memmove(lp->segs, lp->segs + done, (lp->nseg - done) * sizeof *lp->segs);
		memmove(lp->tix, lp->tix + done, (lp->nseg - done) * sizeof *lp->tix);
		lp->nseg -= done;
		int64_t first = lp->segs[0]->base_offset;
		if (lp->recovery_point < first)
			lp->recovery_point = first;
		remove_old_snapshots(lp);
	}
	return done;
}

/* Whether segs[i] may go (Kafka's DeletionCondition): i is the candidate,
 * the callback sees the segments in order from the oldest. */
typedef bool (*due_fn)(log_partition *lp, size_t i, void *arg);

/*
 * Kafka's UnifiedLog.deletableSegments + deleteSegments: count the oldest
 * segments that are due, stopping at the first that is not, that holds
 * offsets at or above the high watermark, or that is the active segment
 * and empty; roll first when that takes every segment; move the log start
 * offset to the first segment kept; remove the others. Returns the number
 * removed or -errno.
 */
static int delete_due(log_partition *lp, due_fn due, void *arg, int64_t now_ms)
{
	int64_t leo = log_end_offset(lp);
	size_t k = 0;
	for (; k < lp->nseg; k++) {
		bool last = k + 1 == lp->nseg;
		int64_t upper = last ? leo : lp->segs[k + 1]->base_offset;
		if (lp->hw < upper || !due(lp, k, arg) || (last && lp->segs[k]->size == 0))
			break;
	}
	if (k == 0)
		return 0;
	if (k == lp->nseg) {
		/* the whole log: a new empty active segment first (it is not empty) */
		int rc = log_roll(lp, now_ms);
		if (rc < 0)
			return rc;
	}
	move_start(lp, lp->segs[k]->base_offset);
	int err;
	size_t done = remove_front(lp, k, &err);
	return err < 0 ? err : (int)done;
}

static bool start_breached(log_partition *lp, size_t i, void *arg)
{
	(void)arg;
	return i + 1 < lp->nseg && lp->segs[i + 1]->base_offset <= lp->log_start;
}

static bool size_breached(log_partition *lp, size_t i, void *arg)
{
	int64_t *diff = arg;
	int64_t size = lp->segs[i]->size;
	if (*diff - size < 0)
		return false;
	*diff -= size;
	return true;
}

/* Kafka's LogSegment.largestTimestamp: the largest batch timestamp, else
 * the file's modification time. */
static int64_t largest_timestamp(const log_segment *s)
{
	if (s->max_ts >= 0)
		return s->max_ts;
	struct stat st;
	if (stat(s->log_path, &st) < 0)
		return INT64_MAX; /* unknown: never due */
	return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

typedef struct time_arg {
	int64_t now_ms, retention_ms;
} time_arg;

static bool time_breached(log_partition *lp, size_t i, void *arg)
{
	const time_arg *t = arg;
	int64_t ts = largest_timestamp(lp->segs[i]);
	return ts <= t->now_ms && t->now_ms - ts > t->retention_ms;
}

int log_advance_start_offset(log_partition *lp, int64_t offset)
{
	if (offset <= lp->log_start)
		return 0;
	if (offset > lp->hw)
		return LOG_ERR_OFFSET_OUT_OF_RANGE;
	move_start(lp, offset);
	int rc = delete_due(lp, start_breached, NULL, 0);
	return rc < 0 ? rc : 0;
}

int log_delete_old_segments(log_partition *lp, int64_t retention_ms, int64_t retention_bytes,
			    int64_t now_ms)
{
	int total = 0;
	int rc = delete_due(lp, start_breached, NULL, now_ms);
	if (rc < 0)
		return rc;
	total += rc;
	if (retention_bytes >= 0 && lp->size_bytes >= retention_bytes) {
		int64_t diff = lp->size_bytes - retention_bytes;
		rc = delete_due(lp, size_breached, &diff, now_ms);
		if (rc < 0)
			return rc;
		total += rc;
	}
	if (retention_ms >= 0) {
		time_arg t = { .now_ms = now_ms, .retention_ms = retention_ms };
		rc = delete_due(lp, time_breached, &t, now_ms);
		if (rc < 0)
			return rc;
		total += rc;
	}
	return total;
}
