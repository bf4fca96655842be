/*
 * fd_shortage.c - the broker at its open-file limit (issue 15): a shortage
 * of descriptors is reported as one, a bounded number of times; new
 * connections are accepted and closed at once instead of hanging in the
 * listen backlog (the spare-descriptor trick of libuv and nginx); the
 * clients already connected keep being served; a file the broker cannot
 * open fails that one request with Kafka's error and damages nothing; and
 * the broker serves new clients again by itself once descriptors are free.
 *
 * The limit is lowered under the running broker with prlimit(2) (soft
 * RLIMIT_NOFILE; the broker raises its soft limit to the hard one at start,
 * and this machine's hard limit of 20,000 cannot be raised), as an operator
 * could, and restored the same way:
 *  - near the limit: at 256, the broker lets connections in until only
 *    its kept descriptors are left (listener.c, FD_HEADROOM), then closes
 *    new ones;
 *  - past it: at fewer descriptors than the broker holds, every open fails
 *    with EMFILE: accept itself, a segment roll, a new topic's files.
 *
 * Raw sockets (wire.h, kmsg.h), so nothing but the broker decides when a
 * connection is closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define KAFKA_STORAGE_ERROR 56
#define POLICY_VIOLATION 44
/* At most this many lines per kind in 10 s (broker/ratelog.h). */
#define RATELOG_BURST 10

/* Set the broker's soft RLIMIT_NOFILE, keeping its hard limit. */
static void set_nofile(const h_broker *b, rlim_t soft)
{
	struct rlimit cur, want;
	ck_assert_msg(prlimit(b->pid, RLIMIT_NOFILE, NULL, &cur) == 0, "prlimit: %s", strerror(errno));
	want.rlim_cur = soft;
	want.rlim_max = cur.rlim_max;
	ck_assert_msg(prlimit(b->pid, RLIMIT_NOFILE, &want, NULL) == 0, "prlimit %llu: %s",
		      (unsigned long long)soft, strerror(errno));
}

/* Descriptors the broker holds (entries of /proc/PID/fd). */
static int broker_fds(const h_broker *b)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)b->pid);
	DIR *d = opendir(path);
	ck_assert_msg(d != NULL, "%s: %s", path, strerror(errno));
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A new connection sends ApiVersions v0: its fd when answered, -1 when the
 * broker closed it without a byte. Fails the test when it is left hanging
 * (neither answered nor closed in 5 s): what the backlog does to a client
 * of a broker that stops accepting. *took_ms (may be NULL) gets the time
 * from connect to the answer or the close. */
static int try_connect(const h_broker *b, int32_t cid, long long *took_ms)
{
	long long t0 = h_now_ms();
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect failed");
	uint8_t req[64];
	int n = w_build_request(req, sizeof(req), 18, 0, cid, "fd_shortage", NULL, 0);
	ck_assert(n > 0);
	w_send_all(fd, req, (size_t)n, h_scaled_ms(5000)); /* may fail: closed */
	uint8_t *body = NULL;
	int32_t len;
	int rc = w_recv_frame(fd, &body, &len, 1 << 20, h_scaled_ms(5000));
	if (took_ms)
		*took_ms = h_now_ms() - t0;
	ck_assert_msg(rc != WIRE_TIMEOUT, "a new connection was left hanging: neither served nor "
		      "closed in 5 s");
	if (rc == WIRE_OK) {
		ck_assert_int_ge(len, 4);
		ck_assert_int_eq(w_get32(body), cid);
		free(body);
		return fd;
	}
	ck_assert_msg(rc == WIRE_CLOSED, "unexpected receive result %d", rc);
	close(fd);
	return -1;
}

/* A new connection that is served, retried every 100 ms for up to 10 s. */
static int connect_served(const h_broker *b)
{
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	for (int32_t cid = 1;; cid++) {
		int fd = try_connect(b, cid, NULL);
		if (fd >= 0)
			return fd;
		ck_assert_msg(h_now_ms() < deadline, "no new connection was served for 10 s");
		usleep(100 * 1000);
	}
}

