/*
 * quotas.c - client quotas (KIP-13, KIP-55, KIP-219, KIP-546):
 *  - AlterClientQuotas and DescribeClientQuotas (keys 49 and 48) with raw
 *    requests (librdkafka 2.0.2 has no client quota admin API), v1
 *    (flexible) and v0 (classic): set, remove, validate_only, filters
 *    (EXACT, DEFAULT, SPECIFIED, strict), Kafka's errors for a bad entity,
 *    key or value (INVALID_REQUEST 42) and filter (INVALID_REQUEST,
 *    UNSUPPORTED_VERSION 35), and that quotas survive a restart;
 *  - a librdkafka producer whose client id has producer_byte_rate is held
 *    to that rate within 10 % (over whole periods of Kafka's window, see
 *    RUN_MS);
 *  - a librdkafka consumer with consumer_byte_rate likewise;
 *  - request_percentage (KIP-124): the connection is muted and every
 *    answer with a throttle_time_ms (Metadata, ListOffsets, groups,
 *    DescribeCluster, OffsetDelete, ApiVersions ...) says for how long.
 * The rates print FIGURE lines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define KEY_DESCRIBE 48
#define KEY_ALTER 49

/* ---- classic (v0) encodings, which kmsg.h leaves to the test ---- */

static void kw_str(k_wbuf *w, const char *s)
{
	if (!s) {
		kw_i16(w, -1);
		return;
	}
	kw_i16(w, (int16_t)strlen(s));
	kw_raw(w, s, strlen(s));
}

static int64_t kr_str(k_rbuf *r, char *out, size_t cap, const char *what)
{
	int16_t n = kr_i16(r, what);
	if (n < 0) {
		if (out && cap)
			out[0] = '\0';
		return -1;
	}
	if (!kr_need(r, (size_t)n, what))
		return -1;
	if (out && cap) {
		size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->b + r->pos, k);
		out[k] = '\0';
	}
	r->pos += (size_t)n;
	return n;
}

static double kr_f64(k_rbuf *r, const char *what)
{
	int64_t bits = kr_i64(r, what);
	double d;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

static void kw_f64(k_wbuf *w, double d)
{
	int64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	kw_i64(w, bits);
}

/* Either encoding of a string / array count. */
static void w_str(k_wbuf *w, int flex, const char *s)
{
	if (flex)
		kw_cstr(w, s);
	else
		kw_str(w, s);
}

static void w_count(k_wbuf *w, int flex, int n)
{
	if (flex)
		kw_uvarint(w, (uint64_t)n + 1);
	else
		kw_i32(w, n);
}

static int64_t r_str(k_rbuf *r, int flex, char *out, size_t cap, const char *what)
{
	return flex ? kr_cstr(r, out, cap, what) : kr_str(r, out, cap, what);
}

static int64_t r_count(k_rbuf *r, int flex, const char *what)
{
	return flex ? kr_carray(r, what) : kr_i32(r, what);
}

/* ---- AlterClientQuotas ---- */

typedef struct q_op {
	const char *key;
	double value;
	int remove;
} q_op;

typedef struct q_entry {
	const char *types[3]; /* NULL-terminated when fewer */
	const char *names[3]; /* NULL: the default entity */
	int ntypes;
	q_op ops[4];
	int nops;
} q_entry;

typedef struct q_result {
	int16_t error;
	char msg[512];
	char types[3][32];
	char names[3][256];
	int name_null[3];
	int ntypes;
} q_result;

static int alter(int fd, int ver, const q_entry *e, int n, int validate_only, q_result *out)
{
	int flex = ver >= 1;
	k_wbuf w = { .len = 0 };
	w_count(&w, flex, n);
	for (int i = 0; i < n; i++) {
		w_count(&w, flex, e[i].ntypes);
		for (int t = 0; t < e[i].ntypes; t++) {
			w_str(&w, flex, e[i].types[t]);
			w_str(&w, flex, e[i].names[t]);
			if (flex)
				kw_tags0(&w);
		}
		w_count(&w, flex, e[i].nops);
		for (int k = 0; k < e[i].nops; k++) {
			w_str(&w, flex, e[i].ops[k].key);
			kw_f64(&w, e[i].ops[k].value);
			kw_u8(&w, (uint8_t)e[i].ops[k].remove);
			if (flex)
				kw_tags0(&w);
		}
		if (flex)
			kw_tags0(&w);
	}
	kw_u8(&w, (uint8_t)validate_only);
	if (flex)
		kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = flex ? k_roundtrip(fd, KEY_ALTER, (int16_t)ver, &w, &r)
			      : k_roundtrip_classic(fd, KEY_ALTER, (int16_t)ver, &w, &r);
	kr_i32(&r, "throttle");
	int64_t ne = r_count(&r, flex, "entries");
	ck_assert_int_ge(ne, 0);
	for (int64_t i = 0; i < ne; i++) {
		q_result *q = &out[i];
		memset(q, 0, sizeof(*q));
		q->error = kr_i16(&r, "error");
		r_str(&r, flex, q->msg, sizeof(q->msg), "msg");
		int64_t nt = r_count(&r, flex, "entity");
		ck_assert(nt >= 0 && nt <= 3);
		q->ntypes = (int)nt;
		for (int t = 0; t < nt; t++) {
			r_str(&r, flex, q->types[t], sizeof(q->types[t]), "type");
			q->name_null[t] = r_str(&r, flex, q->names[t], sizeof(q->names[t]), "name") < 0;
			if (flex)
				kr_tags(&r, "entity tags");
		}
		if (flex)
			kr_tags(&r, "entry tags");
	}
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "AlterClientQuotas response");
	free(frame);
	return (int)ne;
}

