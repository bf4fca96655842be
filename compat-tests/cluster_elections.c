/*
 * cluster_elections.c - preferred-leader and unclean elections on a cluster
 * of three brokers (CLUSTER.md 2.4, 2.7, 4.1, 4.6; 6.5 tests 11 and 22).
 *
 * rebalance  auto.leader.rebalance.enable=true with
 *            leader.imbalance.check.interval.seconds=2: under an idempotent
 *            acks=all producer, kill -9 broker 1 (the preferred leader of
 *            el-0), wait for another leader, restart it; once it is back in
 *            the ISR the controller gives it el-0 back by itself (leader
 *            epoch up), every broker's Metadata agrees, and the checker
 *            finds nothing lost, duplicated or divergent. Printed: restart
 *            to leadership back.
 * elect      ElectLeaders by raw request (librdkafka 2.0.2 has no
 *            rd_kafka_ElectLeaders), v0, v1 and v2: on a broker that is not
 *            the controller NOT_CONTROLLER per partition; on the controller
 *            ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION,
 *            PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica dead),
 *            INVALID_REQUEST (an unknown election type), then NONE when the
 *            preferred replica is back in the ISR (it leads, Metadata says
 *            so when the answer comes), and a null list: only what needed
 *            an election is answered.
 * znode      /admin/preferred_replica_election written by hand (Kafka 2.x's
 *            kafka-preferred-replica-election.sh wrote it so) after a
 *            controlled shutdown moved el-0 away and broker 1 came back: the
 *            controller elects broker 1 and deletes the znode.
 * unclean    all replicas down, one out-of-sync replica returns (CLUSTER.md
 *            4.6): topics "clean" (unclean.leader.election.enable=false)
 *            and "dirty" (=true), replicas [1,2,3], min.insync.replicas=1,
 *            each with its idempotent acks=all producer. Brokers 3, 2, 1
 *            are killed in that order (records are acknowledged by broker 1
 *            alone after 2 died), then broker 2 alone is restarted:
 *            "dirty" elects it (ISR [2], leader epoch up), "clean" stays
 *            offline (leader -1 in ZooKeeper and in Metadata), ElectLeaders
 *            UNCLEAN on a third topic elects broker 2 too, and with no live
 *            replica answers ELIGIBLE_LEADERS_NOT_AVAILABLE. The checker
 *            reports what "dirty" lost: Kafka's documented loss of unclean
 *            election, expected (at least the records acknowledged after
 *            broker 2 died), reported, not a failure. Then broker 1
 *            returns: "clean" elects it and has lost nothing; on "dirty" it
 *            truncates to broker 2's log (the replicas end equal).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"

#define RATE 200

/* ---- ElectLeaders by hand ---- */

typedef struct el_result {
	char topic[128];
	int32_t partition;
	int16_t error;
	bool null_msg;
	char msg[256];
} el_result;

typedef struct el_answer {
	int16_t error; /* top level (v1+; 0 for v0) */
	int n;
	el_result r[64];
} el_answer;

static void kr_str16(k_rbuf *r, char *out, size_t cap, bool *null, const char *what)
{
	int16_t len = kr_i16(r, what);
	*null = len < 0;
	out[0] = '\0';
	if (len <= 0 || !kr_need(r, (size_t)len, what))
		return;
	size_t n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
	memcpy(out, r->b + r->pos, n);
	out[n] = '\0';
	r->pos += (size_t)len;
}

/*
 * ElectLeaders v<ver> (0-2) on broker id: election type (ignored by v0),
 * the partitions parts[0..nparts) of topic, or with topic NULL a null list
 * (every partition). The whole answer is parsed into *a.
 */
