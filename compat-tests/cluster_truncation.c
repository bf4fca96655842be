/*
 * cluster_truncation.c - divergent logs repaired by leader-epoch
 * truncation: KIP-101 and the double fast fail-over of KIP-279 (CLUSTER.md
 * 3.7; 6.5 tests 7, 8 and 9).
 *
 * Three brokers; the topic has two replicas [A, B], neither of them the
 * controller (so kills and pauses never move the controller), and
 * min.insync.replicas=1. Records are written with raw Produce v9 to the
 * leader: "rec-0".."rec-4" with acks=-1 first (on both replicas).
 *
 * kip101: B is SIGSTOPped; A appends x = "rec-100" with acks=1 at offset 5
 * (only A has it); A is killed (-9) and B resumed at once (its session
 * lives). The controller elects B from the ISR with a higher leader epoch;
 * B appends y = "rec-200" at offset 5 (acks=-1). A restarts as B's
 * follower: OffsetForLeaderEpoch must make it cut x (its high watermark
 * would have kept it), fetch y and rejoin the ISR.
 *
 * kip279 (unclean.leader.election.enable=true on the topic): as above up to
 * y on B. Then B (now the leader) is SIGSTOPped and A restarted: A becomes
 * B's follower but cannot truncate (B does not answer), and when B's
 * session expires A is elected, uncleanly, with x still at offset 5 in its
 * old epoch, and appends z = "rec-300" at 6. B resumes (its session gone:
 * it registers again) and follows A: asked for B's epoch, A answers with an
 * older epoch, so B must ask again with that one (KIP-279) and cut y; a
 * follower that took A's first answer as it is would keep y at offset 5,
 * where A holds x.
 *
 * Both: in the end the two replicas hold the same batches byte for byte
 * (their .log files), offset 5 holds what the surviving leader wrote there
 * and the other value is in no replica; the records of both replicas' files
 * and a consumer's read of the leader go through the checker (D: no offset
 * with two values; L for the acks=-1 records; x and y, written with acks=1,
 * as indeterminate); and the two leader-epoch-checkpoint files agree and
 * end with the current leader epoch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

typedef struct roles {
	int ctl, a, b;
} roles;

static roles pick_roles(hc_cluster *c)
{
	roles r = {.ctl = hc_zk_controller(c)};
	ck_assert_msg(r.ctl >= 1 && r.ctl <= 3, "no controller");
	int k = 0;
	for (int id = 1; id <= 3; id++)
		if (id != r.ctl) {
			if (k++ == 0)
				r.a = id;
			else
				r.b = id;
		}
	return r;
}

/* A raw produce that must succeed at offset want. */
static void produce_at(hc_cluster *c, int id, const char *t, int16_t acks, int n, int first,
		       int64_t want)
{
	int64_t base;
	int16_t err = cc_raw_produce(c, id, t, 0, acks, n, first, &base);
	ck_assert_msg(err == 0 && base == want,
		      "produce rec-%d (acks=%d) to broker %d: error %d at offset %" PRId64
		      ", expected offset %" PRId64,
		      first, acks, id, err, base, want);
}

/* The history of the test: the acks=-1 records as acknowledged, the acks=1
 * ones as indeterminate, and as reads every record in both replicas' files
 * and a consumer's read from the leader. */
static void check_history(hc_cluster *c, const char *t, const roles *r, const int *indeterminate,
			  int nind, const int64_t *ind_off, const int *acked, int nacked,
			  const int64_t *acked_off)
{
	chk *h = chk_new();
	char v[32];
	for (int i = 0; i < nacked; i++) {
		snprintf(v, sizeof(v), "rec-%d", acked[i]);
		ck_assert_int_eq(chk_write(h, 0, 0, v, CHK_ACKED, acked_off[i], i), 0);
	}
	for (int i = 0; i < nind; i++) {
		snprintf(v, sizeof(v), "rec-%d", indeterminate[i]);
		ck_assert_int_eq(chk_write(h, 1, 0, v, CHK_INDETERMINATE, ind_off[i], 0), 0);
	}
	cc_fetched recs[256];
	const int ids[2] = {r->a, r->b};
	for (int k = 0; k < 2; k++) {
		int n = cc_replica_records(c, ids[k], t, 0, recs, 256);
		for (int i = 0; i < n; i++)
			chk_read(h, 0, recs[i].offset, recs[i].value);
	}
	cc_read_all(c, t, 1, h);
	chk_report rep;
	cc_check(h, NULL, &rep, t);
	chk_free(h);
}

