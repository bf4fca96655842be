/*
 * recover.c - opening a partition directory: finding its segments, checking
 * their indexes, and recovery after an unclean stop (DESIGN.md decision 9,
 * Kafka's LogLoader and LogSegment.recover).
 *
 *   1. Segments are the files <20 digits>.log; orphan .index/.timeindex files
 *      and leftover *.tmp, *.deleted, *.cleaned files are removed.
 *   2. Unclean stop: from the segment holding the recovery point on, every
 *      batch is read and checked (header, magic 2, size within the file,
 *      CRC32C, base offsets increasing, offsets within the segment), the
 *      indexes are rebuilt on the way and the leader epochs seen are
 *      assigned. At the first bad batch the segment is cut there and every
 *      later segment is deleted; what was dropped goes to stderr.
 *   3. The other segments are not read: their indexes pass Kafka's sanity
 *      checks (check_closed_indexes) or are rebuilt the same way (that
 *      segment only): missing, not a whole number of entries, a last entry
 *      outside the segment, or a time index without the closing entry of a
 *      segment with timestamps. An empty offset index is valid (a segment
 *      whose batches never followed index.interval.bytes has none).
 *   4. Clean stop: nothing is scanned but the tail of the active segment
 *      after its last index entry (to find the log end offset); a bad tail
 *      there falls back to step 2 for that segment.
 *   5. Producer state (Kafka's LogLoader.rebuildProducerState): the latest
 *      readable <offset>.snapshot (at or below the first segment recovered
 *      after an unclean stop) is loaded before recovery, the batches
 *      recovery checks from that offset on are replayed into it on the way,
 *      and the headers of the batches after what recovery covered are then
 *      read up to the log end offset. A snapshot above the log end offset
 *      (the log was cut) is removed and the latest one at or below it used
 *      instead; one that does not parse (size, version, CRC) is removed.
 *      After a clean stop the snapshot at the log end offset means no scan.
 *   6. Transactions: replayed transactional batches start their producer's
 *      transaction and replayed markers (control batches, read whole) end
 *      it; an aborted one goes back to the marker segment's .txnindex
 *      unless an entry at or after its marker is there. A recovered
 *      segment's .txnindex first loses the entries for the markers that
 *      will be replayed, and a cut segment those after the cut; the
 *      .txnindex of a deleted segment goes with it (Kafka's
 *      LogSegment.recover and truncateTo).
 *   7. Legacy message sets (magic 0 or 1, written by old Kafka versions) are
 *      not read: log_open fails with -ENOTSUP and the .log is left intact
 *      (its derived index files may have been emptied).
 *   8. A file that cannot be opened or read now (-EMFILE, -ENFILE, -EIO,
 *      ...) fails the open with that error and nothing is rewritten: only
 *      a missing or malformed index is damage.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "protocol/records.h"
#include "storage/fileio.h"
#include "storage/partition.h"
#include "storage/timeindex.h"

#define RECOVER_BUF (1 << 20)

/* Sequential read buffer over a segment file. */
typedef struct rdbuf {
	int fd;
	int64_t end;
	int64_t pos; /* file position of buf[0] */
	size_t len;
	uint8_t *buf;
} rdbuf;

/* Point *p at the bytes from pos: *got = min(want, what the buffer holds),
 * refilling when pos is outside it or fewer than want (<= buffer) remain. */
static int rd_at(rdbuf *r, int64_t pos, size_t want, const uint8_t **p, size_t *got)
{
	bool inside = pos >= r->pos && pos < r->pos + (int64_t)r->len;
	if (!inside || (want <= RECOVER_BUF && pos + (int64_t)want > r->pos + (int64_t)r->len)) {
		int64_t n = r->end - pos;
		if (n > RECOVER_BUF)
			n = RECOVER_BUF;
		if (n <= 0)
			return -EIO;
		int rc = log_io_pread(r->fd, r->buf, (size_t)n, pos);
		if (rc < 0)
			return rc;
		r->pos = pos;
		r->len = (size_t)n;
	}
	size_t avail = (size_t)(r->pos + (int64_t)r->len - pos);
	*p = r->buf + (pos - r->pos);
	*got = want < avail ? want : avail;
	return 0;
}

