/*
 * delete_groups.c - DeleteGroups (API key 42), versions 0-2: delete groups
 * and their committed offsets (Kafka's GroupCoordinatorService.deleteGroups
 * and ClassicGroup.validateDeleteGroup): an empty group id is
 * INVALID_GROUP_ID, an unknown group GROUP_ID_NOT_FOUND, a group with
 * members NON_EMPTY_GROUP; otherwise tombstones for its offsets and its
 * metadata are written (grp_store_delete_group) and the group is dropped.
 * A group named twice is answered once (Kafka's result collection is keyed
 * by group id).
 */
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/request.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static int16_t delete_one(proto_str id)
{
	if (id.len <= 0)
		return KERR_INVALID_GROUP_ID;
	grp_group *g = grp_find(id.ptr, id.len);
	if (!g || g->state == GRP_DEAD)
		return KERR_GROUP_ID_NOT_FOUND;
	if (g->state != GRP_EMPTY)
		return KERR_NON_EMPTY_GROUP;
	int err = grp_store_delete_group(g);
	if (err != KERR_NONE)
		return (int16_t)err;
	grp_remove(g);
	return KERR_NONE;
}

int brk_handle_delete_groups(brk_request *req)
{
	int16_t v = req->api_version;
	DeleteGroupsRequest m;
	DeleteGroupsRequest_init(&m);
	if (DeleteGroupsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	DeleteGroupsResponse r;
	DeleteGroupsResponse_init(&r);
	int32_t n = m.groups_names_count > 0 ? m.groups_names_count : 0;
	r.results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*r.results));
	if (!r.results)
		return BRK_CLOSE;
	int32_t k = 0;
	for (int32_t i = 0; i < n; i++) {
		proto_str id = m.groups_names[i];
		bool dup = false;
		for (int32_t j = 0; j < i && !dup; j++)
			dup = m.groups_names[j].len == id.len &&
			      (id.len <= 0 || memcmp(m.groups_names[j].ptr, id.ptr, (size_t)id.len) == 0);
		if (dup)
			continue;
		DeleteGroupsResponse_DeletableGroupResult *res = &r.results[k++];
		DeleteGroupsResponse_DeletableGroupResult_init(res);
		res->group_id = id.len >= 0 ? id : proto_cstr("");
		res->error_code = delete_one(id);
	}
	r.results_count = k;
	return DeleteGroupsResponse_encode(req->out, v, &r) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
