/*
 * records.c - building uncompressed v2 record batches and iterating the
 * records of any v2 batch (records.h). Layouts: Kafka's DefaultRecordBatch
 * and DefaultRecord.
 */
#include "protocol/records.h"

#include <string.h>

#include "protocol/compress.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* ---- builder ---- */

void proto_batch_builder_begin(proto_batch_builder *b, proto_writer *w)
{
	b->w = w;
	b->count = 0;
	b->base_timestamp = -1;
	b->max_timestamp = -1;
	b->producer_id = -1;
	b->producer_epoch = -1;
	b->base_sequence = -1;
	b->transactional = false;
	b->start = proto_writer_reserve(w, PROTO_BATCH_HEADER_SIZE);
}

void proto_batch_builder_set_producer(proto_batch_builder *b, int64_t producer_id,
				      int16_t producer_epoch, int32_t base_sequence,
				      bool transactional)
{
	b->producer_id = producer_id;
	b->producer_epoch = producer_epoch;
	b->base_sequence = base_sequence;
	b->transactional = transactional;
}

void proto_batch_builder_add(proto_batch_builder *b, int64_t ts, const void *key, int32_t klen,
			     const void *value, int32_t vlen)
{
	if (b->count == 0) {
		b->base_timestamp = ts;
		b->max_timestamp = ts;
	} else if (ts > b->max_timestamp) {
		b->max_timestamp = ts;
	}
	int64_t ts_delta = (int64_t)((uint64_t)ts - (uint64_t)b->base_timestamp);
	if (klen < 0)
		klen = -1;
	if (vlen < 0)
		vlen = -1;
	int64_t body = 1 + proto_varlong_size(ts_delta) + proto_varint_size(b->count) +
		       proto_varint_size(klen) + (klen > 0 ? klen : 0) + proto_varint_size(vlen) +
		       (vlen > 0 ? vlen : 0) + proto_varint_size(0);
	proto_writer *w = b->w;
	proto_write_varint(w, (int32_t)body);
	proto_write_int8(w, 0);
	proto_write_varlong(w, ts_delta);
	proto_write_varint(w, b->count);
	proto_write_varint(w, klen);
	if (klen > 0)
		proto_write_raw(w, key, (size_t)klen);
	proto_write_varint(w, vlen);
	if (vlen > 0)
		proto_write_raw(w, value, (size_t)vlen);
	proto_write_varint(w, 0); /* headers */
	b->count++;
}

int32_t proto_batch_builder_finish(proto_batch_builder *b)
{
	proto_writer *w = b->w;
	if (w->err != 0)
		return PROTO_ERR_NOMEM;
	if (b->count == 0)
		return PROTO_ERR_INVALID;
	size_t size = w->len - b->start;
	if (size > INT32_MAX)
		return PROTO_ERR_NOMEM;
	uint8_t *p = w->buf + b->start;
	put64(p + PROTO_BATCH_OFF_BASE_OFFSET, 0);
	put32(p + PROTO_BATCH_OFF_LENGTH, (uint32_t)(size - PROTO_BATCH_LOG_OVERHEAD));
	put32(p + PROTO_BATCH_OFF_LEADER_EPOCH, (uint32_t)-1);
	p[PROTO_BATCH_OFF_MAGIC] = 2;
	put16(p + PROTO_BATCH_OFF_ATTRIBUTES, b->transactional ? PROTO_ATTR_TRANSACTIONAL : 0);
	put32(p + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(b->count - 1));
	put64(p + PROTO_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)b->base_timestamp);
	put64(p + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)b->max_timestamp);
	put64(p + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)b->producer_id);
	put16(p + PROTO_BATCH_OFF_PRODUCER_EPOCH, (uint16_t)b->producer_epoch);
	put32(p + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)b->base_sequence);
	put32(p + PROTO_BATCH_OFF_RECORDS_COUNT, (uint32_t)b->count);
	uint32_t crc = proto_crc32c(0, p + PROTO_BATCH_OFF_ATTRIBUTES, size - PROTO_BATCH_OFF_ATTRIBUTES);
	put32(p + PROTO_BATCH_OFF_CRC, crc);
	return (int32_t)size;
}

