/*
 * test_peer.c - the broker-to-broker client (broker/peer.h) against a tiny
 * server on 127.0.0.1 that runs on the same loop and that each test drives:
 * it accepts, reads request frames, and answers with canned responses,
 * holds them, answers with a wrong correlation id, closes mid-response,
 * stalls, or announces an oversized frame.
 *
 * Covered: ApiVersions and Metadata round trips with the generated codecs
 * and hand-checked header bytes (request header v0/v1/v2, response header
 * v0/v1, ApiVersions' always v0); pipelining order with 1 and 3 in flight
 * and the in-flight bound; a correlation id mismatch; a close
 * mid-response; a request timeout (the timed-out request and the one
 * behind it) and a queued request timing out during the backoff; connect
 * refused, then a reconnect after the (exponential) backoff; a connect
 * timeout (a listener with a full accept queue drops the SYN); an oversized
 * response frame refused from its size field; 1 MiB responses pipelined,
 * read in pieces; destroy with requests pending, from outside and from
 * inside callbacks; sending from callbacks; an address change; the send
 * errors.
 *
 * The loop runs under run_until(), a polling timer that stops it when the
 * test's condition holds or a deadline passes.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/loop.h"
#include "broker/peer.h"
#include "protocol/buf.h"
#include "protocol/gen/messages.h"
#include "protocol/header.h"

#define MAXREQ 64

/* ---- the in-test server ---- */

typedef enum {
	SRV_ANSWER,     /* answer once `hold` requests are unanswered */
	SRV_WRONG_CORR, /* answer with the correlation id + 1 */
	SRV_CLOSE_MID,  /* write the size and part of the answer, then close */
	SRV_STALL,      /* read, never answer */
	SRV_OVERSIZE,   /* write only a size field of `oversize` */
	SRV_EXACT,      /* answer with a frame of exactly `oversize` bytes */
} srv_mode;

typedef struct srv_req {
	int16_t key, version;
	int32_t corr;
	uint8_t raw[512]; /* the frame after the size field, cut short */
	size_t len;       /* its full length */
} srv_req;

typedef struct srv srv;
/* Writes the response body of rq (after the response header) into w. */
typedef void (*srv_body_fn)(srv *s, const srv_req *rq, proto_writer *w);

struct srv {
	brk_loop *loop;
	int lfd, port;
	int cfd;
	int accepts;
	int64_t accept_ms[16];
	int eofs;               /* connections the peer closed */
	uint8_t buf[1 << 16];
	size_t len;
	srv_req reqs[MAXREQ];
	int nreqs, answered, max_unanswered;
	int hold;
	srv_mode mode;
	int32_t oversize;
	srv_body_fn body;
	uint8_t *out;           /* bytes not yet taken by the socket */
	size_t out_len, out_cap;
	bool close_when_sent;   /* SRV_CLOSE_MID */
};

static uint32_t rd32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int16_t rd16(const uint8_t *b) { return (int16_t)((uint16_t)b[0] << 8 | b[1]); }

static void srv_drop(srv *s);
static void srv_on_client(brk_loop *loop, int fd, int events, void *arg);

