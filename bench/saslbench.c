/*
 * saslbench.c - issue 16's SASL figure: authentications per second that one
 * broker completes on a SASL_PLAINTEXT listener, and the broker's CPU time
 * per authentication (utime + stime of its process over the run, from
 * /proc/PID/stat), for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (4096
 * iterations, the SCRAM users made with AlterUserScramCredentials).
 *
 * Each authentication is a new TCP connection: SaslHandshake v1, then one
 * SaslAuthenticate (PLAIN) or two (SCRAM: client-first, client-final with
 * the proof; the server's signature is checked), then close. c client
 * threads run side by side. The client derives the SCRAM SaltedPassword
 * once per user (a real client does it per login; that is the client's
 * cost, not the broker's, and would dominate here).
 *
 * The same again on a SASL_SSL listener, where each authentication starts
 * with a full TLS handshake (no session resumption; certificates made with
 * the openssl command, bench/certs.h): issue 16's "connections per second
 * that complete a TLS handshake and a SCRAM authentication", beside the
 * SASL_PLAINTEXT figures of the same run.
 *
 * Usage: saslbench [-n authentications per mechanism] [-c client threads]
 * The broker binary is $SAMSA_BIN (`make bench-sasl` sets it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/certs.h"
#include "compat-tests/harness.h"
#include "compat-tests/wire.h"

#define WAIT_MS 10000

static int total = 5000, nthreads = 2;
static h_broker *broker;
static SSL_CTX *tls_ctx; /* over SASL_SSL: the client's TLS context, else NULL */
static int sasl_port;    /* the SASL listener's port */

/* A client connection: the socket, and its TLS session with -t. */
typedef struct bconn {
	int fd;
	SSL *ssl;
} bconn;

static void link_close(bconn *l)
{
	if (l->ssl)
		SSL_free(l->ssl);
	ERR_clear_error();
	if (l->fd >= 0)
		close(l->fd);
}

/* Connect (and with -t complete the TLS handshake, blocking). */
static int link_open(bconn *l)
{
	l->ssl = NULL;
	l->fd = w_connect(sasl_port, WAIT_MS);
	if (l->fd < 0 || !tls_ctx)
		return l->fd < 0 ? -1 : 0;
	fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) & ~O_NONBLOCK);
	if (!(l->ssl = SSL_new(tls_ctx)) || SSL_set_fd(l->ssl, l->fd) != 1 || SSL_connect(l->ssl) != 1) {
		link_close(l);
		return -1;
	}
	return 0;
}

