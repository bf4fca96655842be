/*
 * flush.h - fsync off the event loop (DESIGN.md decision 5).
 *
 * One worker thread takes jobs from the loop: a log flush prepared by
 * log_flush_begin (its fsyncs run here through log_flush_run), or an offset
 * checkpoint file (tmp, fsync, rename, fsync dir). When a job is done the worker wakes the loop through an
 * eventfd; the loop then runs the job's completion callback on its own
 * thread, which is where the recovery point of the log advances
 * (log_flush_end). At shutdown brk_flush_stop drains the queue first.
 */
#ifndef SAMSA_BROKER_FLUSH_H
#define SAMSA_BROKER_FLUSH_H

#include <stddef.h>
#include <stdint.h>

#include "storage/log.h"
#include "storage/logdir.h"

/* Completion, on the loop thread: err is 0 or the first -errno seen. */
typedef void (*brk_flush_done_fn)(void *arg, int err);

/* Start the worker and watch its eventfd on server.loop. Returns 0 or -errno. */
int brk_flush_start(void);

/* Finish every queued job (running their completions) and join the worker.
 * Safe to call when not started. */
void brk_flush_stop(void);

/*
 * Run log_flush_run(job) off the loop, then call done(arg, err) on the loop,
 * which must hand job to log_flush_end. Returns 0 or -errno (then done is
 * not called and job is still the caller's).
 */
int brk_flush_log(log_flush_job *job, brk_flush_done_fn done, void *arg);

/*
 * Write the checkpoint file path with entries e (n; ownership of the malloc'ed
 * array passes here) through logdir_checkpoint_write off the loop, then call
 * done (may be NULL) on the loop. Returns 0 or -errno (e freed, done not called).
 */
int brk_flush_checkpoint(const char *path, logdir_checkpoint_entry *e, int n,
			 brk_flush_done_fn done, void *arg);

/* Blocking work for the worker thread: returns 0 or -errno. */
typedef int (*brk_flush_work_fn)(void *arg);

/*
 * Run work(work_arg) on the worker thread (blocking work that must stay off
 * the loop, such as unlinking deleted segment files after
 * file.delete.delay.ms), then done(arg, its result) on the loop (done may
 * be NULL). Without a started worker both run at once on the caller's
 * thread. Returns 0 or -ENOMEM (then neither is called).
 */
int brk_flush_work(brk_flush_work_fn work, void *work_arg, brk_flush_done_fn done, void *arg);

#endif
