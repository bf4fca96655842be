/*
 * compaction_internal.c - the internal topics (__consumer_offsets and
 * __transaction_state, cleanup.policy=compact) load correctly after the log
 * cleaner compacted them (Kafka's GroupMetadataManager and
 * TransactionStateManager load from a compacted log).
 *
 * The broker runs with one partition per internal topic, 1 MiB segments
 * (offsets.topic.segment.bytes, transaction.state.log.segment.bytes: the
 * smallest segment.bytes a topic takes; Kafka's broker configs accept 1, but
 * LogConfig's segment.bytes floor is 1 MiB since Kafka 4.0), segments rolled
 * every 300 ms (log.roll.ms, which the internal topics inherit),
 * log.cleaner.backoff.ms=100 and log.cleaner.min.cleanable.ratio=0.01, so
 * each workload below fills dozens of segments and the cleaner compacts them
 * while it runs.
 *
 * A round of work: a group commits offsets of 3 partitions thousands of
 * times (OffsetCommit, with metadata); a transactional producer runs
 * hundreds of transactions, each one record to an output topic and
 * send_offsets_to_transaction for a second group, every fifth aborted; then,
 * with filler (another group's commits, InitProducerId of other
 * transactional ids) every 200 ms so that segments keep rolling, the test
 * waits until the broker's log says that both internal partitions were
 * cleaned past the end of the round (its per-round line "log cleaner:
 * T-P cleaned up to offset X"), and that their .log files shrank.
 *
 * Then the broker restarts, once with SIGTERM and once (after a second
 * round) with kill -9, and each time:
 *  - the first group's committed offsets and metadata are the last ones
 *    committed; the second group's are those of the last committed
 *    transaction of each partition (aborted ones never show);
 *  - InitProducerId for the transactional id keeps its producer id and
 *    bumps the epoch by one (the coordinator's state survived), and
 *    librdkafka's init_transactions and a commit work after it;
 *  - read_committed consumers of the output topic see exactly the
 *    committed records, in order;
 *  - the broker loaded without warnings of malformed records or failures.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define DATA "ci-data"  /* the partitions whose offsets are committed */
#define OUT "ci-out"    /* the transactional producer's output */
#define NP 3
#define GROUP "ci-commits"
#define TXGROUP "ci-txgroup"
#define TXID "ci-txn"
#define OFFSETS_TOPIC "__consumer_offsets"
#define STATE_TOPIC "__transaction_state"
#define MAX_OUT 4096 /* records expected per output partition */

static const char *const overrides[] = {
	"offsets.topic.num.partitions=1",
	"transaction.state.log.num.partitions=1",
	"offsets.topic.segment.bytes=1048576",
	"transaction.state.log.segment.bytes=1048576",
	"log.roll.ms=300",
	"log.cleaner.backoff.ms=100",
	"log.cleaner.min.cleanable.ratio=0.01",
	NULL
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* What the test expects to find. */
typedef struct expect {
	int64_t commit[NP];       /* GROUP's last committed offsets */
	char meta[NP][32];        /* and their metadata */
	int64_t txcommit[NP];     /* TXGROUP's offsets of the last committed transaction */
	char out[NP][MAX_OUT][32]; /* committed values of OUT, in order */
	int nout[NP];
	int txn_seq;              /* transactions run so far */
	int64_t pid;              /* TXID's producer id and epoch (raw InitProducerId) */
	int16_t epoch;
} expect;

/* ---- files and the broker log ---- */

/* Bytes of the .log files of topic-0. */
static int64_t log_bytes(const h_broker *b, const char *topic)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s-0", b->dir, topic);
	DIR *d = opendir(path);
	ck_assert_msg(d != NULL, "cannot open %s", path);
	int64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l != 24 || strcmp(e->d_name + 20, ".log") != 0)
			continue;
		char f[PATH_MAX + 600];
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		struct stat st;
		if (stat(f, &st) == 0)
			total += st.st_size;
	}
	closedir(d);
	return total;
}

