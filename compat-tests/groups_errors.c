/*
 * groups_errors.c - the errors a group coordinator must give (Kafka's
 * GroupCoordinator rules), each next to a request that succeeds.
 *
 * stale commit: a raw member joins (JoinGroup v5, two-step), syncs and
 * commits (OffsetCommit v7: NONE); with a generation the group never had:
 * ILLEGAL_GENERATION; with a member id the group does not know:
 * UNKNOWN_MEMBER_ID. A librdkafka consumer then joins; the raw member
 * neither rejoins nor heartbeats, is removed when its session times out,
 * and its commit (and heartbeat) with its old member id and generation get
 * UNKNOWN_MEMBER_ID; a commit with the live consumer's member id and the
 * old generation gets ILLEGAL_GENERATION.
 *
 * session timeout: with group.min.session.timeout.ms=6000 and
 * group.max.session.timeout.ms=10000, librdkafka consumers asking for 2 s
 * and 20 s get INVALID_SESSION_TIMEOUT as a consumer error and no
 * assignment, one asking for 6 s joins; raw JoinGroups with 5999 and
 * 10001 ms get INVALID_SESSION_TIMEOUT, 6000 does not.
 *
 * delete: DeleteGroups of an unknown group: GROUP_ID_NOT_FOUND; of a group
 * with a live member: NON_EMPTY_GROUP (and the member keeps its partitions);
 * once the member closed the delete succeeds.
 *
 * metadata: a commit whose metadata is offset.metadata.max.bytes (4096)
 * long is kept; one byte more: OFFSET_METADATA_TOO_LARGE and the previous
 * commit stays.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/groups_common.h"

static const char *const RANGE[] = {"range", NULL};

START_TEST(test_stale_member_commit)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "stale-topic", *group = "stale-group";
	gt_create_topic(b, topic, 2);
	gt_raw_find_coordinator(b, group);
	int fd = gt_raw_connect(b);

	/* Raw member: two-step join (KIP-394), leader, sync. */
	gt_join_result j;
	int32_t cid = gt_join_send(fd, 5, group, "", NULL, 3000, 1000, "consumer", RANGE, topic);
	gt_join_recv(fd, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == GT_MEMBER_ID_REQUIRED && j.member_id[0],
		      "first JoinGroup v5 without member id: error %d, member id \"%s\"; expected "
		      "MEMBER_ID_REQUIRED (79) with an id",
		      j.err, j.member_id);
	char m1[256];
	snprintf(m1, sizeof(m1), "%s", j.member_id);
	cid = gt_join_send(fd, 5, group, m1, NULL, 3000, 1000, "consumer", RANGE, topic);
	gt_join_recv(fd, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == 0, "JoinGroup with the given member id: error %d", j.err);
	ck_assert_str_eq(j.leader, m1);
	int32_t g1 = j.generation;
	const int32_t both[] = {0, 1};
	const int32_t *parts[] = {both};
	const int nparts[] = {2};
	const char *members[] = {m1};
	cid = gt_sync_send(fd, group, g1, m1, NULL, 1, members, topic, parts, nparts);
	uint8_t asg[256];
	ck_assert_int_eq(gt_sync_recv(fd, cid, asg, sizeof(asg), NULL, h_scaled_ms(10000)), 0);

	int16_t e = gt_commit_raw(fd, group, g1, m1, NULL, topic, 0, 1, NULL);
	ck_assert_msg(e == 0, "commit by the live member: error %d", e);
	e = gt_commit_raw(fd, group, g1 + 5, m1, NULL, topic, 0, 2, NULL);
	ck_assert_msg(e == GT_ILLEGAL_GENERATION,
		      "commit with generation %d (group at %d): error %d, expected "
		      "ILLEGAL_GENERATION (22)",
		      g1 + 5, g1, e);
	e = gt_commit_raw(fd, group, g1, "no-such-member", NULL, topic, 0, 2, NULL);
	ck_assert_msg(e == GT_UNKNOWN_MEMBER_ID,
		      "commit by an unknown member id: error %d, expected UNKNOWN_MEMBER_ID (25)", e);

	/* A real consumer joins; the raw member goes silent and is removed. */
	gt_member *c = gt_member_new(b, "c", group, topic, 2,
				     (const char *const[]){"session.timeout.ms", "6000",
							   "max.poll.interval.ms", "6000",
							   "enable.auto.commit", "false", NULL});
	gt_subscribe(c);
	long long t0 = h_now_ms();
	gt_wait_settled(&c, 1, 1, 300, 30000, "consumer after the raw member went silent");
	fprintf(stderr, "groups_errors: silent raw member (3 s session) replaced after %lld ms\n",
		h_now_ms() - t0);

	e = gt_commit_raw(fd, group, g1, m1, NULL, topic, 0, 3, NULL);
	ck_assert_msg(e == GT_UNKNOWN_MEMBER_ID,
		      "commit by a member removed after its session timeout: error %d, expected "
		      "UNKNOWN_MEMBER_ID (25)",
		      e);
	e = gt_heartbeat(fd, group, g1, m1, NULL);
	ck_assert_msg(e == GT_UNKNOWN_MEMBER_ID,
		      "heartbeat of a removed member: error %d, expected UNKNOWN_MEMBER_ID (25)", e);
	char *mid = rd_kafka_memberid(c->rk);
	ck_assert(mid && *mid);
	e = gt_commit_raw(fd, group, g1, mid, NULL, topic, 0, 3, NULL);
	ck_assert_msg(e == GT_ILLEGAL_GENERATION,
		      "commit with the live consumer's member id and the old generation %d: error "
		      "%d, expected ILLEGAL_GENERATION (22)",
		      g1, e);
	rd_kafka_mem_free(c->rk, mid);

	/* The real consumer's own commit works, and the refused ones left no trace. */
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 1)->offset = 9;
	ck_assert_int_eq(rd_kafka_commit(c->rk, l, 0), 0);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_t *admin = c_producer(b, NULL);
	int64_t off[2];
	gt_committed_admin(admin, group, topic, 2, off);
	ck_assert_msg(off[0] == 1 && off[1] == 9,
		      "committed offsets %lld %lld, expected 1 (the only accepted raw commit) and 9",
		      (long long)off[0], (long long)off[1]);
	rd_kafka_destroy(admin);

	close(fd);
	gt_close(c);
	gt_member_free(c);
	c_stop_broker(b);
}
END_TEST

