/*
 * test_partition.c - the partition object's replication rules (partition.h):
 * leader epochs applied (stale ignored, equal = ISR only, higher = role
 * reset), the leader check of requests, the high watermark rule (ISR,
 * maximal ISR, caught-up followers, never backwards), a follower's
 * caught-up time, and the ISR a leader asks for (expand, shrink, never
 * empty, one change in flight), and how the partition is described to
 * clients (leader, ISR and offline replicas).
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/partition.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/fileio.h"

/* purgatory.c is not linked: the watch lists are only notified here */
void brk_watchlist_notify(brk_watchlist *l, int64_t bytes)
{
	(void)l;
	(void)bytes;
}

static char dir[PATH_MAX];
static brk_partition part;
static bool dead[8];

static bool is_alive(void *arg, int32_t id)
{
	(void)arg;
	return id < 0 || id >= 8 || !dead[id];
}

static const brk_replica_env env = {
	.broker_id = 1,
	.replica_lag_time_max_ms = 1000,
	.alive = is_alive,
};

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/samsa-test-partition-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&part, 0, sizeof(part));
	memset(dead, 0, sizeof(dead));
	part.leader = -1;
	part.leader_epoch = -1;
	log_config cfg;
	log_config_defaults(&cfg);
	char pdir[PATH_MAX + 16];
	snprintf(pdir, sizeof(pdir), "%s/t-0", dir);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 1000, &part.log), 0);
}

static void teardown(void)
{
	if (part.log)
		log_delete(part.log);
	brk_partition_clear(&part);
	rmdir(dir);
}

/* Append n one-record batches at the leader. */
static void append(int n)
{
	for (int i = 0; i < n; i++) {
		proto_writer w;
		proto_writer_init(&w);
		proto_batch_builder b;
		proto_batch_builder_begin(&b, &w);
		proto_batch_builder_add(&b, 1000, "k", 1, "v", 1);
		int32_t size = proto_batch_builder_finish(&b);
		ck_assert_int_gt(size, 0);
		int64_t base;
		ck_assert_int_eq(log_append(part.log, w.buf + b.start, (size_t)size, part.leader_epoch,
					    1000, &base),
				 0);
		proto_writer_free(&w);
	}
}

static ctl_partition state(int32_t leader, int32_t epoch, const int32_t *isr, int32_t nisr,
			   int32_t version)
{
	static int32_t replicas[] = { 1, 2, 3 };
	ctl_partition st = { .partition = 0, .replicas = replicas, .nreplicas = 3, .leader = leader,
			     .leader_epoch = epoch, .isr = (int32_t *)isr, .nisr = nisr,
			     .partition_epoch = version, .controller_epoch = 1 };
	return st;
}

static const int32_t all[] = { 1, 2, 3 };

START_TEST(test_epochs)
{
	ctl_partition st = state(1, 0, all, 3, 0);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_NEW_EPOCH);
	ck_assert_int_eq(part.role, BRK_ROLE_LEADER);
	ck_assert_int_eq(part.nfollowers, 2);
	ck_assert_int_eq(log_latest_epoch(part.log), 0); /* assigned on becoming leader */
	/* equal epoch: ISR and version only */
	const int32_t two[] = { 1, 2 };
	st = state(1, 0, two, 2, 1);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_UPDATED);
	ck_assert_int_eq(part.nisr, 2);
	ck_assert_int_eq(part.partition_epoch, 1);
	/* an older version of the same epoch is stale */
	st = state(1, 0, all, 3, 0);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_IGNORED);
	ck_assert_int_eq(part.nisr, 2);
	/* a new epoch with another leader: follower */
	st = state(2, 1, two, 2, 2);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_NEW_EPOCH);
	ck_assert_int_eq(part.role, BRK_ROLE_FOLLOWER);
	ck_assert_int_eq(part.leader, 2);
	/* an older epoch is ignored */
	st = state(1, 0, all, 3, 5);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_IGNORED);
	ck_assert_int_eq(part.leader, 2);
	/* a bump with the same leader still resets the role (KAFKA-13790) */
	st = state(2, 2, two, 2, 6);
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_NEW_EPOCH);
	/* not a replica: no role */
	static int32_t others[] = { 2, 3 };
	st = state(2, 3, others, 2, 7);
	st.replicas = others;
	st.nreplicas = 2;
	ck_assert_int_eq(brk_partition_apply_state(&part, &st, &env, 100), BRK_STATE_NEW_EPOCH);
	ck_assert_int_eq(part.role, BRK_ROLE_NONE);
}
END_TEST

