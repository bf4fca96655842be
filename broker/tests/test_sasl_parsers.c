/*
 * test_sasl_parsers.c - the SASL building blocks without a broker: the
 * JAAS config reader (jaas.h: Kafka's JaasConfig grammar and errors), the
 * PLAIN message (plain.h: Kafka's PlainSaslServer splits and messages),
 * base64, the SCRAM messages and credential strings (scram.h), and the
 * SCRAM-SHA-256 computation against RFC 7677's example exchange (section
 * 3: user "user", password "pencil"), and the client side (sasl_client.h)
 * against the server's computations, with the server messages it refuses.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/jaas.h"
#include "broker/security/plain.h"
#include "broker/security/sasl_client.h"
#include "broker/security/scram.h"

START_TEST(test_jaas)
{
	brk_jaas j;
	char err[256];
	ck_assert_int_eq(brk_jaas_parse("org.apache.kafka.common.security.plain.PlainLoginModule "
					"required username=\"admin\" password='a\\\"b' // comment\n"
					" user_alice=\"alice-secret\" /* more */ user_bob=bob$1;",
					&j, err, sizeof(err)),
			 0);
	ck_assert_int_eq(j.nentries, 1);
	const brk_jaas_entry *e =
		brk_jaas_find(&j, "org.apache.kafka.common.security.plain.PlainLoginModule");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->flag, "required");
	ck_assert_str_eq(brk_jaas_option_get(e, "username"), "admin");
	ck_assert_str_eq(brk_jaas_option_get(e, "password"), "a\"b");
	ck_assert_str_eq(brk_jaas_option_get(e, "user_alice"), "alice-secret");
	ck_assert_str_eq(brk_jaas_option_get(e, "user_bob"), "bob$1");
	ck_assert_ptr_null(brk_jaas_option_get(e, "user_carol"));
	brk_jaas_free(&j);

	/* two entries, flags in any case */
	ck_assert_int_eq(brk_jaas_parse("a.B OPTIONAL; c.D Sufficient k=\"v\";", &j, err, sizeof(err)), 0);
	ck_assert_int_eq(j.nentries, 2);
	ck_assert_ptr_nonnull(brk_jaas_find(&j, "c.D"));
	brk_jaas_free(&j);

	/* Kafka's errors */
	ck_assert_int_eq(brk_jaas_parse("", &j, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "Login module not specified in JAAS config");
	ck_assert_int_eq(brk_jaas_parse("a.B required k=\"v\"", &j, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "JAAS config entry not terminated by semi-colon");
	ck_assert_int_eq(brk_jaas_parse("a.B", &j, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "JAAS config: login module control flag not specified");
	ck_assert_int_eq(brk_jaas_parse("a.B always;", &j, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "JAAS config: invalid login module control flag 'always'");
	ck_assert_int_eq(brk_jaas_parse("a.B required k=;", &j, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "JAAS config: value not specified for key 'k'");
	ck_assert_int_eq(brk_jaas_parse("a.B required k=\"v;", &j, err, sizeof(err)), -1);
	ck_assert_int_eq(brk_jaas_parse("a.B required /* k=v;", &j, err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_plain)
{
	brk_plain_token t;
	int bad;
	char msg[200];
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"\0alice\0pw", 9, &t, &bad, msg, sizeof(msg)), 0);
	ck_assert_int_eq((int)t.username_len, 5);
	ck_assert_int_eq(memcmp(t.username, "alice", 5), 0);
	ck_assert_int_eq((int)t.password_len, 2);
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"alice\0alice\0pw", 14, &t, &bad, msg,
					 sizeof(msg)), 0);
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"alice", 5, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_int_eq(bad, 1);
	ck_assert_str_eq(msg, "Invalid SASL/PLAIN response: expected 3 tokens, got 1");
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"\0a\0b\0c", 6, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "Invalid SASL/PLAIN response: expected 3 tokens, got 4");
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"", 0, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "Invalid SASL/PLAIN response: expected 3 tokens, got 1");
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"\0\0pw", 4, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_int_eq(bad, 0);
	ck_assert_str_eq(msg, "Authentication failed: username not specified");
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"\0u\0", 3, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "Authentication failed: password not specified");
	ck_assert_int_eq(brk_plain_parse((const uint8_t *)"x\0u\0p", 5, &t, &bad, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "Authentication failed: Client requested an authorization id that is "
			      "different from username");
}
END_TEST

