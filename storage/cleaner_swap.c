/*
 * cleaner_swap.c - finishing or rolling back a cleaner's swap after a crash
 * (log_clean_recover_swaps, cleaner.h; Kafka's LogLoader
 * removeTempFilesAndCollectSwapFiles and the swap completion of
 * LogLoader.load). Apart from cleaner.c so that log_open needs no MD5.
 *
 * The order the cleaner writes in, and what a crash at each point leaves:
 *   1. <b>.{index,timeindex,txnindex,log}.cleaned written and fsynced
 *      -> .cleaned files: removed here (old segments untouched);
 *   2. renamed to .swap, indexes first, .log last, then the dir fsynced
 *      -> index .swap files without <b>.log.swap: removed here;
 *   3. (the loop) every file of the old segments renamed *.deleted, then
 *      the index .swap files and last <b>.log.swap to their final names
 *      -> <b>.log.swap present: every .swap of <b> is complete, so the
 *      swap is finished here: the old segments with a base offset in
 *      (b, last offset of the .swap] are removed, the index .swap files
 *      renamed over their final names (one already renamed stays), then
 *      the .log.swap. A .txnindex without .swap stays: the cleaned segment
 *      had no aborted transaction, and neither had the old one of that
 *      name (every marker is kept), so it holds no entry that matters.
 *   *.deleted files are removed with the other leftovers by recovery.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/cleaner.h"
#include "storage/fileio.h"
#include "storage/segment.h"
#include "storage/txnindex.h"

/* name is <20 digits><suffix>: *base gets the number. */
static bool base_of(const char *name, const char *suffix, int64_t *base)
{
	size_t n = strlen(name), sl = strlen(suffix);
	if (n != 20 + sl || strcmp(name + 20, suffix) != 0)
		return false;
	int64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (name[i] - '0');
	}
	*base = v;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), sl = strlen(suffix);
	return n >= sl && strcmp(s + n - sl, suffix) == 0;
}

/* The offset after the last batch of the .log at path (base when empty or
 * unreadable from the start: only whole batches count). */
static int64_t swap_next_offset(const char *path, int64_t base)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return base;
	int64_t next = base, pos = 0;
	for (;;) {
		uint8_t hdr[PROTO_BATCH_HEADER_SIZE];
		proto_batch_info h;
		if (fseeko(f, (off_t)pos, SEEK_SET) != 0 || fread(hdr, 1, sizeof hdr, f) != sizeof hdr ||
		    log_batch_parse_header(hdr, &h) < 0)
			break;
		next = log_batch_last_offset(&h) + 1;
		pos += h.size;
	}
	fclose(f);
	return next;
}

static void remove_segment_files(const char *dir, int64_t base)
{
	static const char *const suffixes[] = { ".log", ".index", ".timeindex", LOG_TXNINDEX_SUFFIX };
	for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
		char p[PATH_MAX];
		if (log_seg_path(p, sizeof p, dir, base, suffixes[k]) == 0 && unlink(p) == 0)
			fprintf(stderr, "samsa storage: %s: removed, replaced by a cleaned segment\n", p);
	}
}

int log_clean_recover_swaps(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int64_t *swaps = NULL, *logs = NULL;
	size_t nswap = 0, nlog = 0, capswap = 0, caplog = 0;
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		int64_t base;
		int64_t **v = NULL;
		size_t *n = NULL, *cap = NULL;
		if (base_of(de->d_name, ".log.swap", &base)) {
			v = &swaps, n = &nswap, cap = &capswap;
		} else if (base_of(de->d_name, ".log", &base)) {
			v = &logs, n = &nlog, cap = &caplog;
		} else {
			if (ends_with(de->d_name, ".cleaned")) {
				fprintf(stderr, "samsa storage: %s: removing %s of an interrupted cleaning\n", dir,
					de->d_name);
				unlinkat(dirfd(d), de->d_name, 0);
			}
			continue;
		}
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			int64_t *nv = realloc(*v, nc * sizeof *nv);
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			*v = nv;
			*cap = nc;
		}
		(*v)[(*n)++] = base;
	}
	/* index .swap files whose .log.swap is missing: a round rolled back */
	if (rc == 0) {
		rewinddir(d);
		while ((de = readdir(d))) {
			int64_t base;
			if (!(base_of(de->d_name, ".index.swap", &base) || base_of(de->d_name, ".timeindex.swap", &base) ||
			      base_of(de->d_name, LOG_TXNINDEX_SUFFIX ".swap", &base)))
				continue;
			bool have = false;
			for (size_t i = 0; i < nswap && !have; i++)
				have = swaps[i] == base;
			if (!have) {
				fprintf(stderr, "samsa storage: %s: removing %s of an interrupted cleaning\n", dir,
					de->d_name);
				unlinkat(dirfd(d), de->d_name, 0);
			}
		}
	}
	closedir(d);
	for (size_t s = 0; rc == 0 && s < nswap; s++) {
		int64_t base = swaps[s];
		char from[PATH_MAX], to[PATH_MAX];
		rc = log_seg_path(from, sizeof from, dir, base, ".log.swap");
		if (rc < 0)
			break;
		int64_t next = swap_next_offset(from, base);
		fprintf(stderr,
			"samsa storage: %s: finishing the swap of cleaned segment %" PRId64 " (offsets up to %" PRId64
			")\n",
			dir, base, next - 1);
		for (size_t i = 0; i < nlog; i++)
			if (logs[i] > base && logs[i] < next)
				remove_segment_files(dir, logs[i]);
		static const char *const idx[] = { ".index", ".timeindex", LOG_TXNINDEX_SUFFIX };
		for (size_t k = 0; rc == 0 && k < 3; k++) {
			char sfx[32];
			snprintf(sfx, sizeof sfx, "%s.swap", idx[k]);
			rc = log_seg_path(from, sizeof from, dir, base, sfx);
			if (rc == 0)
				rc = log_seg_path(to, sizeof to, dir, base, idx[k]);
			if (rc == 0 && rename(from, to) < 0 && errno != ENOENT)
				rc = -errno;
		}
		if (rc == 0)
			rc = log_seg_path(from, sizeof from, dir, base, ".log.swap");
		if (rc == 0)
			rc = log_seg_path(to, sizeof to, dir, base, ".log");
		if (rc == 0 && rename(from, to) < 0)
			rc = -errno;
	}
	if (rc == 0 && nswap > 0)
		rc = log_io_fsync_dir(dir);
	free(swaps);
	free(logs);
	return rc;
}
