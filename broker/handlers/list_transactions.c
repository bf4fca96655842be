/*
 * list_transactions.c - ListTransactions (API key 66), versions 0-2: an
 * admin client lists the transactions the coordinator knows (those of the
 * __transaction_state partitions this broker leads, txn.h), optionally
 * filtered (KIP-664; v1 duration filter, KIP-994; v2 transactional id
 * pattern, KIP-1152).
 *
 * As Kafka's TransactionStateManager.listTransactionStates:
 *  - state filters are Kafka's state names (exact); unknown names are
 *    returned in UnknownStateFilters, and a non-empty filter list keeps
 *    only the ids in a named known state (so only unknown names match
 *    nothing);
 *  - producer id filters keep the ids whose current producer id is listed;
 *  - DurationFilter >= 0 keeps the transactions whose now - start time is
 *    above it (an id without an open transaction has start time -1, so it
 *    passes, as in Kafka);
 *  - a non-empty, non-null TransactionalIdPattern is a regular expression
 *    the whole id must match (Java's Matcher.matches); one that does not
 *    compile answers INVALID_REGULAR_EXPRESSION with no states. Kafka
 *    compiles Java/RE2J syntax; here it is POSIX extended syntax, which
 *    agrees on the common forms (literals, ., *, +, ?, [], |, (), {m,n},
 *    ^, $).
 *  - ids in the transient Dead state are never listed;
 *  - while a partition of __transaction_state is loading here:
 *    COORDINATOR_LOAD_IN_PROGRESS and nothing else (the admin client
 *    retries).
 * Throttle time is always 0 (no quotas).
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Whether re matches all of s (len bytes). */
static bool full_match(const regex_t *re, const char *s, int32_t len)
{
	regmatch_t mt[1];
	mt[0].rm_so = 0;
	mt[0].rm_eo = len;
	if (regexec(re, s, 1, mt, REG_STARTEND) != 0)
		return false;
	return mt[0].rm_so == 0 && mt[0].rm_eo == len;
}

int brk_handle_list_transactions(brk_request *req)
{
	int16_t v = req->api_version;
	proto_arena *a = req->arena;
	ListTransactionsRequest m;
	ListTransactionsRequest_init(&m);
	if (ListTransactionsRequest_decode(&req->body, a, v, &m) != 0)
		return BRK_CLOSE;
	ListTransactionsResponse resp;
	ListTransactionsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	if (server.txns.nloading > 0) {
		/* Kafka answers nothing while any partition loads. */
		resp.error_code = KERR_COORDINATOR_LOAD_IN_PROGRESS;
		return ListTransactionsResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}

	int32_t nsf = m.state_filters_count > 0 ? m.state_filters_count : 0;
	int32_t npf = m.producer_id_filters_count > 0 ? m.producer_id_filters_count : 0;
	bool want[TXN_STATE_COUNT] = { false };
	resp.unknown_state_filters = proto_arena_alloc(a, (size_t)(nsf ? nsf : 1) *
							      sizeof(*resp.unknown_state_filters));
	if (!resp.unknown_state_filters)
		return BRK_CLOSE;
	for (int32_t i = 0; i < nsf; i++) {
		int s = txn_state_from_name(m.state_filters[i]);
		if (s >= 0)
			want[s] = true;
		else if (m.state_filters[i].len >= 0)
			resp.unknown_state_filters[resp.unknown_state_filters_count++] =
				m.state_filters[i];
	}

	regex_t re;
	bool use_re = v >= 2 && m.transactional_id_pattern.len > 0;
	if (use_re) {
		char *pat = proto_arena_alloc(a, (size_t)m.transactional_id_pattern.len + 1);
		if (!pat)
			return BRK_CLOSE;
		memcpy(pat, m.transactional_id_pattern.ptr, (size_t)m.transactional_id_pattern.len);
		if (memchr(pat, '\0', (size_t)m.transactional_id_pattern.len) ||
		    regcomp(&re, pat, REG_EXTENDED) != 0) {
			resp.error_code = KERR_INVALID_REGULAR_EXPRESSION;
			resp.unknown_state_filters_count = 0;
			return ListTransactionsResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND
											: BRK_CLOSE;
		}
	}

	txn_coordinator *tc = &server.txns;
	int32_t total = txn_count(tc);
	resp.transaction_states =
		proto_arena_alloc(a, (size_t)(total ? total : 1) * sizeof(*resp.transaction_states));
	if (!resp.transaction_states) {
		if (use_re)
			regfree(&re);
		return BRK_CLOSE;
	}
	int64_t duration = v >= 1 ? m.duration_filter : -1;
	const txn_meta *t;
	for (int32_t i = 0; (t = txn_at(tc, i)) != NULL; i++) {
		if (t->state == TXN_DEAD)
			continue;
		/* KafkaApis.handleListTransactionsRequest: only the ids the
		 * principal may DESCRIBE. */
		if (!brk_acl_permits(req, CTL_ACL_RES_TRANSACTIONAL_ID, t->id, t->id_len,
				     CTL_ACL_OP_DESCRIBE))
			continue;
		if (npf > 0) {
			bool found = false;
			for (int32_t k = 0; k < npf && !found; k++)
				found = m.producer_id_filters[k] == t->producer_id;
			if (!found)
				continue;
		}
		if (nsf > 0 && !want[t->state])
			continue;
		if (duration >= 0 && req->now_ms - t->start_ms <= duration)
			continue;
		if (use_re && !full_match(&re, t->id, t->id_len))
			continue;
		ListTransactionsResponse_TransactionState *s =
			&resp.transaction_states[resp.transaction_states_count++];
		ListTransactionsResponse_TransactionState_init(s);
		s->transactional_id = proto_str_of(t->id, t->id_len);
		s->producer_id = t->producer_id;
		s->transaction_state = proto_cstr(txn_state_name(t->state));
	}
	if (use_re)
		regfree(&re);
	return ListTransactionsResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
