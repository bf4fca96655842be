/*
 * markers.h - writing a transaction's end markers to every partition of
 * the transaction, wherever its leader is (Kafka's
 * TransactionMarkerChannelManager and TransactionMarkerRequestCompletionHandler).
 *
 * A job holds one transaction's markers (producer id and epoch, coordinator
 * epoch, commit or abort, transaction version) and the partitions still
 * waiting for theirs. Each round looks every waiting partition up
 * (env->locate):
 *  - led by this broker: one delivery per partition (the broker writes the
 *    marker itself, then waits until it is committed);
 *  - led by another broker: one delivery per broker with all its
 *    partitions (a WriteTxnMarkers request);
 *  - no such topic or partition any more (deleted): done, skipped, as Kafka
 *    skips partitions whose topic is gone;
 *  - no live leader: tried again after the backoff.
 * A delivery reports one Kafka error per partition:
 *  - NONE: done;
 *  - INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: the partition
 *    knows a newer producer or coordinator epoch. Kafka stops sending this
 *    transaction's markers; here that partition is given up (a warning) so
 *    the transaction still completes, as this coordinator always did;
 *  - anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
 *    NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, a failed
 *    connection, ...): tried again after env->retry_backoff_ms, the leader
 *    looked up again (Kafka's retriable marker errors; the few it treats as
 *    fatal are retried too, with a message: the broker must not stop).
 * Once every partition is done the job is complete. The coordinator cancels
 * a job when it stops coordinating the transaction (its partition of
 * __transaction_state moved); deliveries in flight then finish unseen.
 *
 * Callbacks: cb->partition_done for each partition done (also inside
 * txn_markers_start); cb->complete once, never inside txn_markers_start,
 * after which the job is freed. env->deliver may call its done callback
 * from inside itself (a local marker already committed).
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_TXN_MARKERS_H
#define SAMSA_BROKER_TXN_MARKERS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/loop.h"

/* env->locate's answers other than a broker id (>= 0). */
enum {
	TXN_MARKER_HERE = -1,      /* this broker leads the partition */
	TXN_MARKER_GONE = -2,      /* no such topic or partition: skip it */
	TXN_MARKER_NO_LEADER = -3, /* no live leader now: retry later */
};

/* One partition of a delivery; error is set by the delivery. */
typedef struct txn_marker_target {
	const char *topic; /* NUL-terminated, topic_len bytes */
	int32_t topic_len;
	int32_t partition;
	int16_t error;
} txn_marker_target;

/* The markers of one delivery: one transaction's, for the partitions of
 * one leader (sorted by topic, as the transaction keeps them). */
typedef struct txn_marker_batch {
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t coordinator_epoch;
	bool commit;
	int8_t transaction_version; /* 2: the epoch was bumped (KIP-890) */
	int32_t leader;             /* broker id, or TXN_MARKER_HERE */
	txn_marker_target *targets;
	int32_t ntargets;
} txn_marker_batch;

/* A delivery is over: every b->targets[i].error is set. */
typedef void (*txn_marker_done_fn)(void *arg, txn_marker_batch *b);

typedef struct txn_marker_env {
	void *arg;
	/* Where (topic, partition) is led: a broker id, or TXN_MARKER_*. */
	int32_t (*locate)(void *arg, const char *topic, int32_t topic_len, int32_t partition);
	/* Write b's markers on b->leader; done(done_arg, b) once, later or
	 * from inside this call. b stays valid until then. Returns 0, or
	 * < 0 when nothing was started (done is not called). */
	int (*deliver)(void *arg, txn_marker_batch *b, txn_marker_done_fn done, void *done_arg);
	int64_t retry_backoff_ms; /* Kafka's retry.backoff.ms (100) */
} txn_marker_env;

typedef struct txn_marker_cb {
	void *arg;
	void (*partition_done)(void *arg, const char *topic, int32_t topic_len, int32_t partition);
	void (*complete)(void *arg);
} txn_marker_cb;

typedef struct txn_marker_job txn_marker_job;

enum { TXN_MARKERS_DONE = 0, TXN_MARKERS_PENDING = 1 };

/*
 * Start the markers of a transaction (txn_id for messages, the fields of m
 * but leader and targets: the partitions, ntargets of them, copied) with
 * env (borrowed for the job's life) and timers on loop. Returns
 * TXN_MARKERS_DONE when every partition was done within the call (no job
 * is left, cb->complete is not called), TXN_MARKERS_PENDING with *job set
 * (cb->complete comes later), or -ENOMEM (nothing started).
 */
int txn_markers_start(brk_loop *loop, const txn_marker_env *env, const char *txn_id,
		      const txn_marker_batch *m, const txn_marker_target *targets, int32_t ntargets,
		      const txn_marker_cb *cb, txn_marker_job **job);

/* Stop a job: no callback of it runs any more; it is freed. NULL is a
 * no-op. */
void txn_markers_cancel(txn_marker_job *job);

/* Partitions of the job still waiting for their marker (tests, logs). */
int32_t txn_markers_pending(const txn_marker_job *job);

#endif
