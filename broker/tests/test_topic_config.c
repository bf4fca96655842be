/*
 * test_topic_config.c - unit tests of topic config validation and of the
 * effective values (overrides over broker defaults).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config.h"
#include "broker/topic_config.h"
#include "protocol/err.h"

static int chk(const char *name, const char *value, char *msg)
{
	return brk_topic_config_check(name, (int32_t)strlen(name), value,
				      value ? (int32_t)strlen(value) : -1, msg, 256);
}

START_TEST(test_check)
{
	char msg[256];
	ck_assert_int_eq(chk("retention.ms", "1000", msg), KERR_NONE);
	ck_assert_int_eq(chk("retention.ms", "-1", msg), KERR_NONE);
	ck_assert_int_eq(chk("retention.ms", "-2", msg), KERR_INVALID_CONFIG);
	ck_assert_ptr_nonnull(strstr(msg, "at least -1"));
	ck_assert_int_eq(chk("retention.ms", "abc", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("segment.bytes", "1048576", msg), KERR_NONE);
	ck_assert_int_eq(chk("segment.bytes", "1000", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("segment.bytes", "4294967296", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("cleanup.policy", "compact,delete", msg), KERR_NONE);
	ck_assert_int_eq(chk("cleanup.policy", "compact, delete", msg), KERR_NONE);
	ck_assert_int_eq(chk("cleanup.policy", "compactx", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("message.timestamp.type", "LogAppendTime", msg), KERR_NONE);
	ck_assert_int_eq(chk("message.timestamp.type", "logappendtime", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("compression.type", "zstd", msg), KERR_NONE);
	ck_assert_int_eq(chk("compression.type", "brotli", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("preallocate", "TRUE", msg), KERR_NONE);
	ck_assert_int_eq(chk("preallocate", "yes", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("min.cleanable.dirty.ratio", "0.5", msg), KERR_NONE);
	ck_assert_int_eq(chk("min.cleanable.dirty.ratio", "1.5", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("min.insync.replicas", "0", msg), KERR_INVALID_CONFIG);
	ck_assert_int_eq(chk("no.such.config", "1", msg), KERR_INVALID_CONFIG);
	ck_assert_ptr_nonnull(strstr(msg, "no.such.config"));
	ck_assert_int_eq(chk("retention.ms", NULL, msg), KERR_NONE);
	/* a value with an embedded NUL is refused, not truncated */
	ck_assert_int_eq(brk_topic_config_check("retention.ms", 12, "10\0" "0", 4, msg, sizeof(msg)),
			 KERR_INVALID_CONFIG);
}
END_TEST

START_TEST(test_build)
{
	brk_config bc;
	brk_config_defaults(&bc);
	brk_topic_config tc;
	brk_topic_config_build(&bc, NULL, 0, &tc);
	ck_assert_int_eq(tc.log.segment_bytes, bc.log_segment_bytes);
	ck_assert_int_eq(tc.max_message_bytes, bc.message_max_bytes);
	ck_assert(!tc.log_append_time);
	ck_assert(tc.delete_policy && !tc.compact);
	ck_assert_int_eq(tc.min_insync_replicas, bc.min_insync_replicas);

	ctl_config_entry ov[] = {
		{ "segment.bytes", "2097152" },
		{ "message.timestamp.type", "LogAppendTime" },
		{ "cleanup.policy", "compact" },
		{ "max.message.bytes", "not-a-number" }, /* ignored: broker default */
		{ "min.insync.replicas", "2" },
		{ "flush.messages", "10" },
	};
	brk_topic_config_build(&bc, ov, 6, &tc);
	ck_assert_int_eq(tc.log.segment_bytes, 2097152);
	ck_assert(tc.log_append_time);
	ck_assert(tc.compact && !tc.delete_policy);
	ck_assert_int_eq(tc.max_message_bytes, bc.message_max_bytes);
	ck_assert_int_eq(tc.min_insync_replicas, 2);
	ck_assert_int_eq(tc.log.flush_messages, 10);

	brk_config_layers l = { &bc, &bc, NULL, 0, NULL, 0 };
	brk_topic_config_entry e;
	bool seen_segment = false, seen_retention = false;
	for (int i = 0; i < brk_topic_config_count(); i++) {
		ck_assert_int_eq(brk_topic_config_entry_at(&l, ov, 6, i, &e), 0);
		if (!strcmp(e.name, "segment.bytes")) {
			ck_assert_str_eq(e.value, "2097152");
			ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DYNAMIC_TOPIC);
			seen_segment = true;
		}
		if (!strcmp(e.name, "retention.ms")) {
			ck_assert_int_eq(strtoll(e.value, NULL, 10), bc.log_retention_ms);
			ck_assert_int_ne(e.source, BRK_CONFIG_SOURCE_DYNAMIC_TOPIC);
			seen_retention = true;
		}
	}
	ck_assert(seen_segment && seen_retention);
	ck_assert_int_eq(brk_topic_config_entry_at(&l, ov, 6, brk_topic_config_count(), &e), -1);
}
END_TEST

