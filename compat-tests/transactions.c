/*
 * transactions.c - the transactional producer (KIP-98, KIP-447) end to end,
 * through librdkafka's transactional API against the real broker:
 *
 *  - commit_abort: one producer writes 10 transactions to a 3-partition
 *    topic, each to two partitions, alternately committed and aborted (the
 *    aborted ones flushed first, so their records are in the log), then a
 *    committed end transaction. A read_committed consumer sees exactly the
 *    committed records, in order, at their delivery offsets; a
 *    read_uncommitted one sees every record (aborted data is in the log and
 *    filtered, not dropped); each commit or abort marker takes an offset
 *    between two transactions. read_committed from an offset inside an
 *    aborted transaction, one batch per Fetch, still skips all of it (each
 *    Fetch lists the aborted transactions overlapping its range, also one
 *    that began before the fetch offset).
 *  - last_stable_offset: while a transaction is open (produced, flushed),
 *    read_committed stops at its first offset (Kafka's last stable offset),
 *    also for records a non-transactional producer appends after it, while
 *    read_uncommitted reads everything; the end offset a read_committed
 *    consumer sees is the LSO (ListOffsets v2 with isolation level 1, as
 *    librdkafka 2.0.2 sends it; and the Fetch's LastStableOffset, where
 *    librdkafka raises partition EOF), a read_uncommitted one the high
 *    watermark; after the commit the parked read_committed consumer gets
 *    the rest.
 *  - consume_transform_produce: a group member (read_committed, no auto
 *    commit) and a transactional producer copy 300 records to an output
 *    topic, one transaction per batch with send_offsets_to_transaction;
 *    the group's committed offsets end at the input's end and the output
 *    holds every record exactly once. The second run aborts one batch in
 *    the middle: its output is invisible to read_committed, its offsets are
 *    not committed, and the next member of the group resumes from the last
 *    committed offsets and writes the batch again (once).
 *  - fencing: producer P1 of transactional id X has a transaction open;
 *    P2 with the same id calls init_transactions, which aborts P1's
 *    transaction; P1's next produce and commit fail with a fatal fencing
 *    error and its late record is not appended; P1's records are invisible
 *    to read_committed; P2 commits.
 *  - abandoned: a producer in a child process (transaction.timeout.ms
 *    2000) begins a transaction, produces, flushes and is killed with
 *    SIGKILL (so librdkafka cannot abort it); the coordinator aborts it
 *    (transaction.abort.timed.out.transaction.cleanup.interval.ms=500) and a
 *    read_committed consumer gets past it to later records.
 *  - restart: transactions committed and aborted, then kill -9 and
 *    restart: read_committed still sees exactly the committed records;
 *    InitProducerId for the same transactional id (raw, v4) keeps the
 *    producer id and bumps the epoch by one; librdkafka's init_transactions
 *    works and commits. Two transactions left open by killed producers at
 *    the kill are aborted after the restart: one when its timeout passes,
 *    one when its transactional id initializes again.
 *  - require_stable: rd_kafka_committed of a read_committed consumer sends
 *    OffsetFetch v7 with require_stable = 1 (librdkafka 2.0.2 does, as its
 *    request bytes show): while a send_offsets_to_transaction commit is
 *    pending it gets no offset (librdkafka retries UNSTABLE_OFFSET_COMMIT
 *    until its timeout), a read_uncommitted one gets the previous commit;
 *    after the commit both get the new offset, after an abort the old one
 *    stays.
 *
 * A transaction left open is abandoned by a child process: this program
 * exec'd again with CHILD_ARG (see child_main), killed with SIGKILL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/groups_common.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define CHILD_ARG "--txn-abandon-child"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Fail the test with what and the error's name, string and flags. */
static void txn_ok(rd_kafka_error_t *e, const char *what)
{
	if (!e)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "%s: %s (%s)%s%s%s", what, rd_kafka_error_name(e),
		 rd_kafka_error_string(e), rd_kafka_error_is_fatal(e) ? " fatal" : "",
		 rd_kafka_error_is_retriable(e) ? " retriable" : "",
		 rd_kafka_error_txn_requires_abort(e) ? " requires abort" : "");
	rd_kafka_error_destroy(e);
	ck_abort_msg("%s", msg);
}

/* A transactional producer for b (idempotent, acks=all) with c_producer's
 * delivery reports; then kv (key, value, ... NULL; may be NULL). */
static rd_kafka_t *txn_producer(const h_broker *b, const char *txn_id, const char *const *kv)
{
	const char *all[64] = {"enable.idempotence", "true", "acks", "all", "linger.ms", "5",
			       "transactional.id", txn_id};
	int n = 8;
	for (int i = 0; kv && kv[i]; i++) {
		ck_assert_msg(n < 63, "too many producer settings");
		all[n++] = kv[i];
	}
	all[n] = NULL;
	return c_producer(b, all);
}

static void txn_init(rd_kafka_t *p, const char *who)
{
	char what[128];
	snprintf(what, sizeof(what), "%s: init_transactions", who);
	txn_ok(rd_kafka_init_transactions(p, h_scaled_ms(30000)), what);
}

static void txn_begin(rd_kafka_t *p)
{
	txn_ok(rd_kafka_begin_transaction(p), "begin_transaction");
}

static void txn_commit(rd_kafka_t *p)
{
	txn_ok(rd_kafka_commit_transaction(p, h_scaled_ms(30000)), "commit_transaction");
}

static void txn_abort(rd_kafka_t *p)
{
	txn_ok(rd_kafka_abort_transaction(p, h_scaled_ms(30000)), "abort_transaction");
}

/* Create topic with np partitions and wait until each has a leader. */
static void create_topic(const h_broker *b, const char *topic, int np)
{
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[256];
	rd_kafka_resp_err_t err = c_create_topic(p, topic, np, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics %s: %s %s", topic, rd_kafka_err2name(err), errstr);
	c_wait_topic(p, topic, np, h_scaled_ms(10000));
	rd_kafka_destroy(p);
}

/* ---- records read back, and the records expected ---- */

typedef struct rec {
	int64_t offset; /* -1: any offset */
	char val[48];
} rec;

typedef struct recs {
	rec *r;
	int n, cap;
} recs;

static void recs_add(recs *rs, int64_t offset, const char *val)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 64;
		rs->r = realloc(rs->r, (size_t)rs->cap * sizeof(*rs->r));
		ck_assert_msg(rs->r != NULL, "out of memory");
	}
	rs->r[rs->n].offset = offset;
	snprintf(rs->r[rs->n].val, sizeof(rs->r[rs->n].val), "%s", val);
	rs->n++;
}

