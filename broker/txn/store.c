/*
 * store.c - the transaction coordinator's state in __transaction_state
 * (store.h): topic creation, loading and dropping partitions as this
 * broker's leadership of them changes, one record per change, and the rest
 * of the coordinator's txn_env.
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

static brk_topic *state_topic(const txn_coordinator *tc)
{
	if (!tc->partitions)
		return NULL;
	return brk_topic_find(tc->partitions, TXN_STATE_TOPIC, (int32_t)strlen(TXN_STATE_TOPIC));
}

int txn_store_await_topic(txn_coordinator *tc, brk_request *req)
{
	if (req->retried || txn_store_topic(tc))
		return 0;
	brk_internal_topic_op o;
	txn_store_topic_op(&o);
	return brk_ctl_wait_then_retry(req, &server.cluster, &o.op, BRK_ADMIN_WAIT_MS);
}

brk_topic *txn_store_topic(const txn_coordinator *tc)
{
	brk_topic *t = state_topic(tc);
	return t && t->npartitions > 0 ? t : NULL;
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

int16_t txn_store_append(void *arg, int32_t partition, proto_str id, const txn_log_value *v,
			 int64_t now_ms, brk_hw_mark *mark)
{
	txn_coordinator *tc = arg;
	txn_partition *ps = txn_partition_state(tc, partition);
	if (!ps || !tc->partitions)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (!ps->loaded)
		return KERR_NOT_COORDINATOR;
	proto_writer *kv_buf = &tc->kv_buf, *batch_buf = &tc->batch_buf;
	proto_writer_reset(kv_buf);
	txn_key_encode(kv_buf, id);
	size_t klen = kv_buf->len;
	if (v)
		txn_value_encode(kv_buf, v);
	if (kv_buf->err) {
		log_unstorable(id, "its record does not encode (a key string holds at most 32767 bytes)");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	proto_writer_reset(batch_buf);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, batch_buf);
	proto_batch_builder_add(&b, now_ms, kv_buf->buf, (int32_t)klen, v ? kv_buf->buf + klen : NULL,
				v ? (int32_t)(kv_buf->len - klen) : -1);
	int32_t size = proto_batch_builder_finish(&b);
	if (size < 0) {
		log_unstorable(id, "building its record batch failed");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	int rc = brk_internal_append(tc->partitions, ps->p, batch_buf->buf + b.start, size, id.ptr,
				     id.len, now_ms, mark);
	if (rc == BRK_INTERNAL_TOO_LARGE) {
		log_unstorable(id, "its record is larger than the partition accepts");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	return (int16_t)rc;
}

/* ---- loading ---- */

typedef struct load_ctx {
	txn_coordinator *tc;
	int32_t partition;
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
		txn_forget(c->tc, id.ptr, id.len);
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
		txn_forget(c->tc, id.ptr, id.len);
		return 0;
	}
	if (v.status == TXN_PREPARE_EPOCH_FENCE || v.producer_id < 0)
		return 1; /* a transient state Kafka never writes */
	txn_meta *m = meta_from_value(id, &v);
	if (!m)
		return -ENOMEM;
	m->partition = c->partition;
	return txn_restore(c->tc, m) < 0 ? -ENOMEM : 0;
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
static bool producer_has_open_txn(txn_coordinator *tc, int64_t pid)
{
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(tc, i)) != NULL; i++)
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
 * offset commit can only come from an ongoing transaction, and only when
 * every transactional id is coordinated here (store.h).
 */
