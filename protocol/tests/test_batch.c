/*
 * test_batch.c - unit tests for protocol/batch.c and compress.c: CRC32C
 * vectors, header decoding, validation of uncompressed and gzip / snappy
 * (raw and xerial) / lz4 / zstd batches built here with the codec
 * libraries, each rejection class with Kafka's error code, and the in-place
 * patches (base offset, leader epoch outside the CRC; LogAppendTime inside).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "protocol/batch.h"
#include "protocol/buf.h"
#include "protocol/err.h"

#define NOW 1700000000000LL
#define HOUR 3600000LL

/* ---- batch builder ---- */

enum { ZSTD_NO_CONTENT_SIZE = 100, SNAPPY_XERIAL = 101 };

typedef struct build_opts {
	int codec; /* PROTO_COMPRESSION_* or one of the enum above */
	int n;     /* records */
	int64_t base_ts;
	int value_size;      /* bytes per value */
	bool swap_offsets;   /* records 0 and 1 get each other's offset delta */
	bool bad_rec_length; /* first record's length prefix one too large */
	bool trailing_byte;  /* one byte after the last record */
} build_opts;

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
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The uncompressed records section (DefaultRecord layout). */
static void build_records(proto_writer *w, const build_opts *o)
{
	proto_writer body;
	proto_writer_init(&body);
	char *value = malloc((size_t)o->value_size + 1);
	for (int i = 0; i < o->n; i++) {
		proto_writer_reset(&body);
		proto_write_int8(&body, 0);
		proto_write_varlong(&body, i); /* timestamp delta */
		int od = i;
		if (o->swap_offsets && i < 2)
			od = 1 - i;
		proto_write_varint(&body, od);
		char key[16];
		int klen = snprintf(key, sizeof(key), "k%d", i);
		proto_write_varint(&body, klen);
		proto_write_raw(&body, key, (size_t)klen);
		for (int j = 0; j < o->value_size; j++)
			value[j] = (char)('a' + (i + j) % 26);
		proto_write_varint(&body, o->value_size);
		proto_write_raw(&body, value, (size_t)o->value_size);
		if (i % 2 == 0) {
			proto_write_varint(&body, 2);     /* headers */
			proto_write_varint(&body, 1);     /* key length */
			proto_write_raw(&body, "h", 1);
			proto_write_varint(&body, 2);     /* value length */
			proto_write_raw(&body, "hv", 2);
			proto_write_varint(&body, 2);
			proto_write_raw(&body, "h2", 2);
			proto_write_varint(&body, -1);    /* null value */
		} else {
			proto_write_varint(&body, 0);
		}
		int32_t len = (int32_t)body.len;
		if (o->bad_rec_length && i == 0)
			len += 1;
		proto_write_varint(w, len);
		proto_write_raw(w, body.buf, body.len);
	}
	if (o->trailing_byte)
		proto_write_int8(w, 0);
	free(value);
	proto_writer_free(&body);
}

