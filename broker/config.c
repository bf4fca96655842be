/*
 * config.c - server.properties: Kafka's broker keys, defaults and validators
 * (Kafka 4.3 broker configuration docs; ServerLogConfigs / KafkaConfig), and
 * a reader for Java's properties file format (java.util.Properties.load).
 *
 * Values are trimmed as Kafka's ConfigDef does before they are parsed. A key
 * we do not know is accepted with a warning; a key Kafka knows that has no
 * effect here is accepted silently (known_ignored below).
 */
#include "broker/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "controller/ctl.h"

#define MS_PER_MINUTE INT64_C(60000)
#define MS_PER_HOUR INT64_C(3600000)

void brk_config_defaults(brk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* listeners=PLAINTEXT://:9092 */
	snprintf(cfg->listeners[0].name, sizeof(cfg->listeners[0].name), "PLAINTEXT");
	cfg->listeners[0].port = 9092;
	cfg->nlisteners = 1;
	cfg->nadvertised = 0; /* filled from listeners by brk_config_finish */
	snprintf(cfg->log_dir, sizeof(cfg->log_dir), "/tmp/kafka-logs");
	cfg->broker_id = 0;
	cfg->num_partitions = 1;
	cfg->default_replication_factor = 1;
	cfg->auto_create_topics_enable = true;
	cfg->delete_topic_enable = true;
	cfg->log_segment_bytes = 1073741824;
	cfg->log_roll_ms = 168 * MS_PER_HOUR;
	cfg->log_index_interval_bytes = 4096;
	cfg->log_index_size_max_bytes = 10485760;
	cfg->message_max_bytes = 1048588;
	cfg->socket_request_max_bytes = 104857600;
	cfg->log_flush_interval_messages = INT64_MAX;
	cfg->log_flush_scheduler_interval_ms = INT64_MAX;
	cfg->log_flush_interval_ms = INT64_MAX;
	cfg->log_append_time = false;
	cfg->log_message_timestamp_before_max_ms = INT64_MAX;
	cfg->log_message_timestamp_after_max_ms = 3600000;
	cfg->log_retention_ms = 168 * MS_PER_HOUR;
	cfg->log_retention_bytes = -1;
	cfg->log_retention_check_interval_ms = 300000;
	cfg->min_insync_replicas = 1;
	cfg->num_network_threads = 3;
	cfg->num_io_threads = 8;
	cfg->socket_send_buffer_bytes = 102400;
	cfg->socket_receive_buffer_bytes = 102400;
	cfg->group_initial_rebalance_delay_ms = 3000;
	cfg->offsets_topic_num_partitions = 50;
	cfg->offsets_topic_replication_factor = 3;
	cfg->group_min_session_timeout_ms = 6000;
	cfg->group_max_session_timeout_ms = 1800000;
	cfg->group_max_size = INT32_MAX;
	cfg->offsets_topic_segment_bytes = 104857600;
	cfg->offset_metadata_max_bytes = 4096;
	cfg->offsets_retention_minutes = 7 * 24 * 60;
	cfg->offsets_retention_check_interval_ms = 600000;
	cfg->transaction_state_log_replication_factor = 3;
	cfg->transaction_state_log_min_isr = 2;
	cfg->transaction_state_log_num_partitions = 50;
	cfg->transaction_state_log_segment_bytes = 104857600;
	cfg->transaction_max_timeout_ms = 900000;
	cfg->transactional_id_expiration_ms = 604800000;
	cfg->transaction_abort_timed_out_transaction_cleanup_interval_ms = 10000;
	cfg->transaction_remove_expired_transaction_cleanup_interval_ms = 3600000;
	cfg->transaction_partition_verification_enable = true;
	cfg->producer_id_expiration_ms = 86400000;
	cfg->zookeeper_connect[0] = '\0';
	cfg->zookeeper_connection_timeout_ms = 18000;
	snprintf(cfg->log_cleanup_policy, sizeof(cfg->log_cleanup_policy), "delete");
	cfg->log_cleaner_delete_retention_ms = 86400000;
	cfg->log_cleaner_min_compaction_lag_ms = 0;
	cfg->log_cleaner_max_compaction_lag_ms = INT64_MAX;
	cfg->log_cleaner_min_cleanable_ratio = 0.5;
	cfg->log_cleaner_enable = true;
	cfg->log_cleaner_threads = 1;
	cfg->log_cleaner_backoff_ms = 15000;
	cfg->log_cleaner_dedupe_buffer_size = 134217728;
	cfg->log_cleaner_io_buffer_size = 524288;
	cfg->log_cleaner_io_buffer_load_factor = 0.9;
	cfg->max_connections = INT32_MAX;
	cfg->max_connections_per_ip = INT32_MAX;
	cfg->connections_max_idle_ms = 600000;
	cfg->queued_max_request_bytes = -1;
	cfg->max_incremental_fetch_session_cache_slots = 1000;
	cfg->log_segment_delete_delay_ms = 60000;
	cfg->log_roll_jitter_ms = 0;
	cfg->log_preallocate = false;
	snprintf(cfg->compression_type, sizeof(cfg->compression_type), "producer");
	cfg->compression_gzip_level = -1;
	cfg->compression_lz4_level = 9;
	cfg->compression_zstd_level = 3;
	cfg->unclean_leader_election_enable = false;
	cfg->log_local_retention_ms = -2;
	cfg->log_local_retention_bytes = -2;
	cfg->given.log_roll_hours = 168;
	cfg->given.log_retention_hours = 168;
}

/* ---- value parsing ---- */

static int fail(char *err, size_t errsize, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errsize, const char *fmt, ...)
{
	if (err && errsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Copy value without leading/trailing whitespace into out (outsize bytes).
 * Returns the length, or -1 if it does not fit. */
static int trim_copy(const char *value, char *out, size_t outsize)
{
	while (*value && isspace((unsigned char)*value))
		value++;
	size_t n = strlen(value);
	while (n > 0 && isspace((unsigned char)value[n - 1]))
		n--;
	if (n + 1 > outsize)
		return -1;
	memcpy(out, value, n);
	out[n] = '\0';
	return (int)n;
}

/* A decimal integer in [min, max] (Java's Long.parseLong / Integer.parseInt
 * after trimming: optional sign, digits only). */
static int parse_int(const char *key, const char *value, int64_t min, int64_t max, int64_t *out,
		     char *err, size_t errsize)
{
	char buf[64];
	if (trim_copy(value, buf, sizeof(buf)) < 0)
		return fail(err, errsize, "%s: value is not a number", key);
	const char *p = buf;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return fail(err, errsize, "%s=%s: not a number", key, buf);
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return fail(err, errsize, "%s=%s: not a number", key, buf);
	errno = 0;
	long long v = strtoll(buf, NULL, 10);
	if (errno == ERANGE || v < min || v > max)
		return fail(err, errsize, "%s=%s: out of range (%" PRId64 " to %" PRId64 ")", key, buf,
			    min, max);
	*out = v;
	return 0;
}

static int parse_bool(const char *key, const char *value, bool *out, char *err, size_t errsize)
{
	char buf[16];
	if (trim_copy(value, buf, sizeof(buf)) >= 0) {
		if (strcasecmp(buf, "true") == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(buf, "false") == 0) {
			*out = false;
			return 0;
		}
	}
	return fail(err, errsize, "%s=%s: must be true or false", key, value);
}

/*
 * A listener list "NAME://host:port,NAME://[ipv6]:port" (Kafka's
 * CoreUtils.listenerListToEndPoints): names are upper-cased, unique; host
 * may be empty (all interfaces); port 0-65535.
 */
static int parse_listeners(const char *key, const char *value, brk_listener *out, int *nout,
			   char *err, size_t errsize)
{
	char list[2048];
	if (trim_copy(value, list, sizeof(list)) < 0)
		return fail(err, errsize, "%s: value too long", key);
	brk_listener parsed[BRK_MAX_LISTENERS];
	int n = 0;
	char *save = NULL;
	for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[512];
		if (trim_copy(item, one, sizeof(one)) < 0)
			return fail(err, errsize, "%s: listener too long", key);
		if (!one[0])
			continue;
		if (n == BRK_MAX_LISTENERS)
			return fail(err, errsize, "%s: at most %d listeners are supported", key,
				    BRK_MAX_LISTENERS);
		brk_listener l;
		memset(&l, 0, sizeof(l));
		char *sep = strstr(one, "://");
		if (!sep || sep == one)
			return fail(err, errsize,
				    "%s: \"%s\" is not a listener (expected NAME://host:port, e.g. PLAINTEXT://127.0.0.1:9092)",
				    key, one);
		size_t nlen = (size_t)(sep - one);
		if (nlen >= sizeof(l.name))
			return fail(err, errsize, "%s: listener name too long in \"%s\"", key, one);
		for (size_t i = 0; i < nlen; i++) {
			unsigned char c = (unsigned char)one[i];
			if (!isalnum(c) && c != '_' && c != '-' && c != '.')
				return fail(err, errsize, "%s: bad listener name in \"%s\"", key, one);
			l.name[i] = (char)toupper(c);
		}
		char *hp = sep + 3;
		char *colon = strrchr(hp, ':');
		if (!colon)
			return fail(err, errsize, "%s: \"%s\" has no port (expected NAME://host:port)", key,
				    one);
		*colon = '\0';
		const char *host = hp;
		size_t hlen = strlen(host);
		if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
			host++;
			hlen -= 2;
		}
		if (hlen >= sizeof(l.host))
			return fail(err, errsize, "%s: host too long in \"%s\"", key, one);
		for (size_t i = 0; i < hlen; i++) {
			unsigned char c = (unsigned char)host[i];
			if (!isalnum(c) && !strchr("-%._:", c))
				return fail(err, errsize, "%s: bad host \"%.*s\" in listener %s", key,
					    (int)hlen, host, l.name);
		}
		memcpy(l.host, host, hlen);
		l.host[hlen] = '\0';
		int64_t port;
		char pkey[300];
		snprintf(pkey, sizeof(pkey), "%s (port of %s)", key, l.name);
		if (parse_int(pkey, colon + 1, 0, 65535, &port, err, errsize) < 0)
			return -1;
		l.port = (int)port;
		for (int i = 0; i < n; i++) {
			if (strcmp(parsed[i].name, l.name) == 0)
				return fail(err, errsize, "%s: listener name %s is used twice", key, l.name);
			if (l.port != 0 && parsed[i].port == l.port)
				return fail(err, errsize, "%s: port %d is used by two listeners", key, l.port);
		}
		parsed[n++] = l;
	}
	if (n == 0)
		return fail(err, errsize, "%s: no listener given", key);
	memcpy(out, parsed, (size_t)n * sizeof(*out));
	*nout = n;
	return 0;
}

