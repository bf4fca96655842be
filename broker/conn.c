/*
 * conn.c - one client connection: read frames, dispatch them through
 * brk_apis, write the responses in order (see conn.h for the rules).
 *
 * States of a connection:
 *
 *   IDLE      no request in flight; frames in the input buffer are
 *             dispatched one by one
 *   HANDLING  inside the handler (brk_request_complete here only records)
 *   DELAYED   the handler returned BRK_DELAYED; waiting for
 *             brk_request_complete
 *   RESUMING  completed; a zero-delay timer will send the response, so that
 *             nothing of the connection runs inside the completer's call
 *   SENDING   the response is being written (blocked: waiting for EPOLLOUT)
 *
 *   IDLE -> HANDLING -> (SENDING | IDLE | DELAYED -> RESUMING -> (SENDING | IDLE))
 *   SENDING -> IDLE once every byte is out; any state -> closed.
 *
 * Input buffer: bytes [in_pos, in_len) of in[] are unread frames; the frame
 * in flight is [in_pos, frame_end). Outside IDLE the buffer never moves or
 * grows; reading only fills [in_len, in_cap).
 *
 * Output: a small head writer (int32 size + response header) followed by
 * the handler's body writer, whose memory is cut by file chunks at their
 * offsets: memory parts go out with sendmsg (MSG_MORE while a file chunk
 * follows), file chunks with sendfile (a segment's descriptor pinned from
 * its chunk's first byte to its last: proto_file_chunk's pin).
 *
 * Transport ("transport" below): the bytes go through the socket itself on
 * PLAINTEXT and SASL_PLAINTEXT listeners, through an OpenSSL session
 * (security/tls.h) on SSL and SASL_SSL ones. A TLS connection first
 * completes its handshake (no request is read before); its idle deadline
 * counts from the accept until then, so a handshake that never completes,
 * even one trickled a byte at a time, is closed after
 * connections.max.idle.ms (Kafka has no handshake timeout of its own: its
 * Selector's idle expiry closes such channels, counting any byte as
 * activity). Over TLS the response head goes out in one record with the
 * start of the body (copied into the set's record buffer, at most one
 * record), the rest of a larger body from its own buffer; file chunks go out with SSL_sendfile when the kernel does TLS
 * for the socket (kTLS), else read (pread) into the set's record buffer a
 * record at a time and SSL_written. Only the loop thread uses that buffer,
 * and a write OpenSSL could not finish is repeated with the same bytes (the
 * cursor has not moved, so they are read again), as OpenSSL requires.
 * Decrypted bytes OpenSSL holds (SSL_pending) are not signalled by the
 * socket: advance() reads them when it needs the rest of a frame.
 *
 * Limits (Kafka's SocketServer, see conn.h):
 *  - per address: brk_conn_add counts the open connections of the peer's
 *    address and closes the new one at once when it is over
 *    max.connections.per.ip (or its override);
 *  - broker-wide: brk_conns_full tells the listeners to stop accepting at
 *    max.connections; every close calls the slot hook so they resume;
 *  - idle: one timer, armed for the earliest deadline, closes connections
 *    in IDLE or SENDING with no byte read or written for
 *    connections.max.idle.ms (Kafka's Selector idle expiry); a request
 *    being handled, delayed or resuming keeps its connection;
 *  - request memory (queued.max.request.bytes > 0, Kafka's SimpleMemoryPool
 *    in its non-strict mode): an input buffer grown above IN_INITIAL for a
 *    frame takes its whole capacity from the pool before the frame's body
 *    is read, which succeeds while anything is left (the pool may go below
 *    zero by at most one frame). When nothing is left the connection stops
 *    reading (mem_wait: EPOLLIN off) until a request finishes or a
 *    connection closes and gives its buffer back; then the waiters read
 *    again. The IN_INITIAL bytes of each connection are not counted (they
 *    are bounded by max.connections).
 *
 * Memory of quiet connections (conn.h, "Memory"): a connection holds an
 * input buffer, an arena and the response writers only while it has
 * something to do. request_finish puts a connection whose input is all
 * read at the tail of the quiet list, stamped with the time; a timer takes
 * from the head the connections quiet for CONN_PARK_MS and, if they are
 * still IDLE with nothing unread, frees their buffers (park). The list is
 * in stamp order, so the timer looks only at connections it releases, never
 * at the busy ones. Parked and closed connections count the bytes they
 * gave back; once TRIM_MIN_BYTES are counted, malloc_trim runs
 * TRIM_DELAY_MS later (one call for a burst of closes), so the heap pages
 * freed in the middle of the heap go back to the system too, not only its
 * top (glibc's free() gives back only the top). A trim costs up to about
 * 10 ms on the loop with 20,000 parked connections (a madvise per free
 * chunk) and the pages it gives back fault in again when those connections
 * speak, so trims are at least TRIM_GAP_MS apart: clients that come and go
 * all the time cause one every TRIM_GAP_MS, not one per second.
 */
#include "broker/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "broker/ratelog.h"
#include "broker/request.h"
#include "broker/security/tls.h"
#include "broker/security/sasl.h"
#include "broker/slab.h"
#include "protocol/buf.h"
#include "protocol/gen/messages.h"
#include "protocol/header.h"

#define IN_INITIAL (16 * 1024)      /* input buffer for small requests, bytes */
#define IN_SHRINK (8 * 1024 * 1024) /* idle buffers above this are given back */
#define CONN_PARK_MS 1000            /* quiet this long: the buffers are freed */
#define PARK_BATCH 1024              /* parks per timer call, so a crowd parks in steps */
#define TRIM_MIN_BYTES (1024 * 1024) /* given back before malloc_trim is worth a call */
#define TRIM_DELAY_MS 1000           /* from the first of those bytes to the trim */
#define TRIM_GAP_MS 5000             /* at least this long between two trims */
#define API_VERSIONS_KEY 18

typedef enum { IDLE, HANDLING, DELAYED, RESUMING, SENDING } conn_state;

