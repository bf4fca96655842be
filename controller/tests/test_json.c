/*
 * test_json.c - the strict JSON reader and compact writer (json.h): what is
 * accepted and how it is indexed, one test per class of refused input, and
 * the writer's escaping compared with what Jackson 2.14 (Kafka's JSON
 * library) printed for the same strings.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/json.h"

static proto_arena arena;

static void setup(void)
{
	proto_arena_init(&arena, 0);
}

static void teardown(void)
{
	proto_arena_free(&arena);
}

static int parse(const char *s, ctl_json *d)
{
	return ctl_json_parse(d, s, strlen(s), &arena);
}

static int parse_n(const char *s, size_t n)
{
	ctl_json d;
	return ctl_json_parse(&d, s, n, &arena);
}

static int parse_rc(const char *s)
{
	return parse_n(s, strlen(s));
}

START_TEST(test_index)
{
	ctl_json d;
	const char *s = " {\"a\" : [1, -2, {\"b\":null}], \"c\":true,\"d\":\"x\",\"e\":{}} \n";
	ck_assert_int_eq(parse(s, &d), 0);
	/* {, a, [, 1, -2, {, b, null, c, true, d, "x", e, {} */
	ck_assert_uint_eq(d.ntok, 14);
	ck_assert_int_eq(ctl_json_type_of(&d, 0), CTL_JSON_OBJECT);
	ck_assert_uint_eq(d.tok[0].count, 4);
	ck_assert_uint_eq(d.tok[0].end, 14);
	int a = ctl_json_get(&d, 0, "a");
	ck_assert_int_eq(a, 2);
	ck_assert_int_eq(ctl_json_type_of(&d, a), CTL_JSON_ARRAY);
	ck_assert_uint_eq(d.tok[a].count, 3);
	int e = ctl_json_first(&d, a);
	int64_t v;
	ck_assert_int_eq(ctl_json_int(&d, e, INT64_MIN, INT64_MAX, &v), 0);
	ck_assert_int_eq(v, 1);
	e = ctl_json_next(&d, e);
	ck_assert_int_eq(ctl_json_int(&d, e, -2, -2, &v), 0);
	ck_assert_int_eq(ctl_json_int(&d, e, -1, 5, &v), -EINVAL); /* range */
	e = ctl_json_next(&d, e);
	ck_assert_int_eq(ctl_json_type_of(&d, e), CTL_JSON_OBJECT);
	ck_assert_int_eq(ctl_json_type_of(&d, ctl_json_get(&d, e, "b")), CTL_JSON_NULL);
	ck_assert_int_eq(ctl_json_next(&d, e), 8); /* "c" follows the array's subtree */
	int c = ctl_json_get(&d, 0, "c");
	ck_assert(d.tok[c].type == CTL_JSON_BOOL && d.tok[c].b);
	ck_assert_int_eq(ctl_json_int(&d, c, 0, 1, &v), -EINVAL); /* type */
	const char *str;
	size_t len;
	ck_assert_int_eq(ctl_json_str(&d, ctl_json_get(&d, 0, "d"), &arena, &str, &len), 0);
	ck_assert_str_eq(str, "x");
	ck_assert_int_eq(ctl_json_str(&d, c, &arena, &str, &len), -EINVAL);
	int o = ctl_json_get(&d, 0, "e");
	ck_assert_int_eq(ctl_json_first(&d, o), -1);
	ck_assert_int_eq(ctl_json_get(&d, 0, "zz"), -1);
	ck_assert_int_eq(ctl_json_get(&d, a, "a"), -1); /* not an object */
	/* members in order */
	int k = ctl_json_first(&d, 0);
	const char *names[] = { "a", "c", "d", "e" };
	for (int i = 0; i < 4; i++, k = ctl_json_next_member(&d, k))
		ck_assert(ctl_json_str_eq(&d, k, names[i], 1));
}
END_TEST

