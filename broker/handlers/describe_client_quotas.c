/*
 * describe_client_quotas.c - DescribeClientQuotas (API key 48), versions
 * 0-1 (KIP-546), as Kafka 4's broker answers it (ClientQuotasImage.describe):
 *
 *  - each filter component names an entity type, at most once: an empty
 *    type is INVALID_REQUEST "Invalid empty entity type.", a repeated one
 *    "Entity type T cannot appear more than once in the filter.", a type
 *    other than "user", "client-id", "ip" UNSUPPORTED_VERSION "Unsupported
 *    entity type T";
 *  - match types: 0 EXACT (Match is the name; null is INVALID_REQUEST),
 *    1 DEFAULT (the default entity; a Match is INVALID_REQUEST), 2
 *    SPECIFIED (any name, the default too; a Match is INVALID_REQUEST);
 *    another is "Unknown match type N";
 *  - "ip" with "user" or "client-id": INVALID_REQUEST;
 *  - an entity matches when it has every type of the filter with the name
 *    asked (EXACT, DEFAULT) and, with Strict, no other type;
 *  - an entity is listed with its quota keys only (a user's SCRAM
 *    credentials share its map and are never shown), and only when it has
 *    any; a value that does not parse as a number is left out.
 * Without DESCRIBE_CONFIGS on the cluster (an authorizer is set):
 * CLUSTER_AUTHORIZATION_FAILED. An error is answered at the top level
 * with entries null (Kafka's DescribeClientQuotasRequest.getErrorResponse),
 * not an empty array. Entities come
 * from the client configs of this broker (broker/client_config.h), named
 * with their desanitized names (null for the default).
 */
#include <stdio.h>
#include <string.h>

#include "broker/acl/check.h"
#include "broker/client_config.h"
#include "broker/quota/keys.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "controller/entity.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define MATCH_EXACT 0
#define MATCH_DEFAULT 1
#define MATCH_SPECIFIED 2

enum { T_USER, T_CLIENT, T_IP, NTYPES };
static const char *const type_names[NTYPES] = { "user", "client-id", "ip" };

typedef struct filter {
	bool present[NTYPES];
	int8_t match_type[NTYPES];
	proto_str match[NTYPES];
	bool strict;
} filter;

/* One entity's types and names (desanitized, in the arena; NULL name: the
 * default). */
typedef struct entity {
	bool has[NTYPES];
	const char *name[NTYPES];
	int32_t len[NTYPES];
} entity;

static int type_of(proto_str s)
{
	for (int t = 0; t < NTYPES; t++)
		if (s.len == (int32_t)strlen(type_names[t]) &&
		    memcmp(s.ptr, type_names[t], (size_t)s.len) == 0)
			return t;
	return -1;
}

/* Check the filter; 0 or the error with msg set. */
static int16_t parse_filter(const DescribeClientQuotasRequest *m, filter *f, char *msg,
			    size_t cap)
{
	memset(f, 0, sizeof(*f));
	f->strict = m->strict;
	for (int32_t i = 0; i < m->components_count; i++) {
		const DescribeClientQuotasRequest_DescribeClientQuotasComponent *c = &m->components[i];
		if (c->entity_type.len <= 0) {
			snprintf(msg, cap, "Invalid empty entity type.");
			return KERR_INVALID_REQUEST;
		}
		int t = type_of(c->entity_type);
		if (t >= 0 && f->present[t]) {
			snprintf(msg, cap, "Entity type %.*s cannot appear more than once in the filter.",
				 (int)c->entity_type.len, c->entity_type.ptr);
			return KERR_INVALID_REQUEST;
		}
		if (t < 0) {
			snprintf(msg, cap, "Unsupported entity type %.*s", (int)c->entity_type.len,
				 c->entity_type.ptr);
			return KERR_UNSUPPORTED_VERSION;
		}
		switch (c->match_type) {
		case MATCH_EXACT:
			if (c->match.len < 0) {
				snprintf(msg, cap, "Request specified MATCH_TYPE_EXACT, but set match "
					 "string to null.");
				return KERR_INVALID_REQUEST;
			}
			break;
		case MATCH_DEFAULT:
			if (c->match.len >= 0) {
				snprintf(msg, cap, "Request specified MATCH_TYPE_DEFAULT, but also "
					 "specified a match string.");
				return KERR_INVALID_REQUEST;
			}
			break;
		case MATCH_SPECIFIED:
			if (c->match.len >= 0) {
				snprintf(msg, cap, "Request specified MATCH_TYPE_SPECIFIED, but also "
					 "specified a match string.");
				return KERR_INVALID_REQUEST;
			}
			break;
		default:
			snprintf(msg, cap, "Unknown match type %d", (int)c->match_type);
			return KERR_INVALID_REQUEST;
		}
		f->present[t] = true;
		f->match_type[t] = c->match_type;
		f->match[t] = c->match;
	}
	if (f->present[T_IP] && (f->present[T_USER] || f->present[T_CLIENT])) {
		snprintf(msg, cap, "Invalid entity filter component combination. IP filter component "
			 "should not be used with user or clientId filter component.");
		return KERR_INVALID_REQUEST;
	}
	return KERR_NONE;
}

