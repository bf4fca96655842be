/*
 * long_poll.c - Fetch waits in purgatory (DESIGN.md 5): a Fetch with nothing
 * to return is answered at MaxWaitMs, not at once and not never; a Produce
 * to the partition completes a waiting Fetch early; MinBytes above what is
 * there makes the Fetch wait; a waiting Fetch holds up neither other
 * connections nor the broker when its client goes away; acks=0 appends
 * without a response (Kafka protocol guide: Fetch MaxWaitMs/MinBytes,
 * Produce Acks). Raw Fetch v12 / Produce v9 (kmsg.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "lp"

static h_broker *setup(void)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, 1, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, 1, h_scaled_ms(10000));
	rd_kafka_destroy(p);
	return b;
}

static int connect_or_fail(const h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "cannot connect");
	return fd;
}

/* Produce one batch of n records with acks=1; returns its base offset. */
static int64_t produce(int fd, int n, int first)
{
	static k_wbuf batch, body;
	batch.len = 0;
	k_build_batch(&batch, n, first, 1700000000000LL, 0);
	k_produce_body(&body, TOPIC, 0, 1, &batch);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
	int64_t base;
	int16_t err = k_produce_parse(&r, &base);
	free(resp);
	ck_assert_msg(err == 0, "produce: error %d", err);
	return base;
}

