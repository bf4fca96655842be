/*
 * sasl.c - SASL configuration per listener and the per-connection state
 * machine of Kafka's SaslServerAuthenticator (sasl.h), with the PLAIN and
 * SCRAM servers.
 */
#include "broker/security/sasl.h"

#include <ctype.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/conn.h"
#include "broker/errbuf.h"
#include "broker/security/plain.h"
#include "broker/security/scram.h"
#include "protocol/err.h"

#define API_SASL_HANDSHAKE 17
#define API_SASL_AUTHENTICATE 36
#define API_API_VERSIONS 18
#define MIN_REAUTH_INTERVAL_MS 1000 /* Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS */
#define SERVER_NONCE_LEN 32
#define PLAIN_MODULE "org.apache.kafka.common.security.plain.PlainLoginModule"
#define SCRAM_MODULE "org.apache.kafka.common.security.scram.ScramLoginModule"

/* ---- configuration ---- */

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* listener.name.<l>.<mech>.sasl.jaas.config, exactly (Kafka reads no other
 * form for a broker). */
static const char *jaas_text(const brk_config *cfg, const char *listener, const char *mech)
{
	char key[256];
	snprintf(key, sizeof(key), "listener.name.%s.%s.sasl.jaas.config", listener, mech);
	lower(key);
	return brk_config_security_get(cfg, NULL, key);
}

static int listener_init(brk_sasl_listener *sl, const brk_config *cfg, const brk_listener *l,
			 FILE *warn, char *err, size_t errsize)
{
	snprintf(sl->name, sizeof(sl->name), "%s", l->name);
	sl->sasl = l->security_protocol == BRK_SEC_SASL_PLAINTEXT ||
		   l->security_protocol == BRK_SEC_SASL_SSL;
	if (!sl->sasl)
		return 0;
	const char *list = brk_config_security_get(cfg, l->name, "sasl.enabled.mechanisms");
	if (!list)
		list = "GSSAPI"; /* Kafka's default */
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *s = p;
		while (*p && *p != ',')
			p++;
		const char *e = p;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s)
			continue;
		int m = brk_sasl_mechanism_of(s, (size_t)(e - s));
		if (!m)
			return brk_fail(err, errsize, "listener %s (%s): SASL mechanism %.*s is not supported "
				    "(sasl.enabled.mechanisms is %s%s); set sasl.enabled.mechanisms or "
				    "listener.name.%s.sasl.enabled.mechanisms to PLAIN, SCRAM-SHA-256 "
				    "and/or SCRAM-SHA-512", l->name,
				    brk_security_protocol_name(l->security_protocol), (int)(e - s), s, list,
				    brk_config_security_get(cfg, l->name, "sasl.enabled.mechanisms") ? ""
												   : ", Kafka's default",
				    l->name);
		if (!(sl->enabled & m)) {
			sl->enabled |= m;
			sl->order[sl->norder++] = m;
		}
	}
	if (!sl->enabled)
		return brk_fail(err, errsize, "listener %s (%s): sasl.enabled.mechanisms is empty", l->name,
			    brk_security_protocol_name(l->security_protocol));
	/* KIP-368's lifetime, per mechanism (Kafka's SaslChannelBuilder). */
	for (int k = 0; k < 3; k++) {
		char key[128], mech[32];
		snprintf(mech, sizeof(mech), "%s", brk_sasl_mechanism_name(k == 0 ? BRK_SASL_PLAIN
						 : k == 1 ? BRK_SASL_SCRAM_SHA_256 : BRK_SASL_SCRAM_SHA_512));
		lower(mech);
		snprintf(key, sizeof(key), "listener.name.%s.%s.connections.max.reauth.ms", l->name, mech);
		lower(key);
		const char *v = brk_config_security_get(cfg, NULL, key);
		if (!v) {
			snprintf(key, sizeof(key), "listener.name.%s.connections.max.reauth.ms", l->name);
			lower(key);
			v = brk_config_security_get(cfg, NULL, key);
		}
		sl->reauth_ms[k] = cfg->connections_max_reauth_ms;
		if (v) {
			char *end;
			long long x = strtoll(v, &end, 10);
			if (*v == '\0' || *end != '\0')
				return brk_fail(err, errsize, "%s: \"%s\" is not a number of ms", key, v);
			sl->reauth_ms[k] = x;
		}
	}
	for (int i = 0; i < sl->norder; i++) {
		int m = sl->order[i];
		char mech[32];
		snprintf(mech, sizeof(mech), "%s", brk_sasl_mechanism_name(m));
		lower(mech);
		const char *text = jaas_text(cfg, l->name, mech);
		if (!text) {
			char lname[32];
			snprintf(lname, sizeof(lname), "%s", l->name);
			lower(lname);
			if (warn && (brk_config_security_get(cfg, NULL, "sasl.jaas.config") ||
				     brk_config_security_get(cfg, l->name, "sasl.jaas.config")))
				fprintf(warn, "samsa: warning: sasl.jaas.config is ignored for a broker; "
					      "prefix it with the listener and mechanism "
					      "(listener.name.%s.%s.sasl.jaas.config), as Kafka requires\n",
					lname, mech);
			return brk_fail(err, errsize, "listener %s: SASL mechanism %s is enabled but "
				    "listener.name.%s.%s.sasl.jaas.config is not set", l->name,
				    brk_sasl_mechanism_name(m), lname, mech);
		}
		brk_jaas *j = m == BRK_SASL_PLAIN ? &sl->plain_jaas
			      : &sl->scram_jaas[m == BRK_SASL_SCRAM_SHA_256 ? 0 : 1];
		char jerr[200];
		if (brk_jaas_parse(text, j, jerr, sizeof(jerr)) < 0)
			return brk_fail(err, errsize, "listener.name.%s.%s.sasl.jaas.config: %s", sl->name,
				    mech, jerr);
		const char *module = m == BRK_SASL_PLAIN ? PLAIN_MODULE : SCRAM_MODULE;
		const brk_jaas_entry *e = brk_jaas_find(j, module);
		if (!e)
			return brk_fail(err, errsize, "listener.name.%s.%s.sasl.jaas.config: no %s entry", sl->name,
				    mech, module);
		if (m == BRK_SASL_PLAIN)
			sl->plain = e;
	}
	return 0;
}

