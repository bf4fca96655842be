/*
 * ctl.h - the controller: cluster metadata (brokers, topics, topic ids,
 * partition assignments, leader, leader epoch, ISR) behind one interface.
 * This back end is local: one node, metadata kept in the file
 * <log.dir>/__samsa_metadata (written to a .tmp, fsynced, renamed).
 * A ZooKeeper back end comes later behind the same functions.
 *
 * Ownership: ctl owns every ctl_topic; pointers returned stay valid until the
 * topic is deleted or ctl_close. Errors are Kafka error codes (err.h), >= 0.
 */
#ifndef SAMSA_CONTROLLER_CTL_H
#define SAMSA_CONTROLLER_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_TOPIC_NAME_MAX 249

typedef struct ctl_config_entry {
	char *name;  /* owned */
	char *value; /* owned */
} ctl_config_entry;

typedef struct ctl_partition {
	int32_t partition;
	int32_t leader;       /* broker id, -1 when none */
	int32_t leader_epoch;
	int32_t *replicas;    /* broker ids, nreplicas */
	int32_t nreplicas;
	int32_t *isr;
	int32_t nisr;
} ctl_partition;

typedef struct ctl_topic {
	char name[CTL_TOPIC_NAME_MAX + 1];
	uint8_t id[16];       /* topic id (random UUID, never all zero) */
	bool internal;        /* __consumer_offsets, __transaction_state */
	int32_t npartitions;
	ctl_partition *partitions;
	int32_t replication_factor;
	ctl_config_entry *configs; /* topic-level overrides only */
	int32_t nconfigs;
} ctl_topic;

typedef struct ctl ctl;

/* Open the metadata under dir for broker broker_id (creating it empty).
 * Returns 0 or -errno (-EINVAL when the metadata file does not parse). */
int ctl_open(const char *dir, int32_t broker_id, ctl **out);
void ctl_close(ctl *c);

/* Brokers known to the cluster (the local one only for now). */
int32_t ctl_broker_count(const ctl *c);
int32_t ctl_controller_id(const ctl *c);
/* The id of the i-th known broker (0 <= i < ctl_broker_count), else -1. */
int32_t ctl_broker_id_at(const ctl *c, int32_t i);

/* Kafka's topic name rules: 1-249 chars of [a-zA-Z0-9._-], not "." or "..".
 * Returns 0 or INVALID_TOPIC_EXCEPTION. */
int ctl_validate_topic_name(const char *name, int32_t len);

/* Kafka's Topic.isInternal: __consumer_offsets and __transaction_state (len
 * bytes of name, not NUL-terminated). Topics so named are created internal. */
bool ctl_topic_name_is_internal(const char *name, size_t len);

/*
 * Create a topic: partitions >= 1 (INVALID_PARTITIONS), replication factor
 * between 1 and the broker count (INVALID_REPLICATION_FACTOR), a name that
 * passes the rules and is new (TOPIC_ALREADY_EXISTS) and does not collide
 * with an existing one (INVALID_TOPIC_EXCEPTION). With validate_only nothing
 * changes. configs are copied (not validated here). The metadata file is
 * rewritten before returning; KAFKA_STORAGE_ERROR if that fails (nothing
 * changed then). *out (optional) gets the topic.
 */
int ctl_create_topic(ctl *c, const char *name, int32_t partitions, int16_t replication_factor,
		     const ctl_config_entry *configs, int32_t nconfigs, bool validate_only,
		     const ctl_topic **out);
/* An existing topic whose name equals name once '.' and '_' are treated as
 * the same character (Kafka's Topic.hasCollision: such a name is refused
 * with INVALID_TOPIC_EXCEPTION), or NULL. */
const ctl_topic *ctl_find_colliding_topic(const ctl *c, const char *name);
/* Delete by name; UNKNOWN_TOPIC_OR_PARTITION when absent. */
int ctl_delete_topic(ctl *c, const char *name);

const ctl_topic *ctl_find_topic(const ctl *c, const char *name, int32_t len);
const ctl_topic *ctl_find_topic_by_id(const ctl *c, const uint8_t id[16]);
/* Iterate: i from 0 while it returns non-NULL. */
const ctl_topic *ctl_topic_at(const ctl *c, int32_t i);
int32_t ctl_topic_count(const ctl *c);
/* A topic config override, or NULL when the topic does not set it. */
const char *ctl_topic_config(const ctl_topic *t, const char *name);

