/*
 * list_partition_reassignments.c - ListPartitionReassignments (API key
 * 46), version 0 (KIP-455). As ZooKeeper-mode Kafka's KafkaApis and
 * KafkaController.processListPartitionReassignments:
 *  - answered by the controller only: elsewhere the top-level error is
 *    NOT_CONTROLLER;
 *  - Topics null: every partition being reassigned; else those of the
 *    named partitions that are being reassigned (unknown ones are left
 *    out, without an error), each with its replicas (targets first), the
 *    replicas being added and those being removed.
 * The answer comes from this broker's partition registry once the
 * controller thread answered CTL_OP_LIST_REASSIGNMENTS: every change the
 * controller made before (the events come before the result) is in the
 * registry then.
 */
#include <stdlib.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef struct list_state {
	ListPartitionReassignmentsRequest m;
} list_state;

static bool in_progress(const brk_partition *p)
{
	return p && (p->nadding > 0 || p->nremoving > 0);
}

/* Fill o from p. */
static void fill(ListPartitionReassignmentsResponse_OngoingPartitionReassignment *o,
		 const brk_partition *p)
{
	ListPartitionReassignmentsResponse_OngoingPartitionReassignment_init(o);
	o->partition_index = p->index;
	o->replicas = p->replicas;
	o->replicas_count = p->nreplicas;
	o->adding_replicas = p->adding;
	o->adding_replicas_count = p->nadding;
	o->removing_replicas = p->removing;
	o->removing_replicas_count = p->nremoving;
}

/* The topic entry for t's partitions in progress: all of them (q NULL),
 * or those named by the request's entries q[0..nq) (entries of t's name).
 * Returns 0 with o->partitions_count set (0: none), -1 when the arena is
 * full. */
static int fill_topic(brk_request *req, ListPartitionReassignmentsResponse_OngoingTopicReassignment *o,
		      brk_topic *t,
		      const ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *const *q,
		      int32_t nq)
{
	ListPartitionReassignmentsResponse_OngoingTopicReassignment_init(o);
	o->name = proto_cstr(t->name);
	o->partitions = proto_arena_alloc(req->arena, (size_t)(t->npartitions > 0 ? t->npartitions : 1) *
							  sizeof(*o->partitions));
	uint8_t *seen = proto_arena_alloc(req->arena, (size_t)t->npartitions / 8 + 1);
	if (!o->partitions || !seen)
		return -1;
	memset(seen, 0, (size_t)t->npartitions / 8 + 1);
	o->partitions_count = 0;
	for (int32_t k = 0; k < (q ? nq : 1); k++) {
		int32_t n = q ? q[k]->partition_indexes_count : t->npartitions;
		for (int32_t i = 0; i < n; i++) {
			const brk_partition *p = brk_topic_partition(t, q ? q[k]->partition_indexes[i] : i);
			if (!in_progress(p) || (seen[p->index / 8] & (1u << (p->index % 8))))
				continue; /* a partition asked for twice is listed once */
			seen[p->index / 8] |= (uint8_t)(1u << (p->index % 8));
			fill(&o->partitions[o->partitions_count++], p);
		}
	}
	return 0;
}

typedef const ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *topic_ref;

static int cmp_ref(const void *a, const void *b)
{
	proto_str x = (*(const topic_ref *)a)->name, y = (*(const topic_ref *)b)->name;
	int32_t n = x.len < y.len ? x.len : y.len;
	int c = n > 0 ? memcmp(x.ptr, y.ptr, (size_t)n) : 0;
	return c ? c : (x.len > y.len) - (x.len < y.len);
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	list_state *st = arg;
	const ctl_result *res = brk_ctl_wait_result(w, 0);
	ListPartitionReassignmentsResponse resp;
	ListPartitionReassignmentsResponse_init(&resp);
	if (!res || res->error) {
		resp.error_code = res ? res->error : KERR_UNKNOWN_SERVER_ERROR;
		resp.error_message = proto_cstr(resp.error_code == KERR_NOT_CONTROLLER
			? "This is not the correct controller for this cluster."
			: res && res->msg[0] ? res->msg : NULL);
		return ListPartitionReassignmentsResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	const ListPartitionReassignmentsRequest *m = &st->m;
	brk_partitions *reg = &server.partitions;
	int32_t cap = m->topics_count >= 0 ? m->topics_count : brk_partitions_topic_count(reg);
	resp.topics = proto_arena_alloc(req->arena, (size_t)(cap > 0 ? cap : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	if (m->topics_count < 0) {
		brk_topic *t;
		for (int32_t i = 0; (t = brk_partitions_topic_at(reg, i)); i++) {
			if (fill_topic(req, &resp.topics[resp.topics_count], t, NULL, 0))
				return BRK_CLOSE;
			if (resp.topics[resp.topics_count].partitions_count > 0)
				resp.topics_count++;
		}
	} else {
		/* the entries by name: one answer per topic, whatever the
		 * number of entries naming it */
		topic_ref *refs = proto_arena_alloc(req->arena, (size_t)(cap > 0 ? cap : 1) * sizeof(*refs));
		if (!refs)
			return BRK_CLOSE;
		for (int32_t i = 0; i < cap; i++)
			refs[i] = &m->topics[i];
		qsort(refs, (size_t)cap, sizeof(*refs), cmp_ref);
		for (int32_t i = 0; i < cap;) {
			int32_t k = i + 1;
			while (k < cap && cmp_ref(&refs[i], &refs[k]) == 0)
				k++;
			brk_topic *t = brk_topic_find(reg, refs[i]->name.ptr, refs[i]->name.len);
			if (t) {
				if (fill_topic(req, &resp.topics[resp.topics_count], t, &refs[i], k - i))
					return BRK_CLOSE;
				if (resp.topics[resp.topics_count].partitions_count > 0)
					resp.topics_count++;
			}
			i = k;
		}
	}
	return ListPartitionReassignmentsResponse_encode(req->out, req->api_version, &resp) == 0
		       ? BRK_RESPOND
		       : BRK_CLOSE;
}

int brk_handle_list_partition_reassignments(brk_request *req)
{
	list_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	ListPartitionReassignmentsRequest_init(&st->m);
	if (ListPartitionReassignmentsRequest_decode(&req->body, req->arena, req->api_version, &st->m) != 0)
		return BRK_CLOSE;
	/* KafkaApis.handleListPartitionReassignmentsRequest: DESCRIBE on the cluster. */
	bool denied = !brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE);
	if (denied || !brk_cluster_is_controller(&server.cluster)) {
		ListPartitionReassignmentsResponse resp;
		ListPartitionReassignmentsResponse_init(&resp);
		resp.error_code = denied ? KERR_CLUSTER_AUTHORIZATION_FAILED : KERR_NOT_CONTROLLER;
		resp.error_message = proto_cstr(denied ? "Cluster authorization failed."
						       : "This is not the correct controller for this cluster.");
		return ListPartitionReassignmentsResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, 1);
	if (!w)
		return BRK_CLOSE;
	ctl_op op = { .type = CTL_OP_LIST_REASSIGNMENTS };
	brk_ctl_wait_submit(w, 0, &op);
	return brk_ctl_wait_start(w, st->m.timeout_ms > 0 ? st->m.timeout_ms : BRK_ADMIN_WAIT_MS,
				  respond, st);
}