static void elect_leaders(hc_cluster *c, int id, int16_t ver, int8_t type, const char *topic,
			  const int32_t *parts, int nparts, el_answer *a)
{
	static k_wbuf body;
	body.len = 0;
	bool flex = ver >= 2;
	if (ver >= 1)
		kw_u8(&body, (uint8_t)type);
	if (!topic) {
		if (flex)
			kw_uvarint(&body, 0);
		else
			kw_i32(&body, -1);
	} else {
		if (flex) {
			kw_uvarint(&body, 2);
			kw_cstr(&body, topic);
			kw_uvarint(&body, (uint64_t)nparts + 1);
		} else {
			kw_i32(&body, 1);
			kw_i16(&body, (int16_t)strlen(topic));
			kw_raw(&body, topic, strlen(topic));
			kw_i32(&body, nparts);
		}
		for (int i = 0; i < nparts; i++)
			kw_i32(&body, parts[i]);
		if (flex)
			kw_tags0(&body);
	}
	kw_i32(&body, 5000); /* TimeoutMs */
	if (flex)
		kw_tags0(&body);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *frame = flex ? k_roundtrip(fd, 43, ver, &body, &r)
			      : k_roundtrip_classic(fd, 43, ver, &body, &r);
	close(fd);
	memset(a, 0, sizeof(*a));
	kr_i32(&r, "throttle");
	if (ver >= 1)
		a->error = kr_i16(&r, "error code");
	int64_t nt = flex ? kr_carray(&r, "results") : kr_i32(&r, "results");
	for (int64_t t = 0; t < nt; t++) {
		char name[128];
		bool null;
		if (flex)
			kr_cstr(&r, name, sizeof(name), "topic");
		else
			kr_str16(&r, name, sizeof(name), &null, "topic");
		int64_t np = flex ? kr_carray(&r, "partitions") : kr_i32(&r, "partitions");
		for (int64_t k = 0; k < np; k++) {
			ck_assert_int_lt(a->n, 64);
			el_result *e = &a->r[a->n++];
			snprintf(e->topic, sizeof(e->topic), "%s", name);
			e->partition = kr_i32(&r, "partition id");
			e->error = kr_i16(&r, "error code");
			if (flex)
				e->null_msg = kr_cstr(&r, e->msg, sizeof(e->msg), "message") < 0;
			else
				kr_str16(&r, e->msg, sizeof(e->msg), &e->null_msg, "message");
			if (flex)
				kr_tags(&r, "partition tags");
		}
		if (flex)
			kr_tags(&r, "topic tags");
	}
	if (flex)
		kr_tags(&r, "response tags");
	kr_done(&r, "ElectLeaders response");
	free(frame);
	for (int i = 0; i < a->n; i++)
		cc_log("ElectLeaders v%d on %d: %s-%d: %s%s%s", ver, id, a->r[i].topic,
		       (int)a->r[i].partition, rd_kafka_err2name((rd_kafka_resp_err_t)a->r[i].error),
		       a->r[i].null_msg ? "" : ": ", a->r[i].msg);
}

/* The one result of a (a single partition was asked), its code. */
static int16_t only(const el_answer *a, const char *topic, int32_t partition)
{
	ck_assert_msg(a->n == 1, "%d results, expected 1", a->n);
	ck_assert_str_eq(a->r[0].topic, topic);
	ck_assert_int_eq(a->r[0].partition, partition);
	return a->r[0].error;
}

/* ---- waiting ---- */

typedef struct lead_arg {
	const char *topic;
	int32_t partition;
	int leader;
	int32_t min_epoch;
	char why[640];
} lead_arg;

/* The state znode names leader with an epoch >= min_epoch and every
 * running broker's Metadata agrees. */
static bool led_by(hc_cluster *c, void *arg)
{
	lead_arg *a = arg;
	hc_state st;
	memset(&st, 0, sizeof(st));
	if (hc_zk_state(c, a->topic, a->partition, &st) != CTL_ZK_OK || st.leader != a->leader ||
	    st.leader_epoch < a->min_epoch) {
		snprintf(a->why, sizeof(a->why), "state %s", st.json);
		return false;
	}
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0)
			return false;
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), a->partition);
		bool ok = p && p->leader == a->leader && p->leader_epoch == st.leader_epoch;
		if (!ok)
			snprintf(a->why, sizeof(a->why), "broker %d: leader %d epoch %d", id,
				 p ? p->leader : -2, p ? p->leader_epoch : -2);
		hc_md_free(&md);
		if (!ok)
			return false;
	}
	return true;
}

