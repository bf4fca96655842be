/*
 * find_coordinator.c - FindCoordinator (API key 10), versions 0-6: the
 * coordinator of a group or transactional id is the leader of its
 * partition of __consumer_offsets or __transaction_state.
 * v0-3 look up one key (v0: always a group), v4+ a batch of keys of one
 * type (KIP-699), answered one Coordinator per key. As Kafka's
 * KafkaApis.handleFindCoordinatorRequest: a key type other than group (0)
 * or transaction (1) is INVALID_REQUEST (share groups, type 2, are not
 * served); the node is the leader's endpoint of the client's listener
 * (ctl_broker_node), the error message
 * Kafka's Errors.message() ("NONE" on success); a partition without a live
 * leader, or whose leader lacks the client's listener (KafkaApis.
 * getCoordinator), is COORDINATOR_NOT_AVAILABLE, and so is a partition this broker
 * leads but neither serves nor loads (its log is offline: the coordinator
 * would answer NOT_COORDINATOR, group.h / txn.h); a partition still
 * loading is answered with this broker, whose coordinator then answers
 * COORDINATOR_LOAD_IN_PROGRESS until it is loaded. As in Kafka, the coordinator's
 * internal topic (__consumer_offsets for groups, __transaction_state for
 * transactional ids) is created on the first lookup: the answer waits for
 * the controller's result (then COORDINATOR_NOT_AVAILABLE if the topic or
 * its leader is still not there, and the client asks again).
 */
#include <string.h>

#include "broker/conn.h"
#include "broker/coordinator_key.h"
#include "broker/ctl_wait.h"
#include "broker/group/store.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TRANSACTION 1

/* Whether this broker's coordinator of key_type serves key, or is
 * loading its partition (the client is sent here and told
 * COORDINATOR_LOAD_IN_PROGRESS until it is loaded, as Kafka does). */
static bool served_here(int8_t key_type, proto_str key)
{
	int32_t len = key.len > 0 ? key.len : 0;
	int16_t err = key_type == KEY_TYPE_GROUP
			      ? grp_coordinator_error(&server.groups, key.ptr, len)
			      : txn_coordinator_error(&server.txns, proto_str_of(key.ptr, len));
	return err == KERR_NONE || err == KERR_COORDINATOR_LOAD_IN_PROGRESS;
}

/* Where key's coordinator is: the leader of its partition of the internal
 * topic t (Kafka's GroupCoordinator.partitionFor /
 * TransactionStateManager.partitionFor), or NULL when t is missing, the
 * partition has no live leader, or it is this broker but its coordinator
 * does not serve the key. */
static const ctl_broker *coordinator_of(brk_topic *t, int8_t key_type, proto_str key)
{
	if (!t)
		return NULL;
	brk_partition *p = brk_topic_partition(
		t, brk_coordinator_partition(key.ptr, key.len > 0 ? key.len : 0, t->npartitions));
	if (!p || p->leader < 0)
		return NULL;
	if (p->leader == server.cluster.broker_id && !served_here(key_type, key))
		return NULL;
	return brk_cluster_broker(&server.cluster, p->leader);
}

/* b (NULL: none) as the coordinator, at its endpoint of listener (b
 * serves it: the caller checked). */
static void fill(FindCoordinatorResponse_Coordinator *c, int16_t err, const char *msg,
		 const ctl_broker *b, const char *listener)
{
	const char *host = "";
	int32_t port = -1;
	if (b)
		ctl_broker_node(b, listener, &host, &port);
	c->error_code = err;
	c->error_message = proto_cstr(msg);
	c->node_id = b ? b->id : -1;
	c->host = proto_cstr(host);
	c->port = port;
}

/* Whether the principal may describe key (Kafka checks it before the
 * coordinator is looked up, and so before its topic is made). */
static bool key_permitted(brk_request *req, int8_t key_type, proto_str key)
{
	return key_type == KEY_TYPE_GROUP
		       ? brk_acl_permits_str(req, CTL_ACL_RES_GROUP, key, CTL_ACL_OP_DESCRIBE)
		       : brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, key,
					     CTL_ACL_OP_DESCRIBE);
}

