/*
 * test_txn_codec.c - unit tests for the __transaction_state layouts
 * (txn/store_codec.c): keys and TransactionLogValue v0 and v1 against bytes
 * derived by hand from Kafka's TransactionLogKey / TransactionLogValue
 * definitions (classic and flexible encodings, null partitions, tagged
 * fields written only when not default, unknown tags skipped), round trips,
 * and one test per malformed input class.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/txn/store_codec.h"
#include "protocol/buf.h"

static void expect_bytes(const proto_writer *w, const uint8_t *want, size_t n)
{
	ck_assert_uint_eq(w->len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(w->buf[i] == want[i], "byte %zu: got 0x%02x, want 0x%02x", i, w->buf[i],
			      want[i]);
}

static bool view_is(proto_str s, const char *c)
{
	return s.len == (int32_t)strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

/* The value used in most tests: Ongoing, partitions t-0, t-2, u-1. */
static txn_log_tp sample_tps[3];
static txn_log_value sample(int16_t version)
{
	sample_tps[0] = (txn_log_tp){ proto_cstr("t"), 0 };
	sample_tps[1] = (txn_log_tp){ proto_cstr("t"), 2 };
	sample_tps[2] = (txn_log_tp){ proto_cstr("u"), 1 };
	return (txn_log_value){
		.version = version,
		.producer_id = 1000,
		.prev_producer_id = -1,
		.next_producer_id = -1,
		.producer_epoch = 3,
		.timeout_ms = 60000,
		.status = 1,
		.ntps = 3,
		.tps = sample_tps,
		.last_update_ms = 1700000000000LL, /* 0x18bcfe56800 */
		.start_ms = 1699999999000LL,       /* 0x18bcfe56418 */
	};
}

/* TransactionLogValue v0 of sample(0), field by field. */
static const uint8_t V0_BYTES[] = {
	0x00, 0x00,                                     /* version 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* producer_id 1000 */
	0x00, 0x03,                                     /* producer_epoch 3 */
	0x00, 0x00, 0xea, 0x60,                         /* transaction_timeout_ms 60000 */
	0x01,                                           /* status Ongoing */
	0x00, 0x00, 0x00, 0x02,                         /* 2 topics */
	0x00, 0x01, 't',                                /* topic "t" */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* [0, 2] */
	0x00, 0x01, 'u',                                /* topic "u" */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, /* [1] */
	0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* last update */
	0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x64, 0x18, /* start */
};

/* ---- keys ---- */

START_TEST(test_key)
{
	proto_writer w;
	proto_writer_init(&w);
	txn_key_encode(&w, proto_cstr("txn-1"));
	static const uint8_t want[] = { 0x00, 0x00, 0x00, 0x05, 't', 'x', 'n', '-', '1' };
	expect_bytes(&w, want, sizeof(want));
	proto_str id;
	ck_assert_int_eq(txn_key_decode(w.buf, (int32_t)w.len, &id), 0);
	ck_assert(view_is(id, "txn-1"));

	/* Another record type (a later Kafka's): skipped as unknown. */
	static const uint8_t v1[] = { 0x00, 0x01, 0x00, 0x01, 'x' };
	ck_assert_int_eq(txn_key_decode(v1, sizeof(v1), &id), PROTO_ERR_VERSION);
	/* Truncated, null id, bytes left over. */
	ck_assert_int_eq(txn_key_decode(want, 1, &id), PROTO_ERR_UNDERFLOW);
	ck_assert_int_eq(txn_key_decode(want, 6, &id), PROTO_ERR_UNDERFLOW);
	static const uint8_t null_id[] = { 0x00, 0x00, 0xff, 0xff };
	ck_assert_int_eq(txn_key_decode(null_id, sizeof(null_id), &id), PROTO_ERR_INVALID);
	static const uint8_t extra[] = { 0x00, 0x00, 0x00, 0x01, 'x', 0x00 };
	ck_assert_int_eq(txn_key_decode(extra, sizeof(extra), &id), PROTO_ERR_INVALID);
	proto_writer_free(&w);
}
END_TEST

/* ---- values ---- */

