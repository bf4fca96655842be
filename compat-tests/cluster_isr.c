/*
 * cluster_isr.c - the in-sync replica set, acks and min.insync.replicas
 * (CLUSTER.md 3.5, 3.6, 4.2; 6.5 tests 5 and 6).
 *
 * The brokers run with zookeeper.session.timeout.ms=20000 (all but
 * follower_death_parked), so a follower
 * stopped for a few seconds keeps its session: what takes it out of the ISR
 * is its leader (replica.lag.time.max.ms=3000, checked every 1.5 s), not
 * the controller. Every topic is assigned with the controller as the first
 * replica (the leader), so SIGSTOP only ever stops followers.
 *
 * shrink_expand: RF 3, min.insync.replicas 2, an idempotent acks=all
 * producer running. A follower SIGSTOPped leaves the ISR in the state znode
 * within 1.5 x replica.lag.time.max.ms (+ 1.5 s of margin) with the leader
 * epoch unchanged and the znode's version bumped (a leader's ISR write,
 * CLUSTER.md 2.10), every other broker's Metadata then shows it, acks=all
 * records keep being acknowledged meanwhile, and after SIGCONT it rejoins
 * the ISR (leader epoch still unchanged). Every record acknowledged, the
 * checker finds nothing wrong.
 *
 * rf2_min_isr2: RF 2, min.insync.replicas 2, raw Produce v9. With the
 * follower stopped: acks=1 records are appended but a consumer's Fetch
 * (ReplicaId -1) sees nothing at or above the high watermark (the fetch's
 * high watermark stays where it was, records only below it; a fetch at the
 * high watermark is empty); an acks=-1 Produce parked for the follower ends
 * in NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) once the ISR shrank to the
 * leader (the record is in the log and becomes visible); the next acks=-1
 * Produce gets NOT_ENOUGH_REPLICAS (19) and nothing is appended (the
 * leader's log end offset from its files is unchanged, and the next
 * record, acks=1, gets that very offset). After SIGCONT the follower
 * rejoins, acks=-1 succeeds, and both replicas hold the same batches.
 *
 * follower_death_parked (replica.lag.time.max.ms=60000, the default
 * session timeout of 4 s): a follower is killed (-9) and an acks=-1 Produce
 * sent at once waits for it; the controller takes it out of the ISR with a
 * new leader epoch but the same leader, and the request completes with
 * NONE at its offset, as Kafka's DelayedProduce does (NOT_LEADER_OR_FOLLOWER
 * is for a partition no longer led here).
 *
 * acks_matrix: acks 0/1/-1 x min.insync.replicas 1/2 x ISR size 3/2/1 (two
 * topics of RF 3, followers stopped one after the other, each time followed
 * by one acks=1 record: a stopped follower that has the whole log stays in
 * the ISR of an idle partition, as in Kafka): acks=-1 with an
 * ISR below min.insync.replicas is NOT_ENOUGH_REPLICAS and appends
 * nothing; everything else is appended at the log end offset (acks 1 and
 * -1 answer 0; acks 0 answers nothing).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

#define SESSION_OVERRIDE "zookeeper.session.timeout.ms=20000"
/* replica.lag.time.max.ms x 1.5 (the shrink check runs every half of it),
 * plus a margin for the write and a loaded machine */
#define SHRINK_MS (HC_LAG_MS * 3 / 2 + 1500)

enum { NOT_ENOUGH_REPLICAS = 19, NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20 };

static void start(hc_cluster *c)
{
	hc_options o = {.overrides = (const char *const[]){SESSION_OVERRIDE, NULL}};
	cc_start(c, &o, false);
}

/* The controller and the two others. */
static void roles(hc_cluster *c, int *ctl, int *f1, int *f2)
{
	*ctl = hc_zk_controller(c);
	ck_assert_msg(*ctl >= 1 && *ctl <= 3, "no controller");
	int k = 0, other[2];
	for (int id = 1; id <= 3; id++)
		if (id != *ctl)
			other[k++] = id;
	*f1 = other[0];
	*f2 = other[1];
}

/* Wait for the ISR of topic-0 to be want[0..n) and check the leader epoch
 * stayed epoch; returns the ms waited. */
