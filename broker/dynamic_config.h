/*
 * dynamic_config.h - configs changed at runtime (AlterConfigs,
 * IncrementalAlterConfigs): the checks of topic overrides and dynamic
 * broker configs (KIP-226), and the broker config layers. The handlers
 * persist changes through the controller; what it reports back is applied
 * here (broker configs) or by the partition registry (topic overrides) to
 * server.cfg and to the running partition logs.
 *
 * The broker config comes in layers (Kafka's DynamicBrokerConfig): the
 * static config read at start-up (server.properties and --override), the
 * cluster-wide dynamic defaults (BROKER resource ""), and this broker's
 * dynamic configs (BROKER resource "<broker.id>"); server.cfg is always the
 * result of all three. A topic's effective config (brk_topic.cfg) is its
 * overrides over server.cfg.
 *
 * Everything here runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_DYNAMIC_CONFIG_H
#define SAMSA_BROKER_DYNAMIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/security/password_encoder.h"
#include "controller/ctl.h"
#include "protocol/buf.h"

struct brk_partitions;

/* The layers (Kafka's DynamicBrokerConfig). Owned by the server. */
typedef struct brk_dynamic_config {
	brk_config *cfg;             /* the effective config: static + dynamic layers */
	brk_config static_cfg;       /* as read at start-up */
	ctl_config_entry *defaults;  /* BROKER "" (cluster-wide), owned */
	int32_t ndefaults;
	ctl_config_entry *own;       /* BROKER "<broker.id>", owned */
	int32_t nown;
	struct brk_partitions *partitions; /* their topics follow a change */
	void (*changed)(void *arg);  /* after each rebuild (brk_dynamic_config_set_hook) */
	void *changed_arg;
	/* password.encoder.* of the static config (strings point into
	 * static_cfg); encoder.secret NULL: not set. */
	brk_password_encoder encoder;
	const char *old_secret;      /* password.encoder.old.secret, or NULL */
	bool reencode;               /* brk_dynamic_config_reencoded has work */
} brk_dynamic_config;

/*
 * The password.encoder.* keys of a static config checked at start-up:
 * when password.encoder.secret is set, its cipher, key factory, key length
 * and iterations must be ones brk_password_encoder_check takes (Kafka
 * refuses iterations below 1024 at start-up). 0, or -1 with the reason.
 */
int brk_dynamic_config_check_encoder(const brk_config *cfg, char *err, size_t errsize);

/* Call fn(arg) on the loop after each rebuild of the effective config
 * (e.g. a listener's TLS context follows its ssl.* keys); NULL: none. */
void brk_dynamic_config_set_hook(brk_dynamic_config *d, void (*fn)(void *arg), void *arg);

/*
 * Keep *cfg as the static config; cfg then stays the effective one, rebuilt
 * whenever a dynamic layer changes (brk_dynamic_config_apply), and the
 * topics of partitions with it. Call before the controller's first events.
 */
void brk_dynamic_config_init(brk_dynamic_config *d, brk_config *cfg,
			     struct brk_partitions *partitions);
void brk_dynamic_config_free(brk_dynamic_config *d);

/*
 * The dynamic configs of broker_id (or CTL_BROKER_DEFAULT) changed, as the
 * controller reports them (configs taken over; another broker's are freed):
 * each password value is decrypted first (password.encoder.secret, then
 * password.encoder.old.secret); one that cannot be (no secret, a wrong
 * one, not Kafka's form) is dropped with a line on stderr naming the key,
 * as Kafka's DynamicBrokerConfig.fromPersistentProps logs and ignores it.
 * The layers then hold plain passwords (never logged, wiped when freed);
 * the effective config is rebuilt (a bad value is warned about on stderr
 * and skipped, as Kafka skips an invalid dynamic config) and every topic's
 * config with it (Kafka's DynamicLogConfig.reconfigure: topics without an
 * override take the new default).
 */
void brk_dynamic_config_apply(brk_dynamic_config *d, int32_t broker_id, ctl_config_entry *configs,
			      int32_t n);

/*
 * Kafka's maybeReEncodePasswords: when the last apply of this broker's
 * configs read a password with password.encoder.old.secret (and could read
 * every one), those configs with each password encrypted with
 * password.encoder.secret, malloc'd (*n entries, free with
 * ctl_configs_free) for the caller to store, so the old secret can go;
 * NULL otherwise (or out of memory). Either way the flag is cleared.
 */
ctl_config_entry *brk_dynamic_config_reencoded(brk_dynamic_config *d, int32_t *n);

/* The current dynamic configs of broker_id (this broker or
 * CTL_BROKER_DEFAULT): *n entries, NULL when none. Valid until the next
 * change. */
