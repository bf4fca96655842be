/*
 * store.c - groups and committed offsets in __consumer_offsets (store.h):
 * topic creation, loading and dropping partitions as this broker's
 * leadership of them changes, writes and the offset expiry timer.
 * Layouts are in store_codec.c; rules follow Kafka's GroupCoordinator
 * (GroupMetadataManager / OffsetMetadataManager, CoordinatorRecordHelpers).
 */
#include "broker/group/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/ctl_wait.h"
#include "broker/group/store_codec.h"
#include "broker/group/txn_offsets.h"
#include "broker/internal_topic.h"
#include "broker/loop.h"
#include "broker/partitions.h"
#include "broker/server.h"
#include "protocol/batch.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/log.h"

/* The batch being built goes to gc->batch_buf, one key/value pair at a
 * time through gc->kv_buf. */

static brk_topic *offsets_topic(const grp_coordinator *gc)
{
	if (!gc->partitions)
		return NULL;
	return brk_topic_find(gc->partitions, GRP_OFFSETS_TOPIC, (int32_t)strlen(GRP_OFFSETS_TOPIC));
}

/* ---- writing ---- */

/* Start a batch in gc->batch_buf. */
static void batch_begin(grp_coordinator *gc, proto_batch_builder *b)
{
	proto_writer_reset(&gc->batch_buf);
	proto_batch_builder_begin(b, &gc->batch_buf);
}

/* Add the pair encoded in gc->kv_buf: key in [0, klen), value after it
 * (none: a tombstone). */
static void batch_add_kv(grp_coordinator *gc, proto_batch_builder *b, int64_t now_ms, size_t klen,
			 bool tombstone)
{
	proto_writer *kv = &gc->kv_buf;
	if (kv->err) {
		gc->batch_buf.err = kv->err;
		return;
	}
	proto_batch_builder_add(b, now_ms, kv->buf, (int32_t)klen, tombstone ? NULL : kv->buf + klen,
				tombstone ? -1 : (int32_t)(kv->len - klen));
}

static void add_offset_record(grp_coordinator *gc, proto_batch_builder *b, proto_str group,
			      const grp_store_offset *it, int64_t now_ms)
{
	proto_writer *kv = &gc->kv_buf;
	proto_writer_reset(kv);
	grp_offset_key_encode(kv, group, it->topic, it->partition);
	size_t klen = kv->len;
	if (it->value)
		grp_offset_value_encode(kv, it->value);
	batch_add_kv(gc, b, now_ms, klen, it->value == NULL);
}

/*
 * The Kafka error for a batch that was too large (Kafka 4.x
 * CoordinatorOperationExceptionHelper.handleOperationException, used by
 * every group coordinator write including commit-offset, and
 * GroupMetadataManager.appendGroupMetadataErrorToResponseError for the
 * SyncGroup store: MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE and
 * INVALID_FETCH_SIZE become UNKNOWN_SERVER_ERROR). The pre-4.0 coordinator
 * (GroupMetadataManager.storeOffsets) answered INVALID_COMMIT_OFFSET_SIZE
 * for offset commits instead; Kafka 4.x no longer does.
 */
#define BATCH_TOO_LARGE BRK_INTERNAL_TOO_LARGE
static int too_large_error(void) { return KERR_UNKNOWN_SERVER_ERROR; }

/* Where a batch went: the __consumer_offsets partition and the offset of
 * its first record. */
typedef struct appended {
	int32_t partition;
	int64_t base_offset;
} appended;

/* Finish the batch and append it to g's partition (brk_internal_append),
 * recorded as the partition's last write; *where (may be NULL) gets where
 * it went. Returns a Kafka error code or BATCH_TOO_LARGE: no
 * __consumer_offsets is COORDINATOR_NOT_AVAILABLE, a partition not loaded
 * here NOT_COORDINATOR. */
static int batch_append(grp_group *g, proto_batch_builder *b, int64_t now_ms, appended *where)
{
	grp_coordinator *gc = g->coord;
	int32_t size = proto_batch_builder_finish(b);
	if (size < 0)
		return KERR_UNKNOWN_SERVER_ERROR;
	grp_partition *ps = grp_partition_state(gc, g->partition);
	if (!ps || !gc->partitions)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (!ps->loaded)
		return KERR_NOT_COORDINATOR;
	brk_partition *p = ps->p;
	/* The loop is the log's only writer: the batch starts at the log end. */
	int64_t base = p->log ? log_end_offset(p->log) : -1;
	brk_hw_mark mark;
	int32_t glen = (int32_t)strlen(g->group_id);
	int err = brk_internal_append(gc->partitions, p, gc->batch_buf.buf + b->start, size,
				      g->group_id, glen, now_ms, &mark);
	if (err != KERR_NONE)
		return err;
	ps->last_write = mark;
	if (where)
		*where = (appended){ g->partition, base };
	return KERR_NONE;
}

/* items[i]'s value with the offset of its record (base + i). */
static grp_offset with_record_offset(const grp_store_offset *it, int64_t base, int32_t i)
{
	grp_offset v = *it->value;
	v.record_offset = base >= 0 ? base + i : -1;
	return v;
}

