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
 * zk_outage (CLUSTER.md 4.9): the cluster's own ZooKeeper stopped for 10 s
 * (longer than the session timeout: ZooKeeper gives the sessions it
 * restores a new timeout) under two idempotent acks=all producers, to
 * "zko" (3 partitions, replication factor 3) and "zkp" (1 partition on the
 * controller and one other broker, min.insync.replicas=2). Records are
 * acknowledged while it is down. 3 s into the outage the third broker, a
 * follower of every zko partition, is paused for 4 s (longer than
 * replica.lag.time.max.ms): zko's leaders would shrink their ISR but
 * cannot write it, so no zko record sent after the pause is acknowledged
 * before the follower resumes (an ISR shrink that ZooKeeper never saw is
 * not applied); zkp needs no ISR change and goes on (acknowledgements, no
 * gap of 2 s); zko acknowledges again once the follower is back, with
 * ZooKeeper still down. Once ZooKeeper is back the controller and its
 * epoch, every broker's registration (its czxid) and every partition's
 * leader and leader epoch are what they were, the ISRs are full, every
 * record is acknowledged and the checker finds nothing wrong. Printed:
 * the records acknowledged while ZooKeeper was down and the longest time
 * without one, per topic and phase (FIGURE lines, cc_print_window: zkp's
 * as the outage alone, zko's as the outage with the paused follower; the
 * zombie's from SIGSTOP to back in every ISR).
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

/* Broker id registered again (a czxid other than czxid0) and is in the
 * ISR of every partition of "zombie". */
static bool back_cond(hc_cluster *c, int id, int64_t czxid0, int npart)
{
	char path[64];
	ctl_zk_stat reg;
	snprintf(path, sizeof(path), "/brokers/ids/%d", id);
	if (hc_zk_exists(c, path, &reg) != CTL_ZK_OK || reg.czxid == czxid0)
		return false;
	for (int p = 0; p < npart; p++) {
		hc_state st;
		if (hc_zk_state(c, "zombie", p, &st) != CTL_ZK_OK || !hc_isr_has(&st, id))
			return false;
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
	int64_t t0 = h_now_ms();
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
	int64_t t_resume = h_now_ms();
	ck_assert_int_eq(hc_resume(&c, old), 0);
	fenced_arg fa = {.zombie = old, .old_epoch = e, .new_epoch = e + 1, .new_ctl = now,
			 .npart = NPART, .settled = settled};
	long long until = h_now_ms() + h_scaled_ms(6000);
	int64_t t1 = -1;
	while (h_now_ms() < until && !fenced_cond(&c, &fa)) {
		if (t1 < 0 && back_cond(&c, old, reg0.czxid, NPART))
			t1 = h_now_ms();
		usleep(50 * 1000);
	}
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
	if (t1 < 0)
		t1 = h_now_ms();
	ck_assert_msg(!fenced_cond(&c, &fa), "%s", fa.bad);
	/* it knew it was no longer controller: it resigned */
	ck_assert_msg(hc_log_has(&c, old, "resigns as controller"),
		      "the old controller %d never said it resigned", old);

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
	cc_window w;
	cc_producer_window(p, -1, t0, t_resume, &w);
	cc_print_window("cluster_controller", NULL, "controller paused past its session (SIGSTOP "
			"to SIGCONT)", &w);
	cc_producer_window(p, -1, t0, t1, &w);
	cc_print_window("cluster_controller", "controller_session_expiry",
			"controller paused past its session, SIGSTOP to back in every ISR", &w);
	printf("cluster_controller: zombie controller: new controller %d elected after %ld ms; "
	       "%ld records acknowledged in all, none lost, duplicated or divergent\n", now, ms,
	       r.acked);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

/* No record of p enqueued after from_ms was acknowledged before to_ms:
 * the count of those that were. */
static long acked_sent_between(cc_producer *p, int64_t from_ms, int64_t to_ms)
{
	long n = atomic_load(&p->nsent), k = 0;
	for (long i = 0; i < n; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if (r->state == CC_ACKED && r->sent_ms > from_ms && r->done_ms < to_ms)
			k++;
	}
	return k;
}

/* ZooKeeper stopped for 10 s under load (CLUSTER.md 4.9, 6.5 test 24):
 * produce goes on while it is down except where an ISR change is needed,
 * and when it is back nothing moved. */
START_TEST(test_zk_outage)
{
	enum { NPART = 3, OUTAGE_MS = 10000, PAUSE_AT = 3000, PAUSE_MS = 4000 };
	hc_cluster c;
	cc_start(&c, NULL, true); /* a ZooKeeper of its own, to stop */
	int ctl = hc_zk_controller(&c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");
	int f = ctl == 3 ? 2 : 3, o = 6 - ctl - f; /* f: the follower paused meanwhile */
	cc_create_topic(&c, "zko", NPART, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	const int32_t two[2] = {ctl, o}; /* a partition without f */
	cc_create_topic(&c, "zkp", 1, 2, two,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, "zko", NPART, 0, 300, NULL);
	cc_producer *q = cc_producer_start(&c, "zkp", 1, 1, 100, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	ck_assert_msg(cc_producer_wait_ack_after(q, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);
	int64_t e = hc_zk_controller_epoch(&c, NULL);
	hc_state st0[NPART + 1];
	ctl_zk_stat reg0[4];
	for (int k = 0; k < NPART; k++)
		ck_assert_int_eq(hc_zk_state(&c, "zko", k, &st0[k]), CTL_ZK_OK);
	ck_assert_int_eq(hc_zk_state(&c, "zkp", 0, &st0[NPART]), CTL_ZK_OK);
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
	long long wait = t_stop + PAUSE_AT - h_now_ms();
	if (wait > 0)
		usleep((useconds_t)wait * 1000);

	/* a follower of zko stops fetching for longer than replica.lag.time.max.ms:
	 * zko's leaders would shrink their ISR but cannot write it */
	int64_t t_pause = h_now_ms();
	ck_assert_int_eq(hc_pause(&c, f), 0);
	cc_log("follower %d paused, ZooKeeper still down", f);
	usleep(PAUSE_MS * 1000);
	int64_t t_resume = h_now_ms();
	ck_assert_int_eq(hc_resume(&c, f), 0);
	cc_log("follower %d resumed", f);
	/* zko works again once f caught up, ZooKeeper still down */
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, t_resume, 2500) >= 0,
		      "zko: no acknowledgement after the follower came back, ZooKeeper still down");
	wait = t_stop + OUTAGE_MS - h_now_ms();
	if (wait > 0)
		usleep((useconds_t)wait * 1000);
	int64_t t_zk = h_now_ms();
	ck_assert_int_eq(hc_zk_restart(&c), 0);
	cc_log("ZooKeeper back after %" PRId64 " ms", t_zk - t_stop);
	usleep(3000 * 1000);

	ck_assert_int_eq(hc_zk_controller(&c), ctl);
	ck_assert_int_eq(hc_zk_controller_epoch(&c, NULL), e);
	for (int id = 1; id <= 3; id++) {
		char path[64];
		ctl_zk_stat reg;
		snprintf(path, sizeof(path), "/brokers/ids/%d", id);
		ck_assert_int_eq(hc_zk_exists(&c, path, &reg), CTL_ZK_OK);
		ck_assert_msg(reg.czxid == reg0[id].czxid,
			      "broker %d registered again across a ZooKeeper outage (its session "
			      "should have lived on)", id);
	}
	for (int k = 0; k <= NPART; k++) {
		hc_state st;
		const char *t = k < NPART ? "zko" : "zkp";
		int part = k < NPART ? k : 0;
		ck_assert_int_eq(hc_zk_state(&c, t, part, &st), CTL_ZK_OK);
		ck_assert_msg(st.leader == st0[k].leader && st.leader_epoch == st0[k].leader_epoch,
			      "%s-%d: leadership changed across the ZooKeeper outage: %s (was %s)", t,
			      part, st.json, st0[k].json);
	}
	static const int32_t all[3] = {1, 2, 3};
	for (int k = 0; k < NPART; k++)
		ck_assert_msg(hc_wait_isr(&c, "zko", k, all, 3, 20000) >= 0, "zko-%d: ISR not full", k);
	ck_assert_msg(hc_wait_isr(&c, "zkp", 0, two, 2, 20000) >= 0, "zkp-0: ISR not full");

	chk_report r, rq;
	cc_producer_verify(&c, p, "zko", NPART, NULL, &r, "ZooKeeper outage (zko)");
	cc_producer_verify(&c, q, "zkp", 1, NULL, &rq, "ZooKeeper outage (zkp)");
	/* while f was paused zko's high watermark could not pass it: the ISR
	 * that would drop it could not be written (no acknowledgement of a
	 * record sent after the pause until f was back) */
	long early = acked_sent_between(p, t_pause + 200, t_resume);
	ck_assert_msg(early == 0,
		      "zko: %ld records sent while follower %d was paused (and ZooKeeper down) were "
		      "acknowledged before it resumed: an ISR shrink that ZooKeeper never saw was "
		      "applied", early, f);
	/* zkp, without f, needed no ISR change: it went on */
	cc_window wq;
	cc_producer_window(q, -1, t_pause, t_resume, &wq);
	ck_assert_msg(wq.acked > 0 && wq.longest_gap_ms < 2000,
		      "zkp (no replica on the paused broker) stalled while ZooKeeper was down: %ld "
		      "acknowledged, longest gap %" PRId64 " ms", wq.acked, wq.longest_gap_ms);

	cc_window w;
	cc_producer_window(p, -1, t_stop, t_zk, &w);
	cc_print_window("cluster_controller", "zk_outage_follower_paused",
			"ZooKeeper down 10 s (zko, RF 3, a follower of every partition paused 4 s "
			"meanwhile)", &w);
	cc_producer_window(q, -1, t_stop, t_zk, &w);
	cc_print_window("cluster_controller", "zk_outage",
			"ZooKeeper down 10 s (zkp, RF 2, not on the paused follower)", &w);
	cc_producer_window(p, -1, t_pause, t_resume, &w);
	cc_print_window("cluster_controller", NULL, "ZooKeeper down and a follower paused (zko: "
			"stalls, its ISR shrink cannot be written)", &w);
	cc_print_window("cluster_controller", NULL, "ZooKeeper down and a follower paused (zkp: "
			"needs no ISR change)", &wq);
	printf("cluster_controller: ZooKeeper outage of %" PRId64 " ms: no leader or leader epoch "
	       "changed, no broker registered again; %ld + %ld records acknowledged in all, none "
	       "lost, duplicated or divergent\n", t_zk - t_stop, r.acked, rq.acked);
	cc_producer_free(p);
	cc_producer_free(q);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_controller");
	TCase *tc = tcase_create("controller");
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, test_kill);
	tcase_add_test(tc, test_zombie);
	tcase_add_test(tc, test_zk_outage);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
