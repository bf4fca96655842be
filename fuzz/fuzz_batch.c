/*
 * fuzz_batch.c - libFuzzer target: record batch validation as the produce
 * path does it (broker/handlers/produce.c: proto_batches_validate with the
 * topic's rules and a reused, capped decompression scratch), compressed
 * batches (gzip, snappy, lz4, zstd) included, and for what validates, what
 * the broker does next with such bytes: iterate every record
 * (proto_record_iter, as fetch-side readers and the cleaner do), read
 * control markers and stamp LogAppendTime (which must leave a valid CRC).
 *
 * Input: byte 0 is a set of flags, the rest the partition's records:
 *   bit 0  recompute each batch's CRC32C first (fuzz_util.h), so mutations
 *          get past the CRC check
 *   bit 1  compacted topic (every record needs a key)
 *   bit 2  LogAppendTime topic
 *   bit 3  Produce v3-v6 (zstd refused)
 *   bit 4  timestamp window: Kafka's defaults instead of a narrow one
 *          (before.max.ms = INT64_MAX, after.max.ms = 3600000)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "protocol/batch.h"
#include "protocol/records.h"

/* Smaller than produce.c's 64 MiB so a compression bomb stays fast; the
 * limit's path is the same. */
#define SCRATCH_MAX (4u << 20)
#define SCRATCH_KEEP (1u << 20)
#define NOW_MS INT64_C(1700000000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static proto_scratch scratch;
static int scratch_ready;

/* Everything after validation succeeded: the batches are sound. */
static void use_valid(uint8_t *p, size_t len)
{
	size_t pos = 0;
	while (pos < len) {
		proto_batch_info b;
		if (proto_batch_header(p + pos, len - pos, &b) != 0)
			abort(); /* validated, yet the framing does not hold */
		proto_record_iter it;
		if (proto_record_iter_init(&it, p + pos, (size_t)b.size, &scratch) != 0)
			abort();
		proto_record rec;
		int rc, n = 0;
		while ((rc = proto_record_iter_next(&it, &rec)) == 1) {
			if ((rec.key_len > 0 && !rec.key) || (rec.value_len > 0 && !rec.value))
				abort();
			n++;
		}
		if (rc != 0 || n != b.records_count)
			abort();
		proto_batch_set_base_offset(p + pos, 42);
		proto_batch_set_leader_epoch(p + pos, 7);
		proto_batch_set_log_append_time(p + pos, NOW_MS);
		if (proto_batch_header(p + pos, len - pos, &b) != 0 || !proto_batch_crc_ok(p + pos, &b))
			abort();
		pos += (size_t)b.size;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!scratch_ready) {
		proto_scratch_init(&scratch, SCRATCH_MAX);
		scratch_ready = 1;
	}
	uint8_t flags = data[0];
	size_t len = size - 1;
	uint8_t *p = malloc(len ? len : 1);
	if (!p)
		abort();
	memcpy(p, data + 1, len);
	if (flags & 1)
		fuzz_fix_crcs(p, len);
	proto_batch_rules rules = {
		.max_batch_bytes = 1048588, /* message.max.bytes */
		.now_ms = NOW_MS,
		.timestamp_before_max_ms = flags & 16 ? INT64_MAX : 1000,
		.timestamp_after_max_ms = flags & 16 ? 3600000 : 1000,
		.log_append_time = (flags & 4) != 0,
		.allow_zstd = !(flags & 8),
		.compacted = (flags & 2) != 0,
	};
	int nbatches = 0;
	int64_t nrecords = 0;
	const char *reason = NULL;
	int err = proto_batches_validate(p, len, &rules, &scratch, &nbatches, &nrecords, &reason);
	proto_scratch_trim(&scratch, SCRATCH_KEEP);
	if (err == 0)
		use_valid(p, len);
	/* Control markers are read from log bytes (storage, fetch): any batch. */
	proto_batch_info b;
	if (proto_batch_header(p, len, &b) == 0) {
		int16_t type;
		int32_t epoch;
		(void)proto_control_batch_parse(p, len, &type, &epoch);
	}
	proto_scratch_trim(&scratch, SCRATCH_KEEP);
	free(p);
	return 0;
}
