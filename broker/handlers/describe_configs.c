/*
 * describe_configs.c - DescribeConfigs (API key 32), versions 1-4, as
 * Kafka's ConfigHelper.describeConfigs answers, per resource:
 *  - TOPIC: a name that breaks the name rules is INVALID_TOPIC_EXCEPTION,
 *    an unknown topic UNKNOWN_TOPIC_OR_PARTITION (no message); else every
 *    topic config with its value, source (DYNAMIC_TOPIC_CONFIG for an
 *    override, else where the broker key's value comes from), synonyms
 *    when include_synonyms, type and documentation (v3+, the latter when
 *    include_documentation);
 *  - BROKER "<broker.id>": every broker key this broker reads, with its
 *    value (null for a key Kafka has no default for and nobody set), its
 *    source among dynamic broker, dynamic default, static and default, and
 *    read_only for the keys that cannot change at runtime; then the
 *    security keys set (ssl.*, sasl.*, listener.name.*; static or
 *    dynamic), a password (brk_config_is_password) sensitive with a null
 *    value; BROKER "": the
 *    cluster-wide dynamic defaults only; any other name INVALID_REQUEST;
 *  - BROKER_LOGGER "<broker.id>": the root logger (samsa has no other);
 *  - any other type: INVALID_REQUEST.
 * configuration_keys (when neither null nor empty) keeps only those names.
 */
#include <stdio.h>
#include <string.h>

#include "broker/dynamic_config.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/topic_config.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef DescribeConfigsResponse_DescribeConfigsResourceResult entry_t;

