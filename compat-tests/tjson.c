/*
 * tjson.c - the tests' tiny JSON reader (see tjson.h).
 */
#include "compat-tests/tjson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tj_parser {
	const char *p, *end, *start;
	char *err;
	size_t errcap;
	bool failed;
} tj_parser;

static void fail(tj_parser *ps, const char *what)
{
	if (!ps->failed && ps->err && ps->errcap)
		snprintf(ps->err, ps->errcap, "%s at byte %ld", what, (long)(ps->p - ps->start));
	ps->failed = true;
}

static void skip_ws(tj_parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static bool literal(tj_parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string at ps->p (the opening quote), decoded into a malloc'd copy. */
static char *parse_string(tj_parser *ps)
{
	if (ps->p >= ps->end || *ps->p != '"') {
		fail(ps, "expected a string");
		return NULL;
	}
	ps->p++;
	size_t cap = 16, len = 0;
	char *s = malloc(cap);
	if (!s) {
		fail(ps, "out of memory");
		return NULL;
	}
	for (;;) {
		if (ps->p >= ps->end) {
			fail(ps, "unterminated string");
			free(s);
			return NULL;
		}
		char c = *ps->p++;
		if (c == '"')
			break;
		if ((unsigned char)c < 0x20) {
			fail(ps, "control character in a string");
			free(s);
			return NULL;
		}
		if (c == '\\') {
			if (ps->p >= ps->end) {
				fail(ps, "unterminated escape");
				free(s);
				return NULL;
			}
			char e = *ps->p++;
			switch (e) {
			case '"': case '\\': case '/': c = e; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				int v = 0;
				for (int k = 0; k < 4; k++) {
					int h = ps->p < ps->end ? hexval(*ps->p) : -1;
					if (h < 0) {
						fail(ps, "bad \\u escape");
						free(s);
						return NULL;
					}
					v = v * 16 + h;
					ps->p++;
				}
				c = v > 0 && v < 0x80 ? (char)v : '?';
				break;
			}
			default:
				fail(ps, "bad escape");
				free(s);
				return NULL;
			}
		}
		if (len + 2 > cap) {
			cap *= 2;
			char *t = realloc(s, cap);
			if (!t) {
				fail(ps, "out of memory");
				free(s);
				return NULL;
			}
			s = t;
		}
		s[len++] = c;
	}
	s[len] = 0;
	return s;
}

static tj *new_value(tj_parser *ps, tj_type t)
{
	tj *v = calloc(1, sizeof(*v));
	if (!v)
		fail(ps, "out of memory");
	else
		v->type = t;
	return v;
}

/* Append item (and key for objects) to container v. */
static bool push(tj_parser *ps, tj *v, tj *item, char *key)
{
	tj **items = realloc(v->items, (size_t)(v->n + 1) * sizeof(*items));
	if (!items) {
		fail(ps, "out of memory");
		return false;
	}
	v->items = items;
	if (v->type == TJ_OBJ) {
		char **keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof(*keys));
		if (!keys) {
			fail(ps, "out of memory");
			return false;
		}
		v->keys = keys;
		v->keys[v->n] = key;
	}
	v->items[v->n++] = item;
	return true;
}

static tj *parse_value(tj_parser *ps, int depth)
{
	if (depth > 64) {
		fail(ps, "nested too deep");
		return NULL;
	}
	skip_ws(ps);
	if (ps->p >= ps->end) {
		fail(ps, "expected a value");
		return NULL;
	}
	char c = *ps->p;
	tj *v = NULL;
	if (literal(ps, "null"))
		return new_value(ps, TJ_NULL);
	bool truth = literal(ps, "true");
	if (truth || literal(ps, "false")) {
		v = new_value(ps, TJ_BOOL);
		if (v)
			v->b = truth;
		return v;
	}
	if (c == '"') {
		char *s = parse_string(ps);
		if (!s)
			return NULL;
		v = new_value(ps, TJ_STR);
		if (!v) {
			free(s);
			return NULL;
		}
		v->s = s;
		return v;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		char buf[32];
		size_t n = 0;
		while (ps->p < ps->end && n < sizeof(buf) - 1 &&
		       (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')))
			buf[n++] = *ps->p++;
		buf[n] = 0;
		if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')) {
			fail(ps, "not an integer");
			return NULL;
		}
		char *endp;
		errno = 0;
		long long x = strtoll(buf, &endp, 10);
		if (errno || *endp || n == 0 || (buf[0] == '-' && n == 1)) {
			fail(ps, "bad number");
			return NULL;
		}
		v = new_value(ps, TJ_INT);
		if (v)
			v->i = x;
		return v;
	}
	if (c == '[' || c == '{') {
		bool obj = c == '{';
		ps->p++;
		v = new_value(ps, obj ? TJ_OBJ : TJ_ARR);
		if (!v)
			return NULL;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
			ps->p++;
			return v;
		}
		for (;;) {
			char *key = NULL;
			if (obj) {
				skip_ws(ps);
				key = parse_string(ps);
				if (!key)
					break;
				skip_ws(ps);
				if (ps->p >= ps->end || *ps->p != ':') {
					free(key);
					fail(ps, "expected ':'");
					break;
				}
				ps->p++;
			}
			tj *item = parse_value(ps, depth + 1);
			if (!item || !push(ps, v, item, key)) {
				free(key);
				tj_free(item);
				break;
			}
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				continue;
			}
			if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
				ps->p++;
				return v;
			}
			fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
			break;
		}
		tj_free(v);
		return NULL;
	}
	fail(ps, "unexpected character");
	return NULL;
}

tj *tj_parse(const char *text, size_t len, char *err, size_t errcap)
{
	tj_parser ps = {.p = text, .end = text + len, .start = text, .err = err, .errcap = errcap};
	if (err && errcap)
		err[0] = 0;
	if (!text) {
		fail(&ps, "no text");
		return NULL;
	}
	tj *v = parse_value(&ps, 0);
	if (!v)
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		fail(&ps, "text after the value");
		tj_free(v);
		return NULL;
	}
	return v;
}

void tj_free(tj *v)
{
	if (!v)
		return;
	for (int i = 0; i < v->n; i++) {
		tj_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->s);
	free(v);
}

const tj *tj_get(const tj *obj, const char *key)
{
	if (!obj || obj->type != TJ_OBJ)
		return NULL;
	for (int i = obj->n - 1; i >= 0; i--)
		if (strcmp(obj->keys[i], key) == 0)
			return obj->items[i];
	return NULL;
}

int tj_get_int(const tj *obj, const char *key, int64_t *out)
{
	const tj *v = tj_get(obj, key);
	if (!v || v->type != TJ_INT)
		return -1;
	*out = v->i;
	return 0;
}

const char *tj_get_str(const tj *obj, const char *key)
{
	const tj *v = tj_get(obj, key);
	return v && v->type == TJ_STR ? v->s : NULL;
}

int tj_get_int_array(const tj *obj, const char *key, int32_t *out, int cap)
{
	const tj *v = tj_get(obj, key);
	if (!v || v->type != TJ_ARR)
		return -1;
	for (int i = 0; i < v->n; i++) {
		if (v->items[i]->type != TJ_INT)
			return -1;
		if (i < cap)
			out[i] = (int32_t)v->items[i]->i;
	}
	return v->n;
}
