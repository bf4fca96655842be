/*
 * compat.c - shared helpers of the check + librdkafka compat tests
 * (see compat.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

int c_run_suite(Suite *s)
{
	if (h_init() < 0)
		return 99;
	if (access(h_samsa_bin(), X_OK) < 0) {
		fprintf(stderr, "compat: broker binary %s: %s (set SAMSA_BIN)\n", h_samsa_bin(),
			strerror(errno));
		h_fini();
		return 99;
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed) {
		fprintf(stderr, "\ncompat: broker logs of this run (tails):\n");
		h_dump_all_logs(stderr, 25);
	}
	h_fini();
	return failed ? 1 : 0;
}

/* The cluster hooks (compat.h), installed by cluster_compat.c before main;
 * NULL in the single-node programs. */
static const c_cluster_hooks *cluster_hooks;

void c_set_cluster_hooks(const c_cluster_hooks *h)
{
	cluster_hooks = h;
}

h_broker *c_start_broker(const char *const *overrides)
{
	if (cluster_hooks) {
		h_broker *b = cluster_hooks->start(overrides);
		ck_assert_msg(b != NULL, "the cluster did not start (logs above)");
		return b;
	}
	h_broker *b = h_broker_new(overrides);
	ck_assert_msg(b != NULL, "could not prepare a broker (port, temp dir)");
	ck_assert_msg(h_broker_start(b) == 0, "broker %s did not start (log above)",
		      h_samsa_bin());
	return b;
}

void c_stop_broker(h_broker *b)
{
	if (cluster_hooks) {
		int bad = cluster_hooks->stop(b);
		if (bad >= 0) {
			ck_assert_msg(bad == 0, "%d broker(s) of the cluster did not exit 0 on SIGTERM "
				      "(logs above)", bad);
			return;
		}
	}
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1, "broker did not stop on SIGTERM (log above)");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		h_broker_dump_log(b, stderr, 40);
		ck_abort_msg("broker ended with %s %d on SIGTERM, expected exit code 0",
			     WIFEXITED(st) ? "exit code" : "signal",
			     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	h_broker_free(b);
}

void c_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
	char errstr[512];
	ck_assert_msg(rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) ==
			      RD_KAFKA_CONF_OK,
		      "librdkafka config %s=%s: %s", key, value, errstr);
}

void c_set_all(rd_kafka_conf_t *conf, const char *const *kv)
{
	for (int i = 0; kv && kv[i]; i += 2) {
		ck_assert_msg(kv[i + 1] != NULL, "odd config list at %s", kv[i]);
		c_set(conf, kv[i], kv[i + 1]);
	}
}

rd_kafka_conf_t *c_conf(const h_broker *b)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	c_set(conf, "bootstrap.servers", b->bootstrap);
	c_set(conf, "broker.address.family", "v4");
	c_set(conf, "log.connection.close", "false");
	c_set(conf, "client.id", "samsa-compat");
	return conf;
}

rd_kafka_t *c_new(rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
	char errstr[512];
	rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
	ck_assert_msg(rk != NULL, "rd_kafka_new: %s", errstr);
	return rk;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	c_delivery *d = m->_private;
	if (!d)
		return;
	rd_kafka_timestamp_type_t tstype;
	d->err = m->err;
	d->partition = m->partition;
	d->offset = m->offset;
	d->timestamp = rd_kafka_message_timestamp(m, &tstype);
	d->done = 1;
}

rd_kafka_t *c_producer(const h_broker *b, const char *const *kv)
{
	rd_kafka_conf_t *conf = c_conf(b);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	c_set(conf, "enable.idempotence", "false");
	c_set_all(conf, kv);
	return c_new(RD_KAFKA_PRODUCER, conf);
}

rd_kafka_t *c_consumer(const h_broker *b, const char *const *kv)
{
	rd_kafka_conf_t *conf = c_conf(b);
	c_set(conf, "enable.auto.commit", "false");
	c_set(conf, "enable.auto.offset.store", "false");
	c_set(conf, "enable.partition.eof", "false");
	c_set(conf, "fetch.wait.max.ms", "100");
	c_set_all(conf, kv);
	return c_new(RD_KAFKA_CONSUMER, conf);
}

