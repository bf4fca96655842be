/*
 * log.c - the partition log (log.h): open/close/delete, append with segment
 * roll, read for fetch, flush and the offsets kept beside the segments.
 * Loading and recovery are in recover.c, lookups by time in timestamp.c,
 * the segment list, the offsets and the high watermark in partition.c.
 */
#include "storage/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "protocol/records.h"
#include "storage/cleaner.h"
#include "storage/fileio.h"
#include "storage/partition.h"
#include "storage/timeindex.h"

void log_config_defaults(log_config *c)
{
	c->segment_bytes = 1LL << 30;            /* segment.bytes */
	c->segment_ms = 7LL * 24 * 3600 * 1000;  /* segment.ms */
	c->index_interval_bytes = 4096;          /* index.interval.bytes */
	c->max_index_bytes = 10 << 20;           /* segment.index.bytes */
	c->flush_messages = INT64_MAX;           /* flush.messages */
	c->flush_ms = INT64_MAX;                 /* flush.ms */
	c->producer_id_expiration_ms = 86400000; /* producer.id.expiration.ms */
}

static void free_partition(log_partition *lp)
{
	for (size_t i = 0; i < lp->nseg; i++) {
		log_seg_drop(lp->segs[i]);
		log_txnindex_destroy(&lp->tix[i]);
	}
	free(lp->segs);
	free(lp->tix);
	for (size_t i = 0; i < lp->ndeleted; i++)
		free(lp->deleted[i]);
	free(lp->deleted);
	log_epoch_free(&lp->epochs);
	log_pstate_free(&lp->producers);
	free(lp->dir);
	free(lp);
}

int log_open(const char *dir, const log_config *cfg, bool clean, int64_t recovery_point,
	     int64_t log_start_offset, int64_t now_ms, log_partition **out)
{
	return log_open_with_files(NULL, dir, cfg, clean, recovery_point, log_start_offset, now_ms, out);
}

int log_open_with_files(log_file_cache *files, const char *dir, const log_config *cfg, bool clean,
			int64_t recovery_point, int64_t log_start_offset, int64_t now_ms, log_partition **out)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* a cleaner's swap cut by a crash: finish or roll back (cleaner.h) */
	int swap_rc = log_clean_recover_swaps(dir);
	if (swap_rc < 0)
		return swap_rc;
	/* a truncation cut short by a crash: its file changes first (truncate.c) */
	log_truncation redo;
	int redo_rc = log_truncation_redo(dir, &redo);
	if (redo_rc < 0)
		return redo_rc;
	if (redo.pending) {
		clean = false;
		if (redo.base == -1) {
			log_start_offset = redo.log_end_offset;
			recovery_point = -1;
		} else if (redo.base == -2 || recovery_point > redo.base) {
			recovery_point = redo.base == -2 ? -1 : redo.base;
		}
	}
	log_partition *lp = calloc(1, sizeof *lp);
	if (!lp)
		return -ENOMEM;
	lp->cfg = *cfg;
	lp->files = files;
	lp->unflushed_since_ms = -1;
	lp->snapshot_unsynced = -1;
	lp->flush_cap = INT64_MAX;
	lp->log_start = log_start_offset;
	log_pstate_init(&lp->producers);
	lp->dir = strdup(dir);
	if (!lp->dir) {
		free(lp);
		return -ENOMEM;
	}
	int rc = log_epoch_load(&lp->epochs, dir);
	if (rc == LOG_ERR_CORRUPT) {
		fprintf(stderr, "samsa storage: %s/%s does not parse; rebuilding it from the batches\n", dir,
			LOG_EPOCH_FILE);
		clean = false;
		recovery_point = -1;
		rc = 0;
	}
	if (rc == 0)
		rc = log_load(lp, clean, recovery_point, now_ms);
	if (rc < 0) {
		free_partition(lp);
		return rc;
	}
	log_seg_set_active(log_active(lp), true); /* recovery may have cut the log */
	/* opened for the indexes recovery wrote: the next append opens them again */
	log_seg_close_index_fds(log_active(lp));
	int64_t leo = log_end_offset(lp);
	if (lp->log_start < lp->segs[0]->base_offset)
		lp->log_start = lp->segs[0]->base_offset;
	if (lp->log_start > leo)
		lp->log_start = leo;
	/* The epoch cache cut at both ends (Kafka's LogLoader): recovery may
	 * have assigned the epochs of batches below the log start offset
	 * again. The start first, so a log whose start is its end keeps no
	 * entry (Kafka would keep the last epoch, moved to that offset). */
	rc = log_epoch_truncate_from_start(&lp->epochs, lp->log_start);
	if (rc == 0)
		rc = log_epoch_truncate_from_end(&lp->epochs, leo);
	if (rc < 0) {
		free_partition(lp);
		return rc;
	}
	/* Kafka's LogLoader: after a clean stop the recovery point is the log
	 * end offset; otherwise it never moves ahead of what was flushed. */
	if (clean)
		lp->recovery_point = leo;
	else
		lp->recovery_point = recovery_point < 0 ? lp->segs[0]->base_offset
							: (recovery_point < leo ? recovery_point : leo);
	if (lp->recovery_point < lp->segs[0]->base_offset)
		lp->recovery_point = lp->segs[0]->base_offset;
	if (lp->recovery_point < leo)
		lp->unflushed_since_ms = now_ms;
	lp->hw = lp->log_start;
	if (redo.pending && (rc = log_truncation_done(dir)) < 0) {
		free_partition(lp);
		return rc;
	}
	*out = lp;
	return 0;
}

void log_get_open_stats(const log_partition *lp, log_open_stats *out)
{
	*out = lp->opened;
}

static void sync_rebuilt_indexes(log_partition *lp);

void log_prepare_close(log_partition *lp)
{
	sync_rebuilt_indexes(lp);
	log_segment *a = log_active(lp);
	size_t entries = a->tidx.n;
	if (log_seg_seal_timeindex(a) == 0 && a->tidx.n != entries)
		a->dirty = true; /* the closing entry: synced by the flush */
	log_seg_trim_preallocated(a);
	/* Kafka's UnifiedLog.close: a snapshot at the log end offset, so a
	 * clean open reads it instead of replaying the log (not after a
	 * failed truncation: the open completing it rebuilds the state). */
	if (!lp->truncate_failed && (lp->producers.map_end_offset > lp->producers.snap_offset ||
				     lp->producers.snap_offset > log_end_offset(lp)))
		log_snapshot_producers(lp, log_end_offset(lp));
}