static void abort_orphan_offsets(txn_coordinator *tc, grp_coordinator *gc, int64_t now_ms)
{
	brk_topic *t = grp_store_topic(gc);
	if (!t)
		return;
	/* One (group, producer) at a time: the marker changes the sets; the
	 * bound only guards against a set that would not shrink. */
	for (int32_t round = 0; round < 100000; round++) {
		grp_group *g, *found = NULL;
		int64_t pid = -1;
		for (int32_t i = 0; !found && (g = grp_txn_group_at(gc, i)) != NULL; i++) {
			int64_t q;
			for (int32_t j = 0; grp_txn_at(g->txns, j, &q) != NULL; j++)
				if (!producer_has_open_txn(tc, q)) {
					found = g;
					pid = q;
					break;
				}
		}
		if (!found)
			return;
		int32_t idx = found->partition;
		brk_partition *p = brk_topic_partition(t, idx);
		const log_producer_entry *e = p && p->log ? log_producer_find(p->log, pid) : NULL;
		int16_t err = KERR_NOT_LEADER_OR_FOLLOWER;
		if (p)
			err = brk_partition_write_txn_marker(tc->partitions, p, pid, e && e->epoch >= 0 ? e->epoch : 0,
							     e && e->coordinator_epoch > 0 ? e->coordinator_epoch : 0,
							     false, now_ms);
		fprintf(stderr,
			"samsa: warning: pending transactional offsets of group '%.64s' (producer id %lld) "
			"%s: no transaction of that producer is ongoing in %s\n",
			found->group_id, (long long)pid,
			err == KERR_NONE ? "aborted" : "could not be aborted", TXN_STATE_TOPIC);
		if (err != KERR_NONE)
			grp_txn_completed(gc, idx, pid, false); /* in memory at least */
	}
}

/* What loading partitions found. */
typedef struct load_stats {
	int32_t partitions;
	int32_t ids;
	int32_t completed;
	int64_t skipped, unknown;
} load_stats;

/*
 * Read partition p (led here, log online) into tc (Kafka's
 * TransactionStateManager.loadTransactionsForTxnTopicPartition), then
 * txn_partition_loaded. Loading is synchronous, on the loop, so
 * COORDINATOR_LOAD_IN_PROGRESS is never answered. On an error the ids read
 * so far are dropped again.
 */
static int load_partition(txn_coordinator *tc, brk_partition *p, load_stats *ls)
{
	int32_t index = p->index;
	load_ctx lc = { .tc = tc, .partition = index };
	proto_arena_init(&lc.arena, 0);
	int rc = brk_internal_topic_read(p, load_batch, &lc);
	proto_arena_free(&lc.arena);
	if (rc) {
		txn_partition_unload(tc, index);
		return rc;
	}
	int32_t ids = 0;
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(tc, i)) != NULL; i++)
		ids += m->partition == index;
	if (lc.skipped > 0)
		fprintf(stderr, "samsa: warning: %lld malformed record(s) in %s-%d skipped\n",
			(long long)lc.skipped, TXN_STATE_TOPIC, (int)index);
	if (lc.unknown > 0)
		fprintf(stderr,
			"samsa: warning: %lld record(s) of an unknown key version in %s-%d skipped\n",
			(long long)lc.unknown, TXN_STATE_TOPIC, (int)index);
	ls->partitions++;
	ls->ids += ids;
	ls->completed += txn_partition_loaded(tc, index, p, p->leader_epoch, brk_wall_ms());
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

