/*
 * log.h - the log of one partition: a directory <topic>-<partition> of
 * segments in Kafka's on-disk layout (DESIGN.md decision 3).
 *
 *   00000000000000000000.log        record batches as on the wire, offsets assigned
 *   00000000000000000000.index      8-byte entries: int32 relative offset, int32 position
 *                                   (sparse, one per log.index.interval.bytes)
 *   00000000000000000000.timeindex  12-byte entries: int64 timestamp, int32 relative offset
 *   00000000000000000000.txnindex   34-byte entries, one per aborted transaction whose
 *                                   marker is in the segment (txnindex.h), created with the first
 *   partition.metadata              "version: 0\ntopic_id: <base64url uuid>\n"
 *   leader-epoch-checkpoint         "0\n<n>\n<epoch> <start offset>\n..."
 *   00000000000000000000.snapshot   producer state at that offset (producer_state.h),
 *                                   written at segment roll and clean close
 *   truncation-pending              only while a truncation runs, or after a crash cut
 *                                   one short (log_truncate_to; truncate.c)
 *
 * Offsets: the log start offset (first offset kept), the log end offset (next
 * offset to assign) and the high watermark (last offset acknowledged by the
 * ISR + 1; <= log end offset) are kept apart. The recovery point is the offset
 * below which the log is known flushed and intact.
 *
 * Threading: a log_partition is used by one thread (the event loop); fsync
 * may be handed to another thread through log_flush_begin/log_flush_end.
 * Errors: functions return 0 or a negative errno (-EIO, -ENOSPC, ...), or
 * LOG_ERR_* (storage/err.h).
 */
#ifndef SAMSA_STORAGE_LOG_H
#define SAMSA_STORAGE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/err.h"
#include "storage/filecache.h"
#include "storage/producer_state.h"
#include "storage/txnindex.h"

/* Per-log settings, Kafka's topic config names in comments. */
typedef struct log_config {
	int64_t segment_bytes;          /* segment.bytes (default 1 GiB) */
	int64_t segment_ms;             /* segment.ms (default 7 days) */
	int32_t index_interval_bytes;   /* index.interval.bytes (default 4096) */
	int32_t max_index_bytes;        /* segment.index.bytes (default 10 MiB) */
	int64_t flush_messages;         /* flush.messages (default INT64_MAX) */
	int64_t flush_ms;               /* flush.ms (default INT64_MAX) */
	int64_t producer_id_expiration_ms; /* broker's producer.id.expiration.ms
					    * (default 86400000) */
} log_config;

void log_config_defaults(log_config *c);

/* A reference-counted segment, kept alive while a response sends from it. */
typedef struct log_segment log_segment;
void log_segment_keep(log_segment *s);
/* Drop a reference; the fd closes with the last one. Takes void * so it can
 * be used as a proto_records release callback. */
void log_segment_release(void *segment);
/*
 * Lend the segment's .log descriptor for a send that spans loop iterations
 * (a fetch response's sendfile; proto_file_chunk's pin and unpin): the
 * descriptor, opened again when the log's open-file cache (filecache.h)
 * closed it, also for a segment that has left the log since (from its file
 * renamed *.deleted, until it is unlinked), and kept open until
 * log_segment_unpin; or -errno. The caller holds a reference throughout.
 * A reference alone keeps the memory, not the descriptor: only a pinned
 * segment is never closed by the cache. The log's thread.
 */
int log_segment_pin(void *segment);
void log_segment_unpin(void *segment);

typedef struct log_partition log_partition;

/*
 * Open (or create) the log in directory dir. When clean is false (no
 * clean-shutdown marker), batches from recovery_point on are checked one by one
 * (header, CRC32C, offsets), a torn or corrupt tail is truncated and the
 * indexes of the checked segments are rebuilt; the other segments are not
 * read, and their indexes are rebuilt only when they fail Kafka's sanity
 * checks (missing, not whole entries, a last entry outside the segment;
 * an empty offset index is valid: recover.c). A file that cannot be opened
 * or read (-EMFILE, -EIO, ...) fails the open and rewrites nothing. The
 * producer state comes from the latest readable .snapshot at or below the
 * log end offset, then from the batches after it
 * (Kafka's LogLoader / ProducerStateManager.truncateAndReload); snapshots
 * above the log end offset are removed, producers already expired dropped. recovery_point/log_start_offset come from the log dir's
 * checkpoints (-1 when unknown). A truncation-pending file (a truncation
 * a crash cut short, log_truncate_to) is acted on before anything is read:
 * the truncation is completed and the log recovered (clean or not) from
 * the segment it cut, or started at its offset for a full truncation. The
 * leader epoch cache is cut at the log start and log end offsets. On
 * success *out is owned by the caller (log_close). Returns 0 or -errno.
 */
