/*
 * zk_backend.h - the ZooKeeper back end of the controller (Kafka's
 * ZooKeeper mode, CLUSTER.md sections 1, 2 and 6), private to controller/.
 * Its parts, one concern per file, share the state below:
 *
 *   zk_backend.c     start and stop, the registration of this broker, the
 *                    session (expiry: a new session, registration and a
 *                    full re-read), watch triggers handed to the controller
 *                    thread, and the dispatch of operations;
 *   zk_view.c        what every broker reads and watches (CLUSTER.md 6.3
 *                    S1): live brokers, the controller, topics with their
 *                    partition states, topic and broker configs and their
 *                    change notices, kept in z->brokers and z->meta, and
 *                    the events emitted when they change;
 *   zk_ops.c         the operations any broker runs (ctl.h): CreateTopics,
 *                    DeleteTopics, CreatePartitions, configs, producer id
 *                    blocks, a leader's ISR change;
 *   zk_controller.c  the election, fencing, and the controller's work:
 *                    partition states of new partitions, leader elections
 *                    on broker failure and startup, topic deletion,
 *                    controlled shutdown;
 *   zk_reassign.c    partition reassignment (KIP-455): its steps, the
 *                    AlterPartitionReassignments operation and
 *                    /admin/reassign_partitions;
 *   zk_elect.c       elections on request (ElectLeaders, preferred or
 *                    unclean; /admin/preferred_replica_election) and the
 *                    automatic preferred-leader rebalance;
 *   assign.c         replica placement (assign.h).
 *
 * Threads. Everything here runs on the controller thread (backend.h), one
 * job at a time, except zkb_on_zk_event, which ZooKeeper's completion
 * thread calls: it only records the trigger under z->mu and posts one
 * drain job (ctl_post), which re-reads what fired. Watches fire once; the
 * re-read arms them again, and several changes between two reads collapse
 * into what the read returns: the code always acts on the latest data, never
 * on the kind of trigger (CLUSTER.md 6.3 S1, item 2).
 *
 * Invariants:
 *  - every controller write is one multi whose first op checks
 *    /controller_epoch at the version this controller made it
 *    (CLUSTER.md 2.1, 6.2 item 1); BADVERSION there means another
 *    controller was elected: this one resigns at once;
 *  - every partition state write is conditional on the state's version as
 *    last read (the partition epoch); BADVERSION: re-read, decide again;
 *  - the ISR written by the controller is never empty (CLUSTER.md 2.3).
 */
#ifndef SAMSA_CONTROLLER_ZK_BACKEND_H
#define SAMSA_CONTROLLER_ZK_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/backend.h"
#include "controller/zk.h"



/* A state with no znode yet (a new partition): partition_epoch is this,
 * leader CTL_NO_LEADER, leader epoch -1, ISR empty. */
#define ZKB_NO_STATE (-1)

/* Config change notices older than this are deleted by whoever reads them
 * (Kafka's ZkNodeChangeNotificationListener: 15 minutes). */
#define ZKB_NOTICE_MAX_AGE_MS (15 * 60 * 1000)

/* A path of a topic's or partition's znode (topic names are at most 249
 * chars; the longest is .../partitions/<p>/state). */
#define ZKB_PATH_MAX 320

/* Watch triggers recorded on ZooKeeper's thread, drained on ours. */
typedef struct zkb_trigger {
	struct zkb_trigger *next;
	char path[ZKB_PATH_MAX];
} zkb_trigger;

typedef struct zkb_pending {
	bool expired;    /* the session expired */
	bool connected;  /* (re)connected after a disconnect */
	bool tick;       /* a retry is due */
	bool rebalance;  /* the preferred-leader rebalance check is due (zk_elect.c) */
	bool reread;     /* a trigger was lost (out of memory): read everything */
	zkb_trigger *paths, *tail; /* node and child watch triggers, in order */
	bool disconnected;   /* the connection is lost (told once on stderr) */
} zkb_pending;

/* The controller's own state (zk_controller.c), meaningful while active. */
typedef struct zkb_shutting {
	int32_t id;
	int64_t epoch; /* its registration when it asked */
} zkb_shutting;

