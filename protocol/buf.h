/*
 * buf.h - bounded reader, growable writer and request arena for Kafka's wire
 * primitives (protocol guide, "Protocol Primitive Types"; KIP-482 for the
 * compact and tagged forms).
 *
 * Reader: every read checks the bytes left; the first failure sets r->err and
 * every later read returns 0/empty, so a decoder may read a whole struct and
 * test r->err once. Decoded strings and bytes are views into the reader's
 * buffer (borrowed, valid while that buffer lives).
 *
 * Writer: one growable memory buffer plus an ordered list of file chunks
 * (fd, position, length) that are logically inserted at a memory offset, so a
 * Fetch response can carry segment bytes that the connection sends with
 * sendfile(2) without copying them.
 *
 * Arena: a bump allocator that holds what a decoded request needs (arrays);
 * reset after each request, so the steady state allocates nothing.
 */
#ifndef SAMSA_PROTOCOL_BUF_H
#define SAMSA_PROTOCOL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Internal error codes (negative; Kafka's codes live in err.h). */
enum {
	PROTO_OK = 0,
	PROTO_ERR_UNDERFLOW = -1001, /* read past the end of the buffer */
	PROTO_ERR_INVALID = -1002,   /* a length/count/value that cannot be */
	PROTO_ERR_NOMEM = -1003,     /* allocation failed or above a cap */
	PROTO_ERR_VERSION = -1004,   /* version outside the message's range */
};

/* A string view: len == -1 means null. Not NUL-terminated. */
typedef struct proto_str {
	const char *ptr;
	int32_t len;
} proto_str;

/* A bytes view: len == -1 means null. */
typedef struct proto_bytes {
	const uint8_t *ptr;
	int32_t len;
} proto_bytes;

typedef struct proto_uuid {
	uint8_t b[16];
} proto_uuid;

/*
 * Records field of a message. On decode it is a view (ptr, len) into the
 * request buffer; on encode either memory (fd < 0: ptr, len) or a file region
 * (fd >= 0: file_pos, len) handed to proto_writer_add_file() with ref/release.
 * len == -1 means null.
 */
typedef struct proto_records {
	const uint8_t *ptr;
	int32_t len;
	int fd;
	int64_t file_pos;
	void *ref;
	void (*release)(void *ref);
} proto_records;

/* ---- arena ---- */

typedef struct proto_arena_chunk proto_arena_chunk;
typedef struct proto_arena {
	proto_arena_chunk *head; /* current chunk, newest first */
	size_t max_bytes;        /* cap on the total held; 0 = no cap */
	size_t total;            /* bytes held over all chunks */
} proto_arena;

/* Initialise an empty arena that may hold at most max_bytes (0 = no cap). */
void proto_arena_init(proto_arena *a, size_t max_bytes);
/* Zeroed, 8-byte aligned memory of n bytes owned by the arena; NULL when the
 * cap would be passed or malloc fails. Valid until reset/free. */
void *proto_arena_alloc(proto_arena *a, size_t n);
/* Forget every allocation; keeps the largest chunk for reuse. */
void proto_arena_reset(proto_arena *a);
/* proto_arena_reset, but keep only the largest chunk of at most keep_bytes
 * (usable bytes); larger chunks are freed, so one huge request does not
 * leave a huge chunk behind for the owner's lifetime. */
void proto_arena_reset_trim(proto_arena *a, size_t keep_bytes);
void proto_arena_free(proto_arena *a);

/* ---- reader ---- */

typedef struct proto_reader {
	const uint8_t *p;
	const uint8_t *end;
	int err; /* 0 or PROTO_ERR_* (first error wins) */
} proto_reader;

void proto_reader_init(proto_reader *r, const void *buf, size_t len);
static inline size_t proto_reader_left(const proto_reader *r) { return (size_t)(r->end - r->p); }

bool proto_read_bool(proto_reader *r);     /* 0 false, anything else true */
int8_t proto_read_int8(proto_reader *r);
int16_t proto_read_int16(proto_reader *r); /* big endian, as all fixed ints */
uint16_t proto_read_uint16(proto_reader *r);
int32_t proto_read_int32(proto_reader *r);
uint32_t proto_read_uint32(proto_reader *r);
int64_t proto_read_int64(proto_reader *r);
double proto_read_float64(proto_reader *r);
uint32_t proto_read_uvarint(proto_reader *r);  /* unsigned LEB128, max 5 bytes */
int32_t proto_read_varint(proto_reader *r);    /* zigzag LEB128, max 5 bytes */
uint64_t proto_read_uvarlong(proto_reader *r); /* max 10 bytes */
int64_t proto_read_varlong(proto_reader *r);   /* zigzag, max 10 bytes */
void proto_read_uuid(proto_reader *r, proto_uuid *out);
/* STRING / NULLABLE_STRING (int16 length, -1 null). A null where the field is
 * not nullable is the caller's check. */
