/*
 * failsync.c - an LD_PRELOAD shim for compat-tests/fsync_failure.c, never
 * part of the broker: fsync(2) and fdatasync(2) of a segment file (a path
 * ending in ".log") fail with EIO while the file named by
 * $SAMSA_FAILSYNC_TRIGGER exists, as a disk that lost a write reports it.
 * Every injected failure is written to stderr (the broker's log), so the
 * test knows it happened. Built without the sanitizers, so it can be
 * preloaded into any build of the broker.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

/* Whether a sync of fd is to fail now. */
static int inject(int fd)
{
	const char *trigger = getenv("SAMSA_FAILSYNC_TRIGGER");
	if (!trigger || access(trigger, F_OK) != 0)
		return 0;
	char link[64], path[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n < 4)
		return 0;
	path[n] = '\0';
	if (strcmp(path + n - 4, ".log") != 0)
		return 0;
	fprintf(stderr, "failsync: sync of %s fails with EIO (injected)\n", path);
	return 1;
}

static int call(const char *name, int fd)
{
	sync_fn real;
	*(void **)&real = dlsym(RTLD_NEXT, name);
	if (inject(fd)) {
		errno = EIO;
		return -1;
	}
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(fd);
}

int fsync(int fd)
{
	return call("fsync", fd);
}

int fdatasync(int fd)
{
	return call("fdatasync", fd);
}
