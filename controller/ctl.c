/*
 * ctl.c - the local controller back end: one node, topics kept in memory and
 * persisted in <log.dir>/__samsa_metadata.
 *
 * File format (text, one record per line, written to a .tmp, fsynced,
 * renamed, directory fsynced):
 *
 *   samsa-metadata 3
 *   producer-ids <end of the reserved producer id block, exclusive>
 *                                                    (version 2+; optional)
 *   broker-config <broker id | default> <name, %XX-escaped> <value, %XX-escaped>
 *                                                    (version 3+; any number)
 *   topic <name> <id: 32 hex digits> <internal 0|1> <partitions> <replication factor> <nconfigs>
 *   config <name> <value, %XX-escaped>              (nconfigs lines)
 *   partition <index> <leader> <leader epoch> <nreplicas> <id>... <nisr> <id>...
 *                                                    (partitions lines)
 *   end
 *
 * Topic names and config names never hold spaces (name rules / config names);
 * config values are escaped so any byte survives. Version 1 files (no
 * producer-ids line) and version 2 files (no broker-config lines) are still
 * read; version 3 is written. broker-config lines hold the dynamic broker
 * configs (KIP-226) of one broker or of the cluster-wide default.
 */
#include "controller/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/err.h"

#define CTL_FILE "__samsa_metadata"
#define CTL_FILE_VERSION 3
#define CTL_FILE_VERSION_MIN 1
/* Producer ids are reserved (persisted) this many at a time. */
#define CTL_PRODUCER_ID_BLOCK 1000
/* Upper bound on partitions of one topic (also bounds memory on bad input). */
#define CTL_MAX_PARTITIONS 100000

/* The dynamic broker configs of one broker (or CTL_BROKER_DEFAULT). */
typedef struct ctl_broker_config_set {
	int32_t broker_id;
	ctl_config_entry *configs;
	int32_t nconfigs;
} ctl_broker_config_set;

struct ctl {
	char dir[4096];
	int32_t broker_id;
	ctl_topic **topics; /* creation order */
	int32_t ntopics;
	int32_t cap;
	/* open-addressing index by name: slot holds topic index + 1, 0 empty */
	int32_t *index;
	uint32_t index_cap; /* power of two, > 2 * ntopics */
	/* Producer ids: next to hand out, and the end (exclusive) of the block
	 * reserved in the file. next == pid_block_end: reserve a new block. */
	int64_t pid_next;
	int64_t pid_block_end;
	ctl_broker_config_set *broker_configs; /* one per broker id with any */
	int32_t nbroker_configs;
};

/* ---- helpers ---- */

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	return h;
}

static int index_rebuild(ctl *c)
{
	uint32_t cap = 16;
	while (cap < (uint32_t)c->ntopics * 2 + 2)
		cap <<= 1;
	int32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (int32_t i = 0; i < c->ntopics; i++) {
		const char *n = c->topics[i]->name;
		uint32_t h = name_hash(n, strlen(n)) & (cap - 1);
		while (idx[h])
			h = (h + 1) & (cap - 1);
		idx[h] = i + 1;
	}
	free(c->index);
	c->index = idx;
	c->index_cap = cap;
	return 0;
}

static void topic_free(ctl_topic *t)
{
	if (!t)
		return;
	for (int32_t i = 0; i < t->npartitions && t->partitions; i++) {
		free(t->partitions[i].replicas);
		free(t->partitions[i].isr);
	}
	free(t->partitions);
	for (int32_t i = 0; i < t->nconfigs && t->configs; i++) {
		free(t->configs[i].name);
		free(t->configs[i].value);
	}
	free(t->configs);
	free(t);
}

bool ctl_topic_name_is_internal(const char *name, size_t len)
{
	static const char *const internal[] = { "__consumer_offsets", "__transaction_state" };
	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (len == strlen(internal[i]) && memcmp(name, internal[i], len) == 0)
			return true;
	return false;
}

/* Kafka's Uuid.randomUuid(): never ZERO_UUID, never METADATA_TOPIC_ID
 * (0, 1), never one whose base64 form starts with '-'. */
