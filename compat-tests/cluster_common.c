/*
 * cluster_common.c - shared helpers of the cluster tests (see
 * cluster_common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/cluster_common.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-tests/kmsg.h"
#include "compat-tests/logcheck.h"
#include "compat-tests/wire.h"

/* The program's ZooKeeper, started by cc_run_suite in the parent process
 * and inherited (as a pointer to the parent's record) by the forked tests,
 * which only connect to it. */
static h_zk *shared_zk;
/* cc_run_suite_net's network, made in the parent like shared_zk. */
static hn_net *shared_net;

/* ---- runner and environment ---- */

static int run_suite(Suite *s, int brokers, const char *const *clients)
{
	if (h_init() < 0)
		return 99;
	if (access(h_samsa_bin(), X_OK) < 0) {
		fprintf(stderr, "cluster: broker binary %s: %s (set SAMSA_BIN)\n", h_samsa_bin(),
			strerror(errno));
		h_fini();
		return 99;
	}
	if (brokers > 0) {
		char why[512];
		if (hn_available(why, sizeof(why)) < 0) {
			printf("SKIP: network namespaces cannot be made here: %s\n", why);
			fflush(stdout);
			h_fini();
			return 77;
		}
		const char *names[HN_MAX_NODES + 1];
		char bn[HC_MAX_BROKERS][8];
		int k = 0;
		names[k++] = "zk";
		for (int id = 1; id <= brokers && k < HN_MAX_NODES; id++) {
			snprintf(bn[id - 1], sizeof(bn[0]), "b%d", id);
			names[k++] = bn[id - 1];
		}
		for (int i = 0; clients && clients[i] && k < HN_MAX_NODES; i++)
			names[k++] = clients[i];
		names[k] = NULL;
		shared_net = hn_new(names, why, sizeof(why));
		if (!shared_net) {
			fprintf(stderr, "cluster: no network of namespaces: %s\n", why);
			h_fini();
			return 99;
		}
		char desc[256] = "";
		for (int i = 0; i <= shared_net->n; i++) {
			size_t l = strlen(desc);
			snprintf(desc + l, sizeof(desc) - l, "%s%s=%s", i ? " " : "",
				 shared_net->node[i].name, shared_net->node[i].ip);
		}
		fprintf(stderr, "cluster: network of namespaces on bridge %s: %s\n",
			shared_net->bridge, desc);
	}
	shared_zk = h_zk_new();
	int zn = shared_net ? hn_find(shared_net, "zk") : -1;
	if (shared_zk && shared_net &&
	    h_zk_set_net(shared_zk, hn_ns(shared_net, zn), hn_ip(shared_net, zn)) < 0) {
		h_zk_free(shared_zk);
		shared_zk = NULL;
	}
	if (!shared_zk || h_zk_start(shared_zk) < 0) {
		fprintf(stderr, "cluster: the shared ZooKeeper server did not start\n");
		h_zk_free(shared_zk);
		shared_zk = NULL;
		h_fini(); /* also removes the network (h_at_fini) */
		return 99;
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed) {
		fprintf(stderr, "\ncluster: broker logs of this run (tails):\n");
		h_dump_all_logs(stderr, 40);
		h_zk_dump_log(shared_zk, stderr, 20);
	}
	h_zk_free(shared_zk);
	shared_zk = NULL;
	hn_free(shared_net);
	shared_net = NULL;
	h_fini();
	return failed ? 1 : 0;
}

int cc_run_suite(Suite *s)
{
	return run_suite(s, 0, NULL);
}

int cc_run_suite_net(Suite *s, int brokers, const char *const *clients)
{
	if (brokers < 1 || brokers > HC_MAX_BROKERS)
		return 99;
	return run_suite(s, brokers, clients);
}

h_zk *cc_shared_zk(void)
{
	return shared_zk;
}

hn_net *cc_shared_net(void)
{
	return shared_net;
}

static bool env_set(const char *name)
{
	const char *s = getenv(name);
	return s && *s && strcmp(s, "0") != 0;
}

bool cc_quick(void)
{
	return env_set("SAMSA_CLUSTER_QUICK");
}

bool cc_long(void)
{
	return env_set("SAMSA_CLUSTER_LONG");
}

long cc_env_long(const char *name, long def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	return *end ? def : v;
}

/* h_now_ms() of the last cc_start, for cc_log */
static long long log_t0;

void cc_log(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[%7.3f] %s\n", (double)(h_now_ms() - log_t0) / 1000.0, msg);
}

void cc_start(hc_cluster *c, const hc_options *o, bool own_zk)
{
	log_t0 = h_now_ms();
	hc_options opt;
	if (o)
		opt = *o;
	else
		memset(&opt, 0, sizeof(opt));
	if (!own_zk && !opt.zk)
		opt.zk = shared_zk;
	if (!opt.net && shared_net)
		opt.net = shared_net;
	if (opt.net)
		ck_assert_msg(hn_heal_all(opt.net) == 0, "the partitions of a test before could "
			      "not be healed");
	ck_assert_msg(hc_start(c, &opt) == 0, "the cluster did not form (logs above)");
	cc_log("cluster of %d formed (chroot %s, bootstrap %s)", c->n, c->chroot, c->bootstrap);
}