struct brk_conn {
	brk_conns *set;
	brk_conn *prev, *next;
	int fd;
	int watching; /* events currently asked of the loop */
	char peer[64];
	char host[INET6_ADDRSTRLEN + 2]; /* "/" + address (brk_conn_client_host) */
	conn_state st;
	bool done_early;    /* brk_request_complete called during HANDLING */
	bool mem_wait;      /* waiting for queued.max.request.bytes to free up */
	char ip[INET6_ADDRSTRLEN]; /* the peer's address (IPv4-mapped shown as IPv4) */
	const brk_listener *listener; /* accepted on (in cfg, which outlives us) */
	char principal[BRK_PRINCIPAL_MAX]; /* brk_conn_principal */
	/* SASL listeners: the authentication state (security/sasl.h), which
	 * gates dispatch; NULL elsewhere. */
	brk_sasl_session *sasl;
	bool raw_response;  /* the response is a raw SASL v0 token: size, no header */
	bool close_after;   /* close once the response in flight is sent */
	int64_t last_active; /* monotonic ms of the last byte read or written */
	size_t charged;     /* bytes of in[] taken from the request memory pool */
	bool no_response;   /* of the completed delayed request */
	bool close_pending; /* the completed delayed request could not be answered */
	uint64_t resume_timer;
	int64_t throttle_until; /* monotonic ms: no request is read before (KIP-219) */
	uint64_t throttle_timer;
	/* On the quiet list (IDLE, input all read, buffers held) since
	 * quiet_since (monotonic ms); see "Memory of quiet connections". */
	bool quiet;
	int64_t quiet_since;
	brk_conn *quiet_prev, *quiet_next;

	uint8_t *in;
	size_t in_cap, in_len, in_pos, frame_end;

	brk_request req;
	proto_arena arena;
	proto_writer body;
	proto_writer head;
	/* send cursor */
	size_t head_off;  /* bytes of head sent */
	size_t mem_off;   /* bytes of body memory sent */
	int chunk_i;      /* next file chunk */
	int64_t chunk_off; /* bytes of that chunk sent */
	int chunk_fd;     /* chunk_i's descriptor while pinned (its pin), else -1 */

	/* TLS listeners (see "Transport"): the session, the context it was
	 * made from (a reference), whether its handshake is complete, and
	 * the events OpenSSL asked for besides the state's own. */
	SSL *ssl;
	brk_tls *tls;
	bool tls_ready;
	int tls_want;
};

struct brk_conns {
	brk_loop *loop;
	const brk_config *cfg;
	brk_conn *head;
	int count;
	bool draining;
	uint64_t idle_timer;  /* the idle sweep, 0 when not armed */
	/* queued.max.request.bytes: bytes left (may dip below zero by at most
	 * one frame); meaningful only when the limit is > 0. */
	int64_t pool_avail;
	int nwaiting;         /* connections with mem_wait set */
	uint64_t wake_timer;  /* wakes the waiters once memory is back */
	brk_timer_fn slot_fn; /* called when a connection closes (listeners) */
	void (*request_hook)(brk_request *req); /* brk_conns_set_request_hook */
	const brk_sasl *sasl; /* SASL configuration (brk_conns_set_sasl), or NULL */
	void *slot_arg;
	brk_slab slab;        /* the brk_conn structs, together (slab.h says why) */
	brk_conn *quiet_head, *quiet_tail; /* oldest first */
	uint64_t park_timer;  /* parks the head of the quiet list, 0 when not armed */
	size_t given_back;    /* bytes freed since the last malloc_trim */
	uint64_t trim_timer;  /* the next malloc_trim, 0 when not armed */
	int64_t last_trim;    /* monotonic ms of the last one; INT64_MIN: none yet */
	/* The TLS of each TLS listener (brk_conns_set_tls), one reference. */
	struct {
		const brk_listener *listener;
		brk_tls *tls;
	} tls[BRK_MAX_LISTENERS];
	/* One TLS record of plaintext, for any connection (see "Transport"). */
	uint8_t tls_record[BRK_TLS_RECORD_MAX];
};

static void on_io(brk_loop *loop, int fd, int events, void *arg);
static bool conn_read(brk_conn *c);
static bool tls_read_pending(brk_conn *c, bool *closed);

/* ---- life cycle ---- */

brk_conns *brk_conns_new(brk_loop *loop, const brk_config *cfg)
{
	brk_conns *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->loop = loop;
	cs->cfg = cfg;
	cs->pool_avail = cfg->queued_max_request_bytes;
	cs->last_trim = INT64_MIN;
	brk_slab_init(&cs->slab, sizeof(brk_conn));
	return cs;
}

bool brk_conns_full(const brk_conns *cs) { return cs->count >= cs->cfg->max_connections; }

void brk_conns_set_request_hook(brk_conns *cs, void (*fn)(brk_request *req))
{
	cs->request_hook = fn;
}

/* The request in flight is answered (or done without an answer). */
static void request_answered(brk_conn *c)
{
	if (c->set->request_hook)
		c->set->request_hook(&c->req);
}

void brk_conns_set_slot_hook(brk_conns *cs, brk_timer_fn fn, void *arg)
{
	cs->slot_fn = fn;
	cs->slot_arg = arg;
}

int64_t brk_conns_pool_available(const brk_conns *cs)
{
	return cs->cfg->queued_max_request_bytes > 0 ? cs->pool_avail : -1;
}

/* ---- idle expiry (connections.max.idle.ms) ---- */

static void conn_close(brk_conn *c, const char *reason);

/* Whether c counts as idle: nothing of a request is pending on our side. */
static bool conn_idle_candidate(const brk_conn *c)
{
	return (c->st == IDLE || c->st == SENDING) && !c->mem_wait;
}

static void on_idle_sweep(brk_loop *loop, void *arg);

static void idle_arm(brk_conns *cs, int64_t delay_ms)
{
	if (cs->idle_timer || cs->cfg->connections_max_idle_ms < 0 || cs->count == 0)
		return;
	cs->idle_timer = brk_timer_add(cs->loop, delay_ms < 1 ? 1 : delay_ms, on_idle_sweep, cs);
}

static void on_idle_sweep(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conns *cs = arg;
	cs->idle_timer = 0;
	int64_t max_idle = cs->cfg->connections_max_idle_ms;
	int64_t now = brk_mono_ms(), next = INT64_MAX;
	char why[96];
	brk_conn *c = cs->head;
	while (c) {
		brk_conn *nx = c->next;
		if (conn_idle_candidate(c)) {
			int64_t deadline = c->last_active > INT64_MAX - max_idle ? INT64_MAX
										  : c->last_active + max_idle;
			if (deadline <= now) {
				snprintf(why, sizeof(why), "idle for %" PRId64 " ms (connections.max.idle.ms %" PRId64 ")",
					 now - c->last_active, max_idle);
				conn_close(c, why);
			} else if (deadline < next) {
				next = deadline;
			}
		}
		c = nx;
	}
	/* Busy connections are looked at again once their request finishes
	 * (request_finish arms the sweep). */
	if (next != INT64_MAX)
		idle_arm(cs, next - now);
}