typedef struct zkb_ctrl {
	bool active;
	int32_t epoch;            /* the controller epoch this controller made */
	int32_t epoch_zkversion;  /* /controller_epoch's version after that */
	ctl_broker *live;         /* the brokers as this controller last handled
				   * them (ids and epochs), sorted by id */
	int32_t nlive;
	zkb_shutting *shutting;   /* brokers in controlled shutdown */
	int32_t nshutting;
	bool retry;               /* work failed on a connection problem: redo */
} zkb_ctrl;

typedef struct zkb {
	ctl *c;
	ctl_zk *zk;
	/* options */
	ctl_broker self;          /* id, host, port, rack; epoch = our czxid */
	char *connect;
	int session_timeout_ms;
	int connection_timeout_ms;
	bool unclean_default;     /* unclean.leader.election.enable of the broker */
	bool auto_rebalance;      /* auto.leader.rebalance.enable */
	int64_t imbalance_check_ms; /* leader.imbalance.check.interval.seconds, in ms */
	int32_t imbalance_pct;    /* leader.imbalance.per.broker.percentage */
	bool registered;          /* /brokers/ids/<self> is ours in this session */

	/* triggers from ZooKeeper's thread */
	pthread_mutex_t mu;
	zkb_pending pending;
	bool drain_posted;

	/* the retry timer: a thread that posts a tick when retry_at passes */
	pthread_t timer;
	bool timer_started;
	pthread_cond_t timer_cv;  /* CLOCK_MONOTONIC */
	int64_t retry_at;         /* monotonic ms, 0 none */
	int64_t rebalance_at;     /* the next rebalance check, monotonic ms, 0 none */
	bool timer_stop;

	/* the view (zk_view.c) */
	ctl_broker *brokers;      /* live brokers, sorted by id */
	int32_t nbrokers;
	ctl_meta meta;            /* topics with assignment, states and overrides
				   * (partition_epoch ZKB_NO_STATE: no state znode),
				   * and the dynamic broker configs */
	int32_t controller_id;    /* as last emitted; -1 none */
	int32_t controller_epoch;
	bool controller_known;    /* one CTL_EV_CONTROLLER was emitted */
	int64_t last_notice;      /* highest config change sequence handled */
	ctl_acl_store acls;       /* every ACL pattern as last read (zk_acl.c) */
	int64_t last_acl_change;     /* highest /kafka-acl-changes sequence handled */
	int64_t last_acl_ext_change; /* highest /kafka-acl-extended-changes one */
	bool stale;               /* a read failed: read everything again */
	char **marked;            /* the children of /admin/delete_topics as last
				   * read (topics marked for deletion), owned */
	int32_t nmarked;
	ctl_topic *early;         /* the topics marked for deletion before this
				   * broker registered (names and ids; start only) */
	int32_t nearly;

	zkb_ctrl ctrl;
} zkb;

/* ---- zk_backend.c ---- */

/* The callback given to ctl_zk (ZooKeeper's completion thread). */
void zkb_on_zk_event(void *arg, int type, int state, const char *path);
/* Test aid: expire the session of c's back end from the server's side
 * (ctl_zk_expire_session_for_test, run on the controller thread), as a
 * pause longer than the session timeout would. Blocks until done; returns
 * a CTL_ZK_* code. */
int ctl_zk_backend_expire_session_for_test(ctl *c);
/* Ask for a tick (a retry of what failed) in ms. Any thread. */
void zkb_retry_in(zkb *z, int ms);
/* Have the rebalance check (pending.rebalance) run in ms, replacing the
 * one planned; ms < 0: none. Any thread. */
void zkb_rebalance_in(zkb *z, int64_t ms);
/* Monotonic and wall clocks, ms. */
int64_t zkb_mono_ms(void);
int64_t zkb_wall_ms(void);
/* Kafka's error for a ZooKeeper failure: REQUEST_TIMED_OUT for a lost
 * connection or session (retriable), UNKNOWN_SERVER_ERROR otherwise. */
int16_t zkb_kafka_error(int zrc);
/* true for the codes after which the same call may work later. */
bool zkb_transient(int zrc);

/* ---- zk_view.c ---- */

/* How much a refresh reads and emits. */
typedef enum zkb_read {
	ZKB_READ_NEW,      /* what is new (states of new partitions); emit changes */
	ZKB_READ_ALL,      /* everything again (a read failed before); emit changes */
	ZKB_READ_ALL_EMIT, /* everything again, emit all of it (a new session: the
			    * broker ignores what did not change) */
} zkb_read;

