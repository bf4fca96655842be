/*
 * partitions.c - the registry of this broker's partition logs, their
 * creation and deletion, the flush policy and the offset checkpoints.
 */
#include "broker/partitions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/flush.h"
#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/ratelog.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/fileio.h"
#include "storage/logdir.h"

#define RECOVERY_POINT_FILE "recovery-point-offset-checkpoint"
#define HIGH_WATERMARK_FILE "replication-offset-checkpoint"
#define LOG_START_FILE "log-start-offset-checkpoint"

/* replica.high.watermark.checkpoint.interval.ms (5000),
 * log.flush.offset.checkpoint.interval.ms and
 * log.flush.start.offset.checkpoint.interval.ms (60000). */
#define HW_CHECKPOINT_MS 5000
#define OFFSET_CHECKPOINT_MS 60000
/* How often the flush policy (flush.ms) is checked. */
#define FLUSH_CHECK_MS 1000

static struct {
	brk_topic **topics;
	int32_t ntopics, cap;
	int32_t *by_name; /* open addressing: topic index + 1, 0 = empty */
	int32_t *by_id;
	uint32_t index_cap;
	uint64_t hw_timer, offsets_timer, flush_timer;
	bool open;
} reg;

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

static int reindex(void)
{
	uint32_t cap = 16;
	while (cap < (uint32_t)reg.ntopics * 2 + 2)
		cap <<= 1;
	int32_t *bn = calloc(cap, sizeof(int32_t)), *bi = calloc(cap, sizeof(int32_t));
	if (!bn || !bi) {
		free(bn);
		free(bi);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < reg.ntopics; i++) {
		const ctl_topic *m = reg.topics[i]->meta;
		uint32_t h = hash_bytes(m->name, strlen(m->name)) & (cap - 1);
		while (bn[h])
			h = (h + 1) & (cap - 1);
		bn[h] = i + 1;
		h = hash_bytes(m->id, 16) & (cap - 1);
		while (bi[h])
			h = (h + 1) & (cap - 1);
		bi[h] = i + 1;
	}
	free(reg.by_name);
	free(reg.by_id);
	reg.by_name = bn;
	reg.by_id = bi;
	reg.index_cap = cap;
	return 0;
}

brk_topic *brk_topic_find(const char *name, int32_t len)
{
	if (!reg.by_name || !name || len <= 0 || len > CTL_TOPIC_NAME_MAX)
		return NULL;
	uint32_t h = hash_bytes(name, (size_t)len) & (reg.index_cap - 1);
	while (reg.by_name[h]) {
		brk_topic *t = reg.topics[reg.by_name[h] - 1];
		if (strncmp(t->meta->name, name, (size_t)len) == 0 && t->meta->name[len] == '\0')
			return t;
		h = (h + 1) & (reg.index_cap - 1);
	}
	return NULL;
}

brk_topic *brk_topic_find_by_id(const uint8_t id[16])
{
	if (!reg.by_id)
		return NULL;
	uint32_t h = hash_bytes(id, 16) & (reg.index_cap - 1);
	while (reg.by_id[h]) {
		brk_topic *t = reg.topics[reg.by_id[h] - 1];
		if (memcmp(t->meta->id, id, 16) == 0)
			return t;
		h = (h + 1) & (reg.index_cap - 1);
	}
	return NULL;
}

brk_partition *brk_topic_partition(brk_topic *t, int32_t index)
{
	if (!t || index < 0 || index >= t->npartitions)
		return NULL;
	return t->partitions[index];
}

int32_t brk_partition_leader_epoch(const brk_partition *p)
{
	const ctl_topic *m = p->topic->meta;
	return p->index < m->npartitions ? m->partitions[p->index].leader_epoch : 0;
}

int16_t brk_partition_check_epoch(const brk_partition *p, int32_t current_leader_epoch)
{
	if (current_leader_epoch < 0)
		return KERR_NONE;
	int32_t epoch = brk_partition_leader_epoch(p);
	if (current_leader_epoch == epoch)
		return KERR_NONE;
	return current_leader_epoch < epoch ? KERR_FENCED_LEADER_EPOCH : KERR_UNKNOWN_LEADER_EPOCH;
}

