/*
 * metadata.c - Metadata (API key 3), versions 0-13: the live brokers,
 * cluster id, controller, and per topic its id and partitions (leader,
 * leader epoch, replicas, ISR, offline replicas), as this broker's
 * partition registry knows them (Kafka's MetadataCache).
 *
 * Unknown topics are created when the client allows it
 * (AllowAutoTopicCreation, always true before v4) and
 * auto.create.topics.enable is set, as Kafka's KafkaApis.getTopicMetadata:
 * the creations go to the controller and the answer waits for their
 * results; a topic that exists by then is answered as it is (on the local
 * back end ready, in a cluster possibly LEADER_NOT_AVAILABLE until its
 * leaders are elected, which clients retry), one that does not with the
 * creation's error (or LEADER_NOT_AVAILABLE when it was created
 * elsewhere meanwhile, as Kafka answers a topic being created).
 *
 * Per partition (Kafka's MetadataCache.getPartitionMetadata): a leader that
 * is not a live broker is LEADER_NOT_AVAILABLE with leader -1; replicas and
 * ISR members that are not live brokers are listed as offline replicas
 * (and REPLICA_NOT_AVAILABLE only before v5, as Kafka).
 *
 * Listeners (Kafka's ZkMetadataCache): only the live brokers that serve the
 * client's listener are listed (ctl_broker_node), each at that listener's
 * address; a partition whose live leader lacks the listener has leader -1
 * and LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE before; v0 lists
 * only the replicas and ISR members that are live and serve the listener,
 * REPLICA_NOT_AVAILABLE when one was left out.
 */
#include <string.h>

#include "broker/conn.h"
#include "broker/ctl_wait.h"
#include "broker/group/store.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef struct metadata_state {
	MetadataRequest m;
	bool all;           /* every topic */
	bool may_create;
} metadata_state;

/* The creation of topic (name, len) with the auto-creation settings, into
 * op. The internal topics are made with their coordinators' settings
 * (offsets.topic.*, transaction.state.log.*; Kafka's
 * AutoTopicCreationManager does the same). */
static void auto_create_op(const char *name, int32_t len, brk_internal_topic_op *o)
{
	if (ctl_topic_name_is_internal(name, (size_t)len)) {
		if ((size_t)len == strlen(GRP_OFFSETS_TOPIC) && memcmp(name, GRP_OFFSETS_TOPIC, (size_t)len) == 0)
			grp_store_topic_op(o);
		else
			txn_store_topic_op(o);
		return;
	}
	memset(o, 0, sizeof(*o));
	o->op.type = CTL_OP_CREATE_TOPIC;
	memcpy(o->op.topic, name, (size_t)len);
	o->op.partitions = server.cfg.num_partitions;
	o->op.replication_factor = server.cfg.default_replication_factor;
}

/* v0 lists only the replicas that are live brokers serving listener
 * (Kafka's maybeFilterAliveReplicas with errorUnavailableEndpoints): the
 * ids of *ids that are, into an arena copy; *filtered set when one was
 * left out. Returns 0 or -1 (arena full). */
static int filter_served(proto_arena *a, const char *listener, int32_t **ids, int32_t *n,
			 bool *filtered)
{
	int32_t *keep = proto_arena_alloc(a, (size_t)(*n > 0 ? *n : 1) * sizeof(*keep));
	if (!keep)
		return -1;
	int32_t k = 0;
	for (int32_t i = 0; i < *n; i++) {
		const ctl_broker *b = brk_cluster_broker(&server.cluster, (*ids)[i]);
		if (b && ctl_broker_node(b, listener, NULL, NULL))
			keep[k++] = (*ids)[i];
	}
	*filtered = *filtered || k < *n;
	*ids = keep;
	*n = k;
	return 0;
}

