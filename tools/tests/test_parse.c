/*
 * test_parse.c - samsa-admin's text forms (parse.h) and its API table
 * (api.h: each entry's key is the generated table's key of that name).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/gen/messages.h"
#include "tools/api.h"
#include "tools/parse.h"

START_TEST(test_int)
{
	long v;
	ck_assert(adm_parse_int("42", 0, 100, &v) && v == 42);
	ck_assert(adm_parse_int("-1", -1, 100, &v) && v == -1);
	ck_assert(!adm_parse_int("101", 0, 100, &v));
	ck_assert(!adm_parse_int("", 0, 100, &v));
	ck_assert(!adm_parse_int("4x", 0, 100, &v));
	ck_assert(!adm_parse_int(" 4", 0, 100, &v));
	ck_assert(!adm_parse_int("+4", 0, 100, &v));
	ck_assert(!adm_parse_int("99999999999999999999999", 0, 100, &v));
}
END_TEST

START_TEST(test_host_port)
{
	char host[64];
	int port;
	const char *list = "127.0.0.1:9092,broker-2:9093,[::1]:9094";
	ck_assert_int_eq(adm_parse_host_port(list, 0, host, sizeof(host), &port), 1);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 9092);
	ck_assert_int_eq(adm_parse_host_port(list, 1, host, sizeof(host), &port), 1);
	ck_assert_str_eq(host, "broker-2");
	ck_assert_int_eq(port, 9093);
	ck_assert_int_eq(adm_parse_host_port(list, 2, host, sizeof(host), &port), 1);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 9094);
	ck_assert_int_eq(adm_parse_host_port(list, 3, host, sizeof(host), &port), 0);
	ck_assert_int_eq(adm_parse_host_port("a:1,", 1, host, sizeof(host), &port), 0);
	ck_assert_int_eq(adm_parse_host_port("localhost", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("h:0", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("h:65536", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port(":9092", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("[::1]9092", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("a,b:1", 0, host, sizeof(host), &port), -1);
	ck_assert_int_eq(adm_parse_host_port("a,b:1", 1, host, sizeof(host), &port), 1);
	ck_assert_int_eq(adm_parse_host_port("averylonghostname:1", 0, host, 8, &port), -1);
}
END_TEST

START_TEST(test_ids)
{
	int32_t ids[4];
	ck_assert_int_eq(adm_parse_ids("3,1,2", ids, 4), 3);
	ck_assert_int_eq(ids[0], 3);
	ck_assert_int_eq(ids[1], 1);
	ck_assert_int_eq(ids[2], 2);
	ck_assert_int_eq(adm_parse_ids("7", ids, 4), 1);
	ck_assert_int_eq(adm_parse_ids("1,1", ids, 4), -1);
	ck_assert_int_eq(adm_parse_ids("1,,2", ids, 4), -1);
	ck_assert_int_eq(adm_parse_ids("1,2,", ids, 4), -1);
	ck_assert_int_eq(adm_parse_ids("", ids, 4), -1);
	ck_assert_int_eq(adm_parse_ids("1,2,3,4,5", ids, 4), -1);
	ck_assert_int_eq(adm_parse_ids("-1", ids, 4), -1);
	char buf[32];
	int32_t some[] = { 1, 22, 3 };
	ck_assert_str_eq(adm_fmt_ids(some, 3, buf, sizeof(buf)), "1,22,3");
	ck_assert_str_eq(adm_fmt_ids(some, 0, buf, sizeof(buf)), "");
}
END_TEST

START_TEST(test_assignment)
{
	int32_t np, nr, *ids;
	ck_assert_int_eq(adm_parse_assignment("1:2:3,2:3:1", &np, &nr, &ids), 0);
	ck_assert_int_eq(np, 2);
	ck_assert_int_eq(nr, 3);
	int32_t want[] = { 1, 2, 3, 2, 3, 1 };
	ck_assert_mem_eq(ids, want, sizeof(want));
	free(ids);
	ck_assert_int_eq(adm_parse_assignment("4", &np, &nr, &ids), 0);
	ck_assert_int_eq(np, 1);
	ck_assert_int_eq(nr, 1);
	ck_assert_int_eq(ids[0], 4);
	free(ids);
	ck_assert_int_eq(adm_parse_assignment("1:2,3", &np, &nr, &ids), -1);   /* unequal */
	ck_assert_int_eq(adm_parse_assignment("1:2,3:4:5", &np, &nr, &ids), -1);
	ck_assert_int_eq(adm_parse_assignment("1:1", &np, &nr, &ids), -1);     /* twice */
	ck_assert_int_eq(adm_parse_assignment("1:2,", &np, &nr, &ids), -1);
	ck_assert_int_eq(adm_parse_assignment("a:b", &np, &nr, &ids), -1);
	ck_assert_int_eq(adm_parse_assignment("", &np, &nr, &ids), -1);
	ck_assert(ids == NULL);
}
END_TEST