/* ---- keys ---- */

/* Kafka broker keys with no effect here, accepted without a warning.
 * An entry ending in '.' matches every key with that prefix. */
static const char *const known_ignored[] = {
	"socket.", "offsets.", "transaction.", "zookeeper.", "group.", "log.cleaner.",
	"log.retention.", "log.flush.", "log.roll.jitter.", "replica.", "controller.",
	"share.", "sasl.", "ssl.", "metric.", "metrics.", "quota.", "client.quota.",
	"num.recovery.threads.per.data.dir", "num.replica.fetchers",
	"num.replica.alter.log.dirs.threads", "log.cleanup.policy", "log.preallocate",
	"log.delete.delay.ms", "log.dir.failure.timeout.ms", "log.local.retention.",
	"process.roles", "inter.broker.listener.name", "inter.broker.protocol.version",
	"listener.security.protocol.map", "listener.name.", "security.inter.broker.protocol",
	"broker.rack", "broker.id.generation.enable", "reserved.broker.max.id",
	"unclean.leader.election.enable", "compression.type", "auto.leader.rebalance.enable",
	"leader.imbalance.", "queued.max.requests", "connections.max.reauth.ms",
	"max.connection.creation.rate",
	"fetch.max.bytes", "fetch.purgatory.purge.interval.requests",
	"producer.purgatory.purge.interval.requests", "delete.records.purgatory.purge.interval.requests",
	"request.timeout.ms", "background.threads", "authorizer.class.name", "super.users",
	"allow.everyone.if.no.acl.found", "alter.config.policy.class.name",
	"create.topic.policy.class.name", "principal.builder.class", "remote.log.",
	"metadata.", "initial.broker.registration.timeout.ms",
	"broker.heartbeat.interval.ms", "broker.session.timeout.ms", "producer.id.expiration.",
	"unstable.", "kafka.metrics.", "config.providers", "delegation.token.", "password.encoder.",
	"early.start.listeners", "log.message.downconversion.enable", "log.message.format.version",
	"auto.include.jmx.reporter", "telemetry.", "eligible.leader.replicas.",
};

static bool is_known_ignored(const char *key)
{
	for (size_t i = 0; i < sizeof(known_ignored) / sizeof(known_ignored[0]); i++) {
		const char *k = known_ignored[i];
		size_t n = strlen(k);
		if (k[n - 1] == '.' ? strncmp(key, k, n) == 0 : strcmp(key, k) == 0)
			return true;
	}
	return false;
}

/* Integer keys that map straight onto a field. */
typedef enum { F_I16, F_I32, F_I64 } field_kind;
typedef struct int_key {
	const char *name;
	size_t offset;
	field_kind kind;
	int64_t min, max;
} int_key;

#define I16(name, field, min) { name, offsetof(brk_config, field), F_I16, min, INT16_MAX }
#define I32(name, field, min) { name, offsetof(brk_config, field), F_I32, min, INT32_MAX }
#define I64(name, field, min) { name, offsetof(brk_config, field), F_I64, min, INT64_MAX }

/* Minimums are Kafka's validators (atLeast(n)); where Kafka has none, the
 * smallest value that means something. */
