/*
 * peer.c - a client connection to one other broker (see peer.h for the
 * rules callers see).
 *
 * States of the connection:
 *
 *   DOWN        no socket. A send arms the connect timer for the end of
 *               the backoff (next_connect_ms); when it fires with requests
 *               queued, a non-blocking connect starts.
 *   CONNECTING  connect(2) in progress: watching EPOLLOUT, the connect
 *               timeout armed.
 *   UP          established: always reading (responses, and the remote's
 *               close), writing while a request frame is not fully sent.
 *
 *   HANDSHAKE   connected, the TLS handshake in progress (brk_peer_set_tls
 *               only): watching what OpenSSL asks for, the connect timeout
 *               still armed (it bounds connect and handshake together).
 *
 *   DOWN -> CONNECTING [-> HANDSHAKE] -> UP; CONNECTING/HANDSHAKE/UP ->
 *   DOWN at every close (conn_close), which also fails every pending
 *   request.
 *
 * Over TLS, requests are written with SSL_write (a write OpenSSL could not
 * finish is repeated with the same bytes: the frame's cursor has not
 * moved) and responses read with SSL_read, reading on while OpenSSL holds
 * decrypted bytes the socket will not signal. SASL (brk_peer_set_sasl)
 * starts in transport_up(), so over SASL_SSL it runs inside TLS.
 *
 * Requests live on one of three FIFO lists:
 *
 *   queue     accepted by brk_peer_send, not sent yet;
 *   inflight  sent or being sent, oldest first; only the tail may be partly
 *             written; at most max_in_flight;
 *   done      their outcome is decided (an error), the callback has not run
 *             yet: drain() pops them one at a time, so a destroy from inside
 *             one of those callbacks finds the rest there and completes them
 *             before it returns.
 *
 * A response answers inflight's head, whose correlation id it must carry;
 * its callback runs while the body is still in the input buffer, which
 * nothing touches until the callback returns (callbacks cannot read from
 * the socket, and a close cannot happen inside one: brk_peer_set_address
 * closes from a timer, brk_peer_destroy leaves the buffer to peer_free).
 *
 * Lifetime: every loop entry point (file event, timer) and brk_peer_destroy
 * hold a depth count while they run; a destroy with the count above zero
 * only marks the peer dying (after completing its requests), and the
 * outermost one frees it on the way out. After anything that can run
 * callbacks (drain, a response), code checks p->dying and unwinds.
 *
 * Deadlines: every request has one (send time + request_timeout_ms). As the
 * timeout is the same for all and the lists are FIFO, the earliest is the
 * head of inflight or of queue: one timer, armed for that.
 */
#include "broker/peer.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/security/tls.h"
#include "broker/security/sasl.h"
#include "protocol/gen/messages.h"
#include "protocol/header.h"

#define IN_INITIAL (16 * 1024) /* input buffer for small responses, bytes */

typedef enum { PEER_DOWN, PEER_CONNECTING, PEER_HANDSHAKE, PEER_UP } peer_state;

typedef struct peer_req {
	struct peer_req *next;
	int16_t api_key;
	int16_t api_version;
	int16_t resp_header_version;
	int32_t correlation_id;
	int64_t deadline;        /* monotonic ms */
	int err;                 /* on the done list: what the callback gets */
	bool sent;               /* every byte of the frame is written */
	size_t off;              /* bytes of the frame written */
	brk_peer_done_fn done;
	void *arg;
	proto_writer frame;      /* int32 size, header, body; freed once sent */
} peer_req;

typedef struct req_list {
	peer_req *head, *tail;
	int n;
} req_list;

struct brk_peer {
	brk_loop *loop;
	int32_t node_id;
	char *host;
	int port;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint64_t addr_gen;       /* bumped by each address change */
	char *client_id;         /* NULL: a null client id */
	brk_peer_limits lim;

	peer_state st;
	int fd;                  /* -1 when DOWN */
	int watching;            /* events asked of the loop for fd */
	uint64_t conn_gen;       /* addr_gen the connection was opened with */
	uint64_t connects;       /* connections established */
	int failures;            /* closes since the last established connection */
	int64_t next_connect_ms; /* monotonic; no connect starts before */
	char last_error[160];

	req_list queue, inflight, done;
	int32_t next_correlation_id;

	uint8_t *in;             /* input buffer: [in_pos, in_len) unread */
	size_t in_cap, in_len, in_pos;

	uint64_t connect_timer;         /* starts a connect (end of backoff) */
	uint64_t connect_timeout_timer; /* CONNECTING for too long */
	uint64_t request_timer;         /* the earliest request deadline */
	int64_t request_timer_at;       /* its deadline, INT64_MAX when none */
	uint64_t reset_timer;           /* closes a connection to an old address */

	int depth;               /* entry points and destroys on the stack */
	bool dying;              /* brk_peer_destroy was called */

