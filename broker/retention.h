/*
 * retention.h - log retention on this broker (Kafka's LogManager.cleanupLogs,
 * the scheduled task run every log.retention.check.interval.ms) and the
 * delayed deletion of the segment files it removes (Kafka's
 * file.delete.delay.ms / log.segment.delete.delay.ms).
 *
 * On the loop thread, every log.retention.check.interval.ms (300000), each
 * partition log runs log_delete_old_segments (storage/retention.h) with its
 * topic's retention.ms and retention.bytes when cleanup.policy contains
 * "delete" (compact-only topics only drop the segments below their log
 * start offset). That decides and renames (*.deleted); the files are then
 * unlinked file.delete.delay.ms later on the flush worker thread
 * (broker/flush.h), never on the loop. The log start offset moves with the
 * deletions and reaches log-start-offset-checkpoint with the periodic
 * checkpoint (broker/partitions.h).
 */
#ifndef SAMSA_BROKER_RETENTION_H
#define SAMSA_BROKER_RETENTION_H

#include <stdint.h>

#include "broker/partitions.h"

/* Start the periodic retention check on server.loop (first run one interval
 * from now). Returns 0. */
int brk_retention_start(void);

/* Cancel the periodic check and the deletions still waiting for their delay
 * (their files stay *.deleted; log_open removes them at the next start).
 * Deletions already handed to the worker finish (brk_flush_stop runs their
 * completions). Safe to call when not started. */
void brk_retention_stop(void);

/*
 * Take the files p's log removed since the last call (retention,
 * DeleteRecords: log_take_deleted_files) and unlink them after the topic's
 * file.delete.delay.ms, off the loop. No-op when there are none.
 */
void brk_retention_schedule_deletion(brk_partition *p);

/* One retention pass over every partition at now_ms (wall clock): what the
 * timer runs. Returns the number of segments removed. */
int brk_retention_run(int64_t now_ms);

#endif
