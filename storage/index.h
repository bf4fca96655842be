/*
 * index.h - a segment's index files and the offset index (.index).
 *
 * log_entfile is a file of fixed-size big-endian entries (8 bytes for the
 * offset index, 12 for the time index) mirrored in memory once loaded. Files
 * are never preallocated: the file holds exactly the entries written, so a
 * clean or unclean stop leaves nothing to trim (Kafka trims its preallocated
 * files on close; both read the same).
 *
 * Descriptors: only an entfile with keep_fd (the active segment's indexes,
 * which take an entry every index.interval.bytes) holds its fd between
 * writes, from its first write on. Any other is read whole into memory by log_ef_load and written
 * by log_ef_sync through a descriptor opened for the call and closed again,
 * so the indexes of the closed segments of a log hold none (Kafka maps
 * them instead; the bytes in memory are the same). log_ef_unload gives the
 * memory back; the next log_ef_load reads the file again.
 *
 * Offset index entry (Kafka's OffsetIndex, 8 bytes, big endian):
 *   off size
 *     0   4  relative offset = (last offset of the batch) - segment base offset
 *     4   4  position of that batch in the .log (bytes)
 * Entries are sparse (one each index.interval.bytes) and strictly increasing
 * in both fields. Lookup: the last entry whose offset is <= the target gives
 * a position from which a forward scan of batch headers finds the target.
 */
#ifndef SAMSA_STORAGE_INDEX_H
#define SAMSA_STORAGE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_INDEX_ENTRY_SIZE 8
#define LOG_TIMEINDEX_ENTRY_SIZE 12

typedef struct log_entfile {
	char *path;     /* owned */
	int fd;         /* -1 until loaded or the first entry is written */
	size_t esz;     /* entry size in bytes */
	uint8_t *mem;   /* n entries, as on disk (big endian) */
	size_t n;       /* entries in memory (loaded) or in the file (not loaded) */
	size_t cap;     /* entries mem can hold */
	size_t nfile;   /* entries already written to the file */
	bool loaded;
	bool keep_fd;   /* hold fd between writes (log_ef_keep_fd) */
	bool dirty;     /* the file changed since the log's last flush took it */
	uint8_t last[LOG_TIMEINDEX_ENTRY_SIZE]; /* last entry, valid when n > 0 */
} log_entfile;

/* Set up (no I/O); path is copied. Returns 0 or -ENOMEM. */
int log_ef_init(log_entfile *ef, const char *path, size_t esz);
/* Stat the file without loading it: -ENOENT when missing, LOG_ERR_CORRUPT when
 * its size is not a multiple of the entry size; on success n and last are set. */
int log_ef_stat(log_entfile *ef);
/* Read every entry into memory (through a descriptor closed again: only
 * log_ef_sync keeps one, for keep_fd). 0 or -errno. */
int log_ef_load(log_entfile *ef);
/* Create or empty the file; the entfile becomes loaded with 0 entries. No fd
 * is kept open when none was: log_ef_sync opens it for the first entry. */
int log_ef_reset(log_entfile *ef);
/* Add one entry in memory (loading the file first when it is not);
 * written by log_ef_sync. 0, -ENOMEM or log_ef_load's -errno. */
int log_ef_push(log_entfile *ef, const uint8_t *entry);
/* Write entries pushed since the last sync to the end of the file (opening
 * the fd when not open; closed again unless keep_fd). On a failed write
 * (-ENOSPC, -EFBIG, -EIO) the file is cut back to the entries written
 * before and nfile does not move: the unwritten entries stay in memory
 * (log_ef_truncate drops them). */
int log_ef_sync(log_entfile *ef);
/* Keep the first n entries (memory and file; loaded first when not). */
int log_ef_truncate(log_entfile *ef, size_t n);
/* fsync the file (through its fd, or one opened for it; a missing file
 * is 0). */
int log_ef_fsync(log_entfile *ef);
/* Set keep_fd; false closes the fd now. */
void log_ef_keep_fd(log_entfile *ef, bool keep);
/* Close the fd, if open (the next write opens one again). */
void log_ef_close_fd(log_entfile *ef);
/* Free the entries in memory when every one is in the file (n == nfile):
 * loaded becomes false, n, nfile and last stay (as log_ef_stat sets
 * them). A no-op otherwise. */
void log_ef_unload(log_entfile *ef);
/* Close the fd and free memory (the entfile can be initialised again). */
void log_ef_destroy(log_entfile *ef);
static inline const uint8_t *log_ef_at(const log_entfile *ef, size_t i) { return ef->mem + i * ef->esz; }

/* ---- offset index ---- */

/* Append (in memory) an entry for the batch whose last offset is rel
 * (relative to the segment base) and that starts at pos. */
int log_index_add(log_entfile *ix, int32_t rel, int32_t pos);
/* Position of the last entry with relative offset <= rel (0 when none);
 * *entry_rel gets its relative offset (-1 when none). Index must be loaded. */
int32_t log_index_lookup(const log_entfile *ix, int64_t rel, int32_t *entry_rel);
/* Largest entry position <= pos (0 when none). Index must be loaded. */
int32_t log_index_floor_pos(const log_entfile *ix, int64_t pos);
/* Check a loaded index: offsets >= 0 and strictly increasing, positions
 * strictly increasing and below log_size. 0 or LOG_ERR_CORRUPT. */
int log_index_check(const log_entfile *ix, int64_t log_size);
/* Full when n >= max_index_bytes / 8 (segment.index.bytes). */
bool log_index_full(const log_entfile *ix, int32_t max_index_bytes);

#endif
