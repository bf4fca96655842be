/*
 * list_groups.c - ListGroups (API key 16), versions 0-5: every group this
 * broker coordinates (those of the __consumer_offsets partitions it leads,
 * group.h), with its protocol type ("" when none),
 * its state (v4+) and its type (v5+, always "classic": consumer groups of
 * KIP-848 are not served). The states filter (v4+, KIP-518) and the types
 * filter (v5+, KIP-848) compare case-insensitively, an empty filter keeps
 * everything (Kafka's GroupMetadataManager.listGroups). While a partition
 * of __consumer_offsets is loading here the answer is
 * COORDINATOR_LOAD_IN_PROGRESS without groups, as Kafka 4's
 * GroupCoordinatorService.listGroups (the admin client retries).
 */
#include <string.h>
#include <strings.h>

#include "broker/group/group.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define GROUP_TYPE_CLASSIC "classic"

static bool in_filter(const proto_str *filter, int32_t n, const char *value)
{
	if (n <= 0)
		return true;
	size_t len = strlen(value);
	for (int32_t i = 0; i < n; i++)
		if (filter[i].len >= 0 && (size_t)filter[i].len == len &&
		    strncasecmp(filter[i].ptr, value, len) == 0)
			return true;
	return false;
}

int brk_handle_list_groups(brk_request *req)
{
	int16_t v = req->api_version;
	ListGroupsRequest m;
	ListGroupsRequest_init(&m);
	if (ListGroupsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	ListGroupsResponse r;
	ListGroupsResponse_init(&r);
	if (server.groups.nloading > 0) {
		/* Kafka 4's GroupCoordinatorService.listGroups: a partition
		 * still loading fails the whole listing. */
		r.error_code = KERR_COORDINATOR_LOAD_IN_PROGRESS;
		return ListGroupsResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	int32_t total = grp_count(&server.groups);
	r.groups = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*r.groups));
	if (!r.groups)
		return BRK_CLOSE;
	int32_t n = 0;
	/* KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists
	 * every group, else only those the principal may DESCRIBE. */
	bool all = brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE);
	for (int32_t i = 0; i < total; i++) {
		const grp_group *g = grp_at(&server.groups, i);
		const char *state = grp_state_name(g->state);
		if (g->state == GRP_DEAD || !in_filter(m.states_filter, m.states_filter_count, state) ||
		    !in_filter(m.types_filter, m.types_filter_count, GROUP_TYPE_CLASSIC))
			continue;
		if (!all && !brk_acl_permits(req, CTL_ACL_RES_GROUP, g->group_id,
					     (int32_t)strlen(g->group_id), CTL_ACL_OP_DESCRIBE))
			continue;
		ListGroupsResponse_ListedGroup *lg = &r.groups[n++];
		ListGroupsResponse_ListedGroup_init(lg);
		lg->group_id = proto_cstr(g->group_id);
		lg->protocol_type = proto_cstr(g->protocol_type ? g->protocol_type : "");
		lg->group_state = proto_cstr(state);
		lg->group_type = proto_cstr(GROUP_TYPE_CLASSIC);
	}
	r.groups_count = n;
	r.error_code = KERR_NONE;
	return ListGroupsResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
