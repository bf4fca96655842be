/*
 * kmsg.c - hand encoding and decoding of Kafka messages for raw-socket
 * tests (see kmsg.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/kmsg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/compat.h"
#include "compat-tests/wire.h"

/* ---- writer ---- */


void kw_u8(k_wbuf *w, uint8_t v)
{
	ck_assert(w->len < sizeof(w->b));
	w->b[w->len++] = v;
}
void kw_i16(k_wbuf *w, int16_t v)
{
	kw_u8(w, (uint8_t)((uint16_t)v >> 8));
	kw_u8(w, (uint8_t)v);
}
void kw_i32(k_wbuf *w, int32_t v)
{
	for (int s = 24; s >= 0; s -= 8)
		kw_u8(w, (uint8_t)((uint32_t)v >> s));
}
void kw_i64(k_wbuf *w, int64_t v)
{
	for (int s = 56; s >= 0; s -= 8)
		kw_u8(w, (uint8_t)((uint64_t)v >> s));
}
void kw_uvarint(k_wbuf *w, uint64_t v)
{
	while (v >= 0x80) {
		kw_u8(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	kw_u8(w, (uint8_t)v);
}
void kw_varint(k_wbuf *w, int64_t v) /* zigzag */
{
	kw_uvarint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
void kw_raw(k_wbuf *w, const void *p, size_t n)
{
	ck_assert(w->len + n <= sizeof(w->b));
	memcpy(w->b + w->len, p, n);
	w->len += n;
}
void kw_cstr(k_wbuf *w, const char *s) /* compact (nullable) string */
{
	if (!s) {
		kw_uvarint(w, 0);
		return;
	}
	kw_uvarint(w, strlen(s) + 1);
	kw_raw(w, s, strlen(s));
}
void kw_tags0(k_wbuf *w)
{
	kw_uvarint(w, 0);
}

/* ---- a reader that records the first overrun ---- */


int kr_need(k_rbuf *r, size_t n, const char *what)
{
	if (r->err)
		return 0;
	if (r->len - r->pos < n) {
		r->err = what;
		return 0;
	}
	return 1;
}
static int64_t kr_be(k_rbuf *r, int n, const char *what)
{
	if (!kr_need(r, (size_t)n, what))
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | r->b[r->pos++];
	if (n == 1)
		return (int8_t)v;
	if (n == 2)
		return (int16_t)v;
	if (n == 4)
		return (int32_t)v;
	return (int64_t)v;
}
int8_t kr_i8(k_rbuf *r, const char *w)
{
	return (int8_t)kr_be(r, 1, w);
}
int16_t kr_i16(k_rbuf *r, const char *w)
{
	return (int16_t)kr_be(r, 2, w);
}
int32_t kr_i32(k_rbuf *r, const char *w)
{
	return (int32_t)kr_be(r, 4, w);
}
int64_t kr_i64(k_rbuf *r, const char *w)
{
	return kr_be(r, 8, w);
}

uint64_t kr_uvarint(k_rbuf *r, const char *what)
{
	uint64_t v = 0;
	for (int s = 0; s < 64; s += 7) {
		if (!kr_need(r, 1, what))
			return 0;
		uint8_t c = r->b[r->pos++];
		v |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			return v;
	}
	r->err = what;
	return 0;
}
/* Compact array count: -1 for null. */
int64_t kr_carray(k_rbuf *r, const char *what)
{
	uint64_t n = kr_uvarint(r, what);
	if (n > 100000 && !r->err)
		r->err = what;
	return (int64_t)n - 1;
}
/* Compact nullable string into out (NUL-terminated, truncated to cap);
 * returns its length or -1 for null. */
int64_t kr_cstr(k_rbuf *r, char *out, size_t cap, const char *what)
{
	int64_t n = (int64_t)kr_uvarint(r, what) - 1;
	if (out && cap)
		out[0] = 0;
	if (n < 0 || !kr_need(r, (size_t)n, what))
		return n;
	if (out && cap) {
		size_t c = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->b + r->pos, c);
		out[c] = 0;
	}
	r->pos += (size_t)n;
	return n;
}
void kr_uuid(k_rbuf *r, uint8_t out[16], const char *what)
{
	if (!kr_need(r, 16, what))
		return;
	memcpy(out, r->b + r->pos, 16);
	r->pos += 16;
}
/* Skip a tagged-field section; returns the number of fields. */
int kr_tags(k_rbuf *r, const char *what)
{
	uint64_t n = kr_uvarint(r, what);
	for (uint64_t i = 0; i < n && !r->err; i++) {
		kr_uvarint(r, what);
		uint64_t size = kr_uvarint(r, what);
		if (kr_need(r, size, what))
			r->pos += size;
	}
	return (int)n;
}
void kr_done(k_rbuf *r, const char *msg)
{
	ck_assert_msg(!r->err, "%s: response ends inside %s (%zu bytes)", msg, r->err, r->len);
	ck_assert_msg(r->pos == r->len, "%s: %zu bytes left after the last field", msg,
		      r->len - r->pos);
}

/* ---- CRC32C (Castagnoli), for record batches ---- */

uint32_t k_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

/*
 * A v2 record batch of n records ("rec-<first+i>" values, key "k",
 * one header), timestamps ts0 + i * 10 (the last one is the largest unless
 * max_first: then record 0 gets ts0 + 100000).
 */
void k_build_batch(k_wbuf *w, int n, int first, int64_t ts0, int max_first)
{
	size_t start = w->len;
	int64_t max_ts = ts0;
	kw_i64(w, 0);  /* base offset */
	kw_i32(w, 0);  /* batch length, patched */
	kw_i32(w, -1); /* partition leader epoch */
	kw_u8(w, 2);   /* magic */
	kw_i32(w, 0);  /* crc, patched */
	size_t crc_from = w->len;
	kw_i16(w, 0);     /* attributes: no compression, CreateTime */
	kw_i32(w, n - 1); /* last offset delta */
	kw_i64(w, ts0);   /* base timestamp */
	size_t max_at = w->len;
	kw_i64(w, 0);  /* max timestamp, patched */
	kw_i64(w, -1); /* producer id */
	kw_i16(w, -1); /* producer epoch */
	kw_i32(w, -1); /* base sequence */
	kw_i32(w, n);
	for (int i = 0; i < n; i++) {
		char val[32];
		int vl = snprintf(val, sizeof(val), "rec-%d", first + i);
		int64_t tsd = max_first && i == 0 ? 100000 : (int64_t)i * 10;
		if (ts0 + tsd > max_ts)
			max_ts = ts0 + tsd;
		k_wbuf rec;
		rec.len = 0;
		kw_u8(&rec, 0);        /* attributes */
		kw_varint(&rec, tsd);  /* timestamp delta */
		kw_varint(&rec, i);    /* offset delta */
		kw_varint(&rec, 1);
		kw_u8(&rec, 'k');
		kw_varint(&rec, vl);
		kw_raw(&rec, val, (size_t)vl);
		kw_varint(&rec, 1); /* headers */
		kw_varint(&rec, 2);
		kw_raw(&rec, "hk", 2);
		kw_varint(&rec, 2);
		kw_raw(&rec, "hv", 2);
		kw_varint(w, (int64_t)rec.len);
		kw_raw(w, rec.b, rec.len);
	}
	w_put32(w->b + start + 8, (int32_t)(w->len - start - 12));
	uint8_t *m = w->b + max_at;
	for (int s = 56, i = 0; s >= 0; s -= 8, i++)
		m[i] = (uint8_t)((uint64_t)max_ts >> s);
	w_put32(w->b + start + 17, (int32_t)k_crc32c(w->b + crc_from, w->len - crc_from));
}

/* ---- requests ---- */

static int32_t next_cid = 100;

int32_t k_send(int fd, int16_t key, int16_t ver, const k_wbuf *body)
{
	static k_wbuf req;
	req.len = 0;
	int32_t cid = next_cid++;
	kw_i32(&req, 0); /* size, patched */
	kw_i16(&req, key);
	kw_i16(&req, ver);
	kw_i32(&req, cid);
	kw_i16(&req, 6);
	kw_raw(&req, "compat", 6);
	kw_tags0(&req);
	kw_raw(&req, body->b, body->len);
	w_put32(req.b, (int32_t)(req.len - 4));
	ck_assert_msg(w_send_all(fd, req.b, req.len, h_scaled_ms(5000)) == 0,
		      "api %d v%d: send failed", key, ver);
	return cid;
}

/* Read one response frame within timeout_ms and check its correlation id;
 * flexible: response header v1 (skip its tags), else v0. */
static uint8_t *recv_hdr(int fd, int32_t cid, k_rbuf *r, int timeout_ms, int flexible)
{
	uint8_t *resp;
	int32_t len;
	int rc = w_recv_frame(fd, &resp, &len, 16 << 20, timeout_ms);
	ck_assert_msg(rc == WIRE_OK, "request %d: no response within %d ms (%s)", cid, timeout_ms,
		      rc == WIRE_CLOSED    ? "connection closed"
		      : rc == WIRE_TIMEOUT ? "timeout"
					   : "bad frame");
	*r = (k_rbuf){.b = resp, .len = (size_t)len};
	int32_t got = kr_i32(r, "correlation id");
	ck_assert_msg(got == cid, "correlation id %d, expected %d", got, cid);
	if (flexible)
		kr_tags(r, "response header tags");
	return resp;
}

uint8_t *k_recv(int fd, int32_t cid, k_rbuf *r, int timeout_ms)
{
	return recv_hdr(fd, cid, r, timeout_ms, 1);
}

/* As k_roundtrip, but with the classic request header v1 (no tags) and
 * response header v0, for the non-flexible versions of an API. */
static uint8_t *roundtrip_classic(int fd, int16_t key, int16_t ver, const k_wbuf *body,
				  k_rbuf *r)
{
	static k_wbuf req;
	int32_t cid = next_cid++;
	int n = w_build_request(req.b, sizeof(req.b), key, ver, cid, "compat", body->b,
				body->len);
	ck_assert_msg(n > 0, "api %d v%d: request does not fit", key, ver);
	ck_assert_msg(w_send_all(fd, req.b, (size_t)n, h_scaled_ms(5000)) == 0,
		      "api %d v%d: send failed", key, ver);
	return recv_hdr(fd, cid, r, h_scaled_ms(10000), 0);
}

uint8_t *k_roundtrip(int fd, int16_t key, int16_t ver, const k_wbuf *body, k_rbuf *r)
{
	int32_t cid = k_send(fd, key, ver, body);
	return k_recv(fd, cid, r, h_scaled_ms(10000));
}

uint8_t *k_roundtrip_classic(int fd, int16_t key, int16_t ver, const k_wbuf *body, k_rbuf *r)
{
	return roundtrip_classic(fd, key, ver, body, r);
}

void k_produce_body(k_wbuf *body, const char *topic, int32_t partition, int16_t acks,
		    const k_wbuf *batch)
{
	body->len = 0;
	kw_cstr(body, NULL); /* transactional id */
	kw_i16(body, acks);
	kw_i32(body, 10000); /* timeout ms */
	kw_uvarint(body, 2);
	kw_cstr(body, topic);
	kw_uvarint(body, 2);
	kw_i32(body, partition);
	kw_uvarint(body, batch->len + 1);
	kw_raw(body, batch->b, batch->len);
	kw_tags0(body);
	kw_tags0(body);
	kw_tags0(body);
}

int16_t k_produce_parse(k_rbuf *r, int64_t *base_offset)
{
	ck_assert_int_eq(kr_carray(r, "responses"), 1);
	kr_cstr(r, NULL, 0, "topic name");
	ck_assert_int_eq(kr_carray(r, "partition responses"), 1);
	kr_i32(r, "index");
	int16_t err = kr_i16(r, "error code");
	*base_offset = kr_i64(r, "base offset");
	kr_i64(r, "log append time");
	kr_i64(r, "log start offset");
	int64_t nre = kr_carray(r, "record errors");
	for (int64_t i = 0; i < nre; i++) {
		kr_i32(r, "batch index");
		kr_cstr(r, NULL, 0, "batch index error message");
		kr_tags(r, "record error tags");
	}
	kr_cstr(r, NULL, 0, "error message");
	kr_tags(r, "partition tags");
	kr_tags(r, "topic tags");
	kr_i32(r, "throttle");
	kr_tags(r, "response tags");
	kr_done(r, "Produce v9");
	return err;
}

void k_fetch_body(k_wbuf *body, const char *topic, int32_t partition, int64_t offset,
		  int32_t max_wait_ms, int32_t min_bytes)
{
	body->len = 0;
	kw_i32(body, -1); /* replica id */
	kw_i32(body, max_wait_ms);
	kw_i32(body, min_bytes);
	kw_i32(body, 16 << 20); /* max bytes */
	kw_u8(body, 0);         /* isolation level */
	kw_i32(body, 0);        /* session id */
	kw_i32(body, -1);       /* session epoch */
	kw_uvarint(body, 2);
	kw_cstr(body, topic);
	kw_uvarint(body, 2);
	kw_i32(body, partition);
	kw_i32(body, -1); /* current leader epoch */
	kw_i64(body, offset);
	kw_i32(body, -1);       /* last fetched epoch */
	kw_i64(body, -1);       /* log start offset */
	kw_i32(body, 8 << 20);  /* partition max bytes */
	kw_tags0(body);
	kw_tags0(body);
	kw_uvarint(body, 1); /* forgotten topics: none */
	kw_cstr(body, "");   /* rack id */
	kw_tags0(body);
}

int16_t k_fetch_parse(k_rbuf *r, int64_t *high_watermark, const uint8_t **records,
		      int64_t *records_len)
{
	kr_i32(r, "throttle");
	int16_t top = kr_i16(r, "error code");
	kr_i32(r, "session id");
	ck_assert_int_eq(kr_carray(r, "responses"), 1);
	kr_cstr(r, NULL, 0, "topic");
	ck_assert_int_eq(kr_carray(r, "partitions"), 1);
	kr_i32(r, "partition index");
	int16_t err = kr_i16(r, "error code");
	*high_watermark = kr_i64(r, "high watermark");
	kr_i64(r, "last stable offset");
	kr_i64(r, "log start offset");
	int64_t nab = kr_carray(r, "aborted transactions");
	for (int64_t i = 0; i < nab; i++) {
		kr_i64(r, "producer id");
		kr_i64(r, "first offset");
		kr_tags(r, "aborted tags");
	}
	kr_i32(r, "preferred read replica");
	int64_t n = (int64_t)kr_uvarint(r, "records") - 1;
	*records = NULL;
	*records_len = n < 0 ? 0 : n;
	if (n > 0 && kr_need(r, (size_t)n, "records")) {
		*records = r->b + r->pos;
		r->pos += (size_t)n;
	}
	kr_tags(r, "partition tags");
	kr_tags(r, "topic tags");
	kr_tags(r, "response tags");
	kr_done(r, "Fetch v12");
	return top ? top : err;
}

int16_t k_init_producer_id(int fd, int16_t ver, const char *txn_id, int32_t txn_timeout_ms,
			   int64_t producer_id, int16_t producer_epoch, k_init_pid *res)
{
	ck_assert_msg(ver >= 0 && ver <= 5, "InitProducerId v%d not supported here", ver);
	static k_wbuf body;
	body.len = 0;
	k_rbuf r;
	uint8_t *frame;
	if (ver < 2) {
		/* nullable string: int16 length, -1 = null */
		kw_i16(&body, txn_id ? (int16_t)strlen(txn_id) : -1);
		if (txn_id)
			kw_raw(&body, txn_id, strlen(txn_id));
		kw_i32(&body, txn_timeout_ms);
		frame = roundtrip_classic(fd, 22, ver, &body, &r);
	} else {
		kw_cstr(&body, txn_id);
		kw_i32(&body, txn_timeout_ms);
		if (ver >= 3) {
			kw_i64(&body, producer_id);
			kw_i16(&body, producer_epoch);
		}
		kw_tags0(&body);
		frame = k_roundtrip(fd, 22, ver, &body, &r);
	}
	k_init_pid out;
	out.throttle_ms = kr_i32(&r, "throttle time");
	out.error = kr_i16(&r, "error code");
	out.producer_id = kr_i64(&r, "producer id");
	out.producer_epoch = kr_i16(&r, "producer epoch");
	if (ver >= 2)
		kr_tags(&r, "response tags");
	kr_done(&r, "InitProducerId response");
	free(frame);
	if (res)
		*res = out;
	return out.error;
}

int16_t k_add_partitions_to_txn(int fd, const char *txn_id, int64_t producer_id,
				int16_t producer_epoch, const char *topic, int32_t partition)
{
	static k_wbuf body;
	body.len = 0;
	kw_cstr(&body, txn_id);
	kw_i64(&body, producer_id);
	kw_i16(&body, producer_epoch);
	kw_uvarint(&body, 2); /* topics: 1 */
	kw_cstr(&body, topic);
	kw_uvarint(&body, 2); /* partitions: 1 */
	kw_i32(&body, partition);
	kw_tags0(&body); /* topic tags */
	kw_tags0(&body); /* request tags */
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 24, 3, &body, &r);
	kr_i32(&r, "throttle time");
	int64_t nt = kr_carray(&r, "results by topic");
	ck_assert_msg(nt == 1, "AddPartitionsToTxn v3: %lld topics in the response, expected 1",
		      (long long)nt);
	char name[256];
	kr_cstr(&r, name, sizeof(name), "topic name");
	int64_t np = kr_carray(&r, "results by partition");
	ck_assert_msg(np == 1, "AddPartitionsToTxn v3: %lld partitions in the response, expected 1",
		      (long long)np);
	int32_t idx = kr_i32(&r, "partition index");
	int16_t err = kr_i16(&r, "partition error code");
	kr_tags(&r, "partition tags");
	kr_tags(&r, "topic tags");
	kr_tags(&r, "response tags");
	kr_done(&r, "AddPartitionsToTxn v3 response");
	free(frame);
	ck_assert_msg(strcmp(name, topic) == 0 && idx == partition,
		      "AddPartitionsToTxn v3: result for %s-%d, expected %s-%d", name, idx, topic,
		      partition);
	return err;
}
