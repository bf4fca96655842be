/*
 * cluster_sasl.c - three brokers in ZooKeeper mode whose only listener
 * speaks SASL_PLAINTEXT (the listener named PLAINTEXT mapped to it), so
 * replication, like every client, must authenticate (issue 16): each
 * broker's peers log in with sasl.mechanism.inter.broker.protocol and the
 * username/password of the listener's JAAS entry.
 *
 *  - PLAIN: a topic of 3 partitions with replication factor 3, 600 records
 *    with acks=all through librdkafka (PLAIN) all acknowledged; every
 *    replica catches up (log end offsets equal, .log files equal batch by
 *    batch) and stays in the ISR.
 *  - SCRAM-SHA-512: the brokers' own SCRAM user is made after the cluster
 *    is up with AlterUserScramCredentials on the controller (as Kafka's
 *    operators do), then the same round trip, the client on SCRAM too.
 *  - refused: broker 3 knows a wrong inter-broker password; the leaders
 *    refuse its fetches (its replicas stay empty while the others hold the
 *    records) and its log says why; the other two replicate.
 *
 *  - SASL_SSL: clients on a PLAINTEXT listener, the brokers on an INTERNAL
 *    one mapped to SASL_SSL (inter.broker.listener.name): replication
 *    with the PLAIN exchange inside TLS, and refused with a wrong password.
 */
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/tls_certs.h"
#include "compat-tests/wire.h"

#define TOPIC "replicated"
#define NPART 3
#define NREC 600

#define JAAS(mech, module, user, password)                                                        \
	"listener.name.plaintext." mech ".sasl.jaas.config=org.apache.kafka.common.security." module \
	" required username=\"" user "\" password=\"" password "\" user_admin=\"admin-secret\" "      \
	"user_broker=\"broker-secret\";"

#define COMMON                                                                                    \
	"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",                               \
	    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512", "zookeeper.session.timeout.ms=20000",  \
	    "replica.fetch.backoff.ms=200"

static const char *const kv_plain[] = {"security.protocol", "sasl_plaintext", "sasl.mechanisms",
				       "PLAIN", "sasl.username", "admin", "sasl.password",
				       "admin-secret", NULL};

static rd_kafka_conf_t *sasl_conf(hc_cluster *c, const char *const *kv)
{
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set_all(conf, kv);
	return conf;
}

static void create_topic(hc_cluster *c, const char *const *kv)
{
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, sasl_conf(c, kv));
	char err[256];
	rd_kafka_resp_err_t e = c_create_topic(rk, TOPIC, NPART, 3, NULL, err, sizeof(err));
	ck_assert_msg(e == 0, "CreateTopics: %s", err);
	rd_kafka_destroy(rk);
	cc_wait_topic(c, TOPIC, NPART, h_scaled_ms(30000));
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	int *counts = m->_private;
	if (counts)
		counts[m->err ? 1 : 0]++;
}

/* n records with acks (a string), all acknowledged. */
static void produce(hc_cluster *c, const char *const *kv, const char *acks, int n)
{
	rd_kafka_conf_t *conf = sasl_conf(c, kv);
	c_set(conf, "acks", acks);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	int counts[2] = {0, 0};
	char val[32];
	for (int i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "v%d", i);
		for (;;) {
			rd_kafka_resp_err_t e = rd_kafka_producev(
			    rk, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(i % NPART),
			    RD_KAFKA_V_VALUE(val, strlen(val)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			    RD_KAFKA_V_OPAQUE(counts), RD_KAFKA_V_END);
			if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
				break;
			ck_assert_int_eq(e, RD_KAFKA_RESP_ERR__QUEUE_FULL);
			rd_kafka_poll(rk, 10);
		}
	}
	rd_kafka_flush(rk, h_scaled_ms(60000));
	ck_assert_msg(counts[0] == n && counts[1] == 0, "%d acknowledged, %d failed of %d", counts[0],
		      counts[1], n);
	rd_kafka_destroy(rk);
}

/* Every replica in ids holds every partition's n/NPART records, the same
 * bytes, within the wait. */
static void expect_replicated(hc_cluster *c, const int *ids, int nids, int n)
{
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	for (int p = 0; p < NPART; p++) {
		for (int k = 0; k < nids; k++) {
			int64_t leo;
			while ((leo = cc_log_end_offset(c, ids[k], TOPIC, p)) < n / NPART &&
			       h_now_ms() < deadline)
				usleep(100 * 1000);
			ck_assert_msg(leo == n / NPART, "broker %d partition %d: log end offset %" PRId64
				      ", expected %d", ids[k], p, leo, n / NPART);
		}
		char why[256];
		ck_assert_msg(cc_logs_equal(c, TOPIC, p, ids, nids, why, sizeof(why)), "partition %d: %s",
			      p, why);
	}
}

