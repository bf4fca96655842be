/*
 * cluster_coordinators.c - the group and transaction coordinators follow
 * the leadership of their internal partitions, and survive their broker
 * being killed (issue 13; CLUSTER.md 6.5's "consumer groups and
 * transactions keep working").
 *
 * __consumer_offsets and __transaction_state have 5 partitions and
 * replication factor 3 here (HC_DEFAULTS; transaction.state.log.min.isr 2).
 *
 * group: FindCoordinator (raw v1) for the group names the leader of its
 * __consumer_offsets partition (Utils.abs(hashCode) % 5). A librdkafka
 * consumer of the group reads half of 300 records and commits; the
 * coordinator's broker is killed (-9); FindCoordinator then names the new
 * leader of that partition, the committed offsets read back unchanged,
 * the consumer reads the rest and commits again. After the killed broker
 * returns, a new member of the group starts where the commits say: it gets
 * exactly 30 records produced afterwards, nothing older.
 *
 * transaction: FindCoordinator for a transactional id names the leader of
 * its __transaction_state partition. A transactional producer commits a
 * transaction; in a second one, with its records flushed, the
 * coordinator's broker is killed (-9) and the commit issued: it either
 * succeeds (after librdkafka found the new coordinator) or fails with an
 * abortable error and is aborted; any other outcome (a fatal error, a
 * timeout) fails the test. FindCoordinator names the new leader; a third
 * transaction commits (the producer recovered). A read_committed consumer
 * sees exactly the first and third transactions' records, and the second's
 * exactly when it committed, each once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"

#define NINTERNAL 5 /* offsets.topic.num.partitions, transaction.state.log.num.partitions */

enum {
	COORDINATOR_LOAD_IN_PROGRESS = 14,
	COORDINATOR_NOT_AVAILABLE = 15,
	NOT_COORDINATOR = 16,
};

/* FindCoordinator until a coordinator is named (it may be loading or the
 * internal topic being created); checks it is the leader of the key's
 * internal partition. Returns it. */
static int find_coordinator(hc_cluster *c, const char *key, int8_t type)
{
	const char *itopic = type == 0 ? "__consumer_offsets" : "__transaction_state";
	int32_t part = cc_internal_partition(key, NINTERNAL);
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	int32_t node = -1;
	int16_t err = -1;
	for (;;) {
		for (int id = 1; id <= c->n; id++) {
			if (!hc_alive(c, id) || c->paused[id])
				continue;
			err = cc_find_coordinator(c, id, key, type, &node);
			if (err != 0)
				break;
			hc_state st;
			if (hc_zk_state(c, itopic, part, &st) != CTL_ZK_OK || st.leader != node) {
				err = -2; /* not the leader (yet): ask again */
				break;
			}
		}
		if (err == 0)
			return node;
		ck_assert_msg(err == COORDINATOR_NOT_AVAILABLE || err == NOT_COORDINATOR ||
				      err == COORDINATOR_LOAD_IN_PROGRESS || err == -2,
			      "FindCoordinator %s: error %d", key, err);
		if (h_now_ms() >= deadline) {
			hc_state st;
			hc_zk_state(c, itopic, part, &st);
			ck_abort_msg("FindCoordinator %s: node %d (error %d), but %s-%d's state znode "
				     "says %s",
				     key, node, err, itopic, part, st.json);
		}
		usleep(100 * 1000);
	}
}

static void plain_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	int *errors = opaque;
	if (m->err)
		(*errors)++;
}

/* n records "<prefix><i>" to partition i % 3 of topic, all acknowledged
 * (acks=all, idempotent). */
