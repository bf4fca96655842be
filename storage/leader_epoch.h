/*
 * leader_epoch.h - the leader epoch cache of a partition and its file
 * leader-epoch-checkpoint (Kafka's LeaderEpochFileCache and
 * LeaderEpochCheckpointFile):
 *
 *   0\n                     version
 *   <n>\n                   number of entries
 *   <epoch> <start offset>\n  n times, epochs and start offsets increasing
 *
 * The file is rewritten (tmp + rename) whenever the cache changes and fsynced
 * by log_epoch_sync (called from the log's flush), so appends never fsync.
 * A rewrite that fails (disk full) leaves the cache ahead of the file; the
 * log's flush rewrites it first (log_epoch_write_pending) and fails while
 * it cannot, so the recovery point never passes an epoch the file lacks and
 * the shutdown is not marked clean (recovery then re-reads the epochs from
 * the batches above the recovery point).
 */
#ifndef SAMSA_STORAGE_LEADER_EPOCH_H
#define SAMSA_STORAGE_LEADER_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/err.h"

typedef struct log_partition log_partition; /* storage/log.h */

#define LOG_EPOCH_FILE "leader-epoch-checkpoint"

typedef struct log_epoch_entry {
	int32_t epoch;
	int64_t start_offset;
} log_epoch_entry;

typedef struct log_epoch_cache {
	char *dir;            /* owned copy of the partition directory */
	log_epoch_entry *e;   /* n entries, increasing */
	size_t n, cap;
	bool unsynced;        /* rewritten since the last fsync */
	bool unwritten;       /* the file is behind the cache: its last rewrite failed */
} log_epoch_cache;

/* Read dir/leader-epoch-checkpoint (missing = empty). LOG_ERR_CORRUPT when it
 * does not parse (the cache is then empty). */
int log_epoch_load(log_epoch_cache *c, const char *dir);
void log_epoch_free(log_epoch_cache *c);
/* Record that epoch starts at start_offset (Kafka's assign): ignored when
 * epoch is below the latest or equal to it; entries starting at or after
 * start_offset are removed first. Rewrites the file when it changes. */
int log_epoch_assign(log_epoch_cache *c, int32_t epoch, int64_t start_offset);
/* Remove entries starting at or after end_offset (after a truncation). */
int log_epoch_truncate_from_end(log_epoch_cache *c, int64_t end_offset);
/* After the log start offset moved up to start_offset (retention,
 * DeleteRecords): drop the entries starting at or below it but keep the
 * last of them, moved to start at start_offset, so the epoch of the first
 * offset kept stays known (Kafka's LeaderEpochFileCache.truncateFromStart).
 * Rewrites the file when it changes (fsynced by the next log flush).
 * Returns 0 or -errno. */
int log_epoch_truncate_from_start(log_epoch_cache *c, int64_t start_offset);
/* Latest epoch, -1 when none. */
int32_t log_epoch_latest(const log_epoch_cache *c);
/* The epoch of the entry covering offset (Kafka's
 * LeaderEpochFileCache.epochForOffset): the last entry whose start offset
 * is <= offset; -1 when none is (offset below the first entry, or empty). */
int32_t log_epoch_for_offset(const log_epoch_cache *c, int64_t offset);
/* log_epoch_for_offset on a partition log's cache (storage/log.h), for
 * ListOffsets answers: the leader epoch of the batch holding offset. */
int32_t log_leader_epoch_for_offset(const log_partition *lp, int64_t offset);
/* Kafka's endOffsetFor(epoch, logEndOffset) for OffsetsForLeaderEpoch. */
void log_epoch_end_offset_for(const log_epoch_cache *c, int32_t epoch, int64_t log_end_offset,
			      int32_t *out_epoch, int64_t *out_end_offset);
/* Rewrite the file when its last rewrite failed (unwritten). Returns 0 or
 * -errno (ENOSPC...), the cache still ahead of the file. */
int log_epoch_write_pending(log_epoch_cache *c);
/* fsync the file and the directory if rewritten since the last call. */
int log_epoch_sync(log_epoch_cache *c);

#endif