/* Fill the answer for an existing topic. Returns 0 or -1 (arena full). */
static int fill_topic(brk_request *req, const MetadataRequest *m,
		      MetadataResponse_MetadataResponseTopic *rt, brk_topic *t)
{
	int16_t v = req->api_version;
	const char *listener = brk_conn_listener_name(req->conn);
	rt->error_code = KERR_NONE;
	rt->name = proto_cstr(t->name);
	memcpy(rt->topic_id.b, t->id, 16);
	rt->is_internal = t->internal;
	if (m->include_topic_authorized_operations)
		rt->topic_authorized_operations = brk_acl_operations(
			req, CTL_ACL_RES_TOPIC, t->name, t->name_len,
			BRK_TOPIC_ALL_OPERATIONS);
	rt->partitions_count = t->npartitions;
	rt->partitions = proto_arena_alloc(req->arena, (size_t)(t->npartitions ? t->npartitions : 1) *
							   sizeof(*rt->partitions));
	if (!rt->partitions)
		return -1;
	for (int32_t i = 0; i < t->npartitions; i++) {
		const brk_partition *p = t->partitions[i];
		MetadataResponse_MetadataResponsePartition *rp = &rt->partitions[i];
		MetadataResponse_MetadataResponsePartition_init(rp);
		brk_partition_view pv;
		if (brk_partition_describe(p, &server.partitions.env, req->arena, &pv))
			return -1;
		rp->partition_index = p->index;
		rp->leader_id = pv.leader;
		rp->leader_epoch = p->leader_epoch;
		rp->replica_nodes_count = p->nreplicas;
		rp->replica_nodes = p->replicas;
		rp->isr_nodes_count = pv.nisr;
		rp->isr_nodes = pv.isr;
		rp->offline_replicas_count = pv.noffline;
		rp->offline_replicas = pv.offline;
		bool filtered = false;
		if (v == 0 && (filter_served(req->arena, listener, &rp->replica_nodes,
					     &rp->replica_nodes_count, &filtered) ||
			       filter_served(req->arena, listener, &rp->isr_nodes,
					     &rp->isr_nodes_count, &filtered)))
			return -1;
		const ctl_broker *lb = pv.leader_unavailable
					       ? NULL
					       : brk_cluster_broker(&server.cluster, pv.leader);
		/* No usable leader: Kafka answers LEADER_NOT_AVAILABLE; a live
		 * leader without the client's listener LISTENER_NOT_FOUND
		 * from v6 (before it, LEADER_NOT_AVAILABLE). */
		if (pv.leader_unavailable) {
			rp->error_code = KERR_LEADER_NOT_AVAILABLE;
		} else if (lb && !ctl_broker_node(lb, listener, NULL, NULL)) {
			rp->leader_id = -1;
			rp->error_code = v >= 6 ? KERR_LISTENER_NOT_FOUND : KERR_LEADER_NOT_AVAILABLE;
		} else if ((v < 5 && pv.noffline > 0) || filtered) {
			rp->error_code = KERR_REPLICA_NOT_AVAILABLE;
		}
	}
	return 0;
}

/* KafkaApis.handleTopicMetadataRequest: DESCRIBE on a topic to see it;
 * CREATE on the cluster or the topic to have it made automatically. */
static bool may_describe(const brk_request *req, const char *name, int32_t len)
{
	return brk_acl_permits(req, CTL_ACL_RES_TOPIC, name, len, CTL_ACL_OP_DESCRIBE);
}

static bool may_create(const brk_request *req, const char *name, int32_t len)
{
	return brk_acl_permits_cluster(req, CTL_ACL_OP_CREATE) ||
	       brk_acl_permits(req, CTL_ACL_RES_TOPIC, name, len, CTL_ACL_OP_CREATE);
}

static bool want_all(const MetadataRequest *m, int16_t v)
{
	/* v0: an empty list means every topic; v1+: null means every topic. */
	return m->topics_count < 0 || (v == 0 && m->topics_count == 0);
}

