/*
 * filter.c - ACL binding filters and binding checks (filter.h).
 */
#include <string.h>

#include "broker/acl/filter.h"

static bool eqn(const char *a, int32_t alen, const char *b)
{
	return (int32_t)strlen(b) == alen && memcmp(a, b, (size_t)alen) == 0;
}

const char *brk_acl_filter_check(const brk_acl_filter *f)
{
	if (f->type <= CTL_ACL_RES_UNKNOWN || f->type > CTL_ACL_RES_MAX ||
	    f->pattern <= CTL_ACL_PAT_UNKNOWN || f->pattern > CTL_ACL_PAT_PREFIXED ||
	    f->operation <= CTL_ACL_OP_UNKNOWN || f->operation > CTL_ACL_OP_MAX ||
	    f->permission <= CTL_ACL_PERM_UNKNOWN || f->permission > CTL_ACL_PERM_ALLOW)
		return "The filter contains UNKNOWN elements";
	return NULL;
}

bool brk_acl_filter_matches_pattern(const brk_acl_filter *f, const ctl_acl_resource *r)
{
	if (f->type != CTL_ACL_RES_ANY && f->type != r->type)
		return false;
	if (f->pattern != CTL_ACL_PAT_ANY && f->pattern != CTL_ACL_PAT_MATCH &&
	    f->pattern != r->pattern)
		return false;
	if (!f->name)
		return true;
	if (f->pattern != CTL_ACL_PAT_MATCH)
		return eqn(f->name, f->nlen, r->name);
	if (r->pattern == CTL_ACL_PAT_LITERAL)
		return eqn(f->name, f->nlen, r->name) || strcmp(r->name, CTL_ACL_WILDCARD) == 0;
	size_t pl = strlen(r->name);
	return (size_t)f->nlen >= pl && memcmp(f->name, r->name, pl) == 0;
}

bool brk_acl_filter_matches_entry(const brk_acl_filter *f, const ctl_acl_entry *e)
{
	return (!f->principal || eqn(f->principal, f->plen, e->principal)) &&
	       (!f->host || eqn(f->host, f->hlen, e->host)) &&
	       (f->operation == CTL_ACL_OP_ANY || f->operation == e->operation) &&
	       (f->permission == CTL_ACL_PERM_ANY || f->permission == e->permission);
}

const char *brk_acl_binding_check(int8_t type, int8_t pattern, const char *name, int32_t nlen,
				  const char *principal, int32_t plen, const char *host,
				  int32_t hlen, int8_t op, int8_t perm)
{
	if (type <= CTL_ACL_RES_ANY || type > CTL_ACL_RES_MAX || op <= CTL_ACL_OP_ANY ||
	    op > CTL_ACL_OP_MAX || perm <= CTL_ACL_PERM_ANY || perm > CTL_ACL_PERM_ALLOW)
		return "Invalid ACL creation: the binding contains ANY or UNKNOWN elements";
	if (pattern != CTL_ACL_PAT_LITERAL && pattern != CTL_ACL_PAT_PREFIXED)
		return "Invalid ACL creation: the pattern type must be LITERAL or PREFIXED";
	if (!name || nlen <= 0)
		return "Invalid empty resource name";
	if (memchr(name, '\0', (size_t)nlen))
		return "Invalid ACL creation: the resource name holds a NUL byte";
	if (type == CTL_ACL_RES_CLUSTER &&
	    !(nlen == (int32_t)strlen(CTL_ACL_CLUSTER_NAME) &&
	      memcmp(name, CTL_ACL_CLUSTER_NAME, (size_t)nlen) == 0))
		return "The only valid name for the CLUSTER resource is kafka-cluster";
	if (!principal || plen <= 0 || plen >= CTL_ACL_PRINCIPAL_MAX ||
	    !memchr(principal, ':', (size_t)plen) || principal[0] == ':' ||
	    memchr(principal, '\0', (size_t)plen))
		return "Invalid ACL creation: the principal must be TYPE:NAME";
	if (!host || hlen <= 0 || hlen >= CTL_ACL_HOST_MAX || memchr(host, '\0', (size_t)hlen))
		return "Invalid ACL creation: a host is required (\"*\" for any)";
	return NULL;
}
