/*
 * heartbeat.c - Heartbeat (API key 12), versions 0-4: a member of a classic
 * group is alive. An empty group id is INVALID_GROUP_ID (Kafka's
 * GroupCoordinatorService.heartbeat); the rest is grp_heartbeat
 * (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
 * REBALANCE_IN_PROGRESS which asks the member to rejoin; NOT_COORDINATOR
 * for a group this broker does not coordinate).
 */
#include "broker/group/group.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

int brk_handle_heartbeat(brk_request *req)
{
	int16_t v = req->api_version;
	HeartbeatRequest m;
	HeartbeatRequest_init(&m);
	if (HeartbeatRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	HeartbeatResponse r;
	HeartbeatResponse_init(&r);
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m.group_id, CTL_ACL_OP_READ))
		r.error_code = KERR_GROUP_AUTHORIZATION_FAILED; /* READ on the group */
	else if (m.group_id.len <= 0)
		r.error_code = KERR_INVALID_GROUP_ID;
	else
		r.error_code = grp_heartbeat(&server.groups, m.group_id, m.member_id,
					     m.generation_id, m.group_instance_id);
	return HeartbeatResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