/* ---- DescribeClientQuotas ---- */

typedef struct q_filter {
	const char *type;
	int match_type;
	const char *match;
} q_filter;

typedef struct q_described {
	int16_t error;
	char msg[512];
	int entries_null; /* the entries array was null */
	int n;
	struct {
		int ntypes;
		char types[3][32];
		char names[3][256];
		int name_null[3];
		int nvalues;
		char keys[6][64];
		double values[6];
	} e[32];
} q_described;

static void describe(int fd, int ver, const q_filter *f, int nf, int strict, q_described *out)
{
	int flex = ver >= 1;
	k_wbuf w = { .len = 0 };
	w_count(&w, flex, nf);
	for (int i = 0; i < nf; i++) {
		w_str(&w, flex, f[i].type);
		kw_u8(&w, (uint8_t)f[i].match_type);
		w_str(&w, flex, f[i].match);
		if (flex)
			kw_tags0(&w);
	}
	kw_u8(&w, (uint8_t)strict);
	if (flex)
		kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = flex ? k_roundtrip(fd, KEY_DESCRIBE, (int16_t)ver, &w, &r)
			      : k_roundtrip_classic(fd, KEY_DESCRIBE, (int16_t)ver, &w, &r);
	memset(out, 0, sizeof(*out));
	kr_i32(&r, "throttle");
	out->error = kr_i16(&r, "error");
	r_str(&r, flex, out->msg, sizeof(out->msg), "msg");
	int64_t ne = r_count(&r, flex, "entries");
	ck_assert(ne <= 32);
	out->entries_null = ne < 0;
	out->n = ne < 0 ? 0 : (int)ne;
	for (int i = 0; i < out->n; i++) {
		int64_t nt = r_count(&r, flex, "entity");
		ck_assert(nt >= 0 && nt <= 3);
		out->e[i].ntypes = (int)nt;
		for (int t = 0; t < nt; t++) {
			r_str(&r, flex, out->e[i].types[t], 32, "type");
			out->e[i].name_null[t] = r_str(&r, flex, out->e[i].names[t], 256, "name") < 0;
			if (flex)
				kr_tags(&r, "entity tags");
		}
		int64_t nv = r_count(&r, flex, "values");
		ck_assert(nv >= 0 && nv <= 6);
		out->e[i].nvalues = (int)nv;
		for (int k = 0; k < nv; k++) {
			r_str(&r, flex, out->e[i].keys[k], 64, "key");
			out->e[i].values[k] = kr_f64(&r, "value");
			if (flex)
				kr_tags(&r, "value tags");
		}
		if (flex)
			kr_tags(&r, "entry tags");
	}
	if (flex)
		kr_tags(&r, "tags");
	kr_done(&r, "DescribeClientQuotas response");
	free(frame);
}

/* The entry of d whose entity is exactly (type=name...), -1 if none;
 * name NULL: the default. */