typedef struct find_state {
	FindCoordinatorRequest m;
} find_state;

/* Answer every key from what the registry knows now. */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	(void)w;
	find_state *st = arg;
	const FindCoordinatorRequest *m = &st->m;
	int16_t v = req->api_version;
	bool valid_type = m->key_type == KEY_TYPE_GROUP || m->key_type == KEY_TYPE_TRANSACTION;
	brk_topic *t = !valid_type ? NULL
		       : m->key_type == KEY_TYPE_GROUP ? grp_store_topic(&server.groups)
								 : txn_store_topic(&server.txns);
	int32_t n = v < 4 ? 1 : (m->coordinator_keys_count > 0 ? m->coordinator_keys_count : 0);
	FindCoordinatorResponse_Coordinator *cs =
		proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*cs));
	if (!cs)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++) {
		FindCoordinatorResponse_Coordinator *c = &cs[i];
		FindCoordinatorResponse_Coordinator_init(c);
		c->key = v < 4 ? m->key : m->coordinator_keys[i];
		const char *listener = brk_conn_listener_name(req->conn);
		const ctl_broker *b = valid_type ? coordinator_of(t, m->key_type, c->key) : NULL;
		/* A coordinator without the client's listener is not available
		 * to it (Kafka's getCoordinator: getAliveBrokerNode). */
		if (b && !ctl_broker_node(b, listener, NULL, NULL))
			b = NULL;
		if (!valid_type)
			fill(c, KERR_INVALID_REQUEST, "Invalid coordinator key type", NULL,
			     NULL);
		else if (!key_permitted(req, m->key_type, c->key) && m->key_type == KEY_TYPE_GROUP)
			fill(c, KERR_GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", NULL,
			     NULL);
		else if (!key_permitted(req, m->key_type, c->key))
			fill(c, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
			     "Transactional Id authorization failed.", NULL, NULL);
		else if (!b)
			fill(c, KERR_COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", NULL,
			     NULL);
		else
			fill(c, KERR_NONE, "NONE", b, listener);
	}
	FindCoordinatorResponse resp;
	FindCoordinatorResponse_init(&resp);
	if (v < 4) {
		resp.error_code = cs[0].error_code;
		resp.error_message = cs[0].error_message;
		resp.node_id = cs[0].node_id;
		resp.host = cs[0].host;
		resp.port = cs[0].port;
	} else {
		resp.coordinators = cs;
		resp.coordinators_count = n;
	}
	return FindCoordinatorResponse_encode(req->out, v, &resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_find_coordinator(brk_request *req)
{
	int16_t v = req->api_version;
	find_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, 1);
	if (!st || !w)
		return BRK_CLOSE;
	FindCoordinatorRequest_init(&st->m);
	if (FindCoordinatorRequest_decode(&req->body, req->arena, v, &st->m) != 0)
		return BRK_CLOSE;
	const FindCoordinatorRequest *m = &st->m;
	bool group = m->key_type == KEY_TYPE_GROUP;
	/* A principal refused every key creates nothing (Kafka authorizes
	 * each key before looking its coordinator up). */
	bool permitted = false;
	if (group || m->key_type == KEY_TYPE_TRANSACTION) {
		if (v < 4)
			permitted = key_permitted(req, m->key_type, m->key);
		for (int32_t i = 0; v >= 4 && i < m->coordinator_keys_count && !permitted; i++)
			permitted = key_permitted(req, m->key_type, m->coordinator_keys[i]);
	}
	if (permitted && !(group ? grp_store_topic(&server.groups) : txn_store_topic(&server.txns))) {
		/* The internal topic is made on first use, as Kafka does. */
		brk_internal_topic_op o;
		if (group)
			grp_store_topic_op(&o);
		else
			txn_store_topic_op(&o);
		brk_ctl_wait_submit(w, 0, &o.op);
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