static long wait_isr(hc_cluster *c, const char *topic, const int32_t *want, int n, int timeout_ms,
		     int32_t epoch)
{
	long ms = hc_wait_isr(c, topic, 0, want, n, timeout_ms);
	ck_assert_msg(ms >= 0, "%s-0: the ISR did not become the %d wanted within %d ms (state "
		      "above)", topic, n, h_scaled_ms(timeout_ms));
	hc_state st;
	ck_assert_int_eq(hc_zk_state(c, topic, 0, &st), CTL_ZK_OK);
	ck_assert_msg(st.leader_epoch == epoch,
		      "%s-0: the leader epoch moved from %d to %d with a leader's ISR change (%s)",
		      topic, epoch, st.leader_epoch, st.json);
	return ms;
}

typedef struct md_isr_arg {
	const char *topic;
	int without;
	char why[256];
} md_isr_arg;

/* every running, not paused broker's Metadata leaves `without` out of the
 * ISR of topic-0 */
static bool md_isr_cond(hc_cluster *c, void *arg)
{
	md_isr_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id) || c->paused[id])
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0)
			return false;
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), 0);
		bool has = !p;
		for (int i = 0; p && i < p->nisr; i++)
			has |= p->isr[i] == a->without;
		hc_md_free(&md);
		if (has) {
			snprintf(a->why, sizeof(a->why), "broker %d still lists %d in the ISR", id,
				 a->without);
			return false;
		}
	}
	return true;
}

