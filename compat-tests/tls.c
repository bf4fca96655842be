/*
 * tls.c - SSL listeners (broker/security/tls.h) against librdkafka and raw
 * sockets, with a CA, server and client certificates the test makes with
 * the openssl command in its temp dir:
 *  - produce and consume 1,000 records of 1 KiB over SSL (segment bytes go
 *    out through the TLS path: the broker logs which one) with a PEM
 *    keystore whose key is encrypted (ssl.key.password), and a consumer
 *    group that commits over SSL;
 *  - Metadata and FindCoordinator answer each client with the endpoints of
 *    the listener it came in on (the SSL listener is the second one: a
 *    client told the first would fail);
 *  - a PKCS12 keystore; KIP-651's inline PEM keystore, also written in
 *    server.properties with continuation lines as Kafka's documentation
 *    shows it (spaces inside the base64), with an inline truststore;
 *  - bad keystores stop start-up with a message naming the key; so do
 *    bad password.encoder.* settings;
 *  - ssl.client.auth=required: a client without a certificate, and one
 *    signed by an unknown CA, are refused; one with a good certificate gets
 *    the principal ssl.principal.mapping.rules makes of its subject (the
 *    broker logs it);
 *  - plaintext Kafka requests and TLS garbage sent to the SSL port close
 *    the connection, the broker serves on; so does a bad record sent right
 *    after valid requests (in the same read), at once, not at the idle
 *    deadline;
 *  - a handshake that stalls, or trickles a byte at a time, is closed after
 *    connections.max.idle.ms counted from the accept;
 *  - SASL_SSL: SASL PLAIN over TLS (security/sasl.h on this transport), a
 *    wrong password refused;
 *  - the mapped principal is the one ACLs name: with the authorizer on, a
 *    client certificate mapped to User:alice@eng may write a topic only
 *    once an ACL allows that principal (TOPIC_AUTHORIZATION_FAILED before);
 *  - the keystore replaced without a restart: AlterConfigs of
 *    listener.name.ssl.ssl.keystore.location on the broker resource, after
 *    which new connections get the new certificate; a keystore that cannot
 *    be read is refused (INVALID_REQUEST, Kafka's message) and the one in
 *    use stays; a dynamic password (listener.name.ssl.ssl.key.password)
 *    is refused without password.encoder.secret (Kafka's message), and the
 *    metadata file holding the dynamic configs has mode 0600;
 *    DescribeConfigs of the broker lists the ssl.* and listener.name.* keys
 *    set, ssl.key.password sensitive with a null value;
 *  - with password.encoder.secret a dynamic password is accepted (Kafka's
 *    PasswordEncoder): a PKCS12 keystore swapped (AlterConfigs and
 *    IncrementalAlterConfigs) for one with another password, served to a
 *    TLS client without a restart; a wrong password for it refused; the
 *    metadata file holds Kafka's encrypted form, never the password
 *    (decoded with the secret it gives it back); DescribeConfigs says
 *    sensitive, null; a password at the cluster default, a dynamic
 *    password.encoder.secret and a dynamic JAAS config refused; after a restart the keystore is
 *    loaded again; with a wrong secret the stored password is ignored with
 *    Kafka's log line (the static keystore is served);
 *    password.encoder.old.secret decodes it and the broker stores it again
 *    with the new secret, read after a restart without the old one; no
 *    password is ever logged;
 *  - refused in the request, as Kafka's DynamicBrokerConfig refuses them,
 *    never stored: a keystore location that takes the security keys over
 *    their 64 KiB, a NUL byte in a name or value, unprefixed ssl.keystore.*
 *    on the broker id, listener.name.* and ssl.client.auth at the cluster
 *    default (a cluster-level listener key is taken there);
 *    password.encoder.secret is described read-only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "broker/security/password_encoder.h"
#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/tls_certs.h"
#include "compat-tests/wire.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* A broker with the harness's PLAINTEXT listener (first: the one a client
 * of no listener of its own would be told of) and an SSL one, plus
 * overrides. *ssl_port is the SSL port. */
static h_broker *new_tls_broker(int *ssl_port, const char *const *overrides)
{
	h_broker *b = h_broker_new(overrides);
	ck_assert_ptr_nonnull(b);
	*ssl_port = h_free_port();
	char kv[256];
	snprintf(kv, sizeof(kv), "listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d", b->port,
		 *ssl_port);
	ck_assert_int_eq(h_broker_add_override(b, kv), 0);
	return b;
}

static h_broker *start_tls_broker(int *ssl_port, const char *const *overrides)
{
	h_broker *b = new_tls_broker(ssl_port, overrides);
	ck_assert_msg(h_broker_start(b) == 0, "broker did not start (log above)");
	return b;
}

/* A copy of b whose bootstrap is the SSL port (for c_conf). */
static h_broker ssl_view(const h_broker *b, int ssl_port)
{
	h_broker v = *b;
	snprintf(v.bootstrap, sizeof(v.bootstrap), "127.0.0.1:%d", ssl_port);
	return v;
}

static bool log_has(const h_broker *b, const char *needle)
{
	char *log = h_broker_read_log(b);
	bool has = log && strstr(log, needle);
	free(log);
	return has;
}

/* Metadata over the SSL port with client settings kv: the error. */
static rd_kafka_resp_err_t try_metadata(const h_broker *b, int ssl_port, const char *const *kv)
{
	h_broker v = ssl_view(b, ssl_port);
	rd_kafka_conf_t *conf = c_conf(&v);
	c_set_all(conf, kv);
	c_set(conf, "log_level", "2"); /* the refusals the tests expect are errors */
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, h_scaled_ms(5000));
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
	return err;
}

#define NREC 1000
#define RECSZ 1024

static int check_record(const rd_kafka_message_t *m, void *opaque)
{
	long *n = opaque;
	ck_assert_int_eq((int)m->len, RECSZ);
	const unsigned char *p = m->payload;
	for (int i = 0; i < RECSZ; i++)
		ck_assert_msg(p[i] == (unsigned char)(m->offset * 7 + i),
			      "offset %lld byte %d differs", (long long)m->offset, i);
	ck_assert_int_eq((int)m->offset, (int)*n);
	(*n)++;
	return 0;
}

/* Produce NREC records and read them back over the SSL port. */
static void round_trip(const h_broker *b, int ssl_port)
{
	h_broker v = ssl_view(b, ssl_port);
	const char *base[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	rd_kafka_t *p = c_producer(&v, base);
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, "tls-topic", 1, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics over SSL: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, "tls-topic", 1, h_scaled_ms(10000));
	static c_delivery d[NREC];
	unsigned char val[RECSZ];
	for (int i = 0; i < NREC; i++) {
		for (int k = 0; k < RECSZ; k++)
			val[k] = (unsigned char)(i * 7 + k);
		c_msg m = { .topic = "tls-topic", .partition = 0, .value = val, .value_len = RECSZ };
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(30000));
	for (int i = 0; i < NREC; i++)
		ck_assert_msg(d[i].done && d[i].err == 0, "record %d: %s", i, rd_kafka_err2name(d[i].err));
	rd_kafka_destroy(p);
	rd_kafka_t *c = c_consumer(&v, base);
	long n = 0;
	long got = c_consume(c, "tls-topic", 0, RD_KAFKA_OFFSET_BEGINNING, NREC, h_scaled_ms(30000),
			     check_record, &n);
	ck_assert_int_eq(got, NREC);
	rd_kafka_destroy(c);
}

