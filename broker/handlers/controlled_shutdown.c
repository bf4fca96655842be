/*
 * controlled_shutdown.c - ControlledShutdown (API key 7), versions 0-3, sent
 * by a broker that is stopping to the controller (CLUSTER.md 2.6; Kafka's
 * KafkaApis.handleControlledShutdownRequest and
 * KafkaController.doControlledShutdown). Not advertised: Kafka 4 has no
 * ZooKeeper mode and no longer defines it (dispatch.c).
 *
 * On a broker that is not the controller: NOT_CONTROLLER. Otherwise the
 * controller moves the leadership of every partition the broker leads to
 * another in-sync replica and takes it out of the ISR of the others
 * (CTL_OP_CONTROLLED_SHUTDOWN; STALE_BROKER_EPOCH for another registration
 * of it), and the answer, once that is done, lists the partitions it still
 * leads (no other replica could take them: the stopping broker asks again,
 * or stops anyway after controlled.shutdown.max.retries).
 */
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef struct shutdown_state {
	int32_t broker_id;
} shutdown_state;

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	shutdown_state *st = arg;
	const ctl_result *res = brk_ctl_wait_result(w, 0);
	ControlledShutdownResponse resp;
	ControlledShutdownResponse_init(&resp);
	resp.error_code = res ? res->error : KERR_NOT_CONTROLLER;
	if (resp.error_code == KERR_NONE && res->remaining > 0) {
		/* the partitions it still leads, as this broker knows them */
		int64_t n = brk_partitions_partition_count(&server.partitions);
		resp.remaining_partitions = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) *
							  sizeof(*resp.remaining_partitions));
		if (!resp.remaining_partitions)
			return BRK_CLOSE;
		brk_topic *t;
		for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)); i++)
			for (int32_t k = 0; k < t->npartitions; k++) {
				/* one replica: nobody could take it (Kafka counts
				 * only partitions with more than one) */
				if (t->partitions[k]->leader != st->broker_id ||
				    t->partitions[k]->nreplicas <= 1)
					continue;
				ControlledShutdownResponse_RemainingPartition *r =
					&resp.remaining_partitions[resp.remaining_partitions_count++];
				ControlledShutdownResponse_RemainingPartition_init(r);
				r->topic_name = proto_cstr(t->name);
				r->partition_index = k;
			}
	}
	return ControlledShutdownResponse_encode(req->out, req->api_version, &resp) == 0 ? BRK_RESPOND
											 : BRK_CLOSE;
}

int brk_handle_controlled_shutdown(brk_request *req)
{
	ControlledShutdownRequest m;
	ControlledShutdownRequest_init(&m);
	if (ControlledShutdownRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	shutdown_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, 1);
	if (!st || !w)
		return BRK_CLOSE;
	st->broker_id = m.broker_id;
	/* KafkaApis.handleControlledShutdownRequest: CLUSTER_ACTION on the cluster. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_CLUSTER_ACTION)) {
		ControlledShutdownResponse resp;
		ControlledShutdownResponse_init(&resp);
		resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		return ControlledShutdownResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	if (brk_cluster_is_controller(&server.cluster)) {
		ctl_op op = { .type = CTL_OP_CONTROLLED_SHUTDOWN, .broker_id = m.broker_id,
			      .broker_epoch = m.broker_epoch };
		brk_ctl_wait_submit(w, 0, &op);
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
