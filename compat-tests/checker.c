/*
 * checker.c - the Jepsen-style history checker (see checker.h).
 *
 * Values are interned: each distinct string gets an id, and per id the
 * checker keeps what was written and what was read. (partition, offset)
 * slots map to the first value seen there and a flag once a second one
 * was seen. Both maps are open-addressing hash tables that double when
 * half full.
 */
#include "compat-tests/checker.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct value {
	char *s;
	bool written;
	int producer;
	int32_t partition;
	chk_outcome outcome;
	int64_t offset;       /* acknowledged offset */
	/* reads */
	long nreads;
	int32_t read_partition; /* first read */
	int64_t read_offset;
	bool read_elsewhere;    /* read at a second (partition, offset) */
	bool read_at_ack;       /* read at the acknowledged (partition, offset) */
} value;

typedef struct slot {
	int32_t partition;
	int64_t offset;
	int32_t value;     /* id of the first value seen here; -1 = empty slot */
	int32_t other;     /* id of a second, different value, -1 if none */
} slot;

typedef struct mono {
	int producer;
	int32_t partition;
	int64_t last;
} mono;

struct chk {
	value *values;
	int32_t nvalues, capvalues;
	int32_t *vindex; /* hash of strings -> value id, -1 empty */
	size_t vcap;     /* power of two */
	slot *slots;
	size_t nslots, scap;
	int64_t *acks;   /* acknowledgement times */
	size_t nacks, capacks;
	mono *monos;
	size_t nmonos, capmonos;
	long writes, reads;
	long nonmonotonic;
	char mono_example[256];
	bool have_span;
	int64_t span_start, span_end;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static uint64_t hash_po(int32_t p, int64_t o)
{
	uint64_t h = (uint64_t)o * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(uint32_t)p << 17);
	h ^= h >> 29;
	return h * 0xBF58476D1CE4E5B9ULL;
}

chk *chk_new(void)
{
	chk *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->vcap = 1024;
	h->vindex = malloc(h->vcap * sizeof(*h->vindex));
	h->scap = 1024;
	h->slots = malloc(h->scap * sizeof(*h->slots));
	if (!h->vindex || !h->slots) {
		chk_free(h);
		return NULL;
	}
	memset(h->vindex, 0xff, h->vcap * sizeof(*h->vindex));
	for (size_t i = 0; i < h->scap; i++)
		h->slots[i].value = -1;
	return h;
}

void chk_free(chk *h)
{
	if (!h)
		return;
	for (int32_t i = 0; i < h->nvalues; i++)
		free(h->values[i].s);
	free(h->values);
	free(h->vindex);
	free(h->slots);
	free(h->acks);
	free(h->monos);
	free(h);
}

static int grow_vindex(chk *h)
{
	size_t cap = h->vcap * 2;
	int32_t *v = malloc(cap * sizeof(*v));
	if (!v)
		return -1;
	memset(v, 0xff, cap * sizeof(*v));
	for (int32_t id = 0; id < h->nvalues; id++) {
		size_t i = hash_str(h->values[id].s) & (cap - 1);
		while (v[i] >= 0)
			i = (i + 1) & (cap - 1);
		v[i] = id;
	}
	free(h->vindex);
	h->vindex = v;
	h->vcap = cap;
	return 0;
}

/* The id of s, created when missing (*created set); -1 on out of memory. */
static int32_t intern(chk *h, const char *s, bool *created)
{
	*created = false;
	size_t i = hash_str(s) & (h->vcap - 1);
	while (h->vindex[i] >= 0) {
		if (strcmp(h->values[h->vindex[i]].s, s) == 0)
			return h->vindex[i];
		i = (i + 1) & (h->vcap - 1);
	}
	if ((size_t)(h->nvalues + 1) * 2 > h->vcap) {
		if (grow_vindex(h) < 0)
			return -1;
		return intern(h, s, created);
	}
	if (h->nvalues == h->capvalues) {
		int32_t cap = h->capvalues ? h->capvalues * 2 : 1024;
		value *v = realloc(h->values, (size_t)cap * sizeof(*v));
		if (!v)
			return -1;
		h->values = v;
		h->capvalues = cap;
	}
	value *v = &h->values[h->nvalues];
	memset(v, 0, sizeof(*v));
	v->s = strdup(s);
	if (!v->s)
		return -1;
	v->read_partition = -1;
	v->read_offset = -1;
	h->vindex[i] = h->nvalues;
	*created = true;
	return h->nvalues++;
}