/* Desanitize one name of a path into the arena (NULL for the default). */
static int put_name(proto_arena *a, entity *e, int t, const char *s, size_t n, bool dflt)
{
	e->has[t] = true;
	if (dflt) {
		e->name[t] = NULL;
		e->len[t] = -1;
		return 0;
	}
	char *out = proto_arena_alloc(a, n + 1);
	if (!out)
		return -1;
	int len = ctl_entity_desanitize(s, n, out, n + 1);
	if (len < 0)
		return -1;
	e->name[t] = out;
	e->len[t] = len;
	return 0;
}

static int to_entity(proto_arena *a, const char *path, entity *e)
{
	memset(e, 0, sizeof(*e));
	ctl_entity_ref r;
	if (ctl_entity_parse(path, strlen(path), &r) != 0)
		return -1;
	switch (r.kind) {
	case CTL_ENTITY_USER:
		return put_name(a, e, T_USER, r.name, r.name_len, r.name_default);
	case CTL_ENTITY_CLIENT_ID:
		return put_name(a, e, T_CLIENT, r.name, r.name_len, r.name_default);
	case CTL_ENTITY_IP:
		return put_name(a, e, T_IP, r.name, r.name_len, r.name_default);
	case CTL_ENTITY_USER_CLIENT_ID:
		if (put_name(a, e, T_USER, r.name, r.name_len, r.name_default) != 0)
			return -1;
		return put_name(a, e, T_CLIENT, r.client, r.client_len, r.client_default);
	}
	return -1;
}

static bool matches(const filter *f, const entity *e)
{
	int nf = 0, ne = 0;
	for (int t = 0; t < NTYPES; t++) {
		nf += f->present[t];
		ne += e->has[t];
		if (!f->present[t])
			continue;
		if (!e->has[t])
			return false;
		if (f->match_type[t] == MATCH_DEFAULT && e->name[t])
			return false;
		if (f->match_type[t] == MATCH_EXACT &&
		    (!e->name[t] || e->len[t] != f->match[t].len ||
		     memcmp(e->name[t], f->match[t].ptr, (size_t)e->len[t]) != 0))
			return false;
	}
	return !f->strict || nf == ne;
}

int brk_handle_describe_client_quotas(brk_request *req)
{
	DescribeClientQuotasRequest m;
	DescribeClientQuotasRequest_init(&m);
	if (DescribeClientQuotasRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	DescribeClientQuotasResponse resp;
	DescribeClientQuotasResponse_init(&resp);
	resp.throttle_time_ms = brk_quota_request_throttle(req);
	char *msg = proto_arena_alloc(req->arena, 512);
	if (!msg)
		return BRK_CLOSE;
	filter f;
	int16_t err = KERR_NONE;
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE_CONFIGS)) {
		err = KERR_CLUSTER_AUTHORIZATION_FAILED;
		snprintf(msg, 512, "Cluster authorization failed.");
	} else {
		err = parse_filter(&m, &f, msg, 512);
	}
	if (err) {
		resp.error_code = err;
		resp.error_message = proto_cstr(msg);
		resp.entries_count = -1; /* null */
	} else {
		const brk_client_configs *reg = &server.cluster.client_configs;
		int32_t n = brk_client_configs_count(reg);
		resp.entries = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) *
								  sizeof(*resp.entries));
		if (!resp.entries)
			return BRK_CLOSE;
		int32_t out = 0;
		for (int32_t i = 0; i < n; i++) {
			const brk_client_config *cc = brk_client_configs_at(reg, i);
			entity e;
			if (to_entity(req->arena, cc->entity, &e) != 0 || !matches(&f, &e))
				continue;
			bool ip = e.has[T_IP];
			DescribeClientQuotasResponse_DescribeClientQuotasValue *vals =
				proto_arena_alloc(req->arena, (size_t)(cc->nconfigs ? cc->nconfigs : 1) *
								      sizeof(*vals));
			if (!vals)
				return BRK_CLOSE;
			int32_t nv = 0;
			for (int32_t k = 0; k < cc->nconfigs; k++) {
				double v;
				if (!brk_quota_key_known(cc->configs[k].name, ip) ||
				    brk_quota_parse_value(cc->configs[k].value, &v) != 0)
					continue;
				DescribeClientQuotasResponse_DescribeClientQuotasValue_init(&vals[nv]);
				vals[nv].key = proto_cstr(cc->configs[k].name);
				vals[nv].value = v;
				nv++;
			}
			if (nv == 0)
				continue;
			DescribeClientQuotasResponse_DescribeClientQuotasEntry *en = &resp.entries[out++];
			DescribeClientQuotasResponse_DescribeClientQuotasEntry_init(en);
			en->values = vals;
			en->values_count = nv;
			en->entity = proto_arena_alloc(req->arena, NTYPES * sizeof(*en->entity));
			if (!en->entity)
				return BRK_CLOSE;
			/* Kafka's order (a Java HashMap of the types): ip, client-id, user */
			static const int order[NTYPES] = { T_IP, T_CLIENT, T_USER };
			int32_t ne = 0;
			for (int o = 0; o < NTYPES; o++) {
				int t = order[o];
				if (!e.has[t])
					continue;
				DescribeClientQuotasResponse_DescribeClientQuotasEntity *x =
					&en->entity[ne++];
				DescribeClientQuotasResponse_DescribeClientQuotasEntity_init(x);
				x->entity_type = proto_cstr(type_names[t]);
				x->entity_name = proto_str_of(e.name[t], e.name[t] ? e.len[t] : -1);
			}
			en->entity_count = ne;
		}
		resp.entries_count = out;
	}
	if (DescribeClientQuotasResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