int log_open(const char *dir, const log_config *cfg, bool clean, int64_t recovery_point,
	     int64_t log_start_offset, int64_t now_ms, log_partition **out);
/*
 * log_open for a log whose segments share the open-file cache files
 * (storage/filecache.h; NULL: none) with the other logs of its owner:
 * from the open on (recovery included), a segment's .log is opened when
 * it is read or written and closed again when the cache needs room and
 * nobody reads it; the active segment is one of them (an idle partition
 * holds no descriptor). files must outlive the log (log_close or
 * log_delete); segment references held after that (a fetch response) do
 * not touch it. With NULL, as with log_open, a segment's .log stays open
 * from its first use until the log is closed.
 */
int log_open_with_files(log_file_cache *files, const char *dir, const log_config *cfg, bool clean,
			int64_t recovery_point, int64_t log_start_offset, int64_t now_ms, log_partition **out);

/* What log_open did to the segments (for the broker's start-up report). */
typedef struct log_open_stats {
	int32_t segments;  /* segments of the log once open */
	int32_t recovered; /* checked batch by batch (CRC32C) because they hold or
			    * follow the recovery point after an unclean stop */
	int32_t rebuilt;   /* other segments recovered the same way because an index
			    * failed the sanity checks (or, for the active segment
			    * after a clean stop, its tail did not parse) */
} log_open_stats;
void log_get_open_stats(const log_partition *lp, log_open_stats *out);

/*
 * What a clean close writes before its flush (Kafka's UnifiedLog.close):
 * the active segment's closing time index entry (when its max timestamp is
 * not there yet), the disk blocks reserved past its end given back, and
 * the producer state snapshot at the log end offset (when it moved since
 * the last one). All of it is made durable by the next flush (log_flush or
 * a flush job), after which log_close writes and fsyncs nothing more. A log
 * nothing was written to since its last flush gets no write and no fsync.
 * Idempotent.
 */
void log_prepare_close(log_partition *lp);

/* log_prepare_close, log_flush (when anything is unflushed) and free.
 * Segment refs held elsewhere stay valid. */
void log_close(log_partition *lp);

/* Close and remove the directory and every file in it. */
int log_delete(log_partition *lp);

/* Apply a new config (roll and index settings take effect on the next append). */
void log_set_config(log_partition *lp, const log_config *cfg);

int64_t log_start_offset(const log_partition *lp);
int64_t log_end_offset(const log_partition *lp);
int64_t log_high_watermark(const log_partition *lp);
int64_t log_recovery_point(const log_partition *lp);
/* Clamp to [log start offset, log end offset]. Completed transactions whose
 * marker falls below it stop bounding the last stable offset. */
void log_set_high_watermark(log_partition *lp, int64_t hw);
/* Bytes in all segments. */
int64_t log_size_bytes(const log_partition *lp);
const char *log_dir(const log_partition *lp);

/* What log_append_checked did. */
typedef struct log_append_info {
	int64_t base_offset;  /* first offset written (of the original batch when duplicate) */
	int64_t last_offset;  /* last offset written (idem) */
	bool duplicate;       /* nothing written: the batch was already in the log */
	int64_t dup_max_timestamp; /* when duplicate: the original's max timestamp (ms) */
} log_append_info;

