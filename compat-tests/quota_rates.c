/*
 * quota_rates.c - the quotas of KIP-599 and KIP-612 on a real broker:
 *  - controller_mutation_rate (a client id's quota, set with
 *    AlterClientQuotas): CreateTopics v6, CreatePartitions v3 and
 *    DeleteTopics v5 (strict) pass a request while the token bucket is not
 *    below zero, then refuse with THROTTLING_QUOTA_EXCEEDED (89) and the
 *    throttle time, leaving the topic as it was; v5 / v2 / v4 (permissive)
 *    do everything, counted, with the throttle time in the answer;
 *  - connection_creation_rate of an ip entity, set while the broker runs:
 *    connections beyond the rate are closed unserved, those within it
 *    served; the accepted rate is measured (FIGURE) and held to Kafka's
 *    Rate bounds; removed, every connection is served; <default> applies;
 *  - listener.name.plaintext.max.connection.creation.rate: a burst of
 *    connections is accepted slowly, none closed (FIGURE);
 *  - max.connection.creation.rate set at runtime (IncrementalAlterConfigs,
 *    the cluster-wide default): the same; a listener's rate of 0 refused.
 * Raw requests with a client id of the test's choosing (kmsg.h's k_send
 * always says "compat").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define KEY_CREATE_TOPICS 19
#define KEY_DELETE_TOPICS 20
#define KEY_CREATE_PARTITIONS 37
#define KEY_ALTER_QUOTAS 49

/* Send a flexible request (header v2) as client and read its answer
 * (header v1); r is set to the body; returns the frame to free. */
static uint8_t *roundtrip(int fd, const char *client, int16_t key, int16_t ver,
			  const k_wbuf *body, k_rbuf *r)
{
	static int32_t cid = 1000;
	k_wbuf req = { .len = 0 };
	kw_i32(&req, 0);
	kw_i16(&req, key);
	kw_i16(&req, ver);
	kw_i32(&req, ++cid);
	kw_i16(&req, (int16_t)strlen(client));
	kw_raw(&req, client, strlen(client));
	kw_tags0(&req);
	kw_raw(&req, body->b, body->len);
	w_put32(req.b, (int32_t)(req.len - 4));
	ck_assert_int_eq(w_send_all(fd, req.b, req.len, h_scaled_ms(5000)), 0);
	uint8_t *resp;
	int32_t len;
	ck_assert_int_eq(w_recv_frame(fd, &resp, &len, 16 << 20, h_scaled_ms(60000)), 0);
	*r = (k_rbuf){ .b = resp, .len = (size_t)len, .pos = 0 };
	ck_assert_int_eq(kr_i32(r, "correlation id"), cid);
	kr_tags(r, "header tags");
	return resp;
}

/* AlterClientQuotas v1: set (or remove, value < 0) key of one entity
 * (type, name; name NULL: <default>). */
static void set_quota_on(int fd, const char *type, const char *name, const char *key, double v)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2); /* one entry */
	kw_uvarint(&w, 2); /* one component */
	kw_cstr(&w, type);
	kw_cstr(&w, name);
	kw_tags0(&w);
	kw_uvarint(&w, 2); /* one op */
	kw_cstr(&w, key);
	int64_t bits;
	double d = v < 0 ? 0 : v;
	memcpy(&bits, &d, sizeof(bits));
	kw_i64(&w, bits);
	kw_u8(&w, v < 0);
	kw_tags0(&w);
	kw_tags0(&w);
	kw_u8(&w, 0); /* validate_only */
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *f = roundtrip(fd, "admin", KEY_ALTER_QUOTAS, 1, &w, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "entries"), 1);
	int16_t err = kr_i16(&r, "error");
	char msg[256];
	kr_cstr(&r, msg, sizeof(msg), "message");
	ck_assert_msg(err == 0, "AlterClientQuotas %s: %d %s", key, err, msg);
	free(f);
}

