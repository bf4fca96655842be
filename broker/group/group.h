/*
 * group.h - the group coordinator (Kafka's GroupCoordinator with its
 * GroupMetadataManager / ClassicGroup): classic consumer groups with their
 * members and committed offsets, in a grp_coordinator object (the server
 * holds one; unit tests make their own).
 *
 * Ownership (Kafka's onElection / onResignation). A group lives in
 * partition brk_coordinator_partition(group id) of __consumer_offsets, and
 * this broker serves it only while it leads that partition and has loaded
 * it: store.c's role observer starts loading a partition's groups when
 * this broker becomes its leader (grp_partition_loading, then
 * grp_partition_loaded once the groups are restored) and drops them when
 * it stops (grp_partition_unload: waiting JoinGroup / SyncGroup requests
 * are answered NOT_COORDINATOR, timers cancelled). Requests for a group of
 * another partition answer NOT_COORDINATOR (grp_coordinator_error), so the
 * client asks FindCoordinator again. Loading runs in the background, a
 * slice per loop iteration (store.h), and meanwhile the partition's groups
 * answer COORDINATOR_LOAD_IN_PROGRESS, as Kafka's; every other request is
 * served. While __consumer_offsets does not exist (npartitions 0) every
 * group id is served, as a single node did before: a write then answers
 * COORDINATOR_NOT_AVAILABLE (store.h).
 *
 * Replicated writes. A change is appended to the group's partition and
 * applied in memory at once (a new leader reloads from its own replicated
 * log, so memory ahead of the high watermark is never kept by anyone
 * else); an answer that follows a write waits until the partition's high
 * watermark passes the coordinator's last write there (grp_answer,
 * hw_wait.h: Kafka appends with acks=-1 and answers from the append's
 * callback), at most GRP_WRITE_TIMEOUT_MS. Answers that only read
 * (OffsetFetch, DescribeGroups, ListGroups, Heartbeat) do not wait: they
 * may show a write that is not committed yet (Kafka's new coordinator reads
 * at the last committed offset instead).
 *
 * State machine (Kafka's ClassicGroupState):
 *
 *   Empty --join--> PreparingRebalance --all joined / rebalance timeout-->
 *   CompletingRebalance --leader's SyncGroup--> Stable
 *   Stable --join of a new member, leave, metadata change, session expiry-->
 *   PreparingRebalance
 *   PreparingRebalance --last member gone--> Empty
 *   any --DeleteGroups / group offsets all expired on Empty--> Dead
 *
 * Memory: every string and byte array in a grp_group/grp_member is owned by
 * it (malloc'ed copies of request views). Groups are found by id through
 * grp_find, a hash lookup (strmap.h: a commit costs the same with 100,000
 * groups as with 10); a pointer stays valid until grp_remove, the unload
 * of its partition or grp_coordinator_free.
 * Everything runs on the event loop thread.
 *
 * Split of the module:
 *   group.c          registry, ownership, state machine, members, timers,
 *                    rebalance completion (membership handlers call it)
 *   offsets.c        committed offsets of a group (grp_offsets_*)
 *   txn_offsets.c    pending transactional offsets of a group (grp_txn_*),
 *                    the index of groups with open transactions and
 *                    grp_txn_completed
 *   store.c          durability in __consumer_offsets (Kafka's key/value
 *                    layouts), creation of that topic, loading on election
 *                    (in slices on the loop)
 *   handlers/<api>.c one file per API key
 * Calls go one way: store.c calls group.c; group.c reaches the store only
 * through gc->write_group and gc->store_close.
 */
#ifndef SAMSA_BROKER_GROUP_GROUP_H
#define SAMSA_BROKER_GROUP_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/hw_wait.h"
#include "broker/loop.h"
#include "broker/request.h"
#include "broker/strmap.h"
#include "protocol/buf.h"
#include "protocol/gen/messages.h"

struct brk_partitions;

/* How long an answer waits for its write to be committed: Kafka's
 * offsets.commit.timeout.ms (default 5000), the group coordinator's write
 * timeout for every write; then COORDINATOR_NOT_AVAILABLE (Kafka's
 * CoordinatorOperationExceptionHelper maps REQUEST_TIMED_OUT so). */
