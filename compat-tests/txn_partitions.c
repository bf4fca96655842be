/*
 * txn_partitions.c - the partition side of transactions (KIP-98) on raw
 * sockets: transactional batches in Produce, the last stable offset and
 * the aborted transactions list in Fetch, ListOffsets with
 * isolation_level 1, WriteTxnMarkers v1/v2 and DescribeProducers v0,
 * without the transaction coordinator: the test plays the coordinator
 * (InitProducerId with a null transactional id gives the producer ids; the
 * markers are sent by hand).
 *
 *  - lso_and_markers: plain records, then an open transaction: Fetch
 *    read_uncommitted returns everything with LSO = the transaction's first
 *    offset and a null aborted list; read_committed stops at the LSO with
 *    an empty list; ListOffsets LATEST/timestamps/max timestamp respect the
 *    LSO with isolation 1 only; DescribeProducers shows the open
 *    transaction; a COMMIT marker moves the HW and the LSO to the log end;
 *    an aborted transaction then shows in the aborted list of a
 *    read_committed fetch that covers it, and not in one from past its
 *    marker; finally a read_committed librdkafka consumer sees exactly the
 *    committed and plain records and a read_uncommitted one all of them.
 *  - delayed_fetch: a read_committed long poll waiting at the LSO is not
 *    completed by transactional appends (they are not readable yet) but is
 *    by the marker that commits them, well before its MaxWaitMs.
 *  - marker_errors: INVALID_PRODUCER_EPOCH (an older epoch; and with
 *    transaction version 2 the same epoch while a transaction is open),
 *    TRANSACTION_COORDINATOR_FENCED, UNKNOWN_TOPIC_OR_PARTITION (topic,
 *    partition), several markers in one request, DescribeProducers errors.
 *  - produce_rules: a transactional batch without a transactional id is
 *    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a plain batch from a producer
 *    with an open transaction is INVALID_TXN_STATE; a plain idempotent
 *    batch in a request with a transactional id is appended.
 * Every response is parsed to its last byte.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "txp"
#define TXN_ID "txn-partitions"
/* Record timestamps start here: now, at the broker's start (far older
 * ones would make the markers, stamped with the broker's clock, roll a new
 * segment by segment.ms). */
static int64_t TS0;

/* Kafka error codes used here. */
enum {
	E_NONE = 0,
	E_UNKNOWN_TOPIC_OR_PARTITION = 3,
	E_INVALID_PRODUCER_EPOCH = 47,
	E_INVALID_TXN_STATE = 48,
	E_TOPIC_AUTHORIZATION_FAILED = 29,
	E_TRANSACTION_COORDINATOR_FENCED = 52,
	E_INVALID_TOPIC_EXCEPTION = 17,
	E_INVALID_PRODUCER_ID_MAPPING = 49,
	E_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
};

/* ---- record batches ---- */

static void put64(uint8_t *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

static int64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

/* A batch of n records "rec-<first+i>" (timestamps TS0 + first * 1000 +
 * 10 * i) from producer pid/epoch at base sequence seq, transactional or
 * not. */
static void build_batch(k_wbuf *w, int n, int first, int64_t pid, int16_t epoch, int32_t seq,
			bool transactional)
{
	w->len = 0;
	k_build_batch(w, n, first, TS0 + (int64_t)first * 1000, 0);
	w_put16(w->b + 21, transactional ? 0x10 : 0);
	put64(w->b + 43, pid);
	w_put16(w->b + 51, epoch);
	w_put32(w->b + 53, seq);
	w_put32(w->b + 17, (int32_t)k_crc32c(w->b + 21, w->len - 21));
}

/* ---- requests ---- */

/* InitProducerId v4 without a transactional id: a new producer id (epoch 0). */
static int64_t init_pid(int fd)
{
	k_init_pid r;
	int16_t err = k_init_producer_id(fd, 4, NULL, 60000, -1, -1, &r);
	ck_assert_msg(err == 0 && r.producer_id >= 0 && r.producer_epoch == 0,
		      "InitProducerId: error %d id %lld epoch %d", err, (long long)r.producer_id,
		      r.producer_epoch);
	return r.producer_id;
}

/* Produce v9 of one batch to topic with transactional id txn (NULL =
 * null), acks -1. Returns the partition's error; *base gets the base
 * offset. */
static int16_t produce_to(int fd, const char *txn, const char *topic, int32_t partition,
			  const k_wbuf *batch, int64_t *base)
{
	static k_wbuf body;
	body.len = 0;
	kw_cstr(&body, txn);
	kw_i16(&body, -1);
	kw_i32(&body, 10000);
	kw_uvarint(&body, 2);
	kw_cstr(&body, topic);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_uvarint(&body, batch->len + 1);
	kw_raw(&body, batch->b, batch->len);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 0, 9, &body, &r);
	int64_t b;
	int16_t err = k_produce_parse(&r, &b);
	free(resp);
	if (base)
		*base = b;
	return err;
}

