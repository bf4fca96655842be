/*
 * test_acl_json.c - Kafka's ZooKeeper encodings of ACLs (controller/acl.h):
 * the resource znode JSON as Kafka writes it, round trips, names read in
 * Kafka's loose forms, malformed data refused; the literal and extended
 * change notifications; the names of codes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/acl.h"

START_TEST(test_names)
{
	ck_assert_str_eq(ctl_acl_resource_type_name(CTL_ACL_RES_TRANSACTIONAL_ID), "TransactionalId");
	ck_assert_str_eq(ctl_acl_operation_name(CTL_ACL_OP_DESCRIBE_CONFIGS), "DescribeConfigs");
	ck_assert_ptr_null(ctl_acl_operation_name(CTL_ACL_OP_ANY));
	ck_assert_ptr_null(ctl_acl_resource_type_name(99));
	ck_assert_int_eq(ctl_acl_operation_parse("DESCRIBE_CONFIGS", 16), CTL_ACL_OP_DESCRIBE_CONFIGS);
	ck_assert_int_eq(ctl_acl_operation_parse("describeconfigs", 15), CTL_ACL_OP_DESCRIBE_CONFIGS);
	ck_assert_int_eq(ctl_acl_operation_parse("Reads", 5), CTL_ACL_OP_UNKNOWN);
	ck_assert_int_eq(ctl_acl_resource_type_parse("TRANSACTIONAL_ID", 16),
			 CTL_ACL_RES_TRANSACTIONAL_ID);
	ck_assert_int_eq(ctl_acl_pattern_parse("Prefixed", 8), CTL_ACL_PAT_PREFIXED);
	ck_assert_int_eq(ctl_acl_permission_parse("allow", 5), CTL_ACL_PERM_ALLOW);
}
END_TEST

START_TEST(test_znode_roundtrip)
{
	ctl_acl_entry e[2];
	memset(e, 0, sizeof(e));
	strcpy(e[0].principal, "User:alice");
	strcpy(e[0].host, "*");
	e[0].operation = CTL_ACL_OP_READ;
	e[0].permission = CTL_ACL_PERM_ALLOW;
	strcpy(e[1].principal, "User:b\"ob");
	strcpy(e[1].host, "10.0.0.1");
	e[1].operation = CTL_ACL_OP_IDEMPOTENT_WRITE;
	e[1].permission = CTL_ACL_PERM_DENY;
	char *text;
	size_t len;
	ck_assert_int_eq(ctl_acl_json_encode(e, 2, &text, &len), 0);
	ck_assert_str_eq(text, "{\"version\":1,\"acls\":[{\"principal\":\"User:alice\","
			       "\"permissionType\":\"Allow\",\"operation\":\"Read\",\"host\":\"*\"},"
			       "{\"principal\":\"User:b\\\"ob\",\"permissionType\":\"Deny\","
			       "\"operation\":\"IdempotentWrite\",\"host\":\"10.0.0.1\"}]}");
	ctl_acl_entry *d;
	int32_t n;
	ck_assert_int_eq(ctl_acl_json_decode(text, len, &d, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert(ctl_acl_entry_eq(&d[0], &e[0]));
	ck_assert(ctl_acl_entry_eq(&d[1], &e[1]));
	free(d);
	free(text);

	/* Kafka's enum spellings are read too; empty data is no ACLs. */
	const char *k = "{\"version\":1,\"acls\":[{\"principal\":\"User:*\",\"permissionType\":"
			"\"ALLOW\",\"operation\":\"DESCRIBE_CONFIGS\",\"host\":\"*\"}]}";
	ck_assert_int_eq(ctl_acl_json_decode(k, strlen(k), &d, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(d[0].operation, CTL_ACL_OP_DESCRIBE_CONFIGS);
	free(d);
	ck_assert_int_eq(ctl_acl_json_decode("", 0, &d, &n), 0);
	ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(test_znode_malformed)
{
	const char *bad[] = {
		"{\"version\":2,\"acls\":[]}",
		"{\"acls\":[]}",
		"{\"version\":1}",
		"{\"version\":1,\"acls\":{}}",
		"{\"version\":1,\"acls\":[1]}",
		"{\"version\":1,\"acls\":[{\"principal\":\"User:a\",\"permissionType\":\"Allow\","
		"\"operation\":\"Any\",\"host\":\"*\"}]}",
		"{\"version\":1,\"acls\":[{\"principal\":\"User:a\",\"permissionType\":\"Maybe\","
		"\"operation\":\"Read\",\"host\":\"*\"}]}",
		"{\"version\":1,\"acls\":[{\"principal\":7,\"permissionType\":\"Allow\","
		"\"operation\":\"Read\",\"host\":\"*\"}]}",
		"{\"version\":1,\"acls\":[{\"permissionType\":\"Allow\",\"operation\":\"Read\","
		"\"host\":\"*\"}]}",
		"{\"version\":1,\"acls\":[",
		"[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ctl_acl_entry *d = (ctl_acl_entry *)1;
		int32_t n = 5;
		ck_assert_int_lt(ctl_acl_json_decode(bad[i], strlen(bad[i]), &d, &n), 0);
		ck_assert_ptr_null(d);
		ck_assert_int_eq(n, 0);
	}
	/* A principal longer than an entry holds. */
	char big[600];
	char p[300];
	memset(p, 'x', sizeof(p) - 1);
	p[sizeof(p) - 1] = '\0';
	snprintf(big, sizeof(big), "{\"version\":1,\"acls\":[{\"principal\":\"%s\",\"permissionType\":"
				   "\"Allow\",\"operation\":\"Read\",\"host\":\"*\"}]}", p);
	ctl_acl_entry *d;
	int32_t n;
	ck_assert_int_eq(ctl_acl_json_decode(big, strlen(big), &d, &n), -EINVAL);
}
END_TEST

START_TEST(test_changes)
{
	char *s, *name;
	size_t len;
	int8_t type, pattern;
	ck_assert_int_eq(ctl_acl_change_encode(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "a:b", &s,
					       &len), 0);
	ck_assert_str_eq(s, "Topic:a:b");
	ck_assert_int_eq(ctl_acl_change_decode(false, s, len, &type, &pattern, &name), 0);
	ck_assert_int_eq(type, CTL_ACL_RES_TOPIC);
	ck_assert_int_eq(pattern, CTL_ACL_PAT_LITERAL);
	ck_assert_str_eq(name, "a:b");
	free(name);
	free(s);
	ck_assert_int_eq(ctl_acl_change_encode(CTL_ACL_RES_GROUP, CTL_ACL_PAT_PREFIXED, "g-", &s,
					       &len), 0);
	ck_assert_str_eq(s, "{\"version\":1,\"resourceType\":\"GROUP\",\"name\":\"g-\","
			    "\"patternType\":\"PREFIXED\"}");
	ck_assert_int_eq(ctl_acl_change_decode(true, s, len, &type, &pattern, &name), 0);
	ck_assert_int_eq(type, CTL_ACL_RES_GROUP);
	ck_assert_int_eq(pattern, CTL_ACL_PAT_PREFIXED);
	ck_assert_str_eq(name, "g-");
	free(name);
	free(s);
	ck_assert_int_eq(ctl_acl_change_decode(false, "Topic", 5, &type, &pattern, &name), -EINVAL);
	ck_assert_int_eq(ctl_acl_change_decode(false, "Nope:x", 6, &type, &pattern, &name), -EINVAL);
	ck_assert_int_eq(ctl_acl_change_decode(true, "{\"version\":1}", 13, &type, &pattern, &name),
			 -EINVAL);
	ck_assert_ptr_null(name);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl_json");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_znode_roundtrip);
	tcase_add_test(tc, test_znode_malformed);
	tcase_add_test(tc, test_changes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