#define GRP_WRITE_TIMEOUT_MS 5000

typedef enum grp_state {
	GRP_EMPTY,
	GRP_PREPARING_REBALANCE,
	GRP_COMPLETING_REBALANCE,
	GRP_STABLE,
	GRP_DEAD,
} grp_state;

/* Kafka's names for ListGroups/DescribeGroups ("Empty", "PreparingRebalance", ...). */
const char *grp_state_name(grp_state s);

typedef struct grp_protocol {
	char *name;
	uint8_t *metadata; /* subscription bytes, owned */
	int32_t metadata_len;
} grp_protocol;

typedef struct grp_member {
	char *member_id;
	char *group_instance_id; /* NULL for dynamic members (KIP-345) */
	char *client_id;
	char *client_host;
	int32_t session_timeout_ms;
	int32_t rebalance_timeout_ms;
	char *protocol_type;
	grp_protocol *protocols;
	int32_t nprotocols;
	uint8_t *assignment; /* from the leader's SyncGroup, owned */
	int32_t assignment_len;
	brk_request *join_req;  /* a JoinGroup waiting for the rebalance, or NULL */
	brk_request *sync_req;  /* a SyncGroup waiting for the leader, or NULL */
	uint64_t session_timer; /* heartbeat/session expiry timer id, 0 = none */
	bool is_new;            /* joined during the current rebalance */
	/* Kept by group.c: */
	bool awaiting_join;     /* rejoined in this rebalance (Kafka's awaiting join
				 * future); stays true when join_req's connection closes */
	bool pending_sync;      /* no SyncGroup yet for the current generation */
	struct grp_group *group; /* the group it belongs to (timers), set by grp_member_add */
} grp_member;

typedef struct grp_coordinator grp_coordinator;

typedef struct grp_offsets grp_offsets; /* offsets.c */

typedef struct grp_pending grp_pending; /* group.c: MEMBER_ID_REQUIRED members */

typedef struct grp_txn_set grp_txn_set; /* txn_offsets.c */

typedef struct grp_group {
	grp_coordinator *coord; /* the coordinator holding it */
	int32_t partition;      /* its __consumer_offsets partition, -1 while unknown */
	char *group_id;
	int32_t group_id_len;   /* bytes (the registry's key) */
	grp_state state;
	int32_t generation_id;
	char *protocol_type; /* NULL while no member */
	char *protocol_name; /* chosen protocol, NULL while none */
	char *leader_id;     /* member id of the leader, NULL while none */
	grp_member **members;       /* in join order (leader, protocol votes) */
	int32_t nmembers;
	struct grp_member_index *index; /* group.c: members by member id and by group
				     * instance id (Kafka's ClassicGroup.members,
				     * staticMembers); NULL until the first member */
	int64_t state_timestamp_ms; /* wall clock of the last state change */
	uint64_t rebalance_timer;   /* rebalance / initial delay timer, 0 = none */
	grp_offsets *offsets;       /* committed offsets (never NULL) */
	grp_txn_set *txns;          /* pending transactional offsets by producer
				     * id (never NULL; txn_offsets.h) */
	bool txn_tracked;           /* in coord->open_txns (grp_txn_track) */
	/* Kept by group.c: */
	grp_state previous_state;   /* state before the last transition */
	uint64_t sync_timer;        /* pending SyncGroup expiry, 0 = none */
	int32_t sync_generation;    /* generation the sync timer was armed for */
	bool new_member_added;      /* a member joined during the initial delay */
	int32_t initial_delay_ms;   /* InitialDelayedJoin: current delay */
	int32_t initial_remaining_ms; /* InitialDelayedJoin: time left to extend */
	grp_pending **pending;      /* members given an id with MEMBER_ID_REQUIRED,
				     * not joined yet (Kafka's pendingJoinMembers) */
	int32_t npending;
} grp_group;

/* One partition of __consumer_offsets as the coordinator sees it:
 * neither flag (not served: NOT_COORDINATOR), loading (led here, its
 * groups being read: COORDINATOR_LOAD_IN_PROGRESS) or loaded (served). */
