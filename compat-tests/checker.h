/*
 * checker.h - a history checker in the style of Jepsen's Kafka workload
 * (jepsen.tests.kafka; CLUSTER.md 4 "The checker"), for the cluster tests.
 *
 * A history has two kinds of entries:
 *   - writes: every value a producer sent, with its partition and outcome,
 *     in the order the producer learnt the outcomes: acknowledged at an
 *     offset, failed definitely (nothing was written: NOT_ENOUGH_REPLICAS
 *     before the append, never sent...), or indeterminate (it may or may not
 *     have been written: a timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
 *     NOT_LEADER_OR_FOLLOWER after the append, a lost connection);
 *   - reads: every (partition, offset, value) a consumer saw; at least one
 *     final read of every partition from offset 0 to its end.
 *
 * chk_check verifies:
 *   (L) no loss: every acknowledged (value, partition, offset) was read at
 *       that partition and offset ("lost" when the value was never read,
 *       "misplaced" when it was read elsewhere); a value acknowledged
 *       without an offset (offset < 0: librdkafka's idempotent producer
 *       acknowledges a record whose own request failed once a later one of
 *       the same partition succeeded, "implicitly acked", without knowing
 *       its offset) must be read in its partition;
 *   (D) no divergence: no (partition, offset) was seen with two different
 *       values, across all acknowledgements and reads;
 *   (M) monotonic offsets: the offsets acknowledged to one producer for one
 *       partition increase, in the order the acknowledgements arrived (those
 *       without an offset left out);
 *   (F) a definitely failed value is never read;
 * and, with chk_options.idempotent, that no value was read at two
 * different offsets (a duplicate); without it duplicates are only counted.
 * A value read that no producer wrote is a violation too ("unknown"), and
 * one read in another partition than it was written to counts as
 * misplaced. Indeterminate values may be read once or not at all.
 *
 * The report also gives the longest time without a successful produce:
 * the longest gap between successive acknowledgement times, including
 * the gaps from the start and to the end of the run when chk_span named
 * them.
 *
 * Values are NUL-terminated strings, unique across the writes of one
 * history (a repeated write is refused). Not thread-safe: feed it from one
 * thread (collect per producer, then feed). No check, no librdkafka.
 */
#ifndef SAMSA_COMPAT_CHECKER_H
#define SAMSA_COMPAT_CHECKER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum chk_outcome {
	CHK_ACKED = 1,     /* acknowledged at an offset */
	CHK_FAILED,        /* definitely not written */
	CHK_INDETERMINATE, /* may or may not have been written */
} chk_outcome;

typedef struct chk_options {
	bool idempotent; /* a duplicate is a violation (else it is only counted) */
	bool allow_loss; /* lost acknowledged values are counted, not violations
	                  * (acks=1 across a leader change, unclean election) */
} chk_options;

#define CHK_EXAMPLES 8

typedef struct chk_report {
	long writes;            /* chk_write calls */
	long acked, failed, indeterminate;
	long acked_no_offset;   /* of the acknowledged: without an offset */
	long reads;             /* chk_read calls */
	long values_read;       /* distinct values read */
	long lost;              /* L: acknowledged, never read */
	long misplaced;         /* L: acknowledged or written, read elsewhere */
	long divergent;         /* D: (partition, offset)s with two or more values */
	long nonmonotonic;      /* M: acknowledgements with an offset not above the last */
	long failed_read;       /* F: definitely failed values that were read */
	long duplicated;        /* values read at more than one (partition, offset) */
	long unknown;           /* values read that were never written */
	long indeterminate_read; /* indeterminate values that were read (not a violation) */
	int64_t longest_gap_ms; /* longest time with no successful produce */
	int64_t gap_from_ms;    /* where it started (the time base of chk_write) */
	bool ok;                /* no violation under the options */
	int nexamples;
	char examples[CHK_EXAMPLES][256]; /* the first violations, explained */
} chk_report;

typedef struct chk chk;

/* An empty history; NULL when out of memory. */
chk *chk_new(void);
void chk_free(chk *h);

/*
 * A value producer sent to partition and its outcome; offset is the
 * acknowledged offset (ignored unless CHK_ACKED; < 0 when the
 * acknowledgement did not give one), t_ms when the outcome was
 * learnt (any monotonic ms; used for the longest gap). Call in the order the
 * producer learnt the outcomes. 0, or -1 when value was written before (a
 * test bug) or on out of memory.
 */
int chk_write(chk *h, int producer, int32_t partition, const char *value, chk_outcome o,
	      int64_t offset, int64_t t_ms);

/* value was read at partition/offset. 0, or -1 on out of memory. */
int chk_read(chk *h, int32_t partition, int64_t offset, const char *value);

/* The run lasted from start_ms to end_ms (same clock as chk_write's t_ms):
 * the gaps before the first and after the last acknowledgement count. */
void chk_span(chk *h, int64_t start_ms, int64_t end_ms);

/* Check the history; r is filled (opt NULL: not idempotent, no loss
 * allowed). */
void chk_check(const chk *h, const chk_options *opt, chk_report *r);

/* The report in a few lines: the counts, then the examples. */
void chk_report_print(const chk_report *r, FILE *f);

#endif
