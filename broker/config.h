/*
 * config.h - broker configuration: Kafka's server.properties keys, Kafka's
 * defaults (Kafka 4.3 broker config docs). Parsed once into server.cfg.
 */
#ifndef SAMSA_BROKER_CONFIG_H
#define SAMSA_BROKER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_config_entry;

/* Kafka's SecurityProtocol: what a listener speaks. */
typedef enum brk_security_protocol {
	BRK_SEC_PLAINTEXT = 0,
	BRK_SEC_SSL,
	BRK_SEC_SASL_PLAINTEXT,
	BRK_SEC_SASL_SSL,
} brk_security_protocol;

typedef struct brk_listener {
	char name[32];  /* listener name, e.g. PLAINTEXT */
	char host[256]; /* empty = all interfaces */
	int port;
	/* From listener.security.protocol.map (brk_config_finish); Kafka's
	 * default map sends each protocol name to itself. */
	brk_security_protocol security_protocol;
} brk_listener;

/* Room for the security keys kept as given (brk_config_security_get). */
#define BRK_SECURITY_PROPS_BYTES (64 * 1024)

#define BRK_MAX_LISTENERS 4
/* Upper bound on the number of described broker config keys. */
#define BRK_CONFIG_MAX_KEYS 256
/* Most entries of max.connections.per.ip.overrides. */
#define BRK_MAX_IP_OVERRIDES 32