static void set_quota(int port, const char *type, const char *name, const char *key, double v)
{
	int fd = w_connect(port, 5000);
	ck_assert_int_ge(fd, 0);
	set_quota_on(fd, type, name, key, v);
	close(fd);
}

typedef struct outcome {
	int32_t throttle;
	int16_t error;
} outcome;

/* CreateTopics v5 (permissive) or v6 (strict): one topic, rf 1. */
static outcome create_topic(int fd, const char *client, int16_t ver, const char *topic,
			    int32_t partitions)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_cstr(&w, topic);
	kw_i32(&w, partitions);
	kw_i16(&w, 1);
	kw_uvarint(&w, 1); /* no assignments */
	kw_uvarint(&w, 1); /* no configs */
	kw_tags0(&w);
	kw_i32(&w, 30000);
	kw_u8(&w, 0);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *f = roundtrip(fd, client, KEY_CREATE_TOPICS, ver, &w, &r);
	outcome o;
	o.throttle = kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	kr_cstr(&r, NULL, 0, "name");
	o.error = kr_i16(&r, "error");
	free(f);
	return o;
}

/* CreatePartitions v2 (permissive) or v3 (strict): topic to count. */
static outcome grow_topic(int fd, const char *client, int16_t ver, const char *topic,
			  int32_t count)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_cstr(&w, topic);
	kw_i32(&w, count);
	kw_uvarint(&w, 0); /* assignments null */
	kw_tags0(&w);
	kw_i32(&w, 30000);
	kw_u8(&w, 0);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *f = roundtrip(fd, client, KEY_CREATE_PARTITIONS, ver, &w, &r);
	outcome o;
	o.throttle = kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "results"), 1);
	kr_cstr(&r, NULL, 0, "name");
	o.error = kr_i16(&r, "error");
	free(f);
	return o;
}

/* DeleteTopics v4 (permissive) or v5 (strict): one topic by name. */
static outcome delete_topic(int fd, const char *client, int16_t ver, const char *topic)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_cstr(&w, topic);
	kw_i32(&w, 30000);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *f = roundtrip(fd, client, KEY_DELETE_TOPICS, ver, &w, &r);
	outcome o;
	o.throttle = kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "responses"), 1);
	kr_cstr(&r, NULL, 0, "name");
	o.error = kr_i16(&r, "error");
	free(f);
	return o;
}

