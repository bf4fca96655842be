/*
 * txn.h - the transaction coordinator (KIP-98): transactional id ->
 * transaction metadata, its state machine, its markers, and the timers that
 * abort timed-out transactions and expire idle transactional ids, in a
 * txn_coordinator object (the server holds one; unit tests make their own).
 * Modelled on Kafka's TransactionCoordinator, TransactionStateManager,
 * TransactionMetadata and TransactionMarkerChannelManager.
 *
 * Ownership (Kafka's TransactionStateManager.loadTransactionsForTxnTopicPartition
 * / removeTransactionsForTxnTopicPartition). A transactional id lives in
 * partition brk_coordinator_partition(id) of __transaction_state; this
 * broker serves it only while it leads that partition and has loaded it.
 * store.c's role observer loads a partition's ids when this broker becomes
 * its leader (txn_partition_loading, txn_restore for each record, then
 * txn_partition_loaded, which completes the transactions found in
 * Prepare*) and drops them when it stops (txn_partition_unload: their
 * marker jobs and waits cancelled). Requests for an id of another
 * partition answer NOT_COORDINATOR (txn_coordinator_error); loading runs
 * in the background, a slice per loop iteration (store.h), and meanwhile
 * the partition's ids answer COORDINATOR_LOAD_IN_PROGRESS, as Kafka's,
 * while every other request is served. While
 * __transaction_state does not exist (npartitions 0) every id is looked up
 * here, as a single node did before (an append then answers
 * COORDINATOR_NOT_AVAILABLE).
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
 * Writes. Every change is first appended to __transaction_state (one
 * record, env->append), and applied in memory only when that append
 * succeeded: a failed write changes nothing. The in-memory state is ahead
 * of the high watermark until the record is committed (a new leader
 * reloads from its own replicated log, so nobody else ever sees it); the
 * answer of a request waits until the id's partition has its writes
 * committed (txn_answer, hw_wait.h; Kafka appends with acks=-1), at most
 * TXN_WRITE_TIMEOUT_MS (then COORDINATOR_NOT_AVAILABLE), NOT_COORDINATOR
 * when the partition moves meanwhile.
 *
 * Markers. The markers of a Prepare* transaction are sent only once its
 * Prepare record is committed (so a coordinator fail-over never finds
 * markers of a transaction its log does not know to be ending), by a
 * marker job (markers.h) at the coordinator epoch (the leader epoch of the
 * id's partition): partitions led here are written directly, the others
 * through WriteTxnMarkers to their leaders (marker_channel.h), each
 * counted done once its marker is committed; failures are retried after a
 * backoff, partitions of deleted topics skipped. Only when every marker is
 * done is Complete* written. On a single node every step happens at once,
 * so a request finds a transaction half-way through its markers only when
 * a marker failed (then CONCURRENT_TRANSACTIONS, as Kafka).
 *
 * Memory: a txn_meta and every string in it belong to the coordinator; a
 * pointer stays valid until the next call that may remove ids
 * (txn_expire_ids, txn_partition_unload, txn_coordinator_free).
 * Everything runs on the event loop thread.
 *
 * Split of the module:
 *   coordinator.c     registry, ownership, state machine, markers, timers
 *   markers.c         a transaction's markers, delivered and retried
 *   marker_channel.c  markers to this broker's partitions and to others
 *                     (WriteTxnMarkers through peers)
 *   store.c           __transaction_state: creation, loading (in slices
 *                     on the loop), writes
 *   store_codec.c     Kafka's key and value layouts
 *   verify.c          KIP-890 verification of this broker's writes
 *   handlers/<api>.c  one file per API key
 * Calls go one way: store.c calls coordinator.c; coordinator.c reaches
 * the store, producer ids and the partitions only through its txn_env,
 * txn_marker_env and tc->store_close.
 */
#ifndef SAMSA_BROKER_TXN_TXN_H
#define SAMSA_BROKER_TXN_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/hw_wait.h"
#include "broker/loop.h"
#include "broker/request.h"
#include "broker/strmap.h"
#include "broker/txn/marker_channel.h"
#include "broker/txn/markers.h"
#include "broker/txn/store_codec.h"
#include "protocol/buf.h"

struct brk_partitions;
struct grp_coordinator;