typedef struct brk_config {
	brk_listener listeners[BRK_MAX_LISTENERS];      /* listeners (PLAINTEXT://:9092) */
	int nlisteners;
	brk_listener advertised[BRK_MAX_LISTENERS];     /* advertised.listeners (default: listeners) */
	int nadvertised;
	char log_dir[4096];                  /* log.dirs (first entry) / log.dir (/tmp/kafka-logs) */
	int32_t broker_id;                   /* broker.id / node.id (default 0 here: one node) */
	int32_t num_partitions;              /* num.partitions (1) */
	int16_t default_replication_factor;  /* default.replication.factor (1) */
	bool auto_create_topics_enable;      /* auto.create.topics.enable (true) */
	/* ACLs (broker/acl/authorizer.h): off unless authorizer.class.name is set. */
	char authorizer_class_name[256];     /* authorizer.class.name ("") */
	char super_users[4096];              /* super.users (null: ""), ';'-separated */
	bool allow_everyone_if_no_acl_found; /* (false) */
	bool delete_topic_enable;            /* delete.topic.enable (true) */
	int64_t log_segment_bytes;           /* log.segment.bytes (1073741824) */
	int64_t log_roll_ms;                 /* log.roll.ms, else log.roll.hours (168) in ms */
	int32_t log_index_interval_bytes;    /* log.index.interval.bytes (4096) */
	int32_t log_index_size_max_bytes;    /* log.index.size.max.bytes (10485760) */
	int32_t log_max_open_files;          /* log.max.open.files (-1: from the open file
					      * limit; else >= 1), descriptors */
	int32_t message_max_bytes;           /* message.max.bytes (1048588) */
	int32_t socket_request_max_bytes;    /* socket.request.max.bytes (104857600) */
	int64_t log_flush_interval_messages; /* log.flush.interval.messages (INT64_MAX) */
	int64_t log_flush_interval_ms;       /* log.flush.interval.ms (default: scheduler interval) */
	int64_t log_flush_scheduler_interval_ms; /* log.flush.scheduler.interval.ms (INT64_MAX) */
	int32_t log_flush_offset_checkpoint_interval_ms;       /* (60000, >= 0; 0: start and stop only) */
	int32_t log_flush_start_offset_checkpoint_interval_ms; /* (60000, >= 0; 0: start and stop only) */
	int32_t num_recovery_threads_per_data_dir; /* (2, >= 1): fsync threads at shutdown */
	bool log_append_time;                /* log.message.timestamp.type (CreateTime -> false) */
	int64_t log_message_timestamp_before_max_ms; /* (INT64_MAX) */
	int64_t log_message_timestamp_after_max_ms;  /* (3600000) */
	int64_t log_retention_ms;            /* log.retention.ms/minutes/hours (168 h) */
	int64_t log_retention_bytes;         /* log.retention.bytes (-1) */
	int64_t log_retention_check_interval_ms; /* (300000) */
	int16_t min_insync_replicas;         /* min.insync.replicas (1) */
	int32_t num_network_threads;         /* accepted for compatibility */
	int32_t num_io_threads;              /* accepted for compatibility */
	int32_t socket_send_buffer_bytes;    /* socket.send.buffer.bytes (102400; -1 = OS) */
	int32_t socket_receive_buffer_bytes; /* socket.receive.buffer.bytes (102400; -1 = OS) */
	int32_t group_initial_rebalance_delay_ms; /* (3000) */
	int32_t group_min_session_timeout_ms;     /* group.min.session.timeout.ms (6000) */
	int32_t group_max_session_timeout_ms;     /* group.max.session.timeout.ms (1800000) */
	int32_t group_max_size;                   /* group.max.size (2147483647, >= 1) */
	int32_t offsets_topic_num_partitions;     /* (50) */
	int16_t offsets_topic_replication_factor; /* (3, capped to live brokers) */
	int32_t offsets_topic_segment_bytes;      /* offsets.topic.segment.bytes (104857600) */
	int32_t offset_metadata_max_bytes;        /* offset.metadata.max.bytes (4096) */
	int32_t offsets_retention_minutes;        /* offsets.retention.minutes (10080, >= 1) */
	int64_t offsets_retention_check_interval_ms; /* offsets.retention.check.interval.ms (600000) */
	int16_t transaction_state_log_replication_factor; /* (3, capped to live brokers) */
	int16_t transaction_state_log_min_isr;            /* (2, capped to the replication factor) */
	int32_t transaction_state_log_num_partitions;     /* (50) */
	int32_t transaction_state_log_segment_bytes;      /* (104857600) */
	int32_t transaction_max_timeout_ms;               /* transaction.max.timeout.ms (900000) */
	int32_t transactional_id_expiration_ms;           /* transactional.id.expiration.ms (604800000) */
	int32_t transaction_abort_timed_out_transaction_cleanup_interval_ms; /* (10000) */
	int32_t transaction_remove_expired_transaction_cleanup_interval_ms;  /* (3600000) */
	bool transaction_partition_verification_enable; /* (true; KIP-890) */
	int32_t producer_id_expiration_ms;   /* producer.id.expiration.ms (86400000, >= 1) */
	char zookeeper_connect[1024];        /* zookeeper.connect (empty: single node) */
	/* Cluster mode (Kafka 3.x's ZooKeeper mode: KafkaConfig and
	 * ReplicationConfigs), for the controller, the replica fetchers and
	 * the partition layer. */
	int32_t zookeeper_session_timeout_ms;    /* zookeeper.session.timeout.ms (18000) */
	int32_t zookeeper_connection_timeout_ms; /* (null: zookeeper.session.timeout.ms) */
	bool zookeeper_set_acl;                  /* zookeeper.set.acl (false; accepted) */
	char broker_rack[256];                   /* broker.rack (null: "") */
	int32_t request_timeout_ms;              /* request.timeout.ms (30000): inter-broker requests */
	int32_t controller_socket_timeout_ms;    /* controller.socket.timeout.ms (30000) */
	int64_t replica_lag_time_max_ms;         /* replica.lag.time.max.ms (30000) */
	int32_t replica_socket_timeout_ms;       /* (30000, >= replica.fetch.wait.max.ms) */
	int32_t replica_socket_receive_buffer_bytes; /* (65536; -1 = OS) */
	int32_t replica_fetch_max_bytes;         /* replica.fetch.max.bytes (1048576, >= 0) */
	int32_t replica_fetch_wait_max_ms;       /* (500, <= replica.lag.time.max.ms) */
	int32_t replica_fetch_min_bytes;         /* replica.fetch.min.bytes (1) */
	int32_t replica_fetch_response_max_bytes; /* (10485760, >= 0) */
	int32_t replica_fetch_backoff_ms;        /* replica.fetch.backoff.ms (1000, >= 0) */
	int32_t num_replica_fetchers;            /* num.replica.fetchers (1, >= 1; dynamic) */
	int64_t replica_high_watermark_checkpoint_interval_ms; /* (5000, >= 1) */
	bool controlled_shutdown_enable;         /* controlled.shutdown.enable (true) */
	int32_t controlled_shutdown_max_retries; /* (3) */
	int64_t controlled_shutdown_retry_backoff_ms; /* (5000) */
	bool auto_leader_rebalance_enable;       /* auto.leader.rebalance.enable (true) */
	int64_t leader_imbalance_check_interval_seconds; /* (300, >= 1) */
	int32_t leader_imbalance_per_broker_percentage;  /* (10) */
	int32_t offsets_commit_timeout_ms;       /* offsets.commit.timeout.ms (5000, >= 1) */
	/* Broker defaults of topic configs (Kafka's ServerTopicConfigSynonyms): */
	char log_cleanup_policy[32];         /* log.cleanup.policy (delete) */
	int64_t log_cleaner_delete_retention_ms;   /* (86400000) */
	int64_t log_cleaner_min_compaction_lag_ms; /* (0) */
	int64_t log_cleaner_max_compaction_lag_ms; /* (INT64_MAX) */
	double log_cleaner_min_cleanable_ratio;    /* (0.5, 0..1) */
	int64_t log_segment_delete_delay_ms; /* log.segment.delete.delay.ms (60000) */
	int64_t log_roll_jitter_ms;          /* log.roll.jitter.ms, else .hours (0) */
	bool log_preallocate;                /* log.preallocate (false) */
	char compression_type[16];           /* compression.type (producer) */
	int32_t compression_gzip_level;      /* compression.gzip.level (-1) */
	int32_t compression_lz4_level;       /* compression.lz4.level (9) */
	int32_t compression_zstd_level;      /* compression.zstd.level (3) */
	bool unclean_leader_election_enable; /* (false) */
	int64_t log_local_retention_ms;      /* log.local.retention.ms (-2) */
	int64_t log_local_retention_bytes;   /* log.local.retention.bytes (-2) */
	/* The log cleaner (Kafka's CleanerConfig; helper H): */
	bool log_cleaner_enable;             /* log.cleaner.enable (true) */
	int32_t log_cleaner_threads;         /* log.cleaner.threads (1, >= 0) */
	int64_t log_cleaner_backoff_ms;      /* log.cleaner.backoff.ms (15000, >= 0) */
	int64_t log_cleaner_dedupe_buffer_size; /* log.cleaner.dedupe.buffer.size (134217728) */
	int32_t log_cleaner_io_buffer_size;  /* log.cleaner.io.buffer.size (524288, >= 0) */
	double log_cleaner_io_buffer_load_factor; /* log.cleaner.io.buffer.load.factor (0.9) */

	/* Connection limits (Kafka's SocketServerConfigs; enforced in conn.c
	 * and listener.c). */
	int32_t max_connections;        /* max.connections (2147483647, >= 0) */
	/* max.connection.creation.rate (2147483647, >= 0; KIP-612: quota/conn_rate.h) */
	int32_t max_connection_creation_rate;
	int32_t max_connections_per_ip; /* max.connections.per.ip (2147483647, >= 0) */
	/* max.connections.per.ip.overrides ("host:count,..."; hosts resolved
	 * once when parsed, kept as numeric addresses, IPv4 as dotted quads). */
	struct brk_ip_override {
		char ip[46]; /* INET6_ADDRSTRLEN */
		int32_t max;
	} max_connections_per_ip_overrides[BRK_MAX_IP_OVERRIDES];
	int32_t nmax_connections_per_ip_overrides;
	int64_t connections_max_idle_ms; /* connections.max.idle.ms (600000) */
	int64_t connections_max_reauth_ms; /* connections.max.reauth.ms (0: no limit; KIP-368) */
	/* queued.max.request.bytes (-1: unbounded; when > 0 at least
	 * socket.request.max.bytes, as Kafka requires). */
	int64_t queued_max_request_bytes;
	int32_t quota_window_num;          /* quota.window.num (11): samples of a client quota */
	int32_t quota_window_size_seconds; /* quota.window.size.seconds (1): span of a sample */
	int32_t controller_quota_window_num;          /* controller.quota.window.num (11; KIP-599) */
	int32_t controller_quota_window_size_seconds; /* controller.quota.window.size.seconds (1) */
	/* Fetch sessions (KIP-227; broker/fetch_session.c). Kafka's
	 * min.incremental.fetch.session.eviction.ms is no config but a constant
	 * (KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120000). */
	int32_t max_incremental_fetch_session_cache_slots; /* (1000, >= 0) */
	int32_t max_request_partition_size_limit; /* max.request.partition.size.limit (2000, >= 1) */

	/* Synonym groups (Kafka's precedence, e.g. log.retention.ms over
	 * .minutes over .hours, whatever the order of the settings): the
	 * precedence level of the key that set each group's effective value,
	 * 0 while none has (config.c's key table gives each key its level). */
	struct {
		uint8_t log_roll;        /* log.roll.hours 1, log.roll.ms 2 */
		uint8_t log_roll_jitter; /* log.roll.jitter.hours 1, .ms 2 */
		uint8_t log_retention;   /* log.retention.hours 1, .minutes 2, .ms 3 */
		uint8_t log_flush_interval_ms; /* log.flush.scheduler.interval.ms 1, log.flush.interval.ms 2 */
		uint8_t log_dir;         /* log.dir 1, log.dirs 2 */
		uint8_t broker_id;       /* node.id 1, broker.id 2 */
		uint8_t zookeeper_connection_timeout_ms; /* zookeeper.session.timeout.ms 1,
							  * zookeeper.connection.timeout.ms 2 */
	} level;
	/* The values of keys whose effect is in another field, as given (for
	 * describing them), and which described keys were set. */
	struct {
		int32_t node_id;                 /* node.id (null) */
		int32_t log_roll_hours;          /* log.roll.hours (168) */
		int32_t log_roll_jitter_hours;   /* log.roll.jitter.hours (0) */
		int32_t log_retention_hours;     /* log.retention.hours (168) */
		int32_t log_retention_minutes;   /* log.retention.minutes (null) */
		/* Which described keys (brk_config_key_at index) were set, by a
		 * properties file, an --override or a dynamic config. */
		uint8_t keys[BRK_CONFIG_MAX_KEYS / 8];
	} given;
	/* The keys the security modules read as Kafka does, per listener:
	 * "ssl.*", "sasl.*", "listener.name.*", "listener.security.protocol.map",
	 * "inter.broker.listener.name", "security.inter.broker.protocol", kept as given: "key\0value\0" pairs, later settings after earlier
	 * ones (brk_config_security_get). */
	char security_props[BRK_SECURITY_PROPS_BYTES];
	uint32_t security_props_len;
	/* The advertised listener other brokers are reached on
	 * (inter.broker.listener.name / security.inter.broker.protocol;
	 * brk_config_finish resolves it). */
	char inter_broker_listener[32];
} brk_config;

