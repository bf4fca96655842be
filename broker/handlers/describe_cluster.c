/*
 * describe_cluster.c - DescribeCluster (API key 60), versions 0-2 (KIP-700,
 * KIP-919, KIP-1073), as a Kafka broker answers it (KafkaApis
 * handleDescribeCluster and AuthHelper.computeDescribeClusterResponse):
 *  - EndpointType (v1+) other than 1 (brokers) or 2 (controllers):
 *    UNSUPPORTED_ENDPOINT_TYPE "Unsupported endpoint type N";
 *  - 2 (controllers): a broker is not a controller endpoint,
 *    MISMATCHED_ENDPOINT_TYPE "The request was sent to an endpoint of type
 *    BROKER, but we wanted an endpoint of type CONTROLLER";
 *    (in v0, whose EndpointType is always 1, both would be INVALID_REQUEST);
 *    such an answer carries only the code and message: empty cluster id,
 *    controller -1, no brokers, the schema defaults elsewhere;
 *  - otherwise the cluster id (meta.properties), the controller id, and the
 *    live brokers on the client's listener with that listener's host and
 *    port and their rack, as Metadata gives them (ctl_broker_node) (none is fenced, so IncludeFencedBrokers changes nothing
 *    and IsFenced is false);
 *  - ClusterAuthorizedOperations: INT32_MIN unless asked for, then the
 *    operations the principal may do on the cluster (all of them without an
 *    authorizer; none without DESCRIBE).
 */
#include <stdio.h>
#include <string.h>

#include "broker/acl/check.h"
#include "broker/conn.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define ENDPOINT_TYPE_BROKER 1
#define ENDPOINT_TYPE_CONTROLLER 2

int brk_handle_describe_cluster(brk_request *req)
{
	DescribeClusterRequest m;
	DescribeClusterRequest_init(&m);
	if (DescribeClusterRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int16_t v = req->api_version;

	DescribeClusterResponse resp;
	DescribeClusterResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.cluster_id = proto_cstr("");
	resp.brokers_count = 0;

	if (m.endpoint_type != ENDPOINT_TYPE_BROKER && m.endpoint_type != ENDPOINT_TYPE_CONTROLLER) {
		char *msg = proto_arena_alloc(req->arena, 64);
		if (!msg)
			return BRK_CLOSE;
		snprintf(msg, 64, "Unsupported endpoint type %d", (int)m.endpoint_type);
		resp.error_code = v == 0 ? KERR_INVALID_REQUEST : KERR_UNSUPPORTED_ENDPOINT_TYPE;
		resp.error_message = proto_cstr(msg);
	} else if (m.endpoint_type == ENDPOINT_TYPE_CONTROLLER) {
		resp.error_code = v == 0 ? KERR_INVALID_REQUEST : KERR_MISMATCHED_ENDPOINT_TYPE;
		resp.error_message = proto_cstr("The request was sent to an endpoint of type BROKER, "
						"but we wanted an endpoint of type CONTROLLER");
	} else {
		resp.error_code = KERR_NONE;
		resp.endpoint_type = ENDPOINT_TYPE_BROKER;
		resp.cluster_id = proto_cstr(server.cluster_id);
		resp.controller_id = server.cluster.controller_id;
		int32_t n = server.cluster.nbrokers;
		resp.brokers = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.brokers));
		if (!resp.brokers)
			return BRK_CLOSE;
		const char *listener = brk_conn_listener_name(req->conn);
		for (int32_t i = 0; i < n; i++) {
			/* Only the brokers on the client's listener (Kafka's
			 * getAliveBrokerNodes(listenerName)). */
			const ctl_broker *b = &server.cluster.brokers[i];
			const char *host;
			int32_t port;
			if (!ctl_broker_node(b, listener, &host, &port))
				continue;
			DescribeClusterResponse_DescribeClusterBroker *rb =
				&resp.brokers[resp.brokers_count++];
			DescribeClusterResponse_DescribeClusterBroker_init(rb);
			rb->broker_id = b->id;
			rb->host = proto_cstr(host);
			rb->port = port;
			rb->rack = b->rack[0] ? proto_cstr(b->rack) : proto_str_of(NULL, -1);
			rb->is_fenced = false;
		}
		/* AuthHelper.computeDescribeClusterResponse: the operations
		 * allowed on the cluster when DESCRIBE is, else none. */
		if (m.include_cluster_authorized_operations)
			resp.cluster_authorized_operations =
				brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE)
					? brk_acl_operations(req, CTL_ACL_RES_CLUSTER, CTL_ACL_CLUSTER_NAME,
							     (int32_t)strlen(CTL_ACL_CLUSTER_NAME),
							     BRK_CLUSTER_ALL_OPERATIONS)
					: 0;
	}
	if (DescribeClusterResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