/* The port Metadata gives for broker 0 to a client of bootstrap v. */
static int metadata_port(const h_broker *v, const char *const *kv)
{
	rd_kafka_conf_t *conf = c_conf(v);
	c_set_all(conf, kv);
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, h_scaled_ms(5000));
	ck_assert_msg(err == 0, "Metadata: %s", rd_kafka_err2name(err));
	ck_assert_int_eq(md->broker_cnt, 1);
	int port = md->brokers[0].port;
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
	return port;
}

/* A group consumer over SSL reads the topic and commits (FindCoordinator
 * must name the SSL endpoint for the commit to reach the coordinator). */
static void group_commit(const h_broker *b, int ssl_port)
{
	h_broker v = ssl_view(b, ssl_port);
	rd_kafka_conf_t *conf = c_conf(&v);
	c_set_all(conf, (const char *const[]){ "security.protocol", "ssl", "ssl.ca.location",
					       cert("ca.pem"), "group.id", "tls-group",
					       "auto.offset.reset", "earliest",
					       "enable.auto.commit", "false", NULL });
	rd_kafka_t *rk = c_new(RD_KAFKA_CONSUMER, conf);
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, "tls-topic", RD_KAFKA_PARTITION_UA);
	ck_assert_int_eq(rd_kafka_subscribe(rk, l), 0);
	rd_kafka_topic_partition_list_destroy(l);
	int got = 0;
	long long t0 = h_now_ms();
	while (got < 10 && h_now_ms() - t0 < h_scaled_ms(30000)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		if (!m)
			continue;
		if (!m->err)
			got++;
		rd_kafka_message_destroy(m);
	}
	ck_assert_msg(got >= 10, "the group consumer read %d records over SSL", got);
	rd_kafka_resp_err_t err = rd_kafka_commit(rk, NULL, 0);
	ck_assert_msg(err == 0, "commit over SSL: %s", rd_kafka_err2name(err));
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
}

START_TEST(test_pem_keystore_round_trip)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("keystore.pem"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PEM", loc, "ssl.key.password=keypass", NULL });
	round_trip(b, port);
	group_commit(b, port);
	/* each client is told of its own listener's endpoint */
	h_broker v = ssl_view(b, port);
	ck_assert_int_eq(metadata_port(&v, (const char *const[]){ "security.protocol", "ssl",
								 "ssl.ca.location",
								 cert("ca.pem"), NULL }),
			 port);
	ck_assert_int_eq(metadata_port(b, NULL), b->port);
	ck_assert_msg(log_has(b, "listener SSL (TLSv1.3"), "no line on the fetch path");
	ck_assert_msg(log_has(b, "kernel TLS"), "the fetch path line does not name kernel TLS");
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_pkcs12_keystore)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("server.p12"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PKCS12", loc, "ssl.keystore.password=storepass", NULL });
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	rd_kafka_resp_err_t err = try_metadata(b, port, kv);
	ck_assert_msg(err == 0, "Metadata over SSL (PKCS12 keystore): %s", rd_kafka_err2name(err));
	/* a client that does not trust our CA is refused by its own check */
	const char *rogue[] = { "security.protocol", "ssl", "ssl.ca.location", cert("rogue-ca.pem"),
				NULL };
	ck_assert_int_ne(try_metadata(b, port, rogue), 0);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_inline_pem_keystore)
{
	make_certs();
	int port;
	char *key = slurp(cert("server.key")), *chain = slurp(cert("server.pem"));
	char *kkv = malloc(strlen(key) + 64), *ckv = malloc(strlen(chain) + 64);
	sprintf(kkv, "ssl.keystore.key=%s", key);
	sprintf(ckv, "ssl.keystore.certificate.chain=%s", chain);
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PEM", kkv, ckv, NULL });
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	rd_kafka_resp_err_t err = try_metadata(b, port, kv);
	ck_assert_msg(err == 0, "Metadata over SSL (inline PEM keystore): %s", rd_kafka_err2name(err));
	c_stop_broker(b);
	free(key), free(chain), free(kkv), free(ckv);
}
END_TEST

/* Append "key=" + the PEM file name to f as Kafka's documentation writes
 * it: each line of the file after the first on a continuation line,
 * indented. */
static void write_continued(FILE *f, const char *key, const char *name)
{
	char *pem = slurp(cert(name));
	fprintf(f, "%s=", key);
	char *save = NULL;
	bool first = true;
	for (char *line = strtok_r(pem, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		fprintf(f, "%s%s", first ? "" : " \\\n    ", line);
		first = false;
	}
	fprintf(f, "\n");
	free(pem);
}

/* KIP-651's inline PEM keystore and truststore in server.properties with
 * continuation lines, as Kafka's documentation shows them: the values read
 * have spaces inside the base64, which Kafka's PEM reader allows. The
 * truststore is used (ssl.client.auth=required: a client certificate from
 * the CA it holds is accepted, one without a certificate refused). */
START_TEST(test_inline_pem_continued)
{
	make_certs();
	int port;
	h_broker *b = new_tls_broker(&port, (const char *const[]){ "ssl.client.auth=required", NULL });
	FILE *f = fopen(b->props, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "ssl.keystore.type=PEM\nssl.truststore.type=PEM\n");
	write_continued(f, "ssl.keystore.key", "server.key");
	write_continued(f, "ssl.keystore.certificate.chain", "server.pem");
	write_continued(f, "ssl.truststore.certificates", "ca.pem");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(h_broker_start(b) == 0, "broker with continued inline PEM did not start");
	const char *alice[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"),
				"ssl.certificate.location", cert("alice.pem"),
				"ssl.key.location", cert("alice.key"), NULL };
	rd_kafka_resp_err_t err = try_metadata(b, port, alice);
	ck_assert_msg(err == 0, "Metadata over SSL (continued inline PEM): %s", rd_kafka_err2name(err));
	const char *anon[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_ne(try_metadata(b, port, anon), 0);
	c_stop_broker(b);
}
END_TEST

/* The broker must exit 1 at start with a message holding want. */
static void expect_start_failure(const char *const *overrides, const char *want)
{
	int port;
	h_broker *b = new_tls_broker(&port, overrides);
	ck_assert_int_eq(h_broker_launch(b), 0);
	int st = h_broker_wait_exit(b, h_scaled_ms(10000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "broker with a bad keystore did not exit 1 (status %d)", st);
	char *log = h_broker_read_log(b);
	ck_assert_msg(log && strstr(log, want), "no \"%s\" in the log: %s", want, log ? log : "");
	free(log);
	h_broker_free(b);
}

START_TEST(test_bad_keystores)
{
	make_certs();
	char p12[4500], pem[4500], trust[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(pem, sizeof(pem), "ssl.keystore.location=%s", cert("keystore.pem"));
	snprintf(trust, sizeof(trust), "ssl.truststore.location=%s", cert("trust.p12"));
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=wrong", NULL },
			     "ssl.keystore.password");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PEM", pem,
						    "ssl.key.password=wrong", NULL },
			     "ssl.key.password");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PEM",
						    "ssl.keystore.location=/nonexistent/ks.pem", NULL },
			     "/nonexistent/ks.pem");
	expect_start_failure((const char *const[]){ NULL }, "no keystore");
	/* password.encoder.* settings are checked at start-up */
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "password.encoder.secret=s",
						    "password.encoder.iterations=100", NULL },
			     "password.encoder.iterations=100: must be at least 1024");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "password.encoder.secret=s",
						    "password.encoder.cipher.algorithm=DES", NULL },
			     "password.encoder.cipher.algorithm=DES: not supported");
	expect_start_failure((const char *const[]){ p12, "ssl.keystore.password=storepass", NULL },
			     "ssl.keystore.type JKS");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "ssl.truststore.type=PKCS12", trust,
						    "ssl.truststore.password=wrong", NULL },
			     "ssl.truststore.password");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "ssl.enabled.protocols=SSLv3", NULL },
			     "ssl.enabled.protocols");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "ssl.cipher.suites=TLS_NO_SUCH_SUITE", NULL },
			     "TLS_NO_SUCH_SUITE");
	expect_start_failure((const char *const[]){ "ssl.keystore.type=PKCS12", p12,
						    "ssl.keystore.password=storepass",
						    "ssl.principal.mapping.rules=RULE:broken", NULL },
			     "ssl.principal.mapping.rules");
}
END_TEST

