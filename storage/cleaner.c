/*
 * cleaner.c - log compaction of one partition log (see cleaner.h): the
 * cleanable range, the offset map (Kafka's SkimpyOffsetMap), the copy of
 * segment groups into cleaned segments and the swap.
 *
 * Offset map: open addressing over a power-of-two number of 24-byte slots
 * (16-byte MD5 of the key, int64 offset; offset -1 = empty), linear probing,
 * filled to the load factor at most. Like Kafka, two keys with the same MD5
 * would be taken for one.
 */
#include "storage/cleaner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/batch.h"
#include "protocol/buf.h"
#include "protocol/records.h"
#include "storage/fileio.h"
#include "storage/partition.h"
#include "storage/segment.h"
#include "storage/timeindex.h"

/* KIP-534: attributes bit 6, the batch's base timestamp is its delete horizon. */
#define ATTR_DELETE_HORIZON 0x40
#define SLOT_SIZE 24
#define CLEAN_SCRATCH_MAX (256u << 20)

void log_clean_config_defaults(log_clean_config *c)
{
	c->delete_retention_ms = 86400000;
	c->min_compaction_lag_ms = 0;
	c->max_compaction_lag_ms = INT64_MAX;
	c->dedupe_buffer_bytes = 128LL << 20;
	c->dedupe_load_factor = 0.9;
	c->io_buffer_bytes = 512 << 10;
}

/* ---- cleanable range (loop side) ---- */

static int64_t first_uncleanable_of(const log_partition *lp, int64_t first_dirty,
				    const log_clean_config *cfg, int64_t now_ms)
{
	int64_t fu = log_last_stable_offset(lp);
	int64_t active = log_active(lp)->base_offset;
	if (active < fu)
		fu = active;
	if (cfg->min_compaction_lag_ms > 0) {
		for (size_t i = log_seg_floor(lp, first_dirty); i + 1 < lp->nseg; i++) {
			const log_segment *s = lp->segs[i];
			if (s->max_ts > now_ms - cfg->min_compaction_lag_ms) {
				if (s->base_offset < fu)
					fu = s->base_offset;
				break;
			}
		}
	}
	return fu > first_dirty ? fu : first_dirty;
}

int log_clean_stats_of(log_partition *lp, int64_t checkpoint, const log_clean_config *cfg,
		       int64_t now_ms, log_clean_stats *out)
{
	memset(out, 0, sizeof *out);
	int64_t start = log_start_offset(lp), leo = log_end_offset(lp);
	out->first_dirty = checkpoint;
	if (checkpoint < start || checkpoint > leo) {
		out->first_dirty = start;
		out->reset_checkpoint = checkpoint >= 0;
	}
	out->first_uncleanable = first_uncleanable_of(lp, out->first_dirty, cfg, now_ms);
	/* Kafka's calculateCleanableBytes: up to the segment holding the
	 * first uncleanable offset */
	size_t ui = log_seg_floor(lp, out->first_uncleanable);
	int64_t useg = lp->segs[ui]->base_offset;
	for (size_t i = 0; i < lp->nseg; i++) {
		const log_segment *s = lp->segs[i];
		if (s->base_offset < out->first_dirty)
			out->clean_bytes += s->size;
		if (i >= log_seg_floor(lp, out->first_dirty) && s->base_offset < useg)
			out->cleanable_bytes += s->size;
	}
	int64_t total = out->clean_bytes + out->cleanable_bytes;
	out->ratio = total > 0 ? (double)out->cleanable_bytes / (double)total : 0;
	/* Kafka's maxCompactionDelay: the first batch timestamps of the dirty
	 * closed segments against now - max.compaction.lag.ms */
	if (cfg->max_compaction_lag_ms < now_ms) {
		int64_t until = now_ms - cfg->max_compaction_lag_ms, earliest = INT64_MAX;
		for (size_t i = log_seg_floor(lp, out->first_dirty); i + 1 < lp->nseg; i++) {
			log_segment *s = lp->segs[i];
			uint8_t hdr[PROTO_BATCH_HEADER_SIZE];
			proto_batch_info h;
			if (s->size < PROTO_BATCH_HEADER_SIZE || log_seg_pread(s, hdr, sizeof hdr, 0) < 0 ||
			    log_batch_parse_header(hdr, &h) < 0)
				continue;
			if (h.max_timestamp > 0 && h.max_timestamp < earliest)
				earliest = h.max_timestamp;
		}
		if (earliest < until)
			out->compaction_delay_ms = until - earliest;
	}
	return 0;
}

/* ---- the job ---- */

typedef struct pid_last {
	int64_t producer_id;
	int64_t last_offset; /* last offset of the producer's last data batch */
} pid_last;