/* The highest "cleaned up to offset" the broker log names for topic-0
 * (-1 when none); *rounds gets the number of such lines. */
static int64_t cleaned_to(const h_broker *b, const char *topic, int *rounds)
{
	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	char needle[128];
	int n = snprintf(needle, sizeof needle, "log cleaner: %s-0 cleaned up to offset ", topic);
	int64_t best = -1;
	*rounds = 0;
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += n) {
		int64_t off = strtoll(p + n, NULL, 10);
		(*rounds)++;
		if (off > best)
			best = off;
	}
	free(log);
	return best;
}

/* Fail on loader warnings or failures in the broker log. */
static void check_log_clean(const h_broker *b)
{
	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	static const char *const bad[] = { "malformed record", "loading __", "cleaning failed",
					   "unknown key version", NULL };
	for (int i = 0; bad[i]; i++) {
		const char *p = strstr(log, bad[i]);
		if (p) {
			const char *s = p;
			while (s > log && s[-1] != '\n')
				s--;
			const char *e = strchr(p, '\n');
			ck_abort_msg("broker log: %.*s", (int)(e ? e - s : (long)strlen(s)), s);
		}
	}
	free(log);
}

/* The high watermark of topic-0. */
static int64_t high_watermark(const h_broker *b, const char *topic)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo, hi;
	rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(c, topic, 0, &lo, &hi,
								   h_scaled_ms(15000));
	ck_assert_msg(err == 0, "watermarks of %s-0: %s", topic, rd_kafka_err2name(err));
	rd_kafka_destroy(c);
	return hi;
}

/* ---- raw InitProducerId (v4: a new producer instance) ---- */


/* ---- librdkafka helpers ---- */

static void txn_ok(rd_kafka_error_t *e, const char *what)
{
	if (!e)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "%s: %s (%s)%s", what, rd_kafka_error_name(e),
		 rd_kafka_error_string(e), rd_kafka_error_is_fatal(e) ? " fatal" : "");
	rd_kafka_error_destroy(e);
	ck_abort_msg("%s", msg);
}

static rd_kafka_t *txn_producer(const h_broker *b)
{
	return c_producer(b, (const char *const[]){ "enable.idempotence", "true", "acks", "all",
						    "linger.ms", "0", "transactional.id", TXID,
						    NULL });
}

static void create_topics(const h_broker *b)
{
	rd_kafka_t *p = c_producer(b, NULL);
	char err[256];
	const char *names[] = { DATA, OUT };
	for (int i = 0; i < 2; i++) {
		rd_kafka_resp_err_t e = c_create_topic(p, names[i], NP, 1, NULL, err, sizeof err);
		ck_assert_msg(e == 0, "CreateTopics %s: %s %s", names[i], rd_kafka_err2name(e), err);
		c_wait_topic(p, names[i], NP, h_scaled_ms(10000));
	}
	rd_kafka_destroy(p);
}

/* Commit offsets of DATA's NP partitions for group, n times; the last
 * commit is recorded in ex (when not NULL). */
static void commit_many(const h_broker *b, const char *group, int round, int n, expect *ex)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){ "group.id", group, NULL });
	for (int i = 1; i <= n; i++) {
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NP);
		char meta[NP][32];
		for (int p = 0; p < NP; p++) {
			rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, DATA, p);
			tp->offset = (int64_t)round * 1000000 + (int64_t)(p + 1) * i;
			snprintf(meta[p], sizeof meta[p], "r%d-i%d-p%d", round, i, p);
			tp->metadata = strdup(meta[p]);
			tp->metadata_size = strlen(meta[p]);
		}
		rd_kafka_resp_err_t err = rd_kafka_commit(c, l, 0);
		for (int p = 0; !err && p < NP; p++)
			err = l->elems[p].err;
		ck_assert_msg(err == 0, "commit %d of %s: %s", i, group, rd_kafka_err2name(err));
		if (ex && i == n)
			for (int p = 0; p < NP; p++) {
				ex->commit[p] = l->elems[p].offset;
				memcpy(ex->meta[p], meta[p], sizeof ex->meta[p]);
			}
		rd_kafka_topic_partition_list_destroy(l);
	}
	rd_kafka_destroy(c);
}

