/*
 * compress.c - gzip/snappy/lz4/zstd decompression into a bounded scratch
 * buffer, for record batch validation (see compress.h). The codec contexts
 * live in the scratch and are reused, so a validation allocates nothing
 * once the scratch has grown to its working size. proto_scratch_init/free/trim
 * (declared in batch.h) live here because the scratch owns those contexts.
 */
#include "protocol/compress.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "protocol/buf.h"

struct proto_codec_ctx {
	z_stream z;
	bool z_ready;
	LZ4F_dctx *lz4;
	ZSTD_DCtx *zstd;
};

#define SCRATCH_MIN (64u * 1024u)

void proto_scratch_init(proto_scratch *s, size_t max_bytes)
{
	s->buf = NULL;
	s->cap = 0;
	s->max = max_bytes;
	s->codecs = NULL;
}

void proto_scratch_free(proto_scratch *s)
{
	if (s->codecs != NULL) {
		if (s->codecs->z_ready)
			inflateEnd(&s->codecs->z);
		if (s->codecs->lz4 != NULL)
			LZ4F_freeDecompressionContext(s->codecs->lz4);
		ZSTD_freeDCtx(s->codecs->zstd);
		free(s->codecs);
	}
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
	s->codecs = NULL;
}

void proto_scratch_trim(proto_scratch *s, size_t keep_bytes)
{
	if (s->cap > keep_bytes) {
		free(s->buf);
		s->buf = NULL;
		s->cap = 0;
	}
	/* A zstd frame with a large window makes the streaming context keep a
	 * window buffer of that size; drop the context, it is made again. */
	if (s->codecs != NULL && s->codecs->zstd != NULL &&
	    ZSTD_sizeof_DCtx(s->codecs->zstd) > keep_bytes) {
		ZSTD_freeDCtx(s->codecs->zstd);
		s->codecs->zstd = NULL;
	}
}

/* Make s->cap >= need (doubling), never above s->max. */
static int scratch_reserve(proto_scratch *s, size_t need)
{
	if (need <= s->cap)
		return 0;
	if (s->max != 0 && need > s->max)
		return PROTO_ERR_NOMEM;
	size_t cap = s->cap ? s->cap : SCRATCH_MIN;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return PROTO_ERR_NOMEM;
		cap *= 2;
	}
	if (s->max != 0 && cap > s->max)
		cap = s->max;
	uint8_t *b = realloc(s->buf, cap);
	if (b == NULL)
		return PROTO_ERR_NOMEM;
	s->buf = b;
	s->cap = cap;
	return 0;
}

static proto_codec_ctx *codecs(proto_scratch *s)
{
	if (s->codecs == NULL)
		s->codecs = calloc(1, sizeof(*s->codecs));
	return s->codecs;
}

/* ---- gzip ---- */

static int gunzip(proto_scratch *s, const uint8_t *src, size_t len, size_t *out_len)
{
	proto_codec_ctx *c = codecs(s);
	if (c == NULL || len > UINT_MAX)
		return c == NULL ? PROTO_ERR_NOMEM : PROTO_ERR_INVALID;
	z_stream *z = &c->z;
	if (!c->z_ready) {
		memset(z, 0, sizeof(*z));
		if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK) /* gzip header only */
			return PROTO_ERR_NOMEM;
		c->z_ready = true;
	} else if (inflateReset(z) != Z_OK) {
		return PROTO_ERR_INVALID;
	}
	z->next_in = (Bytef *)src;
	z->avail_in = (uInt)len;
	size_t out = 0;
	int rc;
	for (;;) {
		if (out == s->cap && (rc = scratch_reserve(s, out + 1)) != 0)
			return rc;
		size_t room = s->cap - out;
		if (room > UINT_MAX)
			room = UINT_MAX;
		z->next_out = s->buf + out;
		z->avail_out = (uInt)room;
		int zr = inflate(z, Z_NO_FLUSH);
		out += room - z->avail_out;
		if (zr == Z_STREAM_END) {
			if (z->avail_in == 0)
				break;
			/* Concatenated gzip members, as GZIPInputStream reads. */
			if (inflateReset(z) != Z_OK)
				return PROTO_ERR_INVALID;
			continue;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return PROTO_ERR_INVALID;
		/* Output left unfilled with no input left: the stream is cut. */
		if (z->avail_out != 0 && z->avail_in == 0)
			return PROTO_ERR_INVALID;
	}
	*out_len = out;
	return 0;
}

/* ---- snappy ---- */

static const uint8_t xerial_magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };
#define XERIAL_HEADER 16 /* magic + int32 version + int32 compatible version */