void cc_finish(hc_cluster *c)
{
	cc_log("stopping the cluster");
	if (c->net)
		hn_heal_all(c->net);
	int bad = hc_stop(c, 30000);
	cc_log("stopped");
	hc_free(c);
	ck_assert_msg(bad == 0, "%d broker(s) did not exit 0 on SIGTERM (logs above)", bad);
}

rd_kafka_conf_t *cc_conf(const hc_cluster *c)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	c_set(conf, "bootstrap.servers", c->bootstrap);
	c_set(conf, "broker.address.family", "v4");
	c_set(conf, "log.connection.close", "false");
	c_set(conf, "client.id", "samsa-cluster");
	/* a killed broker comes back within seconds: look again soon */
	c_set(conf, "reconnect.backoff.ms", "50");
	c_set(conf, "reconnect.backoff.max.ms", "500");
	const char *debug = getenv("SAMSA_RDKAFKA_DEBUG");
	if (debug && *debug)
		c_set(conf, "debug", debug);
	return conf;
}

/* ---- topics and leaders ---- */

static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t type,
				    int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	while (h_now_ms() < deadline) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 200);
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == type)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	return NULL;
}

void cc_create_topic(hc_cluster *c, const char *topic, int npart, int rf,
		     const int32_t *assignment, const char *const *configs)
{
	char err[512];
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, cc_conf(c));
	rd_kafka_NewTopic_t *nt =
	    rd_kafka_NewTopic_new(topic, npart, assignment ? -1 : rf, err, sizeof(err));
	ck_assert_msg(nt != NULL, "NewTopic %s: %s", topic, err);
	for (int p = 0; assignment && p < npart; p++)
		ck_assert_msg(rd_kafka_NewTopic_set_replica_assignment(
				  nt, p, (int32_t *)assignment + (size_t)p * (size_t)rf, (size_t)rf,
				  err, sizeof(err)) == 0,
			      "replica assignment of %s-%d: %s", topic, p, err);
	for (int i = 0; configs && configs[i]; i += 2)
		ck_assert(rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1]) == 0);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, h_scaled_ms(20000), err, sizeof(err));
	rd_kafka_AdminOptions_set_request_timeout(opt, h_scaled_ms(30000), err, sizeof(err));
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	rd_kafka_event_t *ev = admin_wait(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, h_scaled_ms(40000));
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	ck_assert_msg(ev != NULL, "CreateTopics %s: no result", topic);
	rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
	if (e) {
		snprintf(err, sizeof(err), "%s", rd_kafka_event_error_string(ev));
	} else {
		size_t n;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		    rd_kafka_event_CreateTopics_result(ev), &n);
		ck_assert_msg(n == 1, "CreateTopics %s: %zu results", topic, n);
		e = rd_kafka_topic_result_error(tr[0]);
		const char *s = rd_kafka_topic_result_error_string(tr[0]);
		snprintf(err, sizeof(err), "%s", s ? s : "");
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "CreateTopics %s (%d partitions, RF %d): %s (%s)",
		      topic, npart, rf, rd_kafka_err2name(e), err);
	cc_wait_topic(c, topic, npart, 30000);
}

typedef struct topic_arg {
	const char *topic;
	int npart;
	char why[1400];
} topic_arg;

static bool topic_cond(hc_cluster *c, void *arg)
{
	topic_arg *a = arg;
	hc_state st[64];
	int np = a->npart < 64 ? a->npart : 64;
	for (int p = 0; p < np; p++) {
		int rc = hc_zk_state(c, a->topic, p, &st[p]);
		if (rc != CTL_ZK_OK || st[p].leader < 0) {
			snprintf(a->why, sizeof(a->why), "state of %s-%d: %s %s", a->topic, p,
				 ctl_zk_strerror(rc), rc == CTL_ZK_OK ? st[p].json : "");
			return false;
		}
	}
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id) || c->paused[id])
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0) {
			snprintf(a->why, sizeof(a->why), "broker %d: no Metadata", id);
			return false;
		}
		const hc_md_topic *t = hc_md_find(&md, a->topic);
		bool ok = t && !t->err && t->npartitions == a->npart;
		if (!ok)
			snprintf(a->why, sizeof(a->why), "broker %d: topic %s error %d, %d partitions",
				 id, a->topic, t ? t->err : -1, t ? t->npartitions : -1);
		for (int p = 0; ok && p < np; p++) {
			const hc_md_partition *mp = hc_md_part(t, p);
			if (!mp || mp->err || mp->leader != st[p].leader ||
			    mp->leader_epoch != st[p].leader_epoch) {
				snprintf(a->why, sizeof(a->why),
					 "broker %d: %s-%d leader %d epoch %d error %d; the state znode "
					 "says %s",
					 id, a->topic, p, mp ? mp->leader : -2, mp ? mp->leader_epoch : -2,
					 mp ? mp->err : -2, st[p].json);
				ok = false;
			}
		}
		hc_md_free(&md);
		if (!ok)
			return false;
	}
	return true;
}

void cc_wait_topic(hc_cluster *c, const char *topic, int npart, int timeout_ms)
{
	topic_arg a = {.topic = topic, .npart = npart};
	ck_assert_msg(hc_wait(c, timeout_ms, topic_cond, &a) >= 0,
		      "topic %s not ready on every broker after %d ms: %s", topic,
		      h_scaled_ms(timeout_ms), a.why);
}