	/* TLS (brk_peer_set_tls): the context (a reference), whether the
	 * certificate must name the host, the session of the connection,
	 * and the events its handshake waits for. */
	SSL_CTX *tls_ctx;
	bool tls_verify_host;
	SSL *ssl;
	int hs_want;
	/* SASL (brk_peer_set_sasl): while authenticating, only the
	 * exchange's own requests go out. */
	brk_sasl_credentials *sasl; /* NULL: none */
	brk_sasl_client sasl_client;
	bool authenticating;
	bool reauth_due;         /* re-authenticate before the next request */
	uint64_t auth_failures;  /* exchanges refused in a row (for the log) */
	uint64_t reauth_timer;
};

/* ---- small helpers ---- */

const char *brk_peer_strerror(int err)
{
	switch (err) {
	case BRK_PEER_OK: return "success";
	case BRK_PEER_ERR_CONNECT: return "connection could not be established";
	case BRK_PEER_ERR_DISCONNECTED: return "connection closed before the response";
	case BRK_PEER_ERR_TIMEOUT: return "request timed out";
	case BRK_PEER_ERR_PROTOCOL: return "protocol error in the response";
	case BRK_PEER_ERR_TOO_LARGE: return "response larger than max_response_bytes";
	case BRK_PEER_ERR_DESTROYED: return "peer destroyed";
	case BRK_PEER_ERR_INVALID: return "invalid argument";
	case BRK_PEER_ERR_ENCODE: return "request could not be encoded";
	case BRK_PEER_ERR_QUEUE_FULL: return "too many requests pending";
	case BRK_PEER_ERR_NOMEM: return "out of memory";
	default: return "unknown error";
	}
}

void brk_peer_limits_default(brk_peer_limits *l)
{
	l->connect_timeout_ms = 10000;
	l->request_timeout_ms = 30000;
	l->reconnect_backoff_ms = 50;
	l->reconnect_backoff_max_ms = 1000;
	l->max_response_bytes = 100 * 1024 * 1024;
	l->max_in_flight = 1;
	l->max_queued = 1024;
}

static bool limits_valid(const brk_peer_limits *l)
{
	return l->connect_timeout_ms > 0 && l->request_timeout_ms > 0 &&
	       l->reconnect_backoff_ms >= 0 && l->reconnect_backoff_max_ms >= l->reconnect_backoff_ms &&
	       l->max_response_bytes >= 8 && l->max_in_flight >= 1 &&
	       l->max_queued >= l->max_in_flight;
}

static void list_push(req_list *l, peer_req *r)
{
	r->next = NULL;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	l->n++;
}

static peer_req *list_pop(req_list *l)
{
	peer_req *r = l->head;
	if (!r)
		return NULL;
	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	l->n--;
	r->next = NULL;
	return r;
}

static void req_free(peer_req *r)
{
	proto_writer_free(&r->frame);
	free(r);
}