START_TEST(test_scalars_at_root)
{
	ctl_json d;
	int64_t v;
	ck_assert_int_eq(parse("9223372036854775807", &d), 0);
	ck_assert_int_eq(ctl_json_int(&d, 0, INT64_MIN, INT64_MAX, &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(parse("-9223372036854775808", &d), 0);
	ck_assert_int_eq(ctl_json_int(&d, 0, INT64_MIN, INT64_MAX, &v), 0);
	ck_assert(v == INT64_MIN);
	ck_assert_int_eq(parse("-0", &d), 0);
	ck_assert_int_eq(parse("0", &d), 0);
	ck_assert_int_eq(parse("\"\"", &d), 0);
	ck_assert_int_eq(parse("null", &d), 0);
	ck_assert_int_eq(parse("false", &d), 0);
	ck_assert(!d.tok[0].b);
	ck_assert_int_eq(parse("[]", &d), 0);
	ck_assert_int_eq(parse("[[],[[]]]", &d), 0);
	ck_assert_uint_eq(d.ntok, 4);
}
END_TEST

START_TEST(test_string_escapes)
{
	ctl_json d;
	const char *s;
	size_t n;
	/* \" \\ \/ \b \f \n \r \t, \u00e9 (2 bytes), \u20ac (3), a surrogate
	 * pair (4), raw UTF-8 */
	ck_assert_int_eq(parse("\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\\ud83d\\ude00\xc3\xa9\"", &d), 0);
	ck_assert(d.tok[0].escaped);
	ck_assert_int_eq(ctl_json_str(&d, 0, &arena, &s, &n), 0);
	const char want[] = "q\"b\\s/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9";
	ck_assert_uint_eq(n, sizeof(want) - 1);
	ck_assert_mem_eq(s, want, n);
	ck_assert(ctl_json_str_eq(&d, 0, want, sizeof(want) - 1));
	ck_assert(!ctl_json_str_eq(&d, 0, want, sizeof(want) - 2));
	/* a name written with an escape matches the plain name */
	ck_assert_int_eq(parse("{\"\\u0061b\":1}", &d), 0);
	ck_assert_int_eq(ctl_json_get(&d, 0, "ab"), 2);
}
END_TEST

/* One check per class of malformed input. */
START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"", " ", "{", "}", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{a:1}",
		"{'a':1}", "{\"a\":1}x", "{\"a\":1} {}", "tru", "nul", "nulll", "True",
		"01", "-", "--1", "+1", "1.0", "1e5", "1E5", "-1.5", ".5", "0x10",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999",
		"\"abc", "\"a\nb\"", "\"a\tb\"", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"",
		"\"\\u0000\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"",
		"\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xc3\"",
		"\"\xe2\x82\"", "\"\x80\"", "\xef\xbb\xbf{}", "[1,2", "{\"a\":", "{\"a\"",
		"{\"a\":[}", "NaN", "Infinity", "[undefined]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_rc(bad[i]) == -EINVAL, "accepted: %s", bad[i]);
	/* a NUL byte inside the text */
	ck_assert_int_eq(parse_n("{\"a\":1}\0", 8), -EINVAL);
	ck_assert_int_eq(parse_n("\"a\0b\"", 5), -EINVAL);
}
END_TEST

START_TEST(test_repeated_names)
{
	ck_assert_int_eq(parse_rc("{\"a\":1,\"a\":2}"), -EINVAL);
	ck_assert_int_eq(parse_rc("{\"a\":1,\"\\u0061\":2}"), -EINVAL); /* same decoded */
	ck_assert_int_eq(parse_rc("{\"x\":{\"a\":1,\"b\":{},\"a\":[]}}"), -EINVAL);
	ck_assert_int_eq(parse_rc("[{\"a\":1},{\"a\":1}]"), 0); /* different objects */
	/* a big object takes the hashed path */
	char buf[4096];
	size_t n = 0;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{");
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s\"%d\":%d", i ? "," : "", i, i);
	snprintf(buf + n, sizeof(buf) - n, "}");
	ck_assert_int_eq(parse_rc(buf), 0);
	snprintf(buf + n, sizeof(buf) - n, ",\"\\u0031\\u00307\":1}"); /* "107" again */
	ck_assert_int_eq(parse_rc(buf), -EINVAL);
}
END_TEST

START_TEST(test_limits)
{
	char deep[2 * (CTL_JSON_MAX_DEPTH + 1) + 1];
	for (int i = 0; i < CTL_JSON_MAX_DEPTH; i++) {
		deep[i] = '[';
		deep[CTL_JSON_MAX_DEPTH + i] = ']';
	}
	deep[2 * CTL_JSON_MAX_DEPTH] = 0;
	ck_assert_int_eq(parse_rc(deep), 0);
	for (int i = 0; i <= CTL_JSON_MAX_DEPTH; i++) {
		deep[i] = '[';
		deep[CTL_JSON_MAX_DEPTH + 1 + i] = ']';
	}
	deep[2 * (CTL_JSON_MAX_DEPTH + 1)] = 0;
	ck_assert_int_eq(parse_rc(deep), -E2BIG);
	/* size: valid JSON one byte past the limit is refused before parsing */
	size_t big = CTL_JSON_MAX_SIZE + 1;
	char *s = malloc(big);
	ck_assert_ptr_nonnull(s);
	memset(s, ' ', big);
	s[0] = '1';
	ck_assert_int_eq(parse_n(s, big), -E2BIG);
	ck_assert_int_eq(parse_n(s, big - 1), 0);
	free(s);
	/* the arena's cap is honoured */
	proto_arena small;
	proto_arena_init(&small, 64);
	ctl_json d;
	ck_assert_int_eq(ctl_json_parse(&d, "[1,2,3,4,5,6,7,8]", 17, &small), -ENOMEM);
	proto_arena_free(&small);
}
END_TEST

static char *write_str(const char *s, size_t n, int *rc)
{
	ctl_json_w w;
	char *out;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "a");
	ctl_json_w_strn(&w, s, n);
	ctl_json_w_obj_end(&w);
	*rc = ctl_json_w_finish(&w, &out, NULL);
	return out;
}

