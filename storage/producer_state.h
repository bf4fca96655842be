/*
 * producer_state.h - per-partition producer state for idempotent producers
 * (Kafka's ProducerStateManager, ProducerStateEntry and ProducerAppendInfo,
 * KIP-98): for every producer id the epoch and the metadata of its last 5
 * batches, checked on append (duplicates, sequence gaps, fenced epochs),
 * and the <20-digit offset>.snapshot files that persist it.
 *
 * Snapshot file (Kafka's PID_SNAPSHOT_MAP_SCHEMA, big endian):
 *   version int16 (1), crc uint32 (CRC32C of every byte after it),
 *   int32 count, then count entries of 46 bytes:
 *   producer_id int64, epoch int16, last_sequence int32, last_offset int64,
 *   offset_delta int32, timestamp int64, coordinator_epoch int32,
 *   current_txn_first_offset int64.
 * As in Kafka a snapshot keeps only the last batch of each producer; the
 * older ones come back only when the log after the snapshot is replayed.
 *
 * Transactions (KIP-98, Kafka's ProducerStateManager ongoingTxns and
 * unreplicatedTxns): a producer's first transactional batch starts a
 * transaction at its base offset (the entry's txn_first_offset); its end
 * marker (a control batch) completes it. The state keeps the list of
 * transactions that are ongoing, or completed with a marker not yet below
 * the high watermark, sorted by first offset: the first one bounds the
 * last stable offset.
 *
 * Memory: one open-addressing hash table of entries (no allocation per
 * batch or record); it grows only when a new producer id appears.
 * Threading: the owner's (the partition's event loop).
 */
#ifndef SAMSA_STORAGE_PRODUCER_STATE_H
#define SAMSA_STORAGE_PRODUCER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/batch.h"
#include "storage/err.h"

/* Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN */
#define LOG_PRODUCER_BATCHES 5
#define LOG_SNAPSHOT_SUFFIX ".snapshot"
#define LOG_SNAPSHOT_ENTRY_SIZE 46
#define LOG_SNAPSHOT_HEADER_SIZE 10

/* Kafka's BatchMetadata. */
typedef struct log_producer_batch {
	int32_t first_seq;
	int32_t last_seq;
	int64_t last_offset;
	int32_t offset_delta; /* last offset - first offset */
	int64_t max_ts;       /* ms */
} log_producer_batch;

static inline int64_t log_producer_batch_first_offset(const log_producer_batch *b)
{
	return b->last_offset - b->offset_delta;
}

typedef struct log_producer_entry {
	int64_t producer_id;       /* -1: free slot */
	int16_t epoch;             /* -1: no epoch known */
	uint8_t nbatches;          /* batches[] holds the last nbatches, */
	uint8_t head;              /* oldest at head (a ring) */
	int32_t coordinator_epoch; /* -1 */
	int64_t last_ts;           /* max timestamp of the last batch (ms), -1 */
	int64_t txn_first_offset;  /* first offset of the ongoing transaction, -1 */
	log_producer_batch batches[LOG_PRODUCER_BATCHES];
} log_producer_entry;

/* A transaction that bounds the last stable offset. */
typedef struct log_txn {
	int64_t producer_id;
	int64_t first_offset;
	int64_t last_offset; /* its marker's offset once completed, -1 while ongoing */
} log_txn;

/* What an end transaction marker completed (Kafka's CompletedTxn);
 * producer_id -1 when the producer had no ongoing transaction. */
typedef struct log_completed_txn {
	int64_t producer_id;
	int64_t first_offset;
	int64_t last_offset; /* the marker's offset */
	bool aborted;
} log_completed_txn;

typedef struct log_producer_state {
	log_producer_entry *slots; /* cap slots, cap a power of two (or 0) */
	size_t cap, n;
	log_txn *txns;             /* ntxn, sorted by first offset (see above) */
	size_t ntxn, txncap;
	int64_t map_end_offset;    /* state covers the log below this offset */
	int64_t snap_offset;       /* offset of the latest snapshot written or read */
	int64_t last_expire_ms;    /* last removal of expired producers */
} log_producer_state;

