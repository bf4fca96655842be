/*
 * ctl.h - the controller: cluster metadata (brokers, topics, topic ids,
 * partition assignments, leader, leader epoch, ISR) behind one interface
 * with two back ends (DESIGN.md decision 7):
 *
 *   local      zookeeper.connect unset: this broker is the whole cluster, the
 *              only replica and leader of every partition; metadata in the
 *              file <log.dir>/__samsa_metadata (controller/local.c);
 *   zookeeper  Kafka's ZooKeeper mode (CLUSTER.md): registration, the
 *              elected controller, topic and partition znodes.
 *
 * Threads. A ctl owns one thread, the controller thread, where everything
 * that may block runs (metadata file writes and fsyncs, ZooKeeper calls).
 * The broker's event loop talks to it two ways, never waiting on it:
 *  - operations: ctl_submit() copies an operation into the controller's
 *    queue and returns its id at once;
 *  - events: the controller thread queues events (metadata that changed,
 *    results of operations) and calls the wakeup function given at open;
 *    the loop takes them in order with ctl_next_event() and frees each with
 *    ctl_event_free().
 * An event is a complete copy: nothing in it points into the controller, so
 * a leadership change never frees something the broker holds (DESIGN.md
 * decision 10). The events an operation causes (a new topic, its partition
 * states) come before its result when the back end can know them (the
 * local back end always; ZooKeeper's watches may come later).
 *
 * Errors are Kafka error codes (protocol/err.h), >= 0; functions returning
 * int and documented "0 or -errno" use negative errno values.
 */
#ifndef SAMSA_CONTROLLER_CTL_H
#define SAMSA_CONTROLLER_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/acl.h"
#include "controller/meta.h"

typedef struct ctl ctl;

typedef struct ctl_options {
	const char *log_dir;           /* local back end: the metadata file's directory */
	int32_t broker_id;
	const char *zookeeper_connect; /* NULL or "": the local back end; else
					* "host:port[,host:port...][/chroot]" */
	ctl_broker self;               /* this broker's registration (id, host, port,
					* rack: "" when broker.rack is unset) */
	/* ZooKeeper back end only (the local one ignores them): */
	int32_t zookeeper_session_timeout_ms;    /* zookeeper.session.timeout.ms; <= 0:
						  * Kafka's default, 18000 */
	int32_t zookeeper_connection_timeout_ms; /* zookeeper.connection.timeout.ms: how
						  * long ctl_open waits for a session;
						  * <= 0: the session timeout */
	bool unclean_leader_election_enable;     /* the broker's default for topics
						  * without an override (and without a
						  * dynamic broker config): Kafka's false */
	/* Preferred-leader rebalance (CLUSTER.md 2.7; read-only broker configs
	 * in Kafka, as here). Zero-initialised options turn it off; the broker
	 * passes its config, whose default is Kafka's (on, 300 s, 10 %). */
	bool auto_leader_rebalance_enable;       /* auto.leader.rebalance.enable */
	int64_t leader_imbalance_check_interval_seconds; /* how often the controller
						  * checks; <= 0: Kafka's 300 */
	int32_t leader_imbalance_per_broker_percentage;  /* a broker whose share of
						  * preferred partitions led by
						  * others exceeds this gets them
						  * back; < 0: Kafka's 10 */
	/* Called on the controller thread whenever events were queued: must
	 * only wake the loop (write an eventfd), never call into ctl. */
	void (*wakeup)(void *arg);
	void *wakeup_arg;
} ctl_options;

