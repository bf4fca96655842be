/*
 * loadgen.c - the speed and size scenarios of issue 6 (H1-H4), measured
 * against samsa and against librdkafka's in-memory mock cluster
 * (rd_kafka_mock_cluster_new) in one run, with one client configuration for
 * both, ending in one table: scenario, figure, samsa, mock, samsa/mock,
 * which direction is better, target, met?
 *
 * H1  10,000,000 records of 100 B, acks=1, linger.ms=5, one partition:
 *     produce records/s (first produce call to last delivery report) and
 *     consume records/s by assignment from the start (first record to last
 *     record). The mock keeps at most 5 MiB / 100,000 message sets per
 *     partition (rdkafka_mock.c: mpart->max_size, max_cnt) and drops the
 *     oldest, so its consume figure is measured over what it still holds,
 *     read again in passes until it adds up to as many records as samsa's
 *     (each pass timed from its first to its last record, so a pass's
 *     start-up is not counted). Also samsa's CPU while the consumer reads,
 *     in cores: the rest of the consume figure is the client's.
 * H2  1,000,000 x 1 KiB and 100,000 x 10 KiB, acks=all, linger.ms=5:
 *     produce MB/s, and the loopback TCP bandwidth of this machine measured
 *     in the same run (one sender thread writing 1 MiB chunks, one receiver
 *     thread, 2 GB over 127.0.0.1), each figure also as a share of it,
 *     and samsa's CPU seconds per GB produced.
 *     After the runs, the same machine writing a new 1 GB file (what a
 *     broker's log costs before any broker code runs), and a second one
 *     right after deleting the first (new_file_write).
 * H3  end-to-end latency with one record in flight: produce one record
 *     (linger.ms=0, acks=1), consume it (legacy consumer by assignment), then
 *     the next. p50/p99/max for the consumer's fetch.wait.max.ms=0 and =500
 *     (500 is librdkafka's default). With 500 a broker that parks an empty
 *     fetch must wake it on the append to stay under 1 ms. Each figure is
 *     the median over the runs (-r; max too: the median of each run's
 *     maximum); the mock runs once with 500, where it answers at its timer.
 * H4  samsa only: VmRSS at idle (after start-up, no client), VmHWM after H1
 *     (the H1 broker), the time from fork to the first acknowledged produce
 *     (median of 5 starts; a client polls the port every 0.2 ms, then
 *     creates a producer, asks for the topic's metadata and sends one
 *     record), and the recovery after
 *     kill -9 of a 1 GiB partition log: time to listen and to the first
 *     acknowledged produce on that partition after the restart (the log is
 *     in the page cache: the process died, not the machine).
 *
 * Every target is opened after sync(2), so no run pays for the writeback of
 * the one before. Every producer first sends a warm-up (not timed) to
 * another topic on the same connection; every record is checked: all
 * delivery reports without error, every consumed record's value carries its
 * own offset. The mock runs
 * inside this process, so it shares the machine's 2 cores with the client
 * threads; samsa runs as a separate process (compat harness, 127.0.0.1, a
 * temporary log dir).
 *
 * Usage: loadgen [-H 1,2,3,4] [-x scale] [-r runs] [-S] [-M] [-p perf-prefix] [-d ctx]
 *   -H  scenarios to run (default all); -x  scale every count and size
 *   (0.1 for a quick run); -r  H1, H2 and H3 runs per target (default 3),
 *   samsa and mock alternating, each figure the median (this VM's figures
 *   swing up to 2x between runs; H4's peak RSS is the largest of the H1
 *   runs); -S samsa only; -M mock only; -p  run
 *   `perf record -g` on the broker during H1 produce, H1 consume and the
 *   H2 produce runs, writing PREFIX-h1-produce.data, PREFIX-h1-consume.data,
 *   PREFIX-h2-1k.data, PREFIX-h2-10k.data; -d librdkafka debug
 *   contexts. The broker binary is $SAMSA_BIN.
 * Exit status: 0 when every measurement ran and every record was checked
 * (targets not met do not fail the run), 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"

#define TOPIC "bench"
#define WARM_TOPIC "warmup"
#define WARM_RECORDS 20000

static const char *debug_contexts; /* -d */
static const char *perf_prefix;    /* -p */
static double scale = 1.0;         /* -x */
#define MAX_REPS 9
static int reps = 3;               /* -r: H1, H2 and H3 runs per target, medians reported */
static int failures;               /* measurements that failed */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long scaled(long n)
{
	long v = (long)((double)n * scale);
	return v < 1 ? 1 : v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Percentile q (0..1) of a sorted array, in ms. */
static double pct_ms(const int64_t *v, long n, double q)
{
	return n > 0 ? (double)v[(long)((double)(n - 1) * q)] / 1e6 : -1;
}

/* Median of n values (sorts v in place). */
static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median of a target's n runs; with more than one run, they are printed
 * in the order they ran, then the median. */
static double median_runs(const char *what, int mock, double *v, int n)
{
	if (n > 1) {
		printf("%s, %s runs:", what, mock ? "mock" : "samsa");
		for (int i = 0; i < n; i++)
			printf(" %.*f", v[i] < 10 ? 3 : 1, v[i]);
	}
	double m = median(v, n);
	if (n > 1)
		printf("; median %.*f\n", m < 10 ? 3 : 1, m);
	return m;
}

/* ---- the table ---- */

#define MAX_ROWS 64
typedef struct trow {
	char scen[8];
	char fig[64];
	double s, m;     /* < 0: not measured */
	int better;      /* +1 higher is better, -1 lower is better */
	char target[40];
	int met;         /* 1 yes, 0 no, -1 not judged */
} trow;
static trow rows[MAX_ROWS];
static int nrows;

static trow *add_row(const char *scen, const char *fig, double s, double m, int better)
{
	if (nrows == MAX_ROWS)
		return &rows[MAX_ROWS - 1];
	trow *r = &rows[nrows++];
	snprintf(r->scen, sizeof(r->scen), "%s", scen);
	snprintf(r->fig, sizeof(r->fig), "%s", fig);
	r->s = s;
	r->m = m;
	r->better = better;
	r->met = -1;
	return r;
}

/* Target: samsa >= k x mock (better=+1) or samsa <= k x mock (better=-1). */
static void target_ratio(trow *r, double k)
{
	snprintf(r->target, sizeof(r->target), "%s %.1fx mock", r->better > 0 ? ">=" : "<=", k);
	if (r->s >= 0 && r->m > 0)
		r->met = r->better > 0 ? r->s >= k * r->m : r->s <= k * r->m;
}

/* Target: samsa <= limit (absolute, in the figure's unit). */
static void target_max(trow *r, double limit, const char *text)
{
	snprintf(r->target, sizeof(r->target), "%s", text);
	if (r->s >= 0)
		r->met = r->s <= limit;
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
	printf("\n%-4s %-46s %12s %12s %10s %-7s %-16s %s\n", "", "figure", "samsa", "mock",
	       "samsa/mock", "better", "target", "met?");
	for (int i = 0; i < nrows; i++) {
		trow *r = &rows[i];
		char a[32], b[32], c[32];
		fmtv(a, sizeof(a), r->s);
		fmtv(b, sizeof(b), r->m);
		if (r->s >= 0 && r->m > 0)
			snprintf(c, sizeof(c), "%.2f", r->s / r->m);
		else
			snprintf(c, sizeof(c), "-");
		printf("%-4s %-46s %12s %12s %10s %-7s %-16s %s\n", r->scen, r->fig, a, b, c,
		       r->better > 0 ? "higher" : r->better < 0 ? "lower" : "", r->target,
		       r->met < 0 ? "-" : r->met ? "yes" : "NO");
	}
}

/* ---- client configuration (identical for both targets) ---- */

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "loadgen: config %s=%s: %s\n", k, v, err);
		exit(2);
	}
}

