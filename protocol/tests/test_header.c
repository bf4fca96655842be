/*
 * test_header.c - unit tests for protocol/header.c: request header v0/v1/v2
 * (client id null and set, tagged fields skipped), malformed headers,
 * response header v0/v1 and the version rules (KIP-482, KIP-511).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/header.h"

START_TEST(test_request_v0)
{
	static const uint8_t b[] = { 0x00, 0x03, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78, 0xaa };
	proto_reader r;
	proto_reader_init(&r, b, sizeof(b));
	proto_request_header h;
	ck_assert_int_eq(proto_request_header_decode(&r, 0, &h), 0);
	ck_assert_int_eq(h.api_key, 3);
	ck_assert_int_eq(h.api_version, 1);
	ck_assert_int_eq(h.correlation_id, 0x12345678);
	ck_assert_int_eq(h.client_id.len, -1);
	ck_assert_uint_eq(proto_reader_left(&r), 1); /* body untouched */
}
END_TEST

START_TEST(test_request_v1)
{
	static const uint8_t b[] = { 0x00, 0x12, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07,
				     0x00, 0x03, 'c', 'l', 'i', 0x55 };
	proto_reader r;
	proto_reader_init(&r, b, sizeof(b));
	proto_request_header h;
	ck_assert_int_eq(proto_request_header_decode(&r, 1, &h), 0);
	ck_assert_int_eq(h.api_key, 18);
	ck_assert_int_eq(h.correlation_id, 7);
	ck_assert(proto_str_eq(h.client_id, "cli"));
	ck_assert_uint_eq(proto_reader_left(&r), 1);
	/* Null client id. */
	static const uint8_t n[] = { 0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff };
	proto_reader_init(&r, n, sizeof(n));
	ck_assert_int_eq(proto_request_header_decode(&r, 1, &h), 0);
	ck_assert_int_eq(h.client_id.len, -1);
	/* Truncated client id. */
	static const uint8_t t[] = { 0, 0, 0, 9, 0, 0, 0, 1, 0x00, 0x05, 'a' };
	proto_reader_init(&r, t, sizeof(t));
	ck_assert_int_eq(proto_request_header_decode(&r, 1, &h), PROTO_ERR_UNDERFLOW);
	/* Invalid negative length. */
	static const uint8_t neg[] = { 0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xf0 };
	proto_reader_init(&r, neg, sizeof(neg));
	ck_assert_int_eq(proto_request_header_decode(&r, 1, &h), PROTO_ERR_INVALID);
}
END_TEST

START_TEST(test_request_v2_tags)
{
	/* client id stays a classic int16 string in v2; then two unknown
	 * tagged fields (tag 0 size 2, tag 5 size 0), then the body. */
	static const uint8_t b[] = { 0x00, 0x01, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x2a,
				     0x00, 0x02, 'i', 'd',
				     0x02, 0x00, 0x02, 0xbe, 0xef, 0x05, 0x00,
				     0x77 };
	proto_reader r;
	proto_reader_init(&r, b, sizeof(b));
	proto_request_header h;
	ck_assert_int_eq(proto_request_header_decode(&r, 2, &h), 0);
	ck_assert_int_eq(h.api_key, 1);
	ck_assert_int_eq(h.api_version, 12);
	ck_assert_int_eq(h.correlation_id, 42);
	ck_assert(proto_str_eq(h.client_id, "id"));
	ck_assert_uint_eq(proto_reader_left(&r), 1);
	ck_assert_int_eq(proto_read_int8(&r), 0x77);
	/* Empty tag section. */
	static const uint8_t e[] = { 0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x00 };
	proto_reader_init(&r, e, sizeof(e));
	ck_assert_int_eq(proto_request_header_decode(&r, 2, &h), 0);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	/* Tag whose size runs past the end. */
	static const uint8_t bad[] = { 0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x01, 0x00, 0x09, 0x00 };
	proto_reader_init(&r, bad, sizeof(bad));
	ck_assert_int_eq(proto_request_header_decode(&r, 2, &h), PROTO_ERR_UNDERFLOW);
	/* A tag count that cannot fit in what is left. */
	static const uint8_t many[] = { 0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0x00, 0x00 };
	proto_reader_init(&r, many, sizeof(many));
	ck_assert_int_eq(proto_request_header_decode(&r, 2, &h), PROTO_ERR_INVALID);
	/* Unknown header versions. */
	proto_reader_init(&r, e, sizeof(e));
	ck_assert_int_eq(proto_request_header_decode(&r, 3, &h), PROTO_ERR_VERSION);
	ck_assert_int_eq(proto_request_header_decode(&r, -1, &h), PROTO_ERR_VERSION);
}
END_TEST

