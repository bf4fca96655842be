/*
 * offset_commit.c - OffsetCommit (API key 8), versions 2-10: store a group's
 * committed offsets in __consumer_offsets, one batch per request.
 *
 * Rules, in Kafka's order (KafkaApis.handleOffsetCommitRequest,
 * GroupCoordinatorService.commitOffsets, OffsetMetadataManager
 * .validateOffsetCommit / commitOffset):
 *  - a topic that does not exist, or a partition out of range:
 *    UNKNOWN_TOPIC_OR_PARTITION (v10, topics by id: UNKNOWN_TOPIC_ID);
 *  - for the other partitions, group errors: a null group id is
 *    INVALID_GROUP_ID, an empty one ("") is a group like any other ("for
 *    backwards compatibility", GroupCoordinatorService.commitOffsets in
 *    Kafka 4.x; the generated decoder already refuses a null string where
 *    the schema has none, so that check is a guard); a group this broker
 *    does not coordinate is NOT_COORDINATOR (group.h); an unknown group with generation >= 0 is
 *    ILLEGAL_GENERATION (v9+: GROUP_ID_NOT_FOUND); an unknown group with
 *    generation -1 is a "simple" commit that creates an Empty group; an
 *    existing group is checked by grp_validate_commit (UNKNOWN_MEMBER_ID,
 *    ILLEGAL_GENERATION, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS, ...);
 *  - metadata longer than offset.metadata.max.bytes:
 *    OFFSET_METADATA_TOO_LARGE for that partition (Kafka counts UTF-16
 *    characters, we count bytes);
 *  - the rest are written (OffsetCommitValue v3 with the committed leader
 *    epoch of v6+, or v1 with an expire timestamp of now + retention_time_ms
 *    when v2-4 sets one) and answered NONE, or the write's error; the
 *    answer waits until the write is committed (grp_answer): NOT_COORDINATOR
 *    when this broker stops leading the partition meanwhile,
 *    COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms (Kafka 4's
 *    mapping of REQUEST_TIMED_OUT; Kafka 3's GroupMetadataManager
 *    answered REQUEST_TIMED_OUT), for the partitions written.
 */
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* The answer, kept for brk_hw_fail_fn. */
typedef struct commit_state {
	OffsetCommitResponse resp;
	int16_t **pending; /* the error fields of the partitions written */
	int32_t n;
} commit_state;

static int fail(brk_request *req, void *arg, int16_t err)
{
	commit_state *st = arg;
	for (int32_t i = 0; i < st->n; i++)
		*st->pending[i] = err;
	return OffsetCommitResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND
										       : BRK_CLOSE;
}

