/*
 * create_partitions.c - CreatePartitions (API key 37), versions 0-3
 * (KIP-195): raise the partition count of existing topics. As Kafka 4's
 * ControllerApis.createPartitions and ReplicationControlManager:
 *  - TimeoutMs <= 0: the controller's deadline has passed before the
 *    operation runs, so every topic of the request gets REQUEST_TIMED_OUT
 *    and nothing changes (a positive timeout is always met: the partitions
 *    are created before the answer);
 *  - a name given more than once: one result for it, INVALID_REQUEST
 *    "Duplicate topic name.", and it is not grown;
 *  - this broker not the controller: NOT_CONTROLLER (Kafka's ZooKeeper-mode
 *    KafkaApis answers CreatePartitions only on the controller);
 *  - otherwise the controller's checks and messages (CTL_OP_CREATE_PARTITIONS):
 *    unknown topic UNKNOWN_TOPIC_OR_PARTITION, a count that is not an
 *    increase INVALID_PARTITIONS, assignments that do not fit the live
 *    brokers or the topic INVALID_REPLICA_ASSIGNMENT; the answer waits for
 *    its result up to TimeoutMs (the new partitions' logs are open by then).
 *    On a single node (the local back end) the new logs are made first: a
 *    log that cannot be made is KAFKA_STORAGE_ERROR and nothing changes;
 *    a growth the controller refuses loses the logs made for it;
 *  - ValidateOnly: every check, nothing changes.
 * Internal topics can be grown as in Kafka (which does not refuse it either;
 * growing __consumer_offsets moves groups to other partitions). One result
 * per distinct name, in the order of the request.
 * The controller mutation quota (KIP-599, ZkAdminManager.createPartitions):
 * the partitions a growth adds are counted before it is submitted; from v3
 * a topic arriving while the quota is exhausted gets
 * THROTTLING_QUOTA_EXCEEDED and is not grown, before v3 it is grown; the
 * answer carries the throttle time and the connection is muted that long.
 * Here the count is taken when the topic exists and the new count is an
 * increase (the controller checks the assignments after it).
 */
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static bool same_name(proto_str a, proto_str b)
{
	return a.len == b.len && a.len >= 0 && memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

/*
 * For each topic entry: 0 when it is the first with its name and the name
 * is not repeated, 1 when it is the first of a repeated name, 2 when an
 * earlier entry has the same name. NULL when the arena is full.
 */
static uint8_t *classify_names(brk_request *req, const CreatePartitionsRequest *m)
{
	int32_t n = m->topics_count;
	uint8_t *kind = proto_arena_alloc(req->arena, (size_t)(n ? n : 1));
	uint32_t cap = 16;
	while (cap < (uint32_t)n * 2)
		cap <<= 1;
	int32_t *slot = proto_arena_alloc(req->arena, cap * sizeof(int32_t));
	if (!kind || !slot)
		return NULL;
	for (int32_t i = 0; i < n; i++) {
		proto_str s = m->topics[i].name;
		uint32_t h = 2166136261u; /* FNV-1a */
		for (int32_t k = 0; k < s.len; k++) {
			h ^= (uint8_t)s.ptr[k];
			h *= 16777619u;
		}
		h &= cap - 1;
		while (slot[h]) {
			int32_t j = slot[h] - 1;
			if (same_name(m->topics[j].name, s)) {
				kind[j] = 1;
				kind[i] = 2;
				break;
			}
			h = (h + 1) & (cap - 1);
		}
		if (!slot[h])
			slot[h] = i + 1;
	}
	return kind;
}

static int set_message(brk_request *req, CreatePartitionsResponse_CreatePartitionsTopicResult *r,
		       const char *msg)
{
	if (!msg || !msg[0]) {
		r->error_message = proto_str_of(NULL, -1);
		return 0;
	}
	size_t n = strlen(msg);
	char *s = proto_arena_alloc(req->arena, n + 1);
	if (!s)
		return -1;
	memcpy(s, msg, n + 1);
	r->error_message = proto_cstr(s);
	return 0;
}

/* Check one topic and submit its growth to the controller (slot k).
 * Returns 0, or -1 when the arena is full. */
static int grow_one(brk_request *req, const CreatePartitionsRequest *m,
		    const CreatePartitionsRequest_CreatePartitionsTopic *q,
		    CreatePartitionsResponse_CreatePartitionsTopicResult *r, brk_ctl_wait *w,
		    int32_t k, int32_t *prepared, brk_mutation_quota *mq)
{
	r->name = q->name;
	if (ctl_validate_topic_name(q->name.ptr, q->name.len)) {
		/* No topic can have this name. */
		r->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return set_message(req, r, NULL);
	}
	if (!brk_cluster_is_controller(&server.cluster)) {
		r->error_code = KERR_NOT_CONTROLLER;
		return set_message(req, r, "This is not the correct controller for this cluster.");
	}
	/* KafkaApis.handleCreatePartitionsRequest: ALTER on the topic. */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, q->name, CTL_ACL_OP_ALTER)) {
		r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
		return set_message(req, r, "Authorization failed.");
	}
	brk_topic *t = brk_topic_find(&server.partitions, q->name.ptr, q->name.len);
	ctl_replica_list *as = NULL;
	int32_t nas = q->assignments_count;
	if (nas >= 0) {
		as = proto_arena_alloc(req->arena, (size_t)(nas ? nas : 1) * sizeof(*as));
		if (!as)
			return -1;
		for (int32_t i = 0; i < nas; i++) {
			as[i].ids = q->assignments[i].broker_ids;
			as[i].n = q->assignments[i].broker_ids_count;
		}
	} else {
		nas = 0;
	}
	ctl_op op = { .type = CTL_OP_CREATE_PARTITIONS, .partitions = q->count, .assignments = as,
		      .nassignments = nas, .validate_only = m->validate_only };
	memcpy(op.topic, q->name.ptr, (size_t)q->name.len);
	if (!m->validate_only && t && q->count > t->npartitions &&
	    brk_quota_mutation_take(req, mq, q->count - t->npartitions) != KERR_NONE) {
		r->error_code = KERR_THROTTLING_QUOTA_EXCEEDED;
		return set_message(req, r, "The throttling quota has been exceeded.");
	}
	if (server.cluster.local && !m->validate_only && t && q->count > t->npartitions &&
	    q->count <= CTL_MAX_PARTITIONS && (!as || nas == q->count - t->npartitions)) {
		/* One node: the new logs first, so a log that cannot be made
		 * refuses the growth before the controller records it. */
		if (brk_partitions_prepare_logs(&server.partitions, t->name, t->id, t->configs,
						t->nconfigs, t->npartitions, q->count) != 0) {
			r->error_code = KERR_KAFKA_STORAGE_ERROR;
			return set_message(req, r, "The logs of the new partitions could not be created.");
		}
		prepared[k] = (int32_t)t->npartitions;
	}
	if (brk_ctl_wait_submit(w, k, &op) != 0)
		r->error_code = KERR_UNKNOWN_SERVER_ERROR;
	return set_message(req, r, NULL);
}

