/*
 * topic_config.c - Kafka's topic configs: the table of known names with their
 * type and bounds (Kafka 4.3 LogConfig), validation of overrides, and the
 * effective values of a topic.
 */
#include "broker/topic_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"

enum tc_type { TC_LONG, TC_INT, TC_BOOL, TC_DOUBLE, TC_ENUM, TC_LIST, TC_POLICY, TC_ANY };

typedef struct tc_def {
	const char *name;
	enum tc_type type;
	int64_t min, max;      /* TC_LONG / TC_INT bounds */
	const char *const *choices; /* TC_ENUM */
	const char *dflt;      /* fixed default (NULL: the broker key's value) */
	const char *broker_key; /* Kafka's ServerTopicConfigSynonyms, or NULL */
	int8_t config_type;    /* BRK_CONFIG_TYPE_* (Kafka's LogConfig type) */
	const char *doc;       /* documentation, our words */
} tc_def;

static const char *const compression_types[] = { "uncompressed", "zstd", "lz4", "snappy",
						  "gzip", "producer", NULL };
static const char *const timestamp_types[] = { "CreateTime", "LogAppendTime", NULL };

#define CT_BOOL BRK_CONFIG_TYPE_BOOLEAN
#define CT_STR BRK_CONFIG_TYPE_STRING
#define CT_INT BRK_CONFIG_TYPE_INT
#define CT_LONG BRK_CONFIG_TYPE_LONG
#define CT_DOUBLE BRK_CONFIG_TYPE_DOUBLE
#define CT_LIST BRK_CONFIG_TYPE_LIST

