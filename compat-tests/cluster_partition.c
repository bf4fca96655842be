/*
 * cluster_partition.c - network partitions (CLUSTER.md 4.3 and 6.5 tests
 * 26-31, harness B): ZooKeeper and three brokers each in a network
 * namespace of their own (netns.h, cc_run_suite_net), partitions made
 * with nftables rules inside the namespaces, silent in both directions.
 * The test process (its clients, its ZooKeeper session, the checker) is
 * in the root namespace; test 30 also has two client namespaces.
 *
 * Every test runs an idempotent acks=all producer (librdkafka) on a topic
 * of 3 partitions, replication factor 3, unclean.leader.election.enable
 * false, min.insync.replicas 2 unless said otherwise, and ends with the
 * checker over every outcome and a read of every partition from offset 0:
 * nothing acknowledged lost (L), no offset with two values (D), offsets
 * acknowledged in order (M), nothing that failed for certain read (F), no
 * duplicate. Each prints a line
 *   FIGURE fault=<name> acked_during=<n> longest_no_ack_ms=<n> fault_ms=<n> ...
 * (records acknowledged while the fault lasted, the longest time within
 * it with no acknowledgement, then the checker's counts).
 *
 * In 26, 27, 28 and 30 one broker L (never the controller) is the first
 * replica, so the leader, of every partition.
 *
 * zombie_leader (26, CLUSTER.md 4.3a): L cut off from ZooKeeper only. Its
 * session expires; the controller elects another leader for every
 * partition (higher leader epoch, L out of the ISR). L, which still
 * reaches its followers and the clients, no longer acknowledges acks=-1:
 * a raw Produce to it ends in an error, since its followers left it and
 * its attempt to write the ISR shrink to ZooKeeper is refused (its log
 * says so). The producer moves to the new leaders. Healed: L registers again with a new broker epoch and rejoins
 * every ISR.
 *
 * zombie_leader_alone (27, 4.3b, Jepsen 2013), min.insync.replicas 2 and
 * 1: L cut off from ZooKeeper and both followers, not from the clients.
 * As 26 (without waiting for the clients to leave L); with
 * min.insync.replicas 1 L would need the refused shrink to acknowledge
 * alone: the write is conditional on the state
 * znode's version and cannot reach ZooKeeper, so no state znode ever
 * names L as leader with the ISR [L], and a raw acks=-1 Produce to it
 * still ends in an error.
 *
 * follower_cut (28): follower F cut off from L (both reach ZooKeeper). L
 * takes F out of the ISR within 1.5 x replica.lag.time.max.ms (+ margin),
 * leader and leader epoch unchanged, acknowledgements go on (ISR 2 =
 * min.insync.replicas). Healed: F catches up and is back in every ISR, the
 * leader epoch still unchanged.
 *
 * controller_cut (29, 4.4): the controller C cut off from ZooKeeper (not
 * from brokers or clients). Another broker becomes controller with
 * /controller_epoch up by one. From then on, during the partition and for
 * 6 s after healing, every state znode either is unchanged, changed only
 * in its ISR by its leader (same leader, leader epoch and controller
 * epoch), or carries the new controller epoch; /controller and
 * /controller_epoch stay the new controller's. C registers again with a
 * new broker epoch and every ISR is full.
 *
 * split_brain (30): producer A in client namespace "ca", producer B in
 * "cb", and the partition {L, ca} | {the other brokers, ZooKeeper, cb}:
 * the leader on the minority side with A. The majority elects new leaders
 * and B's records are acknowledged during the partition; no record A sent
 * after the cut is acknowledged before the heal (L cannot commit). The
 * checker over both histories: D holds, and only writes acknowledged under
 * a valid leader epoch survive (L, F).
 *
 * flapping (31): for 2 minutes (30 s with SAMSA_CLUSTER_QUICK;
 * SAMSA_PARTITION_SECONDS), alternately a random fault for 2-5 s and a
 * healed network for 2-5 s. A fault is one of: a cut between two of
 * ZooKeeper, the brokers and the clients; one broker isolated; the leader
 * of partition 0 cut off from ZooKeeper; one or two of ZooKeeper and the
 * brokers cut off from the rest. The seed is printed
 * (SAMSA_PARTITION_SEED repeats a run). Healed, the cluster forms again
 * with every ISR full, and the checker finds nothing wrong.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define NPART 3
#define RATE 200
/* How long a leader may take to drop a follower that stopped fetching from
 * every partition's ISR: replica.lag.time.max.ms, then one shrink check
 * (every half of it) per partition at worst, plus a margin. A follower
 * stays caught up while its log end offset equals the leader's, and an
 * idempotent producer whose requests wait for acks=all sends nothing new
 * to a partition whose ISR has not shrunk yet: the partitions' clocks
 * start one after the other (Kafka's rule and the same chain there). */
#define SHRINK_MS (HC_LAG_MS + NPART * HC_LAG_MS / 2 + 2500)
/* a session expiry seen by ZooKeeper plus the controller's election */
#define ELECTION_MS (HC_SESSION_MS + 8000)

