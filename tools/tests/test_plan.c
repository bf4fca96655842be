/*
 * test_plan.c - the drain plan (plan.h): the drained broker's slot goes to
 * another live broker in place, replication factors are kept, untouched
 * partitions stay, replacements spread by load (then first slots, then
 * id), and a partition with nowhere to go fails the plan.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tools/plan.h"

#define W 3

/* parts of width w from rows (n x w), targets in out (n x w). */
static void setup(adm_plan_partition *p, int n, int w, const int32_t *rows, int32_t *out)
{
	for (int i = 0; i < n; i++) {
		p[i].nreplicas = w;
		p[i].replicas = rows + i * w;
		p[i].target = out + i * w;
		p[i].moved = -1;
	}
}

START_TEST(test_in_place)
{
	const int32_t rows[] = { 4, 1, 2, 1, 4, 3, 2, 3, 1, 3, 4, 1 };
	int32_t out[12];
	adm_plan_partition p[4];
	setup(p, 4, W, rows, out);
	const int32_t live[] = { 1, 2, 3, 4 };
	ck_assert_int_eq(adm_plan_drain(p, 4, 4, live, 4), 0);
	const int32_t want[] = { 3, 1, 2, 1, 2, 3, 2, 3, 1, 3, 2, 1 };
	ck_assert_mem_eq(out, want, sizeof(want));
	ck_assert_int_eq(p[0].moved, 1);
	ck_assert_int_eq(p[1].moved, 1);
	ck_assert_int_eq(p[2].moved, 0);
	ck_assert_int_eq(p[3].moved, 1);
	/* the current lists are untouched */
	ck_assert_int_eq(rows[0], 4);
}
END_TEST

START_TEST(test_spread)
{
	/* six single-replica partitions on broker 9, three others empty */
	const int32_t rows[] = { 9, 9, 9, 9, 9, 9 };
	int32_t out[6];
	adm_plan_partition p[6];
	setup(p, 6, 1, rows, out);
	const int32_t live[] = { 3, 1, 2 }; /* the drained broker need not be listed */
	ck_assert_int_eq(adm_plan_drain(p, 6, 9, live, 3), 0);
	int count[4] = { 0 };
	for (int i = 0; i < 6; i++) {
		ck_assert(out[i] >= 1 && out[i] <= 3);
		count[out[i]]++;
	}
	ck_assert_int_eq(count[1], 2);
	ck_assert_int_eq(count[2], 2);
	ck_assert_int_eq(count[3], 2);
	ck_assert_int_eq(out[0], 1); /* ties: the lowest id first */
}
END_TEST

START_TEST(test_first_slots)
{
	/* 1 and 2 hold two replicas each, but 1 leads both: the drained
	 * preferred leader's slot goes to 2 */
	const int32_t rows[] = { 1, 2, 1, 2, 3, 9 };
	int32_t out[6];
	adm_plan_partition p[3];
	setup(p, 3, 2, rows, out);
	/* partition 2 is [3, 9] (9 is not live): 3 holds its first slot */
	const int32_t live[] = { 1, 2, 3 };
	ck_assert_int_eq(adm_plan_drain(p, 3, 3, live, 3), 0);
	ck_assert_int_eq(out[4], 2);
	ck_assert_int_eq(out[5], 9);
	ck_assert_int_eq(p[0].moved, 0);
}
END_TEST

START_TEST(test_impossible)
{
	const int32_t rows[] = { 1, 2, 4, 1, 2, 3 };
	int32_t out[6];
	adm_plan_partition p[2];
	setup(p, 2, W, rows, out);
	const int32_t live[] = { 1, 2, 3 };
	/* draining 3: partition 1 has 3 replicas and two brokers remain */
	ck_assert_int_eq(adm_plan_drain(p, 2, 3, live, 3), 2);
	ck_assert_int_eq(p[0].moved, 0);
	/* draining 4 (not live) works: 3 takes its slot */
	ck_assert_int_eq(adm_plan_drain(p, 2, 4, live, 3), 0);
	ck_assert_int_eq(out[2], 3);
	ck_assert_int_eq(p[1].moved, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin_plan");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_in_place);
	tcase_add_test(tc, test_spread);
	tcase_add_test(tc, test_first_slots);
	tcase_add_test(tc, test_impossible);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