static void produce_plain(hc_cluster *c, const char *topic, const char *prefix, int n)
{
	int errors = 0;
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set(conf, "enable.idempotence", "true");
	rd_kafka_conf_set_opaque(conf, &errors);
	rd_kafka_conf_set_dr_msg_cb(conf, plain_dr);
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	char v[64];
	for (int i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "%s%d", prefix, i);
		rd_kafka_resp_err_t e = rd_kafka_producev(
		    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(i % 3),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(v, strlen(v)),
		    RD_KAFKA_V_END);
		ck_assert_msg(!e, "producev: %s", rd_kafka_err2name(e));
	}
	ck_assert_int_eq(rd_kafka_flush(rk, h_scaled_ms(30000)), 0);
	ck_assert_msg(errors == 0, "%d of %d records failed", errors, n);
	rd_kafka_destroy(rk);
}

static rd_kafka_t *group_consumer(hc_cluster *c, const char *group)
{
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set(conf, "group.id", group);
	c_set(conf, "enable.auto.commit", "false");
	c_set(conf, "auto.offset.reset", "earliest");
	c_set(conf, "session.timeout.ms", "10000");
	c_set(conf, "heartbeat.interval.ms", "500");
	c_set(conf, "enable.partition.eof", "false");
	rd_kafka_t *rk = c_new(RD_KAFKA_CONSUMER, conf);
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(t, "gin", RD_KAFKA_PARTITION_UA);
	ck_assert_int_eq(rd_kafka_subscribe(rk, t), 0);
	rd_kafka_topic_partition_list_destroy(t);
	return rk;
}

/* Poll until n more records arrived (transient errors are logged); the
 * next offset per partition goes to next[3]. */
static void consume_n(rd_kafka_t *rk, int n, int64_t *next, int timeout_ms)
{
	long long deadline = h_now_ms() + h_scaled_ms(timeout_ms);
	int got = 0;
	while (got < n) {
		ck_assert_msg(h_now_ms() < deadline, "only %d of %d records consumed", got, n);
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		if (!m)
			continue;
		if (m->err) {
			fprintf(stderr, "consumer: %s\n", rd_kafka_message_errstr(m));
		} else {
			ck_assert_msg(m->partition >= 0 && m->partition < 3, "partition %d",
				      (int)m->partition);
			ck_assert_msg(m->offset == next[m->partition],
				      "gin-%d: offset %" PRId64 ", expected %" PRId64, (int)m->partition,
				      m->offset, next[m->partition]);
			next[m->partition]++;
			got++;
		}
		rd_kafka_message_destroy(m);
	}
}

/* Commit next[0..3) synchronously (every partition, also one nothing was
 * read from), again while the coordinator moves. */
static void commit_sync(rd_kafka_t *rk, const int64_t *next)
{
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(3);
	for (int p = 0; p < 3; p++)
		rd_kafka_topic_partition_list_add(l, "gin", p)->offset = next[p];
	rd_kafka_resp_err_t e;
	while ((e = rd_kafka_commit(rk, l, 0)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		ck_assert_msg(h_now_ms() < deadline, "commit: %s", rd_kafka_err2name(e));
		fprintf(stderr, "commit: %s; again\n", rd_kafka_err2name(e));
		usleep(200 * 1000);
	}
	rd_kafka_topic_partition_list_destroy(l);
}

/* The committed offsets must be want[0..3). */
static void expect_committed(rd_kafka_t *rk, const int64_t *want)
{
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	for (;;) {
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(3);
		for (int p = 0; p < 3; p++)
			rd_kafka_topic_partition_list_add(l, "gin", p);
		rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, h_scaled_ms(5000));
		bool ok = e == RD_KAFKA_RESP_ERR_NO_ERROR;
		char why[256] = "";
		if (!ok)
			snprintf(why, sizeof(why), "%s", rd_kafka_err2name(e));
		for (int p = 0; ok && p < 3; p++) {
			if (l->elems[p].err || l->elems[p].offset != want[p]) {
				snprintf(why, sizeof(why), "gin-%d: committed %" PRId64 " (%s), expected %"
					 PRId64, p, l->elems[p].offset, rd_kafka_err2name(l->elems[p].err),
					 want[p]);
				ok = false;
			}
		}
		rd_kafka_topic_partition_list_destroy(l);
		if (ok)
			return;
		ck_assert_msg(h_now_ms() < deadline && e != RD_KAFKA_RESP_ERR_NO_ERROR,
			      "committed offsets: %s", why);
		fprintf(stderr, "committed: %s; again\n", why);
		usleep(200 * 1000);
	}
}

