/*
 * cluster.c - ZooKeeper and N brokers in cluster mode for the tests (see
 * cluster.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/tjson.h"
#include "compat-tests/wire.h"

/* Names of chroots: the pid and a counter. */
static int chroot_seq;

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static bool valid_id(const hc_cluster *c, int id)
{
	return id >= 1 && id <= c->n && c->b[id];
}

/* ---- start and stop ---- */

static void make_bootstrap(hc_cluster *c)
{
	size_t len = 0;
	c->bootstrap[0] = 0;
	for (int id = 1; id <= c->n; id++) {
		int w = snprintf(c->bootstrap + len, sizeof(c->bootstrap) - len, "%s%s",
				 id > 1 ? "," : "", c->b[id]->bootstrap);
		if (w < 0 || (size_t)w >= sizeof(c->bootstrap) - len)
			break;
		len += (size_t)w;
	}
}

/* The override list of broker id: its id and zookeeper.connect, the
 * defaults, the cluster's, its own. Strings in store (n * 256 bytes). */
static int build_overrides(const hc_cluster *c, const hc_options *o, int id,
			   const char **out, int cap, char store[][256])
{
	static const char *const defaults[] = {HC_DEFAULTS};
	int n = 0;
	snprintf(store[0], 256, "broker.id=%d", id);
	snprintf(store[1], 256, "zookeeper.connect=%s", c->connect);
	out[n++] = store[0];
	out[n++] = store[1];
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]) && n < cap; i++)
		out[n++] = defaults[i];
	for (int i = 0; o && o->overrides && o->overrides[i]; i++) {
		if (n >= cap)
			return -1;
		out[n++] = o->overrides[i];
	}
	for (int i = 0; o && o->broker_overrides[id] && o->broker_overrides[id][i]; i++) {
		if (n >= cap)
			return -1;
		out[n++] = o->broker_overrides[id][i];
	}
	out[n] = NULL;
	return n;
}

int hc_start(hc_cluster *c, const hc_options *o)
{
	memset(c, 0, sizeof(*c));
	int n = o && o->brokers ? o->brokers : 3;
	if (n < 1 || n > HC_MAX_BROKERS) {
		fprintf(stderr, "cluster: %d brokers asked, 1..%d possible\n", n, HC_MAX_BROKERS);
		return -1;
	}
	c->net = o ? o->net : NULL;
	if (o && o->sasl_plain_user && o->sasl_plain_password) {
		snprintf(c->sasl_user, sizeof(c->sasl_user), "%s", o->sasl_plain_user);
		snprintf(c->sasl_password, sizeof(c->sasl_password), "%s", o->sasl_plain_password);
	}
	if (o && o->zk) {
		c->zk = o->zk;
	} else {
		c->zk = h_zk_new();
		int zn = c->net ? hn_find(c->net, "zk") : -1;
		if (c->zk && c->net &&
		    (zn < 0 || h_zk_set_net(c->zk, hn_ns(c->net, zn), hn_ip(c->net, zn)) < 0)) {
			fprintf(stderr, "cluster: the network has no node \"zk\"\n");
			h_zk_free(c->zk);
			c->zk = NULL;
			return -1;
		}
		if (!c->zk || h_zk_start(c->zk) < 0) {
			fprintf(stderr, "cluster: ZooKeeper did not start\n");
			return -1;
		}
		c->owns_zk = true;
	}
	snprintf(c->chroot, sizeof(c->chroot), "/samsa-%d-%d", (int)getpid(), ++chroot_seq);
	snprintf(c->connect, sizeof(c->connect), "%s%s", c->zk->connect, c->chroot);

	for (int id = 1; id <= n; id++) {
		const char *ov[H_MAX_OVERRIDES + 1];
		char store[2][256];
		if (build_overrides(c, o, id, ov, H_MAX_OVERRIDES, store) < 0) {
			fprintf(stderr, "cluster: more than %d overrides for broker %d\n",
				H_MAX_OVERRIDES, id);
			return -1;
		}
		c->b[id] = h_broker_new(ov);
		if (!c->b[id])
			return -1;
		c->n = id;
		if (c->net) {
			char name[16];
			snprintf(name, sizeof(name), "b%d", id);
			int node = hn_find(c->net, name);
			if (node < 0 || h_broker_set_net(c->b[id], hn_ns(c->net, node),
							 hn_ip(c->net, node)) < 0) {
				fprintf(stderr, "cluster: the network has no node \"%s\"\n", name);
				return -1;
			}
		}
	}
	/* Launch all, then wait for each: they register concurrently, as the
	 * brokers of a real cluster do. */
	for (int id = 1; id <= n; id++)
		if (h_broker_launch(c->b[id]) < 0)
			return -1;
	for (int id = 1; id <= n; id++) {
		if (h_broker_wait_ready(c->b[id], h_scaled_ms(30000)) == 0)
			continue;
		/* Perhaps its port was taken meanwhile: h_broker_start tries
		 * again (on a new port when the log says so). */
		if (c->b[id]->pid > 0)
			h_broker_kill(c->b[id]);
		fprintf(stderr, "cluster: broker %d did not start; trying once more\n", id);
		if (h_broker_start(c->b[id]) < 0) {
			hc_dump_logs(c, stderr, 30);
			return -1;
		}
	}
	make_bootstrap(c);
	if (hc_wait_formed(c, 60000) < 0) {
		hc_dump_logs(c, stderr, 30);
		return -1;
	}
	return 0;
}