/* ---- memory of quiet connections ---- */

static void on_trim(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conns *cs = arg;
	cs->trim_timer = 0;
	cs->given_back = 0;
	cs->last_trim = brk_mono_ms();
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* bytes were freed: count them, and trim once enough are counted. */
static void gave_back(brk_conns *cs, size_t bytes)
{
	cs->given_back += bytes;
	if (cs->given_back < TRIM_MIN_BYTES || cs->trim_timer)
		return;
	int64_t delay = TRIM_DELAY_MS;
	if (cs->last_trim != INT64_MIN) {
		int64_t gap = cs->last_trim + TRIM_GAP_MS - brk_mono_ms();
		if (gap > delay)
			delay = gap;
	}
	cs->trim_timer = brk_timer_add(cs->loop, delay, on_trim, cs);
}

/* Bytes c's buffers hold (input, arena, response writers). */
static size_t conn_buffer_bytes(const brk_conn *c)
{
	return c->in_cap + c->arena.total + c->body.cap + c->head.cap +
	       (size_t)(c->body.chunks_cap + c->head.chunks_cap) * sizeof(proto_file_chunk);
}

static void quiet_unlink(brk_conn *c)
{
	brk_conns *cs = c->set;
	if (!c->quiet)
		return;
	if (c->quiet_prev)
		c->quiet_prev->quiet_next = c->quiet_next;
	else
		cs->quiet_head = c->quiet_next;
	if (c->quiet_next)
		c->quiet_next->quiet_prev = c->quiet_prev;
	else
		cs->quiet_tail = c->quiet_prev;
	c->quiet_prev = c->quiet_next = NULL;
	c->quiet = false;
}

static void pool_release(brk_conn *c);
static void on_park(brk_loop *loop, void *arg);

static void park_arm(brk_conns *cs)
{
	if (cs->park_timer || !cs->quiet_head)
		return;
	int64_t delay = cs->quiet_head->quiet_since + CONN_PARK_MS - brk_mono_ms();
	cs->park_timer = brk_timer_add(cs->loop, delay < 1 ? 1 : delay, on_park, cs);
}

/* c finished a request at now_ms and has nothing unread: (re)join the quiet
 * list's tail. */
static void quiet_push(brk_conn *c, int64_t now_ms)
{
	brk_conns *cs = c->set;
	quiet_unlink(c);
	c->quiet = true;
	c->quiet_since = now_ms;
	c->quiet_prev = cs->quiet_tail;
	if (cs->quiet_tail)
		cs->quiet_tail->quiet_next = c;
	else
		cs->quiet_head = c;
	cs->quiet_tail = c;
	park_arm(cs);
}

/* Free c's buffers (IDLE, nothing unread: nothing points into them). The
 * next frame allocates them again (make_room, the arena, the writers). */
static void park(brk_conn *c)
{
	size_t bytes = conn_buffer_bytes(c);
	free(c->in);
	c->in = NULL;
	c->in_cap = c->in_len = c->in_pos = c->frame_end = 0;
	pool_release(c);
	proto_arena_free(&c->arena);
	proto_writer_free(&c->body);
	proto_writer_free(&c->head);
	gave_back(c->set, bytes);
}

static void on_park(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conns *cs = arg;
	cs->park_timer = 0;
	int64_t now = brk_mono_ms();
	brk_conn *c;
	for (int n = 0; n < PARK_BATCH && (c = cs->quiet_head) && now - c->quiet_since >= CONN_PARK_MS;
	     n++) {
		quiet_unlink(c);
		/* Busy again since: request_finish puts it back. */
		if (c->st == IDLE && !c->mem_wait && c->in_pos == c->in_len)
			park(c);
	}
	park_arm(cs); /* at once when a batch was cut short */
}

/* ---- request memory (queued.max.request.bytes) ---- */

static bool advance(brk_conn *c);

static void on_pool_wake(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conns *cs = arg;
	cs->wake_timer = 0;
	brk_conn *c = cs->head;
	while (c && cs->nwaiting > 0 && cs->pool_avail > 0) {
		brk_conn *nx = c->next;
		if (c->mem_wait) {
			c->mem_wait = false;
			cs->nwaiting--;
			c->last_active = brk_mono_ms();
			advance(c); /* reading again; it may wait again */
		}
		c = nx;
	}
}

/* Give c's pool bytes back, and wake the waiters once there is room. */
static void pool_release(brk_conn *c)
{
	brk_conns *cs = c->set;
	if (!c->charged)
		return;
	cs->pool_avail += (int64_t)c->charged;
	c->charged = 0;
	if (cs->nwaiting > 0 && cs->pool_avail > 0 && !cs->wake_timer)
		cs->wake_timer = brk_timer_add(cs->loop, 0, on_pool_wake, cs);
}

int brk_conns_count(const brk_conns *cs) { return cs->count; }

int brk_conns_set_tls(brk_conns *cs, const brk_listener *listener, brk_tls *tls)
{
	int free_slot = -1;
	for (int i = 0; i < BRK_MAX_LISTENERS; i++) {
		if (cs->tls[i].listener == listener) {
			brk_tls_unref(cs->tls[i].tls);
			cs->tls[i].tls = brk_tls_ref(tls);
			return 0;
		}
		if (!cs->tls[i].listener && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -ENOSPC;
	cs->tls[free_slot].listener = listener;
	cs->tls[free_slot].tls = brk_tls_ref(tls);
	return 0;
}

static brk_tls *tls_of(const brk_conns *cs, const brk_listener *listener)
{
	for (int i = 0; i < BRK_MAX_LISTENERS; i++)
		if (cs->tls[i].listener == listener)
			return cs->tls[i].tls;
	return NULL;
}

void brk_conns_set_sasl(brk_conns *cs, const brk_sasl *sasl) { cs->sasl = sasl; }

brk_sasl_session *brk_conn_sasl(const brk_conn *c) { return c->sasl; }

void brk_conn_close_after_response(brk_conn *c) { c->close_after = true; }

const char *brk_conn_client_host(const brk_conn *c) { return c ? c->host : ""; }

const brk_listener *brk_conn_listener(const brk_conn *c) { return c->listener; }

const char *brk_conn_listener_name(const brk_conn *c)
{
	return c && c->listener ? c->listener->name : NULL;
}

const char *brk_conn_principal(const brk_conn *c) { return c->principal; }

int brk_conn_set_principal(brk_conn *c, const char *principal)
{
	size_t n = strlen(principal);
	if (n >= sizeof(c->principal))
		return -ENAMETOOLONG;
	memcpy(c->principal, principal, n + 1);
	return 0;
}

static void format_peer(const struct sockaddr *sa, socklen_t len, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, size, "%s:%d", host, port);
}

/* The peer's address as text (IPv4-mapped IPv6 as IPv4); "" if unknown. */
static void format_ip(const struct sockaddr *sa, socklen_t len, char *out, size_t size)
{
	out[0] = '\0';
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)size);
	} else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a))
			inet_ntop(AF_INET, a->s6_addr + 12, out, (socklen_t)size);
		else
			inet_ntop(AF_INET6, a, out, (socklen_t)size);
	}
}

