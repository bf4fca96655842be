/*
 * txn.h - the transaction coordinator (KIP-98): transactional id ->
 * transaction metadata, its state machine, and the timers that abort
 * timed-out transactions and expire idle transactional ids. Modelled on
 * Kafka's TransactionCoordinator, TransactionStateManager and
 * TransactionMetadata. This broker coordinates every transactional id
 * (one node); its state lives in __transaction_state (store.h).
 *
 * State machine (Kafka's TransactionState; id = the byte in the log):
 *
 *   Empty(0) / CompleteCommit(4) / CompleteAbort(5)
 *       --AddPartitionsToTxn / AddOffsetsToTxn--> Ongoing(1)
 *       --InitProducerId--> Empty (epoch + 1, or a new producer id when
 *         the epoch is exhausted)
 *       --transactional.id.expiration.ms idle--> Dead(6): a tombstone,
 *         the id is forgotten
 *   Ongoing --AddPartitionsToTxn / AddOffsetsToTxn--> Ongoing
 *   Ongoing --EndTxn commit--> PrepareCommit(2) --markers--> CompleteCommit
 *   Ongoing --EndTxn abort--> PrepareAbort(3) --markers--> CompleteAbort
 *   Ongoing --InitProducerId of a new producer / transaction timeout-->
 *       PrepareEpochFence(7, never written: the epoch is bumped in memory)
 *       --> PrepareAbort at the bumped epoch --markers--> CompleteAbort,
 *       so the old producer is fenced.
 *   EndTxn v5 (transaction version 2, KIP-890 part 2) also bumps the epoch
 *   at every PrepareCommit/PrepareAbort and may abort from Empty /
 *   CompleteCommit / CompleteAbort.
 *
 * Every change is first appended to __transaction_state (one record), and
 * only then applied in memory and answered: a failed write changes
 * nothing. Markers are written at once, on the event loop, to every
 * partition of the transaction with brk_partition_write_txn_marker
 * (partitions.h) at the coordinator epoch (the leader epoch of the id's
 * __transaction_state partition); a partition whose marker could not be
 * written (log offline, I/O error) keeps the transaction in Prepare* and is
 * retried by the abort timer; one whose topic was deleted is skipped, as
 * Kafka's TransactionMarkerChannelManager skips partitions without a leader.
 * So unlike Kafka, a request never finds a transaction half-way through its
 * markers unless a marker failed (then CONCURRENT_TRANSACTIONS, as Kafka).
 *
 * Memory: a txn_meta and every string in it belong to the registry; a
 * pointer stays valid until the next call that may remove ids
 * (txn_expire_ids, txn_shutdown) or the next store load.
 * Everything runs on the event loop thread.
 *
 * Split of the module:
 *   coordinator.c     registry, state machine, timers
 *   store.c           __transaction_state: creation, loading, writes
 *   store_codec.c     Kafka's key and value layouts
 *   handlers/<api>.c  one file per API key
 */
#ifndef SAMSA_BROKER_TXN_TXN_H
#define SAMSA_BROKER_TXN_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/buf.h"

typedef enum txn_state {
	TXN_EMPTY = 0,
	TXN_ONGOING = 1,
	TXN_PREPARE_COMMIT = 2,
	TXN_PREPARE_ABORT = 3,
	TXN_COMPLETE_COMMIT = 4,
	TXN_COMPLETE_ABORT = 5,
	TXN_DEAD = 6,
	TXN_PREPARE_EPOCH_FENCE = 7,
} txn_state;

#define TXN_STATE_COUNT 8

/* Kafka's TransactionState.name ("Empty", "Ongoing", "PrepareCommit", ...),
 * as DescribeTransactions and ListTransactions show it. */
const char *txn_state_name(txn_state s);
/* The state named `name` (exact, case-sensitive, as Kafka's fromName), or -1. */
int txn_state_from_name(proto_str name);

/* Kafka's transaction versions (the transaction.version feature): 0/1
 * behave alike here; 2 bumps the epoch at every transaction end (KIP-890). */
#define TXN_TV0 0
#define TXN_TV2 2

/* One partition of a transaction; topic is owned (NUL-terminated). */
typedef struct txn_tp {
	char *topic;
	int32_t topic_len;
	int32_t partition;
} txn_tp;

/* Kafka's TransactionMetadata (without the pending state: transitions
 * complete synchronously). */
