/*
 * logcheck.h - a full verification of a partition directory for the tests
 * (DESIGN.md 3 and 9, Kafka's on-disk layout), reading the files directly:
 *
 *   - every <20 digits>.log holds v2 record batches end to end (no bytes
 *     after the last one), each with magic 2, a length within the file and
 *     a matching CRC32C (over attributes .. end, as Kafka's
 *     DefaultRecordBatch.isValid);
 *   - offsets are contiguous: each batch's base offset is the previous
 *     batch's last offset + 1, across segments too; with allow_gaps (what
 *     compaction leaves) it only has to be larger;
 *   - a segment's name is its first batch's base offset (with allow_gaps:
 *     at most it, and above the previous segment's last offset); an empty
 *     segment's name is the previous segment's next offset;
 *   - .index entries (relative offset, position), 8 bytes each, strictly
 *     increasing in both, each position the start of a batch whose last
 *     offset is base + relative offset (Kafka indexes a batch by its last
 *     offset); the file a whole number of entries; a missing file counts as
 *     empty (Samsa creates it with the first entry);
 *   - .timeindex entries (timestamp, relative offset), 12 bytes each,
 *     timestamps strictly increasing and offsets non-decreasing, each entry
 *     naming the last offset of a batch whose max timestamp is the entry's
 *     timestamp and the largest of the segment up to that batch; the last
 *     entry of a segment that is not the last one holds the segment's
 *     largest timestamp (written when it was rolled).
 *
 * Knows nothing of check: the result is a description of the first problem
 * found, and the caller decides. Uses k_crc32c (kmsg.h).
 */
#ifndef SAMSA_COMPAT_LOGCHECK_H
#define SAMSA_COMPAT_LOGCHECK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_options {
	bool allow_gaps;    /* offsets may jump forward (compacted logs) */
	int64_t first;      /* expected base offset of the first batch, -1 for any */
} lc_options;

/* What one .log file holds (lc_scan_log). */
typedef struct lc_segment {
	int batches;
	int64_t first_base;    /* base offset of the first batch, -1 if none */
	int64_t next_offset;   /* last offset + 1 of the last batch (expect_first when empty) */
	int64_t last_base;     /* base offset of the last batch */
	size_t last_pos;       /* file position of the last batch */
	size_t end;            /* end of the last whole batch (bytes) */
	int64_t max_timestamp; /* largest batch max timestamp, -1 if none */
	char error[PATH_MAX + 512]; /* the first problem, "" if none */
} lc_segment;

/* The whole directory (lc_check_dir). */
typedef struct lc_result {
	int segments;
	int batches;
	int64_t first_offset;  /* base offset of the first batch, -1 if none */
	int64_t next_offset;   /* last offset + 1, or the last segment's name when empty */
	char error[PATH_MAX + 512]; /* the first problem, "" if none */
} lc_result;

/*
 * Walk the batches of the .log file at path: magic, length, CRC32C, and
 * base offsets starting at expect_first (-1: any) and contiguous (or only
 * increasing with allow_gaps). Fills *s; s->error names the file, the byte
 * position and the problem. Returns 0 when the file is whole, -1 otherwise
 * (also when it cannot be read).
 */
int lc_scan_log(const char *path, int64_t expect_first, bool allow_gaps, lc_segment *s);

/*
 * Check every segment of the partition directory dir and its index files
 * as described above. opt may be NULL (no gaps, any first offset). Returns
 * 0 when all is consistent, -1 with r->error describing the first problem.
 */
int lc_check_dir(const char *dir, const lc_options *opt, lc_result *r);

#endif