static int grow_slots(chk *h)
{
	size_t cap = h->scap * 2;
	slot *s = malloc(cap * sizeof(*s));
	if (!s)
		return -1;
	for (size_t i = 0; i < cap; i++)
		s[i].value = -1;
	for (size_t k = 0; k < h->scap; k++) {
		if (h->slots[k].value < 0)
			continue;
		size_t i = hash_po(h->slots[k].partition, h->slots[k].offset) & (cap - 1);
		while (s[i].value >= 0)
			i = (i + 1) & (cap - 1);
		s[i] = h->slots[k];
	}
	free(h->slots);
	h->slots = s;
	h->scap = cap;
	return 0;
}

/* Value id observed at (p, o), by an acknowledgement or a read. */
static int observe(chk *h, int32_t p, int64_t o, int32_t id)
{
	if ((h->nslots + 1) * 2 > h->scap && grow_slots(h) < 0)
		return -1;
	size_t i = hash_po(p, o) & (h->scap - 1);
	while (h->slots[i].value >= 0) {
		slot *s = &h->slots[i];
		if (s->partition == p && s->offset == o) {
			if (s->value != id && s->other < 0)
				s->other = id;
			return 0;
		}
		i = (i + 1) & (h->scap - 1);
	}
	h->slots[i] = (slot){.partition = p, .offset = o, .value = id, .other = -1};
	h->nslots++;
	return 0;
}

static void check_mono(chk *h, int producer, int32_t partition, int64_t offset, const char *val)
{
	mono *m = NULL;
	for (size_t i = 0; i < h->nmonos; i++)
		if (h->monos[i].producer == producer && h->monos[i].partition == partition) {
			m = &h->monos[i];
			break;
		}
	if (!m) {
		if (h->nmonos == h->capmonos) {
			size_t cap = h->capmonos ? h->capmonos * 2 : 64;
			mono *v = realloc(h->monos, cap * sizeof(*v));
			if (!v)
				return;
			h->monos = v;
			h->capmonos = cap;
		}
		h->monos[h->nmonos] = (mono){.producer = producer, .partition = partition, .last = offset};
		h->nmonos++;
		return;
	}
	if (offset <= m->last) {
		if (!h->nonmonotonic)
			snprintf(h->mono_example, sizeof(h->mono_example),
				 "M: producer %d, partition %d: %s acknowledged at offset %" PRId64
				 " after offset %" PRId64,
				 producer, (int)partition, val, offset, m->last);
		h->nonmonotonic++;
	}
	m->last = offset;
}

int chk_write(chk *h, int producer, int32_t partition, const char *val, chk_outcome o,
	      int64_t offset, int64_t t_ms)
{
	bool created;
	int32_t id = intern(h, val, &created);
	if (id < 0)
		return -1;
	value *v = &h->values[id];
	if (v->written)
		return -1;
	v->written = true;
	v->producer = producer;
	v->partition = partition;
	v->outcome = o;
	v->offset = o == CHK_ACKED ? offset : -1;
	h->writes++;
	if (o != CHK_ACKED)
		return 0;
	if (offset >= 0)
		check_mono(h, producer, partition, offset, val);
	if (h->nacks == h->capacks) {
		size_t cap = h->capacks ? h->capacks * 2 : 1024;
		int64_t *a = realloc(h->acks, cap * sizeof(*a));
		if (!a)
			return -1;
		h->acks = a;
		h->capacks = cap;
	}
	h->acks[h->nacks++] = t_ms;
	return offset < 0 ? 0 : observe(h, partition, offset, id);
}

int chk_read(chk *h, int32_t partition, int64_t offset, const char *val)
{
	bool created;
	int32_t id = intern(h, val, &created);
	if (id < 0)
		return -1;
	value *v = &h->values[id];
	h->reads++;
	if (v->nreads == 0) {
		v->read_partition = partition;
		v->read_offset = offset;
	} else if (v->read_partition != partition || v->read_offset != offset) {
		v->read_elsewhere = true;
	}
	v->nreads++;
	if (v->written && v->outcome == CHK_ACKED && v->partition == partition &&
	    (v->offset == offset || v->offset < 0))
		v->read_at_ack = true;
	return observe(h, partition, offset, id);
}

void chk_span(chk *h, int64_t start_ms, int64_t end_ms)
{
	h->have_span = true;
	h->span_start = start_ms;
	h->span_end = end_ms;
}

