/*
 * test_cleaner.c - log compaction (storage/cleaner.h): the latest record of
 * each key kept at its own offset, tombstones kept until the delete horizon
 * stamped by a first round has passed, min.compaction.lag.ms and the last
 * stable offset bounding the round, the active segment untouched, the
 * dirty ratio, and crashes at each step of a round (.cleaned files, .swap
 * files, a swap cut half-way) losing nothing at the next open.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/buf.h"
#include "protocol/records.h"
#include "storage/cleaner.h"
#include "storage/fileio.h"
#include "storage/log.h"
#include "storage/tests/testutil.h"

static char dir[128];
static char pdir[PATH_MAX];
static log_config cfg;
static log_clean_config ccfg;

#define NOW 1700000000000LL
#define NKEYS 10

static void setup(void)
{
	tu_tmpdir(dir);
	snprintf(pdir, sizeof pdir, "%s/t-0", dir);
	log_config_defaults(&cfg);
	cfg.segment_bytes = 1200; /* a few batches a segment */
	cfg.index_interval_bytes = 200;
	log_clean_config_defaults(&ccfg);
	ccfg.delete_retention_ms = 1000;
}

static void teardown(void) { tu_rmrf(dir); }

/* Append one batch of one record: key "k<key>", value "v<key>-<ver>" (ver
 * < 0: a tombstone), timestamp ts. Returns its offset. */
static int64_t put(log_partition *lp, int key, int ver, int64_t ts)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &w);
	char k[16], v[32];
	int kl = snprintf(k, sizeof k, "k%d", key);
	int vl = snprintf(v, sizeof v, "v%d-%d", key, ver);
	proto_batch_builder_add(&b, ts, k, key < 0 ? -1 : kl, v, ver < 0 ? -1 : vl);
	int32_t n = proto_batch_builder_finish(&b);
	ck_assert_int_gt(n, 0);
	int64_t base;
	ck_assert_int_eq(log_append(lp, w.buf + b.start, (size_t)n, 0, ts, &base), 0);
	proto_writer_free(&w);
	log_set_high_watermark(lp, log_end_offset(lp));
	return base;
}

typedef struct rec {
	int64_t offset;
	char key[16];
	char value[32]; /* "" for a tombstone */
	bool tombstone;
} rec;

/* Every record of the log from its start to the high watermark. */
static int read_all(log_partition *lp, rec *out, int max)
{
	int n = 0;
	int64_t off = log_start_offset(lp);
	proto_scratch sc;
	proto_scratch_init(&sc, 1 << 20);
	while (off < log_high_watermark(lp)) {
		log_read_result rr;
		ck_assert_int_eq(log_read(lp, off, log_high_watermark(lp), 1 << 20, true, &rr), 0);
		if (rr.len == 0)
			break;
		uint8_t *buf = malloc((size_t)rr.len);
		ck_assert_int_eq(log_io_pread(rr.fd, buf, (size_t)rr.len, rr.file_pos), 0);
		log_segment_release(rr.segment);
		for (int32_t pos = 0; pos < rr.len;) {
			proto_record_iter it;
			ck_assert_int_eq(proto_record_iter_init(&it, buf + pos, (size_t)(rr.len - pos), &sc), 0);
			proto_record r;
			int rc;
			while ((rc = proto_record_iter_next(&it, &r)) == 1) {
				ck_assert_int_lt(n, max);
				out[n].offset = r.offset;
				snprintf(out[n].key, sizeof out[n].key, "%.*s", r.key ? r.key_len : 0,
					 r.key ? (const char *)r.key : "");
				out[n].tombstone = r.value == NULL;
				snprintf(out[n].value, sizeof out[n].value, "%.*s", r.value ? r.value_len : 0,
					 r.value ? (const char *)r.value : "");
				n++;
			}
			ck_assert_int_eq(rc, 0);
			off = it.info.base_offset + it.info.last_offset_delta + 1;
			pos += it.info.size;
		}
		free(buf);
	}
	proto_scratch_free(&sc);
	return n;
}

static log_partition *open_log(void)
{
	log_partition *lp;
	ck_assert_int_eq(log_open(pdir, &cfg, false, -1, -1, NOW, &lp), 0);
	log_set_high_watermark(lp, log_end_offset(lp));
	return lp;
}

/* One whole round from first_dirty at now; returns log_clean_end's result
 * (1 when there was nothing to clean). */
static int clean(log_partition *lp, int64_t first_dirty, int64_t now, log_clean_result *res)
{
	log_clean_job *j;
	int rc = log_clean_begin(lp, first_dirty, &ccfg, now, NULL, &j);
	if (rc != 0)
		return rc;
	rc = log_clean_run(j);
	if (rc == 0)
		rc = log_clean_end(lp, j, res);
	log_clean_job_free(j);
	return rc;
}

