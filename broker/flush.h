/*
 * flush.h - fsync off the event loop (DESIGN.md decision 5).
 *
 * A flusher is one worker thread that takes jobs from the loop: a log flush
 * prepared by log_flush_begin (its fsyncs run there through log_flush_run),
 * an offset checkpoint file (tmp, fsync, rename, fsync dir), or any other
 * blocking work. When a job is done the worker wakes the loop through an
 * eventfd; the loop then runs the job's completion callback on its own
 * thread, which is where the recovery point of the log advances
 * (log_flush_end). At shutdown brk_flusher_stop drains the queue first.
 *
 * The broker's flusher is server.flusher; a test can run its own. The
 * functions run on the loop thread (the one passed to brk_flusher_start).
 */
#ifndef SAMSA_BROKER_FLUSH_H
#define SAMSA_BROKER_FLUSH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/loop.h"
#include "storage/log.h"
#include "storage/logdir.h"

/* Completion, on the loop thread: err is 0 or the first -errno seen. */
typedef void (*brk_flush_done_fn)(void *arg, int err);

/* Blocking work for the worker thread: returns 0 or -errno. */
typedef int (*brk_flush_work_fn)(void *arg);

struct brk_flush_job;

/* A queue of jobs (FIFO). */
typedef struct brk_flush_queue {
	struct brk_flush_job *head, *tail;
} brk_flush_queue;

/* The worker. All zero (as in a zeroed brk_server) is a flusher not
 * started, which runs each job at once on the caller's thread. */
typedef struct brk_flusher {
	brk_loop *loop;          /* where completions run */
	bool started;
	bool stopping;           /* under mu */
	pthread_t thread;
	pthread_mutex_t mu;      /* guards queue, done and stopping */
	pthread_cond_t cv;       /* signals the worker */
	brk_flush_queue queue;   /* waiting for the worker */
	brk_flush_queue done;    /* finished, completions not run yet */
	int efd;                 /* the worker wakes the loop through it */
	int inflight;            /* queued or running (loop side count) */
} brk_flusher;

/* Start the worker and watch its eventfd on loop. Returns 0 or -errno.
 * No-op when started. */
int brk_flusher_start(brk_flusher *fl, brk_loop *loop);

/* Finish every queued job (running their completions) and join the worker;
 * fl is then not started (and may be started again). Safe to call when not
 * started. */
void brk_flusher_stop(brk_flusher *fl);

/*
 * Run log_flush_run(job) off the loop, then call done(arg, err) on the loop,
 * which must hand job to log_flush_end. Returns 0 or -errno (then done is
 * not called and job is still the caller's).
 */
int brk_flusher_log(brk_flusher *fl, log_flush_job *job, brk_flush_done_fn done, void *arg);

/*
 * Write the checkpoint file path with entries e (n; ownership of the malloc'ed
 * array passes here) through logdir_checkpoint_write off the loop, then call
 * done (may be NULL) on the loop. Returns 0 or -errno (e freed, done not called).
 */
int brk_flusher_checkpoint(brk_flusher *fl, const char *path, logdir_checkpoint_entry *e, int n,
			   brk_flush_done_fn done, void *arg);

/*
 * Run work(work_arg) on the worker thread (blocking work that must stay off
 * the loop, such as unlinking deleted segment files after
 * file.delete.delay.ms), then done(arg, its result) on the loop (done may
 * be NULL). Without a started worker both run at once on the caller's
 * thread. Returns 0 or -ENOMEM (then neither is called).
 */
int brk_flusher_work(brk_flusher *fl, brk_flush_work_fn work, void *work_arg,
		     brk_flush_done_fn done, void *arg);

/*
 * A pool of threads that run log_flush_run on the jobs handed to it, for
 * the shutdown (Kafka flushes the logs at shutdown with
 * num.recovery.threads.per.data.dir threads): the loop's thread prepares
 * and begins each log's job while the pool runs those before it, and fsyncs
 * of different files issued together share the file system's journal
 * commits, where one after the other each waits for its own.
 *
 * brk_flush_pool_start starts nthreads threads (fewer when the system
 * refuses some; none is fine) for at most max_jobs jobs; NULL when out of
 * memory. brk_flush_pool_add hands a job over (0, or -ENOSPC past
 * max_jobs: the job stays the caller's); brk_flush_pool_finish runs what is
 * left on the calling thread too, waits for every job, joins the threads
 * and frees the pool. Each job keeps its result for log_flush_end, which
 * the caller runs after finish (the pool never touches a log).
 */
typedef struct brk_flush_pool brk_flush_pool;
brk_flush_pool *brk_flush_pool_start(int nthreads, size_t max_jobs);
int brk_flush_pool_add(brk_flush_pool *p, log_flush_job *job);
void brk_flush_pool_finish(brk_flush_pool *p);

#endif
