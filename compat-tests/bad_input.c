/*
 * bad_input.c - hostile and broken clients on raw sockets (no librdkafka):
 * oversized and negative frame sizes, truncated frames, a body that ends
 * in the middle of a field, an unknown API key, an unsupported version,
 * ApiVersions v99, seeded random bytes, a client that gets itself closed
 * again and again (the log lines it causes are rate-limited), and one that sends many
 * requests and never reads. Each must cost at most that one connection
 * (DESIGN.md 9: a frame above socket.request.max.bytes is refused, a request
 * that does not parse closes its connection and only that one; KIP-511: an
 * ApiVersions request of an unknown version gets a v0 response with
 * UNSUPPORTED_VERSION and the supported ranges). After every case the broker
 * process is alive and answers a fresh ApiVersions request.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/wire.h"

#define MAX_REQ 1048576
#define CLOSE_WAIT_MS h_scaled_ms(5000)

static h_broker *start(void)
{
	return c_start_broker((const char *const[]){"socket.request.max.bytes=1048576", NULL});
}

static int connect_or_fail(h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "cannot connect to the broker");
	return fd;
}

static void send_or_fail(int fd, const void *buf, size_t len)
{
	int rc = w_send_all(fd, buf, len, h_scaled_ms(5000));
	ck_assert_msg(rc == 0, "send of %zu bytes failed (%d)", len, rc);
}

/* The broker must close fd (EOF or reset) within the bound. */
static void expect_closed(int fd, const char *what)
{
	long n = 0;
	int rc = w_wait_closed(fd, CLOSE_WAIT_MS, &n);
	ck_assert_msg(rc == WIRE_CLOSED, "%s: connection still open after %d ms (%ld bytes received)",
		      what, CLOSE_WAIT_MS, n);
	close(fd);
}

static void frame_size_case(h_broker *b, int32_t size, const char *what)
{
	int fd = connect_or_fail(b);
	uint8_t hdr[16];
	w_put32(hdr, size);
	/* A plausible header after the size, as a real oversized request
	 * would have. */
	w_put16(hdr + 4, 3);
	w_put16(hdr + 6, 1);
	w_put32(hdr + 8, 1);
	w_put16(hdr + 12, 0);
	w_put16(hdr + 14, 0);
	send_or_fail(fd, hdr, sizeof(hdr));
	expect_closed(fd, what);
	c_assert_broker_serving(b);
}

START_TEST(test_frame_too_large)
{
	h_broker *b = start();
	frame_size_case(b, 0x7fffffff, "frame size 0x7fffffff");
	frame_size_case(b, MAX_REQ + 1, "frame size socket.request.max.bytes + 1");
	frame_size_case(b, (int32_t)0x80000000, "negative frame size");
	frame_size_case(b, -1, "frame size -1");
	c_stop_broker(b);
}
END_TEST