typedef struct grp_partition {
	bool loaded;            /* led here and its groups in memory */
	bool loading;           /* led here, store.c reading its log */
	struct brk_partition *p; /* while loading or loaded */
	int32_t leader_epoch;   /* the leader epoch it is loaded at */
	brk_hw_mark last_write; /* the coordinator's last append there */
} grp_partition;

/* Default of grp_coordinator.load_slice: records applied per loop
 * iteration while loading (plus the rest of the batch at hand). About a
 * millisecond of work: other requests wait at most that long. */
#define GRP_LOAD_SLICE_RECORDS 4096

struct grp_loader; /* store.c: the partitions being loaded */

/* Append g's GroupMetadataValue (store.c's grp_store_write_group; a Kafka
 * error code). */
typedef int (*grp_write_group_fn)(grp_coordinator *gc, grp_group *g);

struct grp_coordinator {
	brk_loop *loop;            /* timers (NULL: none are set) */
	const brk_config *cfg;
	struct brk_partitions *partitions; /* set by grp_store_open (NULL: no store) */
	grp_write_group_fn write_group;    /* set by grp_store_open, or a test's */
	brk_strmap groups;         /* group id -> grp_group (strmap.h) */
	brk_strmap open_txns;      /* the groups with open transactions (grp_txn_track) */
	bool open_txns_lost;       /* the index missed a group (no memory): every
				    * group is visited instead */
	int32_t npartitions;       /* __consumer_offsets' partitions, 0 while unknown */
	grp_partition *parts;      /* npartitions */
	int32_t nloading;          /* partitions loading */
	int32_t load_slice;        /* records per slice of a load (GRP_LOAD_SLICE_RECORDS) */
	/* store.c: the loads in progress, and what frees them (called first
	 * by grp_coordinator_free) */
	struct grp_loader *loader;
	void (*store_close)(grp_coordinator *gc);
	/* Called when the last queued load ended (txn/store.c waits for the
	 * groups before its start-up check of orphan transactional offsets). */
	void (*loads_done)(void *arg);
	void *loads_done_arg;
	/* store.c: batch and key/value buffers, the offset expiry timer */
	proto_writer batch_buf, kv_buf;
	uint64_t expiry_timer;
	bool observing;            /* store.c's observers are registered */
};

/* An empty coordinator whose timers run on loop (may be NULL) with cfg
 * (borrowed: group.max.size, group.initial.rebalance.delay.ms, offsets
 * settings). No store: grp_store_open attaches it. */
void grp_coordinator_init(grp_coordinator *gc, brk_loop *loop, const brk_config *cfg);
/* Free every group (members' waiting requests answered
 * COORDINATOR_NOT_AVAILABLE), the partition states, buffers and timers. */
void grp_coordinator_free(grp_coordinator *gc);

/* __consumer_offsets has npartitions partitions (0: it does not exist):
 * the partition states grow to that, and groups made while it was unknown
 * get their partition. Returns 0 or -ENOMEM. */
int grp_partitions_known(grp_coordinator *gc, int32_t npartitions);
/* The partition of group id (a view, len bytes), -1 while unknown. */
int32_t grp_partition_of(const grp_coordinator *gc, const char *id, int32_t len);
/* The state of partition index, NULL when out of range. */
grp_partition *grp_partition_state(grp_coordinator *gc, int32_t index);

/*
 * Whether this coordinator serves group id: NONE when its partition is
 * loaded here or __consumer_offsets is not known (npartitions 0),
 * COORDINATOR_LOAD_IN_PROGRESS while its partition is loading here (the
 * client retries), else NOT_COORDINATOR. Handlers check it after the
 * group id's own checks (Kafka: INVALID_GROUP_ID first) and before they
 * look the group up (the registry holds the groups of a loading partition
 * already, half restored); grp_join, grp_sync and grp_heartbeat check it
 * themselves.
 */
int16_t grp_coordinator_error(const grp_coordinator *gc, const char *id, int32_t len);

/* Partition index starts loading: p (its leader here) at leader_epoch;
 * its groups answer COORDINATOR_LOAD_IN_PROGRESS until
 * grp_partition_loaded or grp_partition_unload. */
void grp_partition_loading(grp_coordinator *gc, int32_t index, struct brk_partition *p,
			   int32_t leader_epoch);