int cc_leader(hc_cluster *c, const char *topic, int32_t partition, int32_t *epoch)
{
	hc_state st;
	int rc = hc_zk_state(c, topic, partition, &st);
	ck_assert_msg(rc == CTL_ZK_OK, "state znode of %s-%d: %s", topic, (int)partition,
		      ctl_zk_strerror(rc));
	if (epoch)
		*epoch = st.leader_epoch;
	return st.leader;
}

typedef struct leader_arg {
	const char *topic;
	int32_t partition;
	int not_this;
	int leader;
	char why[1400];
} leader_arg;

static bool leader_cond(hc_cluster *c, void *arg)
{
	leader_arg *a = arg;
	hc_state st;
	int rc = hc_zk_state(c, a->topic, a->partition, &st);
	if (rc != CTL_ZK_OK || st.leader < 0 || st.leader == a->not_this) {
		snprintf(a->why, sizeof(a->why), "state znode: %s",
			 rc == CTL_ZK_OK ? st.json : ctl_zk_strerror(rc));
		return false;
	}
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id) || c->paused[id])
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0) {
			snprintf(a->why, sizeof(a->why), "broker %d: no Metadata", id);
			return false;
		}
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), a->partition);
		int l = p ? p->leader : -2;
		hc_md_free(&md);
		if (l != st.leader) {
			snprintf(a->why, sizeof(a->why), "broker %d's Metadata names leader %d, the "
				 "state znode %s", id, l, st.json);
			return false;
		}
	}
	a->leader = st.leader;
	return true;
}

int cc_wait_leader(hc_cluster *c, const char *topic, int32_t partition, int not_this,
		   int timeout_ms)
{
	leader_arg a = {.topic = topic, .partition = partition, .not_this = not_this};
	ck_assert_msg(hc_wait(c, timeout_ms, leader_cond, &a) >= 0,
		      "%s-%d: no leader (other than %d) agreed on after %d ms: %s", topic,
		      (int)partition, not_this, h_scaled_ms(timeout_ms), a.why);
	return a.leader;
}

/* ---- the producer thread ---- */

cc_rec *cc_producer_rec(cc_producer *p, long i)
{
	if (i < 0 || i >= (long)CC_CHUNK * CC_CHUNKS)
		return NULL;
	cc_rec *chunk = p->chunks[i / CC_CHUNK];
	return chunk ? &chunk[i % CC_CHUNK] : NULL;
}

static void producer_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	cc_producer *p = opaque;
	long i = (long)(intptr_t)m->_private - 1;
	cc_rec *r = cc_producer_rec(p, i);
	if (!r)
		return;
	int64_t now = h_now_ms();
	r->done_ms = now;
	r->order = p->outcomes++;
	r->err = m->err;
	if (!m->err) {
		r->state = CC_ACKED;
		r->offset = m->offset;
		atomic_fetch_add(&p->nacked, 1);
		atomic_store(&p->last_ack_ms, now);
		if (r->sent_ms > atomic_load(&p->last_ack_sent_ms))
			atomic_store(&p->last_ack_sent_ms, r->sent_ms);
		if (r->sent_ms > atomic_load(&p->part_ack_sent_ms[r->partition]))
			atomic_store(&p->part_ack_sent_ms[r->partition], r->sent_ms);
		return;
	}
	if (rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_NOT_PERSISTED) {
		r->state = CC_FAILED;
		atomic_fetch_add(&p->nfailed, 1);
	} else {
		r->state = CC_INDETERMINATE;
		atomic_fetch_add(&p->nindeterminate, 1);
	}
	if (!p->first_error[0])
		snprintf(p->first_error, sizeof(p->first_error), "%d-%ld to partition %d: %s", p->id,
			 i, (int)r->partition, rd_kafka_err2name(m->err));
}

static void producer_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	cc_producer *p = opaque;
	if (err == RD_KAFKA_RESP_ERR__FATAL && !p->fatal[0]) {
		char buf[256];
		rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
		snprintf(p->fatal, sizeof(p->fatal), "%s: %s (%s)", rd_kafka_err2name(orig), buf,
			 reason);
	}
	/* Other errors (connections refused while a broker is down) are what
	 * the tests cause; the outcomes tell whether they mattered. */
}

static void *producer_main(void *arg)
{
	cc_producer *p = arg;
	char val[64];
	while (!atomic_load(&p->stop) && !p->fatal[0]) {
		int64_t now = h_now_ms();
		long due = (long)((now - p->start_ms) * p->rate / 1000) + 1;
		long sent = atomic_load(&p->nsent);
		for (int burst = 0; sent < due && burst < 1000; burst++) {
			cc_rec *r = cc_producer_rec(p, sent);
			if (!r) {
				if (sent >= (long)CC_CHUNK * CC_CHUNKS)
					break;
				p->chunks[sent / CC_CHUNK] = calloc(CC_CHUNK, sizeof(cc_rec));
				r = cc_producer_rec(p, sent);
				if (!r)
					break;
			}
			int32_t part = (int32_t)(sent % p->npart);
			snprintf(val, sizeof(val), "%d-%ld", p->id, sent);
			r->partition = part;
			r->sent_ms = h_now_ms();
			r->state = CC_PENDING;
			r->offset = -1;
			rd_kafka_resp_err_t e = rd_kafka_producev(
			    p->rk, RD_KAFKA_V_TOPIC(p->topic), RD_KAFKA_V_PARTITION(part),
			    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			    RD_KAFKA_V_VALUE(val, strlen(val)),
			    RD_KAFKA_V_OPAQUE((void *)(intptr_t)(sent + 1)), RD_KAFKA_V_END);
			if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break;
			if (e) {
				snprintf(p->fatal, sizeof(p->fatal), "rd_kafka_producev: %s",
					 rd_kafka_err2name(e));
				break;
			}
			sent++;
			atomic_store(&p->nsent, sent);
		}
		rd_kafka_poll(p->rk, 5);
	}
	rd_kafka_flush(p->rk, p->flush_ms > 0 ? p->flush_ms : 30000);
	if (rd_kafka_outq_len(p->rk) > 0) {
		rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		for (int i = 0; i < 20 && rd_kafka_outq_len(p->rk) > 0; i++)
			rd_kafka_poll(p->rk, 100);
	}
	rd_kafka_poll(p->rk, 0);
	return NULL;
}

