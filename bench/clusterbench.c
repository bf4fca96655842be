/*
 * clusterbench.c - the figures of issue 13's closing note: samsa as a
 * cluster of three brokers in ZooKeeper mode on this machine, next to the
 * single node where a comparison makes sense, in one run, ending in one
 * table (scenario, figure, cluster, single node, cluster/single, which
 * direction is better, target, met?) and a legend of how each figure was
 * taken. Prints figures, never pass/fail.
 *
 * One ZooKeeper server (compat-tests/harness.h's h_zk) serves the whole
 * run; every measurement starts brokers of its own (compat-tests/cluster.h:
 * three brokers, ids 1-3, CLUSTER.md 6.4's test settings, a chroot of
 * their own; or one broker without zookeeper.connect, the single node) and
 * stops them after, so no run pays for the files of the one before; sync(2)
 * before each start does the same for writeback. The clients are
 * librdkafka, in this process, on the same 2 cores as the brokers and
 * ZooKeeper. Topics have one partition; cluster topics replication factor 3.
 *
 * C1  Throughput: n records of 1 KiB (default 1,000,000, about 1 GB, -x
 *     scales), linger.ms=5, no idempotence, one producer (loadgen's H2
 *     client settings), after a warm-up of up to 20 MB to another topic on
 *     the same producer; MB/s (10^6 B of values) from the first produce
 *     call to the last delivery report. Targets: the cluster with acks=all
 *     to a topic with min.insync.replicas=2, the single node with acks=1
 *     (the ratio: cluster acks=all / single acks=1, aim >= 0.5),
 *     and the cluster with acks=1 (replication without waiting for it, for
 *     reading the ratio). Also CPU seconds per GB produced: the brokers'
 *     (/proc/PID/stat utime+stime, summed over the three) and the client's
 *     (this process, getrusage), over the timed part.
 *     Each in two memory states, because on this VM a page-cache page
 *     costs about ten times more when its memory comes fresh from the host
 *     (M below) and the cluster writes three times the pages: "fresh", the
 *     run starts cold_ms() after the one before freed its files, when the
 *     balloon has handed that memory back to the host; "freed", right
 *     before the timed part a file as large as what the run puts in page
 *     cache is written and deleted, so the run reuses pages just freed (for
 *     about 2 s: then the balloon takes what is still free). The cluster
 *     with acks=1 runs "freed" only. The five runs alternate in each of the
 *     -r rounds so that a slow spell of this VM hits all.
 * M   The machine alone: a new file as large as C1's cluster writes (three
 *     replicas), 1 MiB pwrites, in both memory states: MB/s and CPU s/GB.
 * C2  End-to-end latency with one record in flight: produce one 100 B
 *     record (linger.ms=0), a consumer by assignment (legacy consumer,
 *     fetch.wait.max.ms=500) receives it, then the next; p50, p99, max over
 *     n records (default 5,000; the first 50 not counted). The cluster with
 *     acks=all and min.insync.replicas=2 (the record is consumable once
 *     the followers have it: the high watermark), the single node with
 *     acks=1 for reference.
 * C3  Fail-over, on a cluster of its own for each of (a) and (b): a
 *     producer thread (acks=all, enable.idempotence=true, linger.ms=0,
 *     request.timeout.ms=5000, message.timeout.ms=30000, retries unlimited,
 *     retry.backoff.ms=100, reconnect.backoff.ms=50..500) sends 1,000
 *     records a second to a topic with min.insync.replicas=2. Each round
 *     waits until the ISR is all three and the producer has been
 *     acknowledged for 2 s more (its connections and metadata settled),
 *     then signals the partition's leader (the state znode's) and times
 *     from the signal to the first delivery report of an acknowledged
 *     record whose offset is at or above the start offset of the new
 *     leader's epoch (its leader-epoch-checkpoint: a record the new leader
 *     wrote; a record acknowledged by the old leader lies below it), and
 *     to the state znode naming a new leader (read every ms): the rest is
 *     the client's. The stopped broker is restarted after each round.
 *     (a) kill -9, 5 rounds (2 with -x < 1): median and max; what bounds it
 *         is zookeeper.session.timeout.ms (4000 here, printed): the
 *         controller elects a new leader when the killed broker's session
 *         expires;
 *     (b) SIGTERM (controlled shutdown: leadership moves before the exit),
 *         5 rounds: median and max, and the time from the signal to the
 *         process's exit.
 *     After the rounds every record is read back and checked (checker.h).
 * C4  A follower catching up 1 GiB (-x scales): the cluster gets a topic
 *     (min.insync.replicas=1), a follower of its partition is stopped
 *     cleanly (SIGTERM: it leaves the ISR at once), 1 GiB of 1 KiB records
 *     is produced with acks=1 to the leader (the other follower keeps up),
 *     then the follower is started again on its dir; timed until its
 *     partition's .log files hold as many bytes as the leader's (the
 *     replicas are byte-identical batch by batch): MB/s of what it was
 *     missing over restart to caught up, the transfer alone (first new
 *     byte to caught up), restart to the first new byte, and restart to
 *     the follower back in the ISR (the state znode); the follower's and
 *     the leader's CPU. In C1's two memory states ("freed": a file of 1.1x
 *     the missing bytes written and deleted before the restart). Medians of
 *     -r runs.
 * K   (only with -K N) N rounds of C3 (a), the Jepsen-style check of
 *     issue 14: acknowledged, lost, duplicated, divergent and the
 *     fail-over median and max over the N rounds. Issue 14 asks for 200
 *     (-K 200: about 7 s a round, 25 minutes). -K alone runs only K.
 *
 * Usage: clusterbench [-C 1,2,3,4] [-K rounds] [-x scale] [-r runs] [-p perf-prefix] [-d ctx]
 *   -C  scenarios to run (default all); -K  add the kill -9 loop with N
 *   rounds; -x  scale record counts and sizes (0.05 for a quick run);
 *   -r  runs of C1, C2 and C4 per target (default 3), each figure the
 *   median (this VM's figures swing); -p  `perf record -g` on the brokers
 *   during C1's timed produce (PREFIX-c1-<target>-<memory>.data) and on the
 *   whole machine during C4's catch-up (PREFIX-c4-catchup-<memory>.data);
 *   -d  librdkafka debug contexts. The broker binary is $SAMSA_BIN; $JAVA
 *   the java that runs ZooKeeper.
 * Every process started is stopped and every temporary dir removed at the
 * end, on a failure and on SIGINT/SIGTERM (harness.h).
 * Exit status: 0 when every measurement ran and every record was checked
 * (targets not met do not fail the run), 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/checker.h"
#include "compat-tests/cluster.h"
#include "compat-tests/harness.h"

#define WARM_TOPIC "warmup"
#define WARM_BYTES 20000000.0
#define C1_TOPIC "c1"
#define C2_TOPIC "c2"
#define C3_TOPIC "c3"
#define C4_TOPIC "c4"
#define MAX_REPS 9
/* How long memory stays free before this VM's balloon has given it back to
 * the host (free page reporting: after 2 s, in rounds 2 s apart; 3 GB
 * freed took about 10 s here). */
#define COLD_MS 12000
#define FO_RATE 1000 /* C3 records a second */
#define FO_SETTLE_MS 2000 /* C3: acknowledging before each signal */

static double scale = 1.0;         /* -x */
static int reps = 3;               /* -r */
static int kill_loop;              /* -K */
static const char *perf_prefix;    /* -p */
static const char *debug_contexts; /* -d */
static int failures;               /* measurements that failed */
static int unclean_stops;          /* brokers that did not exit 0 on SIGTERM at the end */
static h_zk *zk;                   /* the run's ZooKeeper server */

/* ---- time and numbers ---- */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long scaled(long n)
{
	long v = (long)((double)n * scale);
	return v < 1 ? 1 : v;
}

