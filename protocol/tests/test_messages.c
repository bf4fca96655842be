/*
 * test_messages.c - tests of the generated message codecs (protocol/gen/,
 * made by protocol/gen.py from the protocol/schema/ files).
 *
 * For every API in the table and every version, request and response:
 * random messages survive encode -> decode -> encode byte for byte, every
 * truncation of an encoding fails to decode, trailing bytes are left unread,
 * random corruption never crashes. Hand-derived byte vectors (Kafka protocol
 * guide, KIP-482, KIP-511) catch mistakes that would be symmetric between
 * encoder and decoder.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/buf.h"
#include "protocol/header.h"
#ifdef GEN_FIXTURES
/* Built a second time as tests/test_gen_fixtures on the generator's own
 * fixtures (tests/gen_fixtures/), which use every type and option. */
#include "protocol/tests/fixture_gen/messages.h"
#include "protocol/tests/fixture_gen/messages_fill.h"
#define SUITE_NAME "gen_fixtures"
#define MIN_APIS 3
#else
#include "protocol/gen/messages.h"
#include "protocol/gen/messages_fill.h"
#define SUITE_NAME "messages"
#define MIN_APIS 7
#endif

#define ARENA_CAP (64u << 20)

/* Seeds per (message, version) for the round trip, and how many of those
 * also get the truncation and corruption sweeps (quadratic in size). */
#define ROUND_TRIP_SEEDS 200
#define SWEEP_SEEDS 12

static const proto_msg_ops *find_ops(int16_t key, bool response)
{
	int n;
	const proto_msg_ops *ops = proto_msg_ops_all(&n);

	for (int i = 0; i < n; i++)
		if (ops[i].api_key == key && ops[i].response == response)
			return &ops[i];
	return NULL;
}

/* Decodes len bytes copied into a buffer of exactly that size, so that a read
 * past the end is seen by ASan. Returns the decode result. The copy is freed:
 * m's views must not be used afterwards. */
static int decode_copy(const proto_msg_ops *ops, int16_t v, const uint8_t *buf, size_t len,
		       proto_arena *a, void *m)
{
	uint8_t *copy = malloc(len ? len : 1);
	proto_reader r;
	int rc;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, buf, len);
	proto_reader_init(&r, copy, len);
	rc = ops->decode(&r, a, v, m);
	free(copy);
	return rc;
}

/* One random message of ops at version v: checks round trip, re-encoding,
 * trailing bytes and (when sweep) truncations and corruptions. */
static void check_one(const proto_msg_ops *ops, int16_t v, uint32_t seed, bool sweep)
{
	proto_arena a;
	proto_writer w1, w2;
	void *m1 = calloc(1, ops->size), *m2 = calloc(1, ops->size);
	proto_reader r;
	int rc;

	ck_assert(m1 && m2);
	proto_arena_init(&a, ARENA_CAP);
	proto_writer_init(&w1);
	proto_writer_init(&w2);

	ops->fill(m1, v, &a, &seed);
	rc = ops->encode(&w1, v, m1);
	ck_assert_msg(rc == 0, "%s v%d seed %u: encode failed %d", ops->name, v, seed, rc);
	ck_assert_int_eq(w1.nchunks, 0);

	/* decode -> equal -> encode again -> same bytes */
	proto_reader_init(&r, w1.buf, w1.len);
	rc = ops->decode(&r, &a, v, m2);
	ck_assert_msg(rc == 0, "%s v%d seed %u: decode failed %d", ops->name, v, seed, rc);
	ck_assert_msg(proto_reader_left(&r) == 0, "%s v%d: %zu bytes left after decode",
		      ops->name, v, proto_reader_left(&r));
	ck_assert_msg(ops->equal(m1, m2, v), "%s v%d seed %u: decoded != filled",
		      ops->name, v, seed);
	rc = ops->encode(&w2, v, m2);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(w2.len == w1.len && (w1.len == 0 || memcmp(w1.buf, w2.buf, w1.len) == 0),
		      "%s v%d seed %u: re-encoding differs", ops->name, v, seed);

	/* Trailing bytes: tolerated and left unread. */
	{
		size_t n = w1.len + 3;
		uint8_t *buf = malloc(n);

		ck_assert_ptr_nonnull(buf);
		if (w1.len)
			memcpy(buf, w1.buf, w1.len);
		memset(buf + w1.len, 0xa5, 3);
		proto_reader_init(&r, buf, n);
		rc = ops->decode(&r, &a, v, m2);
		ck_assert_int_eq(rc, 0);
		ck_assert_uint_eq(proto_reader_left(&r), 3);
		ck_assert(ops->equal(m1, m2, v));
		free(buf);
	}

	if (sweep) {
		proto_arena b; /* reset between decodes; m1 stays in a */
		uint8_t *buf = malloc(w1.len ? w1.len : 1);
		uint32_t x = seed | 1;

		ck_assert_ptr_nonnull(buf);
		proto_arena_init(&b, ARENA_CAP);
		/* Every strict prefix is an error, never a crash. */
		for (size_t len = 0; len < w1.len; len++) {
			rc = decode_copy(ops, v, w1.buf, len, &b, m2);
			ck_assert_msg(rc < 0, "%s v%d seed %u: prefix %zu/%zu decoded",
				      ops->name, v, seed, len, w1.len);
			proto_arena_reset(&b);
		}
		/* Corrupted bytes: any result, no crash; what decodes re-encodes. */
		for (int k = 0; k < 64 && w1.len; k++) {
			memcpy(buf, w1.buf, w1.len);
			for (int j = 0; j < 1 + k % 3; j++) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				buf[x % w1.len] = (uint8_t)(x >> 8);
			}
			proto_reader_init(&r, buf, w1.len);
			if (ops->decode(&r, &b, v, m2) == 0) {
				proto_writer_reset(&w2);
				/* A decoded message always re-encodes. */
				ck_assert_int_eq(ops->encode(&w2, v, m2), 0);
			}
			proto_arena_reset(&b);
		}
		proto_arena_free(&b);
		free(buf);
	}

	proto_writer_free(&w1);
	proto_writer_free(&w2);
	proto_arena_free(&a);
	free(m1);
	free(m2);
}

/* ---- every API, every version ---- */

START_TEST(test_table_has_codecs)
{
	int n;
	const proto_api_desc *d = proto_api_desc_all(&n);

	ck_assert_int_ge(n, MIN_APIS);
	for (int i = 0; i < n; i++) {
		ck_assert_ptr_eq(proto_api_desc_lookup(d[i].key), &d[i]);
		ck_assert_int_le(d[i].min_version, d[i].max_version);
		ck_assert(d[i].flexible_min == -1 ||
			  (d[i].flexible_min >= d[i].min_version &&
			   d[i].flexible_min <= d[i].max_version));
		ck_assert_ptr_nonnull(find_ops(d[i].key, false));
		ck_assert_ptr_nonnull(find_ops(d[i].key, true));
		if (i > 0)
			ck_assert_int_lt(d[i - 1].key, d[i].key);
	}
	ck_assert_ptr_null(proto_api_desc_lookup(-1));
	ck_assert_ptr_null(proto_api_desc_lookup(9999));

	d = proto_api_desc_lookup(18);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "ApiVersions");
	ck_assert_int_eq(d->min_version, 0);
	ck_assert_int_eq(d->max_version, 4);
	ck_assert_int_eq(d->flexible_min, 3);
}
END_TEST

START_TEST(test_round_trip_all)
{
	int n;
	const proto_api_desc *d = proto_api_desc_all(&n);

	for (int i = 0; i < n; i++) {
		for (int resp = 0; resp < 2; resp++) {
			const proto_msg_ops *ops = find_ops(d[i].key, resp);

			ck_assert_ptr_nonnull(ops);
			for (int16_t v = d[i].min_version; v <= d[i].max_version; v++)
				for (uint32_t s = 1; s <= ROUND_TRIP_SEEDS; s++)
					check_one(ops, v, s * 2654435761u, s <= SWEEP_SEEDS);
		}
	}
}
END_TEST