/* max.connections.per.ip for ip: its override, else the default. */
static int32_t ip_limit(const brk_config *cfg, const char *ip)
{
	for (int i = 0; i < cfg->nmax_connections_per_ip_overrides; i++)
		if (strcmp(cfg->max_connections_per_ip_overrides[i].ip, ip) == 0)
			return cfg->max_connections_per_ip_overrides[i].max;
	return cfg->max_connections_per_ip;
}

int brk_conn_add(brk_conns *cs, int fd, const struct sockaddr *peer, socklen_t peerlen,
		 const brk_listener *listener)
{
	char ip[INET6_ADDRSTRLEN];
	format_ip(peer, peerlen, ip, sizeof(ip));
	int32_t limit = ip_limit(cs->cfg, ip);
	if (limit < INT32_MAX) {
		/* Kafka's ConnectionQuotas.inc: the new connection is closed
		 * at once when its address already has limit open. */
		int32_t n = 0;
		for (const brk_conn *o = cs->head; o && n < limit; o = o->next)
			n += strcmp(o->ip, ip) == 0;
		if (n >= limit) {
			static brk_ratelog refused = BRK_RATELOG_INIT;
			brk_ratelog_printf(&refused, "samsa: refusing connection from %s: %d connections "
					   "from it (max.connections.per.ip %d)\n", ip, (int)n, (int)limit);
			close(fd);
			return -EDQUOT;
		}
	}
	brk_conn *c = brk_slab_alloc(&cs->slab);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* -1: leave the OS default (Kafka's socket.*.buffer.bytes). */
	if (cs->cfg->socket_send_buffer_bytes >= 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cs->cfg->socket_send_buffer_bytes, sizeof(int));
	if (cs->cfg->socket_receive_buffer_bytes >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cs->cfg->socket_receive_buffer_bytes, sizeof(int));
	if (brk_sasl_listener_needs_session(listener)) {
		c->sasl = cs->sasl ? brk_sasl_session_new(cs->sasl, listener) : NULL;
		if (!c->sasl) {
			close(fd);
			brk_slab_free(&cs->slab, c);
			return -ENOMEM;
		}
	}
	c->set = cs;
	c->fd = fd;
	c->listener = listener;
	strcpy(c->principal, "User:ANONYMOUS");
	c->st = IDLE;
	c->last_active = brk_mono_ms();
	memcpy(c->ip, ip, sizeof(ip));
	format_peer(peer, peerlen, c->peer, sizeof(c->peer));
	/* Kafka's client host: "/" + the address, without the port. */
	const char *colon = strrchr(c->peer, ':');
	if (c->peer[0] != '?' && colon)
		snprintf(c->host, sizeof(c->host), "/%.*s", (int)(colon - c->peer), c->peer);
	/* The arena holds what a decoded request needs: a few times the
	 * largest frame, which bounds what one request can make us hold. */
	proto_arena_init(&c->arena, (size_t)cs->cfg->socket_request_max_bytes * 4 + (64u << 20));
	proto_writer_init(&c->body);
	proto_writer_init(&c->head);
	c->chunk_fd = -1;
	if (listener->security_protocol == BRK_SEC_SSL ||
	    listener->security_protocol == BRK_SEC_SASL_SSL) {
		brk_tls *tls = tls_of(cs, listener);
		c->ssl = tls ? brk_tls_accept(tls, fd) : NULL;
		if (!c->ssl) {
			close(fd);
			proto_writer_free(&c->body);
			proto_writer_free(&c->head);
			brk_slab_free(&cs->slab, c);
			return tls ? -ENOMEM : -EPROTONOSUPPORT;
		}
		c->tls = brk_tls_ref(tls);
	}
	int rc = brk_loop_watch(cs->loop, fd, BRK_READABLE, on_io, c);
	if (rc < 0) {
		SSL_free(c->ssl);
		brk_tls_unref(c->tls);
		close(fd);
		brk_sasl_session_free(c->sasl);
		proto_writer_free(&c->body);
		proto_writer_free(&c->head);
		brk_slab_free(&cs->slab, c);
		return rc;
	}
	c->watching = BRK_READABLE;
	c->next = cs->head;
	if (cs->head)
		cs->head->prev = c;
	cs->head = c;
	cs->count++;
	idle_arm(cs, cs->cfg->connections_max_idle_ms);
	return 0;
}

/* Give back the descriptor of the file chunk being sent, if pinned (the
 * segment's open-file cache may close it again). */
static void chunk_unpin(brk_conn *c)
{
	if (c->chunk_fd < 0)
		return;
	const proto_file_chunk *ch = &c->body.chunks[c->chunk_i];
	ch->unpin(ch->ref);
	c->chunk_fd = -1;
}

/* Close and free c. reason (may be NULL) goes to the log. */
static void conn_close(brk_conn *c, const char *reason)
{
	brk_conns *cs = c->set;
	static brk_ratelog closed = BRK_RATELOG_INIT;
	if (reason)
		brk_ratelog_printf(&closed, "samsa: closing connection from %s: %s\n", c->peer, reason);
	if (c->st == DELAYED && c->req.cancel)
		c->req.cancel(&c->req);
	if (c->resume_timer)
		brk_timer_cancel(cs->loop, c->resume_timer);
	if (c->throttle_timer)
		brk_timer_cancel(cs->loop, c->throttle_timer);
	quiet_unlink(c);
	gave_back(cs, conn_buffer_bytes(c) + sizeof(*c));
	brk_loop_unwatch(cs->loop, c->fd);
	SSL_free(c->ssl); /* no close_notify: the socket closes now */
	brk_tls_unref(c->tls);
	close(c->fd);
	chunk_unpin(c);
	brk_sasl_session_free(c->sasl);
	proto_writer_free(&c->body); /* releases file chunk refs */
	proto_writer_free(&c->head);
	proto_arena_free(&c->arena);
	free(c->in);
	pool_release(c);
	if (c->mem_wait)
		cs->nwaiting--;
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	cs->count--;
	brk_slab_free(&cs->slab, c);
	if (cs->slot_fn && cs->count < cs->cfg->max_connections)
		cs->slot_fn(cs->loop, cs->slot_arg);
}

void brk_conns_drain(brk_conns *cs)
{
	cs->draining = true;
	brk_conn *c = cs->head;
	while (c) {
		brk_conn *next = c->next;
		if (c->st == IDLE)
			conn_close(c, NULL);
		c = next;
	}
}

void brk_conns_free(brk_conns *cs)
{
	if (!cs)
		return;
	cs->slot_fn = NULL;
	while (cs->head)
		conn_close(cs->head, NULL);
	if (cs->idle_timer)
		brk_timer_cancel(cs->loop, cs->idle_timer);
	if (cs->wake_timer)
		brk_timer_cancel(cs->loop, cs->wake_timer);
	if (cs->park_timer)
		brk_timer_cancel(cs->loop, cs->park_timer);
	if (cs->trim_timer)
		brk_timer_cancel(cs->loop, cs->trim_timer);
	for (int i = 0; i < BRK_MAX_LISTENERS; i++)
		brk_tls_unref(cs->tls[i].tls);
	brk_slab_destroy(&cs->slab);
	free(cs);
}

/* ---- output ---- */

/* Put the size and response header in front of the body; false when the
 * response cannot be framed (no memory, above 2 GiB). */
static bool response_start(brk_conn *c)
{
	const brk_request *req = &c->req;
	if (c->body.err)
		return false;
	const proto_api_desc *d = proto_api_desc_lookup(req->api_key);
	int16_t hv = proto_response_header_version(req->api_key, req->api_version,
						   d ? d->flexible_min : -1);
	proto_writer_reset(&c->head);
	size_t at = proto_writer_reserve(&c->head, 4);
	if (!c->raw_response)
		proto_response_header_encode(&c->head, hv, req->correlation_id);
	int64_t size = (int64_t)c->head.len - 4 + proto_writer_total(&c->body);
	if (c->head.err || size > INT32_MAX)
		return false;
	proto_writer_patch_int32(&c->head, at, (int32_t)size);
	c->head_off = 0;
	c->mem_off = 0;
	c->chunk_i = 0;
	c->chunk_off = 0;
	c->st = SENDING;
	return true;
}

/* ---- transport (plain socket or TLS) ---- */

/* A TLS result that is not a byte count: remember what OpenSSL waits for,
 * return -1 with errno EAGAIN (or EPROTO for a broken session, the reason
 * in why). */
static ssize_t tls_fail(brk_conn *c, ssize_t r)
{
	if (r == BRK_TLS_WANT_READ || r == BRK_TLS_WANT_WRITE) {
		c->tls_want |= r == BRK_TLS_WANT_READ ? BRK_READABLE : BRK_WRITABLE;
		errno = EAGAIN;
	} else {
		errno = EPROTO;
	}
	return -1;
}

/* Like read(2) on c's transport; a broken TLS session is EPROTO with the
 * reason in why. */
static ssize_t conn_recv(brk_conn *c, void *buf, size_t n, char *why, size_t whysize)
{
	if (!c->ssl)
		return read(c->fd, buf, n);
	ssize_t r = brk_tls_read(c->ssl, buf, n, why, whysize);
	return r >= 0 ? r : tls_fail(c, r);
}

/* Like sendmsg(2) of iov[0..n) on c's transport (more: a file chunk
 * follows). Over TLS several parts go out as one record of at most
 * BRK_TLS_RECORD_MAX bytes (the head with the body's start), one part as
 * it is. */
static ssize_t conn_send_mem(brk_conn *c, const struct iovec *iov, int n, bool more, char *why,
			     size_t whysize)
{
	if (!c->ssl) {
		struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
		return sendmsg(c->fd, &msg, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
	}
	const void *p = iov[0].iov_base;
	size_t len = iov[0].iov_len;
	if (n > 1) {
		/* The head and the start of the body in one record (the rest
		 * of a large body goes out from its own buffer next). */
		uint8_t *rec = c->set->tls_record;
		size_t at = 0;
		for (int i = 0; i < n && at < BRK_TLS_RECORD_MAX; i++) {
			size_t k = iov[i].iov_len;
			if (k > BRK_TLS_RECORD_MAX - at)
				k = BRK_TLS_RECORD_MAX - at;
			memcpy(rec + at, iov[i].iov_base, k);
			at += k;
		}
		p = rec;
		len = at;
	}
	ssize_t r = brk_tls_write(c->ssl, p, len, why, whysize);
	return r > 0 ? r : tls_fail(c, r);
}

/* Like sendfile(2) of n bytes of fd from pos on c's transport (0: the
 * file ended). */
static ssize_t conn_send_file(brk_conn *c, int fd, off_t pos, size_t n, char *why, size_t whysize)
{
	if (!c->ssl)
		return sendfile(c->fd, fd, &pos, n);
	ssize_t r;
	if (brk_tls_ktls_send(c->ssl)) {
		r = brk_tls_sendfile(c->ssl, fd, pos, n, why, whysize);
		return r > 0 ? r : tls_fail(c, r);
	}
	if (n > BRK_TLS_RECORD_MAX)
		n = BRK_TLS_RECORD_MAX;
	uint8_t *rec = c->set->tls_record;
	do
		r = pread(fd, rec, n, pos);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return r;
	r = brk_tls_write(c->ssl, rec, (size_t)r, why, whysize);
	return r > 0 ? r : tls_fail(c, r);
}

/* The TLS handshake of c, driven by on_io until it completes. Returns
 * false when c was closed. */
static bool conn_handshake(brk_conn *c)
{
	char why[256];
	int r = brk_tls_handshake(c->ssl, why, sizeof(why));
	if (r == BRK_TLS_ERROR) {
		conn_close(c, why);
		return false;
	}
	int want = r == BRK_TLS_WANT_WRITE ? BRK_WRITABLE : BRK_READABLE;
	if (r == 1) {
		/* No last_active update while handshaking: the idle deadline
		 * runs from the accept (see "Transport"). */
		/* On SSL listeners the principal is the client certificate's;
		 * on SASL_SSL ones SASL names it (Kafka's
		 * DefaultKafkaPrincipalBuilder). */
		char principal[BRK_PRINCIPAL_MAX] = "User:ANONYMOUS";
		if (c->listener->security_protocol == BRK_SEC_SSL &&
		    (brk_tls_principal(c->tls, c->ssl, principal, sizeof(principal), why, sizeof(why)) < 0 ||
		     brk_conn_set_principal(c, principal) < 0)) {
			conn_close(c, why);
			return false;
		}
		if (strcmp(principal, "User:ANONYMOUS") != 0) {
			static brk_ratelog authed = BRK_RATELOG_INIT;
			brk_ratelog_printf(&authed, "samsa: connection from %s on listener %s: TLS client "
					   "principal %s\n", c->peer, c->listener->name, principal);
		}
		brk_tls_note_path(c->tls, c->ssl);
		c->tls_ready = true;
		c->last_active = brk_mono_ms();
		want = BRK_READABLE;
	}
	if (want != c->watching) {
		if (brk_loop_watch(c->set->loop, c->fd, want, on_io, c) < 0) {
			conn_close(c, "cannot watch the socket");
			return false;
		}
		c->watching = want;
	}
	return true;
}

/* Write as much of the response as the socket takes. Returns 1 when all is
 * sent, 0 when the socket is full, -1 on an error (reason set). */
static int response_send(brk_conn *c, const char **reason, char *why, size_t whysize)
{
	proto_writer *b = &c->body;
	for (;;) {
		bool more_chunks = c->chunk_i < b->nchunks;
		size_t bound = more_chunks ? b->chunks[c->chunk_i].at : b->len;
		if (c->head_off < c->head.len || c->mem_off < bound) {
			struct iovec iov[2];
			int n = 0;
			if (c->head_off < c->head.len) {
				iov[n].iov_base = c->head.buf + c->head_off;
				iov[n++].iov_len = c->head.len - c->head_off;
			}
			if (c->mem_off < bound) {
				iov[n].iov_base = b->buf + c->mem_off;
				iov[n++].iov_len = bound - c->mem_off;
			}
			ssize_t w = conn_send_mem(c, iov, n, more_chunks, why, whysize);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 0;
				*reason = errno == EPROTO && c->ssl ? why : strerror(errno);
				return -1;
			}
			size_t left = (size_t)w;
			c->last_active = brk_mono_ms();
			size_t h = c->head.len - c->head_off;
			if (h > left)
				h = left;
			c->head_off += h;
			c->mem_off += left - h;
			continue;
		}
		if (!more_chunks)
			return 1;
		const proto_file_chunk *ch = &b->chunks[c->chunk_i];
		if (c->chunk_off >= ch->len) {
			chunk_unpin(c);
			c->chunk_i++;
			c->chunk_off = 0;
			continue;
		}
		int fd = ch->fd;
		if (ch->pin) {
			/* a segment's descriptor is lent while its bytes go out */
			if (c->chunk_fd < 0 && (c->chunk_fd = ch->pin(ch->ref)) < 0) {
				c->chunk_fd = -1;
				*reason = "segment file cannot be opened";
				return -1;
			}
			fd = c->chunk_fd;
		}
		off_t pos = (off_t)(ch->pos + c->chunk_off);
		ssize_t w = conn_send_file(c, fd, pos, (size_t)(ch->len - c->chunk_off), why, whysize);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			*reason = errno == EPROTO && c->ssl ? why : strerror(errno);
			return -1;
		}
		if (w == 0) {
			/* The file is shorter than the response says (truncated
			 * under us): the frame cannot be completed. */
			*reason = "segment file shorter than the response";
			return -1;
		}
		c->chunk_off += w;
		c->last_active = brk_mono_ms();
	}
}