/* COLD_MS for the run's sizes: less memory freed is given back sooner. */
static int cold_ms(void)
{
	double ms = COLD_MS * (scale < 1 ? scale : 1);
	return ms < 4000 ? 4000 : (int)ms;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Percentile q (0..1) of n sorted ns values, in ms. */
static double pct_ms(const int64_t *v, long n, double q)
{
	return n > 0 ? (double)v[(long)((double)(n - 1) * q)] / 1e6 : -1;
}

/* Median of n values (sorts v); -1 when n is 0. */
static double median(double *v, int n)
{
	if (n <= 0)
		return -1;
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double max_of(const double *v, int n)
{
	double m = -1;
	for (int i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* The runs of a figure in the order they ran, then their median (taken on a
 * copy: v keeps its order); -1 when n is 0. */
static double median_runs(const char *what, const double *v, int n)
{
	double *c = n > 0 ? malloc((size_t)n * sizeof(double)) : NULL;
	if (!c)
		return -1;
	memcpy(c, v, (size_t)n * sizeof(double));
	double m = median(c, n);
	free(c);
	if (n > 1) {
		printf("%s, runs:", what);
		for (int i = 0; i < n; i++)
			printf(" %.*f", v[i] < 10 ? 3 : 1, v[i]);
		printf("; median %.*f\n", m < 10 ? 3 : 1, m);
	}
	return m;
}

/* ---- the table ---- */

#define MAX_ROWS 64
typedef struct trow {
	char scen[4];
	char fig[60];
	double cl, sg;   /* cluster, single node; < 0: not measured */
	int better;      /* +1 higher is better, -1 lower is better, 0 neither */
	char target[28];
	int met;         /* 1 yes, 0 no, -1 not judged */
} trow;
static trow rows[MAX_ROWS];
static int nrows;

static trow *add_row(const char *scen, const char *fig, double cl, double sg, int better)
{
	if (nrows == MAX_ROWS)
		return &rows[MAX_ROWS - 1];
	trow *r = &rows[nrows++];
	snprintf(r->scen, sizeof(r->scen), "%s", scen);
	snprintf(r->fig, sizeof(r->fig), "%s", fig);
	r->cl = cl;
	r->sg = sg;
	r->better = better;
	r->met = -1;
	return r;
}

/* Target: cluster >= k x single. */
static void target_ratio(trow *r, double k)
{
	snprintf(r->target, sizeof(r->target), ">= %.1fx single", k);
	if (r->cl >= 0 && r->sg > 0)
		r->met = r->cl >= k * r->sg;
}

/* Target: cluster < limit (in the figure's unit). */
static void target_below(trow *r, double limit, const char *text)
{
	snprintf(r->target, sizeof(r->target), "%s", text);
	if (r->cl >= 0)
		r->met = r->cl < limit;
}

static void fmtv(char *buf, size_t n, double v)
{
	if (v < 0)
		snprintf(buf, n, "-");
	else if (v >= 10000)
		snprintf(buf, n, "%.0f", v);
	else if (v >= 10)
		snprintf(buf, n, "%.1f", v);
	else
		snprintf(buf, n, "%.3f", v);
}

static void print_table(void)
{
	printf("\n%-3s %-56s %10s %10s %8s %-6s %-20s %s\n", "", "figure", "cluster", "single",
	       "cl/sg", "better", "target", "met?");
	for (int i = 0; i < nrows; i++) {
		trow *r = &rows[i];
		char a[32], b[32], c[32];
		fmtv(a, sizeof(a), r->cl);
		fmtv(b, sizeof(b), r->sg);
		if (r->cl >= 0 && r->sg > 0)
			snprintf(c, sizeof(c), "%.2f", r->cl / r->sg);
		else
			snprintf(c, sizeof(c), "-");
		printf("%-3s %-56s %10s %10s %8s %-6s %-20s %s\n", r->scen, r->fig, a, b, c,
		       r->better > 0 ? "higher" : r->better < 0 ? "lower" : "", r->target,
		       r->met < 0 ? "-" : r->met ? "yes" : "NO");
	}
}

/* How each scenario's figures were taken, printed under the table. */
static char legend[16][1200];
static int nlegend;

static void add_legend(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add_legend(const char *fmt, ...)
{
	if (nlegend == (int)(sizeof(legend) / sizeof(legend[0])))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(legend[nlegend++], sizeof(legend[0]), fmt, ap);
	va_end(ap);
}

/* text on lines of at most width columns (cut at spaces), the second and
 * later ones indented by 4. */
static void print_wrapped(const char *text, int width)
{
	const char *p = text;
	int indent = 0;
	while (*p) {
		int room = width - indent, len = (int)strlen(p);
		int cut = len;
		if (len > room) {
			cut = room;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = room;
		}
		printf("%*s%.*s\n", indent, "", cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		indent = 4;
	}
}

/* ---- processes ---- */

/* CPU seconds (user + system) process pid has used so far, or -1. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = pid > 0 ? fopen(path, "r") : NULL;
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* Fields 14 and 15 (utime, stime, clock ticks), counted after the
	 * command name, which may hold spaces but ends with the last ')'. */
	const char *p = strrchr(buf, ')');
	unsigned long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The sum of proc_cpu_s over pids, -1 if any is unknown. */
static double procs_cpu_s(const pid_t *pids, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++) {
		double v = proc_cpu_s(pids[i]);
		if (v < 0)
			return -1;
		s += v;
	}
	return s;
}

/* CPU seconds of this process (every thread: the clients). */
static double self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* perf record -g on pids (comma list; n 0: the whole machine, -a), writing
 * PREFIX-tag.data; 0 when off. */
static pid_t perf_start(const pid_t *pids, int n, const char *tag)
{
	if (!perf_prefix)
		return 0;
	char out[512], list[128] = "";
	snprintf(out, sizeof(out), "%s-%s.data", perf_prefix, tag);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "", (int)pids[i]);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGINT); /* ends (and writes its file) with us */
		if (n > 0)
			execlp("perf", "perf", "record", "-q", "-g", "-p", list, "-o", out, (char *)NULL);
		else
			execlp("perf", "perf", "record", "-q", "-g", "-a", "-o", out, (char *)NULL);
		_exit(127);
	}
	sleep_ms(300); /* let perf attach */
	return pid;
}

static void perf_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGINT);
	waitpid(pid, NULL, 0);
}

/* ---- client configuration ---- */

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "clusterbench: config %s=%s: %s\n", k, v, err);
		exit(2);
	}
}

static rd_kafka_conf_t *base_conf(const char *bootstrap)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	set(conf, "bootstrap.servers", bootstrap);
	set(conf, "broker.address.family", "v4");
	set(conf, "log.connection.close", "false");
	/* a killed broker comes back within seconds: look again soon */
	set(conf, "reconnect.backoff.ms", "50");
	set(conf, "reconnect.backoff.max.ms", "500");
	if (debug_contexts)
		set(conf, "debug", debug_contexts);
	return conf;
}

/* ---- targets: three brokers in ZooKeeper mode, or the single node ---- */

typedef struct target {
	bool cluster;
	hc_cluster c;
	h_broker *b;               /* the single node */
	const char *bootstrap;
} target;

/* The brokers' current pids into pids; their number. */
static int target_pids(target *t, pid_t *pids)
{
	int n = 0;
	if (!t->cluster) {
		if (t->b && t->b->pid > 0)
			pids[n++] = t->b->pid;
		return n;
	}
	for (int id = 1; id <= t->c.n; id++)
		if (t->c.b[id] && t->c.b[id]->pid > 0)
			pids[n++] = t->c.b[id]->pid;
	return n;
}

static void target_close(target *t)
{
	if (t->cluster) {
		int bad = hc_stop(&t->c, 30000);
		if (bad) {
			fprintf(stderr, "clusterbench: %d broker(s) did not exit 0 on SIGTERM\n", bad);
			unclean_stops += bad;
		}
		hc_free(&t->c);
	} else if (t->b) {
		int st = h_broker_stop(t->b, 30000);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "clusterbench: samsa did not stop cleanly (status 0x%x)\n", st);
			h_broker_dump_log(t->b, stderr, 20);
			unclean_stops++;
		}
		h_broker_free(t->b);
		t->b = NULL;
	}
}

static int target_open(target *t, bool cluster)
{
	memset(t, 0, sizeof(*t));
	t->cluster = cluster;
	/* No dirty pages of the run before: the kernel's writeback throttling
	 * would charge them to this one. */
	sync();
	if (cluster) {
		hc_options o = {.brokers = 3, .zk = zk};
		if (hc_start(&t->c, &o) < 0) {
			fprintf(stderr, "clusterbench: the cluster did not form\n");
			hc_free(&t->c);
			failures++;
			return -1;
		}
		t->bootstrap = t->c.bootstrap;
		fprintf(stderr, "clusterbench: cluster %s on %s, pids %d %d %d\n", t->c.chroot,
			t->bootstrap, (int)t->c.b[1]->pid, (int)t->c.b[2]->pid, (int)t->c.b[3]->pid);
		return 0;
	}
	t->b = h_broker_new(NULL);
	if (!t->b || h_broker_start(t->b) < 0) {
		fprintf(stderr, "clusterbench: could not start %s\n", h_samsa_bin());
		h_broker_free(t->b);
		t->b = NULL;
		failures++;
		return -1;
	}
	t->bootstrap = t->b->bootstrap;
	fprintf(stderr, "clusterbench: single node pid %d on %s\n", (int)t->b->pid, t->bootstrap);
	return 0;
}

/* ---- topics ---- */

typedef struct topic_arg {
	const char *topic;
	char why[600];
} topic_arg;

/* The state znode names a leader and all three in the ISR, and every
 * running broker's Metadata names that leader and leader epoch. */
static bool topic_ready(hc_cluster *c, void *arg)
{
	topic_arg *a = arg;
	hc_state st;
	int rc = hc_zk_state(c, a->topic, 0, &st);
	if (rc != CTL_ZK_OK || st.leader < 0 || st.nisr != c->n) {
		snprintf(a->why, sizeof(a->why), "state: %s", rc == CTL_ZK_OK ? st.json : "none");
		return false;
	}
	for (int id = 1; id <= c->n; id++) {
		if (!hc_alive(c, id))
			continue;
		hc_md md;
		if (hc_metadata(c, id, a->topic, &md, 2000) < 0) {
			snprintf(a->why, sizeof(a->why), "broker %d: no Metadata", id);
			return false;
		}
		const hc_md_partition *p = hc_md_part(hc_md_find(&md, a->topic), 0);
		bool ok = p && !p->err && p->leader == st.leader && p->leader_epoch == st.leader_epoch;
		hc_md_free(&md);
		if (!ok) {
			snprintf(a->why, sizeof(a->why), "broker %d's Metadata lags %s", id, st.json);
			return false;
		}
	}
	return true;
}

/* CreateTopics (1 partition; replication factor 3 on the cluster, 1 on the
 * single node; configs key, value, ..., NULL), then wait until every
 * broker serves it. 0 or -1. */