/* produce_to TOPIC. */
static int16_t produce(int fd, const char *txn, int32_t partition, const k_wbuf *batch, int64_t *base)
{
	return produce_to(fd, txn, TOPIC, partition, batch, base);
}

typedef struct fbatch {
	int64_t base, last;
	int16_t attributes;
	int64_t pid;
} fbatch;

typedef struct fetch_res {
	int16_t err;
	int64_t hw, lso, log_start;
	int64_t naborted; /* -1: null */
	int64_t ab_pid[16], ab_first[16];
	int nbatches;
	fbatch batches[64];
} fetch_res;

static void fetch_body_max(k_wbuf *body, int32_t partition, int64_t offset, int8_t isolation,
			   int32_t max_wait_ms, int32_t min_bytes, int32_t partition_max_bytes)
{
	body->len = 0;
	kw_i32(body, -1); /* replica id */
	kw_i32(body, max_wait_ms);
	kw_i32(body, min_bytes);
	kw_i32(body, 16 << 20);
	kw_u8(body, (uint8_t)isolation);
	kw_i32(body, 0);  /* session id */
	kw_i32(body, -1); /* session epoch */
	kw_uvarint(body, 2);
	kw_cstr(body, TOPIC);
	kw_uvarint(body, 2);
	kw_i32(body, partition);
	kw_i32(body, -1); /* current leader epoch */
	kw_i64(body, offset);
	kw_i32(body, -1); /* last fetched epoch */
	kw_i64(body, -1); /* log start offset */
	kw_i32(body, partition_max_bytes);
	kw_tags0(body);
	kw_tags0(body);
	kw_uvarint(body, 1); /* forgotten topics */
	kw_cstr(body, "");
	kw_tags0(body);
}

static void fetch_body(k_wbuf *body, int32_t partition, int64_t offset, int8_t isolation,
		       int32_t max_wait_ms, int32_t min_bytes)
{
	fetch_body_max(body, partition, offset, isolation, max_wait_ms, min_bytes, 8 << 20);
}

/* Parse a Fetch v12 response of one partition into f. */
static void fetch_parse(k_rbuf *r, fetch_res *f)
{
	memset(f, 0, sizeof(*f));
	kr_i32(r, "throttle");
	int16_t top = kr_i16(r, "error code");
	kr_i32(r, "session id");
	ck_assert_int_eq(kr_carray(r, "responses"), 1);
	kr_cstr(r, NULL, 0, "topic");
	ck_assert_int_eq(kr_carray(r, "partitions"), 1);
	kr_i32(r, "partition index");
	int16_t err = kr_i16(r, "error code");
	f->err = top ? top : err;
	f->hw = kr_i64(r, "high watermark");
	f->lso = kr_i64(r, "last stable offset");
	f->log_start = kr_i64(r, "log start offset");
	f->naborted = kr_carray(r, "aborted transactions");
	ck_assert_int_le(f->naborted, 16);
	for (int64_t i = 0; i < f->naborted; i++) {
		f->ab_pid[i] = kr_i64(r, "producer id");
		f->ab_first[i] = kr_i64(r, "first offset");
		kr_tags(r, "aborted tags");
	}
	kr_i32(r, "preferred read replica");
	int64_t n = (int64_t)kr_uvarint(r, "records") - 1;
	if (n > 0 && kr_need(r, (size_t)n, "records")) {
		const uint8_t *p = r->b + r->pos;
		int64_t pos = 0;
		while (pos + 61 <= n) {
			ck_assert_int_lt(f->nbatches, 64);
			fbatch *b = &f->batches[f->nbatches++];
			int32_t blen = w_get32(p + pos + 8);
			b->base = get64(p + pos);
			b->last = b->base + w_get32(p + pos + 23);
			b->attributes = w_get16(p + pos + 21);
			b->pid = get64(p + pos + 43);
			pos += 12 + blen;
		}
		ck_assert_msg(pos == n, "Fetch: records end inside a batch (%lld of %lld)",
			      (long long)pos, (long long)n);
		r->pos += (size_t)n;
	}
	kr_tags(r, "partition tags");
	kr_tags(r, "topic tags");
	kr_tags(r, "response tags");
	kr_done(r, "Fetch v12");
}