/* Whether an error loading or checking an index says the index is
 * damaged (then rebuilt from the .log): a missing file or one that does
 * not parse. Any other error (-EMFILE, -ENFILE, -ENOMEM, -EIO, -EACCES) is
 * the open's own failure and is returned: a file that cannot be read now is
 * never rewritten. */
static bool index_damaged(int rc)
{
	return rc == -ENOENT || rc == LOG_ERR_CORRUPT;
}

static int crc_region(rdbuf *r, int64_t from, int64_t to, uint32_t *crc)
{
	uint32_t c = 0;
	while (from < to) {
		const uint8_t *p;
		size_t got;
		int rc = rd_at(r, from, (size_t)(to - from), &p, &got);
		if (rc < 0)
			return rc;
		c = proto_crc32c(c, p, got);
		from += (int64_t)got;
	}
	*crc = c;
	return 0;
}

int log_replay_batch(log_partition *lp, size_t i, const proto_batch_info *h, const uint8_t *batch)
{
	if (h->producer_id < 0 || !(h->attributes & PROTO_ATTR_CONTROL))
		return log_pstate_replay(&lp->producers, h);
	int16_t type = -1;
	int32_t coordinator_epoch = -1;
	int prc = batch ? proto_control_batch_parse(batch, (size_t)h->size, &type, &coordinator_epoch) : -1;
	if (prc != 0 || (type != PROTO_CONTROL_ABORT && type != PROTO_CONTROL_COMMIT)) {
		fprintf(stderr,
			"samsa storage: %s: unreadable transaction marker at offset %" PRId64
			", ending the transaction without an index entry\n",
			lp->segs[i]->log_path, h->base_offset);
		return log_pstate_replay(&lp->producers, h);
	}
	log_completed_txn done;
	int rc = log_pstate_replay_marker(&lp->producers, h, type == PROTO_CONTROL_COMMIT, coordinator_epoch,
					  &done);
	if (rc == 0 && done.producer_id >= 0 && done.aborted)
		log_note_aborted_txn(lp, i, &done);
	return rc;
}

/* log_replay_batch for the batch h found at pos of segs[i]: the marker of a
 * control batch is read from the file. */
static int replay_batch(log_partition *lp, size_t i, int64_t pos, const proto_batch_info *h)
{
	if (h->producer_id < 0 || !(h->attributes & PROTO_ATTR_CONTROL))
		return log_pstate_replay(&lp->producers, h);
	uint8_t buf[1024];
	bool have = false;
	if ((size_t)h->size <= sizeof buf) {
		int rc = log_seg_pread(lp->segs[i], buf, (size_t)h->size, pos);
		if (rc < 0 && rc != -EIO)
			return rc;
		have = rc == 0;
	}
	return log_replay_batch(lp, i, h, have ? buf : NULL);
}

