/*
 * test_quota.c - client quotas without a broker: Kafka's Rate over a
 * SampledStat (window size, expiry, the throttle time of QuotaUtils), the
 * KIP-55 resolution of (user, client id) to a bound and a shared sensor,
 * throttling of a greedy client to its bound over whole periods, the
 * registry of client configs (client_config.h), and the quota keys'
 * checks and value formats (keys.h).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client_config.h"
#include "broker/java_double.h"
#include "broker/quota/keys.h"
#include "broker/quota/quota.h"

#define N 11
#define W 1000

START_TEST(test_rate_window)
{
	brk_quota_rate *r = brk_quota_rate_new(N, 0);
	ck_assert_ptr_nonnull(r);
	/* fewer than N - 1 whole windows: N - 1 of them plus what there is of
	 * the current one (Rate.windowSize) */
	ck_assert_int_eq(brk_quota_rate_window(r, N, W, 0), 10000);
	ck_assert_int_eq(brk_quota_rate_window(r, N, W, 3500), 10500);
	brk_quota_rate_record(r, N, W, 5000, 0);
	ck_assert(brk_quota_rate_measure(r, N, W, 0) == 500.0);
	/* samples start when recorded into: 10.5 s of them is a 10.5 s window */
	for (int t = 1000; t <= 10000; t += 1000)
		brk_quota_rate_record(r, N, W, 5000, t);
	ck_assert_int_eq(brk_quota_rate_window(r, N, W, 10500), 10500);
	ck_assert(brk_quota_rate_measure(r, N, W, 10500) == 55000.0 / 10.5);
	/* the first sample expires 11 s after it started */
	ck_assert(brk_quota_rate_measure(r, N, W, 11000) == 50000.0 / 10.0);
	/* all expired */
	ck_assert(brk_quota_rate_measure(r, N, W, 30000) == 0.0);
	free(r);
}
END_TEST

START_TEST(test_throttle_time)
{
	/* QuotaUtils.throttleTime: (rate - bound) / bound * window, rounded */
	ck_assert_int_eq(brk_quota_throttle_ms(150, 100, 10000), 5000);
	ck_assert_int_eq(brk_quota_throttle_ms(100.01, 100, 10000), 1);
	ck_assert_int_eq(brk_quota_throttle_ms(100, 100, 10000), 0);
	ck_assert_int_eq(brk_quota_throttle_ms(50, 100, 10000), 0);
	ck_assert_int_eq(brk_quota_throttle_ms(1e30, 1, 10000), 2147483647);
}
END_TEST

/* A client config of one key (the registry's value type, made by hand). */
static void set_entity(brk_client_configs *reg, const char *entity, const char *key,
		       const char *value)
{
	ctl_config_entry *e = calloc(1, sizeof(*e));
	e->name = strdup(key);
	e->value = strdup(value);
	ck_assert_int_eq(brk_client_configs_apply(reg, strdup(entity), e, 1, 0), 0);
}

static void drop_entity(brk_client_configs *reg, const char *entity)
{
	ck_assert_int_eq(brk_client_configs_apply(reg, strdup(entity), NULL, 0, -1), 0);
}

static double bound(brk_quotas *q, const char *principal, const char *client)
{
	proto_str c = client ? proto_cstr(client) : proto_str_of(NULL, -1);
	return brk_quota_bound(q, BRK_QUOTA_PRODUCE, principal, c);
}