/*
 * Open the back end and start the controller thread. Returns when the
 * initial metadata is known and its events are queued: live brokers, the
 * controller, the dynamic broker configs and every topic with its partition
 * states, so the broker can open its logs before serving. Returns 0 or
 * -errno (-EINVAL when the metadata file does not parse).
 *
 * ZooKeeper back end: connects (within the connection timeout), creates
 * Kafka's persistent paths and /cluster/id when missing, and registers this
 * broker (/brokers/ids/<id>, ephemeral; its czxid is the broker epoch).
 * When the id is registered by another session (a restart faster than the
 * old session's expiry, CLUSTER.md 4.10) it tries again until that session
 * expires, for at most the session timeout and a margin (-EEXIST after
 * that). Then it reads everything with watches, queues the events and takes
 * part in the controller election. Other failures: -ETIMEDOUT (no session
 * in time), -EINVAL (a malformed connect string), -EIO, -ENOMEM.
 */
int ctl_open(const ctl_options *o, ctl **out);

/* Stop the thread (the operation in progress finishes, queued ones are
 * dropped) and free everything, undelivered events included. NULL is a
 * no-op. */
void ctl_close(ctl *c);

/* ---- operations ---- */

typedef enum ctl_op_type {
	CTL_OP_CREATE_TOPIC,      /* topic, partitions, replication_factor or assignments, configs */
	CTL_OP_DELETE_TOPIC,      /* topic */
	CTL_OP_CREATE_PARTITIONS, /* topic, partitions (the new total), assignments (of the new ones) */
	CTL_OP_SET_TOPIC_CONFIGS, /* topic, configs (the whole set of overrides) */
	CTL_OP_SET_BROKER_CONFIGS,/* broker_id (or CTL_BROKER_DEFAULT), configs (the whole set) */
	CTL_OP_PRODUCER_IDS,      /* a block of producer ids (KIP-98, Kafka's ProducerIdManager) */
	CTL_OP_ALTER_ISR,         /* topic, partition, leader_epoch, isr, partition_epoch: a
				   * leader's ISR change (CLUSTER.md 2.10 path 1, S2) */
	CTL_OP_CONTROLLED_SHUTDOWN, /* broker_id, broker_epoch: move leadership away from a
				   * broker that is stopping (CLUSTER.md 2.6) */
	CTL_OP_ALTER_REASSIGNMENT, /* topic, partition, assignments: one list, the target
				   * replicas, or NULL to cancel; no_rf_change (KIP-455) */
	CTL_OP_LIST_REASSIGNMENTS, /* nothing: whether this broker is the controller; its
				   * events come first, so the broker's registry then shows
				   * the reassignments in progress (KIP-455) */
	CTL_OP_ELECT_LEADER,      /* topic, partition, election_type: a preferred or unclean
				   * election (ElectLeaders, KIP-460; CLUSTER.md 2.7) */
	CTL_OP_UPDATE_ACLS,       /* acl_type, acl_pattern, acl_name, acl_add, acl_remove:
				   * one resource pattern's ACLs (CreateAcls, DeleteAcls) */
	CTL_OP_SET_CLIENT_CONFIGS,/* entity, configs (the whole set), conditional,
				   * expected_version: one client entity's configs
				   * (quotas, SCRAM credentials; below) */
} ctl_op_type;