struct log_clean_job {
	char *dir;
	log_clean_config cfg;
	int64_t now_ms;
	atomic_bool *abort;
	int64_t first_dirty, first_uncleanable;
	int32_t index_interval;
	int64_t segment_bytes;
	int32_t max_index_bytes;
	log_segment **segs;  /* references: closed segments below first_uncleanable */
	int64_t *next_base;  /* base offset of the segment after segs[i] */
	int64_t *index_bytes; /* size of segs[i]'s offset / time index (bytes) */
	size_t nseg;
	pid_last *pids;      /* sorted by producer id */
	size_t npids;
	/* results */
	size_t nold;         /* segs[0..nold) are replaced */
	int64_t *out_bases;  /* cleaned segments written (.swap) */
	size_t nout;
	char **deleted;      /* old files renamed *.deleted by the swap */
	size_t ndeleted;
	bool swapped;        /* the swap happened: remove the old files */
	bool keep_files;     /* a swap failed half-way: leave everything to recovery */
	log_clean_result res;
};

static int cmp_pid(const void *a, const void *b)
{
	const pid_last *x = a, *y = b;
	return x->producer_id < y->producer_id ? -1 : x->producer_id > y->producer_id;
}

int log_clean_begin(log_partition *lp, int64_t first_dirty, const log_clean_config *cfg,
		    int64_t now_ms, atomic_bool *abort, log_clean_job **out)
{
	*out = NULL;
	int64_t fu = first_uncleanable_of(lp, first_dirty, cfg, now_ms);
	if (fu <= first_dirty)
		return 1;
	size_t k = 0;
	while (k + 1 < lp->nseg && lp->segs[k]->base_offset < fu)
		k++;
	if (k == 0)
		return 1;
	log_clean_job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	j->dir = strdup(lp->dir);
	j->segs = calloc(k, sizeof *j->segs);
	j->next_base = calloc(k, sizeof *j->next_base);
	j->index_bytes = calloc(k, sizeof *j->index_bytes);
	size_t np = log_producer_count(lp);
	j->pids = calloc(np ? np : 1, sizeof *j->pids);
	if (!j->dir || !j->segs || !j->next_base || !j->index_bytes || !j->pids) {
		log_clean_job_free(j);
		return -ENOMEM;
	}
	j->cfg = *cfg;
	j->now_ms = now_ms;
	j->abort = abort;
	j->first_dirty = first_dirty;
	j->first_uncleanable = fu;
	j->index_interval = lp->cfg.index_interval_bytes;
	j->segment_bytes = lp->cfg.segment_bytes;
	j->max_index_bytes = lp->cfg.max_index_bytes;
	for (size_t i = 0; i < k; i++) {
		log_segment *s = lp->segs[i];
		log_segment_keep(s);
		j->segs[i] = s;
		j->next_base[i] = lp->segs[i + 1]->base_offset;
		size_t n = s->oidx.n > s->tidx.n ? s->oidx.n : s->tidx.n;
		j->index_bytes[i] = (int64_t)n * LOG_TIMEINDEX_ENTRY_SIZE;
	}
	j->nseg = k;
	size_t cursor = 0;
	const log_producer_entry *e;
	while ((e = log_producer_next(lp, &cursor)) && j->npids < np) {
		const log_producer_batch *b = log_pentry_last(e);
		if (!b)
			continue;
		j->pids[j->npids].producer_id = e->producer_id;
		j->pids[j->npids].last_offset = b->last_offset;
		j->npids++;
	}
	qsort(j->pids, j->npids, sizeof *j->pids, cmp_pid);
	*out = j;
	return 0;
}

const log_clean_result *log_clean_job_result(const log_clean_job *job) { return &job->res; }
const char *log_clean_job_dir(const log_clean_job *job) { return job->dir; }

static bool aborted(const log_clean_job *j)
{
	return j->abort && atomic_load(j->abort);
}

/* ---- offset map ---- */

typedef struct offset_map {
	uint8_t *slots;
	size_t nslots; /* a power of two */
	size_t count, max_count;
	int64_t latest; /* the last offset mapped (end of the last batch), -1 */
	EVP_MD_CTX *md;
} offset_map;

static int map_init(offset_map *m, const log_clean_config *cfg, int64_t dirty_bytes)
{
	memset(m, 0, sizeof *m);
	m->latest = -1;
	/* no more slots than the buffer allows, nor than the dirty bytes can
	 * hold records (a record takes at least 8 bytes) */
	int64_t want = dirty_bytes / 8 + 1024;
	int64_t cap = cfg->dedupe_buffer_bytes / SLOT_SIZE;
	if (want > cap)
		want = cap;
	size_t n = 1;
	while ((int64_t)(n * 2) <= want)
		n *= 2;
	if (n < 2)
		return -EINVAL;
	m->slots = malloc(n * SLOT_SIZE);
	m->md = EVP_MD_CTX_new();
	if (!m->slots || !m->md) {
		free(m->slots);
		EVP_MD_CTX_free(m->md);
		return -ENOMEM;
	}
	memset(m->slots, 0xff, n * SLOT_SIZE);
	m->nslots = n;
	m->max_count = (size_t)((double)n * cfg->dedupe_load_factor);
	if (m->max_count < 1)
		m->max_count = 1;
	if (m->max_count >= n)
		m->max_count = n - 1;
	return 0;
}

