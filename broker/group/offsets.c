/*
 * offsets.c - a group's committed offsets (offsets.h): a dense array of
 * entries (iteration) indexed by an open-addressing hash table of
 * (topic, partition) with linear probing; deletion moves the last entry into
 * the hole and rebuilds the index slots it touches.
 */
#include "broker/group/offsets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
	char *topic; /* owned, NUL-terminated */
	int32_t tlen;
	int32_t partition;
	uint32_t hash;
	grp_offset v; /* v.metadata owned */
} entry;

struct grp_offsets {
	entry *e;
	int32_t n, cap;
	int32_t *slots; /* index into e, -1 empty; nslots a power of two */
	uint32_t nslots;
};

static const char empty_metadata[] = "";

static uint32_t key_hash(const char *t, int32_t len, int32_t partition)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (int32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)t[i]) * 16777619u;
	h = (h ^ (uint32_t)partition) * 16777619u;
	return h ^ (h >> 15);
}

grp_offsets *grp_offsets_new(void) { return calloc(1, sizeof(grp_offsets)); }

static void free_value(grp_offset *v)
{
	if (v->metadata != empty_metadata)
		free((char *)(uintptr_t)v->metadata);
}

void grp_offsets_free(grp_offsets *o)
{
	if (!o)
		return;
	for (int32_t i = 0; i < o->n; i++) {
		free(o->e[i].topic);
		free_value(&o->e[i].v);
	}
	free(o->e);
	free(o->slots);
	free(o);
}

void grp_offsets_clear(grp_offsets *o)
{
	if (!o)
		return;
	for (int32_t i = 0; i < o->n; i++) {
		free(o->e[i].topic);
		free_value(&o->e[i].v);
	}
	o->n = 0;
	if (o->slots)
		memset(o->slots, 0xff, o->nslots * sizeof(*o->slots));
}

int32_t grp_offsets_count(const grp_offsets *o) { return o ? o->n : 0; }

/* The slot holding (topic, partition), or the empty slot where it would go. */
static uint32_t find_slot(const grp_offsets *o, const char *t, int32_t len, int32_t partition,
			  uint32_t h)
{
	uint32_t mask = o->nslots - 1;
	for (uint32_t s = h & mask;; s = (s + 1) & mask) {
		int32_t i = o->slots[s];
		if (i < 0)
			return s;
		const entry *e = &o->e[i];
		if (e->hash == h && e->partition == partition && e->tlen == len &&
		    memcmp(e->topic, t, (size_t)len) == 0)
			return s;
	}
}

static int rehash(grp_offsets *o, uint32_t nslots)
{
	int32_t *slots = malloc(nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, nslots * sizeof(*slots));
	free(o->slots);
	o->slots = slots;
	o->nslots = nslots;
	uint32_t mask = nslots - 1;
	for (int32_t i = 0; i < o->n; i++) {
		uint32_t s = o->e[i].hash & mask;
		while (slots[s] >= 0)
			s = (s + 1) & mask;
		slots[s] = i;
	}
	return 0;
}

const grp_offset *grp_offsets_get(const grp_offsets *o, const char *topic, int32_t tlen,
				  int32_t partition)
{
	if (!o || o->n == 0 || tlen < 0)
		return NULL;
	uint32_t h = key_hash(topic, tlen, partition);
	int32_t i = o->slots[find_slot(o, topic, tlen, partition, h)];
	return i >= 0 ? &o->e[i].v : NULL;
}

static int copy_metadata(const grp_offset *v, grp_offset *out)
{
	*out = *v;
	if (!v->metadata || v->metadata_len <= 0) {
		out->metadata = empty_metadata;
		out->metadata_len = 0;
		return 0;
	}
	char *m = malloc((size_t)v->metadata_len + 1);
	if (!m)
		return -ENOMEM;
	memcpy(m, v->metadata, (size_t)v->metadata_len);
	m[v->metadata_len] = '\0';
	out->metadata = m;
	return 0;
}

