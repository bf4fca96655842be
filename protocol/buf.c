/*
 * buf.c - bounded reader, growable writer with file chunks, and the request
 * arena declared in buf.h. Encodings follow the Kafka protocol guide
 * ("Protocol Primitive Types") and KIP-482 (compact and tagged forms);
 * varints follow Kafka's ByteUtils (LEB128, zigzag for the signed forms).
 */
#include "protocol/buf.h"

#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */

struct proto_arena_chunk {
	proto_arena_chunk *next;
	size_t size; /* usable bytes in data[] */
	size_t used;
	_Alignas(8) uint8_t data[];
};

#define ARENA_MIN_CHUNK 4096u

void proto_arena_init(proto_arena *a, size_t max_bytes)
{
	a->head = NULL;
	a->max_bytes = max_bytes;
	a->total = 0;
}

void *proto_arena_alloc(proto_arena *a, size_t n)
{
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / 2)
		return NULL;
	size_t need = (n + 7u) & ~(size_t)7u;
	proto_arena_chunk *c = a->head;
	if (c == NULL || c->size - c->used < need) {
		size_t size = ARENA_MIN_CHUNK;
		if (c != NULL && c->size * 2 > size)
			size = c->size * 2;
		while (size < need)
			size *= 2;
		/* Never hold more than the cap: shrink the chunk to what is
		 * left under it, refuse when even the request does not fit. */
		if (a->max_bytes != 0) {
			if (a->total >= a->max_bytes || a->max_bytes - a->total < need)
				return NULL;
			if (size > a->max_bytes - a->total)
				size = a->max_bytes - a->total;
		}
		c = malloc(sizeof(*c) + size);
		if (c == NULL)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->total += size;
	}
	void *p = c->data + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
}

void proto_arena_reset(proto_arena *a)
{
	proto_arena_reset_trim(a, SIZE_MAX);
}

void proto_arena_reset_trim(proto_arena *a, size_t keep_bytes)
{
	proto_arena_chunk *keep = NULL;
	for (proto_arena_chunk *c = a->head; c != NULL; c = c->next)
		if (c->size <= keep_bytes && (keep == NULL || c->size > keep->size))
			keep = c;
	proto_arena_chunk *c = a->head;
	while (c != NULL) {
		proto_arena_chunk *next = c->next;
		if (c != keep)
			free(c);
		c = next;
	}
	a->head = keep;
	a->total = 0;
	if (keep != NULL) {
		keep->next = NULL;
		keep->used = 0;
		a->total = keep->size;
	}
}