/* The inter-broker listener (sasl.h), or NULL on a bad
 * inter.broker.listener.name / security.inter.broker.protocol (err set). */
static const brk_listener *inter_broker_listener(const brk_config *cfg, char *err, size_t errsize)
{
	const char *name = brk_config_security_get(cfg, NULL, "inter.broker.listener.name");
	const char *proto = brk_config_security_get(cfg, NULL, "security.inter.broker.protocol");
	if (name && proto) {
		brk_fail(err, errsize, "Only one of inter.broker.listener.name and "
				   "security.inter.broker.protocol should be set.");
		return NULL;
	}
	const char *want = name ? name : proto ? proto : "PLAINTEXT";
	for (int i = 0; i < cfg->nlisteners; i++)
		if (strcasecmp(cfg->listeners[i].name, want) == 0)
			return &cfg->listeners[i];
	if (name) {
		brk_fail(err, errsize, "inter.broker.listener.name %s is not one of the listeners", name);
		return NULL;
	}
	return cfg->nlisteners > 0 ? &cfg->listeners[0] : NULL;
}

/* This broker's own credentials on a SASL inter-broker listener. */
static int inter_broker_init(brk_sasl *s, const brk_config *cfg, char *err, size_t errsize)
{
	const brk_listener *ib = inter_broker_listener(cfg, err, errsize);
	if (!ib)
		return cfg->nlisteners > 0 ? -1 : 0;
	const brk_sasl_listener *sl = NULL;
	for (int i = 0; i < s->nlisteners; i++)
		if (strcmp(s->listeners[i].name, ib->name) == 0)
			sl = &s->listeners[i];
	if (!sl || !sl->sasl)
		return 0;
	const char *mech = brk_config_security_get(cfg, NULL, "sasl.mechanism.inter.broker.protocol");
	if (!mech)
		mech = "GSSAPI"; /* Kafka's default */
	int m = brk_sasl_mechanism_of(mech, strlen(mech));
	if (!m)
		return brk_fail(err, errsize, "sasl.mechanism.inter.broker.protocol: %s is not supported "
			    "(the inter-broker listener %s uses SASL); set it to PLAIN, SCRAM-SHA-256 or "
			    "SCRAM-SHA-512", mech, ib->name);
	if (!(sl->enabled & m))
		return brk_fail(err, errsize, "sasl.mechanism.inter.broker.protocol must be included in "
			    "sasl.enabled.mechanisms when SASL is used for inter-broker communication");
	const brk_jaas *j = m == BRK_SASL_PLAIN ? &sl->plain_jaas
			    : &sl->scram_jaas[m == BRK_SASL_SCRAM_SHA_256 ? 0 : 1];
	const brk_jaas_entry *e = brk_jaas_find(j, m == BRK_SASL_PLAIN ? PLAIN_MODULE : SCRAM_MODULE);
	const char *user = e ? brk_jaas_option_get(e, "username") : NULL;
	const char *password = e ? brk_jaas_option_get(e, "password") : NULL;
	char lname[32], lmech[32];
	snprintf(lname, sizeof(lname), "%s", ib->name);
	snprintf(lmech, sizeof(lmech), "%s", mech);
	lower(lname);
	lower(lmech);
	if (!user || !password)
		return brk_fail(err, errsize, "listener.name.%s.%s.sasl.jaas.config: the username and "
			    "password options are needed (this broker's own credentials on the "
			    "inter-broker listener)", lname, lmech);
	if (strlen(user) >= sizeof(s->inter_broker.username) ||
	    strlen(password) >= sizeof(s->inter_broker.password))
		return brk_fail(err, errsize, "listener.name.%s.%s.sasl.jaas.config: username or password "
			    "too long", lname, lmech);
	s->inter_broker_sasl = true;
	s->inter_broker.mechanism = m;
	snprintf(s->inter_broker.username, sizeof(s->inter_broker.username), "%s", user);
	snprintf(s->inter_broker.password, sizeof(s->inter_broker.password), "%s", password);
	return 0;
}

