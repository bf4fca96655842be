/*
 * cleaner.c - the log cleaner thread and its scheduling on the loop (see
 * cleaner.h).
 */
#include "broker/cleaner.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>


#define CHECKPOINT_FILE "cleaner-offset-checkpoint"

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the checkpoint ---- */

static logdir_checkpoint_entry *ck_find(brk_cleaner *cl, const char *topic, int32_t p)
{
	for (int i = 0; i < cl->nck; i++)
		if (cl->ck[i].partition == p && strcmp(cl->ck[i].topic, topic) == 0)
			return &cl->ck[i];
	return NULL;
}

static void ck_set(brk_cleaner *cl, const char *topic, int32_t p, int64_t offset)
{
	logdir_checkpoint_entry *e = ck_find(cl, topic, p);
	if (!e) {
		if (cl->nck == cl->capck) {
			int cap = cl->capck ? cl->capck * 2 : 16;
			logdir_checkpoint_entry *v = realloc(cl->ck, (size_t)cap * sizeof *v);
			if (!v)
				return;
			cl->ck = v;
			cl->capck = cap;
		}
		e = &cl->ck[cl->nck++];
		snprintf(e->topic, sizeof e->topic, "%s", topic);
		e->partition = p;
	}
	e->offset = offset;
}

/* Write the checkpoint off the loop (entries of topics that still exist). */
static void ck_write(brk_cleaner *cl)
{
	logdir_checkpoint_entry *copy = malloc((size_t)(cl->nck ? cl->nck : 1) * sizeof *copy);
	if (!copy)
		return;
	int n = 0;
	for (int i = 0; i < cl->nck; i++)
		if (brk_topic_find(cl->partitions, cl->ck[i].topic, (int32_t)strlen(cl->ck[i].topic)))
			copy[n++] = cl->ck[i];
	char path[4400];
	snprintf(path, sizeof path, "%s/%s", cl->cfg->log_dir, CHECKPOINT_FILE);
	brk_flusher_checkpoint(cl->flusher, path, copy, n, NULL, NULL);
}

/* ---- the thread ---- */

static void *worker(void *arg)
{
	brk_cleaner *cl = arg;
	pthread_mutex_lock(&cl->mu);
	for (;;) {
		while (!cl->stopping && cl->nfree == 0 && !(cl->job && !cl->job_done))
			pthread_cond_wait(&cl->cv, &cl->mu);
		if (cl->nfree > 0) {
			log_clean_job *j = cl->to_free[--cl->nfree];
			pthread_mutex_unlock(&cl->mu);
			log_clean_job_free(j);
			pthread_mutex_lock(&cl->mu);
			continue;
		}
		if (cl->job && !cl->job_done) {
			log_clean_job *j = cl->job;
			pthread_mutex_unlock(&cl->mu);
			int64_t t0 = mono_ms();
			int rc = log_clean_run(j);
			int64_t took = mono_ms() - t0;
			pthread_mutex_lock(&cl->mu);
			cl->job_rc = rc;
			cl->job_ms = took;
			cl->job_done = true;
			uint64_t one = 1;
			if (write(cl->efd, &one, sizeof one) < 0) {
				/* the loop drains on its next wake-up anyway */
			}
			continue;
		}
		if (cl->stopping)
			break;
	}
	pthread_mutex_unlock(&cl->mu);
	return NULL;
}

static void free_on_thread(brk_cleaner *cl, log_clean_job *j)
{
	pthread_mutex_lock(&cl->mu);
	if (cl->nfree == cl->capfree) {
		size_t cap = cl->capfree ? cl->capfree * 2 : 4;
		log_clean_job **v = realloc(cl->to_free, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&cl->mu);
			log_clean_job_free(j); /* on the loop, rather than leak */
			return;
		}
		cl->to_free = v;
		cl->capfree = cap;
	}
	cl->to_free[cl->nfree++] = j;
	pthread_cond_signal(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
}

/* ---- scheduling (loop) ---- */

static void arm(brk_cleaner *cl, int64_t delay_ms);

