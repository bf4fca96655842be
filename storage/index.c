/*
 * index.c - fixed-size entry files and the offset index (see index.h).
 */
#include "storage/index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/err.h"

int log_ef_init(log_entfile *ef, const char *path, size_t esz)
{
	memset(ef, 0, sizeof *ef);
	ef->fd = -1;
	ef->esz = esz;
	ef->path = strdup(path);
	return ef->path ? 0 : -ENOMEM;
}

int log_ef_stat(log_entfile *ef)
{
	struct stat st;
	if (stat(ef->path, &st) < 0)
		return -errno;
	if (st.st_size % (off_t)ef->esz != 0)
		return LOG_ERR_CORRUPT;
	ef->n = (size_t)st.st_size / ef->esz;
	ef->nfile = ef->n;
	if (ef->n == 0)
		return 0;
	int fd = open(ef->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = log_io_pread(fd, ef->last, ef->esz, (int64_t)((ef->n - 1) * ef->esz));
	close(fd);
	return rc;
}

static int ef_reserve(log_entfile *ef, size_t n)
{
	if (n <= ef->cap)
		return 0;
	size_t cap = ef->cap ? ef->cap : 64;
	while (cap < n)
		cap *= 2;
	uint8_t *m = realloc(ef->mem, cap * ef->esz);
	if (!m)
		return -ENOMEM;
	ef->mem = m;
	ef->cap = cap;
	return 0;
}

int log_ef_load(log_entfile *ef)
{
	if (ef->loaded)
		return 0;
	int fd = open(ef->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	size_t n = (size_t)st.st_size / ef->esz;
	int rc = ef_reserve(ef, n);
	if (rc == 0 && n > 0)
		rc = log_io_pread(fd, ef->mem, n * ef->esz, 0);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	if (st.st_size % (off_t)ef->esz != 0 && ftruncate(fd, (off_t)(n * ef->esz)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	close(fd); /* log_ef_sync opens one to write */
	ef->n = ef->nfile = n;
	if (n > 0)
		memcpy(ef->last, log_ef_at(ef, n - 1), ef->esz);
	ef->loaded = true;
	return 0;
}

int log_ef_reset(log_entfile *ef)
{
	if (ef->fd >= 0) {
		if (ftruncate(ef->fd, 0) < 0)
			return -errno;
	} else {
		/* Create or empty the file, but hold no fd until the first
		 * entry is written (log_ef_sync): an empty partition then costs
		 * one fd (its .log), not three. */
		int fd = open(ef->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	if (ef->nfile > 0)
		ef->dirty = true; /* entries gone from the file */
	ef->n = ef->nfile = 0;
	ef->loaded = true;
	return 0;
}

int log_ef_push(log_entfile *ef, const uint8_t *entry)
{
	int rc = log_ef_load(ef);
	if (rc == 0)
		rc = ef_reserve(ef, ef->n + 1);
	if (rc < 0)
		return rc;
	memcpy(ef->mem + ef->n * ef->esz, entry, ef->esz);
	memcpy(ef->last, entry, ef->esz);
	ef->n++;
	return 0;
}

int log_ef_sync(log_entfile *ef)
{
	if (ef->n <= ef->nfile)
		return 0;
	if (ef->fd < 0) {
		ef->fd = open(ef->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (ef->fd < 0)
			return -errno;
	}
	int rc = log_io_pwrite(ef->fd, log_ef_at(ef, ef->nfile), (ef->n - ef->nfile) * ef->esz,
			       (int64_t)(ef->nfile * ef->esz));
	ef->dirty = true;
	if (rc < 0) {
		/* A short write (ENOSPC, EFBIG) may have left part of the
		 * entries: cut the file back to the entries written before, so
		 * no torn entry stays (best effort: shrinking needs no space). */
		if (ftruncate(ef->fd, (off_t)(ef->nfile * ef->esz)) < 0)
			fprintf(stderr, "samsa storage: %s: cannot truncate a failed index write: %s\n",
				ef->path, strerror(errno));
	} else {
		ef->nfile = ef->n;
	}
	if (!ef->keep_fd)
		log_ef_close_fd(ef);
	return rc;
}

void log_ef_close_fd(log_entfile *ef)
{
	if (ef->fd >= 0)
		close(ef->fd);
	ef->fd = -1;
}

void log_ef_keep_fd(log_entfile *ef, bool keep)
{
	ef->keep_fd = keep;
	if (!keep)
		log_ef_close_fd(ef);
}

void log_ef_unload(log_entfile *ef)
{
	if (!ef->loaded || ef->n != ef->nfile)
		return;
	free(ef->mem);
	ef->mem = NULL;
	ef->cap = 0;
	ef->loaded = false;
}

int log_ef_truncate(log_entfile *ef, size_t n)
{
	if (n >= ef->n)
		return 0;
	int rc = log_ef_load(ef);
	if (rc < 0)
		return rc;
	if (n >= ef->n)
		return 0;
	ef->n = n;
	if (n > 0)
		memcpy(ef->last, log_ef_at(ef, n - 1), ef->esz);
	if (ef->nfile > n) {
		if (ef->fd >= 0 ? ftruncate(ef->fd, (off_t)(n * ef->esz)) < 0
				: truncate(ef->path, (off_t)(n * ef->esz)) < 0)
			return -errno;
		ef->nfile = n;
		ef->dirty = true;
	}
	return 0;
}

int log_ef_fsync(log_entfile *ef)
{
	if (ef->fd < 0)
		return log_io_fsync_file(ef->path);
	if (fsync(ef->fd) < 0)
		return -errno;
	return 0;
}

void log_ef_destroy(log_entfile *ef)
{
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef->mem);
	free(ef->path);
	memset(ef, 0, sizeof *ef);
	ef->fd = -1;
}

/* ---- offset index ---- */

int log_index_add(log_entfile *ix, int32_t rel, int32_t pos)
{
	uint8_t e[LOG_INDEX_ENTRY_SIZE];
	log_put_be32(e, (uint32_t)rel);
	log_put_be32(e + 4, (uint32_t)pos);
	return log_ef_push(ix, e);
}

static inline int32_t ix_rel(const log_entfile *ix, size_t i) { return (int32_t)log_be32(log_ef_at(ix, i)); }
static inline int32_t ix_pos(const log_entfile *ix, size_t i) { return (int32_t)log_be32(log_ef_at(ix, i) + 4); }

int32_t log_index_lookup(const log_entfile *ix, int64_t rel, int32_t *entry_rel)
{
	/* first entry with offset > rel */
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((int64_t)ix_rel(ix, mid) <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		if (entry_rel)
			*entry_rel = -1;
		return 0;
	}
	if (entry_rel)
		*entry_rel = ix_rel(ix, lo - 1);
	return ix_pos(ix, lo - 1);
}

int32_t log_index_floor_pos(const log_entfile *ix, int64_t pos)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((int64_t)ix_pos(ix, mid) <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? 0 : ix_pos(ix, lo - 1);
}

int log_index_check(const log_entfile *ix, int64_t log_size)
{
	int64_t prev_rel = -1, prev_pos = -1;
	for (size_t i = 0; i < ix->n; i++) {
		int64_t rel = ix_rel(ix, i), pos = ix_pos(ix, i);
		if (rel <= prev_rel || pos <= prev_pos || pos >= log_size)
			return LOG_ERR_CORRUPT;
		prev_rel = rel;
		prev_pos = pos;
	}
	return 0;
}

bool log_index_full(const log_entfile *ix, int32_t max_index_bytes)
{
	int64_t max = max_index_bytes / LOG_INDEX_ENTRY_SIZE;
	return (int64_t)ix->n >= (max > 0 ? max : 1);
}