/* The request in flight is answered: forget it and its frame. */
static void request_finish(brk_conn *c)
{
	chunk_unpin(c);
	proto_writer_reset(&c->body);
	if (c->body.cap > IN_SHRINK) { /* a rare huge response: give it back */
		proto_writer_free(&c->body);
		proto_writer_init(&c->body);
	}
	proto_arena_reset_trim(&c->arena, IN_SHRINK); /* a huge request's chunk goes too */
	memset(&c->req, 0, sizeof(c->req));
	c->done_early = c->no_response = c->close_pending = c->raw_response = false;
	c->in_pos = c->frame_end;
	if (c->in_pos == c->in_len) {
		c->in_pos = c->in_len = 0;
		if (c->in_cap > IN_SHRINK) {
			free(c->in);
			c->in = NULL;
			c->in_cap = 0;
			pool_release(c);
		}
	}
	if (c->charged && c->in_len - c->in_pos <= IN_INITIAL) {
		/* Bounded request memory: give the grown buffer back now,
		 * keeping the unread bytes that follow in a small one. A new
		 * small buffer, not realloc: shrunk in place, each small
		 * buffer would stay at the start of a big hole and keep the
		 * holes from joining, so the heap grew by 20 MB for a 1 MB
		 * pool (limits test). */
		size_t left = c->in_len - c->in_pos;
		uint8_t *p = malloc(IN_INITIAL);
		if (p) {
			memcpy(p, c->in + c->in_pos, left);
			free(c->in);
			c->in = p;
			c->in_cap = IN_INITIAL;
			c->in_pos = 0;
			c->in_len = left;
			pool_release(c);
		} else {
			memmove(c->in, c->in + c->in_pos, left);
			c->in_pos = 0;
			c->in_len = left;
		}
	}
	c->st = IDLE;
	c->last_active = brk_mono_ms();
	idle_arm(c->set, c->set->cfg->connections_max_idle_ms);
	if (c->in_pos == c->in_len)
		quiet_push(c, c->last_active);
}