/* Every partition's ISR per Metadata has the brokers in ids (all of them). */
static void expect_isr(hc_cluster *c, int nids)
{
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	for (;;) {
		hc_md md;
		bool ok = hc_metadata(c, hc_controller(c), TOPIC, &md, 2000) == 0;
		const hc_md_topic *t = ok ? hc_md_find(&md, TOPIC) : NULL;
		int good = 0;
		for (int p = 0; t && p < NPART; p++) {
			const hc_md_partition *pp = hc_md_part(t, p);
			good += pp && pp->nisr == nids;
		}
		if (ok)
			hc_md_free(&md);
		if (good == NPART)
			return;
		ck_assert_msg(h_now_ms() < deadline, "the ISR did not hold %d brokers", nids);
		usleep(200 * 1000);
	}
}

START_TEST(test_plain_replication)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){COMMON, "sasl.mechanism.inter.broker.protocol=PLAIN",
					       JAAS("plain", "plain.PlainLoginModule", "broker",
						    "broker-secret"),
					       JAAS("scram-sha-512", "scram.ScramLoginModule", "broker",
						    "broker-secret"),
					       NULL},
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret"};
	cc_start(&c, &o, false);
	create_topic(&c, kv_plain);
	produce(&c, kv_plain, "all", NREC);
	const int all[] = {1, 2, 3};
	expect_replicated(&c, all, 3, NREC);
	expect_isr(&c, 3);
	cc_finish(&c);
}
END_TEST

/* AlterUserScramCredentials v0 on broker id (PLAIN-authenticated as
 * admin): user's SCRAM-SHA-512 credential for password. */
static void make_scram_user(hc_cluster *c, int id, const char *user, const char *password)
{
	int fd = w_connect_host(c->b[id]->host, c->b[id]->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	uint8_t buf[1024], *resp;
	int32_t rlen;
	/* SaslHandshake v1 + SaslAuthenticate v1 (PLAIN admin) */
	uint8_t body[512];
	w_put16(body, 5);
	memcpy(body + 2, "PLAIN", 5);
	int n = w_build_request(buf, sizeof(buf), 17, 1, 1, "t", body, 7);
	ck_assert_int_eq(w_send_all(fd, buf, (size_t)n, 5000), 0);
	ck_assert_int_eq(w_recv_frame(fd, &resp, &rlen, 1 << 20, 5000), WIRE_OK);
	ck_assert_int_eq(w_get16(resp + 4), 0);
	free(resp);
	const char tok[] = "\0admin\0admin-secret";
	w_put32(body, (int32_t)sizeof(tok) - 1);
	memcpy(body + 4, tok, sizeof(tok) - 1);
	n = w_build_request(buf, sizeof(buf), 36, 1, 2, "t", body, 4 + sizeof(tok) - 1);
	ck_assert_int_eq(w_send_all(fd, buf, (size_t)n, 5000), 0);
	ck_assert_int_eq(w_recv_frame(fd, &resp, &rlen, 1 << 20, 5000), WIRE_OK);
	ck_assert_int_eq(w_get16(resp + 4), 0);
	free(resp);
	/* AlterUserScramCredentials v0 (flexible: header tags, compact body) */
	uint8_t salt[16], salted[64];
	ck_assert_int_eq(RAND_bytes(salt, sizeof(salt)), 1);
	ck_assert_int_eq(PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, sizeof(salt), 4096,
					   EVP_sha512(), 64, salted), 1);
	size_t o = 0, ul = strlen(user);
	body[o++] = 0;             /* request header tagged fields */
	body[o++] = 1;             /* deletions: none */
	body[o++] = 2;             /* upsertions: one */
	body[o++] = (uint8_t)(ul + 1);
	memcpy(body + o, user, ul);
	o += ul;
	body[o++] = 2;             /* SCRAM-SHA-512 */
	w_put32(body + o, 4096);
	o += 4;
	body[o++] = (uint8_t)(sizeof(salt) + 1);
	memcpy(body + o, salt, sizeof(salt));
	o += sizeof(salt);
	body[o++] = 65;
	memcpy(body + o, salted, 64);
	o += 64;
	body[o++] = 0;             /* upsertion tags */
	body[o++] = 0;             /* request tags */
	n = w_build_request(buf, sizeof(buf), 51, 0, 3, "t", body, o);
	ck_assert_int_eq(w_send_all(fd, buf, (size_t)n, 5000), 0);
	ck_assert_int_eq(w_recv_frame(fd, &resp, &rlen, 1 << 20, h_scaled_ms(15000)), WIRE_OK);
	/* corr, tags, throttle, results[1]: user, error */
	ck_assert_int_ge(rlen, 4 + 1 + 4 + 1 + 1 + (int32_t)ul + 2);
	ck_assert_int_eq(resp[9], 2);
	ck_assert_int_eq(w_get16(resp + 11 + ul), 0);
	free(resp);
	close(fd);
}

