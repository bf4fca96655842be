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

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/flush.h"
#include "broker/loop.h"
#include "broker/partitions.h"

struct brk_pending_delete;

/* The retention of one broker (server.retention): all zero is not started.
 * Loop thread only. */
typedef struct brk_retention {
	brk_loop *loop;
	brk_partitions *partitions;  /* the logs checked */
	const brk_config *cfg;       /* log.retention.check.interval.ms, read at each check */
	brk_flusher *flusher;        /* the files are unlinked on its worker */
	bool started;
	uint64_t timer;              /* the periodic check */
	struct brk_pending_delete *pending; /* files waiting for their delay or being unlinked */
} brk_retention;

/* Set rt up on loop, for the logs of partitions: deleted files are
 * unlinked through flusher; cfg is the effective config (it may change at
 * runtime). From here on brk_retention_schedule works (a replica's
 * truncation may hand over files before the periodic check starts). */
void brk_retention_init(brk_retention *rt, brk_loop *loop, brk_partitions *partitions,
			const brk_config *cfg, brk_flusher *flusher);

/* Start the periodic retention check (first run one interval from now).
 * Returns 0. */
int brk_retention_start(brk_retention *rt);

/* Cancel the periodic check and the deletions still waiting for their delay
 * (their files stay *.deleted; log_open removes them at the next start).
 * Deletions already handed to the worker finish (brk_flusher_stop runs
 * their completions, which need rt: stop the flusher before rt goes). Safe
 * to call when not started. */
void brk_retention_stop(brk_retention *rt);

/*
 * Take the files p's log removed since the last call (retention,
 * DeleteRecords, a replica's truncation: log_take_deleted_files) and unlink
 * them after the topic's file.delete.delay.ms, off the loop. No-op when
 * there are none; before brk_retention_init the files stay *.deleted
 * (log_open removes them at the next start).
 */
void brk_retention_schedule(brk_retention *rt, brk_partition *p);

/* One retention pass over every partition at now_ms (wall clock): what the
 * timer runs. Returns the number of segments removed. */
int brk_retention_run(brk_retention *rt, int64_t now_ms);

#endif
