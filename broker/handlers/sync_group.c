/*
 * sync_group.c - SyncGroup (API key 14), versions 0-5: an empty group id is
 * INVALID_GROUP_ID (Kafka's GroupCoordinatorService.syncGroup), then the
 * group coordinator (grp_sync): the leader's request carries the
 * assignments, followers wait for them while the group is
 * CompletingRebalance; v5 checks the protocol type and name (KIP-559).
 * A group this broker does not coordinate is NOT_COORDINATOR (group.h).
 */
#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

int brk_handle_sync_group(brk_request *req)
{
	int16_t v = req->api_version;
	SyncGroupRequest *m = proto_arena_alloc(req->arena, sizeof(*m));
	if (!m)
		return BRK_CLOSE;
	SyncGroupRequest_init(m);
	if (SyncGroupRequest_decode(&req->body, req->arena, v, m) != 0)
		return BRK_CLOSE;
	int aw = grp_store_await_topic(&server.groups, req); /* made on first use */
	if (aw)
		return aw;
	bool denied = !brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m->group_id, CTL_ACL_OP_READ);
	if (denied || m->group_id.len <= 0) {
		SyncGroupResponse r;
		SyncGroupResponse_init(&r);
		r.error_code = denied ? KERR_GROUP_AUTHORIZATION_FAILED : KERR_INVALID_GROUP_ID;
		r.assignment = (proto_bytes){ (const uint8_t *)"", 0 };
		return SyncGroupResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	return grp_sync(&server.groups, req, m);
}