START_TEST(test_group)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "gin", 3, 3, NULL, (const char *const[]){"min.insync.replicas", "2", NULL});
	produce_plain(&c, "gin", "g", 300);
	const char *group = "coord-group";
	int k = find_coordinator(&c, group, 0);
	fprintf(stderr, "group coordinator: broker %d (partition %d)\n", k,
		cc_internal_partition(group, NINTERNAL));

	rd_kafka_t *rk = group_consumer(&c, group);
	int64_t next[3] = {0, 0, 0};
	consume_n(rk, 150, next, 60000);
	commit_sync(rk, next);
	expect_committed(rk, next);

	ck_assert_int_eq(hc_kill(&c, k), 0);
	cc_wait_leader(&c, "__consumer_offsets", cc_internal_partition(group, NINTERNAL), k,
		       HC_SESSION_MS + 20000);
	int k2 = find_coordinator(&c, group, 0);
	ck_assert_msg(k2 != k, "the coordinator is still the killed broker %d", k);
	expect_committed(rk, next);
	consume_n(rk, 150, next, 60000);
	commit_sync(rk, next);
	expect_committed(rk, next);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);

	ck_assert_int_eq(hc_restart(&c, k), 0);
	ck_assert_msg(hc_wait_formed(&c, 20000) == 0, "not formed again");
	/* a new member starts at the commits: only what comes now */
	produce_plain(&c, "gin", "h", 30);
	rk = group_consumer(&c, group);
	consume_n(rk, 30, next, 60000);
	rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, h_scaled_ms(1000));
	ck_assert_msg(!m || m->err, "an extra record at gin-%d offset %" PRId64,
		      m ? (int)m->partition : -1, m ? m->offset : -1);
	if (m)
		rd_kafka_message_destroy(m);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	cc_finish(&c);
}
END_TEST

/* ---- transactions ---- */

static void txn_ok(rd_kafka_error_t *e, const char *what)
{
	if (!e)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "%s: %s (%s)%s%s", what, rd_kafka_error_name(e),
		 rd_kafka_error_string(e), rd_kafka_error_is_fatal(e) ? " fatal" : "",
		 rd_kafka_error_txn_requires_abort(e) ? " requires abort" : "");
	rd_kafka_error_destroy(e);
	ck_abort_msg("%s", msg);
}

static void txn_produce(rd_kafka_t *rk, const char *prefix, int n)
{
	char v[64];
	for (int i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "%s-%d", prefix, i);
		rd_kafka_resp_err_t e = rd_kafka_producev(
		    rk, RD_KAFKA_V_TOPIC("txout"), RD_KAFKA_V_PARTITION(i % 3),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(v, strlen(v)),
		    RD_KAFKA_V_END);
		ck_assert_msg(!e, "producev %s: %s", v, rd_kafka_err2name(e));
	}
}

typedef struct seen {
	int c1[30], c2[30], c3[30];
	int other;
	char other_val[64];
} seen;

static void count_value(int32_t p, int64_t o, const char *v, void *opaque)
{
	(void)p;
	(void)o;
	seen *s = opaque;
	int i;
	if (sscanf(v, "c1-%d", &i) == 1 && i >= 0 && i < 30)
		s->c1[i]++;
	else if (sscanf(v, "c2-%d", &i) == 1 && i >= 0 && i < 30)
		s->c2[i]++;
	else if (sscanf(v, "c3-%d", &i) == 1 && i >= 0 && i < 30)
		s->c3[i]++;
	else if (!s->other++)
		snprintf(s->other_val, sizeof(s->other_val), "%s", v);
}