/* Poll m until a consumer error arrives (or timeout_ms): its code. */
static rd_kafka_resp_err_t first_error(gt_member *m, int timeout_ms)
{
	long long deadline = h_now_ms() + h_scaled_ms(timeout_ms);
	while (!m->n_errors && h_now_ms() < deadline)
		gt_poll(m, 100);
	return m->n_errors ? m->last_err : RD_KAFKA_RESP_ERR_NO_ERROR;
}

START_TEST(test_invalid_session_timeout)
{
	h_broker *b = c_start_broker((const char *const[]){
	    "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=6000",
	    "group.max.session.timeout.ms=10000", NULL});
	const char *topic = "session-topic";
	gt_create_topic(b, topic, 2);

	gt_member *low = gt_member_new(b, "low", "session-low", topic, 2,
				       (const char *const[]){"session.timeout.ms", "2000", NULL});
	gt_member *high = gt_member_new(b, "high", "session-high", topic, 2,
					(const char *const[]){"session.timeout.ms", "20000", NULL});
	gt_member *ok = gt_member_new(b, "ok", "session-ok", topic, 2,
				      (const char *const[]){"session.timeout.ms", "6000", NULL});
	gt_subscribe(low);
	gt_subscribe(high);
	gt_subscribe(ok);
	rd_kafka_resp_err_t err = first_error(low, 15000);
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT,
		      "session.timeout.ms=2000 below group.min.session.timeout.ms=6000: consumer "
		      "error %s, expected INVALID_SESSION_TIMEOUT",
		      rd_kafka_err2name(err));
	err = first_error(high, 15000);
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT,
		      "session.timeout.ms=20000 above group.max.session.timeout.ms=10000: consumer "
		      "error %s, expected INVALID_SESSION_TIMEOUT",
		      rd_kafka_err2name(err));
	gt_wait_settled(&ok, 1, 1, 300, 20000, "session.timeout.ms=6000");
	ck_assert_msg(low->n_assign == 0 && high->n_assign == 0,
		      "a consumer with an invalid session timeout got an assignment");

	/* The same on the wire. */
	gt_raw_find_coordinator(b, "session-raw");
	int fd = gt_raw_connect(b);
	const int tries[] = {5999, 10001, 6000, 10000};
	for (int i = 0; i < 4; i++) {
		gt_join_result j;
		int32_t cid = gt_join_send(fd, 5, "session-raw", "", NULL, tries[i], 10000,
					   "consumer", RANGE, topic);
		gt_join_recv(fd, 5, cid, &j, h_scaled_ms(10000));
		if (i < 2)
			ck_assert_msg(j.err == GT_INVALID_SESSION_TIMEOUT,
				      "JoinGroup with session timeout %d ms (bounds 6000..10000): "
				      "error %d, expected INVALID_SESSION_TIMEOUT (26)",
				      tries[i], j.err);
		else
			ck_assert_msg(j.err == GT_MEMBER_ID_REQUIRED,
				      "JoinGroup with session timeout %d ms (bounds 6000..10000): "
				      "error %d, expected MEMBER_ID_REQUIRED (79)",
				      tries[i], j.err);
	}
	close(fd);

	gt_close(ok);
	gt_member_free(low);
	gt_member_free(high);
	gt_member_free(ok);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_delete_group_errors)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "busy-topic";
	gt_create_topic(b, topic, 2);
	gt_member *m = gt_member_new(b, "busy-1", "busy-group", topic, 2, NULL);
	gt_subscribe(m);
	gt_wait_settled(&m, 1, 1, 300, 30000, "busy-group");
	int events = m->n_assign + m->n_revoke;

	rd_kafka_t *admin = c_producer(b, NULL);
	rd_kafka_resp_err_t err = gt_delete_group(admin, "no-such-group");
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND,
		      "DeleteGroups of an unknown group: %s, expected GROUP_ID_NOT_FOUND",
		      rd_kafka_err2name(err));
	err = gt_delete_group(admin, "busy-group");
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP,
		      "DeleteGroups of a group with a live member: %s, expected NON_EMPTY_GROUP",
		      rd_kafka_err2name(err));
	gt_poll(m, 1000);
	ck_assert_msg(gt_count(m) == 2 && m->n_assign + m->n_revoke == events && !m->n_errors,
		      "the member was disturbed by the refused delete (%d partitions, %d new "
		      "rebalance callbacks, %d errors)",
		      gt_count(m), m->n_assign + m->n_revoke - events, m->n_errors);

	gt_close(m);
	err = gt_delete_group(admin, "busy-group");
	ck_assert_msg(err == 0, "DeleteGroups once the member left: %s", rd_kafka_err2name(err));
	err = gt_delete_group(admin, "busy-group");
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND,
		      "second DeleteGroups: %s, expected GROUP_ID_NOT_FOUND", rd_kafka_err2name(err));
	rd_kafka_destroy(admin);
	gt_member_free(m);
	c_stop_broker(b);
}
END_TEST