int grp_store_write_offsets(grp_group *g, const grp_store_offset *items, int32_t n, int64_t now_ms)
{
	if (n <= 0)
		return KERR_NONE;
	grp_coordinator *gc = g->coord;
	proto_str group = proto_cstr(g->group_id);
	proto_batch_builder b;
	batch_begin(gc, &b);
	for (int32_t i = 0; i < n; i++)
		add_offset_record(gc, &b, group, &items[i], now_ms);
	appended at;
	int err = batch_append(g, &b, now_ms, &at);
	if (err == BATCH_TOO_LARGE)
		return too_large_error();
	if (err)
		return err;
	/* The topics may point into g->offsets: each entry's own topic is
	 * freed only when that entry is deleted, after its last use. A
	 * tombstone also removes the partition's pending transactional
	 * offsets (Kafka's OffsetMetadataManager.replay). */
	for (int32_t i = 0; i < n; i++) {
		const grp_store_offset *it = &items[i];
		if (!it->value) {
			grp_txn_forget(g->txns, it->topic.ptr, it->topic.len, it->partition);
			grp_offsets_delete(g->offsets, it->topic.ptr, it->topic.len, it->partition);
			continue;
		}
		grp_offset v = with_record_offset(it, at.base_offset, i);
		if (grp_offsets_put(g->offsets, it->topic.ptr, it->topic.len, it->partition, &v) < 0)
			err = KERR_UNKNOWN_SERVER_ERROR;
	}
	return err;
}

int grp_store_write_txn_offsets(grp_group *g, int64_t producer_id, int16_t producer_epoch,
				const grp_store_offset *items, int32_t n, int64_t now_ms)
{
	if (n <= 0)
		return KERR_NONE;
	grp_coordinator *gc = g->coord;
	proto_str group = proto_cstr(g->group_id);
	proto_batch_builder b;
	batch_begin(gc, &b);
	/* Kafka's coordinator: the request's producer id and epoch, base
	 * sequence 0, transactional. */
	proto_batch_builder_set_producer(&b, producer_id, producer_epoch, 0, true);
	for (int32_t i = 0; i < n; i++)
		if (items[i].value)
			add_offset_record(gc, &b, group, &items[i], now_ms);
	appended at;
	int err = batch_append(g, &b, now_ms, &at);
	if (err == BATCH_TOO_LARGE)
		return too_large_error();
	if (err)
		return err;
	for (int32_t i = 0, rec = 0; i < n; i++) {
		const grp_store_offset *it = &items[i];
		if (!it->value)
			continue;
		grp_offset v = with_record_offset(it, at.base_offset, rec++);
		if (grp_txn_put(g->txns, producer_id, at.partition, it->topic.ptr, it->topic.len,
				it->partition, &v) < 0)
			err = KERR_UNKNOWN_SERVER_ERROR;
	}
	grp_txn_track(g);
	return err;
}

int grp_store_write_group(grp_coordinator *gc, grp_group *g)
{
	int64_t now = brk_wall_ms();
	proto_str group = proto_cstr(g->group_id);
	proto_batch_builder b;
	batch_begin(gc, &b);
	proto_writer *kv = &gc->kv_buf;
	proto_writer_reset(kv);
	grp_group_key_encode(kv, group);
	size_t klen = kv->len;
	grp_group_value_encode(kv, g);
	batch_add_kv(gc, &b, now, klen, false);
	int err = batch_append(g, &b, now, NULL);
	return err == BATCH_TOO_LARGE ? too_large_error() : err;
}

int grp_store_delete_group(grp_group *g)
{
	grp_coordinator *gc = g->coord;
	int64_t now = brk_wall_ms();
	proto_str group = proto_cstr(g->group_id);
	proto_batch_builder b;
	batch_begin(gc, &b);
	const char *topic;
	int32_t tlen, partition;
	for (int32_t i = 0; grp_offsets_at(g->offsets, i, &topic, &tlen, &partition); i++) {
		grp_store_offset it = { proto_str_of(topic, tlen), partition, NULL };
		add_offset_record(gc, &b, group, &it, now);
	}
	/* Pending transactional offsets get a tombstone too, once per
	 * partition not committed (Kafka's OffsetMetadataManager
	 * .deleteAllOffsets). */
	const grp_offsets *po;
	for (int32_t t = 0; (po = grp_txn_at(g->txns, t, NULL)) != NULL; t++) {
		for (int32_t i = 0; grp_offsets_at(po, i, &topic, &tlen, &partition); i++) {
			bool seen = grp_offsets_get(g->offsets, topic, tlen, partition) != NULL;
			const grp_offsets *earlier;
			for (int32_t u = 0; !seen && u < t; u++)
				seen = (earlier = grp_txn_at(g->txns, u, NULL)) != NULL &&
				       grp_offsets_get(earlier, topic, tlen, partition) != NULL;
			if (seen)
				continue;
			grp_store_offset it = { proto_str_of(topic, tlen), partition, NULL };
			add_offset_record(gc, &b, group, &it, now);
		}
	}
	proto_writer_reset(&gc->kv_buf);
	grp_group_key_encode(&gc->kv_buf, group);
	batch_add_kv(gc, &b, now, gc->kv_buf.len, true);
	int err = batch_append(g, &b, now, NULL);
	if (err == BATCH_TOO_LARGE)
		err = too_large_error();
	if (err == KERR_NONE) {
		grp_offsets_clear(g->offsets);
		grp_txn_forget_all(g->txns);
	}
	return err;
}

/* ---- expiry ---- */

