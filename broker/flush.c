/*
 * flush.c - the fsync worker: a queue of jobs filled by the loop, one thread
 * that syncs, and an eventfd through which completions return to the loop.
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
#include "broker/server.h"

typedef struct flush_job {
	struct flush_job *next;
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

typedef struct flush_queue {
	flush_job *head, *tail;
} flush_queue;

static struct {
	bool started;
	bool stopping;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	flush_queue queue;
	flush_queue done;
	int efd;
	int inflight; /* queued or running (loop side count) */
} fw = { .efd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

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

static void *worker(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&fw.mu);
	for (;;) {
		while (!fw.queue.head && !fw.stopping)
			pthread_cond_wait(&fw.cv, &fw.mu);
		flush_job *j = q_pop(&fw.queue);
		if (!j)
			break; /* stopping and nothing left */
		pthread_mutex_unlock(&fw.mu);
		job_run(j);
		pthread_mutex_lock(&fw.mu);
		q_push(&fw.done, j);
		uint64_t one = 1;
		if (write(fw.efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; the loop drains
			 * the done queue on its next wake-up anyway */
		}
	}
	pthread_mutex_unlock(&fw.mu);
	return NULL;
}

/* On the loop: run the completions of finished jobs. */
static void drain_done(void)
{
	pthread_mutex_lock(&fw.mu);
	flush_job *list = fw.done.head;
	fw.done.head = fw.done.tail = NULL;
	pthread_mutex_unlock(&fw.mu);
	while (list) {
		flush_job *j = list;
		list = j->next;
		fw.inflight--;
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
	(void)arg;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN && errno != EINTR)
		fprintf(stderr, "samsa: flush eventfd: %s\n", strerror(errno));
	drain_done();
}

int brk_flush_start(void)
{
	if (fw.started)
		return 0;
	fw.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fw.efd < 0)
		return -errno;
	int rc = brk_loop_watch(server.loop, fw.efd, BRK_READABLE, on_event, NULL);
	if (rc) {
		close(fw.efd);
		fw.efd = -1;
		return rc;
	}
	fw.stopping = false;
	rc = pthread_create(&fw.thread, NULL, worker, NULL);
	if (rc) {
		brk_loop_unwatch(server.loop, fw.efd);
		close(fw.efd);
		fw.efd = -1;
		return -rc;
	}
	fw.started = true;
	return 0;
}

void brk_flush_stop(void)
{
	if (!fw.started)
		return;
	pthread_mutex_lock(&fw.mu);
	fw.stopping = true;
	pthread_cond_signal(&fw.cv);
	pthread_mutex_unlock(&fw.mu);
	pthread_join(fw.thread, NULL);
	drain_done();
	brk_loop_unwatch(server.loop, fw.efd);
	close(fw.efd);
	fw.efd = -1;
	fw.started = false;
}

static int submit(flush_job *j)
{
	if (!fw.started) {
		/* No worker (start-up, shutdown or tests): run it here. */
		job_run(j);
		if (j->done)
			j->done(j->arg, j->err);
		job_free(j);
		return 0;
	}
	fw.inflight++;
	pthread_mutex_lock(&fw.mu);
	q_push(&fw.queue, j);
	pthread_cond_signal(&fw.cv);
	pthread_mutex_unlock(&fw.mu);
	return 0;
}

int brk_flush_log(log_flush_job *job, brk_flush_done_fn done, void *arg)
{
	flush_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->log_job = job;
	j->done = done;
	j->arg = arg;
	return submit(j);
}

int brk_flush_checkpoint(const char *path, logdir_checkpoint_entry *e, int n,
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
	return submit(j);
}

int brk_flush_work(brk_flush_work_fn work, void *work_arg, brk_flush_done_fn done, void *arg)
{
	flush_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->work = work;
	j->work_arg = work_arg;
	j->done = done;
	j->arg = arg;
	return submit(j);
}