cc_producer *cc_producer_start(hc_cluster *c, const char *topic, int npart, int id, int rate,
			       const char *const *kv)
{
	cc_producer *p = calloc(1, sizeof(*p));
	ck_assert_ptr_nonnull(p);
	snprintf(p->topic, sizeof(p->topic), "%s", topic);
	ck_assert_msg(npart >= 1 && npart <= CC_MAX_PARTITIONS, "%d partitions", npart);
	p->npart = npart;
	p->id = id;
	p->rate = rate > 0 ? rate : 500;
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set(conf, "acks", "all");
	c_set(conf, "enable.idempotence", "true");
	c_set(conf, "request.timeout.ms", "5000");
	c_set(conf, "message.timeout.ms", "30000");
	c_set(conf, "linger.ms", "5");
	c_set(conf, "retry.backoff.ms", "100");
	c_set_all(conf, kv);
	char buf[16];
	size_t sz = sizeof(buf);
	p->idempotent = rd_kafka_conf_get(conf, "enable.idempotence", buf, &sz) == RD_KAFKA_CONF_OK &&
			strcmp(buf, "true") == 0;
	rd_kafka_conf_set_opaque(conf, p);
	rd_kafka_conf_set_dr_msg_cb(conf, producer_dr);
	rd_kafka_conf_set_error_cb(conf, producer_error);
	p->rk = c_new(RD_KAFKA_PRODUCER, conf);
	p->start_ms = h_now_ms();
	ck_assert_msg(pthread_create(&p->thread, NULL, producer_main, p) == 0, "pthread_create");
	p->started = true;
	return p;
}

void cc_producer_stop(cc_producer *p, int flush_ms)
{
	if (!p->started)
		return;
	p->flush_ms = h_scaled_ms(flush_ms);
	atomic_store(&p->stop, true); /* publishes flush_ms to the thread */
	pthread_join(p->thread, NULL);
	p->started = false;
	p->end_ms = h_now_ms();
}

void cc_producer_feed(cc_producer *p, chk *h)
{
	long n = atomic_load(&p->nsent);
	long *by_order = malloc(((size_t)n + 1) * sizeof(*by_order));
	ck_assert_ptr_nonnull(by_order);
	for (long k = 0; k < n; k++)
		by_order[k] = -1;
	long late = 0;
	for (long i = 0; i < n; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if (r->state != CC_PENDING && r->order >= 0 && r->order < n)
			by_order[r->order] = i;
	}
	char val[64];
	for (long k = 0; k < n; k++) {
		long i = by_order[k];
		if (i < 0)
			continue;
		cc_rec *r = cc_producer_rec(p, i);
		snprintf(val, sizeof(val), "%d-%ld", p->id, i);
		chk_outcome o = r->state == CC_ACKED	 ? CHK_ACKED
				: r->state == CC_FAILED ? CHK_FAILED
							: CHK_INDETERMINATE;
		ck_assert_msg(chk_write(h, p->id, r->partition, val, o, r->offset, r->done_ms) == 0,
			      "checker refused %s", val);
	}
	for (long i = 0; i < n; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if (r->state != CC_PENDING)
			continue;
		snprintf(val, sizeof(val), "%d-%ld", p->id, i);
		ck_assert(chk_write(h, p->id, r->partition, val, CHK_INDETERMINATE, -1, 0) == 0);
		late++;
	}
	if (late)
		fprintf(stderr, "cluster: producer %d: %ld records without an outcome\n", p->id, late);
	free(by_order);
}

long cc_producer_wait_ack_after(cc_producer *p, int32_t partition, int64_t t_ms, int timeout_ms)
{
	long long deadline = h_now_ms() + h_scaled_ms(timeout_ms);
	ck_assert(partition < p->npart);
	while (h_now_ms() < deadline) {
		int64_t sent = partition < 0 ? atomic_load(&p->last_ack_sent_ms)
					     : atomic_load(&p->part_ack_sent_ms[partition]);
		if (sent > t_ms)
			return (long)(h_now_ms() - t_ms);
		if (p->fatal[0])
			return -1;
		usleep(2000);
	}
	return -1;
}

long cc_producer_failover_ms(cc_producer *p, int32_t partition, int64_t t_ms)
{
	long n = atomic_load(&p->nsent);
	int64_t best = -1;
	for (long i = 0; i < n; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if (r->state == CC_ACKED && r->sent_ms > t_ms &&
		    (partition < 0 || r->partition == partition) && (best < 0 || r->done_ms < best))
			best = r->done_ms;
	}
	return best < 0 ? -1 : (long)(best - t_ms);
}

