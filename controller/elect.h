/*
 * elect.h - Kafka's leader election strategies and the leader imbalance of
 * the automatic rebalance, as pure functions over the metadata model
 * (meta.h): no ZooKeeper, no I/O, no clock, so they are tested alone
 * (tests/test_elect.c). Sources: Kafka 3.x PartitionLeaderElectionAlgorithms
 * and Election.scala (CLUSTER.md 2.4), KafkaController.
 * checkAndTriggerAutoLeaderRebalance (CLUSTER.md 2.7).
 *
 * "Online" is the caller's predicate: a broker that is registered and not in
 * controlled shutdown (Kafka's ControllerContext.isReplicaOnline, whose
 * liveBrokerIds leave the shutting-down brokers out).
 *
 * A partition "has a state" when its leader epoch is >= 0; one without
 * (a new partition whose state the controller has not written yet) is never
 * elected here. The imbalance and the rebalance's choice leave out topics
 * marked for deletion (ctl_topic.deleting), as Kafka leaves out those
 * queued for deletion.
 */
#ifndef SAMSA_CONTROLLER_ELECT_H
#define SAMSA_CONTROLLER_ELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/meta.h"

/* Whether broker id may lead now (see above). */
typedef bool (*ctl_online_fn)(const void *arg, int32_t id);

/* Kafka's ElectionType values (ElectLeaders, KIP-460). */
#define CTL_ELECTION_PREFERRED 0
#define CTL_ELECTION_UNCLEAN 1

/*
 * The preferred strategy: the first replica of the assignment (the
 * preferred replica) when it is online and in the ISR, else CTL_NO_LEADER.
 * The ISR stays as it is; the caller bumps the leader epoch.
 */
int32_t ctl_elect_preferred(const ctl_partition *p, ctl_online_fn online, const void *arg);

/*
 * The offline strategy (a partition whose leader is gone): the first
 * replica in assignment order that is online and in the ISR, the new ISR
 * being the old one's online members; failing that, only when unclean, the
 * first online replica, with ISR [it] (*was_unclean set). CTL_NO_LEADER
 * when neither exists (isr untouched then). isr needs room for p->nisr + 1
 * entries.
 */
int32_t ctl_elect_offline(const ctl_partition *p, bool unclean, ctl_online_fn online,
			  const void *arg, int32_t *isr, int32_t *nisr, bool *was_unclean);

/* One broker's leadership against what it should lead: the partitions it
 * is the preferred replica of, and how many of them have a state naming
 * another leader or none (an offline partition counts; one without a state
 * counts only in the total, as in Kafka). */
typedef struct ctl_imbalance {
	int32_t broker;
	int32_t preferred;     /* partitions whose first replica it is */
	int32_t led_by_others; /* of those, led by another broker or by none */
} ctl_imbalance;

/*
 * Per preferred broker, sorted by broker id, over topics[0..ntopics): into
 * *out (malloc'd, the caller frees; NULL when there is none). Returns the
 * number of brokers, or -1 when out of memory.
 */
int32_t ctl_imbalance_compute(ctl_topic *const *topics, int32_t ntopics, ctl_imbalance **out);

/* Kafka's test: the ratio led_by_others / preferred is above pct / 100
 * (computed exactly, in integers). */
bool ctl_imbalance_above(const ctl_imbalance *b, int32_t pct);

/* A partition by position: topics[topic]->partitions[partition]. */
typedef struct ctl_partition_ref {
	int32_t topic;
	int32_t partition;
} ctl_partition_ref;

/*
 * The automatic rebalance's choice: for every broker whose imbalance is
 * above pct, the partitions it is the preferred replica of that another
 * broker (or none) leads and that the preferred strategy can elect now
 * (ctl_elect_preferred). Into *out (malloc'd, the caller frees; NULL when
 * there is none), in topic and partition order. Returns their number, or
 * -1 when out of memory.
 */
int32_t ctl_rebalance_pick(ctl_topic *const *topics, int32_t ntopics, int32_t pct,
			   ctl_online_fn online, const void *arg, ctl_partition_ref **out);

#endif