static void map_free(offset_map *m)
{
	free(m->slots);
	EVP_MD_CTX_free(m->md);
}

static int map_hash(offset_map *m, const uint8_t *key, int32_t klen, uint8_t out[16])
{
	unsigned int len = 0;
	if (EVP_DigestInit_ex(m->md, EVP_md5(), NULL) != 1 ||
	    EVP_DigestUpdate(m->md, key, (size_t)klen) != 1 || EVP_DigestFinal_ex(m->md, out, &len) != 1 ||
	    len != 16)
		return -EIO;
	return 0;
}

/* The slot holding hash, or the empty slot where it would go. */
static uint8_t *map_slot(const offset_map *m, const uint8_t hash[16])
{
	uint64_t h = log_be64(hash);
	size_t mask = m->nslots - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		uint8_t *s = m->slots + i * SLOT_SIZE;
		if ((int64_t)log_be64(s + 16) == -1 || memcmp(s, hash, 16) == 0)
			return s;
	}
}

static int map_put(offset_map *m, const uint8_t *key, int32_t klen, int64_t offset)
{
	uint8_t hash[16];
	int rc = map_hash(m, key, klen, hash);
	if (rc < 0)
		return rc;
	uint8_t *s = map_slot(m, hash);
	if ((int64_t)log_be64(s + 16) == -1) {
		memcpy(s, hash, 16);
		m->count++;
	}
	log_put_be64(s + 16, (uint64_t)offset);
	return 0;
}

/* The latest offset of key, -1 when not mapped. */
static int map_get(offset_map *m, const uint8_t *key, int32_t klen, int64_t *offset)
{
	uint8_t hash[16];
	int rc = map_hash(m, key, klen, hash);
	if (rc < 0)
		return rc;
	*offset = (int64_t)log_be64(map_slot(m, hash) + 16);
	return 0;
}

/* ---- reading segments ---- */

typedef struct seg_reader {
	int fd;
	int64_t size;
	uint8_t *buf;
	size_t cap;
	int64_t pos; /* file position of buf[0] */
	size_t len;
} seg_reader;

/* The reader opens the file for itself (this runs off the log's thread,
 * which may close the segment's own descriptor meanwhile); rd_close closes
 * it. A segment retention removed since the round began is read from its
 * renamed file (log_seg_open_fd); one already unlinked is -ESTALE, as the
 * swap would be. */
static int rd_init(seg_reader *r, const log_segment *s, uint8_t *buf, size_t cap)
{
	r->fd = log_seg_open_fd(s, O_RDONLY);
	r->size = s->size;
	r->buf = buf;
	r->cap = cap;
	r->pos = 0;
	r->len = 0;
	return r->fd == -ENOENT ? -ESTALE : r->fd < 0 ? r->fd : 0;
}