START_TEST(test_topic_partition)
{
	proto_str t;
	int32_t p;
	ck_assert_int_eq(adm_parse_topic_partition("logs:3", &t, &p), 0);
	ck_assert(t.len == 4 && memcmp(t.ptr, "logs", 4) == 0);
	ck_assert_int_eq(p, 3);
	ck_assert_int_eq(adm_parse_topic_partition("logs", &t, &p), 0);
	ck_assert(t.len == 4);
	ck_assert_int_eq(p, -1);
	ck_assert_int_eq(adm_parse_topic_partition(":3", &t, &p), -1);
	ck_assert_int_eq(adm_parse_topic_partition("logs:", &t, &p), -1);
	ck_assert_int_eq(adm_parse_topic_partition("logs:x", &t, &p), -1);
	ck_assert_int_eq(adm_parse_topic_partition("", &t, &p), -1);

	int32_t ids[8];
	ck_assert_int_eq(adm_parse_target("a.b-c:12=3,1,2", &t, &p, ids, 8), 3);
	ck_assert(t.len == 5 && memcmp(t.ptr, "a.b-c", 5) == 0);
	ck_assert_int_eq(p, 12);
	ck_assert_int_eq(ids[0], 3);
	ck_assert_int_eq(adm_parse_target("t:0=", &t, &p, ids, 8), -1);
	ck_assert_int_eq(adm_parse_target("t=1,2", &t, &p, ids, 8), -1);
	ck_assert_int_eq(adm_parse_target("t:0=1,1", &t, &p, ids, 8), -1);
	ck_assert_int_eq(adm_parse_target(":0=1", &t, &p, ids, 8), -1);
}
END_TEST

START_TEST(test_kv)
{
	proto_str k, v;
	ck_assert_int_eq(adm_parse_kv("min.insync.replicas=2", &k, &v), 0);
	ck_assert(k.len == 19 && memcmp(k.ptr, "min.insync.replicas", 19) == 0);
	ck_assert(v.len == 1 && v.ptr[0] == '2');
	ck_assert_int_eq(adm_parse_kv("a==b", &k, &v), 0);
	ck_assert(k.len == 1 && v.len == 2);
	ck_assert_int_eq(adm_parse_kv("a=", &k, &v), 0);
	ck_assert_int_eq(v.len, 0);
	ck_assert_int_eq(adm_parse_kv("=b", &k, &v), -1);
	ck_assert_int_eq(adm_parse_kv("ab", &k, &v), -1);
}
END_TEST

START_TEST(test_uuid)
{
	/* Kafka's Uuid.toString: URL-safe base64 without padding */
	proto_uuid u;
	memset(&u, 0, sizeof(u));
	char buf[32];
	ck_assert(adm_uuid_zero(&u));
	ck_assert_str_eq(adm_fmt_uuid(&u, buf, sizeof(buf)), "AAAAAAAAAAAAAAAAAAAAAA");
	memset(&u, 0xff, sizeof(u));
	ck_assert(!adm_uuid_zero(&u));
	ck_assert_str_eq(adm_fmt_uuid(&u, buf, sizeof(buf)), "_____________________w");
	for (int i = 0; i < 16; i++)
		u.b[i] = (uint8_t)i;
	ck_assert_str_eq(adm_fmt_uuid(&u, buf, sizeof(buf)), "AAECAwQFBgcICQoLDA0ODw");
}
END_TEST

START_TEST(test_api_table)
{
	const adm_api *apis[] = {
		&adm_api_metadata, &adm_api_create_topics, &adm_api_delete_topics,
		&adm_api_describe_configs, &adm_api_describe_log_dirs, &adm_api_create_partitions,
		&adm_api_elect_leaders, &adm_api_incremental_alter_configs,
		&adm_api_alter_partition_reassignments, &adm_api_list_partition_reassignments,
		&adm_api_describe_cluster,
	};
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		const proto_api_desc *d = proto_api_desc_lookup(apis[i]->key);
		ck_assert_msg(d != NULL, "key %d", apis[i]->key);
		ck_assert_str_eq(d->name, apis[i]->name);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin_parse");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_int);
	tcase_add_test(tc, test_host_port);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_assignment);
	tcase_add_test(tc, test_topic_partition);
	tcase_add_test(tc, test_kv);
	tcase_add_test(tc, test_uuid);
	tcase_add_test(tc, test_api_table);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
