/*
 * dynamic_config.c - runtime config changes: the checks, the broker config
 * layers rebuilt into the effective config, and the topics' configs pushed
 * to the running logs.
 */
#include "broker/dynamic_config.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/partitions.h"
#include "broker/security/tls.h"
#include "broker/topic_config.h"
#include "protocol/err.h"

void brk_dynamic_config_layers(const brk_dynamic_config *d, brk_config_layers *out)
{
	memset(out, 0, sizeof(*out));
	out->effective = d->cfg;
	out->static_cfg = &d->static_cfg;
	out->dynamic_broker = d->nown > 0 ? d->own : NULL;
	out->ndynamic_broker = d->nown;
	out->dynamic_default = d->ndefaults > 0 ? d->defaults : NULL;
	out->ndynamic_default = d->ndefaults;
}

/* A whole int of key k (NULL or "": 0, the encoder's default); -1 with
 * err when it is not one. */
static int encoder_int(const brk_config *cfg, const char *k, int *out, char *err, size_t errsize)
{
	const char *v = brk_config_security_get(cfg, NULL, k);
	*out = 0;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || x < 1 || x > 1 << 30) {
		snprintf(err, errsize, "%s=%s: not a positive integer", k, v);
		return -1;
	}
	*out = (int)x;
	return 0;
}

/* The password.encoder.* keys of cfg into e (strings point into cfg). */
static int encoder_of(const brk_config *cfg, brk_password_encoder *e, const char **old_secret,
		      char *err, size_t errsize)
{
	memset(e, 0, sizeof(*e));
	e->secret = brk_config_security_get(cfg, NULL, "password.encoder.secret");
	if (e->secret && !*e->secret)
		e->secret = NULL;
	*old_secret = brk_config_security_get(cfg, NULL, "password.encoder.old.secret");
	if (*old_secret && !**old_secret)
		*old_secret = NULL;
	e->keyfactory_algorithm = brk_config_security_get(cfg, NULL,
							  "password.encoder.keyfactory.algorithm");
	e->cipher_algorithm = brk_config_security_get(cfg, NULL, "password.encoder.cipher.algorithm");
	if (encoder_int(cfg, "password.encoder.key.length", &e->key_length, err, errsize) < 0 ||
	    encoder_int(cfg, "password.encoder.iterations", &e->iterations, err, errsize) < 0)
		return -1;
	return 0;
}

int brk_dynamic_config_check_encoder(const brk_config *cfg, char *err, size_t errsize)
{
	brk_password_encoder e;
	const char *old;
	if (encoder_of(cfg, &e, &old, err, errsize) < 0)
		return -1;
	if (!e.secret)
		return 0; /* nothing is encoded: the other keys are not used */
	return brk_password_encoder_check(&e, err, errsize);
}

void brk_dynamic_config_init(brk_dynamic_config *d, brk_config *cfg,
			     struct brk_partitions *partitions)
{
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	d->static_cfg = *cfg;
	d->partitions = partitions;
	char err[256];
	if (encoder_of(&d->static_cfg, &d->encoder, &d->old_secret, err, sizeof(err)) < 0)
		d->encoder.secret = NULL; /* checked at start-up (brk_dynamic_config_check_encoder) */
}

/* ctl_configs_free, password values wiped first. */
static void free_configs(ctl_config_entry *e, int32_t n)
{
	for (int32_t i = 0; i < n && e; i++)
		if (e[i].name && e[i].value && brk_config_is_password(e[i].name))
			OPENSSL_cleanse(e[i].value, strlen(e[i].value));
	ctl_configs_free(e, n);
}

/* Decrypt each password value of configs in place (Kafka's
 * fromPersistentProps); one that cannot be is dropped with a log line.
 * *used_old: how many needed the old secret; *dropped: how many were
 * dropped. */