/* The first index of the request with the same topic name as topic i. */
static int32_t first_of(const MetadataRequest *m, int32_t i)
{
	proto_str q = m->topics[i].name;
	for (int32_t k = 0; k < i; k++)
		if (m->topics[k].name.len == q.len && q.len >= 0 &&
		    memcmp(m->topics[k].name.ptr, q.ptr, (size_t)q.len) == 0)
			return k;
	return i;
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	metadata_state *st = arg;
	const MetadataRequest *m = &st->m;
	int16_t v = req->api_version;
	MetadataResponse resp;
	MetadataResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.error_code = KERR_NONE;

	int32_t nb = server.cluster.nbrokers;
	resp.brokers = proto_arena_alloc(req->arena, (size_t)(nb ? nb : 1) * sizeof(*resp.brokers));
	if (!resp.brokers)
		return BRK_CLOSE;
	const char *listener = brk_conn_listener_name(req->conn);
	resp.brokers_count = 0;
	for (int32_t i = 0; i < nb; i++) {
		/* Only the brokers on the client's listener (Kafka's
		 * getAliveBrokerNodes(listenerName)). */
		const ctl_broker *b = &server.cluster.brokers[i];
		const char *host;
		int32_t port;
		if (!ctl_broker_node(b, listener, &host, &port))
			continue;
		MetadataResponse_MetadataResponseBroker *rb = &resp.brokers[resp.brokers_count++];
		MetadataResponse_MetadataResponseBroker_init(rb);
		rb->node_id = b->id;
		rb->host = proto_cstr(host);
		rb->port = port;
		rb->rack = b->rack[0] ? proto_cstr(b->rack) : proto_str_of(NULL, -1);
	}
	resp.cluster_id = server.cluster_id[0] ? proto_cstr(server.cluster_id) : proto_str_of(NULL, -1);
	resp.controller_id = server.cluster.controller_id;
	if (v >= 8 && v <= 10 && m->include_cluster_authorized_operations)
		resp.cluster_authorized_operations =
			brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE)
				? brk_acl_operations(req, CTL_ACL_RES_CLUSTER, CTL_ACL_CLUSTER_NAME,
						     (int32_t)strlen(CTL_ACL_CLUSTER_NAME),
						     BRK_CLUSTER_ALL_OPERATIONS)
				: 0;

	brk_partitions *reg = &server.partitions;
	int32_t n = st->all ? brk_partitions_topic_count(reg) : m->topics_count;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	resp.topics_count = 0;
	for (int32_t i = 0; i < n; i++) {
		MetadataResponse_MetadataResponseTopic *rt = &resp.topics[resp.topics_count++];
		MetadataResponse_MetadataResponseTopic_init(rt);
		rt->partitions_count = 0;
		if (st->all) {
			/* Topics the principal may not describe are left out. */
			brk_topic *t = brk_partitions_topic_at(reg, i);
			if (!may_describe(req, t->name, t->name_len)) {
				resp.topics_count--;
				continue;
			}
			if (fill_topic(req, m, rt, t))
				return BRK_CLOSE;
			continue;
		}
		const MetadataRequest_MetadataRequestTopic *q = &m->topics[i];
		rt->name = q->name;
		rt->topic_id = q->topic_id;
		if (q->name.len < 0) {
			/* v10+: by topic id */
			brk_topic *t = brk_topic_find_by_id(reg, q->topic_id.b);
			if (!t || !may_describe(req, t->name, t->name_len)) {
				rt->error_code = KERR_UNKNOWN_TOPIC_ID;
				if (v < 12)
					rt->name = proto_cstr(""); /* name not nullable before v12 */
				continue;
			}
			if (fill_topic(req, m, rt, t))
				return BRK_CLOSE;
			continue;
		}
		memset(rt->topic_id.b, 0, 16);
		if (ctl_validate_topic_name(q->name.ptr, q->name.len)) {
			rt->error_code = KERR_INVALID_TOPIC_EXCEPTION;
			continue;
		}
		if (!may_describe(req, q->name.ptr, q->name.len)) {
			rt->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
			continue;
		}
		brk_topic *t = brk_topic_find(reg, q->name.ptr, q->name.len);
		if (t) {
			if (fill_topic(req, m, rt, t))
				return BRK_CLOSE;
			continue;
		}
		const ctl_result *res = brk_ctl_wait_result(w, first_of(m, i));
		if (!res && st->may_create && !may_create(req, q->name.ptr, q->name.len))
			rt->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
		else if (!res)
			rt->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		else if (res->error == KERR_NONE || res->error == KERR_TOPIC_ALREADY_EXISTS ||
			 res->error == KERR_REQUEST_TIMED_OUT)
			rt->error_code = KERR_LEADER_NOT_AVAILABLE; /* being created */
		else
			rt->error_code = res->error;
	}
	return MetadataResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_metadata(brk_request *req)
{
	int16_t v = req->api_version;
	metadata_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	MetadataRequest_init(&st->m);
	if (MetadataRequest_decode(&req->body, req->arena, v, &st->m) != 0)
		return BRK_CLOSE;
	const MetadataRequest *m = &st->m;
	st->all = want_all(m, v);
	st->may_create = (v < 4 || m->allow_auto_topic_creation) && server.cfg.auto_create_topics_enable;
	int32_t n = st->all ? 0 : m->topics_count;
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n);
	if (!w)
		return BRK_CLOSE;
	for (int32_t i = 0; st->may_create && i < n; i++) {
		const MetadataRequest_MetadataRequestTopic *q = &m->topics[i];
		if (q->name.len < 0 || ctl_validate_topic_name(q->name.ptr, q->name.len) ||
		    brk_topic_find(&server.partitions, q->name.ptr, q->name.len) ||
		    !may_describe(req, q->name.ptr, q->name.len) ||
		    !may_create(req, q->name.ptr, q->name.len))
			continue;
		if (first_of(m, i) != i)
			continue; /* one creation per name */
		brk_internal_topic_op o;
		auto_create_op(q->name.ptr, q->name.len, &o);
		brk_ctl_wait_submit(w, i, &o.op);
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
