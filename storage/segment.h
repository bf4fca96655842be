/*
 * segment.h - one segment of a partition log: the .log file of record
 * batches (exactly as on the wire, offsets assigned) and its two indexes.
 *
 * Files are named after the segment's base offset, 20 digits zero-padded
 * (Kafka's LogFileUtils): 00000000000000001234.{log,index,timeindex}.
 *
 * Invariants (for the bytes [0, size) of the .log):
 *   - whole v2 batches back to back; base offsets strictly increasing and
 *     >= base_offset; last offset - base_offset <= INT32_MAX;
 *   - next_offset = last offset of the last batch + 1 (base_offset if empty);
 *   - every offset index / time index entry refers to a batch in [0, size).
 *
 * Reference counting: the partition holds one reference while the segment is
 * part of the log; a fetch result holds another while bytes are sent from
 * fd. The fd and memory go with the last reference (atomic, so a cleaner
 * thread may hold references too).
 *
 * Descriptors: the .log is opened when first needed (log_seg_fd), not when
 * the segment is opened; code on the log's thread reaches it only through
 * log_seg_fd, and holds the number no longer than its call, or keeps a
 * reference while it does. Other threads never read fd: they open the
 * file for themselves (log_seg_open_fd). The file is known by its device
 * and inode: a path that names another file by then (the segment's files
 * were renamed away or replaced) is -ESTALE, never read as this segment.
 *
 * A segment of a log with an open-file cache (filecache.h) is attached to
 * it while it is part of the log: while it holds a descriptor (its .log,
 * the active segment's index files) it is an entry of the cache, touched
 * by each log_seg_fd, and the cache may close its descriptors when it is
 * the least recently used and no send has it pinned (log_segment_pin:
 * a fetch response pins a segment from the first byte sendfile sends of it
 * to the last, not while it waits in the connection's queue; references
 * keep the memory only). A closed segment that is not the active one also
 * gives back the memory of its indexes (log_ef_unload); log_seg_ready
 * reads them again. The log takes its reference back with log_seg_drop,
 * which detaches the segment first, so the last release (any thread) never
 * touches the cache.
 */
#ifndef SAMSA_STORAGE_SEGMENT_H
#define SAMSA_STORAGE_SEGMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/batch.h"
#include "storage/err.h"
#include "storage/filecache.h"
#include "storage/index.h"

typedef struct log_segment log_segment; /* storage/log.h */

struct log_segment {
	atomic_int refs;
	int pins;                   /* sends holding fd open (log_segment_pin); the
				     * log's thread only */
	int fd;                     /* .log, O_RDWR; -1 until log_seg_fd opens it */
	char *log_path;             /* owned */
	dev_t dev;                  /* the .log's identity (stat), set at create/open */
	ino_t ino;
	int64_t base_offset;
	int64_t size;               /* valid bytes in .log */
	int64_t next_offset;        /* see invariants */
	int64_t created_ms;         /* when opened or created (segment.ms fallback) */
	int64_t rolling_ts;         /* max timestamp of the first batch, -1 when none */
	int64_t max_ts;             /* largest batch max timestamp, -1 when none */
	int64_t max_ts_offset;      /* last offset of the batch holding max_ts */
	int64_t bytes_since_index;  /* bytes appended since the last index entry */
	bool dirty;                 /* written since the last fsync */
	int64_t allocated;          /* .log bytes with disk blocks reserved ahead of size
				     * (log_seg_preallocate); <= size when none */
	bool no_prealloc;           /* the file system cannot (EOPNOTSUPP) */
	log_entfile oidx;           /* .index */
	log_entfile tidx;           /* .timeindex */
	log_file_cache *files;      /* the cache it is attached to, NULL for none */
	log_fcache_entry lru;       /* its entry there while it holds descriptors */
};

/* Name of a segment file: dir/<20-digit base><suffix>. */
int log_seg_path(char *out, size_t cap, const char *dir, int64_t base, const char *suffix);

/* Create an empty segment (the three files, truncated), active, its .log
 * open. refs = 1. */
int log_seg_create(const char *dir, int64_t base, int64_t now_ms, log_segment **out);
/* An existing .log: its size and identity from stat(2), no descriptor
 * opened (indexes not read yet; see log_ef_stat/load). */
int log_seg_open(const char *dir, int64_t base, int64_t now_ms, log_segment **out);
/* The .log's descriptor (O_RDWR), opened now when it is not: >= 0, or
 * -errno (-ESTALE: the path names another file now). The log's thread. */
int log_seg_fd(log_segment *s);
/* A descriptor of the .log of its own (flags O_RDONLY or O_RDWR), which
 * the caller closes: for another thread, or a read that should not keep
 * the file open. When the path does not name the file (any more), its
 * name *.deleted is tried (a segment that left the log). -errno as
 * log_seg_fd; -ENOENT when the file is gone. */
int log_seg_open_fd(const log_segment *s, int flags);
/* n bytes at pos of the .log (as log_io_pread), through fd when open,
 * else through a descriptor opened for the read (a cold read does not
 * displace the segments in use). The log's thread. */