/* Write what the socket takes; the rest waits for EPOLLOUT. */
static void srv_pump(srv *s)
{
	while (s->cfd >= 0 && s->out_len > 0) {
		ssize_t w = write(s->cfd, s->out, s->out_len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		ck_assert_int_gt(w, 0);
		memmove(s->out, s->out + w, s->out_len - (size_t)w);
		s->out_len -= (size_t)w;
	}
	if (s->cfd < 0)
		return;
	if (s->out_len == 0 && s->close_when_sent) {
		srv_drop(s);
		return;
	}
	int want = BRK_READABLE | (s->out_len ? BRK_WRITABLE : 0);
	ck_assert_int_eq(brk_loop_watch(s->loop, s->cfd, want, srv_on_client, s), 0);
}

static void write_all(srv *s, const void *buf, size_t n)
{
	if (s->out_len + n > s->out_cap) {
		s->out_cap = (s->out_len + n) * 2;
		s->out = realloc(s->out, s->out_cap);
		ck_assert_ptr_nonnull(s->out);
	}
	memcpy(s->out + s->out_len, buf, n);
	s->out_len += n;
	srv_pump(s);
}

/* The default body: ApiVersions v0 with one key (18, 0-4). */
static void body_api_versions_v0(srv *s, const srv_req *rq, proto_writer *w)
{
	(void)s;
	(void)rq;
	static const uint8_t b[] = { 0, 0, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4 };
	proto_write_raw(w, b, sizeof(b));
}

static void srv_answer(srv *s, const srv_req *rq, int32_t corr)
{
	proto_writer w;
	const proto_api_desc *d = proto_api_desc_lookup(rq->key);
	proto_writer_init(&w);
	size_t at = proto_writer_reserve(&w, 4);
	int16_t hv = proto_response_header_version(rq->key, rq->version, d->flexible_min);
	proto_response_header_encode(&w, hv, corr);
	(s->body ? s->body : body_api_versions_v0)(s, rq, &w);
	proto_writer_patch_int32(&w, at, (int32_t)(w.len - 4));
	write_all(s, w.buf, w.len);
	proto_writer_free(&w);
}

static void srv_drop(srv *s)
{
	if (s->cfd < 0)
		return;
	brk_loop_unwatch(s->loop, s->cfd);
	close(s->cfd);
	s->cfd = -1;
	s->len = 0;
	s->out_len = 0;
	s->close_when_sent = false;
}

static void srv_on_frame(srv *s, const uint8_t *f, size_t size)
{
	ck_assert_int_lt(s->nreqs, MAXREQ);
	ck_assert_uint_ge(size, 8);
	srv_req *rq = &s->reqs[s->nreqs++];
	rq->key = rd16(f);
	rq->version = rd16(f + 2);
	rq->corr = (int32_t)rd32(f + 4);
	rq->len = size;
	memcpy(rq->raw, f, size < sizeof(rq->raw) ? size : sizeof(rq->raw));
	int unanswered = s->nreqs - s->answered;
	if (unanswered > s->max_unanswered)
		s->max_unanswered = unanswered;
	switch (s->mode) {
	case SRV_ANSWER:
		if (unanswered >= s->hold)
			while (s->answered < s->nreqs) {
				srv_answer(s, &s->reqs[s->answered], s->reqs[s->answered].corr);
				s->answered++;
			}
		break;
	case SRV_WRONG_CORR:
		srv_answer(s, rq, rq->corr + 1);
		s->answered++;
		break;
	case SRV_CLOSE_MID: {
		static const uint8_t part[] = { 0, 0, 0, 20, 0, 0, 0 };
		s->close_when_sent = true;
		write_all(s, part, sizeof(part));
		break;
	}
	case SRV_STALL:
		break;
	case SRV_OVERSIZE: {
		uint8_t sz[4] = { (uint8_t)(s->oversize >> 24), (uint8_t)(s->oversize >> 16),
				  (uint8_t)(s->oversize >> 8), (uint8_t)s->oversize };
		write_all(s, sz, sizeof(sz));
		break;
	}
	case SRV_EXACT: {
		/* size, correlation id, then bytes (corr + i) & 0xff */
		size_t n = 4 + (size_t)s->oversize;
		uint8_t *b = calloc(1, n);
		ck_assert_ptr_nonnull(b);
		b[0] = (uint8_t)(s->oversize >> 24);
		b[1] = (uint8_t)(s->oversize >> 16);
		b[2] = (uint8_t)(s->oversize >> 8);
		b[3] = (uint8_t)s->oversize;
		b[4] = (uint8_t)(rq->corr >> 24);
		b[5] = (uint8_t)(rq->corr >> 16);
		b[6] = (uint8_t)(rq->corr >> 8);
		b[7] = (uint8_t)rq->corr;
		for (size_t i = 8; i < n; i++)
			b[i] = (uint8_t)(rq->corr + (int32_t)(i - 8));
		write_all(s, b, n);
		free(b);
		s->answered++;
		break;
	}
	}
}

static void srv_on_client(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)fd;
	srv *s = arg;
	if (events & BRK_WRITABLE) {
		srv_pump(s);
		return;
	}
	ssize_t n = read(s->cfd, s->buf + s->len, sizeof(s->buf) - s->len);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		s->eofs++;
		srv_drop(s);
		return;
	}
	s->len += (size_t)n;
	size_t pos = 0;
	while (s->cfd >= 0 && s->len - pos >= 4) {
		uint32_t size = rd32(s->buf + pos);
		ck_assert_uint_lt(size, sizeof(s->buf) - 4);
		if (s->len - pos < 4 + size)
			break;
		srv_on_frame(s, s->buf + pos + 4, size);
		pos += 4 + size;
	}
	if (s->cfd < 0)
		return;
	memmove(s->buf, s->buf + pos, s->len - pos);
	s->len -= pos;
}

static void srv_on_accept(brk_loop *loop, int fd, int events, void *arg)
{
	(void)fd;
	(void)events;
	srv *s = arg;
	int c = accept(s->lfd, NULL, NULL);
	if (c < 0)
		return;
	srv_drop(s); /* one client at a time: the newest */
	s->answered = s->nreqs; /* what the old one asked stays unanswered */
	if (s->accepts < 16)
		s->accept_ms[s->accepts] = brk_mono_ms();
	s->accepts++;
	ck_assert_int_eq(fcntl(c, F_SETFL, O_NONBLOCK), 0);
	s->cfd = c;
	ck_assert_int_eq(brk_loop_watch(loop, c, BRK_READABLE, srv_on_client, s), 0);
}

/* A listening socket on 127.0.0.1 (port 0: an ephemeral one). */
static int listen_on(int port, int *bound)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(a);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*bound = ntohs(a.sin_port);
	return fd;
}

static void srv_start(srv *s, brk_loop *loop, int port)
{
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->cfd = -1;
	s->hold = 1;
	s->lfd = listen_on(port, &s->port);
	ck_assert_int_eq(brk_loop_watch(loop, s->lfd, BRK_READABLE, srv_on_accept, s), 0);
}

static void srv_stop(srv *s)
{
	srv_drop(s);
	free(s->out);
	s->out = NULL;
	s->out_cap = 0;
	if (s->lfd >= 0) {
		brk_loop_unwatch(s->loop, s->lfd);
		close(s->lfd);
		s->lfd = -1;
	}
}

/* A loopback port nothing listens on (bound a moment ago, then closed). */
static int dead_port(void)
{
	int port;
	int fd = listen_on(0, &port);
	close(fd);
	return port;
}

/* ---- running the loop ---- */

typedef bool (*cond_fn)(void *arg);

typedef struct waiter {
	cond_fn cond;
	void *arg;
	int64_t deadline;
	uint64_t timer;
} waiter;

static void waiter_tick(brk_loop *loop, void *arg)
{
	waiter *w = arg;
	w->timer = 0;
	if (w->cond(w->arg) || brk_mono_ms() >= w->deadline) {
		brk_loop_stop(loop);
		return;
	}
	w->timer = brk_timer_add(loop, 2, waiter_tick, w);
}

