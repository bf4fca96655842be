/*
 * partitions.c - the registry of the cluster's partitions as this broker
 * knows them, the logs of the replicas here, the flush policy and the
 * offset checkpoints (partitions.h).
 */
#include "broker/partitions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/flush.h"
#include "broker/ratelog.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/fileio.h"

#define RECOVERY_POINT_FILE "recovery-point-offset-checkpoint"
#define HIGH_WATERMARK_FILE "replication-offset-checkpoint"
#define LOG_START_FILE "log-start-offset-checkpoint"

/* How often the flush policy (flush.ms) is checked. */
#define FLUSH_CHECK_MS 1000

/* ---- registry ---- */

static uint32_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static int reindex(brk_partitions *reg)
{
	uint32_t cap = 16;
	while (cap < (uint32_t)reg->ntopics * 2 + 2)
		cap <<= 1;
	int32_t *bn = calloc(cap, sizeof(int32_t)), *bi = calloc(cap, sizeof(int32_t));
	if (!bn || !bi) {
		free(bn);
		free(bi);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < reg->ntopics; i++) {
		const brk_topic *t = reg->topics[i];
		uint32_t h = hash_bytes(t->name, (size_t)t->name_len) & (cap - 1);
		while (bn[h])
			h = (h + 1) & (cap - 1);
		bn[h] = i + 1;
		h = hash_bytes(t->id, 16) & (cap - 1);
		while (bi[h])
			h = (h + 1) & (cap - 1);
		bi[h] = i + 1;
	}
	free(reg->by_name);
	free(reg->by_id);
	reg->by_name = bn;
	reg->by_id = bi;
	reg->index_cap = cap;
	return 0;
}

brk_topic *brk_topic_find(const brk_partitions *reg, const char *name, int32_t len)
{
	if (!reg->by_name || !name || len <= 0 || len > CTL_TOPIC_NAME_MAX)
		return NULL;
	uint32_t h = hash_bytes(name, (size_t)len) & (reg->index_cap - 1);
	while (reg->by_name[h]) {
		brk_topic *t = reg->topics[reg->by_name[h] - 1];
		if (strncmp(t->name, name, (size_t)len) == 0 && t->name[len] == '\0')
			return t;
		h = (h + 1) & (reg->index_cap - 1);
	}
	return NULL;
}

brk_topic *brk_topic_find_by_id(const brk_partitions *reg, const uint8_t id[16])
{
	if (!reg->by_id)
		return NULL;
	uint32_t h = hash_bytes(id, 16) & (reg->index_cap - 1);
	while (reg->by_id[h]) {
		brk_topic *t = reg->topics[reg->by_id[h] - 1];
		if (memcmp(t->id, id, 16) == 0)
			return t;
		h = (h + 1) & (reg->index_cap - 1);
	}
	return NULL;
}

brk_partition *brk_topic_partition(brk_topic *t, int32_t index)
{
	if (!t || index < 0 || index >= t->npartitions)
		return NULL;
	return t->partitions[index];
}

brk_topic *brk_partitions_topic_at(const brk_partitions *reg, int32_t i)
{
	return i >= 0 && i < reg->ntopics ? reg->topics[i] : NULL;
}

int32_t brk_partitions_topic_count(const brk_partitions *reg)
{
	return reg->ntopics;
}

const char *brk_topic_override(const brk_topic *t, const char *name)
{
	for (int32_t i = 0; i < t->nconfigs; i++)
		if (strcmp(t->configs[i].name, name) == 0)
			return t->configs[i].value;
	return NULL;
}

int64_t brk_partitions_partition_count(const brk_partitions *reg)
{
	int64_t n = 0;
	for (int32_t i = 0; i < reg->ntopics; i++)
		n += reg->topics[i]->npartitions;
	return n;
}

