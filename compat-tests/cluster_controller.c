/*
 * cluster_controller.c - controller fail-over and fencing (CLUSTER.md 2.1,
 * 4.4; 6.5 tests 2 and 3).
 *
 * kill: three brokers, a topic of 3 partitions with replication factor 3.
 * The controller (/controller) is killed with SIGKILL: another broker holds
 * /controller within the session timeout plus 4 s, /controller_epoch went
 * up by exactly one, every live broker's Metadata names the new controller,
 * every partition the old one led has a new leader chosen by the new
 * controller (controller_epoch of its state znode = the new epoch). The old
 * controller restarts and rejoins as an ordinary broker: registered again,
 * back in every ISR, the controller and its epoch unchanged.
 *
 * zombie: the same with SIGSTOP instead of the kill, while an idempotent
 * acks=all producer writes to a topic of 6 partitions: once the paused
 * broker is out of every partition (the ones it led re-elected under the
 * new controller epoch; out of the others' ISR, by their leader or by the
 * new controller), the old controller gets SIGCONT. It wakes up believing
 * it is controller and, as leader of its partitions, that its followers
 * stopped fetching: whatever it then writes must be refused. For 6 s after
 * SIGCONT, every 50 ms: a state znode may change only by its leader's ISR
 * write (same leader, same leader epoch) or by an election under the new
 * controller epoch, never name the old controller as leader without one,
 * and /controller and /controller_epoch stay the new controller's. The old
 * controller registers
 * again with a new broker epoch (czxid), names the new controller in its
 * Metadata, and rejoins every ISR as an ordinary broker. Every record was
 * acknowledged and the checker finds none lost, duplicated or divergent.
 *
 * zk_outage (CLUSTER.md 4.9): the cluster's own ZooKeeper stopped for about
 * 2 s, less than the session timeout, under an idempotent acks=all
 * producer: records are acknowledged while it is down; once it is back
 * the controller and its epoch, every broker's registration (its czxid)
 * and every partition's leader and leader epoch are what they were, every
 * record acknowledged, the checker finds nothing wrong.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

typedef struct new_ctl_arg {
	int old;
	int64_t epoch; /* the wanted /controller_epoch */
	int got;
	int64_t got_epoch;
} new_ctl_arg;

static bool new_ctl_cond(hc_cluster *c, void *arg)
{
	new_ctl_arg *a = arg;
	a->got = hc_zk_controller(c);
	a->got_epoch = hc_zk_controller_epoch(c, NULL);
	return a->got >= 1 && a->got != a->old && a->got_epoch >= a->epoch;
}

/* Wait for a controller other than old; checks the epoch went up by one.
 * Returns the new controller's id and the time it took in *ms. */
static int wait_new_controller(hc_cluster *c, int old, int64_t old_epoch, long *ms)
{
	new_ctl_arg a = {.old = old, .epoch = old_epoch + 1};
	*ms = hc_wait(c, HC_SESSION_MS + 4000, new_ctl_cond, &a);
	ck_assert_msg(*ms >= 0,
		      "no new controller within %d ms of losing broker %d: /controller names %d, "
		      "/controller_epoch %" PRId64,
		      h_scaled_ms(HC_SESSION_MS + 4000), old, a.got, a.got_epoch);
	ck_assert_msg(a.got_epoch == old_epoch + 1,
		      "/controller_epoch went from %" PRId64 " to %" PRId64 ", not up by one",
		      old_epoch, a.got_epoch);
	return a.got;
}

typedef struct md_ctl_arg {
	int want;
	char why[128];
} md_ctl_arg;

static bool md_ctl_cond(hc_cluster *c, void *arg)
{
	md_ctl_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id) || c->paused[id])
			continue;
		hc_md md;
		if (hc_metadata(c, id, NULL, &md, 2000) < 0) {
			snprintf(a->why, sizeof(a->why), "broker %d: no Metadata", id);
			return false;
		}
		int ctl = md.controller_id;
		hc_md_free(&md);
		if (ctl != a->want) {
			snprintf(a->why, sizeof(a->why), "broker %d names controller %d", id, ctl);
			return false;
		}
	}
	return true;
}

