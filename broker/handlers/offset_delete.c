/*
 * offset_delete.c - OffsetDelete (API key 47), version 0 (KIP-496): remove
 * some committed offsets of a group.
 *
 * As Kafka (KafkaApis.handleOffsetDeleteRequest,
 * GroupCoordinatorService.deleteOffsets, OffsetMetadataManager.deleteOffsets,
 * ClassicGroup.validateOffsetDelete / isSubscribedToTopic):
 *  - group errors, answered at the top level without topics: a null or
 *    empty group id is INVALID_GROUP_ID (GroupCoordinatorService
 *    .deleteOffsets checks isGroupIdNotEmpty, unlike OffsetCommit and
 *    OffsetFetch which accept ""), a group this broker does not coordinate
 *    NOT_COORDINATOR (group.h), an unknown (or Dead) group GROUP_ID_NOT_FOUND,
 *    a group with members whose protocol type is not "consumer"
 *    NON_EMPTY_GROUP;
 *  - a partition of a topic that does not exist (or out of range):
 *    UNKNOWN_TOPIC_OR_PARTITION;
 *  - a partition of a topic that a member of the group subscribes to (from
 *    the members' ConsumerProtocolSubscription of the chosen protocol):
 *    GROUP_SUBSCRIBED_TO_TOPIC;
 *  - otherwise NONE, and a tombstone is written when the partition has a
 *    committed or a pending transactional offset (all tombstones in one
 *    batch; the tombstone also drops the pending ones). A failed write answers
 *    its error at the top level; the answer waits until the write is
 *    committed (grp_answer), whose failure is answered at the top level too.
 */
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/group/store_codec.h"
#include "broker/group/txn_offsets.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* brk_hw_fail_fn: the error at the top level, without topics. */
static int fail(brk_request *req, void *arg, int16_t err)
{
	OffsetDeleteResponse *resp = arg;
	resp->error_code = err;
	resp->topics_count = 0;
	return OffsetDeleteResponse_encode(req->out, req->api_version, resp) == 0 ? BRK_RESPOND
										  : BRK_CLOSE;
}

int brk_handle_offset_delete(brk_request *req)
{
	grp_coordinator *gc = &server.groups;
	OffsetDeleteRequest m;
	OffsetDeleteRequest_init(&m);
	if (OffsetDeleteRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	OffsetDeleteResponse *rp = proto_arena_alloc(req->arena, sizeof(*rp));
	if (!rp)
		return BRK_CLOSE;
	OffsetDeleteResponse_init(rp);
	OffsetDeleteResponse resp;
	OffsetDeleteResponse_init(&resp);

	grp_group *g = NULL;
	int err = KERR_NONE;
	/* KafkaApis.handleOffsetDeleteRequest: DELETE on the group, READ on
	 * each topic. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m.group_id, CTL_ACL_OP_DELETE)) {
		err = KERR_GROUP_AUTHORIZATION_FAILED;
	} else if (m.group_id.len <= 0) {
		err = KERR_INVALID_GROUP_ID;
	} else if ((err = grp_coordinator_error(gc, m.group_id.ptr, m.group_id.len))) {
		/* not ours */
	} else {
		g = grp_find(gc, m.group_id.ptr, m.group_id.len);
		if (!g || g->state == GRP_DEAD)
			err = KERR_GROUP_ID_NOT_FOUND;
		else if (g->state != GRP_EMPTY &&
			 !(g->protocol_type && strcmp(g->protocol_type, "consumer") == 0))
			err = KERR_NON_EMPTY_GROUP;
	}

	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	int32_t total = 0;
	for (int32_t i = 0; i < nt; i++)
		total += m.topics[i].partitions_count > 0 ? m.topics[i].partitions_count : 0;
	grp_store_offset *items =
		proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*items));
	if (!items)
		return BRK_CLOSE;
	int32_t n = 0;
	if (!err) {
		resp.topics_count = nt;
		resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
		if (!resp.topics)
			return BRK_CLOSE;
		for (int32_t i = 0; i < nt; i++) {
			const OffsetDeleteRequest_OffsetDeleteRequestTopic *rt = &m.topics[i];
			OffsetDeleteResponse_OffsetDeleteResponseTopic *tr = &resp.topics[i];
			OffsetDeleteResponse_OffsetDeleteResponseTopic_init(tr);
			tr->name = rt->name;
			brk_topic *t = rt->name.len > 0 ? brk_topic_find(&server.partitions, rt->name.ptr, rt->name.len) : NULL;
			bool denied = !brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, rt->name,
							   CTL_ACL_OP_READ);
			int subscribed = t ? grp_subscribed_to_topic(g, rt->name.ptr, rt->name.len) : 0;
			int32_t np = rt->partitions_count > 0 ? rt->partitions_count : 0;
			tr->partitions_count = np;
			tr->partitions =
				proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partitions));
			if (!tr->partitions)
				return BRK_CLOSE;
			for (int32_t j = 0; j < np; j++) {
				int32_t part = rt->partitions[j].partition_index;
				OffsetDeleteResponse_OffsetDeleteResponsePartition *pr = &tr->partitions[j];
				OffsetDeleteResponse_OffsetDeleteResponsePartition_init(pr);
				pr->partition_index = part;
				if (denied)
					pr->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				else if (!t || !brk_topic_partition(t, part))
					pr->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				else if (subscribed == 1)
					pr->error_code = KERR_GROUP_SUBSCRIBED_TO_TOPIC;
				else if (grp_offsets_get(g->offsets, rt->name.ptr, rt->name.len, part) ||
					 grp_txn_pending(g->txns, rt->name.ptr, rt->name.len, part))
					items[n++] = (grp_store_offset){ rt->name, part, NULL };
			}
		}
		if (n > 0)
			err = grp_store_write_offsets(g, items, n, req->now_ms);
	}
	if (err) {
		resp.error_code = (int16_t)err;
		resp.topics_count = 0;
	}
	*rp = resp;
	if (OffsetDeleteResponse_encode(req->out, req->api_version, rp) != 0)
		return BRK_CLOSE;
	return !err && g ? grp_answer(gc, req, g->partition, fail, rp) : BRK_RESPOND;
}
