/*
 * scram_store.h - SCRAM credentials where Kafka keeps them: in a user's
 * client entity configs (/config/users/<user> in ZooKeeper, the local
 * metadata otherwise; broker/client_config.h), under the mechanism's name
 * ("SCRAM-SHA-256", "SCRAM-SHA-512"), as Kafka's credential strings
 * (scram.h). AlterUserScramCredentials writes them through the controller,
 * every broker reads them from its registry.
 */
#ifndef SAMSA_BROKER_SECURITY_SCRAM_STORE_H
#define SAMSA_BROKER_SECURITY_SCRAM_STORE_H

#include <stddef.h>

#include "broker/client_config.h"
#include "broker/security/sasl.h"

/* The configs of user (raw name, len bytes) in r; NULL when it has none
 * or the name cannot be an entity. */
const brk_client_config *brk_scram_store_user(const brk_client_configs *r, const char *user,
					      size_t len);

/* A brk_scram_lookup_fn over a brk_client_configs (arg): user's
 * credential for mechanism; -1 when absent or not a credential string. */
int brk_scram_store_lookup(void *arg, const char *user, int mechanism, brk_scram_credential *out);

#endif
