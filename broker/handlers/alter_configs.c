/*
 * alter_configs.c - AlterConfigs (API key 33), versions 0-2: the legacy
 * API that replaces the whole set of dynamic configs of a resource (keys
 * not given are removed). Per resource, as Kafka's ConfigAdminManager
 * (preprocess) and ConfigurationControlManager.legacyAlterConfigs answer:
 *  - the same resource twice in the request: INVALID_REQUEST for both;
 *  - a config name twice: INVALID_REQUEST; a null value: INVALID_REQUEST;
 *  - TOPIC: "" INVALID_REQUEST, a bad name INVALID_TOPIC_EXCEPTION, an
 *    unknown or invalid config INVALID_CONFIG (Kafka's message), an unknown
 *    topic UNKNOWN_TOPIC_OR_PARTITION;
 *  - BROKER "" (cluster-wide default) or "<broker.id>" (another id or a
 *    non-number: INVALID_REQUEST): keys that cannot change at runtime or
 *    bad values INVALID_REQUEST (brk_dynamic_config_check_broker);
 *  - other types (BROKER_LOGGER too): INVALID_REQUEST.
 * A resource is changed all or nothing; validate_only checks and changes
 * nothing. The change is persisted and applied at once
 * (brk_dynamic_config_alter_topic / _broker).
 */
#include <stdio.h>
#include <string.h>

#include "broker/dynamic_config.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/topic_config.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Returns a Kafka error code with msg, or -1 when out of memory. */
static int alter_one(brk_request *req, const AlterConfigsRequest *m,
		     const AlterConfigsRequest_AlterConfigsResource *q, char *msg, size_t msgsize)
{
	int32_t nc = q->configs_count > 0 ? q->configs_count : 0;
	proto_str *names = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*names));
	bool *no_value = proto_arena_alloc(req->arena, (size_t)(nc ? nc : 1) * sizeof(*no_value));
	if (!names || !no_value)
		return -1;
	for (int32_t i = 0; i < nc; i++) {
		names[i] = q->configs[i].name;
		no_value[i] = q->configs[i].value.len < 0;
	}
	int err = brk_config_check_entries(req->arena, names, no_value, nc, msg, msgsize);
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
		if (!ctl_find_topic(server.ctl, q->resource_name.ptr, q->resource_name.len)) {
			snprintf(msg, msgsize, "The topic '%s' does not exist.", name);
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		if (m->validate_only)
			return KERR_NONE;
		return brk_dynamic_config_alter_topic(name, cfg, nc, msg, msgsize);
	}
	if (q->resource_type == BRK_RESOURCE_BROKER) {
		int32_t id = CTL_BROKER_DEFAULT;
		if (q->resource_name.len > 0) {
			err = brk_config_check_broker_name(q->resource_name.ptr, q->resource_name.len, &id,
							   msg, msgsize);
			if (err)
				return err;
		}
		err = brk_dynamic_config_check_broker(id, cfg, nc, msg, msgsize);
		if (err || m->validate_only)
			return err;
		return brk_dynamic_config_alter_broker(id, cfg, nc, msg, msgsize);
	}
	return brk_config_unsupported_type(q->resource_type, msg, msgsize);
}

/* brk_config_alter_fn over the decoded request. */
typedef struct alter_ctx {
	brk_request *req;
	const AlterConfigsRequest *m;
} alter_ctx;

static int alter_at(void *ctx, int32_t i, char *msg, size_t msgsize)
{
	alter_ctx *c = ctx;
	return alter_one(c->req, c->m, &c->m->resources[i], msg, msgsize);
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
	alter_ctx c = { req, &m };
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
	}
	if (AlterConfigsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
