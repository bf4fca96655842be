/*
 * test_acl.c - the authorizer's rules (acl/authorizer.h): disabled allows
 * everything; the class names; super.users; allow.everyone.if.no.acl.found
 * with and without ACLs on the resource; LITERAL, the wildcard name "*",
 * PREFIXED patterns of several lengths; the wildcard principal and host;
 * DENY wins over ALLOW; the implications of DESCRIBE and DESCRIBE_CONFIGS
 * (and that DENY of READ does not deny DESCRIBE); ALL; replacing and
 * removing a pattern; authorized operations; authorizeByResourceType;
 * binding filters (ANY, MATCH, LITERAL, PREFIXED, null fields) and the
 * checks of filters and new bindings.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/acl/authorizer.h"
#include "broker/acl/filter.h"

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

/* The cost of a decision on the produce path: 1000 LITERAL topics, 100
 * PREFIXED patterns of 10 lengths, the wildcard; printed (ns per call), not
 * asserted beyond a loose bound. */
START_TEST(test_decision_cost)
{
	brk_authorizer a;
	ck_assert_int_eq(brk_authorizer_init(&a, BRK_ACL_AUTHORIZER_ZK, "User:admin", false), 0);
	char name[64];
	for (int i = 0; i < 1000; i++) {
		ctl_acl_entry e[] = { E(ALICE, "*", CTL_ACL_OP_WRITE, ALLOW),
				      E(BOB, "10.0.0.1", CTL_ACL_OP_READ, ALLOW) };
		snprintf(name, sizeof(name), "topic-%d", i);
		set(&a, T, LIT, name, e, 2);
	}
	for (int i = 0; i < 100; i++) {
		ctl_acl_entry e[] = { E("User:carol", "*", CTL_ACL_OP_READ, ALLOW) };
		snprintf(name, sizeof(name), "%.*s%d", 1 + i % 10, "pppppppppp", i);
		set(&a, T, PRE, name, e, 1);
	}
	ctl_acl_entry w[] = { E("User:ops", "*", CTL_ACL_OP_DESCRIBE, ALLOW) };
	set(&a, T, LIT, "*", w, 1);
	static char names[1000][16];
	int32_t lens[1000];
	for (int i = 0; i < 1000; i++)
		lens[i] = snprintf(names[i], sizeof(names[i]), "topic-%d", i);
	struct timespec t0, t1;
	int allowed = 0;
	const int N = 1000000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++)
		allowed += brk_authorize(&a, ALICE, "10.0.0.9", T, names[i % 1000], lens[i % 1000],
					 CTL_ACL_OP_WRITE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_eq(allowed, N);
	double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / N;
	fprintf(stderr, "acl: %.0f ns per decision, "
		"1000 literal + 100 prefixed patterns\n", ns);
	ck_assert(ns < 100000);
	brk_authorizer_free(&a);
}
END_TEST

static brk_acl_filter F(int8_t type, int8_t pattern, const char *name, const char *principal)
{
	brk_acl_filter f = { .type = type, .pattern = pattern, .name = name,
			     .nlen = name ? (int32_t)strlen(name) : -1, .principal = principal,
			     .plen = principal ? (int32_t)strlen(principal) : -1,
			     .operation = CTL_ACL_OP_ANY, .permission = CTL_ACL_PERM_ANY };
	return f;
}

