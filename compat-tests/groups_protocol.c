/*
 * groups_protocol.c - the classic group protocol on the wire (raw
 * FindCoordinator v1, JoinGroup v3/v5, SyncGroup v3, Heartbeat v3,
 * LeaveGroup v3, OffsetCommit v7), for what a client library hides:
 *
 * flow: JoinGroup v3 needs no member id (MEMBER_ID_REQUIRED is for v4+
 * only, KIP-394); JoinGroup v5 without one gets MEMBER_ID_REQUIRED and an
 * id. A member joins, leads, syncs and heartbeats; a second member's join
 * is held while the first is told REBALANCE_IN_PROGRESS on its heartbeat
 * and rejoins; both then get the next generation and the same leader, the
 * leader gets both members' metadata and the follower none; the follower's
 * SyncGroup is held until the leader's, and each gets exactly the
 * assignment the leader sent for it. LeaveGroup (member batch, v3) of the
 * follower starts another rebalance; LeaveGroup of an unknown member gives
 * UNKNOWN_MEMBER_ID for that member.
 *
 * inconsistent: with a Stable group using protocol type "consumer" and
 * protocol "range", a member offering only "roundrobin", or protocol type
 * "connect", gets INCONSISTENT_GROUP_PROTOCOL; the group is undisturbed.
 *
 * static: a static member (group.instance.id) joins without the member id
 * step; a second JoinGroup with the same instance id takes its place and
 * (SyncGroup) gets the same assignment without a new generation; the old
 * member id is then fenced: FENCED_INSTANCE_ID on heartbeat and commit.
 *
 * max size: with group.max.size=1 a second member gets
 * GROUP_MAX_SIZE_REACHED.
 *
 * initial delay: with group.initial.rebalance.delay.ms=1000 the first
 * generation of an empty group waits at least that long, and a member
 * joining meanwhile is in it (Kafka's InitialDelayedJoin).
 *
 * FindCoordinator v4: batched keys, one coordinator (this broker) per key.
 *
 * OffsetFetch v8: several groups in one request, one with named
 * partitions (a never committed one answers -1) and one with a null topic
 * list (every committed topic); the commits come from OffsetCommit with
 * generation -1 and no member id (groups without members).
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
static const char *const TOPIC = "proto-topic";

/* Join (two steps when the broker asks for a member id); returns the
 * final result in j. */
static void join(int fd, const char *group, const char *instance, gt_join_result *j)
{
	int32_t cid = gt_join_send(fd, 5, group, "", instance, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd, 5, cid, j, h_scaled_ms(10000));
	if (j->err == GT_MEMBER_ID_REQUIRED) {
		char id[256];
		snprintf(id, sizeof(id), "%s", j->member_id);
		cid = gt_join_send(fd, 5, group, id, instance, 6000, 5000, "consumer", RANGE, TOPIC);
		gt_join_recv(fd, 5, cid, j, h_scaled_ms(10000));
	}
	ck_assert_msg(j->err == 0, "JoinGroup %s: error %d", group, j->err);
}

/* The leader of a one-member group takes every partition (0..3). */
static void sync_alone(int fd, const char *group, const gt_join_result *j, const char *instance,
		       uint8_t *asg, int32_t *asg_len)
{
	const int32_t all[] = {0, 1, 2, 3};
	const int32_t *parts[] = {all};
	const int nparts[] = {4};
	const char *members[] = {j->member_id};
	int32_t cid = gt_sync_send(fd, group, j->generation, j->member_id, instance, 1, members,
				   TOPIC, parts, nparts);
	int16_t e = gt_sync_recv(fd, cid, asg, 256, asg_len, h_scaled_ms(10000));
	ck_assert_msg(e == 0, "SyncGroup of the leader of %s: error %d", group, e);
}