/* n transactions of TXID: each one record to OUT partition (seq % NP)
 * and TXGROUP's offset of DATA partition (seq % NP); every fifth aborted.
 * Then a plain "end-<round>" record in each OUT partition. */
static void transactions(const h_broker *b, int round, int n, expect *ex)
{
	rd_kafka_t *p = txn_producer(b);
	txn_ok(rd_kafka_init_transactions(p, h_scaled_ms(30000)), "init_transactions");
	rd_kafka_consumer_group_metadata_t *gmd = rd_kafka_consumer_group_metadata_new(TXGROUP);
	for (int i = 0; i < n; i++) {
		int seq = ex->txn_seq++;
		int part = seq % NP;
		bool abort = seq % 5 == 4;
		char val[32];
		snprintf(val, sizeof val, "t%d-%d", round, seq);
		txn_ok(rd_kafka_begin_transaction(p), "begin_transaction");
		c_delivery d;
		c_msg m = { .topic = OUT, .partition = part, .key = "k", .key_len = 1, .value = val,
			    .value_len = strlen(val) };
		c_produce(p, &m, &d);
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
		int64_t off = 500000 + seq;
		rd_kafka_topic_partition_list_add(l, DATA, part)->offset = off;
		txn_ok(rd_kafka_send_offsets_to_transaction(p, l, gmd, h_scaled_ms(30000)),
		       "send_offsets_to_transaction");
		rd_kafka_topic_partition_list_destroy(l);
		if (abort) {
			c_flush(p, h_scaled_ms(30000)); /* the record is in the log */
			txn_ok(rd_kafka_abort_transaction(p, h_scaled_ms(30000)), "abort_transaction");
		} else {
			txn_ok(rd_kafka_commit_transaction(p, h_scaled_ms(30000)), "commit_transaction");
			ck_assert_msg(d.done && d.err == 0, "transactional record %s: %s", val,
				      rd_kafka_err2name(d.err));
			ck_assert_int_lt(ex->nout[part], MAX_OUT - 1);
			snprintf(ex->out[part][ex->nout[part]++], 32, "%s", val);
			ex->txcommit[part] = off;
		}
	}
	rd_kafka_consumer_group_metadata_destroy(gmd);
	rd_kafka_destroy(p);
	/* the end marks of this round, plain */
	rd_kafka_t *pp = c_producer(b, NULL);
	for (int part = 0; part < NP; part++) {
		char val[32];
		snprintf(val, sizeof val, "end-%d", round);
		c_delivery d;
		c_msg m = { .topic = OUT, .partition = part, .key = "e", .key_len = 1, .value = val,
			    .value_len = strlen(val) };
		c_produce(pp, &m, &d);
		c_flush(pp, h_scaled_ms(30000));
		ck_assert_msg(d.err == 0, "end record: %s", rd_kafka_err2name(d.err));
		snprintf(ex->out[part][ex->nout[part]++], 32, "%s", val);
	}
	rd_kafka_destroy(pp);
}

/* ---- a round and the checks ---- */

/* Whether the broker log says topic-0 was cleaned up to past or beyond
 * and its .log files hold fewer bytes than its records took when written
 * (at least min_record_bytes an offset, below the high watermark). */
