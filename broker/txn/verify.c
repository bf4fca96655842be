/*
 * verify.c - transaction verification of transactional writes (verify.h).
 */
#include "broker/txn/verify.h"

#include "broker/server.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "storage/log.h"

txn_write_op txn_write_op_for_produce(int16_t version)
{
	if (version > 11)
		return TXN_WRITE_ADD_PARTITION;
	return version > 10 ? TXN_WRITE_GENERIC_ERROR : TXN_WRITE_DEFAULT_ERROR;
}

txn_write_op txn_write_op_for_txn_offset_commit(int16_t version)
{
	if (version > 4)
		return TXN_WRITE_ADD_PARTITION;
	return version > 3 ? TXN_WRITE_GENERIC_ERROR : TXN_WRITE_DEFAULT_ERROR;
}

/* Kafka's UnifiedLog.hasOngoingTransaction(producerId, producerEpoch). */
static bool has_ongoing_txn(const brk_partition *p, int64_t pid, int16_t epoch)
{
	const log_producer_entry *e = log_producer_find(p->log, pid);
	return e && e->txn_first_offset >= 0 && e->epoch == epoch;
}

int16_t txn_verify_write(proto_str id, int64_t pid, int16_t epoch, brk_partition *p,
			 txn_write_op op, int64_t now_ms)
{
	if (op != TXN_WRITE_ADD_PARTITION && !server.cfg.transaction_partition_verification_enable)
		return KERR_NONE;
	if (p->log && has_ongoing_txn(p, pid, epoch))
		return KERR_NONE;
	txn_coordinator *tc = &server.txns;
	if (id.len > 0 && txn_coordinator_error(tc, id) == KERR_NOT_COORDINATOR)
		return op == TXN_WRITE_ADD_PARTITION ? KERR_COORDINATOR_NOT_AVAILABLE : KERR_NONE;
	const char *topic = p->topic->name;
	int16_t err;
	if (op == TXN_WRITE_ADD_PARTITION) {
		txn_tp_ref r = { proto_cstr(topic), p->index };
		err = txn_add_partitions(tc, id, pid, epoch, &r, 1, TXN_TV2, now_ms);
	} else {
		err = txn_verify_partition(tc, id, pid, epoch, topic, p->index);
	}
	if (err == KERR_PRODUCER_FENCED)
		return KERR_INVALID_PRODUCER_EPOCH;
	if (err == KERR_TRANSACTION_ABORTABLE && op == TXN_WRITE_DEFAULT_ERROR)
		return KERR_INVALID_TXN_STATE;
	return err;
}
