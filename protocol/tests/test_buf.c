/*
 * test_buf.c - unit tests for protocol/buf.c: varints (boundaries, overlong,
 * negative), classic/compact strings and bytes with nulls, the array count
 * bound, sticky reader errors, writer growth, file chunks and patching, and
 * the arena cap.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/buf.h"
#include "protocol/gen/messages.h"

/* ---- varints ---- */

static void roundtrip_uvarint(uint32_t v, int size)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_uvarint(&w, v);
	ck_assert_int_eq(w.len, size);
	ck_assert_int_eq(proto_uvarint_size(v), size);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_uint_eq(proto_read_uvarint(&r), v);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_writer_free(&w);
}

START_TEST(test_uvarint_boundaries)
{
	roundtrip_uvarint(0, 1);
	roundtrip_uvarint(127, 1);
	roundtrip_uvarint(128, 2);
	roundtrip_uvarint(16383, 2);
	roundtrip_uvarint(16384, 3);
	roundtrip_uvarint(2097151, 3);
	roundtrip_uvarint(2097152, 4);
	roundtrip_uvarint(268435455, 4);
	roundtrip_uvarint(268435456, 5);
	roundtrip_uvarint(UINT32_MAX, 5);
}
END_TEST

static void roundtrip_varint(int32_t v, int size)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_varint(&w, v);
	ck_assert_int_eq(w.len, size);
	ck_assert_int_eq(proto_varint_size(v), size);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_varint(&r), v);
	ck_assert_int_eq(r.err, 0);
	proto_writer_free(&w);
}

START_TEST(test_varint_zigzag)
{
	/* Zigzag: 0->0, -1->1, 1->2, -2->3 (Kafka ByteUtils). */
	uint8_t one[] = { 0x01 }, two[] = { 0x02 }, three[] = { 0x03 };
	proto_reader r;
	proto_reader_init(&r, one, 1);
	ck_assert_int_eq(proto_read_varint(&r), -1);
	proto_reader_init(&r, two, 1);
	ck_assert_int_eq(proto_read_varint(&r), 1);
	proto_reader_init(&r, three, 1);
	ck_assert_int_eq(proto_read_varint(&r), -2);
	roundtrip_varint(0, 1);
	roundtrip_varint(-1, 1);
	roundtrip_varint(63, 1);
	roundtrip_varint(-64, 1);
	roundtrip_varint(64, 2);
	roundtrip_varint(-65, 2);
	roundtrip_varint(INT32_MAX, 5);
	roundtrip_varint(INT32_MIN, 5);
}
END_TEST

