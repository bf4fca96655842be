/*
 * purgatory.c - delayed operations keyed by watch lists, completed by a
 * notification (through a zero-delay timer) or by their timeout.
 */
#include "broker/purgatory.h"

#include <errno.h>
#include <stddef.h>

#include "broker/server.h"

brk_delayed *brk_delayed_new(brk_request *req, int nwatches)
{
	brk_delayed *d = proto_arena_alloc(req->arena, sizeof(*d));
	if (!d)
		return NULL;
	d->req = req;
	d->nwatches = nwatches;
	if (nwatches > 0) {
		d->watches = proto_arena_alloc(req->arena, (size_t)nwatches * sizeof(brk_watch));
		if (!d->watches)
			return NULL;
	}
	for (int i = 0; i < nwatches; i++)
		d->watches[i].d = d;
	return d;
}

static void watch_unlink(brk_watch *w)
{
	if (!w->list)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		w->list->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
	w->list = NULL;
}

void brk_delayed_watch(brk_delayed *d, int i, brk_watchlist *l)
{
	brk_watch *w = &d->watches[i];
	watch_unlink(w);
	w->list = l;
	w->prev = NULL;
	w->next = l->head;
	if (l->head)
		l->head->prev = w;
	l->head = w;
}

static void on_wake(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_delayed *d = arg;
	d->wake_timer = 0;
	if (!d->finished)
		d->fn(d, false);
}

static void on_expire(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_delayed *d = arg;
	d->expire_timer = 0;
	if (!d->finished)
		d->fn(d, true);
}

static void on_cancel(brk_request *req)
{
	brk_delayed *d = req->delayed;
	if (d)
		brk_delayed_finish(d);
	req->delayed = NULL;
	req->cancel = NULL;
}

int brk_delayed_start(brk_delayed *d, int64_t timeout_ms, brk_delayed_fn fn, void *arg)
{
	d->fn = fn;
	d->arg = arg;
	d->finished = false;
	d->wake_timer = 0;
	d->expire_timer = brk_timer_add(server.loop, timeout_ms < 0 ? 0 : timeout_ms, on_expire, d);
	if (!d->expire_timer) {
		/* Without its timeout the operation could wait forever. */
		d->finished = true;
		for (int i = 0; i < d->nwatches; i++)
			watch_unlink(&d->watches[i]);
		if (d->on_finish)
			d->on_finish(d);
		return -ENOMEM;
	}
	if (d->req) {
		d->req->delayed = d;
		d->req->cancel = on_cancel;
	}
	return 0;
}

void brk_delayed_finish(brk_delayed *d)
{
	if (d->finished)
		return;
	d->finished = true;
	for (int i = 0; i < d->nwatches; i++)
		watch_unlink(&d->watches[i]);
	if (d->expire_timer)
		brk_timer_cancel(server.loop, d->expire_timer);
	if (d->wake_timer)
		brk_timer_cancel(server.loop, d->wake_timer);
	d->expire_timer = d->wake_timer = 0;
	if (d->req) {
		d->req->delayed = NULL;
		d->req->cancel = NULL;
	}
	if (d->on_finish)
		d->on_finish(d);
}

static void schedule_wake(brk_delayed *d)
{
	if (!d->finished && !d->wake_timer)
		d->wake_timer = brk_timer_add(server.loop, 0, on_wake, d);
}

void brk_watchlist_notify(brk_watchlist *l, int64_t bytes)
{
	for (brk_watch *w = l->head; w; w = w->next) {
		w->d->bytes += bytes;
		schedule_wake(w->d);
	}
}

void brk_watchlist_detach_all(brk_watchlist *l)
{
	while (l->head) {
		brk_watch *w = l->head;
		watch_unlink(w);
		w->d->detached = true;
		schedule_wake(w->d);
	}
}
