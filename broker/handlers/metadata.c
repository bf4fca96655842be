/*
 * metadata.c - Metadata (API key 3), versions 0-13: brokers, cluster id,
 * controller, and per topic its id and partitions (leader, leader epoch,
 * replicas, ISR, offline replicas). Unknown topics are created when the
 * client allows it (AllowAutoTopicCreation, always true before v4) and
 * auto.create.topics.enable is set, as Kafka's KafkaApis.getTopicMetadata;
 * the topic is created synchronously and answered ready (error NONE).
 */
#include <string.h>

#include "broker/group/store.h"
#include "broker/partitions.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Authorized operations without an authorizer: every operation the resource
 * type supports (Kafka's AclOperation codes as bits). Topic: READ 3, WRITE 4,
 * CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
 * ALTER_CONFIGS 11. Cluster: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
 * DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12. */
#define TOPIC_ALL_OPERATIONS ((1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | \
			      (1 << 10) | (1 << 11))
#define CLUSTER_ALL_OPERATIONS ((1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | \
				(1 << 11) | (1 << 12))
#define AUTHORIZED_OPERATIONS_OMITTED INT32_MIN

/* Create the topic named (name, len) with the auto-creation settings.
 * The internal topics are made by their coordinators, with their settings
 * (offsets.topic.*, transaction.state.log.*; Kafka's
 * AutoTopicCreationManager does the same). */
static int auto_create(const char *name, int32_t len, const ctl_topic **out)
{
	char buf[CTL_TOPIC_NAME_MAX + 1];
	memcpy(buf, name, (size_t)len);
	buf[len] = '\0';
	if (ctl_topic_name_is_internal(buf, (size_t)len)) {
		brk_topic *t = strcmp(buf, GRP_OFFSETS_TOPIC) == 0 ? grp_store_topic() : txn_store_topic();
		*out = t ? t->meta : NULL;
		return t ? KERR_NONE : KERR_COORDINATOR_NOT_AVAILABLE;
	}
	return brk_create_topic(buf, server.cfg.num_partitions, server.cfg.default_replication_factor,
				NULL, 0, false, out);
}

static int32_t *one_id(proto_arena *a, int32_t id)
{
	int32_t *p = proto_arena_alloc(a, sizeof(int32_t));
	if (p)
		*p = id;
	return p;
}

/* Fill the answer for an existing topic. Returns 0 or -1 (arena full). */
static int fill_topic(brk_request *req, const MetadataRequest *m,
		      MetadataResponse_MetadataResponseTopic *rt, const ctl_topic *t)
{
	brk_topic *bt = brk_topic_find(t->name, (int32_t)strlen(t->name));
	rt->error_code = KERR_NONE;
	rt->name = proto_cstr(t->name);
	memcpy(rt->topic_id.b, t->id, 16);
	rt->is_internal = t->internal;
	if (m->include_topic_authorized_operations)
		rt->topic_authorized_operations = TOPIC_ALL_OPERATIONS;
	rt->partitions_count = t->npartitions;
	rt->partitions = proto_arena_alloc(req->arena, (size_t)(t->npartitions ? t->npartitions : 1) *
							   sizeof(*rt->partitions));
	if (!rt->partitions)
		return -1;
	for (int32_t i = 0; i < t->npartitions; i++) {
		const ctl_partition *cp = &t->partitions[i];
		MetadataResponse_MetadataResponsePartition *rp = &rt->partitions[i];
		MetadataResponse_MetadataResponsePartition_init(rp);
		brk_partition *bp = brk_topic_partition(bt, i);
		rp->partition_index = cp->partition;
		rp->leader_id = cp->leader;
		rp->leader_epoch = cp->leader_epoch;
		rp->replica_nodes_count = cp->nreplicas;
		rp->replica_nodes = cp->replicas;
		rp->isr_nodes_count = cp->nisr;
		rp->isr_nodes = cp->isr;
		rp->offline_replicas_count = 0;
		if (!bp || !bp->log) {
			/* Our replica is offline: no leader (Kafka answers
			 * LEADER_NOT_AVAILABLE and lists the offline replica). */
			rp->error_code = KERR_LEADER_NOT_AVAILABLE;
			rp->leader_id = -1;
			rp->offline_replicas = one_id(req->arena, server.cfg.broker_id);
			if (!rp->offline_replicas)
				return -1;
			rp->offline_replicas_count = 1;
			rp->isr_nodes_count = 0;
		}
	}
	return 0;
}