static int reg_add(brk_partitions *reg, brk_topic *t)
{
	if (reg->ntopics == reg->cap) {
		int32_t cap = reg->cap ? reg->cap * 2 : 16;
		brk_topic **n = realloc(reg->topics, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		reg->topics = n;
		reg->cap = cap;
	}
	reg->topics[reg->ntopics++] = t;
	int rc = reindex(reg);
	if (rc)
		reg->ntopics--;
	return rc;
}

static void reg_remove(brk_partitions *reg, brk_topic *t)
{
	for (int32_t i = 0; i < reg->ntopics; i++) {
		if (reg->topics[i] == t) {
			memmove(&reg->topics[i], &reg->topics[i + 1],
				(size_t)(reg->ntopics - i - 1) * sizeof(brk_topic *));
			reg->ntopics--;
			break;
		}
	}
	if (reindex(reg)) {
		/* Out of memory: fall back to no index (lookups miss) rather than a
		 * stale one that points at freed topics. */
		free(reg->by_name);
		free(reg->by_id);
		reg->by_name = reg->by_id = NULL;
	}
}

int brk_partitions_observe_roles(brk_partitions *reg, brk_role_fn fn, void *arg)
{
	if (reg->nrole_observers == BRK_MAX_OBSERVERS)
		return -ENOSPC;
	reg->role_observers[reg->nrole_observers].fn = fn;
	reg->role_observers[reg->nrole_observers++].arg = arg;
	return 0;
}

int brk_partitions_observe_markers(brk_partitions *reg, brk_marker_fn fn, void *arg)
{
	if (reg->nmarker_observers == BRK_MAX_OBSERVERS)
		return -ENOSPC;
	reg->marker_observers[reg->nmarker_observers].fn = fn;
	reg->marker_observers[reg->nmarker_observers++].arg = arg;
	return 0;
}

static void tell_role(brk_partitions *reg, brk_partition *p)
{
	for (int i = 0; i < reg->nrole_observers; i++)
		reg->role_observers[i].fn(reg->role_observers[i].arg, p);
}

/* ---- paths ---- */

static int partition_dir(const brk_partitions *reg, const char *topic, int32_t p, char *out,
			 size_t size)
{
	int n = snprintf(out, size, "%s/%s-%d", reg->cfg->log_dir, topic, p);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void file_path(const brk_partitions *reg, const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", reg->cfg->log_dir, name);
}

/* Rename a directory to "<dir>.<hex ms>-stray" (KIP-858's marker for a log
 * that is not ours). Returns 0 or -errno. */
static int set_aside(const char *dir)
{
	char stray[4400 + 32];
	snprintf(stray, sizeof(stray), "%s.%016llx-stray", dir, (unsigned long long)brk_wall_ms());
	return rename(dir, stray) < 0 ? -errno : 0;
}

/* ---- checkpoints ---- */

static int ckpt_cmp(const void *a, const void *b)
{
	const logdir_checkpoint_entry *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);
	if (c)
		return c;
	return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static int64_t ckpt_find(const logdir_checkpoint_entry *e, int n, const char *topic, int32_t p)
{
	if (!e || n <= 0)
		return -1;
	logdir_checkpoint_entry key;
	snprintf(key.topic, sizeof(key.topic), "%s", topic);
	key.partition = p;
	const logdir_checkpoint_entry *hit = bsearch(&key, e, (size_t)n, sizeof(*e), ckpt_cmp);
	return hit ? hit->offset : -1;
}

/* Read one offset checkpoint of the log dir, sorted for ckpt_find. A
 * file that does not parse is reported and treated as empty (*e NULL, *n
 * 0: the logs are then recovered from their start); one that cannot be
 * read (-EMFILE, -EIO, -EACCES, ...) is an error: it must not cost a
 * recovery of every log. Returns 0 or -errno. */
static int ckpt_load(const brk_partitions *reg, const char *name, logdir_checkpoint_entry **e,
		     int *n)
{
	char path[4400];
	file_path(reg, name, path, sizeof(path));
	int rc = logdir_checkpoint_read(path, e, n);
	if (rc == LOG_ERR_CORRUPT) {
		fprintf(stderr, "samsa: ignoring %s: it does not parse\n", path);
		*e = NULL;
		*n = 0;
	} else if (rc < 0) {
		fprintf(stderr, "samsa: cannot read %s: %s\n", path, strerror(-rc));
		return rc;
	}
	if (*e)
		qsort(*e, (size_t)*n, sizeof(**e), ckpt_cmp);
	return 0;
}

static void ckpt_free(brk_partitions *reg)
{
	free(reg->ck_rp);
	free(reg->ck_lso);
	free(reg->ck_hw);
	reg->ck_rp = reg->ck_lso = reg->ck_hw = NULL;
	reg->nck_rp = reg->nck_lso = reg->nck_hw = 0;
}

enum { CK_RP, CK_LSO, CK_HW };

static logdir_checkpoint_entry *collect(const brk_partitions *reg, int which, int *n)
{
	int64_t total = brk_partitions_partition_count(reg);
	logdir_checkpoint_entry *e = calloc((size_t)(total ? total : 1), sizeof(*e));
	if (!e)
		return NULL;
	int k = 0;
	for (int32_t i = 0; i < reg->ntopics; i++) {
		brk_topic *t = reg->topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			log_partition *lp = t->partitions[p]->log;
			if (!lp)
				continue;
			snprintf(e[k].topic, sizeof(e[k].topic), "%s", t->name);
			e[k].partition = p;
			e[k].offset = which == CK_RP ? log_recovery_point(lp)
				    : which == CK_LSO ? log_start_offset(lp)
				    : log_high_watermark(lp);
			k++;
		}
	}
	*n = k;
	return e;
}

static const char *ck_file(int which)
{
	return which == CK_RP ? RECOVERY_POINT_FILE : which == CK_LSO ? LOG_START_FILE : HIGH_WATERMARK_FILE;
}

/* Write one checkpoint, off the loop when async. */
static int write_checkpoint(const brk_partitions *reg, int which, bool async)
{
	char path[4400];
	file_path(reg, ck_file(which), path, sizeof(path));
	int n;
	logdir_checkpoint_entry *e = collect(reg, which, &n);
	if (!e)
		return -ENOMEM;
	if (async)
		return brk_flusher_checkpoint(reg->flusher, path, e, n, NULL, NULL);
	int rc = logdir_checkpoint_write(path, e, n);
	free(e);
	return rc;
}

void brk_partitions_checkpoint(brk_partitions *reg)
{
	if (!reg->started)
		return;
	write_checkpoint(reg, CK_RP, true);
	write_checkpoint(reg, CK_LSO, true);
	write_checkpoint(reg, CK_HW, true);
}

static void on_hw_timer(brk_loop *loop, void *arg)
{
	brk_partitions *reg = arg;
	write_checkpoint(reg, CK_HW, true);
	reg->hw_timer = brk_timer_add(loop, reg->cfg->replica_high_watermark_checkpoint_interval_ms,
				      on_hw_timer, reg);
}

/* log.flush.offset.checkpoint.interval.ms: the recovery points */
static void on_rp_timer(brk_loop *loop, void *arg)
{
	brk_partitions *reg = arg;
	write_checkpoint(reg, CK_RP, true);
	reg->rp_timer = brk_timer_add(loop, reg->cfg->log_flush_offset_checkpoint_interval_ms, on_rp_timer, reg);
}

/* log.flush.start.offset.checkpoint.interval.ms: the log start offsets */
static void on_lso_timer(brk_loop *loop, void *arg)
{
	brk_partitions *reg = arg;
	write_checkpoint(reg, CK_LSO, true);
	reg->lso_timer = brk_timer_add(loop, reg->cfg->log_flush_start_offset_checkpoint_interval_ms,
				       on_lso_timer, reg);
}

/* ---- logs ---- */

/*
 * Open the log of partition p (a replica here) into p->log: an existing
 * directory of the same topic id (or without partition.metadata) is opened,
 * at start-up with the checkpoints and the clean flag; a directory of
 * another topic id is set aside as stray first; else a fresh log is
 * created. On failure p->log_failed is set and the error reported.
 */
static void open_log(brk_partitions *reg, brk_topic *t, brk_partition *p, int64_t now_ms)
{
	char dir[4400];
	int rc = partition_dir(reg, t->name, p->index, dir, sizeof(dir));
	bool fresh = true;
	struct stat st;
	if (!rc && stat(dir, &st) == 0) {
		uint8_t id[16];
		int mrc = logdir_read_partition_metadata(dir, id);
		if (mrc == 0 && memcmp(id, t->id, 16) != 0) {
			fprintf(stderr, "samsa: %s belongs to another topic id: setting it aside\n", dir);
			rc = set_aside(dir);
		} else {
			fresh = false;
		}
	}
	int64_t rp = -1, lso = -1, hw = -1;
	if (!rc && !fresh && !reg->started) {
		rp = ckpt_find(reg->ck_rp, reg->nck_rp, t->name, p->index);
		lso = ckpt_find(reg->ck_lso, reg->nck_lso, t->name, p->index);
		hw = ckpt_find(reg->ck_hw, reg->nck_hw, t->name, p->index);
	}
	bool clean = fresh || (!reg->started && reg->clean_start);
	if (!rc && !reg->started && reg->load.out_of_files) {
		/* the start is given up (brk_partitions_check_loaded): the
		 * others are left alone, unread */
		reg->load.failed++;
		p->log_failed = true;
		return;
	}
	if (!rc)
		rc = log_open_with_files(&reg->files, dir, &t->cfg.log, clean, rp, lso, now_ms, &p->log);
	if (!rc && !reg->started) {
		log_open_stats st;
		log_get_open_stats(p->log, &st);
		reg->load.logs++;
		reg->load.segments += st.segments;
		reg->load.recovered += st.recovered;
		reg->load.rebuilt += st.rebuilt;
	}
	if (rc) {
		fprintf(stderr, "samsa: cannot open log %s: %s\n", dir,
			rc < 0 && rc > -4096 ? strerror(-rc) : "corrupt");
		if (!reg->started) {
			reg->load.failed++;
			if ((rc == -EMFILE || rc == -ENFILE) && !reg->load.out_of_files)
				reg->load.out_of_files = rc;
		}
		p->log = NULL;
		p->log_failed = true;
		if (fresh) {
			/* log_open makes the directory first */
			int r = log_io_remove_dir(dir);
			if (r && r != -ENOENT && r != -ENOTDIR)
				fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-r));
		}
		return;
	}
	p->log_failed = false;
	uint8_t id[16];
	if (logdir_read_partition_metadata(dir, id) != 0) {
		rc = logdir_write_partition_metadata(dir, t->id);
		if (rc) {
			/* a full disk does not keep data offline: the file is
			 * written at the next open that has space */
			fprintf(stderr, "samsa: %s: cannot write partition.metadata: %s\n", dir,
				strerror(-rc));
		}
	}
	if (hw >= 0)
		log_set_high_watermark(p->log, hw);
}