/* ApiVersions v0 and Metadata v1 (every topic) answered on fd. */
static void assert_served(int fd, int32_t cid, const char *who)
{
	ck_assert_msg(w_api_versions_v0(fd, cid, h_scaled_ms(5000)) == 0,
		      "%s: ApiVersions not answered", who);
	uint8_t req[64], mbody[4], *resp = NULL;
	w_put32(mbody, -1);
	int n = w_build_request(req, sizeof(req), 3, 1, cid + 1, "fd_shortage", mbody, sizeof(mbody));
	ck_assert_int_eq(w_send_all(fd, req, (size_t)n, h_scaled_ms(5000)), 0);
	int32_t len;
	ck_assert_msg(w_recv_frame(fd, &resp, &len, 1 << 24, h_scaled_ms(5000)) == WIRE_OK,
		      "%s: Metadata not answered", who);
	ck_assert_int_eq(w_get32(resp), cid + 1);
	free(resp);
}

/* Lines of the broker's log containing needle. */
static int log_count(const h_broker *b, const char *needle)
{
	char *log = h_broker_read_log(b);
	ck_assert(log != NULL);
	int n = 0;
	for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(log);
	return n;
}

START_TEST(test_near_the_limit)
{
	h_broker *b = c_start_broker(NULL);
	int keep = connect_served(b);
	set_nofile(b, 256);

	/* Connections are let in until the broker keeps the rest: then the
	 * next ones are closed, each at once. */
	enum { MAX_EXTRA = 300 };
	int extra[MAX_EXTRA], n = 0, refused = 0;
	for (int i = 0; i < MAX_EXTRA && refused < 3; i++) {
		int fd = try_connect(b, 1000 + i, NULL);
		if (fd >= 0)
			extra[n++] = fd;
		else
			refused++;
	}
	fprintf(stderr, "fd_shortage: at a limit of 256 the broker served %d more connections, "
		"then closed new ones\n", n);
	ck_assert_msg(refused == 3, "%d connections were served at an open-file limit of 256", n);
	ck_assert_msg(n >= 100, "only %d connections were served before the shortage", n);
	/* It kept the last 64 for its files: accept never hit the limit. */
	ck_assert_msg(broker_fds(b) <= 256 - 64, "the broker holds %d descriptors", broker_fds(b));

	/* The clients it has are served all along. */
	assert_served(keep, 10, "the first client");
	assert_served(extra[0], 20, "an early connection");
	assert_served(extra[n - 1], 30, "the last connection let in");

	/* New ones, for a second and a half: each closed, quickly (the
	 * listener sheds after a pause of 100 ms, never leaves one waiting). */
	long long worst = 0;
	for (int i = 0; i < 15; i++) {
		long long took;
		ck_assert_int_eq(try_connect(b, 2000 + i, &took), -1);
		if (took > worst)
			worst = took;
		usleep(100 * 1000);
	}
	fprintf(stderr, "fd_shortage: new connections closed within %lld ms\n", worst);
	ck_assert_msg(worst < h_scaled_ms(2000), "a new connection waited %lld ms to be closed", worst);
	assert_served(keep, 40, "the first client after the refusals");

	/* Reported as a shortage, not once per refused connection. */
	int began = log_count(b, "out of file descriptors");
	ck_assert_msg(began >= 1, "the shortage is not in the broker's log");
	ck_assert_msg(began <= RATELOG_BURST, "the shortage was logged %d times", began);
	ck_assert_int_eq(log_count(b, "accept: "), 0);

	/* Some clients leave: new ones are served again, by themselves. */
	for (int i = 0; i < 40; i++)
		close(extra[--n]);
	int fresh = connect_served(b);
	assert_served(fresh, 50, "a new client after the shortage");
	ck_assert_msg(log_count(b, "file descriptors free again") >= 1,
		      "the end of the shortage is not in the broker's log");
	ck_assert_msg(log_count(b, "connections were closed unserved meanwhile") >= 1,
		      "the refused connections are not counted in the log");

	close(fresh);
	for (int i = 0; i < n; i++)
		close(extra[i]);
	close(keep);
	set_nofile(b, 20000);
	c_stop_broker(b);
}
END_TEST