/* Does md list exactly the expected brokers (with their ports) and a
 * controller among them? why gets what is wrong. */
static bool formed_view(const hc_cluster *c, const hc_md *md, const bool *expect, char *why,
			size_t cap)
{
	int want = 0;
	for (int id = 1; id <= c->n; id++)
		want += expect[id];
	if (md->nbrokers != want) {
		snprintf(why, cap, "%d brokers listed, %d expected", md->nbrokers, want);
		return false;
	}
	for (int i = 0; i < md->nbrokers; i++) {
		int id = md->brokers[i].id;
		if (id < 1 || id > c->n || !expect[id]) {
			snprintf(why, cap, "broker %d listed", id);
			return false;
		}
		if (md->brokers[i].port != c->b[id]->port) {
			snprintf(why, cap, "broker %d listed with port %d, not %d", id,
				 md->brokers[i].port, c->b[id]->port);
			return false;
		}
	}
	if (md->controller_id < 1 || md->controller_id > c->n || !expect[md->controller_id]) {
		snprintf(why, cap, "controller %d", md->controller_id);
		return false;
	}
	return true;
}

int hc_wait_formed(hc_cluster *c, int timeout_ms)
{
	long long deadline = h_now_ms() + h_scaled_ms(timeout_ms);
	char why[256] = "no broker running";
	bool expect[HC_MAX_BROKERS + 1] = {false};
	for (;;) {
		int controller = -1, asked = 0;
		bool ok = true;
		for (int id = 1; id <= c->n; id++)
			expect[id] = hc_alive(c, id) && !c->paused[id];
		for (int id = 1; id <= c->n && ok; id++) {
			if (!expect[id])
				continue;
			hc_md md;
			asked++;
			if (hc_metadata(c, id, NULL, &md, 2000) < 0) {
				snprintf(why, sizeof(why), "broker %d: no Metadata answer", id);
				ok = false;
				continue;
			}
			char w[200];
			if (!formed_view(c, &md, expect, w, sizeof(w))) {
				snprintf(why, sizeof(why), "broker %d: %s", id, w);
				ok = false;
			} else if (controller >= 0 && md.controller_id != controller) {
				snprintf(why, sizeof(why), "brokers disagree on the controller (%d, %d)",
					 controller, md.controller_id);
				ok = false;
			}
			controller = md.controller_id;
			hc_md_free(&md);
		}
		if (ok && asked > 0)
			return 0;
		if (h_now_ms() >= deadline) {
			fprintf(stderr, "cluster: not formed after %d ms: %s\n", h_scaled_ms(timeout_ms),
				why);
			return -1;
		}
		sleep_ms(100);
	}
}