static void rd_close(seg_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* Make [pos, pos + n) available in the buffer (growing it when needed). */
static int rd_need(seg_reader *r, int64_t pos, size_t n, uint8_t **shared_buf, size_t *shared_cap)
{
	if (pos >= r->pos && pos + (int64_t)n <= r->pos + (int64_t)r->len)
		return 0;
	if (n > r->cap) {
		uint8_t *b = realloc(r->buf, n);
		if (!b)
			return -ENOMEM;
		r->buf = *shared_buf = b;
		r->cap = *shared_cap = n;
	}
	int64_t want = r->size - pos;
	if (want > (int64_t)r->cap)
		want = (int64_t)r->cap;
	if (want < (int64_t)n)
		return LOG_ERR_CORRUPT;
	int rc = log_io_pread(r->fd, r->buf, (size_t)want, pos);
	if (rc < 0)
		return rc == -EIO ? LOG_ERR_CORRUPT : rc;
	r->pos = pos;
	r->len = (size_t)want;
	return 0;
}

/* The batch at pos: 0 with *p (valid until the next read) and *h, 1 at the
 * end of the segment, or an error. */
static int rd_batch(seg_reader *r, int64_t pos, const uint8_t **p, proto_batch_info *h,
		    uint8_t **shared_buf, size_t *shared_cap)
{
	if (pos >= r->size)
		return 1;
	int rc = rd_need(r, pos, PROTO_BATCH_HEADER_SIZE, shared_buf, shared_cap);
	if (rc < 0)
		return rc;
	rc = log_batch_parse_header(r->buf + (pos - r->pos), h);
	if (rc < 0)
		return rc == -ENOTSUP ? rc : LOG_ERR_CORRUPT;
	if (h->size > r->size - pos)
		return LOG_ERR_CORRUPT;
	rc = rd_need(r, pos, (size_t)h->size, shared_buf, shared_cap);
	if (rc < 0)
		return rc;
	*p = r->buf + (pos - r->pos);
	return 0;
}

static bool is_plain_data(const proto_batch_info *h)
{
	return !(h->attributes & (PROTO_ATTR_CONTROL | PROTO_ATTR_TRANSACTIONAL));
}

/* Kafka's buildOffsetMap over one segment of [first_dirty,
 * first_uncleanable) read by r: 1 to go on with the next segment, 0 when
 * the map is full or the range ends, or an error. */
static int map_segment(log_clean_job *j, offset_map *m, seg_reader *r, uint8_t **buf, size_t *cap,
		       proto_scratch *sc)
{
	for (int64_t pos = 0;;) {
		if (aborted(j))
			return -ECANCELED;
		const uint8_t *p;
		proto_batch_info h;
		int rc = rd_batch(r, pos, &p, &h, buf, cap);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return rc;
		pos += h.size;
		int64_t last = log_batch_last_offset(&h);
		if (last < j->first_dirty)
			continue;
		if (h.base_offset >= j->first_uncleanable)
			return 0;
		if (is_plain_data(&h)) {
			/* Kafka stops before a batch that would overfill the map */
			if (m->count > 0 && m->count + (size_t)(h.records_count > 0 ? h.records_count : 0) >
						    m->max_count)
				return 0;
			proto_record_iter it;
			rc = proto_record_iter_init(&it, p, (size_t)h.size, sc);
			if (rc < 0)
				return LOG_ERR_CORRUPT;
			proto_record rec;
			while ((rc = proto_record_iter_next(&it, &rec)) == 1) {
				j->res.records_read++;
				if (rec.offset < j->first_dirty || !rec.key || rec.key_len < 0)
					continue;
				if (m->count >= m->nslots - 1)
					return 0;
				rc = map_put(m, rec.key, rec.key_len, rec.offset);
				if (rc < 0)
					return rc;
			}
			if (rc < 0)
				return LOG_ERR_CORRUPT;
		}
		m->latest = last;
		j->res.bytes_read += h.size;
	}
}

/* Kafka's buildOffsetMap over [first_dirty, first_uncleanable). */
static int build_map(log_clean_job *j, offset_map *m, uint8_t **buf, size_t *cap, proto_scratch *sc)
{
	m->latest = j->first_dirty - 1;
	for (size_t i = 0; i < j->nseg; i++) {
		if (j->next_base[i] <= j->first_dirty)
			continue;
		seg_reader r;
		int rc = rd_init(&r, j->segs[i], *buf, *cap);
		if (rc == 0)
			rc = map_segment(j, m, &r, buf, cap, sc);
		rd_close(&r);
		if (rc != 1)
			return rc;
	}
	return 0;
}

/* ---- writing a cleaned segment ---- */

typedef struct out_seg {
	int fd;
	int64_t base;
	int64_t size;
	uint8_t *wbuf;   /* pending bytes at file position size - wlen */
	size_t wlen, wcap;
	uint8_t *oidx;   /* offset index entries */
	size_t noidx, capoidx;
	uint8_t *tidx;   /* time index entries */
	size_t ntidx, captidx;
	int64_t since_index, max_ts, max_ts_off;
} out_seg;

static int push_entry(uint8_t **v, size_t *n, size_t *cap, const uint8_t *e, size_t esz)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		uint8_t *nv = realloc(*v, nc * esz);
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	memcpy(*v + *n * esz, e, esz);
	(*n)++;
	return 0;
}

static int tidx_maybe_add(out_seg *o, int64_t ts, int64_t off)
{
	if (ts < 0 || (o->ntidx > 0 && ts <= (int64_t)log_be64(o->tidx + (o->ntidx - 1) * 12)))
		return 0;
	uint8_t e[12];
	log_put_be64(e, (uint64_t)ts);
	log_put_be32(e + 8, (uint32_t)(off - o->base));
	return push_entry(&o->tidx, &o->ntidx, &o->captidx, e, 12);
}

static int out_flush(out_seg *o)
{
	if (o->wlen == 0)
		return 0;
	int rc = log_io_pwrite(o->fd, o->wbuf, o->wlen, o->size - (int64_t)o->wlen);
	o->wlen = 0;
	return rc;
}

/* Append one batch (h describes it as written) and index it as
 * log_seg_index_batch does. */
static int out_batch(log_clean_job *j, out_seg *o, const uint8_t *p, const proto_batch_info *h)
{
	int64_t last = log_batch_last_offset(h);
	if (h->max_timestamp > o->max_ts) {
		o->max_ts = h->max_timestamp;
		o->max_ts_off = last;
	}
	if (o->since_index > j->index_interval) {
		uint8_t e[8];
		log_put_be32(e, (uint32_t)(last - o->base));
		log_put_be32(e + 4, (uint32_t)o->size);
		int rc = push_entry(&o->oidx, &o->noidx, &o->capoidx, e, 8);
		if (rc == 0)
			rc = tidx_maybe_add(o, o->max_ts, o->max_ts_off);
		if (rc < 0)
			return rc;
		o->since_index = 0;
	}
	o->since_index += h->size;
	if ((size_t)h->size > o->wcap - o->wlen) {
		int rc = out_flush(o);
		if (rc < 0)
			return rc;
	}
	o->size += h->size;
	j->res.bytes_written += h->size;
	if ((size_t)h->size > o->wcap)
		return log_io_pwrite(o->fd, p, (size_t)h->size, o->size - h->size);
	memcpy(o->wbuf + o->wlen, p, (size_t)h->size);
	o->wlen += (size_t)h->size;
	return 0;
}

