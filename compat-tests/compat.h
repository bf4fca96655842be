/*
 * compat.h - what the check-based compat tests share: the runner main, a
 * broker started or the test fails, and librdkafka helpers (configuration,
 * producing with per-message delivery results, consuming one partition by
 * assignment with the legacy consumer, admin CreateTopics/DeleteTopics,
 * metadata).
 *
 * Consuming: these helpers read partitions without a group, so a test of
 * produce/fetch does not depend on the group coordinator (groups_common.h
 * has the helpers for consumer groups). librdkafka 2.0.2's rd_kafka_assign()
 * needs a group.id (it returns __UNKNOWN_GROUP without one); the legacy
 * per-partition consumer (rd_kafka_consume_start/rd_kafka_consume_batch)
 * needs none, so that is what c_consume uses, with auto commit and offset
 * store off.
 *
 * Every helper that can fail fails the running check test (ck_assert) with
 * a message naming the librdkafka error.
 */
#ifndef SAMSA_COMPAT_COMPAT_H
#define SAMSA_COMPAT_COMPAT_H

#include <check.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "compat-tests/harness.h"

/*
 * main() of a test program: h_init, exit 99 (automake hard error) if the
 * broker binary is missing, run the suite (CK_NORMAL, fork mode unless
 * CK_FORK=no), h_fini. Returns the exit code for main.
 */
int c_run_suite(Suite *s);

/* h_broker_new + h_broker_start, failing the test if either fails.
 * overrides: NULL-terminated "key=value" list or NULL. With cluster hooks
 * installed (below), a cluster is started instead and its broker 1
 * returned. */
h_broker *c_start_broker(const char *const *overrides);

/* End of a test: SIGTERM, the broker must exit 0 within 30 s (so a
 * sanitizer build also checks shutdown and leaks), then h_broker_free.
 * With cluster hooks, every broker of b's cluster must. */
void c_stop_broker(h_broker *b);

/*
 * Cluster hooks: a program linked with cluster_compat.c (the
 * cluster_compat_* wrappers of Makefile.am) installs them before main, and
 * the same test code then runs against a cluster in ZooKeeper mode: the
 * broker a test starts is broker 1 of a cluster, the others start and stop
 * with it, and c_create_topic replaces a replication factor of 1 by a
 * replica on every broker, broker 1 first (so broker 1 leads every
 * partition the test creates and holds it in its files, as the single node
 * did).
 */
typedef struct c_cluster_hooks {
	/* start a cluster with overrides, return its broker 1, NULL on failure */
	h_broker *(*start)(const char *const *overrides);
	/* stop every broker of b's cluster and free it: the number that did
	 * not exit 0; -1 when b is not a cluster's */
	int (*stop)(h_broker *b);
	int replication_factor; /* the brokers (ids 1..n) c_create_topic spreads a
	                         * factor of 1 over */
} c_cluster_hooks;

/* Install (or with NULL remove) the hooks; h must outlive their use. */
void c_set_cluster_hooks(const c_cluster_hooks *h);

/* A client configuration for b: bootstrap.servers, IPv4, quiet connection
 * close logs. The caller owns it (passes it to c_new). */
rd_kafka_conf_t *c_conf(const h_broker *b);

/* rd_kafka_conf_set or fail the test. */
void c_set(rd_kafka_conf_t *conf, const char *key, const char *value);

/* Apply a NULL-terminated list of key, value, key, value... (may be NULL). */
void c_set_all(rd_kafka_conf_t *conf, const char *const *kv);

/* rd_kafka_new or fail; takes ownership of conf. */
rd_kafka_t *c_new(rd_kafka_type_t type, rd_kafka_conf_t *conf);

/* Result of one produced message, filled by the delivery report callback
 * that c_producer installs (the message's opaque points at it). */
typedef struct c_delivery {
	rd_kafka_resp_err_t err;
	int32_t partition;
	int64_t offset;
	int64_t timestamp;
	int done; /* 1 once the report arrived */
} c_delivery;

/* A producer for b with the delivery callback above; kv as c_set_all. */
rd_kafka_t *c_producer(const h_broker *b, const char *const *kv);

