/*
 * cluster_listeners.c - brokers that do not share the client's listener,
 * answered as Kafka's ZkMetadataCache and KafkaApis answer them. Two
 * brokers in ZooKeeper mode: broker 1 has listeners PLAINTEXT and EXTRA
 * (EXTRA:PLAINTEXT in listener.security.protocol.map), broker 2 only
 * PLAINTEXT; both replicate over PLAINTEXT. Over broker 1's EXTRA listener,
 * with raw requests:
 *   - Metadata v9 lists only broker 1 (at its EXTRA port); a partition
 *     led by broker 2 has leader -1 and LISTENER_NOT_FOUND; v5 gives it
 *     LEADER_NOT_AVAILABLE; a partition led by broker 1 with broker 2 as
 *     follower is NONE with both replicas, but in v0 lists only replica 1
 *     and is REPLICA_NOT_AVAILABLE (maybeFilterAliveReplicas);
 *   - DescribeCluster lists only broker 1;
 *   - FindCoordinator for a group whose coordinator is broker 2 is
 *     COORDINATOR_NOT_AVAILABLE.
 * Over PLAINTEXT the same requests list both brokers, the leaders and the
 * coordinator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"
#include "protocol/err.h"

#define T_REMOTE "lnf-remote" /* one partition on broker 2 */
#define T_SHARED "lnf-shared" /* leader 1, follower 2 */

/* What one Metadata answer says about the brokers and one partition. */
typedef struct md_view {
	int nbrokers;
	int32_t broker_id[8], broker_port[8];
	int16_t topic_err, part_err;
	int32_t leader;
	int nreplicas, nisr;
	int32_t replicas[8], isr[8];
} md_view;

/* A classic (non-flexible) string, skipped. */
static void skip_str(k_rbuf *r, const char *what)
{
	int16_t n = kr_i16(r, what);
	if (n > 0 && kr_need(r, (size_t)n, what))
		r->pos += (size_t)n;
}

static int read_len(k_rbuf *r, bool flex, const char *what)
{
	return flex ? (int)kr_carray(r, what) : kr_i32(r, what);
}

static void read_ids(k_rbuf *r, bool flex, int32_t *out, int *n, const char *what)
{
	int k = read_len(r, flex, what);
	*n = 0;
	for (int i = 0; i < k; i++) {
		int32_t id = kr_i32(r, what);
		if (*n < 8)
			out[(*n)++] = id;
	}
}

/* Metadata version v (0, 5 or 9) for topic over port; fills *mv. */
static void metadata(int port, int16_t v, const char *topic, md_view *mv)
{
	bool flex = v >= 9;
	k_wbuf w = { .len = 0 };
	if (flex) {
		kw_uvarint(&w, 2);
		kw_cstr(&w, topic);
		kw_tags0(&w);
		kw_u8(&w, 0); /* allow auto creation */
		kw_u8(&w, 0); /* cluster authorized operations */
		kw_u8(&w, 0); /* topic authorized operations */
		kw_tags0(&w);
	} else {
		kw_i32(&w, 1);
		kw_i16(&w, (int16_t)strlen(topic));
		kw_raw(&w, topic, strlen(topic));
		if (v >= 4)
			kw_u8(&w, 0);
	}
	int fd = w_connect(port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect to %d", port);
	k_rbuf r;
	uint8_t *frame = flex ? k_roundtrip(fd, 3, v, &w, &r) : k_roundtrip_classic(fd, 3, v, &w, &r);
	close(fd);
	memset(mv, 0, sizeof(*mv));
	if (v >= 3)
		kr_i32(&r, "throttle");
	int nb = read_len(&r, flex, "brokers");
	for (int i = 0; i < nb; i++) {
		int32_t id = kr_i32(&r, "node id");
		if (flex)
			kr_cstr(&r, NULL, 0, "host");
		else
			skip_str(&r, "host");
		int32_t p = kr_i32(&r, "port");
		if (v >= 1) {
			if (flex)
				kr_cstr(&r, NULL, 0, "rack");
			else
				skip_str(&r, "rack");
		}
		if (flex)
			kr_tags(&r, "broker tags");
		if (mv->nbrokers < 8) {
			mv->broker_id[mv->nbrokers] = id;
			mv->broker_port[mv->nbrokers++] = p;
		}
	}
	if (v >= 2) {
		if (flex)
			kr_cstr(&r, NULL, 0, "cluster id");
		else
			skip_str(&r, "cluster id");
	}
	if (v >= 1)
		kr_i32(&r, "controller");
	int nt = read_len(&r, flex, "topics");
	ck_assert_int_eq(nt, 1);
	mv->topic_err = kr_i16(&r, "topic error");
	if (flex)
		kr_cstr(&r, NULL, 0, "name");
	else
		skip_str(&r, "name");
	if (v >= 1)
		kr_i8(&r, "internal");
	int np = read_len(&r, flex, "partitions");
	ck_assert_int_eq(np, 1);
	mv->part_err = kr_i16(&r, "partition error");
	kr_i32(&r, "index");
	mv->leader = kr_i32(&r, "leader");
	if (v >= 7)
		kr_i32(&r, "leader epoch");
	read_ids(&r, flex, mv->replicas, &mv->nreplicas, "replicas");
	read_ids(&r, flex, mv->isr, &mv->nisr, "isr");
	if (v >= 5) {
		int32_t off[8];
		int noff;
		read_ids(&r, flex, off, &noff, "offline");
	}
	if (flex)
		kr_tags(&r, "partition tags");
	if (v >= 8)
		kr_i32(&r, "topic operations");
	if (flex)
		kr_tags(&r, "topic tags");
	if (v >= 8 && v <= 10)
		kr_i32(&r, "cluster operations");
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "Metadata");
	free(frame);
}

