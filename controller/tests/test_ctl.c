/*
 * test_ctl.c - unit tests of the local controller: name rules, creation
 * errors, topic ids, persistence across reopen, deletion, producer id
 * blocks.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "protocol/err.h"

static char dir[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/samsa-test-ctl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/__samsa_metadata.tmp", dir);
	unlink(path);
	rmdir(dir);
}

static int name_ok(const char *s)
{
	return ctl_validate_topic_name(s, (int32_t)strlen(s));
}

START_TEST(test_name_rules)
{
	char long_name[300];
	ck_assert_int_eq(name_ok("orders"), 0);
	ck_assert_int_eq(name_ok("a.b_c-D9"), 0);
	ck_assert_int_eq(name_ok("..."), 0);
	ck_assert_int_eq(name_ok(""), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(name_ok("."), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(name_ok(".."), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(name_ok("a b"), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(name_ok("a/b"), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(name_ok("caf\xc3\xa9"), KERR_INVALID_TOPIC_EXCEPTION);
	memset(long_name, 'x', 249);
	long_name[249] = '\0';
	ck_assert_int_eq(name_ok(long_name), 0);
	long_name[249] = 'x';
	long_name[250] = '\0';
	ck_assert_int_eq(name_ok(long_name), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(ctl_validate_topic_name(NULL, -1), KERR_INVALID_TOPIC_EXCEPTION);
}
END_TEST

START_TEST(test_create_errors)
{
	ctl *c;
	ck_assert_int_eq(ctl_open(dir, 7, &c), 0);
	ck_assert_int_eq(ctl_broker_count(c), 1);
	ck_assert_int_eq(ctl_controller_id(c), 7);
	ck_assert_int_eq(ctl_create_topic(c, "t", 0, 1, NULL, 0, false, NULL), KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(ctl_create_topic(c, "t", -3, 1, NULL, 0, false, NULL), KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(ctl_create_topic(c, "t", 1, 2, NULL, 0, false, NULL),
			 KERR_INVALID_REPLICATION_FACTOR);
	ck_assert_int_eq(ctl_create_topic(c, "t", 1, 0, NULL, 0, false, NULL),
			 KERR_INVALID_REPLICATION_FACTOR);
	ck_assert_int_eq(ctl_create_topic(c, "bad name", 1, 1, NULL, 0, false, NULL),
			 KERR_INVALID_TOPIC_EXCEPTION);
	/* validate_only changes nothing */
	ck_assert_int_eq(ctl_create_topic(c, "t", 1, 1, NULL, 0, true, NULL), KERR_NONE);
	ck_assert_int_eq(ctl_topic_count(c), 0);
	ck_assert_ptr_null(ctl_find_topic(c, "t", 1));

	const ctl_topic *t;
	ck_assert_int_eq(ctl_create_topic(c, "a.b", 3, 1, NULL, 0, false, &t), KERR_NONE);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(ctl_create_topic(c, "a.b", 3, 1, NULL, 0, false, NULL),
			 KERR_TOPIC_ALREADY_EXISTS);
	ck_assert_int_eq(ctl_create_topic(c, "a.b", 3, 1, NULL, 0, true, NULL),
			 KERR_TOPIC_ALREADY_EXISTS);
	/* '.' and '_' collide (Kafka's Topic.hasCollision) */
	ck_assert_int_eq(ctl_create_topic(c, "a_b", 1, 1, NULL, 0, false, NULL),
			 KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_ptr_eq(ctl_find_colliding_topic(c, "a_b"), t);
	ck_assert_ptr_null(ctl_find_colliding_topic(c, "a.b"));
	ck_assert_ptr_null(ctl_find_colliding_topic(c, "a-b"));
	ck_assert_int_eq(ctl_topic_count(c), 1);
	ctl_close(c);
}
END_TEST