START_TEST(test_varlong)
{
	int64_t vals[] = { 0, -1, 1, 63, -64, 64, INT32_MAX, (int64_t)INT32_MIN - 1,
			   INT64_MAX, INT64_MIN, 1700000000000LL };
	int sizes[] = { 1, 1, 1, 1, 1, 2, 5, 5, 10, 10, 6 };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		proto_writer w;
		proto_writer_init(&w);
		proto_write_varlong(&w, vals[i]);
		ck_assert_int_eq(w.len, sizes[i]);
		ck_assert_int_eq(proto_varlong_size(vals[i]), sizes[i]);
		proto_reader r;
		proto_reader_init(&r, w.buf, w.len);
		ck_assert(proto_read_varlong(&r) == vals[i]);
		ck_assert_int_eq(r.err, 0);
		proto_writer_free(&w);
	}
	/* uvarlong max: 10 bytes, last byte 0x01. */
	proto_writer w;
	proto_writer_init(&w);
	proto_write_uvarlong(&w, UINT64_MAX);
	ck_assert_int_eq(w.len, 10);
	ck_assert_int_eq(w.buf[9], 0x01);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	ck_assert(proto_read_uvarlong(&r) == UINT64_MAX);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_varint_overlong)
{
	/* Six bytes: continuation on the fifth. */
	uint8_t six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	proto_reader r;
	proto_reader_init(&r, six, sizeof(six));
	ck_assert_uint_eq(proto_read_uvarint(&r), 0);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	/* Fifth byte carrying bits above bit 31. */
	uint8_t big[] = { 0xff, 0xff, 0xff, 0xff, 0x1f };
	proto_reader_init(&r, big, sizeof(big));
	proto_read_uvarint(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	/* The largest legal one. */
	uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
	proto_reader_init(&r, max, sizeof(max));
	ck_assert_uint_eq(proto_read_uvarint(&r), UINT32_MAX);
	ck_assert_int_eq(r.err, 0);
	/* Varlong: 11 bytes, and a tenth byte above 1. */
	uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	proto_reader_init(&r, eleven, sizeof(eleven));
	proto_read_uvarlong(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	uint8_t ten[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	proto_reader_init(&r, ten, sizeof(ten));
	proto_read_varlong(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	/* Truncated: continuation bit with nothing after it. */
	uint8_t cut[] = { 0x80, 0x80 };
	proto_reader_init(&r, cut, sizeof(cut));
	proto_read_varint(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);
}
END_TEST

/* ---- fixed ints and sticky errors ---- */

START_TEST(test_fixed_ints)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_bool(&w, true);
	proto_write_int8(&w, -2);
	proto_write_int16(&w, -12345);
	proto_write_uint16(&w, 65535);
	proto_write_int32(&w, -123456789);
	proto_write_uint32(&w, 4000000000u);
	proto_write_int64(&w, -1234567890123456789LL);
	proto_write_float64(&w, 3.25);
	proto_uuid u;
	for (int i = 0; i < 16; i++)
		u.b[i] = (uint8_t)i;
	proto_write_uuid(&w, &u);
	ck_assert_int_eq(w.len, 1 + 1 + 2 + 2 + 4 + 4 + 8 + 8 + 16);
	/* Big endian on the wire. */
	ck_assert_int_eq(w.buf[2], 0xcf);
	ck_assert_int_eq(w.buf[3], 0xc7);

	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	ck_assert(proto_read_bool(&r));
	ck_assert_int_eq(proto_read_int8(&r), -2);
	ck_assert_int_eq(proto_read_int16(&r), -12345);
	ck_assert_uint_eq(proto_read_uint16(&r), 65535);
	ck_assert_int_eq(proto_read_int32(&r), -123456789);
	ck_assert_uint_eq(proto_read_uint32(&r), 4000000000u);
	ck_assert(proto_read_int64(&r) == -1234567890123456789LL);
	ck_assert(proto_read_float64(&r) == 3.25);
	proto_uuid v;
	proto_read_uuid(&r, &v);
	ck_assert_mem_eq(v.b, u.b, 16);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_sticky_error)
{
	uint8_t b[] = { 0x00, 0x01, 0x00, 0x00, 0x00, 0x07 };
	proto_reader r;
	proto_reader_init(&r, b, sizeof(b));
	ck_assert_int_eq(proto_read_int16(&r), 1);
	ck_assert_int_eq(proto_read_int64(&r), 0); /* only 4 left */
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);
	/* Later reads return 0 even though 4 bytes "were" there. */
	ck_assert_int_eq(proto_read_int32(&r), 0);
	ck_assert_int_eq(proto_read_int8(&r), 0);
	proto_str s;
	proto_read_string(&r, &s);
	ck_assert_int_eq(s.len, 0);
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);
	/* First error wins. */
	uint8_t bad[] = { 0xff, 0xfe, 0x00 };
	proto_reader_init(&r, bad, sizeof(bad));
	proto_read_string(&r, &s); /* length -2 */
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_read_int64(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
}
END_TEST

/* ---- strings, bytes, records ---- */

START_TEST(test_strings)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_str hello = proto_cstr("hello"), null = proto_cstr(NULL), empty = proto_cstr("");
	proto_write_string(&w, &hello);
	proto_write_string(&w, &null);
	proto_write_string(&w, &empty);
	proto_write_compact_string(&w, &hello);
	proto_write_compact_string(&w, &null);
	proto_write_compact_string(&w, &empty);
	/* classic: 00 05 'hello' ff ff 00 00; compact: 06 'hello' 00 01 */
	static const uint8_t want[] = { 0, 5, 'h', 'e', 'l', 'l', 'o', 0xff, 0xff, 0, 0,
					6, 'h', 'e', 'l', 'l', 'o', 0, 1 };
	ck_assert_int_eq(w.len, sizeof(want));
	ck_assert_mem_eq(w.buf, want, sizeof(want));

	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	proto_str s;
	proto_read_string(&r, &s);
	ck_assert(proto_str_eq(s, "hello"));
	proto_read_string(&r, &s);
	ck_assert_int_eq(s.len, -1);
	ck_assert(proto_str_eq(s, NULL));
	proto_read_string(&r, &s);
	ck_assert_int_eq(s.len, 0);
	ck_assert(proto_str_eq(s, ""));
	ck_assert(!proto_str_eq(s, NULL));
	proto_read_compact_string(&r, &s);
	ck_assert(proto_str_eq(s, "hello"));
	ck_assert(!proto_str_eq(s, "hell"));
	proto_read_compact_string(&r, &s);
	ck_assert_int_eq(s.len, -1);
	proto_read_compact_string(&r, &s);
	ck_assert_int_eq(s.len, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_string_lengths_invalid)
{
	proto_reader r;
	proto_str s;
	/* Length past the end: underflow. */
	uint8_t past[] = { 0, 10, 'a', 'b' };
	proto_reader_init(&r, past, sizeof(past));
	proto_read_string(&r, &s);
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);
	/* Negative other than -1: invalid, for every kind. */
	uint8_t neg16[] = { 0x80, 0x00 };
	proto_reader_init(&r, neg16, sizeof(neg16));
	proto_read_string(&r, &s);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	uint8_t neg32[] = { 0xff, 0xff, 0xff, 0xfe };
	proto_bytes b;
	proto_reader_init(&r, neg32, sizeof(neg32));
	proto_read_bytes(&r, &b);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_records rec;
	proto_reader_init(&r, neg32, sizeof(neg32));
	proto_read_records(&r, false, &rec);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	uint8_t nul32[] = { 0xff, 0xff, 0xff, 0xff };
	proto_reader_init(&r, nul32, sizeof(nul32));
	proto_read_bytes(&r, &b);
	ck_assert_int_eq(r.err, 0);
	ck_assert_int_eq(b.len, -1);
	/* Compact length above INT32_MAX (uvarint 0xffffffff - 1). */
	uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
	proto_reader_init(&r, huge, sizeof(huge));
	proto_read_compact_string(&r, &s);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
}
END_TEST

START_TEST(test_bytes_and_records)
{
	proto_writer w;
	proto_writer_init(&w);
	uint8_t data[3] = { 1, 2, 3 };
	proto_bytes b = { data, 3 }, nb = { NULL, -1 };
	proto_write_bytes(&w, &b);
	proto_write_compact_bytes(&w, &b);
	proto_write_compact_bytes(&w, &nb);
	proto_records rec = { data, 3, -1, 0, NULL, NULL };
	proto_write_records(&w, false, &rec);
	proto_write_records(&w, true, &rec);
	proto_records nrec = { NULL, -1, -1, 0, NULL, NULL };
	proto_write_records(&w, true, &nrec);

	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	proto_bytes o;
	proto_read_bytes(&r, &o);
	ck_assert_int_eq(o.len, 3);
	ck_assert_mem_eq(o.ptr, data, 3);
	proto_read_compact_bytes(&r, &o);
	ck_assert_int_eq(o.len, 3);
	proto_read_compact_bytes(&r, &o);
	ck_assert_int_eq(o.len, -1);
	proto_records orec;
	proto_read_records(&r, false, &orec);
	ck_assert_int_eq(orec.len, 3);
	ck_assert_int_eq(orec.fd, -1);
	/* A view into the buffer, not a copy. */
	ck_assert(orec.ptr >= w.buf && orec.ptr < w.buf + w.len);
	proto_read_records(&r, true, &orec);
	ck_assert_int_eq(orec.len, 3);
	ck_assert_mem_eq(orec.ptr, data, 3);
	proto_read_records(&r, true, &orec);
	ck_assert_int_eq(orec.len, -1);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_writer_free(&w);
}
END_TEST

/* ---- arrays ---- */

START_TEST(test_array_len)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_array_len(&w, false, 2);
	proto_write_int32(&w, 7);
	proto_write_int32(&w, 8);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_array_len(&r, false, 4), 2);
	ck_assert_int_eq(r.err, 0);
	/* Same bytes, but each element claimed to be at least 5 bytes. */
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_array_len(&r, false, 5), 0);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_writer_reset(&w);

	/* A huge count with nothing behind it is refused before allocation. */
	proto_write_int32(&w, 0x7fffffff);
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_array_len(&r, false, 1), 0);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_writer_reset(&w);

	/* min_elem_size 0 is treated as 1. */
	proto_write_array_len(&w, true, 3);
	proto_write_raw(&w, "ab", 2);
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_array_len(&r, true, 0), 0);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_writer_reset(&w);

	/* Null arrays, and a negative count other than -1. */
	proto_write_array_len(&w, false, -1);
	proto_write_array_len(&w, true, -1);
	proto_write_array_len(&w, true, 0);
	proto_write_int32(&w, -5);
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(proto_read_array_len(&r, false, 1), -1);
	ck_assert_int_eq(proto_read_array_len(&r, true, 1), -1);
	ck_assert_int_eq(proto_read_array_len(&r, true, 1), 0);
	ck_assert_int_eq(r.err, 0);
	proto_read_array_len(&r, false, 1);
	ck_assert_int_eq(r.err, PROTO_ERR_INVALID);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_skip)
{
	uint8_t b[4] = { 0 };
	proto_reader r;
	proto_reader_init(&r, b, sizeof(b));
	proto_skip(&r, 3);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 1);
	proto_skip(&r, 2);
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);
}
END_TEST

