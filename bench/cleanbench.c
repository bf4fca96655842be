/*
 * cleanbench.c - how long samsa's log cleaner takes per GB of compacted
 * log, and the produce throughput while it runs against without it. Prints
 * figures, never pass/fail (issue 5's closing note).
 *
 * 1. A broker with log.cleaner.enable=false gets a 1-partition topic "cb"
 *    (cleanup.policy=compact, segment.bytes 64 MiB) and a plain 1-partition
 *    topic "load"; about 1 GB of records is produced to "cb": keys drawn
 *    uniformly from 100,000 ("k000042"), values of 100 to 1000 bytes
 *    (uniform, incompressible), acks=1, linger.ms=5, no compression. Then
 *    it stops and its data dir is copied twice.
 * 2. Without the cleaner: the broker restarts on its own dir (cleaner still
 *    off) and a fixed produce run (-r records of the same shape, to "load")
 *    is timed: records/s and MB/s from the first produce call to the last
 *    delivery report. It runs again after step 3; the mean of the two is
 *    the "cleaner off" figure.
 * 3. With the cleaner: a broker on the first copy, log.cleaner.enable=true
 *    and log.cleaner.backoff.ms=200, starts the same produce run at once,
 *    while its cleaner compacts the ~1 GB of "cb". Whether the cleaner was
 *    still busy when the run ended is printed (if not, the run overlapped
 *    it only in part: use a larger -r or -g).
 * 4. The cleaner alone: a broker on the second copy with the cleaner on and
 *    no clients, until "cb" is cleaned up to its active segment.
 * Cleaner figures come from the broker's per-round log line (broker/cleaner.c:
 * "log cleaner: cb-0 cleaned up to offset X: ... R MB read, W MB written
 * in T ms"): the rounds' T summed (the cleaner thread's time, not counting
 * log.cleaner.backoff.ms), over the bytes of the segments below the active
 * one before cleaning; also the wall time from the broker being ready to
 * the last round seen.
 *
 * Usage: cleanbench [-g GB] [-k keys] [-v MIN-MAX] [-r run-records] [-S segment-bytes]
 * The broker binary is $SAMSA_BIN. Temporary dirs live under $TMPDIR (or
 * /tmp): about 3x the -g size on disk.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"

#define TOPIC "cb"
#define LOAD "load"

static int64_t nkeys = 100000;
static int vmin = 100, vmax = 1000;
static int64_t segment_bytes = 64LL << 20;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void die(const char *what)
{
	fprintf(stderr, "cleanbench: %s\n", what);
	exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "cleanbench: config %s=%s: %s\n", k, v, err);
		exit(2);
	}
}

static rd_kafka_conf_t *base_conf(const h_broker *b)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	set(conf, "bootstrap.servers", b->bootstrap);
	set(conf, "broker.address.family", "v4");
	set(conf, "log.connection.close", "false");
	return conf;
}

/* ---- topics ---- */

static void create_topic(const h_broker *b, const char *name, const char *const *configs)
{
	char err[256];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(b), err, sizeof(err));
	if (!rk)
		die(err);
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, 1, 1, err, sizeof(err));
	for (int i = 0; configs && configs[i]; i += 2)
		rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1]);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	int ok = 0;
	if (ev && !rd_kafka_event_error(ev)) {
		size_t cnt;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		    rd_kafka_event_CreateTopics_result(ev), &cnt);
		ok = cnt == 1 && !rd_kafka_topic_result_error(tr[0]);
		if (!ok && cnt == 1)
			fprintf(stderr, "cleanbench: CreateTopics %s: %s\n", name,
				rd_kafka_topic_result_error_string(tr[0]));
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	if (!ok)
		die("CreateTopics failed");
	/* wait for a leader */
	for (int i = 0; i < 100; i++) {
		const struct rd_kafka_metadata *md;
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, name, NULL);
		int ready = 0;
		if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0) {
			ready = md->topic_cnt == 1 && !md->topics[0].err &&
				md->topics[0].partition_cnt == 1 && md->topics[0].partitions[0].leader >= 0;
			rd_kafka_metadata_destroy(md);
		}
		rd_kafka_topic_destroy(rkt);
		if (ready)
			break;
		sleep_ms(100);
	}
	rd_kafka_destroy(rk);
}

/* ---- producing ---- */

