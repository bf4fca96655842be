/*
 * testutil.h - helpers for the storage tests: temp directories and valid
 * record batch v2 builders (records uncompressed, CRC32C from protocol/).
 */
#ifndef SAMSA_STORAGE_TESTUTIL_H
#define SAMSA_STORAGE_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Create (tu_begin) and remove (tu_end) one base directory under /tmp for
 * the whole test program, in the parent process, so temp dirs go even when a
 * forked test dies before its teardown. */
void tu_begin(void);
void tu_end(void);
/* mkdtemp under the base directory into out (>= 128 bytes); aborts on failure. */
void tu_tmpdir(char *out);
/* Remove a directory tree (files and one level of subdirectories). */
void tu_rmrf(const char *path);

typedef struct tu_batch_opts {
	int nrecords;        /* >= 1 */
	int64_t base_ts;     /* first record timestamp (ms), -1 for none */
	int64_t ts_step;     /* added per record */
	int value_size;      /* bytes of value per record */
	bool log_append_time;
} tu_batch_opts;

/* Build one valid v2 batch at out (cap bytes); returns its size. */
size_t tu_batch(uint8_t *out, size_t cap, const tu_batch_opts *o);
/* Recompute the CRC after editing a batch. */
void tu_batch_fix_crc(uint8_t *b);
/* Size of a file (-1 when missing). */
int64_t tu_file_size(const char *path);
/* dir/<20-digit base><suffix> */
void tu_seg_path(char *out, size_t cap, const char *dir, int64_t base, const char *suffix);
/* Read a file into a malloc'ed buffer (caller frees). */
uint8_t *tu_read_file(const char *path, size_t *len);
/* Count directory entries ending with suffix. */
int tu_count_files(const char *dir, const char *suffix);

/* Make the batch at b (built by tu_batch) a producer's: id pid, epoch,
 * base sequence seq, transactional when txn; CRC recomputed. */
void tu_batch_set_producer(uint8_t *b, int64_t pid, int16_t epoch, int32_t seq, bool txn);

/*
 * What a partition log shows from outside, for comparing two logs (a
 * leader and its follower) or one log before and after a reopen: offsets,
 * the last stable offset, the epoch cache as OffsetsForLeaderEpoch sees it
 * (epochs -1..TU_EPOCHS-2), the producers (their last batch only: a
 * snapshot keeps no more), the aborted transactions from the log start,
 * and every byte from the log start to the log end.
 */
#define TU_EPOCHS 16
#define TU_PRODUCERS 16
typedef struct tu_log_state {
	int64_t start, leo, hw, lso;
	int32_t latest_epoch;
	int32_t end_epoch[TU_EPOCHS];
	int64_t end_offset[TU_EPOCHS];
	size_t nproducers;
	struct {
		int64_t id, last_ts, txn_first_offset, last_offset;
		int32_t coordinator_epoch, first_seq, last_seq, offset_delta;
		int16_t epoch;
	} producers[TU_PRODUCERS]; /* by id */
	int naborted;
	struct {
		int64_t producer_id, first_offset, last_offset, last_stable_offset;
	} aborted[TU_PRODUCERS];
	uint8_t *bytes;
	size_t nbytes;
} tu_log_state;

struct log_partition;
void tu_log_state_get(struct log_partition *lp, tu_log_state *st);
void tu_log_state_free(tu_log_state *st);
/* ck_assert that a and b are the same. */
void tu_log_state_assert_eq(const tu_log_state *a, const tu_log_state *b);

#endif
