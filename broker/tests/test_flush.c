/*
 * test_flush.c - the flusher, each test with its own instance and loop: a
 * job's work runs on the worker thread and its completion on the loop, in
 * the order submitted; stop runs the completions still owed; a flusher not
 * started runs each job at once; two flushers do not share anything; a
 * checkpoint job writes its file; the shutdown's pool runs every job
 * handed to it.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/flush.h"
#include "broker/loop.h"

#define NJOBS 8

typedef struct record {
	brk_loop *loop;
	pthread_t loop_thread;
	int worked;               /* work calls (worker thread) */
	bool work_off_loop;       /* every work call ran off the loop thread */
	int order[NJOBS * 2];     /* completion order, by job number */
	int ndone;
	bool done_on_loop;        /* every completion ran on the loop thread */
	int last_err;
	int stop_after;           /* stop the loop after this many completions */
} record;

typedef struct job_arg {
	record *r;
	int id;
	int result;
} job_arg;

static int work(void *arg)
{
	job_arg *a = arg;
	__atomic_add_fetch(&a->r->worked, 1, __ATOMIC_SEQ_CST);
	if (pthread_equal(pthread_self(), a->r->loop_thread))
		a->r->work_off_loop = false;
	usleep(1000); /* let the queue fill behind it */
	return a->result;
}

static void done(void *arg, int err)
{
	job_arg *a = arg;
	record *r = a->r;
	if (!pthread_equal(pthread_self(), r->loop_thread))
		r->done_on_loop = false;
	r->order[r->ndone++] = a->id;
	r->last_err = err;
	if (r->loop && r->ndone == r->stop_after)
		brk_loop_stop(r->loop);
}

static void on_timeout(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

static void record_init(record *r, brk_loop *loop, int stop_after)
{
	memset(r, 0, sizeof(*r));
	r->loop = loop;
	r->loop_thread = pthread_self();
	r->work_off_loop = true;
	r->done_on_loop = true;
	r->stop_after = stop_after;
}

START_TEST(test_not_started_runs_inline)
{
	brk_flusher fl;
	memset(&fl, 0, sizeof(fl));
	record r;
	record_init(&r, NULL, 0);
	job_arg a = { &r, 7, -5 };
	ck_assert_int_eq(brk_flusher_work(&fl, work, &a, done, &a), 0);
	/* at once, on this thread */
	ck_assert_int_eq(r.worked, 1);
	ck_assert_int_eq(r.ndone, 1);
	ck_assert(!r.work_off_loop);
	ck_assert_int_eq(r.last_err, -5);
	brk_flusher_stop(&fl); /* harmless */
}
END_TEST

START_TEST(test_worker_then_loop_in_order)
{
	brk_loop *loop = brk_loop_new();
	ck_assert_ptr_nonnull(loop);
	brk_flusher fl;
	memset(&fl, 0, sizeof(fl));
	ck_assert_int_eq(brk_flusher_start(&fl, loop), 0);
	ck_assert_int_eq(brk_flusher_start(&fl, loop), 0); /* no-op */
	record r;
	record_init(&r, loop, NJOBS);
	job_arg a[NJOBS];
	for (int i = 0; i < NJOBS; i++) {
		a[i] = (job_arg){ &r, i, i == 3 ? -28 : 0 };
		ck_assert_int_eq(brk_flusher_work(&fl, work, &a[i], done, &a[i]), 0);
	}
	/* nothing completes before the loop runs */
	ck_assert_int_eq(r.ndone, 0);
	uint64_t t = brk_timer_add(loop, 10000, on_timeout, NULL);
	brk_loop_run(loop);
	brk_timer_cancel(loop, t);
	ck_assert_int_eq(r.ndone, NJOBS);
	ck_assert_int_eq(r.worked, NJOBS);
	ck_assert(r.work_off_loop);
	ck_assert(r.done_on_loop);
	for (int i = 0; i < NJOBS; i++)
		ck_assert_int_eq(r.order[i], i);
	brk_flusher_stop(&fl);
	ck_assert(!fl.started);
	brk_loop_free(loop);
}
END_TEST

START_TEST(test_stop_runs_owed_completions)
{
	brk_loop *loop = brk_loop_new();
	brk_flusher fl;
	memset(&fl, 0, sizeof(fl));
	ck_assert_int_eq(brk_flusher_start(&fl, loop), 0);
	record r;
	record_init(&r, loop, -1);
	job_arg a[NJOBS];
	for (int i = 0; i < NJOBS; i++) {
		a[i] = (job_arg){ &r, i, 0 };
		ck_assert_int_eq(brk_flusher_work(&fl, work, &a[i], done, &a[i]), 0);
	}
	/* The loop never runs: stop finishes the queue and runs every
	 * completion, on this (the loop's) thread. */
	brk_flusher_stop(&fl);
	ck_assert_int_eq(r.worked, NJOBS);
	ck_assert_int_eq(r.ndone, NJOBS);
	ck_assert(r.done_on_loop);
	for (int i = 0; i < NJOBS; i++)
		ck_assert_int_eq(r.order[i], i);
	/* stopped: started again, it works as before */
	ck_assert_int_eq(brk_flusher_start(&fl, loop), 0);
	job_arg b = { &r, 99, 0 };
	ck_assert_int_eq(brk_flusher_work(&fl, work, &b, done, &b), 0);
	brk_flusher_stop(&fl);
	ck_assert_int_eq(r.order[NJOBS], 99);
	brk_loop_free(loop);
}
END_TEST

START_TEST(test_two_flushers)
{
	brk_loop *loop = brk_loop_new();
	brk_flusher f1, f2;
	memset(&f1, 0, sizeof(f1));
	memset(&f2, 0, sizeof(f2));
	ck_assert_int_eq(brk_flusher_start(&f1, loop), 0);
	ck_assert_int_eq(brk_flusher_start(&f2, loop), 0);
	ck_assert(!pthread_equal(f1.thread, f2.thread));
	record r1, r2;
	record_init(&r1, NULL, 0);
	record_init(&r2, NULL, 0);
	job_arg a1 = { &r1, 1, 0 }, a2 = { &r2, 2, 0 };
	ck_assert_int_eq(brk_flusher_work(&f1, work, &a1, done, &a1), 0);
	ck_assert_int_eq(brk_flusher_work(&f2, work, &a2, done, &a2), 0);
	/* stopping one leaves the other's job where it is */
	brk_flusher_stop(&f1);
	ck_assert_int_eq(r1.ndone, 1);
	ck_assert_int_eq(r2.ndone, 0);
	ck_assert(f2.started);
	brk_flusher_stop(&f2);
	ck_assert_int_eq(r2.ndone, 1);
	ck_assert(r1.work_off_loop && r2.work_off_loop);
	brk_loop_free(loop);
}
END_TEST

START_TEST(test_checkpoint_job)
{
	char dir[] = "/tmp/samsa-test-flush-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/recovery-point-offset-checkpoint", dir);
	brk_loop *loop = brk_loop_new();
	brk_flusher fl;
	memset(&fl, 0, sizeof(fl));
	ck_assert_int_eq(brk_flusher_start(&fl, loop), 0);
	logdir_checkpoint_entry *e = calloc(2, sizeof(*e));
	ck_assert_ptr_nonnull(e);
	snprintf(e[0].topic, sizeof(e[0].topic), "a");
	e[0].partition = 0;
	e[0].offset = 42;
	snprintf(e[1].topic, sizeof(e[1].topic), "b");
	e[1].partition = 3;
	e[1].offset = 7;
	record r;
	record_init(&r, loop, -1);
	job_arg a = { &r, 1, 0 };
	ck_assert_int_eq(brk_flusher_checkpoint(&fl, path, e, 2, done, &a), 0);
	brk_flusher_stop(&fl);
	ck_assert_int_eq(r.ndone, 1);
	ck_assert_int_eq(r.last_err, 0);
	logdir_checkpoint_entry *got = NULL;
	int n = 0;
	ck_assert_int_eq(logdir_checkpoint_read(path, &got, &n), 0);
	ck_assert_int_eq(n, 2);
	int64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += got[i].offset;
	ck_assert_int_eq(sum, 49);
	free(got);
	unlink(path);
	rmdir(dir);
	brk_loop_free(loop);
}
END_TEST