typedef struct txn_meta {
	char *id;                   /* transactional id, owned, NUL-terminated */
	int32_t id_len;
	int64_t producer_id;
	int64_t prev_producer_id;   /* the id before the last rotation (-1) */
	int64_t next_producer_id;   /* TV2: the id after an epoch overflow (-1) */
	int16_t producer_epoch;     /* -1 until the first InitProducerId completes */
	int16_t last_producer_epoch; /* KIP-360: the epoch before the last bump (-1) */
	int32_t timeout_ms;         /* transaction timeout */
	txn_state state;
	txn_tp *tps;                /* partitions, sorted by topic then partition */
	int32_t ntps, tps_cap;
	int64_t start_ms;           /* first partition added (-1 when none) */
	int64_t last_update_ms;     /* last state change (expiration) */
	int16_t client_tv;          /* transaction version of the last client request */
	/* registry (coordinator.c) */
	uint32_t hash;
	int32_t pos;                /* index in the registry's array */
	struct txn_meta *next;      /* hash chain */
} txn_meta;

/* A partition named by a request (views into the request). */
typedef struct txn_tp_ref {
	proto_str topic;
	int32_t partition;
} txn_tp_ref;

/* ---- registry ---- */

/* The metadata of a transactional id, or NULL. */
txn_meta *txn_find(const char *id, int32_t len);
/* Iterate: i from 0 while it returns non-NULL (order unspecified; stable
 * while nothing is added or removed). */
txn_meta *txn_at(int32_t i);
/* The number of transactional ids known. */
int32_t txn_count(void);

/*
 * Put metadata loaded from __transaction_state (store.c): m is taken over
 * (m->id and m->tps malloc'ed; a previous entry of the same id is freed).
 * Returns 0 or -ENOMEM (m is freed then).
 */
int txn_restore(txn_meta *m);
/* Forget a transactional id (a tombstone read while loading); no-op when
 * unknown. */
void txn_forget(const char *id, int32_t len);
/* Free one metadata (its id and partitions). NULL is allowed. */
void txn_meta_free(txn_meta *m);
/* Forget every transactional id (shutdown, tests). */
void txn_shutdown(void);

/* ---- requests (Kafka error codes; PRODUCER_FENCED is returned as such:
 * handlers turn it into INVALID_PRODUCER_EPOCH for versions before it) ---- */

/*
 * InitProducerId for a non-empty transactional id (Kafka's
 * TransactionCoordinator.handleInitProducerId): the timeout must be in
 * 1..transaction.max.timeout.ms (else INVALID_TRANSACTION_TIMEOUT); a new id
 * gets a producer id from ctl_next_producer_id and epoch 0; a known one in
 * Empty/Complete* gets its epoch bumped, or a new producer id with epoch 0
 * when the epoch is exhausted (>= 32766); an Ongoing transaction is first
 * aborted at a bumped epoch (fencing its producer) and the bump then
 * follows at once; Prepare* (markers not all written) is
 * CONCURRENT_TRANSACTIONS. KIP-360 (v3+): expected_pid/expected_epoch
 * (-1/-1 when not given) must be the current producer id, or the previous
 * one with an exhausted epoch, or the id must be new (epoch -1): else
 * PRODUCER_FENCED; an expected epoch equal to the last epoch is a retry and
 * returns the current epoch unbumped. Writes one Empty record.
 * Returns a Kafka error; *pid and *epoch get the result (-1 on error).
 * Errors of the write: NOT_COORDINATOR (log failed), COORDINATOR_NOT_AVAILABLE
 * (no __transaction_state partition), UNKNOWN_SERVER_ERROR (record too large).
 */
int16_t txn_init_producer_id(proto_str id, int32_t timeout_ms, int64_t expected_pid,
			     int16_t expected_epoch, int64_t now_ms, int64_t *pid, int16_t *epoch);

/*
 * AddPartitionsToTxn for one transaction (Kafka's
 * handleAddPartitionsToTransaction): unknown id or another producer id:
 * INVALID_PRODUCER_ID_MAPPING; another epoch: PRODUCER_FENCED; Prepare*:
 * CONCURRENT_TRANSACTIONS; partitions already all in an Ongoing
 * transaction: NONE without a write; else Ongoing with the union (start
 * time set when the transaction starts), one record. client_tv is the
 * transaction version the request implies (TXN_TV2 for v5+ from brokers).
 * The caller has checked that every partition exists.
 */
int16_t txn_add_partitions(proto_str id, int64_t pid, int16_t epoch, const txn_tp_ref *tps,
			   int32_t n, int16_t client_tv, int64_t now_ms);