static int reg_add(brk_topic *t)
{
	if (reg.ntopics == reg.cap) {
		int32_t cap = reg.cap ? reg.cap * 2 : 16;
		brk_topic **n = realloc(reg.topics, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		reg.topics = n;
		reg.cap = cap;
	}
	reg.topics[reg.ntopics++] = t;
	int rc = reindex();
	if (rc)
		reg.ntopics--;
	return rc;
}

static void reg_remove(brk_topic *t)
{
	for (int32_t i = 0; i < reg.ntopics; i++) {
		if (reg.topics[i] == t) {
			memmove(&reg.topics[i], &reg.topics[i + 1],
				(size_t)(reg.ntopics - i - 1) * sizeof(brk_topic *));
			reg.ntopics--;
			break;
		}
	}
	if (reindex()) {
		/* Out of memory: fall back to no index (lookups miss) rather than a
		 * stale one that points at freed topics. */
		free(reg.by_name);
		free(reg.by_id);
		reg.by_name = reg.by_id = NULL;
	}
}

/* ---- paths ---- */

static int partition_dir(const char *topic, int32_t p, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/%s-%d", server.cfg.log_dir, topic, p);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void file_path(const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", server.cfg.log_dir, name);
}

/* Remove a flat partition directory left over from a deleted topic; a
 * directory that is not there is already removed. */
static int remove_dir(const char *dir)
{
	int rc = log_io_remove_dir(dir);
	return rc == -ENOENT ? 0 : rc;
}

/* ---- open/close ---- */

/* Free a topic and its partitions (their logs already closed or deleted). */
static void topic_free(brk_topic *t)
{
	if (!t)
		return;
	for (int32_t p = 0; p < t->npartitions; p++)
		free(t->partitions[p]);
	free(t->partitions);
	free(t);
}

/* Remove the log of a partition that was just created and never served
 * (its directory and files, without flushing them first), and free it. */
static void partition_discard(brk_partition *bp)
{
	if (bp && bp->log) {
		char dir[4400];
		snprintf(dir, sizeof(dir), "%s", log_dir(bp->log));
		int rc = log_delete(bp->log);
		bp->log = NULL;
		if (rc)
			fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-rc));
	}
	free(bp);
}

/* partition_discard of every partition of a topic just created, then free
 * the topic. */
static void topic_discard(brk_topic *t)
{
	for (int32_t p = 0; p < t->npartitions; p++) {
		partition_discard(t->partitions[p]);
		t->partitions[p] = NULL;
	}
	topic_free(t);
}

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

typedef struct ckpts {
	logdir_checkpoint_entry *rp, *lso, *hw;
	int nrp, nlso, nhw;
} ckpts;

/* Read one offset checkpoint of the log dir, sorted for ckpt_find; an
 * unreadable file is reported and treated as empty (*e NULL, *n 0). */
static void ckpt_load(const char *name, logdir_checkpoint_entry **e, int *n)
{
	char path[4400];
	file_path(name, path, sizeof(path));
	if (logdir_checkpoint_read(path, e, n) != 0) {
		fprintf(stderr, "samsa: ignoring unreadable %s\n", path);
		*e = NULL;
		*n = 0;
	}
	if (*e)
		qsort(*e, (size_t)*n, sizeof(**e), ckpt_cmp);
}

/*
 * Open partition i of topic t (t->meta) into *out, allocated here. With
 * fresh, a leftover directory of the same name is removed first (a new
 * partition). Returns 0, with (*out)->log NULL when the directory belongs to
 * another topic id (the partition is offline, as Kafka's
 * InconsistentTopicIdException), or -errno: then nothing is allocated and,
 * with fresh, nothing of the partition stays on disk.
 */