static void recs_free(recs *rs)
{
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

/* How many records of rs have the value val. */
static int recs_count(const recs *rs, const char *val)
{
	int n = 0;
	for (int i = 0; i < rs->n; i++)
		n += strcmp(rs->r[i].val, val) == 0;
	return n;
}

/* Fail unless got holds exactly want's values in order, at want's offsets
 * where those are >= 0. what names the reading. */
static void expect_recs(const recs *got, const recs *want, const char *what)
{
	int n = got->n < want->n ? got->n : want->n;
	for (int i = 0; i < n; i++) {
		const rec *g = &got->r[i], *w = &want->r[i];
		int same = strcmp(g->val, w->val) == 0 && (w->offset < 0 || g->offset == w->offset);
		ck_assert_msg(same,
			      "%s: record %d is \"%s\" at offset %lld, expected \"%s\" at "
			      "offset %lld (%d records read, %d expected)",
			      what, i, g->val, (long long)g->offset, w->val, (long long)w->offset,
			      got->n, want->n);
	}
	ck_assert_msg(got->n == want->n, "%s: %d records read, expected %d; %s \"%s\"", what,
		      got->n, want->n, got->n > want->n ? "first extra one:" : "first missing one:",
		      got->n > want->n ? got->r[n].val : want->r[n].val);
}

/* ---- a legacy (group-less) consumer of one partition ---- */

typedef struct reader {
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	char topic[128];
	int32_t part;
	recs got;
	int stopped;        /* the stop record came */
	int64_t eof_offset; /* offset of the last partition EOF, -1 if none */
} reader;

/* Start reading topic/part at start (an offset or
 * RD_KAFKA_OFFSET_BEGINNING) with isolation.level read_committed
 * (committed = 1) or read_uncommitted, and partition EOF events on; kv
 * (key, value, ... NULL; may be NULL) overrides consumer settings. */
static void reader_start_at(reader *r, const h_broker *b, const char *topic, int32_t part,
			    int committed, int64_t start, const char *const *kv)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->topic, sizeof(r->topic), "%s", topic);
	r->part = part;
	r->eof_offset = -1;
	rd_kafka_conf_t *conf = c_conf(b);
	c_set_all(conf, (const char *const[]){
	    "enable.auto.commit", "false", "enable.auto.offset.store", "false",
	    "enable.partition.eof", "true", "fetch.wait.max.ms", "100",
	    "isolation.level", committed ? "read_committed" : "read_uncommitted", NULL});
	c_set_all(conf, kv);
	r->rk = c_new(RD_KAFKA_CONSUMER, conf);
	r->rkt = rd_kafka_topic_new(r->rk, topic, NULL);
	ck_assert_msg(r->rkt != NULL, "rd_kafka_topic_new %s: %s", topic,
		      rd_kafka_err2str(rd_kafka_last_error()));
	ck_assert_msg(rd_kafka_consume_start(r->rkt, part, start) == 0,
		      "rd_kafka_consume_start %s [%d]: %s", topic, (int)part,
		      rd_kafka_err2str(rd_kafka_last_error()));
}

/* reader_start_at from the beginning, default settings. */
static void reader_start(reader *r, const h_broker *b, const char *topic, int32_t part,
			 int committed)
{
	reader_start_at(r, b, topic, part, committed, RD_KAFKA_OFFSET_BEGINNING, NULL);
}

/* Poll until r holds want records, the record with value stop (may be
 * NULL; not kept) came, or timeout_ms passed. A consumer error fails. */
static void reader_poll(reader *r, long want, const char *stop, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	char failure[512] = "";
	while (r->got.n < want && !r->stopped && !failure[0] && h_now_ms() < deadline) {
		rd_kafka_message_t *batch[256];
		ssize_t got = rd_kafka_consume_batch(r->rkt, r->part, 100, batch, 256);
		ck_assert_msg(got >= 0, "rd_kafka_consume_batch %s [%d]: %s", r->topic,
			      (int)r->part, rd_kafka_err2str(rd_kafka_last_error()));
		for (ssize_t i = 0; i < got; i++) {
			rd_kafka_message_t *m = batch[i];
			if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				r->eof_offset = m->offset;
			} else if (m->err) {
				if (!failure[0])
					snprintf(failure, sizeof(failure),
						 "consume %s [%d]: %s (%s)", r->topic,
						 (int)r->part, rd_kafka_err2name(m->err),
						 rd_kafka_message_errstr(m));
			} else if (!r->stopped) {
				char v[48];
				size_t l = m->len < sizeof(v) - 1 ? m->len : sizeof(v) - 1;
				memcpy(v, m->payload ? (const char *)m->payload : "", l);
				v[l] = '\0';
				if (stop && strcmp(v, stop) == 0)
					r->stopped = 1;
				else
					recs_add(&r->got, m->offset, v);
			}
			rd_kafka_message_destroy(m);
		}
	}
	ck_assert_msg(!failure[0], "%s", failure);
}

static void reader_stop(reader *r)
{
	rd_kafka_consume_stop(r->rkt, r->part);
	rd_kafka_topic_destroy(r->rkt);
	rd_kafka_destroy(r->rk);
	recs_free(&r->got);
}

/* Read topic/part from the beginning up to the record "stop" (which must
 * come within 30 s) and compare what came before it with want. */
static void expect_part(const h_broker *b, const char *topic, int32_t part, int committed,
			const char *stop, const recs *want, const char *what)
{
	reader r;
	reader_start(&r, b, topic, part, committed);
	reader_poll(&r, 1L << 30, stop, h_scaled_ms(30000));
	char w[256];
	snprintf(w, sizeof(w), "%s: %s [%d] read %s", what, topic, (int)part,
		 committed ? "read_committed" : "read_uncommitted");
	ck_assert_msg(r.stopped,
		      "%s: the record \"%s\" did not come within 30 s (%d records before)", w,
		      stop, r.got.n);
	expect_recs(&r.got, want, w);
	reader_stop(&r);
}

/* Produce "<tag>-<i>" (i in 0..n-1) to topic/part; d (n entries, may be
 * NULL) gets the delivery results. */
static void produce_vals(rd_kafka_t *p, const char *topic, int32_t part, const char *tag, int n,
			 c_delivery *d)
{
	char val[48];
	for (int i = 0; i < n; i++) {
		c_msg m = {.topic = topic,
			   .partition = part,
			   .value = val,
			   .value_len = (size_t)snprintf(val, sizeof(val), "%s-%d", tag, i)};
		c_produce(p, &m, d ? &d[i] : NULL);
	}
}

/* Every one of the n deliveries succeeded, to part; want (may be NULL)
 * gets "<tag>-<i>" at the delivered offsets. */