START_TEST(test_filters)
{
	ctl_acl_resource lit = { .type = T, .pattern = LIT, .name = "orders" };
	ctl_acl_resource star = { .type = T, .pattern = LIT, .name = "*" };
	ctl_acl_resource pre = { .type = T, .pattern = PRE, .name = "ord" };
	ctl_acl_resource grp = { .type = G, .pattern = LIT, .name = "orders" };
	brk_acl_filter f = F(CTL_ACL_RES_ANY, CTL_ACL_PAT_ANY, NULL, NULL);
	ck_assert(brk_acl_filter_check(&f) == NULL);
	ck_assert(brk_acl_filter_matches_pattern(&f, &lit));
	ck_assert(brk_acl_filter_matches_pattern(&f, &grp));
	/* ANY with a name: exact names only. */
	f = F(T, CTL_ACL_PAT_ANY, "orders", NULL);
	ck_assert(brk_acl_filter_matches_pattern(&f, &lit));
	ck_assert(!brk_acl_filter_matches_pattern(&f, &star));
	ck_assert(!brk_acl_filter_matches_pattern(&f, &pre));
	ck_assert(!brk_acl_filter_matches_pattern(&f, &grp));
	/* MATCH: what applies to the name. */
	f = F(T, CTL_ACL_PAT_MATCH, "orders", NULL);
	ck_assert(brk_acl_filter_matches_pattern(&f, &lit));
	ck_assert(brk_acl_filter_matches_pattern(&f, &star));
	ck_assert(brk_acl_filter_matches_pattern(&f, &pre));
	f = F(T, CTL_ACL_PAT_MATCH, "or", NULL);
	ck_assert(!brk_acl_filter_matches_pattern(&f, &pre));
	ck_assert(!brk_acl_filter_matches_pattern(&f, &lit));
	/* PREFIXED / LITERAL: that pattern type only. */
	f = F(T, PRE, NULL, NULL);
	ck_assert(brk_acl_filter_matches_pattern(&f, &pre));
	ck_assert(!brk_acl_filter_matches_pattern(&f, &lit));
	f = F(T, LIT, "ord", NULL);
	ck_assert(!brk_acl_filter_matches_pattern(&f, &pre));
	/* Entries. */
	ctl_acl_entry e = E(ALICE, "10.0.0.1", CTL_ACL_OP_READ, ALLOW);
	f = F(T, CTL_ACL_PAT_ANY, NULL, ALICE);
	ck_assert(brk_acl_filter_matches_entry(&f, &e));
	f = F(T, CTL_ACL_PAT_ANY, NULL, BOB);
	ck_assert(!brk_acl_filter_matches_entry(&f, &e));
	f = F(T, CTL_ACL_PAT_ANY, NULL, NULL);
	f.host = "10.0.0.2";
	f.hlen = 8;
	ck_assert(!brk_acl_filter_matches_entry(&f, &e));
	f.host = NULL;
	f.operation = CTL_ACL_OP_WRITE;
	ck_assert(!brk_acl_filter_matches_entry(&f, &e));
	f.operation = CTL_ACL_OP_READ;
	f.permission = CTL_ACL_PERM_DENY;
	ck_assert(!brk_acl_filter_matches_entry(&f, &e));
	f.permission = CTL_ACL_PERM_ALLOW;
	ck_assert(brk_acl_filter_matches_entry(&f, &e));
	/* UNKNOWN elements are refused. */
	f = F(CTL_ACL_RES_UNKNOWN, CTL_ACL_PAT_ANY, NULL, NULL);
	ck_assert_ptr_nonnull(brk_acl_filter_check(&f));
	f = F(T, CTL_ACL_PAT_UNKNOWN, NULL, NULL);
	ck_assert_ptr_nonnull(brk_acl_filter_check(&f));
	f = F(T, CTL_ACL_PAT_ANY, NULL, NULL);
	f.operation = 99;
	ck_assert_ptr_nonnull(brk_acl_filter_check(&f));
}
END_TEST

START_TEST(test_binding_check)
{
#define CHECK(type, pattern, name, principal, host, op, perm)                                     \
	brk_acl_binding_check(type, pattern, name, (int32_t)strlen(name), principal,             \
			      (int32_t)strlen(principal), host, (int32_t)strlen(host), op, perm)
	ck_assert_ptr_null(CHECK(T, LIT, "t", ALICE, "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_null(CHECK(CTL_ACL_RES_CLUSTER, LIT, "kafka-cluster", "User:*", "1.2.3.4",
				 CTL_ACL_OP_ALL, DENY));
	ck_assert_str_eq(CHECK(CTL_ACL_RES_CLUSTER, PRE, "kafka", "User:*", "*", CTL_ACL_OP_ALL,
			       DENY),
			 "The only valid name for the CLUSTER resource is kafka-cluster");
	ck_assert_ptr_nonnull(CHECK(CTL_ACL_RES_ANY, LIT, "t", ALICE, "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, CTL_ACL_PAT_MATCH, "t", ALICE, "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, CTL_ACL_PAT_ANY, "t", ALICE, "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", ALICE, "*", CTL_ACL_OP_ANY, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", ALICE, "*", CTL_ACL_OP_READ, CTL_ACL_PERM_ANY));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", "alice", "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", ":alice", "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "", ALICE, "*", CTL_ACL_OP_READ, ALLOW));
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", ALICE, "", CTL_ACL_OP_READ, ALLOW));
	char big[400];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "User:", 5);
	ck_assert_ptr_nonnull(CHECK(T, LIT, "t", big, "*", CTL_ACL_OP_READ, ALLOW));
#undef CHECK
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("core");
	/* test_decision_cost makes a million decisions: 0.25 s here, 0.9 s
	 * in an ASan build, too near check's default of 4 s for a slower CI
	 * machine running two test programs at once */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_disabled_and_config);
	tcase_add_test(tc, test_allow_everyone_if_no_acl);
	tcase_add_test(tc, test_patterns);
	tcase_add_test(tc, test_deny_wildcards_implications);
	tcase_add_test(tc, test_by_resource_type);
	tcase_add_test(tc, test_many_prefixes);
	tcase_add_test(tc, test_filters);
	tcase_add_test(tc, test_decision_cost);
	tcase_add_test(tc, test_binding_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