static int partition_open(brk_topic *t, int32_t i, bool clean, bool fresh, const ckpts *ck,
			  int64_t now, brk_partition **out)
{
	const ctl_topic *m = t->meta;
	*out = NULL;
	brk_partition *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->topic = t;
	p->index = i;
	char dir[4400];
	int rc = partition_dir(m->name, i, dir, sizeof(dir));
	if (!rc && fresh)
		rc = remove_dir(dir);
	if (rc) {
		free(p);
		return rc;
	}
	int64_t rp = ck ? ckpt_find(ck->rp, ck->nrp, m->name, i) : -1;
	int64_t lso = ck ? ckpt_find(ck->lso, ck->nlso, m->name, i) : -1;
	int64_t hw = ck ? ckpt_find(ck->hw, ck->nhw, m->name, i) : -1;
	rc = log_open(dir, &t->cfg.log, clean || fresh, rp, lso, now, &p->log);
	if (rc) {
		fprintf(stderr, "samsa: cannot open log %s: %s\n", dir,
			rc < 0 && rc > -4096 ? strerror(-rc) : "corrupt");
		free(p);
		if (fresh) {
			/* log_open makes the directory first. */
			int r = remove_dir(dir);
			if (r && r != -ENOTDIR) /* not a directory: not ours */
				fprintf(stderr, "samsa: cannot remove %s: %s\n", dir, strerror(-r));
		}
		return rc;
	}
	uint8_t id[16];
	int mrc = logdir_read_partition_metadata(dir, id);
	if (mrc == 0 && memcmp(id, m->id, 16) != 0) {
		/* Kafka: InconsistentTopicIdException, the log stays offline. */
		fprintf(stderr, "samsa: %s belongs to another topic id; partition offline\n", dir);
		log_close(p->log);
		p->log = NULL;
		*out = p;
		return 0;
	}
	if (mrc != 0) {
		rc = logdir_write_partition_metadata(dir, m->id);
		if (rc && !fresh && log_io_full(rc)) {
			/* a full disk does not keep existing data offline: the
			 * file is written at the next start that has space */
			fprintf(stderr, "samsa: %s: no space to write partition.metadata\n", dir);
			rc = 0;
		}
		if (rc) {
			if (fresh) {
				partition_discard(p);
			} else {
				log_close(p->log);
				free(p);
			}
			return rc;
		}
	}
	if (hw >= 0)
		log_set_high_watermark(p->log, hw);
	/* One node: the ISR is this broker alone, every appended
	 * record is replicated to the whole ISR. */
	log_set_high_watermark(p->log, log_end_offset(p->log));
	*out = p;
	return 0;
}

/*
 * Open the logs of topic m. With fresh, leftover directories are removed
 * first (a new topic). Returns 0 or -errno; *out gets the topic. On error
 * nothing is left open, and with fresh nothing of the topic on disk.
 */
static int topic_open(const ctl_topic *m, bool clean, bool fresh, const ckpts *ck,
		      brk_topic **out)
{
	*out = NULL;
	brk_topic *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->meta = m;
	brk_topic_config_build(&server.cfg, m->configs, m->nconfigs, &t->cfg);
	t->partitions = calloc((size_t)(m->npartitions > 0 ? m->npartitions : 1),
			       sizeof(*t->partitions));
	if (!t->partitions) {
		free(t);
		return -ENOMEM;
	}
	int64_t now = brk_wall_ms();
	int rc = 0;
	/* t->npartitions counts the partitions opened so far. */
	for (int32_t i = 0; i < m->npartitions; i++) {
		rc = partition_open(t, i, clean, fresh, ck, now, &t->partitions[i]);
		if (rc)
			break;
		t->npartitions = i + 1;
	}
	if (rc) {
		if (fresh) {
			topic_discard(t);
		} else {
			for (int32_t k = 0; k < t->npartitions; k++)
				if (t->partitions[k]->log)
					log_close(t->partitions[k]->log);
			topic_free(t);
		}
		return rc;
	}
	*out = t;
	return 0;
}