/*
 * Append validated batches (len bytes, one or more v2 batches back to back;
 * data batches: markers go through log_append_control).
 * Batches with a producer id >= 0 are checked first against the producer
 * state, as Kafka's UnifiedLog.append with origin CLIENT:
 *   - a batch whose epoch and (first, last) sequence equal one of the
 *     producer's last 5 batches is a duplicate: nothing is written, out
 *     gets the original's offsets and duplicate = true, and 0 is returned;
 *   - an epoch below the producer's: LOG_ERR_INVALID_PRODUCER_EPOCH;
 *   - a new epoch not starting at sequence 0 (unless no epoch was known),
 *     or, same epoch, a base sequence other than the last sequence + 1
 *     (INT32_MAX wraps to 0): LOG_ERR_OUT_OF_ORDER_SEQUENCE; a producer
 *     without state (new, expired, removed) is accepted at any sequence;
 *   - a non-transactional batch from a producer with an ongoing
 *     transaction: LOG_ERR_INVALID_TXN_STATE; a transactional batch (attributes
 *     bit 4) from one without starts its transaction at its base offset
 *     (see log_last_stable_offset).
 * Nothing of a refused append is written. Otherwise patches each batch's
 * base offset (from the log end offset) and partition leader epoch in
 * place, rolls a segment first when size or age asks for it (writing the
 * producer snapshot named after the new segment and keeping the latest 2),
 * writes, updates the indexes and the producer state. Either all batches
 * are written or, on error (-ENOSPC, -EFBIG, -EIO: the broker answers
 * KAFKA_STORAGE_ERROR), nothing of them stays: the .log is truncated back
 * to the end of the last complete batch, index entries are dropped, a roll
 * done for this append is undone, and the log end offset, producer state
 * and segment sizes are unchanged, so the same append succeeds once space
 * is freed (Kafka would take the log dir offline instead). Producers idle
 * for producer.id.expiration.ms are removed here, checked at most every 10
 * minutes (Kafka's
 * producer.id.expiration.check.interval.ms default).
 * Returns 0, LOG_ERR_* above, -EINVAL (bad framing) or -errno.
 * Does not move the high watermark.
 */
int log_append_checked(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
		       int64_t now_ms, log_append_info *out);

/*
 * Append an end transaction marker (a control batch, protocol/records.h)
 * for producer_id/producer_epoch written by a transaction coordinator at
 * coordinator_epoch (Kafka's UnifiedLog.appendAsLeader with origin
 * COORDINATOR, ProducerAppendInfo.appendEndTxnMarker, KIP-98): refused with
 * LOG_ERR_INVALID_PRODUCER_EPOCH when producer_epoch is below the
 * producer's, LOG_ERR_TRANSACTION_COORDINATOR_FENCED when coordinator_epoch
 * is below the one of the producer's last marker (nothing written). Else
 * the batch is written at the log end offset (*offset) with timestamp now_ms
 * and leader_epoch (rolling first when due), the producer takes the epochs,
 * and its ongoing transaction, if any, is completed: commit or abort, an
 * abort adding (producer id, first offset, marker offset, last stable
 * offset) to the .txnindex of the segment holding the marker. The
 * completed transaction bounds the last stable offset until the high
 * watermark passes the marker. Returns 0, LOG_ERR_*, -EINVAL (producer id
 * or epoch < 0) or -errno. Does not move the high watermark.
 */
int log_append_control(log_partition *lp, int64_t producer_id, int16_t producer_epoch,
		       int32_t coordinator_epoch, bool commit, int32_t leader_epoch, int64_t now_ms,
		       int64_t *offset);

/*
 * The last stable offset (KIP-98; Kafka's UnifiedLog.fetchLastStableOffset):
 * the first offset of the earliest transaction that is ongoing, or
 * completed with a marker at or above the high watermark, when that is
 * below the high watermark; else the high watermark. Fetch with
 * isolation_level 1 (read_committed) reads up to it.
 */
int64_t log_last_stable_offset(const log_partition *lp);

/*
 * The aborted transactions a read_committed fetch from fetch_offset must
 * return (Kafka's UnifiedLog.collectAbortedTransactions): fn is called for
 * each transaction aborted by a marker at or after fetch_offset that began
 * below upper_bound_offset (exclusive: the offset after the last batch the
 * fetch returns), reading the .txnindex of the segment holding fetch_offset
 * and the later ones until an entry whose last stable offset reaches the
 * upper bound. Entries come in marker order (fn may see a producer more
 * than once). Returns the number of calls, fn's negative result (which
 * stops the search), or -errno.
 */
int log_aborted_txns(log_partition *lp, int64_t fetch_offset, int64_t upper_bound_offset,
		     log_aborted_txn_fn fn, void *arg);

/*
 * log_append_checked as Kafka's UnifiedLog.append with origin COORDINATOR,
 * for the batches a coordinator writes itself (transactional offset
 * commits in __consumer_offsets): no duplicate detection and no sequence
 * check (Kafka's ProducerAppendInfo checks sequences only for CLIENT),
 * but the producer epoch is checked (LOG_ERR_INVALID_PRODUCER_EPOCH), a
 * transactional batch starts or continues the producer's transaction
 * and a plain batch inside one is LOG_ERR_INVALID_TXN_STATE. *base_offset
 * gets the first offset written. Returns as log_append_checked.
 */