static int stop_one(hc_cluster *c, int id, int timeout_ms)
{
	int st = hc_wait_exit(c, id, timeout_ms);
	if (st == -1) {
		fprintf(stderr, "cluster: broker %d did not exit within %d ms of SIGTERM\n", id,
			h_scaled_ms(timeout_ms));
		h_broker_dump_log(c->b[id], stderr, 30);
		h_broker_kill(c->b[id]);
		return 1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "cluster: broker %d ended with %s %d on SIGTERM, not exit code 0\n", id,
			WIFEXITED(st) ? "exit code" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		h_broker_dump_log(c->b[id], stderr, 30);
		return 1;
	}
	return 0;
}

int hc_stop(hc_cluster *c, int timeout_ms)
{
	int bad = 0;
	for (int id = 1; id <= c->n; id++)
		if (c->paused[id])
			hc_resume(c, id);
	int controller = hc_zk_controller(c);
	bool termed[HC_MAX_BROKERS + 1] = {false};
	for (int id = 1; id <= c->n; id++)
		if (id != controller && hc_alive(c, id))
			termed[id] = hc_term(c, id) == 0;
	for (int id = 1; id <= c->n; id++)
		if (termed[id])
			bad += stop_one(c, id, timeout_ms);
	if (valid_id(c, controller) && hc_alive(c, controller) && hc_term(c, controller) == 0)
		bad += stop_one(c, controller, timeout_ms);
	return bad;
}

void hc_free(hc_cluster *c)
{
	if (c->zkc) {
		ctl_zk_close(c->zkc);
		c->zkc = NULL;
	}
	for (int id = 1; id <= HC_MAX_BROKERS; id++) {
		if (c->b[id]) {
			if (c->paused[id] && c->b[id]->pid > 0)
				kill(c->b[id]->pid, SIGCONT);
			h_broker_free(c->b[id]);
			c->b[id] = NULL;
		}
		c->paused[id] = false;
	}
	if (c->owns_zk)
		h_zk_free(c->zk);
	c->zk = NULL;
	c->owns_zk = false;
	c->n = 0;
}

/* ---- faults ---- */

bool hc_alive(hc_cluster *c, int id)
{
	return valid_id(c, id) && h_broker_alive(c->b[id]);
}

/* Why a fault could not be applied to broker id (on stderr). */
static void not_applicable(hc_cluster *c, int id, const char *what)
{
	if (!valid_id(c, id)) {
		fprintf(stderr, "cluster: %s of broker %d: no such broker\n", what, id);
		return;
	}
	int st = c->b[id]->last_status;
	fprintf(stderr, "cluster: %s of broker %d: %s (last exit status 0x%x%s%s)\n", what, id,
		h_broker_alive(c->b[id]) ? (c->paused[id] ? "already paused" : "not paused")
					 : "not running",
		st, st >= 0 && WIFSIGNALED(st) ? ", killed by " : "",
		st >= 0 && WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "");
}

int hc_kill(hc_cluster *c, int id)
{
	if (!hc_alive(c, id))
		return -1;
	c->paused[id] = false;
	return h_broker_kill(c->b[id]);
}

int hc_term(hc_cluster *c, int id)
{
	if (!hc_alive(c, id))
		return -1;
	if (c->paused[id])
		hc_resume(c, id);
	return kill(c->b[id]->pid, SIGTERM) == 0 ? 0 : -1;
}

int hc_wait_exit(hc_cluster *c, int id, int timeout_ms)
{
	if (!valid_id(c, id))
		return -1;
	int st = h_broker_wait_exit(c->b[id], h_scaled_ms(timeout_ms));
	if (st != -1)
		c->paused[id] = false;
	return st;
}

int hc_pause(hc_cluster *c, int id)
{
	if (!hc_alive(c, id) || c->paused[id]) {
		not_applicable(c, id, "SIGSTOP");
		return -1;
	}
	if (kill(c->b[id]->pid, SIGSTOP) < 0)
		return -1;
	c->paused[id] = true;
	return 0;
}

int hc_resume(hc_cluster *c, int id)
{
	if (!hc_alive(c, id) || !c->paused[id]) {
		not_applicable(c, id, "SIGCONT");
		return -1;
	}
	if (kill(c->b[id]->pid, SIGCONT) < 0)
		return -1;
	c->paused[id] = false;
	return 0;
}

int hc_restart(hc_cluster *c, int id)
{
	if (!valid_id(c, id) || h_broker_alive(c->b[id]))
		return -1;
	c->paused[id] = false;
	return h_broker_restart(c->b[id]);
}