/* ---- checkpoints ---- */

enum { CK_RP, CK_LSO, CK_HW };

static logdir_checkpoint_entry *collect(int which, int *n)
{
	int total = 0;
	for (int32_t i = 0; i < reg.ntopics; i++)
		total += reg.topics[i]->npartitions;
	logdir_checkpoint_entry *e = calloc((size_t)(total ? total : 1), sizeof(*e));
	if (!e)
		return NULL;
	int k = 0;
	for (int32_t i = 0; i < reg.ntopics; i++) {
		brk_topic *t = reg.topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			log_partition *lp = t->partitions[p]->log;
			if (!lp)
				continue;
			snprintf(e[k].topic, sizeof(e[k].topic), "%s", t->meta->name);
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
static int write_checkpoint(int which, bool async)
{
	char path[4400];
	file_path(ck_file(which), path, sizeof(path));
	int n;
	logdir_checkpoint_entry *e = collect(which, &n);
	if (!e)
		return -ENOMEM;
	if (async)
		return brk_flush_checkpoint(path, e, n, NULL, NULL);
	int rc = logdir_checkpoint_write(path, e, n);
	free(e);
	return rc;
}

static void on_hw_timer(brk_loop *loop, void *arg)
{
	(void)arg;
	write_checkpoint(CK_HW, true);
	reg.hw_timer = brk_timer_add(loop, HW_CHECKPOINT_MS, on_hw_timer, NULL);
}

static void on_offsets_timer(brk_loop *loop, void *arg)
{
	(void)arg;
	write_checkpoint(CK_RP, true);
	write_checkpoint(CK_LSO, true);
	reg.offsets_timer = brk_timer_add(loop, OFFSET_CHECKPOINT_MS, on_offsets_timer, NULL);
}

/* ---- flush ---- */

typedef struct flush_ctx {
	uint8_t topic_id[16];
	int32_t partition;
	log_flush_job *job;
} flush_ctx;

static void on_flushed(void *arg, int err)
{
	flush_ctx *c = arg;
	brk_partition *p = brk_topic_partition(brk_topic_find_by_id(c->topic_id), c->partition);
	/* On an fsync error log_flush_end leaves the recovery point where it
	 * was, so a restart recovers the unsynced tail (Kafka would take the
	 * log dir offline). A deleted topic's job is just freed (lp NULL). */
	(void)err;
	log_flush_end(p ? p->log : NULL, c->job);
	if (p)
		p->flushing = false;
	free(c);
}

int brk_partition_flush(brk_partition *p)
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
	memcpy(c->topic_id, p->topic->meta->id, 16);
	c->partition = p->index;
	p->flushing = true;
	rc = brk_flush_log(c->job, on_flushed, c);
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
	(void)arg;
	int64_t now = brk_wall_ms();
	for (int32_t i = 0; i < reg.ntopics; i++) {
		brk_topic *t = reg.topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			brk_partition *bp = t->partitions[p];
			if (bp->log && !bp->flushing && log_flush_due(bp->log, now))
				brk_partition_flush(bp);
		}
	}
	int64_t every = server.cfg.log_flush_scheduler_interval_ms;
	if (every <= 0 || every > FLUSH_CHECK_MS)
		every = FLUSH_CHECK_MS;
	reg.flush_timer = brk_timer_add(loop, every, on_flush_timer, NULL);
}

void brk_partition_appended(brk_partition *p, int64_t bytes, int64_t now_ms)
{
	if (!p->log)
		return;
	log_set_high_watermark(p->log, log_end_offset(p->log));
	brk_watchlist_notify(&p->waiters, bytes);
	if (!p->flushing && log_flush_due(p->log, now_ms))
		brk_partition_flush(p);
}

/* ---- transaction markers ---- */