#ifndef GEN_FIXTURES
/* proto_response_throttle_at: where the request quota patches
 * ThrottleTimeMs into an encoded response (KIP-219). */
static void check_throttle_bytes(const proto_writer *w, int32_t at)
{
	ck_assert_int_ge((int64_t)w->len, (int64_t)at + 4);
	ck_assert_int_eq(w->buf[at], 0x01);
	ck_assert_int_eq(w->buf[at + 1], 0x02);
	ck_assert_int_eq(w->buf[at + 2], 0x03);
	ck_assert_int_eq(w->buf[at + 3], 0x04);
}

START_TEST(test_throttle_at)
{
	/* absent, or after a field of variable size */
	ck_assert_int_eq(proto_response_throttle_at(0, 9), -1);  /* Produce: after responses */
	ck_assert_int_eq(proto_response_throttle_at(18, 3), -1); /* ApiVersions: after api_keys */
	ck_assert_int_eq(proto_response_throttle_at(18, 0), -1);
	ck_assert_int_eq(proto_response_throttle_at(3, 2), -1);  /* Metadata before v3 */
	ck_assert_int_eq(proto_response_throttle_at(17, 1), -1); /* SaslHandshake: none */
	ck_assert_int_eq(proto_response_throttle_at(7, 3), -1);  /* ControlledShutdown */
	ck_assert_int_eq(proto_response_throttle_at(3, 99), -1);
	ck_assert_int_eq(proto_response_throttle_at(-1, 0), -1);

	proto_writer w;
	proto_writer_init(&w);
	for (int16_t v = 3; v <= 13; v++) {
		MetadataResponse m;
		MetadataResponse_init(&m);
		m.throttle_time_ms = 0x01020304;
		proto_writer_reset(&w);
		ck_assert_int_eq(MetadataResponse_encode(&w, v, &m), 0);
		ck_assert_int_eq(proto_response_throttle_at(3, v), 0);
		check_throttle_bytes(&w, 0);
	}
	OffsetDeleteResponse od;
	OffsetDeleteResponse_init(&od);
	od.error_code = 7;
	od.throttle_time_ms = 0x01020304;
	proto_writer_reset(&w);
	ck_assert_int_eq(OffsetDeleteResponse_encode(&w, 0, &od), 0);
	ck_assert_int_eq(proto_response_throttle_at(47, 0), 2);
	check_throttle_bytes(&w, 2);

	/* every API and version that has an offset: a random response is
	 * long enough, and a value patched in reads back */
	int n;
	const proto_api_desc *d = proto_api_desc_all(&n);
	int found = 0;
	for (int i = 0; i < n; i++) {
		const proto_msg_ops *ops = find_ops(d[i].key, true);
		for (int16_t v = d[i].min_version; v <= d[i].max_version; v++) {
			int32_t at = proto_response_throttle_at(d[i].key, v);
			if (at < 0)
				continue;
			found++;
			proto_arena a;
			proto_arena_init(&a, ARENA_CAP);
			void *m = calloc(1, ops->size), *m2 = calloc(1, ops->size);
			uint32_t seed = 12345;
			ck_assert(m && m2);
			ops->fill(m, v, &a, &seed);
			proto_writer_reset(&w);
			ck_assert_int_eq(ops->encode(&w, v, m), 0);
			proto_writer_patch_int32(&w, (size_t)at, 0x01020304);
			check_throttle_bytes(&w, at);
			proto_reader r;
			proto_reader_init(&r, w.buf, w.len);
			ck_assert_int_eq(ops->decode(&r, &a, v, m2), 0);
			proto_writer w2;
			proto_writer_init(&w2);
			ck_assert_int_eq(ops->encode(&w2, v, m2), 0);
			ck_assert(w2.len == w.len && memcmp(w.buf, w2.buf, w.len) == 0);
			proto_writer_free(&w2);
			free(m);
			free(m2);
			proto_arena_free(&a);
		}
	}
	ck_assert_int_gt(found, 100);
	proto_writer_free(&w);
}
END_TEST

/* A float64 read back is equal to what was written, bit for bit, NaN too
 * (AlterClientQuotas' value; fuzz_request's regress-alter-client-quotas-nan
 * found the comparison by ==, which a NaN never passes). */
START_TEST(test_float64_nan_equal)
{
	const proto_msg_ops *ops = find_ops(49, false);
	ck_assert_ptr_nonnull(ops);
	AlterClientQuotasRequest_AlterClientQuotasOp op;
	AlterClientQuotasRequest_AlterClientQuotasOp_init(&op);
	op.key = proto_cstr("request_percentage");
	op.value = __builtin_nan("");
	AlterClientQuotasRequest_AlterClientQuotasEntry e;
	AlterClientQuotasRequest_AlterClientQuotasEntry_init(&e);
	e.ops = &op;
	e.ops_count = 1;
	AlterClientQuotasRequest m;
	AlterClientQuotasRequest_init(&m);
	m.entries = &e;
	m.entries_count = 1;
	ck_assert_int_eq(ops->equal(&m, &m, 1), 1);
}
END_TEST
#endif

START_TEST(test_version_out_of_range)
{
	int n;
	const proto_api_desc *d = proto_api_desc_all(&n);
	uint8_t zeros[64] = { 0 };

	for (int i = 0; i < n; i++) {
		for (int resp = 0; resp < 2; resp++) {
			const proto_msg_ops *ops = find_ops(d[i].key, resp);
			void *m = calloc(1, ops->size);
			int16_t bad[] = { (int16_t)(d[i].min_version - 1),
					  (int16_t)(d[i].max_version + 1), -1, INT16_MAX };
			proto_arena a;
			proto_writer w;
			proto_reader r;

			ck_assert_ptr_nonnull(m);
			proto_arena_init(&a, 0);
			proto_writer_init(&w);
			ops->init(m);
			for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
				if (bad[k] >= d[i].min_version && bad[k] <= d[i].max_version)
					continue;
				proto_reader_init(&r, zeros, sizeof(zeros));
				ck_assert_int_eq(ops->decode(&r, &a, bad[k], m), PROTO_ERR_VERSION);
				ck_assert_int_eq(ops->encode(&w, bad[k], m), PROTO_ERR_VERSION);
				ck_assert_uint_eq(w.len, 0);
			}
			proto_writer_free(&w);
			proto_arena_free(&a);
			free(m);
		}
	}
}
END_TEST

/* An init'ed message encodes and decodes back in every version. */
START_TEST(test_defaults_round_trip)
{
	int n;
	const proto_msg_ops *ops = proto_msg_ops_all(&n);

	for (int i = 0; i < n; i++) {
		const proto_api_desc *d = proto_api_desc_lookup(ops[i].api_key);

		ck_assert_ptr_nonnull(d);
		for (int16_t v = d->min_version; v <= d->max_version; v++) {
			void *m1 = calloc(1, ops[i].size), *m2 = calloc(1, ops[i].size);
			proto_writer w;
			proto_reader r;
			proto_arena a;

			ck_assert(m1 && m2);
			proto_arena_init(&a, 0);
			proto_writer_init(&w);
			ops[i].init(m1);
			ck_assert_int_eq(ops[i].encode(&w, v, m1), 0);
			proto_reader_init(&r, w.buf, w.len);
			ck_assert_int_eq(ops[i].decode(&r, &a, v, m2), 0);
			ck_assert(ops[i].equal(m1, m2, v));
			proto_writer_free(&w);
			proto_arena_free(&a);
			free(m1);
			free(m2);
		}
	}
}
END_TEST

/* ---- hand-derived vectors ---- */

