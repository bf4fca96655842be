/*
 * peer.h - a client connection from this broker to one other broker, for
 * replica fetchers (Fetch, OffsetForLeaderEpoch) and the controller's
 * channel (ControlledShutdown, ...): Kafka's NetworkClient as the
 * ReplicaFetcherThread and the BrokerToControllerChannelManager use it,
 * one object per remote broker, on the broker's event loop.
 *
 * What it does (protocol guide, "Network" and "Headers"):
 *  - connects without blocking (TCP_NODELAY), on the first brk_peer_send
 *    and again on the first send after a close, not before the reconnect
 *    backoff has passed;
 *  - frames each request (int32 size, request header v0/v1/v2 chosen from
 *    the generated API table by proto_request_header_version, then the body
 *    the caller's encode callback writes) and sends the requests in the
 *    order they were given, at most max_in_flight of them awaiting their
 *    response at once (Kafka's max.in.flight.requests.per.connection; the
 *    replica fetcher uses 1);
 *  - reads each response frame: its size is checked against
 *    max_response_bytes from the 4-byte field alone, before anything is
 *    allocated for it; the response header (v0, or v1 for flexible
 *    versions; ApiVersions' is always v0, KIP-511) must carry the
 *    correlation id of the oldest request in flight;
 *  - completes every request exactly once: with its response, or with an
 *    error when the connection fails or closes, the request times out, or
 *    the peer is destroyed.
 *
 * Closes. The connection is closed on: the remote side closing it, a socket
 * error, a frame above max_response_bytes or shorter than a response header
 * (BRK_PEER_ERR_TOO_LARGE / _PROTOCOL), a response that is not the
 * answer to the oldest request in flight (correlation id mismatch, or no
 * request waiting: _PROTOCOL), a request in flight passing its timeout
 * (_TIMEOUT), a connect timeout or failure (_CONNECT), and an address
 * change. At a close every pending request, in flight or still queued, gets
 * its callback with an error: the close's cause, except that on a timeout
 * only the requests past their deadline get _TIMEOUT and the others
 * _DISCONNECTED. A request still queued when its deadline passes (the peer
 * could not connect, or others are in flight) gets _TIMEOUT alone, without
 * a close.
 *
 * Reconnect backoff (Kafka's reconnect.backoff.ms / .max.ms): after a close
 * the next connect waits reconnect_backoff_ms * 2^(n-1), at most
 * reconnect_backoff_max_ms, n being the closes since the last connection
 * that was established (so the first close of a good connection waits
 * reconnect_backoff_ms). Kafka adds +-20% jitter; this does not (one peer
 * per remote broker, few brokers).
 *
 * Addresses. A numeric IPv4 or IPv6 address is parsed without blocking. A
 * host name is resolved with getaddrinfo(3) once, in brk_peer_new or
 * brk_peer_set_address, which may block the loop (files, then DNS): a
 * broker's address comes from its registration (advertised.listeners), so
 * this happens when a broker registers, not per connect. The first address
 * returned is used (Kafka's default client.dns.lookup=use_all_dns_ips tries
 * each in turn); a later change of the name's address is not seen until
 * the broker registers again.
 *
 * Callbacks and re-entrancy (the rule):
 *  - done callbacks run on the loop thread, from p's own file events and
 *    timers, or from inside brk_peer_destroy (see there); never from inside
 *    brk_peer_new, brk_peer_send or brk_peer_set_address;
 *  - an encode callback runs inside brk_peer_send, before it returns; it
 *    should only write (a destroy of p from there makes the send return
 *    BRK_PEER_ERR_DESTROYED);
 *  - inside a done callback the caller may send on any peer (p included:
 *    the request goes after everything pending), change any peer's address,
 *    destroy any peer (p included) and free whatever arg points to; the
 *    peer never touches arg after the callback returns. It must not run the
 *    loop recursively.
 *
 * Memory: one allocation per request (its frame, built at send time), and
 * one input buffer per peer, grown to the largest response while requests
 * are pending, given back when the peer is idle and at a close.
 *
 * Everything runs on the loop thread; there is no state outside the object.
 */
#ifndef SAMSA_BROKER_PEER_H
#define SAMSA_BROKER_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "broker/loop.h"
#include "broker/security/sasl_client.h"
#include "protocol/buf.h"

typedef struct brk_peer brk_peer;

