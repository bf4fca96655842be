/*
 * partitions.h - the partitions of the cluster as this broker knows them
 * (Kafka's ReplicaManager and the topic side of its MetadataCache): a
 * registry from topic (by name or topic id) and partition index to the
 * partition object (partition.h), built from the controller's events, with
 * the logs of the replicas that live here. Also the periodic work on those
 * logs: flush policy (flush.messages, flush.ms,
 * log.flush.scheduler.interval.ms, and a flush after each roll) and the
 * offset checkpoints, one file of each per log dir in Kafka's format
 * (log.flush.offset.checkpoint.interval.ms for the recovery points,
 * log.flush.start.offset.checkpoint.interval.ms for the log start offsets,
 * replica.high.watermark.checkpoint.interval.ms for the high watermarks).
 *
 * Every topic of the cluster has a brk_topic here, with every partition;
 * a partition has a log only when this broker holds a replica of it.
 * Everything runs on the event loop thread. Pointers returned stay valid
 * until the topic is removed (brk_partitions_remove_topic) or the registry
 * is shut down; do not keep them across loop iterations without looking
 * them up again (by topic id and index).
 */
#ifndef SAMSA_BROKER_PARTITIONS_H
#define SAMSA_BROKER_PARTITIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/flush.h"
#include "broker/loop.h"
#include "broker/partition.h"
#include "broker/topic_config.h"
#include "controller/meta.h"
#include "storage/filecache.h"
#include "storage/log.h"
#include "storage/logdir.h"

struct brk_topic {
	char name[CTL_TOPIC_NAME_MAX + 1];
	int32_t name_len;           /* strlen(name), kept so no caller counts it */
	uint8_t id[16];
	bool internal;              /* __consumer_offsets, __transaction_state */
	int32_t replication_factor;
	ctl_config_entry *configs;  /* topic-level overrides, owned */
	int32_t nconfigs;
	brk_topic_config cfg;       /* effective config (broker defaults + overrides) */
	int32_t npartitions;
	/* npartitions pointers, each partition allocated alone: the array
	 * grows but a partition never moves, so the purgatory's watches on its
	 * lists stay valid. */
	brk_partition **partitions;
};

/* Told after a partition got a new leader epoch (its role may have
 * changed: become leader, become follower, no replica here). */
typedef void (*brk_role_fn)(void *arg, brk_partition *p);
/* Told after a transaction marker was written to p (commit true/false) for
 * producer_id. */
typedef void (*brk_marker_fn)(void *arg, brk_partition *p, int64_t producer_id, bool commit);

#define BRK_MAX_OBSERVERS 4

typedef struct brk_partitions {
	const brk_config *cfg;    /* the broker's (log dir, topic defaults) */
	brk_loop *loop;
	brk_flusher *flusher;     /* fsyncs and checkpoint writes, off the loop */
	log_file_cache files;     /* the open-file cache every log here shares */
	brk_replica_env env;
	brk_topic **topics;
	int32_t ntopics, cap;
	int32_t *by_name;         /* open addressing: topic index + 1, 0 = empty */
	int32_t *by_id;
	uint32_t index_cap;
	/* Checkpoints read at start-up, for the logs opened then. */
	logdir_checkpoint_entry *ck_rp, *ck_lso, *ck_hw;
	int nck_rp, nck_lso, nck_hw;
	bool clean_start;         /* the log dir was shut down cleanly */
	bool started;             /* brk_partitions_started ran */
	/* The logs opened before brk_partitions_started, for its report. */
	struct {
		int64_t began_ms;     /* brk_partitions_init, monotonic */
		int32_t logs, failed; /* opened; could not be opened */
		int64_t segments, recovered, rebuilt; /* summed log_open_stats */
		int out_of_files;     /* -EMFILE or -ENFILE: a log failed for want of
				       * descriptors (0: none did) */
	} load;
	uint64_t hw_timer, rp_timer, lso_timer, flush_timer; /* 0: none */
	uint64_t isr_timer;       /* the leader's ISR shrink check (isr.c) */
	struct {
		brk_role_fn fn;
		void *arg;
	} role_observers[BRK_MAX_OBSERVERS];
	struct {
		brk_marker_fn fn;
		void *arg;
	} marker_observers[BRK_MAX_OBSERVERS];
	int nrole_observers, nmarker_observers;
} brk_partitions;