static int create_topic(target *t, const char *topic, const char *const *configs)
{
	char err[256];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(t->bootstrap), err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "clusterbench: %s\n", err);
		return -1;
	}
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, t->cluster ? 3 : 1, err, sizeof(err));
	for (int i = 0; nt && configs && configs[i]; i += 2)
		rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1]);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, 20000, err, sizeof(err));
	rd_kafka_AdminOptions_set_request_timeout(opt, 30000, err, sizeof(err));
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	rd_kafka_event_t *ev = NULL;
	for (int64_t deadline = now_ns() + 40LL * 1000000000; !ev && now_ns() < deadline;) {
		ev = rd_kafka_queue_poll(q, 200);
		if (ev && rd_kafka_event_type(ev) != RD_KAFKA_EVENT_CREATETOPICS_RESULT) {
			rd_kafka_event_destroy(ev);
			ev = NULL;
		}
	}
	int rc = -1;
	if (ev && !rd_kafka_event_error(ev)) {
		size_t cnt;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		    rd_kafka_event_CreateTopics_result(ev), &cnt);
		rc = cnt == 1 && !rd_kafka_topic_result_error(tr[0]) ? 0 : -1;
		if (rc && cnt == 1)
			fprintf(stderr, "clusterbench: CreateTopics %s: %s\n", topic,
				rd_kafka_err2name(rd_kafka_topic_result_error(tr[0])));
	} else {
		fprintf(stderr, "clusterbench: CreateTopics %s: %s\n", topic,
			ev ? rd_kafka_event_error_string(ev) : "no answer");
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(opt);
	if (nt)
		rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	if (rc == 0 && !t->cluster) {
		rc = -1;
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
		for (int i = 0; rc && i < 100; i++) {
			const struct rd_kafka_metadata *md;
			if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0) {
				if (md->topic_cnt == 1 && !md->topics[0].err &&
				    md->topics[0].partition_cnt == 1 && md->topics[0].partitions[0].leader >= 0)
					rc = 0;
				rd_kafka_metadata_destroy(md);
			}
			if (rc)
				sleep_ms(100);
		}
		rd_kafka_topic_destroy(rkt);
	}
	rd_kafka_destroy(rk);
	if (rc == 0 && t->cluster) {
		topic_arg a = {.topic = topic};
		if (hc_wait(&t->c, 30000, topic_ready, &a) < 0) {
			fprintf(stderr, "clusterbench: topic %s not ready: %s\n", topic, a.why);
			rc = -1;
		}
	}
	return rc;
}

/* ---- the machine: what a new page-cache page costs ---- */

/* Write a new file of bytes at path (1 MiB pwrites, no fsync) and delete
 * it; MB/s and this thread's CPU s per GB, or -1. */
static void write_new_file(const char *path, long long bytes, double *mbps, double *cpu_per_gb)
{
	*mbps = *cpu_per_gb = -1;
	char *buf = malloc(1 << 20);
	int fd = buf ? open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600) : -1;
	if (fd < 0) {
		free(buf);
		return;
	}
	memset(buf, 'x', 1 << 20);
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	int64_t t0 = now_ns();
	long long done = 0;
	while (done < bytes) {
		size_t chunk = bytes - done < (1 << 20) ? (size_t)(bytes - done) : 1 << 20;
		ssize_t k = pwrite(fd, buf, chunk, done);
		if (k <= 0)
			break;
		done += k;
	}
	int64_t t1 = now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	close(fd);
	unlink(path);
	free(buf);
	if (done == bytes && bytes > 0) {
		double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
		*mbps = (double)bytes / 1e6 / ((double)(t1 - t0) / 1e9);
		*cpu_per_gb = cpu / ((double)bytes / 1e9);
	}
}

/* Put bytes of just-freed pages in the kernel's free lists: a file under
 * the base dir (the brokers' file system) written and deleted. */
static void reuse_memory(long long bytes)
{
	char path[PATH_MAX];
	double mbps, cpu;
	snprintf(path, sizeof(path), "%s/reuse", h_base_dir());
	write_new_file(path, bytes, &mbps, &cpu);
}

/*
 * A new file of bytes under the base dir, where the brokers' log dirs are:
 * once after COLD_MS without frees (its pages come from memory the balloon
 * gave back to the host: each is faulted in again), then, after deleting
 * it, at once a second one (reusing the first's pages). MB/s and this
 * thread's CPU s per GB of each, -1 when not measured.
 */
static void new_file_write(long long bytes, double mbps[2], double cpu_per_gb[2])
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/new-file", h_base_dir());
	sync();
	sleep_ms(cold_ms());
	for (int i = 0; i < 2; i++)
		write_new_file(path, bytes, &mbps[i], &cpu_per_gb[i]);
}

static void machine(long long bytes)
{
	double mbps[2], cpu[2];
	new_file_write(bytes, mbps, cpu);
	char f[64];
	snprintf(f, sizeof(f), "new %.1f GB file write MB/s, memory given back", (double)bytes / 1e9);
	add_row("M", f, mbps[0], -1, +1);
	add_row("M", "  CPU s per GB", cpu[0], -1, -1);
	add_row("M", "  again at once, reusing the memory: MB/s", mbps[1], -1, +1);
	add_row("M", "  CPU s per GB", cpu[1], -1, -1);
	add_legend("M: this machine, no broker: a new file of %.1f GB (as much as C1's cluster "
		   "writes into page cache: three replicas) written with 1 MiB pwrites %d ms after "
		   "the last frees, when this VM's balloon has handed free memory back to the host "
		   "(free page reporting) and every new page is faulted in again; then, after "
		   "deleting it, a second one at once, on the pages just freed: C1's \"fresh\" and "
		   "\"freed\" states.",
		   (double)bytes / 1e9, cold_ms());
}

/* ---- C1: throughput ---- */

typedef struct prod_res {
	bool ok;
	double mbps;        /* MB/s of values */
	double broker_cpu;  /* CPU s of the brokers over the timed part, -1 unknown */
	double client_cpu;  /* CPU s of this process over the timed part */
	double gb;          /* GB of values delivered */
} prod_res;

typedef struct prod_state {
	_Atomic long delivered, failed, warm_done, warm_failed;
	_Atomic int first_err;
	_Atomic int64_t last_dr_ns;
	atomic_bool stop_poll;
	rd_kafka_t *rk;
} prod_state;

static void prod_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	prod_state *st = opaque;
	if (m->_private) { /* warm-up */
		st->warm_done++;
		if (m->err)
			st->warm_failed++;
		return;
	}
	int64_t t = now_ns();
	int64_t prev = atomic_load(&st->last_dr_ns);
	while (prev < t && !atomic_compare_exchange_weak(&st->last_dr_ns, &prev, t))
		;
	if (m->err) {
		int none = 0;
		atomic_compare_exchange_strong(&st->first_err, &none, (int)m->err);
		st->failed++;
	} else {
		st->delivered++;
	}
}

static void *prod_poller(void *arg)
{
	prod_state *st = arg;
	while (!atomic_load(&st->stop_poll))
		rd_kafka_poll(st->rk, 50);
	return NULL;
}

static int produce_one(rd_kafka_t *rk, const char *topic, const char *payload, size_t size,
		       bool warm)
{
	for (;;) {
		rd_kafka_resp_err_t e = rd_kafka_producev(
		    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE((void *)payload, size),
		    RD_KAFKA_V_OPAQUE(warm ? (void *)1 : NULL), RD_KAFKA_V_END);
		if (!e)
			return 0;
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			fprintf(stderr, "clusterbench: produce: %s\n", rd_kafka_err2str(e));
			return -1;
		}
		usleep(200);
	}
}

/*
 * n records of size bytes to topic partition 0 with acks, linger.ms=5, after
 * a warm-up to WARM_TOPIC (when warm) and, when reuse > 0, a file of reuse
 * bytes written and deleted (reuse_memory). CPU of the brokers over the
 * timed part; perf on them when -p (tag).
 */
static void produce_run(target *t, const char *topic, const char *acks, long n, size_t size,
			bool warm, long long reuse, const char *tag, prod_res *r)
{
	prod_state st = {0};
	char err[256];
	memset(r, 0, sizeof(*r));
	r->broker_cpu = -1;
	char *payload = malloc(size);
	if (!payload)
		return;
	for (size_t i = 0; i < size; i++)
		payload[i] = (char)('a' + i % 26);
	rd_kafka_conf_t *conf = base_conf(t->bootstrap);
	set(conf, "acks", acks);
	set(conf, "linger.ms", "5");
	set(conf, "enable.idempotence", "false");
	set(conf, "queue.buffering.max.messages", "1000000");
	rd_kafka_conf_set_dr_msg_cb(conf, prod_dr);
	rd_kafka_conf_set_opaque(conf, &st);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "clusterbench: producer: %s\n", err);
		free(payload);
		return;
	}
	st.rk = rk;
	pthread_t poller;
	pthread_create(&poller, NULL, prod_poller, &st);

	/* Warm-up: connections, metadata, the brokers' allocations. */
	bool bad = false;
	long nwarm = warm ? (long)(WARM_BYTES / (double)size) : 0;
	for (long i = 0; i < nwarm && !bad; i++)
		bad = produce_one(rk, WARM_TOPIC, payload, size, true) < 0;
	rd_kafka_flush(rk, 60000);
	for (int w = 0; w < 5000 && st.warm_done < nwarm; w++)
		sleep_ms(1);
	if (st.warm_done != nwarm || st.warm_failed) {
		fprintf(stderr, "clusterbench: warm-up: %ld of %ld delivered, %ld failed\n",
			(long)st.warm_done, nwarm, (long)st.warm_failed);
		bad = true;
	}
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rkt && rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);

	if (reuse > 0 && !bad)
		reuse_memory(reuse);
	pid_t pids[HC_MAX_BROKERS] = {0};
	int np = target_pids(t, pids);
	pid_t perf = bad || !tag || np == 0 ? 0 : perf_start(pids, np, tag);
	double cpu0 = procs_cpu_s(pids, np), self0 = self_cpu_s();
	int64_t t0 = now_ns();
	long produced = 0;
	for (long i = 0; i < n && !bad; i++) {
		bad = produce_one(rk, topic, payload, size, false) < 0;
		produced += !bad;
	}
	rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 600000);
	double cpu1 = procs_cpu_s(pids, np), self1 = self_cpu_s();
	perf_stop(perf);
	atomic_store(&st.stop_poll, true);
	pthread_join(poller, NULL);
	rd_kafka_poll(rk, 0);
	if (fe)
		fprintf(stderr, "clusterbench: flush: %s (%d still queued)\n", rd_kafka_err2str(fe),
			rd_kafka_outq_len(rk));
	rd_kafka_destroy(rk);
	free(payload);
	if (st.failed)
		fprintf(stderr, "clusterbench: %ld delivery failures, first: %s\n", (long)st.failed,
			rd_kafka_err2str((rd_kafka_resp_err_t)st.first_err));
	double secs = (double)(st.last_dr_ns - t0) / 1e9;
	r->gb = (double)st.delivered * (double)size / 1e9;
	r->ok = !bad && !fe && st.failed == 0 && st.delivered == n && produced == n && secs > 0;
	if (!r->ok) {
		fprintf(stderr, "clusterbench: produce: %ld of %ld produced, %ld delivered, %ld failed\n",
			produced, n, (long)st.delivered, (long)st.failed);
		return;
	}
	r->mbps = r->gb * 1e3 / secs;
	r->broker_cpu = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
	r->client_cpu = self1 - self0;
}