static rd_kafka_conf_t *base_conf(const char *bootstrap)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	set(conf, "bootstrap.servers", bootstrap);
	set(conf, "broker.address.family", "v4");
	set(conf, "log.connection.close", "false");
	if (debug_contexts)
		set(conf, "debug", debug_contexts);
	return conf;
}

/* ---- perf record on the broker ---- */

static pid_t perf_start(pid_t target, const char *tag)
{
	if (!perf_prefix || target <= 0)
		return 0;
	char out[512], p[32];
	snprintf(out, sizeof(out), "%s-%s.data", perf_prefix, tag);
	snprintf(p, sizeof(p), "%d", (int)target);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execlp("perf", "perf", "record", "-q", "-g", "-p", p, "-o", out, (char *)NULL);
		_exit(127);
	}
	usleep(300000); /* let perf attach */
	return pid;
}

static void perf_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGINT);
	waitpid(pid, NULL, 0);
}

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

/* ---- targets: a samsa process or an in-process mock cluster ---- */

typedef struct target {
	int mock;
	h_broker *b;
	rd_kafka_t *owner;
	rd_kafka_mock_cluster_t *mc;
	char bootstrap[256];
} target;

static int create_topic(const char *bootstrap, const char *topic)
{
	char err[256];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(bootstrap), err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "loadgen: %s\n", err);
		return -1;
	}
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	int rc = -1;
	if (ev && !rd_kafka_event_error(ev)) {
		size_t cnt;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		    rd_kafka_event_CreateTopics_result(ev), &cnt);
		rc = cnt == 1 && !rd_kafka_topic_result_error(tr[0]) ? 0 : -1;
	}
	if (rc)
		fprintf(stderr, "loadgen: CreateTopics %s failed\n", topic);
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	for (int i = 0; rc == 0 && i < 100; i++) { /* until it has a leader */
		const struct rd_kafka_metadata *md;
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
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

static int target_start(target *t, int mock)
{
	memset(t, 0, sizeof(*t));
	t->mock = mock;
	/* Start every run with no dirty pages left by the one before (the
	 * kernel's writeback throttling would charge them to this one). */
	sync();
	if (mock) {
		char err[256];
		rd_kafka_conf_t *conf = rd_kafka_conf_new();
		set(conf, "log_level", "3");
		t->owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
		if (!t->owner || !(t->mc = rd_kafka_mock_cluster_new(t->owner, 1))) {
			fprintf(stderr, "loadgen: mock cluster: %s\n", t->owner ? "failed" : err);
			return -1;
		}
		rd_kafka_mock_topic_create(t->mc, TOPIC, 1, 1);
		rd_kafka_mock_topic_create(t->mc, WARM_TOPIC, 1, 1);
		snprintf(t->bootstrap, sizeof(t->bootstrap), "%s",
			 rd_kafka_mock_cluster_bootstraps(t->mc));
		return 0;
	}
	t->b = h_broker_new(NULL);
	if (!t->b || h_broker_start(t->b) < 0) {
		fprintf(stderr, "loadgen: could not start %s\n", h_samsa_bin());
		return -1;
	}
	snprintf(t->bootstrap, sizeof(t->bootstrap), "%s", t->b->bootstrap);
	fprintf(stderr, "loadgen: samsa pid %d on %s, log dir %s\n", (int)t->b->pid,
		t->b->bootstrap, t->b->dir);
	if (create_topic(t->bootstrap, TOPIC) < 0 || create_topic(t->bootstrap, WARM_TOPIC) < 0)
		return -1;
	return 0;
}

static void target_close(target *t)
{
	if (t->mock) {
		if (t->mc)
			rd_kafka_mock_cluster_destroy(t->mc);
		if (t->owner)
			rd_kafka_destroy(t->owner);
	} else if (t->b) {
		int st = h_broker_stop(t->b, 30000);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "loadgen: samsa did not stop cleanly (status 0x%x)\n", st);
			h_broker_dump_log(t->b, stderr, 20);
		}
		h_broker_free(t->b);
	}
	memset(t, 0, sizeof(*t));
}

/* Open a samsa process or a mock cluster; on failure count it in failures,
 * release what was started and return -1. */
static int target_open(target *t, int mock)
{
	if (target_start(t, mock) == 0)
		return 0;
	failures++;
	target_close(t);
	return -1;
}

/* ---- produce ---- */

