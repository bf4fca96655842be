/*
 * cluster_leader_kill.c - kill -9 of a partition leader under an
 * idempotent acks=all producer, again and again (CLUSTER.md 4.1, 6.5 test
 * 17; Kafka's replication_test hard_bounce).
 *
 * Three brokers; topic "lk" of 3 partitions, replication factor 3,
 * min.insync.replicas=2. A librdkafka producer (enable.idempotence=true,
 * acks=all, request.timeout.ms=5000, message.timeout.ms=30000) writes
 * 300 records a second, round robin over the partitions, for the whole
 * test. Each round, once every partition's ISR is all three again:
 * kill -9 the leader of partition 0 (the state znode's), wait until every
 * partition it led has another leader with a higher leader epoch (state
 * znode and every live broker's Metadata agreeing) and the producer had a
 * record of each of them, sent after the kill, acknowledged (it recovers by
 * itself: no test code touches it), then restart the killed broker (by
 * then its ZooKeeper session expired: the election needed that).
 *
 * In the end: every record was acknowledged (nothing failed or timed out),
 * the producer never hit a fatal error, a final read of every partition
 * from offset 0 gives the checker (checker.h) no lost, misplaced,
 * duplicated or divergent record and monotonic offsets, and the three
 * replicas of each partition are byte-identical batch by batch (the old
 * leaders truncated what they had not committed). Printed: the fail-over
 * time of each round (kill to the first acknowledgement of a record sent
 * after it, on the partitions the killed broker led), median and maximum,
 * and the longest time without any acknowledged produce.
 *
 * Rounds: SAMSA_CLUSTER_KILLS, else 20; 5 with SAMSA_CLUSTER_QUICK (the
 * sanitizer build), 200 with SAMSA_CLUSTER_LONG (the closing figures).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

#define TOPIC "lk"
#define NPART 3
#define RATE 300

static int rounds(void)
{
	long def = cc_long() ? 200 : cc_quick() ? 5 : 20;
	return (int)cc_env_long("SAMSA_CLUSTER_KILLS", def);
}

static void wait_all_isr_full(hc_cluster *c)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(hc_wait_isr(c, TOPIC, p, all, 3, 30000) >= 0,
			      "%s-%d: the ISR did not become all three again (state above)", TOPIC, p);
}

START_TEST(test_leader_kill_loop)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, TOPIC, NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, TOPIC, NPART, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0,
		      "the producer got no acknowledgement at all");
	usleep(1000 * 1000); /* some data in every partition before the first kill */

	int n = rounds();
	long *failover = calloc((size_t)n, sizeof(long));
	int64_t *kill_ms = calloc((size_t)n, sizeof(int64_t));
	bool(*led)[NPART] = calloc((size_t)n, sizeof(*led));
	int nf = 0;
	ck_assert(failover && kill_ms && led);
	for (int i = 0; i < n; i++) {
		wait_all_isr_full(&c);
		hc_state before[NPART];
		for (int q = 0; q < NPART; q++)
			ck_assert_int_eq(hc_zk_state(&c, TOPIC, q, &before[q]), CTL_ZK_OK);
		int victim = before[0].leader;
		ck_assert_msg(victim >= 1 && victim <= 3, "no leader of %s-0: %s", TOPIC,
			      before[0].json);
		for (int q = 0; q < NPART; q++)
			led[i][q] = before[q].leader == victim;

		kill_ms[i] = h_now_ms();
		ck_assert_int_eq(hc_kill(&c, victim), 0);
		cc_log("round %d: killed broker %d, leader of %s%s%s (epoch %d)", i, victim,
		       led[i][0] ? "lk-0 " : "", led[i][1] ? "lk-1 " : "", led[i][2] ? "lk-2" : "",
		       before[0].leader_epoch);
		for (int q = 0; q < NPART; q++) {
			if (!led[i][q])
				continue;
			int nl = cc_wait_leader(&c, TOPIC, q, victim, HC_SESSION_MS + 20000);
			cc_log("round %d: %s-%d led by %d after %lld ms", i, TOPIC, q, nl,
			       h_now_ms() - kill_ms[i]);
			hc_state after;
			ck_assert_int_eq(hc_zk_state(&c, TOPIC, q, &after), CTL_ZK_OK);
			ck_assert_msg(after.leader_epoch > before[q].leader_epoch,
				      "%s-%d: new leader %d with leader epoch %d, was %d", TOPIC, q, nl,
				      after.leader_epoch, before[q].leader_epoch);
			ck_assert_msg(!hc_isr_has(&after, victim),
				      "%s-%d: the killed broker %d is still in the ISR: %s", TOPIC, q,
				      victim, after.json);
			ck_assert_msg(cc_producer_wait_ack_after(p, q, kill_ms[i], 30000) >= 0,
				      "round %d: the producer did not recover on %s-%d (new leader %d) "
				      "within 30 s of the kill; first error: %s; fatal: %s",
				      i, TOPIC, q, nl, p->first_error, p->fatal);
		}
		cc_log("round %d: new leaders acknowledge", i);
		ck_assert_msg(hc_restart(&c, victim) == 0, "round %d: broker %d did not restart", i,
			      victim);
	}
	wait_all_isr_full(&c);
	cc_producer_stop(p, 60000);

	/* fail-over times: the slowest partition of each round */
	for (int i = 0; i < n; i++) {
		long worst = -1;
		for (int q = 0; q < NPART; q++) {
			if (!led[i][q])
				continue;
			long ms = cc_producer_failover_ms(p, q, kill_ms[i]);
			if (ms > worst)
				worst = ms;
		}
		if (worst >= 0)
			failover[nf++] = worst;
		fprintf(stderr, "round %d: fail-over %ld ms\n", i, worst);
	}
	long median, max;
	cc_median_max(failover, nf, &median, &max);
	printf("cluster_leader_kill: %d kill -9 of the leader, fail-over (kill to the first "
	       "acknowledgement on the new leader) median %ld ms, max %ld ms "
	       "(zookeeper.session.timeout.ms=%d)\n",
	       n, median, max, HC_SESSION_MS);
	fprintf(stderr, "fail-over over %d rounds: median %ld ms, max %ld ms\n", n, median, max);

	ck_assert_msg(!p->fatal[0], "the producer hit a fatal error: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld records acknowledged, %ld failed, %ld indeterminate; first error: "
		      "%s",
		      atomic_load(&p->nacked), atomic_load(&p->nsent), atomic_load(&p->nfailed),
		      atomic_load(&p->nindeterminate), p->first_error);

	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, TOPIC, NPART, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "leader kills");
	printf("cluster_leader_kill: %ld records acknowledged (%ld without an offset: their request "
	       "failed, a later one succeeded), none lost, duplicated or divergent; longest time "
	       "without a successful produce %" PRId64 " ms\n",
	       r.acked, r.acked_no_offset, r.longest_gap_ms);
	chk_free(h);

	/* the replicas hold the same batches */
	static const int ids[3] = {1, 2, 3};
	for (int q = 0; q < NPART; q++) {
		char why[512] = "";
		long long deadline = h_now_ms() + h_scaled_ms(15000);
		while (!cc_logs_equal(&c, TOPIC, q, ids, 3, why, sizeof(why)) &&
		       h_now_ms() < deadline)
			usleep(200 * 1000);
		ck_assert_msg(cc_logs_equal(&c, TOPIC, q, ids, 3, why, sizeof(why)),
			      "%s-%d: the replicas' logs differ: %s", TOPIC, q, why);
	}

	cc_producer_free(p);
	free(failover);
	free(kill_ms);
	free(led);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_leader_kill");
	TCase *tc = tcase_create("leader_kill");
	/* a round takes about the session timeout plus a restart */
	tcase_set_timeout(tc, 60 + rounds() * 30);
	tcase_add_test(tc, test_leader_kill_loop);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
