/*
 * elect_leaders.c - ElectLeaders (API key 43), versions 0-2: v0 is KIP-183's
 * ElectPreferredLeaders, v1 adds the election type (KIP-460: 0 preferred,
 * 1 unclean) and a top-level error code, v2 is flexible. As ZooKeeper-mode
 * Kafka answers it (KafkaApis.handleElectLeaders, ReplicaManager.
 * electLeaders, KafkaController.processReplicaLeaderElection):
 *  - the partitions named, each once (a partition named twice gets one
 *    result; results are grouped by topic), or with a null list every
 *    partition of every topic this broker knows; then the partitions whose
 *    election was not needed are left out of the answer;
 *  - an election type other than 0 or 1: INVALID_REQUEST at the top and for
 *    every partition named (Kafka's KRaft controller's answer; its
 *    ZooKeeper mode failed the request the same way with
 *    UNKNOWN_SERVER_ERROR);
 *  - on a broker that is not the controller: NOT_CONTROLLER for every
 *    partition, the top-level code NONE (the Java admin client then finds
 *    the controller and asks again);
 *  - on the controller each partition is one CTL_OP_ELECT_LEADER (ctl.h
 *    gives the rules and codes: ELECTION_NOT_NEEDED,
 *    PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
 *    UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION...), and the
 *    answer waits for the results up to TimeoutMs (REQUEST_TIMED_OUT for
 *    those not in by then). An elected partition's new state reaches this
 *    broker's metadata before its result (Kafka's DelayedElectLeader waits
 *    for the same). The local back end (one node) answers
 *    ELECTION_NOT_NEEDED for every partition that exists.
 * Messages are Kafka's: null on success and for NOT_CONTROLLER.
 */
#include <stdio.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "controller/elect.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* One partition to answer for. */
typedef struct part {
	int32_t group;      /* its topic's entry in groups */
	int32_t partition;
	bool from_ctl;      /* the answer is the controller's result (its slot) */
	int16_t error;      /* else this */
	const char *msg;    /* NULL: null */
} part;

/* One topic of the answer, its partitions in order of first mention. */
typedef struct group {
	proto_str topic;    /* lives in the arena */
	int32_t nparts;
} group;

typedef struct elect_state {
	part *parts;
	int32_t nparts;
	group *groups;
	int32_t ngroups;
	bool all;            /* TopicPartitions was null */
	int16_t top_error;
} elect_state;

static uint32_t hash_bytes(const char *p, int32_t n, uint32_t h)
{
	for (int32_t i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t table_cap(int32_t n)
{
	uint32_t cap = 16;
	while (cap < (uint32_t)n * 2)
		cap <<= 1;
	return cap;
}

/* The group of topic (added when new); -1 when the arena is full. */
static int32_t group_of(elect_state *st, int32_t *tab, uint32_t cap, proto_str topic,
			int32_t max)
{
	uint32_t h = hash_bytes(topic.ptr, topic.len, 2166136261u) & (cap - 1);
	while (tab[h]) {
		group *g = &st->groups[tab[h] - 1];
		if (g->topic.len == topic.len && memcmp(g->topic.ptr, topic.ptr, (size_t)topic.len) == 0)
			return tab[h] - 1;
		h = (h + 1) & (cap - 1);
	}
	if (st->ngroups >= max)
		return -1;
	st->groups[st->ngroups] = (group){ topic, 0 };
	tab[h] = ++st->ngroups;
	return st->ngroups - 1;
}

/* Whether (group, partition) was seen; records it when not. */
static bool seen(const elect_state *st, int32_t *tab, uint32_t cap, int32_t grp, int32_t partition,
		 int32_t index)
{
	uint32_t h = hash_bytes((const char *)&partition, sizeof(partition),
				hash_bytes((const char *)&grp, sizeof(grp), 2166136261u)) &
		     (cap - 1);
	while (tab[h]) {
		const part *p = &st->parts[tab[h] - 1];
		if (p->group == grp && p->partition == partition)
			return true;
		h = (h + 1) & (cap - 1);
	}
	tab[h] = index + 1;
	return false;
}

/* Fill st from the request: the named partitions, each once. */
static int from_request(brk_request *req, const ElectLeadersRequest *m, elect_state *st)
{
	int64_t total = 0;
	for (int32_t i = 0; i < m->topic_partitions_count; i++)
		total += m->topic_partitions[i].partitions_count > 0
				 ? m->topic_partitions[i].partitions_count
				 : 0;
	int32_t ntopics = m->topic_partitions_count;
	st->parts = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*st->parts));
	st->groups = proto_arena_alloc(req->arena, (size_t)(ntopics ? ntopics : 1) *
							   sizeof(*st->groups));
	uint32_t gcap = table_cap(ntopics), pcap = table_cap((int32_t)total);
	int32_t *gtab = proto_arena_alloc(req->arena, gcap * sizeof(int32_t));
	int32_t *ptab = proto_arena_alloc(req->arena, pcap * sizeof(int32_t));
	if (!st->parts || !st->groups || !gtab || !ptab)
		return -1;
	memset(gtab, 0, gcap * sizeof(int32_t));
	memset(ptab, 0, pcap * sizeof(int32_t));
	for (int32_t i = 0; i < ntopics; i++) {
		const ElectLeadersRequest_TopicPartitions *t = &m->topic_partitions[i];
		int32_t g = group_of(st, gtab, gcap, t->topic, ntopics);
		if (g < 0)
			return -1;
		for (int32_t k = 0; k < t->partitions_count; k++) {
			if (seen(st, ptab, pcap, g, t->partitions[k], st->nparts))
				continue;
			st->parts[st->nparts++] = (part){ g, t->partitions[k], true, 0, NULL };
			st->groups[g].nparts++;
		}
	}
	return 0;
}

