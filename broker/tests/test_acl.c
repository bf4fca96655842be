/*
 * test_acl.c - the authorizer's rules (acl/authorizer.h): disabled allows
 * everything; the class names; super.users; allow.everyone.if.no.acl.found
 * with and without ACLs on the resource; LITERAL, the wildcard name "*",
 * PREFIXED patterns of several lengths; the wildcard principal and host;
 * DENY wins over ALLOW; the implications of DESCRIBE and DESCRIBE_CONFIGS
 * (and that DENY of READ does not deny DESCRIBE); ALL; replacing and
 * removing a pattern; authorized operations; authorizeByResourceType.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/acl/authorizer.h"

static ctl_acl_entry E(const char *principal, const char *host, int8_t op, int8_t perm)
{
	ctl_acl_entry e;
	memset(&e, 0, sizeof(e));
	strcpy(e.principal, principal);
	strcpy(e.host, host);
	e.operation = op;
	e.permission = perm;
	return e;
}

static void set(brk_authorizer *a, int8_t type, int8_t pattern, const char *name,
		ctl_acl_entry *e, int32_t n)
{
	ctl_acl_resource r = { .type = type, .pattern = pattern, .name = (char *)name,
			       .entries = e, .n = n };
	ck_assert_int_eq(brk_authorizer_set(a, &r), 0);
}

static bool can(const brk_authorizer *a, const char *p, const char *host, int8_t type,
		const char *name, int8_t op)
{
	return brk_authorize(a, p, host, type, name, (int32_t)strlen(name), op);
}

#define ALICE "User:alice"
#define BOB "User:bob"
#define T CTL_ACL_RES_TOPIC
#define G CTL_ACL_RES_GROUP
#define LIT CTL_ACL_PAT_LITERAL
#define PRE CTL_ACL_PAT_PREFIXED
#define ALLOW CTL_ACL_PERM_ALLOW
#define DENY CTL_ACL_PERM_DENY

START_TEST(test_disabled_and_config)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, NULL, "User:x", false), 0);
	ck_assert(!a.enabled);
	ck_assert(can(&a, ALICE, "1.2.3.4", T, "t", CTL_ACL_OP_WRITE));
	ck_assert(!brk_authorizer_is_super(&a, "User:x"));
	ck_assert_int_eq(brk_authorized_operations(&a, ALICE, "h", T, "t", 1, 0x18), 0x18);
	brk_authorizer_free(&a);

	ck_assert_int_eq(brk_authorizer_init(&a, "com.example.Other", NULL, false), -EINVAL);
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_KRAFT, "alice", false),
			 -EINVAL);
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK,
					     " User:admin ; User:broker;;", false), 0);
	ck_assert(a.enabled);
	ck_assert_int_eq(a.nsuper, 2);
	ck_assert(brk_authorizer_is_super(&a, "User:admin"));
	ck_assert(brk_authorizer_is_super(&a, "User:broker"));
	ck_assert(!brk_authorizer_is_super(&a, "User:admi"));
	/* No ACLs, allow.everyone false: refused, super users allowed. */
	ck_assert(!can(&a, ALICE, "h", T, "t", CTL_ACL_OP_READ));
	ck_assert(can(&a, "User:admin", "h", T, "t", CTL_ACL_OP_READ));
	brk_authorizer_free(&a);
}
END_TEST

START_TEST(test_allow_everyone_if_no_acl)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, NULL, true), 0);
	ck_assert(can(&a, ALICE, "h", T, "t", CTL_ACL_OP_READ));
	ck_assert(brk_authorize_any(&a, ALICE, "h", T, CTL_ACL_OP_WRITE));
	/* An ACL on t (for bob) makes t closed to alice; u stays open. */
	ctl_acl_entry e[] = { E(BOB, "*", CTL_ACL_OP_READ, ALLOW) };
	set(&a, T, LIT, "t", e, 1);
	ck_assert(!can(&a, ALICE, "h", T, "t", CTL_ACL_OP_READ));
	ck_assert(can(&a, BOB, "h", T, "t", CTL_ACL_OP_READ));
	ck_assert(can(&a, ALICE, "h", T, "u", CTL_ACL_OP_READ));
	/* Other resource types are unaffected. */
	ck_assert(can(&a, ALICE, "h", G, "t", CTL_ACL_OP_READ));
	brk_authorizer_free(&a);
}
END_TEST

