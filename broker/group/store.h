/*
 * store.h - durability of groups and committed offsets in the internal topic
 * __consumer_offsets (DESIGN.md decision 6), with Kafka's key and value
 * layouts (store_codec.h): creation of the topic, loading a partition's
 * groups when this broker becomes its leader and dropping them when it
 * stops (the role observer; Kafka's GroupCoordinator.onElection /
 * onResignation), writes (one uncompressed batch per operation, appended
 * to the group's partition through the same path as Produce), and the
 * periodic expiry of offsets (offsets.retention.minutes).
 *
 * Everything runs on the event loop thread. A write is appended to the log
 * before the in-memory state changes; it is not fsynced (the log's flush
 * policy applies) and the answer that follows it waits until the high
 * watermark passes it (group.h, "Replicated writes"; on a single node the
 * high watermark moves with the append, so nothing waits). Every write is
 * recorded as its partition's last write (grp_partition.last_write).
 *
 * Log lines, one per partition (for operators and cluster tests), when a
 * partition is loaded after start-up ("samsa: __consumer_offsets-7: loaded
 * 3 group(s) and 12 committed offset(s) at leader epoch 4 in 2 ms"; not for
 * the empty partitions of a topic just made, at leader epoch 0) and when it
 * is dropped ("... unloaded 3 group(s): now a follower", or "stopped
 * loading, dropped ..." when it was still loading); the partitions loaded
 * at start-up are summed up in one line once the last of them is loaded
 * ("samsa: loaded 100000 group(s) and 1000000 committed offset(s) from 50
 * partition(s) of __consumer_offsets in 1234 ms").
 */
#ifndef SAMSA_BROKER_GROUP_STORE_H
#define SAMSA_BROKER_GROUP_STORE_H

#include <stdint.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/internal_topic.h"
#include "protocol/buf.h"

#define GRP_OFFSETS_TOPIC BRK_OFFSETS_TOPIC

/*
 * __consumer_offsets in gc's partition registry, or NULL when it does not
 * exist (yet) or no store is attached: callers answer
 * COORDINATOR_NOT_AVAILABLE. The topic is owned by the partition registry.
 */
struct brk_topic *grp_store_topic(const grp_coordinator *gc);

/*
 * The controller operation that creates __consumer_offsets
 * (offsets.topic.num.partitions partitions, replication factor
 * min(offsets.topic.replication.factor, live brokers) with a warning on
 * stderr when capped, cleanup.policy=compact, compression.type=producer,
 * segment.bytes=offsets.topic.segment.bytes: Kafka's
 * GroupCoordinator.groupMetadataTopicConfigs). As in Kafka the topic is
 * made on first use: FindCoordinator for a group, or Metadata naming it; a
 * broker that serves no group never pays for its 50 partitions.
 */
void grp_store_topic_op(brk_internal_topic_op *o);

/*
 * For a handler whose request writes to __consumer_offsets (OffsetCommit,
 * TxnOffsetCommit, JoinGroup, SyncGroup): when the topic does not exist
 * yet and req has not waited for it already, its creation is handed to
 * the controller and BRK_DELAYED returned: the handler runs again once the
 * controller answered (ctl_wait.h). Else 0: go on (a missing topic then
 * answers COORDINATOR_NOT_AVAILABLE). BRK_CLOSE when it cannot wait.
 */
int grp_store_await_topic(grp_coordinator *gc, brk_request *req);

/*
 * Attach the store to gc (writes go to partitions of reg) and follow the
 * leadership of __consumer_offsets: a role observer and a marker observer
 * are registered on reg, then every partition this broker leads now starts
 * loading (at start-up: after the controller's initial events, before the
 * listeners open; the loads run once the loop does), and the offset expiry
 * timer starts (offsets.retention.check.interval.ms).
 *
 * Loading a partition (on each new leader epoch where this broker leads
 * it, its log online; Kafka's GroupMetadataManager.loadGroupsAndOffsets):
 * in the background, gc->load_slice records per loop iteration, one
 * partition at a time in the order they were elected (without a loop, at
 * once). Meanwhile the partition is loading (grp_coordinator_error answers
 * COORDINATOR_LOAD_IN_PROGRESS for its groups, ListGroups too) and every
 * other request is served. Its log is read from the log start offset to
 * the log end offset (brk_internal_reader), records applied in order
 * (tombstones remove), and the groups restored (Empty without members,
 * else Stable; grp_restored). Records of a transactional batch are pending
 * offsets of its producer until a commit (applied) or abort (dropped)
 * marker of that producer follows in the same partition, also one written
 * while the load runs; those without a marker stay pending. Malformed
 * records are skipped with a warning, as Kafka does. A partition that
 * cannot be read stays unloaded (NOT_COORDINATOR) with a message, at
 * start-up too (the broker runs on and serves the rest). When this broker
 * stops leading it (follower, no replica, topic removed) or a new leader
 * epoch starts, its load stops and its groups are dropped
 * (grp_partition_unload) before anything else. gc->loads_done is called
 * whenever the last queued load ends.
 * Returns 0, -ENOMEM, or -ENOSPC when the observers cannot be registered.
 */