/* ---- writer ---- */

static int released;
static void release_counter(void *ref)
{
	released += *(int *)ref;
}

START_TEST(test_writer_growth)
{
	proto_writer w;
	proto_writer_init(&w);
	for (int i = 0; i < 100000; i++)
		proto_write_int32(&w, i);
	ck_assert_int_eq(w.err, 0);
	ck_assert_uint_eq(w.len, 400000);
	ck_assert_uint_ge(w.cap, w.len);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	for (int i = 0; i < 100000; i++)
		ck_assert_int_eq(proto_read_int32(&r), i);
	size_t cap = w.cap;
	proto_writer_reset(&w);
	ck_assert_uint_eq(w.len, 0);
	ck_assert_uint_eq(w.cap, cap); /* memory kept */
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_writer_file_chunks)
{
	proto_writer w;
	proto_writer_init(&w);
	int one = 1, ten = 10;
	released = 0;
	proto_write_int32(&w, 42);
	proto_writer_add_file(&w, 5, 1000, 300, &one, release_counter);
	proto_write_int16(&w, 7);
	proto_records rec = { NULL, 200, 6, 4096, &ten, release_counter };
	proto_write_records(&w, false, &rec);
	ck_assert_int_eq(w.nchunks, 2);
	ck_assert_uint_eq(w.chunks[0].at, 4);
	ck_assert_int_eq(w.chunks[0].fd, 5);
	ck_assert_int_eq(w.chunks[0].pos, 1000);
	ck_assert_int_eq(w.chunks[0].len, 300);
	/* Records: 4+2 bytes memory, then the int32 length prefix, then file. */
	ck_assert_uint_eq(w.chunks[1].at, 4 + 2 + 4);
	ck_assert_int_eq(w.chunks[1].fd, 6);
	ck_assert_int_eq(w.chunks[1].pos, 4096);
	ck_assert_int_eq(w.file_bytes, 500);
	ck_assert_int_eq(proto_writer_total(&w), 10 + 500);
	ck_assert_int_eq(released, 0);
	proto_writer_reset(&w);
	ck_assert_int_eq(released, 11);
	ck_assert_int_eq(w.nchunks, 0);
	ck_assert_int_eq(w.file_bytes, 0);
	/* Free releases what is still held. */
	proto_writer_add_file(&w, 5, 0, 1, &ten, release_counter);
	proto_writer_free(&w);
	ck_assert_int_eq(released, 21);
}
END_TEST

