/*
 * tlsbench.c - issue 16's TLS figures, one broker, one run:
 *  - produce and consume MB/s with 1 KiB records over PLAINTEXT and over
 *    SSL (librdkafka, acks=1, linger.ms=5; consume by assignment from the
 *    start, first record to last), and the broker's CPU seconds per GB for
 *    each;
 *  - consume over SSL with and without kernel TLS for the fetched segment
 *    bytes: the broker logs which path its SSL listener takes; where the
 *    kernel cannot do TLS (no tls module: /proc/net/tls_stat absent) the
 *    kTLS row says so instead of a figure. The "without" run sets
 *    SAMSA_KTLS=0 for the broker (security/tls.c then does not ask OpenSSL
 *    for kTLS);
 *  - TLS handshakes per second: c client threads each connecting, doing a
 *    full TLS 1.3 handshake (no resumption) with OpenSSL and closing, and
 *    the broker's CPU per handshake.
 * Certificates (ECDSA P-256, a CA and the broker's) are made with the
 * openssl command in the harness's temp dir.
 *
 * Usage: tlsbench [-n records per run] [-H handshakes] [-c client threads]
 * The broker binary is $SAMSA_BIN (`make bench-tls` sets it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/certs.h"
#include "compat-tests/harness.h"

#define RECSZ 1024

static long nrec = 200000;
static int nhandshakes = 3000, nthreads = 2;
static char certs[1024];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double broker_cpu(const h_broker *b)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)b->pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void die(const char *what)
{
	fprintf(stderr, "tlsbench: %s\n", what);
	exit(1);
}

static void make_certs(void)
{
	snprintf(certs, sizeof(certs), "%s/certs", h_base_dir());
	if (bench_make_certs(certs) < 0)
		die("cannot make the certificates");
}

static h_broker *start_broker(int *ssl_port)
{
	char ks[1200], lst[160];
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s/keystore.pem", certs);
	*ssl_port = h_free_port();
	snprintf(lst, sizeof(lst), "listeners=PLAINTEXT://127.0.0.1:${PORT},SSL://127.0.0.1:%d",
		 *ssl_port);
	const char *ov[] = { "ssl.keystore.type=PEM", ks, lst, "num.partitions=1", NULL };
	h_broker *b = h_broker_new(ov);
	if (!b || h_broker_start(b) != 0)
		die("the broker did not start");
	return b;
}

static rd_kafka_t *client(rd_kafka_type_t type, int port, bool ssl)
{
	char errstr[512], bs[64], ca[1200];
	snprintf(bs, sizeof(bs), "127.0.0.1:%d", port);
	snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const char *kv[] = { "bootstrap.servers", bs, "broker.address.family", "v4",
			     "linger.ms", "5", "acks", "1", "queue.buffering.max.messages", "200000",
			     "security.protocol", ssl ? "ssl" : "plaintext",
			     "ssl.ca.location", ssl ? ca : NULL, NULL };
	for (int i = 0; kv[i] && kv[i + 1]; i += 2) {
		if (type == RD_KAFKA_CONSUMER && (!strcmp(kv[i], "linger.ms") || !strcmp(kv[i], "acks") ||
						  !strcmp(kv[i], "queue.buffering.max.messages")))
			continue;
		if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
			die(errstr);
	}
	rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
	if (!rk)
		die(errstr);
	return rk;
}

/* Produce nrec records of 1 KiB to topic: MB/s. */
static double produce(const h_broker *b, int port, bool ssl, const char *topic, double *cpu)
{
	rd_kafka_t *p = client(RD_KAFKA_PRODUCER, port, ssl);
	static char val[RECSZ];
	memset(val, 'v', sizeof(val));
	double c0 = broker_cpu(b), t0 = now_s();
	for (long i = 0; i < nrec; i++) {
		while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
					 RD_KAFKA_V_VALUE(val, RECSZ), RD_KAFKA_V_END) ==
		       RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(p, 1);
	}
	if (rd_kafka_flush(p, 120000) != 0)
		die("produce did not finish");
	double t = now_s() - t0;
	*cpu = broker_cpu(b) - c0;
	rd_kafka_destroy(p);
	return (double)nrec * RECSZ / t / 1e6;
}