START_TEST(test_scram_replication)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){COMMON,
					       "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
					       JAAS("plain", "plain.PlainLoginModule", "broker",
						    "broker-secret"),
					       JAAS("scram-sha-512", "scram.ScramLoginModule", "broker",
						    "broker-secret"),
					       NULL},
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret"};
	cc_start(&c, &o, false);
	int ctl = hc_controller(&c);
	ck_assert_int_ge(ctl, 1);
	make_scram_user(&c, ctl, "broker", "broker-secret");
	make_scram_user(&c, ctl, "carol", "carol-secret");
	const char *const kv_scram[] = {"security.protocol", "sasl_plaintext", "sasl.mechanisms",
					"SCRAM-SHA-512", "sasl.username", "carol", "sasl.password",
					"carol-secret", NULL};
	/* every broker learns the users from ZooKeeper's notices */
	create_topic(&c, kv_scram);
	produce(&c, kv_scram, "all", NREC);
	const int all[] = {1, 2, 3};
	expect_replicated(&c, all, 3, NREC);
	expect_isr(&c, 3);
	cc_finish(&c);
}
END_TEST

START_TEST(test_refused_replica)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){COMMON, "sasl.mechanism.inter.broker.protocol=PLAIN",
					       "replica.lag.time.max.ms=60000", NULL},
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret"};
	const char *const good[] = {JAAS("plain", "plain.PlainLoginModule", "broker", "broker-secret"),
				    JAAS("scram-sha-512", "scram.ScramLoginModule", "broker",
					 "broker-secret"),
				    NULL};
	const char *const bad[] = {JAAS("plain", "plain.PlainLoginModule", "broker", "not-the-secret"),
				   JAAS("scram-sha-512", "scram.ScramLoginModule", "broker",
					"broker-secret"),
				   NULL};
	o.broker_overrides[1] = good;
	o.broker_overrides[2] = good;
	o.broker_overrides[3] = bad;
	cc_start(&c, &o, false);
	/* leaders on 1 and 2 only: broker 3 follows every partition */
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, sasl_conf(&c, kv_plain));
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(TOPIC, NPART, -1, NULL, 0);
	const int32_t lay[NPART][3] = {{1, 2, 3}, {2, 1, 3}, {1, 2, 3}};
	for (int p = 0; p < NPART; p++)
		ck_assert_int_eq(rd_kafka_NewTopic_set_replica_assignment(nt, p, (int32_t *)lay[p], 3,
									  NULL, 0), 0);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(30000));
	ck_assert_ptr_nonnull(ev);
	const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
	ck_assert_ptr_nonnull(res);
	size_t nres;
	const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &nres);
	ck_assert_int_eq((int)nres, 1);
	ck_assert_int_eq(rd_kafka_topic_result_error(tr[0]), 0);
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_destroy(rk);
	cc_wait_topic(&c, TOPIC, NPART, h_scaled_ms(30000));
	produce(&c, kv_plain, "1", NREC);
	const int two[] = {1, 2};
	expect_replicated(&c, two, 2, NREC);
	usleep(2000 * 1000); /* several fetch rounds of broker 3 */
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(cc_log_end_offset(&c, 3, TOPIC, p) == 0,
			      "broker 3 replicated partition %d without authenticating", p);
	char *log = h_broker_read_log(c.b[3]);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "Authentication failed: Invalid username or password"),
		      "broker 3's log does not say why it cannot fetch");
	free(log);
	cc_finish(&c);
}
END_TEST

/* KIP-368 between brokers: with connections.max.reauth.ms the leaders
 * would close a follower's connection at the end of each session; the
 * peers re-authenticate before that, so while the followers fetch (and the
 * clients are gone) no broker closes an expired session, and what is
 * produced afterwards still replicates to every replica. */