int log_seg_rebuild(log_partition *lp, log_segment *s, int64_t prev_next, int64_t limit_next,
		    bool check_crc, bool assign_epochs, int64_t *valid, const char **why)
{
	rdbuf r = { .fd = log_seg_fd(s), .end = s->size, .pos = 0, .len = 0, .buf = NULL };
	log_scan sc;
	int rc = 0;
	if (r.fd < 0)
		return r.fd;
	if (check_crc) {
		r.buf = malloc(RECOVER_BUF);
		if (!r.buf)
			return -ENOMEM;
	} else {
		log_scan_init(&sc, s, s->size);
	}
	rc = log_ef_reset(&s->oidx);
	if (rc == 0)
		rc = log_ef_reset(&s->tidx);
	s->max_ts = -1;
	s->max_ts_offset = s->base_offset;
	s->bytes_since_index = 0;
	s->rolling_ts = -1;
	int64_t expect = prev_next > s->base_offset ? prev_next : s->base_offset;
	int64_t pos = 0;
	*why = NULL;
	size_t si = log_seg_floor(lp, s->base_offset);
	bool replays = assign_epochs && lp->producers_loading && s->base_offset <= lp->producers.map_end_offset;
	if (rc == 0 && replays) {
		/* the markers replayed below put their entries back */
		int64_t from = lp->producers.map_end_offset > s->base_offset ? lp->producers.map_end_offset
									     : s->base_offset;
		rc = log_txnindex_truncate(&lp->tix[si], from);
	}
	while (rc == 0 && pos < s->size) {
		proto_batch_info h;
		if (check_crc) {
			const uint8_t *p;
			size_t got;
			rc = rd_at(&r, pos, PROTO_BATCH_HEADER_SIZE, &p, &got);
			if (rc < 0)
				break;
			int prc = got < PROTO_BATCH_HEADER_SIZE ? (log_batch_is_legacy(p, got) ? -ENOTSUP : 1)
								: log_batch_parse_header(p, &h);
			if (prc == 1) {
				*why = "torn batch header";
				break;
			}
			if (prc == -ENOTSUP) {
				fprintf(stderr, "samsa storage: %s: legacy message format (magic 0/1) at position %" PRId64
					" is not supported; leaving the log as it is\n", s->log_path, pos);
				rc = prc;
				break;
			}
			if (prc < 0) {
				*why = "invalid batch header";
				break;
			}
			if (h.size > s->size - pos) {
				*why = "torn batch";
				break;
			}
		} else {
			int src = log_scan_header(&sc, pos, &h);
			if (src < 0 && src != LOG_ERR_CORRUPT) {
				rc = src;
				break;
			}
			if (src != 0) {
				*why = "invalid or torn batch header";
				break;
			}
		}
		int64_t last = log_batch_last_offset(&h);
		if (h.base_offset < expect) {
			*why = "batch offsets not increasing";
			break;
		}
		if (last - s->base_offset > INT32_MAX || last >= limit_next) {
			*why = "batch offsets outside the segment";
			break;
		}
		if (check_crc) {
			uint32_t crc;
			rc = crc_region(&r, pos + PROTO_BATCH_OFF_ATTRIBUTES, pos + h.size, &crc);
			if (rc < 0)
				break;
			if (crc != h.crc) {
				*why = "CRC32C mismatch";
				break;
			}
		}
		if (pos == 0)
			s->rolling_ts = h.max_timestamp;
		rc = log_seg_index_batch(s, &h, pos, lp->cfg.index_interval_bytes);
		if (rc == 0 && assign_epochs)
			rc = log_epoch_assign(&lp->epochs, h.partition_leader_epoch, h.base_offset);
		/* replay into the producer state while it is contiguous with
		 * what this scan covers (see log_load) */
		if (rc == 0 && replays && h.base_offset >= lp->producers.map_end_offset)
			rc = replay_batch(lp, si, pos, &h);
		expect = last + 1;
		pos += h.size;
	}
	free(r.buf);
	if (rc < 0)
		return rc;
	s->next_offset = expect;
	*valid = pos;
	rc = log_seg_sync_indexes(s);
	if (rc == 0)
		rc = log_seg_seal_timeindex(s);
	if (log_io_full(rc)) {
		/* A full disk must not keep the log from opening (its data is
		 * all there): the entries, the closing time index one
		 * included, stay in memory and reach the files at the next
		 * flush or close that finds space (log_ef_sync writes from the
		 * first unwritten one); a restart before that rebuilds them. */
		fprintf(stderr,
			"samsa storage: %s: no space to write the rebuilt indexes of segment %" PRId64
			"; kept in memory\n",
			lp->dir, s->base_offset);
		rc = s->max_ts < 0 ? 0
				   : log_timeindex_maybe_add(&s->tidx, s->max_ts,
							     (int32_t)(s->max_ts_offset - s->base_offset));
		lp->indexes_unsynced = true;
	}
	return rc;
}

/* Rebuild with CRC checks and cut the segment at the first bad batch.
 * *cut tells whether bytes were dropped. */
static int recover_segment(log_partition *lp, log_segment *s, int64_t prev_next, int64_t limit_next,
			   bool *cut)
{
	int64_t valid;
	const char *why;
	int rc = log_seg_rebuild(lp, s, prev_next, limit_next, true, true, &valid, &why);
	if (rc < 0)
		return rc;
	*cut = valid < s->size;
	if (*cut) {
		fprintf(stderr,
			"samsa storage: %s: %s at position %" PRId64 ": truncating to %" PRId64
			" bytes, dropping %" PRId64 " bytes\n",
			s->log_path, why ? why : "bad batch", valid, valid, s->size - valid);
		lp->size_bytes -= s->size - valid;
		rc = log_seg_truncate_file(s, valid);
		s->dirty = true;
	}
	/* no entry for a marker past what the segment holds now */
	if (rc == 0)
		rc = log_txnindex_truncate(&lp->tix[log_seg_floor(lp, s->base_offset)], s->next_offset);
	return rc;
}

