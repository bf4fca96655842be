/*
 * scalebench.c - one broker with many partitions and one partition with many
 * segments (issue 15's "10,000 and 50,000 partitions" and "a partition of
 * 2,000 segments" figures), at this machine's open-file limit (20,000).
 * Prints figures, never pass/fail; run it against two binaries (SAMSA_BIN)
 * to compare. Every request is raw, classic versions, on one connection
 * (a new one after each restart): CreateTopics v4, Produce v7 (acks=-1),
 * Metadata v1, Fetch v4.
 *
 * P. Partitions (-P, default 10000,50000: one broker, the targets in turn).
 *    For each target:
 *     1. CreateTopics of topics "sb-NNNNN" of -t partitions (default 100),
 *        -b topics per request (default 10), until the target exists. A
 *        topic refused (POLICY_VIOLATION: the broker's descriptor budget) is
 *        tried again at half its size, down to 1 partition, so the count
 *        printed is the most the broker takes; its message is printed.
 *        Then: the time it took, the broker's descriptors (entries of
 *        /proc/PID/fd) and VmRSS.
 *     2. One small batch (5 records of 100 bytes) to every partition, one
 *        Produce per topic, 16 in flight: each partition has a segment with
 *        data. Time, descriptors, VmRSS.
 *     3. Clean restart: SIGTERM (time to exit), launch, and from the launch:
 *        the port accepting, the first Metadata (of the last topic) answered,
 *        a Produce to the last partition answered without error (retried
 *        while it has one); descriptors and VmRSS then; lines the broker
 *        logged during the start and how many say "rebuilding" (an index
 *        rebuilt). Then step 2 again (timed: every partition touched after a
 *        restart).
 *     4. kill -9 right after that (data not flushed by a shutdown), then the
 *        same figures as 3.
 *    A target the broker adds no partition for is reported and not measured
 *    again. A restarted broker that exits, or closes every connection
 *    unserved for 30 s (descriptors short: listener.c), is reported as not
 *    serving again, with its last log line; P ends there.
 * S. Segments (-S, default 2,000; a new broker). One topic "sb-segs" of one
 *    partition with segment.bytes=1048576: the smallest Kafka 4 and this
 *    broker take (topic_config.c; no test-only override exists), so the
 *    partition is written with 4 batches of 256 records of 1,000 bytes
 *    (about 253 KiB) per segment, about 2 GB for 2,000 segments, 4 Produce
 *    requests in flight. Time to fill, segments on disk (.log files),
 *    descriptors, VmRSS; Fetch v4 of offset 0 (the oldest segment; one
 *    batch, partition max bytes 1) once, then 200 fetches each from a
 *    random segment of the older half (p50, p99, max). Clean restart and
 *    kill -9 restart (after 4 more batches) as in P, each followed by the
 *    first fetch of offset 0 and the 200 random ones.
 * A summary table at the end: one column per target and one for segments.
 *
 * Usage: scalebench [-P targets] [-t per-topic] [-b per-request] [-S segments]
 *                   [-x scale]
 * -x scales the targets and -S (e.g. -x 0.05 for a quick run); -P 0 or -S 0
 * leaves that part out. The broker binary is $SAMSA_BIN; `make bench-scale`
 * runs it (SCALEBENCH_ARGS).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"
#include "compat-tests/wire.h"
#include "protocol/batch.h"

#define MAX_TARGETS 4
#define PRODUCE_WINDOW 16
#define SEG_WINDOW 4
#define SEG_BATCHES 4        /* batches of SEG_RECORDS x SEG_VALUE per segment */
#define SEG_RECORDS 256
#define SEG_VALUE 1000
#define SEG_BYTES 1048576    /* the smallest segment.bytes allowed */
#define FETCH_SAMPLES 200
#define WAIT_MS 600000       /* the longest any step is waited for */
#define SHED_GIVE_UP_MS 30000 /* a restarted broker closing every connection
			       * this long is not serving */
#define SEG_TOPIC "sb-segs"

/* Kafka error codes met here. */
#define E_POLICY_VIOLATION 44

static long targets[MAX_TARGETS] = { 10000, 50000 };
static int ntargets = 2;
static int per_topic = 100, per_request = 10;
static long nsegments = 2000;
static int32_t next_cid = 1;

static void die(const char *what)
{
	fprintf(stderr, "scalebench: %s\n", what);
	exit(1);
}

/* ---- a growing writer and a bounded reader of classic encodings ---- */

typedef struct wbuf {
	uint8_t *b;
	size_t len, cap;
} wbuf;

static void put_raw(wbuf *w, const void *p, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *nb = realloc(w->b, cap);
		if (!nb)
			die("out of memory");
		w->b = nb;
		w->cap = cap;
	}
	memcpy(w->b + w->len, p, n);
	w->len += n;
}
static void put_u8(wbuf *w, uint8_t v) { put_raw(w, &v, 1); }
static void put_i16(wbuf *w, int16_t v)
{
	uint8_t b[2];
	w_put16(b, v);
	put_raw(w, b, 2);
}
static void put_i32(wbuf *w, int32_t v)
{
	uint8_t b[4];
	w_put32(b, v);
	put_raw(w, b, 4);
}
static void put_i64(wbuf *w, int64_t v)
{
	put_i32(w, (int32_t)(v >> 32));
	put_i32(w, (int32_t)(uint32_t)v);
}
static void put_str(wbuf *w, const char *s)
{
	if (!s) {
		put_i16(w, -1);
		return;
	}
	put_i16(w, (int16_t)strlen(s));
	put_raw(w, s, strlen(s));
}
/* A zigzag varint (record fields). */
static void put_varint(wbuf *w, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	while (u >= 0x80) {
		put_u8(w, (uint8_t)(u | 0x80));
		u >>= 7;
	}
	put_u8(w, (uint8_t)u);
}

typedef struct rbuf {
	const uint8_t *b;
	int32_t len, pos;
	bool bad;
} rbuf;

