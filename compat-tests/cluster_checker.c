/*
 * cluster_checker.c - the history checker (checker.h) on synthetic
 * histories: a valid one passes with the right counts, and each violation
 * (L lost and misplaced, D divergent, M non-monotonic, F failed-but-read,
 * duplicates with idempotence, unknown values) is found and explained,
 * alone, so a checker that ignored one of them would fail here. Also the
 * longest time without a successful produce, and a history of 200,000
 * values (the hash tables grow). No broker, no ZooKeeper.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "compat-tests/checker.h"

/* A valid history of two producers on two partitions: p0 values 0..9 at
 * offsets 0..9 of partition 0, p1 values at offsets 0..4 of partition 1,
 * each read once. */
static chk *valid_history(void)
{
	chk *h = chk_new();
	ck_assert_ptr_nonnull(h);
	char v[32];
	for (int i = 0; i < 10; i++) {
		snprintf(v, sizeof(v), "0-%d", i);
		ck_assert_int_eq(chk_write(h, 0, 0, v, CHK_ACKED, i, 1000 + 10 * i), 0);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(v, sizeof(v), "1-%d", i);
		ck_assert_int_eq(chk_write(h, 1, 1, v, CHK_ACKED, i, 1005 + 10 * i), 0);
	}
	for (int i = 0; i < 10; i++) {
		snprintf(v, sizeof(v), "0-%d", i);
		ck_assert_int_eq(chk_read(h, 0, i, v), 0);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(v, sizeof(v), "1-%d", i);
		ck_assert_int_eq(chk_read(h, 1, i, v), 0);
	}
	return h;
}

static void expect_only(const chk_report *r, const char *field, long got, const char *example)
{
	if (!r->ok && got == 0)
		chk_report_print(r, stderr);
	ck_assert_msg(!r->ok, "%s: the checker called it valid", field);
	ck_assert_msg(got >= 1, "%s not counted", field);
	long others = r->lost + r->misplaced + r->divergent + r->nonmonotonic + r->failed_read +
		      r->unknown + r->duplicated - got;
	ck_assert_msg(others == 0, "%s: other violations counted too", field);
	ck_assert_msg(r->nexamples >= 1 && strstr(r->examples[0], example),
		      "%s: first example \"%s\" does not name %s", field,
		      r->nexamples ? r->examples[0] : "", example);
}

START_TEST(test_valid)
{
	chk *h = valid_history();
	/* an indeterminate value that made it, one that did not, a failed one
	 * that did not, and a poll that saw offset 3 again */
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "0-11", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "0-12", CHK_FAILED, -1, 0), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-10"), 0);
	ck_assert_int_eq(chk_read(h, 0, 3, "0-3"), 0);
	chk_report r;
	chk_options opt = {.idempotent = true};
	chk_check(h, &opt, &r);
	chk_report_print(&r, stderr);
	ck_assert(r.ok);
	ck_assert_int_eq(r.writes, 18);
	ck_assert_int_eq(r.acked, 15);
	ck_assert_int_eq(r.indeterminate, 2);
	ck_assert_int_eq(r.failed, 1);
	ck_assert_int_eq(r.indeterminate_read, 1);
	ck_assert_int_eq(r.reads, 17);
	ck_assert_int_eq(r.values_read, 16);
	ck_assert_int_eq(r.lost + r.misplaced + r.divergent + r.nonmonotonic + r.failed_read +
				 r.duplicated + r.unknown,
			 0);
	ck_assert_int_eq(r.nexamples, 0);
	chk_free(h);
}
END_TEST

START_TEST(test_lost)
{
	chk *h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, 10, 2000), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	expect_only(&r, "lost", r.lost, "0-10");
	ck_assert_int_eq(r.lost, 1);
	/* allowed loss (acks=1): counted, not a violation */
	chk_options loss = {.allow_loss = true};
	chk_check(h, &loss, &r);
	ck_assert(r.ok);
	ck_assert_int_eq(r.lost, 1);
	chk_free(h);
}
END_TEST