int grp_offsets_put(grp_offsets *o, const char *topic, int32_t tlen, int32_t partition,
		    const grp_offset *v)
{
	if (tlen < 0)
		return -EINVAL;
	/* Keep the load factor at most 1/2. */
	if ((uint32_t)(o->n + 1) * 2 > o->nslots &&
	    rehash(o, o->nslots ? o->nslots * 2 : 16) < 0)
		return -ENOMEM;
	uint32_t h = key_hash(topic, tlen, partition);
	uint32_t s = find_slot(o, topic, tlen, partition, h);
	grp_offset nv;
	if (copy_metadata(v, &nv) < 0)
		return -ENOMEM;
	if (o->slots[s] >= 0) {
		entry *e = &o->e[o->slots[s]];
		free_value(&e->v);
		e->v = nv;
		return 0;
	}
	if (o->n == o->cap) {
		int32_t cap = o->cap ? o->cap * 2 : 8;
		entry *ne = realloc(o->e, (size_t)cap * sizeof(*ne));
		if (!ne) {
			free_value(&nv);
			return -ENOMEM;
		}
		o->e = ne;
		o->cap = cap;
	}
	char *t = malloc((size_t)tlen + 1);
	if (!t) {
		free_value(&nv);
		return -ENOMEM;
	}
	memcpy(t, topic, (size_t)tlen);
	t[tlen] = '\0';
	o->e[o->n] = (entry){ .topic = t, .tlen = tlen, .partition = partition, .hash = h, .v = nv };
	o->slots[s] = o->n++;
	return 0;
}

bool grp_offsets_delete(grp_offsets *o, const char *topic, int32_t tlen, int32_t partition)
{
	if (!o || o->n == 0 || tlen < 0)
		return false;
	uint32_t h = key_hash(topic, tlen, partition);
	uint32_t s = find_slot(o, topic, tlen, partition, h);
	int32_t i = o->slots[s];
	if (i < 0)
		return false;
	int32_t last = o->n - 1;
	uint32_t ls = 0;
	if (i != last) {
		const entry *le = &o->e[last];
		ls = find_slot(o, le->topic, le->tlen, le->partition, le->hash);
	}
	free(o->e[i].topic);
	free_value(&o->e[i].v);
	if (i != last) {
		/* Move the last entry into the hole and repoint its slot. */
		o->e[i] = o->e[last];
		o->slots[ls] = i;
	}
	o->n--;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	uint32_t mask = o->nslots - 1;
	uint32_t hole = s;
	o->slots[hole] = -1;
	for (uint32_t j = (hole + 1) & mask; o->slots[j] >= 0; j = (j + 1) & mask) {
		uint32_t home = o->e[o->slots[j]].hash & mask;
		/* Move slot j into the hole when its home is not in (hole, j]. */
		bool in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!in_range) {
			o->slots[hole] = o->slots[j];
			o->slots[j] = -1;
			hole = j;
		}
	}
	return true;
}

const grp_offset *grp_offsets_at(const grp_offsets *o, int32_t i, const char **topic,
				 int32_t *tlen, int32_t *partition)
{
	if (!o || i < 0 || i >= o->n)
		return NULL;
	if (topic)
		*topic = o->e[i].topic;
	if (tlen)
		*tlen = o->e[i].tlen;
	if (partition)
		*partition = o->e[i].partition;
	return &o->e[i].v;
}

grp_offset grp_offset_of_commit(int64_t offset, int32_t leader_epoch, proto_str metadata,
				int64_t now_ms, int64_t expire_ms)
{
	grp_offset v;
	memset(&v, 0, sizeof(v));
	v.offset = offset;
	v.leader_epoch = leader_epoch;
	v.metadata = metadata.len > 0 ? metadata.ptr : "";
	v.metadata_len = metadata.len > 0 ? metadata.len : 0;
	v.commit_timestamp_ms = now_ms;
	v.expire_timestamp_ms = expire_ms;
	v.record_offset = -1;
	return v;
}
