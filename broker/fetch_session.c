/*
 * fetch_session.c - the fetch session cache (KIP-227); see fetch_session.h
 * for the rules (Kafka's FetchSession.scala).
 *
 * Sessions are found by id through a chained hash table; eviction scans the
 * sessions (at most max.incremental.fetch.session.cache.slots), only when a
 * full cache has to make room. A session's partitions are an array in
 * response order with an open-addressing index over it, rebuilt when the
 * array is compacted or grows.
 */
#include "broker/fetch_session.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct fs_cache {
	int32_t max_entries;
	int64_t eviction_ms;
	int32_t size;
	int32_t nbuckets;     /* power of two */
	fs_session **buckets;
	uint64_t rng;         /* xorshift64 state, never 0 */
};

int32_t fs_next_epoch(int32_t prev)
{
	if (prev < 0)
		return FS_FINAL_EPOCH;
	if (prev == INT32_MAX)
		return 1;
	return prev + 1;
}

static uint64_t next_rand(fs_cache *c)
{
	uint64_t x = c->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return x;
}

fs_cache *fs_cache_new(int32_t max_entries, int64_t eviction_ms)
{
	fs_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_entries = max_entries > 0 ? max_entries : 0;
	c->eviction_ms = eviction_ms;
	c->nbuckets = 64;
	while (c->nbuckets < c->max_entries && c->nbuckets < (1 << 20))
		c->nbuckets <<= 1;
	c->buckets = calloc((size_t)c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	uint64_t seed = 0;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)c;
	}
	c->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	return c;
}

static void session_free(fs_session *s)
{
	for (int32_t i = 0; i < s->n; i++)
		free(s->parts[i].topic);
	free(s->parts);
	free(s->index);
	free(s);
}

void fs_cache_free(fs_cache *c)
{
	if (!c)
		return;
	for (int32_t b = 0; b < c->nbuckets; b++) {
		fs_session *s = c->buckets[b];
		while (s) {
			fs_session *next = s->hnext;
			session_free(s);
			s = next;
		}
	}
	free(c->buckets);
	free(c);
}

int32_t fs_cache_size(const fs_cache *c)
{
	return c->size;
}

static uint32_t bucket_of(const fs_cache *c, int32_t id)
{
	return ((uint32_t)id * 2654435761u) & (uint32_t)(c->nbuckets - 1);
}

