/*
 * add_offsets_to_txn.c - AddOffsetsToTxn (API key 25), versions 0-4: a
 * transactional producer tells its transaction coordinator that the
 * transaction will commit offsets of a consumer group (KIP-98), before it
 * sends TxnOffsetCommit to the group coordinator.
 *
 * As Kafka's KafkaApis.handleAddOffsetsToTxnRequest: the partition
 * brk_coordinator_partition(group) of __consumer_offsets joins the transaction
 * (txn_add_offsets), so EndTxn writes its marker there too and the
 * transaction's offsets become visible (or are dropped) with it. The group
 * id is not checked (Kafka only authorizes it). PRODUCER_FENCED is
 * answered INVALID_PRODUCER_EPOCH below v2, which predates it;
 * NOT_COORDINATOR for an id this broker does not coordinate (txn.h); the
 * answer waits until the id's partition has its writes committed
 * (txn_answer). Throttle time is always 0 (no quotas).
 */
#include "broker/group/store.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* brk_hw_fail_fn: the error alone. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	AddOffsetsToTxnResponse resp;
	AddOffsetsToTxnResponse_init(&resp);
	resp.error_code = err;
	return AddOffsetsToTxnResponse_encode(req->out, req->api_version, &resp) == 0 ? BRK_RESPOND
										       : BRK_CLOSE;
}

int brk_handle_add_offsets_to_txn(brk_request *req)
{
	int16_t v = req->api_version;
	AddOffsetsToTxnRequest m;
	AddOffsetsToTxnRequest_init(&m);
	if (AddOffsetsToTxnRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	int aw = txn_store_await_topic(&server.txns, req); /* made on first use */
	if (!aw)
		aw = grp_store_await_topic(&server.groups, req);
	if (aw)
		return aw;
	AddOffsetsToTxnResponse resp;
	AddOffsetsToTxnResponse_init(&resp);
	resp.throttle_time_ms = 0;
	/* KafkaApis.handleAddOffsetsToTxnRequest: WRITE on the transactional
	 * id, READ on the group. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, m.transactional_id,
				 CTL_ACL_OP_WRITE) ||
	    !brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m.group_id, CTL_ACL_OP_READ)) {
		resp.error_code = !brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID,
						       m.transactional_id, CTL_ACL_OP_WRITE)
					  ? KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
					  : KERR_GROUP_AUTHORIZATION_FAILED;
		return AddOffsetsToTxnResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND
										 : BRK_CLOSE;
	}
	resp.error_code = txn_add_offsets(&server.txns, m.transactional_id, m.producer_id,
					  m.producer_epoch, m.group_id, req->now_ms);
	if (resp.error_code == KERR_PRODUCER_FENCED && v < 2)
		resp.error_code = KERR_INVALID_PRODUCER_EPOCH;
	if (AddOffsetsToTxnResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return txn_answer(&server.txns, req, m.transactional_id, fail, NULL);
}