static int random_topic_id(uint8_t id[16])
{
	for (;;) {
		size_t got = 0;
		while (got < 16) {
			ssize_t n = getrandom(id + got, 16 - got, 0);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)n;
		}
		bool hi_zero = true, lo_zero_or_one = id[15] <= 1;
		for (int i = 0; i < 8; i++)
			if (id[i])
				hi_zero = false;
		for (int i = 8; i < 15; i++)
			if (id[i])
				lo_zero_or_one = false;
		if (hi_zero && lo_zero_or_one)
			continue; /* ZERO_UUID or METADATA_TOPIC_ID */
		if ((id[0] >> 2) == 62)
			continue; /* base64url '-' first */
		return 0;
	}
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

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static int ctl_save(const ctl *c)
{
	char path[4200], tmp[4210];
	snprintf(path, sizeof(path), "%s/%s", c->dir, CTL_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = -errno;
		close(fd);
		unlink(tmp);
		return e;
	}
	fprintf(f, "samsa-metadata %d\n", CTL_FILE_VERSION);
	if (c->pid_block_end > 0)
		fprintf(f, "producer-ids %lld\n", (long long)c->pid_block_end);
	for (int32_t i = 0; i < c->nbroker_configs; i++) {
		const ctl_broker_config_set *bs = &c->broker_configs[i];
		for (int32_t k = 0; k < bs->nconfigs; k++) {
			if (bs->broker_id == CTL_BROKER_DEFAULT)
				fputs("broker-config default ", f);
			else
				fprintf(f, "broker-config %d ", bs->broker_id);
			write_escaped(f, bs->configs[k].name);
			fputc(' ', f);
			write_escaped(f, bs->configs[k].value);
			fputc('\n', f);
		}
	}
	for (int32_t i = 0; i < c->ntopics; i++) {
		const ctl_topic *t = c->topics[i];
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
	int rc = 0;
	if (fflush(f) != 0 || ferror(f))
		rc = -(errno ? errno : EIO);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return fsync_dir(c->dir);
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

static int ctl_append(ctl *c, ctl_topic *t)
{
	if (c->ntopics == c->cap) {
		int32_t cap = c->cap ? c->cap * 2 : 16;
		ctl_topic **n = realloc(c->topics, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->topics = n;
		c->cap = cap;
	}
	c->topics[c->ntopics++] = t;
	if ((uint32_t)c->ntopics * 2 + 2 > c->index_cap)
		return index_rebuild(c);
	const char *nm = t->name;
	uint32_t h = name_hash(nm, strlen(nm)) & (c->index_cap - 1);
	while (c->index[h])
		h = (h + 1) & (c->index_cap - 1);
	c->index[h] = c->ntopics;
	return 0;
}

static void entries_free(ctl_config_entry *e, int32_t n)
{
	for (int32_t i = 0; i < n && e; i++) {
		free(e[i].name);
		free(e[i].value);
	}
	free(e);
}

/* A copy of configs[0..n) (NULL values become ""); NULL when out of memory.
 * An empty set is a 1-entry allocation so NULL always means failure. */
static ctl_config_entry *entries_copy(const ctl_config_entry *configs, int32_t n)
{
	ctl_config_entry *e = calloc(n > 0 ? (size_t)n : 1, sizeof(*e));
	if (!e)
		return NULL;
	for (int32_t i = 0; i < n; i++) {
		e[i].name = strdup(configs[i].name ? configs[i].name : "");
		e[i].value = strdup(configs[i].value ? configs[i].value : "");
		if (!e[i].name || !e[i].value) {
			entries_free(e, n);
			return NULL;
		}
	}
	return e;
}

static ctl_broker_config_set *broker_set_find(const ctl *c, int32_t broker_id)
{
	for (int32_t i = 0; i < c->nbroker_configs; i++)
		if (c->broker_configs[i].broker_id == broker_id)
			return &c->broker_configs[i];
	return NULL;
}

/* The set of broker_id, added empty when absent; NULL when out of memory. */
static ctl_broker_config_set *broker_set_get(ctl *c, int32_t broker_id)
{
	ctl_broker_config_set *bs = broker_set_find(c, broker_id);
	if (bs)
		return bs;
	ctl_broker_config_set *n = realloc(c->broker_configs,
					   (size_t)(c->nbroker_configs + 1) * sizeof(*n));
	if (!n)
		return NULL;
	c->broker_configs = n;
	bs = &n[c->nbroker_configs++];
	memset(bs, 0, sizeof(*bs));
	bs->broker_id = broker_id;
	return bs;
}

/* One "broker-config <scope> <name> <value>" line (after the keyword). */
static int load_broker_config(ctl *c, char **save)
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
	ctl_broker_config_set *bs = broker_set_get(c, id);
	if (!bs)
		return -1;
	ctl_config_entry *n = realloc(bs->configs, (size_t)(bs->nconfigs + 1) * sizeof(*n));
	if (!n)
		return -1;
	bs->configs = n;
	ctl_config_entry *e = &n[bs->nconfigs];
	e->name = unescape(name);
	e->value = unescape(val);
	if (!e->name || !e->value) {
		free(e->name);
		free(e->value);
		return -1;
	}
	bs->nconfigs++;
	return 0;
}

static int ctl_load(ctl *c)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", c->dir, CTL_FILE);
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
			c->pid_block_end = v;
			c->pid_next = v;
			seen_pids = true;
			continue;
		}
		if (strcmp(kw, "broker-config") == 0) {
			if (version < 3 || t)
				goto out;
			if (load_broker_config(c, &save) != 0)
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
			    ctl_find_topic(c, name, (int32_t)strlen(name)))
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
			rc = ctl_append(c, t);
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
	topic_free(t);
	free(line);
	fclose(f);
	return rc;
}