void log_close(log_partition *lp)
{
	if (!lp)
		return;
	log_prepare_close(lp);
	int rc = log_flush(lp);
	if (rc < 0)
		fprintf(stderr, "samsa storage: %s: flush at close failed: %s\n", lp->dir, strerror(-rc));
	free_partition(lp);
}

int log_delete(log_partition *lp)
{
	char *dir = lp->dir;
	lp->dir = NULL;
	free_partition(lp);
	int rc = log_io_remove_dir(dir);
	free(dir);
	return rc;
}

int log_aborted_txns(log_partition *lp, int64_t fetch_offset, int64_t upper_bound_offset,
		     log_aborted_txn_fn fn, void *arg)
{
	int total = 0;
	for (size_t i = log_seg_floor(lp, fetch_offset); i < lp->nseg; i++) {
		bool complete;
		int rc = log_txnindex_collect(&lp->tix[i], fetch_offset, upper_bound_offset, fn, arg, &complete);
		if (rc < 0)
			return rc;
		total += rc;
		if (complete)
			break;
	}
	return total;
}

const log_producer_entry *log_producer_find(const log_partition *lp, int64_t producer_id)
{
	return log_pstate_find(&lp->producers, producer_id);
}

const log_producer_entry *log_producer_next(const log_partition *lp, size_t *cursor)
{
	const log_producer_state *ps = &lp->producers;
	while (*cursor < ps->cap) {
		const log_producer_entry *e = &ps->slots[(*cursor)++];
		if (e->producer_id >= 0)
			return e;
	}
	return NULL;
}

size_t log_producer_count(const log_partition *lp) { return lp->producers.n; }

int log_assign_leader_epoch(log_partition *lp, int32_t epoch)
{
	if (epoch < 0)
		return -EINVAL;
	return log_epoch_assign(&lp->epochs, epoch, log_end_offset(lp));
}

void log_end_offset_for_epoch(const log_partition *lp, int32_t epoch, int32_t *out_epoch,
			      int64_t *end_offset)
{
	log_epoch_end_offset_for(&lp->epochs, epoch, log_end_offset(lp), out_epoch, end_offset);
}

/* ---- append ---- */

/* Kafka's LogSegment.shouldRoll for an append of len bytes whose largest
 * timestamp is max_ts and offsets first..last: size, age (segment.ms
 * measured from the first batch's timestamp to max_ts, or from the segment's
 * creation to now when the first batch has no timestamp; Kafka's
 * timeWaitedForRoll), full indexes, relative offsets past int32. */
static bool should_roll(const log_partition *lp, const log_segment *s, size_t len, int64_t max_ts,
			int64_t first, int64_t last, int64_t now_ms)
{
	if (s->size == 0) /* only a follower's batches past a gap can overflow an empty one */
		return first > s->base_offset && last - s->base_offset > INT32_MAX;
	if (s->size > lp->cfg.segment_bytes - (int64_t)len)
		return true;
	int64_t waited = s->rolling_ts >= 0 ? max_ts - s->rolling_ts : now_ms - s->created_ms;
	if (waited > lp->cfg.segment_ms)
		return true;
	if (log_index_full(&s->oidx, lp->cfg.max_index_bytes) ||
	    log_timeindex_full(&s->tidx, lp->cfg.max_index_bytes))
		return true;
	return last - s->base_offset > INT32_MAX;
}

/*
 * Kafka, on an IOException while rolling or appending, marks the whole log
 * dir offline (LogDirFailureChannel) until a restart. Samsa keeps the
 * partition online instead and puts the log back as it was: an append
 * answered KAFKA_STORAGE_ERROR (a full disk: ENOSPC, or EFBIG past
 * RLIMIT_FSIZE) succeeds once space is freed, without a restart.
 */

/* Roll (Kafka's UnifiedLog.roll): the new segment starts at base (>= the
 * log end offset; above it when a follower's first batch follows a gap).
 * *sealed_ti gets the old segment's time index entry count before its
 * closing entry (for unroll). Nothing changes on error: the closing entry
 * is dropped again, a half-created segment removed. */
static int roll(log_partition *lp, int64_t base, int64_t now_ms, size_t *sealed_ti)
{
	log_segment *old = log_active(lp);
	int rc = log_ef_load(&old->tidx);
	if (rc < 0)
		return rc;
	size_t ti = old->tidx.n;
	if (sealed_ti)
		*sealed_ti = ti;
	rc = log_seg_seal_timeindex(old);
	log_segment *s = NULL;
	if (rc == 0)
		rc = log_seg_create(lp->dir, base, now_ms, &s);
	if (rc == 0) {
		rc = log_push_segment(lp, s);
		if (rc < 0) {
			log_seg_unlink(s);
			log_segment_release(s);
		}
	}
	if (rc < 0) {
		log_ef_truncate(&old->tidx, ti);
		return rc;
	}
	old->dirty = true;
	log_seg_trim_preallocated(old);
	lp->dir_unsynced = true;
	lp->flush_after_roll = true;
	log_txnindex_remove(&lp->tix[lp->nseg - 1]); /* a leftover file of that name */
	/* Kafka's UnifiedLog.roll: the producer state as of the new segment's
	 * base offset (synced by the OS later; a torn one fails its CRC and the
	 * state is then rebuilt from an older snapshot and the log). */
	lp->producers.map_end_offset = s->base_offset;
	log_snapshot_producers(lp, s->base_offset);
	return 0;
}

int log_roll(log_partition *lp, int64_t now_ms)
{
	if (lp->truncate_failed)
		return -EIO;
	if (log_active(lp)->size == 0)
		return 0;
	return roll(lp, log_end_offset(lp), now_ms, NULL);
}

