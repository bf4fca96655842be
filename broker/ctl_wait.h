/*
 * ctl_wait.h - a request waiting for controller operations (CreateTopics,
 * DeleteTopics, CreatePartitions, AlterConfigs, ...): the handler submits
 * one operation per slot, then waits in the purgatory until every result
 * is in or the request's timeout passes, and builds its answer from the
 * results (DESIGN.md decision 5: the loop never waits on the controller).
 *
 * Memory: everything lives in the request's arena. When the connection
 * closes first, the calls still in flight are forgotten (their results are
 * dropped when they arrive).
 */
#ifndef SAMSA_BROKER_CTL_WAIT_H
#define SAMSA_BROKER_CTL_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/cluster.h"
#include "broker/request.h"

typedef struct brk_ctl_wait brk_ctl_wait;

/* How long a request without a timeout of its own (AlterConfigs,
 * FindCoordinator, Metadata) waits for the controller, in ms; also the
 * wait of a request whose timeout is 0 or negative. */
#define BRK_ADMIN_WAIT_MS 30000

/*
 * Called once: every submitted slot has its result, or the timeout passed
 * (slots still without one read REQUEST_TIMED_OUT). It returns what a
 * handler returns (request.h): BRK_RESPOND with the answer in req->out,
 * BRK_NO_RESPONSE, BRK_CLOSE, or BRK_DELAYED when it made the request wait
 * again (it then completes it itself).
 */
typedef int (*brk_ctl_wait_fn)(brk_request *req, brk_ctl_wait *w, void *arg);

/* A wait with nslots slots for req, in its arena; NULL when it is full. */
brk_ctl_wait *brk_ctl_wait_new(brk_request *req, brk_cluster *cl, int32_t nslots);

/* Submit op for slot i. Returns 0, or -ENOMEM (the slot then reads
 * UNKNOWN_SERVER_ERROR). */
int brk_ctl_wait_submit(brk_ctl_wait *w, int32_t i, const ctl_op *op);

/* The result of slot i; NULL when nothing was submitted there. */
const ctl_result *brk_ctl_wait_result(const brk_ctl_wait *w, int32_t i);

/*
 * Wait up to timeout_ms for the results, then fn(req, w, arg). Returns what
 * the handler returns: BRK_DELAYED, or, when nothing is in flight (or no
 * timer could be set), fn's outcome at once.
 */
int brk_ctl_wait_start(brk_ctl_wait *w, int64_t timeout_ms, brk_ctl_wait_fn fn, void *arg);

/*
 * For a request that needs something the controller makes first (an
 * internal topic, made on first use as in Kafka): hand op to the
 * controller and, once its result is in (or after timeout_ms), run req's
 * handler again from the start of its body with req->retried set, so it
 * answers with what there is then instead of waiting again. Returns
 * BRK_DELAYED, or BRK_CLOSE when it cannot wait.
 */
int brk_ctl_wait_then_retry(brk_request *req, brk_cluster *cl, const ctl_op *op,
			    int64_t timeout_ms);

#endif
