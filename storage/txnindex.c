/*
 * txnindex.c - the .txnindex file of a segment (see txnindex.h).
 */
#include "storage/txnindex.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"

#define TXNINDEX_VERSION 0
#define TXNINDEX_MAX_BYTES (1 << 30) /* refuse absurd files before allocating */

int log_txnindex_init(log_txnindex *ti, const char *dir, int64_t base)
{
	memset(ti, 0, sizeof *ti);
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/%020" PRId64 "%s", dir, base, LOG_TXNINDEX_SUFFIX);
	if (rc < 0)
		return rc;
	ti->path = strdup(path);
	return ti->path ? 0 : -ENOMEM;
}

void log_txnindex_destroy(log_txnindex *ti)
{
	free(ti->v);
	free(ti->path);
	memset(ti, 0, sizeof *ti);
}

static int reserve(log_txnindex *ti, size_t n)
{
	if (n <= ti->cap)
		return 0;
	size_t cap = ti->cap ? ti->cap : 8;
	while (cap < n)
		cap *= 2;
	log_aborted_txn *v = realloc(ti->v, cap * sizeof *v);
	if (!v)
		return -ENOMEM;
	ti->v = v;
	ti->cap = cap;
	return 0;
}

static void encode(uint8_t *p, const log_aborted_txn *a)
{
	p[0] = 0;
	p[1] = TXNINDEX_VERSION;
	log_put_be64(p + 2, (uint64_t)a->producer_id);
	log_put_be64(p + 10, (uint64_t)a->first_offset);
	log_put_be64(p + 18, (uint64_t)a->last_offset);
	log_put_be64(p + 26, (uint64_t)a->last_stable_offset);
}

static int cut_file(log_txnindex *ti, size_t n)
{
	if (truncate(ti->path, (off_t)(n * LOG_TXNINDEX_ENTRY_SIZE)) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int log_txnindex_load(log_txnindex *ti)
{
	if (ti->loaded)
		return 0;
	int fd = open(ti->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		ti->n = ti->nfile = 0;
		ti->loaded = true;
		return 0;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	int64_t size = st.st_size > TXNINDEX_MAX_BYTES ? TXNINDEX_MAX_BYTES : st.st_size;
	size_t n = (size_t)size / LOG_TXNINDEX_ENTRY_SIZE;
	uint8_t *buf = n ? malloc(n * LOG_TXNINDEX_ENTRY_SIZE) : NULL;
	int rc = n && !buf ? -ENOMEM : 0;
	if (rc == 0)
		rc = reserve(ti, n);
	if (rc == 0 && n)
		rc = log_io_pread(fd, buf, n * LOG_TXNINDEX_ENTRY_SIZE, 0);
	if (rc < 0) {
		free(buf);
		close(fd);
		return rc;
	}
	size_t good = 0;
	for (; good < n; good++) {
		const uint8_t *p = buf + good * LOG_TXNINDEX_ENTRY_SIZE;
		log_aborted_txn a = {
			.producer_id = (int64_t)log_be64(p + 2),
			.first_offset = (int64_t)log_be64(p + 10),
			.last_offset = (int64_t)log_be64(p + 18),
			.last_stable_offset = (int64_t)log_be64(p + 26),
		};
		if (p[0] != 0 || p[1] != TXNINDEX_VERSION || a.producer_id < 0 || a.first_offset < 0 ||
		    a.last_offset < a.first_offset || (good > 0 && a.last_offset <= ti->v[good - 1].last_offset))
			break;
		ti->v[good] = a;
	}
	free(buf);
	close(fd);
	if ((int64_t)good * LOG_TXNINDEX_ENTRY_SIZE != st.st_size) {
		fprintf(stderr, "samsa storage: %s: bad entry or torn tail, keeping the first %zu entries\n",
			ti->path, good);
		rc = cut_file(ti, good);
		if (rc < 0)
			return rc;
	}
	ti->n = ti->nfile = good;
	ti->loaded = true;
	return 0;
}

int log_txnindex_reserve(log_txnindex *ti)
{
	int rc = log_txnindex_load(ti);
	return rc < 0 ? rc : reserve(ti, ti->n + 1);
}

int log_txnindex_sync(log_txnindex *ti)
{
	if (!ti->loaded || ti->nfile >= ti->n)
		return 0;
	size_t cnt = ti->n - ti->nfile;
	uint8_t stackbuf[8 * LOG_TXNINDEX_ENTRY_SIZE];
	uint8_t *buf = cnt <= 8 ? stackbuf : malloc(cnt * LOG_TXNINDEX_ENTRY_SIZE);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++)
		encode(buf + i * LOG_TXNINDEX_ENTRY_SIZE, &ti->v[ti->nfile + i]);
	int rc = 0;
	int fd = open(ti->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		rc = -errno;
	if (rc == 0)
		rc = log_io_pwrite(fd, buf, cnt * LOG_TXNINDEX_ENTRY_SIZE,
				   (int64_t)(ti->nfile * LOG_TXNINDEX_ENTRY_SIZE));
	if (fd >= 0)
		close(fd);
	if (buf != stackbuf)
		free(buf);
	if (rc < 0)
		return rc;
	ti->nfile = ti->n;
	ti->dirty = true;
	return 0;
}

int log_txnindex_append(log_txnindex *ti, const log_aborted_txn *a)
{
	int rc = log_txnindex_reserve(ti);
	if (rc < 0)
		return rc;
	if (a->producer_id < 0 || a->first_offset < 0 || a->last_offset < a->first_offset ||
	    (ti->n > 0 && a->last_offset <= ti->v[ti->n - 1].last_offset))
		return -EINVAL;
	ti->v[ti->n++] = *a;
	return log_txnindex_sync(ti);
}

int64_t log_txnindex_last_offset(log_txnindex *ti)
{
	if (log_txnindex_load(ti) < 0 || ti->n == 0)
		return -1;
	return ti->v[ti->n - 1].last_offset;
}

int log_txnindex_truncate(log_txnindex *ti, int64_t offset)
{
	int rc = log_txnindex_load(ti);
	if (rc < 0)
		return rc;
	size_t n = ti->n;
	while (n > 0 && ti->v[n - 1].last_offset >= offset)
		n--;
	if (n == ti->n)
		return 0;
	ti->n = n;
	if (ti->nfile > n) {
		rc = cut_file(ti, n);
		if (rc < 0)
			return rc;
		ti->nfile = n;
		ti->dirty = true;
	}
	return 0;
}

int log_txnindex_remove(log_txnindex *ti)
{
	ti->n = ti->nfile = 0;
	ti->loaded = true;
	ti->dirty = false;
	if (unlink(ti->path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int log_txnindex_collect(log_txnindex *ti, int64_t fetch_offset, int64_t upper_bound_offset,
			 log_aborted_txn_fn fn, void *arg, bool *complete)
{
	*complete = false;
	int rc = log_txnindex_load(ti);
	if (rc < 0)
		return rc;
	int calls = 0;
	for (size_t i = 0; i < ti->n; i++) {
		const log_aborted_txn *a = &ti->v[i];
		if (a->last_offset >= fetch_offset && a->first_offset < upper_bound_offset) {
			rc = fn(arg, a);
			if (rc < 0)
				return rc;
			calls++;
		}
		if (a->last_stable_offset >= upper_bound_offset) {
			*complete = true;
			break;
		}
	}
	return calls;
}
