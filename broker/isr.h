/*
 * isr.h - the leader's side of replication for the partitions this broker
 * leads: a follower's fetch recorded (then the high watermark may move and
 * the follower may join the ISR), and the ISR changes a leader asks the
 * controller for (Kafka's Partition.maybeExpandIsr / maybeShrinkIsr with
 * the ZooKeeper-mode write, CLUSTER.md 2.10 path 1 and 3.5): expansion on a
 * follower's fetch, shrink by a timer every replica.lag.time.max.ms / 2.
 * A change takes effect only when the controller confirms it
 * (brk_partition_isr_changed); one change per partition is in flight at a
 * time.
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_ISR_H
#define SAMSA_BROKER_ISR_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/partition.h"

/*
 * Follower broker `replica` fetched p (which this broker leads) from
 * fetch_offset, its log start offset being log_start_offset: its state is
 * recorded (brk_partition_follower_fetched), the high watermark moves when
 * the ISR allows, and an ISR expansion is asked for when it now qualifies.
 * Returns false when replica is not a replica of p.
 */
bool brk_replica_fetched(brk_partition *p, int32_t replica, int64_t fetch_offset,
			 int64_t log_start_offset);

/* Ask the controller for the ISR p should have now, when it differs
 * (brk_partition_wanted_isr) and no change is in flight. */
void brk_isr_maybe_change(brk_partition *p);

/* Start / stop the shrink timer (every replica.lag.time.max.ms / 2). */
void brk_isr_start(void);
void brk_isr_stop(void);

#endif