static void c1(void)
{
	long n = scaled(1000000);
	const size_t size = 1024;
	/* targets: 0 cluster acks=all, 1 single acks=1, 2 cluster acks=1;
	 * memory: 0 just freed, 1 fresh from the host */
	static const char *const names[3] = {"cluster acks=all", "single acks=1", "cluster acks=1"};
	static const char *const tags[2][3] = {
	    {"c1-cluster-all-freed", "c1-single-freed", "c1-cluster-1-freed"},
	    {"c1-cluster-all-fresh", "c1-single-fresh", "c1-cluster-1-fresh"}};
	static const char *const mem[2] = {"memory just freed", "memory fresh from the host"};
	double mbps[2][3][MAX_REPS], bcpu[2][3][MAX_REPS], ccpu[2][3][MAX_REPS];
	int nr[2][3] = {{0}}, nb[2][3] = {{0}};
	for (int rep = 0; rep < reps; rep++) {
		for (int w = 1; w >= 0; w--) {
			for (int k = 0; k < 3; k++) {
				if (w == 1 && k == 2)
					continue; /* cluster acks=1 only with memory freed */
				bool cluster = k != 1;
				const char *acks = k == 0 ? "all" : "1";
				fprintf(stderr, "clusterbench: C1 %s, %s: %ld x %zu B (run %d of %d)\n",
					names[k], mem[w], n, size, rep + 1, reps);
				if (w == 1)
					sleep_ms(cold_ms()); /* what the run before freed goes back */
				target t;
				if (target_open(&t, cluster) < 0)
					continue;
				static const char *const misr2[] = {"min.insync.replicas", "2", NULL};
				prod_res p = {0};
				/* fresh: nothing freed for COLD_MS; just freed: as much
				 * as the run writes into page cache, written and
				 * deleted right before the timed part */
				long long reuse = w == 0 ? (cluster ? 3 : 1) * (long long)n * (long long)size : 0;
				if (create_topic(&t, C1_TOPIC, cluster ? misr2 : NULL) < 0 ||
				    create_topic(&t, WARM_TOPIC, cluster ? misr2 : NULL) < 0) {
					failures++;
				} else {
					produce_run(&t, C1_TOPIC, acks, n, size, true, reuse, tags[w][k], &p);
					if (!p.ok)
						failures++;
				}
				if (p.ok) {
					mbps[w][k][nr[w][k]] = p.mbps;
					ccpu[w][k][nr[w][k]++] = p.client_cpu / p.gb;
					if (p.broker_cpu >= 0)
						bcpu[w][k][nb[w][k]++] = p.broker_cpu / p.gb;
					fprintf(stderr, "clusterbench: C1 %s, %s: %.1f MB/s, brokers %.2f CPU s, "
							"client %.2f CPU s for %.2f GB\n",
						names[k], mem[w], p.mbps, p.broker_cpu, p.client_cpu, p.gb);
				}
				target_close(&t);
			}
		}
	}
	double m[2][3], b[2][3], cc[2][3];
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < 3; k++) {
			char what[96];
			snprintf(what, sizeof(what), "C1 %s, %s, MB/s", names[k], mem[w]);
			m[w][k] = median_runs(what, mbps[w][k], nr[w][k]);
			snprintf(what, sizeof(what), "C1 %s, %s, broker CPU s per GB", names[k], mem[w]);
			b[w][k] = median_runs(what, bcpu[w][k], nb[w][k]);
			snprintf(what, sizeof(what), "C1 %s, %s, client CPU s per GB", names[k], mem[w]);
			cc[w][k] = median_runs(what, ccpu[w][k], nr[w][k]);
		}
	target_ratio(add_row("C1", "produce MB/s, 1 KiB, cl acks=all / sg acks=1, mem freed", m[0][0],
			     m[0][1], +1),
		     0.5);
	target_ratio(add_row("C1", "  the same, memory fresh from the host", m[1][0], m[1][1], +1), 0.5);
	add_row("C1", "  cluster acks=1 MB/s, memory freed", m[0][2], m[0][1], +1);
	add_row("C1", "  broker CPU s/GB, acks=all (sum of 3), memory freed", b[0][0], b[0][1], -1);
	add_row("C1", "  broker CPU s/GB, acks=all (sum of 3), memory fresh", b[1][0], b[1][1], -1);
	add_row("C1", "  broker CPU s/GB, cluster acks=1, memory freed", b[0][2], b[0][1], -1);
	add_row("C1", "  client CPU s/GB, acks=all, memory freed", cc[0][0], cc[0][1], -1);
	add_row("C1", "  client CPU s/GB, acks=all, memory fresh", cc[1][0], cc[1][1], -1);
	add_legend("C1: %ld x 1 KiB to one partition, one librdkafka producer, linger.ms=5, no "
		   "idempotence, after a 20 MB warm-up; MB/s (10^6 B of values) from the first "
		   "produce call to the last delivery report. Cluster: RF 3, min.insync.replicas=2. "
		   "CPU: /proc/PID/stat of the brokers (summed), getrusage of the client, over the "
		   "timed part. Each target in two memory states (see M): \"fresh\": started %d ms "
		   "after the run before deleted its files; \"freed\": right before the timed part a "
		   "file as large as what the run puts in page cache (x3 on the cluster) is written "
		   "and deleted (the balloon takes freed pages back after about 2 s, so the later part "
		   "of a longer run gets fresh ones); the cluster with acks=1 only so. Medians of %d "
		   "runs, the five alternating.",
		   n, cold_ms(), reps);
	machine(3LL * (long long)n * (long long)size);
}

/* ---- C2: end-to-end latency ---- */

typedef struct lat_res {
	bool ok;
	long n;
	double p50, p99, max;
} lat_res;

/* One record in flight: produce (acks, linger.ms=0), consume it (legacy
 * consumer by assignment, fetch.wait.max.ms=500), repeat; iters timed after
 * 50 not timed; stops early after max_secs. */
static void latency_run(const char *bootstrap, const char *acks, long iters, double max_secs,
			lat_res *r)
{
	char err[256];
	memset(r, 0, sizeof(*r));
	rd_kafka_conf_t *pc = base_conf(bootstrap);
	set(pc, "acks", acks);
	set(pc, "linger.ms", "0");
	set(pc, "enable.idempotence", "false");
	rd_kafka_t *prk = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
	rd_kafka_conf_t *cc = base_conf(bootstrap);
	set(cc, "enable.auto.commit", "false");
	set(cc, "enable.auto.offset.store", "false");
	set(cc, "enable.partition.eof", "false");
	set(cc, "fetch.wait.max.ms", "500");
	rd_kafka_t *crk = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
	int64_t lo, hi;
	if (!prk || !crk || rd_kafka_query_watermark_offsets(crk, C2_TOPIC, 0, &lo, &hi, 10000)) {
		fprintf(stderr, "clusterbench: C2 clients: %s\n", prk && crk ? "watermarks" : err);
		if (prk)
			rd_kafka_destroy(prk);
		if (crk)
			rd_kafka_destroy(crk);
		return;
	}
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(crk, C2_TOPIC, NULL);
	rd_kafka_consume_start(rkt, 0, hi);
	int64_t *lat = calloc((size_t)iters, sizeof(int64_t));
	const long warm = 50;
	long done = 0, bad = 0;
	int64_t start = now_ns();
	char payload[100] = {0};
	for (long i = 0; i < warm + iters && lat; i++) {
		long off = (long)hi + i;
		memcpy(payload, &off, sizeof(off));
		int64_t t0 = now_ns();
		if (rd_kafka_producev(prk, RD_KAFKA_V_TOPIC(C2_TOPIC), RD_KAFKA_V_PARTITION(0),
				      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				      RD_KAFKA_V_VALUE(payload, sizeof(payload)), RD_KAFKA_V_END)) {
			bad++;
			break;
		}
		rd_kafka_poll(prk, 0);
		int64_t deadline = t0 + 10LL * 1000000000;
		bool got = false;
		while (!got && now_ns() < deadline) {
			rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 1000);
			if (!m)
				continue;
			long v = -1;
			if (!m->err && m->len >= sizeof(long))
				memcpy(&v, m->payload, sizeof(v));
			if (m->err || m->offset != off || v != off)
				bad++;
			got = !m->err;
			rd_kafka_message_destroy(m);
		}
		int64_t t = now_ns() - t0;
		rd_kafka_poll(prk, 0);
		if (!got) {
			fprintf(stderr, "clusterbench: C2 record %ld not consumed within 10 s\n", off);
			bad++;
			break;
		}
		if (i >= warm)
			lat[done++] = t;
		if (i >= warm + 100 && (double)(now_ns() - start) / 1e9 > max_secs)
			break;
	}
	rd_kafka_consume_stop(rkt, 0);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_flush(prk, 10000);
	rd_kafka_destroy(prk);
	rd_kafka_destroy(crk);
	if (lat && done > 0) {
		qsort(lat, (size_t)done, sizeof(int64_t), cmp_i64);
		r->n = done;
		r->p50 = pct_ms(lat, done, 0.5);
		r->p99 = pct_ms(lat, done, 0.99);
		r->max = (double)lat[done - 1] / 1e6;
	}
	r->ok = !bad && done >= 100;
	free(lat);
}

