/*
 * test_ctl.c - unit tests of the controller interface with the local back
 * end: operations go in through ctl_submit, what they change comes back as
 * events, which a mirror here applies (as the broker does); name rules,
 * creation errors, topic ids, persistence across reopen, deletion, producer
 * id blocks, CreatePartitions, configs.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "protocol/err.h"

static char dir[PATH_MAX];

/* What the events told: topics by name, the broker configs, the brokers. */
#define MAXT 64
typedef struct mirror {
	ctl *c;
	ctl_topic *topics[MAXT];
	int ntopics;
	int32_t broker_ids[8];
	int nbrokers;
	int32_t controller;
	ctl_config_entry *bconf[2]; /* [0] default, [1] broker 2 */
	int32_t nbconf[2];
	int deleted_events;
	ctl_acl_store acls;         /* from CTL_EV_ACLS */
	int acl_events;
} mirror;

static mirror m;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/samsa-test-ctl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&m, 0, sizeof(m));
}

static void mirror_clear(void)
{
	for (int i = 0; i < m.ntopics; i++)
		ctl_topic_free(m.topics[i]);
	for (int i = 0; i < 2; i++)
		ctl_configs_free(m.bconf[i], m.nbconf[i]);
	ctl_acl_store_free(&m.acls);
	ctl *c = m.c;
	memset(&m, 0, sizeof(m));
	m.c = c;
}

static void teardown(void)
{
	mirror_clear();
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/__samsa_metadata.tmp", dir);
	rmdir(path);
	unlink(path);
	rmdir(dir);
}

static const ctl_topic *find(const char *name)
{
	for (int i = 0; i < m.ntopics; i++)
		if (strcmp(m.topics[i]->name, name) == 0)
			return m.topics[i];
	return NULL;
}

static void apply(ctl_event *e, ctl_result *res, uint64_t want)
{
	switch (e->type) {
	case CTL_EV_BROKERS:
		m.nbrokers = e->u.brokers.n;
		for (int i = 0; i < e->u.brokers.n && i < 8; i++)
			m.broker_ids[i] = e->u.brokers.v[i].id;
		break;
	case CTL_EV_CONTROLLER:
		m.controller = e->u.controller.id;
		break;
	case CTL_EV_TOPIC: {
		int i;
		for (i = 0; i < m.ntopics; i++)
			if (strcmp(m.topics[i]->name, e->u.topic->name) == 0)
				break;
		ck_assert_int_lt(i, MAXT);
		if (i < m.ntopics)
			ctl_topic_free(m.topics[i]);
		else
			m.ntopics++;
		m.topics[i] = e->u.topic;
		e->u.topic = NULL; /* kept */
		break;
	}
	case CTL_EV_TOPIC_DELETED:
		m.deleted_events++;
		for (int i = 0; i < m.ntopics; i++)
			if (strcmp(m.topics[i]->name, e->u.deleted.name) == 0) {
				ck_assert(memcmp(m.topics[i]->id, e->u.deleted.id, 16) == 0);
				ctl_topic_free(m.topics[i]);
				m.topics[i] = m.topics[--m.ntopics];
				break;
			}
		break;
	case CTL_EV_BROKER_CONFIGS: {
		int k = e->u.broker_configs.broker_id == CTL_BROKER_DEFAULT ? 0 : 1;
		ctl_configs_free(m.bconf[k], m.nbconf[k]);
		m.bconf[k] = e->u.broker_configs.configs;
		m.nbconf[k] = e->u.broker_configs.nconfigs;
		e->u.broker_configs.configs = NULL;
		e->u.broker_configs.nconfigs = 0;
		break;
	}
	case CTL_EV_ACLS:
		ck_assert_int_eq(ctl_acl_store_put(&m.acls, &e->u.acls), 0);
		m.acl_events++;
		break;
	case CTL_EV_RESULT:
		ck_assert_msg(e->u.result.id == want, "result %llu, waiting for %llu",
			      (unsigned long long)e->u.result.id, (unsigned long long)want);
		*res = e->u.result;
		break;
	default:
		break;
	}
}

/* Apply every queued event (none expected to be a result). */
static void drain(void)
{
	ctl_event *e;
	while ((e = ctl_next_event(m.c))) {
		ck_assert_int_ne(e->type, CTL_EV_RESULT);
		apply(e, NULL, 0);
		ctl_event_free(e);
	}
}