static void wait_metadata_controller(hc_cluster *c, int want)
{
	md_ctl_arg a = {.want = want};
	ck_assert_msg(hc_wait(c, 10000, md_ctl_cond, &a) >= 0,
		      "Metadata does not name controller %d: %s", want, a.why);
}

static void wait_all_isr_full(hc_cluster *c, const char *topic, int npart)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < npart; p++)
		ck_assert_msg(hc_wait_isr(c, topic, p, all, 3, 20000) >= 0,
			      "%s-%d: the ISR is not all three (state above)", topic, p);
}

START_TEST(test_kill)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "ctl", 3, 3, NULL, NULL);
	int old = hc_zk_controller(&c);
	int64_t e = hc_zk_controller_epoch(&c, NULL);
	ck_assert_msg(old >= 1 && e >= 1, "controller %d, epoch %" PRId64, old, e);
	bool led[3];
	for (int p = 0; p < 3; p++)
		led[p] = cc_leader(&c, "ctl", p, NULL) == old;

	ck_assert_int_eq(hc_kill(&c, old), 0);
	long ms;
	int now = wait_new_controller(&c, old, e, &ms);
	printf("cluster_controller: controller %d killed, %d elected after %ld ms "
	       "(zookeeper.session.timeout.ms=%d)\n",
	       old, now, ms, HC_SESSION_MS);
	wait_metadata_controller(&c, now);
	for (int p = 0; p < 3; p++) {
		if (!led[p])
			continue;
		cc_wait_leader(&c, "ctl", p, old, 15000);
		hc_state st;
		ck_assert_int_eq(hc_zk_state(&c, "ctl", p, &st), CTL_ZK_OK);
		ck_assert_msg(st.controller_epoch == e + 1,
			      "ctl-%d: elected with controller epoch %d, not the new %" PRId64 " (%s)",
			      p, st.controller_epoch, e + 1, st.json);
	}

	/* the old controller returns as an ordinary broker */
	ck_assert_int_eq(hc_restart(&c, old), 0);
	ck_assert_msg(hc_wait_registered(&c, NULL, 20000) >= 0, "not registered again");
	ck_assert_msg(hc_wait_formed(&c, 20000) == 0, "the cluster did not form again");
	wait_all_isr_full(&c, "ctl", 3);
	ck_assert_int_eq(hc_zk_controller(&c), now);
	ck_assert_int_eq(hc_zk_controller_epoch(&c, NULL), e + 1);
	wait_metadata_controller(&c, now);
	cc_finish(&c);
}
END_TEST

typedef struct fenced_arg {
	int zombie;
	int64_t old_epoch, new_epoch;
	int new_ctl;
	int npart;
	const hc_state *settled; /* the states once the new controller handled it */
	char bad[2048];
} fenced_arg;

/*
 * The first sign of a write that got through, in bad; true then. Since
 * the settled states a partition's znode may only have changed
 *   - by its leader, the same as settled (not the zombie): an ISR change,
 *     same leader and leader epoch; such a write carries the controller
 *     epoch of the leader's election, which may be the old one (a leader
 *     that shrank the ISR itself before the session expired);
 *   - by the new controller: a new leader epoch under the new controller
 *     epoch.
 * Anything else (a leader or leader epoch moved under the old controller
 * epoch, the zombie named leader without a new election) is a zombie's.
 */
