/*
 * test_ratelog.c - the log line limiter: a burst per window, the count of
 * dropped lines handed to the next admitted line, and a new window after
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

int main(void)
{
	Suite *s = suite_create("ratelog");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_burst_then_drop_then_new_window);
	tcase_add_test(tc, test_quiet_source_never_dropped);
	tcase_add_test(tc, test_monotonic_clock_near_zero);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