START_TEST(test_empty_fetch_waits_max_wait)
{
	h_broker *b = setup();
	int fd = connect_or_fail(b);
	static k_wbuf body;
	k_fetch_body(&body, TOPIC, 0, 0, 1000, 1);
	long long t0 = h_now_ms();
	int32_t cid = k_send(fd, 1, 12, &body);
	k_rbuf r;
	uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(5000));
	long long took = h_now_ms() - t0;
	int64_t hw, len;
	const uint8_t *rec;
	ck_assert_int_eq(k_fetch_parse(&r, &hw, &rec, &len), 0);
	free(resp);
	ck_assert_int_eq(hw, 0);
	ck_assert_int_eq(len, 0);
	fprintf(stderr, "long_poll: empty Fetch with MaxWaitMs=1000 answered after %lld ms\n", took);
	ck_assert_msg(took >= 900, "empty Fetch with MaxWaitMs=1000 answered after %lld ms",
		      took);
	ck_assert_msg(took <= h_scaled_ms(2500),
		      "empty Fetch with MaxWaitMs=1000 answered after %lld ms", took);
	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_produce_completes_waiting_fetch)
{
	h_broker *b = setup();
	int fetcher = connect_or_fail(b), producer = connect_or_fail(b);
	static k_wbuf body;
	k_fetch_body(&body, TOPIC, 0, 0, 10000, 1);
	int32_t cid = k_send(fetcher, 1, 12, &body);
	usleep(300 * 1000); /* let it park */

	/* The waiting Fetch holds up no one else. */
	long long t0 = h_now_ms();
	ck_assert_int_eq(w_api_versions_v0(producer, 1, h_scaled_ms(2000)), 0);
	long long apiv = h_now_ms() - t0;
	fprintf(stderr, "long_poll: ApiVersions answered in %lld ms while a Fetch waits\n", apiv);
	ck_assert_msg(apiv < h_scaled_ms(500), "ApiVersions took %lld ms while a Fetch waits",
		      apiv);

	t0 = h_now_ms();
	ck_assert_int_eq(produce(producer, 3, 0), 0);
	k_rbuf r;
	uint8_t *resp = k_recv(fetcher, cid, &r, h_scaled_ms(5000));
	long long took = h_now_ms() - t0;
	int64_t hw, len;
	const uint8_t *rec;
	ck_assert_int_eq(k_fetch_parse(&r, &hw, &rec, &len), 0);
	ck_assert_int_eq(hw, 3);
	ck_assert_msg(len > 61 && rec, "the completed Fetch carries %lld bytes of records",
		      (long long)len);
	free(resp);
	fprintf(stderr, "long_poll: a waiting Fetch answered %lld ms after a produce\n", took);
	ck_assert_msg(took < h_scaled_ms(1000),
		      "a waiting Fetch (MaxWaitMs=10000) was answered %lld ms after a produce",
		      took);
	close(fetcher);
	close(producer);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_min_bytes)
{
	h_broker *b = setup();
	int fd = connect_or_fail(b);
	produce(fd, 2, 0);
	static k_wbuf body;

	/* Data there and MinBytes=1: at once. */
	k_fetch_body(&body, TOPIC, 0, 0, 5000, 1);
	long long t0 = h_now_ms();
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
	long long took = h_now_ms() - t0;
	int64_t hw, len;
	const uint8_t *rec;
	ck_assert_int_eq(k_fetch_parse(&r, &hw, &rec, &len), 0);
	free(resp);
	ck_assert_msg(len > 0, "no records");
	fprintf(stderr, "long_poll: Fetch with data and MinBytes=1 answered in %lld ms\n", took);
	ck_assert_msg(took < h_scaled_ms(1000), "Fetch with data and MinBytes=1 took %lld ms",
		      took);

	/* MinBytes above what there is: wait MaxWaitMs, then return it. */
	k_fetch_body(&body, TOPIC, 0, 0, 1000, 1 << 20);
	t0 = h_now_ms();
	resp = k_roundtrip(fd, 1, 12, &body, &r);
	took = h_now_ms() - t0;
	ck_assert_int_eq(k_fetch_parse(&r, &hw, &rec, &len), 0);
	free(resp);
	ck_assert_msg(len > 0, "no records after the wait");
	fprintf(stderr, "long_poll: Fetch with MinBytes=1MiB and MaxWaitMs=1000 answered after "
			"%lld ms\n", took);
	ck_assert_msg(took >= 900 && took <= h_scaled_ms(2500),
		      "Fetch with MinBytes=1MiB over %lld bytes answered after %lld ms, expected "
		      "about MaxWaitMs=1000",
		      (long long)len, took);
	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_client_leaves_while_waiting)
{
	h_broker *b = setup();
	static k_wbuf body;
	for (int i = 0; i < 20; i++) {
		int fd = connect_or_fail(b);
		k_fetch_body(&body, TOPIC, 0, 0, 1000 + 50 * i, 1);
		k_send(fd, 1, 12, &body);
		if (i % 2)
			usleep(20 * 1000);
		close(fd);
	}
	/* Past every MaxWaitMs, and a produce that would complete them. */
	int fd = connect_or_fail(b);
	produce(fd, 1, 0);
	usleep(2200 * 1000);
	produce(fd, 1, 1);
	close(fd);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_acks_zero)
{
	h_broker *b = setup();
	int fd = connect_or_fail(b);
	static k_wbuf batch, body;
	k_build_batch(&batch, 4, 0, 1700000000000LL, 0);
	k_produce_body(&body, TOPIC, 0, 0, &batch);
	k_send(fd, 0, 9, &body);
	/* The next response on this connection is the ApiVersions one: no
	 * response was sent for acks=0. */
	ck_assert_msg(w_api_versions_v0(fd, 4242, h_scaled_ms(5000)) == 0,
		      "after an acks=0 Produce the next response is not the ApiVersions one");
	k_fetch_body(&body, TOPIC, 0, 0, 500, 1);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
	int64_t hw, len;
	const uint8_t *rec;
	ck_assert_int_eq(k_fetch_parse(&r, &hw, &rec, &len), 0);
	free(resp);
	ck_assert_msg(hw == 4, "acks=0 records not appended: high watermark %lld", (long long)hw);
	close(fd);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("long_poll");
	TCase *tc = tcase_create("purgatory");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_empty_fetch_waits_max_wait);
	tcase_add_test(tc, test_produce_completes_waiting_fetch);
	tcase_add_test(tc, test_min_bytes);
	tcase_add_test(tc, test_client_leaves_while_waiting);
	tcase_add_test(tc, test_acks_zero);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