START_TEST(test_request_roundtrip)
{
	for (int16_t v = 0; v <= 2; v++) {
		proto_writer w;
		proto_writer_init(&w);
		proto_request_header h = { 3, 12, -7, proto_cstr("rdkafka") };
		proto_request_header_encode(&w, v, &h);
		ck_assert_int_eq(w.len, v == 0 ? 8 : v == 1 ? 17 : 18);
		proto_reader r;
		proto_reader_init(&r, w.buf, w.len);
		proto_request_header d;
		ck_assert_int_eq(proto_request_header_decode(&r, v, &d), 0);
		ck_assert_int_eq(d.api_key, 3);
		ck_assert_int_eq(d.api_version, 12);
		ck_assert_int_eq(d.correlation_id, -7);
		if (v > 0)
			ck_assert(proto_str_eq(d.client_id, "rdkafka"));
		ck_assert_uint_eq(proto_reader_left(&r), 0);
		proto_writer_free(&w);
	}
}
END_TEST

START_TEST(test_response_header)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_response_header_encode(&w, 0, 0x01020304);
	static const uint8_t v0[] = { 1, 2, 3, 4 };
	ck_assert_int_eq(w.len, 4);
	ck_assert_mem_eq(w.buf, v0, 4);
	proto_writer_reset(&w);
	proto_response_header_encode(&w, 1, 0x01020304);
	static const uint8_t v1[] = { 1, 2, 3, 4, 0 };
	ck_assert_int_eq(w.len, 5);
	ck_assert_mem_eq(w.buf, v1, 5);
	proto_reader r;
	proto_reader_init(&r, w.buf, w.len);
	int32_t cid;
	ck_assert_int_eq(proto_response_header_decode(&r, 1, &cid), 0);
	ck_assert_int_eq(cid, 0x01020304);
	ck_assert_uint_eq(proto_reader_left(&r), 0);
	proto_reader_init(&r, w.buf, 3);
	ck_assert_int_eq(proto_response_header_decode(&r, 0, &cid), PROTO_ERR_UNDERFLOW);
	ck_assert_int_eq(proto_response_header_decode(&r, 2, &cid), PROTO_ERR_VERSION);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_versions)
{
	/* Produce: flexible from v9. */
	ck_assert_int_eq(proto_request_header_version(0, 8, 9), 1);
	ck_assert_int_eq(proto_request_header_version(0, 9, 9), 2);
	ck_assert_int_eq(proto_response_header_version(0, 8, 9), 0);
	ck_assert_int_eq(proto_response_header_version(0, 9, 9), 1);
	/* An API with no flexible version. */
	ck_assert_int_eq(proto_request_header_version(30, 5, -1), 1);
	ck_assert_int_eq(proto_response_header_version(30, 5, -1), 0);
	/* ApiVersions: request v2 header from v3, response always v0. */
	ck_assert_int_eq(proto_request_header_version(18, 2, 3), 1);
	ck_assert_int_eq(proto_request_header_version(18, 3, 3), 2);
	ck_assert_int_eq(proto_request_header_version(18, 4, 3), 2);
	ck_assert_int_eq(proto_response_header_version(18, 3, 3), 0);
	ck_assert_int_eq(proto_response_header_version(18, 4, 3), 0);
	/* ControlledShutdown v0 uses request header v0. */
	ck_assert_int_eq(proto_request_header_version(7, 0, 3), 0);
	ck_assert_int_eq(proto_request_header_version(7, 1, 3), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("header");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_request_v0);
	tcase_add_test(tc, test_request_v1);
	tcase_add_test(tc, test_request_v2_tags);
	tcase_add_test(tc, test_request_roundtrip);
	tcase_add_test(tc, test_response_header);
	tcase_add_test(tc, test_versions);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
