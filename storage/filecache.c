/*
 * filecache.c - the open-file cache (see filecache.h): an intrusive doubly
 * linked list, front = most recently used.
 */
#include "storage/filecache.h"

#include <assert.h>
#include <stddef.h>

void log_fcache_init(log_file_cache *fc, int64_t capacity)
{
	*fc = (log_file_cache){ .capacity = capacity < 1 ? 1 : capacity };
}

void log_fcache_set_capacity(log_file_cache *fc, int64_t capacity)
{
	fc->capacity = capacity < 1 ? 1 : capacity;
	log_fcache_trim(fc, NULL);
}

void log_fcache_destroy(log_file_cache *fc)
{
	assert(fc->entries == 0 && fc->held == 0);
	fc->front = fc->back = NULL;
}

static void unlink_entry(log_file_cache *fc, log_fcache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		fc->front = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		fc->back = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(log_file_cache *fc, log_fcache_entry *e)
{
	e->prev = NULL;
	e->next = fc->front;
	if (fc->front)
		fc->front->prev = e;
	else
		fc->back = e;
	fc->front = e;
}

void log_fcache_add(log_file_cache *fc, log_fcache_entry *e, int32_t weight, log_fcache_evict_fn evict)
{
	assert(!e->cache && weight >= 1);
	e->cache = fc;
	e->weight = weight;
	e->evict = evict;
	push_front(fc, e);
	fc->entries++;
	fc->held += weight;
	fc->adds++;
	log_fcache_trim(fc, e);
}

void log_fcache_touch(log_fcache_entry *e)
{
	log_file_cache *fc = e->cache;
	if (fc->front == e)
		return;
	unlink_entry(fc, e);
	push_front(fc, e);
}

void log_fcache_reweigh(log_fcache_entry *e, int32_t weight)
{
	assert(weight >= 1);
	log_file_cache *fc = e->cache;
	int32_t was = e->weight;
	e->weight = weight;
	fc->held += weight - was;
	if (weight > was)
		log_fcache_trim(fc, e);
}

void log_fcache_remove(log_fcache_entry *e)
{
	log_file_cache *fc = e->cache;
	if (!fc)
		return;
	unlink_entry(fc, e);
	fc->entries--;
	fc->held -= e->weight;
	e->weight = 0;
	e->cache = NULL;
}

/* Ask e to close: true when it did (and left the list); an entry in use
 * moves to the front. */
static bool ask(log_file_cache *fc, log_fcache_entry *e)
{
	if (e->evict(e)) {
		log_fcache_remove(e);
		fc->evictions++;
		return true;
	}
	fc->busy++;
	unlink_entry(fc, e);
	push_front(fc, e);
	return false;
}

int64_t log_fcache_trim(log_file_cache *fc, const log_fcache_entry *keep)
{
	int64_t closed = 0;
	/* each entry at most once: those in use go to the front, behind
	 * which the walk would find them again */
	for (int64_t left = fc->entries; fc->held > fc->capacity && left > 0 && fc->back; left--) {
		log_fcache_entry *e = fc->back;
		if (e == keep) {
			if (fc->entries == 1)
				break;
			unlink_entry(fc, e);
			push_front(fc, e);
			continue;
		}
		closed += ask(fc, e);
	}
	return closed;
}

int64_t log_fcache_shed(log_file_cache *fc, const log_fcache_entry *keep)
{
	int64_t closed = 0;
	for (int64_t left = fc->entries / 2 + 1; left > 0 && fc->back; left--) {
		log_fcache_entry *e = fc->back;
		if (e == keep) {
			if (fc->entries == 1)
				break;
			unlink_entry(fc, e);
			push_front(fc, e);
			continue;
		}
		closed += ask(fc, e);
	}
	return closed;
}
