/*
 * partition.c - the state of a log_partition that every part of the log
 * reads (partition.h): its segment list, the offsets and the high
 * watermark (log.h's accessors), the aborted transactions noted in the
 * segments' .txnindex, and the files of removed segments (renamed
 * *.deleted, listed until retention.c hands them out). log.c, recover.c,
 * truncate.c, retention.c, timestamp.c and cleaner.c call it; it calls
 * none of them, so the calls between log.c and the files beside it go one
 * way: log.c -> recover.c -> partition.c, log.c -> truncate.c ->
 * {recover.c, partition.c}, retention.c -> {log.c, partition.c}.
 */
#include "storage/partition.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/fileio.h"
#include "storage/retention.h" /* LOG_DELETED_SUFFIX */

size_t log_seg_floor(const log_partition *lp, int64_t offset)
{
	size_t lo = 0, hi = lp->nseg; /* first segment with base > offset */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lp->segs[mid]->base_offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? 0 : lo - 1;
}

int log_push_segment(log_partition *lp, log_segment *s)
{
	if (lp->nseg == lp->cap) {
		size_t cap = lp->cap ? lp->cap * 2 : 8;
		log_segment **v = realloc(lp->segs, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		lp->segs = v;
		log_txnindex *t = realloc(lp->tix, cap * sizeof *t);
		if (!t)
			return -ENOMEM;
		lp->tix = t;
		lp->cap = cap;
	}
	int rc = log_txnindex_init(&lp->tix[lp->nseg], lp->dir, s->base_offset);
	if (rc < 0) {
		log_txnindex_destroy(&lp->tix[lp->nseg]);
		return rc;
	}
	if (lp->nseg > 0)
		log_seg_set_active(lp->segs[lp->nseg - 1], false);
	log_seg_set_active(s, true);
	log_seg_attach(s, lp->files);
	lp->segs[lp->nseg++] = s;
	return 0;
}

void log_note_aborted_txn(log_partition *lp, size_t i, const log_completed_txn *t)
{
	log_txnindex *ti = &lp->tix[i];
	int rc = log_txnindex_load(ti);
	if (rc == 0 && ti->n > 0 && ti->v[ti->n - 1].last_offset >= t->last_offset)
		return;
	log_aborted_txn a = {
		.producer_id = t->producer_id,
		.first_offset = t->first_offset,
		.last_offset = t->last_offset,
		.last_stable_offset = log_pstate_lso_for(&lp->producers, t),
	};
	if (rc == 0)
		rc = log_txnindex_append(ti, &a);
	if (rc < 0)
		fprintf(stderr, "samsa storage: %s: cannot write the aborted transaction at %lld: %s\n",
			ti->path, (long long)t->last_offset, strerror(-rc));
}

void log_set_config(log_partition *lp, const log_config *cfg) { lp->cfg = *cfg; }
int64_t log_start_offset(const log_partition *lp) { return lp->log_start; }
int64_t log_end_offset(const log_partition *lp) { return log_active(lp)->next_offset; }
int64_t log_high_watermark(const log_partition *lp) { return lp->hw; }
int64_t log_recovery_point(const log_partition *lp) { return lp->recovery_point; }
int64_t log_size_bytes(const log_partition *lp) { return lp->size_bytes; }
const char *log_dir(const log_partition *lp) { return lp->dir; }
int32_t log_latest_epoch(const log_partition *lp) { return log_epoch_latest(&lp->epochs); }

void log_set_high_watermark(log_partition *lp, int64_t hw)
{
	int64_t leo = log_end_offset(lp);
	if (hw > leo)
		hw = leo;
	if (hw < lp->log_start)
		hw = lp->log_start;
	lp->hw = hw;
	log_pstate_txn_on_hw(&lp->producers, hw);
}

int64_t log_last_stable_offset(const log_partition *lp)
{
	int64_t first = log_pstate_first_unstable(&lp->producers);
	return first >= 0 && first < lp->hw ? first : lp->hw;
}

/* ---- retired files (handed out by log_take_deleted_files, retention.c) ---- */

int log_retire_file(log_partition *lp, const char *path)
{
	char to[PATH_MAX];
	int rc = log_io_path(to, sizeof to, "%s%s", path, LOG_DELETED_SUFFIX);
	if (rc < 0)
		return rc;
	if (rename(path, to) < 0)
		return errno == ENOENT ? 0 : -errno;
	lp->dir_unsynced = true;
	if (lp->ndeleted == lp->deleted_cap) {
		size_t cap = lp->deleted_cap ? lp->deleted_cap * 2 : 16;
		char **v = realloc(lp->deleted, cap * sizeof *v);
		if (!v)
			return 0;
		lp->deleted = v;
		lp->deleted_cap = cap;
	}
	char *p = strdup(to);
	if (p)
		lp->deleted[lp->ndeleted++] = p;
	return 0;
}

int log_retire_segment_files(log_partition *lp, const log_segment *s)
{
	static const char *const suffixes[] = { ".log", ".index", ".timeindex", LOG_TXNINDEX_SUFFIX };
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		char path[PATH_MAX];
		int rc = log_seg_path(path, sizeof path, lp->dir, s->base_offset, suffixes[i]);
		if (rc == 0)
			rc = log_retire_file(lp, path);
		if (rc < 0 && i == 0)
			return rc; /* the segment stays in the log */
		if (rc < 0)
			fprintf(stderr, "samsa storage: %s: cannot rename %s to %s%s: %s\n", lp->dir, path,
				path, LOG_DELETED_SUFFIX, strerror(-rc));
	}
	return 0;
}
