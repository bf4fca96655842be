/*
 * groups_admin.c - consumer groups through librdkafka's AdminClient
 * (DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, OffsetFetch).
 *
 * describe/list: a Stable group of two members (range), an Empty group
 * (its member committed and closed) and a "simple" group (only commits by a
 * consumer that assigned partitions itself: no protocol type).
 * DescribeConsumerGroups gives each one's state, assignor, coordinator and
 * members (member id, client id, host, assignment = what the member was
 * given); ListConsumerGroups lists all three with their states, and with a
 * state filter (ListGroups v4) only the matching ones; the legacy
 * rd_kafka_list_groups agrees. __consumer_offsets is in the metadata with
 * 50 partitions of one replica (the default factor 3 capped on one node).
 *
 * empty after restart: an Empty group (its consumer committed and closed)
 * keeps its protocol type "consumer" across a SIGTERM restart and a kill -9
 * restart (Kafka writes it in the GroupMetadataValue and restores it for an
 * Empty group): ListConsumerGroups does not call it a simple group, before
 * or after; its offsets are back and a consumer joins it again.
 *
 * delete: DeleteGroups of an Empty group removes it and its committed
 * offsets, also after kill -9 and restart (tombstones in
 * __consumer_offsets).
 *
 * delete offsets: OffsetDelete removes one partition's commit of an Empty
 * group and keeps the others; on a group whose members are subscribed to
 * the topic it gives GROUP_SUBSCRIBED_TO_TOPIC per partition and deletes
 * nothing; on an unknown group GROUP_ID_NOT_FOUND.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/groups_common.h"

/* rd_kafka_commit of one offset per partition (offs[p] < 0: skipped). */
static void commit_offsets(gt_member *m, const int64_t *offs, int np)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
	for (int p = 0; p < np; p++)
		if (offs[p] >= 0)
			rd_kafka_topic_partition_list_add(l, m->topic, p)->offset = offs[p];
	rd_kafka_resp_err_t err = rd_kafka_commit(m->rk, l, 0);
	ck_assert_msg(err == 0, "%s: commit: %s", m->name, rd_kafka_err2name(err));
	for (int k = 0; k < l->cnt; k++)
		ck_assert_msg(l->elems[k].err == 0, "%s: commit partition %d: %s", m->name,
			      (int)l->elems[k].partition, rd_kafka_err2name(l->elems[k].err));
	rd_kafka_topic_partition_list_destroy(l);
}

static const rd_kafka_ConsumerGroupDescription_t *
find_desc(const rd_kafka_ConsumerGroupDescription_t **d, size_t n, const char *group)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rd_kafka_ConsumerGroupDescription_group_id(d[i]), group) == 0)
			return d[i];
	ck_abort_msg("DescribeConsumerGroups: no result for %s", group);
	return NULL;
}

static rd_kafka_event_t *describe(rd_kafka_t *rk, const char **groups, size_t n)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConsumerGroups(rk, groups, n, NULL, q);
	rd_kafka_event_t *ev =
	    gt_admin_wait(q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, h_scaled_ms(20000));
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "DescribeConsumerGroups: %s",
		      rd_kafka_event_error_string(ev));
	rd_kafka_queue_destroy(q);
	return ev;
}

/* ListConsumerGroups (optionally only groups in state only_state, or all
 * with only_state < 0); fills state[i] / simple[i] of groups[i] (-1 when
 * not listed). */
static void list_groups(rd_kafka_t *rk, int only_state, const char *const *groups, int n,
			int *state, int *simple)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = NULL;
	if (only_state >= 0) {
		opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
		rd_kafka_consumer_group_state_t st = (rd_kafka_consumer_group_state_t)only_state;
		rd_kafka_error_t *e = rd_kafka_AdminOptions_set_match_consumer_group_states(opt, &st, 1);
		ck_assert(e == NULL);
	}
	rd_kafka_ListConsumerGroups(rk, opt, q);
	rd_kafka_event_t *ev =
	    gt_admin_wait(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT, h_scaled_ms(20000));
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "ListConsumerGroups: %s",
		      rd_kafka_event_error_string(ev));
	const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
	size_t nerr = 0, nvalid = 0;
	const rd_kafka_error_t **errs = rd_kafka_ListConsumerGroups_result_errors(res, &nerr);
	ck_assert_msg(nerr == 0, "ListConsumerGroups: %zu errors, first: %s", nerr,
		      nerr ? rd_kafka_error_string(errs[0]) : "");
	const rd_kafka_ConsumerGroupListing_t **l = rd_kafka_ListConsumerGroups_result_valid(res, &nvalid);
	for (int i = 0; i < n; i++) {
		state[i] = -1;
		simple[i] = -1;
		for (size_t k = 0; k < nvalid; k++)
			if (strcmp(rd_kafka_ConsumerGroupListing_group_id(l[k]), groups[i]) == 0) {
				state[i] = (int)rd_kafka_ConsumerGroupListing_state(l[k]);
				simple[i] = rd_kafka_ConsumerGroupListing_is_simple_consumer_group(l[k]);
			}
	}
	rd_kafka_event_destroy(ev);
	if (opt)
		rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_queue_destroy(q);
}