static bool is_replica_here(const brk_partitions *reg, const ctl_partition *cp)
{
	for (int32_t i = 0; i < cp->nreplicas; i++)
		if (cp->replicas[i] == reg->env.broker_id)
			return true;
	return false;
}

/* Close (flushing) or delete p's log. */
static void drop_log(brk_partition *p, bool delete)
{
	if (!p->log)
		return;
	if (delete) {
		char dir[4400];
		snprintf(dir, sizeof(dir), "%s", log_dir(p->log));
		int rc = log_delete(p->log);
		if (rc)
			fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-rc));
	} else {
		log_flush(p->log);
		log_close(p->log);
	}
	p->log = NULL;
}

/*
 * This broker is no longer a replica of p (a reassignment took it away:
 * Kafka's StopReplica with delete=true): it stops leading or following
 * it, its waiters are woken (they answer NOT_LEADER_OR_FOLLOWER), and its
 * log is deleted.
 */
static void stop_replica(brk_partitions *reg, brk_partition *p)
{
	fprintf(stderr, "samsa: %s-%d: this broker is no longer a replica of it: deleting its log\n",
		p->topic->name, (int)p->index);
	p->role = BRK_ROLE_NONE;
	p->led_since_epoch = -1;
	tell_role(reg, p);
	brk_watchlist_notify(&p->hw_waiters, 0);
	brk_watchlist_notify(&p->log_waiters, 0);
	if (p->log) {
		drop_log(p, true);
	} else {
		char dir[4400];
		if (partition_dir(reg, p->topic->name, p->index, dir, sizeof(dir)) == 0) {
			int r = log_io_remove_dir(dir);
			if (r && r != -ENOENT && r != -ENOTDIR)
				fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-r));
		}
	}
	p->log_failed = false;
	p->flushing = false; /* a flush in flight ends on the deleted log (on_flushed) */
}