static int32_t decode_passwords(const brk_dynamic_config *d, ctl_config_entry *configs, int32_t n,
				int *used_old, int *dropped)
{
	int32_t out = 0;
	*used_old = *dropped = 0;
	for (int32_t i = 0; i < n; i++) {
		ctl_config_entry *c = &configs[i];
		if (c->name && c->value && brk_config_is_password(c->name)) {
			char why[256] = "Password encoder secret not configured", why_old[256] = "";
			char *plain = NULL;
			if (d->encoder.secret)
				plain = brk_password_decode(d->encoder.secret, c->value, why, sizeof(why));
			if (!plain && d->old_secret) {
				plain = brk_password_decode(d->old_secret, c->value, why_old,
							    sizeof(why_old));
				*used_old += plain != NULL;
			}
			if (!plain) {
				(*dropped)++;
				fprintf(stderr, "samsa: Dynamic password config %s could not be decoded, "
					"ignoring (%s%s%s)\n", c->name, why,
					why_old[0] ? "; with password.encoder.old.secret: " : "", why_old);
				free(c->name);
				free(c->value);
				continue;
			}
			free(c->value);
			c->value = plain;
		}
		configs[out++] = *c;
	}
	return out;
}

int16_t brk_dynamic_config_check_rebuild(const brk_dynamic_config *d, int32_t broker_id,
					 const ctl_config_entry *configs, int32_t n, char *msg,
					 size_t msgsize)
{
	brk_config_layers layers;
	brk_dynamic_config_layers(d, &layers);
	if (broker_id == CTL_BROKER_DEFAULT) {
		layers.dynamic_default = configs;
		layers.ndynamic_default = n;
	} else if (broker_id == d->static_cfg.broker_id) {
		layers.dynamic_broker = configs;
		layers.ndynamic_broker = n;
	} else {
		return KERR_NONE;
	}
	brk_config *trial = malloc(sizeof(*trial));
	if (!trial)
		return KERR_NONE; /* the apply keeps the old context if it must */
	/* the apply's own rebuild: what it would skip is refused here */
	char why[512];
	int16_t err = KERR_NONE;
	if (brk_config_rebuild(&layers, trial, NULL, why, sizeof(why)) < 0) {
		char name[16] = "";
		if (broker_id != CTL_BROKER_DEFAULT)
			snprintf(name, sizeof(name), "%d", (int)broker_id);
		snprintf(msg, msgsize, "Invalid config value for resource ConfigResource(type=BROKER, "
			 "name='%s'): %s", name, why);
		err = KERR_INVALID_REQUEST;
	}
	for (int i = 0; i < trial->nlisteners && !err; i++) {
		const brk_listener *l = &trial->listeners[i];
		if (l->security_protocol != BRK_SEC_SSL && l->security_protocol != BRK_SEC_SASL_SSL)
			continue;
		if (brk_tls_signature(trial, l) == brk_tls_signature(d->cfg, &d->cfg->listeners[i]))
			continue;
		brk_tls *t = brk_tls_new(trial, l, why, sizeof(why));
		if (!t) {
			snprintf(msg, msgsize, "Validation of dynamic config update of SSLFactory failed: %s",
				 why);
			err = KERR_INVALID_REQUEST;
		}
		brk_tls_unref(t);
	}
	free(trial);
	return err;
}

int16_t brk_dynamic_config_check_passwords(const brk_dynamic_config *d, const char *resource,
					   const ctl_config_entry *configs, int32_t n, char *msg,
					   size_t msgsize)
{
	for (int32_t i = 0; i < n; i++) {
		/* password.encoder.* is read at start-up only (not dynamic in
		 * Kafka either); so is the SASL JAAS config here (security/sasl.h
		 * builds the logins once, before the dynamic configs are read):
		 * a stored one would never take effect, so it is refused. */
		const char *jaas = strstr(configs[i].name, "sasl.jaas.config");
		if (strncmp(configs[i].name, "password.encoder.", 17) == 0 ||
		    (jaas && strcmp(jaas, "sasl.jaas.config") == 0)) {
			snprintf(msg, msgsize, "Cannot update these configs dynamically: [%s]",
				 configs[i].name);
			return KERR_INVALID_REQUEST;
		}
	}
	for (int32_t i = 0; i < n; i++) {
		if (!brk_config_is_password(configs[i].name))
			continue;
		/* Kafka's validate first (a password key is per broker:
		 * PerBrokerConfigs or listener-prefixed), then toPersistentProps
		 * (the encoder). */
		if (!resource[0])
			snprintf(msg, msgsize, "Invalid config value for resource ConfigResource("
				 "type=BROKER, name=''): Cannot update these configs at default "
				 "cluster level, broker id must be specified: [%s]", configs[i].name);
		else if (!d->encoder.secret)
			snprintf(msg, msgsize, "Invalid config value for resource ConfigResource("
				 "type=BROKER, name='%s'): Password encoder secret not configured",
				 resource);
		else
			continue;
		return KERR_INVALID_REQUEST;
	}
	return KERR_NONE;
}