/* Run the loop until cond(arg) holds or max_ms pass; returns cond(arg). */
static bool run_until(brk_loop *loop, cond_fn cond, void *arg, int max_ms)
{
	waiter w = { cond, arg, brk_mono_ms() + max_ms, 0 };
	w.timer = brk_timer_add(loop, 0, waiter_tick, &w);
	brk_loop_run(loop);
	if (w.timer)
		brk_timer_cancel(loop, w.timer);
	return cond(arg);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

/* ---- the test's side of the peer ---- */

typedef struct tctx tctx;
typedef struct treq {
	tctx *t;
	int tag;
} treq;

struct tctx {
	brk_loop *loop;
	brk_peer *peer;
	srv s;
	int want;                  /* callbacks to wait for */
	int ncalls;
	int tag[MAXREQ];           /* in callback order */
	int err[MAXREQ];
	int64_t at[MAXREQ];
	bool in_destroy[MAXREQ];   /* ran inside a brk_peer_destroy of the test */
	bool destroying;
	treq reqs[MAXREQ];
	/* per-test hooks, called from the callback after recording */
	void (*on_body)(tctx *t, int tag, proto_reader *body);
	void (*after)(tctx *t, int tag, int err);
	int16_t version;           /* of the request, for on_body */
	int64_t refused_at[8];     /* test_connect_refused_then_reconnect */
	int nrefused;
};

static bool enough_calls(void *arg)
{
	tctx *t = arg;
	return t->ncalls >= t->want;
}

static void record(brk_peer *p, int err, proto_reader *body, void *arg)
{
	treq *r = arg;
	tctx *t = r->t;
	ck_assert_ptr_eq(p, t->peer);
	ck_assert_int_lt(t->ncalls, MAXREQ);
	ck_assert((err == 0) == (body != NULL));
	int i = t->ncalls++;
	t->tag[i] = r->tag;
	t->err[i] = err;
	t->at[i] = brk_mono_ms();
	t->in_destroy[i] = t->destroying;
	if (body && t->on_body)
		t->on_body(t, r->tag, body);
	if (t->after)
		t->after(t, r->tag, err);
}

static int enc_empty(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	ApiVersionsRequest m;
	ApiVersionsRequest_init(&m);
	return ApiVersionsRequest_encode(w, v, &m);
}

static int enc_api_versions(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	ApiVersionsRequest m;
	ApiVersionsRequest_init(&m);
	m.client_software_name = proto_cstr("samsa");
	m.client_software_version = proto_cstr("0.1");
	return ApiVersionsRequest_encode(w, v, &m);
}

static int enc_metadata(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	MetadataRequest m;
	MetadataRequest_MetadataRequestTopic t;
	MetadataRequest_init(&m);
	MetadataRequest_MetadataRequestTopic_init(&t);
	t.name = proto_cstr("t");
	m.topics_count = 1;
	m.topics = &t;
	return MetadataRequest_encode(w, v, &m);
}

static int enc_fail(proto_writer *w, int16_t v, void *arg)
{
	(void)w;
	(void)v;
	(void)arg;
	return PROTO_ERR_INVALID;
}

/* Send ApiVersions v0 tagged tag. */
static void send_tag(tctx *t, int tag)
{
	t->reqs[tag].t = t;
	t->reqs[tag].tag = tag;
	ck_assert_int_eq(brk_peer_send(t->peer, 18, 0, enc_empty, NULL, record, &t->reqs[tag]), 0);
}

static brk_peer_limits fast_limits(void)
{
	brk_peer_limits l;
	brk_peer_limits_default(&l);
	l.connect_timeout_ms = 2000;
	l.request_timeout_ms = 5000;
	l.reconnect_backoff_ms = 50;
	l.reconnect_backoff_max_ms = 1000;
	return l;
}

static void setup(tctx *t, const brk_peer_limits *l)
{
	memset(t, 0, sizeof(*t));
	t->loop = brk_loop_new();
	ck_assert_ptr_nonnull(t->loop);
	srv_start(&t->s, t->loop, 0);
	int err = 0;
	t->peer = brk_peer_new(t->loop, 7, "127.0.0.1", t->s.port, "samsa-test", l, &err);
	ck_assert_msg(t->peer != NULL, "brk_peer_new: %s", brk_peer_strerror(err));
}

static void teardown(tctx *t)
{
	brk_peer_destroy(t->peer);
	srv_stop(&t->s);
	brk_loop_free(t->loop);
}

/* ---- round trips with the generated codecs ---- */

static void body_round_trip(srv *s, const srv_req *rq, proto_writer *w)
{
	(void)s;
	if (rq->key == 18) {
		ApiVersionsResponse m;
		ApiVersionsResponse_ApiVersion k[2] = { { 18, 0, 4 }, { 3, 0, 12 } };
		ApiVersionsResponse_init(&m);
		m.api_keys_count = 2;
		m.api_keys = k;
		m.throttle_time_ms = 3;
		ck_assert_int_eq(ApiVersionsResponse_encode(w, rq->version, &m), 0);
	} else {
		MetadataResponse m;
		MetadataResponse_MetadataResponseBroker b;
		MetadataResponse_init(&m);
		MetadataResponse_MetadataResponseBroker_init(&b);
		b.node_id = 7;
		b.host = proto_cstr("127.0.0.1");
		b.port = 9092;
		m.brokers_count = 1;
		m.brokers = &b;
		m.controller_id = 7;
		m.cluster_id = proto_cstr("c1");
		ck_assert_int_eq(MetadataResponse_encode(w, rq->version, &m), 0);
	}
}

static void check_body(tctx *t, int tag, proto_reader *body)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	if (tag == 0) {
		ApiVersionsResponse m;
		ck_assert_int_eq(ApiVersionsResponse_decode(body, &a, 3, &m), 0);
		ck_assert_int_eq(m.error_code, 0);
		ck_assert_int_eq(m.api_keys_count, 2);
		ck_assert_int_eq(m.api_keys[1].api_key, 3);
		ck_assert_int_eq(m.api_keys[1].max_version, 12);
		ck_assert_int_eq(m.throttle_time_ms, 3);
	} else {
		MetadataResponse m;
		ck_assert_int_eq(MetadataResponse_decode(body, &a, t->version, &m), 0);
		ck_assert_int_eq(m.brokers_count, 1);
		ck_assert_int_eq(m.brokers[0].node_id, 7);
		ck_assert(proto_str_eq(m.brokers[0].host, "127.0.0.1"));
		ck_assert_int_eq(m.brokers[0].port, 9092);
		ck_assert_int_eq(m.controller_id, 7);
		if (t->version >= 2) /* ClusterId is v2+ */
			ck_assert(proto_str_eq(m.cluster_id, "c1"));
		else
			ck_assert_int_eq(m.cluster_id.len, -1);
	}
	ck_assert_uint_eq(proto_reader_left(body), 0); /* the body ends with the frame */
	proto_arena_free(&a);
}