/* Sorted by name, as Kafka lists them. */
static const tc_def defs[] = {
	{ "cleanup.policy", TC_POLICY, 0, 0, NULL, NULL, "log.cleanup.policy", CT_LIST,
	  "What happens to old segments: delete (retention by time and size), compact (keep "
	  "the latest record of each key), or both." },
	{ "compression.gzip.level", TC_INT, -1, 9, NULL, NULL, "compression.gzip.level", CT_INT,
	  "The gzip level used when compression.type is gzip." },
	{ "compression.lz4.level", TC_INT, 1, 17, NULL, NULL, "compression.lz4.level", CT_INT,
	  "The lz4 level used when compression.type is lz4." },
	{ "compression.type", TC_ENUM, 0, 0, compression_types, NULL, "compression.type", CT_STR,
	  "The compression of the topic's batches: uncompressed, zstd, lz4, snappy, gzip, or "
	  "producer (keep what the producer sent)." },
	{ "compression.zstd.level", TC_INT, -131072, 22, NULL, NULL, "compression.zstd.level", CT_INT,
	  "The zstd level used when compression.type is zstd." },
	{ "delete.retention.ms", TC_LONG, 0, INT64_MAX, NULL, NULL, "log.cleaner.delete.retention.ms",
	  CT_LONG, "How long a tombstone stays in a compacted log after the cleaner reached it, "
	  "so that consumers see the deletion." },
	{ "file.delete.delay.ms", TC_LONG, 0, INT64_MAX, NULL, NULL, "log.segment.delete.delay.ms",
	  CT_LONG, "How long the files of a deleted segment stay on disk before they are removed." },
	{ "flush.messages", TC_LONG, 1, INT64_MAX, NULL, NULL, "log.flush.interval.messages", CT_LONG,
	  "Force an fsync of the log after this many messages." },
	{ "flush.ms", TC_LONG, 0, INT64_MAX, NULL, NULL, "log.flush.interval.ms", CT_LONG,
	  "Force an fsync of the log when its oldest unflushed message is this old (ms)." },
	{ "follower.replication.throttled.replicas", TC_LIST, 0, 0, NULL, "", NULL, CT_LIST,
	  "Replicas (partition:broker) whose replication on the follower side is throttled, or *." },
	{ "index.interval.bytes", TC_INT, 0, INT32_MAX, NULL, NULL, "log.index.interval.bytes", CT_INT,
	  "Bytes of log between two entries of the offset index." },
	{ "leader.replication.throttled.replicas", TC_LIST, 0, 0, NULL, "", NULL, CT_LIST,
	  "Replicas (partition:broker) whose replication on the leader side is throttled, or *." },
	{ "local.retention.bytes", TC_LONG, -2, INT64_MAX, NULL, NULL, "log.local.retention.bytes",
	  CT_LONG, "With tiered storage, the bytes a partition keeps locally (-2: retention.bytes)." },
	{ "local.retention.ms", TC_LONG, -2, INT64_MAX, NULL, NULL, "log.local.retention.ms", CT_LONG,
	  "With tiered storage, how long segments are kept locally (-2: retention.ms)." },
	{ "max.compaction.lag.ms", TC_LONG, 1, INT64_MAX, NULL, NULL,
	  "log.cleaner.max.compaction.lag.ms", CT_LONG,
	  "The longest a record may stay uncompacted in a compacted log." },
	{ "max.message.bytes", TC_INT, 0, INT32_MAX, NULL, NULL, "message.max.bytes", CT_INT,
	  "The largest record batch the topic accepts (after compression)." },
	{ "message.timestamp.after.max.ms", TC_LONG, 0, INT64_MAX, NULL, NULL,
	  "log.message.timestamp.after.max.ms", CT_LONG,
	  "How far ahead of the broker's clock a CreateTime timestamp may be." },
	{ "message.timestamp.before.max.ms", TC_LONG, 0, INT64_MAX, NULL, NULL,
	  "log.message.timestamp.before.max.ms", CT_LONG,
	  "How far behind the broker's clock a CreateTime timestamp may be." },
	{ "message.timestamp.type", TC_ENUM, 0, 0, timestamp_types, NULL,
	  "log.message.timestamp.type", CT_STR,
	  "CreateTime keeps the producer's timestamps, LogAppendTime replaces them with the "
	  "broker's clock." },
	{ "min.cleanable.dirty.ratio", TC_DOUBLE, 0, 1, NULL, NULL, "log.cleaner.min.cleanable.ratio",
	  CT_DOUBLE, "The share of a compacted log not yet cleaned above which it is cleaned." },
	{ "min.compaction.lag.ms", TC_LONG, 0, INT64_MAX, NULL, NULL,
	  "log.cleaner.min.compaction.lag.ms", CT_LONG,
	  "The shortest a record stays uncompacted in a compacted log." },
	{ "min.insync.replicas", TC_INT, 1, INT32_MAX, NULL, NULL, "min.insync.replicas", CT_INT,
	  "With acks=all, the in-sync replicas a write needs, else NOT_ENOUGH_REPLICAS." },
	{ "preallocate", TC_BOOL, 0, 0, NULL, NULL, "log.preallocate", CT_BOOL,
	  "Create new segment files at their full size." },
	{ "remote.log.copy.disable", TC_BOOL, 0, 0, NULL, "false", NULL, CT_BOOL,
	  "With tiered storage, stop copying segments to remote storage." },
	{ "remote.log.delete.on.disable", TC_BOOL, 0, 0, NULL, "false", NULL, CT_BOOL,
	  "With tiered storage, delete the remote segments when it is turned off." },
	{ "remote.storage.enable", TC_BOOL, 0, 0, NULL, "false", NULL, CT_BOOL,
	  "Turn tiered storage on for the topic (not supported by samsa)." },
	{ "retention.bytes", TC_LONG, INT64_MIN, INT64_MAX, NULL, NULL, "log.retention.bytes", CT_LONG,
	  "The most bytes a partition keeps before its oldest segments are deleted (-1: no limit)." },
	{ "retention.ms", TC_LONG, -1, INT64_MAX, NULL, NULL, "log.retention.ms", CT_LONG,
	  "How long a segment is kept after its newest record before it is deleted (-1: forever)." },
	{ "segment.bytes", TC_INT, 1048576, INT32_MAX, NULL, NULL, "log.segment.bytes", CT_INT,
	  "The size at which the active segment is rolled." },
	{ "segment.index.bytes", TC_INT, 4, INT32_MAX, NULL, NULL, "log.index.size.max.bytes", CT_INT,
	  "The size of a segment's offset index file." },
	{ "segment.jitter.ms", TC_LONG, 0, INT64_MAX, NULL, NULL, "log.roll.jitter.ms", CT_LONG,
	  "A random amount taken off segment.ms so that segments do not all roll at once." },
	{ "segment.ms", TC_LONG, 1, INT64_MAX, NULL, NULL, "log.roll.ms", CT_LONG,
	  "The age at which the active segment is rolled even when not full." },
	{ "unclean.leader.election.enable", TC_BOOL, 0, 0, NULL, NULL,
	  "unclean.leader.election.enable", CT_BOOL,
	  "Let a replica outside the ISR become leader as a last resort, losing data." },
};
#define NDEFS ((int)(sizeof(defs) / sizeof(defs[0])))

