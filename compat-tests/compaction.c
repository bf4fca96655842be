/*
 * compaction.c - log compaction against the real broker with librdkafka:
 * a topic with cleanup.policy=compact, segment.ms=300 (small segments),
 * min.cleanable.dirty.ratio=0.01, delete.retention.ms=2000 and the cleaner
 * checking every 200 ms (log.cleaner.backoff.ms):
 *  - many updates per key and tombstones: once the partition's files
 *    shrink, a consumer from the beginning sees each key once, with its
 *    latest value at the offset the producer was given; the tombstones are
 *    still there right after the first round, and gone (with every value of
 *    their keys) once delete.retention.ms has passed and a later round ran;
 *  - a record without a key is refused with INVALID_RECORD (Kafka's
 *    LogValidator: "Compacted topic cannot accept message without key");
 *  - kill -9 while the cleaner works, restarts, and again: every key's
 *    latest value is still there at its offset, no .cleaned/.swap left.
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
#include <time.h>
#include <unistd.h>

#include "compat-tests/compat.h"

#define NKEYS 50
#define NTOMB 10 /* keys 0..NTOMB-1 end with a tombstone */

static const char *const overrides[] = { "log.cleaner.backoff.ms=200", NULL };
static const char *const topic_configs[] = {
	"cleanup.policy", "compact", "segment.ms", "300", "min.cleanable.dirty.ratio", "0.01",
	"delete.retention.ms", "2000", NULL
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Bytes of the .log files of topic-0, and whether temp files are there. */
static int64_t log_bytes(const h_broker *b, const char *topic, int *temp_files)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s/%s-0", b->dir, topic);
	DIR *d = opendir(path);
	ck_assert_msg(d != NULL, "cannot open %s", path);
	int64_t total = 0;
	if (temp_files)
		*temp_files = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (temp_files && ((l > 8 && strcmp(e->d_name + l - 8, ".cleaned") == 0) ||
				   (l > 5 && strcmp(e->d_name + l - 5, ".swap") == 0)))
			(*temp_files)++;
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

typedef struct expect {
	int64_t offset[NKEYS + 100]; /* latest offset of each key, -1 none */
	bool tombstone[NKEYS + 100];
	char value[NKEYS + 100][32];
	int64_t last; /* last offset produced */
} expect;

/* Produce value "r<round>-k<key>" (or a tombstone) for keys [from, to). */
static void produce_round(rd_kafka_t *rk, const char *topic, int round, int from, int to, bool tomb,
			  expect *ex)
{
	static c_delivery d[NKEYS + 100];
	char keys[NKEYS + 100][16], vals[NKEYS + 100][300];
	for (int k = from; k < to; k++) {
		snprintf(keys[k], sizeof keys[k], "key-%d", k);
		int n = snprintf(vals[k], sizeof vals[k], "r%d-k%d", round, k);
		memset(vals[k] + n, 'x', 200); /* some bulk */
		c_msg m = { .topic = topic, .partition = 0, .key = keys[k], .key_len = strlen(keys[k]),
			    .value = tomb ? NULL : vals[k], .value_len = tomb ? 0 : (size_t)n + 200 };
		memset(&d[k], 0, sizeof d[k]);
		c_produce(rk, &m, &d[k]);
	}
	c_flush(rk, 30000);
	for (int k = from; k < to; k++) {
		ck_assert_msg(d[k].err == 0, "produce: %s", rd_kafka_err2str(d[k].err));
		ex->offset[k] = d[k].offset;
		ex->tombstone[k] = tomb;
		snprintf(ex->value[k], sizeof ex->value[k], "r%d-k%d", round, k);
		if (d[k].offset > ex->last)
			ex->last = d[k].offset;
	}
}

typedef struct seen {
	int64_t last;
	int n;
	int per_key[NKEYS + 100];
	int tombstones;
	const expect *ex;
	bool last_ok[NKEYS + 100]; /* the last record of the key is its latest */
	int wrong; /* records of keys < NKEYS that are not their latest */
	char first_wrong[128];
} seen;

static int on_msg(const rd_kafka_message_t *m, void *opaque)
{
	seen *s = opaque;
	char key[32] = "";
	snprintf(key, sizeof key, "%.*s", (int)m->key_len, m->key ? (const char *)m->key : "");
	int k = strncmp(key, "key-", 4) == 0 ? atoi(key + 4) : -1;
	s->n++;
	if (!m->payload)
		s->tombstones++;
	if (k >= 0 && k < NKEYS + 100) {
		s->per_key[k]++;
		const expect *ex = s->ex;
		bool ok = m->offset == ex->offset[k] &&
			  (ex->tombstone[k] ? m->payload == NULL
					    : (m->payload && m->len >= strlen(ex->value[k]) &&
					       memcmp(m->payload, ex->value[k], strlen(ex->value[k])) == 0));
		s->last_ok[k] = ok;
		if (!ok && k < NKEYS && s->wrong++ == 0)
			snprintf(s->first_wrong, sizeof s->first_wrong, "%s at offset %" PRId64, key, m->offset);
	}
	return m->offset >= s->last;
}

/* Read the partition from the beginning up to ex->last. */
static void read_back(const h_broker *b, const char *topic, const expect *ex, seen *s)
{
	memset(s, 0, sizeof *s);
	s->last = ex->last;
	s->ex = ex;
	rd_kafka_t *c = c_consumer(b, NULL);
	c_consume(c, topic, 0, RD_KAFKA_OFFSET_BEGINNING, LONG_MAX, 60000, on_msg, s);
	rd_kafka_destroy(c);
}

/* Fill up a round of updates, tombstones last, then filler keys in later
 * segments so that every test key is below the active segment. */
static void write_history(rd_kafka_t *p, const char *topic, int rounds, expect *ex)
{
	for (int k = 0; k < NKEYS + 100; k++)
		ex->offset[k] = -1;
	ex->last = -1;
	for (int r = 0; r < rounds; r++) {
		produce_round(p, topic, r, 0, NKEYS, false, ex);
		sleep_ms(350); /* segment.ms: the next round starts a new segment */
	}
	produce_round(p, topic, rounds, 0, NTOMB, true, ex);
	sleep_ms(350);
	produce_round(p, topic, 0, NKEYS, NKEYS + 1, false, ex); /* closes the segment above */
}

static rd_kafka_t *create(const h_broker *b, const char *topic)
{
	rd_kafka_t *rk = c_producer(b, (const char *const[]){ "linger.ms", "5", NULL });
	char err[512];
	ck_assert_int_eq(c_create_topic(rk, topic, 1, 1, topic_configs, err, sizeof err), 0);
	c_wait_topic(rk, topic, 1, 10000);
	return rk;
}

START_TEST(latest_value_per_key_and_tombstones)
{
	h_broker *b = c_start_broker(overrides);
	const char *topic = "compacted";
	rd_kafka_t *p = create(b, topic);
	static expect ex;
	write_history(p, topic, 8, &ex);
	/* the bytes produced (8 versions of ~210 bytes a key): the cleaner
	 * may have run already while they were written */
	int64_t full = 8 * NKEYS * 210;
	/* wait until the cleaner shrank the log: 8 versions a key become 1 */
	int64_t now_bytes = full;
	for (int i = 0; i < 600 && now_bytes > full / 3; i++) {
		sleep_ms(100);
		now_bytes = log_bytes(b, topic, NULL);
	}
	ck_assert_msg(now_bytes <= full / 3, "the log did not shrink: %" PRId64 " of %" PRId64 " bytes",
		      now_bytes, full);
	static seen s;
	read_back(b, topic, &ex, &s);
	ck_assert_msg(s.wrong == 0, "%d records that are not their key's latest, first %s", s.wrong,
		      s.first_wrong);
	for (int k = 0; k < NKEYS; k++)
		ck_assert_msg(s.per_key[k] == 1, "key-%d seen %d times", k, s.per_key[k]);
	/* right after the first round the tombstones are kept (their horizon
	 * is delete.retention.ms away) */
	ck_assert_int_eq(s.tombstones, NTOMB);
	/* later rounds after delete.retention.ms drop them */
	int64_t deadline = time(NULL) + 60;
	int round = 100;
	do {
		produce_round(p, topic, round++, NKEYS + 2, NKEYS + 3, false, &ex);
		sleep_ms(400);
		produce_round(p, topic, round++, NKEYS + 2, NKEYS + 3, false, &ex);
		sleep_ms(400);
		for (int k = 0; k < NTOMB; k++)
			ex.offset[k] = -1; /* gone is what is expected now */
		read_back(b, topic, &ex, &s);
	} while (s.tombstones > 0 && time(NULL) < deadline);
	ck_assert_msg(s.tombstones == 0, "%d tombstones left after delete.retention.ms", s.tombstones);
	for (int k = 0; k < NTOMB; k++)
		ck_assert_msg(s.per_key[k] == 0, "key-%d (deleted) seen %d times", k, s.per_key[k]);
	for (int k = NTOMB; k < NKEYS; k++)
		ck_assert_msg(s.per_key[k] == 1, "key-%d seen %d times", k, s.per_key[k]);
	ck_assert_msg(s.wrong == 0, "%d wrong records, first %s", s.wrong, s.first_wrong);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(keyless_record_refused)
{
	h_broker *b = c_start_broker(overrides);
	const char *topic = "compacted-nokey";
	rd_kafka_t *p = create(b, topic);
	c_delivery d = { 0 };
	c_msg m = { .topic = topic, .partition = 0, .value = "v", .value_len = 1 };
	c_produce(p, &m, &d);
	c_flush(p, 30000);
	ck_assert_msg(d.err == RD_KAFKA_RESP_ERR_INVALID_RECORD, "keyless produce: %s",
		      rd_kafka_err2str(d.err));
	/* with a key it goes through */
	c_msg m2 = { .topic = topic, .partition = 0, .key = "k", .key_len = 1, .value = "v", .value_len = 1 };
	c_produce(p, &m2, &d);
	c_flush(p, 30000);
	ck_assert_int_eq(d.err, 0);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(kill9_during_cleaning)
{
	h_broker *b = c_start_broker(overrides);
	const char *topic = "compacted-kill";
	rd_kafka_t *p = create(b, topic);
	static expect ex;
	write_history(p, topic, 12, &ex);
	rd_kafka_destroy(p);
	int64_t full = 12 * NKEYS * 210;
	/* kill at different moments of the first rounds */
	static const int delays[] = { 150, 250, 400, 700 };
	for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
		sleep_ms(delays[i]);
		ck_assert_int_eq(h_broker_kill(b), 0);
		int temp;
		(void)log_bytes(b, topic, &temp);
		ck_assert_int_eq(h_broker_restart(b), 0);
		ck_assert_int_eq(log_bytes(b, topic, &temp) > 0, 1);
		ck_assert_int_eq(temp, 0); /* recovery finished or rolled back */
		static seen s;
		read_back(b, topic, &ex, &s);
		/* older versions may still be there; the last of each key must be
		 * its latest (a deleted key may be gone altogether) */
		for (int k = 0; k < NKEYS; k++)
			ck_assert_msg((s.per_key[k] >= 1 && s.last_ok[k]) || (k < NTOMB && s.per_key[k] == 0),
				      "after kill %zu: key-%d lost (seen %d times)", i, k, s.per_key[k]);
	}
	/* and it still gets cleaned in the end */
	int64_t now_bytes = full;
	for (int i = 0; i < 600 && now_bytes > full / 3; i++) {
		sleep_ms(100);
		now_bytes = log_bytes(b, topic, NULL);
	}
	ck_assert_msg(now_bytes <= full / 3, "not cleaned after the restarts: %" PRId64 " of %" PRId64,
		      now_bytes, full);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compaction");
	TCase *tc = tcase_create("compaction");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, latest_value_per_key_and_tombstones);
	tcase_add_test(tc, keyless_record_refused);
	tcase_add_test(tc, kill9_during_cleaning);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