START_TEST(test_truncated)
{
	h_broker *b = start();
	uint8_t buf[64];

	/* Size says 100, 10 bytes come, then the client goes away. */
	int fd = connect_or_fail(b);
	w_put32(buf, 100);
	w_put16(buf + 4, 18); /* ApiVersions */
	w_put16(buf + 6, 0);
	w_put32(buf + 8, 1);
	w_put16(buf + 12, 20); /* client id of 20 bytes: never sent */
	send_or_fail(fd, buf, 14);
	close(fd);
	c_assert_broker_serving(b);

	/* Same, but the client stays: the half frame must not hold up others. */
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, 14);
	c_assert_broker_serving(b);
	close(fd);

	/* A complete 20-byte frame whose body ends inside a field: Metadata
	 * v1, client id "ab", topics count 5, first topic name length 100
	 * with only 2 bytes of it. */
	uint8_t *p = buf;
	p = w_put32(p, 20);
	p = w_put16(p, 3);  /* Metadata */
	p = w_put16(p, 1);  /* v1 */
	p = w_put32(p, 42); /* correlation id */
	p = w_put16(p, 2);
	*p++ = 'a';
	*p++ = 'b';
	p = w_put32(p, 5);   /* topics */
	p = w_put16(p, 100); /* name length */
	*p++ = 'x';
	*p++ = 'y';
	ck_assert_int_eq(p - buf, 24);
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, 24);
	expect_closed(fd, "body ending mid-field");
	c_assert_broker_serving(b);

	/* A frame shorter than the request header itself. */
	p = buf;
	p = w_put32(p, 3);
	p = w_put16(p, 18);
	*p++ = 0;
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, 7);
	expect_closed(fd, "3-byte frame");
	c_assert_broker_serving(b);

	/* Zero-length frame. */
	w_put32(buf, 0);
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, 4);
	expect_closed(fd, "0-byte frame");
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_unknown_api_and_version)
{
	h_broker *b = start();
	uint8_t buf[64];
	int n;

	n = w_build_request(buf, sizeof(buf), 999, 0, 7, "bad", NULL, 0);
	int fd = connect_or_fail(b);
	send_or_fail(fd, buf, (size_t)n);
	expect_closed(fd, "API key 999");
	c_assert_broker_serving(b);

	n = w_build_request(buf, sizeof(buf), -5, 0, 7, "bad", NULL, 0);
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, (size_t)n);
	expect_closed(fd, "API key -5");
	c_assert_broker_serving(b);

	/* A served key at a version nobody serves (Metadata v99): only
	 * ApiVersions has an error response for that; others close. */
	uint8_t body[4];
	w_put32(body, -1);
	n = w_build_request(buf, sizeof(buf), 3, 99, 7, "bad", body, sizeof(body));
	fd = connect_or_fail(b);
	send_or_fail(fd, buf, (size_t)n);
	expect_closed(fd, "Metadata v99");
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_api_versions_unsupported)
{
	h_broker *b = start();
	/* ApiVersions v99 as a newer client would send it: request header v2
	 * (tagged fields) and a v3-style body (compact strings, tags). */
	uint8_t body[] = {0x00,                                    /* header tags */
			  0x06, 'n', 'e', 'w', 'e', 'r',             /* software name */
			  0x04, '9', '.', '9',                       /* software version */
			  0x00};                                     /* body tags */
	uint8_t buf[64];
	int n = w_build_request(buf, sizeof(buf), 18, 99, 0x1234, "future", body, sizeof(body));
	int fd = connect_or_fail(b);
	send_or_fail(fd, buf, (size_t)n);
	uint8_t *resp;
	int32_t len;
	int rc = w_recv_frame(fd, &resp, &len, 1 << 20, h_scaled_ms(5000));
	ck_assert_msg(rc == WIRE_OK, "ApiVersions v99: no response (%d)", rc);
	int32_t cid, napis;
	int16_t err;
	w_api_range apis[128];
	rc = w_parse_api_versions_v0(resp, len, &cid, &err, apis, 128, &napis);
	ck_assert_msg(rc == 0, "ApiVersions v99: response of %d bytes is not the v0 layout", len);
	ck_assert_int_eq(cid, 0x1234);
	ck_assert_msg(err == 35, "ApiVersions v99: error_code %d, expected 35 "
				 "(UNSUPPORTED_VERSION)",
		      err);
	ck_assert_msg(napis > 0, "ApiVersions v99: empty api list");
	ck_assert_msg(len == 10 + 6 * napis,
		      "ApiVersions v99: %d bytes for %d apis, the v0 layout has %d", len, napis,
		      10 + 6 * napis);
	int has_av = 0;
	for (int i = 0; i < napis && i < 128; i++)
		if (apis[i].key == 18)
			has_av = 1;
	ck_assert_msg(has_av, "ApiVersions v99: the list does not include ApiVersions");
	free(resp);

	/* The connection is still usable. */
	rc = w_api_versions_v0(fd, 0x1235, h_scaled_ms(5000));
	ck_assert_msg(rc == 0, "ApiVersions v0 after v99 on the same connection failed (%d)", rc);
	close(fd);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

/* The advertised ranges are exactly the implemented ones (brief / DESIGN 1). */
START_TEST(test_api_versions_ranges)
{
	static const w_api_range want[] = {
	    {0, 3, 13}, /* Produce (min may be advertised as 0: KAFKA-18659) */
	    {1, 4, 18}, /* Fetch */
	    {2, 1, 11}, /* ListOffsets */
	    {3, 0, 13}, /* Metadata */
	    {18, 0, 4}, /* ApiVersions */
	    {19, 2, 7}, /* CreateTopics */
	    {20, 1, 6}, /* DeleteTopics */
	};
	h_broker *b = start();
	uint8_t buf[64];
	int n = w_build_request(buf, sizeof(buf), 18, 0, 77, "ranges", NULL, 0);
	int fd = connect_or_fail(b);
	send_or_fail(fd, buf, (size_t)n);
	uint8_t *resp;
	int32_t len, cid, napis;
	int16_t err;
	w_api_range apis[256];
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 1 << 20, h_scaled_ms(5000)), WIRE_OK);
	ck_assert_int_eq(w_parse_api_versions_v0(resp, len, &cid, &err, apis, 256, &napis), 0);
	free(resp);
	close(fd);
	ck_assert_int_eq(cid, 77);
	ck_assert_int_eq(err, 0);
	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
		int found = 0;
		for (int i = 0; i < napis && i < 256; i++) {
			if (apis[i].key != want[w].key)
				continue;
			found = 1;
			int min_ok = apis[i].min == want[w].min ||
				     (want[w].key == 0 && apis[i].min == 0);
			ck_assert_msg(min_ok && apis[i].max == want[w].max,
				      "API %d advertised %d-%d, implemented %d-%d", want[w].key,
				      apis[i].min, apis[i].max, want[w].min, want[w].max);
		}
		ck_assert_msg(found, "API %d not advertised", want[w].key);
	}
	c_stop_broker(b);
}
END_TEST

