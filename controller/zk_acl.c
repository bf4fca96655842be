/*
 * zk_acl.c - ACLs in ZooKeeper as Kafka's ZooKeeper-mode AclAuthorizer
 * keeps them (controller/acl.h has the paths and formats):
 *
 *  - an update (CTL_OP_UPDATE_ACLS) reads the pattern's znode with its
 *    version, merges, and writes conditionally on that version (created
 *    when absent, deleted when no ACL is left); a lost race (BADVERSION,
 *    NODEEXISTS, NONODE) reads again, as AclAuthorizer.updateResourceAcls
 *    does. Then a change notification (a sequential node under
 *    /kafka-acl-changes or /kafka-acl-extended-changes) tells every broker;
 *  - every broker reads all ACLs at start (and after a new session), and
 *    watches both change paths: a notification newer than the last one
 *    handled re-reads the pattern it names (Kafka's ZkNodeChangeNotificationListener);
 *    notifications older than 15 minutes are purged;
 *  - what changed is told as CTL_EV_ACLS (the whole pattern).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/zk_backend.h"
#include "protocol/err.h"

#define LITERAL_ROOT "/kafka-acl"
#define PREFIXED_ROOT "/kafka-acl-extended/prefixed"
#define LITERAL_CHANGES "/kafka-acl-changes"
#define EXTENDED_CHANGES "/kafka-acl-extended-changes"
#define CHANGE_PREFIX "acl_changes_"
/* Tries of a conditional update before giving up. */
#define UPDATE_TRIES 50

static int path_of(char *out, size_t cap, int8_t type, int8_t pattern, const char *name)
{
	const char *tn = ctl_acl_resource_type_name(type);
	if (!tn)
		return -1;
	int n = snprintf(out, cap, "%s/%s/%s",
			 pattern == CTL_ACL_PAT_LITERAL ? LITERAL_ROOT : PREFIXED_ROOT, tn, name);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Read one pattern's znode: r->entries / r->n (none when absent or
 * malformed, told on stderr). */
static int read_pattern(zkb *z, int8_t type, int8_t pattern, const char *name,
			ctl_acl_resource *r)
{
	r->type = type;
	r->pattern = pattern;
	r->name = (char *)name;
	r->entries = NULL;
	r->n = 0;
	char path[ZKB_PATH_MAX + 512];
	if (path_of(path, sizeof(path), type, pattern, name) != 0)
		return CTL_ZK_OK; /* not a pattern we can hold: none */
	char *data = NULL;
	int len = 0;
	int rc = ctl_zk_get(z->zk, path, false, &data, &len, NULL);
	if (rc != CTL_ZK_OK && rc != CTL_ZK_NONODE && rc != CTL_ZK_BADARGUMENTS)
		return rc;
	if (rc == CTL_ZK_OK && data &&
	    ctl_acl_json_decode(data, (size_t)(len > 0 ? len : 0), &r->entries, &r->n) != 0)
		fprintf(stderr, "samsa: the ACLs at %s do not parse; taken as none\n", path);
	free(data);
	return CTL_ZK_OK;
}

static bool same_entries(const ctl_acl_resource *a, const ctl_acl_resource *b)
{
	int32_t na = a ? a->n : 0, nb = b ? b->n : 0;
	if (na != nb)
		return false;
	for (int32_t i = 0; i < na; i++)
		if (!ctl_acl_entry_eq(&a->entries[i], &b->entries[i]))
			return false;
	return true;
}

/* Re-read one pattern into z->acls; CTL_EV_ACLS when it changed. */
static int refresh_pattern(zkb *z, int8_t type, int8_t pattern, const char *name)
{
	ctl_acl_resource r;
	int rc = read_pattern(z, type, pattern, name, &r);
	if (rc != CTL_ZK_OK)
		return rc;
	if (!same_entries(ctl_acl_store_find(&z->acls, type, pattern, name), &r)) {
		if (ctl_acl_store_put(&z->acls, &r) != 0)
			rc = CTL_ZK_SYSTEMERROR;
		else
			ctl_emit_acls(z->c, &r);
	}
	free(r.entries);
	return rc;
}