/* As group/store.c's follow_partition, for __transaction_state. */
static int follow_partition(txn_coordinator *tc, brk_partition *p, bool quiet, load_stats *ls)
{
	if (txn_partitions_known(tc, p->topic->npartitions) < 0)
		return -ENOMEM;
	int32_t index = p->index;
	txn_partition *ps = txn_partition_state(tc, index);
	if (!ps)
		return 0;
	bool lead = p->role == BRK_ROLE_LEADER && p->log;
	if (ps->loaded && lead && ps->p == p && ps->leader_epoch == p->leader_epoch)
		return 0;
	if (ps->loaded) {
		int32_t n = txn_partition_unload(tc, index);
		if (lead)
			fprintf(stderr, "samsa: %s-%d: unloaded %d transactional id(s): new leader epoch %d\n",
				TXN_STATE_TOPIC, (int)index, (int)n, (int)p->leader_epoch);
		else
			fprintf(stderr, "samsa: %s-%d: unloaded %d transactional id(s): %s\n",
				TXN_STATE_TOPIC, (int)index, (int)n, role_name(p));
	}
	if (!lead) {
		if (p->role == BRK_ROLE_LEADER)
			fprintf(stderr,
				"samsa: warning: %s-%d is offline: its transactional ids are not loaded\n",
				TXN_STATE_TOPIC, (int)index);
		return 0;
	}
	txn_partition_unload(tc, index); /* nothing should be left; be sure */
	load_stats one = { 0 };
	int rc = load_partition(tc, p, &one);
	if (rc) {
		fprintf(stderr,
			"samsa: loading %s-%d failed: %s: its transactional ids are not served here\n",
			TXN_STATE_TOPIC, (int)index, rc < 0 && rc >= -4095 ? strerror(-rc) : "corrupt data");
		return rc;
	}
	if (!quiet && (one.ids > 0 || p->leader_epoch > 0)) /* as group/store.c */
		fprintf(stderr,
			"samsa: %s-%d: loaded %d transactional id(s) at leader epoch %d, %d prepared "
			"transaction(s) completed\n",
			TXN_STATE_TOPIC, (int)index, (int)one.ids, (int)p->leader_epoch,
			(int)one.completed);
	ls->partitions += one.partitions;
	ls->ids += one.ids;
	ls->completed += one.completed;
	return 0;
}

void txn_store_on_role(void *arg, brk_partition *p)
{
	txn_coordinator *tc = arg;
	if (strcmp(p->topic->name, TXN_STATE_TOPIC) != 0)
		return;
	load_stats ls = { 0 };
	(void)follow_partition(tc, p, false, &ls); /* a failure is told and leaves it unloaded */
}

/* txn_env.next_producer_id: the server's blocks from the controller. */
static int16_t next_producer_id(void *arg, int64_t *pid)
{
	(void)arg;
	return (int16_t)brk_producer_ids_next(&server.producer_ids, pid);
}

/* txn_env.offsets_partitions. */
static int32_t offsets_partitions(void *arg)
{
	txn_coordinator *tc = arg;
	brk_topic *t = tc->groups ? grp_store_topic(tc->groups) : NULL;
	return t ? t->npartitions : 0;
}

/* Whether every partition of __transaction_state is loaded here (or the
 * topic does not exist): then every transactional id is known here. */
static bool all_ids_here(txn_coordinator *tc)
{
	brk_topic *t = state_topic(tc);
	for (int32_t i = 0; t && i < t->npartitions; i++) {
		txn_partition *ps = txn_partition_state(tc, i);
		if (!ps || !ps->loaded)
			return false;
	}
	return true;
}

int txn_store_open(txn_coordinator *tc, brk_partitions *reg, grp_coordinator *gc)
{
	tc->partitions = reg;
	tc->groups = gc;
	tc->env = (txn_env){ .arg = tc,
			     .append = txn_store_append,
			     .next_producer_id = next_producer_id,
			     .offsets_partitions = offsets_partitions };
	if (!tc->observing) {
		int rc = brk_partitions_observe_roles(reg, txn_store_on_role, tc);
		if (rc)
			return rc;
		tc->observing = true;
	}
	brk_topic *t = state_topic(tc);
	load_stats ls = { 0 };
	for (int32_t i = 0; t && i < t->npartitions; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		int rc = p ? follow_partition(tc, p, true, &ls) : 0;
		if (rc)
			return rc;
	}
	if (ls.ids > 0)
		fprintf(stderr, "samsa: loaded %d transactional id(s) from %d partition(s) of %s\n",
			(int)ls.ids, (int)ls.partitions, TXN_STATE_TOPIC);
	if (ls.completed > 0)
		fprintf(stderr, "samsa: completed %d transaction(s) found prepared in %s\n",
			(int)ls.completed, TXN_STATE_TOPIC);
	txn_coordinator_start(tc);
	if (tc->cfg->transaction_partition_verification_enable && all_ids_here(tc))
		abort_orphan_offsets(tc, gc, brk_wall_ms());
	return 0;
}