/* Fill cfg with Kafka's defaults (each key's default through its parser). */
void brk_config_defaults(brk_config *cfg);

/*
 * Apply one "key=value" setting (the form of both a properties line and an
 * --override). Unknown keys are reported on warn and accepted. Returns 0, or
 * -1 with a message for the user in err (errsize bytes) on a bad value.
 */
int brk_config_set(brk_config *cfg, const char *key, const char *value, FILE *warn,
		   char *err, size_t errsize);

/* Read a Java-style properties file (comments #/!, key=value or key: value,
 * line continuations) through brk_config_set. Returns 0 or -1 with err set. */
int brk_config_load(brk_config *cfg, const char *path, FILE *warn, char *err, size_t errsize);

/*
 * The value of a security key for a listener, as Kafka's
 * ListenerName.configPrefix lookups do: "listener.name.<name in lower
 * case>.<key>" when set, else "<key>"; the last setting of a key wins.
 * listener may be NULL (the key alone). Returns a pointer into cfg (valid
 * while cfg is unchanged) or NULL when neither is set.
 */
const char *brk_config_security_get(const brk_config *cfg, const char *listener, const char *key);

/* The protocol name as Kafka writes it ("SASL_SSL"). */
const char *brk_security_protocol_name(brk_security_protocol p);