static void c2(void)
{
	long iters = scaled(5000) < 200 ? 200 : scaled(5000);
	double max_secs = 60 * scale < 10 ? 10 : 60 * scale;
	double p50[2][MAX_REPS], p99[2][MAX_REPS], mx[2][MAX_REPS];
	int nr[2] = {0, 0};
	long samples[2] = {0, 0};
	for (int rep = 0; rep < reps; rep++) {
		for (int k = 0; k < 2; k++) {
			bool cluster = k == 0;
			target t;
			if (target_open(&t, cluster) < 0)
				continue;
			static const char *const misr2[] = {"min.insync.replicas", "2", NULL};
			lat_res lr = {0};
			if (create_topic(&t, C2_TOPIC, cluster ? misr2 : NULL) == 0)
				latency_run(t.bootstrap, cluster ? "all" : "1", iters, max_secs, &lr);
			fprintf(stderr, "clusterbench: C2 %s: %ld samples, p50 %.3f p99 %.3f max %.3f ms\n",
				cluster ? "cluster acks=all" : "single acks=1", lr.n, lr.p50, lr.p99,
				lr.max);
			if (lr.ok) {
				p50[k][nr[k]] = lr.p50;
				p99[k][nr[k]] = lr.p99;
				mx[k][nr[k]++] = lr.max;
				samples[k] += lr.n;
			} else {
				failures++;
			}
			target_close(&t);
		}
	}
	double m50[2], m99[2], mmx[2];
	for (int k = 0; k < 2; k++) {
		char what[64];
		snprintf(what, sizeof(what), "C2 %s p99 ms", k ? "single acks=1" : "cluster acks=all");
		m99[k] = median_runs(what, p99[k], nr[k]);
		m50[k] = median(p50[k], nr[k]);
		mmx[k] = median(mx[k], nr[k]);
	}
	add_row("C2", "e2e p50 ms (cluster acks=all, single acks=1)", m50[0], m50[1], -1);
	target_below(add_row("C2", "e2e p99 ms", m99[0], m99[1], -1), 2.0, "< 2 ms");
	add_row("C2", "e2e max ms (median of the runs' max)", mmx[0], mmx[1], -1);
	add_legend("C2: produce one 100 B record (linger.ms=0), a consumer by assignment "
		   "(fetch.wait.max.ms=500) receives it, then the next; %ld records timed per run "
		   "(at most %.0f s), samples cluster %ld, single %ld; each figure the median over "
		   "%d runs. Cluster: acks=all, RF 3, min.insync.replicas=2.",
		   iters, max_secs, samples[0], samples[1], reps);
}

/* ---- C3 and K: fail-over under an idempotent acks=all producer ---- */

enum { FO_PENDING = 0, FO_ACKED, FO_FAILED, FO_INDETERMINATE };

typedef struct fo_rec {
	int64_t sent_ns;
	int64_t done_ns;     /* when its outcome arrived */
	int64_t offset;      /* acknowledged offset, -1 if none */
	long order;          /* position among the outcomes */
	_Atomic int state;   /* FO_*, stored last (release) */
} fo_rec;

/* librdkafka's topic.metadata.refresh.fast.interval.ms (its default), for
 * the legend */
static char fo_fast_query_ms[16] = "?";

#define FO_CHUNK 65536
#define FO_CHUNKS 1024

typedef struct fo_prod {
	rd_kafka_t *rk;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	fo_rec *chunks[FO_CHUNKS];
	atomic_long nsent;
	atomic_long nacked, nfailed, nindeterminate;
	long outcomes;            /* producer thread only */
	int64_t start_ns, end_ns;
	char fatal[256];
	char first_error[256];
} fo_prod;

static fo_rec *fo_get(fo_prod *p, long i)
{
	if (i < 0 || i >= (long)FO_CHUNK * FO_CHUNKS || !p->chunks[i / FO_CHUNK])
		return NULL;
	return &p->chunks[i / FO_CHUNK][i % FO_CHUNK];
}

/* The state of record i (FO_PENDING for one not sent), read after its
 * outcome's fields (acquire). */
static int fo_state(fo_prod *p, long i)
{
	fo_rec *r = fo_get(p, i);
	return r ? atomic_load_explicit(&r->state, memory_order_acquire) : FO_PENDING;
}

static void fo_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	fo_prod *p = opaque;
	fo_rec *r = fo_get(p, (long)(intptr_t)m->_private - 1);
	if (!r)
		return;
	r->done_ns = now_ns();
	r->order = p->outcomes++;
	int state;
	if (!m->err) {
		r->offset = m->offset;
		state = FO_ACKED;
		atomic_fetch_add(&p->nacked, 1);
	} else {
		state = rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_NOT_PERSISTED ? FO_FAILED
										    : FO_INDETERMINATE;
		atomic_fetch_add(state == FO_FAILED ? &p->nfailed : &p->nindeterminate, 1);
		if (!p->first_error[0])
			snprintf(p->first_error, sizeof(p->first_error), "record %ld: %s",
				 (long)(intptr_t)m->_private - 1, rd_kafka_err2name(m->err));
	}
	atomic_store_explicit(&r->state, state, memory_order_release);
}

static void fo_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	fo_prod *p = opaque;
	if (err == RD_KAFKA_RESP_ERR__FATAL && !p->fatal[0]) {
		char buf[200];
		rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
		snprintf(p->fatal, sizeof(p->fatal), "%s: %s (%s)", rd_kafka_err2name(orig), buf, reason);
	}
	/* Others (connections refused while a broker is down) are what the
	 * scenario causes; the outcomes tell whether they mattered. */
}

/* Values "<seq>", FO_RATE a second, to partition 0. */
static void *fo_main(void *arg)
{
	fo_prod *p = arg;
	char val[32];
	while (!atomic_load(&p->stop) && !p->fatal[0]) {
		long due = (long)((now_ns() - p->start_ns) / (1000000000 / FO_RATE)) + 1;
		long sent = atomic_load(&p->nsent);
		while (sent < due) {
			if (!fo_get(p, sent)) {
				if (sent >= (long)FO_CHUNK * FO_CHUNKS)
					break;
				p->chunks[sent / FO_CHUNK] = calloc(FO_CHUNK, sizeof(fo_rec));
				if (!p->chunks[sent / FO_CHUNK])
					break;
			}
			fo_rec *r = fo_get(p, sent);
			r->sent_ns = now_ns();
			r->offset = -1;
			snprintf(val, sizeof(val), "%ld", sent);
			rd_kafka_resp_err_t e = rd_kafka_producev(
			    p->rk, RD_KAFKA_V_TOPIC(C3_TOPIC), RD_KAFKA_V_PARTITION(0),
			    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(val, strlen(val)),
			    RD_KAFKA_V_OPAQUE((void *)(intptr_t)(sent + 1)), RD_KAFKA_V_END);
			if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break;
			if (e) {
				snprintf(p->fatal, sizeof(p->fatal), "rd_kafka_producev: %s",
					 rd_kafka_err2name(e));
				break;
			}
			atomic_store(&p->nsent, ++sent);
		}
		rd_kafka_poll(p->rk, 1);
	}
	rd_kafka_flush(p->rk, 30000);
	if (rd_kafka_outq_len(p->rk) > 0) {
		rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		for (int i = 0; i < 20 && rd_kafka_outq_len(p->rk) > 0; i++)
			rd_kafka_poll(p->rk, 100);
	}
	rd_kafka_poll(p->rk, 0);
	return NULL;
}

static fo_prod *fo_start(const char *bootstrap)
{
	char err[256];
	fo_prod *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "acks", "all");
	set(conf, "enable.idempotence", "true");
	set(conf, "linger.ms", "0");
	set(conf, "request.timeout.ms", "5000");
	set(conf, "message.timeout.ms", "30000");
	set(conf, "retry.backoff.ms", "100");
	size_t sz = sizeof(fo_fast_query_ms);
	if (rd_kafka_conf_get(conf, "topic.metadata.refresh.fast.interval.ms", fo_fast_query_ms,
			      &sz) != RD_KAFKA_CONF_OK)
		snprintf(fo_fast_query_ms, sizeof(fo_fast_query_ms), "?");
	rd_kafka_conf_set_opaque(conf, p);
	rd_kafka_conf_set_dr_msg_cb(conf, fo_dr);
	rd_kafka_conf_set_error_cb(conf, fo_error);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!p->rk) {
		fprintf(stderr, "clusterbench: producer: %s\n", err);
		free(p);
		return NULL;
	}
	p->start_ns = now_ns();
	if (pthread_create(&p->thread, NULL, fo_main, p) != 0) {
		rd_kafka_destroy(p->rk);
		free(p);
		return NULL;
	}
	p->started = true;
	return p;
}

static void fo_stop(fo_prod *p)
{
	if (!p->started)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	p->started = false;
	p->end_ns = now_ns();
}

static void fo_free(fo_prod *p)
{
	if (!p)
		return;
	fo_stop(p);
	rd_kafka_destroy(p->rk);
	for (int i = 0; i < FO_CHUNKS; i++)
		free(p->chunks[i]);
	free(p);
}

/* The start offset of the first epoch above epoch in broker id's
 * leader-epoch-checkpoint of C3_TOPIC-0; -1 when there is none (yet). */
static int64_t epoch_start_above(hc_cluster *c, int id, int32_t epoch)
{
	char path[PATH_MAX];
	hc_partition_dir(c, id, C3_TOPIC, 0, path, sizeof(path) - 32);
	strcat(path, "/leader-epoch-checkpoint");
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int version = -1, count = -1;
	int64_t found = -1;
	if (fscanf(f, "%d %d", &version, &count) == 2 && version == 0) {
		for (int i = 0; i < count && found < 0; i++) {
			int32_t e;
			int64_t s;
			if (fscanf(f, "%" SCNd32 " %" SCNd64, &e, &s) != 2)
				break;
			if (e > epoch)
				found = s;
		}
	}
	fclose(f);
	return found;
}

/* The earliest outcome time of a record acknowledged at an offset >= start,
 * among records from *from on; -1 if none yet. Moves *from past the records
 * whose outcome is known and whose offset lies below start. */
