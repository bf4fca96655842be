/*
 * alter_client_quotas.c - AlterClientQuotas (API key 49), versions 0-1
 * (KIP-546), with Kafka 4's checks (ClientQuotaControlManager), each entry
 * on its own:
 *  - an entity with no (type, name) pair: INVALID_REQUEST "Invalid empty
 *    client quota entity"; a type other than "user", "client-id", "ip":
 *    "Unhandled client quota entity type: T"; an empty name: "Empty T not
 *    supported" (a null name is the default entity); "ip" with another
 *    type: "Invalid quota entity combination, ..."; an IP name that is no
 *    IPv4 or IPv6 address: "X is not a valid IP or resolvable host." (no
 *    name lookup on the loop);
 *  - the same key twice in one entry, or an entity given twice: the later
 *    gets INVALID_REQUEST "Ignoring duplicate entity ClientQuotaEntity(...)"
 *    (the result Kafka ends with) and only the first is applied; the
 *    response holds one result per distinct entity, as Kafka's (a map);
 *  - a key set must be a quota key of the entity kind ("Invalid
 *    configuration key K"), greater than 0, integral for the long and int
 *    keys, within their range (keys.h);
 *  - removing a key the entity lacks is no error.
 * The entity's whole config map (SCRAM credentials too) is read from this
 * broker's view, changed and written back conditionally on its version
 * (CTL_OP_SET_CLIENT_CONFIGS); when another write came first it is redone
 * on the newer map, up to MAX_ROUNDS times. An entity left without keys is
 * removed. ValidateOnly runs the checks only. Without ALTER_CONFIGS on the
 * cluster (an authorizer is set) every entry is CLUSTER_AUTHORIZATION_FAILED.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "broker/acl/check.h"
#include "broker/client_config.h"
#include "broker/ctl_wait.h"
#include "broker/quota/keys.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "controller/entity.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define MAX_ROUNDS 5
#define MSG_CAP 700

typedef struct entry_state {
	int16_t err;
	char *msg;          /* arena; NULL: none */
	char *path;         /* arena: the entity path, NULL when invalid */
	bool ip;
	int32_t dup_of;     /* the first entry of the same entity, -1: none */
	bool pending;       /* waits for a write (or a redo) */
	bool dup_refused;   /* a later entry named it again: refused whatever the write */
} entry_state;

typedef struct alter_state {
	AlterClientQuotasRequest m;
	entry_state *e;
	int32_t n;
	int round;
} alter_state;

enum { T_USER, T_CLIENT, T_IP, NTYPES };

static int type_of(proto_str s)
{
	static const char *const names[NTYPES] = { "user", "client-id", "ip" };
	for (int t = 0; t < NTYPES; t++)
		if (s.len == (int32_t)strlen(names[t]) && memcmp(s.ptr, names[t], (size_t)s.len) == 0)
			return t;
	return -1;
}

static void fail(entry_state *e, int16_t err, const char *msg)
{
	e->err = err;
	snprintf(e->msg, MSG_CAP, "%s", msg);
}

/* Kafka's ClientQuotaEntity.toString: "ClientQuotaEntity(entries={...})",
 * the types in a Java HashMap's order (ip, client-id, user). */
static void entity_string(const AlterClientQuotasRequest_AlterClientQuotasEntry *en, char *out,
			  size_t cap)
{
	static const int order[NTYPES] = { T_IP, T_CLIENT, T_USER };
	static const char *const names[NTYPES] = { "user", "client-id", "ip" };
	size_t pos = (size_t)snprintf(out, cap, "ClientQuotaEntity(entries={");
	bool first = true;
	for (int o = 0; o < NTYPES; o++) {
		/* the last pair of a type wins, as in a map */
		const proto_str *name = NULL;
		for (int32_t i = 0; i < en->entity_count; i++)
			if (type_of(en->entity[i].entity_type) == order[o])
				name = &en->entity[i].entity_name;
		if (!name || pos >= cap)
			continue;
		pos += (size_t)snprintf(out + pos, cap - pos, "%s%s=%.*s", first ? "" : ", ",
					names[order[o]], name->len < 0 ? 4 : (int)name->len,
					name->len < 0 ? "null" : name->ptr);
		first = false;
	}
	if (pos < cap)
		snprintf(out + pos, cap - pos, "})");
}