static int64_t producer_last_offset(const log_clean_job *j, int64_t pid)
{
	pid_last key = { .producer_id = pid };
	const pid_last *hit = bsearch(&key, j->pids, j->npids, sizeof *j->pids, cmp_pid);
	return hit ? hit->last_offset : -1;
}

/* Fill the header of the batch being rebuilt in w (61 bytes at 0 and the
 * records after them) and compute its CRC. */
static void finish_batch(proto_writer *w, const proto_batch_info *h, int16_t attributes, int64_t base_ts,
			 int64_t max_ts, int32_t count)
{
	uint8_t *b = w->buf;
	log_put_be64(b + PROTO_BATCH_OFF_BASE_OFFSET, (uint64_t)h->base_offset);
	log_put_be32(b + PROTO_BATCH_OFF_LENGTH, (uint32_t)(w->len - PROTO_BATCH_LOG_OVERHEAD));
	log_put_be32(b + PROTO_BATCH_OFF_LEADER_EPOCH, (uint32_t)h->partition_leader_epoch);
	b[PROTO_BATCH_OFF_MAGIC] = 2;
	b[PROTO_BATCH_OFF_ATTRIBUTES] = (uint8_t)((uint16_t)attributes >> 8);
	b[PROTO_BATCH_OFF_ATTRIBUTES + 1] = (uint8_t)attributes;
	log_put_be32(b + PROTO_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)h->last_offset_delta);
	log_put_be64(b + PROTO_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)base_ts);
	log_put_be64(b + PROTO_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
	log_put_be64(b + PROTO_BATCH_OFF_PRODUCER_ID, (uint64_t)h->producer_id);
	b[PROTO_BATCH_OFF_PRODUCER_EPOCH] = (uint8_t)((uint16_t)h->producer_epoch >> 8);
	b[PROTO_BATCH_OFF_PRODUCER_EPOCH + 1] = (uint8_t)h->producer_epoch;
	log_put_be32(b + PROTO_BATCH_OFF_BASE_SEQUENCE, (uint32_t)h->base_sequence);
	log_put_be32(b + PROTO_BATCH_OFF_RECORDS_COUNT, (uint32_t)count);
	uint32_t crc = proto_crc32c(0, b + PROTO_BATCH_OFF_ATTRIBUTES, w->len - PROTO_BATCH_OFF_ATTRIBUTES);
	log_put_be32(b + PROTO_BATCH_OFF_CRC, crc);
}

static void write_record(proto_writer *w, const proto_record *r, int64_t base_offset, int64_t base_ts)
{
	int64_t tsd = (int64_t)((uint64_t)r->timestamp - (uint64_t)base_ts);
	int32_t od = (int32_t)(r->offset - base_offset);
	int32_t klen = r->key ? r->key_len : -1, vlen = r->value ? r->value_len : -1;
	int32_t body = 1 + proto_varlong_size(tsd) + proto_varint_size(od) + proto_varint_size(klen) +
		       (klen > 0 ? klen : 0) + proto_varint_size(vlen) + (vlen > 0 ? vlen : 0) +
		       proto_varint_size(r->headers_count) + (int32_t)r->headers_len;
	proto_write_varint(w, body);
	proto_write_int8(w, 0);
	proto_write_varlong(w, tsd);
	proto_write_varint(w, od);
	proto_write_varint(w, klen);
	if (klen > 0)
		proto_write_raw(w, r->key, (size_t)klen);
	proto_write_varint(w, vlen);
	if (vlen > 0)
		proto_write_raw(w, r->value, (size_t)vlen);
	proto_write_varint(w, r->headers_count);
	if (r->headers_len > 0)
		proto_write_raw(w, r->headers, r->headers_len);
}

/* Should rec stay? (Kafka's Cleaner.shouldRetainRecord) */
static int retain_record(offset_map *m, const proto_record *rec, bool retain_deletes, bool *keep)
{
	if (rec->offset > m->latest) {
		*keep = true;
		return 0;
	}
	if (!rec->key || rec->key_len < 0) {
		*keep = false;
		return 0;
	}
	int64_t found;
	int rc = map_get(m, rec->key, rec->key_len, &found);
	if (rc < 0)
		return rc;
	*keep = rec->offset >= found && (rec->value || retain_deletes);
	return 0;
}

