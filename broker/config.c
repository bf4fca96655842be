/*
 * config.c - server.properties: Kafka's broker keys, defaults and validators
 * (Kafka 4.3 broker configuration docs; ServerLogConfigs / KafkaConfig), and
 * a reader for Java's properties file format (java.util.Properties.load).
 *
 * One table (key_defs, Kafka's ConfigDef) holds every key this broker
 * reads: its name, Kafka's type, default and validator, whether it can
 * change at runtime, its documentation, and where its value is kept. The
 * defaults, the parsing of a setting, DescribeConfigs and the dynamic
 * config checks all read it.
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "broker/errbuf.h"
#include "controller/ctl.h"

#define MS_PER_MINUTE INT64_C(60000)
#define MS_PER_HOUR INT64_C(3600000)

/* ---- value parsing ---- */

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
		return brk_fail(err, errsize, "%s: value is not a number", key);
	const char *p = buf;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return brk_fail(err, errsize, "%s=%s: not a number", key, buf);
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return brk_fail(err, errsize, "%s=%s: not a number", key, buf);
	errno = 0;
	long long v = strtoll(buf, NULL, 10);
	if (errno == ERANGE || v < min || v > max)
		return brk_fail(err, errsize, "%s=%s: out of range (%" PRId64 " to %" PRId64 ")", key, buf,
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
	return brk_fail(err, errsize, "%s=%s: must be true or false", key, value);
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
		return brk_fail(err, errsize, "%s: value too long", key);
	brk_listener parsed[BRK_MAX_LISTENERS];
	int n = 0;
	char *save = NULL;
	for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[512];
		if (trim_copy(item, one, sizeof(one)) < 0)
			return brk_fail(err, errsize, "%s: listener too long", key);
		if (!one[0])
			continue;
		if (n == BRK_MAX_LISTENERS)
			return brk_fail(err, errsize, "%s: at most %d listeners are supported", key,
				    BRK_MAX_LISTENERS);
		brk_listener l;
		memset(&l, 0, sizeof(l));
		char *sep = strstr(one, "://");
		if (!sep || sep == one)
			return brk_fail(err, errsize,
				    "%s: \"%s\" is not a listener (expected NAME://host:port, e.g. PLAINTEXT://127.0.0.1:9092)",
				    key, one);
		size_t nlen = (size_t)(sep - one);
		if (nlen >= sizeof(l.name))
			return brk_fail(err, errsize, "%s: listener name too long in \"%s\"", key, one);
		for (size_t i = 0; i < nlen; i++) {
			unsigned char c = (unsigned char)one[i];
			if (!isalnum(c) && c != '_' && c != '-' && c != '.')
				return brk_fail(err, errsize, "%s: bad listener name in \"%s\"", key, one);
			l.name[i] = (char)toupper(c);
		}
		char *hp = sep + 3;
		char *colon = strrchr(hp, ':');
		if (!colon)
			return brk_fail(err, errsize, "%s: \"%s\" has no port (expected NAME://host:port)", key,
				    one);
		*colon = '\0';
		const char *host = hp;
		size_t hlen = strlen(host);
		if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
			host++;
			hlen -= 2;
		}
		if (hlen >= sizeof(l.host))
			return brk_fail(err, errsize, "%s: host too long in \"%s\"", key, one);
		for (size_t i = 0; i < hlen; i++) {
			unsigned char c = (unsigned char)host[i];
			if (!isalnum(c) && !strchr("-%._:", c))
				return brk_fail(err, errsize, "%s: bad host \"%.*s\" in listener %s", key,
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
				return brk_fail(err, errsize, "%s: listener name %s is used twice", key, l.name);
			if (l.port != 0 && parsed[i].port == l.port)
				return brk_fail(err, errsize, "%s: port %d is used by two listeners", key, l.port);
		}
		parsed[n++] = l;
	}
	if (n == 0)
		return brk_fail(err, errsize, "%s: no listener given", key);
	memcpy(out, parsed, (size_t)n * sizeof(*out));
	*nout = n;
	return 0;
}

/* ---- the key table (Kafka's ConfigDef) ---- */

/* Kafka broker keys with no effect here, accepted without a warning.
 * An entry ending in '.' matches every key with that prefix. Keys of the
 * table below are looked up first. */
static const char *const known_ignored[] = {
	"socket.", "offsets.", "transaction.", "zookeeper.", "group.", "log.cleaner.",
	"log.retention.", "log.flush.", "replica.", "controller.",
	"share.", "metric.", "metrics.", "quota.", "client.quota.",
	"num.replica.fetchers",
	"num.replica.alter.log.dirs.threads",
	"log.delete.delay.ms", "log.dir.failure.timeout.ms",
	"process.roles", "inter.broker.protocol.version",
	"broker.rack", "broker.id.generation.enable", "reserved.broker.max.id",
	"queued.max.requests", "connections.max.reauth.ms",
	"max.connection.creation.rate",
	"fetch.max.bytes", "fetch.purgatory.purge.interval.requests",
	"producer.purgatory.purge.interval.requests", "delete.records.purgatory.purge.interval.requests",
	"request.timeout.ms", "background.threads",
	"alter.config.policy.class.name",
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

/* How a key's value is kept in brk_config. */
enum key_kind {
	K_I16, K_I32, K_I64, /* an integer in [min, max] (Kafka's Range validator) */
	K_BOOL,              /* true or false in any case (Java's Boolean.parseBoolean, strict) */
	K_DOUBLE,            /* a number in [dmin, dmax], dmin left out when dmin_open */
	K_STR,               /* a string field of size bytes, trimmed */
	K_ENUM,              /* a string field, one of choices (Kafka's ValidString.in) */
	K_SPECIAL,           /* anything else: set and format do the work */
};

typedef struct key_def key_def;

/* Parse value for key d and store it in cfg: 0, or -1 with err set and cfg
 * unchanged. warn gets warnings (may be NULL). */
typedef int (*key_set_fn)(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			  char *err, size_t errsize);
/* Key d's value in cfg, in Kafka's string form. */
typedef void (*key_format_fn)(const brk_config *cfg, const key_def *d, char *out, size_t outsize);

/*
 * A key of a synonym group (Kafka's KafkaConfig getters such as
 * logRetentionTimeMillis): its value times unit goes to the effective
 * field eff unless a key of the group with a higher level has set it
 * already; cfg->level holds the group's highest level so far, so the order
 * of the settings does not matter.
 */
typedef struct key_prec {
	uint8_t level;          /* 1 and up; 0: the key is in no group */
	size_t level_at;        /* offsetof(brk_config, level.<group>) */
	size_t eff;             /* offsetof the effective field */
	enum key_kind eff_kind; /* K_I32 or K_I64 */
	int64_t unit;           /* the effective value is the value times this */
	bool negative_unlimited; /* a negative effective value is kept as -1 */
} key_prec;

struct key_def {
	brk_config_key k;            /* name, type, dynamic, default, doc */
	enum key_kind kind;
	size_t offset, size;         /* the key's own field in brk_config */
	int64_t min, max;            /* K_I16, K_I32, K_I64 */
	double dmin, dmax;           /* K_DOUBLE */
	bool dmin_open;
	const char *const *choices;  /* K_ENUM, NULL-terminated */
	key_prec prec;
	/* Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the keys that set
	 * the same thing, highest precedence first, NULL-terminated (at most
	 * MAX_SYNONYM_NAMES); NULL: the key alone. */
	const char *const *synonyms;
	key_set_fn set;              /* when set: parses instead of kind */
	key_format_fn format;        /* when set: formats instead of kind */
};

#define MAX_SYNONYM_NAMES 3

static void store_int(void *field, enum key_kind kind, int64_t v)
{
	if (kind == K_I16)
		*(int16_t *)field = (int16_t)v;
	else if (kind == K_I32)
		*(int32_t *)field = (int32_t)v;
	else
		*(int64_t *)field = v;
}

/* ---- keys that are not a plain field ---- */

static int set_listeners(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			 char *err, size_t errsize)
{
	(void)warn;
	return parse_listeners(d->k.name, value, cfg->listeners, &cfg->nlisteners, err, errsize);
}

static int set_advertised(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			  char *err, size_t errsize)
{
	(void)warn;
	char buf[8];
	if (trim_copy(value, buf, sizeof(buf)) == 0) { /* empty: same as unset */
		cfg->nadvertised = 0;
		return 0;
	}
	return parse_listeners(d->k.name, value, cfg->advertised, &cfg->nadvertised, err, errsize);
}

static void format_listener_list(const brk_listener *l, int n, char *out, size_t outsize)
{
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t used = strlen(out);
		bool v6 = strchr(l[i].host, ':') != NULL;
		snprintf(out + used, outsize - used, "%s%s://%s%s%s:%d", i ? "," : "", l[i].name,
			 v6 ? "[" : "", l[i].host, v6 ? "]" : "", l[i].port);
	}
}