/* A fetch of at most max_bytes of the partition (the first batch always). */
static void fetch_max(int fd, int32_t partition, int64_t offset, int8_t isolation, int32_t max_bytes,
		      fetch_res *f)
{
	static k_wbuf body;
	fetch_body_max(&body, partition, offset, isolation, 0, 0, max_bytes);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
	fetch_parse(&r, f);
	free(resp);
}

static void fetch(int fd, int32_t partition, int64_t offset, int8_t isolation, fetch_res *f)
{
	static k_wbuf body;
	fetch_body(&body, partition, offset, isolation, 0, 0);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 1, 12, &body, &r);
	fetch_parse(&r, f);
	free(resp);
}

/* The offset after the last batch returned, -1 when none. */
static int64_t fetch_end(const fetch_res *f)
{
	return f->nbatches ? f->batches[f->nbatches - 1].last + 1 : -1;
}

/* ListOffsets v7 of one partition. Returns the error; *offset, *ts. */
static int16_t list_offsets(int fd, int32_t partition, int64_t timestamp, int8_t isolation,
			    int64_t *offset, int64_t *ts)
{
	k_wbuf body = {.len = 0};
	kw_i32(&body, -1);
	kw_u8(&body, (uint8_t)isolation);
	kw_uvarint(&body, 2);
	kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_i32(&body, -1);
	kw_i64(&body, timestamp);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 2, 7, &body, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	kr_cstr(&r, NULL, 0, "name");
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	kr_i32(&r, "partition index");
	int16_t err = kr_i16(&r, "error code");
	*ts = kr_i64(&r, "timestamp");
	*offset = kr_i64(&r, "offset");
	kr_i32(&r, "leader epoch");
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "tags");
	kr_done(&r, "ListOffsets v7");
	free(resp);
	return err;
}

typedef struct marker {
	int64_t pid;
	int16_t epoch;
	bool commit;
	int32_t coordinator_epoch;
	const char *topic;
	int32_t partition;
} marker;

/* WriteTxnMarkers v1 (or v2 with transaction version tv) of n markers, one
 * partition each; errs[i] gets marker i's partition error. */
static void write_markers(int fd, int16_t ver, int8_t tv, const marker *mk, int n, int16_t *errs)
{
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, (uint64_t)n + 1);
	for (int i = 0; i < n; i++) {
		kw_i64(&body, mk[i].pid);
		kw_i16(&body, mk[i].epoch);
		kw_u8(&body, mk[i].commit ? 1 : 0);
		kw_uvarint(&body, 2);
		kw_cstr(&body, mk[i].topic);
		kw_uvarint(&body, 2);
		kw_i32(&body, mk[i].partition);
		kw_tags0(&body);
		kw_i32(&body, mk[i].coordinator_epoch);
		if (ver >= 2)
			kw_u8(&body, (uint8_t)tv);
		kw_tags0(&body);
	}
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 27, ver, &body, &r);
	ck_assert_int_eq(kr_carray(&r, "markers"), n);
	for (int i = 0; i < n; i++) {
		int64_t pid = kr_i64(&r, "producer id");
		ck_assert_int_eq(pid, mk[i].pid);
		ck_assert_int_eq(kr_carray(&r, "topics"), 1);
		char name[256];
		kr_cstr(&r, name, sizeof(name), "topic name");
		ck_assert_str_eq(name, mk[i].topic);
		ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
		ck_assert_int_eq(kr_i32(&r, "partition index"), mk[i].partition);
		errs[i] = kr_i16(&r, "error code");
		kr_tags(&r, "partition tags");
		kr_tags(&r, "topic tags");
		kr_tags(&r, "marker tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "WriteTxnMarkers");
	free(resp);
}

static int16_t write_marker(int fd, int64_t pid, int16_t epoch, bool commit, int32_t coord_epoch)
{
	marker mk = {pid, epoch, commit, coord_epoch, TOPIC, 0};
	int16_t err;
	write_markers(fd, 1, 0, &mk, 1, &err);
	return err;
}

typedef struct pstate {
	int64_t pid;
	int32_t epoch, last_seq, coord_epoch;
	int64_t last_ts, txn_start;
} pstate;

/* DescribeProducers v0 of one partition of topic. Returns the error; *n
 * gets the number of producers (at most 8 kept in ps). */
static int16_t describe_producers(int fd, const char *topic, int32_t partition, pstate *ps, int *n,
				  bool *has_message)
{
	k_wbuf body = {.len = 0};
	kw_uvarint(&body, 2);
	kw_cstr(&body, topic);
	kw_uvarint(&body, 2);
	kw_i32(&body, partition);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 61, 0, &body, &r);
	ck_assert_int_eq(kr_i32(&r, "throttle"), 0);
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	char name[256];
	kr_cstr(&r, name, sizeof(name), "topic name");
	ck_assert_str_eq(name, topic);
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	ck_assert_int_eq(kr_i32(&r, "partition index"), partition);
	int16_t err = kr_i16(&r, "error code");
	int64_t ml = kr_cstr(&r, NULL, 0, "error message");
	if (has_message)
		*has_message = ml >= 0;
	int64_t np = kr_carray(&r, "active producers");
	*n = (int)(np < 0 ? 0 : np);
	for (int64_t i = 0; i < np; i++) {
		pstate s;
		s.pid = kr_i64(&r, "producer id");
		s.epoch = kr_i32(&r, "producer epoch");
		s.last_seq = kr_i32(&r, "last sequence");
		s.last_ts = kr_i64(&r, "last timestamp");
		s.coord_epoch = kr_i32(&r, "coordinator epoch");
		s.txn_start = kr_i64(&r, "current txn start offset");
		kr_tags(&r, "producer tags");
		if (i < 8)
			ps[i] = s;
	}
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "tags");
	kr_done(&r, "DescribeProducers v0");
	free(resp);
	return err;
}