START_TEST(test_shrink_expand)
{
	hc_cluster c;
	start(&c);
	int ctl, f1, f2;
	roles(&c, &ctl, &f1, &f2);
	const int32_t assign[3] = {ctl, f1, f2};
	cc_create_topic(&c, "isr", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	hc_state st0;
	ck_assert_int_eq(hc_zk_state(&c, "isr", 0, &st0), CTL_ZK_OK);

	cc_producer *p = cc_producer_start(&c, "isr", 1, 0, 200, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");

	/* the follower stops; the leader takes it out of the ISR */
	int64_t t_pause = h_now_ms();
	ck_assert_int_eq(hc_pause(&c, f2), 0);
	const int32_t two[2] = {ctl, f1};
	long shrink = wait_isr(&c, "isr", two, 2, SHRINK_MS, st0.leader_epoch);
	fprintf(stderr, "shrink after %ld ms\n", shrink);
	hc_state st1;
	ck_assert_int_eq(hc_zk_state(&c, "isr", 0, &st1), CTL_ZK_OK);
	ck_assert_msg(st1.zk_version > st0.zk_version, "the state znode's version did not move");
	md_isr_arg ma = {.topic = "isr", .without = f2};
	ck_assert_msg(hc_wait(&c, 5000, md_isr_cond, &ma) >= 0, "Metadata: %s", ma.why);
	/* acks=all goes on with two in-sync replicas */
	int64_t t_shrunk = h_now_ms();
	ck_assert_msg(cc_producer_wait_ack_after(p, 0, t_shrunk, 5000) >= 0,
		      "no acks=all record acknowledged with the ISR at 2 (first error %s)",
		      p->first_error);
	usleep(1000 * 1000);

	/* back: it catches up and rejoins */
	ck_assert_int_eq(hc_resume(&c, f2), 0);
	const int32_t three[3] = {ctl, f1, f2};
	long expand = wait_isr(&c, "isr", three, 3, 15000, st0.leader_epoch);
	fprintf(stderr, "paused %lld ms; rejoined %ld ms after SIGCONT\n",
		(long long)(h_now_ms() - t_pause), expand);
	printf("cluster_isr: a stopped follower left the ISR after %ld ms "
	       "(replica.lag.time.max.ms=%d), rejoined %ld ms after SIGCONT\n",
	       shrink, HC_LAG_MS, expand);

	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "fatal: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld acknowledged (first error %s)", atomic_load(&p->nacked),
		      atomic_load(&p->nsent), p->first_error);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, "isr", 1, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "ISR shrink and expand");
	chk_free(h);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

/* Fetch from offset on broker id: the records must all be below the high
 * watermark; returns it and the number of records. */
static int64_t fetch_below_hw(hc_cluster *c, int id, const char *topic, int64_t offset, int *n,
			      cc_fetched *recs, int cap)
{
	int64_t hw = -1;
	int16_t err = cc_raw_fetch(c, id, topic, 0, offset, &hw, recs, cap, n);
	ck_assert_msg(err == 0, "Fetch %s-0 at %" PRId64 ": error %d", topic, offset, err);
	for (int i = 0; i < *n; i++)
		ck_assert_msg(recs[i].offset < hw,
			      "a consumer's Fetch returned offset %" PRId64 " (%s) at or above the "
			      "high watermark %" PRId64,
			      recs[i].offset, recs[i].value, hw);
	return hw;
}

START_TEST(test_rf2_min_isr2)
{
	hc_cluster c;
	start(&c);
	int ctl, f1, f2;
	roles(&c, &ctl, &f1, &f2);
	(void)f2;
	const char *t = "isr2";
	const int32_t assign[2] = {ctl, f1};
	cc_create_topic(&c, t, 1, 2, assign,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	hc_state st0;
	ck_assert_int_eq(hc_zk_state(&c, t, 0, &st0), CTL_ZK_OK);
	int64_t base;
	cc_fetched recs[64];
	int n;

	ck_assert_int_eq(cc_raw_produce(&c, ctl, t, 0, -1, 3, 0, &base), 0); /* rec-0..2 */
	ck_assert_int_eq(base, 0);

	ck_assert_int_eq(hc_pause(&c, f1), 0);
	/* acks=1: appended, not committed */
	ck_assert_int_eq(cc_raw_produce(&c, ctl, t, 0, 1, 2, 3, &base), 0); /* rec-3, rec-4 */
	ck_assert_int_eq(base, 3);
	ck_assert_int_eq(cc_log_end_offset(&c, ctl, t, 0), 5);
	int64_t hw = fetch_below_hw(&c, ctl, t, 0, &n, recs, 64);
	ck_assert_msg(hw == 3 && n == 3, "with the follower stopped: high watermark %" PRId64
		      " and %d records visible, expected 3 and 3", hw, n);
	hw = fetch_below_hw(&c, ctl, t, 3, &n, recs, 64);
	ck_assert_msg(n == 0, "a Fetch at the high watermark returned %d records", n);

	/* acks=-1 waits for the stopped follower until the leader drops it:
	 * then the ISR is below min.insync.replicas after the append */
	long long t0 = h_now_ms();
	int16_t err = cc_raw_produce(&c, ctl, t, 0, -1, 1, 5, &base); /* rec-5 */
	long waited = (long)(h_now_ms() - t0);
	ck_assert_msg(err == NOT_ENOUGH_REPLICAS_AFTER_APPEND,
		      "acks=-1 parked while the ISR shrank below min.insync.replicas: error %d "
		      "after %ld ms, expected NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)",
		      err, waited);
	hc_state st1;
	ck_assert_int_eq(hc_zk_state(&c, t, 0, &st1), CTL_ZK_OK);
	ck_assert_msg(st1.nisr == 1 && st1.isr[0] == ctl, "ISR: %s", st1.json);
	ck_assert_int_eq(st1.leader_epoch, st0.leader_epoch);
	int64_t leo = cc_log_end_offset(&c, ctl, t, 0);
	ck_assert_msg(leo == 6, "log end offset %" PRId64 " after the parked record, not 6", leo);
	hw = fetch_below_hw(&c, ctl, t, 0, &n, recs, 64);
	ck_assert_msg(hw == 6 && n == 6, "ISR [leader]: high watermark %" PRId64 ", %d records", hw,
		      n);

	/* now refused before the append */
	err = cc_raw_produce(&c, ctl, t, 0, -1, 1, 6, &base); /* rec-6: refused */
	ck_assert_msg(err == NOT_ENOUGH_REPLICAS,
		      "acks=-1 with ISR 1 < min.insync.replicas 2: error %d, expected "
		      "NOT_ENOUGH_REPLICAS (19)", err);
	usleep(300 * 1000);
	ck_assert_msg(cc_log_end_offset(&c, ctl, t, 0) == 6,
		      "NOT_ENOUGH_REPLICAS, yet the log end offset moved to %" PRId64,
		      cc_log_end_offset(&c, ctl, t, 0));
	ck_assert_int_eq(cc_raw_produce(&c, ctl, t, 0, 1, 1, 7, &base), 0); /* rec-7, acks=1 */
	ck_assert_msg(base == 6, "the acks=1 record after a refused one got offset %" PRId64
		      ", not 6", base);

	/* the follower returns */
	ck_assert_int_eq(hc_resume(&c, f1), 0);
	const int32_t both[2] = {ctl, f1};
	wait_isr(&c, t, both, 2, 15000, st0.leader_epoch);
	err = cc_raw_produce(&c, ctl, t, 0, -1, 1, 8, &base); /* rec-8 */
	ck_assert_msg(err == 0 && base == 7, "acks=-1 after the rejoin: error %d at %" PRId64, err,
		      base);
	hw = fetch_below_hw(&c, ctl, t, 0, &n, recs, 64);
	ck_assert_msg(hw == 8 && n == 8, "high watermark %" PRId64 ", %d records", hw, n);
	static const char *const want[8] = {"rec-0", "rec-1", "rec-2", "rec-3",
					    "rec-4", "rec-5", "rec-7", "rec-8"};
	for (int i = 0; i < 8; i++)
		ck_assert_msg(recs[i].offset == i && strcmp(recs[i].value, want[i]) == 0,
			      "offset %d holds %s at %" PRId64 ", expected %s", i, recs[i].value,
			      recs[i].offset, want[i]);
	const int ids[2] = {ctl, f1};
	char why[512];
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	while (!cc_logs_equal(&c, t, 0, ids, 2, why, sizeof(why)) && h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_msg(cc_logs_equal(&c, t, 0, ids, 2, why, sizeof(why)), "replicas differ: %s", why);
	cc_finish(&c);
}
END_TEST

/* One produce of the matrix: one record "rec-<seq>" with acks to topic on
 * the leader; expect_ner: NOT_ENOUGH_REPLICAS and nothing appended. */
static void matrix_one(hc_cluster *c, int leader, const char *topic, int16_t acks, int isr,
		       int min_isr, int *seq)
{
	int64_t leo = cc_log_end_offset(c, leader, topic, 0), base;
	bool ner = acks == -1 && isr < min_isr;
	int16_t err = cc_raw_produce(c, leader, topic, 0, acks, 1, (*seq)++, &base);
	if (ner) {
		ck_assert_msg(err == NOT_ENOUGH_REPLICAS,
			      "acks=%d, min.insync.replicas=%d, ISR %d: error %d, expected "
			      "NOT_ENOUGH_REPLICAS (19)", acks, min_isr, isr, err);
		usleep(200 * 1000);
		ck_assert_msg(cc_log_end_offset(c, leader, topic, 0) == leo,
			      "acks=%d, min.insync.replicas=%d, ISR %d: refused but appended", acks,
			      min_isr, isr);
		return;
	}
	ck_assert_msg(err == 0, "acks=%d, min.insync.replicas=%d, ISR %d: error %d, expected 0",
		      acks, min_isr, isr, err);
	if (acks != 0)
		ck_assert_msg(base == leo, "acks=%d, min.insync.replicas=%d, ISR %d: offset %" PRId64
			      ", log end offset was %" PRId64, acks, min_isr, isr, base, leo);
	long long deadline = h_now_ms() + h_scaled_ms(3000);
	int64_t now;
	while ((now = cc_log_end_offset(c, leader, topic, 0)) == leo && h_now_ms() < deadline)
		usleep(20 * 1000);
	ck_assert_msg(now == leo + 1, "acks=%d, min.insync.replicas=%d, ISR %d: log end offset %"
		      PRId64 " after one record at %" PRId64, acks, min_isr, isr, now, leo);
}

START_TEST(test_acks_matrix)
{
	hc_cluster c;
	start(&c);
	int ctl, f1, f2;
	roles(&c, &ctl, &f1, &f2);
	const int32_t assign[3] = {ctl, f1, f2};
	cc_create_topic(&c, "m1", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "1", NULL});
	cc_create_topic(&c, "m2", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	hc_state s1, s2;
	ck_assert_int_eq(hc_zk_state(&c, "m1", 0, &s1), CTL_ZK_OK);
	ck_assert_int_eq(hc_zk_state(&c, "m2", 0, &s2), CTL_ZK_OK);
	static const int16_t acks[3] = {0, 1, -1};
	int seq = 0;
	for (int isr = 3; isr >= 1; isr--) {
		if (isr < 3) {
			int f = isr == 2 ? f2 : f1;
			ck_assert_int_eq(hc_pause(&c, f), 0);
			/* a follower that has everything counts as caught up however
			 * long it is silent (Kafka's Replica.isCaughtUp): one more
			 * record makes the stopped one lag */
			int64_t base;
			ck_assert_int_eq(cc_raw_produce(&c, ctl, "m1", 0, 1, 1, seq++, &base), 0);
			ck_assert_int_eq(cc_raw_produce(&c, ctl, "m2", 0, 1, 1, seq++, &base), 0);
			const int32_t want[3] = {ctl, f1, f2};
			wait_isr(&c, "m1", want, isr, SHRINK_MS, s1.leader_epoch);
			wait_isr(&c, "m2", want, isr, SHRINK_MS, s2.leader_epoch);
		}
		for (int a = 0; a < 3; a++) {
			matrix_one(&c, ctl, "m1", acks[a], isr, 1, &seq);
			matrix_one(&c, ctl, "m2", acks[a], isr, 2, &seq);
		}
	}
	ck_assert_int_eq(hc_resume(&c, f1), 0);
	ck_assert_int_eq(hc_resume(&c, f2), 0);
	const int32_t all[3] = {ctl, f1, f2};
	wait_isr(&c, "m1", all, 3, 15000, s1.leader_epoch);
	wait_isr(&c, "m2", all, 3, 15000, s2.leader_epoch);
	cc_finish(&c);
}
END_TEST

/* A follower dies with an acks=-1 request parked for it: the controller
 * takes it out of the ISR with a new leader epoch, the leader stays the
 * same, and the request completes with NONE (Kafka's DelayedProduce answers
 * NOT_LEADER_OR_FOLLOWER only when the partition is no longer led here). */
START_TEST(test_follower_death_parked)
{
	hc_cluster c;
	/* the leader itself never drops the follower here: only the
	 * controller, when the session expires */
	hc_options o = {.overrides = (const char *const[]){"replica.lag.time.max.ms=60000", NULL}};
	cc_start(&c, &o, false);
	int ctl, f1, f2;
	roles(&c, &ctl, &f1, &f2);
	const int32_t assign[3] = {ctl, f1, f2};
	cc_create_topic(&c, "bump", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	int64_t base;
	ck_assert_int_eq(cc_raw_produce(&c, ctl, "bump", 0, -1, 3, 0, &base), 0);
	hc_state s0;
	ck_assert_int_eq(hc_zk_state(&c, "bump", 0, &s0), CTL_ZK_OK);

	ck_assert_int_eq(hc_kill(&c, f2), 0);
	long long t0 = h_now_ms();
	int16_t err = cc_raw_produce(&c, ctl, "bump", 0, -1, 1, 3, &base);
	long waited = (long)(h_now_ms() - t0);
	hc_state s1;
	ck_assert_int_eq(hc_zk_state(&c, "bump", 0, &s1), CTL_ZK_OK);
	cc_log("parked acks=-1 answered %d at %" PRId64 " after %ld ms; state %s", err, base, waited,
	       s1.json);
	ck_assert_msg(s1.leader == ctl && s1.leader_epoch > s0.leader_epoch &&
			      !hc_isr_has(&s1, f2),
		      "the controller did not take the dead follower out with a new leader epoch: %s "
		      "(was %s)", s1.json, s0.json);
	ck_assert_msg(err == 0 && base == 3,
		      "an acks=-1 request parked for a follower that died got error %d (offset %" PRId64
		      ") after %ld ms, when the controller moved the leader epoch from %d to %d "
		      "without changing the leader (%d); Kafka completes it with NONE at offset 3",
		      err, base, waited, s0.leader_epoch, s1.leader_epoch, ctl);
	ck_assert_int_eq(hc_restart(&c, f2), 0);
	const int32_t all[3] = {ctl, f1, f2};
	ck_assert_msg(hc_wait_isr(&c, "bump", 0, all, 3, 20000) >= 0, "no rejoin");
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_isr");
	TCase *tc = tcase_create("isr");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_shrink_expand);
	tcase_add_test(tc, test_rf2_min_isr2);
	tcase_add_test(tc, test_acks_matrix);
	tcase_add_test(tc, test_follower_death_parked);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