int log_seg_pread(log_segment *s, void *buf, size_t n, int64_t pos);

/* Attach s to the cache fc (the log's; NULL: none) and count what it
 * holds already. */
void log_seg_attach(log_segment *s, log_file_cache *fc);
/* Take s out of its cache (its descriptors stay open for their holders,
 * no longer counted). */
void log_seg_detach(log_segment *s);
/* The log's log_segment_release: detach, then release (when others hold
 * references, the .log is opened first if closed, and stays open to the
 * last release). */
void log_seg_drop(log_segment *s);
/* Count again what s holds (after index files were opened or closed);
 * log_seg_fd and the segment functions below do it themselves. */
void log_seg_account(log_segment *s);
/* Remove the segment's three files (the fd stays valid for its holders). */
void log_seg_unlink(log_segment *s);
/* The active segment's indexes keep their descriptors between writes (an
 * entry every index.interval.bytes); any other segment's indexes hold none
 * (log_ef_keep_fd; false closes them now). log_seg_create makes a segment
 * active; the log marks the one it appends to (partition.h). */
void log_seg_set_active(log_segment *s, bool active);
/* Close the index files' descriptors now (the next write opens them). */
void log_seg_close_index_fds(log_segment *s);

/* Load both indexes into memory if not yet (with log_size_check, checked
 * against that .log size: LOG_ERR_CORRUPT). The caller rebuilds them when
 * the error says they are damaged (LOG_ERR_CORRUPT, -ENOENT, -EIO); -EMFILE,
 * -ENFILE (after the cache made room once) and -ENOMEM say nothing of the
 * files. */
int log_seg_load_indexes(log_segment *s, int64_t *log_size_check);

/* Account one batch of the segment (at pos, already in the file or about to
 * be) in the in-memory indexes following Kafka's LogSegment.append: max
 * timestamp, then an index entry when more than interval bytes were appended
 * since the last one. Call log_seg_sync_indexes to write them. */
int log_seg_index_batch(log_segment *s, const proto_batch_info *h, int64_t pos, int32_t interval);
int log_seg_sync_indexes(log_segment *s);
/*
 * Reserve disk blocks of the .log ahead of its end, so the appends up to
 * there find their blocks allocated instead of each reserving them (on
 * ext4 the delayed-allocation work per page was ~10% of the broker's CPU
 * with 10 KiB records). fallocate(2) with FALLOC_FL_KEEP_SIZE: the file
 * size, and so the on-disk format, does not change. Called before writing
 * up to `end` (bytes); when end passes what is reserved, reserves up to
 * end + min(size, 16 MiB), never past limit (segment.bytes): only a
 * segment already holding 1 MiB gets any, so an idle partition reserves
 * nothing and a busy one at most 16 MiB. A failure (ENOSPC included)
 * reserves nothing and is not an error: the write reports it. Kafka's
 * file.preallocate reserves the whole segment at creation instead.
 */
void log_seg_preallocate(log_segment *s, int64_t end, int64_t limit);
/* Give back the blocks reserved past the end (ftruncate to size), when the
 * segment stops being the active one or is closed. Errors are logged. */
void log_seg_trim_preallocated(log_segment *s);

/* Add the closing time index entry (max timestamp) and write it; used on roll
 * and close (Kafka's onBecomeInactiveSegment / close). */
int log_seg_seal_timeindex(log_segment *s);

/* Shorten the .log to size bytes (no index change). */
int log_seg_truncate_file(log_segment *s, int64_t size);

/*
 * Parse a batch header from 61 bytes without needing the whole batch. Fills
 * the proto_batch_info fields; checks batchLength >= 49 and magic 2.
 * Returns 0, -ENOTSUP for magic 0/1 (Kafka's legacy message sets, which
 * Samsa does not read and must not truncate), or LOG_ERR_CORRUPT.
 */
int log_batch_parse_header(const uint8_t *p, proto_batch_info *h);
/* True when the avail bytes at p start a legacy (magic 0/1) message. */
bool log_batch_is_legacy(const uint8_t *p, size_t avail);
static inline int64_t log_batch_last_offset(const proto_batch_info *h)
{
	return h->base_offset + h->last_offset_delta;
}

/* Forward scanner of batch headers with a small read window (fewer preads). */
typedef struct log_scan {
	int fd;
	int64_t end;     /* bytes of the file considered */
	int64_t win_pos; /* file position of win[0] */
	int32_t win_len;
	uint8_t win[4096];
} log_scan;

/* Opens the .log when needed (log_seg_fd; its error is returned by the
 * first log_scan_header). The scanner holds the fd number: no other
 * segment may be opened while it is used (storage/filecache.h). */
void log_scan_init(log_scan *sc, log_segment *s, int64_t end);
/* Header of the batch at pos: 0, 1 when pos >= end, LOG_ERR_CORRUPT for a bad
 * or torn header (or a batch running past end), -ENOTSUP for a legacy
 * message set, or -errno. */
int log_scan_header(log_scan *sc, int64_t pos, proto_batch_info *h);

#endif