static bool need(rbuf *r, int32_t n)
{
	if (n < 0 || r->pos > r->len - n) {
		r->bad = true;
		return false;
	}
	return true;
}
static int16_t get_i16(rbuf *r)
{
	if (!need(r, 2))
		return 0;
	r->pos += 2;
	return w_get16(r->b + r->pos - 2);
}
static int32_t get_i32(rbuf *r)
{
	if (!need(r, 4))
		return 0;
	r->pos += 4;
	return w_get32(r->b + r->pos - 4);
}
static int64_t get_i64(rbuf *r)
{
	int64_t hi = (uint32_t)get_i32(r);
	int64_t lo = (uint32_t)get_i32(r);
	return (int64_t)((uint64_t)hi << 32 | (uint64_t)lo);
}
/* A nullable string (int16 length) into out (cut to cap), or skipped. */
static void get_str(rbuf *r, char *out, size_t cap)
{
	int16_t n = get_i16(r);
	if (out && cap)
		out[0] = '\0';
	if (n <= 0 || !need(r, n))
		return;
	if (out && cap)
		snprintf(out, cap, "%.*s", (int)n, (const char *)r->b + r->pos);
	r->pos += n;
}
static void skip(rbuf *r, int32_t n)
{
	if (n > 0 && need(r, n))
		r->pos += n;
}

/* ---- requests on one connection ---- */

static int32_t send_req(int fd, int16_t key, int16_t ver, const wbuf *body)
{
	size_t cap = body->len + 64;
	uint8_t *frame = malloc(cap);
	if (!frame)
		die("out of memory");
	int32_t cid = next_cid++;
	int n = w_build_request(frame, cap, key, ver, cid, "scalebench", body->b, body->len);
	if (n < 0 || w_send_all(fd, frame, (size_t)n, WAIT_MS) != WIRE_OK)
		die("a request could not be sent");
	free(frame);
	return cid;
}

/* The response to cid (malloc'd; r starts after the correlation id), or
 * NULL when the connection failed or timed out. */
static uint8_t *recv_resp(int fd, int32_t cid, rbuf *r, int timeout_ms)
{
	uint8_t *body = NULL;
	int32_t len = 0;
	if (w_recv_frame(fd, &body, &len, 256 << 20, timeout_ms) != WIRE_OK)
		return NULL;
	if (len < 4 || w_get32(body) != cid)
		die("a response out of order");
	*r = (rbuf){ body, len, 4, false };
	return body;
}

/* A request and its response, or NULL when the connection was closed or
 * nothing came within WAIT_MS. */
static uint8_t *try_roundtrip(int fd, int16_t key, int16_t ver, const wbuf *body, rbuf *r)
{
	size_t cap = body->len + 64;
	uint8_t *frame = malloc(cap);
	if (!frame)
		die("out of memory");
	int32_t cid = next_cid++;
	int n = w_build_request(frame, cap, key, ver, cid, "scalebench", body->b, body->len);
	if (n < 0)
		die("a request does not fit");
	int rc = w_send_all(fd, frame, (size_t)n, WAIT_MS);
	free(frame);
	return rc == WIRE_OK ? recv_resp(fd, cid, r, WAIT_MS) : NULL;
}

static uint8_t *roundtrip(int fd, int16_t key, int16_t ver, const wbuf *body, rbuf *r)
{
	uint8_t *resp = try_roundtrip(fd, key, ver, body, r);
	if (!resp)
		die("no response");
	return resp;
}

/* ---- record batches ---- */

static int64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* A v2 batch of n uncompressed records, each a value of vlen bytes and no
 * key, CreateTime now, no producer id; CRC32C set. The broker assigns the
 * offsets, so one batch can be sent any number of times. */
static void build_batch(wbuf *w, int n, int vlen)
{
	size_t start = w->len;
	int64_t now = wall_ms();
	put_i64(w, 0);      /* base offset */
	put_i32(w, 0);      /* batch length, below */
	put_i32(w, -1);     /* partition leader epoch */
	put_u8(w, 2);       /* magic */
	put_i32(w, 0);      /* crc, below */
	put_i16(w, 0);      /* attributes */
	put_i32(w, n - 1);  /* last offset delta */
	put_i64(w, now);
	put_i64(w, now);
	put_i64(w, -1);     /* producer id */
	put_i16(w, -1);
	put_i32(w, -1);
	put_i32(w, n);
	uint8_t *value = malloc((size_t)vlen);
	if (!value)
		die("out of memory");
	memset(value, 'x', (size_t)vlen);
	for (int i = 0; i < n; i++) {
		wbuf rec = { 0 };
		put_u8(&rec, 0);     /* attributes */
		put_varint(&rec, 0); /* timestamp delta */
		put_varint(&rec, i); /* offset delta */
		put_varint(&rec, -1); /* no key */
		put_varint(&rec, vlen);
		put_raw(&rec, value, (size_t)vlen);
		put_varint(&rec, 0); /* no headers */
		put_varint(w, (int64_t)rec.len);
		put_raw(w, rec.b, rec.len);
		free(rec.b);
	}
	free(value);
	size_t size = w->len - start;
	w_put32(w->b + start + PROTO_BATCH_OFF_LENGTH, (int32_t)(size - PROTO_BATCH_LOG_OVERHEAD));
	uint32_t crc = proto_crc32c(0, w->b + start + PROTO_BATCH_OFF_ATTRIBUTES,
				    size - PROTO_BATCH_OFF_ATTRIBUTES);
	w_put32(w->b + start + PROTO_BATCH_OFF_CRC, (int32_t)crc);
}

/* ---- the broker from outside ---- */

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Entries of /proc/PID/fd, or -1. */
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

/* Files named *suffix in dir. */
static long count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	long n = 0;
	size_t sl = strlen(suffix);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		n += l > sl && strcmp(e->d_name + l - sl, suffix) == 0;
	}
	closedir(d);
	return n;
}