START_TEST(test_create_and_reopen)
{
	ctl *c;
	ck_assert_int_eq(ctl_open(dir, 3, &c), 0);
	ctl_config_entry cfg[2] = {
		{ "retention.ms", "1000" },
		{ "cleanup.policy", "compact,delete" },
	};
	const ctl_topic *t1, *t2, *t3;
	ck_assert_int_eq(ctl_create_topic(c, "orders", 4, 1, cfg, 2, false, &t1), 0);
	ck_assert_int_eq(ctl_create_topic(c, "__consumer_offsets", 2, 1, NULL, 0, false, &t2), 0);
	ck_assert_int_eq(ctl_create_topic(c, "odd", 1, 1,
					  (ctl_config_entry[]){ { "x", "a b%c\n" }, { "y", "" } },
					  2, false, &t3), 0);
	ck_assert(!t1->internal);
	ck_assert(t2->internal);
	ck_assert_int_eq(t1->npartitions, 4);
	ck_assert_int_eq(t1->replication_factor, 1);
	for (int32_t p = 0; p < 4; p++) {
		ck_assert_int_eq(t1->partitions[p].partition, p);
		ck_assert_int_eq(t1->partitions[p].leader, 3);
		ck_assert_int_eq(t1->partitions[p].leader_epoch, 0);
		ck_assert_int_eq(t1->partitions[p].nreplicas, 1);
		ck_assert_int_eq(t1->partitions[p].replicas[0], 3);
		ck_assert_int_eq(t1->partitions[p].nisr, 1);
		ck_assert_int_eq(t1->partitions[p].isr[0], 3);
	}
	static const uint8_t zero[16];
	ck_assert(memcmp(t1->id, zero, 16) != 0);
	ck_assert(memcmp(t1->id, t2->id, 16) != 0);
	ck_assert_ptr_eq(ctl_find_topic_by_id(c, t2->id), t2);
	ck_assert_ptr_null(ctl_find_topic_by_id(c, zero));
	ck_assert_str_eq(ctl_topic_config(t1, "retention.ms"), "1000");
	ck_assert_ptr_null(ctl_topic_config(t1, "segment.ms"));
	uint8_t id1[16];
	memcpy(id1, t1->id, 16);
	ctl_close(c);

	ck_assert_int_eq(ctl_open(dir, 3, &c), 0);
	ck_assert_int_eq(ctl_topic_count(c), 3);
	t1 = ctl_find_topic(c, "orders", 6);
	ck_assert_ptr_nonnull(t1);
	ck_assert_ptr_eq(ctl_topic_at(c, 0), t1);
	ck_assert_ptr_null(ctl_topic_at(c, 3));
	ck_assert(memcmp(t1->id, id1, 16) == 0);
	ck_assert_int_eq(t1->npartitions, 4);
	ck_assert_int_eq(t1->partitions[3].leader, 3);
	ck_assert_str_eq(ctl_topic_config(t1, "cleanup.policy"), "compact,delete");
	t2 = ctl_find_topic(c, "__consumer_offsets", 18);
	ck_assert(t2 && t2->internal);
	t3 = ctl_find_topic(c, "odd", 3);
	ck_assert_str_eq(ctl_topic_config(t3, "x"), "a b%c\n");
	ck_assert_str_eq(ctl_topic_config(t3, "y"), "");
	/* prefix of a name is not the name */
	ck_assert_ptr_null(ctl_find_topic(c, "orde", 4));
	ck_assert_ptr_null(ctl_find_topic(c, "ordersX", 7));
	ctl_close(c);
}
END_TEST

START_TEST(test_delete)
{
	ctl *c;
	char name[32];
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "topic-%d", i);
		ck_assert_int_eq(ctl_create_topic(c, name, 1, 1, NULL, 0, false, NULL), 0);
	}
	ck_assert_int_eq(ctl_delete_topic(c, "nope"), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(ctl_delete_topic(c, "topic-7"), 0);
	ck_assert_int_eq(ctl_delete_topic(c, "topic-7"), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_ptr_null(ctl_find_topic(c, "topic-7", 7));
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "topic-%d", i);
		ck_assert((ctl_find_topic(c, name, (int32_t)strlen(name)) != NULL) == (i != 7));
	}
	ck_assert_int_eq(ctl_topic_count(c), 39);
	ctl_close(c);
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_topic_count(c), 39);
	ck_assert_ptr_null(ctl_find_topic(c, "topic-7", 7));
	ck_assert_ptr_nonnull(ctl_find_topic(c, "topic-8", 7));
	/* a deleted name can be created again, with a new id */
	ck_assert_int_eq(ctl_create_topic(c, "topic-7", 2, 1, NULL, 0, false, NULL), 0);
	ctl_close(c);
}
END_TEST