/* Read everything with watches (ZKB_READ_ALL or ZKB_READ_ALL_EMIT):
 * brokers, the controller, config notices, broker configs, every topic
 * with its config and states. Returns CTL_ZK_OK or the first failure (then
 * z->stale is set: the next tick or reconnect reads again). */
int zkb_view_refresh_all(zkb *z, zkb_read how);
/* The live brokers (all of them are read); *changed (optional) tells
 * whether the set or an epoch, host, port or rack changed. */
int zkb_view_refresh_brokers(zkb *z, bool emit_all, bool *changed);
/* /controller (watched) and /controller_epoch; emits CTL_EV_CONTROLLER on
 * a change. *exists tells whether /controller exists. */
int zkb_view_refresh_controller(zkb *z, bool emit_all, bool *exists);
/* The topic list (child watch): new topics read, vanished ones removed. */
int zkb_view_refresh_topic_list(zkb *z, zkb_read how);
/* One topic's znode (data watch: assignment, id), its config and the
 * states of its new partitions (all of them with ZKB_READ_ALL*). A topic
 * whose znode is gone is removed (CTL_EV_TOPIC_DELETED). */
int zkb_view_refresh_topic(zkb *z, const char *name, zkb_read how);
/* One partition's state (data watch, or an existence watch while absent). */
int zkb_view_refresh_state(zkb *z, const char *topic, int32_t partition);
/* /admin/delete_topics (child watch): the topics marked for deletion. A
 * marked topic is gone for the brokers (CTL_EV_TOPIC_DELETED when it
 * becomes marked, no other event of it while it is; Kafka's controller
 * sends UpdateMetadata without it and StopReplica with delete=true);
 * a mark taken away brings it back (CTL_EV_TOPIC). */
int zkb_view_refresh_deletions(zkb *z);
/* Whether topic name is marked for deletion (as last read). */
bool zkb_view_marked(const zkb *z, const char *name);
/* Before registering: the topics marked for deletion then, with their
 * ids (z->early), so that this broker learns of a deletion that completes
 * between its registration and its first full read (the controller waits
 * for every replica's broker to register, CLUSTER.md 2.9). */
int zkb_view_read_early_deletions(zkb *z);
/* After the first full read: CTL_EV_TOPIC_DELETED for each topic of
 * z->early that is gone (the broker then removes its local data by topic
 * id); frees z->early. */
void zkb_view_emit_early_deletions(zkb *z);
/* Free the deletion marks. */
void zkb_view_clear_deletions(zkb *z);
/* /config/topics/<t> of a known topic (after a change notice). */
int zkb_view_refresh_topic_config(zkb *z, const char *topic);
/* /config/brokers/<id> or /config/brokers/<default> (CTL_BROKER_DEFAULT). */
int zkb_view_refresh_broker_config(zkb *z, int32_t id, bool emit_all);
/* Every child of /config/brokers. */
int zkb_view_refresh_broker_configs(zkb *z, bool emit_all);
/* Read the config znode at path: a new set (*out, *n; an absent znode or
 * one with no data is an empty set, one that does not parse too, told on
 * stderr) and its stat (optional; version -1 when absent). */
int zkb_read_config(zkb *z, const char *path, ctl_config_entry **out, int32_t *n,
		    ctl_zk_stat *st);
/* New notices under /config/changes (child watch; v1 and v2), old ones
 * purged; with skip only the newest sequence is noted (everything is read
 * anyway). */
int zkb_view_process_notices(zkb *z, bool skip);
/*
 * Kafka's ZkNodeChangeNotificationListener, for any change path: list the
 * sequential children "<prefix><sequence>" of root (child watch armed), and
 * for each one above *last in sequence order read its data and give it to
 * apply(z, path, data, len, arg) (data may be NULL; a child purged
 * meanwhile is skipped), then note it in *last. With skip only the newest
 * sequence is noted. Once any was processed, children older than
 * ZKB_NOTICE_MAX_AGE_MS are deleted (every broker does, as Kafka's). Stops
 * at the first error apply or ZooKeeper gives, which it returns.
 */
int zkb_process_sequential(zkb *z, const char *root, const char *prefix, int64_t *last, bool skip,
			   int (*apply)(zkb *z, const char *path, const char *data, int len, void *arg),
			   void *arg);

