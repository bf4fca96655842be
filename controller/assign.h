/*
 * assign.h - where the replicas of new partitions go: Kafka's
 * AdminUtils.assignReplicasToBrokers, as ZooKeeper-mode Kafka runs it for
 * CreateTopics (AdminZkClient, ZkAdminManager) and CreatePartitions
 * (AdminZkClient.createPartitions).
 *
 * Rack-unaware placement, over the brokers sorted by id: partition p's
 * first replica (its preferred leader) is broker (p + start) mod n, and the
 * others follow it at a distance 1 + (shift + j) mod (n - 1), where shift
 * grows by one each time p passes a multiple of n. So leaders go round
 * robin and the followers of consecutive rounds are spread differently.
 *
 * Rack-aware placement (every broker has a rack): the same walk over the
 * brokers listed rack by rack in turn (racks sorted by name, brokers of a
 * rack by id: "r1 r2 r3 r1 r2 r3 ..."), with a shift that steps over whole
 * rounds of racks, skipping a broker whose rack already holds a replica
 * while some rack holds none, and a broker already used while some broker
 * is unused. Kafka refuses a set where only some brokers have a rack; here
 * such a set is placed rack-unaware (the racks are then ignored).
 *
 * start and shift are random (Kafka's rand.nextInt over the broker count)
 * unless fixed_start_index is >= 0, which fixes both, as Kafka's
 * fixedStartIndex does (CreatePartitions passes the index of the first
 * broker whose id is >= the first replica of partition 0, so new partitions
 * continue the existing pattern).
 */
#ifndef SAMSA_CONTROLLER_ASSIGN_H
#define SAMSA_CONTROLLER_ASSIGN_H

#include <stdint.h>

typedef struct ctl_assign_broker {
	int32_t id;
	const char *rack; /* broker.rack; NULL or "" when unset */
} ctl_assign_broker;

/*
 * Place rf replicas for each of npartitions partitions numbered from
 * start_partition (the partitions the topic has already: Kafka's
 * startPartitionId) over brokers[0..nbrokers) (any order, distinct ids).
 * out receives npartitions rows of rf broker ids: row i for partition
 * start_partition + i, first replica first. Returns 0, -EINVAL
 * (npartitions < 1, rf < 1, rf > nbrokers, start_partition < 0) or
 * -ENOMEM / -errno (no random numbers).
 */
int ctl_assign_replicas(const ctl_assign_broker *brokers, int32_t nbrokers,
			int32_t npartitions, int32_t rf, int32_t fixed_start_index,
			int32_t start_partition, int32_t *out);

#endif