/* ---- nodes ---- */

static int node_of(hc_cluster *c, int id)
{
	char name[16];
	snprintf(name, sizeof(name), "b%d", id);
	int n = hn_find(c->net, name);
	ck_assert_msg(n > 0, "no node %s", name);
	return n;
}

static int zk_node(hc_cluster *c)
{
	int n = hn_find(c->net, "zk");
	ck_assert_msg(n > 0, "no node zk");
	return n;
}

static void cut(hc_cluster *c, int a, int b)
{
	ck_assert_msg(hn_cut(c->net, a, b) == 0, "cut %s|%s", c->net->node[a].name,
		      c->net->node[b].name);
}

static void heal_all(hc_cluster *c)
{
	ck_assert_msg(hn_heal_all(c->net) == 0, "heal");
}

/* ---- set-up ---- */

static const char *const topic_cfg_isr2[] = {"min.insync.replicas", "2",
					     "unclean.leader.election.enable", "false", NULL};
static const char *const topic_cfg_isr1[] = {"min.insync.replicas", "1",
					     "unclean.leader.election.enable", "false", NULL};

/* A broker that is not the controller. */
static int not_controller(hc_cluster *c)
{
	int ctl = hc_zk_controller(c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller (%d)", ctl);
	return ctl % 3 + 1;
}

/* Topic of NPART partitions, each with replicas [l, f, g]. */
static void create_led_by(hc_cluster *c, const char *topic, int l, int f, int g,
			  const char *const *cfg)
{
	int32_t a[NPART * 3];
	for (int p = 0; p < NPART; p++) {
		a[p * 3] = l;
		a[p * 3 + 1] = f;
		a[p * 3 + 2] = g;
	}
	cc_create_topic(c, topic, NPART, 3, a, cfg);
}

static void wait_isr_full(hc_cluster *c, const char *topic, int timeout_ms)
{
	static const int32_t all[3] = {1, 2, 3};
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(hc_wait_isr(c, topic, p, all, 3, timeout_ms) >= 0,
			      "%s-%d: the ISR is not all three again (state above)", topic, p);
}

/* ---- waiting on ZooKeeper ---- */

typedef struct moved_arg {
	const char *topic;
	int old;                 /* the leader that must be gone */
	const hc_state *before;  /* states before the fault */
	hc_state st[NPART];
	char why[600];
} moved_arg;

/* Every partition has a leader other than old, with a higher leader epoch
 * than before and old out of its ISR. */
static bool moved_cond(hc_cluster *c, void *arg)
{
	moved_arg *a = arg;
	for (int p = 0; p < NPART; p++) {
		if (hc_zk_state(c, a->topic, p, &a->st[p]) != CTL_ZK_OK)
			return false;
		const hc_state *s = &a->st[p];
		if (s->leader < 0 || s->leader == a->old || hc_isr_has(s, a->old) ||
		    s->leader_epoch <= a->before[p].leader_epoch) {
			snprintf(a->why, sizeof(a->why), "%s-%d: %s", a->topic, p, s->json);
			return false;
		}
	}
	return true;
}

static long wait_moved(hc_cluster *c, const char *topic, int old, const hc_state *before,
		       hc_state *after)
{
	moved_arg a = {.topic = topic, .old = old, .before = before};
	long ms = hc_wait(c, ELECTION_MS, moved_cond, &a);
	ck_assert_msg(ms >= 0, "broker %d is still leader or in the ISR %d ms after it was cut "
		      "off from ZooKeeper: %s", old, h_scaled_ms(ELECTION_MS), a.why);
	if (after)
		memcpy(after, a.st, sizeof(a.st));
	return ms;
}

static void read_states(hc_cluster *c, const char *topic, hc_state *st)
{
	for (int p = 0; p < NPART; p++)
		ck_assert_int_eq(hc_zk_state(c, topic, p, &st[p]), CTL_ZK_OK);
}

static int64_t broker_czxid(hc_cluster *c, int id)
{
	char path[64];
	ctl_zk_stat st;
	snprintf(path, sizeof(path), "/brokers/ids/%d", id);
	int rc = hc_zk_exists(c, path, &st);
	ck_assert_msg(rc == CTL_ZK_OK, "%s: %s", path, ctl_zk_strerror(rc));
	return st.czxid;
}

/* After healing: every broker registered (id's with a new broker epoch),
 * the cluster formed, every ISR full. */
static void wait_rejoined(hc_cluster *c, const char *topic, int id, int64_t old_czxid)
{
	ck_assert_msg(hc_wait_registered(c, NULL, 20000) >= 0, "not every broker registered");
	int64_t now = broker_czxid(c, id);
	ck_assert_msg(now != old_czxid, "broker %d's registration has the broker epoch (czxid) "
		      "%" PRId64 " of before its session expired", id, now);
	ck_assert_msg(hc_wait_formed(c, 30000) == 0, "the cluster did not form again");
	wait_isr_full(c, topic, 30000);
}

/* ---- raw Produce with a short timeout ---- */

/*
 * acks=-1 Produce v9 of one record to topic/partition on broker id, the
 * request's timeout timeout_ms; the partition's error code, or -1 when
 * no answer came within timeout_ms + 5 s or the connection closed: either
 * way not an acknowledgement.
 */
static int raw_produce_all(hc_cluster *c, int id, const char *topic, int32_t partition,
			   int timeout_ms, int first)
{
	k_wbuf *batch = calloc(1, sizeof(*batch)), *body = calloc(1, sizeof(*body));
	ck_assert(batch && body);
	k_build_batch(batch, 1, first, 1700000000000LL, 0);
	k_produce_body(body, topic, partition, -1, batch);
	/* the body's timeout: after the null transactional id (1 byte, a
	 * compact string) and acks (2 bytes) */
	w_put32(body->b + 3, timeout_ms);
	free(batch);
	int fd = cc_connect(c, id);
	int32_t cid = k_send(fd, 0, 9, body);
	free(body);
	uint8_t *frame = NULL;
	int32_t len = 0;
	int rc = w_recv_frame(fd, &frame, &len, 1 << 20, h_scaled_ms(timeout_ms + 5000));
	close(fd);
	if (rc != WIRE_OK) {
		free(frame);
		return -1;
	}
	/* response header v1: correlation id, tags */
	k_rbuf r = {.b = frame, .len = (size_t)len};
	ck_assert_msg(kr_i32(&r, "correlation id") == cid, "Produce: another correlation id");
	kr_tags(&r, "response header tags");
	int64_t base;
	int16_t err = k_produce_parse(&r, &base);
	free(frame);
	return err;
}

/* ---- figures and the checker ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The longest stretch of [t0, t1] between the sorted times t[0..n). */
static int64_t longest_gap(int64_t *t, long n, int64_t t0, int64_t t1)
{
	qsort(t, (size_t)n, sizeof(*t), cmp_i64);
	int64_t prev = t0, gap = 0;
	for (long k = 0; k < n; k++) {
		if (t[k] - prev > gap)
			gap = t[k] - prev;
		prev = t[k];
	}
	return t1 - prev > gap ? t1 - prev : gap;
}

/*
 * Acknowledgements of ps[0..np) arriving within [t0, t1], the longest time
 * within it without any (*longest) and without one of some partition
 * (*longest_part, the worst partition).
 */
static void during(cc_producer *const *ps, int np, int64_t t0, int64_t t1, long *acked,
		   int64_t *longest, int64_t *longest_part)
{
	long cap = 0;
	for (int i = 0; i < np; i++)
		cap += atomic_load(&ps[i]->nsent);
	int64_t *t = malloc(((size_t)cap + 1) * sizeof(*t));
	ck_assert_ptr_nonnull(t);
	*longest_part = 0;
	for (int32_t part = -1; part < NPART; part++) {
		long n = 0;
		for (int i = 0; i < np; i++) {
			long sent = atomic_load(&ps[i]->nsent);
			for (long k = 0; k < sent; k++) {
				cc_rec *r = cc_producer_rec(ps[i], k);
				if (r->state == CC_ACKED && r->done_ms >= t0 && r->done_ms <= t1 &&
				    (part < 0 || r->partition == part))
					t[n++] = r->done_ms;
			}
		}
		int64_t gap = longest_gap(t, n, t0, t1);
		if (part < 0) {
			*acked = n;
			*longest = gap;
		} else if (gap > *longest_part) {
			*longest_part = gap;
		}
	}
	free(t);
}

/* How the records of p that were not acknowledged ended, by error. */
static void print_errors(cc_producer *p)
{
	struct {
		int32_t err;
		int8_t state;
		long n;
	} seen[16];
	int k = 0;
	long sent = atomic_load(&p->nsent);
	for (long i = 0; i < sent; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if (r->state == CC_ACKED)
			continue;
		int j = 0;
		while (j < k && (seen[j].err != r->err || seen[j].state != r->state))
			j++;
		if (j == k && k < 16)
			seen[k++] = (typeof(seen[0])){r->err, r->state, 0};
		if (j < k)
			seen[j].n++;
	}
	for (int j = 0; j < k; j++)
		fprintf(stderr, "producer %d: %ld %s with %s\n", p->id, seen[j].n,
			seen[j].state == CC_FAILED ? "failed" : seen[j].state == CC_PENDING
									? "pending"
									: "indeterminate",
			rd_kafka_err2name((rd_kafka_resp_err_t)seen[j].err));
}

/*
 * Stop the producers, check their histories against a read of every
 * partition, print the FIGURE line of fault (which lasted from t0 to t1).
 */
static void finish_check(hc_cluster *c, const char *topic, cc_producer **ps, int np,
			 const char *fault, int64_t t0, int64_t t1)
{
	chk *h = chk_new();
	ck_assert_ptr_nonnull(h);
	int64_t start = INT64_MAX, end = 0;
	for (int i = 0; i < np; i++) {
		cc_producer_stop(ps[i], 30000);
		ck_assert_msg(!ps[i]->fatal[0], "producer %d: fatal: %s", ps[i]->id, ps[i]->fatal);
		fprintf(stderr, "producer %d: %ld sent, %ld acknowledged, %ld failed, %ld "
			"indeterminate (first error: %s)\n", ps[i]->id, atomic_load(&ps[i]->nsent),
			atomic_load(&ps[i]->nacked), atomic_load(&ps[i]->nfailed),
			atomic_load(&ps[i]->nindeterminate),
			ps[i]->first_error[0] ? ps[i]->first_error : "none");
		print_errors(ps[i]);
		cc_producer_feed(ps[i], h);
		if (ps[i]->start_ms < start)
			start = ps[i]->start_ms;
		if (ps[i]->end_ms > end)
			end = ps[i]->end_ms;
	}
	chk_span(h, start, end);
	cc_read_all(c, topic, NPART, h);
	long acked;
	int64_t longest, longest_part;
	during(ps, np, t0, t1, &acked, &longest, &longest_part);
	chk_report r;
	chk_options opt = {.idempotent = true};
	chk_check(h, &opt, &r);
	printf("FIGURE fault=%s acked_during=%ld longest_no_ack_ms=%" PRId64 " fault_ms=%" PRId64
	       " longest_partition_no_ack_ms=%" PRId64 " acked=%ld failed=%ld indeterminate=%ld "
	       "lost=%ld divergent=%ld duplicated=%ld nonmonotonic=%ld failed_read=%ld "
	       "misplaced=%ld unknown=%ld\n",
	       fault, acked, longest, t1 - t0, longest_part, r.acked, r.failed, r.indeterminate, r.lost,
	       r.divergent, r.duplicated, r.nonmonotonic, r.failed_read, r.misplaced, r.unknown);
	fflush(stdout);
	cc_check(h, &opt, &r, fault);
	chk_free(h);
	for (int i = 0; i < np; i++)
		cc_producer_free(ps[i]);
}

/* Wait for an acknowledgement of a record sent after t (the producer works
 * before the fault, or again after it). */
static void wait_ack_after(cc_producer *p, int64_t t, int timeout_ms, const char *when)
{
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, t, timeout_ms) >= 0,
		      "producer %d: no acknowledgement %s within %d ms (first error %s)", p->id, when,
		      h_scaled_ms(timeout_ms), p->first_error);
}

