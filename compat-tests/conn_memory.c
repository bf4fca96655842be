/*
 * conn_memory.c - memory of idle connections (issue 15): an idle connection
 * costs a few KiB, and once connections close the broker's memory goes back
 * near where it was before they came.
 *
 * NCONNS connections (under this machine's open-file limit of 20,000; the
 * full-size figures are bench/connbench's) each send ApiVersions v0 and
 * Metadata v1, as a client leaves a connection it keeps, then say nothing.
 * The broker's VmRSS (/proc/PID/status) is read before, while they idle and
 * after they closed; memory is given back on timers (broker/conn.c: buffers
 * of a connection quiet for a second, malloc_trim at most every 5 s), so
 * each bound is waited for, up to 20 s.
 *
 * Bounds, with their margins:
 *  - idle: at most IDLE_KIB_PER_CONN KiB per connection above the VmRSS
 *    before. A parked connection is its struct, about 0.7 KiB measured; one
 *    that keeps its buffers costs about 9 KiB (the input buffer's touched
 *    pages, the arena's first chunk, the response writers), and one whose
 *    struct sits between its freed buffers in malloc's heap about 4.7 KiB
 *    (the pages around the struct): this bound refuses both;
 *  - closed: at most AFTER_CLOSE_KIB above the VmRSS before. What stays is
 *    the event loop's table of descriptor numbers (24 B per number ever
 *    used, 0.2 MiB here), one block of connection structs and malloc's
 *    bookkeeping, about 1.5 MiB measured; holding the closed connections'
 *    memory would be about 45 MiB.
 * AddressSanitizer's allocator keeps its own pools (and a quarantine, set
 * to 0 here), so in a sanitizer build the figures are printed, not bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/wire.h"

#define NCONNS 5000
#define IDLE_KIB_PER_CONN 2.0
#define AFTER_CLOSE_KIB 4096

#if defined(__SANITIZE_ADDRESS__)
#define BOUNDS_HOLD 0
#else
#define BOUNDS_HOLD 1
#endif

static int broker_fds(const h_broker *b)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)b->pid);
	DIR *d = opendir(path);
	ck_assert(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Wait until the broker holds at most n descriptors (up to 20 s). */
static void wait_fds_at_most(const h_broker *b, int n)
{
	long long deadline = h_now_ms() + h_scaled_ms(20000);
	while (broker_fds(b) > n) {
		ck_assert_msg(h_now_ms() < deadline, "the broker still holds %d descriptors, not %d",
			      broker_fds(b), n);
		usleep(20 * 1000);
	}
}

/* The broker's VmRSS once it is at most bound_kb, polled every 100 ms for
 * up to 20 s (3 s where the bounds do not hold); the last value seen when
 * it never is. */
static long rss_down_to(const h_broker *b, long bound_kb, long long *took_ms)
{
	long long t0 = h_now_ms();
	int wait_ms = h_scaled_ms(BOUNDS_HOLD ? 20000 : 3000);
	long kb;
	while ((kb = h_broker_status_kb(b, "VmRSS")) > bound_kb && h_now_ms() - t0 < wait_ms)
		usleep(100 * 1000);
	*took_ms = h_now_ms() - t0;
	return kb;
}

static void no_asan_quarantine(void)
{
#if defined(__SANITIZE_ADDRESS__)
	const char *cur = getenv("ASAN_OPTIONS");
	char opts[1024];
	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=0", cur ? cur : "", cur && *cur ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
#endif
}

START_TEST(test_idle_and_closed)
{
	no_asan_quarantine();
	h_broker *b = c_start_broker(NULL);
	usleep(500 * 1000); /* the readiness probe's connection is closed too */
	int base_fds = broker_fds(b);
	long base = h_broker_status_kb(b, "VmRSS");

	static int fds[NCONNS];
	uint8_t req[64], mbody[4];
	w_put32(mbody, 0); /* no topic */
	int mlen = w_build_request(req, sizeof(req), 3, 1, 2, "conn_memory", mbody, sizeof(mbody));
	for (int i = 0; i < NCONNS; i++) {
		fds[i] = w_connect(b->port, h_scaled_ms(10000));
		ck_assert_msg(fds[i] >= 0, "connection %d failed", i);
		ck_assert_int_eq(w_api_versions_v0(fds[i], 1, h_scaled_ms(10000)), 0);
		ck_assert_int_eq(w_send_all(fds[i], req, (size_t)mlen, h_scaled_ms(10000)), 0);
		uint8_t *resp = NULL;
		int32_t len;
		ck_assert_int_eq(w_recv_frame(fds[i], &resp, &len, 1 << 20, h_scaled_ms(10000)), WIRE_OK);
		ck_assert_int_eq(w_get32(resp), 2);
		free(resp);
	}
	long busy = h_broker_status_kb(b, "VmRSS");

	long long took;
	long idle_bound = base + (long)(IDLE_KIB_PER_CONN * NCONNS);
	long idle = rss_down_to(b, idle_bound, &took);
	fprintf(stderr, "conn_memory: VmRSS %ld KiB before, %ld KiB with %d connections that just "
		"spoke (%.2f KiB each), %ld KiB %lld ms later (%.2f KiB per idle connection)\n",
		base, busy, NCONNS, (double)(busy - base) / NCONNS, idle, took,
		(double)(idle - base) / NCONNS);
	/* Idle connections are still served. */
	ck_assert_int_eq(w_api_versions_v0(fds[0], 3, h_scaled_ms(5000)), 0);
	ck_assert_int_eq(w_api_versions_v0(fds[NCONNS - 1], 3, h_scaled_ms(5000)), 0);
	if (BOUNDS_HOLD)
		ck_assert_msg(idle <= idle_bound, "%d idle connections hold %.2f KiB each (bound %.1f)",
			      NCONNS, (double)(idle - base) / NCONNS, IDLE_KIB_PER_CONN);

	for (int i = 0; i < NCONNS; i++)
		close(fds[i]);
	wait_fds_at_most(b, base_fds);
	long closed = rss_down_to(b, base + AFTER_CLOSE_KIB, &took);
	fprintf(stderr, "conn_memory: all %d closed: VmRSS %ld KiB after %lld ms (%+ld KiB against "
		"before)\n", NCONNS, closed, took, closed - base);
	if (BOUNDS_HOLD)
		ck_assert_msg(closed <= base + AFTER_CLOSE_KIB, "VmRSS stays %ld KiB above what it was "
			      "before the connections (bound %d KiB)", closed - base, AFTER_CLOSE_KIB);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_memory");
	TCase *tc = tcase_create("conn_memory");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_idle_and_closed);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