static const int_key int_keys[] = {
	I32("num.partitions", num_partitions, 1),
	I16("default.replication.factor", default_replication_factor, 1),
	{ "log.segment.bytes", offsetof(brk_config, log_segment_bytes), F_I64, 1024 * 1024, INT32_MAX },
	I32("log.index.interval.bytes", log_index_interval_bytes, 0),
	I32("log.index.size.max.bytes", log_index_size_max_bytes, 4),
	I32("message.max.bytes", message_max_bytes, 0),
	I32("socket.request.max.bytes", socket_request_max_bytes, 1),
	I64("log.flush.interval.messages", log_flush_interval_messages, 1),
	I64("log.message.timestamp.before.max.ms", log_message_timestamp_before_max_ms, 0),
	I64("log.message.timestamp.after.max.ms", log_message_timestamp_after_max_ms, 0),
	I64("log.retention.bytes", log_retention_bytes, INT64_MIN),
	I64("log.retention.check.interval.ms", log_retention_check_interval_ms, 1),
	I16("min.insync.replicas", min_insync_replicas, 1),
	I32("num.network.threads", num_network_threads, 1),
	I32("num.io.threads", num_io_threads, 1),
	I32("socket.send.buffer.bytes", socket_send_buffer_bytes, -1),
	I32("socket.receive.buffer.bytes", socket_receive_buffer_bytes, -1),
	I32("group.initial.rebalance.delay.ms", group_initial_rebalance_delay_ms, 0),
	I32("offsets.topic.num.partitions", offsets_topic_num_partitions, 1),
	I16("offsets.topic.replication.factor", offsets_topic_replication_factor, 1),
	/* Group coordinator keys (Kafka's GroupCoordinatorConfig): the session
	 * timeout bounds and offset.metadata.max.bytes have no validator there. */
	I32("group.min.session.timeout.ms", group_min_session_timeout_ms, INT32_MIN),
	I32("group.max.session.timeout.ms", group_max_session_timeout_ms, INT32_MIN),
	I32("group.max.size", group_max_size, 1),
	I32("offsets.topic.segment.bytes", offsets_topic_segment_bytes, 1),
	I32("offset.metadata.max.bytes", offset_metadata_max_bytes, INT32_MIN),
	I32("offsets.retention.minutes", offsets_retention_minutes, 1),
	I64("offsets.retention.check.interval.ms", offsets_retention_check_interval_ms, 1),
	I16("transaction.state.log.replication.factor", transaction_state_log_replication_factor, 1),
	I16("transaction.state.log.min.isr", transaction_state_log_min_isr, 1),
	/* Transaction coordinator keys (Kafka's TransactionLogConfig and
	 * TransactionStateManagerConfig: every one atLeast(1)). */
	I32("transaction.state.log.num.partitions", transaction_state_log_num_partitions, 1),
	I32("transaction.state.log.segment.bytes", transaction_state_log_segment_bytes, 1),
	I32("transaction.max.timeout.ms", transaction_max_timeout_ms, 1),
	I32("transactional.id.expiration.ms", transactional_id_expiration_ms, 1),
	I32("transaction.abort.timed.out.transaction.cleanup.interval.ms",
	    transaction_abort_timed_out_transaction_cleanup_interval_ms, 1),
	I32("transaction.remove.expired.transaction.cleanup.interval.ms",
	    transaction_remove_expired_transaction_cleanup_interval_ms, 1),
	I32("producer.id.expiration.ms", producer_id_expiration_ms, 1),
	I32("zookeeper.connection.timeout.ms", zookeeper_connection_timeout_ms, 0),
	/* Broker defaults of topic configs (Kafka's ServerLogConfigs,
	 * CleanerConfig, RemoteLogManagerConfig validators). */
	I64("log.cleaner.delete.retention.ms", log_cleaner_delete_retention_ms, 0),
	I64("log.cleaner.min.compaction.lag.ms", log_cleaner_min_compaction_lag_ms, 0),
	I64("log.cleaner.max.compaction.lag.ms", log_cleaner_max_compaction_lag_ms, 1),
	/* The cleaner itself (Kafka's CleanerConfig validators). */
	I32("log.cleaner.threads", log_cleaner_threads, 0),
	I64("log.cleaner.backoff.ms", log_cleaner_backoff_ms, 0),
	I64("log.cleaner.dedupe.buffer.size", log_cleaner_dedupe_buffer_size, 0),
	I32("log.cleaner.io.buffer.size", log_cleaner_io_buffer_size, 0),
	I64("log.segment.delete.delay.ms", log_segment_delete_delay_ms, 0),
	I64("log.local.retention.ms", log_local_retention_ms, -2),
	I64("log.local.retention.bytes", log_local_retention_bytes, -2),
	{ "compression.gzip.level", offsetof(brk_config, compression_gzip_level), F_I32, -1, 9 },
	{ "compression.lz4.level", offsetof(brk_config, compression_lz4_level), F_I32, 1, 17 },
	{ "compression.zstd.level", offsetof(brk_config, compression_zstd_level), F_I32, -131072, 22 },
	/* Connection limits (Kafka's SocketServerConfigs: max.connections and
	 * max.connections.per.ip atLeast(0); connections.max.idle.ms and
	 * queued.max.request.bytes have no validator). */
	I32("max.connections", max_connections, 0),
	I32("max.connections.per.ip", max_connections_per_ip, 0),
	I64("connections.max.idle.ms", connections_max_idle_ms, INT64_MIN),
	I64("queued.max.request.bytes", queued_max_request_bytes, INT64_MIN),
	I32("max.incremental.fetch.session.cache.slots", max_incremental_fetch_session_cache_slots, 0),
};

/* log.cleanup.policy: a non-empty list of compact and delete (Kafka's
 * ConfigDef.ValidList.in("compact", "delete")), kept as given, trimmed. */
static int set_cleanup_policy(brk_config *cfg, const char *key, const char *value, char *err,
			      size_t errsize)
{
	char buf[64], out[32] = "";
	if (trim_copy(value, buf, sizeof(buf)) < 0)
		return fail(err, errsize, "%s: value too long", key);
	char *save = NULL;
	int n = 0;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[16];
		if (trim_copy(item, one, sizeof(one)) < 0 ||
		    (strcmp(one, "compact") != 0 && strcmp(one, "delete") != 0))
			return fail(err, errsize, "%s=%s: each item must be compact or delete", key, value);
		size_t used = strlen(out);
		if (used + strlen(one) + 2 > sizeof(out))
			return fail(err, errsize, "%s=%s: too many items", key, value);
		snprintf(out + used, sizeof(out) - used, "%s%s", n ? "," : "", one);
		n++;
	}
	if (n == 0)
		return fail(err, errsize, "%s: at least one of compact, delete is required", key);
	memcpy(cfg->log_cleanup_policy, out, sizeof(out));
	return 0;
}

static int set_log_dirs(brk_config *cfg, const char *key, const char *value, FILE *warn,
			char *err, size_t errsize)
{
	/* A comma-separated list (Kafka's LIST type); one directory is used. */
	const char *p = value;
	while (*p && (isspace((unsigned char)*p) || *p == ','))
		p++;
	const char *comma = strchr(p, ',');
	size_t n = comma ? (size_t)(comma - p) : strlen(p);
	while (n > 0 && isspace((unsigned char)p[n - 1]))
		n--;
	if (n == 0)
		return fail(err, errsize, "%s: no directory given", key);
	if (n >= sizeof(cfg->log_dir))
		return fail(err, errsize, "%s: path too long", key);
	memcpy(cfg->log_dir, p, n);
	cfg->log_dir[n] = '\0';
	if (comma) {
		const char *rest = comma + 1;
		while (*rest && (isspace((unsigned char)*rest) || *rest == ','))
			rest++;
		if (*rest && warn)
			fprintf(warn, "samsa: warning: %s: only the first directory (%s) is used; "
				      "the others are ignored\n", key, cfg->log_dir);
	}
	return 0;
}

/*
 * max.connections.per.ip.overrides: "host:count" entries separated by
 * commas (Kafka's KafkaConfig.getMap; the host part may be an IPv6 address,
 * so the count follows the last colon). A host name is resolved here, once,
 * as Kafka's InetAddress.getByName; a host that does not resolve is an
 * error, as in Kafka. An empty value clears the overrides.
 */
static int set_ip_overrides(brk_config *cfg, const char *key, const char *value, char *err,
			    size_t errsize)
{
	char buf[4096];
	if (trim_copy(value, buf, sizeof(buf)) < 0)
		return fail(err, errsize, "%s: value too long", key);
	struct brk_ip_override parsed[BRK_MAX_IP_OVERRIDES];
	int n = 0;
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[300];
		if (trim_copy(item, one, sizeof(one)) <= 0)
			continue;
		char *colon = strrchr(one, ':');
		if (!colon || colon == one)
			return fail(err, errsize, "%s=%s: each entry must be host:count", key, value);
		*colon = '\0';
		int64_t max;
		if (parse_int(key, colon + 1, 0, INT32_MAX, &max, err, errsize) < 0)
			return -1;
		if (n == BRK_MAX_IP_OVERRIDES)
			return fail(err, errsize, "%s: at most %d entries", key, BRK_MAX_IP_OVERRIDES);
		char *host = one;
		size_t hl = strlen(host);
		if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [v6]:count */
			host[hl - 1] = '\0';
			host++;
		}
		struct addrinfo hints, *res = NULL;
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
			return fail(err, errsize, "%s: unknown host %s", key, host);
		const void *addr = res->ai_family == AF_INET
					   ? (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr
					   : (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
		inet_ntop(res->ai_family, addr, parsed[n].ip, sizeof(parsed[n].ip));
		freeaddrinfo(res);
		parsed[n++].max = (int32_t)max;
	}
	memcpy(cfg->max_connections_per_ip_overrides, parsed, (size_t)n * sizeof(parsed[0]));
	cfg->nmax_connections_per_ip_overrides = n;
	return 0;
}