int log_append_coordinator(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
			   int64_t now_ms, int64_t *base_offset);

/* What log_append_follower took. */
typedef struct log_append_follower_info {
	size_t bytes;         /* bytes appended: whole batches from the start of the input */
	int32_t batches;      /* batches appended */
	int64_t first_offset; /* base offset of the first batch appended, -1 when none */
	int64_t last_offset;  /* last offset of the last batch appended, -1 when none */
} log_append_follower_info;

/*
 * Append batches as a follower got them from its leader in a Fetch
 * response (Kafka's UnifiedLog.appendAsFollower, origin REPLICATION): len
 * bytes of v2 batches back to back, offsets and partition leader epochs
 * assigned by the leader, data, transactional and control batches alike.
 * The batches are written from the caller's buffer as they are (no offset
 * or epoch patching, no copy, no allocation per record).
 *
 * What is taken: whole batches from the start. A trailing partial batch (a
 * length running past len; Fetch responses cut at max bytes end so) is
 * left out, as is everything from a batch whose last offset lies more than
 * INT32_MAX past the first batch's base (one segment's relative offsets;
 * never so from a leader, whose fetch answers read one segment) or that
 * would take the total past INT32_MAX bytes: the caller fetches again from
 * the new log end offset. No complete batch: 0 with out->batches = 0.
 *
 * Checked before anything is written; on failure nothing is written:
 *   - LOG_ERR_CORRUPT: a batch length below the 61-byte header, a header
 *     that does not parse (magic other than 2 included, legacy message
 *     sets too; a negative base offset or last offset delta, a last
 *     offset of INT64_MAX, which leaves no next offset), a CRC32C mismatch
 *     (Kafka's CorruptRecordException);
 *   - LOG_ERR_UNEXPECTED_OFFSET: the first batch's base offset below the
 *     log end offset, or a batch's base offset not above the last offset
 *     of the one before. A base offset above (a gap) is taken, as Kafka
 *     does: the leader's log has gaps where compaction removed whole
 *     batches (storage/cleaner.h), and a follower must copy such a log.
 * Not checked (Kafka checks neither for REPLICATION): producer epochs and
 * sequences, coordinator epochs, transaction state.
 *
 * Then, as on the leader: a segment is rolled first when segment.bytes,
 * segment.ms, full indexes or relative offsets ask for it (the new one is
 * named after the first batch's base offset, and the producer snapshot
 * written with it); the indexes and time index are updated. After the
 * write: the producer state takes every batch as recovery replays it
 * (producer epoch, last 5 batches' sequences and offsets, so idempotent
 * duplicates are still recognised when this replica becomes leader; a
 * transactional batch starts its producer's transaction, a control batch
 * ends it, an abort adding its entry to the segment's .txnindex, see
 * log_append_control); the leader epoch cache gets (epoch, base offset) for
 * each batch whose partition leader epoch is above the latest (lower ones
 * are ignored); producers idle for producer.id.expiration.ms are removed
 * as log_append_checked does. On a write error (-ENOSPC, -EFBIG, -EIO)
 * nothing stays, as log_append_checked (its comment says how).
 * Does not move the high watermark. out is filled on success (zeroed, -1
 * offsets, otherwise). Returns 0, LOG_ERR_CORRUPT,
 * LOG_ERR_UNEXPECTED_OFFSET or -errno (-ENOMEM, -ENOSPC, -EFBIG, -EIO).
 */
int log_append_follower(log_partition *lp, const uint8_t *batches, size_t len, int64_t now_ms,
			log_append_follower_info *out);

/* log_append_checked for callers that need only the base offset (of the
 * original batch for a duplicate). Returns the same. */
int log_append(log_partition *lp, uint8_t *batches, size_t len, int32_t leader_epoch,
	       int64_t now_ms, int64_t *base_offset);

/* True when flush.messages / flush.ms say the unflushed tail should be
 * synced, or when a segment was rolled since the last flush began: as
 * Kafka's UnifiedLog.roll flushes the segments before the new one, so the
 * recovery point (and the recovery after a crash) follows the rolls. False
 * while a flush job is in flight. */
