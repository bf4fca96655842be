/*
 * test_security.c - samsa-admin's --command-config (tools/security.h):
 * the security protocols, the SASL credentials from sasl.jaas.config (a
 * continued line, PLAIN and SCRAM modules), and the errors: an unknown
 * protocol, GSSAPI (Kafka's default mechanism), no JAAS, a JAAS entry of
 * the wrong module, no password, a truststore that cannot be read, a
 * missing file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/security/sasl.h"
#include "tools/security.h"

static char path[64];

static const char *props(const char *text)
{
	snprintf(path, sizeof(path), "/tmp/adm-security-%d.properties", (int)getpid());
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int load(const char *text, adm_security *s, char *err)
{
	int rc = adm_security_load(s, props(text), err, 512);
	unlink(path);
	return rc;
}

START_TEST(test_protocols)
{
	adm_security s;
	char err[512];
	ck_assert_int_eq(load("# nothing\nclient.id=x\n", &s, err), 0);
	ck_assert(!s.tls && !s.sasl && !s.ssl_ctx);
	adm_security_free(&s);
	ck_assert_int_eq(load("security.protocol=PLAINTEXT\n", &s, err), 0);
	ck_assert(!s.tls && !s.sasl);
	adm_security_free(&s);
	ck_assert_int_eq(load("security.protocol=SSL\n", &s, err), 0);
	ck_assert(s.tls && !s.sasl && s.ssl_ctx && s.verify_host);
	adm_security_free(&s);
	ck_assert_int_eq(load("security.protocol=SSL\nssl.endpoint.identification.algorithm=\n",
			      &s, err), 0);
	ck_assert(s.tls && !s.verify_host);
	adm_security_free(&s);
	ck_assert_int_eq(load("security.protocol=TLS\n", &s, err), -1);
	ck_assert_msg(strstr(err, "security.protocol TLS"), "%s", err);
}
END_TEST

START_TEST(test_credentials)
{
	adm_security s;
	char err[512];
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
			      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
			      "required \\\n  username=\"admin\" \\\n  password=\"a b;c\";\n",
			      &s, err), 0);
	ck_assert(s.sasl && !s.tls);
	ck_assert_int_eq(s.cred.mechanism, BRK_SASL_PLAIN);
	ck_assert_str_eq(s.cred.username, "admin");
	ck_assert_str_eq(s.cred.password, "a b;c");
	adm_security_free(&s);
	ck_assert_int_eq(load("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
			      "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
			      "required username='alice' password='pw';\n",
			      &s, err), 0);
	ck_assert(s.sasl && s.tls && s.ssl_ctx);
	ck_assert_int_eq(s.cred.mechanism, BRK_SASL_SCRAM_SHA_512);
	ck_assert_str_eq(s.cred.username, "alice");
	adm_security_free(&s);
}
END_TEST

START_TEST(test_errors)
{
	adm_security s;
	char err[512];
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\n", &s, err), -1);
	ck_assert_msg(strstr(err, "sasl.mechanism GSSAPI is not served"), "%s", err);
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", &s, err),
			 -1);
	ck_assert_msg(strstr(err, "sasl.jaas.config is not set"), "%s", err);
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
			      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
			      "required username=a password=b;\n", &s, err), -1);
	ck_assert_msg(strstr(err, "no org.apache.kafka.common.security.scram.ScramLoginModule"),
		      "%s", err);
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
			      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
			      "required username=a;\n", &s, err), -1);
	ck_assert_msg(strstr(err, "needs username= and password="), "%s", err);
	ck_assert_int_eq(load("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
			      "sasl.jaas.config=PlainLoginModule username=a\n", &s, err), -1);
	ck_assert_msg(strstr(err, "sasl.jaas.config:"), "%s", err);
	ck_assert_int_eq(load("security.protocol=SSL\nssl.truststore.type=PEM\n"
			      "ssl.truststore.location=/nonexistent/ca.pem\n", &s, err), -1);
	ck_assert_msg(strstr(err, "/nonexistent/ca.pem"), "%s", err);
	ck_assert_int_eq(adm_security_load(&s, "/nonexistent/client.properties", err, 512), -1);
	ck_assert_msg(strstr(err, "/nonexistent/client.properties"), "%s", err);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("security");
	TCase *tc = tcase_create("command-config");
	tcase_add_test(tc, test_protocols);
	tcase_add_test(tc, test_credentials);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