static void check_delivered(const c_delivery *d, int n, int32_t part, const char *tag, recs *want)
{
	for (int i = 0; i < n; i++) {
		ck_assert_msg(d[i].done && d[i].err == 0 && d[i].partition == part,
			      "%s-%d: delivery %s (partition %d)", tag, i,
			      d[i].done ? rd_kafka_err2name(d[i].err) : "report missing",
			      (int)d[i].partition);
		if (want) {
			char val[48];
			snprintf(val, sizeof(val), "%s-%d", tag, i);
			recs_add(want, d[i].offset, val);
		}
	}
}

/* A plain (non-transactional, acks=all) producer writes "<tag>-<i>" to
 * topic/part, flushed; want (may be NULL) gets them at their offsets. */
static void plain_produce(const h_broker *b, const char *topic, int32_t part, const char *tag,
			  int n, recs *want)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "all", NULL});
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	ck_assert_ptr_nonnull(d);
	produce_vals(p, topic, part, tag, n, d);
	c_flush(p, h_scaled_ms(30000));
	check_delivered(d, n, part, tag, want);
	free(d);
	rd_kafka_destroy(p);
}

/* The single record "end" to each of partitions 0..np-1 (plain producer):
 * read_committed readers stop there once every transaction before it has
 * ended. */
static void produce_end(const h_broker *b, const char *topic, int np)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "all", NULL});
	for (int32_t part = 0; part < np; part++) {
		c_msg m = {.topic = topic, .partition = part, .value = "end", .value_len = 3};
		c_produce(p, &m, NULL);
	}
	c_flush(p, h_scaled_ms(30000));
	rd_kafka_destroy(p);
}

/* ListOffsets (latest) of topic/part through a consumer with the given
 * isolation level: the high watermark, or the last stable offset. */
static int64_t end_offset(const h_broker *b, const char *topic, int32_t part, int committed)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){
	    "isolation.level", committed ? "read_committed" : "read_uncommitted", NULL});
	int64_t lo = -1, hi = -1;
	rd_kafka_resp_err_t err =
	    rd_kafka_query_watermark_offsets(c, topic, part, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks of %s [%d]: %s", topic, (int)part,
		      rd_kafka_err2name(err));
	rd_kafka_destroy(c);
	return hi;
}

/* ------------------------------------------------------------------ */
/* A producer abandoned in a child process                            */
/* ------------------------------------------------------------------ */

typedef struct abandoner {
	pid_t pid;
	int fd; /* read end of its stdout */
} abandoner;

static int child_errors;

static void child_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err)
		child_errors++;
}

/*
 * The child: argv = CHILD_ARG bootstrap txn_id timeout_ms topic partition
 * tag n. It initializes, begins a transaction, produces n records
 * "<tag>-<i>" to topic/partition, flushes, prints "R" and waits to be
 * killed; on a failure it prints "E <what>" and exits 1. No check calls
 * here: this process runs outside the test runner.
 */
