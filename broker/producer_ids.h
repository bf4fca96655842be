/*
 * producer_ids.h - producer ids for idempotent and transactional producers
 * (KIP-98), handed out from blocks the controller reserves (Kafka's
 * ProducerIdManager: CTL_PRODUCER_ID_BLOCK ids at a time, never repeated in
 * the cluster, also across restarts). The next block is asked for when the
 * current one is 90% used, as Kafka's RPCProducerIdManager prefetches, so
 * the loop never waits on the controller for an id in the usual case.
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_PRODUCER_IDS_H
#define SAMSA_BROKER_PRODUCER_IDS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/cluster.h"
#include "broker/purgatory.h"

typedef struct brk_producer_ids {
	brk_cluster *cl;
	int64_t next, end;             /* the current block: [next, end) */
	int64_t spare_start, spare_end;/* the prefetched block (empty when equal) */
	uint64_t call;                 /* a block request in flight, 0 none */
	int16_t last_error;            /* of the last block request */
	brk_watchlist waiters;         /* requests waiting for a block */
} brk_producer_ids;

void brk_producer_ids_init(brk_producer_ids *pm, brk_cluster *cl);
/* Forget the call in flight and wake the waiters (they find no id). */
void brk_producer_ids_close(brk_producer_ids *pm);

/* Whether an id can be handed out now; when none can, a block is asked for
 * (once) and pm->waiters is notified when it arrives or fails. */
bool brk_producer_ids_ready(brk_producer_ids *pm);

/*
 * The next producer id into *out: KERR_NONE, or COORDINATOR_LOAD_IN_PROGRESS
 * (retriable, as Kafka's manager answers while a block is being fetched)
 * when none is available now (*out = -1; a block is asked for).
 */
int16_t brk_producer_ids_next(brk_producer_ids *pm, int64_t *out);

#endif