static void topic_free(brk_topic *t)
{
	if (!t)
		return;
	for (int32_t i = 0; i < t->npartitions; i++) {
		brk_partition_clear(t->partitions[i]);
		free(t->partitions[i]);
	}
	free(t->partitions);
	ctl_configs_free(t->configs, t->nconfigs);
	free(t);
}

/* Grow t to n partitions (new ones empty, no state yet). Returns 0 or
 * -ENOMEM (t unchanged). */
static int grow(brk_topic *t, int32_t n)
{
	if (n <= t->npartitions)
		return 0;
	brk_partition **arr = realloc(t->partitions, (size_t)n * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	t->partitions = arr; /* moves the pointers only, never a partition */
	for (int32_t i = t->npartitions; i < n; i++) {
		brk_partition *p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM; /* t->npartitions counts those made */
		p->topic = t;
		p->index = i;
		p->leader = -1;
		p->leader_epoch = -1;
		p->led_since_epoch = -1;
		arr[i] = p;
		t->npartitions = i + 1;
	}
	return 0;
}

static void apply_config(brk_partitions *reg, brk_topic *t)
{
	brk_topic_config_build(reg->cfg, t->configs, t->nconfigs, &t->cfg);
	for (int32_t i = 0; i < t->npartitions; i++)
		if (t->partitions[i]->log)
			log_set_config(t->partitions[i]->log, &t->cfg.log);
}

void brk_partitions_reconfigure(brk_partitions *reg)
{
	for (int32_t i = 0; i < reg->ntopics; i++)
		apply_config(reg, reg->topics[i]);
}

static void apply_one_state(brk_partitions *reg, brk_partition *p, const ctl_partition *st,
			    int64_t now_ms)
{
	int r = brk_partition_apply_state(p, st, &reg->env, now_ms);
	if (r == BRK_STATE_NEW_EPOCH)
		tell_role(reg, p);
}

int brk_partitions_apply_topic(brk_partitions *reg, ctl_topic *ct, int64_t now_ms)
{
	brk_topic *t = brk_topic_find(reg, ct->name, (int32_t)strlen(ct->name));
	if (t && memcmp(t->id, ct->id, 16) != 0) {
		/* The name now belongs to a new topic: the old one is gone. */
		uint8_t old[16];
		memcpy(old, t->id, 16);
		brk_partitions_remove_topic(reg, ct->name, old);
		t = NULL;
	}
	bool created = false;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			ctl_topic_free(ct);
			return -ENOMEM;
		}
		memcpy(t->name, ct->name, sizeof(t->name));
		t->name_len = (int32_t)strlen(t->name);
		memcpy(t->id, ct->id, 16);
		t->internal = ct->internal;
		created = true;
	}
	/* the overrides: taken from the event */
	ctl_configs_free(t->configs, t->nconfigs);
	t->configs = ct->configs;
	t->nconfigs = ct->nconfigs;
	ct->configs = NULL;
	ct->nconfigs = 0;
	t->replication_factor = ct->replication_factor;
	apply_config(reg, t);
	if (grow(t, ct->npartitions) != 0 || (created && reg_add(reg, t) != 0)) {
		if (created)
			topic_free(t);
		ctl_topic_free(ct);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < ct->npartitions; i++) {
		brk_partition *p = t->partitions[i];
		bool here = is_replica_here(reg, &ct->partitions[i]);
		if (!p->log && !p->log_failed && here)
			open_log(reg, t, p, now_ms);
		else if ((p->log || p->log_failed) && !here)
			stop_replica(reg, p);
		apply_one_state(reg, p, &ct->partitions[i], now_ms);
	}
	ctl_topic_free(ct);
	return 0;
}

void brk_partitions_apply_state(brk_partitions *reg, const uint8_t topic_id[16],
				const ctl_partition *st, int64_t now_ms)
{
	brk_topic *t = brk_topic_find_by_id(reg, topic_id);
	brk_partition *p = brk_topic_partition(t, st->partition);
	if (!p)
		return;
	bool here = is_replica_here(reg, st);
	if (!p->log && !p->log_failed && here)
		open_log(reg, t, p, now_ms);
	else if ((p->log || p->log_failed) && !here)
		stop_replica(reg, p);
	apply_one_state(reg, p, st, now_ms);
}

static bool partition_dir_name(const char *name, int32_t *topic_len, int32_t *index);

