/*
 * partition.h - the inside of a log_partition (log.h), shared by log.c
 * (append, read, flush), recover.c (open: load and recovery), truncate.c,
 * timestamp.c (lookups by time) and cleaner.c. Internal to storage/.
 * partition.c has the helpers on the segment list below (log_seg_floor,
 * log_push_segment, log_note_aborted_txn, log_retire_*) and calls none of
 * those files.
 *
 * Invariants:
 *   - segs[] is never empty, sorted by base offset; segs[nseg-1] is the
 *     active segment (the only one appended to), its indexes are loaded
 *     and it is the only one whose index files keep a descriptor between
 *     writes (log_seg_set_active: log_push_segment moves the mark, and
 *     whatever drops the last segments marks the new last one);
 *   - log_start <= high watermark <= log end offset = active->next_offset;
 *   - recovery_point <= log end offset: below it, data was fsynced.
 */
#ifndef SAMSA_STORAGE_PARTITION_H
#define SAMSA_STORAGE_PARTITION_H

#include "storage/leader_epoch.h"
#include "storage/log.h"
#include "storage/producer_state.h"
#include "storage/segment.h"
#include "storage/txnindex.h"

struct log_partition {
	char *dir;                  /* owned */
	log_config cfg;
	log_file_cache *files;      /* the open-file cache its segments are attached to
				     * (log_open_with_files), NULL for none */
	log_segment **segs;         /* nseg references, sorted by base offset */
	log_txnindex *tix;          /* tix[i]: segs[i]'s .txnindex (same nseg, cap) */
	size_t nseg, cap;
	int64_t log_start;
	int64_t hw;
	int64_t recovery_point;
	int64_t size_bytes;         /* sum of segment sizes */
	int64_t unflushed_since_ms; /* first append since the last flush began, -1 none */
	bool flush_in_flight;
	bool flush_after_roll;      /* a segment was rolled since the last flush began: a
				     * flush is due (log_flush_due), so the recovery point
				     * follows the rolled segments (Kafka's UnifiedLog.roll) */
	bool dir_unsynced;          /* segment files created/removed since the last flush */
	int64_t snapshot_unsynced;  /* offset of the latest producer snapshot written and not
				     * yet fsynced (-1: none): the next flush fsyncs it */
	bool indexes_unsynced;      /* index entries rebuilt at open but not written (a full
				     * disk): written at the next flush or close */
	bool fsync_failed;          /* an fsync failed once: the recovery point stays put
				     * until the log is reopened (log_flush_end) */
	log_open_stats opened;      /* what log_load did (log_get_open_stats) */
	log_epoch_cache epochs;
	log_producer_state producers; /* covers the log below producers.map_end_offset */
	bool producers_loading;       /* log_load: recovery replays batches into producers */
	int64_t flush_cap;          /* while a flush job is in flight: the lowest log end
				     * offset a truncation left meanwhile (INT64_MAX: none);
				     * the job moves the recovery point no higher */
	bool truncate_failed;       /* a truncation failed after its commit point: appends
				     * fail (-EIO) until the log is reopened (truncate.c) */
	void (*truncate_hook)(log_partition *lp, int step); /* tests only: called after
				     * each step of a truncation (truncate.c), else NULL */
	char **deleted;             /* files of removed segments, renamed *.deleted and not
				     * yet handed out by log_take_deleted_files (retention.c) */
	size_t ndeleted, deleted_cap;
};

static inline log_segment *log_active(const log_partition *lp) { return lp->segs[lp->nseg - 1]; }

/* Index of the segment holding offset: the last one with base <= offset
 * (0 when offset is below every base). */
size_t log_seg_floor(const log_partition *lp, int64_t offset);
/* Make sure s's indexes are loaded and sane, rebuilding them from the batch
 * headers when they are not (no truncation). A load that fails for want of
 * descriptors or memory is returned as such, nothing rebuilt. */
int log_seg_ready(log_partition *lp, log_segment *s);
/* Append a segment reference to segs[] (and set up its .txnindex entry,
 * not read yet); s becomes the active segment, the one before it not, and
 * is attached to lp->files. A segment leaves segs[] by log_seg_drop. */
int log_push_segment(log_partition *lp, log_segment *s);