static int find(const q_described *d, const char *t1, const char *n1, const char *t2,
		const char *n2)
{
	int want = t2 ? 2 : 1;
	for (int i = 0; i < d->n; i++) {
		if (d->e[i].ntypes != want)
			continue;
		int ok = 0;
		for (int t = 0; t < want; t++) {
			const char *type = d->e[i].types[t], *name;
			if (strcmp(type, t1) == 0)
				name = n1;
			else if (t2 && strcmp(type, t2) == 0)
				name = n2;
			else
				break;
			if (name ? !d->e[i].name_null[t] && strcmp(d->e[i].names[t], name) == 0
				 : d->e[i].name_null[t])
				ok++;
		}
		if (ok == want)
			return i;
	}
	return -1;
}

static double value_of(const q_described *d, int i, const char *key)
{
	for (int k = 0; k < d->e[i].nvalues; k++)
		if (strcmp(d->e[i].keys[k], key) == 0)
			return d->e[i].values[k];
	return -1;
}

START_TEST(test_alter_describe)
{
	h_broker *b = c_start_broker(NULL);
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	q_entry e[] = {
		{ { "user" }, { "alice" }, 1,
		  { { "producer_byte_rate", 1024, 0 }, { "request_percentage", 12.5, 0 } }, 2 },
		{ { "client-id" }, { NULL }, 1, { { "consumer_byte_rate", 4096, 0 } }, 1 },
		{ { "user", "client-id" }, { "bob", "app" }, 2,
		  { { "producer_byte_rate", 100.5, 0 } }, 1 },
		{ { "user" }, { "carol" }, 1, { { "bogus", 1, 0 } }, 1 },
		{ { "group" }, { "g" }, 1, { { "producer_byte_rate", 1, 0 } }, 1 },
		{ { "user" }, { "" }, 1, { { "producer_byte_rate", 1, 0 } }, 1 },
		{ { "ip" }, { "not-an-ip" }, 1, { { "connection_creation_rate", 5, 0 } }, 1 },
		{ { "ip", "user" }, { "10.0.0.1", "x" }, 2, { { "producer_byte_rate", 1, 0 } }, 1 },
		{ { "user" }, { "dave" }, 1, { { "producer_byte_rate", 0, 0 } }, 1 },
		{ { "user" }, { "erin" }, 1,
		  { { "producer_byte_rate", 1, 0 }, { "producer_byte_rate", 2, 0 } }, 2 },
		{ { "ip" }, { "10.0.0.1" }, 1, { { "connection_creation_rate", 5, 0 } }, 1 },
	};
	int n = (int)(sizeof(e) / sizeof(e[0]));
	q_result res[16];
	ck_assert_int_eq(alter(fd, 1, e, n, 0, res), n);
	static const struct {
		int16_t err;
		const char *msg;
	} want[] = {
		{ 0, "" },
		{ 0, "" },
		{ 42, "producer_byte_rate cannot be a fractional value." },
		{ 42, "Invalid configuration key bogus" },
		{ 42, "Unhandled client quota entity type: group" },
		{ 42, "Empty user not supported" },
		{ 42, "not-an-ip is not a valid IP or resolvable host." },
		{ 42, "Invalid quota entity combination, IP entity shouldnot be combined with User "
		      "or ClientId" },
		{ 42, "Quota producer_byte_rate must be greater than 0" },
		{ 42, "Ignoring duplicate entity ClientQuotaEntity(entries={user=erin})" },
		{ 0, "" },
	};
	for (int i = 0; i < n; i++) {
		ck_assert_msg(res[i].error == want[i].err && strcmp(res[i].msg, want[i].msg) == 0,
			      "entry %d: %d '%s'", i, res[i].error, res[i].msg);
		ck_assert_int_eq(res[i].ntypes, e[i].ntypes);
		ck_assert_str_eq(res[i].types[0], e[i].types[0]);
	}
	ck_assert(res[1].name_null[0]);

	q_described d;
	describe(fd, 1, NULL, 0, 0, &d);
	ck_assert_int_eq(d.error, 0);
	ck_assert_int_eq(d.n, 3); /* alice, <default> client, the IP */
	int a = find(&d, "user", "alice", NULL, NULL);
	ck_assert_int_ge(a, 0);
	ck_assert_int_eq(d.e[a].nvalues, 2);
	ck_assert(value_of(&d, a, "producer_byte_rate") == 1024);
	ck_assert(value_of(&d, a, "request_percentage") == 12.5);
	int c = find(&d, "client-id", NULL, NULL, NULL);
	ck_assert_int_ge(c, 0);
	ck_assert(value_of(&d, c, "consumer_byte_rate") == 4096);
	/* filters */
	describe(fd, 1, (q_filter[]){ { "user", 0, "alice" } }, 1, 1, &d);
	ck_assert_int_eq(d.n, 1);
	describe(fd, 1, (q_filter[]){ { "user", 1, NULL } }, 1, 0, &d);
	ck_assert_int_eq(d.n, 0);
	describe(fd, 1, (q_filter[]){ { "client-id", 1, NULL } }, 1, 1, &d);
	ck_assert_int_eq(d.n, 1);
	ck_assert(d.e[0].name_null[0]);
	describe(fd, 1, (q_filter[]){ { "user", 2, NULL } }, 1, 0, &d);
	ck_assert_int_eq(d.n, 1);
	describe(fd, 1, (q_filter[]){ { "ip", 2, NULL } }, 1, 1, &d);
	ck_assert_int_eq(d.n, 1);
	ck_assert_str_eq(d.e[0].names[0], "10.0.0.1");
	/* filter errors */
	describe(fd, 1, (q_filter[]){ { "user", 2, NULL }, { "user", 1, NULL } }, 2, 0, &d);
	ck_assert_int_eq(d.error, 42);
	ck_assert_str_eq(d.msg, "Entity type user cannot appear more than once in the filter.");
	describe(fd, 1, (q_filter[]){ { "group", 2, NULL } }, 1, 0, &d);
	ck_assert_int_eq(d.error, 35);
	ck_assert_str_eq(d.msg, "Unsupported entity type group");
	describe(fd, 1, (q_filter[]){ { "user", 0, NULL } }, 1, 0, &d);
	ck_assert_int_eq(d.error, 42);
	describe(fd, 1, (q_filter[]){ { "user", 9, NULL } }, 1, 0, &d);
	ck_assert_str_eq(d.msg, "Unknown match type 9");
	describe(fd, 1, (q_filter[]){ { "ip", 2, NULL }, { "user", 2, NULL } }, 2, 0, &d);
	ck_assert_int_eq(d.error, 42);
	/* an error's entries are null, as Kafka's getErrorResponse sets them
	 * (v1 compact and v0 classic), and an answer's without error are not */
	ck_assert(d.entries_null);
	describe(fd, 0, (q_filter[]){ { "group", 2, NULL } }, 1, 0, &d);
	ck_assert_int_eq(d.error, 35);
	ck_assert(d.entries_null);
	describe(fd, 1, (q_filter[]){ { "user", 0, "nobody" } }, 1, 0, &d);
	ck_assert_int_eq(d.error, 0);
	ck_assert_int_eq(d.n, 0);
	ck_assert(!d.entries_null);

	/* validate_only changes nothing; a removal does */
	q_entry v[] = { { { "user" }, { "alice" }, 1, { { "consumer_byte_rate", 77, 0 } }, 1 } };
	ck_assert_int_eq(alter(fd, 1, v, 1, 1, res), 1);
	ck_assert_int_eq(res[0].error, 0);
	q_entry rm[] = { { { "user" }, { "alice" }, 1,
			   { { "request_percentage", 0, 1 }, { "not_there", 0, 1 } }, 2 } };
	ck_assert_int_eq(alter(fd, 1, rm, 1, 0, res), 1);
	ck_assert_int_eq(res[0].error, 0);
	describe(fd, 1, (q_filter[]){ { "user", 0, "alice" } }, 1, 0, &d);
	ck_assert_int_eq(d.n, 1);
	ck_assert_int_eq(d.e[0].nvalues, 1);
	ck_assert(value_of(&d, 0, "consumer_byte_rate") < 0);

	/* v0 (classic encodings): a (user, client id) pair, odd names */
	q_entry v0[] = { { { "user", "client-id" }, { "User:a b", "app/1" }, 2,
			   { { "producer_byte_rate", 5000, 0 } }, 1 } };
	ck_assert_int_eq(alter(fd, 0, v0, 1, 0, res), 1);
	ck_assert_int_eq(res[0].error, 0);
	describe(fd, 0, (q_filter[]){ { "client-id", 0, "app/1" } }, 1, 0, &d);
	ck_assert_int_eq(d.error, 0);
	ck_assert_int_eq(d.n, 1);
	ck_assert_int_eq(d.e[0].ntypes, 2);
	int pair = find(&d, "user", "User:a b", "client-id", "app/1");
	ck_assert_int_ge(pair, 0);
	ck_assert(value_of(&d, pair, "producer_byte_rate") == 5000);
	close(fd);

	/* everything survives a restart */
	ck_assert_int_eq(h_broker_stop(b, 10000), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	describe(fd, 1, NULL, 0, 0, &d);
	ck_assert_int_eq(d.n, 4);
	a = find(&d, "user", "alice", NULL, NULL);
	ck_assert(a >= 0 && value_of(&d, a, "producer_byte_rate") == 1024);
	pair = find(&d, "user", "User:a b", "client-id", "app/1");
	ck_assert(pair >= 0 && value_of(&d, pair, "producer_byte_rate") == 5000);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* Long.MAX_VALUE, the default of producer_byte_rate and
 * consumer_byte_rate, as a Java client sends it: the double 2^63. Kafka's
 * ZooKeeper mode stores (value + 1e-6).toLong, saturated to
 * 9223372036854775807, and describes it as that long's double (2^63
 * again), also after a restart. INT keys: INT32_MAX is taken, 2^31 is
 * refused. */
START_TEST(test_long_max)
{
	h_broker *b = c_start_broker(NULL);
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	const double two63 = 9223372036854775808.0;
	q_entry e[] = {
		{ { "user" }, { "max" }, 1,
		  { { "producer_byte_rate", two63, 0 }, { "consumer_byte_rate", two63, 0 } }, 2 },
		{ { "ip" }, { "10.0.0.2" }, 1, { { "connection_creation_rate", 2147483647.0, 0 } },
		  1 },
		{ { "ip" }, { "10.0.0.3" }, 1, { { "connection_creation_rate", 2147483648.0, 0 } },
		  1 },
	};
	q_result res[3];
	ck_assert_int_eq(alter(fd, 1, e, 3, 0, res), 3);
	ck_assert_msg(res[0].error == 0, "%d %s", res[0].error, res[0].msg);
	ck_assert_msg(res[1].error == 0, "%d %s", res[1].error, res[1].msg);
	ck_assert_int_eq(res[2].error, 42);
	ck_assert_str_eq(res[2].msg,
			 "Proposed value for connection_creation_rate is too large for an INT.");
	for (int round = 0; round < 2; round++) {
		q_described d;
		describe(fd, 1, NULL, 0, 0, &d);
		ck_assert_int_eq(d.error, 0);
		ck_assert_int_eq(d.n, 2);
		int u = find(&d, "user", "max", NULL, NULL);
		ck_assert_int_ge(u, 0);
		ck_assert_msg(value_of(&d, u, "producer_byte_rate") == two63, "%g",
			      value_of(&d, u, "producer_byte_rate"));
		ck_assert_msg(value_of(&d, u, "consumer_byte_rate") == two63, "%g",
			      value_of(&d, u, "consumer_byte_rate"));
		int ip = find(&d, "ip", "10.0.0.2", NULL, NULL);
		ck_assert_int_ge(ip, 0);
		ck_assert(value_of(&d, ip, "connection_creation_rate") == 2147483647.0);
		close(fd);
		if (round == 0) {
			ck_assert_int_eq(h_broker_stop(b, 10000), 0);
			ck_assert_int_eq(h_broker_restart(b), 0);
			fd = w_connect(b->port, 5000);
			ck_assert_int_ge(fd, 0);
		}
	}
	c_stop_broker(b);
}
END_TEST

/* ---- enforcement ---- */

/*
 * A client that always has data gets, from Kafka's rate, a burst of about
 * (quota.window.num - 1) windows' worth (4 MB here) whenever the rate over
 * the samples that hold the previous burst has fallen to the bound (about
 * every 11 s), and little between bursts: its rate is the bound over whole
 * periods, from the start of one burst to the start of another. A fixed
 * span of time is no such measure: whether the burst due at its end falls
 * just inside it or just outside moves the figure by a whole burst (25 %
 * of 44 s; runs here saw 97.7 % and 100.0 %, the latter with a burst that
 * began in the last second and was a tenth counted). So the bytes are
 * counted in buckets of BUCKET_MS over RUN_MS, a burst starts at a bucket
 * faster than twice the bound after at least QUIET_MS slower than that,
 * and the rate is taken from the first burst's start to the last one's
 * (three or four periods in RUN_MS), with requests and responses of at
 * most 16-32 KiB, so that one does not move the figure. A client never
 * throttled is one burst (or none): then the rate is taken over all of
 * RUN_MS, and is far above the bound.
 */
#define RATE 400000.0      /* bytes/s */
#define RUN_MS 44000       /* how long the client runs and is measured */
#define RECORD 1024
#define BUCKET_MS 100
#define NBUCKETS (RUN_MS / BUCKET_MS)
#define QUIET_MS 2000

/* The rate (B/s) of the bytes counted in b[NBUCKETS] over whole periods
 * (above); *periods is how many (0: none, the rate is over all of RUN_MS),
 * *period_ms the mean length of one. */
static double rate_over_periods(const long long *b, int *periods, double *period_ms)
{
	const long long fast = (long long)(2 * RATE * BUCKET_MS / 1000);
	int first = -1, last = -1, n = 0, quiet = QUIET_MS / BUCKET_MS;
	for (int i = 0; i < NBUCKETS; i++) {
		if (b[i] <= fast) {
			quiet++;
			continue;
		}
		if (quiet >= QUIET_MS / BUCKET_MS) {
			if (first < 0)
				first = i;
			last = i;
			n++;
		}
		quiet = 0;
	}
	long long sum = 0;
	int from = 0, to = NBUCKETS;
	*periods = 0;
	if (n >= 2) {
		*periods = n - 1;
		from = first;
		to = last;
	}
	for (int i = from; i < to; i++)
		sum += b[i];
	*period_ms = *periods ? (double)(to - from) * BUCKET_MS / *periods : 0;
	return (double)sum * 1000.0 / ((double)(to - from) * BUCKET_MS);
}

/* Prints what b[NBUCKETS] holds per second (kB), after what. */
static void print_per_second(const char *what, const long long *b)
{
	fprintf(stderr, "%s per second:", what);
	for (int s = 0; s < RUN_MS / 1000; s++) {
		long long sum = 0;
		for (int i = s * (1000 / BUCKET_MS); i < (s + 1) * (1000 / BUCKET_MS); i++)
			sum += b[i];
		fprintf(stderr, " %lld", sum / 1000);
	}
	fprintf(stderr, " (kB)\n");
}

static void set_client_quota(const h_broker *b, const char *client, const char *key, double v)
{
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	q_entry e[] = { { { "client-id" }, { client }, 1, { { key, v, 0 } }, 1 } };
	q_result res[1];
	ck_assert_int_eq(alter(fd, 1, e, 1, 0, res), 1);
	ck_assert_msg(res[0].error == 0, "%s", res[0].msg);
	close(fd);
}

typedef struct acked {
	long long t0;
	long long bytes;  /* acked within RUN_MS of t0 */
	long long total;  /* acked in all */
	long long per_bucket[NBUCKETS]; /* acked within RUN_MS, by BUCKET_MS */
	int failed;
} acked;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	acked *a = opaque;
	if (m->err) {
		a->failed++;
		return;
	}
	a->total += (long long)m->len;
	long long at = h_now_ms() - a->t0;
	if (at < RUN_MS) {
		a->bytes += (long long)m->len;
		a->per_bucket[at / BUCKET_MS] += (long long)m->len;
	}
}

