/*
 * hw_wait.c - answers and steps that wait for a coordinator's write to be
 * committed (hw_wait.h).
 */
#include "broker/hw_wait.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"
#include "storage/log.h"

int brk_hw_mark_state(const brk_hw_mark *m)
{
	const brk_partition *p = m->p;
	if (!p)
		return BRK_HW_COMMITTED;
	if (p->role != BRK_ROLE_LEADER || p->leader_epoch != m->leader_epoch || !p->log)
		return BRK_HW_LOST;
	return log_high_watermark(p->log) >= m->offset ? BRK_HW_COMMITTED : BRK_HW_PENDING;
}

/* The state of n marks together: LOST if one is, else PENDING if one is. */
static int marks_state(const brk_hw_mark *marks, int n)
{
	int st = BRK_HW_COMMITTED;
	for (int i = 0; i < n; i++) {
		int s = brk_hw_mark_state(&marks[i]);
		if (s == BRK_HW_LOST)
			return BRK_HW_LOST;
		if (s == BRK_HW_PENDING)
			st = BRK_HW_PENDING;
	}
	return st;
}

/* ---- answers ---- */

typedef struct answer_wait {
	brk_hw_mark *marks; /* arena */
	int n;
	int16_t timeout_err;
	brk_hw_fail_fn fail;
	void *arg;
} answer_wait;

static int fail_now(brk_request *req, brk_hw_fail_fn fail, void *arg, int16_t err)
{
	proto_writer_reset(req->out);
	return fail(req, arg, err);
}

static void on_answer(brk_delayed *d, bool expired)
{
	answer_wait *w = d->arg;
	brk_request *req = d->req;
	/* A detached watch: the topic is gone and its partitions with it, so
	 * the marks must not be looked at. */
	int st = d->detached ? BRK_HW_LOST : marks_state(w->marks, w->n);
	if (st == BRK_HW_PENDING && !expired)
		return;
	brk_delayed_finish(d);
	int rc = BRK_RESPOND;
	if (st == BRK_HW_LOST)
		rc = fail_now(req, w->fail, w->arg, KERR_NOT_COORDINATOR);
	else if (st == BRK_HW_PENDING)
		rc = fail_now(req, w->fail, w->arg, w->timeout_err);
	brk_request_complete(req, rc == BRK_RESPOND ? BRK_COMPLETE_RESPOND : BRK_COMPLETE_CLOSE);
}

int brk_hw_answer(brk_request *req, const brk_hw_mark *marks, int n, int64_t timeout_ms,
		  int16_t timeout_err, brk_hw_fail_fn fail, void *arg)
{
	int st = marks_state(marks, n);
	if (st == BRK_HW_COMMITTED)
		return BRK_RESPOND;
	if (st == BRK_HW_LOST)
		return fail_now(req, fail, arg, KERR_NOT_COORDINATOR);
	/* One watch per pending partition (a partition named twice is
	 * watched once: the same list cannot hold one operation twice). */
	answer_wait *w = proto_arena_alloc(req->arena, sizeof(*w));
	brk_hw_mark *copy = proto_arena_alloc(req->arena, (size_t)n * sizeof(*copy));
	if (!w || !copy)
		return BRK_RESPOND; /* no memory to wait: answer now */
	memcpy(copy, marks, (size_t)n * sizeof(*copy));
	int nwatch = 0;
	for (int i = 0; i < n; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = copy[j].p == copy[i].p;
		nwatch += copy[i].p && !seen;
	}
	brk_delayed *d = brk_delayed_new(req, nwatch);
	if (!d)
		return BRK_RESPOND;
	for (int i = 0, k = 0; i < n; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = copy[j].p == copy[i].p;
		if (copy[i].p && !seen)
			brk_delayed_watch(d, k++, &copy[i].p->hw_waiters);
	}
	*w = (answer_wait){ copy, n, timeout_err, fail, arg };
	if (brk_delayed_start(d, timeout_ms, on_answer, w) != 0)
		return BRK_RESPOND;
	return BRK_DELAYED;
}

/* ---- waits of no request ---- */

struct brk_hw_wait {
	brk_delayed d;
	brk_watch watch;
	brk_hw_mark mark;
	int16_t timeout_err;
	brk_hw_wait_fn fn;
	void *arg;
};

static void on_wait(brk_delayed *d, bool expired)
{
	brk_hw_wait *w = d->arg;
	int st = d->detached ? BRK_HW_LOST : brk_hw_mark_state(&w->mark);
	if (st == BRK_HW_PENDING && !expired)
		return;
	brk_delayed_finish(d);
	int16_t err = st == BRK_HW_COMMITTED ? KERR_NONE
		      : st == BRK_HW_LOST    ? KERR_NOT_COORDINATOR
					     : w->timeout_err;
	brk_hw_wait_fn fn = w->fn;
	void *arg = w->arg;
	free(w);
	fn(arg, err);
}

brk_hw_wait *brk_hw_wait_start(const brk_hw_mark *m, int64_t timeout_ms, int16_t timeout_err,
			       brk_hw_wait_fn fn, void *arg)
{
	if (brk_hw_mark_state(m) != BRK_HW_PENDING)
		return NULL;
	brk_hw_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->mark = *m;
	w->timeout_err = timeout_err;
	w->fn = fn;
	w->arg = arg;
	w->d.nwatches = 1;
	w->d.watches = &w->watch;
	w->watch.d = &w->d;
	brk_delayed_watch(&w->d, 0, &m->p->hw_waiters);
	if (brk_delayed_start(&w->d, timeout_ms, on_wait, w) != 0) {
		free(w); /* the start unlinked the watch */
		return NULL;
	}
	return w;
}

void brk_hw_wait_cancel(brk_hw_wait *w)
{
	if (!w)
		return;
	brk_delayed_finish(&w->d);
	free(w);
}
