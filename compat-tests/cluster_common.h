/*
 * cluster_common.h - what the check + librdkafka cluster tests
 * (cluster_*.c) share, over cluster.h (processes, Metadata, ZooKeeper) and
 * checker.h (the Jepsen-style history checker):
 *
 *   - the runner: one ZooKeeper server for the whole program (started in
 *     the parent before the forked tests; each cluster has its own chroot);
 *   - a cluster started or the test fails, and stopped at the end with
 *     every broker exiting 0 on SIGTERM (so the sanitizer build checks
 *     shutdown and leaks);
 *   - topics created through the AdminClient and waited for on every
 *     broker and in ZooKeeper;
 *   - a producer thread that writes values "<producer>-<seq>" at a steady
 *     rate and records the outcome of each (acknowledged with offset,
 *     failed, indeterminate: librdkafka's rd_kafka_message_status), fed to
 *     the checker afterwards; a final read of every partition from offset 0
 *     to the high watermark into the checker;
 *   - raw Produce (acks 0/1/-1) and Fetch on one broker, the log end offset
 *     of a replica from its files, and a batch-by-batch comparison of the
 *     replicas' .log files;
 *   - FindCoordinator (raw v1) and Kafka's partition of a group or
 *     transactional id.
 *
 * Every helper that can fail fails the running check test with a message.
 *
 * Environment:
 *   SAMSA_CLUSTER_QUICK   set (non-empty, not "0"): shorter loops (the
 *                         sanitizer build sets it);
 *   SAMSA_CLUSTER_LONG    set: the long loops for the closing figures;
 *   SAMSA_RDKAFKA_DEBUG   librdkafka's debug contexts for every client
 *                         ("eos,msg,protocol"...), to read a failure.
 */
#ifndef SAMSA_COMPAT_CLUSTER_COMMON_H
#define SAMSA_COMPAT_CLUSTER_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "compat-tests/checker.h"
#include "compat-tests/cluster.h"
#include "compat-tests/compat.h"

/* main() of a cluster test program: h_init, the shared ZooKeeper server,
 * the suite (fork mode unless CK_FORK=no), the logs of the failed tests,
 * h_fini. Exit code for main. */
int cc_run_suite(Suite *s);

/* The shared server (NULL outside cc_run_suite). */
h_zk *cc_shared_zk(void);

/*
 * main() of a partition test program (harness B, netns.h): as
 * cc_run_suite, but first a network of nodes "zk", "b1".."b<brokers>" and
 * the client nodes named in clients (NULL-terminated, or NULL), with the
 * shared ZooKeeper in node "zk". Every cc_start then runs its cluster in
 * it, after healing every partition a test before it left. The network
 * is removed at the end, also when the program is interrupted. When
 * namespaces cannot be made here (not root, no CAP_NET_ADMIN, no ip or
 * nft), prints a line "SKIP: <why>" and returns 77, automake's code for a
 * skipped test.
 */
int cc_run_suite_net(Suite *s, int brokers, const char *const *clients);

/* The network of cc_run_suite_net (NULL outside it). */
hn_net *cc_shared_net(void);

/* true when SAMSA_CLUSTER_QUICK / SAMSA_CLUSTER_LONG is set (not "0"). */
bool cc_quick(void);
bool cc_long(void);

/* An integer from the environment, def when unset or not a number. */
long cc_env_long(const char *name, long def);

/* A line on stderr (the test's log) with the seconds since the last
 * cc_start: the phases of a test, for reading a failure. */
void cc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* hc_start with the shared ZooKeeper (own_zk: one of its own, for tests
 * that stop it), failing the test when it does not form. o may be NULL. */
void cc_start(hc_cluster *c, const hc_options *o, bool own_zk);

/* End of a test: hc_stop must find every broker exit 0; then hc_free. */
void cc_finish(hc_cluster *c);

/* A client configuration for the cluster (every broker in
 * bootstrap.servers, IPv4, fast reconnects). */
rd_kafka_conf_t *cc_conf(const hc_cluster *c);

/* CreateTopics through the AdminClient (configs: key, value, ... NULL, or
 * NULL; assignment: npart * rf broker ids, partition after partition, or
 * NULL for the broker's choice), then cc_wait_topic. */
void cc_create_topic(hc_cluster *c, const char *topic, int npart, int rf,
		     const int32_t *assignment, const char *const *configs);

/* Wait until every partition's state znode exists with a leader and every
 * running broker's Metadata lists the topic with npart partitions, each
 * with that leader and leader epoch. */
void cc_wait_topic(hc_cluster *c, const char *topic, int npart, int timeout_ms);

/* The leader of topic/partition per its state znode (*epoch optional);
 * fails the test when the znode cannot be read. -1: none. */
int cc_leader(hc_cluster *c, const char *topic, int32_t partition, int32_t *epoch);

