/*
 * logcheck.c - full verification of a partition directory (logcheck.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "compat-tests/logcheck.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/kmsg.h"

/* Record batch v2 header fields (KIP-98). */
#define B_LEN 8
#define B_MAGIC 16
#define B_CRC 17
#define B_ATTR 21
#define B_LOD 23
#define B_MAXTS 35
#define B_COUNT 57
#define B_HEADER 61
#define B_MIN_LEN 49 /* batchLength of a batch without records */

typedef struct lc_batch {
	size_t pos;
	int64_t last;   /* last offset */
	int64_t max_ts; /* the header's max timestamp */
} lc_batch;

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Read a whole file; *len set. NULL with errno on failure (ENOENT too). */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *b = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *nb = realloc(b, cap);
			if (!nb) {
				free(b);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			b = nb;
		}
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(b);
		errno = EIO;
		return NULL;
	}
	*len = n;
	return b;
}

/* The scan behind lc_scan_log; *batches (may be NULL) gets a malloc'd array
 * of s->batches entries. */
static int scan(const char *path, int64_t expect_first, bool allow_gaps, lc_segment *s,
		lc_batch **batches)
{
	memset(s, 0, sizeof(*s));
	s->first_base = -1;
	s->max_timestamp = -1;
	s->next_offset = expect_first;
	if (batches)
		*batches = NULL;
	size_t len;
	uint8_t *b = slurp(path, &len);
	if (!b) {
		snprintf(s->error, sizeof(s->error), "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	lc_batch *v = NULL;
	size_t cap = 0, pos = 0;
	int64_t expect = expect_first;
	while (pos < len && !s->error[0]) {
		if (len - pos < B_HEADER) {
			snprintf(s->error, sizeof(s->error),
				 "%s: %zu bytes at position %zu, less than a batch header", path,
				 len - pos, pos);
			break;
		}
		const uint8_t *h = b + pos;
		int64_t base = (int64_t)be64(h);
		uint32_t blen = be32(h + B_LEN);
		uint32_t lod = be32(h + B_LOD);
		int32_t count = (int32_t)be32(h + B_COUNT);
		if (blen < B_MIN_LEN || blen > len - pos - 12)
			snprintf(s->error, sizeof(s->error),
				 "%s: batch at position %zu: length %" PRIu32 " does not fit the %zu bytes left",
				 path, pos, blen, len - pos - 12);
		else if (h[B_MAGIC] != 2)
			snprintf(s->error, sizeof(s->error), "%s: batch at position %zu: magic %d", path,
				 pos, h[B_MAGIC]);
		else if (k_crc32c(h + B_ATTR, 12 + blen - B_ATTR) != be32(h + B_CRC))
			snprintf(s->error, sizeof(s->error), "%s: batch at position %zu (base offset %" PRId64
				 "): bad CRC32C", path, pos, base);
		else if (lod > INT32_MAX || base < 0)
			snprintf(s->error, sizeof(s->error),
				 "%s: batch at position %zu: base offset %" PRId64 ", last offset delta %" PRIu32,
				 path, pos, base, lod);
		else if (expect >= 0 && (allow_gaps ? base < expect : base != expect))
			snprintf(s->error, sizeof(s->error),
				 "%s: batch at position %zu has base offset %" PRId64 ", expected %s%" PRId64,
				 path, pos, base, allow_gaps ? "at least " : "", expect);
		else if (count < 0 || (int64_t)count > (int64_t)lod + 1 ||
			 (!allow_gaps && (int64_t)count != (int64_t)lod + 1))
			snprintf(s->error, sizeof(s->error),
				 "%s: batch at position %zu (base offset %" PRId64 "): %" PRId32
				 " records for last offset delta %" PRIu32, path, pos, base, count, lod);
		if (s->error[0])
			break;
		if (batches) {
			if ((size_t)s->batches == cap) {
				cap = cap ? cap * 2 : 256;
				lc_batch *nv = realloc(v, cap * sizeof(*nv));
				if (!nv) {
					snprintf(s->error, sizeof(s->error), "%s: out of memory", path);
					break;
				}
				v = nv;
			}
			v[s->batches] = (lc_batch){.pos = pos,
						   .last = base + (int64_t)lod,
						   .max_ts = (int64_t)be64(h + B_MAXTS)};
		}
		if (s->first_base < 0)
			s->first_base = base;
		s->batches++;
		s->last_base = base;
		s->last_pos = pos;
		int64_t mts = (int64_t)be64(h + B_MAXTS);
		if (mts > s->max_timestamp)
			s->max_timestamp = mts;
		expect = base + (int64_t)lod + 1;
		s->next_offset = expect;
		pos += 12 + (size_t)blen;
	}
	s->end = pos;
	free(b);
	if (batches)
		*batches = v;
	else
		free(v);
	return s->error[0] ? -1 : 0;
}

int lc_scan_log(const char *path, int64_t expect_first, bool allow_gaps, lc_segment *s)
{
	return scan(path, expect_first, allow_gaps, s, NULL);
}

/* bsearch(3) orders: batches are sorted by position and by last offset. */
static int by_pos(const void *key, const void *elem)
{
	size_t pos = *(const size_t *)key, at = ((const lc_batch *)elem)->pos;
	return pos < at ? -1 : pos > at;
}

static int by_last(const void *key, const void *elem)
{
	int64_t last = *(const int64_t *)key, at = ((const lc_batch *)elem)->last;
	return last < at ? -1 : last > at;
}

/* Check base.index and base.timeindex against the batches of the segment. */
static int check_indexes(const char *dir, const char *stem, int64_t base, const lc_batch *v, int n,
			 bool active, int64_t seg_max_ts, char *err, size_t errsz)
{
	char path[PATH_MAX];
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/%s.index", dir, stem);
	uint8_t *ix = slurp(path, &len);
	if (!ix && errno != ENOENT) {
		snprintf(err, errsz, "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	if (len % 8 != 0) {
		snprintf(err, errsz, "%s: %zu bytes, not a whole number of 8-byte entries", path, len);
		rc = -1;
	}
	int64_t prev_rel = -1, prev_pos = -1;
	for (size_t i = 0; rc == 0 && i + 8 <= len; i += 8) {
		int64_t rel = (int32_t)be32(ix + i), pos = (int32_t)be32(ix + i + 4);
		size_t upos = (size_t)pos;
		const lc_batch *b = pos >= 0 && n > 0 ? bsearch(&upos, v, (size_t)n, sizeof(*v), by_pos) : NULL;
		if (rel <= prev_rel || pos <= prev_pos) {
			snprintf(err, errsz,
				 "%s: entry %zu (%" PRId64 ", %" PRId64 ") does not increase after (%" PRId64
				 ", %" PRId64 ")", path, i / 8, rel, pos, prev_rel, prev_pos);
			rc = -1;
		} else if (!b) {
			snprintf(err, errsz, "%s: entry %zu (%" PRId64 ", %" PRId64 "): no batch starts at position %" PRId64,
				 path, i / 8, rel, pos, pos);
			rc = -1;
		} else if (b->last != base + rel) {
			snprintf(err, errsz,
				 "%s: entry %zu (%" PRId64 ", %" PRId64 "): the batch there ends at offset %" PRId64
				 ", not %" PRId64, path, i / 8, rel, pos, b->last, base + rel);
			rc = -1;
		}
		prev_rel = rel;
		prev_pos = pos;
	}
	free(ix);
	if (rc < 0)
		return rc;

	snprintf(path, sizeof(path), "%s/%s.timeindex", dir, stem);
	len = 0;
	uint8_t *ti = slurp(path, &len);
	if (!ti && errno != ENOENT) {
		snprintf(err, errsz, "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	if (len % 12 != 0) {
		snprintf(err, errsz, "%s: %zu bytes, not a whole number of 12-byte entries", path, len);
		rc = -1;
	}
	int64_t prev_ts = INT64_MIN;
	prev_rel = -1;
	int64_t last_ts = -1;
	for (size_t i = 0; rc == 0 && i + 12 <= len; i += 12) {
		int64_t ts = (int64_t)be64(ti + i), rel = (int32_t)be32(ti + i + 8);
		int64_t last = base + rel;
		const lc_batch *b = n > 0 ? bsearch(&last, v, (size_t)n, sizeof(*v), by_last) : NULL;
		int k = b ? (int)(b - v) : -1;
		if (ts <= prev_ts || rel < prev_rel) {
			snprintf(err, errsz,
				 "%s: entry %zu (%" PRId64 ", %" PRId64 ") does not increase after (%" PRId64
				 ", %" PRId64 ")", path, i / 12, ts, rel, prev_ts, prev_rel);
			rc = -1;
		} else if (!b) {
			snprintf(err, errsz, "%s: entry %zu (%" PRId64 ", %" PRId64 "): no batch ends at offset %" PRId64,
				 path, i / 12, ts, rel, base + rel);
			rc = -1;
		} else if (b->max_ts != ts) {
			snprintf(err, errsz,
				 "%s: entry %zu (%" PRId64 ", %" PRId64 "): the batch ending there has max timestamp %" PRId64,
				 path, i / 12, ts, rel, b->max_ts);
			rc = -1;
		} else {
			for (int j = 0; j < k && rc == 0; j++)
				if (v[j].max_ts > ts) {
					snprintf(err, errsz,
						 "%s: entry %zu (%" PRId64 ", %" PRId64 "): an earlier batch (offset %" PRId64
						 ") has the larger timestamp %" PRId64, path, i / 12, ts, rel, v[j].last,
						 v[j].max_ts);
					rc = -1;
				}
		}
		prev_ts = ts;
		prev_rel = rel;
		last_ts = ts;
	}
	free(ti);
	if (rc == 0 && !active && seg_max_ts >= 0 && last_ts != seg_max_ts) {
		snprintf(err, errsz, "%s: last entry's timestamp %" PRId64 " is not the rolled segment's largest %" PRId64,
			 path, last_ts, seg_max_ts);
		rc = -1;
	}
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

int lc_check_dir(const char *dir, const lc_options *opt, lc_result *r)
{
	lc_options o = opt ? *opt : (lc_options){.allow_gaps = false, .first = -1};
	memset(r, 0, sizeof(*r));
	r->first_offset = -1;
	r->next_offset = -1;
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(r->error, sizeof(r->error), "%s: cannot open: %s", dir, strerror(errno));
		return -1;
	}
	char (*names)[32] = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l != 24 || strcmp(e->d_name + 20, ".log") != 0 ||
		    strspn(e->d_name, "0123456789") != 20)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char(*nn)[32] = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				closedir(d);
				free(names);
				snprintf(r->error, sizeof(r->error), "%s: out of memory", dir);
				return -1;
			}
			names = nn;
		}
		memcpy(names[n++], e->d_name, l + 1); /* 24 characters and the NUL */
	}
	closedir(d);
	if (n == 0) {
		free(names);
		snprintf(r->error, sizeof(r->error), "%s: no segment", dir);
		return -1;
	}
	qsort(names, n, sizeof(*names), cmp_name);
	int64_t expect = o.first;
	for (size_t i = 0; i < n && !r->error[0]; i++) {
		char path[PATH_MAX], stem[21];
		memcpy(stem, names[i], 20);
		stem[20] = '\0';
		int64_t named = strtoll(stem, NULL, 10);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		lc_segment s;
		lc_batch *v = NULL;
		/* the first segment's name is the log start, not necessarily its
		 * first batch (DeleteRecords, compaction) */
		if (scan(path, expect, o.allow_gaps, &s, &v) < 0) {
			snprintf(r->error, sizeof(r->error), "%s", s.error);
		} else if (s.batches == 0 ? (expect >= 0 && named != expect)
					  : (o.allow_gaps ? named > s.first_base || (expect >= 0 && named < expect)
							  : named != s.first_base)) {
			snprintf(r->error, sizeof(r->error),
				 "%s: named %" PRId64 " but its first batch has base offset %" PRId64
				 " (previous segment ends before %" PRId64 ")",
				 path, named, s.first_base, expect);
		} else if (check_indexes(dir, stem, named, v, s.batches, i + 1 == n, s.max_timestamp,
					 r->error, sizeof(r->error)) == 0) {
			r->segments++;
			r->batches += s.batches;
			if (r->first_offset < 0 && s.batches > 0)
				r->first_offset = s.first_base;
			expect = s.batches > 0 ? s.next_offset : named;
			r->next_offset = expect;
		}
		free(v);
	}
	free(names);
	return r->error[0] ? -1 : 0;
}
