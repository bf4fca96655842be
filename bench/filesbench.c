/*
 * filesbench.c - the descriptors a broker holds and its restart time with
 * many partitions (issue 15's figures: partitions created, descriptors
 * held, restart time clean and after kill -9). Prints figures, never
 * pass/fail.
 *
 * 1. A broker (at this process's open file limit, which it raises to the
 *    hard one) gets topics of -t partitions each ("fb0", "fb1", ...) until
 *    -n partitions exist or a CreateTopics is refused (the refusal is
 *    printed: a broker that budgets descriptors per partition stops
 *    there).
 * 2. One record (100 bytes) is produced to every partition (librdkafka,
 *    acks=1), then every record is read back by a consumer assigned every
 *    partition from offset 0. The descriptors of the broker
 *    (/proc/<pid>/fd: all, and those on segment .log files) and its RSS
 *    are sampled after each step.
 * 3. SIGTERM: the time to exit; a start on the same dir: the time until it
 *    answers ApiVersions (its logs are open by then); then kill -9 and a
 *    start again (recovery of every partition).
 *
 * Usage: filesbench [-n partitions] [-t per-topic] [-o key=value]...
 * The broker binary is $SAMSA_BIN; its data dir lives under $TMPDIR (or
 * /tmp) and is removed at the end. Starts wait 20 s times
 * $SAMSA_TIMEOUT_SCALE (make bench-files sets 30).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"

static void die(const char *what)
{
	fprintf(stderr, "filesbench: %s\n", what);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "filesbench: config %s=%s: %s\n", k, v, err);
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

/* ---- what the broker holds ---- */

typedef struct held {
	int all, logs; /* descriptors; those on a segment .log in the data dir */
	long rss_kb;
} held;

static held sample(const h_broker *b)
{
	held h = { 0, 0, h_broker_status_kb(b, "VmRSS") };
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)b->pid);
	DIR *d = opendir(path);
	if (!d)
		return h;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		h.all++;
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 4) {
			target[n] = 0;
			if (strncmp(target, b->dir, strlen(b->dir)) == 0 && strcmp(target + n - 4, ".log") == 0)
				h.logs++;
		}
	}
	closedir(d);
	return h;
}

static void report(const char *step, const h_broker *b, double secs)
{
	held h = sample(b);
	printf("%-34s %8d %8d %9.1f", step, h.all, h.logs, (double)h.rss_kb / 1024);
	if (secs >= 0)
		printf(" %8.2f", secs);
	printf("\n");
	fflush(stdout);
}

/* ---- topics ---- */

/* CreateTopics name with n partitions; 0, or -1 with the reason printed. */
static int create_topic(rd_kafka_t *rk, const char *name, int n)
{
	char err[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, n, 1, err, sizeof(err));
	if (!nt)
		die(err);
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_operation_timeout(opt, 300000, err, sizeof(err));
	rd_kafka_AdminOptions_set_request_timeout(opt, 300000, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 310000);
	int rc = -1;
	if (!ev) {
		fprintf(stderr, "filesbench: CreateTopics %s: no answer\n", name);
	} else if (rd_kafka_event_error(ev)) {
		fprintf(stderr, "filesbench: CreateTopics %s: %s\n", name, rd_kafka_event_error_string(ev));
	} else {
		size_t cnt;
		const rd_kafka_topic_result_t **tr =
			rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
		if (cnt == 1 && !rd_kafka_topic_result_error(tr[0]))
			rc = 0;
		else if (cnt == 1)
			printf("CreateTopics %s (%d partitions) refused: %s: %s\n", name, n,
			       rd_kafka_err2name(rd_kafka_topic_result_error(tr[0])),
			       rd_kafka_topic_result_error_string(tr[0]));
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	return rc;
}

/* ---- one record per partition, and back ---- */

static long delivered, failed;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err)
		failed++;
	else
		delivered++;
}

static void produce_all(const h_broker *b, int ntopics, int per_topic, int last)
{
	char err[256];
	rd_kafka_conf_t *conf = base_conf(b);
	set(conf, "acks", "1");
	set(conf, "linger.ms", "20");
	set(conf, "enable.idempotence", "false");
	set(conf, "queue.buffering.max.messages", "1000000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk)
		die(err);
	static char value[100];
	memset(value, 'v', sizeof(value));
	long sent = 0;
	for (int t = 0; t < ntopics; t++) {
		char name[32];
		snprintf(name, sizeof(name), "fb%d", t);
		int n = t + 1 == ntopics ? last : per_topic;
		for (int p = 0; p < n; p++) {
			while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(name), RD_KAFKA_V_PARTITION(p),
						 RD_KAFKA_V_VALUE(value, sizeof(value)),
						 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) ==
			       RD_KAFKA_RESP_ERR__QUEUE_FULL)
				rd_kafka_poll(rk, 10);
			sent++;
		}
	}
	rd_kafka_flush(rk, 600000);
	if (delivered != sent)
		printf("produce: %ld of %ld delivered, %ld failed\n", delivered, sent, failed);
	rd_kafka_destroy(rk);
}