static const pstate *find_pstate(const pstate *ps, int n, int64_t pid)
{
	for (int i = 0; i < n && i < 8; i++)
		if (ps[i].pid == pid)
			return &ps[i];
	return NULL;
}

/* ---- set-up ---- */

/* The tests that play the coordinator produce transactional batches no
 * transaction holds, which KIP-890 verification refuses: it is off for
 * them, as it would have to be on Kafka. */
static const char *const NO_VERIFY[] = {"transaction.partition.verification.enable=false", NULL};

static h_broker *start_broker(int *fd, bool verify)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	TS0 = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	h_broker *b = c_start_broker(verify ? NULL : NO_VERIFY);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	ck_assert_msg(c_create_topic(p, TOPIC, 2, 1, NULL, errstr, sizeof(errstr)) == 0,
		      "create topic: %s", errstr);
	c_wait_topic(p, TOPIC, 2, h_scaled_ms(10000));
	rd_kafka_destroy(p);
	*fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(*fd, 0);
	return b;
}

static h_broker *start(int *fd)
{
	return start_broker(fd, false);
}

/* ---- consumers ---- */

typedef struct seen {
	char v[64][16];
	int n;
} seen;

static int collect(const rd_kafka_message_t *m, void *opaque)
{
	seen *s = opaque;
	if (s->n < 64) {
		int len = (int)(m->len < 15 ? m->len : 15);
		memcpy(s->v[s->n], m->payload, (size_t)len);
		s->v[s->n][len] = 0;
	}
	s->n++;
	return 0;
}

static void consume_expect(h_broker *b, const char *isolation, const int *want, int nwant)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){"isolation.level", isolation, NULL});
	seen s = {.n = 0};
	long got = c_consume(c, TOPIC, 0, RD_KAFKA_OFFSET_BEGINNING, nwant, h_scaled_ms(20000),
			     collect, &s);
	rd_kafka_destroy(c);
	ck_assert_msg(got == nwant, "%s consumer: %ld records, expected %d", isolation, got, nwant);
	for (int i = 0; i < nwant; i++) {
		char w[16];
		snprintf(w, sizeof(w), "rec-%d", want[i]);
		ck_assert_msg(strcmp(s.v[i], w) == 0, "%s consumer: record %d is %s, expected %s",
			      isolation, i, s.v[i], w);
	}
}

/* ---- tests ---- */

