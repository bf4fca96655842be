/*
 * authorizer.c - Kafka's ACL rules over an index by resource (authorizer.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/acl/authorizer.h"

struct brk_acl_pattern {
	ctl_acl_resource r;
};

static int trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
	return *n > 0;
}

int brk_authorizer_init(brk_authorizer *a, const char *class_name, const char *super_users,
			bool allow_if_no_acl)
{
	memset(a, 0, sizeof(*a));
	a->allow_if_no_acl = allow_if_no_acl;
	if (!class_name || !*class_name)
		return 0;
	if (strcmp(class_name, BRK_ACL_AUTHORIZER_ZK) != 0 &&
	    strcmp(class_name, BRK_ACL_AUTHORIZER_KRAFT) != 0)
		return -EINVAL;
	a->enabled = true;
	if (!super_users)
		return 0;
	a->super_users = calloc(BRK_ACL_MAX_SUPER_USERS, sizeof(*a->super_users));
	if (!a->super_users)
		return -ENOMEM;
	for (const char *p = super_users; *p;) {
		const char *semi = strchr(p, ';');
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		const char *s = p;
		p += n + (semi ? 1 : 0);
		if (!trim(&s, &n))
			continue;
		if (a->nsuper == BRK_ACL_MAX_SUPER_USERS) {
			brk_authorizer_free(a);
			return -E2BIG;
		}
		if (n >= CTL_ACL_PRINCIPAL_MAX || !memchr(s, ':', n)) {
			brk_authorizer_free(a);
			return -EINVAL;
		}
		memcpy(a->super_users[a->nsuper], s, n);
		a->super_users[a->nsuper++][n] = '\0';
	}
	return 0;
}

void brk_authorizer_free(brk_authorizer *a)
{
	for (int t = 0; t <= CTL_ACL_RES_MAX; t++) {
		for (int k = 0; k < 2; k++) {
			brk_strmap *m = &a->by_name[t][k];
			for (int32_t i = 0; i < brk_strmap_count(m); i++) {
				brk_acl_pattern *p = brk_strmap_at(m, i);
				ctl_acl_resource_clear(&p->r);
				free(p);
			}
			brk_strmap_free(m);
		}
		free(a->prefix_lens[t]);
	}
	free(a->super_users);
	memset(a, 0, sizeof(*a));
}

static int kind_of(int8_t pattern)
{
	return pattern == CTL_ACL_PAT_LITERAL ? 0 : pattern == CTL_ACL_PAT_PREFIXED ? 1 : -1;
}

/* Recompute the distinct prefixed name lengths of type t. */
static int update_prefix_lens(brk_authorizer *a, int t)
{
	const brk_strmap *m = &a->by_name[t][1];
	int32_t n = brk_strmap_count(m), k = 0;
	int32_t *lens = n ? malloc((size_t)n * sizeof(*lens)) : NULL;
	if (n && !lens)
		return -ENOMEM;
	for (int32_t i = 0; i < n; i++) {
		int32_t len = m->e[i].len, j = k;
		while (j > 0 && lens[j - 1] > len)
			j--;
		if (j > 0 && lens[j - 1] == len)
			continue;
		memmove(lens + j + 1, lens + j, (size_t)(k - j) * sizeof(*lens));
		lens[j] = len;
		k++;
	}
	free(a->prefix_lens[t]);
	a->prefix_lens[t] = lens;
	a->nprefix_lens[t] = k;
	return 0;
}

