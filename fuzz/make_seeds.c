/*
 * make_seeds.c - writes the seed corpora of the fuzz targets
 * (corpus/<target>/, committed). Run by hand after a format change:
 * "make -C fuzz fuzz-seeds" (overwrites the seed files it names).
 *
 *   fuzz_request  for a spread of served APIs and versions: a request filled
 *                 by the generated test helpers, in body mode and as a whole
 *                 frame (request header + body), see fuzz_request.c
 *   fuzz_batch    one valid batch per codec (none, gzip, snappy, lz4, zstd),
 *                 a compacted-topic batch, and two batches back to back
 *   fuzz_recover  a real segment written by storage/ (3 batches, two of them
 *                 compressed) with its .index and .timeindex, as the flags
 *                 of fuzz_recover.c describe; also the .log alone, and split
 *                 in two segments
 *   fuzz_follower a leader's log as a Fetch answer carries it: plain,
 *                 idempotent and transactional batches and markers over
 *                 three leader epochs, as fuzz_follower.c's flags describe
 *                 (whole; cut in two fetches; then truncated; torn tail)
 *   fuzz_znode    every znode codec: our own encodings (selector byte + the
 *                 bytes the encoder writes) and znodes as Kafka wrote them,
 *                 in other member orders and versions
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "fuzz/fuzz_util.h"
#include "broker/request.h"
#include "protocol/header.h"
#include "protocol/records.h"
#include "protocol/gen/messages.h"
#include "protocol/gen/messages_fill.h"
#include "controller/zk_json.h"
#include "storage/log.h"

#define NOW_MS INT64_C(1700000000000)

static const char *outdir;

static void put(const char *target, const char *name, const uint8_t *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- requests ---- */

static void request_seed(int16_t key, int16_t version)
{
	const proto_msg_ops *ops = fuzz_request_ops(key);
	const proto_api_desc *d = proto_api_desc_lookup(key);
	/* fuzz_request body mode selects by index among the served keys */
	int idx = 0;
	for (int k = 0; k < key; k++)
		idx += brk_apis[k].handler != NULL;
	const brk_api *api = &brk_apis[key];
	proto_arena a;
	proto_arena_init(&a, 0);
	void *m = calloc(1, ops->size);
	uint32_t seed = 0x9e3779b9u ^ (uint32_t)(key << 8 | version);
	ops->fill(m, version, &a, &seed);
	proto_writer w;
	proto_writer_init(&w);
	proto_write_int8(&w, 0);
	proto_write_int8(&w, (int8_t)idx);
	proto_write_int8(&w, (int8_t)(version - api->min_version));
	if (ops->encode(&w, version, m) != 0) {
		fprintf(stderr, "%s v%d does not encode\n", ops->name, version);
		exit(1);
	}
	char name[64];
	snprintf(name, sizeof(name), "body-%02d-v%d", key, version);
	put("fuzz_request", name, w.buf, w.len);

	proto_writer_reset(&w);
	proto_write_int8(&w, 1);
	proto_request_header h = { key, version, 1234, proto_cstr("seed-client") };
	proto_request_header_encode(&w, proto_request_header_version(key, version, d->flexible_min), &h);
	ops->encode(&w, version, m);
	snprintf(name, sizeof(name), "frame-%02d-v%d", key, version);
	put("fuzz_request", name, w.buf, w.len);
	proto_writer_free(&w);
	free(m);
	proto_arena_free(&a);
}

/* ---- batches ---- */

/* An uncompressed batch of n records (keys "k<i>", values repeated text). */
static void build_batch(proto_writer *w, int n, int64_t ts)
{
	proto_batch_builder b;
	proto_batch_builder_begin(&b, w);
	for (int i = 0; i < n; i++) {
		char k[16], v[64];
		int kl = snprintf(k, sizeof(k), "k%d", i);
		int vl = snprintf(v, sizeof(v), "value %d value %d value", i, i);
		proto_batch_builder_add(&b, ts + i, k, kl, v, vl);
	}
	if (proto_batch_builder_finish(&b) <= 0)
		exit(1);
}