static void compress_into(proto_writer *out, int codec, const uint8_t *src, size_t len)
{
	switch (codec) {
	case PROTO_COMPRESSION_NONE:
		proto_write_raw(out, src, len);
		break;
	case PROTO_COMPRESSION_GZIP: {
		z_stream z;
		memset(&z, 0, sizeof(z));
		ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		size_t cap = deflateBound(&z, (uLong)len) + 64;
		uint8_t *buf = malloc(cap);
		z.next_in = (Bytef *)src;
		z.avail_in = (uInt)len;
		z.next_out = buf;
		z.avail_out = (uInt)cap;
		ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
		proto_write_raw(out, buf, cap - z.avail_out);
		deflateEnd(&z);
		free(buf);
		break;
	}
	case PROTO_COMPRESSION_SNAPPY: {
		size_t cap = snappy_max_compressed_length(len);
		char *buf = malloc(cap);
		ck_assert_int_eq(snappy_compress((const char *)src, len, buf, &cap), SNAPPY_OK);
		proto_write_raw(out, buf, cap);
		free(buf);
		break;
	}
	case SNAPPY_XERIAL: {
		/* snappy-java framing: magic, version 1, compatible 1, then
		 * blocks of int32 length + raw snappy; two blocks here. */
		static const uint8_t magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };
		proto_write_raw(out, magic, 8);
		proto_write_int32(out, 1);
		proto_write_int32(out, 1);
		size_t half = len / 2;
		const uint8_t *part[2] = { src, src + half };
		size_t plen[2] = { half, len - half };
		for (int i = 0; i < 2; i++) {
			size_t cap = snappy_max_compressed_length(plen[i]);
			char *buf = malloc(cap);
			ck_assert_int_eq(snappy_compress((const char *)part[i], plen[i], buf, &cap),
					 SNAPPY_OK);
			proto_write_int32(out, (int32_t)cap);
			proto_write_raw(out, buf, cap);
			free(buf);
		}
		break;
	}
	case PROTO_COMPRESSION_LZ4: {
		size_t cap = LZ4F_compressFrameBound(len, NULL);
		uint8_t *buf = malloc(cap);
		size_t n = LZ4F_compressFrame(buf, cap, src, len, NULL);
		ck_assert(!LZ4F_isError(n));
		proto_write_raw(out, buf, n);
		free(buf);
		break;
	}
	case PROTO_COMPRESSION_ZSTD: {
		size_t cap = ZSTD_compressBound(len);
		uint8_t *buf = malloc(cap);
		size_t n = ZSTD_compress(buf, cap, src, len, 3);
		ck_assert(!ZSTD_isError(n));
		ck_assert(ZSTD_getFrameContentSize(buf, n) == len);
		proto_write_raw(out, buf, n);
		free(buf);
		break;
	}
	case ZSTD_NO_CONTENT_SIZE: {
		/* Streaming without a pledged size: no content size in the
		 * frame header, as some clients write. */
		ZSTD_CCtx *c = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
		size_t cap = ZSTD_compressBound(len) + 64;
		uint8_t *buf = malloc(cap);
		ZSTD_outBuffer ob = { buf, cap, 0 };
		ZSTD_inBuffer ib = { src, len, 0 };
		size_t r;
		do {
			r = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
			ck_assert(!ZSTD_isError(r));
		} while (r != 0);
		ck_assert(ZSTD_getFrameContentSize(buf, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
		proto_write_raw(out, buf, ob.pos);
		ZSTD_freeCCtx(c);
		free(buf);
		break;
	}
	default:
		ck_abort_msg("bad codec in test");
	}
}

static int attr_codec(int codec)
{
	if (codec == ZSTD_NO_CONTENT_SIZE)
		return PROTO_COMPRESSION_ZSTD;
	if (codec == SNAPPY_XERIAL)
		return PROTO_COMPRESSION_SNAPPY;
	return codec;
}

static void recrc(uint8_t *p)
{
	size_t size = ((size_t)p[8] << 24 | (size_t)p[9] << 16 | (size_t)p[10] << 8 | p[11]) + 12;
	put32(p + PROTO_BATCH_OFF_CRC, proto_crc32c(0, p + 21, size - 21));
}

/* Append one complete batch to w; returns its offset in w. */
static size_t build_batch(proto_writer *w, const build_opts *o)
{
	proto_writer raw;
	proto_writer_init(&raw);
	build_records(&raw, o);
	size_t at = proto_writer_reserve(w, PROTO_BATCH_HEADER_SIZE);
	compress_into(w, o->codec, raw.buf, raw.len);
	proto_writer_free(&raw);
	uint8_t *p = w->buf + at;
	size_t size = w->len - at;
	put64(p + PROTO_BATCH_OFF_BASE_OFFSET, 0);
	put32(p + PROTO_BATCH_OFF_LENGTH, (uint32_t)(size - 12));
	put32(p + PROTO_BATCH_OFF_LEADER_EPOCH, (uint32_t)-1);
	p[PROTO_BATCH_OFF_MAGIC] = 2;
	put16(p + PROTO_BATCH_OFF_ATTRIBUTES, (uint16_t)attr_codec(o->codec));
	put32(p + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(o->n - 1));
	put64(p + PROTO_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)o->base_ts);
	put64(p + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)(o->base_ts + o->n - 1));
	put64(p + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)-1);
	put16(p + PROTO_BATCH_OFF_PRODUCER_EPOCH, (uint16_t)-1);
	put32(p + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)-1);
	put32(p + PROTO_BATCH_OFF_RECORDS_COUNT, (uint32_t)o->n);
	recrc(p);
	return at;
}

