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

#include <check.h>

#include "protocol/batch.h"
#include "storage/log.h"

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

void tu_batch_set_producer(uint8_t *b, int64_t pid, int16_t epoch, int32_t seq, bool txn)
{
	be64(b + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)pid);
	b[PROTO_BATCH_OFF_PRODUCER_EPOCH] = (uint8_t)((uint16_t)epoch >> 8);
	b[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = (uint8_t)epoch;
	be32(b + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)seq);
	if (txn)
		b[PROTO_BATCH_OFF_ATTRIBUTES + 1] |= PROTO_ATTR_TRANSACTIONAL;
	tu_batch_fix_crc(b);
}

static int collect_aborted(void *arg, const log_aborted_txn *a)
{
	tu_log_state *st = arg;
	ck_assert_int_lt(st->naborted, TU_PRODUCERS);
	st->aborted[st->naborted].producer_id = a->producer_id;
	st->aborted[st->naborted].first_offset = a->first_offset;
	st->aborted[st->naborted].last_offset = a->last_offset;
	st->aborted[st->naborted].last_stable_offset = a->last_stable_offset;
	st->naborted++;
	return 0;
}

void tu_log_state_get(log_partition *lp, tu_log_state *st)
{
	memset(st, 0, sizeof *st);
	st->start = log_start_offset(lp);
	st->leo = log_end_offset(lp);
	st->hw = log_high_watermark(lp);
	st->lso = log_last_stable_offset(lp);
	st->latest_epoch = log_latest_epoch(lp);
	for (int e = -1; e < TU_EPOCHS - 1; e++)
		log_end_offset_for_epoch(lp, e, &st->end_epoch[e + 1], &st->end_offset[e + 1]);
	size_t cursor = 0;
	const log_producer_entry *e;
	while ((e = log_producer_next(lp, &cursor))) {
		ck_assert_uint_lt(st->nproducers, TU_PRODUCERS);
		size_t i = st->nproducers++;
		while (i > 0 && st->producers[i - 1].id > e->producer_id) {
			st->producers[i] = st->producers[i - 1];
			i--;
		}
		const log_producer_batch *b = log_pentry_last(e);
		st->producers[i].id = e->producer_id;
		st->producers[i].epoch = e->epoch;
		st->producers[i].coordinator_epoch = e->coordinator_epoch;
		st->producers[i].last_ts = e->last_ts;
		st->producers[i].txn_first_offset = e->txn_first_offset;
		st->producers[i].first_seq = b ? b->first_seq : -1;
		st->producers[i].last_seq = b ? b->last_seq : -1;
		st->producers[i].last_offset = b ? b->last_offset : -1;
		st->producers[i].offset_delta = b ? b->offset_delta : -1;
	}
	ck_assert_int_ge(log_aborted_txns(lp, st->start, st->leo, collect_aborted, st), 0);
	size_t cap = 0;
	for (int64_t off = st->start; off < st->leo;) {
		log_read_result r;
		ck_assert_int_eq(log_read(lp, off, INT64_MAX, 1 << 20, true, &r), 0);
		if (r.len == 0)
			break;
		if (st->nbytes + (size_t)r.len > cap) {
			cap = (st->nbytes + (size_t)r.len) * 2;
			st->bytes = realloc(st->bytes, cap);
			ck_assert_ptr_nonnull(st->bytes);
		}
		ck_assert_int_eq(pread(r.fd, st->bytes + st->nbytes, (size_t)r.len, r.file_pos), r.len);
		st->nbytes += (size_t)r.len;
		log_segment_release(r.segment);
		ck_assert_int_gt(r.next_offset, off);
		off = r.next_offset;
	}
}

void tu_log_state_free(tu_log_state *st)
{
	free(st->bytes);
	st->bytes = NULL;
}

void tu_log_state_assert_eq(const tu_log_state *a, const tu_log_state *b)
{
	ck_assert_int_eq(a->start, b->start);
	ck_assert_int_eq(a->leo, b->leo);
	ck_assert_int_eq(a->hw, b->hw);
	ck_assert_int_eq(a->lso, b->lso);
	ck_assert_int_eq(a->latest_epoch, b->latest_epoch);
	for (int e = 0; e < TU_EPOCHS; e++) {
		ck_assert_int_eq(a->end_epoch[e], b->end_epoch[e]);
		ck_assert_int_eq(a->end_offset[e], b->end_offset[e]);
	}
	ck_assert_uint_eq(a->nproducers, b->nproducers);
	for (size_t i = 0; i < a->nproducers; i++) {
		ck_assert_int_eq(a->producers[i].id, b->producers[i].id);
		ck_assert_int_eq(a->producers[i].epoch, b->producers[i].epoch);
		ck_assert_int_eq(a->producers[i].coordinator_epoch, b->producers[i].coordinator_epoch);
		ck_assert_int_eq(a->producers[i].last_ts, b->producers[i].last_ts);
		ck_assert_int_eq(a->producers[i].txn_first_offset, b->producers[i].txn_first_offset);
		ck_assert_int_eq(a->producers[i].first_seq, b->producers[i].first_seq);
		ck_assert_int_eq(a->producers[i].last_seq, b->producers[i].last_seq);
		ck_assert_int_eq(a->producers[i].last_offset, b->producers[i].last_offset);
		ck_assert_int_eq(a->producers[i].offset_delta, b->producers[i].offset_delta);
	}
	ck_assert_int_eq(a->naborted, b->naborted);
	for (int i = 0; i < a->naborted; i++) {
		ck_assert_int_eq(a->aborted[i].producer_id, b->aborted[i].producer_id);
		ck_assert_int_eq(a->aborted[i].first_offset, b->aborted[i].first_offset);
		ck_assert_int_eq(a->aborted[i].last_offset, b->aborted[i].last_offset);
		ck_assert_int_eq(a->aborted[i].last_stable_offset, b->aborted[i].last_stable_offset);
	}
	ck_assert_uint_eq(a->nbytes, b->nbytes);
	if (a->nbytes > 0)
		ck_assert(memcmp(a->bytes, b->bytes, a->nbytes) == 0);
}