/* Lines of the broker's log, and how many of them contain word. */
static void log_counts(const h_broker *b, const char *word, long *lines, long *with)
{
	*lines = *with = 0;
	char *log = h_broker_read_log(b);
	if (!log)
		return;
	for (char *p = log; *p; p++)
		*lines += *p == '\n';
	for (char *p = log; (p = strstr(p, word)) != NULL; p++)
		(*with)++;
	free(log);
}

/* ---- Kafka requests ---- */

/* Produce v7 body: batch to partitions [0, nparts) of topic. */
static void produce_body(wbuf *w, const char *topic, int nparts, const wbuf *batch)
{
	w->len = 0;
	put_str(w, NULL); /* transactional id */
	put_i16(w, -1);   /* acks */
	put_i32(w, 30000);
	put_i32(w, 1);
	put_str(w, topic);
	put_i32(w, nparts);
	for (int p = 0; p < nparts; p++) {
		put_i32(w, p);
		put_i32(w, (int32_t)batch->len);
		put_raw(w, batch->b, batch->len);
	}
}

/* Produce v7 to one partition only (partition p of topic). */
static void produce_one_body(wbuf *w, const char *topic, int32_t p, const wbuf *batch)
{
	w->len = 0;
	put_str(w, NULL);
	put_i16(w, -1);
	put_i32(w, 30000);
	put_i32(w, 1);
	put_str(w, topic);
	put_i32(w, 1);
	put_i32(w, p);
	put_i32(w, (int32_t)batch->len);
	put_raw(w, batch->b, batch->len);
}

/* The first error of a Produce v7 response (-1: does not parse). */
static int16_t produce_error(rbuf *r)
{
	int16_t first = 0;
	int32_t nt = get_i32(r);
	for (int32_t t = 0; t < nt && !r->bad; t++) {
		get_str(r, NULL, 0);
		int32_t np = get_i32(r);
		for (int32_t i = 0; i < np && !r->bad; i++) {
			get_i32(r);
			int16_t e = get_i16(r);
			get_i64(r); /* base offset */
			get_i64(r); /* log append time */
			get_i64(r); /* log start offset */
			if (e && !first)
				first = e;
		}
	}
	get_i32(r); /* throttle */
	return r->bad ? -1 : first;
}

/* Fetch v4 body: partition 0 of topic from offset, one batch at most (the
 * partition's max bytes is 1: the first batch comes whole, KIP-74). */
static void fetch_body(wbuf *w, const char *topic, int64_t offset)
{
	w->len = 0;
	put_i32(w, -1);  /* replica */
	put_i32(w, 0);   /* max wait */
	put_i32(w, 1);   /* min bytes */
	put_i32(w, 1);   /* max bytes */
	put_u8(w, 0);    /* read uncommitted */
	put_i32(w, 1);
	put_str(w, topic);
	put_i32(w, 1);
	put_i32(w, 0);
	put_i64(w, offset);
	put_i32(w, 1);
}

/* One fetch of offset: its round trip in us; dies unless records came. */
static long long fetch_once(int fd, int64_t offset)
{
	wbuf w = { 0 };
	fetch_body(&w, SEG_TOPIC, offset);
	long long t0 = now_us();
	rbuf r;
	uint8_t *resp = roundtrip(fd, 1, 4, &w, &r);
	long long took = now_us() - t0;
	free(w.b);
	get_i32(&r); /* throttle */
	int32_t nt = get_i32(&r);
	int16_t err = -1;
	int32_t bytes = 0;
	for (int32_t t = 0; t < nt && !r.bad; t++) {
		get_str(&r, NULL, 0);
		int32_t np = get_i32(&r);
		for (int32_t i = 0; i < np && !r.bad; i++) {
			get_i32(&r);
			err = get_i16(&r);
			get_i64(&r); /* high watermark */
			get_i64(&r); /* last stable offset */
			int32_t na = get_i32(&r);
			skip(&r, na > 0 ? na * 16 : 0);
			bytes = get_i32(&r);
			skip(&r, bytes);
		}
	}
	free(resp);
	if (r.bad || err != 0 || bytes <= 0) {
		fprintf(stderr, "scalebench: Fetch of offset %lld: error %d, %d bytes\n",
			(long long)offset, err, bytes);
		exit(1);
	}
	return took;
}

/* ---- a broker restart seen from a client ---- */

typedef struct restart_fig {
	bool done;
	long long exit_ms;     /* SIGTERM to exit (clean), -1 for kill -9 */
	long long port_ms;     /* launch to the port accepting */
	long long metadata_ms; /* launch to the first Metadata answered */
	long long produce_ms;  /* launch to a Produce on the last partition answered */
	long long fetch_us;    /* segments: the first fetch of offset 0, round trip */
	long long fetch_p50_us, fetch_p99_us, fetch_max_us;
	int fds;               /* descriptors once the Produce was answered */
	long rss_kb;
	long log_lines;        /* lines the broker logged during this start */
	long rebuilds;         /* of which "rebuilding" */
	long long sweep_ms;    /* partitions: a batch to every partition after it */
	char failed[512];      /* why the broker did not serve again, "" */
} restart_fig;

/* The last line of the broker's log into buf ("" when none). */
static void last_log_line(const h_broker *b, char *buf, size_t cap)
{
	buf[0] = '\0';
	char *log = h_broker_read_log(b);
	if (!log)
		return;
	size_t n = strlen(log);
	while (n && log[n - 1] == '\n')
		n--;
	size_t s = n;
	while (s && log[s - 1] != '\n')
		s--;
	snprintf(buf, cap, "%.*s", (int)(n - s), log + s);
	free(log);
}

/* Stop the broker (SIGTERM, or SIGKILL when kill9), launch it again and
 * take the figures of f up to a Produce to partition part of topic
 * answered. Returns the connection, which the caller closes; -1 when the
 * broker did not serve again (f->failed says why; it is not running). */
