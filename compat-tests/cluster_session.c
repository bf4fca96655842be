/*
 * cluster_session.c - a broker's ZooKeeper session expires while the
 * process is paused (SIGSTOP past zookeeper.session.timeout.ms, then
 * SIGCONT: a long GC pause), for a follower and for a leader: the zombie of
 * CLUSTER.md 4.3 without network namespaces (6.5 tests 20 and 25).
 *
 * Three brokers; the victim V is not the controller. Topic "ses" has 3
 * partitions, replication factor 3, min.insync.replicas=2, and an
 * idempotent acks=all librdkafka producer writes 300 records a second to it
 * throughout. Its assignment makes V the last replica of every partition
 * (follower) or the first of two of them (leader).
 *
 * Both: V is SIGSTOPped; its registration goes when its session expires,
 * and the test waits until V is out of every ISR and every partition it led
 * has another leader with a higher leader epoch (the "settled" states).
 * Then SIGCONT. From then on, for 5 s and again at the end, a state znode
 * may only change by an ISR write of its current leader (same leader and
 * leader epoch, not V) or by an election under the current controller
 * epoch: a write naming V as leader without a new election is a stale one
 * (V acting on the state it had before its session ended). V registers
 * again with a new broker epoch (czxid), its Metadata agrees with the
 * state znodes (it re-read them), it rejoins every ISR, and every replica
 * of every partition holds the same batches. Every record of the producer
 * is acknowledged (no delivery error) and the checker finds none lost,
 * duplicated or divergent.
 *
 * Leader only, raw requests (Produce v9) to a second topic "sesraw" (one
 * partition, replicas [V, ...], min.insync.replicas=1, so that only the
 * fencing of its ISR write can keep an acks=-1 request of the zombie from
 * succeeding): "rec-0".."rec-4" with acks=-1 before the pause; while V is
 * paused and another broker leads, "rec-300" with acks=-1 to the new
 * leader, and one request each with acks=-1 ("rec-100") and acks=1
 * ("rec-200") written into V's sockets: V reads them when it resumes,
 * still believing it leads. The acks=-1 one must not succeed. The acks=1
 * one may be acknowledged by the zombie and then lost when V truncates as
 * a follower: Kafka's documented acks=1 loss (CLUSTER.md 4.3), counted and
 * printed, not failed. After V rejoined, a produce to it is refused with
 * NOT_LEADER_OR_FOLLOWER (it stopped acting as leader), and the checker
 * over the acks=-1 records and every replica's files finds nothing lost or
 * divergent.
 *
 * Printed: how long V was paused and how long until it was back in every
 * ISR, the records acknowledged meanwhile, the longest time without a
 * successful produce (SIGSTOP to back in every ISR: the fault's FIGURE
 * line, cc_print_window), the zombie's acks=1 outcome.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"

#define TOPIC "ses"
#define RAW "sesraw"
#define NPART 3
#define RATE 300
#define KERR_NOT_LEADER_OR_FOLLOWER 6

typedef struct watch_arg {
	int victim;
	int64_t ctl_epoch;
	int n;
	const char *topics[2];
	int32_t parts[2];
	hc_state settled[2][NPART];
	int64_t writes;          /* state writes seen since settled */
	char bad[1024];
} watch_arg;

