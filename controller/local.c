/*
 * local.c - the local controller back end (backend.h): one node, the
 * metadata kept in <log.dir>/__samsa_metadata, which is rewritten (written
 * to a .tmp, fsynced, renamed, directory fsynced) before any change is
 * reported. This broker is the only broker, the controller, and the leader
 * and only in-sync replica of every partition.
 *
 * File format (text, one record per line):
 *
 *   samsa-metadata 5
 *   producer-ids <end of the reserved producer id block, exclusive>
 *                                                    (version 2+; optional)
 *   broker-config <broker id | default> <name, %XX-escaped> <value, %XX-escaped>
 *                                                    (version 3+; any number)
 *   client-config <entity path, %XX-escaped> <name, %XX-escaped> <value, %XX-escaped>
 *                                                    (version 4+; any number: the
 *                                                    configs of client entities,
 *                                                    controller/entity.h)
 *   acl <resource type> <pattern type> <name> <principal> <host> <operation> <permission>
 *                                                    (version 5+; any number: one
 *                                                    ACL each, codes of acl.h,
 *                                                    strings %XX-escaped)
 *   topic <name> <id: 32 hex digits> <internal 0|1> <partitions> <replication factor> <nconfigs>
 *   config <name> <value, %XX-escaped>              (nconfigs lines)
 *   partition <index> <leader> <leader epoch> <nreplicas> <id>... <nisr> <id>...
 *                                                    (partitions lines)
 *   end
 *
 * Topic names and config names never hold spaces (name rules / config names);
 * config values are escaped so any byte survives. Version 1 files (no
 * producer-ids line), version 2 files (no broker-config lines), version
 * 3 files (no client-config lines) and version 4 files (no acl lines) are
 * still read; version 5 is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/backend.h"
#include "controller/elect.h"
#include "controller/entity.h"
#include "controller/reassign.h"
#include "protocol/err.h"
#include "storage/fileio.h"

#define CTL_FILE "__samsa_metadata"
#define CTL_FILE_VERSION 5
#define CTL_FILE_VERSION_MIN 1
/* The metadata file is at most this large (bounds memory on bad input). */
#define CTL_FILE_MAX (256u << 20)

typedef struct local {
	char dir[4096];
	ctl_broker self;
	ctl_meta meta;
	/* The end (exclusive) of the last producer id block handed out, as
	 * persisted in the file: the next block starts here. */
	int64_t pid_block_end;
	ctl_acl_store acls;
} local;

/* ---- escaping ---- */

static int hex_val(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static void hex_encode(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hex_decode(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void write_escaped(FILE *f, const char *s)
{
	if (!*s) {
		fputs("%", f); /* lone '%' encodes the empty string */
		return;
	}
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= ' ' || ch == '%' || ch >= 0x7f)
			fprintf(f, "%%%02X", ch);
		else
			fputc(ch, f);
	}
}

static char *unescape(const char *s)
{
	if (strcmp(s, "%") == 0)
		return strdup("");
	size_t n = strlen(s);
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? hex_val(s[i + 1]) : -1;
			int lo = hi >= 0 ? hex_val(s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				free(out);
				return NULL;
			}
			out[j++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[j++] = s[i];
		}
	}
	out[j] = '\0';
	return out;
}

/* ---- persistence ---- */

static void write_configs(FILE *f, int32_t broker_id, const ctl_config_entry *e, int32_t n)
{
	for (int32_t k = 0; k < n; k++) {
		if (broker_id == CTL_BROKER_DEFAULT)
			fputs("broker-config default ", f);
		else
			fprintf(f, "broker-config %d ", broker_id);
		write_escaped(f, e[k].name);
		fputc(' ', f);
		write_escaped(f, e[k].value);
		fputc('\n', f);
	}
}

