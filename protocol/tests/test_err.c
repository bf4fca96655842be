/*
 * test_err.c - unit tests for protocol/err.c: codes and names agree with
 * Kafka's Errors.java, the list is dense, retriable flags match Kafka's.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"

START_TEST(test_codes)
{
	ck_assert_int_eq(KERR_UNKNOWN_SERVER_ERROR, -1);
	ck_assert_int_eq(KERR_NONE, 0);
	ck_assert_int_eq(KERR_OFFSET_OUT_OF_RANGE, 1);
	ck_assert_int_eq(KERR_CORRUPT_MESSAGE, 2);
	ck_assert_int_eq(KERR_UNKNOWN_TOPIC_OR_PARTITION, 3);
	ck_assert_int_eq(KERR_NOT_LEADER_OR_FOLLOWER, 6);
	ck_assert_int_eq(KERR_MESSAGE_TOO_LARGE, 10);
	ck_assert_int_eq(KERR_INVALID_TIMESTAMP, 32);
	ck_assert_int_eq(KERR_UNSUPPORTED_VERSION, 35);
	ck_assert_int_eq(KERR_TOPIC_ALREADY_EXISTS, 36);
	ck_assert_int_eq(KERR_INVALID_REQUEST, 42);
	ck_assert_int_eq(KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, 43);
	ck_assert_int_eq(KERR_OUT_OF_ORDER_SEQUENCE_NUMBER, 45);
	ck_assert_int_eq(KERR_UNSUPPORTED_COMPRESSION_TYPE, 76);
	ck_assert_int_eq(KERR_INVALID_RECORD, 87);
	ck_assert_int_eq(KERR_UNKNOWN_TOPIC_ID, 100);
	ck_assert_int_eq(KERR_TRANSACTION_ABORTABLE, 120);
	ck_assert_int_eq(KERR_SHARE_SESSION_LIMIT_REACHED, 133);
	ck_assert_int_eq(KERR_MAX, 133);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(proto_err_name(KERR_NONE), "NONE");
	ck_assert_str_eq(proto_err_name(-1), "UNKNOWN_SERVER_ERROR");
	ck_assert_str_eq(proto_err_name(2), "CORRUPT_MESSAGE");
	ck_assert_str_eq(proto_err_name(87), "INVALID_RECORD");
	ck_assert_str_eq(proto_err_name(133), "SHARE_SESSION_LIMIT_REACHED");
	ck_assert_str_eq(proto_err_name(134), "UNKNOWN");
	ck_assert_str_eq(proto_err_name(-2), "UNKNOWN");
	ck_assert_str_eq(proto_err_name(30000), "UNKNOWN");
	/* Dense: every code from -1 to KERR_MAX has a name. */
	for (int c = -1; c <= KERR_MAX; c++)
		ck_assert_str_ne(proto_err_name(c), "UNKNOWN");
}
END_TEST

START_TEST(test_retriable)
{
	ck_assert(proto_err_retriable(KERR_CORRUPT_MESSAGE));
	ck_assert(proto_err_retriable(KERR_UNKNOWN_TOPIC_OR_PARTITION));
	ck_assert(proto_err_retriable(KERR_NOT_LEADER_OR_FOLLOWER));
	ck_assert(proto_err_retriable(KERR_REQUEST_TIMED_OUT));
	ck_assert(proto_err_retriable(KERR_NOT_ENOUGH_REPLICAS));
	ck_assert(proto_err_retriable(KERR_NOT_COORDINATOR));
	ck_assert(proto_err_retriable(KERR_UNKNOWN_TOPIC_ID));
	ck_assert(!proto_err_retriable(KERR_NONE));
	ck_assert(!proto_err_retriable(KERR_UNKNOWN_SERVER_ERROR));
	ck_assert(!proto_err_retriable(KERR_MESSAGE_TOO_LARGE));
	ck_assert(!proto_err_retriable(KERR_INVALID_RECORD));
	ck_assert(!proto_err_retriable(KERR_INVALID_TIMESTAMP));
	ck_assert(!proto_err_retriable(KERR_PRODUCER_FENCED));
	ck_assert(!proto_err_retriable(KERR_TOPIC_ALREADY_EXISTS));
	ck_assert(!proto_err_retriable(5000));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_codes);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_retriable);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
