/*
 * test_elect.c - the election strategies and the leader imbalance of the
 * automatic rebalance (elect.h), without ZooKeeper: partitions are built by
 * hand and "online" is a set of broker ids.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/elect.h"

/* Brokers online: bit id of the mask. */
static bool online(const void *arg, int32_t id)
{
	uint32_t mask = *(const uint32_t *)arg;
	return id >= 0 && id < 32 && (mask >> id) & 1;
}

/* A partition state (leader_epoch 3) over static arrays. */
static ctl_partition part(int32_t *replicas, int32_t nr, int32_t leader, int32_t *isr,
			  int32_t nisr)
{
	return (ctl_partition){ .replicas = replicas, .nreplicas = nr, .leader = leader,
				.leader_epoch = 3, .isr = isr, .nisr = nisr };
}

START_TEST(test_preferred)
{
	int32_t r[] = { 2, 1, 3 }, isr_all[] = { 1, 2, 3 }, isr_13[] = { 1, 3 };
	uint32_t all = 0xe; /* 1, 2, 3 */
	ctl_partition p = part(r, 3, 1, isr_all, 3);
	ck_assert_int_eq(ctl_elect_preferred(&p, online, &all), 2);
	/* already leading: the strategy still names it (the caller says
	 * ELECTION_NOT_NEEDED before asking) */
	p.leader = 2;
	ck_assert_int_eq(ctl_elect_preferred(&p, online, &all), 2);
	/* not in the ISR, or not online: nobody (not the next replica) */
	p = part(r, 3, 1, isr_13, 2);
	ck_assert_int_eq(ctl_elect_preferred(&p, online, &all), CTL_NO_LEADER);
	uint32_t no2 = 0xa; /* 1, 3 */
	p = part(r, 3, 1, isr_all, 3);
	ck_assert_int_eq(ctl_elect_preferred(&p, online, &no2), CTL_NO_LEADER);
	/* no state yet */
	p.leader_epoch = -1;
	ck_assert_int_eq(ctl_elect_preferred(&p, online, &all), CTL_NO_LEADER);
}
END_TEST

START_TEST(test_offline)
{
	int32_t r[] = { 1, 2, 3 }, isr_123[] = { 1, 2, 3 }, isr_1[] = { 1 }, isr_31[] = { 3, 1 };
	int32_t out[4];
	int32_t n = -1;
	bool unclean = true;
	uint32_t only23 = 0xc;
	/* the first online ISR member in assignment order; ISR = its online
	 * members, in the ISR's order */
	ctl_partition p = part(r, 3, 1, isr_31, 2);
	ck_assert_int_eq(ctl_elect_offline(&p, false, online, &only23, out, &n, &unclean), 3);
	ck_assert(!unclean);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(out[0], 3);
	p = part(r, 3, 1, isr_123, 3);
	ck_assert_int_eq(ctl_elect_offline(&p, false, online, &only23, out, &n, &unclean), 2);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(out[0], 2);
	ck_assert_int_eq(out[1], 3);
	/* the ISR's only member is gone: clean finds nobody, unclean takes
	 * the first online replica with ISR [it] */
	p = part(r, 3, 1, isr_1, 1);
	n = -1;
	ck_assert_int_eq(ctl_elect_offline(&p, false, online, &only23, out, &n, &unclean),
			 CTL_NO_LEADER);
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(ctl_elect_offline(&p, true, online, &only23, out, &n, &unclean), 2);
	ck_assert(unclean);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(out[0], 2);
	/* unclean prefers a clean choice when there is one */
	p = part(r, 3, 1, isr_31, 2);
	ck_assert_int_eq(ctl_elect_offline(&p, true, online, &only23, out, &n, &unclean), 3);
	ck_assert(!unclean);
	/* nobody online */
	uint32_t none = 0;
	ck_assert_int_eq(ctl_elect_offline(&p, true, online, &none, out, &n, &unclean),
			 CTL_NO_LEADER);
}
END_TEST

/* A topic of n partitions over rows of 3 replicas; leaders given. */
static ctl_topic *topic(const char *name, int32_t n, const int32_t *rows, const int32_t *leaders)
{
	ctl_topic *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->npartitions = n;
	t->partitions = calloc((size_t)n, sizeof(*t->partitions));
	for (int32_t p = 0; p < n; p++) {
		ctl_partition *cp = &t->partitions[p];
		cp->partition = p;
		cp->nreplicas = 3;
		cp->replicas = malloc(3 * sizeof(int32_t));
		memcpy(cp->replicas, &rows[p * 3], 3 * sizeof(int32_t));
		cp->nisr = 3;
		cp->isr = malloc(3 * sizeof(int32_t));
		memcpy(cp->isr, &rows[p * 3], 3 * sizeof(int32_t));
		cp->leader = leaders[p];
		cp->leader_epoch = 1;
	}
	return t;
}