int brk_sasl_init(brk_sasl *s, const brk_config *cfg, FILE *warn, char *err, size_t errsize)
{
	memset(s, 0, sizeof(*s));
	s->max_reauth_ms = cfg->connections_max_reauth_ms;
	s->max_receive_size = 524288;
	const char *mr = brk_config_security_get(cfg, NULL, "sasl.server.max.receive.size");
	if (mr) {
		char *end;
		long v = strtol(mr, &end, 10);
		if (*mr == '\0' || *end != '\0' || v < 1 || v > INT32_MAX)
			return brk_fail(err, errsize, "sasl.server.max.receive.size: \"%s\" is not a positive int", mr);
		s->max_receive_size = (int32_t)v;
	}
	for (int i = 0; i < cfg->nlisteners; i++) {
		s->nlisteners++;
		if (listener_init(&s->listeners[i], cfg, &cfg->listeners[i], warn, err, errsize) < 0) {
			brk_sasl_free(s);
			return -1;
		}
	}
	if (inter_broker_init(s, cfg, err, errsize) < 0) {
		brk_sasl_free(s);
		return -1;
	}
	return 0;
}

void brk_sasl_free(brk_sasl *s)
{
	for (int i = 0; i < s->nlisteners; i++) {
		brk_jaas_free(&s->listeners[i].plain_jaas);
		brk_jaas_free(&s->listeners[i].scram_jaas[0]);
		brk_jaas_free(&s->listeners[i].scram_jaas[1]);
	}
	s->nlisteners = 0;
	OPENSSL_cleanse(&s->inter_broker, sizeof(s->inter_broker));
	s->inter_broker_sasl = false;
}

