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
 *
 * Dynamic passwords in ZooKeeper (password.encoder.secret): a keystore
 * password in Kafka's encrypted form written to /config/brokers/1 as a
 * Kafka broker writes it (the value made with Java's JCE as Kafka's
 * PasswordEncoder makes it), with a change notice, makes the broker serve
 * that PKCS12 keystore; one set with AlterConfigs is stored there
 * encrypted (not the password; it decodes with the secret); after a
 * restart the broker reads it from ZooKeeper again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/security/password_encoder.h"
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

/* Kafka's stored form of "storepass2" with password.encoder.secret
 * "zk secret" (PBKDF2WithHmacSHA512, AES/CBC/PKCS5Padding, 128 bits, 4096
 * iterations), made with Java's JCE as Kafka's PasswordEncoder does. */
static const char kafka_storepass2[] =
	"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Pa"
	"dding,keyLength:128,salt:aQmsZwcsXvi4Vgwptb/p2P4WdAvnPpok6g3Xvh+OdmlCPFu"
	"9eY8CM/YZmY5M20DZcaZymTmQ/m4VMMXAgoK5EDIZlK23GbUgjffcwceRq46CZkDZ0cvKw7D"
	"DFZQBXCdDHOC8tAzpa7c60F6JRSUSy8c2sDM58yNDAGaLt0xLHZo3pr59BUrWCjK9snWNHQ8"
	"2KZeJUkzUGG6wRauqZzTXc7MsfWazbvs78IvTQmG77mvf5Ph5j8K1GI39EfLTx+Am+6AZUCh"
	"YTld57iE7vCmOX/iblhNtCCdp+OC8j6dBzNmFvnS/JMq2cHEZNRf0+4eULVju8bJ4l1ZjfoH"
	"knlwB7w==,iterations:4096,encryptedPassword:44ZdtAHgPPZqcDT+42D5FA==,pas"
	"swordLength:10,initializationVector:eReaoZLGwOOwLAHfeXbGFQ==";

#define PW_KEY "listener.name.ssl.ssl.keystore.password"
#define LOC_KEY "listener.name.ssl.ssl.keystore.location"

/* The value of key in broker 1's config znode, malloc'd, or NULL. */
static char *znode_value(hc_cluster *c, const char *key)
{
	char *data = NULL;
	int len;
	if (hc_zk_get(c, "/config/brokers/1", &data, &len, NULL) != CTL_ZK_OK || !data)
		return NULL;
	char head[256];
	snprintf(head, sizeof(head), "\"%s\":\"", key);
	char *p = strstr(data, head), *v = NULL;
	if (p) {
		p += strlen(head);
		v = strndup(p, strcspn(p, "\""));
		/* JSON may escape '/' as "\/" */
		char *w = v;
		for (char *r = v; *r; r++)
			if (!(r[0] == '\\' && r[1] == '/'))
				*w++ = *r;
		*w = '\0';
	}
	free(data);
	return v;
}

START_TEST(test_dynamic_password_in_zookeeper)
{
	make_certs();
	static char ks[4500], listeners[160];
	int ssl_port = h_free_port();
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(listeners, sizeof(listeners),
		 "listeners=PLAINTEXT://127.0.0.1:${PORT},SSL://127.0.0.1:%d", ssl_port);
	const char *common[] = { "ssl.keystore.type=PKCS12", ks, "ssl.keystore.password=storepass",
				 "password.encoder.secret=zk secret", listeners, NULL };
	hc_options o = { .brokers = 1, .overrides = common, .zk = cc_shared_zk() };
	hc_cluster c;
	cc_start(&c, &o, false);
	ck_assert_msg(tls_wait_org(ssl_port, "first"), "the static keystore is not served");
	/* as a Kafka broker stores it: the config znode, then the notice */
	ctl_zk *zk = hc_zk_session(&c);
	ck_assert_ptr_nonnull(zk);
	char json[4096];
	snprintf(json, sizeof(json), "{\"version\":1,\"config\":{\"%s\":\"%s\",\"%s\":\"%s\"}}", LOC_KEY,
		 cert("server2.p12"), PW_KEY, kafka_storepass2);
	int rc = ctl_zk_set(zk, "/config/brokers/1", json, (int)strlen(json), CTL_ZK_ANY_VERSION, NULL);
	if (rc == CTL_ZK_NONODE)
		rc = ctl_zk_create(zk, "/config/brokers/1", json, (int)strlen(json), CTL_ZK_PERSISTENT,
				   NULL, 0, NULL);
	ck_assert_int_eq(rc, CTL_ZK_OK);
	const char notice[] = "{\"version\":2,\"entity_path\":\"brokers/1\"}";
	char created[256];
	ck_assert_int_eq(ctl_zk_create(zk, "/config/changes/config_change_", notice,
				       (int)strlen(notice), CTL_ZK_PERSISTENT_SEQUENTIAL, created,
				       sizeof(created), NULL),
			 CTL_ZK_OK);
	ck_assert_msg(tls_wait_org(ssl_port, "second"),
		      "the keystore with Kafka's encrypted password is not served");
	/* set through AlterConfigs: stored encrypted in /config/brokers/1 */
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, cc_conf(&c), NULL, 0);
	ck_assert_ptr_nonnull(rk);
	rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, "1");
	ck_assert_int_eq(rd_kafka_ConfigResource_set_config(r, LOC_KEY, cert("server2.p12")), 0);
	ck_assert_int_eq(rd_kafka_ConfigResource_set_config(r, PW_KEY, "storepass2"), 0);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConfigs(rk, &r, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(10000));
	ck_assert_ptr_nonnull(ev);
	size_t n;
	const rd_kafka_ConfigResource_t **rs = rd_kafka_AlterConfigs_result_resources(
		rd_kafka_event_AlterConfigs_result(ev), &n);
	ck_assert_int_eq((int)n, 1);
	ck_assert_msg(rd_kafka_ConfigResource_error(rs[0]) == 0, "AlterConfigs: %s",
		      rd_kafka_ConfigResource_error_string(rs[0]));
	rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	char *v = NULL;
	for (int t = 0; t < 50; t++) {
		free(v);
		v = znode_value(&c, PW_KEY);
		if (v && strcmp(v, kafka_storepass2) != 0)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(v && strcmp(v, kafka_storepass2) != 0, "AlterConfigs did not store it");
	ck_assert_msg(!strstr(v, "storepass2") && strstr(v, "encryptedPassword:"),
		      "not encrypted in ZooKeeper: %s", v);
	char err[256];
	char *pw = brk_password_decode("zk secret", v, err, sizeof(err));
	ck_assert_msg(pw && strcmp(pw, "storepass2") == 0, "the znode value decodes to %s (%s)",
		      pw ? pw : "nothing", err);
	brk_password_free(pw);
	free(v);
	/* after a restart it is read from ZooKeeper */
	ck_assert_int_eq(h_broker_stop(c.b[1], h_scaled_ms(20000)), 0);
	ck_assert_msg(h_broker_restart(c.b[1]) == 0, "restart");
	ck_assert_msg(tls_wait_org(ssl_port, "second"), "after a restart the keystore is not served");
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_tls");
	TCase *tc = tcase_create("tls");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_replication_over_tls);
	tcase_add_test(tc, test_dynamic_password_in_zookeeper);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