void cc_producer_free(cc_producer *p)
{
	if (!p)
		return;
	if (p->started)
		cc_producer_stop(p, 1000);
	rd_kafka_destroy(p->rk);
	for (int i = 0; i < CC_CHUNKS; i++)
		free(p->chunks[i]);
	free(p);
}

/* ---- figures of a fault ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void cc_producer_window(cc_producer *p, int32_t partition, int64_t from_ms, int64_t to_ms,
			cc_window *w)
{
	memset(w, 0, sizeof(*w));
	w->from_ms = from_ms;
	w->to_ms = to_ms;
	long n = atomic_load(&p->nsent);
	int64_t *t = malloc(((size_t)n + 1) * sizeof(*t));
	ck_assert_ptr_nonnull(t);
	long k = 0;
	int64_t next = -1; /* the first acknowledgement after to_ms */
	for (long i = 0; i < n; i++) {
		cc_rec *r = cc_producer_rec(p, i);
		if ((partition >= 0 && r->partition != partition) || r->state == CC_PENDING ||
		    r->done_ms < from_ms)
			continue;
		if (r->done_ms > to_ms) {
			if (r->state == CC_ACKED && (next < 0 || r->done_ms < next))
				next = r->done_ms;
			continue;
		}
		if (r->state == CC_ACKED)
			t[k++] = r->done_ms;
		else
			w->errors++;
	}
	qsort(t, (size_t)k, sizeof(*t), cmp_i64);
	w->acked = k;
	int64_t prev = from_ms;
	for (long i = 0; i < k; i++) {
		if (t[i] - prev > w->longest_gap_ms)
			w->longest_gap_ms = t[i] - prev;
		prev = t[i];
	}
	int64_t end = next >= 0 ? next : to_ms;
	if (end - prev > w->longest_gap_ms)
		w->longest_gap_ms = end - prev;
	free(t);
}

void cc_print_window(const char *prog, const char *fault, const char *what,
		     const cc_window *w)
{
	if (fault)
		printf("FIGURE fault=%s acked_during=%ld longest_no_ack_ms=%" PRId64 " lasted_ms=%"
		       PRId64 " errors=%ld prog=%s what=\"%s\"\n", fault, w->acked,
		       w->longest_gap_ms, w->to_ms - w->from_ms, w->errors, prog, what);
	else
		printf("%s: %s: lasted %" PRId64 " ms; %ld records acknowledged meanwhile, longest "
		       "time without a successful produce %" PRId64 " ms, %ld delivery errors\n",
		       prog, what, w->to_ms - w->from_ms, w->acked, w->longest_gap_ms, w->errors);
	fflush(stdout);
	cc_log("%s: %ld acknowledged in %" PRId64 " ms, longest gap %" PRId64 " ms", what,
	       w->acked, w->to_ms - w->from_ms, w->longest_gap_ms);
}

void cc_producer_verify(hc_cluster *c, cc_producer *p, const char *topic, int npart,
			const chk_options *opt, chk_report *r, const char *what)
{
	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "%s: the producer hit a fatal error: %s", what, p->fatal);
	long errors = atomic_load(&p->nfailed) + atomic_load(&p->nindeterminate);
	fprintf(stderr, "%s: %ld records sent, %ld acknowledged, %ld delivery reports with an "
		"error\n", what, atomic_load(&p->nsent), atomic_load(&p->nacked), errors);
	ck_assert_msg(errors == 0 && atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%s: %ld of %ld records acknowledged, %ld failed, %ld indeterminate (an "
		      "error the client did not retry by itself); first error: %s",
		      what, atomic_load(&p->nacked), atomic_load(&p->nsent),
		      atomic_load(&p->nfailed), atomic_load(&p->nindeterminate), p->first_error);
	chk *h = chk_new();
	ck_assert_ptr_nonnull(h);
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(c, topic, npart, h);
	chk_options def = {.idempotent = true};
	cc_check(h, opt ? opt : &def, r, what);
	chk_free(h);
}

/* ---- reading ---- */

typedef struct read_state {
	chk *h;
	int32_t partition;
	int64_t last; /* the last offset to read (high watermark - 1) */
	long n;
	char error[256];
} read_state;

static int read_cb(const rd_kafka_message_t *m, void *opaque)
{
	read_state *s = opaque;
	char val[128];
	size_t len = m->len < sizeof(val) - 1 ? m->len : sizeof(val) - 1;
	if (m->payload)
		memcpy(val, m->payload, len);
	else
		len = 0;
	val[len] = 0;
	if (s->h && chk_read(s->h, s->partition, m->offset, val) < 0)
		snprintf(s->error, sizeof(s->error), "checker out of memory");
	s->n++;
	return m->offset >= s->last;
}

long cc_read_all(hc_cluster *c, const char *topic, int npart, chk *h)
{
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set(conf, "enable.auto.commit", "false");
	c_set(conf, "enable.auto.offset.store", "false");
	c_set(conf, "enable.partition.eof", "false");
	c_set(conf, "fetch.wait.max.ms", "100");
	rd_kafka_t *rk = c_new(RD_KAFKA_CONSUMER, conf);
	long total = 0;
	for (int p = 0; p < npart; p++) {
		int64_t lo = -1, hi = -1;
		rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
		long long deadline = h_now_ms() + h_scaled_ms(30000);
		do {
			e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, h_scaled_ms(5000));
			if (e)
				usleep(200 * 1000);
		} while (e && h_now_ms() < deadline);
		ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "watermarks of %s-%d: %s", topic, p,
			      rd_kafka_err2name(e));
		ck_assert_msg(lo == 0, "%s-%d starts at offset %" PRId64 ", not 0", topic, p, lo);
		if (hi <= 0)
			continue;
		read_state s = {.h = h, .partition = p, .last = hi - 1};
		c_consume(rk, topic, p, 0, hi, h_scaled_ms(120000), read_cb, &s);
		ck_assert_msg(!s.error[0], "%s", s.error);
		total += s.n;
	}
	rd_kafka_destroy(rk);
	return total;
}