/* ---- 26 and 27: the zombie leader ---- */

typedef struct alone_arg {
	const char *topic;
	int zombie;
	char bad[600];
} alone_arg;

/* The first state znode naming the zombie leader with the ISR [zombie]. */
static bool alone_cond(hc_cluster *c, void *arg)
{
	alone_arg *a = arg;
	for (int p = 0; p < NPART && !a->bad[0]; p++) {
		hc_state st;
		if (hc_zk_state(c, a->topic, p, &st) == CTL_ZK_OK && st.leader == a->zombie &&
		    st.nisr == 1 && st.isr[0] == a->zombie)
			snprintf(a->bad, sizeof(a->bad), "%s-%d: %s", a->topic, p, st.json);
	}
	return a->bad[0] != 0;
}

/*
 * The zombie leader: L cut off from ZooKeeper (and with followers_too from
 * its followers), clients still reach it.
 */
static void zombie_leader(bool followers_too, int min_isr, const char *fault)
{
	const char *topic = "zombie";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int l = not_controller(&c);
	int f = l % 3 + 1, g = f % 3 + 1;
	create_led_by(&c, topic, l, f, g, min_isr == 1 ? topic_cfg_isr1 : topic_cfg_isr2);
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	wait_ack_after(p, 0, 20000, "at the start");
	usleep(1000 * 1000);
	hc_state before[NPART], after[NPART];
	read_states(&c, topic, before);
	int64_t czxid = broker_czxid(&c, l);

	int64_t t0 = h_now_ms();
	cut(&c, node_of(&c, l), zk_node(&c));
	if (followers_too) {
		cut(&c, node_of(&c, l), node_of(&c, f));
		cut(&c, node_of(&c, l), node_of(&c, g));
	}
	cc_log("broker %d (leader of every partition) cut off from ZooKeeper%s", l,
	       followers_too ? " and its followers" : "");
	long ms = wait_moved(&c, topic, l, before, after);
	int64_t t_elect = h_now_ms();
	cc_log("new leaders after %ld ms: %d, %d, %d (leader epochs %d, %d, %d)", ms,
	       after[0].leader, after[1].leader, after[2].leader, after[0].leader_epoch,
	       after[1].leader_epoch, after[2].leader_epoch);

	/* The zombie still believes it leads: acks=-1 must not succeed
	 * there (let the followers' last fetches from it pass first). */
	usleep(500 * 1000);
	int err = raw_produce_all(&c, l, topic, 0, 3000, 1000000);
	cc_log("acks=-1 Produce to the old leader %d: %d", l, err);
	ck_assert_msg(err != 0, "the old leader %d acknowledged an acks=-1 record after broker "
		      "%d was elected in its place", l, after[0].leader);
	alone_arg aa = {.topic = topic, .zombie = l};
	ck_assert_msg(!alone_cond(&c, &aa), "the zombie shrank the ISR to itself: %s", aa.bad);
	/* The zombie tries to drop its followers from the ISR (they stopped
	 * fetching from it at the cut, or at the election), and its writes
	 * fail: the broker logs each refused ISR change. */
	char needle[64];
	snprintf(needle, sizeof(needle), "ISR change of %s-", topic);
	while (!hc_log_has(&c, l, needle) && h_now_ms() < t_elect + h_scaled_ms(SHRINK_MS))
		usleep(100 * 1000);
	ck_assert_msg(hc_log_has(&c, l, needle), "the zombie %d did not try to shrink the ISR "
		      "within %d ms of the election (no \"%s\" in its log)", l,
		      h_scaled_ms(SHRINK_MS), needle);
	cc_log("the zombie's ISR shrink was refused");
	ck_assert_msg(!alone_cond(&c, &aa), "the zombie shrank the ISR to itself: %s", aa.bad);
	if (!followers_too) {
		/* the clients leave the zombie for the new leaders (once their
		 * requests to it time out: it still names itself leader) */
		wait_ack_after(p, t_elect, 35000, "on the new leaders");
		cc_log("the producer reached the new leaders %lld ms after the election",
		       (long long)(h_now_ms() - t_elect));
	}
	int64_t t1 = h_now_ms();
	heal_all(&c);
	cc_log("healed after %" PRId64 " ms", t1 - t0);
	wait_rejoined(&c, topic, l, czxid);
	ck_assert_msg(!alone_cond(&c, &aa), "the zombie shrank the ISR to itself: %s", aa.bad);
	wait_ack_after(p, h_now_ms(), 20000, "after healing");
	finish_check(&c, topic, &p, 1, fault, t0, t1);
	cc_finish(&c);
}