/* Errors, given to done callbacks or returned by brk_peer_send (negative;
 * Kafka's error codes are inside the response bodies). */
enum {
	BRK_PEER_OK = 0,
	BRK_PEER_ERR_CONNECT = -2001,      /* the connection could not be set up: refused,
					    * unreachable, or connect_timeout_ms passed */
	BRK_PEER_ERR_DISCONNECTED = -2002, /* the connection closed or failed before the
					    * response came (remote close, socket error,
					    * address change, another request's timeout) */
	BRK_PEER_ERR_TIMEOUT = -2003,      /* no response within request_timeout_ms */
	BRK_PEER_ERR_PROTOCOL = -2004,     /* the remote broke the framing: a response for
					    * another correlation id, one with no request
					    * waiting, or a short/bad response header */
	BRK_PEER_ERR_TOO_LARGE = -2005,    /* a response frame above max_response_bytes */
	BRK_PEER_ERR_DESTROYED = -2006,    /* brk_peer_destroy while pending */
	/* brk_peer_send only (no callback is called): */
	BRK_PEER_ERR_INVALID = -2007,      /* API key not in the generated table, version
					    * outside its range, NULL done callback */
	BRK_PEER_ERR_ENCODE = -2008,       /* the encode callback failed, or wrote file
					    * chunks (requests are memory only) */
	BRK_PEER_ERR_QUEUE_FULL = -2009,   /* max_queued requests already pending */
	BRK_PEER_ERR_NOMEM = -2010,
};

/* A short English name of a BRK_PEER_* code ("connection refused or
 * failed", ...); "unknown error" for anything else. Static storage. */
const char *brk_peer_strerror(int err);

/* Limits, with Kafka's client config names. */
typedef struct brk_peer_limits {
	int64_t connect_timeout_ms;       /* socket.connection.setup.timeout.ms (> 0) */
	int64_t request_timeout_ms;       /* request.timeout.ms; the replica fetcher's
					   * replica.socket.timeout.ms (> 0): from
					   * brk_peer_send to the response */
	int64_t reconnect_backoff_ms;     /* reconnect.backoff.ms (>= 0) */
	int64_t reconnect_backoff_max_ms; /* reconnect.backoff.max.ms (>= the above) */
	int32_t max_response_bytes;       /* largest response frame accepted, bytes after
					   * the size field (>= 8) */
	int max_in_flight;                /* requests sent and awaiting a response (>= 1) */
	int max_queued;                   /* requests pending, in flight included
					   * (>= max_in_flight) */
} brk_peer_limits;

/*
 * Kafka's defaults: connect 10 s, request 30 s, backoff 50 ms to 1 s, one
 * request in flight, 1024 pending, responses up to 100 MiB (the default
 * socket.request.max.bytes; a fetcher sets replica.fetch.response.max.bytes
 * plus room for the response's own fields).
 */
void brk_peer_limits_default(brk_peer_limits *l);

/*
 * Called for every pending request exactly once. err is BRK_PEER_OK and
 * body the response body (a reader positioned after the response header,
 * ending at the end of the frame), or err < 0 and body NULL. body and the
 * bytes it points to are the peer's input buffer, valid only until the
 * callback returns: decode into an arena of the caller's, or use the bytes
 * in place (a follower appends fetched record batches straight from them),
 * but keep no pointer into them.
 */
typedef void (*brk_peer_done_fn)(brk_peer *p, int err, proto_reader *body, void *arg);

/*
 * Writes the request body for api_version into w (with the generated
 * encoder, e.g. FetchRequest_encode). Returns 0 or a negative code (the
 * encoder's PROTO_ERR_*).
 */
typedef int (*brk_peer_encode_fn)(proto_writer *w, int16_t api_version, void *arg);

/*
 * A peer for the broker node_id at host:port (IPv4/IPv6 literal or a name,
 * see "Addresses"). client_id goes in every request header (v1+; NULL sends
 * a null client id; Kafka's fetcher uses "broker-<id>-fetcher-<n>"); host
 * and client_id are copied. limits NULL: brk_peer_limits_default. Nothing
 * is connected until the first send.
 * Returns NULL with *err (if err is not NULL) set to BRK_PEER_ERR_INVALID
 * (bad port or limits, a host that does not resolve) or _NOMEM.
 */
brk_peer *brk_peer_new(brk_loop *loop, int32_t node_id, const char *host, int port,
		       const char *client_id, const brk_peer_limits *limits, int *err);

