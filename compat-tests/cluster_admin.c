/*
 * cluster_admin.c - samsa-admin (tools/), the built binary
 * ($SAMSA_ADMIN_BIN), run against three brokers and ZooKeeper; every
 * effect is checked in ZooKeeper (read through the test's own session) or
 * in Metadata, not in the tool's own output alone.
 *
 *  - brokers: the three brokers with their ports, and the controller
 *    /controller names;
 *  - create-topic with 3 partitions, replication factor 3 and two configs:
 *    /brokers/topics/<t> has 3 partitions of 3 distinct brokers,
 *    /config/topics/<t> both configs; describe prints per partition what
 *    the state znodes and Metadata hold (leader, leader epoch, replicas in
 *    order, ISR, no offline replica) and the two overrides;
 *  - config --set/--delete: /config/topics/<t> has the new value and not
 *    the deleted config; config lists the new value as the topic's;
 *  - bad input: an unknown topic (UNKNOWN_TOPIC_OR_PARTITION), replication
 *    factor 4 on 3 brokers (INVALID_REPLICATION_FACTOR, nothing in
 *    ZooKeeper), an unknown config (INVALID_CONFIG), an unreachable
 *    bootstrap address (connection refused) exit 1 with one line on stderr
 *    naming the error; a usage error exits 2;
 *  - elect-leaders after a bounce: a partition's preferred leader (not the
 *    controller) is killed and restarted; once back in the ISR it still does
 *    not lead (no automatic rebalance here); elect-leaders (all partitions)
 *    names the partition elected, the state znode then names it leader with
 *    a higher leader epoch, and a second run finds ELECTION_NOT_NEEDED;
 *  - add-partitions to 4: the topic znode has 4 partitions; log-dirs lists
 *    the 4 partitions on each broker;
 *  - reassign of a partition on {A,B} to {A,C}, C (not the controller)
 *    paused so that the move cannot finish: reassignments lists it with C
 *    being added and B removed, as does the topic znode; after SIGCONT it
 *    completes ({A,C} in the znode and every broker's Metadata) and
 *    reassignments is empty;
 *  - drain: refused (exit 1, nothing submitted) while a replication factor
 *    3 topic exists on 3 brokers; after delete-topic (its znode gone),
 *    drain --execute --wait of a broker leaves no replica on it in any
 *    topic znode or Metadata;
 *  - the controller killed with SIGKILL: create-topic right after still
 *    succeeds, once ZooKeeper names the new controller (the tool retried).
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/tjson.h"

#define MAX_ARGS 32

typedef struct adm_run {
	int status;     /* exit status, -1 when killed by a signal */
	char out[32768];
	char err[4096];
	long ms;        /* how long it ran */
} adm_run;

/* Append what fd has to buf (len so far in *n); false at EOF. */
static bool drain_fd(int fd, char *buf, size_t cap, size_t *n)
{
	char tmp[4096];
	ssize_t r = read(fd, tmp, sizeof(tmp));
	if (r <= 0)
		return r < 0 && (errno == EINTR || errno == EAGAIN);
	size_t k = (size_t)r;
	if (*n + k >= cap)
		k = cap - 1 - *n;
	memcpy(buf + *n, tmp, k);
	*n += k;
	buf[*n] = '\0';
	return true;
}

/*
 * Run samsa-admin -b <bootstrap> --timeout <timeout_ms> args... (NULL
 * ended) into r; killed after timeout_ms + 30 s. bootstrap NULL: the
 * cluster's.
 */
