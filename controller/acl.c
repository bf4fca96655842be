/*
 * acl.c - ACL codes, names and Kafka's ZooKeeper encodings (acl.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/acl.h"
#include "controller/json.h"

/* ---- names ---- */

/* Indexed by code: Kafka's display name and enum name. */
static const char *const res_names[][2] = {
	[CTL_ACL_RES_TOPIC] = { "Topic", "TOPIC" },
	[CTL_ACL_RES_GROUP] = { "Group", "GROUP" },
	[CTL_ACL_RES_CLUSTER] = { "Cluster", "CLUSTER" },
	[CTL_ACL_RES_TRANSACTIONAL_ID] = { "TransactionalId", "TRANSACTIONAL_ID" },
	[CTL_ACL_RES_DELEGATION_TOKEN] = { "DelegationToken", "DELEGATION_TOKEN" },
	[CTL_ACL_RES_USER] = { "User", "USER" },
};
static const char *const pat_names[][2] = {
	[CTL_ACL_PAT_LITERAL] = { "Literal", "LITERAL" },
	[CTL_ACL_PAT_PREFIXED] = { "Prefixed", "PREFIXED" },
};
static const char *const op_names[] = {
	[CTL_ACL_OP_ALL] = "All",
	[CTL_ACL_OP_READ] = "Read",
	[CTL_ACL_OP_WRITE] = "Write",
	[CTL_ACL_OP_CREATE] = "Create",
	[CTL_ACL_OP_DELETE] = "Delete",
	[CTL_ACL_OP_ALTER] = "Alter",
	[CTL_ACL_OP_DESCRIBE] = "Describe",
	[CTL_ACL_OP_CLUSTER_ACTION] = "ClusterAction",
	[CTL_ACL_OP_DESCRIBE_CONFIGS] = "DescribeConfigs",
	[CTL_ACL_OP_ALTER_CONFIGS] = "AlterConfigs",
	[CTL_ACL_OP_IDEMPOTENT_WRITE] = "IdempotentWrite",
	[CTL_ACL_OP_CREATE_TOKENS] = "CreateTokens",
	[CTL_ACL_OP_DESCRIBE_TOKENS] = "DescribeTokens",
};
static const char *const perm_names[] = {
	[CTL_ACL_PERM_DENY] = "Deny",
	[CTL_ACL_PERM_ALLOW] = "Allow",
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *ctl_acl_resource_type_name(int8_t t)
{
	return t >= 0 && t < COUNT(res_names) ? res_names[t][0] : NULL;
}
const char *ctl_acl_resource_type_enum(int8_t t)
{
	return t >= 0 && t < COUNT(res_names) ? res_names[t][1] : NULL;
}
const char *ctl_acl_pattern_name(int8_t p)
{
	return p >= 0 && p < COUNT(pat_names) ? pat_names[p][0] : NULL;
}
const char *ctl_acl_pattern_enum(int8_t p)
{
	return p >= 0 && p < COUNT(pat_names) ? pat_names[p][1] : NULL;
}
const char *ctl_acl_operation_name(int8_t op)
{
	return op >= 0 && op < COUNT(op_names) ? op_names[op] : NULL;
}
const char *ctl_acl_permission_name(int8_t p)
{
	return p >= 0 && p < COUNT(perm_names) ? perm_names[p] : NULL;
}

/* s (n bytes) equals name, ignoring case and underscores on both sides. */
static bool loose_eq(const char *s, size_t n, const char *name)
{
	size_t i = 0;
	for (;;) {
		while (i < n && s[i] == '_')
			i++;
		while (*name == '_')
			name++;
		if (i == n || !*name)
			return i == n && !*name;
		char a = s[i], b = *name;
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
		i++;
		name++;
	}
}

static int8_t parse_in(const char *s, size_t n, const char *const *names, int count,
		       size_t stride)
{
	for (int i = 0; i < count; i++) {
		const char *name = *(const char *const *)((const char *)names + (size_t)i * stride);
		if (name && loose_eq(s, n, name))
			return (int8_t)i;
	}
	return 0;
}

int8_t ctl_acl_resource_type_parse(const char *s, size_t n)
{
	return parse_in(s, n, &res_names[0][0], COUNT(res_names), sizeof(res_names[0]));
}
int8_t ctl_acl_pattern_parse(const char *s, size_t n)
{
	return parse_in(s, n, &pat_names[0][0], COUNT(pat_names), sizeof(pat_names[0]));
}
int8_t ctl_acl_operation_parse(const char *s, size_t n)
{
	return parse_in(s, n, op_names, COUNT(op_names), sizeof(op_names[0]));
}
int8_t ctl_acl_permission_parse(const char *s, size_t n)
{
	return parse_in(s, n, perm_names, COUNT(perm_names), sizeof(perm_names[0]));
}

/* ---- resources ---- */

void ctl_acl_resource_clear(ctl_acl_resource *r)
{
	free(r->name);
	free(r->entries);
	r->name = NULL;
	r->entries = NULL;
	r->n = 0;
}

int ctl_acl_resource_copy(ctl_acl_resource *dst, const ctl_acl_resource *src)
{
	*dst = *src;
	dst->name = strdup(src->name ? src->name : "");
	dst->entries = NULL;
	if (src->n > 0) {
		dst->entries = malloc((size_t)src->n * sizeof(*dst->entries));
		if (dst->entries)
			memcpy(dst->entries, src->entries, (size_t)src->n * sizeof(*dst->entries));
	}
	if (!dst->name || (src->n > 0 && !dst->entries)) {
		ctl_acl_resource_clear(dst);
		return -ENOMEM;
	}
	return 0;
}

bool ctl_acl_entry_eq(const ctl_acl_entry *a, const ctl_acl_entry *b)
{
	return a->operation == b->operation && a->permission == b->permission &&
	       strcmp(a->principal, b->principal) == 0 && strcmp(a->host, b->host) == 0;
}

/* ---- the store ---- */

void ctl_acl_store_free(ctl_acl_store *s)
{
	for (int32_t i = 0; i < s->n; i++)
		ctl_acl_resource_clear(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

ctl_acl_resource *ctl_acl_store_find(const ctl_acl_store *s, int8_t type, int8_t pattern,
				     const char *name)
{
	for (int32_t i = 0; i < s->n; i++)
		if (s->v[i].type == type && s->v[i].pattern == pattern &&
		    strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

int ctl_acl_store_put(ctl_acl_store *s, const ctl_acl_resource *r)
{
	ctl_acl_resource *cur = ctl_acl_store_find(s, r->type, r->pattern, r->name);
	if (r->n == 0) {
		if (cur) {
			ctl_acl_resource_clear(cur);
			*cur = s->v[--s->n];
		}
		return 0;
	}
	ctl_acl_resource copy;
	if (ctl_acl_resource_copy(&copy, r) != 0)
		return -ENOMEM;
	if (cur) {
		ctl_acl_resource_clear(cur);
		*cur = copy;
		return 0;
	}
	if (s->n == s->cap) {
		int32_t cap = s->cap ? 2 * s->cap : 16;
		ctl_acl_resource *v = realloc(s->v, (size_t)cap * sizeof(*v));
		if (!v) {
			ctl_acl_resource_clear(&copy);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = copy;
	return 0;
}

static bool contains(const ctl_acl_entry *v, int32_t n, const ctl_acl_entry *e)
{
	for (int32_t i = 0; i < n; i++)
		if (ctl_acl_entry_eq(&v[i], e))
			return true;
	return false;
}

int ctl_acl_merge(const ctl_acl_entry *cur, int32_t ncur, const ctl_acl_entry *add, int32_t nadd,
		  const ctl_acl_entry *remove, int32_t nremove, ctl_acl_entry **out,
		  int32_t *nout, bool *changed)
{
	*out = NULL;
	*nout = 0;
	*changed = false;
	int32_t cap = ncur + nadd;
	ctl_acl_entry *v = cap ? malloc((size_t)cap * sizeof(*v)) : NULL;
	if (cap && !v)
		return -ENOMEM;
	int32_t n = 0;
	for (int32_t i = 0; i < ncur; i++) {
		if (contains(remove, nremove, &cur[i]) || contains(v, n, &cur[i]))
			*changed = true;
		else
			v[n++] = cur[i];
	}
	for (int32_t i = 0; i < nadd; i++) {
		if (contains(remove, nremove, &add[i]) || contains(v, n, &add[i]))
			continue;
		v[n++] = add[i];
		*changed = true;
	}
	if (n == 0) {
		free(v);
		v = NULL;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- the resource znode ---- */

int ctl_acl_json_encode(const ctl_acl_entry *e, int32_t n, char **out, size_t *len)
{
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "acls");
	ctl_json_w_arr_begin(&w);
	for (int32_t i = 0; i < n; i++) {
		const char *op = ctl_acl_operation_name(e[i].operation);
		const char *perm = ctl_acl_permission_name(e[i].permission);
		if (!op || !perm) {
			ctl_json_w_discard(&w);
			return -EINVAL;
		}
		ctl_json_w_obj_begin(&w);
		ctl_json_w_key(&w, "principal");
		ctl_json_w_str(&w, e[i].principal);
		ctl_json_w_key(&w, "permissionType");
		ctl_json_w_str(&w, perm);
		ctl_json_w_key(&w, "operation");
		ctl_json_w_str(&w, op);
		ctl_json_w_key(&w, "host");
		ctl_json_w_str(&w, e[i].host);
		ctl_json_w_obj_end(&w);
	}
	ctl_json_w_arr_end(&w);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

/* The string member key of object obj copied into dst (size bytes with the
 * NUL): 0 or -EINVAL. */
static int copy_member(const ctl_json *d, int obj, const char *key, proto_arena *a, char *dst,
		       size_t size)
{
	int t = ctl_json_get(d, obj, key);
	const char *s;
	size_t n;
	if (t < 0 || ctl_json_str(d, t, a, &s, &n) != 0 || n >= size)
		return -EINVAL;
	memcpy(dst, s, n + 1);
	return 0;
}

/* The string member key of obj decoded to a code by parse (0: -EINVAL). */
static int code_member(const ctl_json *d, int obj, const char *key, proto_arena *a,
		       int8_t (*parse)(const char *, size_t), int8_t *out)
{
	int t = ctl_json_get(d, obj, key);
	const char *s;
	size_t n;
	if (t < 0 || ctl_json_str(d, t, a, &s, &n) != 0)
		return -EINVAL;
	*out = parse(s, n);
	return *out > 1 ? 0 : -EINVAL; /* neither UNKNOWN nor ANY */
}

int ctl_acl_json_decode(const char *text, size_t len, ctl_acl_entry **out, int32_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (len == 0)
		return 0;
	proto_arena a;
	proto_arena_init(&a, 4 * CTL_JSON_MAX_SIZE);
	ctl_json d;
	ctl_acl_entry *e = NULL;
	int rc = ctl_json_parse(&d, text, len, &a);
	if (rc != 0)
		goto done;
	rc = -EINVAL;
	int64_t version;
	int tv = ctl_json_get(&d, 0, "version"), ta = ctl_json_get(&d, 0, "acls");
	if (tv < 0 || ctl_json_int(&d, tv, 1, 1, &version) != 0 || ta < 0 ||
	    ctl_json_type_of(&d, ta) != CTL_JSON_ARRAY)
		goto done;
	uint32_t n = d.tok[ta].count;
	if (n > 0 && !(e = calloc(n, sizeof(*e)))) {
		rc = -ENOMEM;
		goto done;
	}
	int t = ctl_json_first(&d, ta);
	for (uint32_t i = 0; i < n; i++, t = ctl_json_next(&d, t)) {
		if (ctl_json_type_of(&d, t) != CTL_JSON_OBJECT ||
		    copy_member(&d, t, "principal", &a, e[i].principal, sizeof(e[i].principal)) ||
		    copy_member(&d, t, "host", &a, e[i].host, sizeof(e[i].host)) ||
		    code_member(&d, t, "operation", &a, ctl_acl_operation_parse, &e[i].operation) ||
		    code_member(&d, t, "permissionType", &a, ctl_acl_permission_parse,
				&e[i].permission))
			goto done;
	}
	*out = e;
	*nout = (int32_t)n;
	e = NULL;
	rc = 0;
done:
	free(e);
	proto_arena_free(&a);
	return rc;
}

/* ---- change notifications ---- */

int ctl_acl_change_encode(int8_t type, int8_t pattern, const char *name, char **out, size_t *len)
{
	*out = NULL;
	if (pattern == CTL_ACL_PAT_LITERAL) {
		const char *tn = ctl_acl_resource_type_name(type);
		if (!tn)
			return -EINVAL;
		size_t n = strlen(tn) + 1 + strlen(name);
		char *s = malloc(n + 1);
		if (!s)
			return -ENOMEM;
		snprintf(s, n + 1, "%s:%s", tn, name);
		*out = s;
		*len = n;
		return 0;
	}
	const char *te = ctl_acl_resource_type_enum(type), *pe = ctl_acl_pattern_enum(pattern);
	if (!te || !pe)
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "resourceType");
	ctl_json_w_str(&w, te);
	ctl_json_w_key(&w, "name");
	ctl_json_w_str(&w, name);
	ctl_json_w_key(&w, "patternType");
	ctl_json_w_str(&w, pe);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_acl_change_decode(bool extended, const char *text, size_t len, int8_t *type,
			  int8_t *pattern, char **name)
{
	*name = NULL;
	if (!extended) {
		const char *colon = memchr(text, ':', len);
		if (!colon)
			return -EINVAL;
		*type = ctl_acl_resource_type_parse(text, (size_t)(colon - text));
		*pattern = CTL_ACL_PAT_LITERAL;
		size_t n = len - (size_t)(colon - text) - 1;
		if (*type <= CTL_ACL_RES_ANY || memchr(colon + 1, '\0', n))
			return -EINVAL;
		if (!(*name = malloc(n + 1)))
			return -ENOMEM;
		memcpy(*name, colon + 1, n);
		(*name)[n] = '\0';
		return 0;
	}
	proto_arena a;
	proto_arena_init(&a, 4 * CTL_JSON_MAX_SIZE);
	ctl_json d;
	int rc = ctl_json_parse(&d, text, len, &a);
	if (rc == 0) {
		int64_t version;
		int tv = ctl_json_get(&d, 0, "version"), tn = ctl_json_get(&d, 0, "name");
		const char *s;
		rc = -EINVAL;
		if (tv >= 0 && ctl_json_int(&d, tv, 1, 1, &version) == 0 &&
		    code_member(&d, 0, "resourceType", &a, ctl_acl_resource_type_parse, type) == 0 &&
		    code_member(&d, 0, "patternType", &a, ctl_acl_pattern_parse, pattern) == 0 &&
		    *pattern >= CTL_ACL_PAT_LITERAL && tn >= 0 &&
		    ctl_json_str(&d, tn, &a, &s, NULL) == 0)
			rc = (*name = strdup(s)) ? 0 : -ENOMEM;
	}
	proto_arena_free(&a);
	return rc;
}