typedef struct prod_result {
	long delivered, failed;
	rd_kafka_resp_err_t first_err;
	double bytes; /* key + value bytes delivered */
	double seconds;
} prod_result;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	prod_result *r = opaque;
	if (m->err) {
		if (!r->failed++)
			r->first_err = m->err;
	} else {
		r->delivered++;
		r->bytes += (double)(m->len + m->key_len);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

/*
 * Produce to topic until max_records were sent or max_bytes of keys and
 * values (whichever comes first), then flush. Keys "k%06d" uniformly over
 * nkeys, values vmin..vmax bytes out of an incompressible buffer.
 */
static prod_result produce(const h_broker *b, const char *topic, long max_records, double max_bytes)
{
	static char noise[4096];
	static int noise_ready;
	if (!noise_ready) {
		for (size_t i = 0; i < sizeof noise; i += 8) {
			uint64_t x = next_rand();
			memcpy(noise + i, &x, 8);
		}
		noise_ready = 1;
	}
	prod_result r = { 0 };
	char err[256];
	rd_kafka_conf_t *conf = base_conf(b);
	set(conf, "acks", "1");
	set(conf, "linger.ms", "5");
	set(conf, "enable.idempotence", "false");
	set(conf, "compression.type", "none");
	set(conf, "queue.buffering.max.messages", "1000000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_opaque(conf, &r);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk)
		die(err);
	/* learn the leader before the clock starts */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == 0)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);

	double sent = 0;
	double t0 = now_s();
	for (long i = 0; i < max_records && sent < max_bytes; i++) {
		char key[16];
		int klen = snprintf(key, sizeof key, "k%06" PRId64, (int64_t)(next_rand() % (uint64_t)nkeys));
		int vlen = vmin + (int)(next_rand() % (uint64_t)(vmax - vmin + 1));
		size_t at = (size_t)(next_rand() % (sizeof noise - (size_t)vmax));
		for (;;) {
			rd_kafka_resp_err_t e = rd_kafka_producev(
			    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
			    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, (size_t)klen),
			    RD_KAFKA_V_VALUE(noise + at, (size_t)vlen), RD_KAFKA_V_END);
			if (!e)
				break;
			if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				fprintf(stderr, "cleanbench: produce: %s\n", rd_kafka_err2str(e));
				exit(1);
			}
			rd_kafka_poll(rk, 1);
		}
		sent += klen + vlen;
		if ((i & 1023) == 0)
			rd_kafka_poll(rk, 0);
	}
	if (rd_kafka_flush(rk, 300000))
		die("flush timed out");
	r.seconds = now_s() - t0;
	rd_kafka_destroy(rk);
	if (r.failed) {
		fprintf(stderr, "cleanbench: %ld delivery failures, first: %s\n", r.failed,
			rd_kafka_err2str(r.first_err));
		exit(1);
	}
	return r;
}

/* ---- the partition dir and the broker log ---- */

typedef struct dir_info {
	int64_t bytes;       /* all .log files */
	int64_t closed;      /* .log files below the active (last) segment */
	int64_t active_base; /* base offset of the active segment */
	int nsegments;
} dir_info;

static dir_info scan_dir(const h_broker *b, const char *topic)
{
	dir_info di = { 0, 0, -1, 0 };
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s-0", b->dir, topic);
	DIR *d = opendir(path);
	if (!d)
		die("cannot open the partition dir");
	int64_t last_size = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l != 24 || strcmp(e->d_name + 20, ".log") != 0)
			continue;
		char f[PATH_MAX + 600];
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		struct stat st;
		if (stat(f, &st) != 0)
			continue;
		int64_t base = strtoll(e->d_name, NULL, 10);
		di.bytes += st.st_size;
		di.nsegments++;
		if (base > di.active_base) {
			di.active_base = base;
			last_size = st.st_size;
		}
	}
	closedir(d);
	di.closed = di.bytes - last_size;
	return di;
}

typedef struct clean_info {
	int rounds;
	int segs_in, segs_out; /* summed over the rounds */
	int64_t to;        /* highest "cleaned up to offset" */
	double read_mb, written_mb;
	int64_t ms;        /* sum of the rounds' times */
} clean_info;