/* Both replicas hold the same batches, and the same epoch checkpoint
 * ending with the leader's current epoch (the last record was written in
 * it). */
static void check_replicas(hc_cluster *c, const char *t, const roles *r)
{
	hc_state st;
	ck_assert_int_eq(hc_zk_state(c, t, 0, &st), CTL_ZK_OK);
	int32_t epoch = st.leader_epoch;
	const int ids[2] = {r->a, r->b};
	char why[512] = "";
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (!cc_logs_equal(c, t, 0, ids, 2, why, sizeof(why)) && h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_msg(cc_logs_equal(c, t, 0, ids, 2, why, sizeof(why)),
		      "%s-0: the replicas' logs differ: %s", t, why);

	int32_t ea[16], eb[16];
	int64_t sa[16], sb[16];
	int na = -1, nb = -1;
	bool same = false;
	deadline = h_now_ms() + h_scaled_ms(10000);
	do {
		if (same)
			break;
		usleep(100 * 1000);
		na = cc_epoch_checkpoint(c, r->a, t, 0, ea, sa, 16);
		nb = cc_epoch_checkpoint(c, r->b, t, 0, eb, sb, 16);
		same = na > 0 && na == nb && memcmp(ea, eb, (size_t)na * sizeof(*ea)) == 0 &&
		       memcmp(sa, sb, (size_t)na * sizeof(*sa)) == 0 && ea[na - 1] == epoch;
	} while (h_now_ms() < deadline);
	if (!same) {
		for (int i = 0; i < na; i++)
			fprintf(stderr, "broker %d: epoch %d from %" PRId64 "\n", r->a, ea[i], sa[i]);
		for (int i = 0; i < nb; i++)
			fprintf(stderr, "broker %d: epoch %d from %" PRId64 "\n", r->b, eb[i], sb[i]);
	}
	ck_assert_msg(same,
		      "%s-0: the leader-epoch-checkpoint files differ or do not end with epoch %d "
		      "(%d and %d entries, listed above)",
		      t, epoch, na, nb);
}

/* The common start: topic t on [A, B], rec-0..4 committed on both, B
 * stopped, x = rec-100 on A only, A killed, B resumed and elected, y =
 * rec-200 on B at offset 5. Returns the leader epoch of B's leadership. */
static int32_t diverge(hc_cluster *c, const char *t, const roles *r, bool unclean)
{
	const int32_t assign[2] = {r->a, r->b};
	cc_create_topic(c, t, 1, 2, assign,
			(const char *const[]){"min.insync.replicas", "1",
					      "unclean.leader.election.enable",
					      unclean ? "true" : "false", NULL});
	produce_at(c, r->a, t, -1, 5, 0, 0);
	const int32_t both[2] = {r->a, r->b};
	ck_assert_msg(hc_wait_isr(c, t, 0, both, 2, 10000) >= 0, "ISR not both");
	hc_state s0;
	ck_assert_int_eq(hc_zk_state(c, t, 0, &s0), CTL_ZK_OK);

	ck_assert_int_eq(hc_pause(c, r->b), 0);
	/* B's last fetch may be parked at A (replica.fetch.wait.max.ms=100):
	 * an append now would answer it into B's socket, and B would read x
	 * when it resumes. Let that fetch expire first: 1000 ms, so that A's
	 * answer may come 900 ms late on a loaded machine (500 left 400), and
	 * B, paused meanwhile, still keeps its ZooKeeper session (4000 ms). */
	usleep((useconds_t)h_scaled_ms(1000) * 1000);
	produce_at(c, r->a, t, 1, 1, 100, 5); /* x, on A only */
	ck_assert_int_eq(hc_kill(c, r->a), 0);
	ck_assert_int_eq(hc_resume(c, r->b), 0);
	cc_log("x on A (%d) only; A killed, B (%d) resumed", r->a, r->b);

	int nl = cc_wait_leader(c, t, 0, r->a, HC_SESSION_MS + 20000);
	ck_assert_msg(nl == r->b, "the new leader is %d, not %d", nl, r->b);
	hc_state s1;
	ck_assert_int_eq(hc_zk_state(c, t, 0, &s1), CTL_ZK_OK);
	ck_assert_msg(s1.leader_epoch > s0.leader_epoch, "leader epoch %d after %d", s1.leader_epoch,
		      s0.leader_epoch);
	ck_assert_msg(s1.nisr == 1 && s1.isr[0] == r->b, "ISR after A's death: %s", s1.json);
	produce_at(c, r->b, t, 1, 1, 200, 5); /* y, at the same offset, on B */
	cc_log("B leads with epoch %d and holds y at offset 5", s1.leader_epoch);
	return s1.leader_epoch;
}

START_TEST(test_kip101)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	roles r = pick_roles(&c);
	const char *t = "t101";
	diverge(&c, t, &r, false);

	/* A comes back as B's follower and must cut x */
	ck_assert_int_eq(hc_restart(&c, r.a), 0);
	cc_log("A restarted");
	const int32_t both[2] = {r.a, r.b};
	ck_assert_msg(hc_wait_isr(&c, t, 0, both, 2, 20000) >= 0,
		      "the old leader did not rejoin the ISR (state above)");
	cc_log("A back in the ISR");
	produce_at(&c, r.b, t, -1, 1, 6, 6); /* committed on both after the repair */

	check_replicas(&c, t, &r);
	cc_fetched recs[64];
	int n = cc_replica_records(&c, r.a, t, 0, recs, 64);
	ck_assert_msg(n == 7 && strcmp(recs[5].value, "rec-200") == 0,
		      "the old leader holds %d records, offset 5 %s: expected 7, rec-200", n,
		      n > 5 ? recs[5].value : "(none)");
	const int acked[6] = {0, 1, 2, 3, 4, 6};
	const int64_t acked_off[6] = {0, 1, 2, 3, 4, 6};
	const int ind[2] = {100, 200};
	const int64_t ind_off[2] = {5, 5};
	check_history(&c, t, &r, ind, 2, ind_off, acked, 6, acked_off);
	cc_finish(&c);
}
END_TEST