START_TEST(test_misplaced)
{
	chk *h = valid_history();
	/* acknowledged at 0/10, read at 0/11 */
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, 10, 2000), 0);
	ck_assert_int_eq(chk_read(h, 0, 11, "0-10"), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	expect_only(&r, "misplaced", r.misplaced, "0-10");
	/* an indeterminate value of partition 1 read in partition 0 */
	chk *h2 = valid_history();
	ck_assert_int_eq(chk_write(h2, 1, 1, "1-5", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_read(h2, 0, 10, "1-5"), 0);
	chk_check(h2, NULL, &r);
	expect_only(&r, "misplaced", r.misplaced, "1-5");
	chk_free(h);
	chk_free(h2);
}
END_TEST

START_TEST(test_divergent_ack_vs_read)
{
	chk *h = valid_history();
	/* 0-10 acknowledged at 0/10, but 0/10 reads as the indeterminate 0-11
	 * and 0-10 is never read: D (and L) */
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, 10, 2000), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "0-11", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-11"), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	ck_assert(!r.ok);
	ck_assert_int_eq(r.divergent, 1);
	ck_assert_int_eq(r.lost, 1);
	chk_free(h);
}
END_TEST

START_TEST(test_divergent_reads)
{
	chk *h = valid_history();
	/* two polls saw different indeterminate values at 0/10 */
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "0-11", CHK_INDETERMINATE, -1, 0), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-10"), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-11"), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	expect_only(&r, "divergent", r.divergent, "0/10");
	/* the same offset in another partition is another slot */
	chk *h2 = valid_history();
	ck_assert_int_eq(chk_read(h2, 1, 0, "1-0"), 0);
	chk_check(h2, NULL, &r);
	ck_assert(r.ok);
	chk_free(h);
	chk_free(h2);
}
END_TEST

START_TEST(test_nonmonotonic)
{
	chk *h = valid_history();
	/* producer 0 gets offset 9 on partition 0 again (after 9), then 20 */
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, 9, 2000), 0);
	/* an indeterminate outcome has no offset: no M check */
	ck_assert_int_eq(chk_write(h, 1, 0, "1-5", CHK_INDETERMINATE, -1, 0), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	ck_assert(!r.ok);
	ck_assert_int_eq(r.nonmonotonic, 1);
	ck_assert_msg(strstr(r.examples[0], "M:") && strstr(r.examples[0], "0-10"), "%s",
		      r.examples[0]);
	chk_free(h);

	/* alone: producer 2 acknowledged 5 then 4 on partition 3, both read */
	h = chk_new();
	ck_assert_int_eq(chk_write(h, 2, 3, "a", CHK_ACKED, 5, 1), 0);
	ck_assert_int_eq(chk_write(h, 2, 3, "b", CHK_ACKED, 4, 2), 0);
	ck_assert_int_eq(chk_write(h, 3, 3, "c", CHK_ACKED, 6, 3), 0);
	ck_assert_int_eq(chk_write(h, 2, 4, "d", CHK_ACKED, 1, 4), 0);
	chk_read(h, 3, 4, "b");
	chk_read(h, 3, 5, "a");
	chk_read(h, 3, 6, "c");
	chk_read(h, 4, 1, "d");
	chk_check(h, NULL, &r);
	expect_only(&r, "nonmonotonic", r.nonmonotonic, "producer 2, partition 3");
	ck_assert_int_eq(r.nonmonotonic, 1);
	chk_free(h);
}
END_TEST

START_TEST(test_failed_read)
{
	chk *h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_FAILED, -1, 0), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-10"), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	expect_only(&r, "failed_read", r.failed_read, "0-10");
	chk_free(h);
}
END_TEST

START_TEST(test_duplicate)
{
	chk *h = valid_history();
	/* 0-9 read again at 0/10 (a retried batch appended twice) */
	ck_assert_int_eq(chk_read(h, 0, 10, "0-9"), 0);
	chk_report r;
	chk_options idem = {.idempotent = true};
	chk_check(h, &idem, &r);
	expect_only(&r, "duplicated", r.duplicated, "0-9");
	/* without idempotence a duplicate is counted only */
	chk_check(h, NULL, &r);
	ck_assert(r.ok);
	ck_assert_int_eq(r.duplicated, 1);
	chk_free(h);
}
END_TEST