fs_session *fs_cache_get(fs_cache *c, int32_t id)
{
	for (fs_session *s = c->buckets[bucket_of(c, id)]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

void fs_cache_remove(fs_cache *c, fs_session *s)
{
	fs_session **pp = &c->buckets[bucket_of(c, s->id)];
	while (*pp && *pp != s)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = s->hnext;
		c->size--;
	}
	session_free(s);
}

void fs_cache_touch(fs_cache *c, fs_session *s, int64_t now)
{
	(void)c;
	s->last_used_ms = now;
	s->cached_size = s->n;
}

/* Kafka's EvictableKey order: (privileged, size, id). */
static int key_cmp(bool pa, int32_t sa, int32_t ida, bool pb, int32_t sb, int32_t idb)
{
	if (pa != pb)
		return pa ? 1 : -1;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (ida != idb)
		return ida < idb ? -1 : 1;
	return 0;
}

/*
 * Kafka's tryEvict: the least recently used session when it is stale, else
 * the smallest session of the evictable set for a privileged or an
 * unprivileged newcomer when the newcomer's key (privileged, size, 0) is not
 * smaller. Membership of the sets is judged at each session's last touch,
 * as Kafka files them there. Returns true when a session was removed.
 */
static bool try_evict(fs_cache *c, bool privileged, int32_t size, int64_t now)
{
	fs_session *lru = NULL, *victim = NULL;
	for (int32_t b = 0; b < c->nbuckets; b++) {
		for (fs_session *s = c->buckets[b]; s; s = s->hnext) {
			if (!lru || s->last_used_ms < lru->last_used_ms ||
			    (s->last_used_ms == lru->last_used_ms && s->id < lru->id))
				lru = s;
			bool old = s->last_used_ms - s->creation_ms > c->eviction_ms;
			bool evictable = privileged ? (!s->privileged || old) : old;
			if (evictable && (!victim || key_cmp(s->privileged, s->cached_size, s->id,
							      victim->privileged,
							      victim->cached_size, victim->id) < 0))
				victim = s;
		}
	}
	if (!lru)
		return false;
	if (now - lru->last_used_ms > c->eviction_ms) {
		fs_cache_remove(c, lru);
		return true;
	}
	if (!victim || key_cmp(privileged, size, 0, victim->privileged, victim->cached_size,
			       victim->id) < 0)
		return false;
	fs_cache_remove(c, victim);
	return true;
}

fs_session *fs_cache_create(fs_cache *c, int64_t now, bool privileged, int32_t size,
			    bool uses_topic_ids)
{
	if (c->max_entries == 0)
		return NULL;
	if (c->size >= c->max_entries && !try_evict(c, privileged, size, now))
		return NULL;
	fs_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	int32_t id;
	do {
		id = (int32_t)(next_rand(c) & 0x7fffffff);
	} while (id == FS_INVALID_SESSION_ID || id == INT32_MAX || fs_cache_get(c, id));
	s->id = id;
	s->epoch = fs_next_epoch(FS_INITIAL_EPOCH);
	s->privileged = privileged;
	s->uses_topic_ids = uses_topic_ids;
	s->creation_ms = now;
	uint32_t b = bucket_of(c, id);
	s->hnext = c->buckets[b];
	c->buckets[b] = s;
	c->size++;
	fs_cache_touch(c, s, now);
	s->cached_size = size; /* Kafka builds the partitions before its touch */
	return s;
}

/* ---- a session's partitions ---- */

static uint32_t part_hash(const fs_session *s, const char *topic, int32_t topic_len,
			  const uint8_t topic_id[16], int32_t partition)
{
	uint32_t h = 2166136261u;
	if (s->uses_topic_ids) {
		for (int i = 0; i < 16; i++)
			h = (h ^ topic_id[i]) * 16777619u;
	} else {
		for (int32_t i = 0; i < topic_len; i++)
			h = (h ^ (uint8_t)topic[i]) * 16777619u;
	}
	h = (h ^ (uint32_t)partition) * 16777619u;
	return h;
}

static bool part_eq(const fs_session *s, const fs_partition *p, const char *topic,
		    int32_t topic_len, const uint8_t topic_id[16], int32_t partition)
{
	if (p->partition != partition)
		return false;
	if (s->uses_topic_ids)
		return memcmp(p->topic_id, topic_id, 16) == 0;
	return p->topic_len == topic_len && (topic_len == 0 || memcmp(p->topic, topic, (size_t)topic_len) == 0);
}

static void index_insert(fs_session *s, int32_t i)
{
	const fs_partition *p = &s->parts[i];
	uint32_t mask = (uint32_t)s->index_cap - 1;
	uint32_t h = part_hash(s, p->topic, p->topic_len, p->topic_id, p->partition) & mask;
	while (s->index[h] >= 0)
		h = (h + 1) & mask;
	s->index[h] = i;
}

/* Rebuild the index with room for at least 2 * want entries. */
static int index_rebuild(fs_session *s, int32_t want)
{
	int32_t cap = 16;
	while (cap < 2 * want)
		cap <<= 1;
	if (cap != s->index_cap) {
		int32_t *ix = malloc((size_t)cap * sizeof(*ix));
		if (!ix)
			return -1;
		free(s->index);
		s->index = ix;
		s->index_cap = cap;
	}
	memset(s->index, 0xff, (size_t)s->index_cap * sizeof(*s->index));
	for (int32_t i = 0; i < s->n; i++)
		index_insert(s, i);
	return 0;
}

fs_partition *fs_session_find(fs_session *s, const char *topic, int32_t topic_len,
			      const uint8_t topic_id[16], int32_t partition)
{
	if (s->index_cap == 0)
		return NULL;
	uint32_t mask = (uint32_t)s->index_cap - 1;
	uint32_t h = part_hash(s, topic, topic_len, topic_id, partition) & mask;
	while (s->index[h] >= 0) {
		fs_partition *p = &s->parts[s->index[h]];
		if (part_eq(s, p, topic, topic_len, topic_id, partition))
			return p;
		h = (h + 1) & mask;
	}
	return NULL;
}

static void set_req(fs_partition *p, const fs_req_partition *rq)
{
	p->max_bytes = rq->max_bytes;
	p->fetch_offset = rq->fetch_offset;
	p->fetcher_log_start_offset = rq->log_start_offset;
	p->leader_epoch = rq->leader_epoch;
	p->last_fetched_epoch = rq->last_fetched_epoch;
}

fs_partition *fs_session_upsert(fs_session *s, const char *topic, int32_t topic_len,
				const uint8_t topic_id[16], int32_t partition,
				const fs_req_partition *rq)
{
	fs_partition *p = fs_session_find(s, topic, topic_len, topic_id, partition);
	if (p) {
		set_req(p, rq);
		return p;
	}
	if (topic_len < 0)
		topic_len = 0;
	size_t add = sizeof(fs_partition) + 2 * sizeof(int32_t) +
		     (s->uses_topic_ids ? 0 : (size_t)topic_len + 1);
	if (s->mem + add > FS_SESSION_MAX_BYTES || s->n == INT32_MAX / 4)
		return NULL;
	if (s->n == s->cap) {
		int32_t cap = s->cap ? s->cap * 2 : 8;
		fs_partition *v = realloc(s->parts, (size_t)cap * sizeof(*v));
		if (!v)
			return NULL;
		s->parts = v;
		s->cap = cap;
	}
	char *name = NULL;
	if (!s->uses_topic_ids) {
		name = malloc((size_t)topic_len + 1);
		if (!name)
			return NULL;
		if (topic_len)
			memcpy(name, topic, (size_t)topic_len);
		name[topic_len] = '\0';
	}
	if (2 * (s->n + 1) > s->index_cap && index_rebuild(s, s->n + 1) != 0) {
		free(name);
		return NULL;
	}
	p = &s->parts[s->n];
	memset(p, 0, sizeof(*p));
	p->topic = name;
	p->topic_len = s->uses_topic_ids ? 0 : topic_len;
	if (s->uses_topic_ids)
		memcpy(p->topic_id, topic_id, 16);
	p->partition = partition;
	set_req(p, rq);
	p->high_watermark = -1;
	p->last_stable_offset = -1;
	p->local_log_start_offset = -1;
	s->n++;
	s->mem += add;
	index_insert(s, s->n - 1);
	return p;
}

bool fs_session_forget(fs_session *s, const char *topic, int32_t topic_len,
		       const uint8_t topic_id[16], int32_t partition)
{
	fs_partition *p = fs_session_find(s, topic, topic_len, topic_id, partition);
	if (!p)
		return false;
	int32_t i = (int32_t)(p - s->parts);
	s->mem -= sizeof(fs_partition) + 2 * sizeof(int32_t) +
		  (s->uses_topic_ids ? 0 : (size_t)p->topic_len + 1);
	free(p->topic);
	memmove(&s->parts[i], &s->parts[i + 1], (size_t)(s->n - i - 1) * sizeof(*s->parts));
	s->n--;
	/* same capacity: cannot fail */
	memset(s->index, 0xff, (size_t)s->index_cap * sizeof(*s->index));
	for (int32_t k = 0; k < s->n; k++)
		index_insert(s, k);
	return true;
}

bool fs_partition_must_respond(fs_partition *cp, const fs_resp_partition *r, bool update)
{
	bool must = r->records_bytes > 0;
	if (cp->high_watermark != r->high_watermark) {
		must = true;
		if (update)
			cp->high_watermark = r->high_watermark;
	}
	if (cp->last_stable_offset != r->last_stable_offset) {
		must = true;
		if (update)
			cp->last_stable_offset = r->last_stable_offset;
	}
	if (cp->local_log_start_offset != r->log_start_offset) {
		must = true;
		if (update)
			cp->local_log_start_offset = r->log_start_offset;
	}
	if (r->error_code != 0) {
		if (update)
			cp->high_watermark = -1;
		must = true;
	}
	return must;
}

void fs_session_move_answered_last(fs_session *s, const bool *answered)
{
	if (s->n < 2)
		return;
	fs_partition *tmp = malloc((size_t)s->n * sizeof(*tmp));
	if (!tmp)
		return; /* the order is only fairness */
	int32_t k = 0;
	for (int32_t i = 0; i < s->n; i++)
		if (!answered[i])
			tmp[k++] = s->parts[i];
	for (int32_t i = 0; i < s->n; i++)
		if (answered[i])
			tmp[k++] = s->parts[i];
	memcpy(s->parts, tmp, (size_t)s->n * sizeof(*tmp));
	free(tmp);
	memset(s->index, 0xff, (size_t)s->index_cap * sizeof(*s->index));
	for (int32_t i = 0; i < s->n; i++)
		index_insert(s, i);
}
