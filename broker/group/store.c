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

/* ---- loading ---- */

/* What the log says about one group so far. */
typedef struct staged {
	char *id; /* owned */
	int32_t len;
	uint32_t hash;
	uint8_t *meta; /* last GroupMetadataValue (owned), NULL after a tombstone */
	int32_t meta_len;
	grp_offsets *offsets;
	grp_txn_set *txns; /* pending transactional offsets */
} staged;

typedef struct stage {
	staged *g;
	int32_t n, cap;
	int32_t *slots; /* power of two, -1 empty */
	uint32_t nslots;
} stage;

static uint32_t id_hash(const char *s, int32_t len)
{
	uint32_t h = 2166136261u;
	for (int32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int stage_grow(stage *st)
{
	uint32_t nslots = st->nslots ? st->nslots * 2 : 64;
	int32_t *slots = malloc(nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, nslots * sizeof(*slots));
	for (int32_t i = 0; i < st->n; i++) {
		uint32_t s = st->g[i].hash & (nslots - 1);
		while (slots[s] >= 0)
			s = (s + 1) & (nslots - 1);
		slots[s] = i;
	}
	free(st->slots);
	st->slots = slots;
	st->nslots = nslots;
	return 0;
}

/* The staged group of id, created when absent; NULL on allocation failure. */
static staged *stage_get(stage *st, const char *id, int32_t len)
{
	if ((uint32_t)(st->n + 1) * 2 > st->nslots && stage_grow(st) < 0)
		return NULL;
	uint32_t h = id_hash(id, len), mask = st->nslots - 1, s;
	for (s = h & mask; st->slots[s] >= 0; s = (s + 1) & mask) {
		staged *g = &st->g[st->slots[s]];
		if (g->hash == h && g->len == len && memcmp(g->id, id, (size_t)len) == 0)
			return g;
	}
	if (st->n == st->cap) {
		int32_t cap = st->cap ? st->cap * 2 : 64;
		staged *ng = realloc(st->g, (size_t)cap * sizeof(*ng));
		if (!ng)
			return NULL;
		st->g = ng;
		st->cap = cap;
	}
	staged *g = &st->g[st->n];
	memset(g, 0, sizeof(*g));
	g->id = malloc((size_t)len + 1);
	g->offsets = grp_offsets_new();
	g->txns = grp_txn_set_new();
	if (!g->id || !g->offsets || !g->txns) {
		free(g->id);
		grp_offsets_free(g->offsets);
		grp_txn_set_free(g->txns);
		return NULL;
	}
	memcpy(g->id, id, (size_t)len);
	g->id[len] = '\0';
	g->len = len;
	g->hash = h;
	st->slots[s] = st->n++;
	return g;
}

static void stage_free(stage *st)
{
	for (int32_t i = 0; i < st->n; i++) {
		free(st->g[i].id);
		free(st->g[i].meta);
		grp_offsets_free(st->g[i].offsets);
		grp_txn_set_free(st->g[i].txns);
	}
	free(st->g);
	free(st->slots);
}

/* A producer with pending offsets in a staged group, until its marker. */
typedef struct open_txn {
	int64_t producer_id;
	int32_t group; /* index into stage.g */
} open_txn;

/* What loading one partition needs: the groups staged so far, the
 * partition being read, the transactions open in it and the count of
 * malformed records and batches skipped. */
typedef struct load_ctx {
	stage *st;
	int32_t partition;
	open_txn *open;
	int32_t nopen, open_cap;
	int64_t skipped;
} load_ctx;

/* Note that producer_id has pending offsets in staged group gi. */
static int note_open(load_ctx *c, int64_t producer_id, int32_t gi)
{
	for (int32_t i = 0; i < c->nopen; i++)
		if (c->open[i].producer_id == producer_id && c->open[i].group == gi)
			return 0;
	if (c->nopen == c->open_cap) {
		int32_t cap = c->open_cap ? c->open_cap * 2 : 16;
		open_txn *n = realloc(c->open, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->open = n;
		c->open_cap = cap;
	}
	c->open[c->nopen++] = (open_txn){ producer_id, gi };
	return 0;
}

/* Apply one record of __consumer_offsets; producer_id is the producer of
 * a transactional batch (its offsets are pending), -1 otherwise (Kafka's
 * OffsetMetadataManager.replay). Returns 0, 1 when the record was
 * malformed and skipped, or -ENOMEM. */
static int apply_record(load_ctx *c, const proto_record *r, int64_t producer_id)
{
	stage *st = c->st;
	grp_store_key key;
	int rc = grp_store_key_decode(r->key, r->key_len, &key);
	if (rc == PROTO_ERR_VERSION)
		return 0; /* another coordinator's record type: not ours */
	if (rc != 0)
		return 1;
	staged *g = stage_get(st, key.group.ptr, key.group.len);
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
		if (grp_txn_put(g->txns, producer_id, c->partition, key.topic.ptr, key.topic.len,
				key.partition, &v) < 0)
			return -ENOMEM;
		return note_open(c, producer_id, (int32_t)(g - st->g));
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
 * (abort) the producer's pending offsets in the staged groups of this
 * partition (Kafka's replayEndTransactionMarker while loading). */
static int load_marker(load_ctx *c, const proto_batch_info *bi, const uint8_t *batch)
{
	int16_t type;
	int32_t coordinator_epoch;
	if (proto_control_batch_parse(batch, (size_t)bi->size, &type, &coordinator_epoch) != 0) {
		c->skipped++;
		return 0;
	}
	if (type != PROTO_CONTROL_COMMIT && type != PROTO_CONTROL_ABORT)
		return 0; /* Kafka ignores other control records */
	int rc = 0;
	for (int32_t i = 0; i < c->nopen;) {
		if (c->open[i].producer_id != bi->producer_id) {
			i++;
			continue;
		}
		staged *g = &c->st->g[c->open[i].group];
		if (grp_txn_complete(g->txns, g->offsets, bi->producer_id, c->partition,
				     type == PROTO_CONTROL_COMMIT) < 0)
			rc = -ENOMEM;
		c->open[i] = c->open[--c->nopen];
	}
	return rc;
}

/* brk_internal_batch_fn: apply the records of one batch. */
static int load_batch(void *arg, const proto_batch_info *bi, const uint8_t *batch,
		      proto_scratch *scratch)
{
	load_ctx *c = arg;
	if (bi->attributes & PROTO_ATTR_CONTROL)
		return load_marker(c, bi, batch);
	int64_t producer_id =
		(bi->attributes & PROTO_ATTR_TRANSACTIONAL) && bi->producer_id >= 0 ? bi->producer_id : -1;
	proto_record_iter it;
	if (proto_record_iter_init(&it, batch, (size_t)bi->size, scratch) != 0) {
		c->skipped++;
		return 0;
	}
	proto_record r;
	int rc;
	while ((rc = proto_record_iter_next(&it, &r)) == 1) {
		int arc = apply_record(c, &r, producer_id);
		if (arc < 0)
			return arc;
		c->skipped += arc;
	}
	if (rc < 0)
		c->skipped++;
	return 0;
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

/* Turn the staged groups of partition index into registry groups. */
static int restore_groups(grp_coordinator *gc, stage *st, int32_t index, int64_t *skipped)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	int rc = 0;
	for (int32_t i = 0; i < st->n && rc >= 0; i++) {
		staged *sg = &st->g[i];
		if (!sg->meta && grp_offsets_count(sg->offsets) == 0 &&
		    grp_txn_set_count(sg->txns) == 0)
			continue; /* deleted */
		grp_group *g = grp_get_or_create(gc, sg->id, sg->len);
		if (!g) {
			rc = -ENOMEM;
			break;
		}
		g->partition = index; /* where its records are */
		/* A group known from offsets alone is a "simple" Empty group;
		 * its state time is unknown (Kafka: no currentStateTimestamp). */
		g->state = GRP_EMPTY;
		g->state_timestamp_ms = -1;
		if (sg->meta) {
			rc = restore_metadata(g, sg, &a);
			if (rc == 1) {
				(*skipped)++;
				rc = 0;
			}
		}
		grp_offsets_free(g->offsets);
		g->offsets = sg->offsets;
		sg->offsets = NULL;
		grp_txn_set_free(g->txns);
		g->txns = sg->txns;
		sg->txns = NULL;
		grp_txn_track(g);
		if (rc >= 0)
			grp_restored(g);
	}
	proto_arena_free(&a);
	return rc;
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

/* What loading partitions found. */
typedef struct load_stats {
	int32_t partitions;
	int32_t ngroups;
	int64_t noffsets;
	int64_t npending; /* producers with transactional offsets still open */
	int64_t skipped;  /* malformed records and batches */
} load_stats;

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

/*
 * Read partition p (led here, log online) and restore its groups into gc
 * (Kafka's GroupMetadataManager.loadGroupsAndOffsets). Loading is
 * synchronous, on the loop, so no client sees a partition half loaded:
 * Kafka's COORDINATOR_LOAD_IN_PROGRESS is never answered by this broker.
 * On an error the groups restored so far are dropped again.
 */
static int load_partition(grp_coordinator *gc, brk_partition *p, load_stats *ls)
{
	int32_t index = p->index;
	stage st = { 0 };
	load_ctx lc = { .st = &st, .partition = index };
	/* Transactions still open at the end stay pending: the transaction
	 * coordinator completes or aborts them. */
	int rc = brk_internal_topic_read(p, load_batch, &lc);
	int64_t skipped = lc.skipped;
	free(lc.open);
	int32_t ngroups = 0;
	int64_t noffsets = 0;
	for (int32_t i = 0; i < st.n; i++) {
		int32_t c = grp_offsets_count(st.g[i].offsets);
		if (st.g[i].meta || c > 0 || grp_txn_set_count(st.g[i].txns) > 0)
			ngroups++;
		noffsets += c;
	}
	if (rc == 0)
		rc = restore_groups(gc, &st, index, &skipped);
	stage_free(&st);
	if (rc) {
		grp_partition_unload(gc, index);
		return rc;
	}
	ls->partitions++;
	ls->ngroups += ngroups;
	ls->noffsets += noffsets;
	ls->npending += lc.nopen;
	ls->skipped += skipped;
	if (skipped > 0)
		fprintf(stderr, "samsa: warning: %lld malformed record(s) in %s-%d skipped\n",
			(long long)skipped, GRP_OFFSETS_TOPIC, (int)index);
	if (lc.nopen > 0)
		warn_pending(gc, index, lc.nopen);
	return 0;
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
 * groups unless this broker still leads it at the epoch it was loaded at,
 * then load it when this broker leads it. quiet: the start-up catch-up,
 * summed up by the caller. Returns 0 or the load's error.
 */
static int follow_partition(grp_coordinator *gc, brk_partition *p, bool quiet, load_stats *ls)
{
	if (grp_partitions_known(gc, p->topic->npartitions) < 0)
		return -ENOMEM;
	int32_t index = p->index;
	grp_partition *ps = grp_partition_state(gc, index);
	if (!ps)
		return 0;
	bool lead = p->role == BRK_ROLE_LEADER && p->log;
	if (ps->loaded && lead && ps->p == p && ps->leader_epoch == p->leader_epoch)
		return 0;
	if (ps->loaded) {
		int32_t n = grp_partition_unload(gc, index);
		if (lead)
			fprintf(stderr, "samsa: %s-%d: unloaded %d group(s): new leader epoch %d\n",
				GRP_OFFSETS_TOPIC, (int)index, (int)n, (int)p->leader_epoch);
		else
			fprintf(stderr, "samsa: %s-%d: unloaded %d group(s): %s\n", GRP_OFFSETS_TOPIC,
				(int)index, (int)n, role_name(p));
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
	load_stats one = { 0 };
	int rc = load_partition(gc, p, &one);
	if (rc) {
		fprintf(stderr, "samsa: loading %s-%d failed: %s: its groups are not served here\n",
			GRP_OFFSETS_TOPIC, (int)index,
			rc < 0 && rc >= -4095 ? strerror(-rc) : "corrupt data");
		return rc;
	}
	grp_partition_loaded(gc, index, p, p->leader_epoch);
	/* Quiet for a new empty partition (the topic just made): 50 lines
	 * that say nothing. */
	if (!quiet && (one.ngroups > 0 || p->leader_epoch > 0))
		fprintf(stderr,
			"samsa: %s-%d: loaded %d group(s) and %lld committed offset(s) at leader epoch %d\n",
			GRP_OFFSETS_TOPIC, (int)index, (int)one.ngroups, (long long)one.noffsets,
			(int)p->leader_epoch);
	ls->partitions += one.partitions;
	ls->ngroups += one.ngroups;
	ls->noffsets += one.noffsets;
	ls->npending += one.npending;
	ls->skipped += one.skipped;
	return 0;
}

void grp_store_on_role(void *arg, brk_partition *p)
{
	grp_coordinator *gc = arg;
	if (strcmp(p->topic->name, GRP_OFFSETS_TOPIC) != 0)
		return;
	load_stats ls = { 0 };
	(void)follow_partition(gc, p, false, &ls); /* a failure is told and leaves it unloaded */
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
	load_stats ls = { 0 };
	for (int32_t i = 0; t && i < t->npartitions; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		int rc = p ? follow_partition(gc, p, true, &ls) : 0;
		if (rc)
			return rc;
	}
	if (ls.ngroups > 0)
		fprintf(stderr,
			"samsa: loaded %d group(s) and %lld committed offset(s) from %d partition(s) of %s\n",
			(int)ls.ngroups, (long long)ls.noffsets, (int)ls.partitions, GRP_OFFSETS_TOPIC);
	start_expiry_timer(gc);
	return 0;
}
