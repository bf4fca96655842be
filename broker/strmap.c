/*
 * strmap.c - a hash map from byte-string keys to pointers (strmap.h):
 * dense entries, an open-addressing index with linear probing and
 * backward-shift deletion, SipHash-1-3 under a per-map random key.
 */
#include "broker/strmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* The index starts at this many slots and never shrinks below it. */
#define MIN_SLOTS 16u

/* ---- SipHash ---- */

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

typedef struct sip_state {
	uint64_t v0, v1, v2, v3;
} sip_state;

static void sip_rounds(sip_state *s, int n)
{
	for (int i = 0; i < n; i++) {
		s->v0 += s->v1;
		s->v1 = rotl(s->v1, 13);
		s->v1 ^= s->v0;
		s->v0 = rotl(s->v0, 32);
		s->v2 += s->v3;
		s->v3 = rotl(s->v3, 16);
		s->v3 ^= s->v2;
		s->v0 += s->v3;
		s->v3 = rotl(s->v3, 21);
		s->v3 ^= s->v0;
		s->v2 += s->v1;
		s->v1 = rotl(s->v1, 17);
		s->v1 ^= s->v2;
		s->v2 = rotl(s->v2, 32);
	}
}

uint64_t brk_siphash(const uint8_t key[16], const void *p, size_t len, int c_rounds,
		     int d_rounds)
{
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	/* The initialisation constants spell "somepseudorandomlygeneratedbytes". */
	sip_state s = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull };
	const uint8_t *b = p;
	size_t whole = len - len % 8;
	for (size_t i = 0; i < whole; i += 8) {
		uint64_t m = le64(b + i);
		s.v3 ^= m;
		sip_rounds(&s, c_rounds);
		s.v0 ^= m;
	}
	/* The last word: the remaining bytes, the length's low byte on top. */
	uint64_t last = (uint64_t)(len & 0xff) << 56;
	for (size_t i = 0; i < len % 8; i++)
		last |= (uint64_t)b[whole + i] << (8 * i);
	s.v3 ^= last;
	sip_rounds(&s, c_rounds);
	s.v0 ^= last;
	s.v2 ^= 0xff;
	sip_rounds(&s, d_rounds);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

/* ---- the map ---- */

void brk_strmap_init(brk_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

/* Draw the map's hash key: when its index is first allocated, so that an
 * empty map (a group without members) costs no system call. */
static void draw_seed(brk_strmap *m)
{
	if (getrandom(m->seed, sizeof(m->seed), GRND_NONBLOCK) == (ssize_t)sizeof(m->seed))
		return;
	/* No entropy yet (early boot): still a key per map and process. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
	uint64_t b = (uint64_t)(uintptr_t)m ^ rotl(a, 17);
	memcpy(m->seed, &a, 8);
	memcpy(m->seed + 8, &b, 8);
}

void brk_strmap_free(brk_strmap *m)
{
	free(m->e);
	free(m->slots);
	m->e = NULL;
	m->slots = NULL;
	m->n = m->cap = 0;
	m->nslots = 0;
}

static uint32_t hash_of(const brk_strmap *m, const char *key, int32_t len)
{
	return (uint32_t)brk_siphash(m->seed, key, (size_t)len, 1, 3);
}

/* The slot holding key, or the empty slot where it would go (nslots > 0). */
static uint32_t find_slot(const brk_strmap *m, const char *key, int32_t len, uint32_t h)
{
	uint32_t mask = m->nslots - 1;
	for (uint32_t s = h & mask;; s = (s + 1) & mask) {
		int32_t i = m->slots[s];
		if (i < 0)
			return s;
		const brk_strmap_entry *e = &m->e[i];
		if (e->hash == h && e->len == len && memcmp(e->key, key, (size_t)len) == 0)
			return s;
	}
}

/* Rebuild the index with nslots slots (a power of two above 2n). */
static int reindex(brk_strmap *m, uint32_t nslots)
{
	int32_t *slots = malloc(nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, nslots * sizeof(*slots));
	uint32_t mask = nslots - 1;
	for (int32_t i = 0; i < m->n; i++) {
		uint32_t s = m->e[i].hash & mask;
		while (slots[s] >= 0)
			s = (s + 1) & mask;
		slots[s] = i;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

void *brk_strmap_get(const brk_strmap *m, const char *key, int32_t len)
{
	if (m->n == 0 || len < 0)
		return NULL;
	int32_t i = m->slots[find_slot(m, key, len, hash_of(m, key, len))];
	return i >= 0 ? m->e[i].value : NULL;
}

int brk_strmap_put(brk_strmap *m, const char *key, int32_t len, void *value)
{
	if (len < 0)
		return -EINVAL;
	if (m->nslots == 0)
		draw_seed(m); /* empty: no entry was hashed with the old key */
	if ((uint32_t)(m->n + 1) * 2 > m->nslots &&
	    reindex(m, m->nslots ? m->nslots * 2 : MIN_SLOTS) < 0)
		return -ENOMEM;
	uint32_t h = hash_of(m, key, len);
	uint32_t s = find_slot(m, key, len, h);
	if (m->slots[s] >= 0)
		return -EEXIST;
	if (m->n == m->cap) {
		int32_t cap = m->cap ? m->cap * 2 : 8;
		brk_strmap_entry *e = realloc(m->e, (size_t)cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		m->e = e;
		m->cap = cap;
	}
	m->e[m->n] = (brk_strmap_entry){ key, len, h, value };
	m->slots[s] = m->n++;
	return 0;
}

/* Give memory back once the map is mostly empty: halve the index while
 * it is less than 1/8 full, and the entries with it. Failures keep the
 * larger arrays. */
static void maybe_shrink(brk_strmap *m)
{
	if (m->nslots <= MIN_SLOTS || (uint32_t)m->n * 8 >= m->nslots)
		return;
	uint32_t nslots = m->nslots;
	while (nslots > MIN_SLOTS && (uint32_t)m->n * 8 < nslots)
		nslots /= 2;
	if (reindex(m, nslots) < 0)
		return;
	int32_t cap = (int32_t)(nslots / 2);
	if (cap < m->cap && cap >= m->n) {
		brk_strmap_entry *e = realloc(m->e, (size_t)cap * sizeof(*e));
		if (e) {
			m->e = e;
			m->cap = cap;
		}
	}
}

void *brk_strmap_remove(brk_strmap *m, const char *key, int32_t len)
{
	if (m->n == 0 || len < 0)
		return NULL;
	uint32_t s = find_slot(m, key, len, hash_of(m, key, len));
	int32_t i = m->slots[s];
	if (i < 0)
		return NULL;
	void *value = m->e[i].value;
	int32_t last = m->n - 1;
	if (i != last) {
		/* The last entry moves into the hole: repoint its slot. */
		const brk_strmap_entry *le = &m->e[last];
		m->slots[find_slot(m, le->key, le->len, le->hash)] = i;
		m->e[i] = m->e[last];
	}
	m->n--;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	uint32_t mask = m->nslots - 1;
	uint32_t hole = s;
	m->slots[hole] = -1;
	for (uint32_t j = (hole + 1) & mask; m->slots[j] >= 0; j = (j + 1) & mask) {
		uint32_t home = m->e[m->slots[j]].hash & mask;
		/* Slot j may move into the hole unless its home lies in (hole, j]. */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!stays) {
			m->slots[hole] = m->slots[j];
			m->slots[j] = -1;
			hole = j;
		}
	}
	maybe_shrink(m);
	return value;
}