/* Rewrite the metadata file from l (durably). Returns 0 or -errno. */
static int save(const local *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -errno;
	const ctl_meta *m = &l->meta;
	fprintf(f, "samsa-metadata %d\n", CTL_FILE_VERSION);
	if (l->pid_block_end > 0)
		fprintf(f, "producer-ids %lld\n", (long long)l->pid_block_end);
	for (int32_t i = 0; i < m->nbroker_configs; i++)
		write_configs(f, m->broker_configs[i].broker_id, m->broker_configs[i].configs,
			      m->broker_configs[i].nconfigs);
	for (int32_t i = 0; i < m->nclient_configs; i++) {
		const ctl_client_config_set *cs = &m->client_configs[i];
		for (int32_t k = 0; k < cs->nconfigs; k++) {
			fputs("client-config ", f);
			write_escaped(f, cs->entity);
			fputc(' ', f);
			write_escaped(f, cs->configs[k].name);
			fputc(' ', f);
			write_escaped(f, cs->configs[k].value);
			fputc('\n', f);
		}
	}
	for (int32_t i = 0; i < l->acls.n; i++) {
		const ctl_acl_resource *r = &l->acls.v[i];
		for (int32_t k = 0; k < r->n; k++) {
			fprintf(f, "acl %d %d ", r->type, r->pattern);
			write_escaped(f, r->name);
			fputc(' ', f);
			write_escaped(f, r->entries[k].principal);
			fputc(' ', f);
			write_escaped(f, r->entries[k].host);
			fprintf(f, " %d %d\n", r->entries[k].operation, r->entries[k].permission);
		}
	}
	for (int32_t i = 0; i < m->ntopics; i++) {
		const ctl_topic *t = m->topics[i];
		char hex[33];
		hex_encode(t->id, 16, hex);
		fprintf(f, "topic %s %s %d %d %d %d\n", t->name, hex, t->internal ? 1 : 0,
			t->npartitions, t->replication_factor, t->nconfigs);
		for (int32_t k = 0; k < t->nconfigs; k++) {
			fprintf(f, "config %s ", t->configs[k].name);
			write_escaped(f, t->configs[k].value);
			fputc('\n', f);
		}
		for (int32_t p = 0; p < t->npartitions; p++) {
			const ctl_partition *cp = &t->partitions[p];
			fprintf(f, "partition %d %d %d %d", cp->partition, cp->leader,
				cp->leader_epoch, cp->nreplicas);
			for (int32_t r = 0; r < cp->nreplicas; r++)
				fprintf(f, " %d", cp->replicas[r]);
			fprintf(f, " %d", cp->nisr);
			for (int32_t r = 0; r < cp->nisr; r++)
				fprintf(f, " %d", cp->isr[r]);
			fputc('\n', f);
		}
	}
	fputs("end\n", f);
	int rc = ferror(f) ? -ENOMEM : 0;
	if (fclose(f) != 0 && !rc)
		rc = -ENOMEM;
	if (!rc)
		/* 0600: it holds SCRAM credentials and dynamic configs */
		rc = log_io_write_atomic_mode(l->dir, CTL_FILE, buf, len, true, 0600);
	free(buf);
	return rc;
}

