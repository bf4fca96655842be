/*
 * groups_commit.c - committed offsets of a consumer group, through
 * librdkafka's high-level consumer with enable.auto.commit=false.
 *
 * resume: a member consumes 40 of 90 records (3 partitions), commits
 * synchronously (rd_kafka_commit), reads the commits back
 * (rd_kafka_committed, OffsetFetch), consumes 10 more without committing
 * and closes; a new member of the group starts exactly at the committed
 * offset of every partition and reads on without a gap. It then commits
 * partition 0 back to offset 7 with metadata "checkpoint-7" (commits carry
 * metadata and may move backwards); a third member reads the metadata back
 * and starts partition 0 at 7. Once as is, once with the broker killed with
 * kill -9 and restarted before each new member (the commits are records in
 * __consumer_offsets and must survive).
 *
 * manual: a consumer that assigns partitions itself (no subscription, so
 * generation -1 and no member id: Kafka's "simple" group) may commit; a
 * partition never committed reads back as no offset (OffsetFetch -1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/groups_common.h"

#define NP 3
#define PER_PART 30

/* Consume one record at a time: the offsets per partition must be
 * contiguous from first[p]. Stops after max records or when every
 * partition reached end[p]. Returns the number consumed; next[p] is the
 * offset after the last one consumed (first[p] if none). */
static int consume(gt_member *m, const int64_t *first, const int64_t *end, int64_t *next,
		   int max, const char *what)
{
	int n = 0;
	for (int p = 0; p < NP; p++)
		next[p] = first[p];
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	while (n < max) {
		int done = 1;
		for (int p = 0; p < NP; p++)
			done &= next[p] >= end[p];
		if (done)
			break;
		ck_assert_msg(h_now_ms() < deadline,
			      "%s: only %d records consumed in 30 s (next offsets %lld %lld %lld)",
			      what, n, (long long)next[0], (long long)next[1], (long long)next[2]);
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, 100);
		if (!msg)
			continue;
		if (msg->err) {
			rd_kafka_resp_err_t err = msg->err;
			rd_kafka_message_destroy(msg);
			ck_abort_msg("%s: consumer error %s", what, rd_kafka_err2name(err));
		}
		int32_t p = msg->partition;
		int64_t off = msg->offset;
		rd_kafka_message_destroy(msg);
		ck_assert_msg(p >= 0 && p < NP, "%s: record of partition %d", what, (int)p);
		ck_assert_msg(off == next[p],
			      "%s: partition %d: got offset %lld, expected %lld (%s)", what, (int)p,
			      (long long)off, (long long)next[p],
			      off < next[p] ? "before the committed offset: not resumed from the commit"
					    : "records skipped");
		next[p] = off + 1;
		n++;
	}
	return n;
}

/* rd_kafka_committed of all partitions: off[p] (RD_KAFKA_OFFSET_INVALID
 * when none), meta0 (may be NULL) gets partition 0's metadata. */
static void committed(gt_member *m, const char *topic, int64_t *off, char *meta0, size_t cap)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NP);
	for (int p = 0; p < NP; p++)
		rd_kafka_topic_partition_list_add(l, topic, p);
	rd_kafka_resp_err_t err = rd_kafka_committed(m->rk, l, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "rd_kafka_committed: %s", rd_kafka_err2name(err));
	if (meta0)
		meta0[0] = 0;
	for (int k = 0; k < l->cnt; k++) {
		rd_kafka_topic_partition_t *tp = &l->elems[k];
		ck_assert_msg(tp->err == 0, "rd_kafka_committed: partition %d: %s",
			      (int)tp->partition, rd_kafka_err2name(tp->err));
		off[tp->partition] = tp->offset;
		if (meta0 && tp->partition == 0 && tp->metadata)
			snprintf(meta0, cap, "%.*s", (int)tp->metadata_size,
				 (const char *)tp->metadata);
	}
	rd_kafka_topic_partition_list_destroy(l);
}

static gt_member *new_member(const h_broker *b, const char *name, const char *group,
			     const char *topic)
{
	gt_member *m = gt_member_new(b, name, group, topic, NP,
				     (const char *const[]){"enable.auto.commit", "false", NULL});
	gt_subscribe(m);
	return m;
}

static void maybe_kill_restart(h_broker *b, int kill9)
{
	if (!kill9)
		return;
	ck_assert_msg(h_broker_kill(b) == 0, "broker was not running before kill -9");
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart after kill -9");
}

