/*
 * cmd_acls.c - ACLs, as kafka-acls.sh takes them (--add, --list, --remove;
 * --topic, --group, --cluster, --transactional-id,
 * --resource-pattern-type; --allow-principal, --deny-principal,
 * --allow-host, --deny-host, --operation):
 *
 *   --add      CreateAcls: every allow principal x allow host (default *)
 *              x operation (default All) as ALLOW, the same for deny, on
 *              every resource given (pattern LITERAL by default, or
 *              PREFIXED); --producer / --consumer choose the operations
 *              per resource as kafka-acls.sh does;
 *   --list     DescribeAcls: one filter per resource given (pattern
 *              LITERAL by default; ANY and MATCH too), or every ACL
 *              without one; --principal, --host, --operation,
 *              --permission narrow it;
 *   --remove   DeleteAcls: with allow/deny principals, exactly the
 *              bindings --add would make; without, every ACL of each
 *              resource the filter options (as for --list) match.
 *
 * Each binding is one line, "Resource: TYPE:NAME<TAB>PatternType: P<TAB>
 * Principal: U<TAB>Host: H<TAB>Operation: OP<TAB>Permission: ALLOW|DENY"
 * (prefixed "Added: " / "Removed: " by --add / --remove). Requests go to
 * any broker, as Kafka's admin client sends them in ZooKeeper mode.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"

/* Kafka's enums (ResourceType, PatternType, AclOperation,
 * AclPermissionType), with their wire values. */
typedef struct code_name {
	int8_t code;
	const char *name;
} code_name;

static const code_name resource_types[] = {
	{ 1, "ANY" }, { 2, "TOPIC" }, { 3, "GROUP" }, { 4, "CLUSTER" },
	{ 5, "TRANSACTIONAL_ID" }, { 6, "DELEGATION_TOKEN" }, { 7, "USER" }, { 0, NULL },
};
static const code_name pattern_types[] = {
	{ 1, "ANY" }, { 2, "MATCH" }, { 3, "LITERAL" }, { 4, "PREFIXED" }, { 0, NULL },
};
static const code_name operations[] = {
	{ 1, "ANY" }, { 2, "ALL" }, { 3, "READ" }, { 4, "WRITE" }, { 5, "CREATE" }, { 6, "DELETE" },
	{ 7, "ALTER" }, { 8, "DESCRIBE" }, { 9, "CLUSTER_ACTION" }, { 10, "DESCRIBE_CONFIGS" },
	{ 11, "ALTER_CONFIGS" }, { 12, "IDEMPOTENT_WRITE" }, { 13, "CREATE_TOKENS" },
	{ 14, "DESCRIBE_TOKENS" }, { 0, NULL },
};
static const code_name permissions[] = {
	{ 1, "ANY" }, { 2, "DENY" }, { 3, "ALLOW" }, { 0, NULL },
};

#define OP_ALL 2
#define PERM_DENY 2
#define PERM_ALLOW 3
#define PATTERN_ANY 1
#define PATTERN_MATCH 2
#define PATTERN_LITERAL 3
#define PATTERN_PREFIXED 4
#define RESOURCE_ANY 1

static const char *name_of(const code_name *t, int8_t code)
{
	for (; t->name; t++)
		if (t->code == code)
			return t->name;
	return "UNKNOWN";
}

/* A name in any case, with or without underscores ("DescribeConfigs",
 * "describe_configs", "DESCRIBE_CONFIGS"); 0 when unknown. */
static int8_t code_of(const code_name *t, const char *s)
{
	for (; t->name; t++) {
		const char *a = s, *b = t->name;
		for (;;) {
			while (*a == '_' || *a == '-')
				a++;
			while (*b == '_')
				b++;
			if (!*a || !*b || toupper((unsigned char)*a) != *b)
				break;
			a++, b++;
		}
		if (!*a && !*b)
			return t->code;
	}
	return 0;
}