START_TEST(test_round_trip)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	setup(&t, &l);
	t.s.body = body_round_trip;
	t.on_body = check_body;
	ck_assert(!brk_peer_connected(t.peer));

	/* ApiVersions v3: request header v2, response header v0 (KIP-511). */
	t.reqs[0] = (treq){ &t, 0 };
	ck_assert_int_eq(brk_peer_send(t.peer, 18, 3, enc_api_versions, NULL, record, &t.reqs[0]), 0);
	ck_assert_int_eq(brk_peer_pending(t.peer), 1);
	t.want = 1;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], 0);
	ck_assert(brk_peer_connected(t.peer));
	ck_assert_int_eq(brk_peer_pending(t.peer), 0);
	static const uint8_t hdr_v2[] = {
		0x00, 0x12, 0x00, 0x03,                               /* key 18, v3 */
		0x00, 0x00, 0x00, 0x00,                               /* correlation id 0 */
		0x00, 0x0a, 's', 'a', 'm', 's', 'a', '-', 't', 'e', 's', 't', /* client id */
		0x00,                                                 /* no tagged fields */
		0x06, 's', 'a', 'm', 's', 'a', 0x04, '0', '.', '1', 0x00, /* body */
	};
	ck_assert_int_eq(t.s.nreqs, 1);
	ck_assert_uint_eq(t.s.reqs[0].len, sizeof(hdr_v2));
	ck_assert(memcmp(t.s.reqs[0].raw, hdr_v2, sizeof(hdr_v2)) == 0);

	/* Metadata v12: request header v2, response header v1 (its tagged
	 * field byte must be skipped, or the decode above would fail). */
	t.version = 12;
	t.reqs[1] = (treq){ &t, 1 };
	ck_assert_int_eq(brk_peer_send(t.peer, 3, 12, enc_metadata, NULL, record, &t.reqs[1]), 0);
	/* Metadata v1: request header v1 (no tag byte), response header v0. */
	t.reqs[2] = (treq){ &t, 2 };
	t.want = 2;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[1], 0);
	t.version = 1;
	ck_assert_int_eq(brk_peer_send(t.peer, 3, 1, enc_metadata, NULL, record, &t.reqs[2]), 0);
	t.want = 3;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[2], 0);
	static const uint8_t md_v12[] = {
		0x00, 0x03, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x0a, 's', 'a', 'm', 's', 'a', '-', 't', 'e', 's', 't', 0x00,
	};
	static const uint8_t md_v1[] = {
		0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x0a, 's', 'a', 'm', 's', 'a', '-', 't', 'e', 's', 't',
		0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 't', /* Topics ["t"] */
	};
	ck_assert_int_eq(t.s.nreqs, 3);
	ck_assert(memcmp(t.s.reqs[1].raw, md_v12, sizeof(md_v12)) == 0);
	ck_assert_uint_eq(t.s.reqs[2].len, sizeof(md_v1));
	ck_assert(memcmp(t.s.reqs[2].raw, md_v1, sizeof(md_v1)) == 0);
	ck_assert_uint_eq(brk_peer_connects(t.peer), 1); /* one connection for all */
	ck_assert_int_eq(brk_peer_node_id(t.peer), 7);
	teardown(&t);
}
END_TEST

/* ControlledShutdown v0 goes with request header v0: no client id. */
static int enc_controlled_shutdown(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	ControlledShutdownRequest m;
	ControlledShutdownRequest_init(&m);
	m.broker_id = 2;
	return ControlledShutdownRequest_encode(w, v, &m);
}

static void body_controlled_shutdown(srv *s, const srv_req *rq, proto_writer *w)
{
	(void)s;
	ControlledShutdownResponse m;
	ControlledShutdownResponse_init(&m);
	ck_assert_int_eq(ControlledShutdownResponse_encode(w, rq->version, &m), 0);
}

START_TEST(test_header_v0)
{
	tctx t;
	setup(&t, NULL);
	t.s.body = body_controlled_shutdown;
	t.reqs[0] = (treq){ &t, 0 };
	ck_assert_int_eq(brk_peer_send(t.peer, 7, 0, enc_controlled_shutdown, NULL, record, &t.reqs[0]),
			 0);
	t.want = 1;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], 0);
	static const uint8_t exp[] = { 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
				       0x00, 0x00, 0x00, 0x02 };
	ck_assert_uint_eq(t.s.reqs[0].len, sizeof(exp));
	ck_assert(memcmp(t.s.reqs[0].raw, exp, sizeof(exp)) == 0);
	teardown(&t);
}
END_TEST

/* ---- pipelining ---- */

/* 9 requests with max_in_flight 1, then 3. While the server holds its
 * answers, exactly max_in_flight requests reach it; then it answers in
 * batches of max_in_flight, and the callbacks come in order. */
static bool srv_has_want(void *arg)
{
	tctx *t = arg;
	return t->s.nreqs >= t->want;
}