static int64_t first_ack_from(fo_prod *p, long *from, int64_t start)
{
	long n = atomic_load(&p->nsent);
	int64_t best = -1;
	bool prefix = true;
	for (long i = *from; i < n; i++) {
		fo_rec *r = fo_get(p, i);
		int st = fo_state(p, i);
		if (st == FO_ACKED && r->offset >= start) {
			if (best < 0 || r->done_ns < best)
				best = r->done_ns;
		} else if (prefix && st != FO_PENDING) {
			*from = i + 1;
			continue;
		}
		prefix = false;
	}
	return best;
}

/* true when a record sent after t_ns was acknowledged. */
static bool acked_after(fo_prod *p, int64_t t_ns)
{
	for (long i = atomic_load(&p->nsent) - 1; i >= 0; i--) {
		fo_rec *r = fo_get(p, i);
		if (r->sent_ns <= t_ns)
			return false;
		if (fo_state(p, i) == FO_ACKED)
			return true;
	}
	return false;
}

/* The lowest index whose outcome is not known yet. */
static long first_pending(fo_prod *p, long from)
{
	long n = atomic_load(&p->nsent);
	while (from < n && fo_state(p, from) != FO_PENDING)
		from++;
	return from;
}

typedef struct fo_round {
	double failover_ms; /* signal to the first acknowledgement on the new leader */
	double elect_ms;    /* signal to a new leader in the state znode */
	double exit_ms;     /* signal to the exit (SIGTERM) */
	bool exit_clean;    /* exited with status 0 */
} fo_round;

/*
 * One round: wait for the full ISR, signal (SIGKILL or SIGTERM) the leader
 * of C3_TOPIC-0, time the fail-over and (SIGTERM) the exit, restart the
 * broker. 0 or -1.
 */
static int fo_round_run(hc_cluster *c, fo_prod *p, int sig, int round, fo_round *out)
{
	static const int32_t all[3] = {1, 2, 3};
	memset(out, 0, sizeof(*out));
	out->exit_ms = -1;
	if (hc_wait_isr(c, C3_TOPIC, 0, all, 3, 60000) < 0)
		return -1;
	hc_state before;
	if (hc_zk_state(c, C3_TOPIC, 0, &before) != CTL_ZK_OK || before.leader < 1)
		return -1;
	int victim = before.leader;
	/* A steady state first: the producer acknowledged for a while since
	 * the ISR became full (its connections back, its metadata current). */
	int64_t settle = now_ns();
	sleep_ms(FO_SETTLE_MS);
	if (!acked_after(p, settle)) {
		fprintf(stderr, "clusterbench: round %d: no acknowledgement for %d ms before the "
				"signal\n", round, FO_SETTLE_MS);
		return -1;
	}
	/* the scan for the first acknowledgement starts at the oldest record
	 * without an outcome */
	long from = first_pending(p, 0);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	int64_t t0 = now_ns();
	if (sig == SIGKILL ? hc_kill(c, victim) : hc_term(c, victim)) {
		fprintf(stderr, "clusterbench: could not signal broker %d\n", victim);
		return -1;
	}
	int64_t deadline = t0 + (int64_t)(HC_SESSION_MS + 30000) * 1000000;
	int leader = -1;
	int32_t epoch = -1;
	int64_t start = -1, ack = -1, exited = sig == SIGKILL ? t0 : -1, elected = -1;
	int polls = 0;
	while (now_ns() < deadline && (ack < 0 || exited < 0)) {
		if (exited < 0 && !hc_alive(c, victim)) {
			exited = now_ns();
			int st = c->b[victim]->last_status;
			out->exit_clean = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		}
		/* the state znode every ms until it names a new leader, then
		 * that leader's checkpoint every 10 ms */
		if (leader < 0) {
			hc_state st;
			if (hc_zk_state(c, C3_TOPIC, 0, &st) == CTL_ZK_OK && st.leader >= 1 &&
			    st.leader != victim) {
				elected = now_ns();
				leader = st.leader;
				epoch = st.leader_epoch;
			}
		} else if (start < 0 && polls++ % 10 == 0) {
			start = epoch_start_above(c, leader, before.leader_epoch);
		}
		if (start >= 0 && ack < 0)
			ack = first_ack_from(p, &from, start);
		if (p->fatal[0])
			break;
		sleep_ms(1);
	}
	if (exited < 0 && sig != SIGKILL) {
		fprintf(stderr, "clusterbench: broker %d did not exit after SIGTERM\n", victim);
		hc_kill(c, victim);
	}
	if (ack >= 0)
		out->failover_ms = (double)(ack - t0) / 1e6;
	out->elect_ms = elected >= 0 ? (double)(elected - t0) / 1e6 : -1;
	if (sig != SIGKILL && exited >= 0)
		out->exit_ms = (double)(exited - t0) / 1e6;
	fprintf(stderr, "clusterbench: round %d: %s broker %d (leader epoch %d) at %lld.%03ld; new "
			"leader %d at %.1f ms, epoch %d from offset %" PRId64 "; fail-over %.1f ms%s",
		round, sig == SIGKILL ? "kill -9" : "SIGTERM", victim, before.leader_epoch,
		(long long)wall.tv_sec, wall.tv_nsec / 1000000, leader, out->elect_ms, epoch, start,
		ack >= 0 ? out->failover_ms : -1.0, sig == SIGKILL ? "\n" : "");
	if (sig != SIGKILL)
		fprintf(stderr, ", exit %.1f ms (%s)\n", out->exit_ms,
			out->exit_clean ? "status 0" : "NOT status 0");
	if (p->fatal[0])
		fprintf(stderr, "clusterbench: the producer hit a fatal error: %s\n", p->fatal);
	if (hc_restart(c, victim) < 0) {
		fprintf(stderr, "clusterbench: broker %d did not restart\n", victim);
		return -1;
	}
	return ack >= 0 && !p->fatal[0] ? 0 : -1;
}

/* Read C3_TOPIC-0 from offset 0 to its high watermark into h; records read
 * or -1. */
static long read_back(const char *bootstrap, chk *h)
{
	char err[256];
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "enable.auto.commit", "false");
	set(conf, "enable.auto.offset.store", "false");
	set(conf, "enable.partition.eof", "false");
	set(conf, "fetch.wait.max.ms", "100");
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk)
		return -1;
	int64_t lo = -1, hi = -1;
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
	for (int i = 0; i < 60; i++) {
		e = rd_kafka_query_watermark_offsets(rk, C3_TOPIC, 0, &lo, &hi, 5000);
		if (!e)
			break;
		sleep_ms(500);
	}
	if (e) {
		fprintf(stderr, "clusterbench: watermarks: %s\n", rd_kafka_err2name(e));
		rd_kafka_destroy(rk);
		return -1;
	}
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, C3_TOPIC, NULL);
	rd_kafka_consume_start(rkt, 0, 0);
	long n = 0;
	int64_t next = 0, idle = now_ns();
	char val[64];
	rd_kafka_message_t *batch[1000];
	while (next < hi && now_ns() - idle < 60LL * 1000000000) {
		ssize_t k = rd_kafka_consume_batch(rkt, 0, 500, batch, 1000);
		for (ssize_t i = 0; i < k; i++) {
			rd_kafka_message_t *m = batch[i];
			if (!m->err && m->offset >= next) {
				size_t len = m->len < sizeof(val) - 1 ? m->len : sizeof(val) - 1;
				memcpy(val, m->payload ? m->payload : "", m->payload ? len : 0);
				val[m->payload ? len : 0] = 0;
				chk_read(h, 0, m->offset, val);
				next = m->offset + 1;
				n++;
			}
			rd_kafka_message_destroy(m);
		}
		if (k > 0)
			idle = now_ns();
	}
	rd_kafka_consume_stop(rkt, 0);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	if (next < hi) {
		fprintf(stderr, "clusterbench: read back stalled at offset %" PRId64 " of %" PRId64 "\n",
			next, hi);
		return -1;
	}
	return n;
}

/* The producer's records into h in the order their outcomes arrived. */
static void fo_feed(fo_prod *p, chk *h)
{
	long n = atomic_load(&p->nsent);
	long *by_order = malloc(((size_t)n + 1) * sizeof(long));
	if (!by_order)
		return;
	for (long k = 0; k < n; k++)
		by_order[k] = -1;
	char val[32];
	for (long i = 0; i < n; i++) {
		fo_rec *r = fo_get(p, i);
		if (fo_state(p, i) != FO_PENDING && r->order >= 0 && r->order < n)
			by_order[r->order] = i;
	}
	for (long k = 0; k < n; k++) {
		long i = by_order[k];
		if (i < 0)
			continue;
		fo_rec *r = fo_get(p, i);
		int st = fo_state(p, i);
		snprintf(val, sizeof(val), "%ld", i);
		chk_write(h, 0, 0, val,
			  st == FO_ACKED ? CHK_ACKED : st == FO_FAILED ? CHK_FAILED : CHK_INDETERMINATE,
			  r->offset, r->done_ns / 1000000);
	}
	for (long i = 0; i < n; i++)
		if (fo_state(p, i) == FO_PENDING) {
			snprintf(val, sizeof(val), "%ld", i);
			chk_write(h, 0, 0, val, CHK_INDETERMINATE, -1, 0);
		}
	free(by_order);
}

typedef struct fo_res {
	int rounds;               /* rounds that measured */
	double *failover;         /* ms, one per round */
	double *elect;            /* ms, one per round */
	double *exit_ms;          /* SIGTERM: ms, one per round */
	int unclean_exits;        /* SIGTERM rounds whose broker did not exit 0 */
	chk_report rep;
	bool checked;             /* rep valid */
} fo_res;

