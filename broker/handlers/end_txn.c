/*
 * end_txn.c - EndTxn (API key 26), versions 0-5: a transactional producer
 * commits or aborts its ongoing transaction (KIP-98).
 *
 * As Kafka's KafkaApis.handleEndTxnRequest and
 * TransactionCoordinator.handleEndTransaction (txn_end): the PrepareCommit /
 * PrepareAbort record, the markers on every partition of the transaction,
 * then CompleteCommit / CompleteAbort. v5 is transaction version 2 (KIP-890
 * part 2; Kafka's TransactionVersion.transactionVersionForEndTxn): the
 * epoch is bumped at every end and the response carries the producer id and
 * epoch to use next (-1 below v5 and on errors). Clients send v5 only when
 * the broker finalizes the transaction.version feature at 2, which Samsa
 * does not advertise, so clients stay on version 0/1 (their produce path
 * registers partitions with AddPartitionsToTxn); v5 is still served as
 * Kafka serves it. PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below
 * v2, which predates it. NOT_COORDINATOR for an id this broker does not
 * coordinate (txn.h); the answer waits until the id's partition has its
 * writes committed (txn_answer: the Prepare* record), and the markers
 * follow. Throttle time is always 0 (no quotas).
 */
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* brk_hw_fail_fn: the error, producer id and epoch -1. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	EndTxnResponse resp;
	EndTxnResponse_init(&resp);
	resp.error_code = err;
	resp.producer_id = -1;
	resp.producer_epoch = -1;
	return EndTxnResponse_encode(req->out, req->api_version, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_end_txn(brk_request *req)
{
	int16_t v = req->api_version;
	EndTxnRequest m;
	EndTxnRequest_init(&m);
	if (EndTxnRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	int aw = txn_store_await_topic(&server.txns, req); /* made on first use */
	if (aw)
		return aw;
	EndTxnResponse resp;
	EndTxnResponse_init(&resp);
	resp.throttle_time_ms = 0;
	/* KafkaApis.handleEndTxnRequest: WRITE on the transactional id. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, m.transactional_id,
				 CTL_ACL_OP_WRITE)) {
		resp.error_code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		resp.producer_id = -1;
		resp.producer_epoch = -1;
		return EndTxnResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	resp.error_code = txn_end(&server.txns, m.transactional_id, m.producer_id, m.producer_epoch,
				  m.committed, v >= 5, req->now_ms, &resp.producer_id,
				  &resp.producer_epoch);
	if (resp.error_code == KERR_PRODUCER_FENCED && v < 2)
		resp.error_code = KERR_INVALID_PRODUCER_EPOCH;
	if (EndTxnResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return txn_answer(&server.txns, req, m.transactional_id, fail, NULL);
}