static int child_main(int argc, char **argv)
{
	if (argc != 9)
		return 2;
	char errstr[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const char *kv[] = {"bootstrap.servers", argv[2], "broker.address.family", "v4",
			    "log.connection.close", "false", "transactional.id", argv[3],
			    "transaction.timeout.ms", argv[4], "enable.idempotence", "true",
			    "acks", "all", NULL};
	for (int i = 0; kv[i]; i += 2)
		if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr))) {
			printf("E config %s: %s\n", kv[i], errstr);
			return 1;
		}
	rd_kafka_conf_set_dr_msg_cb(conf, child_dr);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk) {
		printf("E rd_kafka_new: %s\n", errstr);
		return 1;
	}
	rd_kafka_error_t *e = rd_kafka_init_transactions(rk, 60000);
	if (!e)
		e = rd_kafka_begin_transaction(rk);
	if (e) {
		printf("E init/begin: %s\n", rd_kafka_error_string(e));
		return 1;
	}
	int32_t part = atoi(argv[6]);
	int n = atoi(argv[8]);
	char val[48];
	for (int i = 0; i < n; i++) {
		int len = snprintf(val, sizeof(val), "%s-%d", argv[7], i);
		rd_kafka_resp_err_t err = rd_kafka_producev(
		    rk, RD_KAFKA_V_TOPIC(argv[5]), RD_KAFKA_V_PARTITION(part),
		    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(val, (size_t)len),
		    RD_KAFKA_V_END);
		if (err) {
			printf("E produce: %s\n", rd_kafka_err2str(err));
			return 1;
		}
	}
	if (rd_kafka_flush(rk, 60000) || child_errors) {
		printf("E flush: %d not delivered\n", rd_kafka_outq_len(rk) + child_errors);
		return 1;
	}
	printf("R\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* Start the child (child_main) for b: a transaction of txn_id with
 * transaction.timeout.ms timeout_ms, n records "<tag>-<i>" to topic/part.
 * It dies with the test process (PR_SET_PDEATHSIG). */
static abandoner abandoner_start(const h_broker *b, const char *txn_id, int timeout_ms,
				 const char *topic, int32_t part, const char *tag, int n)
{
	char tbuf[16], pbuf[16], nbuf[16];
	snprintf(tbuf, sizeof(tbuf), "%d", timeout_ms);
	snprintf(pbuf, sizeof(pbuf), "%d", (int)part);
	snprintf(nbuf, sizeof(nbuf), "%d", n);
	char *argv[] = {"/proc/self/exe", CHILD_ARG, (char *)b->bootstrap, (char *)txn_id, tbuf,
			(char *)topic, pbuf, (char *)tag, nbuf, NULL};
	int pfd[2];
	ck_assert(pipe(pfd) == 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Only async-signal-safe calls until exec: the parent has threads. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	return (abandoner){.pid = pid, .fd = pfd[0]};
}

/* Wait for the child's "R" (its records are written, its transaction is
 * open); fail on its "E ..." line, its exit, or after 60 s. */
static void abandoner_wait_ready(abandoner *a, const char *who)
{
	char line[512];
	size_t len = 0;
	long long deadline = h_now_ms() + h_scaled_ms(60000);
	for (;;) {
		int left = (int)(deadline - h_now_ms());
		ck_assert_msg(left > 0, "%s: the child producer was not ready within 60 s", who);
		struct pollfd pfd = {.fd = a->fd, .events = POLLIN};
		if (poll(&pfd, 1, left) <= 0)
			continue;
		ssize_t got = read(a->fd, line + len, sizeof(line) - 1 - len);
		ck_assert_msg(got > 0, "%s: the child producer ended before it was ready", who);
		len += (size_t)got;
		line[len] = '\0';
		char *nl = strchr(line, '\n');
		if (!nl) {
			ck_assert_msg(len < sizeof(line) - 1, "%s: the child writes garbage", who);
			continue;
		}
		*nl = '\0';
		ck_assert_msg(strcmp(line, "R") == 0, "%s: the child producer failed: %s", who,
			      line);
		return;
	}
}

/* SIGKILL: librdkafka gets no chance to end the transaction. */
static void abandoner_kill(abandoner *a)
{
	kill(a->pid, SIGKILL);
	waitpid(a->pid, NULL, 0);
	close(a->fd);
	a->pid = 0;
	a->fd = -1;
}

/* ------------------------------------------------------------------ */
/* Commit and abort interleaved                                        */
/* ------------------------------------------------------------------ */

#define CA_NP 3
#define CA_TXNS 10
#define CA_PER 4 /* records per partition and transaction */

START_TEST(test_commit_abort)
{
	h_broker *b = c_start_broker(NULL);
	const char *topic = "txn-commit-abort";
	create_topic(b, topic, CA_NP);
	rd_kafka_t *p = txn_producer(b, "txn-commit-abort", NULL);
	txn_init(p, "producer");

	recs committed[CA_NP] = {{0}}, all[CA_NP] = {{0}};
	int64_t last[CA_NP]; /* offset of the last record of the previous transaction */
	int64_t mid[CA_NP];  /* the second record of the first aborted transaction */
	for (int i = 0; i < CA_NP; i++)
		last[i] = mid[i] = -1;
	c_delivery dr[2][CA_PER];
	for (int t = 0; t < CA_TXNS; t++) {
		int commit = t % 2 == 0;
		int32_t parts[2] = {t % CA_NP, (t + 1) % CA_NP};
		txn_begin(p);
		char tag[2][32];
		for (int k = 0; k < 2; k++) {
			snprintf(tag[k], sizeof(tag[k]), "t%d-p%d", t, (int)parts[k]);
			produce_vals(p, topic, parts[k], tag[k], CA_PER, dr[k]);
		}
		/* in the log before the commit or abort (an abort would purge
		 * what is still queued) */
		c_flush(p, h_scaled_ms(30000));
		for (int k = 0; k < 2; k++) {
			int32_t pt = parts[k];
			check_delivered(dr[k], CA_PER, pt, tag[k], &all[pt]);
			if (commit)
				check_delivered(dr[k], CA_PER, pt, tag[k], &committed[pt]);
			const c_delivery *d = dr[k];
			for (int i = 1; i < CA_PER; i++)
				ck_assert_msg(d[i].offset == d[i - 1].offset + 1,
					      "%s: offsets %lld then %lld in one transaction",
					      tag[k], (long long)d[i - 1].offset,
					      (long long)d[i].offset);
			/* the previous transaction's marker sits in between */
			ck_assert_msg(last[pt] < 0 || d[0].offset >= last[pt] + 2,
				      "partition %d: transaction %d starts at offset %lld right "
				      "after the previous one's last record at %lld: no "
				      "commit/abort marker in between",
				      (int)pt, t, (long long)d[0].offset, (long long)last[pt]);
			last[pt] = dr[k][CA_PER - 1].offset;
			if (!commit && mid[pt] < 0)
				mid[pt] = dr[k][1].offset;
		}
		if (commit)
			txn_commit(p);
		else
			txn_abort(p);
	}
	/* a committed transaction of "end" records closes every partition */
	txn_begin(p);
	for (int32_t pt = 0; pt < CA_NP; pt++) {
		c_msg m = {.topic = topic, .partition = pt, .value = "end", .value_len = 3};
		c_produce(p, &m, NULL);
	}
	txn_commit(p);
	rd_kafka_destroy(p);

	for (int32_t pt = 0; pt < CA_NP; pt++) {
		ck_assert_msg(committed[pt].n > 0 && committed[pt].n < all[pt].n,
			      "partition %d: test setup: %d committed of %d", (int)pt,
			      committed[pt].n, all[pt].n);
		expect_part(b, topic, pt, 1, "end", &committed[pt], "committed records only");
		expect_part(b, topic, pt, 0, "end", &all[pt], "aborted records in the log");
		/* from the middle of an aborted transaction, one batch per fetch:
		 * each Fetch names the aborted transactions overlapping it,
		 * also one that began before its offset */
		recs tail = {0};
		for (int i = 0; i < committed[pt].n; i++)
			if (committed[pt].r[i].offset > mid[pt])
				recs_add(&tail, committed[pt].r[i].offset, committed[pt].r[i].val);
		reader r;
		reader_start_at(&r, b, topic, pt, 1, mid[pt],
				(const char *const[]){"fetch.message.max.bytes", "64", NULL});
		reader_poll(&r, 1L << 30, "end", h_scaled_ms(30000));
		char what[128];
		snprintf(what, sizeof(what),
			 "partition %d read_committed from offset %lld (inside an aborted "
			 "transaction), small fetches",
			 (int)pt, (long long)mid[pt]);
		ck_assert_msg(r.stopped, "%s: the end record did not come", what);
		expect_recs(&r.got, &tail, what);
		reader_stop(&r);
		recs_free(&tail);
		recs_free(&committed[pt]);
		recs_free(&all[pt]);
	}
	c_stop_broker(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The last stable offset                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_last_stable_offset)
{
	h_broker *b = c_start_broker(NULL);
	const char *topic = "txn-lso";
	create_topic(b, topic, 1);
	recs before = {0}, open = {0}, late = {0}, everything = {0};
	plain_produce(b, topic, 0, "before", 5, &before);

	rd_kafka_t *p = txn_producer(b, "txn-lso", NULL);
	txn_init(p, "producer");
	txn_begin(p);
	c_delivery dr[10];
	produce_vals(p, topic, 0, "open", 10, dr);
	c_flush(p, h_scaled_ms(30000));
	check_delivered(dr, 10, 0, "open", &open);
	/* a non-transactional producer appends after the open transaction */
	plain_produce(b, topic, 0, "late", 5, &late);
	for (int i = 0; i < before.n; i++)
		recs_add(&everything, before.r[i].offset, before.r[i].val);
	for (int i = 0; i < open.n; i++)
		recs_add(&everything, open.r[i].offset, open.r[i].val);
	for (int i = 0; i < late.n; i++)
		recs_add(&everything, late.r[i].offset, late.r[i].val);
	int64_t lso = open.r[0].offset, hw = late.r[late.n - 1].offset + 1;
	ck_assert_msg(lso == 5 && hw == 20, "offsets: open transaction at %lld, end %lld",
		      (long long)lso, (long long)hw);

	/* read_uncommitted: everything, at once */
	reader ru;
	reader_start(&ru, b, topic, 0, 0);
	reader_poll(&ru, everything.n, NULL, h_scaled_ms(30000));
	expect_recs(&ru.got, &everything, "read_uncommitted with a transaction open");
	reader_stop(&ru);

	/* read_committed: up to the last stable offset, and no further */
	reader rc;
	reader_start(&rc, b, topic, 0, 1);
	reader_poll(&rc, everything.n, NULL, h_scaled_ms(3000));
	expect_recs(&rc.got, &before, "read_committed with a transaction open (3 s)");
	/* the Fetch's LastStableOffset is where librdkafka sees the end */
	ck_assert_msg(rc.eof_offset == lso,
		      "read_committed: partition EOF at offset %lld, expected at the LSO %lld "
		      "(Fetch LastStableOffset)",
		      (long long)rc.eof_offset, (long long)lso);

	/* the end offset by isolation level (ListOffsets v2 isolation_level) */
	int64_t end_c = end_offset(b, topic, 0, 1), end_u = end_offset(b, topic, 0, 0);
	ck_assert_msg(end_c == lso, "read_committed end offset %lld, expected the LSO %lld",
		      (long long)end_c, (long long)lso);
	ck_assert_msg(end_u == hw, "read_uncommitted end offset %lld, expected the HW %lld",
		      (long long)end_u, (long long)hw);

	/* the commit releases the parked read_committed consumer */
	txn_commit(p);
	rd_kafka_destroy(p);
	reader_poll(&rc, everything.n, NULL, h_scaled_ms(30000));
	expect_recs(&rc.got, &everything, "read_committed after the commit");
	reader_stop(&rc);
	/* the marker took offset 20: both ends are past it */
	end_c = end_offset(b, topic, 0, 1);
	end_u = end_offset(b, topic, 0, 0);
	ck_assert_msg(end_c == hw + 1 && end_u == hw + 1,
		      "after the commit: end offsets %lld (read_committed), %lld "
		      "(read_uncommitted), expected %lld (the marker at %lld)",
		      (long long)end_c, (long long)end_u, (long long)hw + 1, (long long)hw);

	recs_free(&before);
	recs_free(&open);
	recs_free(&late);
	recs_free(&everything);
	c_stop_broker(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Consume, transform, produce                                         */
/* ------------------------------------------------------------------ */

#define CTP_NP 3
#define CTP_M 300
#define CTP_BATCH 40

typedef struct ctp {
	gt_member *m;           /* the group member reading the input */
	rd_kafka_t *p;          /* the transactional producer */
	const char *in, *out;
	int64_t start[CTP_NP];  /* where the member must start (committed offsets) */
	int64_t next[CTP_NP];   /* its next offset; -1 before its first record */
} ctp;

static gt_member *ctp_member(const h_broker *b, const char *name, const char *group,
			     const char *in)
{
	gt_member *m = gt_member_new(b, name, group, in, CTP_NP,
				     (const char *const[]){"enable.auto.commit", "false",
							   "isolation.level", "read_committed",
							   NULL});
	gt_subscribe(m);
	return m;
}

/*
 * One transaction: poll up to max input records (waiting up to 30 s for
 * the first), begin, produce "x-<value>" to the same partition of the
 * output, send the offsets after the batch with the member's group
 * metadata, then commit, or (commit = 0) flush and abort, adding the
 * output values to aborted. Returns the number of records in the batch.
 */
static int ctp_batch(ctp *c, int max, int commit, recs *aborted)
{
	rd_kafka_message_t *batch[CTP_BATCH];
	int n = 0, touched[CTP_NP] = {0};
	ck_assert(max > 0 && max <= CTP_BATCH);
	long long deadline = h_now_ms() + h_scaled_ms(30000);
	while (n < max) {
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(c->m->rk, n ? 50 : 200);
		if (!msg) {
			if (n)
				break;
			ck_assert_msg(h_now_ms() < deadline && !c->m->bad[0],
				      "%s: no input record within 30 s (%s)", c->m->name,
				      c->m->bad);
			continue;
		}
		if (msg->err) {
			rd_kafka_resp_err_t err = msg->err;
			rd_kafka_message_destroy(msg);
			if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
				continue;
			ck_abort_msg("%s: consumer error %s", c->m->name, rd_kafka_err2name(err));
		}
		int32_t pt = msg->partition;
		int64_t off = msg->offset;
		ck_assert_msg(pt >= 0 && pt < CTP_NP, "input record of partition %d", (int)pt);
		int64_t want = c->next[pt] < 0 ? c->start[pt] : c->next[pt];
		ck_assert_msg(off == want,
			      "%s: input partition %d: got offset %lld, expected %lld (%s)",
			      c->m->name, (int)pt, (long long)off, (long long)want,
			      c->next[pt] < 0 ? "not resumed from the committed offset"
					      : "records skipped or repeated");
		c->next[pt] = off + 1;
		touched[pt] = 1;
		batch[n++] = msg;
	}

	txn_begin(c->p);
	for (int i = 0; i < n; i++) {
		char val[48];
		int len = snprintf(val, sizeof(val), "x-%.*s", (int)batch[i]->len,
				   (const char *)batch[i]->payload);
		c_msg m = {.topic = c->out,
			   .partition = batch[i]->partition,
			   .value = val,
			   .value_len = (size_t)len};
		c_produce(c->p, &m, NULL);
		if (!commit)
			recs_add(&aborted[batch[i]->partition], -1, val);
	}
	rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(CTP_NP);
	for (int32_t pt = 0; pt < CTP_NP; pt++)
		if (touched[pt])
			rd_kafka_topic_partition_list_add(offs, c->in, pt)->offset = c->next[pt];
	rd_kafka_consumer_group_metadata_t *gmd = rd_kafka_consumer_group_metadata(c->m->rk);
	ck_assert_ptr_nonnull(gmd);
	txn_ok(rd_kafka_send_offsets_to_transaction(c->p, offs, gmd, h_scaled_ms(30000)),
	       "send_offsets_to_transaction");
	rd_kafka_consumer_group_metadata_destroy(gmd);
	rd_kafka_topic_partition_list_destroy(offs);
	if (commit) {
		txn_commit(c->p);
	} else {
		c_flush(c->p, h_scaled_ms(30000)); /* the output is in the log */
		txn_abort(c->p);
	}
	for (int i = 0; i < n; i++)
		rd_kafka_message_destroy(batch[i]);
	return n;
}

/* The group's committed offsets of the input (rd_kafka_committed, an
 * OffsetFetch with require_stable from this read_committed member);
 * RD_KAFKA_OFFSET_INVALID where none. */
static void ctp_committed(gt_member *m, const char *topic, int64_t *off)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(CTP_NP);
	for (int32_t pt = 0; pt < CTP_NP; pt++)
		rd_kafka_topic_partition_list_add(l, topic, pt);
	rd_kafka_resp_err_t err = rd_kafka_committed(m->rk, l, h_scaled_ms(15000));
	ck_assert_msg(err == 0, "rd_kafka_committed: %s", rd_kafka_err2name(err));
	for (int i = 0; i < l->cnt; i++) {
		ck_assert_msg(l->elems[i].err == 0, "rd_kafka_committed: partition %d: %s",
			      (int)l->elems[i].partition, rd_kafka_err2name(l->elems[i].err));
		off[l->elems[i].partition] = l->elems[i].offset;
	}
	rd_kafka_topic_partition_list_destroy(l);
}

/* Consume and transform until the member has consumed total records. */
static void ctp_run(ctp *c, int total)
{
	int done = 0;
	while (done < total)
		done += ctp_batch(c, total - done < CTP_BATCH ? total - done : CTP_BATCH, 1, NULL);
}

static void ctp_test(int abort_one)
{
	h_broker *b = gt_start_broker(NULL);
	const char *in = "ctp-in", *out = "ctp-out", *group = "ctp-group";
	gt_create_topic(b, in, CTP_NP);
	gt_create_topic(b, out, CTP_NP);
	int64_t end[CTP_NP] = {0};
	gt_produce(b, in, CTP_NP, CTP_M, "in", end);

	ctp c = {.p = txn_producer(b, "txn-ctp", NULL), .in = in, .out = out};
	txn_init(c.p, "producer");
	c.m = ctp_member(b, "first", group, in);
	for (int pt = 0; pt < CTP_NP; pt++)
		c.next[pt] = -1;
	recs aborted[CTP_NP] = {{0}};
	int naborted = 0;
	if (!abort_one) {
		ctp_run(&c, CTP_M);
	} else {
		ctp_run(&c, CTP_M / 2);
		int64_t before[CTP_NP], after[CTP_NP];
		ctp_committed(c.m, in, before);
		for (int pt = 0; pt < CTP_NP; pt++) {
			int64_t want = c.next[pt] < 0 ? RD_KAFKA_OFFSET_INVALID : c.next[pt];
			ck_assert_msg(before[pt] == want,
				      "input partition %d: committed offset %lld, expected %lld",
				      pt, (long long)before[pt], (long long)want);
		}
		naborted = ctp_batch(&c, CTP_BATCH, 0, aborted);
		ctp_committed(c.m, in, after);
		for (int pt = 0; pt < CTP_NP; pt++)
			ck_assert_msg(after[pt] == before[pt],
				      "input partition %d: committed offset %lld after the abort, "
				      "expected %lld (the aborted transaction's offsets were "
				      "committed)",
				      pt, (long long)after[pt], (long long)before[pt]);
		/* the next member of the group resumes at the committed offsets */
		gt_close(c.m);
		gt_member_free(c.m);
		c.m = ctp_member(b, "second", group, in);
		int rest = 0;
		for (int pt = 0; pt < CTP_NP; pt++) {
			c.start[pt] = before[pt] < 0 ? 0 : before[pt];
			c.next[pt] = -1;
			rest += (int)(end[pt] - c.start[pt]);
		}
		ck_assert_int_eq(rest, CTP_M - CTP_M / 2);
		ctp_run(&c, rest);
	}
	int64_t got[CTP_NP];
	ctp_committed(c.m, in, got);
	for (int pt = 0; pt < CTP_NP; pt++)
		ck_assert_msg(got[pt] == end[pt],
			      "input partition %d: committed offset %lld at the end, expected %lld",
			      pt, (long long)got[pt], (long long)end[pt]);
	gt_close(c.m);
	gt_member_free(c.m);
	rd_kafka_destroy(c.p);

	/* every input record exactly once in the committed output, in order */
	produce_end(b, out, CTP_NP);
	int seen_aborted = 0;
	for (int32_t pt = 0; pt < CTP_NP; pt++) {
		recs want = {0};
		char val[48];
		for (int i = pt; i < CTP_M; i += CTP_NP) {
			snprintf(val, sizeof(val), "x-in-%d", i);
			recs_add(&want, -1, val);
		}
		expect_part(b, out, pt, 1, "end", &want, "transformed records");
		/* the aborted output is in the log: once aborted, once committed */
		reader r;
		reader_start(&r, b, out, pt, 0);
		reader_poll(&r, 1L << 30, "end", h_scaled_ms(30000));
		ck_assert_msg(r.stopped && r.got.n == want.n + aborted[pt].n,
			      "output partition %d read_uncommitted: %d records, expected %d + %d "
			      "aborted",
			      (int)pt, r.got.n, want.n, aborted[pt].n);
		for (int i = 0; i < aborted[pt].n; i++)
			ck_assert_msg(recs_count(&r.got, aborted[pt].r[i].val) == 2,
				      "output partition %d: the aborted \"%s\" is there %d times, "
				      "expected twice",
				      (int)pt, aborted[pt].r[i].val,
				      recs_count(&r.got, aborted[pt].r[i].val));
		seen_aborted += aborted[pt].n;
		reader_stop(&r);
		recs_free(&want);
		recs_free(&aborted[pt]);
	}
	ck_assert_int_eq(seen_aborted, naborted);
	c_stop_broker(b);
}

START_TEST(test_consume_transform_produce)
{
	ctp_test(0);
}
END_TEST

START_TEST(test_consume_transform_produce_abort)
{
	ctp_test(1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Zombie fencing                                                      */
/* ------------------------------------------------------------------ */

static int is_fencing_error(rd_kafka_resp_err_t err)
{
	return err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
	       err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

START_TEST(test_fencing)
{
	h_broker *b = c_start_broker(NULL);
	const char *topic = "txn-fence", *id = "txn-zombie";
	create_topic(b, topic, 2);
	rd_kafka_t *p1 = txn_producer(b, id, NULL);
	txn_init(p1, "P1");
	txn_begin(p1);
	c_delivery dr1[5];
	produce_vals(p1, topic, 0, "z1", 5, dr1);
	c_flush(p1, h_scaled_ms(30000));
	recs zombie = {0};
	check_delivered(dr1, 5, 0, "z1", &zombie);

	/* P2 takes over the transactional id: P1's transaction is aborted */
	rd_kafka_t *p2 = txn_producer(b, id, NULL);
	txn_init(p2, "P2 (same transactional.id as the open P1)");

	/* P1 goes on as if nothing happened */
	c_delivery late;
	c_msg m = {.topic = topic, .partition = 0, .value = "z1-late", .value_len = 7};
	c_produce(p1, &m, &late);
	rd_kafka_flush(p1, h_scaled_ms(10000));
	rd_kafka_error_t *e = rd_kafka_commit_transaction(p1, h_scaled_ms(15000));
	ck_assert_msg(e != NULL, "the fenced producer P1 committed its transaction");
	fprintf(stderr, "fencing: P1's commit: %s (%s)%s%s\n", rd_kafka_error_name(e),
		rd_kafka_error_string(e), rd_kafka_error_is_fatal(e) ? " fatal" : "",
		rd_kafka_error_txn_requires_abort(e) ? " requires abort" : "");
	ck_assert_msg(rd_kafka_error_is_fatal(e),
		      "P1's commit failed with %s (%s), not a fatal error%s",
		      rd_kafka_error_name(e), rd_kafka_error_string(e),
		      rd_kafka_error_txn_requires_abort(e) ? " but an abortable one" : "");
	rd_kafka_error_destroy(e);
	char errstr[512];
	rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(p1, errstr, sizeof(errstr));
	ck_assert_msg(is_fencing_error(fatal), "P1's fatal error is %s (%s), not a fencing error",
		      rd_kafka_err2name(fatal), errstr);
	ck_assert_msg(!(late.done && late.err == 0),
		      "the fenced producer's late record was written at offset %lld",
		      (long long)late.offset);
	rd_kafka_destroy(p1);

	/* P2 works */
	txn_begin(p2);
	c_delivery dr2[2][5];
	produce_vals(p2, topic, 0, "z2-p0", 5, dr2[0]);
	produce_vals(p2, topic, 1, "z2-p1", 5, dr2[1]);
	c_flush(p2, h_scaled_ms(30000));
	recs good[2] = {{0}};
	check_delivered(dr2[0], 5, 0, "z2-p0", &good[0]);
	check_delivered(dr2[1], 5, 1, "z2-p1", &good[1]);
	txn_commit(p2);
	rd_kafka_destroy(p2);

	produce_end(b, topic, 2);
	expect_part(b, topic, 0, 1, "end", &good[0], "P1 fenced, P2 committed");
	expect_part(b, topic, 1, 1, "end", &good[1], "P2 committed");
	for (int i = 0; i < good[0].n; i++)
		recs_add(&zombie, good[0].r[i].offset, good[0].r[i].val);
	expect_part(b, topic, 0, 0, "end", &zombie,
		    "P1's aborted records in the log, its late record not");
	recs_free(&zombie);
	recs_free(&good[0]);
	recs_free(&good[1]);
	c_stop_broker(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* An abandoned transaction                                            */
/* ------------------------------------------------------------------ */

static const char *const fast_abort[] = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=500", NULL};

START_TEST(test_abandoned)
{
	h_broker *b = c_start_broker(fast_abort);
	const char *topic = "txn-abandoned";
	create_topic(b, topic, 1);
	recs visible = {0}, everything = {0};
	plain_produce(b, topic, 0, "before", 3, &visible);

	abandoner a = abandoner_start(b, "txn-abandoned", 2000, topic, 0, "lost", 10);
	abandoner_wait_ready(&a, "abandoned producer");
	long long t0 = h_now_ms();
	abandoner_kill(&a);
	recs after = {0};
	plain_produce(b, topic, 0, "after", 5, &after);

	/* read_committed gets past the abandoned records once they are aborted */
	reader rc;
	reader_start(&rc, b, topic, 0, 1);
	for (int i = 0; i < after.n; i++)
		recs_add(&visible, after.r[i].offset, after.r[i].val);
	reader_poll(&rc, visible.n, NULL, h_scaled_ms(15000));
	long long took = h_now_ms() - t0;
	fprintf(stderr, "abandoned: read_committed got %d of %d records %lld ms after the kill\n",
		rc.got.n, visible.n, took);
	expect_recs(&rc.got, &visible,
		    "read_committed, a transaction abandoned with transaction.timeout.ms=2000");
	reader_stop(&rc);

	/* the abandoned records are in the log between */
	reader ru;
	reader_start(&ru, b, topic, 0, 0);
	reader_poll(&ru, visible.n + 10, NULL, h_scaled_ms(30000));
	for (int i = 0; i < 3; i++)
		recs_add(&everything, visible.r[i].offset, visible.r[i].val);
	for (int i = 0; i < 10; i++) {
		char val[48];
		snprintf(val, sizeof(val), "lost-%d", i);
		recs_add(&everything, 3 + i, val);
	}
	for (int i = 0; i < after.n; i++)
		recs_add(&everything, after.r[i].offset, after.r[i].val);
	expect_recs(&ru.got, &everything, "read_uncommitted, the abandoned records");
	reader_stop(&ru);
	recs_free(&visible);
	recs_free(&everything);
	recs_free(&after);
	c_stop_broker(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* kill -9 and restart                                                 */
/* ------------------------------------------------------------------ */

START_TEST(test_restart)
{
	h_broker *b = c_start_broker(fast_abort);
	const char *topic = "txn-restart", *id = "txn-survivor";
	create_topic(b, topic, 3);
	recs committed = {0}, all = {0};
	rd_kafka_t *p = txn_producer(b, id, NULL);
	txn_init(p, "producer");
	const char *tags[] = {"c1", "a1", "c2"};
	for (int t = 0; t < 3; t++) {
		c_delivery dr[5];
		txn_begin(p);
		produce_vals(p, topic, 0, tags[t], 5, dr);
		c_flush(p, h_scaled_ms(30000));
		check_delivered(dr, 5, 0, tags[t], &all);
		if (t == 1) {
			txn_abort(p);
		} else {
			check_delivered(dr, 5, 0, tags[t], &committed);
			txn_commit(p);
		}
	}
	rd_kafka_destroy(p);
	int64_t pid0, pid1;
	int16_t epoch0, epoch1;
	c_init_producer_id(b, id, &pid0, &epoch0);

	/* two transactions left open by producers that are gone: one to
	 * time out, one whose transactional id comes back */
	int orphan_ms = h_scaled_ms(5000);
	abandoner ot = abandoner_start(b, "txn-orphan-timeout", orphan_ms, topic, 1, "ot", 5);
	abandoner orr = abandoner_start(b, "txn-orphan-reinit", 600000, topic, 2, "or", 5);
	abandoner_wait_ready(&ot, "orphan (timeout)");
	abandoner_wait_ready(&orr, "orphan (re-init)");
	abandoner_kill(&ot);
	abandoner_kill(&orr);
	/* still open (else the test would prove nothing about the restart) */
	int64_t lso = end_offset(b, topic, 1, 1);
	ck_assert_msg(lso == 0,
		      "the orphaned transaction already ended before the kill -9 (LSO %lld)",
		      (long long)lso);

	ck_assert_msg(h_broker_kill(b) == 0, "broker was not running before kill -9");
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart after kill -9 (log above)");

	/* the coordinator still knows the transactional id */
	c_init_producer_id(b, id, &pid1, &epoch1);
	ck_assert_msg(pid1 == pid0 && epoch1 == epoch0 + 1,
		      "InitProducerId for %s after kill -9: producer id %lld epoch %d, expected "
		      "%lld epoch %d (the same id, the epoch bumped)",
		      id, (long long)pid1, epoch1, (long long)pid0, epoch0 + 1);
	p = txn_producer(b, id, NULL);
	txn_init(p, "producer after the restart");
	c_delivery dr[5];
	txn_begin(p);
	produce_vals(p, topic, 0, "c3", 5, dr);
	c_flush(p, h_scaled_ms(30000));
	check_delivered(dr, 5, 0, "c3", &committed);
	check_delivered(dr, 5, 0, "c3", &all);
	txn_commit(p);
	rd_kafka_destroy(p);

	/* the re-initialized id aborts its old transaction at once */
	recs reinit = {0}, reinit_all = {0}, orphan_t = {0};
	for (int i = 0; i < 5; i++) {
		char val[48];
		snprintf(val, sizeof(val), "or-%d", i);
		recs_add(&reinit_all, i, val);
		snprintf(val, sizeof(val), "ot-%d", i);
		recs_add(&orphan_t, i, val);
	}
	p = txn_producer(b, "txn-orphan-reinit", NULL);
	txn_init(p, "the orphan's transactional.id again");
	txn_begin(p);
	produce_vals(p, topic, 2, "r2", 5, dr);
	c_flush(p, h_scaled_ms(30000));
	check_delivered(dr, 5, 2, "r2", &reinit);
	check_delivered(dr, 5, 2, "r2", &reinit_all);
	txn_commit(p);
	rd_kafka_destroy(p);

	produce_end(b, topic, 3);
	expect_part(b, topic, 0, 1, "end", &committed, "committed before and after kill -9");
	expect_part(b, topic, 0, 0, "end", &all, "all records before and after kill -9");
	recs none = {0};
	expect_part(b, topic, 1, 1, "end", &none, "the orphan aborted after its timeout");
	expect_part(b, topic, 1, 0, "end", &orphan_t, "the orphan's records in the log");
	expect_part(b, topic, 2, 1, "end", &reinit, "the orphan aborted by a re-init");
	expect_part(b, topic, 2, 0, "end", &reinit_all, "the orphan's records in the log");
	recs_free(&committed);
	recs_free(&all);
	recs_free(&reinit);
	recs_free(&reinit_all);
	recs_free(&orphan_t);
	c_stop_broker(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* OffsetFetch require_stable through librdkafka                       */
/* ------------------------------------------------------------------ */

/* rd_kafka_committed of partition 0 of topic: the request's error, the
 * partition's error and offset. */
static rd_kafka_resp_err_t committed0(rd_kafka_t *c, const char *topic, int timeout_ms,
				      rd_kafka_resp_err_t *perr, int64_t *off)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0);
	rd_kafka_resp_err_t err = rd_kafka_committed(c, l, timeout_ms);
	*perr = l->elems[0].err;
	*off = l->elems[0].offset;
	rd_kafka_topic_partition_list_destroy(l);
	return err;
}

static void expect_committed(rd_kafka_t *c, const char *topic, int64_t want, const char *what)
{
	rd_kafka_resp_err_t perr;
	int64_t off;
	rd_kafka_resp_err_t err = committed0(c, topic, h_scaled_ms(15000), &perr, &off);
	ck_assert_msg(err == 0 && perr == 0 && off == want,
		      "%s: rd_kafka_committed: %s, partition: %s, offset %lld, expected %lld", what,
		      rd_kafka_err2name(err), rd_kafka_err2name(perr), (long long)off,
		      (long long)want);
}

/* Begin a transaction of offsets only: offset for partition 0 of topic in
 * group (a group without members: generation -1). The caller ends it. */
static void txn_offsets(rd_kafka_t *p, const char *group, const char *topic, int64_t offset)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, topic, 0)->offset = offset;
	rd_kafka_consumer_group_metadata_t *gmd = rd_kafka_consumer_group_metadata_new(group);
	txn_begin(p);
	txn_ok(rd_kafka_send_offsets_to_transaction(p, l, gmd, h_scaled_ms(30000)),
	       "send_offsets_to_transaction");
	rd_kafka_consumer_group_metadata_destroy(gmd);
	rd_kafka_topic_partition_list_destroy(l);
}

START_TEST(test_require_stable)
{
	h_broker *b = c_start_broker(NULL);
	const char *topic = "txn-stable", *group = "txn-stable-group";
	create_topic(b, topic, 1);
	plain_produce(b, topic, 0, "r", 10, NULL);
	rd_kafka_t *rc = c_consumer(b, (const char *const[]){"group.id", group, "isolation.level",
							   "read_committed", NULL});
	rd_kafka_t *ru = c_consumer(b, (const char *const[]){"group.id", group, "isolation.level",
							   "read_uncommitted", NULL});
	rd_kafka_t *p = txn_producer(b, "txn-stable", NULL);
	txn_init(p, "producer");

	txn_offsets(p, group, topic, 3);
	txn_commit(p);
	expect_committed(rc, topic, 3, "read_committed after the first commit");
	expect_committed(ru, topic, 3, "read_uncommitted after the first commit");

	/* 7 pending */
	txn_offsets(p, group, topic, 7);
	expect_committed(ru, topic, 3, "read_uncommitted while 7 is pending");
	rd_kafka_resp_err_t perr;
	int64_t off;
	rd_kafka_resp_err_t err = committed0(rc, topic, h_scaled_ms(3000), &perr, &off);
	fprintf(stderr,
		"require_stable: read_committed while pending: %s, partition %s, offset %lld\n",
		rd_kafka_err2name(err), rd_kafka_err2name(perr), (long long)off);
	ck_assert_msg(err != 0 || perr != 0,
		      "read_committed (require_stable) got offset %lld while a transactional "
		      "commit was pending, expected UNSTABLE_OFFSET_COMMIT",
		      (long long)off);
	ck_assert_msg(err == RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT ||
			  perr == RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT ||
			  err == RD_KAFKA_RESP_ERR__TIMED_OUT,
		      "read_committed while pending: %s / partition %s, expected "
		      "UNSTABLE_OFFSET_COMMIT (or librdkafka's retries of it timing out)",
		      rd_kafka_err2name(err), rd_kafka_err2name(perr));
	txn_commit(p);
	expect_committed(rc, topic, 7, "read_committed after the second commit");
	expect_committed(ru, topic, 7, "read_uncommitted after the second commit");

	/* 9 aborted */
	txn_offsets(p, group, topic, 9);
	txn_abort(p);
	expect_committed(rc, topic, 7, "read_committed after an abort");
	expect_committed(ru, topic, 7, "read_uncommitted after an abort");

	rd_kafka_destroy(p);
	rd_kafka_destroy(rc);
	rd_kafka_destroy(ru);
	c_stop_broker(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("transactions");
	TCase *tc = tcase_create("transactions");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_commit_abort);
	tcase_add_test(tc, test_last_stable_offset);
	tcase_add_test(tc, test_consume_transform_produce);
	tcase_add_test(tc, test_consume_transform_produce_abort);
	tcase_add_test(tc, test_fencing);
	tcase_add_test(tc, test_abandoned);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_require_stable);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], CHILD_ARG) == 0)
		return child_main(argc, argv);
	return c_run_suite(make_suite());
}