const ctl_config_entry *brk_dynamic_config_of(const brk_dynamic_config *d, int32_t broker_id,
					      int32_t *n);

/* The current layers, for describing (pointers valid until the next
 * change). */
void brk_dynamic_config_layers(const brk_dynamic_config *d, brk_config_layers *out);

/*
 * Whether configs (a complete new set of dynamic broker configs of the
 * broker resource named resource, "" for the default) may be stored, as
 * Kafka (ZooKeeper mode, DynamicBrokerConfig.toPersistentProps) decides
 * for a password key (brk_config_is_password): without
 * password.encoder.secret INVALID_REQUEST "Invalid config value for
 * resource ConfigResource(type=BROKER, name='0'): Password encoder secret
 * not configured"; at the default resource (Kafka's validate: a password
 * is a per-broker config) "...: Cannot update these configs at default
 * cluster level, broker id must be specified: [name]". password.encoder.*
 * itself is never dynamic, nor is a sasl.jaas.config here (the SASL logins
 * are built at start-up): "Cannot update these configs dynamically:
 * [name]". Otherwise KERR_NONE: brk_dynamic_config_encode_passwords then
 * encrypts them.
 */
int16_t brk_dynamic_config_check_passwords(const brk_dynamic_config *d, const char *resource,
					   const ctl_config_entry *configs, int32_t n, char *msg,
					   size_t msgsize);

/*
 * Each password value of configs (n entries, checked by
 * brk_dynamic_config_check_passwords) replaced by Kafka's encrypted form
 * (security/password_encoder.h, a fresh salt and IV each time), allocated
 * in arena a; the entries' other values are left alone. The handlers call
 * it on the set handed to the controller, so ZooKeeper and the local
 * metadata file only ever hold encrypted passwords. Returns KERR_NONE,
 * INVALID_REQUEST with msg when one cannot be encrypted, -1 when the arena
 * is exhausted.
 */
int brk_dynamic_config_encode_passwords(const brk_dynamic_config *d, proto_arena *a,
					ctl_config_entry *configs, int32_t n, char *msg,
					size_t msgsize);

/*
 * Whether a new complete set of dynamic configs of broker_id (this broker
 * or CTL_BROKER_DEFAULT; other brokers: KERR_NONE) applies: the effective
 * config is rebuilt with it on a trial copy (brk_config_rebuild, the very
 * rebuild brk_dynamic_config_apply makes). A value it would skip (e.g. the
 * security keys over BRK_SECURITY_PROPS_BYTES in all) is refused with
 * INVALID_REQUEST "Invalid config value for resource ConfigResource(
 * type=BROKER, name='0'): Invalid value for configuration <key>: <why>".
 * Then each SSL/SASL_SSL listener whose ssl.* keys would change gets a
 * trial context (security/tls.h); one that cannot be built is refused as
 * Kafka's DynamicBrokerConfig refuses it: INVALID_REQUEST, "Validation of
 * dynamic config update of SSLFactory failed: <why>".
 */
int16_t brk_dynamic_config_check_rebuild(const brk_dynamic_config *d, int32_t broker_id,
					 const ctl_config_entry *configs, int32_t n, char *msg,
					 size_t msgsize);

/*
 * Check a new complete set of dynamic configs of a BROKER resource
 * (broker_id, or CTL_BROKER_DEFAULT for the cluster-wide default) as
 * Kafka's DynamicBrokerConfig.validate(Configs) does, in its order: keys
 * this broker reads but cannot change at runtime are refused with
 * INVALID_REQUEST "Cannot update these configs dynamically: [names]"; the
 * SSL keys Kafka changes at runtime (SslConfigs.RECONFIGURABLE_CONFIGS:
 * ssl.keystore.*, ssl.key.password, ssl.truststore.*) without a
 * "listener.name.<l>." prefix with "Invalid config value for resource
 * ConfigResource(type=BROKER, name='0'): These security configs can be
 * dynamically updated only per-listener using the listener prefix:
 * [names]"; a bad value with INVALID_REQUEST "Invalid value ... for
 * configuration ..."; at the cluster default, Kafka's per-broker keys
 * (those SSL keys, DynamicListenerConfig's listener, SSL and SASL keys,
 * and every listener.name.<l>.X but max.connections,
 * max.connection.creation.rate and num.network.threads) with "...:
 * Cannot update these configs at default cluster level, broker id must
 * be specified: [names]" (Kafka prints a Scala Set, "Set(a, b)"; the
 * names here are in brackets as in the other messages). (KAFKA-13609: Kafka answers
 * INVALID_REQUEST, not INVALID_CONFIG, for broker configs). Keys this
 * broker does not know are accepted and kept, as Kafka keeps them.
 * Returns KERR_NONE or the error, message in msg.
 */
