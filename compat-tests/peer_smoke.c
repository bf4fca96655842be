/*
 * peer_smoke.c - the broker-to-broker client (broker/peer.h) against a real
 * broker/samsa process: ApiVersions v3 (flexible request header v2,
 * response header v0), then Metadata at the highest version both sides
 * know (response header v1 when flexible), decoded with the generated
 * codecs; then twenty requests pipelined four at a time, answered in order
 * on one connection; then the broker stopped under a pending request
 * (DISCONNECTED or CONNECT, exactly once each) and restarted on the same
 * port: the next request reconnects after the backoff and is answered.
 * The unit tests (broker/tests/test_peer.c) cover the failure cases on a
 * scripted server; this checks the real framing.
 */
#include <stdio.h>
#include <string.h>

#include "broker/loop.h"
#include "broker/peer.h"
#include "compat-tests/compat.h"
#include "protocol/gen/messages.h"

#define NREQ 20

typedef struct smoke {
	brk_loop *loop;
	brk_peer *peer;
	int port;
	int ncalls, want;
	int err[NREQ + 4];
	int tag[NREQ + 4];
	int16_t metadata_max;  /* from ApiVersions */
	int16_t metadata_version;
	int32_t node_id, node_port, controller_id;
} smoke;

typedef struct sreq {
	smoke *s;
	int tag;
	int16_t key, version;
} sreq;

static int enc_api_versions(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	ApiVersionsRequest m;
	ApiVersionsRequest_init(&m);
	m.client_software_name = proto_cstr("samsa-peer");
	m.client_software_version = proto_cstr("0.1");
	return ApiVersionsRequest_encode(w, v, &m);
}

static int enc_metadata(proto_writer *w, int16_t v, void *arg)
{
	(void)arg;
	MetadataRequest m;
	MetadataRequest_init(&m);
	m.topics_count = v >= 1 ? -1 : 0; /* all topics */
	return MetadataRequest_encode(w, v, &m);
}

static void on_done(brk_peer *p, int err, proto_reader *body, void *arg)
{
	sreq *r = arg;
	smoke *s = r->s;
	(void)p;
	ck_assert_int_lt(s->ncalls, NREQ + 4);
	s->err[s->ncalls] = err;
	s->tag[s->ncalls] = r->tag;
	s->ncalls++;
	if (err)
		return;
	proto_arena a;
	proto_arena_init(&a, 1 << 20);
	if (r->key == 18) {
		ApiVersionsResponse m;
		ck_assert_int_eq(ApiVersionsResponse_decode(body, &a, r->version, &m), 0);
		ck_assert_int_eq(m.error_code, 0);
		for (int i = 0; i < m.api_keys_count; i++)
			if (m.api_keys[i].api_key == 3)
				s->metadata_max = m.api_keys[i].max_version;
	} else {
		MetadataResponse m;
		ck_assert_int_eq(MetadataResponse_decode(body, &a, r->version, &m), 0);
		ck_assert_int_ge(m.brokers_count, 1);
		s->node_id = m.brokers[0].node_id;
		s->node_port = m.brokers[0].port;
		s->controller_id = m.controller_id;
	}
	ck_assert_uint_eq(proto_reader_left(body), 0);
	proto_arena_free(&a);
}

static void stop_when_done(brk_loop *loop, void *arg)
{
	smoke *s = arg;
	if (s->ncalls >= s->want)
		brk_loop_stop(loop);
	else
		brk_timer_add(loop, 5, stop_when_done, s);
}

