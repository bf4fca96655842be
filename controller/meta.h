/*
 * meta.h - the cluster metadata model the controller back ends keep, and the
 * value types that travel to the broker in events (ctl.h): brokers, topics
 * with their partitions (assignment and state: leader, leader epoch, ISR,
 * partition epoch) and config overrides, and dynamic broker configs.
 *
 * Every type here owns what it points to (malloc'ed copies): a ctl_topic in
 * an event is the broker's to keep or free (ctl_topic_free), and nothing in
 * it points into the controller (DESIGN.md decision 10).
 *
 * A ctl_meta is used by one thread (the controller thread) at a time.
 */
#ifndef SAMSA_CONTROLLER_META_H
#define SAMSA_CONTROLLER_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_TOPIC_NAME_MAX 249
/* Upper bound on partitions of one topic (also bounds memory on bad input). */
#define CTL_MAX_PARTITIONS 100000
/* The resource of the cluster-wide dynamic broker configs (Kafka's BROKER
 * resource with an empty name, "<default>"). */
#define CTL_BROKER_DEFAULT (-1)
/* No leader (Kafka's LeaderAndIsr.NoLeader). */
#define CTL_NO_LEADER (-1)

typedef struct ctl_config_entry {
	char *name;  /* owned */
	char *value; /* owned */
} ctl_config_entry;

/* One partition: its assignment (the topic znode's replica list; the first
 * replica is the preferred leader) and its state (Kafka's partition state
 * znode, CLUSTER.md 1.4). */
typedef struct ctl_partition {
	int32_t partition;
	int32_t *replicas;        /* broker ids, nreplicas, owned */
	int32_t nreplicas;
	int32_t leader;           /* broker id, CTL_NO_LEADER when none */
	int32_t leader_epoch;
	int32_t *isr;             /* broker ids, nisr, owned; never empty once set */
	int32_t nisr;
	int32_t partition_epoch;  /* the state's version (zkVersion in ZooKeeper) */
	int32_t controller_epoch; /* of the controller that made the last election */
	/* A reassignment in progress (KIP-455; the topic znode's
	 * adding_replicas and removing_replicas): replicas then holds the
	 * target replicas followed by the original ones not in the target.
	 * NULL and 0 when none; owned. */
	int32_t *adding;
	int32_t nadding;
	int32_t *removing;
	int32_t nremoving;
} ctl_partition;

typedef struct ctl_topic {
	char name[CTL_TOPIC_NAME_MAX + 1];
	uint8_t id[16];           /* topic id (random UUID, never all zero) */
	bool internal;            /* __consumer_offsets, __transaction_state */
	int32_t npartitions;
	ctl_partition *partitions; /* npartitions, owned */
	int32_t replication_factor;
	ctl_config_entry *configs; /* topic-level overrides only, owned */
	int32_t nconfigs;
	bool deleting;            /* marked for deletion (ZooKeeper's
				   * /admin/delete_topics/<t>): gone for the
				   * brokers, kept by the controller until every
				   * replica's broker is back (CLUSTER.md 2.9) */
} ctl_topic;

/* A live broker (its registration; CLUSTER.md 1.2). */
/* Most advertised listeners of one broker (the broker's BRK_MAX_LISTENERS). */
#define CTL_MAX_ENDPOINTS 4

/* One advertised listener of a broker (Kafka's EndPoint). */
typedef struct ctl_endpoint {
	char listener[32];          /* listener name, e.g. "SSL" */
	char security_protocol[16]; /* PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL */
	char host[256];
	int32_t port;
} ctl_endpoint;

typedef struct ctl_broker {
	int32_t id;
	int64_t epoch;     /* broker epoch: the registration's czxid (KIP-380); 0 locally */
	char host[256];    /* advertised host of its first listener */
	int32_t port;
	char rack[256];    /* broker.rack, "" when unset */
	/* Every advertised listener, the first one first (the registration's
	 * "endpoints"; clients are answered with the endpoint of the listener
	 * they came in on). 0 when only host and port are known. */
	ctl_endpoint endpoints[CTL_MAX_ENDPOINTS];
	int32_t nendpoints;
} ctl_broker;

/* b's endpoint of listener (names compared ignoring case, as Kafka's
 * ListenerName upper-cases them); NULL when b advertises none by that name
 * or listener is NULL. */
const ctl_endpoint *ctl_broker_endpoint(const ctl_broker *b, const char *listener);

/* Whether b serves the clients of listener, and where (Kafka's
 * Broker.getNode(listenerName)): true with *host (b's storage) and *port
 * of b's endpoint of that name; false when b records endpoints but none of
 * that name -- Kafka then leaves b out of Metadata and DescribeCluster,
 * and a partition or coordinator b leads has no usable node. A broker that
 * records no endpoints (nendpoints 0: only host and port are known) and a
 * NULL listener (a request made inside the broker) get b's host and port.
 * host and port may be NULL. */
bool ctl_broker_node(const ctl_broker *b, const char *listener, const char **host,
		     int32_t *port);

/* The replicas (broker ids) of one partition, a view the caller owns. */
typedef struct ctl_replica_list {
	const int32_t *ids;
	int32_t n;
} ctl_replica_list;

/* ---- values ---- */

