/*
 * test_reassign.c - the replica sets of a reassignment (controller/reassign.h)
 * against Kafka's ReplicaAssignment examples and validateReplicas.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "controller/reassign.h"
#include "protocol/err.h"

#define LIST(...) ((int32_t[]){ __VA_ARGS__ })
#define N(...) ((int32_t)(sizeof((int32_t[]){ __VA_ARGS__ }) / sizeof(int32_t)))

static void ck_list(const int32_t *v, int32_t n, const int32_t *want, int32_t nwant)
{
	ck_assert_int_eq(n, nwant);
	for (int32_t i = 0; i < n; i++)
		ck_assert_int_eq(v[i], want[i]);
}

/* KafkaController's example: ORS {1,2,3} to TRS {4,5,6} gives RS
 * {4,5,6,1,2,3}, AR {4,5,6}, RR {1,2,3}; and [1,2,3] to [3,4,2] encodes
 * as [3,4,2,1]. */
START_TEST(test_reassign_to)
{
	ctl_reassign_sets cur = { LIST(1, 2, 3), 3, NULL, 0, NULL, 0 }, out;
	ck_assert(!ctl_reassign_in_progress(&cur));
	ck_assert_int_eq(ctl_reassign_to(&cur, LIST(4, 5, 6), 3, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(4, 5, 6, 1, 2, 3), 6);
	ck_list(out.adding, out.nadding, LIST(4, 5, 6), 3);
	ck_list(out.removing, out.nremoving, LIST(1, 2, 3), 3);
	ck_assert(ctl_reassign_in_progress(&out));
	int32_t t[8];
	ck_list(t, ctl_reassign_target(&out, t), LIST(4, 5, 6), 3);
	ck_list(t, ctl_reassign_origin(&out, t), LIST(1, 2, 3), 3);
	ctl_reassign_sets_free(&out);

	ck_assert_int_eq(ctl_reassign_to(&cur, LIST(3, 4, 2), 3, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(3, 4, 2, 1), 4);
	ck_list(out.adding, out.nadding, LIST(4), 1);
	ck_list(out.removing, out.nremoving, LIST(1), 1);
	ctl_reassign_sets_free(&out);

	/* a new order alone: nothing added or removed, done at once */
	ck_assert_int_eq(ctl_reassign_to(&cur, LIST(2, 3, 1), 3, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(2, 3, 1), 3);
	ck_assert(!ctl_reassign_in_progress(&out));
	ctl_reassign_sets_free(&out);

	/* a replication factor raised 1 -> 3 */
	ctl_reassign_sets one = { LIST(1), 1, NULL, 0, NULL, 0 };
	ck_assert_int_eq(ctl_reassign_to(&one, LIST(1, 2, 3), 3, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(1, 2, 3), 3);
	ck_list(out.adding, out.nadding, LIST(2, 3), 2);
	ck_assert_int_eq(out.nremoving, 0);
	ctl_reassign_sets_free(&out);
}
END_TEST

/* Replacing a reassignment in progress keeps ORS; reverting to ORS
 * (a cancellation) ends it. */
START_TEST(test_replace_and_cancel)
{
	/* {1,2} -> {2,3} in progress: RS {2,3,1}, AR {3}, RR {1} */
	ctl_reassign_sets cur = { LIST(2, 3, 1), 3, LIST(3), 1, LIST(1), 1 }, out;
	int32_t o[8];
	int32_t no = ctl_reassign_origin(&cur, o);
	ck_list(o, no, LIST(2, 1), 2);
	ck_assert_int_eq(ctl_reassign_to(&cur, o, no, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(2, 1), 2);
	ck_assert(!ctl_reassign_in_progress(&out));
	ctl_reassign_sets_free(&out);
	/* replaced by {2,4}: 3 is no longer anywhere */
	ck_assert_int_eq(ctl_reassign_to(&cur, LIST(2, 4), 2, &out), 0);
	ck_list(out.replicas, out.nreplicas, LIST(2, 4, 1), 3);
	ck_list(out.adding, out.nadding, LIST(4), 1);
	ck_list(out.removing, out.nremoving, LIST(1), 1);
	ck_assert(!ctl_reassign_equal(&cur, &out));
	ctl_reassign_sets_free(&out);
	/* the same target again changes nothing */
	ck_assert_int_eq(ctl_reassign_to(&cur, LIST(2, 3), 2, &out), 0);
	ck_assert(ctl_reassign_equal(&cur, &out));
	ctl_reassign_sets_free(&out);
	ck_assert(ctl_reassign_all_in(LIST(2, 3), 2, LIST(1, 3, 2), 3));
	ck_assert(!ctl_reassign_all_in(LIST(2, 3), 2, LIST(1, 2), 2));
}
END_TEST

static bool live_123(const void *arg, int32_t id)
{
	(void)arg;
	return id >= 1 && id <= 3;
}

START_TEST(test_validate)
{
	char msg[256];
	ctl_reassign_sets cur = { LIST(1, 2, 4), 3, NULL, 0, NULL, 0 };
	ck_assert_int_eq(ctl_reassign_validate(LIST(2, 3, 1), 3, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_NONE);
	/* 4 is down but already a replica: not added, so accepted */
	ck_assert_int_eq(ctl_reassign_validate(LIST(4, 1), 2, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_NONE);
	ck_assert_int_eq(ctl_reassign_validate(NULL, 0, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "Empty replica list specified in partition reassignment.");
	ck_assert_int_eq(ctl_reassign_validate(LIST(1, 2, 1), 3, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert(strstr(msg, "Duplicate replica ids") != NULL);
	ck_assert_int_eq(ctl_reassign_validate(LIST(1, -2), 2, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert(strstr(msg, "Invalid broker id") != NULL);
	ck_assert_int_eq(ctl_reassign_validate(LIST(1, 5), 2, &cur, live_123, NULL, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert(strstr(msg, "not alive") != NULL);
	/* an unknown partition: every target is added, so checked for life */
	ck_assert_int_eq(ctl_reassign_validate(LIST(4), 1, NULL, live_123, NULL, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(ctl_reassign_validate(LIST(3), 1, NULL, live_123, NULL, msg, sizeof(msg)),
			 KERR_NONE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reassign");
	TCase *tc = tcase_create("sets");
	tcase_add_test(tc, test_reassign_to);
	tcase_add_test(tc, test_replace_and_cancel);
	tcase_add_test(tc, test_validate);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
