/*
 * test_zk_json.c - golden tests of the znode codecs (zk_json.h).
 *
 * Encodings are compared byte for byte with znodes written by Kafka itself
 * (zkCli "get" output of Kafka 2.8-3.x brokers, Scala 2.13 builds, as
 * published in tutorials and issue threads; each sample says where it comes
 * from) or, where no published sample exists, with the output of Kafka's
 * encoder computed from its maps (config maps: Jackson 2.14 run on a
 * java.util.Properties on this machine). Decoders get Kafka-written samples
 * of every version, in other member orders and with unknown members, and
 * one malformed input per rule, plus every truncation of every sample.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/zk_json.h"
#include "storage/logdir.h"

static proto_arena arena;

static void setup(void)
{
	proto_arena_init(&arena, 0);
}

static void teardown(void)
{
	proto_arena_free(&arena);
}

#define ENC_EQ(call, want)                                      \
	do {                                                    \
		char *out_;                                     \
		size_t len_;                                    \
		ck_assert_int_eq(call(&out_, &len_), 0);        \
		ck_assert_str_eq(out_, want);                   \
		ck_assert_uint_eq(len_, strlen(want));          \
		free(out_);                                     \
	} while (0)

static int slen(const char *s)
{
	return (int)strlen(s);
}

/* ---- broker registration ---- */

static ctl_zkj_endpoint ep_plain = { "PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092 };

START_TEST(test_broker_encode_v5)
{
	char *out;
	size_t len;
	ctl_zkj_broker b = { .jmx_port = -1, .timestamp = 1732880000123LL,
			     .endpoints = &ep_plain, .nendpoints = 1 };
	/* CLUSTER.md 1.2's example (without rack) */
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, &len), 0);
	ck_assert_str_eq(out, "{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":"
			      "\"PLAINTEXT\"},\"endpoints\":[\"PLAINTEXT://127.0.0.1:9092\"],"
			      "\"jmx_port\":-1,\"port\":9092,\"host\":\"127.0.0.1\",\"version\":5,"
			      "\"timestamp\":\"1732880000123\"}");
	ck_assert_uint_eq(len, strlen(out));
	free(out);
	/* rack: Kafka's mutable.HashMap puts it right after endpoints */
	b.rack = "r1";
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, &len), 0);
	ck_assert_str_eq(out, "{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":"
			      "\"PLAINTEXT\"},\"endpoints\":[\"PLAINTEXT://127.0.0.1:9092\"],"
			      "\"rack\":\"r1\",\"jmx_port\":-1,\"port\":9092,\"host\":\"127.0.0.1\","
			      "\"version\":5,\"timestamp\":\"1732880000123\"}");
	free(out);
}
END_TEST

START_TEST(test_broker_encode_kafka_sample)
{
	/* a Kafka 2.8 (Confluent 6.2) broker in docker, get /brokers/ids/1 */
	ctl_zkj_endpoint eps[] = {
		{ "PLAINTEXT", "PLAINTEXT", "kafka-1", 9092 },
		{ "PLAINTEXT_HOST", "PLAINTEXT", "localhost", 29092 },
	};
	ctl_zkj_broker b = { .jmx_port = -1, .timestamp = 1625336133848LL, .endpoints = eps,
			     .nendpoints = 2 };
	char *out;
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":"
			      "\"PLAINTEXT\",\"PLAINTEXT_HOST\":\"PLAINTEXT\"},\"endpoints\":["
			      "\"PLAINTEXT://kafka-1:9092\",\"PLAINTEXT_HOST://localhost:29092\"],"
			      "\"jmx_port\":-1,\"port\":9092,\"host\":\"kafka-1\",\"version\":5,"
			      "\"timestamp\":\"1625336133848\"}");
	free(out);
}
END_TEST

START_TEST(test_broker_encode_edges)
{
	char *out;
	/* no PLAINTEXT endpoint: host null, port -1; IPv6 in brackets; empty host */
	ctl_zkj_endpoint eps[] = {
		{ "SSL", "SSL", "::1", 9093 },
		{ "INTERNAL", "SASL_PLAINTEXT", "", 9094 },
	};
	ctl_zkj_broker b = { .jmx_port = 9999, .timestamp = 0, .endpoints = eps, .nendpoints = 2 };
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"features\":{},\"listener_security_protocol_map\":{\"SSL\":\"SSL\","
			      "\"INTERNAL\":\"SASL_PLAINTEXT\"},\"endpoints\":[\"SSL://[::1]:9093\","
			      "\"INTERNAL://:9094\"],\"jmx_port\":9999,\"port\":-1,\"host\":null,"
			      "\"version\":5,\"timestamp\":\"0\"}");
	/* and it decodes back */
	ctl_zkj_broker d;
	ck_assert_int_eq(ctl_zkj_broker_decode(out, slen(out), &arena, &d), 0);
	ck_assert_int_eq(d.nendpoints, 2);
	ck_assert_str_eq(d.endpoints[0].host, "::1");
	ck_assert_str_eq(d.endpoints[1].host, "");
	ck_assert_str_eq(d.endpoints[1].security_protocol, "SASL_PLAINTEXT");
	ck_assert_ptr_null(d.host);
	ck_assert_int_eq(d.port, -1);
	free(out);
	/* refused: unknown protocol, repeated listener, bad port */
	ctl_zkj_endpoint bad1[] = { { "X", "TLS", "h", 1 } };
	ctl_zkj_endpoint bad2[] = { { "A", "SSL", "h", 1 }, { "A", "SSL", "h", 2 } };
	ctl_zkj_endpoint bad3[] = { { "A", "SSL", "h", 65536 } };
	ctl_zkj_endpoint bad4[] = { { "A B", "SSL", "h", 1 } };
	b.endpoints = bad1, b.nendpoints = 1;
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), -EINVAL);
	ck_assert_ptr_null(out);
	b.endpoints = bad2, b.nendpoints = 2;
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), -EINVAL);
	b.endpoints = bad3, b.nendpoints = 1;
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), -EINVAL);
	b.endpoints = bad4;
	ck_assert_int_eq(ctl_zkj_broker_encode(&b, &out, NULL), -EINVAL);
}
END_TEST

