/*
 * test_logdir.c - log directory files: lock, meta.properties, clean marker,
 * offset checkpoints, partition.metadata, Uuid text form.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "storage/log.h"
#include "storage/logdir.h"
#include "storage/tests/testutil.h"

static char dir[128];

static void setup(void) { tu_tmpdir(dir); }
static void teardown(void) { tu_rmrf(dir); }

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

START_TEST(lock_twice_fails)
{
	char sub[PATH_MAX];
	snprintf(sub, sizeof sub, "%s/a/b", dir);
	int fd1 = -1, fd2 = -1;
	ck_assert_int_eq(logdir_lock(sub, &fd1), 0); /* creates parents */
	ck_assert_int_ge(fd1, 0);
	ck_assert_int_eq(logdir_lock(sub, &fd2), -EWOULDBLOCK);
	close(fd1);
	ck_assert_int_eq(logdir_lock(sub, &fd2), 0);
	close(fd2);
}
END_TEST

START_TEST(meta_round_trip)
{
	int32_t id = -1;
	char cid[64];
	ck_assert_int_eq(logdir_read_meta(dir, &id, cid, sizeof cid), -ENOENT);
	ck_assert_int_eq(logdir_write_meta(dir, 7, "Mk3OEYBSD34fcwNTJENDM2"), 0);
	ck_assert_int_eq(logdir_read_meta(dir, &id, cid, sizeof cid), 0);
	ck_assert_int_eq(id, 7);
	ck_assert_str_eq(cid, "Mk3OEYBSD34fcwNTJENDM2");

	/* Kafka's own file (comments, KRaft node.id form) */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/meta.properties", dir);
	write_text(path, "#\n#Thu Jan 01 00:00:00 UTC 2024\nnode.id=3\ndirectory.id=x\nversion=1\ncluster.id=abc\n");
	ck_assert_int_eq(logdir_read_meta(dir, &id, cid, sizeof cid), 0);
	ck_assert_int_eq(id, 3);
	ck_assert_str_eq(cid, "abc");
	write_text(path, "version=0\nbroker.id=banana\n");
	ck_assert_int_eq(logdir_read_meta(dir, &id, cid, sizeof cid), LOG_ERR_CORRUPT);
	write_text(path, "cluster.id=abc\n");
	ck_assert_int_eq(logdir_read_meta(dir, &id, cid, sizeof cid), LOG_ERR_CORRUPT);
}
END_TEST

START_TEST(clean_marker)
{
	ck_assert(!logdir_was_clean(dir));
	ck_assert_int_eq(logdir_set_clean(dir, true), 0);
	ck_assert(logdir_was_clean(dir));
	ck_assert_int_eq(logdir_set_clean(dir, false), 0);
	ck_assert(!logdir_was_clean(dir));
	ck_assert_int_eq(logdir_set_clean(dir, false), 0);
}
END_TEST

START_TEST(checkpoint_round_trip)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", dir);
	logdir_checkpoint_entry *got;
	int n = -1;
	ck_assert_int_eq(logdir_checkpoint_read(path, &got, &n), 0);
	ck_assert_int_eq(n, 0);
	free(got);

	logdir_checkpoint_entry e[3] = { { "orders", 0, 42 }, { "orders", 11, 0 }, { "__consumer_offsets", 49, 123456789012LL } };
	ck_assert_int_eq(logdir_checkpoint_write(path, e, 3), 0);
	size_t len;
	uint8_t *text = tu_read_file(path, &len);
	ck_assert_int_eq(memcmp(text, "0\n3\norders 0 42\norders 11 0\n__consumer_offsets 49 123456789012\n", len), 0);
	free(text);
	ck_assert_int_eq(logdir_checkpoint_read(path, &got, &n), 0);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_str_eq(got[i].topic, e[i].topic);
		ck_assert_int_eq(got[i].partition, e[i].partition);
		ck_assert_int_eq(got[i].offset, e[i].offset);
	}
	free(got);
	ck_assert_int_eq(tu_count_files(dir, ".tmp"), 0);

	const char *bad[] = { "1\n0\n", "0\n2\norders 0 1\n", "0\n1\norders x 1\n", "0\n1\norders 0 1\nextra\n",
			      "0\n-1\n", "" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		write_text(path, bad[i]);
		ck_assert_int_eq(logdir_checkpoint_read(path, &got, &n), LOG_ERR_CORRUPT);
	}
}
END_TEST

START_TEST(uuid_round_trip)
{
	uint8_t id[16] = { 0 }, back[16];
	char s[23];
	id[15] = 1;
	logdir_uuid_to_string(id, s);
	ck_assert_str_eq(s, "AAAAAAAAAAAAAAAAAAAAAQ"); /* Kafka's Uuid.ONE_UUID */
	for (int t = 0; t < 100; t++) {
		for (int i = 0; i < 16; i++)
			id[i] = (uint8_t)(rand() & 0xff);
		logdir_uuid_to_string(id, s);
		ck_assert_uint_eq(strlen(s), 22);
		ck_assert_int_eq(logdir_uuid_from_string(s, back), 0);
		ck_assert_int_eq(memcmp(id, back, 16), 0);
	}
	ck_assert_int_eq(logdir_uuid_from_string("AAAA", back), -EINVAL);
	ck_assert_int_eq(logdir_uuid_from_string("AAAAAAAAAAAAAAAAAAAA+Q", back), -EINVAL);
}
END_TEST

START_TEST(partition_metadata_round_trip)
{
	uint8_t id[16], back[16];
	for (int i = 0; i < 16; i++)
		id[i] = (uint8_t)(i * 17 + 3);
	ck_assert_int_eq(logdir_read_partition_metadata(dir, back), -ENOENT);
	ck_assert_int_eq(logdir_write_partition_metadata(dir, id), 0);
	ck_assert_int_eq(logdir_read_partition_metadata(dir, back), 0);
	ck_assert_int_eq(memcmp(id, back, 16), 0);
	char path[PATH_MAX], s[23];
	snprintf(path, sizeof path, "%s/partition.metadata", dir);
	size_t len;
	uint8_t *text = tu_read_file(path, &len);
	logdir_uuid_to_string(id, s);
	char want[64];
	snprintf(want, sizeof want, "version: 0\ntopic_id: %s\n", s);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_int_eq(memcmp(text, want, len), 0);
	free(text);
	write_text(path, "version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n");
	ck_assert_int_eq(logdir_read_partition_metadata(dir, back), LOG_ERR_CORRUPT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("logdir");
	TCase *tc = tcase_create("logdir");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lock_twice_fails);
	tcase_add_test(tc, meta_round_trip);
	tcase_add_test(tc, clean_marker);
	tcase_add_test(tc, checkpoint_round_trip);
	tcase_add_test(tc, uuid_round_trip);
	tcase_add_test(tc, partition_metadata_round_trip);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	tu_begin();
	srunner_run_all(sr, CK_NORMAL);
	tu_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