START_TEST(test_zombie_leader)
{
	zombie_leader(false, 2, "leader-cut-from-zk");
}
END_TEST

START_TEST(test_zombie_leader_alone_isr2)
{
	zombie_leader(true, 2, "leader-cut-from-zk-and-followers-min-isr-2");
}
END_TEST

START_TEST(test_zombie_leader_alone_isr1)
{
	zombie_leader(true, 1, "leader-cut-from-zk-and-followers-min-isr-1");
}
END_TEST

/* ---- 28: a follower cut off from its leader ---- */

typedef struct shrunk_arg {
	const char *topic;
	int leader, out;
	const hc_state *before;
	int64_t t0;           /* the cut */
	int64_t at[NPART];    /* ms from the cut to each partition's shrink, 0 not yet */
	char why[600];
} shrunk_arg;

/* Every partition: same leader and leader epoch as before, out not in the
 * ISR, which still has two members. */
static bool shrunk_cond(hc_cluster *c, void *arg)
{
	shrunk_arg *a = arg;
	bool ok = true;
	for (int p = 0; p < NPART; p++) {
		hc_state st;
		if (hc_zk_state(c, a->topic, p, &st) != CTL_ZK_OK)
			return false;
		if (hc_isr_has(&st, a->out) || st.nisr != 2) {
			snprintf(a->why, sizeof(a->why), "%s-%d: %s", a->topic, p, st.json);
			ok = false;
		} else if (!a->at[p]) {
			a->at[p] = h_now_ms() - a->t0;
		}
	}
	return ok;
}

