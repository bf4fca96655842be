/*
 * add_partitions_to_txn.c - AddPartitionsToTxn (API key 24), versions 0-5:
 * a transactional producer registers the partitions it is about to write
 * with its transaction coordinator (KIP-98); v4+ carry a batch of
 * transactions and are sent by brokers, with VerifyOnly (KIP-890 part 1).
 *
 * As Kafka's KafkaApis.handleAddPartitionsToTxnRequest, per transaction:
 *  - v0-3: an internal topic (__consumer_offsets, __transaction_state) is
 *    TOPIC_AUTHORIZATION_FAILED (Kafka never authorizes clients to add
 *    them); a partition of no known topic, or an index out of range,
 *    UNKNOWN_TOPIC_OR_PARTITION. Any such failure fails the whole
 *    transaction: the other partitions get OPERATION_NOT_ATTEMPTED;
 *  - otherwise txn_add_partitions (or txn_verify_partitions when
 *    VerifyOnly) and its error for every partition; PRODUCER_FENCED is
 *    answered INVALID_PRODUCER_EPOCH below v2, which predates it;
 *  - a verified partition that is not in the transaction is
 *    TRANSACTION_ABORTABLE from v5 (KIP-890), INVALID_TXN_STATE in v4;
 *  - v5+ adding (not verifying) implies transaction version 2 (Kafka's
 *    TransactionVersion.transactionVersionForAddPartitionsToTxn);
 *  - v4+ with a null transactional id: INVALID_REQUEST at the top level
 *    (Kafka's InvalidRequestException -> getErrorResponse);
 *  - an id this broker does not coordinate: NOT_COORDINATOR for its
 *    partitions (txn.h).
 * The answer waits until the partitions of __transaction_state of its ids
 * have their writes committed (txn.h, "Writes"); when that fails, every
 * partition answers the wait's error.
 * Results keep the request's topics and partitions in order. Throttle time
 * is always 0 (no quotas).
 */
#include <string.h>

#include "broker/hw_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "controller/ctl.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* One transaction of the request, in the shape both versions share. */
typedef struct txn_req {
	proto_str id;
	int64_t producer_id;
	int16_t producer_epoch;
	bool verify_only;
	int32_t ntopics;
	const proto_str *topic_names; /* ntopics */
	const int32_t *counts;        /* partitions per topic */
	const int32_t *const *parts;  /* partition arrays per topic */
	int32_t n;                    /* partitions in all */
	txn_tp_ref *refs;             /* n, flattened */
	int16_t *errs;                /* n: the result of each */
} txn_req;

/* Flatten the partitions into refs and errs. Returns -1 on arena failure. */
static int flatten(txn_req *tr, proto_arena *a)
{
	tr->n = 0;
	for (int32_t t = 0; t < tr->ntopics; t++)
		tr->n += tr->counts[t] > 0 ? tr->counts[t] : 0;
	size_t n = (size_t)(tr->n ? tr->n : 1);
	tr->refs = proto_arena_alloc(a, n * sizeof(*tr->refs));
	tr->errs = proto_arena_alloc(a, n * sizeof(*tr->errs));
	if (!tr->refs || !tr->errs)
		return -1;
	int32_t k = 0;
	for (int32_t t = 0; t < tr->ntopics; t++)
		for (int32_t i = 0; i < tr->counts[t]; i++) {
			tr->refs[k].topic = tr->topic_names[t];
			tr->refs[k].partition = tr->parts[t][i];
			k++;
		}
	return 0;
}