START_TEST(test_corrupt_file)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	const char *bad[] = {
		"garbage\n",
		"samsa-metadata 1\ntopic t 00 0 1 1 0\npartition 0 0 0 1 0 1 0\nend\n",
		"samsa-metadata 1\ntopic t 0123456789abcdef0123456789abcdef 0 2 1 0\n"
		"partition 0 0 0 1 0 1 0\nend\n",
		"samsa-metadata 1\ntopic t 0123456789abcdef0123456789abcdef 0 1 1 0\n"
		"partition 0 0 0 1 0 1 0\n", /* no end: torn */
		"samsa-metadata 1\ntopic t 0123456789abcdef0123456789abcdef 0 1 1 0\n"
		"partition 0 0 0 999999999 0\nend\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(bad[i], f);
		fclose(f);
		ctl *c = NULL;
		ck_assert_msg(ctl_open(dir, 0, &c) < 0, "case %zu accepted", i);
		ck_assert_ptr_null(c);
	}
	FILE *f = fopen(path, "w");
	fputs("samsa-metadata 1\ntopic t 0123456789abcdef0123456789abcdef 0 1 1 0\n"
	      "partition 0 0 0 1 0 1 0\nend\n", f);
	fclose(f);
	ctl *c;
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_topic_count(c), 1);
	ctl_close(c);
}
END_TEST

/* The producer-ids line of the metadata file, or -1 when there is none. */
static long long file_pid_end(void)
{
	char path[PATH_MAX + 64], line[256];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	long long end = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "producer-ids %lld", &end) == 1)
			break;
	fclose(f);
	return end;
}

START_TEST(test_producer_ids)
{
	ctl *c;
	int64_t id;
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_create_topic(c, "t", 2, 1, NULL, 0, false, NULL), KERR_NONE);
	/* ids count up from 0; the block end is on disk before an id of it is out */
	for (int64_t i = 0; i < 1500; i++) {
		ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
		ck_assert_int_eq(id, i);
		ck_assert_int_ge(file_pid_end(), id + 1);
	}
	ck_assert_int_eq(file_pid_end(), 2000);

	/* kill -9: no close, no save; a new open continues after the block */
	ctl *c2;
	ck_assert_int_eq(ctl_open(dir, 0, &c2), 0);
	ck_assert_int_eq(ctl_topic_count(c2), 1);
	ck_assert_int_eq(ctl_next_producer_id(c2, &id), KERR_NONE);
	ck_assert_int_eq(id, 2000);
	ck_assert_int_eq(file_pid_end(), 3000);
	ctl_close(c2);
	ctl_close(c);

	/* a clean close and reopen skips the rest of the block too */
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 3000);
	for (int i = 1; i < 1000; i++)
		ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 3999);

	/* the next block cannot be persisted: nothing is handed out */
	char moved[PATH_MAX + 8];
	snprintf(moved, sizeof(moved), "%s.mv", dir);
	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_KAFKA_STORAGE_ERROR);
	ck_assert_int_eq(id, -1);
	ck_assert_int_eq(rename(moved, dir), 0);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 4000);
	ck_assert_int_eq(file_pid_end(), 5000);
	/* creating a topic keeps the reserved block */
	ck_assert_int_eq(ctl_create_topic(c, "u", 1, 1, NULL, 0, false, NULL), KERR_NONE);
	ck_assert_int_eq(file_pid_end(), 5000);
	ctl_close(c);
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_topic_count(c), 2);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 5000);
	ctl_close(c);
}
END_TEST