static build_opts defaults(int codec)
{
	build_opts o = { .codec = codec, .n = 10, .base_ts = NOW - 1000, .value_size = 100 };
	return o;
}

static proto_batch_rules rules(void)
{
	proto_batch_rules r = {
		.max_batch_bytes = 1048588,
		.now_ms = NOW,
		.timestamp_before_max_ms = INT64_MAX,
		.timestamp_after_max_ms = HOUR,
		.log_append_time = false,
		.allow_zstd = true,
	};
	return r;
}

static int validate(const proto_writer *w, const proto_batch_rules *r, int *nb, int64_t *nr,
		    const char **why)
{
	proto_scratch s;
	proto_scratch_init(&s, 16 << 20);
	int rc = proto_batches_validate(w->buf, w->len, r, &s, nb, nr, why);
	proto_scratch_free(&s);
	return rc;
}

static int validate_simple(const proto_writer *w, const proto_batch_rules *r)
{
	int nb;
	int64_t nr;
	const char *why = NULL;
	int rc = validate(w, r, &nb, &nr, &why);
	if (rc != 0)
		ck_assert_ptr_nonnull(why);
	return rc;
}

/* ---- CRC ---- */

START_TEST(test_crc32c_vectors)
{
	ck_assert_uint_eq(proto_crc32c(0, "123456789", 9), 0xE3069283u);
	/* Continuation gives the same result as one pass. */
	uint32_t c = proto_crc32c(0, "1234", 4);
	ck_assert_uint_eq(proto_crc32c(c, "56789", 5), 0xE3069283u);
	/* RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA, of 0xFF -> 0x62A8AB43. */
	uint8_t z[32];
	memset(z, 0, sizeof(z));
	ck_assert_uint_eq(proto_crc32c(0, z, 32), 0x8A9136AAu);
	memset(z, 0xff, sizeof(z));
	ck_assert_uint_eq(proto_crc32c(0, z, 32), 0x62A8AB43u);
	ck_assert_uint_eq(proto_crc32c(0, z, 0), 0);
}
END_TEST

/* ---- header ---- */

START_TEST(test_header_decode)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	proto_batch_info b;
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &b), 0);
	ck_assert_int_eq(b.size, (int32_t)w.len);
	ck_assert_int_eq(b.base_offset, 0);
	ck_assert_int_eq(b.partition_leader_epoch, -1);
	ck_assert_int_eq(b.magic, 2);
	ck_assert_int_eq(b.attributes, 0);
	ck_assert_int_eq(b.last_offset_delta, 9);
	ck_assert(b.base_timestamp == NOW - 1000);
	ck_assert(b.max_timestamp == NOW - 1000 + 9);
	ck_assert_int_eq(b.producer_id, -1);
	ck_assert_int_eq(b.producer_epoch, -1);
	ck_assert_int_eq(b.base_sequence, -1);
	ck_assert_int_eq(b.records_count, 10);
	ck_assert(proto_batch_crc_ok(w.buf, &b));
	/* A torn tail: fewer bytes than the batch, or than the length field. */
	ck_assert_int_eq(proto_batch_header(w.buf, w.len - 1, &b), PROTO_ERR_UNDERFLOW);
	ck_assert_int_eq(proto_batch_header(w.buf, 11, &b), PROTO_ERR_UNDERFLOW);
	ck_assert_int_eq(proto_batch_header(w.buf, 40, &b), PROTO_ERR_UNDERFLOW);
	/* Impossible lengths. */
	put32(w.buf + 8, 48);
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &b), PROTO_ERR_INVALID);
	put32(w.buf + 8, (uint32_t)-5);
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &b), PROTO_ERR_INVALID);
	/* The smallest legal length: exactly a header. */
	put32(w.buf + 8, 49);
	ck_assert_int_eq(proto_batch_header(w.buf, 61, &b), 0);
	ck_assert_int_eq(b.size, 61);
	proto_writer_free(&w);
}
END_TEST

