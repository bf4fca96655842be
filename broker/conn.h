/*
 * conn.h - client connections: Kafka's framing (int32 size + request), one
 * request at a time per connection answered in order, the response written
 * from memory with sendmsg(2) and from segment files with sendfile(2);
 * on SSL and SASL_SSL listeners all of it through TLS (security/tls.h,
 * brk_conns_set_tls; conn.c's "Transport" says how).
 *
 * Per connection (protocol guide, "Network"; Kafka's SocketServer):
 *  - the 4-byte size is checked before anything is allocated for the frame:
 *    below 0 or above socket.request.max.bytes closes the connection;
 *  - an unknown API key, or a version outside the table's range for any key
 *    but ApiVersions, closes the connection (Kafka's
 *    SocketServer.parseRequestHeader / ApiKeys.isVersionEnabled); ApiVersions
 *    takes any version (KIP-511, answered by its handler);
 *  - while a request is handled, delayed, or its response is not yet fully
 *    written, no further request starts; bytes that arrive meanwhile are read
 *    only into the free room of the input buffer (the frame in flight never
 *    moves), so input is bounded by the largest frame plus the buffer.
 *    The send queue is bounded the same way: one response at most per
 *    connection, and nothing more is read into a full buffer while it is
 *    not taken by the client, so a client that never reads holds one
 *    response and one input buffer, no more.
 *
 * Limits (Kafka's SocketServer and Selector, the same config names):
 *  - max.connections.per.ip (and .overrides): a new connection from an
 *    address that already has that many open is closed at once (Kafka's
 *    ConnectionQuotas.inc, TooManyConnectionsException);
 *  - max.connections: at that many open connections the listeners stop
 *    accepting until one closes (Kafka's acceptor blocks in
 *    waitForConnectionSlot); clients wait in the listen backlog;
 *  - connections.max.idle.ms: a connection with no byte read or written for
 *    that long, and no request being handled or delayed, is closed (Kafka's
 *    Selector idle expiry; a negative value disables it);
 *  - queued.max.request.bytes (> 0; Kafka's MemoryPool): the input buffers
 *    grown for large frames share that many bytes; when they are used up
 *    no connection reads a new large frame (EPOLLIN off) until one is
 *    answered, instead of growing.
 *
 * Memory (beyond Kafka, whose receive buffers come from its MemoryPool per
 * request): a connection holds its buffers (input, request arena, response)
 * only while it is busy. One that has been quiet for a second, with no
 * request in flight and no byte unread, frees them and costs its struct
 * alone (about 0.7 KiB); its next request allocates them again. The memory
 * that parked and closed connections free goes back to the system
 * (malloc_trim, at most every few seconds), so the broker shrinks once
 * clients go away. bench/connbench.c measures both.
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_CONN_H
#define SAMSA_BROKER_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "broker/config.h"
#include "broker/loop.h"
#include "broker/request.h"

typedef struct brk_conns brk_conns;

/* The connection set. cfg must outlive it (socket.request.max.bytes and the
 * socket buffer sizes are read from it). NULL when out of memory. */
brk_conns *brk_conns_new(brk_loop *loop, const brk_config *cfg);

/*
 * Take over an accepted, non-blocking socket fd from peer (for log lines),
 * accepted on listener (an entry of cfg->listeners, which outlives the
 * connection): sets TCP_NODELAY and socket.send/receive.buffer.bytes and
 * starts reading. Returns 0, or -errno (fd is then closed).
 */
int brk_conn_add(brk_conns *cs, int fd, const struct sockaddr *peer, socklen_t peerlen,
		 const brk_listener *listener);

/*
 * Shutdown, first step: no request starts any more. Idle connections close
 * now; a connection with a request in flight closes once its response is
 * sent (a delayed request completes by its own timeout or event).
 */
void brk_conns_drain(brk_conns *cs);

/* The peer address of the connection of a request, as Kafka's
 * InetAddress.toString() prints it for a client host ("/127.0.0.1"); "" when
 * unknown. Valid while the connection is open. */
