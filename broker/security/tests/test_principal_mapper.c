/*
 * test_principal_mapper.c - ssl.principal.mapping.rules (principal_mapper.h)
 * with the cases of Kafka's SslPrincipalMapperTest: DEFAULT, RULE with
 * groups and L/U, several rules tried in order, escaped slashes, spaces
 * around rules, no rule applying, and invalid rules refused with a message.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker/security/principal_mapper.h"

static char err[512];

/* Map dn with rules; "" for no rule applying, "!" for refused rules. */
static const char *map(const char *rules, const char *dn)
{
	static char out[256];
	brk_ssl_mapper *m = brk_ssl_mapper_new(rules, err, sizeof(err));
	if (!m)
		return "!";
	int rc = brk_ssl_mapper_map(m, dn, out, sizeof(out));
	brk_ssl_mapper_free(m);
	if (rc == -ENOENT)
		return "";
	ck_assert_int_eq(rc, 0);
	return out;
}

START_TEST(test_default)
{
	ck_assert_str_eq(map(NULL, "CN=alice,OU=eng,O=acme"), "CN=alice,OU=eng,O=acme");
	ck_assert_str_eq(map("", "CN=alice"), "CN=alice");
	ck_assert_str_eq(map("DEFAULT", "CN=Duke, OU=JavaSoft"), "CN=Duke, OU=JavaSoft");
}
END_TEST

START_TEST(test_rules)
{
	const char *rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
			    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
			    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT";
	/* Kafka's examples use lazy quantifiers, which POSIX lacks: refused. */
	ck_assert_str_eq(map(rules, "CN=x"), "!");
	ck_assert_msg(strstr(err, "*?") != NULL, "%s", err);

	rules = "RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/,"
		"RULE:^CN=([^,]*),OU=([^,]*),O=([^,]*),L=([^,]*),ST=([^,]*),C=([^,]*)$/$1@$2/L,"
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT";
	ck_assert_str_eq(map(rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US"), "Duke");
	ck_assert_str_eq(map(rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"), "duke@sme");
	ck_assert_str_eq(map(rules, "CN=Duke,OU=JavaSoft,O=Sun Microsystems"), "duke");
	ck_assert_str_eq(map(rules, "OU=JavaSoft,O=Sun Microsystems,C=US"),
			 "OU=JavaSoft,O=Sun Microsystems,C=US");
}
END_TEST

START_TEST(test_case_and_groups)
{
	ck_assert_str_eq(map("RULE:^CN=(.*),O=(.*)$/$2-$1/U", "CN=bob,O=acme"), "ACME-BOB");
	ck_assert_str_eq(map("RULE:^CN=(.*)$/$0!/", "CN=bob"), "CN=bob!");
	/* "\/" is a slash in the pattern and in the replacement. */
	ck_assert_str_eq(map("RULE:^CN=(.*)\\/(.*)$/$1\\/x/", "CN=a/b"), "a/x");
	/* "\$" is a literal dollar. */
	ck_assert_str_eq(map("RULE:^CN=(.*)$/\\$1/", "CN=a"), "$1");
	/* The pattern must match the whole name. */
	ck_assert_str_eq(map("RULE:CN=a/z/", "CN=abc"), "");
	ck_assert_str_eq(map("RULE:CN=a.*/z/", "CN=abc"), "z");
	/* spaces around rules */
	ck_assert_str_eq(map("  RULE:^CN=(.*)$/$1/L ,  DEFAULT  ", "CN=BOB"), "bob");
	/* no rule applies */
	ck_assert_str_eq(map("RULE:^CN=(.*)$/$1/", "OU=x"), "");
}
END_TEST

START_TEST(test_invalid)
{
	const char *bad[] = {
		"DEFAULTS", "RULE:a", "RULE:a/b", "RULE:a/b/X", "RULE:a/b/L junk", "NOTARULE",
		"RULE:(/x/", "RULE:^(a)$/$2/", "RULE:\\d+/x/", ",", "DEFAULT,,DEFAULT",
		"RULE:a++/x/", "RULE:a*{2}/x/", "RULE:a{1,300}/x/", "RULE:(a)\\1/x/",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		brk_ssl_mapper *m = brk_ssl_mapper_new(bad[i], err, sizeof(err));
		ck_assert_msg(m == NULL, "accepted \"%s\"", bad[i]);
		ck_assert_msg(strstr(err, "ssl.principal.mapping.rules") != NULL, "%s: %s", bad[i], err);
	}
	/* too long a result */
	brk_ssl_mapper *m = brk_ssl_mapper_new("DEFAULT", err, sizeof(err));
	char small[4];
	ck_assert_int_eq(brk_ssl_mapper_map(m, "CN=long", small, sizeof(small)), -ENAMETOOLONG);
	brk_ssl_mapper_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("principal_mapper");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_default);
	tcase_add_test(tc, test_rules);
	tcase_add_test(tc, test_case_and_groups);
	tcase_add_test(tc, test_invalid);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
