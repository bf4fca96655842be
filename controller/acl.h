/*
 * acl.h - access control lists as Kafka keeps them: the codes of resource
 * types, pattern types, operations and permissions (Kafka's
 * org.apache.kafka.common.acl and .resource enums, the values the
 * CreateAcls/DescribeAcls/DeleteAcls messages carry), their names, and the
 * codecs of the ZooKeeper data Kafka's ZooKeeper-mode AclAuthorizer writes
 * (ZkData.scala, ZkAclStore):
 *
 *   /kafka-acl/<ResourceType>/<name>                      LITERAL resources
 *   /kafka-acl-extended/prefixed/<ResourceType>/<name>    PREFIXED resources
 *       {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
 *                             "operation":"Read","host":"*"}, ...]}
 *   /kafka-acl-changes/acl_changes_<seq>          "Topic:foo" (a literal
 *                                                  resource changed)
 *   /kafka-acl-extended-changes/acl_changes_<seq>
 *       {"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}
 *
 * <ResourceType> is Kafka's SecurityUtils.resourceTypeName ("Topic",
 * "Group", "Cluster", "TransactionalId", "DelegationToken", "User");
 * operations and permissions are written the same way ("Read",
 * "DescribeConfigs", "Allow"). Names are read case-insensitively and with
 * or without the underscores, as Kafka's fromString does.
 *
 * The controller stores ACLs per resource (ctl_acl_resource): the whole
 * list of entries of one (type, pattern type, name) is one record, as it is
 * one znode in Kafka.
 */
#ifndef SAMSA_CONTROLLER_ACL_H
#define SAMSA_CONTROLLER_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ResourceType codes (Kafka's wire values). */
enum {
	CTL_ACL_RES_UNKNOWN = 0,
	CTL_ACL_RES_ANY = 1,            /* filters only */
	CTL_ACL_RES_TOPIC = 2,
	CTL_ACL_RES_GROUP = 3,
	CTL_ACL_RES_CLUSTER = 4,
	CTL_ACL_RES_TRANSACTIONAL_ID = 5,
	CTL_ACL_RES_DELEGATION_TOKEN = 6,
	CTL_ACL_RES_USER = 7,
};
#define CTL_ACL_RES_MAX 7

/* PatternType codes. */
enum {
	CTL_ACL_PAT_UNKNOWN = 0,
	CTL_ACL_PAT_ANY = 1,   /* filters only */
	CTL_ACL_PAT_MATCH = 2, /* filters only: what would apply to the name */
	CTL_ACL_PAT_LITERAL = 3,
	CTL_ACL_PAT_PREFIXED = 4,
};

/* AclOperation codes. */
enum {
	CTL_ACL_OP_UNKNOWN = 0,
	CTL_ACL_OP_ANY = 1, /* filters only */
	CTL_ACL_OP_ALL = 2,
	CTL_ACL_OP_READ = 3,
	CTL_ACL_OP_WRITE = 4,
	CTL_ACL_OP_CREATE = 5,
	CTL_ACL_OP_DELETE = 6,
	CTL_ACL_OP_ALTER = 7,
	CTL_ACL_OP_DESCRIBE = 8,
	CTL_ACL_OP_CLUSTER_ACTION = 9,
	CTL_ACL_OP_DESCRIBE_CONFIGS = 10,
	CTL_ACL_OP_ALTER_CONFIGS = 11,
	CTL_ACL_OP_IDEMPOTENT_WRITE = 12,
	CTL_ACL_OP_CREATE_TOKENS = 13,
	CTL_ACL_OP_DESCRIBE_TOKENS = 14,
};
#define CTL_ACL_OP_MAX 14

/* AclPermissionType codes. */
enum {
	CTL_ACL_PERM_UNKNOWN = 0,
	CTL_ACL_PERM_ANY = 1, /* filters only */
	CTL_ACL_PERM_DENY = 2,
	CTL_ACL_PERM_ALLOW = 3,
};

/* The name of the cluster resource (Kafka's Resource.CLUSTER_NAME). */
#define CTL_ACL_CLUSTER_NAME "kafka-cluster"
/* The wildcard resource name and principal, and the wildcard host. */
#define CTL_ACL_WILDCARD "*"
#define CTL_ACL_WILDCARD_PRINCIPAL "User:*"

/* Longest principal and host strings an entry holds (bytes, with the NUL). */
#define CTL_ACL_PRINCIPAL_MAX 256
#define CTL_ACL_HOST_MAX 256

typedef struct ctl_acl_entry {
	char principal[CTL_ACL_PRINCIPAL_MAX]; /* "User:alice", "User:*" */
	char host[CTL_ACL_HOST_MAX];           /* an IP address or "*" */
	int8_t operation;                      /* CTL_ACL_OP_*, not ANY/UNKNOWN */
	int8_t permission;                     /* CTL_ACL_PERM_ALLOW or DENY */
} ctl_acl_entry;

