/*
 * timestamp.c - ListOffsets by timestamp (log_offset_for_timestamp) and the
 * largest timestamp (log_max_timestamp, KIP-734), after Kafka's
 * LogSegment.findOffsetByTimestamp and UnifiedLog.fetchOffsetByTimestamp.
 *
 * A segment whose max timestamp is below the target is skipped without
 * loading its indexes (log_open reads each segment's max timestamp from the
 * last .timeindex entry, so the lookup loads only the segment that holds the
 * answer); in the first other segment the time index gives a starting
 * offset, the offset index a position, and batch headers are scanned to the
 * first batch whose max timestamp reaches the target. Inside that batch the answer is, as in Kafka,
 * the first record whose timestamp is >= the target:
 *   - LogAppendTime batches: every record carries the batch max timestamp,
 *     so it is the batch's first offset;
 *   - other batches: the batch is read once (and decompressed with
 *     protocol's proto_decompress when compressed) and its records walked
 *     (timestamp and offset deltas), nothing allocated per record;
 *   - when a batch cannot be walked (above WALK_MAX_BYTES, or data that does
 *     not decompress) the answer falls back to the batch's first offset and
 *     max timestamp (a client seeking there receives the whole batch and
 *     skips the earlier records itself).
 * Not on the produce/fetch path: one buffer per call is fine here.
 */
#include <errno.h>
#include <stdlib.h>

#include "protocol/batch.h"
#include "protocol/buf.h"
#include "protocol/compress.h"
#include "storage/fileio.h"
#include "storage/partition.h"
#include "storage/timeindex.h"

#define WALK_MAX_BYTES (64 << 20)          /* batch bytes read to walk records */
#define WALK_MAX_DECOMPRESSED (256 << 20)  /* decompressed records bytes */

/* The first record of the batch at pos with timestamp >= ts and offset >=
 * min_offset; falls back to the batch's first offset (see above). */
static int first_record_at(log_segment *s, int64_t pos, const proto_batch_info *h, int64_t ts,
			   int64_t min_offset, int64_t *offset, int64_t *timestamp)
{
	*offset = h->base_offset > min_offset ? h->base_offset : min_offset;
	*timestamp = h->max_timestamp;
	if ((h->attributes & PROTO_ATTR_TIMESTAMP_TYPE) || h->size > WALK_MAX_BYTES)
		return 0;
	size_t n = (size_t)h->size - PROTO_BATCH_HEADER_SIZE;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	int fd = log_seg_fd(s);
	int rc = fd < 0 ? fd : log_io_pread(fd, buf, n, pos + PROTO_BATCH_HEADER_SIZE);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	const uint8_t *recs = buf;
	size_t rlen = n;
	int codec = h->attributes & PROTO_ATTR_COMPRESSION_MASK;
	proto_scratch scratch;
	proto_scratch_init(&scratch, WALK_MAX_DECOMPRESSED);
	if (codec != PROTO_COMPRESSION_NONE) {
		if (proto_decompress(codec, buf, n, &scratch, &rlen) != 0)
			rlen = 0; /* fall back to the batch */
		recs = scratch.buf;
	}
	proto_reader r;
	proto_reader_init(&r, recs, rlen);
	for (int32_t i = 0; i < h->records_count; i++) {
		int32_t len = proto_read_varint(&r);
		if (r.err || len < 0 || (size_t)len > proto_reader_left(&r))
			break;
		size_t left_after = proto_reader_left(&r) - (size_t)len;
		proto_read_int8(&r); /* attributes */
		int64_t ts_delta = proto_read_varlong(&r);
		int32_t off_delta = proto_read_varint(&r);
		if (r.err || proto_reader_left(&r) < left_after)
			break;
		/* wrapping sums: garbage deltas must not be undefined behaviour */
		int64_t rts = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)ts_delta);
		int64_t roff = (int64_t)((uint64_t)h->base_offset + (uint64_t)(int64_t)off_delta);
		if (rts >= ts && roff >= min_offset) {
			*offset = roff;
			*timestamp = rts;
			break;
		}
		proto_skip(&r, proto_reader_left(&r) - left_after);
	}
	proto_scratch_free(&scratch);
	free(buf);
	return 0;
}

int log_offset_for_timestamp(log_partition *lp, int64_t ts, int64_t *offset, int64_t *timestamp)
{
	*offset = -1;
	*timestamp = -1;
	for (size_t i = log_seg_floor(lp, lp->log_start); i < lp->nseg; i++) {
		log_segment *s = lp->segs[i];
		/* max_ts is known without loading the indexes (from the time
		 * index's last entry, read with one pread at open): skip
		 * older segments without reading their index files. */
		if (s->max_ts < ts || s->size == 0)
			continue;
		int rc = log_seg_ready(lp, s);
		if (rc < 0)
			return rc;
		if (s->max_ts < ts || s->size == 0)
			continue; /* a rebuilt index may know better */
		int32_t rel;
		log_timeindex_lookup(&s->tidx, ts, &rel);
		int64_t start = s->base_offset + rel;
		if (start < lp->log_start)
			start = lp->log_start;
		int64_t pos = start > s->base_offset ? log_index_lookup(&s->oidx, start - s->base_offset, NULL) : 0;
		log_scan sc;
		log_scan_init(&sc, s, s->size);
		for (;;) {
			proto_batch_info h;
			rc = log_scan_header(&sc, pos, &h);
			if (rc == 1)
				break;
			if (rc < 0)
				return rc;
			if (log_batch_last_offset(&h) >= lp->log_start && h.max_timestamp >= ts)
				return first_record_at(s, pos, &h, ts, lp->log_start, offset, timestamp);
			pos += h.size;
		}
	}
	return 0;
}

int log_max_timestamp(log_partition *lp, int64_t *offset, int64_t *timestamp)
{
	*offset = -1;
	*timestamp = -1;
	log_segment *best = NULL;
	for (size_t i = 0; i < lp->nseg; i++) {
		log_segment *s = lp->segs[i];
		if (s->size > 0 && s->max_ts >= 0 && (!best || s->max_ts > best->max_ts))
			best = s;
	}
	if (!best)
		return 0;
	int rc = log_seg_ready(lp, best);
	if (rc < 0)
		return rc;
	*offset = best->max_ts_offset;
	*timestamp = best->max_ts;
	int64_t pos = log_index_lookup(&best->oidx, best->max_ts_offset - best->base_offset, NULL);
	log_scan sc;
	log_scan_init(&sc, best, best->size);
	for (;;) {
		proto_batch_info h;
		rc = log_scan_header(&sc, pos, &h);
		if (rc == 1)
			return 0;
		if (rc < 0)
			return rc;
		if (log_batch_last_offset(&h) >= best->max_ts_offset) {
			if (h.max_timestamp != best->max_ts)
				return 0;
			return first_record_at(best, pos, &h, best->max_ts, best->base_offset, offset, timestamp);
		}
		pos += h.size;
	}
}
