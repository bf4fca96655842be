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
 *
 * empty group id: OffsetCommit (v7) and OffsetFetch (v5) accept the group
 * id "" (Kafka 4.x GroupCoordinatorService.commitOffsets / fetchOffsets
 * refuse only a null id, "for backwards compatibility"): the commit is
 * NONE and the fetch gives it back; OffsetDelete of "" is INVALID_GROUP_ID
 * (deleteOffsets refuses an empty id too).
 *
 * records too large for __consumer_offsets (max.message.bytes, the
 * broker's message.max.bytes 1048588 by default): a leader's SyncGroup
 * with a 20 MB assignment and one just above the limit fail with
 * UNKNOWN_SERVER_ERROR for the leader and the waiting follower, nothing is
 * appended to __consumer_offsets, the group is rebalancing (heartbeat:
 * REBALANCE_IN_PROGRESS), and after a rejoin a small assignment is
 * accepted. With offset.metadata.max.bytes raised, an OffsetCommit whose
 * batch is above the limit fails with UNKNOWN_SERVER_ERROR (Kafka 4.x's
 * coordinator maps RecordTooLargeException so for every write) and the
 * previous commit stays.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/groups_common.h"
#include "compat-tests/wire.h"

enum { GT_UNKNOWN_SERVER_ERROR = -1, GT_INVALID_GROUP_ID = 24 };

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

/* ---- request bodies of any size (k_wbuf holds 64 KiB) ---- */

typedef struct big_buf {
	uint8_t *b;
	size_t len, cap;
} big_buf;

static void bb_need(big_buf *w, size_t n)
{
	if (w->len + n <= w->cap)
		return;
	size_t cap = w->cap ? w->cap : 256;
	while (cap < w->len + n)
		cap *= 2;
	w->b = realloc(w->b, cap);
	ck_assert(w->b != NULL);
	w->cap = cap;
}

static void bb_raw(big_buf *w, const void *p, size_t n)
{
	bb_need(w, n);
	if (n)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void bb_be(big_buf *w, uint64_t v, int bytes)
{
	uint8_t t[8];
	for (int i = 0; i < bytes; i++)
		t[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	bb_raw(w, t, (size_t)bytes);
}

static void bb_i16(big_buf *w, int16_t v) { bb_be(w, (uint16_t)v, 2); }
static void bb_i32(big_buf *w, int32_t v) { bb_be(w, (uint32_t)v, 4); }
static void bb_i64(big_buf *w, int64_t v) { bb_be(w, (uint64_t)v, 8); }

/* Classic string (NULL = null). */
static void bb_str(big_buf *w, const char *s)
{
	if (!s) {
		bb_i16(w, -1);
		return;
	}
	bb_i16(w, (int16_t)strlen(s));
	bb_raw(w, s, strlen(s));
}

/* Classic string of n copies of c. */
static void bb_fill_str(big_buf *w, char c, size_t n)
{
	bb_i16(w, (int16_t)n);
	bb_need(w, n);
	memset(w->b + w->len, c, n);
	w->len += n;
}

/* Classic bytes: n bytes of value c. */
static void bb_fill_bytes(big_buf *w, uint8_t c, size_t n)
{
	bb_i32(w, (int32_t)n);
	bb_need(w, n);
	memset(w->b + w->len, c, n);
	w->len += n;
}

static int32_t big_cid = 500000;

/* Send the body with request header v1; returns the correlation id. */
static int32_t bb_send(int fd, int16_t key, int16_t ver, const big_buf *body)
{
	size_t cap = body->len + 128;
	uint8_t *frame = malloc(cap);
	ck_assert(frame != NULL);
	int32_t cid = big_cid++;
	int len = w_build_request(frame, cap, key, ver, cid, "gt-big", body->b, body->len);
	ck_assert(len > 0);
	int rc = w_send_all(fd, frame, (size_t)len, h_scaled_ms(20000));
	free(frame);
	ck_assert_msg(rc == 0, "api %d v%d: sending %zu bytes failed (%d)", key, ver, body->len, rc);
	return cid;
}

/* ---- empty group id ---- */

/* OffsetFetch v5 of one partition: top-level error; *offset and
 * *part_err get the partition's answer. */
static int16_t fetch_v5(int fd, const char *group, const char *topic, int32_t partition,
			int64_t *offset, int16_t *part_err)
{
	big_buf w = {0};
	bb_str(&w, group);
	bb_i32(&w, 1);
	bb_str(&w, topic);
	bb_i32(&w, 1);
	bb_i32(&w, partition);
	int32_t cid = bb_send(fd, 9, 5, &w);
	free(w.b);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	kr_i32(&r, "throttle_time_ms");
	int32_t nt = kr_i32(&r, "topics count");
	*offset = -2;
	*part_err = -2;
	for (int32_t t = 0; t < nt; t++) {
		char name[256];
		gt_kr_str(&r, name, sizeof(name), "topic name");
		int32_t np = kr_i32(&r, "partitions count");
		for (int32_t p = 0; p < np; p++) {
			int32_t idx = kr_i32(&r, "partition_index");
			int64_t off = kr_i64(&r, "committed_offset");
			kr_i32(&r, "committed_leader_epoch");
			gt_kr_str(&r, NULL, 0, "metadata");
			int16_t e = kr_i16(&r, "error_code");
			if (strcmp(name, topic) == 0 && idx == partition) {
				*offset = off;
				*part_err = e;
			}
		}
	}
	int16_t err = kr_i16(&r, "error_code");
	kr_done(&r, "OffsetFetch v5 response");
	free(resp);
	return err;
}

/* OffsetDelete v0 of one partition: the top-level error. */
static int16_t offset_delete_v0(int fd, const char *group, const char *topic, int32_t partition)
{
	big_buf w = {0};
	bb_str(&w, group);
	bb_i32(&w, 1);
	bb_str(&w, topic);
	bb_i32(&w, 1);
	bb_i32(&w, partition);
	int32_t cid = bb_send(fd, 47, 0, &w);
	free(w.b);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	int16_t err = kr_i16(&r, "error_code");
	free(resp);
	return err;
}

START_TEST(test_empty_group_id)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "eg-topic";
	gt_create_topic(b, topic, 2);
	int fd = gt_raw_connect(b);

	int16_t e = gt_commit_raw(fd, "", -1, "", NULL, topic, 1, 42, "m");
	ck_assert_msg(e == GT_NONE,
		      "OffsetCommit v7 with group id \"\": error %d, expected NONE (Kafka refuses "
		      "only a null group id)",
		      e);
	int64_t off;
	int16_t perr;
	e = fetch_v5(fd, "", topic, 1, &off, &perr);
	ck_assert_msg(e == GT_NONE && perr == GT_NONE && off == 42,
		      "OffsetFetch v5 of group \"\": error %d, partition error %d, offset %lld; "
		      "expected NONE and 42",
		      e, perr, (long long)off);
	e = fetch_v5(fd, "", topic, 0, &off, &perr);
	ck_assert_msg(e == GT_NONE && perr == GT_NONE && off == -1,
		      "OffsetFetch v5 of group \"\", partition without a commit: error %d, "
		      "partition error %d, offset %lld; expected NONE and -1",
		      e, perr, (long long)off);
	e = offset_delete_v0(fd, "", topic, 1);
	ck_assert_msg(e == GT_INVALID_GROUP_ID,
		      "OffsetDelete of group \"\": error %d, expected INVALID_GROUP_ID (24)", e);
	e = fetch_v5(fd, "", topic, 1, &off, &perr);
	ck_assert_msg(e == GT_NONE && off == 42,
		      "after the refused OffsetDelete: error %d, offset %lld, expected 42", e,
		      (long long)off);

	/* A named group is not affected by the "" group. */
	e = fetch_v5(fd, "eg-other", topic, 1, &off, &perr);
	ck_assert_msg(e == GT_NONE && off == -1, "OffsetFetch of another group: error %d, offset %lld",
		      e, (long long)off);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* ---- records too large for __consumer_offsets ---- */

/* Sum of the high watermarks of every __consumer_offsets partition. */
static int64_t offsets_topic_end(const h_broker *b)
{
	rd_kafka_t *rk = c_producer(b, NULL);
	const struct rd_kafka_metadata *md = c_metadata_all(rk);
	int np = -1;
	for (int i = 0; i < md->topic_cnt; i++)
		if (strcmp(md->topics[i].topic, "__consumer_offsets") == 0)
			np = md->topics[i].partition_cnt;
	rd_kafka_metadata_destroy(md);
	ck_assert_msg(np > 0, "__consumer_offsets is not in the metadata");
	int64_t sum = 0;
	for (int p = 0; p < np; p++) {
		int64_t lo, hi;
		rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
		    rk, "__consumer_offsets", p, &lo, &hi, h_scaled_ms(10000));
		ck_assert_msg(err == 0, "watermarks of __consumer_offsets-%d: %s", p,
			      rd_kafka_err2name(err));
		sum += hi;
	}
	rd_kafka_destroy(rk);
	return sum;
}

/* SyncGroup v3 of the leader giving itself and the follower (may be NULL)
 * an assignment: big_len bytes of 'x' for the leader, a small one for the
 * follower. Returns the correlation id. */
static int32_t sync_big(int fd, const char *group, int32_t gen, const char *leader,
			const char *follower, size_t big_len)
{
	big_buf w = {0};
	bb_str(&w, group);
	bb_i32(&w, gen);
	bb_str(&w, leader);
	bb_str(&w, NULL);
	bb_i32(&w, follower ? 2 : 1);
	bb_str(&w, leader);
	bb_fill_bytes(&w, 'x', big_len);
	if (follower) {
		bb_str(&w, follower);
		bb_fill_bytes(&w, 'y', 16);
	}
	int32_t cid = bb_send(fd, 14, 3, &w);
	free(w.b);
	return cid;
}

/* Both members join (again) with v3; the results in *a (fd1) and *c (fd2). */
static void join_both(int fd1, int fd2, const char *group, const char *m1, const char *m2,
		      const char *topic, gt_join_result *a, gt_join_result *c)
{
	int32_t c1 = gt_join_send(fd1, 3, group, m1, NULL, 10000, 10000, "consumer", RANGE, topic);
	int32_t c2 = gt_join_send(fd2, 3, group, m2, NULL, 10000, 10000, "consumer", RANGE, topic);
	gt_join_recv(fd1, 3, c1, a, h_scaled_ms(15000));
	gt_join_recv(fd2, 3, c2, c, h_scaled_ms(15000));
	ck_assert_msg(a->err == 0 && c->err == 0 && a->generation == c->generation,
		      "JoinGroup: errors %d and %d, generations %d and %d", a->err, c->err,
		      a->generation, c->generation);
}

START_TEST(test_records_too_large)
{
	h_broker *b = gt_start_broker((const char *const[]){"offset.metadata.max.bytes=40000",
							  NULL});
	const char *topic = "big-topic", *group = "big-group";
	gt_create_topic(b, topic, 2);
	gt_raw_find_coordinator(b, group);
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);

	/* Two members (v3: ids at once). */
	gt_join_result j1, j2;
	int32_t cid = gt_join_send(fd1, 3, group, "", NULL, 10000, 10000, "consumer", RANGE, topic);
	gt_join_recv(fd1, 3, cid, &j1, h_scaled_ms(10000));
	ck_assert_int_eq(j1.err, 0);
	char m1[256], m2[256];
	snprintf(m1, sizeof(m1), "%s", j1.member_id);
	int32_t cid2 = gt_join_send(fd2, 3, group, "", NULL, 10000, 10000, "consumer", RANGE, topic);
	cid = gt_join_send(fd1, 3, group, m1, NULL, 10000, 10000, "consumer", RANGE, topic);
	gt_join_recv(fd1, 3, cid, &j1, h_scaled_ms(15000));
	gt_join_recv(fd2, 3, cid2, &j2, h_scaled_ms(15000));
	ck_assert_msg(j1.err == 0 && j2.err == 0, "JoinGroup of two members: errors %d and %d",
		      j1.err, j2.err);
	snprintf(m2, sizeof(m2), "%s", j2.member_id);

	/* 20 MB, then just above max.message.bytes (1048588): each refused. */
	const size_t sizes[] = {20u << 20, 1048588};
	for (int round = 0; round < 2; round++) {
		int lead1 = strcmp(j1.leader, m1) == 0;
		int lfd = lead1 ? fd1 : fd2, ffd = lead1 ? fd2 : fd1;
		const char *leader = lead1 ? m1 : m2, *follower = lead1 ? m2 : m1;
		int32_t gen = j1.generation;
		int64_t end0 = offsets_topic_end(b);
		int32_t fcid = gt_sync_send(ffd, group, gen, follower, NULL, 0, NULL, topic, NULL, NULL);
		ck_assert(gt_raw_pending(ffd, 200));
		int32_t lcid = sync_big(lfd, group, gen, leader, follower, sizes[round]);
		uint8_t asg[64];
		int32_t alen;
		int16_t le = gt_sync_recv(lfd, lcid, asg, sizeof(asg), &alen, h_scaled_ms(20000));
		int16_t fe = gt_sync_recv(ffd, fcid, asg, sizeof(asg), &alen, h_scaled_ms(20000));
		ck_assert_msg(le == GT_UNKNOWN_SERVER_ERROR && fe == GT_UNKNOWN_SERVER_ERROR,
			      "SyncGroup with a %zu-byte assignment: leader error %d, follower error "
			      "%d; expected UNKNOWN_SERVER_ERROR (-1) for both",
			      sizes[round], le, fe);
		int64_t end1 = offsets_topic_end(b);
		ck_assert_msg(end1 == end0,
			      "__consumer_offsets grew by %lld records on a refused SyncGroup",
			      (long long)(end1 - end0));
		int16_t e = gt_heartbeat(fd1, group, gen, m1, NULL);
		ck_assert_msg(e == GT_REBALANCE_IN_PROGRESS,
			      "heartbeat after the refused SyncGroup: %d, expected "
			      "REBALANCE_IN_PROGRESS (27)",
			      e);
		join_both(fd1, fd2, group, m1, m2, topic, &j1, &j2);
		ck_assert_msg(j1.generation == gen + 1, "generation %d after the rejoin, expected %d",
			      j1.generation, gen + 1);
	}

	/* A small assignment is stored. */
	{
		int lead1 = strcmp(j1.leader, m1) == 0;
		int lfd = lead1 ? fd1 : fd2, ffd = lead1 ? fd2 : fd1;
		const char *leader = lead1 ? m1 : m2, *follower = lead1 ? m2 : m1;
		int64_t end0 = offsets_topic_end(b);
		int32_t fcid = gt_sync_send(ffd, group, j1.generation, follower, NULL, 0, NULL, topic,
					    NULL, NULL);
		int32_t lcid = sync_big(lfd, group, j1.generation, leader, follower, 1000);
		uint8_t asg[64];
		int32_t alen;
		int16_t le = gt_sync_recv(lfd, lcid, asg, sizeof(asg), &alen, h_scaled_ms(10000));
		int16_t fe = gt_sync_recv(ffd, fcid, asg, sizeof(asg), &alen, h_scaled_ms(10000));
		ck_assert_msg(le == 0 && fe == 0 && alen == 16,
			      "SyncGroup with a small assignment: errors %d and %d, follower got %d "
			      "bytes",
			      le, fe, alen);
		ck_assert_msg(offsets_topic_end(b) == end0 + 1,
			      "the stored assignment is not one record in __consumer_offsets");
		ck_assert_int_eq(gt_heartbeat(fd1, group, j1.generation, m1, NULL), 0);
	}

	/* An offset commit whose batch is too large (40 records of 30000 bytes
	 * of metadata, each below offset.metadata.max.bytes=40000): refused,
	 * the previous commit stays. */
	int16_t e = gt_commit_raw(fd1, "big-simple", -1, "", NULL, topic, 0, 7, "small");
	ck_assert_int_eq(e, 0);
	int64_t end0 = offsets_topic_end(b);
	big_buf w = {0};
	/* Partitions 0 and 1 twenty times each: one record per entry. */
	bb_str(&w, "big-simple");
	bb_i32(&w, -1);
	bb_str(&w, "");
	bb_str(&w, NULL);
	bb_i32(&w, 1);
	bb_str(&w, topic);
	bb_i32(&w, 40);
	for (int i = 0; i < 40; i++) {
		bb_i32(&w, i % 2);
		bb_i64(&w, 99);
		bb_i32(&w, -1);
		bb_fill_str(&w, 'm', 30000);
	}
	cid = bb_send(fd1, 8, 7, &w);
	free(w.b);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd1, cid, &r, h_scaled_ms(10000));
	kr_i32(&r, "throttle_time_ms");
	ck_assert_int_eq(kr_i32(&r, "topics count"), 1);
	gt_kr_str(&r, NULL, 0, "topic name");
	int32_t np = kr_i32(&r, "partitions count");
	ck_assert_int_eq(np, 40);
	for (int32_t i = 0; i < np; i++) {
		kr_i32(&r, "partition_index");
		int16_t pe = kr_i16(&r, "error_code");
		ck_assert_msg(pe == GT_UNKNOWN_SERVER_ERROR,
			      "OffsetCommit of a 1.2 MB batch: partition error %d, expected "
			      "UNKNOWN_SERVER_ERROR (-1)",
			      pe);
	}
	kr_done(&r, "OffsetCommit v7 response");
	free(resp);
	ck_assert_msg(offsets_topic_end(b) == end0,
		      "__consumer_offsets grew on a refused OffsetCommit");
	int64_t off;
	int16_t perr;
	e = fetch_v5(fd1, "big-simple", topic, 0, &off, &perr);
	ck_assert_msg(e == 0 && off == 7, "after the refused commit: error %d, offset %lld, expected 7",
		      e, (long long)off);

	close(fd1);
	close(fd2);
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
	tcase_add_test(tc, test_empty_group_id);
	tcase_add_test(tc, test_records_too_large);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