void brk_sasl_set_scram_lookup(brk_sasl *s, brk_scram_lookup_fn fn, void *arg)
{
	s->scram_lookup = fn;
	s->scram_lookup_arg = arg;
}

/* ---- sessions ---- */

typedef enum {
	ST_HANDSHAKE_OR_VERSIONS,
	ST_HANDSHAKE,
	ST_AUTHENTICATE,
	ST_COMPLETE,
	ST_FAILED,
} sasl_state;

/* SCRAM exchange in progress. */
typedef struct scram_exchange {
	int step; /* 0: client-first expected, 1: client-final */
	brk_scram_credential cred;
	char *client_first_bare;
	size_t client_first_bare_len;
	char server_first[256];
	size_t server_first_len;
	char nonce[256 + SERVER_NONCE_LEN + 1]; /* client + server nonce */
	size_t nonce_len;
	char user[BRK_SCRAM_MAX_USER];
} scram_exchange;

struct brk_sasl_session {
	const brk_sasl *sasl;
	const brk_sasl_listener *sl;
	sasl_state state;
	bool raw;            /* v0 handshake: raw tokens */
	int mechanism;       /* of the exchange in progress / done */
	bool reauth;         /* the exchange re-authenticates */
	int prev_mechanism;
	bool authenticated;  /* a session completed once (principal set) */
	int64_t expires;     /* monotonic ms the session ends; 0: never */
	int64_t last_reauth; /* monotonic ms the last re-authentication began; 0: none */
	scram_exchange *scram;
};

bool brk_sasl_listener_needs_session(const brk_listener *l)
{
	return l && (l->security_protocol == BRK_SEC_SASL_PLAINTEXT ||
		     l->security_protocol == BRK_SEC_SASL_SSL);
}

brk_sasl_session *brk_sasl_session_new(const brk_sasl *s, const brk_listener *l)
{
	if (!brk_sasl_listener_needs_session(l))
		return NULL;
	const brk_sasl_listener *sl = NULL;
	for (int i = 0; i < s->nlisteners; i++)
		if (s->listeners[i].sasl && strcmp(s->listeners[i].name, l->name) == 0)
			sl = &s->listeners[i];
	if (!sl)
		return NULL;
	brk_sasl_session *ss = calloc(1, sizeof(*ss));
	if (!ss)
		return NULL;
	ss->sasl = s;
	ss->sl = sl;
	ss->state = ST_HANDSHAKE_OR_VERSIONS;
	return ss;
}

static void scram_end(brk_sasl_session *ss)
{
	if (!ss->scram)
		return;
	free(ss->scram->client_first_bare);
	OPENSSL_cleanse(ss->scram, sizeof(*ss->scram));
	free(ss->scram);
	ss->scram = NULL;
}

void brk_sasl_session_free(brk_sasl_session *ss)
{
	if (!ss)
		return;
	scram_end(ss);
	free(ss);
}

int32_t brk_sasl_max_frame(const brk_sasl_session *ss, int32_t max)
{
	if (!ss || ss->state == ST_COMPLETE)
		return max;
	return ss->sasl->max_receive_size < max ? ss->sasl->max_receive_size : max;
}

bool brk_sasl_expects_raw(const brk_sasl_session *ss)
{
	return ss && ss->state == ST_AUTHENTICATE && ss->raw;
}

/* Whether a SaslHandshake now would begin re-authentication (Kafka's
 * KafkaChannel.maybeBeginServerReauthentication). */
static bool reauth_possible(const brk_sasl_session *ss, int64_t mono_ms)
{
	return ss->state == ST_COMPLETE && ss->expires != 0 &&
	       (ss->last_reauth == 0 || mono_ms - ss->last_reauth >= MIN_REAUTH_INTERVAL_MS);
}