static const char *state_name(int st)
{
	return st < 0 ? "(not listed)"
		      : rd_kafka_consumer_group_state_name((rd_kafka_consumer_group_state_t)st);
}

START_TEST(test_describe_and_list)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "adm-topic";
	const int np = 4;
	gt_create_topic(b, topic, np);
	const char *const range[] = {"partition.assignment.strategy", "range",
				     "enable.auto.commit", "false", NULL};

	/* Stable, two members. */
	gt_member *act[2];
	act[0] = gt_member_new(b, "adm-a1", "adm-active", topic, np, range);
	act[1] = gt_member_new(b, "adm-a2", "adm-active", topic, np, range);
	gt_subscribe(act[0]);
	gt_subscribe(act[1]);
	gt_wait_settled(act, 2, 1, 500, 30000, "adm-active");

	/* Empty: one member commits and leaves. */
	gt_member *emp = gt_member_new(b, "adm-e1", "adm-empty", topic, np, range);
	gt_subscribe(emp);
	gt_wait_settled(&emp, 1, 1, 300, 30000, "adm-empty");
	commit_offsets(emp, (const int64_t[]){0, 0, 0, 0}, np);
	gt_close(emp);

	/* Simple: commits by a consumer without a subscription. */
	gt_member *simple = gt_member_new(b, "adm-s1", "adm-simple", topic, np, range);
	commit_offsets(simple, (const int64_t[]){0, -1, -1, -1}, np);

	rd_kafka_t *admin = c_producer(b, NULL);
	const struct rd_kafka_metadata *md = c_metadata_all(admin);
	ck_assert_int_eq(md->broker_cnt, 1);
	int32_t node = md->brokers[0].id;
	/* The offsets topic on a single node with default settings: 50
	 * partitions, replication factor capped from 3 to 1. */
	const rd_kafka_metadata_topic_t *ot = c_md_topic(md, "__consumer_offsets");
	ck_assert_msg(ot && ot->err == 0, "__consumer_offsets not in metadata (%s)",
		      ot ? rd_kafka_err2name(ot->err) : "absent");
	ck_assert_msg(ot->partition_cnt == 50, "__consumer_offsets has %d partitions, expected "
		      "offsets.topic.num.partitions=50", ot->partition_cnt);
	for (int p = 0; p < ot->partition_cnt; p++)
		ck_assert_msg(ot->partitions[p].leader == node && ot->partitions[p].replica_cnt == 1,
			      "__consumer_offsets partition %d: leader %d, %d replicas", p,
			      ot->partitions[p].leader, ot->partitions[p].replica_cnt);
	rd_kafka_metadata_destroy(md);

	/* Describe. */
	const char *names[] = {"adm-active", "adm-empty", "adm-simple"};
	rd_kafka_event_t *ev = describe(admin, names, 3);
	size_t nd = 0;
	const rd_kafka_ConsumerGroupDescription_t **d = rd_kafka_DescribeConsumerGroups_result_groups(
	    rd_kafka_event_DescribeConsumerGroups_result(ev), &nd);
	ck_assert_msg(nd == 3, "DescribeConsumerGroups: %zu results for 3 groups", nd);

	const rd_kafka_ConsumerGroupDescription_t *g = find_desc(d, nd, "adm-active");
	const rd_kafka_error_t *ge = rd_kafka_ConsumerGroupDescription_error(g);
	ck_assert_msg(ge == NULL, "adm-active: %s", ge ? rd_kafka_error_string(ge) : "");
	ck_assert_msg(rd_kafka_ConsumerGroupDescription_state(g) ==
			  RD_KAFKA_CONSUMER_GROUP_STATE_STABLE,
		      "adm-active: state %s, expected Stable",
		      state_name(rd_kafka_ConsumerGroupDescription_state(g)));
	ck_assert_str_eq(rd_kafka_ConsumerGroupDescription_partition_assignor(g), "range");
	ck_assert_int_eq(rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(g), 0);
	const rd_kafka_Node_t *coord = rd_kafka_ConsumerGroupDescription_coordinator(g);
	ck_assert_msg(coord && rd_kafka_Node_id(coord) == node,
		      "adm-active: coordinator %d, expected broker %d",
		      coord ? rd_kafka_Node_id(coord) : -1, (int)node);
	ck_assert_int_eq(rd_kafka_ConsumerGroupDescription_member_count(g), 2);
	int matched[2] = {0, 0};
	for (size_t k = 0; k < 2; k++) {
		const rd_kafka_MemberDescription_t *md2 = rd_kafka_ConsumerGroupDescription_member(g, k);
		const char *cid = rd_kafka_MemberDescription_consumer_id(md2);
		int who = -1;
		for (int i = 0; i < 2; i++) {
			char *mine = rd_kafka_memberid(act[i]->rk);
			if (mine && strcmp(mine, cid) == 0)
				who = i;
			rd_kafka_mem_free(act[i]->rk, mine);
		}
		ck_assert_msg(who >= 0, "adm-active: member id %s is neither consumer's", cid);
		matched[who]++;
		ck_assert_str_eq(rd_kafka_MemberDescription_client_id(md2), act[who]->name);
		const char *host = rd_kafka_MemberDescription_host(md2);
		ck_assert_msg(host && strstr(host, "127.0.0.1"),
			      "adm-active: member host \"%s\", expected the client's address",
			      host ? host : "(null)");
		const rd_kafka_topic_partition_list_t *parts =
		    rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(md2));
		ck_assert_msg(parts && parts->cnt == gt_count(act[who]),
			      "adm-active: %s's described assignment has %d partitions, it owns %d",
			      act[who]->name, parts ? parts->cnt : -1, gt_count(act[who]));
		for (int k2 = 0; k2 < parts->cnt; k2++) {
			ck_assert_str_eq(parts->elems[k2].topic, topic);
			ck_assert_msg(act[who]->assigned[parts->elems[k2].partition],
				      "adm-active: described assignment of %s has partition %d it "
				      "does not own",
				      act[who]->name, (int)parts->elems[k2].partition);
		}
	}
	ck_assert(matched[0] == 1 && matched[1] == 1);

	g = find_desc(d, nd, "adm-empty");
	ck_assert(rd_kafka_ConsumerGroupDescription_error(g) == NULL);
	ck_assert_msg(rd_kafka_ConsumerGroupDescription_state(g) == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY,
		      "adm-empty: state %s, expected Empty",
		      state_name(rd_kafka_ConsumerGroupDescription_state(g)));
	ck_assert_int_eq(rd_kafka_ConsumerGroupDescription_member_count(g), 0);
	ck_assert_int_eq(rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(g), 0);

	g = find_desc(d, nd, "adm-simple");
	ck_assert(rd_kafka_ConsumerGroupDescription_error(g) == NULL);
	ck_assert_msg(rd_kafka_ConsumerGroupDescription_state(g) == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY,
		      "adm-simple: state %s, expected Empty",
		      state_name(rd_kafka_ConsumerGroupDescription_state(g)));
	ck_assert_int_eq(rd_kafka_ConsumerGroupDescription_member_count(g), 0);
	ck_assert_msg(rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(g) == 1,
		      "adm-simple: not a simple group (protocol type must be empty)");
	rd_kafka_event_destroy(ev);

	/* List, all states and filtered. */
	const char *const three[] = {"adm-active", "adm-empty", "adm-simple"};
	int st[3], simp[3];
	list_groups(admin, -1, three, 3, st, simp);
	ck_assert_msg(st[0] == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE && simp[0] == 0,
		      "ListConsumerGroups: adm-active %s simple=%d", state_name(st[0]), simp[0]);
	ck_assert_msg(st[1] == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY && simp[1] == 0,
		      "ListConsumerGroups: adm-empty %s simple=%d", state_name(st[1]), simp[1]);
	ck_assert_msg(st[2] == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY && simp[2] == 1,
		      "ListConsumerGroups: adm-simple %s simple=%d", state_name(st[2]), simp[2]);
	list_groups(admin, RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, three, 3, st, simp);
	ck_assert_msg(st[0] == -1 && st[1] == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY &&
			  st[2] == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY,
		      "ListConsumerGroups(states=Empty): adm-active %s, adm-empty %s, adm-simple %s",
		      state_name(st[0]), state_name(st[1]), state_name(st[2]));
	list_groups(admin, RD_KAFKA_CONSUMER_GROUP_STATE_STABLE, three, 3, st, simp);
	ck_assert_msg(st[0] == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE && st[1] == -1 && st[2] == -1,
		      "ListConsumerGroups(states=Stable): adm-active %s, adm-empty %s, adm-simple %s",
		      state_name(st[0]), state_name(st[1]), state_name(st[2]));

	/* The legacy API (ListGroups + DescribeGroups). */
	const struct rd_kafka_group_list *gl = NULL;
	rd_kafka_resp_err_t err = rd_kafka_list_groups(admin, "adm-active", &gl, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "rd_kafka_list_groups: %s", rd_kafka_err2name(err));
	ck_assert_int_eq(gl->group_cnt, 1);
	const struct rd_kafka_group_info *gi = &gl->groups[0];
	ck_assert_msg(gi->err == 0, "rd_kafka_list_groups: %s", rd_kafka_err2name(gi->err));
	ck_assert_str_eq(gi->group, "adm-active");
	ck_assert_str_eq(gi->state, "Stable");
	ck_assert_str_eq(gi->protocol_type, "consumer");
	ck_assert_str_eq(gi->protocol, "range");
	ck_assert_int_eq(gi->member_cnt, 2);
	for (int i = 0; i < gi->member_cnt; i++) {
		ck_assert(gi->members[i].member_metadata_size > 0);
		ck_assert(gi->members[i].member_assignment_size > 0);
	}
	rd_kafka_group_list_destroy(gl);
	err = rd_kafka_list_groups(admin, NULL, &gl, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "rd_kafka_list_groups(all): %s", rd_kafka_err2name(err));
	int found = 0;
	for (int i = 0; i < gl->group_cnt; i++)
		for (int k = 0; k < 3; k++)
			found += strcmp(gl->groups[i].group, three[k]) == 0;
	ck_assert_msg(found == 3, "rd_kafka_list_groups(all): %d of our 3 groups listed", found);
	rd_kafka_group_list_destroy(gl);

	rd_kafka_destroy(admin);
	gt_close(act[0]);
	gt_close(act[1]);
	gt_close(simple);
	gt_member_free(act[0]);
	gt_member_free(act[1]);
	gt_member_free(emp);
	gt_member_free(simple);
	c_stop_broker(b);
}
END_TEST

