/*
 * producer_state.c - producer state of a partition (producer_state.h):
 * the hash table of producer entries, Kafka's sequence and epoch rules,
 * and the .snapshot files.
 */
#include "storage/producer_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/err.h"

#define SNAPSHOT_VERSION 1
#define MAX_SNAPSHOT_ENTRIES (1u << 26) /* refuse absurd counts before allocating */

int32_t log_seq_add(int32_t seq, int32_t n)
{
	if (seq > INT32_MAX - n)
		return seq - (INT32_MAX - n) - 1;
	return seq + n;
}

int32_t log_seq_sub(int32_t seq, int32_t n)
{
	if (seq < n)
		return INT32_MAX - (n - seq) + 1;
	return seq - n;
}

void log_pstate_init(log_producer_state *ps)
{
	memset(ps, 0, sizeof *ps);
	ps->last_expire_ms = -1;
}

void log_pstate_free(log_producer_state *ps)
{
	free(ps->slots);
	ps->slots = NULL;
	ps->cap = ps->n = 0;
	free(ps->txns);
	ps->txns = NULL;
	ps->ntxn = ps->txncap = 0;
}

void log_pstate_clear(log_producer_state *ps)
{
	for (size_t i = 0; i < ps->cap; i++)
		ps->slots[i].producer_id = -1;
	ps->n = 0;
	ps->ntxn = 0;
}

static size_t slot_of(const log_producer_state *ps, int64_t id)
{
	uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
	return (size_t)(h ^ (h >> 29)) & (ps->cap - 1);
}

static log_producer_entry *lookup(const log_producer_state *ps, int64_t id)
{
	if (ps->cap == 0 || id < 0)
		return NULL;
	for (size_t i = slot_of(ps, id);; i = (i + 1) & (ps->cap - 1)) {
		log_producer_entry *e = &ps->slots[i];
		if (e->producer_id == id)
			return e;
		if (e->producer_id < 0)
			return NULL;
	}
}

const log_producer_entry *log_pstate_find(const log_producer_state *ps, int64_t producer_id)
{
	return lookup(ps, producer_id);
}

static void insert_slot(log_producer_state *ps, const log_producer_entry *e)
{
	size_t i = slot_of(ps, e->producer_id);
	while (ps->slots[i].producer_id >= 0 && ps->slots[i].producer_id != e->producer_id)
		i = (i + 1) & (ps->cap - 1);
	if (ps->slots[i].producer_id < 0)
		ps->n++;
	ps->slots[i] = *e;
}

int log_pstate_reserve(log_producer_state *ps, size_t n)
{
	/* load factor at most 1/2 */
	if (n > SIZE_MAX / 4 - ps->n)
		return -ENOMEM;
	size_t need = (ps->n + n) * 2;
	if (need <= ps->cap)
		return 0;
	size_t cap = ps->cap ? ps->cap : 16;
	while (cap < need)
		cap *= 2;
	log_producer_entry *slots = malloc(cap * sizeof *slots);
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		slots[i].producer_id = -1;
	log_producer_entry *old = ps->slots;
	size_t oldcap = ps->cap;
	ps->slots = slots;
	ps->cap = cap;
	ps->n = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].producer_id >= 0)
			insert_slot(ps, &old[i]);
	free(old);
	return 0;
}

int log_pstate_put(log_producer_state *ps, const log_producer_entry *e)
{
	if (e->producer_id < 0)
		return -EINVAL;
	if (!lookup(ps, e->producer_id)) {
		int rc = log_pstate_reserve(ps, 1);
		if (rc < 0)
			return rc;
	}
	insert_slot(ps, e);
	return 0;
}

/* Remove the entry in slot i, shifting later entries of its probe run back
 * (no tombstones). */
static void remove_slot(log_producer_state *ps, size_t i)
{
	size_t mask = ps->cap - 1;
	ps->slots[i].producer_id = -1;
	ps->n--;
	for (size_t j = (i + 1) & mask; ps->slots[j].producer_id >= 0; j = (j + 1) & mask) {
		size_t home = slot_of(ps, ps->slots[j].producer_id);
		/* move j to i when its home is not in the cyclic range (i, j] */
		bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			ps->slots[i] = ps->slots[j];
			ps->slots[j].producer_id = -1;
			i = j;
		}
	}
}