int log_seg_ready(log_partition *lp, log_segment *s)
{
	if (s->oidx.loaded && s->tidx.loaded)
		return 0;
	int64_t size = s->size;
	int rc = log_seg_load_indexes(s, &size);
	if (rc == 0 || !index_damaged(rc))
		return rc;
	size_t i = log_seg_floor(lp, s->base_offset);
	int64_t limit = i + 1 < lp->nseg ? lp->segs[i + 1]->base_offset : INT64_MAX;
	int64_t valid;
	const char *why;
	fprintf(stderr, "samsa storage: %s: rebuilding damaged index\n", s->log_path);
	return log_seg_rebuild(lp, s, s->base_offset, limit, false, false, &valid, &why);
}

/* A name of exactly 20 digits followed by suffix; *base gets the number. */
static bool seg_name(const char *name, const char *suffix, int64_t *base)
{
	size_t n = strlen(name), sl = strlen(suffix);
	if (n != 20 + sl || strcmp(name + 20, suffix) != 0)
		return false;
	int64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		if (v > (INT64_MAX - (name[i] - '0')) / 10)
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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static bool have_base(const int64_t *v, size_t n, int64_t base)
{
	return n > 0 && bsearch(&base, v, n, sizeof *v, cmp_i64) != NULL;
}

/* Collect the base offsets of the .log files; remove leftovers. */
static int list_segments(const char *dir, int64_t **out, size_t *nout)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		int64_t base;
		if (!seg_name(de->d_name, ".log", &base))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			int64_t *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = base;
	}
	if (rc == 0) {
		if (n > 1)
			qsort(v, n, sizeof *v, cmp_i64);
		rewinddir(d);
		while ((de = readdir(d))) {
			int64_t base;
			bool orphan = (seg_name(de->d_name, ".index", &base) ||
				       seg_name(de->d_name, ".timeindex", &base) ||
				       seg_name(de->d_name, LOG_TXNINDEX_SUFFIX, &base)) &&
				      !have_base(v, n, base);
			if (orphan || ends_with(de->d_name, ".tmp") || ends_with(de->d_name, ".deleted") ||
			    ends_with(de->d_name, ".cleaned")) {
				fprintf(stderr, "samsa storage: %s: removing leftover file %s\n", dir, de->d_name);
				unlinkat(dirfd(d), de->d_name, 0);
			}
		}
	}
	closedir(d);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

/*
 * The sanity checks of a segment that is not recovered (Kafka's
 * LogSegment.sanityCheck, OffsetIndex/TimeIndex.sanityCheck), cheap enough
 * for every segment of every log at every start: both index files exist
 * and hold whole entries; the last offset index entry has a relative offset
 * >= 0 and points inside the .log; the last time index entry has a relative
 * offset >= 0. Every entry is checked when the indexes are first loaded
 * (log_seg_ready). An empty offset index is valid whatever the segment's
 * size: an entry is written only for a batch that follows more than
 * index.interval.bytes (Kafka's LogSegment.append), so a segment of one
 * batch, however large, has none. An empty time index is valid when the
 * segment's first batch carries no timestamp (Kafka leaves the time index
 * of such a segment empty); otherwise the closing entry that every roll
 * writes is missing. Returns 0 (the segment's max timestamp then set from
 * the time index), 1 when damaged (*why says how) or -errno.
 */