typedef struct prod_cfg {
	long n;
	size_t size;
	const char *acks;
	const char *linger;
	pid_t broker_pid; /* samsa's pid, 0 for the mock: its CPU is measured, and perf records it */
	const char *perf_tag;
} prod_cfg;

typedef struct prod_res {
	int ok;
	long delivered, failed;
	double secs; /* first produce call to last delivery report */
	double p50_ms, p99_ms, max_ms;
	double broker_cpu_s; /* samsa's CPU seconds over the timed part, -1 for the mock */
} prod_res;

/* Delivery reports are served by the poll thread and, inside
 * rd_kafka_flush, by the flushing thread at the same time: counters are
 * atomic. */
typedef struct run_state {
	int64_t *t_send_ns, *lat_ns;
	_Atomic long delivered, failed, warm_done, warm_failed;
	_Atomic int first_err;
	_Atomic int64_t last_dr_ns;
	volatile int stop_poll;
	rd_kafka_t *rk;
} run_state;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	run_state *st = opaque;
	long i = (long)(intptr_t)m->_private;
	int64_t t = now_ns();
	if (i < 0) { /* warm-up */
		st->warm_done++;
		if (m->err)
			st->warm_failed++;
		return;
	}
	st->lat_ns[i] = t - st->t_send_ns[i];
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

static void *poll_thread(void *arg)
{
	run_state *st = arg;
	while (!st->stop_poll)
		rd_kafka_poll(st->rk, 50);
	return NULL;
}

static int produce_one(rd_kafka_t *rk, const char *topic, char *payload, size_t size, long i)
{
	if (size >= sizeof(long))
		memcpy(payload, &i, sizeof(i)); /* the record's own number leads */
	for (;;) {
		rd_kafka_resp_err_t e = rd_kafka_producev(
		    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(payload, size),
		    RD_KAFKA_V_OPAQUE((void *)(intptr_t)i), RD_KAFKA_V_END);
		if (!e)
			return 0;
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			fprintf(stderr, "loadgen: produce: %s\n", rd_kafka_err2str(e));
			return -1;
		}
		usleep(200);
	}
}

/*
 * Produce c->n records of c->size bytes to TOPIC partition 0, after a
 * warm-up of WARM_RECORDS to WARM_TOPIC on the same producer. Record i's
 * value starts with i (its expected offset on a fresh topic).
 */
static void produce_phase(const char *bootstrap, const prod_cfg *c, prod_res *r)
{
	run_state st = {0};
	char err[256];
	long n = c->n;
	memset(r, 0, sizeof(*r));
	st.t_send_ns = calloc((size_t)n, sizeof(int64_t));
	st.lat_ns = calloc((size_t)n, sizeof(int64_t));
	char *payload = malloc(c->size < sizeof(long) ? sizeof(long) : c->size);
	if (!st.t_send_ns || !st.lat_ns || !payload) {
		fprintf(stderr, "loadgen: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < c->size; i++)
		payload[i] = (char)('a' + i % 26);

	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "acks", c->acks);
	set(conf, "linger.ms", c->linger);
	set(conf, "enable.idempotence", "false");
	set(conf, "queue.buffering.max.messages", "1000000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_opaque(conf, &st);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "loadgen: producer: %s\n", err);
		goto out;
	}
	st.rk = rk;
	pthread_t poller;
	pthread_create(&poller, NULL, poll_thread, &st);

	/* Warm-up: connection, metadata of both topics, broker allocations. */
	int bad = 0;
	long warm = WARM_RECORDS;
	if ((double)warm * (double)c->size > 20e6) /* at most ~20 MB */
		warm = (long)(20e6 / (double)c->size);
	for (long i = 0; i < warm && !bad; i++)
		bad = produce_one(rk, WARM_TOPIC, payload, c->size, -1) < 0;
	rd_kafka_flush(rk, 60000);
	/* flush returns when the queue is empty, possibly while the poll
	 * thread is still running the last delivery callbacks. */
	for (int w = 0; w < 5000 && st.warm_done < warm; w++)
		usleep(1000);
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
	if (rkt && rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0)
		rd_kafka_metadata_destroy(md);
	if (rkt)
		rd_kafka_topic_destroy(rkt);
	if (st.warm_done != warm || st.warm_failed) {
		fprintf(stderr, "loadgen: warm-up: %ld of %ld delivered, %ld failed\n",
			st.warm_done, warm, st.warm_failed);
		bad = 1;
	}

	pid_t perf = bad ? 0 : perf_start(c->broker_pid, c->perf_tag);
	double cpu0 = proc_cpu_s(c->broker_pid);
	int64_t t0 = now_ns();
	long produced = 0;
	for (long i = 0; i < n && !bad; i++) {
		st.t_send_ns[i] = now_ns();
		bad = produce_one(rk, TOPIC, payload, c->size, i) < 0;
		produced += !bad;
	}
	rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 600000);
	double cpu1 = proc_cpu_s(c->broker_pid);
	r->broker_cpu_s = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
	perf_stop(perf);
	st.stop_poll = 1;
	pthread_join(poller, NULL);
	rd_kafka_poll(rk, 0);
	if (fe)
		fprintf(stderr, "loadgen: flush: %s (%d still queued)\n", rd_kafka_err2str(fe),
			rd_kafka_outq_len(rk));
	rd_kafka_destroy(rk);

	r->delivered = st.delivered;
	r->failed = st.failed;
	if (st.failed)
		fprintf(stderr, "loadgen: %ld delivery failures, first: %s\n", st.failed,
			rd_kafka_err2str((rd_kafka_resp_err_t)st.first_err));
	r->secs = (double)(st.last_dr_ns - t0) / 1e9;
	long m = st.delivered + st.failed;
	if (m > 0) {
		qsort(st.lat_ns, (size_t)n, sizeof(int64_t), cmp_i64);
		r->p50_ms = pct_ms(st.lat_ns + (n - m), m, 0.5);
		r->p99_ms = pct_ms(st.lat_ns + (n - m), m, 0.99);
		r->max_ms = (double)st.lat_ns[n - 1] / 1e6;
	}
	r->ok = !bad && !fe && st.failed == 0 && st.delivered == n && produced == n;
	if (!r->ok)
		fprintf(stderr, "loadgen: produce: %ld of %ld produced, %ld delivered, %ld failed\n",
			produced, n, (long)st.delivered, (long)st.failed);
out:
	free(st.t_send_ns);
	free(st.lat_ns);
	free(payload);
}