/* Checks that span keys (listeners present, advertised defaults filled).
 * Returns 0 or -1 with err set. */
int brk_config_finish(brk_config *cfg, char *err, size_t errsize);

/* ---- describing and changing configs (DescribeConfigs, KIP-226) ---- */

/* Kafka's DescribeConfigsResponse.ConfigSource ids. */
enum {
	BRK_CONFIG_SOURCE_UNKNOWN = 0,
	BRK_CONFIG_SOURCE_DYNAMIC_TOPIC = 1,          /* a topic override */
	BRK_CONFIG_SOURCE_DYNAMIC_BROKER = 2,         /* dynamic, this broker */
	BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER = 3, /* dynamic, cluster-wide */
	BRK_CONFIG_SOURCE_STATIC_BROKER = 4,          /* server.properties / --override */
	BRK_CONFIG_SOURCE_DEFAULT = 5,                /* Kafka's default */
	BRK_CONFIG_SOURCE_DYNAMIC_BROKER_LOGGER = 6,
};

/* Kafka's DescribeConfigsResponse.ConfigType ids. */
enum {
	BRK_CONFIG_TYPE_UNKNOWN = 0,
	BRK_CONFIG_TYPE_BOOLEAN = 1,
	BRK_CONFIG_TYPE_STRING = 2,
	BRK_CONFIG_TYPE_INT = 3,
	BRK_CONFIG_TYPE_SHORT = 4,
	BRK_CONFIG_TYPE_LONG = 5,
	BRK_CONFIG_TYPE_DOUBLE = 6,
	BRK_CONFIG_TYPE_LIST = 7,
	BRK_CONFIG_TYPE_CLASS = 8,
	BRK_CONFIG_TYPE_PASSWORD = 9,
};