static void format_listeners(const brk_config *cfg, const key_def *d, char *out, size_t outsize)
{
	(void)d;
	format_listener_list(cfg->listeners, cfg->nlisteners, out, outsize);
}

static void format_advertised(const brk_config *cfg, const key_def *d, char *out, size_t outsize)
{
	(void)d;
	format_listener_list(cfg->advertised, cfg->nadvertised, out, outsize);
}

/* log.cleanup.policy: a non-empty list of compact and delete (Kafka's
 * ConfigDef.ValidList.in("compact", "delete")), kept as given, trimmed. */
static int set_cleanup_policy(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			      char *err, size_t errsize)
{
	(void)warn;
	const char *key = d->k.name;
	char buf[64], out[sizeof(cfg->log_cleanup_policy)] = "";
	if (trim_copy(value, buf, sizeof(buf)) < 0)
		return brk_fail(err, errsize, "%s: value too long", key);
	char *save = NULL;
	int n = 0;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[16];
		if (trim_copy(item, one, sizeof(one)) < 0 ||
		    (strcmp(one, "compact") != 0 && strcmp(one, "delete") != 0))
			return brk_fail(err, errsize, "%s=%s: each item must be compact or delete", key, value);
		size_t used = strlen(out);
		if (used + strlen(one) + 2 > sizeof(out))
			return brk_fail(err, errsize, "%s=%s: too many items", key, value);
		snprintf(out + used, sizeof(out) - used, "%s%s", n ? "," : "", one);
		n++;
	}
	if (n == 0)
		return brk_fail(err, errsize, "%s: at least one of compact, delete is required", key);
	memcpy(cfg->log_cleanup_policy, out, sizeof(out));
	return 0;
}

/* log.dirs and log.dir: a comma-separated list (Kafka's LIST type) of
 * which one directory is used; log.dirs wins over log.dir whatever the
 * order (their levels). */