/* ---- valid batches ---- */

static void check_valid(int codec, int n, int value_size)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(codec);
	o.n = n;
	o.value_size = value_size;
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	int nb = -1;
	int64_t nr = -1;
	const char *why = NULL;
	int rc = validate(&w, &r, &nb, &nr, &why);
	ck_assert_msg(rc == 0, "codec %d: %s (%d)", codec, why ? why : "", rc);
	ck_assert_int_eq(nb, 1);
	ck_assert_int_eq(nr, n);
	proto_writer_free(&w);
}

START_TEST(test_valid_uncompressed)
{
	check_valid(PROTO_COMPRESSION_NONE, 1, 0);
	check_valid(PROTO_COMPRESSION_NONE, 10, 100);
	check_valid(PROTO_COMPRESSION_NONE, 1000, 10);
}
END_TEST

START_TEST(test_valid_gzip) { check_valid(PROTO_COMPRESSION_GZIP, 500, 300); }
END_TEST
START_TEST(test_valid_snappy_raw) { check_valid(PROTO_COMPRESSION_SNAPPY, 500, 300); }
END_TEST
START_TEST(test_valid_snappy_xerial) { check_valid(SNAPPY_XERIAL, 500, 300); }
END_TEST
START_TEST(test_valid_lz4) { check_valid(PROTO_COMPRESSION_LZ4, 500, 300); }
END_TEST
START_TEST(test_valid_zstd) { check_valid(PROTO_COMPRESSION_ZSTD, 500, 300); }
END_TEST
START_TEST(test_valid_zstd_no_content_size) { check_valid(ZSTD_NO_CONTENT_SIZE, 500, 300); }
END_TEST

START_TEST(test_valid_large_output_grows_scratch)
{
	/* ~2.5 MiB decompressed from a small compressed batch: the scratch
	 * grows past its 64 KiB start. */
	check_valid(PROTO_COMPRESSION_GZIP, 2500, 1000);
	check_valid(PROTO_COMPRESSION_LZ4, 2500, 1000);
	check_valid(ZSTD_NO_CONTENT_SIZE, 2500, 1000);
}
END_TEST

