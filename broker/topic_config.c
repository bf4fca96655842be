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
	const char *dflt;      /* fixed default (NULL: from the broker config) */
} tc_def;

static const char *const compression_types[] = { "uncompressed", "zstd", "lz4", "snappy",
						  "gzip", "producer", NULL };
static const char *const timestamp_types[] = { "CreateTime", "LogAppendTime", NULL };

/* Sorted by name, as Kafka lists them. */
static const tc_def defs[] = {
	{ "cleanup.policy", TC_POLICY, 0, 0, NULL, "delete" },
	{ "compression.gzip.level", TC_INT, -1, 9, NULL, "-1" },
	{ "compression.lz4.level", TC_INT, 1, 17, NULL, "9" },
	{ "compression.type", TC_ENUM, 0, 0, compression_types, "producer" },
	{ "compression.zstd.level", TC_INT, -131072, 22, NULL, "3" },
	{ "delete.retention.ms", TC_LONG, 0, INT64_MAX, NULL, "86400000" },
	{ "file.delete.delay.ms", TC_LONG, 0, INT64_MAX, NULL, "60000" },
	{ "flush.messages", TC_LONG, 1, INT64_MAX, NULL, NULL },
	{ "flush.ms", TC_LONG, 0, INT64_MAX, NULL, NULL },
	{ "follower.replication.throttled.replicas", TC_LIST, 0, 0, NULL, "" },
	{ "index.interval.bytes", TC_INT, 0, INT32_MAX, NULL, NULL },
	{ "leader.replication.throttled.replicas", TC_LIST, 0, 0, NULL, "" },
	{ "local.retention.bytes", TC_LONG, -2, INT64_MAX, NULL, "-2" },
	{ "local.retention.ms", TC_LONG, -2, INT64_MAX, NULL, "-2" },
	{ "max.compaction.lag.ms", TC_LONG, 1, INT64_MAX, NULL, "9223372036854775807" },
	{ "max.message.bytes", TC_INT, 0, INT32_MAX, NULL, NULL },
	{ "message.timestamp.after.max.ms", TC_LONG, 0, INT64_MAX, NULL, NULL },
	{ "message.timestamp.before.max.ms", TC_LONG, 0, INT64_MAX, NULL, NULL },
	{ "message.timestamp.type", TC_ENUM, 0, 0, timestamp_types, NULL },
	{ "min.cleanable.dirty.ratio", TC_DOUBLE, 0, 1, NULL, "0.5" },
	{ "min.compaction.lag.ms", TC_LONG, 0, INT64_MAX, NULL, "0" },
	{ "min.insync.replicas", TC_INT, 1, INT32_MAX, NULL, NULL },
	{ "preallocate", TC_BOOL, 0, 0, NULL, "false" },
	{ "remote.log.copy.disable", TC_BOOL, 0, 0, NULL, "false" },
	{ "remote.log.delete.on.disable", TC_BOOL, 0, 0, NULL, "false" },
	{ "remote.storage.enable", TC_BOOL, 0, 0, NULL, "false" },
	{ "retention.bytes", TC_LONG, INT64_MIN, INT64_MAX, NULL, NULL },
	{ "retention.ms", TC_LONG, -1, INT64_MAX, NULL, NULL },
	{ "segment.bytes", TC_INT, 1048576, INT32_MAX, NULL, NULL },
	{ "segment.index.bytes", TC_INT, 4, INT32_MAX, NULL, NULL },
	{ "segment.jitter.ms", TC_LONG, 0, INT64_MAX, NULL, "0" },
	{ "segment.ms", TC_LONG, 1, INT64_MAX, NULL, NULL },
	{ "unclean.leader.election.enable", TC_BOOL, 0, 0, NULL, "false" },
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
	const char *cp = override_of(ov, n, "cleanup.policy");
	if (!cp || !policy_ok(cp))
		cp = "delete";
	out->compact = strstr(cp, "compact") != NULL;
	out->delete_policy = strstr(cp, "delete") != NULL;
}

int brk_topic_config_count(void)
{
	return NDEFS;
}

const char *brk_topic_config_describe(const brk_config *bc, const ctl_config_entry *ov,
				      int32_t n, int i, char *value, size_t valuesize,
				      bool *is_override)
{
	if (i < 0 || i >= NDEFS)
		return NULL;
	const tc_def *d = &defs[i];
	const char *s = override_of(ov, n, d->name);
	*is_override = s != NULL;
	if (s) {
		snprintf(value, valuesize, "%s", s);
		return d->name;
	}
	if (d->dflt) {
		snprintf(value, valuesize, "%s", d->dflt);
		return d->name;
	}
	brk_topic_config tc;
	brk_topic_config_build(bc, NULL, 0, &tc);
	int64_t v = 0;
	const char *name = d->name;
	if (!strcmp(name, "flush.messages"))
		v = tc.log.flush_messages;
	else if (!strcmp(name, "flush.ms"))
		v = tc.log.flush_ms;
	else if (!strcmp(name, "index.interval.bytes"))
		v = tc.log.index_interval_bytes;
	else if (!strcmp(name, "max.message.bytes"))
		v = tc.max_message_bytes;
	else if (!strcmp(name, "message.timestamp.after.max.ms"))
		v = tc.timestamp_after_max_ms;
	else if (!strcmp(name, "message.timestamp.before.max.ms"))
		v = tc.timestamp_before_max_ms;
	else if (!strcmp(name, "min.insync.replicas"))
		v = tc.min_insync_replicas;
	else if (!strcmp(name, "retention.bytes"))
		v = tc.retention_bytes;
	else if (!strcmp(name, "retention.ms"))
		v = tc.retention_ms;
	else if (!strcmp(name, "segment.bytes"))
		v = tc.log.segment_bytes;
	else if (!strcmp(name, "segment.index.bytes"))
		v = tc.log.max_index_bytes;
	else if (!strcmp(name, "segment.ms"))
		v = tc.log.segment_ms;
	if (!strcmp(name, "message.timestamp.type"))
		snprintf(value, valuesize, "%s", tc.log_append_time ? "LogAppendTime" : "CreateTime");
	else
		snprintf(value, valuesize, "%" PRId64, v);
	return d->name;
}
