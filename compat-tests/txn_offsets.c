/*
 * txn_offsets.c - the group coordinator's side of transactions on raw
 * sockets: transactional offset commits (TxnOffsetCommit, KIP-98/KIP-447),
 * OffsetFetch with require_stable, and the end transaction markers written
 * to __consumer_offsets (WriteTxnMarkers v1), without the transaction
 * coordinator: the test plays it (InitProducerId with a null transactional
 * id gives a producer id, the markers are sent by hand).
 *
 *  - commit_abort: TxnOffsetCommit v3 of a new group creates it; its
 *    offsets are pending: OffsetFetch v8 and v7 with require_stable answer
 *    UNSTABLE_OFFSET_COMMIT (offset -1) for those partitions, without
 *    require_stable the committed value (-1 at first); a commit marker in
 *    another __consumer_offsets partition changes nothing, one in the
 *    group's partition makes them the committed offsets (metadata and
 *    leader epoch kept); an abort marker drops later pending ones; a plain
 *    OffsetCommit written after a transactional one wins at commit
 *    (Kafka's record offset rule); an older producer epoch is
 *    INVALID_PRODUCER_EPOCH; TxnOffsetCommit v2 (classic encoding) works.
 *  - restart: pending and committed transactional offsets survive kill -9
 *    (loading applies markers, keeps what has none as pending), and a
 *    marker after the restart still commits or aborts them.
 *  - errors: INVALID_GROUP_ID (empty group id), UNKNOWN_TOPIC_OR_PARTITION
 *    (topic, partition), ILLEGAL_GENERATION (unknown group with a
 *    generation), OFFSET_METADATA_TOO_LARGE; with a real member (JoinGroup
 *    and SyncGroup): v3 with its member id and generation is accepted,
 *    UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID otherwise,
 *    and without member id and generation it is accepted (unlike
 *    OffsetCommit).
 * Every response is parsed to its last byte.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/groups_common.h"

#define TOPIC "tin"
#define OFFSETS_PARTITIONS 3

/* The tests that play the coordinator write without a transaction, which
 * KIP-890 verification refuses: it is off for them (as it would have to
 * be on Kafka); the verification tests use VERIFY_CONF. */
static const char *const BROKER_CONF[] = {"offsets.topic.num.partitions=3",
					  "transaction.partition.verification.enable=false", NULL};
static const char *const VERIFY_CONF[] = {"offsets.topic.num.partitions=3", NULL};

/* Kafka error codes used here. */
enum {
	E_NONE = 0,
	E_UNKNOWN_TOPIC_OR_PARTITION = 3,
	E_OFFSET_METADATA_TOO_LARGE = 12,
	E_ILLEGAL_GENERATION = 22,
	E_INVALID_GROUP_ID = 24,
	E_UNKNOWN_MEMBER_ID = 25,
	E_INVALID_PRODUCER_EPOCH = 47,
	E_INVALID_TXN_STATE = 48,
	E_INVALID_PRODUCER_ID_MAPPING = 49,
	E_FENCED_INSTANCE_ID = 82,
	E_UNSTABLE_OFFSET_COMMIT = 88,
};

/* Kafka's partitionFor: abs(Java String.hashCode) % partitions (ASCII). */
static int32_t offsets_partition_of(const char *group)
{
	int32_t h = 0;
	for (const char *p = group; *p; p++)
		h = (int32_t)((uint32_t)h * 31u + (uint8_t)*p);
	int32_t a = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
	return a % OFFSETS_PARTITIONS;
}

/* ---- requests ---- */

/* InitProducerId v4 without a transactional id: a new producer id. */
static int64_t init_pid(int fd)
{
	k_init_pid r;
	int16_t err = k_init_producer_id(fd, 4, NULL, 60000, -1, -1, &r);
	ck_assert_msg(err == 0 && r.producer_id >= 0, "InitProducerId: error %d id %lld", err,
		      (long long)r.producer_id);
	return r.producer_id;
}

/* One partition to commit. */
typedef struct tpart {
	const char *topic;
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
	const char *metadata; /* NULL = null */
} tpart;

/* The group fields of a TxnOffsetCommit. */
typedef struct tgroup {
	const char *group;
	int64_t pid;
	int16_t epoch;
	int32_t generation;
	const char *member;   /* v3+ */
	const char *instance; /* v3+, NULL = null */
} tgroup;

/* TxnOffsetCommit v3 (flexible) or v2 (classic) with one topic entry per
 * part; errs[i] gets part i's error. */
