/*
 * scram_store.c - SCRAM credentials in the users' client entity configs
 * (scram_store.h).
 */
#include "broker/security/scram_store.h"

#include <string.h>

#include "broker/security/scram.h"
#include "controller/entity.h"

const brk_client_config *brk_scram_store_user(const brk_client_configs *r, const char *user,
					      size_t len)
{
	char path[CTL_ENTITY_PATH_MAX + 1];
	if (len == 0 || ctl_entity_path(path, sizeof(path), CTL_ENTITY_USER, user, len, NULL, 0) < 0)
		return NULL;
	return brk_client_config_get(r, path);
}

int brk_scram_store_lookup(void *arg, const char *user, int mechanism, brk_scram_credential *out)
{
	const brk_client_configs *r = arg;
	const char *name = brk_sasl_mechanism_name(mechanism);
	const brk_client_config *cc = brk_scram_store_user(r, user, strlen(user));
	const char *v = name ? brk_client_config_value(cc, name) : NULL;
	if (!v || brk_scram_credential_parse(v, strlen(v), out) < 0)
		return -1;
	return 0;
}