/* Read every partition from offset 0 until total records came; returns
 * the number read. */
static long consume_all(const h_broker *b, int ntopics, int per_topic, int last, long total)
{
	char err[256];
	rd_kafka_conf_t *conf = base_conf(b);
	set(conf, "group.id", "filesbench");
	set(conf, "enable.auto.commit", "false");
	set(conf, "fetch.wait.max.ms", "100");
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk)
		die(err);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)total);
	for (int t = 0; t < ntopics; t++) {
		char name[32];
		snprintf(name, sizeof(name), "fb%d", t);
		int n = t + 1 == ntopics ? last : per_topic;
		for (int p = 0; p < n; p++)
			rd_kafka_topic_partition_list_add(l, name, p)->offset = 0;
	}
	rd_kafka_assign(rk, l);
	rd_kafka_topic_partition_list_destroy(l);
	long got = 0;
	double idle_since = now_s();
	while (got < total && now_s() - idle_since < 60) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		if (!m)
			continue;
		if (!m->err) {
			got++;
			idle_since = now_s();
		}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return got;
}

int main(int argc, char **argv)
{
	int want = 10000, per_topic = 1000;
	const char *overrides[H_MAX_OVERRIDES + 1] = { NULL };
	int nover = 0;
	int opt;
	while ((opt = getopt(argc, argv, "n:t:o:")) != -1) {
		if (opt == 'n')
			want = atoi(optarg);
		else if (opt == 't')
			per_topic = atoi(optarg);
		else if (opt == 'o' && nover < H_MAX_OVERRIDES)
			overrides[nover++] = optarg;
		else
			die("usage: filesbench [-n partitions] [-t per-topic] [-o key=value]...");
	}
	if (want < 1 || per_topic < 1)
		die("-n and -t must be positive");
	if (h_init() != 0)
		die("cannot create the temporary dir");
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("filesbench: %s, %d partitions asked in topics of %d, open file limit %llu/%llu\n",
	       h_samsa_bin(), want, per_topic, (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	h_broker *b = h_broker_new(overrides);
	if (!b || h_broker_start(b) != 0)
		die("the broker did not start");
	printf("%-34s %8s %8s %9s %8s\n", "step", "fds", "on .log", "RSS MiB", "seconds");
	report("started", b, -1);

	char err[256];
	rd_kafka_t *admin = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(b), err, sizeof(err));
	if (!admin)
		die(err);
	int made = 0, ntopics = 0, last = 0;
	double t0 = now_s();
	while (made < want) {
		int n = want - made < per_topic ? want - made : per_topic;
		char name[32];
		snprintf(name, sizeof(name), "fb%d", ntopics);
		if (create_topic(admin, name, n) != 0)
			break;
		made += n;
		last = n;
		ntopics++;
	}
	rd_kafka_destroy(admin);
	char step[64];
	snprintf(step, sizeof(step), "created %d partitions", made);
	report(step, b, now_s() - t0);
	if (made == 0) {
		h_broker_free(b);
		h_fini();
		return 1;
	}

	t0 = now_s();
	produce_all(b, ntopics, per_topic, last);
	snprintf(step, sizeof(step), "produced 1 record to each");
	report(step, b, now_s() - t0);
	t0 = now_s();
	long got = consume_all(b, ntopics, per_topic, last, made);
	snprintf(step, sizeof(step), "read %ld records back", got);
	report(step, b, now_s() - t0);

	t0 = now_s();
	int st = h_broker_stop(b, 600000);
	double stop_s = now_s() - t0;
	printf("%-34s %8s %8s %9s %8.2f%s\n", "clean stop (SIGTERM)", "", "", "", stop_s,
	       st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "" : "  (exit status not 0)");
	t0 = now_s();
	if (h_broker_restart(b) != 0)
		die("the restart failed");
	report("clean start, until it serves", b, now_s() - t0);
	h_broker_kill(b);
	t0 = now_s();
	if (h_broker_restart(b) != 0)
		die("the restart after kill -9 failed");
	report("start after kill -9, until it serves", b, now_s() - t0);
	h_broker_stop(b, 600000);
	h_broker_free(b);
	h_fini();
	return 0;
}