static void txn_commit(int fd, int16_t ver, const tgroup *g, const tpart *p, int n, int16_t *errs)
{
	static k_wbuf body;
	body.len = 0;
	bool flex = ver >= 3;
	k_rbuf r;
	uint8_t *resp;
	if (flex) {
		kw_cstr(&body, "txn-offsets");
		kw_cstr(&body, g->group);
		kw_i64(&body, g->pid);
		kw_i16(&body, g->epoch);
		kw_i32(&body, g->generation);
		kw_cstr(&body, g->member);
		kw_cstr(&body, g->instance);
		kw_uvarint(&body, (uint64_t)n + 1);
		for (int i = 0; i < n; i++) {
			kw_cstr(&body, p[i].topic);
			kw_uvarint(&body, 2);
			kw_i32(&body, p[i].partition);
			kw_i64(&body, p[i].offset);
			kw_i32(&body, p[i].leader_epoch);
			kw_cstr(&body, p[i].metadata);
			kw_tags0(&body);
			kw_tags0(&body);
		}
		kw_tags0(&body);
		resp = k_roundtrip(fd, 28, ver, &body, &r);
	} else {
		gt_kw_str(&body, "txn-offsets");
		gt_kw_str(&body, g->group);
		kw_i64(&body, g->pid);
		kw_i16(&body, g->epoch);
		kw_i32(&body, n);
		for (int i = 0; i < n; i++) {
			gt_kw_str(&body, p[i].topic);
			kw_i32(&body, 1);
			kw_i32(&body, p[i].partition);
			kw_i64(&body, p[i].offset);
			if (ver >= 2)
				kw_i32(&body, p[i].leader_epoch);
			gt_kw_str(&body, p[i].metadata);
		}
		int32_t cid = gt_raw_send(fd, 28, ver, &body);
		resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	}
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	int64_t nt = flex ? kr_carray(&r, "topics") : kr_i32(&r, "topics");
	ck_assert_int_eq(nt, n);
	for (int i = 0; i < n; i++) {
		char name[256];
		if (flex)
			kr_cstr(&r, name, sizeof(name), "topic name");
		else
			gt_kr_str(&r, name, sizeof(name), "topic name");
		ck_assert_str_eq(name, p[i].topic);
		int64_t np = flex ? kr_carray(&r, "partitions") : kr_i32(&r, "partitions");
		ck_assert_int_eq(np, 1);
		ck_assert_int_eq(kr_i32(&r, "partition index"), p[i].partition);
		errs[i] = kr_i16(&r, "error code");
		if (flex) {
			kr_tags(&r, "partition tags");
			kr_tags(&r, "topic tags");
		}
	}
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "TxnOffsetCommit");
	free(resp);
}

/* One TxnOffsetCommit v3 of TOPIC-partition; its error. */
static int16_t txn_commit1(int fd, const tgroup *g, int32_t partition, int64_t offset)
{
	tpart p = {TOPIC, partition, offset, 5, "md"};
	int16_t err;
	txn_commit(fd, 3, g, &p, 1, &err);
	return err;
}

/* One answer of OffsetFetch. */
typedef struct fpart {
	int64_t offset;
	int32_t leader_epoch;
	char metadata[64];
	int16_t err;
} fpart;

/* OffsetFetch v8 (groups) or v7 (one group) of TOPIC partitions 0..n-1 of
 * group; out[i] gets partition i. */
static void fetch(int fd, int16_t ver, const char *group, int n, bool require_stable, fpart *out)
{
	k_wbuf body = {.len = 0};
	if (ver >= 8) {
		kw_uvarint(&body, 2);
		kw_cstr(&body, group);
	} else {
		kw_cstr(&body, group);
	}
	kw_uvarint(&body, 2);
	kw_cstr(&body, TOPIC);
	kw_uvarint(&body, (uint64_t)n + 1);
	for (int i = 0; i < n; i++)
		kw_i32(&body, i);
	kw_tags0(&body);
	if (ver >= 8)
		kw_tags0(&body); /* group tags */
	kw_u8(&body, require_stable ? 1 : 0);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 9, ver, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	if (ver >= 8) {
		ck_assert_int_eq(kr_carray(&r, "groups"), 1);
		char name[256];
		kr_cstr(&r, name, sizeof(name), "group id");
		ck_assert_str_eq(name, group);
	}
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	char name[256];
	kr_cstr(&r, name, sizeof(name), "topic name");
	ck_assert_str_eq(name, TOPIC);
	ck_assert_int_eq(kr_carray(&r, "partitions"), n);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(kr_i32(&r, "partition index"), i);
		out[i].offset = kr_i64(&r, "committed offset");
		out[i].leader_epoch = kr_i32(&r, "committed leader epoch");
		int64_t ml = kr_cstr(&r, out[i].metadata, sizeof(out[i].metadata), "metadata");
		ck_assert_int_ge(ml, 0);
		out[i].err = kr_i16(&r, "partition error");
		kr_tags(&r, "partition tags");
	}
	kr_tags(&r, "topic tags");
	ck_assert_int_eq(kr_i16(&r, "group error"), 0);
	if (ver >= 8)
		kr_tags(&r, "group tags");
	kr_tags(&r, "tags");
	kr_done(&r, "OffsetFetch");
	free(resp);
}