START_TEST(test_writer_patch)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_write_int8(&w, 1);
	size_t at = proto_writer_reserve(&w, 4);
	ck_assert_uint_eq(at, 1);
	for (int i = 0; i < 1000; i++) /* force a move of the buffer */
		proto_write_int32(&w, i);
	proto_writer_patch_int32(&w, at, 0x01020304);
	ck_assert_int_eq(w.buf[1], 1);
	ck_assert_int_eq(w.buf[2], 2);
	ck_assert_int_eq(w.buf[3], 3);
	ck_assert_int_eq(w.buf[4], 4);
	ck_assert_int_eq(w.buf[5], 0); /* first int32 written after */
	/* Out-of-range patch is ignored. */
	size_t len = w.len;
	proto_writer_patch_int32(&w, len - 2, -1);
	ck_assert_int_eq(w.buf[len - 1], 0xe7); /* 999 = 0x3e7 */
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_writer_string_too_long)
{
	proto_writer w;
	proto_writer_init(&w);
	char *big = malloc(40000);
	memset(big, 'x', 40000);
	proto_str s = proto_str_of(big, 40000);
	proto_write_string(&w, &s);
	ck_assert_int_eq(w.err, PROTO_ERR_INVALID);
	proto_writer_reset(&w);
	proto_write_compact_string(&w, &s); /* compact has no int16 limit */
	ck_assert_int_eq(w.err, 0);
	ck_assert_uint_eq(w.len, 3 + 40000);
	free(big);
	proto_writer_free(&w);
}
END_TEST

