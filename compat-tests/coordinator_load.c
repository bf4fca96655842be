/*
 * coordinator_load.c - after a restart the group coordinator loads
 * __consumer_offsets in the background (Kafka's GroupMetadataManager, which
 * answers COORDINATOR_LOAD_IN_PROGRESS for the groups of a partition it is
 * loading and serves every other request meanwhile).
 *
 * The broker keeps one partition of __consumer_offsets
 * (offsets.topic.num.partitions=1), so every group waits for the same load.
 * 200,000 offset records go in fast: 2,000 groups each commit 100
 * partitions of a topic in one raw OffsetCommit v8 (one batch of 100
 * records), pipelined. Then SIGTERM, and the broker starts again:
 *  - a librdkafka consumer, made before the port even accepts, asks for
 *    the committed offsets of one group (rd_kafka_committed, which retries
 *    COORDINATOR_LOAD_IN_PROGRESS) and gets every one exactly;
 *  - on a raw connection opened as soon as the port accepts, OffsetFetch v7
 *    of one group and Metadata v12 (all topics) alternate until OffsetFetch
 *    answers: OffsetFetch answers COORDINATOR_LOAD_IN_PROGRESS at least
 *    twice, some Metadata answer comes between two of them (so it was
 *    served while the partition loaded, not before or after the load), and
 *    every Metadata and ApiVersions round trip takes less than
 *    PROMPT_MS (scaled; loading 200,000 records all at once kept the whole
 *    broker silent for most of a second before);
 *  - once loaded, OffsetFetch of every group returns all its offsets
 *    exactly, and the broker's log sums the load up in one line
 *    ("loaded 2000 group(s) and 200000 committed offset(s) ...").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define TOPIC "load-data"
#define NPART 100
#define NGROUPS 2000
#define WINDOW 50          /* OffsetCommit requests in flight */
#define PROMPT_MS 250      /* a Metadata / ApiVersions round trip while loading */
#define E_LOAD_IN_PROGRESS 14

static const char *const overrides[] = {
	"offsets.topic.num.partitions=1",
	NULL,
};

static void group_name(char *buf, size_t cap, int g) { snprintf(buf, cap, "load-g-%d", g); }

/* The offset group g commits for partition p. */
static int64_t offset_of(int g, int p) { return (int64_t)g * 1000 + p + 1; }

/* ---- raw requests ---- */

/* OffsetCommit v8 of every partition of TOPIC for group g. */
static void commit_body(k_wbuf *w, int g)
{
	char group[32];
	group_name(group, sizeof(group), g);
	w->len = 0;
	kw_cstr(w, group);
	kw_i32(w, -1);   /* generation: a simple commit */
	kw_cstr(w, "");  /* member id */
	kw_cstr(w, NULL); /* group instance id */
	kw_uvarint(w, 2); /* one topic */
	kw_cstr(w, TOPIC);
	kw_uvarint(w, NPART + 1);
	for (int p = 0; p < NPART; p++) {
		kw_i32(w, p);
		kw_i64(w, offset_of(g, p));
		kw_i32(w, -1);    /* leader epoch */
		kw_cstr(w, "m"); /* metadata */
		kw_tags0(w);
	}
	kw_tags0(w);
	kw_tags0(w);
}

/* Read an OffsetCommit v8 response: every partition NONE. */
static void commit_check(k_rbuf *r, int g)
{
	kr_i32(r, "throttle_time_ms");
	ck_assert_int_eq(kr_carray(r, "topics"), 1);
	kr_cstr(r, NULL, 0, "name");
	ck_assert_int_eq(kr_carray(r, "partitions"), NPART);
	for (int p = 0; p < NPART; p++) {
		kr_i32(r, "partition_index");
		int16_t err = kr_i16(r, "error_code");
		ck_assert_msg(err == 0, "OffsetCommit of group %d partition %d: error %d", g, p, err);
		kr_tags(r, "partition tags");
	}
	kr_tags(r, "topic tags");
	kr_tags(r, "tags");
	kr_done(r, "OffsetCommit v8 response");
}

/* OffsetFetch v7 of every partition of TOPIC for group g. */
static void fetch_body(k_wbuf *w, int g)
{
	char group[32];
	group_name(group, sizeof(group), g);
	w->len = 0;
	kw_cstr(w, group);
	kw_uvarint(w, 2);
	kw_cstr(w, TOPIC);
	kw_uvarint(w, NPART + 1);
	for (int p = 0; p < NPART; p++)
		kw_i32(w, p);
	kw_tags0(w);
	kw_u8(w, 0); /* require_stable */
	kw_tags0(w);
}

