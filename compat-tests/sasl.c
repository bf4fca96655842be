/*
 * sasl.c - SASL on a SASL_PLAINTEXT listener (the listener named PLAINTEXT
 * mapped to SASL_PLAINTEXT by listener.security.protocol.map): librdkafka
 * producing and consuming with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and
 * raw requests for what a client library would not send: a wrong password,
 * an unknown user, an unknown mechanism, a request before authentication,
 * SaslAuthenticate before SaslHandshake, an oversized token, garbage
 * tokens, the v0 flow (raw tokens after a v0 handshake), and a broker that
 * refuses to start with GSSAPI (Kafka's default mechanism) enabled.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/wire.h"

#define PLAIN_JAAS                                                                                \
	"listener.name.plaintext.plain.sasl.jaas.config="                                        \
	"org.apache.kafka.common.security.plain.PlainLoginModule required "                      \
	"username=\"admin\" password=\"admin-secret\" "                                           \
	"user_admin=\"admin-secret\" user_alice=\"alice-secret\";"
#define SCRAM_JAAS(mech)                                                                          \
	"listener.name.plaintext." mech ".sasl.jaas.config="                                     \
	"org.apache.kafka.common.security.scram.ScramLoginModule required "                      \
	"username=\"admin\" password=\"admin-secret\";"

#define SASL_OVERRIDES                                                                            \
	"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",                               \
	    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", PLAIN_JAAS,             \
	    SCRAM_JAAS("scram-sha-256"), SCRAM_JAAS("scram-sha-512"),                            \
	    "sasl.server.max.receive.size=4096"

#define WAIT_MS h_scaled_ms(5000)

static h_broker *start(void)
{
	return c_start_broker((const char *const[]){SASL_OVERRIDES, NULL});
}

static int connect_or_fail(h_broker *b)
{
	int fd = w_connect(b->port, WAIT_MS);
	ck_assert_msg(fd >= 0, "cannot connect to the broker");
	return fd;
}

static void send_request(int fd, int16_t key, int16_t version, int32_t corr, const void *body,
			 size_t len)
{
	size_t cap = len + 64;
	uint8_t *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	int n = w_build_request(buf, cap, key, version, corr, "sasl-test", body, len);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(w_send_all(fd, buf, (size_t)n, WAIT_MS), 0);
	free(buf);
}

static void expect_closed(int fd, const char *what)
{
	long n = 0;
	int rc = w_wait_closed(fd, WAIT_MS, &n);
	ck_assert_msg(rc == WIRE_CLOSED, "%s: connection still open (%ld bytes received)", what, n);
	close(fd);
}

/* SaslHandshake (v0 or v1) for mech: the error code; the mechanisms listed
 * go to list (comma-separated). */
static int16_t handshake(int fd, int16_t version, const char *mech, char *list, size_t listsize)
{
	uint8_t body[128];
	uint8_t *p = w_put16(body, (int16_t)strlen(mech));
	memcpy(p, mech, strlen(mech));
	p += strlen(mech);
	send_request(fd, 17, version, 17, body, (size_t)(p - body));
	uint8_t *resp;
	int32_t len;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 1 << 20, WAIT_MS), WIRE_OK);
	ck_assert_int_ge(len, 10);
	ck_assert_int_eq(w_get32(resp), 17);
	int16_t err = w_get16(resp + 4);
	int32_t n = w_get32(resp + 6);
	size_t off = 10, o = 0;
	if (list)
		list[0] = '\0';
	for (int32_t i = 0; i < n; i++) {
		ck_assert_int_le((int32_t)off + 2, len);
		int16_t sl = w_get16(resp + off);
		ck_assert_int_le((int32_t)off + 2 + sl, len);
		if (list)
			o += (size_t)snprintf(list + o, listsize - o, "%s%.*s", i ? "," : "", (int)sl,
					      (const char *)resp + off + 2);
		off += 2 + (size_t)sl;
	}
	free(resp);
	return err;
}

typedef struct auth_result {
	int16_t error;
	char message[512];
	uint8_t token[1024];
	int32_t token_len;
	int64_t session_lifetime_ms;
} auth_result;

/* SaslAuthenticate v1 with token; WIRE_OK with *out, or the receive
 * error (the connection closed without an answer). */