static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void set_error(brk_peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(brk_peer *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
	va_end(ap);
}

/*
 * host:port as a socket address. A numeric address never blocks; a name is
 * resolved by getaddrinfo, which may (see "Addresses" in peer.h). The first
 * address returned is used. Returns 0 or BRK_PEER_ERR_INVALID.
 */
static int resolve(const char *host, int port, struct sockaddr_storage *out, socklen_t *outlen)
{
	struct addrinfo hints, *res = NULL;
	if (!host || !host[0] || port <= 0 || port > 65535)
		return BRK_PEER_ERR_INVALID;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc == EAI_NONAME) {
		/* Not AI_ADDRCONFIG: on a host with loopback only it would
		 * refuse "localhost". */
		hints.ai_flags = 0;
		rc = getaddrinfo(host, NULL, &hints, &res);
	}
	if (rc != 0 || !res)
		return BRK_PEER_ERR_INVALID;
	int ret = BRK_PEER_ERR_INVALID;
	for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET && ai->ai_addrlen <= sizeof(*out)) {
			memset(out, 0, sizeof(*out));
			memcpy(out, ai->ai_addr, ai->ai_addrlen);
			((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
			*outlen = ai->ai_addrlen;
			ret = 0;
			break;
		}
		if (ai->ai_family == AF_INET6 && ai->ai_addrlen <= sizeof(*out)) {
			memset(out, 0, sizeof(*out));
			memcpy(out, ai->ai_addr, ai->ai_addrlen);
			((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
			*outlen = ai->ai_addrlen;
			ret = 0;
			break;
		}
	}
	freeaddrinfo(res);
	return ret;
}

/* The wait before the next connect after p->failures closes in a row. */
static int64_t backoff_ms(const brk_peer *p)
{
	int64_t b = p->lim.reconnect_backoff_ms, max = p->lim.reconnect_backoff_max_ms;
	for (int i = 1; i < p->failures && i < 62 && b < max; i++)
		b *= 2;
	return b < max ? b : max;
}

/* ---- lifetime ---- */

static void peer_free(brk_peer *p)
{
	SSL_CTX_free(p->tls_ctx);
	if (p->sasl)
		OPENSSL_cleanse(p->sasl, sizeof(*p->sasl));
	free(p->sasl);
	free(p->in);
	free(p->host);
	free(p->client_id);
	free(p);
}

static void enter(brk_peer *p) { p->depth++; }

/* Leave an entry point; the outermost frees a dying peer. */
static void leave(brk_peer *p)
{
	if (--p->depth == 0 && p->dying)
		peer_free(p);
}

/* Run the callbacks of the done list, oldest first. A callback may destroy
 * p: the destroy completes what is left here, and this loop ends. */
static void drain(brk_peer *p)
{
	peer_req *r;
	while ((r = list_pop(&p->done)) != NULL) {
		r->done(p, r->err, NULL, r->arg);
		req_free(r);
	}
}

/* ---- timers ---- */

static void on_request_timer(brk_loop *loop, void *arg);

/* Arm the request timer for the earliest deadline pending. */
static void arm_request_timer(brk_peer *p)
{
	int64_t at = INT64_MAX;
	if (p->inflight.head)
		at = p->inflight.head->deadline;
	if (p->queue.head && p->queue.head->deadline < at)
		at = p->queue.head->deadline;
	if (at == p->request_timer_at)
		return;
	if (p->request_timer)
		brk_timer_cancel(p->loop, p->request_timer);
	p->request_timer = 0;
	p->request_timer_at = INT64_MAX;
	if (at == INT64_MAX)
		return;
	p->request_timer = brk_timer_add(p->loop, at - brk_mono_ms(), on_request_timer, p);
	if (p->request_timer)
		p->request_timer_at = at;
}

static void cancel_timer(brk_peer *p, uint64_t *id)
{
	if (*id)
		brk_timer_cancel(p->loop, *id);
	*id = 0;
}

/* ---- closing ---- */

/* Close the socket (no callbacks). */
static void socket_close(brk_peer *p)
{
	if (p->fd >= 0) {
		brk_loop_unwatch(p->loop, p->fd);
		SSL_free(p->ssl);
		p->ssl = NULL;
		close(p->fd);
	}
	p->fd = -1;
	p->watching = 0;
	p->st = PEER_DOWN;
	cancel_timer(p, &p->connect_timeout_timer);
	cancel_timer(p, &p->reauth_timer);
	if (p->authenticating)
		brk_sasl_client_end(&p->sasl_client);
	p->authenticating = p->reauth_due = false;
}

/* Move every pending request to the done list with err (on a timeout, the
 * ones not past their deadline get BRK_PEER_ERR_DISCONNECTED). */
static void fail_pending(brk_peer *p, int err)
{
	int64_t now = brk_mono_ms();
	req_list *lists[2] = { &p->inflight, &p->queue };
	for (int i = 0; i < 2; i++) {
		peer_req *r;
		while ((r = list_pop(lists[i])) != NULL) {
			r->err = err;
			if (err == BRK_PEER_ERR_TIMEOUT && r->deadline > now)
				r->err = BRK_PEER_ERR_DISCONNECTED;
			list_push(&p->done, r);
		}
	}
	cancel_timer(p, &p->request_timer);
	p->request_timer_at = INT64_MAX;
}

/*
 * Close the connection (p->last_error says why) and fail everything pending
 * with err. With backoff, the next connect waits (peer.h); without (address
 * change), it may start at once. Runs callbacks: the caller returns to its
 * entry point right after.
 */
static void conn_close(brk_peer *p, int err, bool backoff)
{
	socket_close(p);
	p->in_pos = p->in_len = 0;
	if (p->in_cap > IN_INITIAL) {
		free(p->in);
		p->in = NULL;
		p->in_cap = 0;
	}
	if (backoff) {
		p->failures++;
		p->next_connect_ms = brk_mono_ms() + backoff_ms(p);
	} else {
		p->failures = 0;
		p->next_connect_ms = 0;
	}
	fail_pending(p, err);
	drain(p);
}

/* ---- connecting ---- */

static void on_io(brk_loop *loop, int fd, int events, void *arg);
static void on_connect_timer(brk_loop *loop, void *arg);

/* Arm the connect timer for the end of the backoff, unless connected or
 * already armed. */
static void schedule_connect(brk_peer *p)
{
	if (p->st != PEER_DOWN || p->connect_timer)
		return;
	int64_t delay = p->next_connect_ms - brk_mono_ms();
	p->connect_timer = brk_timer_add(p->loop, delay > 0 ? delay : 0, on_connect_timer, p);
}

/* Ask the loop for the events the state needs. Returns 0 or -errno. */
static int update_watch(brk_peer *p)
{
	int want = 0;
	if (p->st == PEER_CONNECTING)
		want = BRK_WRITABLE;
	else if (p->st == PEER_HANDSHAKE)
		want = p->hs_want;
	else if (p->st == PEER_UP)
		want = BRK_READABLE | (p->inflight.tail && !p->inflight.tail->sent ? BRK_WRITABLE : 0);
	if (want == p->watching)
		return 0;
	int rc = brk_loop_watch(p->loop, p->fd, want, on_io, p);
	if (rc == 0)
		p->watching = want;
	return rc;
}

/*
 * Write what may be written: the rest of the partly sent request, then
 * queued ones while fewer than max_in_flight are in flight. Returns 0 or
 * -errno (the socket failed; the caller closes, or leaves EPOLLOUT on so
 * that the loop finds out).
 */
static void auth_begin(brk_peer *p);

static int flush(brk_peer *p)
{
	if (p->st != PEER_UP)
		return 0;
	if (p->reauth_due && !p->authenticating && p->inflight.n == 0)
		auth_begin(p);
	for (;;) {
		peer_req *t = p->inflight.tail;
		if (t && !t->sent) {
			ssize_t n;
			if (p->ssl) {
				char why[160];
				n = brk_tls_write(p->ssl, t->frame.buf + t->off, t->frame.len - t->off,
						  why, sizeof(why));
				if (n == BRK_TLS_WANT_READ || n == BRK_TLS_WANT_WRITE)
					break; /* reading goes on; EPOLLOUT stays on */
				if (n < 0) {
					set_error(p, "send: %s", why);
					update_watch(p);
					return -EPROTO;
				}
			} else {
				n = send(p->fd, t->frame.buf + t->off, t->frame.len - t->off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				int e = errno;
				set_error(p, "send: %s", strerror(e));
				update_watch(p);
				return -e;
			}
			t->off += (size_t)n;
			if (t->off == t->frame.len) {
				t->sent = true;
				proto_writer_free(&t->frame); /* only the response is awaited now */
			}
			continue;
		}
		if (!p->queue.head || p->inflight.n >= p->lim.max_in_flight || p->authenticating ||
		    p->reauth_due)
			break;
		list_push(&p->inflight, list_pop(&p->queue));
	}
	int rc = update_watch(p);
	if (rc < 0)
		set_error(p, "cannot watch the socket: %s", strerror(-rc));
	return rc;
}

/* The connection carries requests now. */
static void transport_up(brk_peer *p)
{
	p->st = PEER_UP;
	p->connects++;
	p->failures = 0;
	cancel_timer(p, &p->connect_timeout_timer);
	if (p->sasl)
		auth_begin(p);
	if (flush(p) < 0)
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
}

/* One step of the TLS handshake (HANDSHAKE). */
static void handshake_step(brk_peer *p)
{
	char why[200];
	int r = brk_tls_handshake(p->ssl, why, sizeof(why));
	if (r == 1) {
		transport_up(p); /* SASL, when set, starts there */
		return;
	}
	if (r == BRK_TLS_ERROR) {
		set_error(p, "TLS handshake with broker %" PRId32 ": %s", p->node_id, why);
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	p->hs_want = r == BRK_TLS_WANT_WRITE ? BRK_WRITABLE : BRK_READABLE;
	int rc = update_watch(p);
	if (rc < 0) {
		set_error(p, "cannot watch the socket: %s", strerror(-rc));
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
	}
}

/* TCP is connected: TLS first when set, else requests. */
static void connect_done(brk_peer *p)
{
	if (!p->tls_ctx) {
		transport_up(p);
		return;
	}
	p->ssl = brk_tls_connect(p->tls_ctx, p->fd, p->host, p->tls_verify_host);
	if (!p->ssl) {
		set_error(p, "TLS: no session (out of memory)");
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	p->st = PEER_HANDSHAKE;
	handshake_step(p);
}

static void on_connect_timeout(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_peer *p = arg;
	p->connect_timeout_timer = 0;
	enter(p);
	if (p->st == PEER_CONNECTING || p->st == PEER_HANDSHAKE) {
		set_error(p, "connect: no connection%s after %" PRId64 " ms",
			  p->st == PEER_HANDSHAKE ? " (TLS handshake)" : "", p->lim.connect_timeout_ms);
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
	}
	leave(p);
}

/* Start a non-blocking connect to the current address. */
static void connect_start(brk_peer *p)
{
	int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		set_error(p, "socket: %s", strerror(errno));
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	p->fd = fd;
	p->conn_gen = p->addr_gen;
	p->st = PEER_CONNECTING;
	if (connect(fd, (const struct sockaddr *)&p->addr, p->addrlen) == 0) {
		connect_done(p); /* loopback may connect at once */
		return;
	}
	if (errno != EINPROGRESS && errno != EINTR) {
		set_error(p, "connect: %s", strerror(errno));
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	int rc = update_watch(p);
	if (rc < 0) {
		set_error(p, "cannot watch the socket: %s", strerror(-rc));
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	p->connect_timeout_timer = brk_timer_add(p->loop, p->lim.connect_timeout_ms,
						 on_connect_timeout, p);
}

/* EPOLLOUT (or an error) while connecting: the outcome of connect(2). */
static void connect_finish(brk_peer *p)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr) {
		set_error(p, "connect: %s", strerror(soerr));
		conn_close(p, BRK_PEER_ERR_CONNECT, true);
		return;
	}
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	if (getpeername(p->fd, (struct sockaddr *)&ss, &sslen) < 0 && errno == ENOTCONN)
		return; /* not yet: wait for the next event */
	connect_done(p);
}

static void on_connect_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_peer *p = arg;
	p->connect_timer = 0;
	enter(p);
	if (p->st == PEER_DOWN && p->queue.n > 0)
		connect_start(p);
	leave(p);
}

/* ---- reading ---- */

/*
 * Deliver the complete frames in the input buffer, oldest request first.
 * Returns false when the connection closed or p is dying (the caller
 * unwinds at once).
 */
static bool deliver(brk_peer *p)
{
	int fd = p->fd;
	while (p->in_len - p->in_pos >= 4) {
		int32_t size = (int32_t)be32(p->in + p->in_pos);
		/* Checked from the size field alone, before any room is made
		 * for the frame. */
		if (size > p->lim.max_response_bytes) {
			set_error(p, "response of %" PRId32 " bytes above the limit of %" PRId32,
				  size, p->lim.max_response_bytes);
			conn_close(p, BRK_PEER_ERR_TOO_LARGE, true);
			return false;
		}
		if (size < 4) {
			set_error(p, "response size %" PRId32 " is shorter than a response header", size);
			conn_close(p, BRK_PEER_ERR_PROTOCOL, true);
			return false;
		}
		if (p->in_len - p->in_pos < 4 + (size_t)size)
			break;
		peer_req *r = p->inflight.head;
		if (!r || !r->sent) {
			set_error(p, "a response (correlation id %" PRId32 ") with no request awaiting one",
				  (int32_t)be32(p->in + p->in_pos + 4));
			conn_close(p, BRK_PEER_ERR_PROTOCOL, true);
			return false;
		}
		proto_reader body;
		int32_t cid;
		proto_reader_init(&body, p->in + p->in_pos + 4, (size_t)size);
		if (proto_response_header_decode(&body, r->resp_header_version, &cid) != 0) {
			set_error(p, "response header v%d does not parse", r->resp_header_version);
			conn_close(p, BRK_PEER_ERR_PROTOCOL, true);
			return false;
		}
		if (cid != r->correlation_id) {
			set_error(p, "correlation id %" PRId32 " where %" PRId32 " was expected", cid,
				  r->correlation_id);
			conn_close(p, BRK_PEER_ERR_PROTOCOL, true);
			return false;
		}
		list_pop(&p->inflight);
		/* The frame is consumed, but its bytes stay where they are
		 * until the next read, after the callback. */
		p->in_pos += 4 + (size_t)size;
		r->done(p, BRK_PEER_OK, &body, r->arg);
		req_free(r);
		if (p->dying || p->fd != fd)
			return false;
	}
	if (p->in_pos == p->in_len) {
		p->in_pos = p->in_len = 0;
		if (p->in_cap > IN_INITIAL && p->inflight.n == 0 && p->queue.n == 0) {
			free(p->in); /* idle: give a grown buffer back */
			p->in = NULL;
			p->in_cap = 0;
		}
	}
	return true;
}

/* Room in the input buffer for the rest of the frame at in_pos (whose size,
 * when known, passed the limit in deliver). Returns 0 or -ENOMEM. */
static int make_room(brk_peer *p)
{
	size_t unread = p->in_len - p->in_pos;
	size_t need = 4;
	if (unread >= 4) {
		int32_t size = (int32_t)be32(p->in + p->in_pos);
		if (size < 0 || size > p->lim.max_response_bytes)
			return -EINVAL; /* deliver closes before we get here */
		need += (size_t)size;
	}
	if (p->in_pos > 0 && (p->in_len == p->in_cap || p->in_cap - p->in_pos < need)) {
		memmove(p->in, p->in + p->in_pos, unread);
		p->in_len = unread;
		p->in_pos = 0;
	}
	if (p->in_cap < need || p->in_len == p->in_cap) {
		size_t cap = need > IN_INITIAL ? need : IN_INITIAL;
		if (cap <= p->in_cap)
			cap = p->in_cap * 2;
		uint8_t *b = realloc(p->in, cap);
		if (!b)
			return -ENOMEM;
		p->in = b;
		p->in_cap = cap;
	}
	return 0;
}

static void conn_read(brk_peer *p)
{
again:
	if (make_room(p) < 0) {
		set_error(p, "no room for a response (out of memory)");
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
		return;
	}
	ssize_t n;
	if (p->ssl) {
		char why[160];
		n = brk_tls_read(p->ssl, p->in + p->in_len, p->in_cap - p->in_len, why, sizeof(why));
		if (n == BRK_TLS_WANT_READ || n == BRK_TLS_WANT_WRITE)
			return;
		if (n == BRK_TLS_ERROR) {
			set_error(p, "read: %s", why);
			conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
			return;
		}
	} else {
		do
			n = read(p->fd, p->in + p->in_len, p->in_cap - p->in_len);
		while (n < 0 && errno == EINTR);
	}
	if (n == 0) {
		set_error(p, "connection closed by broker %" PRId32, p->node_id);
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
		return;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		set_error(p, "read: %s", strerror(errno));
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
		return;
	}
	p->in_len += (size_t)n;
	if (!deliver(p))
		return;
	/* Slots freed: send what waits. */
	if (flush(p) < 0) {
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
		return;
	}
	arm_request_timer(p);
	/* Decrypted bytes OpenSSL holds are not signalled by the socket. */
	if (p->ssl && brk_tls_pending(p->ssl))
		goto again;
}

static void on_io(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)fd;
	brk_peer *p = arg;
	enter(p);
	if (p->st == PEER_CONNECTING) {
		connect_finish(p);
	} else if (p->st == PEER_HANDSHAKE) {
		handshake_step(p);
	} else if (p->st == PEER_UP) {
		if (events & BRK_READABLE)
			conn_read(p);
		else if ((events & BRK_WRITABLE) && flush(p) < 0)
			conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
	}
	leave(p);
}

/* ---- timeouts and address changes ---- */

static void on_request_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_peer *p = arg;
	p->request_timer = 0;
	p->request_timer_at = INT64_MAX;
	enter(p);
	int64_t now = brk_mono_ms();
	peer_req *r = p->inflight.head;
	if (r && r->deadline <= now) {
		/* The response may still come: the connection cannot be
		 * trusted to stay in step (Kafka's NetworkClient closes too). */
		set_error(p, "request timed out after %" PRId64 " ms (correlation id %" PRId32 ")",
			  p->lim.request_timeout_ms, r->correlation_id);
		conn_close(p, BRK_PEER_ERR_TIMEOUT, true);
	} else {
		/* Never sent (no connection yet, or others in flight): fail
		 * those alone. */
		while (p->queue.head && p->queue.head->deadline <= now) {
			r = list_pop(&p->queue);
			r->err = BRK_PEER_ERR_TIMEOUT;
			list_push(&p->done, r);
		}
		arm_request_timer(p);
		drain(p);
	}
	leave(p);
}

static void on_reset_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_peer *p = arg;
	p->reset_timer = 0;
	enter(p);
	if (p->st != PEER_DOWN && p->conn_gen != p->addr_gen) {
		set_error(p, "broker %" PRId32 " moved to %s:%d", p->node_id, p->host, p->port);
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, false);
	}
	leave(p);
}