static int check_closed_indexes(log_segment *s, const char **why)
{
	int rc = log_ef_stat(&s->oidx);
	if (rc == 0)
		rc = log_ef_stat(&s->tidx);
	if (rc < 0) {
		if (!index_damaged(rc))
			return rc;
		*why = rc == -ENOENT ? "missing index" : "index of a size that is not whole entries";
		return 1;
	}
	if (s->oidx.n > 0) {
		int32_t rel = (int32_t)log_be32(s->oidx.last), pos = (int32_t)log_be32(s->oidx.last + 4);
		if (rel < 0 || pos < 0 || pos >= s->size) {
			*why = "offset index entry outside the segment";
			return 1;
		}
	}
	int64_t ts;
	int32_t rel;
	if (log_timeindex_last(&s->tidx, &ts, &rel)) {
		if (rel < 0) {
			*why = "time index entry outside the segment";
			return 1;
		}
		s->max_ts = ts;
		s->max_ts_offset = s->base_offset + rel;
	} else if (s->size > 0) {
		log_scan sc;
		proto_batch_info h;
		log_scan_init(&sc, s, s->size);
		rc = log_scan_header(&sc, 0, &h);
		if (rc < 0 && rc != LOG_ERR_CORRUPT)
			return rc;
		if (rc == LOG_ERR_CORRUPT || h.max_timestamp >= 0) {
			*why = rc == LOG_ERR_CORRUPT ? "first batch does not parse" : "time index without its closing entry";
			return 1;
		}
	}
	return 0;
}

/* Clean open of the active segment: load its indexes and scan the batches
 * after the last index entry (which also adds any index entries missing
 * there). Returns 1 when the tail is bad, 2 when an index is missing or
 * malformed (the caller recovers the segment either way), 0, or -errno
 * (an index that cannot be read now: nothing is rewritten). */
static int open_active_tail(log_partition *lp, log_segment *s)
{
	int64_t size = s->size;
	int rc = log_seg_load_indexes(s, &size);
	if (rc < 0)
		return index_damaged(rc) ? 2 : rc;
	int32_t last_rel = -1;
	int64_t pos = 0;
	if (s->oidx.n > 0)
		pos = log_index_lookup(&s->oidx, INT64_MAX, &last_rel);
	int64_t ts;
	int32_t trel;
	if (log_timeindex_last(&s->tidx, &ts, &trel)) {
		s->max_ts = ts;
		s->max_ts_offset = s->base_offset + trel;
	}
	log_scan sc;
	log_scan_init(&sc, s, s->size);
	proto_batch_info h;
	s->bytes_since_index = 0;
	if (s->size > 0) {
		if (log_scan_header(&sc, 0, &h) != 0)
			return 1;
		s->rolling_ts = h.max_timestamp;
	}
	int64_t next = s->base_offset;
	bool first = true;
	for (;;) {
		rc = log_scan_header(&sc, pos, &h);
		if (rc == 1)
			break;
		if (rc == LOG_ERR_CORRUPT)
			return 1;
		if (rc < 0)
			return rc;
		int64_t last = log_batch_last_offset(&h);
		if (h.base_offset < next || last - s->base_offset > INT32_MAX)
			return 1;
		/* the batch at the last index entry must end at that entry's offset */
		if (first && s->oidx.n > 0 && last != s->base_offset + last_rel)
			return 1;
		first = false;
		rc = log_seg_index_batch(s, &h, pos, lp->cfg.index_interval_bytes);
		if (rc < 0)
			return rc;
		next = last + 1;
		pos += h.size;
	}
	s->next_offset = s->size > 0 ? next : s->base_offset;
	return log_seg_sync_indexes(s);
}

static void drop_segments_from(log_partition *lp, size_t from)
{
	for (size_t j = from; j < lp->nseg; j++) {
		log_segment *d = lp->segs[j];
		fprintf(stderr, "samsa storage: %s: deleting segment after a truncated one (%" PRId64 " bytes)\n",
			d->log_path, d->size);
		lp->size_bytes -= d->size;
		log_seg_unlink(d);
		log_seg_drop(d);
		log_txnindex_remove(&lp->tix[j]);
		log_txnindex_destroy(&lp->tix[j]);
	}
	if (lp->nseg > from)
		lp->dir_unsynced = true;
	lp->nseg = from;
}

/* Load the latest readable snapshot at or below max_offset into the
 * producer state; without one the state is empty from offset from_offset.
 * Snapshots that do not parse are removed. */