void c_produce(rd_kafka_t *rk, const c_msg *m, c_delivery *d)
{
	rd_kafka_resp_err_t err;
	if (d)
		memset(d, 0, sizeof(*d));
	for (int tries = 0;; tries++) {
		rd_kafka_headers_t *hdrs = NULL;
		if (m->nheaders > 0) {
			hdrs = rd_kafka_headers_new((size_t)m->nheaders);
			for (int i = 0; i < m->nheaders; i++)
				rd_kafka_header_add(hdrs, m->headers[i].name, -1,
						    m->headers[i].value,
						    (ssize_t)m->headers[i].len);
		}
		err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(m->topic),
					RD_KAFKA_V_PARTITION(m->partition),
					RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					RD_KAFKA_V_KEY(m->key, m->key_len),
					RD_KAFKA_V_VALUE((void *)m->value, m->value_len),
					RD_KAFKA_V_HEADERS(hdrs),
					RD_KAFKA_V_TIMESTAMP(m->timestamp),
					RD_KAFKA_V_OPAQUE(d), RD_KAFKA_V_END);
		if (!err)
			return;
		/* On failure the headers were not taken over. */
		if (hdrs)
			rd_kafka_headers_destroy(hdrs);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries > 3000)
			break;
		rd_kafka_poll(rk, 10);
	}
	ck_abort_msg("rd_kafka_producev to %s [%d]: %s", m->topic, (int)m->partition,
		     rd_kafka_err2str(err));
}

void c_flush(rd_kafka_t *rk, int timeout_ms)
{
	rd_kafka_resp_err_t err = rd_kafka_flush(rk, timeout_ms);
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_NO_ERROR,
		      "rd_kafka_flush: %s (%d messages still queued after %d ms)",
		      rd_kafka_err2str(err), rd_kafka_outq_len(rk), timeout_ms);
}

long c_consume(rd_kafka_t *consumer, const char *topic, int32_t partition,
	       int64_t start_offset, long count, int timeout_ms, c_consume_cb cb,
	       void *opaque)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, topic, NULL);
	ck_assert_msg(rkt != NULL, "rd_kafka_topic_new %s: %s", topic,
		      rd_kafka_err2str(rd_kafka_last_error()));
	ck_assert_msg(rd_kafka_consume_start(rkt, partition, start_offset) == 0,
		      "rd_kafka_consume_start %s [%d]: %s", topic, (int)partition,
		      rd_kafka_err2str(rd_kafka_last_error()));

	long n = 0;
	int stop = 0;
	long long deadline = h_now_ms() + timeout_ms;
	rd_kafka_message_t *batch[1000];
	char failure[512] = "";
	long long last_progress = h_now_ms();
	int idle_ms = h_scaled_ms(C_IDLE_MS);
	while (n < count && !stop && h_now_ms() < deadline &&
	       h_now_ms() - last_progress < idle_ms) {
		ssize_t got = rd_kafka_consume_batch(rkt, partition, 200, batch, 1000);
		if (got > 0)
			last_progress = h_now_ms();
		if (got < 0) {
			snprintf(failure, sizeof(failure), "rd_kafka_consume_batch: %s",
				 rd_kafka_err2str(rd_kafka_last_error()));
			break;
		}
		for (ssize_t i = 0; i < got; i++) {
			rd_kafka_message_t *m = batch[i];
			if (!failure[0] && !stop && n < count) {
				if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
					/* not an error */
				} else if (m->err) {
					snprintf(failure, sizeof(failure),
						 "consume %s [%d] after %ld messages: %s (%s)",
						 topic, (int)partition, n, rd_kafka_err2str(m->err),
						 rd_kafka_message_errstr(m));
				} else {
					n++;
					if (cb && cb(m, opaque))
						stop = 1;
				}
			}
			rd_kafka_message_destroy(m);
		}
		if (failure[0])
			break;
	}
	rd_kafka_consume_stop(rkt, partition);
	rd_kafka_topic_destroy(rkt);
	ck_assert_msg(!failure[0], "%s", failure);
	return n;
}

/* Wait for an admin result event of type evtype on q. */
static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t evtype,
				    int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	while (h_now_ms() < deadline) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 200);
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == evtype)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	return NULL;
}

static void copy_err(char *errstr, size_t errsize, const char *msg)
{
	if (errstr && errsize)
		snprintf(errstr, errsize, "%s", msg ? msg : "");
}

