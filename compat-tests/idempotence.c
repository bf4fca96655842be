/*
 * idempotence.c - the idempotent producer (KIP-98) under real faults, and
 * InitProducerId (API key 22) itself.
 *
 * InitProducerId, raw (v0-1 classic, v2-5 flexible): a producer without a
 * transactional id gets a new producer id with epoch 0 at every version;
 * ids never repeat, also after kill -9 and after a clean restart; a v3+
 * request carrying a producer id and epoch still gets a new id (Kafka's
 * TransactionCoordinator.handleInitProducerId ignores them without a
 * transactional id); a producer id without an epoch (or the reverse) and an
 * empty transactional id are INVALID_REQUEST; a transactional id is
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED (transactions are not served), which
 * makes librdkafka's rd_kafka_init_transactions fail at once, fatally.
 *
 * Exactly once under faults: a TCP proxy (a thread of the test, on
 * 127.0.0.1) sits between librdkafka and the broker; the broker advertises
 * the proxy's port (advertised.listeners), so all client traffic goes
 * through it. The proxy forwards every request but, every DROP_EVERY-th
 * Produce response, throws the response away and closes both sides of the
 * connection: the broker has appended the batch, the producer never hears
 * of it and retries it (with every other request in flight on that
 * connection). An idempotent producer (enable.idempotence=true, acks=all)
 * sends 100,000 records to a 3-partition topic, record i to partition i % 3
 * with the value "p<partition>-<i / 3>"; afterwards every partition must
 * hold exactly its records, each once, in order, at offsets 0, 1, 2... and
 * each delivery report must give that offset. The second test also kills
 * the broker with SIGKILL in the middle and restarts it on the same dir and
 * port while the producer keeps retrying. SAMSA_IDEMP_RECORDS overrides the
 * record count (quick runs).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define NPART 3
#define DROP_EVERY 100
#define TOPIC "idem"

/* ------------------------------------------------------------------ */
/* The dropping proxy                                                  */
/* ------------------------------------------------------------------ */

#define PX_MAX_CONNS 64
#define PX_MAX_PENDING 1024

typedef struct px_buf {
	uint8_t *b;
	size_t len, cap;
} px_buf;

typedef struct px_conn {
	int cfd, bfd; /* client side, broker side; -1 when unused */
	px_buf from_client, from_broker;
	/* requests forwarded and not answered yet, in order */
	int32_t pend_cid[PX_MAX_PENDING];
	int16_t pend_key[PX_MAX_PENDING];
	int pend_head, pend_n;
} px_conn;

typedef struct proxy {
	int lfd;
	int port;        /* the proxy's own port */
	int broker_port; /* where it forwards to */
	atomic_int stop;
	atomic_int dropping;     /* drop responses only while set */
	atomic_long produce_resp; /* Produce responses seen */
	atomic_long dropped;      /* Produce responses dropped */
	atomic_long refused;      /* client connections the broker did not take */
	pthread_t thread;
	px_conn conns[PX_MAX_CONNS];
} proxy;

static int buf_append(px_buf *b, const uint8_t *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *nb = realloc(b->b, cap);
		if (!nb)
			return -1;
		b->b = nb;
		b->cap = cap;
	}
	memcpy(b->b + b->len, p, n);
	b->len += n;
	return 0;
}

static void buf_consume(px_buf *b, size_t n)
{
	memmove(b->b, b->b + n, b->len - n);
	b->len -= n;
}

static void conn_close(px_conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->bfd >= 0)
		close(c->bfd);
	c->cfd = c->bfd = -1;
	c->from_client.len = c->from_broker.len = 0;
	c->pend_head = c->pend_n = 0;
}

/* Read what fd has into b; 0, or -1 when the peer closed or failed. */
static int read_into(int fd, px_buf *b)
{
	uint8_t tmp[65536];
	for (;;) {
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n > 0) {
			if (buf_append(b, tmp, (size_t)n))
				return -1;
			if ((size_t)n < sizeof(tmp))
				return 0;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return -1;
	}
}

/* Forward the complete request frames from the client, remembering each
 * one's correlation id and API key. 0 or -1 (close the pair). */
