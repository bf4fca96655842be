/*
 * records.h - the records inside a v2 record batch (Kafka protocol guide
 * "Record Batch" / "Record"; Kafka's DefaultRecord and
 * MemoryRecordsBuilder):
 *
 *   length          varint  (bytes after this field)
 *   attributes      int8    (unused, 0)
 *   timestampDelta  varlong (from the batch's baseTimestamp)
 *   offsetDelta     varint  (from the batch's baseOffset)
 *   keyLength       varint  (-1 = null key)
 *   key             bytes
 *   valueLength     varint  (-1 = null value: a tombstone)
 *   value           bytes
 *   headersCount    varint
 *   headers         [headerKeyLength varint, key, headerValueLength varint, value]
 *
 * Two tools: a builder writing one uncompressed batch of records (keys and
 * values, no headers, CreateTime; no producer id unless one is set, as for
 * a transactional offset commit) with its CRC32C, used by the broker for
 * its internal topics; and an iterator over the records of a batch,
 * decompressing a compressed batch into a caller's scratch first.
 */
#ifndef SAMSA_PROTOCOL_RECORDS_H
#define SAMSA_PROTOCOL_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/batch.h"
#include "protocol/buf.h"

/* ---- builder ---- */

typedef struct proto_batch_builder {
	proto_writer *w;
	size_t start;           /* offset of the batch in w */
	int32_t count;          /* records so far */
	int64_t base_timestamp; /* ms, the first record's */
	int64_t max_timestamp;  /* ms */
	int64_t producer_id;    /* -1 = none (the default) */
	int16_t producer_epoch; /* -1 = none */
	int32_t base_sequence;  /* -1 = none */
	bool transactional;     /* the batch's transactional attribute (bit 4) */
} proto_batch_builder;

/*
 * Start a batch at the end of w (baseOffset 0 and partitionLeaderEpoch -1:
 * the log assigns both; attributes 0 = uncompressed, CreateTime; producer
 * id/epoch and base sequence -1, as Kafka's non-idempotent writes).
 * The header is filled by proto_batch_builder_finish.
 */
void proto_batch_builder_begin(proto_batch_builder *b, proto_writer *w);

/*
 * After begin: write producer_id, producer_epoch and base_sequence into the
 * batch header instead of -1, and set the transactional attribute when
 * transactional is true. Kafka's coordinators write a transactional offset
 * commit so (MemoryRecords.builder with the request's producer id and
 * epoch, base sequence 0, isTransactional; KIP-98): the log then checks the
 * epoch and the batch belongs to the producer's open transaction until a
 * marker ends it.
 */
void proto_batch_builder_set_producer(proto_batch_builder *b, int64_t producer_id,
				      int16_t producer_epoch, int32_t base_sequence,
				      bool transactional);

/*
 * Append one record with timestamp ts (ms), key (klen bytes, -1 = null) and
 * value (vlen bytes, -1 = null, a tombstone); no headers. The bytes are
 * copied into the writer. Allocation failures show in w->err.
 */
void proto_batch_builder_add(proto_batch_builder *b, int64_t ts, const void *key, int32_t klen,
			     const void *value, int32_t vlen);

/*
 * Fill the header (batchLength, lastOffsetDelta, timestamps, records count)
 * and the CRC32C. Returns the batch size in bytes (w->buf + b->start), or
 * PROTO_ERR_INVALID when no record was added, PROTO_ERR_NOMEM when the
 * writer failed to grow.
 */
int32_t proto_batch_builder_finish(proto_batch_builder *b);

/* ---- control batches (transaction markers) ---- */

/*
 * A control batch holding one end transaction marker, as Kafka's
 * MemoryRecords.withEndTransactionMarker writes it (KIP-98): attributes
 * transactional|control, uncompressed, CreateTime, base sequence -1, one
 * record whose key is the ControlRecordType (version int16 0, type int16)
 * and whose value is the EndTransactionMarker (version int16 0, coordinator
 * epoch int32). Always PROTO_CONTROL_BATCH_SIZE bytes.
 */
#define PROTO_CONTROL_BATCH_SIZE 78
enum { PROTO_CONTROL_ABORT = 0, PROTO_CONTROL_COMMIT = 1 };

/* Write the batch at out (PROTO_CONTROL_BATCH_SIZE bytes; base offset 0 and
 * partition leader epoch -1, the log assigns both) with timestamp ts (ms)
 * and its CRC32C. */
void proto_control_batch_build(uint8_t *out, int64_t producer_id, int16_t producer_epoch,
			       int32_t coordinator_epoch, bool commit, int64_t ts);

/*
 * Read the marker of the control batch at p (len bytes, the whole batch):
 * *type gets the ControlRecordType (PROTO_CONTROL_ABORT/COMMIT or another
 * value Kafka calls UNKNOWN), *coordinator_epoch the marker's epoch.
 * Returns 0, or PROTO_ERR_INVALID when the batch is not a control batch,
 * fails its CRC, or its first record has a key shorter than 4 bytes or a
 * value shorter than 6 (Kafka's EndTransactionMarker.deserialize), or
 * PROTO_ERR_UNDERFLOW when len is short of the batch.
 */
int proto_control_batch_parse(const uint8_t *p, size_t len, int16_t *type, int32_t *coordinator_epoch);

/* ---- iterator ---- */

/* One record, its key/value/headers views into the batch or the scratch. */
typedef struct proto_record {
	int64_t offset;     /* baseOffset + offsetDelta */
	int64_t timestamp;  /* ms: baseTimestamp + delta, or maxTimestamp for LogAppendTime */
	const uint8_t *key;
	int32_t key_len;    /* -1 = null */
	const uint8_t *value;
	int32_t value_len;  /* -1 = null (tombstone) */
	int32_t headers_count;
	const uint8_t *headers; /* the raw headers section, headers_len bytes */
	size_t headers_len;
} proto_record;

typedef struct proto_record_iter {
	proto_batch_info info;
	proto_reader r;  /* over the (decompressed) records section */
	int32_t index;   /* next record */
} proto_record_iter;

/*
 * Start iterating the records of the batch at p (len bytes available, the
 * whole batch must be there). Checks magic 2, the header and the CRC32C; a
 * compressed batch is decompressed into scratch (which must outlive the
 * iteration; the records then point into scratch->buf).
 * Returns 0, PROTO_ERR_UNDERFLOW (batch truncated), PROTO_ERR_INVALID (bad
 * magic, CRC, compression type or compressed data) or PROTO_ERR_NOMEM
 * (decompressed size above scratch->max).
 */
int proto_record_iter_init(proto_record_iter *it, const uint8_t *p, size_t len,
			   proto_scratch *scratch);

/*
 * The next record: returns 1 and fills *out, 0 after the last one (the
 * records section must then be used up exactly), or PROTO_ERR_INVALID for
 * a malformed record (lengths, counts). Never reads outside the section.
 */
int proto_record_iter_next(proto_record_iter *it, proto_record *out);

#endif
