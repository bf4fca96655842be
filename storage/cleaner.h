/*
 * cleaner.h - log compaction of one partition log (Kafka's Cleaner,
 * LogCleanerManager.cleanableOffsets and SkimpyOffsetMap; KIP-58
 * min.compaction.lag.ms, KIP-354 max.compaction.lag.ms, KIP-534 delete
 * horizon).
 *
 * A cleaning round of a log:
 *   1. log_clean_begin (the log's thread): the range to clean. The first
 *      dirty offset comes from the broker's cleaner-offset-checkpoint (below
 *      the log start offset or above the log end offset it is reset to the
 *      log start offset); the first uncleanable offset is the lowest of the
 *      last stable offset, the active segment's base offset and the base
 *      offset of the first dirty segment holding a timestamp newer than
 *      now - min.compaction.lag.ms. The closed segments below it are kept
 *      (log_segment_keep), with the producers' last data offsets.
 *   2. log_clean_run (any thread, blocking, reads only those segment files):
 *      builds the offset map (MD5 of the key -> latest offset) over the
 *      dirty range, bounded by log.cleaner.dedupe.buffer.size (24 bytes a
 *      slot, filled to log.cleaner.io.buffer.load.factor; when full, the
 *      round ends early and the rest stays dirty). Then the segments from
 *      the start of the log up to the end of the mapped range are grouped
 *      (at most segment.bytes and segment.index.bytes a group, relative
 *      offsets within int32) and each group is copied into one new segment
 *      named after the group's first base offset:
 *        <base>.log.cleaned, .index.cleaned, .timeindex.cleaned,
 *        .txnindex.cleaned (the aborted transactions of the group's
 *        segments), written, fsynced, renamed to .swap (indexes first,
 *        .log last) and the directory fsynced.
 *      Kept: a record above the mapped range; a record whose key's latest
 *      offset is its own; a tombstone (null value) until the delete horizon
 *      of its batch has passed: the first round that keeps it stamps the
 *      batch with now + delete.retention.ms (KIP-534: attributes bit 6 and
 *      the base timestamp), a later round after that time drops it.
 *      Dropped: older records of a key, records without a key (Kafka's
 *      Cleaner counts them as invalid). A batch keeps its base offset, its
 *      last offset delta and producer fields; its records keep their
 *      offsets and timestamps; its CRC32C is recomputed. A batch that
 *      loses every record is dropped, unless it holds its producer's last
 *      data offset (kept empty so the producer's sequence survives) or ends
 *      the round (kept empty so the last offset is not lost). A batch
 *      whose records all stay and needs no horizon is copied unchanged
 *      (compressed or not); a rewritten batch is written uncompressed
 *      (Samsa has decompression only; Kafka recompresses with the codec).
 *      Transactions: transactional batches and control batches are copied
 *      unchanged and their keys do not enter the offset map (so an aborted
 *      or committed transactional record never hides an older plain one);
 *      Kafka also removes aborted data and, later, markers.
 *   3. log_clean_end (the log's thread): swaps the cleaned segments in
 *      (log_replace_segments) unless the segments changed meanwhile
 *      (retention or DeleteRecords removed some): the old files are renamed
 *      to .deleted, the .swap files to their final names (.log last).
 *   4. log_clean_job_free (any thread): unlinks the .deleted files (or, for
 *      a round that was not swapped in, the new files) and fsyncs the
 *      directory.
 *
 * Crash safety (log_clean_recover_swaps, run by log_open before the
 * segments are listed): a <base>.log.swap is complete (it was fsynced
 * before its rename), so the swap is finished: the segments whose base
 * offset lies in (base, last offset of the .swap] are removed, each
 * <base>.<index>.swap is renamed over <base>.<index>, then .log.swap over
 * .log. Index .swap files without a .log.swap and every .cleaned file are
 * removed (the round is rolled back: the old segments were never touched).
 * .deleted files are removed by recovery as leftovers.
 *
 * Errors: 0 or -errno (-ECANCELED when aborted, -ESTALE when the segments
 * changed), LOG_ERR_CORRUPT for a segment that does not parse.
 */
#ifndef SAMSA_STORAGE_CLEANER_H
#define SAMSA_STORAGE_CLEANER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/log.h"

