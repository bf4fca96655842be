/*
 * entity.h - client config entities as Kafka's ZooKeeper mode names them
 * (kafka.server.ConfigType, ConfigEntityName, AdminZkClient): the configs
 * of a user, a client id, a (user, client id) pair or an IP live in
 *
 *   /config/users/<user>                    type "users"
 *   /config/users/<user>/clients/<client>   type "users", the pair
 *   /config/clients/<client>                type "clients"
 *   /config/ips/<ip>                        type "ips"
 *
 * where each name is sanitized (Kafka's Sanitizer: URL-encoded, below) and
 * the default entity of a kind is the literal "<default>"
 * (ConfigEntityName.Default; a user really called "<default>" sanitizes to
 * "%3Cdefault%3E", so the two never meet). The *entity path* is what
 * follows "/config/": "users/alice", "users/<default>/clients/app",
 * "clients/<default>", "ips/10.0.0.1". It is also the entity_path of the
 * v2 config change notice Kafka writes for it, and the key the controller
 * (ctl.h, CTL_OP_SET_CLIENT_CONFIGS) and the broker use for an entity.
 *
 * Pure functions of their arguments (no allocation): fuzzed by
 * fuzz/fuzz_znode.c through ctl_entity_parse.
 */
#ifndef SAMSA_CONTROLLER_ENTITY_H
#define SAMSA_CONTROLLER_ENTITY_H

#include <stdbool.h>
#include <stddef.h>

/* The default entity's name in a path (Kafka's ConfigEntityName.Default). */
#define CTL_ENTITY_DEFAULT "<default>"
/* Longest entity path accepted (a bound of ours: Kafka has none). Raw
 * names of up to 300 bytes always fit (each byte sanitizes to at most 3). */
#define CTL_ENTITY_PATH_MAX 2048

typedef enum ctl_entity_kind {
	CTL_ENTITY_USER = 1,            /* users/<user> */
	CTL_ENTITY_CLIENT_ID = 2,       /* clients/<client> */
	CTL_ENTITY_USER_CLIENT_ID = 3,  /* users/<user>/clients/<client> */
	CTL_ENTITY_IP = 4,              /* ips/<ip> */
} ctl_entity_kind;

/*
 * Kafka's Sanitizer.sanitize: java.net.URLEncoder with UTF-8 ([A-Za-z0-9]
 * and ".-_" stay, every other byte becomes %XX with upper-case hex) where
 * '*' becomes "%2A" and a space "%20" (not '+'). name is len bytes (any
 * bytes); out gets the result and a NUL. Returns its length, or
 * -ENAMETOOLONG when it needs cap bytes or more.
 */
int ctl_entity_sanitize(const char *name, size_t len, char *out, size_t cap);

/*
 * Kafka's Sanitizer.desanitize (java.net.URLDecoder, UTF-8): %XX becomes
 * the byte XX, '+' a space, anything else stays. out gets the result and a
 * NUL (it may hold NUL bytes: use the length). Returns the length, -EINVAL
 * for a '%' not followed by two hex digits, -ENAMETOOLONG when it needs
 * cap bytes or more.
 */
int ctl_entity_desanitize(const char *s, size_t len, char *out, size_t cap);

/*
 * The entity path of an entity from raw names (as they come in a request:
 * the user principal's name, the client id, the IP), sanitized here. A
 * NULL name is the default entity of its kind ("<default>"). client is
 * used by CTL_ENTITY_USER_CLIENT_ID only; for CTL_ENTITY_CLIENT_ID and
 * CTL_ENTITY_IP the one name is name. An empty (non-NULL) name is
 * refused, as Kafka does ("Empty user not supported").
 * Example: ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, "alice", 5, NULL, 0)
 * gives "users/alice". Returns the path's length, -EINVAL (an empty name,
 * an unknown kind) or -ENAMETOOLONG (cap, or CTL_ENTITY_PATH_MAX).
 */
int ctl_entity_path(char *out, size_t cap, ctl_entity_kind kind, const char *name,
		    size_t name_len, const char *client, size_t client_len);

/* An entity path taken apart. The names are views into the parsed path,
 * still sanitized; *_default tells "<default>". */
typedef struct ctl_entity_ref {
	ctl_entity_kind kind;
	const char *name;      /* the user, the client id or the IP */
	size_t name_len;
	bool name_default;
	const char *client;    /* CTL_ENTITY_USER_CLIENT_ID: the client id */
	size_t client_len;
	bool client_default;
} ctl_entity_ref;

/*
 * Parse and check an entity path (len bytes, no NUL needed): one of the
 * four forms above, each name non-empty, made of printable ASCII without
 * '/', not "." or "..", at most CTL_ENTITY_PATH_MAX bytes in all, and
 * decodable by ctl_entity_desanitize. Returns 0 or -EINVAL.
 */
int ctl_entity_parse(const char *path, size_t len, ctl_entity_ref *out);

#endif