long cc_read_to_eof(hc_cluster *c, const char *topic, int npart, bool committed,
		    cc_record_fn fn, void *opaque)
{
	rd_kafka_conf_t *conf = cc_conf(c);
	c_set(conf, "enable.auto.commit", "false");
	c_set(conf, "enable.auto.offset.store", "false");
	c_set(conf, "enable.partition.eof", "true");
	c_set(conf, "fetch.wait.max.ms", "100");
	c_set(conf, "isolation.level", committed ? "read_committed" : "read_uncommitted");
	rd_kafka_t *rk = c_new(RD_KAFKA_CONSUMER, conf);
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	ck_assert_ptr_nonnull(rkt);
	long total = 0;
	char val[128];
	for (int p = 0; p < npart; p++) {
		ck_assert_msg(rd_kafka_consume_start(rkt, p, 0) == 0, "consume_start %s-%d: %s", topic,
			      p, rd_kafka_err2str(rd_kafka_last_error()));
		bool eof = false;
		long long deadline = h_now_ms() + h_scaled_ms(60000);
		while (!eof) {
			ck_assert_msg(h_now_ms() < deadline, "%s-%d: no end of partition after %d ms",
				      topic, p, h_scaled_ms(60000));
			rd_kafka_message_t *batch[500];
			ssize_t got = rd_kafka_consume_batch(rkt, p, 200, batch, 500);
			ck_assert_msg(got >= 0, "consume %s-%d: %s", topic, p,
				      rd_kafka_err2str(rd_kafka_last_error()));
			for (ssize_t i = 0; i < got; i++) {
				rd_kafka_message_t *m = batch[i];
				if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
					eof = true;
				} else if (m->err) {
					/* transient errors during a fail-over end in a retry */
					fprintf(stderr, "cluster: consume %s-%d: %s\n", topic, p,
						rd_kafka_err2name(m->err));
				} else if (!eof) {
					size_t len = m->len < sizeof(val) - 1 ? m->len : sizeof(val) - 1;
					if (m->payload)
						memcpy(val, m->payload, len);
					val[m->payload ? len : 0] = 0;
					if (fn)
						fn(p, m->offset, val, opaque);
					total++;
				}
				rd_kafka_message_destroy(m);
			}
		}
		rd_kafka_consume_stop(rkt, p);
	}
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return total;
}

void cc_check(chk *h, const chk_options *opt, chk_report *r, const char *what)
{
	chk_check(h, opt, r);
	fprintf(stderr, "%s:\n", what);
	chk_report_print(r, stderr);
	ck_assert_msg(r->ok,
		      "%s: the checker found lost %ld, misplaced %ld, divergent %ld, non-monotonic "
		      "%ld, failed-but-read %ld, duplicated %ld, unknown %ld; first: %s",
		      what, r->lost, r->misplaced, r->divergent, r->nonmonotonic, r->failed_read,
		      r->duplicated, r->unknown, r->nexamples ? r->examples[0] : "-");
}

/* ---- raw requests ---- */

int cc_connect(hc_cluster *c, int id)
{
	ck_assert_msg(hc_alive(c, id), "broker %d is not running", id);
	int fd = w_connect_host(c->b[id]->host, c->b[id]->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect to broker %d (%s)", id, c->b[id]->bootstrap);
	return fd;
}

int16_t cc_raw_produce(hc_cluster *c, int id, const char *topic, int32_t partition,
		       int16_t acks, int n, int first, int64_t *base_offset)
{
	k_wbuf *batch = calloc(1, sizeof(*batch)), *body = calloc(1, sizeof(*body)); /* 64 KiB each */
	ck_assert(batch && body);
	k_build_batch(batch, n, first, 1700000000000LL, 0);
	k_produce_body(body, topic, partition, acks, batch);
	free(batch);
	int fd = cc_connect(c, id);
	*base_offset = -1;
	int16_t err = 0;
	if (acks == 0) {
		k_send(fd, 0, 9, body);
		usleep(50 * 1000); /* let the broker read it before the close */
	} else {
		k_rbuf r;
		/* the request's own timeout is 10 s: wait longer than that */
		int32_t cid = k_send(fd, 0, 9, body);
		uint8_t *resp = k_recv(fd, cid, &r, h_scaled_ms(15000));
		err = k_produce_parse(&r, base_offset);
		free(resp);
	}
	close(fd);
	free(body);
	return err;
}

static uint64_t rd_uvarint(const uint8_t *p, size_t len, size_t *pos, bool *ok)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*pos >= len) {
			*ok = false;
			return 0;
		}
		uint8_t b = p[(*pos)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	*ok = false;
	return 0;
}

