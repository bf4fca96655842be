/*
 * alter_partition_reassignments.c - AlterPartitionReassignments (API key
 * 45), versions 0-1 (KIP-455; v1 adds AllowReplicationFactorChange,
 * KIP-860). As ZooKeeper-mode Kafka's KafkaApis and
 * KafkaController.processApiPartitionReassignment:
 *  - answered by the controller only: elsewhere the top-level error is
 *    NOT_CONTROLLER (the client retries on the controller it finds in
 *    Metadata), and so when the controller moved while the request ran;
 *  - a partition given more than once counts once, with its last entry
 *    (Kafka builds a map); the answer lists each topic once;
 *  - per partition, the controller's checks and Kafka's errors
 *    (CTL_OP_ALTER_REASSIGNMENT, ctl.h): INVALID_REPLICA_ASSIGNMENT for an
 *    empty list, repeated or negative ids or a new replica on a broker
 *    that is not alive; UNKNOWN_TOPIC_OR_PARTITION; NO_REASSIGNMENT_IN_PROGRESS
 *    for cancelling (null replicas) a partition that is not being
 *    reassigned; INVALID_REPLICATION_FACTOR when v1 forbids a change of
 *    the replica count and the target has another;
 *  - the answer waits for the controller's results, up to TimeoutMs (<= 0:
 *    BRK_ADMIN_WAIT_MS): a reassignment is then recorded and started, not
 *    finished (ListPartitionReassignments shows it until it is).
 * No authorization on this broker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "controller/reassign.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* One partition of the request. */
typedef struct entry {
	proto_str topic;
	int32_t partition;
	const AlterPartitionReassignmentsRequest_ReassignablePartition *q;
	int32_t order; /* position in the request */
} entry;

static int cmp_entry(const void *a, const void *b)
{
	const entry *x = a, *y = b;
	int32_t n = x->topic.len < y->topic.len ? x->topic.len : y->topic.len;
	int c = n > 0 ? memcmp(x->topic.ptr, y->topic.ptr, (size_t)n) : 0;
	if (c)
		return c;
	if (x->topic.len != y->topic.len)
		return x->topic.len < y->topic.len ? -1 : 1;
	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_topic(const entry *a, const entry *b)
{
	return a->topic.len == b->topic.len &&
	       (a->topic.len <= 0 || memcmp(a->topic.ptr, b->topic.ptr, (size_t)a->topic.len) == 0);
}

static proto_str arena_msg(brk_request *req, const char *msg)
{
	if (!msg || !msg[0])
		return proto_str_of(NULL, -1);
	size_t n = strlen(msg);
	char *s = proto_arena_alloc(req->arena, n + 1);
	if (!s)
		return proto_str_of(NULL, -1);
	memcpy(s, msg, n + 1);
	return proto_str_of(s, (int32_t)n);
}

static bool alive_cb(const void *arg, int32_t id)
{
	return brk_cluster_alive(arg, id);
}

typedef struct alter_state {
	AlterPartitionReassignmentsResponse resp;
	int32_t *slot; /* per response partition (in response order): its slot, -1 none */
} alter_state;

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	alter_state *st = arg;
	AlterPartitionReassignmentsResponse *resp = &st->resp;
	int32_t k = 0;
	bool moved = false;
	for (int32_t i = 0; i < resp->responses_count; i++) {
		AlterPartitionReassignmentsResponse_ReassignableTopicResponse *tr = &resp->responses[i];
		for (int32_t j = 0; j < tr->partitions_count; j++, k++) {
			const ctl_result *res = st->slot[k] >= 0 ? brk_ctl_wait_result(w, st->slot[k])
								 : NULL;
			if (!res)
				continue;
			AlterPartitionReassignmentsResponse_ReassignablePartitionResponse *pr =
				&tr->partitions[j];
			pr->error_code = res->error;
			pr->error_message = res->error ? arena_msg(req, res->msg) : proto_str_of(NULL, -1);
			if (res->error == KERR_NOT_CONTROLLER)
				moved = true;
		}
	}
	if (moved) {
		/* Kafka checks once, for the whole request */
		resp->error_code = KERR_NOT_CONTROLLER;
		resp->error_message = proto_cstr("This is not the correct controller for this cluster.");
		resp->responses_count = 0;
	}
	return AlterPartitionReassignmentsResponse_encode(req->out, req->api_version, resp) == 0
		       ? BRK_RESPOND
		       : BRK_CLOSE;
}