/* Producer sequence arithmetic, wrapping from INT32_MAX to 0 (Kafka's
 * DefaultRecordBatch.incrementSequence/decrementSequence). */
int32_t log_seq_add(int32_t seq, int32_t n);
int32_t log_seq_sub(int32_t seq, int32_t n);

void log_pstate_init(log_producer_state *ps);
void log_pstate_free(log_producer_state *ps);
/* Drop every entry and transaction (map end and snapshot offsets are left
 * as they are). */
void log_pstate_clear(log_producer_state *ps);

/* The entry of producer_id, or NULL. Valid until the next change. */
const log_producer_entry *log_pstate_find(const log_producer_state *ps, int64_t producer_id);

/* Make room for n more producers, so that log_pstate_put of n new ids
 * cannot fail. Returns 0 or -ENOMEM. */
int log_pstate_reserve(log_producer_state *ps, size_t n);
/* Store e (a copy) under e->producer_id, replacing the entry there. Needs
 * room (log_pstate_reserve); returns 0 or -ENOMEM. */
int log_pstate_put(log_producer_state *ps, const log_producer_entry *e);

/* An entry for producer_id with no epoch and no batches (Kafka's
 * ProducerStateEntry.empty). */
void log_pentry_empty(log_producer_entry *e, int64_t producer_id);
/* The newest cached batch, or NULL when none. */
const log_producer_batch *log_pentry_last(const log_producer_entry *e);
/* Record a batch written at [base_offset, base_offset + last_offset_delta]
 * (Kafka's ProducerStateEntry.addBatch: a new epoch drops the cached
 * batches; the oldest of 5 makes room). */
void log_pentry_add_batch(log_producer_entry *e, const proto_batch_info *h, int64_t base_offset);

/* The cached batch of e with exactly h's sequence range and epoch (Kafka's
 * findDuplicateBatch), or NULL. */
const log_producer_batch *log_pentry_find_duplicate(const log_producer_entry *e,
						    const proto_batch_info *h);

/*
 * Kafka's ProducerAppendInfo checks for a client's data batch h against e
 * (the producer's state including earlier batches of the same append);
 * orig_epoch is the epoch the producer had before this append (-1 when the
 * partition knew no state for it). Returns 0,
 * LOG_ERR_INVALID_PRODUCER_EPOCH (epoch below e's), or
 * LOG_ERR_OUT_OF_ORDER_SEQUENCE (a new epoch not starting at sequence 0
 * while an epoch was known, or, same epoch, a base sequence other than the
 * last sequence + 1; any sequence is accepted when orig_epoch is -1).
 */
int log_pentry_check(const log_producer_entry *e, int16_t orig_epoch, const proto_batch_info *h);

/*
 * Kafka's ProducerAppendInfo.appendEndTxnMarker checks for a marker from
 * producer epoch `epoch` written by a coordinator at coordinator_epoch:
 * LOG_ERR_INVALID_PRODUCER_EPOCH when epoch is below e's,
 * LOG_ERR_TRANSACTION_COORDINATOR_FENCED when coordinator_epoch is below
 * the one of e's last marker; else 0.
 */
int log_pentry_check_marker(const log_producer_entry *e, int16_t epoch, int32_t coordinator_epoch);

/*
 * Apply an end transaction marker written at offset (Kafka's
 * appendEndTxnMarker, no checks): *done gets the transaction it completes
 * (producer_id -1 when none was ongoing: an empty transaction, which
 * neither moves the last stable offset nor goes to the .txnindex); the
 * entry takes the epoch (a new one drops its cached batches), the
 * coordinator epoch and ts (ms) and has no ongoing transaction after.
 */