/* Settings of one cleaning round (Kafka's LogConfig and CleanerConfig). */
typedef struct log_clean_config {
	int64_t delete_retention_ms;   /* delete.retention.ms (86400000) */
	int64_t min_compaction_lag_ms; /* min.compaction.lag.ms (0) */
	int64_t max_compaction_lag_ms; /* max.compaction.lag.ms (INT64_MAX) */
	int64_t dedupe_buffer_bytes;   /* log.cleaner.dedupe.buffer.size / threads (128 MiB) */
	double dedupe_load_factor;     /* log.cleaner.io.buffer.load.factor (0.9) */
	int32_t io_buffer_bytes;       /* log.cleaner.io.buffer.size (512 KiB): read window */
} log_clean_config;

void log_clean_config_defaults(log_clean_config *c);

/* What a log offers to clean (Kafka's LogToClean). */
typedef struct log_clean_stats {
	int64_t first_dirty;       /* the checkpoint, reset to the log start offset when invalid */
	bool reset_checkpoint;     /* the checkpoint given was invalid */
	int64_t first_uncleanable; /* see above */
	int64_t clean_bytes;       /* segments below first_dirty */
	int64_t cleanable_bytes;   /* segments in [first_dirty, first uncleanable segment) */
	double ratio;              /* cleanable / (clean + cleanable), 0 when empty */
	int64_t compaction_delay_ms; /* > 0 when max.compaction.lag.ms is exceeded by that much */
} log_clean_stats;

/*
 * Kafka's LogCleanerManager.cleanableOffsets, calculateCleanableBytes and
 * maxCompactionDelay for lp (the log's thread; reads at most the first
 * batch header of dirty segments when max_compaction_lag_ms is set).
 * checkpoint is the cleaner checkpoint (-1 when none). Returns 0 or -errno.
 */
int log_clean_stats_of(log_partition *lp, int64_t checkpoint, const log_clean_config *cfg,
		       int64_t now_ms, log_clean_stats *out);

typedef struct log_clean_job log_clean_job;

/* What a round did (Kafka's CleanerStats). */
typedef struct log_clean_result {
	int64_t end_offset;      /* the new cleaner checkpoint (first offset not cleaned) */
	int64_t bytes_read;      /* bytes of segments read (map and copy) */
	int64_t bytes_written;   /* bytes of the cleaned segments */
	int64_t records_read;
	int64_t records_kept;
	int nsegments_in, nsegments_out;
	double map_utilization;  /* entries / slots */
} log_clean_result;

/*
 * Start a round over lp from first_dirty (log_clean_stats_of's). Returns 0
 * with *out set (the caller passes it to log_clean_run, then log_clean_end
 * and log_clean_job_free), 1 when there is nothing to clean (*out NULL), or
 * -ENOMEM. now_ms is the round's clock (tombstone horizons). abort, when not
 * NULL, is polled by log_clean_run: once true the round stops (-ECANCELED).
 */
int log_clean_begin(log_partition *lp, int64_t first_dirty, const log_clean_config *cfg,
		    int64_t now_ms, atomic_bool *abort, log_clean_job **out);

/* The blocking part (any thread): map, copy, fsync, rename to .swap.
 * Returns 0 or -errno / LOG_ERR_CORRUPT / -ECANCELED; on error the new
 * files are removed. */
int log_clean_run(log_clean_job *job);

/*
 * On lp's thread after a successful log_clean_run: swap the cleaned
 * segments in. lp NULL means the log went away (nothing swapped). Returns
 * 0 with *result filled, -ESTALE when the segments changed (nothing
 * swapped), or -errno. The job still needs log_clean_job_free.
 */
int log_clean_end(log_partition *lp, log_clean_job *job, log_clean_result *result);

/* The result of the run so far (valid after log_clean_run). */
const log_clean_result *log_clean_job_result(const log_clean_job *job);
/* The partition directory of the job. */
const char *log_clean_job_dir(const log_clean_job *job);

/* Any thread: remove the files that are no longer needed (see above),
 * fsync the directory, drop the segment references and free. NULL is ok. */
void log_clean_job_free(log_clean_job *job);

/* Finish or roll back interrupted swaps in a partition directory (see
 * above; called by log_open). Returns 0 or -errno. */
int log_clean_recover_swaps(const char *dir);

#endif