/* Undo a roll whose first append failed: the new, empty segment leaves the
 * log (files removed) and the previous one is active again without its
 * closing time index entry (sealed_ti entries). The producer snapshot the
 * roll wrote stays: it is the state at the log end offset, still true. */
static void unroll(log_partition *lp, size_t sealed_ti)
{
	log_segment *s = log_active(lp);
	lp->nseg--;
	log_txnindex_destroy(&lp->tix[lp->nseg]);
	log_seg_unlink(s);
	log_seg_drop(s);
	lp->dir_unsynced = true;
	log_seg_set_active(log_active(lp), true);
	log_ef_truncate(&log_active(lp)->tidx, sealed_ti);
}

void log_snapshot_producers(log_partition *lp, int64_t offset)
{
	int rc = log_pstate_write_snapshot(&lp->producers, lp->dir, offset, false);
	if (rc < 0) {
		fprintf(stderr, "samsa storage: %s: cannot write the producer snapshot at %lld: %s\n", lp->dir,
			(long long)offset, strerror(-rc));
		return;
	}
	lp->dir_unsynced = true;
	lp->snapshot_unsynced = offset;
	int64_t *offs;
	size_t n;
	if (log_pstate_list_snapshots(lp->dir, &offs, &n) < 0)
		return;
	/* keep the latest two at or below offset, drop anything above it */
	size_t kept = 0;
	for (size_t i = n; i-- > 0;) {
		if (offs[i] <= offset && kept < 2) {
			kept++;
			continue;
		}
		log_pstate_remove_snapshot(lp->dir, offs[i]);
	}
	free(offs);
}

static int append_write(log_partition *lp, const uint8_t *batches, size_t len, int64_t now_ms,
			int64_t first, int64_t next, int64_t max_ts);
static void patch_batches(uint8_t *batches, size_t len, int64_t base, int32_t leader_epoch);
static void note_epoch(log_partition *lp, int32_t epoch, int64_t start_offset);

/* Working copies of the producers of one append (most appends: one). */
typedef struct append_producers {
	log_producer_entry one;
	int16_t one_orig_epoch;
	log_producer_entry *v; /* when more than one batch has a producer id */
	int16_t *orig_epoch;
	size_t n;
} append_producers;

static log_producer_entry *work_entry(const log_partition *lp, append_producers *ap, int64_t id,
				      int16_t **orig)
{
	log_producer_entry *v = ap->v ? ap->v : &ap->one;
	int16_t *oe = ap->v ? ap->orig_epoch : &ap->one_orig_epoch;
	for (size_t i = 0; i < ap->n; i++)
		if (v[i].producer_id == id) {
			*orig = &oe[i];
			return &v[i];
		}
	log_producer_entry *e = &v[ap->n];
	const log_producer_entry *cur = log_pstate_find(&lp->producers, id);
	if (cur)
		*e = *cur;
	else
		log_pentry_empty(e, id);
	oe[ap->n] = e->epoch;
	*orig = &oe[ap->n];
	ap->n++;
	return e;
}

/* log_append_checked and log_append_coordinator: client is Kafka's
 * AppendOrigin.CLIENT (duplicates and sequences checked). */
static int append_checked(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
			  int64_t now_ms, bool client, log_append_info *out)
{
	if (len == 0 || len > INT32_MAX)
		return -EINVAL;
	/* Walk the batches: check framing, compute offsets, largest timestamp. */
	int64_t leo = log_end_offset(lp), next = leo, max_ts = -1;
	size_t with_pid = 0;
	for (size_t pos = 0; pos < len;) {
		proto_batch_info h;
		if (len - pos < PROTO_BATCH_HEADER_SIZE || log_batch_parse_header(batches + pos, &h) < 0 ||
		    (size_t)h.size > len - pos || next > INT64_MAX - 1 - h.last_offset_delta)
			return -EINVAL;
		if (h.max_timestamp > max_ts)
			max_ts = h.max_timestamp;
		if (h.producer_id >= 0)
			with_pid++;
		next += h.last_offset_delta + 1;
		pos += (size_t)h.size;
	}
	/* Idle producers go first, as Kafka's periodic removeExpiredProducers
	 * would have removed them (producer.id.expiration.check.interval.ms). */
	if (lp->producers.last_expire_ms < 0 || now_ms - lp->producers.last_expire_ms >= 600000)
		log_pstate_expire(&lp->producers, now_ms, lp->cfg.producer_id_expiration_ms);
	/* Producer checks (Kafka's analyzeAndValidateProducerState) on
	 * working copies; the state changes only once the write succeeded. */
	append_producers ap = { .n = 0, .v = NULL, .orig_epoch = NULL };
	if (with_pid > 1) {
		ap.v = malloc(with_pid * sizeof *ap.v);
		ap.orig_epoch = malloc(with_pid * sizeof *ap.orig_epoch);
		if (!ap.v || !ap.orig_epoch) {
			free(ap.v);
			free(ap.orig_epoch);
			return -ENOMEM;
		}
	}
	int rc = 0;
	size_t new_txns = 0;
	if (with_pid > 0) {
		int64_t off = leo;
		for (size_t pos = 0; pos < len;) {
			proto_batch_info h;
			log_batch_parse_header(batches + pos, &h);
			if (h.producer_id >= 0) {
				const log_producer_entry *cur = log_pstate_find(&lp->producers, h.producer_id);
				const log_producer_batch *dup =
					cur && client ? log_pentry_find_duplicate(cur, &h) : NULL;
				if (dup) {
					out->base_offset = log_producer_batch_first_offset(dup);
					out->last_offset = dup->last_offset;
					out->duplicate = true;
					out->dup_max_timestamp = dup->max_ts;
					goto done;
				}
				int16_t *orig;
				log_producer_entry *e = work_entry(lp, &ap, h.producer_id, &orig);
				/* Kafka checks sequences only for AppendOrigin.CLIENT */
				if (client)
					rc = log_pentry_check(e, *orig, &h);
				else if (h.producer_epoch < e->epoch)
					rc = LOG_ERR_INVALID_PRODUCER_EPOCH;
				if (rc < 0)
					goto done;
				/* Kafka's appendDataBatch: no plain write inside a transaction */
				if (!(h.attributes & PROTO_ATTR_TRANSACTIONAL) && e->txn_first_offset >= 0) {
					rc = LOG_ERR_INVALID_TXN_STATE;
					goto done;
				}
				log_pentry_add_batch(e, &h, off);
				if ((h.attributes & PROTO_ATTR_TRANSACTIONAL) && e->txn_first_offset < 0) {
					e->txn_first_offset = off;
					new_txns++;
				}
			}
			off += h.last_offset_delta + 1;
			pos += (size_t)h.size;
		}
		rc = log_pstate_reserve(&lp->producers, ap.n);
		if (rc == 0)
			rc = log_pstate_txn_reserve(&lp->producers, new_txns);
		if (rc < 0)
			goto done;
	}
	patch_batches(batches, len, leo, leader_epoch);
	rc = append_write(lp, batches, len, now_ms, leo, next, max_ts);
	if (rc < 0)
		goto done;
	note_epoch(lp, leader_epoch, leo);
	log_producer_entry *v = ap.v ? ap.v : &ap.one;
	for (size_t i = 0; i < ap.n; i++) {
		const log_producer_entry *cur = log_pstate_find(&lp->producers, v[i].producer_id);
		bool began = v[i].txn_first_offset >= 0 && (!cur || cur->txn_first_offset < 0);
		log_pstate_put(&lp->producers, &v[i]); /* room reserved: cannot fail */
		if (began)
			log_pstate_txn_begin(&lp->producers, v[i].producer_id, v[i].txn_first_offset);
	}
	lp->producers.map_end_offset = next;
	out->base_offset = leo;
	out->last_offset = next - 1;
	out->duplicate = false;
	out->dup_max_timestamp = -1;
done:
	free(ap.v);
	free(ap.orig_epoch);
	return rc;
}