START_TEST(test_reauthentication)
{
	hc_cluster c;
	hc_options o = {
	    .overrides = (const char *const[]){COMMON, "sasl.mechanism.inter.broker.protocol=PLAIN",
					       "connections.max.reauth.ms=1500",
					       JAAS("plain", "plain.PlainLoginModule", "broker",
						    "broker-secret"),
					       JAAS("scram-sha-512", "scram.ScramLoginModule", "broker",
						    "broker-secret"),
					       NULL},
	    .sasl_plain_user = "admin",
	    .sasl_plain_password = "admin-secret"};
	cc_start(&c, &o, false);
	create_topic(&c, kv_plain);
	produce(&c, kv_plain, "all", NREC / 2);
	size_t before[HC_MAX_BROKERS + 1];
	for (int id = 1; id <= 3; id++) {
		char *log = h_broker_read_log(c.b[id]);
		ck_assert_ptr_nonnull(log);
		before[id] = strlen(log);
		free(log);
	}
	usleep(5000 * 1000); /* three sessions and more of follower fetches */
	for (int id = 1; id <= 3; id++) {
		char *log = h_broker_read_log(c.b[id]);
		ck_assert_ptr_nonnull(log);
		ck_assert_msg(!strstr(log + before[id], "SASL session expired"),
			      "broker %d closed an expired session: a peer did not re-authenticate", id);
		free(log);
	}
	produce(&c, kv_plain, "all", NREC / 2);
	const int all[] = {1, 2, 3};
	expect_replicated(&c, all, 3, NREC);
	expect_isr(&c, 3);
	cc_finish(&c);
}
END_TEST

/* SASL_SSL between brokers: clients on the harness's PLAINTEXT listener,
 * the brokers on an INTERNAL listener mapped to SASL_SSL
 * (inter.broker.listener.name=INTERNAL): the peers' SCRAM-SHA-512
 * exchange runs inside TLS; with a wrong password on broker 3 it gets
 * nothing. */
static void sasl_ssl_cluster(hc_cluster *c, const char *broker3_password)
{
	make_certs();
	static char ks[4500], ts[4500], listeners[4][160], jaas[4][400];
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(ts, sizeof(ts), "ssl.truststore.location=%s", cert("trust.p12"));
	const char *common[] = {
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		"inter.broker.listener.name=INTERNAL",
		"ssl.keystore.type=PKCS12", ks, "ssl.keystore.password=storepass",
		"ssl.truststore.type=PKCS12", ts, "ssl.truststore.password=trustpass",
		"listener.name.internal.sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"zookeeper.session.timeout.ms=20000", "replica.fetch.backoff.ms=200",
		"replica.lag.time.max.ms=60000",
		NULL };
	hc_options o = { .brokers = 3, .overrides = common };
	const char *per[4][3];
	for (int id = 1; id <= 3; id++) {
		snprintf(listeners[id], sizeof(listeners[id]),
			 "listeners=PLAINTEXT://127.0.0.1:${PORT},INTERNAL://127.0.0.1:%d",
			 h_free_port());
		snprintf(jaas[id], sizeof(jaas[id]),
			 "listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common."
			 "security.plain.PlainLoginModule required username=\"broker\" password=\"%s\" "
			 "user_broker=\"broker-secret\";",
			 id == 3 ? broker3_password : "broker-secret");
		per[id][0] = listeners[id];
		per[id][1] = jaas[id];
		per[id][2] = NULL;
		o.broker_overrides[id] = per[id];
	}
	cc_start(c, &o, false);
}

START_TEST(test_sasl_ssl_replication)
{
	hc_cluster c;
	sasl_ssl_cluster(&c, "broker-secret");
	cc_create_topic(&c, TOPIC, NPART, 3, NULL, NULL);
	produce(&c, NULL, "all", NREC);
	const int all[] = {1, 2, 3};
	expect_replicated(&c, all, 3, NREC);
	expect_isr(&c, 3);
	char *log = h_broker_read_log(c.b[1]);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "listener INTERNAL (TLS"), "no TLS on INTERNAL");
	free(log);
	cc_finish(&c);
}
END_TEST

START_TEST(test_sasl_ssl_refused)
{
	hc_cluster c;
	sasl_ssl_cluster(&c, "not-the-secret");
	const int32_t lay[NPART * 3] = {1, 2, 3, 2, 1, 3, 1, 2, 3};
	cc_create_topic(&c, TOPIC, NPART, 3, lay, NULL);
	produce(&c, NULL, "1", NREC);
	const int two[] = {1, 2};
	expect_replicated(&c, two, 2, NREC);
	usleep(2000 * 1000);
	for (int p = 0; p < NPART; p++)
		ck_assert_msg(cc_log_end_offset(&c, 3, TOPIC, p) == 0,
			      "broker 3 replicated partition %d without authenticating", p);
	char *log = h_broker_read_log(c.b[3]);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "Authentication failed: Invalid username or password"),
		      "broker 3's log does not say why it cannot fetch");
	free(log);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_sasl");
	TCase *tc = tcase_create("sasl");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_plain_replication);
	tcase_add_test(tc, test_scram_replication);
	tcase_add_test(tc, test_refused_replica);
	tcase_add_test(tc, test_reauthentication);
	tcase_add_test(tc, test_sasl_ssl_replication);
	tcase_add_test(tc, test_sasl_ssl_refused);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
