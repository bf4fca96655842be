/*
 * cluster.h - a Samsa cluster in ZooKeeper mode for black-box tests and the
 * bench: one standalone ZooKeeper (harness.h's h_zk) and N broker processes
 * (h_broker) with broker.id 1..N on free 127.0.0.1 ports, each with its own
 * log dir under the program's base dir, and zookeeper.connect naming a
 * chroot of their own ("/samsa-<pid>-<n>"), so clusters of several tests can
 * share one ZooKeeper server.
 *
 * Every broker gets CLUSTER.md 6.4's fast settings (HC_DEFAULTS below, in
 * that order), then hc_options.overrides, then its own
 * hc_options.broker_overrides[id]: a later "key=value" wins.
 *
 * Processes and dirs are harness.h's: a test that fails (check's forked
 * child exiting, or killed by check's timeout) leaves nothing running, and
 * the base dir is removed by the program's h_fini. Brokers are forked by the
 * calling thread and get PR_SET_PDEATHSIG from it: start, restart and
 * kill brokers from the thread that will outlive them (the test's main
 * thread), never from a worker thread.
 *
 * Views of the cluster: raw Metadata v7 requests to one broker (hc_metadata:
 * brokers, controller id, leader, leader epoch, replicas, ISR, offline
 * replicas) and ZooKeeper itself, read through the test's own session
 * (controller/zk.h; hc_zk_*), which is the source of truth for leadership
 * (the partition state znodes, CLUSTER.md 1.4).
 *
 * With hc_options.net (netns.h; harness B of CLUSTER.md 6.5) broker id
 * runs in the network namespace of the node named "b<id>" and listens on
 * (and advertises) that node's address, and a ZooKeeper of its own runs in
 * node "zk"; a ZooKeeper passed in o->zk must already run there. The
 * test process stays in the root namespace and reaches them over the
 * bridge: every view below works the same.
 *
 * Nothing here knows check or librdkafka; functions report failure by
 * return value and a line on stderr.
 */
#ifndef SAMSA_COMPAT_CLUSTER_H
#define SAMSA_COMPAT_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "compat-tests/harness.h"
#include "compat-tests/netns.h"
#include "controller/zk.h"

#define HC_MAX_BROKERS 8

/* The settings every broker starts with (CLUSTER.md 6.4, plus the
 * brief's): fast session expiry and ISR shrink, long-poll replica fetches,
 * internal topics replicated 3 times with fewer partitions than Kafka's 50
 * (start-up and a test's partition count stay small), one retry of a
 * controlled shutdown (the last broker of a cluster stopping has nowhere to
 * move its leaders: it gives up after 0.5 s, not 1.5 s), and no automatic
 * preferred-leader rebalance (a test that moves leaders wants them to
 * stay; a test of rebalancing turns it on). */
#define HC_DEFAULTS                                                                       \
	"zookeeper.session.timeout.ms=4000", "replica.lag.time.max.ms=3000",                 \
	    "replica.fetch.wait.max.ms=100", "group.initial.rebalance.delay.ms=0",           \
	    "offsets.topic.replication.factor=3", "offsets.topic.num.partitions=5",          \
	    "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2", \
	    "transaction.state.log.num.partitions=5", "controlled.shutdown.retry.backoff.ms=500", \
	    "controlled.shutdown.max.retries=1",                                               \
	    "replica.high.watermark.checkpoint.interval.ms=1000",                            \
	    "auto.leader.rebalance.enable=false", "leader.imbalance.check.interval.seconds=5", \
	    "default.replication.factor=3"

/* zookeeper.session.timeout.ms of HC_DEFAULTS. */
#define HC_SESSION_MS 4000
/* replica.lag.time.max.ms of HC_DEFAULTS. */
#define HC_LAG_MS 3000

typedef struct hc_options {
	int brokers;                  /* 1..HC_MAX_BROKERS; 0 means 3 */
	const char *const *overrides; /* NULL-terminated "key=value" for every broker, or NULL */
	/* per broker id (index 1..brokers), NULL-terminated, or NULL */
	const char *const *broker_overrides[HC_MAX_BROKERS + 1];
	h_zk *zk;                     /* a running server to use; NULL: start one of its own */
	hn_net *net;                  /* run in its namespaces (nodes "zk", "b1".."b<n>"); NULL:
				       * loopback */
	/* The brokers' listener speaks SASL: the harness's own requests
	 * (Metadata) authenticate with PLAIN as this user; NULL: none. */
	const char *sasl_plain_user, *sasl_plain_password;
} hc_options;

