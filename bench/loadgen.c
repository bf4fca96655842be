/*
 * loadgen.c - produce/consume benchmark of samsa against librdkafka's
 * in-memory mock cluster, in one run with one client configuration.
 *
 * For each target: produce N records of S bytes (acks=1, or with -I an
 * idempotent producer with acks=all; linger.ms=5) to a
 * 1-partition topic as fast as librdkafka takes them, wait for every
 * delivery report, then consume the partition from the beginning by
 * assignment (legacy per-partition consumer; the broker has no groups yet).
 * Reported: produce records/s and MB/s (first produce call to last
 * delivery report), delivery latency p50/p99 (produce call to delivery
 * report, reports served by a dedicated poll thread), consume records/s and
 * MB/s, and for samsa the broker's peak RSS (VmHWM) before it is stopped.
 *
 * samsa is started by the compat harness on a free 127.0.0.1 port with a
 * temporary log dir; the mock cluster lives in this process
 * (rd_kafka_mock_cluster_new), so its figures carry no IPC to a separate
 * process but do share this process's 2 cores with the client. The mock
 * keeps only the last few MB of a partition, so its consume figure is
 * measured over the records it still holds (printed).
 *
 * Usage: loadgen [-n records] [-s bytes] [-S] [-M] [-d contexts]
 *   -S samsa only, -M mock only, -d librdkafka debug contexts (e.g.
 *   "broker,protocol"). The broker binary is $SAMSA_BIN.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"

#define TOPIC "bench"

typedef struct result {
	int ok;
	long produced, delivered, failed;
	double produce_s;
	double p50_ms, p99_ms, max_ms;
	long consumed;
	long consume_expected;
	double consume_s;
	long peak_rss_kb; /* -1: not applicable */
	char error[512];
} result;

/* State shared with the delivery report callback. */
typedef struct run_state {
	int64_t *t_send_ns;   /* per record: produce call time */
	int64_t *lat_ns;      /* per record: delivery latency */
	long delivered, failed;
	rd_kafka_resp_err_t first_err;
	int64_t last_dr_ns;
	volatile int stop_poll;
	rd_kafka_t *rk;
} run_state;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	run_state *st = opaque;
	long i = (long)(intptr_t)m->_private;
	int64_t t = now_ns();
	st->lat_ns[i] = t - st->t_send_ns[i];
	st->last_dr_ns = t;
	if (m->err) {
		if (!st->failed)
			st->first_err = m->err;
		st->failed++;
	} else {
		st->delivered++;
	}
}

static void *poll_thread(void *arg)
{
	run_state *st = arg;
	while (!st->stop_poll)
		rd_kafka_poll(st->rk, 50);
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static const char *debug_contexts; /* -d: librdkafka debug contexts */
static int idempotence;            /* -I: enable.idempotence=true (acks=all) */

static rd_kafka_conf_t *base_conf(const char *bootstrap)
{
	char err[256];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof(err)) ||
	    rd_kafka_conf_set(conf, "broker.address.family", "v4", err, sizeof(err)) ||
	    rd_kafka_conf_set(conf, "log.connection.close", "false", err, sizeof(err))) {
		fprintf(stderr, "loadgen: config: %s\n", err);
		exit(2);
	}
	if (debug_contexts &&
	    rd_kafka_conf_set(conf, "debug", debug_contexts, err, sizeof(err))) {
		fprintf(stderr, "loadgen: debug: %s\n", err);
		exit(2);
	}
	return conf;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "loadgen: config %s=%s: %s\n", k, v, err);
		exit(2);
	}
}

