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

#endif
