/*
 * fuzz_pem.c - libFuzzer target: brk_pem_text (broker/security/pem.h), the
 * inline PEM config values (KIP-651) as an operator could write them.
 *
 * Input: the value (cut at a NUL). Beyond "no crash, no leak, no sanitizer
 * report": the text fits the bound the function allocates (ASan), and
 * rebuilding the rebuilt text changes nothing (it is already line-broken
 * PEM).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/pem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	char *a = brk_pem_text(buf);
	if (a && strstr(buf, "-----BEGIN ")) {
		char *b = brk_pem_text(a);
		if (b && strstr(a, "-----END ") && strcmp(a, b) != 0 && !strchr(a, ':'))
			abort();
		free(b);
	}
	free(a);
	free(buf);
	return 0;
}