/* nrounds rounds of sig on a cluster of its own, then the check. */
static void fo_scenario(int sig, int nrounds, fo_res *res)
{
	memset(res, 0, sizeof(*res));
	res->failover = calloc((size_t)nrounds, sizeof(double));
	res->exit_ms = calloc((size_t)nrounds, sizeof(double));
	res->elect = calloc((size_t)nrounds, sizeof(double));
	target t;
	if (!res->failover || !res->exit_ms || !res->elect || target_open(&t, true) < 0)
		return;
	static const char *const misr2[] = {"min.insync.replicas", "2", NULL};
	fo_prod *p = NULL;
	if (create_topic(&t, C3_TOPIC, misr2) < 0 || !(p = fo_start(t.bootstrap))) {
		failures++;
		target_close(&t);
		return;
	}
	int bad = 0;
	for (int i = 0; i < nrounds; i++) {
		fo_round r;
		if (fo_round_run(&t.c, p, sig, i, &r) < 0) {
			bad++;
			if (p->fatal[0] || bad > 3)
				break;
			continue;
		}
		res->exit_ms[res->rounds] = r.exit_ms;
		res->elect[res->rounds] = r.elect_ms;
		res->unclean_exits += sig != SIGKILL && !r.exit_clean;
		res->failover[res->rounds++] = r.failover_ms;
	}
	static const int32_t all[3] = {1, 2, 3};
	hc_wait_isr(&t.c, C3_TOPIC, 0, all, 3, 60000);
	fo_stop(p);
	chk *h = chk_new();
	if (h) {
		fo_feed(p, h);
		chk_span(h, p->start_ns / 1000000, p->end_ns / 1000000);
		long nread = read_back(t.bootstrap, h);
		if (nread >= 0) {
			chk_options opt = {.idempotent = true};
			chk_check(h, &opt, &res->rep);
			res->checked = true;
			if (!res->rep.ok || atomic_load(&p->nacked) != atomic_load(&p->nsent)) {
				chk_report_print(&res->rep, stderr);
				fprintf(stderr, "clusterbench: %ld of %ld acknowledged; first error: %s\n",
					atomic_load(&p->nacked), atomic_load(&p->nsent), p->first_error);
				bad++;
			}
		} else {
			bad++;
		}
		chk_free(h);
	}
	if (bad)
		failures++;
	fo_free(p);
	target_close(&t);
}

static void fo_free_res(fo_res *r)
{
	free(r->failover);
	free(r->exit_ms);
	free(r->elect);
}

static void c3(void)
{
	int n = scale >= 1 ? 5 : 2;
	fo_res k, s;
	fprintf(stderr, "clusterbench: C3 (a) kill -9 of the leader, %d rounds\n", n);
	fo_scenario(SIGKILL, n, &k);
	fprintf(stderr, "clusterbench: C3 (b) SIGTERM of the leader, %d rounds\n", n);
	fo_scenario(SIGTERM, n, &s);
	char f[64];
	snprintf(f, sizeof(f), "kill -9 leader: fail-over ms, median (session %d ms)", HC_SESSION_MS);
	add_row("C3", f, median_runs("C3 kill -9 fail-over ms", k.failover, k.rounds), -1, -1);
	add_row("C3", "kill -9 leader: fail-over ms, max", max_of(k.failover, k.rounds), -1, -1);
	add_row("C3", "  kill to new leader in ZooKeeper ms, median",
		median_runs("C3 kill -9 election ms", k.elect, k.rounds), -1, -1);
	target_below(add_row("C3", "SIGTERM leader: fail-over ms, median",
			     median_runs("C3 SIGTERM fail-over ms", s.failover, s.rounds), -1, -1),
		     500, "well < 1 s (500 ms)");
	target_below(add_row("C3", "SIGTERM leader: fail-over ms, max", max_of(s.failover, s.rounds),
			     -1, -1),
		     1000, "< 1000 ms");
	add_row("C3", "  signal to new leader in ZooKeeper ms, median",
		median_runs("C3 SIGTERM election ms", s.elect, s.rounds), -1, -1);
	add_row("C3", "SIGTERM leader: signal to exit ms, median",
		median_runs("C3 SIGTERM exit ms", s.exit_ms, s.rounds), -1, -1);
	add_row("C3", "SIGTERM leader: signal to exit ms, max", max_of(s.exit_ms, s.rounds), -1, -1);
	add_legend("C3: a producer (acks=all, idempotent, linger.ms=0, request.timeout.ms=5000, "
		   "retry.backoff.ms=100, reconnect.backoff.ms=50..500, "
		   "topic.metadata.refresh.fast.interval.ms=%s (default)) sends %d records/s to a "
		   "topic with RF 3, min.insync.replicas=2; per round (ISR full, then %d ms of "
		   "acknowledgements): signal the leader, time to the first delivery report of a "
		   "record acknowledged at an offset of the new leader's epoch (its "
		   "leader-epoch-checkpoint), restart the broker; also the time until the state "
		   "znode names a new leader (read every ms). kill -9: %d rounds (%d measured), "
		   "zookeeper.session.timeout.ms=%d; SIGTERM: %d rounds (%d measured), %d exit(s) "
		   "not status 0.",
		   fo_fast_query_ms, FO_RATE, FO_SETTLE_MS, n, k.rounds, HC_SESSION_MS, n, s.rounds,
		   s.unclean_exits);
	add_legend("C3: checker after the rounds: kill -9 %ld acknowledged, %ld lost, %ld "
		   "duplicated, %ld divergent (%s); SIGTERM %ld acknowledged, %ld lost, %ld "
		   "duplicated, %ld divergent (%s).",
		   k.rep.acked, k.rep.lost, k.rep.duplicated, k.rep.divergent,
		   k.checked ? (k.rep.ok ? "ok" : "VIOLATIONS") : "not checked", s.rep.acked,
		   s.rep.lost, s.rep.duplicated, s.rep.divergent,
		   s.checked ? (s.rep.ok ? "ok" : "VIOLATIONS") : "not checked");
	if (s.unclean_exits)
		failures++;
	fo_free_res(&k);
	fo_free_res(&s);
}

static void kloop(int n)
{
	fo_res k;
	fprintf(stderr, "clusterbench: K: %d kill -9 rounds\n", n);
	fo_scenario(SIGKILL, n, &k);
	char f[64];
	snprintf(f, sizeof(f), "kill -9 rounds measured (of %d)", n);
	add_row("K", f, k.rounds, -1, +1);
	add_row("K", "records acknowledged", k.checked ? k.rep.acked : -1, -1, 0);
	trow *r = add_row("K", "  lost", k.checked ? k.rep.lost + k.rep.misplaced : -1, -1, -1);
	target_below(r, 0.5, "0");
	r = add_row("K", "  duplicated", k.checked ? k.rep.duplicated : -1, -1, -1);
	target_below(r, 0.5, "0");
	r = add_row("K", "  divergent offsets", k.checked ? k.rep.divergent : -1, -1, -1);
	target_below(r, 0.5, "0");
	add_row("K", "  not acknowledged (failed or indeterminate)",
		k.checked ? k.rep.failed + k.rep.indeterminate : -1, -1, -1);
	snprintf(f, sizeof(f), "fail-over ms, median (session %d ms)", HC_SESSION_MS);
	add_row("K", f, median_runs("K fail-over ms", k.failover, k.rounds), -1, -1);
	add_row("K", "fail-over ms, max", max_of(k.failover, k.rounds), -1, -1);
	add_row("K", "  kill to new leader in ZooKeeper ms, median",
		median_runs("K election ms", k.elect, k.rounds), -1, -1);
	add_row("K", "longest time without an acknowledgement ms",
		k.checked ? (double)k.rep.longest_gap_ms : -1, -1, -1);
	add_legend("K: C3 (a) for %d rounds on one cluster, then every record read back from "
		   "offset 0 and checked (compat-tests/checker.h, idempotent: nothing acknowledged "
		   "lost or misplaced, no offset with two values, no value at two offsets, "
		   "acknowledged offsets increasing)%s.",
		   n, k.checked ? (k.rep.ok ? ": ok" : ": VIOLATIONS, see stderr") : ": not checked");
	fo_free_res(&k);
}

/* ---- C4: a follower catching up ---- */

/* Bytes of the .log files in broker id's dir of C4_TOPIC-0; -1 if none. */
static long long log_bytes(hc_cluster *c, int id)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	hc_partition_dir(c, id, C4_TOPIC, 0, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	long long sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".log") != 0)
			continue;
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0)
			sum += st.st_size;
	}
	closedir(d);
	return sum;
}

typedef struct catchup_res {
	bool ok;
	double mbps;        /* missing bytes over restart to caught up */
	double xfer_mbps;   /* missing bytes after the first new one, over first new byte to caught up */
	double first_ms;    /* restart to the first new byte */
	double isr_ms;      /* restart to back in the ISR */
	double total_ms;    /* restart to caught up */
	double mb;          /* MB it was missing */
	double cpu_follower, cpu_leader; /* cores over restart to caught up */
} catchup_res;

/* One run; freed: the catch-up starts on just-freed memory (a file as large
 * as what the follower misses written and deleted before the restart), else
 * on memory fresh from the host (nothing freed for cold_ms()). */