/*
 * Set up an empty registry; clean tells whether the log dir was shut down
 * cleanly (the logs opened before brk_partitions_started are opened with
 * it and with the log dir's checkpoints, which are read here). The flush
 * worker (flusher, on loop) is started here and stopped by
 * brk_partitions_shutdown. The logs share one open-file cache sized by
 * brk_partitions_files_capacity (reported on stderr). A checkpoint that
 * does not parse is named on stderr and ignored (its logs are recovered
 * from their start); one that cannot be read (-EMFILE, -EIO, ...) fails
 * the call. Returns 0 or -errno.
 */
int brk_partitions_init(brk_partitions *reg, brk_loop *loop, brk_flusher *flusher,
			const brk_config *cfg, const brk_replica_env *env, bool clean);

/*
 * After the initial metadata was applied (its logs opened), before
 * brk_partitions_started: 0, or -EMFILE / -ENFILE when a log could not be
 * opened for want of file descriptors (reported on stderr with the open
 * file limit). Such a broker must not start: its partitions would be
 * offline for no fault of their data (Kafka takes the log dir offline and
 * stops). Nothing of the logs not opened was read or changed.
 */
int brk_partitions_check_loaded(const brk_partitions *reg);

/*
 * The initial metadata has been applied: report how the logs were loaded
 * (one line: logs, segments, time, segments recovered and rebuilt), set
 * aside the partition
 * directories in the log dir that belong to no replica here (renamed
 * "<dir>.<hex ms>-stray", KIP-858's marker, never deleted on a guess),
 * write the checkpoints and start the periodic timers.
 */
void brk_partitions_started(brk_partitions *reg);

/* Flush every log (the fsyncs of those with unflushed data on
 * num.recovery.threads.per.data.dir threads at once; the others cost
 * none), write the checkpoints (one file of each per log dir), close the
 * logs and free everything. Returns 0 or the first -errno. */
int brk_partitions_shutdown(brk_partitions *reg);

/* Register a role or marker observer (at most BRK_MAX_OBSERVERS each).
 * Returns 0 or -ENOSPC. */
int brk_partitions_observe_roles(brk_partitions *reg, brk_role_fn fn, void *arg);
int brk_partitions_observe_markers(brk_partitions *reg, brk_marker_fn fn, void *arg);

/* Look a topic up by name (a view, len bytes) or by topic id; NULL if unknown. */
brk_topic *brk_topic_find(const brk_partitions *reg, const char *name, int32_t len);
brk_topic *brk_topic_find_by_id(const brk_partitions *reg, const uint8_t id[16]);
/* The partition, or NULL when t is NULL or index is out of range. */
brk_partition *brk_topic_partition(brk_topic *t, int32_t index);
/* Iterate: i from 0 while it returns non-NULL (creation order as the
 * controller reported it). */
brk_topic *brk_partitions_topic_at(const brk_partitions *reg, int32_t i);
int32_t brk_partitions_topic_count(const brk_partitions *reg);
/* A topic config override, or NULL when the topic does not set it. */
const char *brk_topic_override(const brk_topic *t, const char *name);

/*
 * A topic from the controller (CTL_EV_TOPIC; ct is taken over): a new topic
 * gets its brk_topic, its partitions and, for each replica that lives
 * here, its log: an existing directory of the same topic id is opened (at
 * start-up with the checkpoints and the clean-shutdown flag; otherwise
 * recovered from its start), one of another topic id is set aside as stray
 * first, else a fresh log is created with its partition.metadata. A known
 * topic gets its new partitions, its config (applied to every open log)
 * and replicas; a partition whose replicas no longer name this broker (a
 * reassignment moved it away; Kafka's StopReplica with delete=true) stops
 * being led or followed here, its waiters are woken and its log deleted.
 * Then each partition's state is applied
 * (brk_partition_apply_state), and role observers told of new epochs.
 * A log that cannot be opened leaves its partition with log_failed set
 * (KAFKA_STORAGE_ERROR to requests). Returns 0 or -ENOMEM.
 */
int brk_partitions_apply_topic(brk_partitions *reg, ctl_topic *ct, int64_t now_ms);

/*
 * Single node (the local back end): make the logs of partitions
 * [from, to) of topic name (topic id id, overrides configs) before the
 * controller records them, so that a log that cannot be made is refused
 * before anything changes, as this broker did before it had a controller
 * apart: each directory is created (a leftover of the same name removed
 * first) with its partition.metadata, then closed; the controller's
 * CTL_EV_TOPIC then opens them. Returns 0, or -errno after removing what
 * it made (the reason on stderr).
 */
