/*
 * flush.c - the fsync worker: a queue of jobs filled by the loop, one thread
 * that syncs, and an eventfd through which completions return to the loop
 * (see flush.h).
 */
#include "broker/flush.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "broker/ratelog.h"

typedef struct brk_flush_job {
	struct brk_flush_job *next;
	log_flush_job *log_job; /* log flush job when not NULL */
	char *path; /* checkpoint job when not NULL */
	logdir_checkpoint_entry *entries;
	int nentries;
	brk_flush_work_fn work; /* other blocking work when not NULL */
	void *work_arg;
	int err;
	brk_flush_done_fn done;
	void *arg;
} flush_job;

typedef brk_flush_queue flush_queue;

static void q_push(flush_queue *q, flush_job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static flush_job *q_pop(flush_queue *q)
{
	flush_job *j = q->head;
	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	return j;
}

static void job_run(flush_job *j)
{
	if (j->log_job)
		j->err = log_flush_run(j->log_job);
	if (j->path) {
		int rc = logdir_checkpoint_write(j->path, j->entries, j->nentries);
		if (rc && !j->err)
			j->err = rc;
	}
	if (j->work) {
		int rc = j->work(j->work_arg);
		if (rc && !j->err)
			j->err = rc;
	}
}

static void job_free(flush_job *j)
{
	free(j->path);
	free(j->entries);
	free(j);
}

static void *worker(void *arg)
{
	brk_flusher *fl = arg;
	pthread_mutex_lock(&fl->mu);
	for (;;) {
		while (!fl->queue.head && !fl->stopping)
			pthread_cond_wait(&fl->cv, &fl->mu);
		flush_job *j = q_pop(&fl->queue);
		if (!j)
			break; /* stopping and nothing left */
		pthread_mutex_unlock(&fl->mu);
		job_run(j);
		pthread_mutex_lock(&fl->mu);
		q_push(&fl->done, j);
		uint64_t one = 1;
		if (write(fl->efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; the loop drains
			 * the done queue on its next wake-up anyway */
		}
	}
	pthread_mutex_unlock(&fl->mu);
	return NULL;
}

/* On the loop: run the completions of finished jobs. */
static void drain_done(brk_flusher *fl)
{
	pthread_mutex_lock(&fl->mu);
	flush_job *list = fl->done.head;
	fl->done.head = fl->done.tail = NULL;
	pthread_mutex_unlock(&fl->mu);
	while (list) {
		flush_job *j = list;
		list = j->next;
		fl->inflight--;
		static brk_ratelog failed = BRK_RATELOG_INIT; /* a failing disk fails every flush */
		if (j->err && !j->work)
			brk_ratelog_printf(&failed, "samsa: flush %s failed: %s\n",
					   j->path ? j->path : "of log segments", strerror(-j->err));
		if (j->done)
			j->done(j->arg, j->err);
		job_free(j);
	}
}

static void on_event(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)events;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN && errno != EINTR)
		fprintf(stderr, "samsa: flush eventfd: %s\n", strerror(errno));
	drain_done(arg);
}

int brk_flusher_start(brk_flusher *fl, brk_loop *loop)
{
	if (fl->started)
		return 0;
	int rc = pthread_mutex_init(&fl->mu, NULL);
	if (rc)
		return -rc;
	rc = pthread_cond_init(&fl->cv, NULL);
	if (rc) {
		pthread_mutex_destroy(&fl->mu);
		return -rc;
	}
	fl->loop = loop;
	fl->queue.head = fl->queue.tail = fl->done.head = fl->done.tail = NULL;
	fl->inflight = 0;
	fl->stopping = false;
	fl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fl->efd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = brk_loop_watch(loop, fl->efd, BRK_READABLE, on_event, fl);
	if (rc)
		goto fail;
	rc = pthread_create(&fl->thread, NULL, worker, fl);
	if (rc) {
		rc = -rc;
		brk_loop_unwatch(loop, fl->efd);
		goto fail;
	}
	fl->started = true;
	return 0;
fail:
	if (fl->efd >= 0)
		close(fl->efd);
	fl->efd = -1;
	pthread_cond_destroy(&fl->cv);
	pthread_mutex_destroy(&fl->mu);
	return rc;
}