typedef struct hc_cluster {
	h_zk *zk;
	bool owns_zk;                      /* started by hc_start, freed by hc_free */
	int n;                             /* brokers, ids 1..n */
	h_broker *b[HC_MAX_BROKERS + 1];   /* by broker id; b[0] unused */
	bool paused[HC_MAX_BROKERS + 1];   /* SIGSTOPped by hc_pause */
	char chroot[64];                   /* "/samsa-<pid>-<n>" */
	char connect[128];                 /* the brokers' zookeeper.connect */
	char bootstrap[HC_MAX_BROKERS * 24]; /* "host1:p1,host2:p2,..." */
	hn_net *net;                       /* hc_options.net, NULL on loopback */
	ctl_zk *zkc;                       /* the test's session (hc_zk_*), opened on demand */
	char sasl_user[64], sasl_password[64]; /* hc_options' SASL PLAIN login, "" none */
} hc_cluster;

/*
 * Start ZooKeeper (unless o->zk) and the brokers, and wait (60 s, scaled)
 * until the cluster is formed (hc_wait_formed). o may be NULL (3 brokers,
 * defaults only). Returns 0; -1 with the reason and the logs' tails on
 * stderr, everything it started stopped again (hc_free still required).
 */
int hc_start(hc_cluster *c, const hc_options *o);

/*
 * Wait at most timeout_ms (scaled) until every running, not paused broker
 * answers Metadata listing exactly the running brokers that are not paused
 * (ids and ports) and naming the same controller, one of them. 0 or -1
 * (what was last seen on stderr).
 */
int hc_wait_formed(hc_cluster *c, int timeout_ms);

/*
 * End of a test: SIGCONT the paused, SIGTERM the brokers that are not the
 * controller, then the controller, each given timeout_ms to exit. Returns
 * the number of brokers that did not exit with status 0 (each named on
 * stderr with its log's tail); the processes are gone either way.
 */
int hc_stop(hc_cluster *c, int timeout_ms);

/* Kill whatever still runs, free the brokers (their dirs go), close the
 * ZooKeeper session, free an own ZooKeeper. Safe on a zeroed or partly
 * started cluster. */
void hc_free(hc_cluster *c);

/* ---- faults (id 1..n). Each returns 0, or -1 when not applicable (not
 * running, already paused...). ---- */

/* kill -9 and reap. */
int hc_kill(hc_cluster *c, int id);
/* SIGTERM and return at once (hc_wait_exit for the status). */
int hc_term(hc_cluster *c, int id);
/* Wait at most timeout_ms (scaled) for the exit after hc_term: its wait
 * status, -1 while still running. */
int hc_wait_exit(hc_cluster *c, int id, int timeout_ms);
/* SIGSTOP / SIGCONT. */
int hc_pause(hc_cluster *c, int id);
int hc_resume(hc_cluster *c, int id);
/* Start a stopped or killed broker again on its dir and port; waits until
 * it answers ApiVersions (not until it registered: hc_wait_registered). */
int hc_restart(hc_cluster *c, int id);
/* true while the broker's process runs (paused counts as running). */
bool hc_alive(hc_cluster *c, int id);

/* ZooKeeper stopped (SIGTERM) and started again on its port and data. */
int hc_zk_stop(hc_cluster *c);
int hc_zk_restart(hc_cluster *c);

/* ---- Metadata (raw v7 request, no client library) ---- */

typedef struct hc_md_partition {
	int32_t id;
	int16_t err;
	int32_t leader;
	int32_t leader_epoch;
	int nreplicas, nisr, noffline;
	int32_t replicas[HC_MAX_BROKERS];
	int32_t isr[HC_MAX_BROKERS];
	int32_t offline[HC_MAX_BROKERS];
} hc_md_partition;

typedef struct hc_md_topic {
	char name[256];
	int16_t err;
	bool internal;
	int npartitions;
	hc_md_partition *partitions; /* sorted by id */
} hc_md_topic;

typedef struct hc_md {
	int32_t controller_id;
	char cluster_id[64];
	int nbrokers;
	struct {
		int32_t id;
		char host[64];
		int32_t port;
	} brokers[HC_MAX_BROKERS * 2];
	int ntopics;
	hc_md_topic *topics;
} hc_md;

/*
 * Metadata v7 from broker id (topic NULL: all topics; never auto-creates).
 * 0, or -1 (not running, no answer within timeout_ms, malformed answer).
 * Free with hc_md_free.
 */
int hc_metadata(hc_cluster *c, int id, const char *topic, hc_md *md, int timeout_ms);
void hc_md_free(hc_md *md);
const hc_md_topic *hc_md_find(const hc_md *md, const char *topic);
const hc_md_partition *hc_md_part(const hc_md_topic *t, int32_t partition);

