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

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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
	    "sasl.server.max.receive.size=4096", "sasl.mechanism.inter.broker.protocol=PLAIN"

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

	/* ApiVersions comes once, first: a second one closes; one of a
	 * version not served (UNSUPPORTED_VERSION) may be sent again */
	fd = connect_or_fail(b);
	const uint8_t tags[2] = {0, 0}; /* header v2's and the body's tagged fields */
	send_request(fd, 18, 99, 9, tags, sizeof(tags));
	uint8_t *resp;
	int32_t rlen;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &rlen, 1 << 20, WAIT_MS), WIRE_OK);
	ck_assert_int_ge(rlen, 6);
	ck_assert_int_eq(w_get16(resp + 4), 35);
	free(resp);
	ck_assert_int_eq(w_api_versions_v0(fd, 1, WAIT_MS), 0);
	uint8_t av[8];
	send_request(fd, 18, 0, 2, av, 0);
	expect_closed(fd, "second ApiVersions before authentication");

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

/* ---- SCRAM ---- */

/* A compact (flexible) encoder/decoder, enough for keys 50 and 51. */
typedef struct cbuf {
	uint8_t *p;
	size_t len, cap;
} cbuf;

static void cb_put(cbuf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void cb_uvarint(cbuf *b, uint32_t v)
{
	while (v >= 0x80) {
		uint8_t c = (uint8_t)(v | 0x80);
		cb_put(b, &c, 1);
		v >>= 7;
	}
	uint8_t c = (uint8_t)v;
	cb_put(b, &c, 1);
}

static void cb_cstr(cbuf *b, const char *s, size_t n)
{
	cb_uvarint(b, (uint32_t)n + 1);
	cb_put(b, s, n);
}

static void cb_i8(cbuf *b, int8_t v) { cb_put(b, &v, 1); }

static void cb_i32(cbuf *b, int32_t v)
{
	uint8_t x[4];
	w_put32(x, v);
	cb_put(b, x, 4);
}

typedef struct rd {
	const uint8_t *p;
	int32_t len, off;
} rd;

static uint32_t rd_uvarint(rd *r)
{
	uint32_t v = 0;
	for (int shift = 0; shift < 35; shift += 7) {
		ck_assert_int_lt(r->off, r->len);
		uint8_t c = r->p[r->off++];
		v |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	ck_abort_msg("bad varint");
	return 0;
}

static int16_t rd_i16(rd *r)
{
	ck_assert_int_le(r->off + 2, r->len);
	int16_t v = w_get16(r->p + r->off);
	r->off += 2;
	return v;
}

static int32_t rd_i32(rd *r)
{
	ck_assert_int_le(r->off + 4, r->len);
	int32_t v = w_get32(r->p + r->off);
	r->off += 4;
	return v;
}

/* A compact nullable string into out ("(null)" for null). */
static void rd_cstr(rd *r, char *out, size_t cap)
{
	uint32_t n = rd_uvarint(r);
	if (n == 0) {
		snprintf(out, cap, "(null)");
		return;
	}
	ck_assert_int_le(r->off + (int32_t)n - 1, r->len);
	snprintf(out, cap, "%.*s", (int)n - 1, (const char *)r->p + r->off);
	r->off += (int32_t)n - 1;
}

static void rd_tags(rd *r)
{
	uint32_t n = rd_uvarint(r);
	for (uint32_t i = 0; i < n; i++) {
		rd_uvarint(r);
		uint32_t sz = rd_uvarint(r);
		r->off += (int32_t)sz;
	}
}

/* Send a flexible request (header v2: the header's empty tagged fields
 * lead the body) and receive its answer, positioned after the response
 * header v1. */
static void flexible_call(int fd, int16_t key, const cbuf *body, uint8_t **resp, rd *r)
{
	cbuf full = {0};
	cb_i8(&full, 0); /* request header tagged fields */
	cb_put(&full, body->p, body->len);
	send_request(fd, key, 0, key, full.p, full.len);
	free(full.p);
	int32_t len;
	ck_assert_int_eq(w_recv_frame(fd, resp, &len, 1 << 20, WAIT_MS), WIRE_OK);
	r->p = *resp;
	r->len = len;
	r->off = 0;
	ck_assert_int_eq(rd_i32(r), key);
	rd_tags(r);
}

typedef struct upsert {
	const char *user;
	int8_t mechanism;
	int32_t iterations;
	const char *password; /* NULL: a deletion */
} upsert;

static const EVP_MD *md_of(int8_t mechanism) { return mechanism == 2 ? EVP_sha512() : EVP_sha256(); }

/* AlterUserScramCredentials v0 with ops; per user result code into
 * codes/messages (in the answer's order, users in users[]). Returns the
 * number of results. */
static int alter_scram(int fd, const upsert *ops, int nops, char users[][64], int16_t *codes,
		       char messages[][256])
{
	cbuf b = {0};
	int ndel = 0, nup = 0;
	for (int i = 0; i < nops; i++)
		ops[i].password ? nup++ : ndel++;
	cb_uvarint(&b, (uint32_t)ndel + 1);
	for (int i = 0; i < nops; i++) {
		if (ops[i].password)
			continue;
		cb_cstr(&b, ops[i].user, strlen(ops[i].user));
		cb_i8(&b, ops[i].mechanism);
		cb_i8(&b, 0);
	}
	cb_uvarint(&b, (uint32_t)nup + 1);
	for (int i = 0; i < nops; i++) {
		if (!ops[i].password)
			continue;
		uint8_t salt[16], salted[64];
		ck_assert_int_eq(RAND_bytes(salt, sizeof(salt)), 1);
		int kl = ops[i].mechanism == 2 ? 64 : 32;
		ck_assert_int_eq(PKCS5_PBKDF2_HMAC(ops[i].password, (int)strlen(ops[i].password), salt,
						   sizeof(salt), ops[i].iterations > 0 ? ops[i].iterations : 1,
						   md_of(ops[i].mechanism), kl, salted), 1);
		cb_cstr(&b, ops[i].user, strlen(ops[i].user));
		cb_i8(&b, ops[i].mechanism);
		cb_i32(&b, ops[i].iterations);
		cb_cstr(&b, (const char *)salt, sizeof(salt));
		cb_cstr(&b, (const char *)salted, (size_t)kl);
		cb_i8(&b, 0);
	}
	cb_i8(&b, 0);
	uint8_t *resp;
	rd r;
	flexible_call(fd, 51, &b, &resp, &r);
	free(b.p);
	rd_i32(&r); /* throttle */
	int n = (int)rd_uvarint(&r) - 1;
	for (int i = 0; i < n; i++) {
		rd_cstr(&r, users[i], 64);
		codes[i] = rd_i16(&r);
		rd_cstr(&r, messages[i], 256);
		rd_tags(&r);
	}
	free(resp);
	return n;
}

/* The code of user in an alter answer. */
static int16_t code_of(const char *user, int n, char users[][64], const int16_t *codes)
{
	for (int i = 0; i < n; i++)
		if (strcmp(users[i], user) == 0)
			return codes[i];
	ck_abort_msg("no result for user %s", user);
	return -1;
}

/* A connection authenticated with PLAIN as admin. */
static int admin_connection(h_broker *b)
{
	char tok[128];
	auth_result r;
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "admin", "admin-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	return fd;
}

static void create_scram_user(h_broker *b, const char *user, const char *password)
{
	int fd = admin_connection(b);
	upsert ops[] = {{user, 1, 4096, password}, {user, 2, 8192, password}};
	char users[4][64], msgs[4][256];
	int16_t codes[4];
	int n = alter_scram(fd, ops, 2, users, codes, msgs);
	ck_assert_int_eq(n, 1);
	ck_assert_msg(codes[0] == 0, "alter %s: %d %s", user, codes[0], msgs[0]);
	close(fd);
}

START_TEST(test_scram_produce_consume)
{
	h_broker *b = start();
	create_scram_user(b, "carol", "carol-secret");
	produce_consume(b, "SCRAM-SHA-256", "carol", "carol-secret", "scram256-topic");
	produce_consume(b, "SCRAM-SHA-512", "carol", "carol-secret", "scram512-topic");
	expect_client_auth_error(b, "SCRAM-SHA-256", "carol", "wrong", "invalid credentials with SASL "
									"mechanism SCRAM-SHA-256");
	expect_client_auth_error(b, "SCRAM-SHA-512", "dave", "carol-secret",
				 "invalid credentials with SASL mechanism SCRAM-SHA-512");
	/* the credentials survive a restart (the local metadata keeps them) */
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(30000)), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	produce_consume(b, "SCRAM-SHA-512", "carol", "carol-secret", "scram512-again");
	c_stop_broker(b);
}
END_TEST

/* One token: in SaslAuthenticate v1, or raw (size + bytes both ways, after
 * a v0 handshake: r->error stays 0). WIRE_OK, or the receive's error. */
static int exchange(int fd, bool raw, const void *tok, size_t len, auth_result *r)
{
	if (!raw)
		return authenticate(fd, tok, len, r);
	uint8_t frame[1024];
	ck_assert_int_le((int)len, (int)sizeof(frame) - 4);
	w_put32(frame, (int32_t)len);
	memcpy(frame + 4, tok, len);
	ck_assert_int_eq(w_send_all(fd, frame, len + 4, WAIT_MS), 0);
	uint8_t *resp;
	int32_t rlen;
	int rc = w_recv_frame(fd, &resp, &rlen, 1 << 20, WAIT_MS);
	if (rc != WIRE_OK)
		return rc;
	memset(r, 0, sizeof(*r));
	ck_assert_int_le(rlen, (int32_t)sizeof(r->token));
	memcpy(r->token, resp, (size_t)rlen);
	r->token_len = rlen;
	free(resp);
	return WIRE_OK;
}

/* A SCRAM client of our own (RFC 5802), to send what librdkafka would
 * not. step: 0 as it should be; 1 wrong password; 2 a final nonce other
 * than the server's; 3 a proof of the wrong length; 4 as 0 and 5 as 1 in
 * the v0 flow (raw tokens). Returns the error of the final
 * SaslAuthenticate (0: the server's signature is checked too); in the v0
 * flow a refusal is a close without an answer, returned as -1. */
static int16_t scram_login(h_broker *b, const char *mech, const char *user, const char *password,
			   int step, char *message, size_t msgsize)
{
	int8_t m = strcmp(mech, "SCRAM-SHA-512") == 0 ? 2 : 1;
	int kl = m == 2 ? 64 : 32;
	bool raw = step >= 4;
	if (raw)
		step -= 4;
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, raw ? 0 : 1, mech, NULL, 0), 0);
	char first[256];
	snprintf(first, sizeof(first), "n,,n=%s,r=fyko+d2lbbFgONRv9qkxdawL", user);
	auth_result r;
	if (exchange(fd, raw, first, strlen(first), &r) != WIRE_OK) {
		ck_assert_msg(raw, "no answer to the client-first message");
		close(fd);
		return -1;
	}
	if (r.error) {
		snprintf(message, msgsize, "%s", r.message);
		expect_closed(fd, "SCRAM first message refused");
		return r.error;
	}
	/* r=<nonce>,s=<salt>,i=<n> */
	char sf[1024];
	snprintf(sf, sizeof(sf), "%.*s", (int)r.token_len, (const char *)r.token);
	ck_assert_msg(strncmp(sf, "r=fyko+d2lbbFgONRv9qkxdawL", 26) == 0, "server-first %s", sf);
	char *s = strstr(sf, ",s="), *it = strstr(sf, ",i=");
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(it);
	char nonce[512];
	snprintf(nonce, sizeof(nonce), "%.*s", (int)(s - sf - 2), sf + 2);
	uint8_t salt[128];
	int sl = EVP_DecodeBlock(salt, (const uint8_t *)s + 3, (int)(it - s - 3));
	ck_assert_int_gt(sl, 0);
	sl -= (it[-1] == '=') + (it[-2] == '=');
	int iterations = atoi(it + 3);
	uint8_t salted[64], ck[64], sk[64], stored[64], csig[64], ssig[64], proof[64];
	unsigned int ol;
	const char *pw = step == 1 ? "not-the-password" : password;
	ck_assert_int_eq(PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, sl, iterations, md_of(m), kl,
					   salted), 1);
	HMAC(md_of(m), salted, kl, (const uint8_t *)"Client Key", 10, ck, &ol);
	HMAC(md_of(m), salted, kl, (const uint8_t *)"Server Key", 10, sk, &ol);
	EVP_Digest(ck, (size_t)kl, stored, &ol, md_of(m), NULL);
	char without_proof[1024], auth[4096];
	snprintf(without_proof, sizeof(without_proof), "c=biws,r=%s%s", nonce, step == 2 ? "x" : "");
	snprintf(auth, sizeof(auth), "%s,%s,%s", first + 3, sf, without_proof);
	HMAC(md_of(m), stored, kl, (const uint8_t *)auth, strlen(auth), csig, &ol);
	for (int i = 0; i < kl; i++)
		proof[i] = ck[i] ^ csig[i];
	char proof64[128], final[2048];
	EVP_EncodeBlock((uint8_t *)proof64, proof, step == 3 ? kl - 1 : kl);
	snprintf(final, sizeof(final), "%s,p=%s", without_proof, proof64);
	if (exchange(fd, raw, final, strlen(final), &r) != WIRE_OK) {
		ck_assert_msg(raw, "no answer to the client-final message");
		close(fd);
		return -1;
	}
	snprintf(message, msgsize, "%s", r.message);
	if (r.error) {
		expect_closed(fd, "SCRAM final message refused");
		return r.error;
	}
	HMAC(md_of(m), sk, kl, (const uint8_t *)auth, strlen(auth), ssig, &ol);
	char ssig64[128], expect[160];
	EVP_EncodeBlock((uint8_t *)ssig64, ssig, kl);
	snprintf(expect, sizeof(expect), "v=%s", ssig64);
	ck_assert_int_eq(r.token_len, (int32_t)strlen(expect));
	ck_assert_int_eq(memcmp(r.token, expect, strlen(expect)), 0);
	expect_metadata_answered(fd);
	close(fd);
	return 0;
}