int hc_zk_stop(hc_cluster *c)
{
	if (!c->zk)
		return -1;
	return h_zk_stop(c->zk, h_scaled_ms(15000)) == -1 && h_zk_alive(c->zk) ? -1 : 0;
}

int hc_zk_restart(hc_cluster *c)
{
	if (!c->zk || h_zk_alive(c->zk))
		return -1;
	return h_zk_restart(c->zk);
}

/* ---- Metadata v7, raw ---- */

/* A bounded reader of a response body; ok goes false at the first field
 * that does not fit, after which reads return 0. */
typedef struct md_reader {
	const uint8_t *p;
	int32_t len, pos;
	bool ok;
} md_reader;

static bool need(md_reader *r, int32_t n)
{
	if (!r->ok || n < 0 || r->len - r->pos < n) {
		r->ok = false;
		return false;
	}
	return true;
}

static int8_t rd8(md_reader *r)
{
	if (!need(r, 1))
		return 0;
	return (int8_t)r->p[r->pos++];
}

static int16_t rd16(md_reader *r)
{
	if (!need(r, 2))
		return 0;
	int16_t v = w_get16(r->p + r->pos);
	r->pos += 2;
	return v;
}

static int32_t rd32(md_reader *r)
{
	if (!need(r, 4))
		return 0;
	int32_t v = w_get32(r->p + r->pos);
	r->pos += 4;
	return v;
}

/* A classic (int16 length) nullable string into out (cut to cap). */
static void rdstr(md_reader *r, char *out, size_t cap)
{
	int16_t n = rd16(r);
	if (out && cap)
		out[0] = 0;
	if (n < 0 || !need(r, n))
		return;
	if (out && cap) {
		size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->p + r->pos, k);
		out[k] = 0;
	}
	r->pos += n;
}

/* An int32 array into out (at most cap kept); returns the count. */
static int rdarr(md_reader *r, int32_t *out, int cap)
{
	int32_t n = rd32(r);
	if (n < 0 || n > 100000) {
		r->ok = r->ok && n == -1;
		return 0;
	}
	for (int32_t i = 0; i < n && r->ok; i++) {
		int32_t v = rd32(r);
		if (i < cap)
			out[i] = v;
	}
	return n < cap ? n : cap;
}