START_TEST(test_pipelining)
{
	for (int inflight = 1; inflight <= 3; inflight += 2) {
		tctx t;
		brk_peer_limits l = fast_limits();
		l.max_in_flight = inflight;
		setup(&t, &l);
		t.s.mode = SRV_STALL;
		for (int i = 0; i < 9; i++)
			send_tag(&t, i);
		ck_assert_int_eq(brk_peer_pending(t.peer), 9);
		t.want = inflight;
		ck_assert(run_until(t.loop, srv_has_want, &t, 3000));
		run_until(t.loop, never, NULL, 100); /* room to send more: it must not */
		ck_assert_int_eq(t.s.nreqs, inflight);
		ck_assert_int_eq(brk_peer_in_flight(t.peer), inflight);
		ck_assert_int_eq(t.ncalls, 0);

		t.s.mode = SRV_ANSWER;
		t.s.hold = inflight;
		while (t.s.answered < t.s.nreqs) {
			srv_answer(&t.s, &t.s.reqs[t.s.answered], t.s.reqs[t.s.answered].corr);
			t.s.answered++;
		}
		t.want = 9;
		ck_assert(run_until(t.loop, enough_calls, &t, 5000));
		for (int i = 0; i < 9; i++) {
			ck_assert_int_eq(t.tag[i], i);
			ck_assert_int_eq(t.err[i], 0);
			ck_assert_int_eq(t.s.reqs[i].corr, i); /* sent in order */
		}
		ck_assert_int_eq(t.s.max_unanswered, inflight);
		ck_assert_int_eq(brk_peer_in_flight(t.peer), 0);
		teardown(&t);
	}
}
END_TEST

/* A response sent from a callback goes after the pending ones, and is
 * answered on the same connection. */
static void chain_after(tctx *t, int tag, int err)
{
	(void)err;
	if (tag < 5)
		send_tag(t, tag + 10); /* 10..14 */
}

START_TEST(test_send_from_callback)
{
	tctx t;
	setup(&t, NULL);
	t.after = chain_after;
	for (int i = 0; i < 5; i++)
		send_tag(&t, i);
	t.want = 10;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	int exp[] = { 0, 1, 2, 3, 4, 10, 11, 12, 13, 14 };
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(t.tag[i], exp[i]);
		ck_assert_int_eq(t.err[i], 0);
	}
	ck_assert_uint_eq(brk_peer_connects(t.peer), 1);
	teardown(&t);
}
END_TEST

/* ---- broken responses ---- */

static bool srv_saw_eof(void *arg)
{
	tctx *t = arg;
	return t->ncalls >= t->want && t->s.eofs > 0;
}

START_TEST(test_correlation_mismatch)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.max_in_flight = 2;
	setup(&t, &l);
	t.s.mode = SRV_WRONG_CORR;
	for (int i = 0; i < 3; i++)
		send_tag(&t, i);
	t.want = 3;
	ck_assert(run_until(t.loop, srv_saw_eof, &t, 3000));
	ck_assert_int_eq(t.ncalls, 3); /* each exactly once */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(t.tag[i], i);
		ck_assert_int_eq(t.err[i], BRK_PEER_ERR_PROTOCOL);
	}
	ck_assert(!brk_peer_connected(t.peer));
	ck_assert_ptr_nonnull(strstr(brk_peer_last_error(t.peer), "correlation id 1 where 0"));
	ck_assert_int_eq(brk_peer_pending(t.peer), 0);
	/* Nothing more comes. */
	run_until(t.loop, never, NULL, 100);
	ck_assert_int_eq(t.ncalls, 3);
	teardown(&t);
}
END_TEST

START_TEST(test_close_mid_response)
{
	tctx t;
	setup(&t, NULL);
	t.s.mode = SRV_CLOSE_MID;
	send_tag(&t, 0);
	send_tag(&t, 1); /* queued behind it */
	t.want = 2;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], BRK_PEER_ERR_DISCONNECTED);
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_DISCONNECTED);
	ck_assert_int_eq(t.tag[0], 0);
	ck_assert_int_eq(t.s.nreqs, 1);
	ck_assert(!brk_peer_connected(t.peer));
	run_until(t.loop, never, NULL, 100);
	ck_assert_int_eq(t.ncalls, 2);
	teardown(&t);
}
END_TEST

/* An announced frame above max_response_bytes fails at once: the peer
 * does not wait for (or make room for) the body, which never comes. A
 * frame of exactly the limit is fine. */
START_TEST(test_oversized_response)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.max_response_bytes = 1000;
	setup(&t, &l);
	t.s.mode = SRV_EXACT;
	t.s.oversize = 1000;
	t.want = 1;
	send_tag(&t, 0);
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], 0);

	t.s.mode = SRV_OVERSIZE;
	t.s.oversize = 1001;
	send_tag(&t, 1);
	send_tag(&t, 2);
	int64_t t0 = brk_mono_ms();
	t.want = 3;
	ck_assert(run_until(t.loop, srv_saw_eof, &t, 4000));
	ck_assert_int_lt(t.at[1] - t0, 2000); /* not the 5 s request timeout */
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_TOO_LARGE);
	ck_assert_int_eq(t.err[2], BRK_PEER_ERR_TOO_LARGE);
	ck_assert_ptr_nonnull(strstr(brk_peer_last_error(t.peer), "1001"));

	/* A negative size is a protocol error. */
	t.s.oversize = -5;
	send_tag(&t, 3);
	t.want = 4;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[3], BRK_PEER_ERR_PROTOCOL);
	teardown(&t);
}
END_TEST

/* Responses far larger than the input buffer's first size, three in flight:
 * each arrives in many reads, the next one's start in the same buffer; the
 * body is the frame's bytes, in place. */
static void check_pattern(tctx *t, int tag, proto_reader *body)
{
	(void)t;
	size_t n = proto_reader_left(body);
	ck_assert_uint_eq(n, (1u << 20) - 4);
	for (size_t i = 0; i < n; i += 997)
		ck_assert_uint_eq(body->p[i], (uint8_t)(tag + (int)i));
	ck_assert_uint_eq(body->p[n - 1], (uint8_t)(tag + (int)(n - 1)));
}