/* Read an OffsetFetch v7 response; returns the group's error code. With
 * none, every partition must have its committed offset (exact). */
static int16_t fetch_check(k_rbuf *r, int g)
{
	kr_i32(r, "throttle_time_ms");
	int64_t nt = kr_carray(r, "topics");
	int16_t perr = 0;
	for (int64_t t = 0; t < nt; t++) {
		kr_cstr(r, NULL, 0, "name");
		int64_t np = kr_carray(r, "partitions");
		ck_assert_int_eq(np, NPART);
		for (int64_t i = 0; i < np; i++) {
			int32_t p = kr_i32(r, "partition_index");
			int64_t off = kr_i64(r, "committed_offset");
			kr_i32(r, "committed_leader_epoch");
			char md[8];
			kr_cstr(r, md, sizeof(md), "metadata");
			int16_t e = kr_i16(r, "error_code");
			kr_tags(r, "partition tags");
			if (e) {
				perr = e;
				continue;
			}
			ck_assert_msg(off == offset_of(g, p) && strcmp(md, "m") == 0,
				      "group %d partition %d: offset %lld metadata \"%s\", committed %lld",
				      g, p, (long long)off, md, (long long)offset_of(g, p));
		}
		kr_tags(r, "topic tags");
	}
	int16_t err = kr_i16(r, "error_code");
	kr_tags(r, "tags");
	kr_done(r, "OffsetFetch v7 response");
	ck_assert_msg(err != 0 || perr == 0, "group %d: partition error %d", g, perr);
	if (err == 0)
		ck_assert_int_eq(nt, 1);
	return err;
}

/* One OffsetFetch v7 of group g; returns its error code. */
static int16_t fetch_group(int fd, int g)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	fetch_body(w, g);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 9, 7, w, &r);
	int16_t err = fetch_check(&r, g);
	free(frame);
	free(w);
	return err;
}

/* One Metadata v12 of all topics; fails the test unless this broker and
 * TOPIC are in the answer. Returns the round trip in ms. */
static long long metadata(int fd)
{
	k_wbuf w = { .len = 0 };
	kw_uvarint(&w, 0); /* topics: null, all of them */
	kw_u8(&w, 0);      /* allow_auto_topic_creation */
	kw_u8(&w, 0);      /* include_topic_authorized_operations */
	kw_tags0(&w);
	long long t0 = h_now_ms();
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 3, 12, &w, &r);
	long long ms = h_now_ms() - t0;
	kr_i32(&r, "throttle_time_ms");
	ck_assert_int_eq(kr_carray(&r, "brokers"), 1);
	ck_assert(memmem(r.b + r.pos, r.len - r.pos, TOPIC, strlen(TOPIC)) != NULL);
	free(frame);
	return ms;
}

/* Write the 200,000 records: every group's OffsetCommit, WINDOW at a time. */
static void commit_all(const h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert_ptr_nonnull(w);
	int32_t cids[WINDOW];
	for (int g = 0; g < NGROUPS; g += WINDOW) {
		for (int i = 0; i < WINDOW; i++) {
			commit_body(w, g + i);
			cids[i] = k_send(fd, 8, 8, w);
		}
		for (int i = 0; i < WINDOW; i++) {
			k_rbuf r;
			uint8_t *frame = k_recv(fd, cids[i], &r, h_scaled_ms(10000));
			commit_check(&r, g + i);
			free(frame);
		}
	}
	free(w);
	close(fd);
}

/* ---- librdkafka, during the load ---- */

typedef struct committed_job {
	const h_broker *b;
	int group;
	rd_kafka_resp_err_t err;
	int bad;          /* partitions without their exact offset */
	long long ms;     /* how long committed() took */
} committed_job;

static void *committed_thread(void *arg)
{
	committed_job *j = arg;
	char group[32];
	group_name(group, sizeof(group), j->group);
	const char *kv[] = { "group.id", group, "enable.auto.commit", "false", NULL };
	rd_kafka_t *c = c_consumer(j->b, kv);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NPART);
	for (int p = 0; p < NPART; p++)
		rd_kafka_topic_partition_list_add(l, TOPIC, p);
	long long t0 = h_now_ms();
	j->err = rd_kafka_committed(c, l, h_scaled_ms(30000));
	j->ms = h_now_ms() - t0;
	for (int i = 0; i < l->cnt; i++)
		if (l->elems[i].err || l->elems[i].offset != offset_of(j->group, l->elems[i].partition))
			j->bad++;
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_consumer_close(c);
	rd_kafka_destroy(c);
	return NULL;
}

