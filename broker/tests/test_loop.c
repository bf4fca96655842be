/*
 * test_loop.c - the event loop: timer order and cancellation (including a
 * stale id after its slot was reused), file events on a pipe, the
 * before-sleep hook, and that a timer re-arming itself with delay 0 does not
 * starve file events.
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/loop.h"

#define MAXLOG 64
static int order[MAXLOG];
static int norder;

static void record(brk_loop *loop, void *arg)
{
	(void)loop;
	if (norder < MAXLOG)
		order[norder++] = (int)(intptr_t)arg;
}

static void stop(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

START_TEST(test_timer_order)
{
	brk_loop *loop = brk_loop_new();
	ck_assert_ptr_nonnull(loop);
	norder = 0;
	/* Same deadline: first in, first out; shorter delays first. */
	brk_timer_add(loop, 30, record, (void *)3);
	brk_timer_add(loop, 10, record, (void *)1);
	brk_timer_add(loop, 20, record, (void *)2);
	brk_timer_add(loop, 0, record, (void *)10);
	brk_timer_add(loop, 0, record, (void *)11);
	brk_timer_add(loop, 40, stop, NULL);
	int64_t t0 = brk_mono_ms();
	brk_loop_run(loop);
	int64_t took = brk_mono_ms() - t0;
	ck_assert_int_eq(norder, 5);
	int want[] = { 10, 11, 1, 2, 3 };
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(order[i], want[i]);
	ck_assert_int_ge(took, 39);
	brk_loop_free(loop);
}
END_TEST

START_TEST(test_timer_cancel)
{
	brk_loop *loop = brk_loop_new();
	norder = 0;
	uint64_t ids[40];
	for (int i = 0; i < 40; i++)
		ids[i] = brk_timer_add(loop, 5 + i % 7, record, (void *)(intptr_t)i);
	/* Cancel the odd ones. */
	for (int i = 1; i < 40; i += 2)
		brk_timer_cancel(loop, ids[i]);
	/* Cancelling twice, and an id that was never given, change nothing. */
	brk_timer_cancel(loop, ids[1]);
	brk_timer_cancel(loop, 0);
	brk_timer_cancel(loop, UINT64_C(0xffffffff00000fff));
	brk_timer_add(loop, 30, stop, NULL);
	brk_loop_run(loop);
	ck_assert_int_eq(norder, 20);
	for (int i = 0; i < norder; i++)
		ck_assert_msg(order[i] % 2 == 0, "cancelled timer %d ran", order[i]);

	/* A fired timer's id must not cancel the timer that reuses its slot. */
	norder = 0;
	uint64_t a = brk_timer_add(loop, 0, record, (void *)100);
	brk_timer_add(loop, 5, stop, NULL);
	brk_loop_run(loop);
	ck_assert_int_eq(norder, 1);
	uint64_t b = brk_timer_add(loop, 0, record, (void *)101);
	ck_assert(a != b);
	brk_timer_cancel(loop, a); /* stale */
	brk_timer_add(loop, 5, stop, NULL);
	brk_loop_run(loop);
	ck_assert_int_eq(norder, 2);
	ck_assert_int_eq(order[1], 101);
	brk_loop_free(loop);
}
END_TEST

typedef struct io_state {
	int rfd;
	int reads;
	int rearms;
	char got[16];
} io_state;

static void on_read(brk_loop *loop, int fd, int events, void *arg)
{
	io_state *s = arg;
	ck_assert_int_eq(events, BRK_READABLE);
	ssize_t n = read(fd, s->got, sizeof(s->got) - 1);
	ck_assert_int_gt(n, 0);
	s->got[n] = '\0';
	s->reads++;
	brk_loop_unwatch(loop, fd);
	brk_loop_stop(loop);
}

static void rearm(brk_loop *loop, void *arg)
{
	io_state *s = arg;
	s->rearms++;
	brk_timer_add(loop, 0, rearm, s);
}

static void fail_timeout(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
	ck_abort_msg("file event never delivered");
}

START_TEST(test_io_not_starved)
{
	brk_loop *loop = brk_loop_new();
	int p[2];
	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	io_state s = { .rfd = p[0] };
	ck_assert_int_eq(brk_loop_watch(loop, p[0], BRK_READABLE, on_read, &s), 0);
	ck_assert_int_eq(write(p[1], "hello", 5), 5);
	brk_timer_add(loop, 0, rearm, &s);
	uint64_t guard = brk_timer_add(loop, 2000, fail_timeout, NULL);
	brk_loop_run(loop);
	brk_timer_cancel(loop, guard);
	ck_assert_int_eq(s.reads, 1);
	ck_assert_str_eq(s.got, "hello");
	close(p[0]);
	close(p[1]);
	brk_loop_free(loop);
}
END_TEST

static int sleeps;
static void before_sleep(brk_loop *loop, void *arg)
{
	(void)arg;
	if (++sleeps == 3)
		brk_loop_stop(loop);
}

static int iterations;
static void count_iteration(brk_loop *loop, void *arg)
{
	(void)loop;
	(void)arg;
	iterations++;
}

/* One timer pending at a time, each 1 ms after the last fired, so every
 * iteration of the loop has to sleep (timers cannot coalesce into one
 * iteration on a slow machine). */
static bool ticking;
static void rearm_1ms(brk_loop *loop, void *arg)
{
	if (ticking)
		brk_timer_add(loop, 1, rearm_1ms, arg);
}

START_TEST(test_before_sleep_and_watch_zero)
{
	brk_loop *loop = brk_loop_new();
	sleeps = 0;
	brk_loop_set_before_sleep(loop, before_sleep, NULL);
	ticking = true;
	brk_timer_add(loop, 1, rearm_1ms, NULL);
	brk_loop_run(loop);
	ticking = false;
	ck_assert_int_eq(sleeps, 3);
	brk_loop_set_before_sleep(loop, NULL, NULL);

	/* A watched fd with mask 0 delivers nothing, even once readable; a
	 * hang-up there does not make the loop spin. */
	int p[2];
	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	io_state s = { .rfd = p[0] };
	ck_assert_int_eq(brk_loop_watch(loop, p[0], 0, on_read, &s), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	close(p[1]);
	iterations = 0;
	brk_loop_set_before_sleep(loop, count_iteration, NULL);
	brk_timer_add(loop, 50, stop, NULL);
	brk_loop_run(loop);
	brk_loop_set_before_sleep(loop, NULL, NULL);
	ck_assert_int_eq(s.reads, 0);
	ck_assert_msg(iterations < 10, "the loop spun %d times on an unwatched hang-up", iterations);
	/* Watching again delivers it. */
	ck_assert_int_eq(brk_loop_watch(loop, p[0], BRK_READABLE, on_read, &s), 0);
	uint64_t guard = brk_timer_add(loop, 2000, fail_timeout, NULL);
	brk_loop_run(loop);
	brk_timer_cancel(loop, guard);
	ck_assert_int_eq(s.reads, 1);
	close(p[0]);
	brk_loop_free(loop);
}
END_TEST

START_TEST(test_clocks)
{
	int64_t w = brk_wall_ms();
	ck_assert_int_gt(w, 1600000000000LL); /* after 2020 */
	int64_t m1 = brk_mono_ms();
	usleep(20000);
	int64_t m2 = brk_mono_ms();
	ck_assert_int_ge(m2 - m1, 19);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("loop");
	tcase_add_test(tc, test_timer_order);
	tcase_add_test(tc, test_timer_cancel);
	tcase_add_test(tc, test_io_not_starved);
	tcase_add_test(tc, test_before_sleep_and_watch_zero);
	tcase_add_test(tc, test_clocks);
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
