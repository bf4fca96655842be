/*
 * test_records.c - unit tests for protocol/records.c: a batch built with
 * the builder passes Kafka's produce validation and iterates back to the
 * same records (null keys, tombstones, timestamps, offsets); a batch with a
 * producer id, epoch, base sequence and the transactional attribute; a hand-checked
 * byte layout of one record; a gzip- and a zstd-compressed batch through the
 * iterator; corrupt input (CRC, magic, record lengths) is refused; a
 * record's offset at the top of the int64 range wraps instead of
 * overflowing (fuzz_batch's regress-offset-overflow).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "protocol/batch.h"
#include "protocol/buf.h"
#include "protocol/err.h"
#include "protocol/records.h"

#define NOW 1700000000000LL

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

/* Three records: key+value, null key, tombstone. */
static int32_t build_three(proto_writer *w)
{
	proto_batch_builder b;
	proto_batch_builder_begin(&b, w);
	proto_batch_builder_add(&b, NOW, "k1", 2, "value-1", 7);
	proto_batch_builder_add(&b, NOW + 5, NULL, -1, "v2", 2);
	proto_batch_builder_add(&b, NOW + 2, "k3", 2, NULL, -1);
	return proto_batch_builder_finish(&b);
}

START_TEST(test_build_validates_and_iterates)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_int32(&w, 12345); /* the batch need not start at 0 */
	int32_t size = build_three(&w);
	ck_assert_int_gt(size, PROTO_BATCH_HEADER_SIZE);
	ck_assert_uint_eq((size_t)size + 4, w.len);
	const uint8_t *batch = w.buf + 4;

	proto_batch_rules rules = { .max_batch_bytes = 1 << 20, .now_ms = NOW,
				    .timestamp_before_max_ms = INT64_MAX,
				    .timestamp_after_max_ms = 3600000, .allow_zstd = true };
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	int nb;
	int64_t nr;
	ck_assert_int_eq(proto_batches_validate(batch, (size_t)size, &rules, &s, &nb, &nr, NULL),
			 KERR_NONE);
	ck_assert_int_eq(nb, 1);
	ck_assert_int_eq(nr, 3);

	proto_batch_info bi;
	ck_assert_int_eq(proto_batch_header(batch, (size_t)size, &bi), 0);
	ck_assert_int_eq(bi.base_timestamp, NOW);
	ck_assert_int_eq(bi.max_timestamp, NOW + 5);
	ck_assert_int_eq(bi.producer_id, -1);
	ck_assert_int_eq(bi.producer_epoch, -1);
	ck_assert_int_eq(bi.base_sequence, -1);
	ck_assert_int_eq(bi.partition_leader_epoch, -1);
	ck_assert_int_eq(bi.last_offset_delta, 2);

	/* As the log would: a base offset patched outside the CRC. */
	uint8_t *copy = malloc((size_t)size);
	memcpy(copy, batch, (size_t)size);
	proto_batch_set_base_offset(copy, 100);

	proto_record_iter it;
	ck_assert_int_eq(proto_record_iter_init(&it, copy, (size_t)size, &s), 0);
	proto_record r;
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(r.offset, 100);
	ck_assert_int_eq(r.timestamp, NOW);
	ck_assert_int_eq(r.key_len, 2);
	ck_assert(memcmp(r.key, "k1", 2) == 0);
	ck_assert_int_eq(r.value_len, 7);
	ck_assert(memcmp(r.value, "value-1", 7) == 0);
	ck_assert_int_eq(r.headers_count, 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(r.offset, 101);
	ck_assert_int_eq(r.timestamp, NOW + 5);
	ck_assert_int_eq(r.key_len, -1);
	ck_assert_ptr_null(r.key);
	ck_assert_int_eq(r.value_len, 2);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(r.offset, 102);
	ck_assert_int_eq(r.timestamp, NOW + 2);
	ck_assert_int_eq(r.value_len, -1);
	ck_assert_ptr_null(r.value);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 0);
	free(copy);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A transactional batch (a transactional offset commit): the producer
 * fields and attribute land in the header bytes, inside the CRC. */