typedef struct brk_conn brk_conn;
const char *brk_conn_client_host(const brk_conn *c);

/* The listener the connection came in on (its name and security
 * protocol). */
const brk_listener *brk_conn_listener(const brk_conn *c);

/* The name of c's listener, NULL when c is NULL (a request made inside
 * the broker). Handlers answer with the endpoints of this listener (Kafka's
 * Metadata, FindCoordinator, DescribeCluster: a client on the SSL listener
 * gets the SSL addresses; ctl_broker_node). */
const char *brk_conn_listener_name(const brk_conn *c);

/* Longest principal string kept, bytes with the NUL. */
#define BRK_PRINCIPAL_MAX 256

/* The connection's principal as Kafka's KafkaPrincipal.toString() writes
 * it: "User:ANONYMOUS" until authentication names another ("User:alice",
 * from SASL or a TLS client certificate). Valid while the connection is
 * open. */
const char *brk_conn_principal(const brk_conn *c);

/* Set the principal ("<type>:<name>", copied; longer than
 * BRK_PRINCIPAL_MAX - 1 bytes: -ENAMETOOLONG and nothing changes). */
int brk_conn_set_principal(brk_conn *c, const char *principal);

/* KIP-219: stop reading the connection's requests for ms milliseconds
 * from now (a quota was violated; the response in flight still goes out
 * at once and carries the throttle time). A later call extends it, never
 * shortens it. Bytes already read wait in the buffer. */
void brk_conn_throttle(brk_conn *c, int32_t ms);
/* fn(req) runs once for each request answered (or completed without an
 * answer), after its handler and before its response is sent: the request
 * quota (quota/quota.h) counts it there. NULL: none. */
void brk_conns_set_request_hook(brk_conns *cs, void (*fn)(brk_request *req));
/* SASL (security/sasl.h): the configuration that SASL listeners'
 * connections authenticate against (must outlive cs). A connection accepted
 * on a SASL listener gets a session gating its requests: until it is
 * authenticated only ApiVersions and the SASL requests are dispatched, any
 * other closes it, and frames above sasl.server.max.receive.size close it;
 * a raw SASL token (after a v0 SaslHandshake) is answered with a raw token.
 * Without a configuration, such connections are closed at once. */
struct brk_sasl;
struct brk_sasl_session;
void brk_conns_set_sasl(brk_conns *cs, const struct brk_sasl *sasl);

/* The connection's SASL session; NULL on a listener without SASL. */
struct brk_sasl_session *brk_conn_sasl(const brk_conn *c);

/* Close the connection once the response of the request being handled is
 * sent (a failed authentication). */
void brk_conn_close_after_response(brk_conn *c);

/*
 * The TLS of listener (an SSL or SASL_SSL entry of cfg->listeners) for the
 * connections accepted on it from now on; tls gains a reference, the one
 * it replaces loses one (connections made from it keep their own). Until
 * it is set, such a listener's connections are closed at once. Returns 0
 * or -ENOSPC (more than BRK_MAX_LISTENERS listeners).
 */
typedef struct brk_tls brk_tls;
int brk_conns_set_tls(brk_conns *cs, const brk_listener *listener, brk_tls *tls);

/* Open connections. */
int brk_conns_count(const brk_conns *cs);

/* Whether max.connections connections are open (listeners stop accepting). */
bool brk_conns_full(const brk_conns *cs);

/* fn(loop, arg) is called each time a connection closes while fewer than
 * max.connections stay open (the listeners resume accepting); NULL fn
 * removes it. Called from inside the close: fn must not close connections. */
void brk_conns_set_slot_hook(brk_conns *cs, brk_timer_fn fn, void *arg);

/* Bytes left of queued.max.request.bytes (below zero by at most one frame
 * while a large frame is taken past it), or -1 when it is unbounded. */
int64_t brk_conns_pool_available(const brk_conns *cs);

/* Close every connection (cancelling delayed requests through req->cancel
 * and releasing queued file chunks) and free the set. NULL is a no-op. */
void brk_conns_free(brk_conns *cs);

#endif