static uint32_t be32at(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int unsnappy(proto_scratch *s, const uint8_t *src, size_t len, size_t *out_len)
{
	int rc;
	if (len < XERIAL_HEADER || memcmp(src, xerial_magic, sizeof(xerial_magic)) != 0) {
		size_t n;
		if (snappy_uncompressed_length((const char *)src, len, &n) != SNAPPY_OK)
			return PROTO_ERR_INVALID;
		if ((rc = scratch_reserve(s, n ? n : 1)) != 0)
			return rc;
		size_t got = s->cap;
		if (snappy_uncompress((const char *)src, len, (char *)s->buf, &got) != SNAPPY_OK ||
		    got != n)
			return PROTO_ERR_INVALID;
		*out_len = n;
		return 0;
	}
	/* xerial framing: first pass sizes and checks the blocks, second
	 * decodes them into one contiguous buffer. */
	size_t total = 0;
	for (size_t pos = XERIAL_HEADER; pos < len;) {
		if (len - pos < 4)
			return PROTO_ERR_INVALID;
		size_t blen = be32at(src + pos);
		pos += 4;
		if (blen == 0 || blen > len - pos)
			return PROTO_ERR_INVALID;
		size_t n;
		if (snappy_uncompressed_length((const char *)src + pos, blen, &n) != SNAPPY_OK)
			return PROTO_ERR_INVALID;
		if (n > SIZE_MAX / 2 - total)
			return PROTO_ERR_NOMEM;
		total += n;
		pos += blen;
	}
	if ((rc = scratch_reserve(s, total ? total : 1)) != 0)
		return rc;
	size_t out = 0;
	for (size_t pos = XERIAL_HEADER; pos < len;) {
		size_t blen = be32at(src + pos);
		pos += 4;
		size_t n;
		snappy_uncompressed_length((const char *)src + pos, blen, &n);
		size_t got = s->cap - out;
		if (snappy_uncompress((const char *)src + pos, blen, (char *)s->buf + out, &got) !=
			    SNAPPY_OK ||
		    got != n)
			return PROTO_ERR_INVALID;
		out += n;
		pos += blen;
	}
	*out_len = out;
	return 0;
}

/* ---- lz4 ---- */

static int unlz4(proto_scratch *s, const uint8_t *src, size_t len, size_t *out_len)
{
	proto_codec_ctx *c = codecs(s);
	if (c == NULL)
		return PROTO_ERR_NOMEM;
	if (c->lz4 == NULL) {
		if (LZ4F_isError(LZ4F_createDecompressionContext(&c->lz4, LZ4F_VERSION))) {
			c->lz4 = NULL;
			return PROTO_ERR_NOMEM;
		}
	} else {
		LZ4F_resetDecompressionContext(c->lz4);
	}
	size_t in = 0, out = 0;
	int rc;
	if (len == 0)
		return PROTO_ERR_INVALID;
	for (;;) {
		if (out == s->cap && (rc = scratch_reserve(s, out + 1)) != 0)
			return rc;
		size_t room = s->cap - out, src_n = len - in;
		size_t r = LZ4F_decompress(c->lz4, s->buf + out, &room, src + in, &src_n, NULL);
		if (LZ4F_isError(r))
			return PROTO_ERR_INVALID;
		if (src_n == 0 && room == 0 && out < s->cap)
			return PROTO_ERR_INVALID; /* no progress possible */
		in += src_n;
		out += room;
		if (r == 0 && in == len)
			break; /* frame (or last concatenated frame) complete */
		/* Input used up, output not full, frame not complete: cut. */
		if (in == len && out < s->cap)
			return PROTO_ERR_INVALID;
	}
	*out_len = out;
	return 0;
}

/* ---- zstd ---- */

static int unzstd(proto_scratch *s, const uint8_t *src, size_t len, size_t *out_len)
{
	proto_codec_ctx *c = codecs(s);
	if (c == NULL)
		return PROTO_ERR_NOMEM;
	if (c->zstd == NULL) {
		c->zstd = ZSTD_createDCtx();
		if (c->zstd == NULL)
			return PROTO_ERR_NOMEM;
	} else {
		ZSTD_DCtx_reset(c->zstd, ZSTD_reset_session_only);
	}
	if (len == 0)
		return PROTO_ERR_INVALID;
	ZSTD_inBuffer in = { src, len, 0 };
	size_t out = 0;
	int rc;
	for (;;) {
		if (out == s->cap && (rc = scratch_reserve(s, out + 1)) != 0)
			return rc;
		ZSTD_outBuffer o = { s->buf, s->cap, out };
		size_t in_before = in.pos;
		size_t r = ZSTD_decompressStream(c->zstd, &o, &in);
		if (ZSTD_isError(r))
			return PROTO_ERR_INVALID;
		if (in.pos == in_before && o.pos == out && o.pos < o.size)
			return PROTO_ERR_INVALID; /* no progress possible */
		out = o.pos;
		if (r == 0 && in.pos == in.size)
			break;
		if (in.pos == in.size && o.pos < o.size)
			return PROTO_ERR_INVALID; /* truncated frame */
	}
	*out_len = out;
	return 0;
}

int proto_decompress(int codec, const uint8_t *src, size_t len, proto_scratch *scratch,
		     size_t *out_len)
{
	*out_len = 0;
	switch (codec) {
	case PROTO_COMPRESSION_GZIP:
		return gunzip(scratch, src, len, out_len);
	case PROTO_COMPRESSION_SNAPPY:
		return unsnappy(scratch, src, len, out_len);
	case PROTO_COMPRESSION_LZ4:
		return unlz4(scratch, src, len, out_len);
	case PROTO_COMPRESSION_ZSTD:
		return unzstd(scratch, src, len, out_len);
	default:
		return PROTO_ERR_VERSION;
	}
}