void proto_arena_free(proto_arena *a)
{
	proto_arena_chunk *c = a->head;
	while (c != NULL) {
		proto_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}

/* ---- reader ---- */

void proto_reader_init(proto_reader *r, const void *buf, size_t len)
{
	r->err = 0;
	if (buf == NULL) { /* NULL + 0 is undefined behaviour in C */
		r->p = r->end = (const uint8_t *)"";
		return;
	}
	r->p = buf;
	r->end = r->p + len;
}

static inline void fail(proto_reader *r, int err)
{
	if (r->err == 0)
		r->err = err;
	r->p = r->end;
}

/* Returns a pointer to n readable bytes and advances, or NULL on error. */
static inline const uint8_t *take(proto_reader *r, size_t n)
{
	if (r->err != 0)
		return NULL;
	if ((size_t)(r->end - r->p) < n) {
		fail(r, PROTO_ERR_UNDERFLOW);
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

bool proto_read_bool(proto_reader *r)
{
	const uint8_t *p = take(r, 1);
	return p != NULL && *p != 0;
}

int8_t proto_read_int8(proto_reader *r)
{
	const uint8_t *p = take(r, 1);
	return p != NULL ? (int8_t)*p : 0;
}

int16_t proto_read_int16(proto_reader *r)
{
	const uint8_t *p = take(r, 2);
	return p != NULL ? (int16_t)be16(p) : 0;
}

uint16_t proto_read_uint16(proto_reader *r)
{
	const uint8_t *p = take(r, 2);
	return p != NULL ? be16(p) : 0;
}

int32_t proto_read_int32(proto_reader *r)
{
	const uint8_t *p = take(r, 4);
	return p != NULL ? (int32_t)be32(p) : 0;
}

uint32_t proto_read_uint32(proto_reader *r)
{
	const uint8_t *p = take(r, 4);
	return p != NULL ? be32(p) : 0;
}

int64_t proto_read_int64(proto_reader *r)
{
	const uint8_t *p = take(r, 8);
	return p != NULL ? (int64_t)be64(p) : 0;
}

double proto_read_float64(proto_reader *r)
{
	const uint8_t *p = take(r, 8);
	if (p == NULL)
		return 0.0;
	uint64_t u = be64(p);
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

/*
 * Unsigned LEB128 of at most 5 bytes. As Kafka's ByteUtils, a fifth byte
 * with the continuation bit is illegal; we also refuse a fifth byte carrying
 * bits above bit 31 (Java silently drops them), so no value is ambiguous.
 */
uint32_t proto_read_uvarint(proto_reader *r)
{
	if (r->err != 0)
		return 0;
	uint32_t v = 0;
	for (int i = 0; i < 5; i++) {
		if (r->p >= r->end) {
			fail(r, PROTO_ERR_UNDERFLOW);
			return 0;
		}
		uint8_t b = *r->p++;
		if (i == 4 && b > 0x0f) {
			fail(r, PROTO_ERR_INVALID);
			return 0;
		}
		v |= (uint32_t)(b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
			return v;
	}
	return v; /* not reached: i == 4 always returns or fails */
}

int32_t proto_read_varint(proto_reader *r)
{
	uint32_t u = proto_read_uvarint(r);
	return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

/* Unsigned LEB128 of at most 10 bytes; the tenth may only carry bit 63. */
uint64_t proto_read_uvarlong(proto_reader *r)
{
	if (r->err != 0)
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < 10; i++) {
		if (r->p >= r->end) {
			fail(r, PROTO_ERR_UNDERFLOW);
			return 0;
		}
		uint8_t b = *r->p++;
		if (i == 9 && b > 0x01) {
			fail(r, PROTO_ERR_INVALID);
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
			return v;
	}
	return v;
}

int64_t proto_read_varlong(proto_reader *r)
{
	uint64_t u = proto_read_uvarlong(r);
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

void proto_read_uuid(proto_reader *r, proto_uuid *out)
{
	const uint8_t *p = take(r, 16);
	if (p != NULL)
		memcpy(out->b, p, 16);
	else
		memset(out->b, 0, 16);
}

/* Take a view of len bytes, len >= -1 (-1: null). */
static void take_view(proto_reader *r, int64_t len, const uint8_t **ptr, int32_t *outlen)
{
	*ptr = NULL;
	*outlen = -1;
	if (r->err != 0) {
		*outlen = 0; /* an empty, non-null view after an error */
		*ptr = (const uint8_t *)"";
		return;
	}
	if (len == -1)
		return;
	if (len < -1 || len > INT32_MAX) {
		fail(r, PROTO_ERR_INVALID);
		*outlen = 0;
		*ptr = (const uint8_t *)"";
		return;
	}
	const uint8_t *p = take(r, (size_t)len);
	if (p == NULL) {
		*outlen = 0;
		*ptr = (const uint8_t *)"";
		return;
	}
	*ptr = p;
	*outlen = (int32_t)len;
}

/* A compact length: uvarint N, N == 0 null, else N - 1. */
static int64_t read_compact_len(proto_reader *r)
{
	uint32_t n = proto_read_uvarint(r);
	return (int64_t)n - 1;
}

void proto_read_string(proto_reader *r, proto_str *out)
{
	int16_t n = proto_read_int16(r);
	const uint8_t *p;
	take_view(r, n, &p, &out->len);
	out->ptr = (const char *)p;
}

void proto_read_compact_string(proto_reader *r, proto_str *out)
{
	int64_t n = read_compact_len(r);
	const uint8_t *p;
	take_view(r, n, &p, &out->len);
	out->ptr = (const char *)p;
}

void proto_read_bytes(proto_reader *r, proto_bytes *out)
{
	int32_t n = proto_read_int32(r);
	take_view(r, n, &out->ptr, &out->len);
}

void proto_read_compact_bytes(proto_reader *r, proto_bytes *out)
{
	int64_t n = read_compact_len(r);
	take_view(r, n, &out->ptr, &out->len);
}

void proto_read_records(proto_reader *r, bool compact, proto_records *out)
{
	int64_t n = compact ? read_compact_len(r) : proto_read_int32(r);
	take_view(r, n, &out->ptr, &out->len);
	out->fd = -1;
	out->file_pos = 0;
	out->ref = NULL;
	out->release = NULL;
}

int32_t proto_read_array_len(proto_reader *r, bool compact, size_t min_elem_size)
{
	int64_t n = compact ? read_compact_len(r) : proto_read_int32(r);
	if (r->err != 0)
		return 0;
	if (n == -1)
		return -1;
	if (n < -1 || n > INT32_MAX) {
		fail(r, PROTO_ERR_INVALID);
		return 0;
	}
	if (min_elem_size == 0)
		min_elem_size = 1;
	if ((uint64_t)n > proto_reader_left(r) / min_elem_size) {
		fail(r, PROTO_ERR_INVALID);
		return 0;
	}
	return (int32_t)n;
}

void proto_skip(proto_reader *r, size_t n)
{
	(void)take(r, n);
}

/* ---- writer ---- */

void proto_writer_init(proto_writer *w)
{
	memset(w, 0, sizeof(*w));
}

static void release_chunks(proto_writer *w)
{
	for (int i = 0; i < w->nchunks; i++)
		if (w->chunks[i].release != NULL)
			w->chunks[i].release(w->chunks[i].ref);
	w->nchunks = 0;
	w->file_bytes = 0;
}

void proto_writer_reset(proto_writer *w)
{
	release_chunks(w);
	w->len = 0;
	w->err = 0;
}

void proto_writer_free(proto_writer *w)
{
	release_chunks(w);
	free(w->buf);
	free(w->chunks);
	memset(w, 0, sizeof(*w));
}

/* Make room for n more bytes; false (and w->err set) when it cannot. */
static bool ensure(proto_writer *w, size_t n)
{
	if (w->err != 0)
		return false;
	if (w->cap - w->len >= n)
		return true;
	if (n > SIZE_MAX / 4 - w->len) {
		w->err = PROTO_ERR_NOMEM;
		return false;
	}
	size_t cap = w->cap ? w->cap : 256;
	while (cap - w->len < n)
		cap *= 2;
	uint8_t *b = realloc(w->buf, cap);
	if (b == NULL) {
		w->err = PROTO_ERR_NOMEM;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

void proto_write_raw(proto_writer *w, const void *p, size_t n)
{
	if (n == 0 || !ensure(w, n))
		return;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static inline void put_be(proto_writer *w, uint64_t v, int n)
{
	if (!ensure(w, (size_t)n))
		return;
	for (int i = n - 1; i >= 0; i--) {
		w->buf[w->len + (size_t)i] = (uint8_t)v;
		v >>= 8;
	}
	w->len += (size_t)n;
}

void proto_write_bool(proto_writer *w, bool v) { put_be(w, v ? 1 : 0, 1); }
void proto_write_int8(proto_writer *w, int8_t v) { put_be(w, (uint8_t)v, 1); }
void proto_write_int16(proto_writer *w, int16_t v) { put_be(w, (uint16_t)v, 2); }
void proto_write_uint16(proto_writer *w, uint16_t v) { put_be(w, v, 2); }
void proto_write_int32(proto_writer *w, int32_t v) { put_be(w, (uint32_t)v, 4); }
void proto_write_uint32(proto_writer *w, uint32_t v) { put_be(w, v, 4); }
void proto_write_int64(proto_writer *w, int64_t v) { put_be(w, (uint64_t)v, 8); }

void proto_write_float64(proto_writer *w, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	put_be(w, u, 8);
}

void proto_write_uvarlong(proto_writer *w, uint64_t v)
{
	uint8_t tmp[10];
	int n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	proto_write_raw(w, tmp, (size_t)n);
}

void proto_write_uvarint(proto_writer *w, uint32_t v) { proto_write_uvarlong(w, v); }

void proto_write_varint(proto_writer *w, int32_t v)
{
	proto_write_uvarlong(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void proto_write_varlong(proto_writer *w, int64_t v)
{
	proto_write_uvarlong(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void proto_write_uuid(proto_writer *w, const proto_uuid *v) { proto_write_raw(w, v->b, 16); }

static void set_invalid(proto_writer *w)
{
	if (w->err == 0)
		w->err = PROTO_ERR_INVALID;
}

void proto_write_string(proto_writer *w, const proto_str *s)
{
	if (s->len < 0) {
		proto_write_int16(w, -1);
		return;
	}
	if (s->len > INT16_MAX) {
		set_invalid(w);
		return;
	}
	proto_write_int16(w, (int16_t)s->len);
	proto_write_raw(w, s->ptr, (size_t)s->len);
}

void proto_write_compact_string(proto_writer *w, const proto_str *s)
{
	if (s->len < 0) {
		proto_write_uvarint(w, 0);
		return;
	}
	proto_write_uvarint(w, (uint32_t)s->len + 1);
	proto_write_raw(w, s->ptr, (size_t)s->len);
}

void proto_write_bytes(proto_writer *w, const proto_bytes *b)
{
	if (b->len < 0) {
		proto_write_int32(w, -1);
		return;
	}
	proto_write_int32(w, b->len);
	proto_write_raw(w, b->ptr, (size_t)b->len);
}

void proto_write_compact_bytes(proto_writer *w, const proto_bytes *b)
{
	if (b->len < 0) {
		proto_write_uvarint(w, 0);
		return;
	}
	proto_write_uvarint(w, (uint32_t)b->len + 1);
	proto_write_raw(w, b->ptr, (size_t)b->len);
}

void proto_write_records(proto_writer *w, bool compact, const proto_records *rec)
{
	if (rec->len < 0) {
		if (compact)
			proto_write_uvarint(w, 0);
		else
			proto_write_int32(w, -1);
		if (rec->fd >= 0 && rec->release != NULL)
			rec->release(rec->ref);
		return;
	}
	if (compact)
		proto_write_uvarint(w, (uint32_t)rec->len + 1);
	else
		proto_write_int32(w, rec->len);
	if (rec->fd >= 0)
		proto_writer_add_file(w, rec->fd, rec->file_pos, rec->len, rec->ref, rec->release);
	else
		proto_write_raw(w, rec->ptr, (size_t)rec->len);
}

void proto_write_array_len(proto_writer *w, bool compact, int32_t n)
{
	if (n < 0) {
		if (compact)
			proto_write_uvarint(w, 0);
		else
			proto_write_int32(w, -1);
		return;
	}
	if (compact)
		proto_write_uvarint(w, (uint32_t)n + 1);
	else
		proto_write_int32(w, n);
}

void proto_writer_add_file(proto_writer *w, int fd, int64_t pos, int32_t len,
			   void *ref, void (*release)(void *ref))
{
	if (w->err != 0 || len < 0) {
		if (len < 0)
			set_invalid(w);
		if (release != NULL)
			release(ref);
		return;
	}
	if (w->nchunks == w->chunks_cap) {
		int ncap = w->chunks_cap ? w->chunks_cap * 2 : 8;
		proto_file_chunk *c = realloc(w->chunks, (size_t)ncap * sizeof(*c));
		if (c == NULL) {
			w->err = PROTO_ERR_NOMEM;
			if (release != NULL)
				release(ref);
			return;
		}
		w->chunks = c;
		w->chunks_cap = ncap;
	}
	proto_file_chunk *c = &w->chunks[w->nchunks++];
	c->at = w->len;
	c->fd = fd;
	c->pos = pos;
	c->len = len;
	c->ref = ref;
	c->release = release;
	c->pin = NULL;
	c->unpin = NULL;
	w->file_bytes += len;
}

size_t proto_writer_reserve(proto_writer *w, size_t n)
{
	size_t at = w->len;
	if (!ensure(w, n))
		return at;
	memset(w->buf + w->len, 0, n);
	w->len += n;
	return at;
}

void proto_writer_patch_int32(proto_writer *w, size_t at, int32_t v)
{
	if (w->err != 0 || at > w->len || w->len - at < 4)
		return;
	uint32_t u = (uint32_t)v;
	w->buf[at] = (uint8_t)(u >> 24);
	w->buf[at + 1] = (uint8_t)(u >> 16);
	w->buf[at + 2] = (uint8_t)(u >> 8);
	w->buf[at + 3] = (uint8_t)u;
}

/* ---- sizes and helpers ---- */

int proto_uvarint_size(uint32_t v)
{
	int n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int proto_varint_size(int32_t v)
{
	return proto_uvarint_size(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

int proto_varlong_size(int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	int n = 1;
	while (u >= 0x80) {
		u >>= 7;
		n++;
	}
	return n;
}

proto_str proto_cstr(const char *s)
{
	proto_str x = { s, -1 };
	if (s != NULL) {
		size_t n = strlen(s);
		x.len = n > INT32_MAX ? INT32_MAX : (int32_t)n;
	}
	return x;
}

bool proto_str_eq(proto_str a, const char *b)
{
	if (b == NULL)
		return a.len < 0;
	if (a.len < 0)
		return false;
	size_t n = strlen(b);
	return n == (size_t)a.len && (n == 0 || memcmp(a.ptr, b, n) == 0);
}