START_TEST(test_join_sync_flow)
{
	h_broker *b = gt_start_broker(NULL);
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "flow");
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);
	gt_join_result j, j2;
	k_wbuf *expect = calloc(1, sizeof(*expect));
	ck_assert(expect != NULL);
	gt_subscription_bytes(expect, TOPIC);

	/* v3: no member id step. */
	gt_raw_find_coordinator(b, "flow-v3");
	int32_t cid = gt_join_send(fd1, 3, "flow-v3", "", NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd1, 3, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == 0, "JoinGroup v3 without member id: error %d, expected none "
		      "(MEMBER_ID_REQUIRED is for v4+)", j.err);
	ck_assert_msg(j.member_id[0] && strcmp(j.leader, j.member_id) == 0 && j.generation >= 1,
		      "JoinGroup v3: member id \"%s\", leader \"%s\", generation %d", j.member_id,
		      j.leader, j.generation);
	ck_assert_str_eq(j.protocol, "range");
	ck_assert_int_eq(j.nmembers, 1);
	ck_assert_str_eq(j.members[0], j.member_id);
	ck_assert_int_eq(j.metadata_len[0], (int32_t)expect->len);

	/* v5: the two-step join. */
	cid = gt_join_send(fd1, 5, "flow", "", NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd1, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == GT_MEMBER_ID_REQUIRED && j.member_id[0],
		      "JoinGroup v5 without member id: error %d, member id \"%s\"", j.err,
		      j.member_id);
	char m1[256], m2[256];
	snprintf(m1, sizeof(m1), "%s", j.member_id);
	cid = gt_join_send(fd1, 5, "flow", m1, NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd1, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == 0, "JoinGroup v5 with the member id: error %d", j.err);
	ck_assert_str_eq(j.member_id, m1);
	ck_assert_str_eq(j.leader, m1);
	int32_t g1 = j.generation;
	uint8_t asg[256];
	int32_t asg_len;
	sync_alone(fd1, "flow", &j, NULL, asg, &asg_len);
	ck_assert_int_eq(gt_heartbeat(fd1, "flow", g1, m1, NULL), 0);

	/* A second member: its join is held until the first rejoins. */
	cid = gt_join_send(fd2, 5, "flow", "", NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
	ck_assert_int_eq(j2.err, GT_MEMBER_ID_REQUIRED);
	snprintf(m2, sizeof(m2), "%s", j2.member_id);
	ck_assert_msg(strcmp(m1, m2) != 0, "two members got the same id %s", m1);
	int32_t cid2 = gt_join_send(fd2, 5, "flow", m2, NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	ck_assert_msg(gt_raw_pending(fd2, 300),
		      "the second member's JoinGroup was answered before the first rejoined");
	int16_t e = gt_heartbeat(fd1, "flow", g1, m1, NULL);
	ck_assert_msg(e == GT_REBALANCE_IN_PROGRESS,
		      "heartbeat during the rebalance: error %d, expected REBALANCE_IN_PROGRESS (27)",
		      e);
	long long t0 = h_now_ms();
	cid = gt_join_send(fd1, 5, "flow", m1, NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd1, 5, cid, &j, h_scaled_ms(10000));
	gt_join_recv(fd2, 5, cid2, &j2, h_scaled_ms(10000));
	fprintf(stderr, "groups_protocol: join phase completed %lld ms after the last member "
			"rejoined\n",
		h_now_ms() - t0);
	ck_assert_msg(j.err == 0 && j2.err == 0, "rejoin: errors %d and %d", j.err, j2.err);
	ck_assert_msg(j.generation == g1 + 1 && j2.generation == g1 + 1,
		      "generations %d and %d after the rebalance, expected %d", j.generation,
		      j2.generation, g1 + 1);
	ck_assert_str_eq(j.leader, j2.leader);
	ck_assert_str_eq(j.protocol, "range");
	ck_assert_str_eq(j2.protocol, "range");
	int first_leads = strcmp(j.leader, m1) == 0;
	ck_assert_msg(first_leads || strcmp(j.leader, m2) == 0, "leader %s is not a member",
		      j.leader);
	gt_join_result *lj = first_leads ? &j : &j2, *fj = first_leads ? &j2 : &j;
	int lfd = first_leads ? fd1 : fd2, ffd = first_leads ? fd2 : fd1;
	ck_assert_msg(lj->nmembers == 2 && fj->nmembers == 0,
		      "the leader got %d members, the follower %d; expected 2 and 0", lj->nmembers,
		      fj->nmembers);
	ck_assert_msg((strcmp(lj->members[0], m1) == 0 && strcmp(lj->members[1], m2) == 0) ||
			  (strcmp(lj->members[0], m2) == 0 && strcmp(lj->members[1], m1) == 0),
		      "the leader's member list is %s, %s", lj->members[0], lj->members[1]);
	ck_assert(lj->metadata_len[0] == (int32_t)expect->len &&
		  lj->metadata_len[1] == (int32_t)expect->len);

	/* SyncGroup: the follower waits for the leader's assignment. */
	int32_t g2 = j.generation;
	int32_t fcid = gt_sync_send(ffd, "flow", g2, fj->member_id, NULL, 0, NULL, TOPIC, NULL, NULL);
	ck_assert_msg(gt_raw_pending(ffd, 300),
		      "the follower's SyncGroup was answered before the leader's");
	const int32_t lp[] = {0, 1}, fp[] = {2, 3};
	const int32_t *parts[] = {lp, fp};
	const int nparts[] = {2, 2};
	const char *members[] = {lj->member_id, fj->member_id};
	int32_t lcid = gt_sync_send(lfd, "flow", g2, lj->member_id, NULL, 2, members, TOPIC, parts,
				    nparts);
	uint8_t la[256], fa[256];
	int32_t lalen, falen;
	ck_assert_int_eq(gt_sync_recv(lfd, lcid, la, sizeof(la), &lalen, h_scaled_ms(10000)), 0);
	ck_assert_int_eq(gt_sync_recv(ffd, fcid, fa, sizeof(fa), &falen, h_scaled_ms(10000)), 0);
	k_wbuf *want = calloc(1, sizeof(*want));
	ck_assert(want != NULL);
	gt_assignment_bytes(want, TOPIC, lp, 2);
	ck_assert_msg(lalen == (int32_t)want->len && memcmp(la, want->b, want->len) == 0,
		      "the leader's SyncGroup assignment differs from what it sent");
	want->len = 0;
	gt_assignment_bytes(want, TOPIC, fp, 2);
	ck_assert_msg(falen == (int32_t)want->len && memcmp(fa, want->b, want->len) == 0,
		      "the follower's SyncGroup assignment differs from what the leader sent for it");
	ck_assert_int_eq(gt_heartbeat(fd1, "flow", g2, m1, NULL), 0);
	ck_assert_int_eq(gt_heartbeat(fd2, "flow", g2, m2, NULL), 0);

	/* LeaveGroup v3 of the second member; then of one the group never had. */
	int16_t merr;
	e = gt_leave(fd2, "flow", m2, NULL, &merr);
	ck_assert_msg(e == 0 && merr == 0, "LeaveGroup: error %d, member error %d", e, merr);
	e = gt_heartbeat(fd1, "flow", g2, m1, NULL);
	ck_assert_msg(e == GT_REBALANCE_IN_PROGRESS,
		      "heartbeat after a member left: error %d, expected REBALANCE_IN_PROGRESS (27)",
		      e);
	cid = gt_join_send(fd1, 5, "flow", m1, NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd1, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == 0 && j.generation == g2 + 1 && j.nmembers == 1 &&
			  strcmp(j.leader, m1) == 0,
		      "rejoin after the leave: error %d, generation %d (expected %d), %d members, "
		      "leader %s",
		      j.err, j.generation, g2 + 1, j.nmembers, j.leader);
	e = gt_leave(fd2, "flow", "never-a-member", NULL, &merr);
	ck_assert_msg(e == 0 && merr == GT_UNKNOWN_MEMBER_ID,
		      "LeaveGroup of an unknown member: error %d, member error %d, expected 0 and "
		      "UNKNOWN_MEMBER_ID (25)",
		      e, merr);

	free(expect);
	free(want);
	close(fd1);
	close(fd2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_inconsistent_protocol)
{
	h_broker *b = gt_start_broker(NULL);
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "incons");
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);
	gt_join_result j, j2;
	join(fd1, "incons", NULL, &j);
	uint8_t asg[256];
	int32_t asg_len;
	sync_alone(fd1, "incons", &j, NULL, asg, &asg_len);

	const char *const rr[] = {"roundrobin", NULL};
	const char *ptypes[] = {"consumer", "connect"};
	const char *const *protos[] = {rr, RANGE};
	for (int k = 0; k < 2; k++) {
		int32_t cid = gt_join_send(fd2, 5, "incons", "", NULL, 6000, 5000, ptypes[k], protos[k],
					   TOPIC);
		gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
		if (j2.err == GT_MEMBER_ID_REQUIRED) {
			char id[256];
			snprintf(id, sizeof(id), "%s", j2.member_id);
			cid = gt_join_send(fd2, 5, "incons", id, NULL, 6000, 5000, ptypes[k],
					   protos[k], TOPIC);
			gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
		}
		ck_assert_msg(j2.err == GT_INCONSISTENT_GROUP_PROTOCOL,
			      "JoinGroup with protocol type %s / protocol %s into a consumer/range "
			      "group: error %d, expected INCONSISTENT_GROUP_PROTOCOL (23)",
			      ptypes[k], protos[k][0], j2.err);
	}
	int16_t e = gt_heartbeat(fd1, "incons", j.generation, j.member_id, NULL);
	ck_assert_msg(e == 0, "the group's member was disturbed: heartbeat error %d", e);
	close(fd1);
	close(fd2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_static_replace_and_fence)
{
	h_broker *b = gt_start_broker(NULL);
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "static-raw");
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);
	gt_join_result j, j2;

	int32_t cid = gt_join_send(fd1, 5, "static-raw", "", "inst-1", 6000, 5000, "consumer",
				   RANGE, TOPIC);
	gt_join_recv(fd1, 5, cid, &j, h_scaled_ms(10000));
	ck_assert_msg(j.err == 0 && j.member_id[0],
		      "static JoinGroup v5 without member id: error %d (a static member needs no "
		      "member id step)",
		      j.err);
	uint8_t asg[256], asg2[256];
	int32_t asg_len, asg2_len;
	sync_alone(fd1, "static-raw", &j, "inst-1", asg, &asg_len);
	ck_assert_int_eq(gt_heartbeat(fd1, "static-raw", j.generation, j.member_id, "inst-1"), 0);

	/* Same instance id again: replaces the member, same generation. */
	cid = gt_join_send(fd2, 5, "static-raw", "", "inst-1", 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
	ck_assert_msg(j2.err == 0 && j2.member_id[0] && strcmp(j2.member_id, j.member_id) != 0,
		      "JoinGroup with a known group.instance.id: error %d, member id %s (old %s)",
		      j2.err, j2.member_id, j.member_id);
	ck_assert_msg(j2.generation == j.generation,
		      "the static member's return started generation %d (was %d): a rebalance",
		      j2.generation, j.generation);
	cid = gt_sync_send(fd2, "static-raw", j2.generation, j2.member_id, "inst-1", 0, NULL, TOPIC,
			   NULL, NULL);
	int16_t e = gt_sync_recv(fd2, cid, asg2, sizeof(asg2), &asg2_len, h_scaled_ms(10000));
	ck_assert_msg(e == 0, "SyncGroup of the returned static member: error %d", e);
	ck_assert_msg(asg2_len == asg_len && memcmp(asg, asg2, (size_t)asg_len) == 0,
		      "the returned static member got another assignment");

	e = gt_heartbeat(fd1, "static-raw", j.generation, j.member_id, "inst-1");
	ck_assert_msg(e == GT_FENCED_INSTANCE_ID,
		      "heartbeat of the replaced member id: error %d, expected FENCED_INSTANCE_ID "
		      "(82)",
		      e);
	e = gt_commit_raw(fd1, "static-raw", j.generation, j.member_id, "inst-1", TOPIC, 0, 1, NULL);
	ck_assert_msg(e == GT_FENCED_INSTANCE_ID,
		      "commit of the replaced member id: error %d, expected FENCED_INSTANCE_ID (82)",
		      e);
	ck_assert_int_eq(gt_heartbeat(fd2, "static-raw", j2.generation, j2.member_id, "inst-1"), 0);
	e = gt_commit_raw(fd2, "static-raw", j2.generation, j2.member_id, "inst-1", TOPIC, 0, 1,
			  NULL);
	ck_assert_msg(e == 0, "commit of the current static member: error %d", e);
	close(fd1);
	close(fd2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_group_max_size)
{
	h_broker *b = gt_start_broker((const char *const[]){"group.max.size=1", NULL});
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "small");
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);
	gt_join_result j, j2;
	join(fd1, "small", NULL, &j);
	uint8_t asg[256];
	int32_t asg_len;
	sync_alone(fd1, "small", &j, NULL, asg, &asg_len);

	int32_t cid = gt_join_send(fd2, 5, "small", "", NULL, 6000, 5000, "consumer", RANGE, TOPIC);
	gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
	if (j2.err == GT_MEMBER_ID_REQUIRED) {
		char id[256];
		snprintf(id, sizeof(id), "%s", j2.member_id);
		cid = gt_join_send(fd2, 5, "small", id, NULL, 6000, 5000, "consumer", RANGE, TOPIC);
		gt_join_recv(fd2, 5, cid, &j2, h_scaled_ms(10000));
	}
	ck_assert_msg(j2.err == GT_GROUP_MAX_SIZE_REACHED,
		      "second member of a group with group.max.size=1: error %d, expected "
		      "GROUP_MAX_SIZE_REACHED (81)",
		      j2.err);
	int16_t e = gt_heartbeat(fd1, "small", j.generation, j.member_id, NULL);
	ck_assert_msg(e == 0, "the group's member was disturbed: heartbeat error %d", e);
	close(fd1);
	close(fd2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_initial_rebalance_delay)
{
	/* Kafka's InitialDelayedJoin: the first generation of an empty group
	 * waits group.initial.rebalance.delay.ms for more members. */
	h_broker *b = gt_start_broker((const char *const[]){"group.initial.rebalance.delay.ms=1000",
							    NULL});
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "delayed");
	int fd1 = gt_raw_connect(b), fd2 = gt_raw_connect(b);
	gt_join_result j, j2;
	long long t0 = h_now_ms();
	int32_t cid1 = gt_join_send(fd1, 3, "delayed", "", NULL, 6000, 10000, "consumer", RANGE,
				    TOPIC);
	ck_assert_msg(gt_raw_pending(fd1, 300),
		      "the first JoinGroup was answered at once despite "
		      "group.initial.rebalance.delay.ms=1000");
	int32_t cid2 = gt_join_send(fd2, 3, "delayed", "", NULL, 6000, 10000, "consumer", RANGE,
				    TOPIC);
	gt_join_recv(fd1, 3, cid1, &j, h_scaled_ms(15000));
	long long took = h_now_ms() - t0;
	gt_join_recv(fd2, 3, cid2, &j2, h_scaled_ms(15000));
	fprintf(stderr, "groups_protocol: first generation with a 1000 ms initial delay formed "
			"after %lld ms\n",
		took);
	ck_assert_msg(took >= 900, "the first generation formed after %lld ms, before the initial "
		      "delay of 1000 ms", took);
	ck_assert_msg(j.err == 0 && j2.err == 0, "JoinGroup errors %d and %d", j.err, j2.err);
	ck_assert_msg(j.generation == 1 && j2.generation == 1,
		      "both members joining within the initial delay should be in generation 1: "
		      "got %d and %d",
		      j.generation, j2.generation);
	ck_assert_int_eq(j.nmembers + j2.nmembers, 2);
	close(fd1);
	close(fd2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_find_coordinator_batched)
{
	h_broker *b = gt_start_broker(NULL);
	int32_t node = gt_raw_find_coordinator(b, "any-group");
	int fd = gt_raw_connect(b);
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert(w != NULL);
	kw_u8(w, 0); /* key type: group */
	kw_uvarint(w, 3 + 1);
	kw_cstr(w, "batch-a");
	kw_cstr(w, "batch-b");
	kw_cstr(w, "batch-c");
	kw_tags0(w);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 10, 4, w, &r);
	kr_i32(&r, "throttle_time_ms");
	int64_t n = kr_carray(&r, "coordinators");
	ck_assert_msg(n == 3, "FindCoordinator v4 with 3 keys: %lld coordinators", (long long)n);
	int seen[3] = {0, 0, 0};
	for (int64_t i = 0; i < n; i++) {
		char key[64], host[64];
		kr_cstr(&r, key, sizeof(key), "key");
		int32_t id = kr_i32(&r, "node_id");
		kr_cstr(&r, host, sizeof(host), "host");
		int32_t port = kr_i32(&r, "port");
		int16_t err = kr_i16(&r, "error_code");
		kr_cstr(&r, NULL, 0, "error_message");
		kr_tags(&r, "coordinator tags");
		ck_assert_msg(err == 0 && id == node && strcmp(host, "127.0.0.1") == 0 &&
				      port == b->port,
			      "FindCoordinator v4 key %s: error %d, node %d at %s:%d", key, err, id,
			      host, port);
		if (strlen(key) == 7 && strncmp(key, "batch-", 6) == 0 && key[6] >= 'a' && key[6] <= 'c')
			seen[key[6] - 'a']++;
	}
	kr_tags(&r, "response tags");
	kr_done(&r, "FindCoordinator v4 response");
	ck_assert_msg(seen[0] == 1 && seen[1] == 1 && seen[2] == 1,
		      "FindCoordinator v4: not one answer per key");
	free(resp);
	free(w);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* OffsetFetch v8 request entry for a group: partitions 0..np-1 of TOPIC,
 * or all topics when np < 0. */