void brk_flusher_stop(brk_flusher *fl)
{
	if (!fl->started)
		return;
	pthread_mutex_lock(&fl->mu);
	fl->stopping = true;
	pthread_cond_signal(&fl->cv);
	pthread_mutex_unlock(&fl->mu);
	pthread_join(fl->thread, NULL);
	drain_done(fl);
	brk_loop_unwatch(fl->loop, fl->efd);
	close(fl->efd);
	fl->efd = -1;
	pthread_cond_destroy(&fl->cv);
	pthread_mutex_destroy(&fl->mu);
	fl->started = false;
}

static int submit(brk_flusher *fl, flush_job *j)
{
	if (!fl->started) {
		/* No worker (start-up, shutdown or tests): run it here. */
		job_run(j);
		if (j->done)
			j->done(j->arg, j->err);
		job_free(j);
		return 0;
	}
	fl->inflight++;
	pthread_mutex_lock(&fl->mu);
	q_push(&fl->queue, j);
	pthread_cond_signal(&fl->cv);
	pthread_mutex_unlock(&fl->mu);
	return 0;
}

int brk_flusher_log(brk_flusher *fl, log_flush_job *job, brk_flush_done_fn done, void *arg)
{
	flush_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->log_job = job;
	j->done = done;
	j->arg = arg;
	return submit(fl, j);
}

int brk_flusher_checkpoint(brk_flusher *fl, const char *path, logdir_checkpoint_entry *e, int n,
			   brk_flush_done_fn done, void *arg)
{
	flush_job *j = calloc(1, sizeof(*j));
	char *p = strdup(path);
	if (!j || !p) {
		free(j);
		free(p);
		free(e);
		return -ENOMEM;
	}
	j->path = p;
	j->entries = e;
	j->nentries = n;
	j->done = done;
	j->arg = arg;
	return submit(fl, j);
}

int brk_flusher_work(brk_flusher *fl, brk_flush_work_fn work, void *work_arg,
		     brk_flush_done_fn done, void *arg)
{
	flush_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->work = work;
	j->work_arg = work_arg;
	j->done = done;
	j->arg = arg;
	return submit(fl, j);
}

/* ---- the shutdown flush ---- */

struct brk_flush_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* a job was added, or the pool is finishing */
	log_flush_job **jobs;     /* cap, filled in order */
	size_t cap, added, next;  /* under mu: jobs added, the next one to take */
	bool finishing;           /* under mu: no more jobs will come */
	pthread_t *threads;
	int nthreads;             /* started */
};

/* Take the next job (blocking while none is there and more may come);
 * false when none is left. */
static bool pool_take(brk_flush_pool *p, log_flush_job **job)
{
	pthread_mutex_lock(&p->mu);
	while (p->next == p->added && !p->finishing)
		pthread_cond_wait(&p->cv, &p->mu);
	bool got = p->next < p->added;
	if (got)
		*job = p->jobs[p->next++];
	pthread_mutex_unlock(&p->mu);
	return got;
}

static void *pool_worker(void *arg)
{
	brk_flush_pool *p = arg;
	log_flush_job *job;
	while (pool_take(p, &job))
		log_flush_run(job);
	return NULL;
}

brk_flush_pool *brk_flush_pool_start(int nthreads, size_t max_jobs)
{
	brk_flush_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cap = max_jobs;
	p->jobs = calloc(max_jobs ? max_jobs : 1, sizeof(*p->jobs));
	p->threads = calloc(nthreads > 0 ? (size_t)nthreads : 1, sizeof(*p->threads));
	if (!p->jobs || !p->threads || pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p->jobs);
		free(p->threads);
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->cv, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p->jobs);
		free(p->threads);
		free(p);
		return NULL;
	}
	while (p->nthreads < nthreads && pthread_create(&p->threads[p->nthreads], NULL, pool_worker, p) == 0)
		p->nthreads++;
	return p;
}

int brk_flush_pool_add(brk_flush_pool *p, log_flush_job *job)
{
	pthread_mutex_lock(&p->mu);
	bool room = p->added < p->cap;
	if (room) {
		p->jobs[p->added++] = job;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return room ? 0 : -ENOSPC;
}

void brk_flush_pool_finish(brk_flush_pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->finishing = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pool_worker(p); /* the caller helps (and does it all without threads) */
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->jobs);
	free(p->threads);
	free(p);
}