rd_kafka_resp_err_t c_create_topic(rd_kafka_t *rk, const char *name, int partitions,
				   int replication_factor, const char *const *configs,
				   char *errstr, size_t errsize)
{
	char buf[512];
	/* on a cluster, a topic of one replica gets one on every broker, led
	 * by broker 1: what the test then reads from its broker's files and
	 * what it acknowledged with acks=1 are on broker 1 */
	bool spread = cluster_hooks && replication_factor == 1;
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, partitions,
							spread ? -1 : replication_factor, buf,
							sizeof(buf));
	ck_assert_msg(nt != NULL, "rd_kafka_NewTopic_new %s: %s", name, buf);
	for (int p = 0; spread && p < partitions; p++) {
		int32_t ids[16];
		int n = cluster_hooks->replication_factor;
		ck_assert(n >= 1 && n <= 16);
		for (int i = 0; i < n; i++)
			ids[i] = i + 1;
		ck_assert_msg(rd_kafka_NewTopic_set_replica_assignment(nt, p, ids, (size_t)n, buf,
								       sizeof(buf)) == 0,
			      "replica assignment of %s-%d: %s", name, p, buf);
	}
	for (int i = 0; configs && configs[i]; i += 2)
		ck_assert(rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1]) == 0);

	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, 10000, buf, sizeof(buf));
	rd_kafka_AdminOptions_set_request_timeout(opt, h_scaled_ms(15000), buf, sizeof(buf));
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	rd_kafka_event_t *ev =
	    admin_wait(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, h_scaled_ms(30000));
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	ck_assert_msg(ev != NULL, "CreateTopics %s: no result", name);

	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (err) {
		snprintf(buf, sizeof(buf), "%s", rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		rd_kafka_queue_destroy(q);
		ck_abort_msg("CreateTopics %s: request failed: %s (%s)", name,
			     rd_kafka_err2name(err), buf);
	}
	size_t n;
	const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
	const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &n);
	ck_assert_msg(n == 1, "CreateTopics %s: %zu topic results", name, n);
	ck_assert_str_eq(rd_kafka_topic_result_name(tr[0]), name);
	err = rd_kafka_topic_result_error(tr[0]);
	copy_err(errstr, errsize, rd_kafka_topic_result_error_string(tr[0]));
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

rd_kafka_resp_err_t c_delete_topic(rd_kafka_t *rk, const char *name, char *errstr,
				   size_t errsize)
{
	char buf[512];
	rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(name);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, 10000, buf, sizeof(buf));
	rd_kafka_AdminOptions_set_request_timeout(opt, h_scaled_ms(15000), buf, sizeof(buf));
	rd_kafka_DeleteTopics(rk, &dt, 1, opt, q);
	rd_kafka_event_t *ev =
	    admin_wait(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, h_scaled_ms(30000));
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_DeleteTopic_destroy(dt);
	ck_assert_msg(ev != NULL, "DeleteTopics %s: no result", name);

	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (err) {
		snprintf(buf, sizeof(buf), "%s", rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		rd_kafka_queue_destroy(q);
		ck_abort_msg("DeleteTopics %s: request failed: %s (%s)", name,
			     rd_kafka_err2name(err), buf);
	}
	size_t n;
	const rd_kafka_DeleteTopics_result_t *res = rd_kafka_event_DeleteTopics_result(ev);
	const rd_kafka_topic_result_t **tr = rd_kafka_DeleteTopics_result_topics(res, &n);
	ck_assert_msg(n == 1, "DeleteTopics %s: %zu topic results", name, n);
	ck_assert_str_eq(rd_kafka_topic_result_name(tr[0]), name);
	err = rd_kafka_topic_result_error(tr[0]);
	copy_err(errstr, errsize, rd_kafka_topic_result_error_string(tr[0]));
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

const struct rd_kafka_metadata *c_metadata_all(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, h_scaled_ms(10000));
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_NO_ERROR, "metadata request: %s",
		      rd_kafka_err2str(err));
	return md;
}

const rd_kafka_metadata_topic_t *c_md_topic(const struct rd_kafka_metadata *md,
					    const char *name)
{
	for (int i = 0; i < md->topic_cnt; i++)
		if (strcmp(md->topics[i].topic, name) == 0)
			return &md->topics[i];
	return NULL;
}

void c_wait_topic(rd_kafka_t *rk, const char *name, int partitions, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	char last[256] = "not listed";
	for (;;) {
		const struct rd_kafka_metadata *md = c_metadata_all(rk);
		const rd_kafka_metadata_topic_t *t = c_md_topic(md, name);
		int ok = 0;
		if (!t) {
			snprintf(last, sizeof(last), "not listed");
		} else if (t->err) {
			snprintf(last, sizeof(last), "topic error %s", rd_kafka_err2name(t->err));
		} else if (t->partition_cnt != partitions) {
			snprintf(last, sizeof(last), "%d partitions", t->partition_cnt);
		} else {
			ok = 1;
			for (int p = 0; p < t->partition_cnt; p++)
				if (t->partitions[p].err || t->partitions[p].leader < 0) {
					snprintf(last, sizeof(last),
						 "partition %d: error %s leader %d",
						 t->partitions[p].id,
						 rd_kafka_err2name(t->partitions[p].err),
						 t->partitions[p].leader);
					ok = 0;
				}
		}
		rd_kafka_metadata_destroy(md);
		if (ok)
			return;
		ck_assert_msg(h_now_ms() < deadline,
			      "topic %s not ready with %d partitions after %d ms: %s", name,
			      partitions, timeout_ms, last);
		usleep(100 * 1000);
	}
}

void c_assert_broker_serving(h_broker *b)
{
	ck_assert_msg(h_broker_alive(b), "broker is no longer running (status 0x%x)",
		      b->last_status);
	ck_assert_msg(w_probe(b->port, h_scaled_ms(5000)) == 0,
		      "broker does not answer a fresh ApiVersions request");
}

