/*
 * cluster_acl.c - ACLs in a three-broker ZooKeeper-mode cluster whose
 * listener speaks SASL_PLAINTEXT, with Kafka's AclAuthorizer on and no ACL
 * for anyone but the test's users (allow.everyone.if.no.acl.found false):
 *
 *  - the brokers log in to each other as User:broker, a super user
 *    (super.users, as Kafka's operators allow replication): 600 records
 *    with acks=all as alice are acknowledged, every replica catches up and
 *    stays in the ISR (replica Fetch needs CLUSTER_ACTION);
 *  - the same cluster with only User:admin a super user: the followers'
 *    fetches are refused (no CLUSTER_ACTION), so their replicas stay empty
 *    while the leaders hold the records;
 *  - an ACL made through broker 1 alone (a client bootstrapped to it) is
 *    enforced by broker 2: alice's ListOffsets there goes from
 *    TOPIC_AUTHORIZATION_FAILED to allowed once broker 2 read the change
 *    notification, bob's stays refused; DescribeAcls on broker 3 lists it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "guarded"
#define NPART 3
#define NREC 600

#define JAAS                                                                                      \
	"listener.name.plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."  \
	"PlainLoginModule required username=\"broker\" password=\"broker-secret\" "               \
	"user_admin=\"admin-secret\" user_broker=\"broker-secret\" user_alice=\"alice-secret\" "   \
	"user_bob=\"bob-secret\";"

#define AS(user)                                                                                  \
	((const char *const[]){ "security.protocol", "sasl_plaintext", "sasl.mechanisms", "PLAIN", \
				"sasl.username", user, "sasl.password", user "-secret", NULL })

static rd_kafka_conf_t *conf_as(hc_cluster *c, const char *const *kv, const char *bootstrap)
{
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set_all(conf, kv);
	if (bootstrap)
		c_set(conf, "bootstrap.servers", bootstrap);
	return conf;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	int *counts = m->_private;
	if (counts)
		counts[m->err ? 1 : 0]++;
}

/* A raw connection to broker id, authenticated as user (SASL PLAIN). */
static int sasl_connect(hc_cluster *c, int id, const char *user, const char *password)
{
	int fd = w_connect_host(c->b[id]->host, c->b[id]->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	k_wbuf w = { .len = 0 };
	kw_i16(&w, 5);
	kw_raw(&w, "PLAIN", 5);
	k_rbuf r;
	uint8_t *frame = k_roundtrip_classic(fd, 17, 1, &w, &r);
	ck_assert_int_eq(kr_i16(&r, "ErrorCode"), 0);
	free(frame);
	char token[128];
	int n = snprintf(token, sizeof(token), "%c%s%c%s", 0, user, 0, password);
	w.len = 0;
	kw_uvarint(&w, (uint64_t)n + 1);
	kw_raw(&w, token, (size_t)n);
	kw_tags0(&w);
	frame = k_roundtrip(fd, 36, 2, &w, &r);
	ck_assert_int_eq(kr_i16(&r, "ErrorCode"), 0);
	free(frame);
	return fd;
}

/* ListOffsets v6 of TOPIC partition 0 on fd: its ErrorCode. */
static int list_offsets(int fd)
{
	k_wbuf w = { .len = 0 };
	kw_i32(&w, -1);
	kw_u8(&w, 0);
	kw_uvarint(&w, 2);
	kw_cstr(&w, TOPIC);
	kw_uvarint(&w, 2);
	kw_i32(&w, 0);
	kw_i32(&w, -1);
	kw_i64(&w, -1);
	kw_tags0(&w);
	kw_tags0(&w);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 2, 6, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	ck_assert_int_eq(kr_carray(&r, "Topics"), 1);
	char name[64];
	kr_cstr(&r, name, sizeof(name), "Name");
	ck_assert_int_eq(kr_carray(&r, "Partitions"), 1);
	kr_i32(&r, "PartitionIndex");
	int err = kr_i16(&r, "ErrorCode");
	ck_assert_msg(!r.err, "ListOffsets response: %s", r.err);
	free(frame);
	return err;
}

/* DescribeAcls v2 of every ACL on fd: the number of resource patterns
 * (-1 on an error). */
static int describe_acls(int fd)
{
	k_wbuf w = { .len = 0 };
	kw_u8(&w, 1);
	kw_cstr(&w, NULL);
	kw_u8(&w, 1);
	kw_cstr(&w, NULL);
	kw_cstr(&w, NULL);
	kw_u8(&w, 1);
	kw_u8(&w, 1);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 29, 2, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	int err = kr_i16(&r, "ErrorCode");
	char msg[256];
	kr_cstr(&r, msg, sizeof(msg), "ErrorMessage");
	int n = (int)kr_carray(&r, "Resources");
	ck_assert_msg(!r.err, "DescribeAcls response: %s", r.err);
	free(frame);
	return err ? -1 : n;
}

static rd_kafka_resp_err_t create_acl(rd_kafka_t *rk, const char *principal,
				      rd_kafka_AclOperation_t op)
{
	char errstr[256];
	rd_kafka_AclBinding_t *b = rd_kafka_AclBinding_new(
	    RD_KAFKA_RESOURCE_TOPIC, TOPIC, RD_KAFKA_RESOURCE_PATTERN_LITERAL, principal, "*", op,
	    RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, errstr, sizeof(errstr));
	ck_assert_msg(b != NULL, "AclBinding_new: %s", errstr);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateAcls(rk, &b, 1, NULL, q);
	rd_kafka_event_t *ev = NULL;
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	while (!ev && h_now_ms() < deadline) {
		ev = rd_kafka_queue_poll(q, 200);
		if (ev && rd_kafka_event_type(ev) != RD_KAFKA_EVENT_CREATEACLS_RESULT) {
			rd_kafka_event_destroy(ev);
			ev = NULL;
		}
	}
	ck_assert_msg(ev != NULL, "CreateAcls: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_acl_result_t **r =
		    rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
		ck_assert_int_eq(n, 1);
		const rd_kafka_error_t *e = rd_kafka_acl_result_error(r[0]);
		err = e ? rd_kafka_error_code(e) : 0;
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AclBinding_destroy(b);
	return err;
}

START_TEST(test_acls_across_brokers)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){ "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
						"sasl.enabled.mechanisms=PLAIN",
						"sasl.mechanism.inter.broker.protocol=PLAIN", JAAS,
						"authorizer.class.name=kafka.security.authorizer."
						"AclAuthorizer",
						"super.users=User:admin;User:broker",
						"zookeeper.session.timeout.ms=20000",
						"replica.fetch.backoff.ms=200", NULL },
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret" };
	cc_start(&c, &o, false);

	/* The topic, then alice's ACLs, made through broker 1 alone. */
	char b1[64];
	snprintf(b1, sizeof(b1), "%s:%d", c.b[1]->host, c.b[1]->port);
	rd_kafka_t *admin = c_new(RD_KAFKA_PRODUCER, conf_as(&c, AS("admin"), b1));
	char err[256];
	ck_assert_msg(c_create_topic(admin, TOPIC, NPART, 3, NULL, err, sizeof(err)) == 0,
		      "CreateTopics: %s", err);
	cc_wait_topic(&c, TOPIC, NPART, h_scaled_ms(30000));

	/* Before the ACLs, broker 2 refuses alice too (no ACL: nobody). */
	int fa = sasl_connect(&c, 2, "alice", "alice-secret");
	int fb = sasl_connect(&c, 2, "bob", "bob-secret");
	ck_assert_int_eq(list_offsets(fa), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	ck_assert_int_eq(create_acl(admin, "User:alice", RD_KAFKA_ACL_OPERATION_WRITE), 0);
	ck_assert_int_eq(create_acl(admin, "User:alice", RD_KAFKA_ACL_OPERATION_READ), 0);
	rd_kafka_destroy(admin);

	/* Broker 2 enforces them once its watch has read the notifications. */
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	int e;
	while ((e = list_offsets(fa)) == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
	       h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_msg(e != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		      "broker 2 still refuses alice");
	ck_assert_int_eq(list_offsets(fb), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	close(fa);
	close(fb);
	int f3 = sasl_connect(&c, 3, "admin", "admin-secret");
	deadline = h_now_ms() + h_scaled_ms(15000);
	while (describe_acls(f3) != 1 && h_now_ms() < deadline)
		usleep(100 * 1000);
	ck_assert_int_eq(describe_acls(f3), 1);
	close(f3);

	/* Replication between super users: acks=all as alice. */
	rd_kafka_conf_t *conf = conf_as(&c, AS("alice"), NULL);
	c_set(conf, "acks", "all");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_t *p = c_new(RD_KAFKA_PRODUCER, conf);
	int counts[2] = { 0, 0 };
	char val[32];
	for (int i = 0; i < NREC; i++) {
		snprintf(val, sizeof(val), "v%d", i);
		for (;;) {
			rd_kafka_resp_err_t pe = rd_kafka_producev(
			    p, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(i % NPART),
			    RD_KAFKA_V_VALUE(val, strlen(val)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			    RD_KAFKA_V_OPAQUE(counts), RD_KAFKA_V_END);
			if (pe == RD_KAFKA_RESP_ERR_NO_ERROR)
				break;
			ck_assert_int_eq(pe, RD_KAFKA_RESP_ERR__QUEUE_FULL);
			rd_kafka_poll(p, 10);
		}
	}
	rd_kafka_flush(p, h_scaled_ms(60000));
	ck_assert_msg(counts[0] == NREC && counts[1] == 0, "%d acknowledged, %d failed of %d",
		      counts[0], counts[1], NREC);
	rd_kafka_destroy(p);
	const int all[] = { 1, 2, 3 };
	deadline = h_now_ms() + h_scaled_ms(30000);
	for (int part = 0; part < NPART; part++) {
		for (int k = 0; k < 3; k++) {
			int64_t leo;
			while ((leo = cc_log_end_offset(&c, all[k], TOPIC, part)) < NREC / NPART &&
			       h_now_ms() < deadline)
				usleep(100 * 1000);
			ck_assert_msg(leo == NREC / NPART,
				      "broker %d partition %d: log end offset %" PRId64, all[k], part,
				      leo);
		}
		char why[256];
		ck_assert_msg(cc_logs_equal(&c, TOPIC, part, all, 3, why, sizeof(why)),
			      "partition %d: %s", part, why);
	}
	cc_finish(&c);
}
END_TEST

/* Without the brokers among the super users nothing replicates. */
START_TEST(test_brokers_not_super_users)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){ "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
						"sasl.enabled.mechanisms=PLAIN",
						"sasl.mechanism.inter.broker.protocol=PLAIN", JAAS,
						"authorizer.class.name=kafka.security.authorizer."
						"AclAuthorizer",
						"super.users=User:admin",
						"replica.lag.time.max.ms=60000",
						"zookeeper.session.timeout.ms=20000",
						"replica.fetch.backoff.ms=200", NULL },
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret" };
	cc_start(&c, &o, false);
	rd_kafka_t *admin = c_new(RD_KAFKA_PRODUCER, conf_as(&c, AS("admin"), NULL));
	char err[256];
	ck_assert_msg(c_create_topic(admin, TOPIC, NPART, 3, NULL, err, sizeof(err)) == 0,
		      "CreateTopics: %s", err);
	cc_wait_topic(&c, TOPIC, NPART, h_scaled_ms(30000));
	rd_kafka_conf_t *conf = conf_as(&c, AS("admin"), NULL);
	c_set(conf, "acks", "1");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_t *p = c_new(RD_KAFKA_PRODUCER, conf);
	int counts[2] = { 0, 0 };
	for (int i = 0; i < 30; i++) {
		ck_assert_int_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(TOPIC),
						   RD_KAFKA_V_PARTITION(i % NPART),
						   RD_KAFKA_V_VALUE("v", 1),
						   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
						   RD_KAFKA_V_OPAQUE(counts), RD_KAFKA_V_END), 0);
	}
	rd_kafka_flush(p, h_scaled_ms(30000));
	ck_assert_int_eq(counts[0], 30);
	rd_kafka_destroy(p);
	rd_kafka_destroy(admin);
	sleep(3); /* several fetch rounds */
	for (int part = 0; part < NPART; part++) {
		int32_t epoch;
		int leader = cc_leader(&c, TOPIC, part, &epoch);
		ck_assert_int_ge(leader, 1);
		ck_assert_int_eq(cc_log_end_offset(&c, leader, TOPIC, part), 10);
		for (int id = 1; id <= 3; id++)
			if (id != leader)
				ck_assert_msg(cc_log_end_offset(&c, id, TOPIC, part) <= 0,
					      "broker %d replicated partition %d without CLUSTER_ACTION",
					      id, part);
	}
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_acl");
	TCase *tc = tcase_create("acl");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_acls_across_brokers);
	tcase_add_test(tc, test_brokers_not_super_users);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
