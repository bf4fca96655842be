/*
 * batch.h - record batch v2 (magic 2): header layout, validation of a batch
 * as a producer sends it, and the in-place patches the log applies.
 * Source: Kafka protocol guide "Record Batch"; Kafka's DefaultRecordBatch and
 * LogValidator for the rules and the error codes.
 *
 * Header layout (61 bytes, big endian):
 *   off size field
 *     0   8  baseOffset
 *     8   4  batchLength            (bytes after this field)
 *    12   4  partitionLeaderEpoch
 *    16   1  magic                  (2)
 *    17   4  crc                    (CRC32C of bytes 21..end)
 *    21   2  attributes             (bits 0-2 compression, 3 timestamp type,
 *                                    4 transactional, 5 control, 6 delete horizon)
 *    23   4  lastOffsetDelta
 *    27   8  baseTimestamp
 *    35   8  maxTimestamp
 *    43   8  producerId
 *    51   2  producerEpoch
 *    53   4  baseSequence
 *    57   4  recordsCount
 *    61      records (possibly compressed)
 */
#ifndef SAMSA_PROTOCOL_BATCH_H
#define SAMSA_PROTOCOL_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_BATCH_HEADER_SIZE 61
#define PROTO_BATCH_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define PROTO_BATCH_OFF_BASE_OFFSET 0
#define PROTO_BATCH_OFF_LENGTH 8
#define PROTO_BATCH_OFF_LEADER_EPOCH 12
#define PROTO_BATCH_OFF_MAGIC 16
#define PROTO_BATCH_OFF_CRC 17
#define PROTO_BATCH_OFF_ATTRIBUTES 21
#define PROTO_BATCH_OFF_LAST_OFFSET_DELTA 23
#define PROTO_BATCH_OFF_BASE_TIMESTAMP 27
#define PROTO_BATCH_OFF_MAX_TIMESTAMP 35
#define PROTO_BATCH_OFF_PRODUCER_ID 43
#define PROTO_BATCH_OFF_PRODUCER_EPOCH 51
#define PROTO_BATCH_OFF_BASE_SEQUENCE 53
#define PROTO_BATCH_OFF_RECORDS_COUNT 57

#define PROTO_ATTR_COMPRESSION_MASK 0x07
#define PROTO_ATTR_TIMESTAMP_TYPE 0x08 /* set: LogAppendTime */
#define PROTO_ATTR_TRANSACTIONAL 0x10
#define PROTO_ATTR_CONTROL 0x20

enum proto_compression {
	PROTO_COMPRESSION_NONE = 0,
	PROTO_COMPRESSION_GZIP = 1,
	PROTO_COMPRESSION_SNAPPY = 2,
	PROTO_COMPRESSION_LZ4 = 3,
	PROTO_COMPRESSION_ZSTD = 4,
};

/* The decoded batch header. */
typedef struct proto_batch_info {
	int64_t base_offset;
	int32_t size; /* whole batch in bytes: batchLength + 12 */
	int32_t partition_leader_epoch;
	int8_t magic;
	uint32_t crc;
	int16_t attributes;
	int32_t last_offset_delta;
	int64_t base_timestamp; /* ms */
	int64_t max_timestamp;  /* ms */
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t records_count;
} proto_batch_info;

/*
 * Read the header of the batch at p (len bytes available). Checks only that
 * the header fits and that batchLength is sane (>= 49 and the whole batch fits
 * in len). Returns 0 or PROTO_ERR_UNDERFLOW (fewer bytes than the batch: a
 * torn tail) / PROTO_ERR_INVALID (impossible length).
 */
int proto_batch_header(const uint8_t *p, size_t len, proto_batch_info *out);

/* CRC32C (Castagnoli) of n bytes, continuing from crc (start with 0). */
uint32_t proto_crc32c(uint32_t crc, const void *p, size_t n);

/* True when the CRC stored in the batch matches bytes 21..size. */
bool proto_batch_crc_ok(const uint8_t *p, const proto_batch_info *b);