/* Check and run one transaction, filling tr->errs. */
static void handle_txn(const brk_request *req, txn_req *tr, int16_t v, int64_t now_ms)
{
	/* KafkaApis.handleAddPartitionsToTxnRequest: WRITE on the
	 * transactional id, then on each topic. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, tr->id, CTL_ACL_OP_WRITE)) {
		for (int32_t i = 0; i < tr->n; i++)
			tr->errs[i] = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		return;
	}
	bool failed = false;
	for (int32_t i = 0; i < tr->n; i++) {
		const txn_tp_ref *r = &tr->refs[i];
		brk_topic *t = r->topic.len > 0 ? brk_topic_find(&server.partitions, r->topic.ptr, r->topic.len) : NULL;
		if (v < 4 && r->topic.len > 0 &&
		    ctl_topic_name_is_internal(r->topic.ptr, (size_t)r->topic.len))
			tr->errs[i] = KERR_TOPIC_AUTHORIZATION_FAILED;
		else if (!brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, r->topic, CTL_ACL_OP_WRITE))
			tr->errs[i] = KERR_TOPIC_AUTHORIZATION_FAILED;
		else if (!t || !brk_topic_partition(t, r->partition))
			tr->errs[i] = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		else
			tr->errs[i] = KERR_NONE;
		failed |= tr->errs[i] != KERR_NONE;
	}
	if (failed) {
		for (int32_t i = 0; i < tr->n; i++)
			if (tr->errs[i] == KERR_NONE)
				tr->errs[i] = KERR_OPERATION_NOT_ATTEMPTED;
		return;
	}
	int16_t err;
	if (tr->verify_only) {
		int16_t missing = v >= 5 ? KERR_TRANSACTION_ABORTABLE : KERR_INVALID_TXN_STATE;
		err = txn_verify_partitions(&server.txns, tr->id, tr->producer_id,
					    tr->producer_epoch, tr->refs, tr->n, missing, tr->errs);
		if (err == KERR_NONE)
			return;
	} else {
		err = txn_add_partitions(&server.txns, tr->id, tr->producer_id, tr->producer_epoch,
					 tr->refs, tr->n, v >= 5 ? TXN_TV2 : TXN_TV0, now_ms);
	}
	if (err == KERR_PRODUCER_FENCED && v < 2)
		err = KERR_INVALID_PRODUCER_EPOCH;
	for (int32_t i = 0; i < tr->n; i++)
		tr->errs[i] = err;
}

/* The answer, kept for brk_hw_fail_fn: every partition gets the error. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	AddPartitionsToTxnResponse *resp = arg;
	for (int32_t t = 0; t < resp->results_by_topic_v3_and_below_count; t++) {
		AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResultV3AndBelow *r =
			&resp->results_by_topic_v3_and_below[t];
		for (int32_t i = 0; i < r->results_by_partition_count; i++)
			r->results_by_partition[i].partition_error_code = err;
	}
	for (int32_t x = 0; x < resp->results_by_transaction_count; x++) {
		AddPartitionsToTxnResponse_AddPartitionsToTxnResult *r = &resp->results_by_transaction[x];
		for (int32_t t = 0; t < r->topic_results_count; t++)
			for (int32_t i = 0; i < r->topic_results[t].results_by_partition_count; i++)
				r->topic_results[t].results_by_partition[i].partition_error_code = err;
	}
	return AddPartitionsToTxnResponse_encode(req->out, req->api_version, resp) == 0 ? BRK_RESPOND
											: BRK_CLOSE;
}

static int respond_v3(brk_request *req, const AddPartitionsToTxnRequest *m)
{
	int16_t v = req->api_version;
	proto_arena *a = req->arena;
	int32_t nt = m->v3_and_below_topics_count > 0 ? m->v3_and_below_topics_count : 0;
	proto_str *names = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*names));
	int32_t *counts = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*counts));
	const int32_t **parts = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*parts));
	if (!names || !counts || !parts)
		return BRK_CLOSE;
	for (int32_t t = 0; t < nt; t++) {
		names[t] = m->v3_and_below_topics[t].name;
		counts[t] = m->v3_and_below_topics[t].partitions_count;
		parts[t] = m->v3_and_below_topics[t].partitions;
	}
	txn_req tr = {
		.id = m->v3_and_below_transactional_id,
		.producer_id = m->v3_and_below_producer_id,
		.producer_epoch = m->v3_and_below_producer_epoch,
		.ntopics = nt,
		.topic_names = names,
		.counts = counts,
		.parts = parts,
	};
	if (flatten(&tr, a) < 0)
		return BRK_CLOSE;
	handle_txn(req, &tr, v, req->now_ms);

	AddPartitionsToTxnResponse *rp = proto_arena_alloc(a, sizeof(*rp));
	if (!rp)
		return BRK_CLOSE;
	AddPartitionsToTxnResponse_init(rp);
	AddPartitionsToTxnResponse resp = *rp;
	resp.throttle_time_ms = 0;
	resp.results_by_topic_v3_and_below_count = nt;
	resp.results_by_topic_v3_and_below =
		proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*resp.results_by_topic_v3_and_below));
	if (!resp.results_by_topic_v3_and_below)
		return BRK_CLOSE;
	int32_t k = 0;
	for (int32_t t = 0; t < nt; t++) {
		AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResultV3AndBelow *tr_out =
			&resp.results_by_topic_v3_and_below[t];
		AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResultV3AndBelow_init(tr_out);
		tr_out->name = names[t];
		int32_t np = counts[t] > 0 ? counts[t] : 0;
		tr_out->results_by_partition_count = np;
		tr_out->results_by_partition =
			proto_arena_alloc(a, (size_t)(np ? np : 1) * sizeof(*tr_out->results_by_partition));
		if (!tr_out->results_by_partition)
			return BRK_CLOSE;
		for (int32_t i = 0; i < np; i++, k++) {
			tr_out->results_by_partition[i].partition_index = parts[t][i];
			tr_out->results_by_partition[i].partition_error_code = tr.errs[k];
		}
	}
	*rp = resp;
	if (AddPartitionsToTxnResponse_encode(req->out, v, rp) != 0)
		return BRK_CLOSE;
	return txn_answer(&server.txns, req, tr.id, fail, rp);
}

static int respond_v4(brk_request *req, const AddPartitionsToTxnRequest *m)
{
	int16_t v = req->api_version;
	proto_arena *a = req->arena;
	AddPartitionsToTxnResponse *rp = proto_arena_alloc(a, sizeof(*rp));
	if (!rp)
		return BRK_CLOSE;
	AddPartitionsToTxnResponse_init(rp);
	AddPartitionsToTxnResponse resp = *rp;
	resp.throttle_time_ms = 0;
	int32_t ntx = m->transactions_count > 0 ? m->transactions_count : 0;
	/* v4+ is the brokers' verification: CLUSTER_ACTION on the cluster. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_CLUSTER_ACTION)) {
		resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		return AddPartitionsToTxnResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND
										 : BRK_CLOSE;
	}
	for (int32_t x = 0; x < ntx; x++) {
		if (m->transactions[x].transactional_id.len < 0) {
			resp.error_code = KERR_INVALID_REQUEST;
			return AddPartitionsToTxnResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND
											 : BRK_CLOSE;
		}
	}
	resp.results_by_transaction_count = ntx;
	resp.results_by_transaction =
		proto_arena_alloc(a, (size_t)(ntx ? ntx : 1) * sizeof(*resp.results_by_transaction));
	brk_hw_mark *marks = proto_arena_alloc(a, (size_t)(ntx ? ntx : 1) * sizeof(*marks));
	if (!resp.results_by_transaction || !marks)
		return BRK_CLOSE;
	for (int32_t x = 0; x < ntx; x++) {
		const AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction *in = &m->transactions[x];
		int32_t nt = in->topics_count > 0 ? in->topics_count : 0;
		proto_str *names = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*names));
		int32_t *counts = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*counts));
		const int32_t **parts = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*parts));
		if (!names || !counts || !parts)
			return BRK_CLOSE;
		for (int32_t t = 0; t < nt; t++) {
			names[t] = in->topics[t].name;
			counts[t] = in->topics[t].partitions_count;
			parts[t] = in->topics[t].partitions;
		}
		txn_req tr = {
			.id = in->transactional_id,
			.producer_id = in->producer_id,
			.producer_epoch = in->producer_epoch,
			.verify_only = in->verify_only,
			.ntopics = nt,
			.topic_names = names,
			.counts = counts,
			.parts = parts,
		};
		if (flatten(&tr, a) < 0)
			return BRK_CLOSE;
		handle_txn(req, &tr, v, req->now_ms);
		marks[x] = txn_last_write(&server.txns, tr.id);

		AddPartitionsToTxnResponse_AddPartitionsToTxnResult *out = &resp.results_by_transaction[x];
		AddPartitionsToTxnResponse_AddPartitionsToTxnResult_init(out);
		out->transactional_id = in->transactional_id;
		out->topic_results_count = nt;
		out->topic_results = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*out->topic_results));
		if (!out->topic_results)
			return BRK_CLOSE;
		int32_t k = 0;
		for (int32_t t = 0; t < nt; t++) {
			AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult *to = &out->topic_results[t];
			AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult_init(to);
			to->name = names[t];
			int32_t np = counts[t] > 0 ? counts[t] : 0;
			to->results_by_partition_count = np;
			to->results_by_partition =
				proto_arena_alloc(a, (size_t)(np ? np : 1) * sizeof(*to->results_by_partition));
			if (!to->results_by_partition)
				return BRK_CLOSE;
			for (int32_t i = 0; i < np; i++, k++) {
				to->results_by_partition[i].partition_index = parts[t][i];
				to->results_by_partition[i].partition_error_code = tr.errs[k];
			}
		}
	}
	*rp = resp;
	if (AddPartitionsToTxnResponse_encode(req->out, v, rp) != 0)
		return BRK_CLOSE;
	return brk_hw_answer(req, marks, ntx, TXN_WRITE_TIMEOUT_MS, KERR_COORDINATOR_NOT_AVAILABLE, fail,
			     rp);
}

int brk_handle_add_partitions_to_txn(brk_request *req)
{
	AddPartitionsToTxnRequest m;
	AddPartitionsToTxnRequest_init(&m);
	if (AddPartitionsToTxnRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int aw = txn_store_await_topic(&server.txns, req); /* made on first use */
	if (aw)
		return aw;
	return req->api_version < 4 ? respond_v3(req, &m) : respond_v4(req, &m);
}