int brk_handle_offset_commit(brk_request *req)
{
	grp_coordinator *gc = &server.groups;
	OffsetCommitRequest m;
	OffsetCommitRequest_init(&m);
	if (OffsetCommitRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int aw = grp_store_await_topic(gc, req); /* made on first use */
	if (aw)
		return aw;
	int16_t v = req->api_version;
	commit_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;

	int group_err = KERR_NONE;
	grp_group *g = NULL;
	bool create = false;
	/* KafkaApis.handleOffsetCommitRequest: READ on the group answers
	 * every partition; then READ on each topic. */
	bool group_denied = !brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m.group_id,
						 CTL_ACL_OP_READ);
	if (group_denied) {
		group_err = KERR_GROUP_AUTHORIZATION_FAILED;
	} else if (m.group_id.len < 0) {
		group_err = KERR_INVALID_GROUP_ID;
	} else if ((group_err = grp_coordinator_error(gc, m.group_id.ptr, m.group_id.len))) {
		/* not ours */
	} else {
		g = grp_find(gc, m.group_id.ptr, m.group_id.len);
		if (g)
			group_err = grp_validate_commit(g, m.member_id, m.generation_id_or_member_epoch,
							m.group_instance_id);
		else if (m.generation_id_or_member_epoch < 0)
			create = true;
		else
			group_err = v >= 9 ? KERR_GROUP_ID_NOT_FOUND : KERR_ILLEGAL_GENERATION;
	}

	OffsetCommitResponse resp;
	OffsetCommitResponse_init(&resp);
	/* st->resp gets it at the end */
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	int32_t total = 0;
	for (int32_t i = 0; i < nt; i++)
		total += m.topics[i].partitions_count > 0 ? m.topics[i].partitions_count : 0;
	resp.topics_count = nt;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	grp_store_offset *items =
		proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*items));
	grp_offset *values = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*values));
	int16_t **pending = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*pending));
	if (!resp.topics || !items || !values || !pending)
		return BRK_CLOSE;

	int64_t expire = -1;
	if (v <= 4 && m.retention_time_ms != -1)
		expire = req->now_ms + m.retention_time_ms;
	int32_t n = 0;
	for (int32_t i = 0; i < nt; i++) {
		const OffsetCommitRequest_OffsetCommitRequestTopic *rt = &m.topics[i];
		OffsetCommitResponse_OffsetCommitResponseTopic *tr = &resp.topics[i];
		OffsetCommitResponse_OffsetCommitResponseTopic_init(tr);
		tr->name = rt->name;
		tr->topic_id = rt->topic_id;
		brk_topic *t = NULL;
		if (v >= 10)
			t = brk_topic_find_by_id(&server.partitions, rt->topic_id.b);
		else if (rt->name.len > 0)
			t = brk_topic_find(&server.partitions, rt->name.ptr, rt->name.len);
		int32_t np = rt->partitions_count > 0 ? rt->partitions_count : 0;
		tr->partitions_count = np;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partitions));
		if (!tr->partitions)
			return BRK_CLOSE;
		bool topic_denied = !group_denied && (t || v < 10) &&
				    !brk_acl_permits_topic(req, t, rt->name, CTL_ACL_OP_READ);
		for (int32_t j = 0; j < np; j++) {
			const OffsetCommitRequest_OffsetCommitRequestPartition *rp = &rt->partitions[j];
			OffsetCommitResponse_OffsetCommitResponsePartition *pr = &tr->partitions[j];
			OffsetCommitResponse_OffsetCommitResponsePartition_init(pr);
			pr->partition_index = rp->partition_index;
			if (group_denied || topic_denied) {
				pr->error_code = group_denied ? KERR_GROUP_AUTHORIZATION_FAILED
							      : KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (!t) {
				pr->error_code = v >= 10 ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (!brk_topic_partition(t, rp->partition_index)) {
				pr->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (group_err) {
				pr->error_code = (int16_t)group_err;
				continue;
			}
			if (rp->committed_metadata.len > server.cfg.offset_metadata_max_bytes) {
				pr->error_code = KERR_OFFSET_METADATA_TOO_LARGE;
				continue;
			}
			grp_offset *val = &values[n];
			*val = grp_offset_of_commit(rp->committed_offset,
						    v >= 6 ? rp->committed_leader_epoch : -1,
						    rp->committed_metadata, req->now_ms, expire);
			items[n] = (grp_store_offset){ proto_cstr(t->name), rp->partition_index, val };
			pending[n] = &pr->error_code;
			n++;
		}
	}

	if (n > 0) {
		int err = KERR_NONE;
		if (create) {
			g = grp_get_or_create(gc, m.group_id.ptr, m.group_id.len);
			if (!g)
				err = KERR_UNKNOWN_SERVER_ERROR;
		}
		if (!err)
			err = grp_store_write_offsets(g, items, n, req->now_ms);
		for (int32_t i = 0; i < n; i++)
			*pending[i] = (int16_t)err;
	}

	st->resp = resp;
	st->pending = pending;
	st->n = n;
	if (OffsetCommitResponse_encode(req->out, v, &st->resp) != 0)
		return BRK_CLOSE;
	return g ? grp_answer(gc, req, g->partition, fail, st) : BRK_RESPOND;
}
