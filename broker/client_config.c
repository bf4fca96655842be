/*
 * client_config.c - the client entity configs of this broker
 * (client_config.h).
 */
#include "broker/client_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void brk_client_configs_init(brk_client_configs *r)
{
	memset(r, 0, sizeof(*r));
	brk_strmap_init(&r->map);
}

static void entry_free(brk_client_config *cc)
{
	if (!cc)
		return;
	free(cc->entity);
	ctl_configs_free(cc->configs, cc->nconfigs);
	free(cc);
}

void brk_client_configs_free(brk_client_configs *r)
{
	for (int32_t i = 0; i < brk_strmap_count(&r->map); i++)
		entry_free(brk_strmap_at(&r->map, i));
	brk_strmap_free(&r->map);
	r->nlisteners = 0;
}

static void tell(brk_client_configs *r, const char *entity, const brk_client_config *cc)
{
	for (int i = 0; i < r->nlisteners; i++)
		r->listeners[i].fn(r->listeners[i].arg, entity, cc);
}

int brk_client_configs_apply(brk_client_configs *r, char *entity, ctl_config_entry *configs,
			     int32_t n, int32_t version)
{
	int32_t len = (int32_t)strlen(entity);
	brk_client_config *cc = brk_strmap_get(&r->map, entity, len);
	if (version < 0) {
		ctl_configs_free(configs, n);
		if (cc) {
			brk_strmap_remove(&r->map, entity, len);
			entry_free(cc);
			tell(r, entity, NULL);
		}
		free(entity);
		return 0;
	}
	if (cc) {
		ctl_configs_free(cc->configs, cc->nconfigs);
		cc->configs = configs;
		cc->nconfigs = n;
		cc->version = version;
		free(entity);
	} else {
		cc = calloc(1, sizeof(*cc));
		if (!cc) {
			ctl_configs_free(configs, n);
			free(entity);
			return -ENOMEM;
		}
		cc->entity = entity;
		cc->configs = configs;
		cc->nconfigs = n;
		cc->version = version;
		if (brk_strmap_put(&r->map, cc->entity, len, cc) != 0) {
			entry_free(cc);
			return -ENOMEM;
		}
	}
	tell(r, cc->entity, cc);
	return 0;
}

int brk_client_configs_listen(brk_client_configs *r, brk_client_config_fn fn, void *arg)
{
	if (r->nlisteners >= BRK_CLIENT_CONFIG_LISTENERS)
		return -ENOSPC;
	r->listeners[r->nlisteners].fn = fn;
	r->listeners[r->nlisteners].arg = arg;
	r->nlisteners++;
	return 0;
}

const brk_client_config *brk_client_config_get(const brk_client_configs *r, const char *entity)
{
	return brk_strmap_get(&r->map, entity, (int32_t)strlen(entity));
}

const char *brk_client_config_value(const brk_client_config *cc, const char *name)
{
	for (int32_t i = 0; cc && i < cc->nconfigs; i++)
		if (strcmp(cc->configs[i].name, name) == 0)
			return cc->configs[i].value;
	return NULL;
}
