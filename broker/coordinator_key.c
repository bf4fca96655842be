/*
 * coordinator_key.c - the internal topic partition of a coordinator key
 * (coordinator_key.h).
 */
#include "broker/coordinator_key.h"

int32_t brk_coordinator_partition(const char *key, int32_t len, int32_t npartitions)
{
	uint32_t h = 0;
	const unsigned char *p = (const unsigned char *)key;
	int32_t i = 0;
	while (i < len) {
		uint32_t cp;
		unsigned char c = p[i];
		int n;
		if (c < 0x80) {
			cp = c;
			n = 1;
		} else if ((c & 0xe0) == 0xc0 && i + 1 < len) {
			cp = (uint32_t)(c & 0x1f) << 6 | (p[i + 1] & 0x3f);
			n = 2;
		} else if ((c & 0xf0) == 0xe0 && i + 2 < len) {
			cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 |
			     (p[i + 2] & 0x3f);
			n = 3;
		} else if ((c & 0xf8) == 0xf0 && i + 3 < len) {
			cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 |
			     (uint32_t)(p[i + 2] & 0x3f) << 6 | (p[i + 3] & 0x3f);
			n = 4;
		} else {
			cp = 0xfffd; /* malformed: Java's replacement character */
			n = 1;
		}
		if (cp >= 0x10000) { /* a surrogate pair in Java's String */
			cp -= 0x10000;
			h = 31 * h + (0xd800 + (cp >> 10));
			h = 31 * h + (0xdc00 + (cp & 0x3ff));
		} else {
			h = 31 * h + cp;
		}
		i += n;
	}
	if (npartitions <= 0)
		return 0;
	/* Kafka's Utils.abs: Integer.MIN_VALUE maps to 0. */
	int32_t hv = (int32_t)h;
	int32_t a = hv == INT32_MIN ? 0 : (hv < 0 ? -hv : hv);
	return a % npartitions;
}
