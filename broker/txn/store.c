/*
 * store.c - the transaction coordinator's state in __transaction_state
 * (store.h): topic creation, loading at start-up, one record per change.
 * Layouts are in store_codec.c; rules follow Kafka's TransactionStateManager
 * (loadTransactionsForTxnTopicPartition, appendTransactionToLog) and
 * TransactionLog.
 */
#include "broker/txn/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/ctl_wait.h"
#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/group/txn_offsets.h"
#include "broker/internal_topic.h"
#include "broker/loop.h"
#include "broker/partitions.h"
#include "broker/ratelog.h"
#include "broker/server.h"
#include "broker/txn/txn.h"
#include "protocol/batch.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/log.h"

/* Reused buffers (loop thread only): the batch and one key/value pair. */
static proto_writer batch_buf;
static proto_writer kv_buf;
static bool bufs_ready;

static void bufs_init(void)
{
	if (bufs_ready)
		return;
	proto_writer_init(&batch_buf);
	proto_writer_init(&kv_buf);
	bufs_ready = true;
}

static brk_topic *state_topic(void)
{
	return brk_topic_find(&server.partitions, TXN_STATE_TOPIC, (int32_t)strlen(TXN_STATE_TOPIC));
}

int txn_store_await_topic(brk_request *req)
{
	if (req->retried || txn_store_topic())
		return 0;
	brk_internal_topic_op o;
	txn_store_topic_op(&o);
	return brk_ctl_wait_then_retry(req, &server.cluster, &o.op, BRK_ADMIN_WAIT_MS);
}

brk_topic *txn_store_topic(void)
{
	brk_topic *t = state_topic();
	return t && t->npartitions > 0 ? t : NULL;
}

/* The __transaction_state partition of id, or NULL. */
static brk_partition *partition_of(proto_str id)
{
	brk_topic *t = txn_store_topic();
	if (!t)
		return NULL;
	return brk_topic_partition(t, brk_coordinator_partition(id.ptr, id.len, t->npartitions));
}

int32_t txn_store_coordinator_epoch(proto_str id)
{
	brk_partition *p = partition_of(id);
	return p ? p->leader_epoch : -1;
}

/* One line on stderr for a transactional id whose record cannot be
 * written (answered UNKNOWN_SERVER_ERROR); the id is cut at 40 bytes. */
static void log_unstorable(proto_str id, const char *why)
{
	static brk_ratelog rl = BRK_RATELOG_INIT; /* a client can send these at will */
	brk_ratelog_printf(&rl, "samsa: transactional id '%.*s%s' (%d bytes) cannot be stored in %s: %s\n",
			   id.len > 40 ? 40 : (int)id.len, id.ptr, id.len > 40 ? "..." : "", (int)id.len,
			   TXN_STATE_TOPIC, why);
}

