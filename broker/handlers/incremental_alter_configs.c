/*
 * incremental_alter_configs.c - IncrementalAlterConfigs (API key 44),
 * versions 0-1 (KIP-339): SET (0), DELETE (1), APPEND (2) and SUBTRACT (3)
 * on single configs of a resource, the others kept. Per resource, as
 * Kafka's ConfigAdminManager (preprocess) and
 * ConfigurationControlManager.incrementalAlterConfigs answer:
 *  - the same resource twice: INVALID_REQUEST for both; a config name
 *    twice: INVALID_REQUEST; a null value outside DELETE: INVALID_REQUEST;
 *    a NUL byte in a name or value: INVALID_REQUEST;
 *    an operation outside 0-3: INVALID_REQUEST;
 *  - TOPIC: "" INVALID_REQUEST, a bad name INVALID_TOPIC_EXCEPTION;
 *    APPEND/SUBTRACT on a config that is not a LIST: INVALID_CONFIG; the
 *    resulting set must pass brk_topic_config_check (INVALID_CONFIG with
 *    Kafka's message); an unknown topic UNKNOWN_TOPIC_OR_PARTITION. APPEND
 *    adds the items not there yet to the override (or to the LogConfig
 *    default when there is none), SUBTRACT removes them;
 *  - BROKER "" or "<broker.id>": as AlterConfigs, the operations applied to
 *    the resource's current dynamic configs;
 *  - other types: INVALID_REQUEST (BROKER_LOGGER is not served: samsa has
 *    no runtime loggers).
 * All or nothing per resource; validate_only changes nothing.
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

enum { OP_SET = 0, OP_DELETE = 1, OP_APPEND = 2, OP_SUBTRACT = 3 };

typedef IncrementalAlterConfigsRequest_AlterConfigsResource resource_t;
typedef IncrementalAlterConfigsRequest_AlterableConfig op_t;

/* A config set being edited; entries point into ctl or the arena. */
typedef struct work_set {
	ctl_config_entry *e;
	int32_t n;
} work_set;

static int32_t ws_find(const work_set *w, const char *name)
{
	for (int32_t i = 0; i < w->n; i++)
		if (strcmp(w->e[i].name, name) == 0)
			return i;
	return -1;
}

static void ws_set(work_set *w, char *name, char *value)
{
	int32_t i = ws_find(w, name);
	if (i < 0)
		i = w->n++;
	w->e[i].name = name;
	w->e[i].value = value;
}

static void ws_delete(work_set *w, const char *name)
{
	int32_t i = ws_find(w, name);
	if (i < 0)
		return;
	memmove(&w->e[i], &w->e[i + 1], (size_t)(w->n - i - 1) * sizeof(*w->e));
	w->n--;
}

/* Does list (comma separated) hold item (len bytes) as a whole item? */
static bool list_has(const char *list, const char *item, size_t len)
{
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == len && memcmp(p, item, len) == 0)
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

/*
 * APPEND or SUBTRACT value to/from old (Kafka's getParts: old split on ','
 * without empty items; the operand split as Java's String.split, which
 * drops trailing empty strings). Returns the new list in the arena, or NULL
 * when out of memory.
 */
static char *list_op(proto_arena *a, const char *old, const char *value, bool append)
{
	size_t cap = strlen(old) + strlen(value) + 2;
	char *out = proto_arena_alloc(a, cap);
	if (!out)
		return NULL;
	out[0] = '\0';
	size_t used = 0;
	/* operand items, trailing empty ones dropped */
	size_t vlen = strlen(value);
	while (vlen > 0 && value[vlen - 1] == ',')
		vlen--;
	char *ops = brk_config_strndup(a, value, (int32_t)vlen);
	if (!ops)
		return NULL;
	/* keep the old items (minus the subtracted ones, first occurrence of each) */
	char *removed = proto_arena_alloc(a, strlen(old) + 1);
	if (!removed)
		return NULL;
	removed[0] = '\0';
	const char *p = old;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n > 0) {
			bool drop = false;
			if (!append && list_has(ops, p, n) && !list_has(removed, p, n)) {
				drop = true;
				size_t r = strlen(removed);
				snprintf(removed + r, strlen(old) + 1 - r, "%s%.*s", r ? "," : "", (int)n, p);
			}
			if (!drop)
				used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? "," : "",
							 (int)n, p);
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (append) {
		const char *q = ops;
		for (;;) {
			const char *e = strchr(q, ',');
			size_t n = e ? (size_t)(e - q) : strlen(q);
			if (!list_has(out, q, n))
				used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? "," : "",
							 (int)n, q);
			if (!e)
				break;
			q = e + 1;
		}
	}
	return out;
}

