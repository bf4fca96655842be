/*
 * test_assign.c - replica placement (assign.h) against the tables of
 * Kafka's own tests of AdminUtils.assignReplicasToBrokers (AdminZkClientTest
 * "testReplicaAssignment" and AdminRackAwareTest
 * "testGetRackAlternatedBrokerListAndAssignReplicasToBrokers", fixed start
 * index 0), and the properties that hold for any start: distinct replicas,
 * leaders spread evenly, racks spread when every broker has one.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/assign.h"

START_TEST(test_rack_unaware_kafka_table)
{
	ctl_assign_broker b[] = { { 0, NULL }, { 1, NULL }, { 2, NULL }, { 3, NULL }, { 4, NULL } };
	int32_t out[10 * 3];
	ck_assert_int_eq(ctl_assign_replicas(b, 5, 10, 3, 0, 0, out), 0);
	static const int32_t want[10][3] = {
		{ 0, 1, 2 }, { 1, 2, 3 }, { 2, 3, 4 }, { 3, 4, 0 }, { 4, 0, 1 },
		{ 0, 2, 3 }, { 1, 3, 4 }, { 2, 4, 0 }, { 3, 0, 1 }, { 4, 1, 2 },
	};
	for (int p = 0; p < 10; p++)
		for (int r = 0; r < 3; r++)
			ck_assert_msg(out[p * 3 + r] == want[p][r], "partition %d replica %d: %d", p, r,
				      out[p * 3 + r]);
	/* the broker order given does not matter: they are sorted by id */
	ctl_assign_broker shuffled[] = { { 3, NULL }, { 0, NULL }, { 4, NULL }, { 1, NULL },
					 { 2, NULL } };
	int32_t again[10 * 3];
	ck_assert_int_eq(ctl_assign_replicas(shuffled, 5, 10, 3, 0, 0, again), 0);
	ck_assert(memcmp(out, again, sizeof(out)) == 0);
}
END_TEST

START_TEST(test_rack_aware_kafka_table)
{
	ctl_assign_broker b[] = { { 0, "rack1" }, { 1, "rack3" }, { 2, "rack3" },
				  { 3, "rack2" }, { 4, "rack2" }, { 5, "rack1" } };
	int32_t out[7 * 3];
	ck_assert_int_eq(ctl_assign_replicas(b, 6, 7, 3, 0, 0, out), 0);
	static const int32_t want[7][3] = {
		{ 0, 3, 1 }, { 3, 1, 5 }, { 1, 5, 4 }, { 5, 4, 2 }, { 4, 2, 0 }, { 2, 0, 3 },
		{ 0, 4, 2 },
	};
	for (int p = 0; p < 7; p++)
		for (int r = 0; r < 3; r++)
			ck_assert_msg(out[p * 3 + r] == want[p][r], "partition %d replica %d: %d", p, r,
				      out[p * 3 + r]);
}
END_TEST

/* Continuing a topic (CreatePartitions): the walk starts at
 * start_partition, but the shift only grows at multiples of the broker
 * count met in this call (Kafka's nextReplicaShift starts again), so the
 * tail differs from placing every partition at once. */
START_TEST(test_start_partition)
{
	ctl_assign_broker b[] = { { 0, NULL }, { 1, NULL }, { 2, NULL }, { 3, NULL }, { 4, NULL } };
	int32_t tail[5 * 3];
	ck_assert_int_eq(ctl_assign_replicas(b, 5, 5, 3, 0, 6, tail), 0);
	static const int32_t want[5][3] = {
		{ 1, 2, 3 }, { 2, 3, 4 }, { 3, 4, 0 }, { 4, 0, 1 }, { 0, 2, 3 },
	};
	for (int p = 0; p < 5; p++)
		for (int r = 0; r < 3; r++)
			ck_assert_msg(tail[p * 3 + r] == want[p][r], "partition %d replica %d: %d",
				      6 + p, r, tail[p * 3 + r]);
}
END_TEST

START_TEST(test_random_properties)
{
	ctl_assign_broker b[] = { { 1, NULL }, { 2, NULL }, { 3, NULL } };
	for (int round = 0; round < 50; round++) {
		int32_t out[6 * 3];
		ck_assert_int_eq(ctl_assign_replicas(b, 3, 6, 3, -1, 0, out), 0);
		int leaders[4] = { 0 };
		for (int p = 0; p < 6; p++) {
			int32_t *row = &out[p * 3];
			ck_assert(row[0] != row[1] && row[1] != row[2] && row[0] != row[2]);
			for (int r = 0; r < 3; r++)
				ck_assert(row[r] >= 1 && row[r] <= 3);
			leaders[row[0]]++;
		}
		for (int id = 1; id <= 3; id++)
			ck_assert_int_eq(leaders[id], 2); /* round robin */
	}
	/* racks: with 3 racks and rf 3, every partition has one replica per rack */
	ctl_assign_broker rb[] = { { 1, "a" }, { 2, "a" }, { 3, "b" }, { 4, "b" }, { 5, "c" },
				   { 6, "c" } };
	for (int round = 0; round < 50; round++) {
		int32_t out[12 * 3];
		ck_assert_int_eq(ctl_assign_replicas(rb, 6, 12, 3, -1, 0, out), 0);
		for (int p = 0; p < 12; p++) {
			char seen[3] = { 0 };
			for (int r = 0; r < 3; r++) {
				int32_t id = out[p * 3 + r];
				seen[(id - 1) / 2]++;
			}
			ck_assert(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
		}
	}
	/* some brokers without a rack: placed without racks, still valid */
	ctl_assign_broker mixed[] = { { 1, "a" }, { 2, NULL }, { 3, "" } };
	int32_t out[3 * 2];
	ck_assert_int_eq(ctl_assign_replicas(mixed, 3, 3, 2, 0, 0, out), 0);
	ck_assert_int_eq(out[0], 1);
	ck_assert_int_eq(out[2], 2);
	ck_assert_int_eq(out[4], 3);
}
END_TEST

START_TEST(test_refused)
{
	ctl_assign_broker b[] = { { 1, NULL }, { 2, NULL } };
	int32_t out[16];
	ck_assert_int_eq(ctl_assign_replicas(b, 2, 1, 3, 0, 0, out), -EINVAL);
	ck_assert_int_eq(ctl_assign_replicas(b, 2, 0, 1, 0, 0, out), -EINVAL);
	ck_assert_int_eq(ctl_assign_replicas(b, 2, 1, 0, 0, 0, out), -EINVAL);
	ck_assert_int_eq(ctl_assign_replicas(b, 0, 1, 1, 0, 0, out), -EINVAL);
	ck_assert_int_eq(ctl_assign_replicas(b, 2, 1, 1, 0, -1, out), -EINVAL);
	/* one broker, one replica */
	ck_assert_int_eq(ctl_assign_replicas(b, 1, 4, 1, -1, 0, out), 0);
	for (int p = 0; p < 4; p++)
		ck_assert_int_eq(out[p], 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("assign");
	TCase *tc = tcase_create("assign");
	tcase_add_test(tc, test_rack_unaware_kafka_table);
	tcase_add_test(tc, test_rack_aware_kafka_table);
	tcase_add_test(tc, test_start_partition);
	tcase_add_test(tc, test_random_properties);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