START_TEST(test_base64)
{
	char enc[64];
	uint8_t dec[64];
	ck_assert_int_eq((int)brk_base64_encode((const uint8_t *)"n,,", 3, enc), 4);
	ck_assert_str_eq(enc, "biws");
	brk_base64_encode((const uint8_t *)"ab", 2, enc);
	ck_assert_str_eq(enc, "YWI=");
	brk_base64_encode((const uint8_t *)"a", 1, enc);
	ck_assert_str_eq(enc, "YQ==");
	ck_assert_int_eq(brk_base64_decode("YWI=", 4, true, dec, sizeof(dec)), 2);
	ck_assert_int_eq(memcmp(dec, "ab", 2), 0);
	ck_assert_int_eq(brk_base64_decode("YWI", 3, true, dec, sizeof(dec)), -1); /* unpadded */
	ck_assert_int_eq(brk_base64_decode("YWI", 3, false, dec, sizeof(dec)), 2);
	ck_assert_int_eq(brk_base64_decode("YW=I", 4, false, dec, sizeof(dec)), -1);
	ck_assert_int_eq(brk_base64_decode("Y", 1, false, dec, sizeof(dec)), -1);
	ck_assert_int_eq(brk_base64_decode("YWJ=", 4, true, dec, sizeof(dec)), -1); /* stray bits */
	ck_assert_int_eq(brk_base64_decode("", 0, true, dec, sizeof(dec)), 0);
	ck_assert_int_eq(brk_base64_decode("YWJj", 4, true, dec, 2), -1); /* too long for out */
}
END_TEST