/* ---- public ---- */

brk_peer *brk_peer_new(brk_loop *loop, int32_t node_id, const char *host, int port,
		       const char *client_id, const brk_peer_limits *limits, int *err)
{
	int e = BRK_PEER_ERR_INVALID;
	brk_peer_limits lim;
	if (limits)
		lim = *limits;
	else
		brk_peer_limits_default(&lim);
	brk_peer *p = NULL;
	if (!loop || !limits_valid(&lim))
		goto fail;
	e = BRK_PEER_ERR_NOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto fail;
	p->loop = loop;
	p->node_id = node_id;
	p->lim = lim;
	p->fd = -1;
	p->st = PEER_DOWN;
	p->request_timer_at = INT64_MAX;
	e = resolve(host, port, &p->addr, &p->addrlen);
	if (e != 0)
		goto fail;
	e = BRK_PEER_ERR_NOMEM;
	p->host = strdup(host);
	p->port = port;
	if (!p->host || (client_id && !(p->client_id = strdup(client_id))))
		goto fail;
	return p;
fail:
	if (p)
		peer_free(p);
	if (err)
		*err = e;
	return NULL;
}

void brk_peer_set_tls(brk_peer *p, SSL_CTX *ctx, bool verify_host)
{
	if (ctx)
		SSL_CTX_up_ref(ctx);
	SSL_CTX_free(p->tls_ctx);
	p->tls_ctx = ctx;
	p->tls_verify_host = verify_host;
}

