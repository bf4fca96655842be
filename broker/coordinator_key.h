/*
 * coordinator_key.h - which partition of a coordinator's internal topic
 * holds a key: a group id in __consumer_offsets, a transactional id in
 * __transaction_state. Kafka's GroupMetadataManager.partitionFor and
 * TransactionStateManager.partitionFor: Utils.abs(key.hashCode()) %
 * partitions, with Java's String.hashCode over the UTF-16 code units of the
 * key (UTF-8 decoded here; a malformed byte counts as U+FFFD, as Java's
 * decoder replaces it) and Utils.abs mapping Integer.MIN_VALUE to 0.
 *
 * FindCoordinator answers the leader of that partition, and a coordinator
 * serves a key only while it leads that partition and has loaded it.
 */
#ifndef SAMSA_BROKER_COORDINATOR_KEY_H
#define SAMSA_BROKER_COORDINATOR_KEY_H

#include <stdint.h>

/* The partition of key (len bytes, a view) among npartitions; 0 when
 * npartitions <= 0. */
int32_t brk_coordinator_partition(const char *key, int32_t len, int32_t npartitions);

#endif