static bool cleaned(const h_broker *b, const char *topic, int64_t past, int64_t min_record_bytes,
		    char *why, size_t whysize)
{
	int64_t before_bytes = high_watermark(b, topic) * min_record_bytes;
	int rounds;
	int64_t to = cleaned_to(b, topic, &rounds);
	int64_t bytes = log_bytes(b, topic);
	snprintf(why, whysize,
		 "%s-0: the broker log says cleaned up to offset %" PRId64 " (%d rounds), the round "
		 "ended at %" PRId64 "; %" PRId64 " bytes of .log files, %" PRId64 " when written",
		 topic, to, rounds, past, bytes, before_bytes);
	return to >= past && bytes < before_bytes;
}

/* One filler record in each internal topic. */
static void filler(const h_broker *b, rd_kafka_t *c, int round, int i)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, DATA, 0)->offset = i;
	rd_kafka_resp_err_t err = rd_kafka_commit(c, l, 0);
	if (!err)
		err = l->elems[0].err;
	ck_assert_msg(err == 0, "filler commit: %s", rd_kafka_err2name(err));
	rd_kafka_topic_partition_list_destroy(l);
	char id[32];
	snprintf(id, sizeof id, "ci-filler-%d-%d", round, i);
	int64_t pid;
	int16_t epoch;
	c_init_producer_id(b, id, &pid, &epoch);
}

static void work_round(const h_broker *b, int round, int ncommits, int ntxns, expect *ex)
{
	commit_many(b, GROUP, round, ncommits, ex);
	transactions(b, round, ntxns, ex);
	/* the producer id and epoch the coordinator has now (its record is
	 * the round's last in __transaction_state) */
	c_init_producer_id(b, TXID, &ex->pid, &ex->epoch);
	/* the end of the round's records in the internal topics */
	int64_t co_end = high_watermark(b, OFFSETS_TOPIC);
	int64_t ts_end = high_watermark(b, STATE_TOPIC);
	/* filler keeps segments rolling (log.roll.ms) until the cleaner got
	 * past the round; an offset commit record takes more than 50 bytes,
	 * a transaction state record (one a batch) more than 100 */
	rd_kafka_t *c = c_consumer(b, (const char *const[]){ "group.id", "ci-filler", NULL });
	long long deadline = h_now_ms() + h_scaled_ms(120000);
	char why1[300] = "", why2[300] = "";
	bool done = false;
	for (int i = 0; !done && h_now_ms() < deadline; i++) {
		filler(b, c, round, i);
		sleep_ms(200);
		bool c1 = cleaned(b, OFFSETS_TOPIC, co_end, 50, why1, sizeof why1);
		bool c2 = cleaned(b, STATE_TOPIC, ts_end, 100, why2, sizeof why2);
		done = c1 && c2;
	}
	rd_kafka_destroy(c);
	ck_assert_msg(done, "not cleaned in time: %s; %s", why1, why2);
	fprintf(stderr, "compaction_internal: round %d: %s\ncompaction_internal: round %d: %s\n", round,
		why1, round, why2);
}

static void expect_committed(const h_broker *b, const char *group, const int64_t *want,
			     char (*meta)[32], const char *when)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){ "group.id", group, NULL });
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NP);
	for (int p = 0; p < NP; p++)
		rd_kafka_topic_partition_list_add(l, DATA, p);
	rd_kafka_resp_err_t err = rd_kafka_committed(c, l, h_scaled_ms(30000));
	ck_assert_msg(err == 0, "%s: committed offsets of %s: %s", when, group, rd_kafka_err2name(err));
	for (int p = 0; p < NP; p++) {
		const rd_kafka_topic_partition_t *tp = &l->elems[p];
		ck_assert_msg(tp->err == 0 && tp->offset == want[p],
			      "%s: group %s partition %d: offset %" PRId64 " (%s), expected %" PRId64,
			      when, group, p, tp->offset, rd_kafka_err2name(tp->err), want[p]);
		if (meta)
			ck_assert_msg(tp->metadata_size == strlen(meta[p]) &&
					      memcmp(tp->metadata, meta[p], tp->metadata_size) == 0,
				      "%s: group %s partition %d: metadata '%.*s', expected '%s'", when,
				      group, p, (int)tp->metadata_size,
				      tp->metadata ? (const char *)tp->metadata : "", meta[p]);
	}
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_destroy(c);
}

