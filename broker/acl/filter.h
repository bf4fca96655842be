/*
 * filter.h - Kafka's AclBindingFilter (DescribeAcls, DeleteAcls): which
 * stored ACLs a filter matches, and the checks Kafka makes of filters and
 * of new bindings (CreateAcls).
 *
 * Matching (ResourcePatternFilter.matches, AccessControlEntryFilter.matches):
 *  - type ANY or equal;
 *  - pattern type ANY or equal, or MATCH;
 *  - no name (null) matches any; with ANY, LITERAL or PREFIXED the name
 *    must equal the pattern's; with MATCH a LITERAL pattern matches when
 *    its name is the name or "*", a PREFIXED one when the name starts with
 *    it;
 *  - principal and host null or equal; operation and permission ANY or
 *    equal.
 */
#ifndef SAMSA_BROKER_ACL_FILTER_H
#define SAMSA_BROKER_ACL_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/acl.h"

typedef struct brk_acl_filter {
	int8_t type, pattern;
	const char *name;      /* NULL: any; nlen bytes */
	int32_t nlen;
	const char *principal; /* NULL: any; plen bytes */
	int32_t plen;
	const char *host;      /* NULL: any; hlen bytes */
	int32_t hlen;
	int8_t operation, permission;
} brk_acl_filter;

/* NULL when the filter is valid, else Kafka's message for INVALID_REQUEST
 * (an UNKNOWN element, or a code out of range). */
const char *brk_acl_filter_check(const brk_acl_filter *f);

bool brk_acl_filter_matches_pattern(const brk_acl_filter *f, const ctl_acl_resource *r);
bool brk_acl_filter_matches_entry(const brk_acl_filter *f, const ctl_acl_entry *e);

/* NULL when a new binding (CreateAcls) is valid, else the message of its
 * INVALID_REQUEST: every element known and concrete (no ANY, no MATCH),
 * pattern LITERAL or PREFIXED, a name (for CLUSTER only "kafka-cluster",
 * Kafka's AclApis messages), a principal of the form TYPE:NAME, a host,
 * strings that fit an entry. */
const char *brk_acl_binding_check(int8_t type, int8_t pattern, const char *name, int32_t nlen,
				  const char *principal, int32_t plen, const char *host,
				  int32_t hlen, int8_t op, int8_t perm);

#endif