typedef struct resource {
	int8_t type;
	const char *name;
} resource;

#define MAX_ITEMS 64

typedef struct acl_args {
	resource res[MAX_ITEMS];
	int nres;
	const char *allow_principals[MAX_ITEMS], *deny_principals[MAX_ITEMS];
	int nallow, ndeny;
	const char *allow_hosts[MAX_ITEMS], *deny_hosts[MAX_ITEMS];
	int nallow_hosts, ndeny_hosts;
	int8_t ops[MAX_ITEMS];
	int nops;
	int8_t pattern;          /* 0: not given */
	const char *principal;   /* --list / --remove filters */
	const char *host;
	int8_t permission;
	bool producer, consumer; /* kafka-acls.sh's conveniences */
} acl_args;

/* The operations of the bindings on resource type rtype: --producer's
 * (topics: WRITE, DESCRIBE, CREATE), --consumer's (topics: READ,
 * DESCRIBE; groups: READ), else those of --operation (ALL by default).
 * Returns how many, into ops (room for MAX_ITEMS + 3). */
static int ops_for(const acl_args *a, int8_t rtype, int8_t *ops)
{
	int n = 0;
	if (a->producer || a->consumer) {
		if (rtype == 2 && a->producer)
			ops[n++] = 4, ops[n++] = 8, ops[n++] = 5;
		if (rtype == 2 && a->consumer) {
			if (!a->producer)
				ops[n++] = 8;
			ops[n++] = 3;
		}
		if (rtype == 3 && a->consumer)
			ops[n++] = 3;
		return n;
	}
	if (!a->nops) {
		ops[0] = OP_ALL;
		return 1;
	}
	memcpy(ops, a->ops, (size_t)a->nops);
	return a->nops;
}

static void print_binding(const char *prefix, int8_t rtype, proto_str rname, int8_t pattern,
			  proto_str principal, proto_str host, int8_t op, int8_t perm)
{
	printf("%sResource: %s:%.*s\tPatternType: %s\tPrincipal: %.*s\tHost: %.*s\tOperation: %s"
	       "\tPermission: %s\n",
	       prefix, name_of(resource_types, rtype), (int)rname.len, rname.ptr,
	       name_of(pattern_types, pattern), (int)principal.len, principal.ptr, (int)host.len,
	       host.ptr, name_of(operations, op), name_of(permissions, perm));
}

/* The bindings --add makes (and --remove with principals removes). n of
 * them into *out (in the arena). */
static int32_t bindings(adm_ctx *ctx, const acl_args *a, CreateAclsRequest_AclCreation **out)
{
	static const char *const any_host[] = { "*" };
	size_t cap = (size_t)a->nres * (size_t)(a->nallow * (a->nallow_hosts ? a->nallow_hosts : 1) +
						a->ndeny * (a->ndeny_hosts ? a->ndeny_hosts : 1)) *
		     (size_t)(MAX_ITEMS + 3);
	CreateAclsRequest_AclCreation *c = adm_alloc(ctx, sizeof(*c) * (cap ? cap : 1));
	int32_t n = 0;
	for (int r = 0; r < a->nres; r++)
		for (int perm = 0; perm < 2; perm++) {
			int8_t ops[MAX_ITEMS + 3];
			int nops = ops_for(a, a->res[r].type, ops);
			const char *const *ps = perm ? a->deny_principals : a->allow_principals;
			int np = perm ? a->ndeny : a->nallow;
			const char *const *hs = perm ? a->deny_hosts : a->allow_hosts;
			int nh = perm ? a->ndeny_hosts : a->nallow_hosts;
			if (!nh)
				hs = any_host, nh = 1;
			for (int p = 0; p < np; p++)
				for (int h = 0; h < nh; h++)
					for (int o = 0; o < nops; o++) {
						CreateAclsRequest_AclCreation *b = &c[n++];
						CreateAclsRequest_AclCreation_init(b);
						b->resource_type = a->res[r].type;
						b->resource_name = proto_cstr(a->res[r].name);
						b->resource_pattern_type =
						    a->pattern ? a->pattern : PATTERN_LITERAL;
						b->principal = proto_cstr(ps[p]);
						b->host = proto_cstr(hs[h]);
						b->operation = ops[o];
						b->permission_type = perm ? PERM_DENY : PERM_ALLOW;
					}
		}
	*out = c;
	return n;
}