/* ---- zk_acl.c ---- */

/* Read every ACL pattern (/kafka-acl, /kafka-acl-extended/prefixed) and
 * arm the watches of both change paths (their notifications so far are
 * taken as read); CTL_EV_ACLS for each pattern that changed (every one
 * with emit_all) and for each gone. */
int zkb_acl_refresh_all(zkb *z, bool emit_all);
/* A change path's children changed: the patterns its new notifications
 * name are read again (extended: /kafka-acl-extended-changes). */
int zkb_acl_on_change(zkb *z, bool extended);
/* CTL_OP_UPDATE_ACLS (ctl.h). */
int16_t zkb_acl_update(zkb *z, const ctl_op *op, ctl_result *r);

/* Set the view's state of partition p of topic t (the controller or a
 * leader wrote it) and emit CTL_EV_PARTITION. */
void zkb_view_set_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, int32_t leader_epoch,
			const int32_t *isr, int32_t nisr, int32_t controller_epoch, int32_t version);
ctl_topic *zkb_view_topic(zkb *z, const char *name);
const ctl_broker *zkb_view_broker(const zkb *z, int32_t id);
/* Paths (out has ZKB_PATH_MAX bytes). */
void zkb_topic_path(char *out, const char *topic);
void zkb_partitions_path(char *out, const char *topic);
void zkb_state_path(char *out, const char *topic, int32_t partition);
void zkb_topic_config_path(char *out, const char *topic);
/* Whether configs a[0..na) and b[0..nb) hold the same names and values. */
bool zkb_configs_equal(const ctl_config_entry *a, int32_t na, const ctl_config_entry *b,
		       int32_t nb);
/* A config value for topic t: its override, else the dynamic config of
 * this broker, else the cluster-wide dynamic default; NULL when none. */
const char *zkb_config_value(const zkb *z, const ctl_topic *t, const char *name);
/* Encode a partition state znode (v1). Returns 0 or -errno. */
int zkb_state_encode(int32_t controller_epoch, int32_t leader, int32_t leader_epoch,
		     const int32_t *isr, int32_t nisr, char **out, size_t *len);

/* ---- zk_ops.c ---- */

void zkb_run_op(zkb *z, const ctl_op *op, ctl_result *r);
/* A config change notice for type/name (v2: entity_path "type/name"). */
int zkb_write_notice(zkb *z, const char *type, const char *name);
/* Kafka's error for a failed ZooKeeper call while doing what (r->msg). */
int16_t zkb_op_failed(ctl_result *r, const char *what, int zrc);

/* ---- zk_clients.c: client entity configs (ctl.h; entity.h) ---- */

/* /config/<entity> (after a notice, or an operation): the view's copy and
 * CTL_EV_CLIENT_CONFIGS when its configs or version changed (always with
 * emit_all, when it exists). An absent znode removes it. */
int zkb_view_refresh_client_config(zkb *z, const char *entity, bool emit_all);
/* Every entity under /config/users (and their clients), /config/clients
 * and /config/ips; those of the view no longer there are removed. */
int zkb_view_refresh_client_configs(zkb *z, bool emit_all);
/* CTL_OP_SET_CLIENT_CONFIGS (ctl.h's rules). */
int16_t zkb_clients_set(zkb *z, const ctl_op *op, ctl_result *r);

/* ---- zk_controller.c ---- */

/* /controller is absent: try to become controller (CLUSTER.md 2.1). */
void zkb_ctrl_elect(zkb *z);
/* /controller names id (-1 none) now: resign when this one was active and
 * it is someone else. */
void zkb_ctrl_controller_changed(zkb *z, int32_t id);
/* Resign: forget the controller's state; delete /controller when it is
 * this session's (so that another election can happen). */
void zkb_ctrl_resign(zkb *z, const char *why);
/* The live brokers changed (z->brokers): handle failures (bounces too)
 * and startups. */
void zkb_ctrl_brokers_changed(zkb *z);
/* Bring every partition to what the rules want: states for new partitions,
 * leaders for partitions whose leader is gone, dead replicas out of ISRs. */