/* Produce v9 of one batch of one record (CreateTime ts) on fd; the error
 * code, *base_offset on success. */
static int16_t produce_one(int fd, int first, int64_t ts, int64_t *base_offset)
{
	k_wbuf batch, body;
	batch.len = 0;
	k_build_batch(&batch, 1, first, ts, 0);
	k_produce_body(&body, "roll", 0, 1, &batch);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
	int16_t err = k_produce_parse(&r, base_offset);
	free(resp);
	return err;
}

/* The records of partition roll-0 from offset 0 up to the high watermark,
 * counted batch by batch (v2 batch: base offset at 0, length at 8, record
 * count at 57); every batch must follow the one before. A fetch answers
 * from one segment, and every record here has a segment of its own, so
 * one fetch per segment. */
static int64_t count_records(int fd)
{
	int64_t next = 0, hw = 0;
	do {
		k_wbuf body;
		k_fetch_body(&body, "roll", 0, next, 0, 1);
		k_rbuf r;
		uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
		int64_t len;
		const uint8_t *p;
		ck_assert_int_eq(k_fetch_parse(&r, &hw, &p, &len), 0);
		int64_t from = next;
		while (p && len >= 61) {
			int64_t base = ((int64_t)w_get32(p) << 32) | (uint32_t)w_get32(p + 4);
			int32_t blen = w_get32(p + 8);
			ck_assert_int_eq(base, next);
			ck_assert(blen >= 49 && 12 + (int64_t)blen <= len);
			next = base + w_get32(p + 57);
			p += 12 + blen;
			len -= 12 + blen;
		}
		free(resp);
		ck_assert_msg(next > from || next == hw, "no record at offset %lld below the high "
			      "watermark %lld", (long long)next, (long long)hw);
	} while (next < hw);
	ck_assert_int_eq(next, hw);
	return next;
}

/* CreateTopics v4 of name (1 partition, factor 1) on fd: the error code. */
static int16_t create_topic_raw(int fd, const char *name)
{
	k_wbuf body;
	body.len = 0;
	kw_i32(&body, 1);
	kw_i16(&body, (int16_t)strlen(name));
	kw_raw(&body, name, strlen(name));
	kw_i32(&body, 1);  /* num_partitions */
	kw_i16(&body, 1);  /* replication_factor */
	kw_i32(&body, 0);  /* assignments */
	kw_i32(&body, 0);  /* configs */
	kw_i32(&body, 10000); /* timeout_ms */
	kw_u8(&body, 0);   /* validate_only */
	k_rbuf r;
	uint8_t *resp = k_roundtrip_classic(fd, 19, 4, &body, &r);
	kr_i32(&r, "throttle_time_ms");
	ck_assert_int_eq(kr_i32(&r, "topics"), 1);
	int16_t nlen = kr_i16(&r, "name length");
	ck_assert(kr_need(&r, (size_t)nlen, "name"));
	r.pos += (size_t)nlen;
	int16_t err = kr_i16(&r, "error_code");
	free(resp);
	return err;
}