START_TEST(test_producer_ids_file)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	const char *bad[] = {
		"samsa-metadata 1\nproducer-ids 1000\nend\n",          /* v1 has none */
		"samsa-metadata 2\nproducer-ids -1\nend\n",
		"samsa-metadata 2\nproducer-ids x\nend\n",
		"samsa-metadata 2\nproducer-ids 1000\nproducer-ids 2000\nend\n",
		"samsa-metadata 2\nproducer-ids\nend\n",
		"samsa-metadata 4\nend\n",                            /* a future version */
		"samsa-metadata 2\nbroker-config default a b\nend\n", /* v2 has none */
		"samsa-metadata 3\nbroker-config x a b\nend\n",
		"samsa-metadata 3\nbroker-config default a\nend\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(bad[i], f);
		fclose(f);
		ctl *c = NULL;
		ck_assert_msg(ctl_open(dir, 0, &c) < 0, "case %zu accepted", i);
		ck_assert_ptr_null(c);
	}
	FILE *f = fopen(path, "w");
	fputs("samsa-metadata 2\nproducer-ids 7000\nend\n", f);
	fclose(f);
	ctl *c;
	int64_t id;
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 7000);
	ctl_close(c);
	/* a version 1 file starts at 0 */
	f = fopen(path, "w");
	fputs("samsa-metadata 1\nend\n", f);
	fclose(f);
	ck_assert_int_eq(ctl_open(dir, 0, &c), 0);
	ck_assert_int_eq(ctl_next_producer_id(c, &id), KERR_NONE);
	ck_assert_int_eq(id, 0);
	ck_assert_int_eq(file_pid_end(), 1000);
	ctl_close(c);
}
END_TEST

/* ---- ctl_add_partitions (CreatePartitions) ---- */