static int pump_requests(px_conn *c)
{
	px_buf *b = &c->from_client;
	while (b->len >= 4) {
		int32_t size = w_get32(b->b);
		if (size < 8)
			return -1;
		if (b->len < 4 + (size_t)size)
			break;
		if (c->pend_n == PX_MAX_PENDING)
			return -1;
		int slot = (c->pend_head + c->pend_n) % PX_MAX_PENDING;
		c->pend_key[slot] = w_get16(b->b + 4);
		c->pend_cid[slot] = w_get32(b->b + 8);
		c->pend_n++;
		if (w_send_all(c->bfd, b->b, 4 + (size_t)size, 30000) != 0)
			return -1;
		buf_consume(b, 4 + (size_t)size);
	}
	return 0;
}

/* Forward the complete response frames from the broker, or drop one and
 * close the pair. 0 or -1 (close the pair). */
static int pump_responses(proxy *px, px_conn *c)
{
	px_buf *b = &c->from_broker;
	while (b->len >= 4) {
		int32_t size = w_get32(b->b);
		if (size < 4)
			return -1;
		if (b->len < 4 + (size_t)size)
			break;
		if (c->pend_n == 0 || c->pend_cid[c->pend_head] != w_get32(b->b + 4))
			return -1; /* not the answer to the oldest request */
		int16_t key = c->pend_key[c->pend_head];
		c->pend_head = (c->pend_head + 1) % PX_MAX_PENDING;
		c->pend_n--;
		if (key == 0) {
			long n = atomic_fetch_add(&px->produce_resp, 1) + 1;
			if (atomic_load(&px->dropping) && n % DROP_EVERY == 0) {
				atomic_fetch_add(&px->dropped, 1);
				return -1; /* the request was handled; its answer is lost */
			}
		}
		if (w_send_all(c->cfd, b->b, 4 + (size_t)size, 30000) != 0)
			return -1;
		buf_consume(b, 4 + (size_t)size);
	}
	return 0;
}

