/*
 * json.c - the strict JSON reader and the compact writer of json.h.
 *
 * The reader is a recursive descent over the text, run twice: the first
 * pass validates and counts tokens, the second (after one arena allocation)
 * fills them. Recursion is bounded by CTL_JSON_MAX_DEPTH. Repeated names are
 * found after the second pass with a hash of the decoded names per object, so
 * the whole check stays linear in the size of the text.
 */
#include "controller/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 and escapes ---- */

/* Length of the valid UTF-8 sequence starting at p (left bytes available,
 * p[0] >= 0x80), or 0 when it is invalid (overlong, surrogate, above
 * U+10FFFF, truncated). */
static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
	unsigned char c = p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return n;
}

static int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at p (at least 4 bytes available), or -1. */
static int hex4(const unsigned char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hex_val(p[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

static size_t utf8_put(uint32_t cp, unsigned char out[4])
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Decoding iterator over the raw bytes of a string the parser validated. */
typedef struct str_iter {
	const unsigned char *p, *end;
	unsigned char pend[4];
	size_t npend, ipend;
} str_iter;

static void str_iter_init(str_iter *it, const ctl_json *d, int t)
{
	const ctl_json_tok *k = &d->tok[t];
	it->p = (const unsigned char *)d->text + k->start;
	it->end = it->p + k->len;
	it->npend = it->ipend = 0;
}

/* The next decoded byte, or -1 at the end. */
static int str_next(str_iter *it)
{
	if (it->ipend < it->npend)
		return it->pend[it->ipend++];
	if (it->p >= it->end)
		return -1;
	unsigned char c = *it->p++;
	if (c != '\\')
		return c;
	c = *it->p++;
	switch (c) {
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'u': {
		uint32_t cp = (uint32_t)hex4(it->p);
		it->p += 4;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			/* validated: a \uDC00-\uDFFF follows */
			uint32_t lo = (uint32_t)hex4(it->p + 2);
			it->p += 6;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		}
		it->npend = utf8_put(cp, it->pend);
		it->ipend = 1;
		return it->pend[0];
	}
	default: return c; /* '"', '\\', '/' */
	}
}

/* ---- parser ---- */

typedef struct parser {
	const unsigned char *s;
	size_t len;
	size_t pos;
	ctl_json_tok *tok; /* NULL in the counting pass */
	uint32_t ntok;
	int depth;
} parser;

static void skip_ws(parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static uint32_t new_tok(parser *p, ctl_json_type type)
{
	uint32_t i = p->ntok++;
	if (p->tok) {
		memset(&p->tok[i], 0, sizeof(p->tok[i]));
		p->tok[i].type = (uint8_t)type;
		p->tok[i].start = (uint32_t)p->pos;
	}
	return i;
}

/* A string at p->pos (the opening quote): validates, emits a STRING token. */
static int parse_string(parser *p)
{
	uint32_t t = new_tok(p, CTL_JSON_STRING);
	bool escaped = false;
	size_t start = ++p->pos;
	for (;;) {
		if (p->pos >= p->len)
			return -EINVAL;
		unsigned char c = p->s[p->pos];
		if (c == '"')
			break;
		if (c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			escaped = true;
			if (p->len - p->pos < 2)
				return -EINVAL;
			c = p->s[p->pos + 1];
			if (c == 'u') {
				if (p->len - p->pos < 6)
					return -EINVAL;
				int cp = hex4(p->s + p->pos + 2);
				if (cp <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
					return -EINVAL; /* bad hex, NUL, lone low surrogate */
				p->pos += 6;
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					if (p->len - p->pos < 6 || p->s[p->pos] != '\\' ||
					    p->s[p->pos + 1] != 'u')
						return -EINVAL;
					int lo = hex4(p->s + p->pos + 2);
					if (lo < 0xDC00 || lo > 0xDFFF)
						return -EINVAL;
					p->pos += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", c) || c == 0)
				return -EINVAL;
			p->pos += 2;
			continue;
		}
		if (c >= 0x80) {
			size_t n = utf8_seq_len(p->s + p->pos, p->len - p->pos);
			if (n == 0)
				return -EINVAL;
			p->pos += n;
			continue;
		}
		p->pos++;
	}
	if (p->tok) {
		p->tok[t].start = (uint32_t)start;
		p->tok[t].len = (uint32_t)(p->pos - start);
		p->tok[t].escaped = escaped;
		p->tok[t].end = t + 1;
	}
	p->pos++; /* closing quote */
	return 0;
}

static int parse_number(parser *p)
{
	uint32_t t = new_tok(p, CTL_JSON_INT);
	bool neg = false;
	int64_t v = 0;
	if (p->s[p->pos] == '-') {
		neg = true;
		p->pos++;
	}
	if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
		return -EINVAL;
	if (p->s[p->pos] == '0')
		p->pos++; /* a leading zero stands alone: "01" fails at the caller */
	else {
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
			int dgt = p->s[p->pos] - '0';
			/* accumulate negatively so INT64_MIN fits */
			if (v < (INT64_MIN + dgt) / 10)
				return -EINVAL;
			v = v * 10 - dgt;
			p->pos++;
		}
		if (!neg) {
			if (v == INT64_MIN)
				return -EINVAL;
			v = -v;
		}
	}
	if (p->pos < p->len &&
	    (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
		return -EINVAL; /* not an integer */
	if (p->tok) {
		p->tok[t].i = v;
		p->tok[t].end = t + 1;
	}
	return 0;
}

static int parse_literal(parser *p, const char *word, ctl_json_type type, bool b)
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return -EINVAL;
	uint32_t t = new_tok(p, type);
	p->pos += n;
	if (p->tok) {
		p->tok[t].b = b;
		p->tok[t].end = t + 1;
	}
	return 0;
}

static int parse_value(parser *p);

/* An array or object at p->pos ('[' or '{'). */
static int parse_container(parser *p, bool object)
{
	if (++p->depth > CTL_JSON_MAX_DEPTH)
		return -E2BIG;
	uint32_t t = new_tok(p, object ? CTL_JSON_OBJECT : CTL_JSON_ARRAY);
	unsigned char close = object ? '}' : ']';
	uint32_t count = 0;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close)
		p->pos++;
	else {
		for (;;) {
			int rc;
			skip_ws(p);
			if (object) {
				if (p->pos >= p->len || p->s[p->pos] != '"')
					return -EINVAL;
				if ((rc = parse_string(p)) < 0)
					return rc;
				skip_ws(p);
				if (p->pos >= p->len || p->s[p->pos] != ':')
					return -EINVAL;
				p->pos++;
			}
			if ((rc = parse_value(p)) < 0)
				return rc;
			count++;
			skip_ws(p);
			if (p->pos >= p->len)
				return -EINVAL;
			if (p->s[p->pos] == ',') {
				p->pos++;
				continue;
			}
			if (p->s[p->pos] != close)
				return -EINVAL;
			p->pos++;
			break;
		}
	}
	if (p->tok) {
		p->tok[t].count = count;
		p->tok[t].end = p->ntok;
	}
	p->depth--;
	return 0;
}

static int parse_value(parser *p)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return -EINVAL;
	switch (p->s[p->pos]) {
	case '{': return parse_container(p, true);
	case '[': return parse_container(p, false);
	case '"': return parse_string(p);
	case 't': return parse_literal(p, "true", CTL_JSON_BOOL, true);
	case 'f': return parse_literal(p, "false", CTL_JSON_BOOL, false);
	case 'n': return parse_literal(p, "null", CTL_JSON_NULL, false);
	default:
		if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
			return parse_number(p);
		return -EINVAL;
	}
}

static int parse_all(parser *p)
{
	int rc = parse_value(p);
	if (rc < 0)
		return rc;
	skip_ws(p);
	return p->pos == p->len ? 0 : -EINVAL;
}

/* ---- repeated names ---- */

static bool str_tok_eq(const ctl_json *d, int a, int b)
{
	const ctl_json_tok *ta = &d->tok[a], *tb = &d->tok[b];
	if (!ta->escaped && !tb->escaped)
		return ta->len == tb->len &&
		       memcmp(d->text + ta->start, d->text + tb->start, ta->len) == 0;
	str_iter x, y;
	str_iter_init(&x, d, a);
	str_iter_init(&y, d, b);
	for (;;) {
		int cx = str_next(&x), cy = str_next(&y);
		if (cx != cy)
			return false;
		if (cx < 0)
			return true;
	}
}

static uint32_t str_tok_hash(const ctl_json *d, int t)
{
	uint32_t h = 2166136261u; /* FNV-1a over the decoded bytes */
	str_iter it;
	str_iter_init(&it, d, t);
	for (int c; (c = str_next(&it)) >= 0;)
		h = (h ^ (uint32_t)c) * 16777619u;
	return h;
}

/* -EINVAL when some object repeats a name. Small objects compare pairwise;
 * bigger ones go through an open-addressing table (slots hold name token + 1)
 * sized for the biggest object and cleared per object. */
static int check_repeated_names(const ctl_json *d, proto_arena *a)
{
	uint32_t maxcount = 0;
	for (uint32_t t = 0; t < d->ntok; t++)
		if (d->tok[t].type == CTL_JSON_OBJECT && d->tok[t].count > maxcount)
			maxcount = d->tok[t].count;
	if (maxcount < 2)
		return 0;
	uint32_t *table = NULL;
	size_t tsize = 0;
	if (maxcount > 8) {
		tsize = 16;
		while (tsize < 2 * (size_t)maxcount)
			tsize *= 2;
		table = proto_arena_alloc(a, tsize * sizeof(*table));
		if (!table)
			return -ENOMEM;
	}
	for (uint32_t t = 0; t < d->ntok; t++) {
		const ctl_json_tok *o = &d->tok[t];
		if (o->type != CTL_JSON_OBJECT || o->count < 2)
			continue;
		if (o->count <= 8) {
			int keys[8];
			int k = ctl_json_first(d, (int)t);
			for (uint32_t i = 0; i < o->count; i++, k = ctl_json_next_member(d, k)) {
				for (uint32_t j = 0; j < i; j++)
					if (str_tok_eq(d, keys[j], k))
						return -EINVAL;
				keys[i] = k;
			}
			continue;
		}
		size_t size = 16;
		while (size < 2 * (size_t)o->count)
			size *= 2;
		memset(table, 0, size * sizeof(*table));
		int k = ctl_json_first(d, (int)t);
		for (uint32_t i = 0; i < o->count; i++, k = ctl_json_next_member(d, k)) {
			size_t slot = str_tok_hash(d, k) & (size - 1);
			while (table[slot]) {
				if (str_tok_eq(d, (int)table[slot] - 1, k))
					return -EINVAL;
				slot = (slot + 1) & (size - 1);
			}
			table[slot] = (uint32_t)k + 1;
		}
	}
	return 0;
}

int ctl_json_parse(ctl_json *doc, const char *text, size_t len, proto_arena *a)
{
	memset(doc, 0, sizeof(*doc));
	if (len > CTL_JSON_MAX_SIZE)
		return -E2BIG;
	parser p = { .s = (const unsigned char *)text, .len = len };
	int rc = parse_all(&p);
	if (rc < 0)
		return rc;
	uint32_t n = p.ntok;
	ctl_json_tok *tok = proto_arena_alloc(a, (size_t)n * sizeof(*tok));
	if (!tok)
		return -ENOMEM;
	p = (parser){ .s = (const unsigned char *)text, .len = len, .tok = tok };
	rc = parse_all(&p);
	if (rc < 0 || p.ntok != n)
		return rc < 0 ? rc : -EINVAL; /* cannot differ: same text */
	doc->text = text;
	doc->len = len;
	doc->tok = tok;
	doc->ntok = n;
	return check_repeated_names(doc, a);
}

/* ---- accessors ---- */

int ctl_json_first(const ctl_json *d, int t)
{
	const ctl_json_tok *k = &d->tok[t];
	if ((k->type != CTL_JSON_ARRAY && k->type != CTL_JSON_OBJECT) || k->count == 0)
		return -1;
	return t + 1;
}

bool ctl_json_str_eq(const ctl_json *d, int t, const char *s, size_t n)
{
	const ctl_json_tok *k = &d->tok[t];
	if (k->type != CTL_JSON_STRING)
		return false;
	if (!k->escaped)
		return k->len == n && memcmp(d->text + k->start, s, n) == 0;
	str_iter it;
	str_iter_init(&it, d, t);
	size_t i = 0;
	for (int c; (c = str_next(&it)) >= 0; i++)
		if (i >= n || (unsigned char)s[i] != c)
			return false;
	return i == n;
}

int ctl_json_get(const ctl_json *d, int obj, const char *key)
{
	const ctl_json_tok *o = &d->tok[obj];
	if (o->type != CTL_JSON_OBJECT)
		return -1;
	size_t n = strlen(key);
	int k = ctl_json_first(d, obj);
	for (uint32_t i = 0; i < o->count; i++, k = ctl_json_next_member(d, k))
		if (ctl_json_str_eq(d, k, key, n))
			return k + 1;
	return -1;
}

int ctl_json_int(const ctl_json *d, int t, int64_t min, int64_t max, int64_t *out)
{
	const ctl_json_tok *k = &d->tok[t];
	if (k->type != CTL_JSON_INT || k->i < min || k->i > max)
		return -EINVAL;
	*out = k->i;
	return 0;
}

int ctl_json_str(const ctl_json *d, int t, proto_arena *a, const char **out, size_t *len)
{
	const ctl_json_tok *k = &d->tok[t];
	if (k->type != CTL_JSON_STRING)
		return -EINVAL;
	/* decoding never makes a string longer than its raw form */
	char *s = proto_arena_alloc(a, (size_t)k->len + 1);
	if (!s)
		return -ENOMEM;
	size_t n = 0;
	if (!k->escaped) {
		memcpy(s, d->text + k->start, k->len);
		n = k->len;
	} else {
		str_iter it;
		str_iter_init(&it, d, t);
		for (int c; (c = str_next(&it)) >= 0;)
			s[n++] = (char)c;
	}
	s[n] = '\0';
	*out = s;
	if (len)
		*len = n;
	return 0;
}

/* ---- writer ---- */

void ctl_json_w_init(ctl_json_w *w)
{
	memset(w, 0, sizeof(*w));
}

static void w_put(ctl_json_w *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (n > CTL_JSON_MAX_SIZE || w->len + n > CTL_JSON_MAX_SIZE) {
		w->err = -E2BIG;
		return;
	}
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		while (cap < w->len + n + 1)
			cap *= 2;
		char *b = realloc(w->buf, cap);
		if (!b) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void w_sep(ctl_json_w *w)
{
	if (w->need_comma)
		w_put(w, ",", 1);
}

static void w_begin(ctl_json_w *w, const char *open)
{
	w_sep(w);
	if (++w->depth > CTL_JSON_MAX_DEPTH && !w->err)
		w->err = -E2BIG;
	w_put(w, open, 1);
	w->need_comma = false;
}

static void w_end(ctl_json_w *w, const char *close)
{
	if (--w->depth < 0 && !w->err)
		w->err = -EINVAL;
	w_put(w, close, 1);
	w->need_comma = true;
}

void ctl_json_w_obj_begin(ctl_json_w *w) { w_begin(w, "{"); }
void ctl_json_w_obj_end(ctl_json_w *w) { w_end(w, "}"); }
void ctl_json_w_arr_begin(ctl_json_w *w) { w_begin(w, "["); }
void ctl_json_w_arr_end(ctl_json_w *w) { w_end(w, "]"); }

/* A quoted, escaped string (no separator). */
static void w_quoted(ctl_json_w *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	w_put(w, "\"", 1);
	size_t run = 0; /* start of bytes not yet written */
	for (size_t i = 0; i < n && !w->err;) {
		unsigned char c = u[i];
		if (c >= 0x80) {
			size_t k = utf8_seq_len(u + i, n - i);
			if (k == 0) {
				w->err = -EINVAL;
				return;
			}
			i += k;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c == 0) {
			w->err = -EINVAL; /* the reader refuses \u0000: so do we */
			return;
		}
		w_put(w, s + run, i - run);
		char esc[8];
		switch (c) {
		case '"': memcpy(esc, "\\\"", 3); break;
		case '\\': memcpy(esc, "\\\\", 3); break;
		case '\b': memcpy(esc, "\\b", 3); break;
		case '\f': memcpy(esc, "\\f", 3); break;
		case '\n': memcpy(esc, "\\n", 3); break;
		case '\r': memcpy(esc, "\\r", 3); break;
		case '\t': memcpy(esc, "\\t", 3); break;
		default: snprintf(esc, sizeof(esc), "\\u%04X", c); break;
		}
		w_put(w, esc, strlen(esc));
		run = ++i;
	}
	w_put(w, s + run, n - run);
	w_put(w, "\"", 1);
}

void ctl_json_w_key(ctl_json_w *w, const char *key)
{
	w_sep(w);
	w_quoted(w, key, strlen(key));
	w_put(w, ":", 1);
	w->need_comma = false;
}

void ctl_json_w_strn(ctl_json_w *w, const char *s, size_t n)
{
	w_sep(w);
	w_quoted(w, s, n);
	w->need_comma = true;
}

void ctl_json_w_str(ctl_json_w *w, const char *s)
{
	ctl_json_w_strn(w, s, strlen(s));
}

void ctl_json_w_int(ctl_json_w *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRId64, v);
	w_sep(w);
	w_put(w, b, (size_t)n);
	w->need_comma = true;
}

void ctl_json_w_bool(ctl_json_w *w, bool v)
{
	w_sep(w);
	w_put(w, v ? "true" : "false", v ? 4 : 5);
	w->need_comma = true;
}

void ctl_json_w_null(ctl_json_w *w)
{
	w_sep(w);
	w_put(w, "null", 4);
	w->need_comma = true;
}

void ctl_json_w_raw(ctl_json_w *w, const char *s, size_t n)
{
	w_sep(w);
	w_put(w, s, n);
	w->need_comma = true;
}

int ctl_json_w_finish(ctl_json_w *w, char **out, size_t *len)
{
	int rc = w->err;
	if (!rc && w->depth != 0)
		rc = -EINVAL;
	if (!rc && !w->buf)
		rc = -EINVAL; /* nothing written */
	if (rc) {
		free(w->buf);
		*out = NULL;
		if (len)
			*len = 0;
	} else {
		w->buf[w->len] = '\0';
		*out = w->buf;
		if (len)
			*len = w->len;
	}
	memset(w, 0, sizeof(*w));
	return rc;
}

void ctl_json_w_discard(ctl_json_w *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