void grp_store_expire(grp_coordinator *gc, int64_t now_ms)
{
	int64_t retention_ms = (int64_t)gc->cfg->offsets_retention_minutes * 60000;
	grp_store_offset *items = NULL;
	int32_t cap = 0;
	char **dead = NULL;
	int32_t ndead = 0, dead_cap = 0;
	grp_group *g;
	for (int32_t gi = 0; (g = grp_at(gc, gi)) != NULL; gi++) {
		if (g->state != GRP_EMPTY && g->state != GRP_STABLE)
			continue;
		const grp_partition *ps = grp_partition_state(gc, g->partition);
		if (ps && !ps->loaded)
			continue; /* loading: not served yet */
		int32_t count = grp_offsets_count(g->offsets);
		if (count > cap) {
			grp_store_offset *ni = realloc(items, (size_t)count * sizeof(*ni));
			if (!ni)
				break;
			items = ni;
			cap = count;
		}
		int32_t n = 0;
		const char *topic;
		int32_t tlen, partition;
		const grp_offset *o;
		for (int32_t i = 0; (o = grp_offsets_at(g->offsets, i, &topic, &tlen, &partition)); i++) {
			int sub = g->state == GRP_STABLE ? grp_subscribed_to_topic(g, topic, tlen) : -1;
			/* Not while a transactional offset for it is pending
			 * (Kafka's OffsetMetadataManager.cleanupExpiredOffsets). */
			if (grp_offset_expired(o, g->state, g->state_timestamp_ms, sub, retention_ms, now_ms) &&
			    !grp_txn_pending(g->txns, topic, tlen, partition))
				items[n++] = (grp_store_offset){ proto_str_of(topic, tlen), partition, NULL };
		}
		if (n > 0) {
			int err = grp_store_write_offsets(g, items, n, now_ms);
			if (err)
				fprintf(stderr, "samsa: group %s: expiring %d offsets failed (error %d)\n",
					g->group_id, (int)n, err);
		}
		/* A group with open transactions stays (Kafka: "we don't want
		 * to remove the group if there are ongoing transactions"). */
		if (g->state == GRP_EMPTY && grp_offsets_count(g->offsets) == 0 &&
		    grp_txn_set_count(g->txns) == 0) {
			if (ndead == dead_cap) {
				int32_t nc = dead_cap ? dead_cap * 2 : 16;
				char **nd = realloc(dead, (size_t)nc * sizeof(*nd));
				if (!nd)
					continue;
				dead = nd;
				dead_cap = nc;
			}
			dead[ndead] = strdup(g->group_id);
			if (dead[ndead])
				ndead++;
		}
	}
	/* Empty groups without offsets are Dead: their tombstone, then out
	 * of the registry (Kafka's cleanupGroupMetadata). */
	for (int32_t i = 0; i < ndead; i++) {
		g = grp_find(gc, dead[i], (int32_t)strlen(dead[i]));
		if (g && g->state == GRP_EMPTY && grp_offsets_count(g->offsets) == 0 &&
		    grp_txn_set_count(g->txns) == 0 && grp_store_delete_group(g) == KERR_NONE)
			grp_remove(g);
		free(dead[i]);
	}
	free(dead);
	free(items);
}

static void on_expiry_timer(brk_loop *loop, void *arg)
{
	grp_coordinator *gc = arg;
	gc->expiry_timer = 0;
	grp_store_expire(gc, brk_wall_ms());
	int64_t interval = gc->cfg->offsets_retention_check_interval_ms;
	gc->expiry_timer = brk_timer_add(loop, interval > 0 ? interval : 600000, on_expiry_timer, gc);
}

/* ---- loading ----
 *
 * A partition is loaded in slices on the loop (Kafka's
 * GroupMetadataManager.loadGroupsAndOffsets, which runs on a scheduler
 * thread): each loop iteration the load timer applies about
 * gc->load_slice records of the partition at the head of the queue, so
 * requests for every other group, partition and API are served between
 * two slices. Loads run one at a time, in the order the partitions were
 * elected, as Kafka's single loader thread.
 *
 * A load goes through two phases:
 *  1. reading: batches from the log start offset to the log end offset
 *     (looked at again as the reader runs dry) are applied to staged
 *     groups (the last GroupMetadataValue, the committed offsets, the
 *     pending transactional offsets per producer);
 *  2. installing: the staged groups go into the registry, a slice at a
 *     time (their offset maps move, their metadata is decoded into
 *     members); once all are in, the members' session timers start and the
 *     partition is loaded (grp_partition_loaded).
 * Until then every request for the partition's groups answers
 * COORDINATOR_LOAD_IN_PROGRESS (grp_coordinator_error), so nothing else
 * touches a staged or installed group, and the coordinator writes nothing
 * there (batch_append needs the partition loaded). What others append
 * meanwhile is read by the load: end transaction markers at any time (the
 * marker observer leaves a loading partition alone, grp_txn_completed);
 * records produced by an admin client during phase 2 are not applied, as
 * Kafka applies none produced to a loaded partition.
 *
 * Why slices on the loop and not a thread: the log, the registry, the
 * partition's leadership and the transaction markers all belong to the
 * loop thread; a loader thread would need the log's segment list to hold
 * still under retention, compaction and appends, a hand-over of its
 * result, and a way to be cancelled and joined when leadership moves. On
 * the loop, a leadership change simply drops the load between two slices,
 * and a marker appended meanwhile is read in order. The price is a slice's
 * latency (about a millisecond) added to the requests that arrive during
 * a load, and no second core for the load itself.
 */

/* What the log says about one group so far. */
typedef struct staged {
	char *id; /* owned, the map's key */
	int32_t len;
	uint8_t *meta; /* last GroupMetadataValue (owned), NULL after a tombstone */
	int32_t meta_len;
	grp_offsets *offsets;
	grp_txn_set *txns;  /* pending transactional offsets */
	grp_group *group;   /* once installed: the registry's group, which owns
			     * offsets and txns now */
} staged;