/* Commit offset of partition 0 with metadata of len bytes: the partition's
 * error (or the call's). */
static rd_kafka_resp_err_t commit_meta(rd_kafka_t *rk, const char *topic, int64_t offset,
				       size_t len)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, topic, 0);
	tp->offset = offset;
	tp->metadata = malloc(len);
	ck_assert(tp->metadata != NULL);
	memset(tp->metadata, 'm', len);
	tp->metadata_size = len;
	rd_kafka_resp_err_t err = rd_kafka_commit(rk, l, 0);
	if (l->elems[0].err)
		err = l->elems[0].err;
	rd_kafka_topic_partition_list_destroy(l);
	return err;
}

START_TEST(test_offset_metadata_too_large)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "meta-topic";
	gt_create_topic(b, topic, 1);
	gt_member *m = gt_member_new(b, "meta", "meta-group", topic, 1,
				     (const char *const[]){"enable.auto.commit", "false", NULL});
	rd_kafka_resp_err_t err = commit_meta(m->rk, topic, 1, 4096);
	ck_assert_msg(err == 0, "commit with 4096 bytes of metadata: %s", rd_kafka_err2name(err));
	err = commit_meta(m->rk, topic, 2, 4097);
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE,
		      "commit with 4097 bytes of metadata (offset.metadata.max.bytes=4096): %s, "
		      "expected OFFSET_METADATA_TOO_LARGE",
		      rd_kafka_err2name(err));

	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0);
	ck_assert_int_eq(rd_kafka_committed(m->rk, l, h_scaled_ms(10000)), 0);
	ck_assert_msg(l->elems[0].offset == 1 && l->elems[0].metadata_size == 4096,
		      "after the refused commit: offset %lld with %zu bytes of metadata, expected "
		      "1 with 4096",
		      (long long)l->elems[0].offset, l->elems[0].metadata_size);
	rd_kafka_topic_partition_list_destroy(l);
	gt_member_free(m);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_errors");
	TCase *tc = tcase_create("errors");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_stale_member_commit);
	tcase_add_test(tc, test_invalid_session_timeout);
	tcase_add_test(tc, test_delete_group_errors);
	tcase_add_test(tc, test_offset_metadata_too_large);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