static void same_leadership(hc_cluster *c, const char *topic, const hc_state *before)
{
	for (int p = 0; p < NPART; p++) {
		hc_state st;
		ck_assert_int_eq(hc_zk_state(c, topic, p, &st), CTL_ZK_OK);
		ck_assert_msg(st.leader == before[p].leader &&
			      st.leader_epoch == before[p].leader_epoch,
			      "%s-%d: the leadership changed: %s (was %s)", topic, p, st.json,
			      before[p].json);
	}
}

START_TEST(test_follower_cut)
{
	const char *topic = "follower";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int l = not_controller(&c);
	int f = l % 3 + 1, g = f % 3 + 1;
	create_led_by(&c, topic, l, f, g, topic_cfg_isr2);
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	wait_ack_after(p, 0, 20000, "at the start");
	usleep(1000 * 1000);
	hc_state before[NPART];
	read_states(&c, topic, before);

	int64_t t0 = h_now_ms();
	cut(&c, node_of(&c, f), node_of(&c, l));
	cc_log("follower %d cut off from leader %d", f, l);
	shrunk_arg sa = {.topic = topic, .leader = l, .out = f, .before = before, .t0 = t0};
	long ms = hc_wait(&c, SHRINK_MS, shrunk_cond, &sa);
	ck_assert_msg(ms >= 0, "follower %d still in the ISR %d ms after it was cut off from "
		      "its leader: %s", f, h_scaled_ms(SHRINK_MS), sa.why);
	cc_log("out of the ISR after %" PRId64 ", %" PRId64 ", %" PRId64 " ms", sa.at[0], sa.at[1],
	       sa.at[2]);
	same_leadership(&c, topic, before);
	int64_t t_shrunk = h_now_ms();
	wait_ack_after(p, t_shrunk, 10000, "with the ISR shrunk");
	usleep(2000 * 1000);

	int64_t t1 = h_now_ms();
	heal_all(&c);
	cc_log("healed after %" PRId64 " ms", t1 - t0);
	long back = -1;
	{
		static const int32_t all[3] = {1, 2, 3};
		int64_t th = h_now_ms();
		for (int q = 0; q < NPART; q++)
			ck_assert_msg(hc_wait_isr(&c, topic, q, all, 3, 20000) >= 0,
				      "%s-%d: follower %d not back in the ISR (state above)", topic, q,
				      f);
		back = (long)(h_now_ms() - th);
	}
	cc_log("back in every ISR %ld ms after healing", back);
	same_leadership(&c, topic, before);
	finish_check(&c, topic, &p, 1, "follower-cut-from-leader", t0, t1);
	cc_finish(&c);
}
END_TEST