/* ---- consume ---- */

typedef struct cons_res {
	int ok;
	long consumed;  /* records timed, over all passes */
	long held;      /* records the target held (hi - lo) */
	long passes;
	double secs;    /* sum over passes, first to last record */
	int64_t gap_ns; /* longest wait between two batches */
	long gap_offset; /* the offset waited for then */
	double broker_cpu_share; /* samsa's CPU over the passes, in cores; -1 for the mock */
} cons_res;

/*
 * Consume TOPIC partition 0 by assignment from its log start offset, in
 * passes over [lo, hi) until at least want records were read. Checks that
 * every record's value starts with its offset.
 */
static void consume_phase(const char *bootstrap, long want, pid_t broker_pid, cons_res *r)
{
	char err[256];
	memset(r, 0, sizeof(*r));
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "enable.auto.commit", "false");
	set(conf, "enable.auto.offset.store", "false");
	set(conf, "enable.partition.eof", "false");
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "loadgen: consumer: %s\n", err);
		return;
	}
	int64_t lo = 0, hi = 0;
	rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, TOPIC, 0, &lo, &hi, 10000);
	if (e) {
		fprintf(stderr, "loadgen: watermarks: %s\n", rd_kafka_err2str(e));
		rd_kafka_destroy(rk);
		return;
	}
	r->held = (long)(hi - lo);
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
	rd_kafka_message_t *batch[1000];
	long wrong = 0, errors = 0;
	int stalled = 0;
	pid_t perf = perf_start(broker_pid, "h1-consume");
	double cpu0 = proc_cpu_s(broker_pid);
	int64_t t0 = now_ns();
	while (r->consumed < want && r->held > 0 && !stalled) {
		rd_kafka_consume_start(rkt, 0, lo);
		int64_t first = 0, last = 0, idle_since = now_ns();
		int64_t next = lo;
		while (next < hi) {
			/* Ask for no more than is left: a batch call waits for
			 * its count or its timeout, and the wait would count. */
			size_t ask = hi - next < 1000 ? (size_t)(hi - next) : 1000;
			ssize_t k = rd_kafka_consume_batch(rkt, 0, 500, batch, ask);
			for (ssize_t i = 0; i < k; i++) {
				rd_kafka_message_t *m = batch[i];
				if (m->err) {
					if (!errors++)
						fprintf(stderr, "loadgen: consume: %s\n",
							rd_kafka_err2str(m->err));
				} else if (m->offset >= next) {
					long v = -1;
					if (m->len >= sizeof(long))
						memcpy(&v, m->payload, sizeof(v));
					if (m->offset != next || v != (long)m->offset)
						wrong++;
					next = m->offset + 1;
				}
				rd_kafka_message_destroy(m);
			}
			if (k > 0) {
				int64_t t = now_ns();
				if (last && t - last > r->gap_ns) {
					r->gap_ns = t - last;
					r->gap_offset = (long)next;
				}
				last = idle_since = t;
				if (!first)
					first = last;
			} else if (now_ns() - idle_since > 30LL * 1000000000) {
				fprintf(stderr, "loadgen: consume stalled at offset %ld of %ld\n",
					(long)next, (long)hi);
				stalled = 1;
				break;
			}
		}
		rd_kafka_consume_stop(rkt, 0);
		r->consumed += (long)(next - lo);
		r->secs += (double)(last - first) / 1e9;
		r->passes++;
	}
	double cpu1 = proc_cpu_s(broker_pid);
	r->broker_cpu_share = cpu0 >= 0 && cpu1 >= 0 ? (cpu1 - cpu0) / ((double)(now_ns() - t0) / 1e9) : -1;
	perf_stop(perf);
	if (wrong)
		fprintf(stderr, "loadgen: %ld records out of order or with a wrong value\n", wrong);
	r->ok = !stalled && !wrong && !errors && r->consumed >= want;
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
}

/* ---- H1 ---- */

static long h1_hwm_kb = -1;