START_TEST(test_broker_decode_versions)
{
	ctl_zkj_broker b;
	/* v1 (ZkData's documented schema) */
	const char *v1 = "{\"version\":1,\"host\":\"localhost\",\"port\":9092,\"jmx_port\":9999,"
			 "\"timestamp\":\"2233345666\"}";
	ck_assert_int_eq(ctl_zkj_broker_decode(v1, slen(v1), &arena, &b), 0);
	ck_assert_int_eq(b.version, 1);
	ck_assert_str_eq(b.host, "localhost");
	ck_assert_int_eq(b.port, 9092);
	ck_assert_int_eq(b.jmx_port, 9999);
	ck_assert(b.timestamp == 2233345666LL);
	ck_assert_int_eq(b.nendpoints, 1);
	ck_assert_str_eq(b.endpoints[0].listener, "PLAINTEXT");
	ck_assert_str_eq(b.endpoints[0].host, "localhost");
	ck_assert_ptr_null(b.rack);
	/* v2: endpoints named by protocol, no map */
	const char *v2 = "{\"jmx_port\":-1,\"timestamp\":\"1\",\"endpoints\":[\"PLAINTEXT://h1:9092\","
			 "\"SSL://h1:9093\"],\"host\":\"h1\",\"version\":2,\"port\":9092}";
	ck_assert_int_eq(ctl_zkj_broker_decode(v2, slen(v2), &arena, &b), 0);
	ck_assert_int_eq(b.nendpoints, 2);
	ck_assert_str_eq(b.endpoints[1].security_protocol, "SSL");
	ck_assert_int_eq(b.endpoints[1].port, 9093);
	/* v3 with a rack, pretty-printed */
	const char *v3 = "{\n  \"version\" : 3, \"host\":\"h\", \"port\":9092, \"jmx_port\":-1,\n"
			 "  \"endpoints\" : [ \"PLAINTEXT://h:9092\" ], \"rack\" : \"dc1\" }";
	ck_assert_int_eq(ctl_zkj_broker_decode(v3, slen(v3), &arena, &b), 0);
	ck_assert_str_eq(b.rack, "dc1");
	ck_assert(b.timestamp == -1);
	/* v4 as a Kafka 2.x (Scala 2.12) broker wrote it (zookeeper-shell
	 * notes, 2019): another member order, a non-protocol listener name */
	const char *v4 = "{\"listener_security_protocol_map\":{\"PLAINTEXT\":\"PLAINTEXT\","
			 "\"INTERNAL\":\"PLAINTEXT\"},\"endpoints\":[\"PLAINTEXT://kafka:443\","
			 "\"INTERNAL://localhost:9093\"],\"jmx_port\":-1,\"host\":\"kafka\","
			 "\"timestamp\":\"1567506643562\",\"port\":443,\"version\":4}";
	ck_assert_int_eq(ctl_zkj_broker_decode(v4, slen(v4), &arena, &b), 0);
	ck_assert_int_eq(b.version, 4);
	ck_assert_str_eq(b.endpoints[1].listener, "INTERNAL");
	ck_assert_str_eq(b.endpoints[1].security_protocol, "PLAINTEXT");
	ck_assert_str_eq(b.endpoints[1].host, "localhost");
	ck_assert_int_eq(b.port, 443);
	/* v5 with features (ZkData's documented shape) and members we do not
	 * know, rack null */
	const char *v5 = "{\"features\": {\"feature\": {\"min_version\":1, \"first_active_version\":2,"
			 " \"max_version\":3}}, \"listener_security_protocol_map\":{\"SSL\":\"SSL\"},"
			 "\"endpoints\":[\"SSL://[fe80::1%eth0]:9093\"],\"rack\":null,\"jmx_port\":-1,"
			 "\"port\":-1,\"host\":null,\"version\":5,\"timestamp\":\"1\","
			 "\"future\":[1,{\"x\":true}]}";
	ck_assert_int_eq(ctl_zkj_broker_decode(v5, slen(v5), &arena, &b), 0);
	ck_assert_str_eq(b.endpoints[0].host, "fe80::1%eth0");
	ck_assert_ptr_null(b.rack);
	ck_assert_ptr_null(b.host);
}
END_TEST

START_TEST(test_broker_decode_refuses)
{
	ctl_zkj_broker b;
	static const char *const bad[] = {
		/* version 0 and 6 */
		"{\"version\":0,\"host\":\"h\",\"port\":1,\"jmx_port\":-1}",
		"{\"version\":6,\"endpoints\":[],\"jmx_port\":-1}",
		/* jmx_port missing, or a string */
		"{\"version\":5,\"endpoints\":[]}",
		"{\"version\":5,\"endpoints\":[],\"jmx_port\":\"-1\"}",
		/* v1 without host, host a number */
		"{\"version\":1,\"port\":1,\"jmx_port\":-1}",
		"{\"version\":1,\"host\":7,\"port\":1,\"jmx_port\":-1}",
		/* endpoints missing / not an array / not strings */
		"{\"version\":5,\"jmx_port\":-1}",
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":\"PLAINTEXT://h:1\"}",
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":[1]}",
		/* endpoint without port, port out of range, bad host, no scheme */
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"PLAINTEXT://h\"]}",
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"PLAINTEXT://h:65536\"]}",
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"PLAINTEXT://h:-1\"]}",
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"PLAINTEXT://h h:1\"]}",
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"h:1\"]}",
		/* listener not a protocol and no map; listener missing from the map;
		 * unknown protocol in the map; repeated listener */
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"INTERNAL://h:1\"]}",
		("{\"version\":4,\"jmx_port\":-1,\"listener_security_protocol_map\":{},"
		 "\"endpoints\":[\"INTERNAL://h:1\"]}"),
		("{\"version\":4,\"jmx_port\":-1,\"listener_security_protocol_map\":{\"A\":\"TLS\"},"
		 "\"endpoints\":[\"A://h:1\"]}"),
		"{\"version\":2,\"jmx_port\":-1,\"endpoints\":[\"SSL://h:1\",\"SSL://h:2\"]}",
		/* timestamp a number, not decimal; features not an object; rack a number */
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":[],\"timestamp\":1}",
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":[],\"timestamp\":\"12a\"}",
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":[],\"features\":[]}",
		"{\"version\":5,\"jmx_port\":-1,\"endpoints\":[],\"rack\":1}",
		/* not an object at all; jmx_port beyond int32 */
		"[]", "5",
		"{\"version\":5,\"jmx_port\":2147483648,\"endpoints\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_broker_decode(bad[i], slen(bad[i]), &arena, &b) == -EINVAL,
			      "accepted: %s", bad[i]);
	ck_assert_int_eq(ctl_zkj_broker_decode(NULL, -1, &arena, &b), -EINVAL); /* null data */
}
END_TEST