static void run_admin(hc_cluster *c, adm_run *r, const char *bootstrap, int timeout_ms, ...)
{
	const char *bin = getenv("SAMSA_ADMIN_BIN");
	ck_assert_msg(bin && *bin, "SAMSA_ADMIN_BIN is not set");
	char tmo[16];
	snprintf(tmo, sizeof(tmo), "%d", timeout_ms);
	const char *argv[MAX_ARGS + 6] = { bin, "-b", bootstrap ? bootstrap : c->bootstrap,
					   "--timeout", tmo };
	int argc = 5;
	va_list ap;
	va_start(ap, timeout_ms);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && argc < MAX_ARGS + 5)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;

	int po[2], pe[2];
	ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC), 0);
	long long t0 = h_now_ms();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	memset(r, 0, sizeof(*r));
	size_t no = 0, ne = 0;
	bool open_o = true, open_e = true;
	long long deadline = t0 + h_scaled_ms(timeout_ms + 30000);
	while (open_o || open_e) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		long long left = deadline - h_now_ms();
		if (left <= 0)
			break;
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			break;
		if (open_o && (p[0].revents & (POLLIN | POLLHUP)))
			open_o = drain_fd(po[0], r->out, sizeof(r->out), &no);
		if (open_e && (p[1].revents & (POLLIN | POLLHUP)))
			open_e = drain_fd(pe[0], r->err, sizeof(r->err), &ne);
	}
	close(po[0]);
	close(pe[0]);
	if (open_o || open_e)
		kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->ms = (long)(h_now_ms() - t0);
	fprintf(stderr, "samsa-admin");
	for (int i = 5; i < argc; i++)
		fprintf(stderr, " %s", argv[i]);
	fprintf(stderr, ": exit %d in %ld ms\n%s%s", r->status, r->ms, r->out, r->err);
}

#define ADMIN(c, r, ...) run_admin((c), (r), NULL, 10000, __VA_ARGS__, (const char *)NULL)

/* Exit 0 and nothing on stderr. */
static void assert_ok(const adm_run *r)
{
	ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
	ck_assert_msg(r->err[0] == '\0', "stderr: %s", r->err);
}

/* Exit status want and exactly one line on stderr containing needle. */
static void assert_fails(const adm_run *r, int want, const char *needle)
{
	ck_assert_msg(r->status == want, "exit %d, not %d: %s", r->status, want, r->err);
	size_t n = strlen(r->err);
	ck_assert_msg(n > 0 && r->err[n - 1] == '\n' && strchr(r->err, '\n') == r->err + n - 1,
		      "stderr is not one line: '%s'", r->err);
	ck_assert_msg(strstr(r->err, needle), "stderr lacks %s: %s", needle, r->err);
	ck_assert_msg(strncmp(r->err, "samsa-admin: ", 13) == 0, "stderr: %s", r->err);
}

/* The JSON of znode path (NULL when missing). Free with tj_free. */
static tj *znode(hc_cluster *c, const char *path)
{
	char *data = NULL;
	int len;
	if (hc_zk_get(c, path, &data, &len, NULL) != CTL_ZK_OK || !data) {
		free(data);
		return NULL;
	}
	tj *v = tj_parse(data, (size_t)len, NULL, 0);
	free(data);
	return v;
}

/* The replicas of topic/partition in its topic znode; count or -1. */
static int zk_replicas(hc_cluster *c, const char *topic, int32_t p, int32_t *out, int cap)
{
	char path[256], key[16];
	snprintf(path, sizeof(path), "/brokers/topics/%s", topic);
	snprintf(key, sizeof(key), "%d", (int)p);
	tj *t = znode(c, path);
	if (!t)
		return -1;
	int n = tj_get_int_array(tj_get(t, "partitions"), key, out, cap);
	tj_free(t);
	return n;
}

/* The number of partitions of the topic znode, -1 when missing. */
static int zk_partition_count(hc_cluster *c, const char *topic)
{
	char path[256];
	snprintf(path, sizeof(path), "/brokers/topics/%s", topic);
	tj *t = znode(c, path);
	if (!t)
		return -1;
	const tj *parts = tj_get(t, "partitions");
	int n = parts && parts->type == TJ_OBJ ? parts->n : -1;
	tj_free(t);
	return n;
}