START_TEST(test_leader_error)
{
	ctl_partition st = state(2, 4, all, 3, 0);
	brk_partition_apply_state(&part, &st, &env, 100);
	ck_assert_int_eq(brk_partition_leader_error(&part, -1), KERR_NOT_LEADER_OR_FOLLOWER);
	st = state(1, 5, all, 3, 1);
	brk_partition_apply_state(&part, &st, &env, 100);
	ck_assert_int_eq(brk_partition_leader_error(&part, -1), KERR_NONE);
	ck_assert_int_eq(brk_partition_leader_error(&part, 5), KERR_NONE);
	ck_assert_int_eq(brk_partition_leader_error(&part, 4), KERR_FENCED_LEADER_EPOCH);
	ck_assert_int_eq(brk_partition_leader_error(&part, 6), KERR_UNKNOWN_LEADER_EPOCH);
	log_partition *lp = part.log;
	part.log = NULL;
	ck_assert_int_eq(brk_partition_leader_error(&part, -1), KERR_KAFKA_STORAGE_ERROR);
	part.log = lp;
}
END_TEST

/* What Metadata and DescribeTopicPartitions say of the partition. */
START_TEST(test_describe)
{
	proto_arena a;
	brk_partition_view v;
	proto_arena_init(&a, 0);
	const int32_t two[] = { 2, 3 };
	ctl_partition st = state(2, 4, two, 2, 0);
	brk_partition_apply_state(&part, &st, &env, 100);
	/* every replica alive: the leader as it is, no offline replica */
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	ck_assert_int_eq(v.leader, 2);
	ck_assert(!v.leader_unavailable);
	ck_assert_int_eq(v.nisr, 2);
	ck_assert_int_eq(v.noffline, 0);
	/* a follower's broker is gone: listed offline, the ISR as it is */
	dead[3] = true;
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	ck_assert_int_eq(v.leader, 2);
	ck_assert_int_eq(v.noffline, 1);
	ck_assert_int_eq(v.offline[0], 3);
	ck_assert_int_eq(v.nisr, 2);
	/* the leader's broker is gone too: no leader */
	dead[2] = true;
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	ck_assert_int_eq(v.leader, -1);
	ck_assert(v.leader_unavailable);
	ck_assert_int_eq(v.noffline, 2);
	dead[2] = dead[3] = false;
	/* no leader at all */
	st = state(-1, 5, two, 1, 1);
	brk_partition_apply_state(&part, &st, &env, 100);
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	ck_assert(v.leader_unavailable);
	ck_assert_int_eq(v.noffline, 0);
	/* this broker leads with its log offline: listed offline, ISR empty */
	st = state(1, 6, all, 3, 2);
	brk_partition_apply_state(&part, &st, &env, 100);
	log_partition *lp = part.log;
	part.log = NULL;
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	part.log = lp;
	ck_assert_int_eq(v.leader, -1);
	ck_assert(v.leader_unavailable);
	ck_assert_int_eq(v.noffline, 1);
	ck_assert_int_eq(v.offline[0], 1);
	ck_assert_int_eq(v.nisr, 0);
	ck_assert_int_eq(brk_partition_describe(&part, &env, &a, &v), 0);
	ck_assert_int_eq(v.leader, 1);
	ck_assert_int_eq(v.nisr, 3);
	proto_arena_free(&a);
}
END_TEST

START_TEST(test_high_watermark)
{
	ctl_partition st = state(1, 0, all, 3, 0);
	brk_partition_apply_state(&part, &st, &env, 100);
	append(10);
	/* followers unknown yet: the high watermark waits for the ISR */
	ck_assert(!brk_partition_maybe_advance_hw(&part, &env, 100));
	ck_assert_int_eq(log_high_watermark(part.log), 0);
	brk_partition_follower_fetched(&part, 2, 10, 0, &env, 110);
	ck_assert_int_eq(log_high_watermark(part.log), 0); /* 3 still at -1 */
	brk_partition_follower_fetched(&part, 3, 4, 0, &env, 120);
	ck_assert_int_eq(log_high_watermark(part.log), 4);
	brk_partition_follower_fetched(&part, 3, 10, 0, &env, 130);
	ck_assert_int_eq(log_high_watermark(part.log), 10);
	/* never backwards, even when a follower asks from an older offset */
	brk_partition_follower_fetched(&part, 3, 6, 0, &env, 140);
	ck_assert_int_eq(log_high_watermark(part.log), 10);
	/* 3 leaves the ISR: it no longer holds the high watermark back once it
	 * is not caught up either */
	const int32_t two[] = { 1, 2 };
	st = state(1, 0, two, 2, 1);
	brk_partition_apply_state(&part, &st, &env, 150);
	append(5);
	brk_partition_follower_fetched(&part, 2, 15, 10, &env, 2000);
	ck_assert_int_eq(log_high_watermark(part.log), 15);
	/* a follower outside the ISR but caught up and alive counts
	 * (Partition.maybeIncrementLeaderHW): 3 fetches at the end */
	brk_partition_follower_fetched(&part, 3, 15, 10, &env, 2010);
	append(1);
	brk_partition_follower_fetched(&part, 2, 16, 10, &env, 2020);
	ck_assert_int_eq(log_high_watermark(part.log), 15); /* waits for 3 */
	dead[3] = true; /* unless it is not alive */
	ck_assert(brk_partition_maybe_advance_hw(&part, &env, 2030));
	ck_assert_int_eq(log_high_watermark(part.log), 16);
}
END_TEST