/* ---- /controller and /controller_epoch ---- */

static int enc_controller(char **out, size_t *len)
{
	ctl_zkj_controller c = { .broker_id = 2, .timestamp = 1732880000123LL };
	return ctl_zkj_controller_encode(&c, out, len);
}

START_TEST(test_controller)
{
	ENC_EQ(enc_controller, "{\"version\":1,\"brokerid\":2,\"timestamp\":\"1732880000123\"}");
	ctl_zkj_controller c;
	/* v2 as a Kafka 3.x broker wrote it (zkCli get /controller) */
	const char *v2 = "{\"version\":2,\"brokerid\":0,\"timestamp\":\"1781706151854\","
			 "\"kraftControllerEpoch\":-1}";
	ck_assert_int_eq(ctl_zkj_controller_decode(v2, slen(v2), &arena, &c), 0);
	ck_assert_int_eq(c.version, 2);
	ck_assert_int_eq(c.broker_id, 0);
	ck_assert(c.timestamp == 1781706151854LL);
	ck_assert_int_eq(c.kraft_controller_epoch, -1);
	const char *v1 = "{\"timestamp\":\"1555399391766\",\"brokerid\":7,\"version\":1}";
	ck_assert_int_eq(ctl_zkj_controller_decode(v1, slen(v1), &arena, &c), 0);
	ck_assert_int_eq(c.broker_id, 7);
	static const char *const bad[] = {
		"{\"version\":1,\"brokerid\":\"2\"}", "{\"version\":3,\"brokerid\":2}",
		"{\"brokerid\":2}", "{\"version\":1}", "{\"version\":1,\"brokerid\":-1}",
		"{\"version\":2,\"brokerid\":1,\"kraftControllerEpoch\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_controller_decode(bad[i], slen(bad[i]), &arena, &c) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

static int enc_epoch(char **out, size_t *len)
{
	return ctl_zkj_controller_epoch_encode(7, out, len);
}

START_TEST(test_controller_epoch)
{
	ENC_EQ(enc_epoch, "7");
	int32_t e;
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode("0", 1, &e), 0);
	ck_assert_int_eq(e, 0);
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode("2147483647", 10, &e), 0);
	ck_assert_int_eq(e, INT32_MAX);
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode("+12", 3, &e), 0);
	ck_assert_int_eq(e, 12);
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode("-1", 2, &e), 0);
	ck_assert_int_eq(e, -1);
	/* "12" inside a longer buffer: only len bytes count */
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode("123", 2, &e), 0);
	ck_assert_int_eq(e, 12);
	static const char *const bad[] = { "", " 7", "7\n", "2147483648", "abc", "7a", "-", "1.0",
					   "18446744073709551623" /* 2^64 + 7 */ };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_controller_epoch_decode(bad[i], slen(bad[i]), &e) == -EINVAL,
			      "accepted: %s", bad[i]);
	ck_assert_int_eq(ctl_zkj_controller_epoch_decode(NULL, -1, &e), -EINVAL);
}
END_TEST

/* ---- topic assignment ---- */

static void set_id(ctl_zkj_topic *t, const char *b64)
{
	ck_assert_int_eq(logdir_uuid_from_string(b64, t->topic_id), 0);
	t->has_topic_id = true;
}

START_TEST(test_topic_encode_kafka_sample)
{
	/* get /brokers/topics/demo of a 3-broker Kafka 3.x cluster */
	int32_t r0[] = { 2, 3, 1 }, r1[] = { 3, 1, 2 }, r2[] = { 1, 2, 3 };
	ctl_zkj_assignment p[] = { { .replicas = r0, .nreplicas = 3 }, { .replicas = r1, .nreplicas = 3 },
				   { .replicas = r2, .nreplicas = 3 } };
	ctl_zkj_topic t = { .partitions = p, .npartitions = 3 };
	set_id(&t, "cMr3GpVESX2L3byPGf93lQ");
	char *out;
	size_t len;
	ck_assert_int_eq(ctl_zkj_topic_encode(&t, &out, &len), 0);
	ck_assert_str_eq(out, "{\"partitions\":{\"0\":[2,3,1],\"1\":[3,1,2],\"2\":[1,2,3]},"
			      "\"topic_id\":\"cMr3GpVESX2L3byPGf93lQ\",\"adding_replicas\":{},"
			      "\"removing_replicas\":{},\"version\":3}");
	ck_assert_uint_eq(len, strlen(out));
	/* round trip */
	ctl_zkj_topic d;
	ck_assert_int_eq(ctl_zkj_topic_decode(out, (int)len, &arena, &d), 0);
	ck_assert_int_eq(d.version, 3);
	ck_assert(d.has_topic_id);
	ck_assert_mem_eq(d.topic_id, t.topic_id, 16);
	ck_assert_int_eq(d.npartitions, 3);
	ck_assert_int_eq(d.partitions[1].nreplicas, 3);
	ck_assert_int_eq(d.partitions[1].replicas[0], 3);
	ck_assert_int_eq(d.partitions[2].nadding, 0);
	free(out);
}
END_TEST

