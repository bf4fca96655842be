/*
 * timeindex.h - a segment's time index (.timeindex), Kafka's TimeIndex.
 *
 * Entry (12 bytes, big endian):
 *   off size
 *     0   8  timestamp (ms): the largest batch max timestamp seen so far
 *     8   4  relative offset of the last offset of the batch that has it
 * An entry is added only when the timestamp grows (strictly increasing
 * timestamps, non-decreasing offsets): at each offset index entry and when the
 * segment is rolled or closed, so the last entry holds the segment's max
 * timestamp. Lookup: the last entry with timestamp <= target.
 */
#ifndef SAMSA_STORAGE_TIMEINDEX_H
#define SAMSA_STORAGE_TIMEINDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/index.h"

/* Add (in memory) (ts, rel) if ts is above the last entry's timestamp (or the
 * index is empty and ts >= 0). Index must be loaded. 0 or -ENOMEM. */
int log_timeindex_maybe_add(log_entfile *ti, int64_t ts, int32_t rel);
/* The last entry with timestamp <= ts: *rel gets its relative offset, or 0
 * (the segment start) when there is none. Index must be loaded. */
void log_timeindex_lookup(const log_entfile *ti, int64_t ts, int32_t *rel);
/* The last entry (from memory, or as read by log_ef_stat); false when empty. */
bool log_timeindex_last(const log_entfile *ti, int64_t *ts, int32_t *rel);
/* Check a loaded time index: timestamps strictly increasing, relative offsets
 * >= 0 and non-decreasing. 0 or LOG_ERR_CORRUPT. */
int log_timeindex_check(const log_entfile *ti);
/* Full when n >= max_index_bytes / 12 (segment.index.bytes). */
bool log_timeindex_full(const log_entfile *ti, int32_t max_index_bytes);

#endif