START_TEST(test_add_partitions_errors)
{
	ctl *c;
	char msg[512];
	ck_assert_int_eq(ctl_open(dir, 4, &c), 0);
	const ctl_topic *t;
	ck_assert_int_eq(ctl_create_topic(c, "grow", 3, 1, NULL, 0, false, &t), 0);

	ck_assert_int_eq(ctl_add_partitions(c, "nope", 5, NULL, 0, false, msg, sizeof(msg)),
			 KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_str_eq(msg, "");
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 3, NULL, 0, false, msg, sizeof(msg)),
			 KERR_INVALID_PARTITIONS);
	ck_assert_str_eq(msg, "Topic already has 3 partition(s).");
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 2, NULL, 0, false, msg, sizeof(msg)),
			 KERR_INVALID_PARTITIONS);
	ck_assert_str_eq(msg, "The topic grow currently has 3 partition(s); 2 would not be an increase.");
	ck_assert_int_eq(ctl_add_partitions(c, "grow", -1, NULL, 0, false, msg, sizeof(msg)),
			 KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(ctl_add_partitions(c, "grow", INT32_MAX, NULL, 0, false, msg, sizeof(msg)),
			 KERR_INVALID_PARTITIONS);

	int32_t ok[] = { 4 }, unknown[] = { 9 }, twice[] = { 4, 4 }, two[] = { 4, 9 };
	ctl_replica_list one_ok[] = { { ok, 1 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 5, one_ok, 1, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "Attempted to add 2 additional partition(s), but only 1 assignment(s) "
			 "were specified.");
	ctl_replica_list too_many[] = { { ok, 1 }, { ok, 1 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, too_many, 2, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "Attempted to add 1 additional partition(s), but only 2 assignment(s) "
			 "were specified.");
	ctl_replica_list empty[] = { { ok, 0 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, empty, 1, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "The manual partition assignment includes an empty replica list.");
	ctl_replica_list bad[] = { { unknown, 1 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, bad, 1, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "The manual partition assignment includes broker 9, but no such broker "
			 "is registered.");
	ctl_replica_list dup[] = { { twice, 2 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, dup, 1, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "The manual partition assignment includes the broker 4 more than once.");
	/* ids are checked in ascending order: 4 passes, 9 is unknown */
	ctl_replica_list mixed[] = { { two, 2 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, mixed, 1, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(msg, "The manual partition assignment includes broker 9, but no such broker "
			 "is registered.");
	/* the second of two lists is wrong: nothing is added */
	ctl_replica_list second_bad[] = { { ok, 1 }, { unknown, 1 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 5, second_bad, 2, false, msg, sizeof(msg)),
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(t->npartitions, 3);

	/* validate_only: every check, no change */
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 6, NULL, 0, true, msg, sizeof(msg)), KERR_NONE);
	ck_assert_str_eq(msg, "");
	ck_assert_int_eq(t->npartitions, 3);
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 2, NULL, 0, true, msg, sizeof(msg)),
			 KERR_INVALID_PARTITIONS);
	ctl_close(c);
	ck_assert_int_eq(ctl_open(dir, 4, &c), 0);
	ck_assert_int_eq(ctl_find_topic(c, "grow", 4)->npartitions, 3);
	ctl_close(c);
}
END_TEST

START_TEST(test_add_partitions_persist)
{
	ctl *c;
	char msg[512];
	ck_assert_int_eq(ctl_open(dir, 6, &c), 0);
	const ctl_topic *t, *other;
	ck_assert_int_eq(ctl_create_topic(c, "before", 1, 1, NULL, 0, false, &other), 0);
	ck_assert_int_eq(ctl_create_topic(c, "grow", 2, 1,
					  (ctl_config_entry[]){ { "retention.ms", "5000" } }, 1, false,
					  &t), 0);
	uint8_t id[16];
	memcpy(id, t->id, 16);
	/* automatic placement */
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 5, NULL, 0, false, msg, sizeof(msg)), KERR_NONE);
	ck_assert_str_eq(msg, "");
	ck_assert_ptr_eq(ctl_find_topic(c, "grow", 4), t); /* the topic itself does not move */
	ck_assert_int_eq(t->npartitions, 5);
	/* a manual assignment for the next one */
	int32_t ids[] = { 6 };
	ctl_replica_list as[] = { { ids, 1 } };
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 6, as, 1, false, msg, sizeof(msg)), KERR_NONE);
	ck_assert_int_eq(t->npartitions, 6);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(t->npartitions, 6);
		ck_assert(memcmp(t->id, id, 16) == 0);
		ck_assert_str_eq(ctl_topic_config(t, "retention.ms"), "5000");
		for (int32_t p = 0; p < 6; p++) {
			const ctl_partition *cp = &t->partitions[p];
			ck_assert_int_eq(cp->partition, p);
			ck_assert_int_eq(cp->leader, 6);
			ck_assert_int_eq(cp->leader_epoch, 0);
			ck_assert_int_eq(cp->nreplicas, 1);
			ck_assert_int_eq(cp->replicas[0], 6);
			ck_assert_int_eq(cp->nisr, 1);
			ck_assert_int_eq(cp->isr[0], 6);
		}
		ck_assert_int_eq(ctl_find_topic(c, "before", 6)->npartitions, 1);
		/* the metadata file has them: reopen */
		ctl_close(c);
		ck_assert_int_eq(ctl_open(dir, 6, &c), 0);
		t = ctl_find_topic(c, "grow", 4);
		ck_assert_ptr_nonnull(t);
	}
	ctl_close(c);
}
END_TEST

START_TEST(test_add_partitions_storage_error)
{
	ctl *c;
	char msg[512], tmp[PATH_MAX + 64];
	ck_assert_int_eq(ctl_open(dir, 1, &c), 0);
	const ctl_topic *t;
	ck_assert_int_eq(ctl_create_topic(c, "grow", 2, 1, NULL, 0, false, &t), 0);
	/* The metadata file cannot be rewritten: its .tmp is a directory. */
	snprintf(tmp, sizeof(tmp), "%s/__samsa_metadata.tmp", dir);
	ck_assert_int_eq(mkdir(tmp, 0755), 0);
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, NULL, 0, false, msg, sizeof(msg)),
			 KERR_KAFKA_STORAGE_ERROR);
	ck_assert_int_eq(t->npartitions, 2);
	ck_assert_int_eq(rmdir(tmp), 0);
	/* memory and disk agree; a retry works */
	ctl_close(c);
	ck_assert_int_eq(ctl_open(dir, 1, &c), 0);
	t = ctl_find_topic(c, "grow", 4);
	ck_assert_int_eq(t->npartitions, 2);
	ck_assert_int_eq(ctl_add_partitions(c, "grow", 4, NULL, 0, false, msg, sizeof(msg)), KERR_NONE);
	ck_assert_int_eq(t->npartitions, 4);
	ctl_close(c);
}
END_TEST