static int load_snapshot(log_partition *lp, int64_t max_offset, int64_t from_offset, int64_t now_ms)
{
	log_producer_state *ps = &lp->producers;
	int64_t *offs;
	size_t n;
	int rc = log_pstate_list_snapshots(lp->dir, &offs, &n);
	if (rc < 0)
		return rc;
	for (size_t i = n; i-- > 0;) {
		if (offs[i] > max_offset)
			continue;
		char path[PATH_MAX];
		rc = log_io_path(path, sizeof path, "%s/%020" PRId64 "%s", lp->dir, offs[i], LOG_SNAPSHOT_SUFFIX);
		if (rc == 0)
			rc = log_pstate_read_snapshot(ps, path, offs[i], now_ms, lp->cfg.producer_id_expiration_ms);
		if (rc == 0) {
			free(offs);
			return 0;
		}
		if (rc != LOG_ERR_CORRUPT) {
			free(offs);
			return rc;
		}
		fprintf(stderr, "samsa storage: %s: producer snapshot does not parse, removing it\n", path);
		log_pstate_remove_snapshot(lp->dir, offs[i]);
		lp->dir_unsynced = true;
	}
	free(offs);
	log_pstate_clear(ps);
	ps->map_end_offset = from_offset;
	ps->snap_offset = from_offset;
	return 0;
}

/* Replay the batch headers from the producer state's map end offset up to
 * end (what recovery did not cover). */
static int replay_tail(log_partition *lp, int64_t end)
{
	log_producer_state *ps = &lp->producers;
	if (ps->map_end_offset < lp->segs[0]->base_offset)
		ps->map_end_offset = lp->segs[0]->base_offset;
	for (size_t i = log_seg_floor(lp, ps->map_end_offset);
	     i < lp->nseg && ps->map_end_offset < end && lp->segs[i]->base_offset < end; i++) {
		log_segment *s = lp->segs[i];
		log_scan sc;
		log_scan_init(&sc, s, s->size);
		int64_t pos = 0;
		if (s->oidx.loaded && ps->map_end_offset > s->base_offset)
			pos = log_index_lookup(&s->oidx, ps->map_end_offset - s->base_offset, NULL);
		for (;;) {
			proto_batch_info h;
			int rc = log_scan_header(&sc, pos, &h);
			if (rc == 1)
				break;
			if (rc < 0) {
				fprintf(stderr,
					"samsa storage: %s: unreadable batch at position %" PRId64
					" while rebuilding the producer state: %s\n",
					s->log_path, pos, rc == LOG_ERR_CORRUPT ? "corrupt" : strerror(-rc));
				return rc == LOG_ERR_CORRUPT ? 0 : rc;
			}
			if (h.base_offset >= end)
				break;
			if (h.base_offset >= ps->map_end_offset) {
				rc = replay_batch(lp, i, pos, &h);
				if (rc < 0)
					return rc;
			}
			pos += h.size;
		}
	}
	if (ps->map_end_offset < end)
		ps->map_end_offset = end;
	return 0;
}

