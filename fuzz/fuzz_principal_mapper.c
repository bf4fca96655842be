/*
 * fuzz_principal_mapper.c - libFuzzer target: ssl.principal.mapping.rules
 * (broker/security/principal_mapper.h), rules and distinguished names as an
 * operator's typo or a client certificate's subject could make them.
 *
 * Input: the rules, a NUL, the distinguished name (no NUL: the rules alone,
 * mapped against a fixed name). Beyond "no crash, no leak, no sanitizer
 * report": a mapped name fits its buffer and is NUL-terminated, and a
 * mapper that accepted rules maps the same name the same way twice.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/principal_mapper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *rules = buf;
	size_t rl = strlen(rules);
	const char *dn = rl < size ? buf + rl + 1 : "CN=alice,OU=eng,O=acme,C=US";
	char err[256];
	brk_ssl_mapper *m = brk_ssl_mapper_new(rules, err, sizeof(err));
	if (m) {
		char a[128], b[128];
		memset(a, 'x', sizeof(a));
		int ra = brk_ssl_mapper_map(m, dn, a, sizeof(a));
		int rb = brk_ssl_mapper_map(m, dn, b, sizeof(b));
		if (ra != rb || (ra != 0 && ra != -ENOENT && ra != -ENAMETOOLONG))
			abort();
		if (ra == 0 && (memchr(a, '\0', sizeof(a)) == NULL || strcmp(a, b) != 0))
			abort();
		brk_ssl_mapper_free(m);
	} else if (!memchr(err, '\0', sizeof(err))) {
		abort();
	}
	free(buf);
	return 0;
}