/* ---- iterator ---- */

int proto_record_iter_init(proto_record_iter *it, const uint8_t *p, size_t len,
			   proto_scratch *scratch)
{
	memset(it, 0, sizeof(*it));
	if (len < PROTO_BATCH_OFF_MAGIC + 1)
		return PROTO_ERR_UNDERFLOW;
	if (p[PROTO_BATCH_OFF_MAGIC] != 2)
		return PROTO_ERR_INVALID;
	int rc = proto_batch_header(p, len, &it->info);
	if (rc != 0)
		return rc;
	if (!proto_batch_crc_ok(p, &it->info))
		return PROTO_ERR_INVALID;
	if (it->info.records_count < 0)
		return PROTO_ERR_INVALID;
	const uint8_t *recs = p + PROTO_BATCH_HEADER_SIZE;
	size_t recs_len = (size_t)it->info.size - PROTO_BATCH_HEADER_SIZE;
	int codec = it->info.attributes & PROTO_ATTR_COMPRESSION_MASK;
	if (codec != PROTO_COMPRESSION_NONE) {
		if (codec > PROTO_COMPRESSION_ZSTD)
			return PROTO_ERR_INVALID;
		size_t out_len = 0;
		rc = proto_decompress(codec, recs, recs_len, scratch, &out_len);
		if (rc == PROTO_ERR_NOMEM)
			return rc;
		if (rc != 0)
			return PROTO_ERR_INVALID;
		recs = scratch->buf;
		recs_len = out_len;
	}
	proto_reader_init(&it->r, recs, recs_len);
	return 0;
}

int proto_record_iter_next(proto_record_iter *it, proto_record *out)
{
	proto_reader *r = &it->r;
	if (it->index >= it->info.records_count)
		return proto_reader_left(r) == 0 ? 0 : PROTO_ERR_INVALID;
	int32_t rlen = proto_read_varint(r);
	if (r->err != 0 || rlen < 0 || (size_t)rlen > proto_reader_left(r))
		return PROTO_ERR_INVALID;
	proto_reader rec;
	proto_reader_init(&rec, r->p, (size_t)rlen);
	proto_skip(r, (size_t)rlen);

	(void)proto_read_int8(&rec);
	int64_t ts_delta = proto_read_varlong(&rec);
	int32_t offset_delta = proto_read_varint(&rec);
	int32_t klen = proto_read_varint(&rec);
	if (rec.err != 0 || klen < -1 || (klen > 0 && (size_t)klen > proto_reader_left(&rec)))
		return PROTO_ERR_INVALID;
	out->key = klen >= 0 ? rec.p : NULL;
	out->key_len = klen;
	if (klen > 0)
		proto_skip(&rec, (size_t)klen);
	int32_t vlen = proto_read_varint(&rec);
	if (rec.err != 0 || vlen < -1 || (vlen > 0 && (size_t)vlen > proto_reader_left(&rec)))
		return PROTO_ERR_INVALID;
	out->value = vlen >= 0 ? rec.p : NULL;
	out->value_len = vlen;
	if (vlen > 0)
		proto_skip(&rec, (size_t)vlen);
	int32_t nheaders = proto_read_varint(&rec);
	if (rec.err != 0 || nheaders < 0 || (size_t)nheaders > proto_reader_left(&rec))
		return PROTO_ERR_INVALID;
	out->headers_count = nheaders;
	out->headers = rec.p;
	for (int32_t h = 0; h < nheaders && rec.err == 0; h++) {
		int32_t hk = proto_read_varint(&rec);
		if (hk < 0)
			return PROTO_ERR_INVALID;
		proto_skip(&rec, (size_t)hk);
		int32_t hv = proto_read_varint(&rec);
		if (hv < -1)
			return PROTO_ERR_INVALID;
		if (hv > 0)
			proto_skip(&rec, (size_t)hv);
	}
	if (rec.err != 0 || proto_reader_left(&rec) != 0)
		return PROTO_ERR_INVALID;
	out->headers_len = (size_t)(rec.p - out->headers);
	/* wrapping, as the timestamp below: an unvalidated batch (a control
	 * batch read back, a fuzzed one) may sit at INT64_MAX */
	out->offset = (int64_t)((uint64_t)it->info.base_offset + (uint64_t)(int64_t)offset_delta);
	out->timestamp = (it->info.attributes & PROTO_ATTR_TIMESTAMP_TYPE)
				 ? it->info.max_timestamp
				 : (int64_t)((uint64_t)it->info.base_timestamp + (uint64_t)ts_delta);
	it->index++;
	return 1;
}

