/*
 * hw_wait.h - waiting until a coordinator's write is committed. With
 * replication a write to an internal topic counts only once the partition's
 * high watermark passes it: Kafka's group and transaction coordinators
 * append with acks=-1 and answer from the append's callback, and its
 * WriteTxnMarkers handler appends the markers so too. Here the write is
 * appended at once (brk_internal_append, brk_partition_write_txn_marker)
 * and the coordinators apply it to their in-memory state at once; what
 * waits is the answer (or the next step, such as the markers after a
 * PrepareCommit record), in the purgatory on the partition's hw_waiters.
 *
 * A mark names what to wait for: the partition, its leader epoch when the
 * write was appended, and the offset the high watermark must reach (the
 * batch's last offset + 1). It is
 *  - COMMITTED when the high watermark is at or past that offset (on a
 *    single node, at once: the high watermark moves with the append), or
 *    when it names no partition;
 *  - LOST when this broker stopped leading the partition or the leader
 *    epoch changed since (the write may be gone with a truncation; the
 *    coordinator state is reloaded by the next leader anyway), or the log
 *    went offline: Kafka's NOT_LEADER_OR_FOLLOWER on the append, which the
 *    coordinators turn into NOT_COORDINATOR;
 *  - PENDING otherwise.
 * A wait ends when every mark is committed, or one is lost (also when the
 * topic is removed: its watch lists are detached), or at its timeout.
 *
 * Everything runs on the event loop thread (purgatory.h: a wake never
 * runs inside the call that moved the high watermark).
 */
#ifndef SAMSA_BROKER_HW_WAIT_H
#define SAMSA_BROKER_HW_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/partition.h"
#include "broker/purgatory.h"
#include "broker/request.h"

typedef struct brk_hw_mark {
	brk_partition *p;      /* NULL: nothing to wait for */
	int32_t leader_epoch;  /* p's leader epoch when the write was appended */
	int64_t offset;        /* the high watermark must reach it */
} brk_hw_mark;

enum { BRK_HW_COMMITTED = 0, BRK_HW_PENDING = 1, BRK_HW_LOST = 2 };

/* The state of m now (rules above). */
int brk_hw_mark_state(const brk_hw_mark *m);

/*
 * Called when a waiting answer fails: req->out has been emptied; encode
 * the request's answer with error err (every error field that the write
 * would have set) and return BRK_RESPOND, or BRK_CLOSE when it cannot be
 * encoded.
 */
typedef int (*brk_hw_fail_fn)(brk_request *req, void *arg, int16_t err);

/*
 * A handler's answer (already encoded in req->out) goes out once the n
 * marks are committed. Returns what a handler returns: BRK_RESPOND when
 * they are all committed now (nothing waits); fail's result with
 * NOT_COORDINATOR when one is lost; BRK_DELAYED while it waits, and then
 * the request completes later: with req->out as it is when the marks are
 * committed, or through fail with NOT_COORDINATOR when one is lost (or the
 * topic goes), or with timeout_err after timeout_ms (Kafka's
 * offsets.commit.timeout.ms for the group coordinator, request.timeout.ms
 * for the transaction coordinator; both map the append's REQUEST_TIMED_OUT
 * to COORDINATOR_NOT_AVAILABLE). The marks are copied (into req->arena).
 * A request already delayed (a JoinGroup completed by another member's
 * request) may wait too: when this returns other than BRK_DELAYED its
 * caller completes it. Without memory for the wait the answer goes at once.
 */
int brk_hw_answer(brk_request *req, const brk_hw_mark *marks, int n, int64_t timeout_ms,
		  int16_t timeout_err, brk_hw_fail_fn fail, void *arg);

/*
 * A wait that belongs to no request (a transaction's markers after its
 * Prepare record, a marker written here for a transaction coordinator):
 * fn(arg, err) once, later, with NONE when m is committed,
 * NOT_COORDINATOR when it is lost, or timeout_err after timeout_ms.
 * Returns the wait, or NULL when m is not PENDING (look first) or memory
 * ran out (fn is then never called). The wait frees itself after fn.
 */
typedef struct brk_hw_wait brk_hw_wait;
typedef void (*brk_hw_wait_fn)(void *arg, int16_t err);
brk_hw_wait *brk_hw_wait_start(const brk_hw_mark *m, int64_t timeout_ms, int16_t timeout_err,
			       brk_hw_wait_fn fn, void *arg);
/* Stop a wait before fn ran: fn is never called; w is freed. */
void brk_hw_wait_cancel(brk_hw_wait *w);

#endif