/* Wait until the state znode names a leader other than not_this (-1: any)
 * and every running broker's Metadata agrees; returns it. */
int cc_wait_leader(hc_cluster *c, const char *topic, int32_t partition, int not_this,
		   int timeout_ms);

/* ---- the producer thread ---- */

enum { CC_PENDING = 0, CC_ACKED, CC_FAILED, CC_INDETERMINATE };

typedef struct cc_rec {
	int32_t partition;
	int8_t state;       /* CC_* */
	int32_t err;        /* rd_kafka_resp_err_t of the outcome */
	int64_t offset;     /* acknowledged offset */
	int64_t sent_ms;    /* h_now_ms() when enqueued */
	int64_t done_ms;    /* when the outcome arrived */
	int64_t order;      /* position among the outcomes (for M) */
} cc_rec;

#define CC_CHUNK 65536
#define CC_MAX_PARTITIONS 64 /* of a producer's topic */
#define CC_CHUNKS 1024

typedef struct cc_producer {
	rd_kafka_t *rk;
	char topic[128];
	int npart;
	int id;                 /* the producer's number in the values */
	int rate;               /* records per second */
	bool idempotent;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	cc_rec *chunks[CC_CHUNKS];
	atomic_long nsent;      /* records enqueued */
	atomic_long nacked, nfailed, nindeterminate;
	atomic_llong last_ack_ms;       /* time of the last acknowledgement */
	atomic_llong last_ack_sent_ms;  /* largest enqueue time of an acknowledged record */
	atomic_llong part_ack_sent_ms[CC_MAX_PARTITIONS]; /* the same per partition */
	long outcomes;          /* producer thread only */
	int flush_ms;           /* set by cc_producer_stop before it stops the thread */
	int64_t start_ms, end_ms; /* h_now_ms() at the start and after the stop */
	char fatal[512];        /* a fatal librdkafka error, "" if none */
	char first_error[256];  /* the first delivery error, "" if none */
} cc_producer;

/*
 * Start a producer thread: value "<id>-<seq>" to partition seq % npart
 * (npart <= CC_MAX_PARTITIONS), rate
 * records a second, client settings CLUSTER.md 6.4 (acks=all,
 * enable.idempotence=true, request.timeout.ms=5000, message.timeout.ms=30000)
 * then kv (key, value, ... NULL, or NULL).
 */
cc_producer *cc_producer_start(hc_cluster *c, const char *topic, int npart, int id, int rate,
			       const char *const *kv);

/* Record i (i < nsent). Only after cc_producer_stop, or from the thread. */
cc_rec *cc_producer_rec(cc_producer *p, long i);

/* Stop sending, wait up to flush_ms (scaled) for the outcomes, purge what
 * is left (those stay indeterminate), join the thread. */
void cc_producer_stop(cc_producer *p, int flush_ms);

/* Feed the records to h in the order their outcomes arrived (pending ones
 * as indeterminate). */
void cc_producer_feed(cc_producer *p, chk *h);

/* Wait until a record of partition (-1: any) enqueued after t_ms was
 * acknowledged; returns the time from t_ms to when that was seen (ms,
 * within a few ms), or -1 after timeout_ms (scaled). */
long cc_producer_wait_ack_after(cc_producer *p, int32_t partition, int64_t t_ms, int timeout_ms);

/* After stop: the time from t_ms to the first acknowledgement of a record
 * of partition (-1: any) enqueued after t_ms, -1 if none. */
long cc_producer_failover_ms(cc_producer *p, int32_t partition, int64_t t_ms);

void cc_producer_free(cc_producer *p);

/* ---- figures of a fault (issue 14: for each fault, the records
 * acknowledged while it lasted and the longest time no produce
 * succeeded) ---- */

typedef struct cc_window {
	int64_t from_ms, to_ms; /* h_now_ms() when the fault began and ended */
	long acked;             /* acknowledgements that arrived within */
	long errors;            /* delivery reports with an error within */
	int64_t longest_gap_ms; /* longest time without an acknowledgement that
				 * began within (from from_ms to the first, between
				 * two, from the last to the first after to_ms, or
				 * to to_ms when none came after): a stall the fault
				 * caused counts whole even when it outlasts to_ms */
} cc_window;

/* After cc_producer_stop: p's outcomes over [from_ms, to_ms] on partition
 * (-1: all). */
void cc_producer_window(cc_producer *p, int32_t partition, int64_t from_ms, int64_t to_ms,
			cc_window *w);

/*
 * The figures of w as one line on stdout (the test's log): how long the
 * window lasted, the records acknowledged meanwhile, the longest time
 * without a successful produce, the delivery errors. fault names the
 * fault (no spaces) when w is its main window (from its start until the
 * cluster is whole again): one line per fault that a script can collect,
 *   FIGURE fault=<fault> acked_during=<n> longest_no_ack_ms=<n>
 *          lasted_ms=<n> errors=<n> prog=<prog> what="<what>"
 * fault NULL: a detail (a part of a fault), in words, prefixed by prog and
 * what.
 */