static int open_ctl(int32_t broker_id)
{
	ctl_options o = { .log_dir = dir, .broker_id = broker_id };
	o.self.id = broker_id;
	snprintf(o.self.host, sizeof(o.self.host), "127.0.0.1");
	o.self.port = 9092;
	mirror_clear();
	int rc = ctl_open(&o, &m.c);
	if (rc == 0)
		drain();
	return rc;
}

static void close_ctl(void)
{
	ctl_close(m.c);
	m.c = NULL;
}

/* Submit op and apply events until its result; returns the result. */
static ctl_result call(const ctl_op *op)
{
	uint64_t id = ctl_submit(m.c, op);
	ck_assert_uint_gt(id, 0);
	ctl_result res;
	memset(&res, 0, sizeof(res));
	for (;;) {
		ck_assert_msg(ctl_wait_event(m.c, 5000), "no result within 5 s");
		ctl_event *e;
		bool done = false;
		while (!done && (e = ctl_next_event(m.c))) {
			done = e->type == CTL_EV_RESULT;
			apply(e, &res, id);
			ctl_event_free(e);
		}
		if (done)
			return res;
	}
}

static int create(const char *name, int32_t partitions, int16_t rf, const ctl_config_entry *cfg,
		  int32_t ncfg, bool validate_only)
{
	ctl_op op = { .type = CTL_OP_CREATE_TOPIC, .partitions = partitions,
		      .replication_factor = rf, .configs = cfg, .nconfigs = ncfg,
		      .validate_only = validate_only };
	snprintf(op.topic, sizeof(op.topic), "%s", name);
	return call(&op).error;
}

static int delete_topic(const char *name)
{
	ctl_op op = { .type = CTL_OP_DELETE_TOPIC };
	snprintf(op.topic, sizeof(op.topic), "%s", name);
	return call(&op).error;
}

static ctl_result add_partitions(const char *name, int32_t count, const ctl_replica_list *as,
				 int32_t nas, bool validate_only)
{
	ctl_op op = { .type = CTL_OP_CREATE_PARTITIONS, .partitions = count, .assignments = as,
		      .nassignments = nas, .validate_only = validate_only };
	snprintf(op.topic, sizeof(op.topic), "%s", name);
	return call(&op);
}

static int set_topic_configs(const char *name, const ctl_config_entry *cfg, int32_t n)
{
	ctl_op op = { .type = CTL_OP_SET_TOPIC_CONFIGS, .configs = cfg, .nconfigs = n };
	snprintf(op.topic, sizeof(op.topic), "%s", name);
	return call(&op).error;
}

static int set_broker_configs(int32_t id, const ctl_config_entry *cfg, int32_t n)
{
	ctl_op op = { .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = id, .configs = cfg,
		      .nconfigs = n };
	return call(&op).error;
}

static ctl_result producer_ids(void)
{
	ctl_op op = { .type = CTL_OP_PRODUCER_IDS };
	return call(&op);
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
	ck_assert(ctl_topic_names_collide("a.b", "a_b"));
	ck_assert(!ctl_topic_names_collide("a.b", "a.b"));
	ck_assert(!ctl_topic_names_collide("a.b", "a-b"));
}
END_TEST