static void h1(int do_s, int do_m)
{
	long n = scaled(10000000);
	double pr[2] = {-1, -1}, cr[2] = {-1, -1}, held[2] = {0, 0};
	double pruns[2][MAX_REPS], cruns[2][MAX_REPS], shares[MAX_REPS];
	int npr[2] = {0, 0}, ncr[2] = {0, 0}, nshares = 0;
	long passes[2] = {0, 0};
	/* Alternate samsa and mock so a slow spell of the VM hits both. */
	for (int rep = 0; rep < reps; rep++) {
		for (int mock = 0; mock < 2; mock++) {
			if (mock ? !do_m : !do_s)
				continue;
			target t;
			fprintf(stderr, "loadgen: H1 %s: %ld x 100 B (run %d of %d)\n",
				mock ? "mock" : "samsa", n, rep + 1, reps);
			if (target_open(&t, mock) < 0)
				continue;
			pid_t bp = mock ? 0 : t.b->pid;
			prod_cfg c = {n, 100, "1", "5", bp, "h1-produce"};
			prod_res p;
			produce_phase(t.bootstrap, &c, &p);
			if (p.ok)
				pruns[mock][npr[mock]++] = p.delivered / p.secs;
			else
				failures++;
			fprintf(stderr, "loadgen: H1 %s produce: %ld delivered in %.2f s, delivery "
					"latency p50 %.1f ms p99 %.1f ms\n",
				mock ? "mock" : "samsa", p.delivered, p.secs, p.p50_ms, p.p99_ms);
			if (p.ok) {
				cons_res cs;
				/* The mock holds only the tail: read it again until
				 * it adds up to as many records as samsa's full log. */
				consume_phase(t.bootstrap, n, bp, &cs);
				bool ok = cs.ok && cs.secs > 0;
				if (!mock && cs.held != n) {
					fprintf(stderr, "loadgen: samsa holds %ld of %ld records\n", cs.held, n);
					ok = false;
				}
				if (ok)
					cruns[mock][ncr[mock]++] = cs.consumed / cs.secs;
				else
					failures++;
				if (ok && !mock && cs.broker_cpu_share >= 0)
					shares[nshares++] = cs.broker_cpu_share;
				held[mock] = (double)cs.held;
				passes[mock] = cs.passes;
				fprintf(stderr, "loadgen: H1 %s consume: %ld records (%ld held, %ld "
						"passes) in %.2f s; longest wait %.1f ms, for offset %ld\n",
					mock ? "mock" : "samsa", cs.consumed, cs.held, cs.passes, cs.secs,
					(double)cs.gap_ns / 1e6, cs.gap_offset);
			}
			if (!mock) {
				long hwm = h_broker_status_kb(t.b, "VmHWM");
				if (hwm > h1_hwm_kb)
					h1_hwm_kb = hwm;
			}
			target_close(&t);
		}
	}
	for (int mock = 0; mock < 2; mock++) {
		if (npr[mock])
			pr[mock] = median_runs("H1 produce records/s", mock, pruns[mock], npr[mock]);
		if (ncr[mock])
			cr[mock] = median_runs("H1 consume records/s", mock, cruns[mock], ncr[mock]);
	}
	char f[64];
	snprintf(f, sizeof(f), "produce records/s (%ld x 100 B)", n);
	target_ratio(add_row("H1", f, pr[0], pr[1], +1), 1.0);
	target_ratio(add_row("H1", "consume records/s (from start)", cr[0], cr[1], +1), 1.0);
	/* What the broker's share of the consume figure is: the rest is the
	 * client's. */
	add_row("H1", "  samsa CPU while consumed, cores",
		nshares ? median_runs("H1 samsa CPU while consumed, cores", 0, shares, nshares) : -1, -1,
		-1);
	printf("H1: the mock keeps at most 5 MiB / 100000 batches per partition; it held "
	       "%.0f records, read in %ld passes (samsa: %.0f records, %ld pass)\n",
	       held[1], passes[1], held[0], passes[0]);
}

/* ---- H2 ---- */

typedef struct lb_state {
	int lfd;
	long long bytes;
	long long got;
	int64_t t_end;
} lb_state;

static void *lb_receiver(void *arg)
{
	lb_state *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	char *buf = malloc(1 << 20);
	ssize_t k;
	while (buf && s->got < s->bytes && (k = read(fd, buf, 1 << 20)) > 0)
		s->got += k;
	s->t_end = now_ns();
	free(buf);
	close(fd);
	return NULL;
}