START_TEST(test_value_v0)
{
	proto_writer w;
	proto_writer_init(&w);
	txn_log_value v = sample(0);
	txn_value_encode(&w, &v);
	expect_bytes(&w, V0_BYTES, sizeof(V0_BYTES));

	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	ck_assert_int_eq(txn_value_decode(V0_BYTES, sizeof(V0_BYTES), &a, &d), 0);
	ck_assert_int_eq(d.version, 0);
	ck_assert_int_eq(d.producer_id, 1000);
	ck_assert_int_eq(d.producer_epoch, 3);
	ck_assert_int_eq(d.timeout_ms, 60000);
	ck_assert_int_eq(d.status, 1);
	ck_assert(!d.partitions_null);
	ck_assert_int_eq(d.ntps, 3);
	ck_assert(view_is(d.tps[0].topic, "t") && d.tps[0].partition == 0);
	ck_assert(view_is(d.tps[1].topic, "t") && d.tps[1].partition == 2);
	ck_assert(view_is(d.tps[2].topic, "u") && d.tps[2].partition == 1);
	ck_assert_int_eq(d.last_update_ms, 1700000000000LL);
	ck_assert_int_eq(d.start_ms, 1699999999000LL);
	/* v0 has no tagged fields: the defaults. */
	ck_assert_int_eq(d.prev_producer_id, -1);
	ck_assert_int_eq(d.next_producer_id, -1);
	ck_assert_int_eq(d.client_tv, 0);
	proto_arena_free(&a);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_value_v0_empty)
{
	/* Empty: Kafka writes null partitions and start -1. */
	txn_log_value v = {
		.version = 0, .producer_id = 7, .prev_producer_id = -1, .next_producer_id = -1,
		.producer_epoch = 0, .timeout_ms = 1, .status = 0, .partitions_null = true,
		.last_update_ms = 2, .start_ms = -1,
	};
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00,
		0xff, 0xff, 0xff, 0xff, /* null array */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	proto_writer w;
	proto_writer_init(&w);
	txn_value_encode(&w, &v);
	expect_bytes(&w, want, sizeof(want));
	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	ck_assert_int_eq(txn_value_decode(w.buf, (int32_t)w.len, &a, &d), 0);
	ck_assert(d.partitions_null);
	ck_assert_int_eq(d.ntps, 0);
	ck_assert_int_eq(d.start_ms, -1);
	/* An empty (not null) array for a Complete* state. */
	v.status = 4;
	v.partitions_null = false;
	proto_writer_reset(&w);
	txn_value_encode(&w, &v);
	ck_assert_int_eq(w.buf[17], 0x00);
	ck_assert_int_eq(w.buf[20], 0x00);
	ck_assert_int_eq(txn_value_decode(w.buf, (int32_t)w.len, &a, &d), 0);
	ck_assert(!d.partitions_null);
	ck_assert_int_eq(d.ntps, 0);
	ck_assert_int_eq(d.status, 4);
	proto_arena_free(&a);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_value_v1)
{
	txn_log_value v = sample(1);
	v.prev_producer_id = 999;
	v.client_tv = 2;
	static const uint8_t want[] = {
		0x00, 0x01,                                     /* version 1 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* producer_id */
		0x00, 0x03,                                     /* epoch */
		0x00, 0x00, 0xea, 0x60,                         /* timeout */
		0x01,                                           /* Ongoing */
		0x03,                                           /* 2 topics (compact: n + 1) */
		0x02, 't',                                      /* compact "t" */
		0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* [0, 2] */
		0x00,                                           /* the entry's tags */
		0x02, 'u',
		0x02, 0x00, 0x00, 0x00, 0x01,                   /* [1] */
		0x00,
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* last update */
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x64, 0x18, /* start */
		0x02,                                           /* 2 tagged fields */
		0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe7, /* tag 0: prev 999 */
		0x02, 0x02, 0x00, 0x02,                         /* tag 2: client TV 2 */
	};
	proto_writer w;
	proto_writer_init(&w);
	txn_value_encode(&w, &v);
	expect_bytes(&w, want, sizeof(want));
	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	ck_assert_int_eq(txn_value_decode(want, sizeof(want), &a, &d), 0);
	ck_assert_int_eq(d.version, 1);
	ck_assert_int_eq(d.prev_producer_id, 999);
	ck_assert_int_eq(d.next_producer_id, -1);
	ck_assert_int_eq(d.client_tv, 2);
	ck_assert_int_eq(d.ntps, 3);
	ck_assert(view_is(d.tps[2].topic, "u") && d.tps[2].partition == 1);
	ck_assert_int_eq(d.start_ms, 1699999999000LL);

	/* Defaults only: an empty tag section; null partitions as 0. */
	txn_log_value e = { .version = 1, .producer_id = 1, .prev_producer_id = -1,
			    .next_producer_id = -1, .partitions_null = true, .start_ms = -1 };
	proto_writer_reset(&w);
	txn_value_encode(&w, &e);
	ck_assert_uint_eq(w.len, 2 + 8 + 2 + 4 + 1 + 1 + 8 + 8 + 1);
	ck_assert_int_eq(w.buf[17], 0x00);
	ck_assert_int_eq(w.buf[w.len - 1], 0x00);
	ck_assert_int_eq(txn_value_decode(w.buf, (int32_t)w.len, &a, &d), 0);
	ck_assert(d.partitions_null);
	proto_arena_free(&a);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_value_v1_unknown_tag)
{
	/* next_producer_id (tag 1) and a tag 9 a later Kafka might add. */
	static const uint8_t in[] = {
		0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x7f, 0xfe,
		0x00, 0x00, 0x00, 0x64, 0x03,
		0x01,                                     /* 0 topics */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x02,
		0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06,
		0x09, 0x03, 0xaa, 0xbb, 0xcc,
	};
	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	ck_assert_int_eq(txn_value_decode(in, sizeof(in), &a, &d), 0);
	ck_assert_int_eq(d.producer_id, 5);
	ck_assert_int_eq(d.producer_epoch, 32766);
	ck_assert_int_eq(d.status, 3);
	ck_assert_int_eq(d.next_producer_id, 6);
	ck_assert_int_eq(d.prev_producer_id, -1);
	/* A known tag with the wrong size is malformed. */
	uint8_t bad[sizeof(in)];
	memcpy(bad, in, sizeof(in));
	bad[36] = 0x07; /* tag 1 with size 7: its int64 is cut short */
	ck_assert_int_ne(txn_value_decode(bad, sizeof(bad), &a, &d), 0);
	proto_arena_free(&a);
}
END_TEST

