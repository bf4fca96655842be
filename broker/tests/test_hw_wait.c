/*
 * test_hw_wait.c - answers that wait for a coordinator's write to be
 * committed (hw_wait.c), against a partition object built by hand over a
 * real log in a temporary directory, whose high watermark the test moves
 * as a follower's fetch would (log_set_high_watermark, then a notify of
 * hw_waiters as partition.c does): an answer that goes at once when the
 * mark is committed, one that waits until the high watermark passes it,
 * one failed with NOT_COORDINATOR by a role change, a leader epoch change
 * or a removed topic, one failed with the timeout's error, two marks on
 * two partitions, a request whose connection closes while it waits, and
 * the waits of no request (fired, lost, cancelled).
 *
 * brk_request_complete is replaced by a recorder; the loop is real.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/hw_wait.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/log.h"

brk_server server;

static int completed, completed_how;

void brk_request_complete(brk_request *req, int how)
{
	req->cancel = NULL;
	req->delayed = NULL;
	completed++;
	completed_how = how;
}

typedef struct part {
	char dir[64];
	brk_partition p;
} part;

static part parts[2];

static void part_open(part *x, int32_t epoch)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/samsa-hwwait-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(x->dir));
	log_config cfg;
	log_config_defaults(&cfg);
	memset(&x->p, 0, sizeof(x->p));
	ck_assert_int_eq(log_open(x->dir, &cfg, true, -1, -1, 0, &x->p.log), 0);
	x->p.role = BRK_ROLE_LEADER;
	x->p.leader_epoch = epoch;
}

static void part_close(part *x)
{
	if (x->p.log)
		log_delete(x->p.log);
	x->p.log = NULL;
}

/* Append one record; returns the mark of that write (hw not moved). */
static brk_hw_mark append(part *x)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_add(&b, 1, "k", 1, "v", 1);
	int32_t size = proto_batch_builder_finish(&b);
	ck_assert_int_gt(size, 0);
	int64_t base;
	ck_assert_int_eq(log_append(x->p.log, w.buf + b.start, (size_t)size, x->p.leader_epoch, 1, &base),
			 0);
	proto_writer_free(&w);
	return (brk_hw_mark){ &x->p, x->p.leader_epoch, log_end_offset(x->p.log) };
}

/* What a follower's fetch does on the leader: the high watermark moves and
 * the waiters are told (partition.c). */
static void move_hw(part *x, int64_t hw)
{
	log_set_high_watermark(x->p.log, hw);
	brk_watchlist_notify(&x->p.hw_waiters, 0);
}