START_TEST(test_patterns)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, NULL, false), 0);
	ctl_acl_entry lit[] = { E(ALICE, "*", CTL_ACL_OP_WRITE, ALLOW) };
	ctl_acl_entry star[] = { E(BOB, "*", CTL_ACL_OP_READ, ALLOW) };
	ctl_acl_entry pre1[] = { E("User:carol", "*", CTL_ACL_OP_READ, ALLOW) };
	ctl_acl_entry pre2[] = { E("User:dave", "10.0.0.1", CTL_ACL_OP_ALL, ALLOW) };
	set(&a, T, LIT, "orders", lit, 1);
	set(&a, T, LIT, "*", star, 1);
	set(&a, T, PRE, "ord", pre1, 1);
	set(&a, T, PRE, "orders-eu", pre2, 1);

	ck_assert(can(&a, ALICE, "h", T, "orders", CTL_ACL_OP_WRITE));
	ck_assert(!can(&a, ALICE, "h", T, "orders2", CTL_ACL_OP_WRITE)); /* literal is exact */
	ck_assert(!can(&a, ALICE, "h", T, "orders", CTL_ACL_OP_READ));
	ck_assert(can(&a, BOB, "h", T, "anything", CTL_ACL_OP_READ));     /* wildcard name */
	ck_assert(can(&a, BOB, "h", T, "*", CTL_ACL_OP_READ));
	ck_assert(can(&a, "User:carol", "h", T, "ord", CTL_ACL_OP_READ)); /* prefix = name */
	ck_assert(can(&a, "User:carol", "h", T, "orders-eu-1", CTL_ACL_OP_READ));
	ck_assert(!can(&a, "User:carol", "h", T, "or", CTL_ACL_OP_READ));
	ck_assert(!can(&a, "User:carol", "h", T, "xord", CTL_ACL_OP_READ));
	ck_assert(can(&a, "User:dave", "10.0.0.1", T, "orders-eu-1", CTL_ACL_OP_DELETE));
	ck_assert(!can(&a, "User:dave", "10.0.0.2", T, "orders-eu-1", CTL_ACL_OP_DELETE));
	ck_assert(!can(&a, "User:dave", "10.0.0.1", T, "orders-us", CTL_ACL_OP_DELETE));
	/* The wildcard literal applies to every name, so no topic has "no ACLs". */
	ck_assert(!can(&a, "User:eve", "h", T, "fresh", CTL_ACL_OP_READ));
	/* Groups have none of these. */
	ck_assert(!can(&a, BOB, "h", G, "orders", CTL_ACL_OP_READ));

	ck_assert_ptr_nonnull(brk_authorizer_get(&a, T, PRE, "ord", 3));
	ck_assert_ptr_null(brk_authorizer_get(&a, T, LIT, "ord", 3));
	/* Removing a prefixed pattern. */
	set(&a, T, PRE, "ord", NULL, 0);
	ck_assert(!can(&a, "User:carol", "h", T, "orders-eu-1", CTL_ACL_OP_READ));
	ck_assert_int_eq(a.nprefix_lens[T], 1);
	/* Replacing a literal one. */
	ctl_acl_entry lit2[] = { E(ALICE, "*", CTL_ACL_OP_READ, ALLOW) };
	set(&a, T, LIT, "orders", lit2, 1);
	ck_assert(!can(&a, ALICE, "h", T, "orders", CTL_ACL_OP_WRITE));
	ck_assert(can(&a, ALICE, "h", T, "orders", CTL_ACL_OP_READ));
	brk_authorizer_free(&a);
}
END_TEST

