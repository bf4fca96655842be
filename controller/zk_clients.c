/*
 * zk_clients.c - client entity configs in ZooKeeper (ctl.h, "Client entity
 * configs"; zk_backend.h): /config/users/<user>,
 * /config/users/<user>/clients/<client>, /config/clients/<client> and
 * /config/ips/<ip>, {"version":1,"config":{...}}, and the v2 change notice
 * of each write, as Kafka 3.x's AdminZkClient.changeConfigs writes them.
 *
 * Brokers read every entity at start and one entity again on its notice
 * (no watch on the znodes, as Kafka's brokers). The view (z->meta) keeps
 * each existing znode with its configs and data version; the version is
 * what a conditional write is checked against.
 */
#include "controller/zk_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/entity.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

#define CLIENT_PATH_MAX (CTL_ENTITY_PATH_MAX + 16)

static void znode_path(char *out, const char *entity)
{
	snprintf(out, CLIENT_PATH_MAX, "/config/%s", entity);
}

int zkb_view_refresh_client_config(zkb *z, const char *entity, bool emit_all)
{
	char path[CLIENT_PATH_MAX];
	znode_path(path, entity);
	ctl_config_entry *e;
	int32_t n;
	ctl_zk_stat st;
	int rc = zkb_read_config(z, path, &e, &n, &st);
	if (rc != CTL_ZK_OK) {
		z->stale = true;
		zkb_retry_in(z, 1000);
		return rc;
	}
	const ctl_client_config_set *cs = ctl_meta_client_configs(&z->meta, entity);
	bool same = cs ? cs->version == st.version &&
			     zkb_configs_equal(cs->configs, cs->nconfigs, e, n)
		       : st.version < 0;
	if (same && !(emit_all && cs)) {
		ctl_configs_free(e, n);
		return CTL_ZK_OK;
	}
	/* the event's copy first: the view takes e over */
	if (ctl_emit_client_configs(z->c, entity, e, n, st.version) != 0 ||
	    ctl_meta_set_client_configs(&z->meta, entity, e, n, st.version) != 0) {
		ctl_configs_free(e, n);
		return CTL_ZK_SYSTEMERROR;
	}
	return CTL_ZK_OK;
}

/* Names seen in a full read. */
typedef struct seen_list {
	char **v;
	int32_t n, cap;
} seen_list;

static int seen_add(seen_list *s, const char *entity)
{
	if (s->n == s->cap) {
		int32_t cap = s->cap ? s->cap * 2 : 64;
		char **v = realloc(s->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(entity)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static bool seen_has(const seen_list *s, const char *entity)
{
	for (int32_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], entity) == 0)
			return true;
	return false;
}

/* Read the entity type/name (and, for a user, its clients). */
static int read_entity(zkb *z, const char *type, const char *name, bool emit_all,
		       seen_list *seen)
{
	char entity[CTL_ENTITY_PATH_MAX + 1];
	int n = snprintf(entity, sizeof(entity), "%s/%s", type, name);
	ctl_entity_ref ref;
	if (n <= 0 || (size_t)n >= sizeof(entity) || ctl_entity_parse(entity, (size_t)n, &ref))
		return CTL_ZK_OK; /* not an entity of ours: left alone */
	int rc = zkb_view_refresh_client_config(z, entity, emit_all);
	if (rc == CTL_ZK_OK && seen_add(seen, entity) != 0)
		rc = CTL_ZK_SYSTEMERROR;
	if (rc != CTL_ZK_OK || strcmp(type, "users") != 0)
		return rc;
	char path[CLIENT_PATH_MAX];
	snprintf(path, sizeof(path), "/config/users/%s/clients", name);
	ctl_zk_children ch;
	rc = ctl_zk_get_children(z->zk, path, false, &ch, NULL);
	if (rc == CTL_ZK_NONODE)
		return CTL_ZK_OK;
	if (rc != CTL_ZK_OK)
		return rc;
	for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++) {
		char sub[CTL_ENTITY_PATH_MAX + 1];
		n = snprintf(sub, sizeof(sub), "%s/clients/%s", name, ch.names[i]);
		if (n > 0 && (size_t)n < sizeof(sub))
			rc = read_entity(z, "users", sub, emit_all, seen);
	}
	ctl_zk_children_free(&ch);
	return rc;
}