/* A group is gone: not listed, no offsets, Dead (or GROUP_ID_NOT_FOUND). */
static void assert_gone(rd_kafka_t *admin, const char *group, const char *topic, int np,
			const char *when)
{
	int st, simp;
	list_groups(admin, -1, &group, 1, &st, &simp);
	ck_assert_msg(st == -1, "%s: %s still listed (%s)", when, group, state_name(st));
	int64_t off[8];
	gt_committed_admin(admin, group, topic, np, off);
	for (int p = 0; p < np; p++)
		ck_assert_msg(off[p] == RD_KAFKA_OFFSET_INVALID,
			      "%s: %s still has offset %lld on partition %d", when, group,
			      (long long)off[p], p);
	const char *names[1] = {group};
	rd_kafka_event_t *ev = describe(admin, names, 1);
	size_t nd = 0;
	const rd_kafka_ConsumerGroupDescription_t **d = rd_kafka_DescribeConsumerGroups_result_groups(
	    rd_kafka_event_DescribeConsumerGroups_result(ev), &nd);
	ck_assert_int_eq(nd, 1);
	const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(d[0]);
	if (e)
		ck_assert_msg(rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND,
			      "%s: describe %s: %s", when, group, rd_kafka_error_string(e));
	else
		ck_assert_msg(rd_kafka_ConsumerGroupDescription_state(d[0]) ==
					  RD_KAFKA_CONSUMER_GROUP_STATE_DEAD &&
				      rd_kafka_ConsumerGroupDescription_member_count(d[0]) == 0,
			      "%s: describe %s: state %s, expected Dead", when, group,
			      state_name(rd_kafka_ConsumerGroupDescription_state(d[0])));
	rd_kafka_event_destroy(ev);
}