int16_t brk_partition_write_txn_marker(brk_partition *p, int64_t producer_id, int16_t producer_epoch,
				       int32_t coordinator_epoch, bool commit, int64_t now_ms)
{
	if (!p->log)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	if (producer_id < 0)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (producer_epoch < 0)
		return KERR_INVALID_PRODUCER_EPOCH;
	int64_t offset;
	int rc = log_append_control(p->log, producer_id, producer_epoch, coordinator_epoch, commit,
				    brk_partition_leader_epoch(p), now_ms, &offset);
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
				   p->topic->meta->name, (int)p->index,
				   rc < 0 && rc > -4096 ? strerror(-rc) : "log error");
		return KERR_KAFKA_STORAGE_ERROR;
	}
	}
	/* The marker moves the high watermark and so, once the transaction
	 * is complete below it, the last stable offset: read_committed
	 * fetches waiting on p re-read up to the new one. */
	brk_partition_appended(p, PROTO_CONTROL_BATCH_SIZE, now_ms);
	if (strcmp(p->topic->meta->name, GRP_OFFSETS_TOPIC) == 0)
		grp_txn_completed(p->index, producer_id, commit);
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
 * partition of a topic in the metadata (a topic whose creation was cut short
 * by a crash, or an index past its partition count): each is renamed to
 * "<dir>.<id>-stray", as Kafka marks stray logs (KIP-858), so it no longer
 * looks like a partition yet nothing is deleted on a guess: if the metadata
 * file was lost, the data is still there for an operator. Deleted topics do
 * not leave directories (DeleteTopics removes them). Anything that does not
 * look like a partition directory stays as it is (files, other directories,
 * Kafka's "<topic>-<p>.<id>-delete/-future/-stray" names, and
 * __cluster_metadata-0, KRaft's metadata log). Called with the registry
 * filled; a directory that cannot be renamed is reported and left.
 */
static void set_aside_stray_dirs(void)
{
	DIR *d = opendir(server.cfg.log_dir);
	if (!d) {
		fprintf(stderr, "samsa: cannot list %s to find stray partition directories: %s\n",
			server.cfg.log_dir, strerror(errno));
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
		brk_topic *t = brk_topic_find(de->d_name, len);
		if (t && index < t->npartitions)
			continue;
		char stray[NAME_MAX + 64];
		snprintf(stray, sizeof(stray), "%s.%016llx-stray", de->d_name,
			 (unsigned long long)brk_wall_ms());
		if (t)
			fprintf(stderr,
				"samsa: setting aside %s/%s as %s: topic %s has %d partitions, this "
				"directory is not one of them\n",
				server.cfg.log_dir, de->d_name, stray, t->meta->name, (int)t->npartitions);
		else
			fprintf(stderr, "samsa: setting aside %s/%s as %s: its topic %.*s does not exist\n",
				server.cfg.log_dir, de->d_name, stray, (int)len, de->d_name);
		if (renameat(dirfd(d), de->d_name, dirfd(d), stray) < 0)
			fprintf(stderr, "samsa: cannot rename %s/%s: %s\n", server.cfg.log_dir,
				de->d_name, strerror(errno));
	}
	closedir(d);
}

/* ---- public ---- */

int brk_partitions_open(bool clean)
{
	ckpts ck = { 0 };
	int rc;
	ckpt_load(RECOVERY_POINT_FILE, &ck.rp, &ck.nrp);
	ckpt_load(LOG_START_FILE, &ck.lso, &ck.nlso);
	ckpt_load(HIGH_WATERMARK_FILE, &ck.hw, &ck.nhw);

	rc = reindex();
	for (int32_t i = 0; !rc && i < ctl_topic_count(server.ctl); i++) {
		brk_topic *t;
		rc = topic_open(ctl_topic_at(server.ctl, i), clean, false, &ck, &t);
		if (!rc && (rc = reg_add(t)) != 0) {
			for (int32_t p = 0; p < t->npartitions; p++)
				if (t->partitions[p]->log)
					log_close(t->partitions[p]->log);
			topic_free(t);
		}
	}
	free(ck.rp);
	free(ck.lso);
	free(ck.hw);
	if (!rc)
		set_aside_stray_dirs();
	if (!rc)
		rc = brk_flush_start();
	if (rc) {
		brk_partitions_shutdown();
		return rc;
	}
	reg.open = true;
	/* The recovery points found by log_open are what a crash now would
	 * need: write them before any new append. */
	write_checkpoint(CK_RP, true);
	write_checkpoint(CK_LSO, true);
	write_checkpoint(CK_HW, true);
	reg.hw_timer = brk_timer_add(server.loop, HW_CHECKPOINT_MS, on_hw_timer, NULL);
	reg.offsets_timer = brk_timer_add(server.loop, OFFSET_CHECKPOINT_MS, on_offsets_timer, NULL);
	reg.flush_timer = brk_timer_add(server.loop, FLUSH_CHECK_MS, on_flush_timer, NULL);
	return 0;
}

int brk_partitions_shutdown(void)
{
	int rc = 0;
	if (reg.open) {
		brk_timer_cancel(server.loop, reg.hw_timer);
		brk_timer_cancel(server.loop, reg.offsets_timer);
		brk_timer_cancel(server.loop, reg.flush_timer);
	}
	brk_flush_stop(); /* runs pending completions */
	for (int32_t i = 0; i < reg.ntopics; i++) {
		brk_topic *t = reg.topics[i];
		for (int32_t p = 0; p < t->npartitions; p++) {
			brk_partition *bp = t->partitions[p];
			brk_watchlist_detach_all(&bp->waiters);
			if (bp->log) {
				int r = log_flush(bp->log);
				if (r && !rc)
					rc = r;
			}
		}
	}
	if (reg.open) {
		for (int which = CK_RP; which <= CK_HW; which++) {
			int r = write_checkpoint(which, false);
			if (r && !rc)
				rc = r;
		}
	}
	for (int32_t i = 0; i < reg.ntopics; i++) {
		brk_topic *t = reg.topics[i];
		for (int32_t p = 0; p < t->npartitions; p++)
			if (t->partitions[p]->log)
				log_close(t->partitions[p]->log);
		topic_free(t);
	}
	free(reg.topics);
	free(reg.by_name);
	free(reg.by_id);
	memset(&reg, 0, sizeof(reg));
	return rc;
}

int brk_partitions_create_topic(const ctl_topic *m)
{
	brk_topic *t;
	int rc = topic_open(m, true, true, NULL, &t);
	if (rc)
		return rc;
	rc = reg_add(t);
	if (rc)
		topic_discard(t);
	return rc;
}

int brk_partitions_delete_topic(const char *name)
{
	brk_topic *t = brk_topic_find(name, (int32_t)strlen(name));
	int err = ctl_delete_topic(server.ctl, name);
	if (err)
		return err;
	if (!t)
		return KERR_NONE;
	/* t->meta is freed now: drop it from the registry before anything
	 * could look at it, then remove the data. */
	reg_remove(t);
	for (int32_t p = 0; p < t->npartitions; p++) {
		brk_partition *bp = t->partitions[p];
		brk_watchlist_detach_all(&bp->waiters);
		if (bp->log) {
			int rc = log_delete(bp->log);
			if (rc)
				fprintf(stderr, "samsa: deleting partition %d of a deleted topic: %s\n",
					p, strerror(-rc));
			bp->log = NULL;
		}
	}
	topic_free(t);
	return KERR_NONE;
}

/*
 * Whether the partitions of server.ctl plus `more` not yet in it fit the
 * open file limit: at start-up every
 * partition holds its active segment's .log, .index and .timeindex open, so
 * a state the broker could not reopen after a restart is refused (Kafka has
 * no such rule; its operations guide asks for 100000+ descriptors). Keeps
 * 64 descriptors for the process itself (listener, epoll, eventfds, a few
 * connections). Returns true when they fit; else false
 * with a message on stderr and in msg (msgsize bytes, may be NULL).
 */
static bool fd_budget_allows(const char *topic, int64_t more, char *msg, size_t msgsize)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return true;
	int64_t have = 0;
	for (int32_t i = 0; i < ctl_topic_count(server.ctl); i++)
		have += ctl_topic_at(server.ctl, i)->npartitions;
	int64_t limit = rl.rlim_cur > 64 ? ((int64_t)rl.rlim_cur - 64) / 3 : 0;
	if (have + more <= limit)
		return true;
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "This broker can hold at most %lld partitions with its open file limit of %llu "
		 "(3 files per partition); this would make %lld.",
		 (long long)limit, (unsigned long long)rl.rlim_cur, (long long)(have + more));
	fprintf(stderr, "samsa: refusing new partitions of %s: %s Raise the limit (ulimit -n) "
		"to allow more.\n", topic, buf);
	if (msg)
		snprintf(msg, msgsize, "%s", buf);
	return false;
}