/* Check the entity of entry i; set e->path (or the error). */
static void check_entity(brk_request *req, const AlterClientQuotasRequest_AlterClientQuotasEntry *en,
			 entry_state *e)
{
	const proto_str *name[NTYPES] = { NULL, NULL, NULL };
	if (en->entity_count <= 0) {
		fail(e, KERR_INVALID_REQUEST, "Invalid empty client quota entity");
		return;
	}
	for (int32_t i = 0; i < en->entity_count; i++) {
		const AlterClientQuotasRequest_AlterClientQuotasEntity *x = &en->entity[i];
		int t = type_of(x->entity_type);
		if (t < 0) {
			snprintf(e->msg, MSG_CAP, "Unhandled client quota entity type: %.*s",
				 (int)x->entity_type.len, x->entity_type.ptr);
			e->err = KERR_INVALID_REQUEST;
			return;
		}
		if (x->entity_name.len == 0) {
			snprintf(e->msg, MSG_CAP, "Empty %.*s not supported", (int)x->entity_type.len,
				 x->entity_type.ptr);
			e->err = KERR_INVALID_REQUEST;
			return;
		}
		name[t] = &x->entity_name;
	}
	ctl_entity_kind kind;
	const proto_str *a, *b = NULL;
	if (name[T_IP]) {
		if (name[T_USER] || name[T_CLIENT]) {
			fail(e, KERR_INVALID_REQUEST, "Invalid quota entity combination, IP entity "
						      "shouldnot be combined with User or ClientId");
			return;
		}
		const proto_str *ip = name[T_IP];
		if (ip->len > 0) {
			char buf[64];
			unsigned char addr[16];
			if (ip->len >= (int32_t)sizeof(buf) ||
			    (memcpy(buf, ip->ptr, (size_t)ip->len), buf[ip->len] = '\0',
			     inet_pton(AF_INET, buf, addr) != 1 && inet_pton(AF_INET6, buf, addr) != 1)) {
				snprintf(e->msg, MSG_CAP, "%.*s is not a valid IP or resolvable host.",
					 (int)ip->len, ip->ptr);
				e->err = KERR_INVALID_REQUEST;
				return;
			}
		}
		kind = CTL_ENTITY_IP;
		a = ip;
		e->ip = true;
	} else if (name[T_USER] && name[T_CLIENT]) {
		kind = CTL_ENTITY_USER_CLIENT_ID;
		a = name[T_USER];
		b = name[T_CLIENT];
	} else if (name[T_USER]) {
		kind = CTL_ENTITY_USER;
		a = name[T_USER];
	} else {
		kind = CTL_ENTITY_CLIENT_ID;
		a = name[T_CLIENT];
	}
	char *path = proto_arena_alloc(req->arena, CTL_ENTITY_PATH_MAX + 1);
	if (!path) {
		fail(e, KERR_UNKNOWN_SERVER_ERROR, "Out of memory");
		return;
	}
	if (ctl_entity_path(path, CTL_ENTITY_PATH_MAX + 1, kind, a->len < 0 ? NULL : a->ptr,
			    a->len < 0 ? 0 : (size_t)a->len,
			    b && b->len >= 0 ? b->ptr : NULL, b && b->len >= 0 ? (size_t)b->len : 0) < 0) {
		fail(e, KERR_INVALID_REQUEST, "Invalid client quota entity name");
		return;
	}
	e->path = path;
}

/* Check the ops of an entry (after its entity). */
static void check_ops(const AlterClientQuotasRequest_AlterClientQuotasEntry *en, entry_state *e)
{
	for (int32_t i = 0; i < en->ops_count; i++) {
		const AlterClientQuotasRequest_AlterClientQuotasOp *op = &en->ops[i];
		for (int32_t k = 0; k < i; k++)
			if (en->ops[k].key.len == op->key.len &&
			    memcmp(en->ops[k].key.ptr, op->key.ptr, (size_t)op->key.len) == 0) {
				char ent[256];
				entity_string(en, ent, sizeof(ent));
				snprintf(e->msg, MSG_CAP, "Ignoring duplicate entity %s", ent);
				e->err = KERR_INVALID_REQUEST;
				return;
			}
	}
	if (!e->path)
		return;
	for (int32_t i = 0; i < en->ops_count; i++) {
		const AlterClientQuotasRequest_AlterClientQuotasOp *op = &en->ops[i];
		if (op->remove)
			continue;
		const brk_quota_key *k = brk_quota_key_find(op->key.ptr, (size_t)op->key.len, e->ip);
		if (!k) {
			snprintf(e->msg, MSG_CAP, "Invalid configuration key %.*s", (int)op->key.len,
				 op->key.ptr);
			e->err = KERR_INVALID_REQUEST;
			return;
		}
		if (brk_quota_check_value(k, op->value, e->msg, MSG_CAP)) {
			e->err = KERR_INVALID_REQUEST;
			return;
		}
	}
}

