/*
 * dynamic_config.c - runtime config changes: persist through the
 * controller, rebuild server.cfg from its layers, and push the effective
 * topic configs to the running logs.
 */
#include "broker/dynamic_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/partitions.h"
#include "broker/server.h"
#include "broker/topic_config.h"
#include "protocol/err.h"

/* The static broker config (as read at start-up). Like the partition
 * registry, module state of the loop thread. */
static struct {
	brk_config static_cfg;
	bool ready;
} dyn;

void brk_dynamic_config_layers(brk_config_layers *out)
{
	memset(out, 0, sizeof(*out));
	out->effective = &server.cfg;
	out->static_cfg = dyn.ready ? &dyn.static_cfg : &server.cfg;
	if (server.ctl) {
		out->dynamic_broker = ctl_broker_configs(server.ctl, server.cfg.broker_id,
							 &out->ndynamic_broker);
		out->dynamic_default = ctl_broker_configs(server.ctl, CTL_BROKER_DEFAULT,
							  &out->ndynamic_default);
	}
}

void brk_dynamic_config_init(void)
{
	dyn.static_cfg = server.cfg;
	dyn.ready = true;
	brk_config_layers layers;
	brk_dynamic_config_layers(&layers);
	brk_config_rebuild(&layers, &server.cfg, stderr);
}

/* Rebuild the effective config of topic t and hand it to its logs. */
static void apply_topic(brk_topic *t)
{
	brk_topic_config_build(&server.cfg, t->meta->configs, t->meta->nconfigs, &t->cfg);
	for (int32_t i = 0; i < t->npartitions; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		if (p && p->log)
			log_set_config(p->log, &t->cfg.log);
	}
}

/* The message of an alter whose metadata write failed. */
static int alter_failed(int err, char *msg, size_t msgsize)
{
	if (err == KERR_KAFKA_STORAGE_ERROR)
		snprintf(msg, msgsize, "The cluster metadata could not be written.");
	return err;
}

int brk_dynamic_config_alter_topic(const char *name, const ctl_config_entry *configs, int32_t n,
				   char *msg, size_t msgsize)
{
	int err = ctl_set_topic_configs(server.ctl, name, configs, n);
	if (err)
		return alter_failed(err, msg, msgsize);
	brk_topic *t = brk_topic_find(name, (int32_t)strlen(name));
	if (t)
		apply_topic(t);
	return KERR_NONE;
}

int brk_dynamic_config_check_broker(int32_t broker_id, const ctl_config_entry *configs, int32_t n,
				    char *msg, size_t msgsize)
{
	(void)broker_id; /* no key of ours is per-broker only */
	msg[0] = '\0';
	/* Kafka's checks in order: keys that are not dynamic, then values. */
	size_t used = 0;
	int nbad = 0;
	for (int32_t i = 0; i < n; i++) {
		const brk_config_key *k = brk_config_key_find(configs[i].name);
		if (!k || k->dynamic)
			continue;
		bool seen = false;
		for (int32_t j = 0; j < i; j++)
			seen |= strcmp(configs[j].name, configs[i].name) == 0;
		if (seen)
			continue;
		if (nbad == 0)
			used = (size_t)snprintf(msg, msgsize, "Cannot update these configs dynamically: [");
		if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, "%s%s", nbad ? ", " : "",
						 configs[i].name);
		nbad++;
	}
	if (nbad) {
		if (used < msgsize)
			snprintf(msg + used, msgsize - used, "]");
		return KERR_INVALID_REQUEST;
	}
	brk_config scratch;
	brk_config_defaults(&scratch);
	for (int32_t i = 0; i < n; i++) {
		if (!brk_config_key_find(configs[i].name))
			continue;
		char err[512];
		if (brk_config_set(&scratch, configs[i].name, configs[i].value, NULL, err,
				   sizeof(err)) < 0) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: %s",
				 configs[i].value, configs[i].name, err);
			return KERR_INVALID_REQUEST;
		}
	}
	return KERR_NONE;
}

int brk_dynamic_config_alter_broker(int32_t broker_id, const ctl_config_entry *configs, int32_t n,
				    char *msg, size_t msgsize)
{
	if (!dyn.ready)
		brk_dynamic_config_init();
	int err = ctl_set_broker_configs(server.ctl, broker_id, configs, n);
	if (err)
		return alter_failed(err, msg, msgsize);
	brk_config_layers layers;
	brk_dynamic_config_layers(&layers);
	brk_config_rebuild(&layers, &server.cfg, stderr);
	for (int32_t i = 0; i < ctl_topic_count(server.ctl); i++) {
		const ctl_topic *m = ctl_topic_at(server.ctl, i);
		brk_topic *t = brk_topic_find(m->name, (int32_t)strlen(m->name));
		if (t)
			apply_topic(t);
	}
	return KERR_NONE;
}