START_TEST(test_two_batches)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	o.codec = PROTO_COMPRESSION_GZIP;
	o.n = 3;
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	int nb;
	int64_t nr;
	ck_assert_int_eq(validate(&w, &r, &nb, &nr, NULL), 0);
	ck_assert_int_eq(nb, 2);
	ck_assert_int_eq(nr, 13);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_scratch_reused)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_scratch s;
	proto_scratch_init(&s, 16 << 20);
	proto_batch_rules r = rules();
	int codecs[] = { PROTO_COMPRESSION_GZIP, PROTO_COMPRESSION_SNAPPY, SNAPPY_XERIAL,
			 PROTO_COMPRESSION_LZ4, PROTO_COMPRESSION_ZSTD, ZSTD_NO_CONTENT_SIZE };
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
			proto_writer_reset(&w);
			build_opts o = defaults(codecs[i]);
			build_batch(&w, &o);
			int nb;
			int64_t nr;
			ck_assert_int_eq(proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL), 0);
			ck_assert_int_eq(nr, 10);
		}
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_scratch_trim)
{
	/* ~2.5 MiB of records from a small gzip / zstd batch. */
	proto_writer w;
	proto_writer_init(&w);
	proto_scratch s;
	proto_scratch_init(&s, 16 << 20);
	proto_batch_rules r = rules();
	int nb;
	int64_t nr;
	int codecs[] = { PROTO_COMPRESSION_GZIP, ZSTD_NO_CONTENT_SIZE };
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		proto_writer_reset(&w);
		build_opts o = defaults(codecs[i]);
		o.n = 2500;
		o.value_size = 1000;
		build_batch(&w, &o);
		ck_assert_int_eq(proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL), 0);
		size_t grown = s.cap;
		ck_assert_uint_ge(grown, 2500u * 1000u);
		ck_assert_ptr_nonnull(s.buf);
		/* At or under the threshold: kept as is. */
		uint8_t *buf = s.buf;
		proto_scratch_trim(&s, grown);
		ck_assert_ptr_eq(s.buf, buf);
		ck_assert_uint_eq(s.cap, grown);
		/* Above it: released, and the limit stays. */
		proto_scratch_trim(&s, 1 << 20);
		ck_assert_ptr_null(s.buf);
		ck_assert_uint_eq(s.cap, 0);
		ck_assert_uint_eq(s.max, 16u << 20);
		/* Still usable: grows again, and a second trim is harmless. */
		ck_assert_int_eq(proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL), 0);
		ck_assert_int_eq(nr, 2500);
		ck_assert_uint_eq(s.cap, grown);
		proto_scratch_trim(&s, 1 << 20);
		proto_scratch_trim(&s, 1 << 20);
		ck_assert_uint_eq(s.cap, 0);
	}
	/* Empty scratch: nothing to do. */
	proto_scratch e;
	proto_scratch_init(&e, 1 << 20);
	proto_scratch_trim(&e, 0);
	ck_assert_ptr_null(e.buf);
	proto_scratch_free(&e);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

/* ---- rejections ---- */

START_TEST(test_crc_flipped)
{
	int codecs[] = { PROTO_COMPRESSION_NONE, PROTO_COMPRESSION_GZIP };
	for (int i = 0; i < 2; i++) {
		proto_writer w;
		proto_writer_init(&w);
		build_opts o = defaults(codecs[i]);
		build_batch(&w, &o);
		proto_batch_rules r = rules();
		w.buf[w.len - 3] ^= 0x01; /* in the records */
		ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
		w.buf[w.len - 3] ^= 0x01;
		ck_assert_int_eq(validate_simple(&w, &r), 0);
		w.buf[PROTO_BATCH_OFF_CRC + 2] ^= 0x80; /* the CRC itself */
		ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
		w.buf[PROTO_BATCH_OFF_CRC + 2] ^= 0x80;
		w.buf[PROTO_BATCH_OFF_ATTRIBUTES + 1] ^= 0x10; /* header inside CRC */
		ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
		proto_writer_free(&w);
	}
}
END_TEST

START_TEST(test_bad_lengths)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	uint32_t blen = (uint32_t)w.len - 12;
	/* Longer than the bytes sent. */
	put32(w.buf + 8, blen + 1);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	/* Below the v2 header, and below any format's minimum. */
	put32(w.buf + 8, 30);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	put32(w.buf + 8, 5);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	put32(w.buf + 8, (uint32_t)-1);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	/* Shorter than the bytes sent: the rest is a partial "batch". */
	put32(w.buf + 8, blen - 20);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	put32(w.buf + 8, blen);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	/* A valid batch followed by a torn one. */
	size_t len = w.len;
	proto_write_raw(&w, w.buf, 30);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	w.len = len + 5;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	/* No batch at all (Kafka: "at least one record batch"). */
	w.len = 0;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_wrong_record_count)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	/* Count and lastOffsetDelta agree, but there are 10 records, not 11. */
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 11);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 10);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	/* 9 announced: a record is left over. */
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 9);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 8);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	/* Count inconsistent with lastOffsetDelta. */
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 10);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 8);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	/* Zero and negative counts. */
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 0);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)-1);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 10);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 9);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), 0);

	/* The same inside a compressed batch: the count is checked against
	 * the decompressed records. */
	proto_writer_reset(&w);
	o.codec = PROTO_COMPRESSION_LZ4;
	build_batch(&w, &o);
	put32(w.buf + PROTO_BATCH_OFF_RECORDS_COUNT, 11);
	put32(w.buf + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, 10);
	recrc(w.buf);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_wrong_offset_deltas)
{
	int codecs[] = { PROTO_COMPRESSION_NONE, PROTO_COMPRESSION_SNAPPY, PROTO_COMPRESSION_ZSTD };
	for (int i = 0; i < 3; i++) {
		proto_writer w;
		proto_writer_init(&w);
		build_opts o = defaults(codecs[i]);
		o.swap_offsets = true;
		build_batch(&w, &o);
		proto_batch_rules r = rules();
		const char *why = NULL;
		int nb;
		int64_t nr;
		ck_assert_int_eq(validate(&w, &r, &nb, &nr, &why), KERR_INVALID_RECORD);
		ck_assert_ptr_nonnull(strstr(why, "offset delta"));
		proto_writer_free(&w);
	}
}
END_TEST