START_TEST(test_load_in_background)
{
	h_broker *b = c_start_broker(overrides);
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, TOPIC, NPART, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, TOPIC, NPART, h_scaled_ms(10000));
	rd_kafka_destroy(p);
	long long t0 = h_now_ms();
	commit_all(b);
	fprintf(stderr, "coordinator_load: %d offset records written in %lld ms\n", NGROUPS * NPART,
		h_now_ms() - t0);
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(20000)), 0);

	/* Start again; the consumer comes first, the raw probe as soon as
	 * the port accepts. */
	ck_assert_int_eq(h_broker_launch(b), 0);
	long long launched = h_now_ms();
	committed_job job = { .b = b, .group = 1234 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, committed_thread, &job), 0);
	int fd = -1;
	while (fd < 0) {
		ck_assert_msg(h_broker_alive(b), "the broker exited");
		ck_assert_msg(h_now_ms() - launched < h_scaled_ms(20000), "the port never accepted");
		fd = w_connect(b->port, 1000);
		if (fd < 0)
			usleep(1000);
	}
	long long accepted = h_now_ms();
	int lip = 0, meta_between = 0, meta_after_lip = 0;
	long long max_meta = 0, max_apiv = 0, first_lip = -1, loaded = -1;
	for (;;) {
		int16_t err = fetch_group(fd, 42);
		if (err == 0) {
			loaded = h_now_ms();
			break;
		}
		ck_assert_msg(err == E_LOAD_IN_PROGRESS, "OffsetFetch while loading: error %d", err);
		if (lip++ == 0)
			first_lip = h_now_ms();
		meta_between += meta_after_lip; /* a Metadata answered between two of them */
		meta_after_lip = 0;
		long long ms = metadata(fd);
		if (ms > max_meta)
			max_meta = ms;
		meta_after_lip = 1;
		long long a0 = h_now_ms();
		ck_assert_int_eq(w_api_versions_v0(fd, 7, h_scaled_ms(5000)), 0);
		if (h_now_ms() - a0 > max_apiv)
			max_apiv = h_now_ms() - a0;
		ck_assert_msg(h_now_ms() - accepted < h_scaled_ms(60000), "never loaded");
	}
	fprintf(stderr,
		"coordinator_load: port accepted %lld ms after launch; COORDINATOR_LOAD_IN_PROGRESS "
		"%d times from +%lld ms, loaded at +%lld ms; slowest Metadata %lld ms, ApiVersions "
		"%lld ms\n",
		accepted - launched, lip, lip ? first_lip - launched : -1, loaded - launched, max_meta,
		max_apiv);
	ck_assert_msg(lip >= 2, "OffsetFetch answered COORDINATOR_LOAD_IN_PROGRESS %d time(s)", lip);
	ck_assert_msg(meta_between >= 1, "no Metadata answered while the partition loaded");
	ck_assert_msg(max_meta < h_scaled_ms(PROMPT_MS), "a Metadata round trip took %lld ms", max_meta);
	ck_assert_msg(max_apiv < h_scaled_ms(PROMPT_MS), "an ApiVersions round trip took %lld ms",
		      max_apiv);

	/* Loaded: every group's offsets, exactly. */
	for (int g = 0; g < NGROUPS; g++)
		ck_assert_int_eq(fetch_group(fd, g), 0);
	close(fd);
	pthread_join(th, NULL);
	fprintf(stderr, "coordinator_load: rd_kafka_committed took %lld ms\n", job.ms);
	ck_assert_msg(job.err == 0, "rd_kafka_committed: %s", rd_kafka_err2name(job.err));
	ck_assert_msg(job.bad == 0, "rd_kafka_committed: %d partition(s) wrong", job.bad);

	char *log = h_broker_read_log(b);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "loaded 2000 group(s) and 200000 committed offset(s) from 1 "
				  "partition(s) of __consumer_offsets in ") != NULL,
		      "no load summary in the broker's log");
	free(log);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coordinator_load");
	TCase *tc = tcase_create("coordinator_load");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_load_in_background);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