int brk_dynamic_config_encode_passwords(const brk_dynamic_config *d, proto_arena *a,
					ctl_config_entry *configs, int32_t n, char *msg,
					size_t msgsize)
{
	for (int32_t i = 0; i < n; i++) {
		if (!configs[i].value || !brk_config_is_password(configs[i].name))
			continue;
		char why[256];
		char *enc = d->encoder.secret ? brk_password_encode(&d->encoder, configs[i].value, why,
								    sizeof(why))
					      : NULL;
		if (!enc) {
			snprintf(msg, msgsize, "Invalid config value for %s: %s", configs[i].name,
				 d->encoder.secret ? why : "Password encoder secret not configured");
			return KERR_INVALID_REQUEST;
		}
		char *v = brk_config_strndup(a, enc, (int32_t)strlen(enc));
		free(enc);
		if (!v)
			return -1;
		configs[i].value = v;
	}
	return KERR_NONE;
}

void brk_dynamic_config_set_hook(brk_dynamic_config *d, void (*fn)(void *arg), void *arg)
{
	d->changed = fn;
	d->changed_arg = arg;
}

void brk_dynamic_config_free(brk_dynamic_config *d)
{
	free_configs(d->defaults, d->ndefaults);
	free_configs(d->own, d->nown);
	d->defaults = d->own = NULL;
	d->ndefaults = d->nown = 0;
}

const ctl_config_entry *brk_dynamic_config_of(const brk_dynamic_config *d, int32_t broker_id,
					      int32_t *n)
{
	if (broker_id == CTL_BROKER_DEFAULT) {
		*n = d->ndefaults;
		return d->ndefaults > 0 ? d->defaults : NULL;
	}
	if (broker_id == d->static_cfg.broker_id) {
		*n = d->nown;
		return d->nown > 0 ? d->own : NULL;
	}
	*n = 0;
	return NULL;
}

void brk_dynamic_config_apply(brk_dynamic_config *d, int32_t broker_id, ctl_config_entry *configs,
			      int32_t n)
{
	int used_old, dropped;
	if (broker_id == CTL_BROKER_DEFAULT) {
		free_configs(d->defaults, d->ndefaults);
		d->defaults = configs;
		d->ndefaults = decode_passwords(d, configs, n, &used_old, &dropped);
	} else if (broker_id == d->static_cfg.broker_id) {
		free_configs(d->own, d->nown);
		d->own = configs;
		d->nown = decode_passwords(d, configs, n, &used_old, &dropped);
		/* Kafka writes them back only when it can read them all */
		d->reencode = used_old > 0 && dropped == 0 && d->encoder.secret;
	} else {
		ctl_configs_free(configs, n); /* another broker's */
		return;
	}
	brk_config_layers layers;
	brk_dynamic_config_layers(d, &layers);
	brk_config_rebuild(&layers, d->cfg, stderr, NULL, 0);
	if (d->partitions)
		brk_partitions_reconfigure(d->partitions);
	if (d->changed)
		d->changed(d->changed_arg);
}

ctl_config_entry *brk_dynamic_config_reencoded(brk_dynamic_config *d, int32_t *n)
{
	*n = 0;
	if (!d->reencode)
		return NULL;
	d->reencode = false;
	ctl_config_entry *e = ctl_configs_copy(d->own, d->nown);
	if (!e)
		return NULL;
	for (int32_t i = 0; i < d->nown; i++) {
		if (!brk_config_is_password(e[i].name))
			continue;
		char why[256];
		char *enc = brk_password_encode(&d->encoder, e[i].value, why, sizeof(why));
		if (!enc) {
			fprintf(stderr, "samsa: dynamic password config %s cannot be encrypted again "
				"with password.encoder.secret: %s\n", e[i].name, why);
			free_configs(e, d->nown);
			return NULL;
		}
		OPENSSL_cleanse(e[i].value, strlen(e[i].value));
		free(e[i].value);
		e[i].value = enc;
	}
	*n = d->nown;
	return e;
}

/* SslConfigs.RECONFIGURABLE_CONFIGS: Kafka's DynamicSecurityConfigs,
 * dynamic only with a listener prefix. */
