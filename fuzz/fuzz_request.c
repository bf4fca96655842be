/*
 * fuzz_request.c - libFuzzer target: the request decoder of every API key
 * and version the broker serves.
 *
 * The served keys and versions come from the broker's own API table
 * (brk_apis in broker/dispatch.c, the table ApiVersions advertises; the
 * handlers are stubs, see the Makefile's handler_stubs.c) and the decoders
 * from the generated codecs (protocol/gen/). Input:
 *
 *   byte 0 even: body mode. byte 1 picks a served API (index modulo their
 *     number), byte 2 a version in its served range; the rest is decoded as
 *     that request's body.
 *   byte 0 odd: frame mode. The rest is a whole request frame (what follows
 *     the 4-byte size) and goes the way broker/conn.c's dispatch takes it:
 *     unknown key or unserved version refused, request header of the
 *     version's header version, then the body.
 *
 * A body that decodes must encode again and decode to an equal message
 * (what a handler could echo back). Memory comes from an arena capped as a
 * connection's (conn.c: 4 x socket.request.max.bytes + 64 MiB) and is freed
 * after every input, so a leak or an out-of-bounds read is the sanitizers'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/request.h"
#include "fuzz/fuzz_util.h"
#include "protocol/buf.h"
#include "protocol/header.h"
#include "protocol/gen/messages.h"
#include "protocol/gen/messages_fill.h"

#define SOCKET_REQUEST_MAX_BYTES 104857600u /* Kafka's default */
#define ARENA_CAP ((size_t)SOCKET_REQUEST_MAX_BYTES * 4 + (64u << 20))

typedef struct served {
	int16_t key, min, max;
	const proto_msg_ops *ops;
} served;

static served apis[BRK_API_KEY_MAX + 1];
static int napis;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (int k = 0; k <= BRK_API_KEY_MAX; k++) {
		if (!brk_apis[k].handler)
			continue;
		const proto_msg_ops *ops = fuzz_request_ops((int16_t)k);
		if (!ops || !proto_api_desc_lookup((int16_t)k))
			abort(); /* a served key without a codec */
		apis[napis++] = (served){ (int16_t)k, brk_apis[k].min_version,
					  brk_apis[k].max_version, ops };
	}
	return 0;
}

/* Decode the body in r as ops' message of version v; check the round trip. */
static void decode_body(const proto_msg_ops *ops, int16_t v, proto_reader *r)
{
	proto_arena a;
	proto_arena_init(&a, ARENA_CAP);
	void *m = calloc(1, ops->size), *m2 = calloc(1, ops->size);
	if (!m || !m2)
		abort();
	ops->init(m);
	if (ops->decode(r, &a, v, m) == 0) {
		proto_writer w;
		proto_writer_init(&w);
		if (ops->encode(&w, v, m) != 0 || w.err)
			abort(); /* decoded but cannot be encoded */
		proto_reader r2;
		proto_reader_init(&r2, w.buf, w.len);
		ops->init(m2);
		if (ops->decode(&r2, &a, v, m2) != 0 || proto_reader_left(&r2) != 0 ||
		    !ops->equal(m, m2, v))
			abort(); /* the re-encoding decodes differently */
		proto_writer_free(&w);
	}
	free(m);
	free(m2);
	proto_arena_free(&a);
}

static void body_mode(const uint8_t *data, size_t size)
{
	if (size < 2 || napis == 0)
		return;
	const served *s = &apis[data[0] % napis];
	int16_t v = (int16_t)(s->min + data[1] % (s->max - s->min + 1));
	proto_reader r;
	proto_reader_init(&r, data + 2, size - 2);
	decode_body(s->ops, v, &r);
}

/* broker/conn.c dispatch(), up to the handler's decode. */
static void frame_mode(const uint8_t *frame, size_t size)
{
	if (size < 4)
		return;
	int16_t key = (int16_t)(frame[0] << 8 | frame[1]);
	int16_t version = (int16_t)(frame[2] << 8 | frame[3]);
	const brk_api *api = key >= 0 && key <= BRK_API_KEY_MAX ? &brk_apis[key] : NULL;
	const proto_api_desc *d = api && api->handler ? proto_api_desc_lookup(key) : NULL;
	if (!d)
		return;
	/* ApiVersions answers an unknown version without parsing it */
	if (version < api->min_version || version > api->max_version)
		return;
	proto_reader r;
	proto_reader_init(&r, frame, size);
	proto_request_header h;
	int16_t hv = proto_request_header_version(key, version, d->flexible_min);
	if (proto_request_header_decode(&r, hv, &h) != 0 || r.err)
		return;
	if (h.api_key != key || h.api_version != version ||
	    (h.client_id.len >= 0 && (size_t)h.client_id.len > size))
		abort();
	decode_body(fuzz_request_ops(key), version, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* A private copy of exactly size bytes, so ASan sees any over-read. */
	uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		abort();
	memcpy(copy, data + 1, size - 1);
	if (data[0] & 1)
		frame_mode(copy, size - 1);
	else
		body_mode(copy, size - 1);
	free(copy);
	return 0;
}
