/*
 * parse.h - the text forms samsa-admin reads on its command line and
 * prints: numbers, host:port lists, broker id lists, replica assignments
 * in kafka-topics.sh's form, TOPIC:PARTITION, key=value, Kafka's topic ids.
 * Pure functions: no I/O, no allocation except where said.
 *
 * A topic name cannot hold ':' (Kafka allows [a-zA-Z0-9._-] only), so the
 * last ':' of TOPIC:PARTITION separates the two.
 */
#ifndef SAMSA_TOOLS_PARSE_H
#define SAMSA_TOOLS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/buf.h"

/* A decimal integer in [min, max], the whole string. */
bool adm_parse_int(const char *s, long min, long max, long *out);

/*
 * The i-th (from 0) address of "host:port[,host:port...]" ("[v6]:port"
 * for an IPv6 literal). Returns 1 with host and port, 0 when there is no
 * i-th entry, -1 when it is malformed (no port, port outside 1..65535,
 * host longer than host_cap - 1, empty).
 */
int adm_parse_host_port(const char *list, int i, char *host, size_t host_cap, int *port);

/*
 * "1,2,3": broker ids (0..INT32_MAX), at most cap. Returns the count
 * (>= 1), or -1 when malformed, empty, above cap, or an id appears twice.
 */
int adm_parse_ids(const char *s, int32_t *out, int cap);

/*
 * kafka-topics.sh's --replica-assignment: partitions separated by ',',
 * the replicas of each by ':' ("1:2:3,2:3:1"). Every partition must have
 * the same number of distinct replicas. Returns 0 with *nparts,
 * *nreplicas and *ids (malloc'd, nparts * nreplicas, partition after
 * partition; caller frees), or -1.
 */
int adm_parse_assignment(const char *s, int32_t *nparts, int32_t *nreplicas, int32_t **ids);

/*
 * "TOPIC:PARTITION" or "TOPIC" (*partition -1). topic gets a view into s.
 * -1 for an empty topic or a partition that is not a number >= 0.
 */
int adm_parse_topic_partition(const char *s, proto_str *topic, int32_t *partition);

/*
 * "TOPIC:PARTITION=1,2,3" (a reassignment target). Returns the replica
 * count (>= 1) with topic (a view into s) and partition, or -1.
 */
int adm_parse_target(const char *s, proto_str *topic, int32_t *partition, int32_t *ids, int cap);

/* "key=value": key and value views into s; -1 without '=' or key. */
int adm_parse_kv(const char *s, proto_str *key, proto_str *value);

/* "1,2,3" into buf (n ids; "" for none). Returns buf. */
const char *adm_fmt_ids(const int32_t *ids, int32_t n, char *buf, size_t cap);

/* Kafka's text form of a topic or cluster id: URL-safe base64 of the 16
 * bytes without padding (22 characters). buf needs 23 bytes. */
const char *adm_fmt_uuid(const proto_uuid *u, char *buf, size_t cap);

/* true when every byte of u is 0 (no id). */
bool adm_uuid_zero(const proto_uuid *u);

#endif