static bool fenced_cond(hc_cluster *c, void *arg)
{
	fenced_arg *a = arg;
	if (a->bad[0])
		return true;
	int ctl = hc_zk_controller(c);
	int64_t e = hc_zk_controller_epoch(c, NULL);
	if (ctl != a->new_ctl || e != a->new_epoch) {
		snprintf(a->bad, sizeof(a->bad), "/controller names %d, /controller_epoch %" PRId64
			 " (the new controller is %d with epoch %" PRId64 ")",
			 ctl, e, a->new_ctl, a->new_epoch);
		return true;
	}
	for (int p = 0; p < a->npart; p++) {
		hc_state st;
		const hc_state *was = &a->settled[p];
		if (hc_zk_state(c, "zombie", p, &st) != CTL_ZK_OK || st.zk_version == was->zk_version)
			continue;
		bool isr_only = st.leader == was->leader && st.leader_epoch == was->leader_epoch;
		bool election = st.leader_epoch > was->leader_epoch &&
				st.controller_epoch == a->new_epoch;
		if (!isr_only && !election) {
			snprintf(a->bad, sizeof(a->bad),
				 "zombie-%d written after the new controller settled it (mzxid %" PRId64
				 "), neither an ISR change by its leader nor an election under controller "
				 "epoch %" PRId64 ": %s (was %s)",
				 p, st.mzxid, a->new_epoch, st.json, was->json);
			return true;
		}
		if (st.leader == a->zombie && !election) {
			snprintf(a->bad, sizeof(a->bad),
				 "zombie-%d names the old controller %d as leader without a new "
				 "election: %s (was %s)", p, a->zombie, st.json, was->json);
			return true;
		}
	}
	return false;
}

typedef struct settled_arg {
	int zombie;
	int64_t epoch;
	int npart;
	const bool *led;   /* partitions the zombie led: elections by the new controller */
	hc_state *st;
	char why[600];
} settled_arg;

static bool settled_cond(hc_cluster *c, void *arg)
{
	settled_arg *a = arg;
	for (int p = 0; p < a->npart; p++) {
		if (hc_zk_state(c, "zombie", p, &a->st[p]) != CTL_ZK_OK)
			return false;
		if (a->st[p].leader == a->zombie || a->st[p].leader < 0 ||
		    hc_isr_has(&a->st[p], a->zombie) ||
		    (a->led[p] && a->st[p].controller_epoch != a->epoch)) {
			snprintf(a->why, sizeof(a->why), "zombie-%d: %s", p, a->st[p].json);
			return false;
		}
	}
	return true;
}

START_TEST(test_zombie)
{
	enum { NPART = 6 };
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "zombie", NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, "zombie", NPART, 0, 200, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000); /* some data in every partition before the fault */

	int old = hc_zk_controller(&c);
	int64_t e = hc_zk_controller_epoch(&c, NULL);
	char path[64];
	snprintf(path, sizeof(path), "/brokers/ids/%d", old);
	ctl_zk_stat reg0;
	ck_assert_int_eq(hc_zk_exists(&c, path, &reg0), CTL_ZK_OK);

	bool led[NPART];
	for (int q = 0; q < NPART; q++)
		led[q] = cc_leader(&c, "zombie", q, NULL) == old;
	ck_assert_int_eq(hc_pause(&c, old), 0);
	long ms;
	int now = wait_new_controller(&c, old, e, &ms);
	cc_log("controller %d paused, %d elected after %ld ms", old, now, ms);
	hc_state settled[NPART];
	settled_arg sa = {.zombie = old, .epoch = e + 1, .npart = NPART, .led = led, .st = settled};
	ck_assert_msg(hc_wait(&c, 20000, settled_cond, &sa) >= 0,
		      "the paused broker is not out of every partition (leader, ISR; its own "
		      "partitions elected under controller epoch %" PRId64 "): %s",
		      e + 1, sa.why);
	cc_log("every partition moved off the paused broker");

	/* wake the zombie and watch ZooKeeper */
	ck_assert_int_eq(hc_resume(&c, old), 0);
	fenced_arg fa = {.zombie = old, .old_epoch = e, .new_epoch = e + 1, .new_ctl = now,
			 .npart = NPART, .settled = settled};
	long long until = h_now_ms() + h_scaled_ms(6000);
	while (h_now_ms() < until && !fenced_cond(&c, &fa))
		usleep(50 * 1000);
	ck_assert_msg(!fa.bad[0], "a write of the old controller got through: %s", fa.bad);

	/* it comes back as an ordinary broker */
	ck_assert_msg(hc_wait_registered(&c, NULL, 20000) >= 0, "the old controller did not "
		      "register again");
	ctl_zk_stat reg1;
	ck_assert_int_eq(hc_zk_exists(&c, path, &reg1), CTL_ZK_OK);
	ck_assert_msg(reg1.czxid != reg0.czxid,
		      "broker %d's registration has the same czxid (broker epoch) as before its "
		      "session expired", old);
	wait_metadata_controller(&c, now);
	wait_all_isr_full(&c, "zombie", NPART);
	ck_assert_msg(!fenced_cond(&c, &fa), "%s", fa.bad);

	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "fatal: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld acknowledged (first error %s)", atomic_load(&p->nacked),
		      atomic_load(&p->nsent), p->first_error);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, "zombie", NPART, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "controller paused past its session");
	chk_free(h);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