/* The value of config key in /config/topics/<topic> (malloc'd), or NULL. */
static char *zk_topic_config(hc_cluster *c, const char *topic, const char *key)
{
	char path[256];
	snprintf(path, sizeof(path), "/config/topics/%s", topic);
	tj *t = znode(c, path);
	ck_assert_msg(t != NULL, "%s is missing", path);
	const char *v = tj_get_str(tj_get(t, "config"), key);
	char *out = v ? strdup(v) : NULL;
	tj_free(t);
	return out;
}

/* The line of r->out starting with prefix (copied into buf), or NULL. */
static const char *line_of(const char *text, const char *prefix, char *buf, size_t cap)
{
	size_t n = strlen(prefix);
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len >= n && memcmp(p, prefix, n) == 0) {
			snprintf(buf, cap, "%.*s", (int)len, p);
			return buf;
		}
		p = e ? e + 1 : NULL;
	}
	return NULL;
}

static void fmt_ids(const int32_t *ids, int n, char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && at < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? "," : "", (int)ids[i]);
}

/* describe's partition line of topic/p equals the state znode and the
 * Metadata of broker 1. */
static void check_describe_line(hc_cluster *c, const char *out, const char *topic, int32_t p)
{
	char prefix[128], line[512], want[512], reps[64], isr[64];
	snprintf(prefix, sizeof(prefix), "\tTopic: %s\tPartition: %d\t", topic, (int)p);
	ck_assert_msg(line_of(out, prefix, line, sizeof(line)), "no line for %s:%d in:\n%s", topic,
		      (int)p, out);
	hc_state st;
	ck_assert_int_eq(hc_zk_state(c, topic, p, &st), CTL_ZK_OK);
	int32_t zr[HC_MAX_BROKERS];
	int nr = zk_replicas(c, topic, p, zr, HC_MAX_BROKERS);
	ck_assert_int_eq(nr, 3);
	fmt_ids(zr, nr, reps, sizeof(reps));
	hc_md md;
	ck_assert_int_eq(hc_metadata(c, 1, topic, &md, 5000), 0);
	const hc_md_partition *mp = hc_md_part(hc_md_find(&md, topic), p);
	ck_assert_ptr_nonnull(mp);
	ck_assert_int_eq(mp->leader, st.leader);
	ck_assert_int_eq(mp->leader_epoch, st.leader_epoch);
	fmt_ids(mp->isr, mp->nisr, isr, sizeof(isr));
	snprintf(want, sizeof(want),
		 "%sLeader: %d\tLeaderEpoch: %d\tReplicas: %s\tIsr: %s\tOffline: ", prefix,
		 (int)st.leader, (int)st.leader_epoch, reps, isr);
	hc_md_free(&md);
	ck_assert_msg(strcmp(line, want) == 0, "describe: '%s'\nwanted '%s'", line, want);
	ck_assert_int_eq(st.nisr, 3);
}

typedef struct reps_arg {
	const char *topic;
	int32_t partition;
	int32_t want[HC_MAX_BROKERS];
	int n;
	char why[512];
} reps_arg;

/* The topic znode has want for the partition, no reassignment left, and
 * every running broker's Metadata shows it. */
static bool reps_cond(hc_cluster *c, void *arg)
{
	reps_arg *a = arg;
	char path[256];
	snprintf(path, sizeof(path), "/brokers/topics/%s", a->topic);
	tj *t = znode(c, path);
	if (!t)
		return false;
	int32_t got[HC_MAX_BROKERS];
	char key[16];
	snprintf(key, sizeof(key), "%d", (int)a->partition);
	int n = tj_get_int_array(tj_get(t, "partitions"), key, got, HC_MAX_BROKERS);
	const tj *adding = tj_get(t, "adding_replicas"), *removing = tj_get(t, "removing_replicas");
	bool ok = n == a->n && memcmp(got, a->want, sizeof(int32_t) * (size_t)n) == 0 && adding &&
		  adding->n == 0 && removing && removing->n == 0;
	tj_free(t);
	if (!ok) {
		snprintf(a->why, sizeof(a->why), "topic znode");
		return false;
	}
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0)
			return false;
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), a->partition);
		ok = p && p->nreplicas == a->n &&
		     memcmp(p->replicas, a->want, sizeof(int32_t) * (size_t)a->n) == 0;
		hc_md_free(&md);
		if (!ok) {
			snprintf(a->why, sizeof(a->why), "broker %d's Metadata", id);
			return false;
		}
	}
	return true;
}