/* How long an answer waits for its write to be committed: Kafka's
 * request.timeout.ms (default 30000), the transaction coordinator's append
 * timeout; then COORDINATOR_NOT_AVAILABLE (TransactionStateManager maps
 * REQUEST_TIMED_OUT so, to let the client retry). */
#define TXN_WRITE_TIMEOUT_MS 30000
/* Kafka's retry.backoff.ms for a marker that failed. */
#define TXN_MARKER_BACKOFF_MS 100

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

/* Kafka's TransactionMetadata (without the pending state: transitions are
 * applied when appended). */
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
	struct txn_coordinator *coord; /* the coordinator holding it */
	int32_t partition;          /* its __transaction_state partition, -1 unknown */
	/* coordinator.c: the Prepare* record's mark, its wait, the markers */
	brk_hw_mark prepare_mark;
	brk_hw_wait *prepare_wait;  /* waiting for the Prepare* record, or NULL */
	txn_marker_job *markers;    /* markers being written, or NULL */
} txn_meta;

/* A partition named by a request (views into the request). */
typedef struct txn_tp_ref {
	proto_str topic;
	int32_t partition;
} txn_tp_ref;

/* ---- the coordinator ---- */

typedef struct txn_coordinator txn_coordinator;

/* What the coordinator needs of the broker (store.c fills it; tests their
 * fakes). */
typedef struct txn_env {
	void *arg;
	/* Append the record of id (value v; NULL: a tombstone) to partition
	 * `partition` of __transaction_state at now_ms. Returns a Kafka error
	 * (store.h's txn_store_append); on NONE *mark names the write. */
	int16_t (*append)(void *arg, int32_t partition, proto_str id, const txn_log_value *v,
			  int64_t now_ms, brk_hw_mark *mark);
	/* The next producer id (producer_ids.h): a Kafka error code. */
	int16_t (*next_producer_id)(void *arg, int64_t *pid);
	/* The partitions of __consumer_offsets, 0 when it does not exist. */
	int32_t (*offsets_partitions)(void *arg);
} txn_env;

/* One partition of __transaction_state as the coordinator sees it:
 * neither flag (not served: NOT_COORDINATOR), loading (led here, its ids
 * being read: COORDINATOR_LOAD_IN_PROGRESS) or loaded (served). */
typedef struct txn_partition {
	bool loaded;            /* led here and its ids in memory */
	bool loading;           /* led here, store.c reading its log */
	struct brk_partition *p; /* while loading or loaded */
	int32_t leader_epoch;   /* the coordinator epoch of its ids */
	brk_hw_mark last_write; /* the coordinator's last append there */
} txn_partition;

/* Default of txn_coordinator.load_slice: records applied per loop
 * iteration while loading (plus the rest of the batch at hand). */
#define TXN_LOAD_SLICE_RECORDS 4096

struct txn_loader; /* store.c: the partitions being loaded */

struct txn_coordinator {
	brk_loop *loop;            /* timers (NULL: none are set) */
	const brk_config *cfg;
	txn_env env;
	txn_marker_env markers;    /* where partitions are led, how markers go */
	brk_strmap ids;            /* the registry: transactional id -> txn_meta */
	uint64_t abort_timer, expire_timer;
	/* __transaction_state */
	int32_t npartitions;       /* 0 while unknown */
	txn_partition *parts;      /* npartitions */
	int32_t nloading;          /* partitions loading */
	int32_t load_slice;        /* records per slice of a load (TXN_LOAD_SLICE_RECORDS) */
	/* scratch: a record's partitions, a request's sorted partitions */
	txn_log_tp *log_tps;
	int32_t log_tps_cap;
	txn_tp_ref *refs;
	int32_t refs_cap;
	/* store.c */
	struct brk_partitions *partitions;
	struct grp_coordinator *groups; /* orphan transactional offsets at start-up */
	proto_writer batch_buf, kv_buf;
	bool observing;
	bool orphan_check;         /* the start-up check is still to run */
	struct txn_loader *loader; /* the loads in progress */
	void (*store_close)(txn_coordinator *tc); /* frees them; called first by
						   * txn_coordinator_free */
	/* marker_channel.c */
	txn_marker_channel channel;
};

/* An empty coordinator whose timers run on loop (may be NULL) with cfg
 * (borrowed). env and markers are left empty: store.c and
 * marker_channel.c fill them (tests their own). */