void cc_print_window(const char *prog, const char *fault, const char *what,
		     const cc_window *w);

/*
 * The end of a run under load: stop p (30 s to flush), fail on a fatal
 * error or on any delivery report with an error (librdkafka retries what
 * is retriable by itself: an error that reaches the application is one it
 * did not retry), then feed p to a new history, read every partition of
 * topic into it and check it (cc_check; opt NULL: idempotent, no loss
 * allowed). r gets the report. p stays allocated.
 */
void cc_producer_verify(hc_cluster *c, cc_producer *p, const char *topic, int npart,
			const chk_options *opt, chk_report *r, const char *what);

/* ---- reading ---- */

/* Read every partition of topic from offset 0 to its high watermark with a
 * plain consumer (read_uncommitted), feeding each record to h (NULL: only
 * count). Returns the number of records read. */
long cc_read_all(hc_cluster *c, const char *topic, int npart, chk *h);

/* A record of cc_read_to_eof. */
typedef void (*cc_record_fn)(int32_t partition, int64_t offset, const char *value, void *opaque);

/* Read every partition of topic from offset 0 until the consumer reports
 * the partition's end (the high watermark, or with committed the last
 * stable offset: isolation.level=read_committed), calling fn for each
 * record. Returns the number of records. */
long cc_read_to_eof(hc_cluster *c, const char *topic, int npart, bool committed,
		    cc_record_fn fn, void *opaque);

/* Check and print the report; fail the test when it is not valid. */
void cc_check(chk *h, const chk_options *opt, chk_report *r, const char *what);

/* ---- raw requests to one broker ---- */

/* A connection to broker id, or fail. */
int cc_connect(hc_cluster *c, int id);

/*
 * Produce v9 of n records "rec-<first>".."rec-<first+n-1>" (one batch) to
 * topic/partition on broker id with acks (0, 1, -1) and a request timeout
 * of 10 s. Returns the partition's error code with *base_offset; for
 * acks=0 nothing is answered: returns 0 once sent (base -1).
 */
int16_t cc_raw_produce(hc_cluster *c, int id, const char *topic, int32_t partition,
		       int16_t acks, int n, int first, int64_t *base_offset);

/* One parsed record of a raw fetch. */
typedef struct cc_fetched {
	int64_t offset;
	int32_t leader_epoch;   /* of its batch */
	char value[64];
} cc_fetched;

/*
 * Fetch v12 (ReplicaId -1, read_uncommitted) of topic/partition from
 * offset on broker id; up to cap records into out (*n), the high watermark
 * into *hw. Returns the error code (top level or partition).
 */
int16_t cc_raw_fetch(hc_cluster *c, int id, const char *topic, int32_t partition,
		     int64_t offset, int64_t *hw, cc_fetched *out, int cap, int *n);

/* The log end offset of broker id's replica from its .log files (the next
 * offset after the last whole batch); fails the test when the dir does not
 * verify. */
int64_t cc_log_end_offset(hc_cluster *c, int id, const char *topic, int32_t partition);

/*
 * Compare the replicas ids[0..n) of topic/partition batch by batch (their
 * .log files, all segments in order; each batch's bytes from its base
 * offset to its end must be equal). true when equal; why gets the first
 * difference.
 */
bool cc_logs_equal(hc_cluster *c, const char *topic, int32_t partition, const int *ids, int n,
		   char *why, size_t cap);

/* The records of broker id's replica of topic/partition read from its
 * .log files (uncompressed batches; control batches skipped), in order,
 * into out. Returns their number; fails the test when the dir cannot be
 * read or holds cap records or more. */
int cc_replica_records(hc_cluster *c, int id, const char *topic, int32_t partition,
		       cc_fetched *out, int cap);

/* The (epoch, start offset) entries of a replica's leader-epoch-checkpoint:
 * their count (at most cap), -1 when missing or malformed. */
int cc_epoch_checkpoint(hc_cluster *c, int id, const char *topic, int32_t partition,
			int32_t *epochs, int64_t *starts, int cap);

/* FindCoordinator v1 on broker id: key_type 0 group, 1 transaction. The
 * error code; *node the coordinator id. */
int16_t cc_find_coordinator(hc_cluster *c, int id, const char *key, int8_t key_type,
			    int32_t *node);

/* Kafka's partition of a group or transactional id (ASCII) in its
 * internal topic of npart partitions: Utils.abs(String.hashCode()) % npart,
 * where Utils.abs maps Integer.MIN_VALUE to 0. */
int32_t cc_internal_partition(const char *key, int npart);

/* Median and maximum of v[0..n) (sorted in place). */
void cc_median_max(long *v, int n, long *median, long *max);

#endif