/* ctl_set_topic_configs and the dynamic broker configs: replaced as a
 * whole, persisted, read back after a reopen (helper E). */
START_TEST(test_set_configs_persist)
{
	ctl *c;
	ck_assert_int_eq(ctl_open(dir, 2, &c), 0);
	ck_assert_int_eq(ctl_create_topic(c, "t", 1, 1,
					  (ctl_config_entry[]){ { "retention.ms", "1" } }, 1, false,
					  NULL), 0);
	ck_assert_int_eq(ctl_set_topic_configs(c, "nope", NULL, 0), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(ctl_set_topic_configs(c, "t",
					       (ctl_config_entry[]){ { "segment.ms", "5" },
								     { "cleanup.policy", "a b%\n" } },
					       2), 0);
	int32_t n;
	ck_assert_ptr_null(ctl_broker_configs(c, CTL_BROKER_DEFAULT, &n));
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(ctl_set_broker_configs(c, CTL_BROKER_DEFAULT,
						(ctl_config_entry[]){ { "log.retention.ms", "7" },
								      { "odd key", "" } },
						2), 0);
	ck_assert_int_eq(ctl_set_broker_configs(c, 2,
						(ctl_config_entry[]){ { "message.max.bytes", "9" } }, 1),
			 0);
	ck_assert_int_eq(ctl_set_broker_configs(c, -5, NULL, 0), KERR_INVALID_REQUEST);
	ctl_close(c);

	ck_assert_int_eq(ctl_open(dir, 2, &c), 0);
	const ctl_topic *t = ctl_find_topic(c, "t", 1);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->nconfigs, 2);
	ck_assert_ptr_null(ctl_topic_config(t, "retention.ms"));
	ck_assert_str_eq(ctl_topic_config(t, "segment.ms"), "5");
	ck_assert_str_eq(ctl_topic_config(t, "cleanup.policy"), "a b%\n");
	const ctl_config_entry *d = ctl_broker_configs(c, CTL_BROKER_DEFAULT, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(d[0].name, "log.retention.ms");
	ck_assert_str_eq(d[0].value, "7");
	ck_assert_str_eq(d[1].name, "odd key");
	ck_assert_str_eq(d[1].value, "");
	d = ctl_broker_configs(c, 2, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(d[0].value, "9");
	/* Emptied sets stay empty after a reopen. */
	ck_assert_int_eq(ctl_set_broker_configs(c, 2, NULL, 0), 0);
	ck_assert_int_eq(ctl_set_topic_configs(c, "t", NULL, 0), 0);
	ctl_close(c);
	ck_assert_int_eq(ctl_open(dir, 2, &c), 0);
	ck_assert_ptr_null(ctl_broker_configs(c, 2, &n));
	ck_assert_int_eq(ctl_find_topic(c, "t", 1)->nconfigs, 0);
	ck_assert_ptr_nonnull(ctl_broker_configs(c, CTL_BROKER_DEFAULT, &n));
	ctl_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("local");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_name_rules);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_create_and_reopen);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_corrupt_file);
	tcase_add_test(tc, test_producer_ids);
	tcase_add_test(tc, test_producer_ids_file);
	tcase_add_test(tc, test_set_configs_persist);
	tcase_add_test(tc, test_add_partitions_errors);
	tcase_add_test(tc, test_add_partitions_persist);
	tcase_add_test(tc, test_add_partitions_storage_error);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
