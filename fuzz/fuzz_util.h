/*
 * fuzz_util.h - helpers shared by the libFuzzer targets (fuzz/).
 *
 * fuzz_fix_crcs: walk the record batches at p (len bytes, back to back as in
 * a Produce partition or a .log segment) and rewrite each complete batch's
 * CRC32C (over attributes..end, Kafka's DefaultRecordBatch), so mutated
 * inputs get past the CRC check and reach the code behind it. Stops at the
 * first batch whose length does not fit.
 * fuzz_request_ops: the generated codec of API key's request, or NULL.
 * fuzz_empty_dir: remove everything below dir (dir itself stays).
 * Header-only, static functions.
 */
#ifndef SAMSA_FUZZ_UTIL_H
#define SAMSA_FUZZ_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "protocol/gen/messages_fill.h"

static inline uint32_t fuzz_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void fuzz_fix_crcs(uint8_t *p, size_t len)
{
	size_t pos = 0;
	while (len - pos >= PROTO_BATCH_HEADER_SIZE) {
		int32_t blen = (int32_t)fuzz_be32(p + pos + PROTO_BATCH_OFF_LENGTH);
		if (blen < PROTO_BATCH_HEADER_SIZE - PROTO_BATCH_LOG_OVERHEAD ||
		    (size_t)blen > len - pos - PROTO_BATCH_LOG_OVERHEAD)
			return;
		size_t end = pos + PROTO_BATCH_LOG_OVERHEAD + (size_t)blen;
		uint32_t crc = proto_crc32c(0, p + pos + PROTO_BATCH_OFF_ATTRIBUTES,
					    end - pos - PROTO_BATCH_OFF_ATTRIBUTES);
		uint8_t *c = p + pos + PROTO_BATCH_OFF_CRC;
		c[0] = (uint8_t)(crc >> 24);
		c[1] = (uint8_t)(crc >> 16);
		c[2] = (uint8_t)(crc >> 8);
		c[3] = (uint8_t)crc;
		pos = end;
	}
}

static inline const proto_msg_ops *fuzz_request_ops(int16_t key)
{
	int n;
	const proto_msg_ops *all = proto_msg_ops_all(&n);
	for (int i = 0; i < n; i++)
		if (all[i].api_key == key && !all[i].response)
			return &all[i];
	return NULL;
}

static inline void fuzz_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[512];
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue; /* a truncated path would name another file */
		if (unlink(path) != 0 && errno == EISDIR) {
			fuzz_empty_dir(path);
			rmdir(path);
		}
	}
	closedir(d);
}

#endif