/*
 * Speak TLS from the next connection on (ctx, a client context of
 * security/tls.h, gains a reference; NULL: plaintext again), checking that
 * the remote's certificate names the host when verify_host
 * (ssl.endpoint.identification.algorithm=https). The handshake follows the
 * TCP connect, both within connect_timeout_ms; a failed handshake is a
 * BRK_PEER_ERR_CONNECT with OpenSSL's reason in brk_peer_last_error.
 */
void brk_peer_set_tls(brk_peer *p, SSL_CTX *ctx, bool verify_host);

/*
 * The remote broker registered again with host:port. The same address
 * changes nothing. A new one is used from the next connect on, without
 * backoff; a connection to the old address that is open or being opened is
 * closed by a zero-delay timer, whose pending requests then get
 * BRK_PEER_ERR_DISCONNECTED (requests sent before that timer runs are
 * among them). Returns 0, or BRK_PEER_ERR_INVALID / _NOMEM leaving the peer
 * as it was.
 */
int brk_peer_set_address(brk_peer *p, const char *host, int port);

/*
 * Queue a request: api_key at api_version (which must be in the generated
 * API table's range), its body written by encode(w, api_version,
 * encode_arg) before this returns, and done(p, err, body, arg) called once
 * later (see brk_peer_done_fn and the re-entrancy rule above). The request
 * is sent after every request queued before it; it times out
 * request_timeout_ms from now. Returns 0, or a BRK_PEER_ERR_* (_INVALID,
 * _ENCODE, _QUEUE_FULL, _NOMEM, _DESTROYED while p is being destroyed),
 * and then done is never called.
 */
int brk_peer_send(brk_peer *p, int16_t api_key, int16_t api_version, brk_peer_encode_fn encode,
		  void *encode_arg, brk_peer_done_fn done, void *arg);

/*
 * Close the connection, fail every pending request and free p; NULL is a
 * no-op. Every request whose callback has not run yet gets it before this
 * returns, with BRK_PEER_ERR_DESTROYED, in order (in flight first, then
 * queued), called from inside brk_peer_destroy: the caller's state that
 * those callbacks use must still be alive. Inside them p is dying:
 * brk_peer_send on it returns BRK_PEER_ERR_DESTROYED and brk_peer_destroy
 * on it does nothing. After this returns no callback of p runs and p must
 * not be used. Called from inside one of p's own callbacks, the same
 * happens, and the memory is released when that outer callback returns (its
 * body reader stays valid until then).
 */
void brk_peer_destroy(brk_peer *p);

/*
 * SASL (a SASL_PLAINTEXT or SASL_SSL inter-broker listener): on every new
 * connection, before any request of the caller's, authenticate with
 * SaslHandshake v1 and SaslAuthenticate v1 as cred says (copied; NULL:
 * none), as Kafka's SaslClientAuthenticator does. A refusal (the
 * mechanism, the credentials, the server's signature) closes the
 * connection: the pending requests get BRK_PEER_ERR_CONNECT and
 * brk_peer_last_error says why. When the server gives the session a
 * lifetime (KIP-368, connections.max.reauth.ms), the connection
 * re-authenticates once 85 % of it has passed, between two requests.
 * Takes effect from the next connection. Returns 0 or BRK_PEER_ERR_NOMEM.
 */
int brk_peer_set_sasl(brk_peer *p, const brk_sasl_credentials *cred);

/* Accessors (for logs, metrics and tests). */
int32_t brk_peer_node_id(const brk_peer *p);
/* The current host and port, as given to new/set_address. */
const char *brk_peer_host(const brk_peer *p);
int brk_peer_port(const brk_peer *p);
/* Whether the connection is established (not connecting, not closed). */
bool brk_peer_connected(const brk_peer *p);
/* Requests whose callback has not run yet: in flight, queued, and failed
 * ones whose error callback is about to run. */
int brk_peer_pending(const brk_peer *p);
/* Requests sent (or being sent) and awaiting their response. */
int brk_peer_in_flight(const brk_peer *p);
/* Connections established so far (tests: a reconnect happened). */
uint64_t brk_peer_connects(const brk_peer *p);
/* Why the connection last closed or failed to open ("connect: Connection
 * refused", "correlation id 7 where 6 was expected", ...); "" if never. */
const char *brk_peer_last_error(const brk_peer *p);

#endif