/* A producer with pending offsets in a staged group, until its marker. */
typedef struct open_txn {
	int64_t producer_id;
	staged *group;
} open_txn;

/* One partition being loaded. */
typedef struct grp_load {
	grp_coordinator *gc;
	brk_partition *p;
	int32_t index, leader_epoch;
	bool quiet;                /* a start-up load: summed up in one line */
	brk_internal_reader rd;
	brk_strmap staged;         /* group id -> staged (owned) */
	open_txn *open;            /* transactions open in the partition */
	int32_t nopen, open_cap;
	bool read_done;            /* phase 2 */
	int32_t installed;         /* staged entries handled by phase 2 */
	grp_group **restored;      /* installed groups with members */
	int32_t nrestored, restored_cap;
	int32_t ngroups;
	int64_t noffsets;
	int64_t skipped;           /* malformed records and batches */
	int64_t late;              /* records produced during phase 2, not applied */
	int64_t start_ms;          /* monotonic */
	proto_arena arena;         /* decoding GroupMetadataValues */
	struct grp_load *next;     /* the queue */
} grp_load;

/* What the loads found, for the log lines. */
typedef struct load_stats {
	int32_t partitions;
	int32_t ngroups;
	int64_t noffsets;
} load_stats;

struct grp_loader {
	grp_load *head, *tail;     /* the queue: head loads now */
	uint64_t timer;            /* the next slice, 0 = none */
	load_stats startup;        /* the start-up loads done so far */
	int32_t startup_left;      /* start-up loads queued and not done */
	int64_t startup_ms;        /* monotonic, when they were queued */
};

/* The staged group of id, created when absent; NULL on allocation failure. */
static staged *stage_get(grp_load *l, const char *id, int32_t len)
{
	staged *g = brk_strmap_get(&l->staged, id, len);
	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->id = malloc((size_t)len + 1);
	g->offsets = grp_offsets_new();
	g->txns = grp_txn_set_new();
	if (g->id) {
		memcpy(g->id, id, (size_t)len);
		g->id[len] = '\0';
	}
	g->len = len;
	if (!g->id || !g->offsets || !g->txns || brk_strmap_put(&l->staged, g->id, len, g) < 0) {
		free(g->id);
		grp_offsets_free(g->offsets);
		grp_txn_set_free(g->txns);
		free(g);
		return NULL;
	}
	return g;
}

static void load_free(grp_load *l)
{
	staged *g;
	for (int32_t i = 0; (g = brk_strmap_at(&l->staged, i)) != NULL; i++) {
		free(g->id);
		free(g->meta);
		if (!g->group) {
			grp_offsets_free(g->offsets);
			grp_txn_set_free(g->txns);
		}
		free(g);
	}
	brk_strmap_free(&l->staged);
	brk_internal_reader_free(&l->rd);
	proto_arena_free(&l->arena);
	free(l->open);
	free(l->restored);
	free(l);
}