/* Consume topic from the start: MB/s (first record to last). */
static double consume(const h_broker *b, int port, bool ssl, const char *topic, double *cpu)
{
	rd_kafka_t *c = client(RD_KAFKA_CONSUMER, port, ssl);
	rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
	if (rd_kafka_consume_start(t, 0, RD_KAFKA_OFFSET_BEGINNING) != 0)
		die("consume_start");
	long got = 0;
	double t0 = 0, c0 = broker_cpu(b), start = now_s();
	rd_kafka_message_t *msgs[1000];
	while (got < nrec && now_s() - start < 300) {
		ssize_t n = rd_kafka_consume_batch(t, 0, 1000, msgs, 1000);
		for (ssize_t i = 0; i < n; i++) {
			if (!msgs[i]->err) {
				if (got++ == 0)
					t0 = now_s();
			}
			rd_kafka_message_destroy(msgs[i]);
		}
	}
	double el = now_s() - t0;
	*cpu = broker_cpu(b) - c0;
	rd_kafka_consume_stop(t, 0);
	rd_kafka_topic_destroy(t);
	rd_kafka_destroy(c);
	if (got < nrec)
		die("consume did not read every record");
	return (double)(nrec - 1) * RECSZ / el / 1e6;
}

/* ---- handshakes ---- */

static SSL_CTX *hs_ctx;
static int hs_port;
static atomic_int hs_next, hs_done, hs_failed;

