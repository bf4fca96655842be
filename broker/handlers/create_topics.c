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
 *  - validate_only: all checks, nothing created.
 * v5+ answers the partition count, replication factor and every topic
 * config with its effective value; v7+ the topic id.
 */
#include <stdio.h>
#include <string.h>

#include "broker/dynamic_config.h"
#include "broker/partitions.h"
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
		if (size > ctl_broker_count(server.ctl)) {
			snprintf(msg, msgsize, "The manual partition assignment includes more replicas "
				 "than there are registered brokers.");
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		for (int32_t b = 0; b < size; b++) {
			int32_t id = as->broker_ids[b];
			bool known = false;
			for (int32_t k = 0; k < ctl_broker_count(server.ctl); k++)
				if (ctl_broker_id_at(server.ctl, k) == id)
					known = true;
			if (!known) {
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
	brk_dynamic_config_layers(&layers);
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

static int create_one(brk_request *req, const CreateTopicsRequest *m, int32_t idx, bool dup,
		      CreateTopicsResponse_CreatableTopicResult *r)
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
	if (ctl_find_topic(server.ctl, q->name.ptr, q->name.len)) {
		err = KERR_TOPIC_ALREADY_EXISTS;
		snprintf(msg, sizeof(msg), "Topic '%s' already exists.", name);
		goto out;
	}
	const ctl_topic *other = ctl_find_colliding_topic(server.ctl, name);
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
		if (rf > ctl_broker_count(server.ctl)) {
			err = KERR_INVALID_REPLICATION_FACTOR;
			snprintf(msg, sizeof(msg), "Unable to replicate the partition %d time(s): The target "
				 "replication factor of %d cannot be reached because only %d broker(s) are registered.",
				 rf, rf, ctl_broker_count(server.ctl));
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

	const ctl_topic *t = NULL;
	err = brk_create_topic(name, partitions, rf, cfg, nc, m->validate_only, &t);
	if (err) {
		if (err == KERR_KAFKA_STORAGE_ERROR)
			snprintf(msg, sizeof(msg), "The topic's metadata or logs could not be written.");
		else if (err == KERR_TOPIC_ALREADY_EXISTS)
			snprintf(msg, sizeof(msg), "Topic '%s' already exists.", name);
		goto out;
	}
	if (t)
		memcpy(r->topic_id.b, t->id, 16);
	r->error_code = KERR_NONE;
	r->num_partitions = partitions;
	r->replication_factor = rf;
	return fill_configs(req, r, cfg, nc);
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
	if (!dup)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++) {
		CreateTopicsResponse_CreatableTopicResult_init(&resp.topics[i]);
		if (create_one(req, &m, i, dup[i], &resp.topics[i]))
			return BRK_CLOSE;
	}
	if (CreateTopicsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