void log_pentry_empty(log_producer_entry *e, int64_t producer_id)
{
	memset(e, 0, sizeof *e);
	e->producer_id = producer_id;
	e->epoch = -1;
	e->coordinator_epoch = -1;
	e->last_ts = -1;
	e->txn_first_offset = -1;
}

const log_producer_batch *log_pentry_last(const log_producer_entry *e)
{
	if (e->nbatches == 0)
		return NULL;
	return &e->batches[(e->head + e->nbatches - 1) % LOG_PRODUCER_BATCHES];
}

static void push_batch(log_producer_entry *e, const log_producer_batch *b)
{
	if (e->nbatches == LOG_PRODUCER_BATCHES) {
		e->batches[e->head] = *b;
		e->head = (uint8_t)((e->head + 1) % LOG_PRODUCER_BATCHES);
	} else {
		e->batches[(e->head + e->nbatches) % LOG_PRODUCER_BATCHES] = *b;
		e->nbatches++;
	}
}

static void set_epoch(log_producer_entry *e, int16_t epoch)
{
	if (e->epoch != epoch) {
		e->nbatches = 0;
		e->head = 0;
		e->epoch = epoch;
	}
}

void log_pentry_add_batch(log_producer_entry *e, const proto_batch_info *h, int64_t base_offset)
{
	set_epoch(e, h->producer_epoch);
	log_producer_batch b = {
		.first_seq = h->base_sequence,
		.last_seq = log_seq_add(h->base_sequence, h->last_offset_delta),
		.last_offset = base_offset + h->last_offset_delta,
		.offset_delta = h->last_offset_delta,
		.max_ts = h->max_timestamp,
	};
	push_batch(e, &b);
	e->last_ts = h->max_timestamp;
}

const log_producer_batch *log_pentry_find_duplicate(const log_producer_entry *e,
						    const proto_batch_info *h)
{
	if (h->producer_epoch != e->epoch)
		return NULL;
	int32_t last = log_seq_add(h->base_sequence, h->last_offset_delta);
	for (unsigned k = 0; k < e->nbatches; k++) {
		const log_producer_batch *b = &e->batches[(e->head + k) % LOG_PRODUCER_BATCHES];
		if (b->first_seq == h->base_sequence && b->last_seq == last)
			return b;
	}
	return NULL;
}

static bool in_sequence(int32_t last_seq, int32_t next_seq)
{
	return (int64_t)next_seq == (int64_t)last_seq + 1 || (next_seq == 0 && last_seq == INT32_MAX);
}

int log_pentry_check(const log_producer_entry *e, int16_t orig_epoch, const proto_batch_info *h)
{
	/* checkProducerEpoch */
	if (h->producer_epoch < e->epoch)
		return LOG_ERR_INVALID_PRODUCER_EPOCH;
	/* checkSequence */
	if (h->producer_epoch != e->epoch) {
		if (h->base_sequence != 0 && e->epoch != -1)
			return LOG_ERR_OUT_OF_ORDER_SEQUENCE;
		return 0;
	}
	const log_producer_batch *last = log_pentry_last(e);
	int32_t last_seq = last ? last->last_seq : -1;
	if (orig_epoch == -1 || in_sequence(last_seq, h->base_sequence))
		return 0;
	return LOG_ERR_OUT_OF_ORDER_SEQUENCE;
}

int log_pentry_check_marker(const log_producer_entry *e, int16_t epoch, int32_t coordinator_epoch)
{
	if (epoch < e->epoch)
		return LOG_ERR_INVALID_PRODUCER_EPOCH;
	if (coordinator_epoch < e->coordinator_epoch)
		return LOG_ERR_TRANSACTION_COORDINATOR_FENCED;
	return 0;
}

