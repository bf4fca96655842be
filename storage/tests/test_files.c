/*
 * test_files.c - the descriptors the segments of a log hold: the index
 * files of every segment but the active one hold none (read into memory,
 * written through a descriptor opened for the write); a .log is opened
 * when first read, and only the file it was (device and inode).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/topic-0", dir);
	log_config_defaults(&cfg);
	cfg.segment_bytes = 1;         /* every append rolls */
	cfg.index_interval_bytes = 0;  /* an index entry for every batch but the first */
}

static void teardown(void) { tu_rmrf(dir); }

/* Descriptors of this process open on files of the partition directory
 * whose name ends with suffix. */
static int fds_on(const char *suffix)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char link[PATH_MAX + 64], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
		ssize_t len = readlink(link, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		size_t sl = strlen(suffix);
		if (strncmp(target, pdir, strlen(pdir)) == 0 && (size_t)len >= sl &&
		    strcmp(target + len - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static uint8_t bbuf[1 << 12];

/* n appends of two batches of 2 records each: n segments at segment_bytes
 * 1, each with an offset index entry (for its second batch). */
static void fill(log_partition *lp, int n, int64_t ts)
{
	for (int i = 0; i < n; i++) {
		tu_batch_opts o = { .nrecords = 2, .base_ts = ts + i, .ts_step = 1, .value_size = 100 };
		size_t len = tu_batch(bbuf, sizeof bbuf / 2, &o);
		memcpy(bbuf + len, bbuf, len);
		int64_t base;
		ck_assert_int_eq(log_append(lp, bbuf, 2 * len, 0, ts, &base), 0);
	}
}

/* Read every batch of the log, one log_read per batch. */
static void read_all(log_partition *lp)
{
	for (int64_t off = log_start_offset(lp); off < log_end_offset(lp);) {
		log_read_result r;
		ck_assert_int_eq(log_read(lp, off, INT64_MAX, 1, true, &r), 0);
		ck_assert_int_gt(r.len, 0);
		off = r.next_offset;
		log_segment_release(r.segment);
	}
}

START_TEST(closed_segments_hold_no_index_descriptor)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 30, 1000);
	ck_assert_int_eq(tu_count_files(pdir, ".log"), 30);
	/* the active segment's indexes at most */
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	read_all(lp);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	ck_assert_int_eq(log_flush(lp), 0);
	log_close(lp);
	ck_assert_int_eq(fds_on(""), 0);

	/* an unclean open rebuilds every index: still only the active's */
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 2000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 120);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	read_all(lp);
	fill(lp, 3, 3000);
	ck_assert_int_le(fds_on(".index"), 1);
	ck_assert_int_le(fds_on(".timeindex"), 1);
	ck_assert_int_eq(fds_on(".txnindex"), 0);
	log_close(lp);
}
END_TEST

START_TEST(clean_open_opens_only_what_it_reads)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 30, 1000);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	ck_assert_int_eq(log_end_offset(lp), 120);
	ck_assert_int_eq(fds_on(".log"), 1); /* the active segment's tail was read */
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	ck_assert_int_eq(fds_on(".log"), 2);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

/* A segment is known by its file, not its name: a file put in its place
 * is not read as the segment. */
START_TEST(another_file_under_the_name_is_not_read)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, 1000, &lp), 0);
	fill(lp, 3, 1000);
	log_close(lp);
	ck_assert_int_eq(log_open(pdir, &cfg, true, -1, -1, 2000, &lp), 0);
	char path[PATH_MAX], moved[PATH_MAX + 8];
	tu_seg_path(path, sizeof path, pdir, 0, ".log");
	snprintf(moved, sizeof moved, "%s.away", path);
	size_t len;
	uint8_t *bytes = tu_read_file(path, &len);
	ck_assert_int_eq(rename(path, moved), 0);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
	log_read_result r;
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), -ESTALE);
	ck_assert_int_eq(rename(moved, path), 0);
	ck_assert_int_eq(log_read(lp, 0, INT64_MAX, 1, true, &r), 0);
	ck_assert_int_gt(r.len, 0);
	log_segment_release(r.segment);
	log_close(lp);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("files");
	TCase *tc = tcase_create("descriptors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, closed_segments_hold_no_index_descriptor);
	tcase_add_test(tc, clean_open_opens_only_what_it_reads);
	tcase_add_test(tc, another_file_under_the_name_is_not_read);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tu_begin();
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_end();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