int16_t txn_store_append(proto_str id, const txn_log_value *v, int64_t now_ms)
{
	brk_partition *p = partition_of(id);
	if (!p)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	bufs_init();
	proto_writer_reset(&kv_buf);
	txn_key_encode(&kv_buf, id);
	size_t klen = kv_buf.len;
	if (v)
		txn_value_encode(&kv_buf, v);
	if (kv_buf.err) {
		log_unstorable(id, "its record does not encode (a key string holds at most 32767 bytes)");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	proto_writer_reset(&batch_buf);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &batch_buf);
	proto_batch_builder_add(&b, now_ms, kv_buf.buf, (int32_t)klen, v ? kv_buf.buf + klen : NULL,
				v ? (int32_t)(kv_buf.len - klen) : -1);
	int32_t size = proto_batch_builder_finish(&b);
	if (size < 0) {
		log_unstorable(id, "building its record batch failed");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	int rc = brk_internal_append(&server.partitions, p, batch_buf.buf + b.start, size, id.ptr,
				     id.len, now_ms, NULL);
	if (rc == BRK_INTERNAL_TOO_LARGE) {
		log_unstorable(id, "its record is larger than the partition accepts");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	return (int16_t)rc;
}

/* ---- loading ---- */

typedef struct load_ctx {
	proto_arena arena;
	int64_t skipped; /* malformed records and batches */
	int64_t unknown; /* records of another key version */
} load_ctx;

static int tp_cmp(const void *a, const void *b)
{
	const txn_tp *x = a, *y = b;
	int32_t n = x->topic_len < y->topic_len ? x->topic_len : y->topic_len;
	int c = memcmp(x->topic, y->topic, (size_t)n);
	if (c)
		return c;
	if (x->topic_len != y->topic_len)
		return x->topic_len < y->topic_len ? -1 : 1;
	return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static char *dup_str(const char *s, int32_t len)
{
	char *c = malloc((size_t)len + 1);
	if (c) {
		memcpy(c, s, (size_t)len);
		c[len] = '\0';
	}
	return c;
}

/* A txn_meta from a decoded value (Kafka's TransactionLog.read: the
 * partitions of an Empty transaction are ignored). NULL on ENOMEM. */
static txn_meta *meta_from_value(proto_str id, const txn_log_value *v)
{
	txn_meta *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->id = dup_str(id.ptr, id.len);
	m->id_len = id.len;
	m->producer_id = v->producer_id;
	m->prev_producer_id = v->prev_producer_id;
	m->next_producer_id = v->next_producer_id;
	m->producer_epoch = v->producer_epoch;
	m->last_producer_epoch = -1; /* not in the log (RecordBatch.NO_PRODUCER_EPOCH) */
	m->timeout_ms = v->timeout_ms;
	m->state = (txn_state)v->status;
	m->start_ms = v->start_ms;
	m->last_update_ms = v->last_update_ms;
	m->client_tv = v->client_tv;
	if (!m->id) {
		txn_meta_free(m);
		return NULL;
	}
	int32_t n = m->state == TXN_EMPTY ? 0 : v->ntps;
	if (n > 0) {
		m->tps = calloc((size_t)n, sizeof(*m->tps));
		if (!m->tps) {
			txn_meta_free(m);
			return NULL;
		}
		m->tps_cap = n;
		for (int32_t i = 0; i < n; i++) {
			m->tps[i].topic = dup_str(v->tps[i].topic.ptr, v->tps[i].topic.len);
			m->tps[i].topic_len = v->tps[i].topic.len;
			m->tps[i].partition = v->tps[i].partition;
			if (!m->tps[i].topic) {
				m->ntps = i;
				txn_meta_free(m);
				return NULL;
			}
		}
		m->ntps = n;
		/* Sorted and without duplicates, as the coordinator keeps them. */
		qsort(m->tps, (size_t)n, sizeof(*m->tps), tp_cmp);
		int32_t k = 1;
		for (int32_t i = 1; i < n; i++) {
			if (tp_cmp(&m->tps[i], &m->tps[k - 1]) == 0)
				free(m->tps[i].topic);
			else
				m->tps[k++] = m->tps[i];
		}
		m->ntps = k;
	}
	return m;
}

/* Apply one record. Returns 0, 1 when it was malformed and skipped, 2 for
 * another key version, or -ENOMEM. */
static int apply_record(load_ctx *c, const proto_record *r)
{
	proto_str id;
	int rc = txn_key_decode(r->key, r->key_len, &id);
	if (rc == PROTO_ERR_VERSION)
		return 2;
	if (rc != 0)
		return 1;
	if (r->value_len < 0) {
		txn_forget(id.ptr, id.len);
		return 0;
	}
	txn_log_value v;
	proto_arena_reset(&c->arena);
	rc = txn_value_decode(r->value, r->value_len, &c->arena, &v);
	if (rc == PROTO_ERR_NOMEM)
		return -ENOMEM;
	if (rc != 0)
		return 1;
	if (v.status == TXN_DEAD) {
		/* Never written by Kafka (expiry writes a tombstone); the id is gone. */
		txn_forget(id.ptr, id.len);
		return 0;
	}
	if (v.status == TXN_PREPARE_EPOCH_FENCE || v.producer_id < 0)
		return 1; /* a transient state Kafka never writes */
	txn_meta *m = meta_from_value(id, &v);
	if (!m)
		return -ENOMEM;
	return txn_restore(m) < 0 ? -ENOMEM : 0;
}

/* brk_internal_batch_fn: apply the records of one batch. */
static int load_batch(void *arg, const proto_batch_info *bi, const uint8_t *batch,
		      proto_scratch *scratch)
{
	load_ctx *c = arg;
	if (bi->attributes & PROTO_ATTR_CONTROL)
		return 0;
	proto_record_iter it;
	if (proto_record_iter_init(&it, batch, (size_t)bi->size, scratch) != 0) {
		c->skipped++;
		return 0;
	}
	proto_record r;
	int rc;
	while ((rc = proto_record_iter_next(&it, &r)) == 1) {
		int arc = apply_record(c, &r);
		if (arc < 0)
			return arc;
		if (arc == 1)
			c->skipped++;
		else if (arc == 2)
			c->unknown++;
	}
	if (rc < 0)
		c->skipped++;
	return 0;
}

void txn_store_topic_op(brk_internal_topic_op *o)
{
	const brk_config *cfg = &server.cfg;
	brk_internal_topic_op_init(o, TXN_STATE_TOPIC, cfg->transaction_state_log_num_partitions,
				   cfg->transaction_state_log_replication_factor,
				   cfg->transaction_state_log_min_isr,
				   cfg->transaction_state_log_segment_bytes, server.cluster.nbrokers);
}

/* Whether some transactional id of producer pid has a transaction that is
 * not complete (Ongoing, Prepare*): its coordinator will end it. */
static bool producer_has_open_txn(int64_t pid)
{
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(i)) != NULL; i++)
		if (m->producer_id == pid && m->state != TXN_EMPTY && m->state != TXN_COMPLETE_COMMIT &&
		    m->state != TXN_COMPLETE_ABORT && m->state != TXN_DEAD)
			return true;
	return false;
}

/*
 * Pending transactional offsets (group store, loaded before) of a producer
 * that no transaction in the loaded __transaction_state has open: no
 * coordinator will ever end them (they predate transaction verification,
 * or were written with it disabled), so OffsetFetch with require_stable
 * would answer UNSTABLE_OFFSET_COMMIT for good. They are aborted as the
 * coordinator would: an abort marker in the group's __consumer_offsets
 * partition (at the producer's epoch and coordinator epoch there), which
 * also drops them from every group of that partition (grp_txn_completed)
 * and closes the transaction in the log. Only with
 * transaction.partition.verification.enable, under which a transactional
 * offset commit can only come from an ongoing transaction.
 */
static void abort_orphan_offsets(int64_t now_ms)
{
	brk_topic *t = brk_topic_find(&server.partitions, GRP_OFFSETS_TOPIC, (int32_t)strlen(GRP_OFFSETS_TOPIC));
	if (!t || t->npartitions <= 0)
		return;
	/* One (group, producer) at a time: the marker changes the sets; the
	 * bound only guards against a set that would not shrink. */
	for (int32_t round = 0; round < 100000; round++) {
		grp_group *g, *found = NULL;
		int64_t pid = -1;
		for (int32_t i = 0; !found && (g = grp_at(&server.groups, i)) != NULL; i++) {
			int64_t q;
			for (int32_t j = 0; grp_txn_at(g->txns, j, &q) != NULL; j++)
				if (!producer_has_open_txn(q)) {
					found = g;
					pid = q;
					break;
				}
		}
		if (!found)
			return;
		int32_t idx = brk_coordinator_partition(found->group_id, (int32_t)strlen(found->group_id),
						t->npartitions);
		brk_partition *p = brk_topic_partition(t, idx);
		const log_producer_entry *e = p && p->log ? log_producer_find(p->log, pid) : NULL;
		int16_t err = KERR_NOT_LEADER_OR_FOLLOWER;
		if (p)
			err = brk_partition_write_txn_marker(&server.partitions, p, pid, e && e->epoch >= 0 ? e->epoch : 0,
							     e && e->coordinator_epoch > 0 ? e->coordinator_epoch : 0,
							     false, now_ms);
		fprintf(stderr,
			"samsa: warning: pending transactional offsets of group '%.64s' (producer id %lld) "
			"%s: no transaction of that producer is ongoing in %s\n",
			found->group_id, (long long)pid,
			err == KERR_NONE ? "aborted" : "could not be aborted", TXN_STATE_TOPIC);
		if (err != KERR_NONE)
			grp_txn_completed(&server.groups, idx, pid, false); /* in memory at least */
	}
}

int txn_store_open(void)
{
	int rc;
	brk_topic *t = state_topic();
	if (!t) {
		/* Created on first use (txn_store_topic_op), as Kafka does; no
		 * transaction can be open, so pending offsets are orphans. */
		txn_coordinator_start(brk_wall_ms());
		if (server.cfg.transaction_partition_verification_enable)
			abort_orphan_offsets(brk_wall_ms());
		return 0;
	}
	load_ctx lc = { .skipped = 0 };
	proto_arena_init(&lc.arena, 0);
	rc = 0;
	for (int32_t i = 0; i < t->npartitions && rc == 0; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		if (!p || !p->log) {
			fprintf(stderr,
				"samsa: warning: %s-%d is offline: its transactional ids are not loaded\n",
				TXN_STATE_TOPIC, (int)i);
			continue;
		}
		rc = brk_internal_topic_read(p, load_batch, &lc);
		if (rc)
			fprintf(stderr, "samsa: loading %s-%d failed: %s\n", TXN_STATE_TOPIC, (int)i,
				strerror(-rc));
	}
	proto_arena_free(&lc.arena);
	if (rc)
		return rc;
	if (lc.skipped > 0)
		fprintf(stderr, "samsa: warning: %lld malformed record(s) in %s skipped\n",
			(long long)lc.skipped, TXN_STATE_TOPIC);
	if (lc.unknown > 0)
		fprintf(stderr, "samsa: warning: %lld record(s) of an unknown key version in %s skipped\n",
			(long long)lc.unknown, TXN_STATE_TOPIC);
	if (txn_count() > 0)
		fprintf(stderr, "samsa: loaded %d transactional id(s) from %s\n", (int)txn_count(),
			TXN_STATE_TOPIC);
	txn_coordinator_start(brk_wall_ms());
	if (server.cfg.transaction_partition_verification_enable)
		abort_orphan_offsets(brk_wall_ms());
	return 0;
}