typedef struct grow_state {
	CreatePartitionsResponse resp;
	int32_t *prepared; /* per result: the first new partition whose log was made, -1 none */
	int32_t *counts;   /* per result: the count asked for */
	brk_mutation_quota mq; /* KIP-599 */
} grow_state;

/* The controller's results are in (or the timeout passed). */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	grow_state *st = arg;
	CreatePartitionsResponse *resp = &st->resp;
	for (int32_t k = 0; k < resp->results_count; k++) {
		const ctl_result *res = brk_ctl_wait_result(w, k);
		if (!res)
			continue;
		CreatePartitionsResponse_CreatePartitionsTopicResult *r = &resp->results[k];
		r->error_code = res->error;
		if (res->error && st->prepared[k] >= 0) {
			char name[CTL_TOPIC_NAME_MAX + 1];
			snprintf(name, sizeof(name), "%.*s", (int)r->name.len, r->name.ptr);
			brk_partitions_discard_logs(&server.partitions, name, st->prepared[k],
						    st->counts[k]);
		}
		if (set_message(req, r, res->error ? res->msg : NULL))
			return BRK_CLOSE;
	}
	resp->throttle_time_ms = brk_quota_mutation_respond(req, &st->mq);
	return CreatePartitionsResponse_encode(req->out, req->api_version, resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_create_partitions(brk_request *req)
{
	CreatePartitionsRequest m;
	CreatePartitionsRequest_init(&m);
	if (CreatePartitionsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	if (m.topics_count < 0)
		m.topics_count = 0;
	int32_t n = m.topics_count;

	grow_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n);
	if (!st || !w)
		return BRK_CLOSE;
	st->prepared = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(int32_t));
	st->counts = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(int32_t));
	if (!st->prepared || !st->counts)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++)
		st->prepared[i] = -1;
	brk_quota_mutation_begin(req, &st->mq, 3);
	CreatePartitionsResponse resp;
	CreatePartitionsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.results));
	if (!resp.results)
		return BRK_CLOSE;
	if (m.timeout_ms <= 0) {
		/* Kafka: CreatePartitionsRequest.getErrorResponse, one result
		 * per entry of the request. */
		for (int32_t i = 0; i < n; i++) {
			CreatePartitionsResponse_CreatePartitionsTopicResult *r = &resp.results[i];
			CreatePartitionsResponse_CreatePartitionsTopicResult_init(r);
			r->name = m.topics[i].name;
			r->error_code = KERR_REQUEST_TIMED_OUT;
		}
		resp.results_count = n;
	} else {
		uint8_t *kind = classify_names(req, &m);
		if (!kind)
			return BRK_CLOSE;
		int32_t k = 0;
		for (int32_t i = 0; i < n; i++) {
			if (kind[i] == 2)
				continue;
			CreatePartitionsResponse_CreatePartitionsTopicResult *r = &resp.results[k++];
			CreatePartitionsResponse_CreatePartitionsTopicResult_init(r);
			if (kind[i] == 1) {
				r->name = m.topics[i].name;
				r->error_code = KERR_INVALID_REQUEST;
				if (set_message(req, r, "Duplicate topic name."))
					return BRK_CLOSE;
				continue;
			}
			st->counts[k - 1] = m.topics[i].count;
			if (grow_one(req, &m, &m.topics[i], r, w, k - 1, st->prepared, &st->mq))
				return BRK_CLOSE;
		}
		resp.results_count = k;
	}
	st->resp = resp;
	return brk_ctl_wait_start(w, m.timeout_ms, respond, st);
}