/* DescribeCluster v0 over port: the broker ids (at most cap), their count. */
static int describe_cluster(int port, int32_t *ids, int cap)
{
	k_wbuf w = { .len = 0 };
	kw_u8(&w, 0);
	kw_tags0(&w);
	int fd = w_connect(port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect to %d", port);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 60, 0, &w, &r);
	close(fd);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_i16(&r, "error"), 0);
	kr_cstr(&r, NULL, 0, "message");
	kr_cstr(&r, NULL, 0, "cluster id");
	kr_i32(&r, "controller");
	int nb = (int)kr_carray(&r, "brokers"), n = 0;
	for (int i = 0; i < nb; i++) {
		int32_t id = kr_i32(&r, "broker id");
		kr_cstr(&r, NULL, 0, "host");
		kr_i32(&r, "port");
		kr_cstr(&r, NULL, 0, "rack");
		kr_tags(&r, "broker tags");
		if (n < cap)
			ids[n++] = id;
	}
	kr_i32(&r, "operations");
	kr_tags(&r, "tags");
	kr_done(&r, "DescribeCluster");
	free(frame);
	return n;
}

/* FindCoordinator v1 for group over port: the error, *node the node id. */
static int16_t find_coordinator(int port, const char *group, int32_t *node)
{
	k_wbuf w = { .len = 0 };
	kw_i16(&w, (int16_t)strlen(group));
	kw_raw(&w, group, strlen(group));
	kw_u8(&w, 0);
	int fd = w_connect(port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect to %d", port);
	k_rbuf r;
	uint8_t *frame = k_roundtrip_classic(fd, 10, 1, &w, &r);
	close(fd);
	kr_i32(&r, "throttle");
	int16_t err = kr_i16(&r, "error");
	skip_str(&r, "message");
	*node = kr_i32(&r, "node");
	skip_str(&r, "host");
	kr_i32(&r, "port");
	kr_done(&r, "FindCoordinator");
	free(frame);
	return err;
}

static bool lists(const md_view *mv, int32_t id)
{
	for (int i = 0; i < mv->nbrokers; i++)
		if (mv->broker_id[i] == id)
			return true;
	return false;
}

START_TEST(test_broker_without_listener)
{
	static char l1[160];
	int extra = h_free_port();
	snprintf(l1, sizeof(l1), "listeners=PLAINTEXT://127.0.0.1:${PORT},EXTRA://127.0.0.1:%d",
		 extra);
	const char *common[] = { "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
				 "inter.broker.listener.name=PLAINTEXT",
				 "offsets.topic.num.partitions=2",
				 "offsets.topic.replication.factor=1", NULL };
	const char *b1[] = { l1, NULL };
	hc_options o = { .brokers = 2, .overrides = common, .zk = cc_shared_zk() };
	o.broker_overrides[1] = b1;
	hc_cluster c;
	cc_start(&c, &o, false);
	int plain = c.b[1]->port;

	cc_create_topic(&c, T_REMOTE, 1, 1, (const int32_t[]){ 2 }, NULL);
	cc_create_topic(&c, T_SHARED, 1, 2, (const int32_t[]){ 1, 2 }, NULL);
	int32_t want_isr[2] = { 1, 2 };
	ck_assert_msg(hc_wait_isr(&c, T_SHARED, 0, want_isr, 2, h_scaled_ms(30000)) >= 0,
		      "the ISR of " T_SHARED " never became [1,2]");

	md_view mv;
	/* over PLAINTEXT: both brokers, both leaders */
	metadata(plain, 9, T_REMOTE, &mv);
	ck_assert_int_eq(mv.nbrokers, 2);
	ck_assert(lists(&mv, 1) && lists(&mv, 2));
	ck_assert_int_eq(mv.part_err, KERR_NONE);
	ck_assert_int_eq(mv.leader, 2);
	/* over EXTRA: broker 1 alone, at its EXTRA port */
	metadata(extra, 9, T_REMOTE, &mv);
	ck_assert_int_eq(mv.nbrokers, 1);
	ck_assert_int_eq(mv.broker_id[0], 1);
	ck_assert_int_eq(mv.broker_port[0], extra);
	ck_assert_int_eq(mv.topic_err, KERR_NONE);
	ck_assert_int_eq(mv.part_err, KERR_LISTENER_NOT_FOUND);
	ck_assert_int_eq(mv.leader, -1);
	ck_assert_int_eq(mv.nreplicas, 1);
	ck_assert_int_eq(mv.replicas[0], 2);
	metadata(extra, 5, T_REMOTE, &mv);
	ck_assert_int_eq(mv.nbrokers, 1);
	ck_assert_int_eq(mv.part_err, KERR_LEADER_NOT_AVAILABLE);
	ck_assert_int_eq(mv.leader, -1);
	/* a leader on the listener: replicas listed in full from v1 */
	metadata(extra, 9, T_SHARED, &mv);
	ck_assert_int_eq(mv.part_err, KERR_NONE);
	ck_assert_int_eq(mv.leader, 1);
	ck_assert_int_eq(mv.nreplicas, 2);
	ck_assert_int_eq(mv.nisr, 2);
	/* v0 only the replicas on the listener */
	metadata(extra, 0, T_SHARED, &mv);
	ck_assert_int_eq(mv.nbrokers, 1);
	ck_assert_int_eq(mv.part_err, KERR_REPLICA_NOT_AVAILABLE);
	ck_assert_int_eq(mv.leader, 1);
	ck_assert_int_eq(mv.nreplicas, 1);
	ck_assert_int_eq(mv.replicas[0], 1);
	ck_assert_int_eq(mv.nisr, 1);
	ck_assert_int_eq(mv.isr[0], 1);
	metadata(plain, 0, T_SHARED, &mv);
	ck_assert_int_eq(mv.part_err, KERR_NONE);
	ck_assert_int_eq(mv.nreplicas, 2);

	int32_t ids[8];
	ck_assert_int_eq(describe_cluster(plain, ids, 8), 2);
	ck_assert_int_eq(describe_cluster(extra, ids, 8), 1);
	ck_assert_int_eq(ids[0], 1);

	/* the offsets topic, made by a first lookup; then a group whose
	 * partition broker 2 leads */
	int32_t node = -1;
	for (int t = 0; t < 100 && find_coordinator(plain, "g-probe", &node) != KERR_NONE; t++)
		usleep(100 * 1000);
	cc_wait_topic(&c, "__consumer_offsets", 2, h_scaled_ms(30000));
	char group[32] = "";
	for (int i = 0; i < 100 && !group[0]; i++) {
		char g[32];
		snprintf(g, sizeof(g), "lnf-group-%d", i);
		if (cc_leader(&c, "__consumer_offsets", cc_internal_partition(g, 2), NULL) == 2)
			snprintf(group, sizeof(group), "%s", g);
	}
	ck_assert_msg(group[0], "broker 2 leads no partition of __consumer_offsets");
	int16_t err = -1;
	for (int t = 0; t < 100 && (err = find_coordinator(plain, group, &node)) != KERR_NONE; t++)
		usleep(100 * 1000);
	ck_assert_int_eq(err, KERR_NONE);
	ck_assert_int_eq(node, 2);
	ck_assert_int_eq(find_coordinator(extra, group, &node), KERR_COORDINATOR_NOT_AVAILABLE);
	ck_assert_int_eq(node, -1);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_listeners");
	TCase *tc = tcase_create("listeners");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_broker_without_listener);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