void log_pentry_end_txn(log_producer_entry *e, int16_t epoch, int32_t coordinator_epoch, bool commit,
			int64_t offset, int64_t ts, log_completed_txn *done)
{
	done->producer_id = -1;
	done->first_offset = -1;
	done->last_offset = offset;
	done->aborted = !commit;
	if (e->txn_first_offset >= 0) {
		done->producer_id = e->producer_id;
		done->first_offset = e->txn_first_offset;
	}
	set_epoch(e, epoch);
	e->txn_first_offset = -1;
	e->coordinator_epoch = coordinator_epoch;
	e->last_ts = ts;
}

int log_pstate_txn_reserve(log_producer_state *ps, size_t n)
{
	if (n > SIZE_MAX / 2 / sizeof *ps->txns - ps->ntxn)
		return -ENOMEM;
	if (ps->ntxn + n <= ps->txncap)
		return 0;
	size_t cap = ps->txncap ? ps->txncap : 8;
	while (cap < ps->ntxn + n)
		cap *= 2;
	log_txn *v = realloc(ps->txns, cap * sizeof *v);
	if (!v)
		return -ENOMEM;
	ps->txns = v;
	ps->txncap = cap;
	return 0;
}

void log_pstate_txn_begin(log_producer_state *ps, int64_t producer_id, int64_t first_offset)
{
	if (ps->ntxn >= ps->txncap)
		return; /* not reserved: a caller bug, keep memory safe */
	size_t i = ps->ntxn; /* new transactions come last, in offset order */
	while (i > 0 && ps->txns[i - 1].first_offset > first_offset) {
		ps->txns[i] = ps->txns[i - 1];
		i--;
	}
	ps->txns[i] = (log_txn){ .producer_id = producer_id, .first_offset = first_offset, .last_offset = -1 };
	ps->ntxn++;
}

void log_pstate_txn_complete(log_producer_state *ps, int64_t producer_id, int64_t last_offset)
{
	for (size_t i = 0; i < ps->ntxn; i++)
		if (ps->txns[i].producer_id == producer_id && ps->txns[i].last_offset < 0) {
			ps->txns[i].last_offset = last_offset;
			return;
		}
}

void log_pstate_txn_on_hw(log_producer_state *ps, int64_t hw)
{
	size_t k = 0;
	for (size_t i = 0; i < ps->ntxn; i++)
		if (ps->txns[i].last_offset < 0 || ps->txns[i].last_offset >= hw)
			ps->txns[k++] = ps->txns[i];
	ps->ntxn = k;
}

int64_t log_pstate_first_unstable(const log_producer_state *ps)
{
	return ps->ntxn ? ps->txns[0].first_offset : -1;
}

int64_t log_pstate_lso_for(const log_producer_state *ps, const log_completed_txn *t)
{
	for (size_t i = 0; i < ps->ntxn; i++)
		if (ps->txns[i].last_offset < 0 && ps->txns[i].producer_id != t->producer_id)
			return ps->txns[i].first_offset;
	return t->last_offset + 1;
}

static int replay(log_producer_state *ps, const proto_batch_info *h, bool marker_known, bool commit,
		  int32_t coordinator_epoch, log_completed_txn *done)
{
	int64_t end = h->base_offset + h->last_offset_delta + 1;
	done->producer_id = -1;
	if (h->producer_id >= 0) {
		int rc = log_pstate_txn_reserve(ps, 1);
		if (rc < 0)
			return rc;
		log_producer_entry *cur = lookup(ps, h->producer_id);
		log_producer_entry e;
		if (cur)
			e = *cur;
		else
			log_pentry_empty(&e, h->producer_id);
		bool begins = false;
		if (h->attributes & PROTO_ATTR_CONTROL) {
			/* an end transaction marker: the transaction is over */
			log_pentry_end_txn(&e, h->producer_epoch, marker_known ? coordinator_epoch : e.coordinator_epoch,
					   commit, h->base_offset, h->max_timestamp, done);
		} else {
			log_pentry_add_batch(&e, h, h->base_offset);
			if ((h->attributes & PROTO_ATTR_TRANSACTIONAL) && e.txn_first_offset < 0) {
				e.txn_first_offset = h->base_offset;
				begins = true;
			}
		}
		rc = log_pstate_put(ps, &e);
		if (rc < 0)
			return rc;
		if (begins)
			log_pstate_txn_begin(ps, h->producer_id, h->base_offset);
		if (done->producer_id >= 0)
			log_pstate_txn_complete(ps, done->producer_id, done->last_offset);
	}
	if (end > ps->map_end_offset)
		ps->map_end_offset = end;
	return 0;
}

