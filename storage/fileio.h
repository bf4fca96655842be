/*
 * fileio.h - small file helpers shared by the storage modules: whole-buffer
 * pread/pwrite loops, big-endian field access, directory fsync and atomic
 * small-file replacement (write a .tmp, optionally fsync, rename).
 * Internal to storage/ (except log_io_remove_dir, which the broker also uses
 * for leftover partition directories, and log_io_full); every function returns 0 or -errno.
 */
#ifndef SAMSA_STORAGE_FILEIO_H
#define SAMSA_STORAGE_FILEIO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read exactly n bytes at pos (bytes). -EIO when the file ends first. */
int log_io_pread(int fd, void *buf, size_t n, int64_t pos);
/* Write exactly n bytes at pos (bytes); -ENOSPC/-EIO on a short write. */
int log_io_pwrite(int fd, const void *buf, size_t n, int64_t pos);
/* Whether rc (a negative errno) says the disk is full: -ENOSPC, -EDQUOT, or
 * -EFBIG (past RLIMIT_FSIZE), which the storage treats alike. */
static inline bool log_io_full(int rc) { return rc == -ENOSPC || rc == -EDQUOT || rc == -EFBIG; }
/* fsync the directory itself (after a create, rename or unlink in it). */
int log_io_fsync_dir(const char *dir);
/* fsync the file at path through a descriptor of its own, closed again:
 * Linux's fsync writes back every dirty page of the file, whichever
 * descriptor wrote it (one closed since too), and reports a write-back
 * error no descriptor has seen yet. A missing file is 0 (it left the log
 * meanwhile). Any thread. */
int log_io_fsync_file(const char *path);
/* Replace dir/name with len bytes: write dir/name.tmp, fsync it when sync is
 * true, rename over dir/name, and fsync dir when sync is true. */
int log_io_write_atomic(const char *dir, const char *name, const void *data, size_t len, bool sync);
/* The same with the file's permission bits mode (log_io_write_atomic: 0644;
 * 0600 for a file holding secrets), whatever the umask allows of them. */
int log_io_write_atomic_mode(const char *dir, const char *name, const void *data, size_t len,
			     bool sync, mode_t mode);
/* Read a whole small file (at most max bytes, else -EFBIG) into a malloc'ed,
 * NUL-terminated buffer the caller frees. -ENOENT when absent. */
int log_io_read_small(const char *path, size_t max, char **out, size_t *len);
/* Remove a flat directory: unlink every entry in it (no recursion: a
 * partition directory holds only files), then rmdir it. Keeps going after a
 * failed unlink and returns the first error; -ENOENT when dir is missing
 * (callers that want "gone" semantics treat that as success). */
int log_io_remove_dir(const char *dir);
/* snprintf into a PATH_MAX buffer; -ENAMETOOLONG when it does not fit. */
int log_io_path(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline uint32_t log_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t log_be64(const uint8_t *p)
{
	return (uint64_t)log_be32(p) << 32 | log_be32(p + 4);
}
static inline void log_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void log_put_be64(uint8_t *p, uint64_t v)
{
	log_put_be32(p, (uint32_t)(v >> 32));
	log_put_be32(p + 4, (uint32_t)v);
}

#endif