bool log_flush_due(const log_partition *lp, int64_t now_ms);
/* fsync every segment with unflushed data and advance the recovery point to
 * the log end offset. Blocking; returns 0 or -errno.
 * (log_flush_begin + log_flush_run + log_flush_end on the calling thread.) */
int log_flush(log_partition *lp);

/*
 * The same flush split so the fsyncs run on another thread (DESIGN.md
 * decision 5). log_flush_begin (log's thread) notes the files written
 * since the last flush (by path: the job holds no segment, so the
 * open-file cache may close them meanwhile) and the log end offset;
 * log_flush_run (any thread, blocking) fsyncs them, the leader epoch
 * checkpoint, the latest producer snapshot and the directory when needed;
 * log_flush_end (log's thread) advances the recovery point on success (or
 * marks the data unflushed again) and frees the job. lp may be NULL in log_flush_end when the log was closed
 * meanwhile. After a failed fsync (dirty pages may be lost) the recovery
 * point stays where it was until the log is reopened and log_flush /
 * log_flush_end return -EIO even when a later fsync succeeds, so the broker
 * writes no clean-shutdown marker and the next open checks the tail (Kafka
 * takes the log dir offline instead). While a job is in flight log_flush_due
 * is false. begin returns 0, -ENOMEM, or the -errno of rewriting a leader
 * epoch checkpoint an earlier append could not write (storage/leader_epoch.h;
 * nothing to flush is taken then, so the recovery point stays); run and end
 * return the fsync result, 0 or -errno. A file that could not be opened for
 * its fsync (-EMFILE, ...) fails the job too, but lost nothing: the rule
 * above does not apply, its files are taken again by the next flush.
 */
typedef struct log_flush_job log_flush_job;
int log_flush_begin(log_partition *lp, log_flush_job **job);
/* True when the job has nothing to fsync (log_flush_run returns at once). */
bool log_flush_job_empty(const log_flush_job *job);
int log_flush_run(log_flush_job *job);
int log_flush_end(log_partition *lp, log_flush_job *job);

/* Where a fetch reads: a region of one segment file. */
typedef struct log_read_result {
	log_segment *segment; /* a reference the caller releases (NULL if len == 0) */
	int fd;               /* segment's descriptor: valid until another segment of a
			       * log sharing an open-file cache is opened, unless
			       * pinned (log_segment_pin); with no cache, until the
			       * reference is released */
	int64_t file_pos; /* bytes */
	int32_t len;      /* bytes, whole batches only */
	int64_t next_offset; /* when len > 0: the offset after the last batch returned
			      * (the base offset of the batch that follows it, or the
			      * segment's next offset); the exclusive upper bound of a
			      * read_committed fetch's aborted transactions */
} log_read_result;

/*
 * Find the batches from the one containing offset up to max_bytes, stopping
 * before max_offset (exclusive; the high watermark or last stable offset):
 * as Kafka's LogSegment.read, a batch whose last offset is >= max_offset is
 * not returned. Only one segment is read per call; when offset lies past the
 * last batch of its segment the next segment is used.
 * When min_one is true the first batch is returned even if larger than
 * max_bytes (KIP-74). offset == log end offset gives len 0.
 * Returns 0 or LOG_ERR_OFFSET_OUT_OF_RANGE (offset < log start or > log end).
 */
int log_read(log_partition *lp, int64_t offset, int64_t max_offset, int32_t max_bytes,
	     bool min_one, log_read_result *out);

/*
 * ListOffsets by timestamp (ms): the first batch offset whose max timestamp is
 * >= ts, through the time index; *offset = -1, *timestamp = -1 when none.
 * Within that batch, as Kafka, the first record with timestamp >= ts when the
 * batch is uncompressed (or LogAppendTime); for a compressed batch its first
 * offset and max timestamp (see timestamp.c). Returns 0 or -errno.
 */
int log_offset_for_timestamp(log_partition *lp, int64_t ts, int64_t *offset, int64_t *timestamp);
/* The offset and timestamp of the record with the largest timestamp
 * (ListOffsets -3, KIP-734); -1/-1 for an empty log. */
int log_max_timestamp(log_partition *lp, int64_t *offset, int64_t *timestamp);