static int restart(h_broker *b, bool kill9, const char *topic, int32_t part, restart_fig *f)
{
	long lines0, rebuilds0;
	log_counts(b, "rebuilding", &lines0, &rebuilds0);
	long long t0 = h_now_ms();
	if (kill9) {
		if (h_broker_kill(b) < 0)
			die("kill -9: the broker was not running");
		f->exit_ms = -1;
	} else {
		int st = h_broker_stop(b, WAIT_MS);
		f->exit_ms = h_now_ms() - t0;
		if (st == -1)
			die("the broker did not stop on SIGTERM");
	}
	if (h_broker_launch(b) != 0)
		die("cannot launch the broker again");
	long long launched = h_now_ms(), closed_since = -1;
	long closes = 0;
	int fd = -1;
	f->port_ms = f->metadata_ms = -1;
	wbuf batch = { 0 }, md = { 0 }, w = { 0 };
	build_batch(&batch, 5, 100);
	produce_one_body(&w, topic, part, &batch);
	put_i32(&md, 1);
	put_str(&md, topic);
	for (;;) {
		long long now = h_now_ms();
		const char *why = NULL;
		if (!h_broker_alive(b))
			why = "exited";
		else if (now - launched > WAIT_MS)
			why = "did not answer";
		else if (closed_since >= 0 && now - closed_since > SHED_GIVE_UP_MS)
			why = "closed every connection unserved";
		if (why) {
			char line[200];
			last_log_line(b, line, sizeof(line));
			snprintf(f->failed, sizeof(f->failed), "%s (%lld ms after launch, %ld connections "
				 "closed unserved); its last line: %s", why, now - launched, closes, line);
			if (h_broker_alive(b))
				h_broker_kill(b);
			break;
		}
		if (fd < 0) {
			fd = w_connect(b->port, 1000);
			if (fd < 0) {
				usleep(500);
				continue;
			}
			if (f->port_ms < 0)
				f->port_ms = now - launched;
		}
		/* The first Metadata, then a Produce until it is answered without
		 * error; a connection the broker closes is opened again. */
		bool first = f->metadata_ms < 0;
		rbuf r;
		uint8_t *resp = try_roundtrip(fd, first ? 3 : 0, first ? 1 : 7, first ? &md : &w, &r);
		if (!resp) {
			close(fd);
			fd = -1;
			closes++;
			if (closed_since < 0)
				closed_since = now;
			usleep(10000);
			continue;
		}
		closed_since = -1;
		if (first) {
			free(resp);
			f->metadata_ms = h_now_ms() - launched;
			continue;
		}
		int16_t e = produce_error(&r);
		free(resp);
		if (e == 0)
			break;
		if (e < 0)
			die("a Produce response does not parse");
		usleep(1000);
	}
	free(md.b);
	if (f->failed[0]) {
		free(batch.b);
		free(w.b);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	f->produce_ms = h_now_ms() - launched;
	free(batch.b);
	free(w.b);
	f->fds = broker_fds(b);
	f->rss_kb = h_broker_status_kb(b, "VmRSS");
	long lines, rebuilds;
	log_counts(b, "rebuilding", &lines, &rebuilds);
	f->log_lines = lines - lines0;
	f->rebuilds = rebuilds - rebuilds0;
	f->done = true;
	return fd;
}

static void print_restart(const char *what, const restart_fig *f)
{
	if (f->exit_ms >= 0)
		printf("    %s: SIGTERM to exit %lld ms;", what, f->exit_ms);
	else
		printf("    %s:", what);
	if (f->failed[0]) {
		if (f->port_ms >= 0)
			printf(" port accepting %lld ms after launch;", f->port_ms);
		printf(" the broker did not serve again: %s\n", f->failed);
		return;
	}
	printf(" from launch: port %lld ms, Metadata %lld ms, Produce on the last partition "
	       "%lld ms\n",
	       f->port_ms, f->metadata_ms, f->produce_ms);
	printf("      then %d fds, VmRSS %ld KiB; the broker logged %ld lines (%ld \"rebuilding\")\n",
	       f->fds, f->rss_kb, f->log_lines, f->rebuilds);
}

/* ---- P: partitions ---- */

typedef struct part_fig {
	long target;
	long made;             /* partitions there at the end of the step */
	bool visited;          /* false: P ended before this target */
	bool measured;         /* false: none added, not measured again */
	char refused[320];     /* the first POLICY_VIOLATION message, "" none */
	long long create_ms;   /* creating the partitions of this step */
	int fds_created;
	long rss_created_kb;
	long long sweep_ms;    /* one batch to every partition */
	int fds_swept;
	long rss_swept_kb;
	restart_fig clean, killed;
} part_fig;

typedef struct topics {
	int *size;   /* partitions of topic i, named sb-%05d */
	int n, cap;
	long total;
} topics;

static void topic_name(char *buf, size_t cap, int i) { snprintf(buf, cap, "sb-%05d", i); }

/* CreateTopics v4 of count topics of the given sizes (new topics from
 * t->n on); adds those made to t. Returns how many were refused by
 * POLICY_VIOLATION (their message into refused when it is empty); other
 * errors die. */
static int create_topics(int fd, topics *t, const int *sizes, int count, char *refused,
			 size_t cap)
{
	wbuf w = { 0 };
	put_i32(&w, count);
	for (int i = 0; i < count; i++) {
		char name[32];
		topic_name(name, sizeof(name), t->n + i);
		put_str(&w, name);
		put_i32(&w, sizes[i]);
		put_i16(&w, 1);  /* replication factor */
		put_i32(&w, 0);  /* no assignments */
		put_i32(&w, 0);  /* no configs */
	}
	put_i32(&w, WAIT_MS); /* timeout */
	put_u8(&w, 0);        /* not validate only */
	rbuf r;
	uint8_t *resp = roundtrip(fd, 19, 4, &w, &r);
	free(w.b);
	get_i32(&r); /* throttle */
	int32_t n = get_i32(&r);
	if (n != count)
		die("CreateTopics: not one answer per topic");
	int refusals = 0;
	int base = t->n;
	for (int i = 0; i < count && !r.bad; i++) {
		char name[32], msg[320], want[32];
		get_str(&r, name, sizeof(name));
		int16_t e = get_i16(&r);
		get_str(&r, msg, sizeof(msg));
		topic_name(want, sizeof(want), base + i);
		if (strcmp(name, want) != 0)
			die("CreateTopics: answers in another order");
		if (e == E_POLICY_VIOLATION) {
			if (!refused[0])
				snprintf(refused, cap, "%s", msg);
			refusals++;
			continue;
		}
		if (e) {
			fprintf(stderr, "scalebench: CreateTopics of %s: error %d (%s)\n", name, e, msg);
			exit(1);
		}
		if (refusals)
			die("CreateTopics: a topic made after one refused");
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 256;
			t->size = realloc(t->size, (size_t)t->cap * sizeof(*t->size));
			if (!t->size)
				die("out of memory");
		}
		t->size[t->n++] = sizes[i];
		t->total += sizes[i];
	}
	if (r.bad)
		die("CreateTopics: the response does not parse");
	free(resp);
	return refusals;
}

