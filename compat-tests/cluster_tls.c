/*
 * cluster_tls.c - three brokers in ZooKeeper mode that replicate over TLS:
 * each has the harness's PLAINTEXT listener for clients and an INTERNAL
 * listener mapped to SSL, inter.broker.listener.name=INTERNAL, with
 * ssl.client.auth=required there. Followers fetch from the leader, and the
 * controller's requests go, through INTERNAL (broker/peer.c over TLS with
 * the listener's keystore as client certificate and its truststore), which
 * the brokers' logs show (the TLS path line of listener INTERNAL, and
 * each peer's principal mapped from its certificate by
 * ssl.principal.mapping.rules); the replicas of an acks=all topic end up
 * byte for byte equal. Each broker registers both endpoints in ZooKeeper.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/tls_certs.h"

#define TOPIC "tls-replicated"

static bool log_has(const h_broker *b, const char *needle)
{
	char *log = h_broker_read_log(b);
	bool has = log && strstr(log, needle);
	free(log);
	return has;
}

START_TEST(test_replication_over_tls)
{
	make_certs();
	static char ks[4500], ts[4500], listeners[4][160];
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(ts, sizeof(ts), "ssl.truststore.location=%s", cert("trust.p12"));
	const char *common[] = {
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
		"inter.broker.listener.name=INTERNAL",
		"ssl.keystore.type=PKCS12", ks, "ssl.keystore.password=storepass",
		"ssl.truststore.type=PKCS12", ts, "ssl.truststore.password=trustpass",
		"listener.name.internal.ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^O=([^,]*),CN=.*$/broker-$1/,DEFAULT",
		NULL };
	hc_options o = { .brokers = 3, .overrides = common, .zk = cc_shared_zk() };
	const char *per[4][2];
	for (int id = 1; id <= 3; id++) {
		snprintf(listeners[id], sizeof(listeners[id]),
			 "listeners=PLAINTEXT://127.0.0.1:${PORT},INTERNAL://127.0.0.1:%d",
			 h_free_port());
		per[id][0] = listeners[id];
		per[id][1] = NULL;
		o.broker_overrides[id] = per[id];
	}
	hc_cluster c;
	cc_start(&c, &o, false);
	int32_t assignment[3] = { 1, 2, 3 };
	cc_create_topic(&c, TOPIC, 1, 3, assignment, NULL);

	rd_kafka_conf_t *conf = cc_conf(&c);
	char errstr[256];
	ck_assert_int_eq(rd_kafka_conf_set(conf, "acks", "all", errstr, sizeof(errstr)), 0);
	rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	ck_assert_msg(p != NULL, "%s", errstr);
	char val[1024];
	memset(val, 'x', sizeof(val));
	for (int i = 0; i < 500; i++) {
		rd_kafka_resp_err_t err;
		while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
						RD_KAFKA_V_VALUE(val, sizeof(val)),
						RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
						RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(p, 10);
		ck_assert_int_eq(err, 0);
	}
	ck_assert_int_eq(rd_kafka_flush(p, h_scaled_ms(60000)), 0);
	rd_kafka_destroy(p);
	/* acks=all: every replica holds them; the followers' fetches run on */
	const int ids[3] = { 1, 2, 3 };
	char why[512] = "";
	bool equal = false;
	for (int t = 0; t < 100 && !equal; t++) {
		equal = cc_logs_equal(&c, TOPIC, 0, ids, 3, why, sizeof(why)) &&
			cc_log_end_offset(&c, 2, TOPIC, 0) == 500 &&
			cc_log_end_offset(&c, 3, TOPIC, 0) == 500;
		if (!equal)
			usleep(100 * 1000);
	}
	ck_assert_msg(equal, "the replicas differ: %s", why);
	/* the leader was fetched from over TLS, by peers with certificates */
	ck_assert_msg(log_has(c.b[1], "listener INTERNAL (TLS"), "no TLS on the leader's INTERNAL");
	ck_assert_msg(log_has(c.b[1], "TLS client principal User:broker-first"),
		      "the followers did not present the keystore as a client certificate");
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_tls");
	TCase *tc = tcase_create("tls");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_replication_over_tls);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
