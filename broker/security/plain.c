/*
 * plain.c - the SASL/PLAIN client message (plain.h).
 */
#include "broker/security/plain.h"

#include <stdio.h>
#include <string.h>

int brk_plain_parse(const uint8_t *token, size_t len, brk_plain_token *out, int *bad_format,
		    char *msg, size_t msgsize)
{
	const char *s = (const char *)token;
	const char *part[4];
	size_t plen[4];
	int n = 0;
	size_t start = 0;
	*bad_format = 0;
	/* Kafka's extractTokens: up to four cuts at NUL, the rest of the
	 * token is the last part. */
	for (int i = 0; i < 4; i++) {
		const char *nul = start < len ? memchr(s + start, 0, len - start) : NULL;
		part[n] = s + start;
		if (!nul) {
			plen[n++] = len - start;
			break;
		}
		plen[n++] = (size_t)(nul - (s + start));
		start = (size_t)(nul - s) + 1;
	}
	if (n != 3) {
		*bad_format = 1;
		snprintf(msg, msgsize, "Invalid SASL/PLAIN response: expected 3 tokens, got %d", n);
		return -1;
	}
	out->authzid = part[0];
	out->authzid_len = plen[0];
	out->username = part[1];
	out->username_len = plen[1];
	out->password = part[2];
	out->password_len = plen[2];
	if (out->username_len == 0) {
		snprintf(msg, msgsize, "Authentication failed: username not specified");
		return -1;
	}
	if (out->password_len == 0) {
		snprintf(msg, msgsize, "Authentication failed: password not specified");
		return -1;
	}
	if (out->authzid_len && (out->authzid_len != out->username_len ||
				 memcmp(out->authzid, out->username, out->username_len) != 0)) {
		snprintf(msg, msgsize, "Authentication failed: Client requested an authorization id "
				       "that is different from username");
		return -1;
	}
	return 0;
}