START_TEST(test_bad_record_layout)
{
	proto_batch_rules r = rules();
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	o.bad_rec_length = true;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	proto_writer_reset(&w);
	o = defaults(PROTO_COMPRESSION_GZIP);
	o.trailing_byte = true;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_too_large)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	r.max_batch_bytes = (int32_t)w.len;
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	r.max_batch_bytes = (int32_t)w.len - 1;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_MESSAGE_TOO_LARGE);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_decompressed_above_scratch_max)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_ZSTD);
	o.n = 200;
	o.value_size = 1000; /* ~200 KB decompressed */
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	proto_scratch s;
	proto_scratch_init(&s, 100000);
	int nb;
	int64_t nr;
	ck_assert_int_eq(proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL),
			 KERR_MESSAGE_TOO_LARGE);
	ck_assert_uint_le(s.cap, 100000);
	proto_scratch_free(&s);
	proto_scratch_init(&s, 1 << 20);
	ck_assert_int_eq(proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL), 0);
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_corrupt_compressed_data)
{
	int codecs[] = { PROTO_COMPRESSION_GZIP, PROTO_COMPRESSION_SNAPPY, SNAPPY_XERIAL,
			 PROTO_COMPRESSION_LZ4, PROTO_COMPRESSION_ZSTD };
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		proto_batch_rules r = rules();
		proto_writer w;
		proto_writer_init(&w);
		build_opts o = defaults(codecs[i]);
		build_batch(&w, &o);
		/* Garbage in the middle of the stream, CRC made valid again. */
		size_t body = w.len - PROTO_BATCH_HEADER_SIZE;
		for (size_t j = 0; j < 8; j++)
			w.buf[PROTO_BATCH_HEADER_SIZE + body / 3 + j] ^= 0x5a;
		if (codecs[i] == SNAPPY_XERIAL || codecs[i] == PROTO_COMPRESSION_SNAPPY)
			memset(w.buf + PROTO_BATCH_HEADER_SIZE + 16, 0xff, 12);
		recrc(w.buf);
		int rc = validate_simple(&w, &r);
		ck_assert_msg(rc == KERR_CORRUPT_MESSAGE || rc == KERR_INVALID_RECORD,
			      "codec %d gave %d", codecs[i], rc);
		/* Truncated stream: drop the last 7 bytes. */
		proto_writer_reset(&w);
		build_batch(&w, &o);
		w.len -= 7;
		put32(w.buf + 8, (uint32_t)(w.len - 12));
		recrc(w.buf);
		ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
		proto_writer_free(&w);
	}
}
END_TEST