void txn_coordinator_init(txn_coordinator *tc, brk_loop *loop, const brk_config *cfg);
/* Cancel every marker job, wait and timer, and free every id and buffer. */
void txn_coordinator_free(txn_coordinator *tc);

/* __transaction_state has npartitions partitions (0: it does not exist).
 * Returns 0 or -ENOMEM. */
int txn_partitions_known(txn_coordinator *tc, int32_t npartitions);
/* The partition of transactional id (a view), -1 while unknown. */
int32_t txn_partition_of(const txn_coordinator *tc, proto_str id);
/* The state of partition index, NULL when out of range. */
txn_partition *txn_partition_state(txn_coordinator *tc, int32_t index);
/* Whether this coordinator serves id: NONE when its partition is loaded
 * here or __transaction_state is not known, COORDINATOR_LOAD_IN_PROGRESS
 * while its partition is loading here (Kafka's
 * TransactionStateManager.getTransactionState; the client retries), else
 * NOT_COORDINATOR. */
int16_t txn_coordinator_error(const txn_coordinator *tc, proto_str id);

/* Partition index starts loading: p (led here) at leader_epoch; its ids
 * answer COORDINATOR_LOAD_IN_PROGRESS and the timers leave them alone
 * until txn_partition_loaded or txn_partition_unload. */
void txn_partition_loading(txn_coordinator *tc, int32_t index, struct brk_partition *p,
			   int32_t leader_epoch);
/*
 * Partition index is loaded (its ids restored with txn_restore): p, led
 * here at leader_epoch (the coordinator epoch of its ids; p may be NULL in
 * tests). The log end offset becomes the partition's last write (what was
 * loaded may be above the high watermark). The transactions found in
 * PrepareCommit/PrepareAbort are completed (markers written again once the
 * loaded log is committed, then Complete*), as Kafka does when it becomes
 * coordinator of a partition. Returns how many completed at once.
 */
int32_t txn_partition_loaded(txn_coordinator *tc, int32_t index, struct brk_partition *p,
			     int32_t leader_epoch, int64_t now_ms);
/* Drop partition index: its ids are forgotten, their marker jobs and
 * waits cancelled, and it is no longer served nor loading (store.c stops
 * its load first). Returns the ids dropped. */
int32_t txn_partition_unload(txn_coordinator *tc, int32_t index);

/*
 * The answer in req->out of a request about id: it goes once the
 * coordinator's last write to id's partition is committed (brk_hw_answer
 * with TXN_WRITE_TIMEOUT_MS and COORDINATOR_NOT_AVAILABLE; fail re-encodes
 * it with an error). Returns what the handler returns.
 */
int txn_answer(txn_coordinator *tc, brk_request *req, proto_str id, brk_hw_fail_fn fail, void *arg);
/* The mark of id's partition's last write (p NULL: none), for answers
 * about several ids. */
brk_hw_mark txn_last_write(txn_coordinator *tc, proto_str id);

/* ---- registry ---- */

/* The metadata of a transactional id, or NULL. A hash lookup (strmap.h). */
txn_meta *txn_find(txn_coordinator *tc, const char *id, int32_t len);
/* Iterate: i from 0 while it returns non-NULL (order unspecified; stable
 * while nothing is added or removed; a removal moves the last id into the
 * removed one's index). */
txn_meta *txn_at(txn_coordinator *tc, int32_t i);
/* The number of transactional ids known. */
int32_t txn_count(const txn_coordinator *tc);

/*
 * Put metadata loaded from __transaction_state partition m->partition
 * (store.c): m is taken over (m->id and m->tps malloc'ed; a previous entry
 * of the same id is freed). Returns 0 or -ENOMEM (m is freed then).
 */
int txn_restore(txn_coordinator *tc, txn_meta *m);
/* Forget a transactional id (a tombstone read while loading); no-op when
 * unknown. */
void txn_forget(txn_coordinator *tc, const char *id, int32_t len);
/* Free one metadata (its id and partitions; not in a registry). NULL is
 * allowed. */
void txn_meta_free(txn_meta *m);

/* ---- requests (Kafka error codes; PRODUCER_FENCED is returned as such:
 * handlers turn it into INVALID_PRODUCER_EPOCH for versions before it).
 * Each answers NOT_COORDINATOR first for an id this coordinator does not
 * serve (txn_coordinator_error); the handler's answer then goes through
 * txn_answer. ---- */

