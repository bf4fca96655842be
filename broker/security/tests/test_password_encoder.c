/*
 * test_password_encoder.c - password_encoder.h: values encoded by Kafka's
 * algorithm outside this code decode (three vectors made with Java's own
 * JCE classes as Kafka's EncryptingPasswordEncoder uses them: PBEKeySpec,
 * SecretKeyFactory PBKDF2WithHmacSHA512/SHA256/SHA1, Cipher AES/CBC,
 * AES/GCM, AES/CTR; a non-ASCII secret and a password with a character
 * outside the BMP, whose passwordLength counts UTF-16 units); round trips
 * with every cipher, key factory and key length; a wrong secret, a
 * tampered value and every kind of malformed input fail without a crash;
 * settings are checked.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/password_encoder.h"

/* java KafkaPw.java enc s3cret PBKDF2WithHmacSHA512 AES/CBC/PKCS5Padding
 * 128 4096 keystore-pass (Kafka's defaults) */
static const char kafka_cbc[] =
	"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Pa"
	"dding,keyLength:128,salt:5vGUjGjE+OjxEFISwOR8qrDqyE5YnsSz2JTkJfI//AvyTPo"
	"APsPWqlT3D0bQWjv8vxT1U277nNvbwuCCjz7ZsanfBGjo3Q8JpCNC2DeWM7dx/tqv/6Bz8o5"
	"n5n4BCEWN8L3+/0X03aMcAXjmxH1UfspMJ7lRCzGc1rNuhcF9s1fw3dJyl4KNlze1Zn1yMY9"
	"m/x9DqffRaGl1CujFDAYwhv2j0+ibBoZDqWCJgNscc0JJypQtlao9CotRFApGGvCZSqKjZmt"
	"wXH3oP8i9zsrUW1R9ovgf42g0AyORGvao5tUUCOF8jM923qSktCcqNUJr4qyxm5+hbixGxTS"
	"0T+CdAw==,iterations:4096,encryptedPassword:01m2ETcGkZJkPTetYWRu1A==,pas"
	"swordLength:13,initializationVector:lSxjpOavlpwfahDi4GSlcA==";
/* secret "sécret ☕", PBKDF2WithHmacSHA256, AES/GCM/NoPadding, 256 bits,
 * 2048 iterations, password "pässwörd€😀" (11 UTF-16 units, 18 bytes) */
static const char kafka_gcm[] =
	"keyFactoryAlgorithm:PBKDF2WithHmacSHA256,cipherAlgorithm:AES/GCM/NoPaddi"
	"ng,keyLength:256,salt:PdeDMRZT+qXV1TA2yaBE7ct+jaIYQ1Bf/pmm+GHKjrLFL7Gecp"
	"4NPO4e7g62uQRTlUGnEdLqBu2Ug9GIjSwXno32ac+UKf2m7iFpyUzZcDL6Drq4sXwkLPPz31"
	"8TmIljh3LzxAw2rw2djbgjMjCDvAFmHjhoV4WAeWNE/sJvYNZd1Lid4lNOt3r074lD9zKDqw"
	"+rAwmB6gaD5Dm1WeKPEqYj2bbuh5cgUl6AQVMc6bXMeYNgODz7yMT8P3xMfKOWiUSmdZH2Rh"
	"4dHcBp0ldcWyWBkFPzKj1S5ZJdRTU1XkN7vC3ittHV1c5/cWgiKzFoM3U7pAxNKcAGbvFB5R"
	"MPHg==,iterations:2048,encryptedPassword:/RIFPiR9roYC6usjVluyg4rDUiRSP0D"
	"TUmMX8yfSzucA,passwordLength:11,initializationVector:KKPwHJ2nDF8NLx+U,au"
	"thenticationTagLength:128";
/* secret s3cret, PBKDF2WithHmacSHA1, AES/CTR/NoPadding, 192 bits, 1024
 * iterations, password "x" */
