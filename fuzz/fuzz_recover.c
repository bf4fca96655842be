/*
 * fuzz_recover.c - libFuzzer target: recovery of a partition log whose
 * segment files hold arbitrary bytes (storage/log.h log_open with
 * clean = false, as after a crash: recover.c checks the batches, truncates a
 * torn or corrupt tail and rebuilds the indexes), then reading it all back,
 * the time lookups, and one append, which a recovered log must accept.
 *
 * Input: byte 0 is a set of flags, then optional parts, the rest .log bytes:
 *   bit 0  recompute each batch's CRC32C in the .log bytes (fuzz_util.h)
 *   bit 1  a .index part follows: 2-byte big-endian length, then the bytes
 *   bit 2  a .timeindex part follows, the same way
 *   bit 3  recovery point 0 (from the log dir's checkpoint) instead of -1
 *   bit 4  split the .log bytes in two segments at a 2-byte position that
 *          follows the parts; the second is named after the offset after the
 *          first part's last whole batch
 * The files go to t-0 in a per-process directory made by mkdtemp under
 * /dev/shm (or /tmp when that is not there), emptied after every input and
 * removed at exit.
 */
#include <dirent.h>
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
#include "protocol/buf.h"
#include "protocol/records.h"
#include "storage/log.h"

#define NOW_MS INT64_C(1700000000000)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static char pdir[96];
static proto_scratch scratch;

/* Durability does not matter here and fsync makes every run wait for the
 * disk (~40 runs/s instead of thousands): the target's own definitions take
 * the place of libc's for the statically linked storage library. */
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
	/* tmpfs when there is one: on ext4 creating and deleting the same
	 * files thousands of times a second costs most of the time */
	strcpy(root, "/dev/shm/fuzz_recover.XXXXXX");
	if (!mkdtemp(root)) {
		strcpy(root, "/tmp/fuzz_recover.XXXXXX");
		if (!mkdtemp(root))
			abort();
	}
	snprintf(pdir, sizeof(pdir), "%s/t-0", root);
	proto_scratch_init(&scratch, 4u << 20);
	atexit(cleanup);
	return 0;
}

static void write_file(int64_t base, const char *ext, const uint8_t *p, size_t n)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%020" PRId64 ".%s", pdir, base, ext);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* Take a part announced by a 2-byte length from the input (p, n). */
static const uint8_t *take_part(const uint8_t **p, size_t *n, size_t *len)
{
	if (*n < 2) {
		*len = 0;
		return *p;
	}
	size_t l = (size_t)((*p)[0] << 8 | (*p)[1]);
	*p += 2;
	*n -= 2;
	if (l > *n)
		l = *n;
	const uint8_t *part = *p;
	*p += l;
	*n -= l;
	*len = l;
	return part;
}

/* The offset after the last whole batch at p, or 1 when there is none. */
static int64_t next_offset_of(const uint8_t *p, size_t len)
{
	int64_t next = 1;
	size_t pos = 0;
	proto_batch_info b;
	while (pos < len && proto_batch_header(p + pos, len - pos, &b) == 0) {
		if (b.base_offset >= 0 && b.last_offset_delta >= 0 &&
		    b.base_offset < INT64_MAX - b.last_offset_delta)
			next = b.base_offset + b.last_offset_delta + 1;
		pos += (size_t)b.size;
	}
	return next;
}

/* Read every batch from the log start to the log end, as fetch would. */
static void read_all(log_partition *lp)
{
	int64_t off = log_start_offset(lp), end = log_end_offset(lp);
	uint8_t *buf = NULL;
	while (off < end) {
		log_read_result rr;
		if (log_read(lp, off, INT64_MAX, 1 << 20, true, &rr) != 0)
			abort(); /* an offset inside [start, end) is readable */
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
			    !proto_batch_crc_ok(buf + pos, &b))
				abort(); /* recovery kept a batch that does not check */
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
			abort(); /* no progress */
		off = rr.next_offset;
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	const uint8_t *p = data + 1;
	size_t n = size - 1, index_len = 0, time_len = 0;
	const uint8_t *index = NULL, *timeindex = NULL;
	if (flags & 2)
		index = take_part(&p, &n, &index_len);
	if (flags & 4)
		timeindex = take_part(&p, &n, &time_len);
	size_t split = n;
	if ((flags & 16) && n >= 2) {
		split = (size_t)(p[0] << 8 | p[1]);
		p += 2;
		n -= 2;
		if (split > n)
			split = n;
	}
	uint8_t *log = malloc(n ? n : 1);
	if (!log)
		abort();
	memcpy(log, p, n);
	if (flags & 1) {
		fuzz_fix_crcs(log, split);
		fuzz_fix_crcs(log + split, n - split);
	}
	if (mkdir(pdir, 0755) != 0 && errno != EEXIST)
		abort();
	write_file(0, "log", log, split);
	if (index)
		write_file(0, "index", index, index_len);
	if (timeindex)
		write_file(0, "timeindex", timeindex, time_len);
	if (split < n)
		write_file(next_offset_of(log, split), "log", log + split, n - split);

	log_config cfg;
	log_config_defaults(&cfg);
	cfg.index_interval_bytes = 128;
	cfg.max_index_bytes = 4096; /* not 10 MiB of mapped index per run */
	log_partition *lp = NULL;
	if (log_open(pdir, &cfg, false, flags & 8 ? 0 : -1, -1, NOW_MS, &lp) == 0) {
		if (log_start_offset(lp) > log_end_offset(lp) ||
		    log_high_watermark(lp) > log_end_offset(lp))
			abort();
		read_all(lp);
		int64_t o, ts;
		(void)log_offset_for_timestamp(lp, 0, &o, &ts);
		(void)log_offset_for_timestamp(lp, NOW_MS, &o, &ts);
		(void)log_max_timestamp(lp, &o, &ts);
		/* a recovered log takes a plain batch at its end */
		proto_writer w;
		proto_writer_init(&w);
		proto_batch_builder bb;
		proto_batch_builder_begin(&bb, &w);
		proto_batch_builder_add(&bb, NOW_MS, "k", 1, "v", 1);
		int32_t blen = proto_batch_builder_finish(&bb);
		int64_t base;
		int64_t leo = log_end_offset(lp);
		if (blen <= 0)
			abort();
		/* (it may fail: an offset near INT64_MAX, a segment it cannot roll) */
		if (log_append(lp, w.buf, (size_t)blen, 0, NOW_MS, &base) == 0 && base != leo)
			abort();
		proto_writer_free(&w);
		read_all(lp);
		log_close(lp);
	}
	fuzz_empty_dir(pdir);
	free(log);
	return 0;
}