static int64_t rd_varint(const uint8_t *p, size_t len, size_t *pos, bool *ok)
{
	uint64_t u = rd_uvarint(p, len, pos, ok);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static int64_t get64(const uint8_t *p)
{
	return (int64_t)((uint64_t)(uint32_t)w_get32(p) << 32 | (uint32_t)w_get32(p + 4));
}

/* The records of the uncompressed v2 batches in recs[0..len) into out. */
static void parse_records(const uint8_t *recs, int64_t len, cc_fetched *out, int cap, int *n)
{
	int64_t pos = 0;
	while (pos + 61 <= len) {
		const uint8_t *b = recs + pos;
		int64_t base = get64(b);
		int32_t blen = w_get32(b + 8);
		if (blen < 49 || pos + 12 + blen > len)
			break; /* a partial batch at the end of a fetch */
		int32_t epoch = w_get32(b + 12);
		int16_t attr = w_get16(b + 21);
		int32_t count = w_get32(b + 57);
		if (!(attr & 0x20) && (attr & 0x07) == 0) { /* not control, uncompressed */
			size_t rp = 61, rlen = (size_t)blen + 12;
			bool ok = true;
			for (int32_t k = 0; k < count && ok; k++) {
				int64_t reclen = rd_varint(b, rlen, &rp, &ok);
				size_t start = rp;
				if (!ok || reclen < 0 || start + (size_t)reclen > rlen)
					break;
				rp++; /* attributes */
				rd_varint(b, rlen, &rp, &ok); /* timestamp delta */
				int64_t odelta = rd_varint(b, rlen, &rp, &ok);
				int64_t klen = rd_varint(b, rlen, &rp, &ok);
				if (klen > 0)
					rp += (size_t)klen;
				int64_t vlen = rd_varint(b, rlen, &rp, &ok);
				if (ok && *n < cap) {
					cc_fetched *f = &out[(*n)++];
					f->offset = base + odelta;
					f->leader_epoch = epoch;
					size_t vl = vlen < 0 ? 0 : (size_t)vlen;
					if (vl > sizeof(f->value) - 1)
						vl = sizeof(f->value) - 1;
					if (rp + vl <= rlen)
						memcpy(f->value, b + rp, vl);
					f->value[vl] = 0;
				}
				rp = start + (size_t)reclen;
			}
		}
		pos += 12 + blen;
	}
}

int16_t cc_raw_fetch(hc_cluster *c, int id, const char *topic, int32_t partition,
		     int64_t offset, int64_t *hw, cc_fetched *out, int cap, int *n)
{
	k_wbuf *body = calloc(1, sizeof(*body));
	ck_assert_ptr_nonnull(body);
	k_fetch_body(body, topic, partition, offset, 0, 0);
	int fd = cc_connect(c, id);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, body, &r);
	free(body);
	const uint8_t *recs;
	int64_t rlen;
	*n = 0;
	int16_t err = k_fetch_parse(&r, hw, &recs, &rlen);
	if (!err && recs)
		parse_records(recs, rlen, out, cap, n);
	free(resp);
	close(fd);
	return err;
}

int64_t cc_log_end_offset(hc_cluster *c, int id, const char *topic, int32_t partition)
{
	char dir[PATH_MAX];
	hc_partition_dir(c, id, topic, partition, dir, sizeof(dir));
	lc_result r;
	/* a running broker may be in the middle of an append: look again */
	for (int i = 0; i < 20; i++) {
		if (lc_check_dir(dir, NULL, &r) == 0)
			return r.next_offset;
		usleep(50 * 1000);
	}
	ck_abort_msg("replica %s of broker %d does not verify: %s", dir, id, r.error);
	return -1;
}

/* The batches of a partition dir: every .log file in name order, read
 * whole. */
typedef struct batches {
	uint8_t *data; /* all .log files concatenated */
	size_t len;
	size_t *pos;   /* start of each batch in data */
	int n, cap;
} batches;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool read_batches(const char *dir, batches *out, char *why, size_t cap)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(why, cap, "%s: %s", dir, strerror(errno));
		return false;
	}
	char *names[4096];
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nn < 4096) {
		size_t l = strlen(e->d_name);
		if (l == 24 && strcmp(e->d_name + 20, ".log") == 0)
			names[nn++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof(*names), cmp_name);
	bool ok = true;
	for (int i = 0; i < nn; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "rb");
		struct stat st;
		if (!f || fstat(fileno(f), &st) < 0) {
			if (f)
				fclose(f);
			snprintf(why, cap, "%s: %s", path, strerror(errno));
			ok = false;
			break;
		}
		uint8_t *nd = realloc(out->data, out->len + (size_t)st.st_size + 1);
		if (!nd) {
			fclose(f);
			ok = false;
			break;
		}
		out->data = nd;
		size_t got = fread(out->data + out->len, 1, (size_t)st.st_size, f);
		fclose(f);
		size_t start = out->len, end = out->len + got;
		size_t p = start;
		while (p + 12 <= end) {
			int32_t blen = w_get32(out->data + p + 8);
			if (blen <= 0 || p + 12 + (size_t)blen > end)
				break; /* a torn tail (a broker still writing) */
			if (out->n == out->cap) {
				out->cap = out->cap ? out->cap * 2 : 256;
				out->pos = realloc(out->pos, (size_t)out->cap * sizeof(*out->pos));
			}
			out->pos[out->n++] = p;
			p += 12 + (size_t)blen;
		}
		out->len = p;
	}
	for (int i = 0; i < nn; i++)
		free(names[i]);
	return ok;
}

