/*
 * metadata.c - Metadata through librdkafka: a topic named in a Metadata
 * request is auto-created with num.partitions partitions led by this broker
 * (broker.id), producing to an unknown topic auto-creates it; with
 * auto.create.topics.enable=false a produce to an unknown topic fails with
 * UNKNOWN_TOPIC_OR_PARTITION and Metadata reports that error (Kafka broker
 * config docs: auto.create.topics.enable, num.partitions). The internal
 * topics are made on first use, as in Kafka: a fresh broker has neither;
 * FindCoordinator for a group makes __consumer_offsets
 * (offsets.topic.num.partitions), for a transactional id
 * __transaction_state (transaction.state.log.num.partitions).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define BROKER_ID 3

/* Metadata for one topic through a handle that allows auto-creation. */
static const struct rd_kafka_metadata *topic_metadata(rd_kafka_t *rk, const char *topic,
						      const rd_kafka_metadata_topic_t **t)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, h_scaled_ms(10000));
	rd_kafka_topic_destroy(rkt);
	ck_assert_msg(err == 0, "metadata request for %s: %s", topic, rd_kafka_err2str(err));
	*t = c_md_topic(md, topic);
	ck_assert_msg(*t != NULL, "metadata response does not mention %s", topic);
	return md;
}

static int dir_exists(const h_broker *b, const char *name)
{
	char path[PATH_MAX + 256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", b->dir, name);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(test_auto_create_by_metadata)
{
	h_broker *b = c_start_broker((const char *const[]){"num.partitions=4", "broker.id=3",
							  NULL});
	rd_kafka_t *c = c_consumer(b, (const char *const[]){"allow.auto.create.topics", "true",
							    NULL});
	const char *topic = "auto-md";
	const rd_kafka_metadata_topic_t *t = NULL;
	const struct rd_kafka_metadata *md = NULL;
	long long deadline = h_now_ms() + h_scaled_ms(10000);
	/* Kafka may answer LEADER_NOT_AVAILABLE while the topic is being
	 * created; ask again until it is ready. */
	for (;;) {
		md = topic_metadata(c, topic, &t);
		if (t->err == 0 && t->partition_cnt > 0)
			break;
		ck_assert_msg(t->err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
			      "metadata for %s: error %s (auto.create.topics.enable=true)", topic,
			      rd_kafka_err2name(t->err));
		ck_assert_msg(h_now_ms() < deadline, "topic %s still not created", topic);
		rd_kafka_metadata_destroy(md);
		usleep(100000);
	}
	ck_assert_msg(t->partition_cnt == 4, "%d partitions, expected num.partitions=4",
		      t->partition_cnt);
	for (int i = 0; i < t->partition_cnt; i++) {
		const rd_kafka_metadata_partition_t *p = &t->partitions[i];
		ck_assert_msg(p->id == i, "partition #%d has id %d", i, (int)p->id);
		ck_assert_msg(p->err == 0, "partition %d: %s", i, rd_kafka_err2name(p->err));
		ck_assert_msg(p->leader == BROKER_ID, "partition %d: leader %d, expected %d", i,
			      (int)p->leader, BROKER_ID);
		ck_assert_msg(p->replica_cnt == 1 && p->replicas[0] == BROKER_ID,
			      "partition %d: replicas wrong (%d)", i, p->replica_cnt);
		ck_assert_msg(p->isr_cnt == 1 && p->isrs[0] == BROKER_ID,
			      "partition %d: ISR wrong (%d)", i, p->isr_cnt);
	}
	ck_assert_msg(md->broker_cnt == 1, "%d brokers in metadata", md->broker_cnt);
	ck_assert_int_eq(md->brokers[0].id, BROKER_ID);
	ck_assert_str_eq(md->brokers[0].host, "127.0.0.1");
	ck_assert_int_eq(md->brokers[0].port, b->port);
	rd_kafka_metadata_destroy(md);

	/* The topic is real: all-topics metadata lists it, and it takes data. */
	md = c_metadata_all(c);
	ck_assert_msg(c_md_topic(md, topic) != NULL, "all-topics metadata misses %s", topic);
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(c);

	rd_kafka_t *p = c_producer(b, NULL);
	c_delivery d;
	c_msg m = {.topic = topic, .partition = 3, .value = "v", .value_len = 1};
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(10000));
	ck_assert_msg(d.err == 0, "produce to auto-created topic: %s", rd_kafka_err2str(d.err));
	ck_assert_int_eq(d.offset, 0);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_auto_create_by_produce)
{
	h_broker *b = c_start_broker((const char *const[]){"num.partitions=2", NULL});
	rd_kafka_t *p = c_producer(b, (const char *const[]){"message.timeout.ms", "15000", NULL});
	c_delivery d[10];
	for (int i = 0; i < 10; i++) {
		c_msg m = {.topic = "auto-produce",
			   .partition = RD_KAFKA_PARTITION_UA,
			   .key = &i,
			   .key_len = sizeof(i),
			   .value = "v",
			   .value_len = 1};
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < 10; i++)
		ck_assert_msg(d[i].done && d[i].err == 0, "record %d to an auto-created topic: %s",
			      i, rd_kafka_err2str(d[i].err));
	const struct rd_kafka_metadata *md = c_metadata_all(p);
	const rd_kafka_metadata_topic_t *t = c_md_topic(md, "auto-produce");
	ck_assert_msg(t && t->err == 0 && t->partition_cnt == 2,
		      "auto-created topic not in metadata with 2 partitions");
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_no_auto_create)
{
	h_broker *b = c_start_broker((const char *const[]){"auto.create.topics.enable=false",
							  NULL});
	const char *topic = "never-created";
	rd_kafka_t *p = c_producer(b, (const char *const[]){"message.timeout.ms", "3000",
							    "topic.metadata.propagation.max.ms",
							    "1000", NULL});
	c_delivery d;
	c_msg m = {.topic = topic, .partition = RD_KAFKA_PARTITION_UA, .value = "v",
		   .value_len = 1};
	c_produce(p, &m, &d);
	rd_kafka_flush(p, h_scaled_ms(15000));
	ck_assert_msg(d.done, "no delivery report for a record to an unknown topic");
	ck_assert_msg(d.err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
			      d.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
		      "delivery to an unknown topic: %s (%s), expected unknown topic",
		      rd_kafka_err2name(d.err), rd_kafka_err2str(d.err));
	rd_kafka_destroy(p);

	/* Even a client that allows auto-creation is refused. */
	rd_kafka_t *c = c_consumer(b, (const char *const[]){"allow.auto.create.topics", "true",
							    NULL});
	for (int round = 0; round < 2; round++) {
		const rd_kafka_metadata_topic_t *t = NULL;
		const struct rd_kafka_metadata *md = topic_metadata(c, topic, &t);
		ck_assert_msg(t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
			      "metadata for an unknown topic: %s, expected "
			      "UNKNOWN_TOPIC_OR_PARTITION",
			      rd_kafka_err2name(t->err));
		ck_assert_int_eq(t->partition_cnt, 0);
		rd_kafka_metadata_destroy(md);
	}
	const struct rd_kafka_metadata *md = c_metadata_all(c);
	ck_assert_msg(c_md_topic(md, topic) == NULL, "%s was created anyway", topic);
	rd_kafka_metadata_destroy(md);
	ck_assert_msg(!dir_exists(b, "never-created-0"), "a partition dir was created");
	rd_kafka_destroy(c);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

/* FindCoordinator v3 for key of key_type (0 group, 1 transaction): the
 * error code. */
static int16_t find_coordinator(int fd, const char *key, int8_t key_type)
{
	k_wbuf body = {.len = 0};
	kw_cstr(&body, key);
	kw_u8(&body, (uint8_t)key_type);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *resp = k_roundtrip(fd, 10, 3, &body, &r);
	kr_i32(&r, "throttle");
	int16_t err = kr_i16(&r, "error code");
	free(resp);
	return err;
}

/* The number of partitions of topic in a Metadata answer, 0 when absent. */
static int partitions_of(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md = c_metadata_all(rk);
	const rd_kafka_metadata_topic_t *t = c_md_topic(md, topic);
	int n = t ? t->partition_cnt : 0;
	rd_kafka_metadata_destroy(md);
	return n;
}

START_TEST(test_internal_topics_on_first_use)
{
	h_broker *b = c_start_broker((const char *const[]){
		"offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=2", NULL});
	rd_kafka_t *c = c_consumer(b, NULL);
	ck_assert_int_eq(partitions_of(c, "__consumer_offsets"), 0);
	ck_assert_int_eq(partitions_of(c, "__transaction_state"), 0);
	ck_assert(!dir_exists(b, "__consumer_offsets-0"));
	ck_assert(!dir_exists(b, "__transaction_state-0"));
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(find_coordinator(fd, "g1", 0), 0);
	ck_assert_int_eq(partitions_of(c, "__consumer_offsets"), 3);
	ck_assert(dir_exists(b, "__consumer_offsets-2"));
	ck_assert_int_eq(partitions_of(c, "__transaction_state"), 0);
	ck_assert_int_eq(find_coordinator(fd, "tx1", 1), 0);
	ck_assert_int_eq(partitions_of(c, "__transaction_state"), 2);
	ck_assert(dir_exists(b, "__transaction_state-1"));
	close(fd);
	rd_kafka_destroy(c);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metadata");
	TCase *tc = tcase_create("metadata");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_auto_create_by_metadata);
	tcase_add_test(tc, test_auto_create_by_produce);
	tcase_add_test(tc, test_no_auto_create);
	tcase_add_test(tc, test_internal_topics_on_first_use);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