START_TEST(test_resolution)
{
	brk_client_configs reg;
	brk_client_configs_init(&reg);
	brk_quotas q;
	ck_assert_int_eq(brk_quotas_init(&q, N, 1, &reg), 0);
	ck_assert(!brk_quotas_enabled(&q, BRK_QUOTA_PRODUCE));
	ck_assert(bound(&q, "User:alice", "app") < 0);
	/* keys other than quotas (SCRAM credentials) turn nothing on */
	set_entity(&reg, "users/alice", "SCRAM-SHA-256", "salt=x");
	ck_assert(!brk_quotas_enabled(&q, BRK_QUOTA_PRODUCE));
	/* KIP-55's order, most specific first, each step added in reverse */
	set_entity(&reg, "clients/<default>", "producer_byte_rate", "8");
	ck_assert(brk_quotas_enabled(&q, BRK_QUOTA_PRODUCE));
	ck_assert(!brk_quotas_enabled(&q, BRK_QUOTA_FETCH));
	ck_assert(bound(&q, "User:alice", "app") == 8);
	set_entity(&reg, "clients/app", "producer_byte_rate", "7");
	ck_assert(bound(&q, "User:alice", "app") == 7);
	ck_assert(bound(&q, "User:alice", "other") == 8);
	set_entity(&reg, "users/<default>", "producer_byte_rate", "6");
	ck_assert(bound(&q, "User:alice", "app") == 6);
	set_entity(&reg, "users/<default>/clients/<default>", "producer_byte_rate", "5");
	ck_assert(bound(&q, "User:alice", "app") == 5);
	set_entity(&reg, "users/<default>/clients/app", "producer_byte_rate", "4");
	ck_assert(bound(&q, "User:alice", "app") == 4);
	ck_assert(bound(&q, "User:alice", "other") == 5);
	/* alice's own map already holds her credential: one more key */
	ctl_config_entry *e = calloc(2, sizeof(*e));
	e[0] = (ctl_config_entry){ strdup("SCRAM-SHA-256"), strdup("salt=x") };
	e[1] = (ctl_config_entry){ strdup("producer_byte_rate"), strdup("3") };
	ck_assert_int_eq(brk_client_configs_apply(&reg, strdup("users/alice"), e, 2, 1), 0);
	ck_assert(bound(&q, "User:alice", "app") == 3);
	ck_assert(bound(&q, "User:bob", "app") == 4);
	set_entity(&reg, "users/alice/clients/<default>", "producer_byte_rate", "2");
	ck_assert(bound(&q, "User:alice", "app") == 2);
	set_entity(&reg, "users/alice/clients/app", "producer_byte_rate", "1");
	ck_assert(bound(&q, "User:alice", "app") == 1);
	ck_assert(bound(&q, "User:alice", "x") == 2);
	/* sanitized names: "User:a b" is users/a%20b */
	set_entity(&reg, "users/a%20b", "producer_byte_rate", "9");
	ck_assert(bound(&q, "User:a b", NULL) == 9);
	/* a null client id is the empty one: no clients/<name> entity */
	ck_assert(bound(&q, "User:bob", NULL) == 5);
	/* removal goes back along the order */
	drop_entity(&reg, "users/alice/clients/app");
	ck_assert(bound(&q, "User:alice", "app") == 2);
	drop_entity(&reg, "users/alice/clients/<default>");
	drop_entity(&reg, "users/alice");
	drop_entity(&reg, "users/<default>/clients/app");
	drop_entity(&reg, "users/<default>/clients/<default>");
	drop_entity(&reg, "users/<default>");
	ck_assert(bound(&q, "User:alice", "app") == 7);
	drop_entity(&reg, "clients/app");
	drop_entity(&reg, "clients/<default>");
	drop_entity(&reg, "users/a%20b");
	ck_assert(!brk_quotas_enabled(&q, BRK_QUOTA_PRODUCE));
	/* the fetch cap: bound * (num - 1) * window seconds */
	set_entity(&reg, "users/<default>", "consumer_byte_rate", "1000");
	ck_assert_int_eq(brk_quota_max_window_value(&q, BRK_QUOTA_FETCH, "User:x",
						    proto_cstr("c")), 10000);
	ck_assert_int_eq(brk_quota_max_window_value(&q, BRK_QUOTA_PRODUCE, "User:x",
						    proto_cstr("c")), 2147483647);
	brk_quotas_free(&q);
	brk_client_configs_free(&reg);
}
END_TEST