static int authenticate(int fd, const void *token, size_t len, auth_result *out)
{
	uint8_t *body = malloc(len + 4);
	ck_assert_ptr_nonnull(body);
	w_put32(body, (int32_t)len);
	memcpy(body + 4, token, len);
	send_request(fd, 36, 1, 36, body, len + 4);
	free(body);
	uint8_t *resp;
	int32_t rlen;
	int rc = w_recv_frame(fd, &resp, &rlen, 1 << 20, WAIT_MS);
	if (rc != WIRE_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	ck_assert_int_ge(rlen, 4 + 2 + 2);
	ck_assert_int_eq(w_get32(resp), 36);
	out->error = w_get16(resp + 4);
	int16_t ml = w_get16(resp + 6);
	size_t off = 8;
	if (ml >= 0) {
		ck_assert_int_le((int32_t)off + ml, rlen);
		snprintf(out->message, sizeof(out->message), "%.*s", (int)ml, (const char *)resp + off);
		off += (size_t)ml;
	}
	ck_assert_int_le((int32_t)off + 4, rlen);
	out->token_len = w_get32(resp + off);
	off += 4;
	ck_assert_int_le(out->token_len, (int32_t)sizeof(out->token));
	ck_assert_int_le((int32_t)off + out->token_len + 8, rlen);
	memcpy(out->token, resp + off, (size_t)out->token_len);
	off += (size_t)out->token_len;
	int64_t life = 0;
	for (int i = 0; i < 8; i++)
		life = life << 8 | resp[off + (size_t)i];
	out->session_lifetime_ms = life;
	free(resp);
	return WIRE_OK;
}

static size_t plain_token(char *out, const char *user, const char *password)
{
	size_t ul = strlen(user), pl = strlen(password);
	out[0] = '\0';
	memcpy(out + 1, user, ul);
	out[1 + ul] = '\0';
	memcpy(out + 2 + ul, password, pl);
	return 2 + ul + pl;
}

/* Metadata v1 (no topics: an empty array) must be answered. */
static void expect_metadata_answered(int fd)
{
	uint8_t body[4];
	w_put32(body, 0);
	send_request(fd, 3, 1, 3, body, sizeof(body));
	uint8_t *resp;
	int32_t len;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 1 << 20, WAIT_MS), WIRE_OK);
	ck_assert_int_eq(w_get32(resp), 3);
	free(resp);
}

/* ---- librdkafka ---- */

static void produce_consume(h_broker *b, const char *mech, const char *user, const char *password,
			    const char *topic)
{
	const char *kv[] = {"security.protocol", "sasl_plaintext", "sasl.mechanisms", mech,
			    "sasl.username", user, "sasl.password", password, NULL};
	rd_kafka_t *p = c_producer(b, kv);
	ck_assert_int_eq(c_create_topic(p, topic, 1, 1, NULL, NULL, 0), 0);
	c_wait_topic(p, topic, 1, h_scaled_ms(10000));
	c_delivery d[10];
	char val[32];
	for (int i = 0; i < 10; i++) {
		snprintf(val, sizeof(val), "%s-%d", mech, i);
		c_msg m = {.topic = topic, .partition = 0, .value = val, .value_len = strlen(val)};
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < 10; i++)
		ck_assert_msg(d[i].done && d[i].err == 0 && d[i].offset == i, "record %d: %s", i,
			      rd_kafka_err2str(d[i].err));
	rd_kafka_destroy(p);
	rd_kafka_t *c = c_consumer(b, kv);
	long got = c_consume(c, topic, 0, RD_KAFKA_OFFSET_BEGINNING, 10, h_scaled_ms(20000), NULL, NULL);
	ck_assert_int_eq(got, 10);
	rd_kafka_destroy(c);
}

START_TEST(test_plain_produce_consume)
{
	h_broker *b = start();
	produce_consume(b, "PLAIN", "alice", "alice-secret", "plain-topic");
	c_stop_broker(b);
}
END_TEST

typedef struct auth_errors {
	int auth_failures;
	char reason[512];
} auth_errors;

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	(void)rk;
	auth_errors *e = opaque;
	if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
		e->auth_failures++;
		snprintf(e->reason, sizeof(e->reason), "%s", reason);
	}
}

/* librdkafka with bad credentials reports an authentication error carrying
 * the broker's message. */