static int conn(const h_broker *b)
{
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/*
 * controller_mutation_rate 1 partition/s: the bucket holds 11 tokens
 * (controller.quota.window.num 11 x 1 s x 1); 30 partitions leave a debt
 * of 19, paid back at 1 a second, so a refusal right after says about
 * 19,000 ms. The bounds allow up to 10 s between the two requests on a
 * slow machine (the debt shrinks by 1,000 ms a second), never more than
 * 19,000. Each strict refusal or permissive throttle mutes its connection
 * (KIP-219), so the next request of the same client goes on a new one.
 */
#define DEBT_MS 19000
#define SLACK_MS 10000

START_TEST(test_controller_mutation_rate)
{
	h_broker *b = c_start_broker(NULL);
	set_quota(b->port, "client-id", "strict", "controller_mutation_rate", 1);
	set_quota(b->port, "client-id", "perm", "controller_mutation_rate", 1);
	set_quota(b->port, "client-id", "cp", "controller_mutation_rate", 1);
	set_quota(b->port, "client-id", "cp-old", "controller_mutation_rate", 1);
	set_quota(b->port, "client-id", "del", "controller_mutation_rate", 1);
	set_quota(b->port, "client-id", "del-old", "controller_mutation_rate", 1);

	/* CreateTopics v6: within the bucket, unthrottled; then 89 */
	int fd = conn(b);
	outcome o = create_topic(fd, "strict", 6, "mq-a", 30);
	ck_assert_int_eq(o.error, 0);
	ck_assert_int_eq(o.throttle, 0);
	o = create_topic(fd, "strict", 6, "mq-b", 1);
	printf("FIGURE mutation quota: CreateTopics v6 refused with %d, throttle_time_ms %d "
	       "(debt %d ms)\n", o.error, o.throttle, DEBT_MS);
	ck_assert_int_eq(o.error, 89);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	/* mq-b was not created: a client without a quota creates it now */
	fd = conn(b);
	o = create_topic(fd, "free", 6, "mq-b", 1);
	ck_assert_int_eq(o.error, 0);
	ck_assert_int_eq(o.throttle, 0);
	close(fd);

	/* CreateTopics v5: permissive, both created, both throttled */
	fd = conn(b);
	o = create_topic(fd, "perm", 5, "mp-a", 30);
	printf("FIGURE mutation quota: CreateTopics v5 of 30 partitions done (%d), "
	       "throttle_time_ms %d\n", o.error, o.throttle);
	ck_assert_int_eq(o.error, 0);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	fd = conn(b);
	o = create_topic(fd, "perm", 5, "mp-b", 1);
	ck_assert_int_eq(o.error, 0);
	/* counted: the debt grew by one partition (+1,000 ms) */
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS + 1000,
		      "throttle %d", o.throttle);
	close(fd);

	/* CreatePartitions v3 then v2 */
	fd = conn(b);
	o = grow_topic(fd, "cp", 3, "mq-b", 31); /* +30 */
	ck_assert_int_eq(o.error, 0);
	ck_assert_int_eq(o.throttle, 0);
	o = grow_topic(fd, "cp", 3, "mq-b", 32);
	ck_assert_int_eq(o.error, 89);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	fd = conn(b);
	o = grow_topic(fd, "cp-old", 2, "mp-b", 31); /* +30 */
	ck_assert_int_eq(o.error, 0);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	/* the refused growth did not happen: mq-b still has 31 */
	fd = conn(b);
	o = grow_topic(fd, "free", 3, "mq-b", 31);
	ck_assert_int_eq(o.error, 37); /* INVALID_PARTITIONS: 31 is no increase */
	o = grow_topic(fd, "free", 3, "mq-b", 32);
	ck_assert_int_eq(o.error, 0);
	close(fd);

	/* DeleteTopics v5 then v4 (mq-a and mp-a have 30 partitions) */
	fd = conn(b);
	o = delete_topic(fd, "del", 5, "mq-a");
	ck_assert_int_eq(o.error, 0);
	ck_assert_int_eq(o.throttle, 0);
	o = delete_topic(fd, "del", 5, "mp-a");
	ck_assert_int_eq(o.error, 89);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	fd = conn(b);
	o = delete_topic(fd, "del-old", 4, "mp-a"); /* still there: refused above */
	ck_assert_int_eq(o.error, 0);
	ck_assert_msg(o.throttle > DEBT_MS - SLACK_MS && o.throttle <= DEBT_MS, "throttle %d",
		      o.throttle);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* ---- connection creation rates ---- */

typedef struct storm {
	int attempts, served, closed, pending;
	double secs; /* from the first attempt to the last */
	long long last_served_ms; /* from the first attempt */
} storm;

/*
 * Open a connection every gap_ms (at most n) for up to run_ms, each
 * sending ApiVersions v0; then wait up to settle_ms for every outcome: an
 * answer (served) or the connection closed without one (closed).
 */
static storm connect_storm(int port, int n, int gap_ms, long long run_ms, long long settle_ms)
{
	storm s = { 0 };
	int *fds = calloc((size_t)n, sizeof(int));
	ck_assert_ptr_nonnull(fds);
	long long t0 = h_now_ms(), next = t0, last_attempt = t0;
	int open = 0;
	uint8_t req[64];
	int reqlen = w_build_request(req, sizeof(req), 18, 0, 7, "storm", NULL, 0);
	ck_assert_int_gt(reqlen, 0);
	for (;;) {
		long long now = h_now_ms();
		if (s.attempts < n && now - t0 < run_ms && now >= next) {
			int fd = w_connect(port, 5000);
			ck_assert_int_ge(fd, 0);
			/* the kernel completes the handshake from the backlog:
			 * the request waits there until the broker accepts */
			ck_assert_int_eq(w_send_all(fd, req, (size_t)reqlen, 5000), 0);
			fds[s.attempts++] = fd;
			open++;
			last_attempt = now;
			next += gap_ms;
		}
		bool attempting = s.attempts < n && now - t0 < run_ms;
		if (!attempting && (open == 0 || now - last_attempt > settle_ms))
			break;
		struct pollfd p[1024];
		int idx[1024], np = 0;
		for (int i = 0; i < s.attempts && np < 1024; i++)
			if (fds[i] >= 0) {
				p[np] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
				idx[np++] = i;
			}
		int wait = attempting ? (int)(next > now ? next - now : 0) : 50;
		if (poll(p, (nfds_t)np, wait) <= 0)
			continue;
		for (int k = 0; k < np; k++) {
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t got = recv(p[k].fd, buf, sizeof(buf), 0);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got > 0) {
				s.served++;
				s.last_served_ms = h_now_ms() - t0;
			} else {
				s.closed++;
			}
			close(p[k].fd);
			fds[idx[k]] = -1;
			open--;
		}
	}
	s.pending = open;
	for (int i = 0; i < s.attempts; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	s.secs = (double)(last_attempt - t0) / 1000.0;
	free(fds);
	return s;
}

/* Kafka's Rate over quota.window.num 2 samples of 1 s: the rate is taken
 * over at least 1 s and at most 2 s, so in a run of T s an IP at most gets
 * Q x (T + 2) connections (plus the one that tips it over), and at least
 * Q x T / 2 when it tries far faster than Q (a margin of half for a slow
 * machine). */
static const char *const window2[] = { "quota.window.num=2", "quota.window.size.seconds=1",
				       NULL };

START_TEST(test_ip_connection_rate)
{
	h_broker *b = c_start_broker(window2);
	const double Q = 10;
	/* the admin connection comes from 127.0.0.1 too: opened first, kept */
	int admin = w_connect(b->port, 5000);
	ck_assert_int_ge(admin, 0);
	/* set while the broker runs (no restart) */
	set_quota_on(admin, "ip", "127.0.0.1", "connection_creation_rate", Q);
	storm s = connect_storm(b->port, 1000, 20, 4000, h_scaled_ms(5000));
	double rate = s.served / (s.secs > 1 ? s.secs : 1);
	printf("FIGURE ip connection rate: quota %.0f/s, %d attempts in %.2f s at 50/s: %d served "
	       "(%.1f/s), %d closed unserved, %d unresolved\n",
	       Q, s.attempts, s.secs, s.served, rate, s.closed, s.pending);
	ck_assert_int_eq(s.pending, 0);
	ck_assert_msg(s.served <= Q * (s.secs + 2) + 1, "served %d", s.served);
	ck_assert_msg(s.served >= Q * s.secs / 2, "served %d", s.served);
	ck_assert_msg(s.closed >= s.attempts - (int)(Q * (s.secs + 2)) - 1, "closed %d",
		      s.closed);
	ck_assert_int_gt(s.closed, 0);

	/* removed: every connection served again */
	set_quota_on(admin, "ip", "127.0.0.1", "connection_creation_rate", -1);
	s = connect_storm(b->port, 40, 0, 60000, h_scaled_ms(5000));
	ck_assert_int_eq(s.served, 40);
	ck_assert_int_eq(s.closed, 0);

	/* <default> applies to 127.0.0.1 now */
	set_quota_on(admin, "ip", NULL, "connection_creation_rate", 5);
	s = connect_storm(b->port, 40, 0, 60000, h_scaled_ms(5000));
	printf("FIGURE ip connection rate: <default> 5/s, a burst of 40: %d served, %d closed\n",
	       s.served, s.closed);
	ck_assert_int_eq(s.pending, 0);
	ck_assert_msg(s.served <= 5 * (s.secs + 2) + 1, "served %d", s.served);
	ck_assert_int_ge(s.closed, 40 - (int)(5 * (s.secs + 2)) - 1);
	set_quota_on(admin, "ip", NULL, "connection_creation_rate", -1);
	close(admin);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_listener_connection_rate)
{
	static const char *const o[] = { "quota.window.num=2", "quota.window.size.seconds=1",
					 "listener.name.plaintext.max.connection.creation.rate=10",
					 NULL };
	h_broker *b = c_start_broker(o);
	/* 40 at once: all accepted, none closed, but no faster than the rate:
	 * by T s at most 10 x (T + 2) + 1, so the 40th not before ~1.9 s */
	storm s = connect_storm(b->port, 40, 0, 60000, h_scaled_ms(20000));
	printf("FIGURE listener connection rate: 10/s, a burst of 40: %d served, %d closed, the "
	       "last served after %lld ms\n", s.served, s.closed, s.last_served_ms);
	ck_assert_int_eq(s.served, 40);
	ck_assert_int_eq(s.closed, 0);
	ck_assert_msg(s.last_served_ms >= 1500, "last served after %lld ms", s.last_served_ms);
	c_stop_broker(b);
}
END_TEST

/* IncrementalAlterConfigs v1 of the brokers' default (""): SET key value;
 * the error code. */
static int16_t set_broker_default(int port, const char *key, const char *value)
{
	int fd = w_connect(port, 5000);
	ck_assert_int_ge(fd, 0);
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 2);
	kw_u8(&w, 4); /* BROKER */
	kw_cstr(&w, "");
	kw_uvarint(&w, 2);
	kw_cstr(&w, key);
	kw_u8(&w, 0); /* SET */
	kw_cstr(&w, value);
	kw_tags0(&w);
	kw_tags0(&w);
	kw_u8(&w, 0);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *f = roundtrip(fd, "admin", 44, 1, &w, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "responses"), 1);
	int16_t err = kr_i16(&r, "error");
	free(f);
	close(fd);
	return err;
}