START_TEST(test_shared_sensor_and_greedy_client)
{
	brk_client_configs reg;
	brk_client_configs_init(&reg);
	brk_quotas q;
	/* a registry filled before the manager follows it */
	set_entity(&reg, "users/<default>", "producer_byte_rate", "400000");
	ck_assert_int_eq(brk_quotas_init(&q, N, 1, &reg), 0);
	/* a user quota: every client id of the user shares one rate */
	ck_assert_int_eq(brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:u", proto_cstr("a"), 3e6, 0),
			 0);
	ck_assert_int_eq(brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:u", proto_cstr("b"), 1e6, 0),
			 0);
	int32_t t = brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:u", proto_cstr("c"), 4e5, 0);
	ck_assert_int_eq(t, 1000); /* 440000 B/s over 400000: 10 % of 10 s */
	/* another user has its own */
	ck_assert_int_eq(brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:v", proto_cstr("a"), 100, 0), 0);
	/* unrecord takes it back */
	brk_quota_unrecord(&q, BRK_QUOTA_PRODUCE, "User:u", proto_cstr("c"), 4e5, 0);
	ck_assert_int_eq(brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:u", proto_cstr("c"), 0, 0), 0);
	/* a greedy client, 16 KiB per request, sending whenever not muted:
	 * over whole periods of 11 s it gets its bound within 5 % */
	double sent = 0;
	int64_t now = 100000;
	const int64_t end = now + 44000;
	while (now < end) {
		sent += 16384;
		int32_t ms = brk_quota_record(&q, BRK_QUOTA_PRODUCE, "User:greedy", proto_cstr("g"),
					      16384, now);
		now += ms + 1;
	}
	double rate = sent / 44.0;
	ck_assert_msg(rate > 380000 && rate < 420000, "greedy client: %.0f B/s", rate);
	/* the request quota's throttle is at most one window (1 s here) */
	set_entity(&reg, "users/<default>", "request_percentage", "10");
	ck_assert_int_eq(brk_quota_record(&q, BRK_QUOTA_REQUEST, "User:r", proto_cstr("a"), 1000,
					  200000),
			 1000);
	brk_quotas_free(&q);
	brk_client_configs_free(&reg);
}
END_TEST

static int listened;
static void on_change(void *arg, const char *entity, const brk_client_config *cc)
{
	(void)arg;
	(void)entity;
	listened += cc ? 1 : 100;
}

START_TEST(test_client_config_registry)
{
	brk_client_configs reg;
	brk_client_configs_init(&reg);
	ck_assert_int_eq(brk_client_configs_listen(&reg, on_change, NULL), 0);
	set_entity(&reg, "users/alice", "k", "v");
	const brk_client_config *cc = brk_client_config_get(&reg, "users/alice");
	ck_assert_ptr_nonnull(cc);
	ck_assert_str_eq(brk_client_config_value(cc, "k"), "v");
	ck_assert_ptr_null(brk_client_config_value(cc, "x"));
	ck_assert_ptr_null(brk_client_config_value(NULL, "k"));
	set_entity(&reg, "users/alice", "k", "w");
	ck_assert_int_eq(brk_client_configs_count(&reg), 1);
	ck_assert_str_eq(brk_client_config_value(brk_client_config_get(&reg, "users/alice"), "k"),
			 "w");
	drop_entity(&reg, "users/alice");
	drop_entity(&reg, "users/nobody"); /* not there: no change, not told */
	ck_assert_ptr_null(brk_client_config_get(&reg, "users/alice"));
	ck_assert_int_eq(listened, 102);
	brk_client_configs_free(&reg);
}
END_TEST

START_TEST(test_keys)
{
	char msg[128], out[64];
	const brk_quota_key *p = brk_quota_key_find("producer_byte_rate", 18, false);
	const brk_quota_key *r = brk_quota_key_find("request_percentage", 18, false);
	const brk_quota_key *ip = brk_quota_key_find("connection_creation_rate", 24, true);
	ck_assert(p && r && ip);
	ck_assert_ptr_null(brk_quota_key_find("connection_creation_rate", 24, false));
	ck_assert_ptr_null(brk_quota_key_find("producer_byte_rate", 18, true));
	ck_assert(!brk_quota_key_known("SCRAM-SHA-256", false));
	ck_assert_ptr_null(brk_quota_check_value(p, 1024, msg, sizeof(msg)));
	ck_assert_str_eq(brk_quota_check_value(p, 0, msg, sizeof(msg)),
			 "Quota producer_byte_rate must be greater than 0");
	ck_assert_str_eq(brk_quota_check_value(p, 1.5, msg, sizeof(msg)),
			 "producer_byte_rate cannot be a fractional value.");
	ck_assert_str_eq(brk_quota_check_value(p, 1e19, msg, sizeof(msg)),
			 "Proposed value for producer_byte_rate is too large for a LONG.");
	ck_assert_str_eq(brk_quota_check_value(ip, 3e9, msg, sizeof(msg)),
			 "Proposed value for connection_creation_rate is too large for an INT.");
	ck_assert_ptr_null(brk_quota_check_value(r, 12.5, msg, sizeof(msg)));
	/* as Kafka's AdminZkClient writes them: longs whole, doubles as Java */
	ck_assert_int_gt(brk_quota_format_value(p, 1024, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1024");
	static const struct {
		double v;
		const char *s;
	} d[] = { { 50, "50.0" }, { 12.5, "12.5" }, { 0.1, "0.1" }, { 1e7, "1.0E7" },
		  { 123456789.5, "1.234567895E8" }, { 0.0005, "5.0E-4" }, { 1234567.25, "1234567.25" } };
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		ck_assert_int_gt(brk_quota_format_value(r, d[i].v, out, sizeof(out)), 0);
		ck_assert_str_eq(out, d[i].s);
	}
	double v;
	ck_assert_int_eq(brk_quota_parse_value("1.0E7", &v), 0);
	ck_assert(v == 1e7);
	ck_assert_int_eq(brk_quota_parse_value("5d", &v), 0);
	ck_assert_int_eq(brk_quota_parse_value("x", &v), -1);
	ck_assert_int_eq(brk_quota_parse_value("", &v), -1);
	ck_assert_int_eq(brk_quota_parse_value("nan", &v), -1);
}
END_TEST

/* Java's Double.toString, as kafka-configs.sh prints quotas (the expected
 * strings are what OpenJDK 17's Double.toString printed for these). */
START_TEST(test_java_double)
{
	static const struct {
		double v;
		const char *java;
	} cases[] = {
		{ 1024, "1024.0" },
		{ 1048576, "1048576.0" },
		{ 12.5, "12.5" },
		{ 50, "50.0" },
		{ 0.00001, "1.0E-5" },
		{ 0.0001, "1.0E-4" },
		{ 0.001, "0.001" },
		{ 0.0123, "0.0123" },
		{ 0.1, "0.1" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 100.25, "100.25" },
		{ 2e-3, "0.002" },
		{ 0.3, "0.3" },
		{ 1.1, "1.1" },
		{ 123456.789, "123456.789" },
		{ 9999999, "9999999.0" },
		{ 10000000, "1.0E7" },
		{ 12345678, "1.2345678E7" },
		{ 9223372036854775807.0, "9.223372036854776E18" },
		{ 1.7976931348623157e308, "1.7976931348623157E308" },
		{ 4.9e-324, "4.9E-324" },
		{ -2.5, "-2.5" },
		{ -1e9, "-1.0E9" },
		{ 0.0, "0.0" },
		{ -0.0, "-0.0" },
		{ __builtin_inf(), "Infinity" },
		{ -__builtin_inf(), "-Infinity" },
		{ __builtin_nan(""), "NaN" },
	};
	char buf[BRK_JAVA_DOUBLE_MAX];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(brk_java_double(cases[i].v, buf, sizeof(buf)),
				 (int)strlen(cases[i].java));
		ck_assert_str_eq(buf, cases[i].java);
	}
	/* the longest forms fit */
	brk_java_double(-2.2250738585072014e-308, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-2.2250738585072014E-308");
	brk_java_double(-0.0012345678901234567, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-0.0012345678901234567");
	/* a short buffer truncates */
	char small[4];
	ck_assert_int_eq(brk_java_double(1024, small, sizeof(small)), 6);
	ck_assert_str_eq(small, "102");
}
END_TEST

/* Long.MAX_VALUE, the default of the LONG keys, reaches us as the double
 * 2^63: accepted and stored as Kafka's (value + 1e-6).toLong stores it,
 * saturated to 9223372036854775807. INT keys: INT32_MAX is a double
 * exactly, anything above it is refused, and the formatting saturates too. */
START_TEST(test_long_max)
{
	char msg[128], out[64];
	const brk_quota_key *p = brk_quota_key_find("producer_byte_rate", 18, false);
	const brk_quota_key *c = brk_quota_key_find("consumer_byte_rate", 18, false);
	const brk_quota_key *ip = brk_quota_key_find("connection_creation_rate", 24, true);
	ck_assert(p && c && ip);
	const double two63 = 9223372036854775808.0;
	ck_assert(two63 == (double)INT64_MAX);
	ck_assert_ptr_null(brk_quota_check_value(p, two63, msg, sizeof(msg)));
	ck_assert_int_eq(brk_quota_format_value(p, two63, out, sizeof(out)), 19);
	ck_assert_str_eq(out, "9223372036854775807");
	ck_assert_ptr_null(brk_quota_check_value(c, two63, msg, sizeof(msg)));
	ck_assert_int_gt(brk_quota_format_value(c, two63, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "9223372036854775807");
	/* the stored text reads back as the same double, which Describe sends */
	double v;
	ck_assert_int_eq(brk_quota_parse_value(out, &v), 0);
	ck_assert(v == two63);
	/* the next double up is refused */
	ck_assert_str_eq(brk_quota_check_value(p, nextafter(two63, INFINITY), msg, sizeof(msg)),
			 "Proposed value for producer_byte_rate is too large for a LONG.");
	/* the largest double below 2^63 is whole and stored exactly */
	ck_assert_int_gt(brk_quota_format_value(p, nextafter(two63, 0), out, sizeof(out)), 0);
	ck_assert_str_eq(out, "9223372036854774784");

	ck_assert_ptr_null(brk_quota_check_value(ip, 2147483647.0, msg, sizeof(msg)));
	ck_assert_int_gt(brk_quota_format_value(ip, 2147483647.0, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "2147483647");
	ck_assert_str_eq(brk_quota_check_value(ip, 2147483648.0, msg, sizeof(msg)),
			 "Proposed value for connection_creation_rate is too large for an INT.");
	ck_assert_str_eq(brk_quota_check_value(ip, nextafter(2147483647.0, INFINITY), msg,
					       sizeof(msg)),
			 "Proposed value for connection_creation_rate is too large for an INT.");
	ck_assert_int_gt(brk_quota_format_value(ip, 2147483648.0, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "2147483647");
	ck_assert_int_gt(brk_quota_format_value(p, 1e300, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "9223372036854775807");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quota");
	TCase *tc = tcase_create("quota");
	tcase_add_test(tc, test_rate_window);
	tcase_add_test(tc, test_throttle_time);
	tcase_add_test(tc, test_resolution);
	tcase_add_test(tc, test_shared_sensor_and_greedy_client);
	tcase_add_test(tc, test_client_config_registry);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_java_double);
	tcase_add_test(tc, test_long_max);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