static size_t compress_buf(int codec, const uint8_t *src, size_t len, uint8_t *dst, size_t cap)
{
	switch (codec) {
	case PROTO_COMPRESSION_GZIP: {
		z_stream z;
		memset(&z, 0, sizeof(z));
		deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
		z.next_in = (Bytef *)(uintptr_t)src;
		z.avail_in = (uInt)len;
		z.next_out = dst;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			exit(1);
		deflateEnd(&z);
		return cap - z.avail_out;
	}
	case PROTO_COMPRESSION_SNAPPY: {
		size_t n = cap;
		if (snappy_compress((const char *)src, len, (char *)dst, &n) != SNAPPY_OK)
			exit(1);
		return n;
	}
	case PROTO_COMPRESSION_LZ4: {
		size_t n = LZ4F_compressFrame(dst, cap, src, len, NULL);
		if (LZ4F_isError(n))
			exit(1);
		return n;
	}
	case PROTO_COMPRESSION_ZSTD: {
		size_t n = ZSTD_compress(dst, cap, src, len, 3);
		if (ZSTD_isError(n))
			exit(1);
		return n;
	}
	}
	exit(1);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Append to out a batch of n records compressed with codec (0: none). */
static void codec_batch(proto_writer *out, int codec, int n, int64_t ts)
{
	proto_writer w;
	proto_writer_init(&w);
	build_batch(&w, n, ts);
	if (codec == 0) {
		proto_write_raw(out, w.buf, w.len);
		proto_writer_free(&w);
		return;
	}
	size_t rlen = w.len - PROTO_BATCH_HEADER_SIZE, cap = rlen * 2 + 1024;
	uint8_t *c = malloc(PROTO_BATCH_HEADER_SIZE + cap);
	memcpy(c, w.buf, PROTO_BATCH_HEADER_SIZE);
	size_t clen = compress_buf(codec, w.buf + PROTO_BATCH_HEADER_SIZE, rlen,
				   c + PROTO_BATCH_HEADER_SIZE, cap);
	put_be32(c + PROTO_BATCH_OFF_LENGTH,
		 (uint32_t)(PROTO_BATCH_HEADER_SIZE - PROTO_BATCH_LOG_OVERHEAD + clen));
	c[PROTO_BATCH_OFF_ATTRIBUTES + 1] = (uint8_t)codec;
	fuzz_fix_crcs(c, PROTO_BATCH_HEADER_SIZE + clen);
	proto_write_raw(out, c, PROTO_BATCH_HEADER_SIZE + clen);
	free(c);
	proto_writer_free(&w);
}

static void batch_seeds(void)
{
	static const char *names[] = { "none", "gzip", "snappy", "lz4", "zstd" };
	for (int codec = 0; codec <= 4; codec++) {
		proto_writer w;
		proto_writer_init(&w);
		proto_write_int8(&w, 16); /* Kafka's default timestamp window */
		codec_batch(&w, codec, 5, NOW_MS - 10);
		char name[32];
		snprintf(name, sizeof(name), "batch-%s", names[codec]);
		put("fuzz_batch", name, w.buf, w.len);
		w.buf[0] = 16 | 2 | 4; /* compacted, LogAppendTime */
		snprintf(name, sizeof(name), "batch-%s-compact-lat", names[codec]);
		put("fuzz_batch", name, w.buf, w.len);
		proto_writer_free(&w);
	}
	proto_writer w;
	proto_writer_init(&w);
	proto_write_int8(&w, 16);
	codec_batch(&w, 0, 2, NOW_MS);
	codec_batch(&w, 4, 3, NOW_MS);
	put("fuzz_batch", "two-batches", w.buf, w.len);
	proto_writer_reset(&w);
	proto_write_int8(&w, 16);
	uint8_t marker[PROTO_CONTROL_BATCH_SIZE];
	proto_control_batch_build(marker, 1000, 0, 5, true, NOW_MS);
	proto_write_raw(&w, marker, sizeof(marker));
	put("fuzz_batch", "control-marker", w.buf, w.len);
	proto_writer_free(&w);
}

/* ---- a recovered segment ---- */

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		*n = 0;
		return NULL;
	}
	uint8_t *p = malloc(1 << 20);
	*n = fread(p, 1, 1 << 20, f);
	fclose(f);
	return p;
}

