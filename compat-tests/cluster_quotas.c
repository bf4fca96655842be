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
 * Also KIP-599 and KIP-612 in the cluster: controller_mutation_rate set
 * through the broker that is not the controller is enforced by the
 * controller, which alone answers CreateTopics (THROTTLING_QUOTA_EXCEEDED
 * once the bucket is spent; the other broker says NOT_CONTROLLER), and an
 * ip entity's connection_creation_rate set through one broker makes the
 * other close connections over it, until it is removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define KEY_DESCRIBE 48
#define KEY_ALTER 49
#define KEY_PRODUCE 0
#define KEY_API_VERSIONS 18

/* AlterClientQuotas v1 of <type>/<name>: key = value, or removed. */
static int16_t alter_entity(int fd, const char *type, const char *name, const char *key,
			    double value, int remove)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2); /* one entry */
	kw_uvarint(&w, 2); /* one entity pair */
	kw_cstr(&w, type);
	kw_cstr(&w, name);
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

static int16_t alter_client(int fd, const char *client, const char *key, double value, int remove)
{
	return alter_entity(fd, "client-id", client, key, value, remove);
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

/* CreateTopics v6 of topic (partitions, rf 1) on fd, client "compat";
 * the topic's error, *throttle the answer's throttle_time_ms. */
static int16_t create_v6(int fd, const char *topic, int32_t partitions, int32_t *throttle)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_cstr(&w, topic);
	kw_i32(&w, partitions);
	kw_i16(&w, 1);
	kw_uvarint(&w, 1);
	kw_uvarint(&w, 1);
	kw_tags0(&w);
	kw_i32(&w, 30000);
	kw_u8(&w, 0);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 19, 6, &w, &r);
	*throttle = kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	kr_cstr(&r, NULL, 0, "name");
	int16_t err = kr_i16(&r, "error");
	free(frame);
	return err;
}

/* A new connection to port sends ApiVersions: 1 answered, 0 closed
 * without an answer. */
static int served(int port)
{
	int fd = w_connect(port, 5000);
	ck_assert_int_ge(fd, 0);
	uint8_t req[64];
	int n = w_build_request(req, sizeof(req), 18, 0, 9, "storm", NULL, 0);
	ck_assert_int_eq(w_send_all(fd, req, (size_t)n, 5000), 0);
	uint8_t *body;
	int32_t len;
	int rc = w_recv_frame(fd, &body, &len, 1 << 20, h_scaled_ms(10000));
	if (rc == 0)
		free(body);
	close(fd);
	return rc == 0;
}

START_TEST(test_rates_across_brokers)
{
	hc_cluster c;
	hc_options o = { .brokers = 2 };
	cc_start(&c, &o, false);
	int ctl = hc_controller(&c);
	ck_assert_msg(ctl == 1 || ctl == 2, "controller %d", ctl);
	int other = 3 - ctl;
	int fdc = cc_connect(&c, ctl), fdo = cc_connect(&c, other);

	/* controller_mutation_rate 1/s for client id "compat", set through the
	 * broker that is not the controller */
	ck_assert_int_eq(alter_client(fdo, "compat", "controller_mutation_rate", 1, 0), 0);
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (describe_client(fdc, "compat", "controller_mutation_rate") != 1) {
		ck_assert_msg(h_now_ms() < deadline, "the controller never saw the quota");
		usleep(50 * 1000);
	}
	int32_t t;
	ck_assert_int_eq(create_v6(fdo, "cm-x", 1, &t), 41); /* NOT_CONTROLLER */
	/* bucket of 11: 30 partitions pass and leave 19 to pay back at 1/s */
	ck_assert_int_eq(create_v6(fdc, "cm-a", 30, &t), 0);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(create_v6(fdc, "cm-b", 1, &t), 89);
	cc_log("CreateTopics v6 on the controller after 30 partitions at 1/s: 89, throttle %d ms",
	       (int)t);
	ck_assert_msg(t > 9000 && t <= 19000, "throttle_time_ms %d", (int)t);
	close(fdc); /* muted for the throttle time */
	fdc = cc_connect(&c, ctl);

	/* connection_creation_rate 2/s of 127.0.0.1 set through the
	 * controller: the other broker closes connections over it (after the
	 * first windows' allowance, about 20 with quota.window.num 11) */
	ck_assert_int_eq(alter_entity(fdc, "ip", "127.0.0.1", "connection_creation_rate", 2, 0), 0);
	int port = c.b[other]->port;
	int tries = 0, closed = 0;
	deadline = h_now_ms() + h_scaled_ms(20000);
	while (!closed && h_now_ms() < deadline) {
		tries++;
		closed = !served(port);
	}
	cc_log("broker %d closed connection %d unserved (ip quota 2/s)", other, tries);
	ck_assert_msg(closed, "%d connections, none closed", tries);
	/* removed: served again once the change reached the broker */
	ck_assert_int_eq(alter_entity(fdc, "ip", "127.0.0.1", "connection_creation_rate", 0, 1),
			 0);
	int in_a_row = 0;
	deadline = h_now_ms() + h_scaled_ms(20000);
	while (in_a_row < 30 && h_now_ms() < deadline)
		in_a_row = served(port) ? in_a_row + 1 : 0;
	ck_assert_int_eq(in_a_row, 30);
	close(fdc);
	close(fdo);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_quotas");
	TCase *tc = tcase_create("quotas");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_quota_across_brokers);
	tcase_add_test(tc, test_rates_across_brokers);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
