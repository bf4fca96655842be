/*
 * zk_json.h - codecs of the znodes of Kafka's ZooKeeper mode, byte-compatible
 * with what a Kafka 3.x broker writes (kafka.zk.ZkData, Scala 2.13 build;
 * the layout and meaning of each znode are Kafka's ZooKeeper mode).
 *
 * Encoders write what Kafka writes, byte for byte: compact JSON (Jackson,
 * no whitespace) with the members in the order Kafka's maps iterate. That
 * order is not alphabetical: Kafka builds Scala and Java hash maps and
 * Jackson walks them, so each encoder below states its order. The
 * partitions maps of a topic follow Scala 2.13's mutable.HashMap order and a
 * config map Java's Properties (ConcurrentHashMap) order, computed from the
 * keys' String.hashCode as those maps do. Readers (Kafka's and ours) do not
 * care about order; byte equality lets a test diff us against Kafka.
 * Every encoder returns 0 and *out, malloc'd and NUL-terminated (caller
 * frees; *len excludes the NUL), or -EINVAL (a field Kafka could not write,
 * e.g. a negative partition count) or -ENOMEM.
 *
 * Decoders read every version Kafka wrote, with members in any order and
 * members they do not know ignored (as Kafka's readers do), but they are
 * strict about the members they know: a wrong type, a number out of range,
 * a missing required member, a malformed JSON text (json.h: also repeated
 * names, too deep, too big) is -EINVAL. data/len is the znode's data; null
 * data (len -1) is -EINVAL for every codec here. Strings and arrays of the
 * decoded struct live in the caller's arena a (free it to free them); the
 * struct itself is the caller's. -ENOMEM when the arena refuses.
 *
 * Znodes whose data is null (ZooKeeper's -1 length, "null" in zkCli):
 * /brokers/ids, /brokers/topics/<t>/partitions and .../partitions/<p>, the
 * markers /admin/delete_topics/<t> (Kafka creates them with null data and
 * never reads it; a reader must ignore whatever a tool put there),
 * /brokers/seqid. Write them with CTL_ZKJ_NULL_DATA.
 */
#ifndef SAMSA_CONTROLLER_ZK_JSON_H
#define SAMSA_CONTROLLER_ZK_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/buf.h"

/* Data length that stores null data in a znode (ZooKeeper's convention). */
#define CTL_ZKJ_NULL_DATA (-1)

/* ---- /brokers/ids/<id> (BrokerIdZNode), ephemeral ---- */

/* An advertised endpoint, "<listener>://<host>:<port>" in the JSON. */
typedef struct ctl_zkj_endpoint {
	const char *listener;          /* listener name, e.g. "PLAINTEXT" */
	const char *security_protocol; /* PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL */
	const char *host;              /* "" when the listener has none; an IPv6
	                                * address without its brackets */
	int32_t port;
} ctl_zkj_endpoint;

typedef struct ctl_zkj_broker {
	int32_t version;               /* decode: 1-5; encode writes 5 */
	const char *host;              /* the first PLAINTEXT endpoint's host; NULL
	                                * (JSON null) when there is none. Encode
	                                * derives it from the endpoints. */
	int32_t port;                  /* its port, -1 without one */
	int32_t jmx_port;              /* -1 when JMX is off */
	int64_t timestamp;             /* registration time, ms (a string in JSON) */
	const char *rack;              /* broker.rack, NULL when unset (omitted) */
	ctl_zkj_endpoint *endpoints;
	int32_t nendpoints;
} ctl_zkj_broker;

/*
 * Encode v5: {"features":{},"listener_security_protocol_map":{...},
 * "endpoints":[...],"rack":"r1","jmx_port":-1,"port":9092,"host":"h",
 * "version":5,"timestamp":"1732880000123"}, rack omitted when NULL (that
 * order is Kafka's; CLUSTER.md's example puts rack last, Kafka does not).
 * Features are always {} (Samsa advertises none). The protocol map lists the
 * endpoints in their order (Kafka's order too for up to 4 listeners); every
 * endpoint needs a listener name and a security protocol, and a listener
 * name appears once.
 */
int ctl_zkj_broker_encode(const ctl_zkj_broker *b, char **out, size_t *len);
/*
 * Decode v1-v5. v1 has host and port only (one PLAINTEXT endpoint is made of
 * them); v2+ need endpoints, whose security protocol comes from
 * listener_security_protocol_map (v4+) or, without one, from the listener
 * name itself (which must then be a protocol name, as Kafka requires).
 * features, when present, must be an object; its content is not kept.
 */
int ctl_zkj_broker_decode(const char *data, int len, proto_arena *a, ctl_zkj_broker *out);

/* ---- /controller (ControllerZNode), ephemeral ---- */

typedef struct ctl_zkj_controller {
	int32_t version;                /* decode: 1 or 2 */
	int32_t broker_id;              /* "brokerid" */
	int64_t timestamp;              /* ms (a string in JSON) */
	int32_t kraft_controller_epoch; /* v2 only; -1 when absent */
} ctl_zkj_controller;

