/*
 * admin.c - CreateTopics and DeleteTopics through librdkafka's AdminClient:
 * create with a topic config, TOPIC_ALREADY_EXISTS (36) on a repeat,
 * INVALID_TOPIC_EXCEPTION (17) for an illegal name, INVALID_REPLICATION_FACTOR
 * (38) for more replicas than brokers, INVALID_CONFIG (40) for a bad config
 * value; DeleteTopics
 * removes the topic (metadata and its partition directories) and a second
 * delete gives UNKNOWN_TOPIC_OR_PARTITION (3). A created topic is durable
 * when CreateTopics answers: it survives a kill -9 right after the answer
 * (the broker fsyncs off its event loop and answers only once done). Rules: Kafka's
 * CreateTopicsRequest/DeleteTopicsRequest and topic naming (legal chars
 * [a-zA-Z0-9._-], at most 249, not "." or "..").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-tests/compat.h"

/* Number of entries in b's data dir whose name is exactly "<topic>-<N>". */
static int partition_dirs(const h_broker *b, const char *topic)
{
	DIR *d = opendir(b->dir);
	ck_assert_msg(d != NULL, "cannot open data dir %s", b->dir);
	size_t tl = strlen(topic);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, topic, tl) != 0 || e->d_name[tl] != '-')
			continue;
		const char *num = e->d_name + tl + 1;
		if (!*num || strspn(num, "0123456789") != strlen(num))
			continue;
		n++;
	}
	closedir(d);
	return n;
}

static rd_kafka_resp_err_t create(rd_kafka_t *rk, const char *name, int parts, int rf,
				  const char *const *cfg)
{
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(rk, name, parts, rf, cfg, errstr, sizeof(errstr));
	if (err)
		fprintf(stderr, "admin: CreateTopics %s: %s (%s)\n", name, rd_kafka_err2name(err),
			errstr);
	return err;
}

#define ASSERT_ERR(got, want, what)                                                      \
	ck_assert_msg((got) == (want), "%s: %s, expected %s", what, rd_kafka_err2name(got),  \
		      rd_kafka_err2name(want))

START_TEST(test_create_and_delete)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	const char *topic = "admin-topic";

	rd_kafka_resp_err_t err = create(p, topic, 2, 1,
					 (const char *const[]){"retention.ms", "86400000",
							       "cleanup.policy", "delete", NULL});
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_NO_ERROR, "create with configs");
	c_wait_topic(p, topic, 2, h_scaled_ms(10000));

	err = create(p, topic, 2, 1, NULL);
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS, "create again");
	err = create(p, topic, 5, 1, NULL);
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS, "create again, other count");

	/* Data in both partitions, so there is something to delete. */
	c_delivery d[2];
	for (int32_t part = 0; part < 2; part++) {
		c_msg m = {.topic = topic, .partition = part, .value = "data", .value_len = 4};
		c_produce(p, &m, &d[part]);
	}
	c_flush(p, h_scaled_ms(10000));
	for (int part = 0; part < 2; part++)
		ck_assert_msg(d[part].err == 0, "produce to partition %d: %s", part,
			      rd_kafka_err2str(d[part].err));
	ck_assert_msg(partition_dirs(b, topic) == 2,
		      "expected directories %s-0 and %s-1 in the data dir, found %d", topic, topic,
		      partition_dirs(b, topic));

	char errstr[512];
	err = c_delete_topic(p, topic, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "delete: %s (%s)", rd_kafka_err2name(err), errstr);

	/* Gone from metadata and, within a bounded time, from disk. */
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	ck_assert_msg(c_md_topic(md, topic) == NULL, "deleted topic still listed in metadata");
	rd_kafka_metadata_destroy(md);
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	while (partition_dirs(b, topic) > 0 && h_now_ms() < deadline)
		usleep(100000);
	ck_assert_msg(partition_dirs(b, topic) == 0,
		      "partition directories of the deleted topic are still in %s", b->dir);

	err = c_delete_topic(p, topic, errstr, sizeof(errstr));
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "second delete");

	/* The name can be used again, starting empty. */
	err = create(p, topic, 1, 1, NULL);
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_NO_ERROR, "re-create after delete");
	c_wait_topic(p, topic, 1, h_scaled_ms(10000));
	rd_kafka_t *c = c_consumer(b, NULL);
	int64_t lo = -1, hi = -1;
	err = rd_kafka_query_watermark_offsets(c, topic, 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "watermarks: %s", rd_kafka_err2str(err));
	ck_assert_msg(lo == 0 && hi == 0, "re-created topic has low %lld high %lld",
		      (long long)lo, (long long)hi);
	rd_kafka_destroy(c);

	rd_kafka_destroy(p);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_create_errors)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	char longname[300];
	memset(longname, 'x', 250);
	longname[250] = 0;

	ASSERT_ERR(create(p, "bad name!", 1, 1, NULL), RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,
		   "name with space and '!'");
	ASSERT_ERR(create(p, "..", 1, 1, NULL), RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "name ..");
	ASSERT_ERR(create(p, "a/b", 1, 1, NULL), RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "name a/b");
	ASSERT_ERR(create(p, longname, 1, 1, NULL), RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,
		   "250-character name");
	ASSERT_ERR(create(p, "rf3", 1, 3, NULL), RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR,
		   "replication factor 3 on one broker");

	/* None of them exists now, and nothing was left on disk. */
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	ck_assert_msg(c_md_topic(md, "bad name!") == NULL && c_md_topic(md, "rf3") == NULL &&
			      c_md_topic(md, "a/b") == NULL,
		      "a refused topic is listed in metadata");
	rd_kafka_metadata_destroy(md);
	ck_assert_int_eq(partition_dirs(b, "rf3"), 0);
	ck_assert_int_eq(partition_dirs(b, ".."), 0);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/a", b->dir);
	ck_assert_msg(access(path, F_OK) != 0, "topic a/b left %s behind", path);

	rd_kafka_destroy(p);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_create_bad_config)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	ASSERT_ERR(create(p, "bad-config", 1, 1,
			  (const char *const[]){"retention.ms", "not-a-number", NULL}),
		   RD_KAFKA_RESP_ERR_INVALID_CONFIG, "retention.ms=not-a-number");
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	ck_assert_msg(c_md_topic(md, "bad-config") == NULL, "refused topic is listed");
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

