/*
 * produce_consume.c - round trip through the real broker with librdkafka:
 * 100,000 keyed records with two headers each to a 3-partition topic with
 * acks=1, once per compression codec (none, gzip, snappy, lz4, zstd);
 * consume every partition back by assignment from the beginning and check
 * each record (partition, offset, key, value, headers, timestamp) and the
 * order within each partition; then kill -9 the broker, restart it on the
 * same data dir and port, and read everything again identically.
 *
 * Record i goes to partition i % 3, so partition p holds records
 * p, p+3, p+6... at offsets 0, 1, 2...; the delivery report of each record
 * must give that offset too. SAMSA_PC_RECORDS overrides the count (quick
 * runs).
 *
 * The codec is proven on disk: librdkafka quietly sends uncompressed batches
 * when it cannot use a codec, so after producing, the first batch of each
 * partition's first segment must carry the codec's id in its attributes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"

#define NPART 3
#define MAX_VALUE 400

static const char *const codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
#define NCODECS ((int)(sizeof(codecs) / sizeof(codecs[0])))

/* Kafka's compression type ids (attributes bits 0-2), in codecs[] order. */
static const int codec_ids[] = {0, 1, 2, 3, 4};
_Static_assert(sizeof(codec_ids) / sizeof(codec_ids[0]) == NCODECS, "one id per codec");

/* The compression id in the attributes of the first batch of partition p's
 * first segment (record batch v2: attributes are the int16 big endian at
 * byte 21; the segment holds batches exactly as on the wire). */
static int first_batch_codec(const h_broker *b, const char *topic, int32_t p)
{
	char path[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/%s-%d/00000000000000000000.log", b->dir, topic, (int)p);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	unsigned char hdr[61];
	ssize_t got = pread(fd, hdr, sizeof(hdr), 0);
	close(fd);
	ck_assert_msg(got == (ssize_t)sizeof(hdr), "%s: only %zd bytes, no batch header", path,
		      got);
	ck_assert_msg(hdr[16] == 2, "%s: first batch has magic %d, expected 2", path, hdr[16]);
	int attributes = (hdr[21] << 8) | hdr[22];
	return attributes & 0x07;
}

static long nrecords(void)
{
	const char *s = getenv("SAMSA_PC_RECORDS");
	long n = s ? atol(s) : 0;
	return n > 0 ? n : 100000;
}

/* Timestamps: a fixed base a little in the past, one ms per record. */
static int64_t base_ts;

/* Deterministic content of record i. */
static size_t gen_key(long i, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "key-%08ld", i);
}

static size_t gen_value(long i, unsigned char *buf)
{
	size_t len = (size_t)((i * 7919) % MAX_VALUE);
	uint32_t x = (uint32_t)i * 2654435761u + 12345u;
	int textlen = snprintf((char *)buf, MAX_VALUE, "value of record %ld: ", i);
	for (size_t j = 0; j < len; j++) {
		if ((int)j < textlen)
			continue;
		/* half text-like (compressible), half noise */
		x = x * 1103515245u + 12345u;
		buf[j] = (j / 32) % 2 ? (unsigned char)(x >> 16) : (unsigned char)('a' + j % 26);
	}
	return len;
}

static void gen_header(long i, int h, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s-%ld", h == 0 ? "first" : "second", i * (h + 2));
}

static const char *header_names[2] = {"h-one", "h-two"};

typedef struct verify_state {
	int32_t partition;
	long next_index;   /* record index expected next */
	int64_t next_offset;
	const c_delivery *dr;
	char error[512];
} verify_state;

static int verify_cb(const rd_kafka_message_t *m, void *opaque)
{
	verify_state *v = opaque;
	long i = v->next_index;
	char key[32], hv[64];
	unsigned char value[MAX_VALUE];
	size_t klen = gen_key(i, key, sizeof(key));
	size_t vlen = gen_value(i, value);

#define FAIL(...)                                                            \
	do {                                                                     \
		snprintf(v->error, sizeof(v->error), __VA_ARGS__);                   \
		return 1;                                                            \
	} while (0)

	if (m->partition != v->partition)
		FAIL("record %ld: partition %d, expected %d", i, (int)m->partition,
		     (int)v->partition);
	if (m->offset != v->next_offset)
		FAIL("partition %d: offset %lld where %lld was expected (gap, duplicate or "
		     "reorder)",
		     (int)v->partition, (long long)m->offset, (long long)v->next_offset);
	if (v->dr[i].offset != m->offset)
		FAIL("record %ld: delivery report said offset %lld, consumed at %lld", i,
		     (long long)v->dr[i].offset, (long long)m->offset);
	if (m->key_len != klen || memcmp(m->key, key, klen) != 0)
		FAIL("partition %d offset %lld: key %.*s, expected %s", (int)v->partition,
		     (long long)m->offset, (int)(m->key_len > 40 ? 40 : m->key_len),
		     m->key ? (const char *)m->key : "(null)", key);
	if (m->len != vlen || (vlen && memcmp(m->payload, value, vlen) != 0))
		FAIL("partition %d offset %lld (record %ld): value differs (%zu bytes, expected "
		     "%zu)",
		     (int)v->partition, (long long)m->offset, i, m->len, vlen);
	rd_kafka_timestamp_type_t tstype;
	int64_t ts = rd_kafka_message_timestamp(m, &tstype);
	if (tstype != RD_KAFKA_TIMESTAMP_CREATE_TIME || ts != base_ts + i)
		FAIL("record %ld: timestamp %lld type %d, expected CreateTime %lld", i,
		     (long long)ts, (int)tstype, (long long)(base_ts + i));

	rd_kafka_headers_t *hdrs = NULL;
	if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR || !hdrs)
		FAIL("record %ld: no headers", i);
	if (rd_kafka_header_cnt(hdrs) != 2)
		FAIL("record %ld: %zu headers, expected 2", i, rd_kafka_header_cnt(hdrs));
	for (int h = 0; h < 2; h++) {
		const char *name;
		const void *val;
		size_t len;
		gen_header(i, h, hv, sizeof(hv));
		if (rd_kafka_header_get_all(hdrs, (size_t)h, &name, &val, &len) != 0)
			FAIL("record %ld: header %d missing", i, h);
		if (strcmp(name, header_names[h]) != 0 || len != strlen(hv) ||
		    memcmp(val, hv, len) != 0)
			FAIL("record %ld: header %d is %s=%.*s, expected %s=%s", i, h, name,
			     (int)len, val ? (const char *)val : "", header_names[h], hv);
	}