/* Topics until t->total reaches target or the broker refuses a topic of
 * one partition. Returns true when it refused. */
static bool create_up_to(int fd, topics *t, long target, char *refused, size_t cap)
{
	int size = per_topic, batch = per_request;
	int *sizes = malloc((size_t)per_request * sizeof(*sizes));
	if (!sizes)
		die("out of memory");
	bool stopped = false;
	while (t->total < target) {
		int count = 0;
		long left = target - t->total;
		while (count < batch && left > 0) {
			sizes[count] = left < size ? (int)left : size;
			left -= sizes[count++];
		}
		if (create_topics(fd, t, sizes, count, refused, cap) == 0)
			continue;
		/* Refused: try the rest at half the size, down to 1. */
		if (sizes[0] == 1 || size == 1) {
			stopped = true;
			break;
		}
		size = size / 2 > 0 ? size / 2 : 1;
		batch = 1; /* one topic per request from here on */
	}
	free(sizes);
	return stopped;
}

/* One batch to every partition: one Produce per topic, PRODUCE_WINDOW in
 * flight; a topic answered with an error is sent again. */
static void sweep(int fd, const topics *t)
{
	wbuf batch = { 0 }, w = { 0 };
	build_batch(&batch, 5, 100);
	int32_t cids[PRODUCE_WINDOW];
	int which[PRODUCE_WINDOW];
	int retries = 0;
	for (int i = 0; i < t->n;) {
		int n = 0;
		for (; n < PRODUCE_WINDOW && i + n < t->n; n++) {
			char name[32];
			topic_name(name, sizeof(name), i + n);
			produce_body(&w, name, t->size[i + n], &batch);
			which[n] = i + n;
			cids[n] = send_req(fd, 0, 7, &w);
		}
		int failed = -1;
		for (int k = 0; k < n; k++) {
			rbuf r;
			uint8_t *resp = recv_resp(fd, cids[k], &r, WAIT_MS);
			if (!resp)
				die("no Produce response");
			int16_t e = produce_error(&r);
			free(resp);
			if (e < 0)
				die("a Produce response does not parse");
			if (e && failed < 0)
				failed = which[k];
		}
		if (failed >= 0) {
			if (++retries > 1000)
				die("Produce keeps failing");
			usleep(10000);
			i = failed; /* the topics after it again too: extra batches do no harm */
			continue;
		}
		i += n;
	}
	free(batch.b);
	free(w.b);
}

static void run_partitions(h_broker *b, part_fig *figs)
{
	int fd = w_connect(b->port, 5000);
	if (fd < 0)
		die("cannot connect");
	topics t = { 0 };
	long before = 0;
	bool stopped = false;
	for (int k = 0; k < ntargets; k++) {
		part_fig *f = &figs[k];
		f->visited = true;
		printf("P %ld partitions (%d per topic):\n", f->target, per_topic);
		long long t0 = h_now_ms();
		if (!stopped)
			stopped = create_up_to(fd, &t, f->target, f->refused, sizeof(f->refused));
		f->create_ms = h_now_ms() - t0;
		f->made = t.total;
		f->fds_created = broker_fds(b);
		f->rss_created_kb = h_broker_status_kb(b, "VmRSS");
		printf("  created %ld partitions in %d topics (%ld new in %lld ms); %d fds, VmRSS %ld KiB\n",
		       t.total, t.n, t.total - before, f->create_ms, f->fds_created, f->rss_created_kb);
		if (f->refused[0])
			printf("  stopped at %ld: POLICY_VIOLATION: %s\n", t.total, f->refused);
		if (t.total == before) {
			printf("  no partition added: not measured again\n");
			continue;
		}
		before = t.total;
		f->measured = true;
		char last[32];
		topic_name(last, sizeof(last), t.n - 1);
		int32_t lastp = t.size[t.n - 1] - 1;

		t0 = h_now_ms();
		sweep(fd, &t);
		f->sweep_ms = h_now_ms() - t0;
		f->fds_swept = broker_fds(b);
		f->rss_swept_kb = h_broker_status_kb(b, "VmRSS");
		printf("  one batch to each of %ld partitions: %lld ms; %d fds, VmRSS %ld KiB\n", t.total,
		       f->sweep_ms, f->fds_swept, f->rss_swept_kb);
		fflush(stdout);

		close(fd);
		fd = restart(b, false, last, lastp, &f->clean);
		print_restart("clean restart", &f->clean);
		if (fd < 0)
			break;
		t0 = h_now_ms();
		sweep(fd, &t);
		f->clean.sweep_ms = h_now_ms() - t0;
		printf("      one batch to every partition after it: %lld ms; %d fds\n",
		       f->clean.sweep_ms, broker_fds(b));
		fflush(stdout);

		close(fd);
		fd = restart(b, true, last, lastp, &f->killed);
		print_restart("kill -9 restart", &f->killed);
		fflush(stdout);
		if (fd < 0)
			break;
	}
	if (fd >= 0)
		close(fd);
	else
		printf("  P ends here: the broker is not running\n");
	free(t.size);
}