START_TEST(test_timestamps)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_rules r = rules();
	/* Too far in the future (after.max.ms = 1 hour). */
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	o.base_ts = NOW + 2 * HOUR;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	/* LogAppendTime topic: the producer's timestamps are not checked. */
	r.log_append_time = true;
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	r.log_append_time = false;
	/* Too old with before.max.ms = 1 hour; fine with the default. */
	proto_writer_reset(&w);
	o.base_ts = NOW - 2 * HOUR;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	r.timestamp_before_max_ms = HOUR;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	/* Inside a compressed batch too. */
	proto_writer_reset(&w);
	o.codec = PROTO_COMPRESSION_GZIP;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	/* Exactly at the limit is accepted: last record is base + 9. */
	r = rules();
	proto_writer_reset(&w);
	o = defaults(PROTO_COMPRESSION_NONE);
	o.base_ts = NOW + HOUR - 9;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	proto_writer_reset(&w);
	o.base_ts = NOW + HOUR - 8;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	/* No timestamp (-1) is never out of range. */
	proto_writer_reset(&w);
	o.n = 1;
	o.base_ts = -1;
	build_batch(&w, &o);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	/* Extreme values do not overflow into acceptance. */
	proto_writer_reset(&w);
	o.base_ts = INT64_MIN + 5;
	build_batch(&w, &o);
	r.timestamp_before_max_ms = 365 * 24 * HOUR;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_producer_sets_log_append_time)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	w.buf[PROTO_BATCH_OFF_ATTRIBUTES + 1] |= PROTO_ATTR_TIMESTAMP_TYPE;
	recrc(w.buf);
	proto_batch_rules r = rules();
	r.log_append_time = true;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_TIMESTAMP);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_zstd_disallowed)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_ZSTD);
	build_batch(&w, &o);
	proto_batch_rules r = rules();
	r.allow_zstd = false;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_UNSUPPORTED_COMPRESSION_TYPE);
	r.allow_zstd = true;
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_header_rules)
{
	proto_batch_rules r = rules();
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_NONE);
	build_batch(&w, &o);
	uint8_t *p = w.buf;
	/* Unknown compression type 5..7. */
	p[PROTO_BATCH_OFF_ATTRIBUTES + 1] = 5;
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	p[PROTO_BATCH_OFF_ATTRIBUTES + 1] = 7;
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_CORRUPT_MESSAGE);
	/* Control batch from a client. */
	p[PROTO_BATCH_OFF_ATTRIBUTES + 1] = PROTO_ATTR_CONTROL;
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	p[PROTO_BATCH_OFF_ATTRIBUTES + 1] = 0;
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	/* Magic 0 or 1 (Produce v3+ carries magic 2 only). */
	p[PROTO_BATCH_OFF_MAGIC] = 1;
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	p[PROTO_BATCH_OFF_MAGIC] = 2;
	/* baseOffset must be 0 from a client. */
	put64(p, 5);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	put64(p, 0);
	/* Producer id without a sequence. */
	put64(p + PROTO_BATCH_OFF_PRODUCER_ID, 1000);
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), KERR_INVALID_RECORD);
	put32(p + PROTO_BATCH_OFF_BASE_SEQUENCE, 0);
	recrc(p);
	ck_assert_int_eq(validate_simple(&w, &r), 0);
	proto_writer_free(&w);
}
END_TEST

/* ---- patches ---- */