typedef struct ctl_op {
	ctl_op_type type;
	char topic[CTL_TOPIC_NAME_MAX + 1];
	int32_t partitions;
	int16_t replication_factor;
	const ctl_replica_list *assignments; /* NULL: automatic placement */
	int32_t nassignments;
	const ctl_config_entry *configs;
	int32_t nconfigs;
	bool validate_only;
	int32_t broker_id;
	uint8_t topic_id[16];                /* CREATE_TOPIC: the new topic's id (all zero:
					      * a random one) */
	int64_t broker_epoch;                /* CONTROLLED_SHUTDOWN */
	int32_t partition;                   /* ALTER_ISR */
	int32_t leader_epoch;                /* ALTER_ISR: the leader's epoch */
	int32_t partition_epoch;             /* ALTER_ISR: the state version it read */
	const int32_t *isr;                  /* ALTER_ISR: the new ISR */
	int32_t nisr;
	bool no_rf_change;                   /* ALTER_REASSIGNMENT: refuse a target whose
					      * size differs from the original replica
					      * count (KIP-860) */
	int8_t election_type;                /* ELECT_LEADER: CTL_ELECTION_PREFERRED (0) or
					      * CTL_ELECTION_UNCLEAN (1), elect.h */
	int8_t acl_type;                     /* UPDATE_ACLS: CTL_ACL_RES_* */
	int8_t acl_pattern;                  /* UPDATE_ACLS: LITERAL or PREFIXED */
	const char *acl_name;                /* UPDATE_ACLS: the pattern's name */
	const ctl_acl_entry *acl_add;        /* UPDATE_ACLS: entries to add */
	int32_t nacl_add;
	const ctl_acl_entry *acl_remove;     /* UPDATE_ACLS: entries to remove */
	int32_t nacl_remove;
	const char *entity;                  /* SET_CLIENT_CONFIGS: the entity path
					      * (controller/entity.h), copied */
	bool conditional;                    /* SET_CLIENT_CONFIGS: only when the entity's
					      * version is expected_version */
	int32_t expected_version;            /* SET_CLIENT_CONFIGS: the version of the
					      * CTL_EV_CLIENT_CONFIGS last seen, -1 for
					      * "has no configs (absent)" */
} ctl_op;

