/*
 * connbench.c - what idle client connections cost samsa (issue 15's
 * "20,000 idle connections" figures). Prints figures, never pass/fail.
 *
 * One broker (compat harness, 127.0.0.1, a temporary log dir), then -r
 * rounds of:
 *  1. open -n connections, each a plain TCP connect that sends nothing,
 *     in batches, until the broker holds them all (its /proc/PID/fd count);
 *     VmRSS then: the cost of a connection that never spoke;
 *  2. on each of them one ApiVersions v0 and one Metadata v1 for no topic,
 *     as a client leaves a connection it keeps for later; VmRSS at once,
 *     and after -w ms with nothing sent: the cost of an idle connection
 *     that spoke;
 *  3. while they are open, -s new clients one after the other: connect,
 *     ApiVersions v0, Metadata v1 (every topic), close; the time from the
 *     connect call to each answer (p50, p99, max). The same is measured
 *     before the first round, with no other connection open;
 *  4. close them all (FIN, as a client does), wait until the broker has
 *     closed them too (its fd count), then VmRSS at once and the lowest
 *     seen over the next -w ms (default 8000: the broker gives memory
 *     back to the system at most every 5 s), with when it was reached.
 * "per connection" is (VmRSS with them open - VmRSS before) / n, in KiB.
 *
 * The default -n 19800 is what fits under this machine's open-file limit of
 * 20,000 in both processes (the broker needs a few descriptors of its own:
 * listener, epoll, signalfd, log dir lock, segment files); -r 2 closes more
 * than 20,000 connections in all. Client ports are reused from TIME_WAIT on
 * loopback (net.ipv4.tcp_tw_reuse, 2 by default), so rounds do not run out
 * of ephemeral ports.
 *
 * Usage: connbench [-n conns] [-r rounds] [-s samples] [-w settle-ms]
 * The broker binary is $SAMSA_BIN (`make bench-conn` sets it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"
#include "compat-tests/wire.h"

static int nconns = 19800, rounds = 2, samples = 200, settle_ms = 8000;

/* Descriptors the broker holds (entries of /proc/PID/fd), or -1. */
static int broker_fds(const h_broker *b)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)b->pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Wait until the broker's fd count satisfies want (>= n when up, <= n when
 * not), at most 60 s. Returns 0 or -1. */
static int wait_fds(const h_broker *b, int n, bool up)
{
	long long deadline = h_now_ms() + 60000;
	for (;;) {
		int have = broker_fds(b);
		if (have < 0)
			return -1;
		if (up ? have >= n : have <= n)
			return 0;
		if (h_now_ms() > deadline) {
			fprintf(stderr, "connbench: broker holds %d fds, waited for %s%d\n", have,
				up ? ">=" : "<=", n);
			return -1;
		}
		usleep(10 * 1000);
	}
}

/* Connect from 127.0.0.2 (the port chosen at connect, IP_BIND_ADDRESS_NO_PORT)
 * to the broker on 127.0.0.1, blocking; the fd or -1. */
static int connect_from_2(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(0x7f000002);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return -1;
}

/* The lowest VmRSS of the broker over the next -w ms (sampled every 50 ms)
 * and when it was first seen (*at_ms after the call). */
static long settled_rss(const h_broker *b, long long *at_ms)
{
	long long t0 = h_now_ms();
	long low = h_broker_status_kb(b, "VmRSS");
	*at_ms = 0;
	while (h_now_ms() - t0 < settle_ms) {
		usleep(50 * 1000);
		long kb = h_broker_status_kb(b, "VmRSS");
		if (kb >= 0 && kb < low) {
			low = kb;
			*at_ms = h_now_ms() - t0;
		}
	}
	return low;
}

/* Send a request and read its answer; 0 or a WIRE_* error. */
static int roundtrip(int fd, int16_t key, int16_t ver, int32_t cid, const void *body, size_t blen)
{
	uint8_t req[256], *resp = NULL;
	int n = w_build_request(req, sizeof(req), key, ver, cid, "connbench", body, blen);
	if (n < 0)
		return WIRE_ERROR;
	int rc = w_send_all(fd, req, (size_t)n, 10000);
	if (rc != WIRE_OK)
		return rc;
	int32_t len;
	rc = w_recv_frame(fd, &resp, &len, 16 << 20, 10000);
	if (rc == WIRE_OK && (len < 4 || w_get32(resp) != cid))
		rc = WIRE_ERROR;
	free(resp);
	return rc;
}