static void fetch_group(k_wbuf *w, const char *group, int np)
{
	kw_cstr(w, group);
	if (np < 0) {
		kw_uvarint(w, 0); /* null: every topic */
	} else {
		kw_uvarint(w, 1 + 1);
		kw_cstr(w, TOPIC);
		kw_uvarint(w, (uint64_t)np + 1);
		for (int p = 0; p < np; p++)
			kw_i32(w, p);
		kw_tags0(w);
	}
	kw_tags0(w);
}

START_TEST(test_offset_fetch_several_groups)
{
	h_broker *b = gt_start_broker(NULL);
	gt_create_topic(b, TOPIC, 4);
	gt_raw_find_coordinator(b, "fetch-a");
	gt_raw_find_coordinator(b, "fetch-b");
	int fd = gt_raw_connect(b);
	/* Groups without members commit with generation -1 and no member id. */
	int16_t e = gt_commit_raw(fd, "fetch-a", -1, "", NULL, TOPIC, 0, 11, "meta-a");
	ck_assert_msg(e == 0, "commit with generation -1 to a group without members: error %d", e);
	e = gt_commit_raw(fd, "fetch-b", -1, "", NULL, TOPIC, 3, 22, NULL);
	ck_assert_msg(e == 0, "commit with generation -1 to a group without members: error %d", e);

	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert(w != NULL);
	kw_uvarint(w, 2 + 1);
	fetch_group(w, "fetch-a", 2);
	fetch_group(w, "fetch-b", -1);
	kw_u8(w, 0); /* require_stable */
	kw_tags0(w);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 9, 8, w, &r);
	kr_i32(&r, "throttle_time_ms");
	int64_t ng = kr_carray(&r, "groups");
	ck_assert_msg(ng == 2, "OffsetFetch v8 with 2 groups: %lld groups answered", (long long)ng);
	int checked = 0;
	for (int64_t g = 0; g < ng; g++) {
		char group[64];
		kr_cstr(&r, group, sizeof(group), "group_id");
		int is_a = strcmp(group, "fetch-a") == 0;
		ck_assert_msg(is_a || strcmp(group, "fetch-b") == 0, "OffsetFetch v8: group %s", group);
		int64_t nt = kr_carray(&r, "topics");
		ck_assert_msg(nt == 1, "OffsetFetch v8 %s: %lld topics", group, (long long)nt);
		char topic[64];
		kr_cstr(&r, topic, sizeof(topic), "topic name");
		ck_assert_str_eq(topic, TOPIC);
		int64_t np = kr_carray(&r, "partitions");
		ck_assert_msg(np == (is_a ? 2 : 1), "OffsetFetch v8 %s: %lld partitions", group,
			      (long long)np);
		for (int64_t k = 0; k < np; k++) {
			int32_t idx = kr_i32(&r, "partition_index");
			int64_t off = kr_i64(&r, "committed_offset");
			kr_i32(&r, "committed_leader_epoch");
			char meta[64];
			int64_t ml = kr_cstr(&r, meta, sizeof(meta), "metadata");
			int16_t perr = kr_i16(&r, "error_code");
			kr_tags(&r, "partition tags");
			ck_assert_int_eq(perr, 0);
			if (is_a && idx == 0)
				ck_assert_msg(off == 11 && ml == 6 && strcmp(meta, "meta-a") == 0,
					      "fetch-a partition 0: offset %lld metadata %s",
					      (long long)off, meta);
			else if (is_a)
				ck_assert_msg(idx == 1 && off == -1,
					      "fetch-a partition %d never committed: offset %lld, "
					      "expected -1",
					      idx, (long long)off);
			else
				ck_assert_msg(idx == 3 && off == 22,
					      "fetch-b (all topics): partition %d offset %lld, expected "
					      "partition 3 at 22",
					      idx, (long long)off);
			checked++;
		}
		kr_tags(&r, "topic tags");
		ck_assert_int_eq(kr_i16(&r, "group error_code"), 0);
		kr_tags(&r, "group tags");
	}
	kr_tags(&r, "response tags");
	kr_done(&r, "OffsetFetch v8 response");
	ck_assert_int_eq(checked, 3);
	free(resp);
	free(w);
	close(fd);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_protocol");
	TCase *tc = tcase_create("wire");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_join_sync_flow);
	tcase_add_test(tc, test_inconsistent_protocol);
	tcase_add_test(tc, test_static_replace_and_fence);
	tcase_add_test(tc, test_group_max_size);
	tcase_add_test(tc, test_initial_rebalance_delay);
	tcase_add_test(tc, test_find_coordinator_batched);
	tcase_add_test(tc, test_offset_fetch_several_groups);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