static long wait_led_by(hc_cluster *c, const char *topic, int32_t p, int leader, int32_t min_epoch,
			int timeout_ms)
{
	lead_arg a = {.topic = topic, .partition = p, .leader = leader, .min_epoch = min_epoch};
	long ms = hc_wait(c, timeout_ms, led_by, &a);
	ck_assert_msg(ms >= 0, "%s-%d: not led by %d (epoch >= %d) after %d ms: %s", topic, (int)p,
		      leader, min_epoch, h_scaled_ms(timeout_ms), a.why);
	return ms;
}

static void wait_isr(hc_cluster *c, const char *topic, int32_t p, const int32_t *isr, int n)
{
	ck_assert_msg(hc_wait_isr(c, topic, p, isr, n, 30000) >= 0, "%s-%d: ISR not reached", topic,
		      (int)p);
}

static const int32_t ALL3[3] = {1, 2, 3};

/* ---- (a) the automatic rebalance ---- */

START_TEST(test_rebalance)
{
	static const char *const over[] = {"auto.leader.rebalance.enable=true",
					   "leader.imbalance.check.interval.seconds=2", NULL};
	hc_options o = {.overrides = over};
	hc_cluster c;
	cc_start(&c, &o, false);
	static const int32_t assign[] = {1, 2, 3, 2, 3, 1, 3, 1, 2};
	cc_create_topic(&c, "el", 3, 3, assign,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, "el", 3, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	int32_t epoch0;
	ck_assert_int_eq(cc_leader(&c, "el", 0, &epoch0), 1);

	int64_t t_kill = h_now_ms();
	ck_assert_int_eq(hc_kill(&c, 1), 0);
	int nl = cc_wait_leader(&c, "el", 0, 1, HC_SESSION_MS + 20000);
	cc_log("el-0 led by %d after the kill of 1", nl);
	ck_assert_msg(cc_producer_wait_ack_after(p, 0, t_kill, 30000) >= 0,
		      "the producer did not recover on el-0: %s", p->first_error);
	int64_t t_restart = h_now_ms();
	ck_assert_int_eq(hc_restart(&c, 1), 0);
	int32_t epoch1;
	cc_leader(&c, "el", 0, &epoch1);
	/* back in the ISR, then the next check gives it el-0 back */
	wait_led_by(&c, "el", 0, 1, epoch1 + 1, 60000);
	int64_t back = h_now_ms() - t_restart;
	cc_log("el-0 led by 1 again %" PRId64 " ms after its restart", back);
	printf("cluster_elections: leadership back to the preferred replica %" PRId64 " ms after "
	       "its restart (leader.imbalance.check.interval.seconds=2)\n", back);
	ck_assert(hc_log_has(&c, hc_zk_controller(&c), "preferred election of el-0"));
	for (int q = 0; q < 3; q++) {
		wait_isr(&c, "el", q, ALL3, 3);
		ck_assert_int_eq(cc_leader(&c, "el", q, NULL), assign[q * 3]);
	}
	ck_assert_msg(cc_producer_wait_ack_after(p, 0, h_now_ms(), 30000) >= 0,
		      "the producer did not follow el-0 back to 1: %s", p->first_error);
	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "fatal: %s", p->fatal);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, "el", 3, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "rebalance");
	printf("cluster_elections: %ld records acknowledged across the kill, the restart and the "
	       "rebalance, none lost, duplicated or divergent\n", r.acked);
	chk_free(h);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

/* ---- (b) ElectLeaders ---- */