static clean_info parse_log(const h_broker *b, const char *topic)
{
	clean_info ci = { 0, 0, 0, -1, 0, 0, 0 };
	char *log = h_broker_read_log(b);
	if (!log)
		return ci;
	char needle[128];
	int n = snprintf(needle, sizeof needle, "log cleaner: %s-0 cleaned up to offset ", topic);
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += n) {
		long long to, ms;
		int in, out;
		double rd, wr;
		if (sscanf(p + n, "%lld: %d segment(s) into %d, %lf MB read, %lf MB written in %lld ms", &to,
			   &in, &out, &rd, &wr, &ms) != 6)
			continue;
		ci.rounds++;
		ci.segs_in += in;
		ci.segs_out += out;
		if (to > ci.to)
			ci.to = to;
		ci.read_mb += rd;
		ci.written_mb += wr;
		ci.ms += ms;
	}
	free(log);
	return ci;
}

/* Wait until the cleaner reached active_base (the segments below it are
 * all cleaned). Returns the wall seconds waited, or -1 on timeout. */
static double wait_cleaned(const h_broker *b, int64_t active_base, double t0, int timeout_s)
{
	for (;;) {
		clean_info ci = parse_log(b, TOPIC);
		if (ci.to >= active_base)
			return now_s() - t0;
		if (now_s() - t0 > timeout_s)
			return -1;
		sleep_ms(50);
	}
}

/* ---- brokers ---- */

static void start(h_broker *b, const char *what)
{
	if (h_broker_start(b) < 0) {
		fprintf(stderr, "cleanbench: could not start the broker (%s)\n", what);
		exit(1);
	}
	fprintf(stderr, "cleanbench: %s: samsa pid %d on %s, log dir %s\n", what, (int)b->pid,
		b->bootstrap, b->dir);
}

static void stop(h_broker *b)
{
	int st = h_broker_stop(b, 60000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "cleanbench: samsa did not stop cleanly (status 0x%x)\n", st);
		h_broker_dump_log(b, stderr, 20);
	}
}

