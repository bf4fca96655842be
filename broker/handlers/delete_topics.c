/*
 * delete_topics.c - DeleteTopics (API key 20), versions 1-6: by name
 * (TopicNames, v1-5; Topics[].Name, v6) or by topic id (Topics[].TopicId,
 * v6). As Kafka's ControllerApis.deleteTopics:
 *  - delete.topic.enable=false: TOPIC_DELETION_DISABLED (INVALID_REQUEST
 *    before v3);
 *  - neither or both of name and id: INVALID_REQUEST;
 *  - a name or id given twice: INVALID_REQUEST "Duplicate topic name/id.";
 *  - unknown: UNKNOWN_TOPIC_OR_PARTITION by name, UNKNOWN_TOPIC_ID by id.
 *  - this broker not the controller: NOT_CONTROLLER (Kafka's ZooKeeper-mode
 *    KafkaApis answers DeleteTopics only on the controller).
 * The controller mutation quota (KIP-599, ZkAdminManager.deleteTopics): the
 * partitions of a topic about to be deleted are counted; from v5 a topic
 * arriving while the quota is exhausted gets THROTTLING_QUOTA_EXCEEDED and
 * stays, before v5 it is deleted; the answer carries the throttle time and
 * the connection is muted that long.
 * The deletions go to the controller; the answer waits for its results up
 * to TimeoutMs. The data is removed and fetches waiting on the topic are
 * answered (when the controller's event reaches the partition registry)
 * before the response.
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

typedef struct entry {
	proto_str name;     /* len -1 when by id */
	proto_uuid id;      /* zero when by name */
} entry;

static bool uuid_zero(const proto_uuid *u)
{
	static const uint8_t zero[16];
	return memcmp(u->b, zero, 16) == 0;
}