START_TEST(test_lso_and_markers)
{
	int fd;
	h_broker *b = start(&fd);
	int64_t a = init_pid(fd), bp = init_pid(fd);
	k_wbuf batch;
	int64_t base;
	fetch_res f;

	/* offsets 0-1: plain records */
	build_batch(&batch, 2, 0, -1, -1, -1, false);
	ck_assert_int_eq(produce(fd, NULL, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 0);
	/* offsets 2-4: producer a's transaction */
	build_batch(&batch, 3, 100, a, 0, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 2);

	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.err, E_NONE);
	ck_assert_int_eq(f.hw, 5);
	ck_assert_int_eq(f.lso, 2);
	ck_assert_msg(f.naborted == -1, "read_uncommitted: aborted list %lld, expected null",
		      (long long)f.naborted);
	ck_assert_int_eq(fetch_end(&f), 5);
	ck_assert_int_eq(f.batches[1].attributes & 0x10, 0x10);

	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.err, E_NONE);
	ck_assert_int_eq(f.hw, 5);
	ck_assert_int_eq(f.lso, 2);
	ck_assert_msg(f.naborted == 0, "read_committed: aborted list %lld, expected empty",
		      (long long)f.naborted);
	ck_assert_int_eq(f.nbatches, 1);
	ck_assert_int_eq(fetch_end(&f), 2);
	/* at the LSO: nothing, empty list, no error */
	fetch(fd, 0, 2, 1, &f);
	ck_assert_int_eq(f.err, E_NONE);
	ck_assert_int_eq(f.nbatches, 0);
	ck_assert_int_eq(f.naborted, 0);
	/* the other partition, never written: LSO = HW = 0 */
	fetch(fd, 1, 0, 1, &f);
	ck_assert_int_eq(f.lso, 0);
	ck_assert_int_eq(f.hw, 0);

	int64_t off, ts;
	ck_assert_int_eq(list_offsets(fd, 0, -1, 1, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 2);
	ck_assert_int_eq(list_offsets(fd, 0, -1, 0, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 5);
	/* a timestamp inside the open transaction: only read_uncommitted finds it */
	ck_assert_int_eq(list_offsets(fd, 0, TS0 + 100000, 0, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 2);
	ck_assert_int_eq(list_offsets(fd, 0, TS0 + 100000, 1, &off, &ts), E_NONE);
	ck_assert_msg(off == -1 && ts == -1, "isolation 1 found offset %lld ts %lld above the LSO",
		      (long long)off, (long long)ts);
	ck_assert_int_eq(list_offsets(fd, 0, TS0, 1, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 0);
	/* max timestamp (-3) is in the transaction */
	ck_assert_int_eq(list_offsets(fd, 0, -3, 0, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 4);
	ck_assert_int_eq(list_offsets(fd, 0, -3, 1, &off, &ts), E_NONE);
	ck_assert_int_eq(off, -1);

	pstate ps[8];
	int n;
	bool msg;
	ck_assert_int_eq(describe_producers(fd, TOPIC, 0, ps, &n, &msg), E_NONE);
	ck_assert_int_eq(n, 1);
	ck_assert(!msg);
	ck_assert_int_eq(ps[0].pid, a);
	ck_assert_int_eq(ps[0].epoch, 0);
	ck_assert_int_eq(ps[0].last_seq, 2);
	ck_assert_int_eq(ps[0].last_ts, TS0 + 100000 + 20);
	ck_assert_int_eq(ps[0].coord_epoch, -1);
	ck_assert_int_eq(ps[0].txn_start, 2);

	/* COMMIT at offset 5: HW 6, LSO 6 */
	ck_assert_int_eq(write_marker(fd, a, 0, true, 3), E_NONE);
	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.hw, 6);
	ck_assert_int_eq(f.lso, 6);
	ck_assert_int_eq(f.naborted, 0);
	ck_assert_int_eq(f.nbatches, 3);
	ck_assert_int_eq(f.batches[2].base, 5);
	ck_assert_int_eq(f.batches[2].attributes & 0x30, 0x30); /* control, transactional */
	ck_assert_int_eq(list_offsets(fd, 0, -1, 1, &off, &ts), E_NONE);
	ck_assert_int_eq(off, 6);
	ck_assert_int_eq(describe_producers(fd, TOPIC, 0, ps, &n, NULL), E_NONE);
	ck_assert_int_eq(ps[0].txn_start, -1);
	ck_assert_int_eq(ps[0].coord_epoch, 3);

	/* offsets 6-7: producer bp's transaction, aborted at 8 */
	build_batch(&batch, 2, 200, bp, 0, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 6);
	/* offsets 8-9: a's next transaction, committed at 11 */
	build_batch(&batch, 2, 300, a, 0, 3, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 8);
	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.lso, 6);
	ck_assert_int_eq(describe_producers(fd, TOPIC, 0, ps, &n, NULL), E_NONE);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(find_pstate(ps, n, bp)->txn_start, 6);
	ck_assert_int_eq(find_pstate(ps, n, a)->txn_start, 8);

	ck_assert_int_eq(write_marker(fd, bp, 0, false, 3), E_NONE); /* abort at 10 */
	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.hw, 11);
	ck_assert_int_eq(f.lso, 8); /* a's transaction is still open */
	ck_assert_int_eq(fetch_end(&f), 8);
	/* bp's records (6-7) are returned, its abort marker (10) is not yet:
	 * the list names bp all the same, from the .txnindex */
	ck_assert_msg(f.naborted == 1 && f.ab_pid[0] == bp && f.ab_first[0] == 6,
		      "aborted list below the LSO: %lld entries", (long long)f.naborted);
	ck_assert_int_eq(write_marker(fd, a, 0, true, 3), E_NONE); /* commit at 11 */
	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.hw, 12);
	ck_assert_int_eq(f.lso, 12);
	ck_assert_int_eq(fetch_end(&f), 12);
	ck_assert_msg(f.naborted == 1 && f.ab_pid[0] == bp && f.ab_first[0] == 6,
		      "aborted list: %lld entries, first (%lld, %lld)", (long long)f.naborted,
		      (long long)f.ab_pid[0], (long long)f.ab_first[0]);
	/* read_uncommitted: still null */
	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.naborted, -1);
	ck_assert_int_eq(f.lso, 12);
	/* from past the abort marker: not listed */
	fetch(fd, 0, 11, 1, &f);
	ck_assert_int_eq(f.naborted, 0);
	ck_assert_int_eq(fetch_end(&f), 12);
	/* from inside the aborted transaction: listed */
	fetch(fd, 0, 7, 1, &f);
	ck_assert_int_eq(f.naborted, 1);
	/* only the batches before bp's transaction returned (max bytes 1: the
	 * first batch alone): not listed, it begins after the data sent */
	fetch_max(fd, 0, 0, 1, 1, &f);
	ck_assert_int_eq(fetch_end(&f), 2);
	ck_assert_int_eq(f.naborted, 0);
	fetch_max(fd, 0, 5, 1, 1, &f); /* the marker at 5 */
	ck_assert_int_eq(fetch_end(&f), 6);
	ck_assert_int_eq(f.naborted, 0);
	fetch_max(fd, 0, 6, 1, 1, &f); /* bp's first batch */
	ck_assert_int_eq(fetch_end(&f), 8);
	ck_assert_int_eq(f.naborted, 1);

	/* offsets 12: plain again */
	build_batch(&batch, 1, 400, -1, -1, -1, false);
	ck_assert_int_eq(produce(fd, NULL, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 12);
	close(fd);

	static const int committed[] = {0, 1, 100, 101, 102, 300, 301, 400};
	consume_expect(b, "read_committed", committed, 8);
	static const int all[] = {0, 1, 100, 101, 102, 200, 201, 300, 301, 400};
	consume_expect(b, "read_uncommitted", all, 10);

	/* the LSO and the aborted transactions survive a restart (.txnindex,
	 * producer snapshot) */
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean stop failed");
	ck_assert_msg(h_broker_restart(b) == 0, "restart failed");
	fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	fetch(fd, 0, 0, 1, &f);
	ck_assert_int_eq(f.lso, 13);
	ck_assert_int_eq(f.naborted, 1);
	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_delayed_fetch)
{
	int fd;
	h_broker *b = start(&fd);
	int fd2 = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd2, 0);
	int64_t a = init_pid(fd);
	k_wbuf batch, batch2;
	int64_t base;
	build_batch(&batch, 2, 0, a, 0, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	build_batch(&batch2, 2, 2, a, 0, 2, true);

	/*
	 * fd2 waits at the LSO (0), read_committed, up to 10 s, for all but
	 * 20 of the bytes the commit makes readable (both batches and the
	 * 78-byte marker): more than what is appended while it waits (the
	 * second batch and the marker), so the wake-up must measure what is
	 * readable below the LSO, not add up the appends.
	 */
	int32_t min_bytes = (int32_t)(batch.len + batch2.len + 78 - 20);
	static k_wbuf body;
	fetch_body(&body, 0, 0, 1, h_scaled_ms(10000), min_bytes);
	long long t0 = h_now_ms();
	int32_t cid = k_send(fd2, 1, 12, &body);

	/* more of the transaction: appended, not readable */
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch2, &base), E_NONE);
	struct pollfd pfd = {.fd = fd2, .events = POLLIN};
	ck_assert_msg(poll(&pfd, 1, 500) == 0,
		      "the read_committed fetch was answered before the transaction ended");

	ck_assert_int_eq(write_marker(fd, a, 0, true, 0), E_NONE);
	k_rbuf r;
	uint8_t *resp = k_recv(fd2, cid, &r, h_scaled_ms(5000));
	long long took = h_now_ms() - t0;
	fetch_res f;
	fetch_parse(&r, &f);
	free(resp);
	ck_assert_int_eq(f.err, E_NONE);
	ck_assert_int_eq(f.lso, 5);
	ck_assert_int_eq(fetch_end(&f), 5);
	ck_assert_msg(took < h_scaled_ms(5000), "fetch answered after %lld ms", took);

	/* an abort wakes it too, and the list names the producer */
	fetch_body(&body, 0, 5, 1, h_scaled_ms(10000), 1);
	cid = k_send(fd2, 1, 12, &body);
	build_batch(&batch, 1, 4, a, 0, 4, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 5);
	ck_assert_msg(poll(&pfd, 1, 300) == 0, "answered before the abort");
	ck_assert_int_eq(write_marker(fd, a, 0, false, 0), E_NONE);
	resp = k_recv(fd2, cid, &r, h_scaled_ms(5000));
	fetch_parse(&r, &f);
	free(resp);
	ck_assert_int_eq(f.lso, 7);
	ck_assert_int_eq(fetch_end(&f), 7);
	ck_assert_msg(f.naborted == 1 && f.ab_pid[0] == a && f.ab_first[0] == 5,
		      "aborted list after the abort: %lld", (long long)f.naborted);
	close(fd2);
	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_marker_errors)
{
	int fd;
	h_broker *b = start(&fd);
	int64_t a = init_pid(fd);
	k_wbuf batch;
	int64_t base;
	build_batch(&batch, 1, 0, a, 2, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);

	/* an older producer epoch: nothing written */
	ck_assert_int_eq(write_marker(fd, a, 1, true, 0), E_INVALID_PRODUCER_EPOCH);
	fetch_res f;
	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.hw, 1);
	ck_assert_int_eq(f.lso, 0);
	/* transaction version 2: the same epoch while the transaction is open */
	marker mk = {a, 2, true, 0, TOPIC, 0};
	int16_t errs[4];
	write_markers(fd, 2, 2, &mk, 1, errs);
	ck_assert_int_eq(errs[0], E_INVALID_PRODUCER_EPOCH);
	/* ... but a version 0/1 marker at that epoch is fine (v2 request) */
	write_markers(fd, 2, 1, &mk, 1, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	/* a retried TV2 marker at the same epoch, no transaction open: accepted */
	write_markers(fd, 2, 2, &mk, 1, errs);
	ck_assert_int_eq(errs[0], E_NONE);

	/* coordinator epochs: 5 then 4 is fenced */
	ck_assert_int_eq(write_marker(fd, a, 2, false, 5), E_NONE);
	ck_assert_int_eq(write_marker(fd, a, 2, false, 4), E_TRANSACTION_COORDINATOR_FENCED);
	ck_assert_int_eq(write_marker(fd, a, 3, true, 5), E_NONE); /* a new epoch */
	ck_assert_int_eq(write_marker(fd, a, 2, true, 5), E_INVALID_PRODUCER_EPOCH);

	/* several markers, several outcomes, in one request */
	int64_t c = init_pid(fd);
	marker many[4] = {
		{c, 0, true, 0, TOPIC, 1},
		{a, 1, true, 9, TOPIC, 0},
		{c, 0, true, 0, "no-such-topic", 0},
		{c, 0, false, 0, TOPIC, 7},
	};
	write_markers(fd, 1, 0, many, 4, errs);
	ck_assert_int_eq(errs[0], E_NONE);
	ck_assert_int_eq(errs[1], E_INVALID_PRODUCER_EPOCH);
	ck_assert_int_eq(errs[2], E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(errs[3], E_UNKNOWN_TOPIC_OR_PARTITION);
	fetch(fd, 1, 0, 0, &f);
	ck_assert_int_eq(f.hw, 1); /* the marker for c on partition 1 */

	pstate ps[8];
	int n;
	bool msg;
	ck_assert_int_eq(describe_producers(fd, "no-such-topic", 0, ps, &n, &msg),
			 E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(n, 0);
	ck_assert(msg);
	ck_assert_int_eq(describe_producers(fd, TOPIC, 9, ps, &n, NULL), E_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(describe_producers(fd, TOPIC, 1, ps, &n, NULL), E_NONE);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(ps[0].pid, c);
	ck_assert_int_eq(ps[0].last_seq, -1); /* markers only */
	ck_assert_int_eq(ps[0].txn_start, -1);
	close(fd);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_produce_rules)
{
	int fd;
	h_broker *b = start(&fd);
	int64_t a = init_pid(fd), c = init_pid(fd);
	k_wbuf batch;
	int64_t base;

	/* transactional batch, no transactional id */
	build_batch(&batch, 1, 0, a, 0, 0, true);
	ck_assert_int_eq(produce(fd, NULL, 0, &batch, &base), E_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
	/* a plain idempotent batch in a request with a transactional id */
	build_batch(&batch, 1, 0, c, 0, 0, false);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 0);
	/* a's transaction, then a plain batch of a: INVALID_TXN_STATE */
	build_batch(&batch, 1, 1, a, 0, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 1);
	build_batch(&batch, 1, 2, a, 0, 1, false);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_INVALID_TXN_STATE);
	/* a retry of the transactional batch: the original offset */
	build_batch(&batch, 1, 1, a, 0, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 1);
	fetch_res f;
	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.hw, 2);
	ck_assert_int_eq(f.lso, 1);
	close(fd);
	c_stop_broker(b);
}
END_TEST

/* InitProducerId v4 of transactional id txn: the producer id, epoch in *epoch. */
static int64_t init_txn(int fd, const char *txn, int16_t *epoch)
{
	k_init_pid r;
	int16_t err = k_init_producer_id(fd, 4, txn, 60000, -1, -1, &r);
	ck_assert_msg(err == 0 && r.producer_id >= 0, "InitProducerId %s: error %d", txn, err);
	*epoch = r.producer_epoch;
	return r.producer_id;
}

/* AddPartitionsToTxn v3 of partition of TOPIC: the partition's error. */
static int16_t add_partition(int fd, const char *txn, int64_t pid, int16_t epoch, int32_t partition)
{
	return k_add_partitions_to_txn(fd, txn, pid, epoch, TOPIC, partition);
}

/* KIP-890 verification of transactional produce (on by default), the
 * producer id -1 rule, and Produce to the internal topics. */
START_TEST(test_verification)
{
	int fd;
	h_broker *b = start_broker(&fd, true);
	int16_t epoch;
	int64_t pid = init_txn(fd, TXN_ID, &epoch);
	k_wbuf batch;
	int64_t base;
	fetch_res f;

	/* a real transactional producer, partition never added */
	build_batch(&batch, 1, 0, pid, epoch, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_INVALID_TXN_STATE);
	/* an unknown producer id / transactional id */
	build_batch(&batch, 1, 0, 999999, 0, 0, true);
	ck_assert_int_eq(produce(fd, "no-such-txn", 0, &batch, &base),
			 E_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_INVALID_PRODUCER_ID_MAPPING);
	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.hw, 0);
	/* producer id -1: a plain batch (Kafka: batch.hasProducerId), which
	 * opens no transaction */
	build_batch(&batch, 1, 0, -1, -1, -1, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	fetch(fd, 0, 0, 0, &f);
	ck_assert_int_eq(f.hw, 1);
	ck_assert_int_eq(f.lso, 1);
	/* added: accepted; another partition of the same producer is not */
	ck_assert_int_eq(add_partition(fd, TXN_ID, pid, epoch, 0), E_NONE);
	build_batch(&batch, 1, 1, pid, epoch, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	ck_assert_int_eq(base, 1);
	build_batch(&batch, 1, 2, pid, epoch, 1, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 0, &batch, &base), E_NONE);
	build_batch(&batch, 1, 1, pid, epoch, 0, true);
	ck_assert_int_eq(produce(fd, TXN_ID, 1, &batch, &base), E_INVALID_TXN_STATE);
	/* the internal topics */
	build_batch(&batch, 1, 0, -1, -1, -1, false);
	ck_assert_int_eq(produce_to(fd, NULL, "__consumer_offsets", 0, &batch, &base),
			 E_INVALID_TOPIC_EXCEPTION);
	ck_assert_int_eq(produce_to(fd, NULL, "__transaction_state", 0, &batch, &base),
			 E_INVALID_TOPIC_EXCEPTION);
	/* AddPartitionsToTxn v0-3 refuses them (Kafka's Topic.isInternal) */
	ck_assert_int_eq(k_add_partitions_to_txn(fd, TXN_ID, pid, epoch, "__consumer_offsets", 0),
			 E_TOPIC_AUTHORIZATION_FAILED);
	ck_assert_int_eq(k_add_partitions_to_txn(fd, TXN_ID, pid, epoch, "__transaction_state", 0),
			 E_TOPIC_AUTHORIZATION_FAILED);
	close(fd);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txn_partitions");
	TCase *tc = tcase_create("txn_partitions");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_lso_and_markers);
	tcase_add_test(tc, test_delayed_fetch);
	tcase_add_test(tc, test_marker_errors);
	tcase_add_test(tc, test_produce_rules);
	tcase_add_test(tc, test_verification);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