START_TEST(test_dynamic_broker_rate)
{
	h_broker *b = c_start_broker(window2);
	storm s = connect_storm(b->port, 40, 0, 60000, h_scaled_ms(20000));
	printf("FIGURE broker connection rate: none, a burst of 40: %d served, the last after "
	       "%lld ms\n", s.served, s.last_served_ms);
	ck_assert_int_eq(s.served, 40);
	ck_assert_int_eq(set_broker_default(b->port, "max.connection.creation.rate", "10"), 0);
	/* applied on the loop right after the answer: give it a moment, then
	 * wait out the window the burst above filled */
	usleep(2500 * 1000);
	s = connect_storm(b->port, 40, 0, 60000, h_scaled_ms(20000));
	printf("FIGURE broker connection rate: 10/s set at runtime, a burst of 40: %d served, "
	       "%d closed, the last after %lld ms\n", s.served, s.closed, s.last_served_ms);
	ck_assert_int_eq(s.served, 40);
	ck_assert_int_eq(s.closed, 0);
	ck_assert_msg(s.last_served_ms >= 1500, "last served after %lld ms", s.last_served_ms);
	/* Kafka refuses a listener rate below 1 at runtime */
	ck_assert_int_eq(set_broker_default(b->port,
					    "listener.name.plaintext.max.connection.creation.rate",
					    "0"), 42);
	c_stop_broker(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("quota_rates");
	TCase *tc = tcase_create("quota_rates");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_controller_mutation_rate);
	tcase_add_test(tc, test_ip_connection_rate);
	tcase_add_test(tc, test_listener_connection_rate);
	tcase_add_test(tc, test_dynamic_broker_rate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return c_run_suite(suite());
}