/*
 * Queue an operation (deep-copied: op may be freed on return). Returns its
 * id (> 0), which the CTL_EV_RESULT event of the operation carries, or 0
 * when out of memory (nothing queued).
 *
 * The rules, checked on the controller thread against its metadata:
 *  - CREATE_TOPIC: name rules and collisions (INVALID_TOPIC_EXCEPTION),
 *    TOPIC_ALREADY_EXISTS, partitions >= 1 (INVALID_PARTITIONS), a
 *    replication factor between 1 and the live brokers
 *    (INVALID_REPLICATION_FACTOR), assignments naming live brokers
 *    (INVALID_REPLICA_ASSIGNMENT); the new topic's partitions start with the
 *    first live replica as leader, the live replicas as ISR, epoch 0. The
 *    result carries the topic id.
 *  - DELETE_TOPIC: UNKNOWN_TOPIC_OR_PARTITION when absent.
 *  - CREATE_PARTITIONS: Kafka's ReplicationControlManager.createPartitions
 *    rules and messages (INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT,
 *    INVALID_REPLICATION_FACTOR, UNKNOWN_TOPIC_OR_PARTITION).
 *  - SET_TOPIC_CONFIGS: UNKNOWN_TOPIC_OR_PARTITION; values are not checked
 *    here (the broker checks them).
 *  - PRODUCER_IDS: a block of CTL_PRODUCER_ID_BLOCK ids, never handed out
 *    before, also across restarts and kill -9; UNKNOWN_SERVER_ERROR when
 *    the id space is exhausted.
 *  - ALTER_ISR: write the partition's state with the new ISR (same leader
 *    and leader epoch), conditional on partition_epoch (Kafka's
 *    ZkAlterPartitionManager, CLUSTER.md 2.10 path 1): the result carries
 *    the new partition epoch; FENCED_LEADER_EPOCH when the state has
 *    another leader epoch, INVALID_UPDATE_VERSION when its version moved
 *    (someone else changed it: a new state event follows), INELIGIBLE_REPLICA
 *    for a member that is not a live broker (KIP-841), UNKNOWN_TOPIC_OR_PARTITION.
 *    The local back end answers INVALID_REQUEST (one replica: no ISR change).
 *  - CONTROLLED_SHUTDOWN: on the controller only (else NOT_CONTROLLER);
 *    BROKER_NOT_AVAILABLE for a broker that is not registered,
 *    STALE_BROKER_EPOCH for another registration of it (an epoch of -1,
 *    from request versions without one, is accepted as Kafka does); else
 *    the leadership of every partition with more than one replica it leads
 *    moves to another ISR member that is not shutting down, and it leaves
 *    the ISR of the others (Kafka's KafkaController.doControlledShutdown);
 *    it is not elected again while that registration lasts. The result
 *    counts the partitions with more than one replica it still leads (no
 *    other ISR member could take them; a single replica cannot move, as in
 *    Kafka). The local back end answers NONE with none remaining.
 *  - ALTER_REASSIGNMENT (CLUSTER.md 2.8; Kafka's ZooKeeper-mode
 *    KafkaController.processApiPartitionReassignment): on the controller
 *    only (else NOT_CONTROLLER). A target list that is empty, repeats or
 *    has a negative id, or adds a broker that is not live (or in
 *    controlled shutdown): INVALID_REPLICA_ASSIGNMENT; with no_rf_change
 *    a target whose size is not the original replica count:
 *    INVALID_REPLICATION_FACTOR; an unknown partition or a topic marked
 *    for deletion: UNKNOWN_TOPIC_OR_PARTITION; a cancellation (no list)
 *    of a partition not being reassigned: NO_REASSIGNMENT_IN_PROGRESS.
 *    Else the reassignment starts (a target whose replicas are all in the
 *    ISR completes at once) and the result comes once it is recorded; it
 *    completes later, when the target replicas are in the ISR. A
 *    cancellation reverts the partition to its original replicas.
 *    The local back end (one broker): a target of this broker alone is
 *    NONE and changes nothing, the rules above otherwise.
 *  - LIST_REASSIGNMENTS: NOT_CONTROLLER on another broker, else NONE.
 *  - ELECT_LEADER: on the controller only (else NOT_CONTROLLER), Kafka's
 *    ZooKeeper-mode rules for one partition (KafkaController.
 *    processReplicaLeaderElection): UNKNOWN_TOPIC_OR_PARTITION,
 *    INVALID_TOPIC_EXCEPTION while the topic is being deleted,
 *    ELECTION_NOT_NEEDED when the preferred replica leads (PREFERRED) or an
 *    online broker does (UNCLEAN); else PREFERRED makes the preferred
 *    replica leader when it is online and in the ISR (ISR kept), else
 *    PREFERRED_LEADER_NOT_AVAILABLE; UNCLEAN elects the first online ISR
 *    member, failing that the first online replica (ISR [it]; what it had
 *    not replicated is lost), else ELIGIBLE_LEADERS_NOT_AVAILABLE. The
 *    state's event precedes the result; msg has Kafka's message. Another
 *    type: INVALID_REQUEST. The local back end answers ELECTION_NOT_NEEDED
 *    for a partition that exists (its one replica leads).
 *  - UPDATE_ACLS: the pattern's entries become (current + add) - remove
 *    (Kafka's AclAuthorizer updateResourceAcls): stored (the local
 *    metadata file; in ZooKeeper Kafka's /kafka-acl znode of the pattern,
 *    written conditionally on the version read and retried, then a change
 *    notification, controller/acl.h) and told as CTL_EV_ACLS before the
 *    result; nothing changes when the update changes nothing.
 *    INVALID_REQUEST for a type or pattern type that is not stored.
 *  - SET_CLIENT_CONFIGS: see "Client entity configs" below.
 * With validate_only only the checks run. A change that cannot be made
 * durable (file write, ZooKeeper) is KAFKA_STORAGE_ERROR (local) or
 * the error ZooKeeper's failure maps to (REQUEST_TIMED_OUT when the
 * connection or session was lost: retriable; UNKNOWN_SERVER_ERROR else).
 *
 * ZooKeeper back end: any broker runs these (CONTROLLED_SHUTDOWN excepted)
 * by writing Kafka's znodes; the elected controller reacts through its
 * watches. CREATE_TOPIC's result comes once the topic znode is written: the
 * topic's event (states absent: leader -1, leader epoch -1) precedes it,
 * and the partition states follow as CTL_EV_PARTITION events (before the
 * result when this broker is the controller). DELETE_TOPIC's result comes
 * once the topic is marked for deletion (/admin/delete_topics/<t>): every
 * broker gets CTL_EV_TOPIC_DELETED then (its own before the result), and
 * CREATE_TOPIC of the name is TOPIC_ALREADY_EXISTS ("marked for
 * deletion") until the controller has removed its znodes, which waits
 * until every broker holding a replica of it is registered and no
 * reassignment of it runs (CLUSTER.md 2.9).
 * CREATE_PARTITIONS and the config operations report their own broker's
 * events before the result, the other brokers' follow their watches.
 */
