/*
 * find_coordinator.c - FindCoordinator (API key 10), versions 0-6: this
 * broker coordinates every group and every transactional id (one node).
 * v0-3 look up one key (v0: always a group), v4+ a batch of keys of one
 * type (KIP-699), answered one Coordinator per key. As Kafka's
 * KafkaApis.handleFindCoordinatorRequest: a key type other than group (0)
 * or transaction (1) is INVALID_REQUEST (share groups, type 2, are not
 * served); the node is the first advertised listener, the error message
 * Kafka's Errors.message() ("NONE" on success). As in Kafka, the
 * coordinator's internal topic (__consumer_offsets for groups,
 * __transaction_state for transactional ids) is created on the first
 * lookup; when it cannot be, the answer is COORDINATOR_NOT_AVAILABLE.
 */
#include <string.h>
#include <unistd.h>

#include "broker/group/store.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TRANSACTION 1

static char hostname_buf[256];

/* The first advertised listener's host; the host name when it has none
 * (as the Metadata handler advertises it). */
static const brk_listener *listener(void)
{
	if (server.cfg.nadvertised > 0)
		return &server.cfg.advertised[0];
	return server.cfg.nlisteners > 0 ? &server.cfg.listeners[0] : NULL;
}

static const char *host_of(const brk_listener *l)
{
	if (l && l->host[0])
		return l->host;
	if (!hostname_buf[0] && gethostname(hostname_buf, sizeof(hostname_buf) - 1) != 0)
		snprintf(hostname_buf, sizeof(hostname_buf), "localhost");
	return hostname_buf;
}

int brk_handle_find_coordinator(brk_request *req)
{
	int16_t v = req->api_version;
	FindCoordinatorRequest m;
	FindCoordinatorRequest_init(&m);
	if (FindCoordinatorRequest_decode(&req->body, req->arena, v, &m) != 0)
		return BRK_CLOSE;
	bool valid_type = m.key_type == KEY_TYPE_GROUP || m.key_type == KEY_TYPE_TRANSACTION;
	const brk_listener *l = listener();
	int16_t err = valid_type ? KERR_NONE : KERR_INVALID_REQUEST;
	const char *msg = valid_type ? "NONE" : "Invalid coordinator key type";
	if (valid_type && !(m.key_type == KEY_TYPE_GROUP ? grp_store_topic() : txn_store_topic())) {
		err = KERR_COORDINATOR_NOT_AVAILABLE;
		msg = "The coordinator is not available.";
	}

	FindCoordinatorResponse resp;
	FindCoordinatorResponse_init(&resp);
	if (v < 4) {
		resp.error_code = err;
		resp.error_message = proto_cstr(msg);
		resp.node_id = err ? -1 : server.cfg.broker_id;
		resp.host = proto_cstr(err ? "" : host_of(l));
		resp.port = err ? -1 : (l ? l->port : -1);
	} else {
		int32_t n = m.coordinator_keys_count > 0 ? m.coordinator_keys_count : 0;
		resp.coordinators = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) *
								     sizeof(*resp.coordinators));
		if (!resp.coordinators)
			return BRK_CLOSE;
		resp.coordinators_count = n;
		for (int32_t i = 0; i < n; i++) {
			FindCoordinatorResponse_Coordinator *c = &resp.coordinators[i];
			FindCoordinatorResponse_Coordinator_init(c);
			c->key = m.coordinator_keys[i];
			c->error_code = err;
			c->error_message = proto_cstr(msg);
			c->node_id = err ? -1 : server.cfg.broker_id;
			c->host = proto_cstr(err ? "" : host_of(l));
			c->port = err ? -1 : (l ? l->port : -1);
		}
	}
	return FindCoordinatorResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}