static void stop_loop(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

static void run_for(int64_t ms)
{
	brk_timer_add(server.loop, ms, stop_loop, NULL);
	brk_loop_run(server.loop);
}

/* A request with an answer "ok" already in req->out. */
typedef struct fake_req {
	brk_request req;
	proto_arena arena;
	proto_writer out;
} fake_req;

static fake_req fr;

static void req_new(void)
{
	proto_arena_init(&fr.arena, 0);
	proto_writer_init(&fr.out);
	memset(&fr.req, 0, sizeof(fr.req));
	fr.req.arena = &fr.arena;
	fr.req.out = &fr.out;
	proto_write_raw(&fr.out, "ok", 2);
}

static void req_free(void)
{
	proto_arena_free(&fr.arena);
	proto_writer_free(&fr.out);
}

static bool out_is(const char *s)
{
	return fr.out.len == strlen(s) && memcmp(fr.out.buf, s, fr.out.len) == 0;
}

static int16_t failed_with;
static int fail_calls;
static int fail_fn(brk_request *req, void *arg, int16_t err);

/* brk_hw_answer on the test's request, the group coordinator's timeout. */
#define ANSWER(marks, n, ms) \
	brk_hw_answer(&fr.req, (marks), (n), (ms), KERR_COORDINATOR_NOT_AVAILABLE, fail_fn, NULL)

/* Encodes the error as "err <code>". */
static int fail_fn(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	ck_assert_uint_eq(req->out->len, 0); /* emptied first */
	char s[32];
	snprintf(s, sizeof(s), "err %d", (int)err);
	proto_write_raw(req->out, s, strlen(s));
	failed_with = err;
	fail_calls++;
	return BRK_RESPOND;
}

static void setup(void)
{
	memset(&server, 0, sizeof(server));
	server.loop = brk_loop_new();
	ck_assert_ptr_nonnull(server.loop);
	part_open(&parts[0], 3);
	part_open(&parts[1], 7);
	completed = completed_how = fail_calls = 0;
	failed_with = -1;
	req_new();
}

static void teardown(void)
{
	req_free();
	part_close(&parts[0]);
	part_close(&parts[1]);
	rmdir(parts[0].dir);
	rmdir(parts[1].dir);
	brk_loop_free(server.loop);
	server.loop = NULL;
}

START_TEST(test_mark_states)
{
	brk_hw_mark none = { 0 };
	ck_assert_int_eq(brk_hw_mark_state(&none), BRK_HW_COMMITTED);
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(m.offset, 1);
	ck_assert_int_eq(brk_hw_mark_state(&m), BRK_HW_PENDING);
	log_set_high_watermark(parts[0].p.log, 1);
	ck_assert_int_eq(brk_hw_mark_state(&m), BRK_HW_COMMITTED);
	parts[0].p.leader_epoch = 4;
	ck_assert_int_eq(brk_hw_mark_state(&m), BRK_HW_LOST);
	parts[0].p.leader_epoch = 3;
	parts[0].p.role = BRK_ROLE_FOLLOWER;
	ck_assert_int_eq(brk_hw_mark_state(&m), BRK_HW_LOST);
}
END_TEST

START_TEST(test_committed_answers_at_once)
{
	brk_hw_mark m = append(&parts[0]);
	log_set_high_watermark(parts[0].p.log, m.offset); /* a single node */
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_RESPOND);
	ck_assert(out_is("ok"));
	ck_assert_int_eq(fail_calls, 0);
	brk_hw_mark none = { 0 };
	ck_assert_int_eq(ANSWER(&none, 1, 5000), BRK_RESPOND);
}
END_TEST

START_TEST(test_waits_for_hw)
{
	brk_hw_mark m1 = append(&parts[0]);
	brk_hw_mark m2 = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m2, 1, 5000), BRK_DELAYED);
	ck_assert_ptr_nonnull(fr.req.cancel);
	/* The high watermark passes the first write only: still waiting. */
	move_hw(&parts[0], m1.offset);
	run_for(20);
	ck_assert_int_eq(completed, 0);
	move_hw(&parts[0], m2.offset);
	run_for(20);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(completed_how, BRK_COMPLETE_RESPOND);
	ck_assert(out_is("ok"));
	ck_assert_int_eq(fail_calls, 0);
	ck_assert_ptr_null(parts[0].p.hw_waiters.head);
}
END_TEST

START_TEST(test_role_change_fails)
{
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_DELAYED);
	/* The controller makes another broker leader (partition.c wakes the
	 * waiters on a new epoch). */
	parts[0].p.role = BRK_ROLE_FOLLOWER;
	parts[0].p.leader_epoch = 4;
	brk_watchlist_notify(&parts[0].p.hw_waiters, 0);
	run_for(20);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(failed_with, KERR_NOT_COORDINATOR);
	ck_assert(out_is("err 16"));
}
END_TEST

START_TEST(test_epoch_change_fails)
{
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_DELAYED);
	/* Leader again, at a new epoch: the write is not known to be kept. */
	parts[0].p.leader_epoch = 4;
	move_hw(&parts[0], m.offset);
	run_for(20);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(failed_with, KERR_NOT_COORDINATOR);
}
END_TEST

START_TEST(test_lost_at_once)
{
	brk_hw_mark m = append(&parts[0]);
	parts[0].p.role = BRK_ROLE_NONE;
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_RESPOND);
	ck_assert_int_eq(failed_with, KERR_NOT_COORDINATOR);
	ck_assert_int_eq(completed, 0);
}
END_TEST

START_TEST(test_topic_removed_fails)
{
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_DELAYED);
	brk_watchlist_detach_all(&parts[0].p.hw_waiters);
	/* The partition is freed with its topic: nothing may look at it. */
	part_close(&parts[0]);
	memset(&parts[0].p, 0xa5, sizeof(parts[0].p));
	run_for(20);
	memset(&parts[0].p, 0, sizeof(parts[0].p));
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(failed_with, KERR_NOT_COORDINATOR);
}
END_TEST