static int add(adm_ctx *ctx, const acl_args *a)
{
	if (a->nres == 0)
		return adm_usage(ctx, "--add needs a resource (--topic, --group, --cluster, "
				      "--transactional-id)");
	if (a->nallow + a->ndeny == 0)
		return adm_usage(ctx, "--add needs --allow-principal or --deny-principal");
	if (a->pattern && a->pattern != PATTERN_LITERAL && a->pattern != PATTERN_PREFIXED)
		return adm_usage(ctx, "--add takes --resource-pattern-type LITERAL or PREFIXED");
	CreateAclsRequest req;
	CreateAclsRequest_init(&req);
	req.creations_count = bindings(ctx, a, &req.creations);
	CreateAclsResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_create_acls, &req, &resp, &v) < 0)
		return 1;
	if (resp.results_count != req.creations_count) {
		adm_error(ctx, "CreateAcls: %d results for %d ACLs", (int)resp.results_count,
			  (int)req.creations_count);
		return 1;
	}
	for (int32_t i = 0; i < req.creations_count; i++) {
		const CreateAclsRequest_AclCreation *b = &req.creations[i];
		if (resp.results[i].error_code != 0) {
			adm_error(ctx, "%s:%.*s %.*s %s %s: %s", name_of(resource_types, b->resource_type),
				  (int)b->resource_name.len, b->resource_name.ptr,
				  (int)b->principal.len, b->principal.ptr,
				  name_of(permissions, b->permission_type),
				  name_of(operations, b->operation),
				  adm_errstr(ctx, resp.results[i].error_code,
					     resp.results[i].error_message));
			continue;
		}
		print_binding("Added: ", b->resource_type, b->resource_name, b->resource_pattern_type,
			      b->principal, b->host, b->operation, b->permission_type);
	}
	return adm_status(ctx);
}

/* The filter of --list / --remove without principals for resource r
 * (NULL: any resource). */
static void filter_of(const acl_args *a, const resource *r, DeleteAclsRequest_DeleteAclsFilter *f)
{
	DeleteAclsRequest_DeleteAclsFilter_init(f);
	f->resource_type_filter = r ? r->type : RESOURCE_ANY;
	f->resource_name_filter = proto_cstr(r ? r->name : NULL);
	f->pattern_type_filter = a->pattern ? a->pattern
					    : r ? PATTERN_LITERAL : PATTERN_ANY;
	f->principal_filter = proto_cstr(a->principal);
	f->host_filter = proto_cstr(a->host);
	f->operation = a->nops ? a->ops[0] : 1;
	f->permission_type = a->permission ? a->permission : 1;
}