int brk_peer_set_address(brk_peer *p, const char *host, int port)
{
	struct sockaddr_storage addr;
	socklen_t addrlen;
	if (p->dying || !host)
		return BRK_PEER_ERR_INVALID;
	if (port == p->port && strcmp(host, p->host) == 0)
		return 0;
	int rc = resolve(host, port, &addr, &addrlen);
	if (rc != 0)
		return rc;
	char *h = strdup(host);
	if (!h)
		return BRK_PEER_ERR_NOMEM;
	free(p->host);
	p->host = h;
	p->port = port;
	p->addr = addr;
	p->addrlen = addrlen;
	p->addr_gen++;
	/* A new address starts without backoff. */
	p->failures = 0;
	p->next_connect_ms = 0;
	if (p->st == PEER_DOWN && p->connect_timer) {
		cancel_timer(p, &p->connect_timer);
		schedule_connect(p);
	}
	/* Closing here could pull the input buffer from under a response
	 * callback that called us: a timer does it. */
	if (p->st != PEER_DOWN && !p->reset_timer)
		p->reset_timer = brk_timer_add(p->loop, 0, on_reset_timer, p);
	return 0;
}

/* A request framed and ready to queue (*out), or an error (BRK_PEER_*). */
static int build_req(brk_peer *p, int16_t api_key, int16_t api_version, brk_peer_encode_fn encode,
		     void *encode_arg, brk_peer_done_fn done, void *arg, peer_req **out)
{
	const proto_api_desc *d = proto_api_desc_lookup(api_key);
	if (!encode || !done || !d || api_version < d->min_version || api_version > d->max_version)
		return BRK_PEER_ERR_INVALID;
	peer_req *r = calloc(1, sizeof(*r));
	if (!r)
		return BRK_PEER_ERR_NOMEM;
	proto_writer_init(&r->frame);
	proto_request_header h = {
		.api_key = api_key,
		.api_version = api_version,
		.correlation_id = p->next_correlation_id,
		.client_id = proto_cstr(p->client_id),
	};
	size_t at = proto_writer_reserve(&r->frame, 4);
	int16_t hv = proto_request_header_version(api_key, api_version, d->flexible_min);
	proto_request_header_encode(&r->frame, hv, &h);
	enter(p); /* an encode callback that destroys p must not free it under us */
	int rc = encode(&r->frame, api_version, encode_arg);
	bool dying = p->dying;
	leave(p);
	if (dying) {
		req_free(r);
		return BRK_PEER_ERR_DESTROYED;
	}
	if (r->frame.err || rc != 0 || r->frame.nchunks > 0 || r->frame.len - 4 > INT32_MAX) {
		rc = r->frame.err == PROTO_ERR_NOMEM || rc == PROTO_ERR_NOMEM ? BRK_PEER_ERR_NOMEM
									      : BRK_PEER_ERR_ENCODE;
		req_free(r);
		return rc;
	}
	proto_writer_patch_int32(&r->frame, at, (int32_t)(r->frame.len - 4));
	r->api_key = api_key;
	r->api_version = api_version;
	r->resp_header_version = proto_response_header_version(api_key, api_version, d->flexible_min);
	r->correlation_id = h.correlation_id;
	r->deadline = brk_mono_ms() + p->lim.request_timeout_ms;
	r->done = done;
	r->arg = arg;
	p->next_correlation_id = (int32_t)(((uint32_t)p->next_correlation_id + 1) & INT32_MAX);
	*out = r;
	return 0;
}

