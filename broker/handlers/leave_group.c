/*
 * leave_group.c - LeaveGroup (API key 13), versions 0-5: members leave a
 * classic group, which then rebalances (Kafka's
 * GroupMetadataManager.classicGroupLeave). v0-2 name one member; v3+ a
 * batch of member ids and/or group instance ids (KIP-345: an empty member
 * id with an instance id removes that static member), each answered with
 * its own error. An empty group id is INVALID_GROUP_ID, an unknown group
 * UNKNOWN_MEMBER_ID at the top level; for v0-2 the member's error is the
 * top-level error (Kafka's LeaveGroupResponse for old versions).
 */
#include "broker/group/group.h"
#include "broker/request.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

int brk_handle_leave_group(brk_request *req)
{
	int16_t v = req->api_version;
	LeaveGroupRequest m;
	LeaveGroupRequest_init(&m);
	if (LeaveGroupRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	LeaveGroupResponse r;
	LeaveGroupResponse_init(&r);

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
	grp_group *g = m.group_id.len > 0 ? grp_find(m.group_id.ptr, m.group_id.len) : NULL;
	if (m.group_id.len <= 0) {
		r.error_code = KERR_INVALID_GROUP_ID;
	} else if (!g) {
		r.error_code = KERR_UNKNOWN_MEMBER_ID;
	} else {
		r.members = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*r.members));
		if (!r.members)
			return BRK_CLOSE;
		r.members_count = n;
		bool removed = false;
		for (int32_t i = 0; i < n; i++) {
			LeaveGroupResponse_MemberResponse *mr = &r.members[i];
			LeaveGroupResponse_MemberResponse_init(mr);
			mr->member_id = ids[i].member_id;
			mr->group_instance_id = ids[i].group_instance_id;
			mr->error_code = grp_leave_member(g, ids[i].member_id, ids[i].group_instance_id);
			removed |= mr->error_code == KERR_NONE;
		}
		if (removed)
			grp_leave_done(g);
		if (v < 3 && r.members[0].error_code != KERR_NONE)
			r.error_code = r.members[0].error_code;
	}
	return LeaveGroupResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