START_TEST(test_open_events)
{
	ck_assert_int_eq(open_ctl(7), 0);
	/* one broker, itself the controller */
	ck_assert_int_eq(m.nbrokers, 1);
	ck_assert_int_eq(m.broker_ids[0], 7);
	ck_assert_int_eq(m.controller, 7);
	ck_assert_int_eq(m.ntopics, 0);
	close_ctl();
	/* zookeeper.connect chooses the ZooKeeper back end: none listens
	 * there, so no session within the connection timeout */
	ctl_options o = { .log_dir = dir, .broker_id = 1, .zookeeper_connect = "127.0.0.1:1",
			  .zookeeper_session_timeout_ms = 4000,
			  .zookeeper_connection_timeout_ms = 300 };
	ctl *c = NULL;
	ck_assert_int_eq(ctl_open(&o, &c), -ETIMEDOUT);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_create_errors)
{
	ck_assert_int_eq(open_ctl(7), 0);
	ck_assert_int_eq(create("t", 0, 1, NULL, 0, false), KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(create("t", -3, 1, NULL, 0, false), KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(create("t", 1, 2, NULL, 0, false), KERR_INVALID_REPLICATION_FACTOR);
	ck_assert_int_eq(create("t", 1, 0, NULL, 0, false), KERR_INVALID_REPLICATION_FACTOR);
	ck_assert_int_eq(create("bad name", 1, 1, NULL, 0, false), KERR_INVALID_TOPIC_EXCEPTION);
	/* validate_only changes nothing */
	ck_assert_int_eq(create("t", 1, 1, NULL, 0, true), KERR_NONE);
	ck_assert_int_eq(m.ntopics, 0);

	ck_assert_int_eq(create("a.b", 3, 1, NULL, 0, false), KERR_NONE);
	ck_assert_ptr_nonnull(find("a.b"));
	ck_assert_int_eq(create("a.b", 3, 1, NULL, 0, false), KERR_TOPIC_ALREADY_EXISTS);
	ck_assert_int_eq(create("a.b", 3, 1, NULL, 0, true), KERR_TOPIC_ALREADY_EXISTS);
	/* '.' and '_' collide (Kafka's Topic.hasCollision) */
	ck_assert_int_eq(create("a_b", 1, 1, NULL, 0, false), KERR_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(m.ntopics, 1);
	/* manual assignments: the one broker only */
	int32_t me[] = { 7 }, other[] = { 8 };
	ctl_replica_list ok[] = { { me, 1 }, { me, 1 } }, bad[] = { { other, 1 } };
	ctl_op op = { .type = CTL_OP_CREATE_TOPIC, .partitions = -1, .replication_factor = -1,
		      .assignments = ok, .nassignments = 2 };
	snprintf(op.topic, sizeof(op.topic), "manual");
	ck_assert_int_eq(call(&op).error, KERR_NONE);
	ck_assert_int_eq(find("manual")->npartitions, 2);
	op.assignments = bad;
	op.nassignments = 1;
	snprintf(op.topic, sizeof(op.topic), "manual2");
	ctl_result r = call(&op);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "The manual partition assignment includes broker 8, but no such "
			 "broker is registered.");
	close_ctl();
}
END_TEST

START_TEST(test_create_and_reopen)
{
	ck_assert_int_eq(open_ctl(3), 0);
	ctl_config_entry cfg[2] = {
		{ "retention.ms", "1000" },
		{ "cleanup.policy", "compact,delete" },
	};
	ck_assert_int_eq(create("orders", 4, 1, cfg, 2, false), 0);
	ck_assert_int_eq(create("__consumer_offsets", 2, 1, NULL, 0, false), 0);
	ck_assert_int_eq(create("odd", 1, 1, (ctl_config_entry[]){ { "x", "a b%c\n" }, { "y", "" } },
				2, false),
			 0);
	const ctl_topic *t1 = find("orders"), *t2 = find("__consumer_offsets");
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
	ck_assert_str_eq(ctl_topic_config(t1, "retention.ms"), "1000");
	ck_assert_ptr_null(ctl_topic_config(t1, "segment.ms"));
	uint8_t id1[16];
	memcpy(id1, t1->id, 16);
	close_ctl();

	ck_assert_int_eq(open_ctl(3), 0);
	ck_assert_int_eq(m.ntopics, 3);
	ck_assert_str_eq(m.topics[0]->name, "orders"); /* creation order */
	t1 = find("orders");
	ck_assert(memcmp(t1->id, id1, 16) == 0);
	ck_assert_int_eq(t1->npartitions, 4);
	ck_assert_int_eq(t1->partitions[3].leader, 3);
	ck_assert_str_eq(ctl_topic_config(t1, "cleanup.policy"), "compact,delete");
	ck_assert(find("__consumer_offsets")->internal);
	const ctl_topic *t3 = find("odd");
	ck_assert_str_eq(ctl_topic_config(t3, "x"), "a b%c\n");
	ck_assert_str_eq(ctl_topic_config(t3, "y"), "");
	close_ctl();
}
END_TEST

START_TEST(test_delete)
{
	char name[32];
	ck_assert_int_eq(open_ctl(0), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "topic-%d", i);
		ck_assert_int_eq(create(name, 1, 1, NULL, 0, false), 0);
	}
	ck_assert_int_eq(delete_topic("nope"), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(delete_topic("topic-7"), 0);
	ck_assert_int_eq(m.deleted_events, 1);
	ck_assert_int_eq(delete_topic("topic-7"), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_ptr_null(find("topic-7"));
	ck_assert_int_eq(m.ntopics, 39);
	close_ctl();
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.ntopics, 39);
	ck_assert_ptr_null(find("topic-7"));
	ck_assert_ptr_nonnull(find("topic-8"));
	/* a deleted name can be created again, with a new id */
	ck_assert_int_eq(create("topic-7", 2, 1, NULL, 0, false), 0);
	close_ctl();
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
		ck_assert_msg(open_ctl(0) < 0, "case %zu accepted", i);
		ck_assert_ptr_null(m.c);
	}
	FILE *f = fopen(path, "w");
	fputs("samsa-metadata 1\ntopic t 0123456789abcdef0123456789abcdef 0 1 1 0\n"
	      "partition 0 0 0 1 0 1 0\nend\n", f);
	fclose(f);
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.ntopics, 1);
	close_ctl();
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
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(create("t", 2, 1, NULL, 0, false), KERR_NONE);
	/* blocks count up from 0; a block is on disk before it is handed out */
	for (int64_t i = 0; i < 2; i++) {
		ctl_result r = producer_ids();
		ck_assert_int_eq(r.error, KERR_NONE);
		ck_assert_int_eq(r.producer_id_start, i * CTL_PRODUCER_ID_BLOCK);
		ck_assert_int_eq(r.producer_id_end, (i + 1) * CTL_PRODUCER_ID_BLOCK);
		ck_assert_int_eq(file_pid_end(), r.producer_id_end);
	}
	close_ctl();

	/* a reopen continues after the last block */
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.ntopics, 1);
	ctl_result r = producer_ids();
	ck_assert_int_eq(r.producer_id_start, 2000);

	/* the next block cannot be persisted: nothing is handed out */
	char moved[PATH_MAX + 8];
	snprintf(moved, sizeof(moved), "%s.mv", dir);
	ck_assert_int_eq(rename(dir, moved), 0);
	r = producer_ids();
	ck_assert_int_eq(r.error, KERR_KAFKA_STORAGE_ERROR);
	ck_assert_int_eq(rename(moved, dir), 0);
	r = producer_ids();
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(r.producer_id_start, 3000);
	ck_assert_int_eq(file_pid_end(), 4000);
	/* creating a topic keeps the reserved block */
	ck_assert_int_eq(create("u", 1, 1, NULL, 0, false), KERR_NONE);
	ck_assert_int_eq(file_pid_end(), 4000);
	close_ctl();
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.ntopics, 2);
	ck_assert_int_eq(producer_ids().producer_id_start, 4000);
	close_ctl();
}
END_TEST