/* ---- SASL (brk_peer_set_sasl) ---- */

#define API_SASL_HANDSHAKE 17
#define API_SASL_AUTHENTICATE 36

typedef struct auth_token {
	const uint8_t *p;
	size_t len;
} auth_token;

static int encode_handshake(proto_writer *w, int16_t version, void *arg)
{
	SaslHandshakeRequest m;
	SaslHandshakeRequest_init(&m);
	m.mechanism = proto_cstr(brk_sasl_mechanism_name(*(const int *)arg));
	return SaslHandshakeRequest_encode(w, version, &m);
}

static int encode_authenticate(proto_writer *w, int16_t version, void *arg)
{
	const auth_token *t = arg;
	SaslAuthenticateRequest m;
	SaslAuthenticateRequest_init(&m);
	m.auth_bytes.ptr = t->p;
	m.auth_bytes.len = (int32_t)t->len;
	return SaslAuthenticateRequest_encode(w, version, &m);
}

/* The exchange failed: close (from inside a response callback: deliver
 * stops at once, seeing the descriptor gone). */
static void auth_fail(brk_peer *p)
{
	/* Kafka logs each failed authentication; here the 1st, 2nd, 4th,
	 * 8th... in a row, so a broker refused for good does not fill the
	 * log. */
	p->auth_failures++;
	if ((p->auth_failures & (p->auth_failures - 1)) == 0)
		fprintf(stderr, "samsa: authentication to broker %" PRId32 " (%s:%d) failed (%" PRIu64
			" time%s in a row): %s\n", p->node_id, p->host, p->port, p->auth_failures,
			p->auth_failures == 1 ? "" : "s", p->last_error);
	conn_close(p, BRK_PEER_ERR_CONNECT, true);
}