START_TEST(test_producer_throttled)
{
	h_broker *b = c_start_broker(NULL);
	set_client_quota(b, "quota-producer", "producer_byte_rate", RATE);
	rd_kafka_conf_t *conf = c_conf(b);
	c_set(conf, "client.id", "quota-producer");
	c_set(conf, "linger.ms", "5");
	c_set(conf, "batch.size", "16384");
	c_set(conf, "acks", "1");
	acked a = { 0 };
	rd_kafka_conf_set_opaque(conf, &a);
	rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	char payload[RECORD];
	memset(payload, 'q', sizeof(payload));
	a.t0 = h_now_ms();
	while (h_now_ms() - a.t0 < RUN_MS) {
		rd_kafka_resp_err_t err = rd_kafka_producev(
			rk, RD_KAFKA_V_TOPIC("quota-p"), RD_KAFKA_V_VALUE(payload, sizeof(payload)),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
		if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 10);
		else
			ck_assert_msg(err == 0, "producev: %s", rd_kafka_err2str(err));
		rd_kafka_poll(rk, 0);
	}
	/* what was queued and not yet sent is not measured */
	rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
	rd_kafka_flush(rk, 30000);
	rd_kafka_destroy(rk);
	print_per_second("acked", a.per_bucket);
	int periods;
	double period_ms;
	double rate = rate_over_periods(a.per_bucket, &periods, &period_ms);
	printf("FIGURE quota producer: producer_byte_rate %.0f B/s, measured %.0f B/s of record "
	       "values acked over %d period(s) of %.0f ms (%.1f %%; %.0f B/s over all %d s); %lld "
	       "bytes acked in all, %d purged unsent\n",
	       RATE, rate, periods, period_ms, 100.0 * rate / RATE,
	       (double)a.bytes * 1000.0 / RUN_MS, RUN_MS / 1000, a.total, a.failed);
	ck_assert_msg(rate > 0.9 * RATE && rate < 1.1 * RATE, "rate %.0f B/s, quota %.0f B/s", rate,
		      RATE);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_consumer_throttled)
{
	h_broker *b = c_start_broker(NULL);
	/* data first, by a producer without a quota */
	int n = (int)(RATE * (RUN_MS / 1000.0 + 20) / RECORD);
	/* small batches: a fetch holds at least one whole batch (KIP-74), and
	 * a throttled fetch's batch is not sent */
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "20", "batch.size",
							     "16384", NULL });
	char payload[RECORD];
	memset(payload, 'c', sizeof(payload));
	for (int i = 0; i < n; i++) {
		c_msg m = { .topic = "quota-c", .partition = 0, .value = payload,
			    .value_len = sizeof(payload) };
		c_produce(p, &m, NULL);
	}
	c_flush(p, 60000);
	rd_kafka_destroy(p);
	set_client_quota(b, "quota-consumer", "consumer_byte_rate", RATE);

	rd_kafka_t *rk = c_consumer(b, (const char *const[]){ "client.id", "quota-consumer",
							      "fetch.message.max.bytes", "32768",
							      NULL });
	rd_kafka_topic_t *t = rd_kafka_topic_new(rk, "quota-c", NULL);
	ck_assert_int_eq(rd_kafka_consume_start(t, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
	long long per_bucket[NBUCKETS] = { 0 };
	long long t0 = h_now_ms(), bytes = 0;
	while (h_now_ms() - t0 < RUN_MS) {
		rd_kafka_message_t *m = rd_kafka_consume(t, 0, 200);
		if (!m)
			continue;
		long long at = h_now_ms() - t0;
		if (!m->err && at < RUN_MS) {
			bytes += (long long)m->len;
			per_bucket[at / BUCKET_MS] += (long long)m->len;
		}
		rd_kafka_message_destroy(m);
	}
	print_per_second("consumed", per_bucket);
	rd_kafka_consume_stop(t, 0);
	rd_kafka_topic_destroy(t);
	rd_kafka_destroy(rk);
	int periods;
	double period_ms;
	double rate = rate_over_periods(per_bucket, &periods, &period_ms);
	printf("FIGURE quota consumer: consumer_byte_rate %.0f B/s, measured %.0f B/s of record "
	       "values consumed over %d period(s) of %.0f ms (%.1f %%; %.0f B/s over all %d s) of "
	       "%lld produced\n",
	       RATE, rate, periods, period_ms, 100.0 * rate / RATE, (double)bytes * 1000.0 / RUN_MS,
	       RUN_MS / 1000, (long long)n * RECORD);
	ck_assert_msg(rate > 0.9 * RATE && rate < 1.1 * RATE, "rate %.0f B/s, quota %.0f B/s", rate,
		      RATE);
	c_stop_broker(b);
}
END_TEST

/* request_percentage (KIP-124): a client over its share of the request
 * threads is muted (for at most one window, as Kafka bounds it), whatever
 * the API (ApiVersions v0 too, whose answer has no throttle field), and
 * every answer that has a throttle_time_ms carries the throttle time
 * (KIP-219). */
START_TEST(test_request_quota)
{
	h_broker *b = c_start_broker(NULL);
	int fd = w_connect(b->port, 5000);
	ck_assert_int_ge(fd, 0);
	q_entry e[] = { { { "client-id" }, { NULL }, 1,
			  { { "request_percentage", 0.00001, 0 } }, 1 } };
	q_result res[1];
	ck_assert_int_eq(alter(fd, 1, e, 1, 0, res), 1);
	ck_assert_int_eq(res[0].error, 0);
	/* the quota counts from the next request on */
	long long worst = 0;
	for (int i = 0; i < 3; i++) {
		long long t0 = h_now_ms();
		ck_assert_int_eq(w_api_versions_v0(fd, 100 + i, h_scaled_ms(10000)), 0);
		long long dt = h_now_ms() - t0;
		if (dt > worst)
			worst = dt;
	}
	printf("request quota: the slowest of three ApiVersions answered after %lld ms\n", worst);
	ck_assert_msg(worst >= 800 && worst <= 3000, "%lld ms", worst);
	/* a quota API's answer says how long */
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 1); /* no components */
	kw_u8(&w, 0);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, KEY_DESCRIBE, 1, &w, &r);
	int32_t throttle = kr_i32(&r, "throttle");
	free(frame);
	ck_assert_msg(throttle > 0 && throttle <= 1000, "throttle_time_ms %d", (int)throttle);

	/* Every other answer with a throttle_time_ms carries it too (Kafka's
	 * sendResponseMaybeThrottle), classic and flexible, the field first
	 * or after an error code (OffsetDelete) or after the key list
	 * (ApiVersions); and the connection is muted that long: the next
	 * answer comes no sooner. */
	struct {
		const char *name;
		int16_t key, ver;
		int classic;
	} apis[] = {
		{ "Metadata v12", 3, 12, 0 },
		{ "Metadata v4", 3, 4, 1 },
		{ "ListOffsets v7", 2, 7, 0 },
		{ "ListGroups v4", 16, 4, 0 },
		{ "DescribeGroups v5", 15, 5, 0 },
		{ "DescribeCluster v0", 60, 0, 0 },
		{ "OffsetDelete v0", 47, 0, 1 },
		{ "ApiVersions v2", 18, 2, 1 },
	};
	int32_t last = throttle;
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		k_wbuf q = { .len = 0 };
		switch (apis[i].key) {
		case 3:
			if (apis[i].classic) {
				kw_i32(&q, 0); /* no topics */
				kw_u8(&q, 0);  /* no auto-creation */
			} else {
				kw_uvarint(&q, 1);
				kw_u8(&q, 0);
				kw_u8(&q, 0);
				kw_tags0(&q);
			}
			break;
		case 2:
			kw_i32(&q, -1); /* replica id */
			kw_u8(&q, 0);   /* isolation level */
			kw_uvarint(&q, 1);
			kw_tags0(&q);
			break;
		case 16:
			kw_uvarint(&q, 1); /* no state filter */
			kw_tags0(&q);
			break;
		case 15:
			kw_uvarint(&q, 2);
			kw_cstr(&q, "no-such-group");
			kw_u8(&q, 0);
			kw_tags0(&q);
			break;
		case 60:
			kw_u8(&q, 0);
			kw_tags0(&q);
			break;
		case 47:
			kw_str(&q, "no-such-group");
			kw_i32(&q, 0);
			break;
		default:
			break; /* ApiVersions v2: an empty body */
		}
		long long t0 = h_now_ms();
		uint8_t *f = apis[i].classic ? k_roundtrip_classic(fd, apis[i].key, apis[i].ver, &q, &r)
					     : k_roundtrip(fd, apis[i].key, apis[i].ver, &q, &r);
		long long waited = h_now_ms() - t0;
		if (apis[i].key == 47) {
			kr_i16(&r, "error code");
		} else if (apis[i].key == 18) {
			ck_assert_int_eq(kr_i16(&r, "error code"), 0);
			int32_t n = kr_i32(&r, "api keys");
			ck_assert_int_gt(n, 10);
			for (int32_t k = 0; k < n; k++)
				kr_i32(&r, "key, min"), kr_i16(&r, "max");
		}
		int32_t t = kr_i32(&r, "throttle");
		free(f);
		printf("request quota: %s answered after %lld ms, throttle_time_ms %d\n",
		       apis[i].name, waited, (int)t);
		ck_assert_msg(t > 0 && t <= 1000, "%s: throttle_time_ms %d", apis[i].name, (int)t);
		/* muted for the previous answer's throttle time (it began before
		 * that answer was sent) */
		ck_assert_msg(waited >= last - 200 && waited <= last + h_scaled_ms(1500),
			      "%s answered after %lld ms, the previous throttle %d ms",
			      apis[i].name, waited, (int)last);
		last = t;
	}
	close(fd);
	c_stop_broker(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("quotas");
	TCase *tc = tcase_create("quotas");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_alter_describe);
	tcase_add_test(tc, test_request_quota);
	tcase_add_test(tc, test_producer_throttled);
	tcase_add_test(tc, test_consumer_throttled);
	suite_add_tcase(s, tc);
	/* quick cases of their own (CK_RUN_CASE=limits runs them alone) */
	TCase *lim = tcase_create("limits");
	tcase_set_timeout(lim, 120);
	tcase_add_test(lim, test_long_max);
	suite_add_tcase(s, lim);
	return s;
}

int main(void)
{
	return c_run_suite(suite());
}