/* ---- public ---- */

int ctl_open(const char *dir, int32_t broker_id, ctl **out)
{
	*out = NULL;
	if (strlen(dir) >= sizeof(((ctl *)0)->dir))
		return -ENAMETOOLONG;
	ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	strcpy(c->dir, dir);
	c->broker_id = broker_id;
	int rc = index_rebuild(c);
	if (!rc)
		rc = ctl_load(c);
	if (rc) {
		ctl_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void ctl_close(ctl *c)
{
	if (!c)
		return;
	for (int32_t i = 0; i < c->ntopics; i++)
		topic_free(c->topics[i]);
	free(c->topics);
	free(c->index);
	for (int32_t i = 0; i < c->nbroker_configs; i++)
		entries_free(c->broker_configs[i].configs, c->broker_configs[i].nconfigs);
	free(c->broker_configs);
	free(c);
}

int32_t ctl_broker_count(const ctl *c)
{
	(void)c;
	return 1;
}

int32_t ctl_controller_id(const ctl *c)
{
	return c->broker_id;
}

int32_t ctl_broker_id_at(const ctl *c, int32_t i)
{
	return i == 0 ? c->broker_id : -1;
}

int ctl_validate_topic_name(const char *name, int32_t len)
{
	if (!name || len <= 0 || len > CTL_TOPIC_NAME_MAX)
		return KERR_INVALID_TOPIC_EXCEPTION;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return KERR_INVALID_TOPIC_EXCEPTION;
	for (int32_t i = 0; i < len; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return KERR_INVALID_TOPIC_EXCEPTION;
	}
	return 0;
}

/* Kafka's Topic.hasCollision: equal once '.' is mapped to '_'. */
static bool names_collide(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a == '.' ? '_' : *a, y = *b == '.' ? '_' : *b;
		if (x != y)
			return false;
	}
	return *a == *b;
}

const ctl_topic *ctl_find_colliding_topic(const ctl *c, const char *name)
{
	if (!strchr(name, '.') && !strchr(name, '_'))
		return NULL;
	for (int32_t i = 0; i < c->ntopics; i++)
		if (strcmp(c->topics[i]->name, name) && names_collide(c->topics[i]->name, name))
			return c->topics[i];
	return NULL;
}

int ctl_create_topic(ctl *c, const char *name, int32_t partitions, int16_t replication_factor,
		     const ctl_config_entry *configs, int32_t nconfigs, bool validate_only,
		     const ctl_topic **out)
{
	if (out)
		*out = NULL;
	int32_t len = name ? (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1) : 0;
	if (ctl_validate_topic_name(name, len))
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (ctl_find_topic(c, name, len))
		return KERR_TOPIC_ALREADY_EXISTS;
	if (ctl_find_colliding_topic(c, name))
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (partitions < 1 || partitions > CTL_MAX_PARTITIONS)
		return KERR_INVALID_PARTITIONS;
	if (replication_factor < 1 || replication_factor > ctl_broker_count(c))
		return KERR_INVALID_REPLICATION_FACTOR;
	if (nconfigs < 0 || (nconfigs > 0 && !configs))
		return KERR_INVALID_CONFIG;
	if (validate_only)
		return KERR_NONE;

	ctl_topic *t = calloc(1, sizeof(*t));
	if (!t)
		return KERR_UNKNOWN_SERVER_ERROR;
	memcpy(t->name, name, (size_t)len);
	t->name[len] = '\0';
	t->internal = ctl_topic_name_is_internal(t->name, strlen(t->name));
	t->replication_factor = replication_factor;
	if (random_topic_id(t->id)) {
		free(t);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	t->partitions = calloc((size_t)partitions, sizeof(*t->partitions));
	t->configs = calloc(nconfigs ? (size_t)nconfigs : 1, sizeof(*t->configs));
	if (!t->partitions || !t->configs)
		goto nomem;
	for (int32_t i = 0; i < nconfigs; i++) {
		t->configs[i].name = strdup(configs[i].name ? configs[i].name : "");
		t->configs[i].value = strdup(configs[i].value ? configs[i].value : "");
		t->nconfigs++;
		if (!t->configs[i].name || !t->configs[i].value)
			goto nomem;
	}
	for (int32_t p = 0; p < partitions; p++) {
		ctl_partition *cp = &t->partitions[p];
		cp->partition = p;
		cp->leader = c->broker_id;
		cp->leader_epoch = 0;
		t->npartitions++;
		cp->replicas = malloc(sizeof(int32_t));
		cp->isr = malloc(sizeof(int32_t));
		if (!cp->replicas || !cp->isr)
			goto nomem;
		cp->replicas[0] = c->broker_id;
		cp->nreplicas = 1;
		cp->isr[0] = c->broker_id;
		cp->nisr = 1;
	}
	if (ctl_append(c, t))
		goto nomem;
	if (ctl_save(c) != 0) {
		/* Not persisted: forget it so memory and disk agree. */
		c->ntopics--;
		index_rebuild(c);
		topic_free(t);
		return KERR_KAFKA_STORAGE_ERROR;
	}
	if (out)
		*out = t;
	return KERR_NONE;
nomem:
	topic_free(t);
	return KERR_UNKNOWN_SERVER_ERROR;
}

int ctl_delete_topic(ctl *c, const char *name)
{
	int32_t len = (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1);
	const ctl_topic *t = ctl_find_topic(c, name, len);
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int32_t i = 0;
	while (c->topics[i] != t)
		i++;
	ctl_topic *victim = c->topics[i];
	memmove(&c->topics[i], &c->topics[i + 1], (size_t)(c->ntopics - i - 1) * sizeof(ctl_topic *));
	c->ntopics--;
	int rc = ctl_save(c);
	if (index_rebuild(c) != 0 || rc != 0) {
		/* Put it back: the file still lists it. */
		memmove(&c->topics[i + 1], &c->topics[i], (size_t)(c->ntopics - i) * sizeof(ctl_topic *));
		c->topics[i] = victim;
		c->ntopics++;
		index_rebuild(c);
		return KERR_KAFKA_STORAGE_ERROR;
	}
	topic_free(victim);
	return KERR_NONE;
}

const ctl_topic *ctl_find_topic(const ctl *c, const char *name, int32_t len)
{
	if (!name || len <= 0 || len > CTL_TOPIC_NAME_MAX || !c->index)
		return NULL;
	uint32_t h = name_hash(name, (size_t)len) & (c->index_cap - 1);
	while (c->index[h]) {
		const ctl_topic *t = c->topics[c->index[h] - 1];
		if (strncmp(t->name, name, (size_t)len) == 0 && t->name[len] == '\0')
			return t;
		h = (h + 1) & (c->index_cap - 1);
	}
	return NULL;
}

const ctl_topic *ctl_find_topic_by_id(const ctl *c, const uint8_t id[16])
{
	static const uint8_t zero[16];
	if (memcmp(id, zero, 16) == 0)
		return NULL;
	for (int32_t i = 0; i < c->ntopics; i++)
		if (memcmp(c->topics[i]->id, id, 16) == 0)
			return c->topics[i];
	return NULL;
}

const ctl_topic *ctl_topic_at(const ctl *c, int32_t i)
{
	return i >= 0 && i < c->ntopics ? c->topics[i] : NULL;
}

int32_t ctl_topic_count(const ctl *c)
{
	return c->ntopics;
}

int ctl_next_producer_id(ctl *c, int64_t *out)
{
	*out = -1;
	if (c->pid_next >= c->pid_block_end) {
		if (c->pid_block_end > INT64_MAX - CTL_PRODUCER_ID_BLOCK)
			return KERR_UNKNOWN_SERVER_ERROR; /* id space exhausted */
		int64_t old_end = c->pid_block_end;
		c->pid_block_end = c->pid_next + CTL_PRODUCER_ID_BLOCK;
		if (ctl_save(c) != 0) {
			c->pid_block_end = old_end;
			return KERR_KAFKA_STORAGE_ERROR;
		}
	}
	*out = c->pid_next++;
	return KERR_NONE;
}

const char *ctl_topic_config(const ctl_topic *t, const char *name)
{
	for (int32_t i = 0; i < t->nconfigs; i++)
		if (strcmp(t->configs[i].name, name) == 0)
			return t->configs[i].value;
	return NULL;
}

int ctl_set_topic_configs(ctl *c, const char *name, const ctl_config_entry *configs,
			  int32_t nconfigs)
{
	int32_t len = name ? (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1) : 0;
	ctl_topic *t = (ctl_topic *)ctl_find_topic(c, name, len);
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (nconfigs < 0 || (nconfigs > 0 && !configs))
		return KERR_INVALID_CONFIG;
	ctl_config_entry *fresh = entries_copy(configs, nconfigs);
	if (!fresh)
		return KERR_UNKNOWN_SERVER_ERROR;
	ctl_config_entry *old = t->configs;
	int32_t nold = t->nconfigs;
	t->configs = fresh;
	t->nconfigs = nconfigs;
	if (ctl_save(c) != 0) {
		/* Not persisted: keep memory and disk in agreement. */
		t->configs = old;
		t->nconfigs = nold;
		entries_free(fresh, nconfigs);
		return KERR_KAFKA_STORAGE_ERROR;
	}
	entries_free(old, nold);
	return KERR_NONE;
}

int ctl_set_broker_configs(ctl *c, int32_t broker_id, const ctl_config_entry *configs,
			   int32_t nconfigs)
{
	if (nconfigs < 0 || (nconfigs > 0 && !configs) ||
	    (broker_id < 0 && broker_id != CTL_BROKER_DEFAULT))
		return KERR_INVALID_REQUEST;
	ctl_config_entry *fresh = entries_copy(configs, nconfigs);
	if (!fresh)
		return KERR_UNKNOWN_SERVER_ERROR;
	ctl_broker_config_set *bs = broker_set_get(c, broker_id);
	if (!bs) {
		entries_free(fresh, nconfigs);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	ctl_config_entry *old = bs->configs;
	int32_t nold = bs->nconfigs;
	bs->configs = fresh;
	bs->nconfigs = nconfigs;
	if (ctl_save(c) != 0) {
		bs->configs = old;
		bs->nconfigs = nold;
		entries_free(fresh, nconfigs);
		return KERR_KAFKA_STORAGE_ERROR;
	}
	entries_free(old, nold);
	return KERR_NONE;
}

const ctl_config_entry *ctl_broker_configs(const ctl *c, int32_t broker_id, int32_t *n)
{
	const ctl_broker_config_set *bs = broker_set_find(c, broker_id);
	*n = bs ? bs->nconfigs : 0;
	return bs && bs->nconfigs > 0 ? bs->configs : NULL;
}

/* ---- adding partitions ---- */

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

static bool broker_registered(const ctl *c, int32_t id)
{
	for (int32_t k = 0; k < ctl_broker_count(c); k++)
		if (ctl_broker_id_at(c, k) == id)
			return true;
	return false;
}

/* Kafka's ReplicationControlManager.validateManualPartitionAssignment: the
 * ids are checked in ascending order, each registered and once only, then
 * their number against the replication factor. */
static int check_replica_list(const ctl *c, const ctl_replica_list *rl, int32_t rf, char *msg,
			      size_t msgsize)
{
	if (rl->n <= 0 || !rl->ids) {
		snprintf(msg, msgsize, "The manual partition assignment includes an empty replica list.");
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	int32_t *sorted = malloc((size_t)rl->n * sizeof(*sorted));
	if (!sorted)
		return KERR_UNKNOWN_SERVER_ERROR;
	memcpy(sorted, rl->ids, (size_t)rl->n * sizeof(*sorted));
	qsort(sorted, (size_t)rl->n, sizeof(*sorted), cmp_int32);
	int err = KERR_NONE;
	for (int32_t i = 0; i < rl->n && !err; i++) {
		if (!broker_registered(c, sorted[i])) {
			snprintf(msg, msgsize, "The manual partition assignment includes broker %d, but "
				 "no such broker is registered.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		} else if (i > 0 && sorted[i] == sorted[i - 1]) {
			snprintf(msg, msgsize, "The manual partition assignment includes the broker %d "
				 "more than once.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	free(sorted);
	if (!err && rl->n != rf) {
		snprintf(msg, msgsize, "The manual partition assignment includes a partition with %d "
			 "replica(s), but this is not consistent with previous partitions, which have "
			 "%d replica(s).", (int)rl->n, (int)rf);
		err = KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	return err;
}

/* Fill p (index idx) with replicas (given, or rf brokers round robin from
 * idx), ISR = the replicas (every registered broker is alive here), leader
 * the first of the ISR, leader epoch 0. Returns 0 or -ENOMEM. */
static int fill_new_partition(const ctl *c, ctl_partition *p, int32_t idx, const ctl_replica_list *rl,
			      int32_t rf)
{
	int32_t n = rl ? rl->n : rf;
	memset(p, 0, sizeof(*p));
	p->partition = idx;
	p->leader_epoch = 0;
	p->replicas = malloc((size_t)n * sizeof(int32_t));
	p->isr = malloc((size_t)n * sizeof(int32_t));
	if (!p->replicas || !p->isr) {
		free(p->replicas);
		free(p->isr);
		p->replicas = p->isr = NULL;
		return -ENOMEM;
	}
	int32_t brokers = ctl_broker_count(c);
	for (int32_t r = 0; r < n; r++)
		p->replicas[r] = rl ? rl->ids[r] : ctl_broker_id_at(c, (idx + r) % brokers);
	memcpy(p->isr, p->replicas, (size_t)n * sizeof(int32_t));
	p->nreplicas = n;
	p->nisr = n;
	p->leader = p->isr[0];
	return 0;
}

int ctl_add_partitions(ctl *c, const char *name, int32_t count, const ctl_replica_list *assignments,
		       int32_t nassignments, bool validate_only, char *msg, size_t msgsize)
{
	if (msgsize)
		msg[0] = '\0';
	int32_t len = name ? (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1) : 0;
	ctl_topic *t = (ctl_topic *)ctl_find_topic(c, name, len); /* ctl owns it */
	if (!t)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int32_t cur = t->npartitions;
	if (count == cur) {
		snprintf(msg, msgsize, "Topic already has %d partition(s).", (int)cur);
		return KERR_INVALID_PARTITIONS;
	}
	if (count < cur) {
		snprintf(msg, msgsize, "The topic %s currently has %d partition(s); %d would not be an "
			 "increase.", t->name, (int)cur, (int)count);
		return KERR_INVALID_PARTITIONS;
	}
	if (count > CTL_MAX_PARTITIONS) {
		snprintf(msg, msgsize, "Unable to create %d partition(s): a topic has at most %d.",
			 (int)count, CTL_MAX_PARTITIONS);
		return KERR_INVALID_PARTITIONS;
	}
	int32_t add = count - cur;
	if (assignments && nassignments != add) {
		snprintf(msg, msgsize, "Attempted to add %d additional partition(s), but only %d "
			 "assignment(s) were specified.", (int)add, (int)nassignments);
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	/* The new partitions get the replica count of the existing ones. */
	int32_t rf = cur > 0 ? t->partitions[0].nreplicas : t->replication_factor;
	if (assignments) {
		for (int32_t i = 0; i < nassignments; i++) {
			int err = check_replica_list(c, &assignments[i], rf, msg, msgsize);
			if (err)
				return err;
		}
	} else if (rf < 1 || rf > ctl_broker_count(c)) {
		snprintf(msg, msgsize, "Unable to replicate the partition %d time(s): The target "
			 "replication factor of %d cannot be reached because only %d broker(s) are "
			 "registered.", (int)rf, (int)rf, (int)ctl_broker_count(c));
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	if (validate_only)
		return KERR_NONE;

	ctl_partition *parts = realloc(t->partitions, (size_t)count * sizeof(*parts));
	if (!parts)
		return KERR_UNKNOWN_SERVER_ERROR;
	t->partitions = parts;
	int32_t i;
	for (i = cur; i < count; i++)
		if (fill_new_partition(c, &parts[i], i, assignments ? &assignments[i - cur] : NULL, rf))
			break;
	if (i == count) {
		t->npartitions = count;
		if (ctl_save(c) == 0)
			return KERR_NONE;
		t->npartitions = cur;
	}
	/* Out of memory or not persisted: forget the new partitions so memory
	 * and disk agree (the array keeps its larger size). */
	for (int32_t k = cur; k < i; k++) {
		free(parts[k].replicas);
		free(parts[k].isr);
	}
	if (i < count)
		return KERR_UNKNOWN_SERVER_ERROR;
	snprintf(msg, msgsize, "The topic's metadata could not be written.");
	return KERR_KAFKA_STORAGE_ERROR;
}