/*
 * A topic this broker does not hold is gone (it was deleted while this
 * broker was down or starting, CLUSTER.md 2.9 point 4): remove the
 * partition directories "<name>-<p>" in the log dir whose partition.metadata
 * names topic id id (Kafka's StopReplica with delete=true, sent once the
 * broker is back). A directory of another topic id, or without the file,
 * is not touched.
 */
static void remove_topic_dirs(brk_partitions *reg, const char *name, const uint8_t id[16])
{
	const char *root = reg->cfg->log_dir;
	DIR *d = opendir(root);
	if (!d)
		return;
	size_t nlen = strlen(name);
	struct dirent *de;
	while ((de = readdir(d))) {
		int32_t len, index;
		if (!partition_dir_name(de->d_name, &len, &index) || (size_t)len != nlen ||
		    strncmp(de->d_name, name, nlen) != 0)
			continue;
		char dir[4400];
		uint8_t have[16];
		snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
		if (logdir_read_partition_metadata(dir, have) != 0 || memcmp(have, id, 16) != 0)
			continue;
		fprintf(stderr, "samsa: topic %s was deleted: removing %s\n", name, dir);
		int r = log_io_remove_dir(dir);
		if (r && r != -ENOENT)
			fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-r));
	}
	closedir(d);
}

void brk_partitions_remove_topic(brk_partitions *reg, const char *name, const uint8_t id[16])
{
	brk_topic *t = brk_topic_find(reg, name, (int32_t)strlen(name));
	if (!t || memcmp(t->id, id, 16) != 0) {
		remove_topic_dirs(reg, name, id);
		return;
	}
	/* Out of the registry before anything could look at it. */
	reg_remove(reg, t);
	for (int32_t i = 0; i < t->npartitions; i++) {
		brk_partition *p = t->partitions[i];
		p->role = BRK_ROLE_NONE;
		tell_role(reg, p);
		brk_watchlist_detach_all(&p->hw_waiters);
		brk_watchlist_detach_all(&p->log_waiters);
		drop_log(p, true);
	}
	topic_free(t);
}

void brk_partitions_discard_logs(brk_partitions *reg, const char *name, int32_t from, int32_t to)
{
	for (int32_t i = from; i < to; i++) {
		char dir[4400];
		if (partition_dir(reg, name, i, dir, sizeof(dir)) != 0)
			continue;
		int r = log_io_remove_dir(dir);
		if (r && r != -ENOENT && r != -ENOTDIR) /* not a directory: not ours */
			fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-r));
	}
}

int brk_partitions_prepare_logs(brk_partitions *reg, const char *name, const uint8_t id[16],
				const ctl_config_entry *configs, int32_t nconfigs, int32_t from,
				int32_t to)
{
	brk_topic_config tc;
	brk_topic_config_build(reg->cfg, configs, nconfigs, &tc);
	int64_t now = brk_wall_ms();
	int rc = 0;
	int32_t i;
	for (i = from; i < to && !rc; i++) {
		char dir[4400];
		log_partition *lp = NULL;
		rc = partition_dir(reg, name, i, dir, sizeof(dir));
		if (!rc) {
			rc = log_io_remove_dir(dir); /* a leftover of the same name */
			if (rc == -ENOENT)
				rc = 0;
		}
		if (!rc)
			rc = log_open_with_files(&reg->files, dir, &tc.log, true, -1, -1, now, &lp);
		if (!rc) {
			rc = logdir_write_partition_metadata(dir, id);
			log_close(lp);
		}
		if (rc)
			fprintf(stderr, "samsa: cannot create the log %s: %s\n", dir,
				rc < 0 && rc > -4096 ? strerror(-rc) : "log error");
	}
	if (rc)
		brk_partitions_discard_logs(reg, name, from, i);
	return rc;
}

/* ---- flush ---- */

typedef struct flush_ctx {
	brk_partitions *reg;
	uint8_t topic_id[16];
	int32_t partition;
	log_partition *lp;   /* the log flushed (a replica deleted and made again
			      * meanwhile has another) */
	log_flush_job *job;
} flush_ctx;

static void on_flushed(void *arg, int err)
{
	flush_ctx *c = arg;
	brk_partition *p = brk_topic_partition(brk_topic_find_by_id(c->reg, c->topic_id), c->partition);
	/* On an fsync error log_flush_end leaves the recovery point where it
	 * was, so a restart recovers the unsynced tail (Kafka would take the
	 * log dir offline). A deleted topic's job is just freed (lp NULL). */
	(void)err;
	bool same = p && p->log && p->log == c->lp;
	log_flush_end(same ? p->log : NULL, c->job);
	if (same)
		p->flushing = false;
	free(c);
}

int brk_partition_flush(brk_partitions *reg, brk_partition *p)
{
	if (!p->log || p->flushing)
		return 0;
	flush_ctx *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	int rc = log_flush_begin(p->log, &c->job);
	if (rc) {
		free(c);
		return rc;
	}
	c->reg = reg;
	memcpy(c->topic_id, p->topic->id, 16);
	c->partition = p->index;
	c->lp = p->log;
	p->flushing = true;
	rc = brk_flusher_log(reg->flusher, c->job, on_flushed, c);
	if (rc) {
		/* Not queued: finish it here, on the loop (blocking, rare). */
		log_flush_run(c->job);
		log_flush_end(p->log, c->job);
		p->flushing = false;
		free(c);
	}
	return 0;
}