/* ListConsumerGroups: the group listed Empty, not simple (protocol type
 * "consumer"). */
static void assert_empty_consumer_group(rd_kafka_t *admin, const char *group, const char *when)
{
	int st, simp;
	list_groups(admin, -1, &group, 1, &st, &simp);
	ck_assert_msg(st == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY, "%s: %s is %s, expected Empty",
		      when, group, state_name(st));
	ck_assert_msg(simp == 0,
		      "%s: %s is listed as a simple group (protocol type \"\"), expected "
		      "protocol type \"consumer\"",
		      when, group);
}

START_TEST(test_empty_group_after_restart)
{
	int kill9 = _i;
	const char *how = kill9 ? "after kill -9 and restart" : "after SIGTERM and restart";
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "er-topic", *group = "er-group";
	const int np = 2;
	gt_create_topic(b, topic, np);
	gt_produce(b, topic, np, 10, "er", NULL);
	const char *const kv[] = {"enable.auto.commit", "false", NULL};
	gt_member *m = gt_member_new(b, "er-1", group, topic, np, kv);
	gt_subscribe(m);
	gt_wait_settled(&m, 1, 1, 300, 30000, group);
	commit_offsets(m, (const int64_t[]){3, 4}, np);
	gt_close(m);

	rd_kafka_t *admin = c_producer(b, NULL);
	assert_empty_consumer_group(admin, group, "before the restart");
	rd_kafka_destroy(admin);

	if (kill9)
		ck_assert(h_broker_kill(b) == 0);
	else
		ck_assert_msg(h_broker_stop(b, h_scaled_ms(20000)) >= 0, "broker did not stop on SIGTERM");
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart");

	admin = c_producer(b, NULL);
	assert_empty_consumer_group(admin, group, how);
	int64_t off[2];
	gt_committed_admin(admin, group, topic, np, off);
	ck_assert_msg(off[0] == 3 && off[1] == 4, "%s: offsets %lld %lld, expected 3 4", how,
		      (long long)off[0], (long long)off[1]);
	rd_kafka_destroy(admin);

	/* The group is usable again. */
	gt_member *m2 = gt_member_new(b, "er-2", group, topic, np, kv);
	gt_subscribe(m2);
	gt_wait_settled(&m2, 1, 1, 300, 30000, group);
	gt_close(m2);
	admin = c_producer(b, NULL);
	assert_empty_consumer_group(admin, group, "after a consumer joined and left again");
	rd_kafka_destroy(admin);

	gt_member_free(m);
	gt_member_free(m2);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_delete_group)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "del-topic", *group = "del-group";
	const int np = 3;
	gt_create_topic(b, topic, np);
	gt_member *m = gt_member_new(b, "del-1", group, topic, np,
				     (const char *const[]){"enable.auto.commit", "false", NULL});
	gt_subscribe(m);
	gt_wait_settled(&m, 1, 1, 300, 30000, "del-group");
	commit_offsets(m, (const int64_t[]){5, 6, 7}, np);
	gt_close(m);

	rd_kafka_t *admin = c_producer(b, NULL);
	int64_t off[3];
	gt_committed_admin(admin, group, topic, np, off);
	ck_assert(off[0] == 5 && off[1] == 6 && off[2] == 7);

	rd_kafka_resp_err_t err = gt_delete_group(admin, group);
	ck_assert_msg(err == 0, "DeleteGroups of an Empty group: %s", rd_kafka_err2name(err));
	assert_gone(admin, group, topic, np, "after DeleteGroups");
	rd_kafka_destroy(admin);

	ck_assert(h_broker_kill(b) == 0);
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart after kill -9");
	admin = c_producer(b, NULL);
	assert_gone(admin, group, topic, np, "after DeleteGroups, kill -9 and restart");
	rd_kafka_destroy(admin);

	gt_member_free(m);
	c_stop_broker(b);
}
END_TEST

