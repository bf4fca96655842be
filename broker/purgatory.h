/*
 * purgatory.h - requests that wait (DESIGN.md decision 5): a delayed
 * operation watches one or more keys (a partition's watch list) and is woken
 * by the event that may satisfy it (an append that moved the high watermark)
 * or by its timeout, as Kafka's DelayedOperationPurgatory.
 *
 * Nothing here blocks and nothing completes inside the notifying call: a
 * notification only records the bytes and schedules a zero-delay timer, so
 * the waiter's callback runs from the loop, never in the middle of another
 * handler (a produce handler notifying fetchers, for instance).
 *
 * Memory: a brk_delayed and its watches live in the request's arena
 * (req->arena), which the connection keeps until brk_request_complete.
 * A wait that belongs to no request (a coordinator's own work, hw_wait.h)
 * has req NULL: its owner allocates the brk_delayed and its watches
 * (zeroed, watches[i].d pointing back at it) and keeps them until it
 * finishes.
 */
#ifndef SAMSA_BROKER_PURGATORY_H
#define SAMSA_BROKER_PURGATORY_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/request.h"

typedef struct brk_watch brk_watch;
typedef struct brk_delayed brk_delayed;

/* The list of watches on one key (embedded in a partition). */
typedef struct brk_watchlist {
	brk_watch *head;
} brk_watchlist;

struct brk_watch {
	brk_watch *prev, *next;
	brk_watchlist *list; /* NULL once detached */
	brk_delayed *d;
};

/*
 * Called from the loop when the operation was notified (expired false) or
 * its timeout passed (expired true). It either completes the request
 * (brk_delayed_finish, write req->out, brk_request_complete) or returns and
 * keeps waiting (only when expired is false).
 */
typedef void (*brk_delayed_fn)(brk_delayed *d, bool expired);

struct brk_delayed {
	brk_request *req;    /* NULL: a wait of no request (see Memory above) */
	brk_delayed_fn fn;
	void *arg;           /* the handler's state */
	uint64_t expire_timer;
	uint64_t wake_timer;
	int64_t bytes;       /* bytes notified since the operation started */
	bool detached;       /* a watched key went away (topic deleted) */
	bool finished;
	/* Optional: called once when the operation finishes (completed,
	 * expired or cancelled because its connection closed), to release
	 * what it holds outside the arena. */
	void (*on_finish)(brk_delayed *d);
	int nwatches;
	brk_watch *watches;  /* nwatches, arena memory */
};

/* A delayed operation for req watching up to nwatches keys, from req->arena;
 * NULL when the arena is full. */
brk_delayed *brk_delayed_new(brk_request *req, int nwatches);

/* Watch list l with the i-th watch (0 <= i < nwatches). */
void brk_delayed_watch(brk_delayed *d, int i, brk_watchlist *l);

/* Start waiting: arm the timeout (ms, >= 0) and set req->cancel and
 * req->delayed; the handler then returns BRK_DELAYED. Returns 0, or -ENOMEM
 * when the timeout timer cannot be allocated: the operation is then finished
 * (watches unlinked, fn never called) and the handler answers at once. */
int brk_delayed_start(brk_delayed *d, int64_t timeout_ms, brk_delayed_fn fn, void *arg);

/* Stop waiting: unlink every watch, cancel both timers and run on_finish.
 * Idempotent. */
void brk_delayed_finish(brk_delayed *d);

/* An event on the key: add bytes to each waiter's count and schedule its
 * callback (once per loop iteration at most). */
void brk_watchlist_notify(brk_watchlist *l, int64_t bytes);

/* The key goes away (topic deleted): detach every watch (setting detached)
 * and schedule each callback. The list is empty afterwards. */
void brk_watchlist_detach_all(brk_watchlist *l);

#endif
