/*
 * describe_groups.c - DescribeGroups (API key 15), versions 0-6: state,
 * protocol and members of classic groups (Kafka's
 * GroupMetadataManager.describeGroups). Member metadata and assignments and
 * the protocol name (ProtocolData) only in the Stable state. An empty group
 * id is INVALID_GROUP_ID; a group this broker does not coordinate
 * NOT_COORDINATOR (group.h) with the other fields empty; an unknown group is state "Dead" with
 * GROUP_ID_NOT_FOUND from v6 (KIP-1043) and no error before. Authorized
 * operations (v3+): INT32_MIN unless asked for; without an authorizer every
 * operation a group supports.
 */
#include <stdio.h>
#include <string.h>

#include "broker/group/group.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Group operations (Kafka's AclOperation codes as bits): READ 3, DELETE 6,
 * DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11. */
#define GROUP_ALL_OPERATIONS ((1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11))

static int describe(brk_request *req, const DescribeGroupsRequest *m,
		    DescribeGroupsResponse_DescribedGroup *d, proto_str id)
{
	int16_t v = req->api_version;
	DescribeGroupsResponse_DescribedGroup_init(d);
	d->group_id = id;
	d->group_state = proto_cstr("");
	d->protocol_type = proto_cstr("");
	d->protocol_data = proto_cstr("");
	/* KafkaApis.handleDescribeGroupRequest: DESCRIBE on the group. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, id, CTL_ACL_OP_DESCRIBE)) {
		d->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
		return 0;
	}
	if (id.len <= 0) {
		d->error_code = KERR_INVALID_GROUP_ID;
		return 0;
	}
	d->error_code = grp_coordinator_error(&server.groups, id.ptr, id.len);
	if (d->error_code)
		return 0;
	grp_group *g = grp_find(&server.groups, id.ptr, id.len);
	if (!g) {
		d->group_state = proto_cstr(grp_state_name(GRP_DEAD));
		if (v >= 6) {
			d->error_code = KERR_GROUP_ID_NOT_FOUND;
			size_t n = (size_t)id.len + 32;
			char *msg = proto_arena_alloc(req->arena, n);
			if (!msg)
				return -1;
			snprintf(msg, n, "Group %.*s not found.", (int)id.len, id.ptr);
			d->error_message = proto_cstr(msg);
		}
		return 0;
	}
	bool stable = g->state == GRP_STABLE;
	d->group_state = proto_cstr(grp_state_name(g->state));
	d->protocol_type = proto_cstr(g->protocol_type ? g->protocol_type : "");
	d->protocol_data = proto_cstr(stable && g->protocol_name ? g->protocol_name : "");
	if (m->include_authorized_operations)
		d->authorized_operations = brk_acl_operations(req, CTL_ACL_RES_GROUP, id.ptr, id.len,
							      GROUP_ALL_OPERATIONS);
	int32_t n = g->nmembers;
	d->members = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*d->members));
	if (!d->members)
		return -1;
	d->members_count = n;
	for (int32_t i = 0; i < n; i++) {
		const grp_member *mb = g->members[i];
		DescribeGroupsResponse_DescribedGroupMember *dm = &d->members[i];
		DescribeGroupsResponse_DescribedGroupMember_init(dm);
		dm->member_id = proto_cstr(mb->member_id);
		dm->group_instance_id = proto_cstr(mb->group_instance_id);
		dm->client_id = proto_cstr(mb->client_id ? mb->client_id : "");
		dm->client_host = proto_cstr(mb->client_host ? mb->client_host : "");
		dm->member_metadata = (proto_bytes){ (const uint8_t *)"", 0 };
		dm->member_assignment = (proto_bytes){ (const uint8_t *)"", 0 };
		if (!stable)
			continue;
		for (int32_t k = 0; k < mb->nprotocols && g->protocol_name; k++) {
			if (strcmp(mb->protocols[k].name, g->protocol_name) == 0) {
				dm->member_metadata.ptr = mb->protocols[k].metadata;
				dm->member_metadata.len = mb->protocols[k].metadata_len;
			}
		}
		if (mb->assignment) {
			dm->member_assignment.ptr = mb->assignment;
			dm->member_assignment.len = mb->assignment_len;
		}
	}
	return 0;
}

int brk_handle_describe_groups(brk_request *req)
{
	int16_t v = req->api_version;
	DescribeGroupsRequest m;
	DescribeGroupsRequest_init(&m);
	if (DescribeGroupsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	DescribeGroupsResponse r;
	DescribeGroupsResponse_init(&r);
	int32_t n = m.groups_count > 0 ? m.groups_count : 0;
	r.groups = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*r.groups));
	if (!r.groups)
		return BRK_CLOSE;
	r.groups_count = n;
	for (int32_t i = 0; i < n; i++)
		if (describe(req, &m, &r.groups[i], m.groups[i]) < 0)
			return BRK_CLOSE;
	return DescribeGroupsResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