static void on_flush_timer(brk_loop *loop, void *arg)
{
	brk_partitions *reg = arg;
	int64_t now = brk_wall_ms();
	for (int32_t i = 0; i < reg->ntopics; i++) {
		brk_topic *t = reg->topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			brk_partition *bp = t->partitions[p];
			if (bp->log && !bp->flushing && log_flush_due(bp->log, now))
				brk_partition_flush(reg, bp);
		}
	}
	int64_t every = reg->cfg->log_flush_scheduler_interval_ms;
	if (every <= 0 || every > FLUSH_CHECK_MS)
		every = FLUSH_CHECK_MS;
	reg->flush_timer = brk_timer_add(loop, every, on_flush_timer, reg);
}

void brk_partition_appended(brk_partitions *reg, brk_partition *p, int64_t bytes, int64_t now_ms)
{
	if (!p->log)
		return;
	brk_watchlist_notify(&p->log_waiters, bytes);
	brk_partition_maybe_advance_hw(p, &reg->env, brk_mono_ms());
	if (!p->flushing && log_flush_due(p->log, now_ms))
		brk_partition_flush(reg, p);
}

/* ---- transaction markers ---- */

int16_t brk_partition_write_txn_marker(brk_partitions *reg, brk_partition *p, int64_t producer_id,
				       int16_t producer_epoch, int32_t coordinator_epoch, bool commit,
				       int64_t now_ms)
{
	int16_t err = brk_partition_leader_error(p, -1);
	if (err)
		return err;
	if (producer_id < 0)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (producer_epoch < 0)
		return KERR_INVALID_PRODUCER_EPOCH;
	int64_t offset;
	int rc = log_append_control(p->log, producer_id, producer_epoch, coordinator_epoch, commit,
				    p->leader_epoch, now_ms, &offset);
	switch (rc) {
	case 0:
		break;
	case LOG_ERR_INVALID_PRODUCER_EPOCH:
		return KERR_INVALID_PRODUCER_EPOCH;
	case LOG_ERR_TRANSACTION_COORDINATOR_FENCED:
		return KERR_TRANSACTION_COORDINATOR_FENCED;
	default: {
		static brk_ratelog rl = BRK_RATELOG_INIT;
		brk_ratelog_printf(&rl, "samsa: writing a transaction marker to %s-%d: %s\n",
				   p->topic->name, (int)p->index,
				   rc < 0 && rc > -4096 ? strerror(-rc) : "log error");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	}
	/* The marker moves the high watermark and so, once the transaction
	 * is complete below it, the last stable offset: read_committed
	 * fetches waiting on p re-read up to the new one. */
	brk_partition_appended(reg, p, PROTO_CONTROL_BATCH_SIZE, now_ms);
	for (int i = 0; i < reg->nmarker_observers; i++)
		reg->marker_observers[i].fn(reg->marker_observers[i].arg, p, producer_id, commit);
	return KERR_NONE;
}

/* ---- stray partition directories ---- */

/* Kafka's legal topic name characters: ASCII letters, digits, '.', '_', '-'. */
static bool topic_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* True when name has the form of a partition directory, <topic>-<index>
 * (a legal topic name, then the index in plain decimal as partition_dir
 * writes it). *topic_len gets the length of the topic part. */
static bool partition_dir_name(const char *name, int32_t *topic_len, int32_t *index)
{
	const char *dash = strrchr(name, '-');
	if (!dash || dash == name || dash - name > CTL_TOPIC_NAME_MAX || !dash[1])
		return false;
	for (const char *c = name; c < dash; c++)
		if (!topic_char(*c))
			return false;
	const char *d = dash + 1;
	if (d[0] == '0' && d[1])
		return false;
	int64_t v = 0;
	for (; *d; d++) {
		if (*d < '0' || *d > '9')
			return false;
		v = v * 10 + (*d - '0');
		if (v > INT32_MAX)
			return false;
	}
	*topic_len = (int32_t)(dash - name);
	*index = (int32_t)v;
	return true;
}

/*
 * Set aside the partition directories in the log dir that belong to no
 * replica here (a topic whose creation was cut short by a crash, an index
 * past its partition count, a topic deleted while this broker was down, a
 * replica moved away): each is renamed to "<dir>.<id>-stray", as Kafka
 * marks stray logs (KIP-858), so it no longer looks like a partition yet
 * nothing is deleted on a guess: if the metadata was lost, the data is
 * still there for an operator. Anything that does not look like a
 * partition directory stays as it is (files, other directories, Kafka's
 * "<topic>-<p>.<id>-delete/-future/-stray" names, and
 * __cluster_metadata-0, KRaft's metadata log).
 */
static void set_aside_stray_dirs(brk_partitions *reg)
{
	const char *root = reg->cfg->log_dir;
	DIR *d = opendir(root);
	if (!d) {
		fprintf(stderr, "samsa: cannot list %s to find stray partition directories: %s\n",
			root, strerror(errno));
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		int32_t len, index;
		if (!partition_dir_name(de->d_name, &len, &index) ||
		    strcmp(de->d_name, "__cluster_metadata-0") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		brk_topic *t = brk_topic_find(reg, de->d_name, len);
		brk_partition *p = brk_topic_partition(t, index);
		if (p && (p->log || p->log_failed))
			continue;
		char stray[NAME_MAX + 64];
		snprintf(stray, sizeof(stray), "%s.%016llx-stray", de->d_name,
			 (unsigned long long)brk_wall_ms());
		if (p)
			fprintf(stderr, "samsa: setting aside %s/%s as %s: this broker holds no replica "
				"of it\n", root, de->d_name, stray);
		else if (t)
			fprintf(stderr,
				"samsa: setting aside %s/%s as %s: topic %s has %d partitions, this "
				"directory is not one of them\n",
				root, de->d_name, stray, t->name, (int)t->npartitions);
		else
			fprintf(stderr, "samsa: setting aside %s/%s as %s: its topic %.*s does not exist\n",
				root, de->d_name, stray, (int)len, de->d_name);
		if (renameat(dirfd(d), de->d_name, dirfd(d), stray) < 0)
			fprintf(stderr, "samsa: cannot rename %s/%s: %s\n", root, de->d_name,
				strerror(errno));
	}
	closedir(d);
}

/* ---- life cycle ---- */

int brk_partitions_init(brk_partitions *reg, brk_loop *loop, brk_flusher *flusher,
			const brk_config *cfg, const brk_replica_env *env, bool clean)
{
	memset(reg, 0, sizeof(*reg));
	reg->loop = loop;
	reg->flusher = flusher;
	reg->cfg = cfg;
	reg->env = *env;
	reg->clean_start = clean;
	log_fcache_init(&reg->files, brk_partitions_files_capacity(cfg, true));
	reg->load.began_ms = brk_mono_ms();
	int rc = reindex(reg);
	if (rc)
		return rc;
	rc = ckpt_load(reg, RECOVERY_POINT_FILE, &reg->ck_rp, &reg->nck_rp);
	if (rc == 0)
		rc = ckpt_load(reg, LOG_START_FILE, &reg->ck_lso, &reg->nck_lso);
	if (rc == 0)
		rc = ckpt_load(reg, HIGH_WATERMARK_FILE, &reg->ck_hw, &reg->nck_hw);
	if (rc == 0)
		rc = brk_flusher_start(reg->flusher, loop);
	if (rc) {
		ckpt_free(reg);
		free(reg->by_name);
		free(reg->by_id);
		reg->by_name = reg->by_id = NULL;
	}
	return rc;
}

int brk_partitions_check_loaded(const brk_partitions *reg)
{
	if (!reg->load.out_of_files)
		return 0;
	struct rlimit rl;
	char limit[64] = "unknown";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		snprintf(limit, sizeof(limit), "%llu", (unsigned long long)rl.rlim_cur);
	if (reg->load.out_of_files == -ENFILE)
		fprintf(stderr, "samsa: %d of %d partition logs could not be opened: the system's open "
			"file table is full (fs.file-max); not starting\n",
			(int)reg->load.failed, (int)(reg->load.failed + reg->load.logs));
	else
		fprintf(stderr, "samsa: %d of %d partition logs could not be opened: too many open files "
			"for this process's limit (RLIMIT_NOFILE %s); not starting. Raise the open file "
			"limit (ulimit -n) and start again.\n",
			(int)reg->load.failed, (int)(reg->load.failed + reg->load.logs), limit);
	return reg->load.out_of_files;
}

void brk_partitions_started(brk_partitions *reg)
{
	fprintf(stderr, "samsa: loaded %d partition logs (%lld segments) in %lld ms after %s shutdown: "
		"%lld segments recovered from the recovery point, %lld with indexes rebuilt%s\n",
		(int)reg->load.logs, (long long)reg->load.segments,
		(long long)(brk_mono_ms() - reg->load.began_ms), reg->clean_start ? "a clean" : "an unclean",
		(long long)reg->load.recovered, (long long)reg->load.rebuilt,
		reg->load.failed ? ", some logs could not be opened" : "");
	set_aside_stray_dirs(reg);
	ckpt_free(reg);
	reg->started = true;
	/* The recovery points found by log_open are what a crash now would
	 * need: write them before any new append. */
	write_checkpoint(reg, CK_RP, true);
	write_checkpoint(reg, CK_LSO, true);
	write_checkpoint(reg, CK_HW, true);
	reg->hw_timer = brk_timer_add(reg->loop, reg->cfg->replica_high_watermark_checkpoint_interval_ms,
				      on_hw_timer, reg);
	/* 0: written only here and at shutdown (Kafka schedules such a
	 * task once) */
	if (reg->cfg->log_flush_offset_checkpoint_interval_ms > 0)
		reg->rp_timer = brk_timer_add(reg->loop, reg->cfg->log_flush_offset_checkpoint_interval_ms,
					      on_rp_timer, reg);
	if (reg->cfg->log_flush_start_offset_checkpoint_interval_ms > 0)
		reg->lso_timer = brk_timer_add(reg->loop,
					       reg->cfg->log_flush_start_offset_checkpoint_interval_ms,
					       on_lso_timer, reg);
	reg->flush_timer = brk_timer_add(reg->loop, FLUSH_CHECK_MS, on_flush_timer, reg);
}

/*
 * The shutdown's flush: every log gets what a clean close writes
 * (log_prepare_close) and one flush job, handed at once to a pool of
 * num.recovery.threads.per.data.dir threads (Kafka's LogManager shutdown),
 * so its fsyncs overlap the preparing of the next logs. A log nothing was
 * written to since its last flush costs no fsync, so the time goes with
 * what is unflushed, not with the number of partitions. Returns 0 or the
 * first -errno.
 */
static int flush_for_close(brk_partitions *reg)
{
	int64_t began = brk_mono_ms();
	size_t nlogs = 0, k = 0;
	for (int32_t i = 0; i < reg->ntopics; i++)
		for (int32_t p = 0; p < reg->topics[i]->npartitions; p++)
			nlogs += reg->topics[i]->partitions[p]->log != NULL;
	int threads = reg->cfg->num_recovery_threads_per_data_dir;
	log_partition **lps = calloc(nlogs ? nlogs : 1, sizeof(*lps));
	log_flush_job **jobs = calloc(nlogs ? nlogs : 1, sizeof(*jobs));
	brk_flush_pool *pool = lps && jobs ? brk_flush_pool_start(threads, nlogs) : NULL;
	int rc = 0;
	for (int32_t i = 0; i < reg->ntopics; i++) {
		brk_topic *t = reg->topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			log_partition *lp = t->partitions[p]->log;
			if (!lp)
				continue;
			log_prepare_close(lp);
			log_flush_job *j;
			int r = pool ? log_flush_begin(lp, &j) : log_flush(lp);
			if (r == 0 && pool) {
				if (log_flush_job_empty(j) || brk_flush_pool_add(pool, j) != 0) {
					log_flush_run(j);
					r = log_flush_end(lp, j);
				} else {
					lps[k] = lp;
					jobs[k++] = j;
				}
			}
			if (r && !rc)
				rc = r;
		}
	}
	int64_t prepared = brk_mono_ms();
	if (pool)
		brk_flush_pool_finish(pool);
	for (size_t i = 0; i < k; i++) {
		int r = log_flush_end(lps[i], jobs[i]);
		if (r && !rc)
			rc = r;
	}
	free(lps);
	free(jobs);
	fprintf(stderr, "samsa: shutdown: %zu of %zu partition logs had data to flush, in %lld ms (%lld ms "
		"more for the fsyncs after the last log was prepared; num.recovery.threads.per.data.dir %d)\n",
		k, nlogs, (long long)(brk_mono_ms() - began), (long long)(brk_mono_ms() - prepared), threads);
	return rc;
}

int brk_partitions_shutdown(brk_partitions *reg)
{
	int rc = 0;
	if (reg->started) {
		brk_timer_cancel(reg->loop, reg->hw_timer);
		if (reg->rp_timer)
			brk_timer_cancel(reg->loop, reg->rp_timer);
		if (reg->lso_timer)
			brk_timer_cancel(reg->loop, reg->lso_timer);
		brk_timer_cancel(reg->loop, reg->flush_timer);
	}
	brk_flusher_stop(reg->flusher); /* runs pending completions */
	for (int32_t i = 0; i < reg->ntopics; i++) {
		brk_topic *t = reg->topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			brk_watchlist_detach_all(&t->partitions[p]->hw_waiters);
			brk_watchlist_detach_all(&t->partitions[p]->log_waiters);
		}
	}
	rc = flush_for_close(reg);
	if (reg->started) {
		for (int which = CK_RP; which <= CK_HW; which++) {
			int r = write_checkpoint(reg, which, false);
			if (r && !rc)
				rc = r;
		}
	}
	/* nothing is left to write: the closes only free */
	for (int32_t i = 0; i < reg->ntopics; i++) {
		brk_topic *t = reg->topics[i];
		for (int32_t p = 0; p < t->npartitions; p++)
			if (t->partitions[p]->log)
				log_close(t->partitions[p]->log);
		topic_free(t);
	}
	log_fcache_destroy(&reg->files);
	ckpt_free(reg);
	free(reg->topics);
	free(reg->by_name);
	free(reg->by_id);
	memset(reg, 0, sizeof(*reg));
	return rc;
}

