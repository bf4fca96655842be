/*
 * delete_groups.c - DeleteGroups (API key 42), versions 0-2: delete groups
 * and their committed offsets (Kafka's GroupCoordinatorService.deleteGroups
 * and ClassicGroup.validateDeleteGroup): an empty group id is
 * INVALID_GROUP_ID, a group this broker does not coordinate NOT_COORDINATOR
 * (group.h), an unknown group GROUP_ID_NOT_FOUND, a group with members
 * NON_EMPTY_GROUP; otherwise tombstones for its offsets and its metadata
 * are written (grp_store_delete_group) and the group is dropped. A group
 * named twice is answered once (Kafka's result collection is keyed by
 * group id). The answer waits until every partition written has its writes
 * committed (grp_answer's rule for several partitions); when that fails,
 * the deleted groups answer its error (the others keep theirs).
 */
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/hw_wait.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static int16_t delete_one(grp_coordinator *gc, proto_str id, int32_t *partition)
{
	*partition = -1;
	if (id.len <= 0)
		return KERR_INVALID_GROUP_ID;
	int16_t err = grp_coordinator_error(gc, id.ptr, id.len);
	if (err)
		return err;
	grp_group *g = grp_find(gc, id.ptr, id.len);
	if (!g || g->state == GRP_DEAD)
		return KERR_GROUP_ID_NOT_FOUND;
	if (g->state != GRP_EMPTY)
		return KERR_NON_EMPTY_GROUP;
	err = (int16_t)grp_store_delete_group(g);
	if (err != KERR_NONE)
		return err;
	*partition = g->partition;
	grp_remove(g);
	return KERR_NONE;
}

typedef struct delete_state {
	DeleteGroupsResponse r;
	int32_t *written; /* per result: the partition written, -1 none */
} delete_state;

/* brk_hw_fail_fn: the deleted groups get err. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	delete_state *st = arg;
	for (int32_t i = 0; i < st->r.results_count; i++)
		if (st->written[i] >= 0)
			st->r.results[i].error_code = err;
	return DeleteGroupsResponse_encode(req->out, req->api_version, &st->r) == 0 ? BRK_RESPOND
										     : BRK_CLOSE;
}

int brk_handle_delete_groups(brk_request *req)
{
	int16_t v = req->api_version;
	grp_coordinator *gc = &server.groups;
	DeleteGroupsRequest m;
	DeleteGroupsRequest_init(&m);
	if (DeleteGroupsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	delete_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	DeleteGroupsResponse_init(&st->r);
	int32_t n = m.groups_names_count > 0 ? m.groups_names_count : 0;
	st->r.results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*st->r.results));
	st->written = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*st->written));
	brk_hw_mark *marks = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*marks));
	if (!st->r.results || !st->written || !marks)
		return BRK_CLOSE;
	int32_t k = 0, nmarks = 0;
	for (int32_t i = 0; i < n; i++) {
		proto_str id = m.groups_names[i];
		bool dup = false;
		for (int32_t j = 0; j < i && !dup; j++)
			dup = m.groups_names[j].len == id.len &&
			      (id.len <= 0 || memcmp(m.groups_names[j].ptr, id.ptr, (size_t)id.len) == 0);
		if (dup)
			continue;
		DeleteGroupsResponse_DeletableGroupResult *res = &st->r.results[k];
		DeleteGroupsResponse_DeletableGroupResult_init(res);
		res->group_id = id.len >= 0 ? id : proto_cstr("");
		/* KafkaApis.handleDeleteGroupsRequest: DELETE on the group. */
		if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, id, CTL_ACL_OP_DELETE)) {
			res->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
			st->written[k] = -1;
		} else {
			res->error_code = delete_one(gc, id, &st->written[k]);
		}
		grp_partition *ps = grp_partition_state(gc, st->written[k]);
		if (ps && ps->loaded)
			marks[nmarks++] = ps->last_write;
		k++;
	}
	st->r.results_count = k;
	if (DeleteGroupsResponse_encode(req->out, v, &st->r) != 0)
		return BRK_CLOSE;
	return brk_hw_answer(req, marks, nmarks, GRP_WRITE_TIMEOUT_MS, KERR_COORDINATOR_NOT_AVAILABLE,
			     fail, st);
}
