/*
 * testutil.c - helpers for the storage tests (see testutil.h).
 */
#include "storage/tests/testutil.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/batch.h"

static char tu_base[64];

void tu_begin(void)
{
	strcpy(tu_base, "/tmp/samsa-storage-XXXXXX");
	if (!mkdtemp(tu_base))
		abort();
}

void tu_end(void)
{
	tu_rmrf(tu_base);
}

void tu_tmpdir(char *out)
{
	snprintf(out, 128, "%s/t-XXXXXX", tu_base[0] ? tu_base : "/tmp");
	if (!mkdtemp(out))
		abort();
}

void tu_rmrf(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", path, de->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			tu_rmrf(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(path);
}

static size_t put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t put_varint(uint8_t *p, int64_t v)
{
	return put_uvarint(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

void tu_batch_fix_crc(uint8_t *b)
{
	uint32_t len = (uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11];
	size_t size = len + 12;
	be32(b + PROTO_BATCH_OFF_CRC, proto_crc32c(0, b + PROTO_BATCH_OFF_ATTRIBUTES, size - PROTO_BATCH_OFF_ATTRIBUTES));
}

size_t tu_batch(uint8_t *out, size_t cap, const tu_batch_opts *o)
{
	size_t need = PROTO_BATCH_HEADER_SIZE + (size_t)o->nrecords * (size_t)(o->value_size + 40);
	if (need > cap)
		abort();
	memset(out, 0, PROTO_BATCH_HEADER_SIZE);
	size_t pos = PROTO_BATCH_HEADER_SIZE;
	int64_t max_ts = -1;
	for (int i = 0; i < o->nrecords; i++) {
		uint8_t rec[64];
		size_t r = 0;
		int64_t ts_delta = o->base_ts < 0 ? 0 : (int64_t)i * o->ts_step;
		if (o->base_ts >= 0 && o->base_ts + ts_delta > max_ts)
			max_ts = o->base_ts + ts_delta;
		rec[r++] = 0; /* attributes */
		r += put_varint(rec + r, ts_delta);
		r += put_varint(rec + r, i);
		r += put_varint(rec + r, -1); /* null key */
		r += put_varint(rec + r, o->value_size);
		size_t body = r + (size_t)o->value_size + 1; /* + headers count */
		pos += put_varint(out + pos, (int64_t)body);
		memcpy(out + pos, rec, r);
		pos += r;
		memset(out + pos, 'a' + i % 26, (size_t)o->value_size);
		pos += (size_t)o->value_size;
		out[pos++] = 0; /* no headers */
	}
	be64(out + PROTO_BATCH_OFF_BASE_OFFSET, 0);
	be32(out + PROTO_BATCH_OFF_LENGTH, (uint32_t)(pos - 12));
	be32(out + PROTO_BATCH_OFF_LEADER_EPOCH, 0xffffffffu);
	out[PROTO_BATCH_OFF_MAGIC] = 2;
	uint16_t attrs = o->log_append_time ? PROTO_ATTR_TIMESTAMP_TYPE : 0;
	out[PROTO_BATCH_OFF_ATTRIBUTES] = (uint8_t)(attrs >> 8);
	out[PROTO_BATCH_OFF_ATTRIBUTES + 1] = (uint8_t)attrs;
	be32(out + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(o->nrecords - 1));
	be64(out + PROTO_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)o->base_ts);
	be64(out + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
	be64(out + PROTO_BATCH_OFF_PRODUCER_ID, UINT64_MAX);
	out[PROTO_BATCH_OFF_PRODUCER_EPOCH] = 0xff;
	out[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = 0xff;
	be32(out + PROTO_BATCH_OFF_BASE_SEQUENCE, 0xffffffffu);
	be32(out + PROTO_BATCH_OFF_RECORDS_COUNT, (uint32_t)o->nrecords);
	tu_batch_fix_crc(out);
	return pos;
}

int64_t tu_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

void tu_seg_path(char *out, size_t cap, const char *dir, int64_t base, const char *suffix)
{
	snprintf(out, cap, "%s/%020" PRId64 "%s", dir, base, suffix);
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return b;
}

int tu_count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	size_t sl = strlen(suffix);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l >= sl && strcmp(de->d_name + l - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}
