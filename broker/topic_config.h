/*
 * topic_config.h - topic-level configuration: Kafka's topic config names
 * (Kafka 4.3 "Topic Configs" doc), their validation, and the effective
 * values of a topic (its overrides over the broker's defaults).
 */
#ifndef SAMSA_BROKER_TOPIC_CONFIG_H
#define SAMSA_BROKER_TOPIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config.h"
#include "controller/ctl.h"
#include "storage/log.h"

/* The effective settings of one topic. */
typedef struct brk_topic_config {
	log_config log;                   /* segment.*, index.*, flush.* */
	int32_t max_message_bytes;        /* max.message.bytes (message.max.bytes) */
	bool log_append_time;             /* message.timestamp.type == LogAppendTime */
	int64_t timestamp_before_max_ms;  /* message.timestamp.before.max.ms */
	int64_t timestamp_after_max_ms;   /* message.timestamp.after.max.ms */
	int16_t min_insync_replicas;      /* min.insync.replicas */
	int64_t retention_ms;             /* retention.ms (-1 = forever) */
	int64_t retention_bytes;          /* retention.bytes (-1 = no limit) */
	bool compact;                     /* cleanup.policy contains compact */
	bool delete_policy;               /* cleanup.policy contains delete */
	int64_t file_delete_delay_ms;     /* file.delete.delay.ms (log.segment.delete.delay.ms) */
	/* compaction (log.cleaner.* broker defaults; helper H) */
	int64_t delete_retention_ms;      /* delete.retention.ms */
	int64_t min_compaction_lag_ms;    /* min.compaction.lag.ms */
	int64_t max_compaction_lag_ms;    /* max.compaction.lag.ms */
	double min_cleanable_ratio;       /* min.cleanable.dirty.ratio */
} brk_topic_config;

/*
 * Effective settings of a topic from the broker config and the overrides
 * (already validated; an override that does not parse is ignored and the
 * broker default used). No allocation.
 */
void brk_topic_config_build(const brk_config *bc, const ctl_config_entry *overrides,
			    int32_t noverrides, brk_topic_config *out);

/*
 * Check one override as CreateTopics/AlterConfigs must (Kafka's LogConfig
 * validators). value NULL means "unset" and is accepted for a known name.
 * Returns KERR_NONE, or KERR_INVALID_CONFIG with a message in msg (msgsize
 * bytes, in Kafka's ConfigException wording) for an unknown name or a bad
 * value.
 */
int brk_topic_config_check(const char *name, int32_t name_len, const char *value,
			   int32_t value_len, char *msg, size_t msgsize);

/* Number of known topic configs (for describing every config). */
int brk_topic_config_count(void);

/* One topic config as DescribeConfigs shows it. */
typedef struct brk_topic_config_entry {
	const char *name;
	char value[BRK_CONFIG_VALUE_MAX];
	int8_t source;     /* BRK_CONFIG_SOURCE_*: of the value in effect */
	int8_t type;       /* BRK_CONFIG_TYPE_* (Kafka's LogConfig type) */
	const char *doc;
	int nsynonyms;     /* the topic override, then the broker key's layers */
	brk_config_synonym synonyms[BRK_CONFIG_MAX_SYNONYMS];
} brk_topic_config_entry;

/*
 * The i-th known topic config (0 <= i < count) of a topic with these
 * overrides, as Kafka's ConfigHelper.createTopicConfigEntry builds it: the
 * value (override, else the broker key's effective value, else the fixed
 * default), the synonyms (the override with source DYNAMIC_TOPIC_CONFIG,
 * then brk_config_synonyms of the broker key of Kafka's
 * ServerTopicConfigSynonyms, e.g. retention.ms -> log.retention.ms), the
 * source of the first synonym (DEFAULT_CONFIG when none), type and
 * documentation. Returns 0, or -1 when i is out of range.
 */
int brk_topic_config_entry_at(const brk_config_layers *layers, const ctl_config_entry *overrides,
			      int32_t noverrides, int i, brk_topic_config_entry *out);

/* The index of topic config name (len bytes), or -1 when unknown. */
int brk_topic_config_find(const char *name, int32_t len);

/*
 * For a topic config of Kafka's LIST type (cleanup.policy, the throttled
 * replica lists), its LogConfig default, the list an APPEND or SUBTRACT of
 * IncrementalAlterConfigs starts from when the topic has no override
 * (Kafka's ConfigurationControlManager.getParts); NULL when name is not a
 * LIST config.
 */
const char *brk_topic_config_list_default(const char *name);

#endif