static void clean_config_of(const brk_cleaner *cl, const brk_topic *t, log_clean_config *c)
{
	log_clean_config_defaults(c);
	c->delete_retention_ms = t->cfg.delete_retention_ms;
	c->min_compaction_lag_ms = t->cfg.min_compaction_lag_ms;
	c->max_compaction_lag_ms = t->cfg.max_compaction_lag_ms;
	int threads = cl->cfg->log_cleaner_threads > 0 ? cl->cfg->log_cleaner_threads : 1;
	c->dedupe_buffer_bytes = cl->cfg->log_cleaner_dedupe_buffer_size / threads;
	c->dedupe_load_factor = cl->cfg->log_cleaner_io_buffer_load_factor;
	c->io_buffer_bytes = cl->cfg->log_cleaner_io_buffer_size;
}

/* Kafka's grabFilthiestCompactedLog, then the start of its round.
 * Returns true when a round started. */
static bool start_round(brk_cleaner *cl)
{
	int64_t now = brk_wall_ms();
	brk_partition *best = NULL;
	log_clean_stats best_st = { 0 };
	for (int32_t i = 0; i < brk_partitions_topic_count(cl->partitions); i++) {
		brk_topic *t = brk_partitions_topic_at(cl->partitions, i);
		if (!t || !t->cfg.compact)
			continue;
		log_clean_config cc;
		clean_config_of(cl, t, &cc);
		for (int32_t p = 0; p < t->npartitions; p++) {
			brk_partition *bp = brk_topic_partition(t, p);
			if (!bp || !bp->log)
				continue;
			const logdir_checkpoint_entry *e = ck_find(cl, t->name, p);
			log_clean_stats st;
			if (log_clean_stats_of(bp->log, e ? e->offset : -1, &cc, now, &st) < 0)
				continue;
			if (st.reset_checkpoint)
				ck_set(cl, t->name, p, st.first_dirty);
			if (st.clean_bytes + st.cleanable_bytes <= 0)
				continue;
			bool due = (st.compaction_delay_ms > 0 && st.cleanable_bytes > 0) ||
				   st.ratio > t->cfg.min_cleanable_ratio;
			if (due && (!best || st.ratio > best_st.ratio)) {
				best = bp;
				best_st = st;
			}
		}
	}
	if (!best)
		return false;
	log_clean_config cc;
	clean_config_of(cl, best->topic, &cc);
	log_clean_job *j;
	atomic_store(&cl->abort, false);
	int rc = log_clean_begin(best->log, best_st.first_dirty, &cc, now, &cl->abort, &j);
	if (rc != 0) {
		if (rc < 0)
			fprintf(stderr, "samsa: log cleaner: %s-%d: %s\n", best->topic->name,
				(int)best->index, strerror(-rc));
		return false;
	}
	memcpy(cl->topic_id, best->topic->id, 16);
	cl->partition = best->index;
	snprintf(cl->topic, sizeof cl->topic, "%s", best->topic->name);
	pthread_mutex_lock(&cl->mu);
	cl->job = j;
	cl->job_done = false;
	pthread_cond_signal(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	return true;
}

static void on_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_cleaner *cl = arg;
	cl->timer = 0;
	if (cl->job)
		return;
	if (!start_round(cl))
		arm(cl, cl->cfg->log_cleaner_backoff_ms);
}

static void arm(brk_cleaner *cl, int64_t delay_ms)
{
	if (cl->timer)
		brk_timer_cancel(cl->loop, cl->timer);
	cl->timer = brk_timer_add(cl->loop, delay_ms, on_timer, cl);
}