void log_remove_snapshots_above(log_partition *lp, int64_t offset)
{
	int64_t *offs;
	size_t n;
	if (log_pstate_list_snapshots(lp->dir, &offs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (offs[i] > offset) {
			log_pstate_remove_snapshot(lp->dir, offs[i]);
			lp->dir_unsynced = true;
		}
	free(offs);
}

int log_rebuild_producers(log_partition *lp, int64_t end, bool reload, int64_t now_ms)
{
	if (reload) {
		int rc = load_snapshot(lp, end, lp->segs[0]->base_offset, now_ms);
		if (rc < 0)
			return rc;
	}
	int rc = replay_tail(lp, end);
	if (rc < 0)
		return rc;
	log_pstate_expire(&lp->producers, now_ms, lp->cfg.producer_id_expiration_ms);
	return 0;
}

static int load_segments(log_partition *lp, bool clean, int64_t recovery_point, int64_t now_ms);

int log_load(log_partition *lp, bool clean, int64_t recovery_point, int64_t now_ms)
{
	lp->producers_loading = true;
	int rc = load_segments(lp, clean, recovery_point, now_ms);
	lp->producers_loading = false;
	if (rc < 0)
		return rc;
	lp->opened.segments = (int32_t)lp->nseg;
	int64_t leo = log_end_offset(lp);
	/* reload when recovery cut the log below the snapshot (nothing was replayed) */
	bool reload = lp->producers.map_end_offset > leo;
	log_remove_snapshots_above(lp, leo);
	return log_rebuild_producers(lp, leo, reload, now_ms);
}

static int load_segments(log_partition *lp, bool clean, int64_t recovery_point, int64_t now_ms)
{
	int64_t *bases = NULL;
	size_t n = 0;
	int rc = list_segments(lp->dir, &bases, &n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		log_segment *s;
		rc = log_seg_open(lp->dir, bases[i], now_ms, &s);
		if (rc == 0) {
			rc = log_push_segment(lp, s);
			if (rc < 0)
				log_segment_release(s);
			else
				lp->size_bytes += s->size;
		}
	}
	free(bases);
	if (rc < 0)
		return rc;
	if (lp->nseg == 0) {
		log_segment *s;
		rc = log_seg_create(lp->dir, lp->log_start > 0 ? lp->log_start : 0, now_ms, &s);
		if (rc == 0 && (rc = log_push_segment(lp, s)) < 0)
			log_segment_release(s);
		lp->dir_unsynced = true;
		if (rc == 0)
			rc = load_snapshot(lp, s->base_offset, s->base_offset, now_ms);
		return rc;
	}
	/* Segments recovered in full: all from `first` on when unclean. */
	size_t first = lp->nseg;
	if (!clean)
		first = recovery_point < 0 ? 0 : log_seg_floor(lp, recovery_point);
	if (!clean && recovery_point < 0 && (lp->nseg > 1 || lp->segs[0]->size > 0))
		fprintf(stderr,
			"samsa storage: %s: no usable recovery point (an unclean stop, or a checkpoint "
			"missing or unreadable): checking all %zu segments from offset %" PRId64 "\n",
			lp->dir, lp->nseg, lp->segs[0]->base_offset);

	/* The producer state to start from, before recovery replays into it:
	 * at or below the first recovered segment, so its batches (and the
	 * aborted transactions of its markers) are replayed (Kafka's
	 * LogLoader.recoverSegment: truncateAndReload to the segment base). */
	int64_t snap_max = first < lp->nseg ? lp->segs[first]->base_offset : INT64_MAX;
	rc = load_snapshot(lp, snap_max, lp->segs[0]->base_offset, now_ms);
	if (rc < 0)
		return rc;
	if (lp->producers.map_end_offset < lp->segs[0]->base_offset)
		lp->producers.map_end_offset = lp->segs[0]->base_offset;

	for (size_t i = 0; i < lp->nseg; i++) {
		log_segment *s = lp->segs[i];
		int64_t limit = i + 1 < lp->nseg ? lp->segs[i + 1]->base_offset : INT64_MAX;
		int64_t prev_next = i > 0 ? lp->segs[i - 1]->next_offset : s->base_offset;
		bool last = i + 1 == lp->nseg;
		bool cut = false;
		if (i >= first) {
			rc = recover_segment(lp, s, prev_next, limit, &cut);
			lp->opened.recovered++;
		} else if (last) {
			rc = open_active_tail(lp, s);
			if (rc == 1 || rc == 2) {
				fprintf(stderr, "samsa storage: %s: %s, recovering the segment\n", s->log_path,
					rc == 1 ? "bad tail after a clean stop" : "missing or damaged index");
				rc = recover_segment(lp, s, prev_next, limit, &cut);
				lp->opened.rebuilt++;
			}
		} else {
			const char *why = NULL;
			rc = check_closed_indexes(s, &why);
			if (rc == 1) {
				fprintf(stderr, "samsa storage: %s: %s, rebuilding the indexes\n", s->log_path, why);
				/* Kafka recovers such a segment (CRC checks, cut at a
				 * bad batch) but keeps the segments after it. */
				rc = recover_segment(lp, s, s->base_offset, limit, &cut);
				cut = false;
				lp->opened.rebuilt++;
			} else if (rc == 0) {
				s->next_offset = limit;
			}
		}
		if (rc < 0)
			return rc;
		if (cut)
			drop_segments_from(lp, i + 1);
	}
	if (!lp->segs[lp->nseg - 1]->oidx.loaded) {
		/* the active segment was below the first recovered one: cannot
		 * happen, but keep the invariant */
		rc = log_seg_ready(lp, log_active(lp));
	}
	return rc;
}