int zkb_view_refresh_client_configs(zkb *z, bool emit_all)
{
	static const char *const types[] = { "users", "clients", "ips" };
	seen_list seen = { 0 };
	int rc = CTL_ZK_OK;
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]) && rc == CTL_ZK_OK; t++) {
		char path[64];
		snprintf(path, sizeof(path), "/config/%s", types[t]);
		ctl_zk_children ch;
		rc = ctl_zk_get_children(z->zk, path, false, &ch, NULL);
		if (rc == CTL_ZK_NONODE) {
			rc = CTL_ZK_OK;
			continue;
		}
		for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++)
			rc = read_entity(z, types[t], ch.names[i], emit_all, &seen);
		ctl_zk_children_free(&ch);
	}
	/* Entities of the view that were not listed: gone (read each to be
	 * sure; removal moves the last entry here, so go down). */
	for (int32_t i = z->meta.nclient_configs - 1; i >= 0 && rc == CTL_ZK_OK; i--) {
		if (i >= z->meta.nclient_configs || seen_has(&seen, z->meta.client_configs[i].entity))
			continue;
		char entity[CTL_ENTITY_PATH_MAX + 1];
		snprintf(entity, sizeof(entity), "%s", z->meta.client_configs[i].entity);
		rc = zkb_view_refresh_client_config(z, entity, false);
	}
	for (int32_t i = 0; i < seen.n; i++)
		free(seen.v[i]);
	free(seen.v);
	if (rc != CTL_ZK_OK) {
		z->stale = true;
		zkb_retry_in(z, 1000);
	}
	return rc;
}

/* ---- CTL_OP_SET_CLIENT_CONFIGS ---- */

static bool configs_repeat(const ctl_config_entry *e, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		for (int32_t k = 0; k < i; k++)
			if (strcmp(e[i].name ? e[i].name : "", e[k].name ? e[k].name : "") == 0)
				return true;
	return false;
}