START_TEST(test_client_auth_and_principal)
{
	make_certs();
	int port;
	char p12[4500], trust[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(trust, sizeof(trust), "ssl.truststore.location=%s", cert("trust.p12"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PKCS12", p12, "ssl.keystore.password=storepass",
		"ssl.truststore.type=PKCS12", trust, "ssl.truststore.password=trustpass",
		"listener.name.ssl.ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=([^,]*),.*$/$1@$2/L,DEFAULT",
		"ssl.enabled.protocols=TLSv1.2",
		"ssl.cipher.suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", NULL });
	/* no client certificate: refused by the broker */
	const char *none[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_ne(try_metadata(b, port, none), 0);
	ck_assert_msg(log_has(b, "certificate"), "the broker did not log the refusal");
	ck_assert_msg(!log_has(b, "TLS client principal"), "a principal without a certificate");
	/* a certificate from a CA the truststore does not hold: refused */
	const char *mallory[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"),
				  "ssl.certificate.location", cert("mallory.pem"),
				  "ssl.key.location", cert("mallory.key"), NULL };
	ck_assert_int_ne(try_metadata(b, port, mallory), 0);
	ck_assert_msg(!log_has(b, "mallory"), "mallory got a principal");
	/* Alice: accepted, principal from the mapping rule (lower case) */
	const char *alice[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"),
				"ssl.certificate.location", cert("alice.pem"),
				"ssl.key.location", cert("alice.key"), NULL };
	rd_kafka_resp_err_t err = try_metadata(b, port, alice);
	ck_assert_msg(err == 0, "Metadata with a client certificate: %s", rd_kafka_err2name(err));
	ck_assert_msg(log_has(b, "TLS client principal User:alice@eng"),
		      "no mapped principal in the log");
	ck_assert_msg(log_has(b, "(TLSv1.2, ECDHE-ECDSA-AES128-GCM-SHA256)"),
		      "ssl.enabled.protocols / ssl.cipher.suites not applied");
	c_stop_broker(b);
}
END_TEST

static int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Milliseconds until the broker closes fd (reading and dropping what it
 * sends), or -1 when it is still open after limit_ms. */
static long long wait_closed(int fd, int limit_ms)
{
	long long t0 = h_now_ms();
	for (;;) {
		long long left = t0 + limit_ms - h_now_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		char buf[4096];
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return h_now_ms() - t0;
	}
}

static const char *ssl_pkcs12_overrides[] = { "ssl.keystore.type=PKCS12", NULL,
					       "ssl.keystore.password=storepass",
					       "connections.max.idle.ms=1500", NULL };

START_TEST(test_plaintext_and_garbage)
{
	make_certs();
	char p12[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	ssl_pkcs12_overrides[1] = p12;
	int port;
	h_broker *b = start_tls_broker(&port, ssl_pkcs12_overrides);
	/* an ApiVersions v0 request in plaintext */
	static const unsigned char api_versions[] = { 0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0 };
	int fd = connect_to(port);
	ck_assert_int_eq(write(fd, api_versions, sizeof(api_versions)), (int)sizeof(api_versions));
	long long ms = wait_closed(fd, h_scaled_ms(5000));
	ck_assert_msg(ms >= 0 && ms < 1000, "plaintext request: closed after %lld ms", ms);
	close(fd);
	/* a TLS handshake record holding garbage */
	unsigned char rec[5 + 300] = { 0x16, 0x03, 0x01, 0x01, 0x2c };
	srand(16);
	for (int i = 5; i < (int)sizeof(rec); i++)
		rec[i] = (unsigned char)rand();
	fd = connect_to(port);
	ck_assert_int_eq(write(fd, rec, sizeof(rec)), (int)sizeof(rec));
	ms = wait_closed(fd, h_scaled_ms(5000));
	ck_assert_msg(ms >= 0 && ms < 1000, "TLS garbage: closed after %lld ms", ms);
	close(fd);
	/* random bytes, 50 connections: each closed, at the latest by the
	 * idle deadline */
	for (int c = 0; c < 50; c++) {
		unsigned char junk[512];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (unsigned char)rand();
		fd = connect_to(port);
		ck_assert_int_eq(write(fd, junk, (size_t)(1 + rand() % 512)) > 0, 1);
		ms = wait_closed(fd, h_scaled_ms(6000));
		ck_assert_msg(ms >= 0, "connection %d with random bytes stays open", c);
		close(fd);
	}
	ck_assert_msg(h_broker_alive(b), "the broker died");
	c_assert_broker_serving(b);
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_eq(try_metadata(b, port, kv), 0);
	c_stop_broker(b);
}
END_TEST

/* A TLS client on fd (certificate checks off: the test's own). */
static SSL *tls_client(SSL_CTX **ctx, int fd)
{
	*ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_ptr_nonnull(*ctx);
	SSL *ssl = SSL_new(*ctx);
	ck_assert_ptr_nonnull(ssl);
	SSL_set_fd(ssl, fd);
	ck_assert_msg(SSL_connect(ssl) == 1, "TLS handshake with the broker failed");
	return ssl;
}

/* Valid bytes (the start of a request, or whole requests), then in the
 * same write a record that does not decrypt: the broker's read hands over
 * the valid bytes and then fails; the session is broken and the connection
 * closed at once, not at connections.max.idle.ms (the default here, ten
 * minutes). */
START_TEST(test_garbage_after_requests)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("keystore.pem"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PEM", loc, "ssl.key.password=keypass", NULL });
	static const unsigned char api_versions[] = { 0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0 };
	srand(17);
	for (int round = 0; round < 3; round++) {
		int fd = connect_to(port);
		SSL_CTX *ctx;
		SSL *ssl = tls_client(&ctx, fd);
		/* one request answered first: the session works */
		ck_assert_int_eq(SSL_write(ssl, api_versions, sizeof(api_versions)),
				 (int)sizeof(api_versions));
		unsigned char resp[4];
		ck_assert_int_eq(SSL_read(ssl, resp, 4), 4);
		/* then the start of a request encrypted into memory (rounds
		 * 0 and 1: nothing for the broker to answer, so no failed
		 * write closes the connection for it; round 2: whole requests),
		 * followed by an application-data record of random bytes
		 * (rounds 0 and 2) or a record whose header is nonsense (round
		 * 1), in one write */
		BIO *mem = BIO_new(BIO_s_mem());
		ck_assert_ptr_nonnull(mem);
		SSL_set0_wbio(ssl, mem);
		if (round < 2)
			ck_assert_int_eq(SSL_write(ssl, api_versions, 6), 6);
		else
			for (int i = 0; i < 3; i++)
				ck_assert_int_eq(SSL_write(ssl, api_versions, sizeof(api_versions)),
						 (int)sizeof(api_versions));
		unsigned char buf[4096];
		int n = BIO_read(mem, buf, (int)sizeof(buf) - 300);
		ck_assert_int_gt(n, 0);
		unsigned char *g = buf + n;
		if (round != 1) {
			g[0] = 0x17, g[1] = 0x03, g[2] = 0x03, g[3] = 0x01, g[4] = 0x00;
		} else {
			g[0] = 0x42, g[1] = 0x42, g[2] = 0x42, g[3] = 0x01, g[4] = 0x00;
		}
		for (int i = 5; i < 5 + 256; i++)
			g[i] = (unsigned char)rand();
		n += 5 + 256;
		ck_assert_int_eq(write(fd, buf, (size_t)n), n);
		long long ms = wait_closed(fd, h_scaled_ms(5000));
		ck_assert_msg(ms >= 0 && ms < 1000, "garbage after requests (round %d): closed after %lld ms",
			      round, ms);
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
	}
	ck_assert_msg(h_broker_alive(b), "the broker died");
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_eq(try_metadata(b, port, kv), 0);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_stalled_handshake)
{
	make_certs();
	char p12[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	ssl_pkcs12_overrides[1] = p12;
	int port;
	h_broker *b = start_tls_broker(&port, ssl_pkcs12_overrides);
	/* nothing sent at all */
	int fd = connect_to(port);
	long long ms = wait_closed(fd, h_scaled_ms(8000));
	ck_assert_msg(ms >= 1000 && ms < h_scaled_ms(6000),
		      "silent handshake closed after %lld ms (connections.max.idle.ms 1500)", ms);
	close(fd);
	/* a ClientHello header, then one byte every 200 ms: the trickle does
	 * not extend the deadline */
	fd = connect_to(port);
	unsigned char hdr[5] = { 0x16, 0x03, 0x01, 0x02, 0x00 };
	ck_assert_int_eq(write(fd, hdr, 5), 5);
	long long t0 = h_now_ms();
	ms = -1;
	while (h_now_ms() - t0 < h_scaled_ms(8000)) {
		unsigned char one = 1;
		if (write(fd, &one, 1) != 1)
			break;
		long long w = wait_closed(fd, 200);
		if (w >= 0)
			break;
	}
	ms = h_now_ms() - t0;
	ck_assert_msg(ms >= 1000 && ms < h_scaled_ms(6000),
		      "trickled handshake closed after %lld ms (connections.max.idle.ms 1500)", ms);
	close(fd);
	ck_assert_msg(log_has(b, "connections.max.idle.ms"), "no idle close logged");
	c_stop_broker(b);
}
END_TEST

START_TEST(test_sasl_ssl)
{
	make_certs();
	h_broker *b = h_broker_new((const char *const[]){
		"ssl.keystore.type=PKCS12", "ssl.keystore.password=storepass",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config="
		"org.apache.kafka.common.security.plain.PlainLoginModule required "
		"username=\"admin\" password=\"admin-secret\" user_alice=\"alice-secret\";",
		NULL });
	ck_assert_ptr_nonnull(b);
	char kv[256], p12[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	ck_assert_int_eq(h_broker_add_override(b, p12), 0);
	int port = h_free_port();
	snprintf(kv, sizeof(kv), "listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", b->port,
		 port);
	ck_assert_int_eq(h_broker_add_override(b, kv), 0);
	ck_assert_msg(h_broker_start(b) == 0, "broker did not start (log above)");
	const char *good[] = { "security.protocol", "sasl_ssl", "ssl.ca.location", cert("ca.pem"),
			       "sasl.mechanisms", "PLAIN", "sasl.username", "alice",
			       "sasl.password", "alice-secret", NULL };
	rd_kafka_resp_err_t err = try_metadata(b, port, good);
	ck_assert_msg(err == 0, "Metadata over SASL_SSL: %s", rd_kafka_err2name(err));
	h_broker v = ssl_view(b, port);
	ck_assert_int_eq(metadata_port(&v, good), port);
	const char *bad[] = { "security.protocol", "sasl_ssl", "ssl.ca.location", cert("ca.pem"),
			      "sasl.mechanisms", "PLAIN", "sasl.username", "alice",
			      "sasl.password", "wrong", NULL };
	ck_assert_int_ne(try_metadata(b, port, bad), 0);
	/* plain SASL without TLS on the SASL_SSL port: closed */
	const char *notls[] = { "security.protocol", "sasl_plaintext", "sasl.mechanisms", "PLAIN",
				"sasl.username", "alice", "sasl.password", "alice-secret", NULL };
	ck_assert_int_ne(try_metadata(b, port, notls), 0);
	c_stop_broker(b);
}
END_TEST

/* Produce one record to topic with a new producer for v and kv: the
 * error (refused at once, from the topic's metadata, or in the delivery). */
static rd_kafka_resp_err_t produce_one(const h_broker *v, const char *const *kv, const char *topic)
{
	rd_kafka_t *p = c_producer(v, kv);
	c_delivery d = { 0 };
	rd_kafka_resp_err_t err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
						    RD_KAFKA_V_VALUE("v", 1),
						    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
						    RD_KAFKA_V_OPAQUE(&d), RD_KAFKA_V_END);
	if (!err) {
		rd_kafka_flush(p, h_scaled_ms(20000));
		err = d.done ? d.err : RD_KAFKA_RESP_ERR__TIMED_OUT;
	}
	rd_kafka_destroy(p);
	return err;
}

START_TEST(test_principal_in_acls)
{
	make_certs();
	int port;
	char p12[4500], trust[4500];
	snprintf(p12, sizeof(p12), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(trust, sizeof(trust), "ssl.truststore.location=%s", cert("trust.p12"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PKCS12", p12, "ssl.keystore.password=storepass",
		"ssl.truststore.type=PKCS12", trust, "ssl.truststore.password=trustpass",
		"ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=([^,]*),.*$/$1@$2/L,DEFAULT",
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"super.users=User:ANONYMOUS", /* the PLAINTEXT listener administers */
		NULL });
	rd_kafka_t *admin = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(admin, "acl-tls", 1, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(admin, "acl-tls", 1, h_scaled_ms(10000));
	h_broker v = ssl_view(b, port);
	const char *alice[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"),
				"ssl.certificate.location", cert("alice.pem"),
				"ssl.key.location", cert("alice.key"),
				"message.timeout.ms", "5000", "log_level", "2", NULL };
	rd_kafka_resp_err_t err = produce_one(&v, alice, "acl-tls");
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		      "alice without an ACL: %s", rd_kafka_err2name(err));
	/* allow the mapped principal to write (DESCRIBE comes with WRITE) */
	rd_kafka_AclBinding_t *acl = rd_kafka_AclBinding_new(
		RD_KAFKA_RESOURCE_TOPIC, "acl-tls", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice@eng",
		"*", RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, errstr,
		sizeof(errstr));
	ck_assert_msg(acl != NULL, "%s", errstr);
	rd_kafka_queue_t *q = rd_kafka_queue_new(admin);
	rd_kafka_CreateAcls(admin, &acl, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(10000));
	ck_assert_ptr_nonnull(ev);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "CreateAcls: %s", rd_kafka_event_error_string(ev));
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AclBinding_destroy(acl);
	bool ok = false;
	for (int t = 0; t < 20 && !ok; t++) {
		err = produce_one(&v, alice, "acl-tls");
		ok = err == 0;
		if (!ok)
			usleep(200 * 1000);
	}
	ck_assert_msg(ok, "alice with an ACL for User:alice@eng: %s", rd_kafka_err2name(err));
	rd_kafka_destroy(admin);
	c_stop_broker(b);
}
END_TEST

/* AlterConfigs of BROKER resource `resource` with the name, value pairs
 * of kv (NULL-terminated): its error, the message into msg (may be
 * NULL). */
static rd_kafka_resp_err_t alter_broker_kv(const h_broker *b, const char *resource,
					   const char *const *kv, char *msg, size_t msgsize)
{
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, c_conf(b));
	rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, resource);
	for (int i = 0; kv[i]; i += 2)
		ck_assert_int_eq(rd_kafka_ConfigResource_set_config(r, kv[i], kv[i + 1]), 0);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConfigs(rk, &r, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(10000));
	ck_assert_ptr_nonnull(ev);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "AlterConfigs: %s",
		      rd_kafka_event_error_string(ev));
	const rd_kafka_AlterConfigs_result_t *res = rd_kafka_event_AlterConfigs_result(ev);
	size_t n;
	const rd_kafka_ConfigResource_t **rs = rd_kafka_AlterConfigs_result_resources(res, &n);
	ck_assert_int_eq((int)n, 1);
	rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(rs[0]);
	if (msg)
		snprintf(msg, msgsize, "%s", rd_kafka_ConfigResource_error_string(rs[0])
						     ? rd_kafka_ConfigResource_error_string(rs[0]) : "");
	rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return err;
}

/* AlterConfigs of the broker resource "0" with one config: its error, the
 * message into msg (may be NULL). */
static rd_kafka_resp_err_t alter_broker_err(const h_broker *b, const char *name, const char *value,
					    char *msg, size_t msgsize)
{
	return alter_broker_kv(b, "0", (const char *const[]){ name, value, NULL }, msg, msgsize);
}

static void alter_broker(const h_broker *b, const char *name, const char *value)
{
	char msg[512];
	rd_kafka_resp_err_t err = alter_broker_err(b, name, value, msg, sizeof(msg));
	ck_assert_msg(err == 0, "AlterConfigs %s: %s %s", name, rd_kafka_err2name(err), msg);
}

/* DescribeConfigs of broker "0": whether name is listed; its value (NULL
 * when null), source and sensitive flag into the pointers. */
static bool describe_broker_key(const h_broker *b, const char *name, char *value, size_t vsize,
				bool *is_null, rd_kafka_ConfigSource_t *source, bool *sensitive)
{
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, c_conf(b));
	rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, "0");
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConfigs(rk, &r, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(10000));
	ck_assert_ptr_nonnull(ev);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "DescribeConfigs: %s",
		      rd_kafka_event_error_string(ev));
	const rd_kafka_DescribeConfigs_result_t *res = rd_kafka_event_DescribeConfigs_result(ev);
	size_t n;
	const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(res, &n);
	ck_assert_int_eq((int)n, 1);
	size_t cnt;
	const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[0], &cnt);
	bool found = false;
	for (size_t i = 0; i < cnt && !found; i++) {
		if (strcmp(rd_kafka_ConfigEntry_name(es[i]), name) != 0)
			continue;
		found = true;
		const char *v = rd_kafka_ConfigEntry_value(es[i]);
		*is_null = v == NULL;
		snprintf(value, vsize, "%s", v ? v : "");
		*source = rd_kafka_ConfigEntry_source(es[i]);
		*sensitive = rd_kafka_ConfigEntry_is_sensitive(es[i]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return found;
}

START_TEST(test_dynamic_keystore)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("keystore.pem"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PEM", loc, "ssl.key.password=keypass", NULL });
	ck_assert_msg(tls_wait_org(port, "first"), "the first certificate is not served");
	alter_broker(b, "listener.name.ssl.ssl.keystore.location", cert("keystore2.pem"));
	ck_assert_msg(tls_wait_org(port, "second"), "the replaced certificate is not served");
	ck_assert_msg(log_has(b, "listener SSL: a new TLS context"), "no log line of the change");
	/* clients still connect (the new certificate is signed by the same CA) */
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_eq(try_metadata(b, port, kv), 0);
	/* a keystore that cannot be read is refused as Kafka refuses it; the
	 * one in use stays */
	char msg[512];
	rd_kafka_resp_err_t err = alter_broker_err(b, "listener.name.ssl.ssl.keystore.location",
						   "/nonexistent/ks.pem", msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Validation of dynamic config update of SSLFactory failed") &&
			      strstr(msg, "/nonexistent/ks.pem"),
		      "a bad keystore: %s %s", rd_kafka_err2name(err), msg);
	ck_assert_msg(tls_wait_org(port, "second"), "the certificate in use was dropped");
	/* DescribeConfigs lists the security keys set: the dynamic
	 * keystore with its value, the static key password sensitive and
	 * null */
	char v[4200];
	bool is_null, sensitive;
	rd_kafka_ConfigSource_t src;
	ck_assert_msg(describe_broker_key(b, "listener.name.ssl.ssl.keystore.location", v, sizeof(v),
					  &is_null, &src, &sensitive),
		      "listener.name.ssl.ssl.keystore.location not described");
	ck_assert_msg(!is_null && strcmp(v, cert("keystore2.pem")) == 0 && !sensitive &&
			      src == RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG,
		      "listener.name.ssl.ssl.keystore.location: %s source %d", v, (int)src);
	ck_assert_msg(describe_broker_key(b, "ssl.key.password", v, sizeof(v), &is_null, &src,
					  &sensitive),
		      "ssl.key.password not described");
	ck_assert_msg(is_null && sensitive && src == RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG,
		      "ssl.key.password: %s (null %d) sensitive %d source %d", v, is_null, sensitive,
		      (int)src);
	ck_assert_msg(describe_broker_key(b, "ssl.keystore.type", v, sizeof(v), &is_null, &src,
					  &sensitive) && strcmp(v, "PEM") == 0 && !sensitive,
		      "ssl.keystore.type not described as PEM");
	/* a dynamic password is never stored in plain text: without
	 * password.encoder.secret it is refused as Kafka refuses it */
	err = alter_broker_err(b, "listener.name.ssl.ssl.key.password", "keypass", msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Password encoder secret not configured"),
		      "a dynamic password: %s %s", rd_kafka_err2name(err), msg);
	/* the metadata file (dynamic configs, SCRAM credentials) is the
	 * broker's alone */
	char path[4200];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", b->dir);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg((st.st_mode & 0777) == 0600, "%s has mode %o", path, st.st_mode & 0777);
	c_stop_broker(b);
}
END_TEST

/* The one resource's answer of an IncrementalAlterConfigs v1 (resp, read
 * into r): its error, the message into msg; frees resp, closes fd. */
static int16_t config_answer(int fd, uint8_t *resp, k_rbuf *r, char *msg, size_t msgsize)
{
	kr_i32(r, "throttle");
	ck_assert_int_eq(kr_carray(r, "responses"), 1);
	int16_t err = kr_i16(r, "error");
	if (kr_cstr(r, msg, msgsize, "message") < 0)
		msg[0] = '\0';
	free(resp);
	close(fd);
	return err;
}

/* IncrementalAlterConfigs v1 (librdkafka 2.0.2 has none) of BROKER
 * resource `resource` ("" the cluster default, which librdkafka's
 * AlterConfigs cannot name): SET each name, value pair of kv; the error,
 * message into msg. */
static int16_t incremental_set(const h_broker *b, const char *resource, const char *const *kv,
			       char *msg, size_t msgsize)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	static k_wbuf body;
	body.len = 0;
	int n = 0;
	while (kv[2 * n])
		n++;
	kw_uvarint(&body, 2); /* one resource */
	kw_u8(&body, 4);      /* BROKER */
	kw_cstr(&body, resource);
	kw_uvarint(&body, (uint64_t)n + 1);
	for (int i = 0; i < n; i++) {
		kw_cstr(&body, kv[2 * i]);
		kw_u8(&body, 0); /* SET */
		kw_cstr(&body, kv[2 * i + 1]);
		kw_tags0(&body);
	}
	kw_tags0(&body);
	kw_u8(&body, 0); /* validate_only */
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 44, 1, &body, &r);
	return config_answer(fd, frame, &r, msg, msgsize);
}