/* Fill st with every partition of every topic this broker knows. */
static int from_metadata(brk_request *req, elect_state *st)
{
	int32_t ntopics = brk_partitions_topic_count(&server.partitions);
	int64_t total = brk_partitions_partition_count(&server.partitions);
	st->parts = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*st->parts));
	st->groups = proto_arena_alloc(req->arena, (size_t)(ntopics ? ntopics : 1) *
							   sizeof(*st->groups));
	if (!st->parts || !st->groups)
		return -1;
	brk_topic *t;
	for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)) && i < ntopics; i++) {
		/* the name outlives the topic: copy it */
		size_t len = (size_t)t->name_len;
		char *name = proto_arena_alloc(req->arena, len + 1);
		if (!name)
			return -1;
		memcpy(name, t->name, len + 1);
		int32_t g = st->ngroups++;
		st->groups[g] = (group){ proto_str_of(name, (int32_t)len), 0 };
		for (int32_t k = 0; k < t->npartitions && st->nparts < total; k++) {
			st->parts[st->nparts++] = (part){ g, k, true, 0, NULL };
			st->groups[g].nparts++;
		}
	}
	return 0;
}

static proto_str str_or_null(brk_request *req, const char *s)
{
	if (!s || !*s)
		return proto_str_of(NULL, -1);
	size_t n = strlen(s);
	char *copy = proto_arena_alloc(req->arena, n + 1);
	if (!copy)
		return proto_str_of(NULL, -1);
	memcpy(copy, s, n + 1);
	return proto_str_of(copy, (int32_t)n);
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	elect_state *st = arg;
	ElectLeadersResponse resp;
	ElectLeadersResponse_init(&resp);
	resp.error_code = st->top_error;
	resp.replica_election_results =
		proto_arena_alloc(req->arena, (size_t)(st->ngroups ? st->ngroups : 1) *
						      sizeof(*resp.replica_election_results));
	ElectLeadersResponse_PartitionResult *prs =
		proto_arena_alloc(req->arena, (size_t)(st->nparts ? st->nparts : 1) * sizeof(*prs));
	int32_t *first = proto_arena_alloc(req->arena, (size_t)(st->ngroups ? st->ngroups : 1) *
							       sizeof(int32_t));
	if (!resp.replica_election_results || !prs || !first)
		return BRK_CLOSE;
	/* each topic's results side by side in prs */
	int32_t at = 0;
	for (int32_t g = 0; g < st->ngroups; g++) {
		first[g] = at;
		at += st->groups[g].nparts;
		st->groups[g].nparts = 0;
	}
	for (int32_t i = 0; i < st->nparts; i++) {
		part *p = &st->parts[i];
		int16_t err = p->error;
		proto_str msg = proto_str_of(NULL, -1);
		if (p->from_ctl) {
			const ctl_result *res = brk_ctl_wait_result(w, i);
			err = res ? res->error : KERR_UNKNOWN_SERVER_ERROR;
			if (res && err != KERR_NONE && err != KERR_NOT_CONTROLLER)
				msg = str_or_null(req, res->msg);
		} else if (p->msg) {
			msg = proto_cstr(p->msg);
		}
		/* every partition asked for: only those that needed an
		 * election or failed (Kafka leaves ELECTION_NOT_NEEDED out) */
		if (st->all && err == KERR_ELECTION_NOT_NEEDED)
			continue;
		ElectLeadersResponse_PartitionResult *r =
			&prs[first[p->group] + st->groups[p->group].nparts++];
		ElectLeadersResponse_PartitionResult_init(r);
		r->partition_id = p->partition;
		r->error_code = err;
		r->error_message = msg;
	}
	for (int32_t g = 0; g < st->ngroups; g++) {
		if (st->all && st->groups[g].nparts == 0)
			continue; /* nothing left to say about it */
		ElectLeadersResponse_ReplicaElectionResult *res =
			&resp.replica_election_results[resp.replica_election_results_count++];
		ElectLeadersResponse_ReplicaElectionResult_init(res);
		res->topic = st->groups[g].topic;
		res->partition_result_count = st->groups[g].nparts;
		res->partition_result = &prs[first[g]];
	}
	return ElectLeadersResponse_encode(req->out, req->api_version, &resp) == 0 ? BRK_RESPOND
										   : BRK_CLOSE;
}