int brk_dynamic_config_check_broker(int32_t broker_id, const ctl_config_entry *configs, int32_t n,
				    char *msg, size_t msgsize);

/* Kafka's ConfigResource.Type ids used here. */
enum {
	BRK_RESOURCE_TOPIC = 2,
	BRK_RESOURCE_BROKER = 4,
	BRK_RESOURCE_BROKER_LOGGER = 8,
};

/*
 * Kafka's Topic.validate for a topic resource name (view of len bytes):
 * KERR_NONE, or INVALID_TOPIC_EXCEPTION with Kafka's message in msg
 * (empty, "." or "..", longer than 249, a character outside
 * [a-zA-Z0-9._-]).
 */
int brk_config_check_topic_name(const char *name, int32_t len, char *msg, size_t msgsize);

/*
 * A BROKER resource name that names a broker: its id into *id. Returns
 * KERR_NONE, or INVALID_REQUEST with Kafka's message (ConfigAdminManager.
 * validateResourceNameIsCurrentNodeId) when it is not an integer or not
 * this broker's id (self).
 */
int brk_config_check_broker_name(const char *name, int32_t len, int32_t self, int32_t *id,
				 char *msg, size_t msgsize);

/*
 * Duplicates in a request (Kafka: "Each resource must appear at most once.",
 * "Error due to duplicate config keys"): dup[i] is set true for each i whose
 * (kinds[i], names[i]) appears more than once (kinds may be NULL). scratch
 * holds n entries. O(n log n), so a request with many entries costs little.
 */
void brk_config_find_duplicates(const proto_str *names, const int8_t *kinds, int32_t n,
				bool *dup, int32_t *scratch);

/*
 * The checks Kafka makes on one resource's config entries before anything
 * else (ConfigAdminManager): INVALID_REQUEST "Error due to duplicate config
 * keys" when a name appears twice, else INVALID_REQUEST "Null value not
 * supported for : a, b" naming every entry with no_value[i] set; then a
 * name or value holding a NUL byte is refused with INVALID_REQUEST (stored
 * as a C string it would be cut short; Kafka would fail to load it):
 * "Invalid config name: ..." or "Invalid value for configuration <name>:
 * a config value cannot hold a NUL byte". KERR_NONE when none of these.
 * names, values and no_value hold n entries (caller-owned; a value with
 * len < 0 is null); the scratch space comes from arena. Returns -1 when
 * the arena is exhausted.
 */
int brk_config_check_entries(proto_arena *a, const proto_str *names, const proto_str *values,
			     const bool *no_value, int32_t n, char *msg, size_t msgsize);

/* The answer to an Alter/IncrementalAlterConfigs resource of a type not
 * served here: INVALID_REQUEST, with msg (msgsize bytes) naming the type
 * when Kafka knows it (BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32 of
 * ConfigResource.Type) and "Unknown resource type N" otherwise. */
int brk_config_unsupported_type(int8_t type, char *msg, size_t msgsize);

/* A NUL-terminated copy of the len bytes at p (len <= 0: "") in arena a;
 * NULL when the arena is exhausted. */
char *brk_config_strndup(proto_arena *a, const char *p, int32_t len);

/* What an alter function returns when the change passed every check and
 * was handed to the controller for resource i (its result comes later). */
#define BRK_CONFIG_PENDING 0x7fff

/* Alter resource i of the request in ctx: a Kafka error code with msg
 * (msgsize bytes) filled when there is one, BRK_CONFIG_PENDING, or < 0 to
 * close the connection. */
typedef int (*brk_config_alter_fn)(void *ctx, int32_t i, char *msg, size_t msgsize);

/*
 * The resource loop shared by AlterConfigs and IncrementalAlterConfigs
 * (Kafka's ConfigAdminManager): for each of the n resources (kinds[i],
 * names[i]), err[i] and msg[i] become INVALID_REQUEST "Each resource must
 * appear at most once." for a resource named twice, else what
 * alter(ctx, i, ...) returns; msg[i] is an arena copy of the message when
 * err[i] != 0 and there is one, a null string otherwise. err and msg hold n
 * entries, owned by the caller. Returns 0, or -1 when the arena is
 * exhausted or alter returned < 0 (the request is answered by closing).
 */
int brk_config_alter_resources(proto_arena *a, const proto_str *names, const int8_t *kinds,
			       int32_t n, brk_config_alter_fn alter, void *ctx, int16_t *err,
			       proto_str *msg);

#endif