/* Loopback TCP bandwidth in MB/s (10^6 B), or -1. */
static double loopback_mbps(long long bytes)
{
	lb_state s = {.bytes = bytes};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (s.lfd < 0 || bind(s.lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s.lfd, 1) < 0 || getsockname(s.lfd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	pthread_t th;
	pthread_create(&th, NULL, lb_receiver, &s);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	double r = -1;
	char *buf = calloc(1, 1 << 20);
	if (fd >= 0 && buf && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		int64_t t0 = now_ns();
		long long sent = 0;
		while (sent < bytes) {
			size_t chunk = bytes - sent < (1 << 20) ? (size_t)(bytes - sent) : 1 << 20;
			ssize_t k = write(fd, buf, chunk);
			if (k <= 0)
				break;
			sent += k;
		}
		shutdown(fd, SHUT_WR);
		pthread_join(th, NULL);
		if (s.got == bytes)
			r = (double)bytes / 1e6 / ((double)(s.t_end - t0) / 1e9);
	} else {
		shutdown(s.lfd, SHUT_RDWR);
		pthread_cancel(th);
		pthread_join(th, NULL);
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	close(s.lfd);
	return r;
}

/*
 * Write a new file of `bytes` (1 MiB pwrites, no fsync) in the harness's
 * temporary dir, which is where samsa's log dirs go, then delete it and at
 * once write a second one. Sets MB/s (10^6 B) and this thread's CPU seconds
 * per 10^9 B for each, or -1. On a VM whose balloon reports free memory to
 * the host (free page reporting), the first file's pages are memory the
 * host took back and faults in again; the second reuses the first's pages.
 * A broker writes its log into new page-cache pages like the first; the
 * mock reuses its heap like the second.
 */
static void new_file_write(long long bytes, double mbps[2], double cpu_per_gb[2])
{
	char path[512];
	snprintf(path, sizeof(path), "%s/new-file-write", h_base_dir());
	char *buf = malloc(1 << 20);
	for (int i = 0; i < 2; i++) {
		mbps[i] = cpu_per_gb[i] = -1;
		int fd = buf ? open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600) : -1;
		if (fd < 0)
			continue;
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
		if (done == bytes && bytes > 0) {
			double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
			mbps[i] = (double)bytes / 1e6 / ((double)(t1 - t0) / 1e9);
			cpu_per_gb[i] = cpu / ((double)bytes / 1e9);
		}
	}
	free(buf);
}

static void h2(int do_s, int do_m)
{
	double lb = loopback_mbps((long long)(2e9 * scale));
	printf("H2: loopback TCP 127.0.0.1, 1 MiB writes, %.2f GB: %.0f MB/s\n", 2.0 * scale, lb);
	add_row("H2", "loopback TCP MB/s (machine)", lb, -1, +1);
	const struct {
		long n;
		size_t size;
	} cases[2] = {{1000000, 1024}, {100000, 10240}};
	for (int k = 0; k < 2; k++) {
		long n = scaled(cases[k].n);
		double mbps[2] = {-1, -1};
		double runs[2][MAX_REPS], cpu_per_gb[MAX_REPS];
		int nruns[2] = {0, 0}, ncpu = 0;
		/* Alternate samsa and mock so a slow spell of the VM hits both. */
		for (int rep = 0; rep < reps; rep++) {
			for (int mock = 0; mock < 2; mock++) {
				if (mock ? !do_m : !do_s)
					continue;
				target t;
				fprintf(stderr, "loadgen: H2 %s: %ld x %zu B, acks=all (run %d of %d)\n",
					mock ? "mock" : "samsa", n, cases[k].size, rep + 1, reps);
				if (target_open(&t, mock) < 0)
					continue;
				prod_cfg c = {n, cases[k].size, "all", "5", mock ? 0 : t.b->pid,
					      k ? "h2-10k" : "h2-1k"};
				prod_res p;
				produce_phase(t.bootstrap, &c, &p);
				double gb = (double)p.delivered * (double)cases[k].size / 1e9;
				if (p.ok)
					runs[mock][nruns[mock]++] = gb * 1e3 / p.secs;
				else
					failures++;
				if (p.ok && p.broker_cpu_s >= 0)
					cpu_per_gb[ncpu++] = p.broker_cpu_s / gb;
				target_close(&t);
			}
		}
		for (int mock = 0; mock < 2; mock++) {
			char what[48];
			snprintf(what, sizeof(what), "H2 %zu B MB/s", cases[k].size);
			if (nruns[mock])
				mbps[mock] = median_runs(what, mock, runs[mock], nruns[mock]);
		}
		char f[64];
		snprintf(f, sizeof(f), "produce MB/s (%ld x %zu B, acks=all)", n, cases[k].size);
		target_ratio(add_row("H2", f, mbps[0], mbps[1], +1), 0.8);
		snprintf(f, sizeof(f), "  as %% of loopback TCP");
		add_row("H2", f, mbps[0] >= 0 && lb > 0 ? 100 * mbps[0] / lb : -1,
			mbps[1] >= 0 && lb > 0 ? 100 * mbps[1] / lb : -1, +1);
		snprintf(f, sizeof(f), "H2 %zu B samsa CPU s per GB", cases[k].size);
		add_row("H2", "  samsa CPU s per GB", ncpu ? median_runs(f, 0, cpu_per_gb, ncpu) : -1, -1,
			-1);
	}
	/* After the runs, so that deleting its files cannot hand the first
	 * samsa run freshly freed memory; and 10 s after them, so that the
	 * memory the runs freed has gone back to the host (free page reporting
	 * waits 2 s, then works in rounds; 10 s was enough here). */
	sleep(10);
	double fw[2], fcpu[2];
	new_file_write((long long)(1e9 * scale), fw, fcpu);
	printf("H2: a new %.2f GB file, 1 MiB pwrites, in %s: %.0f MB/s, %.2f s CPU per GB; "
	       "deleted, then a second one at once: %.0f MB/s, %.2f s CPU per GB\n",
	       scale, h_base_dir(), fw[0], fcpu[0], fw[1], fcpu[1]);
	add_row("H2", "new-file write MB/s (machine)", fw[0], -1, +1);
	add_row("H2", "  again right after deleting it", fw[1], -1, +1);
}

/* ---- H3 ---- */

typedef struct lat_res {
	int ok;
	long n;
	double p50, p99, max;
} lat_res;

/* One record in flight: produce, consume it, repeat; iters timed after
 * warm timed-out iterations; stops early after max_secs. */
static void latency_run(const char *bootstrap, const char *wait_ms, long iters, double max_secs,
			lat_res *r)
{
	char err[256];
	memset(r, 0, sizeof(*r));
	rd_kafka_conf_t *pc = base_conf(bootstrap);
	set(pc, "acks", "1");
	set(pc, "linger.ms", "0");
	set(pc, "enable.idempotence", "false");
	rd_kafka_t *prk = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
	rd_kafka_conf_t *cc = base_conf(bootstrap);
	set(cc, "enable.auto.commit", "false");
	set(cc, "enable.auto.offset.store", "false");
	set(cc, "enable.partition.eof", "false");
	set(cc, "fetch.wait.max.ms", wait_ms);
	rd_kafka_t *crk = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
	if (!prk || !crk) {
		fprintf(stderr, "loadgen: H3 clients: %s\n", err);
		if (prk)
			rd_kafka_destroy(prk);
		if (crk)
			rd_kafka_destroy(crk);
		return;
	}
	int64_t lo, hi;
	if (rd_kafka_query_watermark_offsets(crk, TOPIC, 0, &lo, &hi, 10000)) {
		fprintf(stderr, "loadgen: H3 watermarks failed\n");
		rd_kafka_destroy(prk);
		rd_kafka_destroy(crk);
		return;
	}
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(crk, TOPIC, NULL);
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
		if (rd_kafka_producev(prk, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
				      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				      RD_KAFKA_V_VALUE(payload, sizeof(payload)),
				      RD_KAFKA_V_END)) {
			bad++;
			break;
		}
		rd_kafka_poll(prk, 0);
		rd_kafka_message_t *m = NULL;
		int64_t deadline = t0 + 10LL * 1000000000;
		int got = 0;
		while (!got && now_ns() < deadline) {
			m = rd_kafka_consume(rkt, 0, 1000);
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
			fprintf(stderr, "loadgen: H3 record %ld not consumed within 10 s\n", off);
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

static void h3(int do_s, int do_m)
{
	const char *waits[2] = {"0", "500"};
	long iters = scaled(10000) < 200 ? 200 : scaled(10000);
	for (int w = 0; w < 2; w++) {
		double p50[2][MAX_REPS], p99[2][MAX_REPS], mx[2][MAX_REPS];
		int nr[2] = {0, 0};
		long samples[2] = {0, 0};
		/* Alternate samsa and mock so a slow spell of the VM hits both. */
		for (int rep = 0; rep < reps; rep++) {
			for (int mock = 0; mock < 2; mock++) {
				if (mock ? !do_m : !do_s)
					continue;
				/* The mock answers an empty fetch at its timer
				 * (~500 ms): one run says so, and takes 60 s. */
				if (mock && w == 1 && rep > 0)
					continue;
				target t;
				if (target_open(&t, mock) < 0)
					continue;
				/* Capped at 60 s x scale: a broker that answers an
				 * empty fetch only at its timer takes ~wait/2 per
				 * record. */
				lat_res lr;
				latency_run(t.bootstrap, waits[w], iters, 60 * scale < 5 ? 5 : 60 * scale,
					    &lr);
				fprintf(stderr, "loadgen: H3 %s fetch.wait.max.ms=%s: %ld samples, p99 %.3f ms\n",
					mock ? "mock" : "samsa", waits[w], lr.n, lr.p99);
				if (lr.ok) {
					p50[mock][nr[mock]] = lr.p50;
					p99[mock][nr[mock]] = lr.p99;
					mx[mock][nr[mock]++] = lr.max;
					samples[mock] += lr.n;
				} else {
					failures++;
				}
				target_close(&t);
			}
		}
		printf("H3: fetch.wait.max.ms=%s: samples samsa %ld, mock %ld\n", waits[w], samples[0],
		       samples[1]);
		double s50 = -1, m50 = -1, s99 = -1, m99 = -1, smx = -1, mmx = -1;
		char f[64];
		snprintf(f, sizeof(f), "H3 p99 ms (fetch.wait.max.ms=%s)", waits[w]);
		if (nr[0]) {
			s50 = median(p50[0], nr[0]);
			s99 = median_runs(f, 0, p99[0], nr[0]);
			smx = median(mx[0], nr[0]);
		}
		if (nr[1]) {
			m50 = median(p50[1], nr[1]);
			m99 = median_runs(f, 1, p99[1], nr[1]);
			mmx = median(mx[1], nr[1]);
		}
		snprintf(f, sizeof(f), "e2e p50 ms (fetch.wait.max.ms=%s)", waits[w]);
		add_row("H3", f, s50, m50, -1);
		snprintf(f, sizeof(f), "e2e p99 ms (fetch.wait.max.ms=%s)", waits[w]);
		trow *r = add_row("H3", f, s99, m99, -1);
		target_ratio(r, 1.0);
		if (w == 1) {
			snprintf(r->target, sizeof(r->target), "<= mock, < 1 ms");
			if (r->s >= 0)
				r->met = r->s < 1.0 && (r->m < 0 || r->s <= r->m);
		}
		snprintf(f, sizeof(f), "e2e max ms, run median (fetch.wait.max.ms=%s)", waits[w]);
		add_row("H3", f, smx, mmx, -1);
	}
}

/* ---- H4 ---- */

/* Print /proc/PID/smaps_rollup and the largest mappings by Rss. */
static void dump_memory(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "r");
	if (f) {
		fprintf(stderr, "loadgen: idle broker %s:\n", path);
		while (fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	struct {
		char name[512];
		long rss;
	} top[12] = {{{0}, 0}};
	char cur[512] = "";
	while (fgets(line, sizeof(line), f)) {
		long kb;
		if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
			int j = 11;
			if (kb <= top[j].rss)
				continue;
			while (j > 0 && top[j - 1].rss < kb) {
				top[j] = top[j - 1];
				j--;
			}
			snprintf(top[j].name, sizeof(top[j].name), "%s", cur);
			top[j].rss = kb;
		} else {
			unsigned long a0, a1;
			if (sscanf(line, "%lx-%lx ", &a0, &a1) == 2) {
				line[strcspn(line, "\n")] = 0;
				snprintf(cur, sizeof(cur), "%s", line);
			}
		}
	}
	fclose(f);
	fprintf(stderr, "loadgen: largest mappings by Rss (kB):\n");
	for (int j = 0; j < 12 && top[j].rss; j++)
		fprintf(stderr, "  %6ld  %s\n", top[j].rss, top[j].name);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8) || !strncmp(line, "VmRSS", 5) ||
		    !strncmp(line, "RssAnon", 7) || !strncmp(line, "RssFile", 7))
			fprintf(stderr, "  %s", line);
	if (f)
		fclose(f);
}

/* Poll the broker's port every 0.2 ms until a TCP connect succeeds; ns. */
static int64_t wait_listen(const h_broker *b, int64_t deadline)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	while (now_ns() < deadline) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (rc == 0)
			return now_ns();
		usleep(200);
	}
	return -1;
}