/* ---- S: one partition of many segments ---- */

typedef struct seg_fig {
	long want;
	long segments;         /* .log files once filled */
	long long fill_ms;
	double mb;
	int fds;
	long rss_kb;
	long long fetch0_us;   /* the first fetch of offset 0 */
	long long p50_us, p99_us, max_us;
	restart_fig clean, killed;
} seg_fig;

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* FETCH_SAMPLES fetches, each of the first offset of a random segment of
 * the older half: p50, p99, max in us. */
static void fetch_old(int fd, long segments, long long *p50, long long *p99, long long *max)
{
	long long us[FETCH_SAMPLES];
	long half = segments / 2 > 0 ? segments / 2 : 1;
	srand(15);
	for (int i = 0; i < FETCH_SAMPLES; i++) {
		long s = (long)((unsigned long)rand() % (unsigned long)half);
		us[i] = fetch_once(fd, (int64_t)s * SEG_BATCHES * SEG_RECORDS);
	}
	qsort(us, FETCH_SAMPLES, sizeof(us[0]), cmp_ll);
	*p50 = us[FETCH_SAMPLES / 2];
	*p99 = us[FETCH_SAMPLES * 99 / 100];
	*max = us[FETCH_SAMPLES - 1];
}

/* Produce `batches` copies of batch to partition 0, SEG_WINDOW in flight. */
static void fill(int fd, const wbuf *batch, long batches)
{
	wbuf w = { 0 };
	produce_one_body(&w, SEG_TOPIC, 0, batch);
	int32_t cids[SEG_WINDOW];
	long sent = 0, acked = 0;
	int head = 0, inflight = 0;
	while (acked < batches) {
		while (inflight < SEG_WINDOW && sent < batches) {
			cids[(head + inflight) % SEG_WINDOW] = send_req(fd, 0, 7, &w);
			inflight++;
			sent++;
		}
		rbuf r;
		uint8_t *resp = recv_resp(fd, cids[head], &r, WAIT_MS);
		if (!resp)
			die("no Produce response");
		int16_t e = produce_error(&r);
		free(resp);
		if (e) {
			fprintf(stderr, "scalebench: Produce to %s: error %d\n", SEG_TOPIC, e);
			exit(1);
		}
		head = (head + 1) % SEG_WINDOW;
		inflight--;
		acked++;
	}
	free(w.b);
}

static void segment_fetches(int fd, long segments, restart_fig *f)
{
	f->fetch_us = fetch_once(fd, 0);
	fetch_old(fd, segments, &f->fetch_p50_us, &f->fetch_p99_us, &f->fetch_max_us);
	printf("      then Fetch of offset 0 %.2f ms; %d fetches of older segments p50 %.2f p99 "
	       "%.2f max %.2f ms\n",
	       f->fetch_us / 1000.0, FETCH_SAMPLES, f->fetch_p50_us / 1000.0,
	       f->fetch_p99_us / 1000.0, f->fetch_max_us / 1000.0);
}