int brk_sasl_gate(brk_sasl_session *ss, int16_t api_key, bool version_served, int64_t mono_ms,
		  char *why, size_t whysize)
{
	if (!ss)
		return BRK_SASL_DISPATCH;
	switch (ss->state) {
	case ST_COMPLETE:
		if (api_key == API_SASL_HANDSHAKE && reauth_possible(ss, mono_ms))
			return BRK_SASL_DISPATCH;
		if (ss->expires && mono_ms >= ss->expires) {
			snprintf(why, whysize, "SASL session expired (connections.max.reauth.ms) and "
					       "not re-authenticated");
			return BRK_SASL_REFUSE;
		}
		return BRK_SASL_DISPATCH;
	case ST_HANDSHAKE_OR_VERSIONS:
		/* Kafka: one ApiVersions, first; a second closes. One of a
		 * version not served is answered UNSUPPORTED_VERSION and may
		 * be sent again (KIP-511). */
		if (api_key == API_API_VERSIONS && version_served)
			ss->state = ST_HANDSHAKE;
		if (api_key == API_API_VERSIONS || api_key == API_SASL_HANDSHAKE ||
		    api_key == API_SASL_AUTHENTICATE)
			return BRK_SASL_DISPATCH;
		break;
	case ST_HANDSHAKE:
	case ST_AUTHENTICATE:
		if (api_key == API_SASL_HANDSHAKE || api_key == API_SASL_AUTHENTICATE)
			return BRK_SASL_DISPATCH;
		break;
	case ST_FAILED:
		snprintf(why, whysize, "SASL authentication failed");
		return BRK_SASL_REFUSE;
	}
	snprintf(why, whysize, "unexpected request (API key %d) during SASL %s", (int)api_key,
		 ss->state == ST_AUTHENTICATE ? "authentication" : "handshake");
	return BRK_SASL_REFUSE;
}

int brk_sasl_enabled(const brk_sasl_session *ss, const char *names[3])
{
	if (!ss)
		return 0;
	for (int i = 0; i < ss->sl->norder; i++)
		names[i] = brk_sasl_mechanism_name(ss->sl->order[i]);
	return ss->sl->norder;
}

static void result_init(brk_sasl_result *res)
{
	memset(res, 0, sizeof(*res));
}

static void set_message(brk_sasl_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
}

void brk_sasl_handshake(brk_sasl_session *ss, int16_t version, const char *mechanism, size_t len,
			int64_t mono_ms, brk_sasl_result *res)
{
	result_init(res);
	if (!ss || (ss->state == ST_COMPLETE && !reauth_possible(ss, mono_ms))) {
		/* Kafka's KafkaApis.handleSaslHandshakeRequest: a handshake
		 * that reaches the API layer is out of place. */
		res->error_code = KERR_ILLEGAL_SASL_STATE;
		return;
	}
	if (ss->state == ST_AUTHENTICATE || ss->state == ST_FAILED) {
		/* Kafka: "Unexpected Kafka request of type SASL_HANDSHAKE
		 * during SASL authentication", answered, then closed. */
		res->error_code = KERR_ILLEGAL_SASL_STATE;
		res->close = true;
		ss->state = ST_FAILED;
		return;
	}
	if (ss->state == ST_COMPLETE) {
		ss->reauth = true;
		ss->prev_mechanism = ss->mechanism;
		ss->last_reauth = mono_ms;
		if (version < 1) { /* re-authentication needs SaslAuthenticate */
			res->error_code = KERR_ILLEGAL_SASL_STATE;
			res->close = true;
			ss->state = ST_FAILED;
			return;
		}
	}
	int m = brk_sasl_mechanism_of(mechanism, len);
	if (!m || !(ss->sl->enabled & m)) {
		res->error_code = KERR_UNSUPPORTED_SASL_MECHANISM;
		res->close = true;
		ss->state = ST_FAILED;
		return;
	}
	ss->mechanism = m;
	ss->raw = version == 0;
	ss->state = ST_AUTHENTICATE;
	scram_end(ss);
	res->error_code = KERR_NONE;
}