/*
 * Read-only views of the producer state (KIP-664 DescribeProducers, Kafka's
 * UnifiedLog.activeProducers and ProducerStateManager.lastEntry). The
 * entries returned are valid until the next append, marker or close of lp.
 *
 * log_producer_find: the state of producer_id, NULL when the partition has
 * none. log_producer_next: iterate every producer with state; *cursor
 * starts at 0, each call returns the next entry (in no particular order)
 * or NULL at the end. log_producer_count: the number of such producers.
 */
const log_producer_entry *log_producer_find(const log_partition *lp, int64_t producer_id);
const log_producer_entry *log_producer_next(const log_partition *lp, size_t *cursor);
size_t log_producer_count(const log_partition *lp);

/*
 * Move the log start offset up to offset and remove the segments wholly
 * below it (shared contract 1; Kafka's UnifiedLog.maybeIncrementLogStartOffset
 * then deleteLogStartOffsetBreachedSegments): a no-op when offset is not
 * above the current log start offset; LOG_ERR_OFFSET_OUT_OF_RANGE (nothing
 * changes) when it is above the high watermark. Otherwise the leader epoch
 * cache loses the entries before it (log_epoch_truncate_from_start), then
 * every segment whose next segment begins at or below offset leaves the log
 * (never the active segment): its files are renamed *.deleted at once (so
 * a crash does not bring them back; log_open removes leftovers) and are
 * handed out by log_take_deleted_files (storage/retention.h) for unlinking
 * after file.delete.delay.ms; producer snapshots below the new first
 * segment go the same way. A fetch still sending from a removed segment
 * keeps its reference and fd. Loop thread only (shared contract 2).
 * Returns 0, LOG_ERR_OFFSET_OUT_OF_RANGE or -errno (a failed rename: the
 * start offset moved, the segments from the failed one on stay and the
 * next log_delete_old_segments retries them). Implemented in retention.c.
 */
int log_advance_start_offset(log_partition *lp, int64_t offset);

/*
 * A replica's truncation from the end (Kafka's UnifiedLog.truncateTo, for
 * a follower whose log diverged from its leader's: KIP-101/279, or one
 * whose log end offset passed the leader's). No-op (0) when offset >= the
 * log end offset. LOG_ERR_OFFSET_OUT_OF_RANGE (nothing changes) when
 * offset < the log start offset: the replica then starts over with
 * log_truncate_fully_and_start_at, as Kafka does for an offset below its
 * first segment (Kafka truncates to offsets between the first segment's
 * base and the log start offset; Samsa does not).
 *
 * Every batch whose last offset is >= offset is removed: a batch that
 * straddles offset goes whole, and the new log end offset is then that
 * batch's base offset (lower when compaction left a gap before it: the
 * offset after the last batch kept). The segments wholly above leave the
 * log as retention's do: their files are renamed *.deleted at once and
 * handed out by log_take_deleted_files (retention.h) for unlinking later, so
 * a fetch holding a reference to one keeps reading it. The segment holding
 * offset is cut at a batch boundary, in place, and its .index, .timeindex
 * and .txnindex entries above the cut are dropped (a fetch still sending
 * from the bytes cut finds them gone, a short read, as in Kafka, whose
 * send then fails). Then: the leader epoch cache's truncateFromEnd(new log end
 * offset); the producer state rebuilt for the new log end offset from the
 * latest snapshot at or below it and the batches after (snapshots above
 * it removed), so its transactions (ongoing ones, and completed ones that
 * bound the last stable offset) are those of the log kept and a sequence
 * that was above the cut is taken again; the high watermark and the
 * recovery point lowered to the new log end offset, and the log start
 * offset too when the straddling batch began below it. now_ms (wall
 * clock) is the time producers are expired at.
 *
 * Crash safety: a marker file written (fsynced) before anything is removed
 * and removed after everything is fsynced (truncate.c); a crash at any
 * point lets log_open (clean = false, as after any crash) bring the log
 * either to what it was or to the full truncation, never part of it:
 * nothing at or above the new log end offset reappears. It costs 5 to 7
 * fsyncs on the calling thread. The caller should write the recovery
 * point checkpoint afterwards (Kafka's LogManager.truncateTo does), so a
 * stale one above the new log end offset does not spare the segments
 * written after the truncation from recovery at the next unclean open.
 *
 * Returns 0, LOG_ERR_OFFSET_OUT_OF_RANGE, LOG_ERR_CORRUPT (the segment to
 * cut does not parse) or -errno. An error before the commit point leaves
 * the log as it was; after it (a failed rename, ftruncate or fsync: -EIO)
 * the log takes no appends (-EIO) until it is closed and opened again,
 * which completes the truncation (Kafka takes the log dir offline).
 */
