/*
 * cleaner.h - the log cleaner of the broker (Kafka's LogCleaner and
 * LogCleanerManager): compaction of the partitions whose topic has
 * cleanup.policy compact (or compact,delete), the internal topics included,
 * off the event loop (DESIGN.md decision 5).
 *
 * Every log.cleaner.backoff.ms (at once again after a round that cleaned
 * something) the loop picks the dirtiest compacted log (Kafka's
 * grabFilthiestCompactedLog): the largest dirty ratio among the logs whose
 * ratio is above their min.cleanable.dirty.ratio, or whose
 * max.compaction.lag.ms is exceeded with bytes to clean. The round's
 * blocking part (storage/cleaner.h log_clean_run) runs on the cleaner
 * thread; the swap runs back on the loop, woken through an eventfd, and the
 * new first dirty offset goes to <log.dirs>/cleaner-offset-checkpoint
 * (Kafka's offset checkpoint format, written off the loop by the flush
 * worker). One round at a time: log.cleaner.threads above 1 is accepted and
 * gives each round the dedupe buffer share of one thread; 0 or
 * log.cleaner.enable=false turns the cleaner off.
 */
#ifndef SAMSA_BROKER_CLEANER_H
#define SAMSA_BROKER_CLEANER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/flush.h"
#include "broker/loop.h"
#include "broker/partitions.h"
#include "storage/cleaner.h"
#include "storage/logdir.h"

/* The cleaner of one broker (server.cleaner): all zero is not started.
 * The fields are the loop's unless marked (under mu: shared with the
 * cleaner thread). */
typedef struct brk_cleaner {
	brk_loop *loop;
	const brk_config *cfg;       /* log.cleaner.*, read at each round (dynamic) */
	brk_partitions *partitions;  /* the logs cleaned */
	brk_flusher *flusher;        /* writes cleaner-offset-checkpoint */
	bool started;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* signals the thread */
	int efd;                     /* the thread wakes the loop through it */
	uint64_t timer;              /* the next round */
	atomic_bool abort;           /* asks the round in progress to stop */
	bool stopping;               /* under mu */
	/* the round in flight */
	log_clean_job *job;          /* handed to the thread, or back (under mu) */
	bool job_done;               /* the thread finished it (under mu) */
	int job_rc;                  /* under mu */
	int64_t job_ms;              /* how long the run took (under mu) */
	uint8_t topic_id[16];
	int32_t partition;
	char topic[LOG_TOPIC_MAX + 1];
	/* jobs to free on the thread (file removal; under mu) */
	log_clean_job **to_free;
	size_t nfree, capfree;
	/* cleaner-offset-checkpoint, as last written */
	logdir_checkpoint_entry *ck;
	int nck, capck;
} brk_cleaner;

/* Read the checkpoint file in cfg's log dir, start the thread and the
 * timer on loop (the loop thread, after the partitions are open). cfg is
 * the effective config (the cleaner's keys are dynamic). Nothing happens
 * when log.cleaner.enable is false or log.cleaner.threads is 0. Returns 0
 * or -errno. */
int brk_cleaner_start(brk_cleaner *cl, brk_loop *loop, const brk_config *cfg,
		      brk_partitions *partitions, brk_flusher *flusher);

/* Abort a round in progress (its files are removed), join the thread; cl
 * is then not started. Call before the partitions shut down. Safe when not
 * started. */
void brk_cleaner_stop(brk_cleaner *cl);

#endif