START_TEST(test_scram_messages)
{
	brk_scram_client_first cf;
	const char *m = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
	ck_assert_int_eq(brk_scram_parse_client_first((const uint8_t *)m, strlen(m), &cf), 0);
	ck_assert_str_eq(cf.username, "user");
	ck_assert_int_eq((int)cf.nonce_len, 20);
	ck_assert_int_eq((int)cf.bare_len, (int)strlen(m) - 3);
	ck_assert_int_eq(cf.token_auth, 0);
	m = "n,a=us=2Cer,m=x,n=us=2Cer=3D,r=abc,tokenauth=TRUE,other=1";
	ck_assert_int_eq(brk_scram_parse_client_first((const uint8_t *)m, strlen(m), &cf), 0);
	ck_assert_str_eq(cf.username, "us,er=");
	ck_assert_int_eq((int)cf.authzid_len, 7);
	ck_assert_int_eq(cf.token_auth, 1);
	const char *bad[] = { "y,,n=user,r=abc", "n,,n=,r=abc", "n,,n=user,r=", "n,,n=us=er,r=abc",
			      "n,,n=user,r=a b", "n,,n=user,r=abc,", "n,,n=user,r=abc,1=2",
			      "n,n=user,r=abc", "p=tls,,n=user,r=abc", "n,,n=us\xc3\xa9r,r=abc" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(brk_scram_parse_client_first((const uint8_t *)bad[i], strlen(bad[i]), &cf) < 0,
			      "accepted %s", bad[i]);

	brk_scram_client_final fin;
	m = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
	    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
	ck_assert_int_eq(brk_scram_parse_client_final((const uint8_t *)m, strlen(m), &fin), 0);
	ck_assert_int_eq((int)fin.proof_len, 32);
	ck_assert_int_eq((int)fin.without_proof_len, (int)(strstr(m, ",p=") - m));
	ck_assert_int_eq((int)fin.nonce_len, 50);
	m = "c=biws,r=abc,ext=1,p=YWJj";
	ck_assert_int_eq(brk_scram_parse_client_final((const uint8_t *)m, strlen(m), &fin), 0);
	const char *badf[] = { "c=biws,r=abc", "c=biws,r=abc,p=", "c=biw,r=abc,p=YWJj",
			       "r=abc,c=biws,p=YWJj", "c=biws,r=abc,p=YWJ", "c=biws,p=YWJj" };
	for (size_t i = 0; i < sizeof(badf) / sizeof(badf[0]); i++)
		ck_assert_msg(brk_scram_parse_client_final((const uint8_t *)badf[i], strlen(badf[i]), &fin) < 0,
			      "accepted %s", badf[i]);
}
END_TEST

START_TEST(test_credential_strings)
{
	brk_scram_credential c, c2;
	const char *s = "salt=c2FsdA==,stored_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=,"
			"server_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=,iterations=4096";
	ck_assert_int_eq(brk_scram_credential_parse(s, strlen(s), &c), 0);
	ck_assert_int_eq((int)c.salt_len, 4);
	ck_assert_int_eq((int)c.key_len, 32);
	ck_assert_int_eq(c.iterations, 4096);
	char out[512];
	ck_assert_int_eq(brk_scram_credential_format(&c, out, sizeof(out)), (int)strlen(s));
	ck_assert_str_eq(out, s);
	ck_assert_int_eq(brk_scram_credential_parse(out, strlen(out), &c2), 0);
	ck_assert_int_eq(memcmp(&c, &c2, sizeof(c)), 0);
	/* any order; padding optional (Java's decoder) */
	const char *s2 = "iterations=8192,server_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8,"
			 "salt=c2FsdA,stored_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
	ck_assert_int_eq(brk_scram_credential_parse(s2, strlen(s2), &c), 0);
	ck_assert_int_eq(c.iterations, 8192);
	const char *bad[] = { "", "salt=c2FsdA==", "salt=c2FsdA==,stored_key=AA==,server_key=AA==,iterations=x",
			      "salt=c2FsdA==,stored_key=AA==,server_key=AA==,iterations=1,extra=1",
			      "salt=c2FsdA==,stored_key=AA==,server_key=AAAA,iterations=1",
			      "=x,salt=c2FsdA==,stored_key=AA==,server_key=AA==,iterations=1",
			      "salt=c2FsdA==,stored_key=AA==,server_key=AA==,iterations=99999999999",
			      "salt=*,stored_key=AA==,server_key=AA==,iterations=1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(brk_scram_credential_parse(bad[i], strlen(bad[i]), &c) < 0, "accepted %s",
			      bad[i]);
}
END_TEST

/* RFC 7677, section 3. */
START_TEST(test_rfc7677_vector)
{
	uint8_t salt[32], salted[64];
	long sl = brk_base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", 24, true, salt, sizeof(salt));
	ck_assert_int_eq(sl, 16);
	ck_assert_int_eq(brk_scram_salted_password(BRK_SASL_SCRAM_SHA_256, "pencil", 6, salt, (size_t)sl,
						   4096, salted), 0);
	brk_scram_credential c;
	ck_assert_int_eq(brk_scram_credential_from_salted(BRK_SASL_SCRAM_SHA_256, salted, 32, salt,
							  (size_t)sl, 4096, &c), 0);
	const char *auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,"
			   "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
			   "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
			   "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
	uint8_t proof[32];
	ck_assert_int_eq(brk_base64_decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", 44, true,
					   proof, sizeof(proof)), 32);
	ck_assert(brk_scram_verify_proof(BRK_SASL_SCRAM_SHA_256, &c, auth, strlen(auth), proof, 32));
	uint8_t sig[32];
	char sig64[64];
	ck_assert_int_eq(brk_scram_hmac(BRK_SASL_SCRAM_SHA_256, c.server_key, 32, auth, strlen(auth),
					sig), 0);
	brk_base64_encode(sig, 32, sig64);
	ck_assert_str_eq(sig64, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
	/* a changed bit anywhere fails */
	proof[7] ^= 1;
	ck_assert(!brk_scram_verify_proof(BRK_SASL_SCRAM_SHA_256, &c, auth, strlen(auth), proof, 32));
	proof[7] ^= 1;
	ck_assert(!brk_scram_verify_proof(BRK_SASL_SCRAM_SHA_256, &c, auth, strlen(auth) - 1, proof, 32));
	ck_assert(!brk_scram_verify_proof(BRK_SASL_SCRAM_SHA_256, &c, auth, strlen(auth), proof, 31));
	ck_assert(!brk_scram_verify_proof(BRK_SASL_SCRAM_SHA_512, &c, auth, strlen(auth), proof, 32));
	/* SHA-512 key lengths */
	uint8_t s512[64];
	ck_assert_int_eq(brk_scram_salted_password(BRK_SASL_SCRAM_SHA_512, "pencil", 6, salt,
						   (size_t)sl, 4096, s512), 0);
	ck_assert_int_eq(brk_scram_credential_from_salted(BRK_SASL_SCRAM_SHA_512, s512, 64, salt,
							  (size_t)sl, 4096, &c), 0);
	ck_assert_int_eq((int)c.key_len, 64);
}
END_TEST

/* The client side (sasl_client.h) against the server's computations. */
START_TEST(test_client)
{
	brk_sasl_credentials cred = { .mechanism = BRK_SASL_PLAIN, .username = "bro,ker",
				      .password = "pw" };
	brk_sasl_client c;
	uint8_t out[BRK_SASL_CLIENT_TOKEN_MAX];
	size_t n;
	char err[200];
	brk_sasl_client_start(&c, &cred);
	ck_assert_int_eq(brk_sasl_client_step(&c, NULL, 0, out, &n, err, sizeof(err)), 1);
	ck_assert_int_eq((int)n, 11);
	ck_assert_int_eq(memcmp(out, "\0bro,ker\0pw", 11), 0);
	ck_assert_int_eq(brk_sasl_client_step(&c, (const uint8_t *)"", 0, out, &n, err, sizeof(err)), 0);

	for (int m = BRK_SASL_SCRAM_SHA_256; m <= BRK_SASL_SCRAM_SHA_512; m *= 2) {
		cred.mechanism = m;
		size_t kl = brk_scram_key_len(m);
		for (int bad = 0; bad < 3; bad++) {
			brk_sasl_client_start(&c, &cred);
			ck_assert_int_eq(brk_sasl_client_step(&c, NULL, 0, out, &n, err, sizeof(err)), 1);
			brk_scram_client_first cf;
			ck_assert_int_eq(brk_scram_parse_client_first(out, n, &cf), 0);
			ck_assert_str_eq(cf.username, "bro,ker");
			/* the server's side of RFC 5802 with a stored credential */
			uint8_t salt[16] = "0123456789abcdef", salted[64];
			brk_scram_credential sc;
			ck_assert_int_eq(brk_scram_salted_password(m, "pw", 2, salt, 16, 4096, salted), 0);
			ck_assert_int_eq(brk_scram_credential_from_salted(m, salted, kl, salt, 16, 4096, &sc), 0);
			char first_bare[700], sf[300], auth[2048];
			snprintf(first_bare, sizeof(first_bare), "%.*s", (int)cf.bare_len, cf.bare);
			snprintf(sf, sizeof(sf), "r=%.*sSERVER,s=MDEyMzQ1Njc4OWFiY2RlZg==,i=4096",
				 (int)cf.nonce_len, cf.nonce);
			ck_assert_int_eq(brk_sasl_client_step(&c, (const uint8_t *)sf, strlen(sf), out, &n,
							      err, sizeof(err)), 1);
			brk_scram_client_final fin;
			ck_assert_int_eq(brk_scram_parse_client_final(out, n, &fin), 0);
			snprintf(auth, sizeof(auth), "%s,%s,%.*s", first_bare, sf, (int)fin.without_proof_len,
				 fin.without_proof);
			ck_assert(brk_scram_verify_proof(m, &sc, auth, strlen(auth), fin.proof, fin.proof_len));
			uint8_t sig[64];
			char sig64[100], final[120];
			brk_scram_hmac(m, sc.server_key, kl, auth, strlen(auth), sig);
			if (bad == 1)
				sig[0] ^= 1;
			brk_base64_encode(sig, kl, sig64);
			snprintf(final, sizeof(final), bad == 2 ? "e=invalid-proof" : "v=%s", sig64);
			ck_assert_int_eq(brk_sasl_client_step(&c, (const uint8_t *)final, strlen(final), out,
							      &n, err, sizeof(err)), bad ? -1 : 0);
			brk_sasl_client_end(&c);
		}
		/* server-first messages the client refuses */
		const char *refused[] = { "r=short,s=c2FsdA==,i=4096", "s=c2FsdA==,i=4096",
					  "r=%sX,s=c2FsdA==,i=100", "r=%sX,s=c2FsdA==,i=99999999",
					  "r=%sX,s=*,i=4096", "m=x,r=%sX,s=c2FsdA==,i=4096",
					  "r=%sX,s=c2FsdA==,i=40x6" };
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			brk_sasl_client_start(&c, &cred);
			ck_assert_int_eq(brk_sasl_client_step(&c, NULL, 0, out, &n, err, sizeof(err)), 1);
			char sf[300];
			snprintf(sf, sizeof(sf), refused[i], c.nonce);
			ck_assert_msg(brk_sasl_client_step(&c, (const uint8_t *)sf, strlen(sf), out, &n, err,
							   sizeof(err)) == -1, "accepted %s", sf);
			brk_sasl_client_end(&c);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sasl_parsers");
	TCase *tc = tcase_create("all");
	tcase_add_test(tc, test_jaas);
	tcase_add_test(tc, test_plain);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_scram_messages);
	tcase_add_test(tc, test_credential_strings);
	tcase_add_test(tc, test_rfc7677_vector);
	tcase_add_test(tc, test_client);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