static const char *op_name(int8_t op)
{
	return op == OP_APPEND ? "APPEND" : "SUBTRACT";
}

/* Apply the operations of q to w. Returns a Kafka error code, -1 when out
 * of memory. */
static int apply_ops(brk_request *req, const resource_t *q, work_set *w, bool topic, char *msg,
		     size_t msgsize)
{
	for (int32_t i = 0; i < q->configs_count; i++) {
		const op_t *c = &q->configs[i];
		char *name = brk_config_strndup(req->arena, c->name.ptr, c->name.len);
		if (!name)
			return -1;
		if (c->config_operation == OP_SET) {
			char *v = brk_config_strndup(req->arena, c->value.ptr, c->value.len);
			if (!v)
				return -1;
			ws_set(w, name, v);
		} else if (c->config_operation == OP_DELETE) {
			ws_delete(w, name);
		} else {
			const char *dflt;
			if (topic) {
				dflt = brk_topic_config_list_default(name);
				if (!dflt) {
					snprintf(msg, msgsize, "Can't %s to key %s because its type is not LIST.",
						 op_name(c->config_operation), name);
					return KERR_INVALID_CONFIG;
				}
			} else {
				const brk_config_key *k = brk_config_key_find(name);
				if (!k || k->type != BRK_CONFIG_TYPE_LIST) {
					snprintf(msg, msgsize, "Config value %s is not allowed for config key: %s",
						 c->config_operation == OP_APPEND ? "append" : "subtract", name);
					return KERR_INVALID_CONFIG;
				}
				brk_config defaults;
				brk_config_defaults(&defaults);
				char *d = proto_arena_alloc(req->arena, BRK_CONFIG_VALUE_MAX);
				if (!d)
					return -1;
				brk_config_format(&defaults, name, d, BRK_CONFIG_VALUE_MAX);
				dflt = d;
			}
			int32_t at = ws_find(w, name);
			const char *old = at >= 0 ? w->e[at].value : dflt;
			char *v = brk_config_strndup(req->arena, c->value.ptr, c->value.len);
			if (!v)
				return -1;
			char *nv = list_op(req->arena, old, v, c->config_operation == OP_APPEND);
			if (!nv)
				return -1;
			ws_set(w, name, nv);
		}
	}
	return KERR_NONE;
}

/* Copy a config set into a work set with room for extra more entries. */
static int ws_init(brk_request *req, work_set *w, const ctl_config_entry *e, int32_t n, int32_t extra)
{
	w->e = proto_arena_alloc(req->arena, (size_t)(n + extra + 1) * sizeof(*w->e));
	if (!w->e)
		return -1;
	for (int32_t i = 0; i < n; i++)
		w->e[i] = e[i];
	w->n = n;
	return 0;
}

