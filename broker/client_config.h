/*
 * client_config.h - the configs of client entities as this broker knows
 * them: users, client ids, (user, client id) pairs and IPs (Kafka's
 * /config/users, /config/clients, /config/ips; controller/entity.h names
 * them by entity path, "users/alice", "users/<default>/clients/app", ...).
 * Quotas (broker/quota/) and SCRAM credentials live there, side by side in
 * a user's map, as in Kafka.
 *
 * Fed by the controller's CTL_EV_CLIENT_CONFIGS events (brk_cluster owns
 * one, cl->client_configs, and applies them on the loop); written through
 * CTL_OP_SET_CLIENT_CONFIGS (controller/ctl.h explains the conditional
 * read-modify-write with the version kept here).
 *
 * Everything runs on the event loop thread. Pointers returned are valid
 * until the next event is applied (do not keep them across loop
 * iterations).
 */
#ifndef SAMSA_BROKER_CLIENT_CONFIG_H
#define SAMSA_BROKER_CLIENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/strmap.h"
#include "controller/meta.h"

typedef struct brk_client_config {
	char *entity;              /* the entity path (the map's key), owned */
	ctl_config_entry *configs; /* the whole map, owned */
	int32_t nconfigs;
	int32_t version;           /* for CTL_OP_SET_CLIENT_CONFIGS' expected_version */
} brk_client_config;

/* Told after an entity changed: cc is its new state, NULL when it is gone
 * (entity is the path then). */
typedef void (*brk_client_config_fn)(void *arg, const char *entity, const brk_client_config *cc);

#define BRK_CLIENT_CONFIG_LISTENERS 4

typedef struct brk_client_configs {
	brk_strmap map; /* entity path -> brk_client_config */
	struct {
		brk_client_config_fn fn;
		void *arg;
	} listeners[BRK_CLIENT_CONFIG_LISTENERS];
	int nlisteners;
} brk_client_configs;

/* A zeroed struct is an empty registry too. */
void brk_client_configs_init(brk_client_configs *r);
void brk_client_configs_free(brk_client_configs *r);

/* Apply one event's state: entity, configs[0..n) and version are taken
 * over (freed here on failure too); version < 0 removes the entity. Then
 * the listeners are told. Returns 0 or -ENOMEM (the old state stays). */
int brk_client_configs_apply(brk_client_configs *r, char *entity, ctl_config_entry *configs,
			     int32_t n, int32_t version);

/* Call fn on every change from now on (registered at start-up, e.g. by
 * the quota manager, which then reads what is there with _at). Returns 0
 * or -ENOSPC. */
int brk_client_configs_listen(brk_client_configs *r, brk_client_config_fn fn, void *arg);

/* The entity (its path, NUL-terminated), NULL when it has no configs. */
const brk_client_config *brk_client_config_get(const brk_client_configs *r, const char *entity);
/* The value of name in cc (NULL cc allowed), or NULL. */
const char *brk_client_config_value(const brk_client_config *cc, const char *name);

/* Iterate: the entity at i in [0, count). */
static inline int32_t brk_client_configs_count(const brk_client_configs *r)
{
	return brk_strmap_count(&r->map);
}
static inline const brk_client_config *brk_client_configs_at(const brk_client_configs *r,
							     int32_t i)
{
	return (const brk_client_config *)brk_strmap_at(&r->map, i);
}

#endif
