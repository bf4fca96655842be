/*
 * sasl.h - SASL authentication of client connections on SASL_PLAINTEXT and
 * SASL_SSL listeners, as Kafka's SaslServerAuthenticator does it.
 *
 * Configuration (brk_sasl_init, at start-up; a bad one stops the broker):
 *  - sasl.enabled.mechanisms per listener (listener.name.<l>.sasl.enabled.
 *    mechanisms, else the key alone; Kafka's default GSSAPI). PLAIN,
 *    SCRAM-SHA-256 and SCRAM-SHA-512 are served. GSSAPI (Kerberos) and
 *    OAUTHBEARER are not: a SASL listener that enables one, including by
 *    leaving the default, refuses to start with a message saying so (a
 *    Kafka broker without a Kerberos setup fails to start too).
 *  - each enabled mechanism needs its JAAS config as Kafka's
 *    JaasContext.loadServerContext reads it, from
 *    listener.name.<l>.<mechanism in lower case>.sasl.jaas.config (the
 *    static JAAS file of the JVM has no counterpart here); sasl.jaas.config
 *    and listener.name.<l>.sasl.jaas.config are ignored with a warning, as
 *    Kafka does. PLAIN's users are the user_<name>="<password>" options of
 *    org.apache.kafka.common.security.plain.PlainLoginModule; SCRAM needs
 *    an org.apache.kafka.common.security.scram.ScramLoginModule entry (its
 *    username/password are the broker's own, for inter-broker use).
 *  - sasl.server.max.receive.size (524288): the largest frame read before
 *    authentication completes; a larger one closes the connection.
 *  - connections.max.reauth.ms (0): KIP-368 session lifetime, also per
 *    listener and mechanism as Kafka reads it
 *    (listener.name.<l>.<mechanism>.connections.max.reauth.ms, else
 *    listener.name.<l>.connections.max.reauth.ms, else the key alone).
 *  - inter-broker: the inter-broker listener is inter.broker.listener.name,
 *    else the listener named after security.inter.broker.protocol
 *    (PLAINTEXT), else the first listener (the one brokers register and
 *    connect to). When it speaks SASL, sasl.mechanism.inter.broker.protocol
 *    (Kafka's default GSSAPI, refused) must be one of its enabled
 *    mechanisms, and the username and password options of that
 *    mechanism's JAAS entry on it are this broker's own credentials
 *    (brk_peers_set_sasl).
 *
 * Per connection (brk_sasl_session), Kafka's states:
 *   HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake-->
 *   AUTHENTICATE --SaslAuthenticate...--> COMPLETE
 * HANDSHAKE_OR_VERSIONS also takes SaslHandshake directly; ApiVersions is
 * served once, as the first request. Before COMPLETE only these requests
 * are served; any other closes the connection unanswered (Kafka: "Unexpected
 * Kafka request of type X during SASL handshake"; during authentication
 * Kafka answers such a request with ILLEGAL_SASL_STATE in that API's error
 * response before closing, which is not done here for other APIs than the
 * SASL ones). SaslAuthenticate before any SaslHandshake is answered
 * ILLEGAL_SASL_STATE, then closed (Kafka closes without an answer). After a v0
 * SaslHandshake the tokens are raw frames (int32 size + bytes, no Kafka
 * header) both ways; after a v1 handshake they come in SaslAuthenticate.
 * Failures: an unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with
 * the enabled list, bad credentials SASL_AUTHENTICATION_FAILED with a
 * message (raw v0 flow: no answer), a request out of order
 * ILLEGAL_SASL_STATE; then the connection closes. Once COMPLETE the
 * connection's principal is "User:<name>".
 *
 * Re-authentication (KIP-368): with connections.max.reauth.ms > 0 the
 * session lifetime is sent in SaslAuthenticate v1+; a SaslHandshake on an
 * authenticated connection (at most one a second) starts a new exchange,
 * which must use the same mechanism and end with the same principal. A
 * connection whose session has expired is closed at its next request that
 * does not start re-authentication. Without a lifetime, SaslHandshake and
 * SaslAuthenticate after authentication are answered ILLEGAL_SASL_STATE
 * (Kafka's KafkaApis) and the connection stays open; so on listeners
 * without SASL.
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_SECURITY_SASL_H
#define SAMSA_BROKER_SECURITY_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "broker/config.h"
#include "broker/security/jaas.h"
#include "broker/security/sasl_client.h"
#include "protocol/buf.h"

typedef struct brk_conn brk_conn;

/* Mechanisms, as bits. */
enum {
	BRK_SASL_PLAIN = 1,
	BRK_SASL_SCRAM_SHA_256 = 2,
	BRK_SASL_SCRAM_SHA_512 = 4,
};

/* Kafka's name of mechanism bit m ("PLAIN"); NULL for another value. */
const char *brk_sasl_mechanism_name(int m);
/* The bit of a mechanism name (exact, as Kafka compares); 0 if unknown. */
int brk_sasl_mechanism_of(const char *name, size_t len);

/* A stored SCRAM credential (RFC 5802; Kafka's ScramCredential). */
#define BRK_SCRAM_MAX_KEY 64  /* SHA-512 */
#define BRK_SCRAM_MAX_SALT 128
typedef struct brk_scram_credential {
	uint8_t salt[BRK_SCRAM_MAX_SALT];
	size_t salt_len;
	uint8_t stored_key[BRK_SCRAM_MAX_KEY];
	uint8_t server_key[BRK_SCRAM_MAX_KEY];
	size_t key_len;
	int32_t iterations;
} brk_scram_credential;

