/*
 * segment.c - segment files, per-batch index maintenance and the header
 * scanner (see segment.h).
 */
#define _GNU_SOURCE /* fallocate(2) */
#include "storage/segment.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/log.h" /* log_segment_keep and _release are its API */
#include "storage/retention.h" /* LOG_DELETED_SUFFIX */
#include "storage/timeindex.h"

int log_seg_path(char *out, size_t cap, const char *dir, int64_t base, const char *suffix)
{
	return log_io_path(out, cap, "%s/%020" PRId64 "%s", dir, base, suffix);
}

static void seg_free(log_segment *s)
{
	assert(!s->lru.cache); /* log_seg_drop detached it */
	if (s->fd >= 0)
		close(s->fd);
	log_ef_destroy(&s->oidx);
	log_ef_destroy(&s->tidx);
	free(s->log_path);
	free(s);
}

static int seg_new(const char *dir, int64_t base, int64_t now_ms, log_segment **out)
{
	char p[PATH_MAX];
	log_segment *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	atomic_init(&s->refs, 1);
	s->fd = -1;
	s->oidx.fd = s->tidx.fd = -1;
	s->base_offset = base;
	s->next_offset = base;
	s->created_ms = now_ms;
	s->rolling_ts = -1;
	s->max_ts = -1;
	s->max_ts_offset = base;
	int rc = log_seg_path(p, sizeof p, dir, base, ".log");
	if (rc == 0 && !(s->log_path = strdup(p)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = log_seg_path(p, sizeof p, dir, base, ".index");
	if (rc == 0)
		rc = log_ef_init(&s->oidx, p, LOG_INDEX_ENTRY_SIZE);
	if (rc == 0)
		rc = log_seg_path(p, sizeof p, dir, base, ".timeindex");
	if (rc == 0)
		rc = log_ef_init(&s->tidx, p, LOG_TIMEINDEX_ENTRY_SIZE);
	if (rc < 0) {
		seg_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int log_seg_create(const char *dir, int64_t base, int64_t now_ms, log_segment **out)
{
	log_segment *s;
	int rc = seg_new(dir, base, now_ms, &s);
	if (rc < 0)
		return rc;
	struct stat st;
	s->fd = open(s->log_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s->fd < 0 || fstat(s->fd, &st) < 0)
		rc = -errno;
	if (rc == 0) {
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		rc = log_ef_reset(&s->oidx);
	}
	if (rc == 0)
		rc = log_ef_reset(&s->tidx);
	if (rc < 0) {
		log_seg_unlink(s);
		seg_free(s);
		return rc;
	}
	log_seg_set_active(s, true);
	*out = s;
	return 0;
}

int log_seg_open(const char *dir, int64_t base, int64_t now_ms, log_segment **out)
{
	log_segment *s;
	int rc = seg_new(dir, base, now_ms, &s);
	if (rc < 0)
		return rc;
	struct stat st;
	if (stat(s->log_path, &st) < 0) {
		rc = -errno;
		seg_free(s);
		return rc;
	}
	s->size = st.st_size;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	*out = s;
	return 0;
}

/* path opened if it is the segment's file (device and inode). */
static int open_checked(const log_segment *s, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? -errno : st.st_dev != s->dev || st.st_ino != s->ino ? -ESTALE : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int log_seg_open_fd(const log_segment *s, int flags)
{
	int fd = open_checked(s, s->log_path, flags);
	if (fd == -ENOENT || fd == -ESTALE) {
		/* a segment that left the log: its file renamed (retention.h) */
		char path[PATH_MAX];
		if (log_io_path(path, sizeof path, "%s%s", s->log_path, LOG_DELETED_SUFFIX) == 0) {
			int dfd = open_checked(s, path, flags);
			if (dfd >= 0)
				return dfd;
		}
	}
	return fd;
}

/* ---- descriptors and the open-file cache ---- */

static int seg_weight(const log_segment *s)
{
	return (s->fd >= 0) + (s->oidx.fd >= 0) + (s->tidx.fd >= 0);
}

/* The cache's evict callback: close everything unless a send has the
 * .log pinned (log_segment_pin). */
static bool seg_evict(log_fcache_entry *e)
{
	log_segment *s = (log_segment *)(void *)((char *)e - offsetof(log_segment, lru));
	if (s->pins > 0)
		return false;
	if (s->fd >= 0 && s->allocated > s->size) {
		/* an idle active segment gives back its reserve (log_seg_preallocate) */
		if (ftruncate(s->fd, (off_t)s->size) < 0)
			fprintf(stderr, "samsa storage: %s: cannot give back preallocated blocks: %s\n",
				s->log_path, strerror(errno));
		s->allocated = s->size;
	}
	log_ef_close_fd(&s->oidx);
	log_ef_close_fd(&s->tidx);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (!s->oidx.keep_fd) {
		log_ef_unload(&s->oidx);
		log_ef_unload(&s->tidx);
	}
	return true;
}

void log_seg_account(log_segment *s)
{
	if (!s->files)
		return;
	int w = seg_weight(s);
	if (w == 0)
		log_fcache_remove(&s->lru);
	else if (!s->lru.cache)
		log_fcache_add(s->files, &s->lru, w, seg_evict);
	else if (w != s->lru.weight)
		log_fcache_reweigh(&s->lru, w);
}

void log_seg_attach(log_segment *s, log_file_cache *fc)
{
	s->files = fc;
	log_seg_account(s);
}

void log_seg_detach(log_segment *s)
{
	log_fcache_remove(&s->lru);
	s->files = NULL;
}

void log_seg_drop(log_segment *s)
{
	log_seg_detach(s);
	/* Others hold it (a response waiting to be sent): its .log opened
	 * now, while its file is surely there, and kept to the last release
	 * as before the cache (a pin opens it otherwise, or fails once the
	 * renamed file is unlinked). */
	if (s->fd < 0 && atomic_load_explicit(&s->refs, memory_order_acquire) > 1) {
		int fd = log_seg_open_fd(s, O_RDONLY);
		if (fd >= 0)
			s->fd = fd;
	}
	log_segment_release(s);
}

int log_segment_pin(void *segment)
{
	log_segment *s = segment;
	int fd = log_seg_fd(s);
	if (fd >= 0)
		s->pins++;
	return fd;
}

void log_segment_unpin(void *segment)
{
	log_segment *s = segment;
	assert(s->pins > 0);
	s->pins--;
}

int log_seg_fd(log_segment *s)
{
	if (s->fd < 0) {
		int fd = log_seg_open_fd(s, O_RDWR);
		/* out of descriptors: close the least recently used half of
		 * the cache's segments and try once more */
		if ((fd == -EMFILE || fd == -ENFILE) && s->files && log_fcache_shed(s->files, &s->lru) > 0)
			fd = log_seg_open_fd(s, O_RDWR);
		if (fd < 0)
			return fd;
		s->fd = fd;
		log_seg_account(s);
	}
	if (s->lru.cache)
		log_fcache_touch(&s->lru);
	return s->fd;
}

int log_seg_pread(log_segment *s, void *buf, size_t n, int64_t pos)
{
	if (s->fd >= 0)
		return log_io_pread(s->fd, buf, n, pos);
	int fd = log_seg_open_fd(s, O_RDONLY);
	if (fd < 0)
		return fd;
	int rc = log_io_pread(fd, buf, n, pos);
	close(fd);
	return rc;
}

void log_seg_close_index_fds(log_segment *s)
{
	log_ef_close_fd(&s->oidx);
	log_ef_close_fd(&s->tidx);
	log_seg_account(s);
}

void log_seg_set_active(log_segment *s, bool active)
{
	log_ef_keep_fd(&s->oidx, active);
	log_ef_keep_fd(&s->tidx, active);
	log_seg_account(s);
}

void log_seg_unlink(log_segment *s)
{
	unlink(s->log_path);
	unlink(s->oidx.path);
	unlink(s->tidx.path);
}

void log_segment_keep(log_segment *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

#define PREALLOC_MIN (1LL << 20)
#define PREALLOC_MAX (16LL << 20)

void log_seg_preallocate(log_segment *s, int64_t end, int64_t limit)
{
	if (s->allocated < s->size)
		s->allocated = s->size;
	if (end <= s->allocated || s->no_prealloc || s->size < PREALLOC_MIN)
		return;
	int64_t to = end + (s->size < PREALLOC_MAX ? s->size : PREALLOC_MAX);
	if (to > limit)
		to = limit;
	if (to <= s->allocated || s->fd < 0)
		return;
	if (fallocate(s->fd, FALLOC_FL_KEEP_SIZE, (off_t)s->allocated, (off_t)(to - s->allocated)) == 0)
		s->allocated = to;
	else if (errno == EOPNOTSUPP || errno == ENOSYS)
		s->no_prealloc = true;
}

void log_seg_trim_preallocated(log_segment *s)
{
	if (s->allocated > s->size) {
		int fd = log_seg_fd(s);
		if (fd < 0 || ftruncate(fd, (off_t)s->size) < 0)
			fprintf(stderr, "samsa storage: %s: cannot give back preallocated blocks: %s\n",
				s->log_path, strerror(fd < 0 ? -fd : errno));
	}
	s->allocated = s->size;
}

void log_segment_release(void *segment)
{
	log_segment *s = segment;
	if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		seg_free(s);
}

int log_seg_load_indexes(log_segment *s, int64_t *log_size_check)
{
	int rc = log_ef_load(&s->oidx);
	if (rc == 0)
		rc = log_ef_load(&s->tidx);
	/* out of descriptors: make room in the cache and try once more */
	if ((rc == -EMFILE || rc == -ENFILE) && s->files && log_fcache_shed(s->files, &s->lru) > 0) {
		rc = log_ef_load(&s->oidx);
		if (rc == 0)
			rc = log_ef_load(&s->tidx);
	}
	if (rc == 0 && log_size_check)
		rc = log_index_check(&s->oidx, *log_size_check);
	if (rc == 0 && log_size_check)
		rc = log_timeindex_check(&s->tidx);
	log_seg_account(s);
	return rc;
}

int log_seg_index_batch(log_segment *s, const proto_batch_info *h, int64_t pos, int32_t interval)
{
	int64_t last = log_batch_last_offset(h);
	if (h->max_timestamp > s->max_ts) {
		s->max_ts = h->max_timestamp;
		s->max_ts_offset = last;
	}
	if (s->bytes_since_index > interval) {
		int rc = log_index_add(&s->oidx, (int32_t)(last - s->base_offset), (int32_t)pos);
		if (rc == 0)
			rc = log_timeindex_maybe_add(&s->tidx, s->max_ts,
						     (int32_t)(s->max_ts_offset - s->base_offset));
		if (rc < 0)
			return rc;
		s->bytes_since_index = 0;
	}
	s->bytes_since_index += h->size;
	return 0;
}

int log_seg_sync_indexes(log_segment *s)
{
	int rc = log_ef_sync(&s->oidx);
	if (rc == 0)
		rc = log_ef_sync(&s->tidx);
	log_seg_account(s);
	return rc;
}

int log_seg_seal_timeindex(log_segment *s)
{
	if (s->max_ts < 0)
		return 0;
	int rc = log_ef_load(&s->tidx);
	if (rc == 0)
		rc = log_timeindex_maybe_add(&s->tidx, s->max_ts, (int32_t)(s->max_ts_offset - s->base_offset));
	if (rc == 0)
		rc = log_ef_sync(&s->tidx);
	log_seg_account(s);
	return rc;
}

int log_seg_truncate_file(log_segment *s, int64_t size)
{
	int fd = log_seg_fd(s);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	s->size = size;
	return 0;
}

bool log_batch_is_legacy(const uint8_t *p, size_t avail)
{
	/* v0/v1 message: offset, size (>= 14: crc, magic, attributes, key and
	 * value lengths), crc, magic 0 or 1 at the same place as v2's magic */
	return avail > PROTO_BATCH_OFF_MAGIC && (p[PROTO_BATCH_OFF_MAGIC] == 0 || p[PROTO_BATCH_OFF_MAGIC] == 1) &&
	       (int32_t)log_be32(p + PROTO_BATCH_OFF_LENGTH) >= 14 && (int64_t)log_be64(p) >= 0;
}

int log_batch_parse_header(const uint8_t *p, proto_batch_info *h)
{
	if (log_batch_is_legacy(p, PROTO_BATCH_HEADER_SIZE))
		return -ENOTSUP;
	h->base_offset = (int64_t)log_be64(p + PROTO_BATCH_OFF_BASE_OFFSET);
	int32_t blen = (int32_t)log_be32(p + PROTO_BATCH_OFF_LENGTH);
	h->partition_leader_epoch = (int32_t)log_be32(p + PROTO_BATCH_OFF_LEADER_EPOCH);
	h->magic = (int8_t)p[PROTO_BATCH_OFF_MAGIC];
	h->crc = log_be32(p + PROTO_BATCH_OFF_CRC);
	h->attributes = (int16_t)(p[PROTO_BATCH_OFF_ATTRIBUTES] << 8 | p[PROTO_BATCH_OFF_ATTRIBUTES + 1]);
	h->last_offset_delta = (int32_t)log_be32(p + PROTO_BATCH_OFF_LAST_OFFSET_DELTA);
	h->base_timestamp = (int64_t)log_be64(p + PROTO_BATCH_OFF_BASE_TIMESTAMP);
	h->max_timestamp = (int64_t)log_be64(p + PROTO_BATCH_OFF_MAX_TIMESTAMP);
	h->producer_id = (int64_t)log_be64(p + PROTO_BATCH_OFF_PRODUCER_ID);
	h->producer_epoch = (int16_t)(p[PROTO_BATCH_OFF_PRODUCER_EPOCH] << 8 | p[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1]);
	h->base_sequence = (int32_t)log_be32(p + PROTO_BATCH_OFF_BASE_SEQUENCE);
	h->records_count = (int32_t)log_be32(p + PROTO_BATCH_OFF_RECORDS_COUNT);
	if (blen < PROTO_BATCH_HEADER_SIZE - PROTO_BATCH_LOG_OVERHEAD || blen > INT32_MAX - PROTO_BATCH_LOG_OVERHEAD)
		return LOG_ERR_CORRUPT;
	h->size = blen + PROTO_BATCH_LOG_OVERHEAD;
	if (h->magic != 2 || h->last_offset_delta < 0 || h->base_offset < 0 ||
	    h->base_offset > INT64_MAX - h->last_offset_delta)
		return LOG_ERR_CORRUPT;
	return 0;
}

void log_scan_init(log_scan *sc, log_segment *s, int64_t end)
{
	sc->fd = log_seg_fd(s);
	sc->end = end;
	sc->win_pos = 0;
	sc->win_len = 0;
}

int log_scan_header(log_scan *sc, int64_t pos, proto_batch_info *h)
{
	if (pos >= sc->end)
		return 1;
	if (sc->fd < 0)
		return sc->fd;
	if (sc->end - pos < PROTO_BATCH_HEADER_SIZE) {
		uint8_t b[PROTO_BATCH_HEADER_SIZE];
		size_t n = (size_t)(sc->end - pos);
		int rc = log_io_pread(sc->fd, b, n, pos);
		if (rc < 0 && rc != -EIO)
			return rc;
		return rc == 0 && log_batch_is_legacy(b, n) ? -ENOTSUP : LOG_ERR_CORRUPT;
	}
	if (pos < sc->win_pos || pos + PROTO_BATCH_HEADER_SIZE > sc->win_pos + sc->win_len) {
		int64_t n = sc->end - pos;
		if (n > (int64_t)sizeof sc->win)
			n = sizeof sc->win;
		int rc = log_io_pread(sc->fd, sc->win, (size_t)n, pos);
		if (rc < 0) {
			sc->win_len = 0;
			return rc == -EIO ? LOG_ERR_CORRUPT : rc;
		}
		sc->win_pos = pos;
		sc->win_len = (int32_t)n;
	}
	int rc = log_batch_parse_header(sc->win + (pos - sc->win_pos), h);
	if (rc < 0)
		return rc;
	if (h->size > sc->end - pos)
		return LOG_ERR_CORRUPT;
	return 0;
}
