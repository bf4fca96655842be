/*
 * partition.h - one partition as this broker sees it (Kafka's Partition,
 * DESIGN.md decision 10): its assignment and state from the controller
 * (replicas, leader, leader epoch, ISR, partition epoch), this broker's role
 * in it, the log when a replica lives here, the leader's view of each
 * follower, the high watermark rule, and the waiters woken when the log or
 * the high watermark moves. It is the one place that answers "may this
 * request be served here?" (brk_partition_leader_error).
 *
 * Replication rules (CLUSTER.md 3; Kafka's Partition and Replica):
 *  - The high watermark is the leader's log end offset lowered to the log
 *    end offset of every follower in the maximal ISR (the ISR plus a
 *    follower whose addition is in flight) or caught up and alive; it only
 *    moves forward on the leader (Partition.maybeIncrementLeaderHW).
 *  - A follower is caught up when its log end offset equals the leader's,
 *    or its last caught-up time is within replica.lag.time.max.ms
 *    (Replica.updateFetchState: a fetch at the leader's end sets it to now,
 *    a fetch at or past the leader's end at the follower's previous fetch
 *    sets it to that fetch's time).
 *  - An ISR change is proposed to the controller and takes effect only
 *    when the controller confirms it (brk_partition_isr_changed); until
 *    then the high watermark and acks=all keep using the larger set.
 *  - A state with a lower leader epoch than the one held is ignored; an
 *    equal epoch changes only the ISR and partition epoch; a higher one
 *    resets the role (become leader or follower, KAFKA-13790).
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_PARTITION_H
#define SAMSA_BROKER_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/purgatory.h"
#include "controller/meta.h"
#include "protocol/buf.h"
#include "storage/log.h"

typedef struct brk_topic brk_topic;

typedef enum brk_role {
	BRK_ROLE_NONE,     /* no replica here (or no state yet) */
	BRK_ROLE_LEADER,   /* this broker leads the partition */
	BRK_ROLE_FOLLOWER, /* a replica here follows the leader */
} brk_role;

/* The leader's view of one follower (Kafka's Replica). */
typedef struct brk_follower {
	int32_t broker_id;
	int64_t log_end_offset;       /* -1 until its first fetch in this epoch */
	int64_t log_start_offset;
	int64_t last_fetch_ms;        /* monotonic ms of its last fetch, 0 none */
	int64_t last_fetch_leader_leo;/* the leader's LEO at that fetch */
	int64_t last_caught_up_ms;    /* monotonic ms, 0 never */
} brk_follower;

typedef struct brk_partition {
	brk_topic *topic;
	int32_t index;
	/* From the controller (ctl_partition; owned copies). */
	int32_t *replicas;
	int32_t nreplicas;
	int32_t leader;            /* broker id, -1 when none */
	int32_t leader_epoch;      /* -1 before the first state */
	int32_t *isr;
	int32_t nisr;
	int32_t partition_epoch;
	int32_t controller_epoch;
	int32_t *adding;           /* a reassignment in progress (KIP-455): the */
	int32_t nadding;           /* replicas being added and removed; NULL, 0 */
	int32_t *removing;         /* when none */
	int32_t nremoving;
	/* This broker. */
	brk_role role;
	log_partition *log;        /* open when a replica lives here */
	bool log_failed;           /* a replica here whose log could not be opened */
	/* Leader: one entry per other replica, in replica order. */
	brk_follower *followers;
	int32_t nfollowers;
	int64_t leader_epoch_start_offset; /* the LEO when this epoch began */
	int32_t led_since_epoch;   /* the epoch this broker's unbroken run as
				    * leader began in (a bump that keeps it leader
				    * keeps it); -1 when not leader */
	int32_t *proposed_isr;     /* an ISR change in flight (NULL: none) */
	int32_t nproposed_isr;
	uint64_t isr_call;         /* its controller call id, 0 none */
	/* Waiters. */
	brk_watchlist log_waiters; /* the log end offset moved: follower fetches */
	brk_watchlist hw_waiters;  /* the high watermark moved or the role changed:
				    * consumer fetches, acks=all produce */
	bool flushing;             /* an off-loop flush is in flight */
} brk_partition;

/* What the partition layer needs to know of the cluster and its config. */
typedef struct brk_replica_env {
	int32_t broker_id;               /* this broker */
	int64_t replica_lag_time_max_ms; /* replica.lag.time.max.ms */
	/* Whether broker id is alive (registered); NULL: all are. */
	bool (*alive)(void *arg, int32_t broker_id);
	void *alive_arg;
} brk_replica_env;

/* Free the partition's arrays (not the log, not p itself). */
void brk_partition_clear(brk_partition *p);

