/*
 * strmap.h - a hash map from byte-string keys to pointers, for the
 * registries that are looked up by a client-chosen name on every request
 * (groups by group id, transactional ids): Kafka keeps these in Java
 * HashMaps; a linear scan made every commit cost O(groups).
 *
 * Layout: the entries sit in a dense array (iteration by index, as the
 * registries' grp_at / txn_at expose it) indexed by an open-addressing table
 * with linear probing, kept at most half full; deletion moves the last
 * entry into the hole and shifts the probe chain back, so no tombstones
 * accumulate. The table grows by doubling and shrinks by halving when it
 * is less than 1/8 full, so the memory of a registry that emptied is given
 * back.
 *
 * The keys are hashed with SipHash-1-3 under a random 128-bit key drawn per
 * map (getrandom, when the map first allocates), as Redis' dict and Rust's
 * HashMap do: group ids and
 * transactional ids come from clients, and an unkeyed hash would let one
 * client make every lookup probe a chain of its colliding ids.
 *
 * Ownership: the map owns its arrays, never the values; a key is borrowed
 * (normally a string inside the value) and must stay valid and unchanged
 * while its entry is in the map. Lookups take a view (pointer + length, no
 * NUL needed). Not thread-safe; each registry's map lives on the loop
 * thread.
 */
#ifndef SAMSA_BROKER_STRMAP_H
#define SAMSA_BROKER_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct brk_strmap_entry {
	const char *key; /* borrowed, len bytes */
	int32_t len;
	uint32_t hash;   /* low 32 bits of the key's SipHash */
	void *value;
} brk_strmap_entry;

typedef struct brk_strmap {
	brk_strmap_entry *e; /* dense: e[0, n) */
	int32_t n, cap;
	int32_t *slots;      /* index into e, -1 empty; nslots is 0 or a power of two */
	uint32_t nslots;
	uint8_t seed[16];    /* SipHash key */
} brk_strmap;

/* An empty map (allocates nothing; its hash key is drawn at the first
 * put). A zeroed brk_strmap is an empty map too. */
void brk_strmap_init(brk_strmap *m);
/* Free the map's arrays (not the values); the map is empty and usable. */
void brk_strmap_free(brk_strmap *m);

/* The number of entries. */
static inline int32_t brk_strmap_count(const brk_strmap *m) { return m->n; }

/* The value of key (len bytes), or NULL. */
void *brk_strmap_get(const brk_strmap *m, const char *key, int32_t len);

/* Add key -> value (value not NULL; key borrowed, see above). Returns 0,
 * -EEXIST when the key is there already (nothing changes), -EINVAL for a
 * negative len, -ENOMEM (nothing changes). */
int brk_strmap_put(brk_strmap *m, const char *key, int32_t len, void *value);

/* Remove key; returns its value, or NULL when it was not there. The last
 * entry moves to the removed one's index: to remove while iterating, go
 * from the last index down. */
void *brk_strmap_remove(brk_strmap *m, const char *key, int32_t len);

/* Iterate: the value at index i in [0, count), else NULL. Order is
 * insertion order until the first removal. */
static inline void *brk_strmap_at(const brk_strmap *m, int32_t i)
{
	return i >= 0 && i < m->n ? m->e[i].value : NULL;
}

/* SipHash-c-d (Aumasson and Bernstein) of len bytes at p under the 16-byte
 * key; the map uses c = 1, d = 3. Exposed for its test vectors. */
uint64_t brk_siphash(const uint8_t key[16], const void *p, size_t len, int c_rounds,
		     int d_rounds);

#endif