/* Partition index is loaded: p (its leader here) at leader_epoch. The
 * groups restored from its log are in the registry already. The log end
 * offset then becomes the partition's last write (what was loaded may be
 * above the high watermark). */
void grp_partition_loaded(grp_coordinator *gc, int32_t index, struct brk_partition *p,
			  int32_t leader_epoch);
/* Drop partition index: every group in it is removed (members' waiting
 * JoinGroup / SyncGroup answered NOT_COORDINATOR, timers cancelled) and the
 * partition is no longer served nor loading (store.c stops its load
 * first). Returns the number of groups dropped. */
int32_t grp_partition_unload(grp_coordinator *gc, int32_t index);

/*
 * The answer in req->out follows (or may follow) a write to partition
 * index (-1: none): it goes once the coordinator's last write there is
 * committed (hw_wait.h's brk_hw_answer with GRP_WRITE_TIMEOUT_MS and
 * COORDINATOR_NOT_AVAILABLE; fail re-encodes it with an error). Returns
 * what the handler returns.
 */
int grp_answer(grp_coordinator *gc, brk_request *req, int32_t index, brk_hw_fail_fn fail,
	       void *arg);

/* Find a group by id (a view, len bytes); NULL when unknown. O(1). */
grp_group *grp_find(grp_coordinator *gc, const char *group_id, int32_t len);
/* Find or create an Empty group with no members (in the partition its id
 * maps to; the caller checked grp_coordinator_error). NULL on allocation
 * failure. */
grp_group *grp_get_or_create(grp_coordinator *gc, const char *group_id, int32_t len);
/* Iterate every group: i from 0 while it returns non-NULL. Removing a
 * group moves the last one into its index: remove while iterating from
 * grp_count - 1 down. */
grp_group *grp_at(grp_coordinator *gc, int32_t i);
/* The number of groups in the registry. */
int32_t grp_count(const grp_coordinator *gc);
/* Remove a group (members' waiting requests are answered with
 * COORDINATOR_NOT_AVAILABLE) and free it. */
void grp_remove(grp_group *g);

/* A member of g by member id, or NULL. A hash lookup: a heartbeat or a
 * commit costs the same in a group of 5,000 members as of 5. */
grp_member *grp_member_find(grp_group *g, const char *member_id, int32_t len);

/*
 * Check an offset commit against the group (Kafka's
 * GroupMetadataManager/ClassicGroup.validateOffsetCommit): generation -1 with
 * an empty member id is a "simple" commit, allowed only when the group has no
 * members; otherwise the member must exist (UNKNOWN_MEMBER_ID), the
 * generation must match (ILLEGAL_GENERATION), a static member's instance id
 * must match (FENCED_INSTANCE_ID), and a group that is rebalancing answers
 * REBALANCE_IN_PROGRESS. A valid commit from a member of a Stable group
 * also reschedules its session timer, as a heartbeat (Kafka does the same).
 * Returns a Kafka error code.
 */
int grp_validate_commit(grp_group *g, proto_str member_id, int32_t generation_id,
			proto_str group_instance_id);

/*
 * Check a transactional offset commit (TxnOffsetCommit) against the group
 * (Kafka's ClassicGroup.validateOffsetCommit with isTransactional): Dead is
 * COORDINATOR_NOT_AVAILABLE; generation -1 on an Empty group is accepted;
 * when a generation, member id or group instance id is given (v3+,
 * KIP-447) the member must exist (UNKNOWN_MEMBER_ID), a static member's
 * instance id must map to it (FENCED_INSTANCE_ID) and the generation must
 * match (ILLEGAL_GENERATION); without them the commit is accepted even when
 * the group has members, and the group's state (rebalancing) is not
 * checked. Unlike grp_validate_commit it does not count as a heartbeat.
 * Returns a Kafka error code.
 */
int grp_validate_txn_commit(grp_group *g, proto_str member_id, int32_t generation_id,
			    proto_str group_instance_id);

