/*
 * test_pem.c - brk_pem_text (pem.h): a value joined from continuation lines
 * (spaces inside the base64) becomes line-broken PEM; one already broken
 * into lines comes out the same; several blocks, text between them, a
 * block with RFC 1421 headers, and a value with no block.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/pem.h"

static void expect(const char *in, const char *want)
{
	char *got = brk_pem_text(in);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(test_joined_lines)
{
	expect("-----BEGIN PRIVATE KEY----- MIIB VQIB ADAN -----END PRIVATE KEY-----",
	       "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADAN\n-----END PRIVATE KEY-----\n");
	/* 70 base64 characters: a line of 64, then 6 */
	char in[256], want[256];
	strcpy(in, "-----BEGIN CERTIFICATE----- ");
	strcpy(want, "-----BEGIN CERTIFICATE-----\n");
	for (int i = 0; i < 70; i++) {
		strcat(in, i % 10 == 9 ? "A " : "A");
		strcat(want, "A");
		if (i == 63)
			strcat(want, "\n");
	}
	strcat(in, "-----END CERTIFICATE-----");
	strcat(want, "\n-----END CERTIFICATE-----\n");
	expect(in, want);
}
END_TEST

START_TEST(test_lines_kept)
{
	expect("-----BEGIN CERTIFICATE-----\nMIIB\nVQIB==\n-----END CERTIFICATE-----\n",
	       "-----BEGIN CERTIFICATE-----\nMIIBVQIB==\n-----END CERTIFICATE-----\n");
	/* two blocks, text around them dropped */
	expect("leaf: -----BEGIN CERTIFICATE----- QUJD -----END CERTIFICATE----- ca: "
	       "-----BEGIN CERTIFICATE----- REVG -----END CERTIFICATE----- ",
	       "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"
	       "-----BEGIN CERTIFICATE-----\nREVG\n-----END CERTIFICATE-----\n");
}
END_TEST

START_TEST(test_other)
{
	/* headers: as it is */
	expect("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nQUJD\n-----END RSA PRIVATE "
	       "KEY-----",
	       "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nQUJD\n-----END RSA PRIVATE "
	       "KEY-----\n");
	expect("not pem", "not pem");
	expect("-----BEGIN X----- QUJD", "-----BEGIN X----- QUJD"); /* no end */
	expect("-----BEGIN X----- QUJD -----END Y-----", "-----BEGIN X----- QUJD -----END Y-----");
	expect("", "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pem");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_joined_lines);
	tcase_add_test(tc, test_lines_kept);
	tcase_add_test(tc, test_other);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