/* The port of txn_id's transaction coordinator as FindCoordinator v1 (key
 * type 1) to the broker on port says it, or -1 (an error, or no answer). */
static int txn_coordinator_port(int port, const char *txn_id)
{
	uint8_t body[512], req[1024];
	size_t kl = strlen(txn_id);
	if (kl > 400)
		return -1;
	w_put16(body, (int16_t)kl);
	memcpy(body + 2, txn_id, kl);
	body[2 + kl] = 1; /* key type: transaction */
	int n = w_build_request(req, sizeof(req), 10, 1, 1, "compat", body, kl + 3);
	int fd = w_connect(port, h_scaled_ms(5000));
	if (fd < 0 || n < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint8_t *resp = NULL;
	int32_t len = 0;
	int found = -1;
	if (w_send_all(fd, req, (size_t)n, h_scaled_ms(5000)) == WIRE_OK &&
	    w_recv_frame(fd, &resp, &len, 1 << 20, h_scaled_ms(5000)) == WIRE_OK && len >= 12) {
		/* correlation id, throttle, error, message, node, host, port */
		int16_t err = w_get16(resp + 8);
		int16_t ml = w_get16(resp + 10);
		size_t p = 12 + (ml > 0 ? (size_t)ml : 0) + 4;
		if (err == 0 && (size_t)len >= p + 2) {
			int16_t hl = w_get16(resp + p);
			p += 2 + (hl > 0 ? (size_t)hl : 0);
			if ((size_t)len >= p + 4)
				found = w_get32(resp + p);
		}
	}
	free(resp);
	close(fd);
	return found;
}

void c_init_producer_id(const h_broker *b, const char *txn_id, int64_t *pid, int16_t *epoch)
{
	/* Kafka error codes a coordinator answers while it is not ready. */
	enum { LOAD_IN_PROGRESS = 14, NOT_AVAILABLE = 15, NOT_COORDINATOR = 16, CONCURRENT = 51 };
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	int port = b->port; /* a cluster's coordinator may be another broker */
	for (;;) {
		int fd = w_connect(port, h_scaled_ms(5000));
		ck_assert_msg(fd >= 0, "connect to the broker");
		k_init_pid r;
		int16_t err = k_init_producer_id(fd, 4, txn_id, 60000, -1, -1, &r);
		close(fd);
		*pid = r.producer_id;
		*epoch = r.producer_epoch;
		if (err == 0)
			return;
		ck_assert_msg((err == LOAD_IN_PROGRESS || err == NOT_AVAILABLE || err == NOT_COORDINATOR ||
			       err == CONCURRENT) &&
				      h_now_ms() < deadline,
			      "InitProducerId v4 for %s: error %d", txn_id ? txn_id : "(null)", err);
		port = b->port;
		if (err == NOT_COORDINATOR && txn_id) {
			int cport = txn_coordinator_port(b->port, txn_id);
			if (cport > 0)
				port = cport;
		}
		usleep(100 * 1000);
	}
}

void c_produce_seq(const h_broker *b, const char *topic, int n, int first, const char *acks)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", acks, NULL});
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	ck_assert_ptr_nonnull(d);
	char val[32];
	for (int i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "v%d", first + i);
		c_msg m = {.topic = topic, .partition = 0, .value = val, .value_len = strlen(val)};
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < n; i++) {
		ck_assert_msg(d[i].done && d[i].err == 0, "record v%d: %s", first + i,
			      rd_kafka_err2str(d[i].err));
		ck_assert_int_eq(d[i].offset, first + i);
	}
	free(d);
	rd_kafka_destroy(p);
}

typedef struct seq_state {
	int next;
	char error[256];
} seq_state;

static int seq_cb(const rd_kafka_message_t *m, void *opaque)
{
	seq_state *s = opaque;
	char want[32];
	snprintf(want, sizeof(want), "v%d", s->next);
	if (m->offset != s->next || m->len != strlen(want) || memcmp(m->payload, want, m->len)) {
		snprintf(s->error, sizeof(s->error), "offset %lld: got %.*s, expected %s at %d",
			 (long long)m->offset, (int)m->len, (const char *)m->payload, want, s->next);
		return 1;
	}
	s->next++;
	return 0;
}

void c_expect_seq(const h_broker *b, const char *topic, int n)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	seq_state s = {0};
	long got = c_consume(c, topic, 0, RD_KAFKA_OFFSET_BEGINNING, n, h_scaled_ms(30000), seq_cb,
			     &s);
	rd_kafka_destroy(c);
	ck_assert_msg(!s.error[0], "%s", s.error);
	ck_assert_msg(got == n && s.next == n, "read %ld of %d records", got, n);
}