START_TEST(test_topic_encode_hash_order)
{
	/* 12 partitions: Scala's mutable.HashMap has grown to 32 buckets and
	 * "11" hashes into bucket 0 ahead of "0". A Kafka 2.x topic znode of 12
	 * partitions (a blog's zkCli dump) lists them in exactly this order. */
	int32_t rs[12][3] = { { 0, 1, 2 }, { 1, 2, 3 }, { 2, 3, 4 }, { 3, 4, 0 }, { 4, 0, 1 },
			      { 0, 2, 3 }, { 1, 3, 4 }, { 2, 4, 0 }, { 3, 0, 1 }, { 4, 1, 2 },
			      { 1, 2, 3 }, { 1, 3, 4 } };
	ctl_zkj_assignment p[12];
	for (int i = 0; i < 12; i++)
		p[i] = (ctl_zkj_assignment){ rs[i], 3, NULL, 0, NULL, 0 };
	int32_t add[] = { 5 }, rem[] = { 4 };
	p[4].adding = add, p[4].nadding = 1;
	p[4].removing = rem, p[4].nremoving = 1;
	ctl_zkj_topic t = { .partitions = p, .npartitions = 12 };
	set_id(&t, "AAAAAAAAAAAAAAAAAAAAAQ");
	char *out;
	ck_assert_int_eq(ctl_zkj_topic_encode(&t, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"partitions\":{\"11\":[1,3,4],\"0\":[0,1,2],\"1\":[1,2,3],"
			      "\"2\":[2,3,4],\"3\":[3,4,0],\"4\":[4,0,1],\"5\":[0,2,3],\"6\":[1,3,4],"
			      "\"7\":[2,4,0],\"8\":[3,0,1],\"9\":[4,1,2],\"10\":[1,2,3]},"
			      "\"topic_id\":\"AAAAAAAAAAAAAAAAAAAAAQ\",\"adding_replicas\":{\"4\":[5]},"
			      "\"removing_replicas\":{\"4\":[4]},\"version\":3}");
	ctl_zkj_topic d;
	ck_assert_int_eq(ctl_zkj_topic_decode(out, slen(out), &arena, &d), 0);
	ck_assert_int_eq(d.npartitions, 12);
	ck_assert_int_eq(d.partitions[11].replicas[2], 4);
	ck_assert_int_eq(d.partitions[4].nadding, 1);
	ck_assert_int_eq(d.partitions[4].adding[0], 5);
	ck_assert_int_eq(d.partitions[4].removing[0], 4);
	free(out);
	/* 20 partitions: "11".."19" first, then "0".."10" */
	int32_t one[] = { 1 };
	ctl_zkj_assignment q[20];
	for (int i = 0; i < 20; i++)
		q[i] = (ctl_zkj_assignment){ one, 1, NULL, 0, NULL, 0 };
	t.partitions = q, t.npartitions = 20;
	ck_assert_int_eq(ctl_zkj_topic_encode(&t, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"partitions\":{\"11\":[1],\"12\":[1],\"13\":[1],\"14\":[1],"
			      "\"15\":[1],\"16\":[1],\"17\":[1],\"18\":[1],\"19\":[1],\"0\":[1],"
			      "\"1\":[1],\"2\":[1],\"3\":[1],\"4\":[1],\"5\":[1],\"6\":[1],\"7\":[1],"
			      "\"8\":[1],\"9\":[1],\"10\":[1]},\"topic_id\":\"AAAAAAAAAAAAAAAAAAAAAQ\","
			      "\"adding_replicas\":{},\"removing_replicas\":{},\"version\":3}");
	free(out);
}
END_TEST

START_TEST(test_topic_decode_versions)
{
	ctl_zkj_topic t;
	const char *v1 = "{\"version\":1,\"partitions\":{\"1\":[2,1],\"0\":[1,2]}}";
	ck_assert_int_eq(ctl_zkj_topic_decode(v1, slen(v1), &arena, &t), 0);
	ck_assert_int_eq(t.version, 1);
	ck_assert(!t.has_topic_id);
	ck_assert_int_eq(t.npartitions, 2);
	ck_assert_int_eq(t.partitions[1].replicas[0], 2);
	/* v2 during a reassignment (KIP-455), members shuffled */
	const char *v2 = "{\"removing_replicas\":{\"0\":[3]},\"partitions\":{\"0\":[1,2,3,4]},"
			 "\"adding_replicas\":{\"0\":[4]},\"version\":2}";
	ck_assert_int_eq(ctl_zkj_topic_decode(v2, slen(v2), &arena, &t), 0);
	ck_assert_int_eq(t.partitions[0].nreplicas, 4);
	ck_assert_int_eq(t.partitions[0].adding[0], 4);
	ck_assert_int_eq(t.partitions[0].removing[0], 3);
	/* v3, a Kafka 3.x sample in another order with an unknown member, an
	 * id with Java's padding */
	const char *v3 = "{\"version\":3,\"future\":{\"a\":[]},\"topic_id\":\"zeTNbNaeRS-h5yGiMZBOyg==\","
			 "\"partitions\":{\"0\":[1,0],\"1\":[0,1],\"2\":[1,0],\"3\":[0,1]},"
			 "\"adding_replicas\":{},\"removing_replicas\":{}}";
	ck_assert_int_eq(ctl_zkj_topic_decode(v3, slen(v3), &arena, &t), 0);
	ck_assert(t.has_topic_id);
	char id[23];
	logdir_uuid_to_string(t.topic_id, id);
	ck_assert_str_eq(id, "zeTNbNaeRS-h5yGiMZBOyg");
	ck_assert_int_eq(t.npartitions, 4);
}
END_TEST

START_TEST(test_topic_decode_refuses)
{
	ctl_zkj_topic t;
	static const char *const bad[] = {
		"{\"version\":3,\"partitions\":{\"0\":[1],\"2\":[1]}}",  /* gap */
		"{\"version\":3,\"partitions\":{\"1\":[1]}}",            /* no 0 */
		"{\"version\":3,\"partitions\":{\"0\":[1],\"01\":[1]}}", /* non-canonical */
		"{\"version\":3,\"partitions\":{\"-1\":[1]}}",
		"{\"version\":3,\"partitions\":{\"x\":[1]}}",
		"{\"version\":3,\"partitions\":{}}",                     /* no partition */
		"{\"version\":3,\"partitions\":{\"0\":[]}}",             /* no replica */
		"{\"version\":3,\"partitions\":{\"0\":[1,1]}}",          /* repeated replica */
		"{\"version\":3,\"partitions\":{\"0\":[-1]}}",
		"{\"version\":3,\"partitions\":{\"0\":[1.0]}}",
		"{\"version\":3,\"partitions\":{\"0\":[\"1\"]}}",
		"{\"version\":3,\"partitions\":{\"0\":[2147483648]}}",
		"{\"version\":3,\"partitions\":{\"0\":1}}",
		"{\"version\":3,\"partitions\":[[1]]}",
		"{\"version\":3}",
		"{\"partitions\":{\"0\":[1]}}",                          /* no version */
		"{\"version\":4,\"partitions\":{\"0\":[1]}}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"adding_replicas\":{\"1\":[2]}}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"adding_replicas\":[]}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"removing_replicas\":{\"0\":[1,1]}}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"topic_id\":\"short\"}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"topic_id\":\"q2Zk1Pk2Sxy8rG0m9aXq4!\"}",
		"{\"version\":3,\"partitions\":{\"0\":[1]},\"topic_id\":null}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_topic_decode(bad[i], slen(bad[i]), &arena, &t) == -EINVAL,
			      "accepted: %s", bad[i]);
	/* encode refuses what it cannot write */
	char *out;
	int32_t r[] = { 1, 1 };
	ctl_zkj_assignment p = { r, 2, NULL, 0, NULL, 0 };
	ctl_zkj_topic e = { .partitions = &p, .npartitions = 1, .has_topic_id = true };
	ck_assert_int_eq(ctl_zkj_topic_encode(&e, &out, NULL), -EINVAL); /* repeat */
	p.nreplicas = 1;
	e.has_topic_id = false;
	ck_assert_int_eq(ctl_zkj_topic_encode(&e, &out, NULL), -EINVAL); /* no id */
	e.has_topic_id = true;
	e.npartitions = 0;
	ck_assert_int_eq(ctl_zkj_topic_encode(&e, &out, NULL), -EINVAL);
}
END_TEST

/* ---- partition state ---- */

START_TEST(test_partition_state)
{
	int32_t isr[] = { 2, 3 };
	ctl_zkj_partition_state s = { .controller_epoch = 5, .leader = 2, .leader_epoch = 11,
				      .isr = isr, .nisr = 2 };
	char *out;
	ck_assert_int_eq(ctl_zkj_partition_state_encode(&s, &out, NULL), 0);
	/* CLUSTER.md 1.4, Kafka's order */
	ck_assert_str_eq(out, "{\"controller_epoch\":5,\"leader\":2,\"version\":1,"
			      "\"leader_epoch\":11,\"isr\":[2,3]}");
	free(out);
	s.leader_recovery_state = 1;
	s.nisr = 1;
	ck_assert_int_eq(ctl_zkj_partition_state_encode(&s, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"controller_epoch\":5,\"leader\":2,\"version\":1,"
			      "\"leader_recovery_state\":1,\"leader_epoch\":11,\"isr\":[2]}");
	ctl_zkj_partition_state d;
	ck_assert_int_eq(ctl_zkj_partition_state_decode(out, slen(out), &arena, &d), 0);
	ck_assert_int_eq(d.leader_recovery_state, 1);
	ck_assert_int_eq(d.nisr, 1);
	free(out);
	/* a Kafka 3.x sample; leader -1 with the last ISR member kept */
	const char *k = "{\"controller_epoch\":20,\"leader\":1,\"version\":1,\"leader_epoch\":2,"
			"\"isr\":[1,0]}";
	ck_assert_int_eq(ctl_zkj_partition_state_decode(k, slen(k), &arena, &d), 0);
	ck_assert_int_eq(d.controller_epoch, 20);
	ck_assert_int_eq(d.leader, 1);
	ck_assert_int_eq(d.leader_epoch, 2);
	ck_assert_int_eq(d.nisr, 2);
	ck_assert_int_eq(d.isr[1], 0);
	ck_assert_int_eq(d.leader_recovery_state, 0);
	const char *off = "{\"isr\":[3],\"leader_epoch\":9,\"leader\":-1,\"version\":1,"
			  "\"controller_epoch\":4,\"x\":\"y\"}";
	ck_assert_int_eq(ctl_zkj_partition_state_decode(off, slen(off), &arena, &d), 0);
	ck_assert_int_eq(d.leader, -1);
	static const char *const bad[] = {
		"{\"controller_epoch\":5,\"leader\":2,\"version\":2,\"leader_epoch\":1,\"isr\":[2]}",
		"{\"controller_epoch\":5,\"leader\":-2,\"version\":1,\"leader_epoch\":1,\"isr\":[2]}",
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1,\"isr\":[2,2]}",
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1}",
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"isr\":[2]}",
		"{\"leader\":2,\"version\":1,\"leader_epoch\":1,\"isr\":[2]}",
		("{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1,\"isr\":[2],"
		 "\"leader_recovery_state\":2}"),
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":-1,\"isr\":[2]}",
		"{\"controller_epoch\":5,\"leader\":\"2\",\"version\":1,\"leader_epoch\":1,\"isr\":[2]}",
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1,\"isr\":{}}",
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1e2,\"isr\":[]}",
		("{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":1,\"isr\":[],"
		 "\"leader\":3}"),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_partition_state_decode(bad[i], slen(bad[i]), &arena, &d) ==
				      -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

/* ---- configs ---- */

START_TEST(test_config)
{
	ctl_zkj_config_entry e[] = { { "min.insync.replicas", "2" }, { "retention.ms", "86400000" } };
	ctl_zkj_config c = { e, 2 };
	char *out;
	ck_assert_int_eq(ctl_zkj_config_encode(&c, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"config\":{\"min.insync.replicas\":\"2\","
			      "\"retention.ms\":\"86400000\"}}");
	free(out);
	/* 14 names filled in this order into a java.util.Properties and printed
	 * by Jackson 2.14 (OpenJDK 17): the table has grown to 32 bins and bin
	 * 27 holds three names in insertion order */
	static const char *const names[] = {
		"cleanup.policy", "compression.type", "retention.ms", "segment.bytes",
		"min.insync.replicas", "unclean.leader.election.enable", "max.message.bytes",
		"retention.bytes", "segment.ms", "message.timestamp.type", "file.delete.delay.ms",
		"flush.ms", "flush.messages", "index.interval.bytes",
	};
	ctl_zkj_config_entry many[14];
	for (int i = 0; i < 14; i++)
		many[i] = (ctl_zkj_config_entry){ names[i], "x" };
	c = (ctl_zkj_config){ many, 14 };
	ck_assert_int_eq(ctl_zkj_config_encode(&c, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"config\":{\"compression.type\":\"x\","
			      "\"file.delete.delay.ms\":\"x\",\"max.message.bytes\":\"x\","
			      "\"message.timestamp.type\":\"x\",\"min.insync.replicas\":\"x\","
			      "\"index.interval.bytes\":\"x\",\"unclean.leader.election.enable\":\"x\","
			      "\"retention.bytes\":\"x\",\"cleanup.policy\":\"x\",\"flush.ms\":\"x\","
			      "\"retention.ms\":\"x\",\"segment.bytes\":\"x\",\"segment.ms\":\"x\","
			      "\"flush.messages\":\"x\"}}");
	ctl_zkj_config d;
	ck_assert_int_eq(ctl_zkj_config_decode(out, slen(out), &arena, &d), 0);
	ck_assert_int_eq(d.nentries, 14);
	ck_assert_str_eq(d.entries[0].name, "compression.type");
	free(out);
	/* empty; a broker config sample from a monitoring tool's tests */
	c.nentries = 0;
	ck_assert_int_eq(ctl_zkj_config_encode(&c, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"config\":{}}");
	free(out);
	const char *k = "{\"version\":1,\"config\":{\"flush.messages\":\"12345\"}}";
	ck_assert_int_eq(ctl_zkj_config_decode(k, slen(k), &arena, &d), 0);
	ck_assert_int_eq(d.nentries, 1);
	ck_assert_str_eq(d.entries[0].value, "12345");
	static const char *const bad[] = {
		"{\"version\":1,\"config\":{\"retention.ms\":86400000}}",
		"{\"version\":1,\"config\":{\"a\":null}}",
		"{\"version\":1,\"config\":[]}",
		"{\"version\":1}",
		"{\"version\":2,\"config\":{}}",
		"{\"config\":{}}",
		"{\"version\":1,\"config\":{\"a\":\"1\",\"a\":\"2\"}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_config_decode(bad[i], slen(bad[i]), &arena, &d) == -EINVAL,
			      "accepted: %s", bad[i]);
	ctl_zkj_config_entry twice[] = { { "a", "1" }, { "a", "2" } };
	c = (ctl_zkj_config){ twice, 2 };
	ck_assert_int_eq(ctl_zkj_config_encode(&c, &out, NULL), -EINVAL);
}
END_TEST

static int enc_change(char **out, size_t *len)
{
	return ctl_zkj_config_change_encode("topics", "orders", out, len);
}

START_TEST(test_config_change)
{
	ENC_EQ(enc_change, "{\"version\":2,\"entity_path\":\"topics/orders\"}");
	ctl_zkj_config_change c;
	const char *v1 = "{\"entity_name\":\"orders\",\"version\":1,\"entity_type\":\"topics\"}";
	ck_assert_int_eq(ctl_zkj_config_change_decode(v1, slen(v1), &arena, &c), 0);
	ck_assert_int_eq(c.version, 1);
	ck_assert_str_eq(c.entity_type, "topics");
	ck_assert_str_eq(c.entity_name, "orders");
	const char *v2 = "{\"version\":2,\"entity_path\":\"users/alice/clients/app\"}";
	ck_assert_int_eq(ctl_zkj_config_change_decode(v2, slen(v2), &arena, &c), 0);
	ck_assert_str_eq(c.entity_type, "users");
	ck_assert_str_eq(c.entity_name, "alice/clients/app");
	static const char *const bad[] = {
		"{\"version\":2,\"entity_path\":\"topics\"}",
		"{\"version\":2,\"entity_path\":\"/orders\"}",
		"{\"version\":2,\"entity_path\":\"topics/\"}",
		"{\"version\":2}",
		"{\"version\":1,\"entity_type\":\"topics\"}",
		"{\"version\":3,\"entity_path\":\"topics/a\"}",
		"{\"version\":1,\"entity_type\":\"topics\",\"entity_name\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_config_change_decode(bad[i], slen(bad[i]), &arena, &c) == -EINVAL,
			      "accepted: %s", bad[i]);
	char *out;
	ck_assert_int_eq(ctl_zkj_config_change_encode("topics", "", &out, NULL), -EINVAL);
	ck_assert_int_eq(ctl_zkj_config_change_encode("a/b", "c", &out, NULL), -EINVAL);
}
END_TEST

/* ---- producer id block, cluster id, isr change ---- */

static int enc_pid(char **out, size_t *len)
{
	ctl_zkj_pid_block b = { 1, 4000, 4999 };
	return ctl_zkj_pid_block_encode(&b, out, len);
}

START_TEST(test_pid_block)
{
	ENC_EQ(enc_pid, "{\"version\":1,\"broker\":1,\"block_start\":\"4000\",\"block_end\":\"4999\"}");
	ctl_zkj_pid_block b;
	const char *k = "{\"block_end\":\"9223372036854775807\",\"broker\":3,\"version\":1,"
			"\"block_start\":\"9223372036854774808\"}";
	ck_assert_int_eq(ctl_zkj_pid_block_decode(k, slen(k), &b), 0);
	ck_assert_int_eq(b.broker, 3);
	ck_assert(b.block_end == INT64_MAX);
	ck_assert(b.block_start == INT64_MAX - 999);
	static const char *const bad[] = {
		"{\"version\":1,\"broker\":1,\"block_start\":4000,\"block_end\":\"4999\"}",
		"{\"version\":1,\"broker\":1,\"block_start\":\"5000\",\"block_end\":\"4999\"}",
		"{\"version\":1,\"broker\":1,\"block_start\":\"-5\",\"block_end\":\"4999\"}",
		"{\"version\":1,\"broker\":1,\"block_start\":\"0\",\"block_end\":\"9223372036854775808\"}",
		"{\"version\":1,\"broker\":1,\"block_start\":\"0\",\"block_end\":\"4294967296\"}",
		/* 2^64 + 1: wraps to 1 in a parser that does not check overflow */
		"{\"version\":1,\"broker\":1,\"block_start\":\"0\",\"block_end\":\"18446744073709551617\"}",
		"{\"version\":1,\"block_start\":\"0\",\"block_end\":\"1\"}",
		"{\"version\":2,\"broker\":1,\"block_start\":\"0\",\"block_end\":\"1\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_pid_block_decode(bad[i], slen(bad[i]), &b) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

static int enc_cluster(char **out, size_t *len)
{
	return ctl_zkj_cluster_id_encode("q2Zk1Pk2Sxy8rG0m9aXq4A", out, len);
}

START_TEST(test_cluster_id)
{
	ENC_EQ(enc_cluster, "{\"version\":\"1\",\"id\":\"q2Zk1Pk2Sxy8rG0m9aXq4A\"}");
	const char *id;
	const char *k = "{\"id\":\"ikAub9q6QcW9qUakngNwfQ\",\"version\":\"1\"}";
	ck_assert_int_eq(ctl_zkj_cluster_id_decode(k, slen(k), &arena, &id), 0);
	ck_assert_str_eq(id, "ikAub9q6QcW9qUakngNwfQ");
	static const char *const bad[] = {
		"{\"version\":1,\"id\":\"x\"}", "{\"version\":\"2\",\"id\":\"x\"}",
		"{\"version\":\"1\",\"id\":\"\"}", "{\"version\":\"1\"}", "{\"version\":\"1\",\"id\":7}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_cluster_id_decode(bad[i], slen(bad[i]), &arena, &id) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

START_TEST(test_isr_change)
{
	ctl_zkj_topic_partition tp[] = { { "t", 0 }, { "t", 3 } };
	char *out;
	ck_assert_int_eq(ctl_zkj_isr_change_encode(tp, 2, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0},"
			      "{\"topic\":\"t\",\"partition\":3}]}");
	ctl_zkj_topic_partition *d;
	int32_t n;
	ck_assert_int_eq(ctl_zkj_isr_change_decode(out, slen(out), &arena, &d, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(d[1].topic, "t");
	ck_assert_int_eq(d[1].partition, 3);
	free(out);
	static const char *const bad[] = {
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\"}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"\",\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":-1}]}",
		"{\"version\":1,\"partitions\":[[\"t\",0]]}",
		"{\"version\":1,\"partitions\":{}}",
		"{\"version\":2,\"partitions\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_isr_change_decode(bad[i], slen(bad[i]), &arena, &d, &n) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

START_TEST(test_reassign)
{
	int32_t r0[] = { 2, 3, 4 }, r1[] = { 1 };
	ctl_zkj_reassignment in[] = { { "t", 0, r0, 3 }, { "orders", 7, r1, 1 } };
	char *out;
	ck_assert_int_eq(ctl_zkj_reassign_encode(in, 2, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,"
			      "\"replicas\":[2,3,4]},{\"topic\":\"orders\",\"partition\":7,"
			      "\"replicas\":[1]}]}");
	ctl_zkj_reassignment *d;
	int32_t n;
	ck_assert_int_eq(ctl_zkj_reassign_decode(out, slen(out), &arena, &d, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(d[0].topic, "t");
	ck_assert_int_eq(d[0].nreplicas, 3);
	ck_assert_int_eq(d[0].replicas[2], 4);
	ck_assert_str_eq(d[1].topic, "orders");
	ck_assert_int_eq(d[1].partition, 7);
	free(out);
	/* as a 2.x tool writes it (with log_dirs), members in any order; the
	 * values a tool may put there are the controller's to judge */
	const char *k = "{\"partitions\":[{\"replicas\":[3,3],\"partition\":1,\"topic\":\"x\","
			"\"log_dirs\":[\"any\",\"any\"]},{\"topic\":\"y\",\"partition\":0,"
			"\"replicas\":[]}],\"version\":1}";
	ck_assert_int_eq(ctl_zkj_reassign_decode(k, slen(k), &arena, &d, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(d[0].nreplicas, 2);
	ck_assert_int_eq(d[1].nreplicas, 0);
	const char *none = "{\"version\":1,\"partitions\":[]}";
	ck_assert_int_eq(ctl_zkj_reassign_decode(none, slen(none), &arena, &d, &n), 0);
	ck_assert_int_eq(n, 0);
	static const char *const bad[] = {
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"\",\"partition\":0,\"replicas\":[1]}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":-1,\"replicas\":[1]}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[\"1\"]}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1e40]}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":{}}]}",
		"{\"version\":1,\"partitions\":{}}",
		"{\"version\":2,\"partitions\":[]}",
		"{\"partitions\":[]}",
		"[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_reassign_decode(bad[i], slen(bad[i]), &arena, &d, &n) == -EINVAL,
			      "accepted: %s", bad[i]);
	ck_assert_int_eq(ctl_zkj_reassign_decode(NULL, -1, &arena, &d, &n), -EINVAL);
	/* the encoder refuses what Kafka's could not have written */
	int32_t neg[] = { -1 };
	ctl_zkj_reassignment b1[] = { { "t", 0, neg, 1 } }, b2[] = { { "", 0, r1, 1 } },
			     b3[] = { { "t", -2, r1, 1 } };
	ck_assert_int_eq(ctl_zkj_reassign_encode(b1, 1, &out, NULL), -EINVAL);
	ck_assert_int_eq(ctl_zkj_reassign_encode(b2, 1, &out, NULL), -EINVAL);
	ck_assert_int_eq(ctl_zkj_reassign_encode(b3, 1, &out, NULL), -EINVAL);
}
END_TEST

/* /admin/preferred_replica_election as Kafka 2.x's tool wrote it, as an
 * operator may write it by hand, and what is refused; every prefix of a
 * good one is refused too. */
START_TEST(test_preferred_election)
{
	ctl_zkj_topic_partition tp[] = { { "orders", 2 }, { "a.b_c-d", 0 } };
	char *out;
	size_t len;
	ck_assert_int_eq(ctl_zkj_preferred_election_encode(tp, 2, &out, &len), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"partitions\":[{\"topic\":\"orders\",\"partition\":2},"
			      "{\"topic\":\"a.b_c-d\",\"partition\":0}]}");
	ck_assert_uint_eq(len, strlen(out));
	ctl_zkj_topic_partition *d;
	int32_t n;
	ck_assert_int_eq(ctl_zkj_preferred_election_decode(out, slen(out), &arena, &d, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(d[0].topic, "orders");
	ck_assert_int_eq(d[0].partition, 2);
	ck_assert_str_eq(d[1].topic, "a.b_c-d");
	ck_assert_int_eq(d[1].partition, 0);
	int good_len = slen(out);
	for (int k = 0; k < good_len; k++) {
		char *p = malloc((size_t)k + 1);
		memcpy(p, out, (size_t)k);
		ck_assert_msg(ctl_zkj_preferred_election_decode(p, k, &arena, &d, &n) == -EINVAL,
			      "took %d bytes", k);
		free(p);
	}
	free(out);
	/* by hand: members in any order, no version, unknown members, a
	 * partition twice, an empty list */
	static const char *const ok[] = {
		"{\"partitions\":[{\"partition\":1,\"topic\":\"t\"}]}",
		"{\"partitions\":[{\"topic\":\"t\",\"partition\":1,\"x\":[]}],\"version\":1,\"by\":\"me\"}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":1},"
		"{\"topic\":\"t\",\"partition\":1}]}",
		"{\"version\":1,\"partitions\":[]}",
	};
	static const int32_t want_n[] = { 1, 1, 2, 0 };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(ctl_zkj_preferred_election_decode(ok[i], slen(ok[i]), &arena, &d, &n) == 0,
			      "refused: %s", ok[i]);
		ck_assert_int_eq(n, want_n[i]);
		if (n > 0) {
			ck_assert_str_eq(d[0].topic, "t");
			ck_assert_int_eq(d[0].partition, 1);
		}
	}
	ck_assert_int_eq(ctl_zkj_preferred_election_encode(NULL, 0, &out, NULL), 0);
	ck_assert_str_eq(out, "{\"version\":1,\"partitions\":[]}");
	free(out);
	static const char *const bad[] = {
		"{}",
		"{\"version\":1}",
		"{\"version\":2,\"partitions\":[]}",
		"{\"version\":\"1\",\"partitions\":[]}",
		"{\"version\":1,\"partitions\":{}}",
		"{\"version\":1,\"partitions\":null}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\"}]}",
		"{\"version\":1,\"partitions\":[{\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"\",\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":7,\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":-1}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":2147483648}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":\"0\"}]}",
		"{\"version\":1,\"partitions\":[[\"t\",0]]}",
		"[{\"topic\":\"t\",\"partition\":0}]",
		"not json",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_zkj_preferred_election_decode(bad[i], slen(bad[i]), &arena, &d, &n) ==
				      -EINVAL,
			      "accepted: %s", bad[i]);
	ck_assert_int_eq(ctl_zkj_preferred_election_decode(NULL, -1, &arena, &d, &n), -EINVAL);
}
END_TEST

/* ---- every decoder against truncation and deep nesting ---- */

static int decode_any(int which, const char *s, int len)
{
	ctl_zkj_broker b;
	ctl_zkj_controller c;
	ctl_zkj_topic t;
	ctl_zkj_partition_state ps;
	ctl_zkj_config cf;
	ctl_zkj_config_change cc;
	ctl_zkj_pid_block pb;
	ctl_zkj_topic_partition *tp;
	ctl_zkj_reassignment *ra;
	const char *id;
	int32_t n, e;
	switch (which) {
	case 0: return ctl_zkj_broker_decode(s, len, &arena, &b);
	case 1: return ctl_zkj_controller_decode(s, len, &arena, &c);
	case 2: return ctl_zkj_topic_decode(s, len, &arena, &t);
	case 3: return ctl_zkj_partition_state_decode(s, len, &arena, &ps);
	case 4: return ctl_zkj_config_decode(s, len, &arena, &cf);
	case 5: return ctl_zkj_config_change_decode(s, len, &arena, &cc);
	case 6: return ctl_zkj_pid_block_decode(s, len, &pb);
	case 7: return ctl_zkj_cluster_id_decode(s, len, &arena, &id);
	case 8: return ctl_zkj_isr_change_decode(s, len, &arena, &tp, &n);
	case 9: return ctl_zkj_reassign_decode(s, len, &arena, &ra, &n);
	default: return ctl_zkj_controller_epoch_decode(s, len, &e);
	}
}

START_TEST(test_truncated)
{
	static const char *const good[] = {
		("{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":\"PLAINTEXT\"},"
		 "\"endpoints\":[\"PLAINTEXT://127.0.0.1:9092\"],\"jmx_port\":-1,\"port\":9092,"
		 "\"host\":\"127.0.0.1\",\"version\":5,\"timestamp\":\"1732880000123\"}"),
		"{\"version\":1,\"brokerid\":2,\"timestamp\":\"1732880000123\"}",
		("{\"partitions\":{\"0\":[2,3,1],\"1\":[3,1,2]},\"topic_id\":\"cMr3GpVESX2L3byPGf93lQ\","
		 "\"adding_replicas\":{},\"removing_replicas\":{},\"version\":3}"),
		"{\"controller_epoch\":5,\"leader\":2,\"version\":1,\"leader_epoch\":11,\"isr\":[2,3]}",
		"{\"version\":1,\"config\":{\"min.insync.replicas\":\"2\"}}",
		"{\"version\":2,\"entity_path\":\"topics/orders\"}",
		"{\"version\":1,\"broker\":1,\"block_start\":\"4000\",\"block_end\":\"4999\"}",
		"{\"version\":\"1\",\"id\":\"q2Zk1Pk2Sxy8rG0m9aXq4A\"}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0}]}",
		"{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[2,3]}]}",
	};
	for (int w = 0; w < 10; w++) {
		int len = slen(good[w]);
		ck_assert_int_eq(decode_any(w, good[w], len), 0);
		/* copy each prefix so a read past its end is ASan's to see */
		for (int n = 0; n < len; n++) {
			char *p = malloc((size_t)n + 1);
			memcpy(p, good[w], (size_t)n);
			ck_assert_msg(decode_any(w, p, n) == -EINVAL, "codec %d took %d bytes", w, n);
			free(p);
		}
	}
}
END_TEST

START_TEST(test_too_deep)
{
	char s[512];
	int n = snprintf(s, sizeof(s), "{\"version\":5,\"jmx_port\":-1,\"endpoints\":[],\"features\":");
	for (int i = 0; i < 40; i++)
		s[n++] = '[';
	for (int i = 0; i < 40; i++)
		s[n++] = ']';
	s[n++] = '}';
	s[n] = 0;
	ctl_zkj_broker b;
	ck_assert_int_eq(ctl_zkj_broker_decode(s, n, &arena, &b), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zk_json");
	TCase *tc = tcase_create("codecs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_broker_encode_v5);
	tcase_add_test(tc, test_broker_encode_kafka_sample);
	tcase_add_test(tc, test_broker_encode_edges);
	tcase_add_test(tc, test_broker_decode_versions);
	tcase_add_test(tc, test_broker_decode_refuses);
	tcase_add_test(tc, test_controller);
	tcase_add_test(tc, test_controller_epoch);
	tcase_add_test(tc, test_topic_encode_kafka_sample);
	tcase_add_test(tc, test_topic_encode_hash_order);
	tcase_add_test(tc, test_topic_decode_versions);
	tcase_add_test(tc, test_topic_decode_refuses);
	tcase_add_test(tc, test_partition_state);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_config_change);
	tcase_add_test(tc, test_pid_block);
	tcase_add_test(tc, test_cluster_id);
	tcase_add_test(tc, test_isr_change);
	tcase_add_test(tc, test_reassign);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_too_deep);
	tcase_add_test(tc, test_preferred_election);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