/* The shutdown's pool: every job handed to it runs (each log's recovery
 * point reaches its end), with no thread, with fewer threads than jobs and
 * with more; a job past max_jobs is refused and stays the caller's. */
START_TEST(test_flush_pool)
{
	char dir[] = "/tmp/samsa-test-flush-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	log_config cfg;
	log_config_defaults(&cfg);
	enum { NLOGS = 5 };
	log_partition *lp[NLOGS];
	for (int threads = 0; threads <= 8; threads += 4) {
		log_flush_job *jobs[NLOGS];
		brk_flush_pool *pool = brk_flush_pool_start(threads, NLOGS - 1);
		ck_assert_ptr_nonnull(pool);
		for (int i = 0; i < NLOGS; i++) {
			char pdir[128];
			snprintf(pdir, sizeof(pdir), "%s/t-%d", dir, i);
			ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 0, &lp[i]), 0);
			int64_t offset;
			ck_assert_int_eq(log_append_control(lp[i], 1, 0, 0, true, 0, 0, &offset), 0);
			ck_assert_int_eq(log_recovery_point(lp[i]), 0);
			ck_assert_int_eq(log_flush_begin(lp[i], &jobs[i]), 0);
			ck_assert(!log_flush_job_empty(jobs[i]));
			ck_assert_int_eq(brk_flush_pool_add(pool, jobs[i]), i < NLOGS - 1 ? 0 : -ENOSPC);
		}
		log_flush_run(jobs[NLOGS - 1]);
		brk_flush_pool_finish(pool);
		for (int i = 0; i < NLOGS; i++) {
			ck_assert_int_eq(log_flush_end(lp[i], jobs[i]), 0);
			ck_assert_int_eq(log_recovery_point(lp[i]), log_end_offset(lp[i]));
			log_delete(lp[i]);
		}
	}
	brk_flush_pool_finish(brk_flush_pool_start(2, 0));
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("flush");
	TCase *tc = tcase_create("flush");
	tcase_add_test(tc, test_not_started_runs_inline);
	tcase_add_test(tc, test_worker_then_loop_in_order);
	tcase_add_test(tc, test_stop_runs_owed_completions);
	tcase_add_test(tc, test_two_flushers);
	tcase_add_test(tc, test_checkpoint_job);
	tcase_add_test(tc, test_flush_pool);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