void zkb_ctrl_reconcile_all(zkb *z);
void zkb_ctrl_reconcile_topic(zkb *z, const char *name);
void zkb_ctrl_reconcile_partition(zkb *z, const char *name, int32_t partition);
/* /admin/delete_topics changed (or at failover). */
void zkb_ctrl_process_deletions(zkb *z);
/* CTL_OP_CONTROLLED_SHUTDOWN. */
int16_t zkb_ctrl_controlled_shutdown(zkb *z, int32_t broker_id, int64_t broker_epoch,
				     int32_t *remaining);
/* A topic znode without a topic id (written by an old tool): give it one
 * (a v3 rewrite at version, fenced). Returns a CTL_ZK_* code. */
struct ctl_zkj_topic;
int zkb_ctrl_add_topic_id(zkb *z, const char *name, const struct ctl_zkj_topic *tj,
			  int32_t version);
/* Free the controller's state (stop). */
void zkb_ctrl_clear(zkb *z);
/* For the controller's other parts (zk_reassign.c, zk_elect.c): */
/* May lead: registered and not in controlled shutdown (arg is the zkb). */
bool zkb_ctrl_online(const zkb *z, int32_t id);
/* Write partition p's state (leader, leader epoch, ISR; this controller's
 * epoch), conditional on the version last read and fenced; on success the
 * view has it and its event is queued. CTL_ZK_OK, ZKB_FENCED (this
 * controller resigned), or ZooKeeper's code (BADVERSION: read it again). */
#define ZKB_FENCED 1
int zkb_ctrl_write_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, int32_t leader_epoch,
			 const int32_t *isr, int32_t nisr);
/* ops[0..n) as one multi behind the /controller_epoch check (failed: the
 * failing op's index, -1 for the whole). CTL_ZK_OK, ZKB_FENCED (another
 * controller was elected: this one resigned), or the code; a transient
 * failure marks the controller's work for a retry (z->ctrl.retry). */
int zkb_ctrl_fenced_multi(zkb *z, ctl_zk_op *ops, int n, int *failed);

/* ---- zk_reassign.c ---- */

/* CTL_OP_ALTER_REASSIGNMENT (ctl.h's rules); a Kafka error code, r->msg. */
int16_t zkb_reasn_alter(zkb *z, const ctl_op *op, ctl_result *r);
/* CTL_OP_LIST_REASSIGNMENTS: NOT_CONTROLLER or NONE. */
int16_t zkb_reasn_list(zkb *z);
/* A partition's state (or its topic's assignment) may have changed:
 * complete its reassignment when every target replica is in the ISR. */
void zkb_reasn_check(zkb *z, const char *topic, int32_t partition);
void zkb_reasn_check_topic(zkb *z, const char *topic);
/* After a failure for want of ZooKeeper: check every reassignment, read
 * /admin/reassign_partitions again. */
void zkb_reasn_check_all(zkb *z);
/* At failover: resume the reassignments found in topic znodes (a new
 * leader epoch, or completion), then /admin/reassign_partitions. */
void zkb_reasn_resume(zkb *z);
/* /admin/reassign_partitions changed (its watch). */
void zkb_reasn_process_node(zkb *z);
/* Whether a partition of t is being reassigned (blocks its deletion). */
bool zkb_reasn_topic_busy(const ctl_topic *t);

/* ---- zk_elect.c ---- */

/*
 * An election of partition p of topic on this controller (CTL_OP_ELECT_LEADER,
 * ctl.h; type CTL_ELECTION_PREFERRED or CTL_ELECTION_UNCLEAN, elect.h).
 * Returns Kafka's error for it, msg (cap bytes, may be NULL) its message
 * ("" when none): NONE (elected), ELECTION_NOT_NEEDED,
 * PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
 * UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (being deleted),
 * INVALID_REQUEST (another type), NOT_CONTROLLER, or what a ZooKeeper
 * failure maps to (zkb_kafka_error).
 */
int16_t zkb_elect_partition(zkb *z, const char *topic, int32_t p, int8_t type, char *msg,
			    size_t cap);
/* /admin/preferred_replica_election: watch it, and when it is there run
 * its elections and delete it. */
void zkb_elect_process_znode(zkb *z);
/* This broker just became controller: the znode, and the first rebalance
 * check in 5 s (auto.leader.rebalance.enable). */
void zkb_elect_failover(zkb *z);
/* The rebalance check is due (pending.rebalance): run it (nothing while a
 * partition is being reassigned, as in Kafka), plan the next. */
void zkb_elect_rebalance(zkb *z);

#endif
