/*
 * authorizer.h - Kafka's ACL authorizer (kafka.security.authorizer.
 * AclAuthorizer, ZooKeeper mode; StandardAuthorizer has the same rules):
 * the ACLs of every resource pattern, kept in memory and indexed by
 * resource, and the decision whether a principal connecting from a host may
 * perform an operation on a resource.
 *
 * The rules (AclAuthorizer.authorize):
 *  - disabled (authorizer.class.name unset): everything is allowed;
 *  - a principal in super.users is allowed everything;
 *  - the ACLs that apply to resource (type, name) are those of the LITERAL
 *    pattern of that name, the LITERAL wildcard "*" of the type, and every
 *    PREFIXED pattern the name starts with;
 *  - none apply: allowed only when allow.everyone.if.no.acl.found;
 *  - an entry matches when its principal is the principal or "User:*", its
 *    host the host or "*";
 *  - a matching DENY whose operation is the operation or ALL refuses
 *    (DENY wins);
 *  - else a matching ALLOW allows when its operation is the operation,
 *    ALL, or one that implies it: DESCRIBE is implied by READ, WRITE,
 *    DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS;
 *  - else refused.
 *
 * Cost: a decision allocates nothing; it looks up the literal name and the
 * wildcard in a hash map per (type, pattern type) and one prefix per
 * distinct PREFIXED pattern length of the type, then scans the entries of
 * the (few) matching patterns.
 *
 * Ownership: the authorizer owns copies of everything set into it. Loop
 * thread only.
 */
#ifndef SAMSA_BROKER_ACL_AUTHORIZER_H
#define SAMSA_BROKER_ACL_AUTHORIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/strmap.h"
#include "controller/acl.h"

/* Kafka's authorizer class names (authorizer.class.name) that turn it on. */
#define BRK_ACL_AUTHORIZER_ZK "kafka.security.authorizer.AclAuthorizer"
#define BRK_ACL_AUTHORIZER_KRAFT "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

#define BRK_ACL_MAX_SUPER_USERS 64

typedef struct brk_acl_pattern brk_acl_pattern; /* a resource pattern and its entries */

typedef struct brk_authorizer {
	bool enabled;
	bool allow_if_no_acl;           /* allow.everyone.if.no.acl.found */
	char (*super_users)[CTL_ACL_PRINCIPAL_MAX]; /* malloc'd */
	int32_t nsuper;
	/* Patterns by [resource type][0 literal, 1 prefixed], keyed by name. */
	brk_strmap by_name[CTL_ACL_RES_MAX + 1][2];
	/* Per type, the distinct lengths of its PREFIXED names (ascending). */
	int32_t *prefix_lens[CTL_ACL_RES_MAX + 1];
	int32_t nprefix_lens[CTL_ACL_RES_MAX + 1];
} brk_authorizer;

/*
 * Set up from the configuration: enabled when class_name is one of the two
 * class names above (NULL or "" leaves it disabled); super_users is Kafka's
 * super.users, principals separated by ';' (spaces around each trimmed).
 * Returns 0, -EINVAL for another class name (Kafka fails to load it) or a
 * principal without "type:" or longer than an entry holds, -E2BIG for more
 * than BRK_ACL_MAX_SUPER_USERS, -ENOMEM.
 */
int brk_authorizer_init(brk_authorizer *a, const char *class_name, const char *super_users,
			bool allow_if_no_acl);
void brk_authorizer_free(brk_authorizer *a);

/* Replace the entries of one resource pattern (r->n == 0: remove it).
 * Copies r. 0, -EINVAL (a type or pattern type out of range), -ENOMEM (the
 * old entries stay). */
int brk_authorizer_set(brk_authorizer *a, const ctl_acl_resource *r);

/* The entries of one resource pattern, or NULL when it has none. */
const ctl_acl_resource *brk_authorizer_get(const brk_authorizer *a, int8_t type, int8_t pattern,
					   const char *name, int32_t len);

/* Whether principal may do op on resource (type, name: len bytes) from
 * host (a bare IP, no leading '/'). */
bool brk_authorize(const brk_authorizer *a, const char *principal, const char *host,
		   int8_t type, const char *name, int32_t len, int8_t op);

/* Whether principal is a super user (always false when disabled). */
bool brk_authorizer_is_super(const brk_authorizer *a, const char *principal);

/*
 * Kafka's Authorizer.authorizeByResourceType (KIP-679): whether principal
 * may do op on at least one resource of the type: a super user; else
 * refused when a matching DENY on the LITERAL "*" applies; else allowed
 * when a matching ALLOW (op, ALL or an implying op) exists on a pattern no
 * matching DENY covers (a DENY of the same LITERAL name, or a PREFIXED DENY
 * that is a prefix of it); else allow.everyone.if.no.acl.found when the
 * type has no ACLs at all.
 */
bool brk_authorize_any(const brk_authorizer *a, const char *principal, const char *host,
		       int8_t type, int8_t op);

/* Operations the principal may do on the resource, as bits (1 << op code)
 * among those in supported (the AclEntry.supportedOperations bits of the
 * type); supported itself when disabled. */
int32_t brk_authorized_operations(const brk_authorizer *a, const char *principal,
				  const char *host, int8_t type, const char *name, int32_t len,
				  int32_t supported);

/* Iterate every pattern: calls fn for each until it returns non-zero
 * (which is returned). */
int brk_authorizer_each(const brk_authorizer *a,
			int (*fn)(const ctl_acl_resource *r, void *arg), void *arg);

#endif