int brk_handle_elect_leaders(brk_request *req)
{
	ElectLeadersRequest m;
	ElectLeadersRequest_init(&m);
	if (ElectLeadersRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	elect_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	memset(st, 0, sizeof(*st));
	st->all = m.topic_partitions_count < 0;
	int8_t type = req->api_version >= 1 ? m.election_type : CTL_ELECTION_PREFERRED;
	bool controller = brk_cluster_is_controller(&server.cluster);
	bool bad_type = type != CTL_ELECTION_PREFERRED && type != CTL_ELECTION_UNCLEAN;
	if (st->all && bad_type) {
		/* Kafka's error response names only the partitions asked for */
		st->top_error = KERR_INVALID_REQUEST;
	} else if (st->all ? from_metadata(req, st) != 0 : from_request(req, &m, st) != 0) {
		return BRK_CLOSE;
	}
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, st->nparts);
	if (!w)
		return BRK_CLOSE;
	char *type_msg = NULL;
	if (bad_type) {
		st->top_error = KERR_INVALID_REQUEST;
		type_msg = proto_arena_alloc(req->arena, 48);
		if (!type_msg)
			return BRK_CLOSE;
		snprintf(type_msg, 48, "Unknown election type %d", (int)type);
	}
	/* KafkaApis.handleElectLeaders: ALTER on the cluster, else every
	 * partition (and the request) CLUSTER_AUTHORIZATION_FAILED. */
	bool denied = !brk_acl_permits_cluster(req, CTL_ACL_OP_ALTER);
	if (denied && !bad_type)
		st->top_error = KERR_CLUSTER_AUTHORIZATION_FAILED;
	for (int32_t i = 0; i < st->nparts; i++) {
		part *p = &st->parts[i];
		const proto_str *topic = &st->groups[p->group].topic;
		p->from_ctl = false;
		if (denied && !bad_type) {
			p->error = KERR_CLUSTER_AUTHORIZATION_FAILED;
			continue;
		}
		if (bad_type) {
			p->error = KERR_INVALID_REQUEST;
			p->msg = type_msg;
			continue;
		}
		if (!controller) {
			p->error = KERR_NOT_CONTROLLER;
			continue;
		}
		if (topic->len <= 0 || topic->len > CTL_TOPIC_NAME_MAX ||
		    memchr(topic->ptr, '\0', (size_t)topic->len)) {
			p->error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			p->msg = "The partition does not exist.";
			continue;
		}
		ctl_op op = { .type = CTL_OP_ELECT_LEADER, .partition = p->partition,
			      .election_type = type };
		memcpy(op.topic, topic->ptr, (size_t)topic->len);
		op.topic[topic->len] = '\0';
		p->from_ctl = true;
		brk_ctl_wait_submit(w, i, &op); /* out of memory: the slot says so */
	}
	return brk_ctl_wait_start(w, m.timeout_ms > 0 ? m.timeout_ms : BRK_ADMIN_WAIT_MS, respond, st);
}
