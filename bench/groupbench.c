/*
 * groupbench.c - the group coordinator at scale (issue 15): what an
 * OffsetCommit costs with 2,000 and with 100,000 groups, and what a restart
 * with 1,000,000 committed offset records costs. Prints figures, never
 * pass/fail; run it against two binaries (SAMSA_BIN) to compare.
 *
 * One broker (offsets.topic.num.partitions at its default of 50,
 * num.partitions=10 so that the topic "gb" is made with 10 partitions by
 * the first Metadata naming it). Every request is raw (classic versions:
 * OffsetCommit v7, OffsetFetch v5, Metadata v1) on one connection.
 *  1. Groups "gb-<i>" are made by a simple commit (generation -1) of the 10
 *     partitions of "gb" each (one batch of 10 records), 100 requests in
 *     flight, until there are -s of them (default 2,000).
 *  2. -n commits (default 20,000), one at a time, each of the 10
 *     partitions of a group drawn at random among those made: the round
 *     trip of each, p50 / p99 / max (after 1,000 not timed).
 *  3. More groups, as in 1, up to -g (default 100,000: 1,000,000 records
 *     in __consumer_offsets), and step 2 again.
 *  4. SIGTERM, then the broker starts again on its data dir. From the
 *     launch: when the port accepts; when the first Metadata is answered
 *     (sent as soon as the port accepts); when OffsetFetch of one group in
 *     each of the 50 partitions (sent in turn, each again while it answers
 *     COORDINATOR_LOAD_IN_PROGRESS) has answered every one with its
 *     committed offsets, checked: the reload as a client sees it. The
 *     broker's own summary line of the start-up load ("loaded N group(s)
 *     ... in T ms") is printed too when it has one.
 *
 * Usage: groupbench [-g groups] [-s small-groups] [-n commits] [-x scale]
 * (-x scales -g, -s and -n; e.g. -x 0.1 for a quick run). The broker binary
 * is $SAMSA_BIN. `make bench-groups` runs it (GROUPBENCH_ARGS).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"
#include "compat-tests/wire.h"

#define TOPIC "gb"
#define NPART 10
#define WINDOW 100
#define OFFSETS_PARTITIONS 50
#define E_LOAD_IN_PROGRESS 14

static long ngroups = 100000, nsmall = 2000, ncommits = 20000;
static int32_t next_cid = 1;

static void die(const char *what)
{
	fprintf(stderr, "groupbench: %s\n", what);
	exit(1);
}

/* ---- a tiny writer and reader of classic encodings ---- */

typedef struct wbuf {
	uint8_t b[4096];
	size_t len;
} wbuf;

static void w_i16(wbuf *w, int16_t v) { w->len = (size_t)(w_put16(w->b + w->len, v) - w->b); }
static void w_i32(wbuf *w, int32_t v) { w->len = (size_t)(w_put32(w->b + w->len, v) - w->b); }
static void w_i64(wbuf *w, int64_t v)
{
	w_i32(w, (int32_t)(v >> 32));
	w_i32(w, (int32_t)(uint32_t)v);
}
static void w_str(wbuf *w, const char *s)
{
	if (!s) {
		w_i16(w, -1);
		return;
	}
	size_t n = strlen(s);
	w_i16(w, (int16_t)n);
	memcpy(w->b + w->len, s, n);
	w->len += n;
}

typedef struct rbuf {
	const uint8_t *b;
	int32_t len, pos;
	int bad;
} rbuf;

static int need(rbuf *r, int32_t n)
{
	if (r->pos + n > r->len) {
		r->bad = 1;
		return 0;
	}
	return 1;
}
static int16_t r_i16(rbuf *r)
{
	if (!need(r, 2))
		return 0;
	r->pos += 2;
	return w_get16(r->b + r->pos - 2);
}
static int32_t r_i32(rbuf *r)
{
	if (!need(r, 4))
		return 0;
	r->pos += 4;
	return w_get32(r->b + r->pos - 4);
}
static int64_t r_i64(rbuf *r)
{
	int64_t hi = (uint32_t)r_i32(r);
	int64_t lo = (uint32_t)r_i32(r);
	return (hi << 32) | lo;
}
static void r_skip_str(rbuf *r)
{
	int16_t n = r_i16(r);
	if (n > 0 && need(r, n))
		r->pos += n;
}