int log_pstate_replay(log_producer_state *ps, const proto_batch_info *h)
{
	log_completed_txn done;
	return replay(ps, h, false, true, -1, &done);
}

int log_pstate_replay_marker(log_producer_state *ps, const proto_batch_info *h, bool commit,
			     int32_t coordinator_epoch, log_completed_txn *done)
{
	return replay(ps, h, true, commit, coordinator_epoch, done);
}

void log_pstate_expire(log_producer_state *ps, int64_t now_ms, int64_t expiration_ms)
{
	ps->last_expire_ms = now_ms;
	for (size_t i = 0; i < ps->cap;) {
		log_producer_entry *e = &ps->slots[i];
		/* last_ts <= now - expiration: now - last_ts overflows for a
		 * timestamp read from a corrupt segment (fuzz_recover) */
		if (e->producer_id >= 0 && e->txn_first_offset < 0 && e->last_ts <= now_ms - expiration_ms)
			remove_slot(ps, i); /* slot i now holds a later entry: look again */
		else
			i++;
	}
}

/* ---- snapshots ---- */

static void put16(uint8_t *p, int16_t v)
{
	p[0] = (uint8_t)((uint16_t)v >> 8);
	p[1] = (uint8_t)v;
}

int log_pstate_write_snapshot(log_producer_state *ps, const char *dir, int64_t offset, bool sync)
{
	size_t len = LOG_SNAPSHOT_HEADER_SIZE + ps->n * LOG_SNAPSHOT_ENTRY_SIZE;
	uint8_t *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	put16(buf, SNAPSHOT_VERSION);
	log_put_be32(buf + 6, (uint32_t)ps->n);
	uint8_t *p = buf + LOG_SNAPSHOT_HEADER_SIZE;
	for (size_t i = 0; i < ps->cap; i++) {
		const log_producer_entry *e = &ps->slots[i];
		if (e->producer_id < 0)
			continue;
		const log_producer_batch *b = log_pentry_last(e);
		log_put_be64(p, (uint64_t)e->producer_id);
		put16(p + 8, e->epoch);
		log_put_be32(p + 10, (uint32_t)(b ? b->last_seq : -1));
		log_put_be64(p + 14, (uint64_t)(b ? b->last_offset : -1));
		log_put_be32(p + 22, (uint32_t)(b ? b->offset_delta : 0));
		log_put_be64(p + 26, (uint64_t)e->last_ts);
		log_put_be32(p + 34, (uint32_t)e->coordinator_epoch);
		log_put_be64(p + 38, (uint64_t)e->txn_first_offset);
		p += LOG_SNAPSHOT_ENTRY_SIZE;
	}
	log_put_be32(buf + 2, proto_crc32c(0, buf + 6, len - 6));
	char name[32];
	snprintf(name, sizeof name, "%020lld%s", (long long)offset, LOG_SNAPSHOT_SUFFIX);
	int rc = log_io_write_atomic(dir, name, buf, len, false);
	if (rc == 0 && sync) {
		/* fsync the file (the directory entry is the caller's to sync) */
		char path[PATH_MAX];
		rc = log_io_path(path, sizeof path, "%s/%s", dir, name);
		int fd = rc == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (rc == 0 && fd < 0)
			rc = -errno;
		if (fd >= 0) {
			if (fsync(fd) < 0)
				rc = -errno;
			close(fd);
		}
	}
	free(buf);
	if (rc == 0)
		ps->snap_offset = offset;
	return rc;
}