static const char kafka_ctr[] =
	"keyFactoryAlgorithm:PBKDF2WithHmacSHA1,cipherAlgorithm:AES/CTR/NoPadding"
	",keyLength:192,salt:d4jhILUibFlmd2RnHXwD9ZtEqCF2VFOF7816Us4bFHYsGXF1pCll"
	"3d11uqeJuL4QGHJ3RD85q1bz2LAv2c4eTN5r05kDjs03Rxy7sKvv5JRQVvKQHUAdlC36X0hf"
	"9nejoqaPS37XtW04C0UFhQGHAYHwnocdEJ1o7TuUsNKOaDAruC/kUGqPwXxvy4i/iAhVAG6M"
	"CJSdl+gQFmZvmHIw3+xAuTWO9sGq/CGLFVWun8r1IGpNq+V9/A1Zrc+5wRPDbgOvXAewB9Da"
	"nBvTNx5ZWaEa7pP7iocsgiFNkndx3M8fQQzu4SOK1Q+mVS7yF61RQi5tQAvS770Kwz1R/l7+"
	"zA==,iterations:1024,encryptedPassword:VQ==,passwordLength:1,initializat"
	"ionVector:Jv3SYLcZmKf+jJa2u6RLXA==";

static void expect_decode(const char *secret, const char *enc, const char *want)
{
	char err[256] = "";
	char *got = brk_password_decode(secret, enc, err, sizeof(err));
	ck_assert_msg(got != NULL, "decode failed: %s", err);
	ck_assert_str_eq(got, want);
	brk_password_free(got);
}

static void expect_fail(const char *secret, const char *enc)
{
	char err[256] = "";
	char *got = brk_password_decode_bounded(secret, enc, strlen(enc), 1 << 16, err, sizeof(err));
	ck_assert_msg(got == NULL, "decoded \"%s\" from \"%.80s\"", got ? got : "", enc);
	ck_assert_msg(err[0] != '\0', "no reason given for \"%.80s\"", enc);
}

START_TEST(test_kafka_vectors)
{
	expect_decode("s3cret", kafka_cbc, "keystore-pass");
	expect_decode("s\xc3\xa9" "cret \xe2\x98\x95", kafka_gcm,
		      "p\xc3\xa4ssw\xc3\xb6rd\xe2\x82\xac\xf0\x9f\x98\x80");
	expect_decode("s3cret", kafka_ctr, "x");
	/* the wrong secret */
	expect_fail("s3cret!", kafka_cbc);
	expect_fail("s3cret", kafka_gcm);
	expect_fail("", kafka_cbc);
}
END_TEST

/* Replace the value of key in enc (a Kafka encoded string) by v. */
static char *with(const char *enc, const char *key, const char *v)
{
	char *out = malloc(strlen(enc) + strlen(v) + 64);
	const char *p = strstr(enc, key);
	ck_assert_ptr_nonnull(p);
	const char *colon = strchr(p, ':');
	const char *end = strchr(colon, ',');
	if (!end)
		end = enc + strlen(enc);
	sprintf(out, "%.*s%s%s", (int)(colon + 1 - enc), enc, v, end);
	return out;
}