int brk_config_check_topic_name(const char *name, int32_t len, char *msg, size_t msgsize)
{
	msg[0] = '\0';
	if (!name || len <= 0) {
		snprintf(msg, msgsize, "Topic name is illegal, it can't be empty");
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(msg, msgsize, "Topic name cannot be \".\" or \"..\"");
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (len > CTL_TOPIC_NAME_MAX) {
		snprintf(msg, msgsize, "Topic name is illegal, it can't be longer than %d characters, "
			 "topic name: %.*s", CTL_TOPIC_NAME_MAX, (int)len, name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (ctl_validate_topic_name(name, len)) {
		snprintf(msg, msgsize, "Topic name \"%.*s\" is illegal, it contains a character other "
			 "than ASCII alphanumerics, '.', '_' and '-'", (int)len, name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	return KERR_NONE;
}

int brk_config_check_broker_name(const char *name, int32_t len, int32_t *id, char *msg,
				 size_t msgsize)
{
	msg[0] = '\0';
	/* Java's Integer.parseInt: optional sign, decimal digits, int range. */
	int64_t v = 0;
	int32_t i = 0;
	bool neg = false, ok = len > 0 && len <= 11;
	if (ok && (name[0] == '-' || name[0] == '+')) {
		neg = name[0] == '-';
		i = 1;
		ok = len > 1;
	}
	for (; ok && i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			ok = false;
		else
			v = v * 10 + (name[i] - '0');
	}
	if (neg)
		v = -v;
	if (!ok || v < INT32_MIN || v > INT32_MAX) {
		snprintf(msg, msgsize, "Node id must be an integer, but it is: %.*s",
			 len > 0 ? (int)len : 0, name ? name : "");
		return KERR_INVALID_REQUEST;
	}
	if (v != server.cfg.broker_id) {
		snprintf(msg, msgsize, "Unexpected broker id, expected %d, but received %.*s",
			 server.cfg.broker_id, (int)len, name);
		return KERR_INVALID_REQUEST;
	}
	*id = (int32_t)v;
	return KERR_NONE;
}

typedef struct dup_ctx {
	const proto_str *names;
	const int8_t *kinds;
} dup_ctx;

static int dup_cmp(const void *a, const void *b, void *arg)
{
	const dup_ctx *c = arg;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	if (c->kinds && c->kinds[i] != c->kinds[j])
		return c->kinds[i] < c->kinds[j] ? -1 : 1;
	proto_str x = c->names[i], y = c->names[j];
	int32_t lx = x.len > 0 ? x.len : 0, ly = y.len > 0 ? y.len : 0;
	int r = memcmp(x.ptr ? x.ptr : "", y.ptr ? y.ptr : "", (size_t)(lx < ly ? lx : ly));
	if (r)
		return r;
	return lx < ly ? -1 : lx > ly;
}

void brk_config_find_duplicates(const proto_str *names, const int8_t *kinds, int32_t n,
				bool *dup, int32_t *scratch)
{
	dup_ctx c = { names, kinds };
	for (int32_t i = 0; i < n; i++) {
		scratch[i] = i;
		dup[i] = false;
	}
	qsort_r(scratch, (size_t)n, sizeof(*scratch), dup_cmp, &c);
	for (int32_t i = 1; i < n; i++)
		if (dup_cmp(&scratch[i - 1], &scratch[i], &c) == 0)
			dup[scratch[i - 1]] = dup[scratch[i]] = true;
}

int brk_config_check_entries(proto_arena *a, const proto_str *names, const bool *no_value, int32_t n,
			     char *msg, size_t msgsize)
{
	size_t cap = (size_t)(n > 0 ? n : 1);
	bool *dup = proto_arena_alloc(a, cap * sizeof(*dup));
	int32_t *scratch = proto_arena_alloc(a, cap * sizeof(*scratch));
	if (!dup || !scratch)
		return -1;
	brk_config_find_duplicates(names, NULL, n, dup, scratch);
	for (int32_t i = 0; i < n; i++)
		if (dup[i]) {
			snprintf(msg, msgsize, "Error due to duplicate config keys");
			return KERR_INVALID_REQUEST;
		}
	size_t used = 0;
	for (int32_t i = 0; i < n; i++) {
		if (!no_value[i])
			continue;
		if (used == 0)
			used = (size_t)snprintf(msg, msgsize, "Null value not supported for : ");
		else if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, ", ");
		if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, "%.*s",
						 names[i].len > 0 ? (int)names[i].len : 0, names[i].ptr);
	}
	return used ? KERR_INVALID_REQUEST : KERR_NONE;
}

int brk_config_unsupported_type(int8_t type, char *msg, size_t msgsize)
{
	const char *name = type == 8 ? "BROKER_LOGGER" : type == 16 ? "CLIENT_METRICS"
			 : type == 32 ? "GROUP" : NULL;
	if (name)
		snprintf(msg, msgsize, "Resource type %s (%d) is not supported by this broker", name,
			 type);
	else
		snprintf(msg, msgsize, "Unknown resource type %d", type);
	return KERR_INVALID_REQUEST;
}

char *brk_config_strndup(proto_arena *a, const char *p, int32_t len)
{
	char *s = proto_arena_alloc(a, (size_t)(len > 0 ? len : 0) + 1);
	if (s && len > 0)
		memcpy(s, p, (size_t)len);
	if (s)
		s[len > 0 ? len : 0] = '\0';
	return s;
}

int brk_config_alter_resources(proto_arena *a, const proto_str *names, const int8_t *kinds,
			       int32_t n, brk_config_alter_fn alter, void *ctx, int16_t *err,
			       proto_str *msg)
{
	size_t cap = (size_t)(n > 0 ? n : 1);
	bool *dup = proto_arena_alloc(a, cap * sizeof(*dup));
	int32_t *scratch = proto_arena_alloc(a, cap * sizeof(*scratch));
	if (!dup || !scratch)
		return -1;
	brk_config_find_duplicates(names, kinds, n, dup, scratch);
	for (int32_t i = 0; i < n; i++) {
		char text[512] = "";
		int rc;
		if (dup[i]) {
			rc = KERR_INVALID_REQUEST;
			snprintf(text, sizeof(text), "Each resource must appear at most once.");
		} else {
			rc = alter(ctx, i, text, sizeof(text));
		}
		if (rc < 0)
			return -1;
		err[i] = (int16_t)rc;
		msg[i] = proto_cstr(NULL);
		if (rc && text[0]) {
			char *s = brk_config_strndup(a, text, (int32_t)strlen(text));
			if (!s)
				return -1;
			msg[i] = proto_cstr(s);
		}
	}
	return 0;
}