static const tc_def *find_def(const char *name, size_t len)
{
	for (int i = 0; i < NDEFS; i++)
		if (strlen(defs[i].name) == len && memcmp(defs[i].name, name, len) == 0)
			return &defs[i];
	return NULL;
}

static int parse_long(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	while (*s == ' ')
		s++;
	long long v = strtoll(s, &end, 10);
	while (*end == ' ')
		end++;
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static bool policy_ok(const char *v)
{
	/* comma-separated subset of {compact, delete}; Kafka trims blanks */
	const char *p = v;
	bool any = false;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && t[-1] == ' ')
			t--;
		size_t n = (size_t)(t - p);
		if (!((n == 7 && memcmp(p, "compact", 7) == 0) || (n == 6 && memcmp(p, "delete", 6) == 0)))
			return false;
		any = true;
		p = *e ? e + 1 : e;
	}
	return any;
}

/* Validate value (NUL-terminated) against d. */
static int check_value(const tc_def *d, const char *value, char *msg, size_t msgsize)
{
	int64_t v;
	switch (d->type) {
	case TC_LONG:
	case TC_INT:
		if (parse_long(value, &v) ||
		    (d->type == TC_INT && (v < INT32_MIN || v > INT32_MAX))) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: Not a number of type %s",
				 value, d->name, d->type == TC_INT ? "INT" : "LONG");
			return KERR_INVALID_CONFIG;
		}
		if (v < d->min) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: Value must be at least %" PRId64,
				 value, d->name, d->min);
			return KERR_INVALID_CONFIG;
		}
		if (v > d->max) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: Value must be no more than %" PRId64,
				 value, d->name, d->max);
			return KERR_INVALID_CONFIG;
		}
		return KERR_NONE;
	case TC_BOOL:
		if (strcasecmp(value, "true") && strcasecmp(value, "false")) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: Expected value to be either true or false",
				 value, d->name);
			return KERR_INVALID_CONFIG;
		}
		return KERR_NONE;
	case TC_DOUBLE: {
		char *end;
		errno = 0;
		double x = strtod(value, &end);
		if (errno || end == value || *end || !(x >= (double)d->min && x <= (double)d->max)) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: Value must be between %" PRId64 " and %" PRId64,
				 value, d->name, d->min, d->max);
			return KERR_INVALID_CONFIG;
		}
		return KERR_NONE;
	}
	case TC_ENUM:
		for (const char *const *c = d->choices; *c; c++)
			if (strcmp(*c, value) == 0)
				return KERR_NONE;
	{
		char list[128] = "";
		for (const char *const *c = d->choices; *c; c++) {
			size_t used = strlen(list);
			snprintf(list + used, sizeof(list) - used, "%s%s", c == d->choices ? "" : ", ", *c);
		}
		snprintf(msg, msgsize, "Invalid value %s for configuration %s: String must be one of: %s",
			 value, d->name, list);
	}
		return KERR_INVALID_CONFIG;
	case TC_POLICY:
		if (!policy_ok(value)) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: String must be one of: compact, delete",
				 value, d->name);
			return KERR_INVALID_CONFIG;
		}
		return KERR_NONE;
	case TC_LIST:
	case TC_ANY:
		return KERR_NONE;
	}
	return KERR_INVALID_CONFIG;
}

