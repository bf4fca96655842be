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

/*
 * The i-th known topic config (0 <= i < count): its name, and in value
 * (valuesize bytes) its effective value for a topic with these overrides.
 * *is_override tells whether the topic sets it (Kafka's config source
 * DYNAMIC_TOPIC_CONFIG) or it comes from the broker (DEFAULT_CONFIG /
 * STATIC_BROKER_CONFIG). Returns the name, or NULL when i is out of range.
 */
const char *brk_topic_config_describe(const brk_config *bc, const ctl_config_entry *overrides,
				      int32_t noverrides, int i, char *value, size_t valuesize,
				      bool *is_override);

#endif
