/*
 * verify.h - transaction verification of this broker's transactional
 * writes (KIP-890 part 1, KAFKA-14402; Kafka's
 * ReplicaManager.maybeSendPartitionsToTransactionCoordinator and
 * AddPartitionsToTxnManager, which the group coordinator also uses for
 * TxnOffsetCommit: CoordinatorPartitionWriter
 * .maybeStartTransactionVerification, KAFKA-15449).
 *
 * Before the first transactional batch of a producer lands in a partition,
 * the transaction coordinator must confirm that the partition was added
 * to the producer's ongoing transaction; otherwise the batch would open a
 * transaction in the partition that no coordinator ever ends, and the
 * last stable offset would stop there for good. Requests of transaction
 * version 2 (Produce v12+, TxnOffsetCommit v5+) add the partition instead
 * of verifying it, as Kafka does.
 *
 * Only the coordinator of this process is asked, and its answer is
 * immediate. When the transactional id's coordinator is another broker
 * (this broker does not lead its partition of __transaction_state), the
 * write is NOT verified: it goes on as if
 * transaction.partition.verification.enable were false (Kafka would send a
 * verify-only AddPartitionsToTxn v4+ to that coordinator and make the
 * write wait for its answer; not done yet). For transaction version 2
 * writes, which must add the partition, the answer is then
 * COORDINATOR_NOT_AVAILABLE (retriable): the partition cannot be added
 * from here. While __transaction_state does not exist the local registry
 * (empty) answers, as before.
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_TXN_VERIFY_H
#define SAMSA_BROKER_TXN_VERIFY_H

#include <stdint.h>

#include "broker/partitions.h"
#include "protocol/buf.h"

/* Kafka's AddPartitionsToTxnManager.TransactionSupportedOperation: what the
 * client of a request version understands. */
typedef enum txn_write_op {
	TXN_WRITE_DEFAULT_ERROR,   /* TRANSACTION_ABORTABLE unknown: INVALID_TXN_STATE */
	TXN_WRITE_GENERIC_ERROR,   /* TRANSACTION_ABORTABLE answered as such */
	TXN_WRITE_ADD_PARTITION,   /* transaction version 2: the partition is added */
} txn_write_op;

/* produceRequestVersionToTransactionSupportedOperation: v12+ add, v11
 * generic error, older the default error. */
txn_write_op txn_write_op_for_produce(int16_t version);
/* txnOffsetCommitRequestVersionToTransactionSupportedOperation: v5+ add,
 * v4 generic error, older the default error. */
txn_write_op txn_write_op_for_txn_offset_commit(int16_t version);

/*
 * Check that producer pid/epoch of transactional id `id` may write a
 * transactional batch to partition p (online: p->log not NULL), with the
 * server's coordinator. NONE without asking the coordinator when the
 * producer already has an ongoing transaction at that epoch in p's log
 * (Kafka's UnifiedLog.hasOngoingTransaction: the first batch was
 * verified), when transaction.partition.verification.enable is false and
 * op is not TXN_WRITE_ADD_PARTITION, or when the id's coordinator is
 * another broker (above; COORDINATOR_NOT_AVAILABLE for
 * TXN_WRITE_ADD_PARTITION). Otherwise txn_verify_partition, or
 * txn_add_partitions (transaction version 2) for TXN_WRITE_ADD_PARTITION,
 * with AddPartitionsToTxnManager's mapping of the answer:
 * PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE ->
 * INVALID_TXN_STATE for TXN_WRITE_DEFAULT_ERROR; the others
 * (INVALID_PRODUCER_ID_MAPPING, INVALID_REQUEST, CONCURRENT_TRANSACTIONS,
 * the add's write errors) as they are. Nothing is written unless the
 * partition is added.
 */
int16_t txn_verify_write(proto_str id, int64_t pid, int16_t epoch, brk_partition *p,
			 txn_write_op op, int64_t now_ms);

#endif
