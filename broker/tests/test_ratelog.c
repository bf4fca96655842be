/*
 * test_ratelog.c - the log line limiter: a burst per window, the count of
 * dropped lines handed to the next admitted line or, when none follows,
 * taken from the untold list after the window, and a new window after
 * BRK_RATELOG_WINDOW_MS.
 */
#include <check.h>
#include <stdint.h>

#include "broker/ratelog.h"

START_TEST(test_burst_then_drop_then_new_window)
{
	brk_ratelog rl = BRK_RATELOG_INIT;
	long dropped = -1;
	int64_t t0 = 1000;
	for (int i = 0; i < BRK_RATELOG_BURST; i++) {
		ck_assert(brk_ratelog_admit(&rl, t0 + i, &dropped));
		ck_assert_int_eq(dropped, 0);
	}
	/* A hostile client's next thousand lines in the same window: dropped. */
	for (int i = 0; i < 1000; i++)
		ck_assert(!brk_ratelog_admit(&rl, t0 + BRK_RATELOG_WINDOW_MS - 1, &dropped));
	/* The window ends: the first line says how many went. */
	ck_assert(brk_ratelog_admit(&rl, t0 + BRK_RATELOG_WINDOW_MS, &dropped));
	ck_assert_int_eq(dropped, 1000);
	ck_assert(brk_ratelog_admit(&rl, t0 + BRK_RATELOG_WINDOW_MS + 1, &dropped));
	ck_assert_int_eq(dropped, 0);
}
END_TEST

START_TEST(test_quiet_source_never_dropped)
{
	/* One line every second for a minute: nothing is ever dropped. */
	brk_ratelog rl = BRK_RATELOG_INIT;
	long dropped;
	for (int i = 0; i < 60; i++) {
		ck_assert(brk_ratelog_admit(&rl, (int64_t)i * 1000, &dropped));
		ck_assert_int_eq(dropped, 0);
	}
}
END_TEST

START_TEST(test_monotonic_clock_near_zero)
{
	/* The first window may start at 0 (INT64_MIN marks "none yet"). */
	brk_ratelog rl = BRK_RATELOG_INIT;
	long dropped;
	for (int i = 0; i < BRK_RATELOG_BURST; i++)
		ck_assert(brk_ratelog_admit(&rl, 0, &dropped));
	ck_assert(!brk_ratelog_admit(&rl, 0, &dropped));
	ck_assert(brk_ratelog_admit(&rl, BRK_RATELOG_WINDOW_MS, &dropped));
	ck_assert_int_eq(dropped, 1);
}
END_TEST

/* Take every limiter off the untold list, so none outlives its test. */
static void drain_untold(void)
{
	long dropped;
	while (brk_ratelog_next_untold(INT64_MAX, &dropped))
		;
}

START_TEST(test_count_of_stopped_flood_is_untold_until_window_ends)
{
	brk_ratelog rl = BRK_RATELOG_INIT;
	long dropped = -1;
	int64_t t0 = 5000;
	for (int i = 0; i < BRK_RATELOG_BURST + 7; i++)
		brk_ratelog_admit(&rl, t0, &dropped);
	/* The flood stops. While its window lasts the count may still go
	 * with a next line, so it is not told yet. */
	ck_assert_ptr_null(brk_ratelog_next_untold(t0 + BRK_RATELOG_WINDOW_MS - 1, &dropped));
	ck_assert_ptr_eq(brk_ratelog_next_untold(t0 + BRK_RATELOG_WINDOW_MS, &dropped), &rl);
	ck_assert_int_eq(dropped, 7);
	/* Told once: neither the list nor the next admitted line repeat it. */
	ck_assert_ptr_null(brk_ratelog_next_untold(INT64_MAX, &dropped));
	ck_assert(brk_ratelog_admit(&rl, t0 + BRK_RATELOG_WINDOW_MS + 1, &dropped));
	ck_assert_int_eq(dropped, 0);
	drain_untold();
}
END_TEST

START_TEST(test_count_told_by_next_line_is_not_told_again)
{
	brk_ratelog a = BRK_RATELOG_INIT, b = BRK_RATELOG_INIT;
	long dropped;
	for (int i = 0; i < BRK_RATELOG_BURST + 3; i++) {
		brk_ratelog_admit(&a, 0, &dropped);
		brk_ratelog_admit(&b, 0, &dropped);
	}
	/* a's next line tells its 3; b's flood just stopped. */
	ck_assert(brk_ratelog_admit(&a, BRK_RATELOG_WINDOW_MS, &dropped));
	ck_assert_int_eq(dropped, 3);
	ck_assert_ptr_eq(brk_ratelog_next_untold(BRK_RATELOG_WINDOW_MS, &dropped), &b);
	ck_assert_int_eq(dropped, 3);
	ck_assert_ptr_null(brk_ratelog_next_untold(INT64_MAX, &dropped));
	/* Both can join the list again with a new flood. */
	for (int i = 0; i < BRK_RATELOG_BURST + 1; i++)
		brk_ratelog_admit(&a, 2 * BRK_RATELOG_WINDOW_MS, &dropped);
	ck_assert_ptr_eq(brk_ratelog_next_untold(3 * BRK_RATELOG_WINDOW_MS, &dropped), &a);
	ck_assert_int_eq(dropped, 1);
	drain_untold();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ratelog");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_burst_then_drop_then_new_window);
	tcase_add_test(tc, test_quiet_source_never_dropped);
	tcase_add_test(tc, test_monotonic_clock_near_zero);
	tcase_add_test(tc, test_count_of_stopped_flood_is_untold_until_window_ends);
	tcase_add_test(tc, test_count_told_by_next_line_is_not_told_again);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