static const brk_topic_config_entry *entry_of(const brk_config_layers *l, const ctl_config_entry *ov,
					      int32_t n, const char *name, brk_topic_config_entry *e)
{
	int i = brk_topic_config_find(name, (int32_t)strlen(name));
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(brk_topic_config_entry_at(l, ov, n, i, e), 0);
	ck_assert_str_eq(e->name, name);
	return e;
}

/* Sources and synonyms as Kafka's ConfigHelper.createTopicConfigEntry. */
START_TEST(test_entry_sources)
{
	brk_config st, eff;
	brk_config_defaults(&st);
	char err[256];
	ck_assert_int_eq(brk_config_set(&st, "log.retention.bytes", "5000", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(brk_config_set(&st, "log.retention.hours", "24", NULL, err, sizeof(err)), 0);
	ctl_config_entry dyn_default[] = { { "log.segment.bytes", "2097152" } };
	ctl_config_entry dyn_broker[] = { { "message.max.bytes", "4096" },
					  { "log.segment.bytes", "3145728" } };
	brk_config_layers l = { &eff, &st, dyn_broker, 2, dyn_default, 1 };
	brk_config_rebuild(&l, &eff, NULL, NULL, 0);
	ck_assert_int_eq(eff.message_max_bytes, 4096);
	ck_assert_int_eq(eff.log_segment_bytes, 3145728);
	ck_assert_int_eq(eff.log_retention_ms, 24 * 3600000LL);

	ctl_config_entry ov[] = { { "retention.ms", "1000" }, { "cleanup.policy", "compact" } };
	brk_topic_config_entry e;
	entry_of(&l, ov, 2, "retention.ms", &e);
	ck_assert_str_eq(e.value, "1000");
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DYNAMIC_TOPIC);
	ck_assert_int_eq(e.type, BRK_CONFIG_TYPE_LONG);
	ck_assert_ptr_nonnull(e.doc);
	/* log.retention.hours is there, but Kafka drops the synonyms before
	 * the first one named log.retention.ms: only the override stays. */
	ck_assert_int_eq(e.nsynonyms, 1);

	entry_of(&l, ov, 2, "retention.bytes", &e);
	ck_assert_str_eq(e.value, "5000");
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_STATIC_BROKER);
	ck_assert_int_eq(e.nsynonyms, 2);
	ck_assert_str_eq(e.synonyms[0].name, "log.retention.bytes");
	ck_assert_int_eq(e.synonyms[1].source, BRK_CONFIG_SOURCE_DEFAULT);
	ck_assert_str_eq(e.synonyms[1].value, "-1");

	entry_of(&l, ov, 2, "segment.bytes", &e);
	ck_assert_str_eq(e.value, "3145728");
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DYNAMIC_BROKER);
	ck_assert_int_eq(e.nsynonyms, 3);
	ck_assert_int_eq(e.synonyms[1].source, BRK_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
	ck_assert_str_eq(e.synonyms[1].value, "2097152");
	ck_assert_int_eq(e.synonyms[2].source, BRK_CONFIG_SOURCE_DEFAULT);

	entry_of(&l, ov, 2, "max.message.bytes", &e);
	ck_assert_str_eq(e.value, "4096");
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DYNAMIC_BROKER);

	entry_of(&l, ov, 2, "cleanup.policy", &e);
	ck_assert_int_eq(e.type, BRK_CONFIG_TYPE_LIST);
	ck_assert_int_eq(e.nsynonyms, 2);
	ck_assert_str_eq(e.synonyms[1].name, "log.cleanup.policy");

	entry_of(&l, ov, 2, "min.cleanable.dirty.ratio", &e);
	ck_assert_str_eq(e.value, "0.5");
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DEFAULT);

	/* No broker synonym: a fixed default, no synonyms. */
	entry_of(&l, ov, 2, "leader.replication.throttled.replicas", &e);
	ck_assert_str_eq(e.value, "");
	ck_assert_int_eq(e.nsynonyms, 0);
	ck_assert_int_eq(e.source, BRK_CONFIG_SOURCE_DEFAULT);

	ck_assert_int_eq(brk_topic_config_entry_at(&l, ov, 2, brk_topic_config_count(), &e), -1);
	ck_assert_int_eq(brk_topic_config_find("nope", 4), -1);
	ck_assert_str_eq(brk_topic_config_list_default("cleanup.policy"), "delete");
	ck_assert_str_eq(brk_topic_config_list_default("follower.replication.throttled.replicas"), "");
	ck_assert_ptr_null(brk_topic_config_list_default("retention.ms"));

	/* A broker-level cleanup.policy is what topics without one get. */
	ck_assert_int_eq(brk_config_set(&eff, "log.cleanup.policy", "compact", NULL, err, sizeof(err)), 0);
	brk_topic_config tc;
	brk_topic_config_build(&eff, NULL, 0, &tc);
	ck_assert(tc.compact && !tc.delete_policy);
}
END_TEST

