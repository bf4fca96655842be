/*
 * cluster_rolling.c - restarts of every broker under load: a rolling
 * restart, clean and hard (issue 14 "Operations"; CLUSTER.md 4.8, Kafka's
 * replication_test clean_bounce / hard_bounce), and a fast bounce
 * (CLUSTER.md 4.10, KIP-380; 6.5 test 23).
 *
 * Three brokers; a topic of 3 partitions with replication factor 3 and
 * min.insync.replicas=2; an idempotent acks=all librdkafka producer
 * (request.timeout.ms=5000, message.timeout.ms=30000) writes 300 records a
 * second for the whole test and is never touched by the test.
 *
 * rolling_clean: each broker in turn (the controller last, as operators
 * do), SIGTERM: it exits 0; start it again; wait until it is registered
 * and every partition's ISR is all three again; next. rolling_hard: the
 * same with kill -9, then a wait until its registration is gone (its
 * session expired: Kafka's hard_bounce waits for that) and every partition
 * it led has another leader, before the start. Both: every delivery report
 * is a success (librdkafka retried whatever failed by itself: not one error
 * reached the application), the checker finds no acknowledged record lost,
 * none duplicated or divergent, offsets monotonic, and the three replicas
 * of each partition are identical batch by batch. One pass over the three
 * brokers; 3 with SAMSA_CLUSTER_LONG.
 *
 * fast_bounce: kill -9 of a broker that leads a partition (not the
 * controller) and a start at once, well within the old session's timeout.
 * The new process finds its id held by the old session, waits (its log
 * says so) and registers when that session expires: by the time it
 * answers requests its registration is there with a new czxid (it serves
 * nothing before it registered). The controller treats it as a bounce:
 * the partitions it led have another leader with a higher leader epoch,
 * and it rejoins every ISR as a follower. Same end checks.
 *
 * Printed for each restart: how long it lasted (signal to full ISR), the
 * records acknowledged meanwhile and the longest time without a successful
 * produce; the same over the whole rolling restart and over the fast
 * bounce as the fault's FIGURE line (cc_print_window). The next restart
 * begins as soon as every ISR is full, as the issue says, often before the
 * client has found the new leaders: with kill -9 the stalls of two
 * restarts can join (a partition waits for the next victim to leave its
 * ISR), and a stall counts whole in the restart where it began.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

#define NPART 3
#define RATE 300

static void wait_all_isr_full(hc_cluster *c, const char *topic)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(hc_wait_isr(c, topic, p, all, 3, 30000) >= 0,
			      "%s-%d: the ISR did not become all three again (state above)", topic, p);
}

static void wait_logs_equal(hc_cluster *c, const char *topic)
{
	static const int ids[3] = {1, 2, 3};
	for (int q = 0; q < NPART; q++) {
		char why[512] = "";
		long long deadline = h_now_ms() + h_scaled_ms(15000);
		while (!cc_logs_equal(c, topic, q, ids, 3, why, sizeof(why)) &&
		       h_now_ms() < deadline)
			usleep(200 * 1000);
		ck_assert_msg(cc_logs_equal(c, topic, q, ids, 3, why, sizeof(why)),
			      "%s-%d: the replicas' logs differ: %s", topic, q, why);
	}
}

static int64_t reg_czxid(hc_cluster *c, int id)
{
	char path[64];
	ctl_zk_stat st;
	snprintf(path, sizeof(path), "/brokers/ids/%d", id);
	return hc_zk_exists(c, path, &st) == CTL_ZK_OK ? st.czxid : -1;
}

/* One broker restarted; [*t0, *t1] the time it took. */
static void restart_one(hc_cluster *c, const char *topic, int id, bool hard, int64_t *t0,
			int64_t *t1)
{
	hc_state before[NPART];
	for (int q = 0; q < NPART; q++)
		ck_assert_int_eq(hc_zk_state(c, topic, q, &before[q]), CTL_ZK_OK);
	int64_t epoch0 = reg_czxid(c, id);
	*t0 = h_now_ms();
	if (hard) {
		ck_assert_int_eq(hc_kill(c, id), 0);
		bool reg[HC_MAX_BROKERS + 1] = {false};
		for (int k = 1; k <= c->n; k++)
			reg[k] = k != id;
		ck_assert_msg(hc_wait_registered(c, reg, HC_SESSION_MS + 10000) >= 0,
			      "broker %d's registration did not go after kill -9", id);
		for (int q = 0; q < NPART; q++)
			if (before[q].leader == id)
				cc_wait_leader(c, topic, q, id, 20000);
	} else {
		ck_assert_int_eq(hc_term(c, id), 0);
		int st = hc_wait_exit(c, id, 30000);
		ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "broker %d did not exit 0 on SIGTERM (status 0x%x)", id, st);
	}
	cc_log("broker %d %s", id, hard ? "killed, deregistered" : "stopped");
	ck_assert_msg(hc_restart(c, id) == 0, "broker %d did not start again", id);
	ck_assert_msg(hc_wait_registered(c, NULL, 20000) >= 0, "broker %d did not register", id);
	int64_t epoch1 = reg_czxid(c, id);
	ck_assert_msg(epoch1 > epoch0, "broker %d's broker epoch (czxid) %" PRId64 " after %" PRId64,
		      id, epoch1, epoch0);
	wait_all_isr_full(c, topic);
	*t1 = h_now_ms();
	cc_log("broker %d back in every ISR after %" PRId64 " ms", id, *t1 - *t0);
}