static void *hs_thread(void *arg)
{
	(void)arg;
	while (atomic_fetch_add(&hs_next, 1) < nhandshakes) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)hs_port) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		SSL *ssl = NULL;
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    (ssl = SSL_new(hs_ctx)) && SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1)
			atomic_fetch_add(&hs_done, 1);
		else
			atomic_fetch_add(&hs_failed, 1);
		if (ssl)
			SSL_free(ssl);
		ERR_clear_error();
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static double handshakes(const h_broker *b, int port, double *cpu_ms)
{
	char ca[1200];
	snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
	hs_ctx = SSL_CTX_new(TLS_client_method());
	if (!hs_ctx || SSL_CTX_load_verify_locations(hs_ctx, ca, NULL) != 1)
		die("client context");
	SSL_CTX_set_verify(hs_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_session_cache_mode(hs_ctx, SSL_SESS_CACHE_OFF);
	hs_port = port;
	pthread_t th[16];
	double c0 = broker_cpu(b), t0 = now_s();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, hs_thread, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double t = now_s() - t0;
	int done = atomic_load(&hs_done);
	*cpu_ms = done ? (broker_cpu(b) - c0) * 1000.0 / done : 0;
	SSL_CTX_free(hs_ctx);
	if (atomic_load(&hs_failed))
		fprintf(stderr, "tlsbench: %d handshakes failed\n", atomic_load(&hs_failed));
	return done / t;
}

static bool log_has(const h_broker *b, const char *s)
{
	char *log = h_broker_read_log(b);
	bool has = log && strstr(log, s);
	free(log);
	return has;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:H:c:")) != -1) {
		if (opt == 'n')
			nrec = atol(optarg);
		else if (opt == 'H')
			nhandshakes = atoi(optarg);
		else if (opt == 'c')
			nthreads = atoi(optarg) < 1 ? 1 : atoi(optarg) > 16 ? 16 : atoi(optarg);
		else {
			fprintf(stderr, "usage: tlsbench [-n records] [-H handshakes] [-c threads]\n");
			return 2;
		}
	}
	if (h_init() < 0)
		return 1;
	make_certs();
	printf("tlsbench: %ld records of %d B per run, %d handshakes over %d threads\n", nrec, RECSZ,
	       nhandshakes, nthreads);
	int ssl_port;
	h_broker *b = start_broker(&ssl_port);
	double cpu;
	/* warm-up: both topics made, both clients' paths exercised; the
	 * measured runs then append to them (offsets after the warm-up) */
	long keep = nrec;
	nrec = 1000;
	produce(b, b->port, false, "warm-plain", &cpu);
	produce(b, ssl_port, true, "warm-tls", &cpu);
	nrec = keep;
	double pp = produce(b, b->port, false, "plain", &cpu);
	double pp_cpu = cpu * 1e9 / ((double)nrec * RECSZ);
	double ps = produce(b, ssl_port, true, "tls", &cpu);
	double ps_cpu = cpu * 1e9 / ((double)nrec * RECSZ);
	double cp = consume(b, b->port, false, "plain", &cpu);
	double cp_cpu = cpu * 1e9 / ((double)nrec * RECSZ);
	double cs = consume(b, ssl_port, true, "tls", &cpu);
	double cs_cpu = cpu * 1e9 / ((double)nrec * RECSZ);
	bool ktls = log_has(b, "with kernel TLS and sendfile");
	double hms;
	double hps = handshakes(b, ssl_port, &hms);
	char *log = h_broker_read_log(b);
	const char *line = log ? strstr(log, "samsa: listener SSL (") : NULL;
	char path[400] = "(no TLS path line in the broker log)";
	if (line)
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(line, "\n"), line);
	free(log);
	h_broker_stop(b, 30000);
	h_broker_free(b);

	/* the same SSL consume with kTLS not asked for, when it was on */
	double cs_noktls = -1, cs_noktls_cpu = 0;
	if (ktls) {
		setenv("SAMSA_KTLS", "0", 1);
		b = start_broker(&ssl_port);
		produce(b, ssl_port, true, "tls", &cpu);
		cs_noktls = consume(b, ssl_port, true, "tls", &cpu);
		cs_noktls_cpu = cpu * 1e9 / ((double)nrec * RECSZ);
		h_broker_stop(b, 30000);
		h_broker_free(b);
		unsetenv("SAMSA_KTLS");
	}

	printf("\n%-34s %12s %12s %18s\n", "figure", "PLAINTEXT", "SSL", "SSL/PLAINTEXT");
	printf("%-34s %12.1f %12.1f %17.0f%%\n", "produce MB/s (1 KiB, acks=1)", pp, ps, 100 * ps / pp);
	printf("%-34s %12.2f %12.2f\n", "  broker CPU s per GB produced", pp_cpu, ps_cpu);
	printf("%-34s %12.1f %12.1f %17.0f%%\n", "consume MB/s", cp, cs, 100 * cs / cp);
	printf("%-34s %12.2f %12.2f\n", "  broker CPU s per GB consumed", cp_cpu, cs_cpu);
	printf("\nfetch path of the SSL listener: %s\n", path + 7);
	if (ktls) {
		printf("consume MB/s over SSL with kTLS + sendfile: %.1f (CPU %.2f s/GB); without "
		       "kTLS (pread + SSL_write): %.1f (CPU %.2f s/GB)\n",
		       cs, cs_cpu, cs_noktls, cs_noktls_cpu);
	} else {
		printf("consume over SSL with kTLS: not measurable on this machine (%s); the SSL "
		       "figure above is the fallback (pread + SSL_write)\n",
		       access("/proc/net/tls_stat", F_OK) != 0
			       ? "the kernel has no tls module: /proc/net/tls_stat is absent"
			       : "the kernel did not take the session");
	}
	printf("\nTLS handshakes/s (TLS 1.3, ECDSA P-256, no resumption, %d threads): %.0f; broker "
	       "CPU %.3f ms per handshake\n", nthreads, hps, hms);
	h_fini();
	return 0;
}