static int config_set_one(brk_config *cfg, const char *key, const char *value, FILE *warn,
			  char *err, size_t errsize)
{
	int64_t v;

	for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
		const int_key *k = &int_keys[i];
		if (strcmp(key, k->name) != 0)
			continue;
		if (parse_int(key, value, k->min, k->max, &v, err, errsize) < 0)
			return -1;
		char *f = (char *)cfg + k->offset;
		if (k->kind == F_I16)
			*(int16_t *)f = (int16_t)v;
		else if (k->kind == F_I32)
			*(int32_t *)f = (int32_t)v;
		else
			*(int64_t *)f = v;
		return 0;
	}

	if (strcmp(key, "max.connections.per.ip.overrides") == 0)
		return set_ip_overrides(cfg, key, value, err, errsize);
	if (strcmp(key, "listeners") == 0)
		return parse_listeners(key, value, cfg->listeners, &cfg->nlisteners, err, errsize);
	if (strcmp(key, "advertised.listeners") == 0) {
		char buf[8];
		if (trim_copy(value, buf, sizeof(buf)) == 0) { /* empty: same as unset */
			cfg->nadvertised = 0;
			return 0;
		}
		return parse_listeners(key, value, cfg->advertised, &cfg->nadvertised, err, errsize);
	}
	if (strcmp(key, "log.dirs") == 0 || strcmp(key, "log.dir") == 0) {
		/* log.dirs wins over log.dir whatever the order. */
		bool dirs = strcmp(key, "log.dirs") == 0;
		if (!dirs && cfg->given.log_dirs)
			return 0;
		if (set_log_dirs(cfg, key, value, warn, err, errsize) < 0)
			return -1;
		cfg->given.log_dirs |= dirs;
		return 0;
	}
	if (strcmp(key, "broker.id") == 0 || strcmp(key, "node.id") == 0) {
		/* broker.id -1 asks Kafka to generate one (ZooKeeper mode); we have no
		 * generator, so ids are >= 0. */
		if (parse_int(key, value, 0, INT32_MAX, &v, err, errsize) < 0)
			return -1;
		if (key[0] == 'b') {
			cfg->broker_id = (int32_t)v;
			cfg->given.broker_id = true;
		} else {
			cfg->given.node_id = true;
			cfg->given.node_id_value = (int32_t)v;
			if (!cfg->given.broker_id)
				cfg->broker_id = (int32_t)v;
		}
		return 0;
	}
	if (strcmp(key, "auto.create.topics.enable") == 0)
		return parse_bool(key, value, &cfg->auto_create_topics_enable, err, errsize);
	if (strcmp(key, "delete.topic.enable") == 0)
		return parse_bool(key, value, &cfg->delete_topic_enable, err, errsize);

	/* log.roll.ms overrides log.roll.hours. */
	if (strcmp(key, "log.roll.ms") == 0) {
		if (parse_int(key, value, 1, INT64_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->log_roll_ms = v;
		cfg->given.log_roll = 2;
		return 0;
	}
	if (strcmp(key, "log.roll.hours") == 0) {
		if (parse_int(key, value, 1, INT32_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->given.log_roll_hours = (int32_t)v;
		if (cfg->given.log_roll <= 1) {
			cfg->log_roll_ms = v * MS_PER_HOUR;
			cfg->given.log_roll = 1;
		}
		return 0;
	}

	/* log.roll.jitter.ms overrides log.roll.jitter.hours (Kafka has no
	 * validator on the ms key; the hours key is atLeast(0)). */
	if (strcmp(key, "log.roll.jitter.ms") == 0) {
		if (parse_int(key, value, INT64_MIN, INT64_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->log_roll_jitter_ms = v;
		cfg->given.log_roll_jitter = 2;
		return 0;
	}
	if (strcmp(key, "log.roll.jitter.hours") == 0) {
		if (parse_int(key, value, 0, INT32_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->given.log_roll_jitter_hours = (int32_t)v;
		if (cfg->given.log_roll_jitter <= 1) {
			cfg->log_roll_jitter_ms = v * MS_PER_HOUR;
			cfg->given.log_roll_jitter = 1;
		}
		return 0;
	}

	/* log.retention.ms > .minutes > .hours; a negative result means no
	 * time limit (-1), as Kafka's KafkaConfig.logRetentionTimeMillis. */
	if (strcmp(key, "log.retention.ms") == 0 || strcmp(key, "log.retention.minutes") == 0 ||
	    strcmp(key, "log.retention.hours") == 0) {
		uint8_t level = key[14] == 'm' && key[15] == 's' ? 3 : key[14] == 'm' ? 2 : 1;
		int64_t unit = level == 3 ? 1 : level == 2 ? MS_PER_MINUTE : MS_PER_HOUR;
		if (parse_int(key, value, level == 3 ? INT64_MIN : INT32_MIN,
			      level == 3 ? INT64_MAX : INT32_MAX, &v, err, errsize) < 0)
			return -1;
		if (level == 2)
			cfg->given.log_retention_minutes = (int32_t)v;
		else if (level == 1)
			cfg->given.log_retention_hours = (int32_t)v;
		if (level >= cfg->given.log_retention) {
			int64_t ms = v * unit;
			cfg->log_retention_ms = ms < 0 ? -1 : ms;
			cfg->given.log_retention = level;
		}
		return 0;
	}

	/* log.flush.interval.ms defaults to log.flush.scheduler.interval.ms. */
	if (strcmp(key, "log.flush.interval.ms") == 0) {
		if (parse_int(key, value, 0, INT64_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->log_flush_interval_ms = v;
		cfg->given.log_flush_interval_ms = true;
		return 0;
	}
	if (strcmp(key, "log.flush.scheduler.interval.ms") == 0) {
		if (parse_int(key, value, 1, INT64_MAX, &v, err, errsize) < 0)
			return -1;
		cfg->log_flush_scheduler_interval_ms = v;
		if (!cfg->given.log_flush_interval_ms)
			cfg->log_flush_interval_ms = v;
		return 0;
	}

	if (strcmp(key, "log.message.timestamp.type") == 0) {
		char buf[32];
		if (trim_copy(value, buf, sizeof(buf)) >= 0) {
			if (strcmp(buf, "CreateTime") == 0) {
				cfg->log_append_time = false;
				return 0;
			}
			if (strcmp(buf, "LogAppendTime") == 0) {
				cfg->log_append_time = true;
				return 0;
			}
		}
		return fail(err, errsize, "%s=%s: must be CreateTime or LogAppendTime", key, value);
	}

	if (strcmp(key, "zookeeper.connect") == 0) {
		if (trim_copy(value, cfg->zookeeper_connect, sizeof(cfg->zookeeper_connect)) < 0)
			return fail(err, errsize, "%s: value too long", key);
		return 0;
	}

	if (strcmp(key, "log.cleanup.policy") == 0)
		return set_cleanup_policy(cfg, key, value, err, errsize);
	if (strcmp(key, "compression.type") == 0) {
		static const char *const types[] = { "uncompressed", "zstd", "lz4", "snappy", "gzip",
						     "producer" };
		char buf[32];
		if (trim_copy(value, buf, sizeof(buf)) >= 0)
			for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
				if (strcmp(buf, types[i]) == 0) {
					snprintf(cfg->compression_type, sizeof(cfg->compression_type), "%s",
						 types[i]);
					return 0;
				}
		return fail(err, errsize, "%s=%s: must be one of uncompressed, zstd, lz4, snappy, gzip, producer",
			    key, value);
	}
	if (strcmp(key, "log.preallocate") == 0)
		return parse_bool(key, value, &cfg->log_preallocate, err, errsize);
	if (strcmp(key, "unclean.leader.election.enable") == 0)
		return parse_bool(key, value, &cfg->unclean_leader_election_enable, err, errsize);
	if (strcmp(key, "log.cleaner.min.cleanable.ratio") == 0) {
		char buf[64], *end;
		if (trim_copy(value, buf, sizeof(buf)) > 0) {
			errno = 0;
			double d = strtod(buf, &end);
			if (!errno && !*end && d >= 0 && d <= 1) {
				cfg->log_cleaner_min_cleanable_ratio = d;
				return 0;
			}
		}
		return fail(err, errsize, "%s=%s: must be a number between 0 and 1", key, value);
	}
	if (strcmp(key, "log.cleaner.enable") == 0)
		return parse_bool(key, value, &cfg->log_cleaner_enable, err, errsize);
	if (strcmp(key, "transaction.partition.verification.enable") == 0)
		return parse_bool(key, value, &cfg->transaction_partition_verification_enable, err,
				  errsize);
	if (strcmp(key, "log.cleaner.io.buffer.load.factor") == 0) {
		char buf[64], *end;
		if (trim_copy(value, buf, sizeof(buf)) > 0) {
			errno = 0;
			double d = strtod(buf, &end);
			if (!errno && !*end && d > 0 && d <= 1) {
				cfg->log_cleaner_io_buffer_load_factor = d;
				return 0;
			}
		}
		return fail(err, errsize, "%s=%s: must be a number above 0 and at most 1", key, value);
	}

	if (!is_known_ignored(key) && warn)
		fprintf(warn, "samsa: warning: unknown configuration key %s (ignored)\n", key);
	return 0;
}

static int key_index(const char *name);

int brk_config_set(brk_config *cfg, const char *key, const char *value, FILE *warn,
		   char *err, size_t errsize)
{
	int rc = config_set_one(cfg, key, value, warn, err, errsize);
	if (rc == 0) {
		int i = key_index(key);
		if (i >= 0)
			cfg->given.keys[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	return rc;
}

/* ---- properties files ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescape s[0..n) into out (Properties.loadConvert): \t \n \r \f, \uXXXX
 * (written as UTF-8), and \c for any other c. Returns the output length or
 * -1 on a malformed \u escape. out must hold 3 * n + 1 bytes. */
static int unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c != '\\' || i + 1 == n) {
			if (c != '\\')
				out[o++] = c;
			continue;
		}
		c = s[++i];
		switch (c) {
		case 't': out[o++] = '\t'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 'f': out[o++] = '\f'; break;
		case 'u': {
			if (i + 4 >= n)
				return -1;
			unsigned cp = 0;
			for (int k = 1; k <= 4; k++) {
				int h = hexval((unsigned char)s[i + k]);
				if (h < 0)
					return -1;
				cp = cp * 16 + (unsigned)h;
			}
			i += 4;
			if (cp < 0x80) {
				out[o++] = (char)cp;
			} else if (cp < 0x800) {
				out[o++] = (char)(0xc0 | (cp >> 6));
				out[o++] = (char)(0x80 | (cp & 0x3f));
			} else {
				out[o++] = (char)(0xe0 | (cp >> 12));
				out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[o++] = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default: out[o++] = c; break;
		}
	}
	out[o] = '\0';
	return (int)o;
}

static bool prop_space(char c) { return c == ' ' || c == '\t' || c == '\f'; }

/* Split one logical line into key and value and apply it. */
static int apply_line(brk_config *cfg, const char *line, size_t len, FILE *warn, char *err,
		      size_t errsize)
{
	size_t i = 0;
	/* The key ends at the first unescaped '=', ':' or white space. */
	while (i < len) {
		char c = line[i];
		if (c == '\\' && i + 1 < len) {
			i += 2;
			continue;
		}
		if (c == '=' || c == ':' || prop_space(c))
			break;
		i++;
	}
	size_t klen = i;
	while (i < len && prop_space(line[i]))
		i++;
	if (i < len && (line[i] == '=' || line[i] == ':'))
		i++;
	while (i < len && prop_space(line[i]))
		i++;
	char *key = malloc(3 * klen + 1);
	char *value = malloc(3 * (len - i) + 1);
	int rc = -1;
	if (!key || !value) {
		fail(err, errsize, "out of memory");
		goto out;
	}
	if (unescape(line, klen, key) < 0 || unescape(line + i, len - i, value) < 0) {
		fail(err, errsize, "malformed \\uxxxx escape");
		goto out;
	}
	rc = brk_config_set(cfg, key, value, warn, err, errsize);
out:
	free(key);
	free(value);
	return rc;
}

/* Does the line s[0..n) end in an odd number of backslashes? */
static bool continues(const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && s[n - 1 - k] == '\\')
		k++;
	return k % 2 == 1;
}

int brk_config_load(brk_config *cfg, const char *path, FILE *warn, char *err, size_t errsize)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errsize, "%s: %s", path, strerror(errno));
	char *data = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 4096 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *d = realloc(data, cap);
			if (!d) {
				free(data);
				fclose(f);
				return fail(err, errsize, "%s: out of memory", path);
			}
			data = d;
		}
		size_t got = fread(data + len, 1, cap - len - 1, f);
		len += got;
		if (got == 0)
			break;
	}
	int ioerr = ferror(f);
	fclose(f);
	if (ioerr) {
		free(data);
		return fail(err, errsize, "%s: read error", path);
	}

	/* Logical lines: natural lines (ended by \n, \r or \r\n) joined where a
	 * line ends in an odd number of backslashes; leading white space of
	 * every natural line dropped; # and ! start a comment line. */
	char *logical = malloc(len + 1);
	if (!logical) {
		free(data);
		return fail(err, errsize, "%s: out of memory", path);
	}
	int rc = 0;
	size_t pos = 0;
	int lineno = 0;
	while (pos < len && rc == 0) {
		size_t llen = 0;
		bool first = true, comment = false;
		int start_line = lineno + 1;
		for (;;) {
			size_t s = pos, e;
			lineno++;
			while (s < len && prop_space(data[s]))
				s++;
			e = s;
			while (e < len && data[e] != '\n' && data[e] != '\r')
				e++;
			pos = e;
			if (pos < len && data[pos] == '\r')
				pos++;
			if (pos < len && data[pos] == '\n' && (pos == e || data[pos - 1] == '\r'))
				pos++;
			if (first && s < e && (data[s] == '#' || data[s] == '!'))
				comment = true;
			first = false;
			if (comment)
				break; /* a comment never continues */
			bool more = continues(data + s, e - s);
			size_t n = e - s - (more ? 1 : 0);
			memcpy(logical + llen, data + s, n);
			llen += n;
			if (!more || pos >= len)
				break;
		}
		if (comment || llen == 0)
			continue;
		char lerr[512];
		if (apply_line(cfg, logical, llen, warn, lerr, sizeof(lerr)) < 0) {
			fail(err, errsize, "%s:%d: %s", path, start_line, lerr);
			rc = -1;
		}
	}
	free(logical);
	free(data);
	return rc;
}

/* ---- cross-key checks ---- */

static bool is_wildcard(const char *host)
{
	return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
	       strcmp(host, "0:0:0:0:0:0:0:0") == 0;
}

int brk_config_finish(brk_config *cfg, char *err, size_t errsize)
{
	if (cfg->nlisteners < 1)
		return fail(err, errsize, "listeners: no listener given");
	for (int i = 0; i < cfg->nlisteners; i++) {
		const char *name = cfg->listeners[i].name;
		if (strcmp(name, "SSL") == 0 || strncmp(name, "SASL_", 5) == 0)
			return fail(err, errsize,
				    "listeners: %s is not supported yet; only PLAINTEXT listeners are", name);
	}
	if (cfg->given.broker_id && cfg->given.node_id &&
	    cfg->broker_id != cfg->given.node_id_value)
		return fail(err, errsize, "broker.id (%" PRId32 ") and node.id (%" PRId32
				     ") are synonyms and must be equal",
			    cfg->broker_id, cfg->given.node_id_value);
	/* Kafka's KafkaConfig.validateValues. */
	if (cfg->max_connections_per_ip == 0 && cfg->nmax_connections_per_ip_overrides == 0)
		return fail(err, errsize, "max.connections.per.ip can be set to zero only if "
				     "max.connections.per.ip.overrides is set");
	if (cfg->queued_max_request_bytes > 0 &&
	    cfg->queued_max_request_bytes < cfg->socket_request_max_bytes)
		return fail(err, errsize, "queued.max.request.bytes (%" PRId64 ") must be larger or "
				     "equal to socket.request.max.bytes (%" PRId32 ")",
			    cfg->queued_max_request_bytes, cfg->socket_request_max_bytes);
	if (cfg->nadvertised == 0) {
		memcpy(cfg->advertised, cfg->listeners, sizeof(cfg->advertised));
		cfg->nadvertised = cfg->nlisteners;
	}
	for (int i = 0; i < cfg->nadvertised; i++) {
		const brk_listener *a = &cfg->advertised[i];
		bool found = false;
		for (int j = 0; j < cfg->nlisteners; j++)
			found |= strcmp(cfg->listeners[j].name, a->name) == 0;
		if (!found)
			return fail(err, errsize,
				    "advertised.listeners: %s is not one of the names in listeners", a->name);
		if (is_wildcard(a->host))
			return fail(err, errsize,
				    "advertised.listeners: %s cannot advertise the meta-address %s; "
				    "use a routable address", a->name, a->host);
	}
	return 0;
}

/* ---- describing (DescribeConfigs) and dynamic configs (KIP-226) ---- */

/* How a described key's value is read from brk_config. */
enum { V_I16, V_I32, V_I64, V_BOOL, V_DOUBLE, V_STR, V_LISTENERS, V_ADVERTISED, V_TS_TYPE };

typedef struct key_def {
	brk_config_key k;
	int kind;
	size_t offset;
} key_def;

#define T_BOOL BRK_CONFIG_TYPE_BOOLEAN
#define T_STR BRK_CONFIG_TYPE_STRING
#define T_INT BRK_CONFIG_TYPE_INT
#define T_SHORT BRK_CONFIG_TYPE_SHORT
#define T_LONG BRK_CONFIG_TYPE_LONG
#define T_DOUBLE BRK_CONFIG_TYPE_DOUBLE
#define T_LIST BRK_CONFIG_TYPE_LIST
#define KD(name, type, dyn, dflt, kind, field, doc) \
	{ { name, type, dyn, dflt, doc }, kind, offsetof(brk_config, field) }

/*
 * Every broker key this broker reads, sorted by name. dynamic: Kafka can
 * change it at runtime (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS) and so can
 * we, at once: the defaults of topic configs (DynamicLogConfig),
 * producer.id.expiration.ms, and the cleaner's keys (LogCleaner's
 * reconfigurable configs; read at each round). Keys Kafka changes at
 * runtime but we cannot (listeners, network and I/O thread counts) are
 * read-only here.
 */
static const key_def key_defs[] = {
	KD("advertised.listeners", T_STR, false, false, V_ADVERTISED, advertised,
	   "The listeners clients are told to connect to, NAME://host:port separated by commas; "
	   "the listeners themselves when not set."),
	KD("auto.create.topics.enable", T_BOOL, false, true, V_BOOL, auto_create_topics_enable,
	   "Create a topic when a client asks for its metadata and it does not exist."),
	KD("broker.id", T_INT, false, true, V_I32, broker_id,
	   "The id of this broker in the cluster (a synonym of node.id)."),
	KD("compression.gzip.level", T_INT, true, true, V_I32, compression_gzip_level,
	   "Default gzip level of topics whose compression.type is gzip."),
	KD("compression.lz4.level", T_INT, true, true, V_I32, compression_lz4_level,
	   "Default lz4 level of topics whose compression.type is lz4."),
	KD("compression.type", T_STR, true, true, V_STR, compression_type,
	   "Default compression of topics: uncompressed, zstd, lz4, snappy, gzip, or producer "
	   "(keep what the producer sent)."),
	KD("compression.zstd.level", T_INT, true, true, V_I32, compression_zstd_level,
	   "Default zstd level of topics whose compression.type is zstd."),
	KD("connections.max.idle.ms", T_LONG, false, true, V_I64, connections_max_idle_ms,
	   "A client connection with no request and no progress for this long is closed "
	   "(a request in flight or waiting keeps it open)."),
	KD("default.replication.factor", T_INT, false, true, V_I16, default_replication_factor,
	   "Replication factor of topics created without one."),
	KD("delete.topic.enable", T_BOOL, false, true, V_BOOL, delete_topic_enable,
	   "Whether DeleteTopics may delete topics."),
	KD("group.initial.rebalance.delay.ms", T_INT, false, true, V_I32,
	   group_initial_rebalance_delay_ms,
	   "How long the coordinator waits for more members before the first rebalance of a new group."),
	KD("group.max.session.timeout.ms", T_INT, false, true, V_I32, group_max_session_timeout_ms,
	   "The largest session timeout a group member may ask for."),
	KD("group.max.size", T_INT, false, true, V_I32, group_max_size,
	   "The most members a consumer group may have."),
	KD("group.min.session.timeout.ms", T_INT, false, true, V_I32, group_min_session_timeout_ms,
	   "The smallest session timeout a group member may ask for."),
	KD("listeners", T_STR, false, true, V_LISTENERS, listeners,
	   "The addresses the broker listens on, NAME://host:port separated by commas."),
	KD("log.cleaner.backoff.ms", T_LONG, true, true, V_I64, log_cleaner_backoff_ms,
	   "How long the cleaner sleeps when no log needs cleaning."),
	KD("log.cleaner.dedupe.buffer.size", T_LONG, true, true, V_I64,
	   log_cleaner_dedupe_buffer_size,
	   "Bytes of the cleaner's offset map (key hash to latest offset), shared by its threads."),
	KD("log.cleaner.delete.retention.ms", T_LONG, true, true, V_I64,
	   log_cleaner_delete_retention_ms,
	   "Default delete.retention.ms of topics: how long tombstones stay in a compacted log."),
	KD("log.cleaner.enable", T_BOOL, false, true, V_BOOL, log_cleaner_enable,
	   "Run the log cleaner, which compacts topics whose cleanup.policy has compact."),
	KD("log.cleaner.io.buffer.load.factor", T_DOUBLE, true, true, V_DOUBLE,
	   log_cleaner_io_buffer_load_factor,
	   "How full the cleaner's offset map may get before a round stops early."),
	KD("log.cleaner.io.buffer.size", T_INT, true, true, V_I32, log_cleaner_io_buffer_size,
	   "Bytes of the cleaner's read and write buffers."),
	KD("log.cleaner.max.compaction.lag.ms", T_LONG, true, true, V_I64,
	   log_cleaner_max_compaction_lag_ms,
	   "Default max.compaction.lag.ms of topics: the longest a record stays uncompacted."),
	KD("log.cleaner.min.cleanable.ratio", T_DOUBLE, true, true, V_DOUBLE,
	   log_cleaner_min_cleanable_ratio,
	   "Default min.cleanable.dirty.ratio of topics: the share of uncleaned log that makes "
	   "a log worth cleaning."),
	KD("log.cleaner.min.compaction.lag.ms", T_LONG, true, true, V_I64,
	   log_cleaner_min_compaction_lag_ms,
	   "Default min.compaction.lag.ms of topics: the shortest a record stays uncompacted."),
	KD("log.cleaner.threads", T_INT, true, true, V_I32, log_cleaner_threads,
	   "Cleaner threads (rounds run one at a time; more threads only split the offset map; "
	   "a change applies from the next round)."),
	KD("log.cleanup.policy", T_LIST, true, true, V_STR, log_cleanup_policy,
	   "Default cleanup.policy of topics: delete (retention), compact, or both."),
	KD("log.dir", T_STR, false, true, V_STR, log_dir,
	   "The directory of the logs, when log.dirs is not set."),
	KD("log.dirs", T_STR, false, false, V_STR, log_dir,
	   "The directories of the logs (only the first one is used)."),
	KD("log.flush.interval.messages", T_LONG, true, true, V_I64, log_flush_interval_messages,
	   "Default flush.messages of topics: fsync a log after this many messages."),
	KD("log.flush.interval.ms", T_LONG, true, false, V_I64, log_flush_interval_ms,
	   "Default flush.ms of topics: fsync a log when its oldest unflushed message is this old; "
	   "log.flush.scheduler.interval.ms when not set."),
	KD("log.flush.scheduler.interval.ms", T_LONG, false, true, V_I64,
	   log_flush_scheduler_interval_ms,
	   "How often the flusher checks whether a log needs to be flushed."),
	KD("log.index.interval.bytes", T_INT, true, true, V_I32, log_index_interval_bytes,
	   "Default index.interval.bytes of topics: bytes of log between two offset index entries."),
	KD("log.index.size.max.bytes", T_INT, true, true, V_I32, log_index_size_max_bytes,
	   "Default segment.index.bytes of topics: the size of a segment's offset index."),
	KD("log.local.retention.bytes", T_LONG, true, true, V_I64, log_local_retention_bytes,
	   "Default local.retention.bytes of topics (tiered storage; -2 means retention.bytes)."),
	KD("log.local.retention.ms", T_LONG, true, true, V_I64, log_local_retention_ms,
	   "Default local.retention.ms of topics (tiered storage; -2 means retention.ms)."),
	KD("log.message.timestamp.after.max.ms", T_LONG, true, true, V_I64,
	   log_message_timestamp_after_max_ms,
	   "Default message.timestamp.after.max.ms of topics: how far in the future a record's "
	   "timestamp may be."),
	KD("log.message.timestamp.before.max.ms", T_LONG, true, true, V_I64,
	   log_message_timestamp_before_max_ms,
	   "Default message.timestamp.before.max.ms of topics: how far in the past a record's "
	   "timestamp may be."),
	KD("log.message.timestamp.type", T_STR, true, true, V_TS_TYPE, log_append_time,
	   "Default message.timestamp.type of topics: CreateTime or LogAppendTime."),
	KD("log.preallocate", T_BOOL, true, true, V_BOOL, log_preallocate,
	   "Default preallocate of topics: create segment files at their full size."),
	KD("log.retention.bytes", T_LONG, true, true, V_I64, log_retention_bytes,
	   "Default retention.bytes of topics: the most bytes a partition keeps (-1: no limit)."),
	KD("log.retention.check.interval.ms", T_LONG, false, true, V_I64,
	   log_retention_check_interval_ms,
	   "How often logs are checked for segments to delete."),
	KD("log.retention.hours", T_INT, false, true, V_I32, given.log_retention_hours,
	   "Default retention of topics in hours, below log.retention.minutes and log.retention.ms."),
	KD("log.retention.minutes", T_INT, false, false, V_I32, given.log_retention_minutes,
	   "Default retention of topics in minutes, below log.retention.ms."),
	KD("log.retention.ms", T_LONG, true, false, V_I64, log_retention_ms,
	   "Default retention.ms of topics: how long a record is kept (-1: forever)."),
	KD("log.roll.hours", T_INT, false, true, V_I32, given.log_roll_hours,
	   "Default segment age in hours before a new segment is rolled, below log.roll.ms."),
	KD("log.roll.jitter.hours", T_INT, false, true, V_I32, given.log_roll_jitter_hours,
	   "Default segment roll jitter in hours, below log.roll.jitter.ms."),
	KD("log.roll.jitter.ms", T_LONG, true, false, V_I64, log_roll_jitter_ms,
	   "Default segment.jitter.ms of topics: a random amount taken off the segment age."),
	KD("log.roll.ms", T_LONG, true, false, V_I64, log_roll_ms,
	   "Default segment.ms of topics: the age at which a segment is rolled."),
	KD("log.segment.bytes", T_INT, true, true, V_I64, log_segment_bytes,
	   "Default segment.bytes of topics: the size at which a segment is rolled."),
	KD("log.segment.delete.delay.ms", T_LONG, true, true, V_I64, log_segment_delete_delay_ms,
	   "Default file.delete.delay.ms of topics: how long a deleted segment's files stay on disk."),
	KD("max.connections", T_INT, false, true, V_I32, max_connections,
	   "The most client connections open at once; above it accepting pauses until one closes."),
	KD("max.connections.per.ip", T_INT, false, true, V_I32, max_connections_per_ip,
	   "The most connections from one address; a connection over it is closed at once."),
	KD("max.incremental.fetch.session.cache.slots", T_INT, false, true, V_I32,
	   max_incremental_fetch_session_cache_slots,
	   "The most incremental fetch sessions (KIP-227) kept at once; 0 disables them."),
	KD("message.max.bytes", T_INT, true, true, V_I32, message_max_bytes,
	   "Default max.message.bytes of topics: the largest record batch accepted."),
	KD("min.insync.replicas", T_INT, true, true, V_I16, min_insync_replicas,
	   "Default min.insync.replicas of topics: replicas that must have a write acknowledged "
	   "with acks=all."),
	KD("node.id", T_INT, false, false, V_I32, broker_id,
	   "The id of this node in the cluster."),
	KD("num.io.threads", T_INT, false, true, V_I32, num_io_threads,
	   "Accepted for compatibility; samsa sizes its threads itself."),
	KD("num.network.threads", T_INT, false, true, V_I32, num_network_threads,
	   "Accepted for compatibility; samsa sizes its threads itself."),
	KD("num.partitions", T_INT, false, true, V_I32, num_partitions,
	   "Partition count of topics created without one."),
	KD("offset.metadata.max.bytes", T_INT, false, true, V_I32, offset_metadata_max_bytes,
	   "The longest metadata string of a committed offset."),
	KD("offsets.retention.check.interval.ms", T_LONG, false, true, V_I64,
	   offsets_retention_check_interval_ms,
	   "How often expired committed offsets are looked for."),
	KD("offsets.retention.minutes", T_INT, false, true, V_I32, offsets_retention_minutes,
	   "How long the committed offsets of an empty group are kept."),
	KD("offsets.topic.num.partitions", T_INT, false, true, V_I32, offsets_topic_num_partitions,
	   "Partition count of __consumer_offsets."),
	KD("offsets.topic.replication.factor", T_SHORT, false, true, V_I16,
	   offsets_topic_replication_factor,
	   "Replication factor of __consumer_offsets (capped to the live brokers)."),
	KD("offsets.topic.segment.bytes", T_INT, false, true, V_I32, offsets_topic_segment_bytes,
	   "Segment size of __consumer_offsets."),
	KD("producer.id.expiration.ms", T_INT, true, true, V_I32, producer_id_expiration_ms,
	   "How long the state of an idle producer id is kept."),
	KD("queued.max.request.bytes", T_LONG, false, true, V_I64, queued_max_request_bytes,
	   "Bytes of requests read but not yet answered above which no more requests are read "
	   "(-1: no bound)."),
	KD("socket.receive.buffer.bytes", T_INT, false, true, V_I32, socket_receive_buffer_bytes,
	   "SO_RCVBUF of client connections (-1: the OS default)."),
	KD("socket.request.max.bytes", T_INT, false, true, V_I32, socket_request_max_bytes,
	   "The largest request accepted."),
	KD("socket.send.buffer.bytes", T_INT, false, true, V_I32, socket_send_buffer_bytes,
	   "SO_SNDBUF of client connections (-1: the OS default)."),
	KD("transaction.abort.timed.out.transaction.cleanup.interval.ms", T_INT, false, true, V_I32,
	   transaction_abort_timed_out_transaction_cleanup_interval_ms,
	   "How often transactions past their timeout are looked for and aborted."),
	KD("transaction.max.timeout.ms", T_INT, false, true, V_I32, transaction_max_timeout_ms,
	   "The longest transaction timeout a producer may ask for."),
	KD("transaction.partition.verification.enable", T_BOOL, false, true, V_BOOL,
	   transaction_partition_verification_enable,
	   "Whether a transactional write is first verified with the transaction coordinator."),
	KD("transaction.remove.expired.transaction.cleanup.interval.ms", T_INT, false, true, V_I32,
	   transaction_remove_expired_transaction_cleanup_interval_ms,
	   "How often expired transactional ids are looked for."),
	KD("transaction.state.log.min.isr", T_INT, false, true, V_I16, transaction_state_log_min_isr,
	   "min.insync.replicas of __transaction_state."),
	KD("transaction.state.log.num.partitions", T_INT, false, true, V_I32,
	   transaction_state_log_num_partitions,
	   "Partition count of __transaction_state."),
	KD("transaction.state.log.replication.factor", T_SHORT, false, true, V_I16,
	   transaction_state_log_replication_factor,
	   "Replication factor of __transaction_state (capped to the live brokers)."),
	KD("transaction.state.log.segment.bytes", T_INT, false, true, V_I32,
	   transaction_state_log_segment_bytes,
	   "Segment size of __transaction_state."),
	KD("transactional.id.expiration.ms", T_INT, false, true, V_I32,
	   transactional_id_expiration_ms,
	   "How long an idle transactional id is kept."),
	KD("unclean.leader.election.enable", T_BOOL, true, true, V_BOOL,
	   unclean_leader_election_enable,
	   "Default unclean.leader.election.enable of topics."),
	KD("zookeeper.connect", T_STR, false, false, V_STR, zookeeper_connect,
	   "The ZooKeeper ensemble of a cluster; empty for a single node."),
	KD("zookeeper.connection.timeout.ms", T_INT, false, true, V_I32,
	   zookeeper_connection_timeout_ms,
	   "How long to wait for the ZooKeeper connection."),
};
#define NKEYS ((int)(sizeof(key_defs) / sizeof(key_defs[0])))
_Static_assert(NKEYS <= BRK_CONFIG_MAX_KEYS, "raise BRK_CONFIG_MAX_KEYS");

static int key_index(const char *name)
{
	int lo = 0, hi = NKEYS - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		int c = strcmp(name, key_defs[mid].k.name);
		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

int brk_config_key_count(void)
{
	return NKEYS;
}

const brk_config_key *brk_config_key_at(int i)
{
	return i >= 0 && i < NKEYS ? &key_defs[i].k : NULL;
}

const brk_config_key *brk_config_key_find(const char *name)
{
	int i = key_index(name);
	return i >= 0 ? &key_defs[i].k : NULL;
}

static void format_listeners(const brk_listener *l, int n, char *out, size_t outsize)
{
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t used = strlen(out);
		bool v6 = strchr(l[i].host, ':') != NULL;
		snprintf(out + used, outsize - used, "%s%s://%s%s%s:%d", i ? "," : "", l[i].name,
			 v6 ? "[" : "", l[i].host, v6 ? "]" : "", l[i].port);
	}
}

bool brk_config_format(const brk_config *cfg, const char *name, char *out, size_t outsize)
{
	int i = key_index(name);
	if (outsize)
		out[0] = '\0';
	if (i < 0)
		return false;
	const key_def *d = &key_defs[i];
	const char *f = (const char *)cfg + d->offset;
	switch (d->kind) {
	case V_I16: snprintf(out, outsize, "%d", *(const int16_t *)f); break;
	case V_I32: snprintf(out, outsize, "%" PRId32, *(const int32_t *)f); break;
	case V_I64: snprintf(out, outsize, "%" PRId64, *(const int64_t *)f); break;
	case V_BOOL: snprintf(out, outsize, "%s", *(const bool *)f ? "true" : "false"); break;
	case V_DOUBLE: {
		/* Java's Double.toString for the values a ratio takes: at least
		 * one decimal ("0.5", "1.0"). */
		double x = *(const double *)f;
		snprintf(out, outsize, "%.15g", x);
		if (!strpbrk(out, ".eEn"))
			snprintf(out + strlen(out), outsize - strlen(out), ".0");
		break;
	}
	case V_STR: snprintf(out, outsize, "%s", f); break;
	case V_LISTENERS: format_listeners(cfg->listeners, cfg->nlisteners, out, outsize); break;
	case V_ADVERTISED: format_listeners(cfg->advertised, cfg->nadvertised, out, outsize); break;
	case V_TS_TYPE: snprintf(out, outsize, "%s", cfg->log_append_time ? "LogAppendTime" : "CreateTime"); break;
	}
	return true;
}

bool brk_config_was_given(const brk_config *cfg, const char *name)
{
	int i = key_index(name);
	return i >= 0 && (cfg->given.keys[i / 8] & (1u << (i % 8)));
}

/* Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the keys that set the
 * same thing, highest precedence first. Returns the count (1 to 3). */
static int synonym_names(const char *name, const char *out[3])
{
	static const char *const groups[][4] = {
		{ "log.roll.ms", "log.roll.hours", NULL, NULL },
		{ "log.roll.jitter.ms", "log.roll.jitter.hours", NULL, NULL },
		{ "log.retention.ms", "log.retention.minutes", "log.retention.hours", NULL },
	};
	if (strcmp(name, "log.flush.interval.ms") == 0) {
		/* log.flush.scheduler.interval.ms is its default; not the reverse */
		out[0] = name;
		out[1] = "log.flush.scheduler.interval.ms";
		return 2;
	}
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (int k = 0; groups[g][k]; k++)
			if (strcmp(groups[g][k], name) == 0) {
				int n = 0;
				while (groups[g][n]) {
					out[n] = groups[g][n];
					n++;
				}
				return n;
			}
	out[0] = name;
	return 1;
}

static const char *dyn_lookup(const ctl_config_entry *e, int32_t n, const char *name)
{
	for (int32_t i = n - 1; i >= 0; i--)
		if (e[i].name && strcmp(e[i].name, name) == 0)
			return e[i].value;
	return NULL;
}

int brk_config_synonyms(const brk_config_layers *layers, const char *name,
			brk_config_synonym *out, int max)
{
	const char *names[3];
	int nn = synonym_names(name, names);
	brk_config defaults;
	brk_config_defaults(&defaults);
	brk_config_synonym all[4 * 3];
	int n = 0;
	for (int layer = 0; layer < 4; layer++) {
		for (int k = 0; k < nn; k++) {
			const char *nm = names[k];
			const char *v = NULL;
			brk_config_synonym *s = &all[n];
			if (layer == 0 || layer == 1) {
				v = layer == 0 ? dyn_lookup(layers->dynamic_broker, layers->ndynamic_broker, nm)
					       : dyn_lookup(layers->dynamic_default, layers->ndynamic_default, nm);
				if (!v)
					continue;
				/* point at the layer's own copy of the name */
				const ctl_config_entry *e = layer == 0 ? layers->dynamic_broker : layers->dynamic_default;
				int32_t ne = layer == 0 ? layers->ndynamic_broker : layers->ndynamic_default;
				s->name = nm;
				for (int32_t j = 0; j < ne; j++)
					if (strcmp(e[j].name, nm) == 0)
						s->name = e[j].name;
				snprintf(s->value, sizeof(s->value), "%s", v);
				s->source = layer == 0 ? BRK_CONFIG_SOURCE_DYNAMIC_BROKER
						       : BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER;
			} else if (layer == 2) {
				int i = key_index(nm);
				if (i < 0 || !layers->static_cfg || !brk_config_was_given(layers->static_cfg, nm))
					continue;
				s->name = key_defs[i].k.name;
				brk_config_format(layers->static_cfg, nm, s->value, sizeof(s->value));
				s->source = BRK_CONFIG_SOURCE_STATIC_BROKER;
			} else {
				int i = key_index(nm);
				if (i < 0 || !key_defs[i].k.has_default)
					continue;
				s->name = key_defs[i].k.name;
				brk_config_format(&defaults, nm, s->value, sizeof(s->value));
				s->source = BRK_CONFIG_SOURCE_DEFAULT;
			}
			n++;
		}
	}
	/* Kafka drops the synonyms before the first one of name itself. */
	int first = 0;
	while (first < n && strcmp(all[first].name, name) != 0)
		first++;
	int count = 0;
	for (int i = first; i < n && count < max; i++)
		out[count++] = all[i];
	return count;
}

void brk_config_rebuild(const brk_config_layers *layers, brk_config *out, FILE *warn)
{
	*out = *layers->static_cfg;
	for (int layer = 0; layer < 2; layer++) {
		const ctl_config_entry *e = layer == 0 ? layers->dynamic_default : layers->dynamic_broker;
		int32_t n = layer == 0 ? layers->ndynamic_default : layers->ndynamic_broker;
		for (int32_t i = 0; i < n; i++) {
			const brk_config_key *k = brk_config_key_find(e[i].name);
			if (!k)
				continue; /* not a key we read: kept, not used */
			char err[512];
			if (!k->dynamic) {
				if (warn)
					fprintf(warn, "samsa: warning: dynamic config %s cannot be applied at "
						      "runtime; ignored\n", e[i].name);
				continue;
			}
			if (brk_config_set(out, e[i].name, e[i].value, NULL, err, sizeof(err)) < 0 && warn)
				fprintf(warn, "samsa: warning: dynamic config ignored: %s\n", err);
		}
	}
}

const brk_listener *brk_config_advertised(const brk_config *cfg)
{
	if (cfg->nadvertised > 0)
		return &cfg->advertised[0];
	if (cfg->nlisteners > 0)
		return &cfg->listeners[0];
	return NULL;
}

const char *brk_config_advertised_host(const brk_listener *l)
{
	static char hostname[256];
	if (l && l->host[0])
		return l->host;
	if (!hostname[0] && gethostname(hostname, sizeof(hostname) - 1) != 0)
		snprintf(hostname, sizeof(hostname), "localhost");
	return hostname;
}