/* Check partition p of group: with require_stable (v8 and v7) and without. */
static void expect(int fd, const char *group, int32_t p, int64_t committed, bool pending)
{
	fpart f[4];
	for (int16_t ver = 7; ver <= 8; ver++) {
		fetch(fd, ver, group, p + 1, true, f);
		if (pending) {
			ck_assert_msg(f[p].err == E_UNSTABLE_OFFSET_COMMIT && f[p].offset == -1 &&
					      f[p].leader_epoch == -1 && f[p].metadata[0] == '\0',
				      "%s-%d v%d require_stable: error %d offset %lld, want "
				      "UNSTABLE_OFFSET_COMMIT -1",
				      TOPIC, p, ver, f[p].err, (long long)f[p].offset);
		} else {
			ck_assert_msg(f[p].err == E_NONE && f[p].offset == committed,
				      "%s-%d v%d require_stable: error %d offset %lld, want %lld", TOPIC,
				      p, ver, f[p].err, (long long)f[p].offset, (long long)committed);
		}
	}
	fetch(fd, 8, group, p + 1, false, f);
	ck_assert_msg(f[p].err == E_NONE && f[p].offset == committed,
		      "%s-%d: error %d offset %lld, want %lld", TOPIC, p, f[p].err,
		      (long long)f[p].offset, (long long)committed);
	if (committed >= 0) {
		ck_assert_str_eq(f[p].metadata, "md");
		ck_assert_int_eq(f[p].leader_epoch, 5);
	}
}

/* WriteTxnMarkers v1 of one marker to __consumer_offsets-partition. */
static int16_t marker(int fd, int64_t pid, int16_t epoch, bool commit, int32_t partition)
{
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, 2);
	kw_i64(&body, pid);
	kw_i16(&body, epoch);
	kw_u8(&body, commit ? 1 : 0);
	kw_uvarint(&body, 2);
	kw_cstr(&body, "__consumer_offsets");
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_tags0(&body);
	kw_i32(&body, 0); /* coordinator epoch */
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 27, 1, &body, &r);
	ck_assert_int_eq(kr_carray(&r, "markers"), 1);
	ck_assert_int_eq(kr_i64(&r, "producer id"), pid);
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	char name[64];
	kr_cstr(&r, name, sizeof(name), "topic name");
	ck_assert_str_eq(name, "__consumer_offsets");
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	ck_assert_int_eq(kr_i32(&r, "partition index"), partition);
	int16_t err = kr_i16(&r, "error code");
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "marker tags");
	kr_tags(&r, "tags");
	kr_done(&r, "WriteTxnMarkers v1");
	free(resp);
	return err;
}

/* OffsetCommit v8 (flexible) of TOPIC-partition, generation -1, no member. */
static int16_t plain_commit(int fd, const char *group, int32_t partition, int64_t offset)
{
	k_wbuf body = {.len = 0};
	kw_cstr(&body, group);
	kw_i32(&body, -1);
	kw_cstr(&body, "");
	kw_cstr(&body, NULL);
	kw_uvarint(&body, 2);
	kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_i64(&body, offset);
	kw_i32(&body, 5);
	kw_cstr(&body, "md");
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 8, 8, &body, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	kr_cstr(&r, NULL, 0, "topic name");
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	ck_assert_int_eq(kr_i32(&r, "partition index"), partition);
	int16_t err = kr_i16(&r, "error code");
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "tags");
	kr_done(&r, "OffsetCommit v8");
	free(resp);
	return err;
}

