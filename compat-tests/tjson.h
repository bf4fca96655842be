/*
 * tjson.h - a tiny JSON reader for the tests: znode contents (Kafka's
 * ZooKeeper layout, CLUSTER.md 1) parsed into a tree, so a test can say
 * "the registration's version is 5" without trusting the broker's own codec
 * (controller/json.h). Independent of check and of the project's code.
 *
 * RFC 8259 values, narrowed to what znodes hold: numbers must be integers
 * that fit int64 (a fraction or exponent is an error), strings may hold the
 * simple escapes and \uXXXX below U+0080 (others are kept as '?'). Nothing
 * but whitespace may follow the value. Depth is limited to 64.
 */
#ifndef SAMSA_COMPAT_TJSON_H
#define SAMSA_COMPAT_TJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tj_type {
	TJ_NULL = 1,
	TJ_BOOL,
	TJ_INT,
	TJ_STR,
	TJ_ARR,
	TJ_OBJ,
} tj_type;

typedef struct tj {
	tj_type type;
	bool b;            /* TJ_BOOL */
	int64_t i;         /* TJ_INT */
	char *s;           /* TJ_STR: decoded, NUL-terminated */
	int n;             /* TJ_ARR, TJ_OBJ: number of elements / members */
	struct tj **items; /* TJ_ARR: elements; TJ_OBJ: member values */
	char **keys;       /* TJ_OBJ: member names, in document order */
} tj;

/* Parse len bytes of text. NULL on malformed input (err, if given, gets a
 * description with the byte position). Free with tj_free. */
tj *tj_parse(const char *text, size_t len, char *err, size_t errcap);

void tj_free(tj *v);

/* The value of member key of obj (the last one if repeated), NULL when
 * absent or obj is not an object (or NULL). */
const tj *tj_get(const tj *obj, const char *key);

/* The integer member key of obj into *out: 0, or -1 if absent or not an
 * integer. */
int tj_get_int(const tj *obj, const char *key, int64_t *out);

/* The string member key of obj, NULL if absent or not a string. */
const char *tj_get_str(const tj *obj, const char *key);

/* The integer array member key of obj into out (at most cap): the number of
 * elements, or -1 if absent, not an array or holding a non-integer. */
int tj_get_int_array(const tj *obj, const char *key, int32_t *out, int cap);

#endif