/* Descriptors the process keeps for itself: the listeners, the event loop
 * and its eventfds and timers, the log dir lock, the ZooKeeper session,
 * checkpoint files and index files being written, the flusher's and
 * cleaner's one file at a time. */
#define FD_RESERVE 64

int64_t brk_partitions_files_capacity(const brk_config *cfg, bool report)
{
	struct rlimit rl;
	int64_t limit = getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
				rl.rlim_cur > INT32_MAX
			? INT32_MAX
			: (int64_t)rl.rlim_cur;
	int64_t avail = limit > FD_RESERVE + 2 ? limit - FD_RESERVE : 2;
	int64_t conns = cfg->max_connections < avail / 2 ? cfg->max_connections : avail / 2;
	int64_t derived = avail - conns;
	int64_t cap = cfg->log_max_open_files;
	if (cap < 0) {
		cap = derived;
	} else if (cap > avail) {
		if (report)
			fprintf(stderr,
				"samsa: warning: log.max.open.files=%" PRId64 " does not fit the open file "
				"limit of %" PRId64 " (%d kept for the process); using %" PRId64 "\n",
				cap, limit, FD_RESERVE, derived);
		cap = derived;
	}
	if (report)
		fprintf(stderr,
			"samsa: segment files hold at most %" PRId64 " descriptors (log.max.open.files=%" PRId32
			", open file limit %" PRId64 ")\n",
			cap, cfg->log_max_open_files, limit);
	return cap;
}