/* Metadata v1 with an empty topic list (no topic) or a null one (all). */
static int metadata(int fd, int32_t cid, bool all)
{
	uint8_t body[4];
	w_put32(body, all ? -1 : 0);
	return roundtrip(fd, 3, 1, cid, body, sizeof(body));
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static double ms(long long us) { return (double)us / 1000.0; }

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* -s new clients one after the other; prints p50/p99/max of the time from
 * connect to the ApiVersions answer and to the Metadata answer. */
static int new_client_latency(h_broker *b, const char *when)
{
	long long *av = calloc((size_t)samples, sizeof(*av));
	long long *md = calloc((size_t)samples, sizeof(*md));
	long long *cn = calloc((size_t)samples, sizeof(*cn));
	int rc = av && md && cn ? 0 : -1;
	for (int i = 0; i < samples && rc == 0; i++) {
		long long t0 = now_us();
		int fd = w_connect(b->port, 10000);
		cn[i] = now_us() - t0;
		if (fd < 0 || roundtrip(fd, 18, 0, 1, NULL, 0) != WIRE_OK) {
			fprintf(stderr, "connbench: a new client was not served (%s)\n", when);
			rc = -1;
		} else {
			av[i] = now_us() - t0;
			if (metadata(fd, 2, true) != WIRE_OK) {
				fprintf(stderr, "connbench: Metadata not answered (%s)\n", when);
				rc = -1;
			}
			md[i] = now_us() - t0;
		}
		if (fd >= 0)
			close(fd);
	}
	if (rc == 0) {
		qsort(av, (size_t)samples, sizeof(*av), cmp_ll);
		qsort(md, (size_t)samples, sizeof(*md), cmp_ll);
		qsort(cn, (size_t)samples, sizeof(*cn), cmp_ll);
		int p99 = samples * 99 / 100;
		printf("  new client %s (%d clients): connect() p50 %.3f p99 %.3f ms\n", when, samples,
		       ms(cn[samples / 2]), ms(cn[p99]));
		printf("  new client %s (%d clients): connect->ApiVersions p50 %.3f p99 %.3f max %.3f ms; "
		       "connect->Metadata p50 %.3f p99 %.3f max %.3f ms\n",
		       when, samples, ms(av[samples / 2]), ms(av[p99]), ms(av[samples - 1]),
		       ms(md[samples / 2]), ms(md[p99]), ms(md[samples - 1]));
	}
	free(av);
	free(md);
	free(cn);
	return rc;
}

static int one_round(h_broker *b, int round, int *fds)
{
	usleep(300 * 1000); /* the broker closes the last new client's connection too */
	long base = h_broker_status_kb(b, "VmRSS");
	int base_fds = broker_fds(b);
	printf("round %d: broker VmRSS %ld KiB, %d fds before\n", round, base, base_fds);

	/* 1. Silent connections, in batches the listen backlog takes. */
	long long t0 = h_now_ms();
	for (int i = 0; i < nconns; i++) {
		fds[i] = connect_from_2(b->port);
		if (fds[i] < 0) {
			fprintf(stderr, "connbench: connection %d: %s\n", i, strerror(errno));
			return -1;
		}
		if ((i + 1) % 500 == 0 && wait_fds(b, base_fds + i + 1, true) < 0)
			return -1;
	}
	if (wait_fds(b, base_fds + nconns, true) < 0)
		return -1;
	long silent = h_broker_status_kb(b, "VmRSS");
	printf("  %d connections open (%lld ms): VmRSS %ld KiB, %.2f KiB per silent connection\n",
	       nconns, h_now_ms() - t0, silent, (double)(silent - base) / nconns);

	/* 2. Each speaks once. */
	t0 = h_now_ms();
	for (int i = 0; i < nconns; i++) {
		if (roundtrip(fds[i], 18, 0, 1, NULL, 0) != WIRE_OK || metadata(fds[i], 2, false) != WIRE_OK) {
			fprintf(stderr, "connbench: connection %d not served\n", i);
			return -1;
		}
	}
	long spoke = h_broker_status_kb(b, "VmRSS");
	printf("  each sent ApiVersions + Metadata (%lld ms): VmRSS %ld KiB at once, %.2f KiB per connection\n",
	       h_now_ms() - t0, spoke, (double)(spoke - base) / nconns);
	long long at;
	long idle = settled_rss(b, &at);
	printf("  then idle: VmRSS %ld KiB (lowest within %d ms, reached after %lld ms), %.2f KiB per "
	       "idle connection\n", idle, settle_ms, at, (double)(idle - base) / nconns);

	/* 3. A new client meanwhile. */
	if (new_client_latency(b, "with them open") < 0)
		return -1;

	/* 4. All close. */
	t0 = h_now_ms();
	for (int i = 0; i < nconns; i++)
		close(fds[i]);
	if (wait_fds(b, base_fds, false) < 0)
		return -1;
	long closed = h_broker_status_kb(b, "VmRSS");
	long long took = h_now_ms() - t0;
	long later = settled_rss(b, &at);
	printf("  all closed (%lld ms): VmRSS %ld KiB at once, %ld KiB after %lld ms (%+ld KiB against "
	       "before the round); VmHWM %ld KiB\n",
	       took, closed, later, at, later - base, h_broker_status_kb(b, "VmHWM"));
	return 0;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:r:s:w:")) != -1) {
		switch (opt) {
		case 'n': nconns = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 's': samples = atoi(optarg); break;
		case 'w': settle_ms = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: connbench [-n conns] [-r rounds] [-s samples] [-w settle-ms]\n");
			return 2;
		}
	}
	if (nconns < 1 || rounds < 1 || samples < 1 || settle_ms < 0) {
		fprintf(stderr, "connbench: -n, -r and -s must be positive\n");
		return 2;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)nconns + 64) {
		fprintf(stderr, "connbench: -n %d needs %d descriptors, the limit is %llu\n", nconns,
			nconns + 64, (unsigned long long)rl.rlim_cur);
		return 2;
	}
	if (h_init() < 0)
		return 1;
	int status = 1;
	int *fds = calloc((size_t)nconns, sizeof(*fds));
	h_broker *b = h_broker_new(NULL);
	if (!fds || !b || h_broker_start(b) < 0)
		goto out;
	printf("connbench: %d connections, %d rounds, %d new-client samples; broker pid %d, "
	       "VmRSS %ld KiB after start\n",
	       nconns, rounds, samples, (int)b->pid, h_broker_status_kb(b, "VmRSS"));
	if (new_client_latency(b, "alone") < 0)
		goto out;
	for (int r = 1; r <= rounds; r++)
		if (one_round(b, r, fds) < 0)
			goto out;
	status = h_broker_stop(b, 30000) == 0 ? 0 : 1;
	if (status)
		fprintf(stderr, "connbench: the broker did not stop cleanly\n");
out:
	if (status && b)
		h_broker_dump_log(b, stderr, 20);
	h_broker_free(b);
	free(fds);
	h_fini();
	return status;
}