/* ---- arena ---- */

START_TEST(test_arena)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	uint8_t *p = proto_arena_alloc(&a, 3);
	uint8_t *q = proto_arena_alloc(&a, 10);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq((uintptr_t)p % 8, 0);
	ck_assert_uint_eq((uintptr_t)q % 8, 0);
	ck_assert(q >= p + 3);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(q[i], 0);
	memset(q, 0xab, 10);
	/* Big allocation gets its own chunk. */
	uint8_t *big = proto_arena_alloc(&a, 1 << 20);
	ck_assert_ptr_nonnull(big);
	big[(1 << 20) - 1] = 1;
	size_t total = a.total;
	ck_assert_uint_ge(total, (1u << 20) + 10);
	proto_arena_reset(&a);
	ck_assert_uint_ge(a.total, 1u << 20); /* largest chunk kept */
	ck_assert_uint_lt(a.total, total);
	uint8_t *again = proto_arena_alloc(&a, 16);
	ck_assert_ptr_nonnull(again);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(again[i], 0); /* zeroed after reuse */
	proto_arena_free(&a);
	ck_assert_uint_eq(a.total, 0);
}
END_TEST

START_TEST(test_arena_reset_trim)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	/* a small chunk, then a huge one */
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 100));
	size_t small = a.total;
	ck_assert_uint_le(small, 64u << 10);
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 4u << 20));
	ck_assert_uint_ge(a.total, (4u << 20) + small);
	/* the huge chunk goes, the largest one under the limit stays */
	proto_arena_reset_trim(&a, 64u << 10);
	ck_assert_uint_eq(a.total, small);
	uint8_t *p = proto_arena_alloc(&a, 16);
	ck_assert_ptr_nonnull(p);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(p[i], 0);
	ck_assert_uint_eq(a.total, small); /* reused, nothing allocated */
	/* only chunks above the limit: nothing is kept */
	proto_arena_reset(&a);
	proto_arena_free(&a);
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 1u << 20));
	proto_arena_reset_trim(&a, 64u << 10);
	ck_assert_uint_eq(a.total, 0);
	ck_assert_ptr_null(a.head);
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 16));
	/* a chunk at or under the limit is kept as proto_arena_reset does */
	size_t t = a.total;
	proto_arena_reset_trim(&a, t);
	ck_assert_uint_eq(a.total, t);
	ck_assert_ptr_nonnull(a.head);
	proto_arena_free(&a);
}
END_TEST

