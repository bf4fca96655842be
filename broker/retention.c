/*
 * retention.c - the periodic retention check and the delayed, off-loop
 * unlinking of deleted segment files (see retention.h).
 */
#include "broker/retention.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/retention.h"

/* Files waiting for file.delete.delay.ms (timer != 0) or being unlinked
 * on the worker (timer == 0). */
typedef struct brk_pending_delete {
	struct brk_pending_delete *prev, *next;
	brk_retention *rt;
	log_deleted_files files;
	uint64_t timer;
} pending_delete;

static void unlink_pending(pending_delete *pd)
{
	if (pd->prev)
		pd->prev->next = pd->next;
	else
		pd->rt->pending = pd->next;
	if (pd->next)
		pd->next->prev = pd->prev;
	log_deleted_files_free(&pd->files);
	free(pd);
}

/* On the worker thread: only the path list is touched. */
static int unlink_work(void *arg)
{
	pending_delete *pd = arg;
	return log_deleted_files_unlink(&pd->files);
}

/* Back on the loop. */
static void unlink_done(void *arg, int err)
{
	pending_delete *pd = arg;
	if (err)
		fprintf(stderr, "samsa: deleting %zu segment file(s) (%s...) failed: %s\n", pd->files.n,
			pd->files.paths[0], strerror(-err));
	unlink_pending(pd);
}

static void on_delay(brk_loop *loop, void *arg)
{
	(void)loop;
	pending_delete *pd = arg;
	pd->timer = 0;
	if (brk_flusher_work(pd->rt->flusher, unlink_work, pd, unlink_done, pd) < 0)
		unlink_done(pd, unlink_work(pd)); /* no memory for a job: here, once */
}

void brk_retention_schedule(brk_retention *rt, brk_partition *p)
{
	if (!p->log)
		return;
	log_deleted_files f;
	if (log_take_deleted_files(p->log, &f) == 0)
		return;
	pending_delete *pd = rt->loop ? calloc(1, sizeof(*pd)) : NULL;
	if (!pd) {
		/* not set up yet, or no memory: the files stay *.deleted until
		 * the next start */
		log_deleted_files_free(&f);
		return;
	}
	pd->rt = rt;
	pd->files = f;
	pd->next = rt->pending;
	if (rt->pending)
		rt->pending->prev = pd;
	rt->pending = pd;
	int64_t delay = p->topic->cfg.file_delete_delay_ms;
	pd->timer = brk_timer_add(rt->loop, delay > 0 ? delay : 0, on_delay, pd);
}

int brk_retention_run(brk_retention *rt, int64_t now_ms)
{
	int total = 0;
	for (int32_t i = 0; i < brk_partitions_topic_count(rt->partitions); i++) {
		brk_topic *t = brk_partitions_topic_at(rt->partitions, i);
		if (!t)
			continue;
		/* Kafka's UnifiedLog.deleteOldSegments: retention only with
		 * cleanup.policy delete; the log start offset in any case */
		bool del = t->cfg.delete_policy;
		int64_t ms = del ? t->cfg.retention_ms : -1;
		int64_t bytes = del ? t->cfg.retention_bytes : -1;
		for (int32_t k = 0; k < t->npartitions; k++) {
			brk_partition *p = brk_topic_partition(t, k);
			if (!p || !p->log)
				continue;
			int n = log_delete_old_segments(p->log, ms, bytes, now_ms);
			if (n < 0)
				fprintf(stderr, "samsa: retention of %s-%d: %s\n", t->name, (int)k,
					n > -4096 ? strerror(-n) : "log error");
			else if (n > 0)
				fprintf(stderr,
					"samsa: %s-%d: deleted %d segment(s) (retention.ms %" PRId64
					", retention.bytes %" PRId64 "), log start offset %" PRId64 "\n",
					t->name, (int)k, n, ms, bytes, log_start_offset(p->log));
			if (n > 0)
				total += n;
			brk_retention_schedule(rt, p);
		}
	}
	return total;
}

static void on_check(brk_loop *loop, void *arg)
{
	brk_retention *rt = arg;
	brk_retention_run(rt, brk_wall_ms());
	rt->timer = brk_timer_add(loop, rt->cfg->log_retention_check_interval_ms, on_check, rt);
}

void brk_retention_init(brk_retention *rt, brk_loop *loop, brk_partitions *partitions,
			const brk_config *cfg, brk_flusher *flusher)
{
	memset(rt, 0, sizeof(*rt));
	rt->loop = loop;
	rt->partitions = partitions;
	rt->cfg = cfg;
	rt->flusher = flusher;
}

int brk_retention_start(brk_retention *rt)
{
	if (rt->started)
		return 0;
	rt->timer = brk_timer_add(rt->loop, rt->cfg->log_retention_check_interval_ms, on_check, rt);
	rt->started = true;
	return 0;
}

void brk_retention_stop(brk_retention *rt)
{
	if (rt->started)
		brk_timer_cancel(rt->loop, rt->timer);
	rt->started = false;
	for (pending_delete *pd = rt->pending, *next; pd; pd = next) {
		next = pd->next;
		if (pd->timer) {
			brk_timer_cancel(rt->loop, pd->timer);
			unlink_pending(pd);
		}
	}
}