static void recover_seeds(void)
{
	char root[] = "/tmp/make_seeds.XXXXXX", pdir[64];
	if (!mkdtemp(root))
		exit(1);
	snprintf(pdir, sizeof(pdir), "%s/t-0", root);
	log_config cfg;
	log_config_defaults(&cfg);
	cfg.index_interval_bytes = 128;
	log_partition *lp;
	if (log_open(pdir, &cfg, false, -1, -1, NOW_MS, &lp) != 0)
		exit(1);
	static const int codecs[] = { 0, 1, 0, 4 };
	for (int i = 0; i < 4; i++) {
		proto_writer w;
		proto_writer_init(&w);
		codec_batch(&w, codecs[i], 2 + i, NOW_MS + 100 * i);
		int64_t base;
		if (log_append(lp, w.buf, w.len, 3, NOW_MS, &base) != 0)
			exit(1);
		proto_writer_free(&w);
	}
	log_close(lp);
	char path[128];
	size_t nlog, nidx, ntime;
	snprintf(path, sizeof(path), "%s/%020d.log", pdir, 0);
	uint8_t *log = slurp(path, &nlog);
	snprintf(path, sizeof(path), "%s/%020d.index", pdir, 0);
	uint8_t *idx = slurp(path, &nidx);
	snprintf(path, sizeof(path), "%s/%020d.timeindex", pdir, 0);
	uint8_t *tidx = slurp(path, &ntime);
	fuzz_empty_dir(pdir);
	rmdir(pdir);
	rmdir(root);
	if (!log || nlog == 0)
		exit(1);

	proto_writer w;
	proto_writer_init(&w);
	proto_write_int8(&w, 0);
	proto_write_raw(&w, log, nlog);
	put("fuzz_recover", "segment", w.buf, w.len);

	proto_writer_reset(&w);
	proto_write_int8(&w, 2 | 4 | 8);
	proto_write_int16(&w, (int16_t)nidx);
	proto_write_raw(&w, idx, nidx);
	proto_write_int16(&w, (int16_t)ntime);
	proto_write_raw(&w, tidx, ntime);
	proto_write_raw(&w, log, nlog);
	put("fuzz_recover", "segment-indexes", w.buf, w.len);

	/* split after the first two batches */
	proto_batch_info b1, b2;
	proto_batch_header(log, nlog, &b1);
	proto_batch_header(log + b1.size, nlog - (size_t)b1.size, &b2);
	proto_writer_reset(&w);
	proto_write_int8(&w, 16);
	proto_write_int16(&w, (int16_t)(b1.size + b2.size));
	proto_write_raw(&w, log, nlog);
	put("fuzz_recover", "two-segments", w.buf, w.len);

	/* a torn tail */
	proto_writer_reset(&w);
	proto_write_int8(&w, 0);
	proto_write_raw(&w, log, nlog - 7);
	put("fuzz_recover", "torn-tail", w.buf, w.len);
	proto_writer_free(&w);
	free(log);
	free(idx);
	free(tidx);
}

/* ---- a leader's batches for a follower ---- */