int grp_store_open(grp_coordinator *gc, struct brk_partitions *reg);

/* The role observer grp_store_open registers (a brk_role_fn whose arg is
 * the grp_coordinator): p got a new leader epoch. Exposed for tests. */
void grp_store_on_role(void *gc, struct brk_partition *p);

/* One offset to write: value NULL writes a tombstone (deletes it). */
typedef struct grp_store_offset {
	proto_str topic;
	int32_t partition;
	const grp_offset *value;
} grp_store_offset;

/*
 * Write n offset commits/tombstones of group g as one batch, then apply them
 * to g->offsets (each with the offset of its record; a tombstone also
 * removes the partition's pending transactional offsets). Returns a Kafka error code for every one of them
 * (Kafka's GroupCoordinatorService error mapping): NONE,
 * COORDINATOR_NOT_AVAILABLE (no __consumer_offsets partition),
 * NOT_COORDINATOR (g's partition is not loaded here, or the log failed:
 * offline or I/O error),
 * UNKNOWN_SERVER_ERROR (out of memory, or a batch above the
 * __consumer_offsets topic's effective max.message.bytes or its
 * segment.bytes: nothing is written and nothing changes, as Kafka 4.x's
 * coordinator, whose RecordTooLargeException maps to UNKNOWN_SERVER_ERROR
 * for every group write, offset commits included).
 * n == 0 writes nothing and returns NONE.
 */
int grp_store_write_offsets(grp_group *g, const grp_store_offset *items, int32_t n, int64_t now_ms);

/*
 * A transactional offset commit (TxnOffsetCommit): write the n offsets of
 * group g (values not NULL) as ONE transactional batch carrying
 * producer_id / producer_epoch (base sequence 0; Kafka's coordinator
 * writes it so), appended through log_append_coordinator (the producer's
 * epoch is checked, its transaction starts in that partition so the last
 * stable offset and the markers work), then record them as pending for
 * producer_id in g->txns with their record offsets. They become committed
 * offsets only when the transaction's commit marker reaches this partition
 * (grp_txn_completed). Returns a Kafka error code for all of them: as
 * grp_store_write_offsets, plus INVALID_PRODUCER_EPOCH (an epoch older
 * than the producer's last one in that partition) and INVALID_TXN_STATE
 * from the producer state.
 */
int grp_store_write_txn_offsets(grp_group *g, int64_t producer_id, int16_t producer_epoch,
				const grp_store_offset *items, int32_t n, int64_t now_ms);

/* Append g's GroupMetadataValue (Kafka's layout, version 3). group.c calls this (gc->write_group)
 * when a rebalance completes and when the group becomes Empty (Kafka's
 * storeGroup). Returns a Kafka error code as grp_store_write_offsets: a
 * record above max.message.bytes (a huge assignment) is not written and
 * answers UNKNOWN_SERVER_ERROR (GroupMetadataManager
 * .appendGroupMetadataErrorToResponseError). */
int grp_store_write_group(grp_coordinator *gc, grp_group *g);

/* Append tombstones for every offset of g (committed, and pending
 * transactional ones of partitions without a committed offset: Kafka's
 * deleteAllOffsets) and for its group metadata, in one batch, and clear
 * g->offsets and the pending offsets (DeleteGroups; the caller then calls
 * grp_remove). Returns a Kafka error code as grp_store_write_offsets. */
int grp_store_delete_group(grp_group *g);

/* Run one expiry pass now (the timer's work; exposed for tests): tombstone
 * expired offsets (not those with a pending transactional offset), then
 * remove Empty groups left without offsets and without open transactions
 * (Dead), writing their group tombstone. */
void grp_store_expire(grp_coordinator *gc, int64_t now_ms);

#endif