int log_append_control(log_partition *lp, int64_t producer_id, int16_t producer_epoch,
		       int32_t coordinator_epoch, bool commit, int32_t leader_epoch, int64_t now_ms,
		       int64_t *offset)
{
	if (producer_id < 0 || producer_epoch < 0)
		return -EINVAL;
	if (lp->producers.last_expire_ms < 0 || now_ms - lp->producers.last_expire_ms >= 600000)
		log_pstate_expire(&lp->producers, now_ms, lp->cfg.producer_id_expiration_ms);
	log_producer_entry e;
	const log_producer_entry *cur = log_pstate_find(&lp->producers, producer_id);
	if (cur)
		e = *cur;
	else
		log_pentry_empty(&e, producer_id);
	int rc = log_pentry_check_marker(&e, producer_epoch, coordinator_epoch);
	if (rc < 0)
		return rc;
	int64_t leo = log_end_offset(lp);
	if (leo == INT64_MAX)
		return -EINVAL;
	log_completed_txn done;
	log_pentry_end_txn(&e, producer_epoch, coordinator_epoch, commit, leo, now_ms, &done);
	rc = log_pstate_reserve(&lp->producers, 1);
	if (rc < 0)
		return rc;
	uint8_t batch[PROTO_CONTROL_BATCH_SIZE];
	proto_control_batch_build(batch, producer_id, producer_epoch, coordinator_epoch, commit, now_ms);
	patch_batches(batch, sizeof batch, leo, leader_epoch);
	rc = append_write(lp, batch, sizeof batch, now_ms, leo, leo + 1, now_ms);
	if (rc < 0)
		return rc;
	note_epoch(lp, leader_epoch, leo);
	log_pstate_put(&lp->producers, &e); /* room reserved: cannot fail */
	lp->producers.map_end_offset = leo + 1;
	if (done.producer_id >= 0) {
		/* the entry goes to the segment holding the marker (after a roll,
		 * the new one); its last stable offset as Kafka computes it */
		if (done.aborted)
			log_note_aborted_txn(lp, lp->nseg - 1, &done);
		log_pstate_txn_complete(&lp->producers, producer_id, leo);
	}
	*offset = leo;
	return 0;
}

int log_append_follower(log_partition *lp, const uint8_t *batches, size_t len, int64_t now_ms,
			log_append_follower_info *out)
{
	out->bytes = 0;
	out->batches = 0;
	out->first_offset = out->last_offset = -1;
	/* Walk and check every whole batch before anything is written. */
	int64_t first = -1, next = log_end_offset(lp), max_ts = -1;
	size_t take = 0, with_pid = 0, txn_batches = 0;
	int32_t n = 0;
	while (len - take >= PROTO_BATCH_LOG_OVERHEAD) {
		const uint8_t *p = batches + take;
		int32_t blen = (int32_t)log_be32(p + PROTO_BATCH_OFF_LENGTH);
		if (blen < PROTO_BATCH_HEADER_SIZE - PROTO_BATCH_LOG_OVERHEAD)
			return LOG_ERR_CORRUPT;
		size_t size = (size_t)blen + PROTO_BATCH_LOG_OVERHEAD;
		if (size > len - take || size > (size_t)INT32_MAX - take)
			break; /* partial: for the next fetch */
		proto_batch_info h;
		if (log_batch_parse_header(p, &h) < 0 || !proto_batch_crc_ok(p, &h) ||
		    log_batch_last_offset(&h) == INT64_MAX)
			return LOG_ERR_CORRUPT;
		if (h.base_offset < next)
			return LOG_ERR_UNEXPECTED_OFFSET;
		int64_t last = log_batch_last_offset(&h);
		if (first < 0)
			first = h.base_offset;
		else if (last - first > INT32_MAX)
			break; /* another segment's: for the next call */
		if (h.max_timestamp > max_ts)
			max_ts = h.max_timestamp;
		if (h.producer_id >= 0) {
			with_pid++;
			if ((h.attributes & PROTO_ATTR_TRANSACTIONAL) && !(h.attributes & PROTO_ATTR_CONTROL))
				txn_batches++;
		}
		next = last + 1;
		take += size;
		n++;
	}
	if (n == 0)
		return 0;
	if (lp->producers.last_expire_ms < 0 || now_ms - lp->producers.last_expire_ms >= 600000)
		log_pstate_expire(&lp->producers, now_ms, lp->cfg.producer_id_expiration_ms);
	/* Room for what the replay below adds, so it cannot fail once written. */
	int rc = 0;
	if (with_pid > 0) {
		rc = log_pstate_reserve(&lp->producers, with_pid);
		if (rc == 0)
			rc = log_pstate_txn_reserve(&lp->producers, txn_batches + 1);
		if (rc < 0)
			return rc;
	}
	rc = append_write(lp, batches, take, now_ms, first, next, max_ts);
	if (rc < 0)
		return rc;
	size_t seg = lp->nseg - 1; /* where they went, after a roll too */
	for (size_t pos = 0; pos < take;) {
		proto_batch_info h;
		log_batch_parse_header(batches + pos, &h);
		rc = log_replay_batch(lp, seg, &h, batches + pos);
		if (rc < 0) /* cannot happen: room was reserved */
			fprintf(stderr, "samsa storage: %s: producer state of the batch at %lld not kept: %s\n",
				lp->dir, (long long)h.base_offset, strerror(-rc));
		if (h.partition_leader_epoch > log_epoch_latest(&lp->epochs))
			note_epoch(lp, h.partition_leader_epoch, h.base_offset);
		pos += (size_t)h.size;
	}
	lp->producers.map_end_offset = next;
	out->bytes = take;
	out->batches = n;
	out->first_offset = first;
	out->last_offset = next - 1;
	return 0;
}