START_TEST(test_build_with_producer)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_set_producer(&b, 0x123456789aLL, 7, 0, true);
	proto_batch_builder_add(&b, NOW, "k", 1, "v", 1);
	proto_batch_builder_add(&b, NOW, "k2", 2, "v2", 2);
	int32_t size = proto_batch_builder_finish(&b);
	ck_assert_int_gt(size, PROTO_BATCH_HEADER_SIZE);
	const uint8_t *p = w.buf;
	ck_assert_uint_eq(get_be(p + PROTO_BATCH_OFF_PRODUCER_ID, 8), 0x123456789aULL);
	ck_assert_uint_eq(get_be(p + PROTO_BATCH_OFF_PRODUCER_EPOCH, 2), 7);
	ck_assert_uint_eq(get_be(p + PROTO_BATCH_OFF_BASE_SEQUENCE, 4), 0);
	ck_assert_uint_eq(get_be(p + PROTO_BATCH_OFF_ATTRIBUTES, 2), PROTO_ATTR_TRANSACTIONAL);

	proto_batch_info bi;
	ck_assert_int_eq(proto_batch_header(p, (size_t)size, &bi), 0);
	ck_assert_int_eq(bi.producer_id, 0x123456789aLL);
	ck_assert_int_eq(bi.producer_epoch, 7);
	ck_assert_int_eq(bi.base_sequence, 0);
	ck_assert(bi.attributes & PROTO_ATTR_TRANSACTIONAL);
	ck_assert(!(bi.attributes & PROTO_ATTR_CONTROL));
	ck_assert_int_eq(bi.last_offset_delta, 1);

	/* The CRC covers the producer fields: the batch iterates, and a
	 * changed epoch breaks it. */
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	proto_record_iter it;
	ck_assert_int_eq(proto_record_iter_init(&it, p, (size_t)size, &s), 0);
	proto_record r;
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 0);
	w.buf[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] ^= 1;
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size, &s), PROTO_ERR_INVALID);

	/* An idempotent, non-transactional batch: producer fields only. */
	proto_writer_reset(&w);
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_set_producer(&b, 5, 1, 10, false);
	proto_batch_builder_add(&b, NOW, "k", 1, "v", 1);
	size = proto_batch_builder_finish(&b);
	ck_assert_int_eq(proto_batch_header(w.buf, (size_t)size, &bi), 0);
	ck_assert_int_eq(bi.producer_id, 5);
	ck_assert_int_eq(bi.producer_epoch, 1);
	ck_assert_int_eq(bi.base_sequence, 10);
	ck_assert_int_eq(bi.attributes, 0);

	/* begin resets to the default after a producer batch. */
	proto_writer_reset(&w);
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_add(&b, NOW, "k", 1, "v", 1);
	size = proto_batch_builder_finish(&b);
	ck_assert_int_eq(proto_batch_header(w.buf, (size_t)size, &bi), 0);
	ck_assert_int_eq(bi.producer_id, -1);
	ck_assert_int_eq(bi.producer_epoch, -1);
	ck_assert_int_eq(bi.base_sequence, -1);
	ck_assert_int_eq(bi.attributes, 0);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

/* One record, key "a", value "bc", at the batch base timestamp: bytes
 * derived by hand from the DefaultRecord layout. */
