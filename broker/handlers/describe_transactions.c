/*
 * describe_transactions.c - DescribeTransactions (API key 65), version 0:
 * an admin client asks the transaction coordinator for the state of some
 * transactional ids (KIP-664).
 *
 * As Kafka's TransactionCoordinator.handleDescribeTransactions, one entry
 * per requested id, in request order: an empty id is INVALID_REQUEST, an
 * id this broker does not coordinate NOT_COORDINATOR (txn.h), an
 * unknown one TRANSACTIONAL_ID_NOT_FOUND (error entries carry Kafka's
 * defaults: state "", zeros, no topics); otherwise the state's name
 * (Kafka's TransactionState.name: "Empty", "Ongoing", "PrepareCommit", ...),
 * timeout, start time (-1 when no transaction is open), producer id and
 * epoch, and the partitions of the transaction by topic (in Prepare*, only
 * those whose marker is still pending). A null id (not a legal value) is
 * answered INVALID_REQUEST under the id "". Throttle time is always 0.
 */
#include <string.h>

#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Fill s->topics from m's partitions (sorted, so grouped by topic). */
static int fill_topics(DescribeTransactionsResponse_TransactionState *s, const txn_meta *m,
		       proto_arena *a)
{
	int32_t nt = 0;
	for (int32_t i = 0; i < m->ntps; i++)
		if (i == 0 || strcmp(m->tps[i].topic, m->tps[i - 1].topic) != 0)
			nt++;
	s->topics_count = nt;
	s->topics = proto_arena_alloc(a, (size_t)(nt ? nt : 1) * sizeof(*s->topics));
	int32_t *parts = proto_arena_alloc(a, (size_t)(m->ntps ? m->ntps : 1) * sizeof(*parts));
	if (!s->topics || !parts)
		return -1;
	int32_t t = -1;
	for (int32_t i = 0; i < m->ntps; i++) {
		if (i == 0 || strcmp(m->tps[i].topic, m->tps[i - 1].topic) != 0) {
			t++;
			DescribeTransactionsResponse_TopicData_init(&s->topics[t]);
			s->topics[t].topic = proto_str_of(m->tps[i].topic, m->tps[i].topic_len);
			s->topics[t].partitions = &parts[i];
		}
		parts[i] = m->tps[i].partition;
		s->topics[t].partitions_count++;
	}
	return 0;
}

int brk_handle_describe_transactions(brk_request *req)
{
	int16_t v = req->api_version;
	DescribeTransactionsRequest m;
	DescribeTransactionsRequest_init(&m);
	if (DescribeTransactionsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	DescribeTransactionsResponse resp;
	DescribeTransactionsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	int32_t n = m.transactional_ids_count > 0 ? m.transactional_ids_count : 0;
	resp.transaction_states_count = n;
	resp.transaction_states =
		proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.transaction_states));
	if (!resp.transaction_states)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++) {
		DescribeTransactionsResponse_TransactionState *s = &resp.transaction_states[i];
		DescribeTransactionsResponse_TransactionState_init(s);
		proto_str id = m.transactional_ids[i];
		if (id.len <= 0) {
			s->error_code = KERR_INVALID_REQUEST;
			continue;
		}
		s->transactional_id = id;
		/* KafkaApis.handleDescribeTransactionsRequest: DESCRIBE on the id. */
		if (!brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, id,
					 CTL_ACL_OP_DESCRIBE)) {
			s->error_code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
			continue;
		}
		s->error_code = txn_coordinator_error(&server.txns, id);
		if (s->error_code)
			continue;
		const txn_meta *t = txn_find(&server.txns, id.ptr, id.len);
		if (!t || t->state == TXN_DEAD) {
			s->error_code = KERR_TRANSACTIONAL_ID_NOT_FOUND;
			continue;
		}
		s->error_code = KERR_NONE;
		s->transaction_state = proto_cstr(txn_state_name(t->state));
		s->transaction_timeout_ms = t->timeout_ms;
		s->transaction_start_time_ms = t->start_ms;
		s->producer_id = t->producer_id;
		s->producer_epoch = t->producer_epoch;
		if (fill_topics(s, t, req->arena) < 0)
			return BRK_CLOSE;
	}
	return DescribeTransactionsResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