/* All n bytes over TLS, written or read. */
static int tls_all(SSL *ssl, uint8_t *p, size_t n, bool write)
{
	while (n > 0) {
		int k = write ? SSL_write(ssl, p, (int)n) : SSL_read(ssl, p, (int)n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One frame (after its size) over TLS, malloc'ed into *body. */
static int tls_recv_frame(SSL *ssl, uint8_t **body, int32_t *len)
{
	uint8_t sz[4];
	if (tls_all(ssl, sz, 4, false) < 0)
		return -1;
	int32_t n = w_get32(sz);
	if (n < 4 || n > (1 << 20) || !(*body = malloc((size_t)n)))
		return -1;
	if (tls_all(ssl, *body, (size_t)n, false) < 0) {
		free(*body);
		*body = NULL;
		return -1;
	}
	*len = n;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The broker's user + system CPU seconds. */
static double broker_cpu(void)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)broker->pid);
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

/* One request and its answer (body after the correlation id); NULL when
 * the broker closed or failed. */
static uint8_t *call(bconn *l, int16_t key, int16_t ver, const void *body, size_t len, int32_t *rlen)
{
	uint8_t req[2048], *resp = NULL;
	int n = w_build_request(req, sizeof(req), key, ver, key, "saslbench", body, len);
	if (n < 0)
		return NULL;
	if (l->ssl)
		return tls_all(l->ssl, req, (size_t)n, true) == 0 &&
				       tls_recv_frame(l->ssl, &resp, rlen) == 0
			       ? resp
			       : NULL;
	if (w_send_all(l->fd, req, (size_t)n, WAIT_MS) != WIRE_OK ||
	    w_recv_frame(l->fd, &resp, rlen, 1 << 20, WAIT_MS) != WIRE_OK)
		return NULL;
	return resp;
}

static int handshake(bconn *fd, const char *mech)
{
	uint8_t body[64];
	size_t ml = strlen(mech);
	w_put16(body, (int16_t)ml);
	memcpy(body + 2, mech, ml);
	int32_t rlen;
	uint8_t *r = call(fd, 17, 1, body, ml + 2, &rlen);
	int ok = r && rlen >= 6 && w_get16(r + 4) == 0;
	free(r);
	return ok ? 0 : -1;
}

/* SaslAuthenticate v1: the server's token into tok (*toklen), -1 on error. */
static int authenticate(bconn *fd, const void *t, size_t len, char *tok, size_t cap, size_t *toklen)
{
	uint8_t body[1200];
	w_put32(body, (int32_t)len);
	memcpy(body + 4, t, len);
	int32_t rlen;
	uint8_t *r = call(fd, 36, 1, body, len + 4, &rlen);
	if (!r || rlen < 8 || w_get16(r + 4) != 0) {
		free(r);
		return -1;
	}
	int16_t ml = w_get16(r + 6);
	size_t off = 8 + (ml > 0 ? (size_t)ml : 0);
	int32_t tl = (int32_t)off + 4 <= rlen ? w_get32(r + off) : -1;
	if (tl < 0 || (size_t)tl >= cap || off + 4 + (size_t)tl > (size_t)rlen) {
		free(r);
		return -1;
	}
	memcpy(tok, r + off + 4, (size_t)tl);
	tok[tl] = '\0';
	*toklen = (size_t)tl;
	free(r);
	return 0;
}

typedef struct mech {
	const char *name;
	const EVP_MD *md;
	int kl;
	uint8_t salted[64]; /* SCRAM: derived once */
	bool have_salted;
} mech;

static int login(mech *m)
{
	bconn l, *fd = &l;
	if (link_open(&l) < 0)
		return -1;
	int rc = -1;
	char tok[1100];
	size_t tl;
	if (handshake(fd, m->name) < 0)
		goto out;
	if (!m->md) {
		rc = authenticate(fd, "\0bench\0bench-secret", 19, tok, sizeof(tok), &tl);
		goto out;
	}
	uint8_t rnd[18];
	char nonce[32], first[128];
	RAND_bytes(rnd, sizeof(rnd));
	EVP_EncodeBlock((uint8_t *)nonce, rnd, sizeof(rnd)); /* 24 chars, no '=' */
	for (char *c = nonce; *c; c++)
		if (*c == ',')
			*c = '_';
	snprintf(first, sizeof(first), "n,,n=bench,r=%s", nonce);
	if (authenticate(fd, first, strlen(first), tok, sizeof(tok), &tl) < 0)
		goto out;
	char sf[1100];
	snprintf(sf, sizeof(sf), "%s", tok);
	char *s = strstr(sf, ",s=");
	if (!s || strncmp(sf, "r=", 2) != 0)
		goto out;
	uint8_t ck[64], sk[64], stored[64], sig[64], ssig[64], proof[64];
	unsigned int ol;
	HMAC(m->md, m->salted, m->kl, (const uint8_t *)"Client Key", 10, ck, &ol);
	HMAC(m->md, m->salted, m->kl, (const uint8_t *)"Server Key", 10, sk, &ol);
	EVP_Digest(ck, (size_t)m->kl, stored, &ol, m->md, NULL);
	char wp[1200], auth[2600], p64[100], final[1400], s64[100];
	snprintf(wp, sizeof(wp), "c=biws,r=%.*s", (int)(s - sf - 2), sf + 2);
	snprintf(auth, sizeof(auth), "%s,%s,%s", first + 3, sf, wp);
	HMAC(m->md, stored, m->kl, (const uint8_t *)auth, strlen(auth), sig, &ol);
	for (int i = 0; i < m->kl; i++)
		proof[i] = ck[i] ^ sig[i];
	EVP_EncodeBlock((uint8_t *)p64, proof, m->kl);
	snprintf(final, sizeof(final), "%s,p=%s", wp, p64);
	if (authenticate(fd, final, strlen(final), tok, sizeof(tok), &tl) < 0)
		goto out;
	HMAC(m->md, sk, m->kl, (const uint8_t *)auth, strlen(auth), ssig, &ol);
	EVP_EncodeBlock((uint8_t *)s64, ssig, m->kl);
	rc = strncmp(tok, "v=", 2) == 0 && strcmp(tok + 2, s64) == 0 ? 0 : -1;
out:
	link_close(&l);
	return rc;
}

static mech *current;
static atomic_int next_i, failures;

static void *worker(void *arg)
{
	(void)arg;
	while (atomic_fetch_add(&next_i, 1) < total)
		if (login(current) < 0)
			atomic_fetch_add(&failures, 1);
	return NULL;
}

/* AlterUserScramCredentials v0 for user "bench", both mechanisms, over a
 * PLAIN-authenticated connection; the salted passwords kept for login. */
static int make_user(mech *m256, mech *m512)
{
	bconn l, *fd = &l;
	char tok[100];
	size_t tl;
	if (link_open(&l) < 0)
		return -1;
	if (handshake(fd, "PLAIN") < 0 ||
	    authenticate(fd, "\0bench\0bench-secret", 19, tok, sizeof(tok), &tl) < 0) {
		link_close(&l);
		return -1;
	}
	uint8_t body[512];
	size_t o = 0;
	body[o++] = 0; /* header tags */
	body[o++] = 1; /* no deletions */
	body[o++] = 3; /* two upsertions */
	mech *ms[2] = {m256, m512};
	for (int k = 0; k < 2; k++) {
		uint8_t salt[16];
		RAND_bytes(salt, sizeof(salt));
		PKCS5_PBKDF2_HMAC("bench-secret", 12, salt, sizeof(salt), 4096, ms[k]->md, ms[k]->kl,
				  ms[k]->salted);
		ms[k]->have_salted = true;
		body[o++] = 6;
		memcpy(body + o, "bench", 5);
		o += 5;
		body[o++] = (uint8_t)(k + 1);
		w_put32(body + o, 4096);
		o += 4;
		body[o++] = 17;
		memcpy(body + o, salt, 16);
		o += 16;
		body[o++] = (uint8_t)(ms[k]->kl + 1);
		memcpy(body + o, ms[k]->salted, (size_t)ms[k]->kl);
		o += (size_t)ms[k]->kl;
		body[o++] = 0;
	}
	body[o++] = 0;
	int32_t rlen;
	uint8_t *r = call(fd, 51, 0, body, o, &rlen);
	/* corr, tags, throttle, results: 3 (two... one user) -> user "bench", error */
	int ok = r && rlen >= 4 + 1 + 4 + 1 + 6 + 2 && w_get16(r + 4 + 1 + 4 + 1 + 6) == 0;
	free(r);
	link_close(&l);
	return ok ? 0 : -1;
}

/* One broker on a SASL_PLAINTEXT (tls false) or SASL_SSL listener: each
 * mechanism's figures printed. Returns 0, or 1 on a failure. */
static int run(bool tls, const char *certs)
{
	char ks[1200], ca[1200];
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s/keystore.pem", certs);
	snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
	tls_ctx = NULL;
	if (tls) {
		tls_ctx = SSL_CTX_new(TLS_client_method());
		if (!tls_ctx || SSL_CTX_load_verify_locations(tls_ctx, ca, NULL) != 1)
			return 1;
		SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_session_cache_mode(tls_ctx, SSL_SESS_CACHE_OFF); /* a full handshake each */
	}
	/* The SASL listener: the harness's own (it checks readiness with
	 * ApiVersions, served before authentication) or, for TLS, a second
	 * one beside a PLAINTEXT listener the harness checks. */
	const char *l = tls ? "sasl_ssl" : "plaintext";
	char lst[160], jaas[3][400];
	snprintf(lst, sizeof(lst), "listeners=PLAINTEXT://127.0.0.1:${PORT}");
	if (tls) {
		sasl_port = h_free_port();
		snprintf(lst, sizeof(lst),
			 "listeners=PLAINTEXT://127.0.0.1:${PORT},SASL_SSL://127.0.0.1:%d", sasl_port);
	}
	snprintf(jaas[0], sizeof(jaas[0]), "listener.name.%s.plain.sasl.jaas.config=org.apache.kafka."
		 "common.security.plain.PlainLoginModule required username=\"bench\" "
		 "password=\"bench-secret\" user_bench=\"bench-secret\";", l);
	for (int i = 1; i < 3; i++)
		snprintf(jaas[i], sizeof(jaas[i]), "listener.name.%s.scram-sha-%s.sasl.jaas.config="
			 "org.apache.kafka.common.security.scram.ScramLoginModule required;", l,
			 i == 1 ? "256" : "512");
	broker = h_broker_new((const char *const[]){
	    lst, tls ? "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL"
		     : "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT",
	    "ssl.keystore.type=PEM", ks,
	    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
	    "sasl.mechanism.inter.broker.protocol=PLAIN",
	    jaas[0], jaas[1], jaas[2], NULL});
	if (!broker || h_broker_start(broker) < 0) {
		fprintf(stderr, "saslbench: the broker did not start\n");
		return 1;
	}
	if (!tls)
		sasl_port = broker->port;
	mech ms[3] = {{"PLAIN", NULL, 0, {0}, false},
		      {"SCRAM-SHA-256", EVP_sha256(), 32, {0}, false},
		      {"SCRAM-SHA-512", EVP_sha512(), 64, {0}, false}};
	int status = 0;
	if (make_user(&ms[1], &ms[2]) < 0) {
		fprintf(stderr, "saslbench: AlterUserScramCredentials failed\n");
		status = 1;
	}
	printf("%s%s:\n", tls ? "SASL_SSL" : "SASL_PLAINTEXT",
	       tls ? " (a full TLS handshake, then SASL, on each new connection)" : "");
	for (int k = 0; k < 3 && status == 0; k++) {
		current = &ms[k];
		atomic_store(&next_i, 0);
		atomic_store(&failures, 0);
		double cpu0 = broker_cpu(), t0 = now_s();
		pthread_t th[64];
		for (int i = 0; i < nthreads; i++)
			pthread_create(&th[i], NULL, worker, NULL);
		for (int i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
		double secs = now_s() - t0, cpu = broker_cpu() - cpu0;
		printf("  %-14s %8.0f connections/s   broker CPU %6.1f us each   failures %d\n",
		       ms[k].name, total / secs, cpu * 1e6 / total, atomic_load(&failures));
		if (atomic_load(&failures))
			status = 1;
	}
	if (h_broker_stop(broker, 30000) != 0)
		status = 1;
	h_broker_free(broker);
	broker = NULL;
	if (tls_ctx)
		SSL_CTX_free(tls_ctx);
	tls_ctx = NULL;
	return status;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "n:c:")) != -1) {
		if (opt == 'n')
			total = atoi(optarg);
		else if (opt == 'c')
			nthreads = atoi(optarg);
		else {
			fprintf(stderr, "usage: saslbench [-n authentications] [-c client threads]\n");
			return 2;
		}
	}
	if (total < 1 || nthreads < 1 || nthreads > 64 || h_init() < 0)
		return 2;
	char certs[1024];
	snprintf(certs, sizeof(certs), "%s/certs", h_base_dir());
	if (bench_make_certs(certs) < 0)
		return 1;
	printf("saslbench: %d new connections per mechanism, each authenticated once, %d client "
	       "threads, one broker on loopback\n", total, nthreads);
	int status = run(false, certs);
	if (status == 0)
		status = run(true, certs);
	h_fini();
	return status;
}