/* DeleteConsumerGroupOffsets of one partition: the request's error, the
 * group's and the partition's. */
static void delete_offset(rd_kafka_t *rk, const char *group, const char *topic, int32_t part,
			  rd_kafka_resp_err_t *req_err, rd_kafka_resp_err_t *group_err,
			  rd_kafka_resp_err_t *part_err)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, part);
	rd_kafka_DeleteConsumerGroupOffsets_t *dgo = rd_kafka_DeleteConsumerGroupOffsets_new(group, l);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteConsumerGroupOffsets(rk, &dgo, 1, NULL, q);
	rd_kafka_DeleteConsumerGroupOffsets_destroy(dgo);
	rd_kafka_event_t *ev = gt_admin_wait(q, RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT,
					     h_scaled_ms(20000));
	*req_err = rd_kafka_event_error(ev);
	*group_err = RD_KAFKA_RESP_ERR_NO_ERROR;
	*part_err = RD_KAFKA_RESP_ERR__NOENT;
	if (!*req_err) {
		size_t n = 0;
		const rd_kafka_group_result_t **gr = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
		    rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &n);
		ck_assert_int_eq(n, 1);
		const rd_kafka_error_t *e = rd_kafka_group_result_error(gr[0]);
		if (e)
			*group_err = rd_kafka_error_code(e);
		const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(gr[0]);
		for (int k = 0; pl && k < pl->cnt; k++)
			if (strcmp(pl->elems[k].topic, topic) == 0 && pl->elems[k].partition == part)
				*part_err = pl->elems[k].err;
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
}