static void example(chk_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void example(chk_report *r, const char *fmt, ...)
{
	if (r->nexamples >= CHK_EXAMPLES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->examples[r->nexamples++], sizeof(r->examples[0]), fmt, ap);
	va_end(ap);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static const char *outcome_name(chk_outcome o)
{
	return o == CHK_ACKED ? "acknowledged" : o == CHK_FAILED ? "failed" : "indeterminate";
}

void chk_check(const chk *h, const chk_options *opt, chk_report *r)
{
	chk_options none = {0};
	if (!opt)
		opt = &none;
	memset(r, 0, sizeof(*r));
	r->writes = h->writes;
	r->reads = h->reads;
	r->nonmonotonic = h->nonmonotonic;
	if (h->nonmonotonic)
		example(r, "%s", h->mono_example);

	for (int32_t id = 0; id < h->nvalues; id++) {
		const value *v = &h->values[id];
		if (v->nreads)
			r->values_read++;
		if (!v->written) {
			r->unknown++;
			example(r, "unknown: %s read at %d/%" PRId64 " was never written", v->s,
				(int)v->read_partition, v->read_offset);
			continue;
		}
		switch (v->outcome) {
		case CHK_ACKED:
			r->acked++;
			r->acked_no_offset += v->offset < 0;
			if (!v->nreads) {
				r->lost++;
				if (!opt->allow_loss)
					example(r, "L: %s acknowledged at %d/%" PRId64 " was never read",
						v->s, (int)v->partition, v->offset);
			} else if (!v->read_at_ack) {
				r->misplaced++;
				example(r, "L: %s acknowledged at %d/%" PRId64 " was read at %d/%" PRId64,
					v->s, (int)v->partition, v->offset, (int)v->read_partition,
					v->read_offset);
			}
			break;
		case CHK_FAILED:
			r->failed++;
			if (v->nreads) {
				r->failed_read++;
				example(r, "F: %s failed definitely but was read at %d/%" PRId64, v->s,
					(int)v->read_partition, v->read_offset);
			}
			break;
		case CHK_INDETERMINATE:
			r->indeterminate++;
			if (v->nreads)
				r->indeterminate_read++;
			break;
		}
		if (v->outcome != CHK_ACKED && v->nreads && v->read_partition != v->partition) {
			r->misplaced++;
			example(r, "L: %s (%s) written to partition %d was read at %d/%" PRId64, v->s,
				outcome_name(v->outcome), (int)v->partition, (int)v->read_partition,
				v->read_offset);
		}
		if (v->read_elsewhere) {
			r->duplicated++;
			if (opt->idempotent)
				example(r, "duplicate: %s read at %d/%" PRId64 " and at another offset",
					v->s, (int)v->read_partition, v->read_offset);
		}
	}
	for (size_t i = 0; i < h->scap; i++) {
		const slot *s = &h->slots[i];
		if (s->value < 0 || s->other < 0)
			continue;
		r->divergent++;
		example(r, "D: %d/%" PRId64 " holds %s and %s", (int)s->partition, s->offset,
			h->values[s->value].s, h->values[s->other].s);
	}

	/* the longest gap between successful produces */
	if (h->nacks || h->have_span) {
		int64_t *t = malloc((h->nacks + 2) * sizeof(*t));
		if (t) {
			size_t n = 0;
			if (h->nacks)
				memcpy(t, h->acks, h->nacks * sizeof(*t));
			n = h->nacks;
			qsort(t, n, sizeof(*t), cmp_i64);
			if (h->have_span) {
				memmove(t + 1, t, n * sizeof(*t));
				t[0] = h->span_start;
				t[n + 1] = h->span_end;
				n += 2;
			}
			for (size_t i = 1; i < n; i++)
				if (t[i] - t[i - 1] > r->longest_gap_ms) {
					r->longest_gap_ms = t[i] - t[i - 1];
					r->gap_from_ms = t[i - 1];
				}
			free(t);
		}
	}
	r->ok = !(r->lost && !opt->allow_loss) && !r->misplaced && !r->divergent &&
		!r->nonmonotonic && !r->failed_read && !r->unknown &&
		!(r->duplicated && opt->idempotent);
}

void chk_report_print(const chk_report *r, FILE *f)
{
	fprintf(f,
		"checker: %s: %ld writes (%ld acknowledged, %ld of them without an offset, %ld "
		"failed, %ld indeterminate, %ld of those read), %ld reads of %ld values; lost %ld, "
		"misplaced %ld, divergent offsets %ld, non-monotonic %ld, failed but read %ld, "
		"duplicated %ld, unknown %ld; longest time without a successful produce %" PRId64
		" ms\n",
		r->ok ? "valid" : "INVALID", r->writes, r->acked, r->acked_no_offset, r->failed,
		r->indeterminate, r->indeterminate_read, r->reads, r->values_read, r->lost,
		r->misplaced, r->divergent,
		r->nonmonotonic, r->failed_read, r->duplicated, r->unknown, r->longest_gap_ms);
	for (int i = 0; i < r->nexamples; i++)
		fprintf(f, "checker:   %s\n", r->examples[i]);
}