static void catchup_run(long n, bool freed, catchup_res *r)
{
	memset(r, 0, sizeof(*r));
	r->isr_ms = -1;
	target t;
	if (target_open(&t, true) < 0)
		return;
	hc_cluster *c = &t.c;
	static const char *const misr1[] = {"min.insync.replicas", "1", NULL};
	hc_state st;
	if (create_topic(&t, C4_TOPIC, misr1) < 0 || create_topic(&t, WARM_TOPIC, misr1) < 0 ||
	    hc_zk_state(c, C4_TOPIC, 0, &st) != CTL_ZK_OK) {
		target_close(&t);
		return;
	}
	int leader = st.leader, follower = -1, other = -1;
	for (int i = 0; i < st.nisr; i++)
		if (st.isr[i] != leader) {
			if (follower < 0)
				follower = st.isr[i];
			else
				other = st.isr[i];
		}
	if (leader < 1 || follower < 1 || other < 1) {
		fprintf(stderr, "clusterbench: C4: state %s\n", st.json);
		target_close(&t);
		return;
	}
	/* Stop the follower cleanly: it leaves the ISR at once. */
	hc_term(c, follower);
	int xs = hc_wait_exit(c, follower, 30000);
	const int32_t two[2] = {leader, other};
	long long f0 = log_bytes(c, follower);
	if (xs == -1 || hc_wait_isr(c, C4_TOPIC, 0, two, 2, 30000) < 0 || f0 < 0) {
		fprintf(stderr, "clusterbench: C4: follower %d did not stop and leave the ISR\n",
			follower);
		target_close(&t);
		return;
	}
	prod_res p;
	produce_run(&t, C4_TOPIC, "1", n, 1024, true, 0, NULL, &p);
	long long lb = log_bytes(c, leader);
	fprintf(stderr, "clusterbench: C4: leader %d holds %lld B, stopped follower %d %lld B; "
			"produced at %.1f MB/s\n",
		leader, lb, follower, f0, p.mbps);
	if (!p.ok || lb <= f0) {
		target_close(&t);
		return;
	}
	sync(); /* the produce's writeback is not the catch-up's */
	if (freed)
		reuse_memory((lb - f0) * 11 / 10);
	else
		sleep_ms(cold_ms()); /* what the producer freed goes back to the host */
	pid_t perf = perf_start(NULL, 0, freed ? "c4-catchup-freed" : "c4-catchup-fresh");
	int64_t t0 = now_ns();
	if (hc_restart(c, follower) < 0) {
		perf_stop(perf);
		fprintf(stderr, "clusterbench: C4: follower %d did not restart\n", follower);
		target_close(&t);
		return;
	}
	pid_t fp = c->b[follower]->pid, lp = c->b[leader]->pid;
	double fc0 = proc_cpu_s(fp), lc0 = proc_cpu_s(lp);
	int64_t first = -1, done = -1, isr = -1, deadline = t0 + 600LL * 1000000000;
	long long fb = f0, fb_first = f0;
	while ((done < 0 || isr < 0) && now_ns() < deadline) {
		if (done < 0) {
			fb = log_bytes(c, follower);
			int64_t now = now_ns();
			if (first < 0 && fb > f0) {
				first = now;
				fb_first = fb;
			}
			if (fb >= lb)
				done = now;
		}
		if (isr < 0) {
			hc_state s2;
			if (hc_zk_state(c, C4_TOPIC, 0, &s2) == CTL_ZK_OK && hc_isr_has(&s2, follower))
				isr = now_ns();
		}
		sleep_ms(1);
	}
	double fc1 = proc_cpu_s(fp), lc1 = proc_cpu_s(lp);
	perf_stop(perf);
	if (done < 0 || first < 0) {
		fprintf(stderr, "clusterbench: C4: follower at %lld of %lld B after 600 s\n", fb, lb);
		target_close(&t);
		return;
	}
	double secs = (double)(done - t0) / 1e9;
	r->mb = (double)(lb - f0) / 1e6;
	r->mbps = r->mb / secs;
	r->xfer_mbps = done > first ? (double)(lb - fb_first) / 1e6 / ((double)(done - first) / 1e9) : -1;
	r->first_ms = (double)(first - t0) / 1e6;
	r->total_ms = secs * 1e3;
	r->isr_ms = isr >= 0 ? (double)(isr - t0) / 1e6 : -1;
	r->cpu_follower = fc0 >= 0 && fc1 >= 0 ? (fc1 - fc0) / secs : -1;
	r->cpu_leader = lc0 >= 0 && lc1 >= 0 ? (lc1 - lc0) / secs : -1;
	r->ok = true;
	fprintf(stderr, "clusterbench: C4: %.1f MB in %.0f ms (%.1f MB/s; first byte at %.1f ms, "
			"transfer %.1f MB/s; back in the ISR at %.1f ms); CPU follower %.2f, leader "
			"%.2f cores\n",
		r->mb, r->total_ms, r->mbps, r->first_ms, r->xfer_mbps, r->isr_ms, r->cpu_follower,
		r->cpu_leader);
	target_close(&t);
}

static void c4(void)
{
	long n = scaled(1 << 20);
	static const char *const mem[2] = {"memory fresh from the host", "memory just freed"};
	double mbps[2][MAX_REPS], xfer[2][MAX_REPS], first[2][MAX_REPS], isr[2][MAX_REPS],
	    fcpu[2][MAX_REPS], lcpu[2][MAX_REPS];
	int nr[2] = {0, 0}, ni[2] = {0, 0};
	double mb = 0;
	for (int rep = 0; rep < reps; rep++) {
		for (int w = 0; w < 2; w++) {
			fprintf(stderr, "clusterbench: C4: %ld x 1 KiB behind, %s (run %d of %d)\n", n,
				mem[w], rep + 1, reps);
			catchup_res r;
			catchup_run(n, w == 1, &r);
			if (!r.ok) {
				failures++;
				continue;
			}
			mb = r.mb;
			mbps[w][nr[w]] = r.mbps;
			xfer[w][nr[w]] = r.xfer_mbps;
			first[w][nr[w]] = r.first_ms;
			fcpu[w][nr[w]] = r.cpu_follower;
			lcpu[w][nr[w]++] = r.cpu_leader;
			if (r.isr_ms >= 0)
				isr[w][ni[w]++] = r.isr_ms;
		}
	}
	char f[64];
	snprintf(f, sizeof(f), "follower catch-up MB/s, %.0f MB behind, mem fresh", mb);
	add_row("C4", f, median_runs("C4 catch-up MB/s, memory fresh", mbps[0], nr[0]), -1, +1);
	add_row("C4", "  the same, memory freed",
		median_runs("C4 catch-up MB/s, memory freed", mbps[1], nr[1]), -1, +1);
	add_row("C4", "  transfer MB/s (first new byte to caught up), fresh",
		median_runs("C4 transfer MB/s, memory fresh", xfer[0], nr[0]), -1, +1);
	add_row("C4", "  transfer MB/s (first new byte to caught up), freed",
		median_runs("C4 transfer MB/s, memory freed", xfer[1], nr[1]), -1, +1);
	add_row("C4", "  restart to first new byte ms (fresh)",
		median_runs("C4 first byte ms, memory fresh", first[0], nr[0]), -1, -1);
	add_row("C4", "  restart to back in the ISR ms (fresh)",
		median_runs("C4 ISR ms, memory fresh", isr[0], ni[0]), -1, -1);
	add_row("C4", "  follower CPU, cores (fresh)", median(fcpu[0], nr[0]), -1, -1);
	add_row("C4", "  follower CPU, cores (freed)", median(fcpu[1], nr[1]), -1, -1);
	add_row("C4", "  leader CPU, cores (fresh)", median(lcpu[0], nr[0]), -1, -1);
	add_legend("C4: RF 3, min.insync.replicas=1; a follower stopped with SIGTERM (out of the "
		   "ISR), %ld x 1 KiB produced to the leader with acks=1, the follower restarted on "
		   "its dir; timed from the restart (fork) until its .log files hold the leader's "
		   "bytes (polled every ms; the ISR from the state znode every ms); "
		   "replica.fetch.max.bytes 1 MiB (default), replica.fetch.wait.max.ms=100. In two "
		   "memory states as C1: \"fresh\", restarted %d ms after the producer freed its "
		   "buffers; \"freed\", right after a file of 1.1x the missing bytes was written and "
		   "deleted. CPU: /proc/PID/stat over restart to caught up. Medians of %d runs.",
		   n, cold_ms(), reps);
}

int main(int argc, char **argv)
{
	int sel = 0, opt;
	while ((opt = getopt(argc, argv, "C:K:x:r:p:d:h")) != -1) {
		switch (opt) {
		case 'C':
			for (const char *p = optarg; *p; p++)
				if (*p >= '1' && *p <= '4')
					sel |= 1 << (*p - '1');
			break;
		case 'K':
			kill_loop = atoi(optarg);
			if (kill_loop < 1 || kill_loop > 100000) {
				fprintf(stderr, "clusterbench: -K must be 1..100000\n");
				return 2;
			}
			break;
		case 'x':
			scale = atof(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > MAX_REPS) {
				fprintf(stderr, "clusterbench: -r must be 1..%d\n", MAX_REPS);
				return 2;
			}
			break;
		case 'p':
			perf_prefix = optarg;
			break;
		case 'd':
			debug_contexts = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-C 1,2,3,4] [-K kill rounds] [-x scale] [-r runs] "
					"[-p perf-prefix] [-d librdkafka debug contexts]\n",
				argv[0]);
			return 2;
		}
	}
	if (!sel)
		sel = kill_loop ? 0 : 0xf; /* -K alone runs only the loop */
	if (scale <= 0) {
		fprintf(stderr, "clusterbench: -x must be positive\n");
		return 2;
	}
	if (h_init() < 0)
		return 1;
	zk = h_zk_new();
	if (!zk || h_zk_start(zk) < 0) {
		fprintf(stderr, "clusterbench: ZooKeeper did not start\n");
		h_zk_free(zk);
		h_fini();
		return 1;
	}
	printf("clusterbench: librdkafka %s, scale %.3g, %d run(s) per figure; ZooKeeper started in "
	       "%lld ms; three brokers with zookeeper.session.timeout.ms=%d, "
	       "replica.lag.time.max.ms=%d; clients, brokers and ZooKeeper share this machine\n",
	       rd_kafka_version_str(), scale, reps, zk->start_ms, HC_SESSION_MS, HC_LAG_MS);
	if (sel & 1)
		c1();
	if (sel & 2)
		c2();
	if (sel & 4)
		c3();
	if (sel & 8)
		c4();
	if (kill_loop)
		kloop(kill_loop);
	print_table();
	printf("\n");
	for (int i = 0; i < nlegend; i++)
		print_wrapped(legend[i], 100);
	if (unclean_stops)
		printf("\n%d broker stop(s) at the end of a measurement were not clean (see stderr)\n",
		       unclean_stops);
	if (failures)
		printf("\n%d measurement(s) FAILED (see stderr)\n", failures);
	h_zk_free(zk);
	h_fini();
	return failures ? 1 : 0;
}