START_TEST(test_round_trip)
{
	/* Many partitions over several topics, both versions. */
	txn_log_tp tps[40];
	const char *names[] = { "alpha", "beta", "gamma", "delta-with-a-longer-name" };
	for (int i = 0; i < 40; i++)
		tps[i] = (txn_log_tp){ proto_cstr(names[i / 10]), i * 7 };
	for (int16_t ver = 0; ver <= 1; ver++) {
		txn_log_value v = {
			.version = ver, .producer_id = INT64_MAX, .prev_producer_id = 3,
			.next_producer_id = 4, .producer_epoch = INT16_MAX, .timeout_ms = INT32_MAX,
			.status = 2, .ntps = 40, .tps = tps, .last_update_ms = 5, .start_ms = 6,
			.client_tv = 2,
		};
		proto_writer w;
		proto_writer_init(&w);
		txn_value_encode(&w, &v);
		proto_arena a;
		proto_arena_init(&a, 0);
		txn_log_value d;
		ck_assert_int_eq(txn_value_decode(w.buf, (int32_t)w.len, &a, &d), 0);
		ck_assert_int_eq(d.ntps, 40);
		for (int i = 0; i < 40; i++) {
			ck_assert(view_is(d.tps[i].topic, names[i / 10]));
			ck_assert_int_eq(d.tps[i].partition, i * 7);
		}
		ck_assert_int_eq(d.producer_id, INT64_MAX);
		ck_assert_int_eq(d.producer_epoch, INT16_MAX);
		ck_assert_int_eq(d.timeout_ms, INT32_MAX);
		ck_assert_int_eq(d.status, 2);
		ck_assert_int_eq(d.prev_producer_id, ver ? 3 : -1);
		ck_assert_int_eq(d.next_producer_id, ver ? 4 : -1);
		ck_assert_int_eq(d.client_tv, ver ? 2 : 0);
		/* Every truncation fails, none reads past the end. */
		for (size_t cut = 0; cut < w.len; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, w.buf, cut);
			ck_assert_int_ne(txn_value_decode(copy, (int32_t)cut, &a, &d), 0);
			free(copy);
		}
		proto_arena_free(&a);
		proto_writer_free(&w);
	}
}
END_TEST

START_TEST(test_value_malformed)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	uint8_t b[sizeof(V0_BYTES) + 1];

	/* A version this broker does not know. */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[1] = 2;
	ck_assert_int_eq(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), PROTO_ERR_VERSION);
	b[0] = 0xff;
	b[1] = 0xff;
	ck_assert_int_eq(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), PROTO_ERR_VERSION);
	/* A status id above PrepareEpochFence (Kafka's fromId throws). */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[16] = 8;
	ck_assert_int_eq(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), PROTO_ERR_INVALID);
	/* A null topic name. */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[21] = 0xff;
	b[22] = 0xff;
	ck_assert_int_ne(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), 0);
	/* A partition count above what is left. */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[24] = 0x7f;
	ck_assert_int_ne(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), 0);
	/* A topic count above what is left. */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[17] = 0x7f;
	ck_assert_int_ne(txn_value_decode(b, sizeof(V0_BYTES), &a, &d), 0);
	/* Bytes left over. */
	memcpy(b, V0_BYTES, sizeof(V0_BYTES));
	b[sizeof(V0_BYTES)] = 0;
	ck_assert_int_eq(txn_value_decode(b, sizeof(b), &a, &d), PROTO_ERR_INVALID);
	/* Too short to hold a version. */
	ck_assert_int_eq(txn_value_decode(b, 1, &a, &d), PROTO_ERR_UNDERFLOW);
	ck_assert_int_eq(txn_value_decode(NULL, 0, &a, &d), PROTO_ERR_UNDERFLOW);
	proto_arena_free(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txn_codec");
	TCase *tc = tcase_create("codec");
	tcase_add_test(tc, test_key);
	tcase_add_test(tc, test_value_v0);
	tcase_add_test(tc, test_value_v0_empty);
	tcase_add_test(tc, test_value_v1);
	tcase_add_test(tc, test_value_v1_unknown_tag);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_value_malformed);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