/* Encode v1: {"version":1,"brokerid":2,"timestamp":"1732880000123"} (what
 * Kafka 2.x tools read; 3.4+ brokers write v2 with "kraftControllerEpoch"). */
int ctl_zkj_controller_encode(const ctl_zkj_controller *c, char **out, size_t *len);
int ctl_zkj_controller_decode(const char *data, int len, proto_arena *a,
			      ctl_zkj_controller *out);

/* ---- /controller_epoch (ControllerEpochZNode), persistent ---- */

/* Plain decimal text, not JSON: "7". Decode takes what Java's
 * Integer.parseInt takes (an optional sign, digits, int32 range), nothing
 * else (no whitespace). */
int ctl_zkj_controller_epoch_encode(int32_t epoch, char **out, size_t *len);
int ctl_zkj_controller_epoch_decode(const char *data, int len, int32_t *epoch);

/* ---- /brokers/topics/<topic> (TopicZNode), persistent ---- */

typedef struct ctl_zkj_assignment {
	int32_t *replicas;  /* broker ids in assignment order (first = preferred) */
	int32_t nreplicas;
	int32_t *adding;    /* adding_replicas (KIP-455), during a reassignment */
	int32_t nadding;
	int32_t *removing;  /* removing_replicas */
	int32_t nremoving;
} ctl_zkj_assignment;

typedef struct ctl_zkj_topic {
	int32_t version;           /* decode: 1-3 (a v1 or v2 znode: no topic id) */
	bool has_topic_id;
	uint8_t topic_id[16];      /* "topic_id", Kafka's 22-char base64url UUID */
	ctl_zkj_assignment *partitions; /* indexed by partition id */
	int32_t npartitions;
} ctl_zkj_topic;

/*
 * Encode v3: {"partitions":{"0":[1,2,3],...},"topic_id":"...",
 * "adding_replicas":{...},"removing_replicas":{...},"version":3}. Needs a
 * topic id and at least one partition, each with at least one replica;
 * adding/removing hold the partitions whose lists are not empty.
 */
int ctl_zkj_topic_encode(const ctl_zkj_topic *t, char **out, size_t *len);
/*
 * Decode v1-v3. The partition ids must be exactly 0..n-1 (n >= 1), every
 * replica list non-empty and without a repeated broker id (broker ids >= 0);
 * adding/removing may only name partitions that exist.
 */
int ctl_zkj_topic_decode(const char *data, int len, proto_arena *a, ctl_zkj_topic *out);

/* ---- /brokers/topics/<t>/partitions/<p>/state (TopicPartitionStateZNode) ---- */

typedef struct ctl_zkj_partition_state {
	int32_t controller_epoch; /* epoch of the controller of the last leadership decision */
	int32_t leader;           /* broker id, -1 when none */
	int32_t leader_epoch;
	int32_t *isr;
	int32_t nisr;
	int32_t leader_recovery_state; /* 0 RECOVERED (omitted), 1 RECOVERING (KIP-704) */
} ctl_zkj_partition_state;

/* Encode v1: {"controller_epoch":5,"leader":2,"version":1,"leader_epoch":11,
 * "isr":[2,3]}, and with RECOVERING {"controller_epoch":5,"leader":2,
 * "version":1,"leader_recovery_state":1,"leader_epoch":11,"isr":[2]}. */
int ctl_zkj_partition_state_encode(const ctl_zkj_partition_state *s, char **out, size_t *len);
/* Decode v1 (version must be 1). leader >= -1; the ISR may be empty but
 * must not repeat a broker id. The znode's zkVersion (the partition epoch)
 * comes from its stat, not from here. */
int ctl_zkj_partition_state_decode(const char *data, int len, proto_arena *a,
				   ctl_zkj_partition_state *out);

/* ---- /config/<type>/<name> (ConfigEntityZNode), persistent ---- */

typedef struct ctl_zkj_config_entry {
	const char *name;
	const char *value;
} ctl_zkj_config_entry;

typedef struct ctl_zkj_config {
	ctl_zkj_config_entry *entries; /* overrides only */
	int32_t nentries;
} ctl_zkj_config;

/* Encode {"version":1,"config":{"retention.ms":"86400000",...}}: all values
 * strings, in the order a java.util.Properties filled in entries' order
 * iterates. Names must be distinct. */
int ctl_zkj_config_encode(const ctl_zkj_config *c, char **out, size_t *len);
/* Decode version 1; every config value must be a string. */
int ctl_zkj_config_decode(const char *data, int len, proto_arena *a, ctl_zkj_config *out);

/* ---- /config/changes/config_change_<seq> (persistent sequential) ---- */