static void expect_client_auth_error(h_broker *b, const char *mech, const char *user,
				     const char *password, const char *expect)
{
	auth_errors e = {0};
	rd_kafka_conf_t *conf = c_conf(b);
	c_set_all(conf, (const char *const[]){"security.protocol", "sasl_plaintext", "sasl.mechanisms",
					      mech, "sasl.username", user, "sasl.password", password,
					      NULL});
	rd_kafka_conf_set_error_cb(conf, error_cb);
	rd_kafka_conf_set_opaque(conf, &e);
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	for (int i = 0; i < 100 && !e.auth_failures; i++)
		rd_kafka_poll(rk, 100);
	ck_assert_msg(e.auth_failures > 0, "%s %s: no authentication error reported", mech, user);
	ck_assert_msg(strstr(e.reason, expect), "%s %s: reason \"%s\" lacks \"%s\"", mech, user,
		      e.reason, expect);
	rd_kafka_destroy(rk);
}

START_TEST(test_plain_client_bad_credentials)
{
	h_broker *b = start();
	expect_client_auth_error(b, "PLAIN", "alice", "wrong", "Invalid username or password");
	expect_client_auth_error(b, "PLAIN", "mallory", "alice-secret", "Invalid username or password");
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

/* ---- raw requests ---- */

START_TEST(test_plain_raw)
{
	h_broker *b = start();
	char tok[256], list[256];
	auth_result r;

	/* ApiVersions, handshake, authenticate, then a request is served */
	int fd = connect_or_fail(b);
	ck_assert_int_eq(w_api_versions_v0(fd, 1, WAIT_MS), 0);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", list, sizeof(list)), 0);
	ck_assert_str_eq(list, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.session_lifetime_ms, 0);
	expect_metadata_answered(fd);
	/* After authentication: SaslAuthenticate and SaslHandshake are
	 * ILLEGAL_SASL_STATE, and the connection stays */
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 34);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 34);
	expect_metadata_answered(fd);
	close(fd);

	/* wrong password: SASL_AUTHENTICATION_FAILED with Kafka's message, closed */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secreT"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Authentication failed: Invalid username or password");
	expect_closed(fd, "wrong password");

	/* unknown user */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "bob", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Authentication failed: Invalid username or password");
	expect_closed(fd, "unknown user");

	/* the JAAS config's own username/password is no user_ entry */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "admin", "admin-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	close(fd);

	/* garbage token (no NUL): the generic failure */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, "garbage", 7, &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Authentication failed during authentication due to invalid "
				    "credentials with SASL mechanism PLAIN");
	expect_closed(fd, "garbage token");

	/* an authorization id other than the user */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	memcpy(tok, "admin\0alice\0alice-secret", 24);
	ck_assert_int_eq(authenticate(fd, tok, 24, &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Authentication failed: Client requested an authorization id "
				    "that is different from username");
	expect_closed(fd, "authzid");

	/* unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list, closed */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "GSSAPI", list, sizeof(list)), 33);
	ck_assert_str_eq(list, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
	expect_closed(fd, "unknown mechanism");
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "plain", list, sizeof(list)), 33); /* names are exact */
	expect_closed(fd, "lower-case mechanism");

	/* a request before authentication closes, unanswered */
	fd = connect_or_fail(b);
	uint8_t body[4];
	w_put32(body, 0);
	send_request(fd, 3, 1, 3, body, sizeof(body));
	expect_closed(fd, "Metadata before authentication");
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	send_request(fd, 3, 1, 3, body, sizeof(body));
	expect_closed(fd, "Metadata between handshake and authentication");

	/* SaslAuthenticate before SaslHandshake: ILLEGAL_SASL_STATE, closed */
	fd = connect_or_fail(b);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 34);
	expect_closed(fd, "authenticate before handshake");

	/* a second handshake during authentication: ILLEGAL_SASL_STATE, closed */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 34);
	expect_closed(fd, "second handshake");

	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_oversized_and_garbage)
{
	h_broker *b = start();
	/* a token above sasl.server.max.receive.size (4096 here): closed
	 * from its size alone, before the body is read */
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	uint8_t hdr[64];
	uint8_t *p = w_put32(hdr, 100000);
	p = w_put16(p, 36);
	p = w_put16(p, 1);
	p = w_put32(p, 1);
	ck_assert_int_eq(w_send_all(fd, hdr, (size_t)(p - hdr), WAIT_MS), 0);
	expect_closed(fd, "oversized token");
	/* one just above the bound with its body sent in full */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	char *big = calloc(1, 5000);
	ck_assert_ptr_nonnull(big);
	auth_result r;
	ck_assert_int_ne(authenticate(fd, big, 5000, &r), WIRE_OK);
	close(fd);
	/* a token within the bound but of zeros: refused, closed */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, big, 3000, &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	expect_closed(fd, "token of zeros");
	free(big);
	/* random frames before authentication: closed, never a crash */
	unsigned seed = 16;
	for (int i = 0; i < 50; i++) {
		fd = connect_or_fail(b);
		uint8_t junk[200];
		size_t n = 8 + (size_t)(rand_r(&seed) % 150);
		w_put32(junk, (int32_t)(n - 4));
		for (size_t k = 4; k < n; k++)
			junk[k] = (uint8_t)rand_r(&seed);
		if (i % 2) { /* after a handshake, as a SaslAuthenticate body */
			ck_assert_int_eq(handshake(fd, 1, i % 4 == 1 ? "PLAIN" : "SCRAM-SHA-256", NULL, 0), 0);
			w_put16(junk + 4, 36);
			w_put16(junk + 6, 1);
		}
		w_send_all(fd, junk, n, WAIT_MS);
		long nread;
		w_wait_closed(fd, WAIT_MS, &nread); /* answered or not, it must not hang */
		close(fd);
	}
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

/* The v0 flow: SaslHandshake v0, then raw tokens both ways. */
START_TEST(test_v0_raw_tokens)
{
	h_broker *b = start();
	char tok[256];
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 0, "PLAIN", NULL, 0), 0);
	size_t n = plain_token(tok + 4, "alice", "alice-secret");
	w_put32((uint8_t *)tok, (int32_t)n);
	ck_assert_int_eq(w_send_all(fd, tok, n + 4, WAIT_MS), 0);
	uint8_t *resp;
	int32_t len;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 1 << 20, WAIT_MS), WIRE_OK);
	ck_assert_int_eq(len, 0); /* PLAIN's empty challenge, no header */
	free(resp);
	expect_metadata_answered(fd);
	close(fd);
	/* wrong password in the raw flow: closed without an answer */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 0, "PLAIN", NULL, 0), 0);
	n = plain_token(tok + 4, "alice", "nope");
	w_put32((uint8_t *)tok, (int32_t)n);
	ck_assert_int_eq(w_send_all(fd, tok, n + 4, WAIT_MS), 0);
	long nread = -1;
	ck_assert_int_eq(w_wait_closed(fd, WAIT_MS, &nread), WIRE_CLOSED);
	ck_assert_int_eq(nread, 0);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* A PLAINTEXT listener answers the SASL requests ILLEGAL_SASL_STATE and
 * serves the rest. */
