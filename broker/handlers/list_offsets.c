/*
 * list_offsets.c - ListOffsets (API key 2), versions 1-11: the offset for a
 * timestamp, or for the special timestamps (Kafka's ListOffsetsRequest and
 * UnifiedLog.fetchOffsetByTimestamp):
 *   -2 EARLIEST          log start offset
 *   -1 LATEST            high watermark (READ_UNCOMMITTED) or last stable
 *                        offset (READ_COMMITTED, KIP-98)
 *   -3 MAX_TIMESTAMP     offset of the record with the largest timestamp (KIP-734)
 *   -4 EARLIEST_LOCAL    local log start offset (KIP-405; = log start, no tiering)
 *   -5 LATEST_TIERED     -1: nothing is tiered (KIP-1005)
 *   -6 EARLIEST_PENDING_UPLOAD  -1: nothing is tiered (KIP-1023)
 *   anything else        first offset whose batch max timestamp >= it, below
 *                        the high watermark / last stable offset (other
 *                        negative values are searched as timestamps, as Kafka does)
 * The last fetchable offset (Kafka's Partition.fetchOffsetForTimestamp,
 * lastFetchableOffset) is the high watermark for READ_UNCOMMITTED (0) and
 * the last stable offset for READ_COMMITTED (1): LATEST answers it, and an
 * offset found for MAX_TIMESTAMP or a timestamp at or above it is not
 * answered (offset and timestamp -1), so a read_committed consumer never
 * starts inside an open transaction.
 * Leader epoch answered (Kafka's Partition.fetchOffsetForTimestamp and
 * UnifiedLog.fetchOffsetByTimestamp): LATEST the partition's current leader
 * epoch; EARLIEST the epoch of the log start offset (leader epoch cache,
 * epochForOffset); MAX_TIMESTAMP and timestamps the epoch of the batch found
 * (the cache entry covering its offset); -1 when unknown.
 */
#include <string.h>

#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"
#include "storage/leader_epoch.h"

#define EARLIEST_TIMESTAMP -2
#define LATEST_TIMESTAMP -1
#define MAX_TIMESTAMP -3
#define EARLIEST_LOCAL_TIMESTAMP -4
#define LATEST_TIERED_TIMESTAMP -5
#define EARLIEST_PENDING_UPLOAD_TIMESTAMP -6
#define READ_COMMITTED 1

static void list_one(int16_t v, const ListOffsetsRequest *m, brk_topic *t,
		     const ListOffsetsRequest_ListOffsetsPartition *q,
		     ListOffsetsResponse_ListOffsetsPartitionResponse *r)
{
	r->partition_index = q->partition_index;
	r->timestamp = -1;
	r->offset = -1;
	r->leader_epoch = -1;
	brk_partition *p = brk_topic_partition(t, q->partition_index);
	if (!p) {
		r->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return;
	}
	r->error_code = brk_partition_leader_error(p, q->current_leader_epoch);
	if (r->error_code != KERR_NONE)
		return;
	log_partition *lp = p->log;
	int64_t fetchable = m->isolation_level == READ_COMMITTED ? log_last_stable_offset(lp)
								  : log_high_watermark(lp);
	/* A new leader whose high watermark has not reached the start of its
	 * epoch cannot tell the latest offset yet (Kafka's
	 * Partition.fetchOffsetForTimestamp; below v5 answered
	 * LEADER_NOT_AVAILABLE, as KafkaApis does). */
	int16_t not_yet = p->leader_epoch_start_offset > log_high_watermark(lp)
				  ? (v >= 5 ? KERR_OFFSET_NOT_AVAILABLE : KERR_LEADER_NOT_AVAILABLE)
				  : KERR_NONE;
	switch (q->timestamp) {
	case EARLIEST_TIMESTAMP:
	case EARLIEST_LOCAL_TIMESTAMP:
		r->offset = log_start_offset(lp);
		r->leader_epoch = log_leader_epoch_for_offset(lp, r->offset);
		return;
	case LATEST_TIMESTAMP:
		if (not_yet) {
			r->error_code = not_yet;
			return;
		}
		r->offset = fetchable;
		r->leader_epoch = p->leader_epoch;
		return;
	case LATEST_TIERED_TIMESTAMP:
	case EARLIEST_PENDING_UPLOAD_TIMESTAMP:
		return;
	case MAX_TIMESTAMP: {
		int64_t off, ts;
		if (log_max_timestamp(lp, &off, &ts) != 0) {
			r->error_code = KERR_KAFKA_STORAGE_ERROR;
			return;
		}
		if (off >= 0 && off < fetchable) {
			r->offset = off;
			r->timestamp = ts;
			r->leader_epoch = log_leader_epoch_for_offset(lp, off);
		}
		return;
	}
	default: {
		int64_t off, ts;
		if (log_offset_for_timestamp(lp, q->timestamp, &off, &ts) != 0) {
			r->error_code = KERR_KAFKA_STORAGE_ERROR;
			return;
		}
		if (off >= 0 && off < fetchable) {
			r->offset = off;
			r->timestamp = ts;
			r->leader_epoch = log_leader_epoch_for_offset(lp, off);
		} else {
			r->error_code = not_yet;
		}
		return;
	}
	}
}

int brk_handle_list_offsets(brk_request *req)
{
	ListOffsetsRequest m;
	ListOffsetsRequest_init(&m);
	if (ListOffsetsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	ListOffsetsResponse resp;
	ListOffsetsResponse_init(&resp);
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	resp.topics_count = nt;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	for (int32_t i = 0; i < nt; i++) {
		const ListOffsetsRequest_ListOffsetsTopic *qt = &m.topics[i];
		ListOffsetsResponse_ListOffsetsTopicResponse *rt = &resp.topics[i];
		ListOffsetsResponse_ListOffsetsTopicResponse_init(rt);
		rt->name = qt->name;
		brk_topic *t = brk_topic_find(&server.partitions, qt->name.ptr, qt->name.len);
		int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
		rt->partitions_count = np;
		rt->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*rt->partitions));
		if (!rt->partitions)
			return BRK_CLOSE;
		/* KafkaApis.handleListOffsetRequest: DESCRIBE on the topic. */
		bool denied = !brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, qt->name,
						   CTL_ACL_OP_DESCRIBE);
		for (int32_t j = 0; j < np; j++) {
			ListOffsetsResponse_ListOffsetsPartitionResponse_init(&rt->partitions[j]);
			if (denied) {
				ListOffsetsResponse_ListOffsetsPartitionResponse *r = &rt->partitions[j];
				r->partition_index = qt->partitions[j].partition_index;
				r->timestamp = -1;
				r->offset = -1;
				r->leader_epoch = -1;
				r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			list_one(req->api_version, &m, t, &qt->partitions[j], &rt->partitions[j]);
		}
	}
	if (ListOffsetsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