/* The value stored for broker 0's key name in the metadata file (its
 * dynamic configs), malloc'd; NULL when none. */
static char *stored_value(const h_broker *b, const char *name)
{
	char path[4200], head[512];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", b->dir);
	if (access(path, F_OK) != 0)
		return NULL; /* nothing stored yet */
	char *file = slurp(path);
	snprintf(head, sizeof(head), "\nbroker-config 0 %s ", name);
	char *p = strstr(file, head), *v = NULL;
	if (p) {
		p += strlen(head);
		v = strndup(p, strcspn(p, "\n"));
	}
	free(file);
	return v;
}

#define PW_KEY "listener.name.ssl.ssl.keystore.password"
#define LOC_KEY "listener.name.ssl.ssl.keystore.location"

/* The stored password of the SSL listener's keystore is Kafka's encoded
 * form, not the password, and decodes with secret to want. */
static void expect_stored(const h_broker *b, const char *secret, const char *want)
{
	char *v = stored_value(b, PW_KEY);
	ck_assert_msg(v != NULL, "%s is not stored", PW_KEY);
	ck_assert_msg(!strstr(v, want), "the stored value holds the password: %s", v);
	ck_assert_msg(strstr(v, "encryptedPassword:") && strstr(v, "keyFactoryAlgorithm:PBKDF2WithHmacSHA512") &&
			      strstr(v, "cipherAlgorithm:AES/CBC/PKCS5Padding") && strstr(v, "iterations:4096"),
		      "not Kafka's encoded form: %s", v);
	char err[256];
	char *pw = brk_password_decode(secret, v, err, sizeof(err));
	ck_assert_msg(pw && strcmp(pw, want) == 0, "the stored value decodes to %s (%s)",
		      pw ? pw : "nothing", err);
	brk_password_free(pw);
	free(v);
}

