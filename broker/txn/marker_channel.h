/*
 * marker_channel.h - how the transaction coordinator's markers reach their
 * partitions in the running broker: the txn_marker_env of markers.h over
 * the partition registry, the cluster's live brokers and the connections
 * to them (Kafka's TransactionMarkerChannelManager with its
 * WriteTxnMarkers requests).
 *
 *  - locate: the partition's leader from the registry; GONE for a topic
 *    or partition that does not exist (deleted), NO_LEADER while it has no
 *    leader, its leader is not a live broker, or it is this broker and the
 *    partition layer does not know it leads yet;
 *  - deliver, this broker the leader: the marker is written
 *    (brk_partition_write_txn_marker) and counts once it is committed
 *    (hw_wait.h, at most TXN_WRITE_TIMEOUT_MS: REQUEST_TIMED_OUT; a lost
 *    leadership is NOT_LEADER_OR_FOLLOWER); its own errors as they are;
 *  - deliver, another leader: one WriteTxnMarkers request (key 27) with
 *    the batch's marker, v1, or v2 for a transaction version 2 marker
 *    (v1 has no TransactionVersion field), on the peer connection of
 *    purpose BRK_PEER_CONTROL; each partition's error from the response
 *    (a partition missing from it: UNKNOWN_SERVER_ERROR), or
 *    NETWORK_EXCEPTION for all when the request fails (connection,
 *    timeout). The leader answers once its markers are committed
 *    (handlers/write_txn_markers.c).
 * All of these errors are retried by the marker job (markers.h).
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_TXN_MARKER_CHANNEL_H
#define SAMSA_BROKER_TXN_MARKER_CHANNEL_H

#include <stdint.h>

#include "broker/txn/markers.h"

struct brk_partitions;
struct brk_cluster;
struct brk_peers;
typedef struct txn_local_write txn_local_write;

typedef struct txn_marker_channel {
	struct brk_partitions *partitions;
	struct brk_cluster *cluster;
	struct brk_peers *peers;
	txn_local_write *local; /* markers written here, waiting to be committed */
} txn_marker_channel;

/* Set ch up over reg, cl and peers (borrowed) and point env at it
 * (locate, deliver, retry_backoff_ms = TXN_MARKER_BACKOFF_MS). */
void txn_marker_channel_init(txn_marker_channel *ch, txn_marker_env *env,
			     struct brk_partitions *reg, struct brk_cluster *cl,
			     struct brk_peers *peers);

/* Stop: the local markers still waiting end with NETWORK_EXCEPTION (their
 * done callbacks run here; requests to other brokers end when the peers
 * are destroyed). Cancel the marker jobs first. */
void txn_marker_channel_close(txn_marker_channel *ch);

#endif
