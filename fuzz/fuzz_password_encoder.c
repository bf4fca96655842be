/*
 * fuzz_password_encoder.c - libFuzzer target: brk_password_decode_bounded
 * (broker/security/password_encoder.h), the stored form of a dynamic
 * password as ZooKeeper or the metadata file could hold it (written by
 * anyone with write access there, or by a Kafka broker).
 *
 * Input: the stored value (any bytes, NULs included), decoded with the
 * secret the seeds were made with and at most 1,024 iterations (the
 * seeds, made with Java's JCE as Kafka's encoder uses it, have 1,024), so
 * the fuzzer reaches the ciphers. Beyond "no crash, no leak, no sanitizer
 * report": a password decoded is UTF-8 without a NUL, and encoding it
 * again and decoding that gives it back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/password_encoder.h"

#define SECRET "s3cret"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char err[256];
	char *pw = brk_password_decode_bounded(SECRET, (const char *)data, size, 1024, err,
					       sizeof(err));
	if (!pw)
		return 0;
	brk_password_encoder e = { .secret = SECRET, .iterations = 1024 };
	char *enc = brk_password_encode(&e, pw, err, sizeof(err));
	if (!enc)
		abort(); /* a decoded password is UTF-8 without a NUL: it encodes */
	char *back = brk_password_decode_bounded(SECRET, enc, strlen(enc), 1024, err, sizeof(err));
	if (!back || strcmp(back, pw) != 0)
		abort();
	brk_password_free(back);
	free(enc);
	brk_password_free(pw);
	return 0;
}