/* ZooKeeper stopped for less than a session timeout under load (CLUSTER.md
 * 4.9, 6.5 test 24): produce goes on while it is down, and when it is back
 * nothing moved. */
START_TEST(test_zk_outage)
{
	enum { NPART = 3 };
	hc_cluster c;
	cc_start(&c, NULL, true); /* a ZooKeeper of its own, to stop */
	cc_create_topic(&c, "zko", NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, "zko", NPART, 0, 300, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);
	int ctl = hc_zk_controller(&c);
	int64_t e = hc_zk_controller_epoch(&c, NULL);
	hc_state st0[NPART];
	ctl_zk_stat reg0[4];
	for (int q = 0; q < NPART; q++)
		ck_assert_int_eq(hc_zk_state(&c, "zko", q, &st0[q]), CTL_ZK_OK);
	for (int id = 1; id <= 3; id++) {
		char path[64];
		snprintf(path, sizeof(path), "/brokers/ids/%d", id);
		ck_assert_int_eq(hc_zk_exists(&c, path, &reg0[id]), CTL_ZK_OK);
	}

	int64_t t_stop = h_now_ms();
	ck_assert_int_eq(hc_zk_stop(&c), 0);
	cc_log("ZooKeeper stopped");
	/* acks=all needs no ZooKeeper while the ISR stays as it is */
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, t_stop + 300, 2000) >= 0,
		      "no acknowledgement while ZooKeeper was down (first error %s)", p->first_error);
	/* back within the session timeout: the brokers' sessions live on */
	long long down = h_now_ms() - t_stop;
	if (down < 2000)
		usleep((useconds_t)(2000 - down) * 1000);
	ck_assert_int_eq(hc_zk_restart(&c), 0);
	cc_log("ZooKeeper back after %lld ms", h_now_ms() - t_stop);
	usleep(3000 * 1000);

	ck_assert_int_eq(hc_zk_controller(&c), ctl);
	ck_assert_int_eq(hc_zk_controller_epoch(&c, NULL), e);
	for (int id = 1; id <= 3; id++) {
		char path[64];
		ctl_zk_stat reg;
		snprintf(path, sizeof(path), "/brokers/ids/%d", id);
		ck_assert_int_eq(hc_zk_exists(&c, path, &reg), CTL_ZK_OK);
		ck_assert_msg(reg.czxid == reg0[id].czxid,
			      "broker %d registered again across a ZooKeeper outage shorter than its "
			      "session", id);
	}
	for (int q = 0; q < NPART; q++) {
		hc_state st;
		ck_assert_int_eq(hc_zk_state(&c, "zko", q, &st), CTL_ZK_OK);
		ck_assert_msg(st.leader == st0[q].leader && st.leader_epoch == st0[q].leader_epoch,
			      "zko-%d: leadership changed across the ZooKeeper outage: %s (was %s)", q,
			      st.json, st0[q].json);
	}
	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "fatal: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld acknowledged (first error %s)", atomic_load(&p->nacked),
		      atomic_load(&p->nsent), p->first_error);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, "zko", NPART, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "ZooKeeper outage");
	chk_free(h);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_controller");
	TCase *tc = tcase_create("controller");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kill);
	tcase_add_test(tc, test_zombie);
	tcase_add_test(tc, test_zk_outage);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