static int encode(const ctl_config_entry *configs, int32_t n, char **json, size_t *len)
{
	ctl_zkj_config_entry *e = calloc((size_t)(n > 0 ? n : 1), sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (int32_t i = 0; i < n; i++)
		e[i] = (ctl_zkj_config_entry){ configs[i].name ? configs[i].name : "",
					       configs[i].value ? configs[i].value : "" };
	ctl_zkj_config c = { e, n };
	int rc = ctl_zkj_config_encode(&c, json, len);
	free(e);
	return rc;
}

/* After a (user, client) znode was deleted: its clients parent when empty,
 * then the user's znode when it holds no configs and no children (Kafka's
 * tryCleanQuotaNodes). Best effort: a failure leaves empty znodes. */
static void clean_parents(zkb *z, const ctl_entity_ref *ref)
{
	char path[CLIENT_PATH_MAX];
	snprintf(path, sizeof(path), "/config/users/%.*s/clients", (int)ref->name_len, ref->name);
	if (ctl_zk_delete(z->zk, path, CTL_ZK_ANY_VERSION) != CTL_ZK_OK)
		return;
	snprintf(path, sizeof(path), "/config/users/%.*s", (int)ref->name_len, ref->name);
	ctl_config_entry *e;
	int32_t n;
	ctl_zk_stat st;
	if (zkb_read_config(z, path, &e, &n, &st) != CTL_ZK_OK)
		return;
	ctl_configs_free(e, n);
	if (n == 0 && st.version >= 0)
		ctl_zk_delete(z->zk, path, st.version);
	char entity[CTL_ENTITY_PATH_MAX + 1];
	snprintf(entity, sizeof(entity), "users/%.*s", (int)ref->name_len, ref->name);
	zkb_view_refresh_client_config(z, entity, false);
}

/* Create path (with its missing parents) holding json. */
static int create_with_parents(zkb *z, const char *path, const char *json, size_t len)
{
	int rc = ctl_zk_create(z->zk, path, json, (int)len, CTL_ZK_PERSISTENT, NULL, 0, NULL);
	if (rc != CTL_ZK_NONODE)
		return rc;
	char parent[CLIENT_PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return rc;
	*slash = '\0';
	rc = ctl_zk_ensure_path(z->zk, parent);
	if (rc != CTL_ZK_OK)
		return rc;
	return ctl_zk_create(z->zk, path, json, (int)len, CTL_ZK_PERSISTENT, NULL, 0, NULL);
}

static int16_t moved(zkb *z, const ctl_op *op, ctl_result *r)
{
	zkb_view_refresh_client_config(z, op->entity, false);
	const ctl_client_config_set *cs = ctl_meta_client_configs(&z->meta, op->entity);
	r->config_version = cs ? cs->version : -1;
	snprintf(r->msg, sizeof(r->msg), "The configs of %s are at version %d, not %d.",
		 op->entity, (int)r->config_version, (int)op->expected_version);
	return KERR_INVALID_UPDATE_VERSION;
}

int16_t zkb_clients_set(zkb *z, const ctl_op *op, ctl_result *r)
{
	ctl_entity_ref ref;
	if (!op->entity || ctl_entity_parse(op->entity, strlen(op->entity), &ref) != 0) {
		snprintf(r->msg, sizeof(r->msg), "Invalid client config entity.");
		return KERR_INVALID_REQUEST;
	}
	if (op->nconfigs < 0 || configs_repeat(op->configs, op->nconfigs)) {
		snprintf(r->msg, sizeof(r->msg), "A config is given more than once.");
		return KERR_INVALID_CONFIG;
	}
	if (op->validate_only)
		return KERR_NONE;
	char path[CLIENT_PATH_MAX];
	znode_path(path, op->entity);
	int want = op->conditional ? op->expected_version : CTL_ZK_ANY_VERSION;
	int rc;
	if (op->nconfigs == 0) {
		if (op->conditional && want < 0) {
			/* "no configs yet" and none wanted: only true when absent */
			rc = ctl_zk_exists(z->zk, path, false, NULL);
			if (rc == CTL_ZK_OK)
				return moved(z, op, r);
			if (rc != CTL_ZK_NONODE)
				return zkb_op_failed(r, "reading the client configs", rc);
		} else {
			rc = ctl_zk_delete(z->zk, path, want);
			if (rc == CTL_ZK_NOTEMPTY) {
				/* children (a user's clients): keep the znode, empty */
				char *json;
				size_t len;
				if (encode(NULL, 0, &json, &len) != 0)
					return KERR_UNKNOWN_SERVER_ERROR;
				rc = ctl_zk_set(z->zk, path, json, (int)len, want, NULL);
				free(json);
			} else if (rc == CTL_ZK_OK && ref.kind == CTL_ENTITY_USER_CLIENT_ID) {
				clean_parents(z, &ref);
			} else if (rc == CTL_ZK_NONODE && !op->conditional) {
				rc = CTL_ZK_OK;
			}
			if (rc == CTL_ZK_BADVERSION || (rc == CTL_ZK_NONODE && op->conditional))
				return moved(z, op, r);
			if (rc != CTL_ZK_OK)
				return zkb_op_failed(r, "writing the client configs", rc);
		}
	} else {
		char *json;
		size_t len;
		if (encode(op->configs, op->nconfigs, &json, &len) != 0)
			return KERR_UNKNOWN_SERVER_ERROR;
		if (op->conditional && want < 0) {
			rc = create_with_parents(z, path, json, len);
			if (rc == CTL_ZK_NODEEXISTS) {
				free(json);
				return moved(z, op, r);
			}
		} else {
			rc = ctl_zk_set(z->zk, path, json, (int)len, want, NULL);
			if (rc == CTL_ZK_NONODE && !op->conditional) {
				rc = create_with_parents(z, path, json, len);
				if (rc == CTL_ZK_NODEEXISTS)
					rc = ctl_zk_set(z->zk, path, json, (int)len, want, NULL);
			}
			if (rc == CTL_ZK_BADVERSION || (rc == CTL_ZK_NONODE && op->conditional)) {
				free(json);
				return moved(z, op, r);
			}
		}
		free(json);
		if (rc != CTL_ZK_OK)
			return zkb_op_failed(r, "writing the client configs", rc);
	}
	/* The notice names the entity path after its type. */
	const char *slash = strchr(op->entity, '/');
	char type[16];
	snprintf(type, sizeof(type), "%.*s", (int)(slash - op->entity), op->entity);
	rc = zkb_write_notice(z, type, slash + 1);
	if (rc != CTL_ZK_OK)
		return zkb_op_failed(r, "writing the config change notice", rc);
	zkb_view_refresh_client_config(z, op->entity, false);
	const ctl_client_config_set *cs = ctl_meta_client_configs(&z->meta, op->entity);
	r->config_version = cs ? cs->version : -1;
	return KERR_NONE;
}
