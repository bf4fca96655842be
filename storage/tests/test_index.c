/*
 * test_index.c - offset index and time index: lookups, file round trip,
 * truncation, corruption checks.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "storage/index.h"
#include "storage/log.h"
#include "storage/tests/testutil.h"
#include "storage/timeindex.h"

static char dir[128];
static char ipath[PATH_MAX], tpath[PATH_MAX];

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(ipath, sizeof ipath, "%s/00000000000000000100.index", dir);
	snprintf(tpath, sizeof tpath, "%s/00000000000000000100.timeindex", dir);
}

static void teardown(void) { tu_rmrf(dir); }

START_TEST(offset_index_lookup_and_reload)
{
	log_entfile ix;
	ck_assert_int_eq(log_ef_init(&ix, ipath, LOG_INDEX_ENTRY_SIZE), 0);
	ck_assert_int_eq(log_ef_reset(&ix), 0);
	/* batches ending at relative offsets 9, 19, 29 starting at 0, 1000, 2000 */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(log_index_add(&ix, 9 + 10 * i, 1000 * i), 0);
	ck_assert_int_eq(log_ef_sync(&ix), 0);
	ck_assert_int_eq(tu_file_size(ipath), 24);
	int32_t rel;
	ck_assert_int_eq(log_index_lookup(&ix, 5, &rel), 0);
	ck_assert_int_eq(rel, -1);
	ck_assert_int_eq(log_index_lookup(&ix, 9, &rel), 0);
	ck_assert_int_eq(rel, 9);
	ck_assert_int_eq(log_index_lookup(&ix, 25, &rel), 1000);
	ck_assert_int_eq(log_index_lookup(&ix, 1000000, &rel), 2000);
	ck_assert_int_eq(log_index_floor_pos(&ix, 1999), 1000);
	ck_assert_int_eq(log_index_floor_pos(&ix, 2000), 2000);
	ck_assert_int_eq(log_index_check(&ix, 3000), 0);
	ck_assert_int_eq(log_index_check(&ix, 2000), LOG_ERR_CORRUPT); /* points past the log */
	log_ef_destroy(&ix);

	/* reopen: stat then load gives the same entries */
	ck_assert_int_eq(log_ef_init(&ix, ipath, LOG_INDEX_ENTRY_SIZE), 0);
	ck_assert_int_eq(log_ef_stat(&ix), 0);
	ck_assert_uint_eq(ix.n, 3);
	ck_assert_int_eq(log_ef_load(&ix), 0);
	ck_assert_int_eq(log_index_lookup(&ix, 19, &rel), 1000);
	ck_assert_int_eq(log_ef_truncate(&ix, 1), 0);
	ck_assert_int_eq(tu_file_size(ipath), 8);
	ck_assert_int_eq(log_index_lookup(&ix, 25, &rel), 0);
	ck_assert(log_index_full(&ix, 8));
	ck_assert(!log_index_full(&ix, 16));
	log_ef_destroy(&ix);
}
END_TEST

START_TEST(offset_index_corrupt)
{
	FILE *f = fopen(ipath, "wb");
	fwrite("\0\0\0\x05\0\0\0\0\0\0\0\x03\0\0\0\x10", 1, 16, f); /* offsets going down */
	fclose(f);
	log_entfile ix;
	log_ef_init(&ix, ipath, LOG_INDEX_ENTRY_SIZE);
	ck_assert_int_eq(log_ef_load(&ix), 0);
	ck_assert_int_eq(log_index_check(&ix, 1 << 20), LOG_ERR_CORRUPT);
	log_ef_destroy(&ix);
	/* a torn entry: the size is not a multiple of 8 */
	ck_assert_int_eq(truncate(ipath, 13), 0);
	log_ef_init(&ix, ipath, LOG_INDEX_ENTRY_SIZE);
	ck_assert_int_eq(log_ef_stat(&ix), LOG_ERR_CORRUPT);
	log_ef_destroy(&ix);
	/* missing */
	unlink(ipath);
	log_ef_init(&ix, ipath, LOG_INDEX_ENTRY_SIZE);
	ck_assert_int_eq(log_ef_stat(&ix), -2 /* -ENOENT */);
	log_ef_destroy(&ix);
}
END_TEST

START_TEST(time_index_grows_only)
{
	log_entfile ti;
	ck_assert_int_eq(log_ef_init(&ti, tpath, LOG_TIMEINDEX_ENTRY_SIZE), 0);
	ck_assert_int_eq(log_ef_reset(&ti), 0);
	ck_assert_int_eq(log_timeindex_maybe_add(&ti, -1, 0), 0); /* no timestamp: no entry */
	ck_assert_uint_eq(ti.n, 0);
	ck_assert_int_eq(log_timeindex_maybe_add(&ti, 1000, 4), 0);
	ck_assert_int_eq(log_timeindex_maybe_add(&ti, 1000, 9), 0); /* same ts: none */
	ck_assert_int_eq(log_timeindex_maybe_add(&ti, 900, 12), 0); /* lower: none */
	ck_assert_int_eq(log_timeindex_maybe_add(&ti, 2000, 20), 0);
	ck_assert_uint_eq(ti.n, 2);
	ck_assert_int_eq(log_ef_sync(&ti), 0);
	ck_assert_int_eq(tu_file_size(tpath), 24);
	int32_t rel;
	log_timeindex_lookup(&ti, 500, &rel);
	ck_assert_int_eq(rel, 0);
	log_timeindex_lookup(&ti, 1500, &rel);
	ck_assert_int_eq(rel, 4);
	log_timeindex_lookup(&ti, 2000, &rel);
	ck_assert_int_eq(rel, 20);
	ck_assert_int_eq(log_timeindex_check(&ti), 0);
	log_ef_destroy(&ti);

	ck_assert_int_eq(log_ef_init(&ti, tpath, LOG_TIMEINDEX_ENTRY_SIZE), 0);
	ck_assert_int_eq(log_ef_stat(&ti), 0);
	int64_t ts;
	ck_assert(log_timeindex_last(&ti, &ts, &rel));
	ck_assert_int_eq(ts, 2000);
	ck_assert_int_eq(rel, 20);
	ck_assert(log_timeindex_full(&ti, 24));
	ck_assert(!log_timeindex_full(&ti, 36));
	log_ef_destroy(&ti);
}
END_TEST

START_TEST(time_index_corrupt)
{
	FILE *f = fopen(tpath, "wb");
	/* timestamps 2000 then 1000 */
	fwrite("\0\0\0\0\0\0\x07\xd0\0\0\0\x01\0\0\0\0\0\0\x03\xe8\0\0\0\x02", 1, 24, f);
	fclose(f);
	log_entfile ti;
	log_ef_init(&ti, tpath, LOG_TIMEINDEX_ENTRY_SIZE);
	ck_assert_int_eq(log_ef_load(&ti), 0);
	ck_assert_int_eq(log_timeindex_check(&ti), LOG_ERR_CORRUPT);
	log_ef_destroy(&ti);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("index");
	TCase *tc = tcase_create("index");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, offset_index_lookup_and_reload);
	tcase_add_test(tc, offset_index_corrupt);
	tcase_add_test(tc, time_index_grows_only);
	tcase_add_test(tc, time_index_corrupt);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