START_TEST(test_tampered)
{
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "keyFactoryAlgorithm", "PBKDF2WithHmacMD5" }, { "keyFactoryAlgorithm", "" },
		{ "cipherAlgorithm", "AES/ECB/PKCS5Padding" }, { "cipherAlgorithm", "DES/CBC/PKCS5Padding" },
		{ "keyLength", "64" }, { "keyLength", "-128" }, { "keyLength", "12x" },
		{ "keyLength", "99999999999999999999" }, { "keyLength", "" },
		{ "iterations", "0" }, { "iterations", "-1" }, { "iterations", "4097" },
		{ "iterations", "2147483647" },
		{ "salt", "" }, { "salt", "!!!!" }, { "salt", "QQ=" }, { "salt", "QUJD" },
		{ "encryptedPassword", "" }, { "encryptedPassword", "QUJD" },
		{ "encryptedPassword", "AAAAAAAAAAAAAAAAAAAAAA==" }, { "encryptedPassword", "@" },
		{ "passwordLength", "12" }, { "passwordLength", "-13" }, { "passwordLength", "abc" },
		{ "initializationVector", "" }, { "initializationVector", "QUJD" },
		{ "initializationVector", "AAAAAAAAAAAAAAAAAAAAAA==" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *e = with(kafka_cbc, bad[i].key, bad[i].value);
		expect_fail("s3cret", e);
		free(e);
	}
	/* GCM: the tag and its length */
	static const char *const gcm_bad[][2] = {
		{ "authenticationTagLength", "64" }, { "authenticationTagLength", "120" },
		{ "authenticationTagLength", "136" }, { "authenticationTagLength", "x" },
		{ "initializationVector", "" },
	};
	for (size_t i = 0; i < sizeof(gcm_bad) / sizeof(gcm_bad[0]); i++) {
		char *e = with(kafka_gcm, gcm_bad[i][0], gcm_bad[i][1]);
		expect_fail("s\xc3\xa9" "cret \xe2\x98\x95", e);
		free(e);
	}
	/* a field missing: each in turn */
	static const char *const fields[] = { "keyFactoryAlgorithm", "cipherAlgorithm", "keyLength",
					      "salt", "iterations", "encryptedPassword",
					      "passwordLength", "initializationVector" };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char *e = with(kafka_cbc, fields[i], "x");
		char *k = strstr(e, fields[i]);
		k[0] = 'Z'; /* renamed: unknown keys are ignored, so it is missing */
		expect_fail("s3cret", e);
		free(e);
	}
	char *e = with(kafka_gcm, "authenticationTagLength", "128");
	*strstr(e, "authenticationTagLength") = 'Z';
	expect_fail("s\xc3\xa9" "cret \xe2\x98\x95", e);
	free(e);
}
END_TEST