/* ---- input ---- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int16_t be16(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | p[1]); }

/*
 * Dispatch the frame at in_pos (complete, size bytes after the length).
 * Returns 0, or -1 when the connection must close (reason set).
 */
static int dispatch(brk_conn *c, int32_t size, const char **reason, char *why, size_t whysize)
{
	const uint8_t *frame = c->in + c->in_pos + 4;
	if (brk_sasl_expects_raw(c->sasl)) {
		/* A SASL token after a v0 SaslHandshake: no Kafka header
		 * either way (Kafka's SaslServerAuthenticator). */
		memset(&c->req, 0, sizeof(c->req));
		c->req.conn = c;
		c->frame_end = c->in_pos + 4 + (size_t)size;
		c->raw_response = true;
		c->st = HANDLING;
		if (brk_sasl_raw_token(c->sasl, c, frame, (size_t)size, &c->body, why, whysize) < 0) {
			*reason = why;
			return -1;
		}
		if (!response_start(c)) {
			*reason = "response could not be built";
			return -1;
		}
		return 0;
	}
	if (size < 4) {
		*reason = "request shorter than its header";
		return -1;
	}
	int16_t key = be16(frame), version = be16(frame + 2);
	const brk_api *api = key >= 0 && key <= BRK_API_KEY_MAX ? &brk_apis[key] : NULL;
	const proto_api_desc *d = api && api->handler ? proto_api_desc_lookup(key) : NULL;
	if (!d) {
		snprintf(why, whysize, "unknown or unserved API key %d", key);
		*reason = why;
		return -1;
	}
	if (key != API_VERSIONS_KEY && (version < api->min_version || version > api->max_version)) {
		snprintf(why, whysize, "%s version %d is not served (%d-%d)", d->name, version,
			 api->min_version, api->max_version);
		*reason = why;
		return -1;
	}
	if (c->sasl && brk_sasl_gate(c->sasl, key, version >= api->min_version &&
				     version <= api->max_version, brk_mono_ms(), why,
				     whysize) != BRK_SASL_DISPATCH) {
		*reason = why;
		return -1;
	}
	proto_reader r;
	proto_reader_init(&r, frame, (size_t)size);
	proto_request_header h;
	int16_t hv = proto_request_header_version(key, version, d->flexible_min);
	if (proto_request_header_decode(&r, hv, &h) != 0 || r.err) {
		snprintf(why, whysize, "%s v%d: request header does not parse", d->name, version);
		*reason = why;
		return -1;
	}
	brk_request *req = &c->req;
	memset(req, 0, sizeof(*req));
	req->conn = c;
	req->api_key = key;
	req->api_version = version;
	req->correlation_id = h.correlation_id;
	req->client_id = h.client_id;
	req->body = r;
	req->body_start = r;
	req->arena = &c->arena;
	req->out = &c->body;
	req->now_ms = brk_wall_ms();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	req->start_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	c->frame_end = c->in_pos + 4 + (size_t)size;
	c->st = HANDLING;
	int rc = api->handler(req);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	req->thread_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - req->start_ns;
	req->start_ns = 0;
	switch (rc) {
	case BRK_RESPOND:
		request_answered(c);
		break;
	case BRK_NO_RESPONSE:
		request_answered(c);
		request_finish(c);
		return 0;
	case BRK_DELAYED:
		if (!c->done_early) {
			c->st = DELAYED;
			return 0;
		}
		if (c->close_pending) {
			snprintf(why, whysize, "%s v%d: response could not be built", d->name, version);
			*reason = why;
			return -1;
		}
		request_answered(c);
		if (c->no_response) {
			request_finish(c);
			return 0;
		}
		break;
	default:
		snprintf(why, whysize, "%s v%d: request does not parse", d->name, version);
		*reason = why;
		return -1;
	}
	if (!response_start(c)) {
		*reason = "response could not be built";
		return -1;
	}
	return 0;
}