/* ---- control batches ---- */

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, (uint16_t)(v >> 16));
	be16(p + 2, (uint16_t)v);
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

void proto_control_batch_build(uint8_t *out, int64_t producer_id, int16_t producer_epoch,
			       int32_t coordinator_epoch, bool commit, int64_t ts)
{
	memset(out, 0, PROTO_CONTROL_BATCH_SIZE);
	be32(out + PROTO_BATCH_OFF_LENGTH, PROTO_CONTROL_BATCH_SIZE - PROTO_BATCH_LOG_OVERHEAD);
	be32(out + PROTO_BATCH_OFF_LEADER_EPOCH, UINT32_MAX);
	out[PROTO_BATCH_OFF_MAGIC] = 2;
	be16(out + PROTO_BATCH_OFF_ATTRIBUTES, PROTO_ATTR_TRANSACTIONAL | PROTO_ATTR_CONTROL);
	be32(out + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 0);
	be64(out + PROTO_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)ts);
	be64(out + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)ts);
	be64(out + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)producer_id);
	be16(out + PROTO_BATCH_OFF_PRODUCER_EPOCH, (uint16_t)producer_epoch);
	be32(out + PROTO_BATCH_OFF_BASE_SEQUENCE, UINT32_MAX);
	be32(out + PROTO_BATCH_OFF_RECORDS_COUNT, 1);
	uint8_t *r = out + PROTO_BATCH_HEADER_SIZE;
	r[0] = 16 << 1; /* length varint: 16 bytes follow */
	r[1] = 0;       /* attributes */
	r[2] = 0;       /* timestampDelta */
	r[3] = 0;       /* offsetDelta */
	r[4] = 4 << 1;  /* keyLength 4 */
	be16(r + 5, 0); /* ControlRecordType version */
	be16(r + 7, commit ? PROTO_CONTROL_COMMIT : PROTO_CONTROL_ABORT);
	r[9] = 6 << 1;  /* valueLength 6 */
	be16(r + 10, 0); /* EndTransactionMarker version */
	be32(r + 12, (uint32_t)coordinator_epoch);
	r[16] = 0;      /* headersCount */
	be32(out + PROTO_BATCH_OFF_CRC,
	     proto_crc32c(0, out + PROTO_BATCH_OFF_ATTRIBUTES, PROTO_CONTROL_BATCH_SIZE - PROTO_BATCH_OFF_ATTRIBUTES));
}

int proto_control_batch_parse(const uint8_t *p, size_t len, int16_t *type, int32_t *coordinator_epoch)
{
	proto_scratch scratch;
	proto_scratch_init(&scratch, 1 << 20);
	proto_record_iter it;
	proto_record rec;
	int rc = proto_record_iter_init(&it, p, len, &scratch);
	if (rc == 0 && !(it.info.attributes & PROTO_ATTR_CONTROL))
		rc = PROTO_ERR_INVALID;
	if (rc == 0 && proto_record_iter_next(&it, &rec) != 1)
		rc = PROTO_ERR_INVALID;
	if (rc == 0 && (rec.key_len < 4 || rec.value_len < 6))
		rc = PROTO_ERR_INVALID;
	if (rc == 0) {
		*type = (int16_t)((uint16_t)rec.key[2] << 8 | rec.key[3]);
		*coordinator_epoch = (int32_t)((uint32_t)rec.value[2] << 24 | (uint32_t)rec.value[3] << 16 |
					       (uint32_t)rec.value[4] << 8 | rec.value[5]);
	}
	proto_scratch_free(&scratch);
	return rc;
}