static void accept_one(proxy *px)
{
	int cfd = accept4(px->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	int bfd = w_connect(px->broker_port, 2000);
	if (bfd < 0) { /* broker down (killed): the client retries */
		atomic_fetch_add(&px->refused, 1);
		close(cfd);
		return;
	}
	for (int i = 0; i < PX_MAX_CONNS; i++) {
		px_conn *c = &px->conns[i];
		if (c->cfd < 0) {
			c->cfd = cfd;
			c->bfd = bfd;
			return;
		}
	}
	close(cfd);
	close(bfd);
}

static void *proxy_main(void *arg)
{
	proxy *px = arg;
	struct pollfd pfd[1 + 2 * PX_MAX_CONNS];
	while (!atomic_load(&px->stop)) {
		int n = 0;
		pfd[n++] = (struct pollfd){.fd = px->lfd, .events = POLLIN};
		for (int i = 0; i < PX_MAX_CONNS; i++) {
			px_conn *c = &px->conns[i];
			pfd[n++] = (struct pollfd){.fd = c->cfd, .events = POLLIN};
			pfd[n++] = (struct pollfd){.fd = c->bfd, .events = POLLIN};
		}
		if (poll(pfd, (nfds_t)n, 50) <= 0)
			continue;
		for (int i = 0; i < PX_MAX_CONNS; i++) {
			px_conn *c = &px->conns[i];
			short ce = pfd[1 + 2 * i].revents, be = pfd[2 + 2 * i].revents;
			if (c->cfd < 0)
				continue;
			if (ce && (read_into(c->cfd, &c->from_client) || pump_requests(c))) {
				conn_close(c);
				continue;
			}
			if (be && (read_into(c->bfd, &c->from_broker) || pump_responses(px, c)))
				conn_close(c);
		}
		if (pfd[0].revents & POLLIN)
			accept_one(px);
	}
	return NULL;
}

/* Listen on a free loopback port and run the proxy thread (forwarding to
 * broker_port once set; set it before clients connect). */
static proxy *proxy_new(void)
{
	proxy *px = calloc(1, sizeof(*px));
	ck_assert_ptr_nonnull(px);
	for (int i = 0; i < PX_MAX_CONNS; i++)
		px->conns[i].cfd = px->conns[i].bfd = -1;
	px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(px->lfd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	ck_assert_int_eq(bind(px->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(px->lfd, 64), 0);
	ck_assert_int_eq(getsockname(px->lfd, (struct sockaddr *)&sa, &sl), 0);
	px->port = ntohs(sa.sin_port);
	return px;
}

static void proxy_start(proxy *px, int broker_port)
{
	px->broker_port = broker_port;
	atomic_store(&px->dropping, 1);
	ck_assert_int_eq(pthread_create(&px->thread, NULL, proxy_main, px), 0);
}

static void proxy_free(proxy *px)
{
	atomic_store(&px->stop, 1);
	pthread_join(px->thread, NULL);
	for (int i = 0; i < PX_MAX_CONNS; i++) {
		conn_close(&px->conns[i]);
		free(px->conns[i].from_client.b);
		free(px->conns[i].from_broker.b);
	}
	close(px->lfd);
	free(px);
}

/* ------------------------------------------------------------------ */
/* Exactly once through the proxy                                      */
/* ------------------------------------------------------------------ */

static long nrecords(void)
{
	const char *s = getenv("SAMSA_IDEMP_RECORDS");
	long n = s ? atol(s) : 0;
	return n > 0 ? n : 100000;
}

typedef struct part_check {
	int32_t partition;
	long next;       /* sequence number expected next */
	long duplicates; /* records whose sequence number came already */
	long missing;    /* sequence numbers skipped */
	long bad;        /* records that are not "p<partition>-<n>" */
	char error[512]; /* the first anomaly */
} part_check;

static int check_cb(const rd_kafka_message_t *m, void *opaque)
{
	part_check *pc = opaque;
	char val[64], prefix[16];
	size_t vl = m->len < sizeof(val) - 1 ? m->len : sizeof(val) - 1;
	memcpy(val, m->payload ? m->payload : "", vl);
	val[vl] = '\0';
	int pl = snprintf(prefix, sizeof(prefix), "p%d-", (int)pc->partition);
	char *end = NULL;
	long seq = strncmp(val, prefix, (size_t)pl) == 0 ? strtol(val + pl, &end, 10) : -1;
	const char *what = NULL;
	long expected = pc->next;
	if (seq < 0 || !end || *end || m->len >= sizeof(val)) {
		pc->bad++;
		what = "not a record of this test";
	} else if (seq < pc->next) {
		pc->duplicates++;
		what = "duplicate";
	} else if (seq > pc->next) {
		pc->missing += seq - pc->next;
		pc->next = seq + 1;
		what = "gap";
	} else {
		pc->next++;
		if (m->offset != seq)
			what = "at the wrong offset";
	}
	if (what && !pc->error[0])
		snprintf(pc->error, sizeof(pc->error),
			 "partition %d offset %lld holds \"%s\" (%s; %ld expected next)",
			 (int)pc->partition, (long long)m->offset, val, what, expected);
	return 0; /* read on: count everything */
}

/* Every partition holds exactly its records, once each, in order. */
static void verify_exactly_once(h_broker *b, long n, const c_delivery *dr, const char *when)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	for (int32_t p = 0; p < NPART; p++) {
		long expect = n / NPART + (p < n % NPART ? 1 : 0);
		int64_t lo = -1, hi = -1;
		rd_kafka_resp_err_t err =
		    rd_kafka_query_watermark_offsets(c, TOPIC, p, &lo, &hi, h_scaled_ms(10000));
		ck_assert_msg(err == 0, "%s: watermarks of partition %d: %s", when, (int)p,
			      rd_kafka_err2str(err));
		part_check pc = {.partition = p};
		long got = c_consume(c, TOPIC, p, RD_KAFKA_OFFSET_BEGINNING, hi, h_scaled_ms(120000),
				     check_cb, &pc);
		ck_assert_msg(got == hi, "%s: partition %d: consumed %ld of the %lld records there",
			      when, (int)p, got, (long long)hi);
		ck_assert_msg(!pc.error[0] && hi == expect && pc.next == expect,
			      "%s: partition %d holds %lld records for %ld produced: %ld "
			      "duplicates, %ld missing, %ld foreign, last sequence %ld; first "
			      "anomaly: %s",
			      when, (int)p, (long long)hi, expect, pc.duplicates,
			      pc.missing + (expect > pc.next ? expect - pc.next : 0), pc.bad,
			      pc.next - 1, pc.error[0] ? pc.error : "(none: records missing at the end)");
	}
	for (long i = 0; i < n; i++) {
		ck_assert_msg(dr[i].done && dr[i].err == 0, "%s: record %ld: delivery %s", when, i,
			      dr[i].done ? rd_kafka_err2name(dr[i].err) : "report missing");
		ck_assert_msg(dr[i].partition == i % NPART && dr[i].offset == i / NPART,
			      "%s: record %ld delivered to partition %d offset %lld, expected %ld "
			      "offset %ld",
			      when, i, (int)dr[i].partition, (long long)dr[i].offset, i % NPART,
			      i / NPART);
	}
	rd_kafka_destroy(c);
}

static void run_through_proxy(int kill_midway)
{
	long n = nrecords();
	proxy *px = proxy_new();
	char adv[128];
	snprintf(adv, sizeof(adv), "advertised.listeners=PLAINTEXT://127.0.0.1:%d", px->port);
	h_broker *b = c_start_broker((const char *const[]){adv, NULL});
	proxy_start(px, b->port);

	rd_kafka_t *p = c_producer(b, (const char *const[]){
	    "enable.idempotence", "true", "acks", "all", "linger.ms", "2",
	    "batch.num.messages", "50", "message.timeout.ms", "180000",
	    "retry.backoff.ms", "20", "reconnect.backoff.ms", "20",
	    "reconnect.backoff.max.ms", "200", NULL});
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics: %s %s", rd_kafka_err2name(err), errstr);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));

	c_delivery *dr = calloc((size_t)n, sizeof(*dr));
	ck_assert_ptr_nonnull(dr);
	char value[64];
	long long t0 = h_now_ms();
	for (long i = 0; i < n; i++) {
		c_msg m = {.topic = TOPIC,
			   .partition = (int32_t)(i % NPART),
			   .value = value,
			   .value_len = (size_t)snprintf(value, sizeof(value), "p%ld-%ld",
							 i % NPART, i / NPART)};
		c_produce(p, &m, &dr[i]);
		if (i % 1000 == 0)
			rd_kafka_poll(p, 0);
		if (kill_midway && i == n / 2) {
			/* let some of it be in flight, then kill -9 and restart */
			rd_kafka_poll(p, 50);
			ck_assert_msg(h_broker_kill(b) == 0, "broker not running before kill -9");
			usleep(200 * 1000);
			ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart (log above)");
		}
	}
	c_flush(p, h_scaled_ms(240000));
	long long took = h_now_ms() - t0;
	rd_kafka_destroy(p);
	atomic_store(&px->dropping, 0);
	long dropped = atomic_load(&px->dropped);
	fprintf(stderr,
		"idempotence%s: %ld records in %lld ms, %ld Produce responses, %ld dropped, "
		"%ld connections refused\n",
		kill_midway ? " (kill -9 midway)" : "", n, took, atomic_load(&px->produce_resp),
		dropped, atomic_load(&px->refused));
	/* the faults did happen (else the test proves nothing) */
	ck_assert_msg(dropped >= 2,
		      "only %ld Produce responses dropped: too few faults", dropped);

	verify_exactly_once(b, n, dr, kill_midway ? "kill -9 midway" : "dropped responses");
	free(dr);
	c_stop_broker(b);
	proxy_free(px);
}

START_TEST(test_exactly_once_dropped_responses)
{
	run_through_proxy(0);
}
END_TEST

START_TEST(test_exactly_once_kill9)
{
	run_through_proxy(1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* InitProducerId, raw                                                 */
/* ------------------------------------------------------------------ */

/* One InitProducerId of version ver (k_init_producer_id, timeout 60 s);
 * the broker never throttles it. */
static k_init_pid init_pid(int fd, int16_t ver, const char *txn_id, int64_t pid, int16_t epoch)
{
	k_init_pid r;
	k_init_producer_id(fd, ver, txn_id, 60000, pid, epoch, &r);
	ck_assert_int_eq(r.throttle_ms, 0);
	return r;
}

START_TEST(test_init_producer_id)
{
	h_broker *b = c_start_broker(NULL);
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	int64_t last = -1;
	for (int16_t v = 0; v <= 5; v++) {
		k_init_pid r = init_pid(fd, v, NULL, -1, -1);
		ck_assert_msg(r.error == 0 && r.producer_epoch == 0 && r.producer_id > last,
			      "v%d: error %d id %lld epoch %d (previous id %lld)", v, r.error,
			      (long long)r.producer_id, r.producer_epoch, (long long)last);
		last = r.producer_id;
		if (v >= 3) {
			/* an idempotent producer asking again with its id: a new id */
			r = init_pid(fd, v, NULL, last, 0);
			ck_assert_msg(r.error == 0 && r.producer_epoch == 0 && r.producer_id > last,
				      "v%d with id %lld epoch 0: error %d id %lld epoch %d", v,
				      (long long)last, r.error, (long long)r.producer_id, r.producer_epoch);
			last = r.producer_id;
			r = init_pid(fd, v, NULL, last, -1);
			ck_assert_msg(r.error == 42 && r.producer_id == -1 && r.producer_epoch == -1,
				      "v%d id without epoch: error %d id %lld epoch %d", v, r.error,
				      (long long)r.producer_id, r.producer_epoch);
			r = init_pid(fd, v, NULL, -1, 3);
			ck_assert_msg(r.error == 42, "v%d epoch without id: error %d", v, r.error);
		}
		/* a transactional id gets its own new producer id, and the
		 * same id again bumps the epoch (the coordinator's; the
		 * transactions compat test covers the rest) */
		char tid[16];
		snprintf(tid, sizeof(tid), "txn-v%d", (int)v);
		r = init_pid(fd, v, tid, -1, -1);
		ck_assert_msg(r.error == 0 && r.producer_id > last && r.producer_epoch == 0,
			      "v%d transactional: error %d id %lld epoch %d", v, r.error,
			      (long long)r.producer_id, r.producer_epoch);
		last = r.producer_id;
		r = init_pid(fd, v, tid, -1, -1);
		ck_assert_msg(r.error == 0 && r.producer_id == last && r.producer_epoch == 1,
			      "v%d transactional again: error %d id %lld epoch %d", v, r.error,
			      (long long)r.producer_id, r.producer_epoch);
		r = init_pid(fd, v, "", -1, -1);
		ck_assert_msg(r.error == 42, "v%d empty transactional id: error %d", v, r.error);
	}
	close(fd);

	/* never repeated: after kill -9, and after a clean stop */
	for (int round = 0; round < 2; round++) {
		if (round == 0) {
			ck_assert_int_eq(h_broker_kill(b), 0);
		} else {
			int st = h_broker_stop(b, h_scaled_ms(30000));
			ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
				      "clean stop failed");
		}
		ck_assert_msg(h_broker_restart(b) == 0, "restart failed (log above)");
		fd = w_connect(b->port, h_scaled_ms(5000));
		ck_assert_int_ge(fd, 0);
		for (int16_t v = 0; v <= 5; v++) {
			k_init_pid r = init_pid(fd, v, NULL, -1, -1);
			ck_assert_msg(r.error == 0 && r.producer_id > last,
				      "after %s: v%d id %lld, previous %lld (error %d)",
				      round ? "restart" : "kill -9", v, (long long)r.producer_id,
				      (long long)last, r.error);
			last = r.producer_id;
		}
		close(fd);
	}
	c_stop_broker(b);
}
END_TEST

/* The idempotent producer works directly too (InitProducerId, then Produce
 * with producer id, epoch and sequences). */
START_TEST(test_idempotent_plain)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"enable.idempotence", "true", NULL});
	char errstr[256];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	long n = 3000;
	c_delivery *dr = calloc((size_t)n, sizeof(*dr));
	ck_assert_ptr_nonnull(dr);
	char value[64];
	for (long i = 0; i < n; i++) {
		c_msg m = {.topic = TOPIC,
			   .partition = (int32_t)(i % NPART),
			   .value = value,
			   .value_len = (size_t)snprintf(value, sizeof(value), "p%ld-%ld",
							 i % NPART, i / NPART)};
		c_produce(p, &m, &dr[i]);
	}
	c_flush(p, h_scaled_ms(60000));
	rd_kafka_destroy(p);
	verify_exactly_once(b, n, dr, "no faults");
	free(dr);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idempotence");
	TCase *tc = tcase_create("init_producer_id");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_init_producer_id);
	tcase_add_test(tc, test_idempotent_plain);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("faults");
	tcase_set_timeout(tf, 420);
	tcase_add_test(tf, test_exactly_once_dropped_responses);
	tcase_add_test(tf, test_exactly_once_kill9);
	suite_add_tcase(s, tf);
	return c_run_suite(s);
}