static int cmp_part(const void *a, const void *b)
{
	const hc_md_partition *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static int parse_metadata(const uint8_t *body, int32_t len, int32_t cid, hc_md *md)
{
	md_reader r = {.p = body, .len = len, .ok = true};
	memset(md, 0, sizeof(*md));
	if (rd32(&r) != cid)
		return -1;
	rd32(&r); /* throttle */
	int32_t nb = rd32(&r);
	for (int32_t i = 0; i < nb && r.ok; i++) {
		int32_t id = rd32(&r);
		char host[64];
		rdstr(&r, host, sizeof(host));
		int32_t port = rd32(&r);
		rdstr(&r, NULL, 0); /* rack */
		if (md->nbrokers < (int)(sizeof(md->brokers) / sizeof(md->brokers[0]))) {
			md->brokers[md->nbrokers].id = id;
			snprintf(md->brokers[md->nbrokers].host, sizeof(md->brokers[0].host), "%s",
				 host);
			md->brokers[md->nbrokers].port = port;
			md->nbrokers++;
		}
	}
	rdstr(&r, md->cluster_id, sizeof(md->cluster_id));
	md->controller_id = rd32(&r);
	int32_t nt = rd32(&r);
	if (!r.ok || nt < 0 || nt > 100000)
		return -1;
	md->topics = calloc((size_t)nt + 1, sizeof(*md->topics));
	if (!md->topics)
		return -1;
	for (int32_t i = 0; i < nt && r.ok; i++) {
		hc_md_topic *t = &md->topics[i];
		md->ntopics = i + 1;
		t->err = rd16(&r);
		rdstr(&r, t->name, sizeof(t->name));
		t->internal = rd8(&r) != 0;
		int32_t np = rd32(&r);
		if (!r.ok || np < 0 || np > 100000)
			return -1;
		t->partitions = calloc((size_t)np + 1, sizeof(*t->partitions));
		if (!t->partitions)
			return -1;
		for (int32_t k = 0; k < np && r.ok; k++) {
			hc_md_partition *p = &t->partitions[k];
			t->npartitions = k + 1;
			p->err = rd16(&r);
			p->id = rd32(&r);
			p->leader = rd32(&r);
			p->leader_epoch = rd32(&r);
			p->nreplicas = rdarr(&r, p->replicas, HC_MAX_BROKERS);
			p->nisr = rdarr(&r, p->isr, HC_MAX_BROKERS);
			p->noffline = rdarr(&r, p->offline, HC_MAX_BROKERS);
		}
		qsort(t->partitions, (size_t)t->npartitions, sizeof(*t->partitions), cmp_part);
	}
	return r.ok && r.pos == r.len ? 0 : -1;
}

/* SaslHandshake v1 PLAIN and SaslAuthenticate v1 as hc_options said.
 * Returns 0 when authenticated. */
static int sasl_plain_login(const hc_cluster *c, int fd, int timeout_ms)
{
	uint8_t body[300], req[400], *resp = NULL;
	int32_t rlen;
	w_put16(body, 5);
	memcpy(body + 2, "PLAIN", 5);
	int n = w_build_request(req, sizeof(req), 17, 1, 1, "samsa-cluster-harness", body, 7);
	if (n < 0 || w_send_all(fd, req, (size_t)n, timeout_ms) != WIRE_OK ||
	    w_recv_frame(fd, &resp, &rlen, 1 << 20, timeout_ms) != WIRE_OK || rlen < 6 ||
	    w_get16(resp + 4) != 0) {
		free(resp);
		return -1;
	}
	free(resp);
	size_t ul = strlen(c->sasl_user), pl = strlen(c->sasl_password);
	w_put32(body, (int32_t)(ul + pl + 2));
	body[4] = 0;
	memcpy(body + 5, c->sasl_user, ul);
	body[5 + ul] = 0;
	memcpy(body + 6 + ul, c->sasl_password, pl);
	n = w_build_request(req, sizeof(req), 36, 1, 2, "samsa-cluster-harness", body, 6 + ul + pl);
	if (n < 0 || w_send_all(fd, req, (size_t)n, timeout_ms) != WIRE_OK ||
	    w_recv_frame(fd, &resp, &rlen, 1 << 20, timeout_ms) != WIRE_OK || rlen < 6 ||
	    w_get16(resp + 4) != 0) {
		free(resp);
		return -1;
	}
	free(resp);
	return 0;
}

int hc_metadata(hc_cluster *c, int id, const char *topic, hc_md *md, int timeout_ms)
{
	memset(md, 0, sizeof(*md));
	md->controller_id = -1;
	if (!hc_alive(c, id) || c->paused[id])
		return -1;
	uint8_t body[512], req[1024];
	size_t blen = 0;
	if (topic) {
		size_t tl = strlen(topic);
		if (tl > 300)
			return -1;
		w_put32(body, 1);
		w_put16(body + 4, (int16_t)tl);
		memcpy(body + 6, topic, tl);
		blen = 6 + tl;
	} else {
		w_put32(body, -1); /* null: all topics */
		blen = 4;
	}
	body[blen++] = 0; /* allow_auto_topic_creation: false */
	int32_t cid = 0x5a5a; /* one request per connection */
	int n = w_build_request(req, sizeof(req), 3, 7, cid, "samsa-cluster-harness", body, blen);
	int fd = w_connect_host(c->b[id]->host, c->b[id]->port, timeout_ms);
	if (fd < 0 || n < 0 || (c->sasl_user[0] && sasl_plain_login(c, fd, timeout_ms) < 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = -1;
	uint8_t *resp = NULL;
	int32_t rlen = 0;
	if (w_send_all(fd, req, (size_t)n, timeout_ms) == WIRE_OK &&
	    w_recv_frame(fd, &resp, &rlen, 64 << 20, timeout_ms) == WIRE_OK) {
		rc = parse_metadata(resp, rlen, cid, md);
		if (rc < 0) {
			fprintf(stderr, "cluster: malformed Metadata v7 answer from broker %d\n", id);
			hc_md_free(md);
		}
	}
	free(resp);
	close(fd);
	return rc;
}

void hc_md_free(hc_md *md)
{
	for (int i = 0; md->topics && i < md->ntopics; i++)
		free(md->topics[i].partitions);
	free(md->topics);
	md->topics = NULL;
	md->ntopics = 0;
}

const hc_md_topic *hc_md_find(const hc_md *md, const char *topic)
{
	for (int i = 0; i < md->ntopics; i++)
		if (strcmp(md->topics[i].name, topic) == 0)
			return &md->topics[i];
	return NULL;
}

const hc_md_partition *hc_md_part(const hc_md_topic *t, int32_t partition)
{
	for (int i = 0; t && i < t->npartitions; i++)
		if (t->partitions[i].id == partition)
			return &t->partitions[i];
	return NULL;
}

int hc_controller(hc_cluster *c)
{
	for (int id = 1; id <= c->n; id++) {
		hc_md md;
		if (c->paused[id] || hc_metadata(c, id, NULL, &md, 2000) < 0)
			continue;
		int ctl = md.controller_id;
		hc_md_free(&md);
		if (ctl >= 0)
			return ctl;
	}
	return -1;
}

int hc_leader(hc_cluster *c, const char *topic, int32_t partition, int32_t *leader_epoch)
{
	for (int id = 1; id <= c->n; id++) {
		hc_md md;
		if (c->paused[id] || hc_metadata(c, id, topic, &md, 2000) < 0)
			continue;
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, topic), partition);
		int leader = p && !p->err ? p->leader : -1;
		if (leader_epoch)
			*leader_epoch = p ? p->leader_epoch : -1;
		hc_md_free(&md);
		if (leader >= 0)
			return leader;
	}
	return -1;
}

/* ---- ZooKeeper ---- */

ctl_zk *hc_zk_session(hc_cluster *c)
{
	if (c->zkc)
		return c->zkc;
	if (!c->zk)
		return NULL;
	ctl_zk_config cfg = {
		.connect = c->connect,
		/* short, so a call made while the server is down gives up soon
		 * (2/3 of it); the session is made again when it expired */
		.session_timeout_ms = 6000,
		.connection_timeout_ms = h_scaled_ms(15000),
		.log_level = CTL_ZK_LOG_QUIET,
	};
	int rc = ctl_zk_open(&cfg, &c->zkc);
	if (rc != CTL_ZK_OK) {
		fprintf(stderr, "cluster: no ZooKeeper session to %s: %s\n", c->connect,
			ctl_zk_strerror(rc));
		c->zkc = NULL;
	}
	return c->zkc;
}

/*
 * Whether a read that returned rc should be tried again, and get ready for
 * it: after a lost connection (the server restarting) the client reconnects
 * by itself, so wait a little, for at most 10 s (scaled) from *deadline's
 * first setting; after an expired session (the server was down longer than
 * its timeout) make a new one.
 */
static bool zk_retry(hc_cluster *c, int rc, long long *deadline)
{
	if (*deadline == 0)
		*deadline = h_now_ms() + h_scaled_ms(10000);
	if (h_now_ms() >= *deadline)
		return false;
	if (rc == CTL_ZK_CONNECTIONLOSS || rc == CTL_ZK_OPERATIONTIMEOUT) {
		sleep_ms(100);
		return true;
	}
	if (rc == CTL_ZK_SESSIONEXPIRED || rc == CTL_ZK_INVALIDSTATE)
		return ctl_zk_reopen(c->zkc) == CTL_ZK_OK;
	return false;
}

int hc_zk_get(hc_cluster *c, const char *path, char **data, int *len, ctl_zk_stat *st)
{
	*data = NULL;
	*len = -1;
	if (!hc_zk_session(c))
		return CTL_ZK_INVALIDSTATE;
	long long deadline = 0;
	int rc;
	while ((rc = ctl_zk_get(c->zkc, path, false, data, len, st)) != CTL_ZK_OK &&
	       zk_retry(c, rc, &deadline))
		;
	return rc;
}

int hc_zk_children(hc_cluster *c, const char *path, ctl_zk_children *out)
{
	memset(out, 0, sizeof(*out));
	if (!hc_zk_session(c))
		return CTL_ZK_INVALIDSTATE;
	long long deadline = 0;
	int rc;
	while ((rc = ctl_zk_get_children(c->zkc, path, false, out, NULL)) != CTL_ZK_OK &&
	       zk_retry(c, rc, &deadline))
		;
	return rc;
}

int hc_zk_exists(hc_cluster *c, const char *path, ctl_zk_stat *st)
{
	if (!hc_zk_session(c))
		return CTL_ZK_INVALIDSTATE;
	long long deadline = 0;
	int rc;
	while ((rc = ctl_zk_exists(c->zkc, path, false, st)) != CTL_ZK_OK && rc != CTL_ZK_NONODE &&
	       zk_retry(c, rc, &deadline))
		;
	return rc;
}

int hc_zk_state(hc_cluster *c, const char *topic, int32_t partition, hc_state *st)
{
	char path[512];
	memset(st, 0, sizeof(*st));
	st->leader = -1;
	snprintf(path, sizeof(path), "/brokers/topics/%s/partitions/%d/state", topic,
		 (int)partition);
	char *data;
	int len;
	ctl_zk_stat zs;
	int rc = hc_zk_get(c, path, &data, &len, &zs);
	if (rc != CTL_ZK_OK)
		return rc;
	snprintf(st->json, sizeof(st->json), "%s", data ? data : "(null)");
	st->zk_version = zs.version;
	st->mzxid = zs.mzxid;
	tj *v = data ? tj_parse(data, (size_t)len, NULL, 0) : NULL;
	free(data);
	int64_t leader, epoch, cepoch, version;
	rc = CTL_ZK_MARSHALLINGERROR;
	if (v && tj_get_int(v, "leader", &leader) == 0 &&
	    tj_get_int(v, "leader_epoch", &epoch) == 0 &&
	    tj_get_int(v, "controller_epoch", &cepoch) == 0 &&
	    tj_get_int(v, "version", &version) == 0) {
		st->leader = (int32_t)leader;
		st->leader_epoch = (int32_t)epoch;
		st->controller_epoch = (int32_t)cepoch;
		st->version = (int32_t)version;
		st->nisr = tj_get_int_array(v, "isr", st->isr, HC_MAX_BROKERS);
		if (tj_get_int(v, "leader_recovery_state", &st->recovery_state) < 0)
			st->recovery_state = 0;
		if (st->nisr >= 0 && st->nisr <= HC_MAX_BROKERS)
			rc = CTL_ZK_OK;
	}
	tj_free(v);
	return rc;
}

int64_t hc_zk_controller_epoch(hc_cluster *c, int32_t *version)
{
	char *data;
	int len;
	ctl_zk_stat st;
	if (hc_zk_get(c, "/controller_epoch", &data, &len, &st) != CTL_ZK_OK || !data)
		return -1;
	char *end;
	long long v = strtoll(data, &end, 10);
	bool ok = end != data && *end == 0 && v >= 0;
	free(data);
	if (version)
		*version = st.version;
	return ok ? v : -1;
}

int hc_zk_controller(hc_cluster *c)
{
	char *data;
	int len;
	if (hc_zk_get(c, "/controller", &data, &len, NULL) != CTL_ZK_OK || !data)
		return -1;
	tj *v = tj_parse(data, (size_t)len, NULL, 0);
	free(data);
	int64_t id = -1;
	if (!v || tj_get_int(v, "brokerid", &id) < 0)
		id = -1;
	tj_free(v);
	return (int)id;
}

bool hc_isr_has(const hc_state *st, int32_t id)
{
	for (int i = 0; i < st->nisr; i++)
		if (st->isr[i] == id)
			return true;
	return false;
}

/* ---- waiting ---- */

long hc_wait(hc_cluster *c, int timeout_ms, hc_cond_fn fn, void *arg)
{
	long long t0 = h_now_ms();
	long long deadline = t0 + h_scaled_ms(timeout_ms);
	for (;;) {
		if (fn(c, arg))
			return (long)(h_now_ms() - t0);
		if (h_now_ms() >= deadline)
			return -1;
		sleep_ms(25);
	}
}

typedef struct registered_arg {
	bool want[HC_MAX_BROKERS + 1];
	char last[256];
} registered_arg;

static bool registered_cond(hc_cluster *c, void *arg)
{
	registered_arg *a = arg;
	ctl_zk_children ch;
	int rc = hc_zk_children(c, "/brokers/ids", &ch);
	if (rc != CTL_ZK_OK) {
		snprintf(a->last, sizeof(a->last), "/brokers/ids: %s", ctl_zk_strerror(rc));
		return false;
	}
	bool seen[HC_MAX_BROKERS + 1] = {false};
	bool ok = true;
	size_t len = 0;
	a->last[0] = 0;
	for (int i = 0; i < ch.count; i++) {
		int id = atoi(ch.names[i]);
		len += (size_t)snprintf(a->last + len, len < sizeof(a->last) ? sizeof(a->last) - len : 0,
					"%s%s", i ? "," : "/brokers/ids: ", ch.names[i]);
		if (len >= sizeof(a->last))
			len = sizeof(a->last) - 1;
		if (id < 1 || id > c->n || !a->want[id])
			ok = false;
		else
			seen[id] = true;
	}
	ctl_zk_children_free(&ch);
	for (int id = 1; id <= c->n; id++)
		if (a->want[id] && !seen[id])
			ok = false;
	return ok;
}

long hc_wait_registered(hc_cluster *c, const bool *registered, int timeout_ms)
{
	registered_arg a;
	memset(&a, 0, sizeof(a));
	for (int id = 1; id <= c->n; id++)
		a.want[id] = registered ? registered[id] : hc_alive(c, id) && !c->paused[id];
	long ms = hc_wait(c, timeout_ms, registered_cond, &a);
	if (ms < 0)
		fprintf(stderr, "cluster: registrations not as expected after %d ms: %s\n",
			h_scaled_ms(timeout_ms), a.last);
	return ms;
}

typedef struct isr_arg {
	const char *topic;
	int32_t partition;
	const int32_t *want;
	int n;
	hc_state last;
	int rc;
} isr_arg;

static bool isr_cond(hc_cluster *c, void *arg)
{
	isr_arg *a = arg;
	a->rc = hc_zk_state(c, a->topic, a->partition, &a->last);
	if (a->rc != CTL_ZK_OK || a->last.leader < 0 || a->last.nisr != a->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (!hc_isr_has(&a->last, a->want[i]))
			return false;
	return true;
}

long hc_wait_isr(hc_cluster *c, const char *topic, int32_t partition, const int32_t *want_isr,
		 int n, int timeout_ms)
{
	isr_arg a = {.topic = topic, .partition = partition, .want = want_isr, .n = n};
	long ms = hc_wait(c, timeout_ms, isr_cond, &a);
	if (ms < 0)
		fprintf(stderr, "cluster: %s-%d: ISR not as wanted after %d ms; last state %s (%s)\n",
			topic, (int)partition, h_scaled_ms(timeout_ms), a.last.json,
			ctl_zk_strerror(a.rc));
	return ms;
}

/* ---- logs and files ---- */

bool hc_log_has(hc_cluster *c, int id, const char *needle)
{
	return hc_log_count(c, id, needle) > 0;
}

int hc_log_count(hc_cluster *c, int id, const char *needle)
{
	if (!valid_id(c, id))
		return 0;
	char *log = h_broker_read_log(c->b[id]);
	if (!log)
		return 0;
	int n = 0;
	for (char *line = log; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strstr(line, needle))
			n++;
		line = nl ? nl + 1 : NULL;
	}
	free(log);
	return n;
}

void hc_dump_logs(hc_cluster *c, FILE *f, int max_lines)
{
	for (int id = 1; id <= c->n; id++)
		if (c->b[id]) {
			fprintf(f, "cluster: broker %d (pid %d%s):\n", id, (int)c->b[id]->pid,
				c->paused[id] ? ", paused" : "");
			h_broker_dump_log(c->b[id], f, max_lines);
		}
	if (c->zk && c->owns_zk)
		h_zk_dump_log(c->zk, f, max_lines / 2);
}

const char *hc_partition_dir(hc_cluster *c, int id, const char *topic, int32_t partition,
			     char *buf, size_t cap)
{
	if (!valid_id(c, id)) {
		snprintf(buf, cap, "(no broker %d)", id);
		return buf;
	}
	snprintf(buf, cap, "%s/%s-%d", c->b[id]->dir, topic, (int)partition);
	return buf;
}
