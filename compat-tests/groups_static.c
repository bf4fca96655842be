/*
 * groups_static.c - static membership (KIP-345, group.instance.id) with
 * librdkafka.
 *
 * restart: three static members (range, session.timeout.ms=6000) share a
 * 6-partition topic; one closes (a static member sends no LeaveGroup) and
 * a new consumer with the same group.instance.id starts at once: it gets
 * exactly the old partitions, and the other two see no rebalance at all
 * (no assign or revoke callback, assignment unchanged) during the restart
 * and 2 s after it.
 *
 * expire: a static member that closes and does not come back is removed
 * once its session timeout (2 s) passes; the others take its partitions.
 *
 * fenced: while a static member is alive, a second consumer with the same
 * group.instance.id joins: it takes the member's place (and partitions), and
 * the old one is fenced: FENCED_INSTANCE_ID, a fatal error in librdkafka.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/groups_common.h"

#define NP 6

static gt_member *static_member(const h_broker *b, const char *name, const char *group,
				const char *topic, const char *session_ms)
{
	return gt_member_new(b, name, group, topic, NP,
			     (const char *const[]){"group.instance.id", name,
						   "partition.assignment.strategy", "range",
						   "session.timeout.ms", session_ms, NULL});
}

START_TEST(test_static_restart_no_rebalance)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "static-topic", *group = "static-group";
	char desc[512];
	gt_create_topic(b, topic, NP);
	gt_member *ms[3];
	ms[0] = static_member(b, "s1", group, topic, "6000");
	ms[1] = static_member(b, "s2", group, topic, "6000");
	ms[2] = static_member(b, "s3", group, topic, "6000");
	for (int i = 0; i < 3; i++)
		gt_subscribe(ms[i]);
	gt_wait_settled(ms, 3, 1, 800, 30000, "three static members");
	gt_describe(ms, 3, desc, sizeof(desc));

	int ev[2], owned[3][NP];
	for (int i = 0; i < 2; i++)
		ev[i] = ms[i]->n_assign + ms[i]->n_revoke;
	for (int i = 0; i < 3; i++)
		memcpy(owned[i], ms[i]->assigned, sizeof(owned[i]));

	/* Restart s3. */
	long long t0 = h_now_ms();
	gt_close(ms[2]);
	gt_member *old = ms[2];
	ms[2] = static_member(b, "s3", group, topic, "6000");
	gt_subscribe(ms[2]);
	gt_wait_settled(ms, 3, 1, 2000, 20000, "after the restart of s3");
	long long took = h_now_ms() - t0;
	fprintf(stderr, "groups_static: restart of a static member: assignment back and 2 s of "
			"quiet after %lld ms\n",
		took);
	char now[512];
	gt_describe(ms, 3, now, sizeof(now));
	ck_assert_msg(memcmp(ms[2]->assigned, owned[2], sizeof(owned[2])) == 0,
		      "restarted static member got other partitions: before %s, after %s", desc,
		      now);
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(ms[i]->n_assign + ms[i]->n_revoke == ev[i],
			      "member %s saw %d rebalance callbacks during the restart of a static "
			      "member (expected none): before %s, after %s",
			      ms[i]->name, ms[i]->n_assign + ms[i]->n_revoke - ev[i], desc, now);
		ck_assert(memcmp(ms[i]->assigned, owned[i], sizeof(owned[i])) == 0);
	}
	ck_assert_msg(took < 6000 + 2000 + h_scaled_ms(2000),
		      "restart took %lld ms: longer than the session timeout", took);

	for (int i = 0; i < 3; i++)
		gt_close(ms[i]);
	for (int i = 0; i < 3; i++)
		gt_member_free(ms[i]);
	gt_member_free(old);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_static_member_expires)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "static-exp-topic", *group = "static-exp-group";
	gt_create_topic(b, topic, NP);
	gt_member *ms[3];
	ms[0] = static_member(b, "e1", group, topic, "6000");
	ms[1] = static_member(b, "e2", group, topic, "6000");
	ms[2] = static_member(b, "e3", group, topic, "2000");
	for (int i = 0; i < 3; i++)
		gt_subscribe(ms[i]);
	gt_wait_settled(ms, 3, 1, 800, 30000, "three static members");
	int ev0 = ms[0]->n_assign + ms[0]->n_revoke;

	long long t0 = h_now_ms();
	gt_close(ms[2]);
	/* Not before the session timeout (1 s after the close started)... */
	gt_poll_all(ms, 2, (int)(t0 + 1000 - h_now_ms()));
	ck_assert_msg(ms[0]->n_assign + ms[0]->n_revoke == ev0,
		      "a static member's close caused a rebalance at once (static members do not "
		      "leave; expected one only after its 2000 ms session timeout)");
	/* ...but after it. */
	long long last = gt_wait_settled(ms, 3, 1, 500, 20000, "after the static member left");
	fprintf(stderr, "groups_static: static member gone: others own its partitions %lld ms "
			"after its close\n",
		last - t0);
	ck_assert_int_eq(gt_count(ms[0]) + gt_count(ms[1]), NP);

	gt_close(ms[0]);
	gt_close(ms[1]);
	for (int i = 0; i < 3; i++)
		gt_member_free(ms[i]);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_static_fenced)
{
	h_broker *b = gt_start_broker(NULL);
	const char *topic = "fence-topic", *group = "fence-group";
	char desc[512];
	gt_create_topic(b, topic, NP);
	gt_member *ms[3];
	ms[0] = static_member(b, "f1", group, topic, "6000");
	ms[1] = static_member(b, "f2", group, topic, "6000");
	gt_subscribe(ms[0]);
	gt_subscribe(ms[1]);
	gt_wait_settled(ms, 2, 1, 500, 30000, "two static members");
	int owned[NP];
	memcpy(owned, ms[1]->assigned, sizeof(owned));

	/* A second live "f2". */
	gt_member *dup = static_member(b, "f2", group, topic, "6000");
	snprintf(dup->name, sizeof(dup->name), "f2-second");
	gt_subscribe(dup);
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	ms[2] = dup;
	while (!ms[1]->fatal_err && ms[1]->last_err != RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID &&
	       h_now_ms() < deadline) {
		gt_poll(ms[0], 20);
		gt_poll(ms[1], 20);
		gt_poll(dup, 20);
	}
	rd_kafka_resp_err_t got = ms[1]->fatal_err ? ms[1]->fatal_err : ms[1]->last_err;
	ck_assert_msg(got == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID,
		      "the first f2 was not fenced after another consumer joined with its "
		      "group.instance.id: fatal error %s, last error %s",
		      rd_kafka_err2name(ms[1]->fatal_err), rd_kafka_err2name(ms[1]->last_err));

	/* The newcomer has the instance's place and partitions; f1 is undisturbed. */
	gt_member *now[2] = {ms[0], dup};
	gt_wait_settled(now, 2, 1, 500, 20000, "after the fencing");
	gt_describe(now, 2, desc, sizeof(desc));
	ck_assert_msg(memcmp(dup->assigned, owned, sizeof(owned)) == 0,
		      "the new f2 does not own the old f2's partitions: %s", desc);

	gt_close(ms[0]);
	gt_close(dup);
	gt_member_free(ms[0]);
	gt_member_free(ms[1]);
	gt_member_free(dup);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("groups_static");
	TCase *tc = tcase_create("static");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_static_restart_no_rebalance);
	tcase_add_test(tc, test_static_member_expires);
	tcase_add_test(tc, test_static_fenced);
	suite_add_tcase(s, tc);
	return s;
}

GT_MAIN(make_suite)
