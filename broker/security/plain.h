/*
 * plain.h - the SASL/PLAIN client message (RFC 4616), as Kafka's
 * PlainSaslServer splits it: [authzid] NUL authcid NUL passwd, exactly three
 * parts (a fourth NUL is "expected 3 tokens, got 4").
 *
 * Pure: fuzzed by fuzz/fuzz_sasl_plain.c.
 */
#ifndef SAMSA_BROKER_SECURITY_PLAIN_H
#define SAMSA_BROKER_SECURITY_PLAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct brk_plain_token {
	const char *authzid, *username, *password; /* views into the token */
	size_t authzid_len, username_len, password_len;
} brk_plain_token;

/*
 * Split token (len bytes). Returns 0, or -1 with Kafka's message in msg
 * (msgsize bytes): "Invalid SASL/PLAIN response: expected 3 tokens, got N",
 * "Authentication failed: username not specified", "... password not
 * specified", "... Client requested an authorization id that is different
 * from username". *bad_format is set when the token did not split (Kafka's
 * SaslException, answered with the generic failure message) rather than
 * being refused (its SaslAuthenticationException, whose message is sent).
 */
int brk_plain_parse(const uint8_t *token, size_t len, brk_plain_token *out, int *bad_format,
		    char *msg, size_t msgsize);

#endif
