/*
 * offset_for_leader_epoch.c - OffsetForLeaderEpoch (API key 23), versions
 * 2-4 (Kafka 4 serves 2-4): for each partition, the end offset of a leader
 * epoch in the leader's log (KIP-101), for a follower deciding where to
 * truncate (ReplicaId >= 0, v3+) and for a consumer validating its position
 * after a leader change (KIP-320, ReplicaId -1 or -2).
 *
 * As Kafka's ReplicaManager.lastOffsetForLeaderEpoch and
 * Partition.lastOffsetForLeaderEpoch: an unknown topic or partition is
 * UNKNOWN_TOPIC_OR_PARTITION; then the leader checks of
 * brk_partition_leader_error (CurrentLeaderEpoch older:
 * FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH, not the leader:
 * NOT_LEADER_OR_FOLLOWER, log offline: KAFKA_STORAGE_ERROR); else the
 * answer of the leader epoch cache (LeaderEpochFileCache.endOffsetFor):
 * the latest epoch ends at the log end offset, an older one at the start
 * of the next, one below every known epoch at the start of the first, and
 * one above all (or none known) is (-1, -1). Errors carry epoch -1 and
 * end offset -1.
 */
#include <string.h>

#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

int brk_handle_offset_for_leader_epoch(brk_request *req)
{
	int16_t v = req->api_version;
	OffsetForLeaderEpochRequest m;
	OffsetForLeaderEpochRequest_init(&m);
	if (OffsetForLeaderEpochRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	OffsetForLeaderEpochResponse resp;
	OffsetForLeaderEpochResponse_init(&resp);
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	resp.topics_count = nt;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	/* KafkaApis.handleOffsetForLeaderEpochRequest: a follower (ReplicaId
	 * >= 0) needs CLUSTER_ACTION on the cluster, a consumer DESCRIBE on
	 * each topic. */
	bool follower_denied = v >= 3 && m.replica_id >= 0 &&
			       !brk_acl_permits_cluster(req, CTL_ACL_OP_CLUSTER_ACTION);
	for (int32_t i = 0; i < nt; i++) {
		const OffsetForLeaderEpochRequest_OffsetForLeaderTopic *qt = &m.topics[i];
		OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *rt = &resp.topics[i];
		OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult_init(rt);
		rt->topic = qt->topic;
		brk_topic *t = brk_topic_find(&server.partitions, qt->topic.ptr, qt->topic.len);
		int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
		rt->partitions_count = np;
		rt->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) *
								       sizeof(*rt->partitions));
		if (!rt->partitions)
			return BRK_CLOSE;
		for (int32_t j = 0; j < np; j++) {
			const OffsetForLeaderEpochRequest_OffsetForLeaderPartition *qp = &qt->partitions[j];
			OffsetForLeaderEpochResponse_EpochEndOffset *r = &rt->partitions[j];
			OffsetForLeaderEpochResponse_EpochEndOffset_init(r);
			r->partition = qp->partition;
			r->leader_epoch = -1;
			r->end_offset = -1;
			if (follower_denied) {
				r->error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
				continue;
			}
			if (!(v >= 3 && m.replica_id >= 0) &&
			    !brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, qt->topic, CTL_ACL_OP_DESCRIBE)) {
				r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			brk_partition *p = brk_topic_partition(t, qp->partition);
			if (!p) {
				r->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			r->error_code = brk_partition_leader_error(p, qp->current_leader_epoch);
			if (r->error_code != KERR_NONE)
				continue;
			log_end_offset_for_epoch(p->log, qp->leader_epoch, &r->leader_epoch,
						 &r->end_offset);
		}
	}
	return OffsetForLeaderEpochResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
