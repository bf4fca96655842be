/*
 * alter_configs.c - AlterConfigs (API key 33), versions 0-2: the legacy
 * API that replaces the whole set of dynamic configs of a resource (keys
 * not given are removed). Per resource, as Kafka's ConfigAdminManager
 * (preprocess) and ConfigurationControlManager.legacyAlterConfigs answer:
 *  - the same resource twice in the request: INVALID_REQUEST for both;
 *  - a config name twice: INVALID_REQUEST; a null value: INVALID_REQUEST;
 *    a NUL byte in a name or value: INVALID_REQUEST (brk_config_check_entries);
 *  - TOPIC: "" INVALID_REQUEST, a bad name INVALID_TOPIC_EXCEPTION, an
 *    unknown or invalid config INVALID_CONFIG (Kafka's message), an unknown
 *    topic UNKNOWN_TOPIC_OR_PARTITION;
 *  - BROKER "" (cluster-wide default) or "<broker.id>" (another id or a
 *    non-number: INVALID_REQUEST): keys that cannot change at runtime,
 *    SSL keys without a listener prefix, per-broker keys at "", bad values
 *    (brk_dynamic_config_check_broker), a set the broker could not apply
 *    (brk_dynamic_config_check_rebuild): INVALID_REQUEST;
 *  - other types (BROKER_LOGGER too): INVALID_REQUEST.
 * A resource is changed all or nothing; validate_only checks and changes
 * nothing. The change goes to the controller, which persists it and
 * reports it back (the topic's config, or the broker config layers, change
 * then); the answer waits for its result.
 */
#include <stdio.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/dynamic_config.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/topic_config.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Returns a Kafka error code with msg, BRK_CONFIG_PENDING with *op to hand
 * to the controller, or -1 when out of memory. */
static int alter_one(brk_request *req, const AlterConfigsRequest *m,
		     const AlterConfigsRequest_AlterConfigsResource *q, ctl_op *op, char *msg,
		     size_t msgsize)
{
	int32_t nc = q->configs_count > 0 ? q->configs_count : 0;
	proto_str *names = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*names));
	proto_str *values = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*values));
	bool *no_value = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*no_value));
	if (!names || !values || !no_value)
		return -1;
	for (int32_t i = 0; i < nc; i++) {
		names[i] = q->configs[i].name;
		values[i] = q->configs[i].value;
		no_value[i] = q->configs[i].value.len < 0;
	}
	int err = brk_config_check_entries(req->arena, names, values, no_value, nc, msg, msgsize);
	if (err)
		return err;

	ctl_config_entry *cfg = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*cfg));
	if (!cfg)
		return -1;
	for (int32_t i = 0; i < nc; i++) {
		cfg[i].name = brk_config_strndup(req->arena, q->configs[i].name.ptr, q->configs[i].name.len);
		cfg[i].value = brk_config_strndup(req->arena, q->configs[i].value.ptr, q->configs[i].value.len);
		if (!cfg[i].name || !cfg[i].value)
			return -1;
	}

	if (q->resource_type == BRK_RESOURCE_TOPIC) {
		if (q->resource_name.len <= 0) {
			snprintf(msg, msgsize, "Default topic resources are not allowed.");
			return KERR_INVALID_REQUEST;
		}
		err = brk_config_check_topic_name(q->resource_name.ptr, q->resource_name.len, msg,
						  msgsize);
		if (err)
			return err;
		for (int32_t i = 0; i < nc; i++) {
			const AlterConfigsRequest_AlterableConfig *c = &q->configs[i];
			err = brk_topic_config_check(c->name.ptr, c->name.len, c->value.ptr, c->value.len,
						     msg, msgsize);
			if (err)
				return err;
		}
		char *name = brk_config_strndup(req->arena, q->resource_name.ptr, q->resource_name.len);
		if (!name)
			return -1;
		if (!brk_topic_find(&server.partitions, q->resource_name.ptr, q->resource_name.len)) {
			snprintf(msg, msgsize, "The topic '%s' does not exist.", name);
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		if (m->validate_only)
			return KERR_NONE;
		*op = (ctl_op){ .type = CTL_OP_SET_TOPIC_CONFIGS, .configs = cfg, .nconfigs = nc };
		memcpy(op->topic, name, strlen(name) + 1);
		return BRK_CONFIG_PENDING;
	}
	if (q->resource_type == BRK_RESOURCE_BROKER) {
		int32_t id = CTL_BROKER_DEFAULT;
		char bname[64]; /* for messages */
		snprintf(bname, sizeof(bname), "%.*s", (int)(q->resource_name.len > 0 ? q->resource_name.len : 0),
			 q->resource_name.ptr ? q->resource_name.ptr : "");
		if (q->resource_name.len > 0) {
			err = brk_config_check_broker_name(q->resource_name.ptr, q->resource_name.len, server.cfg.broker_id, &id,
							   msg, msgsize);
			if (err)
				return err;
		}
		err = brk_dynamic_config_check_broker(id, cfg, nc, msg, msgsize);
		if (!err)
			err = brk_dynamic_config_check_passwords(&server.dynamic, bname, cfg, nc, msg,
								 msgsize);
		if (!err)
			err = brk_dynamic_config_check_rebuild(&server.dynamic, id, cfg, nc, msg, msgsize);
		if (err || m->validate_only)
			return err;
		/* stored encrypted (ZooKeeper, the metadata file), never plain */
		err = brk_dynamic_config_encode_passwords(&server.dynamic, req->arena, cfg, nc, msg,
							  msgsize);
		if (err)
			return err;
		*op = (ctl_op){ .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = id, .configs = cfg,
				.nconfigs = nc };
		return BRK_CONFIG_PENDING;
	}
	return brk_config_unsupported_type(q->resource_type, msg, msgsize);
}