START_TEST(test_elect_leaders)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	static const int32_t assign[] = {1, 2, 3, 2, 3, 1};
	cc_create_topic(&c, "el", 2, 3, assign, NULL);
	int ctrl = hc_controller(&c);
	ck_assert(ctrl >= 1 && ctrl <= 3);
	int other = ctrl % 3 + 1;
	el_answer a;
	static const int32_t p0[] = {0}, p01[] = {0, 1, 0}, p9[] = {9};

	/* not the controller: NOT_CONTROLLER for each partition, no message */
	for (int16_t v = 0; v <= 2; v++) {
		elect_leaders(&c, other, v, 0, "el", p0, 1, &a);
		ck_assert_int_eq(a.error, 0);
		ck_assert_int_eq(only(&a, "el", 0), RD_KAFKA_RESP_ERR_NOT_CONTROLLER);
		ck_assert(a.r[0].null_msg);
	}
	/* the controller: the preferred replicas lead (a partition named
	 * twice is answered once) */
	elect_leaders(&c, ctrl, 1, 0, "el", p01, 3, &a);
	ck_assert_int_eq(a.n, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(a.r[i].error, RD_KAFKA_RESP_ERR_ELECTION_NOT_NEEDED);
		ck_assert_str_eq(a.r[i].msg, "Leader election not needed for topic partition.");
	}
	elect_leaders(&c, ctrl, 0, 0, "el", p0, 1, &a);
	ck_assert_int_eq(only(&a, "el", 0), RD_KAFKA_RESP_ERR_ELECTION_NOT_NEEDED);
	elect_leaders(&c, ctrl, 2, 1, "el", p0, 1, &a); /* unclean: a live leader */
	ck_assert_int_eq(only(&a, "el", 0), RD_KAFKA_RESP_ERR_ELECTION_NOT_NEEDED);
	elect_leaders(&c, ctrl, 2, 0, "el", p9, 1, &a);
	ck_assert_int_eq(only(&a, "el", 9), RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
	elect_leaders(&c, ctrl, 1, 0, "nope", p0, 1, &a);
	ck_assert_int_eq(only(&a, "nope", 0), RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
	elect_leaders(&c, ctrl, 1, 5, "el", p0, 1, &a);
	ck_assert_int_eq(a.error, RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	ck_assert_int_eq(only(&a, "el", 0), RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	elect_leaders(&c, ctrl, 2, 0, NULL, NULL, 0, &a);
	ck_assert_int_eq(a.error, 0);
	ck_assert_int_eq(a.n, 0); /* nothing needed an election */

	/* broker 1 dies: el-0 moves; its preferred replica cannot lead */
	ck_assert_int_eq(hc_kill(&c, 1), 0);
	cc_wait_leader(&c, "el", 0, 1, HC_SESSION_MS + 20000);
	ctrl = hc_controller(&c);
	elect_leaders(&c, ctrl, 2, 0, "el", p0, 1, &a);
	ck_assert_int_eq(only(&a, "el", 0), RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
	ck_assert(!a.r[0].null_msg);

	/* back and in sync: the election moves el-0 to 1; when the answer
	 * comes the controller's own Metadata names 1 already */
	ck_assert_int_eq(hc_restart(&c, 1), 0);
	wait_isr(&c, "el", 0, ALL3, 3);
	int32_t epoch;
	ck_assert_int_ne(cc_leader(&c, "el", 0, &epoch), 1);
	ctrl = hc_controller(&c);
	elect_leaders(&c, ctrl, 1, 0, "el", p0, 1, &a);
	ck_assert_int_eq(only(&a, "el", 0), 0);
	ck_assert(a.r[0].null_msg);
	hc_md md;
	ck_assert_int_eq(hc_metadata(&c, ctrl, "el", &md, 5000), 0);
	const hc_md_partition *mp = hc_md_part(hc_md_find(&md, "el"), 0);
	ck_assert_msg(mp && mp->leader == 1 && mp->leader_epoch == epoch + 1,
		      "the controller's Metadata: leader %d epoch %d", mp ? mp->leader : -2,
		      mp ? mp->leader_epoch : -2);
	hc_md_free(&md);
	wait_led_by(&c, "el", 0, 1, epoch + 1, 15000);
	hc_state st;
	ck_assert_int_eq(hc_zk_state(&c, "el", 0, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.nisr, 3); /* the ISR as it was */

	/* every partition: el-1 lost 1 from its ISR and got it back, but its
	 * leader never changed; only elections that happened are answered */
	elect_leaders(&c, ctrl, 2, 0, NULL, NULL, 0, &a);
	for (int i = 0; i < a.n; i++)
		ck_assert_msg(a.r[i].error == 0, "%s-%d: %d", a.r[i].topic, (int)a.r[i].partition,
			      a.r[i].error);
	for (int q = 0; q < 2; q++)
		ck_assert_int_eq(cc_leader(&c, "el", q, NULL), assign[q * 3]);
	cc_finish(&c);
}
END_TEST

/* ---- (c) the znode ---- */

START_TEST(test_preferred_znode)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	static const int32_t assign[] = {1, 2, 3};
	cc_create_topic(&c, "pz", 1, 3, assign, NULL);
	/* a controlled shutdown moves pz-0 to 2; 1 comes back in sync */
	ck_assert_int_eq(hc_term(&c, 1), 0);
	ck_assert_int_eq(hc_wait_exit(&c, 1, 30000), 0);
	ck_assert_int_eq(cc_leader(&c, "pz", 0, NULL), 2);
	ck_assert_int_eq(hc_restart(&c, 1), 0);
	wait_isr(&c, "pz", 0, ALL3, 3);
	int32_t epoch;
	ck_assert_int_eq(cc_leader(&c, "pz", 0, &epoch), 2);
	static const char json[] = "{\"version\":1,\"partitions\":[{\"topic\":\"pz\",\"partition\":0}]}";
	ctl_zk *zk = hc_zk_session(&c);
	ck_assert_ptr_nonnull(zk);
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/preferred_replica_election", json,
				       (int)sizeof(json) - 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_OK);
	int64_t t0 = h_now_ms();
	wait_led_by(&c, "pz", 0, 1, epoch + 1, 20000);
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	while (hc_zk_exists(&c, "/admin/preferred_replica_election", NULL) == CTL_ZK_OK &&
	       h_now_ms() < deadline)
		usleep(20 * 1000);
	ck_assert_int_eq(hc_zk_exists(&c, "/admin/preferred_replica_election", NULL), CTL_ZK_NONODE);
	cc_log("pz-0 led by 1 and the znode deleted %lld ms after it was written",
	       (long long)(h_now_ms() - t0));
	ck_assert(hc_log_has(&c, hc_zk_controller(&c),
			     "/admin/preferred_replica_election: 1 elected"));
	cc_finish(&c);
}
END_TEST

/* ---- (d) unclean election ---- */

static void wait_isr_only(hc_cluster *c, const char *topic, int32_t id)
{
	int32_t one[1] = {id};
	wait_isr(c, topic, 0, one, 1);
}

START_TEST(test_unclean)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	static const int32_t assign[] = {1, 2, 3};
	cc_create_topic(&c, "clean", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "1",
					      "unclean.leader.election.enable", "false", NULL});
	cc_create_topic(&c, "dirty", 1, 3, assign,
			(const char *const[]){"min.insync.replicas", "1",
					      "unclean.leader.election.enable", "true", NULL});
	cc_create_topic(&c, "forced", 1, 3, assign, NULL);
	static const int32_t solo[] = {3};
	cc_create_topic(&c, "solo", 1, 1, solo, NULL);
	cc_producer *pc = cc_producer_start(&c, "clean", 1, 1, RATE, NULL);
	cc_producer *pd = cc_producer_start(&c, "dirty", 1, 2, RATE, NULL);
	ck_assert(cc_producer_wait_ack_after(pc, 0, 0, 20000) >= 0);
	ck_assert(cc_producer_wait_ack_after(pd, 0, 0, 20000) >= 0);
	usleep(500 * 1000);

	ck_assert_int_eq(hc_kill(&c, 3), 0);
	static const int32_t i12[] = {1, 2};
	wait_isr(&c, "clean", 0, i12, 2);
	wait_isr(&c, "dirty", 0, i12, 2);
	wait_isr(&c, "forced", 0, i12, 2);
	/* the producers catch up on what waited for the ISR to shrink, so
	 * broker 2 holds all of it */
	int64_t t_shrunk = h_now_ms();
	ck_assert(cc_producer_wait_ack_after(pc, 0, t_shrunk, 30000) >= 0);
	ck_assert(cc_producer_wait_ack_after(pd, 0, t_shrunk, 30000) >= 0);
	usleep(1000 * 1000);
	ck_assert_int_eq(hc_kill(&c, 2), 0);
	int64_t t_kill2 = h_now_ms();
	cc_log("killed 3, then 2");
	wait_isr_only(&c, "clean", 1);
	wait_isr_only(&c, "dirty", 1);
	wait_isr_only(&c, "forced", 1);
	/* records written by 1 alone (min.insync.replicas=1) */
	ck_assert(cc_producer_wait_ack_after(pd, 0, t_kill2, 30000) >= 0);
	ck_assert(cc_producer_wait_ack_after(pc, 0, t_kill2, 30000) >= 0);
	usleep(500 * 1000);
	ck_assert_int_eq(hc_kill(&c, 1), 0);
	cc_log("killed 1: nobody is left");
	cc_producer_stop(pc, 2000);
	cc_producer_stop(pd, 2000);
	int32_t epoch_d, epoch_c;
	cc_leader(&c, "dirty", 0, &epoch_d);
	cc_leader(&c, "clean", 0, &epoch_c);

	/* broker 2 alone comes back */
	ck_assert_int_eq(hc_restart(&c, 2), 0);
	wait_led_by(&c, "dirty", 0, 2, epoch_d + 1, HC_SESSION_MS + 30000);
	hc_state st;
	ck_assert_int_eq(hc_zk_state(&c, "dirty", 0, &st), CTL_ZK_OK);
	ck_assert_msg(st.nisr == 1 && st.isr[0] == 2, "dirty: %s", st.json);
	cc_log("dirty elected 2 uncleanly: %s", st.json);
	int64_t leo2 = cc_log_end_offset(&c, 2, "dirty", 0);
	cc_log("dirty: broker 2 holds offsets up to %lld", (long long)leo2);
	ck_assert(hc_log_has(&c, 2, "samsa: broker 2 is the controller"));
	/* clean stays offline: leader -1, in ZooKeeper and in Metadata */
	usleep((useconds_t)h_scaled_ms(2000) * 1000);
	ck_assert_int_eq(hc_zk_state(&c, "clean", 0, &st), CTL_ZK_OK);
	ck_assert_msg(st.leader == -1 && st.nisr == 1 && st.isr[0] == 1, "clean: %s", st.json);
	hc_md md;
	ck_assert_int_eq(hc_metadata(&c, 2, "clean", &md, 5000), 0);
	const hc_md_partition *mp = hc_md_part(hc_md_find(&md, "clean"), 0);
	ck_assert_msg(mp && mp->leader == -1, "clean: Metadata leader %d", mp ? mp->leader : -2);
	hc_md_free(&md);
	int64_t base;
	int16_t perr = cc_raw_produce(&c, 2, "clean", 0, -1, 1, 0, &base);
	ck_assert_msg(perr == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
			      perr == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
		      "produce to offline clean: %d", perr);
	cc_log("clean stays offline: %s", st.json);

	/* ElectLeaders: forced (unclean disabled) by the operator's UNCLEAN;
	 * solo has no live replica; clean's preferred replica is dead */
	el_answer a;
	static const int32_t p0[] = {0};
	elect_leaders(&c, 2, 2, 0, "clean", p0, 1, &a);
	ck_assert_int_eq(only(&a, "clean", 0), RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
	elect_leaders(&c, 2, 2, 1, "solo", p0, 1, &a);
	ck_assert_int_eq(only(&a, "solo", 0), RD_KAFKA_RESP_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE);
	int32_t epoch_f;
	ck_assert_int_eq(cc_leader(&c, "forced", 0, &epoch_f), -1);
	elect_leaders(&c, 2, 1, 1, "forced", p0, 1, &a);
	ck_assert_int_eq(only(&a, "forced", 0), 0);
	wait_led_by(&c, "forced", 0, 2, epoch_f + 1, 10000);
	elect_leaders(&c, 2, 1, 1, "forced", p0, 1, &a);
	ck_assert_int_eq(only(&a, "forced", 0), RD_KAFKA_RESP_ERR_ELECTION_NOT_NEEDED);

	/* what dirty lost: Kafka's documented loss (reported, expected) */
	chk *h = chk_new();
	cc_producer_feed(pd, h);
	chk_span(h, pd->start_ms, pd->end_ms);
	long nread = cc_read_all(&c, "dirty", 1, h);
	chk_report r;
	chk_options loss_ok = {.idempotent = true, .allow_loss = true};
	cc_check(h, &loss_ok, &r, "unclean election (loss expected)");
	printf("cluster_elections: unclean election lost %ld of %ld acknowledged records (read "
	       "%ld): Kafka's documented loss when an out-of-sync replica is elected\n",
	       r.lost, r.acked, nread);
	/* at least the records sent after broker 2 died: broker 1 alone had
	 * them */
	long alone = 0;
	for (long i = 0; i < atomic_load(&pd->nsent); i++) {
		cc_rec *rec = cc_producer_rec(pd, i);
		if (rec && rec->state == CC_ACKED && rec->sent_ms >= t_kill2)
			alone++;
	}
	cc_log("dirty: %ld records sent after broker 2 died were acknowledged", alone);
	ck_assert_msg(alone > 0 && r.lost >= alone,
		      "%ld lost; %ld acknowledged by broker 1 alone should be among them", r.lost,
		      alone);
	ck_assert_int_eq(r.divergent, 0);
	chk_free(h);

	/* broker 1 returns: clean elects it and has lost nothing; dirty's
	 * replica on 1 truncates to 2's log */
	ck_assert_int_eq(hc_restart(&c, 1), 0);
	wait_led_by(&c, "clean", 0, 1, epoch_c + 1, HC_SESSION_MS + 30000);
	h = chk_new();
	cc_producer_feed(pc, h);
	chk_span(h, pc->start_ms, pc->end_ms);
	cc_read_all(&c, "clean", 1, h);
	chk_options strict = {.idempotent = true};
	cc_check(h, &strict, &r, "clean election");
	printf("cluster_elections: with unclean.leader.election.enable=false the partition stayed "
	       "offline until its in-sync replica returned: %ld acknowledged, none lost\n", r.acked);
	chk_free(h);
	static const int32_t i21[] = {2, 1};
	wait_isr(&c, "dirty", 0, i21, 2);
	static const int ids[2] = {1, 2};
	char why[512] = "";
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (!cc_logs_equal(&c, "dirty", 0, ids, 2, why, sizeof(why)) && h_now_ms() < deadline)
		usleep(200 * 1000);
	ck_assert_msg(cc_logs_equal(&c, "dirty", 0, ids, 2, why, sizeof(why)),
		      "dirty: the replicas differ after 1 rejoined: %s", why);
	cc_producer_free(pc);
	cc_producer_free(pd);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_elections");
	TCase *tc = tcase_create("elections");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_rebalance);
	tcase_add_test(tc, test_elect_leaders);
	tcase_add_test(tc, test_preferred_znode);
	tcase_add_test(tc, test_unclean);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