static uint32_t entry_hash(const entry *e)
{
	const uint8_t *p = e->name.len >= 0 ? (const uint8_t *)e->name.ptr : e->id.b;
	int32_t n = e->name.len >= 0 ? e->name.len : 16;
	uint32_t h = e->name.len >= 0 ? 2166136261u : 0x9747b28cu;
	for (int32_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static bool entry_eq(const entry *a, const entry *b)
{
	if ((a->name.len >= 0) != (b->name.len >= 0))
		return false;
	if (a->name.len >= 0)
		return a->name.len == b->name.len && memcmp(a->name.ptr, b->name.ptr, (size_t)a->name.len) == 0;
	return memcmp(a->id.b, b->id.b, 16) == 0;
}

static void result_error(DeleteTopicsResponse_DeletableTopicResult *r, int err, const char *msg)
{
	r->error_code = (int16_t)err;
	r->error_message = msg ? proto_cstr(msg) : proto_str_of(NULL, -1);
}

typedef struct delete_state {
	DeleteTopicsResponse resp;
	brk_mutation_quota mq; /* KIP-599 */
} delete_state;

/* The results are in (or the timeout passed): the data of a deleted topic
 * is already gone and fetches waiting on it answered (the controller's
 * event comes before the result). */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	delete_state *st = arg;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const ctl_result *res = brk_ctl_wait_result(w, i);
		if (!res)
			continue;
		DeleteTopicsResponse_DeletableTopicResult *r = &st->resp.responses[i];
		if (res->error == KERR_NONE) {
			result_error(r, KERR_NONE, NULL);
			continue;
		}
		char *msg = res->msg[0] ? proto_arena_alloc(req->arena, strlen(res->msg) + 1) : NULL;
		if (msg)
			strcpy(msg, res->msg);
		result_error(r, res->error, msg ? msg : "The topic could not be deleted.");
	}
	st->resp.throttle_time_ms = brk_quota_mutation_respond(req, &st->mq);
	return DeleteTopicsResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_delete_topics(brk_request *req)
{
	int16_t v = req->api_version;
	DeleteTopicsRequest m;
	DeleteTopicsRequest_init(&m);
	if (DeleteTopicsRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;

	int32_t n = v >= 6 ? m.topics_count : m.topic_names_count;
	if (n < 0)
		n = 0;
	entry *e = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*e));
	bool *dup = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(bool));
	uint32_t cap = 16;
	while (cap < (uint32_t)n * 2)
		cap <<= 1;
	int32_t *slot = proto_arena_alloc(req->arena, cap * sizeof(int32_t));
	DeleteTopicsResponse resp;
	DeleteTopicsResponse_init(&resp);
	resp.responses = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.responses));
	if (!e || !dup || !slot || !resp.responses)
		return BRK_CLOSE;
	resp.responses_count = n;
	delete_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n);
	if (!st || !w)
		return BRK_CLOSE;
	brk_quota_mutation_begin(req, &st->mq, 5);

	for (int32_t i = 0; i < n; i++) {
		if (v >= 6) {
			e[i].name = m.topics[i].name;
			e[i].id = m.topics[i].topic_id;
		} else {
			e[i].name = m.topic_names[i];
		}
		if (e[i].name.len >= 0 && !uuid_zero(&e[i].id))
			continue; /* both: refused below, not a key */
		if (e[i].name.len < 0 && uuid_zero(&e[i].id))
			continue;
		uint32_t h = entry_hash(&e[i]) & (cap - 1);
		while (slot[h]) {
			int32_t j = slot[h] - 1;
			if (entry_eq(&e[j], &e[i])) {
				dup[i] = dup[j] = true;
				break;
			}
			h = (h + 1) & (cap - 1);
		}
		if (!slot[h])
			slot[h] = i + 1;
	}

	for (int32_t i = 0; i < n; i++) {
		DeleteTopicsResponse_DeletableTopicResult *r = &resp.responses[i];
		DeleteTopicsResponse_DeletableTopicResult_init(r);
		r->name = e[i].name;
		r->topic_id = e[i].id;
		if (v < 6 && r->name.len < 0)
			r->name = proto_cstr("");
		bool by_name = e[i].name.len >= 0;
		if (!server.cfg.delete_topic_enable) {
			result_error(r, v >= 3 ? KERR_TOPIC_DELETION_DISABLED : KERR_INVALID_REQUEST,
				     "Topic deletion is disabled.");
			continue;
		}
		if (!by_name && uuid_zero(&e[i].id)) {
			result_error(r, KERR_INVALID_REQUEST, "Neither topic name nor id were specified.");
			continue;
		}
		if (by_name && !uuid_zero(&e[i].id)) {
			result_error(r, KERR_INVALID_REQUEST, "You may not specify both topic name and topic id.");
			continue;
		}
		if (dup[i]) {
			result_error(r, KERR_INVALID_REQUEST, by_name ? "Duplicate topic name." : "Duplicate topic id.");
			continue;
		}
		if (!brk_cluster_is_controller(&server.cluster)) {
			result_error(r, KERR_NOT_CONTROLLER, "This is not the correct controller for this cluster.");
			continue;
		}
		/* KafkaApis.handleDeleteTopicsRequest: DESCRIBE and DELETE on the
		 * topic (checked before whether it exists when named). */
		if (by_name && !(brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, e[i].name,
						     CTL_ACL_OP_DESCRIBE) &&
				 brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, e[i].name,
						     CTL_ACL_OP_DELETE))) {
			result_error(r, KERR_TOPIC_AUTHORIZATION_FAILED, "Authorization failed.");
			continue;
		}
		brk_topic *t = by_name ? brk_topic_find(&server.partitions, e[i].name.ptr, e[i].name.len)
				       : brk_topic_find_by_id(&server.partitions, e[i].id.b);
		if (t && !by_name &&
		    !(brk_acl_permits_topic(req, t, e[i].name, CTL_ACL_OP_DESCRIBE) &&
		      brk_acl_permits_topic(req, t, e[i].name, CTL_ACL_OP_DELETE))) {
			result_error(r, KERR_TOPIC_AUTHORIZATION_FAILED, "Authorization failed.");
			continue;
		}
		if (!t) {
			if (by_name)
				result_error(r, KERR_UNKNOWN_TOPIC_OR_PARTITION,
					     "This server does not host this topic-partition.");
			else
				result_error(r, KERR_UNKNOWN_TOPIC_ID, "This server does not host this topic ID.");
			continue;
		}
		if (brk_quota_mutation_take(req, &st->mq, (int32_t)t->npartitions) != KERR_NONE) {
			result_error(r, KERR_THROTTLING_QUOTA_EXCEEDED,
				     "The throttling quota has been exceeded.");
			continue;
		}
		/* The name and id outlive the topic: copy them first. */
		int32_t len = t->name_len;
		char *name = proto_arena_alloc(req->arena, (size_t)len + 1);
		if (!name)
			return BRK_CLOSE;
		memcpy(name, t->name, (size_t)len + 1);
		memcpy(r->topic_id.b, t->id, 16);
		r->name = proto_str_of(name, len);
		ctl_op op = { .type = CTL_OP_DELETE_TOPIC };
		memcpy(op.topic, name, (size_t)len + 1);
		if (brk_ctl_wait_submit(w, i, &op) != 0)
			result_error(r, KERR_UNKNOWN_SERVER_ERROR, NULL);
	}
	st->resp = resp;
	return brk_ctl_wait_start(w, m.timeout_ms > 0 ? m.timeout_ms : BRK_ADMIN_WAIT_MS, respond, st);
}
