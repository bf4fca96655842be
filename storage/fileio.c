/*
 * fileio.c - whole-buffer pread/pwrite, directory fsync, atomic small-file
 * replacement (see fileio.h).
 */
#include "storage/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int log_io_pread(int fd, void *buf, size_t n, int64_t pos)
{
	uint8_t *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)pos);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
		pos += r;
	}
	return 0;
}

int log_io_pwrite(int fd, const void *buf, size_t n, int64_t pos)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t r = pwrite(fd, p, n, (off_t)pos);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ENOSPC;
		p += r;
		n -= (size_t)r;
		pos += r;
	}
	return 0;
}

int log_io_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int log_io_fsync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int log_io_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* gone meanwhile (a deleted segment file unlinked by the
		 * broker's worker thread) is fine */
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT && rc == 0)
			rc = -errno;
	}
	closedir(d);
	if (rmdir(dir) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int log_io_path(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	return 0;
}

int log_io_write_atomic(const char *dir, const char *name, const void *data, size_t len, bool sync)
{
	return log_io_write_atomic_mode(dir, name, data, len, sync, 0644);
}

int log_io_write_atomic_mode(const char *dir, const char *name, const void *data, size_t len,
			     bool sync, mode_t mode)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int rc = log_io_path(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
	if (rc == 0)
		rc = log_io_path(dst, sizeof dst, "%s/%s", dir, name);
	if (rc < 0)
		return rc;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	/* a .tmp left by a crash keeps its old mode through O_CREAT */
	rc = fchmod(fd, mode) < 0 ? -errno : 0;
	if (rc == 0)
		rc = log_io_pwrite(fd, data, len, 0);
	if (rc == 0 && sync && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, dst) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	return sync ? log_io_fsync_dir(dir) : 0;
}

int log_io_read_small(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	int rc = log_io_pread(fd, buf, n, 0);
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