/*
 * The transaction of producer_id ended: its end transaction marker was
 * written to partition offsets_partition of __consumer_offsets
 * (store.c's marker observer calls this after the marker; nothing happens
 * while that partition is loading: the load reads the marker from the log
 * and applies it). In every
 * group with an open transaction of producer_id in that partition, the
 * pending transactional offsets are applied to the committed ones (commit;
 * a plain commit written after the transactional one keeps its value) or
 * dropped (abort). Kafka's GroupCoordinator.onTransactionCompleted /
 * OffsetMetadataManager.replayEndTransactionMarker. A producer without
 * pending offsets there is ignored.
 */
void grp_txn_completed(grp_coordinator *gc, int32_t offsets_partition, int64_t producer_id,
		       bool commit);

/* g's pending transactional offsets may have opened or closed a
 * transaction (grp_txn_put / grp_txn_complete on g->txns, or g->txns
 * replaced): keep the coordinator's index of groups with open
 * transactions in step, so that grp_txn_completed visits those groups
 * only, not every group (Kafka's OffsetMetadataManager
 * .openTransactionsByProducer). */
void grp_txn_track(grp_group *g);
/* Iterate the groups with open transactions (every group once the index
 * missed one): i from grp_txn_group_count - 1 down to 0 (grp_txn_track
 * may remove the group at i). */
grp_group *grp_txn_group_at(grp_coordinator *gc, int32_t i);
int32_t grp_txn_group_count(const grp_coordinator *gc);

/* Members: allocate a zeroed member (NULL on failure), free one with every
 * string it owns (not its pending requests), add one to a group (indexed
 * by member id and group instance id: 0, -EEXIST when g has a member with
 * that member id or group instance id, or -ENOMEM). */
grp_member *grp_member_new(void);
void grp_member_free(grp_member *m);
int grp_member_add(grp_group *g, grp_member *m);

/*
 * Membership operations (Kafka's GroupMetadataManager classic paths), called
 * by the handlers after their request-level checks (non-empty group id,
 * session timeout bounds). Each writes its response into req->out.
 */

/* JoinGroup (v0-9) for a decoded request m (m->rebalance_timeout_ms already
 * set to the session timeout for v0). NOT_COORDINATOR for a group this
 * coordinator does not serve. Returns BRK_RESPOND when the answer is in
 * req->out, or BRK_DELAYED when the request waits for the rebalance or for
 * its write to be committed (completed later with brk_request_complete;
 * req->cancel detaches it if the connection closes, the member stays).
 * Every answer, also one completed by another member's request, waits
 * until the coordinator's last write to the group's partition is committed
 * (grp_answer). */
int grp_join(grp_coordinator *gc, brk_request *req, const JoinGroupRequest *m);

/* SyncGroup (v0-5): BRK_RESPOND, or BRK_DELAYED while a follower waits for
 * the leader's assignment in CompletingRebalance (or the answer for its
 * write, as grp_join). NOT_COORDINATOR as grp_join. */
int grp_sync(grp_coordinator *gc, brk_request *req, const SyncGroupRequest *m);

/* Heartbeat: resets the member's session timer; returns a Kafka error code
 * (NOT_COORDINATOR, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
 * ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS while PreparingRebalance, or
 * NONE). Nothing is written: the answer does not wait. */
int16_t grp_heartbeat(grp_coordinator *gc, proto_str group_id, proto_str member_id,
		      int32_t generation_id, proto_str group_instance_id);

/* LeaveGroup of one member of g (Kafka's classicGroupLeave loop body): a
 * pending member, a member by id, or (empty member id) a static member by
 * instance id. Returns the member's Kafka error code. Call grp_leave_done
 * once after the batch. */
int16_t grp_leave_member(grp_group *g, proto_str member_id, proto_str group_instance_id);
/* After a LeaveGroup batch that removed at least one member: rebalance or
 * complete the join phase (may free nothing: g stays valid). */
void grp_leave_done(grp_group *g);

/* The protocol every member supports with the most votes, each member
 * voting for its most preferred candidate (Kafka's ClassicGroup
 * .selectProtocol); NULL when the group has no member or no common
 * protocol. A view into a member's protocol name. */
const char *grp_select_protocol(const grp_group *g);

/* After store.c loaded a group (state, generation, protocol, leader,
 * members) from its partition: start its members' session timers, as Kafka
 * does for loaded groups, so members that never come back expire. */
void grp_restored(grp_group *g);

#endif
