/*
 * leave_group.c - LeaveGroup (API key 13), versions 0-5: members leave a
 * classic group, which then rebalances (Kafka's
 * GroupMetadataManager.classicGroupLeave). v0-2 name one member; v3+ a
 * batch of member ids and/or group instance ids (KIP-345: an empty member
 * id with an instance id removes that static member), each answered with
 * its own error. An empty group id is INVALID_GROUP_ID, a group this broker
 * does not coordinate NOT_COORDINATOR (group.h), an unknown group
 * UNKNOWN_MEMBER_ID at the top level; for v0-2 the member's error is the
 * top-level error (Kafka's LeaveGroupResponse for old versions). The
 * rebalance a leave starts may write the group (it becomes Empty): the
 * answer waits until the group's partition has its writes committed
 * (grp_answer), or answers that wait's error at the top level.
 */
#include "broker/group/group.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* brk_hw_fail_fn: the error at the top level, no members. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	LeaveGroupResponse *r = arg;
	r->error_code = err;
	r->members_count = 0;
	return LeaveGroupResponse_encode(req->out, req->api_version, r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_leave_group(brk_request *req)
{
	int16_t v = req->api_version;
	grp_coordinator *gc = &server.groups;
	LeaveGroupRequest m;
	LeaveGroupRequest_init(&m);
	if (LeaveGroupRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	LeaveGroupResponse *r = proto_arena_alloc(req->arena, sizeof(*r));
	if (!r)
		return BRK_CLOSE;
	LeaveGroupResponse_init(r);

	/* The members leaving: v0-2 one member id, as a batch of one. */
	LeaveGroupRequest_MemberIdentity one;
	LeaveGroupRequest_MemberIdentity *ids = m.members;
	int32_t n = m.members_count > 0 ? m.members_count : 0;
	if (v < 3) {
		LeaveGroupRequest_MemberIdentity_init(&one);
		one.member_id = m.member_id;
		ids = &one;
		n = 1;
	}
	grp_group *g = NULL;
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m.group_id, CTL_ACL_OP_READ)) {
		r->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
	} else if (m.group_id.len <= 0) {
		r->error_code = KERR_INVALID_GROUP_ID;
	} else if ((r->error_code = grp_coordinator_error(gc, m.group_id.ptr, m.group_id.len))) {
		/* not ours */
	} else if (!(g = grp_find(gc, m.group_id.ptr, m.group_id.len))) {
		r->error_code = KERR_UNKNOWN_MEMBER_ID;
	} else {
		r->members = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*r->members));
		if (!r->members)
			return BRK_CLOSE;
		r->members_count = n;
		bool removed = false;
		for (int32_t i = 0; i < n; i++) {
			LeaveGroupResponse_MemberResponse *mr = &r->members[i];
			LeaveGroupResponse_MemberResponse_init(mr);
			mr->member_id = ids[i].member_id;
			mr->group_instance_id = ids[i].group_instance_id;
			mr->error_code = grp_leave_member(g, ids[i].member_id, ids[i].group_instance_id);
			removed |= mr->error_code == KERR_NONE;
		}
		if (removed)
			grp_leave_done(g);
		if (v < 3 && r->members[0].error_code != KERR_NONE)
			r->error_code = r->members[0].error_code;
	}
	if (LeaveGroupResponse_encode(req->out, v, r) != 0)
		return BRK_CLOSE;
	return g ? grp_answer(gc, req, g->partition, fail, r) : BRK_RESPOND;
}
