/*
 * create_topics.c - CreateTopics (API key 19), versions 2-7. Per topic, in
 * Kafka's order (ControllerApis.createTopics, ReplicationControlManager):
 *  - a name given more than once in the request: INVALID_REQUEST for each;
 *  - name rules or a '.'/'_' collision: INVALID_TOPIC_EXCEPTION;
 *  - already there: TOPIC_ALREADY_EXISTS;
 *  - manual assignments together with a partition count or replication
 *    factor: INVALID_REQUEST; assignments not numbered 0..n-1, empty,
 *    of unequal sizes, with duplicate or unknown brokers:
 *    INVALID_REPLICA_ASSIGNMENT;
 *  - partitions -1 = num.partitions, replication factor -1 =
 *    default.replication.factor; other values below 1: INVALID_PARTITIONS /
 *    INVALID_REPLICATION_FACTOR (also above the broker count);
 *  - configs: only Kafka's topic config names with valid values, else
 *    INVALID_CONFIG with Kafka's message;
 *  - this broker not the controller: NOT_CONTROLLER (Kafka's ZooKeeper-mode
 *    KafkaApis answers CreateTopics only on the controller);
 *  - then the controller's own checks (CTL_OP_CREATE_TOPIC), whose result
 *    the answer waits for, up to TimeoutMs. On a single node (the local
 *    back end) the logs are made first: a log that cannot be made is
 *    KAFKA_STORAGE_ERROR and nothing of the topic stays; a topic the
 *    controller refuses loses the logs made for it;
 *  - the controller mutation quota (KIP-599, ZkAdminManager.createTopics):
 *    the partitions of a topic about to be created are counted; from v6 a
 *    topic arriving while the quota is exhausted gets
 *    THROTTLING_QUOTA_EXCEEDED and is not created, before v6 it is
 *    created; the answer carries the throttle time and the connection is
 *    muted that long;
 *  - validate_only: all checks, nothing created (nothing counted).
 * v5+ answers the partition count, replication factor and every topic
 * config with its effective value; v7+ the topic id.
 */
#include <stdio.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/dynamic_config.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/topic_config.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static char *arena_strdup(proto_arena *a, const char *p, int32_t len)
{
	char *s = proto_arena_alloc(a, (size_t)(len > 0 ? len : 0) + 1);
	if (s && len > 0)
		memcpy(s, p, (size_t)len);
	return s;
}

static char *arena_msg(proto_arena *a, const char *msg)
{
	return arena_strdup(a, msg, (int32_t)strlen(msg));
}