static void produce_phase(const char *bootstrap, long n, size_t size, result *r)
{
	run_state st = {0};
	char err[256];
	st.t_send_ns = calloc((size_t)n, sizeof(int64_t));
	st.lat_ns = calloc((size_t)n, sizeof(int64_t));
	char *payload = malloc(size ? size : 1);
	if (!st.t_send_ns || !st.lat_ns || !payload) {
		snprintf(r->error, sizeof(r->error), "out of memory");
		goto out;
	}
	for (size_t i = 0; i < size; i++)
		payload[i] = (char)('a' + i % 26);

	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "acks", idempotence ? "all" : "1");
	set(conf, "linger.ms", "5");
	set(conf, "enable.idempotence", idempotence ? "true" : "false");
	set(conf, "queue.buffering.max.messages", "1000000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_opaque(conf, &st);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		snprintf(r->error, sizeof(r->error), "producer: %s", err);
		goto out;
	}
	st.rk = rk;
	/* Let the producer learn the topic's leader before the clock starts:
	 * otherwise the first records can wait for librdkafka's periodic
	 * (1 s) topic metadata scan, which measures the client, not the
	 * broker. */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
	const struct rd_kafka_metadata *md;
	if (rkt && rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	pthread_t poller;
	pthread_create(&poller, NULL, poll_thread, &st);

	int64_t t0 = now_ns();
	for (long i = 0; i < n && !r->error[0]; i++) {
		/* The record number leads the payload, so records differ. */
		if (size >= sizeof(long))
			memcpy(payload, &i, sizeof(i));
		for (;;) {
			st.t_send_ns[i] = now_ns();
			rd_kafka_resp_err_t e = rd_kafka_producev(
			    rk, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
			    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			    RD_KAFKA_V_VALUE(payload, size), RD_KAFKA_V_OPAQUE((void *)(intptr_t)i),
			    RD_KAFKA_V_END);
			if (!e) {
				r->produced = i + 1;
				break;
			}
			if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				snprintf(r->error, sizeof(r->error), "produce: %s",
					 rd_kafka_err2str(e));
				break;
			}
			usleep(500);
		}
	}
	rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 300000);
	st.stop_poll = 1;
	pthread_join(poller, NULL);
	rd_kafka_poll(rk, 0);
	if (fe && !r->error[0])
		snprintf(r->error, sizeof(r->error), "flush: %s (%d still queued)",
			 rd_kafka_err2str(fe), rd_kafka_outq_len(rk));
	rd_kafka_destroy(rk);

	r->delivered = st.delivered;
	r->failed = st.failed;
	if (st.failed && !r->error[0])
		snprintf(r->error, sizeof(r->error), "%ld delivery failures, first: %s", st.failed,
			 rd_kafka_err2str(st.first_err));
	r->produce_s = (double)(st.last_dr_ns - t0) / 1e9;
	if (st.delivered + st.failed > 0) {
		long m = st.delivered + st.failed;
		qsort(st.lat_ns, (size_t)n, sizeof(int64_t), cmp_i64);
		/* Undelivered slots are 0 and sort first; skip them. */
		long skip = n - m;
		r->p50_ms = (double)st.lat_ns[skip + (m - 1) / 2] / 1e6;
		r->p99_ms = (double)st.lat_ns[skip + (long)((double)(m - 1) * 0.99)] / 1e6;
		r->max_ms = (double)st.lat_ns[n - 1] / 1e6;
	}
out:
	free(st.t_send_ns);
	free(st.lat_ns);
	free(payload);
}

static void consume_phase(const char *bootstrap, long n, result *r)
{
	char err[256];
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "enable.auto.commit", "false");
	set(conf, "enable.auto.offset.store", "false");
	set(conf, "enable.partition.eof", "false");
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk) {
		snprintf(r->error, sizeof(r->error), "consumer: %s", err);
		return;
	}
	int64_t lo = 0, hi = 0;
	rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, TOPIC, 0, &lo, &hi, 10000);
	if (e) {
		snprintf(r->error, sizeof(r->error), "watermarks: %s", rd_kafka_err2str(e));
		rd_kafka_destroy(rk);
		return;
	}
	r->consume_expected = (long)(hi - lo);
	if (r->consume_expected > n)
		r->consume_expected = n;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
	int64_t t0 = now_ns(), last = t0;
	rd_kafka_consume_start(rkt, 0, lo);
	rd_kafka_message_t *batch[1000];
	long got = 0;
	while (got < r->consume_expected && now_ns() - last < 30LL * 1000000000) {
		ssize_t k = rd_kafka_consume_batch(rkt, 0, 500, batch, 1000);
		for (ssize_t i = 0; i < k; i++) {
			if (!batch[i]->err)
				got++;
			else if (!r->error[0])
				snprintf(r->error, sizeof(r->error), "consume: %s",
					 rd_kafka_err2str(batch[i]->err));
			rd_kafka_message_destroy(batch[i]);
		}
		if (k > 0)
			last = now_ns();
	}
	r->consume_s = (double)(last - t0) / 1e9;
	r->consumed = got;
	if (got < r->consume_expected && !r->error[0])
		snprintf(r->error, sizeof(r->error), "consumed %ld of %ld", got,
			 r->consume_expected);
	rd_kafka_consume_stop(rkt, 0);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
}