typedef struct none_on_arg {
	int32_t broker;
	char why[512];
} none_on_arg;

/* No topic znode and no Metadata of a running broker lists the broker as
 * a replica of anything. */
static bool none_on_cond(hc_cluster *c, void *arg)
{
	none_on_arg *a = arg;
	ctl_zk_children ch;
	if (hc_zk_children(c, "/brokers/topics", &ch) != CTL_ZK_OK)
		return false;
	bool ok = true;
	for (int i = 0; i < ch.count && ok; i++) {
		int np = zk_partition_count(c, ch.names[i]);
		for (int32_t p = 0; p < np && ok; p++) {
			int32_t r[HC_MAX_BROKERS];
			int n = zk_replicas(c, ch.names[i], p, r, HC_MAX_BROKERS);
			for (int k = 0; k < n; k++)
				if (r[k] == a->broker) {
					ok = false;
					snprintf(a->why, sizeof(a->why), "topic znode %s partition %d",
						 ch.names[i], (int)p);
				}
		}
	}
	ctl_zk_children_free(&ch);
	for (int id = 1; id <= c->n && ok; id++) {
		hc_md md;
		if (!hc_alive(c, id) || hc_metadata(c, id, NULL, &md, 2000) < 0)
			continue;
		for (int t = 0; t < md.ntopics && ok; t++)
			for (int p = 0; p < md.topics[t].npartitions && ok; p++)
				for (int k = 0; k < md.topics[t].partitions[p].nreplicas; k++)
					if (md.topics[t].partitions[p].replicas[k] == a->broker) {
						ok = false;
						snprintf(a->why, sizeof(a->why), "broker %d's Metadata of %s",
							 id, md.topics[t].name);
					}
		hc_md_free(&md);
	}
	return ok;
}

static bool path_gone_cond(hc_cluster *c, void *arg)
{
	return hc_zk_exists(c, (const char *)arg, NULL) == CTL_ZK_NONODE;
}

