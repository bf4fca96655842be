/*
 * cluster_shutdown.c - controlled shutdown (CLUSTER.md 2.6, 4.7; 6.5 test
 * 10): SIGTERM to a leader moves its leadership away before the process
 * exits.
 *
 * Three brokers, a topic of 3 partitions with replication factor 3 and
 * min.insync.replicas=2, an idempotent acks=all producer writing 300
 * records a second throughout. Two rounds: SIGTERM to the leader of
 * partition 0, then to the controller. In each, while the process runs the
 * test polls the state znodes of the partitions it led: every one gets
 * another leader, with a higher leader epoch, written (its mtime) before
 * the exit was seen and sooner than a session expiry could have caused
 * (less than zookeeper.session.timeout.ms after SIGTERM); the broker exits
 * with status 0 and leaves the clean-shutdown marker (.kafka_cleanshutdown);
 * when it was the controller, another broker holds /controller. The
 * producer sees nothing but retriable errors: every record is acknowledged
 * and the checker finds none lost, duplicated or divergent. Printed: the
 * time from SIGTERM to the leadership move and to the first acknowledgement
 * on the new leader.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

#define TOPIC "sd"
#define NPART 3

static int64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void wait_all_isr_full(hc_cluster *c)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(hc_wait_isr(c, TOPIC, p, all, 3, 30000) >= 0,
			      "%s-%d: the ISR did not become all three (state above)", TOPIC, p);
}

/* One controlled shutdown of victim; returns the ms from SIGTERM to the
 * last of its partitions' moves. */
static long term_round(hc_cluster *c, cc_producer *p, int victim, const char *what)
{
	hc_state before[NPART];
	bool led[NPART], moved[NPART] = {false};
	int64_t moved_ms[NPART] = {0};
	ctl_zk_stat zs;
	for (int q = 0; q < NPART; q++) {
		ck_assert_int_eq(hc_zk_state(c, TOPIC, q, &before[q]), CTL_ZK_OK);
		led[q] = before[q].leader == victim;
	}
	bool was_controller = hc_zk_controller(c) == victim;

	int64_t t_term = h_now_ms(), t_term_wall = wall_ms();
	ck_assert_int_eq(hc_term(c, victim), 0);
	bool seen_alive = false;
	while (hc_alive(c, victim) && h_now_ms() - t_term < h_scaled_ms(30000)) {
		for (int q = 0; q < NPART; q++) {
			hc_state st;
			if (!led[q] || moved[q] || hc_zk_state(c, TOPIC, q, &st) != CTL_ZK_OK)
				continue;
			if (st.leader != victim && st.leader >= 0) {
				moved[q] = true;
				moved_ms[q] = h_now_ms() - t_term;
				seen_alive |= hc_alive(c, victim);
			}
		}
		usleep(2000);
	}
	int64_t exit_wall = wall_ms();
	int st = hc_wait_exit(c, victim, 30000);
	ck_assert_msg(st != -1, "%s: broker %d did not exit within 30 s of SIGTERM", what, victim);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s: broker %d ended with status 0x%x on SIGTERM", what, victim, st);

	long last = 0;
	for (int q = 0; q < NPART; q++) {
		if (!led[q])
			continue;
		hc_state now;
		char path[128];
		ck_assert_int_eq(hc_zk_state(c, TOPIC, q, &now), CTL_ZK_OK);
		snprintf(path, sizeof(path), "/brokers/topics/%s/partitions/%d/state", TOPIC, q);
		ck_assert_int_eq(hc_zk_exists(c, path, &zs), CTL_ZK_OK);
		ck_assert_msg(now.leader != victim && now.leader >= 0 &&
				      now.leader_epoch > before[q].leader_epoch,
			      "%s: %s-%d after broker %d's controlled shutdown: %s (was %s)", what,
			      TOPIC, q, victim, now.json, before[q].json);
		ck_assert_msg(moved[q] || zs.mtime <= exit_wall,
			      "%s: %s-%d's leadership moved (mtime %" PRId64 ") after broker %d's "
			      "exit was seen (%" PRId64 "): not a controlled shutdown",
			      what, TOPIC, q, zs.mtime, victim, exit_wall);
		if (!moved[q])
			moved_ms[q] = zs.mtime - t_term_wall;
		ck_assert_msg(moved_ms[q] < h_scaled_ms(HC_SESSION_MS),
			      "%s: %s-%d moved %" PRId64 " ms after SIGTERM, as late as a session "
			      "expiry", what, TOPIC, q, moved_ms[q]);
		if (moved_ms[q] > last)
			last = (long)moved_ms[q];
	}
	fprintf(stderr, "%s: broker %d led %d partition(s); moved within %ld ms; %s\n", what,
		victim, led[0] + led[1] + led[2], last,
		seen_alive ? "seen while it still ran" : "by the znode's mtime");

	char marker[PATH_MAX + 32];
	snprintf(marker, sizeof(marker), "%s/.kafka_cleanshutdown", c->b[victim]->dir);
	struct stat sb;
	ck_assert_msg(stat(marker, &sb) == 0, "%s: no clean-shutdown marker %s", what, marker);
	if (was_controller) {
		int ctl = -1;
		long long deadline = h_now_ms() + h_scaled_ms(10000);
		while ((ctl = hc_zk_controller(c)) < 0 && h_now_ms() < deadline)
			usleep(20 * 1000);
		ck_assert_msg(ctl >= 1 && ctl != victim, "%s: /controller names %d", what, ctl);
	}
	for (int q = 0; q < NPART; q++)
		if (led[q])
			ck_assert_msg(cc_producer_wait_ack_after(p, q, t_term, 20000) >= 0,
				      "%s: no acknowledgement on %s-%d after SIGTERM (first error %s)",
				      what, TOPIC, q, p->first_error);
	ck_assert_int_eq(hc_restart(c, victim), 0);
	wait_all_isr_full(c);
	return last;
}

START_TEST(test_controlled_shutdown)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, TOPIC, NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, TOPIC, NPART, 0, 300, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000); /* some data in every partition before the fault */

	wait_all_isr_full(&c);
	int leader = cc_leader(&c, TOPIC, 0, NULL);
	int64_t t1 = h_now_ms();
	long move1 = term_round(&c, p, leader, "leader of sd-0");
	int ctl = hc_zk_controller(&c);
	int64_t t2 = h_now_ms();
	long move2 = term_round(&c, p, ctl, "controller");
	cc_producer_stop(p, 30000);

	long f1 = -1, f2 = -1;
	for (int q = 0; q < NPART; q++) {
		long a = cc_producer_failover_ms(p, q, t1), b = cc_producer_failover_ms(p, q, t2);
		f1 = a > f1 ? a : f1;
		f2 = b > f2 ? b : f2;
	}
	printf("cluster_shutdown: SIGTERM of a leader: leadership moved after %ld ms, first "
	       "acknowledgement on every partition after %ld ms; of the controller: %ld ms, %ld ms\n",
	       move1, f1, move2, f2);

	ck_assert_msg(!p->fatal[0], "fatal: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld acknowledged: %ld failed, %ld indeterminate (first error %s)",
		      atomic_load(&p->nacked), atomic_load(&p->nsent), atomic_load(&p->nfailed),
		      atomic_load(&p->nindeterminate), p->first_error);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, TOPIC, NPART, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "controlled shutdowns");
	chk_free(h);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_shutdown");
	TCase *tc = tcase_create("shutdown");
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, test_controlled_shutdown);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