START_TEST(test_delete_offsets)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "do-topic";
	const int np = 2;
	gt_create_topic(b, topic, np);
	const char *const kv[] = {"enable.auto.commit", "false", NULL};

	/* Empty group with commits on both partitions. */
	gt_member *m = gt_member_new(b, "do-1", "do-empty", topic, np, kv);
	gt_subscribe(m);
	gt_wait_settled(&m, 1, 1, 300, 30000, "do-empty");
	commit_offsets(m, (const int64_t[]){3, 4}, np);
	gt_close(m);

	rd_kafka_t *admin = c_producer(b, NULL);
	rd_kafka_resp_err_t req, grp, part;
	delete_offset(admin, "do-empty", topic, 0, &req, &grp, &part);
	ck_assert_msg(req == 0 && grp == 0 && part == 0,
		      "OffsetDelete on an Empty group: request %s, group %s, partition %s",
		      rd_kafka_err2name(req), rd_kafka_err2name(grp), rd_kafka_err2name(part));
	int64_t off[2];
	gt_committed_admin(admin, "do-empty", topic, np, off);
	ck_assert_msg(off[0] == RD_KAFKA_OFFSET_INVALID && off[1] == 4,
		      "after OffsetDelete of partition 0: offsets %lld %lld, expected none and 4",
		      (long long)off[0], (long long)off[1]);

	/* A group subscribed to the topic keeps its offsets. */
	gt_member *act = gt_member_new(b, "do-2", "do-active", topic, np, kv);
	gt_subscribe(act);
	gt_wait_settled(&act, 1, 1, 300, 30000, "do-active");
	commit_offsets(act, (const int64_t[]){2, -1}, np);
	delete_offset(admin, "do-active", topic, 0, &req, &grp, &part);
	ck_assert_msg(req == 0 && part == RD_KAFKA_RESP_ERR_GROUP_SUBSCRIBED_TO_TOPIC,
		      "OffsetDelete on a group subscribed to the topic: request %s, group %s, "
		      "partition %s, expected GROUP_SUBSCRIBED_TO_TOPIC",
		      rd_kafka_err2name(req), rd_kafka_err2name(grp), rd_kafka_err2name(part));
	gt_committed_admin(admin, "do-active", topic, np, off);
	ck_assert_msg(off[0] == 2, "offset deleted although the group is subscribed: %lld",
		      (long long)off[0]);

	/* Unknown group. */
	delete_offset(admin, "do-nobody", topic, 0, &req, &grp, &part);
	ck_assert_msg(req == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND ||
			  grp == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND,
		      "OffsetDelete on an unknown group: request %s, group %s, partition %s, "
		      "expected GROUP_ID_NOT_FOUND",
		      rd_kafka_err2name(req), rd_kafka_err2name(grp), rd_kafka_err2name(part));

	rd_kafka_destroy(admin);
	gt_close(act);
	gt_member_free(m);
	gt_member_free(act);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_admin");
	TCase *tc = tcase_create("admin");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_describe_and_list);
	tcase_add_loop_test(tc, test_empty_group_after_restart, 0, 2);
	tcase_add_test(tc, test_delete_group);
	tcase_add_test(tc, test_delete_offsets);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