static const char *const dynamic_security_keys[] = {
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates", NULL,
};

/* DynamicListenerConfig.ReconfigurableConfigs less the cluster-level
 * listener keys (max.connections, max.connection.creation.rate,
 * num.network.threads): with the keys above, Kafka's PerBrokerConfigs. */
static const char *const per_broker_listener_keys[] = {
	"advertised.listeners", "listeners", "listener.security.protocol.map",
	"principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
	"ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
	"ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
	"ssl.client.auth", "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol",
	"sasl.jaas.config", "sasl.enabled.mechanisms", "sasl.kerberos.service.name",
	"sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
	"sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
	"sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
	"sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
	"sasl.login.refresh.buffer.seconds", NULL,
};

static const char *const cluster_level_listener_keys[] = {
	"max.connections", "max.connection.creation.rate", "num.network.threads", NULL,
};

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

/* Kafka's perBrokerConfigs: a PerBrokerConfigs key, or listener.name.<l>.X
 * for any X but a cluster-level listener key. */
static bool is_per_broker_key(const char *name)
{
	if (strncmp(name, "listener.name.", 14) == 0) {
		const char *dot = strchr(name + 14, '.');
		return dot && !in_list(cluster_level_listener_keys, dot + 1);
	}
	return in_list(dynamic_security_keys, name) || in_list(per_broker_listener_keys, name);
}

/* Kafka's checkInvalidProps: the names of configs for which bad() holds,
 * each once, as "<prefix><what>: [a, b]"; true when there is one. */
static bool list_invalid(const ctl_config_entry *configs, int32_t n, bool (*bad)(const char *),
			 const char *prefix, const char *what, char *msg, size_t msgsize)
{
	size_t used = 0;
	int nbad = 0;
	for (int32_t i = 0; i < n; i++) {
		if (!bad(configs[i].name))
			continue;
		bool seen = false;
		for (int32_t j = 0; j < i; j++)
			seen |= strcmp(configs[j].name, configs[i].name) == 0;
		if (seen)
			continue;
		if (nbad == 0)
			used = (size_t)snprintf(msg, msgsize, "%s%s: [", prefix, what);
		if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, "%s%s", nbad ? ", " : "",
						 configs[i].name);
		nbad++;
	}
	if (nbad && used < msgsize)
		snprintf(msg + used, msgsize - used, "]");
	return nbad > 0;
}

/* A key this broker knows that cannot change at runtime (unknown keys
 * are stored as Kafka stores them). */
static bool is_static_key(const char *name)
{
	const brk_config_key *k = brk_config_key_find(name);
	return k && !k->dynamic;
}

static bool is_unprefixed_security_key(const char *name)
{
	return in_list(dynamic_security_keys, name);
}

int brk_dynamic_config_check_broker(int32_t broker_id, const ctl_config_entry *configs, int32_t n,
				    char *msg, size_t msgsize)
{
	msg[0] = '\0';
	char prefix[96];
	snprintf(prefix, sizeof(prefix), "Invalid config value for resource ConfigResource(type=BROKER, "
		 "name=''): ");
	if (broker_id != CTL_BROKER_DEFAULT)
		snprintf(prefix, sizeof(prefix), "Invalid config value for resource ConfigResource("
			 "type=BROKER, name='%d'): ", (int)broker_id);
	/* Kafka's validateConfigs, in its order: keys that are not dynamic,
	 * SSL keys without a listener prefix, the values, then the
	 * per-broker keys at the cluster default */
	if (list_invalid(configs, n, is_static_key, "", "Cannot update these configs dynamically",
			 msg, msgsize))
		return KERR_INVALID_REQUEST;
	if (list_invalid(configs, n, is_unprefixed_security_key, prefix,
			 "These security configs can be dynamically updated only per-listener using "
			 "the listener prefix", msg, msgsize))
		return KERR_INVALID_REQUEST;
	brk_config scratch;
	brk_config_defaults(&scratch);
	for (int32_t i = 0; i < n; i++) {
		if (brk_config_is_listener_rate_key(configs[i].name)) {
			/* ListenerConnectionQuota.validateReconfiguration: a rate
			 * above 0 */
			const char *v = configs[i].value ? configs[i].value : "";
			char *end;
			errno = 0;
			long long r = strtoll(v, &end, 10);
			if (errno || end == v || *end || r <= 0 || r > INT32_MAX) {
				snprintf(msg, msgsize, "Invalid value %s for configuration %s: Invalid "
					 "max.connection.creation.rate %s", v, configs[i].name, v);
				return KERR_INVALID_REQUEST;
			}
			continue;
		}
		if (!brk_config_key_find(configs[i].name))
			continue;
		char err[512];
		if (brk_config_set(&scratch, configs[i].name, configs[i].value, NULL, err,
				   sizeof(err)) < 0) {
			snprintf(msg, msgsize, "Invalid value %s for configuration %s: %s",
				 configs[i].value, configs[i].name, err);
			return KERR_INVALID_REQUEST;
		}
	}
	if (broker_id == CTL_BROKER_DEFAULT &&
	    list_invalid(configs, n, is_per_broker_key, prefix,
			 "Cannot update these configs at default cluster level, broker id must be "
			 "specified", msg, msgsize))
		return KERR_INVALID_REQUEST;
	return KERR_NONE;
}

