/*
 * partitions.h - the partition logs this broker holds: a registry from topic
 * (by name or topic id) and partition index to the open log_partition, the
 * topic's effective config, and the purgatory watch list of each partition.
 * Also the periodic work on them: flush policy (flush.messages, flush.ms,
 * log.flush.scheduler.interval.ms) and the offset checkpoints
 * (log.flush.offset.checkpoint.interval.ms = 60 s for the recovery point and
 * log start offset, replica.high.watermark.checkpoint.interval.ms = 5 s for
 * the high watermark).
 *
 * Everything here runs on the event loop thread. Pointers returned stay
 * valid until the topic is deleted (brk_partitions_delete_topic) or
 * brk_partitions_shutdown; do not keep them across loop iterations without
 * looking them up again.
 */
#ifndef SAMSA_BROKER_PARTITIONS_H
#define SAMSA_BROKER_PARTITIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/purgatory.h"
#include "broker/topic_config.h"
#include "controller/ctl.h"
#include "storage/log.h"

typedef struct brk_topic brk_topic;

typedef struct brk_partition {
	brk_topic *topic;
	int32_t index;
	log_partition *log;     /* NULL when the log could not be opened (offline) */
	brk_watchlist waiters;  /* delayed fetches on this partition */
	bool flushing;          /* an off-loop flush is in flight */
} brk_partition;

struct brk_topic {
	const ctl_topic *meta;  /* owned by server.ctl */
	brk_topic_config cfg;   /* effective config (broker defaults + overrides) */
	int32_t npartitions;
	/* npartitions pointers, each partition allocated alone: the array
	 * grows (brk_add_partitions) but a partition never moves, so the
	 * purgatory's watches on p->waiters stay valid. */
	brk_partition **partitions;
};

/* Look a topic up by name (a view, len bytes) or by topic id; NULL if unknown. */
brk_topic *brk_topic_find(const char *name, int32_t len);
brk_topic *brk_topic_find_by_id(const uint8_t id[16]);
/* The partition, or NULL when index is out of range. */
brk_partition *brk_topic_partition(brk_topic *t, int32_t index);

/* The leader epoch of a partition (from the controller). */
int32_t brk_partition_leader_epoch(const brk_partition *p);

/*
 * The current leader epoch check of a request naming a partition (KIP-320,
 * Kafka's Partition.checkCurrentLeaderEpoch): KERR_NONE when
 * current_leader_epoch is -1 (not given) or equals the partition's leader
 * epoch, KERR_FENCED_LEADER_EPOCH when it is older (the client is behind),
 * KERR_UNKNOWN_LEADER_EPOCH when it is newer (this broker is behind).
 */
int16_t brk_partition_check_epoch(const brk_partition *p, int32_t current_leader_epoch);

/*
 * Open the logs of a topic just created in server.ctl (directories
 * <log.dir>/<topic>-<partition>; a leftover directory of the same name is
 * removed first) and write each partition.metadata.
 * Returns 0 or -errno; on error nothing of the topic stays on disk (the
 * logs opened so far are deleted, and the directory of the partition that
 * failed is removed).
 */
int brk_partitions_create_topic(const ctl_topic *t);

/*
 * Create a topic in server.ctl (ctl_create_topic's rules and errors) and,
 * unless validate_only, open its logs. When the logs cannot be created the
 * topic is removed from the controller again and KAFKA_STORAGE_ERROR is
 * returned. POLICY_VIOLATION when the broker's partitions would need more
 * descriptors at start-up than the open file limit gives (3 per partition,
 * 64 kept for the process; the reason goes to stderr). Returns a Kafka
 * error code; *out (optional) gets the topic.
 */
int brk_create_topic(const char *name, int32_t partitions, int16_t replication_factor,
		     const ctl_config_entry *configs, int32_t nconfigs, bool validate_only,
		     const ctl_topic **out);

/*
 * Add partitions to topic name up to count in all (CreatePartitions; Kafka's
 * ReplicationControlManager.createPartitions): ctl_add_partitions' checks,
 * errors and messages (msg, "" when none). Unless validate_only: the logs of
 * the new partitions are created first (fresh directories
 * <log.dir>/<topic>-<i> with their partition.metadata), then server.ctl
 * records them (metadata file rewritten), then the topic's partition array
 * in the registry grows. When the logs cannot be created or the metadata
 * not written, nothing changes (the new logs are removed again) and
 * KAFKA_STORAGE_ERROR is returned. POLICY_VIOLATION (with msg) when the
 * open file limit could not hold them after a restart, as brk_create_topic.
 * The existing partitions stay where they are in memory. Returns a Kafka
 * error code.
 */
int brk_add_partitions(const char *name, int32_t count, const ctl_replica_list *assignments,
		       int32_t nassignments, bool validate_only, char *msg, size_t msgsize);

/*
 * Delete a topic: wake its waiting fetches (they answer
 * UNKNOWN_TOPIC_OR_PARTITION), remove its logs from disk, delete it from
 * server.ctl and from the registry. Returns a Kafka error code
 * (UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR) or 0.
 */
int brk_partitions_delete_topic(const char *name);

/*
 * After an append to p moved its log end offset by bytes: on a single node
 * the ISR is this broker only, so the high watermark becomes the log end
 * offset; then wake the delayed fetches on p and start an off-loop flush when
 * flush.messages / flush.ms say so.
 */
void brk_partition_appended(brk_partition *p, int64_t bytes, int64_t now_ms);

/*
 * Write an end transaction marker (KIP-98; Kafka's WriteTxnMarkers path:
 * ReplicaManager.appendRecords of MemoryRecords.withEndTransactionMarker
 * with origin COORDINATOR) for producer_id at producer_epoch, sent by a
 * transaction coordinator at coordinator_epoch (the leader epoch of its
 * __transaction_state partition); commit true = COMMIT, false = ABORT.
 * The marker goes to the log with log_append_control (now_ms is its
 * timestamp), then, as after a produce, brk_partition_appended: the high
 * watermark moves, the last stable offset with it, and delayed fetches are
 * woken (read_committed ones see the records the marker made stable). When
 * p is a partition of __consumer_offsets, the group coordinator is told
 * next (grp_txn_completed, Kafka's GroupCoordinator.onTransactionCompleted)
 * so the producer's pending transactional offset commits are applied or
 * dropped.
 * Returns a Kafka error code: NONE; NOT_LEADER_OR_FOLLOWER when p->log is
 * NULL (the log is offline); INVALID_PRODUCER_EPOCH when producer_epoch is
 * below the partition's epoch for the producer (or negative);
 * INVALID_PRODUCER_ID_MAPPING for a negative producer id (no coordinator
 * sends one; Kafka would write a marker without producer state);
 * TRANSACTION_COORDINATOR_FENCED when coordinator_epoch is below the one of
 * the producer's last marker; KAFKA_STORAGE_ERROR on I/O errors. Nothing
 * is written on an error.
 */
int16_t brk_partition_write_txn_marker(brk_partition *p, int64_t producer_id, int16_t producer_epoch,
				       int32_t coordinator_epoch, bool commit, int64_t now_ms);

/* Start an off-loop flush of p's unflushed segments (no-op while one is in
 * flight). Returns 0 or -errno. */
int brk_partition_flush(brk_partition *p);

#endif