typedef struct one_dr {
	volatile int done;
	rd_kafka_resp_err_t err;
} one_dr;

static void one_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	one_dr *d = opaque;
	d->err = m->err;
	d->done = 1;
}

/* Create a producer and send one record to TOPIC 0; the time of its
 * successful delivery report (ns), or -1. */
static int64_t produce_first(const char *bootstrap, int64_t deadline)
{
	char err[256];
	one_dr d = {0};
	rd_kafka_conf_t *conf = base_conf(bootstrap);
	set(conf, "acks", "1");
	set(conf, "linger.ms", "0");
	rd_kafka_conf_set_dr_msg_cb(conf, one_dr_cb);
	rd_kafka_conf_set_opaque(conf, &d);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk)
		return -1;
	int64_t t = -1;
	/* Ask for the topic's leader first and wait for the answer: a record
	 * produced before the first connection is up can otherwise wait for
	 * librdkafka's 1 s topic scan (seen as sporadic +1000 ms). */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
	for (int ready = 0; !ready && now_ns() < deadline;) {
		const struct rd_kafka_metadata *md;
		if (rd_kafka_metadata(rk, 0, rkt, &md, 1000) == 0) {
			ready = md->topic_cnt == 1 && !md->topics[0].err &&
				md->topics[0].partition_cnt >= 1 &&
				md->topics[0].partitions[0].leader >= 0;
			rd_kafka_metadata_destroy(md);
		}
		if (!ready)
			usleep(200);
	}
	rd_kafka_topic_destroy(rkt);
	if (!rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
			       RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			       RD_KAFKA_V_END)) {
		while (!d.done && now_ns() < deadline)
			rd_kafka_poll(rk, 1);
		if (d.done && !d.err)
			t = now_ns();
		else
			fprintf(stderr, "loadgen: first produce: %s\n",
				d.done ? rd_kafka_err2str(d.err) : "no delivery report");
	}
	rd_kafka_flush(rk, 1000);
	rd_kafka_destroy(rk);
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void h4(void)
{
	target t;
	double idle = -1, listen_med = -1, first_med = -1, rec_listen = -1, rec_first = -1;
	double gib = 0;
	/* Idle RSS, then starts on the same dir (the topic exists). */
	if (target_open(&t, 0) == 0) {
		sleep(2);
		long kb = h_broker_status_kb(t.b, "VmRSS");
		idle = kb >= 0 ? kb / 1024.0 : -1;
		dump_memory(t.b->pid);
		h_broker *b = t.b;
		double ls[5], fs[5];
		int k = 0;
		for (int i = 0; i < 5; i++) {
			if (h_broker_stop(b, 30000) == -1)
				break;
			int64_t t0 = now_ns();
			if (h_broker_launch(b) < 0)
				break;
			int64_t tl = wait_listen(b, t0 + 20LL * 1000000000);
			int64_t tf = tl > 0 ? produce_first(b->bootstrap, t0 + 20LL * 1000000000) : -1;
			if (tl < 0 || tf < 0)
				break;
			ls[k] = (double)(tl - t0) / 1e6;
			fs[k] = (double)(tf - t0) / 1e6;
			fprintf(stderr, "loadgen: H4 start %d: listen %.1f ms, first ack %.1f ms\n", i,
				ls[k], fs[k]);
			k++;
		}
		if (k == 5) {
			qsort(ls, 5, sizeof(double), cmp_d);
			qsort(fs, 5, sizeof(double), cmp_d);
			listen_med = ls[2];
			first_med = fs[2];
		} else {
			failures++;
		}
		/* Recovery: ~1 GiB into one partition, kill -9, restart. */
		long n = scaled(1 << 20);
		prod_cfg c = {n, 1024, "1", "5", 0, NULL};
		prod_res p;
		gib = (double)n * 1024 / (1 << 30);
		fprintf(stderr, "loadgen: H4 recovery: %ld x 1 KiB\n", n);
		produce_phase(b->bootstrap, &c, &p);
		if (p.ok && h_broker_kill(b) == 0) {
			int64_t t0 = now_ns();
			if (h_broker_launch(b) == 0) {
				int64_t tl = wait_listen(b, t0 + 60LL * 1000000000);
				int64_t tf =
				    tl > 0 ? produce_first(b->bootstrap, t0 + 60LL * 1000000000) : -1;
				if (tl > 0)
					rec_listen = (double)(tl - t0) / 1e6;
				if (tf > 0)
					rec_first = (double)(tf - t0) / 1e6;
			}
			/* Every acknowledged record survived. */
			char err[256];
			rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, base_conf(b->bootstrap), err,
						      sizeof(err));
			int64_t lo = -1, hi = -1;
			if (rk) {
				rd_kafka_query_watermark_offsets(rk, TOPIC, 0, &lo, &hi, 10000);
				rd_kafka_destroy(rk);
			}
			/* 5 start-up probe records + n + 1 after restart */
			if (hi != 5 + n + 1) {
				fprintf(stderr, "loadgen: after kill -9: high watermark %ld, "
						"expected %ld\n",
					(long)hi, 5 + n + 1);
				failures++;
				rec_first = -1;
			}
		} else {
			fprintf(stderr, "loadgen: H4 recovery: produce %s, kill -9 of pid %d\n",
				p.ok ? "ok" : "failed", (int)b->pid);
			failures++;
		}
		if (rec_first < 0)
			failures++;
		target_close(&t);
	}
	target_max(add_row("H4", "idle RSS MiB", idle, -1, -1), 8, "<= 8 MiB");
	target_max(add_row("H4", "peak RSS under H1 MiB (VmHWM)", h1_hwm_kb >= 0 ? h1_hwm_kb / 1024.0 : -1,
			   -1, -1),
		   64, "<= 64 MiB");
	add_row("H4", "start: fork to listen ms (median of 5)", listen_med, -1, -1);
	target_max(add_row("H4", "start: fork to 1st acked produce ms (med)", first_med, -1, -1),
		   50, "<= 50 ms");
	char f[64];
	snprintf(f, sizeof(f), "kill -9 %.2f GiB: restart to listen ms", gib);
	add_row("H4", f, rec_listen, -1, -1);
	snprintf(f, sizeof(f), "kill -9 %.2f GiB: restart to acked produce ms", gib);
	target_max(add_row("H4", f, rec_first, -1, -1), 1000, "<= 1000 ms");
}

