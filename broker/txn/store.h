/*
 * store.h - durability of the transaction coordinator's state in the
 * compacted internal topic __transaction_state (DESIGN.md decision 6), with
 * Kafka's key and value layouts (store_codec.h): creation of the topic,
 * loading a partition's transactional ids when this broker becomes its
 * leader and dropping them when it stops (the role observer; Kafka's
 * TransactionStateManager.loadTransactionsForTxnTopicPartition /
 * removeTransactionsForTxnTopicPartition), and one record per state change,
 * appended to partition brk_coordinator_partition(transactional id)
 * (Kafka's TransactionStateManager.partitionFor) through the same path as
 * Produce. store.c is the coordinator's txn_env (txn.h): appends, the
 * broker's producer ids, the partitions of __consumer_offsets.
 *
 * Everything runs on the event loop thread. As for __consumer_offsets, a
 * record is appended before the in-memory state changes; it is not
 * fsynced (the log's flush policy applies), and answers wait until it is
 * committed (txn.h, "Writes").
 *
 * Log lines, one per partition, when a partition is loaded after start-up
 * ("samsa: __transaction_state-4: loaded 2 transactional id(s) at leader
 * epoch 3 in 1 ms, 1 prepared transaction(s) completed"; not for the empty
 * partitions of a topic just made, at leader epoch 0) and when it is
 * dropped ("... unloaded 2 transactional id(s): now a follower", or
 * "stopped loading, dropped ..."); the partitions loaded at start-up are
 * summed up in one line once the last of them is loaded.
 */
#ifndef SAMSA_BROKER_TXN_STORE_H
#define SAMSA_BROKER_TXN_STORE_H

#include <stdint.h>

#include "broker/internal_topic.h"
#include "broker/request.h"
#include "broker/txn/store_codec.h"
#include "broker/txn/txn.h"
#include "protocol/buf.h"

#define TXN_STATE_TOPIC BRK_TXN_STATE_TOPIC

/* __transaction_state in tc's partition registry, or NULL when it does not
 * exist (yet) or no store is attached: callers answer
 * COORDINATOR_NOT_AVAILABLE. The topic is owned by the partition registry. */
struct brk_topic *txn_store_topic(const txn_coordinator *tc);

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
int txn_store_await_topic(txn_coordinator *tc, brk_request *req);

/*
 * Attach the store to tc (tc->env: appends to partitions of reg, the
 * server's producer ids, gc's __consumer_offsets) and follow the leadership
 * of __transaction_state: a role observer is registered on reg, every
 * partition this broker leads now starts loading (at start-up: after the
 * controller's initial events and grp_store_open, before the listeners
 * open; the loads run once the loop does), and the timers start
 * (txn_coordinator_start).
 *
 * Loading a partition (on each new leader epoch where this broker leads
 * it, its log online; Kafka's TransactionStateManager
 * .loadTransactionsForTxnTopicPartition): in the background as the
 * groups' (group/store.h), tc->load_slice records per loop iteration,
 * meanwhile its ids answer COORDINATOR_LOAD_IN_PROGRESS (ListTransactions
 * too) and the timers skip them. Its log is read from the log start offset
 * to the log end offset (brk_internal_reader), records applied in order (a
 * tombstone removes the id), then txn_partition_loaded (Prepare*
 * transactions completed). Malformed records are skipped with a warning.
 * A partition that cannot be read stays unloaded (NOT_COORDINATOR) with a
 * message. When this broker stops leading it (follower, no replica, topic
 * removed) or a new leader epoch starts, its load stops and its ids are
 * dropped first (txn_partition_unload).
 *
 * Once the start-up loads of both coordinators are done (gc->loads_done
 * tells when the groups' are), when this broker coordinates every
 * transactional id (it leads every partition of __transaction_state, or
 * the topic does not exist) and transaction.partition.verification.enable
 * is set: pending transactional offsets in gc of a producer that no loaded
 * transaction has open are aborted (an abort marker in the group's
 * __consumer_offsets partition, when led here): no coordinator would ever
 * end them. On a cluster where ids live on other brokers this cannot be
 * known, and they are left alone.
 * Returns 0, -ENOMEM, or -ENOSPC when the observer cannot be registered.
 */
int txn_store_open(txn_coordinator *tc, struct brk_partitions *reg, struct grp_coordinator *gc);

/* The role observer txn_store_open registers (a brk_role_fn whose arg is
 * the txn_coordinator). Exposed for tests. */
void txn_store_on_role(void *tc, struct brk_partition *p);

/*
 * txn_env.append (arg: the txn_coordinator): one record for transactional
 * id `id` in partition `partition`: value v, or a tombstone when v is NULL
 * (Kafka's transactional id expiration), at timestamp now_ms; *mark names
 * the write. Returns a Kafka error code, as Kafka's TransactionStateManager
 * .appendTransactionToLog maps append errors: NONE;
 * COORDINATOR_NOT_AVAILABLE when __transaction_state or the partition does
 * not exist; NOT_COORDINATOR when the partition is not loaded here, its log
 * is offline or the append failed (KAFKA_STORAGE_ERROR); UNKNOWN_SERVER_ERROR
 * for a record above the topic's max.message.bytes or segment.bytes
 * (MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE) or out of memory. Nothing is
 * written on error.
 */
int16_t txn_store_append(void *tc, int32_t partition, proto_str id, const txn_log_value *v,
			 int64_t now_ms, brk_hw_mark *mark);

#endif