START_TEST(test_caught_up)
{
	ctl_partition st = state(1, 0, all, 3, 0);
	brk_partition_apply_state(&part, &st, &env, 100);
	append(5);
	/* 2 fetches at the leader's end at 200: caught up at 200 */
	brk_follower *f = brk_partition_follower_fetched(&part, 2, 5, 0, &env, 200);
	ck_assert_int_eq(f->last_caught_up_ms, 200);
	append(5);
	/* at 300 it asks from 5 (the end at its last fetch): caught up as of
	 * its previous fetch, 200 */
	f = brk_partition_follower_fetched(&part, 2, 5, 0, &env, 300);
	ck_assert_int_eq(f->last_caught_up_ms, 200);
	ck_assert(brk_partition_follower_caught_up(&part, f, &env, 1100));
	ck_assert(!brk_partition_follower_caught_up(&part, f, &env, 1300));
	/* not a replica */
	ck_assert_ptr_null(brk_partition_follower_fetched(&part, 7, 5, 0, &env, 300));
}
END_TEST

START_TEST(test_wanted_isr)
{
	const int32_t one[] = { 1 };
	ctl_partition st = state(1, 0, one, 1, 0);
	brk_partition_apply_state(&part, &st, &env, 100);
	append(3);
	ck_assert(brk_partition_maybe_advance_hw(&part, &env, 100));
	int32_t *isr, n;
	/* nobody fetched: nothing to change */
	ck_assert(!brk_partition_wanted_isr(&part, &env, 100, &isr, &n));
	/* 2 reaches the high watermark: expand */
	brk_partition_follower_fetched(&part, 2, 3, 0, &env, 110);
	ck_assert(brk_partition_wanted_isr(&part, &env, 110, &isr, &n));
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(isr[0], 1);
	ck_assert_int_eq(isr[1], 2);
	ck_assert_int_eq(brk_partition_propose_isr(&part, isr, n, 42), 0);
	free(isr);
	/* one change in flight at a time; the maximal ISR counts it */
	ck_assert(!brk_partition_wanted_isr(&part, &env, 120, &isr, &n));
	ck_assert_int_eq(brk_partition_maximal_isr_size(&part), 2);
	ck_assert(brk_partition_in_isr(&part, 2));
	/* a dead follower is not added */
	brk_partition_isr_changed(&part, true, 1, &env, 130);
	ck_assert_int_eq(part.nisr, 2);
	ck_assert_int_eq(part.partition_epoch, 1);
	dead[3] = true;
	brk_partition_follower_fetched(&part, 3, 3, 0, &env, 140);
	ck_assert(!brk_partition_wanted_isr(&part, &env, 140, &isr, &n));
	/* 2 stops fetching: shrunk after the lag time, never below the leader */
	ck_assert(!brk_partition_wanted_isr(&part, &env, 1000, &isr, &n));
	append(1);
	ck_assert(brk_partition_wanted_isr(&part, &env, 1200, &isr, &n));
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(isr[0], 1);
	free(isr);
	/* a refused change leaves the ISR as it was */
	int32_t shrunk[] = { 1 };
	ck_assert_int_eq(brk_partition_propose_isr(&part, shrunk, 1, 43), 0);
	brk_partition_isr_changed(&part, false, 0, &env, 1210);
	ck_assert_int_eq(part.nisr, 2);
	ck_assert_ptr_null(part.proposed_isr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("partition");
	TCase *tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_epochs);
	tcase_add_test(tc, test_leader_error);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_high_watermark);
	tcase_add_test(tc, test_caught_up);
	tcase_add_test(tc, test_wanted_isr);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