START_TEST(test_commit_resume)
{
	int kill9 = _i;
	const char *how = kill9 ? "after kill -9 and restart" : "after close and reopen";
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "commit-topic", *group = "commit-group";
	gt_create_topic(b, topic, NP);
	int64_t end[NP] = {0};
	gt_produce(b, topic, NP, NP * PER_PART, "c", end);

	/* First member: 40 records, commit, 10 more, close. */
	gt_member *m1 = new_member(b, "first", group, topic);
	int64_t zero[NP] = {0}, pos[NP], cpos[NP], got[NP];
	int n = consume(m1, zero, end, pos, 40, "first member");
	ck_assert_int_eq(n, 40);
	rd_kafka_resp_err_t err = rd_kafka_commit(m1->rk, NULL, 0);
	ck_assert_msg(err == 0, "rd_kafka_commit: %s", rd_kafka_err2name(err));
	committed(m1, topic, got, NULL, 0);
	for (int p = 0; p < NP; p++) {
		int64_t want = pos[p] > 0 ? pos[p] : RD_KAFKA_OFFSET_INVALID;
		ck_assert_msg(got[p] == want,
			      "partition %d: committed offset reads back as %lld, expected %lld",
			      p, (long long)got[p], (long long)want);
	}
	memcpy(cpos, pos, sizeof(cpos));
	int64_t more[NP];
	n = consume(m1, pos, end, more, 10, "first member, uncommitted");
	ck_assert_int_eq(n, 10);
	gt_close(m1);
	maybe_kill_restart(b, kill9);

	/* Second member: exactly after the last commit, then to the end. */
	gt_member *m2 = new_member(b, "second", group, topic);
	n = consume(m2, cpos, end, pos, NP * PER_PART, how);
	ck_assert_int_eq(n, NP * PER_PART - 40);

	/* Commit partition 0 back to 7 with metadata. */
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, topic, 0);
	tp->offset = 7;
	tp->metadata = strdup("checkpoint-7");
	tp->metadata_size = strlen("checkpoint-7");
	err = rd_kafka_commit(m2->rk, l, 0);
	ck_assert_msg(err == 0 && l->elems[0].err == 0, "commit of offset 7: %s / %s",
		      rd_kafka_err2name(err), rd_kafka_err2name(l->elems[0].err));
	rd_kafka_topic_partition_list_destroy(l);
	gt_close(m2);
	maybe_kill_restart(b, kill9);

	/* Third member: partition 0 from 7, the others from the first commit. */
	gt_member *m3 = new_member(b, "third", group, topic);
	char meta[64];
	committed(m3, topic, got, meta, sizeof(meta));
	ck_assert_msg(got[0] == 7, "%s: partition 0 committed offset %lld, expected 7", how,
		      (long long)got[0]);
	ck_assert_msg(strcmp(meta, "checkpoint-7") == 0,
		      "%s: partition 0 commit metadata \"%s\", expected \"checkpoint-7\"", how, meta);
	int64_t from[NP];
	for (int p = 0; p < NP; p++) {
		from[p] = p == 0 ? 7 : cpos[p];
		int64_t want = p == 0 ? 7 : cpos[p] > 0 ? cpos[p] : RD_KAFKA_OFFSET_INVALID;
		ck_assert_msg(got[p] == want, "%s: partition %d committed offset %lld, expected %lld",
			      how, p, (long long)got[p], (long long)want);
	}
	int64_t want_n = 0;
	for (int p = 0; p < NP; p++)
		want_n += end[p] - from[p];
	n = consume(m3, from, end, pos, NP * PER_PART, "third member");
	ck_assert_int_eq(n, want_n);
	gt_close(m3);

	gt_member_free(m1);
	gt_member_free(m2);
	gt_member_free(m3);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_manual_assignment_commit)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "manual-topic", *group = "manual-group";
	gt_create_topic(b, topic, NP);
	int64_t end[NP] = {0};
	gt_produce(b, topic, NP, NP * 10, "m", end);

	gt_member *m = gt_member_new(b, "manual", group, topic, NP,
				     (const char *const[]){"enable.auto.commit", "false", NULL});
	int64_t got[NP];
	committed(m, topic, got, NULL, 0);
	for (int p = 0; p < NP; p++)
		ck_assert_msg(got[p] == RD_KAFKA_OFFSET_INVALID,
			      "partition %d never committed reads back as %lld, expected none (-1)",
			      p, (long long)got[p]);

	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0)->offset = 0;
	ck_assert_int_eq(rd_kafka_assign(m->rk, l), 0);
	rd_kafka_topic_partition_list_destroy(l);
	int64_t zero[NP] = {0}, stop[NP] = {5, 0, 0}, pos[NP];
	ck_assert_int_eq(consume(m, zero, stop, pos, 5, "manual assignment"), 5);

	l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0)->offset = 5;
	rd_kafka_resp_err_t err = rd_kafka_commit(m->rk, l, 0);
	ck_assert_msg(err == 0 && l->elems[0].err == 0,
		      "commit without a subscription (generation -1): %s / %s",
		      rd_kafka_err2name(err), rd_kafka_err2name(l->elems[0].err));
	rd_kafka_topic_partition_list_destroy(l);

	/* A second manual consumer of the same group commits another partition. */
	gt_member *m2 = gt_member_new(b, "manual2", group, topic, NP,
				      (const char *const[]){"enable.auto.commit", "false", NULL});
	l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 2)->offset = 3;
	err = rd_kafka_commit(m2->rk, l, 0);
	ck_assert_msg(err == 0 && l->elems[0].err == 0, "second manual commit: %s / %s",
		      rd_kafka_err2name(err), rd_kafka_err2name(l->elems[0].err));
	rd_kafka_topic_partition_list_destroy(l);

	committed(m, topic, got, NULL, 0);
	ck_assert_int_eq(got[0], 5);
	ck_assert_int_eq(got[1], RD_KAFKA_OFFSET_INVALID);
	ck_assert_int_eq(got[2], 3);

	rd_kafka_t *admin = c_producer(b, NULL);
	gt_committed_admin(admin, group, topic, NP, got);
	ck_assert_int_eq(got[0], 5);
	ck_assert_int_eq(got[1], RD_KAFKA_OFFSET_INVALID);
	ck_assert_int_eq(got[2], 3);
	rd_kafka_destroy(admin);

	gt_close(m);
	gt_close(m2);
	gt_member_free(m);
	gt_member_free(m2);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_commit");
	TCase *tc = tcase_create("commit");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_commit_resume, 0, 2);
	tcase_add_test(tc, test_manual_assignment_commit);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
