/*
 * conn.h - samsa-admin's connection to one broker: a blocking TCP client
 * that frames requests and reads their responses, one at a time, as the
 * protocol guide ("Network", "Headers") describes them, with the codecs
 * generated from protocol/schema.
 *
 *  - adm_conn_open connects (IPv4 or IPv6 literal, or a name resolved with
 *    getaddrinfo; each address in turn) and asks ApiVersions right away
 *    (KIP-35, KIP-511): first at the highest version of our schema; a
 *    broker that answers UNSUPPORTED_VERSION gives its own range for key 18
 *    in a v0 body, and the request is made again at the highest version
 *    both know. From the answer, every API key gets the highest version
 *    that both this program's schema and the broker serve, or none.
 *  - With security (security.h): TLS right after the TCP connect (within
 *    the same deadline), and SASL right after ApiVersions, as Kafka's
 *    clients do it: SaslHandshake v1 naming the mechanism, then one
 *    SaslAuthenticate per token of broker/security/sasl_client.h. A
 *    refusal is an error naming Kafka's code and the broker's message
 *    ("SASL authentication failed: SASL_AUTHENTICATION_FAILED: ...").
 *  - adm_conn_call frames one request (int32 size, request header v1 or v2
 *    from proto_request_header_version, the body from the API's generated
 *    encoder), sends it, reads the response frame (its size checked against
 *    ADM_MAX_RESPONSE_BYTES from the 4-byte field alone, before anything is
 *    allocated), checks the response header's correlation id and decodes
 *    the body with the generated decoder at the same version.
 *  - Every step has a deadline: timeout_ms from the start of the connect,
 *    and again from the start of each call. A connection that failed in
 *    any way (socket error, timeout, a frame that does not parse) is
 *    closed; the caller opens a new one if it wants.
 *
 * Memory: a response frame and everything decoded from it live in the
 * arena the caller passes (its strings are views into the frame), until
 * the caller resets or frees that arena. The connection itself holds no
 * allocation but its socket.
 *
 * Errors: functions return 0 or -1, and on -1 write one line (no newline)
 * into the connection's err: what failed and why ("connect to
 * 127.0.0.1:9: Connection refused", "Metadata v12: no response within
 * 30000 ms").
 */
#ifndef SAMSA_TOOLS_CONN_H
#define SAMSA_TOOLS_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/buf.h"
#include "tools/security.h"

/* API keys tracked (Kafka's keys are below 100). */
#define ADM_API_KEYS 128
/* Largest response frame accepted, bytes after the size field. */
#define ADM_MAX_RESPONSE_BYTES (64 * 1024 * 1024)

/* An API as samsa-admin uses it: its key and name, and its generated
 * request encoder and response decoder (see api.h). */
typedef struct adm_api {
	int16_t key;
	const char *name;
	int (*encode)(proto_writer *w, int16_t version, const void *request);
	int (*decode)(proto_reader *r, proto_arena *a, int16_t version, void *response);
} adm_api;

typedef struct adm_conn {
	int fd;                          /* -1: closed */
	SSL *ssl;                        /* the TLS session, NULL: none */
	const adm_security *sec;         /* borrowed, NULL: plaintext */
	int32_t node_id;                 /* broker id, -1 for a bootstrap address */
	char host[256];
	int port;
	int timeout_ms;
	int32_t next_correlation_id;
	int16_t version[ADM_API_KEYS];   /* negotiated per key, -1: none */
	char err[768];                   /* why the last call failed */
} adm_conn;

/*
 * Connect to host:port (TLS and SASL as sec says; sec NULL or
 * adm_security_none: plaintext; sec must outlive c) and negotiate versions
 * (ApiVersions). node_id is only recorded. Returns 0, or -1 with c->err
 * set and c closed.
 */
int adm_conn_open(adm_conn *c, const char *host, int port, int32_t node_id, int timeout_ms,
		  const adm_security *sec);

/* Close the socket (c->err kept); safe on a closed connection. */
void adm_conn_close(adm_conn *c);

/* The version negotiated for api_key, -1 when the two sides share none. */
int16_t adm_conn_version(const adm_conn *c, int16_t api_key);

/*
 * One round trip of api at the negotiated version (*version gets it):
 * request encoded by api->encode, response decoded by api->decode into
 * response (in arena a). Returns 0, or -1 with c->err set (no version in
 * common, a request that does not encode, a socket error or timeout, a
 * response that does not parse); the connection is closed then, except
 * when nothing was sent.
 */
int adm_conn_call(adm_conn *c, const adm_api *api, const void *request, proto_arena *a,
		  void *response, int16_t *version);

#endif
