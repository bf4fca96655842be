/*
 * retention.h - deleting whole segments from the front of a partition log
 * (Kafka's UnifiedLog.deleteOldSegments, LogManager.cleanupLogs) and the
 * files they leave behind.
 *
 * A segment leaves the log in three steps:
 *   1. the log start offset moves up to the base offset of the first segment
 *      kept (the leader epoch cache is cut at the front with it);
 *   2. at once, on the log's thread, its files are renamed with the
 *      ".deleted" suffix (00000000000000001234.log.deleted, .index.deleted,
 *      .timeindex.deleted, .txnindex.deleted), as are the producer snapshots
 *      below the new first segment (.snapshot.deleted): a crash after the
 *      rename does not bring them back, log_open removes such leftovers;
 *   3. the renamed files are handed to the caller (log_take_deleted_files),
 *      who unlinks them after file.delete.delay.ms, off the event loop
 *      (log_deleted_files_unlink). A fetch still sending from a removed
 *      segment holds its own reference and fd; the memory goes with the
 *      last reference (log_segment_release).
 *
 * The active segment never leaves the log while active: when every segment
 * is due (the whole log is older than retention.ms, and the high watermark
 * is the log end offset), a new empty active segment is rolled first, as
 * Kafka's deleteSegments does. Segments holding offsets at or above the high
 * watermark are never deleted, so the log start offset never passes it.
 *
 * Threading: everything but log_deleted_files_unlink runs on the log's
 * thread (shared contract 2 of the team brief); log_deleted_files_* touch
 * only the path list they are given.
 */
#ifndef SAMSA_STORAGE_RETENTION_H
#define SAMSA_STORAGE_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#include "storage/log.h"

#define LOG_DELETED_SUFFIX ".deleted"

/*
 * Kafka's UnifiedLog.deleteOldSegments for one log, in Kafka's order:
 *   - the segments wholly below the log start offset (a segment whose next
 *     segment begins at or below it; deleteLogStartOffsetBreachedSegments),
 *     always;
 *   - retention.bytes (retention_bytes >= 0; deleteRetentionSizeBreachedSegments):
 *     with diff = log size - retention_bytes, the oldest segments go while
 *     diff - segment size >= 0 (diff shrinking by each), so the log stays at
 *     or above retention.bytes;
 *   - retention.ms (retention_ms >= 0; deleteRetentionMsBreachedSegments):
 *     the oldest segments go while now_ms - largest timestamp >
 *     retention_ms, the largest timestamp being the segment's largest batch
 *     max timestamp, or its .log file's modification time when no batch has
 *     one. A segment with a timestamp in the future is never due.
 * Each pass stops at the first segment that is not due, at the first that
 * holds offsets at or above the high watermark, and at an empty active
 * segment. Pass -1 for both retentions when cleanup.policy has no "delete"
 * (Kafka then runs only the first pass). now_ms is wall-clock ms.
 * Returns the number of segments removed (>= 0) or -errno (what was removed
 * before the error stays removed).
 */
int log_delete_old_segments(log_partition *lp, int64_t retention_ms, int64_t retention_bytes,
			    int64_t now_ms);

/* Files renamed *.deleted and not yet unlinked: paths[n], each malloc'ed,
 * owned by the struct. */
typedef struct log_deleted_files {
	char **paths;
	size_t n;
} log_deleted_files;

/*
 * Move the files lp removed since the last call (log_advance_start_offset,
 * log_delete_old_segments) into *out, which then owns them (free with
 * log_deleted_files_free). Returns their number; 0 leaves *out empty.
 */
size_t log_take_deleted_files(log_partition *lp, log_deleted_files *out);

/*
 * Unlink every file of f (blocking: meant for a worker thread). A file
 * already gone is not an error. Returns 0 or the first -errno.
 */
int log_deleted_files_unlink(const log_deleted_files *f);

/* Free the paths (the files stay). NULL members are fine. */
void log_deleted_files_free(log_deleted_files *f);

#endif