static size_t batch_len(const batches *b, int i)
{
	return 12 + (size_t)w_get32(b->data + b->pos[i] + 8);
}

bool cc_logs_equal(hc_cluster *c, const char *topic, int32_t partition, const int *ids, int n,
		   char *why, size_t cap)
{
	batches ref, other;
	char dir[PATH_MAX];
	hc_partition_dir(c, ids[0], topic, partition, dir, sizeof(dir));
	if (!read_batches(dir, &ref, why, cap))
		return false;
	bool equal = true;
	for (int k = 1; k < n && equal; k++) {
		hc_partition_dir(c, ids[k], topic, partition, dir, sizeof(dir));
		if (!read_batches(dir, &other, why, cap)) {
			equal = false;
			break;
		}
		int m = ref.n < other.n ? ref.n : other.n;
		for (int i = 0; i < m && equal; i++) {
			const uint8_t *x = ref.data + ref.pos[i], *y = other.data + other.pos[i];
			size_t lx = batch_len(&ref, i), ly = batch_len(&other, i);
			if (lx != ly || memcmp(x, y, lx) != 0) {
				snprintf(why, cap,
					 "batch %d differs: broker %d has base offset %" PRId64
					 " epoch %d (%zu bytes), broker %d base offset %" PRId64
					 " epoch %d (%zu bytes)",
					 i, ids[0], get64(x), w_get32(x + 12), lx, ids[k], get64(y),
					 w_get32(y + 12), ly);
				equal = false;
			}
		}
		if (equal && ref.n != other.n) {
			snprintf(why, cap, "broker %d has %d batches, broker %d has %d", ids[0], ref.n,
				 ids[k], other.n);
			equal = false;
		}
		free(other.data);
		free(other.pos);
	}
	free(ref.data);
	free(ref.pos);
	return equal;
}

int cc_replica_records(hc_cluster *c, int id, const char *topic, int32_t partition,
		       cc_fetched *out, int cap)
{
	char dir[PATH_MAX], why[512];
	hc_partition_dir(c, id, topic, partition, dir, sizeof(dir));
	batches b;
	ck_assert_msg(read_batches(dir, &b, why, sizeof(why)), "%s", why);
	int n = 0;
	for (int i = 0; i < b.n && n < cap; i++)
		parse_records(b.data + b.pos[i], (int64_t)batch_len(&b, i), out, cap, &n);
	free(b.data);
	free(b.pos);
	ck_assert_msg(n < cap, "%s: more than %d records", dir, cap - 1);
	return n;
}

int cc_epoch_checkpoint(hc_cluster *c, int id, const char *topic, int32_t partition,
			int32_t *epochs, int64_t *starts, int cap)
{
	char path[PATH_MAX];
	hc_partition_dir(c, id, topic, partition, path, sizeof(path) - 32);
	strcat(path, "/leader-epoch-checkpoint");
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int version = -1, count = -1, n = 0;
	if (fscanf(f, "%d %d", &version, &count) != 2 || version != 0 || count < 0) {
		fclose(f);
		return -1;
	}
	for (int i = 0; i < count; i++) {
		int32_t e;
		int64_t s;
		if (fscanf(f, "%" SCNd32 " %" SCNd64, &e, &s) != 2) {
			fclose(f);
			return -1;
		}
		if (n < cap) {
			epochs[n] = e;
			starts[n] = s;
			n++;
		}
	}
	fclose(f);
	return n;
}

int16_t cc_find_coordinator(hc_cluster *c, int id, const char *key, int8_t key_type,
			    int32_t *node)
{
	uint8_t body[512], req[1024];
	size_t kl = strlen(key);
	ck_assert(kl < 400);
	w_put16(body, (int16_t)kl);
	memcpy(body + 2, key, kl);
	body[2 + kl] = (uint8_t)key_type;
	int n = w_build_request(req, sizeof(req), 10, 1, 77, "samsa-cluster", body, kl + 3);
	ck_assert(n > 0);
	int fd = cc_connect(c, id);
	ck_assert_msg(w_send_all(fd, req, (size_t)n, h_scaled_ms(5000)) == WIRE_OK,
		      "FindCoordinator to broker %d: send", id);
	uint8_t *resp = NULL;
	int32_t len = 0;
	ck_assert_msg(w_recv_frame(fd, &resp, &len, 1 << 20, h_scaled_ms(10000)) == WIRE_OK,
		      "FindCoordinator to broker %d: no answer", id);
	close(fd);
	/* correlation id, throttle, error, message (nullable), node, host, port */
	ck_assert_msg(len >= 12 && w_get32(resp) == 77, "FindCoordinator v1: bad answer");
	int16_t err = w_get16(resp + 8);
	int16_t ml = w_get16(resp + 10);
	size_t p = 12 + (ml > 0 ? (size_t)ml : 0);
	ck_assert_msg((size_t)len >= p + 4, "FindCoordinator v1: short answer");
	*node = w_get32(resp + p);
	free(resp);
	return err;
}

int32_t cc_internal_partition(const char *key, int npart)
{
	int32_t h = 0;
	for (const unsigned char *s = (const unsigned char *)key; *s; s++)
		h = (int32_t)((uint32_t)h * 31u + *s);
	int32_t a = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
	return a % npart;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

void cc_median_max(long *v, int n, long *median, long *max)
{
	*median = *max = -1;
	if (n <= 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_long);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*max = v[n - 1];
}