START_TEST(test_deny_wildcards_implications)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, NULL, false), 0);
	ctl_acl_entry e[] = {
		E("User:*", "*", CTL_ACL_OP_READ, ALLOW),
		E(BOB, "*", CTL_ACL_OP_READ, DENY),
		E(ALICE, "10.0.0.9", CTL_ACL_OP_ALL, DENY),
		E(ALICE, "*", CTL_ACL_OP_ALTER_CONFIGS, ALLOW),
	};
	set(&a, T, LIT, "t", e, 4);
	ck_assert(can(&a, ALICE, "1.1.1.1", T, "t", CTL_ACL_OP_READ));
	ck_assert(can(&a, "User:zed", "1.1.1.1", T, "t", CTL_ACL_OP_READ));
	ck_assert(!can(&a, BOB, "1.1.1.1", T, "t", CTL_ACL_OP_READ));     /* DENY wins */
	ck_assert(can(&a, BOB, "1.1.1.1", T, "t", CTL_ACL_OP_DESCRIBE));  /* READ implies */
	ck_assert(!can(&a, ALICE, "10.0.0.9", T, "t", CTL_ACL_OP_READ));  /* DENY ALL, host */
	ck_assert(!can(&a, ALICE, "10.0.0.9", T, "t", CTL_ACL_OP_DESCRIBE));
	ck_assert(can(&a, ALICE, "1.1.1.1", T, "t", CTL_ACL_OP_DESCRIBE_CONFIGS));
	ck_assert(!can(&a, ALICE, "1.1.1.1", T, "t", CTL_ACL_OP_WRITE));
	ck_assert(!can(&a, "User:zed", "1.1.1.1", T, "t", CTL_ACL_OP_DESCRIBE_CONFIGS));
	/* "User:*" matches any principal, as Kafka's wildcard principal does. */
	ck_assert(can(&a, "Group:x", "1.1.1.1", T, "t", CTL_ACL_OP_READ));

	int32_t topic_ops = (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) |
			    (1 << 10) | (1 << 11);
	ck_assert_int_eq(brk_authorized_operations(&a, ALICE, "1.1.1.1", T, "t", 1, topic_ops),
			 (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11));
	ck_assert_int_eq(brk_authorized_operations(&a, ALICE, "10.0.0.9", T, "t", 1, topic_ops),
			 0);
	brk_authorizer_free(&a);
}
END_TEST

START_TEST(test_by_resource_type)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, "User:admin", false), 0);
	ck_assert(!brk_authorize_any(&a, ALICE, "h", T, CTL_ACL_OP_WRITE));
	ck_assert(brk_authorize_any(&a, "User:admin", "h", T, CTL_ACL_OP_WRITE));
	ctl_acl_entry w[] = { E(ALICE, "*", CTL_ACL_OP_WRITE, ALLOW) };
	set(&a, T, PRE, "app-", w, 1);
	ck_assert(brk_authorize_any(&a, ALICE, "h", T, CTL_ACL_OP_WRITE));
	ck_assert(!brk_authorize_any(&a, BOB, "h", T, CTL_ACL_OP_WRITE));
	/* A DENY on a shorter prefix covers it. */
	ctl_acl_entry d[] = { E(ALICE, "*", CTL_ACL_OP_WRITE, DENY) };
	set(&a, T, PRE, "app", d, 1);
	ck_assert(!brk_authorize_any(&a, ALICE, "h", T, CTL_ACL_OP_WRITE));
	set(&a, T, PRE, "app", NULL, 0);
	/* A DENY on the wildcard covers everything. */
	set(&a, T, LIT, "*", d, 1);
	ck_assert(!brk_authorize_any(&a, ALICE, "h", T, CTL_ACL_OP_WRITE));
	brk_authorizer_free(&a);
}
END_TEST

START_TEST(test_many_prefixes)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, NULL, false), 0);
	char name[64];
	for (int i = 0; i < 200; i++) {
		ctl_acl_entry e[] = { E(ALICE, "*", CTL_ACL_OP_READ, ALLOW) };
		snprintf(name, sizeof(name), "p%d-", i);
		set(&a, T, PRE, name, e, 1);
	}
	ck_assert_int_eq(a.nprefix_lens[T], 3); /* "p1-", "p10-", "p100-" */
	ck_assert(can(&a, ALICE, "h", T, "p150-x", CTL_ACL_OP_READ));
	ck_assert(!can(&a, ALICE, "h", T, "p200-x", CTL_ACL_OP_READ));
	ck_assert(!can(&a, BOB, "h", T, "p150-x", CTL_ACL_OP_READ));
	brk_authorizer_free(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_disabled_and_config);
	tcase_add_test(tc, test_allow_everyone_if_no_acl);
	tcase_add_test(tc, test_patterns);
	tcase_add_test(tc, test_deny_wildcards_implications);
	tcase_add_test(tc, test_by_resource_type);
	tcase_add_test(tc, test_many_prefixes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