static int parse_int(char **save, long long lo, long long hi, long long *out)
{
	char *tok = strtok_r(NULL, " \n", save);
	if (!tok)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(tok, &end, 10);
	if (errno || *end || end == tok || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_id_list(char **save, int32_t **out, int32_t *n)
{
	long long cnt;
	if (parse_int(save, 0, 100000, &cnt))
		return -1;
	int32_t *ids = calloc(cnt ? (size_t)cnt : 1, sizeof(*ids));
	if (!ids)
		return -1;
	for (long long i = 0; i < cnt; i++) {
		long long v;
		if (parse_int(save, -1, INT32_MAX, &v)) {
			free(ids);
			return -1;
		}
		ids[i] = (int32_t)v;
	}
	*out = ids;
	*n = (int32_t)cnt;
	return 0;
}

/* One "broker-config <scope> <name> <value>" line (after the keyword). */
static int load_broker_config(ctl_meta *m, char **save)
{
	char *scope = strtok_r(NULL, " \n", save);
	char *name = strtok_r(NULL, " \n", save);
	char *val = strtok_r(NULL, " \n", save);
	if (!scope || !name || !val || strtok_r(NULL, " \n", save))
		return -1;
	int32_t id;
	if (strcmp(scope, "default") == 0) {
		id = CTL_BROKER_DEFAULT;
	} else {
		char *end;
		errno = 0;
		long v = strtol(scope, &end, 10);
		if (errno || *end || end == scope || v < 0 || v > INT32_MAX)
			return -1;
		id = (int32_t)v;
	}
	const ctl_broker_config_set *bs = ctl_meta_broker_configs(m, id);
	int32_t n = bs ? bs->nconfigs : 0;
	ctl_config_entry *e = ctl_configs_copy(bs ? bs->configs : NULL, n);
	ctl_config_entry *grown = e ? realloc(e, (size_t)(n + 1) * sizeof(*e)) : NULL;
	if (!grown) {
		ctl_configs_free(e, n);
		return -1;
	}
	e = grown;
	e[n].name = unescape(name);
	e[n].value = unescape(val);
	if (!e[n].name || !e[n].value) {
		ctl_configs_free(e, n + 1);
		return -1;
	}
	ctl_config_entry *old;
	int32_t nold;
	if (ctl_meta_swap_broker_configs(m, id, e, n + 1, &old, &nold) != 0) {
		ctl_configs_free(e, n + 1);
		return -1;
	}
	ctl_configs_free(old, nold);
	return 0;
}

/* One "acl ..." line (after the keyword) into l->acls. */
static int load_acl(local *l, char **save)
{
	long long type, pattern, op, perm;
	if (parse_int(save, CTL_ACL_RES_TOPIC, CTL_ACL_RES_MAX, &type) ||
	    parse_int(save, CTL_ACL_PAT_LITERAL, CTL_ACL_PAT_PREFIXED, &pattern))
		return -1;
	char *name_e = strtok_r(NULL, " \n", save);
	char *principal_e = strtok_r(NULL, " \n", save);
	char *host_e = strtok_r(NULL, " \n", save);
	if (!name_e || !principal_e || !host_e ||
	    parse_int(save, CTL_ACL_OP_ALL, CTL_ACL_OP_MAX, &op) ||
	    parse_int(save, CTL_ACL_PERM_DENY, CTL_ACL_PERM_ALLOW, &perm) ||
	    strtok_r(NULL, " \n", save))
		return -1;
	char *name = unescape(name_e), *principal = unescape(principal_e), *host = unescape(host_e);
	int rc = -1;
	ctl_acl_entry e = { .operation = (int8_t)op, .permission = (int8_t)perm };
	if (name && principal && host && strlen(principal) < sizeof(e.principal) &&
	    strlen(host) < sizeof(e.host)) {
		strcpy(e.principal, principal);
		strcpy(e.host, host);
		const ctl_acl_resource *cur = ctl_acl_store_find(&l->acls, (int8_t)type,
								  (int8_t)pattern, name);
		ctl_acl_resource r = { .type = (int8_t)type, .pattern = (int8_t)pattern, .name = name };
		bool changed;
		if (ctl_acl_merge(cur ? cur->entries : NULL, cur ? cur->n : 0, &e, 1, NULL, 0,
				  &r.entries, &r.n, &changed) == 0) {
			rc = ctl_acl_store_put(&l->acls, &r) == 0 ? 0 : -1;
			free(r.entries);
		}
	}
	free(name);
	free(principal);
	free(host);
	return rc;
}

/* One "client-config <entity> <name> <value>" line (after the keyword). */
static int load_client_config(ctl_meta *m, char **save)
{
	char *ent = strtok_r(NULL, " \n", save);
	char *name = strtok_r(NULL, " \n", save);
	char *val = strtok_r(NULL, " \n", save);
	if (!ent || !name || !val || strtok_r(NULL, " \n", save))
		return -1;
	char *entity = unescape(ent);
	ctl_entity_ref ref;
	if (!entity || ctl_entity_parse(entity, strlen(entity), &ref) != 0) {
		free(entity);
		return -1;
	}
	const ctl_client_config_set *cs = ctl_meta_client_configs(m, entity);
	int32_t n = cs ? cs->nconfigs : 0;
	ctl_config_entry *e = ctl_configs_copy(cs ? cs->configs : NULL, n);
	ctl_config_entry *grown = e ? realloc(e, (size_t)(n + 1) * sizeof(*e)) : NULL;
	if (!grown) {
		ctl_configs_free(e, n);
		free(entity);
		return -1;
	}
	e = grown;
	e[n].name = unescape(name);
	e[n].value = unescape(val);
	bool dup = false;
	for (int32_t k = 0; e[n].name && k < n; k++)
		dup = dup || strcmp(e[k].name, e[n].name) == 0;
	if (!e[n].name || !e[n].value || dup ||
	    ctl_meta_set_client_configs(m, entity, e, n + 1, 0) != 0) {
		ctl_configs_free(e, n + 1);
		free(entity);
		return -1;
	}
	free(entity);
	return 0;
}

/* Read the file into l. Returns 0 (also when there is none) or -errno
 * (-EINVAL when it does not parse). */
static int load(local *l)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", l->dir, CTL_FILE);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	char *line = NULL;
	size_t linecap = 0;
	int rc = -EINVAL;
	ctl_topic *t = NULL;
	int32_t nconf = 0, npart = 0;
	bool header = false, end = false, seen_pids = false;
	int version = 0;
	ctl_meta *m = &l->meta;
	while (getline(&line, &linecap, f) > 0) {
		char *save = NULL;
		char *kw = strtok_r(line, " \n", &save);
		if (!kw || end)
			goto out;
		if (!header) {
			long long v;
			if (strcmp(kw, "samsa-metadata") || parse_int(&save, CTL_FILE_VERSION_MIN,
								       CTL_FILE_VERSION, &v))
				goto out;
			header = true;
			version = (int)v;
			continue;
		}
		if (strcmp(kw, "producer-ids") == 0) {
			long long v;
			if (version < 2 || t || seen_pids || parse_int(&save, 0, INT64_MAX, &v))
				goto out;
			/* Ids below the persisted end may have been handed out
			 * before a crash: start after them. */
			l->pid_block_end = v;
			seen_pids = true;
			continue;
		}
		if (strcmp(kw, "broker-config") == 0) {
			if (version < 3 || t)
				goto out;
			if (load_broker_config(m, &save) != 0)
				goto out;
			continue;
		}
		if (strcmp(kw, "acl") == 0) {
			if (version < 5 || t || load_acl(l, &save) != 0)
				goto out;
			continue;
		}
		if (strcmp(kw, "client-config") == 0) {
			if (version < 4 || t)
				goto out;
			if (load_client_config(m, &save) != 0)
				goto out;
			continue;
		}
		if (strcmp(kw, "end") == 0) {
			if (t)
				goto out;
			end = true;
			continue;
		}
		if (strcmp(kw, "topic") == 0) {
			if (t)
				goto out;
			char *name = strtok_r(NULL, " \n", &save);
			char *hex = strtok_r(NULL, " \n", &save);
			long long internal, parts, rf, nc;
			if (!name || !hex || ctl_validate_topic_name(name, (int32_t)strlen(name)) ||
			    ctl_meta_find(m, name, (int32_t)strlen(name)))
				goto out;
			if (parse_int(&save, 0, 1, &internal) ||
			    parse_int(&save, 1, CTL_MAX_PARTITIONS, &parts) ||
			    parse_int(&save, 1, INT16_MAX, &rf) || parse_int(&save, 0, 100000, &nc))
				goto out;
			t = calloc(1, sizeof(*t));
			if (!t) {
				rc = -ENOMEM;
				goto out;
			}
			strcpy(t->name, name);
			if (hex_decode(hex, t->id, 16))
				goto out;
			t->internal = internal;
			t->replication_factor = (int32_t)rf;
			t->partitions = calloc((size_t)parts, sizeof(*t->partitions));
			t->configs = calloc(nc ? (size_t)nc : 1, sizeof(*t->configs));
			if (!t->partitions || !t->configs) {
				rc = -ENOMEM;
				goto out;
			}
			npart = (int32_t)parts;
			nconf = (int32_t)nc;
		} else if (strcmp(kw, "config") == 0) {
			if (!t || t->nconfigs >= nconf)
				goto out;
			char *name = strtok_r(NULL, " \n", &save);
			char *val = strtok_r(NULL, " \n", &save);
			if (!name || !val)
				goto out;
			ctl_config_entry *e = &t->configs[t->nconfigs];
			e->name = strdup(name);
			e->value = unescape(val);
			t->nconfigs++;
			if (!e->name || !e->value)
				goto out;
		} else if (strcmp(kw, "partition") == 0) {
			if (!t || t->nconfigs != nconf || t->npartitions >= npart)
				goto out;
			ctl_partition *p = &t->partitions[t->npartitions];
			long long idx, leader, epoch;
			if (parse_int(&save, t->npartitions, t->npartitions, &idx) ||
			    parse_int(&save, -1, INT32_MAX, &leader) ||
			    parse_int(&save, -1, INT32_MAX, &epoch))
				goto out;
			p->partition = (int32_t)idx;
			p->leader = (int32_t)leader;
			p->leader_epoch = (int32_t)epoch;
			t->npartitions++;
			if (parse_id_list(&save, &p->replicas, &p->nreplicas) ||
			    parse_id_list(&save, &p->isr, &p->nisr))
				goto out;
		} else {
			goto out;
		}
		if (t && t->nconfigs == nconf && t->npartitions == npart) {
			rc = ctl_meta_add(m, t);
			if (rc) {
				goto out;
			}
			rc = -EINVAL;
			t = NULL;
		}
	}
	if (header && end && !t && !ferror(f))
		rc = 0;
out:
	ctl_topic_free(t);
	free(line);
	fclose(f);
	return rc;
}

/* ---- operations ---- */

static void set_msg(ctl_result *r, const char *msg)
{
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

/* The one broker is the only replica: ids other than ours are unknown. */
static bool registered(const local *l, int32_t id)
{
	return id == l->self.id;
}

/* Fill p (index idx) with replicas (given, or rf brokers round robin from
 * idx), ISR = the replicas, leader the first of them, leader epoch 0.
 * Returns 0 or -ENOMEM. */
static int fill_new_partition(const local *l, ctl_partition *p, int32_t idx,
			      const ctl_replica_list *rl, int32_t rf)
{
	int32_t n = rl ? rl->n : rf;
	memset(p, 0, sizeof(*p));
	p->partition = idx;
	p->replicas = malloc((size_t)n * sizeof(int32_t));
	p->isr = malloc((size_t)n * sizeof(int32_t));
	if (!p->replicas || !p->isr) {
		ctl_partition_clear(p);
		return -ENOMEM;
	}
	for (int32_t r = 0; r < n; r++)
		p->replicas[r] = rl ? rl->ids[r] : l->self.id;
	memcpy(p->isr, p->replicas, (size_t)n * sizeof(int32_t));
	p->nreplicas = n;
	p->nisr = n;
	p->leader = p->isr[0];
	return 0;
}

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* Kafka's ReplicationControlManager.validateManualPartitionAssignment: the
 * ids are checked in ascending order, each registered and once only, then
 * their number against the replication factor (rf < 0: any). */
static int check_replica_list(const local *l, const ctl_replica_list *rl, int32_t rf,
			      ctl_result *r)
{
	if (rl->n <= 0 || !rl->ids) {
		set_msg(r, "The manual partition assignment includes an empty replica list.");
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	int32_t *sorted = malloc((size_t)rl->n * sizeof(*sorted));
	if (!sorted)
		return KERR_UNKNOWN_SERVER_ERROR;
	memcpy(sorted, rl->ids, (size_t)rl->n * sizeof(*sorted));
	qsort(sorted, (size_t)rl->n, sizeof(*sorted), cmp_int32);
	int err = KERR_NONE;
	for (int32_t i = 0; i < rl->n && !err; i++) {
		if (!registered(l, sorted[i])) {
			snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes "
				 "broker %d, but no such broker is registered.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		} else if (i > 0 && sorted[i] == sorted[i - 1]) {
			snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes the "
				 "broker %d more than once.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	free(sorted);
	if (!err && rf >= 0 && rl->n != rf) {
		snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes a "
			 "partition with %d replica(s), but this is not consistent with previous "
			 "partitions, which have %d replica(s).", (int)rl->n, (int)rf);
		err = KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	return err;
}

static int create_topic(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	const char *name = op->topic;
	int32_t len = (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1);
	if (ctl_validate_topic_name(name, len))
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (ctl_meta_find(&l->meta, name, len)) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' already exists.", name);
		return KERR_TOPIC_ALREADY_EXISTS;
	}
	const ctl_topic *other = ctl_meta_find_colliding(&l->meta, name);
	if (other) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' collides with existing topic: %s", name,
			 other->name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	int32_t partitions = op->assignments ? op->nassignments : op->partitions;
	int32_t rf = op->replication_factor;
	if (op->assignments) {
		rf = op->nassignments > 0 ? op->assignments[0].n : 0;
		for (int32_t i = 0; i < op->nassignments; i++) {
			int err = check_replica_list(l, &op->assignments[i], rf, r);
			if (err)
				return err;
		}
	}
	if (partitions < 1 || partitions > CTL_MAX_PARTITIONS)
		return KERR_INVALID_PARTITIONS;
	if (rf < 1 || rf > 1) {
		snprintf(r->msg, sizeof(r->msg), "Unable to replicate the partition %d time(s): The "
			 "target replication factor of %d cannot be reached because only 1 broker(s) "
			 "are registered.", (int)rf, (int)rf);
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	if (op->validate_only)
		return KERR_NONE;

	ctl_topic *t = calloc(1, sizeof(*t));
	if (!t)
		return KERR_UNKNOWN_SERVER_ERROR;
	memcpy(t->name, name, (size_t)len);
	t->internal = ctl_topic_name_is_internal(t->name, (size_t)len);
	t->replication_factor = rf;
	static const uint8_t zero[16];
	if (memcmp(op->topic_id, zero, 16) != 0) {
		if (ctl_meta_find_by_id(&l->meta, op->topic_id)) {
			free(t);
			return KERR_INVALID_REQUEST; /* an id already taken */
		}
		memcpy(t->id, op->topic_id, 16);
	} else if (ctl_random_uuid(t->id)) {
		free(t);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	t->partitions = calloc((size_t)partitions, sizeof(*t->partitions));
	t->configs = ctl_configs_copy(op->configs, op->nconfigs);
	if (!t->partitions || !t->configs)
		goto nomem;
	t->nconfigs = op->nconfigs;
	for (int32_t p = 0; p < partitions; p++) {
		if (fill_new_partition(l, &t->partitions[p], p,
				       op->assignments ? &op->assignments[p] : NULL, rf))
			goto nomem;
		t->npartitions = p + 1;
	}
	if (ctl_meta_add(&l->meta, t))
		goto nomem;
	if (save(l) != 0) {
		/* Not persisted: forget it so memory and disk agree. */
		ctl_topic_free(ctl_meta_take(&l->meta, t->name, NULL));
		set_msg(r, "The topic's metadata could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	memcpy(r->topic_id, t->id, 16);
	ctl_emit_topic(c, t);
	return KERR_NONE;
nomem:
	ctl_topic_free(t);
	return KERR_UNKNOWN_SERVER_ERROR;
}

static int delete_topic(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	int32_t pos;
	ctl_topic *t = ctl_meta_take(&l->meta, op->topic, &pos);
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (save(l) != 0) {
		ctl_meta_insert_at(&l->meta, t, pos); /* the file still lists it */
		set_msg(r, "The topic's metadata could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	ctl_emit_topic_deleted(c, t);
	ctl_topic_free(t);
	return KERR_NONE;
}

static int create_partitions(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	ctl_topic *t = (ctl_topic *)ctl_meta_find(&l->meta, op->topic,
						  (int32_t)strnlen(op->topic, CTL_TOPIC_NAME_MAX + 1));
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int32_t cur = t->npartitions, count = op->partitions;
	if (count == cur) {
		snprintf(r->msg, sizeof(r->msg), "Topic already has %d partition(s).", (int)cur);
		return KERR_INVALID_PARTITIONS;
	}
	if (count < cur) {
		snprintf(r->msg, sizeof(r->msg), "The topic %s currently has %d partition(s); %d would "
			 "not be an increase.", t->name, (int)cur, (int)count);
		return KERR_INVALID_PARTITIONS;
	}
	if (count > CTL_MAX_PARTITIONS) {
		snprintf(r->msg, sizeof(r->msg), "Unable to create %d partition(s): a topic has at "
			 "most %d.", (int)count, CTL_MAX_PARTITIONS);
		return KERR_INVALID_PARTITIONS;
	}
	int32_t add = count - cur;
	if (op->assignments && op->nassignments != add) {
		snprintf(r->msg, sizeof(r->msg), "Attempted to add %d additional partition(s), but "
			 "only %d assignment(s) were specified.", (int)add, (int)op->nassignments);
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	/* The new partitions get the replica count of the existing ones. */
	int32_t rf = cur > 0 ? t->partitions[0].nreplicas : t->replication_factor;
	if (op->assignments) {
		for (int32_t i = 0; i < op->nassignments; i++) {
			int err = check_replica_list(l, &op->assignments[i], rf, r);
			if (err)
				return err;
		}
	} else if (rf < 1 || rf > 1) {
		snprintf(r->msg, sizeof(r->msg), "Unable to replicate the partition %d time(s): The "
			 "target replication factor of %d cannot be reached because only 1 broker(s) "
			 "are registered.", (int)rf, (int)rf);
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	if (op->validate_only)
		return KERR_NONE;

	ctl_partition *parts = realloc(t->partitions, (size_t)count * sizeof(*parts));
	if (!parts)
		return KERR_UNKNOWN_SERVER_ERROR;
	t->partitions = parts;
	int32_t i;
	for (i = cur; i < count; i++)
		if (fill_new_partition(l, &parts[i], i,
				       op->assignments ? &op->assignments[i - cur] : NULL, rf))
			break;
	if (i == count) {
		t->npartitions = count;
		if (save(l) == 0) {
			ctl_emit_topic(c, t);
			return KERR_NONE;
		}
		t->npartitions = cur;
	}
	/* Out of memory or not persisted: forget the new partitions so memory
	 * and disk agree (the array keeps its larger size). */
	for (int32_t k = cur; k < i; k++)
		ctl_partition_clear(&parts[k]);
	if (i < count)
		return KERR_UNKNOWN_SERVER_ERROR;
	set_msg(r, "The topic's metadata could not be written.");
	return KERR_KAFKA_STORAGE_ERROR;
}

static int set_topic_configs(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	ctl_topic *t = (ctl_topic *)ctl_meta_find(&l->meta, op->topic,
						  (int32_t)strnlen(op->topic, CTL_TOPIC_NAME_MAX + 1));
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	ctl_config_entry *fresh = ctl_configs_copy(op->configs, op->nconfigs);
	if (!fresh)
		return KERR_UNKNOWN_SERVER_ERROR;
	ctl_config_entry *old = t->configs;
	int32_t nold = t->nconfigs;
	t->configs = fresh;
	t->nconfigs = op->nconfigs;
	if (save(l) != 0) {
		t->configs = old;
		t->nconfigs = nold;
		ctl_configs_free(fresh, op->nconfigs);
		set_msg(r, "The topic's metadata could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	ctl_configs_free(old, nold);
	ctl_emit_topic(c, t);
	return KERR_NONE;
}

static int set_broker_configs(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	if (op->broker_id < 0 && op->broker_id != CTL_BROKER_DEFAULT)
		return KERR_INVALID_REQUEST;
	ctl_config_entry *fresh = ctl_configs_copy(op->configs, op->nconfigs);
	ctl_config_entry *old;
	int32_t nold;
	if (!fresh || ctl_meta_swap_broker_configs(&l->meta, op->broker_id, fresh, op->nconfigs,
						   &old, &nold) != 0) {
		ctl_configs_free(fresh, op->nconfigs);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	if (save(l) != 0) {
		ctl_config_entry *undo;
		int32_t nundo;
		ctl_meta_swap_broker_configs(&l->meta, op->broker_id, old, nold, &undo, &nundo);
		ctl_configs_free(undo, nundo);
		set_msg(r, "The broker configs could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	ctl_configs_free(old, nold);
	ctl_emit_broker_configs(c, op->broker_id, op->configs, op->nconfigs);
	return KERR_NONE;
}

/* Whether a name is given twice in configs[0..n). */
static bool configs_repeat(const ctl_config_entry *e, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		for (int32_t k = 0; k < i; k++)
			if (strcmp(e[i].name ? e[i].name : "", e[k].name ? e[k].name : "") == 0)
				return true;
	return false;
}

static int set_client_configs(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	ctl_entity_ref ref;
	if (!op->entity || ctl_entity_parse(op->entity, strlen(op->entity), &ref) != 0) {
		set_msg(r, "Invalid client config entity.");
		return KERR_INVALID_REQUEST;
	}
	if (op->nconfigs < 0 || configs_repeat(op->configs, op->nconfigs)) {
		set_msg(r, "A config is given more than once.");
		return KERR_INVALID_CONFIG;
	}
	const ctl_client_config_set *cs = ctl_meta_client_configs(&l->meta, op->entity);
	int32_t cur = cs ? cs->version : -1;
	if (op->conditional && op->expected_version != cur) {
		snprintf(r->msg, sizeof(r->msg), "The configs of %s are at version %d, not %d.",
			 op->entity, (int)cur, (int)op->expected_version);
		r->config_version = cur;
		return KERR_INVALID_UPDATE_VERSION;
	}
	if (op->validate_only) {
		r->config_version = cur;
		return KERR_NONE;
	}
	/* Keep the old set to put back when the file cannot be written. */
	ctl_config_entry *undo = cs ? ctl_configs_copy(cs->configs, cs->nconfigs) : NULL;
	int32_t nundo = cs ? cs->nconfigs : 0;
	ctl_config_entry *fresh = ctl_configs_copy(op->configs, op->nconfigs);
	int32_t version = op->nconfigs > 0 ? cur + 1 : -1;
	if ((cs && !undo) || !fresh ||
	    ctl_meta_set_client_configs(&l->meta, op->entity, fresh, op->nconfigs, version) != 0) {
		ctl_configs_free(undo, nundo);
		ctl_configs_free(fresh, op->nconfigs);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	if (save(l) != 0) {
		if (ctl_meta_set_client_configs(&l->meta, op->entity, undo, nundo,
						undo ? cur : -1) != 0)
			ctl_configs_free(undo, nundo);
		set_msg(r, "The client configs could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	ctl_configs_free(undo, nundo);
	r->config_version = version;
	ctl_emit_client_configs(c, op->entity, op->configs, op->nconfigs, version);
	return KERR_NONE;
}

static int producer_ids(local *l, ctl_result *r)
{
	if (l->pid_block_end > INT64_MAX - CTL_PRODUCER_ID_BLOCK)
		return KERR_UNKNOWN_SERVER_ERROR; /* id space exhausted */
	int64_t start = l->pid_block_end;
	l->pid_block_end = start + CTL_PRODUCER_ID_BLOCK;
	if (save(l) != 0) {
		l->pid_block_end = start;
		set_msg(r, "The producer id block could not be written.");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	r->producer_id_start = start;
	r->producer_id_end = start + CTL_PRODUCER_ID_BLOCK;
	return KERR_NONE;
}

static int update_acls(ctl *c, local *l, const ctl_op *op, ctl_result *r)
{
	if (op->acl_type < CTL_ACL_RES_TOPIC || op->acl_type > CTL_ACL_RES_MAX ||
	    (op->acl_pattern != CTL_ACL_PAT_LITERAL && op->acl_pattern != CTL_ACL_PAT_PREFIXED) ||
	    !op->acl_name)
		return KERR_INVALID_REQUEST;
	const ctl_acl_resource *cur = ctl_acl_store_find(&l->acls, op->acl_type, op->acl_pattern,
							  op->acl_name);
	ctl_acl_resource old = { 0 };
	if (cur && ctl_acl_resource_copy(&old, cur) != 0)
		return KERR_UNKNOWN_SERVER_ERROR;
	ctl_acl_resource fresh = { .type = op->acl_type, .pattern = op->acl_pattern,
				   .name = (char *)op->acl_name };
	bool changed;
	if (ctl_acl_merge(old.entries, old.n, op->acl_add, op->nacl_add, op->acl_remove,
			  op->nacl_remove, &fresh.entries, &fresh.n, &changed) != 0 ||
	    (changed && ctl_acl_store_put(&l->acls, &fresh) != 0)) {
		free(fresh.entries);
		ctl_acl_resource_clear(&old);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	int err = KERR_NONE;
	if (changed && save(l) != 0) {
		if (cur)
			ctl_acl_store_put(&l->acls, &old);
		else
			ctl_acl_store_put(&l->acls, &(ctl_acl_resource){ .type = fresh.type,
				.pattern = fresh.pattern, .name = fresh.name });
		set_msg(r, "The ACLs could not be written.");
		err = KERR_KAFKA_STORAGE_ERROR;
	} else if (changed) {
		ctl_emit_acls(c, &fresh);
	}
	free(fresh.entries);
	ctl_acl_resource_clear(&old);
	return err;
}

/* ---- reassignments (one broker: nothing can move) ---- */

static bool local_live(const void *arg, int32_t id)
{
	return id == ((const local *)arg)->self.id;
}

/* Kafka's answers for a one-broker cluster: the only valid target is the
 * replica the partition has (no change); anything else names a broker
 * that is not alive. */
static int alter_reassignment(local *l, const ctl_op *op, ctl_result *r)
{
	const ctl_topic *t = ctl_meta_find(&l->meta, op->topic,
					   (int32_t)strnlen(op->topic, CTL_TOPIC_NAME_MAX + 1));
	const ctl_partition *cp = t && op->partition >= 0 && op->partition < t->npartitions
					  ? &t->partitions[op->partition] : NULL;
	if (!op->assignments || op->nassignments < 1) {
		set_msg(r, "No partition reassignment is in progress.");
		return KERR_NO_REASSIGNMENT_IN_PROGRESS;
	}
	ctl_reassign_sets cur = { 0 };
	if (cp) {
		cur.replicas = cp->replicas;
		cur.nreplicas = cp->nreplicas;
	}
	const ctl_replica_list *target = &op->assignments[0];
	int16_t err = ctl_reassign_validate(target->ids, target->n, cp ? &cur : NULL, local_live, l,
					    r->msg, sizeof(r->msg));
	if (err)
		return err;
	if (!cp) {
		set_msg(r, "The partition does not exist.");
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (op->no_rf_change && target->n != cp->nreplicas) {
		snprintf(r->msg, sizeof(r->msg), "The replication factor would change from %d to %d, "
			 "and AllowReplicationFactorChange is false.", (int)cp->nreplicas,
			 (int)target->n);
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	return KERR_NONE;
}

/* One node leads every partition: no election is ever needed (what
 * ZooKeeper-mode Kafka answers for a single replica that leads). */
static int elect_leader(local *l, const ctl_op *op, ctl_result *r)
{
	if (op->election_type != CTL_ELECTION_PREFERRED &&
	    op->election_type != CTL_ELECTION_UNCLEAN) {
		snprintf(r->msg, sizeof(r->msg), "Unknown election type %d", (int)op->election_type);
		return KERR_INVALID_REQUEST;
	}
	const ctl_topic *t = ctl_meta_find(&l->meta, op->topic,
					   (int32_t)strnlen(op->topic, sizeof(op->topic)));
	if (!t || op->partition < 0 || op->partition >= t->npartitions) {
		set_msg(r, "The partition does not exist.");
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	set_msg(r, "Leader election not needed for topic partition.");
	return KERR_ELECTION_NOT_NEEDED;
}

static void run(ctl *c, void *state, const ctl_op *op, ctl_result *r)
{
	local *l = state;
	int err;
	switch (op->type) {
	case CTL_OP_CREATE_TOPIC:
		err = create_topic(c, l, op, r);
		break;
	case CTL_OP_DELETE_TOPIC:
		err = delete_topic(c, l, op, r);
		break;
	case CTL_OP_CREATE_PARTITIONS:
		err = create_partitions(c, l, op, r);
		break;
	case CTL_OP_SET_TOPIC_CONFIGS:
		err = set_topic_configs(c, l, op, r);
		break;
	case CTL_OP_SET_BROKER_CONFIGS:
		err = set_broker_configs(c, l, op, r);
		break;
	case CTL_OP_PRODUCER_IDS:
		err = producer_ids(l, r);
		break;
	case CTL_OP_SET_CLIENT_CONFIGS:
		err = set_client_configs(c, l, op, r);
		break;
	case CTL_OP_CONTROLLED_SHUTDOWN:
		err = KERR_NONE; /* one node: nobody to hand leadership to */
		break;
	case CTL_OP_ALTER_REASSIGNMENT:
		err = alter_reassignment(l, op, r);
		break;
	case CTL_OP_LIST_REASSIGNMENTS:
		err = KERR_NONE; /* the only broker is the controller */
		break;
	case CTL_OP_ELECT_LEADER:
		err = elect_leader(l, op, r);
		break;
	case CTL_OP_UPDATE_ACLS:
		err = update_acls(c, l, op, r);
		break;
	default:
		err = KERR_INVALID_REQUEST;
		break;
	}
	r->error = (int16_t)err;
}

static int start(ctl *c, const ctl_options *o, void **state)
{
	*state = NULL;
	local *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (strlen(o->log_dir) >= sizeof(l->dir)) {
		free(l);
		return -ENAMETOOLONG;
	}
	strcpy(l->dir, o->log_dir);
	l->self = o->self;
	l->self.id = o->broker_id;
	int rc = ctl_meta_init(&l->meta);
	if (!rc)
		rc = load(l);
	if (rc) {
		ctl_meta_destroy(&l->meta);
		ctl_acl_store_free(&l->acls);
		free(l);
		return rc;
	}
	/* The initial events: one broker, which is the controller, its
	 * configs, every topic with its partition states. */
	ctl_emit_brokers(c, &l->self, 1);
	ctl_emit_controller(c, l->self.id, 0);
	for (int32_t i = 0; i < l->meta.nbroker_configs; i++) {
		const ctl_broker_config_set *bs = &l->meta.broker_configs[i];
		ctl_emit_broker_configs(c, bs->broker_id, bs->configs, bs->nconfigs);
	}
	for (int32_t i = 0; i < l->meta.nclient_configs; i++) {
		const ctl_client_config_set *cs = &l->meta.client_configs[i];
		ctl_emit_client_configs(c, cs->entity, cs->configs, cs->nconfigs, cs->version);
	}
	for (int32_t i = 0; i < l->acls.n; i++)
		ctl_emit_acls(c, &l->acls.v[i]);
	for (int32_t i = 0; i < l->meta.ntopics; i++)
		ctl_emit_topic(c, l->meta.topics[i]);
	*state = l;
	return 0;
}

static void stop(ctl *c, void *state)
{
	(void)c;
	local *l = state;
	if (!l)
		return;
	ctl_meta_destroy(&l->meta);
	ctl_acl_store_free(&l->acls);
	free(l);
}

const ctl_backend_ops ctl_local_backend = { start, run, stop };