START_TEST(test_plaintext_listener)
{
	h_broker *b = c_start_broker(NULL);
	char tok[64];
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 34);
	auth_result r;
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "x"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 34);
	expect_metadata_answered(fd);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* Configurations a broker refuses to start with. */
static void expect_refused(const char *const *overrides, const char *expect)
{
	h_broker *b = h_broker_new(overrides);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(h_broker_launch(b), 0);
	int st = h_broker_wait_exit(b, h_scaled_ms(10000));
	ck_assert_msg(st != -1, "the broker started with a bad SASL config (%s)", expect);
	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, expect), "log lacks \"%s\":\n%s", expect, log);
	free(log);
	h_broker_free(b);
}

START_TEST(test_bad_configs)
{
	/* Kafka's default sasl.enabled.mechanisms is GSSAPI, not served */
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     NULL},
		       "SASL mechanism GSSAPI is not supported (sasl.enabled.mechanisms is GSSAPI, "
		       "Kafka's default)");
	/* an enabled mechanism without its JAAS config */
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN", NULL},
		       "listener.name.plaintext.plain.sasl.jaas.config is not set");
	/* the unprefixed key is not read for a broker (Kafka ignores it) */
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN",
					     "sasl.jaas.config=org.apache.kafka.common.security.plain."
					     "PlainLoginModule required user_a=\"b\";",
					     NULL},
		       "sasl.jaas.config is ignored for a broker");
	/* a JAAS config that does not parse */
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN",
					     "listener.name.plaintext.plain.sasl.jaas.config="
					     "org.apache.kafka.common.security.plain.PlainLoginModule "
					     "required user_a=\"b\"",
					     NULL},
		       "JAAS config entry not terminated by semi-colon");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sasl");
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
	    {"plain_produce_consume", test_plain_produce_consume},
	    {"plain_client_bad_credentials", test_plain_client_bad_credentials},
	    {"plain_raw", test_plain_raw},
	    {"oversized_and_garbage", test_oversized_and_garbage},
	    {"v0_raw_tokens", test_v0_raw_tokens},
	    {"plaintext_listener", test_plaintext_listener},
	    {"bad_configs", test_bad_configs},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return c_run_suite(s);
}