/* The controller id as Metadata of the first running, not paused broker
 * (from id 1 up) answering names it; -1 if none answers or none is named. */
int hc_controller(hc_cluster *c);

/* The leader of topic/partition as Metadata of the first answering broker
 * gives it (*leader_epoch optional); -1 if none or no leader. */
int hc_leader(hc_cluster *c, const char *topic, int32_t partition, int32_t *leader_epoch);

/* ---- ZooKeeper, through the test's own session under the chroot ----
 * A read that finds the connection lost (ZooKeeper restarting) is tried
 * again for up to 10 s (scaled); an expired session is made again. */

/* ctl_zk_get of path (relative to the chroot). *data malloc'd (caller frees,
 * NUL-terminated) or NULL for null data. CTL_ZK_* code. */
int hc_zk_get(hc_cluster *c, const char *path, char **data, int *len, ctl_zk_stat *st);
/* Children of path (free with ctl_zk_children_free). CTL_ZK_* code. */
int hc_zk_children(hc_cluster *c, const char *path, ctl_zk_children *out);
/* Exists? CTL_ZK_OK or CTL_ZK_NONODE (or a session error). */
int hc_zk_exists(hc_cluster *c, const char *path, ctl_zk_stat *st);
/* The session itself (opened on first use), NULL if it cannot be made. */
ctl_zk *hc_zk_session(hc_cluster *c);

/* A partition state znode (/brokers/topics/<t>/partitions/<p>/state, v1). */
typedef struct hc_state {
	int32_t leader;           /* -1: none */
	int32_t leader_epoch;
	int32_t controller_epoch;
	int32_t version;          /* the JSON's "version" (1) */
	int nisr;
	int32_t isr[HC_MAX_BROKERS];
	int32_t zk_version;       /* the znode's version: the partition epoch */
	int64_t mzxid;            /* zxid of its last write */
	int64_t recovery_state;   /* "leader_recovery_state", 0 when absent */
	char json[512];           /* the text as read (cut) */
} hc_state;

/* Read and parse a state znode: CTL_ZK_OK, CTL_ZK_NONODE..., or
 * CTL_ZK_MARSHALLINGERROR when the JSON is not a v1 state. */
int hc_zk_state(hc_cluster *c, const char *topic, int32_t partition, hc_state *st);

/* The controller epoch: /controller_epoch as a number (*version optional
 * gets its zkVersion); -1 if missing or not a number. */
int64_t hc_zk_controller_epoch(hc_cluster *c, int32_t *version);

/* The broker id /controller names, -1 if none (or unreadable). */
int hc_zk_controller(hc_cluster *c);

/* true if state's ISR holds id. */
bool hc_isr_has(const hc_state *st, int32_t id);

/* ---- waiting and logs ---- */

/* A condition for hc_wait; true when met. */
typedef bool (*hc_cond_fn)(hc_cluster *c, void *arg);

/* Poll fn every 25 ms until it returns true or timeout_ms (scaled by
 * SAMSA_TIMEOUT_SCALE, h_scaled_ms) passed. Returns the ms waited (>= 0),
 * or -1 on timeout. */
long hc_wait(hc_cluster *c, int timeout_ms, hc_cond_fn fn, void *arg);

/* Wait until /brokers/ids holds exactly the ids with registered[id] true
 * (registered[0] unused; NULL: every running, unpaused broker). Returns ms
 * waited or -1. */
long hc_wait_registered(hc_cluster *c, const bool *registered, int timeout_ms);

/* Wait until the state znode of topic/partition has every replica of
 * want_isr (count n; order ignored) in its ISR and nothing else, and a
 * leader. Returns ms waited or -1 (the last state on stderr). */
long hc_wait_isr(hc_cluster *c, const char *topic, int32_t partition, const int32_t *want_isr,
		 int n, int timeout_ms);

/* true if broker id's log (all its runs) contains needle. */
bool hc_log_has(hc_cluster *c, int id, const char *needle);

/* Number of lines of broker id's log containing needle. */
int hc_log_count(hc_cluster *c, int id, const char *needle);

/* Print the tails of every broker's log and ZooKeeper's to f. */
void hc_dump_logs(hc_cluster *c, FILE *f, int max_lines);

/* The partition dir <log dir>/<topic>-<partition> of broker id into buf. */
const char *hc_partition_dir(hc_cluster *c, int id, const char *topic, int32_t partition,
			     char *buf, size_t cap);

#endif