int log_append_checked(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
		       int64_t now_ms, log_append_info *out)
{
	return append_checked(lp, batches, len, leader_epoch, now_ms, true, out);
}

int log_append_coordinator(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
			   int64_t now_ms, int64_t *base_offset)
{
	log_append_info info;
	int rc = append_checked(lp, batches, len, leader_epoch, now_ms, false, &info);
	if (rc == 0)
		*base_offset = info.base_offset;
	return rc;
}

int log_append(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
	       int64_t now_ms, int64_t *base_offset)
{
	log_append_info info;
	int rc = log_append_checked(lp, batches, len, leader_epoch, now_ms, &info);
	if (rc == 0)
		*base_offset = info.base_offset;
	return rc;
}

/* A leader's append: patch each batch's base offset (from base on) and
 * partition leader epoch in place (outside the CRC). */
static void patch_batches(uint8_t *batches, size_t len, int64_t base, int32_t leader_epoch)
{
	int64_t off = base;
	for (size_t pos = 0; pos < len;) {
		uint8_t *p = batches + pos;
		int32_t delta = (int32_t)log_be32(p + PROTO_BATCH_OFF_LAST_OFFSET_DELTA);
		proto_batch_set_base_offset(p, off);
		proto_batch_set_leader_epoch(p, leader_epoch);
		off += delta + 1;
		pos += log_be32(p + PROTO_BATCH_OFF_LENGTH) + PROTO_BATCH_LOG_OVERHEAD;
	}
}

/* The leader epoch cache's assign after a write (a lower or equal epoch is
 * ignored). A checkpoint that could not be rewritten is retried by the next
 * flush (leader_epoch.h). */
static void note_epoch(log_partition *lp, int32_t epoch, int64_t start_offset)
{
	int rc = log_epoch_assign(&lp->epochs, epoch, start_offset);
	if (rc < 0)
		fprintf(stderr, "samsa storage: %s: cannot write %s: %s (written at the next flush, "
			"which fails until it is)\n", lp->dir, LOG_EPOCH_FILE, strerror(-rc));
}

/* Roll when due, write and index batches checked by the caller, offsets
 * and epochs as they are (written from the caller's buffer); first: the
 * first batch's base offset (the log end offset, or above it after a gap),
 * next: the log end offset after, max_ts their largest timestamp. Nothing
 * stays on error. */
static int append_write(log_partition *lp, const uint8_t *batches, size_t len, int64_t now_ms,
			int64_t first, int64_t next, int64_t max_ts)
{
	if (lp->truncate_failed)
		return -EIO;
	log_segment *s = log_active(lp);
	bool rolled = false;
	size_t sealed_ti = 0;
	if (should_roll(lp, s, len, max_ts, first, next - 1, now_ms)) {
		int rc = roll(lp, first, now_ms, &sealed_ti);
		if (rc < 0)
			return rc;
		s = log_active(lp);
		rolled = true;
	}
	int fd = log_seg_fd(s);
	if (fd < 0) {
		if (rolled)
			unroll(lp, sealed_ti);
		return fd;
	}
	/* Write, then index; on any failure (ENOSPC mid-batch: a short
	 * write) put everything back: the .log cut to the end of the last
	 * complete batch, the index entries of this append dropped from
	 * memory and file, the segment's counters restored; the log end
	 * offset, producer state and high watermark were not touched yet. */
	int64_t old_size = s->size, old_max_ts = s->max_ts, old_max_ts_off = s->max_ts_offset;
	int64_t old_since = s->bytes_since_index, old_rolling = s->rolling_ts;
	size_t old_oi = s->oidx.n, old_ti = s->tidx.n;
	log_seg_preallocate(s, old_size + (int64_t)len, lp->cfg.segment_bytes);
	int rc = log_io_pwrite(fd, batches, len, old_size);
	for (size_t pos = 0; rc == 0 && pos < len;) {
		proto_batch_info h;
		log_batch_parse_header(batches + pos, &h);
		rc = log_seg_index_batch(s, &h, old_size + (int64_t)pos, lp->cfg.index_interval_bytes);
		pos += (size_t)h.size;
	}
	if (rc == 0)
		rc = log_seg_sync_indexes(s);
	if (rc < 0) {
		if (ftruncate(fd, (off_t)old_size) < 0)
			fprintf(stderr, "samsa storage: %s: cannot truncate a failed append: %s\n", s->log_path,
				strerror(errno));
		s->allocated = old_size; /* the truncation gave back the reserve */
		log_ef_truncate(&s->oidx, old_oi);
		log_ef_truncate(&s->tidx, old_ti);
		s->max_ts = old_max_ts;
		s->max_ts_offset = old_max_ts_off;
		s->bytes_since_index = old_since;
		s->rolling_ts = old_rolling;
		if (rolled)
			unroll(lp, sealed_ti);
		return rc;
	}
	if (old_size == 0)
		s->rolling_ts = max_ts;
	s->size += (int64_t)len;
	s->next_offset = next;
	s->dirty = true;
	lp->size_bytes += (int64_t)len;
	if (lp->unflushed_since_ms < 0)
		lp->unflushed_since_ms = now_ms;
	return 0;
}

