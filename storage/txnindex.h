/*
 * txnindex.h - a segment's transaction index (.txnindex), Kafka's
 * TransactionIndex and AbortedTxn (KIP-98): one entry per aborted
 * transaction whose abort marker is in the segment, in marker order.
 *
 * Entry (34 bytes, big endian):
 *   off size
 *     0   2  version (0)
 *     2   8  producer id
 *    10   8  first offset of the transaction
 *    18   8  last offset (the offset of the abort marker)
 *    26   8  last stable offset when the marker was written
 *
 * The file is created with the first entry (a segment without aborted
 * transactions has none, as in Kafka) and kept in memory once loaded.
 * Last offsets strictly increase; a load keeps the entries up to the first
 * one that is torn, of another version or out of order (and cuts the file
 * there). No descriptor is held: a load reads the file and closes it, a
 * write opens it for the call (aborted transactions are rare), an fsync
 * goes by path (log_io_fsync_file), so the flush thread needs nothing of
 * the struct. Threading: the partition's event loop.
 */
#ifndef SAMSA_STORAGE_TXNINDEX_H
#define SAMSA_STORAGE_TXNINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_TXNINDEX_ENTRY_SIZE 34
#define LOG_TXNINDEX_SUFFIX ".txnindex"

/* Kafka's AbortedTxn. */
typedef struct log_aborted_txn {
	int64_t producer_id;
	int64_t first_offset;
	int64_t last_offset;        /* the abort marker's offset */
	int64_t last_stable_offset; /* Kafka's ProducerStateManager.lastStableOffset(completedTxn) */
} log_aborted_txn;

typedef struct log_txnindex {
	char *path;          /* owned */
	log_aborted_txn *v;  /* n entries in memory when loaded */
	size_t n, cap;
	size_t nfile;        /* entries written to the file */
	bool loaded;
	bool dirty;          /* written since the last fsync */
} log_txnindex;

/* Set up for dir/<20-digit base>.txnindex (no I/O). 0 or -ENOMEM / -ENAMETOOLONG. */
int log_txnindex_init(log_txnindex *ti, const char *dir, int64_t base);
/* Free memory (the struct can be initialised again). */
void log_txnindex_destroy(log_txnindex *ti);

/* Read the file into memory (a missing file is an empty index); a bad
 * tail (see above) is cut from memory and file, with a note on stderr.
 * Returns 0 or -errno. */
int log_txnindex_load(log_txnindex *ti);

/* Make room for one more entry so log_txnindex_append cannot fail for
 * memory (loads the index first). 0 or -errno. */
int log_txnindex_reserve(log_txnindex *ti);

/*
 * Add an entry (Kafka's TransactionIndex.append): its last offset must be
 * above the last entry's, else -EINVAL and nothing changes. The entry is
 * kept in memory even when the write fails; log_txnindex_sync writes it
 * later. Returns 0, -EINVAL, -ENOMEM or the write's -errno.
 */
int log_txnindex_append(log_txnindex *ti, const log_aborted_txn *a);
/* Write the entries not yet in the file. 0 or -errno. */
int log_txnindex_sync(log_txnindex *ti);

/* The last offset of the last entry, -1 when empty (loads the index). */
int64_t log_txnindex_last_offset(log_txnindex *ti);

/* Drop the entries whose last offset is >= offset, in memory and file
 * (Kafka's TransactionIndex.truncateTo). 0 or -errno. */
int log_txnindex_truncate(log_txnindex *ti, int64_t offset);

/* Remove the file and empty the index (segment deleted or created anew).
 * 0 or -errno. */
int log_txnindex_remove(log_txnindex *ti);

/* Callback for each aborted transaction found: 0 to go on, or a negative
 * value that stops the search and is returned by the caller. */
typedef int (*log_aborted_txn_fn)(void *arg, const log_aborted_txn *a);

/*
 * Kafka's TransactionIndex.collectAbortedTxns: call fn for each entry with
 * last offset >= fetch_offset and first offset < upper_bound_offset.
 * *complete becomes true at the first entry whose last stable offset is
 * >= upper_bound_offset (no later segment can hold a transaction that
 * matters). Returns the number of calls made (>= 0), fn's negative result,
 * or -errno from loading.
 */
int log_txnindex_collect(log_txnindex *ti, int64_t fetch_offset, int64_t upper_bound_offset,
			 log_aborted_txn_fn fn, void *arg, bool *complete);

#endif