int main(int argc, char **argv)
{
	int do_s = 1, do_m = 1, sel = 0;
	int opt;
	while ((opt = getopt(argc, argv, "H:x:r:p:d:SMh")) != -1) {
		switch (opt) {
		case 'H':
			for (const char *p = optarg; *p; p++)
				if (*p >= '1' && *p <= '4')
					sel |= 1 << (*p - '1');
			break;
		case 'x':
			scale = atof(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > MAX_REPS) {
				fprintf(stderr, "loadgen: -r must be 1..%d\n", MAX_REPS);
				return 2;
			}
			break;
		case 'p':
			perf_prefix = optarg;
			break;
		case 'd':
			debug_contexts = optarg;
			break;
		case 'S':
			do_m = 0;
			break;
		case 'M':
			do_s = 0;
			break;
		default:
			fprintf(stderr, "usage: %s [-H 1,2,3,4] [-x scale] [-r runs of H1, H2] [-S samsa only] "
					"[-M mock only] [-p perf-prefix] [-d librdkafka debug contexts]\n",
				argv[0]);
			return 2;
		}
	}
	if (!sel)
		sel = 0xf;
	if (scale <= 0) {
		fprintf(stderr, "loadgen: -x must be positive\n");
		return 2;
	}
	if (h_init() < 0)
		return 1;
	printf("loadgen: librdkafka %s, scale %.3g; the mock cluster runs in this process and "
	       "shares the 2 cores with the clients; samsa is a separate process\n",
	       rd_kafka_version_str(), scale);
	if (sel & 1)
		h1(do_s, do_m);
	if (sel & 2)
		h2(do_s, do_m);
	if (sel & 4)
		h3(do_s, do_m);
	if ((sel & 8) && do_s)
		h4();
	print_table();
	if (failures)
		printf("\n%d measurement(s) FAILED (see stderr)\n", failures);
	h_fini();
	return failures ? 1 : 0;
}