typedef struct seen {
	const expect *ex;
	int part;
	int n;
	char first_wrong[160];
	const char *stop_at;
} seen;

static int on_out(const rd_kafka_message_t *m, void *opaque)
{
	seen *s = opaque;
	char val[40];
	snprintf(val, sizeof val, "%.*s", (int)m->len, m->payload ? (const char *)m->payload : "");
	if (!s->first_wrong[0] &&
	    (s->n >= s->ex->nout[s->part] || strcmp(val, s->ex->out[s->part][s->n]) != 0))
		snprintf(s->first_wrong, sizeof s->first_wrong,
			 "record %d at offset %" PRId64 " is '%s', expected '%s'", s->n, m->offset, val,
			 s->n < s->ex->nout[s->part] ? s->ex->out[s->part][s->n] : "(none)");
	s->n++;
	return strcmp(val, s->stop_at) == 0;
}

static void expect_out(const h_broker *b, const expect *ex, const char *when)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){ "isolation.level", "read_committed", NULL });
	for (int p = 0; p < NP; p++) {
		static seen s;
		memset(&s, 0, sizeof s);
		s.ex = ex;
		s.part = p;
		s.stop_at = ex->out[p][ex->nout[p] - 1];
		c_consume(c, OUT, p, RD_KAFKA_OFFSET_BEGINNING, LONG_MAX, h_scaled_ms(60000), on_out, &s);
		ck_assert_msg(!s.first_wrong[0], "%s: read_committed %s-%d: %s", when, OUT, p,
			      s.first_wrong);
		ck_assert_msg(s.n == ex->nout[p], "%s: read_committed %s-%d: %d records, expected %d",
			      when, OUT, p, s.n, ex->nout[p]);
	}
	rd_kafka_destroy(c);
}

/* Everything the test expects after a restart; then one more committed
 * transaction through librdkafka. */
static void check_state(const h_broker *b, expect *ex, int round, const char *when)
{
	check_log_clean(b);
	expect_committed(b, GROUP, ex->commit, ex->meta, when);
	expect_committed(b, TXGROUP, ex->txcommit, NULL, when);
	expect_out(b, ex, when);
	int64_t pid;
	int16_t epoch;
	c_init_producer_id(b, TXID, &pid, &epoch);
	ck_assert_msg(pid == ex->pid && epoch == ex->epoch + 1,
		      "%s: InitProducerId for %s: producer id %" PRId64 " epoch %d, expected %" PRId64
		      " epoch %d (the same id, the epoch bumped)",
		      when, TXID, pid, (int)epoch, ex->pid, ex->epoch + 1);
	ex->epoch = epoch;
	/* librdkafka's producer goes on from there */
	transactions(b, round, 2, ex);
	expect_committed(b, TXGROUP, ex->txcommit, NULL, when);
	expect_out(b, ex, when);
}

START_TEST(internal_topics_load_after_cleaning)
{
	h_broker *b = c_start_broker(overrides);
	create_topics(b);
	static expect ex;
	memset(&ex, 0, sizeof ex);

	work_round(b, 1, 3000, 300, &ex);
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the broker did not stop cleanly (status 0x%x)", st);
	ck_assert_int_eq(h_broker_restart(b), 0);
	check_state(b, &ex, 91, "after SIGTERM and restart");

	work_round(b, 2, 1500, 150, &ex);
	ck_assert_int_eq(h_broker_kill(b), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	check_state(b, &ex, 92, "after kill -9 and restart");
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compaction_internal");
	TCase *tc = tcase_create("compaction_internal");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, internal_topics_load_after_cleaning);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