int brk_create_topic(const char *name, int32_t partitions, int16_t replication_factor,
		     const ctl_config_entry *configs, int32_t nconfigs, bool validate_only,
		     const ctl_topic **out)
{
	const ctl_topic *t = NULL;
	if (out)
		*out = NULL;
	int err = ctl_create_topic(server.ctl, name, partitions, replication_factor, configs,
				   nconfigs, validate_only, &t);
	if (err || validate_only)
		return err;
	/* t is already counted among the controller's topics */
	if (!fd_budget_allows(name, 0, NULL, 0)) {
		ctl_delete_topic(server.ctl, name);
		return KERR_POLICY_VIOLATION;
	}
	int rc = brk_partitions_create_topic(t);
	if (rc) {
		fprintf(stderr, "samsa: cannot create the logs of topic %s: %s\n", name,
			strerror(-rc));
		ctl_delete_topic(server.ctl, name);
		return KERR_KAFKA_STORAGE_ERROR;
	}
	if (out)
		*out = t;
	return KERR_NONE;
}

int brk_add_partitions(const char *name, int32_t count, const ctl_replica_list *assignments,
		       int32_t nassignments, bool validate_only, char *msg, size_t msgsize)
{
	int err = ctl_add_partitions(server.ctl, name, count, assignments, nassignments, true, msg,
				     msgsize);
	if (err)
		return err;
	const ctl_topic *ct = ctl_find_topic(server.ctl, name, (int32_t)strlen(name));
	if (ct && !fd_budget_allows(name, (int64_t)count - ct->npartitions, msg, msgsize))
		return KERR_POLICY_VIOLATION;
	if (validate_only)
		return err;
	brk_topic *t = brk_topic_find(name, (int32_t)strlen(name));
	if (!t) {
		/* The registry holds every topic of server.ctl: not reached. */
		snprintf(msg, msgsize, "The topic's logs are not open on this broker.");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	int32_t old = t->npartitions;
	brk_partition **arr = realloc(t->partitions, (size_t)count * sizeof(*arr));
	if (!arr)
		return KERR_UNKNOWN_SERVER_ERROR;
	t->partitions = arr; /* moves the pointers only, never a partition */
	int64_t now = brk_wall_ms();
	int rc = 0;
	int32_t i;
	for (i = old; i < count; i++) {
		rc = partition_open(t, i, true, true, NULL, now, &arr[i]);
		if (rc)
			break;
	}
	if (!rc)
		err = ctl_add_partitions(server.ctl, name, count, assignments, nassignments, false, msg,
					 msgsize);
	if (rc || err) {
		for (int32_t k = old; k < i; k++) {
			partition_discard(arr[k]);
			arr[k] = NULL;
		}
		if (rc) {
			fprintf(stderr, "samsa: cannot create the logs of the new partitions of %s: %s\n",
				name, rc < 0 && rc > -4096 ? strerror(-rc) : "log error");
			snprintf(msg, msgsize, "The logs of the new partitions could not be created.");
			return KERR_KAFKA_STORAGE_ERROR;
		}
		return err;
	}
	t->npartitions = count;
	return KERR_NONE;
}
