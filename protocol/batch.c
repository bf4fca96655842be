/*
 * batch.c - record batch v2: header decoding, CRC32C, validation of
 * produced batches and the in-place patches the log applies (batch.h).
 *
 * Rules and error codes follow Kafka 4: ProduceRequest.validateRecords
 * (magic 2 only, zstd needs Produce v7+), UnifiedLog's
 * analyzeAndValidateRecords (baseOffset 0 from clients, size against
 * max.message.bytes, CRC), LogValidator.validateBatch (offset range versus
 * records count, no control batches, sequence with a producer id),
 * DefaultRecord.readFrom (record layout) and LogValidator.validateTimestamp.
 */
#include "protocol/batch.h"

#include <limits.h>
#include <string.h>

#include <isa-l/crc.h>

#include "protocol/buf.h"
#include "protocol/compress.h"
#include "protocol/err.h"

static inline uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }
static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* Minimum batchLength: the header after the length field. */
#define MIN_BATCH_LENGTH (PROTO_BATCH_HEADER_SIZE - PROTO_BATCH_LOG_OVERHEAD)
/* Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest length any magic
 * may announce (ByteBufferLogInputStream). */
#define MIN_LEGACY_LENGTH 14

int proto_batch_header(const uint8_t *p, size_t len, proto_batch_info *out)
{
	memset(out, 0, sizeof(*out));
	if (len < PROTO_BATCH_LOG_OVERHEAD)
		return PROTO_ERR_UNDERFLOW;
	int32_t blen = (int32_t)be32(p + PROTO_BATCH_OFF_LENGTH);
	if (blen < MIN_BATCH_LENGTH || blen > INT32_MAX - PROTO_BATCH_LOG_OVERHEAD)
		return PROTO_ERR_INVALID;
	if ((size_t)blen + PROTO_BATCH_LOG_OVERHEAD > len)
		return PROTO_ERR_UNDERFLOW;
	out->base_offset = (int64_t)be64(p + PROTO_BATCH_OFF_BASE_OFFSET);
	out->size = blen + PROTO_BATCH_LOG_OVERHEAD;
	out->partition_leader_epoch = (int32_t)be32(p + PROTO_BATCH_OFF_LEADER_EPOCH);
	out->magic = (int8_t)p[PROTO_BATCH_OFF_MAGIC];
	out->crc = be32(p + PROTO_BATCH_OFF_CRC);
	out->attributes = (int16_t)be16(p + PROTO_BATCH_OFF_ATTRIBUTES);
	out->last_offset_delta = (int32_t)be32(p + PROTO_BATCH_OFF_LAST_OFFSET_DELTA);
	out->base_timestamp = (int64_t)be64(p + PROTO_BATCH_OFF_BASE_TIMESTAMP);
	out->max_timestamp = (int64_t)be64(p + PROTO_BATCH_OFF_MAX_TIMESTAMP);
	out->producer_id = (int64_t)be64(p + PROTO_BATCH_OFF_PRODUCER_ID);
	out->producer_epoch = (int16_t)be16(p + PROTO_BATCH_OFF_PRODUCER_EPOCH);
	out->base_sequence = (int32_t)be32(p + PROTO_BATCH_OFF_BASE_SEQUENCE);
	out->records_count = (int32_t)be32(p + PROTO_BATCH_OFF_RECORDS_COUNT);
	return 0;
}

/*
 * crc32_iscsi(buf, len, seed) runs the reflected Castagnoli CRC without the
 * final inversion and with seed as the raw register, so the standard CRC32C
 * (init ~0, final ~0; CRC32C("123456789") = 0xE3069283) is
 * ~crc32_iscsi(buf, len, ~crc) with crc = 0 to start. It takes an int
 * length, hence the loop.
 */
uint32_t proto_crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t reg = ~crc;
	while (n > 0) {
		size_t step = n > (size_t)1 << 30 ? (size_t)1 << 30 : n;
		reg = crc32_iscsi((unsigned char *)b, (int)step, reg);
		b += step;
		n -= step;
	}
	return ~reg;
}

bool proto_batch_crc_ok(const uint8_t *p, const proto_batch_info *b)
{
	if (b->size < PROTO_BATCH_HEADER_SIZE)
		return false;
	return proto_crc32c(0, p + PROTO_BATCH_OFF_ATTRIBUTES,
			    (size_t)b->size - PROTO_BATCH_OFF_ATTRIBUTES) == b->crc;
}

void proto_batch_set_base_offset(uint8_t *p, int64_t base_offset)
{
	put64(p + PROTO_BATCH_OFF_BASE_OFFSET, (uint64_t)base_offset);
}

void proto_batch_set_leader_epoch(uint8_t *p, int32_t epoch)
{
	put32(p + PROTO_BATCH_OFF_LEADER_EPOCH, (uint32_t)epoch);
}

