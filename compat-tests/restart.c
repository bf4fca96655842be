/*
 * restart.c - process life cycle: SIGTERM makes the broker exit 0 and leave
 * Kafka's clean-shutdown marker (.kafka_cleanshutdown) in the log dir; the
 * marker is not there while a broker runs (or a kill -9 would leave a stale
 * one and skip recovery); data written before a clean stop is all there
 * after a restart; a second broker on a log dir in use exits with code 1
 * and says the dir is locked (Kafka's .lock in each log dir).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"

static int has_marker(const h_broker *b)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/.kafka_cleanshutdown", b->dir);
	return access(path, F_OK) == 0;
}

START_TEST(test_sigterm_clean_shutdown)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, "life", 1, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, "life", 1, h_scaled_ms(10000));
	rd_kafka_destroy(p);
	c_produce_seq(b, "life", 500, 0, "1");

	int st = h_broker_stop(b, h_scaled_ms(20000));
	ck_assert_msg(st != -1, "broker did not exit on SIGTERM");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "SIGTERM: broker ended with %s %d, expected exit code 0",
		      WIFEXITED(st) ? "exit code" : "signal",
		      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	ck_assert_msg(has_marker(b), "no .kafka_cleanshutdown in %s after SIGTERM", b->dir);

	ck_assert_msg(h_broker_restart(b) == 0, "restart after a clean stop failed");
	c_expect_seq(b, "life", 500);
	c_produce_seq(b, "life", 100, 500, "1");
	c_expect_seq(b, "life", 600);

	/* SIGINT is a clean stop too. */
	kill(b->pid, SIGINT);
	st = h_broker_wait_exit(b, h_scaled_ms(20000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "SIGINT: broker did not exit 0 (status 0x%x)", st);
	ck_assert_msg(has_marker(b), "no .kafka_cleanshutdown after SIGINT");
	h_broker_free(b);
}
END_TEST

START_TEST(test_marker_not_kept_while_running)
{
	h_broker *b = c_start_broker(NULL);
	ck_assert_msg(!has_marker(b), "fresh dir: marker present while running");
	ck_assert_int_eq(WEXITSTATUS(h_broker_stop(b, h_scaled_ms(20000))), 0);
	ck_assert(has_marker(b));
	ck_assert_int_eq(h_broker_restart(b), 0);
	/* Kafka deletes the marker once the logs are loaded. */
	long long deadline = h_now_ms() + h_scaled_ms(5000);
	while (has_marker(b) && h_now_ms() < deadline)
		usleep(50000);
	ck_assert_msg(!has_marker(b),
		      ".kafka_cleanshutdown still present while the broker runs: a kill -9 now "
		      "would skip log recovery on the next start");
	h_broker_kill(b);
	ck_assert_msg(!has_marker(b), "marker present after kill -9");
	ck_assert_int_eq(h_broker_restart(b), 0);
	c_stop_broker(b);
}
END_TEST

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return 1;
	return 0;
}

START_TEST(test_second_broker_locked_out)
{
	h_broker *a = c_start_broker(NULL);
	c_produce_seq(a, "locked", 10, 0, "1");

	h_broker *second = h_broker_new_same_dir(a, NULL);
	ck_assert(second != NULL);
	ck_assert_int_eq(h_broker_launch(second), 0);
	int st = h_broker_wait_exit(second, h_scaled_ms(10000));
	char *log = h_broker_read_log(second);
	ck_assert_msg(st != -1, "second broker on the same log dir is still running");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "second broker ended with status 0x%x, expected exit code 1; output: %s", st,
		      log ? log : "");
	ck_assert_msg(log && contains_ci(log, "lock"),
		      "second broker's message does not mention the lock: %s", log ? log : "");
	free(log);
	h_broker_free(second);

	/* The first one did not notice. */
	c_assert_broker_serving(a);
	c_produce_seq(a, "locked", 10, 10, "1");
	c_expect_seq(a, "locked", 20);
	st = h_broker_stop(a, h_scaled_ms(20000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "first broker: SIGTERM status 0x%x", st);
	h_broker_free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("restart");
	TCase *tc = tcase_create("lifecycle");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sigterm_clean_shutdown);
	tcase_add_test(tc, test_marker_not_kept_while_running);
	tcase_add_test(tc, test_second_broker_locked_out);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