/* Find the record of key in recs; NULL when absent. */
static const rec *find_key(const rec *recs, int n, int key)
{
	char k[16];
	snprintf(k, sizeof k, "k%d", key);
	const rec *hit = NULL;
	for (int i = 0; i < n; i++)
		if (strcmp(recs[i].key, k) == 0) {
			ck_assert_msg(hit == NULL, "key %s twice", k);
			hit = &recs[i];
		}
	return hit;
}

START_TEST(latest_per_key_offsets_kept)
{
	log_partition *lp = open_log();
	int64_t latest[NKEYS];
	for (int ver = 0; ver < 20; ver++)
		for (int k = 0; k < NKEYS; k++)
			latest[k] = put(lp, k, ver, NOW - 100000 + ver);
	int64_t leo = log_end_offset(lp);
	int64_t before = log_size_bytes(lp);
	/* the active segment's records stay as they are */
	int64_t active_base = 0;
	{
		log_clean_stats st;
		ck_assert_int_eq(log_clean_stats_of(lp, -1, &ccfg, NOW, &st), 0);
		ck_assert_int_eq(st.first_dirty, 0);
		ck_assert(st.ratio > 0.9);
		active_base = st.first_uncleanable;
		ck_assert_int_gt(active_base, 0);
	}
	log_clean_result res;
	ck_assert_int_eq(clean(lp, 0, NOW, &res), 0);
	ck_assert_int_eq(res.end_offset, active_base);
	ck_assert_int_lt(log_size_bytes(lp), before);
	ck_assert_int_eq(log_end_offset(lp), leo);
	static rec recs[512];
	int n = read_all(lp, recs, 512);
	/* below the active segment: one record a key, at its latest offset
	 * there; in the active segment everything */
	int above = 0;
	for (int i = 0; i < n; i++) {
		if (recs[i].offset >= active_base) {
			above++;
			continue;
		}
		int key = atoi(recs[i].key + 1);
		for (int k = 0; k < NKEYS; k++)
			if (k != key)
				continue;
		/* the latest below the active base for this key */
		int64_t want = -1;
		for (int64_t o = key; o < active_base; o += NKEYS)
			want = o;
		ck_assert_int_eq(recs[i].offset, want);
		char v[32];
		snprintf(v, sizeof v, "v%d-%d", key, (int)(want / NKEYS));
		ck_assert_str_eq(recs[i].value, v);
	}
	ck_assert_int_eq(above, (int)(leo - active_base));
	ck_assert_int_eq(n - above, active_base >= NKEYS ? NKEYS : (int)active_base);
	/* offsets strictly increasing */
	for (int i = 1; i < n; i++)
		ck_assert_int_gt(recs[i].offset, recs[i - 1].offset);
	/* a second round after more writes: every key once below the new
	 * cleanable point, at its latest offset */
	for (int k = 0; k < NKEYS; k++)
		latest[k] = put(lp, k, 100, NOW - 1000);
	for (int k = 0; k < 3; k++)
		put(lp, 50 + k, 0, NOW - 1000); /* push the others out of the active segment */
	ck_assert_int_eq(clean(lp, res.end_offset, NOW, &res), 0);
	n = read_all(lp, recs, 512);
	for (int k = 0; k < NKEYS; k++) {
		if (latest[k] >= res.end_offset)
			continue;
		const rec *r = find_key(recs, n, k);
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->offset, latest[k]);
	}
	/* and it all survives a reopen */
	log_close(lp);
	lp = open_log();
	static rec again[512];
	ck_assert_int_eq(read_all(lp, again, 512), n);
	ck_assert_int_eq(memcmp(again, recs, (size_t)n * sizeof *recs), 0);
	log_close(lp);
}
END_TEST

/* Write many versions then a tombstone for key 1; roll past them. */
static void tombstone_log(log_partition *lp, int64_t *tomb)
{
	for (int ver = 0; ver < 5; ver++)
		for (int k = 0; k < 3; k++)
			put(lp, k, ver, NOW - 50000);
	*tomb = put(lp, 1, -1, NOW - 50000);
	for (int i = 0; i < 20; i++)
		put(lp, 9, i, NOW - 50000);
}