static int list(adm_ctx *ctx, const acl_args *a)
{
	if (a->nallow + a->ndeny > 0)
		return adm_usage(ctx, "--list filters with --principal, not --allow/--deny-principal");
	if (a->nops > 1)
		return adm_usage(ctx, "--list takes one --operation");
	int n = a->nres ? a->nres : 1;
	for (int i = 0; i < n; i++) {
		DeleteAclsRequest_DeleteAclsFilter f;
		filter_of(a, a->nres ? &a->res[i] : NULL, &f);
		DescribeAclsRequest req;
		DescribeAclsRequest_init(&req);
		req.resource_type_filter = f.resource_type_filter;
		req.resource_name_filter = f.resource_name_filter;
		req.pattern_type_filter = f.pattern_type_filter;
		req.principal_filter = f.principal_filter;
		req.host_filter = f.host_filter;
		req.operation = f.operation;
		req.permission_type = f.permission_type;
		DescribeAclsResponse resp;
		int16_t v;
		if (adm_any_call(ctx, &adm_api_describe_acls, &req, &resp, &v) < 0)
			return 1;
		if (resp.error_code != 0) {
			adm_error(ctx, "%s", adm_errstr(ctx, resp.error_code, resp.error_message));
			return 1;
		}
		for (int32_t r = 0; r < resp.resources_count; r++) {
			const DescribeAclsResponse_DescribeAclsResource *res = &resp.resources[r];
			for (int32_t k = 0; k < res->acls_count; k++) {
				const DescribeAclsResponse_AclDescription *d = &res->acls[k];
				print_binding("", res->resource_type, res->resource_name,
					      res->pattern_type, d->principal, d->host, d->operation,
					      d->permission_type);
			}
		}
	}
	return 0;
}

static int remove_acls(adm_ctx *ctx, const acl_args *a)
{
	if (a->nres == 0)
		return adm_usage(ctx, "--remove needs a resource (--topic, --group, --cluster, "
				      "--transactional-id)");
	if (a->nops > 1 && a->nallow + a->ndeny == 0)
		return adm_usage(ctx, "--remove without principals takes one --operation");
	DeleteAclsRequest req;
	DeleteAclsRequest_init(&req);
	if (a->nallow + a->ndeny > 0) {
		CreateAclsRequest_AclCreation *b;
		int32_t n = bindings(ctx, a, &b);
		req.filters = adm_alloc(ctx, sizeof(*req.filters) * (size_t)(n ? n : 1));
		for (int32_t i = 0; i < n; i++) {
			DeleteAclsRequest_DeleteAclsFilter *f = &req.filters[i];
			DeleteAclsRequest_DeleteAclsFilter_init(f);
			f->resource_type_filter = b[i].resource_type;
			f->resource_name_filter = b[i].resource_name;
			f->pattern_type_filter = b[i].resource_pattern_type;
			f->principal_filter = b[i].principal;
			f->host_filter = b[i].host;
			f->operation = b[i].operation;
			f->permission_type = b[i].permission_type;
		}
		req.filters_count = n;
	} else {
		req.filters = adm_alloc(ctx, sizeof(*req.filters) * (size_t)a->nres);
		for (int i = 0; i < a->nres; i++)
			filter_of(a, &a->res[i], &req.filters[i]);
		req.filters_count = a->nres;
	}
	DeleteAclsResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_delete_acls, &req, &resp, &v) < 0)
		return 1;
	if (resp.filter_results_count != req.filters_count) {
		adm_error(ctx, "DeleteAcls: %d results for %d filters", (int)resp.filter_results_count,
			  (int)req.filters_count);
		return 1;
	}
	int removed = 0;
	for (int32_t i = 0; i < resp.filter_results_count; i++) {
		const DeleteAclsResponse_DeleteAclsFilterResult *fr = &resp.filter_results[i];
		if (fr->error_code != 0) {
			adm_error(ctx, "%s", adm_errstr(ctx, fr->error_code, fr->error_message));
			continue;
		}
		for (int32_t k = 0; k < fr->matching_acls_count; k++) {
			const DeleteAclsResponse_DeleteAclsMatchingAcl *m = &fr->matching_acls[k];
			if (m->error_code != 0) {
				adm_error(ctx, "%.*s on %s:%.*s: %s", (int)m->principal.len,
					  m->principal.ptr, name_of(resource_types, m->resource_type),
					  (int)m->resource_name.len, m->resource_name.ptr,
					  adm_errstr(ctx, m->error_code, m->error_message));
				continue;
			}
			removed++;
			print_binding("Removed: ", m->resource_type, m->resource_name, m->pattern_type,
				      m->principal, m->host, m->operation, m->permission_type);
		}
	}
	if (removed == 0 && !adm_status(ctx))
		printf("No ACL matched.\n");
	return adm_status(ctx);
}