int brk_authorizer_set(brk_authorizer *a, const ctl_acl_resource *r)
{
	int k = kind_of(r->pattern);
	if (r->type <= CTL_ACL_RES_ANY || r->type > CTL_ACL_RES_MAX || k < 0 || !r->name)
		return -EINVAL;
	brk_strmap *m = &a->by_name[r->type][k];
	int32_t len = (int32_t)strlen(r->name);
	brk_acl_pattern *old = brk_strmap_get(m, r->name, len);
	if (r->n == 0) {
		if (!old)
			return 0;
		brk_strmap_remove(m, r->name, len);
		ctl_acl_resource_clear(&old->r);
		free(old);
		return k ? update_prefix_lens(a, r->type) : 0;
	}
	if (old) {
		ctl_acl_entry *e = malloc((size_t)r->n * sizeof(*e));
		if (!e)
			return -ENOMEM;
		memcpy(e, r->entries, (size_t)r->n * sizeof(*e));
		free(old->r.entries);
		old->r.entries = e;
		old->r.n = r->n;
		return 0;
	}
	brk_acl_pattern *p = calloc(1, sizeof(*p));
	if (!p || ctl_acl_resource_copy(&p->r, r) != 0) {
		free(p);
		return -ENOMEM;
	}
	if (brk_strmap_put(m, p->r.name, len, p) != 0) {
		ctl_acl_resource_clear(&p->r);
		free(p);
		return -ENOMEM;
	}
	if (k && update_prefix_lens(a, r->type) != 0) {
		brk_strmap_remove(m, p->r.name, len);
		ctl_acl_resource_clear(&p->r);
		free(p);
		return -ENOMEM;
	}
	return 0;
}

const ctl_acl_resource *brk_authorizer_get(const brk_authorizer *a, int8_t type, int8_t pattern,
					   const char *name, int32_t len)
{
	int k = kind_of(pattern);
	if (type <= CTL_ACL_RES_ANY || type > CTL_ACL_RES_MAX || k < 0)
		return NULL;
	brk_acl_pattern *p = brk_strmap_get(&a->by_name[type][k], name, len);
	return p ? &p->r : NULL;
}

bool brk_authorizer_is_super(const brk_authorizer *a, const char *principal)
{
	if (!a->enabled)
		return false;
	for (int32_t i = 0; i < a->nsuper; i++)
		if (strcmp(a->super_users[i], principal) == 0)
			return true;
	return false;
}

/* Whether an ALLOW of operation have grants op. */
static bool implies(int8_t have, int8_t op)
{
	if (have == op || have == CTL_ACL_OP_ALL)
		return true;
	if (op == CTL_ACL_OP_DESCRIBE)
		return have == CTL_ACL_OP_READ || have == CTL_ACL_OP_WRITE ||
		       have == CTL_ACL_OP_DELETE || have == CTL_ACL_OP_ALTER;
	if (op == CTL_ACL_OP_DESCRIBE_CONFIGS)
		return have == CTL_ACL_OP_ALTER_CONFIGS;
	return false;
}

static bool entry_matches(const ctl_acl_entry *e, const char *principal, const char *host)
{
	return (strcmp(e->principal, principal) == 0 ||
		strcmp(e->principal, CTL_ACL_WILDCARD_PRINCIPAL) == 0) &&
	       (strcmp(e->host, CTL_ACL_WILDCARD) == 0 || strcmp(e->host, host) == 0);
}

/* What the entries of one pattern say: bit 0 a matching DENY, bit 1 a
 * matching ALLOW. */
enum { SAYS_DENY = 1, SAYS_ALLOW = 2 };

static int pattern_says(const ctl_acl_resource *r, const char *principal, const char *host,
			int8_t op)
{
	int says = 0;
	for (int32_t i = 0; i < r->n; i++) {
		const ctl_acl_entry *e = &r->entries[i];
		if (!entry_matches(e, principal, host))
			continue;
		if (e->permission == CTL_ACL_PERM_DENY &&
		    (e->operation == op || e->operation == CTL_ACL_OP_ALL))
			says |= SAYS_DENY;
		else if (e->permission == CTL_ACL_PERM_ALLOW && implies(e->operation, op))
			says |= SAYS_ALLOW;
	}
	return says;
}

