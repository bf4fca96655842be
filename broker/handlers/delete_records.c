/*
 * delete_records.c - DeleteRecords (API key 21), versions 0-2 (KIP-107):
 * move each partition's log start offset up to the offset asked for; the
 * segments wholly below it leave the log at once and their files are
 * unlinked after file.delete.delay.ms (log_advance_start_offset,
 * brk_retention_schedule). Consumers positioned below the new log
 * start get OFFSET_OUT_OF_RANGE on their next fetch and follow their
 * auto.offset.reset; ListOffsets earliest answers the new log start.
 *
 * Per partition, as Kafka's KafkaApis.handleDeleteRecordsRequest,
 * ReplicaManager.deleteRecordsOnLocalLog and Partition.deleteRecordsOnLeader:
 *  - topic or partition unknown: UNKNOWN_TOPIC_OR_PARTITION;
 *  - an internal topic (__consumer_offsets, __transaction_state):
 *    INVALID_TOPIC_EXCEPTION;
 *  - the log offline: KAFKA_STORAGE_ERROR;
 *  - cleanup.policy without "delete": POLICY_VIOLATION;
 *  - Offset -1 means the high watermark; any other negative offset, or one
 *    above the high watermark: OFFSET_OUT_OF_RANGE;
 *  - an offset at or below the current log start offset changes nothing
 *    and succeeds.
 * LowWatermark is the log start offset after the deletion (-1 on an error).
 * On one node the ISR is this broker, so the deletion is complete when the
 * response is written: TimeoutMs (Kafka's DelayedDeleteRecords wait for the
 * followers) is not needed.
 */
#include <stdio.h>
#include <string.h>

#include "broker/partitions.h"
#include "broker/ratelog.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/retention.h"
#include "broker/server.h"
#include "controller/ctl.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* The offset -1 of a request: delete up to the high watermark. */
#define DELETE_RECORDS_HIGH_WATERMARK (-1)

static int16_t delete_one(proto_str name, brk_topic *t, int32_t index, int64_t offset,
			  int64_t *low_watermark)
{
	/* ReplicaManager.deleteRecordsOnLocalLog: internal topics by name,
	 * before the partition is looked up */
	if (name.len > 0 && ctl_topic_name_is_internal(name.ptr, (size_t)name.len))
		return KERR_INVALID_TOPIC_EXCEPTION;
	brk_partition *p = t ? brk_topic_partition(t, index) : NULL;
	if (!p)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int16_t err = brk_partition_leader_error(p, -1);
	if (err)
		return err;
	if (!t->cfg.delete_policy)
		return KERR_POLICY_VIOLATION;
	int64_t target = offset == DELETE_RECORDS_HIGH_WATERMARK ? log_high_watermark(p->log) : offset;
	if (target < 0)
		return KERR_OFFSET_OUT_OF_RANGE;
	int rc = log_advance_start_offset(p->log, target);
	if (rc == LOG_ERR_OFFSET_OUT_OF_RANGE)
		return KERR_OFFSET_OUT_OF_RANGE;
	/* what was renamed goes, even after a failed rename further on */
	brk_retention_schedule(&server.retention, p);
	if (rc < 0) {
		static brk_ratelog rl = BRK_RATELOG_INIT;
		brk_ratelog_printf(&rl, "samsa: DeleteRecords on %s-%d: %s\n", t->name, (int)index,
				   rc > -4096 ? strerror(-rc) : "log error");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	*low_watermark = log_start_offset(p->log);
	return KERR_NONE;
}

int brk_handle_delete_records(brk_request *req)
{
	int16_t v = req->api_version;
	DeleteRecordsRequest m;
	DeleteRecordsRequest_init(&m);
	if (DeleteRecordsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;

	DeleteRecordsResponse resp;
	DeleteRecordsResponse_init(&resp);
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	resp.topics_count = nt;
	for (int32_t i = 0; i < nt; i++) {
		const DeleteRecordsRequest_DeleteRecordsTopic *mt = &m.topics[i];
		DeleteRecordsResponse_DeleteRecordsTopicResult *rt = &resp.topics[i];
		DeleteRecordsResponse_DeleteRecordsTopicResult_init(rt);
		rt->name = mt->name;
		brk_topic *t = brk_topic_find(&server.partitions, mt->name.ptr, mt->name.len);
		int32_t np = mt->partitions_count > 0 ? mt->partitions_count : 0;
		rt->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*rt->partitions));
		if (!rt->partitions)
			return BRK_CLOSE;
		rt->partitions_count = np;
		for (int32_t j = 0; j < np; j++) {
			const DeleteRecordsRequest_DeleteRecordsPartition *mp = &mt->partitions[j];
			DeleteRecordsResponse_DeleteRecordsPartitionResult *r = &rt->partitions[j];
			DeleteRecordsResponse_DeleteRecordsPartitionResult_init(r);
			r->partition_index = mp->partition_index;
			r->low_watermark = -1;
			/* KafkaApis.handleDeleteRecordsRequest: DELETE on the topic. */
			if (!brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, mt->name, CTL_ACL_OP_DELETE)) {
				r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			r->error_code = delete_one(mt->name, t, mp->partition_index, mp->offset,
						   &r->low_watermark);
		}
	}
	if (DeleteRecordsResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
