/*
 * config.h - broker configuration: Kafka's server.properties keys, Kafka's
 * defaults (Kafka 4.3 broker config docs). Parsed once into server.cfg.
 */
#ifndef SAMSA_BROKER_CONFIG_H
#define SAMSA_BROKER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct brk_listener {
	char name[32];  /* listener name, e.g. PLAINTEXT */
	char host[256]; /* empty = all interfaces */
	int port;
} brk_listener;

#define BRK_MAX_LISTENERS 4

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
	bool delete_topic_enable;            /* delete.topic.enable (true) */
	int64_t log_segment_bytes;           /* log.segment.bytes (1073741824) */
	int64_t log_roll_ms;                 /* log.roll.ms, else log.roll.hours (168) in ms */
	int32_t log_index_interval_bytes;    /* log.index.interval.bytes (4096) */
	int32_t log_index_size_max_bytes;    /* log.index.size.max.bytes (10485760) */
	int32_t message_max_bytes;           /* message.max.bytes (1048588) */
	int32_t socket_request_max_bytes;    /* socket.request.max.bytes (104857600) */
	int64_t log_flush_interval_messages; /* log.flush.interval.messages (INT64_MAX) */
	int64_t log_flush_interval_ms;       /* log.flush.interval.ms (default: scheduler interval) */
	int64_t log_flush_scheduler_interval_ms; /* log.flush.scheduler.interval.ms (INT64_MAX) */
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
	int32_t producer_id_expiration_ms;   /* producer.id.expiration.ms (86400000, >= 1) */
	char zookeeper_connect[1024];        /* zookeeper.connect (empty: single node) */
	int32_t zookeeper_connection_timeout_ms; /* (18000) */

	/* Which keys of a synonym group were given (config.c keeps Kafka's
	 * precedence with them, whatever the order of the settings): */
	struct {
		uint8_t log_roll;       /* 0 default, 1 log.roll.hours, 2 log.roll.ms */
		uint8_t log_retention;  /* 0 default, 1 .hours, 2 .minutes, 3 .ms */
		bool log_flush_interval_ms; /* else it follows log.flush.scheduler.interval.ms */
		bool log_dirs;          /* log.dirs given: log.dir is then ignored */
		bool broker_id;         /* broker.id given */
		bool node_id;           /* node.id given (value in node_id_value) */
		int32_t node_id_value;
	} given;
} brk_config;

/* Fill cfg with Kafka's defaults. */
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

/* Checks that span keys (listeners present, advertised defaults filled).
 * Returns 0 or -1 with err set. */
int brk_config_finish(brk_config *cfg, char *err, size_t errsize);

#endif