/* The writer holds exactly the expected bytes. */
#define CHECK_BYTES(w, exp)                                              \
	do {                                                             \
		ck_assert_uint_eq((w)->len, sizeof(exp));                 \
		ck_assert_msg(memcmp((w)->buf, (exp), sizeof(exp)) == 0, \
			      "bytes differ");                            \
	} while (0)

#ifdef GEN_FIXTURES

/* Classic v2 request (never flexible): Topics null as int32 -1, then
 * TimeoutMs; v1 has no TimeoutMs and no null Topics. */
START_TEST(test_vec_classic)
{
	static const uint8_t exp[] = { 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x75, 0x30 };
	static const uint8_t v1[] = { 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 'x',
				      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07 };
	ClassicRequest m;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ClassicRequest_init(&m);
	ck_assert_int_eq(m.timeout_ms, 30000);
	m.topics_count = -1;
	ck_assert_int_eq(ClassicRequest_encode(&w, 2, &m), 0);
	CHECK_BYTES(&w, exp);
	proto_writer_reset(&w);
	ck_assert_int_eq(ClassicRequest_encode(&w, 1, &m), PROTO_ERR_INVALID);

	proto_reader_init(&r, v1, sizeof(v1));
	ck_assert_int_eq(ClassicRequest_decode(&r, &a, 1, &m), 0);
	ck_assert_int_eq(m.topics_count, 1);
	ck_assert(proto_str_eq(m.topics[0].name, "x"));
	ck_assert_int_eq(m.topics[0].partitions_count, 1);
	ck_assert_int_eq(m.topics[0].partitions[0], 7);
	ck_assert_int_eq(m.timeout_ms, 30000);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* A nullable struct in a classic version: an int8 marker (-1 null, 1
 * present) before its fields where it is nullable (v3), none where it is not
 * (v2, where null cannot be encoded); any negative marker decodes as null. */
START_TEST(test_vec_classic_nullable_struct)
{
	static const uint8_t v3_null[] = { 0xff };
	static const uint8_t v3_set[] = { 0x01, 0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x05 };
	static const uint8_t v2_set[] = { 0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x05 };
	static const uint8_t v3_neg[] = { 0x80 };
	ClassicResponse m;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ClassicResponse_init(&m);
	ck_assert(!m.next_null);
	m.next_null = true;
	ck_assert_int_eq(ClassicResponse_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, v3_null);
	proto_writer_reset(&w);
	ck_assert_int_eq(ClassicResponse_encode(&w, 2, &m), PROTO_ERR_INVALID);
	proto_writer_reset(&w);
	m.next_null = false;
	m.next.topic = proto_cstr("a");
	m.next.index = 5;
	ck_assert_int_eq(ClassicResponse_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, v3_set);
	proto_writer_reset(&w);
	ck_assert_int_eq(ClassicResponse_encode(&w, 2, &m), 0);
	CHECK_BYTES(&w, v2_set);

	proto_reader_init(&r, v3_set, sizeof(v3_set));
	ck_assert_int_eq(ClassicResponse_decode(&r, &a, 3, &m), 0);
	ck_assert(!m.next_null);
	ck_assert(proto_str_eq(m.next.topic, "a"));
	ck_assert_int_eq(m.next.index, 5);
	proto_reader_init(&r, v3_neg, sizeof(v3_neg));
	ck_assert_int_eq(ClassicResponse_decode(&r, &a, 3, &m), 0);
	ck_assert(m.next_null);
	proto_reader_init(&r, v2_set, sizeof(v2_set));
	ck_assert_int_eq(ClassicResponse_decode(&r, &a, 2, &m), 0);
	ck_assert(!m.next_null);
	ck_assert_int_eq(m.next.index, 5);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* KitchenSink v2 (flexible) request with everything at its default: the
 * tagged fields all stay out. */
START_TEST(test_vec_kitchen_sink_defaults)
{
	static const uint8_t exp[] = {
		0x00,                                           /* Flag */
		0xf9,                                           /* Small -7 */
		0x23, 0x84,                                     /* Port 9092 */
		0x00, 0x00,                                     /* Short */
		0x7f, 0xff, 0xff, 0xff,                         /* Count */
		0x80, 0, 0, 0, 0, 0, 0, 0,                      /* Big */
		0x3f, 0xd0, 0, 0, 0, 0, 0, 0,                   /* Ratio 0.25 */
		0x05, 'd', 'f', 'l', 't',                       /* Label "dflt" */
		0x00,                                           /* MaybeLabel null */
		0x01,                                           /* Blob "" */
		0x01,                                           /* Payload "" */
		0x01, 0x01, 0x01, 0x01,                         /* Names Numbers Ports Items */
		0x00, 0x01, 0x04, 'h', 'd', 'r', 0x00,          /* Single {1, "hdr"} + tags */
		0x00,                                           /* no tagged fields */
	};
	KitchenSinkRequest m;
	proto_writer w;

	proto_writer_init(&w);
	KitchenSinkRequest_init(&m);
	ck_assert_int_eq(KitchenSinkRequest_encode(&w, 2, &m), 0);
	CHECK_BYTES(&w, exp);
	proto_writer_free(&w);
}
END_TEST

#else

/* ApiVersions v0 request: an empty body. */
START_TEST(test_vec_api_versions_v0_request)
{
	ApiVersionsRequest m;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ApiVersionsRequest_init(&m);
	m.client_software_name = proto_cstr("ignored in v0");
	ck_assert_int_eq(ApiVersionsRequest_encode(&w, 0, &m), 0);
	ck_assert_uint_eq(w.len, 0);
	proto_reader_init(&r, "", 0);
	ck_assert_int_eq(ApiVersionsRequest_decode(&r, &a, 0, &m), 0);
	ck_assert_int_eq(m.client_software_name.len, 0); /* default: empty */
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* ApiVersions v3 request (KIP-511): compact strings "a" and "b" (uvarint
 * length+1 = 2), then an empty tagged field section (count 0). */
START_TEST(test_vec_api_versions_v3_request)
{
	static const uint8_t exp[] = { 0x02, 'a', 0x02, 'b', 0x00 };
	ApiVersionsRequest m;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ApiVersionsRequest_init(&m);
	m.client_software_name = proto_cstr("a");
	m.client_software_version = proto_cstr("b");
	ck_assert_int_eq(ApiVersionsRequest_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, exp);

	ApiVersionsRequest_init(&m);
	proto_reader_init(&r, exp, sizeof(exp));
	ck_assert_int_eq(ApiVersionsRequest_decode(&r, &a, 3, &m), 0);
	ck_assert(proto_str_eq(m.client_software_name, "a"));
	ck_assert(proto_str_eq(m.client_software_version, "b"));

	/* A null (compact length 0) where the field is not nullable. */
	static const uint8_t null_name[] = { 0x00, 0x02, 'b', 0x00 };
	proto_reader_init(&r, null_name, sizeof(null_name));
	ck_assert_int_eq(ApiVersionsRequest_decode(&r, &a, 3, &m), PROTO_ERR_INVALID);
	/* And a null cannot be encoded there either. */
	proto_writer_reset(&w);
	ApiVersionsRequest_init(&m);
	m.client_software_name = proto_str_of(NULL, -1);
	ck_assert_int_eq(ApiVersionsRequest_encode(&w, 3, &m), PROTO_ERR_INVALID);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* ApiVersions v0 response with one key: int16 error code, int32 array count,
 * then ApiKey, MinVersion, MaxVersion as int16; no ThrottleTimeMs in v0. */
START_TEST(test_vec_api_versions_v0_response)
{
	static const uint8_t exp[] = {
		0x00, 0x00,             /* ErrorCode 0 */
		0x00, 0x00, 0x00, 0x01, /* ApiKeys: 1 entry */
		0x00, 0x12,             /* ApiKey 18 */
		0x00, 0x00,             /* MinVersion 0 */
		0x00, 0x04,             /* MaxVersion 4 */
	};
	ApiVersionsResponse m;
	ApiVersionsResponse_ApiVersion k = { 18, 0, 4 };
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ApiVersionsResponse_init(&m);
	m.api_keys_count = 1;
	m.api_keys = &k;
	m.throttle_time_ms = 77; /* absent in v0 */
	ck_assert_int_eq(ApiVersionsResponse_encode(&w, 0, &m), 0);
	CHECK_BYTES(&w, exp);

	proto_reader_init(&r, exp, sizeof(exp));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &a, 0, &m), 0);
	ck_assert_int_eq(m.error_code, 0);
	ck_assert_int_eq(m.api_keys_count, 1);
	ck_assert_int_eq(m.api_keys[0].api_key, 18);
	ck_assert_int_eq(m.api_keys[0].min_version, 0);
	ck_assert_int_eq(m.api_keys[0].max_version, 4);
	ck_assert_int_eq(m.throttle_time_ms, 0);
	ck_assert_int_eq(m.finalized_features_epoch, -1);

	/* A null array (count -1) where ApiKeys is not nullable. */
	static const uint8_t null_keys[] = { 0x00, 0x00, 0xff, 0xff, 0xff, 0xff };
	proto_reader_init(&r, null_keys, sizeof(null_keys));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &a, 0, &m), PROTO_ERR_INVALID);
	/* A count far above what the bytes left can hold: refused before any
	 * allocation (the arena cap of 64 bytes would make it NOMEM otherwise). */
	static const uint8_t huge[] = { 0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0 };
	proto_arena small;
	proto_arena_init(&small, 64);
	proto_reader_init(&r, huge, sizeof(huge));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &small, 0, &m), PROTO_ERR_INVALID);
	ck_assert_uint_eq(small.total, 0);
	proto_arena_free(&small);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* ApiVersions v3 response with FinalizedFeaturesEpoch = 5 as tagged field 1
 * (KIP-482: tag section = uvarint count, then uvarint tag, uvarint size,
 * data); the other tagged fields are at their default and not sent. */