int brk_topic_config_check(const char *name, int32_t name_len, const char *value,
			   int32_t value_len, char *msg, size_t msgsize)
{
	if (msgsize)
		msg[0] = '\0';
	const tc_def *d = name && name_len > 0 ? find_def(name, (size_t)name_len) : NULL;
	if (!d) {
		snprintf(msg, msgsize, "Unknown topic config name: %.*s",
			 name && name_len > 0 ? (int)name_len : 0, name ? name : "");
		return KERR_INVALID_CONFIG;
	}
	if (!value || value_len < 0)
		return KERR_NONE;
	char buf[256];
	if ((size_t)value_len >= sizeof(buf)) {
		snprintf(msg, msgsize, "Invalid value for configuration %s: value too long", d->name);
		return KERR_INVALID_CONFIG;
	}
	memcpy(buf, value, (size_t)value_len);
	buf[value_len] = '\0';
	if (memchr(value, '\0', (size_t)value_len)) {
		snprintf(msg, msgsize, "Invalid value for configuration %s", d->name);
		return KERR_INVALID_CONFIG;
	}
	return check_value(d, buf, msg, msgsize);
}

static const char *override_of(const ctl_config_entry *ov, int32_t n, const char *name)
{
	for (int32_t i = n - 1; i >= 0; i--)
		if (ov[i].name && strcmp(ov[i].name, name) == 0)
			return ov[i].value;
	return NULL;
}

static int64_t long_of(const ctl_config_entry *ov, int32_t n, const char *name, int64_t dflt)
{
	const char *s = override_of(ov, n, name);
	const tc_def *d = find_def(name, strlen(name));
	int64_t v;
	if (!s || !d || parse_long(s, &v) || v < d->min || v > d->max)
		return dflt;
	return v;
}

void brk_topic_config_build(const brk_config *bc, const ctl_config_entry *ov, int32_t n,
			    brk_topic_config *out)
{
	memset(out, 0, sizeof(*out));
	log_config_defaults(&out->log);
	out->log.producer_id_expiration_ms = bc->producer_id_expiration_ms;
	out->log.segment_bytes = long_of(ov, n, "segment.bytes", bc->log_segment_bytes);
	out->log.segment_ms = long_of(ov, n, "segment.ms", bc->log_roll_ms);
	out->log.index_interval_bytes =
		(int32_t)long_of(ov, n, "index.interval.bytes", bc->log_index_interval_bytes);
	out->log.max_index_bytes =
		(int32_t)long_of(ov, n, "segment.index.bytes", bc->log_index_size_max_bytes);
	out->log.flush_messages = long_of(ov, n, "flush.messages", bc->log_flush_interval_messages);
	out->log.flush_ms = long_of(ov, n, "flush.ms", bc->log_flush_interval_ms);
	out->max_message_bytes = (int32_t)long_of(ov, n, "max.message.bytes", bc->message_max_bytes);
	const char *tt = override_of(ov, n, "message.timestamp.type");
	out->log_append_time = tt ? strcmp(tt, "LogAppendTime") == 0 : bc->log_append_time;
	out->timestamp_before_max_ms = long_of(ov, n, "message.timestamp.before.max.ms",
					       bc->log_message_timestamp_before_max_ms);
	out->timestamp_after_max_ms = long_of(ov, n, "message.timestamp.after.max.ms",
					      bc->log_message_timestamp_after_max_ms);
	out->min_insync_replicas =
		(int16_t)long_of(ov, n, "min.insync.replicas", bc->min_insync_replicas);
	out->retention_ms = long_of(ov, n, "retention.ms", bc->log_retention_ms);
	out->retention_bytes = long_of(ov, n, "retention.bytes", bc->log_retention_bytes);
	out->file_delete_delay_ms =
		long_of(ov, n, "file.delete.delay.ms", bc->log_segment_delete_delay_ms);
	const char *cp = override_of(ov, n, "cleanup.policy");
	if (!cp || !policy_ok(cp))
		cp = policy_ok(bc->log_cleanup_policy) ? bc->log_cleanup_policy : "delete";
	out->compact = strstr(cp, "compact") != NULL;
	out->delete_policy = strstr(cp, "delete") != NULL;
	out->delete_retention_ms =
		long_of(ov, n, "delete.retention.ms", bc->log_cleaner_delete_retention_ms);
	out->min_compaction_lag_ms =
		long_of(ov, n, "min.compaction.lag.ms", bc->log_cleaner_min_compaction_lag_ms);
	out->max_compaction_lag_ms =
		long_of(ov, n, "max.compaction.lag.ms", bc->log_cleaner_max_compaction_lag_ms);
	out->min_cleanable_ratio = bc->log_cleaner_min_cleanable_ratio;
	const char *ratio = override_of(ov, n, "min.cleanable.dirty.ratio");
	if (ratio) {
		char *end;
		double x = strtod(ratio, &end);
		if (end != ratio && !*end && x >= 0 && x <= 1)
			out->min_cleanable_ratio = x;
	}
}