/* ---- flush ---- */

struct log_flush_job {
	char **log_paths;   /* per segment taken: its .log's path (owned) */
	int64_t *bases;     /* its base offset */
	uint8_t *what;      /* what to fsync of it: FLUSH_* */
	size_t n;
	int64_t target;     /* recovery point once done */
	int64_t unflushed_since_ms;
	char *dir;          /* set when the directory needs an fsync */
	char *epoch_path;   /* set when the epoch checkpoint needs an fsync */
	char *snapshot_path; /* set when a producer snapshot needs an fsync */
	int64_t snapshot_offset; /* its offset */
	int rc;
	bool unopened;      /* rc is a file that could not be opened: nothing was
			     * lost, the next flush tries again */
};

/* What a job fsyncs of a segment. The job holds no reference to the
 * segments (which would keep the open-file cache from closing them while
 * it waits for the flush thread) but their paths: every file goes by path,
 * through a descriptor of its own, one at a time (fsync writes back what
 * any descriptor of the file wrote); a file gone meanwhile (the segment
 * left the log) needs none. */
enum {
	FLUSH_LOG = 1,  /* the .log */
	FLUSH_TXN = 2,  /* the .txnindex */
	FLUSH_OIDX = 4, /* the .index */
	FLUSH_TIDX = 8, /* the .timeindex */
};

bool log_flush_due(const log_partition *lp, int64_t now_ms)
{
	if (lp->flush_in_flight)
		return false;
	if (lp->flush_after_roll)
		return true;
	if (lp->unflushed_since_ms < 0)
		return false;
	int64_t unflushed = log_end_offset(lp) - lp->recovery_point;
	if (unflushed >= lp->cfg.flush_messages && unflushed > 0)
		return true;
	return now_ms - lp->unflushed_since_ms >= lp->cfg.flush_ms;
}

/* Write the index entries recovery could not (indexes_unsynced); best
 * effort, again at the next flush while the disk stays full. */
static void sync_rebuilt_indexes(log_partition *lp)
{
	if (!lp->indexes_unsynced)
		return;
	int rc = 0;
	for (size_t i = 0; i < lp->nseg; i++) {
		int r = log_seg_sync_indexes(lp->segs[i]);
		if (r < 0)
			rc = r;
	}
	lp->indexes_unsynced = rc < 0;
}

int log_flush_begin(log_partition *lp, log_flush_job **out)
{
	sync_rebuilt_indexes(lp);
	/* An epoch the checkpoint file lacks pins the recovery point. */
	int erc = log_epoch_write_pending(&lp->epochs);
	if (erc < 0)
		return erc;
	log_flush_job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	j->log_paths = calloc(lp->nseg, sizeof *j->log_paths);
	j->bases = calloc(lp->nseg, sizeof *j->bases);
	j->what = calloc(lp->nseg, sizeof *j->what);
	if (!j->log_paths || !j->bases || !j->what)
		goto nomem;
	if (lp->dir_unsynced && !(j->dir = strdup(lp->dir)))
		goto nomem;
	if (lp->epochs.unsynced) {
		char path[PATH_MAX];
		if (log_io_path(path, sizeof path, "%s/%s", lp->dir, LOG_EPOCH_FILE) < 0 ||
		    !(j->epoch_path = strdup(path)))
			goto nomem;
		if (!j->dir && !(j->dir = strdup(lp->dir)))
			goto nomem;
	}
	if (lp->snapshot_unsynced >= 0) {
		char path[PATH_MAX];
		if (log_io_path(path, sizeof path, "%s/%020lld%s", lp->dir, (long long)lp->snapshot_unsynced,
				LOG_SNAPSHOT_SUFFIX) < 0 ||
		    !(j->snapshot_path = strdup(path)))
			goto nomem;
		j->snapshot_offset = lp->snapshot_unsynced;
	}
	for (size_t i = 0; i < lp->nseg; i++) {
		log_segment *s = lp->segs[i];
		log_txnindex *ti = &lp->tix[i];
		if (ti->loaded && ti->nfile < ti->n && log_txnindex_sync(ti) < 0)
			s->dirty = true; /* still pending: retried by the next flush */
		if (!s->dirty && !ti->dirty && !s->oidx.dirty && !s->tidx.dirty)
			continue;
		if (!(j->log_paths[j->n] = strdup(s->log_path)))
			goto nomem;
		j->bases[j->n] = s->base_offset;
		j->what[j->n++] = (uint8_t)((s->dirty ? FLUSH_LOG : 0) | (ti->dirty ? FLUSH_TXN : 0) |
					    (s->oidx.dirty ? FLUSH_OIDX : 0) | (s->tidx.dirty ? FLUSH_TIDX : 0));
	}
	for (size_t i = 0; i < lp->nseg; i++) { /* taken (the others are clean) */
		lp->tix[i].dirty = false;
		lp->segs[i]->dirty = false;
		lp->segs[i]->oidx.dirty = lp->segs[i]->tidx.dirty = false;
	}
	j->target = log_end_offset(lp);
	j->unflushed_since_ms = lp->unflushed_since_ms;
	lp->unflushed_since_ms = -1;
	lp->dir_unsynced = false;
	lp->epochs.unsynced = false;
	lp->flush_after_roll = false;
	lp->snapshot_unsynced = -1;
	lp->flush_in_flight = true;
	*out = j;
	return 0;
nomem:
	for (size_t i = 0; i < j->n; i++)
		free(j->log_paths[i]);
	free(j->log_paths);
	free(j->bases);
	free(j->what);
	free(j->dir);
	free(j->epoch_path);
	free(j->snapshot_path);
	free(j);
	return -ENOMEM;
}

