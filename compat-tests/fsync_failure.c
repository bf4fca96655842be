/*
 * fsync_failure.c - a segment fsync that fails with EIO (injected by the
 * LD_PRELOAD shim failsync.c while a trigger file exists). Linux reports a
 * lost write once and then drops the dirty pages, so a later fsync that
 * succeeds proves nothing. Kafka takes the log dir offline
 * (LogDirFailureChannel); Samsa keeps serving and instead: says so once,
 * pins the recovery point, reports every later flush as failed, and so
 * leaves no clean-shutdown marker and exits 1 on SIGTERM; the next start
 * recovers the log from the pinned recovery point (CRC of every batch
 * after it). Checked here: the broker serves through the failure, the stop
 * is not clean, the restart recovers, and every acknowledged record is
 * there once and in order in a log that passes logcheck.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv, POSIX extensions */
#endif
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/logcheck.h"

#define TOPIC "fsync-failure"

/* Occurrences of needle in the broker's log. */
static int log_count(const h_broker *b, const char *needle)
{
	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	int n = 0;
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(log);
	return n;
}

/* Wait until needle is in the broker's log (fail after timeout_ms). */
static void wait_log(const h_broker *b, const char *needle, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	while (log_count(b, needle) == 0) {
		ck_assert_msg(h_now_ms() < deadline, "no \"%s\" in the broker log after %d ms", needle,
			      timeout_ms);
		usleep(50 * 1000);
	}
}

START_TEST(test_failed_fsync_pins_recovery)
{
	char trigger[PATH_MAX];
	snprintf(trigger, sizeof(trigger), "%s/failsync-trigger", h_base_dir());
	unlink(trigger);
	/* Only the broker's exec sees the shim; the restart below runs
	 * without it. An ASan broker must accept a library before its
	 * runtime. */
	const char *asan = getenv("ASAN_OPTIONS");
	char asan_opts[512];
	snprintf(asan_opts, sizeof(asan_opts), "%s%sverify_asan_link_order=0", asan ? asan : "",
		 asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", asan_opts, 1);
	setenv("LD_PRELOAD", FAILSYNC_SO, 1);
	setenv("SAMSA_FAILSYNC_TRIGGER", trigger, 1);
	/* A flush after every append, checked every 100 ms. */
	h_broker *b = h_broker_new((const char *const[]){"log.flush.interval.messages=1",
							  "log.flush.scheduler.interval.ms=100", NULL});
	ck_assert_ptr_nonnull(b);
	int started = h_broker_start(b);
	unsetenv("LD_PRELOAD");
	ck_assert_msg(started == 0, "broker did not start with %s preloaded", FAILSYNC_SO);

	c_produce_seq(b, TOPIC, 100, 0, "all");
	usleep((useconds_t)h_scaled_ms(500) * 1000); /* flushed while the disk is good */
	ck_assert_int_eq(log_count(b, "failsync:"), 0);

	/* The disk loses a write: the broker goes on serving. */
	int fd = open(trigger, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	c_produce_seq(b, TOPIC, 100, 100, "all");
	wait_log(b, "failsync:", h_scaled_ms(10000));
	wait_log(b, "fsync failed", h_scaled_ms(10000));
	c_produce_seq(b, TOPIC, 100, 200, "all");
	c_expect_seq(b, TOPIC, 300);

	/* The disk is good again: a later fsync succeeds but cannot vouch
	 * for the pages the failed one dropped, so the recovery point stays
	 * and the stop is not clean. */
	ck_assert_int_eq(unlink(trigger), 0);
	c_produce_seq(b, TOPIC, 100, 300, "all");
	usleep((useconds_t)h_scaled_ms(500) * 1000);
	ck_assert_int_eq(log_count(b, "fsync failed"), 1); /* said once */
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1, "broker did not stop on SIGTERM");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "broker ended with status %#x after a failed fsync, expected exit code 1", st);
	ck_assert_int_eq(log_count(b, "flushing the partition logs failed"), 1);
	/* Exit code 1 is also what a sanitizer report ends with. */
	ck_assert_int_eq(log_count(b, "Sanitizer"), 0);
	ck_assert_int_eq(log_count(b, "runtime error"), 0);
	char marker[PATH_MAX + 32];
	snprintf(marker, sizeof(marker), "%s/.kafka_cleanshutdown", b->dir);
	ck_assert_msg(access(marker, F_OK) != 0, "clean-shutdown marker written after a failed fsync");

	/* The restart (no shim) recovers, and every record is there. */
	ck_assert_int_eq(h_broker_restart(b), 0);
	ck_assert_int_eq(log_count(b, "recovered after an unclean shutdown"), 1);
	c_expect_seq(b, TOPIC, 400);
	st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the recovered broker did not stop cleanly (status %#x)", st);
	char pdir[PATH_MAX + 64];
	snprintf(pdir, sizeof(pdir), "%s/%s-0", b->dir, TOPIC);
	lc_options o = {.first = 0};
	lc_result r;
	ck_assert_msg(lc_check_dir(pdir, &o, &r) == 0, "logcheck: %s", r.error);
	h_broker_free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fsync_failure");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_failed_fsync_pins_recovery);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