/* ---- requests ---- */

static void send_req(int fd, int16_t key, int16_t ver, const wbuf *body, int32_t *cid)
{
	uint8_t frame[4300];
	*cid = next_cid++;
	int n = w_build_request(frame, sizeof(frame), key, ver, *cid, "groupbench", body->b, body->len);
	if (n < 0 || w_send_all(fd, frame, (size_t)n, 30000) != 0)
		die("send failed");
}

/* The body of the response to cid (malloc'd, the correlation id skipped). */
static uint8_t *recv_resp(int fd, int32_t cid, rbuf *r)
{
	uint8_t *body = NULL;
	int32_t len = 0;
	if (w_recv_frame(fd, &body, &len, 64 << 20, 60000) != WIRE_OK)
		die("no response");
	if (len < 4 || w_get32(body) != cid)
		die("response out of order");
	*r = (rbuf){ body, len, 4, 0 };
	return body;
}

static void group_name(char *buf, size_t cap, long g) { snprintf(buf, cap, "gb-%ld", g); }
static int64_t offset_of(long g, int p, int round) { return g * 100 + p * 10 + round; }

/* OffsetCommit v7: group g, every partition of TOPIC, offsets of round. */
static void commit_body(wbuf *w, long g, int round)
{
	char group[32];
	group_name(group, sizeof(group), g);
	w->len = 0;
	w_str(w, group);
	w_i32(w, -1);  /* generation: a simple commit */
	w_str(w, "");  /* member id */
	w_str(w, NULL); /* group instance id */
	w_i32(w, 1);
	w_str(w, TOPIC);
	w_i32(w, NPART);
	for (int p = 0; p < NPART; p++) {
		w_i32(w, p);
		w_i64(w, offset_of(g, p, round));
		w_i32(w, -1);
		w_str(w, "");
	}
}

/* The first error of an OffsetCommit v7 response (0: none). */
static int16_t commit_error(rbuf *r)
{
	int16_t first = 0;
	r_i32(r); /* throttle */
	int32_t nt = r_i32(r);
	for (int32_t t = 0; t < nt && !r->bad; t++) {
		r_skip_str(r);
		int32_t np = r_i32(r);
		for (int32_t i = 0; i < np && !r->bad; i++) {
			r_i32(r);
			int16_t e = r_i16(r);
			if (e && !first)
				first = e;
		}
	}
	return r->bad ? -1 : first;
}

