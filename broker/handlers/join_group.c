/*
 * join_group.c - JoinGroup (API key 11), versions 0-9: the request-level
 * checks of Kafka's GroupCoordinatorService.joinGroup (an empty group id is
 * INVALID_GROUP_ID; a session timeout outside [group.min.session.timeout.ms,
 * group.max.session.timeout.ms] is INVALID_SESSION_TIMEOUT), then the group
 * coordinator (grp_join), which answers at once (errors, MEMBER_ID_REQUIRED
 * for v4+ dynamic members, KIP-394) or when the join phase completes.
 * v0 has no rebalance timeout: it is the session timeout (Kafka's
 * JoinGroupRequest). A group of a __consumer_offsets partition this broker
 * does not lead is NOT_COORDINATOR (group.h).
 */
#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static int respond_error(brk_request *req, int16_t err, proto_str member_id)
{
	JoinGroupResponse r;
	JoinGroupResponse_init(&r);
	r.error_code = err;
	r.generation_id = -1;
	r.protocol_name = req->api_version >= 7 ? proto_str_of(NULL, -1) : proto_cstr("");
	r.leader = proto_cstr("");
	r.member_id = member_id.len >= 0 ? member_id : proto_cstr("");
	return JoinGroupResponse_encode(req->out, req->api_version, &r) == 0 ? BRK_RESPOND
									      : BRK_CLOSE;
}

int brk_handle_join_group(brk_request *req)
{
	int16_t v = req->api_version;
	JoinGroupRequest *m = proto_arena_alloc(req->arena, sizeof(*m));
	if (!m)
		return BRK_CLOSE;
	JoinGroupRequest_init(m);
	if (JoinGroupRequest_decode(&req->body, req->arena, v, m) != 0)
		return BRK_CLOSE;
	int aw = grp_store_await_topic(&server.groups, req); /* made on first use */
	if (aw)
		return aw;
	if (v == 0)
		m->rebalance_timeout_ms = m->session_timeout_ms;
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m->group_id, CTL_ACL_OP_READ))
		return respond_error(req, KERR_GROUP_AUTHORIZATION_FAILED, m->member_id);
	if (m->group_id.len <= 0)
		return respond_error(req, KERR_INVALID_GROUP_ID, m->member_id);
	if (m->session_timeout_ms < server.cfg.group_min_session_timeout_ms ||
	    m->session_timeout_ms > server.cfg.group_max_session_timeout_ms)
		return respond_error(req, KERR_INVALID_SESSION_TIMEOUT, m->member_id);
	return grp_join(&server.groups, req, m);
}
