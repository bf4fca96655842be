/*
 * ctl_wait.c - requests waiting for controller results (ctl_wait.h).
 */
#include "broker/ctl_wait.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker/purgatory.h"
#include "protocol/err.h"

typedef struct slot {
	brk_ctl_wait *w;
	uint64_t call;   /* in flight when != 0 */
	bool used;       /* something was submitted */
	ctl_result r;
} slot;

struct brk_ctl_wait {
	brk_request *req;
	brk_cluster *cl;
	slot *slots;
	int32_t nslots;
	int32_t pending;
	brk_watchlist done; /* notified when the last result is in */
	brk_delayed *d;
	brk_ctl_wait_fn fn;
	void *arg;
};

brk_ctl_wait *brk_ctl_wait_new(brk_request *req, brk_cluster *cl, int32_t nslots)
{
	brk_ctl_wait *w = proto_arena_alloc(req->arena, sizeof(*w));
	if (!w)
		return NULL;
	w->slots = proto_arena_alloc(req->arena, (size_t)(nslots > 0 ? nslots : 1) * sizeof(slot));
	if (!w->slots)
		return NULL;
	w->req = req;
	w->cl = cl;
	w->nslots = nslots;
	for (int32_t i = 0; i < nslots; i++)
		w->slots[i].w = w;
	return w;
}

static void on_result(void *arg, const ctl_result *r)
{
	slot *s = arg;
	s->r = *r;
	s->call = 0;
	if (--s->w->pending == 0)
		brk_watchlist_notify(&s->w->done, 0);
}

int brk_ctl_wait_submit(brk_ctl_wait *w, int32_t i, const ctl_op *op)
{
	slot *s = &w->slots[i];
	s->used = true;
	memset(&s->r, 0, sizeof(s->r));
	s->r.type = op->type;
	s->call = brk_ctl_call(w->cl, op, on_result, s);
	if (!s->call) {
		s->r.error = KERR_UNKNOWN_SERVER_ERROR;
		return -ENOMEM;
	}
	w->pending++;
	return 0;
}

const ctl_result *brk_ctl_wait_result(const brk_ctl_wait *w, int32_t i)
{
	return w->slots[i].used ? &w->slots[i].r : NULL;
}

/* Forget the calls still in flight; their slots read REQUEST_TIMED_OUT. */
static void forget_pending(brk_ctl_wait *w)
{
	for (int32_t i = 0; i < w->nslots; i++) {
		slot *s = &w->slots[i];
		if (!s->call)
			continue;
		brk_ctl_forget(w->cl, s->call);
		s->call = 0;
		s->r.error = KERR_REQUEST_TIMED_OUT;
		snprintf(s->r.msg, sizeof(s->r.msg), "The controller did not answer in time.");
	}
	w->pending = 0;
}

static void on_finish(brk_delayed *d)
{
	forget_pending(d->arg);
}

static void on_delayed(brk_delayed *d, bool expired)
{
	brk_ctl_wait *w = d->arg;
	if (!expired && w->pending > 0)
		return;
	brk_delayed_finish(d); /* forgets what is still pending */
	brk_request *req = w->req;
	int rc = w->fn(req, w, w->arg);
	if (rc == BRK_DELAYED)
		return; /* waiting again: completed later */
	brk_request_complete(req, rc == BRK_RESPOND	  ? BRK_COMPLETE_RESPOND
				  : rc == BRK_NO_RESPONSE ? BRK_COMPLETE_NO_RESPONSE
							  : BRK_COMPLETE_CLOSE);
}

int brk_ctl_wait_start(brk_ctl_wait *w, int64_t timeout_ms, brk_ctl_wait_fn fn, void *arg)
{
	w->fn = fn;
	w->arg = arg;
	if (w->pending > 0) {
		brk_delayed *d = brk_delayed_new(w->req, 1);
		if (d) {
			brk_delayed_watch(d, 0, &w->done);
			d->on_finish = on_finish;
			if (brk_delayed_start(d, timeout_ms, on_delayed, w) == 0)
				return BRK_DELAYED;
		}
		forget_pending(w);
	}
	return fn(w->req, w, arg);
}

static int retry(brk_request *req, brk_ctl_wait *w, void *arg)
{
	(void)w;
	(void)arg;
	req->body = req->body_start;
	req->retried = true;
	return brk_apis[req->api_key].handler(req);
}

int brk_ctl_wait_then_retry(brk_request *req, brk_cluster *cl, const ctl_op *op,
			    int64_t timeout_ms)
{
	brk_ctl_wait *w = brk_ctl_wait_new(req, cl, 1);
	if (!w)
		return BRK_CLOSE;
	brk_ctl_wait_submit(w, 0, op);
	return brk_ctl_wait_start(w, timeout_ms, retry, NULL);
}