static int set_log_dir(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
		       char *err, size_t errsize)
{
	const char *key = d->k.name;
	uint8_t *level = (uint8_t *)cfg + d->prec.level_at;
	if (d->prec.level < *level)
		return 0;
	const char *p = value;
	while (*p && (isspace((unsigned char)*p) || *p == ','))
		p++;
	const char *comma = strchr(p, ',');
	size_t n = comma ? (size_t)(comma - p) : strlen(p);
	while (n > 0 && isspace((unsigned char)p[n - 1]))
		n--;
	if (n == 0)
		return brk_fail(err, errsize, "%s: no directory given", key);
	if (n >= sizeof(cfg->log_dir))
		return brk_fail(err, errsize, "%s: path too long", key);
	memcpy(cfg->log_dir, p, n);
	cfg->log_dir[n] = '\0';
	*level = d->prec.level;
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
static int set_ip_overrides(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			    char *err, size_t errsize)
{
	(void)warn;
	const char *key = d->k.name;
	char buf[4096];
	if (trim_copy(value, buf, sizeof(buf)) < 0)
		return brk_fail(err, errsize, "%s: value too long", key);
	struct brk_ip_override parsed[BRK_MAX_IP_OVERRIDES];
	int n = 0;
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char one[300];
		if (trim_copy(item, one, sizeof(one)) <= 0)
			continue;
		char *colon = strrchr(one, ':');
		if (!colon || colon == one)
			return brk_fail(err, errsize, "%s=%s: each entry must be host:count", key, value);
		*colon = '\0';
		int64_t max;
		if (parse_int(key, colon + 1, 0, INT32_MAX, &max, err, errsize) < 0)
			return -1;
		if (n == BRK_MAX_IP_OVERRIDES)
			return brk_fail(err, errsize, "%s: at most %d entries", key, BRK_MAX_IP_OVERRIDES);
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
			return brk_fail(err, errsize, "%s: unknown host %s", key, host);
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

/* The overrides as resolved, "address:count,..." (an IPv6 address bare:
 * the count follows the last colon, as the parser reads it). */
static void format_ip_overrides(const brk_config *cfg, const key_def *d, char *out, size_t outsize)
{
	(void)d;
	out[0] = '\0';
	for (int i = 0; i < cfg->nmax_connections_per_ip_overrides; i++) {
		size_t used = strlen(out);
		snprintf(out + used, outsize - used, "%s%s:%" PRId32, i ? "," : "",
			 cfg->max_connections_per_ip_overrides[i].ip,
			 cfg->max_connections_per_ip_overrides[i].max);
	}
}

/* log.message.timestamp.type: CreateTime or LogAppendTime (kept as a flag). */
static int set_timestamp_type(brk_config *cfg, const key_def *d, const char *value, FILE *warn,
			      char *err, size_t errsize)
{
	(void)warn;
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
	return brk_fail(err, errsize, "%s=%s: must be CreateTime or LogAppendTime", d->k.name, value);
}

static void format_timestamp_type(const brk_config *cfg, const key_def *d, char *out,
				  size_t outsize)
{
	(void)d;
	snprintf(out, outsize, "%s", cfg->log_append_time ? "LogAppendTime" : "CreateTime");
}

static const char *const compression_types[] = { "uncompressed", "zstd", "lz4", "snappy", "gzip",
						 "producer", NULL };

/* Kafka's brokerConfigSynonyms groups. */
static const char *const roll_synonyms[] = { "log.roll.ms", "log.roll.hours", NULL };
static const char *const jitter_synonyms[] = { "log.roll.jitter.ms", "log.roll.jitter.hours", NULL };
static const char *const retention_synonyms[] = { "log.retention.ms", "log.retention.minutes",
						  "log.retention.hours", NULL };
/* log.flush.scheduler.interval.ms is log.flush.interval.ms's default; not
 * the reverse, so it has no group of its own. */
static const char *const flush_synonyms[] = { "log.flush.interval.ms",
					      "log.flush.scheduler.interval.ms", NULL };

/* ---- the table ---- */

#define T_BOOL BRK_CONFIG_TYPE_BOOLEAN
#define T_STR BRK_CONFIG_TYPE_STRING
#define T_INT BRK_CONFIG_TYPE_INT
#define T_SHORT BRK_CONFIG_TYPE_SHORT
#define T_LONG BRK_CONFIG_TYPE_LONG
#define T_DOUBLE BRK_CONFIG_TYPE_DOUBLE
#define T_LIST BRK_CONFIG_TYPE_LIST

#define KEY(name, type, dynamic, dflt, doc) .k = { name, type, dynamic, dflt, doc }
#define FIELD(kind_, f) \
	.kind = kind_, .offset = offsetof(brk_config, f), .size = sizeof(((brk_config *)0)->f)
#define ATLEAST16(n) .min = (n), .max = INT16_MAX
#define ATLEAST32(n) .min = (n), .max = INT32_MAX
#define ATLEAST64(n) .min = (n), .max = INT64_MAX
#define ANY32 ATLEAST32(INT32_MIN)
#define ANY64 ATLEAST64(INT64_MIN)
#define SPECIAL(set_, format_) .kind = K_SPECIAL, .set = set_, .format = format_
/* Level lv of synonym group g, whose effective value is field eff (of
 * kind ek), unit u times this key's value. */
#define PREC(g, lv, eff_, ek, u)                                                               \
	.prec = { .level = lv, .level_at = offsetof(brk_config, level.g),                     \
		  .eff = offsetof(brk_config, eff_), .eff_kind = ek, .unit = u }

/*
 * Every broker key this broker reads, sorted by name: Kafka's type, whether
 * it is dynamic, Kafka's default (in Kafka's string form; NULL for null),
 * our documentation, where the value is kept and Kafka's validator (where
 * Kafka has none, the widest range that still means something here).
 *
 * dynamic: Kafka can change it at runtime (DynamicBrokerConfig.
 * ALL_DYNAMIC_CONFIGS) and so can we, at once: the defaults of topic
 * configs (DynamicLogConfig), producer.id.expiration.ms, the cleaner's
 * keys (LogCleaner's reconfigurable configs; read at each round), and
 * num.replica.fetchers (DynamicThreadPool; the fetchers follow it). Keys
 * Kafka changes at runtime but we cannot (listeners, network and I/O thread
 * counts) are read-only here.
 */
static const key_def key_defs[] = {
	{ KEY("advertised.listeners", T_STR, false, NULL,
	      "The listeners clients are told to connect to, NAME://host:port separated by "
	      "commas; the listeners themselves when not set."),
	  SPECIAL(set_advertised, format_advertised) },
	{ KEY("allow.everyone.if.no.acl.found", T_BOOL, false, "false",
	      "With an authorizer: whether a resource no ACL applies to is open to everyone."),
	  FIELD(K_BOOL, allow_everyone_if_no_acl_found) },
	{ KEY("authorizer.class.name", T_STR, false, "",
	      "The authorizer: kafka.security.authorizer.AclAuthorizer or "
	      "org.apache.kafka.metadata.authorizer.StandardAuthorizer turn Kafka's ACLs on; "
	      "empty: no authorization."),
	  FIELD(K_STR, authorizer_class_name) },
	{ KEY("auto.create.topics.enable", T_BOOL, false, "true",
	      "Create a topic when a client asks for its metadata and it does not exist."),
	  FIELD(K_BOOL, auto_create_topics_enable) },
	{ KEY("auto.leader.rebalance.enable", T_BOOL, false, "true",
	      "Whether the controller moves leadership back to each partition's preferred replica "
	      "when a broker leads too many partitions that are not its own."),
	  FIELD(K_BOOL, auto_leader_rebalance_enable) },
	{ KEY("broker.id", T_INT, false, "0",
	      "The id of this broker in the cluster (a synonym of node.id)."),
	  FIELD(K_I32, broker_id), ATLEAST32(0),
	  PREC(broker_id, 2, broker_id, K_I32, 1) },
	{ KEY("broker.rack", T_STR, false, NULL,
	      "The rack of this broker, registered with it and used to spread the replicas of new "
	      "topics over racks."),
	  FIELD(K_STR, broker_rack) },
	{ KEY("compression.gzip.level", T_INT, true, "-1",
	      "Default gzip level of topics whose compression.type is gzip."),
	  FIELD(K_I32, compression_gzip_level), .min = -1, .max = 9 },
	{ KEY("compression.lz4.level", T_INT, true, "9",
	      "Default lz4 level of topics whose compression.type is lz4."),
	  FIELD(K_I32, compression_lz4_level), .min = 1, .max = 17 },
	{ KEY("compression.type", T_STR, true, "producer",
	      "Default compression of topics: uncompressed, zstd, lz4, snappy, gzip, or "
	      "producer (keep what the producer sent)."),
	  FIELD(K_ENUM, compression_type), .choices = compression_types },
	{ KEY("compression.zstd.level", T_INT, true, "3",
	      "Default zstd level of topics whose compression.type is zstd."),
	  FIELD(K_I32, compression_zstd_level), .min = -131072, .max = 22 },
	{ KEY("connections.max.idle.ms", T_LONG, false, "600000",
	      "A client connection with no request and no progress for this long is closed (a "
	      "request in flight or waiting keeps it open)."),
	  FIELD(K_I64, connections_max_idle_ms), ANY64 },
	{ KEY("connections.max.reauth.ms", T_LONG, false, "0",
	      "SASL sessions last at most this long (KIP-368): the client is told the lifetime and "
	      "must re-authenticate before it ends, or its connection is closed; 0: no limit."),
	  FIELD(K_I64, connections_max_reauth_ms), ANY64 },
	{ KEY("controlled.shutdown.enable", T_BOOL, false, "true",
	      "On a clean stop, ask the controller to move this broker's leaderships away first."),
	  FIELD(K_BOOL, controlled_shutdown_enable) },
	{ KEY("controlled.shutdown.max.retries", T_INT, false, "3",
	      "How many times a controlled shutdown is asked for before the broker stops anyway."),
	  FIELD(K_I32, controlled_shutdown_max_retries), ATLEAST32(0) },
	{ KEY("controlled.shutdown.retry.backoff.ms", T_LONG, false, "5000",
	      "The wait between two controlled shutdown attempts."),
	  FIELD(K_I64, controlled_shutdown_retry_backoff_ms), ATLEAST64(0) },
	{ KEY("controller.quota.window.num", T_INT, false, "11",
	      "The number of samples kept for controller mutation quotas (KIP-599)."),
	  FIELD(K_I32, controller_quota_window_num), ATLEAST32(1) },
	{ KEY("controller.quota.window.size.seconds", T_INT, false, "1",
	      "The time span of each sample for controller mutation quotas."),
	  FIELD(K_I32, controller_quota_window_size_seconds), ATLEAST32(1) },
	{ KEY("controller.socket.timeout.ms", T_INT, false, "30000",
	      "How long the controller waits for a broker's answer to its requests."),
	  FIELD(K_I32, controller_socket_timeout_ms), ATLEAST32(0) },
	{ KEY("default.replication.factor", T_INT, false, "1",
	      "Replication factor of topics created without one."),
	  FIELD(K_I16, default_replication_factor), ATLEAST16(1) },
	{ KEY("delete.topic.enable", T_BOOL, false, "true",
	      "Whether DeleteTopics may delete topics."),
	  FIELD(K_BOOL, delete_topic_enable) },
	{ KEY("group.initial.rebalance.delay.ms", T_INT, false, "3000",
	      "How long the coordinator waits for more members before the first rebalance of a "
	      "new group."),
	  FIELD(K_I32, group_initial_rebalance_delay_ms), ATLEAST32(0) },
	{ KEY("group.max.session.timeout.ms", T_INT, false, "1800000",
	      "The largest session timeout a group member may ask for."),
	  FIELD(K_I32, group_max_session_timeout_ms), ANY32 },
	{ KEY("group.max.size", T_INT, false, "2147483647",
	      "The most members a consumer group may have."),
	  FIELD(K_I32, group_max_size), ATLEAST32(1) },
	{ KEY("group.min.session.timeout.ms", T_INT, false, "6000",
	      "The smallest session timeout a group member may ask for."),
	  FIELD(K_I32, group_min_session_timeout_ms), ANY32 },
	{ KEY("leader.imbalance.check.interval.seconds", T_LONG, false, "300",
	      "How often the controller checks whether leadership should move back to preferred "
	      "replicas."),
	  FIELD(K_I64, leader_imbalance_check_interval_seconds), ATLEAST64(1) },
	{ KEY("leader.imbalance.per.broker.percentage", T_INT, false, "10",
	      "The share (percent) of a broker's partitions led by another broker above which the "
	      "controller moves leadership back."),
	  FIELD(K_I32, leader_imbalance_per_broker_percentage), ATLEAST32(0) },
	{ KEY("listeners", T_STR, false, "PLAINTEXT://:9092",
	      "The addresses the broker listens on, NAME://host:port separated by commas."),
	  SPECIAL(set_listeners, format_listeners) },
	{ KEY("log.cleaner.backoff.ms", T_LONG, true, "15000",
	      "How long the cleaner sleeps when no log needs cleaning."),
	  FIELD(K_I64, log_cleaner_backoff_ms), ATLEAST64(0) },
	{ KEY("log.cleaner.dedupe.buffer.size", T_LONG, true, "134217728",
	      "Bytes of the cleaner's offset map (key hash to latest offset), shared by its "
	      "threads."),
	  FIELD(K_I64, log_cleaner_dedupe_buffer_size), ATLEAST64(0) },
	{ KEY("log.cleaner.delete.retention.ms", T_LONG, true, "86400000",
	      "Default delete.retention.ms of topics: how long tombstones stay in a compacted "
	      "log."),
	  FIELD(K_I64, log_cleaner_delete_retention_ms), ATLEAST64(0) },
	{ KEY("log.cleaner.enable", T_BOOL, false, "true",
	      "Run the log cleaner, which compacts topics whose cleanup.policy has compact."),
	  FIELD(K_BOOL, log_cleaner_enable) },
	{ KEY("log.cleaner.io.buffer.load.factor", T_DOUBLE, true, "0.9",
	      "How full the cleaner's offset map may get before a round stops early."),
	  FIELD(K_DOUBLE, log_cleaner_io_buffer_load_factor), .dmin = 0, .dmax = 1, .dmin_open = true },
	{ KEY("log.cleaner.io.buffer.size", T_INT, true, "524288",
	      "Bytes of the cleaner's read and write buffers."),
	  FIELD(K_I32, log_cleaner_io_buffer_size), ATLEAST32(0) },
	{ KEY("log.cleaner.max.compaction.lag.ms", T_LONG, true, "9223372036854775807",
	      "Default max.compaction.lag.ms of topics: the longest a record stays uncompacted."),
	  FIELD(K_I64, log_cleaner_max_compaction_lag_ms), ATLEAST64(1) },
	{ KEY("log.cleaner.min.cleanable.ratio", T_DOUBLE, true, "0.5",
	      "Default min.cleanable.dirty.ratio of topics: the share of uncleaned log that "
	      "makes a log worth cleaning."),
	  FIELD(K_DOUBLE, log_cleaner_min_cleanable_ratio), .dmin = 0, .dmax = 1 },
	{ KEY("log.cleaner.min.compaction.lag.ms", T_LONG, true, "0",
	      "Default min.compaction.lag.ms of topics: the shortest a record stays "
	      "uncompacted."),
	  FIELD(K_I64, log_cleaner_min_compaction_lag_ms), ATLEAST64(0) },
	{ KEY("log.cleaner.threads", T_INT, true, "1",
	      "Cleaner threads (rounds run one at a time; more threads only split the offset "
	      "map; a change applies from the next round)."),
	  FIELD(K_I32, log_cleaner_threads), ATLEAST32(0) },
	{ KEY("log.cleanup.policy", T_LIST, true, "delete",
	      "Default cleanup.policy of topics: delete (retention), compact, or both."),
	  FIELD(K_STR, log_cleanup_policy), .set = set_cleanup_policy },
	{ KEY("log.dir", T_STR, false, "/tmp/kafka-logs",
	      "The directory of the logs, when log.dirs is not set."),
	  FIELD(K_STR, log_dir), .set = set_log_dir,
	  .prec = { .level = 1, .level_at = offsetof(brk_config, level.log_dir) } },
	{ KEY("log.dirs", T_STR, false, NULL,
	      "The directories of the logs (only the first one is used)."),
	  FIELD(K_STR, log_dir), .set = set_log_dir,
	  .prec = { .level = 2, .level_at = offsetof(brk_config, level.log_dir) } },
	{ KEY("log.flush.interval.messages", T_LONG, true, "9223372036854775807",
	      "Default flush.messages of topics: fsync a log after this many messages."),
	  FIELD(K_I64, log_flush_interval_messages), ATLEAST64(1) },
	{ KEY("log.flush.interval.ms", T_LONG, true, NULL,
	      "Default flush.ms of topics: fsync a log when its oldest unflushed message is "
	      "this old; log.flush.scheduler.interval.ms when not set."),
	  FIELD(K_I64, log_flush_interval_ms), ATLEAST64(0),
	  PREC(log_flush_interval_ms, 2, log_flush_interval_ms, K_I64, 1), .synonyms = flush_synonyms },
	{ KEY("log.flush.offset.checkpoint.interval.ms", T_INT, false, "60000",
	      "How often the recovery points are written to recovery-point-offset-checkpoint "
	      "(0: only at start and at shutdown)."),
	  FIELD(K_I32, log_flush_offset_checkpoint_interval_ms), ATLEAST32(0) },
	{ KEY("log.flush.scheduler.interval.ms", T_LONG, false, "9223372036854775807",
	      "How often the flusher checks whether a log needs to be flushed."),
	  FIELD(K_I64, log_flush_scheduler_interval_ms), ATLEAST64(1),
	  PREC(log_flush_interval_ms, 1, log_flush_interval_ms, K_I64, 1) },
	{ KEY("log.flush.start.offset.checkpoint.interval.ms", T_INT, false, "60000",
	      "How often the log start offsets are written to log-start-offset-checkpoint (0: only "
	      "at start and at shutdown)."),
	  FIELD(K_I32, log_flush_start_offset_checkpoint_interval_ms), ATLEAST32(0) },
	{ KEY("log.index.interval.bytes", T_INT, true, "4096",
	      "Default index.interval.bytes of topics: bytes of log between two offset index "
	      "entries."),
	  FIELD(K_I32, log_index_interval_bytes), ATLEAST32(0) },
	{ KEY("log.index.size.max.bytes", T_INT, true, "10485760",
	      "Default segment.index.bytes of topics: the size of a segment's offset index."),
	  FIELD(K_I32, log_index_size_max_bytes), ATLEAST32(4) },
	{ KEY("log.local.retention.bytes", T_LONG, true, "-2",
	      "Default local.retention.bytes of topics (tiered storage; -2 means "
	      "retention.bytes)."),
	  FIELD(K_I64, log_local_retention_bytes), ATLEAST64(-2) },
	{ KEY("log.local.retention.ms", T_LONG, true, "-2",
	      "Default local.retention.ms of topics (tiered storage; -2 means retention.ms)."),
	  FIELD(K_I64, log_local_retention_ms), ATLEAST64(-2) },
	{ KEY("log.max.open.files", T_INT, false, "-1",
	      "The most descriptors the segment files of all partitions hold together (a Samsa "
	      "key; Kafka keeps every segment open): a segment nobody reads or writes is closed "
	      "when room is needed, least recently used first, and opened again when read or "
	      "written. -1: from the open file limit, what is left after 64 descriptors for the "
	      "process and room for max.connections (which gets at most half of it)."),
	  FIELD(K_I32, log_max_open_files), ATLEAST32(-1) },
	{ KEY("log.message.timestamp.after.max.ms", T_LONG, true, "3600000",
	      "Default message.timestamp.after.max.ms of topics: how far in the future a "
	      "record's timestamp may be."),
	  FIELD(K_I64, log_message_timestamp_after_max_ms), ATLEAST64(0) },
	{ KEY("log.message.timestamp.before.max.ms", T_LONG, true, "9223372036854775807",
	      "Default message.timestamp.before.max.ms of topics: how far in the past a "
	      "record's timestamp may be."),
	  FIELD(K_I64, log_message_timestamp_before_max_ms), ATLEAST64(0) },
	{ KEY("log.message.timestamp.type", T_STR, true, "CreateTime",
	      "Default message.timestamp.type of topics: CreateTime or LogAppendTime."),
	  SPECIAL(set_timestamp_type, format_timestamp_type) },
	{ KEY("log.preallocate", T_BOOL, true, "false",
	      "Default preallocate of topics: create segment files at their full size."),
	  FIELD(K_BOOL, log_preallocate) },
	{ KEY("log.retention.bytes", T_LONG, true, "-1",
	      "Default retention.bytes of topics: the most bytes a partition keeps (-1: no "
	      "limit)."),
	  FIELD(K_I64, log_retention_bytes), ANY64 },
	{ KEY("log.retention.check.interval.ms", T_LONG, false, "300000",
	      "How often logs are checked for segments to delete."),
	  FIELD(K_I64, log_retention_check_interval_ms), ATLEAST64(1) },
	{ KEY("log.retention.hours", T_INT, false, "168",
	      "Default retention of topics in hours, below log.retention.minutes and "
	      "log.retention.ms."),
	  FIELD(K_I32, given.log_retention_hours), ANY32,
	  PREC(log_retention, 1, log_retention_ms, K_I64, MS_PER_HOUR), .prec.negative_unlimited = true,
	  .synonyms = retention_synonyms },
	{ KEY("log.retention.minutes", T_INT, false, NULL,
	      "Default retention of topics in minutes, below log.retention.ms."),
	  FIELD(K_I32, given.log_retention_minutes), ANY32,
	  PREC(log_retention, 2, log_retention_ms, K_I64, MS_PER_MINUTE), .prec.negative_unlimited = true,
	  .synonyms = retention_synonyms },
	{ KEY("log.retention.ms", T_LONG, true, NULL,
	      "Default retention.ms of topics: how long a record is kept (-1: forever)."),
	  FIELD(K_I64, log_retention_ms), ANY64,
	  PREC(log_retention, 3, log_retention_ms, K_I64, 1), .prec.negative_unlimited = true,
	  .synonyms = retention_synonyms },
	{ KEY("log.roll.hours", T_INT, false, "168",
	      "Default segment age in hours before a new segment is rolled, below log.roll.ms."),
	  FIELD(K_I32, given.log_roll_hours), ATLEAST32(1),
	  PREC(log_roll, 1, log_roll_ms, K_I64, MS_PER_HOUR), .synonyms = roll_synonyms },
	{ KEY("log.roll.jitter.hours", T_INT, false, "0",
	      "Default segment roll jitter in hours, below log.roll.jitter.ms."),
	  FIELD(K_I32, given.log_roll_jitter_hours), ATLEAST32(0),
	  PREC(log_roll_jitter, 1, log_roll_jitter_ms, K_I64, MS_PER_HOUR), .synonyms = jitter_synonyms },
	{ KEY("log.roll.jitter.ms", T_LONG, true, NULL,
	      "Default segment.jitter.ms of topics: a random amount taken off the segment age."),
	  FIELD(K_I64, log_roll_jitter_ms), ANY64,
	  PREC(log_roll_jitter, 2, log_roll_jitter_ms, K_I64, 1), .synonyms = jitter_synonyms },
	{ KEY("log.roll.ms", T_LONG, true, NULL,
	      "Default segment.ms of topics: the age at which a segment is rolled."),
	  FIELD(K_I64, log_roll_ms), ATLEAST64(1),
	  PREC(log_roll, 2, log_roll_ms, K_I64, 1), .synonyms = roll_synonyms },
	{ KEY("log.segment.bytes", T_INT, true, "1073741824",
	      "Default segment.bytes of topics: the size at which a segment is rolled."),
	  FIELD(K_I64, log_segment_bytes), ATLEAST32(1024 * 1024) },
	{ KEY("log.segment.delete.delay.ms", T_LONG, true, "60000",
	      "Default file.delete.delay.ms of topics: how long a deleted segment's files stay "
	      "on disk."),
	  FIELD(K_I64, log_segment_delete_delay_ms), ATLEAST64(0) },
	{ KEY("max.connection.creation.rate", T_INT, true, "2147483647",
	      "The most new connections accepted per second on the broker (KIP-612); faster "
	      "ones wait to be accepted. listener.name.<l>.max.connection.creation.rate sets a "
	      "listener's own bound (this one when not set)."),
	  FIELD(K_I32, max_connection_creation_rate), ATLEAST32(0) },
	{ KEY("max.connections", T_INT, false, "2147483647",
	      "The most client connections open at once; above it accepting pauses until one "
	      "closes."),
	  FIELD(K_I32, max_connections), ATLEAST32(0) },
	{ KEY("max.connections.per.ip", T_INT, false, "2147483647",
	      "The most connections from one address; a connection over it is closed at once."),
	  FIELD(K_I32, max_connections_per_ip), ATLEAST32(0) },
	{ KEY("max.connections.per.ip.overrides", T_STR, false, "",
	      "Per-address exceptions to max.connections.per.ip, host:count separated by commas "
	      "(hosts resolved once, when read)."),
	  SPECIAL(set_ip_overrides, format_ip_overrides) },
	{ KEY("max.incremental.fetch.session.cache.slots", T_INT, false, "1000",
	      "The most incremental fetch sessions (KIP-227) kept at once; 0 disables them."),
	  FIELD(K_I32, max_incremental_fetch_session_cache_slots), ATLEAST32(0) },
	{ KEY("max.request.partition.size.limit", T_INT, false, "2000",
	      "The most partitions a DescribeTopicPartitions response holds (KIP-966), whatever "
	      "the request asks for."),
	  FIELD(K_I32, max_request_partition_size_limit), ATLEAST32(1) },
	{ KEY("message.max.bytes", T_INT, true, "1048588",
	      "Default max.message.bytes of topics: the largest record batch accepted."),
	  FIELD(K_I32, message_max_bytes), ATLEAST32(0) },
	{ KEY("min.insync.replicas", T_INT, true, "1",
	      "Default min.insync.replicas of topics: replicas that must have a write "
	      "acknowledged with acks=all."),
	  FIELD(K_I16, min_insync_replicas), ATLEAST16(1) },
	{ KEY("node.id", T_INT, false, NULL,
	      "The id of this node in the cluster."),
	  FIELD(K_I32, given.node_id), ATLEAST32(0),
	  PREC(broker_id, 1, broker_id, K_I32, 1) },
	{ KEY("num.io.threads", T_INT, false, "8",
	      "Accepted for compatibility; samsa sizes its threads itself."),
	  FIELD(K_I32, num_io_threads), ATLEAST32(1) },
	{ KEY("num.network.threads", T_INT, false, "3",
	      "Accepted for compatibility; samsa sizes its threads itself."),
	  FIELD(K_I32, num_network_threads), ATLEAST32(1) },
	{ KEY("num.partitions", T_INT, false, "1",
	      "Partition count of topics created without one."),
	  FIELD(K_I32, num_partitions), ATLEAST32(1) },
	{ KEY("num.recovery.threads.per.data.dir", T_INT, false, "2",
	      "Threads that fsync the logs at shutdown, in parallel (Kafka also recovers logs at "
	      "start with them; samsa opens logs on its loop)."),
	  FIELD(K_I32, num_recovery_threads_per_data_dir), ATLEAST32(1) },
	{ KEY("num.replica.fetchers", T_INT, true, "1",
	      "Fetcher connections this broker opens to each leader it replicates from."),
	  FIELD(K_I32, num_replica_fetchers), ATLEAST32(1) },
	{ KEY("offset.metadata.max.bytes", T_INT, false, "4096",
	      "The longest metadata string of a committed offset."),
	  FIELD(K_I32, offset_metadata_max_bytes), ANY32 },
	{ KEY("offsets.commit.timeout.ms", T_INT, false, "5000",
	      "How long an offset commit waits for the replicas of __consumer_offsets before it "
	      "fails."),
	  FIELD(K_I32, offsets_commit_timeout_ms), ATLEAST32(1) },
	{ KEY("offsets.retention.check.interval.ms", T_LONG, false, "600000",
	      "How often expired committed offsets are looked for."),
	  FIELD(K_I64, offsets_retention_check_interval_ms), ATLEAST64(1) },
	{ KEY("offsets.retention.minutes", T_INT, false, "10080",
	      "How long the committed offsets of an empty group are kept."),
	  FIELD(K_I32, offsets_retention_minutes), ATLEAST32(1) },
	{ KEY("offsets.topic.num.partitions", T_INT, false, "50",
	      "Partition count of __consumer_offsets."),
	  FIELD(K_I32, offsets_topic_num_partitions), ATLEAST32(1) },
	{ KEY("offsets.topic.replication.factor", T_SHORT, false, "3",
	      "Replication factor of __consumer_offsets (capped to the live brokers)."),
	  FIELD(K_I16, offsets_topic_replication_factor), ATLEAST16(1) },
	{ KEY("offsets.topic.segment.bytes", T_INT, false, "104857600",
	      "Segment size of __consumer_offsets."),
	  FIELD(K_I32, offsets_topic_segment_bytes), ATLEAST32(1) },
	{ KEY("producer.id.expiration.ms", T_INT, true, "86400000",
	      "How long the state of an idle producer id is kept."),
	  FIELD(K_I32, producer_id_expiration_ms), ATLEAST32(1) },
	{ KEY("queued.max.request.bytes", T_LONG, false, "-1",
	      "Bytes of requests read but not yet answered above which no more requests are "
	      "read (-1: no bound)."),
	  FIELD(K_I64, queued_max_request_bytes), ANY64 },
	{ KEY("quota.window.num", T_INT, false, "11",
	      "The number of samples kept in memory for client quotas."),
	  FIELD(K_I32, quota_window_num), ATLEAST32(1) },
	{ KEY("quota.window.size.seconds", T_INT, false, "1",
	      "The time span of each sample for client quotas."),
	  FIELD(K_I32, quota_window_size_seconds), ATLEAST32(1) },
	{ KEY("replica.fetch.backoff.ms", T_INT, false, "1000",
	      "How long a replica fetcher waits after a failed fetch before it tries again."),
	  FIELD(K_I32, replica_fetch_backoff_ms), ATLEAST32(0) },
	{ KEY("replica.fetch.max.bytes", T_INT, false, "1048576",
	      "Bytes a follower asks for per partition in one fetch (a larger first batch still "
	      "comes whole)."),
	  FIELD(K_I32, replica_fetch_max_bytes), ATLEAST32(0) },
	{ KEY("replica.fetch.min.bytes", T_INT, false, "1",
	      "Bytes a follower's fetch waits for, up to replica.fetch.wait.max.ms."),
	  FIELD(K_I32, replica_fetch_min_bytes), ATLEAST32(0) },
	{ KEY("replica.fetch.response.max.bytes", T_INT, false, "10485760",
	      "Bytes a follower asks for in one fetch over all partitions (a larger first batch "
	      "still comes whole)."),
	  FIELD(K_I32, replica_fetch_response_max_bytes), ATLEAST32(0) },
	{ KEY("replica.fetch.wait.max.ms", T_INT, false, "500",
	      "The longest a follower's fetch waits at the leader for replica.fetch.min.bytes; at "
	      "most replica.lag.time.max.ms and replica.socket.timeout.ms."),
	  FIELD(K_I32, replica_fetch_wait_max_ms), ATLEAST32(0) },
	{ KEY("replica.high.watermark.checkpoint.interval.ms", T_LONG, false, "5000",
	      "How often the high watermarks are written to disk."),
	  FIELD(K_I64, replica_high_watermark_checkpoint_interval_ms), ATLEAST64(1) },
	{ KEY("replica.lag.time.max.ms", T_LONG, false, "30000",
	      "A follower that has not fetched, or not caught up with the leader's log end, for "
	      "this long is removed from the ISR."),
	  FIELD(K_I64, replica_lag_time_max_ms), ATLEAST64(0) },
	{ KEY("replica.socket.receive.buffer.bytes", T_INT, false, "65536",
	      "SO_RCVBUF of replica fetcher connections (-1: the OS default)."),
	  FIELD(K_I32, replica_socket_receive_buffer_bytes), ATLEAST32(-1) },
	{ KEY("replica.socket.timeout.ms", T_INT, false, "30000",
	      "How long a replica fetcher waits for a leader's answer; at least "
	      "replica.fetch.wait.max.ms."),
	  FIELD(K_I32, replica_socket_timeout_ms), ATLEAST32(0) },
	{ KEY("request.timeout.ms", T_INT, false, "30000",
	      "How long this broker waits for another broker's answer to its requests."),
	  FIELD(K_I32, request_timeout_ms), ATLEAST32(0) },
	{ KEY("socket.receive.buffer.bytes", T_INT, false, "102400",
	      "SO_RCVBUF of client connections (-1: the OS default)."),
	  FIELD(K_I32, socket_receive_buffer_bytes), ATLEAST32(-1) },
	{ KEY("socket.request.max.bytes", T_INT, false, "104857600",
	      "The largest request accepted."),
	  FIELD(K_I32, socket_request_max_bytes), ATLEAST32(1) },
	{ KEY("socket.send.buffer.bytes", T_INT, false, "102400",
	      "SO_SNDBUF of client connections (-1: the OS default)."),
	  FIELD(K_I32, socket_send_buffer_bytes), ATLEAST32(-1) },
	{ KEY("super.users", T_STR, false, NULL,
	      "Principals allowed everything by the authorizer, separated by ';' "
	      "(User:admin;User:broker)."),
	  FIELD(K_STR, super_users) },
	{ KEY("transaction.abort.timed.out.transaction.cleanup.interval.ms", T_INT, false, "10000",
	      "How often transactions past their timeout are looked for and aborted."),
	  FIELD(K_I32, transaction_abort_timed_out_transaction_cleanup_interval_ms), ATLEAST32(1) },
	{ KEY("transaction.max.timeout.ms", T_INT, false, "900000",
	      "The longest transaction timeout a producer may ask for."),
	  FIELD(K_I32, transaction_max_timeout_ms), ATLEAST32(1) },
	{ KEY("transaction.partition.verification.enable", T_BOOL, false, "true",
	      "Whether a transactional write is first verified with the transaction "
	      "coordinator."),
	  FIELD(K_BOOL, transaction_partition_verification_enable) },
	{ KEY("transaction.remove.expired.transaction.cleanup.interval.ms", T_INT, false, "3600000",
	      "How often expired transactional ids are looked for."),
	  FIELD(K_I32, transaction_remove_expired_transaction_cleanup_interval_ms), ATLEAST32(1) },
	{ KEY("transaction.state.log.min.isr", T_INT, false, "2",
	      "min.insync.replicas of __transaction_state."),
	  FIELD(K_I16, transaction_state_log_min_isr), ATLEAST16(1) },
	{ KEY("transaction.state.log.num.partitions", T_INT, false, "50",
	      "Partition count of __transaction_state."),
	  FIELD(K_I32, transaction_state_log_num_partitions), ATLEAST32(1) },
	{ KEY("transaction.state.log.replication.factor", T_SHORT, false, "3",
	      "Replication factor of __transaction_state (capped to the live brokers)."),
	  FIELD(K_I16, transaction_state_log_replication_factor), ATLEAST16(1) },
	{ KEY("transaction.state.log.segment.bytes", T_INT, false, "104857600",
	      "Segment size of __transaction_state."),
	  FIELD(K_I32, transaction_state_log_segment_bytes), ATLEAST32(1) },
	{ KEY("transactional.id.expiration.ms", T_INT, false, "604800000",
	      "How long an idle transactional id is kept."),
	  FIELD(K_I32, transactional_id_expiration_ms), ATLEAST32(1) },
	{ KEY("unclean.leader.election.enable", T_BOOL, true, "false",
	      "Default unclean.leader.election.enable of topics."),
	  FIELD(K_BOOL, unclean_leader_election_enable) },
	{ KEY("zookeeper.connect", T_STR, false, NULL,
	      "The ZooKeeper ensemble of a cluster; empty for a single node."),
	  FIELD(K_STR, zookeeper_connect) },
	{ KEY("zookeeper.connection.timeout.ms", T_INT, false, NULL,
	      "How long to wait for the ZooKeeper connection; zookeeper.session.timeout.ms when "
	      "not set."),
	  FIELD(K_I32, zookeeper_connection_timeout_ms), ATLEAST32(0),
	  PREC(zookeeper_connection_timeout_ms, 2, zookeeper_connection_timeout_ms, K_I32, 1) },
	{ KEY("zookeeper.session.timeout.ms", T_INT, false, "18000",
	      "The ZooKeeper session timeout: a broker silent for this long is taken for dead."),
	  FIELD(K_I32, zookeeper_session_timeout_ms), ATLEAST32(0),
	  PREC(zookeeper_connection_timeout_ms, 1, zookeeper_connection_timeout_ms, K_I32, 1) },
	{ KEY("zookeeper.set.acl", T_BOOL, false, "false",
	      "Whether the znodes this broker creates get secure ACLs (accepted; not applied yet)."),
	  FIELD(K_BOOL, zookeeper_set_acl) },
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

/* Parse and store one key's value by its table entry. */
static int set_key(brk_config *cfg, const key_def *d, const char *value, FILE *warn, char *err,
		   size_t errsize)
{
	const char *key = d->k.name;
	char *f = (char *)cfg + d->offset;
	if (d->set)
		return d->set(cfg, d, value, warn, err, errsize);
	switch (d->kind) {
	case K_I16:
	case K_I32:
	case K_I64: {
		int64_t v;
		if (parse_int(key, value, d->min, d->max, &v, err, errsize) < 0)
			return -1;
		const key_prec *p = &d->prec;
		if (!p->level || p->eff != d->offset)
			store_int(f, d->kind, v);
		if (p->level) {
			uint8_t *level = (uint8_t *)cfg + p->level_at;
			if (p->level >= *level) {
				int64_t e = v * p->unit; /* no overflow: an int times an hour */
				if (p->negative_unlimited && e < 0)
					e = -1;
				store_int((char *)cfg + p->eff, p->eff_kind, e);
				*level = p->level;
			}
		}
		return 0;
	}
	case K_BOOL:
		return parse_bool(key, value, (bool *)f, err, errsize);
	case K_DOUBLE: {
		char buf[64], *end;
		if (trim_copy(value, buf, sizeof(buf)) > 0) {
			errno = 0;
			double x = strtod(buf, &end);
			if (!errno && !*end && (d->dmin_open ? x > d->dmin : x >= d->dmin) &&
			    x <= d->dmax) {
				*(double *)f = x;
				return 0;
			}
		}
		return brk_fail(err, errsize, "%s=%s: must be a number %s %g and at most %g", key, value,
			    d->dmin_open ? "above" : "at least", d->dmin, d->dmax);
	}
	case K_STR:
		if (trim_copy(value, f, d->size) < 0)
			return brk_fail(err, errsize, "%s: value too long", key);
		return 0;
	case K_ENUM: {
		char buf[64];
		if (trim_copy(value, buf, sizeof(buf)) >= 0 && strlen(buf) < d->size)
			for (const char *const *c = d->choices; *c; c++)
				if (strcmp(buf, *c) == 0) {
					snprintf(f, d->size, "%s", *c);
					return 0;
				}
		char list[256] = "";
		for (const char *const *c = d->choices; *c; c++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 c == d->choices ? "" : ", ", *c);
		return brk_fail(err, errsize, "%s=%s: must be one of %s", key, value, list);
	}
	case K_SPECIAL:
		break;
	}
	return brk_fail(err, errsize, "%s: cannot be set", key); /* a table entry without set */
}

/* Keys kept as given for the security modules (brk_config_security_get);
 * security.protocol is a client's key (samsa-admin's --command-config). */
static bool is_security_key(const char *key)
{
	return strncmp(key, "ssl.", 4) == 0 || strncmp(key, "sasl.", 5) == 0 ||
	       strncmp(key, "password.encoder.", 17) == 0 ||
	       strcmp(key, "security.protocol") == 0 ||
	       strncmp(key, "listener.name.", 14) == 0 ||
	       strcmp(key, "listener.security.protocol.map") == 0 ||
	       strcmp(key, "inter.broker.listener.name") == 0 ||
	       strcmp(key, "security.inter.broker.protocol") == 0;
}

bool brk_config_is_password(const char *name)
{
	static const char *const passwords[] = {
		"ssl.key.password",          "ssl.keystore.password",
		"ssl.truststore.password",   "ssl.keystore.key",
		"ssl.keystore.certificate.chain", "ssl.truststore.certificates",
		"sasl.jaas.config",          "password.encoder.secret",
		"password.encoder.old.secret",
	};
	if (strncmp(name, "listener.name.", 14) == 0) {
		const char *dot = strchr(name + 14, '.');
		if (!dot)
			return false;
		name = dot + 1;
		/* listener.name.<l>.<mechanism>.sasl.jaas.config */
		const char *jaas = strstr(name, ".sasl.jaas.config");
		if (jaas && strcmp(jaas, ".sasl.jaas.config") == 0)
			return true;
	}
	for (size_t i = 0; i < sizeof(passwords) / sizeof(passwords[0]); i++)
		if (strcmp(name, passwords[i]) == 0)
			return true;
	return false;
}

static int security_put(brk_config *cfg, const char *key, const char *value, char *err,
			size_t errsize)
{
	size_t kl = strlen(key) + 1, vl = strlen(value) + 1;
	if (kl + vl > sizeof(cfg->security_props) - cfg->security_props_len)
		return brk_fail(err, errsize, "%s: the security settings exceed %d bytes in all", key,
			    BRK_SECURITY_PROPS_BYTES);
	memcpy(cfg->security_props + cfg->security_props_len, key, kl);
	memcpy(cfg->security_props + cfg->security_props_len + kl, value, vl);
	cfg->security_props_len += (uint32_t)(kl + vl);
	return 0;
}

/* The last value given for key exactly, or NULL. */
static const char *security_find(const brk_config *cfg, const char *key)
{
	const char *found = NULL;
	uint32_t pos = 0;
	while (pos < cfg->security_props_len) {
		const char *k = cfg->security_props + pos;
		const char *v = k + strlen(k) + 1;
		if (strcmp(k, key) == 0)
			found = v;
		pos = (uint32_t)(v + strlen(v) + 1 - cfg->security_props);
	}
	return found;
}

const char *brk_config_security_get(const brk_config *cfg, const char *listener, const char *key)
{
	if (listener && listener[0]) {
		char full[512];
		int n = snprintf(full, sizeof(full), "listener.name.%s.%s", listener, key);
		if (n > 0 && (size_t)n < sizeof(full)) {
			for (char *p = full + 14; *p && p < full + 14 + strlen(listener); p++)
				*p = (char)tolower((unsigned char)*p);
			const char *v = security_find(cfg, full);
			if (v)
				return v;
		}
	}
	return security_find(cfg, key);
}

static const char *const protocol_names[] = { "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL" };

const char *brk_security_protocol_name(brk_security_protocol p)
{
	return (unsigned)p < 4 ? protocol_names[p] : "?";
}

static int protocol_from_name(const char *name, size_t len)
{
	for (int i = 0; i < 4; i++)
		if (strlen(protocol_names[i]) == len && strncasecmp(protocol_names[i], name, len) == 0)
			return i;
	return -1;
}

/*
 * Each listener's security protocol: listener.security.protocol.map
 * ("NAME:PROTOCOL,..."; Kafka's default maps each protocol name to itself),
 * else the listener's name when it is a protocol's (Kafka's
 * KafkaConfig.listenerSecurityProtocolMap).
 */
static int resolve_protocols(brk_config *cfg, char *err, size_t errsize)
{
	const char *map = brk_config_security_get(cfg, NULL, "listener.security.protocol.map");
	for (int i = 0; i < cfg->nlisteners; i++) {
		brk_listener *l = &cfg->listeners[i];
		int proto = -1;
		const char *p = map;
		while (p && *p) {
			while (*p == ' ' || *p == ',')
				p++;
			const char *colon = strchr(p, ':'), *end = strchr(p, ',');
			if (!end)
				end = p + strlen(p);
			if (!colon || colon > end) {
				if (p < end)
					return brk_fail(err, errsize, "listener.security.protocol.map: \"%.*s\" "
						    "is not NAME:PROTOCOL", (int)(end - p), p);
				break;
			}
			const char *ne = colon;
			while (ne > p && ne[-1] == ' ')
				ne--;
			const char *ps = colon + 1, *pe = end;
			while (*ps == ' ')
				ps++;
			while (pe > ps && pe[-1] == ' ')
				pe--;
			int pr = protocol_from_name(ps, (size_t)(pe - ps));
			if (pr < 0)
				return brk_fail(err, errsize, "listener.security.protocol.map: unknown security "
					    "protocol \"%.*s\"", (int)(pe - ps), ps);
			if ((size_t)(ne - p) == strlen(l->name) && strncasecmp(p, l->name, strlen(l->name)) == 0)
				proto = pr;
			p = end;
		}
		if (proto < 0)
			proto = protocol_from_name(l->name, strlen(l->name));
		if (proto < 0)
			return brk_fail(err, errsize, "listeners: %s has no security protocol; map it in "
				    "listener.security.protocol.map (e.g. %s:SASL_SSL)", l->name, l->name);
		l->security_protocol = (brk_security_protocol)proto;
	}
	return 0;
}

int brk_config_set(brk_config *cfg, const char *key, const char *value, FILE *warn,
		   char *err, size_t errsize)
{
	int i = key_index(key);
	if (i < 0 && is_security_key(key))
		return security_put(cfg, key, value, err, errsize);
	if (i < 0) {
		if (!is_known_ignored(key) && warn)
			fprintf(warn, "samsa: warning: unknown configuration key %s (ignored)\n", key);
		return 0;
	}
	if (set_key(cfg, &key_defs[i], value, warn, err, errsize) < 0)
		return -1;
	cfg->given.keys[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

void brk_config_defaults(brk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* Each default goes through its key's parser (the table's unit test
	 * checks that each one parses and formats back as written). */
	for (int i = 0; i < NKEYS; i++)
		if (key_defs[i].k.dflt)
			(void)set_key(cfg, &key_defs[i], key_defs[i].k.dflt, NULL, NULL, 0);
	/* A default is not a setting: any key of a group may still set it. */
	memset(&cfg->level, 0, sizeof(cfg->level));
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
	if (d->format) {
		d->format(cfg, d, out, outsize);
		return true;
	}
	switch (d->kind) {
	case K_I16: snprintf(out, outsize, "%d", *(const int16_t *)f); break;
	case K_I32: snprintf(out, outsize, "%" PRId32, *(const int32_t *)f); break;
	case K_I64: snprintf(out, outsize, "%" PRId64, *(const int64_t *)f); break;
	case K_BOOL: snprintf(out, outsize, "%s", *(const bool *)f ? "true" : "false"); break;
	case K_DOUBLE: {
		/* Java's Double.toString for the values a ratio takes: at least
		 * one decimal ("0.5", "1.0"). */
		double x = *(const double *)f;
		snprintf(out, outsize, "%.15g", x);
		if (!strpbrk(out, ".eEn"))
			snprintf(out + strlen(out), outsize - strlen(out), ".0");
		break;
	}
	case K_STR:
	case K_ENUM: snprintf(out, outsize, "%s", f); break;
	case K_SPECIAL: break; /* has a format */
	}
	return true;
}

bool brk_config_was_given(const brk_config *cfg, const char *name)
{
	int i = key_index(name);
	return i >= 0 && (cfg->given.keys[i / 8] & (1u << (i % 8)));
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
		brk_fail(err, errsize, "out of memory");
		goto out;
	}
	if (unescape(line, klen, key) < 0 || unescape(line + i, len - i, value) < 0) {
		brk_fail(err, errsize, "malformed \\u escape (four hex digits expected)");
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
		return brk_fail(err, errsize, "%s: %s", path, strerror(errno));
	char *data = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 4096 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *d = realloc(data, cap);
			if (!d) {
				free(data);
				fclose(f);
				return brk_fail(err, errsize, "%s: out of memory", path);
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
		return brk_fail(err, errsize, "%s: read error", path);
	}

	/* Logical lines: natural lines (ended by \n, \r or \r\n) joined where a
	 * line ends in an odd number of backslashes; leading white space of
	 * every natural line dropped; # and ! start a comment line. */
	char *logical = malloc(len + 1);
	if (!logical) {
		free(data);
		return brk_fail(err, errsize, "%s: out of memory", path);
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
			brk_fail(err, errsize, "%s:%d: %s", path, start_line, lerr);
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

/* zookeeper.connect: "host:port[,host:port...][/chroot]", the shape
 * ZooKeeper's ConnectStringParser takes (a port may be left out: 2181) and
 * a chroot PathUtils.validatePath accepts ("/" alone means none; no empty
 * segment, no "." or "..", no '/' at the end). Checked here so that a
 * typo stops the broker with its reason instead of a failed connect. */
static int check_zk_connect(const char *s, char *err, size_t errsize)
{
	const char *key = "zookeeper.connect";
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	if (hlen == 0)
		return brk_fail(err, errsize, "%s: \"%s\" names no host (host:port[,host:port...][/chroot])",
			    key, s);
	for (const char *h = s; h < s + hlen;) {
		const char *end = memchr(h, ',', (size_t)(s + hlen - h));
		size_t n = end ? (size_t)(end - h) : (size_t)(s + hlen - h);
		const char *colon = memchr(h, ':', n);
		if (n == 0 || colon == h)
			return brk_fail(err, errsize, "%s: an empty host in \"%s\"", key, s);
		if (colon) {
			char port[8];
			size_t plen = (size_t)(h + n - colon - 1);
			char *pend;
			if (plen == 0 || plen >= sizeof(port))
				return brk_fail(err, errsize, "%s: bad port in \"%.*s\"", key, (int)n, h);
			memcpy(port, colon + 1, plen);
			port[plen] = '\0';
			long v = strtol(port, &pend, 10);
			if (*pend || !isdigit((unsigned char)port[0]) || v < 1 || v > 65535)
				return brk_fail(err, errsize, "%s: bad port in \"%.*s\"", key, (int)n, h);
		}
		h += n + (end ? 1 : 0);
		if (end && h == s + hlen)
			return brk_fail(err, errsize, "%s: an empty host in \"%s\"", key, s);
	}
	if (!slash || strcmp(slash, "/") == 0)
		return 0;
	size_t plen = strlen(slash);
	if (slash[plen - 1] == '/')
		return brk_fail(err, errsize, "%s: the chroot \"%s\" must not end with '/'", key, slash);
	for (const char *seg = slash + 1; *seg;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return brk_fail(err, errsize, "%s: the chroot \"%s\" has an empty, \".\" or \"..\" "
				    "segment", key, slash);
		seg += n + (end ? 1 : 0);
	}
	return 0;
}

/*
 * The listener brokers reach each other on (Kafka's KafkaConfig
 * interBrokerListenerName): inter.broker.listener.name, or the listener
 * named as security.inter.broker.protocol (not both); it must be
 * advertised. Neither set: the listener named PLAINTEXT when advertised
 * (Kafka's default protocol), else the first advertised one (where Kafka
 * refuses to start).
 */
static int resolve_inter_broker(brk_config *cfg, char *err, size_t errsize)
{
	const char *name = brk_config_security_get(cfg, NULL, "inter.broker.listener.name");
	const char *proto = brk_config_security_get(cfg, NULL, "security.inter.broker.protocol");
	if (name && proto)
		return brk_fail(err, errsize, "Only one of inter.broker.listener.name and "
			    "security.inter.broker.protocol should be set.");
	const char *want = name ? name : proto ? proto : "PLAINTEXT";
	for (int i = 0; i < cfg->nadvertised; i++) {
		if (strcasecmp(cfg->advertised[i].name, want) == 0) {
			snprintf(cfg->inter_broker_listener, sizeof(cfg->inter_broker_listener), "%s",
				 cfg->advertised[i].name);
			return 0;
		}
	}
	if (name || proto)
		return brk_fail(err, errsize, "%s=%s: must be a listener name defined in "
			    "advertised.listeners", name ? "inter.broker.listener.name"
				 : "security.inter.broker.protocol", want);
	snprintf(cfg->inter_broker_listener, sizeof(cfg->inter_broker_listener), "%s",
		 cfg->nadvertised > 0 ? cfg->advertised[0].name : "");
	return 0;
}

int brk_config_finish(brk_config *cfg, char *err, size_t errsize)
{
	if (cfg->nlisteners < 1)
		return brk_fail(err, errsize, "listeners: no listener given");
	if (resolve_protocols(cfg, err, errsize) < 0)
		return -1;
	/* Every protocol is served: PLAINTEXT, SSL (security/tls.c),
	 * SASL_PLAINTEXT and SASL_SSL (security/sasl.c, over TLS for the
	 * latter). */
	if (brk_config_was_given(cfg, "broker.id") && brk_config_was_given(cfg, "node.id") &&
	    cfg->broker_id != cfg->given.node_id)
		return brk_fail(err, errsize, "broker.id (%" PRId32 ") and node.id (%" PRId32
				     ") are synonyms and must be equal",
			    cfg->broker_id, cfg->given.node_id);
	if (cfg->zookeeper_connect[0] && check_zk_connect(cfg->zookeeper_connect, err, errsize) < 0)
		return -1;
	/* Kafka's KafkaConfig.validateValues. */
	if (cfg->max_connections_per_ip == 0 && cfg->nmax_connections_per_ip_overrides == 0)
		return brk_fail(err, errsize, "max.connections.per.ip can be set to zero only if "
				     "max.connections.per.ip.overrides is set");
	if (cfg->log_max_open_files == 0)
		return brk_fail(err, errsize, "log.max.open.files must be -1 (from the open file limit) "
				     "or at least 1");
	if (cfg->queued_max_request_bytes > 0 &&
	    cfg->queued_max_request_bytes < cfg->socket_request_max_bytes)
		return brk_fail(err, errsize, "queued.max.request.bytes (%" PRId64 ") must be larger or "
				     "equal to socket.request.max.bytes (%" PRId32 ")",
			    cfg->queued_max_request_bytes, cfg->socket_request_max_bytes);
	if (cfg->replica_fetch_wait_max_ms > cfg->replica_socket_timeout_ms)
		return brk_fail(err, errsize, "replica.socket.timeout.ms (%" PRId32 ") must be at least "
				     "replica.fetch.wait.max.ms (%" PRId32 "), or fetches time out",
			    cfg->replica_socket_timeout_ms, cfg->replica_fetch_wait_max_ms);
	if (cfg->replica_fetch_wait_max_ms > cfg->replica_lag_time_max_ms)
		return brk_fail(err, errsize, "replica.fetch.wait.max.ms (%" PRId32 ") must be at most "
				     "replica.lag.time.max.ms (%" PRId64 "), or the ISR keeps changing",
			    cfg->replica_fetch_wait_max_ms, cfg->replica_lag_time_max_ms);
	if (cfg->nadvertised == 0) {
		memcpy(cfg->advertised, cfg->listeners, sizeof(cfg->advertised));
		cfg->nadvertised = cfg->nlisteners;
	}
	for (int i = 0; i < cfg->nadvertised; i++) {
		brk_listener *a = &cfg->advertised[i];
		bool found = false;
		for (int j = 0; j < cfg->nlisteners; j++)
			if (strcmp(cfg->listeners[j].name, a->name) == 0) {
				found = true;
				a->security_protocol = cfg->listeners[j].security_protocol;
			}
		if (!found)
			return brk_fail(err, errsize,
				    "advertised.listeners: %s is not one of the names in listeners", a->name);
		if (is_wildcard(a->host))
			return brk_fail(err, errsize,
				    "advertised.listeners: %s cannot advertise the meta-address %s; "
				    "use a routable address", a->name, a->host);
	}
	return resolve_inter_broker(cfg, err, errsize);
}

/* ---- describing (DescribeConfigs) and dynamic configs (KIP-226) ---- */

/* The keys that set the same thing as name, highest precedence first
 * (Kafka's DynamicBrokerConfig.brokerConfigSynonyms). Returns the count. */
static int synonym_names(const char *name, const char *out[MAX_SYNONYM_NAMES])
{
	int i = key_index(name);
	const char *const *group = i >= 0 ? key_defs[i].synonyms : NULL;
	if (!group) {
		out[0] = name;
		return 1;
	}
	int n = 0;
	while (group[n] && n < MAX_SYNONYM_NAMES) {
		out[n] = group[n];
		n++;
	}
	return n;
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
	const char *names[MAX_SYNONYM_NAMES];
	int nn = synonym_names(name, names);
	brk_config_synonym all[4 * MAX_SYNONYM_NAMES];
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
				if (i < 0 || !key_defs[i].k.dflt)
					continue;
				s->name = key_defs[i].k.name;
				snprintf(s->value, sizeof(s->value), "%s", key_defs[i].k.dflt);
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

/*
 * Whether name is one of the SSL keys Kafka changes at runtime (its
 * SslConfigs.RECONFIGURABLE_CONFIGS, KIP-226), bare or with a
 * "listener.name.<l>." prefix: the keystore and truststore keys; or a
 * listener's connection creation rate (SocketServer's
 * ListenerReconfigurableConfigs, listener.name.<l>. only).
 */
static bool is_dynamic_ssl_key(const char *name)
{
	if (brk_config_is_listener_rate_key(name))
		return true;
	static const char *const keys[] = {
		"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
		"ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
		"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
		"ssl.truststore.certificates",
	};
	if (strncmp(name, "listener.name.", 14) == 0) {
		const char *dot = strchr(name + 14, '.');
		if (!dot)
			return false;
		name = dot + 1;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(name, keys[i]) == 0)
			return true;
	return false;
}

bool brk_config_is_listener_rate_key(const char *name)
{
	if (strncmp(name, "listener.name.", 14) != 0)
		return false;
	const char *dot = strchr(name + 14, '.');
	return dot && dot > name + 14 && strcmp(dot + 1, "max.connection.creation.rate") == 0;
}

int brk_config_rebuild(const brk_config_layers *layers, brk_config *out, FILE *warn, char *err,
		       size_t errsize)
{
	int rc = 0;
	if (err && errsize)
		err[0] = '\0';
	*out = *layers->static_cfg;
	for (int layer = 0; layer < 2; layer++) {
		const ctl_config_entry *e = layer == 0 ? layers->dynamic_default : layers->dynamic_broker;
		int32_t n = layer == 0 ? layers->ndynamic_default : layers->ndynamic_broker;
		for (int32_t i = 0; i < n; i++) {
			const brk_config_key *k = brk_config_key_find(e[i].name);
			char why[512];
			if (!k && !is_dynamic_ssl_key(e[i].name))
				continue; /* not a key we read: kept, not used */
			if (k && !k->dynamic) {
				if (warn)
					fprintf(warn, "samsa: warning: dynamic config %s cannot be applied at "
						      "runtime; ignored\n", e[i].name);
				continue;
			}
			/* a dynamic SSL key is kept with the security keys (brk_tls
			 * reads them); the rest are set as in server.properties */
			if (brk_config_set(out, e[i].name, e[i].value, NULL, why, sizeof(why)) < 0) {
				if (warn)
					fprintf(warn, "samsa: warning: dynamic config ignored: %s\n", why);
				if (rc == 0 && err && errsize)
					snprintf(err, errsize, "Invalid value for configuration %s: %s",
						 e[i].name, why);
				rc = -1;
			}
		}
	}
	return rc;
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
