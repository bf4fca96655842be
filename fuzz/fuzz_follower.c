/*
 * fuzz_follower.c - libFuzzer target: a replica's append of arbitrary bytes
 * as its leader's Fetch answer (storage/log.h log_append_follower, a decoder
 * of network input), then optionally a truncation, then reopening.
 *
 * Input: byte 0 is a set of flags, then optional parts, the rest the bytes
 * handed to log_append_follower:
 *   bit 0  recompute each batch's CRC32C in those bytes (fuzz_util.h), so
 *          mutations get past the check
 *   bit 1  two calls: the first with the bytes up to a 2-byte big-endian
 *          position that follows, the second with what it did not take
 *          and the rest (a fetch cut at max bytes, then the next one)
 *   bit 2  then log_truncate_to an offset: a 2-byte value that follows,
 *          taken modulo (log end offset + 1)
 *   bit 3  segment.bytes 600, so appends roll
 * Checked (abort otherwise): a refused append changes nothing; a taken one
 * ends at the log end offset; every batch reads back with its CRC; a
 * truncation leaves nothing at or above its offset; an unclean reopen
 * finds the same log end offset and latest leader epoch.
 * The files go to t-0 in a per-process directory under /dev/shm (or /tmp),
 * emptied after every input and removed at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/fuzz_util.h"
#include "protocol/batch.h"
#include "protocol/records.h"
#include "storage/log.h"

#define NOW_MS INT64_C(1700000000000)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static char pdir[96];
static proto_scratch scratch;

/* No durability needed, and fsync would make every run wait for the disk
 * (see fuzz_recover.c): these take the place of libc's. */
int fsync(int fd);
int fdatasync(int fd);
int fsync(int fd)
{
	return fcntl(fd, F_GETFD) < 0 ? -1 : 0;
}
int fdatasync(int fd)
{
	return fsync(fd);
}

static void cleanup(void)
{
	fuzz_empty_dir(root);
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strcpy(root, "/dev/shm/fuzz_follower.XXXXXX");
	if (!mkdtemp(root)) {
		strcpy(root, "/tmp/fuzz_follower.XXXXXX");
		if (!mkdtemp(root))
			abort();
	}
	snprintf(pdir, sizeof(pdir), "%s/t-0", root);
	proto_scratch_init(&scratch, 4u << 20);
	atexit(cleanup);
	return 0;
}

static uint16_t take16(const uint8_t **p, size_t *n)
{
	if (*n < 2)
		return 0;
	uint16_t v = (uint16_t)((*p)[0] << 8 | (*p)[1]);
	*p += 2;
	*n -= 2;
	return v;
}

/* Read every batch from the log start to the log end, as a fetch would. */
static void read_all(log_partition *lp)
{
	int64_t off = log_start_offset(lp), end = log_end_offset(lp);
	uint8_t *buf = NULL;
	while (off < end) {
		log_read_result rr;
		if (log_read(lp, off, INT64_MAX, 1 << 20, true, &rr) != 0)
			abort();
		if (rr.len == 0) {
			if (rr.segment)
				log_segment_release(rr.segment);
			break;
		}
		buf = realloc(buf, (size_t)rr.len);
		if (!buf || pread(rr.fd, buf, (size_t)rr.len, rr.file_pos) != rr.len)
			abort();
		size_t pos = 0;
		proto_batch_info b;
		while (pos < (size_t)rr.len) {
			if (proto_batch_header(buf + pos, (size_t)rr.len - pos, &b) != 0 ||
			    !proto_batch_crc_ok(buf + pos, &b) || b.base_offset + b.last_offset_delta >= end)
				abort();
			proto_record_iter it;
			proto_record rec;
			if (proto_record_iter_init(&it, buf + pos, (size_t)b.size, &scratch) == 0)
				while (proto_record_iter_next(&it, &rec) == 1)
					;
			pos += (size_t)b.size;
		}
		proto_scratch_trim(&scratch, 1u << 20);
		log_segment_release(rr.segment);
		if (rr.next_offset <= off)
			abort();
		off = rr.next_offset;
	}
	free(buf);
}

/* One follower append; checks what it reports against the log. */
static int append(log_partition *lp, const uint8_t *p, size_t n, size_t *taken)
{
	int64_t leo = log_end_offset(lp), size = log_size_bytes(lp);
	log_append_follower_info fi;
	int rc = log_append_follower(lp, p, n, NOW_MS, &fi);
	*taken = fi.bytes;
	if (rc != 0) {
		if (fi.bytes != 0 || fi.batches != 0 || log_end_offset(lp) != leo || log_size_bytes(lp) != size)
			abort(); /* a refused append changed something */
		if (rc != LOG_ERR_CORRUPT && rc != LOG_ERR_UNEXPECTED_OFFSET && rc != -ENOMEM &&
		    rc != -ENOSPC && rc != -EFBIG && rc != -EIO)
			abort();
		return rc;
	}
	if (fi.bytes > n || (fi.batches == 0) != (fi.bytes == 0))
		abort();
	if (fi.batches > 0 && (fi.first_offset < leo || fi.last_offset + 1 != log_end_offset(lp) ||
			       log_size_bytes(lp) != size + (int64_t)fi.bytes))
		abort();
	if (fi.batches == 0 && log_end_offset(lp) != leo)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	size_t split = n;
	uint16_t cut = 0;
	if (flags & 2)
		split = take16(&p, &n);
	if (flags & 4)
		cut = take16(&p, &n);
	if (split > n)
		split = n;
	uint8_t *in = malloc(n ? n : 1);
	if (!in)
		abort();
	memcpy(in, p, n);
	if (flags & 1)
		fuzz_fix_crcs(in, n);

	log_config cfg;
	log_config_defaults(&cfg);
	cfg.index_interval_bytes = 128;
	cfg.max_index_bytes = 4096;
	if (flags & 8)
		cfg.segment_bytes = 600;
	log_partition *lp = NULL;
	if (log_open(pdir, &cfg, false, -1, -1, NOW_MS, &lp) != 0)
		abort();
	size_t taken = 0;
	if (append(lp, in, split, &taken) == 0 && split < n)
		append(lp, in + taken, n - taken, &taken);
	read_all(lp);
	if (flags & 4) {
		int64_t off = (int64_t)((uint64_t)cut % ((uint64_t)log_end_offset(lp) + 1));
		int rc = log_truncate_to(lp, off, NOW_MS);
		if (rc != 0 && rc != LOG_ERR_OFFSET_OUT_OF_RANGE)
			abort();
		if (rc == 0 && log_end_offset(lp) > off)
			abort();
		read_all(lp);
	}
	int64_t leo = log_end_offset(lp);
	int32_t epoch = log_latest_epoch(lp);
	log_close(lp);
	if (log_open(pdir, &cfg, false, -1, -1, NOW_MS, &lp) != 0)
		abort();
	if (log_end_offset(lp) != leo || log_latest_epoch(lp) != epoch)
		abort(); /* recovery disagrees with what the append left */
	read_all(lp);
	log_close(lp);
	fuzz_empty_dir(pdir);
	free(in);
	return 0;
}