START_TEST(test_unknown)
{
	chk *h = valid_history();
	ck_assert_int_eq(chk_read(h, 1, 5, "garbage"), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	expect_only(&r, "unknown", r.unknown, "garbage");
	chk_free(h);
}
END_TEST

START_TEST(test_repeated_write)
{
	chk *h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-3", CHK_ACKED, 3, 0), -1);
	chk_free(h);
}
END_TEST

START_TEST(test_ack_without_offset)
{
	/* librdkafka's implicit acknowledgement: offset -1001 (unknown) */
	chk *h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, -1001, 2000), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "0-11", CHK_ACKED, 11, 2001), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-10"), 0);
	ck_assert_int_eq(chk_read(h, 0, 11, "0-11"), 0);
	chk_report r;
	chk_options idem = {.idempotent = true};
	chk_check(h, &idem, &r);
	ck_assert(r.ok);
	ck_assert_int_eq(r.acked_no_offset, 1);
	chk_free(h);
	/* never read: lost */
	h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, -1001, 2000), 0);
	chk_check(h, NULL, &r);
	expect_only(&r, "lost", r.lost, "0-10");
	chk_free(h);
	/* read in another partition: misplaced */
	h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, -1001, 2000), 0);
	ck_assert_int_eq(chk_read(h, 1, 5, "0-10"), 0);
	chk_check(h, NULL, &r);
	expect_only(&r, "misplaced", r.misplaced, "0-10");
	chk_free(h);
	/* read twice: a duplicate */
	h = valid_history();
	ck_assert_int_eq(chk_write(h, 0, 0, "0-10", CHK_ACKED, -1001, 2000), 0);
	ck_assert_int_eq(chk_read(h, 0, 10, "0-10"), 0);
	ck_assert_int_eq(chk_read(h, 0, 11, "0-10"), 0);
	chk_check(h, &idem, &r);
	expect_only(&r, "duplicated", r.duplicated, "0-10");
	chk_free(h);
}
END_TEST

START_TEST(test_gap)
{
	chk *h = chk_new();
	ck_assert_int_eq(chk_write(h, 0, 0, "a", CHK_ACKED, 0, 100), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "b", CHK_ACKED, 1, 1100), 0);
	ck_assert_int_eq(chk_write(h, 1, 1, "c", CHK_ACKED, 0, 200), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "x", CHK_INDETERMINATE, -1, 5000), 0);
	ck_assert_int_eq(chk_write(h, 0, 0, "d", CHK_ACKED, 2, 1200), 0);
	chk_report r;
	chk_check(h, NULL, &r);
	ck_assert_int_eq(r.longest_gap_ms, 900); /* 200 .. 1100; failures do not count */
	ck_assert_int_eq(r.gap_from_ms, 200);
	chk_span(h, 0, 5000);
	chk_check(h, NULL, &r);
	ck_assert_int_eq(r.longest_gap_ms, 3800); /* 1200 .. the end at 5000 */
	ck_assert_int_eq(r.gap_from_ms, 1200);
	chk_free(h);
}
END_TEST

START_TEST(test_large)
{
	chk *h = chk_new();
	char v[32];
	const int n = 200000;
	for (int i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "%d-%d", i % 4, i);
		ck_assert_int_eq(chk_write(h, i % 4, i % 8, v, CHK_ACKED, i / 8, i), 0);
	}
	for (int i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "%d-%d", i % 4, i);
		if (i != 123457)
			ck_assert_int_eq(chk_read(h, i % 8, i / 8, v), 0);
	}
	chk_report r;
	chk_options idem = {.idempotent = true};
	chk_check(h, &idem, &r);
	ck_assert_int_eq(r.acked, n);
	ck_assert_int_eq(r.values_read, n - 1);
	ck_assert_int_eq(r.lost, 1);
	ck_assert_msg(strstr(r.examples[0], "1-123457") != NULL, "%s", r.examples[0]);
	ck_assert_int_eq(r.divergent + r.duplicated + r.nonmonotonic + r.misplaced, 0);
	chk_free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_checker");
	TCase *tc = tcase_create("checker");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_lost);
	tcase_add_test(tc, test_misplaced);
	tcase_add_test(tc, test_divergent_ack_vs_read);
	tcase_add_test(tc, test_divergent_reads);
	tcase_add_test(tc, test_nonmonotonic);
	tcase_add_test(tc, test_failed_read);
	tcase_add_test(tc, test_duplicate);
	tcase_add_test(tc, test_unknown);
	tcase_add_test(tc, test_repeated_write);
	tcase_add_test(tc, test_ack_without_offset);
	tcase_add_test(tc, test_gap);
	tcase_add_test(tc, test_large);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