/* InitProducerId v4 of transactional id txn: *pid and *epoch. */
static void init_txn(int fd, const char *txn, int64_t *pid, int16_t *epoch)
{
	k_init_pid r;
	int16_t err = k_init_producer_id(fd, 4, txn, 60000, -1, -1, &r);
	ck_assert_msg(err == 0 && r.producer_id >= 0, "InitProducerId %s: error %d", txn, err);
	*pid = r.producer_id;
	*epoch = r.producer_epoch;
}

/* AddOffsetsToTxn v3 (key 25) or EndTxn v3 (key 26, commit): the error. */
static int16_t txn_call(int fd, int16_t key, const char *txn, int64_t pid, int16_t epoch,
			const char *group, bool commit)
{
	k_wbuf body = {.len = 0};
	kw_cstr(&body, txn);
	kw_i64(&body, pid);
	kw_i16(&body, epoch);
	if (key == 25)
		kw_cstr(&body, group);
	else
		kw_u8(&body, commit ? 1 : 0);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, key, 3, &body, &r);
	kr_i32(&r, "throttle");
	int16_t err = kr_i16(&r, "error code");
	kr_tags(&r, "tags");
	kr_done(&r, key == 25 ? "AddOffsetsToTxn v3" : "EndTxn v3");
	free(resp);
	return err;
}

static h_broker *start(int *fd)
{
	h_broker *b = gt_start_broker(BROKER_CONF);
	gt_create_topic(b, TOPIC, 4);
	*fd = gt_raw_connect(b);
	return b;
}

/* ---- tests ---- */

START_TEST(test_commit_abort)
{
	int fd;
	h_broker *b = start(&fd);
	const char *group = "txn-group-a";
	int32_t part = offsets_partition_of(group);
	int64_t pid = init_pid(fd);
	tgroup g = {group, pid, 0, -1, "", NULL};

	/* Pending in a group that did not exist. */
	tpart parts[] = {{TOPIC, 0, 10, 5, "md"}, {TOPIC, 1, 20, 5, "md"}};
	int16_t errs[2];
	txn_commit(fd, 3, &g, parts, 2, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	ck_assert_int_eq(errs[1], E_NONE);
	expect(fd, group, 0, -1, true);
	expect(fd, group, 1, -1, true);
	expect(fd, group, 2, -1, false);

	/* A marker in another __consumer_offsets partition: still pending. */
	ck_assert_int_eq(marker(fd, pid, 0, true, (part + 1) % OFFSETS_PARTITIONS), E_NONE);
	expect(fd, group, 0, -1, true);

	/* The commit marker in the group's partition. */
	ck_assert_int_eq(marker(fd, pid, 0, true, part), E_NONE);
	expect(fd, group, 0, 10, false);
	expect(fd, group, 1, 20, false);

	/* Abort: pending, then dropped. */
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 30), E_NONE);
	expect(fd, group, 0, 10, true);
	ck_assert_int_eq(marker(fd, pid, 0, false, part), E_NONE);
	expect(fd, group, 0, 10, false);

	/* A plain commit after the transactional one wins at commit; the
	 * other partition of the same transaction is committed. */
	tpart two[] = {{TOPIC, 1, 40, 5, "md"}, {TOPIC, 2, 41, 5, "md"}};
	txn_commit(fd, 3, &g, two, 2, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	ck_assert_int_eq(plain_commit(fd, group, 1, 50), E_NONE);
	expect(fd, group, 1, 50, true);
	ck_assert_int_eq(marker(fd, pid, 0, true, part), E_NONE);
	expect(fd, group, 1, 50, false);
	expect(fd, group, 2, 41, false);

	/* A newer epoch fences the older one. */
	g.epoch = 1;
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 60), E_NONE);
	g.epoch = 0;
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 61), E_INVALID_PRODUCER_EPOCH);
	expect(fd, group, 0, 10, true);
	ck_assert_int_eq(marker(fd, pid, 1, true, part), E_NONE);
	expect(fd, group, 0, 60, false);

	/* TxnOffsetCommit v2 (classic encoding, request header v1). */
	g.epoch = 1;
	tpart p3 = {TOPIC, 3, 70, 5, "md"};
	txn_commit(fd, 2, &g, &p3, 1, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	expect(fd, group, 3, -1, true);
	ck_assert_int_eq(marker(fd, pid, 1, true, part), E_NONE);
	expect(fd, group, 3, 70, false);

	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_restart)
{
	int fd;
	h_broker *b = start(&fd);
	const char *group = "txn-group-r";
	int32_t part = offsets_partition_of(group);
	int64_t pid = init_pid(fd);
	int64_t pid2 = init_pid(fd);
	tgroup g = {group, pid, 0, -1, "", NULL};
	tgroup g2 = {group, pid2, 0, -1, "", NULL};

	/* Committed (pid), aborted (pid2), then open ones of both. */
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 100), E_NONE);
	ck_assert_int_eq(marker(fd, pid, 0, true, part), E_NONE);
	ck_assert_int_eq(txn_commit1(fd, &g2, 1, 999), E_NONE);
	ck_assert_int_eq(marker(fd, pid2, 0, false, part), E_NONE);
	ck_assert_int_eq(txn_commit1(fd, &g, 2, 200), E_NONE);
	ck_assert_int_eq(txn_commit1(fd, &g2, 3, 300), E_NONE);
	expect(fd, group, 0, 100, false);
	expect(fd, group, 1, -1, false);
	expect(fd, group, 2, -1, true);
	expect(fd, group, 3, -1, true);
	close(fd);

	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	fd = gt_raw_connect(b);
	expect(fd, group, 0, 100, false);
	expect(fd, group, 1, -1, false);
	expect(fd, group, 2, -1, true);
	expect(fd, group, 3, -1, true);

	/* The markers after the restart finish them. */
	ck_assert_int_eq(marker(fd, pid, 0, true, part), E_NONE);
	ck_assert_int_eq(marker(fd, pid2, 0, false, part), E_NONE);
	expect(fd, group, 2, 200, false);
	expect(fd, group, 3, -1, false);
	close(fd);

	/* And the outcome survives another kill -9. */
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	fd = gt_raw_connect(b);
	expect(fd, group, 0, 100, false);
	expect(fd, group, 1, -1, false);
	expect(fd, group, 2, 200, false);
	expect(fd, group, 3, -1, false);
	close(fd);
	c_stop_broker(b);
}
END_TEST