int brk_handle_alter_partition_reassignments(brk_request *req)
{
	AlterPartitionReassignmentsRequest m;
	AlterPartitionReassignmentsRequest_init(&m);
	if (AlterPartitionReassignmentsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	alter_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	AlterPartitionReassignmentsResponse *resp = &st->resp;
	AlterPartitionReassignmentsResponse_init(resp);
	resp->allow_replication_factor_change = m.allow_replication_factor_change;
	/* KafkaApis.handleAlterPartitionReassignmentsRequest: ALTER on the cluster. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_ALTER)) {
		resp->error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp->error_message = proto_cstr("Cluster authorization failed.");
		return AlterPartitionReassignmentsResponse_encode(req->out, req->api_version, resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	if (!brk_cluster_is_controller(&server.cluster)) {
		resp->error_code = KERR_NOT_CONTROLLER;
		resp->error_message = proto_cstr("This is not the correct controller for this cluster.");
		return AlterPartitionReassignmentsResponse_encode(req->out, req->api_version, resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}

	/* Every partition of the request, sorted by topic, partition and
	 * position: the last entry of a partition is the one that counts. */
	int64_t total = 0;
	for (int32_t i = 0; i < m.topics_count; i++)
		total += m.topics[i].partitions_count > 0 ? m.topics[i].partitions_count : 0;
	entry *e = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*e));
	if (!e)
		return BRK_CLOSE;
	int32_t n = 0;
	for (int32_t i = 0; i < m.topics_count; i++)
		for (int32_t j = 0; j < m.topics[i].partitions_count; j++) {
			e[n] = (entry){ m.topics[i].name, m.topics[i].partitions[j].partition_index,
					&m.topics[i].partitions[j], n };
			n++;
		}
	qsort(e, (size_t)n, sizeof(*e), cmp_entry);
	int32_t u = 0, ntopics = 0;
	for (int32_t i = 0; i < n; i++) {
		if (i + 1 < n && same_topic(&e[i], &e[i + 1]) && e[i].partition == e[i + 1].partition)
			continue; /* a later entry of the same partition wins */
		if (u == 0 || !same_topic(&e[u - 1], &e[i]))
			ntopics++;
		e[u++] = e[i];
	}

	resp->responses = proto_arena_alloc(req->arena, (size_t)(ntopics ? ntopics : 1) *
							  sizeof(*resp->responses));
	st->slot = proto_arena_alloc(req->arena, (size_t)(u ? u : 1) * sizeof(*st->slot));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, u);
	if (!resp->responses || !st->slot || !w)
		return BRK_CLOSE;
	resp->responses_count = 0;
	for (int32_t i = 0; i < u;) {
		int32_t k = i;
		while (k < u && same_topic(&e[i], &e[k]))
			k++;
		AlterPartitionReassignmentsResponse_ReassignableTopicResponse *tr =
			&resp->responses[resp->responses_count++];
		AlterPartitionReassignmentsResponse_ReassignableTopicResponse_init(tr);
		tr->name = e[i].topic;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(k - i) * sizeof(*tr->partitions));
		if (!tr->partitions)
			return BRK_CLOSE;
		tr->partitions_count = k - i;
		for (int32_t j = i; j < k; j++) {
			AlterPartitionReassignmentsResponse_ReassignablePartitionResponse *pr =
				&tr->partitions[j - i];
			AlterPartitionReassignmentsResponse_ReassignablePartitionResponse_init(pr);
			pr->partition_index = e[j].partition;
			st->slot[j] = -1;
			const AlterPartitionReassignmentsRequest_ReassignablePartition *q = e[j].q;
			ctl_replica_list target = { q->replicas, q->replicas_count };
			if (e[j].topic.len <= 0 || e[j].topic.len > CTL_TOPIC_NAME_MAX) {
				/* no topic has this name: the list is checked first
				 * (Kafka's order), then the partition does not exist */
				char msg[640] = "No partition reassignment is in progress.";
				int16_t err = q->replicas_count < 0 ? KERR_NO_REASSIGNMENT_IN_PROGRESS
					: ctl_reassign_validate(q->replicas, q->replicas_count, NULL,
								alive_cb, &server.cluster, msg,
								sizeof(msg));
				if (!err) {
					err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
					snprintf(msg, sizeof(msg), "The partition does not exist.");
				}
				pr->error_code = err;
				pr->error_message = arena_msg(req, msg);
				continue;
			}
			ctl_op op = { .type = CTL_OP_ALTER_REASSIGNMENT, .partition = e[j].partition,
				      .assignments = q->replicas_count >= 0 ? &target : NULL,
				      .nassignments = q->replicas_count >= 0 ? 1 : 0,
				      .no_rf_change = !m.allow_replication_factor_change };
			memcpy(op.topic, e[j].topic.ptr, (size_t)e[j].topic.len);
			st->slot[j] = j;
			if (brk_ctl_wait_submit(w, j, &op) != 0) {
				pr->error_code = KERR_UNKNOWN_SERVER_ERROR;
				st->slot[j] = -1;
			}
		}
		i = k;
	}
	return brk_ctl_wait_start(w, m.timeout_ms > 0 ? m.timeout_ms : BRK_ADMIN_WAIT_MS, respond, st);
}