void proto_batch_set_log_append_time(uint8_t *p, int64_t now_ms)
{
	uint16_t attr = be16(p + PROTO_BATCH_OFF_ATTRIBUTES) | PROTO_ATTR_TIMESTAMP_TYPE;
	p[PROTO_BATCH_OFF_ATTRIBUTES] = (uint8_t)(attr >> 8);
	p[PROTO_BATCH_OFF_ATTRIBUTES + 1] = (uint8_t)attr;
	put64(p + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)now_ms);
	size_t size = (size_t)be32(p + PROTO_BATCH_OFF_LENGTH) + PROTO_BATCH_LOG_OVERHEAD;
	uint32_t crc = proto_crc32c(0, p + PROTO_BATCH_OFF_ATTRIBUTES, size - PROTO_BATCH_OFF_ATTRIBUTES);
	put32(p + PROTO_BATCH_OFF_CRC, crc);
}

/* ---- validation ---- */

#define FAIL(code, why)                                                                       \
	do {                                                                                  \
		if (reason != NULL)                                                           \
			*reason = (why);                                                      \
		return (code);                                                                \
	} while (0)

/* Kafka's recordHasInvalidTimestamp, without Java's long wrap-around:
 * now - ts > before_max or ts - now > after_max. */
static bool timestamp_out_of_range(int64_t ts, const proto_batch_rules *rules)
{
	int64_t d;
	if (__builtin_sub_overflow(rules->now_ms, ts, &d))
		return true; /* |now - ts| exceeds any int64 limit */
	if (d > 0)
		return d > rules->timestamp_before_max_ms;
	if (d == INT64_MIN)
		return true;
	return -d > rules->timestamp_after_max_ms;
}

/*
 * Walk the records of one batch (already decompressed): the layout of
 * DefaultRecord, exactly records_count of them filling len bytes, offset
 * deltas 0, 1, ... and each timestamp checked as LogValidator does.
 */
static int check_records(const uint8_t *p, size_t len, const proto_batch_info *b,
			 const proto_batch_rules *rules, const char **reason)
{
	proto_reader r;
	proto_reader_init(&r, p, len);
	bool append_time_batch = (b->attributes & PROTO_ATTR_TIMESTAMP_TYPE) != 0;
	for (int32_t i = 0; i < b->records_count; i++) {
		int32_t rlen = proto_read_varint(&r);
		if (r.err != 0)
			FAIL(KERR_INVALID_RECORD, "record length unreadable (premature end of records)");
		if (rlen < 0 || (size_t)rlen > proto_reader_left(&r))
			FAIL(KERR_INVALID_RECORD, "record length exceeds the records section");
		proto_reader rec;
		proto_reader_init(&rec, r.p, (size_t)rlen);
		proto_skip(&r, (size_t)rlen);

		(void)proto_read_int8(&rec); /* record attributes: unused */
		int64_t ts_delta = proto_read_varlong(&rec);
		int32_t offset_delta = proto_read_varint(&rec);
		int32_t klen = proto_read_varint(&rec);
		if (klen < -1)
			FAIL(KERR_INVALID_RECORD, "negative record key length");
		if (klen < 0 && rules->compacted)
			FAIL(KERR_INVALID_RECORD, "Compacted topic cannot accept message without key");
		if (klen > 0)
			proto_skip(&rec, (size_t)klen);
		int32_t vlen = proto_read_varint(&rec);
		if (vlen < -1)
			FAIL(KERR_INVALID_RECORD, "negative record value length");
		if (vlen > 0)
			proto_skip(&rec, (size_t)vlen);
		int32_t nheaders = proto_read_varint(&rec);
		if (rec.err == 0 && (nheaders < 0 || (size_t)nheaders > proto_reader_left(&rec)))
			FAIL(KERR_INVALID_RECORD, "invalid number of record headers");
		for (int32_t h = 0; h < nheaders && rec.err == 0; h++) {
			int32_t hk = proto_read_varint(&rec);
			if (hk < 0)
				FAIL(KERR_INVALID_RECORD, "negative header key length");
			proto_skip(&rec, (size_t)hk);
			int32_t hv = proto_read_varint(&rec);
			if (hv < -1)
				FAIL(KERR_INVALID_RECORD, "negative header value length");
			if (hv > 0)
				proto_skip(&rec, (size_t)hv);
		}
		if (rec.err != 0)
			FAIL(KERR_INVALID_RECORD, "record shorter than its fields");
		if (proto_reader_left(&rec) != 0)
			FAIL(KERR_INVALID_RECORD, "record length does not match its fields");
		if (offset_delta != i)
			FAIL(KERR_INVALID_RECORD, "record offset deltas are not 0, 1, 2, ...");

		/* Record.timestamp(): the batch max timestamp in a
		 * LogAppendTime batch, else baseTimestamp + delta. */
		int64_t ts = append_time_batch
				     ? b->max_timestamp
				     : (int64_t)((uint64_t)b->base_timestamp + (uint64_t)ts_delta);
		if (!rules->log_append_time && ts != -1) {
			if (timestamp_out_of_range(ts, rules))
				FAIL(KERR_INVALID_TIMESTAMP, "record timestamp out of the accepted range");
		} else if (append_time_batch) {
			FAIL(KERR_INVALID_TIMESTAMP, "producer set the LogAppendTime timestamp type");
		}
	}
	if (proto_reader_left(&r) != 0)
		FAIL(KERR_INVALID_RECORD, "bytes left after the last record");
	return KERR_NONE;
}