static bool same_name(proto_str a, proto_str b)
{
	return a.len == b.len && a.len >= 0 && memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

/* Check assignments; sets *partitions and *rf. Returns a Kafka error code. */
static int check_assignments(brk_request *req, const CreateTopicsRequest_CreatableTopic *q,
			     int32_t *partitions, int16_t *rf, char *msg, size_t msgsize)
{
	int32_t n = q->assignments_count;
	int32_t size = -1;
	const CreateTopicsRequest_CreatableReplicaAssignment **by_index =
		proto_arena_alloc(req->arena, (size_t)n * sizeof(*by_index));
	if (!by_index)
		return -1;
	for (int32_t k = 0; k < n; k++) {
		int32_t pi = q->assignments[k].partition_index;
		if (pi < 0 || pi >= n || by_index[pi]) {
			snprintf(msg, msgsize, "Partitions should be a consecutive 0-based integer sequence");
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		by_index[pi] = &q->assignments[k];
	}
	for (int32_t i = 0; i < n; i++) {
		const CreateTopicsRequest_CreatableReplicaAssignment *as = by_index[i];
		if (as->broker_ids_count <= 0) {
			snprintf(msg, msgsize, "The manual partition assignment includes an empty replica list.");
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		if (size >= 0 && as->broker_ids_count != size) {
			snprintf(msg, msgsize, "All partitions should have the same number of replicas");
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		size = as->broker_ids_count;
		if (size > server.cluster.nbrokers) {
			snprintf(msg, msgsize, "The manual partition assignment includes more replicas "
				 "than there are registered brokers.");
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		for (int32_t b = 0; b < size; b++) {
			int32_t id = as->broker_ids[b];
			if (!brk_cluster_alive(&server.cluster, id)) {
				snprintf(msg, msgsize, "The manual partition assignment includes broker %d, "
					 "but no such broker is registered.", id);
				return KERR_INVALID_REPLICA_ASSIGNMENT;
			}
			for (int32_t c = 0; c < b; c++)
				if (as->broker_ids[c] == id) {
					snprintf(msg, msgsize, "The manual partition assignment includes the "
						 "broker %d more than once.", id);
					return KERR_INVALID_REPLICA_ASSIGNMENT;
				}
		}
	}
	*partitions = n;
	*rf = (int16_t)size;
	return KERR_NONE;
}

/* Mark the topics whose name appears more than once (hash set in the arena). */
static bool *find_duplicates(brk_request *req, const CreateTopicsRequest *m)
{
	int32_t n = m->topics_count;
	bool *dup = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(bool));
	uint32_t cap = 16;
	while (cap < (uint32_t)n * 2)
		cap <<= 1;
	int32_t *slot = proto_arena_alloc(req->arena, cap * sizeof(int32_t));
	if (!dup || !slot)
		return NULL;
	for (int32_t i = 0; i < n; i++) {
		proto_str s = m->topics[i].name;
		uint32_t h = 2166136261u;
		for (int32_t k = 0; k < s.len; k++) {
			h ^= (uint8_t)s.ptr[k];
			h *= 16777619u;
		}
		h &= cap - 1;
		while (slot[h]) {
			int32_t j = slot[h] - 1;
			if (same_name(m->topics[j].name, s)) {
				dup[i] = dup[j] = true;
				break;
			}
			h = (h + 1) & (cap - 1);
		}
		if (!slot[h])
			slot[h] = i + 1;
	}
	return dup;
}

/* The topic's configs as DescribeConfigs shows them (v5+, KIP-525): value
 * and source from brk_topic_config_entry_at. */
static int fill_configs(brk_request *req, CreateTopicsResponse_CreatableTopicResult *r,
			const ctl_config_entry *ov, int32_t nov)
{
	int n = brk_topic_config_count();
	r->configs = proto_arena_alloc(req->arena, (size_t)n * sizeof(*r->configs));
	brk_topic_config_entry *te = proto_arena_alloc(req->arena, sizeof(*te));
	if (!r->configs || !te)
		return -1;
	brk_config_layers layers;
	brk_dynamic_config_layers(&server.dynamic, &layers);
	r->configs_count = 0;
	for (int i = 0; i < n; i++) {
		if (brk_topic_config_entry_at(&layers, ov, nov, i, te) != 0)
			break;
		CreateTopicsResponse_CreatableTopicConfigs *c = &r->configs[r->configs_count++];
		CreateTopicsResponse_CreatableTopicConfigs_init(c);
		c->name = proto_cstr(te->name);
		char *v = arena_msg(req->arena, te->value);
		if (!v)
			return -1;
		c->value = proto_cstr(v);
		c->read_only = false;
		c->is_sensitive = false;
		c->config_source = te->source;
	}
	return 0;
}

typedef struct create_state {
	CreateTopicsResponse resp;
	ctl_config_entry **cfg; /* per topic, the overrides given (for the answer) */
	int32_t *ncfg;
	int32_t *prepared;      /* per topic, the logs made before the controller was asked */
	brk_mutation_quota mq;  /* KIP-599 */
} create_state;

/* A topic whose name collides with name (Kafka's Topic.hasCollision). */
static const brk_topic *colliding_topic(const char *name)
{
	const brk_topic *t;
	for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)); i++)
		if (ctl_topic_names_collide(t->name, name))
			return t;
	return NULL;
}

/* Check topic idx and submit its creation to the controller (slot idx).
 * Returns 0, or -1 when the arena is full. */
static int create_one(brk_request *req, const CreateTopicsRequest *m, int32_t idx, bool dup,
		      CreateTopicsResponse_CreatableTopicResult *r, create_state *st,
		      brk_ctl_wait *w)
{
	const CreateTopicsRequest_CreatableTopic *q = &m->topics[idx];
	char msg[512] = "";
	int err = KERR_NONE;
	r->name = q->name;
	r->error_message = proto_str_of(NULL, -1);

	if (dup) {
		err = KERR_INVALID_REQUEST;
		snprintf(msg, sizeof(msg), "Found multiple entries for this topic.");
		goto out;
	}
	/* KafkaApis.handleCreateTopicsRequest: CREATE on the cluster or the topic. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_CREATE) &&
	    !brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, q->name, CTL_ACL_OP_CREATE)) {
		err = KERR_TOPIC_AUTHORIZATION_FAILED;
		snprintf(msg, sizeof(msg), "Authorization failed.");
		goto out;
	}
	if (ctl_validate_topic_name(q->name.ptr, q->name.len)) {
		err = KERR_INVALID_TOPIC_EXCEPTION;
		snprintf(msg, sizeof(msg), "Topic name is invalid: '%.*s' (1 to %d characters of "
			 "[a-zA-Z0-9._-], not '.' or '..')", q->name.len > 0 ? (int)q->name.len : 0,
			 q->name.ptr ? q->name.ptr : "", CTL_TOPIC_NAME_MAX);
		goto out;
	}
	char *name = arena_strdup(req->arena, q->name.ptr, q->name.len);
	if (!name)
		return -1;
	if (brk_topic_find(&server.partitions, q->name.ptr, q->name.len)) {
		err = KERR_TOPIC_ALREADY_EXISTS;
		snprintf(msg, sizeof(msg), "Topic '%s' already exists.", name);
		goto out;
	}
	const brk_topic *other = colliding_topic(name);
	if (other) {
		err = KERR_INVALID_TOPIC_EXCEPTION;
		snprintf(msg, sizeof(msg), "Topic '%s' collides with existing topic: %s", name, other->name);
		goto out;
	}

	int32_t partitions = q->num_partitions;
	int16_t rf = q->replication_factor;
	if (q->assignments_count > 0) {
		if (partitions != -1 || rf != -1) {
			err = KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg), "Both numPartitions or replicationFactor and "
				 "replicasAssignments were set. Both cannot be used at the same time.");
			goto out;
		}
		err = check_assignments(req, q, &partitions, &rf, msg, sizeof(msg));
		if (err < 0)
			return -1;
		if (err)
			goto out;
	} else {
		if (partitions == -1)
			partitions = server.cfg.num_partitions;
		if (rf == -1)
			rf = server.cfg.default_replication_factor;
		if (partitions <= 0) {
			err = KERR_INVALID_PARTITIONS;
			snprintf(msg, sizeof(msg), "Number of partitions was set to an invalid non-positive value.");
			goto out;
		}
		if (rf <= 0) {
			err = KERR_INVALID_REPLICATION_FACTOR;
			snprintf(msg, sizeof(msg), "Replication factor must be larger than 0, or -1 to use the default value.");
			goto out;
		}
		if (rf > server.cluster.nbrokers) {
			err = KERR_INVALID_REPLICATION_FACTOR;
			snprintf(msg, sizeof(msg), "Unable to replicate the partition %d time(s): The target "
				 "replication factor of %d cannot be reached because only %d broker(s) are registered.",
				 rf, rf, server.cluster.nbrokers);
			goto out;
		}
	}

	int32_t nc = q->configs_count > 0 ? q->configs_count : 0;
	ctl_config_entry *cfg = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*cfg));
	if (!cfg)
		return -1;
	for (int32_t i = 0; i < nc; i++) {
		const CreateTopicsRequest_CreatableTopicConfig *c = &q->configs[i];
		if (c->value.len < 0) {
			err = KERR_INVALID_CONFIG;
			snprintf(msg, sizeof(msg), "Null value not supported for topic configs: %.*s",
				 c->name.len > 0 ? (int)c->name.len : 0, c->name.ptr ? c->name.ptr : "");
			goto out;
		}
		err = brk_topic_config_check(c->name.ptr, c->name.len, c->value.ptr, c->value.len,
					     msg, sizeof(msg));
		if (err)
			goto out;
		cfg[i].name = arena_strdup(req->arena, c->name.ptr, c->name.len);
		cfg[i].value = arena_strdup(req->arena, c->value.ptr, c->value.len);
		if (!cfg[i].name || !cfg[i].value)
			return -1;
	}

	if (!brk_cluster_is_controller(&server.cluster)) {
		err = KERR_NOT_CONTROLLER;
		snprintf(msg, sizeof(msg), "This is not the correct controller for this cluster.");
		goto out;
	}
	ctl_replica_list *as = NULL;
	if (q->assignments_count > 0) {
		as = proto_arena_alloc(req->arena, (size_t)q->assignments_count * sizeof(*as));
		if (!as)
			return -1;
		for (int32_t k = 0; k < q->assignments_count; k++) {
			const CreateTopicsRequest_CreatableReplicaAssignment *a = &q->assignments[k];
			as[a->partition_index].ids = a->broker_ids;
			as[a->partition_index].n = a->broker_ids_count;
		}
	}
	ctl_op op = { .type = CTL_OP_CREATE_TOPIC, .partitions = partitions,
		      .replication_factor = rf, .assignments = as,
		      .nassignments = as ? q->assignments_count : 0, .configs = cfg, .nconfigs = nc,
		      .validate_only = m->validate_only };
	memcpy(op.topic, name, strlen(name) + 1);
	if (!m->validate_only && brk_quota_mutation_take(req, &st->mq, partitions) != KERR_NONE) {
		err = KERR_THROTTLING_QUOTA_EXCEEDED;
		snprintf(msg, sizeof(msg), "The throttling quota has been exceeded.");
		goto out;
	}
	if (server.cluster.local && !m->validate_only) {
		/* One node: the logs first, so a log that cannot be made
		 * refuses the topic before the controller records it. */
		if (ctl_random_uuid(op.topic_id) != 0 ||
		    brk_partitions_prepare_logs(&server.partitions, name, op.topic_id, cfg, nc, 0,
						partitions) != 0) {
			err = KERR_KAFKA_STORAGE_ERROR;
			snprintf(msg, sizeof(msg), "The topic's metadata or logs could not be written.");
			goto out;
		}
		st->prepared[idx] = partitions;
	}
	if (brk_ctl_wait_submit(w, idx, &op) != 0)
		return -1;
	r->error_code = KERR_NONE;
	r->num_partitions = partitions;
	r->replication_factor = rf;
	st->cfg[idx] = cfg;
	st->ncfg[idx] = nc;
	return 0;
out:
	r->error_code = (int16_t)err;
	if (msg[0]) {
		char *s = arena_msg(req->arena, msg);
		if (!s)
			return -1;
		r->error_message = proto_cstr(s);
	}
	return 0;
}

