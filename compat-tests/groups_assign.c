/*
 * groups_assign.c - three consumers in one group on a 6-partition topic,
 * once per librdkafka assignor (range, roundrobin, cooperative-sticky):
 * two members first (3 + 3 partitions), then a third joins. At the end the
 * union of the three assignments is complete and disjoint with two
 * partitions each, in the assignor's shape (range: {0,1} {2,3} {4,5};
 * roundrobin: {0,3} {1,4} {2,5}); the rebalance protocol is EAGER for range
 * and roundrobin and COOPERATIVE for cooperative-sticky; the third join
 * revoked all six partitions of the first two members (eager) or only the
 * two that moved, each old member keeping two of its three (cooperative,
 * KIP-429). Then 60 records are produced and each is consumed exactly once,
 * by the owner of its partition. Prints how long the rebalance for the third
 * member took (group.initial.rebalance.delay.ms=0, heartbeat 200 ms).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/groups_common.h"

#define NP 6

static const char *const strategies[] = {"range", "roundrobin", "cooperative-sticky"};
#define NSTRATEGIES ((int)(sizeof(strategies) / sizeof(strategies[0])))

/* 1 if m owns exactly {a, b}. */
static int owns_pair(const gt_member *m, int a, int b)
{
	return gt_count(m) == 2 && m->assigned[a] && m->assigned[b];
}

START_TEST(test_three_members)
{
	const char *strategy = strategies[_i];
	int coop = strcmp(strategy, "cooperative-sticky") == 0;
	h_broker *b = gt_start_broker(NULL);
	char topic[64], group[64], desc[512];
	snprintf(topic, sizeof(topic), "assign-%s", strategy);
	snprintf(group, sizeof(group), "group-%s", strategy);
	gt_create_topic(b, topic, NP);

	const char *const kv[] = {"partition.assignment.strategy", strategy,
				  "enable.auto.commit", "false", NULL};
	gt_member *ms[3];
	ms[0] = gt_member_new(b, "a", group, topic, NP, kv);
	ms[1] = gt_member_new(b, "b", group, topic, NP, kv);
	ms[2] = gt_member_new(b, "c", group, topic, NP, kv);

	/* Two members: 3 + 3. */
	gt_subscribe(ms[0]);
	gt_subscribe(ms[1]);
	gt_wait_settled(ms, 2, 1, 500, 30000, "two members");
	int before[2][NP];
	int revoked_before = ms[0]->parts_revoked + ms[1]->parts_revoked;
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(gt_count(ms[i]), 3);
		memcpy(before[i], ms[i]->assigned, sizeof(before[i]));
	}

	/* The third member. */
	long long t0 = h_now_ms();
	gt_subscribe(ms[2]);
	long long last = gt_wait_settled(ms, 3, 1, 800, 30000, "three members");
	fprintf(stderr, "groups_assign: %s: rebalance for a third member took %lld ms "
			"(subscribe to last assignment callback)\n",
		strategy, last - t0);
	gt_describe(ms, 3, desc, sizeof(desc));

	for (int i = 0; i < 3; i++) {
		ck_assert_msg(gt_count(ms[i]) == 2, "%s: %s", strategy, desc);
		ck_assert_msg(strcmp(ms[i]->protocol, coop ? "COOPERATIVE" : "EAGER") == 0,
			      "%s: member %s saw rebalance protocol %s", strategy, ms[i]->name,
			      ms[i]->protocol);
	}
	/* The assignor's shape: the leader saw all three members' metadata. */
	if (strcmp(strategy, "range") == 0) {
		for (int k = 0; k < 3; k++) {
			int n = 0;
			for (int i = 0; i < 3; i++)
				n += owns_pair(ms[i], 2 * k, 2 * k + 1);
			ck_assert_msg(n == 1, "range: no member owns {%d,%d}: %s", 2 * k, 2 * k + 1,
				      desc);
		}
	} else if (strcmp(strategy, "roundrobin") == 0) {
		for (int k = 0; k < 3; k++) {
			int n = 0;
			for (int i = 0; i < 3; i++)
				n += owns_pair(ms[i], k, k + 3);
			ck_assert_msg(n == 1, "roundrobin: no member owns {%d,%d}: %s", k, k + 3,
				      desc);
		}
	}

	int revoked = ms[0]->parts_revoked + ms[1]->parts_revoked - revoked_before;
	if (coop) {
		ck_assert_msg(revoked == 2,
			      "cooperative-sticky: the third join revoked %d partitions of the "
			      "first two members, expected the 2 that moved: %s",
			      revoked, desc);
		for (int i = 0; i < 2; i++)
			for (int p = 0; p < NP; p++)
				ck_assert_msg(!ms[i]->assigned[p] || before[i][p],
					      "cooperative-sticky: %s gained partition %d: %s",
					      ms[i]->name, p, desc);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(ms[i]->n_lost, 0);
	} else {
		ck_assert_msg(revoked >= 6,
			      "%s (eager): the third join revoked only %d partitions of the first "
			      "two members, expected all 6",
			      strategy, revoked);
	}

	/* Records go to the partitions' owners, each exactly once. */
	gt_seen *seen = gt_seen_new(NP, 100);
	for (int i = 0; i < 3; i++) {
		ms[i]->on_msg = gt_seen_cb;
		ms[i]->opaque = seen;
	}
	int64_t end[NP] = {0};
	gt_produce(b, topic, NP, 60, "rec", end);
	long long deadline = h_now_ms() + h_scaled_ms(20000);
	while (ms[0]->n_msgs + ms[1]->n_msgs + ms[2]->n_msgs < 60 && h_now_ms() < deadline)
		gt_poll_all(ms, 3, 100);
	gt_poll_all(ms, 3, 300); /* duplicates, if any, would arrive now */
	long total = ms[0]->n_msgs + ms[1]->n_msgs + ms[2]->n_msgs;
	ck_assert_msg(total == 60, "%s: consumed %ld of 60 records", strategy, total);
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(ms[i]->n_foreign == 0, "%s: member %s got %ld records of partitions "
			      "it does not own", strategy, ms[i]->name, ms[i]->n_foreign);
		ck_assert_msg(ms[i]->n_msgs == 20, "%s: member %s consumed %ld records, expected 20",
			      strategy, ms[i]->name, ms[i]->n_msgs);
		ck_assert_msg(ms[i]->n_errors == 0, "%s: member %s: consumer error %s", strategy,
			      ms[i]->name, rd_kafka_err2name(ms[i]->last_err));
	}
	for (int p = 0; p < NP; p++)
		for (int o = 0; o < 10; o++)
			ck_assert_msg(seen->count[p * seen->cap + o] == 1,
				      "%s: record %d/%d consumed %u times", strategy, p, o,
				      seen->count[p * seen->cap + o]);

	for (int i = 0; i < 3; i++)
		gt_close(ms[i]);
	for (int i = 0; i < 3; i++)
		gt_member_free(ms[i]);
	gt_seen_free(seen);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_assign");
	TCase *tc = tcase_create("assignors");
	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, test_three_members, 0, NSTRATEGIES);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