int brk_partitions_prepare_logs(brk_partitions *reg, const char *name, const uint8_t id[16],
				const ctl_config_entry *configs, int32_t nconfigs, int32_t from,
				int32_t to);
/* Remove the directories of partitions [from, to) of topic name made by
 * brk_partitions_prepare_logs (the controller refused the change). */
void brk_partitions_discard_logs(brk_partitions *reg, const char *name, int32_t from, int32_t to);

/* A partition state from the controller (CTL_EV_PARTITION): applied to the
 * partition of that topic id and index (a log made or deleted as for a
 * topic, as its replicas say), role observers told of a new epoch. Unknown
 * topics and partitions are ignored. */
void brk_partitions_apply_state(brk_partitions *reg, const uint8_t topic_id[16],
				const ctl_partition *st, int64_t now_ms);

/*
 * A topic is gone (CTL_EV_TOPIC_DELETED: deleted, or marked for deletion):
 * its waiting requests are woken (they answer UNKNOWN_TOPIC_OR_PARTITION),
 * role observers told (each partition's role becomes NONE first), its logs
 * removed from disk and the topic freed. A topic not held here (unknown,
 * or another id under that name: deleted while this broker was down or
 * starting) has its partition directories of that topic id removed from
 * the log dir, if any are left.
 */
void brk_partitions_remove_topic(brk_partitions *reg, const char *name, const uint8_t id[16]);

/* Rebuild every topic's effective config after the broker's defaults
 * changed (dynamic broker configs) and apply it to the open logs. */
void brk_partitions_reconfigure(brk_partitions *reg);

/* The partitions of every topic. */
int64_t brk_partitions_partition_count(const brk_partitions *reg);

/*
 * After an append to p moved its log end offset by bytes: wake the
 * follower fetches waiting on p, move the high watermark when the ISR
 * allows it (on a single node at once: the ISR is this broker only), and
 * start an off-loop flush when flush.messages / flush.ms say so.
 */
void brk_partition_appended(brk_partitions *reg, brk_partition *p, int64_t bytes, int64_t now_ms);

/*
 * Write an end transaction marker (KIP-98; Kafka's WriteTxnMarkers path:
 * ReplicaManager.appendRecords of MemoryRecords.withEndTransactionMarker
 * with origin COORDINATOR) for producer_id at producer_epoch, sent by a
 * transaction coordinator at coordinator_epoch (the leader epoch of its
 * __transaction_state partition); commit true = COMMIT, false = ABORT.
 * The marker goes to the log with log_append_control (now_ms is its
 * timestamp), then, as after a produce, brk_partition_appended. Marker
 * observers are told next (the group coordinator applies or drops the
 * producer's pending transactional offsets, Kafka's
 * GroupCoordinator.onTransactionCompleted).
 * Returns a Kafka error code: NONE; NOT_LEADER_OR_FOLLOWER when this
 * broker does not lead p; KAFKA_STORAGE_ERROR when its log is offline or
 * on I/O errors; INVALID_PRODUCER_EPOCH when producer_epoch is below the
 * partition's epoch for the producer (or negative);
 * INVALID_PRODUCER_ID_MAPPING for a negative producer id;
 * TRANSACTION_COORDINATOR_FENCED when coordinator_epoch is below the one of
 * the producer's last marker. Nothing is written on an error.
 */
int16_t brk_partition_write_txn_marker(brk_partitions *reg, brk_partition *p, int64_t producer_id,
				       int16_t producer_epoch, int32_t coordinator_epoch, bool commit,
				       int64_t now_ms);

/* Write the recovery point, log start offset and high watermark
 * checkpoints now (off the loop), e.g. after a truncation moved them back. */
void brk_partitions_checkpoint(brk_partitions *reg);

/* Start an off-loop flush of p's unflushed segments (no-op while one is in
 * flight). Returns 0 or -errno. */
int brk_partition_flush(brk_partitions *reg, brk_partition *p);

/*
 * The descriptors the segment files of every log here may hold together
 * (the open-file cache, storage/filecache.h): log.max.open.files, or for
 * -1 what the soft open file limit leaves after 64 for the process itself
 * and after room for max.connections connections, which get at most half
 * of it (an explicit value above what the limit leaves after those 64 is
 * taken as -1, with a warning). So the partition count is bounded by nothing but
 * memory: an idle partition holds no descriptor, and no ulimit tuning is
 * needed (Kafka holds every segment open and asks for 100000+). With
 * report, the figures go to stderr.
 */
int64_t brk_partitions_files_capacity(const brk_config *cfg, bool report);

#endif