int brk_handle_metadata(brk_request *req)
{
	MetadataRequest m;
	MetadataRequest_init(&m);
	if (MetadataRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int16_t v = req->api_version;

	MetadataResponse resp;
	MetadataResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.error_code = KERR_NONE;

	const brk_listener *l = brk_config_advertised(&server.cfg);
	resp.brokers = proto_arena_alloc(req->arena, sizeof(*resp.brokers));
	if (!resp.brokers)
		return BRK_CLOSE;
	MetadataResponse_MetadataResponseBroker_init(&resp.brokers[0]);
	resp.brokers[0].node_id = server.cfg.broker_id;
	resp.brokers[0].host = proto_cstr(brk_config_advertised_host(l));
	resp.brokers[0].port = l ? l->port : 9092;
	resp.brokers_count = 1;
	resp.cluster_id = server.cluster_id[0] ? proto_cstr(server.cluster_id) : proto_str_of(NULL, -1);
	resp.controller_id = ctl_controller_id(server.ctl);
	if (v >= 8 && v <= 10 && m.include_cluster_authorized_operations)
		resp.cluster_authorized_operations = CLUSTER_ALL_OPERATIONS;

	/* v0: an empty list means every topic; v1+: null means every topic. */
	bool all = m.topics_count < 0 || (v == 0 && m.topics_count == 0);
	bool may_create = (v < 4 || m.allow_auto_topic_creation) &&
			  server.cfg.auto_create_topics_enable;
	int32_t n = all ? ctl_topic_count(server.ctl) : m.topics_count;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	resp.topics_count = n;
	for (int32_t i = 0; i < n; i++) {
		MetadataResponse_MetadataResponseTopic *rt = &resp.topics[i];
		MetadataResponse_MetadataResponseTopic_init(rt);
		rt->partitions_count = 0;
		if (all) {
			if (fill_topic(req, &m, rt, ctl_topic_at(server.ctl, i)))
				return BRK_CLOSE;
			continue;
		}
		const MetadataRequest_MetadataRequestTopic *q = &m.topics[i];
		rt->name = q->name;
		rt->topic_id = q->topic_id;
		if (q->name.len < 0) {
			/* v10+: by topic id */
			const ctl_topic *t = ctl_find_topic_by_id(server.ctl, q->topic_id.b);
			if (!t) {
				rt->error_code = KERR_UNKNOWN_TOPIC_ID;
				if (v < 12)
					rt->name = proto_cstr(""); /* name not nullable before v12 */
				continue;
			}
			if (fill_topic(req, &m, rt, t))
				return BRK_CLOSE;
			continue;
		}
		memset(rt->topic_id.b, 0, 16);
		if (ctl_validate_topic_name(q->name.ptr, q->name.len)) {
			rt->error_code = KERR_INVALID_TOPIC_EXCEPTION;
			continue;
		}
		const ctl_topic *t = ctl_find_topic(server.ctl, q->name.ptr, q->name.len);
		if (!t && may_create) {
			int err = auto_create(q->name.ptr, q->name.len, &t);
			if (err == KERR_TOPIC_ALREADY_EXISTS)
				t = ctl_find_topic(server.ctl, q->name.ptr, q->name.len);
			else if (err) {
				rt->error_code = (int16_t)err;
				continue;
			}
		}
		if (!t) {
			rt->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			continue;
		}
		if (fill_topic(req, &m, rt, t))
			return BRK_CLOSE;
	}
	if (MetadataResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