START_TEST(test_large_responses)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.max_in_flight = 3;
	l.max_response_bytes = 1 << 20;
	setup(&t, &l);
	t.s.mode = SRV_EXACT;
	t.s.oversize = 1 << 20;
	t.on_body = check_pattern;
	for (int i = 0; i < 6; i++)
		send_tag(&t, i);
	t.want = 6;
	ck_assert(run_until(t.loop, enough_calls, &t, 10000));
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(t.tag[i], i);
		ck_assert_int_eq(t.err[i], 0);
	}
	teardown(&t);
}
END_TEST

/* ---- timeouts ---- */

static void send_second(brk_loop *loop, void *arg)
{
	(void)loop;
	send_tag(arg, 1);
}

START_TEST(test_request_timeout)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.request_timeout_ms = 150;
	setup(&t, &l);
	t.s.mode = SRV_STALL;
	int64_t t0 = brk_mono_ms();
	send_tag(&t, 0);
	brk_timer_add(t.loop, 60, send_second, &t); /* its deadline is later */
	t.want = 2;
	ck_assert(run_until(t.loop, srv_saw_eof, &t, 3000));
	ck_assert_int_eq(t.tag[0], 0);
	ck_assert_int_eq(t.err[0], BRK_PEER_ERR_TIMEOUT);
	ck_assert_int_ge(t.at[0] - t0, 150);
	/* The second was queued (one in flight) when the connection closed
	 * for the first one's timeout. */
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_DISCONNECTED);
	ck_assert_int_le(t.at[1] - t.at[0], 5); /* in the same close */
	ck_assert_int_eq(t.s.nreqs, 1);
	ck_assert_ptr_nonnull(strstr(brk_peer_last_error(t.peer), "timed out"));

	/* After the backoff the next request gets a new connection. */
	t.s.mode = SRV_ANSWER;
	send_tag(&t, 2);
	t.want = 3;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[2], 0);
	ck_assert_int_eq(t.s.accepts, 2);
	teardown(&t);
}
END_TEST

/* ---- connecting ---- */

static void resend_after(tctx *t, int tag, int err)
{
	if (err == BRK_PEER_ERR_CONNECT && t->nrefused < 8)
		t->refused_at[t->nrefused++] = t->at[t->ncalls - 1];
	if (tag < 3)
		send_tag(t, tag + 1); /* from the error callback */
}

/* Nothing listens: each send is refused; the next one, sent from the
 * error callback, waits the backoff (50, 100, 200 ms: doubling, capped at
 * 150). Then the server comes up and the next send is answered. */
START_TEST(test_connect_refused_then_reconnect)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.reconnect_backoff_ms = 50;
	l.reconnect_backoff_max_ms = 150;
	int port = dead_port();
	memset(&t, 0, sizeof(t));
	t.loop = brk_loop_new();
	t.s.lfd = t.s.cfd = -1;
	t.peer = brk_peer_new(t.loop, 3, "127.0.0.1", port, NULL, &l, NULL);
	ck_assert_ptr_nonnull(t.peer);
	t.after = resend_after;
	send_tag(&t, 0);
	t.want = 4; /* tags 0-3 refused; tag 3's callback sends nothing */
	ck_assert(run_until(t.loop, enough_calls, &t, 5000));
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(t.tag[i], i);
		ck_assert_int_eq(t.err[i], BRK_PEER_ERR_CONNECT);
	}
	ck_assert_ptr_nonnull(strstr(brk_peer_last_error(t.peer), "refused"));
	ck_assert_int_eq(t.nrefused, 4);
	/* (-1: a callback's time may be 1 ms after the close's, which the
	 * backoff counts from.) */
	ck_assert_int_ge(t.refused_at[1] - t.refused_at[0], 50 - 1);
	ck_assert_int_ge(t.refused_at[2] - t.refused_at[1], 100 - 1);
	ck_assert_int_ge(t.refused_at[3] - t.refused_at[2], 150 - 1); /* the cap */
	ck_assert_uint_eq(brk_peer_connects(t.peer), 0);

	/* The server starts on that port; the send waits out the backoff. */
	srv_start(&t.s, t.loop, port);
	t.after = NULL;
	int64_t t0 = t.at[3];
	send_tag(&t, 4);
	t.want = 5;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[4], 0);
	ck_assert_int_eq(t.s.accepts, 1);
	ck_assert_int_ge(t.s.accept_ms[0] - t0, 150 - 1);
	ck_assert_uint_eq(brk_peer_connects(t.peer), 1);
	teardown(&t);
}
END_TEST

/* A request queued while the peer waits out a backoff times out alone,
 * without a connect. */
START_TEST(test_queued_timeout)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	l.reconnect_backoff_ms = 2000;
	l.reconnect_backoff_max_ms = 2000;
	l.request_timeout_ms = 100;
	int port = dead_port();
	memset(&t, 0, sizeof(t));
	t.loop = brk_loop_new();
	t.s.lfd = t.s.cfd = -1;
	t.peer = brk_peer_new(t.loop, 3, "127.0.0.1", port, NULL, &l, NULL);
	ck_assert_ptr_nonnull(t.peer);
	send_tag(&t, 0);
	t.want = 1;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], BRK_PEER_ERR_CONNECT);
	srv_start(&t.s, t.loop, port);
	int64_t t0 = brk_mono_ms();
	send_tag(&t, 1);
	t.want = 2;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_TIMEOUT);
	ck_assert_int_ge(t.at[1] - t0, 100);
	ck_assert_int_lt(t.at[1] - t0, 1900);
	ck_assert_int_eq(t.s.accepts, 0);
	teardown(&t);
}
END_TEST

/* A listener whose accept queue is full (backlog 0, one connection in it,
 * never accepted) drops the peer's SYN: the connect times out. */