static const char *const RANGE[] = {"range", NULL};

START_TEST(test_errors)
{
	int fd;
	h_broker *b = start(&fd);
	int64_t pid = init_pid(fd);
	int16_t errs[3];

	tgroup empty = {"", pid, 0, -1, "", NULL};
	tpart p0 = {TOPIC, 0, 1, -1, NULL};
	txn_commit(fd, 3, &empty, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_INVALID_GROUP_ID);

	tgroup g = {"txn-group-e", pid, 0, -1, "", NULL};
	tpart bad[] = {{"no-such-topic", 0, 1, -1, NULL}, {TOPIC, 99, 1, -1, NULL}, {TOPIC, 0, 1, -1, NULL}};
	txn_commit(fd, 3, &g, bad, 3, errs);
	ck_assert_int_eq(errs[0], E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(errs[1], E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(errs[2], E_NONE);

	static char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	tpart large = {TOPIC, 1, 1, -1, big};
	txn_commit(fd, 3, &g, &large, 1, errs);
	ck_assert_int_eq(errs[0], E_OFFSET_METADATA_TOO_LARGE);

	tgroup unknown = {"txn-group-unknown", pid, 0, 3, "", NULL};
	txn_commit(fd, 3, &unknown, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_ILLEGAL_GENERATION);
	/* The group was not created by that. */
	fpart f[1];
	fetch(fd, 8, "txn-group-unknown", 1, true, f);
	ck_assert_int_eq(f[0].offset, -1);
	ck_assert_int_eq(f[0].err, E_NONE);

	/* A group with a static member (JoinGroup v5 + SyncGroup). */
	gt_join_result j;
	int32_t cid = gt_join_send(fd, 5, "txn-group-m", "", "inst-1", 6000, 5000, "consumer", RANGE,
				   TOPIC);
	gt_join_recv(fd, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_int_eq(j.err, E_NONE);
	const int32_t all[] = {0, 1, 2, 3};
	const int32_t *asg[] = {all};
	const int nasg[] = {4};
	const char *members[] = {j.member_id};
	cid = gt_sync_send(fd, "txn-group-m", j.generation, j.member_id, "inst-1", 1, members, TOPIC,
			   asg, nasg);
	uint8_t out[256];
	int32_t outlen;
	ck_assert_int_eq(gt_sync_recv(fd, cid, out, sizeof(out), &outlen, h_scaled_ms(10000)), E_NONE);

	tgroup m = {"txn-group-m", pid, 0, j.generation, j.member_id, "inst-1"};
	txn_commit(fd, 3, &m, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	m.generation = j.generation + 1;
	txn_commit(fd, 3, &m, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_ILLEGAL_GENERATION);
	m.generation = j.generation;
	m.member = "someone-else";
	txn_commit(fd, 3, &m, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_FENCED_INSTANCE_ID);
	m.instance = NULL;
	txn_commit(fd, 3, &m, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_UNKNOWN_MEMBER_ID);
	/* No member id and generation: accepted, although the group has a
	 * member (a plain OffsetCommit is UNKNOWN_MEMBER_ID there). */
	tgroup anon = {"txn-group-m", pid, 0, -1, "", NULL};
	txn_commit(fd, 3, &anon, &p0, 1, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	ck_assert_int_eq(plain_commit(fd, "txn-group-m", 0, 5), E_UNKNOWN_MEMBER_ID);

	close(fd);
	c_stop_broker(b);
}
END_TEST

/* KIP-890 verification (KAFKA-15449): a commit for a group never added
 * with AddOffsetsToTxn, from a producer id the transactional id does not
 * have, or after the transaction ended, is refused and writes nothing. */
START_TEST(test_verification)
{
	h_broker *b = gt_start_broker(VERIFY_CONF);
	gt_create_topic(b, TOPIC, 4);
	int fd = gt_raw_connect(b);
	const char *group = "txn-group-v";
	int64_t pid;
	int16_t epoch;
	init_txn(fd, "txn-offsets", &pid, &epoch);
	tgroup g = {group, pid, epoch, -1, "", NULL};

	/* never added: INVALID_TXN_STATE (v3: Kafka's default error) */
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 10), E_INVALID_TXN_STATE);
	expect(fd, group, 0, -1, false);
	/* another producer id */
	tgroup other = {group, pid + 1000, epoch, -1, "", NULL};
	ck_assert_int_eq(txn_commit1(fd, &other, 0, 11), E_INVALID_PRODUCER_ID_MAPPING);
	/* added: accepted and pending */
	ck_assert_int_eq(txn_call(fd, 25, "txn-offsets", pid, epoch, group, false), E_NONE);
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 12), E_NONE);
	expect(fd, group, 0, -1, true);
	/* an older epoch: INVALID_PRODUCER_EPOCH */
	tgroup old = {group, pid, (int16_t)(epoch - 1), -1, "", NULL};
	if (epoch > 0)
		ck_assert_int_eq(txn_commit1(fd, &old, 1, 13), E_INVALID_PRODUCER_EPOCH);
	ck_assert_int_eq(txn_call(fd, 26, "txn-offsets", pid, epoch, NULL, true), E_NONE);
	expect(fd, group, 0, 12, false);
	/* after the commit: not in a transaction any more */
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 14), E_INVALID_TXN_STATE);
	expect(fd, group, 0, 12, false);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* Pending offsets no coordinator will end (written with verification off)
 * are aborted at start-up with verification on, with a warning naming the
 * group and producer id. */