bool log_flush_job_empty(const log_flush_job *j)
{
	return j->n == 0 && !j->dir && !j->epoch_path && !j->snapshot_path;
}

/* fsync the file at path; a file gone is 0 (it left the log), one that
 * cannot be opened (-EMFILE, ...) is not a failed fsync. */
static int fsync_path(log_flush_job *j, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		j->unopened = true;
		return -errno;
	}
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* fsync the file of the segment at log_path (its .log) with suffix
 * instead of ".log". */
static int fsync_sibling(log_flush_job *j, const char *log_path, const char *suffix)
{
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%.*s%s", (int)(strlen(log_path) - strlen(".log")), log_path,
			     suffix);
	return rc < 0 ? rc : fsync_path(j, path);
}

int log_flush_run(log_flush_job *j)
{
	int rc = 0;
	for (size_t i = 0; i < j->n && rc == 0; i++) {
		const char *p = j->log_paths[i];
		if (j->what[i] & FLUSH_LOG)
			rc = fsync_path(j, p);
		if (rc == 0 && (j->what[i] & FLUSH_OIDX))
			rc = fsync_sibling(j, p, ".index");
		if (rc == 0 && (j->what[i] & FLUSH_TIDX))
			rc = fsync_sibling(j, p, ".timeindex");
		if (rc == 0 && (j->what[i] & FLUSH_TXN))
			rc = fsync_sibling(j, p, LOG_TXNINDEX_SUFFIX);
	}
	/* An open that fails (out of descriptors, mostly) syncs nothing and
	 * loses nothing: the job fails and is taken again by the next flush,
	 * unlike a failed fsync (log_flush_end). A directory opens read-only
	 * like a file. */
	if (rc == 0 && j->epoch_path)
		rc = fsync_path(j, j->epoch_path);
	if (rc == 0 && j->snapshot_path)
		rc = fsync_path(j, j->snapshot_path);
	if (rc == 0 && j->dir)
		rc = fsync_path(j, j->dir);
	j->rc = rc;
	return rc;
}

int log_flush_end(log_partition *lp, log_flush_job *j)
{
	int rc = j->rc;
	if (lp) {
		lp->flush_in_flight = false;
		/* A failed fsync may have dropped dirty pages (Linux clears
		 * them after reporting the error once, so a retry "succeeds"
		 * without the data). Kafka halts the log dir; Samsa keeps
		 * serving but pins the recovery point from then on and reports
		 * every later flush as failed, so the broker writes no
		 * clean-shutdown marker and the next open checks every batch
		 * from the last good recovery point (CRC) and truncates what
		 * was lost. */
		if (rc < 0 && !j->unopened && !lp->fsync_failed) {
			lp->fsync_failed = true;
			fprintf(stderr,
				"samsa storage: %s: fsync failed (%s): the recovery point stays at %lld until "
				"a restart\n",
				lp->dir, strerror(-rc), (long long)lp->recovery_point);
		}
		/* a truncation meanwhile: what was above its cut and written
		 * again since is not what the job synced */
		int64_t target = j->target < lp->flush_cap ? j->target : lp->flush_cap;
		lp->flush_cap = INT64_MAX;
		if (rc == 0) {
			if (target > lp->recovery_point && !lp->fsync_failed)
				lp->recovery_point = target;
		} else {
			/* the segments still in the log are to be synced again */
			for (size_t i = 0; i < j->n; i++) {
				size_t k = log_seg_floor(lp, j->bases[i]);
				log_segment *s = lp->segs[k];
				if (s->base_offset != j->bases[i])
					continue;
				s->dirty |= (j->what[i] & FLUSH_LOG) != 0;
				s->oidx.dirty |= (j->what[i] & FLUSH_OIDX) != 0;
				s->tidx.dirty |= (j->what[i] & FLUSH_TIDX) != 0;
				lp->tix[k].dirty |= (j->what[i] & FLUSH_TXN) != 0;
			}
			if (j->dir)
				lp->dir_unsynced = true;
			if (j->epoch_path)
				lp->epochs.unsynced = true;
			if (j->snapshot_path && lp->snapshot_unsynced < 0)
				lp->snapshot_unsynced = j->snapshot_offset;
			if (j->unflushed_since_ms >= 0 &&
			    (lp->unflushed_since_ms < 0 || j->unflushed_since_ms < lp->unflushed_since_ms))
				lp->unflushed_since_ms = j->unflushed_since_ms;
		}
	}
	if (rc == 0 && lp && lp->fsync_failed)
		rc = -EIO;
	for (size_t i = 0; i < j->n; i++)
		free(j->log_paths[i]);
	free(j->log_paths);
	free(j->bases);
	free(j->what);
	free(j->dir);
	free(j->epoch_path);
	free(j->snapshot_path);
	free(j);
	return rc;
}

int log_flush(log_partition *lp)
{
	log_flush_job *j;
	int rc = log_flush_begin(lp, &j);
	if (rc < 0)
		return rc;
	log_flush_run(j);
	return log_flush_end(lp, j);
}

/* ---- read ---- */

/* Position of the first batch of s at or after from whose last offset is >=
 * offset: 0 with *pos and *h set, 1 when none before end, or an error. */
static int find_batch(log_scan *sc, int64_t from, int64_t offset, int64_t *pos, proto_batch_info *h)
{
	for (int64_t p = from;;) {
		int rc = log_scan_header(sc, p, h);
		if (rc != 0)
			return rc;
		if (log_batch_last_offset(h) >= offset) {
			*pos = p;
			return 0;
		}
		p += h->size;
	}
}

