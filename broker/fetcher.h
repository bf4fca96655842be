/*
 * fetcher.h - the follower's side of replication (Kafka's
 * ReplicaFetcherThread and AbstractFetcherThread, CLUSTER.md 3.2 and 3.7):
 * one fetcher per leader broker, on the loop, over this broker's
 * connection to it (peers.h, BRK_PEER_FETCH), for every partition this
 * broker follows from that leader.
 *
 * A partition starts following a leader at each new leader epoch
 * (KAFKA-13790: also when the leader stays the same) in the truncating
 * state: OffsetForLeaderEpoch (v4, with this broker's replica id) for the
 * latest epoch of its log, and the KIP-101/KIP-279 rule on the answer
 * (Kafka's AbstractFetcherThread.getOffsetTruncationState):
 *  - leader answers no end offset: truncate to the high watermark;
 *  - the leader's epoch is one this log knows: truncate to the smaller of
 *    the leader's end offset and this log's end of that epoch, done;
 *  - an epoch this log does not have: truncate to this log's end for the
 *    largest epoch below it and ask again (the loop that converges after
 *    several fast fail-overs);
 * never to its own high watermark otherwise. Then it fetches: Fetch v15
 * (ReplicaState with this broker's id and epoch, topic ids,
 * replica.fetch.wait.max.ms, replica.fetch.min.bytes,
 * replica.fetch.max.bytes per partition, replica.fetch.response.max.bytes
 * in all, READ_UNCOMMITTED, no fetch session) from its log end offset, and
 * appends what comes as it came (log_append_follower: the leader's
 * offsets, epochs and producer state), then takes the high watermark
 * min(leader's, own log end) and the leader's log start offset. One
 * request per leader is in flight; the next goes as soon as the answer is
 * in (the leader holds a fetch until it has data or the wait passed).
 *
 * Errors: OFFSET_OUT_OF_RANGE below the leader's log start empties the log
 * and starts it there (truncateFullyAndStartAt); above the leader's end
 * truncates again through the epochs. NOT_LEADER_OR_FOLLOWER,
 * FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_* and
 * connection failures back off replica.fetch.backoff.ms (the controller's
 * next state, if any, restarts the partition).
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_FETCHER_H
#define SAMSA_BROKER_FETCHER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/partition.h"
#include "protocol/buf.h"

/* Kafka's replica.fetch.* settings. */
typedef struct brk_fetcher_config {
	int32_t wait_max_ms;        /* replica.fetch.wait.max.ms */
	int32_t min_bytes;          /* replica.fetch.min.bytes */
	int32_t max_bytes;          /* replica.fetch.max.bytes (per partition) */
	int32_t response_max_bytes; /* replica.fetch.response.max.bytes */
	int64_t backoff_ms;         /* replica.fetch.backoff.ms */
} brk_fetcher_config;

/* One followed partition. */
typedef struct brk_followed {
	uint8_t topic_id[16];
	int32_t partition;
	int32_t leader_epoch;   /* the epoch it follows */
	bool truncating;        /* asking OffsetForLeaderEpoch, else fetching */
	int64_t backoff_until;  /* monotonic ms; 0 none */
	int32_t quick_retries;  /* short backoffs taken since the last success */
} brk_followed;

typedef struct brk_fetcher brk_fetcher;

typedef struct brk_fetchers {
	brk_fetcher **v;        /* one per leader broker with partitions */
	int32_t n, cap;
	brk_fetcher_config cfg;
	bool stopping;
} brk_fetchers;

/* An empty set, following the roles of the server's partitions (it
 * registers a role observer). Returns 0 or -errno. */
int brk_fetchers_init(brk_fetchers *fs, const brk_fetcher_config *cfg);

/* Stop fetching: requests in flight are dropped when they come back. Call
 * before the peers are destroyed, then brk_fetchers_free. */
void brk_fetchers_stop(brk_fetchers *fs);
void brk_fetchers_free(brk_fetchers *fs);

/* Follow p (role FOLLOWER, new epoch) from its leader, starting with the
 * truncation; or stop following it (any other role). Called by the role
 * observer; exposed for tests. */
void brk_fetchers_update(brk_fetchers *fs, brk_partition *p);

/* The truncation offset of the KIP-279 rule for lp given the leader's
 * answer (leader_epoch, end_offset) to a request for asked_epoch; *done
 * false when another request must follow. Pure: exposed for tests. */
int64_t brk_fetcher_truncation_offset(const log_partition *lp, int32_t leader_epoch,
				      int64_t end_offset, bool *done);

#endif
