/*
 * filecache.h - the open-file cache: a bound on the descriptors the
 * segments of every log hold together (the broker's log.max.open.files).
 * Kafka keeps every segment's .log open and maps its indexes, so its
 * descriptors grow with the segments that exist, and its operations guide
 * asks for 100000+; here they grow with the segments in use.
 *
 * The cache is a list of entries from the most to the least recently used,
 * each holding `weight` descriptors (a segment: its .log, and the active
 * segment's .index and .timeindex once written: segment.h). An entry joins
 * the front when it opens a descriptor (log_fcache_add) and goes back to
 * the front each time it is used (log_fcache_touch). Whenever the
 * descriptors held pass the capacity, entries are asked to close theirs
 * from the back (their evict callback): one in use (a segment whose bytes
 * a response is being sent from: log_segment_pin) answers false, keeps
 * its descriptors and moves to the front. So a descriptor is never closed
 * under a sendfile, and the cache exceeds its capacity by at most the
 * descriptors of entries in use (one per connection sending), until they
 * are released and the next trim closes them. The entry being added or
 * grown is never evicted by that call.
 *
 * No state outside the struct: the owner of every log (the broker's
 * partition registry; a test) keeps one and hands it to each log
 * (log_open_with_files, log.h). Threading: the logs' thread only (the
 * event loop). An owner removes its entry (log_fcache_remove) before it
 * frees it; every entry is removed before log_fcache_destroy.
 */
#ifndef SAMSA_STORAGE_FILECACHE_H
#define SAMSA_STORAGE_FILECACHE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct log_fcache_entry log_fcache_entry;
typedef struct log_file_cache log_file_cache;

/* Close e's descriptors and return true; false when e is in use and keeps
 * them. It must not add, touch or remove entries. */
typedef bool (*log_fcache_evict_fn)(log_fcache_entry *e);

struct log_fcache_entry {
	log_fcache_entry *prev, *next; /* toward the front, toward the back */
	log_file_cache *cache;         /* the list it is in, NULL when in none */
	int32_t weight;                /* descriptors held (>= 1 while in a list) */
	log_fcache_evict_fn evict;
};

struct log_file_cache {
	int64_t capacity;           /* descriptors (>= 1) */
	int64_t held;               /* sum of the weights in the list */
	int64_t entries;            /* entries in the list */
	log_fcache_entry *front, *back;
	/* counters since log_fcache_init */
	uint64_t adds;              /* entries that opened descriptors */
	uint64_t evictions;         /* entries closed to make room */
	uint64_t busy;              /* entries found in use when asked to close */
};

/* An empty cache of capacity descriptors (below 1 is taken as 1). */
void log_fcache_init(log_file_cache *fc, int64_t capacity);
/* Change the capacity (below 1 is taken as 1) and trim to it. */
void log_fcache_set_capacity(log_file_cache *fc, int64_t capacity);
/* Nothing to free; the list must be empty. */
void log_fcache_destroy(log_file_cache *fc);

/* Put e (in no list) at the front, holding weight (>= 1) descriptors with
 * evict as its callback, then trim (e excepted). */
void log_fcache_add(log_file_cache *fc, log_fcache_entry *e, int32_t weight, log_fcache_evict_fn evict);
/* Move e (in a list) to the front. */
void log_fcache_touch(log_fcache_entry *e);
/* e (in a list) now holds weight (>= 1) descriptors; trims when it grew
 * (e excepted). */
void log_fcache_reweigh(log_fcache_entry *e, int32_t weight);
/* Take e out of its list (a no-op when in none); its descriptors are no
 * longer counted. */
void log_fcache_remove(log_fcache_entry *e);

/* Ask entries to close from the back while more than the capacity is held,
 * keep excepted (may be NULL); each entry is asked at most once. Returns
 * the number of entries closed. */
int64_t log_fcache_trim(log_file_cache *fc, const log_fcache_entry *keep);
/* After an open failed for want of descriptors (EMFILE, ENFILE): ask the
 * least recently used half of the entries to close, keep excepted.
 * Returns the number closed. */
int64_t log_fcache_shed(log_file_cache *fc, const log_fcache_entry *keep);

#endif
