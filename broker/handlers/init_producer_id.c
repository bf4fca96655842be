/*
 * init_producer_id.c - InitProducerId (API key 22), versions 0-5: hands an
 * idempotent or transactional producer its producer id and epoch (KIP-98).
 *
 * As Kafka's KafkaApis.handleInitProducerIdRequest and
 * TransactionCoordinator.handleInitProducerId:
 *  - v3+ (KIP-360): a producer id without an epoch, or an epoch without a
 *    producer id, is INVALID_REQUEST;
 *  - transactional id null: a new producer id (producer_ids.h: blocks from
 *    the controller, never repeated, also across restarts), epoch 0.
 *    The producer id and epoch a v3+ request carries are ignored, as Kafka
 *    ignores them for a non-transactional producer (the KIP-360 epoch bump
 *    exists only for transactional ids): the answer is always a new id;
 *  - transactional id empty: INVALID_REQUEST (as Kafka);
 *  - a transactional id goes to the transaction coordinator
 *    (txn_init_producer_id, txn/txn.h): transaction timeout, epoch bump or
 *    a new producer id, fencing of an ongoing transaction, KIP-360 checks.
 *    PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v4, which
 *    predates it (KafkaApis.handleInitProducerIdRequest). NOT_COORDINATOR
 *    for an id this broker does not coordinate (txn.h); the answer waits
 *    until the id's partition has its writes committed (txn_answer).
 * Errors carry producer id -1 and epoch -1 (InitProducerIdRequest's
 * getErrorResponse). Throttle time is always 0 (no quotas).
 * When no producer id is at hand (the first request after start-up, or the
 * controller slow to give the next block) the request waits for the block
 * up to WAIT_FOR_IDS_MS, then is answered (COORDINATOR_LOAD_IN_PROGRESS if
 * there is still none, retriable).
 */
#include "broker/purgatory.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define WAIT_FOR_IDS_MS 5000

/* brk_hw_fail_fn: the error, producer id and epoch -1. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	InitProducerIdResponse resp;
	InitProducerIdResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.producer_id = -1;
	resp.producer_epoch = -1;
	resp.error_code = err;
	return InitProducerIdResponse_encode(req->out, req->api_version, &resp) == 0 ? BRK_RESPOND
										       : BRK_CLOSE;
}

static int answer(brk_request *req, const InitProducerIdRequest *mp)
{
	int16_t v = req->api_version;
	InitProducerIdRequest m = *mp;
	InitProducerIdResponse resp;
	InitProducerIdResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.producer_id = -1;
	resp.producer_epoch = -1;
	/* KafkaApis.handleInitProducerIdRequest: WRITE on the transactional
	 * id; without one IDEMPOTENT_WRITE on the cluster or WRITE on some
	 * topic (KIP-679). */
	bool denied = false;
	if (m.transactional_id.len >= 0 &&
	    !brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, m.transactional_id,
				 CTL_ACL_OP_WRITE)) {
		resp.error_code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		denied = true;
	} else if (m.transactional_id.len < 0 &&
		   !brk_acl_permits_cluster(req, CTL_ACL_OP_IDEMPOTENT_WRITE) &&
		   !brk_acl_permits_any(req, CTL_ACL_RES_TOPIC, CTL_ACL_OP_WRITE)) {
		resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		denied = true;
	} else if ((m.producer_id == -1) != (m.producer_epoch == -1)) {
		resp.error_code = KERR_INVALID_REQUEST;
	} else if (m.transactional_id.len == 0) { /* empty, not null */
		resp.error_code = KERR_INVALID_REQUEST;
	} else if (m.transactional_id.len > 0) {
		resp.error_code = txn_init_producer_id(&server.txns, m.transactional_id,
						       m.transaction_timeout_ms, m.producer_id,
						       m.producer_epoch, req->now_ms, &resp.producer_id,
						       &resp.producer_epoch);
		if (resp.error_code == KERR_PRODUCER_FENCED && v < 4)
			resp.error_code = KERR_INVALID_PRODUCER_EPOCH;
	} else {
		int64_t id;
		resp.error_code = brk_producer_ids_next(&server.producer_ids, &id);
		if (resp.error_code == KERR_NONE) {
			resp.producer_id = id;
			resp.producer_epoch = 0;
		}
	}
	if (InitProducerIdResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	if (m.transactional_id.len > 0 && !denied)
		return txn_answer(&server.txns, req, m.transactional_id, fail, NULL);
	return BRK_RESPOND;
}

static void on_ids(brk_delayed *d, bool expired)
{
	if (!expired && !d->detached && !brk_producer_ids_ready(&server.producer_ids) &&
	    server.producer_ids.call)
		return; /* the block is still on its way */
	brk_delayed_finish(d);
	int rc = answer(d->req, d->arg);
	if (rc == BRK_DELAYED)
		return; /* waits for its write, completed from there */
	brk_request_complete(d->req, rc == BRK_RESPOND ? BRK_COMPLETE_RESPOND : BRK_COMPLETE_CLOSE);
}

int brk_handle_init_producer_id(brk_request *req)
{
	InitProducerIdRequest *m = proto_arena_alloc(req->arena, sizeof(*m));
	if (!m)
		return BRK_CLOSE;
	InitProducerIdRequest_init(m);
	if (InitProducerIdRequest_decode(&req->body, req->arena, req->api_version, m) != 0)
		return BRK_CLOSE;
	if (m->transactional_id.len > 0) {
		int aw = txn_store_await_topic(&server.txns, req); /* made on first use */
		if (aw)
			return aw;
	}
	if (!brk_producer_ids_ready(&server.producer_ids)) {
		brk_delayed *d = brk_delayed_new(req, 1);
		if (d) {
			brk_delayed_watch(d, 0, &server.producer_ids.waiters);
			if (brk_delayed_start(d, WAIT_FOR_IDS_MS, on_ids, m) == 0)
				return BRK_DELAYED;
		}
	}
	return answer(req, m);
}