#undef FAIL
	v->next_index += NPART;
	v->next_offset++;
	return 0;
}

/* Read all partitions of topic from the beginning and verify them. */
static void read_and_verify(h_broker *b, const char *topic, long n, const c_delivery *dr,
			    const char *when)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	for (int32_t p = 0; p < NPART; p++) {
		long expect = n / NPART + (p < n % NPART ? 1 : 0);
		verify_state v = {.partition = p, .next_index = p, .next_offset = 0, .dr = dr};
		long got = c_consume(c, topic, p, RD_KAFKA_OFFSET_BEGINNING, expect,
				     h_scaled_ms(120000), verify_cb, &v);
		ck_assert_msg(!v.error[0], "%s: %s", when, v.error);
		ck_assert_msg(got == expect, "%s: partition %d: consumed %ld of %ld records", when,
			      (int)p, got, expect);

		int64_t lo = -1, hi = -1;
		rd_kafka_resp_err_t err =
		    rd_kafka_query_watermark_offsets(c, topic, p, &lo, &hi, h_scaled_ms(10000));
		ck_assert_msg(err == 0, "%s: watermarks of partition %d: %s", when, (int)p,
			      rd_kafka_err2str(err));
		ck_assert_msg(lo == 0 && hi == expect,
			      "%s: partition %d watermarks low %lld high %lld, expected 0 and %ld",
			      when, (int)p, (long long)lo, (long long)hi, expect);
	}
	rd_kafka_destroy(c);
}

START_TEST(test_round_trip)
{
	const char *codec = codecs[_i];
	long n = nrecords();
	char topic[64];
	snprintf(topic, sizeof(topic), "pc-%s", codec);

	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "1", "compression.codec",
							    codec, "linger.ms", "5", NULL});
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(p, topic, NPART, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics %s: %s %s", topic, rd_kafka_err2name(err), errstr);
	c_wait_topic(p, topic, NPART, h_scaled_ms(10000));

	base_ts = 1700000000000LL;
	long long t0 = h_now_ms();
	c_delivery *dr = calloc((size_t)n, sizeof(*dr));
	ck_assert(dr != NULL);
	char key[32], h0[64], h1[64];
	unsigned char value[MAX_VALUE];
	for (long i = 0; i < n; i++) {
		gen_header(i, 0, h0, sizeof(h0));
		gen_header(i, 1, h1, sizeof(h1));
		c_header hdrs[2] = {{header_names[0], h0, strlen(h0)},
				    {header_names[1], h1, strlen(h1)}};
		c_msg m = {.topic = topic,
			   .partition = (int32_t)(i % NPART),
			   .key = key,
			   .key_len = gen_key(i, key, sizeof(key)),
			   .value = value,
			   .value_len = gen_value(i, value),
			   .headers = hdrs,
			   .nheaders = 2,
			   .timestamp = base_ts + i};
		c_produce(p, &m, &dr[i]);
		if (i % 1000 == 0)
			rd_kafka_poll(p, 0);
	}
	c_flush(p, h_scaled_ms(120000));
	long next_off[NPART] = {0};
	for (long i = 0; i < n; i++) {
		int32_t part = (int32_t)(i % NPART);
		ck_assert_msg(dr[i].done, "record %ld: no delivery report", i);
		ck_assert_msg(dr[i].err == 0, "record %ld (%s): delivery failed: %s", i, codec,
			      rd_kafka_err2str(dr[i].err));
		ck_assert_msg(dr[i].partition == part, "record %ld: delivered to partition %d", i,
			      (int)dr[i].partition);
		ck_assert_msg(dr[i].offset == next_off[part],
			      "record %ld: delivered at offset %lld of partition %d, expected %ld",
			      i, (long long)dr[i].offset, (int)part, next_off[part]);
		next_off[part]++;
	}
	rd_kafka_destroy(p);
	for (int32_t part = 0; part < NPART; part++) {
		int got = first_batch_codec(b, topic, part);
		ck_assert_msg(got == codec_ids[_i],
			      "partition %d: the first batch on disk has compression type %d, "
			      "expected %d (%s): the producer did not use the codec",
			      (int)part, got, codec_ids[_i], codec);
	}
	long long t1 = h_now_ms();
	read_and_verify(b, topic, n, dr, "before restart");
	fprintf(stderr, "produce_consume %s: %ld records produced in %lld ms, read back in %lld ms\n",
		codec, n, t1 - t0, h_now_ms() - t1);

	ck_assert_msg(h_broker_kill(b) == 0, "broker was not running before kill -9");
	ck_assert_msg(h_broker_restart(b) == 0, "broker did not restart after kill -9 (log above)");
	read_and_verify(b, topic, n, dr, "after kill -9 and restart");

	free(dr);
	c_stop_broker(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("produce_consume");
	TCase *tc = tcase_create("codecs");
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_round_trip, 0, NCODECS);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