START_TEST(test_vec_api_versions_v3_response_tagged)
{
	static const uint8_t exp[] = {
		0x00, 0x00,             /* ErrorCode 0 */
		0x01,                   /* ApiKeys: compact, 0 entries */
		0x00, 0x00, 0x00, 0x00, /* ThrottleTimeMs 0 */
		0x01,                   /* 1 tagged field */
		0x01, 0x08,             /* tag 1, 8 bytes */
		0, 0, 0, 0, 0, 0, 0, 5, /* FinalizedFeaturesEpoch 5 */
	};
	/* Same, plus an unknown tag 7 of 2 bytes (skipped) and ApiKeys with one
	 * compact entry {18, 0, 4, no tags}. */
	static const uint8_t with_unknown[] = {
		0x00, 0x00,
		0x02, 0x00, 0x12, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x02,
		0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 5,
		0x07, 0x02, 0xab, 0xcd,
	};
	/* ZkMigrationReady true (tag 3, 1 byte). */
	static const uint8_t zk[] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x03, 0x01, 0x01,
	};
	ApiVersionsResponse m;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ApiVersionsResponse_init(&m);
	m.finalized_features_epoch = 5;
	ck_assert_int_eq(ApiVersionsResponse_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, exp);

	proto_reader_init(&r, exp, sizeof(exp));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &a, 3, &m), 0);
	ck_assert_int_eq(m.finalized_features_epoch, 5);
	ck_assert_int_eq(m.supported_features_count, 0);
	ck_assert(!m.zk_migration_ready);

	proto_reader_init(&r, with_unknown, sizeof(with_unknown));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &a, 3, &m), 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	ck_assert_int_eq(m.finalized_features_epoch, 5);
	ck_assert_int_eq(m.api_keys_count, 1);
	ck_assert_int_eq(m.api_keys[0].api_key, 18);
	ck_assert_int_eq(m.api_keys[0].max_version, 4);

	proto_writer_reset(&w);
	ApiVersionsResponse_init(&m);
	m.zk_migration_ready = true;
	ck_assert_int_eq(ApiVersionsResponse_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, zk);

	/* A tagged field whose size runs past the end of the message. */
	static const uint8_t overrun[] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x01, 0x09, 0, 0, 0, 0, 0, 0, 0, 5,
	};
	proto_reader_init(&r, overrun, sizeof(overrun));
	ck_assert_int_lt(ApiVersionsResponse_decode(&r, &a, 3, &m), 0);
	/* A tagged field shorter than its type: the int64 cannot read past the
	 * declared size (2) into the next tag. */
	static const uint8_t short_tag[] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x01, 0x02, 0x00, 0x05, 0x03, 0x01, 0x01,
		0, 0, 0, 0, 0, 0,
	};
	proto_reader_init(&r, short_tag, sizeof(short_tag));
	ck_assert_int_eq(ApiVersionsResponse_decode(&r, &a, 3, &m), PROTO_ERR_UNDERFLOW);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* Metadata v0 request with one topic "t": int32 count 1, then the topic's
 * Name as an int16-length string. (v0 has no null topic list.) */
