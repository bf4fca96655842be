/*
 * leader_epoch.c - leader epoch cache and its checkpoint file (see
 * leader_epoch.h).
 */
#include "storage/leader_epoch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/partition.h"

static int push(log_epoch_cache *c, int32_t epoch, int64_t start)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		log_epoch_entry *e = realloc(c->e, cap * sizeof *e);
		if (!e)
			return -ENOMEM;
		c->e = e;
		c->cap = cap;
	}
	c->e[c->n].epoch = epoch;
	c->e[c->n].start_offset = start;
	c->n++;
	return 0;
}

static int write_file(log_epoch_cache *c)
{
	size_t cap = 32 + c->n * 48;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	size_t len = (size_t)snprintf(buf, cap, "0\n%zu\n", c->n);
	for (size_t i = 0; i < c->n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%" PRId32 " %" PRId64 "\n", c->e[i].epoch,
					c->e[i].start_offset);
	int rc = log_io_write_atomic(c->dir, LOG_EPOCH_FILE, buf, len, false);
	free(buf);
	if (rc == 0)
		c->unsynced = true;
	c->unwritten = rc < 0;
	return rc;
}

int log_epoch_write_pending(log_epoch_cache *c)
{
	return c->unwritten ? write_file(c) : 0;
}

int log_epoch_load(log_epoch_cache *c, const char *dir)
{
	memset(c, 0, sizeof *c);
	c->dir = strdup(dir);
	if (!c->dir)
		return -ENOMEM;
	char path[PATH_MAX], *text;
	size_t len;
	int rc = log_io_path(path, sizeof path, "%s/%s", dir, LOG_EPOCH_FILE);
	if (rc == 0)
		rc = log_io_read_small(path, 64 << 20, &text, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	const char *p = text;
	char *end;
	rc = LOG_ERR_CORRUPT;
	long version = strtol(p, &end, 10);
	if (end == p || *end != '\n' || version != 0)
		goto out;
	p = end + 1;
	long long n = strtoll(p, &end, 10);
	if (end == p || *end != '\n' || n < 0 || (size_t)n > len / 4)
		goto out;
	p = end + 1;
	for (long long i = 0; i < n; i++) {
		long long epoch = strtoll(p, &end, 10);
		if (end == p || *end != ' ' || epoch < 0 || epoch > INT32_MAX)
			goto out;
		p = end + 1;
		long long start = strtoll(p, &end, 10);
		if (end == p || *end != '\n' || start < 0)
			goto out;
		p = end + 1;
		if (c->n > 0 && (epoch <= c->e[c->n - 1].epoch || start < c->e[c->n - 1].start_offset))
			goto out;
		if (push(c, (int32_t)epoch, start) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = *p == '\0' ? 0 : LOG_ERR_CORRUPT;
out:
	free(text);
	if (rc < 0)
		c->n = 0;
	return rc;
}

void log_epoch_free(log_epoch_cache *c)
{
	free(c->e);
	free(c->dir);
	memset(c, 0, sizeof *c);
}

int32_t log_epoch_latest(const log_epoch_cache *c)
{
	return c->n ? c->e[c->n - 1].epoch : -1;
}

int32_t log_epoch_for_offset(const log_epoch_cache *c, int64_t offset)
{
	size_t lo = 0, hi = c->n; /* first entry starting after offset */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->e[mid].start_offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? c->e[lo - 1].epoch : -1;
}

int32_t log_leader_epoch_for_offset(const log_partition *lp, int64_t offset)
{
	return log_epoch_for_offset(&lp->epochs, offset);
}

int log_epoch_assign(log_epoch_cache *c, int32_t epoch, int64_t start_offset)
{
	if (epoch < 0 || (c->n > 0 && epoch <= c->e[c->n - 1].epoch))
		return 0;
	while (c->n > 0 && c->e[c->n - 1].start_offset >= start_offset)
		c->n--;
	int rc = push(c, epoch, start_offset);
	return rc < 0 ? rc : write_file(c);
}

int log_epoch_truncate_from_end(log_epoch_cache *c, int64_t end_offset)
{
	size_t n = c->n;
	while (c->n > 0 && c->e[c->n - 1].start_offset >= end_offset)
		c->n--;
	return c->n != n ? write_file(c) : 0;
}

int log_epoch_truncate_from_start(log_epoch_cache *c, int64_t start_offset)
{
	size_t k = 0; /* entries starting at or below start_offset */
	while (k < c->n && c->e[k].start_offset <= start_offset)
		k++;
	if (k == 0 || (k == 1 && c->e[0].start_offset == start_offset))
		return 0;
	c->e[k - 1].start_offset = start_offset;
	memmove(c->e, c->e + (k - 1), (c->n - (k - 1)) * sizeof *c->e);
	c->n -= k - 1;
	return write_file(c);
}

void log_epoch_end_offset_for(const log_epoch_cache *c, int32_t epoch, int64_t log_end_offset,
			      int32_t *out_epoch, int64_t *out_end_offset)
{
	*out_epoch = -1;
	*out_end_offset = -1;
	if (epoch < 0 || c->n == 0)
		return;
	if (epoch == c->e[c->n - 1].epoch) {
		*out_epoch = epoch;
		*out_end_offset = log_end_offset;
		return;
	}
	size_t hi = 0; /* first entry with a higher epoch */
	while (hi < c->n && c->e[hi].epoch <= epoch)
		hi++;
	if (hi == c->n)
		return;
	*out_epoch = hi == 0 ? epoch : c->e[hi - 1].epoch;
	*out_end_offset = c->e[hi].start_offset;
}

int log_epoch_sync(log_epoch_cache *c)
{
	if (!c->unsynced)
		return 0;
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/%s", c->dir, LOG_EPOCH_FILE);
	if (rc < 0)
		return rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	if (rc == 0)
		rc = log_io_fsync_dir(c->dir);
	if (rc == 0)
		c->unsynced = false;
	return rc;
}