/* Commit groups [from, to) in round, WINDOW at a time; exits on errors. */
static void commit_range(int fd, long from, long to, int round)
{
	wbuf w;
	int32_t cids[WINDOW];
	for (long g = from; g < to; g += WINDOW) {
		int n = (int)(to - g < WINDOW ? to - g : WINDOW);
		for (int i = 0; i < n; i++) {
			commit_body(&w, g + i, round);
			send_req(fd, 8, 7, &w, &cids[i]);
		}
		for (int i = 0; i < n; i++) {
			rbuf r;
			uint8_t *body = recv_resp(fd, cids[i], &r);
			int16_t e = commit_error(&r);
			free(body);
			if (e) {
				fprintf(stderr, "groupbench: OffsetCommit of group %ld: error %d\n", g + i, e);
				exit(1);
			}
		}
	}
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* -n commits of random groups among the first `have`, one at a time:
 * p50 / p99 / max round trip in microseconds. */
static void measure_commits(int fd, long have, long long out[3])
{
	long long *us = malloc((size_t)ncommits * sizeof(*us));
	if (!us)
		die("out of memory");
	wbuf w;
	srand(15);
	/* A warm-up of 1,000 commits, not timed. */
	for (long i = -1000; i < ncommits; i++) {
		long g = (long)(((unsigned long)rand() << 16 ^ (unsigned long)rand()) % (unsigned long)have);
		commit_body(&w, g, 0);
		long long t0 = now_us();
		int32_t cid;
		send_req(fd, 8, 7, &w, &cid);
		rbuf r;
		uint8_t *body = recv_resp(fd, cid, &r);
		if (i >= 0)
			us[i] = now_us() - t0;
		if (commit_error(&r))
			die("a measured OffsetCommit failed");
		free(body);
	}
	qsort(us, (size_t)ncommits, sizeof(*us), cmp_ll);
	out[0] = us[ncommits / 2];
	out[1] = us[(ncommits * 99) / 100];
	out[2] = us[ncommits - 1];
	free(us);
}

/* Metadata v1 of TOPIC (auto-created with num.partitions); returns 0 when
 * answered. */
static int metadata(int fd)
{
	wbuf w = { .len = 0 };
	w_i32(&w, 1);
	w_str(&w, TOPIC);
	int32_t cid;
	send_req(fd, 3, 1, &w, &cid);
	rbuf r;
	uint8_t *body = recv_resp(fd, cid, &r);
	free(body);
	return 0;
}

/* OffsetFetch v5 of group g (every partition of TOPIC): its error code;
 * with none, every offset must be round 0's. */
static int16_t fetch_group(int fd, long g)
{
	char group[32];
	group_name(group, sizeof(group), g);
	wbuf w = { .len = 0 };
	w_str(&w, group);
	w_i32(&w, 1);
	w_str(&w, TOPIC);
	w_i32(&w, NPART);
	for (int p = 0; p < NPART; p++)
		w_i32(&w, p);
	int32_t cid;
	send_req(fd, 9, 5, &w, &cid);
	rbuf r;
	uint8_t *body = recv_resp(fd, cid, &r);
	r_i32(&r); /* throttle */
	int32_t nt = r_i32(&r);
	int wrong = 0;
	for (int32_t t = 0; t < nt && !r.bad; t++) {
		r_skip_str(&r);
		int32_t np = r_i32(&r);
		for (int32_t i = 0; i < np && !r.bad; i++) {
			int32_t p = r_i32(&r);
			int64_t off = r_i64(&r);
			r_i32(&r);
			r_skip_str(&r);
			int16_t e = r_i16(&r);
			if (!e && off != offset_of(g, p, 0))
				wrong++;
		}
	}
	int16_t err = r_i16(&r);
	free(body);
	if (r.bad)
		die("OffsetFetch response does not parse");
	if (!err && wrong)
		die("OffsetFetch after the restart: wrong offsets");
	return err;
}

/* A group of each __consumer_offsets partition (Java String.hashCode of
 * the id, as the broker's brk_coordinator_partition), among the first
 * `have`; fills probe[50], returns how many partitions have one. */
static int probes(long have, long probe[OFFSETS_PARTITIONS])
{
	int found = 0;
	for (int i = 0; i < OFFSETS_PARTITIONS; i++)
		probe[i] = -1;
	for (long g = 0; g < have && found < OFFSETS_PARTITIONS; g++) {
		char id[32];
		group_name(id, sizeof(id), g);
		int32_t h = 0;
		for (const char *c = id; *c; c++)
			h = (int32_t)((uint32_t)h * 31u + (uint8_t)*c);
		int32_t a = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
		int part = a % OFFSETS_PARTITIONS;
		if (probe[part] < 0) {
			probe[part] = g;
			found++;
		}
	}
	return found;
}

/* The broker's start-up load summary from its log, into buf ("" when none). */
static void load_line(const h_broker *b, char *buf, size_t cap)
{
	buf[0] = '\0';
	char *log = h_broker_read_log(b);
	if (!log)
		return;
	char *last = NULL;
	for (char *p = log; (p = strstr(p, "samsa: loaded ")) != NULL; p++)
		last = p;
	if (last && strstr(last, "__consumer_offsets")) {
		size_t n = strcspn(last, "\n");
		snprintf(buf, cap, "%.*s", (int)n, last);
	}
	free(log);
}

int main(int argc, char **argv)
{
	double scale = 1;
	int opt;
	while ((opt = getopt(argc, argv, "g:s:n:x:")) != -1) {
		switch (opt) {
		case 'g': ngroups = atol(optarg); break;
		case 's': nsmall = atol(optarg); break;
		case 'n': ncommits = atol(optarg); break;
		case 'x': scale = atof(optarg); break;
		default:
			fprintf(stderr, "usage: groupbench [-g groups] [-s small-groups] [-n commits] [-x scale]\n");
			return 2;
		}
	}
	ngroups = (long)(ngroups * scale);
	nsmall = (long)(nsmall * scale);
	ncommits = (long)(ncommits * scale);
	if (nsmall < 1 || ngroups < nsmall || ncommits < 100)
		die("sizes too small");
	if (h_init() != 0)
		return 1;
	const char *ov[] = { "num.partitions=10", NULL };
	h_broker *b = h_broker_new(ov);
	if (!b || h_broker_start(b) != 0)
		die("the broker did not start");
	int fd = w_connect(b->port, 5000);
	if (fd < 0)
		die("cannot connect");
	metadata(fd); /* makes "gb" */
	/* The topic appears with its leader a moment later. */
	wbuf w;
	for (int tries = 0;; tries++) {
		commit_body(&w, 0, 0);
		int32_t cid;
		send_req(fd, 8, 7, &w, &cid);
		rbuf r;
		uint8_t *body = recv_resp(fd, cid, &r);
		int16_t e = commit_error(&r);
		free(body);
		if (!e)
			break;
		if (tries > 200)
			die("OffsetCommit never succeeded");
		usleep(50000);
	}

	long long t0 = h_now_ms();
	commit_range(fd, 0, nsmall, 0);
	long long fill_small = h_now_ms() - t0;
	long long small[3], large[3];
	measure_commits(fd, nsmall, small);
	t0 = h_now_ms();
	commit_range(fd, nsmall, ngroups, 0);
	long long fill_large = h_now_ms() - t0;
	measure_commits(fd, ngroups, large);
	close(fd);
	long long records = (long long)(ngroups + 1 + 2 * (ncommits + 1000)) * NPART;
	long rss = h_broker_status_kb(b, "VmRSS");

	if (h_broker_stop(b, 120000) == -1)
		die("the broker did not stop");
	if (h_broker_launch(b) != 0)
		die("cannot restart the broker");
	long long launched = h_now_ms();
	fd = -1;
	while (fd < 0) {
		if (!h_broker_alive(b))
			die("the broker exited");
		if (h_now_ms() - launched > 600000)
			die("the port never accepted");
		fd = w_connect(b->port, 1000);
		if (fd < 0)
			usleep(500);
	}
	long long accepted = h_now_ms() - launched;
	metadata(fd);
	long long first_md = h_now_ms() - launched;
	long probe[OFFSETS_PARTITIONS];
	int np = probes(ngroups, probe);
	long in_progress = 0;
	for (int i = 0; i < OFFSETS_PARTITIONS; i++) {
		if (probe[i] < 0)
			continue;
		int16_t e;
		while ((e = fetch_group(fd, probe[i])) == E_LOAD_IN_PROGRESS) {
			in_progress++;
			usleep(1000);
		}
		if (e) {
			fprintf(stderr, "groupbench: OffsetFetch after the restart: error %d\n", e);
			exit(1);
		}
	}
	long long reloaded = h_now_ms() - launched;
	close(fd);
	char line[512];
	load_line(b, line, sizeof(line));
	long rss_after = h_broker_status_kb(b, "VmRSS");
	h_broker_stop(b, 120000);

	printf("groupbench: %s\n", h_samsa_bin());
	printf("  groups made by %d-partition commits      %ld in %lld ms, then %ld more in %lld ms\n",
	       NPART, nsmall, fill_small, ngroups - nsmall, fill_large);
	printf("  OffsetCommit round trip (%ld commits, us)   p50      p99      max\n", ncommits);
	printf("    with %7ld groups                    %7lld  %7lld  %7lld\n", nsmall, small[0],
	       small[1], small[2]);
	printf("    with %7ld groups                    %7lld  %7lld  %7lld\n", ngroups, large[0],
	       large[1], large[2]);
	printf("  broker VmRSS with %ld groups              %ld kB\n", ngroups, rss);
	printf("  restart with %lld offset records in __consumer_offsets:\n", records);
	printf("    port accepting                           %lld ms after launch\n", accepted);
	printf("    first Metadata answered                  %lld ms after launch\n", first_md);
	printf("    OffsetFetch of %d groups (one per partition) all answered with their offsets\n"
	       "                                             %lld ms after launch "
	       "(%ld COORDINATOR_LOAD_IN_PROGRESS answers)\n",
	       np, reloaded, in_progress);
	printf("    broker VmRSS once loaded                 %ld kB\n", rss_after);
	if (line[0])
		printf("    broker: %s\n", line);
	h_broker_free(b);
	h_fini();
	return 0;
}