/* Clean one batch of the source into o (Kafka's cleanInto / MemoryRecords.filterTo). */
static int clean_batch(log_clean_job *j, offset_map *m, out_seg *o, const uint8_t *p,
		       const proto_batch_info *h, proto_scratch *sc, proto_writer *w)
{
	if (!is_plain_data(h))
		return out_batch(j, o, p, h); /* transactional data and markers: unchanged */
	bool horizon_set = (h->attributes & ATTR_DELETE_HORIZON) != 0;
	bool retain_deletes = !horizon_set || j->now_ms < h->base_timestamp;
	proto_record_iter it;
	if (proto_record_iter_init(&it, p, (size_t)h->size, sc) < 0)
		return LOG_ERR_CORRUPT;
	/* first pass: what stays */
	int32_t kept = 0, total = 0;
	bool tombstone_kept = false;
	proto_record rec;
	int rc;
	while ((rc = proto_record_iter_next(&it, &rec)) == 1) {
		bool keep;
		int r2 = retain_record(m, &rec, retain_deletes, &keep);
		if (r2 < 0)
			return r2;
		total++;
		if (keep) {
			kept++;
			if (!rec.value)
				tombstone_kept = true;
		}
	}
	if (rc < 0)
		return LOG_ERR_CORRUPT;
	j->res.records_read += 0; /* counted while mapping for dirty batches */
	j->res.records_kept += kept;
	bool need_horizon = tombstone_kept && !horizon_set;
	if (kept == total && !need_horizon)
		return out_batch(j, o, p, h);
	int64_t last = log_batch_last_offset(h);
	int16_t attrs = (int16_t)(h->attributes & ~(PROTO_ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON));
	proto_writer_reset(w);
	proto_writer_reserve(w, PROTO_BATCH_HEADER_SIZE);
	if (w->err)
		return -ENOMEM;
	memset(w->buf, 0, PROTO_BATCH_HEADER_SIZE);
	if (kept == 0) {
		/* Kafka's BatchRetention.RETAIN_EMPTY: the producer's last batch
		 * and the last batch of the round stay, without records */
		bool keep_empty = (h->producer_id >= 0 && producer_last_offset(j, h->producer_id) == last) ||
				  last + 1 == j->first_uncleanable;
		if (!keep_empty)
			return 0;
		finish_batch(w, h, attrs, h->base_timestamp, h->max_timestamp, 0);
	} else {
		int64_t base_ts = h->base_timestamp;
		if (horizon_set || need_horizon) {
			attrs |= ATTR_DELETE_HORIZON;
			if (need_horizon)
				base_ts = j->now_ms > INT64_MAX - j->cfg.delete_retention_ms
						  ? INT64_MAX
						  : j->now_ms + j->cfg.delete_retention_ms;
		}
		bool append_time = (h->attributes & PROTO_ATTR_TIMESTAMP_TYPE) != 0;
		int64_t max_ts = append_time ? h->max_timestamp : -1;
		if (proto_record_iter_init(&it, p, (size_t)h->size, sc) < 0)
			return LOG_ERR_CORRUPT;
		while ((rc = proto_record_iter_next(&it, &rec)) == 1) {
			bool keep;
			int r2 = retain_record(m, &rec, retain_deletes, &keep);
			if (r2 < 0)
				return r2;
			if (!keep)
				continue;
			write_record(w, &rec, h->base_offset, base_ts);
			if (!append_time && rec.timestamp > max_ts)
				max_ts = rec.timestamp;
		}
		if (rc < 0)
			return LOG_ERR_CORRUPT;
		if (w->err)
			return -ENOMEM;
		if (w->len - PROTO_BATCH_LOG_OVERHEAD > INT32_MAX)
			return LOG_ERR_CORRUPT;
		finish_batch(w, h, attrs, base_ts, max_ts, kept);
	}
	proto_batch_info nh;
	log_batch_parse_header(w->buf, &nh);
	return out_batch(j, o, w->buf, &nh);
}

/* Read the aborted transactions of dir/<base>.txnindex (raw entries,
 * appended to *v). A missing file has none. */