/* One broker config key this broker describes. */
typedef struct brk_config_key {
	const char *name;
	int8_t type;       /* BRK_CONFIG_TYPE_* (Kafka's ConfigDef type) */
	bool dynamic;      /* changeable at runtime (Kafka's
			    * DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS) and applied
			    * at once here; otherwise read-only */
	const char *dflt;  /* Kafka's ConfigDef default in Kafka's string form
			    * (what brk_config_defaults sets and
			    * brk_config_format gives back); NULL when Kafka's
			    * default is null */
	const char *doc;   /* documentation, our words */
} brk_config_key;

/* The described broker keys: count, the i-th (NULL out of range), by name
 * (NULL when unknown). */
int brk_config_key_count(void);
const brk_config_key *brk_config_key_at(int i);
const brk_config_key *brk_config_key_find(const char *name);

/*
 * The value of broker key name in cfg, in Kafka's string form, into out
 * (outsize bytes): the effective value, so log.retention.ms is given even
 * when only log.retention.hours was set. Returns false (out "") for an
 * unknown key.
 */
bool brk_config_format(const brk_config *cfg, const char *name, char *out, size_t outsize);

/* Whether name is a key of Kafka's PASSWORD type (ssl.key.password,
 * ssl.keystore.password, ssl.truststore.password, ssl.keystore.key,
 * ssl.keystore.certificate.chain, ssl.truststore.certificates,
 * sasl.jaas.config, password.encoder.secret, password.encoder.old.secret),
 * also under a "listener.name.<l>." prefix (and "<mechanism>." before
 * sasl.jaas.config): the keys Kafka never shows and stores only
 * encrypted. */
