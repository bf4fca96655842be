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
 *  - otherwise ctl_add_partitions' checks and messages: unknown topic
 *    UNKNOWN_TOPIC_OR_PARTITION, a count that is not an increase
 *    INVALID_PARTITIONS, assignments that do not fit the live brokers or the
 *    topic INVALID_REPLICA_ASSIGNMENT;
 *  - ValidateOnly: every check, nothing changes.
 * Internal topics can be grown as in Kafka (which does not refuse it either;
 * growing __consumer_offsets moves groups to other partitions). One result
 * per distinct name, in the order of the request. No quota
 * (THROTTLING_QUOTA_EXCEEDED, v3) and no authorization on this broker.
 */
#include <string.h>

#include "broker/partitions.h"
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

/* Grow one topic. Returns 0, or -1 when the arena is full. */
static int grow_one(brk_request *req, const CreatePartitionsRequest *m,
		    const CreatePartitionsRequest_CreatePartitionsTopic *q,
		    CreatePartitionsResponse_CreatePartitionsTopicResult *r)
{
	char msg[512] = "";
	r->name = q->name;
	if (ctl_validate_topic_name(q->name.ptr, q->name.len)) {
		/* No topic can have this name. */
		r->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return set_message(req, r, NULL);
	}
	char *name = proto_arena_alloc(req->arena, (size_t)q->name.len + 1);
	if (!name)
		return -1;
	memcpy(name, q->name.ptr, (size_t)q->name.len);
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
	r->error_code = (int16_t)brk_add_partitions(name, q->count, as, nas, m->validate_only, msg,
						    sizeof(msg));
	return set_message(req, r, msg);
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
			if (grow_one(req, &m, &m.topics[i], r))
				return BRK_CLOSE;
		}
		resp.results_count = k;
	}
	if (CreatePartitionsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