static int alter_one(brk_request *req, const IncrementalAlterConfigsRequest *m, const resource_t *q,
		     ctl_op *op, char *msg, size_t msgsize)
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
		no_value[i] = q->configs[i].config_operation != OP_DELETE && q->configs[i].value.len < 0;
	}
	int err = brk_config_check_entries(req->arena, names, values, no_value, nc, msg, msgsize);
	if (err)
		return err;
	for (int32_t i = 0; i < nc; i++)
		if (q->configs[i].config_operation < OP_SET ||
		    q->configs[i].config_operation > OP_SUBTRACT) {
			snprintf(msg, msgsize, "Unknown operations type %d", q->configs[i].config_operation);
			return KERR_INVALID_REQUEST;
		}

	work_set w;
	if (q->resource_type == BRK_RESOURCE_TOPIC) {
		if (q->resource_name.len <= 0) {
			snprintf(msg, msgsize, "Default topic resources are not allowed.");
			return KERR_INVALID_REQUEST;
		}
		err = brk_config_check_topic_name(q->resource_name.ptr, q->resource_name.len, msg,
						  msgsize);
		if (err)
			return err;
		const brk_topic *t = brk_topic_find(&server.partitions, q->resource_name.ptr, q->resource_name.len);
		if (ws_init(req, &w, t ? t->configs : NULL, t ? t->nconfigs : 0, nc))
			return -1;
		err = apply_ops(req, q, &w, true, msg, msgsize);
		if (err)
			return err;
		for (int32_t i = 0; i < w.n; i++) {
			err = brk_topic_config_check(w.e[i].name, (int32_t)strlen(w.e[i].name), w.e[i].value,
						     (int32_t)strlen(w.e[i].value), msg, msgsize);
			if (err)
				return err;
		}
		char *name = brk_config_strndup(req->arena, q->resource_name.ptr, q->resource_name.len);
		if (!name)
			return -1;
		if (!t) {
			snprintf(msg, msgsize, "The topic '%s' does not exist.", name);
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		if (m->validate_only)
			return KERR_NONE;
		*op = (ctl_op){ .type = CTL_OP_SET_TOPIC_CONFIGS, .configs = w.e, .nconfigs = w.n };
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
		int32_t ncur;
		const ctl_config_entry *cur = brk_dynamic_config_of(&server.dynamic, id, &ncur);
		if (ws_init(req, &w, cur, ncur, nc))
			return -1;
		err = apply_ops(req, q, &w, false, msg, msgsize);
		if (err)
			return err;
		err = brk_dynamic_config_check_broker(id, w.e, w.n, msg, msgsize);
		if (!err)
			err = brk_dynamic_config_check_passwords(&server.dynamic, bname, w.e, w.n, msg,
								 msgsize);
		if (!err)
			err = brk_dynamic_config_check_rebuild(&server.dynamic, id, w.e, w.n, msg, msgsize);
		if (err || m->validate_only)
			return err;
		/* stored encrypted (ZooKeeper, the metadata file), never plain */
		err = brk_dynamic_config_encode_passwords(&server.dynamic, req->arena, w.e, w.n, msg,
							  msgsize);
		if (err)
			return err;
		*op = (ctl_op){ .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = id, .configs = w.e,
				.nconfigs = w.n };
		return BRK_CONFIG_PENDING;
	}
	return brk_config_unsupported_type(q->resource_type, msg, msgsize);
}

/* brk_config_alter_fn over the decoded request. */
typedef struct alter_ctx {
	brk_request *req;
	ctl_op *ops; /* per resource: the change handed to the controller */
	const IncrementalAlterConfigsRequest *m;
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
	IncrementalAlterConfigsResponse resp;
} alter_state;

/* The controller's results for the changes handed to it. */
static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	alter_state *st = arg;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const ctl_result *res = brk_ctl_wait_result(w, i);
		if (!res)
			continue;
		IncrementalAlterConfigsResponse_AlterConfigsResourceResponse *r = &st->resp.responses[i];
		r->error_code = res->error;
		r->error_message = proto_cstr(NULL);
		if (res->error && res->msg[0]) {
			char *m = brk_config_strndup(req->arena, res->msg, (int32_t)strlen(res->msg));
			if (!m)
				return BRK_CLOSE;
			r->error_message = proto_cstr(m);
		}
	}
	return IncrementalAlterConfigsResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

int brk_handle_incremental_alter_configs(brk_request *req)
{
	IncrementalAlterConfigsRequest m;
	IncrementalAlterConfigsRequest_init(&m);
	if (IncrementalAlterConfigsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	IncrementalAlterConfigsResponse resp;
	IncrementalAlterConfigsResponse_init(&resp);
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
		IncrementalAlterConfigsResponse_AlterConfigsResourceResponse *r = &resp.responses[i];
		IncrementalAlterConfigsResponse_AlterConfigsResourceResponse_init(r);
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