START_TEST(test_record_bytes)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_add(&b, 7, "a", 1, "bc", 2);
	int32_t size = proto_batch_builder_finish(&b);
	/* length 9 (zigzag 18 = 0x12), attributes 0, ts delta 0, offset
	 * delta 0, key length 1 (0x02) 'a', value length 2 (0x04) 'b' 'c',
	 * headers 0. */
	static const uint8_t want[] = { 0x12, 0x00, 0x00, 0x00, 0x02, 'a', 0x04, 'b', 'c', 0x00 };
	ck_assert_int_eq(size, PROTO_BATCH_HEADER_SIZE + (int)sizeof(want));
	ck_assert(memcmp(w.buf + PROTO_BATCH_HEADER_SIZE, want, sizeof(want)) == 0);
	/* batchLength = size - 12, magic 2, records count 1. */
	ck_assert_int_eq(w.buf[11], (uint8_t)(size - 12));
	ck_assert_int_eq(w.buf[16], 2);
	ck_assert_int_eq(w.buf[60], 1);
	proto_batch_info bi;
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &bi), 0);
	ck_assert(proto_batch_crc_ok(w.buf, &bi));

	/* An empty batch is refused. */
	proto_writer_reset(&w);
	proto_batch_builder_begin(&b, &w);
	ck_assert_int_eq(proto_batch_builder_finish(&b), PROTO_ERR_INVALID);
	proto_writer_free(&w);
}
END_TEST

/* Re-pack a built batch with its records section compressed by codec. */
static uint8_t *compress_batch(const uint8_t *batch, int32_t size, int codec, size_t *out_size)
{
	const uint8_t *recs = batch + PROTO_BATCH_HEADER_SIZE;
	size_t rlen = (size_t)size - PROTO_BATCH_HEADER_SIZE;
	size_t cap = rlen + 1024;
	uint8_t *out = malloc(PROTO_BATCH_HEADER_SIZE + cap);
	size_t clen = 0;
	if (codec == PROTO_COMPRESSION_GZIP) {
		z_stream z;
		memset(&z, 0, sizeof(z));
		ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
		z.next_in = (Bytef *)(uintptr_t)recs;
		z.avail_in = (uInt)rlen;
		z.next_out = out + PROTO_BATCH_HEADER_SIZE;
		z.avail_out = (uInt)cap;
		ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
		clen = z.total_out;
		deflateEnd(&z);
	} else {
		clen = ZSTD_compress(out + PROTO_BATCH_HEADER_SIZE, cap, recs, rlen, 3);
		ck_assert(!ZSTD_isError(clen));
	}
	memcpy(out, batch, PROTO_BATCH_HEADER_SIZE);
	size_t total = PROTO_BATCH_HEADER_SIZE + clen;
	put32(out + PROTO_BATCH_OFF_LENGTH, (uint32_t)(total - PROTO_BATCH_LOG_OVERHEAD));
	put16(out + PROTO_BATCH_OFF_ATTRIBUTES, (uint16_t)codec);
	put32(out + PROTO_BATCH_OFF_CRC,
	      proto_crc32c(0, out + PROTO_BATCH_OFF_ATTRIBUTES, total - PROTO_BATCH_OFF_ATTRIBUTES));
	*out_size = total;
	return out;
}