START_TEST(test_imbalance)
{
	/* 10 partitions preferring broker 1, 4 preferring 2 */
	int32_t rows[14 * 3], leaders[14];
	for (int p = 0; p < 14; p++) {
		int32_t first = p < 10 ? 1 : 2;
		rows[p * 3] = first;
		rows[p * 3 + 1] = first == 1 ? 2 : 1;
		rows[p * 3 + 2] = 3;
		leaders[p] = first;
	}
	leaders[0] = 2;  /* one of 1's led by 2: 10 % */
	leaders[10] = 3; /* one of 2's led by 3: 25 % */
	ctl_topic *t = topic("a", 14, rows, leaders);
	t->partitions[13].leader_epoch = -1; /* no state: counted, never "led by others" */
	t->partitions[13].leader = -1;
	ctl_topic *const topics[] = { t };
	ctl_imbalance *b;
	ck_assert_int_eq(ctl_imbalance_compute(topics, 1, &b), 2);
	ck_assert_int_eq(b[0].broker, 1);
	ck_assert_int_eq(b[0].preferred, 10);
	ck_assert_int_eq(b[0].led_by_others, 1);
	ck_assert_int_eq(b[1].broker, 2);
	ck_assert_int_eq(b[1].preferred, 4);
	ck_assert_int_eq(b[1].led_by_others, 1);
	/* above, strictly (Kafka's ratio > percentage / 100) */
	ck_assert(!ctl_imbalance_above(&b[0], 10));
	ck_assert(ctl_imbalance_above(&b[0], 9));
	ck_assert(ctl_imbalance_above(&b[1], 24));
	ck_assert(!ctl_imbalance_above(&b[1], 25));
	ck_assert(ctl_imbalance_above(&b[1], 0));
	free(b);

	uint32_t all = 0xe;
	ctl_partition_ref *v;
	/* 10 %: only broker 2 is above; its partition 10 goes back */
	ck_assert_int_eq(ctl_rebalance_pick(topics, 1, 10, online, &all, &v), 1);
	ck_assert_int_eq(v[0].topic, 0);
	ck_assert_int_eq(v[0].partition, 10);
	free(v);
	/* 5 %: both */
	ck_assert_int_eq(ctl_rebalance_pick(topics, 1, 5, online, &all, &v), 2);
	ck_assert_int_eq(v[0].partition, 0);
	ck_assert_int_eq(v[1].partition, 10);
	free(v);
	/* the preferred replica must be able to lead: 2 offline, or out of
	 * the ISR, and partition 10 stays where it is */
	uint32_t no2 = 0xa;
	ck_assert_int_eq(ctl_rebalance_pick(topics, 1, 5, online, &no2, &v), 1);
	ck_assert_int_eq(v[0].partition, 0);
	free(v);
	t->partitions[10].isr[0] = 3;
	t->partitions[10].isr[1] = 1;
	t->partitions[10].nisr = 2;
	ck_assert_int_eq(ctl_rebalance_pick(topics, 1, 5, online, &all, &v), 1);
	ck_assert_int_eq(v[0].partition, 0);
	free(v);
	/* balanced: nothing */
	t->partitions[0].leader = 1;
	ck_assert_int_eq(ctl_rebalance_pick(topics, 1, 0, online, &no2, &v), 0);
	ck_assert_ptr_null(v);
	ctl_topic_free(t);
}
END_TEST

/* An offline partition (leader -1) counts as led by another broker, and its
 * preferred replica takes it when it may (a broker back after a failure
 * whose partition stayed offline). Several topics; one marked for deletion
 * is left out. */
START_TEST(test_offline_counts)
{
	int32_t rows[] = { 1, 2, 3 }, l1[] = { -1 }, l2[] = { 1 };
	ctl_topic *a = topic("a", 1, rows, l1), *c = topic("c", 1, rows, l2);
	ctl_topic *const topics[] = { c, a };
	ctl_imbalance *b;
	ck_assert_int_eq(ctl_imbalance_compute(topics, 2, &b), 1);
	ck_assert_int_eq(b[0].preferred, 2);
	ck_assert_int_eq(b[0].led_by_others, 1);
	free(b);
	uint32_t all = 0xe;
	ctl_partition_ref *v;
	ck_assert_int_eq(ctl_rebalance_pick(topics, 2, 10, online, &all, &v), 1);
	ck_assert_int_eq(v[0].topic, 1);
	ck_assert_int_eq(v[0].partition, 0);
	free(v);
	ck_assert_int_eq(ctl_imbalance_compute(topics, 0, &b), 0);
	ck_assert_ptr_null(b);
	/* a topic marked for deletion counts for nothing and is never picked */
	a->deleting = true;
	ck_assert_int_eq(ctl_imbalance_compute(topics, 2, &b), 1);
	ck_assert_int_eq(b[0].preferred, 1);
	ck_assert_int_eq(b[0].led_by_others, 0);
	free(b);
	ck_assert_int_eq(ctl_rebalance_pick(topics, 2, 0, online, &all, &v), 0);
	ck_assert_ptr_null(v);
	ctl_topic_free(a);
	ctl_topic_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("elect");
	TCase *tc = tcase_create("elect");
	tcase_add_test(tc, test_preferred);
	tcase_add_test(tc, test_offline);
	tcase_add_test(tc, test_imbalance);
	tcase_add_test(tc, test_offline_counts);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