/* The broker key table: sorted (binary search), every key formats. */
/* The rebuild reports the value it cannot set (the check the
 * AlterConfigs handlers make before storing one): a listener keystore
 * location that takes the security keys over their 64 KiB. */
START_TEST(test_rebuild_refuses_oversize)
{
	brk_config st, eff;
	brk_config_defaults(&st);
	static char big[70002];
	big[0] = '/';
	memset(big + 1, 'a', 70000);
	ctl_config_entry dyn_broker[] = { { "listener.name.ssl.ssl.keystore.location", big } };
	brk_config_layers l = { &eff, &st, dyn_broker, 1, NULL, 0 };
	char err[512];
	ck_assert_int_eq(brk_config_rebuild(&l, &eff, NULL, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "listener.name.ssl.ssl.keystore.location") &&
			      strstr(err, "exceed 65536 bytes in all"), "%s", err);
	/* a location of a usual size applies */
	dyn_broker[0].value = "/etc/ks.p12";
	ck_assert_int_eq(brk_config_rebuild(&l, &eff, NULL, err, sizeof(err)), 0);
	ck_assert_str_eq(brk_config_security_get(&eff, "ssl", "ssl.keystore.location"), "/etc/ks.p12");
}
END_TEST

START_TEST(test_broker_keys)
{
	brk_config bc;
	brk_config_defaults(&bc);
	char v[BRK_CONFIG_VALUE_MAX];
	for (int i = 0; i < brk_config_key_count(); i++) {
		const brk_config_key *k = brk_config_key_at(i);
		ck_assert_ptr_eq(brk_config_key_find(k->name), k);
		ck_assert(brk_config_format(&bc, k->name, v, sizeof(v)));
		if (i > 0)
			ck_assert_int_lt(strcmp(brk_config_key_at(i - 1)->name, k->name), 0);
	}
	ck_assert(!brk_config_format(&bc, "no.such.key", v, sizeof(v)));
	brk_config_format(&bc, "listeners", v, sizeof(v));
	ck_assert_str_eq(v, "PLAINTEXT://:9092");
	ck_assert(!brk_config_key_find("listeners")->dynamic);
	ck_assert(brk_config_key_find("log.retention.ms")->dynamic);
	ck_assert(!brk_config_key_find("log.retention.hours")->dynamic);
	char err[256];
	ck_assert(!brk_config_was_given(&bc, "num.partitions"));
	ck_assert_int_eq(brk_config_set(&bc, "num.partitions", "3", NULL, err, sizeof(err)), 0);
	ck_assert(brk_config_was_given(&bc, "num.partitions"));
	ck_assert_int_eq(brk_config_set(&bc, "log.cleanup.policy", "compact, delete", NULL, err,
					sizeof(err)), 0);
	brk_config_format(&bc, "log.cleanup.policy", v, sizeof(v));
	ck_assert_str_eq(v, "compact,delete");
	ck_assert_int_eq(brk_config_set(&bc, "log.cleanup.policy", "none", NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(brk_config_set(&bc, "log.cleaner.min.cleanable.ratio", "2", NULL, err,
					sizeof(err)), -1);

	/* log.flush.interval.ms: its default comes from the scheduler key. */
	brk_config_layers l = { &bc, &bc, NULL, 0, NULL, 0 };
	brk_config_synonym syn[BRK_CONFIG_MAX_SYNONYMS];
	int n = brk_config_synonyms(&l, "log.flush.interval.ms", syn, BRK_CONFIG_MAX_SYNONYMS);
	ck_assert_int_eq(n, 0); /* Kafka: no log.flush.interval.ms entry, so none */
	n = brk_config_synonyms(&l, "log.roll.hours", syn, BRK_CONFIG_MAX_SYNONYMS);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(syn[0].value, "168");
	ck_assert_int_eq(syn[0].source, BRK_CONFIG_SOURCE_DEFAULT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("topic_config");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_build);
	tcase_add_test(tc, test_entry_sources);
	tcase_add_test(tc, test_broker_keys);
	tcase_add_test(tc, test_rebuild_refuses_oversize);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