static int read_txnindex(const char *dir, int64_t base, uint8_t **v, size_t *n, size_t *cap)
{
	char path[PATH_MAX];
	int rc = log_seg_path(path, sizeof path, dir, base, LOG_TXNINDEX_SUFFIX);
	if (rc < 0)
		return rc;
	char *data;
	size_t len;
	rc = log_io_read_small(path, 64u << 20, &data, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	for (size_t off = 0; rc == 0 && off + LOG_TXNINDEX_ENTRY_SIZE <= len; off += LOG_TXNINDEX_ENTRY_SIZE)
		rc = push_entry(v, n, cap, (const uint8_t *)data + off, LOG_TXNINDEX_ENTRY_SIZE);
	free(data);
	return rc;
}

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = len ? log_io_pwrite(fd, data, len, 0) : 0;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static const char *const index_suffixes[] = { ".index", ".timeindex", LOG_TXNINDEX_SUFFIX };

/* Paths of a cleaned segment's files: kind 0..2 the indexes, 3 the .log;
 * state ".cleaned", ".swap" or "". */
static int file_name(char *out, size_t cap, const char *dir, int64_t base, int kind, const char *state)
{
	char suffix[32];
	snprintf(suffix, sizeof suffix, "%s%s", kind == 3 ? ".log" : index_suffixes[kind], state);
	return log_seg_path(out, cap, dir, base, suffix);
}

/* Remove the files of cleaned segment base in a state (missing ones are fine). */
static void unlink_outputs(const char *dir, int64_t base, const char *state)
{
	for (int kind = 0; kind < 4; kind++) {
		char p[PATH_MAX];
		if (file_name(p, sizeof p, dir, base, kind, state) == 0)
			unlink(p);
	}
}

/* Clean segs[from..to) into one segment named after segs[from]. */
static int clean_group(log_clean_job *j, offset_map *m, size_t from, size_t to, uint8_t **buf, size_t *cap,
		       proto_scratch *sc, proto_writer *w)
{
	int64_t base = j->segs[from]->base_offset;
	char path[PATH_MAX];
	out_seg o = { .fd = -1, .base = base, .max_ts = -1, .max_ts_off = base };
	uint8_t *txn = NULL;
	size_t ntxn = 0, captxn = 0;
	int rc = file_name(path, sizeof path, j->dir, base, 3, ".cleaned");
	if (rc == 0) {
		o.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o.fd < 0)
			rc = -errno;
	}
	o.wcap = (size_t)(j->cfg.io_buffer_bytes > 4096 ? j->cfg.io_buffer_bytes : 4096);
	if (rc == 0 && !(o.wbuf = malloc(o.wcap)))
		rc = -ENOMEM;
	for (size_t i = from; rc == 0 && i < to; i++) {
		seg_reader r;
		rc = rd_init(&r, j->segs[i], *buf, *cap);
		for (int64_t pos = 0; rc == 0;) {
			if (aborted(j)) {
				rc = -ECANCELED;
				break;
			}
			const uint8_t *p;
			proto_batch_info h;
			int r2 = rd_batch(&r, pos, &p, &h, buf, cap);
			if (r2 == 1)
				break;
			if (r2 < 0) {
				rc = r2;
				break;
			}
			pos += h.size;
			j->res.bytes_read += h.size;
			rc = clean_batch(j, m, &o, p, &h, sc, w);
		}
		rd_close(&r);
		if (rc == 0)
			rc = read_txnindex(j->dir, j->segs[i]->base_offset, &txn, &ntxn, &captxn);
	}
	if (rc == 0)
		rc = out_flush(&o);
	if (rc == 0 && o.max_ts >= 0) /* the closing entry, as log_seg_seal_timeindex */
		rc = tidx_maybe_add(&o, o.max_ts, o.max_ts_off);
	if (rc == 0 && fsync(o.fd) < 0)
		rc = -errno;
	if (o.fd >= 0)
		close(o.fd);
	/* the indexes, then everything renamed to .swap, the .log last */
	if (rc == 0 && (rc = file_name(path, sizeof path, j->dir, base, 0, ".cleaned")) == 0)
		rc = write_file(path, o.oidx, o.noidx * 8);
	if (rc == 0 && (rc = file_name(path, sizeof path, j->dir, base, 1, ".cleaned")) == 0)
		rc = write_file(path, o.tidx, o.ntidx * 12);
	if (rc == 0 && ntxn > 0 && (rc = file_name(path, sizeof path, j->dir, base, 2, ".cleaned")) == 0)
		rc = write_file(path, txn, ntxn * LOG_TXNINDEX_ENTRY_SIZE);
	for (int kind = 0; rc == 0 && kind < 4; kind++) {
		if (kind == 2 && ntxn == 0)
			continue;
		char to_path[PATH_MAX];
		rc = file_name(path, sizeof path, j->dir, base, kind, ".cleaned");
		if (rc == 0)
			rc = file_name(to_path, sizeof to_path, j->dir, base, kind, ".swap");
		if (rc == 0 && rename(path, to_path) < 0)
			rc = -errno;
	}
	free(o.wbuf);
	free(o.oidx);
	free(o.tidx);
	free(txn);
	if (rc < 0) {
		unlink_outputs(j->dir, base, ".cleaned");
		unlink_outputs(j->dir, base, ".swap");
	}
	return rc;
}