/* The controller's results are in (or the timeout passed). */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	create_state *st = arg;
	for (int32_t i = 0; i < st->resp.topics_count; i++) {
		const ctl_result *res = brk_ctl_wait_result(w, i);
		if (!res)
			continue;
		CreateTopicsResponse_CreatableTopicResult *r = &st->resp.topics[i];
		int16_t err = res->error;
		const char *msg = res->msg;
		if (err && st->prepared[i] > 0) {
			/* refused or not recorded: the logs made for it go */
			char name[CTL_TOPIC_NAME_MAX + 1];
			snprintf(name, sizeof(name), "%.*s", (int)r->name.len, r->name.ptr);
			brk_partitions_discard_logs(&server.partitions, name, 0, st->prepared[i]);
		}
		if (err) {
			r->error_code = err;
			r->num_partitions = -1;
			r->replication_factor = -1;
			if (msg[0]) {
				char *s = arena_msg(req->arena, msg);
				if (!s)
					return BRK_CLOSE;
				r->error_message = proto_cstr(s);
			}
			continue;
		}
		memcpy(r->topic_id.b, res->topic_id, 16);
		if (fill_configs(req, r, st->cfg[i], st->ncfg[i]))
			return BRK_CLOSE;
	}
	st->resp.throttle_time_ms = brk_quota_mutation_respond(req, &st->mq);
	return CreateTopicsResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_create_topics(brk_request *req)
{
	CreateTopicsRequest m;
	CreateTopicsRequest_init(&m);
	if (CreateTopicsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	CreateTopicsResponse resp;
	CreateTopicsResponse_init(&resp);
	int32_t n = m.topics_count > 0 ? m.topics_count : 0;
	if (m.topics_count < 0)
		m.topics_count = 0;
	resp.topics_count = n;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	bool *dup = find_duplicates(req, &m);
	create_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n);
	if (!dup || !st || !w)
		return BRK_CLOSE;
	st->cfg = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*st->cfg));
	st->ncfg = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*st->ncfg));
	st->prepared = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*st->prepared));
	if (!st->cfg || !st->ncfg || !st->prepared)
		return BRK_CLOSE;
	brk_quota_mutation_begin(req, &st->mq, 6);
	for (int32_t i = 0; i < n; i++) {
		CreateTopicsResponse_CreatableTopicResult_init(&resp.topics[i]);
		if (create_one(req, &m, i, dup[i], &resp.topics[i], st, w))
			return BRK_CLOSE;
	}
	st->resp = resp;
	return brk_ctl_wait_start(w, m.timeout_ms > 0 ? m.timeout_ms : BRK_ADMIN_WAIT_MS, respond, st);
}