/* ---- mechanisms ---- */

enum { STEP_CONTINUE, STEP_COMPLETE, STEP_FAIL };

/* The generic failure message of Kafka's SaslServerAuthenticator for a
 * SaslException. */
static void invalid_credentials(const brk_sasl_session *ss, brk_sasl_result *res)
{
	set_message(res, "Authentication failed during %s due to invalid credentials with SASL "
			 "mechanism %s", ss->reauth ? "re-authentication" : "authentication",
		    brk_sasl_mechanism_name(ss->mechanism));
}

/* Constant-time equality of two byte strings (length is not hidden). */
static bool equal_ct(const void *a, size_t alen, const void *b, size_t blen)
{
	if (alen != blen)
		return false;
	return alen == 0 || CRYPTO_memcmp(a, b, alen) == 0;
}

static int plain_step(brk_sasl_session *ss, const uint8_t *tok, size_t len, char *user,
		      size_t usersize, brk_sasl_result *res)
{
	brk_plain_token pt;
	int bad_format;
	if (brk_plain_parse(tok, len, &pt, &bad_format, res->message, sizeof(res->message)) < 0) {
		if (bad_format)
			invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	/* PlainServerCallbackHandler: the user_<name> option of the JAAS
	 * entry is the password. */
	const char *expected = NULL;
	if (pt.username_len < 200) {
		char opt[210];
		snprintf(opt, sizeof(opt), "user_%.*s", (int)pt.username_len, pt.username);
		if (strlen(opt) == 5 + pt.username_len) /* no NUL inside the name */
			expected = brk_jaas_option_get(ss->sl->plain, opt);
	}
	bool ok = expected && equal_ct(expected, strlen(expected), pt.password, pt.password_len);
	if (!ok || pt.username_len + 1 > usersize) {
		set_message(res, "Authentication failed: Invalid username or password");
		return STEP_FAIL;
	}
	memcpy(user, pt.username, pt.username_len);
	user[pt.username_len] = '\0';
	return STEP_COMPLETE;
}

static int scram_first(brk_sasl_session *ss, const uint8_t *tok, size_t len, brk_sasl_result *res)
{
	brk_scram_client_first cf;
	if (brk_scram_parse_client_first(tok, len, &cf) < 0) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	scram_exchange *x = calloc(1, sizeof(*x));
	if (!x) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	ss->scram = x;
	snprintf(x->user, sizeof(x->user), "%s", cf.username);
	const brk_sasl *s = ss->sasl;
	/* Delegation tokens (tokenauth=true) are not served: no token
	 * matches, as in Kafka with none created. */
	if (cf.token_auth || !s->scram_lookup ||
	    s->scram_lookup(s->scram_lookup_arg, cf.username, ss->mechanism, &x->cred) < 0 ||
	    x->cred.key_len != brk_scram_key_len(ss->mechanism) ||
	    x->cred.iterations < BRK_SCRAM_MIN_ITERATIONS) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	if (cf.authzid_len && (cf.authzid_len != strlen(cf.username) ||
			       memcmp(cf.authzid, cf.username, cf.authzid_len) != 0)) {
		set_message(res, "Authentication failed: Client requested an authorization id that "
				 "is different from username");
		return STEP_FAIL;
	}
	if (cf.nonce_len > 256) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	/* Server nonce: printable, no ',' (RFC 5802). */
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	uint8_t rnd[SERVER_NONCE_LEN];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	memcpy(x->nonce, cf.nonce, cf.nonce_len);
	for (size_t i = 0; i < SERVER_NONCE_LEN; i++)
		x->nonce[cf.nonce_len + i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	x->nonce_len = cf.nonce_len + SERVER_NONCE_LEN;
	char salt[4 * (BRK_SCRAM_MAX_SALT / 3 + 1) + 1];
	brk_base64_encode(x->cred.salt, x->cred.salt_len, salt);
	int n = snprintf((char *)res->token, sizeof(res->token), "r=%.*s,s=%s,i=%d",
			 (int)x->nonce_len, x->nonce, salt, (int)x->cred.iterations);
	if (n < 0 || (size_t)n >= sizeof(res->token) || (size_t)n >= sizeof(x->server_first)) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	memcpy(x->server_first, res->token, (size_t)n);
	x->server_first_len = (size_t)n;
	res->token_len = (size_t)n;
	x->client_first_bare = malloc(cf.bare_len ? cf.bare_len : 1);
	if (!x->client_first_bare) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	memcpy(x->client_first_bare, cf.bare, cf.bare_len);
	x->client_first_bare_len = cf.bare_len;
	x->step = 1;
	return STEP_CONTINUE;
}

static int scram_final(brk_sasl_session *ss, const uint8_t *tok, size_t len, char *user,
		       size_t usersize, brk_sasl_result *res)
{
	scram_exchange *x = ss->scram;
	brk_scram_client_final cf;
	if (brk_scram_parse_client_final(tok, len, &cf) < 0) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	/* Kafka's rule: the final nonce ends with the server-first nonce
	 * (RFC 5802 wants it equal; librdkafka sends the client nonce
	 * twice, and Kafka accepts that). */
	if (cf.nonce_len < x->nonce_len ||
	    !equal_ct(cf.nonce + cf.nonce_len - x->nonce_len, x->nonce_len, x->nonce, x->nonce_len)) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
	size_t alen = x->client_first_bare_len + 1 + x->server_first_len + 1 + cf.without_proof_len;
	char *am = malloc(alen);
	if (!am) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	size_t o = 0;
	memcpy(am + o, x->client_first_bare, x->client_first_bare_len);
	o += x->client_first_bare_len;
	am[o++] = ',';
	memcpy(am + o, x->server_first, x->server_first_len);
	o += x->server_first_len;
	am[o++] = ',';
	memcpy(am + o, cf.without_proof, cf.without_proof_len);
	bool ok = brk_scram_verify_proof(ss->mechanism, &x->cred, am, alen, cf.proof, cf.proof_len);
	uint8_t sig[BRK_SCRAM_MAX_KEY];
	int rc = ok ? brk_scram_hmac(ss->mechanism, x->cred.server_key, x->cred.key_len, am, alen, sig)
		    : -1;
	free(am);
	if (!ok || rc < 0 || strlen(x->user) + 1 > usersize) {
		invalid_credentials(ss, res);
		return STEP_FAIL;
	}
	char sig64[4 * (BRK_SCRAM_MAX_KEY / 3 + 1) + 1];
	brk_base64_encode(sig, x->cred.key_len, sig64);
	res->token_len = (size_t)snprintf((char *)res->token, sizeof(res->token), "v=%s", sig64);
	memcpy(user, x->user, strlen(x->user) + 1); /* fits: checked above */
	return STEP_COMPLETE;
}

/* One token of the exchange; *user is set on STEP_COMPLETE. */
static int mechanism_step(brk_sasl_session *ss, const uint8_t *tok, size_t len, char *user,
			  size_t usersize, brk_sasl_result *res)
{
	if (ss->mechanism == BRK_SASL_PLAIN)
		return plain_step(ss, tok, len, user, usersize, res);
	if (!ss->scram || ss->scram->step == 0)
		return scram_first(ss, tok, len, res);
	return scram_final(ss, tok, len, user, usersize, res);
}

/* Drive the exchange with one token: result in res (res->close on
 * failure). */
static void exchange(brk_sasl_session *ss, brk_conn *c, const uint8_t *tok, size_t len,
		     int64_t mono_ms, brk_sasl_result *res)
{
	char user[BRK_PRINCIPAL_MAX - 5];
	if (ss->reauth && ss->mechanism != ss->prev_mechanism) {
		set_message(res, "SASL mechanism '%s' requested by client is not supported for "
				 "re-authentication of mechanism '%s'", brk_sasl_mechanism_name(ss->mechanism),
			    brk_sasl_mechanism_name(ss->prev_mechanism));
		res->error_code = KERR_SASL_AUTHENTICATION_FAILED;
		res->close = true;
		ss->state = ST_FAILED;
		scram_end(ss);
		return;
	}
	int step = mechanism_step(ss, tok, len, user, sizeof(user), res);
	if (step == STEP_CONTINUE)
		return;
	scram_end(ss);
	if (step == STEP_COMPLETE) {
		char principal[BRK_PRINCIPAL_MAX];
		snprintf(principal, sizeof(principal), "User:%s", user);
		if (ss->reauth && strcmp(principal, brk_conn_principal(c)) != 0) {
			/* Kafka writes each as <type>.<name> here */
			char from[BRK_PRINCIPAL_MAX], to[BRK_PRINCIPAL_MAX];
			snprintf(from, sizeof(from), "%s", brk_conn_principal(c));
			snprintf(to, sizeof(to), "%s", principal);
			char *colon = strchr(from, ':');
			if (colon)
				*colon = '.';
			to[4] = '.';
			set_message(res, "Cannot change principals during re-authentication from %s: %s",
				    from, to);
			step = STEP_FAIL;
		} else if (brk_conn_set_principal(c, principal) < 0) {
			invalid_credentials(ss, res);
			step = STEP_FAIL;
		}
	}
	if (step == STEP_FAIL) {
		res->error_code = KERR_SASL_AUTHENTICATION_FAILED;
		res->token_len = 0;
		res->close = true;
		ss->state = ST_FAILED;
		return;
	}
	ss->state = ST_COMPLETE;
	ss->authenticated = true;
	ss->reauth = false;
	int mi = ss->mechanism == BRK_SASL_PLAIN ? 0 : ss->mechanism == BRK_SASL_SCRAM_SHA_256 ? 1 : 2;
	int64_t life = ss->sl->reauth_ms[mi] > 0 ? ss->sl->reauth_ms[mi] : 0;
	ss->expires = life ? mono_ms + life : 0;
	res->session_lifetime_ms = life;
}

void brk_sasl_authenticate(brk_sasl_session *ss, brk_conn *c, int16_t version,
			   const uint8_t *token, size_t len, int64_t mono_ms, brk_sasl_result *res)
{
	(void)version;
	result_init(res);
	if (!ss || ss->state == ST_COMPLETE) {
		/* Kafka's KafkaApis.handleSaslAuthenticateRequest. */
		res->error_code = KERR_ILLEGAL_SASL_STATE;
		set_message(res, "SaslAuthenticate request received after successful authentication");
		return;
	}
	if (ss->state != ST_AUTHENTICATE || ss->raw) {
		res->error_code = KERR_ILLEGAL_SASL_STATE;
		set_message(res, "Unexpected SaslAuthenticate request during SASL %s",
			    ss->state == ST_AUTHENTICATE ? "authentication (v0 handshake: raw tokens expected)"
							 : "handshake");
		res->close = true;
		ss->state = ST_FAILED;
		return;
	}
	exchange(ss, c, token, len, mono_ms, res);
}

int brk_sasl_raw_token(brk_sasl_session *ss, brk_conn *c, const uint8_t *token, size_t len,
		       proto_writer *out, char *why, size_t whysize)
{
	brk_sasl_result res;
	result_init(&res);
	exchange(ss, c, token, len, brk_mono_ms(), &res);
	if (res.close) {
		snprintf(why, whysize, "SASL authentication failed: %s", res.message);
		return -1;
	}
	proto_write_raw(out, res.token, res.token_len);
	return out->err ? (snprintf(why, whysize, "out of memory"), -1) : 0;
}