static int create_topic(const char *bootstrap, char *errbuf, size_t errsize)
{
	char err[256];
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		snprintf(errbuf, errsize, "%s", err);
		return -1;
	}
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(TOPIC, 1, 1, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	int rc = -1;
	if (!ev) {
		snprintf(errbuf, errsize, "CreateTopics: no answer");
	} else if (rd_kafka_event_error(ev)) {
		snprintf(errbuf, errsize, "CreateTopics: %s", rd_kafka_event_error_string(ev));
	} else {
		size_t cnt;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		    rd_kafka_event_CreateTopics_result(ev), &cnt);
		if (cnt == 1 && !rd_kafka_topic_result_error(tr[0]))
			rc = 0;
		else
			snprintf(errbuf, errsize, "CreateTopics: %s",
				 cnt ? rd_kafka_err2str(rd_kafka_topic_result_error(tr[0]))
				     : "no result");
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	/* Wait until the topic has a leader. */
	for (int i = 0; rc == 0 && i < 100; i++) {
		const struct rd_kafka_metadata *md;
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
		int ready = 0;
		if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0) {
			ready = md->topic_cnt == 1 && !md->topics[0].err &&
				md->topics[0].partition_cnt == 1 &&
				md->topics[0].partitions[0].leader >= 0;
			rd_kafka_metadata_destroy(md);
		}
		rd_kafka_topic_destroy(rkt);
		if (ready)
			break;
		usleep(100000);
	}
	rd_kafka_destroy(rk);
	return rc;
}

static void run_samsa(long n, size_t size, result *r)
{
	r->peak_rss_kb = -1;
	h_broker *b = h_broker_new(NULL);
	if (!b || h_broker_start(b) < 0) {
		snprintf(r->error, sizeof(r->error), "could not start %s", h_samsa_bin());
		h_broker_free(b);
		return;
	}
	fprintf(stderr, "loadgen: samsa pid %d on %s, log dir %s\n", (int)b->pid, b->bootstrap,
		b->dir);
	if (create_topic(b->bootstrap, r->error, sizeof(r->error)) == 0) {
		produce_phase(b->bootstrap, n, size, r);
		if (!r->error[0])
			consume_phase(b->bootstrap, n, r);
		if (!r->error[0] && r->consumed != n)
			snprintf(r->error, sizeof(r->error), "samsa returned %ld of %ld records",
				 r->consumed, n);
	}
	r->peak_rss_kb = h_broker_status_kb(b, "VmHWM");
	int st = h_broker_stop(b, 30000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "loadgen: samsa did not stop cleanly (status 0x%x)\n", st);
		h_broker_dump_log(b, stderr, 20);
	}
	h_broker_free(b);
	r->ok = !r->error[0];
}

static void run_mock(long n, size_t size, result *r)
{
	char err[256];
	r->peak_rss_kb = -1;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	set(conf, "log_level", "3");
	rd_kafka_t *owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!owner) {
		snprintf(r->error, sizeof(r->error), "mock owner: %s", err);
		return;
	}
	rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(owner, 1);
	if (!mc) {
		snprintf(r->error, sizeof(r->error), "rd_kafka_mock_cluster_new failed");
		rd_kafka_destroy(owner);
		return;
	}
	rd_kafka_mock_topic_create(mc, TOPIC, 1, 1);
	char bootstrap[256];
	snprintf(bootstrap, sizeof(bootstrap), "%s", rd_kafka_mock_cluster_bootstraps(mc));
	produce_phase(bootstrap, n, size, r);
	if (!r->error[0])
		consume_phase(bootstrap, n, r);
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(owner);
	r->ok = !r->error[0];
}

static void fmt(char *buf, size_t n, double v, int ok)
{
	if (!ok || v < 0)
		snprintf(buf, n, "-");
	else if (v >= 1000)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.2f", v);
}