START_TEST(test_connect_timeout)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	int port, filler;
	l.connect_timeout_ms = 200;
	memset(&t, 0, sizeof(t));
	t.loop = brk_loop_new();
	t.s.lfd = t.s.cfd = -1;
	int lfd = listen_on(0, &port);
	ck_assert_int_eq(listen(lfd, 0), 0);
	filler = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0);
	t.peer = brk_peer_new(t.loop, 3, "127.0.0.1", port, NULL, &l, NULL);
	ck_assert_ptr_nonnull(t.peer);
	int64_t t0 = brk_mono_ms();
	send_tag(&t, 0);
	t.want = 1;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], BRK_PEER_ERR_CONNECT);
	ck_assert_int_ge(t.at[0] - t0, 200);
	ck_assert_ptr_nonnull(strstr(brk_peer_last_error(t.peer), "no connection after 200 ms"));
	close(filler);
	close(lfd);
	teardown(&t);
}
END_TEST

/* ---- destroy ---- */

static bool srv_has_one(void *arg)
{
	tctx *t = arg;
	return t->s.nreqs >= 1;
}

static bool srv_eof(void *arg)
{
	tctx *t = arg;
	return t->s.eofs > 0;
}

START_TEST(test_destroy_pending)
{
	tctx t;
	setup(&t, NULL);
	t.s.mode = SRV_STALL;
	for (int i = 0; i < 3; i++)
		send_tag(&t, i);
	ck_assert(run_until(t.loop, srv_has_one, &t, 3000));
	ck_assert_int_eq(t.ncalls, 0);
	ck_assert_int_eq(brk_peer_in_flight(t.peer), 1);
	t.destroying = true;
	brk_peer_destroy(t.peer);
	t.destroying = false;
	t.peer = NULL;
	/* Every callback ran inside the destroy, in order. */
	ck_assert_int_eq(t.ncalls, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(t.tag[i], i);
		ck_assert_int_eq(t.err[i], BRK_PEER_ERR_DESTROYED);
		ck_assert(t.in_destroy[i]);
	}
	ck_assert(run_until(t.loop, srv_eof, &t, 3000)); /* the socket closed */
	ck_assert_int_eq(t.ncalls, 3);
	teardown(&t);
}
END_TEST

/* The first response's callback destroys the peer and then still reads its
 * body (ASan checks it is alive); the others get DESTROYED from inside that
 * destroy; sends on the dying peer are refused. */
static void destroy_in_body(tctx *t, int tag, proto_reader *body)
{
	if (tag != 0)
		return;
	brk_peer *p = t->peer;
	t->destroying = true;
	brk_peer_destroy(p);
	t->destroying = false;
	ck_assert_int_eq(t->ncalls, 3);
	ApiVersionsResponse m;
	proto_arena a;
	proto_arena_init(&a, 0);
	ck_assert_int_eq(ApiVersionsResponse_decode(body, &a, 0, &m), 0);
	ck_assert_int_eq(m.api_keys_count, 1);
	ck_assert_int_eq(m.api_keys[0].api_key, 18);
	proto_arena_free(&a);
}

static void send_while_dying(tctx *t, int tag, int err)
{
	if (err == BRK_PEER_ERR_DESTROYED) {
		ck_assert_int_eq(brk_peer_send(t->peer, 18, 0, enc_empty, NULL, record, &t->reqs[tag]),
				 BRK_PEER_ERR_DESTROYED);
		brk_peer_destroy(t->peer); /* again: nothing */
	}
}

START_TEST(test_destroy_from_callback)
{
	tctx t;
	setup(&t, NULL);
	t.on_body = destroy_in_body;
	t.after = send_while_dying;
	for (int i = 0; i < 3; i++)
		send_tag(&t, i);
	t.want = 3;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], 0);
	ck_assert_int_eq(t.tag[1], 1);
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_DESTROYED);
	ck_assert(t.in_destroy[1]);
	ck_assert_int_eq(t.err[2], BRK_PEER_ERR_DESTROYED);
	t.peer = NULL;
	ck_assert(run_until(t.loop, srv_eof, &t, 3000));
	run_until(t.loop, never, NULL, 50);
	ck_assert_int_eq(t.ncalls, 3);
	teardown(&t);
}
END_TEST

/* An error callback destroys the peer (the owner giving up). */
static void destroy_on_error(tctx *t, int tag, int err)
{
	(void)tag;
	if (err == BRK_PEER_ERR_DISCONNECTED && t->peer) {
		brk_peer *p = t->peer;
		t->peer = NULL;
		t->destroying = true;
		brk_peer_destroy(p);
		t->destroying = false;
	}
}

static void record_any(brk_peer *p, int err, proto_reader *body, void *arg)
{
	treq *r = arg;
	tctx *t = r->t;
	(void)p;
	(void)body;
	int i = t->ncalls++;
	t->tag[i] = r->tag;
	t->err[i] = err;
	t->in_destroy[i] = t->destroying;
	destroy_on_error(t, r->tag, err);
}

START_TEST(test_destroy_from_error_callback)
{
	tctx t;
	setup(&t, NULL);
	t.s.mode = SRV_CLOSE_MID;
	for (int i = 0; i < 3; i++) {
		t.reqs[i] = (treq){ &t, i };
		ck_assert_int_eq(brk_peer_send(t.peer, 18, 0, enc_empty, NULL, record_any, &t.reqs[i]), 0);
	}
	t.want = 3;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], BRK_PEER_ERR_DISCONNECTED);
	ck_assert_int_eq(t.err[1], BRK_PEER_ERR_DESTROYED);
	ck_assert(t.in_destroy[1]);
	ck_assert_int_eq(t.err[2], BRK_PEER_ERR_DESTROYED);
	ck_assert_ptr_null(t.peer);
	run_until(t.loop, never, NULL, 50);
	ck_assert_int_eq(t.ncalls, 3);
	teardown(&t);
}
END_TEST