typedef struct ctl_zkj_config_change {
	int32_t version;         /* decode: 1 or 2 */
	const char *entity_type; /* "topics", "brokers", "users", "clients", "ips" */
	const char *entity_name; /* "orders"; for v2 everything after the first '/'
	                          * of entity_path (e.g. "alice/clients/app") */
} ctl_zkj_config_change;

/* Encode v2: {"version":2,"entity_path":"topics/orders"}. */
int ctl_zkj_config_change_encode(const char *entity_type, const char *entity_name, char **out,
				 size_t *len);
/* Decode v1 {"version":1,"entity_type":"topics","entity_name":"orders"} and
 * v2. Type and name must not be empty. */
int ctl_zkj_config_change_decode(const char *data, int len, proto_arena *a,
				 ctl_zkj_config_change *out);

/* ---- /latest_producer_id_block (ProducerIdBlockZNode), persistent ---- */

typedef struct ctl_zkj_pid_block {
	int32_t broker;      /* the broker that took the block */
	int64_t block_start; /* first producer id of the block */
	int64_t block_end;   /* last one, inclusive (start + 999 for Kafka's blocks) */
} ctl_zkj_pid_block;

/* Encode {"version":1,"broker":1,"block_start":"4000","block_end":"4999"}
 * (start and end are decimal strings). Needs 0 <= start <= end. */
int ctl_zkj_pid_block_encode(const ctl_zkj_pid_block *b, char **out, size_t *len);
int ctl_zkj_pid_block_decode(const char *data, int len, ctl_zkj_pid_block *out);

/* ---- /cluster/id (ClusterIdZNode), persistent ---- */

/* Encode {"version":"1","id":"<id>"} (the version is a string). Kafka's ids
 * are 22-char base64url UUIDs; any non-empty string is written and read. */
int ctl_zkj_cluster_id_encode(const char *id, char **out, size_t *len);
int ctl_zkj_cluster_id_decode(const char *data, int len, proto_arena *a, const char **id);

/* ---- /isr_change_notification/isr_change_<seq> (persistent sequential) ---- */

typedef struct ctl_zkj_topic_partition {
	const char *topic;
	int32_t partition;
} ctl_zkj_topic_partition;

/* Encode v1 {"version":1,"partitions":[{"topic":"t","partition":0},...]} in
 * the caller's order (Kafka iterates a Scala Set, whose order past 4 entries
 * we do not reproduce; nothing reads the order). */
int ctl_zkj_isr_change_encode(const ctl_zkj_topic_partition *p, int32_t n, char **out,
			      size_t *len);
int ctl_zkj_isr_change_decode(const char *data, int len, proto_arena *a,
			      ctl_zkj_topic_partition **out, int32_t *n);

/* ---- /admin/reassign_partitions (ReassignPartitionsZNode), persistent ---- */

/* One partition's target replicas, as Kafka's ZooKeeper-mode tools write
 * them (kafka-reassign-partitions.sh before 2.4/3.0; KIP-455 deprecated the
 * znode, the controller still honours it). */
typedef struct ctl_zkj_reassignment {
	const char *topic;
	int32_t partition;
	int32_t *replicas;  /* the target replica list, in order */
	int32_t nreplicas;
} ctl_zkj_reassignment;

/* Encode {"version":1,"partitions":[{"topic":"t","partition":0,
 * "replicas":[2,3,4]},...]} in the caller's order (members in the order
 * Kafka's encoder writes them). Topics must be non-empty, partitions >= 0
 * and replica ids >= 0; a list may be empty (a tool may write one: the
 * controller refuses it, not the codec). */
int ctl_zkj_reassign_encode(const ctl_zkj_reassignment *r, int32_t n, char **out, size_t *len);
/* Decode version 1. Replica lists are read as written (any int32 values,
 * repeats and empty lists included: judging them is the controller's, as
 * in Kafka, which answers each bad entry by dropping it); other members of
 * an entry (a tool's "log_dirs") are ignored. */
int ctl_zkj_reassign_decode(const char *data, int len, proto_arena *a,
			    ctl_zkj_reassignment **out, int32_t *n);
/* ---- /admin/preferred_replica_election (PreferredReplicaElectionZNode) ---- */

/* The partitions an operator asks the controller to give back to their
 * preferred replica (Kafka 2.x's kafka-preferred-replica-election.sh wrote
 * it; the controller deletes it when done, CLUSTER.md 2.7). Encode
 * {"version":1,"partitions":[{"topic":"t","partition":0},...]} as the ISR
 * change notification does. Decode as Kafka reads it: the partitions
 * member is what counts ("version", when present, must be 1; a hand-made
 * znode without it is taken); a partition may be named twice. */
int ctl_zkj_preferred_election_encode(const ctl_zkj_topic_partition *p, int32_t n, char **out,
				      size_t *len);
int ctl_zkj_preferred_election_decode(const char *data, int len, proto_arena *a,
				      ctl_zkj_topic_partition **out, int32_t *n);

#endif