/* Dynamic password configs with password.encoder.secret (Kafka's
 * PasswordEncoder): a PKCS12 keystore swapped for one with another
 * password, stored encrypted, kept over a restart, ignored with a wrong
 * secret, read with password.encoder.old.secret. */
START_TEST(test_dynamic_password)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("server.p12"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PKCS12", loc, "ssl.keystore.password=storepass",
		"password.encoder.secret=first secret", NULL });
	ck_assert_msg(tls_wait_org(port, "first"), "the first certificate is not served");
	char msg[512];
	/* the new keystore with a wrong password: refused, nothing changes */
	rd_kafka_resp_err_t err = alter_broker_kv(b, "0", (const char *const[]){
		LOC_KEY, cert("server2.p12"), PW_KEY, "not-the-password", NULL }, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Validation of dynamic config update of SSLFactory failed"),
		      "a wrong keystore password: %s %s", rd_kafka_err2name(err), msg);
	ck_assert_ptr_null(stored_value(b, PW_KEY));
	/* a password at the cluster default: refused as Kafka refuses it */
	int16_t ierr = incremental_set(b, "", (const char *const[]){ PW_KEY, "storepass2", NULL },
				       msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Cannot update these configs at default cluster level, broker id "
					  "must be specified: [" PW_KEY "]"),
		      "a default password: %d %s", ierr, msg);
	/* password.encoder.* is not dynamic */
	err = alter_broker_err(b, "password.encoder.secret", "x", msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Cannot update these configs dynamically: [password.encoder.secret]"),
		      "password.encoder.secret: %s %s", rd_kafka_err2name(err), msg);
	/* nor is a JAAS config (the SASL logins are built at start-up) */
	err = alter_broker_err(b, "listener.name.ssl.plain.sasl.jaas.config",
			       "org.apache.kafka.common.security.plain.PlainLoginModule required;", msg,
			       sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Cannot update these configs dynamically"),
		      "a dynamic JAAS config: %s %s", rd_kafka_err2name(err), msg);
	/* the swap (AlterConfigs): the second keystore, with its password */
	err = alter_broker_kv(b, "0", (const char *const[]){ LOC_KEY, cert("server2.p12"), PW_KEY,
							     "storepass2", NULL }, msg, sizeof(msg));
	ck_assert_msg(err == 0, "the swap: %s %s", rd_kafka_err2name(err), msg);
	ck_assert_msg(tls_wait_org(port, "second"), "the second keystore is not served");
	const char *kv[] = { "security.protocol", "ssl", "ssl.ca.location", cert("ca.pem"), NULL };
	ck_assert_int_eq(try_metadata(b, port, kv), 0);
	expect_stored(b, "first secret", "storepass2");
	/* never returned: DescribeConfigs says sensitive, null */
	char v[4200];
	bool is_null, sensitive;
	rd_kafka_ConfigSource_t src;
	ck_assert_msg(describe_broker_key(b, PW_KEY, v, sizeof(v), &is_null, &src, &sensitive),
		      "%s not described", PW_KEY);
	ck_assert_msg(is_null && sensitive && src == RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG,
		      "%s: %s (null %d) sensitive %d source %d", PW_KEY, v, is_null, sensitive,
		      (int)src);
	/* IncrementalAlterConfigs of another key keeps the stored password
	 * (decoded, then encoded again with a new salt: not twice encoded) */
	char *before = stored_value(b, PW_KEY);
	ierr = incremental_set(b, "0", (const char *const[]){ "listener.name.ssl.ssl.keystore.type",
								  "PKCS12", NULL }, msg, sizeof(msg));
	ck_assert_msg(ierr == 0, "IncrementalAlterConfigs: %d %s", ierr, msg);
	char *after = stored_value(b, PW_KEY);
	ck_assert_msg(before && after && strcmp(before, after) != 0, "not encoded again");
	free(before);
	free(after);
	expect_stored(b, "first secret", "storepass2");
	/* IncrementalAlterConfigs of a password: back to the first keystore
	 * and again to the second */
	ierr = incremental_set(b, "0", (const char *const[]){ LOC_KEY, cert("server.p12"), PW_KEY,
							  "storepass", NULL }, msg, sizeof(msg));
	ck_assert_msg(ierr == 0, "IncrementalAlterConfigs: %d %s", ierr, msg);
	ck_assert_msg(tls_wait_org(port, "first"), "the first keystore is not served again");
	expect_stored(b, "first secret", "storepass");
	ierr = incremental_set(b, "0", (const char *const[]){ LOC_KEY, cert("server2.p12"), PW_KEY,
							  "storepass2", NULL }, msg, sizeof(msg));
	ck_assert_msg(ierr == 0, "IncrementalAlterConfigs: %d %s", ierr, msg);
	ck_assert_msg(tls_wait_org(port, "second"), "the second keystore is not served again");
	/* after a restart the stored password is read */
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)), 0);
	ck_assert_msg(h_broker_restart(b) == 0, "restart");
	ck_assert_msg(tls_wait_org(port, "second"), "after a restart the second keystore is not served");
	/* a wrong secret: the stored password is ignored with a log line;
	 * the listener keeps the static keystore */
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)), 0);
	ck_assert_int_eq(h_broker_add_override(b, "password.encoder.secret=wrong secret"), 0);
	ck_assert_msg(h_broker_restart(b) == 0, "restart with a wrong secret");
	ck_assert_msg(tls_wait_org(port, "first"), "with a wrong secret the static keystore is not served");
	ck_assert_msg(log_has(b, "Dynamic password config " PW_KEY " could not be decoded, ignoring"),
		      "no log line of the ignored password");
	/* the old secret reads it (rotation): the second keystore again */
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)), 0);
	ck_assert_int_eq(h_broker_add_override(b, "password.encoder.secret=new secret"), 0);
	ck_assert_int_eq(h_broker_add_override(b, "password.encoder.old.secret=first secret"), 0);
	ck_assert_msg(h_broker_restart(b) == 0, "restart with the old secret");
	ck_assert_msg(tls_wait_org(port, "second"), "password.encoder.old.secret did not decode it");
	/* and it is stored again with the new secret (Kafka's
	 * maybeReEncodePasswords): the old secret can go */
	ck_assert_msg(log_has(b, "read with password.encoder.old.secret: storing them encrypted"),
		      "no log line of the re-encoding");
	for (int t = 0; t < 50; t++) {
		char *sv = stored_value(b, PW_KEY);
		char perr[128];
		char *pw = sv ? brk_password_decode("new secret", sv, perr, sizeof(perr)) : NULL;
		free(sv);
		bool done = pw != NULL;
		brk_password_free(pw);
		if (done)
			break;
		usleep(100 * 1000);
	}
	expect_stored(b, "new secret", "storepass2");
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)), 0);
	ck_assert_int_eq(h_broker_add_override(b, "password.encoder.old.secret="), 0);
	ck_assert_msg(h_broker_restart(b) == 0, "restart without the old secret");
	ck_assert_msg(tls_wait_org(port, "second"), "the re-encoded password is not read");
	/* no password in the log, ever */
	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(!strstr(log, "storepass2") && !strstr(log, "not-the-password"),
		      "a password is in the log");
	free(log);
	c_stop_broker(b);
}
END_TEST