START_TEST(test_patch_outside_crc)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_SNAPPY);
	build_batch(&w, &o);
	proto_batch_set_base_offset(w.buf, 123456789012LL);
	proto_batch_set_leader_epoch(w.buf, 42);
	proto_batch_info b;
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &b), 0);
	ck_assert(b.base_offset == 123456789012LL);
	ck_assert_int_eq(b.partition_leader_epoch, 42);
	ck_assert(proto_batch_crc_ok(w.buf, &b));
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_log_append_time)
{
	proto_writer w;
	proto_writer_init(&w);
	build_opts o = defaults(PROTO_COMPRESSION_LZ4);
	build_batch(&w, &o);
	proto_batch_info before;
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &before), 0);
	proto_batch_set_log_append_time(w.buf, NOW + 77);
	proto_batch_info b;
	ck_assert_int_eq(proto_batch_header(w.buf, w.len, &b), 0);
	ck_assert(b.max_timestamp == NOW + 77);
	ck_assert(b.base_timestamp == before.base_timestamp);
	ck_assert_int_eq(b.attributes & PROTO_ATTR_TIMESTAMP_TYPE, PROTO_ATTR_TIMESTAMP_TYPE);
	ck_assert_int_eq(b.attributes & PROTO_ATTR_COMPRESSION_MASK, PROTO_COMPRESSION_LZ4);
	ck_assert_uint_ne(b.crc, before.crc);
	ck_assert(proto_batch_crc_ok(w.buf, &b));
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_garbage_never_crashes)
{
	/* Random bytes, and a valid batch with random corruption, must give
	 * an error code and never crash (run under ASan in CI). */
	proto_batch_rules r = rules();
	proto_scratch s;
	proto_scratch_init(&s, 1 << 20);
	srand(12345);
	proto_writer w;
	proto_writer_init(&w);
	int codecs[] = { PROTO_COMPRESSION_NONE, PROTO_COMPRESSION_GZIP, PROTO_COMPRESSION_SNAPPY,
			 SNAPPY_XERIAL, PROTO_COMPRESSION_LZ4, PROTO_COMPRESSION_ZSTD };
	for (int iter = 0; iter < 600; iter++) {
		proto_writer_reset(&w);
		build_opts o = defaults(codecs[iter % 6]);
		o.n = 5;
		build_batch(&w, &o);
		int flips = 1 + rand() % 4;
		for (int k = 0; k < flips; k++)
			w.buf[PROTO_BATCH_HEADER_SIZE + (size_t)rand() % (w.len - PROTO_BATCH_HEADER_SIZE)] ^=
				(uint8_t)(1 + rand() % 255);
		if (iter % 2)
			recrc(w.buf);
		int nb;
		int64_t nr;
		int rc = proto_batches_validate(w.buf, w.len, &r, &s, &nb, &nr, NULL);
		ck_assert(rc == 0 || rc == KERR_CORRUPT_MESSAGE || rc == KERR_INVALID_RECORD ||
			  rc == KERR_INVALID_TIMESTAMP || rc == KERR_MESSAGE_TOO_LARGE);
	}
	proto_scratch_free(&s);
	proto_writer_free(&w);
}
END_TEST

static Suite *batch_suite(void)
{
	Suite *s = suite_create("batch");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_crc32c_vectors);
	tcase_add_test(tc, test_header_decode);
	tcase_add_test(tc, test_valid_uncompressed);
	tcase_add_test(tc, test_valid_gzip);
	tcase_add_test(tc, test_valid_snappy_raw);
	tcase_add_test(tc, test_valid_snappy_xerial);
	tcase_add_test(tc, test_valid_lz4);
	tcase_add_test(tc, test_valid_zstd);
	tcase_add_test(tc, test_valid_zstd_no_content_size);
	tcase_add_test(tc, test_valid_large_output_grows_scratch);
	tcase_add_test(tc, test_two_batches);
	tcase_add_test(tc, test_scratch_reused);
	tcase_add_test(tc, test_scratch_trim);
	tcase_add_test(tc, test_crc_flipped);
	tcase_add_test(tc, test_bad_lengths);
	tcase_add_test(tc, test_wrong_record_count);
	tcase_add_test(tc, test_wrong_offset_deltas);
	tcase_add_test(tc, test_bad_record_layout);
	tcase_add_test(tc, test_too_large);
	tcase_add_test(tc, test_decompressed_above_scratch_max);
	tcase_add_test(tc, test_corrupt_compressed_data);
	tcase_add_test(tc, test_timestamps);
	tcase_add_test(tc, test_producer_sets_log_append_time);
	tcase_add_test(tc, test_zstd_disallowed);
	tcase_add_test(tc, test_header_rules);
	tcase_add_test(tc, test_patch_outside_crc);
	tcase_add_test(tc, test_log_append_time);
	tcase_add_test(tc, test_garbage_never_crashes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(batch_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