/* Limits and rules that apply to a produced batch. */
typedef struct proto_batch_rules {
	int32_t max_batch_bytes;            /* message.max.bytes / max.message.bytes */
	int64_t now_ms;                     /* broker wall clock */
	int64_t timestamp_before_max_ms;    /* log.message.timestamp.before.max.ms */
	int64_t timestamp_after_max_ms;     /* log.message.timestamp.after.max.ms */
	bool log_append_time;               /* topic uses LogAppendTime */
	bool allow_zstd;                    /* Produce v7+ */
	bool compacted;                     /* cleanup.policy has compact: every
					     * record needs a key (INVALID_RECORD) */
} proto_batch_rules;

/* Scratch memory reused across validations (decompression output). */
typedef struct proto_codec_ctx proto_codec_ctx;
typedef struct proto_scratch {
	uint8_t *buf;
	size_t cap;
	size_t max; /* never grow past this many bytes; 0 = no cap */
	proto_codec_ctx *codecs; /* decompression contexts, made on first use
				  * and reused, freed by proto_scratch_free */
} proto_scratch;

void proto_scratch_init(proto_scratch *s, size_t max_bytes);
void proto_scratch_free(proto_scratch *s);

/*
 * Give memory back after a validation: when the decompression buffer holds
 * more than keep_bytes (capacity, in bytes) it is freed (the next validation
 * grows a new one from the small start size), and so is a zstd decompression
 * context whose window buffer has grown past keep_bytes. Buffers up to
 * keep_bytes stay, so the common small batches reuse them. The scratch stays
 * usable; s->max is unchanged. Its contents are not kept (they only live
 * during one proto_batches_validate call).
 * Why: one compressed batch that expands to the cap (a "compression bomb",
 * even a refused one) must not leave the process at its peak size for good.
 */
void proto_scratch_trim(proto_scratch *s, size_t keep_bytes);

/*
 * Validate every batch in a Produce partition's records (len bytes; one or
 * more v2 batches back to back) as Kafka's LogValidator does: size, magic 2,
 * CRC32C, records count and offset deltas (decompressing gzip/snappy/lz4/zstd
 * into scratch when compressed; nothing is allocated per record), timestamps
 * against the rules, no control batches from clients.
 * Returns a Kafka error code (err.h), as Kafka 4 answers:
 *   CORRUPT_MESSAGE    CRC mismatch, impossible or torn batch length,
 *                      compression type 5-7, undecodable compressed data;
 *   MESSAGE_TOO_LARGE  batch above max_batch_bytes, or decompressed
 *                      records above scratch->max;
 *   INVALID_RECORD     no batch (len 0), magic other than 2, baseOffset not
 *                      0, records count / lastOffsetDelta / offset deltas
 *                      wrong, malformed record, control batch, producer id
 *                      without a base sequence, a record without a key
 *                      when rules->compacted (Kafka's LogValidator
 *                      validateKey: "Compacted topic cannot accept message
 *                      without key");
 *   INVALID_TIMESTAMP  a record (or maxTimestamp) outside the window, or a
 *                      producer that set the LogAppendTime type;
 *   UNSUPPORTED_COMPRESSION_TYPE  zstd when !allow_zstd.
 * More than one batch is accepted here (*nbatches says how many); Kafka
 * answers INVALID_RECORD to Produce v3+ with more than one, which is the
 * caller's check. *nbatches and *nrecords get the counts. On error,
 * *reason (if not NULL) points at a static explanation.
 */
int proto_batches_validate(const uint8_t *p, size_t len, const proto_batch_rules *rules,
			   proto_scratch *scratch, int *nbatches, int64_t *nrecords,
			   const char **reason);

/* In-place patches, outside the CRC. */
void proto_batch_set_base_offset(uint8_t *p, int64_t base_offset);
void proto_batch_set_leader_epoch(uint8_t *p, int32_t epoch);
/* LogAppendTime: set timestamp type bit and max timestamp, recompute CRC. */
void proto_batch_set_log_append_time(uint8_t *p, int64_t now_ms);

#endif