/* Jackson 2.14 ObjectMapper.writeValueAsString printed, for a one-entry map: */
START_TEST(test_writer_escapes_like_jackson)
{
	int rc;
	/* "\u0001\u001f\"\\/\u007f\u00e9\u2028\ud83d\ude00" */
	const char in1[] = "\x01\x1f\"\\/\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80";
	char *out = write_str(in1, sizeof(in1) - 1, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out,
			 "{\"a\":\"\\u0001\\u001F\\\"\\\\/\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\"}");
	free(out);
	/* "\n\t\b\f\rx" */
	out = write_str("\n\t\b\f\rx", 6, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, "{\"a\":\"\\n\\t\\b\\f\\rx\"}");
	free(out);
	/* what the writer escapes, the reader reads back */
	ctl_json d;
	const char *back;
	size_t n;
	out = write_str(in1, sizeof(in1) - 1, &rc);
	ck_assert_int_eq(parse(out, &d), 0);
	ck_assert_int_eq(ctl_json_str(&d, 2, &arena, &back, &n), 0);
	ck_assert_uint_eq(n, sizeof(in1) - 1);
	ck_assert_mem_eq(back, in1, n);
	free(out);
}
END_TEST

START_TEST(test_writer_refuses)
{
	int rc;
	ck_assert_ptr_null(write_str("\xc3", 1, &rc));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(write_str("a\0b", 3, &rc));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(write_str("\xed\xa0\x80", 3, &rc)); /* encoded surrogate */
	ck_assert_int_eq(rc, -EINVAL);

	ctl_json_w w;
	char *out;
	ctl_json_w_init(&w);
	ctl_json_w_arr_begin(&w);
	ck_assert_int_eq(ctl_json_w_finish(&w, &out, NULL), -EINVAL); /* unbalanced */
	ck_assert_ptr_null(out);
	ctl_json_w_init(&w);
	for (int i = 0; i <= CTL_JSON_MAX_DEPTH; i++)
		ctl_json_w_arr_begin(&w);
	for (int i = 0; i <= CTL_JSON_MAX_DEPTH; i++)
		ctl_json_w_arr_end(&w);
	ck_assert_int_eq(ctl_json_w_finish(&w, &out, NULL), -E2BIG);
	/* above the size limit */
	char *big = malloc(CTL_JSON_MAX_SIZE);
	memset(big, 'x', CTL_JSON_MAX_SIZE);
	ctl_json_w_init(&w);
	ctl_json_w_strn(&w, big, CTL_JSON_MAX_SIZE);
	ck_assert_int_eq(ctl_json_w_finish(&w, &out, NULL), -E2BIG);
	free(big);
}
END_TEST

START_TEST(test_writer_layout)
{
	ctl_json_w w;
	char *out;
	size_t len;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "n");
	ctl_json_w_int(&w, INT64_MIN);
	ctl_json_w_key(&w, "l");
	ctl_json_w_arr_begin(&w);
	ctl_json_w_int(&w, 1);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_obj_end(&w);
	ctl_json_w_arr_begin(&w);
	ctl_json_w_arr_end(&w);
	ctl_json_w_bool(&w, true);
	ctl_json_w_null(&w);
	ctl_json_w_raw(&w, "7", 1);
	ctl_json_w_arr_end(&w);
	ctl_json_w_key(&w, "s");
	ctl_json_w_str(&w, "v");
	ctl_json_w_obj_end(&w);
	ck_assert_int_eq(ctl_json_w_finish(&w, &out, &len), 0);
	ck_assert_str_eq(out, "{\"n\":-9223372036854775808,\"l\":[1,{},[],true,null,7],\"s\":\"v\"}");
	ck_assert_uint_eq(len, strlen(out));
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_index);
	tcase_add_test(tc, test_scalars_at_root);
	tcase_add_test(tc, test_string_escapes);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_repeated_names);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_writer_escapes_like_jackson);
	tcase_add_test(tc, test_writer_refuses);
	tcase_add_test(tc, test_writer_layout);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