static int run_acls(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "add", no_argument, NULL, 'A' },
		{ "list", no_argument, NULL, 'L' },
		{ "remove", no_argument, NULL, 'R' },
		{ "topic", required_argument, NULL, 't' },
		{ "group", required_argument, NULL, 'g' },
		{ "cluster", no_argument, NULL, 'c' },
		{ "transactional-id", required_argument, NULL, 'x' },
		{ "resource-pattern-type", required_argument, NULL, 'P' },
		{ "allow-principal", required_argument, NULL, 'a' },
		{ "deny-principal", required_argument, NULL, 'd' },
		{ "allow-host", required_argument, NULL, 'H' },
		{ "deny-host", required_argument, NULL, 'D' },
		{ "operation", required_argument, NULL, 'o' },
		{ "principal", required_argument, NULL, 'p' },
		{ "host", required_argument, NULL, 'h' },
		{ "permission", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'f' },
		{ "producer", no_argument, NULL, 'W' },
		{ "consumer", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, '?' },
		{ 0 },
	};
	acl_args *a = adm_alloc(ctx, sizeof(*a));
	int action = 0;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		bool full = false;
		switch (o) {
		case 'A':
		case 'L':
		case 'R':
			if (action && action != o)
				return adm_usage(ctx, "one of --add, --list, --remove");
			action = o;
			break;
		case 't':
		case 'g':
		case 'c':
		case 'x':
			if (a->nres == MAX_ITEMS) {
				full = true;
				break;
			}
			a->res[a->nres].type = o == 't' ? 2 : o == 'g' ? 3 : o == 'c' ? 4 : 5;
			a->res[a->nres++].name = o == 'c' ? "kafka-cluster" : optarg;
			break;
		case 'P':
			a->pattern = code_of(pattern_types, optarg);
			if (!a->pattern)
				return adm_usage(ctx, "--resource-pattern-type '%s' is not LITERAL, "
						      "PREFIXED, ANY or MATCH", optarg);
			break;
		case 'a':
		case 'd':
		case 'H':
		case 'D': {
			const char **l = o == 'a' ? a->allow_principals : o == 'd' ? a->deny_principals
					 : o == 'H' ? a->allow_hosts : a->deny_hosts;
			int *n = o == 'a' ? &a->nallow : o == 'd' ? &a->ndeny
				 : o == 'H' ? &a->nallow_hosts : &a->ndeny_hosts;
			if (*n == MAX_ITEMS) {
				full = true;
				break;
			}
			if ((o == 'a' || o == 'd') && !strchr(optarg, ':'))
				return adm_usage(ctx, "principal '%s' is not TYPE:NAME (User:alice)",
						 optarg);
			l[(*n)++] = optarg;
			break;
		}
		case 'o': {
			int8_t c = code_of(operations, optarg);
			if (!c || c == 1)
				return adm_usage(ctx, "--operation '%s' is not one of Read, Write, "
						      "Create, Delete, Alter, Describe, ClusterAction, "
						      "DescribeConfigs, AlterConfigs, IdempotentWrite, "
						      "All", optarg);
			if (a->nops == MAX_ITEMS) {
				full = true;
				break;
			}
			a->ops[a->nops++] = c;
			break;
		}
		case 'p':
			a->principal = optarg;
			break;
		case 'h':
			a->host = optarg;
			break;
		case 'm':
			a->permission = code_of(permissions, optarg);
			if (a->permission != PERM_ALLOW && a->permission != PERM_DENY)
				return adm_usage(ctx, "--permission '%s' is not Allow or Deny", optarg);
			break;
		case 'f':
			break;
		case 'W':
			a->producer = true;
			break;
		case 'C':
			a->consumer = true;
			break;
		default:
			return adm_bad_option(ctx, argv);
		}
		if (full)
			return adm_usage(ctx, "more than %d of an option", MAX_ITEMS);
	}
	if (optind != argc)
		return adm_usage(ctx, "unexpected argument '%s'", argv[optind]);
	if ((a->nallow_hosts && !a->nallow) || (a->ndeny_hosts && !a->ndeny))
		return adm_usage(ctx, "--allow-host / --deny-host go with --allow-principal / "
				      "--deny-principal");
	if (a->producer || a->consumer) {
		if (action == 'L')
			return adm_usage(ctx, "--producer and --consumer go with --add or --remove");
		if (a->nops)
			return adm_usage(ctx, "--producer/--consumer choose the operations: no "
					      "--operation");
		if (a->nallow + a->ndeny == 0)
			return adm_usage(ctx, "--producer/--consumer need --allow-principal or "
					      "--deny-principal");
		bool topic = false, group = false;
		for (int i = 0; i < a->nres; i++) {
			topic |= a->res[i].type == 2;
			group |= a->res[i].type == 3;
			if (a->res[i].type != 2 && a->res[i].type != 3)
				return adm_usage(ctx, "--producer/--consumer take --topic and --group "
						      "resources only");
		}
		if (!topic)
			return adm_usage(ctx, "--producer/--consumer need --topic");
		if (a->consumer && !group)
			return adm_usage(ctx, "--consumer needs --group");
		if (group && !a->consumer)
			return adm_usage(ctx, "--group goes with --consumer");
	}
	switch (action) {
	case 'A':
		if (a->principal || a->host || a->permission)
			return adm_usage(ctx, "--add takes --allow/--deny-principal and -host");
		return add(ctx, a);
	case 'L':
		return list(ctx, a);
	case 'R':
		return remove_acls(ctx, a);
	default:
		return adm_usage(ctx, "--add, --list or --remove expected");
	}
}