START_TEST(test_vec_metadata_v0_request)
{
	static const uint8_t exp[] = { 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 't' };
	MetadataRequest m;
	MetadataRequest_MetadataRequestTopic t;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	MetadataRequest_init(&m);
	MetadataRequest_MetadataRequestTopic_init(&t);
	t.name = proto_cstr("t");
	m.topics_count = 1;
	m.topics = &t;
	ck_assert_int_eq(MetadataRequest_encode(&w, 0, &m), 0);
	CHECK_BYTES(&w, exp);

	proto_reader_init(&r, exp, sizeof(exp));
	ck_assert_int_eq(MetadataRequest_decode(&r, &a, 0, &m), 0);
	ck_assert_int_eq(m.topics_count, 1);
	ck_assert(proto_str_eq(m.topics[0].name, "t"));
	ck_assert(m.allow_auto_topic_creation); /* absent in v0: default true */

	/* v0 cannot carry a null topic list; v1 can (int32 -1 = all topics). */
	static const uint8_t null_topics[] = { 0xff, 0xff, 0xff, 0xff };
	proto_reader_init(&r, null_topics, sizeof(null_topics));
	ck_assert_int_eq(MetadataRequest_decode(&r, &a, 0, &m), PROTO_ERR_INVALID);
	proto_reader_init(&r, null_topics, sizeof(null_topics));
	ck_assert_int_eq(MetadataRequest_decode(&r, &a, 1, &m), 0);
	ck_assert_int_eq(m.topics_count, -1);
	MetadataRequest_init(&m);
	m.topics_count = -1;
	proto_writer_reset(&w);
	ck_assert_int_eq(MetadataRequest_encode(&w, 0, &m), PROTO_ERR_INVALID);

	/* v4: AllowAutoTopicCreation follows the (empty) topic list. */
	static const uint8_t v4[] = { 0x00, 0x00, 0x00, 0x00, 0x00 };
	proto_reader_init(&r, v4, sizeof(v4));
	ck_assert_int_eq(MetadataRequest_decode(&r, &a, 4, &m), 0);
	ck_assert_int_eq(m.topics_count, 0);
	ck_assert(!m.allow_auto_topic_creation);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* AlterPartitionReassignments (flexible from v0): TimeoutMs, then (v1)
 * AllowReplicationFactorChange, then compact arrays; a null replica list
 * (cancel) is a compact count of 0. ListPartitionReassignments v0
 * response: throttle, error, compact nullable message, then per partition
 * the three replica lists. */
START_TEST(test_vec_partition_reassignments)
{
	static const uint8_t v1[] = {
		0x00, 0x00, 0x75, 0x30, 0x00, 0x02, 0x02, 't', 0x03,
		0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		0x00, 0x00,
	};
	proto_reader r;
	proto_arena a;
	proto_arena_init(&a, 0);
	AlterPartitionReassignmentsRequest m;
	proto_reader_init(&r, v1, sizeof(v1));
	ck_assert_int_eq(AlterPartitionReassignmentsRequest_decode(&r, &a, 1, &m), 0);
	ck_assert_int_eq(m.timeout_ms, 30000);
	ck_assert(!m.allow_replication_factor_change);
	ck_assert_int_eq(m.topics_count, 1);
	ck_assert(proto_str_eq(m.topics[0].name, "t"));
	ck_assert_int_eq(m.topics[0].partitions_count, 2);
	ck_assert_int_eq(m.topics[0].partitions[0].replicas_count, 2);
	ck_assert_int_eq(m.topics[0].partitions[0].replicas[1], 3);
	ck_assert_int_eq(m.topics[0].partitions[1].partition_index, 1);
	ck_assert_int_eq(m.topics[0].partitions[1].replicas_count, -1);
	/* v0: the same without the option, which then reads its default */
	uint8_t v0[sizeof(v1) - 1];
	memcpy(v0, v1, 4);
	memcpy(v0 + 4, v1 + 5, sizeof(v1) - 5);
	proto_reader_init(&r, v0, sizeof(v0));
	ck_assert_int_eq(AlterPartitionReassignmentsRequest_decode(&r, &a, 0, &m), 0);
	ck_assert(m.allow_replication_factor_change);
	ck_assert_int_eq(m.topics[0].partitions[1].replicas_count, -1);

	static const uint8_t list[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 't', 0x02,
		0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
		0x02, 0x00, 0x00, 0x00, 0x02, 0x01, 0x00,
		0x00, 0x00,
	};
	int32_t reps[] = { 2, 1 }, add[] = { 2 };
	ListPartitionReassignmentsResponse_OngoingPartitionReassignment op;
	ListPartitionReassignmentsResponse_OngoingPartitionReassignment_init(&op);
	op.replicas = reps;
	op.replicas_count = 2;
	op.adding_replicas = add;
	op.adding_replicas_count = 1;
	ListPartitionReassignmentsResponse_OngoingTopicReassignment ot;
	ListPartitionReassignmentsResponse_OngoingTopicReassignment_init(&ot);
	ot.name = proto_cstr("t");
	ot.partitions = &op;
	ot.partitions_count = 1;
	ListPartitionReassignmentsResponse lr;
	ListPartitionReassignmentsResponse_init(&lr);
	lr.topics = &ot;
	lr.topics_count = 1;
	proto_writer w;
	proto_writer_init(&w);
	ck_assert_int_eq(ListPartitionReassignmentsResponse_encode(&w, 0, &lr), 0);
	CHECK_BYTES(&w, list);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* DescribeTopicPartitions v0 (KIP-966), flexible: the cursor is a nullable
 * struct, an int8 marker (-1 null, 1 present) before its fields. Request:
 * topics ["t"], limit 2, cursor {"t", 1}; then no topics, the default limit
 * 2000 and a null cursor. Response: one topic with one partition (empty
 * ELR, null last known ELR) and a next cursor {"t", 2}. */
START_TEST(test_vec_describe_topic_partitions)
{
	static const uint8_t req_v0[] = {
		0x02,                   /* Topics: compact, 1 */
		0x02, 't', 0x00,        /* Name "t", tags */
		0x00, 0x00, 0x00, 0x02, /* ResponsePartitionLimit 2 */
		0x01,                   /* Cursor present */
		0x02, 't',              /* TopicName "t" */
		0x00, 0x00, 0x00, 0x01, /* PartitionIndex 1 */
		0x00,                   /* cursor's tags */
		0x00,                   /* message's tags */
	};
	static const uint8_t req_all[] = { 0x01, 0x00, 0x00, 0x07, 0xd0, 0xff, 0x00 };
	static const uint8_t resp_v0[] = {
		0x00, 0x00, 0x00, 0x00, /* ThrottleTimeMs */
		0x02,                   /* Topics: 1 */
		0x00, 0x00,             /* ErrorCode */
		0x02, 't',              /* Name */
		0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, /* TopicId */
		0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
		0x00,                   /* IsInternal */
		0x02,                   /* Partitions: 1 */
		0x00, 0x00,             /* ErrorCode */
		0x00, 0x00, 0x00, 0x01, /* PartitionIndex 1 */
		0x00, 0x00, 0x00, 0x02, /* LeaderId 2 */
		0x00, 0x00, 0x00, 0x05, /* LeaderEpoch 5 */
		0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, /* ReplicaNodes [2,3] */
		0x02, 0x00, 0x00, 0x00, 0x02, /* IsrNodes [2] */
		0x01,                   /* EligibleLeaderReplicas [] */
		0x00,                   /* LastKnownElr null */
		0x02, 0x00, 0x00, 0x00, 0x03, /* OfflineReplicas [3] */
		0x00,                   /* partition's tags */
		0x00, 0x00, 0x0d, 0xf8, /* TopicAuthorizedOperations */
		0x00,                   /* topic's tags */
		0x01, 0x02, 't', 0x00, 0x00, 0x00, 0x02, 0x00, /* NextCursor {"t", 2} */
		0x00,                   /* message's tags */
	};
	const proto_api_desc *d = proto_api_desc_lookup(75);
	DescribeTopicPartitionsRequest req;
	DescribeTopicPartitionsRequest_TopicRequest t;
	DescribeTopicPartitionsResponse resp;
	DescribeTopicPartitionsResponse_Topic rt;
	DescribeTopicPartitionsResponse_Partition rp;
	int32_t replicas[] = { 2, 3 }, isr[] = { 2 }, offline[] = { 3 };
	proto_writer w;
	proto_reader r;
	proto_arena a;

	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "DescribeTopicPartitions");
	ck_assert_int_eq(d->flexible_min, 0);
	ck_assert_int_eq(proto_response_header_version(75, 0, d->flexible_min), 1);
	proto_arena_init(&a, 0);
	proto_writer_init(&w);

	DescribeTopicPartitionsRequest_init(&req);
	ck_assert_int_eq(req.response_partition_limit, 2000);
	ck_assert(req.cursor_null);
	DescribeTopicPartitionsRequest_TopicRequest_init(&t);
	t.name = proto_cstr("t");
	req.topics_count = 1;
	req.topics = &t;
	req.response_partition_limit = 2;
	req.cursor_null = false;
	req.cursor.topic_name = proto_cstr("t");
	req.cursor.partition_index = 1;
	ck_assert_int_eq(DescribeTopicPartitionsRequest_encode(&w, 0, &req), 0);
	CHECK_BYTES(&w, req_v0);
	proto_reader_init(&r, req_v0, sizeof(req_v0));
	ck_assert_int_eq(DescribeTopicPartitionsRequest_decode(&r, &a, 0, &req), 0);
	ck_assert_int_eq(req.topics_count, 1);
	ck_assert(proto_str_eq(req.topics[0].name, "t"));
	ck_assert_int_eq(req.response_partition_limit, 2);
	ck_assert(!req.cursor_null);
	ck_assert(proto_str_eq(req.cursor.topic_name, "t"));
	ck_assert_int_eq(req.cursor.partition_index, 1);

	DescribeTopicPartitionsRequest_init(&req);
	proto_writer_reset(&w);
	ck_assert_int_eq(DescribeTopicPartitionsRequest_encode(&w, 0, &req), 0);
	CHECK_BYTES(&w, req_all);
	proto_reader_init(&r, req_all, sizeof(req_all));
	ck_assert_int_eq(DescribeTopicPartitionsRequest_decode(&r, &a, 0, &req), 0);
	ck_assert_int_eq(req.topics_count, 0);
	ck_assert(req.cursor_null);

	DescribeTopicPartitionsResponse_init(&resp);
	ck_assert(resp.next_cursor_null);
	DescribeTopicPartitionsResponse_Topic_init(&rt);
	ck_assert_int_eq(rt.topic_authorized_operations, INT32_MIN);
	DescribeTopicPartitionsResponse_Partition_init(&rp);
	ck_assert_int_eq(rp.eligible_leader_replicas_count, -1);
	rt.name = proto_cstr("t");
	memset(rt.topic_id.b, 0x11, 16);
	rt.topic_authorized_operations = 0xdf8;
	rp.partition_index = 1;
	rp.leader_id = 2;
	rp.leader_epoch = 5;
	rp.replica_nodes_count = 2;
	rp.replica_nodes = replicas;
	rp.isr_nodes_count = 1;
	rp.isr_nodes = isr;
	rp.eligible_leader_replicas_count = 0;
	rp.offline_replicas_count = 1;
	rp.offline_replicas = offline;
	rt.partitions_count = 1;
	rt.partitions = &rp;
	resp.topics_count = 1;
	resp.topics = &rt;
	resp.next_cursor_null = false;
	resp.next_cursor.topic_name = proto_cstr("t");
	resp.next_cursor.partition_index = 2;
	proto_writer_reset(&w);
	ck_assert_int_eq(DescribeTopicPartitionsResponse_encode(&w, 0, &resp), 0);
	CHECK_BYTES(&w, resp_v0);
	proto_reader_init(&r, resp_v0, sizeof(resp_v0));
	ck_assert_int_eq(DescribeTopicPartitionsResponse_decode(&r, &a, 0, &resp), 0);
	ck_assert_int_eq(resp.topics_count, 1);
	ck_assert_int_eq(resp.topics[0].partitions[0].eligible_leader_replicas_count, 0);
	ck_assert_int_eq(resp.topics[0].partitions[0].last_known_elr_count, -1);
	ck_assert_int_eq(resp.topics[0].partitions[0].offline_replicas[0], 3);
	ck_assert(!resp.next_cursor_null);
	ck_assert_int_eq(resp.next_cursor.partition_index, 2);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* ControlledShutdown: v0 request is the broker id alone (int32), v2 adds the
 * broker epoch (int64), v3 is flexible (an empty tagged field section).
 * v0 travels with request header v0 (no client id). Response v0: int16
 * error code, int32 count, then per partition an int16-length topic name
 * and an int32 index; v3 uses compact forms and ends each struct with tags. */
START_TEST(test_vec_controlled_shutdown)
{
	static const uint8_t req_v0[] = { 0x00, 0x00, 0x00, 0x02 };
	static const uint8_t req_v2[] = { 0x00, 0x00, 0x00, 0x02,
					  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2c };
	static const uint8_t req_v3[] = { 0x00, 0x00, 0x00, 0x02,
					  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2c, 0x00 };
	static const uint8_t resp_v0[] = {
		0x00, 0x00,             /* ErrorCode 0 */
		0x00, 0x00, 0x00, 0x01, /* RemainingPartitions: 1 */
		0x00, 0x01, 't',        /* TopicName "t" */
		0x00, 0x00, 0x00, 0x03, /* PartitionIndex 3 */
	};
	static const uint8_t resp_v3[] = {
		0x00, 0x00,             /* ErrorCode 0 */
		0x02,                   /* RemainingPartitions: compact, 1 */
		0x02, 't',              /* TopicName "t" */
		0x00, 0x00, 0x00, 0x03, /* PartitionIndex 3 */
		0x00,                   /* partition's tagged fields */
		0x00,                   /* message's tagged fields */
	};
	const proto_api_desc *d = proto_api_desc_lookup(7);
	ControlledShutdownRequest req;
	ControlledShutdownResponse resp;
	ControlledShutdownResponse_RemainingPartition part;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "ControlledShutdown");
	ck_assert_int_eq(d->min_version, 0);
	ck_assert_int_eq(d->max_version, 3);
	ck_assert_int_eq(d->flexible_min, 3);
	/* Request header v0 for v0, v1 for v1-2, v2 from v3; response
	 * header v1 only in the flexible v3. */
	ck_assert_int_eq(proto_request_header_version(7, 0, d->flexible_min), 0);
	ck_assert_int_eq(proto_request_header_version(7, 2, d->flexible_min), 1);
	ck_assert_int_eq(proto_request_header_version(7, 3, d->flexible_min), 2);
	ck_assert_int_eq(proto_response_header_version(7, 2, d->flexible_min), 0);
	ck_assert_int_eq(proto_response_header_version(7, 3, d->flexible_min), 1);

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ControlledShutdownRequest_init(&req);
	ck_assert_int_eq(req.broker_epoch, -1);
	req.broker_id = 2;
	req.broker_epoch = 300;
	ck_assert_int_eq(ControlledShutdownRequest_encode(&w, 0, &req), 0);
	CHECK_BYTES(&w, req_v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(ControlledShutdownRequest_encode(&w, 1, &req), 0);
	CHECK_BYTES(&w, req_v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(ControlledShutdownRequest_encode(&w, 2, &req), 0);
	CHECK_BYTES(&w, req_v2);
	proto_writer_reset(&w);
	ck_assert_int_eq(ControlledShutdownRequest_encode(&w, 3, &req), 0);
	CHECK_BYTES(&w, req_v3);

	proto_reader_init(&r, req_v0, sizeof(req_v0));
	ck_assert_int_eq(ControlledShutdownRequest_decode(&r, &a, 0, &req), 0);
	ck_assert_int_eq(req.broker_id, 2);
	ck_assert_int_eq(req.broker_epoch, -1); /* absent before v2 */
	proto_reader_init(&r, req_v3, sizeof(req_v3));
	ck_assert_int_eq(ControlledShutdownRequest_decode(&r, &a, 3, &req), 0);
	ck_assert_int_eq(req.broker_epoch, 300);
	ck_assert_uint_eq(proto_reader_left(&r), 0);

	ControlledShutdownResponse_init(&resp);
	ControlledShutdownResponse_RemainingPartition_init(&part);
	part.topic_name = proto_cstr("t");
	part.partition_index = 3;
	resp.remaining_partitions_count = 1;
	resp.remaining_partitions = &part;
	proto_writer_reset(&w);
	ck_assert_int_eq(ControlledShutdownResponse_encode(&w, 0, &resp), 0);
	CHECK_BYTES(&w, resp_v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(ControlledShutdownResponse_encode(&w, 3, &resp), 0);
	CHECK_BYTES(&w, resp_v3);

	proto_reader_init(&r, resp_v0, sizeof(resp_v0));
	ck_assert_int_eq(ControlledShutdownResponse_decode(&r, &a, 2, &resp), 0);
	ck_assert_int_eq(resp.error_code, 0);
	ck_assert_int_eq(resp.remaining_partitions_count, 1);
	ck_assert(proto_str_eq(resp.remaining_partitions[0].topic_name, "t"));
	ck_assert_int_eq(resp.remaining_partitions[0].partition_index, 3);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* ElectLeaders (key 43): request v0 = TopicPartitions (nullable array of
 * an int16-length topic and an int32 array) then TimeoutMs; v1 puts the
 * int8 ElectionType first; v2 is flexible. Response: ThrottleTimeMs, the
 * top-level ErrorCode from v1, then per topic the name and per partition
 * PartitionId, ErrorCode and a nullable ErrorMessage. */
START_TEST(test_vec_elect_leaders)
{
	static const uint8_t req_v0[] = {
		0x00, 0x00, 0x00, 0x01, /* TopicPartitions: 1 */
		0x00, 0x01, 't',        /* Topic */
		0x00, 0x00, 0x00, 0x01, /* Partitions: 1 */
		0x00, 0x00, 0x00, 0x02, /* 2 */
		0x00, 0x00, 0xea, 0x60, /* TimeoutMs 60000 */
	};
	static const uint8_t req_v1[] = {
		0x01,                   /* ElectionType UNCLEAN */
		0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xea, 0x60,
	};
	static const uint8_t req_v2[] = {
		0x01,                   /* ElectionType */
		0x02,                   /* TopicPartitions: compact, 1 */
		0x02, 't',              /* Topic */
		0x02, 0x00, 0x00, 0x00, 0x02, /* Partitions: compact, [2] */
		0x00,                   /* topic's tagged fields */
		0x00, 0x00, 0xea, 0x60, /* TimeoutMs */
		0x00,                   /* message's tagged fields */
	};
	static const uint8_t req_v2_null[] = { 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, 0x00 };
	static const uint8_t resp_v0[] = {
		0x00, 0x00, 0x00, 0x00, /* ThrottleTimeMs */
		0x00, 0x00, 0x00, 0x01, /* ReplicaElectionResults: 1 */
		0x00, 0x01, 't',        /* Topic */
		0x00, 0x00, 0x00, 0x01, /* PartitionResult: 1 */
		0x00, 0x00, 0x00, 0x02, /* PartitionId */
		0x00, 0x54,             /* ErrorCode 84 ELECTION_NOT_NEEDED */
		0xff, 0xff,             /* ErrorMessage null */
	};
	static const uint8_t resp_v1[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ThrottleTimeMs, ErrorCode */
		0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x02, 0x00, 0x54, 0xff, 0xff,
	};
	static const uint8_t resp_v2[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x02, 't',        /* results: 1; Topic */
		0x02,                   /* PartitionResult: 1 */
		0x00, 0x00, 0x00, 0x02, 0x00, 0x54,
		0x00,                   /* ErrorMessage null */
		0x00, 0x00, 0x00,       /* tagged fields: partition, topic, message */
	};
	const proto_api_desc *d = proto_api_desc_lookup(43);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "ElectLeaders");
	ck_assert_int_eq(d->min_version, 0);
	ck_assert_int_eq(d->max_version, 2);
	ck_assert_int_eq(d->flexible_min, 2);

	proto_arena a;
	proto_writer w;
	proto_reader r;
	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	ElectLeadersRequest req;
	ElectLeadersRequest_init(&req);
	ck_assert_int_eq(req.timeout_ms, 60000);
	int32_t parts[] = { 2 };
	ElectLeadersRequest_TopicPartitions tp;
	ElectLeadersRequest_TopicPartitions_init(&tp);
	tp.topic = proto_cstr("t");
	tp.partitions_count = 1;
	tp.partitions = parts;
	req.election_type = 1;
	req.topic_partitions_count = 1;
	req.topic_partitions = &tp;
	ck_assert_int_eq(ElectLeadersRequest_encode(&w, 0, &req), 0);
	CHECK_BYTES(&w, req_v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(ElectLeadersRequest_encode(&w, 1, &req), 0);
	CHECK_BYTES(&w, req_v1);
	proto_writer_reset(&w);
	ck_assert_int_eq(ElectLeadersRequest_encode(&w, 2, &req), 0);
	CHECK_BYTES(&w, req_v2);

	proto_reader_init(&r, req_v0, sizeof(req_v0));
	ck_assert_int_eq(ElectLeadersRequest_decode(&r, &a, 0, &req), 0);
	ck_assert_int_eq(req.election_type, 0); /* v0: always preferred */
	ck_assert_int_eq(req.topic_partitions_count, 1);
	ck_assert(proto_str_eq(req.topic_partitions[0].topic, "t"));
	ck_assert_int_eq(req.topic_partitions[0].partitions[0], 2);
	proto_reader_init(&r, req_v2_null, sizeof(req_v2_null));
	ck_assert_int_eq(ElectLeadersRequest_decode(&r, &a, 2, &req), 0);
	ck_assert_int_eq(req.topic_partitions_count, -1); /* null: every partition */
	ck_assert_int_eq(req.timeout_ms, 1000);
	ck_assert_uint_eq(proto_reader_left(&r), 0);

	ElectLeadersResponse resp;
	ElectLeadersResponse_ReplicaElectionResult res;
	ElectLeadersResponse_PartitionResult pr;
	ElectLeadersResponse_init(&resp);
	ElectLeadersResponse_ReplicaElectionResult_init(&res);
	ElectLeadersResponse_PartitionResult_init(&pr);
	ck_assert_int_eq(pr.error_message.len, -1);
	pr.partition_id = 2;
	pr.error_code = 84;
	res.topic = proto_cstr("t");
	res.partition_result_count = 1;
	res.partition_result = &pr;
	resp.replica_election_results_count = 1;
	resp.replica_election_results = &res;
	proto_writer_reset(&w);
	ck_assert_int_eq(ElectLeadersResponse_encode(&w, 0, &resp), 0);
	CHECK_BYTES(&w, resp_v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(ElectLeadersResponse_encode(&w, 1, &resp), 0);
	CHECK_BYTES(&w, resp_v1);
	proto_writer_reset(&w);
	ck_assert_int_eq(ElectLeadersResponse_encode(&w, 2, &resp), 0);
	CHECK_BYTES(&w, resp_v2);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* OffsetForLeaderEpoch request: v3 = ReplicaId, then per topic an
 * int16-length name and per partition Partition, CurrentLeaderEpoch and
 * LeaderEpoch (int32 each); v0 has neither ReplicaId nor CurrentLeaderEpoch;
 * v4 is the flexible form of v3. */
START_TEST(test_vec_offset_for_leader_epoch_request)
{
	static const uint8_t v3[] = {
		0x00, 0x00, 0x00, 0x01, /* ReplicaId 1 */
		0x00, 0x00, 0x00, 0x01, /* Topics: 1 */
		0x00, 0x01, 't',        /* Topic "t" */
		0x00, 0x00, 0x00, 0x01, /* Partitions: 1 */
		0x00, 0x00, 0x00, 0x00, /* Partition 0 */
		0x00, 0x00, 0x00, 0x05, /* CurrentLeaderEpoch 5 */
		0x00, 0x00, 0x00, 0x04, /* LeaderEpoch 4 */
	};
	static const uint8_t v4[] = {
		0x00, 0x00, 0x00, 0x01, /* ReplicaId 1 */
		0x02,                   /* Topics: compact, 1 */
		0x02, 't',              /* Topic "t" */
		0x02,                   /* Partitions: compact, 1 */
		0x00, 0x00, 0x00, 0x00, /* Partition 0 */
		0x00, 0x00, 0x00, 0x05, /* CurrentLeaderEpoch 5 */
		0x00, 0x00, 0x00, 0x04, /* LeaderEpoch 4 */
		0x00, 0x00, 0x00,       /* tags: partition, topic, message */
	};
	static const uint8_t v0[] = {
		0x00, 0x00, 0x00, 0x01, /* Topics: 1 */
		0x00, 0x01, 't',        /* Topic "t" */
		0x00, 0x00, 0x00, 0x01, /* Partitions: 1 */
		0x00, 0x00, 0x00, 0x07, /* Partition 7 */
		0x00, 0x00, 0x00, 0x04, /* LeaderEpoch 4 */
	};
	const proto_api_desc *d = proto_api_desc_lookup(23);
	OffsetForLeaderEpochRequest m;
	OffsetForLeaderEpochRequest_OffsetForLeaderTopic t;
	OffsetForLeaderEpochRequest_OffsetForLeaderPartition p;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "OffsetForLeaderEpoch");
	ck_assert_int_eq(d->min_version, 0);
	ck_assert_int_eq(d->max_version, 4);
	ck_assert_int_eq(d->flexible_min, 4);
	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	OffsetForLeaderEpochRequest_init(&m);
	ck_assert_int_eq(m.replica_id, -2);
	OffsetForLeaderEpochRequest_OffsetForLeaderTopic_init(&t);
	OffsetForLeaderEpochRequest_OffsetForLeaderPartition_init(&p);
	ck_assert_int_eq(p.current_leader_epoch, -1);
	p.partition = 0;
	p.current_leader_epoch = 5;
	p.leader_epoch = 4;
	t.topic = proto_cstr("t");
	t.partitions_count = 1;
	t.partitions = &p;
	m.replica_id = 1;
	m.topics_count = 1;
	m.topics = &t;
	ck_assert_int_eq(OffsetForLeaderEpochRequest_encode(&w, 3, &m), 0);
	CHECK_BYTES(&w, v3);
	proto_writer_reset(&w);
	ck_assert_int_eq(OffsetForLeaderEpochRequest_encode(&w, 4, &m), 0);
	CHECK_BYTES(&w, v4);

	proto_reader_init(&r, v4, sizeof(v4));
	ck_assert_int_eq(OffsetForLeaderEpochRequest_decode(&r, &a, 4, &m), 0);
	ck_assert_int_eq(m.replica_id, 1);
	ck_assert_int_eq(m.topics_count, 1);
	ck_assert(proto_str_eq(m.topics[0].topic, "t"));
	ck_assert_int_eq(m.topics[0].partitions[0].current_leader_epoch, 5);
	ck_assert_int_eq(m.topics[0].partitions[0].leader_epoch, 4);

	proto_reader_init(&r, v0, sizeof(v0));
	ck_assert_int_eq(OffsetForLeaderEpochRequest_decode(&r, &a, 0, &m), 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	ck_assert_int_eq(m.replica_id, -2);
	ck_assert_int_eq(m.topics[0].partitions_count, 1);
	ck_assert_int_eq(m.topics[0].partitions[0].partition, 7);
	ck_assert_int_eq(m.topics[0].partitions[0].current_leader_epoch, -1);
	ck_assert_int_eq(m.topics[0].partitions[0].leader_epoch, 4);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

/* OffsetForLeaderEpoch response: v0 = per partition ErrorCode (int16),
 * Partition (int32), EndOffset (int64); v1 puts LeaderEpoch (int32) before
 * EndOffset; v2 puts ThrottleTimeMs first; v4 is the flexible form. */
START_TEST(test_vec_offset_for_leader_epoch_response)
{
	static const uint8_t v0[] = {
		0x00, 0x00, 0x00, 0x01,                         /* Topics: 1 */
		0x00, 0x01, 't',                                /* Topic "t" */
		0x00, 0x00, 0x00, 0x01,                         /* Partitions: 1 */
		0x00, 0x4a,                                     /* ErrorCode 74 */
		0x00, 0x00, 0x00, 0x02,                         /* Partition 2 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, /* EndOffset 256 */
	};
	static const uint8_t v1[] = {
		0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01,
		0x00, 0x4a, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x09,                         /* LeaderEpoch 9 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	};
	static const uint8_t v4[] = {
		0x00, 0x00, 0x00, 0x64,                         /* ThrottleTimeMs 100 */
		0x02,                                           /* Topics: compact, 1 */
		0x02, 't',                                      /* Topic "t" */
		0x02,                                           /* Partitions: compact, 1 */
		0x00, 0x4a,                                     /* ErrorCode 74 */
		0x00, 0x00, 0x00, 0x02,                         /* Partition 2 */
		0x00, 0x00, 0x00, 0x09,                         /* LeaderEpoch 9 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, /* EndOffset 256 */
		0x00, 0x00, 0x00,                               /* tags: partition, topic, message */
	};
	OffsetForLeaderEpochResponse m;
	OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult t;
	OffsetForLeaderEpochResponse_EpochEndOffset p;
	proto_writer w;
	proto_reader r;
	proto_arena a;

	proto_arena_init(&a, 0);
	proto_writer_init(&w);
	OffsetForLeaderEpochResponse_init(&m);
	OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult_init(&t);
	OffsetForLeaderEpochResponse_EpochEndOffset_init(&p);
	ck_assert_int_eq(p.leader_epoch, -1);
	ck_assert_int_eq(p.end_offset, -1);
	p.error_code = 74; /* FENCED_LEADER_EPOCH */
	p.partition = 2;
	p.leader_epoch = 9;
	p.end_offset = 256;
	t.topic = proto_cstr("t");
	t.partitions_count = 1;
	t.partitions = &p;
	m.throttle_time_ms = 100;
	m.topics_count = 1;
	m.topics = &t;
	ck_assert_int_eq(OffsetForLeaderEpochResponse_encode(&w, 0, &m), 0);
	CHECK_BYTES(&w, v0);
	proto_writer_reset(&w);
	ck_assert_int_eq(OffsetForLeaderEpochResponse_encode(&w, 1, &m), 0);
	CHECK_BYTES(&w, v1);
	proto_writer_reset(&w);
	ck_assert_int_eq(OffsetForLeaderEpochResponse_encode(&w, 4, &m), 0);
	CHECK_BYTES(&w, v4);

	proto_reader_init(&r, v0, sizeof(v0));
	ck_assert_int_eq(OffsetForLeaderEpochResponse_decode(&r, &a, 0, &m), 0);
	ck_assert_int_eq(m.throttle_time_ms, 0);
	ck_assert_int_eq(m.topics[0].partitions[0].error_code, 74);
	ck_assert_int_eq(m.topics[0].partitions[0].leader_epoch, -1); /* absent in v0 */
	ck_assert_int_eq(m.topics[0].partitions[0].end_offset, 256);
	proto_reader_init(&r, v4, sizeof(v4));
	ck_assert_int_eq(OffsetForLeaderEpochResponse_decode(&r, &a, 4, &m), 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	ck_assert_int_eq(m.throttle_time_ms, 100);
	ck_assert_int_eq(m.topics[0].partitions[0].partition, 2);
	ck_assert_int_eq(m.topics[0].partitions[0].leader_epoch, 9);
	ck_assert_int_eq(m.topics[0].partitions[0].end_offset, 256);
	proto_writer_free(&w);
	proto_arena_free(&a);
}
END_TEST

#endif

static Suite *messages_suite(void)
{
	Suite *s = suite_create(SUITE_NAME);
	TCase *tc = tcase_create("vectors");

#ifdef GEN_FIXTURES
	tcase_add_test(tc, test_vec_classic);
	tcase_add_test(tc, test_vec_classic_nullable_struct);
	tcase_add_test(tc, test_vec_kitchen_sink_defaults);
#else
	tcase_add_test(tc, test_vec_api_versions_v0_request);
	tcase_add_test(tc, test_vec_api_versions_v3_request);
	tcase_add_test(tc, test_vec_api_versions_v0_response);
	tcase_add_test(tc, test_vec_api_versions_v3_response_tagged);
	tcase_add_test(tc, test_vec_metadata_v0_request);
	tcase_add_test(tc, test_vec_controlled_shutdown);
	tcase_add_test(tc, test_vec_offset_for_leader_epoch_request);
	tcase_add_test(tc, test_vec_offset_for_leader_epoch_response);
	tcase_add_test(tc, test_vec_partition_reassignments);
	tcase_add_test(tc, test_vec_elect_leaders);
	tcase_add_test(tc, test_vec_describe_topic_partitions);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("all");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_table_has_codecs);
	tcase_add_test(tc, test_version_out_of_range);
	tcase_add_test(tc, test_defaults_round_trip);
	tcase_add_test(tc, test_round_trip_all);
#ifndef GEN_FIXTURES
	tcase_add_test(tc, test_float64_nan_equal);
	tcase_add_test(tc, test_throttle_at);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(messages_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