/*
 * Apply a state from the controller (epoch rules above). Returns what
 * happened: BRK_STATE_IGNORED (stale), BRK_STATE_UPDATED (same epoch: ISR
 * or partition epoch), BRK_STATE_NEW_EPOCH (role reset: the caller starts
 * or stops following, loads or unloads coordinator state), or -ENOMEM
 * (nothing changed). A new epoch where this broker is the leader assigns
 * the epoch at the log end offset in the leader epoch cache (KAFKA-7415)
 * and resets every follower (ISR members caught up now). Wakes hw_waiters
 * and log_waiters when anything changed.
 */
enum { BRK_STATE_IGNORED = 0, BRK_STATE_UPDATED = 1, BRK_STATE_NEW_EPOCH = 2 };
int brk_partition_apply_state(brk_partition *p, const ctl_partition *st, const brk_replica_env *env,
			      int64_t now_ms);

/*
 * The check of a request that needs the leader (Produce, consumer Fetch,
 * ListOffsets, DeleteRecords, OffsetForLeaderEpoch ...; Kafka's
 * ReplicaManager.getPartitionOrError then Partition.leaderLogIfLocal):
 * KAFKA_STORAGE_ERROR when the replica here has no usable log;
 * FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when current_leader_epoch
 * (-1: not given) is below / above the partition's (KIP-320);
 * NOT_LEADER_OR_FOLLOWER when this broker does not lead it; else NONE.
 */
int16_t brk_partition_leader_error(const brk_partition *p, int32_t current_leader_epoch);

/*
 * How the partition is described to clients (Metadata and
 * DescribeTopicPartitions; Kafka's MetadataCache.getPartitionMetadata):
 *  - offline: the replicas whose broker is not alive (env->alive);
 *  - leader: p->leader, or -1 with leader_unavailable set when there is no
 *    leader, it is not alive, or it is this broker and its log is offline
 *    (then this broker is listed offline, and the ISR given empty, when no
 *    other replica is);
 *  - isr: p->isr (borrowed) unless emptied as above.
 * The offline list comes from arena a. Returns 0, or -1 when a is full.
 */
typedef struct brk_partition_view {
	int32_t leader;
	bool leader_unavailable;
	int32_t *isr;
	int32_t nisr;
	int32_t *offline;  /* NULL when noffline is 0 */
	int32_t noffline;
} brk_partition_view;
int brk_partition_describe(const brk_partition *p, const brk_replica_env *env, proto_arena *a,
			   brk_partition_view *out);

/* The current leader epoch check alone (KIP-320): NONE, FENCED_LEADER_EPOCH
 * or UNKNOWN_LEADER_EPOCH. */
int16_t brk_partition_check_epoch(const brk_partition *p, int32_t current_leader_epoch);

/* Whether broker_id is in the ISR, or in the maximal ISR (ISR plus an
 * addition in flight). */
bool brk_partition_in_isr(const brk_partition *p, int32_t broker_id);
int32_t brk_partition_maximal_isr_size(const brk_partition *p);

/*
 * Leader: recompute the high watermark (rule above) and move it forward
 * if it grew; wakes hw_waiters when it moved. Returns true when it moved.
 */
bool brk_partition_maybe_advance_hw(brk_partition *p, const brk_replica_env *env, int64_t now_ms);

/*
 * Leader: a fetch from follower broker_id at fetch_offset with its log start
 * offset (Replica.updateFetchState), then the high watermark. Returns the
 * follower, or NULL when broker_id is not a replica of p.
 */
brk_follower *brk_partition_follower_fetched(brk_partition *p, int32_t broker_id,
					     int64_t fetch_offset, int64_t log_start_offset,
					     const brk_replica_env *env, int64_t now_ms);

/* Whether follower f is caught up (rule above). */
bool brk_partition_follower_caught_up(const brk_partition *p, const brk_follower *f,
				      const brk_replica_env *env, int64_t now_ms);

/*
 * Leader: the ISR this partition should have now, or false when it should
 * stay as it is. Expansion (Partition.maybeExpandIsr): a follower not in
 * the ISR whose log end offset reached the high watermark and the start of
 * this leader epoch, and whose broker is alive. Shrink
 * (Partition.maybeShrinkIsr): ISR members that are not caught up. Never
 * while a change is in flight, never an empty ISR (the leader stays).
 * *out is malloc'ed (the caller frees it).
 */
bool brk_partition_wanted_isr(const brk_partition *p, const brk_replica_env *env, int64_t now_ms,
			      int32_t **out, int32_t *nout);

/* Record an ISR change in flight (isr copied) under controller call id. */
int brk_partition_propose_isr(brk_partition *p, const int32_t *isr, int32_t n, uint64_t call);
/* The controller answered the change in flight: on success (new partition
 * epoch) the ISR becomes the proposed one; in any case nothing is in flight
 * afterwards. Wakes hw_waiters. */
void brk_partition_isr_changed(brk_partition *p, bool ok, int32_t partition_epoch,
			       const brk_replica_env *env, int64_t now_ms);

#endif