static uint32_t rng_state;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

static int served_key(int16_t k)
{
	return k == 0 || k == 1 || k == 2 || k == 3 || k == 18 || k == 19 || k == 20;
}

START_TEST(test_random_bytes)
{
	h_broker *b = start();
	static const int16_t keys[] = {0, 1, 2, 3, 18, 19, 20};
	uint8_t buf[4100];
	rng_state = 0x5eed1234u;

	/* Well-framed garbage with an API key nobody serves: closed. */
	for (int round = 0; round < 20; round++) {
		int body = 8 + (int)(rnd() % 200);
		for (int i = 0; i < body; i++)
			buf[4 + i] = (uint8_t)rnd();
		while (served_key(w_get16(buf + 4)))
			w_put16(buf + 4, (int16_t)rnd());
		w_put32(buf, body);
		int fd = connect_or_fail(b);
		send_or_fail(fd, buf, (size_t)body + 4);
		char what[64];
		snprintf(what, sizeof(what), "random frame %d (api key %d)", round,
			 w_get16(buf + 4));
		expect_closed(fd, what);
		c_assert_broker_serving(b);
	}

	/* A served key at a random version with a random body: the broker
	 * may answer or close, but nothing else. */
	for (int round = 0; round < 40; round++) {
		int body = 8 + (int)(rnd() % 400);
		for (int i = 0; i < body; i++)
			buf[4 + i] = (uint8_t)rnd();
		w_put32(buf, body);
		w_put16(buf + 4, keys[rnd() % 7]);
		w_put16(buf + 6, (int16_t)(rnd() % 20));
		int fd = connect_or_fail(b);
		send_or_fail(fd, buf, (size_t)body + 4);
		w_wait_closed(fd, 300, NULL);
		close(fd);
		c_assert_broker_serving(b);
	}

	/* Unframed noise, then the client leaves. */
	for (int round = 0; round < 20; round++) {
		int len = 1 + (int)(rnd() % 4096);
		for (int i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		int fd = connect_or_fail(b);
		w_send_all(fd, buf, (size_t)len, 2000); /* may be cut short by a close */
		w_wait_closed(fd, 100, NULL);
		close(fd);
		c_assert_broker_serving(b);
	}
	c_stop_broker(b);
}
END_TEST

/* Lines of the broker's log that contain needle. */
static int log_lines_with(const h_broker *b, const char *needle)
{
	char *log = h_broker_read_log(b);
	ck_assert_msg(log != NULL, "cannot read the broker log");
	int n = 0;
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(log);
	return n;
}

/* The sum of N over the log's "samsa: N similar lines dropped" lines. */
static long dropped_told(const h_broker *b)
{
	char *log = h_broker_read_log(b);
	ck_assert_msg(log != NULL, "cannot read the broker log");
	long sum = 0;
	const char *needle = " similar lines dropped";
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
		const char *q = p;
		while (q > log && q[-1] >= '0' && q[-1] <= '9')
			q--;
		sum += strtol(q, NULL, 10);
	}
	free(log);
	return sum;
}