/* ---- 29: the controller cut off from ZooKeeper ---- */

typedef struct fenced_arg {
	const char *topic;
	int new_ctl;
	int64_t new_epoch;
	hc_state last[NPART]; /* as last seen; first: when the new controller started */
	char bad[1024];
} fenced_arg;

/*
 * The first sign of a write the new controller did not make or allow:
 * /controller or /controller_epoch not the new controller's, or a state
 * znode changed other than by the new controller (its controller epoch) or
 * by its leader's ISR write (leader, leader epoch and controller epoch
 * kept). true then.
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
	for (int p = 0; p < NPART; p++) {
		hc_state st;
		hc_state *was = &a->last[p];
		if (hc_zk_state(c, a->topic, p, &st) != CTL_ZK_OK || st.zk_version == was->zk_version)
			continue;
		bool isr_only = st.leader == was->leader && st.leader_epoch == was->leader_epoch &&
				st.controller_epoch == was->controller_epoch;
		if (!isr_only && st.controller_epoch != a->new_epoch) {
			snprintf(a->bad, sizeof(a->bad),
				 "%s-%d written after the new controller started, neither an ISR "
				 "change by its leader nor under controller epoch %" PRId64 ": %s (was %s)",
				 a->topic, p, a->new_epoch, st.json, was->json);
			return true;
		}
		*was = st;
	}
	return false;
}

static void watch_fenced(hc_cluster *c, fenced_arg *fa, int ms)
{
	long long until = h_now_ms() + h_scaled_ms(ms);
	while (h_now_ms() < until && !fenced_cond(c, fa))
		usleep(50 * 1000);
	ck_assert_msg(!fa->bad[0], "a write the new controller did not make: %s", fa->bad);
}

typedef struct new_ctl_arg {
	int old;
	int64_t epoch;
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

typedef struct md_ctl_arg {
	int want;
	char why[128];
} md_ctl_arg;

static bool md_ctl_cond(hc_cluster *c, void *arg)
{
	md_ctl_arg *a = arg;
	for (int id = 1; id <= c->n; id++) {
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

START_TEST(test_controller_cut)
{
	const char *topic = "ctlcut";
	hc_cluster c;
	cc_start(&c, NULL, false);
	/* the broker's choice: the controller leads one partition */
	cc_create_topic(&c, topic, NPART, 3, NULL, topic_cfg_isr2);
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	wait_ack_after(p, 0, 20000, "at the start");
	usleep(1000 * 1000);
	int old = hc_zk_controller(&c);
	int64_t e = hc_zk_controller_epoch(&c, NULL);
	ck_assert_msg(old >= 1 && e >= 1, "controller %d, epoch %" PRId64, old, e);
	int64_t czxid = broker_czxid(&c, old);
	hc_state before[NPART];
	read_states(&c, topic, before);

	int64_t t0 = h_now_ms();
	cut(&c, node_of(&c, old), zk_node(&c));
	cc_log("controller %d (epoch %" PRId64 ") cut off from ZooKeeper", old, e);
	new_ctl_arg na = {.old = old, .epoch = e + 1};
	long ms = hc_wait(&c, ELECTION_MS, new_ctl_cond, &na);
	ck_assert_msg(ms >= 0, "no new controller %d ms after controller %d was cut off: "
		      "/controller names %d, /controller_epoch %" PRId64,
		      h_scaled_ms(ELECTION_MS), old, na.got, na.got_epoch);
	ck_assert_msg(na.got_epoch == e + 1, "/controller_epoch went from %" PRId64 " to %" PRId64
		      ", not up by one", e, na.got_epoch);
	cc_log("controller %d elected after %ld ms", na.got, ms);
	fenced_arg fa = {.topic = topic, .new_ctl = na.got, .new_epoch = e + 1};
	read_states(&c, topic, fa.last);
	/* the partitions the old controller led get a new leader under the
	 * new controller epoch; it leaves the ISR of the others */
	hc_state moved[NPART], want[NPART];
	memcpy(want, before, sizeof(want));
	for (int q = 0; q < NPART; q++)
		if (want[q].leader != old)
			want[q].leader_epoch = -1; /* any leader epoch */
	wait_moved(&c, topic, old, want, moved);
	for (int q = 0; q < NPART; q++)
		if (before[q].leader == old)
			ck_assert_msg(moved[q].controller_epoch == e + 1,
				      "%s-%d: elected under controller epoch %d, not %" PRId64 ": %s",
				      topic, q, moved[q].controller_epoch, e + 1, moved[q].json);
	watch_fenced(&c, &fa, 3000);
	int64_t t1 = h_now_ms();
	heal_all(&c);
	cc_log("healed after %" PRId64 " ms", t1 - t0);
	watch_fenced(&c, &fa, 6000);
	wait_rejoined(&c, topic, old, czxid);
	ck_assert_msg(!fenced_cond(&c, &fa), "a write the new controller did not make: %s", fa.bad);
	md_ctl_arg ma = {.want = na.got};
	ck_assert_msg(hc_wait(&c, 10000, md_ctl_cond, &ma) >= 0,
		      "Metadata does not name controller %d: %s", na.got, ma.why);
	finish_check(&c, topic, &p, 1, "controller-cut-from-zk", t0, t1);
	cc_finish(&c);
}
END_TEST