int log_read(log_partition *lp, int64_t offset, int64_t max_offset, int32_t max_bytes,
	     bool min_one, log_read_result *out)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	int64_t leo = log_end_offset(lp);
	if (offset < lp->log_start || offset > leo)
		return LOG_ERR_OFFSET_OUT_OF_RANGE;
	if (offset == leo || offset >= max_offset)
		return 0;
	if (max_bytes < 0)
		max_bytes = 0;
	for (size_t i = log_seg_floor(lp, offset); i < lp->nseg; i++) {
		log_segment *s = lp->segs[i];
		int rc = log_seg_ready(lp, s);
		if (rc < 0)
			return rc;
		int64_t size = s->size;
		log_scan sc;
		log_scan_init(&sc, s, size);
		int64_t from = 0;
		if (offset > s->base_offset)
			from = log_index_lookup(&s->oidx, offset - s->base_offset, NULL);
		int64_t p0 = 0;
		proto_batch_info h0;
		rc = find_batch(&sc, from, offset, &p0, &h0);
		if (rc == 1)
			continue; /* nothing at or after offset here: the next segment */
		if (rc < 0)
			return rc;
		if (log_batch_last_offset(&h0) >= max_offset)
			return 0;
		/* End of the read: a batch boundary, at most size, p0 + max_bytes
		 * and the start of the batch holding max_offset (Kafka's
		 * LogSegment.read maxPosition). */
		int64_t limit = p0 + max_bytes < size ? p0 + max_bytes : size;
		int64_t end = -1;
		int64_t next = s->next_offset; /* offset after the batch ending at end */
		if (max_offset < s->next_offset) {
			int64_t pm;
			proto_batch_info hm;
			int64_t mfrom = log_index_lookup(&s->oidx, max_offset - s->base_offset, NULL);
			if (mfrom < p0)
				mfrom = p0;
			rc = find_batch(&sc, mfrom, max_offset, &pm, &hm);
			if (rc < 0)
				return rc;
			if (rc == 0 && pm <= limit) {
				end = pm;
				next = hm.base_offset;
			}
		}
		if (end < 0 && limit == size)
			end = size;
		if (end < 0) {
			int64_t q = log_index_floor_pos(&s->oidx, limit);
			if (q < p0)
				q = p0;
			for (;;) {
				proto_batch_info h;
				rc = log_scan_header(&sc, q, &h);
				if (rc < 0)
					return rc;
				if (rc == 1)
					break;
				if (q + h.size > limit || log_batch_last_offset(&h) >= max_offset) {
					next = h.base_offset;
					break;
				}
				q += h.size;
			}
			end = q;
		}
		if (end == p0) {
			if (!min_one)
				return 0;
			end = p0 + h0.size;
			next = log_batch_last_offset(&h0) + 1;
		}
		int fd = log_seg_fd(s); /* open: the scan above opened it */
		if (fd < 0)
			return fd;
		log_segment_keep(s);
		out->segment = s;
		out->fd = fd;
		out->file_pos = p0;
		out->len = (int32_t)(end - p0);
		out->next_offset = next;
		return 0;
	}
	return 0;
}

/* ---- segment replacement (the cleaner) ---- */

int log_replace_segments(log_partition *lp, log_segment *const *old, size_t nold, const int64_t *bases,
			 size_t nnew, log_replace_files_fn files, void *arg, int64_t now_ms)
{
	if (nold == 0 || nnew == 0 || bases[0] != old[0]->base_offset)
		return -EINVAL;
	size_t at = lp->nseg;
	for (size_t i = 0; i < lp->nseg; i++)
		if (lp->segs[i] == old[0]) {
			at = i;
			break;
		}
	if (at == lp->nseg || at + nold >= lp->nseg)
		return -ESTALE;
	for (size_t j = 0; j < nold; j++)
		if (lp->segs[at + j] != old[j])
			return -ESTALE;
	int64_t limit = lp->segs[at + nold]->base_offset;
	for (size_t k = 0; k < nnew; k++)
		if ((k > 0 && bases[k] <= bases[k - 1]) || bases[k] >= limit)
			return -EINVAL;
	size_t n = lp->nseg - nold + nnew;
	log_segment **segs = calloc(n > lp->cap ? n : lp->cap, sizeof *segs);
	log_txnindex *tix = calloc(n > lp->cap ? n : lp->cap, sizeof *tix);
	log_segment **fresh = calloc(nnew, sizeof *fresh);
	if (!segs || !tix || !fresh) {
		free(segs);
		free(tix);
		free(fresh);
		return -ENOMEM;
	}
	int rc = files(arg);
	size_t opened = 0;
	for (; rc == 0 && opened < nnew; opened++) {
		log_segment *s;
		rc = log_seg_open(lp->dir, bases[opened], now_ms, &s);
		if (rc < 0)
			break;
		fresh[opened] = s;
		int64_t size = s->size;
		rc = log_seg_load_indexes(s, &size);
		if (rc == 0)
			rc = log_txnindex_init(&tix[at + opened], lp->dir, bases[opened]);
		if (rc < 0) {
			opened++;
			break;
		}
		s->next_offset = opened + 1 < nnew ? bases[opened + 1] : limit;
		int64_t ts;
		int32_t rel;
		if (log_timeindex_last(&s->tidx, &ts, &rel)) {
			s->max_ts = ts;
			s->max_ts_offset = s->base_offset + rel;
		}
	}
	if (rc < 0) {
		for (size_t k = 0; k < opened; k++) {
			log_segment_release(fresh[k]);
			log_txnindex_destroy(&tix[at + k]);
		}
		free(segs);
		free(tix);
		free(fresh);
		return rc;
	}
	int64_t removed = 0, added = 0;
	memcpy(segs, lp->segs, at * sizeof *segs);
	memcpy(tix, lp->tix, at * sizeof *tix);
	for (size_t k = 0; k < nnew; k++) {
		segs[at + k] = fresh[k];
		log_seg_attach(fresh[k], lp->files);
		added += fresh[k]->size;
	}
	for (size_t j = 0; j < nold; j++) {
		removed += lp->segs[at + j]->size;
		log_txnindex_destroy(&lp->tix[at + j]);
		log_seg_drop(lp->segs[at + j]);
	}
	size_t rest = lp->nseg - at - nold;
	memcpy(segs + at + nnew, lp->segs + at + nold, rest * sizeof *segs);
	memcpy(tix + at + nnew, lp->tix + at + nold, rest * sizeof *tix);
	free(lp->segs);
	free(lp->tix);
	lp->segs = segs;
	lp->tix = tix;
	if (n > lp->cap)
		lp->cap = n;
	lp->nseg = n;
	lp->size_bytes += added - removed;
	lp->dir_unsynced = true;
	free(fresh);
	return 0;
}