/* One resource pattern and all its entries. */
typedef struct ctl_acl_resource {
	int8_t type;            /* CTL_ACL_RES_TOPIC ... USER */
	int8_t pattern;         /* CTL_ACL_PAT_LITERAL or PREFIXED */
	char *name;             /* malloc'd */
	ctl_acl_entry *entries; /* malloc'd, n of them (NULL when 0) */
	int32_t n;
} ctl_acl_resource;

/* Free what r holds (not r); r is left empty. */
void ctl_acl_resource_clear(ctl_acl_resource *r);
/* Deep copy of src into *dst: 0 or -ENOMEM. */
int ctl_acl_resource_copy(ctl_acl_resource *dst, const ctl_acl_resource *src);

/* Kafka's names ("Topic", "Prefixed", "DescribeConfigs", "Allow"), or NULL
 * for a code without one. */
const char *ctl_acl_resource_type_name(int8_t type);
const char *ctl_acl_pattern_name(int8_t pattern);
const char *ctl_acl_operation_name(int8_t op);
const char *ctl_acl_permission_name(int8_t perm);
/* The upper-case enum names ("TOPIC", "PREFIXED", "DESCRIBE_CONFIGS"). */
const char *ctl_acl_resource_type_enum(int8_t type);
const char *ctl_acl_pattern_enum(int8_t pattern);

/* Parse a name in any of the forms above (case-insensitive, underscores
 * optional): the code, or CTL_ACL_*_UNKNOWN (0). n bytes at s. */
int8_t ctl_acl_resource_type_parse(const char *s, size_t n);
int8_t ctl_acl_pattern_parse(const char *s, size_t n);
int8_t ctl_acl_operation_parse(const char *s, size_t n);
int8_t ctl_acl_permission_parse(const char *s, size_t n);

/* Whether two entries are the same ACL (all four fields equal). */
bool ctl_acl_entry_eq(const ctl_acl_entry *a, const ctl_acl_entry *b);

/*
 * The controller's ACLs: every resource pattern with entries (linear
 * lookups: the controller thread only, never on a request path).
 */
typedef struct ctl_acl_store {
	ctl_acl_resource *v;
	int32_t n, cap;
} ctl_acl_store;

void ctl_acl_store_free(ctl_acl_store *s);
/* The pattern (type, pattern type, name), or NULL. */
ctl_acl_resource *ctl_acl_store_find(const ctl_acl_store *s, int8_t type, int8_t pattern,
				     const char *name);
/* Set the entries of r's pattern to a copy of r's (none: the pattern goes).
 * 0 or -ENOMEM (nothing changed). */
int ctl_acl_store_put(ctl_acl_store *s, const ctl_acl_resource *r);

/*
 * Kafka's update of one pattern's ACLs: (cur + add) - remove, without
 * duplicates, in cur's order then add's. *out malloc'd (NULL when empty),
 * *changed whether it differs from cur. 0 or -ENOMEM.
 */
int ctl_acl_merge(const ctl_acl_entry *cur, int32_t ncur, const ctl_acl_entry *add, int32_t nadd,
		  const ctl_acl_entry *remove, int32_t nremove, ctl_acl_entry **out,
		  int32_t *nout, bool *changed);

/*
 * The znode data of a resource's ACLs: {"version":1,"acls":[...]}.
 * Encode: 0 with *out malloc'd (NUL-terminated, *len without it), or
 * -ENOMEM/-EINVAL. Decode len bytes into r->entries / r->n (r's type,
 * pattern and name untouched; on error r's entries are unchanged): 0,
 * -EINVAL (not Kafka's format: unknown version, a field missing or of the
 * wrong type, an unknown operation or permission, ANY/UNKNOWN, a string
 * longer than an entry holds), -E2BIG, -ENOMEM. An empty text is no ACLs.
 */
int ctl_acl_json_encode(const ctl_acl_entry *e, int32_t n, char **out, size_t *len);
int ctl_acl_json_decode(const char *text, size_t len, ctl_acl_entry **out, int32_t *nout);

/*
 * The change notification of a resource (the data of an acl_changes_
 * node): "Topic:foo" for a LITERAL one, the extended JSON for a PREFIXED
 * one. Encode: 0 and *out malloc'd, or -ENOMEM/-EINVAL. Decode: 0 with
 * *type and *name (malloc'd) set, or -EINVAL/-ENOMEM; extended says which
 * of the two forms (the node's parent) len bytes are, and *pattern is
 * LITERAL for the plain form.
 */
int ctl_acl_change_encode(int8_t type, int8_t pattern, const char *name, char **out,
			  size_t *len);
int ctl_acl_change_decode(bool extended, const char *text, size_t len, int8_t *type,
			  int8_t *pattern, char **name);

#endif
