/*
 * json.h - a small strict JSON reader and a compact writer, for the znodes of
 * Kafka's ZooKeeper layout (zk_json.h holds their codecs).
 *
 * The grammar is RFC 8259's, narrowed to what Kafka's znodes hold:
 *   - numbers are integers in the int64 range; a fraction or an exponent is
 *     refused (Kafka writes none), and so is a value that overflows;
 *   - strings are valid UTF-8, escapes included (a \u escape must not be a
 *     lone surrogate and must not decode to NUL, so every decoded string is
 *     a C string);
 *   - an object must not repeat a name. RFC 8259 only says names SHOULD be
 *     unique and Jackson keeps the last one; a znode with a repeated name was
 *     not written by Kafka, so we refuse it rather than guess;
 *   - at most CTL_JSON_MAX_SIZE bytes and CTL_JSON_MAX_DEPTH levels of
 *     nesting; nothing but whitespace after the value; no byte order mark.
 *
 * Reader. ctl_json_parse validates the whole text, then indexes it as a flat
 * array of tokens in document order (every value is followed by its subtree;
 * an object member is its name token followed by its value). The token array
 * is one allocation in the caller's arena (sized by a first, counting pass)
 * and the text is not copied: the document borrows it, so the text must live
 * as long as the document. String values are decoded only when asked for
 * (ctl_json_str copies into the arena).
 *
 * Writer. Output is compact, as Kafka's Jackson ObjectMapper writes it: no
 * whitespace, strings escaped as Jackson does (\" \\ \b \f \n \r \t, other
 * control characters as \u00XX with upper-case hex, '/' and non-ASCII
 * written as they are). The writer keeps the first error and ignores later
 * calls, so an encoder calls it straight through and checks once at the end.
 *
 * Errors are negative errno values: -EINVAL malformed input (or a writer fed
 * invalid UTF-8), -E2BIG beyond a size or depth limit, -ENOMEM.
 */
#ifndef SAMSA_CONTROLLER_JSON_H
#define SAMSA_CONTROLLER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/buf.h"

/* ZooKeeper refuses znode data above jute.maxbuffer (0xfffff bytes by
 * default); nothing bigger is a znode. */
#define CTL_JSON_MAX_SIZE (1024u * 1024u)
/* Kafka's deepest znode (the broker registration's features) nests 3. */
#define CTL_JSON_MAX_DEPTH 32

typedef enum ctl_json_type {
	CTL_JSON_NULL = 1,
	CTL_JSON_BOOL,
	CTL_JSON_INT,
	CTL_JSON_STRING,
	CTL_JSON_ARRAY,
	CTL_JSON_OBJECT,
} ctl_json_type;

typedef struct ctl_json_tok {
	uint8_t type;     /* ctl_json_type */
	bool b;           /* BOOL: its value */
	bool escaped;     /* STRING: holds at least one backslash escape */
	uint32_t start;   /* STRING: offset of the first byte after the opening
	                   * quote; other types: offset of the first byte */
	uint32_t len;     /* STRING: raw bytes between the quotes */
	uint32_t count;   /* ARRAY: elements; OBJECT: members */
	uint32_t end;     /* index of the first token after this value's subtree */
	int64_t i;        /* INT: its value */
} ctl_json_tok;

typedef struct ctl_json {
	const char *text; /* borrowed */
	size_t len;
	ctl_json_tok *tok; /* in the arena; tok[0] is the root value */
	uint32_t ntok;
} ctl_json;

/*
 * Parse len bytes of text (not NUL-terminated; a NUL byte is malformed).
 * Returns 0, -EINVAL (malformed), -E2BIG (len or nesting above the limits)
 * or -ENOMEM (the arena refused the tokens). On error *doc is unusable.
 */
int ctl_json_parse(ctl_json *doc, const char *text, size_t len, proto_arena *a);

/* The type of token t. */
static inline ctl_json_type ctl_json_type_of(const ctl_json *d, int t)
{
	return (ctl_json_type)d->tok[t].type;
}

/* The value of name key in object obj: its token index, or -1 when obj has
 * no such member (or obj is not an object). Names are compared decoded. */
int ctl_json_get(const ctl_json *d, int obj, const char *key);

/*
 * Children. ctl_json_first gives the first element of an array or the name
 * token of the first member of an object (its value is that index + 1), or -1
 * when empty or not a container. ctl_json_next gives the next element after
 * element e, ctl_json_next_member the name token after member name k. Loop
 * count (tok[t].count) times.
 */
int ctl_json_first(const ctl_json *d, int t);
static inline int ctl_json_next(const ctl_json *d, int e)
{
	return (int)d->tok[e].end;
}
static inline int ctl_json_next_member(const ctl_json *d, int k)
{
	return (int)d->tok[k + 1].end;
}

/* INT token t within [min, max] into *out. 0, or -EINVAL (another type, or
 * out of range). */
int ctl_json_int(const ctl_json *d, int t, int64_t min, int64_t max, int64_t *out);

/* STRING token t decoded into a NUL-terminated copy in the arena (*len
 * optional). 0, -EINVAL (not a string) or -ENOMEM. */
int ctl_json_str(const ctl_json *d, int t, proto_arena *a, const char **out, size_t *len);

/* STRING token t decoded equals the n bytes at s. */
bool ctl_json_str_eq(const ctl_json *d, int t, const char *s, size_t n);

/* ---- writer ---- */

typedef struct ctl_json_w {
	char *buf;        /* malloc'd */
	size_t len;
	size_t cap;
	int err;          /* first error, 0 while fine */
	int depth;
	bool need_comma;  /* a value was written at this level */
} ctl_json_w;

void ctl_json_w_init(ctl_json_w *w);
void ctl_json_w_obj_begin(ctl_json_w *w);
void ctl_json_w_obj_end(ctl_json_w *w);
void ctl_json_w_arr_begin(ctl_json_w *w);
void ctl_json_w_arr_end(ctl_json_w *w);
/* A member name (the value follows with one of the calls below). */
void ctl_json_w_key(ctl_json_w *w, const char *key);
void ctl_json_w_str(ctl_json_w *w, const char *s);            /* NUL-terminated */
void ctl_json_w_strn(ctl_json_w *w, const char *s, size_t n); /* n bytes, UTF-8 */
void ctl_json_w_int(ctl_json_w *w, int64_t v);
void ctl_json_w_bool(ctl_json_w *w, bool v);
void ctl_json_w_null(ctl_json_w *w);
/* Bytes written verbatim (a caller's already encoded value). */
void ctl_json_w_raw(ctl_json_w *w, const char *s, size_t n);

/*
 * End: on success *out gets the text (malloc'd, NUL-terminated, caller
 * frees; *len without the NUL) and 0 is returned. Otherwise the first error
 * (-EINVAL, -E2BIG above CTL_JSON_MAX_SIZE, -ENOMEM), *out = NULL. The writer
 * holds nothing afterwards either way.
 */
int ctl_json_w_finish(ctl_json_w *w, char **out, size_t *len);
/* Drop what was written (an encoder that gives up half-way). */
void ctl_json_w_discard(ctl_json_w *w);

#endif