/* A round came back from the thread: swap it in. */
static void on_event(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)events;
	brk_cleaner *cl = arg;
	uint64_t n;
	if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN && errno != EINTR)
		fprintf(stderr, "samsa: log cleaner eventfd: %s\n", strerror(errno));
	pthread_mutex_lock(&cl->mu);
	bool done = cl->job && cl->job_done;
	log_clean_job *j = done ? cl->job : NULL;
	int rc = cl->job_rc;
	int64_t took = cl->job_ms;
	if (done)
		cl->job = NULL;
	pthread_mutex_unlock(&cl->mu);
	if (!j)
		return;
	brk_topic *t = brk_topic_find_by_id(cl->partitions, cl->topic_id);
	brk_partition *p = t ? brk_topic_partition(t, cl->partition) : NULL;
	bool cleaned = false;
	if (rc == 0) {
		log_clean_result res;
		rc = log_clean_end(p ? p->log : NULL, j, &res);
		if (rc == 0) {
			cleaned = true;
			ck_set(cl, cl->topic, cl->partition, res.end_offset);
			ck_write(cl);
			fprintf(stderr,
				"samsa: log cleaner: %s-%d cleaned up to offset %" PRId64 ": %d segment(s) into %d, "
				"%.1f MB read, %.1f MB written in %" PRId64 " ms, map %.0f%% full\n",
				cl->topic, (int)cl->partition, res.end_offset, res.nsegments_in, res.nsegments_out,
				(double)res.bytes_read / 1e6, (double)res.bytes_written / 1e6, took,
				100 * res.map_utilization);
		}
	}
	if (rc < 0 && rc != -EAGAIN && rc != -ECANCELED && rc != -ESTALE)
		fprintf(stderr, "samsa: log cleaner: %s-%d: cleaning failed: %s\n", cl->topic, (int)cl->partition,
			rc == LOG_ERR_CORRUPT ? "corrupt segment" : strerror(-rc));
	free_on_thread(cl, j);
	if (!cl->stopping)
		arm(cl, cleaned ? 0 : cl->cfg->log_cleaner_backoff_ms);
}

/* ---- public ---- */

int brk_cleaner_start(brk_cleaner *cl, brk_loop *loop, const brk_config *cfg,
		      brk_partitions *partitions, brk_flusher *flusher)
{
	if (cl->started || !cfg->log_cleaner_enable || cfg->log_cleaner_threads <= 0)
		return 0;
	char path[4400];
	snprintf(path, sizeof path, "%s/%s", cfg->log_dir, CHECKPOINT_FILE);
	logdir_checkpoint_entry *e = NULL;
	int n = 0;
	if (logdir_checkpoint_read(path, &e, &n) != 0) {
		fprintf(stderr, "samsa: ignoring unreadable %s\n", path);
		e = NULL;
		n = 0;
	}
	int rc = pthread_mutex_init(&cl->mu, NULL);
	if (rc) {
		free(e);
		return -rc;
	}
	rc = pthread_cond_init(&cl->cv, NULL);
	if (rc) {
		pthread_mutex_destroy(&cl->mu);
		free(e);
		return -rc;
	}
	cl->loop = loop;
	cl->cfg = cfg;
	cl->partitions = partitions;
	cl->flusher = flusher;
	cl->ck = e;
	cl->nck = cl->capck = n;
	cl->job = NULL;
	cl->timer = 0;
	cl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rc = cl->efd < 0 ? -errno : brk_loop_watch(loop, cl->efd, BRK_READABLE, on_event, cl);
	if (rc == 0) {
		cl->stopping = false;
		rc = -pthread_create(&cl->thread, NULL, worker, cl);
		if (rc)
			brk_loop_unwatch(loop, cl->efd);
	}
	if (rc) {
		if (cl->efd >= 0)
			close(cl->efd);
		cl->efd = -1;
		free(cl->ck);
		cl->ck = NULL;
		cl->nck = cl->capck = 0;
		pthread_cond_destroy(&cl->cv);
		pthread_mutex_destroy(&cl->mu);
		return rc;
	}
	cl->started = true;
	arm(cl, cfg->log_cleaner_backoff_ms);
	return 0;
}

void brk_cleaner_stop(brk_cleaner *cl)
{
	if (!cl->started)
		return;
	if (cl->timer)
		brk_timer_cancel(cl->loop, cl->timer);
	cl->timer = 0;
	atomic_store(&cl->abort, true);
	pthread_mutex_lock(&cl->mu);
	cl->stopping = true;
	pthread_cond_signal(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	pthread_join(cl->thread, NULL);
	/* a round not swapped in: its files go */
	if (cl->job)
		log_clean_job_free(cl->job);
	cl->job = NULL;
	for (size_t i = 0; i < cl->nfree; i++)
		log_clean_job_free(cl->to_free[i]);
	free(cl->to_free);
	cl->to_free = NULL;
	cl->nfree = cl->capfree = 0;
	brk_loop_unwatch(cl->loop, cl->efd);
	close(cl->efd);
	cl->efd = -1;
	free(cl->ck);
	cl->ck = NULL;
	cl->nck = cl->capck = 0;
	pthread_cond_destroy(&cl->cv);
	pthread_mutex_destroy(&cl->mu);
	cl->started = false;
}