/* Move the unread bytes to the front and grow the buffer to hold need bytes
 * from there (IDLE only: no frame is in flight). A buffer grown above
 * IN_INITIAL takes its capacity from the request memory pool when
 * queued.max.request.bytes is set. Returns 0, -ENOMEM, or -EAGAIN when the
 * pool is exhausted (nothing changed but the move). */
static int make_room(brk_conn *c, size_t need)
{
	if (c->in_pos > 0) {
		memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
		c->in_len -= c->in_pos;
		c->in_pos = 0;
	}
	if (c->in_cap < need || c->in_cap == 0) {
		size_t cap = need > IN_INITIAL ? need : IN_INITIAL;
		brk_conns *cs = c->set;
		bool pooled = cs->cfg->queued_max_request_bytes > 0 && cap > IN_INITIAL;
		/* Kafka's SimpleMemoryPool, non-strict: granted while
		 * anything is left. */
		if (pooled && cs->pool_avail <= 0)
			return -EAGAIN;
		uint8_t *p = realloc(c->in, cap);
		if (!p)
			return -ENOMEM;
		c->in = p;
		c->in_cap = cap;
		if (pooled) {
			cs->pool_avail -= (int64_t)(cap - c->charged);
			c->charged = cap;
		}
	}
	return 0;
}

/* The size field of the frame at in_pos; false while fewer than 4 bytes
 * of it are here. */
static bool frame_size(const brk_conn *c, int32_t *size)
{
	if (c->in_len - c->in_pos < 4)
		return false;
	*size = (int32_t)be32(c->in + c->in_pos);
	return true;
}

static void on_throttle_end(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conn *c = arg;
	c->throttle_timer = 0;
	advance(c);
}

/* Whether c is muted by a quota now (KIP-219); arms the timer that ends
 * it. A connection with no timer (no memory) is not held back. */
static bool throttled(brk_conn *c)
{
	if (c->throttle_timer)
		return true;
	int64_t left = c->throttle_until - brk_mono_ms();
	if (left <= 0)
		return false;
	c->throttle_timer = brk_timer_add(c->set->loop, left, on_throttle_end, c);
	return c->throttle_timer != 0;
}

void brk_conn_throttle(brk_conn *c, int32_t ms)
{
	int64_t until = brk_mono_ms() + (ms > 0 ? ms : 0);
	if (until > c->throttle_until)
		c->throttle_until = until;
}

/*
 * Drive c as far as it goes without waiting: send, dispatch buffered frames.
 * Returns false when c was closed.
 */