START_TEST(test_timeout)
{
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m, 1, 30), BRK_DELAYED);
	run_for(10);
	ck_assert_int_eq(completed, 0);
	run_for(60);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(failed_with, KERR_COORDINATOR_NOT_AVAILABLE);
	ck_assert(out_is("err 15"));
	ck_assert_ptr_null(parts[0].p.hw_waiters.head);
}
END_TEST

START_TEST(test_two_partitions)
{
	brk_hw_mark m[3] = { append(&parts[0]), append(&parts[1]), append(&parts[0]) };
	ck_assert_int_eq(ANSWER(m, 3, 5000), BRK_DELAYED);
	move_hw(&parts[0], m[2].offset);
	run_for(20);
	ck_assert_int_eq(completed, 0);
	move_hw(&parts[1], m[1].offset);
	run_for(20);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(fail_calls, 0);
	ck_assert_ptr_null(parts[0].p.hw_waiters.head);
	ck_assert_ptr_null(parts[1].p.hw_waiters.head);
}
END_TEST

START_TEST(test_connection_closes)
{
	brk_hw_mark m = append(&parts[0]);
	ck_assert_int_eq(ANSWER(&m, 1, 5000), BRK_DELAYED);
	fr.req.cancel(&fr.req); /* what conn.c does on a close */
	ck_assert_ptr_null(parts[0].p.hw_waiters.head);
	move_hw(&parts[0], m.offset);
	run_for(40);
	ck_assert_int_eq(completed, 0);
}
END_TEST

static int16_t wait_err;
static int wait_calls;

static void on_wait(void *arg, int16_t err)
{
	ck_assert_ptr_eq(arg, &wait_calls);
	wait_err = err;
	wait_calls++;
}

START_TEST(test_wait_without_request)
{
	wait_calls = 0;
	brk_hw_mark m = append(&parts[0]);
	brk_hw_wait *w = brk_hw_wait_start(&m, 5000, KERR_REQUEST_TIMED_OUT, on_wait, &wait_calls);
	ck_assert_ptr_nonnull(w);
	run_for(10);
	ck_assert_int_eq(wait_calls, 0);
	move_hw(&parts[0], m.offset);
	run_for(10);
	ck_assert_int_eq(wait_calls, 1);
	ck_assert_int_eq(wait_err, KERR_NONE);
	/* Not pending: nothing to wait for. */
	ck_assert_ptr_null(brk_hw_wait_start(&m, 5000, KERR_REQUEST_TIMED_OUT, on_wait, &wait_calls));

	/* Lost. */
	brk_hw_mark m2 = append(&parts[0]);
	ck_assert_ptr_nonnull(brk_hw_wait_start(&m2, 5000, KERR_REQUEST_TIMED_OUT, on_wait, &wait_calls));
	parts[0].p.role = BRK_ROLE_FOLLOWER;
	brk_watchlist_notify(&parts[0].p.hw_waiters, 0);
	run_for(10);
	ck_assert_int_eq(wait_calls, 2);
	ck_assert_int_eq(wait_err, KERR_NOT_COORDINATOR);

	/* Timed out, and cancelled. */
	brk_hw_mark m3 = append(&parts[1]);
	ck_assert_ptr_nonnull(brk_hw_wait_start(&m3, 20, KERR_REQUEST_TIMED_OUT, on_wait, &wait_calls));
	run_for(50);
	ck_assert_int_eq(wait_calls, 3);
	ck_assert_int_eq(wait_err, KERR_REQUEST_TIMED_OUT);
	w = brk_hw_wait_start(&m3, 20, KERR_REQUEST_TIMED_OUT, on_wait, &wait_calls);
	ck_assert_ptr_nonnull(w);
	brk_hw_wait_cancel(w);
	ck_assert_ptr_null(parts[1].p.hw_waiters.head);
	run_for(50);
	ck_assert_int_eq(wait_calls, 3);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hw_wait");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_mark_states);
	tcase_add_test(tc, test_committed_answers_at_once);
	tcase_add_test(tc, test_waits_for_hw);
	tcase_add_test(tc, test_role_change_fails);
	tcase_add_test(tc, test_epoch_change_fails);
	tcase_add_test(tc, test_lost_at_once);
	tcase_add_test(tc, test_topic_removed_fails);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_two_partitions);
	tcase_add_test(tc, test_connection_closes);
	tcase_add_test(tc, test_wait_without_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