static ctl_result update_acls(int8_t type, int8_t pattern, const char *name,
			      const ctl_acl_entry *add, int32_t nadd, const ctl_acl_entry *rm,
			      int32_t nrm)
{
	ctl_op op = { .type = CTL_OP_UPDATE_ACLS, .acl_type = type, .acl_pattern = pattern,
		      .acl_name = name, .acl_add = add, .nacl_add = nadd, .acl_remove = rm,
		      .nacl_remove = nrm };
	return call(&op);
}

/* UPDATE_ACLS: stored, told, kept across a restart; removal; the same
 * change twice changes (and tells) nothing; bad types refused. */
START_TEST(test_acls)
{
	ck_assert_int_eq(open_ctl(0), 0);
	ctl_acl_entry e[2] = {
		{ .principal = "User:a b", .host = "*", .operation = CTL_ACL_OP_READ,
		  .permission = CTL_ACL_PERM_ALLOW },
		{ .principal = "User:%c", .host = "10.0.0.1", .operation = CTL_ACL_OP_ALL,
		  .permission = CTL_ACL_PERM_DENY },
	};
	ctl_result r = update_acls(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders", e, 2, NULL, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(m.acl_events, 1);
	const ctl_acl_resource *got = ctl_acl_store_find(&m.acls, CTL_ACL_RES_TOPIC,
							  CTL_ACL_PAT_PREFIXED, "or ders");
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(got->n, 2);
	r = update_acls(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders", e, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(m.acl_events, 1); /* nothing changed */
	r = update_acls(CTL_ACL_RES_GROUP, CTL_ACL_PAT_LITERAL, "g", e + 1, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	r = update_acls(CTL_ACL_RES_ANY, CTL_ACL_PAT_LITERAL, "g", e, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_REQUEST);
	r = update_acls(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_MATCH, "g", e, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_REQUEST);
	close_ctl();

	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.acl_events, 2);
	got = ctl_acl_store_find(&m.acls, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders");
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(got->n, 2);
	ck_assert(ctl_acl_entry_eq(&got->entries[0], &e[0]));
	ck_assert(ctl_acl_entry_eq(&got->entries[1], &e[1]));
	/* Remove one, then the other: the pattern goes. */
	r = update_acls(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders", NULL, 0, e, 1);
	ck_assert_int_eq(r.error, KERR_NONE);
	got = ctl_acl_store_find(&m.acls, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders");
	ck_assert_int_eq(got->n, 1);
	r = update_acls(CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED, "or ders", NULL, 0, e + 1, 1);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_ptr_null(ctl_acl_store_find(&m.acls, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_PREFIXED,
					      "or ders"));
	close_ctl();
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(m.acl_events, 1); /* the group's only */
	close_ctl();
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
		"samsa-metadata 6\nend\n",                            /* a future version */
		"samsa-metadata 4\nacl 2 3 t User:a * 3 3\nend\n",    /* v4 has none */
		"samsa-metadata 5\nacl 1 3 t User:a * 3 3\nend\n",    /* type ANY */
		"samsa-metadata 5\nacl 2 2 t User:a * 3 3\nend\n",    /* pattern MATCH */
		"samsa-metadata 5\nacl 2 3 t User:a * 1 3\nend\n",    /* operation ANY */
		"samsa-metadata 5\nacl 2 3 t User:a * 3 1\nend\n",    /* permission ANY */
		"samsa-metadata 5\nacl 2 3 t User:a *\nend\n",
		"samsa-metadata 3\nclient-config users/a k v\nend\n",  /* v3 has none */
		"samsa-metadata 4\nclient-config topics/a k v\nend\n", /* not an entity */
		"samsa-metadata 4\nclient-config users/a k\nend\n",
		"samsa-metadata 4\nclient-config users/a k v\nclient-config users/a k w\nend\n",
		"samsa-metadata 2\nbroker-config default a b\nend\n", /* v2 has none */
		"samsa-metadata 3\nbroker-config x a b\nend\n",
		"samsa-metadata 3\nbroker-config default a\nend\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(bad[i], f);
		fclose(f);
		ck_assert_msg(open_ctl(0) < 0, "case %zu accepted", i);
	}
	FILE *f = fopen(path, "w");
	fputs("samsa-metadata 2\nproducer-ids 7000\nend\n", f);
	fclose(f);
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(producer_ids().producer_id_start, 7000);
	close_ctl();
	/* a version 1 file starts at 0 */
	f = fopen(path, "w");
	fputs("samsa-metadata 1\nend\n", f);
	fclose(f);
	ck_assert_int_eq(open_ctl(0), 0);
	ck_assert_int_eq(producer_ids().producer_id_start, 0);
	ck_assert_int_eq(file_pid_end(), 1000);
	close_ctl();
}
END_TEST

/* ---- CreatePartitions ---- */

START_TEST(test_add_partitions_errors)
{
	ck_assert_int_eq(open_ctl(4), 0);
	ck_assert_int_eq(create("grow", 3, 1, NULL, 0, false), 0);

	ctl_result r = add_partitions("nope", 5, NULL, 0, false);
	ck_assert_int_eq(r.error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_str_eq(r.msg, "");
	r = add_partitions("grow", 3, NULL, 0, false);
	ck_assert_int_eq(r.error, KERR_INVALID_PARTITIONS);
	ck_assert_str_eq(r.msg, "Topic already has 3 partition(s).");
	r = add_partitions("grow", 2, NULL, 0, false);
	ck_assert_int_eq(r.error, KERR_INVALID_PARTITIONS);
	ck_assert_str_eq(r.msg, "The topic grow currently has 3 partition(s); 2 would not be an increase.");
	ck_assert_int_eq(add_partitions("grow", -1, NULL, 0, false).error, KERR_INVALID_PARTITIONS);
	ck_assert_int_eq(add_partitions("grow", INT32_MAX, NULL, 0, false).error,
			 KERR_INVALID_PARTITIONS);

	int32_t ok[] = { 4 }, unknown[] = { 9 }, twice[] = { 4, 4 }, two[] = { 4, 9 };
	ctl_replica_list one_ok[] = { { ok, 1 } };
	r = add_partitions("grow", 5, one_ok, 1, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "Attempted to add 2 additional partition(s), but only 1 "
			 "assignment(s) were specified.");
	ctl_replica_list too_many[] = { { ok, 1 }, { ok, 1 } };
	r = add_partitions("grow", 4, too_many, 2, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "Attempted to add 1 additional partition(s), but only 2 "
			 "assignment(s) were specified.");
	ctl_replica_list empty[] = { { ok, 0 } };
	r = add_partitions("grow", 4, empty, 1, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "The manual partition assignment includes an empty replica list.");
	ctl_replica_list bad[] = { { unknown, 1 } };
	r = add_partitions("grow", 4, bad, 1, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "The manual partition assignment includes broker 9, but no such "
			 "broker is registered.");
	ctl_replica_list dup[] = { { twice, 2 } };
	r = add_partitions("grow", 4, dup, 1, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "The manual partition assignment includes the broker 4 more than once.");
	/* ids are checked in ascending order: 4 passes, 9 is unknown */
	ctl_replica_list mixed[] = { { two, 2 } };
	r = add_partitions("grow", 4, mixed, 1, false);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_str_eq(r.msg, "The manual partition assignment includes broker 9, but no such "
			 "broker is registered.");
	/* the second of two lists is wrong: nothing is added */
	ctl_replica_list second_bad[] = { { ok, 1 }, { unknown, 1 } };
	ck_assert_int_eq(add_partitions("grow", 5, second_bad, 2, false).error,
			 KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(find("grow")->npartitions, 3);

	/* validate_only: every check, no change */
	r = add_partitions("grow", 6, NULL, 0, true);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_str_eq(r.msg, "");
	ck_assert_int_eq(find("grow")->npartitions, 3);
	ck_assert_int_eq(add_partitions("grow", 2, NULL, 0, true).error, KERR_INVALID_PARTITIONS);
	close_ctl();
	ck_assert_int_eq(open_ctl(4), 0);
	ck_assert_int_eq(find("grow")->npartitions, 3);
	close_ctl();
}
END_TEST

START_TEST(test_add_partitions_persist)
{
	ck_assert_int_eq(open_ctl(6), 0);
	ck_assert_int_eq(create("before", 1, 1, NULL, 0, false), 0);
	ck_assert_int_eq(create("grow", 2, 1, (ctl_config_entry[]){ { "retention.ms", "5000" } }, 1,
				false),
			 0);
	uint8_t id[16];
	memcpy(id, find("grow")->id, 16);
	/* automatic placement */
	ctl_result r = add_partitions("grow", 5, NULL, 0, false);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_str_eq(r.msg, "");
	ck_assert_int_eq(find("grow")->npartitions, 5);
	/* a manual assignment for the next one */
	int32_t ids[] = { 6 };
	ctl_replica_list as[] = { { ids, 1 } };
	ck_assert_int_eq(add_partitions("grow", 6, as, 1, false).error, KERR_NONE);
	for (int pass = 0; pass < 2; pass++) {
		const ctl_topic *t = find("grow");
		ck_assert_ptr_nonnull(t);
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
		ck_assert_int_eq(find("before")->npartitions, 1);
		/* the metadata file has them: reopen */
		close_ctl();
		ck_assert_int_eq(open_ctl(6), 0);
	}
	close_ctl();
}
END_TEST

START_TEST(test_add_partitions_storage_error)
{
	char tmp[PATH_MAX + 64];
	ck_assert_int_eq(open_ctl(1), 0);
	ck_assert_int_eq(create("grow", 2, 1, NULL, 0, false), 0);
	/* The metadata file cannot be rewritten: its .tmp is a directory. */
	snprintf(tmp, sizeof(tmp), "%s/__samsa_metadata.tmp", dir);
	ck_assert_int_eq(mkdir(tmp, 0755), 0);
	ck_assert_int_eq(add_partitions("grow", 4, NULL, 0, false).error, KERR_KAFKA_STORAGE_ERROR);
	ck_assert_int_eq(find("grow")->npartitions, 2);
	ck_assert_int_eq(create("other", 1, 1, NULL, 0, false), KERR_KAFKA_STORAGE_ERROR);
	ck_assert_ptr_null(find("other"));
	ck_assert_int_eq(rmdir(tmp), 0);
	/* memory and disk agree; a retry works */
	close_ctl();
	ck_assert_int_eq(open_ctl(1), 0);
	ck_assert_int_eq(find("grow")->npartitions, 2);
	ck_assert_int_eq(add_partitions("grow", 4, NULL, 0, false).error, KERR_NONE);
	ck_assert_int_eq(find("grow")->npartitions, 4);
	close_ctl();
}
END_TEST

/* Topic configs and the dynamic broker configs: replaced as a whole,
 * persisted, read back after a reopen. */
START_TEST(test_set_configs_persist)
{
	ck_assert_int_eq(open_ctl(2), 0);
	ck_assert_int_eq(create("t", 1, 1, (ctl_config_entry[]){ { "retention.ms", "1" } }, 1, false),
			 0);
	ck_assert_int_eq(set_topic_configs("nope", NULL, 0), KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(set_topic_configs("t",
					   (ctl_config_entry[]){ { "segment.ms", "5" },
								 { "cleanup.policy", "a b%\n" } },
					   2),
			 0);
	ck_assert_str_eq(ctl_topic_config(find("t"), "segment.ms"), "5");
	ck_assert_int_eq(m.nbconf[0], 0);
	ck_assert_int_eq(set_broker_configs(CTL_BROKER_DEFAULT,
					    (ctl_config_entry[]){ { "log.retention.ms", "7" },
								  { "odd key", "" } },
					    2),
			 0);
	ck_assert_int_eq(m.nbconf[0], 2);
	ck_assert_int_eq(set_broker_configs(2, (ctl_config_entry[]){ { "message.max.bytes", "9" } }, 1),
			 0);
	ck_assert_int_eq(set_broker_configs(-5, NULL, 0), KERR_INVALID_REQUEST);
	close_ctl();

	ck_assert_int_eq(open_ctl(2), 0);
	const ctl_topic *t = find("t");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->nconfigs, 2);
	ck_assert_ptr_null(ctl_topic_config(t, "retention.ms"));
	ck_assert_str_eq(ctl_topic_config(t, "segment.ms"), "5");
	ck_assert_str_eq(ctl_topic_config(t, "cleanup.policy"), "a b%\n");
	ck_assert_int_eq(m.nbconf[0], 2);
	ck_assert_str_eq(m.bconf[0][0].name, "log.retention.ms");
	ck_assert_str_eq(m.bconf[0][0].value, "7");
	ck_assert_str_eq(m.bconf[0][1].name, "odd key");
	ck_assert_str_eq(m.bconf[0][1].value, "");
	ck_assert_int_eq(m.nbconf[1], 1);
	ck_assert_str_eq(m.bconf[1][0].value, "9");
	/* Emptied sets stay empty after a reopen. */
	ck_assert_int_eq(set_broker_configs(2, NULL, 0), 0);
	ck_assert_int_eq(set_topic_configs("t", NULL, 0), 0);
	close_ctl();
	ck_assert_int_eq(open_ctl(2), 0);
	ck_assert_int_eq(m.nbconf[1], 0);
	ck_assert_int_eq(find("t")->nconfigs, 0);
	ck_assert_int_eq(m.nbconf[0], 2);
	close_ctl();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("local");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_name_rules);
	tcase_add_test(tc, test_open_events);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_create_and_reopen);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_corrupt_file);
	tcase_add_test(tc, test_producer_ids);
	tcase_add_test(tc, test_producer_ids_file);
	tcase_add_test(tc, test_acls);
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