/* IncrementalAlterConfigs v1 SET of one config of BROKER resource "0"
 * whose name and value are given with their lengths (they may hold a NUL
 * byte): the error, the message into msg. */
static int16_t incremental_set_raw(const h_broker *b, const char *name, size_t nlen,
				   const char *value, size_t vlen, char *msg, size_t msgsize)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	static k_wbuf body;
	body.len = 0;
	kw_uvarint(&body, 2); /* one resource */
	kw_u8(&body, 4);      /* BROKER */
	kw_cstr(&body, "0");
	kw_uvarint(&body, 2); /* one config */
	kw_uvarint(&body, nlen + 1);
	kw_raw(&body, name, nlen);
	kw_u8(&body, 0); /* SET */
	kw_uvarint(&body, vlen + 1);
	kw_raw(&body, value, vlen);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_u8(&body, 0); /* validate_only */
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 44, 1, &body, &r);
	return config_answer(fd, frame, &r, msg, msgsize);
}

/* As incremental_set for one config of broker "0" whose value (vlen
 * bytes) is larger than a k_wbuf holds: the frame is put together here. */
static int16_t incremental_set_big(const h_broker *b, const char *name, const char *value,
				   size_t vlen, char *msg, size_t msgsize)
{
	static k_wbuf head, tail;
	head.len = tail.len = 0;
	const int32_t cid = 4242;
	kw_i32(&head, 0); /* size, patched */
	kw_i16(&head, 44);
	kw_i16(&head, 1);
	kw_i32(&head, cid);
	kw_i16(&head, -1); /* client id */
	kw_tags0(&head);
	kw_uvarint(&head, 2); /* one resource */
	kw_u8(&head, 4);      /* BROKER */
	kw_cstr(&head, "0");
	kw_uvarint(&head, 2); /* one config */
	kw_cstr(&head, name);
	kw_u8(&head, 0); /* SET */
	kw_uvarint(&head, vlen + 1);
	kw_tags0(&tail);
	kw_tags0(&tail);
	kw_u8(&tail, 0); /* validate_only */
	kw_tags0(&tail);
	size_t total = head.len + vlen + tail.len;
	uint8_t *frame = malloc(total);
	ck_assert_ptr_nonnull(frame);
	memcpy(frame, head.b, head.len);
	memcpy(frame + head.len, value, vlen);
	memcpy(frame + head.len + vlen, tail.b, tail.len);
	w_put32(frame, (int32_t)(total - 4));
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	ck_assert_int_eq(w_send_all(fd, frame, total, h_scaled_ms(5000)), 0);
	free(frame);
	k_rbuf r;
	uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(10000));
	return config_answer(fd, resp, &r, msg, msgsize);
}