static void rolling(bool hard)
{
	const char *topic = hard ? "rollh" : "rollc";
	const char *what = hard ? "rolling restart (kill -9)" : "rolling restart (SIGTERM)";
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, topic, NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);

	int passes = cc_long() ? 3 : 1;
	int n = passes * 3, k = 0;
	int ids[9];
	int64_t t0[9], t1[9];
	for (int pass = 0; pass < passes; pass++) {
		int ctl = hc_zk_controller(&c);
		ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");
		int order[3], m = 0;
		for (int id = 1; id <= 3; id++)
			if (id != ctl)
				order[m++] = id;
		order[m] = ctl;
		for (int i = 0; i < 3; i++, k++) {
			ids[k] = order[i];
			restart_one(&c, topic, order[i], hard, &t0[k], &t1[k]);
		}
	}
	int64_t all0 = t0[0], all1 = t1[n - 1];
	chk_report r;
	cc_producer_verify(&c, p, topic, NPART, NULL, &r, what);
	char label[128];
	for (k = 0; k < n; k++) {
		cc_window w;
		cc_producer_window(p, -1, t0[k], t1[k], &w);
		snprintf(label, sizeof(label), "%s of broker %d%s", hard ? "kill -9 and restart" :
			 "SIGTERM and restart", ids[k], ids[k] == ids[(k / 3) * 3 + 2] ?
			 " (the controller)" : "");
		cc_print_window("cluster_rolling", NULL, label, &w);
	}
	cc_window w;
	cc_producer_window(p, -1, all0, all1, &w);
	cc_print_window("cluster_rolling", hard ? "rolling_restart_kill9" :
			"rolling_restart_sigterm", what, &w);
	printf("cluster_rolling: %s: %ld records acknowledged in all, 0 delivery errors, none lost, "
	       "duplicated or divergent\n", what, r.acked);
	wait_logs_equal(&c, topic);
	cc_producer_free(p);
	cc_finish(&c);
}

START_TEST(test_rolling_clean)
{
	rolling(false);
}
END_TEST

START_TEST(test_rolling_hard)
{
	rolling(true);
}
END_TEST

START_TEST(test_fast_bounce)
{
	const char *topic = "fb";
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, topic, NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);

	/* a broker that leads a partition and is not the controller */
	int ctl = hc_zk_controller(&c), victim = -1;
	hc_state before[NPART];
	for (int q = 0; q < NPART; q++) {
		ck_assert_int_eq(hc_zk_state(&c, topic, q, &before[q]), CTL_ZK_OK);
		if (victim < 0 && before[q].leader != ctl)
			victim = before[q].leader;
	}
	ck_assert_msg(victim >= 1, "every partition is led by the controller");
	int64_t epoch0 = reg_czxid(&c, victim);

	int64_t t0 = h_now_ms();
	ck_assert_int_eq(hc_kill(&c, victim), 0);
	ck_assert_msg(hc_restart(&c, victim) == 0, "broker %d did not start again", victim);
	int64_t t_ready = h_now_ms();
	/* answering requests: registered already, under a new session */
	int64_t epoch1 = reg_czxid(&c, victim);
	cc_log("broker %d killed and started again; answers after %" PRId64 " ms, broker epoch %"
	       PRId64 " (was %" PRId64 ")", victim, t_ready - t0, epoch1, epoch0);
	ck_assert_msg(epoch1 > epoch0,
		      "broker %d answers requests %" PRId64 " ms after its start but is not "
		      "registered under a new session (czxid %" PRId64 ", was %" PRId64 ")",
		      victim, t_ready - t0, epoch1, epoch0);
	ck_assert_msg(hc_log_has(&c, victim, "is registered by another ZooKeeper session"),
		      "broker %d did not wait for its old session (the restart was not within "
		      "the session timeout?)", victim);

	/* a bounce: its partitions were led elsewhere, it follows */
	for (int q = 0; q < NPART; q++) {
		if (before[q].leader != victim)
			continue;
		int nl = cc_wait_leader(&c, topic, q, victim, 20000);
		hc_state st;
		ck_assert_int_eq(hc_zk_state(&c, topic, q, &st), CTL_ZK_OK);
		ck_assert_msg(st.leader_epoch > before[q].leader_epoch,
			      "%s-%d: led by %d with leader epoch %d after the bounce, was %d", topic,
			      q, nl, st.leader_epoch, before[q].leader_epoch);
	}
	wait_all_isr_full(&c, topic);
	int64_t t1 = h_now_ms();
	cc_log("back in every ISR after %" PRId64 " ms", t1 - t0);

	chk_report r;
	cc_producer_verify(&c, p, topic, NPART, NULL, &r, "fast bounce");
	cc_window w;
	cc_producer_window(p, -1, t0, t1, &w);
	char label[96];
	snprintf(label, sizeof(label), "fast bounce of broker %d (kill -9, start at once)", victim);
	cc_print_window("cluster_rolling", "fast_bounce", label, &w);
	printf("cluster_rolling: fast bounce: the new process answered after %" PRId64 " ms "
	       "(zookeeper.session.timeout.ms=%d), registered; %ld records acknowledged in all, "
	       "none lost, duplicated or divergent\n",
	       t_ready - t0, HC_SESSION_MS, r.acked);
	wait_logs_equal(&c, topic);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_rolling");
	TCase *tc = tcase_create("rolling");
	tcase_set_timeout(tc, cc_long() ? 400 : 150);
	tcase_add_test(tc, test_rolling_clean);
	tcase_add_test(tc, test_rolling_hard);
	tcase_add_test(tc, test_fast_bounce);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