/* A broker (not started) on a copy of src's data dir. */
static h_broker *copy_of(const h_broker *src, const char *const *overrides)
{
	h_broker *b = h_broker_new(overrides);
	if (!b)
		die("h_broker_new");
	char cmd[2 * PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", src->dir, b->dir);
	if (system(cmd) != 0)
		die("copying the data dir failed");
	return b;
}

static void print_clean(const char *title, const dir_info *before, const dir_info *after,
			const clean_info *ci, double wall_s)
{
	double gb = (double)before->closed / 1e9;
	double s = (double)ci->ms / 1000.0;
	printf("%s\n", title);
	printf("  log before             %8.3f GB in %d segments (%.3f GB below the active one)\n",
	       (double)before->bytes / 1e9, before->nsegments, gb);
	printf("  log after              %8.3f GB in %d segments\n", (double)after->bytes / 1e9,
	       after->nsegments);
	printf("  cleaner rounds         %8d (%d segments into %d, %.0f MB read, %.0f MB written)\n",
	       ci->rounds, ci->segs_in, ci->segs_out, ci->read_mb, ci->written_mb);
	printf("  cleaner time           %8.2f s (sum of rounds); %.2f s wall from start\n", s,
	       wall_s);
	if (gb > 0 && s > 0)
		printf("  seconds per GB         %8.2f s/GB   (%.0f MB/s of log cleaned)\n", s / gb,
		       (double)before->closed / 1e6 / s);
}

int main(int argc, char **argv)
{
	double gb = 1.0;
	long run_records = 400000;
	int opt;
	while ((opt = getopt(argc, argv, "g:k:v:r:S:h")) != -1) {
		switch (opt) {
		case 'g':
			gb = atof(optarg);
			break;
		case 'k':
			nkeys = atoll(optarg);
			break;
		case 'v':
			if (sscanf(optarg, "%d-%d", &vmin, &vmax) != 2)
				vmin = vmax = atoi(optarg);
			break;
		case 'r':
			run_records = atol(optarg);
			break;
		case 'S':
			segment_bytes = atoll(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-g GB] [-k keys] [-v MIN-MAX value bytes] "
					"[-r run records] [-S segment bytes]\n",
				argv[0]);
			return 2;
		}
	}
	if (!(gb > 0) || nkeys <= 0 || vmin < 0 || vmax < vmin || vmax > 3000 || run_records <= 0 ||
	    segment_bytes < 1048576) {
		fprintf(stderr, "cleanbench: bad arguments\n");
		return 2;
	}
	if (h_init() < 0)
		return 1;
	static const char *const off[] = { "log.cleaner.enable=false", NULL };
	static const char *const on[] = { "log.cleaner.enable=true", "log.cleaner.backoff.ms=200",
					   NULL };
	char seg[32];
	snprintf(seg, sizeof seg, "%lld", (long long)segment_bytes);
	const char *const compact[] = { "cleanup.policy", "compact", "segment.bytes", seg, NULL };

	/* 1. fill */
	h_broker *p = h_broker_new(off);
	if (!p)
		die("h_broker_new");
	start(p, "fill (cleaner off)");
	create_topic(p, TOPIC, compact);
	create_topic(p, LOAD, NULL);
	fprintf(stderr, "cleanbench: producing %.2f GB to %s\n", gb, TOPIC);
	prod_result fill = produce(p, TOPIC, LONG_MAX, gb * 1e9);
	stop(p);
	dir_info dirty = scan_dir(p, TOPIC);
	h_broker *a = copy_of(p, on);
	h_broker *c = copy_of(p, on);
	sync(); /* no writeback of the copies during the runs */

	/* 2. the run without the cleaner */
	if (h_broker_restart(p) < 0)
		die("restart failed");
	prod_result run_off = produce(p, LOAD, run_records, 1e18);
	stop(p);

	/* 3. the run while the cleaner works */
	start(a, "run (cleaner on)");
	double t0 = now_s();
	prod_result run_on = produce(a, LOAD, run_records, 1e18);
	clean_info at_end = parse_log(a, TOPIC);
	int busy = at_end.to < dirty.active_base;
	double wall_a = wait_cleaned(a, dirty.active_base, t0, 600);
	clean_info ci_a = parse_log(a, TOPIC);
	dir_info after_a = scan_dir(a, TOPIC);
	stop(a);

	/* the run without the cleaner again: the off figure is the mean of the
	 * runs before and after the busy one (a shared machine drifts) */
	if (h_broker_restart(p) < 0)
		die("restart failed");
	prod_result run_off2 = produce(p, LOAD, run_records, 1e18);
	stop(p);

	/* 4. the cleaner alone */
	start(c, "cleaner alone");
	t0 = now_s();
	double wall_c = wait_cleaned(c, dirty.active_base, t0, 600);
	clean_info ci_c = parse_log(c, TOPIC);
	dir_info after_c = scan_dir(c, TOPIC);
	stop(c);

	printf("\ncleanbench: compacted topic, 1 partition, segment.bytes %lld, %lld keys, "
	       "values %d-%d bytes, librdkafka %s acks=1 linger.ms=5\n\n",
	       (long long)segment_bytes, (long long)nkeys, vmin, vmax, rd_kafka_version_str());
	printf("fill: %ld records, %.3f GB of keys+values in %.1f s (%.0f MB/s)\n\n", fill.delivered,
	       fill.bytes / 1e9, fill.seconds, fill.bytes / 1e6 / fill.seconds);
	print_clean("cleaner alone (no clients):", &dirty, &after_c, &ci_c, wall_c);
	print_clean("cleaner during the produce run:", &dirty, &after_a, &ci_a, wall_a);
	printf("\nproduce run: %ld records, %.0f MB to a plain topic on the same broker\n",
	       run_records, run_off.bytes / 1e6);
	printf("%-26s %14s %14s %10s\n", "", "cleaner off", "cleaner busy", "busy/off");
	double r_off = (run_off.delivered / run_off.seconds + run_off2.delivered / run_off2.seconds) / 2;
	double m_off = (run_off.bytes / run_off.seconds + run_off2.bytes / run_off2.seconds) / 2e6;
	double r_on = run_on.delivered / run_on.seconds, m_on = run_on.bytes / 1e6 / run_on.seconds;
	printf("%-26s %14.0f %14.0f %10.2f\n", "produce records/s", r_off, r_on, r_on / r_off);
	printf("%-26s %14.1f %14.1f %10.2f\n", "produce MB/s", m_off, m_on, m_on / m_off);
	printf("%-26s %6.2f, %5.2f %14.2f\n", "run seconds (off: 2 runs)", run_off.seconds,
	       run_off2.seconds, run_on.seconds);
	double load[3] = { -1, -1, -1 };
	FILE *la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(la);
	}
	printf("\nload average at the end: %.2f %.2f %.2f (other processes skew the figures)\n",
	       load[0], load[1], load[2]);
	printf("cleaner still busy when the run ended: %s\n",
	       busy ? "yes (the whole run overlapped cleaning)"
		    : "NO (cleaning ended during the run: use a larger -g or -r)");
	h_broker_free(p);
	h_broker_free(a);
	h_broker_free(c);
	h_fini();
	return 0;
}