void proto_read_string(proto_reader *r, proto_str *out);
/* COMPACT_STRING / COMPACT_NULLABLE_STRING (uvarint length+1, 0 null). */
void proto_read_compact_string(proto_reader *r, proto_str *out);
void proto_read_bytes(proto_reader *r, proto_bytes *out);         /* int32 length */
void proto_read_compact_bytes(proto_reader *r, proto_bytes *out); /* uvarint length+1 */
/* Records: int32 length (classic) or uvarint length+1 (compact); a view. */
void proto_read_records(proto_reader *r, bool compact, proto_records *out);
/* Array count: int32 (classic) or uvarint count+1 (compact); -1 is null.
 * A count whose elements cannot fit in what is left (each at least
 * min_elem_size bytes, >= 1) sets PROTO_ERR_INVALID and returns 0. */
int32_t proto_read_array_len(proto_reader *r, bool compact, size_t min_elem_size);
/* Skip n bytes (underflow if fewer are left). */
void proto_skip(proto_reader *r, size_t n);

/* ---- writer ---- */

typedef struct proto_file_chunk {
	size_t at;     /* memory offset the chunk logically follows */
	int fd;
	int64_t pos;   /* bytes into the file */
	int32_t len;   /* bytes */
	void *ref;     /* released with release(ref) on writer reset/free */
	void (*release)(void *ref);
	/* NULL (as proto_writer_add_file leaves them): fd stays valid until
	 * release. Else the owner lends the descriptor only while the chunk
	 * is being sent (it may close it meanwhile: an open-file cache):
	 * pin(ref) returns the descriptor to send from instead of fd, >= 0
	 * and valid until unpin(ref), or a negative errno. Whoever sends calls
	 * unpin before release. */
	int (*pin)(void *ref);
	void (*unpin)(void *ref);
} proto_file_chunk;

typedef struct proto_writer {
	uint8_t *buf;
	size_t len; /* memory bytes written */
	size_t cap;
	proto_file_chunk *chunks;
	int nchunks;
	int chunks_cap;
	int64_t file_bytes; /* sum of chunk lengths */
	int err;            /* PROTO_ERR_NOMEM after a failed growth */
} proto_writer;

void proto_writer_init(proto_writer *w);
/* Empty the writer (releasing file chunk refs) but keep its memory. */
void proto_writer_reset(proto_writer *w);
void proto_writer_free(proto_writer *w);
/* Total bytes the writer holds: memory plus file chunks. */
static inline int64_t proto_writer_total(const proto_writer *w) { return (int64_t)w->len + w->file_bytes; }

void proto_write_raw(proto_writer *w, const void *p, size_t n);
void proto_write_bool(proto_writer *w, bool v);
void proto_write_int8(proto_writer *w, int8_t v);
void proto_write_int16(proto_writer *w, int16_t v);
void proto_write_uint16(proto_writer *w, uint16_t v);
void proto_write_int32(proto_writer *w, int32_t v);
void proto_write_uint32(proto_writer *w, uint32_t v);
void proto_write_int64(proto_writer *w, int64_t v);
void proto_write_float64(proto_writer *w, double v);
void proto_write_uvarint(proto_writer *w, uint32_t v);
void proto_write_varint(proto_writer *w, int32_t v);
void proto_write_uvarlong(proto_writer *w, uint64_t v);
void proto_write_varlong(proto_writer *w, int64_t v);
void proto_write_uuid(proto_writer *w, const proto_uuid *v);
void proto_write_string(proto_writer *w, const proto_str *s);         /* len -1 writes null */
void proto_write_compact_string(proto_writer *w, const proto_str *s);
void proto_write_bytes(proto_writer *w, const proto_bytes *b);
void proto_write_compact_bytes(proto_writer *w, const proto_bytes *b);
/* Records: length prefix, then memory bytes or a file chunk (rec->fd >= 0). */
void proto_write_records(proto_writer *w, bool compact, const proto_records *rec);
void proto_write_array_len(proto_writer *w, bool compact, int32_t n); /* -1 null */
/* Append a file region; ownership of ref passes to the writer. */
void proto_writer_add_file(proto_writer *w, int fd, int64_t pos, int32_t len,
			   void *ref, void (*release)(void *ref));
/* Reserve n bytes and return their offset, to be patched later. */
size_t proto_writer_reserve(proto_writer *w, size_t n);
void proto_writer_patch_int32(proto_writer *w, size_t at, int32_t v);

/* Sizes of the variable-length integer encodings, in bytes. */
int proto_uvarint_size(uint32_t v);
int proto_varint_size(int32_t v);
int proto_varlong_size(int64_t v);

/* Helpers for views. */
static inline proto_str proto_str_of(const char *s, int32_t len) { proto_str x = { s, len }; return x; }
proto_str proto_cstr(const char *s); /* NULL gives a null string */
bool proto_str_eq(proto_str a, const char *b);

#endif