static void give_up(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

/* Run the loop until want callbacks ran (at most max_ms). */
static void run(smoke *s, int want, int max_ms)
{
	s->want = want;
	uint64_t t = brk_timer_add(s->loop, max_ms, give_up, s);
	brk_timer_add(s->loop, 0, stop_when_done, s);
	brk_loop_run(s->loop);
	brk_timer_cancel(s->loop, t);
	ck_assert_msg(s->ncalls >= want, "%d of %d callbacks after %d ms (%s)", s->ncalls, want,
		      max_ms, brk_peer_last_error(s->peer));
}

static void send_req(smoke *s, sreq *r, int tag, int16_t key, int16_t version)
{
	r->s = s;
	r->tag = tag;
	r->key = key;
	r->version = version;
	int rc = brk_peer_send(s->peer, key, version, key == 18 ? enc_api_versions : enc_metadata, NULL,
			       on_done, r);
	ck_assert_msg(rc == 0, "send: %s", brk_peer_strerror(rc));
}

START_TEST(test_peer_against_samsa)
{
	const char *ov[] = { "broker.id=5", NULL };
	h_broker *b = c_start_broker(ov);
	smoke s;
	sreq reqs[NREQ + 4];
	brk_peer_limits l;
	int err = 0;

	memset(&s, 0, sizeof(s));
	s.loop = brk_loop_new();
	ck_assert_ptr_nonnull(s.loop);
	brk_peer_limits_default(&l);
	l.max_in_flight = 4;
	l.request_timeout_ms = h_scaled_ms(10000);
	l.reconnect_backoff_ms = 100;
	s.peer = brk_peer_new(s.loop, 5, "127.0.0.1", b->port, "broker-1-fetcher-0", &l, &err);
	ck_assert_msg(s.peer != NULL, "brk_peer_new: %s", brk_peer_strerror(err));

	send_req(&s, &reqs[0], 0, 18, 3);
	run(&s, 1, h_scaled_ms(10000));
	ck_assert_int_eq(s.err[0], 0);
	ck_assert_int_ge(s.metadata_max, 1);
	const proto_api_desc *d = proto_api_desc_lookup(3);
	s.metadata_version = s.metadata_max < d->max_version ? s.metadata_max : d->max_version;
	fprintf(stderr, "peer_smoke: Metadata v%d\n", s.metadata_version);

	send_req(&s, &reqs[1], 1, 3, s.metadata_version);
	run(&s, 2, h_scaled_ms(10000));
	ck_assert_int_eq(s.err[1], 0);
	ck_assert_int_eq(s.node_id, 5);
	ck_assert_int_eq(s.node_port, b->port);
	ck_assert_int_eq(s.controller_id, 5);

	/* Pipelined: four in flight, every answer in order, one connection. */
	s.ncalls = 0;
	for (int i = 0; i < NREQ; i++)
		send_req(&s, &reqs[i], i, i % 2 ? 3 : 18, i % 2 ? s.metadata_version : (int16_t)(i % 5));
	run(&s, NREQ, h_scaled_ms(10000));
	for (int i = 0; i < NREQ; i++) {
		ck_assert_int_eq(s.tag[i], i);
		ck_assert_int_eq(s.err[i], 0);
	}
	ck_assert_uint_eq(brk_peer_connects(s.peer), 1);

	/* The broker goes away under a pending request, then comes back on
	 * the same port: the next request reconnects. */
	s.ncalls = 0;
	ck_assert_int_ne(h_broker_stop(b, h_scaled_ms(30000)), -1);
	send_req(&s, &reqs[0], 0, 18, 0);
	run(&s, 1, h_scaled_ms(10000));
	ck_assert_msg(s.err[0] == BRK_PEER_ERR_DISCONNECTED || s.err[0] == BRK_PEER_ERR_CONNECT,
		      "%s", brk_peer_strerror(s.err[0]));
	ck_assert_int_eq(h_broker_restart(b), 0);
	send_req(&s, &reqs[1], 1, 3, s.metadata_version);
	run(&s, 2, h_scaled_ms(10000));
	ck_assert_int_eq(s.err[1], 0);
	ck_assert_int_eq(s.node_id, 5);
	ck_assert_uint_eq(brk_peer_connects(s.peer), 2);
	ck_assert_int_eq(s.ncalls, 2);

	brk_peer_destroy(s.peer);
	brk_loop_free(s.loop);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("peer_smoke");
	TCase *tc = tcase_create("samsa");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_peer_against_samsa);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