START_TEST(test_garbage)
{
	static const char *const bad[] = {
		"", ",", ":", ",,,,", "keystore-pass", "a:b", "a:b,c", ":,:,:", "\xff\xfe:\x01",
		"keyFactoryAlgorithm:PBKDF2WithHmacSHA512",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail("s3cret", bad[i]);
	/* NUL inside, length given */
	char err[128];
	ck_assert_ptr_null(brk_password_decode_bounded("s3cret", "a\0b:c", 5, 100, err, sizeof(err)));
	/* iterations above the bound are not run */
	ck_assert_ptr_null(brk_password_decode_bounded("s3cret", kafka_cbc, strlen(kafka_cbc), 4095,
						       err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "iterations"));
	/* every prefix of a good value */
	for (size_t n = 0; n < strlen(kafka_gcm); n += 7) {
		char *got = brk_password_decode_bounded("s\xc3\xa9" "cret \xe2\x98\x95", kafka_gcm, n,
							1 << 16, err, sizeof(err));
		ck_assert_ptr_null(got);
	}
}
END_TEST

/* Spaces around keys, values and commas, another order, a repeated key
 * (the last wins) and an unknown key: parseCsvMap reads them all. */
START_TEST(test_map_form)
{
	char buf[2048];
	const char *salt = strstr(kafka_cbc, "salt:");
	const char *salt_end = strchr(salt, ',');
	const char *ct = strstr(kafka_cbc, "encryptedPassword:");
	const char *ct_end = strchr(ct, ',');
	const char *iv = strstr(kafka_cbc, "initializationVector:");
	snprintf(buf, sizeof(buf),
		 " initializationVector : %s , passwordLength:13,  %.*s ,iterations:1,iterations:4096,"
		 "%.*s,keyLength:128,cipherAlgorithm:aes/cbc/pkcs5padding,other:thing,"
		 "keyFactoryAlgorithm:PBKDF2WithHmacSHA512 ",
		 iv + strlen("initializationVector:"), (int)(salt_end - salt), salt,
		 (int)(ct_end - ct), ct);
	expect_decode("s3cret", buf, "keystore-pass");
}
END_TEST

START_TEST(test_round_trip)
{
	static const char *const kfs[] = { NULL, "PBKDF2WithHmacSHA512", "PBKDF2WithHmacSHA256",
					   "PBKDF2WithHmacSHA1" };
	static const char *const ciphers[] = { NULL, "AES/CBC/PKCS5Padding", "AES/GCM/NoPadding",
					       "AES/CTR/NoPadding" };
	static const int lens[] = { 0, 128, 192, 256 };
	static const char *const pws[] = { "", "a", "0123456789abcdef", "p\xc3\xa4ss \xf0\x9f\x98\x80",
					   "-----BEGIN PRIVATE KEY----- MIIB -----END PRIVATE KEY-----" };
	int k = 0;
	for (size_t a = 0; a < 4; a++)
		for (size_t c = 0; c < 4; c++)
			for (size_t l = 0; l < 4; l++, k++) {
				brk_password_encoder e = { .secret = "the secret",
							   .keyfactory_algorithm = kfs[a],
							   .cipher_algorithm = ciphers[c],
							   .key_length = lens[l],
							   .iterations = 1024 };
				char err[256] = "";
				ck_assert_msg(brk_password_encoder_check(&e, err, sizeof(err)) == 0, "%s", err);
				const char *pw = pws[k % 5];
				char *enc = brk_password_encode(&e, pw, err, sizeof(err));
				ck_assert_msg(enc != NULL, "%s", err);
				if (strlen(pw) > 8)
					ck_assert_ptr_null(strstr(enc, pw));
				expect_decode("the secret", enc, pw);
				/* a wrong secret: CBC's padding or GCM's tag tells
				 * (CTR has no check but the length, as in Java) */
				if (c != 3)
					expect_fail("the secret.", enc);
				/* a second encoding differs (new salt and IV) */
				char *enc2 = brk_password_encode(&e, pw, err, sizeof(err));
				ck_assert_str_ne(enc, enc2);
				free(enc);
				free(enc2);
			}
	/* the defaults are Kafka's, written out in full */
	brk_password_encoder e = { .secret = "s" };
	char err[256];
	char *enc = brk_password_encode(&e, "pw", err, sizeof(err));
	ck_assert_ptr_nonnull(enc);
	ck_assert_ptr_nonnull(strstr(enc, "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,"));
	ck_assert_ptr_nonnull(strstr(enc, "cipherAlgorithm:AES/CBC/PKCS5Padding,"));
	ck_assert_ptr_nonnull(strstr(enc, "keyLength:128,"));
	ck_assert_ptr_nonnull(strstr(enc, "iterations:4096,"));
	ck_assert_ptr_nonnull(strstr(enc, "passwordLength:2,"));
	free(enc);
	/* not UTF-8: refused */
	ck_assert_ptr_null(brk_password_encode(&e, "\xff\xfe", err, sizeof(err)));
}
END_TEST

START_TEST(test_check)
{
	char err[256];
	brk_password_encoder ok = { .secret = "s" };
	ck_assert_int_eq(brk_password_encoder_check(&ok, err, sizeof(err)), 0);
	brk_password_encoder e = ok;
	e.secret = "";
	ck_assert_int_eq(brk_password_encoder_check(&e, err, sizeof(err)), -1);
	e = ok;
	e.iterations = 1023;
	ck_assert_int_eq(brk_password_encoder_check(&e, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "password.encoder.iterations"));
	e = ok;
	e.key_length = 64;
	ck_assert_int_eq(brk_password_encoder_check(&e, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "password.encoder.key.length"));
	e = ok;
	e.cipher_algorithm = "AES";
	ck_assert_int_eq(brk_password_encoder_check(&e, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "password.encoder.cipher.algorithm"));
	e = ok;
	e.keyfactory_algorithm = "PBKDF2WithHmacMD5";
	ck_assert_int_eq(brk_password_encoder_check(&e, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "password.encoder.keyfactory.algorithm"));
	ck_assert_ptr_null(brk_password_encode(&e, "pw", err, sizeof(err)));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("password_encoder");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kafka_vectors);
	tcase_add_test(tc, test_tampered);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_map_form);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