bool brk_config_is_password(const char *name);

/* Whether key name was set in cfg (file, --override, or a dynamic config
 * applied with brk_config_set). */
bool brk_config_was_given(const brk_config *cfg, const char *name);

/*
 * The layers of broker config, lowest precedence last (Kafka's
 * DynamicBrokerConfig): dynamic configs of this broker, cluster-wide
 * dynamic defaults, the static config (server.properties and --override),
 * Kafka's defaults. effective is the result of all of them.
 */
typedef struct brk_config_layers {
	const brk_config *effective;
	const brk_config *static_cfg;
	const struct ctl_config_entry *dynamic_broker;   /* DYNAMIC_BROKER_CONFIG */
	int32_t ndynamic_broker;
	const struct ctl_config_entry *dynamic_default;  /* DYNAMIC_DEFAULT_BROKER_CONFIG */
	int32_t ndynamic_default;
} brk_config_layers;

#define BRK_CONFIG_VALUE_MAX 512
#define BRK_CONFIG_MAX_SYNONYMS 12

/* One synonym of a described config (DescribeConfigsSynonym). */
typedef struct brk_config_synonym {
	const char *name;                  /* static string or owned by the layers */
	char value[BRK_CONFIG_VALUE_MAX];
	int8_t source;                     /* BRK_CONFIG_SOURCE_* */
} brk_config_synonym;

/*
 * The synonyms of broker key name as Kafka's ConfigHelper.configSynonyms
 * lists them: for each of its names (Kafka's brokerConfigSynonyms, e.g.
 * log.retention.ms, log.retention.minutes, log.retention.hours), the dynamic
 * broker values, then the dynamic default values, then the static values,
 * then the defaults; the entries before the first one named name itself
 * are dropped. Writes at most max into out and returns the count.
 */
int brk_config_synonyms(const brk_config_layers *layers, const char *name,
			brk_config_synonym *out, int max);

/*
 * Rebuild the effective config: *out = *static_cfg with the cluster-wide
 * dynamic defaults, then this broker's dynamic configs applied by
 * brk_config_set (Kafka's precedence: per-broker over default over static;
 * synonym precedence such as log.retention.ms over .hours is kept), the
 * keystore and truststore keys of Kafka's SslConfigs.RECONFIGURABLE_CONFIGS
 * included (bare or "listener.name.<l>." prefixed). A
 * dynamic entry that does not apply (bad value, key not dynamic) is
 * reported on warn (may be NULL) and skipped. Returns 0, or -1 when a
 * value could not be set (a bad value, or the security keys over
 * BRK_SECURITY_PROPS_BYTES in all), the first such one described in err
 * (errsize bytes, may be NULL): the same check that refuses such a change
 * in the request (brk_dynamic_config_check_rebuild).
 */
int brk_config_rebuild(const brk_config_layers *layers, brk_config *out, FILE *warn, char *err,
		       size_t errsize);

/* Whether name is listener.name.<l>.max.connection.creation.rate (a
 * dynamic listener key, kept with the security keys). */
bool brk_config_is_listener_rate_key(const char *name);

/* The listener this broker advertises to clients (Metadata,
 * DescribeCluster): the first of advertised.listeners, else the first of
 * listeners; NULL when neither has one. Points into cfg. */
const brk_listener *brk_config_advertised(const brk_config *cfg);

/* The host to advertise for l: its host, or, when it has none (or l is
 * NULL), this machine's host name as Kafka advertises the canonical host
 * name ("localhost" if that fails). Points to l or to a static buffer. */
const char *brk_config_advertised_host(const brk_listener *l);

#endif