/* Put an exchange request in flight (nothing else is). */
static bool auth_send(brk_peer *p, int16_t key, brk_peer_encode_fn encode, void *earg,
		      brk_peer_done_fn done)
{
	peer_req *r;
	if (build_req(p, key, 1, encode, earg, done, p, &r) != 0) {
		set_error(p, "SASL: the request could not be built");
		return false;
	}
	list_push(&p->inflight, r);
	arm_request_timer(p);
	return true;
}

static void on_reauth_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_peer *p = arg;
	p->reauth_timer = 0;
	enter(p);
	if (p->st == PEER_UP) {
		p->reauth_due = true;
		if (flush(p) < 0)
			conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
	}
	leave(p);
}

static void on_authenticate(brk_peer *p, int err, proto_reader *body, void *arg);

/* Send the client's next token, or finish. */
static void auth_next(brk_peer *p, const uint8_t *in, size_t inlen, int64_t lifetime_ms)
{
	uint8_t out[BRK_SASL_CLIENT_TOKEN_MAX];
	size_t outlen = 0;
	char err[160];
	int rc = brk_sasl_client_step(&p->sasl_client, in, inlen, out, &outlen, err, sizeof(err));
	if (rc < 0) {
		set_error(p, "SASL %s: %s", brk_sasl_mechanism_name(p->sasl->mechanism), err);
		auth_fail(p);
		return;
	}
	if (rc == 1) {
		auth_token t = { out, outlen };
		if (!auth_send(p, API_SASL_AUTHENTICATE, encode_authenticate, &t, on_authenticate))
			auth_fail(p);
		return;
	}
	brk_sasl_client_end(&p->sasl_client);
	p->authenticating = false;
	p->auth_failures = 0;
	if (lifetime_ms > 0) /* KIP-368: again at 85 % of the session */
		p->reauth_timer = brk_timer_add(p->loop, lifetime_ms * 85 / 100, on_reauth_timer, p);
	if (flush(p) < 0)
		conn_close(p, BRK_PEER_ERR_DISCONNECTED, true);
}