/* Note that producer_id has pending offsets in staged group g. */
static int note_open(grp_load *l, int64_t producer_id, staged *g)
{
	for (int32_t i = 0; i < l->nopen; i++)
		if (l->open[i].producer_id == producer_id && l->open[i].group == g)
			return 0;
	if (l->nopen == l->open_cap) {
		int32_t cap = l->open_cap ? l->open_cap * 2 : 16;
		open_txn *n = realloc(l->open, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->open = n;
		l->open_cap = cap;
	}
	l->open[l->nopen++] = (open_txn){ producer_id, g };
	return 0;
}

/* Apply one record of __consumer_offsets; producer_id is the producer of
 * a transactional batch (its offsets are pending), -1 otherwise (Kafka's
 * OffsetMetadataManager.replay). Returns 0, 1 when the record was
 * malformed and skipped, or -ENOMEM. */
static int apply_record(grp_load *l, const proto_record *r, int64_t producer_id)
{
	grp_store_key key;
	int rc = grp_store_key_decode(r->key, r->key_len, &key);
	if (rc == PROTO_ERR_VERSION)
		return 0; /* another coordinator's record type: not ours */
	if (rc != 0)
		return 1;
	staged *g = stage_get(l, key.group.ptr, key.group.len);
	if (!g)
		return -ENOMEM;
	if (key.version < GRP_KEY_GROUP_METADATA) {
		if (r->value_len < 0) {
			grp_offsets_delete(g->offsets, key.topic.ptr, key.topic.len, key.partition);
			grp_txn_forget(g->txns, key.topic.ptr, key.topic.len, key.partition);
			return 0;
		}
		grp_offset v;
		if (grp_offset_value_decode(r->value, r->value_len, &v) != 0)
			return 1;
		v.record_offset = r->offset;
		if (producer_id < 0)
			return grp_offsets_put(g->offsets, key.topic.ptr, key.topic.len, key.partition,
					       &v) < 0
				       ? -ENOMEM
				       : 0;
		if (grp_txn_put(g->txns, producer_id, l->index, key.topic.ptr, key.topic.len,
				key.partition, &v) < 0)
			return -ENOMEM;
		return note_open(l, producer_id, g);
	}
	free(g->meta);
	g->meta = NULL;
	g->meta_len = 0;
	if (r->value_len < 0)
		return 0;
	g->meta = malloc(r->value_len > 0 ? (size_t)r->value_len : 1);
	if (!g->meta)
		return -ENOMEM;
	if (r->value_len > 0)
		memcpy(g->meta, r->value, (size_t)r->value_len);
	g->meta_len = r->value_len;
	return 0;
}

/* A control batch: an end transaction marker applies (commit) or drops
 * (abort) the producer's pending offsets in the groups of this partition
 * (Kafka's replayEndTransactionMarker while loading), staged or already
 * installed (their maps are the same). */
static int load_marker(grp_load *l, const proto_batch_info *bi, const uint8_t *batch)
{
	int16_t type;
	int32_t coordinator_epoch;
	if (proto_control_batch_parse(batch, (size_t)bi->size, &type, &coordinator_epoch) != 0) {
		l->skipped++;
		return 0;
	}
	if (type != PROTO_CONTROL_COMMIT && type != PROTO_CONTROL_ABORT)
		return 0; /* Kafka ignores other control records */
	int rc = 0;
	for (int32_t i = 0; i < l->nopen;) {
		if (l->open[i].producer_id != bi->producer_id) {
			i++;
			continue;
		}
		staged *g = l->open[i].group;
		if (grp_txn_complete(g->txns, g->offsets, bi->producer_id, l->index,
				     type == PROTO_CONTROL_COMMIT) < 0)
			rc = -ENOMEM;
		if (g->group)
			grp_txn_track(g->group);
		l->open[i] = l->open[--l->nopen];
	}
	return rc;
}

/* Apply the records of one batch. Returns the records it held (the
 * slice's budget) or -ENOMEM. */
static int64_t load_batch(grp_load *l, const proto_batch_info *bi, const uint8_t *batch)
{
	if (bi->attributes & PROTO_ATTR_CONTROL)
		return load_marker(l, bi, batch) < 0 ? -ENOMEM : 1;
	int64_t n = bi->records_count > 0 ? bi->records_count : 1;
	if (l->read_done) {
		l->late += n; /* produced to the partition while it was installed */
		return n;
	}
	int64_t producer_id =
		(bi->attributes & PROTO_ATTR_TRANSACTIONAL) && bi->producer_id >= 0 ? bi->producer_id : -1;
	proto_record_iter it;
	if (proto_record_iter_init(&it, batch, (size_t)bi->size, &l->rd.scratch) != 0) {
		l->skipped++;
		return n;
	}
	proto_record r;
	int rc;
	while ((rc = proto_record_iter_next(&it, &r)) == 1) {
		int arc = apply_record(l, &r, producer_id);
		if (arc < 0)
			return arc;
		l->skipped += arc;
	}
	if (rc < 0)
		l->skipped++;
	return n;
}

static char *dup_str(proto_str s)
{
	if (s.len < 0)
		return NULL;
	char *c = malloc((size_t)s.len + 1);
	if (c) {
		memcpy(c, s.ptr, (size_t)s.len);
		c[s.len] = '\0';
	}
	return c;
}

static uint8_t *dup_bytes(proto_bytes b)
{
	uint8_t *c = malloc(b.len > 0 ? (size_t)b.len : 1);
	if (c && b.len > 0)
		memcpy(c, b.ptr, (size_t)b.len);
	return c;
}

/* Fill g (fresh from grp_get_or_create) from its GroupMetadataValue, as
 * Kafka's loadGroup / ClassicGroup.fromRecord: Stable with its members, or
 * Empty. Returns 0, 1 when the value does not decode, or -ENOMEM. */
static int restore_metadata(grp_group *g, const staged *sg, proto_arena *a)
{
	grp_store_group v;
	proto_arena_reset(a);
	int rc = grp_group_value_decode(sg->meta, sg->meta_len, a, &v);
	if (rc == PROTO_ERR_NOMEM)
		return -ENOMEM;
	if (rc != 0)
		return 1;
	g->generation_id = v.generation;
	g->state_timestamp_ms = v.current_state_timestamp_ms;
	/* The group's fields are owned by it (freed by grp_remove). An Empty
	 * group keeps its protocol type ("consumer" after its members left:
	 * ClassicGroup does not clear it, and ClassicGroup.fromRecord restores
	 * it from any GroupMetadataValue); "" means none, as in Kafka. */
	if (v.protocol_type.len > 0) {
		g->protocol_type = dup_str(v.protocol_type);
		if (!g->protocol_type)
			return -ENOMEM;
	}
	if (v.nmembers == 0) {
		g->state = GRP_EMPTY;
		return 0;
	}
	g->protocol_name = dup_str(v.protocol);
	g->leader_id = dup_str(v.leader);
	if ((v.protocol.len >= 0 && !g->protocol_name) ||
	    (v.leader.len >= 0 && !g->leader_id))
		return -ENOMEM;
	for (int32_t i = 0; i < v.nmembers; i++) {
		const grp_store_member *sm = &v.members[i];
		grp_member *m = grp_member_new();
		if (!m)
			return -ENOMEM;
		m->member_id = dup_str(sm->member_id);
		m->group_instance_id = dup_str(sm->group_instance_id);
		m->client_id = dup_str(sm->client_id);
		m->client_host = dup_str(sm->client_host);
		m->session_timeout_ms = sm->session_timeout_ms;
		m->rebalance_timeout_ms = sm->rebalance_timeout_ms;
		m->protocol_type = dup_str(v.protocol_type);
		m->assignment = dup_bytes(sm->assignment);
		m->assignment_len = sm->assignment.len;
		bool ok = m->member_id && m->client_id && m->client_host && m->protocol_type &&
			  m->assignment && (sm->group_instance_id.len < 0 || m->group_instance_id);
		/* Kafka keeps only the chosen protocol's subscription. */
		if (ok && g->protocol_name) {
			m->protocols = calloc(1, sizeof(*m->protocols));
			if (m->protocols) {
				m->nprotocols = 1;
				m->protocols[0].name = strdup(g->protocol_name);
				m->protocols[0].metadata = dup_bytes(sm->subscription);
				m->protocols[0].metadata_len = sm->subscription.len;
			}
			ok = m->protocols && m->protocols[0].name && m->protocols[0].metadata;
		}
		int arc = ok ? grp_member_add(g, m) : -ENOMEM;
		if (arc == -EEXIST) {
			grp_member_free(m); /* a member id or instance id named twice: the first stays */
			continue;
		}
		if (arc < 0) {
			grp_member_free(m);
			return -ENOMEM;
		}
	}
	g->state = GRP_STABLE;
	return 0;
}

/* Install staged group sg into the registry (phase 2). Returns the work
 * it cost (1 + its members) or -ENOMEM. */
static int64_t install(grp_load *l, staged *sg)
{
	if (!sg->meta && grp_offsets_count(sg->offsets) == 0 && grp_txn_set_count(sg->txns) == 0)
		return 1; /* deleted */
	grp_coordinator *gc = l->gc;
	grp_group *g = grp_get_or_create(gc, sg->id, sg->len);
	if (!g)
		return -ENOMEM;
	g->partition = l->index; /* where its records are */
	/* A group known from offsets alone is a "simple" Empty group; its
	 * state time is unknown (Kafka: no currentStateTimestamp). */
	g->state = GRP_EMPTY;
	g->state_timestamp_ms = -1;
	int rc = 0;
	if (sg->meta) {
		rc = restore_metadata(g, sg, &l->arena);
		if (rc == 1) {
			l->skipped++;
			rc = 0;
		}
	}
	grp_offsets_free(g->offsets);
	g->offsets = sg->offsets;
	grp_txn_set_free(g->txns);
	g->txns = sg->txns;
	sg->group = g;
	grp_txn_track(g);
	l->ngroups++;
	l->noffsets += grp_offsets_count(g->offsets);
	if (rc < 0)
		return rc;
	if (g->nmembers > 0) {
		if (l->nrestored == l->restored_cap) {
			int32_t cap = l->restored_cap ? l->restored_cap * 2 : 64;
			grp_group **n = realloc(l->restored, (size_t)cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			l->restored = n;
			l->restored_cap = cap;
		}
		l->restored[l->nrestored++] = g;
	}
	return 1 + g->nmembers;
}

void grp_store_topic_op(brk_internal_topic_op *o)
{
	const brk_config *cfg = &server.cfg;
	brk_internal_topic_op_init(o, GRP_OFFSETS_TOPIC, cfg->offsets_topic_num_partitions,
				   cfg->offsets_topic_replication_factor, 0,
				   cfg->offsets_topic_segment_bytes, server.cluster.nbrokers);
}

int grp_store_await_topic(grp_coordinator *gc, brk_request *req)
{
	if (req->retried || grp_store_topic(gc))
		return 0;
	brk_internal_topic_op o;
	grp_store_topic_op(&o);
	return brk_ctl_wait_then_retry(req, &server.cluster, &o.op, BRK_ADMIN_WAIT_MS);
}

brk_topic *grp_store_topic(const grp_coordinator *gc)
{
	brk_topic *t = offsets_topic(gc);
	return t && t->npartitions > 0 ? t : NULL;
}

/* The warning about transactions left open in partition index: the first
 * few groups and producer ids by name, then how many more. */
static void warn_pending(grp_coordinator *gc, int32_t index, int64_t npending)
{
	char names[512];
	size_t len = 0;
	int64_t shown = 0;
	names[0] = 0;
	grp_group *g;
	for (int32_t i = 0; (g = grp_txn_group_at(gc, i)) != NULL; i++) {
		int64_t pid;
		if (g->partition != index)
			continue;
		for (int32_t j = 0; shown < 3 && grp_txn_at(g->txns, j, &pid) != NULL; j++) {
			int w = snprintf(names + len, sizeof(names) - len, "%sgroup '%.64s' producer id %lld",
					 shown ? ", " : "", g->group_id, (long long)pid);
			if (w > 0 && (size_t)w < sizeof(names) - len)
				len += (size_t)w;
			shown++;
		}
	}
	fprintf(stderr, "samsa: %lld transactional offset commit(s) in %s-%d are still pending: %s",
		(long long)npending, GRP_OFFSETS_TOPIC, (int)index, names);
	if (npending > shown)
		fprintf(stderr, " and %lld more", (long long)(npending - shown));
	fprintf(stderr, "\n");
}

/* The end of a load: the members' session timers start (as Kafka does for
 * loaded groups, so members that never come back expire), the partition
 * is served, the log lines. */
static void load_done(grp_load *l)
{
	grp_coordinator *gc = l->gc;
	for (int32_t i = 0; i < l->nrestored; i++)
		grp_restored(l->restored[i]);
	grp_partition_loaded(gc, l->index, l->p, l->leader_epoch);
	int64_t ms = brk_mono_ms() - l->start_ms;
	if (l->skipped > 0)
		fprintf(stderr, "samsa: warning: %lld malformed record(s) in %s-%d skipped\n",
			(long long)l->skipped, GRP_OFFSETS_TOPIC, (int)l->index);
	if (l->late > 0)
		fprintf(stderr,
			"samsa: warning: %lld record(s) produced to %s-%d while it was loading were not "
			"applied\n",
			(long long)l->late, GRP_OFFSETS_TOPIC, (int)l->index);
	if (l->nopen > 0)
		warn_pending(gc, l->index, l->nopen);
	struct grp_loader *ld = gc->loader;
	if (l->quiet) {
		ld->startup.partitions++;
		ld->startup.ngroups += l->ngroups;
		ld->startup.noffsets += l->noffsets;
	} else if (l->ngroups > 0 || l->leader_epoch > 0) {
		/* Quiet for a new empty partition (the topic just made): 50
		 * lines that say nothing. */
		fprintf(stderr,
			"samsa: %s-%d: loaded %d group(s) and %lld committed offset(s) at leader epoch "
			"%d in %lld ms\n",
			GRP_OFFSETS_TOPIC, (int)l->index, (int)l->ngroups, (long long)l->noffsets,
			(int)l->leader_epoch, (long long)ms);
	}
}

/* Take l off the queue (not freed). */
static void dequeue(struct grp_loader *ld, grp_load *l)
{
	grp_load **pp = &ld->head;
	grp_load *prev = NULL;
	while (*pp && *pp != l) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = l->next;
	if (ld->tail == l)
		ld->tail = prev;
	l->next = NULL;
}

/* A start-up load ended (done, failed or dropped): after the last one,
 * the summary line. */
static void startup_load_ended(grp_coordinator *gc, grp_load *l)
{
	struct grp_loader *ld = gc->loader;
	if (!l->quiet || --ld->startup_left > 0)
		return;
	if (ld->startup.ngroups > 0)
		fprintf(stderr,
			"samsa: loaded %d group(s) and %lld committed offset(s) from %d partition(s) of "
			"%s in %lld ms\n",
			(int)ld->startup.ngroups, (long long)ld->startup.noffsets,
			(int)ld->startup.partitions, GRP_OFFSETS_TOPIC,
			(long long)(brk_mono_ms() - ld->startup_ms));
}

/*
 * One slice of the load at the head of the queue: up to budget records
 * read and applied, then up to the rest of the budget in groups installed
 * (after the log end offset was reached). Returns 1 when the load goes
 * on, 0 when it is done, or a negative error.
 */
static int load_slice(grp_load *l, int64_t budget)
{
	int rc = 0;
	while (budget > 0) {
		proto_batch_info bi;
		const uint8_t *batch;
		rc = brk_internal_reader_next(&l->rd, &bi, &batch);
		if (rc <= 0)
			break;
		int64_t n = load_batch(l, &bi, batch);
		if (n < 0)
			return (int)n;
		budget -= n;
	}
	if (rc < 0)
		return rc;
	if (budget <= 0)
		return 1; /* the log end may be further: read on next time */
	l->read_done = true;
	int32_t nstaged = brk_strmap_count(&l->staged);
	while (budget > 0 && l->installed < nstaged) {
		int64_t n = install(l, brk_strmap_at(&l->staged, l->installed++));
		if (n < 0)
			return (int)n;
		budget -= n;
	}
	return l->installed < nstaged ? 1 : 0;
}

static void arm_slice(grp_coordinator *gc);

/* The load timer: a slice of the head load; a finished or failed load
 * leaves the queue. */
static void run_slice(grp_coordinator *gc)
{
	struct grp_loader *ld = gc->loader;
	grp_load *l = ld->head;
	if (!l)
		return;
	int rc = load_slice(l, gc->load_slice > 0 ? gc->load_slice : GRP_LOAD_SLICE_RECORDS);
	if (rc == 1)
		return;
	dequeue(ld, l);
	if (rc == 0) {
		load_done(l);
	} else {
		fprintf(stderr, "samsa: loading %s-%d failed: %s: its groups are not served here\n",
			GRP_OFFSETS_TOPIC, (int)l->index,
			rc < 0 && rc >= -4095 ? strerror(-rc) : "corrupt data");
		grp_partition_unload(gc, l->index);
	}
	startup_load_ended(gc, l);
	load_free(l);
	if (!ld->head && gc->loads_done)
		gc->loads_done(gc->loads_done_arg);
}

static void on_load_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_coordinator *gc = arg;
	gc->loader->timer = 0;
	run_slice(gc);
	arm_slice(gc);
}

/* The next slice on the next loop iteration (a timer of 0 ms runs after
 * that iteration's I/O), or all of it now without a loop (tests). */
static void arm_slice(grp_coordinator *gc)
{
	struct grp_loader *ld = gc->loader;
	if (!gc->loop) {
		while (ld->head)
			run_slice(gc);
		return;
	}
	if (ld->head && !ld->timer)
		ld->timer = brk_timer_add(gc->loop, 0, on_load_timer, gc);
}

/* Drop the load of partition index, if one is queued (its groups are
 * unloaded by the caller). Returns whether there was one. */
static bool drop_load(grp_coordinator *gc, int32_t index)
{
	struct grp_loader *ld = gc->loader;
	grp_load *l = ld ? ld->head : NULL;
	while (l && l->index != index)
		l = l->next;
	if (!l)
		return false;
	dequeue(ld, l);
	startup_load_ended(gc, l);
	load_free(l);
	return true;
}

/* Queue the load of p (led here, log online) at its leader epoch. */
static int start_load(grp_coordinator *gc, brk_partition *p, bool quiet)
{
	struct grp_loader *ld = gc->loader;
	grp_load *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->gc = gc;
	l->p = p;
	l->index = p->index;
	l->leader_epoch = p->leader_epoch;
	l->quiet = quiet;
	l->start_ms = brk_mono_ms();
	brk_internal_reader_init(&l->rd, p);
	brk_strmap_init(&l->staged);
	proto_arena_init(&l->arena, 0);
	grp_partition_loading(gc, l->index, p, l->leader_epoch);
	if (p->log && log_end_offset(p->log) <= log_start_offset(p->log)) {
		/* Nothing to read (a partition just made): served at once, so a
		 * new topic answers its first requests without
		 * COORDINATOR_LOAD_IN_PROGRESS. */
		load_done(l);
		load_free(l);
		return 0;
	}
	if (quiet) {
		if (ld->startup_left++ == 0)
			ld->startup_ms = l->start_ms;
	}
	if (ld->tail)
		ld->tail->next = l;
	else
		ld->head = l;
	ld->tail = l;
	arm_slice(gc);
	return 0;
}

/* store_close: the loads in progress go (grp_coordinator_free). */
static void store_close(grp_coordinator *gc)
{
	struct grp_loader *ld = gc->loader;
	if (!ld)
		return;
	while (ld->head) {
		grp_load *l = ld->head;
		dequeue(ld, l);
		load_free(l);
	}
	if (ld->timer && gc->loop)
		brk_timer_cancel(gc->loop, ld->timer);
	free(ld);
	gc->loader = NULL;
}

static const char *role_name(const brk_partition *p)
{
	switch (p->role) {
	case BRK_ROLE_LEADER: return "the leader";
	case BRK_ROLE_FOLLOWER: return "now a follower";
	case BRK_ROLE_NONE: break;
	}
	return "no replica here";
}

/*
 * p got a new leader epoch (or is looked at by grp_store_open): drop its
 * groups (and its load) unless this broker still leads it at the epoch it
 * was loaded (or is being loaded) at, then start loading it when this
 * broker leads it. quiet: the start-up catch-up, summed up in one line.
 * Returns 0 or -ENOMEM.
 */
static int follow_partition(grp_coordinator *gc, brk_partition *p, bool quiet)
{
	if (grp_partitions_known(gc, p->topic->npartitions) < 0)
		return -ENOMEM;
	int32_t index = p->index;
	grp_partition *ps = grp_partition_state(gc, index);
	if (!ps)
		return 0;
	bool lead = p->role == BRK_ROLE_LEADER && p->log;
	if ((ps->loaded || ps->loading) && lead && ps->p == p &&
	    ps->leader_epoch == p->leader_epoch)
		return 0;
	bool was_loading = drop_load(gc, index);
	if (ps->loaded || was_loading) {
		int32_t n = grp_partition_unload(gc, index);
		const char *what = was_loading ? "stopped loading, dropped" : "unloaded";
		if (lead)
			fprintf(stderr, "samsa: %s-%d: %s %d group(s): new leader epoch %d\n",
				GRP_OFFSETS_TOPIC, (int)index, what, (int)n, (int)p->leader_epoch);
		else
			fprintf(stderr, "samsa: %s-%d: %s %d group(s): %s\n", GRP_OFFSETS_TOPIC,
				(int)index, what, (int)n, role_name(p));
	}
	if (!lead) {
		if (p->role == BRK_ROLE_LEADER)
			fprintf(stderr, "samsa: warning: %s-%d is offline: its groups are not loaded\n",
				GRP_OFFSETS_TOPIC, (int)index);
		return 0;
	}
	/* Groups made while the partition was not loaded here (their writes
	 * failed) go: the log says what the group is. */
	grp_partition_unload(gc, index);
	return start_load(gc, p, quiet);
}

void grp_store_on_role(void *arg, brk_partition *p)
{
	grp_coordinator *gc = arg;
	if (strcmp(p->topic->name, GRP_OFFSETS_TOPIC) != 0)
		return;
	if (follow_partition(gc, p, false) < 0)
		fprintf(stderr, "samsa: %s-%d: out of memory: its groups are not loaded\n",
			GRP_OFFSETS_TOPIC, (int)p->index);
}

/* A transaction marker written to a partition of __consumer_offsets
 * completes the producer's pending offsets there (Kafka's
 * GroupCoordinator.onTransactionCompleted). */
static void on_marker(void *arg, brk_partition *p, int64_t producer_id, bool commit)
{
	grp_coordinator *gc = arg;
	if (strcmp(p->topic->name, GRP_OFFSETS_TOPIC) == 0)
		grp_txn_completed(gc, p->index, producer_id, commit);
}

/* The offset expiry timer (offsets.retention.check.interval.ms). */
static void start_expiry_timer(grp_coordinator *gc)
{
	if (!gc->loop || gc->expiry_timer)
		return;
	int64_t interval = gc->cfg->offsets_retention_check_interval_ms;
	gc->expiry_timer = brk_timer_add(gc->loop, interval > 0 ? interval : 600000, on_expiry_timer, gc);
}

int grp_store_open(grp_coordinator *gc, brk_partitions *reg)
{
	gc->partitions = reg;
	gc->write_group = grp_store_write_group;
	if (!gc->loader) {
		gc->loader = calloc(1, sizeof(*gc->loader));
		if (!gc->loader)
			return -ENOMEM;
		gc->store_close = store_close;
	}
	if (!gc->observing) {
		int rc = brk_partitions_observe_roles(reg, grp_store_on_role, gc);
		if (rc == 0)
			rc = brk_partitions_observe_markers(reg, on_marker, gc);
		if (rc)
			return rc;
		gc->observing = true;
	}
	/* The partitions led now: at start-up the controller's initial events
	 * came before the observer. Later elections come through it. */
	brk_topic *t = offsets_topic(gc);
	for (int32_t i = 0; t && i < t->npartitions; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		int rc = p ? follow_partition(gc, p, true) : 0;
		if (rc)
			return rc;
	}
	start_expiry_timer(gc);
	return 0;
}