uint64_t ctl_submit(ctl *c, const ctl_op *op);

/*
 * Client entity configs (Kafka's /config/users, /config/clients,
 * /config/ips; controller/entity.h names the entities and builds their
 * paths). One entity's configs are a free-form map of string keys to
 * string values: the quota keys (producer_byte_rate, consumer_byte_rate,
 * request_percentage, connection_creation_rate) and the SCRAM credentials
 * ("SCRAM-SHA-256" -> "salt=...,stored_key=...,server_key=...,iterations=N",
 * Kafka's ScramCredentialUtils format) share a user's map, as in Kafka. The
 * controller checks no key and no value: the broker validates what it
 * writes.
 *
 * Reading: every broker gets CTL_EV_CLIENT_CONFIGS for every entity with
 * configs at start (after CTL_EV_BROKER_CONFIGS, before the topics) and
 * whenever one changes, from any broker (ZooKeeper: the config change
 * notices, as Kafka's brokers read them). The event carries the entity's
 * whole map and its version; nconfigs 0 with version -1: the entity is
 * gone. broker/client_config.h keeps them on the loop.
 *
 * Writing: CTL_OP_SET_CLIENT_CONFIGS with entity (a path that
 * ctl_entity_parse accepts, else INVALID_REQUEST) and configs, the whole
 * new map (a name given twice: INVALID_CONFIG); an empty map removes the
 * entity (ZooKeeper: its znode, and parents left empty, as Kafka's
 * AdminZkClient.tryCleanQuotaNodes; a znode with children keeps "{}").
 * To change some keys, take the map of the last event, change it and
 * write it back with conditional = true and expected_version = that
 * event's version (-1 when the entity had none): when another write came
 * first the result is INVALID_UPDATE_VERSION, nothing is written, and the
 * entity's current event precedes the result, so the caller can redo its
 * change on the map it now has and submit again. conditional = false
 * writes whatever is there (Kafka's own writes are unconditional).
 * validate_only checks the entity path only. On success the entity's event
 * precedes the result on this broker (others follow the notice) and
 * result.config_version is the new version (-1: removed). ZooKeeper:
 * /config/<entity path> = {"version":1,"config":{...}} and a notice
 * /config/changes/config_change_<seq> = {"version":2,"entity_path":"<entity
 * path>"}, as Kafka 3.x writes them, so Kafka's kafka-configs.sh and
 * brokers read what Samsa writes and the other way round. Local back end:
 * the metadata file keeps them (client-config lines), across restarts.
 *
 * Example (a SCRAM credential for alice, keeping her other keys):
 *   char path[CTL_ENTITY_PATH_MAX + 1];
 *   ctl_entity_path(path, sizeof(path), CTL_ENTITY_USER, "alice", 5, NULL, 0);
 *   const brk_client_config *cur = brk_client_config_get(&cl->client_configs, path);
 *   ... copy cur's entries (none when NULL), set "SCRAM-SHA-256" ...
 *   ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = path,
 *                 .configs = e, .nconfigs = n, .conditional = true,
 *                 .expected_version = cur ? cur->version : -1 };
 *   brk_ctl_call(cl, &op, done, arg);   (INVALID_UPDATE_VERSION: redo)
 */

/* Producer ids are handed out in blocks of this many. */
#define CTL_PRODUCER_ID_BLOCK 1000

