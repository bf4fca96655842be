/*
 * store.h - durability of the transaction coordinator's state in the
 * compacted internal topic __transaction_state (DESIGN.md decision 6), with
 * Kafka's key and value layouts (store_codec.h): creation of the topic,
 * loading at start-up, and one record per state change, appended to
 * partition abs(String.hashCode(transactional id)) % partitions (Kafka's
 * TransactionStateManager.partitionFor) through the same path as Produce.
 *
 * Everything runs on the event loop thread. As for __consumer_offsets, a
 * record is appended (and the high watermark moved) before the in-memory
 * state changes and before the request is answered; it is not fsynced
 * (the log's flush policy applies, as Kafka with acks=-1 on one node).
 */
#ifndef SAMSA_BROKER_TXN_STORE_H
#define SAMSA_BROKER_TXN_STORE_H

#include <stdint.h>

#include "broker/internal_topic.h"
#include "broker/request.h"
#include "broker/txn/store_codec.h"
#include "protocol/buf.h"

#define TXN_STATE_TOPIC "__transaction_state"

/* __transaction_state, or NULL when it does not exist (yet): callers answer
 * COORDINATOR_NOT_AVAILABLE. The topic is owned by the partition registry. */
struct brk_topic *txn_store_topic(void);

/*
 * The controller operation that creates __transaction_state
 * (transaction.state.log.num.partitions partitions, replication factor
 * min(transaction.state.log.replication.factor, live brokers) and
 * min.insync.replicas min(transaction.state.log.min.isr, replication
 * factor), each with a warning when capped, cleanup.policy=compact,
 * segment.bytes=transaction.state.log.segment.bytes: Kafka's TransactionLog
 * topic configs). As in Kafka the topic is made on first use:
 * FindCoordinator for a transactional id, or Metadata naming it.
 */
void txn_store_topic_op(brk_internal_topic_op *o);

/* As grp_store_await_topic, for __transaction_state (InitProducerId with a
 * transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn). */
int txn_store_await_topic(brk_request *req);

/*
 * At start-up, after grp_store_open and before the listeners open: when
 * __transaction_state exists (it is not created here, see txn_store_topic),
 * load every transactional id from it
 * (each partition from its log start offset to its high watermark, records
 * applied in order, a tombstone removes the id), then txn_coordinator_start
 * (Prepare* transactions completed, timers started).
 * Loading is synchronous, so COORDINATOR_LOAD_IN_PROGRESS is never
 * answered. Malformed records are skipped with a warning.
 * Returns 0, or -errno when the topic cannot be created or a log cannot be
 * read (the broker should not start then).
 */
int txn_store_open(void);

/*
 * Append one record for transactional id `id`: value v, or a tombstone
 * when v is NULL (Kafka's transactional id expiration), at timestamp now_ms.
 * Returns a Kafka error code, as Kafka's TransactionStateManager
 * .appendTransactionToLog maps append errors: NONE;
 * COORDINATOR_NOT_AVAILABLE when __transaction_state or the partition does
 * not exist; NOT_COORDINATOR when the log is offline or the append failed
 * (KAFKA_STORAGE_ERROR); UNKNOWN_SERVER_ERROR for a record above the topic's
 * max.message.bytes or segment.bytes (MESSAGE_TOO_LARGE /
 * RECORD_LIST_TOO_LARGE) or out of memory. Nothing is written on error.
 */
int16_t txn_store_append(proto_str id, const txn_log_value *v, int64_t now_ms);

/*
 * The coordinator epoch of transactional id `id`: the leader epoch of its
 * __transaction_state partition (Kafka's coordinatorEpoch, written into
 * every marker), or -1 when the topic does not exist.
 */
int32_t txn_store_coordinator_epoch(proto_str id);

#endif