static bool advance(brk_conn *c)
{
	const char *reason = NULL;
	char why[256];
	bool closed = false;
	for (;;) {
		if (c->st == SENDING) {
			int r = response_send(c, &reason, why, sizeof(why));
			if (r < 0)
				goto close;
			if (r == 0)
				break;
			request_finish(c);
			if (c->close_after) {
				reason = "closed after its answer (SASL)";
				goto close;
			}
		}
		if (c->st != IDLE)
			break;
		if (c->set->draining) {
			conn_close(c, NULL);
			return false;
		}
		if (throttled(c))
			break;
		int32_t size;
		if (!frame_size(c, &size)) {
			if (tls_read_pending(c, &closed))
				continue;
			if (closed)
				return false;
			break;
		}
		/* Checked before anything is allocated for the frame; before
		 * SASL authentication completes, against
		 * sasl.server.max.receive.size too. */
		int32_t max = brk_sasl_max_frame(c->sasl, c->set->cfg->socket_request_max_bytes);
		if (size < 0 || size > max) {
			snprintf(why, sizeof(why), "request size %d outside 0..%d (%s)", (int)size, (int)max,
				 max < c->set->cfg->socket_request_max_bytes
					 ? "sasl.server.max.receive.size before authentication"
					 : "socket.request.max.bytes");
			reason = why;
			goto close;
		}
		if (c->in_len - c->in_pos < 4 + (size_t)size) {
			if (tls_read_pending(c, &closed))
				continue;
			if (closed)
				return false;
			break; /* conn_read makes room for it */
		}
		if (dispatch(c, size, &reason, why, sizeof(why)) < 0)
			goto close;
	}
	/* Read while there is room that does not move the frame in flight;
	 * when idle the buffer is made room for on the next read. */
	int want = 0;
	if (c->st == SENDING)
		want |= BRK_WRITABLE;
	if ((c->st == IDLE || c->in_len < c->in_cap) && !c->mem_wait && !c->throttle_timer)
		want |= BRK_READABLE;
	want |= c->tls_want; /* what a TLS read or write waits for */
	if (want != c->watching) {
		if (brk_loop_watch(c->set->loop, c->fd, want, on_io, c) < 0) {
			reason = "cannot watch the socket";
			goto close;
		}
		c->watching = want;
	}
	return true;
close:
	conn_close(c, reason);
	return false;
}

/* Read what the socket has into the buffer. Returns false when c was closed. */
static bool conn_read(brk_conn *c)
{
	if (c->st == IDLE) {
		/* Room for at least the rest of the current frame; its size
		 * passed the limit in advance() before we get here. */
		int32_t size;
		size_t need = frame_size(c, &size) && size > 0 ? 4 + (size_t)size : 4;
		/* Also compact once the unread bytes sit in the second half, so
		 * pipelined requests are not read a few bytes at a time. */
		if (c->in_len == c->in_cap || c->in_cap - c->in_pos < need ||
		    c->in_pos > c->in_cap / 2) {
			int rc = make_room(c, need);
			if (rc == -EAGAIN) {
				/* queued.max.request.bytes reached: stop
				 * reading until memory is given back. */
				if (!c->mem_wait) {
					c->mem_wait = true;
					c->set->nwaiting++;
				}
				return true;
			}
			if (rc < 0) {
				conn_close(c, "out of memory for the request");
				return false;
			}
		}
	}
	if (c->in_len == c->in_cap)
		return true; /* in flight and full: wait for the response */
	char why[256] = "";
	size_t before = c->in_len;
	for (;;) {
		ssize_t n = conn_recv(c, c->in + c->in_len, c->in_cap - c->in_len, why, sizeof(why));
		if (n > 0) {
			c->in_len += (size_t)n;
			c->last_active = brk_mono_ms();
			/* TLS hands over one record per read: go on while there
			 * is room (until OpenSSL waits for the socket). */
			if (c->ssl && c->in_len < c->in_cap)
				continue;
			return true;
		}
		/* Over TLS, what was read before the socket ran dry or the
		 * peer closed is handled first (the close shows again at the
		 * next read: the socket stays readable at its end). A broken
		 * session (a bad record or MAC, SSL_ERROR_SSL/SYSCALL) closes
		 * at once: OpenSSL allows no more I/O on it, so no answer could
		 * go out, and nothing would wake us for it again. */
		if (n == 0 && c->ssl && c->in_len > before)
			return true;
		if (n < 0 && c->ssl && errno == EPROTO) {
			conn_close(c, why);
			return false;
		}
		if (n == 0) {
			conn_close(c, NULL); /* the client closed */
			return false;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return true;
		conn_close(c, errno == ECONNRESET ? NULL : errno == EPROTO && c->ssl ? why : strerror(errno));
		return false;
	}
}

/* Over TLS, bytes OpenSSL has decrypted and not handed over are not
 * signalled by the socket: read them when a frame waits for more. Returns
 * true when bytes were read; *closed when c was closed meanwhile. */
static bool tls_read_pending(brk_conn *c, bool *closed)
{
	if (!c->ssl || c->st != IDLE || c->mem_wait || !brk_tls_pending(c->ssl))
		return false;
	size_t before = c->in_len;
	if (!conn_read(c)) {
		*closed = true;
		return false;
	}
	return c->in_len > before;
}

static void on_io(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)fd;
	brk_conn *c = arg;
	if (c->ssl && !c->tls_ready) {
		if (!conn_handshake(c))
			return;
		if (!c->tls_ready)
			return;
		events |= BRK_READABLE; /* the first request may be in already */
	}
	if (c->tls_want) {
		/* whatever OpenSSL waited for has come: try both again */
		c->tls_want = 0;
		events |= BRK_READABLE;
	}
	if ((events & BRK_READABLE) && !conn_read(c))
		return;
	advance(c);
}

/* ---- delayed requests ---- */

static void on_resume(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_conn *c = arg;
	c->resume_timer = 0;
	if (c->close_pending) {
		conn_close(c, "response could not be built");
		return;
	}
	request_answered(c);
	if (c->no_response) {
		request_finish(c);
	} else if (!response_start(c)) {
		conn_close(c, "response could not be built");
		return;
	}
	advance(c);
}

void brk_request_complete(brk_request *req, int how)
{
	brk_conn *c = req->conn;
	req->cancel = NULL;
	req->delayed = NULL;
	c->no_response = how == BRK_COMPLETE_NO_RESPONSE;
	c->close_pending = how == BRK_COMPLETE_CLOSE;
	if (c->st == HANDLING) {
		c->done_early = true; /* the handler's return finishes it */
		return;
	}
	if (c->st != DELAYED)
		return; /* completed twice: ignore the second */
	c->st = RESUMING;
	c->resume_timer = brk_timer_add(c->set->loop, 0, on_resume, c);
	if (!c->resume_timer)
		on_resume(c->set->loop, c); /* no memory for a timer: go on now */
}
