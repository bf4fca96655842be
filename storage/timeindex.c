/*
 * timeindex.c - the time index (see timeindex.h).
 */
#include "storage/timeindex.h"

#include "storage/fileio.h"
#include "storage/err.h"

static inline int64_t ti_ts(const log_entfile *ti, size_t i) { return (int64_t)log_be64(log_ef_at(ti, i)); }
static inline int32_t ti_rel(const log_entfile *ti, size_t i) { return (int32_t)log_be32(log_ef_at(ti, i) + 8); }

bool log_timeindex_last(const log_entfile *ti, int64_t *ts, int32_t *rel)
{
	if (ti->n == 0)
		return false;
	*ts = (int64_t)log_be64(ti->last);
	*rel = (int32_t)log_be32(ti->last + 8);
	return true;
}

int log_timeindex_maybe_add(log_entfile *ti, int64_t ts, int32_t rel)
{
	int64_t last_ts = -1;
	int32_t last_rel = 0;
	log_timeindex_last(ti, &last_ts, &last_rel);
	if (ts <= last_ts || rel < last_rel)
		return 0;
	uint8_t e[LOG_TIMEINDEX_ENTRY_SIZE];
	log_put_be64(e, (uint64_t)ts);
	log_put_be32(e + 8, (uint32_t)rel);
	return log_ef_push(ti, e);
}

void log_timeindex_lookup(const log_entfile *ti, int64_t ts, int32_t *rel)
{
	size_t lo = 0, hi = ti->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ti_ts(ti, mid) <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	*rel = lo == 0 ? 0 : ti_rel(ti, lo - 1);
}

int log_timeindex_check(const log_entfile *ti)
{
	int64_t prev_ts = INT64_MIN;
	int32_t prev_rel = 0;
	for (size_t i = 0; i < ti->n; i++) {
		int64_t ts = ti_ts(ti, i);
		int32_t rel = ti_rel(ti, i);
		if ((i > 0 && ts <= prev_ts) || rel < prev_rel)
			return LOG_ERR_CORRUPT;
		prev_ts = ts;
		prev_rel = rel;
	}
	return 0;
}

bool log_timeindex_full(const log_entfile *ti, int32_t max_index_bytes)
{
	int64_t max = max_index_bytes / LOG_TIMEINDEX_ENTRY_SIZE;
	return (int64_t)ti->n >= (max > 0 ? max : 1);
}