START_TEST(tombstones_after_delete_retention)
{
	log_partition *lp = open_log();
	int64_t tomb;
	tombstone_log(lp, &tomb);
	log_clean_result res;
	ck_assert_int_eq(clean(lp, 0, NOW, &res), 0);
	ck_assert_int_gt(res.end_offset, tomb);
	static rec recs[256];
	int n = read_all(lp, recs, 256);
	const rec *r = find_key(recs, n, 1);
	ck_assert_ptr_nonnull(r); /* the tombstone stays: its horizon is now + 1000 */
	ck_assert(r->tombstone);
	ck_assert_int_eq(r->offset, tomb);
	/* a round before the horizon keeps it */
	for (int i = 0; i < 20; i++)
		put(lp, 8, i, NOW);
	int64_t end1 = res.end_offset;
	ck_assert_int_eq(clean(lp, end1, NOW + 500, &res), 0);
	n = read_all(lp, recs, 256);
	r = find_key(recs, n, 1);
	ck_assert_ptr_nonnull(r);
	ck_assert(r->tombstone);
	/* after it, the tombstone is gone, and so is every value of key 1 */
	for (int i = 0; i < 20; i++)
		put(lp, 7, i, NOW);
	ck_assert_int_eq(clean(lp, res.end_offset, NOW + 1001, &res), 0);
	n = read_all(lp, recs, 256);
	ck_assert_ptr_null(find_key(recs, n, 1));
	r = find_key(recs, n, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->value, "v0-4");
	log_close(lp);
}
END_TEST

START_TEST(min_compaction_lag_and_lso)
{
	log_partition *lp = open_log();
	/* old segments first, then new ones */
	for (int i = 0; i < 30; i++)
		put(lp, i % 3, i, NOW - 3600000);
	int64_t old_end = log_end_offset(lp);
	for (int i = 0; i < 30; i++)
		put(lp, i % 3, 100 + i, NOW - 10);
	ccfg.min_compaction_lag_ms = 60000;
	log_clean_stats st;
	ck_assert_int_eq(log_clean_stats_of(lp, 0, &ccfg, NOW, &st), 0);
	ck_assert_int_le(st.first_uncleanable, old_end);
	ck_assert_int_gt(st.first_uncleanable, 0);
	log_clean_result res;
	ck_assert_int_eq(clean(lp, 0, NOW, &res), 0);
	ck_assert_int_le(res.end_offset, old_end);
	/* the new records are all there */
	static rec recs[256];
	int n = read_all(lp, recs, 256);
	int newer = 0;
	for (int i = 0; i < n; i++)
		if (recs[i].offset >= old_end)
			newer++;
	ck_assert_int_eq(newer, 30);
	/* with the high watermark low, nothing above it is cleanable */
	ccfg.min_compaction_lag_ms = 0;
	log_set_high_watermark(lp, 1);
	ck_assert_int_eq(log_clean_stats_of(lp, 0, &ccfg, NOW, &st), 0);
	ck_assert_int_le(st.first_uncleanable, 1);
	log_close(lp);
}
END_TEST

START_TEST(nothing_to_clean)
{
	log_partition *lp = open_log();
	put(lp, 1, 1, NOW);
	log_clean_job *j;
	ck_assert_int_eq(log_clean_begin(lp, 0, &ccfg, NOW, NULL, &j), 1); /* only the active segment */
	ck_assert_ptr_null(j);
	log_close(lp);
}
END_TEST

START_TEST(keyless_records_dropped_and_segments_changed)
{
	log_partition *lp = open_log();
	for (int i = 0; i < 80; i++)
		put(lp, i % 2 ? -1 : 1, i, NOW - 100000);
	log_clean_job *j;
	ck_assert_int_eq(log_clean_begin(lp, 0, &ccfg, NOW, NULL, &j), 0);
	ck_assert_int_eq(log_clean_run(j), 0);
	/* the log moved its start meanwhile: the swap is refused */
	ck_assert_int_eq(log_advance_start_offset(lp, 20), 0);
	ck_assert_int_gt(log_start_offset(lp), 0);
	log_clean_result res;
	ck_assert_int_eq(log_clean_end(lp, j, &res), -ESTALE);
	log_clean_job_free(j);
	ck_assert_int_eq(tu_count_files(pdir, ".swap"), 0);
	/* and cleans next time from the new start */
	ck_assert_int_eq(clean(lp, 20, NOW, &res), 0);
	static rec recs[64];
	int n = read_all(lp, recs, 64);
	for (int i = 0; i < n; i++)
		ck_assert(recs[i].key[0] || recs[i].offset >= res.end_offset);
	log_close(lp);
}
END_TEST

/* A log cleaned in memory but whose swap a "crash" stops at step: 0 after
 * the .cleaned files, 1 after the .swap files, 2 half-way through the
 * renames of the swap. Reopening must give either the old or the cleaned
 * content, with every latest value. */