/* DescribeConfigs of broker "0": key name's read_only flag, -1 when it is
 * not listed. */
static int describe_read_only(const h_broker *b, const char *name)
{
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, c_conf(b));
	rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, "0");
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConfigs(rk, &r, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, h_scaled_ms(10000));
	ck_assert_ptr_nonnull(ev);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "DescribeConfigs: %s",
		      rd_kafka_event_error_string(ev));
	size_t n, cnt;
	const rd_kafka_ConfigResource_t **rs =
		rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
	ck_assert_int_eq((int)n, 1);
	const rd_kafka_ConfigEntry_t **es = rd_kafka_ConfigResource_configs(rs[0], &cnt);
	int ro = -1;
	for (size_t i = 0; i < cnt && ro < 0; i++)
		if (strcmp(rd_kafka_ConfigEntry_name(es[i]), name) == 0)
			ro = rd_kafka_ConfigEntry_is_read_only(es[i]) ? 1 : 0;
	rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return ro;
}

/* What Kafka's DynamicBrokerConfig refuses is refused in the request,
 * never stored to be ignored later: a value the broker could not apply
 * (the security keys over 64 KiB), a NUL byte in a name or value, an SSL
 * key without a listener prefix on a broker id, a per-broker key at the
 * cluster default; password.encoder.* described read-only. */
