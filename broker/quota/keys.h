/*
 * keys.h - the client quota config keys (Kafka's QuotaConfig:
 * userAndClientQuotaConfigs and ipConfigs), their value types and Kafka's
 * checks of a value (ClientQuotaControlManager.validateQuotaKeyValue), and
 * how a value is written into an entity's config map (as Kafka's
 * ZooKeeper-mode AdminZkClient writes it: integral types as integers,
 * doubles as Java's Double.toString).
 */
#ifndef SAMSA_BROKER_QUOTA_KEYS_H
#define SAMSA_BROKER_QUOTA_KEYS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum brk_quota_value_type {
	BRK_QUOTA_LONG,
	BRK_QUOTA_INT,
	BRK_QUOTA_DOUBLE,
} brk_quota_value_type;

typedef struct brk_quota_key {
	const char *name;
	brk_quota_value_type type;
	bool ip;   /* an IP entity's key (else a user's / client id's) */
} brk_quota_key;

#define BRK_QUOTA_PRODUCER_BYTE_RATE "producer_byte_rate"
#define BRK_QUOTA_CONSUMER_BYTE_RATE "consumer_byte_rate"
#define BRK_QUOTA_REQUEST_PERCENTAGE "request_percentage"
#define BRK_QUOTA_CONTROLLER_MUTATION_RATE "controller_mutation_rate"
#define BRK_QUOTA_CONNECTION_CREATION_RATE "connection_creation_rate"

/* The key named name (len bytes) for an IP entity (ip) or a user / client
 * id entity; NULL when it is not one. */
const brk_quota_key *brk_quota_key_find(const char *name, size_t len, bool ip);

/* Whether name is a quota key of any entity kind (DescribeClientQuotas
 * shows those and nothing else of an entity's map, e.g. not SCRAM
 * credentials). */
bool brk_quota_key_known(const char *name, bool ip);

/* Kafka's check of a value to set; NULL when it is fine, else the error
 * message (INVALID_REQUEST) written into msg (cap bytes). */
const char *brk_quota_check_value(const brk_quota_key *k, double v, char *msg, size_t cap);

/* The value (one brk_quota_check_value passed) as the config map keeps it:
 * a DOUBLE as Java's Double.toString, an INT or LONG as Kafka's
 * (value + 1e-6).toInt / .toLong, which saturate at the type's bounds (2^63,
 * Long.MAX_VALUE as a Java client sends it, is 9223372036854775807).
 * Returns the length or -1 (cap too small). */
int brk_quota_format_value(const brk_quota_key *k, double v, char *out, size_t cap);

/* Parse a stored value (any form Java's Double.parseDouble reads that
 * strtod reads too). Returns 0 or -1. */
int brk_quota_parse_value(const char *s, double *out);

#endif