static void crash_at(int step)
{
	log_partition *lp = open_log();
	for (int ver = 0; ver < 20; ver++)
		for (int k = 0; k < NKEYS; k++)
			put(lp, k, ver, NOW - 100000);
	static rec before[512], after[512];
	int nb = read_all(lp, before, 512);
	log_clean_job *j;
	ck_assert_int_eq(log_clean_begin(lp, 0, &ccfg, NOW, NULL, &j), 0);
	ck_assert_int_eq(log_clean_run(j), 0);
	int64_t base = 0;
	char from[PATH_MAX], to[PATH_MAX];
	if (step == 0) {
		/* back to .cleaned, as if the renames never happened */
		DIR *d = opendir(pdir);
		ck_assert_ptr_nonnull(d);
		struct dirent *de;
		int moved = 0;
		while ((de = readdir(d))) {
			size_t len = strlen(de->d_name);
			if (len < 5 || strcmp(de->d_name + len - 5, ".swap") != 0)
				continue;
			char name[300];
			snprintf(name, sizeof name, "%.*s.cleaned", (int)(len - 5), de->d_name);
			ck_assert_int_eq(renameat(dirfd(d), de->d_name, dirfd(d), name), 0);
			moved++;
		}
		closedir(d);
		ck_assert_int_gt(moved, 0);
	} else if (step == 2) {
		/* the old first segment's files renamed away, one index swapped in */
		tu_seg_path(from, sizeof from, pdir, base, ".log");
		tu_seg_path(to, sizeof to, pdir, base, ".log.deleted");
		ck_assert_int_eq(rename(from, to), 0);
		tu_seg_path(from, sizeof from, pdir, base, ".index");
		unlink(from);
		tu_seg_path(from, sizeof from, pdir, base, ".index.swap");
		tu_seg_path(to, sizeof to, pdir, base, ".index");
		ck_assert_int_eq(rename(from, to), 0);
	}
	/* crash: the log goes without a clean close, the job is dropped */
	log_segment **keep = NULL;
	(void)keep;
	log_close(lp);
	lp = open_log();
	int na = read_all(lp, after, 512);
	ck_assert_int_eq(tu_count_files(pdir, ".swap"), 0);
	ck_assert_int_eq(tu_count_files(pdir, ".cleaned"), 0);
	if (step == 0) {
		ck_assert_int_eq(na, nb); /* rolled back */
		ck_assert_int_eq(memcmp(after, before, (size_t)na * sizeof *after), 0);
	} else {
		ck_assert_int_lt(na, nb); /* finished */
	}
	/* either way the latest value of every key is there at its offset */
	for (int k = 0; k < NKEYS; k++) {
		const rec *want = NULL;
		for (int i = 0; i < nb; i++)
			if (atoi(before[i].key + 1) == k)
				want = &before[i];
		bool found = false;
		for (int i = 0; i < na; i++)
			if (after[i].offset == want->offset) {
				ck_assert_str_eq(after[i].value, want->value);
				found = true;
			}
		ck_assert(found);
	}
	for (int i = 1; i < na; i++)
		ck_assert_int_gt(after[i].offset, after[i - 1].offset);
	/* the job's leftovers must not touch the reopened log */
	log_clean_job_free(j);
	ck_assert_int_eq(read_all(lp, before, 512), na);
	log_close(lp);
}

START_TEST(crash_with_cleaned_files) { crash_at(0); }
END_TEST
START_TEST(crash_with_swap_files) { crash_at(1); }
END_TEST
START_TEST(crash_during_swap) { crash_at(2); }
END_TEST

START_TEST(orphan_index_swap_removed)
{
	log_partition *lp = open_log();
	for (int i = 0; i < 30; i++)
		put(lp, i % 3, i, NOW);
	log_close(lp);
	char p[PATH_MAX];
	tu_seg_path(p, sizeof p, pdir, 0, ".index.swap");
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	lp = open_log();
	ck_assert_int_eq(tu_count_files(pdir, ".swap"), 0);
	static rec recs[64];
	ck_assert_int_eq(read_all(lp, recs, 64), 30);
	log_close(lp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cleaner");
	TCase *tc = tcase_create("cleaner");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, latest_per_key_offsets_kept);
	tcase_add_test(tc, tombstones_after_delete_retention);
	tcase_add_test(tc, min_compaction_lag_and_lso);
	tcase_add_test(tc, nothing_to_clean);
	tcase_add_test(tc, keyless_records_dropped_and_segments_changed);
	tcase_add_test(tc, crash_with_cleaned_files);
	tcase_add_test(tc, crash_with_swap_files);
	tcase_add_test(tc, crash_during_swap);
	tcase_add_test(tc, orphan_index_swap_removed);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