/* Looks up user's credential for mechanism (BRK_SASL_SCRAM_*): 0 with *out
 * filled, or -1 when there is none. */
typedef int (*brk_scram_lookup_fn)(void *arg, const char *user, int mechanism,
				   brk_scram_credential *out);

typedef struct brk_sasl_listener {
	char name[32];
	bool sasl;          /* SASL_PLAINTEXT or SASL_SSL */
	int enabled;        /* mechanism bits */
	int order[3];       /* enabled mechanisms as sasl.enabled.mechanisms lists them */
	int norder;
	brk_jaas plain_jaas; /* PLAIN's JAAS config */
	const brk_jaas_entry *plain; /* its PlainLoginModule entry */
	brk_jaas scram_jaas[2]; /* SCRAM-SHA-256, -512 */
	/* connections.max.reauth.ms per mechanism (PLAIN, SCRAM-SHA-256,
	 * -512): listener.name.<l>.<mechanism>.connections.max.reauth.ms, else
	 * listener.name.<l>.connections.max.reauth.ms, else the broker's. */
	int64_t reauth_ms[3];
} brk_sasl_listener;

typedef struct brk_sasl {
	brk_sasl_listener listeners[BRK_MAX_LISTENERS];
	int nlisteners;
	int32_t max_receive_size;   /* sasl.server.max.receive.size */
	int64_t max_reauth_ms;      /* connections.max.reauth.ms */
	brk_scram_lookup_fn scram_lookup; /* NULL: no SCRAM user exists */
	void *scram_lookup_arg;
	/* The inter-broker listener uses SASL: this broker's own credentials
	 * there (brk_sasl_init). */
	bool inter_broker_sasl;
	brk_sasl_credentials inter_broker;
} brk_sasl;

/* Read the SASL configuration of every listener of cfg (see above).
 * Warnings go to warn. Returns 0, or -1 with a message for the user in
 * err. */
int brk_sasl_init(brk_sasl *s, const brk_config *cfg, FILE *warn, char *err, size_t errsize);
void brk_sasl_free(brk_sasl *s);

/* Where SCRAM credentials come from (the credential store). */
void brk_sasl_set_scram_lookup(brk_sasl *s, brk_scram_lookup_fn fn, void *arg);

/* ---- one connection ---- */

typedef struct brk_sasl_session brk_sasl_session;

/* A session for a connection accepted on listener l; NULL when l is not a
 * SASL listener (or out of memory: the caller closes). */
brk_sasl_session *brk_sasl_session_new(const brk_sasl *s, const brk_listener *l);
void brk_sasl_session_free(brk_sasl_session *ss);

/* Whether ss needs a SASL session at all for l. */
bool brk_sasl_listener_needs_session(const brk_listener *l);

/* What the connection does with a frame (brk_sasl_gate). */
enum {
	BRK_SASL_DISPATCH = 0, /* as usual, through the API table */
	BRK_SASL_REFUSE = -1,  /* close the connection (why set) */
};

/* The largest frame ss accepts now: sasl.server.max.receive.size until
 * authenticated, else max (socket.request.max.bytes). */
int32_t brk_sasl_max_frame(const brk_sasl_session *ss, int32_t max);

/* Whether the next frame is a raw v0 token (brk_sasl_raw_token). */
bool brk_sasl_expects_raw(const brk_sasl_session *ss);

/* May a request of API key be served on ss at mono_ms (monotonic ms)?
 * version_served: its version is within the API table's range. */
int brk_sasl_gate(brk_sasl_session *ss, int16_t api_key, bool version_served, int64_t mono_ms,
		  char *why, size_t whysize);

/* A raw token (v0 flow): the answer token goes to out (to be framed with its
 * size alone). Returns 0 to send it, -1 to close (why set). */
int brk_sasl_raw_token(brk_sasl_session *ss, brk_conn *c, const uint8_t *token, size_t len,
		       proto_writer *out, char *why, size_t whysize);

/* Handlers of SaslHandshake (17) and SaslAuthenticate (36): in
 * broker/handlers/sasl_*.c, through these. */
typedef struct brk_sasl_result {
	int16_t error_code;
	char message[256];       /* "" = null */
	uint8_t token[512];      /* the server's token */
	size_t token_len;
	int64_t session_lifetime_ms;
	bool close;              /* close once the answer is sent */
} brk_sasl_result;

/* SaslHandshake with mechanism (version 0 or 1); ss may be NULL (a listener
 * without SASL). The enabled mechanisms for the answer: brk_sasl_enabled. */
void brk_sasl_handshake(brk_sasl_session *ss, int16_t version, const char *mechanism,
			size_t len, int64_t mono_ms, brk_sasl_result *res);

/* The mechanisms enabled on ss's listener, in order, into names (at most
 * 3); 0 when ss is NULL. */
int brk_sasl_enabled(const brk_sasl_session *ss, const char *names[3]);

/* SaslAuthenticate with the client's token; ss may be NULL. */
void brk_sasl_authenticate(brk_sasl_session *ss, brk_conn *c, int16_t version,
			   const uint8_t *token, size_t len, int64_t mono_ms, brk_sasl_result *res);

#endif