START_TEST(test_arena_cap)
{
	proto_arena a;
	proto_arena_init(&a, 10000);
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 4000));
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 4000));
	ck_assert_uint_le(a.total, 10000);
	ck_assert_ptr_null(proto_arena_alloc(&a, 4000));
	ck_assert_uint_le(a.total, 10000);
	ck_assert_ptr_null(proto_arena_alloc(&a, SIZE_MAX - 4));
	proto_arena_reset(&a);
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 4000));
	proto_arena_free(&a);

	proto_arena_init(&a, 100);
	ck_assert_ptr_null(proto_arena_alloc(&a, 200));
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 50)); /* 56 with alignment */
	ck_assert_ptr_nonnull(proto_arena_alloc(&a, 40));
	ck_assert_ptr_null(proto_arena_alloc(&a, 8));
	ck_assert_uint_le(a.total, 100);
	proto_arena_free(&a);
}
END_TEST

/* Found by fuzz/fuzz_request (corpus/fuzz_request/regress-reader-null, bytes
 * 00 0d 00): ApiVersions v0 has an empty body, so its re-encoding leaves the
 * writer's buffer NULL, and proto_reader_init computed NULL + 0, undefined
 * behaviour that UBSan (make check under --enable-sanitizers) reports. A
 * reader over NULL must be empty and safe to read. */
START_TEST(test_reader_over_null)
{
	proto_reader r;
	proto_reader_init(&r, NULL, 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_read_int8(&r);
	ck_assert_int_eq(r.err, PROTO_ERR_UNDERFLOW);

	static const uint8_t input[] = { 0x00, 0x0d, 0x00 };
	proto_arena a;
	proto_arena_init(&a, 0);
	ApiVersionsRequest m;
	ApiVersionsRequest_init(&m);
	proto_reader_init(&r, input + 3, sizeof(input) - 3);
	ck_assert_int_eq(ApiVersionsRequest_decode(&r, &a, 0, &m), 0);
	proto_writer w;
	proto_writer_init(&w);
	ck_assert_int_eq(ApiVersionsRequest_encode(&w, 0, &m), 0);
	ck_assert_uint_eq(w.len, 0);
	proto_reader_init(&r, w.buf, w.len);
	ck_assert_int_eq(ApiVersionsRequest_decode(&r, &a, 0, &m), 0);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

static Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_uvarint_boundaries);
	tcase_add_test(tc, test_varint_zigzag);
	tcase_add_test(tc, test_varlong);
	tcase_add_test(tc, test_varint_overlong);
	tcase_add_test(tc, test_fixed_ints);
	tcase_add_test(tc, test_sticky_error);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_string_lengths_invalid);
	tcase_add_test(tc, test_bytes_and_records);
	tcase_add_test(tc, test_array_len);
	tcase_add_test(tc, test_skip);
	tcase_add_test(tc, test_writer_growth);
	tcase_add_test(tc, test_writer_file_chunks);
	tcase_add_test(tc, test_writer_patch);
	tcase_add_test(tc, test_writer_string_too_long);
	tcase_add_test(tc, test_arena);
	tcase_add_test(tc, test_arena_reset_trim);
	tcase_add_test(tc, test_arena_cap);
	tcase_add_test(tc, test_reader_over_null);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(buf_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