int log_clean_run(log_clean_job *j)
{
	int64_t dirty = 0;
	for (size_t i = 0; i < j->nseg; i++)
		if (j->next_base[i] > j->first_dirty)
			dirty += j->segs[i]->size;
	offset_map m;
	int rc = map_init(&m, &j->cfg, dirty);
	if (rc < 0)
		return rc;
	size_t cap = (size_t)(j->cfg.io_buffer_bytes > 65536 ? j->cfg.io_buffer_bytes : 65536);
	uint8_t *buf = malloc(cap);
	proto_scratch sc;
	proto_scratch_init(&sc, CLEAN_SCRATCH_MAX);
	proto_writer w;
	proto_writer_init(&w);
	j->out_bases = calloc(j->nseg, sizeof *j->out_bases);
	if (!buf || !j->out_bases)
		rc = -ENOMEM;
	if (rc == 0)
		rc = build_map(j, &m, &buf, &cap, &sc);
	int64_t end = m.latest + 1;
	if (rc == 0 && end <= j->first_dirty)
		rc = -EAGAIN; /* nothing mapped */
	j->res.end_offset = end;
	j->res.map_utilization = m.nslots ? (double)m.count / (double)m.nslots : 0;
	/* the segments overlapping [0, end) are recopied, in groups
	 * (Kafka's groupSegmentsBySize) */
	size_t nold = 0;
	while (nold < j->nseg && j->segs[nold]->base_offset < end)
		nold++;
	for (size_t from = 0; rc == 0 && from < nold;) {
		size_t to = from + 1;
		int64_t bytes = j->segs[from]->size, ibytes = j->index_bytes[from];
		while (to < nold) {
			int64_t last = to + 1 < nold ? j->next_base[to] - 1 : end - 1;
			if (bytes + j->segs[to]->size > j->segment_bytes ||
			    ibytes + j->index_bytes[to] > j->max_index_bytes ||
			    (j->segs[to]->size > 0 && last - j->segs[from]->base_offset > INT32_MAX))
				break;
			bytes += j->segs[to]->size;
			ibytes += j->index_bytes[to];
			to++;
		}
		rc = clean_group(j, &m, from, to, &buf, &cap, &sc, &w);
		if (rc == 0)
			j->out_bases[j->nout++] = j->segs[from]->base_offset;
		from = to;
	}
	if (rc == 0)
		rc = log_io_fsync_dir(j->dir);
	j->nold = nold;
	j->res.nsegments_in = (int)nold;
	j->res.nsegments_out = (int)j->nout;
	if (rc < 0) {
		for (size_t k = 0; k < j->nout; k++)
			unlink_outputs(j->dir, j->out_bases[k], ".swap");
		j->nout = 0;
	}
	map_free(&m);
	free(buf);
	proto_scratch_free(&sc);
	proto_writer_free(&w);
	return rc;
}

/* ---- swap ---- */

static int note_deleted(log_clean_job *j, const char *path)
{
	char **v = realloc(j->deleted, (j->ndeleted + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	j->deleted = v;
	size_t n = strlen(path) + sizeof ".deleted";
	char *p = malloc(n);
	if (!p)
		return -ENOMEM;
	snprintf(p, n, "%s.deleted", path);
	j->deleted[j->ndeleted++] = p;
	return 0;
}

/* The renames of the swap (log_replace_segments' files callback). */
static int swap_files(void *arg)
{
	log_clean_job *j = arg;
	j->keep_files = true; /* from the first rename on, a failure is recovery's business */
	for (size_t i = 0; i < j->nold; i++) {
		for (int kind = 0; kind < 4; kind++) {
			char path[PATH_MAX];
			int rc = file_name(path, sizeof path, j->dir, j->segs[i]->base_offset, kind, "");
			if (rc < 0)
				return rc;
			rc = note_deleted(j, path);
			if (rc < 0)
				return rc;
			if (rename(path, j->deleted[j->ndeleted - 1]) < 0) {
				free(j->deleted[--j->ndeleted]);
				if (errno != ENOENT)
					return -errno;
			}
		}
	}
	for (size_t k = 0; k < j->nout; k++) {
		for (int kind = 0; kind < 4; kind++) {
			char from[PATH_MAX], to[PATH_MAX];
			int rc = file_name(from, sizeof from, j->dir, j->out_bases[k], kind, ".swap");
			if (rc == 0)
				rc = file_name(to, sizeof to, j->dir, j->out_bases[k], kind, "");
			if (rc < 0)
				return rc;
			if (rename(from, to) < 0 && !(errno == ENOENT && kind == 2))
				return -errno;
		}
	}
	j->keep_files = false;
	return 0;
}

int log_clean_end(log_partition *lp, log_clean_job *j, log_clean_result *result)
{
	if (!lp)
		return -ESTALE;
	if (j->nout == 0)
		return -EINVAL;
	int rc = log_replace_segments(lp, j->segs, j->nold, j->out_bases, j->nout, swap_files, j,
				      j->now_ms);
	if (rc < 0)
		return rc;
	j->swapped = true;
	*result = j->res;
	return 0;
}

void log_clean_job_free(log_clean_job *j)
{
	if (!j)
		return;
	if (!j->keep_files) {
		if (j->swapped) {
			for (size_t i = 0; i < j->ndeleted; i++)
				unlink(j->deleted[i]);
		} else {
			for (size_t k = 0; k < j->nout; k++)
				unlink_outputs(j->dir, j->out_bases[k], ".swap");
		}
		if (j->dir && (j->swapped || j->nout > 0))
			log_io_fsync_dir(j->dir);
	}
	for (size_t i = 0; i < j->ndeleted; i++)
		free(j->deleted[i]);
	free(j->deleted);
	for (size_t i = 0; j->segs && i < j->nseg; i++)
		log_segment_release(j->segs[i]);
	free(j->segs);
	free(j->next_base);
	free(j->index_bytes);
	free(j->pids);
	free(j->out_bases);
	free(j->dir);
	free(j);
}
