/*
 * compress.h - decompression of a record batch's records section, used to
 * validate compressed batches (Kafka protocol guide "Record Batch",
 * attributes bits 0-2). The formats are the ones Kafka's clients write:
 *   gzip   RFC 1952 stream(s) (Java GZIPOutputStream, librdkafka zlib);
 *   snappy raw snappy, or the xerial/snappy-java framing the Java client
 *          uses: magic 82 'S' 'N' 'A' 'P' 'P' 'Y' 00, int32 version,
 *          int32 compatible version, then blocks of int32 BE length + raw
 *          snappy (librdkafka accepts both, rdkafka_msgset_reader.c);
 *   lz4    LZ4 frame format (KIP-57: Kafka's frames follow the spec);
 *   zstd   zstd frame(s), decoded by streaming because the frame content
 *          size may be absent.
 */
#ifndef SAMSA_PROTOCOL_COMPRESS_H
#define SAMSA_PROTOCOL_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/batch.h"

/*
 * Decompress len bytes at src, compressed with codec (enum
 * proto_compression, 1..4), into scratch->buf, growing it up to
 * scratch->max. On success returns 0 and sets *out_len (the output is
 * scratch->buf[0 .. *out_len), owned by the scratch, valid until its next
 * use). Errors: PROTO_ERR_INVALID (not valid data for the codec, truncated,
 * or trailing bytes), PROTO_ERR_NOMEM (output larger than scratch->max, or
 * allocation failed), PROTO_ERR_VERSION (codec not 1..4).
 */
int proto_decompress(int codec, const uint8_t *src, size_t len, proto_scratch *scratch,
		     size_t *out_len);

#endif