bool brk_authorize(const brk_authorizer *a, const char *principal, const char *host,
		   int8_t type, const char *name, int32_t len, int8_t op)
{
	if (!a->enabled)
		return true;
	if (brk_authorizer_is_super(a, principal))
		return true;
	if (type <= CTL_ACL_RES_ANY || type > CTL_ACL_RES_MAX)
		return false;
	bool any = false; /* some pattern applies */
	int says = 0;
	brk_acl_pattern *p = brk_strmap_get(&a->by_name[type][0], name, len);
	if (p) {
		any = true;
		says |= pattern_says(&p->r, principal, host, op);
	}
	if (!(len == 1 && name[0] == '*') &&
	    (p = brk_strmap_get(&a->by_name[type][0], CTL_ACL_WILDCARD, 1))) {
		any = true;
		says |= pattern_says(&p->r, principal, host, op);
	}
	for (int32_t i = 0; i < a->nprefix_lens[type]; i++) {
		int32_t pl = a->prefix_lens[type][i];
		if (pl > len)
			break;
		if ((p = brk_strmap_get(&a->by_name[type][1], name, pl))) {
			any = true;
			says |= pattern_says(&p->r, principal, host, op);
		}
	}
	if (!any)
		return a->allow_if_no_acl;
	if (says & SAYS_DENY)
		return false;
	return (says & SAYS_ALLOW) != 0;
}

bool brk_authorize_any(const brk_authorizer *a, const char *principal, const char *host,
		       int8_t type, int8_t op)
{
	if (!a->enabled || brk_authorizer_is_super(a, principal))
		return true;
	if (type <= CTL_ACL_RES_ANY || type > CTL_ACL_RES_MAX)
		return false;
	const brk_strmap *lit = &a->by_name[type][0], *pre = &a->by_name[type][1];
	if (brk_strmap_count(lit) == 0 && brk_strmap_count(pre) == 0)
		return a->allow_if_no_acl;
	const brk_acl_pattern *w = brk_strmap_get(lit, CTL_ACL_WILDCARD, 1);
	if (w && (pattern_says(&w->r, principal, host, op) & SAYS_DENY))
		return false;
	for (int k = 0; k < 2; k++) {
		const brk_strmap *m = &a->by_name[type][k];
		for (int32_t i = 0; i < brk_strmap_count(m); i++) {
			const brk_acl_pattern *p = brk_strmap_at(m, i);
			if (!(pattern_says(&p->r, principal, host, op) & SAYS_ALLOW))
				continue;
			/* Is this pattern wholly covered by a DENY? */
			int32_t len = m->e[i].len;
			bool denied = false;
			if (k == 0 && pattern_says(&p->r, principal, host, op) & SAYS_DENY)
				denied = true;
			for (int32_t j = 0; !denied && j < brk_strmap_count(pre); j++) {
				const brk_acl_pattern *d = brk_strmap_at(pre, j);
				if (pre->e[j].len <= len &&
				    memcmp(d->r.name, p->r.name, (size_t)pre->e[j].len) == 0 &&
				    pattern_says(&d->r, principal, host, op) & SAYS_DENY)
					denied = true;
			}
			if (!denied)
				return true;
		}
	}
	return false;
}

int32_t brk_authorized_operations(const brk_authorizer *a, const char *principal,
				  const char *host, int8_t type, const char *name, int32_t len,
				  int32_t supported)
{
	if (!a->enabled)
		return supported;
	int32_t ops = 0;
	for (int8_t op = CTL_ACL_OP_READ; op <= CTL_ACL_OP_MAX; op++)
		if ((supported & (1 << op)) && brk_authorize(a, principal, host, type, name, len, op))
			ops |= 1 << op;
	return ops;
}

int brk_authorizer_each(const brk_authorizer *a,
			int (*fn)(const ctl_acl_resource *r, void *arg), void *arg)
{
	for (int t = 0; t <= CTL_ACL_RES_MAX; t++)
		for (int k = 0; k < 2; k++)
			for (int32_t i = 0; i < brk_strmap_count(&a->by_name[t][k]); i++) {
				const brk_acl_pattern *p = brk_strmap_at(&a->by_name[t][k], i);
				int rc = fn(&p->r, arg);
				if (rc)
					return rc;
			}
	return 0;
}