START_TEST(test_scram_raw)
{
	h_broker *b = start();
	create_scram_user(b, "erin", "erin-secret");
	char msg[512];
	for (int k = 0; k < 2; k++) {
		const char *mech = k ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
		char generic[200];
		snprintf(generic, sizeof(generic), "Authentication failed during authentication due to "
						   "invalid credentials with SASL mechanism %s", mech);
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 0, msg, sizeof(msg)), 0);
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 1, msg, sizeof(msg)), 58);
		ck_assert_str_eq(msg, generic);
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 2, msg, sizeof(msg)), 58);
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 3, msg, sizeof(msg)), 58);
		ck_assert_int_eq(scram_login(b, mech, "nobody", "erin-secret", 0, msg, sizeof(msg)), 58);
		ck_assert_str_eq(msg, generic);
		/* PLAIN's users are not SCRAM's */
		ck_assert_int_eq(scram_login(b, mech, "alice", "alice-secret", 0, msg, sizeof(msg)), 58);
		/* the v0 flow: raw tokens; a refusal closes without an answer */
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 4, msg, sizeof(msg)), 0);
		ck_assert_int_eq(scram_login(b, mech, "erin", "erin-secret", 5, msg, sizeof(msg)), -1);
		ck_assert_int_eq(scram_login(b, mech, "nobody", "erin-secret", 4, msg, sizeof(msg)), -1);
	}
	/* garbage client-first messages */
	const char *bad[] = {"", "garbage", "n,,n=erin", "y,,n=erin,r=abc", "n,,n=erin,r=a,b",
			     "n,a=other,n=erin,r=abc"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = connect_or_fail(b);
		ck_assert_int_eq(handshake(fd, 1, "SCRAM-SHA-256", NULL, 0), 0);
		auth_result r;
		ck_assert_int_eq(authenticate(fd, bad[i], strlen(bad[i]), &r), WIRE_OK);
		ck_assert_msg(r.error == 58, "\"%s\": error %d", bad[i], r.error);
		expect_closed(fd, bad[i]);
	}
	/* a user named like the authzid is refused with Kafka's message */
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "SCRAM-SHA-256", NULL, 0), 0);
	auth_result r;
	const char *authz = "n,a=mallory,n=erin,r=abc";
	ck_assert_int_eq(authenticate(fd, authz, strlen(authz), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Authentication failed: Client requested an authorization id "
				    "that is different from username");
	expect_closed(fd, "authzid");
	c_stop_broker(b);
}
END_TEST

