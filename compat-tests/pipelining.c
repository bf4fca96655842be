/*
 * pipelining.c - many requests in flight on one connection, as librdkafka
 * sends them (max.in.flight): the broker answers every one, in order
 * (Kafka protocol guide: responses on a connection come in request order),
 * without waiting for the client to send more. Raw sockets, so nothing but
 * the broker can unblock a stall: the client writes all its requests in
 * large writes and then only reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/wire.h"

/* Send nreq copies of a request (correlation ids 0..nreq-1) as fast as the
 * socket takes them while reading the responses; check each response's
 * correlation id is the next one. */
static void pipeline(h_broker *b, int16_t key, int16_t version, const void *body,
		     size_t body_len, int nreq)
{
	uint8_t one[256];
	int n = w_build_request(one, sizeof(one), key, version, 0, "pipeline", body, body_len);
	ck_assert(n > 0);
	size_t total = (size_t)n * (size_t)nreq;
	uint8_t *out = malloc(total);
	ck_assert(out != NULL);
	for (int i = 0; i < nreq; i++) {
		memcpy(out + (size_t)i * (size_t)n, one, (size_t)n);
		w_put32(out + (size_t)i * (size_t)n + 8, i); /* correlation id */
	}

	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	size_t sent = 0;
	int next = 0;
	size_t in_len = 0, in_cap = 1 << 20;
	uint8_t *in = malloc(in_cap);
	ck_assert(in != NULL);
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	long long last_progress = h_now_ms();
	while (next < nreq) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0)};
		int r = poll(&pfd, 1, 200);
		ck_assert(r >= 0 || errno == EINTR);
		if (sent < total && (pfd.revents & POLLOUT)) {
			long k = w_send_some(fd, out + sent, total - sent);
			ck_assert_msg(k >= 0, "broker closed the connection after %d responses", next);
			sent += (size_t)k;
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = recv(fd, in + in_len, in_cap - in_len, MSG_DONTWAIT);
			ck_assert_msg(k != 0, "broker closed the connection after %d responses", next);
			if (k > 0) {
				in_len += (size_t)k;
				last_progress = h_now_ms();
			}
			size_t pos = 0;
			while (in_len - pos >= 8) {
				int32_t size = w_get32(in + pos);
				ck_assert_msg(size >= 4 && (size_t)size < in_cap / 2,
					      "bad response frame size %d", size);
				if (in_len - pos < 4 + (size_t)size)
					break;
				int32_t cid = w_get32(in + pos + 4);
				ck_assert_msg(cid == next,
					      "response with correlation id %d where %d was due "
					      "(out of order or lost)",
					      cid, next);
				next++;
				pos += 4 + (size_t)size;
			}
			memmove(in, in + pos, in_len - pos);
			in_len -= pos;
		}
		ck_assert_msg(h_now_ms() < deadline,
			      "%d of %d pipelined responses after %d ms (%zu of %zu request bytes "
			      "taken; last response %lld ms ago): the broker stopped answering",
			      next, nreq, h_scaled_ms(15000), sent, total,
			      h_now_ms() - last_progress);
	}
	free(in);
	free(out);
	close(fd);
}

START_TEST(test_pipelined_api_versions)
{
	h_broker *b = c_start_broker(NULL);
	long long t0 = h_now_ms();
	pipeline(b, 18, 0, NULL, 0, 20000);
	fprintf(stderr, "pipelining: 20000 ApiVersions v0 in %lld ms\n", h_now_ms() - t0);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_pipelined_metadata)
{
	h_broker *b = c_start_broker(NULL);
	uint8_t body[4];
	w_put32(body, -1); /* all topics */
	long long t0 = h_now_ms();
	pipeline(b, 3, 1, body, sizeof(body), 20000);
	fprintf(stderr, "pipelining: 20000 Metadata v1 in %lld ms\n", h_now_ms() - t0);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

/* The same through librdkafka: with many produce requests in flight no
 * delivery waits on a stalled connection. A stall shows as deliveries
 * taking about a second or more (the client's next unrelated request wakes
 * the broker); healthy ones take milliseconds. */
#define ROUND 5000
static int64_t send_ms[ROUND];
static int64_t worst_ms;
static void lat_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	long i = (long)(intptr_t)m->_private;
	int64_t l = h_now_ms() - send_ms[i];
	if (l > worst_ms)
		worst_ms = l;
}

START_TEST(test_produce_in_flight)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *admin = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(admin, "inflight", 1, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(admin, "inflight", 1, h_scaled_ms(10000));
	rd_kafka_destroy(admin);

	rd_kafka_conf_t *conf = c_conf(b);
	c_set(conf, "acks", "1");
	c_set(conf, "linger.ms", "1");
	c_set(conf, "batch.num.messages", "100");
	rd_kafka_conf_set_dr_msg_cb(conf, lat_dr);
	rd_kafka_t *p = c_new(RD_KAFKA_PRODUCER, conf);
	/* Teach the producer the leader first: otherwise the first records
	 * may wait for librdkafka's 1 s topic scan, a client-side delay. */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(p, "inflight", NULL);
	const struct rd_kafka_metadata *md;
	ck_assert_int_eq(rd_kafka_metadata(p, 0, rkt, &md, h_scaled_ms(10000)), 0);
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	char val[100];
	memset(val, 'v', sizeof(val));
	for (int round = 0; round < 20; round++) {
		worst_ms = 0;
		for (long i = 0; i < ROUND; i++) {
			send_ms[i] = h_now_ms();
			rd_kafka_resp_err_t err;
			while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC("inflight"),
							RD_KAFKA_V_PARTITION(0),
							RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
							RD_KAFKA_V_VALUE(val, sizeof(val)),
							RD_KAFKA_V_OPAQUE((void *)(intptr_t)i),
							RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				rd_kafka_poll(p, 1);
			ck_assert_msg(err == 0, "produce: %s", rd_kafka_err2str(err));
			if (i % 100 == 0)
				rd_kafka_poll(p, 0);
		}
		c_flush(p, h_scaled_ms(30000));
		fprintf(stderr, "pipelining: round %d: slowest delivery %lld ms\n", round,
			(long long)worst_ms);
		ck_assert_msg(worst_ms < h_scaled_ms(900),
			      "a delivery took %lld ms with requests in flight: the connection "
			      "stalled",
			      (long long)worst_ms);
	}
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pipelining");
	TCase *tc = tcase_create("raw");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pipelined_api_versions);
	tcase_add_test(tc, test_pipelined_metadata);
	suite_add_tcase(s, tc);
	tc = tcase_create("librdkafka");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_produce_in_flight);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