static void follower_append(log_partition *lp, int64_t pid, int32_t seq, bool txn, int n, int32_t epoch)
{
	proto_writer w;
	proto_writer_init(&w);
	codec_batch(&w, 0, n, NOW_MS);
	if (pid >= 0) {
		uint8_t *b = w.buf;
		for (int i = 0; i < 8; i++)
			b[PROTO_BATCH_OFF_PRODUCER_ID + i] = (uint8_t)((uint64_t)pid >> (56 - 8 * i));
		b[PROTO_BATCH_OFF_PRODUCER_EPOCH] = 0;
		b[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = 0;
		for (int i = 0; i < 4; i++)
			b[PROTO_BATCH_OFF_BASE_SEQUENCE + i] = (uint8_t)((uint32_t)seq >> (24 - 8 * i));
		if (txn)
			b[PROTO_BATCH_OFF_ATTRIBUTES + 1] |= PROTO_ATTR_TRANSACTIONAL;
		fuzz_fix_crcs(b, w.len);
	}
	log_append_info info;
	if (log_append_checked(lp, w.buf, w.len, epoch, NOW_MS, &info) != 0)
		exit(1);
	proto_writer_free(&w);
}

static void follower_seeds(void)
{
	char root[] = "/tmp/make_seeds.XXXXXX", pdir[64];
	if (!mkdtemp(root))
		exit(1);
	snprintf(pdir, sizeof(pdir), "%s/t-0", root);
	log_config cfg;
	log_config_defaults(&cfg);
	log_partition *lp;
	if (log_open(pdir, &cfg, false, -1, -1, NOW_MS, &lp) != 0)
		exit(1);
	int64_t off;
	follower_append(lp, -1, 0, false, 3, 1);
	follower_append(lp, 7, 0, false, 2, 1);
	follower_append(lp, 8, 0, true, 2, 2);
	follower_append(lp, 7, 2, false, 1, 2);
	if (log_append_control(lp, 8, 0, 1, false, 2, NOW_MS, &off) != 0)
		exit(1);
	follower_append(lp, 9, 0, true, 2, 4);
	if (log_append_control(lp, 9, 0, 1, true, 4, NOW_MS, &off) != 0)
		exit(1);
	follower_append(lp, 10, 0, true, 1, 4);
	log_close(lp);
	char path[128];
	size_t nlog;
	snprintf(path, sizeof(path), "%s/%020d.log", pdir, 0);
	uint8_t *log = slurp(path, &nlog);
	fuzz_empty_dir(pdir);
	rmdir(pdir);
	rmdir(root);
	if (!log || nlog < 200)
		exit(1);

	proto_writer w;
	proto_writer_init(&w);
	proto_write_int8(&w, 0);
	proto_write_raw(&w, log, nlog);
	put("fuzz_follower", "batches", w.buf, w.len);

	proto_writer_reset(&w);
	proto_write_int8(&w, 2 | 8);
	proto_write_int16(&w, (int16_t)(nlog / 2));
	proto_write_raw(&w, log, nlog);
	put("fuzz_follower", "two-fetches", w.buf, w.len);

	proto_writer_reset(&w);
	proto_write_int8(&w, 4);
	proto_write_int16(&w, 6);
	proto_write_raw(&w, log, nlog);
	put("fuzz_follower", "truncated", w.buf, w.len);

	proto_writer_reset(&w);
	proto_write_int8(&w, 0);
	proto_write_raw(&w, log, nlog - 9);
	put("fuzz_follower", "torn-tail", w.buf, w.len);
	proto_writer_free(&w);
	free(log);
}

/* ---- znodes ---- */

static void znode_put(const char *name, int which, const char *text, size_t n)
{
	uint8_t *b = malloc(n + 1);
	if (!b)
		exit(1);
	b[0] = (uint8_t)which;
	memcpy(b + 1, text, n);
	put("fuzz_znode", name, b, n + 1);
	free(b);
}

/* An encoder's output (rc, text, n) as a seed; text is freed. */
static void znode_enc(const char *name, int which, int rc, char *text, size_t n)
{
	if (rc != 0) {
		fprintf(stderr, "znode seed %s: encoder failed (%d)\n", name, rc);
		exit(1);
	}
	znode_put(name, which, text, n);
	free(text);
}

#define ZNODE_ENC(name, which, call)                   \
	do {                                           \
		char *out_ = NULL;                     \
		size_t n_ = 0;                         \
		int rc_ = call;                        \
		znode_enc(name, which, rc_, out_, n_); \
	} while (0)

static void znode_seeds(void)
{
	ctl_zkj_endpoint eps[] = { { "PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092 },
				   { "SSL", "SSL", "::1", 9093 } };
	ctl_zkj_broker b = { .jmx_port = -1, .timestamp = NOW_MS, .rack = "r1",
			     .endpoints = eps, .nendpoints = 2 };
	ZNODE_ENC("broker-v5", 0, ctl_zkj_broker_encode(&b, &out_, &n_));
	static const char v1[] = "{\"version\":1,\"host\":\"localhost\",\"port\":9092,"
				 "\"jmx_port\":9999,\"timestamp\":\"2233345666\"}";
	znode_put("broker-v1", 0, v1, sizeof(v1) - 1);
	static const char v4[] = "{\"listener_security_protocol_map\":{\"PLAINTEXT\":\"PLAINTEXT\","
				 "\"INTERNAL\":\"PLAINTEXT\"},\"endpoints\":[\"PLAINTEXT://kafka:443\","
				 "\"INTERNAL://localhost:9093\"],\"jmx_port\":-1,\"host\":\"kafka\","
				 "\"timestamp\":\"1567506643562\",\"port\":443,\"version\":4}";
	znode_put("broker-v4", 0, v4, sizeof(v4) - 1);

	ctl_zkj_controller c = { .broker_id = 2, .timestamp = NOW_MS };
	ZNODE_ENC("controller-v1", 1, ctl_zkj_controller_encode(&c, &out_, &n_));
	static const char c2[] = "{\"version\":2,\"brokerid\":0,\"timestamp\":\"1781706151854\","
				 "\"kraftControllerEpoch\":-1}";
	znode_put("controller-v2", 1, c2, sizeof(c2) - 1);
	znode_put("controller-epoch", 2, "7", 1);

	int32_t r0[] = { 1, 2, 3 }, r1[] = { 2, 3, 1 }, add[] = { 4 }, rem[] = { 1 };
	ctl_zkj_assignment parts[] = { { r0, 3, NULL, 0, NULL, 0 }, { r1, 3, add, 1, rem, 1 } };
	ctl_zkj_topic t = { .has_topic_id = true, .partitions = parts, .npartitions = 2 };
	memcpy(t.topic_id, "\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff\x01", 16);
	ZNODE_ENC("topic-v3", 3, ctl_zkj_topic_encode(&t, &out_, &n_));
	static const char t1[] = "{\"version\":1,\"partitions\":{\"1\":[2,1],\"0\":[1,2]}}";
	znode_put("topic-v1", 3, t1, sizeof(t1) - 1);

	int32_t isr[] = { 2, 3 };
	ctl_zkj_partition_state ps = { 5, 2, 11, isr, 2, 1 };
	ZNODE_ENC("state", 4, ctl_zkj_partition_state_encode(&ps, &out_, &n_));

	ctl_zkj_config_entry ce[] = { { "min.insync.replicas", "2" }, { "retention.ms", "86400000" },
				      { "cleanup.policy", "compact,delete" } };
	ctl_zkj_config cf = { ce, 3 };
	ZNODE_ENC("config", 5, ctl_zkj_config_encode(&cf, &out_, &n_));
	ZNODE_ENC("config-change-v2", 6, ctl_zkj_config_change_encode("topics", "orders", &out_, &n_));
	static const char cc1[] = "{\"version\":1,\"entity_type\":\"topics\",\"entity_name\":\"orders\"}";
	znode_put("config-change-v1", 6, cc1, sizeof(cc1) - 1);
	ZNODE_ENC("client-entity-notice", 13,
		  ctl_zkj_config_change_encode("users", "User%3Aa%20b/clients/<default>", &out_,
					       &n_));
	static const char ce1[] = "{\"version\":1,\"entity_type\":\"clients\",\"entity_name\":\"app\"}";
	znode_put("client-entity-notice-v1", 13, ce1, sizeof(ce1) - 1);
	ctl_zkj_pid_block pb = { 1, 4000, 4999 };
	ZNODE_ENC("pid-block", 7, ctl_zkj_pid_block_encode(&pb, &out_, &n_));
	ZNODE_ENC("cluster-id", 8, ctl_zkj_cluster_id_encode("q2Zk1Pk2Sxy8rG0m9aXq4A", &out_, &n_));
	ctl_zkj_topic_partition tp[] = { { "t", 0 }, { "t\u00e9", 3 } };
	ZNODE_ENC("isr-change", 9, ctl_zkj_isr_change_encode(tp, 2, &out_, &n_));
	static const char js[] = " {\"a\\u00e9\\ud83d\\ude00\":[1,-2,{\"b\":null}],\"c\":true,\"d\":\"\\n\"} ";
	znode_put("json", 10, js, sizeof(js) - 1);
	ZNODE_ENC("preferred-election", 11, ctl_zkj_preferred_election_encode(tp, 2, &out_, &n_));
	static const char pe[] = "{\"partitions\":[{\"partition\":1,\"topic\":\"orders\"}]}";
	znode_put("preferred-election-by-hand", 11, pe, sizeof(pe) - 1);
	int32_t rr[] = { 2, 3, 4 };
	ctl_zkj_reassignment ra[] = { { "t", 0, rr, 3 } };
	ZNODE_ENC("reassign", 12, ctl_zkj_reassign_encode(ra, 1, &out_, &n_));
	static const char rt[] = "{\"version\":1,\"partitions\":[{\"topic\":\"x\",\"partition\":1,"
				 "\"replicas\":[3,1],\"log_dirs\":[\"any\",\"any\"]}]}";
	znode_put("reassign-tool", 12, rt, sizeof(rt) - 1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds CORPUS-DIR\n");
		return 2;
	}
	outdir = argv[1];
	static const struct { int16_t key, version; } reqs[] = {
		{ 0, 3 }, { 0, 13 }, { 1, 4 }, { 1, 17 }, { 3, 0 }, { 3, 12 }, { 8, 9 },
		{ 11, 5 }, { 18, 0 }, { 18, 3 }, { 19, 5 }, { 22, 4 }, { 32, 4 }, { 60, 1 },
		{ 75, 0 },
	};
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		const brk_api *api = &brk_apis[reqs[i].key];
		if (!api->handler || reqs[i].version < api->min_version ||
		    reqs[i].version > api->max_version) {
			fprintf(stderr, "key %d v%d is not served\n", reqs[i].key, reqs[i].version);
			return 1;
		}
		request_seed(reqs[i].key, reqs[i].version);
	}
	batch_seeds();
	recover_seeds();
	follower_seeds();
	znode_seeds();
	return 0;
}