/* Kafka's validation of AlterUserScramCredentials and the answers of
 * DescribeUserScramCredentials. */
START_TEST(test_scram_admin)
{
	h_broker *b = start();
	int fd = admin_connection(b);
	char users[16][64], msgs[16][256];
	int16_t codes[16];
	int n;
	upsert ops1[] = {
	    {"u1", 1, 4096, "p"},        /* fine */
	    {"u2", 1, 4095, "p"},        /* too few iterations */
	    {"u3", 2, 16385, "p"},       /* too many */
	    {"u4", 3, 4096, "p"},        /* unknown mechanism */
	    {"", 1, 4096, "p"},          /* empty name */
	    {"u5", 1, 4096, "p"},        /* twice */
	    {"u5", 1, 8192, "q"},
	    {"u6", 2, 4096, NULL},       /* deleting what is not there */
	    {"u7", 1, 4096, NULL},       /* delete + upsert of one pair: twice */
	    {"u7", 1, 4096, "p"},
	    {"u8", 2, 16384, "p"},       /* fine, at the upper bound */
	};
	n = alter_scram(fd, ops1, (int)(sizeof(ops1) / sizeof(ops1[0])), users, codes, msgs);
	ck_assert_int_eq(n, 9);
	ck_assert_int_eq(code_of("u1", n, users, codes), 0);
	ck_assert_int_eq(code_of("u2", n, users, codes), 93);
	ck_assert_int_eq(code_of("u3", n, users, codes), 93);
	ck_assert_int_eq(code_of("u4", n, users, codes), 33);
	ck_assert_int_eq(code_of("", n, users, codes), 93);
	ck_assert_int_eq(code_of("u5", n, users, codes), 92);
	ck_assert_int_eq(code_of("u6", n, users, codes), 91);
	ck_assert_int_eq(code_of("u7", n, users, codes), 92);
	ck_assert_int_eq(code_of("u8", n, users, codes), 0);
	for (int i = 0; i < n; i++) {
		if (!strcmp(users[i], "u2"))
			ck_assert_str_eq(msgs[i], "Too few iterations");
		if (!strcmp(users[i], "u3"))
			ck_assert_str_eq(msgs[i], "Too many iterations");
		if (!strcmp(users[i], "u4"))
			ck_assert_str_eq(msgs[i], "Unknown SCRAM mechanism");
		if (!strcmp(users[i], ""))
			ck_assert_str_eq(msgs[i], "Username must not be empty");
		if (!strcmp(users[i], "u5"))
			ck_assert_str_eq(msgs[i], "A user credential cannot be altered twice in the same request");
		if (!strcmp(users[i], "u6"))
			ck_assert_str_eq(msgs[i], "Attempt to delete a user credential that does not exist");
		if (!strcmp(users[i], "u1"))
			ck_assert_str_eq(msgs[i], "(null)");
	}

	/* Describe all: u1 (SHA-256, 4096) and u8 (SHA-512, 16384), sorted */
	cbuf d = {0};
	cb_i8(&d, 0); /* users: null */
	cb_i8(&d, 0);
	uint8_t *resp;
	rd r;
	flexible_call(fd, 50, &d, &resp, &r);
	rd_i32(&r);
	ck_assert_int_eq(rd_i16(&r), 0);
	char s[256];
	rd_cstr(&r, s, sizeof(s));
	ck_assert_int_eq((int)rd_uvarint(&r) - 1, 2);
	const char *want_user[2] = {"u1", "u8"};
	int want_mech[2] = {1, 2}, want_it[2] = {4096, 16384};
	for (int i = 0; i < 2; i++) {
		rd_cstr(&r, s, sizeof(s));
		ck_assert_str_eq(s, want_user[i]);
		ck_assert_int_eq(rd_i16(&r), 0);
		rd_cstr(&r, s, sizeof(s));
		ck_assert_int_eq((int)rd_uvarint(&r) - 1, 1);
		ck_assert_int_eq(r.p[r.off++], want_mech[i]);
		ck_assert_int_eq(rd_i32(&r), want_it[i]);
		rd_tags(&r);
		rd_tags(&r);
	}
	free(resp);

	/* Describe some: a user twice, an unknown one, an empty name */
	d.len = 0;
	cb_uvarint(&d, 5);
	const char *names[] = {"u1", "nobody", "u1", ""};
	for (int i = 0; i < 4; i++) {
		cb_cstr(&d, names[i], strlen(names[i]));
		cb_i8(&d, 0);
	}
	cb_i8(&d, 0);
	flexible_call(fd, 50, &d, &resp, &r);
	free(d.p);
	rd_i32(&r);
	ck_assert_int_eq(rd_i16(&r), 0);
	rd_cstr(&r, s, sizeof(s));
	ck_assert_int_eq((int)rd_uvarint(&r) - 1, 3);
	const char *want[3][3] = {
	    {"u1", "92", "Cannot describe SCRAM credentials for the same user twice in a single request: u1"},
	    {"nobody", "91", "Attempt to describe a user credential that does not exist: nobody"},
	    {"", "91", "Username must not be empty"}};
	for (int i = 0; i < 3; i++) {
		rd_cstr(&r, s, sizeof(s));
		ck_assert_str_eq(s, want[i][0]);
		ck_assert_int_eq(rd_i16(&r), atoi(want[i][1]));
		rd_cstr(&r, s, sizeof(s));
		ck_assert_str_eq(s, want[i][2]);
		ck_assert_int_eq((int)rd_uvarint(&r) - 1, 0);
		rd_tags(&r);
	}
	free(resp);

	/* delete u1's credential: it can no longer log in, and is gone */
	upsert del[] = {{"u1", 1, 0, NULL}};
	n = alter_scram(fd, del, 1, users, codes, msgs);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(codes[0], 0);
	char msg[256];
	ck_assert_int_eq(scram_login(b, "SCRAM-SHA-256", "u1", "p", 0, msg, sizeof(msg)), 58);
	ck_assert_int_eq(scram_login(b, "SCRAM-SHA-512", "u8", "p", 0, msg, sizeof(msg)), 0);
	n = alter_scram(fd, del, 1, users, codes, msgs);
	ck_assert_int_eq(codes[0], 91);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* KIP-368: connections.max.reauth.ms. The steps are timed by sleeps
 * against a session of LIFETIME_MS: the re-authentication half of it in,
 * and the request that must fall inside the second session two thirds of
 * it after that, so each has LIFETIME_MS / 3 or more to spare for a test
 * process held up on a loaded machine (with 1500 ms it was 500 ms). */
#define LIFETIME_MS 3000
#define STR_(x) #x
#define STR(x) STR_(x)

START_TEST(test_reauthentication)
{
	h_broker *b = c_start_broker((const char *const[]){SASL_OVERRIDES,
							    "connections.max.reauth.ms=" STR(LIFETIME_MS),
							    NULL});
	char tok[128];
	auth_result r;
	int64_t lifetime = LIFETIME_MS;

	/* the lifetime is told; past it, any request but a handshake closes */
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.session_lifetime_ms, lifetime);
	expect_metadata_answered(fd);
	usleep((LIFETIME_MS + 200) * 1000);
	uint8_t body[4];
	w_put32(body, 0);
	send_request(fd, 3, 1, 3, body, sizeof(body));
	expect_closed(fd, "request after the session expired");

	/* re-authentication before the end keeps the connection past it */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	usleep(LIFETIME_MS / 2 * 1000);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.session_lifetime_ms, lifetime);
	usleep(LIFETIME_MS * 2 / 3 * 1000); /* past the first session's end, inside the
					     * second */
	expect_metadata_answered(fd);
	/* a second after the last re-authentication began, another may
	 * begin; one less than a second after that is no re-authentication
	 * (Kafka's one a second): ILLEGAL_SASL_STATE, and the connection
	 * stays */
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 34);
	expect_metadata_answered(fd);
	close(fd);

	/* re-authenticating as someone else fails and closes */
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "admin", "admin-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "Cannot change principals during re-authentication from "
				    "User.alice: User.admin");
	expect_closed(fd, "re-authentication as another user");

	/* ... or with another mechanism */
	create_scram_user(b, "alice", "alice-secret");
	fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(handshake(fd, 1, "SCRAM-SHA-256", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, "n,,n=alice,r=abc", 16, &r), WIRE_OK);
	ck_assert_int_eq(r.error, 58);
	ck_assert_str_eq(r.message, "SASL mechanism 'SCRAM-SHA-256' requested by client is not "
				    "supported for re-authentication of mechanism 'PLAIN'");
	expect_closed(fd, "re-authentication with another mechanism");

	/* librdkafka 2.0 does not re-authenticate: its connections are
	 * closed at the end of each session and it reconnects; producing
	 * goes on across several sessions */
	const char *kv[] = {"security.protocol", "sasl_plaintext", "sasl.mechanisms", "SCRAM-SHA-512",
			    "sasl.username", "alice", "sasl.password", "alice-secret", NULL};
	rd_kafka_t *p = c_producer(b, kv);
	ck_assert_int_eq(c_create_topic(p, "reauth", 1, 1, NULL, NULL, 0), 0);
	for (int i = 0; i < 8; i++) {
		c_delivery d;
		c_msg m = {.topic = "reauth", .partition = 0, .value = "v", .value_len = 1};
		c_produce(p, &m, &d);
		c_flush(p, h_scaled_ms(20000));
		ck_assert_msg(d.done && d.err == 0, "record %d: %s", i, rd_kafka_err2str(d.err));
		ck_assert_int_eq(d.offset, i);
		usleep(LIFETIME_MS / 3 * 1000);
	}
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* connections.max.reauth.ms per listener and mechanism, as Kafka reads
 * it: the mechanism's key over the listener's over the broker's. */
