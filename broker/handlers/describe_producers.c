/*
 * describe_producers.c - DescribeProducers (API key 61), version 0
 * (KIP-664): for each requested partition, the producers with state in its
 * log (Kafka's KafkaApis.handleDescribeProducersRequest,
 * ReplicaManager.activeProducerState and UnifiedLog.activeProducers):
 * producer id, epoch, last sequence (-1 without a cached batch), last
 * timestamp (-1 when unknown), coordinator epoch of its last marker (-1)
 * and the first offset of its open transaction (-1 when none). An admin
 * client uses it to find hanging transactions (kafka-transactions.sh
 * describe-producers / find-hanging).
 *
 * Errors, per partition:
 *  - the topic is unknown: UNKNOWN_TOPIC_OR_PARTITION for every partition
 *    asked for, with Kafka's message for it (an invalid topic name cannot
 *    name a topic here either);
 *  - the partition is not one of the topic's: UNKNOWN_TOPIC_OR_PARTITION
 *    (Kafka: NOT_LEADER_OR_FOLLOWER when the metadata knows the partition
 *    but this broker does not host it, which cannot happen on one node);
 *  - its log is offline: KAFKA_STORAGE_ERROR (ReplicaManager
 *    getPartitionOrError, HostedPartition.Offline).
 * The producers are listed in no particular order. READ on the topic is
 * checked first (TOPIC_AUTHORIZATION_FAILED, KafkaApis.handleDescribeProducersRequest).
 */
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static void partition_error(DescribeProducersResponse_PartitionResponse *r, int16_t err,
			    const char *msg)
{
	r->error_code = err;
	if (msg)
		r->error_message = proto_cstr(msg);
	r->active_producers_count = 0;
	r->active_producers = NULL;
}

/* Fill r for partition index of t. Returns 0, or -1 when the arena is full. */
static int describe_one(brk_request *req, brk_topic *t, int32_t index,
			DescribeProducersResponse_PartitionResponse *r)
{
	r->partition_index = index;
	if (!t) {
		partition_error(r, KERR_UNKNOWN_TOPIC_OR_PARTITION,
				"This server does not host this topic-partition.");
		return 0;
	}
	brk_partition *p = brk_topic_partition(t, index);
	if (!p) {
		partition_error(r, KERR_UNKNOWN_TOPIC_OR_PARTITION, NULL);
		return 0;
	}
	int16_t err = brk_partition_leader_error(p, -1);
	if (err) {
		partition_error(r, err, NULL);
		return 0;
	}
	size_t n = log_producer_count(p->log);
	if (n > INT32_MAX)
		n = INT32_MAX;
	r->error_code = KERR_NONE;
	r->active_producers_count = (int32_t)n;
	r->active_producers = proto_arena_alloc(req->arena, (n ? n : 1) * sizeof(*r->active_producers));
	if (!r->active_producers)
		return -1;
	size_t cursor = 0, i = 0;
	const log_producer_entry *e;
	while (i < n && (e = log_producer_next(p->log, &cursor)) != NULL) {
		DescribeProducersResponse_ProducerState *ps = &r->active_producers[i++];
		DescribeProducersResponse_ProducerState_init(ps);
		const log_producer_batch *last = log_pentry_last(e);
		ps->producer_id = e->producer_id;
		ps->producer_epoch = e->epoch;
		ps->last_sequence = last ? last->last_seq : -1;
		ps->last_timestamp = e->last_ts;
		ps->coordinator_epoch = e->coordinator_epoch;
		ps->current_txn_start_offset = e->txn_first_offset;
	}
	r->active_producers_count = (int32_t)i;
	return 0;
}

int brk_handle_describe_producers(brk_request *req)
{
	DescribeProducersRequest m;
	DescribeProducersRequest_init(&m);
	if (DescribeProducersRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;

	DescribeProducersResponse resp;
	DescribeProducersResponse_init(&resp);
	resp.throttle_time_ms = 0;
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	resp.topics_count = nt;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	for (int32_t i = 0; i < nt; i++) {
		const DescribeProducersRequest_TopicRequest *qt = &m.topics[i];
		DescribeProducersResponse_TopicResponse *rt = &resp.topics[i];
		DescribeProducersResponse_TopicResponse_init(rt);
		rt->name = qt->name;
		brk_topic *t = brk_topic_find(&server.partitions, qt->name.ptr, qt->name.len);
		int32_t np = qt->partition_indexes_count > 0 ? qt->partition_indexes_count : 0;
		rt->partitions_count = np;
		rt->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*rt->partitions));
		if (!rt->partitions)
			return BRK_CLOSE;
		bool denied = !brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, qt->name, CTL_ACL_OP_READ);
		for (int32_t j = 0; j < np; j++) {
			DescribeProducersResponse_PartitionResponse_init(&rt->partitions[j]);
			if (denied) {
				rt->partitions[j].partition_index = qt->partition_indexes[j];
				partition_error(&rt->partitions[j], KERR_TOPIC_AUTHORIZATION_FAILED, NULL);
				continue;
			}
			if (describe_one(req, t, qt->partition_indexes[j], &rt->partitions[j]) != 0)
				return BRK_CLOSE;
		}
	}
	if (DescribeProducersResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