START_TEST(test_log_rate_limited)
{
	/* A client that gets itself closed again and again must not flood
	 * the broker's log: at most 10 "closing connection" lines per 10 s
	 * (broker/ratelog.h), however many connections it burns. */
	h_broker *b = start();
	uint8_t buf[16];
	for (int round = 0; round < 60; round++) {
		w_put32(buf, 12);
		w_put16(buf + 4, 32000); /* an API key nobody serves */
		w_put16(buf + 6, 0);
		w_put32(buf + 8, round);
		w_put16(buf + 12, -1); /* null client id */
		w_put16(buf + 14, 0);
		int fd = connect_or_fail(b);
		send_or_fail(fd, buf, sizeof(buf));
		expect_closed(fd, "unknown API key");
	}
	c_assert_broker_serving(b);
	int lines = log_lines_with(b, "closing connection from");
	ck_assert_msg(lines >= 1, "no close was logged at all");
	ck_assert_msg(lines <= 10, "%d close lines for 60 bad connections in one window", lines);
	/* The flood stopped, so no later close line tells how many were
	 * dropped: the broker tells it by itself, at the latest on shutdown. */
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "broker status 0x%x", st);
	long told = dropped_told(b);
	ck_assert_msg(lines + told == 60, "%d close lines and %ld told as dropped, not 60", lines, told);
	h_broker_free(b);
}
END_TEST

static int count_cb(const rd_kafka_message_t *m, void *opaque)
{
	(void)m;
	(*(long *)opaque)++;
	return 0;
}

START_TEST(test_slow_reader)
{
	h_broker *b = start();
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", NULL});
	char errstr[256];
	/* Many partitions: a Metadata response of a few kB. */
	rd_kafka_resp_err_t err = c_create_topic(p, "wide", 100, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	err = c_create_topic(p, "side", 1, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, "side", 1, h_scaled_ms(10000));
	long rss_before = h_broker_status_kb(b, "VmRSS");

	/* The slow client: small receive buffer, Metadata(all topics) v1 in a
	 * loop, never reads. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert(fd >= 0);
	int small = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	uint8_t req[64], body[4];
	w_put32(body, -1); /* all topics */
	int n = w_build_request(req, sizeof(req), 3, 1, 1, "slow", body, sizeof(body));
	long sent = 0, requests = 0;
	int idle = 0;
	long long until = h_now_ms() + 3000;
	uint8_t chunk[64 * 1024];
	for (size_t off = 0; off + (size_t)n <= sizeof(chunk); off += (size_t)n)
		memcpy(chunk + off, req, (size_t)n);
	size_t chunk_len = sizeof(chunk) / (size_t)n * (size_t)n;
	while (requests < 200000 && h_now_ms() < until && idle < 50) {
		long k = w_send_some(fd, chunk, chunk_len);
		ck_assert_msg(k >= 0, "the broker closed the slow client after %ld requests",
			      requests);
		if (k == 0) {
			idle++;
			usleep(10000);
			continue;
		}
		idle = 0;
		sent += k;
		requests = sent / n;
		/* Finish the partial request, if any, so framing stays valid. */
		long rest = (n - sent % n) % n;
		if (rest) {
			if (w_send_all(fd, chunk + (sent % n), (size_t)rest, 2000) != 0)
				break;
			sent += rest;
			requests = sent / n;
		}
	}
	fprintf(stderr, "bad_input: slow client sent %ld Metadata requests without reading\n",
		requests);

	/* Meanwhile a normal client works. */
	c_delivery d[1000];
	for (int i = 0; i < 1000; i++) {
		c_msg m = {.topic = "side", .partition = 0, .value = "payload", .value_len = 7};
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < 1000; i++)
		ck_assert_msg(d[i].done && d[i].err == 0,
			      "produce while a client does not read: %s", rd_kafka_err2str(d[i].err));
	rd_kafka_t *c = c_consumer(b, NULL);
	long got = 0;
	long consumed = c_consume(c, "side", 0, RD_KAFKA_OFFSET_BEGINNING, 1000,
				  h_scaled_ms(20000), count_cb, &got);
	ck_assert_msg(consumed == 1000, "consumed %ld of 1000 while a client does not read",
		      consumed);
	rd_kafka_destroy(c);
	rd_kafka_destroy(p);

	long rss = h_broker_status_kb(b, "VmRSS");
	fprintf(stderr, "bad_input: broker VmRSS %ld kB before, %ld kB with the slow client\n",
		rss_before, rss);
	ck_assert_msg(rss < rss_before + 256 * 1024,
		      "broker memory grew by %ld kB for one client that does not read: "
		      "responses are not bounded",
		      rss - rss_before);
	close(fd);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bad_input");
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
	    {"frame_too_large", test_frame_too_large},
	    {"truncated", test_truncated},
	    {"unknown_api_and_version", test_unknown_api_and_version},
	    {"api_versions_unsupported", test_api_versions_unsupported},
	    {"api_versions_ranges", test_api_versions_ranges},
	    {"random_bytes", test_random_bytes},
	    {"log_rate_limited", test_log_rate_limited},
	    {"slow_reader", test_slow_reader},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return c_run_suite(s);
}
