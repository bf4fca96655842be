/*
 * scram.h - SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) for the
 * server side, as Kafka's ScramSaslServer, ScramMessages, ScramFormatter and
 * ScramCredentialUtils do it; OpenSSL does the cryptography.
 *
 * Messages (Kafka's grammar, ASCII only):
 *   client-first  n,[a=<saslname>],[m=<value>,]n=<saslname>,r=<nonce>[,<ext>=<value>]...
 *   server-first  r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
 *   client-final  c=<base64>,r=<nonce>[,<ext>=<value>]...,p=<base64 proof>
 *   server-final  v=<base64 server signature>
 * A saslname escapes ',' as =2C and '=' as =3D. The only extension Kafka
 * knows is tokenauth (delegation tokens, not served here: tokenauth=true
 * fails); others are ignored.
 *
 * Credential string (Kafka's ScramCredentialUtils, stored per mechanism in
 * /config/users/<user>):
 *   salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>
 *
 * Parsers are pure and fuzzed (fuzz/fuzz_scram.c); a parse failure is -1.
 */
#ifndef SAMSA_BROKER_SECURITY_SCRAM_H
#define SAMSA_BROKER_SECURITY_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/security/sasl.h"

/* Kafka's ScramMechanism bounds on iterations, both mechanisms. */
#define BRK_SCRAM_MIN_ITERATIONS 4096
#define BRK_SCRAM_MAX_ITERATIONS 16384

#define BRK_SCRAM_MAX_USER 256 /* bytes of a user name with the NUL */

typedef struct brk_scram_client_first {
	const char *authzid;       /* view, as sent (not unescaped); len 0: none */
	size_t authzid_len;
	char username[BRK_SCRAM_MAX_USER]; /* the saslname unescaped */
	const char *nonce;         /* view */
	size_t nonce_len;
	const char *bare;          /* client-first-message-bare: from "n=" to the end */
	size_t bare_len;
	bool token_auth;           /* extension tokenauth=true (any case) */
} brk_scram_client_first;

int brk_scram_parse_client_first(const uint8_t *msg, size_t len, brk_scram_client_first *out);

typedef struct brk_scram_client_final {
	const char *without_proof; /* view: the message up to ",p=" */
	size_t without_proof_len;
	const char *nonce;         /* view */
	size_t nonce_len;
	uint8_t proof[BRK_SCRAM_MAX_KEY];
	size_t proof_len;          /* decoded; longer than BRK_SCRAM_MAX_KEY: -1 */
} brk_scram_client_final;

int brk_scram_parse_client_final(const uint8_t *msg, size_t len, brk_scram_client_final *out);

/* Parse a credential string (len bytes). Returns 0, or -1 when it is not
 * one (Kafka's "Credentials not valid"). */
int brk_scram_credential_parse(const char *s, size_t len, brk_scram_credential *out);

/* Format c as a credential string into out (outsize bytes, at least 512).
 * Returns the length, or -1 when it does not fit. */
int brk_scram_credential_format(const brk_scram_credential *c, char *out, size_t outsize);

/* The digest length of mechanism (BRK_SASL_SCRAM_*): 32 or 64; 0 if not
 * SCRAM. */
size_t brk_scram_key_len(int mechanism);

/* Build a credential from SaltedPassword = Hi(password, salt, i) (what
 * AlterUserScramCredentials carries): StoredKey = H(HMAC(sp, "Client
 * Key")), ServerKey = HMAC(sp, "Server Key"). Returns 0 or -1. */
int brk_scram_credential_from_salted(int mechanism, const uint8_t *salted, size_t salted_len,
				     const uint8_t *salt, size_t salt_len, int32_t iterations,
				     brk_scram_credential *out);

/* Hi(password, salt, iterations) (PBKDF2 with HMAC-H) into out (key_len
 * bytes). Returns 0 or -1. */
int brk_scram_salted_password(int mechanism, const char *password, size_t password_len,
			      const uint8_t *salt, size_t salt_len, int32_t iterations,
			      uint8_t *out);

/* HMAC-H(key, data) into out (key_len bytes). Returns 0 or -1. */
int brk_scram_hmac(int mechanism, const uint8_t *key, size_t key_len, const void *data,
		   size_t len, uint8_t *out);

/* H(data) into out. Returns 0 or -1. */
int brk_scram_hash(int mechanism, const void *data, size_t len, uint8_t *out);

/*
 * Verify a client proof against credential c over auth_message (RFC 5802:
 * H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey, compared in
 * constant time). Returns true when it holds.
 */
bool brk_scram_verify_proof(int mechanism, const brk_scram_credential *c,
			    const char *auth_message, size_t auth_len, const uint8_t *proof,
			    size_t proof_len);

/* Base64 (RFC 4648, with padding). encode returns the length written (out
 * needs 4 * ceil(len / 3) + 1 bytes, NUL-terminated). decode: strict
 * (Kafka's message grammar: padded, whole quanta) or lenient about missing
 * padding (Java's decoder, for stored credentials); returns the decoded
 * length or -1 (bad input, or more than outsize bytes). */
size_t brk_base64_encode(const uint8_t *in, size_t len, char *out);
long brk_base64_decode(const char *in, size_t len, bool strict, uint8_t *out, size_t outsize);

#endif