static int validate_one(const uint8_t *p, size_t left, const proto_batch_rules *rules,
			proto_scratch *scratch, proto_batch_info *b, const char **reason)
{
	/* Framing first, as ByteBufferLogInputStream: length field, whole
	 * batch present. Magic sits at offset 16 in every format. */
	if (left < PROTO_BATCH_OFF_MAGIC + 1)
		FAIL(KERR_CORRUPT_MESSAGE, "trailing bytes shorter than a batch header");
	int32_t blen = (int32_t)be32(p + PROTO_BATCH_OFF_LENGTH);
	if (blen < MIN_LEGACY_LENGTH)
		FAIL(KERR_CORRUPT_MESSAGE, "batch length below the minimum record overhead");
	if ((uint64_t)blen + PROTO_BATCH_LOG_OVERHEAD > left)
		FAIL(KERR_CORRUPT_MESSAGE, "batch length runs past the end of the records");
	if (p[PROTO_BATCH_OFF_MAGIC] != 2)
		FAIL(KERR_INVALID_RECORD, "only record batches with magic 2 are accepted");
	if (proto_batch_header(p, left, b) != 0)
		FAIL(KERR_CORRUPT_MESSAGE, "batch length smaller than the v2 batch header");

	int codec = b->attributes & PROTO_ATTR_COMPRESSION_MASK;
	if (codec > PROTO_COMPRESSION_ZSTD)
		FAIL(KERR_CORRUPT_MESSAGE, "unknown compression type");
	if (codec == PROTO_COMPRESSION_ZSTD && !rules->allow_zstd)
		FAIL(KERR_UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later");
	if (b->base_offset != 0)
		FAIL(KERR_INVALID_RECORD, "baseOffset of a produced batch must be 0");
	if (b->size > rules->max_batch_bytes)
		FAIL(KERR_MESSAGE_TOO_LARGE, "batch larger than max.message.bytes");
	if (!proto_batch_crc_ok(p, b))
		FAIL(KERR_CORRUPT_MESSAGE, "batch CRC32C mismatch");

	/* LogValidator.validateBatch for client appends. */
	if (b->last_offset_delta < 0)
		FAIL(KERR_INVALID_RECORD, "invalid offset range (lastOffsetDelta < 0)");
	if (b->records_count <= 0)
		FAIL(KERR_INVALID_RECORD, "invalid records count");
	if ((int64_t)b->last_offset_delta + 1 != b->records_count)
		FAIL(KERR_INVALID_RECORD, "lastOffsetDelta inconsistent with records count");
	if (b->attributes & PROTO_ATTR_CONTROL)
		FAIL(KERR_INVALID_RECORD, "clients may not write control batches");
	if (b->producer_id >= 0 && b->base_sequence < 0)
		FAIL(KERR_INVALID_RECORD, "producer id set with a negative base sequence");

	if (!rules->log_append_time && b->max_timestamp != -1 &&
	    !(b->attributes & PROTO_ATTR_TIMESTAMP_TYPE) &&
	    timestamp_out_of_range(b->max_timestamp, rules))
		FAIL(KERR_INVALID_TIMESTAMP, "batch max timestamp out of the accepted range");

	const uint8_t *recs = p + PROTO_BATCH_HEADER_SIZE;
	size_t recs_len = (size_t)b->size - PROTO_BATCH_HEADER_SIZE;
	if (codec != PROTO_COMPRESSION_NONE) {
		size_t out_len;
		int rc = proto_decompress(codec, recs, recs_len, scratch, &out_len);
		if (rc == PROTO_ERR_NOMEM)
			FAIL(KERR_MESSAGE_TOO_LARGE, "decompressed records larger than the validation limit");
		if (rc != 0)
			FAIL(KERR_CORRUPT_MESSAGE, "compressed records do not decompress");
		recs = scratch->buf;
		recs_len = out_len;
	}
	return check_records(recs, recs_len, b, rules, reason);
}

int proto_batches_validate(const uint8_t *p, size_t len, const proto_batch_rules *rules,
			   proto_scratch *scratch, int *nbatches, int64_t *nrecords,
			   const char **reason)
{
	*nbatches = 0;
	*nrecords = 0;
	if (reason != NULL)
		*reason = NULL;
	if (len == 0 || p == NULL)
		FAIL(KERR_INVALID_RECORD, "no record batch");
	size_t pos = 0;
	while (pos < len) {
		proto_batch_info b;
		int rc = validate_one(p + pos, len - pos, rules, scratch, &b, reason);
		if (rc != KERR_NONE)
			return rc;
		(*nbatches)++;
		*nrecords += b.records_count;
		pos += (size_t)b.size;
	}
	return KERR_NONE;
}