START_TEST(test_past_the_limit)
{
	/* Every acknowledged batch is flushed (fsync of the segment, and of
	 * the partition's directory while its new files are not synced), and
	 * the high watermark checkpoint is rewritten every 200 ms: both need
	 * descriptors during the shortage. */
	const char *ov[] = { "log.flush.interval.messages=1",
			     "replica.high.watermark.checkpoint.interval.ms=200", NULL };
	h_broker *b = c_start_broker(ov);
	rd_kafka_t *admin = c_producer(b, NULL);
	char errstr[256];
	/* Every batch with a timestamp 100 ms past the segment's rolls it. */
	const char *cfg[] = { "segment.ms", "100", NULL };
	ck_assert_int_eq(c_create_topic(admin, "roll", 1, 1, cfg, errstr, sizeof(errstr)), 0);
	c_wait_topic(admin, "roll", 1, h_scaled_ms(10000));
	rd_kafka_destroy(admin);
	int keep = connect_served(b);

	/* Fewer descriptors than the broker holds: every open fails. */
	int held = broker_fds(b);
	set_nofile(b, (rlim_t)held - 2);

	/* The first batch goes to the open active segment: acknowledged; its
	 * flush cannot open the directory to sync it, and is retried later
	 * (not taken for a failed fsync: nothing was lost). */
	int64_t ts = 1700000000000, base, acked = 0;
	ck_assert_int_eq(produce_one(keep, 0, ts, &base), 0);
	ck_assert_int_eq(base, 0);
	acked++;

	/* accept itself fails: the spare descriptor still closes the new
	 * connection at once instead of leaving it in the backlog. */
	long long took;
	ck_assert_int_eq(try_connect(b, 100, &took), -1);
	fprintf(stderr, "fd_shortage: past the limit (%d held), a new connection was closed after "
		"%lld ms\n", held, took);
	ck_assert_int_eq(try_connect(b, 101, NULL), -1);
	assert_served(keep, 10, "the client already connected");
	usleep(1000 * 1000); /* flushes and checkpoints fail meanwhile */

	/* A produce that rolls the segment cannot open its files: that
	 * request fails with Kafka's error (or succeeds, if the broker made
	 * room), nothing else. */
	int16_t err = produce_one(keep, 1, ts + 10000, &base);
	fprintf(stderr, "fd_shortage: produce needing a new segment answered %d\n", err);
	ck_assert_msg(err == 0 || err == KAFKA_STORAGE_ERROR, "produce answered %d", err);
	if (err == 0) {
		ck_assert_int_eq(base, acked);
		acked++;
	}
	/* A new topic's files cannot be made: refused, nothing of it stays
	 * (it is created below once descriptors are back). Refused either
	 * when its files fail to open (KAFKA_STORAGE_ERROR) or before, by the
	 * partition budget that counts the open-file limit
	 * (brk_partitions_fd_budget_allows: POLICY_VIOLATION). */
	err = create_topic_raw(keep, "fresh");
	fprintf(stderr, "fd_shortage: CreateTopics answered %d\n", err);
	ck_assert_msg(err == KAFKA_STORAGE_ERROR || err == POLICY_VIOLATION,
		      "CreateTopics answered %d", err);
	/* What is there is read as before. */
	ck_assert_int_eq(count_records(keep), acked);
	assert_served(keep, 20, "the client already connected, after the failures");

	ck_assert_msg(log_count(b, "fsync failed") == 0,
		      "a flush that could not open a file was taken for a failed fsync");
	int began = log_count(b, "out of file descriptors (accept: Too many open files");
	ck_assert_msg(began >= 1, "the shortage is not in the broker's log");
	ck_assert_msg(began <= RATELOG_BURST, "the shortage was logged %d times", began);

	/* Descriptors come back: the broker recovers by itself. */
	set_nofile(b, 20000);
	int fresh = connect_served(b);
	assert_served(fresh, 30, "a new client after the shortage");
	ck_assert_int_eq(create_topic_raw(fresh, "fresh"), 0);
	ck_assert_int_eq(produce_one(fresh, 2, ts + 20000, &base), 0);
	ck_assert_int_eq(base, acked);
	acked++;
	ck_assert_int_eq(count_records(fresh), acked);
	close(fresh);
	close(keep);

	/* A clean stop, and every acknowledged record is there after it. */
	ck_assert_msg(h_broker_stop(b, h_scaled_ms(30000)) == 0, "the broker did not exit 0");
	ck_assert_int_eq(h_broker_restart(b), 0);
	int again = connect_served(b);
	ck_assert_int_eq(count_records(again), acked);
	close(again);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fd_shortage");
	TCase *tc = tcase_create("fd_shortage");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_near_the_limit);
	tcase_add_test(tc, test_past_the_limit);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