const adm_command adm_cmd_acls = {
	"acls", "--add|--list|--remove [--topic T] [--allow-principal P]...",
	"add, list or remove ACLs (as kafka-acls.sh)",
	"usage: samsa-admin -b HOST:PORT acls --add RESOURCE... PRINCIPALS [--operation OP]...\n"
	"       samsa-admin -b HOST:PORT acls --list [RESOURCE...] [FILTERS]\n"
	"       samsa-admin -b HOST:PORT acls --remove RESOURCE... [PRINCIPALS | FILTERS]\n"
	"\n"
	"ACLs as kafka-acls.sh names them (CreateAcls, DescribeAcls, DeleteAcls).\n"
	"RESOURCE: --topic T, --group G, --cluster, --transactional-id ID (each may\n"
	"repeat), with --resource-pattern-type LITERAL (default) or PREFIXED; for\n"
	"--list and --remove also ANY or MATCH.\n"
	"PRINCIPALS: --allow-principal User:NAME [--allow-host H]..., --deny-principal\n"
	"User:NAME [--deny-host H]... (host * by default), --operation OP (Read, Write,\n"
	"Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,\n"
	"IdempotentWrite, All; All by default): --add creates each combination,\n"
	"--remove deletes exactly those. --producer stands for Write, Describe and\n"
	"Create on the topics, --consumer for Read and Describe on them and Read on\n"
	"the --group (as in kafka-acls.sh).\n"
	"FILTERS (--list, and --remove without principals): --principal User:NAME,\n"
	"--host H, --operation OP, --permission Allow|Deny; without them everything\n"
	"on the resource matches (--list without a resource lists every ACL).\n"
	"Each ACL is a line 'Resource: TYPE:NAME<TAB>PatternType: P<TAB>Principal: U<TAB>\n"
	"Host: H<TAB>Operation: OP<TAB>Permission: ALLOW|DENY'. A broker without an\n"
	"authorizer answers SECURITY_DISABLED. --force is accepted (nothing asks).\n",
	run_acls,
};