static char *arena_str(proto_arena *a, const char *s)
{
	size_t n = strlen(s);
	char *p = proto_arena_alloc(a, n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

static bool wanted(const DescribeConfigsRequest_DescribeConfigsResource *q, const char *name)
{
	if (q->configuration_keys_count <= 0)
		return true;
	size_t n = strlen(name);
	for (int32_t i = 0; i < q->configuration_keys_count; i++) {
		proto_str k = q->configuration_keys[i];
		if (k.len == (int32_t)n && memcmp(k.ptr, name, n) == 0)
			return true;
	}
	return false;
}

/* Room for up to max entries in r. */

static int reserve(brk_request *req, DescribeConfigsResponse_DescribeConfigsResult *r, int max)
{
	r->configs = proto_arena_alloc(req->arena, (size_t)(max > 0 ? max : 1) * sizeof(*r->configs));
	r->configs_count = 0;
	return r->configs ? 0 : -1;
}

/* Fill e; value NULL = null. Returns -1 when out of memory. */
static int fill(brk_request *req, const DescribeConfigsRequest *m, entry_t *e, const char *name,
		const char *value, bool read_only, int8_t source, int8_t type, const char *doc,
		const brk_config_synonym *syn, int nsyn)
{
	DescribeConfigsResponse_DescribeConfigsResourceResult_init(e);
	char *nm = arena_str(req->arena, name);
	char *v = value ? arena_str(req->arena, value) : NULL;
	if (!nm || (value && !v))
		return -1;
	e->name = proto_cstr(nm);
	e->value = proto_cstr(v);
	e->read_only = read_only;
	e->config_source = source;
	e->is_sensitive = false;
	e->config_type = type;
	e->documentation = proto_cstr(m->include_documentation && doc ? doc : NULL);
	if (m->include_synonyms && nsyn > 0) {
		e->synonyms = proto_arena_alloc(req->arena, (size_t)nsyn * sizeof(*e->synonyms));
		if (!e->synonyms)
			return -1;
		for (int i = 0; i < nsyn; i++) {
			DescribeConfigsResponse_DescribeConfigsSynonym *s = &e->synonyms[i];
			DescribeConfigsResponse_DescribeConfigsSynonym_init(s);
			char *sn = arena_str(req->arena, syn[i].name);
			char *sv = arena_str(req->arena, syn[i].value);
			if (!sn || !sv)
				return -1;
			s->name = proto_cstr(sn);
			s->value = proto_cstr(sv);
			s->source = syn[i].source;
		}
		e->synonyms_count = nsyn;
	}
	return 0;
}

static int describe_topic(brk_request *req, const DescribeConfigsRequest *m,
			  const DescribeConfigsRequest_DescribeConfigsResource *q,
			  DescribeConfigsResponse_DescribeConfigsResult *r, char *msg, size_t msgsize)
{
	int err = brk_config_check_topic_name(q->resource_name.ptr, q->resource_name.len, msg, msgsize);
	if (err)
		return err;
	const brk_topic *t = brk_topic_find(&server.partitions, q->resource_name.ptr, q->resource_name.len);
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	brk_config_layers layers;
	brk_dynamic_config_layers(&server.dynamic, &layers);
	int n = brk_topic_config_count();
	if (reserve(req, r, n))
		return -1;
	brk_topic_config_entry *te = proto_arena_alloc(req->arena, sizeof(*te));
	if (!te)
		return -1;
	for (int i = 0; i < n; i++) {
		if (brk_topic_config_entry_at(&layers, t->configs, t->nconfigs, i, te) != 0)
			break;
		if (!wanted(q, te->name))
			continue;
		if (fill(req, m, &r->configs[r->configs_count], te->name, te->value, false, te->source,
			 te->type, te->doc, te->synonyms, te->nsynonyms))
			return -1;
		r->configs_count++;
	}
	return KERR_NONE;
}

static const char *dyn_value(const ctl_config_entry *e, int32_t n, const char *name)
{
	for (int32_t i = n - 1; i >= 0; i--)
		if (strcmp(e[i].name, name) == 0)
			return e[i].value;
	return NULL;
}

static int describe_broker(brk_request *req, const DescribeConfigsRequest *m,
			   const DescribeConfigsRequest_DescribeConfigsResource *q,
			   DescribeConfigsResponse_DescribeConfigsResult *r, char *msg, size_t msgsize)
{
	brk_config_layers layers;
	brk_dynamic_config_layers(&server.dynamic, &layers);
	brk_config_synonym *syn = proto_arena_alloc(req->arena, BRK_CONFIG_MAX_SYNONYMS * sizeof(*syn));
	if (!syn)
		return -1;
	if (q->resource_name.len <= 0) {
		/* The cluster-wide dynamic defaults (Kafka's
		 * currentDynamicDefaultConfigs), each once. */
		const ctl_config_entry *d = layers.dynamic_default;
		int32_t nd = layers.ndynamic_default;
		if (reserve(req, r, nd))
			return -1;
		for (int32_t i = 0; i < nd; i++) {
			if (dyn_value(d, i, d[i].name) || !wanted(q, d[i].name))
				continue; /* an earlier duplicate: the last one is listed */
			const brk_config_key *k = brk_config_key_find(d[i].name);
			int ns = brk_config_synonyms(&layers, d[i].name, syn, BRK_CONFIG_MAX_SYNONYMS);
			int keep = 0;
			for (int s = 0; s < ns; s++)
				if (syn[s].source == BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER)
					syn[keep++] = syn[s];
			const char *v = dyn_value(d, nd, d[i].name);
			if (fill(req, m, &r->configs[r->configs_count], d[i].name, v, !(k && k->dynamic),
				 BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER,
				 k ? k->type : BRK_CONFIG_TYPE_UNKNOWN, k ? k->doc : NULL, syn, keep))
				return -1;
			r->configs_count++;
		}
		return KERR_NONE;
	}
	int32_t id;
	int err = brk_config_check_broker_name(q->resource_name.ptr, q->resource_name.len, server.cfg.broker_id, &id, msg,
					       msgsize);
	if (err) {
		/* ConfigHelper's wording for DescribeConfigs */
		if (strstr(msg, "Unexpected"))
			snprintf(msg, msgsize, "Unexpected broker id, expected %d or empty string, but "
				 "received %.*s", server.cfg.broker_id, (int)q->resource_name.len,
				 q->resource_name.ptr);
		else
			snprintf(msg, msgsize, "Broker id must be an integer, but it is: %.*s",
				 (int)q->resource_name.len, q->resource_name.ptr);
		return err;
	}
	int n = brk_config_key_count();
	const brk_config *eff = layers.effective;
	int nsec = 0;
	for (uint32_t pos = 0; pos < eff->security_props_len; nsec++) {
		const char *k = eff->security_props + pos;
		const char *v = k + strlen(k) + 1;
		pos = (uint32_t)(v + strlen(v) + 1 - eff->security_props);
	}
	if (reserve(req, r, n + nsec))
		return -1;
	char value[BRK_CONFIG_VALUE_MAX];
	for (int i = 0; i < n; i++) {
		const brk_config_key *k = brk_config_key_at(i);
		if (!wanted(q, k->name))
			continue;
		int ns = brk_config_synonyms(&layers, k->name, syn, BRK_CONFIG_MAX_SYNONYMS);
		/* Kafka shows null for a key without a default that nobody set. */
		bool has_value = ns > 0 || k->dflt;
		if (has_value)
			brk_config_format(layers.effective, k->name, value, sizeof(value));
		if (fill(req, m, &r->configs[r->configs_count], k->name, has_value ? value : NULL,
			 !k->dynamic, ns ? syn[0].source : BRK_CONFIG_SOURCE_DEFAULT, k->type, k->doc,
			 syn, ns))
			return -1;
		r->configs_count++;
	}
	/* The security keys set (ssl.*, sasl.*, listener.name.*, ...: kept
	 * as given, not in the key table), each once with its last value, as
	 * Kafka lists them; a PASSWORD type key is sensitive and its value
	 * null (Kafka never shows one). */
	for (uint32_t pos = 0; pos < eff->security_props_len;) {
		const char *k = eff->security_props + pos;
		const char *v = k + strlen(k) + 1;
		pos = (uint32_t)(v + strlen(v) + 1 - eff->security_props);
		bool later = false;
		for (uint32_t p2 = pos; p2 < eff->security_props_len && !later;) {
			const char *k2 = eff->security_props + p2;
			const char *v2 = k2 + strlen(k2) + 1;
			later = strcmp(k, k2) == 0;
			p2 = (uint32_t)(v2 + strlen(v2) + 1 - eff->security_props);
		}
		if (later || strcmp(k, "security.protocol") == 0 || brk_config_key_find(k) ||
		    !wanted(q, k))
			continue;
		int8_t source = BRK_CONFIG_SOURCE_STATIC_BROKER;
		if (layers.dynamic_broker && dyn_value(layers.dynamic_broker, layers.ndynamic_broker, k))
			source = BRK_CONFIG_SOURCE_DYNAMIC_BROKER;
		else if (layers.dynamic_default &&
			 dyn_value(layers.dynamic_default, layers.ndynamic_default, k))
			source = BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER;
		bool password = brk_config_is_password(k);
		/* Kafka: read-only unless one of its AllDynamicConfigs; the
		 * password encoder is read at start-up only */
		bool read_only = strncmp(k, "password.encoder.", 17) == 0;
		entry_t *e = &r->configs[r->configs_count];
		if (fill(req, m, e, k, password ? NULL : v, read_only, source,
			 password ? BRK_CONFIG_TYPE_PASSWORD : BRK_CONFIG_TYPE_STRING, NULL, NULL, 0))
			return -1;
		e->is_sensitive = password;
		r->configs_count++;
	}
	return KERR_NONE;
}

static int describe_logger(brk_request *req, const DescribeConfigsRequest *m,
			   const DescribeConfigsRequest_DescribeConfigsResource *q,
			   DescribeConfigsResponse_DescribeConfigsResult *r, char *msg, size_t msgsize)
{
	if (q->resource_name.len <= 0) {
		snprintf(msg, msgsize, "Broker id must not be empty");
		return KERR_INVALID_REQUEST;
	}
	int32_t id;
	int err = brk_config_check_broker_name(q->resource_name.ptr, q->resource_name.len, server.cfg.broker_id, &id, msg,
					       msgsize);
	if (err) {
		if (strstr(msg, "Unexpected"))
			snprintf(msg, msgsize, "Unexpected broker id, expected %d but received %.*s",
				 server.cfg.broker_id, (int)q->resource_name.len, q->resource_name.ptr);
		else
			snprintf(msg, msgsize, "Broker id must be an integer, but it is: %.*s",
				 (int)q->resource_name.len, q->resource_name.ptr);
		return err;
	}
	if (reserve(req, r, 1))
		return -1;
	if (wanted(q, "root")) {
		if (fill(req, m, &r->configs[0], "root", "INFO", false,
			 BRK_CONFIG_SOURCE_DYNAMIC_BROKER_LOGGER, BRK_CONFIG_TYPE_UNKNOWN, NULL, NULL, 0))
			return -1;
		r->configs_count = 1;
	}
	return KERR_NONE;
}

int brk_handle_describe_configs(brk_request *req)
{
	DescribeConfigsRequest m;
	DescribeConfigsRequest_init(&m);
	if (DescribeConfigsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	DescribeConfigsResponse resp;
	DescribeConfigsResponse_init(&resp);
	int32_t n = m.resources_count > 0 ? m.resources_count : 0;
	resp.results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.results));
	if (!resp.results)
		return BRK_CLOSE;
	resp.results_count = n;
	for (int32_t i = 0; i < n; i++) {
		const DescribeConfigsRequest_DescribeConfigsResource *q = &m.resources[i];
		DescribeConfigsResponse_DescribeConfigsResult *r = &resp.results[i];
		DescribeConfigsResponse_DescribeConfigsResult_init(r);
		r->resource_type = q->resource_type;
		r->resource_name = q->resource_name;
		char msg[512] = "";
		int err = brk_acl_config_error(req, q->resource_type, q->resource_name,
					    CTL_ACL_OP_DESCRIBE_CONFIGS);
		switch (err ? -1 : q->resource_type) {
		case -1:
			break;
		case BRK_RESOURCE_TOPIC:
			err = describe_topic(req, &m, q, r, msg, sizeof(msg));
			break;
		case BRK_RESOURCE_BROKER:
			err = describe_broker(req, &m, q, r, msg, sizeof(msg));
			break;
		case BRK_RESOURCE_BROKER_LOGGER:
			err = describe_logger(req, &m, q, r, msg, sizeof(msg));
			break;
		default:
			err = KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg), "Unsupported resource type: %d", q->resource_type);
			break;
		}
		if (err < 0)
			return BRK_CLOSE;
		if (err) {
			r->error_code = (int16_t)err;
			r->configs_count = 0;
			if (msg[0]) {
				char *s = arena_str(req->arena, msg);
				if (!s)
					return BRK_CLOSE;
				r->error_message = proto_cstr(s);
			}
		}
	}
	if (DescribeConfigsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
