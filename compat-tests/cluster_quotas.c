/*
 * cluster_quotas.c - client quotas in a cluster of two brokers (issue 16):
 * a quota set with AlterClientQuotas through broker 1 is where Kafka's
 * ZooKeeper mode keeps it (/config/clients/<id>, {"version":1,...}, and a
 * v2 change notice naming clients/<id>), DescribeClientQuotas on broker 2
 * shows it once broker 2 read the notice, and broker 2 enforces it: a
 * Produce over the rate is answered with a throttle time as Kafka
 * computes it, and the connection is muted for that long (KIP-219: the
 * next request on it is answered only after the throttle). Removing the
 * quota removes the znode and, on broker 2, the throttling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define KEY_DESCRIBE 48
#define KEY_ALTER 49
#define KEY_PRODUCE 0
#define KEY_API_VERSIONS 18

/* AlterClientQuotas v1 of clients/<client>: key = value, or removed. */
static int16_t alter_client(int fd, const char *client, const char *key, double value, int remove)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2); /* one entry */
	kw_uvarint(&w, 2); /* one entity pair */
	kw_cstr(&w, "client-id");
	kw_cstr(&w, client);
	kw_tags0(&w);
	kw_uvarint(&w, 2); /* one op */
	kw_cstr(&w, key);
	int64_t bits;
	memcpy(&bits, &value, sizeof(bits));
	kw_i64(&w, bits);
	kw_u8(&w, (uint8_t)remove);
	kw_tags0(&w);
	kw_tags0(&w);
	kw_u8(&w, 0); /* validate_only */
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, KEY_ALTER, 1, &w, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "entries"), 1);
	int16_t err = kr_i16(&r, "error");
	free(frame);
	return err;
}

/* The value of key for clients/<client> in DescribeClientQuotas v1 (EXACT
 * client-id filter); -1 when it has none. */
static double describe_client(int fd, const char *client, const char *key)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_cstr(&w, "client-id");
	kw_u8(&w, 0); /* EXACT */
	kw_cstr(&w, client);
	kw_tags0(&w);
	kw_u8(&w, 1); /* strict */
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, KEY_DESCRIBE, 1, &w, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_i16(&r, "error"), 0);
	kr_cstr(&r, NULL, 0, "msg");
	int64_t n = kr_carray(&r, "entries");
	double found = -1;
	for (int64_t i = 0; i < n; i++) {
		int64_t ne = kr_carray(&r, "entity");
		for (int64_t k = 0; k < ne; k++) {
			kr_cstr(&r, NULL, 0, "type");
			kr_cstr(&r, NULL, 0, "name");
			kr_tags(&r, "entity tags");
		}
		int64_t nv = kr_carray(&r, "values");
		for (int64_t k = 0; k < nv; k++) {
			char name[64];
			kr_cstr(&r, name, sizeof(name), "key");
			int64_t bits = kr_i64(&r, "value");
			double v;
			memcpy(&v, &bits, sizeof(v));
			if (strcmp(name, key) == 0)
				found = v;
			kr_tags(&r, "value tags");
		}
		kr_tags(&r, "entry tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "DescribeClientQuotas");
	free(frame);
	return found;
}

/* Produce v9 of a batch of n records to topic/0 on fd (client id
 * "compat", kmsg.h); returns the response's throttle_time_ms, the last
 * field before the (empty) tagged fields. */
static int32_t produce_throttle(int fd, const char *topic, int n)
{
	k_wbuf batch = { .len = 0 }, body = { .len = 0 };
	k_build_batch(&batch, n, 0, 1700000000000LL, 0);
	k_produce_body(&body, topic, 0, 1, &batch);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, KEY_PRODUCE, 9, &body, &r);
	ck_assert_int_ge(r.len - r.pos, 5);
	ck_assert_int_eq(r.b[r.len - 1], 0); /* no tagged fields */
	int32_t t = w_get32(r.b + r.len - 5);
	free(frame);
	return t;
}

START_TEST(test_quota_across_brokers)
{
	hc_cluster c;
	hc_options o = { .brokers = 2 };
	cc_start(&c, &o, false);
	cc_create_topic(&c, "cq", 1, 2, NULL, NULL);
	int fd1 = cc_connect(&c, 1), fd2 = cc_connect(&c, 2);

	/* a Produce of 8 small records is about 280 bytes; at 23 B/s (taken
	 * over at least 10 s) it is 20 % over the rate: a throttle of about
	 * 2 s (QuotaUtils.throttleTime) */
	const double rate = 23;
	ck_assert_int_eq(alter_client(fd1, "compat", "producer_byte_rate", rate, 0), 0);
	char *d;
	int len;
	ck_assert_int_eq(hc_zk_get(&c, "/config/clients/compat", &d, &len, NULL), 0);
	ck_assert_str_eq(d, "{\"version\":1,\"config\":{\"producer_byte_rate\":\"23\"}}");
	free(d);
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (describe_client(fd2, "compat", "producer_byte_rate") != rate) {
		ck_assert_msg(h_now_ms() < deadline, "broker 2 never saw the quota");
		usleep(50 * 1000);
	}
	/* broker 2 enforces it: throttle time in the answer, then the mute */
	int32_t t = produce_throttle(fd2, "cq", 8);
	cc_log("produce of 8 records over %.0f B/s: throttle_time_ms %d", rate, (int)t);
	ck_assert_msg(t >= 500 && t <= 10000, "throttle_time_ms %d", (int)t);
	long long t0 = h_now_ms();
	ck_assert_int_eq(w_api_versions_v0(fd2, 77, h_scaled_ms(t + 10000)), 0);
	long long waited = h_now_ms() - t0;
	cc_log("the next request waited %lld ms", waited);
	ck_assert_msg(waited >= t - 100, "answered after %lld ms, throttled for %d", waited, (int)t);
	/* the other broker's connection of the same client id: no bytes yet
	 * there (each broker has its own rate, as in Kafka) */
	ck_assert_int_eq(produce_throttle(fd1, "cq", 1), 0);

	/* removed: no znode, and broker 2 stops throttling */
	ck_assert_int_eq(alter_client(fd2, "compat", "producer_byte_rate", 0, 1), 0);
	ck_assert_int_eq(hc_zk_exists(&c, "/config/clients/compat", NULL), CTL_ZK_NONODE);
	deadline = h_now_ms() + h_scaled_ms(15000);
	while (describe_client(fd1, "compat", "producer_byte_rate") >= 0) {
		ck_assert_msg(h_now_ms() < deadline, "broker 1 kept the quota");
		usleep(50 * 1000);
	}
	ck_assert_int_eq(produce_throttle(fd2, "cq", 8), 0);
	close(fd1);
	close(fd2);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_quotas");
	TCase *tc = tcase_create("quotas");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_quota_across_brokers);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