/* Entries of b's data dir whose name starts with prefix. */
static int prefixed(const h_broker *b, const char *prefix)
{
	DIR *d = opendir(b->dir);
	ck_assert_msg(d != NULL, "cannot open data dir %s", b->dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

START_TEST(test_create_survives_kill)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	const char *topic = "durable-create";
	const int parts = 500;
	ASSERT_ERR(create(p, topic, parts, 1, NULL), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "create 500 partitions");
	/* kill -9 as soon as the answer is in: nothing may still be pending. */
	ck_assert_int_eq(h_broker_kill(b), 0);
	rd_kafka_destroy(p);
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart after kill -9");
	p = c_producer(b, NULL);
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	const rd_kafka_metadata_topic_t *t = c_md_topic(md, topic);
	ck_assert_msg(t != NULL, "topic %s answered as created is gone after kill -9", topic);
	ck_assert_msg(t->err == 0 && t->partition_cnt == parts,
		      "after kill -9: %s error %s, %d partitions (expected %d)", topic,
		      rd_kafka_err2name(t->err), t->partition_cnt, parts);
	for (int i = 0; i < t->partition_cnt; i++)
		ck_assert_msg(t->partitions[i].err == 0 && t->partitions[i].leader >= 0,
			      "after kill -9: partition %d offline (%s)", i,
			      rd_kafka_err2name(t->partitions[i].err));
	rd_kafka_metadata_destroy(md);
	ck_assert_int_eq(partition_dirs(b, topic), parts);
	ck_assert_msg(prefixed(b, "__samsa_metadata.tmp") == 0,
		      "temporary metadata files left in %s after the restart", b->dir);
	/* It takes data in its last partition. */
	c_delivery d;
	c_msg m = {.topic = topic, .partition = parts - 1, .value = "v", .value_len = 1};
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(10000));
	ck_assert_msg(d.err == 0, "produce after kill -9: %s", rd_kafka_err2str(d.err));
	rd_kafka_destroy(p);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin");
	TCase *tc = tcase_create("admin");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_create_and_delete);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_create_bad_config);
	tcase_add_test(tc, test_create_survives_kill);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