/* The first stale write since the settled states into a->bad. */
static bool watch_cond(hc_cluster *c, void *arg)
{
	watch_arg *a = arg;
	for (int t = 0; t < a->n && !a->bad[0]; t++) {
		for (int p = 0; p < a->parts[t]; p++) {
			hc_state st;
			hc_state *was = &a->settled[t][p];
			if (hc_zk_state(c, a->topics[t], p, &st) != CTL_ZK_OK ||
			    st.zk_version == was->zk_version)
				continue;
			bool isr_only = st.leader == was->leader && st.leader_epoch == was->leader_epoch &&
					st.leader != a->victim;
			bool election = st.leader_epoch > was->leader_epoch &&
					st.controller_epoch == a->ctl_epoch;
			if (!isr_only && !election) {
				snprintf(a->bad, sizeof(a->bad),
					 "%s-%d written after V=%d's session ended (mzxid %" PRId64
					 "), neither an ISR change by its leader nor an election under "
					 "controller epoch %" PRId64 ": %s (settled %s)",
					 a->topics[t], p, a->victim, st.mzxid, a->ctl_epoch, st.json,
					 was->json);
				break;
			}
			a->writes++;
			*was = st; /* later writes are judged against this one */
		}
	}
	return a->bad[0] != 0;
}

typedef struct settled_arg {
	watch_arg *w;
	const bool *led[2];
	const hc_state *before[2];
	char why[600];
} settled_arg;

/* V is out of every ISR and every partition it led has another leader with
 * a higher leader epoch. */
static bool settled_cond(hc_cluster *c, void *arg)
{
	settled_arg *a = arg;
	watch_arg *w = a->w;
	for (int t = 0; t < w->n; t++)
		for (int p = 0; p < w->parts[t]; p++) {
			hc_state *st = &w->settled[t][p];
			if (hc_zk_state(c, w->topics[t], p, st) != CTL_ZK_OK)
				return false;
			if (st->leader == w->victim || st->leader < 0 || hc_isr_has(st, w->victim) ||
			    (a->led[t][p] && st->leader_epoch <= a->before[t][p].leader_epoch)) {
				snprintf(a->why, sizeof(a->why), "%s-%d: %s", w->topics[t], p, st->json);
				return false;
			}
		}
	return true;
}

static int64_t reg_czxid(hc_cluster *c, int id)
{
	char path[64];
	ctl_zk_stat st;
	snprintf(path, sizeof(path), "/brokers/ids/%d", id);
	return hc_zk_exists(c, path, &st) == CTL_ZK_OK ? st.czxid : -1;
}

/* V registered again (a czxid other than epoch0) and is in every ISR. */
static bool back(hc_cluster *c, const watch_arg *w, int64_t epoch0)
{
	int64_t e = reg_czxid(c, w->victim);
	if (e < 0 || e == epoch0)
		return false;
	for (int t = 0; t < w->n; t++)
		for (int p = 0; p < w->parts[t]; p++) {
			hc_state st;
			if (hc_zk_state(c, w->topics[t], p, &st) != CTL_ZK_OK ||
			    !hc_isr_has(&st, w->victim))
				return false;
		}
	return true;
}

/* A Produce v9 of "rec-<first>" to RAW-0 written to fd; its correlation id. */
static int32_t send_raw(int fd, int16_t acks, int first)
{
	k_wbuf *batch = calloc(1, sizeof(*batch)), *body = calloc(1, sizeof(*body));
	ck_assert(batch && body);
	k_build_batch(batch, 1, first, 1700000000000LL, 0);
	k_produce_body(body, RAW, 0, acks, batch);
	int32_t cid = k_send(fd, 0, 9, body);
	free(batch);
	free(body);
	return cid;
}

static bool readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	return poll(&pfd, 1, 0) > 0;
}

static int16_t recv_raw(int fd, int32_t cid, int64_t *base)
{
	k_rbuf r;
	/* the request's own timeout is 10 s */
	uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(20000));
	int16_t err = k_produce_parse(&r, base);
	free(resp);
	return err;
}

static void wait_isr_full(hc_cluster *c, const char *topic, int npart)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < npart; p++)
		ck_assert_msg(hc_wait_isr(c, topic, p, all, 3, 30000) >= 0,
			      "%s-%d: the ISR did not become all three again (state above)", topic, p);
}