/* ---- address change ---- */

START_TEST(test_set_address)
{
	tctx t;
	srv b;
	setup(&t, NULL);
	srv_start(&b, t.loop, 0);
	send_tag(&t, 0);
	t.want = 1;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[0], 0);
	/* The same address changes nothing. */
	ck_assert_int_eq(brk_peer_set_address(t.peer, "127.0.0.1", t.s.port), 0);
	send_tag(&t, 1);
	t.want = 2;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[1], 0);
	ck_assert_uint_eq(brk_peer_connects(t.peer), 1);

	/* The broker moved: a request in flight to the old address fails,
	 * the next one goes to the new address at once (no backoff). */
	t.s.mode = SRV_STALL;
	send_tag(&t, 2);
	ck_assert(run_until(t.loop, srv_has_one, &t, 3000));
	ck_assert_int_eq(brk_peer_set_address(t.peer, "127.0.0.1", b.port), 0);
	ck_assert_int_eq(brk_peer_port(t.peer), b.port);
	ck_assert_int_eq(t.ncalls, 2); /* not from inside set_address */
	t.want = 3;
	ck_assert(run_until(t.loop, srv_saw_eof, &t, 3000));
	ck_assert_int_eq(t.err[2], BRK_PEER_ERR_DISCONNECTED);
	send_tag(&t, 3);
	t.want = 4;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.err[3], 0);
	ck_assert_int_eq(b.accepts, 1);
	ck_assert_int_eq(b.nreqs, 1);
	ck_assert_uint_eq(brk_peer_connects(t.peer), 2);
	ck_assert_int_eq(brk_peer_set_address(t.peer, "", 1), BRK_PEER_ERR_INVALID);
	ck_assert_int_eq(brk_peer_set_address(t.peer, "127.0.0.1", 0), BRK_PEER_ERR_INVALID);
	ck_assert_int_eq(brk_peer_port(t.peer), b.port);
	srv_stop(&b);
	teardown(&t);
}
END_TEST

/* ---- argument errors ---- */

START_TEST(test_send_errors)
{
	tctx t;
	brk_peer_limits l = fast_limits();
	int err = 0;
	l.max_queued = 2;
	setup(&t, &l);
	treq r = { &t, 0 };
	ck_assert_int_eq(brk_peer_send(t.peer, 9999, 0, enc_empty, NULL, record, &r),
			 BRK_PEER_ERR_INVALID);
	ck_assert_int_eq(brk_peer_send(t.peer, 18, 5, enc_empty, NULL, record, &r), BRK_PEER_ERR_INVALID);
	ck_assert_int_eq(brk_peer_send(t.peer, 18, 0, enc_empty, NULL, NULL, &r), BRK_PEER_ERR_INVALID);
	ck_assert_int_eq(brk_peer_send(t.peer, 18, 0, enc_fail, NULL, record, &r), BRK_PEER_ERR_ENCODE);
	ck_assert_int_eq(brk_peer_pending(t.peer), 0);
	send_tag(&t, 1);
	send_tag(&t, 2);
	ck_assert_int_eq(brk_peer_send(t.peer, 18, 0, enc_empty, NULL, record, &r),
			 BRK_PEER_ERR_QUEUE_FULL);
	t.want = 2;
	ck_assert(run_until(t.loop, enough_calls, &t, 3000));
	ck_assert_int_eq(t.tag[0], 1); /* the refused sends never call back */
	ck_assert_int_eq(t.err[0], 0);
	ck_assert_int_eq(t.err[1], 0);
	teardown(&t);

	brk_loop *loop = brk_loop_new();
	ck_assert_ptr_null(brk_peer_new(loop, 1, "127.0.0.1", 0, NULL, NULL, &err));
	ck_assert_int_eq(err, BRK_PEER_ERR_INVALID);
	ck_assert_ptr_null(brk_peer_new(loop, 1, "", 9092, NULL, NULL, &err));
	ck_assert_ptr_null(brk_peer_new(loop, 1, "127.0.0.1", 70000, NULL, NULL, &err));
	l = fast_limits();
	l.max_in_flight = 0;
	ck_assert_ptr_null(brk_peer_new(loop, 1, "127.0.0.1", 9092, NULL, &l, &err));
	ck_assert_int_eq(err, BRK_PEER_ERR_INVALID);
	/* IPv6 literals parse without a lookup. */
	brk_peer *p = brk_peer_new(loop, 1, "::1", 9092, NULL, NULL, &err);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(brk_peer_host(p), "::1");
	brk_peer_destroy(p);
	/* A name goes through the resolver (once, here). */
	p = brk_peer_new(loop, 1, "localhost", 9092, NULL, NULL, &err);
	ck_assert_msg(p != NULL, "localhost: %s", brk_peer_strerror(err));
	brk_peer_destroy(p);
	brk_peer_destroy(NULL);
	ck_assert_str_eq(brk_peer_strerror(BRK_PEER_ERR_TIMEOUT), "request timed out");
	brk_loop_free(loop);
}
END_TEST

static Suite *peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_header_v0);
	tcase_add_test(tc, test_pipelining);
	tcase_add_test(tc, test_send_from_callback);
	tcase_add_test(tc, test_correlation_mismatch);
	tcase_add_test(tc, test_close_mid_response);
	tcase_add_test(tc, test_oversized_response);
	tcase_add_test(tc, test_large_responses);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_connect_refused_then_reconnect);
	tcase_add_test(tc, test_queued_timeout);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_destroy_pending);
	tcase_add_test(tc, test_destroy_from_callback);
	tcase_add_test(tc, test_destroy_from_error_callback);
	tcase_add_test(tc, test_set_address);
	tcase_add_test(tc, test_send_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(peer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