START_TEST(test_dynamic_refusals)
{
	make_certs();
	int port;
	char loc[4500];
	snprintf(loc, sizeof(loc), "ssl.keystore.location=%s", cert("server.p12"));
	h_broker *b = start_tls_broker(&port, (const char *const[]){
		"ssl.keystore.type=PKCS12", loc, "ssl.keystore.password=storepass",
		"password.encoder.secret=first secret", NULL });
	ck_assert_msg(tls_wait_org(port, "first"), "the first certificate is not served");
	char msg[1024];
	/* "/" and 70,000 x "a": more than the security keys hold in all */
	static char big[70002];
	big[0] = '/';
	memset(big + 1, 'a', 70000);
	/* (IncrementalAlterConfigs: AlterConfigs' strings hold 32,767 bytes) */
	int16_t ierr = incremental_set_big(b, LOC_KEY, big, strlen(big), msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "exceed 65536 bytes in all") && strstr(msg, LOC_KEY),
		      "an oversize location: %d %s", ierr, msg);
	char *sv = stored_value(b, LOC_KEY);
	ck_assert_msg(sv == NULL, "the oversize location was stored");
	/* a NUL byte in a value, or in a name: refused, nothing stored */
	static const char pw[] = "pass-two\0junk";
	ierr = incremental_set_raw(b, PW_KEY, strlen(PW_KEY), pw, sizeof(pw) - 1, msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST && strstr(msg, "NUL") &&
			      strstr(msg, PW_KEY),
		      "a NUL in a value: %d %s", ierr, msg);
	ck_assert_ptr_null(stored_value(b, PW_KEY));
	static const char nm[] = "listener.name.ssl.ssl.keystore.type\0x";
	ierr = incremental_set_raw(b, nm, sizeof(nm) - 1, "PKCS12", 6, msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST && strstr(msg, "NUL"),
		      "a NUL in a name: %d %s", ierr, msg);
	ck_assert_ptr_null(stored_value(b, "listener.name.ssl.ssl.keystore.type"));
	/* SSL keys without the listener prefix, on the broker id */
	rd_kafka_resp_err_t err = alter_broker_kv(b, "0", (const char *const[]){
		"ssl.keystore.location", cert("server2.p12"), "ssl.keystore.password", "storepass2",
		NULL }, msg, sizeof(msg));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Invalid config value for resource ConfigResource(type=BROKER, "
					  "name='0'): These security configs can be dynamically updated "
					  "only per-listener using the listener prefix: ") &&
			      strstr(msg, "ssl.keystore.location") && strstr(msg, "ssl.keystore.password"),
		      "unprefixed SSL keys: %s %s", rd_kafka_err2name(err), msg);
	ck_assert_ptr_null(stored_value(b, "ssl.keystore.location"));
	/* per-broker keys at the cluster default */
	ierr = incremental_set(b, "", (const char *const[]){ LOC_KEY, cert("server2.p12"), NULL },
			       msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "Invalid config value for resource ConfigResource(type=BROKER, "
					  "name=''): Cannot update these configs at default cluster "
					  "level, broker id must be specified: [" LOC_KEY "]"),
		      "a listener key at the default: %d %s", ierr, msg);
	ierr = incremental_set(b, "", (const char *const[]){ "ssl.client.auth", "required", NULL },
			       msg, sizeof(msg));
	ck_assert_msg(ierr == RD_KAFKA_RESP_ERR_INVALID_REQUEST &&
			      strstr(msg, "broker id must be specified: [ssl.client.auth]"),
		      "ssl.client.auth at the default: %d %s", ierr, msg);
	/* a cluster-level listener key is taken at the default */
	ierr = incremental_set(b, "", (const char *const[]){
		"listener.name.ssl.max.connection.creation.rate", "1000", NULL }, msg, sizeof(msg));
	ck_assert_msg(ierr == 0, "a cluster-level listener key at the default: %d %s", ierr, msg);
	/* the listener keystore still swaps on the broker id */
	err = alter_broker_kv(b, "0", (const char *const[]){ LOC_KEY, cert("server2.p12"), PW_KEY,
							     "storepass2", NULL }, msg, sizeof(msg));
	ck_assert_msg(err == 0, "the swap: %s %s", rd_kafka_err2name(err), msg);
	ck_assert_msg(tls_wait_org(port, "second"), "the second keystore is not served");
	/* password.encoder.* is static: read-only, as Kafka describes it */
	ck_assert_int_eq(describe_read_only(b, "password.encoder.secret"), 1);
	ck_assert_int_eq(describe_read_only(b, LOC_KEY), 0);
	/* nothing was stored to be ignored at apply time */
	ck_assert_msg(!log_has(b, "dynamic config ignored"), "a stored config was ignored");
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tls");
	TCase *tc = tcase_create("tls");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_pem_keystore_round_trip);
	tcase_add_test(tc, test_pkcs12_keystore);
	tcase_add_test(tc, test_inline_pem_keystore);
	tcase_add_test(tc, test_inline_pem_continued);
	tcase_add_test(tc, test_bad_keystores);
	tcase_add_test(tc, test_client_auth_and_principal);
	tcase_add_test(tc, test_plaintext_and_garbage);
	tcase_add_test(tc, test_garbage_after_requests);
	tcase_add_test(tc, test_stalled_handshake);
	tcase_add_test(tc, test_sasl_ssl);
	tcase_add_test(tc, test_dynamic_keystore);
	tcase_add_test(tc, test_dynamic_password);
	tcase_add_test(tc, test_dynamic_refusals);
	tcase_add_test(tc, test_principal_in_acls);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