/* ---- events ---- */

typedef enum ctl_event_type {
	CTL_EV_BROKERS,        /* the live brokers, all of them */
	CTL_EV_CONTROLLER,     /* the active controller changed */
	CTL_EV_TOPIC,          /* a topic was created or changed (partitions, configs) */
	CTL_EV_TOPIC_DELETED,  /* a topic is gone (deleted or marked for deletion; also
				* for a topic never reported, deleted while this
				* broker was away: its local data goes) */
	CTL_EV_PARTITION,      /* a partition's state (leader, epoch, ISR) changed */
	CTL_EV_BROKER_CONFIGS, /* the dynamic configs of one broker (or the default) */
	CTL_EV_CLIENT_CONFIGS, /* the configs of one client entity (ctl_submit, above) */
	CTL_EV_RESULT,         /* an operation completed */
	CTL_EV_ACLS,           /* one resource pattern's ACLs, all of them (none: it has
				* no ACLs any more); at start every pattern's */
} ctl_event_type;

typedef struct ctl_result {
	uint64_t id;               /* ctl_submit's id */
	ctl_op_type type;
	int16_t error;             /* Kafka error code */
	char msg[640];             /* Kafka's error message, "" when none */
	uint8_t topic_id[16];      /* CREATE_TOPIC */
	int64_t producer_id_start; /* PRODUCER_IDS: [start, end) */
	int64_t producer_id_end;
	int32_t partition_epoch;   /* ALTER_ISR: the state's new version */
	int32_t remaining;         /* CONTROLLED_SHUTDOWN: partitions it still leads */
	int32_t config_version;    /* SET_CLIENT_CONFIGS: the entity's new version, -1
				    * when removed */
} ctl_result;

typedef struct ctl_event {
	ctl_event_type type;
	struct ctl_event *next; /* the queue's (internal) */
	union {
		struct {
			ctl_broker *v; /* owned by the event */
			int32_t n;
		} brokers;
		struct {
			int32_t id;    /* -1 when none */
			int32_t epoch; /* controller epoch */
		} controller;
		ctl_topic *topic;      /* TOPIC: the whole topic, partition states included;
					* owned by the event (set it NULL to keep it).
					* ZooKeeper: a partition whose state the
					* controller has not made yet has leader
					* CTL_NO_LEADER, leader epoch -1, partition
					* epoch -1 and an empty ISR */
		struct {
			char name[CTL_TOPIC_NAME_MAX + 1];
			uint8_t id[16];
		} deleted;
		struct {
			char topic[CTL_TOPIC_NAME_MAX + 1];
			uint8_t topic_id[16];
			ctl_partition state; /* owned arrays */
		} partition;
		struct {
			int32_t broker_id; /* or CTL_BROKER_DEFAULT */
			ctl_config_entry *configs; /* owned */
			int32_t nconfigs;
		} broker_configs;
		struct {
			char *entity;              /* owned: the entity path (entity.h) */
			ctl_config_entry *configs; /* owned, the whole map */
			int32_t nconfigs;
			int32_t version;           /* -1: the entity is gone */
		} client_configs;
		ctl_result result;
		ctl_acl_resource acls; /* owned by the event (clear it to keep its parts) */
	} u;
} ctl_event;

/* The cluster id the back end keeps (ZooKeeper's /cluster/id, created by
 * the first broker), or "" for the local back end (the log dir's
 * meta.properties is the truth then). Valid while c is open. */
const char *ctl_cluster_id(const ctl *c);

/* The next event, in order, or NULL when none is queued. Loop thread. */
ctl_event *ctl_next_event(ctl *c);
void ctl_event_free(ctl_event *e);

/*
 * Wait up to timeout_ms for an event to be queued (for tests and tools
 * that have no loop). Returns true when one is queued.
 */
bool ctl_wait_event(ctl *c, int64_t timeout_ms);

#endif