/*
 * InitProducerId for a non-empty transactional id (Kafka's
 * TransactionCoordinator.handleInitProducerId): the timeout must be in
 * 1..transaction.max.timeout.ms (else INVALID_TRANSACTION_TIMEOUT); a new id
 * gets a producer id from env->next_producer_id and epoch 0; a known one in
 * Empty/Complete* gets its epoch bumped, or a new producer id with epoch 0
 * when the epoch is exhausted (>= 32766); an Ongoing transaction is first
 * aborted at a bumped epoch (fencing its producer) and the bump then
 * follows at once when its markers are all written at once (else
 * CONCURRENT_TRANSACTIONS, and the client retries); Prepare* (markers not all written) is
 * CONCURRENT_TRANSACTIONS. KIP-360 (v3+): expected_pid/expected_epoch
 * (-1/-1 when not given) must be the current producer id, or the previous
 * one with an exhausted epoch, or the id must be new (epoch -1): else
 * PRODUCER_FENCED; an expected epoch equal to the last epoch is a retry and
 * returns the current epoch unbumped. Writes one Empty record.
 * Returns a Kafka error; *pid and *epoch get the result (-1 on error).
 * Errors of the write: NOT_COORDINATOR (partition not loaded here, log
 * failed), COORDINATOR_NOT_AVAILABLE
 * (no __transaction_state partition), UNKNOWN_SERVER_ERROR (record too large).
 */
int16_t txn_init_producer_id(txn_coordinator *tc, proto_str id, int32_t timeout_ms,
			     int64_t expected_pid, int16_t expected_epoch, int64_t now_ms, int64_t *pid,
			     int16_t *epoch);

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
int16_t txn_add_partitions(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			   const txn_tp_ref *tps, int32_t n, int16_t client_tv, int64_t now_ms);

/*
 * The verify-only form (AddPartitionsToTxn v4+, KIP-890 part 1; Kafka's
 * handleVerifyPartitionsInTransaction): nothing is written. Returns a
 * transaction-wide error (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
 * CONCURRENT_TRANSACTIONS) or NONE with errs[i] = NONE for a partition in
 * the transaction and `missing` (TRANSACTION_ABORTABLE from v5, else
 * INVALID_TXN_STATE) for one that is not.
 */
int16_t txn_verify_partitions(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			      const txn_tp_ref *tps, int32_t n, int16_t missing, int16_t *errs);

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
int16_t txn_verify_partition(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			     const char *topic, int32_t partition);

/*
 * AddOffsetsToTxn (Kafka's handleAddOffsetsToTxnRequest): adds partition
 * brk_coordinator_partition(group) of __consumer_offsets to the
 * transaction, as txn_add_partitions. COORDINATOR_NOT_AVAILABLE when
 * __consumer_offsets does not exist (env->offsets_partitions is 0).
 */
int16_t txn_add_offsets(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			proto_str group, int64_t now_ms);

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
 * answers before its markers are sent (here: once the Prepare* record is
 * committed, txn_answer).
 */
int16_t txn_end(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch, bool commit,
		bool tv2, int64_t now_ms, int64_t *next_pid, int16_t *next_epoch);

/* ---- timers (also callable directly: tests) ---- */

/*
 * Kafka's abortTimedOutTransactions (ids of partitions loaded here only):
 * every Ongoing transaction whose
 * start_ms + timeout_ms < now_ms is aborted at a bumped epoch (its producer
 * is fenced: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH from then on). Also
 * completes transactions left in Prepare* without markers in progress (a
 * Complete* record that could not be written).
 */
void txn_abort_timed_out(txn_coordinator *tc, int64_t now_ms);

/*
 * Kafka's removeExpiredTransactionalIds (ids of partitions loaded here
 * only): ids in Empty / CompleteCommit /
 * CompleteAbort whose last_update_ms <= now_ms -
 * transactional.id.expiration.ms get a tombstone and are forgotten.
 */
void txn_expire_ids(txn_coordinator *tc, int64_t now_ms);

/* Start the timers (transaction.abort.timed.out.transaction.cleanup.interval.ms,
 * transaction.remove.expired.transaction.cleanup.interval.ms); no-op
 * without a loop or when they run. */
void txn_coordinator_start(txn_coordinator *tc);

#endif