void ctl_topic_free(ctl_topic *t);
/* A deep copy, NULL when out of memory. */
ctl_topic *ctl_topic_copy(const ctl_topic *t);
/* Free a partition's arrays (not p itself). */
void ctl_partition_clear(ctl_partition *p);
/* Deep copy of src into dst (dst's old arrays are not freed). Returns 0 or
 * -ENOMEM (dst then holds no arrays). */
int ctl_partition_copy(ctl_partition *dst, const ctl_partition *src);
/* A topic config override, or NULL when the topic does not set it. */
const char *ctl_topic_config(const ctl_topic *t, const char *name);

/* A copy of configs[0..n) (NULL values become ""); NULL when out of memory.
 * An empty set is a 1-entry allocation, so NULL always means failure. */
ctl_config_entry *ctl_configs_copy(const ctl_config_entry *configs, int32_t n);
void ctl_configs_free(ctl_config_entry *e, int32_t n);

/* Kafka's topic name rules: 1-249 chars of [a-zA-Z0-9._-], not "." or "..".
 * Returns 0 or INVALID_TOPIC_EXCEPTION. */
int ctl_validate_topic_name(const char *name, int32_t len);
/* Kafka's Topic.isInternal: __consumer_offsets and __transaction_state (len
 * bytes of name, not NUL-terminated). Topics so named are created internal. */
bool ctl_topic_name_is_internal(const char *name, size_t len);
/* Kafka's Topic.hasCollision: a and b differ but are equal once '.' is
 * treated as '_' (such a name is refused with INVALID_TOPIC_EXCEPTION). */
bool ctl_topic_names_collide(const char *a, const char *b);
/* Kafka's Uuid.randomUuid(): never all zero, never METADATA_TOPIC_ID (0,1),
 * never one whose base64 form starts with '-'. Returns 0 or -errno. */
int ctl_random_uuid(uint8_t id[16]);

/* ---- the model ---- */

/* The dynamic broker configs (KIP-226) of one broker or of
 * CTL_BROKER_DEFAULT. */
typedef struct ctl_broker_config_set {
	int32_t broker_id;
	ctl_config_entry *configs;
	int32_t nconfigs;
} ctl_broker_config_set;

/* The configs of one client entity (entity.h: "users/alice",
 * "clients/<default>", ...): quotas, SCRAM credentials, whatever keys the
 * broker keeps there. version: the znode's data version in ZooKeeper; the
 * local back end counts writes from 0 (not persisted) and keeps no entity
 * without configs. Version -1: no such entity (znode). */
typedef struct ctl_client_config_set {
	char *entity;              /* owned */
	ctl_config_entry *configs; /* owned */
	int32_t nconfigs;
	int32_t version;
} ctl_client_config_set;

typedef struct ctl_meta {
	ctl_topic **topics;       /* creation order, owned */
	int32_t ntopics, cap;
	int32_t *index;           /* by name: open addressing, topic index + 1, 0 empty */
	uint32_t index_cap;       /* power of two, > 2 * ntopics */
	ctl_broker_config_set *broker_configs; /* one per broker id with any */
	int32_t nbroker_configs;
	ctl_client_config_set *client_configs; /* one per entity with configs */
	int32_t nclient_configs;
} ctl_meta;

/* Returns 0 or -ENOMEM. */
int ctl_meta_init(ctl_meta *m);
void ctl_meta_destroy(ctl_meta *m);

const ctl_topic *ctl_meta_find(const ctl_meta *m, const char *name, int32_t len);
const ctl_topic *ctl_meta_find_by_id(const ctl_meta *m, const uint8_t id[16]);
/* An existing topic whose name collides with name (ctl_topic_names_collide). */
const ctl_topic *ctl_meta_find_colliding(const ctl_meta *m, const char *name);
/* Add t (taken over on success). Returns 0 or -ENOMEM. */
int ctl_meta_add(ctl_meta *m, ctl_topic *t);
/* Take the topic named name out of the model and return it (the caller
 * frees it or puts it back with ctl_meta_insert_at); NULL when absent.
 * *pos gets its position. */
ctl_topic *ctl_meta_take(ctl_meta *m, const char *name, int32_t *pos);
/* Put a topic back at position pos (undo of ctl_meta_take). Returns 0 or
 * -ENOMEM. */
int ctl_meta_insert_at(ctl_meta *m, ctl_topic *t, int32_t pos);

const ctl_broker_config_set *ctl_meta_broker_configs(const ctl_meta *m, int32_t broker_id);
/* Replace the configs of broker_id with configs (taken over), returning the
 * old ones through *old and *nold (the caller frees them, or puts them back
 * the same way). Returns 0 or -ENOMEM (nothing changed). */
int ctl_meta_swap_broker_configs(ctl_meta *m, int32_t broker_id, ctl_config_entry *configs,
				 int32_t nconfigs, ctl_config_entry **old, int32_t *nold);

/* The client entity's configs, NULL when it has none. */
const ctl_client_config_set *ctl_meta_client_configs(const ctl_meta *m, const char *entity);
/* Set the configs of entity (configs[0..n) taken over; an empty set is
 * kept, e.g. a ZooKeeper parent znode without configs) and its version; a
 * version < 0 removes the entity (configs freed). The old configs are
 * freed. Returns 0 or -ENOMEM (nothing changed, configs still the
 * caller's). */
int ctl_meta_set_client_configs(ctl_meta *m, const char *entity, ctl_config_entry *configs,
				int32_t n, int32_t version);

#endif