static void wait_logs_equal(hc_cluster *c, const char *topic, int npart)
{
	static const int ids[3] = {1, 2, 3};
	for (int q = 0; q < npart; q++) {
		char why[512] = "";
		long long deadline = h_now_ms() + h_scaled_ms(15000);
		while (!cc_logs_equal(c, topic, q, ids, 3, why, sizeof(why)) &&
		       h_now_ms() < deadline)
			usleep(200 * 1000);
		ck_assert_msg(cc_logs_equal(c, topic, q, ids, 3, why, sizeof(why)),
			      "%s-%d: the replicas' logs differ: %s", topic, q, why);
	}
}

static void session_expiry(bool leader)
{
	const char *what = leader ? "leader" : "follower";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int ctl = hc_zk_controller(&c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");
	int v = ctl == 3 ? 2 : 3, o = 6 - ctl - v; /* the victim and the third broker */
	int32_t rows[NPART * 3];
	if (leader) {
		const int32_t r[] = {v, ctl, o, v, o, ctl, o, v, ctl};
		memcpy(rows, r, sizeof(r));
	} else {
		const int32_t r[] = {ctl, o, v, o, ctl, v, ctl, o, v};
		memcpy(rows, r, sizeof(r));
	}
	cc_create_topic(&c, TOPIC, NPART, 3, rows,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	watch_arg w = {.victim = v, .n = 1, .topics = {TOPIC, RAW}, .parts = {NPART, 1}};
	if (leader) {
		const int32_t r[] = {v, o, ctl};
		cc_create_topic(&c, RAW, 1, 3, r,
				(const char *const[]){"min.insync.replicas", "1", NULL});
		w.n = 2;
		int64_t base;
		int16_t err = cc_raw_produce(&c, v, RAW, 0, -1, 5, 0, &base);
		ck_assert_msg(err == 0 && base == 0, "rec-0..4 to broker %d: error %d at %" PRId64, v,
			      err, base);
	}
	cc_producer *p = cc_producer_start(&c, TOPIC, NPART, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);

	hc_state before[2][NPART];
	bool led[2][NPART] = {{false}};
	for (int t = 0; t < w.n; t++)
		for (int q = 0; q < w.parts[t]; q++) {
			ck_assert_int_eq(hc_zk_state(&c, w.topics[t], q, &before[t][q]), CTL_ZK_OK);
			led[t][q] = before[t][q].leader == v;
		}
	int64_t epoch0 = reg_czxid(&c, v);
	int64_t ctl_epoch = hc_zk_controller_epoch(&c, NULL);
	int fd_all = -1, fd_one = -1;
	if (leader) { /* connected before the pause, so the requests go in at once */
		fd_all = cc_connect(&c, v);
		fd_one = cc_connect(&c, v);
	}

	int64_t t0 = h_now_ms();
	ck_assert_int_eq(hc_pause(&c, v), 0);
	cc_log("%s %d paused (controller %d, epoch %" PRId64 ")", what, v, ctl, ctl_epoch);
	bool reg[HC_MAX_BROKERS + 1] = {false};
	reg[ctl] = reg[o] = true;
	ck_assert_msg(hc_wait_registered(&c, reg, HC_SESSION_MS + 10000) >= 0,
		      "broker %d's registration is still there", v);
	settled_arg sa = {.w = &w, .led = {led[0], led[1]}, .before = {before[0], before[1]}};
	ck_assert_msg(hc_wait(&c, 20000, settled_cond, &sa) >= 0,
		      "broker %d is not out of every partition (ISR, leadership): %s", v, sa.why);
	w.ctl_epoch = hc_zk_controller_epoch(&c, NULL);
	ck_assert_int_eq(hc_zk_controller(&c), ctl);
	cc_log("the session of %d ended; its partitions moved", v);

	int32_t cid_all = 0, cid_one = 0;
	int new_raw_leader = -1;
	if (leader) {
		/* the state znode names it; it may not have applied that yet */
		new_raw_leader = cc_wait_leader(&c, RAW, 0, v, 10000);
		int64_t base;
		int16_t err;
		long long deadline = h_now_ms() + h_scaled_ms(5000);
		while ((err = cc_raw_produce(&c, new_raw_leader, RAW, 0, -1, 1, 300, &base)) ==
			       KERR_NOT_LEADER_OR_FOLLOWER &&
		       h_now_ms() < deadline)
			usleep(50 * 1000);
		ck_assert_msg(err == 0 && base == 5, "rec-300 to the new leader %d: error %d at %"
			      PRId64, new_raw_leader, err, base);
		cid_all = send_raw(fd_all, -1, 100);
		cid_one = send_raw(fd_one, 1, 200);
	}
	int64_t t_resume = h_now_ms();
	ck_assert_int_eq(hc_resume(&c, v), 0);
	cc_log("%d resumed after %" PRId64 " ms", v, t_resume - t0);

	/* watch the state znodes, and take the zombie's answers as they come */
	int16_t err_all = 0, err_one = 0;
	int64_t off_all = -1, off_one = -1, ms_all = -1, ms_one = -1;
	int64_t t1 = -1;
	long long until = h_now_ms() + h_scaled_ms(5000);
	while (!watch_cond(&c, &w) &&
	       (h_now_ms() < until || (leader && (ms_all < 0 || ms_one < 0)))) {
		ck_assert_msg(h_now_ms() < until + h_scaled_ms(15000),
			      "the zombie did not answer its produce requests");
		if (leader && ms_one < 0 && readable(fd_one)) {
			err_one = recv_raw(fd_one, cid_one, &off_one);
			ms_one = h_now_ms() - t_resume;
		}
		if (leader && ms_all < 0 && readable(fd_all)) {
			err_all = recv_raw(fd_all, cid_all, &off_all);
			ms_all = h_now_ms() - t_resume;
		}
		if (t1 < 0 && back(&c, &w, epoch0))
			t1 = h_now_ms();
		usleep(10 * 1000);
	}
	ck_assert_msg(!w.bad[0], "a stale state write got through: %s", w.bad);
	if (leader) {
		close(fd_one);
		close(fd_all);
		cc_log("the zombie answered acks=-1 with error %d (offset %" PRId64 ") %" PRId64
		       " ms after SIGCONT, acks=1 with error %d (offset %" PRId64 ") after %" PRId64
		       " ms", err_all, off_all, ms_all, err_one, off_one, ms_one);
		ck_assert_msg(err_all != 0,
			      "broker %d acknowledged an acks=-1 produce sent while it was paused "
			      "(offset %" PRId64 "), after another leader was elected", v, off_all);
	}

	ck_assert_msg(hc_wait_registered(&c, NULL, 20000) >= 0, "broker %d did not register again",
		      v);
	int64_t epoch1 = reg_czxid(&c, v);
	ck_assert_msg(epoch1 > epoch0, "broker %d registered with czxid %" PRId64 ", was %" PRId64,
		      v, epoch1, epoch0);
	for (int t = 0; t < w.n; t++) {
		wait_isr_full(&c, w.topics[t], w.parts[t]);
		/* every broker's Metadata, V's too, agrees with the state znodes */
		cc_wait_topic(&c, w.topics[t], w.parts[t], 20000);
	}
	if (t1 < 0)
		t1 = h_now_ms();
	cc_log("%d registered again (czxid %" PRId64 ", was %" PRId64 ") and is back in every ISR",
	       v, epoch1, epoch0);
	ck_assert_msg(!watch_cond(&c, &w), "a stale state write got through: %s", w.bad);

	chk_report r;
	char label[128];
	snprintf(label, sizeof(label), "session expiry of a %s", what);
	cc_producer_verify(&c, p, TOPIC, NPART, NULL, &r, label);
	wait_logs_equal(&c, TOPIC, NPART);
	cc_window wp, wb;
	cc_producer_window(p, -1, t0, t_resume, &wp);
	cc_producer_window(p, -1, t0, t1, &wb);
	snprintf(label, sizeof(label), "%s %d paused past its session (SIGSTOP to SIGCONT)", what, v);
	cc_print_window("cluster_session", NULL, label, &wp);
	snprintf(label, sizeof(label), "%s %d paused, SIGSTOP to back in every ISR", what, v);
	cc_print_window("cluster_session", leader ? "session_expiry_leader" :
			"session_expiry_follower", label, &wb);
	printf("cluster_session: %s: %ld records acknowledged in all, none lost, duplicated or "
	       "divergent; %" PRId64 " state writes after the session ended, none stale\n",
	       what, r.acked, w.writes);

	if (leader) {
		/* it stopped acting as leader */
		int64_t base;
		int16_t err = cc_raw_produce(&c, v, RAW, 0, 1, 1, 400, &base);
		ck_assert_msg(err == KERR_NOT_LEADER_OR_FOLLOWER,
			      "broker %d, a follower again, answered a produce with error %d (offset %"
			      PRId64 "), not NOT_LEADER_OR_FOLLOWER", v, err, base);
		int cur = cc_leader(&c, RAW, 0, NULL);
		err = cc_raw_produce(&c, cur, RAW, 0, -1, 1, 6, &base);
		ck_assert_msg(err == 0, "rec-6 to the leader %d: error %d", cur, err);
		wait_logs_equal(&c, RAW, 1);

		/* the acks=-1 history, with every replica's files as reads */
		chk *h = chk_new();
		char val[32];
		for (int i = 0; i < 5; i++) {
			snprintf(val, sizeof(val), "rec-%d", i);
			ck_assert_int_eq(chk_write(h, 0, 0, val, CHK_ACKED, i, i), 0);
		}
		ck_assert_int_eq(chk_write(h, 0, 0, "rec-300", CHK_ACKED, 5, 5), 0);
		ck_assert_int_eq(chk_write(h, 0, 0, "rec-6", CHK_ACKED, base, 6), 0);
		ck_assert_int_eq(chk_write(h, 1, 0, "rec-100", CHK_INDETERMINATE, -1, 0), 0);
		ck_assert_int_eq(chk_write(h, 1, 0, "rec-200", CHK_INDETERMINATE, -1, 0), 0);
		cc_fetched recs[64];
		bool zombie_kept = false;
		for (int id = 1; id <= 3; id++) {
			int n = cc_replica_records(&c, id, RAW, 0, recs, 64);
			for (int i = 0; i < n; i++) {
				chk_read(h, 0, recs[i].offset, recs[i].value);
				zombie_kept |= strcmp(recs[i].value, "rec-200") == 0;
			}
		}
		cc_read_all(&c, RAW, 1, h);
		chk_report rr;
		chk_options opt = {.idempotent = true};
		cc_check(h, &opt, &rr, "raw produce around the zombie");
		chk_free(h);
		printf("cluster_session: zombie leader: acks=-1 sent while paused answered with error "
		       "%d %" PRId64 " ms after SIGCONT; acks=1 %s (offset %" PRId64 ", after %"
		       PRId64 " ms) and %s: %d acks=1 record lost (Kafka's documented zombie "
		       "window, CLUSTER.md 4.3)\n",
		       err_all, ms_all, err_one == 0 ? "acknowledged" : "refused", off_one, ms_one,
		       zombie_kept ? "kept" : "gone after it rejoined as follower",
		       err_one == 0 && !zombie_kept);
	}
	cc_producer_free(p);
	cc_finish(&c);
}

START_TEST(test_follower_expiry)
{
	session_expiry(false);
}
END_TEST

START_TEST(test_leader_expiry)
{
	session_expiry(true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_session");
	TCase *tc = tcase_create("session");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_follower_expiry);
	tcase_add_test(tc, test_leader_expiry);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