/*
 * Replace the whole set of overrides of topic name (Kafka's
 * ConfigurationControlManager applying the ConfigRecords of a TOPIC
 * resource) with a copy of configs[0..nconfigs). The values are not
 * validated here (brk_topic_config_check does that). The metadata file is
 * rewritten before returning. Returns KERR_NONE,
 * UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR when the file could not be
 * written or UNKNOWN_SERVER_ERROR when out of memory (nothing changed in
 * both cases). On success the topic's previous configs array is freed.
 */
int ctl_set_topic_configs(ctl *c, const char *name, const ctl_config_entry *configs,
			  int32_t nconfigs);

/* The resource of the cluster-wide dynamic broker configs (Kafka's BROKER
 * resource with an empty name, "<default>"). */
#define CTL_BROKER_DEFAULT (-1)

/*
 * Replace the dynamic broker configs (KIP-226) of broker broker_id, or the
 * cluster-wide defaults with CTL_BROKER_DEFAULT, with a copy of
 * configs[0..nconfigs) (not validated here). Kept in the metadata file as
 * Kafka keeps them in its metadata log; rewritten before returning.
 * Returns KERR_NONE, KAFKA_STORAGE_ERROR or UNKNOWN_SERVER_ERROR (nothing
 * changed then). Pointers from ctl_broker_configs become invalid.
 */
int ctl_set_broker_configs(ctl *c, int32_t broker_id, const ctl_config_entry *configs,
			   int32_t nconfigs);

/* The dynamic broker configs of broker_id (or CTL_BROKER_DEFAULT): an array
 * of *n entries owned by ctl (NULL when none). */
const ctl_config_entry *ctl_broker_configs(const ctl *c, int32_t broker_id, int32_t *n);

/*
 * A new producer id (KIP-98) into *out (-1 on error): ids count up from 0
 * and never repeat, also across restarts and kill -9. As Kafka's
 * ProducerIdManager, ids are reserved in blocks (1000 here): the end of the
 * block is written to the metadata file (fsynced) before the first id of the
 * block is handed out, and a restart continues after the persisted end.
 * Returns KERR_NONE, KERR_KAFKA_STORAGE_ERROR when the block could not be
 * persisted (nothing handed out; a later call tries again), or
 * KERR_UNKNOWN_SERVER_ERROR when the id space is exhausted.
 */
int ctl_next_producer_id(ctl *c, int64_t *out);

/* The replicas (broker ids) of one partition, a view the caller owns. */
typedef struct ctl_replica_list {
	const int32_t *ids;
	int32_t n;
} ctl_replica_list;

/*
 * Raise the partition count of topic name to count (CreatePartitions,
 * KIP-195; Kafka's ReplicationControlManager.createPartitions, with its
 * errors and messages, written to msg, "" when there is none):
 *  - no such topic: UNKNOWN_TOPIC_OR_PARTITION (no message);
 *  - count equal to the current count, or below it, or above the limit of
 *    partitions per topic: INVALID_PARTITIONS;
 *  - assignments (NULL: automatic placement) not one per new partition, or
 *    one that is empty, names an unregistered broker or one broker twice,
 *    or has another number of replicas than the existing partitions:
 *    INVALID_REPLICA_ASSIGNMENT;
 *  - automatic placement with more replicas than brokers:
 *    INVALID_REPLICATION_FACTOR.
 * New partition i gets its replicas (given, else round robin over the
 * brokers), ISR = its replicas, leader = the first of them, leader epoch 0.
 * With validate_only only the checks run. Otherwise the metadata file is
 * rewritten before returning: KAFKA_STORAGE_ERROR if that fails (nothing
 * changed then). The topic's partitions array may move: do not keep
 * ctl_partition pointers across this call (ctl_topic pointers stay valid).
 */
int ctl_add_partitions(ctl *c, const char *name, int32_t count, const ctl_replica_list *assignments,
		       int32_t nassignments, bool validate_only, char *msg, size_t msgsize);

#endif