/*
 * The entity's new map: its current one from this broker's view with the
 * ops applied, in the arena (*out, *n); *version its version (-1 when
 * absent). Returns 1 when it differs from the current map, 0 when not,
 * -1 when out of memory.
 */
static int new_map(brk_request *req, const AlterClientQuotasRequest_AlterClientQuotasEntry *en,
		   const entry_state *e, ctl_config_entry **out, int32_t *n, int32_t *version)
{
	const brk_client_config *cc = brk_client_config_get(&server.cluster.client_configs, e->path);
	int32_t cur = cc ? cc->nconfigs : 0;
	int32_t cap = cur + en->ops_count;
	ctl_config_entry *v = proto_arena_alloc(req->arena, (size_t)(cap ? cap : 1) * sizeof(*v));
	if (!v)
		return -1;
	int32_t k = 0;
	for (int32_t i = 0; i < cur; i++)
		v[k++] = cc->configs[i]; /* views: the op copies them */
	bool changed = false;
	for (int32_t i = 0; i < en->ops_count; i++) {
		const AlterClientQuotasRequest_AlterClientQuotasOp *op = &en->ops[i];
		int32_t at = -1;
		for (int32_t j = 0; j < k && at < 0; j++)
			if ((int32_t)strlen(v[j].name) == op->key.len &&
			    memcmp(v[j].name, op->key.ptr, (size_t)op->key.len) == 0)
				at = j;
		if (op->remove) {
			if (at >= 0) {
				v[at] = v[--k];
				changed = true;
			}
			continue;
		}
		const brk_quota_key *qk = brk_quota_key_find(op->key.ptr, (size_t)op->key.len, e->ip);
		char *val = proto_arena_alloc(req->arena, 64);
		if (!qk || !val || brk_quota_format_value(qk, op->value, val, 64) < 0)
			return -1;
		if (at >= 0) {
			if (strcmp(v[at].value, val) == 0)
				continue;
			v[at].value = val;
		} else {
			v[k].name = (char *)qk->name;
			v[k].value = val;
			k++;
		}
		changed = true;
	}
	*out = v;
	*n = k;
	*version = cc ? cc->version : -1;
	return changed ? 1 : 0;
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg);