/* ---- 30: split-brain clients ---- */

/* A producer started in client node name (its threads live there). */
static cc_producer *producer_in(hc_cluster *c, const char *name, const char *topic, int id)
{
	int node = hn_find(c->net, name);
	ck_assert_msg(node > 0, "no client node %s", name);
	int saved;
	ck_assert_msg(hn_enter(c->net, node, &saved) == 0, "cannot enter %s", name);
	cc_producer *p = cc_producer_start(c, topic, NPART, id, RATE, NULL);
	ck_assert_msg(hn_leave(saved) == 0, "cannot leave %s", name);
	return p;
}

START_TEST(test_split_brain)
{
	const char *topic = "split";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int l = not_controller(&c);
	int f = l % 3 + 1, g = f % 3 + 1;
	create_led_by(&c, topic, l, f, g, topic_cfg_isr2);
	cc_producer *ps[2];
	ps[0] = producer_in(&c, "ca", topic, 1);
	ps[1] = producer_in(&c, "cb", topic, 2);
	wait_ack_after(ps[0], 0, 20000, "at the start");
	wait_ack_after(ps[1], 0, 20000, "at the start");
	usleep(1000 * 1000);
	hc_state before[NPART], after[NPART];
	read_states(&c, topic, before);
	int64_t czxid = broker_czxid(&c, l);

	int minority[2] = {node_of(&c, l), hn_find(c.net, "ca")};
	int majority[4] = {node_of(&c, f), node_of(&c, g), zk_node(&c), hn_find(c.net, "cb")};
	int64_t t0 = h_now_ms();
	ck_assert_int_eq(hn_partition(c.net, minority, 2, majority, 4), 0);
	int64_t t_cut = h_now_ms(); /* every rule in place */
	cc_log("partition {b%d, ca} | {b%d, b%d, zk, cb}", l, f, g);
	long ms = wait_moved(&c, topic, l, before, after);
	int64_t t_elect = h_now_ms();
	cc_log("the majority elected %d, %d, %d after %ld ms", after[0].leader, after[1].leader,
	       after[2].leader, ms);
	wait_ack_after(ps[1], t_elect, 30000, "on the majority side");
	usleep(2000 * 1000);
	int64_t t1 = h_now_ms();
	heal_all(&c);
	cc_log("healed after %" PRId64 " ms", t1 - t0);

	/* nothing A sent once the cut was complete was acknowledged while it
	 * lasted: its only broker could not commit */
	long sent = atomic_load(&ps[0]->nsent), early = 0;
	for (long k = 0; k < sent; k++) {
		cc_rec *r = cc_producer_rec(ps[0], k);
		if (r->state == CC_ACKED && r->sent_ms > t_cut && r->done_ms < t1) {
			if (!early)
				fprintf(stderr, "record 1-%ld sent %" PRId64 " ms after the cut, "
					"acknowledged at offset %" PRId64 " of partition %d before the "
					"heal\n", k, r->sent_ms - t_cut, r->offset, (int)r->partition);
			early++;
		}
	}
	ck_assert_msg(early == 0, "%ld records the minority side's producer sent after the cut "
		      "were acknowledged before the heal", early);
	long acked_b;
	int64_t gap_b, gap_part_b;
	during(&ps[1], 1, t0, t1, &acked_b, &gap_b, &gap_part_b);
	ck_assert_msg(acked_b > 0, "nothing acknowledged on the majority side");
	cc_log("majority side: %ld acknowledged during the partition, longest gap %" PRId64 " ms",
	       acked_b, gap_b);

	wait_rejoined(&c, topic, l, czxid);
	wait_ack_after(ps[0], h_now_ms(), 30000, "on the minority side after healing");
	finish_check(&c, topic, ps, 2, "split-brain-clients", t0, t1);
	cc_finish(&c);
}
END_TEST

