/*
 * kmsg.h - hand encoding and decoding of Kafka messages for raw-socket
 * tests: a bounded big-endian writer with varints and compact (flexible)
 * strings, a reader that remembers the first field it could not read,
 * CRC32C, v2 record batches, and one flexible request/response round trip.
 * Layouts: the Kafka protocol guide, KIP-482 (flexible versions), KIP-98
 * (record batch v2).
 *
 * Functions that can only fail through a bug in the test itself (writer
 * overflow) or a broken connection fail the running check test.
 */
#ifndef SAMSA_COMPAT_KMSG_H
#define SAMSA_COMPAT_KMSG_H

#include <stddef.h>
#include <stdint.h>

/* A request body being written; 64 KiB is plenty for the tests. */
typedef struct k_wbuf {
	uint8_t b[65536];
	size_t len;
} k_wbuf;

void kw_u8(k_wbuf *w, uint8_t v);
void kw_i16(k_wbuf *w, int16_t v);
void kw_i32(k_wbuf *w, int32_t v);
void kw_i64(k_wbuf *w, int64_t v);
void kw_uvarint(k_wbuf *w, uint64_t v);
void kw_varint(k_wbuf *w, int64_t v);      /* zigzag, as in records */
void kw_raw(k_wbuf *w, const void *p, size_t n);
void kw_cstr(k_wbuf *w, const char *s);    /* compact string; NULL = null */
void kw_tags0(k_wbuf *w);                  /* an empty tagged-field section */

/* A response being read. err names the first field that did not fit
 * (NULL while all is well); reads after that return 0. */
typedef struct k_rbuf {
	const uint8_t *b;
	size_t len, pos;
	const char *err;
} k_rbuf;

/* 1 if n more bytes are there, else 0 with err = what. */
int kr_need(k_rbuf *r, size_t n, const char *what);
int8_t kr_i8(k_rbuf *r, const char *what);
int16_t kr_i16(k_rbuf *r, const char *what);
int32_t kr_i32(k_rbuf *r, const char *what);
int64_t kr_i64(k_rbuf *r, const char *what);
uint64_t kr_uvarint(k_rbuf *r, const char *what);
/* Compact array count; -1 for a null array. */
int64_t kr_carray(k_rbuf *r, const char *what);
/* Compact nullable string into out (NUL-terminated, cut to cap; out may be
 * NULL); returns its length or -1 for null. */
int64_t kr_cstr(k_rbuf *r, char *out, size_t cap, const char *what);
void kr_uuid(k_rbuf *r, uint8_t out[16], const char *what);
/* Skip a tagged-field section; returns the number of fields. */
int kr_tags(k_rbuf *r, const char *what);
/* Fail the test unless every field was read and nothing is left over. */
void kr_done(k_rbuf *r, const char *msg);

/* CRC32C (Castagnoli), the record batch checksum. */
uint32_t k_crc32c(const uint8_t *p, size_t n);

/*
 * Append a v2 record batch of n uncompressed records to w: base offset 0,
 * values "rec-<first+i>", key "k", one header hk=hv, CreateTime
 * ts0 + 10 * i; with max_first, record 0 instead gets ts0 + 100000 (so the
 * batch's largest timestamp is its first record's). CRC filled in.
 */
void k_build_batch(k_wbuf *w, int n, int first, int64_t ts0, int max_first);

/* Send api key/version with request header v2 (flexible) and body;
 * returns the correlation id used. */
int32_t k_send(int fd, int16_t key, int16_t ver, const k_wbuf *body);

/* Read one response within timeout_ms, check its correlation id is cid,
 * skip the response header v1 tags; as k_roundtrip. */
uint8_t *k_recv(int fd, int32_t cid, k_rbuf *r, int timeout_ms);

/*
 * Send api key/version with request header v2 (flexible) and body, read
 * the response, check its correlation id and skip the response header v1
 * tags. r is set to the rest of the body; returns the malloc'd frame
 * (caller frees) that r points into.
 */
uint8_t *k_roundtrip(int fd, int16_t key, int16_t ver, const k_wbuf *body, k_rbuf *r);

/* As k_roundtrip for the non-flexible versions of an API: request header
 * v1 (no tags), response header v0. */
uint8_t *k_roundtrip_classic(int fd, int16_t key, int16_t ver, const k_wbuf *body, k_rbuf *r);

/* A Produce v9 body: one batch for topic/partition. */
void k_produce_body(k_wbuf *body, const char *topic, int32_t partition, int16_t acks,
		    const k_wbuf *batch);

/* Parse a Produce v9 response of one partition to its end; returns the
 * partition's error code and sets *base_offset. */
int16_t k_produce_parse(k_rbuf *r, int64_t *base_offset);

/* A Fetch v12 body: one partition from offset, 16 MiB max. */
void k_fetch_body(k_wbuf *body, const char *topic, int32_t partition, int64_t offset,
		  int32_t max_wait_ms, int32_t min_bytes);

/* Parse a Fetch v12 response of one partition to its end; returns the
 * top-level or partition error code; *records points into the response
 * (NULL when none). */
int16_t k_fetch_parse(k_rbuf *r, int64_t *high_watermark, const uint8_t **records,
		      int64_t *records_len);

/* An InitProducerId response (all versions up to 5 carry these fields). */
typedef struct k_init_pid {
	int32_t throttle_ms;
	int16_t error;          /* Kafka error code, 0 = none */
	int64_t producer_id;    /* -1 when error != 0 */
	int16_t producer_epoch; /* -1 when error != 0 */
} k_init_pid;

/*
 * One InitProducerId (API key 22) of version ver (0-5) on fd: transactional
 * id txn_id (NULL sends null: an idempotent producer), transaction timeout
 * txn_timeout_ms (milliseconds; Kafka checks it only with a transactional
 * id) and, from v3 on, the caller's current producer_id / producer_epoch
 * (-1 / -1 for a new producer instance; ignored below v3). v0-1 use the
 * classic request header v1 / response header v0, v2+ the flexible ones
 * (KIP-482), as k_roundtrip. The whole response is parsed (a field
 * missing or left over fails the test). Fills *res when res is not NULL
 * (caller-owned); returns the response's error code. Errors in the
 * response are returned, not asserted.
 */
int16_t k_init_producer_id(int fd, int16_t ver, const char *txn_id, int32_t txn_timeout_ms,
			   int64_t producer_id, int16_t producer_epoch, k_init_pid *res);

/*
 * One AddPartitionsToTxn v3 (API key 24, flexible, the last single-
 * transaction layout) on fd: add topic/partition to the transaction of
 * txn_id (not NULL) for producer_id / producer_epoch. The response must
 * hold exactly that one topic-partition (else the test fails); returns its
 * error code (0 = added; the coordinator's errors are returned, not
 * asserted).
 */
int16_t k_add_partitions_to_txn(int fd, const char *txn_id, int64_t producer_id,
				int16_t producer_epoch, const char *topic, int32_t partition);

#endif