START_TEST(test_kip279)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	roles r = pick_roles(&c);
	const char *t = "t279";
	int32_t e1 = diverge(&c, t, &r, true);

	/* B, now leader, stops; A comes back and cannot truncate against it;
	 * B's session expires and A is elected with x still in its log */
	ck_assert_int_eq(hc_pause(&c, r.b), 0);
	ck_assert_int_eq(hc_restart(&c, r.a), 0);
	cc_log("B paused, A restarted");
	int nl = cc_wait_leader(&c, t, 0, r.b, HC_SESSION_MS + 20000);
	cc_log("A elected");
	ck_assert_msg(nl == r.a, "the new leader is %d, not %d", nl, r.a);
	hc_state s2;
	ck_assert_int_eq(hc_zk_state(&c, t, 0, &s2), CTL_ZK_OK);
	ck_assert_msg(s2.leader_epoch > e1, "leader epoch %d after %d", s2.leader_epoch, e1);
	produce_at(&c, r.a, t, 1, 1, 300, 6); /* z, after x */

	/* B resumes, registers again and must converge on A's log */
	ck_assert_int_eq(hc_resume(&c, r.b), 0);
	cc_log("z on A; B resumed");
	const int32_t both[2] = {r.a, r.b};
	ck_assert_msg(hc_wait_isr(&c, t, 0, both, 2, HC_SESSION_MS + 20000) >= 0,
		      "B did not rejoin the ISR (state above)");
	cc_log("B back in the ISR");
	produce_at(&c, r.a, t, -1, 1, 7, 7);

	check_replicas(&c, t, &r);
	cc_fetched recs[64];
	int n = cc_replica_records(&c, r.b, t, 0, recs, 64);
	ck_assert_msg(n == 8 && strcmp(recs[5].value, "rec-100") == 0 &&
			      strcmp(recs[6].value, "rec-300") == 0,
		      "B holds %d records, offset 5 %s, 6 %s: expected 8, rec-100, rec-300", n,
		      n > 5 ? recs[5].value : "(none)", n > 6 ? recs[6].value : "(none)");
	const int acked[6] = {0, 1, 2, 3, 4, 7};
	const int64_t acked_off[6] = {0, 1, 2, 3, 4, 7};
	const int ind[3] = {100, 200, 300};
	const int64_t ind_off[3] = {5, 5, 6};
	check_history(&c, t, &r, ind, 3, ind_off, acked, 6, acked_off);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_truncation");
	TCase *tc = tcase_create("truncation");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kip101);
	tcase_add_test(tc, test_kip279);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