static void on_authenticate(brk_peer *p, int err, proto_reader *body, void *arg)
{
	(void)arg;
	if (err != BRK_PEER_OK)
		return; /* the connection is closing */
	SaslAuthenticateResponse m;
	SaslAuthenticateResponse_init(&m);
	proto_arena arena;
	proto_arena_init(&arena, 1 << 20);
	if (SaslAuthenticateResponse_decode(body, &arena, 1, &m) != 0) {
		set_error(p, "SASL: SaslAuthenticate response does not parse");
		proto_arena_free(&arena);
		auth_fail(p);
		return;
	}
	if (m.error_code != 0) {
		set_error(p, "SASL authentication failed (error %d): %.*s", (int)m.error_code,
			  m.error_message.len > 0 ? (int)m.error_message.len : 0,
			  m.error_message.ptr ? m.error_message.ptr : "");
		proto_arena_free(&arena);
		auth_fail(p);
		return;
	}
	auth_next(p, m.auth_bytes.ptr, m.auth_bytes.len > 0 ? (size_t)m.auth_bytes.len : 0,
		  m.session_lifetime_ms);
	proto_arena_free(&arena);
}

static void on_handshake(brk_peer *p, int err, proto_reader *body, void *arg)
{
	(void)arg;
	if (err != BRK_PEER_OK)
		return;
	SaslHandshakeResponse m;
	SaslHandshakeResponse_init(&m);
	proto_arena arena;
	proto_arena_init(&arena, 1 << 20);
	int rc = SaslHandshakeResponse_decode(body, &arena, 1, &m);
	int16_t code = rc == 0 ? m.error_code : -1;
	proto_arena_free(&arena);
	if (code != 0) {
		set_error(p, "SASL handshake for %s refused (error %d)",
			  brk_sasl_mechanism_name(p->sasl->mechanism), (int)code);
		auth_fail(p);
		return;
	}
	brk_sasl_client_start(&p->sasl_client, p->sasl);
	auth_next(p, NULL, 0, 0);
}

/* Begin an exchange on the connection (nothing in flight). */
static void auth_begin(brk_peer *p)
{
	p->authenticating = true;
	p->reauth_due = false;
	cancel_timer(p, &p->reauth_timer);
	if (!auth_send(p, API_SASL_HANDSHAKE, encode_handshake, &p->sasl->mechanism, on_handshake)) {
		/* no memory: try again on the next connection */
		p->authenticating = false;
		p->reauth_due = true;
	}
}

int brk_peer_set_sasl(brk_peer *p, const brk_sasl_credentials *cred)
{
	brk_sasl_credentials *c = NULL;
	if (cred) {
		c = malloc(sizeof(*c));
		if (!c)
			return BRK_PEER_ERR_NOMEM;
		*c = *cred;
	}
	if (p->sasl)
		OPENSSL_cleanse(p->sasl, sizeof(*p->sasl));
	free(p->sasl);
	p->sasl = c;
	return 0;
}

int brk_peer_send(brk_peer *p, int16_t api_key, int16_t api_version, brk_peer_encode_fn encode,
		  void *encode_arg, brk_peer_done_fn done, void *arg)
{
	if (p->dying)
		return BRK_PEER_ERR_DESTROYED;
	if (p->queue.n + p->inflight.n >= p->lim.max_queued)
		return BRK_PEER_ERR_QUEUE_FULL;
	peer_req *r;
	int rc = build_req(p, api_key, api_version, encode, encode_arg, done, arg, &r);
	if (rc != 0)
		return rc;
	list_push(&p->queue, r);
	if (p->st == PEER_DOWN)
		schedule_connect(p);
	else
		(void)flush(p); /* an error leaves EPOLLOUT on: the loop closes */
	arm_request_timer(p);
	return 0;
}

void brk_peer_destroy(brk_peer *p)
{
	if (!p || p->dying)
		return;
	p->dying = true;
	cancel_timer(p, &p->connect_timer);
	cancel_timer(p, &p->reset_timer);
	socket_close(p); /* the input buffer stays: a callback may be reading it */
	fail_pending(p, BRK_PEER_ERR_DESTROYED);
	for (peer_req *r = p->done.head; r; r = r->next)
		r->err = BRK_PEER_ERR_DESTROYED;
	enter(p);
	drain(p);
	leave(p);
}

int32_t brk_peer_node_id(const brk_peer *p) { return p->node_id; }
const char *brk_peer_host(const brk_peer *p) { return p->host; }
int brk_peer_port(const brk_peer *p) { return p->port; }
bool brk_peer_connected(const brk_peer *p) { return p->st == PEER_UP; }
int brk_peer_pending(const brk_peer *p) { return p->queue.n + p->inflight.n + p->done.n; }
int brk_peer_in_flight(const brk_peer *p) { return p->inflight.n; }
uint64_t brk_peer_connects(const brk_peer *p) { return p->connects; }
const char *brk_peer_last_error(const brk_peer *p) { return p->last_error; }