void log_pentry_end_txn(log_producer_entry *e, int16_t epoch, int32_t coordinator_epoch, bool commit,
			int64_t offset, int64_t ts, log_completed_txn *done);

/* Make room for n more transactions in ps->txns, so that
 * log_pstate_txn_begin cannot fail. 0 or -ENOMEM. */
int log_pstate_txn_reserve(log_producer_state *ps, size_t n);
/* Add producer_id's ongoing transaction starting at first_offset (room
 * reserved). */
void log_pstate_txn_begin(log_producer_state *ps, int64_t producer_id, int64_t first_offset);
/* Mark producer_id's ongoing transaction completed by its marker at
 * last_offset (Kafka's completeTxn); nothing when it has none. */
void log_pstate_txn_complete(log_producer_state *ps, int64_t producer_id, int64_t last_offset);
/* Forget the completed transactions whose marker is below hw (Kafka's
 * onHighWatermarkUpdated). */
void log_pstate_txn_on_hw(log_producer_state *ps, int64_t hw);
/* The first offset of the earliest transaction in the list, -1 when none
 * (Kafka's firstUnstableOffset). */
int64_t log_pstate_first_unstable(const log_producer_state *ps);
/* The last stable offset stored with an aborted transaction (Kafka's
 * ProducerStateManager.lastStableOffset(CompletedTxn)): the first offset of
 * the earliest ongoing transaction of another producer, else the marker's
 * offset + 1. */
int64_t log_pstate_lso_for(const log_producer_state *ps, const log_completed_txn *t);

/* Replay a batch read from the log at h->base_offset (Kafka's
 * loadProducersFromRecords, no checks): producer id >= 0 batches update
 * their producer, a transactional one starting its transaction; the map
 * end offset moves past the batch. A control batch replayed here (its
 * marker unknown) ends the transaction as a commit would. Returns 0 or
 * -ENOMEM. */
int log_pstate_replay(log_producer_state *ps, const proto_batch_info *h);

/* log_pstate_replay for a control batch whose marker was read: commit
 * tells its type, coordinator_epoch its epoch; *done gets the transaction
 * it completed (see log_pentry_end_txn), which is then completed in the
 * list. Returns 0 or -ENOMEM. */
int log_pstate_replay_marker(log_producer_state *ps, const proto_batch_info *h, bool commit,
			     int32_t coordinator_epoch, log_completed_txn *done);

/* Remove producers whose last timestamp is expiration_ms or more before
 * now_ms and that have no ongoing transaction (Kafka's
 * removeExpiredProducers, producer.id.expiration.ms). */
void log_pstate_expire(log_producer_state *ps, int64_t now_ms, int64_t expiration_ms);

/*
 * Write dir/<20-digit offset>.snapshot with every entry (through a .tmp and
 * a rename; fsync of the file when sync, the directory is the caller's).
 * Sets snap_offset. Returns 0 or -errno.
 */
int log_pstate_write_snapshot(log_producer_state *ps, const char *dir, int64_t offset, bool sync);

/*
 * Replace ps's entries with the snapshot file at path, dropping the
 * producers already expired at now_ms (as Kafka's loadFromSnapshot); the
 * entries with a current transaction first offset are the ongoing
 * transactions again. On success map_end_offset and snap_offset become
 * offset. Returns 0,
 * LOG_ERR_CORRUPT (bad size, version or CRC: ps is left empty) or -errno.
 */
int log_pstate_read_snapshot(log_producer_state *ps, const char *path, int64_t offset,
			     int64_t now_ms, int64_t expiration_ms);

/* Offsets of the dir's *.snapshot files, ascending, in a malloc'ed array
 * the caller frees (NULL when none). Returns 0 or -errno. */
int log_pstate_list_snapshots(const char *dir, int64_t **offsets, size_t *n);
/* Remove dir/<offset>.snapshot. Returns 0 or -errno. */
int log_pstate_remove_snapshot(const char *dir, int64_t offset);

#endif