static void check_compressed(int codec)
{
	proto_writer w;
	proto_writer_init(&w);
	int32_t size = build_three(&w);
	size_t csize;
	uint8_t *c = compress_batch(w.buf, size, codec, &csize);
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	proto_record_iter it;
	ck_assert_int_eq(proto_record_iter_init(&it, c, csize, &s), 0);
	proto_record r;
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert(memcmp(r.value, "value-1", 7) == 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(r.key_len, -1);
	ck_assert(memcmp(r.value, "v2", 2) == 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert(memcmp(r.key, "k3", 2) == 0);
	ck_assert_int_eq(r.value_len, -1);
	ck_assert_int_eq(r.offset, 2);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 0);

	/* Garbage in place of the compressed data: refused. */
	memset(c + PROTO_BATCH_HEADER_SIZE, 0x55, csize - PROTO_BATCH_HEADER_SIZE);
	put32(c + PROTO_BATCH_OFF_CRC,
	      proto_crc32c(0, c + PROTO_BATCH_OFF_ATTRIBUTES, csize - PROTO_BATCH_OFF_ATTRIBUTES));
	ck_assert_int_eq(proto_record_iter_init(&it, c, csize, &s), PROTO_ERR_INVALID);
	free(c);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}

START_TEST(test_gzip_batch) { check_compressed(PROTO_COMPRESSION_GZIP); }
END_TEST

START_TEST(test_zstd_batch) { check_compressed(PROTO_COMPRESSION_ZSTD); }
END_TEST

START_TEST(test_corrupt)
{
	proto_writer w;
	proto_writer_init(&w);
	int32_t size = build_three(&w);
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	proto_record_iter it;
	/* Truncated. */
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size - 1, &s),
			 PROTO_ERR_UNDERFLOW);
	/* CRC mismatch. */
	w.buf[size - 1] ^= 1;
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size, &s), PROTO_ERR_INVALID);
	w.buf[size - 1] ^= 1;
	/* Magic 1. */
	w.buf[PROTO_BATCH_OFF_MAGIC] = 1;
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size, &s), PROTO_ERR_INVALID);
	w.buf[PROTO_BATCH_OFF_MAGIC] = 2;
	/* First record's length one too large (CRC fixed up): the first
	 * record is refused, nothing is read past the section. */
	w.buf[PROTO_BATCH_HEADER_SIZE] += 2; /* zigzag: +1 */
	put32(w.buf + PROTO_BATCH_OFF_CRC, proto_crc32c(0, w.buf + PROTO_BATCH_OFF_ATTRIBUTES,
						       (size_t)size - PROTO_BATCH_OFF_ATTRIBUTES));
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size, &s), 0);
	proto_record r;
	ck_assert_int_eq(proto_record_iter_next(&it, &r), PROTO_ERR_INVALID);
	w.buf[PROTO_BATCH_HEADER_SIZE] -= 2;
	/* Records count one too high: the end is detected. */
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 4);
	put32(w.buf + PROTO_BATCH_OFF_CRC, proto_crc32c(0, w.buf + PROTO_BATCH_OFF_ATTRIBUTES,
						       (size_t)size - PROTO_BATCH_OFF_ATTRIBUTES));
	ck_assert_int_eq(proto_record_iter_init(&it, w.buf, (size_t)size, &s), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), PROTO_ERR_INVALID);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

/* fuzz_batch found base offset + offset delta overflowing int64 in a
 * control batch read without validation: the record's offset now wraps
 * (UBSan in the sanitizer build fails this test otherwise). */
START_TEST(test_offset_at_int64_max)
{
	uint8_t b[PROTO_CONTROL_BATCH_SIZE];
	proto_control_batch_build(b, 7, 1, 3, true, NOW);
	for (int i = 0; i < 8; i++)
		b[i] = i == 0 ? 0x7f : 0xff; /* base offset INT64_MAX */
	b[PROTO_BATCH_HEADER_SIZE + 3] = 2; /* offsetDelta 1 (zigzag) */
	put32(b + PROTO_BATCH_OFF_CRC, proto_crc32c(0, b + PROTO_BATCH_OFF_ATTRIBUTES,
						   PROTO_CONTROL_BATCH_SIZE - PROTO_BATCH_OFF_ATTRIBUTES));
	int16_t type = -1;
	int32_t epoch = -1;
	ck_assert_int_eq(proto_control_batch_parse(b, sizeof b, &type, &epoch), 0);
	ck_assert_int_eq(type, PROTO_CONTROL_COMMIT);
	ck_assert_int_eq(epoch, 3);
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	proto_record_iter it;
	proto_record r;
	ck_assert_int_eq(proto_record_iter_init(&it, b, sizeof b, &s), 0);
	ck_assert_int_eq(proto_record_iter_next(&it, &r), 1);
	ck_assert(r.offset == INT64_MIN);
	proto_scratch_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("records");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_build_validates_and_iterates);
	tcase_add_test(tc, test_record_bytes);
	tcase_add_test(tc, test_build_with_producer);
	tcase_add_test(tc, test_gzip_batch);
	tcase_add_test(tc, test_zstd_batch);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_offset_at_int64_max);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