int brk_topic_config_count(void)
{
	return NDEFS;
}

/* The value of d for a topic without an override: the broker key's value
 * (Kafka's LogConfig built from KafkaConfig.extractLogConfigMap), else the
 * fixed default. */
static void default_value(const brk_config *bc, const tc_def *d, char *value, size_t valuesize)
{
	if (d->broker_key && brk_config_format(bc, d->broker_key, value, valuesize))
		return;
	snprintf(value, valuesize, "%s", d->dflt ? d->dflt : "");
}

int brk_topic_config_entry_at(const brk_config_layers *layers, const ctl_config_entry *ov,
			      int32_t n, int i, brk_topic_config_entry *out)
{
	if (i < 0 || i >= NDEFS)
		return -1;
	const tc_def *d = &defs[i];
	memset(out, 0, sizeof(*out));
	out->name = d->name;
	out->type = d->config_type;
	out->doc = d->doc;
	const char *s = override_of(ov, n, d->name);
	if (s) {
		snprintf(out->value, sizeof(out->value), "%s", s);
		brk_config_synonym *syn = &out->synonyms[out->nsynonyms++];
		syn->name = d->name;
		snprintf(syn->value, sizeof(syn->value), "%s", s);
		syn->source = BRK_CONFIG_SOURCE_DYNAMIC_TOPIC;
	} else {
		default_value(layers->effective, d, out->value, sizeof(out->value));
	}
	if (d->broker_key)
		out->nsynonyms += brk_config_synonyms(layers, d->broker_key,
						      out->synonyms + out->nsynonyms,
						      BRK_CONFIG_MAX_SYNONYMS - out->nsynonyms);
	out->source = out->nsynonyms ? out->synonyms[0].source : BRK_CONFIG_SOURCE_DEFAULT;
	return 0;
}

int brk_topic_config_find(const char *name, int32_t len)
{
	const tc_def *d = name && len > 0 ? find_def(name, (size_t)len) : NULL;
	return d ? (int)(d - defs) : -1;
}

const char *brk_topic_config_list_default(const char *name)
{
	const tc_def *d = find_def(name, strlen(name));
	if (!d || d->config_type != BRK_CONFIG_TYPE_LIST)
		return NULL;
	/* LogConfig's own defaults (not the broker's): what Kafka's
	 * KafkaConfigSchema.getDefault gives an APPEND or SUBTRACT. */
	return d->type == TC_POLICY ? "delete" : "";
}