START_TEST(test_admin)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	adm_run *r = malloc(sizeof(*r));
	char line[512], want[512];
	int ctl = hc_zk_controller(&c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");

	/* ---- brokers ---- */
	cc_log("brokers");
	ADMIN(&c, r, "brokers");
	assert_ok(r);
	snprintf(want, sizeof(want), "Controller: %d", ctl);
	ck_assert_msg(line_of(r->out, "ClusterId: ", line, sizeof(line)) && strstr(line, want),
		      "brokers: %s", r->out);
	for (int id = 1; id <= 3; id++) {
		snprintf(want, sizeof(want), "Broker: %d\tHost: 127.0.0.1\tPort: %d\t", id,
			 c.b[id]->port);
		ck_assert_msg(line_of(r->out, want, line, sizeof(line)), "brokers lacks %s", want);
	}

	/* ---- create-topic, describe ---- */
	cc_log("create-topic");
	ADMIN(&c, r, "create-topic", "adm", "--partitions", "3", "--replication-factor", "3",
	      "--config", "min.insync.replicas=2", "--config", "retention.ms=3600000");
	assert_ok(r);
	ck_assert_msg(strstr(r->out, "Created topic adm"), "%s", r->out);
	cc_wait_topic(&c, "adm", 3, 30000);
	ck_assert_int_eq(zk_partition_count(&c, "adm"), 3);
	for (int32_t p = 0; p < 3; p++) {
		int32_t rs[HC_MAX_BROKERS];
		ck_assert_int_eq(zk_replicas(&c, "adm", p, rs, HC_MAX_BROKERS), 3);
		ck_assert(rs[0] != rs[1] && rs[1] != rs[2] && rs[0] != rs[2]);
	}
	char *v = zk_topic_config(&c, "adm", "min.insync.replicas");
	ck_assert_msg(v && strcmp(v, "2") == 0, "min.insync.replicas: %s", v ? v : "(none)");
	free(v);
	v = zk_topic_config(&c, "adm", "retention.ms");
	ck_assert_msg(v && strcmp(v, "3600000") == 0, "retention.ms: %s", v ? v : "(none)");
	free(v);

	ADMIN(&c, r, "describe", "adm");
	assert_ok(r);
	ck_assert_msg(line_of(r->out, "Topic: adm\tTopicId: ", line, sizeof(line)) &&
			      strstr(line, "\tPartitionCount: 3\tReplicationFactor: 3\t") &&
			      strstr(line, "min.insync.replicas=2") &&
			      strstr(line, "retention.ms=3600000"),
		      "describe: %s", r->out);
	for (int32_t p = 0; p < 3; p++)
		check_describe_line(&c, r->out, "adm", p);

	/* ---- config ---- */
	cc_log("config");
	ADMIN(&c, r, "config", "adm", "--set", "retention.ms=1000", "--delete",
	      "min.insync.replicas");
	assert_ok(r);
	v = zk_topic_config(&c, "adm", "retention.ms");
	ck_assert_msg(v && strcmp(v, "1000") == 0, "retention.ms: %s", v ? v : "(none)");
	free(v);
	v = zk_topic_config(&c, "adm", "min.insync.replicas");
	ck_assert_msg(v == NULL, "min.insync.replicas still %s", v);
	ADMIN(&c, r, "config", "adm");
	assert_ok(r);
	ck_assert_msg(line_of(r->out, "retention.ms=1000\t(topic)", line, sizeof(line)), "%s",
		      r->out);
	ck_assert_msg(!strstr(r->out, "min.insync.replicas=2"), "%s", r->out);

	/* ---- bad input ---- */
	cc_log("bad input");
	ADMIN(&c, r, "describe", "nope");
	assert_fails(r, 1, "UNKNOWN_TOPIC_OR_PARTITION");
	ADMIN(&c, r, "create-topic", "bad", "--partitions", "1", "--replication-factor", "4");
	assert_fails(r, 1, "INVALID_REPLICATION_FACTOR");
	ck_assert_int_eq(hc_zk_exists(&c, "/brokers/topics/bad", NULL), CTL_ZK_NONODE);
	ADMIN(&c, r, "config", "adm", "--set", "no.such.config=1");
	assert_fails(r, 1, "INVALID_CONFIG");
	char nowhere[32];
	snprintf(nowhere, sizeof(nowhere), "127.0.0.1:%d", h_free_port());
	run_admin(&c, r, nowhere, 5000, "topics", (const char *)NULL);
	assert_fails(r, 1, "Connection refused");
	ADMIN(&c, r, "create-topic");
	assert_fails(r, 2, "one topic name expected");
	ADMIN(&c, r, "reassign", "adm:0=1,1");
	assert_fails(r, 2, "adm:0=1,1");

	/* ---- elect-leaders after a bounce ---- */
	cc_log("elect-leaders after a bounce");
	int32_t ep = -1, pref = -1;
	for (int32_t p = 0; p < 3 && ep < 0; p++) {
		int32_t rs[HC_MAX_BROKERS];
		zk_replicas(&c, "adm", p, rs, HC_MAX_BROKERS);
		if (rs[0] != ctl) {
			ep = p;
			pref = rs[0];
		}
	}
	ck_assert_msg(ep >= 0, "every partition's preferred leader is the controller");
	ck_assert_int_eq(cc_leader(&c, "adm", ep, NULL), pref);
	ck_assert_int_eq(hc_kill(&c, pref), 0);
	cc_wait_leader(&c, "adm", ep, pref, 30000);
	ck_assert_int_eq(hc_restart(&c, pref), 0);
	ck_assert_int_ge(hc_wait_registered(&c, NULL, 30000), 0);
	int32_t all3[3] = { 1, 2, 3 };
	ck_assert_int_ge(hc_wait_isr(&c, "adm", ep, all3, 3, 30000), 0);
	int32_t epoch_before;
	int leader = cc_leader(&c, "adm", ep, &epoch_before);
	ck_assert_msg(leader != pref, "adm:%d: broker %d leads again by itself", (int)ep, pref);
	ADMIN(&c, r, "elect-leaders");
	assert_ok(r);
	snprintf(want, sizeof(want), "adm:%d: elected", (int)ep);
	ck_assert_msg(line_of(r->out, want, line, sizeof(line)), "elect-leaders: %s", r->out);
	int32_t epoch_after;
	ck_assert_int_eq(cc_leader(&c, "adm", ep, &epoch_after), pref);
	ck_assert_int_gt(epoch_after, epoch_before);
	ADMIN(&c, r, "elect-leaders", "adm");
	assert_ok(r);
	for (int32_t p = 0; p < 3; p++) {
		snprintf(want, sizeof(want), "adm:%d: ELECTION_NOT_NEEDED", (int)p);
		ck_assert_msg(line_of(r->out, want, line, sizeof(line)), "elect-leaders: %s", r->out);
	}

	/* ---- add-partitions, log-dirs ---- */
	cc_log("add-partitions, log-dirs");
	ADMIN(&c, r, "add-partitions", "adm", "4");
	assert_ok(r);
	ck_assert_int_eq(zk_partition_count(&c, "adm"), 4);
	cc_wait_topic(&c, "adm", 4, 30000);
	ADMIN(&c, r, "log-dirs");
	assert_ok(r);
	for (int id = 1; id <= 3; id++) {
		snprintf(want, sizeof(want), "Broker: %d\tLogDir: ", id);
		ck_assert_msg(line_of(r->out, want, line, sizeof(line)), "log-dirs: %s", r->out);
	}
	int seen = 0;
	for (const char *p = r->out; (p = strstr(p, "\tPartition: adm:3\tSize: ")); p++)
		seen++;
	ck_assert_msg(seen == 3, "log-dirs lists adm:3 %d times: %s", seen, r->out);

	/* ---- reassign, reassignments ---- */
	cc_log("reassign");
	ctl = hc_zk_controller(&c);
	int C = ctl == 3 ? 2 : 3, A = 0, B = 0;
	for (int id = 1; id <= 3; id++)
		if (id != C) {
			if (!A)
				A = id;
			else
				B = id;
		}
	char assign[16], target[32];
	snprintf(assign, sizeof(assign), "%d:%d", A, B);
	ADMIN(&c, r, "create-topic", "mv", "--replica-assignment", assign);
	assert_ok(r);
	cc_wait_topic(&c, "mv", 1, 30000);
	snprintf(target, sizeof(target), "mv:0=%d,%d", A, C);
	ck_assert_int_eq(hc_pause(&c, C), 0); /* C cannot copy: the move stays in progress */
	ADMIN(&c, r, "reassign", target);
	int reassign_status = r->status;
	adm_run *listed = malloc(sizeof(*listed));
	ADMIN(&c, listed, "reassignments");
	int32_t adding[HC_MAX_BROKERS];
	tj *t = znode(&c, "/brokers/topics/mv");
	int nadding = t ? tj_get_int_array(tj_get(t, "adding_replicas"), "0", adding, 8) : -1;
	tj_free(t);
	ck_assert_int_eq(hc_resume(&c, C), 0);
	ck_assert_msg(reassign_status == 0, "reassign: exit %d", reassign_status);
	ck_assert_msg(strstr(r->out, "mv:0: reassignment started"), "reassign: %s", r->out);
	assert_ok(listed);
	snprintf(want, sizeof(want), "mv:0\tReplicas: %d,%d,%d\tAdding: %d\tRemoving: %d", A, C, B, C,
		 B);
	ck_assert_msg(line_of(listed->out, want, line, sizeof(line)), "reassignments: '%s', "
		      "wanted '%s'", listed->out, want);
	ck_assert_msg(nadding == 1 && adding[0] == C, "topic znode: adding_replicas of 0: %d",
		      nadding);
	free(listed);
	reps_arg ra = { .topic = "mv", .partition = 0, .want = { A, C }, .n = 2 };
	ck_assert_msg(hc_wait(&c, 30000, reps_cond, &ra) >= 0, "mv:0 did not end on %d,%d (%s)", A,
		      C, ra.why);
	ADMIN(&c, r, "reassignments");
	assert_ok(r);
	ck_assert_msg(r->out[0] == '\0', "reassignments after completion: %s", r->out);

	/* ---- drain ---- */
	cc_log("drain");
	int D = hc_zk_controller(&c) == 1 ? 2 : 1;
	char dstr[8];
	snprintf(dstr, sizeof(dstr), "%d", D);
	ADMIN(&c, r, "drain", dstr, "--execute");
	assert_fails(r, 1, "replication factor");
	ck_assert_msg(strstr(r->out, "reassignment started") == NULL, "drain submitted: %s", r->out);
	ADMIN(&c, r, "delete-topic", "adm");
	assert_ok(r);
	ck_assert_msg(strstr(r->out, "Deleted topic adm."), "%s", r->out);
	char adm_path[] = "/brokers/topics/adm";
	ck_assert_msg(hc_wait(&c, 30000, path_gone_cond, adm_path) >= 0,
		      "/brokers/topics/adm is still there");
	ADMIN(&c, r, "create-topic", "dr", "--partitions", "4", "--replication-factor", "2");
	assert_ok(r);
	cc_wait_topic(&c, "dr", 4, 30000);
	ADMIN(&c, r, "drain", dstr, "--execute", "--wait");
	assert_ok(r);
	ck_assert_msg(strstr(r->out, "Reassignment complete."), "%s", r->out);
	none_on_arg na = { .broker = D };
	ck_assert_msg(hc_wait(&c, 30000, none_on_cond, &na) >= 0, "broker %d still holds a replica "
		      "(%s)", D, na.why);
	ADMIN(&c, r, "drain", dstr);
	assert_ok(r);
	ck_assert_msg(strstr(r->out, "holds no replica"), "%s", r->out);
	ADMIN(&c, r, "drain", "99", "--execute", "--wait");
	ck_assert_msg(r->status == 1 && strstr(r->err, "not in the cluster"),
		      "drain of an unknown broker: exit %d, %s", r->status, r->err);

	/* ---- a controller killed: the tool finds the next one ---- */
	cc_log("controller killed");
	ctl = hc_zk_controller(&c);
	ck_assert_int_eq(hc_kill(&c, ctl), 0);
	/* the whole bootstrap list: the dead broker's address is refused, the
	 * next one answers */
	run_admin(&c, r, NULL, 30000, "create-topic", "after-kill", "--partitions", "1",
		  "--replication-factor", "2", (const char *)NULL);
	assert_ok(r);
	ck_assert_int_eq(hc_zk_exists(&c, "/brokers/topics/after-kill", NULL), CTL_ZK_OK);
	ck_assert_int_ne(hc_zk_controller(&c), ctl);
	printf("cluster_admin: create-topic took %ld ms across the controller's kill -9\n", r->ms);
	ck_assert_int_eq(hc_restart(&c, ctl), 0);
	ck_assert_int_ge(hc_wait_registered(&c, NULL, 30000), 0);

	free(r);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_admin");
	TCase *tc = tcase_create("admin");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_admin);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
