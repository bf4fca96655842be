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

	char value[64];
	bool is_override;
	bool seen_segment = false, seen_retention = false;
	for (int i = 0; i < brk_topic_config_count(); i++) {
		const char *name = brk_topic_config_describe(&bc, ov, 6, i, value, sizeof(value),
							     &is_override);
		ck_assert_ptr_nonnull(name);
		if (!strcmp(name, "segment.bytes")) {
			ck_assert_str_eq(value, "2097152");
			ck_assert(is_override);
			seen_segment = true;
		}
		if (!strcmp(name, "retention.ms")) {
			ck_assert_int_eq(strtoll(value, NULL, 10), bc.log_retention_ms);
			ck_assert(!is_override);
			seen_retention = true;
		}
	}
	ck_assert(seen_segment && seen_retention);
	ck_assert_ptr_null(brk_topic_config_describe(&bc, ov, 6, brk_topic_config_count(), value,
						     sizeof(value), &is_override));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("topic_config");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_build);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
