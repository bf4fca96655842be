/*
 * plan.h - the drain plan: new replica lists that take every replica off
 * one broker, for samsa-admin drain (cmd_reassign.c). Pure: the caller
 * gives the current assignment and the brokers, gets the targets.
 *
 * Rules:
 *  - only partitions with a replica on the drained broker change;
 *  - each keeps its replication factor: the drained broker's slot is given
 *    to another live broker that is not a replica of the partition yet,
 *    in the same position, so every other replica keeps its place (the
 *    preferred leader stays the preferred leader; a drained preferred
 *    leader's leadership goes to its replacement);
 *  - the replacement is the candidate holding the fewest replicas so far
 *    (counting the moves already planned), then, for the first slot, the
 *    fewest first slots (preferred leaderships), then the lowest id: the
 *    drained replicas spread over the other brokers;
 *  - a partition with no candidate (as many replicas as the brokers that
 *    remain) cannot be moved: the plan fails on it.
 */
#ifndef SAMSA_TOOLS_PLAN_H
#define SAMSA_TOOLS_PLAN_H

#include <stdint.h>

typedef struct adm_plan_partition {
	int32_t nreplicas;
	const int32_t *replicas;  /* current, in order; not modified */
	int32_t *target;          /* out, nreplicas ids: the new list (caller's memory) */
	int moved;                /* out: 1 when target differs from replicas */
} adm_plan_partition;

/*
 * Plan the drain of broker `drained` over the brokers live[0..nlive)
 * (drained may be among them: it is never chosen). Returns 0, or the
 * index + 1 of the first partition that cannot be moved (targets of the
 * earlier ones are set, the rest untouched).
 */
int adm_plan_drain(adm_plan_partition *parts, int32_t nparts, int32_t drained, const int32_t *live,
		   int32_t nlive);

#endif