START_TEST(test_transaction)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	cc_create_topic(&c, "txout", 3, 3, NULL,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	const char *txid = "coord-txn";
	rd_kafka_conf_t *conf = cc_conf(&c);
	c_set(conf, "transactional.id", txid);
	c_set(conf, "transaction.timeout.ms", "60000");
	c_set(conf, "request.timeout.ms", "5000");
	c_set(conf, "message.timeout.ms", "30000");
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	txn_ok(rd_kafka_init_transactions(rk, h_scaled_ms(60000)), "init_transactions");
	int t = find_coordinator(&c, txid, 1);
	fprintf(stderr, "transaction coordinator: broker %d (partition %d)\n", t,
		cc_internal_partition(txid, NINTERNAL));

	txn_ok(rd_kafka_begin_transaction(rk), "begin 1");
	txn_produce(rk, "c1", 30);
	txn_ok(rd_kafka_commit_transaction(rk, h_scaled_ms(30000)), "commit 1");

	txn_ok(rd_kafka_begin_transaction(rk), "begin 2");
	txn_produce(rk, "c2", 30);
	ck_assert_int_eq(rd_kafka_flush(rk, h_scaled_ms(30000)), 0);
	ck_assert_int_eq(hc_kill(&c, t), 0);
	bool committed = true;
	rd_kafka_error_t *e = rd_kafka_commit_transaction(rk, h_scaled_ms(60000));
	if (e) {
		fprintf(stderr, "commit 2 after the coordinator's death: %s (%s)%s%s%s\n",
			rd_kafka_error_name(e), rd_kafka_error_string(e),
			rd_kafka_error_is_fatal(e) ? " fatal" : "",
			rd_kafka_error_is_retriable(e) ? " retriable" : "",
			rd_kafka_error_txn_requires_abort(e) ? " requires abort" : "");
		ck_assert_msg(rd_kafka_error_txn_requires_abort(e) && !rd_kafka_error_is_fatal(e),
			      "commit after the coordinator was killed: %s (%s), neither committed "
			      "nor abortable",
			      rd_kafka_error_name(e), rd_kafka_error_string(e));
		rd_kafka_error_destroy(e);
		txn_ok(rd_kafka_abort_transaction(rk, h_scaled_ms(60000)), "abort 2");
		committed = false;
	}
	printf("cluster_coordinators: transaction coordinator %d killed before EndTxn: the "
	       "transaction %s\n", t, committed ? "committed" : "was aborted");
	cc_wait_leader(&c, "__transaction_state", cc_internal_partition(txid, NINTERNAL), t,
		       HC_SESSION_MS + 20000);
	int t2 = find_coordinator(&c, txid, 1);
	ck_assert_msg(t2 != t, "the coordinator is still the killed broker %d", t);

	txn_ok(rd_kafka_begin_transaction(rk), "begin 3");
	txn_produce(rk, "c3", 30);
	txn_ok(rd_kafka_commit_transaction(rk, h_scaled_ms(60000)), "commit 3");
	rd_kafka_destroy(rk);

	ck_assert_int_eq(hc_restart(&c, t), 0);
	ck_assert_msg(hc_wait_formed(&c, 20000) == 0, "not formed again");
	seen s;
	memset(&s, 0, sizeof(s));
	cc_read_to_eof(&c, "txout", 3, true, count_value, &s);
	ck_assert_msg(!s.other, "%d unexpected records, e.g. %s", s.other, s.other_val);
	for (int i = 0; i < 30; i++) {
		ck_assert_msg(s.c1[i] == 1, "c1-%d read %d times", i, s.c1[i]);
		ck_assert_msg(s.c3[i] == 1, "c3-%d read %d times", i, s.c3[i]);
		ck_assert_msg(s.c2[i] == (committed ? 1 : 0), "c2-%d read %d times by read_committed "
			      "(the transaction %s)", i, s.c2[i], committed ? "committed" : "aborted");
	}
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_coordinators");
	TCase *tc = tcase_create("coordinators");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_group);
	tcase_add_test(tc, test_transaction);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