int log_pstate_read_snapshot(log_producer_state *ps, const char *path, int64_t offset,
			     int64_t now_ms, int64_t expiration_ms)
{
	log_pstate_clear(ps);
	char *buf;
	size_t len;
	int rc = log_io_read_small(path, LOG_SNAPSHOT_HEADER_SIZE +
					 (size_t)MAX_SNAPSHOT_ENTRIES * LOG_SNAPSHOT_ENTRY_SIZE,
				   &buf, &len);
	if (rc == -EFBIG)
		return LOG_ERR_CORRUPT;
	if (rc < 0)
		return rc;
	const uint8_t *p = (const uint8_t *)buf;
	rc = LOG_ERR_CORRUPT;
	if (len < LOG_SNAPSHOT_HEADER_SIZE)
		goto out;
	int16_t version = (int16_t)(((uint16_t)p[0] << 8) | p[1]);
	uint32_t count = log_be32(p + 6);
	if (version != SNAPSHOT_VERSION || count > MAX_SNAPSHOT_ENTRIES ||
	    len != LOG_SNAPSHOT_HEADER_SIZE + (size_t)count * LOG_SNAPSHOT_ENTRY_SIZE ||
	    log_be32(p + 2) != proto_crc32c(0, p + 6, len - 6))
		goto out;
	rc = log_pstate_reserve(ps, count);
	if (rc < 0)
		goto out;
	p += LOG_SNAPSHOT_HEADER_SIZE;
	for (uint32_t i = 0; i < count; i++, p += LOG_SNAPSHOT_ENTRY_SIZE) {
		log_producer_entry e;
		log_pentry_empty(&e, (int64_t)log_be64(p));
		e.epoch = (int16_t)(((uint16_t)p[8] << 8) | p[9]);
		int32_t last_seq = (int32_t)log_be32(p + 10);
		int64_t last_offset = (int64_t)log_be64(p + 14);
		int32_t delta = (int32_t)log_be32(p + 22);
		e.last_ts = (int64_t)log_be64(p + 26);
		e.coordinator_epoch = (int32_t)log_be32(p + 34);
		e.txn_first_offset = (int64_t)log_be64(p + 38);
		if (e.producer_id < 0 || (last_offset >= 0 && (last_seq < 0 || delta < 0))) {
			log_pstate_clear(ps);
			rc = LOG_ERR_CORRUPT;
			goto out;
		}
		if (e.txn_first_offset < 0 && e.last_ts <= now_ms - expiration_ms) /* no overflow */
			continue;
		if (last_offset >= 0) {
			log_producer_batch b = {
				.first_seq = log_seq_sub(last_seq, delta),
				.last_seq = last_seq,
				.last_offset = last_offset,
				.offset_delta = delta,
				.max_ts = e.last_ts,
			};
			push_batch(&e, &b);
		}
		if (e.txn_first_offset >= 0) {
			rc = log_pstate_txn_reserve(ps, 1);
			if (rc < 0) {
				log_pstate_clear(ps);
				goto out;
			}
			log_pstate_txn_begin(ps, e.producer_id, e.txn_first_offset);
		}
		insert_slot(ps, &e);
	}
	ps->map_end_offset = offset;
	ps->snap_offset = offset;
	rc = 0;
out:
	free(buf);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* "<20 digits>.snapshot" -> offset */
static bool snapshot_name(const char *name, int64_t *off)
{
	if (strlen(name) != 20 + strlen(LOG_SNAPSHOT_SUFFIX) || strcmp(name + 20, LOG_SNAPSHOT_SUFFIX) != 0)
		return false;
	int64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - (name[i] - '0')) / 10)
			return false;
		v = v * 10 + (name[i] - '0');
	}
	*off = v;
	return true;
}

int log_pstate_list_snapshots(const char *dir, int64_t **offsets, size_t *n)
{
	*offsets = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int64_t *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		int64_t off;
		if (!snapshot_name(de->d_name, &off))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 8;
			int64_t *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[cnt++] = off;
	}
	closedir(d);
	if (rc < 0) {
		free(v);
		return rc;
	}
	if (cnt > 1)
		qsort(v, cnt, sizeof *v, cmp_i64);
	*offsets = v;
	*n = cnt;
	return 0;
}

int log_pstate_remove_snapshot(const char *dir, int64_t offset)
{
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/%020lld%s", dir, (long long)offset, LOG_SNAPSHOT_SUFFIX);
	if (rc < 0)
		return rc;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