/*
 * Rebuild s's indexes (and its next offset, max timestamp, rolling
 * timestamp) by reading every batch from position 0: header checks, offsets
 * strictly increasing from prev_next and below limit_next, relative offsets
 * within int32, and with check_crc the CRC32C of every batch (Kafka's
 * LogSegment.recover). Epochs found are assigned to the epoch cache when
 * assign_epochs. With assign_epochs during log_load (producers_loading),
 * the checked batches at or after the producer state's map end offset are
 * replayed into it when the segment starts at or below that offset.
 * *valid gets the size of the good prefix, *why a reason when
 * it is short of s->size. Does not truncate.
 */
int log_seg_rebuild(log_partition *lp, log_segment *s, int64_t prev_next, int64_t limit_next,
		    bool check_crc, bool assign_epochs, int64_t *valid, const char **why);

/* Add the aborted transaction t (completed by a marker in segs[i]) to
 * segs[i]'s .txnindex unless an entry at or after its marker is there
 * already (recovery replays markers whose entries may exist). Failures go to
 * stderr; the entry stays in memory and is written at the next flush. */
void log_note_aborted_txn(log_partition *lp, size_t i, const log_completed_txn *t);

/* Load the directory's segments, check/recover them, then the producer
 * state (recover.c). */
int log_load(log_partition *lp, bool clean, int64_t recovery_point, int64_t now_ms);

/*
 * Replay the batch h (in segs[i]) into the producer state, without checks
 * (log_pstate_replay); for a control batch the marker is read from batch
 * (its h->size bytes; NULL when they could not be read, which ends the
 * transaction as a commit without index entry, as does a marker that does
 * not parse), and an aborted transaction it completes goes to segs[i]'s
 * .txnindex (log_note_aborted_txn). Returns 0 or -ENOMEM (none when room
 * was reserved: log_pstate_reserve and log_pstate_txn_reserve).
 * Recovery and a follower's append share it, so a follower's state is the
 * one a recovery of the same batches gives (recover.c).
 */
int log_replay_batch(log_partition *lp, size_t i, const proto_batch_info *h, const uint8_t *batch);

/*
 * Bring the producer state to the log below end (<= the log end offset):
 * when reload, from the latest readable snapshot at or below end first
 * (empty from the first segment's base when there is none; snapshots that
 * do not parse are removed), then the batches from its map end offset up
 * to end are replayed, then producers expired at now_ms removed (Kafka's
 * ProducerStateManager.truncateAndReload and
 * UnifiedLog.rebuildProducerState; recover.c). Returns 0 or -errno.
 */
int log_rebuild_producers(log_partition *lp, int64_t end, bool reload, int64_t now_ms);
/* Remove the producer snapshots above offset (recover.c). */
void log_remove_snapshots_above(log_partition *lp, int64_t offset);

/* Rename path to path.deleted and add the new name to the list
 * log_take_deleted_files hands out (retention.c). Returns 0 (also when path
 * does not exist) or -errno from rename. When the name cannot be kept (no
 * memory) the file stays renamed: log_open removes it. */
int log_retire_file(log_partition *lp, const char *path);

/* Rename s's files *.deleted (.log first: a crash between the renames
 * leaves index files without a .log, which log_open removes as orphans)
 * through log_retire_file. Returns 0 or the -errno of renaming the .log
 * (the segment stays then); later failures go to stderr. */
int log_retire_segment_files(log_partition *lp, const log_segment *s);

/*
 * The truncation-pending file of a partition directory (truncate.c says
 * what it holds and why). log_truncation_redo, run by log_open before
 * anything is read: when the file is there, a truncation was cut short by
 * a crash; its file changes are done again (segments above the one cut
 * unlinked, that one's .log cut; for a full truncation every segment file,
 * snapshot and the epoch checkpoint unlinked) and *t says what the open
 * must still do: recover from base on (base -1: start the log at
 * log_end_offset; -2: the file did not parse, recover every segment).
 * log_truncation_done removes the file (after the log loaded) and fsyncs
 * the directory. Both return 0 or -errno.
 */
#define LOG_TRUNCATION_FILE "truncation-pending"
typedef struct log_truncation {
	bool pending;
	int64_t log_end_offset;
	int64_t base;
} log_truncation;
int log_truncation_redo(const char *dir, log_truncation *t);
int log_truncation_done(const char *dir);

/* Write the producer snapshot at offset and remove all but the latest 2
 * snapshots (log.c). Written without fsync: the next flush fsyncs it
 * (snapshot_unsynced). Failures go to stderr: the state can be rebuilt
 * from the log. */
void log_snapshot_producers(log_partition *lp, int64_t offset);

#endif