/*
 * The verify-only form (AddPartitionsToTxn v4+, KIP-890 part 1; Kafka's
 * handleVerifyPartitionsInTransaction): nothing is written. Returns a
 * transaction-wide error (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
 * CONCURRENT_TRANSACTIONS) or NONE with errs[i] = NONE for a partition in
 * the transaction and `missing` (TRANSACTION_ABORTABLE from v5, else
 * INVALID_TXN_STATE) for one that is not.
 */
int16_t txn_verify_partitions(proto_str id, int64_t pid, int16_t epoch, const txn_tp_ref *tps,
			      int32_t n, int16_t missing, int16_t *errs);

/*
 * Verify one partition for a transactional write made by this broker (a
 * Produce of transactional batches, a TxnOffsetCommit): KIP-890 part 1,
 * what Kafka's ReplicaManager asks the coordinator through
 * AddPartitionsToTxnManager (a verify-only AddPartitionsToTxn,
 * handleVerifyPartitionsInTransaction) when
 * transaction.partition.verification.enable is true. Nothing is written.
 * topic is NUL-terminated. Returns the coordinator's answer, which callers
 * map per request version as Kafka does: NONE when the transactional id
 * exists with that producer id and epoch, its transaction is Ongoing and
 * (topic, partition) is in it; INVALID_REQUEST for an empty or null id;
 * INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id;
 * PRODUCER_FENCED for another epoch; CONCURRENT_TRANSACTIONS while
 * markers are pending (Prepare*); TRANSACTION_ABORTABLE when the
 * transaction is not Ongoing or the partition is not in it (Kafka 3.8+;
 * AddPartitionsToTxnManager turns it into INVALID_TXN_STATE for older
 * request versions).
 */
int16_t txn_verify_partition(proto_str id, int64_t pid, int16_t epoch, const char *topic,
			     int32_t partition);

/*
 * AddOffsetsToTxn (Kafka's handleAddOffsetsToTxnRequest): adds partition
 * grp_partition_for(group) of __consumer_offsets to the transaction, as
 * txn_add_partitions. COORDINATOR_NOT_AVAILABLE when __consumer_offsets
 * does not exist.
 */
int16_t txn_add_offsets(proto_str id, int64_t pid, int16_t epoch, proto_str group, int64_t now_ms);

/*
 * EndTxn (Kafka's handleEndTransaction): tv2 is true for EndTxn v5
 * (KIP-890 part 2: the epoch is bumped at PrepareCommit/PrepareAbort and
 * returned, an epoch overflow rotates to a new producer id, an abort is
 * allowed from Empty/Complete*, a retry of the last end is answered NONE).
 * TV0/1: Ongoing -> PrepareCommit/PrepareAbort record, markers, then
 * CompleteCommit/CompleteAbort record; a repeated end in CompleteCommit
 * (commit) / CompleteAbort (abort) is NONE; the other result, or Empty, is
 * INVALID_TXN_STATE; Prepare* of the same result CONCURRENT_TRANSACTIONS.
 * Unknown id / other producer id: INVALID_PRODUCER_ID_MAPPING; other
 * epoch: PRODUCER_FENCED. *next_pid and *next_epoch get the producer id and epoch to use
 * next (TV2), -1 otherwise. NONE is returned once the Prepare* record is
 * written, even when a marker failed (it is retried later), as Kafka
 * answers before its markers are sent.
 */
int16_t txn_end(proto_str id, int64_t pid, int16_t epoch, bool commit, bool tv2, int64_t now_ms,
		int64_t *next_pid, int16_t *next_epoch);

/* ---- timers (also callable directly: tests) ---- */

/*
 * Kafka's abortTimedOutTransactions: every Ongoing transaction whose
 * start_ms + timeout_ms < now_ms is aborted at a bumped epoch (its producer
 * is fenced: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH from then on). Also
 * retries the markers of transactions left in Prepare*.
 */
void txn_abort_timed_out(int64_t now_ms);

/*
 * Kafka's removeExpiredTransactionalIds: ids in Empty / CompleteCommit /
 * CompleteAbort whose last_update_ms <= now_ms -
 * transactional.id.expiration.ms get a tombstone and are forgotten.
 */
void txn_expire_ids(int64_t now_ms);

/*
 * After loading (store.c): complete the transactions found in
 * PrepareCommit/PrepareAbort (markers written again, then Complete*), as
 * Kafka does when it becomes coordinator of a partition, and start the
 * timers (transaction.abort.timed.out.transaction.cleanup.interval.ms,
 * transaction.remove.expired.transaction.cleanup.interval.ms).
 */
void txn_coordinator_start(int64_t now_ms);

#endif