/* ---- 31: flapping partitions ---- */

static int flap_seconds(void)
{
	return (int)cc_env_long("SAMSA_PARTITION_SECONDS", cc_quick() ? 30 : 120);
}

/* A random fault on nodes root, zk, b1..b3 (rand_r on *seed); its
 * description in what. */
static void random_fault(hc_cluster *c, const char *topic, unsigned *seed, char *what,
			 size_t cap)
{
	int zk = zk_node(c);
	int nodes[5] = {HN_ROOT, zk, node_of(c, 1), node_of(c, 2), node_of(c, 3)};
	int kind = rand_r(seed) % 4;
	if (kind == 0) { /* a cut between two (not root and ZooKeeper) */
		int a, b;
		do {
			a = nodes[rand_r(seed) % 5];
			b = nodes[rand_r(seed) % 5];
		} while (a == b || (a == HN_ROOT && b == zk) || (a == zk && b == HN_ROOT));
		cut(c, a, b);
	} else if (kind == 1) { /* a broker isolated from everything */
		ck_assert_int_eq(hn_isolate(c->net, nodes[2 + rand_r(seed) % 3]), 0);
	} else if (kind == 2) { /* the leader of partition 0 cut off from ZooKeeper */
		hc_state st;
		int id = hc_zk_state(c, topic, 0, &st) == CTL_ZK_OK && st.leader >= 1 ? st.leader
										 : 1;
		cut(c, node_of(c, id), zk);
	} else { /* one or two of ZooKeeper and the brokers apart from the rest */
		int order[4] = {nodes[1], nodes[2], nodes[3], nodes[4]};
		for (int i = 3; i > 0; i--) {
			int k = rand_r(seed) % (i + 1), t = order[i];
			order[i] = order[k];
			order[k] = t;
		}
		int na = 1 + rand_r(seed) % 2;
		ck_assert_int_eq(hn_partition(c->net, order, na, order + na, 4 - na), 0);
	}
	hn_describe(c->net, what, cap);
}

START_TEST(test_flapping)
{
	const char *topic = "flap";
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, topic, NPART, 3, NULL, topic_cfg_isr2);
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	wait_ack_after(p, 0, 20000, "at the start");
	usleep(1000 * 1000);
	unsigned seed = (unsigned)cc_env_long("SAMSA_PARTITION_SEED", (long)(h_now_ms() % 100000));
	int seconds = flap_seconds();
	printf("cluster_partition: flapping for %d s, SAMSA_PARTITION_SEED=%u\n", seconds, seed);
	fflush(stdout);

	int64_t t0 = h_now_ms(), until = t0 + (int64_t)seconds * 1000;
	int faults = 0;
	while (h_now_ms() < until) {
		char what[256];
		random_fault(&c, topic, &seed, what, sizeof(what));
		faults++;
		int hold = 2000 + rand_r(&seed) % 3001;
		cc_log("fault %d for %d ms: %s", faults, hold, what);
		usleep((useconds_t)hold * 1000);
		heal_all(&c);
		int calm = 2000 + rand_r(&seed) % 3001;
		cc_log("healed for %d ms", calm);
		usleep((useconds_t)calm * 1000);
	}
	int64_t t1 = h_now_ms();
	cc_log("%d faults in %" PRId64 " ms; waiting for the cluster", faults, t1 - t0);
	ck_assert_msg(hc_wait_registered(&c, NULL, 30000) >= 0, "not every broker registered");
	ck_assert_msg(hc_wait_formed(&c, 30000) == 0, "the cluster did not form again");
	wait_isr_full(&c, topic, 30000);
	wait_ack_after(p, h_now_ms(), 30000, "after the last heal");
	finish_check(&c, topic, &p, 1, "flapping-partitions", t0, t1);
	cc_finish(&c);
}
END_TEST

/* One case per test: CK_RUN_CASE=<name> runs one. */
static void add(Suite *s, const char *name, const TTest *t, int timeout)
{
	TCase *tc = tcase_create(name);
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("cluster_partition");
	add(s, "zombie_leader", test_zombie_leader, 150);
	add(s, "zombie_leader_alone_isr2", test_zombie_leader_alone_isr2, 150);
	add(s, "zombie_leader_alone_isr1", test_zombie_leader_alone_isr1, 150);
	add(s, "follower_cut", test_follower_cut, 150);
	add(s, "controller_cut", test_controller_cut, 150);
	add(s, "split_brain", test_split_brain, 150);
	add(s, "flapping", test_flapping, 150 + flap_seconds() * 2);
	static const char *const clients[] = {"ca", "cb", NULL};
	return cc_run_suite_net(s, 3, clients);
}