START_TEST(test_orphans_dropped)
{
	int fd;
	h_broker *b = start(&fd); /* verification off */
	const char *group = "txn-group-o";
	int64_t pid = init_pid(fd);
	tgroup g = {group, pid, 0, -1, "", NULL};
	ck_assert_int_eq(txn_commit1(fd, &g, 0, 50), E_NONE);
	expect(fd, group, 0, -1, true);
	close(fd);
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)) != -1, 1);

	h_broker *b2 = h_broker_new_same_dir(b, VERIFY_CONF);
	ck_assert(b2 != NULL);
	ck_assert_int_eq(h_broker_start(b2), 0);
	fd = gt_raw_connect(b2);
	expect(fd, group, 0, -1, false);
	close(fd);
	char *log = h_broker_read_log(b2);
	char want[128];
	snprintf(want, sizeof(want), "group '%s' producer id %lld", group, (long long)pid);
	ck_assert_msg(log && strstr(log, want), "no pending warning naming %s: %s", want,
		      log ? log : "");
	snprintf(want, sizeof(want), "group '%s' (producer id %lld) aborted", group, (long long)pid);
	ck_assert_msg(strstr(log, want), "no abort warning %s: %s", want, log);
	free(log);
	c_stop_broker(b2);
	h_broker_free(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("txn_offsets");
	TCase *tc = tcase_create("txn_offsets");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_commit_abort);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_verification);
	tcase_add_test(tc, test_orphans_dropped);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