static void row(const char *name, double s, int sok, double m, int mok)
{
	char a[32], b[32], c[32];
	fmt(a, sizeof(a), s, sok);
	fmt(b, sizeof(b), m, mok);
	if (sok && mok && m > 0 && strncmp(name, "records", 7) != 0)
		snprintf(c, sizeof(c), "%.2f", s / m);
	else
		snprintf(c, sizeof(c), "-");
	printf("%-26s %14s %14s %12s\n", name, a, b, c);
}

int main(int argc, char **argv)
{
	long n = 1000000;
	size_t size = 100;
	int do_samsa = 1, do_mock = 1;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:d:SMIh")) != -1) {
		switch (opt) {
		case 'n':
			n = atol(optarg);
			break;
		case 's':
			size = (size_t)atol(optarg);
			break;
		case 'd':
			debug_contexts = optarg;
			break;
		case 'S':
			do_mock = 0;
			break;
		case 'M':
			do_samsa = 0;
			break;
		case 'I':
			idempotence = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-n records] [-s bytes] [-S samsa only] "
					"[-M mock only] [-I idempotent producer, acks=all] "
					"[-d librdkafka debug contexts]\n",
				argv[0]);
			return 2;
		}
	}
	if (n <= 0) {
		fprintf(stderr, "loadgen: -n must be positive\n");
		return 2;
	}
	if (h_init() < 0)
		return 1;

	result rs = {0}, rm = {0};
	if (do_samsa) {
		fprintf(stderr, "loadgen: samsa: %ld records of %zu bytes\n", n, size);
		run_samsa(n, size, &rs);
	}
	if (do_mock) {
		fprintf(stderr, "loadgen: mock cluster: %ld records of %zu bytes\n", n, size);
		run_mock(n, size, &rm);
	}

	double mb = (double)size / 1e6;
	printf("\nloadgen: %ld records x %zu bytes, 1 partition, %s, linger.ms=5, "
	       "librdkafka %s (MB/s: record values, 10^6 bytes)\n\n",
	       n, size, idempotence ? "enable.idempotence=true acks=all" : "acks=1",
	       rd_kafka_version_str());
	printf("%-26s %14s %14s %12s\n", "", "samsa", "mock", "samsa/mock");
	int sok = do_samsa && rs.delivered > 0, mok = do_mock && rm.delivered > 0;
	row("produce records/s", rs.produce_s > 0 ? rs.delivered / rs.produce_s : -1, sok,
	    rm.produce_s > 0 ? rm.delivered / rm.produce_s : -1, mok);
	row("produce MB/s", rs.produce_s > 0 ? rs.delivered * mb / rs.produce_s : -1, sok,
	    rm.produce_s > 0 ? rm.delivered * mb / rm.produce_s : -1, mok);
	row("delivery latency p50 ms", rs.p50_ms, sok, rm.p50_ms, mok);
	row("delivery latency p99 ms", rs.p99_ms, sok, rm.p99_ms, mok);
	row("delivery latency max ms", rs.max_ms, sok, rm.max_ms, mok);
	int sc = do_samsa && rs.consumed > 0, mc = do_mock && rm.consumed > 0;
	row("consume records/s", rs.consume_s > 0 ? rs.consumed / rs.consume_s : -1, sc,
	    rm.consume_s > 0 ? rm.consumed / rm.consume_s : -1, mc);
	row("consume MB/s", rs.consume_s > 0 ? rs.consumed * mb / rs.consume_s : -1, sc,
	    rm.consume_s > 0 ? rm.consumed * mb / rm.consume_s : -1, mc);
	row("records consumed", (double)rs.consumed, do_samsa, (double)rm.consumed, do_mock);
	row("broker peak RSS MB", rs.peak_rss_kb >= 0 ? rs.peak_rss_kb / 1024.0 : -1, do_samsa,
	    -1, 0);
	if (do_mock && rm.consumed < n)
		printf("\n(the mock cluster keeps only the last few MB of a partition: its "
		       "consume figures cover the %ld records it still held)\n",
		       rm.consumed);
	int rc = 0;
	if (do_samsa && !rs.ok) {
		printf("\nsamsa run FAILED: %s\n", rs.error);
		rc = 1;
	}
	if (do_mock && !rm.ok) {
		printf("\nmock run FAILED: %s\n", rm.error);
		rc = 1;
	}
	h_fini();
	return rc;
}