int log_truncate_to(log_partition *lp, int64_t offset, int64_t now_ms);

/*
 * Start the log over at offset (Kafka's UnifiedLog.truncateFullyAndStartAt:
 * a follower whose log end offset is below its leader's log start offset,
 * or whose first fetched batch begins below its log start offset): every
 * segment leaves the log (renamed *.deleted, as above), every producer
 * snapshot is removed, a new empty active segment starts at offset
 * (created at now_ms), the log start offset, log end offset, high
 * watermark and recovery point become offset, the leader epoch cache and
 * the producer state are emptied. offset may be below or above the old
 * offsets. Crash safe as log_truncate_to (a crash after the commit point:
 * log_open starts the log at offset). Returns 0, -EINVAL (offset < 0) or
 * -errno, with the same failure rule as log_truncate_to.
 */
int log_truncate_fully_and_start_at(log_partition *lp, int64_t offset, int64_t now_ms);

/*
 * Close the active segment and start a new one at the log end offset, as
 * an append would when segment.bytes/segment.ms say so (Kafka's
 * UnifiedLog.roll): the time index gets its closing entry and the producer
 * state its snapshot named after the new segment. No-op when the active
 * segment is empty. now_ms (wall clock) is the new segment's creation
 * time. Returns 0 or -errno.
 */
int log_roll(log_partition *lp, int64_t now_ms);

/*
 * Replace closed segments by others (Kafka's UnifiedLog.replaceSegments,
 * used by the cleaner, storage/cleaner.h; the log's thread only). old
 * (nold, in log order) must still be consecutive segments of lp, none of
 * them the active one; otherwise -ESTALE and nothing happens (retention or
 * DeleteRecords removed some meanwhile). Then files(arg) moves the files
 * into place (the new segments' files <base>.log/.index/.timeindex/
 * .txnindex for each of bases[0..nnew), ascending, the first equal to
 * old[0]'s base), its error returned as is; then the new segments are
 * opened and their indexes loaded, and they take the old ones' place
 * (the old references are dropped: fetches holding one keep reading the
 * old file). When opening fails the log keeps the old segments in memory
 * (their files stay readable through the open descriptors) and the error
 * is returned. Returns 0, -ESTALE, -EINVAL or -errno.
 */
typedef int (*log_replace_files_fn)(void *arg);
int log_replace_segments(log_partition *lp, log_segment *const *old, size_t nold, const int64_t *bases,
			 size_t nnew, log_replace_files_fn files, void *arg, int64_t now_ms);

/* Leader epochs: the epoch of the last appended batch and the offset it began at. */
int32_t log_latest_epoch(const log_partition *lp);

/*
 * On becoming leader with epoch (KAFKA-7415, Kafka's Partition.makeLeader):
 * the leader epoch cache's assign(epoch, log end offset), so that
 * OffsetsForLeaderEpoch answers (epoch, log end offset) for it, and the
 * older epochs end where it starts, before the first append. As any
 * assign: ignored (0) when epoch is not above the latest; entries starting
 * at or after the log end offset are replaced. Appends as leader
 * (log_append_checked, log_append_control, log_append_coordinator) assign
 * (leader_epoch, first offset written) the same way after each write, so
 * after this call their first append at that epoch changes nothing in the
 * cache. Returns 0, -EINVAL (epoch < 0), -ENOMEM (nothing changed) or the
 * -errno of rewriting leader-epoch-checkpoint (the cache has the entry; the
 * next flush writes the file and fails until it can, leader_epoch.h).
 */
int log_assign_leader_epoch(log_partition *lp, int32_t epoch);

/*
 * OffsetsForLeaderEpoch (KIP-101, Kafka's LeaderEpochFileCache.endOffsetFor):
 * for the latest epoch, that epoch and the log end offset; for an older one,
 * the largest known epoch <= it and the start offset of the next higher
 * epoch; for one below every known epoch, itself and the start offset of
 * the first; -1/-1 when epoch is negative (-1: undefined), above every
 * known epoch, or none is known.
 */
void log_end_offset_for_epoch(const log_partition *lp, int32_t epoch, int32_t *out_epoch,
			      int64_t *end_offset);

#endif