static int64_t plain_lifetime(const char *const *overrides)
{
	const char *ov[16];
	int n = 0;
	const char *base[] = {SASL_OVERRIDES, NULL};
	for (int i = 0; base[i]; i++)
		ov[n++] = base[i];
	for (int i = 0; overrides[i]; i++)
		ov[n++] = overrides[i];
	ov[n] = NULL;
	h_broker *b = c_start_broker(ov);
	char tok[64];
	auth_result r;
	int fd = connect_or_fail(b);
	ck_assert_int_eq(handshake(fd, 1, "PLAIN", NULL, 0), 0);
	ck_assert_int_eq(authenticate(fd, tok, plain_token(tok, "alice", "alice-secret"), &r), WIRE_OK);
	ck_assert_int_eq(r.error, 0);
	close(fd);
	c_stop_broker(b);
	return r.session_lifetime_ms;
}

START_TEST(test_reauth_keys)
{
	ck_assert_int_eq(plain_lifetime((const char *const[]){"connections.max.reauth.ms=5000", NULL}),
			 5000);
	ck_assert_int_eq(plain_lifetime((const char *const[]){
			     "connections.max.reauth.ms=5000",
			     "listener.name.plaintext.connections.max.reauth.ms=6000", NULL}),
			 6000);
	ck_assert_int_eq(plain_lifetime((const char *const[]){
			     "listener.name.plaintext.connections.max.reauth.ms=6000",
			     "listener.name.plaintext.plain.connections.max.reauth.ms=7000",
			     "listener.name.plaintext.scram-sha-256.connections.max.reauth.ms=8000",
			     NULL}),
			 7000);
	ck_assert_int_eq(plain_lifetime((const char *const[]){
			     "listener.name.plaintext.scram-sha-256.connections.max.reauth.ms=8000",
			     NULL}),
			 0);
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
	/* the inter-broker listener (PLAINTEXT here) uses SASL: its mechanism
	 * (Kafka's default GSSAPI) must be served and enabled, and the JAAS
	 * entry must name this broker's own user */
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN", PLAIN_JAAS, NULL},
		       "sasl.mechanism.inter.broker.protocol: GSSAPI is not supported");
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN", PLAIN_JAAS,
					     "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256", NULL},
		       "sasl.mechanism.inter.broker.protocol must be included in "
		       "sasl.enabled.mechanisms when SASL is used for inter-broker communication");
	expect_refused((const char *const[]){"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
					     "sasl.enabled.mechanisms=PLAIN",
					     "sasl.mechanism.inter.broker.protocol=PLAIN",
					     "listener.name.plaintext.plain.sasl.jaas.config="
					     "org.apache.kafka.common.security.plain.PlainLoginModule "
					     "required user_a=\"b\";",
					     NULL},
		       "the username and password options are needed");
	expect_refused((const char *const[]){"inter.broker.listener.name=PLAINTEXT",
					     "security.inter.broker.protocol=PLAINTEXT", NULL},
		       "Only one of inter.broker.listener.name and security.inter.broker.protocol "
		       "should be set.");
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
	    {"scram_produce_consume", test_scram_produce_consume},
	    {"scram_raw", test_scram_raw},
	    {"scram_admin", test_scram_admin},
	    {"reauthentication", test_reauthentication},
	    {"reauth_keys", test_reauth_keys},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return c_run_suite(s);
}
