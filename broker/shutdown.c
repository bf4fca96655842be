/*
 * shutdown.c - the controlled shutdown of a broker of a cluster (shutdown.h).
 */
#include "broker/shutdown.h"

#include <stdio.h>
#include <string.h>

#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define CONTROLLED_SHUTDOWN_KEY 7
#define CONTROLLED_SHUTDOWN_VERSION 3

static void ask(brk_shutdown *s);

static void finish(brk_shutdown *s)
{
	if (s->finished)
		return;
	s->finished = true;
	if (s->timer)
		brk_timer_cancel(server.loop, s->timer);
	s->timer = 0;
	s->done(s->arg);
}

static void on_retry(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_shutdown *s = arg;
	s->timer = 0;
	ask(s);
}

/* Another attempt after the backoff, or give up. */
static void again(brk_shutdown *s, const char *why)
{
	if (s->attempts > s->max_retries) {
		fprintf(stderr, "samsa: controlled shutdown: %s; giving up after %d attempt(s)\n", why,
			s->attempts);
		finish(s);
		return;
	}
	fprintf(stderr, "samsa: controlled shutdown: %s; asking again in %lld ms\n", why,
		(long long)s->backoff_ms);
	s->timer = brk_timer_add(server.loop, s->backoff_ms, on_retry, s);
	if (!s->timer)
		finish(s);
}

static int encode(proto_writer *w, int16_t version, void *arg)
{
	(void)arg;
	ControlledShutdownRequest m;
	ControlledShutdownRequest_init(&m);
	m.broker_id = server.cfg.broker_id;
	const ctl_broker *self = brk_cluster_broker(&server.cluster, server.cfg.broker_id);
	m.broker_epoch = self ? self->epoch : -1;
	return ControlledShutdownRequest_encode(w, version, &m);
}

static void on_answer(brk_peer *p, int err, proto_reader *body, void *arg)
{
	(void)p;
	brk_shutdown *s = arg;
	s->in_flight = false;
	if (s->finished)
		return;
	if (err != BRK_PEER_OK) {
		again(s, brk_peer_strerror(err));
		return;
	}
	proto_arena a;
	proto_arena_init(&a, 1u << 20);
	ControlledShutdownResponse resp;
	ControlledShutdownResponse_init(&resp);
	char why[128];
	if (ControlledShutdownResponse_decode(body, &a, CONTROLLED_SHUTDOWN_VERSION, &resp) != 0) {
		snprintf(why, sizeof(why), "the controller's answer does not parse");
	} else if (resp.error_code != KERR_NONE) {
		snprintf(why, sizeof(why), "the controller answered %s", proto_err_name(resp.error_code));
	} else if (resp.remaining_partitions_count > 0) {
		snprintf(why, sizeof(why), "%d partition(s) still led here",
			 (int)resp.remaining_partitions_count);
	} else {
		proto_arena_free(&a);
		fprintf(stderr, "samsa: controlled shutdown: leadership moved to other brokers\n");
		finish(s);
		return;
	}
	proto_arena_free(&a);
	again(s, why);
}

static void ask(brk_shutdown *s)
{
	if (s->finished || s->in_flight)
		return;
	s->attempts++;
	const ctl_broker *c = server.cluster.controller_id >= 0
				      ? brk_cluster_broker(&server.cluster, server.cluster.controller_id)
				      : NULL;
	brk_peer *p = c ? brk_peers_get(&server.peers, c, BRK_PEER_CONTROL) : NULL;
	if (!p) {
		again(s, "no controller is known");
		return;
	}
	if (brk_peer_send(p, CONTROLLED_SHUTDOWN_KEY, CONTROLLED_SHUTDOWN_VERSION, encode, NULL,
			  on_answer, s) != 0) {
		again(s, "the request could not be sent");
		return;
	}
	s->in_flight = true;
}

void brk_shutdown_begin(brk_shutdown *s, bool enable, int max_retries, int64_t backoff_ms,
			void (*done)(void *arg), void *arg)
{
	memset(s, 0, sizeof(*s));
	s->done = done;
	s->arg = arg;
	s->max_retries = max_retries;
	s->backoff_ms = backoff_ms;
	if (server.cluster.local || !enable) {
		finish(s);
		return;
	}
	fprintf(stderr, "samsa: controlled shutdown: asking the controller to move leadership\n");
	ask(s);
}

void brk_shutdown_abort(brk_shutdown *s)
{
	finish(s);
}