/* Submit the pending entries; then wait (or respond at once). */
static int submit_round(brk_request *req, alter_state *st)
{
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, st->n);
	if (!w)
		return BRK_CLOSE;
	for (int32_t i = 0; i < st->n; i++) {
		entry_state *e = &st->e[i];
		if (!e->pending)
			continue;
		ctl_config_entry *map;
		int32_t n, version;
		int rc = new_map(req, &st->m.entries[i], e, &map, &n, &version);
		if (rc <= 0) {
			e->pending = false;
			if (rc < 0 && !e->dup_refused)
				fail(e, KERR_UNKNOWN_SERVER_ERROR, "Out of memory");
			continue;
		}
		ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = e->path, .configs = map,
			      .nconfigs = n, .conditional = true, .expected_version = version };
		if (brk_ctl_wait_submit(w, i, &op) != 0) {
			e->pending = false;
			fail(e, KERR_UNKNOWN_SERVER_ERROR, "Out of memory");
		}
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	alter_state *st = arg;
	bool redo = false;
	for (int32_t i = 0; i < st->n; i++) {
		entry_state *e = &st->e[i];
		const ctl_result *r = w ? brk_ctl_wait_result(w, i) : NULL;
		if (!e->pending || !r)
			continue;
		if (r->error == KERR_INVALID_UPDATE_VERSION && st->round + 1 < MAX_ROUNDS) {
			redo = true; /* the newer map is in the view now: again */
			continue;
		}
		e->pending = false;
		if (e->dup_refused)
			continue;
		e->err = r->error;
		if (r->error)
			snprintf(e->msg, MSG_CAP, "%s", r->msg[0] ? r->msg : "");
	}
	if (redo) {
		st->round++;
		return submit_round(req, st);
	}
	AlterClientQuotasResponse resp;
	AlterClientQuotasResponse_init(&resp);
	resp.throttle_time_ms = brk_quota_request_throttle(req);
	resp.entries = proto_arena_alloc(req->arena, (size_t)(st->n ? st->n : 1) *
							     sizeof(*resp.entries));
	if (!resp.entries)
		return BRK_CLOSE;
	int32_t k = 0;
	for (int32_t i = 0; i < st->n; i++) {
		const entry_state *e = &st->e[i];
		if (e->dup_of >= 0)
			continue;
		const AlterClientQuotasRequest_AlterClientQuotasEntry *en = &st->m.entries[i];
		AlterClientQuotasResponse_AlterClientQuotasEntryResult *r = &resp.entries[k++];
		AlterClientQuotasResponse_AlterClientQuotasEntryResult_init(r);
		r->error_code = e->err;
		r->error_message = e->err ? proto_cstr(e->msg) : proto_str_of(NULL, -1);
		r->entity = proto_arena_alloc(req->arena, (size_t)(en->entity_count > 0
									   ? en->entity_count : 1) *
								  sizeof(*r->entity));
		if (!r->entity)
			return BRK_CLOSE;
		for (int32_t j = 0; j < en->entity_count; j++) {
			AlterClientQuotasResponse_AlterClientQuotasResultEntity_init(&r->entity[j]);
			r->entity[j].entity_type = en->entity[j].entity_type;
			r->entity[j].entity_name = en->entity[j].entity_name;
		}
		r->entity_count = en->entity_count > 0 ? en->entity_count : 0;
	}
	resp.entries_count = k;
	if (AlterClientQuotasResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}

int brk_handle_alter_client_quotas(brk_request *req)
{
	alter_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	AlterClientQuotasRequest_init(&st->m);
	if (AlterClientQuotasRequest_decode(&req->body, req->arena, req->api_version, &st->m) != 0)
		return BRK_CLOSE;
	st->n = st->m.entries_count > 0 ? st->m.entries_count : 0;
	st->round = 0;
	st->e = proto_arena_alloc(req->arena, (size_t)(st->n ? st->n : 1) * sizeof(*st->e));
	if (!st->e)
		return BRK_CLOSE;
	bool allowed = brk_acl_permits_cluster(req, CTL_ACL_OP_ALTER_CONFIGS);
	for (int32_t i = 0; i < st->n; i++) {
		entry_state *e = &st->e[i];
		memset(e, 0, sizeof(*e));
		e->dup_of = -1;
		if (!(e->msg = proto_arena_alloc(req->arena, MSG_CAP)))
			return BRK_CLOSE;
		e->msg[0] = '\0';
		const AlterClientQuotasRequest_AlterClientQuotasEntry *en = &st->m.entries[i];
		if (!allowed) {
			fail(e, KERR_CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
			continue;
		}
		check_entity(req, en, e);
		/* an entity seen before: the first stays, this one is refused */
		for (int32_t k = 0; e->path && k < i; k++)
			if (st->e[k].dup_of < 0 && st->e[k].path && strcmp(st->e[k].path, e->path) == 0) {
				e->dup_of = k;
				char ent[256];
				entity_string(en, ent, sizeof(ent));
				st->e[k].err = KERR_INVALID_REQUEST;
				st->e[k].dup_refused = true;
				snprintf(st->e[k].msg, MSG_CAP, "Ignoring duplicate entity %s", ent);
				break;
			}
		if (e->dup_of >= 0)
			continue;
		if (!e->err)
			check_ops(en, e);
		e->pending = !e->err && !st->m.validate_only;
	}
	/* An earlier entry refused as a duplicate is still written when it
	 * was valid (Kafka keeps the first one's records). */
	return submit_round(req, st);
}