static void run_segments(h_broker *b, seg_fig *f)
{
	int fd = w_connect(b->port, 5000);
	if (fd < 0)
		die("cannot connect");
	wbuf w = { 0 };
	put_i32(&w, 1);
	put_str(&w, SEG_TOPIC);
	put_i32(&w, 1);
	put_i16(&w, 1);
	put_i32(&w, 0);
	put_i32(&w, 1);
	char seg_bytes[16];
	snprintf(seg_bytes, sizeof(seg_bytes), "%d", SEG_BYTES);
	put_str(&w, "segment.bytes");
	put_str(&w, seg_bytes);
	put_i32(&w, WAIT_MS);
	put_u8(&w, 0);
	rbuf r;
	uint8_t *resp = roundtrip(fd, 19, 4, &w, &r);
	get_i32(&r);
	get_i32(&r);
	get_str(&r, NULL, 0);
	int16_t e = get_i16(&r);
	char msg[320];
	get_str(&r, msg, sizeof(msg));
	free(resp);
	free(w.b);
	if (r.bad || e) {
		fprintf(stderr, "scalebench: CreateTopics %s: error %d (%s)\n", SEG_TOPIC, e, msg);
		exit(1);
	}
	wbuf batch = { 0 };
	build_batch(&batch, SEG_RECORDS, SEG_VALUE);
	/* A segment takes a batch while its size stays within segment.bytes. */
	if (batch.len * SEG_BATCHES > SEG_BYTES || batch.len * (SEG_BATCHES + 1) <= SEG_BYTES)
		die("the batch size does not give SEG_BATCHES batches per segment");
	printf("S one partition of %ld segments (segment.bytes=%d, %d batches of %zu bytes each):\n",
	       f->want, SEG_BYTES, SEG_BATCHES, batch.len);
	fflush(stdout);
	long batches = f->want * SEG_BATCHES;
	long long t0 = h_now_ms();
	fill(fd, &batch, batches);
	f->fill_ms = h_now_ms() - t0;
	f->mb = (double)batches * (double)batch.len / 1e6;
	char dir[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/%s-0", b->dir, SEG_TOPIC);
	f->segments = count_files(dir, ".log");
	f->fds = broker_fds(b);
	f->rss_kb = h_broker_status_kb(b, "VmRSS");
	printf("  filled %.0f MB in %lld ms (%.0f MB/s): %ld segments; %d fds, VmRSS %ld KiB\n", f->mb,
	       f->fill_ms, f->mb * 1000.0 / (double)(f->fill_ms ? f->fill_ms : 1), f->segments, f->fds,
	       f->rss_kb);
	f->fetch0_us = fetch_once(fd, 0);
	fetch_old(fd, f->segments, &f->p50_us, &f->p99_us, &f->max_us);
	printf("  Fetch of offset 0 %.2f ms; %d fetches of older segments p50 %.2f p99 %.2f max "
	       "%.2f ms; %d fds after\n",
	       f->fetch0_us / 1000.0, FETCH_SAMPLES, f->p50_us / 1000.0, f->p99_us / 1000.0,
	       f->max_us / 1000.0, broker_fds(b));
	fflush(stdout);

	close(fd);
	fd = restart(b, false, SEG_TOPIC, 0, &f->clean);
	print_restart("clean restart", &f->clean);
	if (fd >= 0) {
		segment_fetches(fd, f->segments, &f->clean);
		fill(fd, &batch, SEG_BATCHES);
		fflush(stdout);
		close(fd);
		fd = restart(b, true, SEG_TOPIC, 0, &f->killed);
		print_restart("kill -9 restart", &f->killed);
		if (fd >= 0) {
			segment_fetches(fd, f->segments, &f->killed);
			close(fd);
		}
	}
	fflush(stdout);
	free(batch.b);
}

/* ---- the table ---- */

/* A column of the table: every figure as a double, -1 where it does not
 * apply. */
typedef struct column {
	char name[24];
	double made, create_s, fds, rss_mb, sweep_s, sweep_fds;
	double fetch0_ms, fetch_p50_ms, fetch_p99_ms;
	double exit_s[2], serving[2], port_s[2], metadata_s[2], produce_s[2], r_fds[2], r_rss_mb[2];
	double log_lines[2], rebuilds[2], after_sweep_s[2], after_fetch0_ms[2], after_p50_ms[2];
} column;

static void column_init(column *c, const char *name)
{
	double *d = &c->made;
	for (size_t i = 0; i < (sizeof(*c) - offsetof(column, made)) / sizeof(double); i++)
		d[i] = -1;
	snprintf(c->name, sizeof(c->name), "%s", name);
}

static void column_restarts(column *c, const restart_fig *clean, const restart_fig *killed)
{
	const restart_fig *r[2] = { clean, killed };
	for (int i = 0; i < 2; i++) {
		if (!r[i]->done && !r[i]->failed[0])
			continue;
		c->exit_s[i] = r[i]->exit_ms >= 0 ? r[i]->exit_ms / 1000.0 : -1;
		c->serving[i] = r[i]->done;
		if (!r[i]->done)
			continue;
		c->port_s[i] = r[i]->port_ms / 1000.0;
		c->metadata_s[i] = r[i]->metadata_ms / 1000.0;
		c->produce_s[i] = r[i]->produce_ms / 1000.0;
		c->r_fds[i] = r[i]->fds;
		c->r_rss_mb[i] = r[i]->rss_kb / 1024.0;
		c->log_lines[i] = (double)r[i]->log_lines;
		c->rebuilds[i] = (double)r[i]->rebuilds;
	}
}

typedef struct table_row {
	const char *figure;
	size_t off; /* of a double in column */
	int decimals;
} table_row;

#define TR(fig, field, dec) { fig, offsetof(column, field), dec }

static const table_row rows[] = {
	TR("partitions made / segments on disk", made, 0),
	TR("  time to create / fill, s", create_s, 1),
	TR("  broker fds then", fds, 0),
	TR("  broker VmRSS then, MB", rss_mb, 1),
	TR("one batch to every partition, s", sweep_s, 2),
	TR("  broker fds then", sweep_fds, 0),
	TR("Fetch of offset 0 (the oldest segment), ms", fetch0_ms, 2),
	TR("  fetches of older segments, p50 ms", fetch_p50_ms, 2),
	TR("  fetches of older segments, p99 ms", fetch_p99_ms, 2),
	TR("clean restart: SIGTERM to exit, s", exit_s[0], 2),
	TR("  serving again (1 yes, 0 no)", serving[0], 0),
	TR("  launch to port accepting, s", port_s[0], 2),
	TR("  launch to first Metadata answered, s", metadata_s[0], 2),
	TR("  launch to Produce on the last partition, s", produce_s[0], 2),
	TR("  broker fds then", r_fds[0], 0),
	TR("  broker VmRSS then, MB", r_rss_mb[0], 1),
	TR("  lines logged by the start", log_lines[0], 0),
	TR("    of which \"rebuilding\"", rebuilds[0], 0),
	TR("  one batch to every partition after it, s", after_sweep_s[0], 2),
	TR("  first Fetch of offset 0 after it, ms", after_fetch0_ms[0], 2),
	TR("  fetches of older segments, p50 ms", after_p50_ms[0], 2),
	TR("kill -9 restart: serving again (1 yes, 0 no)", serving[1], 0),
	TR("  launch to port accepting, s", port_s[1], 2),
	TR("  launch to first Metadata answered, s", metadata_s[1], 2),
	TR("  launch to Produce on the last partition, s", produce_s[1], 2),
	TR("  broker fds then", r_fds[1], 0),
	TR("  broker VmRSS then, MB", r_rss_mb[1], 1),
	TR("  lines logged by the start", log_lines[1], 0),
	TR("    of which \"rebuilding\"", rebuilds[1], 0),
	TR("  first Fetch of offset 0 after it, ms", after_fetch0_ms[1], 2),
	TR("  fetches of older segments, p50 ms", after_p50_ms[1], 2),
};

static void print_table(const part_fig *pf, int np, const seg_fig *sf)
{
	column cols[MAX_TARGETS + 1];
	int ncols = 0;
	for (int k = 0; k < np; k++) {
		const part_fig *p = &pf[k];
		column *c = &cols[ncols++];
		char name[24];
		snprintf(name, sizeof(name), "P %ld", p->target);
		column_init(c, name);
		if (p->visited)
			c->made = (double)p->made;
		if (!p->measured)
			continue;
		c->create_s = p->create_ms / 1000.0;
		c->fds = p->fds_created;
		c->rss_mb = p->rss_created_kb / 1024.0;
		c->sweep_s = p->sweep_ms / 1000.0;
		c->sweep_fds = p->fds_swept;
		column_restarts(c, &p->clean, &p->killed);
		if (p->clean.done)
			c->after_sweep_s[0] = p->clean.sweep_ms / 1000.0;
	}
	if (sf) {
		column *c = &cols[ncols++];
		char name[24];
		snprintf(name, sizeof(name), "S %ld", sf->want);
		column_init(c, name);
		c->made = (double)sf->segments;
		c->create_s = sf->fill_ms / 1000.0;
		c->fds = sf->fds;
		c->rss_mb = sf->rss_kb / 1024.0;
		c->fetch0_ms = sf->fetch0_us / 1000.0;
		c->fetch_p50_ms = sf->p50_us / 1000.0;
		c->fetch_p99_ms = sf->p99_us / 1000.0;
		column_restarts(c, &sf->clean, &sf->killed);
		const restart_fig *r[2] = { &sf->clean, &sf->killed };
		for (int i = 0; i < 2; i++) {
			c->after_fetch0_ms[i] = r[i]->fetch_us / 1000.0;
			c->after_p50_ms[i] = r[i]->fetch_p50_us / 1000.0;
		}
	}
	printf("\nscalebench: %s\n%-48s", h_samsa_bin(), "figure");
	for (int c = 0; c < ncols; c++)
		printf(" %10s", cols[c].name);
	printf("\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		printf("%-48s", rows[i].figure);
		for (int c = 0; c < ncols; c++) {
			double v = *(const double *)((const char *)&cols[c] + rows[i].off);
			if (v < 0)
				printf(" %10s", "-");
			else
				printf(" %10.*f", rows[i].decimals, v);
		}
		printf("\n");
	}
	for (int k = 0; k < np; k++)
		if (pf[k].refused[0]) {
			printf("P: the broker refused more partitions at %ld: %s\n", pf[k].made,
			       pf[k].refused);
			break;
		}
	for (int k = 0; k < np; k++) {
		if (pf[k].clean.failed[0])
			printf("P %ld: after SIGTERM the broker %s\n", pf[k].target, pf[k].clean.failed);
		if (pf[k].killed.failed[0])
			printf("P %ld: after kill -9 the broker %s\n", pf[k].target, pf[k].killed.failed);
	}
	if (sf && sf->clean.failed[0])
		printf("S: after SIGTERM the broker %s\n", sf->clean.failed);
	if (sf && sf->killed.failed[0])
		printf("S: after kill -9 the broker %s\n", sf->killed.failed);
	if (sf)
		printf("S: segment.bytes=%d (the smallest allowed), %d batches of %d records of %d "
		       "bytes per segment\n", SEG_BYTES, SEG_BATCHES, SEG_RECORDS, SEG_VALUE);
}

static int parse_targets(const char *s)
{
	ntargets = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || ntargets == MAX_TARGETS)
			return -1;
		if (v > 0)
			targets[ntargets++] = v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double scale = 1;
	int opt;
	while ((opt = getopt(argc, argv, "P:t:b:S:x:")) != -1) {
		switch (opt) {
		case 'P':
			if (parse_targets(optarg) < 0)
				die("-P takes up to 4 partition counts, e.g. 10000,50000");
			break;
		case 't': per_topic = atoi(optarg); break;
		case 'b': per_request = atoi(optarg); break;
		case 'S': nsegments = atol(optarg); break;
		case 'x': scale = atof(optarg); break;
		default:
			fprintf(stderr, "usage: scalebench [-P targets] [-t per-topic] [-b per-request] "
				"[-S segments] [-x scale]\n");
			return 2;
		}
	}
	if (per_topic < 1 || per_request < 1 || nsegments < 0 || !(scale > 0))
		die("-t, -b and -x must be positive");
	for (int k = 0; k < ntargets; k++) {
		targets[k] = (long)((double)targets[k] * scale + 0.5);
		if (targets[k] < 1 || (k && targets[k] <= targets[k - 1]))
			die("the targets must grow");
	}
	nsegments = (long)((double)nsegments * scale + 0.5);
	/* The broker inherits this process's soft limit (and raises its own). */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (h_init() != 0)
		return 1;
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("scalebench: %s; open file limit %llu; targets", h_samsa_bin(),
	       (unsigned long long)rl.rlim_cur);
	for (int k = 0; k < ntargets; k++)
		printf(" %ld", targets[k]);
	printf(" partitions (%d per topic, %d topics per CreateTopics), %ld segments\n", per_topic,
	       per_request, nsegments);
	fflush(stdout);

	part_fig pf[MAX_TARGETS];
	memset(pf, 0, sizeof(pf));
	for (int k = 0; k < ntargets; k++)
		pf[k].target = targets[k];
	seg_fig sf;
	memset(&sf, 0, sizeof(sf));
	sf.want = nsegments;
	if (ntargets) {
		h_broker *b = h_broker_new(NULL);
		if (!b || h_broker_start(b) != 0)
			die("the broker did not start");
		run_partitions(b, pf);
		if (h_broker_alive(b) && h_broker_stop(b, WAIT_MS) == -1)
			fprintf(stderr, "scalebench: the broker did not stop cleanly at the end of P\n");
		h_broker_free(b);
	}
	if (nsegments) {
		h_broker *b = h_broker_new(NULL);
		if (!b || h_broker_start(b) != 0)
			die("the broker did not start");
		run_segments(b, &sf);
		if (h_broker_alive(b) && h_broker_stop(b, WAIT_MS) == -1)
			fprintf(stderr, "scalebench: the broker did not stop cleanly at the end of S\n");
		h_broker_free(b);
	}
	print_table(pf, ntargets, nsegments ? &sf : NULL);
	h_fini();
	return 0;
}