/* A legacy consumer for b (no group, no commits); kv as c_set_all. */
rd_kafka_t *c_consumer(const h_broker *b, const char *const *kv);

typedef struct c_header {
	const char *name;
	const void *value;
	size_t len;
} c_header;

/* One message to produce. partition may be RD_KAFKA_PARTITION_UA;
 * timestamp 0 means "let the client set it". */
typedef struct c_msg {
	const char *topic;
	int32_t partition;
	const void *key;
	size_t key_len;
	const void *value;
	size_t value_len;
	const c_header *headers;
	int nheaders;
	int64_t timestamp;
} c_msg;

/* rd_kafka_producev (copying key/value/headers), polling while the local
 * queue is full; d (may be NULL) receives the delivery result. Fails the
 * test if the message cannot be enqueued. */
void c_produce(rd_kafka_t *rk, const c_msg *m, c_delivery *d);

/* rd_kafka_flush or fail the test. */
void c_flush(rd_kafka_t *rk, int timeout_ms);

/* Called for each consumed message; return 0 to go on, non-zero to stop. */
typedef int (*c_consume_cb)(const rd_kafka_message_t *m, void *opaque);

/* c_consume gives up after this long without a message (ms, scaled). */
#define C_IDLE_MS 15000

/*
 * Consume topic/partition from start_offset (an offset or
 * RD_KAFKA_OFFSET_BEGINNING) until count messages arrived, cb stops,
 * timeout_ms passed, or nothing came for C_IDLE_MS. A consume error other than partition EOF fails the
 * test. Returns the number of messages passed to cb.
 */
long c_consume(rd_kafka_t *consumer, const char *topic, int32_t partition,
	       int64_t start_offset, long count, int timeout_ms, c_consume_cb cb,
	       void *opaque);

/*
 * AdminClient CreateTopics of one topic; configs is a NULL-terminated
 * key, value list or NULL. Returns the topic's error code (errstr gets the
 * message, may be NULL); fails the test if the request itself fails.
 */
rd_kafka_resp_err_t c_create_topic(rd_kafka_t *rk, const char *name, int partitions,
				   int replication_factor, const char *const *configs,
				   char *errstr, size_t errsize);

/* AdminClient DeleteTopics of one topic; as c_create_topic. */
rd_kafka_resp_err_t c_delete_topic(rd_kafka_t *rk, const char *name, char *errstr,
				   size_t errsize);

/*
 * Metadata of all topics (never auto-creates). The caller frees it with
 * rd_kafka_metadata_destroy. Fails the test on error.
 */
const struct rd_kafka_metadata *c_metadata_all(rd_kafka_t *rk);

/* The topic in md, or NULL. */
const rd_kafka_metadata_topic_t *c_md_topic(const struct rd_kafka_metadata *md,
					    const char *name);

/* Wait until topic is in metadata without error, with `partitions`
 * partitions each having a leader. Fails the test after timeout_ms. */
void c_wait_topic(rd_kafka_t *rk, const char *name, int partitions, int timeout_ms);

/* Fail the test unless b is still running and answers ApiVersions. */
void c_assert_broker_serving(h_broker *b);

/*
 * Produce records "v<first>".."v<first+n-1>" to partition 0 of topic with
 * acks ("1", "all"...) and check each was acknowledged at offset first + i.
 */
void c_produce_seq(const h_broker *b, const char *topic, int n, int first, const char *acks);

/* Consume partition 0 of topic from the start: offsets 0..n-1 must hold
 * "v0".."v<n-1>" (what c_produce_seq wrote), each once and in order. */
void c_expect_seq(const h_broker *b, const char *topic, int n);

/*
 * InitProducerId v4 for txn_id (NULL: an idempotent producer) on a fresh
 * connection to b, retried every 100 ms while the coordinator answers
 * COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
 * or CONCURRENT_TRANSACTIONS (as Kafka clients do; after NOT_COORDINATOR
 * the next try goes to the broker FindCoordinator v1 on b names, which on a
 * cluster may be another than b); *pid and *epoch get the
 * answer. Fails the test on any other error or after 30 s (scaled).
 */
void c_init_producer_id(const h_broker *b, const char *txn_id, int64_t *pid, int16_t *epoch);

#endif
