/*
 * txn_offsets.h - the pending transactional offsets of one group (Kafka's
 * OffsetMetadataManager.pendingTransactionalOffsets and
 * openTransactionsByGroup, formerly GroupMetadata
 * .pendingTransactionalOffsetCommits; KIP-98): per producer id, the offsets
 * committed by TxnOffsetCommit inside a transaction that has not ended yet.
 * They are written to __consumer_offsets as a transactional batch, are not
 * visible as committed offsets (OffsetFetch answers the committed ones, or
 * UNSTABLE_OFFSET_COMMIT with require_stable), and move into the committed
 * offsets when the transaction's commit marker reaches the group's
 * __consumer_offsets partition, or are dropped by an abort marker.
 *
 * A producer stays "open" in a group from its first transactional offset
 * commit to the marker, even when tombstones removed all its offsets (as
 * Kafka's openTransactionsByGroup): such a group is not expired.
 *
 * Memory: the set owns its maps (grp_offsets, which copy topics and
 * metadata). Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_GROUP_TXN_OFFSETS_H
#define SAMSA_BROKER_GROUP_TXN_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"

/* An empty set; NULL on allocation failure. */
grp_txn_set *grp_txn_set_new(void);
/* Free the set and every pending offset (NULL is fine). */
void grp_txn_set_free(grp_txn_set *s);
/* Number of open transactions (producers with pending offsets). */
int32_t grp_txn_set_count(const grp_txn_set *s);

/*
 * Record a pending offset of (topic, partition) (topic a view of tlen
 * bytes; v and its metadata are copied, v->record_offset should be the
 * record's offset in __consumer_offsets) for producer_id, whose batch went
 * to __consumer_offsets partition offsets_partition. A later one for the
 * same producer and partition replaces it. Returns 0 or -ENOMEM (nothing
 * changed).
 */
int grp_txn_put(grp_txn_set *s, int64_t producer_id, int32_t offsets_partition, const char *topic,
		int32_t tlen, int32_t partition, const grp_offset *v);

/* Whether any open transaction has a pending offset for (topic, partition)
 * (Kafka's OffsetMetadataManager.hasPendingTransactionalOffsets). */
bool grp_txn_pending(const grp_txn_set *s, const char *topic, int32_t tlen, int32_t partition);

/* The pending offset of producer_id for (topic, partition), or NULL. */
const grp_offset *grp_txn_get(const grp_txn_set *s, int64_t producer_id, const char *topic,
			      int32_t tlen, int32_t partition);

/* An offset tombstone of (topic, partition) was written or replayed:
 * remove that partition from every open transaction (Kafka's
 * OffsetMetadataManager.replay of a tombstone). The transactions stay open. */
void grp_txn_forget(grp_txn_set *s, const char *topic, int32_t tlen, int32_t partition);

/* Remove every pending offset (the group's offsets were all deleted:
 * DeleteGroups); the transactions stay open. */
void grp_txn_forget_all(grp_txn_set *s);

/*
 * The transaction of producer_id ended with a marker in __consumer_offsets
 * partition offsets_partition (Kafka's OffsetMetadataManager
 * .replayEndTransactionMarker). On commit each pending offset moves into
 * committed unless committed already holds an offset for that partition
 * whose record came later in the log (a plain commit after the
 * transactional one wins: larger record_offset; "we always keep the most
 * recent committed offset"); on abort they are dropped. Either way the
 * producer's transaction is closed in this group.
 * Returns 1 when the producer had an open transaction here, 0 when not
 * (nothing happens, as Kafka ignores such a marker), -ENOMEM when some
 * offsets could not be moved (the transaction is closed all the same).
 */
int grp_txn_complete(grp_txn_set *s, grp_offsets *committed, int64_t producer_id,
		     int32_t offsets_partition, bool commit);

/* Iterate the open transactions: i from 0 while it returns non-NULL; the
 * pending offsets of the producer (*producer_id) are the returned map. */
const grp_offsets *grp_txn_at(const grp_txn_set *s, int32_t i, int64_t *producer_id);

#endif