/* Every pattern under root (LITERAL or PREFIXED) into *into. */
static int read_root(zkb *z, const char *root, int8_t pattern, ctl_acl_store *into)
{
	ctl_zk_children types;
	int rc = ctl_zk_get_children(z->zk, root, false, &types, NULL);
	if (rc == CTL_ZK_NONODE)
		return CTL_ZK_OK;
	if (rc != CTL_ZK_OK)
		return rc;
	for (int32_t i = 0; i < types.count && rc == CTL_ZK_OK; i++) {
		int8_t type = ctl_acl_resource_type_parse(types.names[i], strlen(types.names[i]));
		if (type <= CTL_ACL_RES_ANY)
			continue;
		char path[ZKB_PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", root, types.names[i]);
		ctl_zk_children names;
		rc = ctl_zk_get_children(z->zk, path, false, &names, NULL);
		if (rc == CTL_ZK_NONODE) {
			rc = CTL_ZK_OK;
			continue;
		}
		if (rc != CTL_ZK_OK)
			break;
		for (int32_t k = 0; k < names.count && rc == CTL_ZK_OK; k++) {
			ctl_acl_resource r;
			rc = read_pattern(z, type, pattern, names.names[k], &r);
			if (rc == CTL_ZK_OK && ctl_acl_store_put(into, &r) != 0)
				rc = CTL_ZK_SYSTEMERROR;
			free(r.entries);
		}
		ctl_zk_children_free(&names);
	}
	ctl_zk_children_free(&types);
	return rc;
}

/* One ACL change notification: re-read the pattern it names. */
static int apply_change(zkb *z, const char *path, const char *data, int len, void *arg)
{
	bool extended = *(const bool *)arg;
	int8_t type, pattern;
	char *name;
	if (!data || len <= 0 ||
	    ctl_acl_change_decode(extended, data, (size_t)len, &type, &pattern, &name) != 0) {
		fprintf(stderr, "samsa: ACL change notification %s does not parse; ignored\n", path);
		return CTL_ZK_OK;
	}
	int rc = refresh_pattern(z, type, pattern, name);
	free(name);
	return rc;
}

/* New notifications under one change path (child watch armed); with skip
 * only the newest sequence is noted. */
static int process_changes(zkb *z, bool extended, bool skip)
{
	return zkb_process_sequential(z, extended ? EXTENDED_CHANGES : LITERAL_CHANGES, CHANGE_PREFIX,
				      extended ? &z->last_acl_ext_change : &z->last_acl_change, skip,
				      apply_change, &extended);
}

int zkb_acl_refresh_all(zkb *z, bool emit_all)
{
	/* Notifications first: any written after this are seen by the watch. */
	int rc = process_changes(z, false, true);
	if (rc == CTL_ZK_OK)
		rc = process_changes(z, true, true);
	ctl_acl_store fresh = { 0 };
	if (rc == CTL_ZK_OK)
		rc = read_root(z, LITERAL_ROOT, CTL_ACL_PAT_LITERAL, &fresh);
	if (rc == CTL_ZK_OK)
		rc = read_root(z, PREFIXED_ROOT, CTL_ACL_PAT_PREFIXED, &fresh);
	if (rc != CTL_ZK_OK) {
		ctl_acl_store_free(&fresh);
		return rc;
	}
	for (int32_t i = 0; i < fresh.n; i++) {
		const ctl_acl_resource *r = &fresh.v[i];
		if (emit_all || !same_entries(ctl_acl_store_find(&z->acls, r->type, r->pattern,
								 r->name), r))
			ctl_emit_acls(z->c, r);
	}
	for (int32_t i = 0; i < z->acls.n; i++) {
		const ctl_acl_resource *r = &z->acls.v[i];
		if (!ctl_acl_store_find(&fresh, r->type, r->pattern, r->name)) {
			ctl_acl_resource gone = { .type = r->type, .pattern = r->pattern,
						  .name = r->name };
			ctl_emit_acls(z->c, &gone);
		}
	}
	ctl_acl_store_free(&z->acls);
	z->acls = fresh;
	return CTL_ZK_OK;
}

int zkb_acl_on_change(zkb *z, bool extended)
{
	return process_changes(z, extended, false);
}

static bool is_znode_name(const char *s)
{
	return *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') &&
	       strcmp(s, "zookeeper") != 0;
}

int16_t zkb_acl_update(zkb *z, const ctl_op *op, ctl_result *r)
{
	if (op->acl_type < CTL_ACL_RES_TOPIC || op->acl_type > CTL_ACL_RES_MAX ||
	    (op->acl_pattern != CTL_ACL_PAT_LITERAL && op->acl_pattern != CTL_ACL_PAT_PREFIXED) ||
	    !op->acl_name)
		return KERR_INVALID_REQUEST;
	char path[ZKB_PATH_MAX + 512];
	if (!is_znode_name(op->acl_name) ||
	    path_of(path, sizeof(path), op->acl_type, op->acl_pattern, op->acl_name) != 0) {
		snprintf(r->msg, sizeof(r->msg), "The resource name %s cannot be stored in ZooKeeper.",
			 op->acl_name);
		return KERR_INVALID_REQUEST;
	}
	if (op->validate_only)
		return KERR_NONE;
	bool changed = false;
	int rc = CTL_ZK_OK;
	int tries;
	for (tries = 0; tries < UPDATE_TRIES; tries++) {
		char *data = NULL;
		int len = 0;
		ctl_zk_stat st;
		rc = ctl_zk_get(z->zk, path, false, &data, &len, &st);
		if (rc != CTL_ZK_OK && rc != CTL_ZK_NONODE)
			return zkb_op_failed(r, "reading the ACLs", rc);
		bool exists = rc == CTL_ZK_OK;
		ctl_acl_entry *cur = NULL, *fresh = NULL;
		int32_t ncur = 0, nfresh = 0;
		if (exists && data && len > 0 &&
		    ctl_acl_json_decode(data, (size_t)len, &cur, &ncur) != 0)
			fprintf(stderr, "samsa: the ACLs at %s do not parse; replaced\n", path);
		free(data);
		if (ctl_acl_merge(cur, ncur, op->acl_add, op->nacl_add, op->acl_remove,
				  op->nacl_remove, &fresh, &nfresh, &changed) != 0) {
			free(cur);
			return KERR_UNKNOWN_SERVER_ERROR;
		}
		free(cur);
		if (!changed) {
			free(fresh);
			rc = CTL_ZK_OK;
			break;
		}
		if (nfresh == 0) {
			rc = exists ? ctl_zk_delete(z->zk, path, st.version) : CTL_ZK_OK;
			free(fresh);
		} else {
			char *json;
			size_t jlen;
			int erc = ctl_acl_json_encode(fresh, nfresh, &json, &jlen);
			free(fresh);
			if (erc != 0)
				return KERR_UNKNOWN_SERVER_ERROR;
			if (exists) {
				rc = ctl_zk_set(z->zk, path, json, (int)jlen, st.version, NULL);
			} else {
				char parent[ZKB_PATH_MAX + 512];
				snprintf(parent, sizeof(parent), "%s", path);
				*strrchr(parent, '/') = '\0';
				rc = ctl_zk_ensure_path(z->zk, parent);
				if (rc == CTL_ZK_OK)
					rc = ctl_zk_create(z->zk, path, json, (int)jlen,
							   CTL_ZK_PERSISTENT, NULL, 0, NULL);
			}
			free(json);
		}
		if (rc == CTL_ZK_BADVERSION || rc == CTL_ZK_NODEEXISTS || rc == CTL_ZK_NONODE)
			continue; /* someone else wrote meanwhile: read again */
		break;
	}
	if (tries == UPDATE_TRIES) {
		snprintf(r->msg, sizeof(r->msg), "The ACLs of %s kept changing; not updated.",
			 op->acl_name);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	if (rc == CTL_ZK_BADARGUMENTS) {
		snprintf(r->msg, sizeof(r->msg), "The resource name %s cannot be stored in ZooKeeper.",
			 op->acl_name);
		return KERR_INVALID_REQUEST;
	}
	if (rc != CTL_ZK_OK)
		return zkb_op_failed(r, "writing the ACLs", rc);
	if (!changed)
		return KERR_NONE;
	/* Tell every broker (ourselves included, through the watch; our own
	 * view is refreshed now so the event precedes the result). */
	char *note;
	size_t nlen;
	if (ctl_acl_change_encode(op->acl_type, op->acl_pattern, op->acl_name, &note, &nlen) != 0)
		return KERR_UNKNOWN_SERVER_ERROR;
	const char *cpath = op->acl_pattern == CTL_ACL_PAT_LITERAL
				    ? LITERAL_CHANGES "/" CHANGE_PREFIX
				    : EXTENDED_CHANGES "/" CHANGE_PREFIX;
	rc = ctl_zk_create(z->zk, cpath, note, (int)nlen, CTL_ZK_PERSISTENT_SEQUENTIAL, NULL, 0,
			   NULL);
	free(note);
	if (rc != CTL_ZK_OK)
		return zkb_op_failed(r, "writing the ACL change notification", rc);
	rc = refresh_pattern(z, op->acl_type, op->acl_pattern, op->acl_name);
	if (rc != CTL_ZK_OK)
		z->stale = true; /* the watch or the next full read brings it */
	return KERR_NONE;
}