/* brk_config_alter_fn over the decoded request. */
typedef struct alter_ctx {
	brk_request *req;
	ctl_op *ops; /* per resource: the change handed to the controller */
	const AlterConfigsRequest *m;
} alter_ctx;


static int alter_at(void *ctx, int32_t i, char *msg, size_t msgsize)
{
	alter_ctx *c = ctx;
	int err = brk_acl_config_error(c->req, c->m->resources[i].resource_type,
				    c->m->resources[i].resource_name, CTL_ACL_OP_ALTER_CONFIGS);
	if (err)
		return err;
	return alter_one(c->req, c->m, &c->m->resources[i], &c->ops[i], msg, msgsize);
}

typedef struct alter_state {
	AlterConfigsResponse resp;
} alter_state;

/* The controller's results for the changes handed to it. */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	alter_state *st = arg;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const ctl_result *res = brk_ctl_wait_result(w, i);
		if (!res)
			continue;
		AlterConfigsResponse_AlterConfigsResourceResponse *r = &st->resp.responses[i];
		r->error_code = res->error;
		r->error_message = proto_cstr(NULL);
		if (res->error && res->msg[0]) {
			char *m = brk_config_strndup(req->arena, res->msg, (int32_t)strlen(res->msg));
			if (!m)
				return BRK_CLOSE;
			r->error_message = proto_cstr(m);
		}
	}
	return AlterConfigsResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_alter_configs(brk_request *req)
{
	AlterConfigsRequest m;
	AlterConfigsRequest_init(&m);
	if (AlterConfigsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	AlterConfigsResponse resp;
	AlterConfigsResponse_init(&resp);
	int32_t n = m.resources_count > 0 ? m.resources_count : 0;
	size_t cap = (size_t)(n ? n : 1);
	resp.responses = proto_arena_alloc(req->arena, cap * sizeof(*resp.responses));
	proto_str *names = proto_arena_alloc(req->arena, cap * sizeof(*names));
	int8_t *kinds = proto_arena_alloc(req->arena, cap * sizeof(*kinds));
	int16_t *errs = proto_arena_alloc(req->arena, cap * sizeof(*errs));
	proto_str *msgs = proto_arena_alloc(req->arena, cap * sizeof(*msgs));
	if (!resp.responses || !names || !kinds || !errs || !msgs)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++) {
		names[i] = m.resources[i].resource_name;
		kinds[i] = m.resources[i].resource_type;
	}
	alter_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	ctl_op *ops = proto_arena_alloc(req->arena, cap * sizeof(*ops));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n);
	if (!st || !ops || !w)
		return BRK_CLOSE;
	alter_ctx c = { req, ops, &m };
	if (brk_config_alter_resources(req->arena, names, kinds, n, alter_at, &c, errs, msgs) < 0)
		return BRK_CLOSE;
	resp.responses_count = n;
	for (int32_t i = 0; i < n; i++) {
		AlterConfigsResponse_AlterConfigsResourceResponse *r = &resp.responses[i];
		AlterConfigsResponse_AlterConfigsResourceResponse_init(r);
		r->resource_type = kinds[i];
		r->resource_name = names[i];
		r->error_code = errs[i];
		r->error_message = msgs[i];
		if (errs[i] == BRK_CONFIG_PENDING && brk_ctl_wait_submit(w, i, &ops[i]) != 0)
			r->error_code = KERR_UNKNOWN_SERVER_ERROR;
	}
	st->resp = resp;
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