int brk_config_check_topic_name(const char *name, int32_t len, char *msg, size_t msgsize)
{
	msg[0] = '\0';
	if (!name || len <= 0) {
		snprintf(msg, msgsize, "Topic name is illegal, it can't be empty");
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(msg, msgsize, "Topic name cannot be \".\" or \"..\"");
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (len > CTL_TOPIC_NAME_MAX) {
		snprintf(msg, msgsize, "Topic name is illegal, it can't be longer than %d characters, "
			 "topic name: %.*s", CTL_TOPIC_NAME_MAX, (int)len, name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (ctl_validate_topic_name(name, len)) {
		snprintf(msg, msgsize, "Topic name \"%.*s\" is illegal, it contains a character other "
			 "than ASCII alphanumerics, '.', '_' and '-'", (int)len, name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	return KERR_NONE;
}

int brk_config_check_broker_name(const char *name, int32_t len, int32_t self, int32_t *id,
				 char *msg, size_t msgsize)
{
	msg[0] = '\0';
	/* Java's Integer.parseInt: optional sign, decimal digits, int range. */
	int64_t v = 0;
	int32_t i = 0;
	bool neg = false, ok = len > 0 && len <= 11;
	if (ok && (name[0] == '-' || name[0] == '+')) {
		neg = name[0] == '-';
		i = 1;
		ok = len > 1;
	}
	for (; ok && i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			ok = false;
		else
			v = v * 10 + (name[i] - '0');
	}
	if (neg)
		v = -v;
	if (!ok || v < INT32_MIN || v > INT32_MAX) {
		snprintf(msg, msgsize, "Node id must be an integer, but it is: %.*s",
			 len > 0 ? (int)len : 0, name ? name : "");
		return KERR_INVALID_REQUEST;
	}
	if (v != self) {
		snprintf(msg, msgsize, "Unexpected broker id, expected %d, but received %.*s",
			 self, (int)len, name);
		return KERR_INVALID_REQUEST;
	}
	*id = (int32_t)v;
	return KERR_NONE;
}

typedef struct dup_ctx {
	const proto_str *names;
	const int8_t *kinds;
} dup_ctx;

static int dup_cmp(const void *a, const void *b, void *arg)
{
	const dup_ctx *c = arg;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	if (c->kinds && c->kinds[i] != c->kinds[j])
		return c->kinds[i] < c->kinds[j] ? -1 : 1;
	proto_str x = c->names[i], y = c->names[j];
	int32_t lx = x.len > 0 ? x.len : 0, ly = y.len > 0 ? y.len : 0;
	int r = memcmp(x.ptr ? x.ptr : "", y.ptr ? y.ptr : "", (size_t)(lx < ly ? lx : ly));
	if (r)
		return r;
	return lx < ly ? -1 : lx > ly;
}

void brk_config_find_duplicates(const proto_str *names, const int8_t *kinds, int32_t n,
				bool *dup, int32_t *scratch)
{
	dup_ctx c = { names, kinds };
	for (int32_t i = 0; i < n; i++) {
		scratch[i] = i;
		dup[i] = false;
	}
	qsort_r(scratch, (size_t)n, sizeof(*scratch), dup_cmp, &c);
	for (int32_t i = 1; i < n; i++)
		if (dup_cmp(&scratch[i - 1], &scratch[i], &c) == 0)
			dup[scratch[i - 1]] = dup[scratch[i]] = true;
}

int brk_config_check_entries(proto_arena *a, const proto_str *names, const proto_str *values,
			     const bool *no_value, int32_t n, char *msg, size_t msgsize)
{
	size_t cap = (size_t)(n > 0 ? n : 1);
	bool *dup = proto_arena_alloc(a, cap * sizeof(*dup));
	int32_t *scratch = proto_arena_alloc(a, cap * sizeof(*scratch));
	if (!dup || !scratch)
		return -1;
	brk_config_find_duplicates(names, NULL, n, dup, scratch);
	for (int32_t i = 0; i < n; i++)
		if (dup[i]) {
			snprintf(msg, msgsize, "Error due to duplicate config keys");
			return KERR_INVALID_REQUEST;
		}
	size_t used = 0;
	for (int32_t i = 0; i < n; i++) {
		if (!no_value[i])
			continue;
		if (used == 0)
			used = (size_t)snprintf(msg, msgsize, "Null value not supported for : ");
		else if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, ", ");
		if (used < msgsize)
			used += (size_t)snprintf(msg + used, msgsize - used, "%.*s",
						 names[i].len > 0 ? (int)names[i].len : 0, names[i].ptr);
	}
	if (used)
		return KERR_INVALID_REQUEST;
	/* a C string would end at the NUL: the value stored would not be the
	 * one given */
	for (int32_t i = 0; i < n; i++) {
		bool in_name = names[i].len > 0 && memchr(names[i].ptr, 0, (size_t)names[i].len);
		bool in_value = values[i].len > 0 && memchr(values[i].ptr, 0, (size_t)values[i].len);
		if (in_name) {
			snprintf(msg, msgsize, "Invalid config name: a config name cannot hold a NUL byte");
			return KERR_INVALID_REQUEST;
		}
		if (in_value) {
			snprintf(msg, msgsize, "Invalid value for configuration %.*s: a config value "
				 "cannot hold a NUL byte", (int)names[i].len, names[i].ptr);
			return KERR_INVALID_REQUEST;
		}
	}
	return KERR_NONE;
}

int brk_config_unsupported_type(int8_t type, char *msg, size_t msgsize)
{
	const char *name = type == 8 ? "BROKER_LOGGER" : type == 16 ? "CLIENT_METRICS"
			 : type == 32 ? "GROUP" : NULL;
	if (name)
		snprintf(msg, msgsize, "Resource type %s (%d) is not supported by this broker", name,
			 type);
	else
		snprintf(msg, msgsize, "Unknown resource type %d", type);
	return KERR_INVALID_REQUEST;
}

char *brk_config_strndup(proto_arena *a, const char *p, int32_t len)
{
	char *s = proto_arena_alloc(a, (size_t)(len > 0 ? len : 0) + 1);
	if (s && len > 0)
		memcpy(s, p, (size_t)len);
	if (s)
		s[len > 0 ? len : 0] = '\0';
	return s;
}

int brk_config_alter_resources(proto_arena *a, const proto_str *names, const int8_t *kinds,
			       int32_t n, brk_config_alter_fn alter, void *ctx, int16_t *err,
			       proto_str *msg)
{
	size_t cap = (size_t)(n > 0 ? n : 1);
	bool *dup = proto_arena_alloc(a, cap * sizeof(*dup));
	int32_t *scratch = proto_arena_alloc(a, cap * sizeof(*scratch));
	if (!dup || !scratch)
		return -1;
	brk_config_find_duplicates(names, kinds, n, dup, scratch);
	for (int32_t i = 0; i < n; i++) {
		char text[512] = "";
		int rc;
		if (dup[i]) {
			rc = KERR_INVALID_REQUEST;
			snprintf(text, sizeof(text), "Each resource must appear at most once.");
		} else {
			rc = alter(ctx, i, text, sizeof(text));
		}
		if (rc < 0)
			return -1;
		err[i] = (int16_t)rc;
		msg[i] = proto_cstr(NULL);
		if (rc && text[0]) {
			char *s = brk_config_strndup(a, text, (int32_t)strlen(text));
			if (!s)
				return -1;
			msg[i] = proto_cstr(s);
		}
	}
	return 0;
}
