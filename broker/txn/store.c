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

/*
 * A partition is loaded in slices on the loop, as __consumer_offsets is
 * (group/store.c explains why not a thread): each loop iteration the load
 * timer applies about tc->load_slice records of the partition at the head
 * of the queue, straight into the registry (txn_restore / txn_forget, the
 * ids marked with the partition); until the log end offset is reached the
 * partition's ids answer COORDINATOR_LOAD_IN_PROGRESS and the timers leave
 * them alone. Then txn_partition_loaded completes the transactions found
 * prepared, in the same slice, so nothing is appended between the last
 * record read and the partition being served (the coordinator writes
 * nothing to a loading partition).
 */
typedef struct txn_load {
	txn_coordinator *tc;
	brk_partition *p;
	int32_t partition;         /* its index */
	int32_t leader_epoch;
	bool quiet;                /* a start-up load: summed up in one line */
	brk_internal_reader rd;
	proto_arena arena;
	int64_t skipped;           /* malformed records and batches */
	int64_t unknown;           /* records of another key version */
	int64_t start_ms;          /* monotonic */
	struct txn_load *next;     /* the queue */
} txn_load;

/* What the loads found, for the log lines. */
typedef struct load_stats {
	int32_t partitions;
	int32_t ids;
	int32_t completed;
} load_stats;

struct txn_loader {
	txn_load *head, *tail;
	uint64_t timer;
	load_stats startup;
	int32_t startup_left;
	int64_t startup_ms;
};

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
static int apply_record(txn_load *c, const proto_record *r)
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

/* Apply the records of one batch. Returns the records it held (the
 * slice's budget) or -ENOMEM. */
static int64_t load_batch(txn_load *c, const proto_batch_info *bi, const uint8_t *batch)
{
	int64_t n = bi->records_count > 0 ? bi->records_count : 1;
	if (bi->attributes & PROTO_ATTR_CONTROL)
		return n;
	proto_record_iter it;
	if (proto_record_iter_init(&it, batch, (size_t)bi->size, &c->rd.scratch) != 0) {
		c->skipped++;
		return n;
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
	return n;
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

static void maybe_check_orphans(txn_coordinator *tc);

/* The end of a load: the prepared transactions are completed
 * (txn_partition_loaded), the log lines. */
static void load_done(txn_load *l)
{
	txn_coordinator *tc = l->tc;
	int32_t ids = 0;
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(tc, i)) != NULL; i++)
		ids += m->partition == l->partition;
	if (l->skipped > 0)
		fprintf(stderr, "samsa: warning: %lld malformed record(s) in %s-%d skipped\n",
			(long long)l->skipped, TXN_STATE_TOPIC, (int)l->partition);
	if (l->unknown > 0)
		fprintf(stderr,
			"samsa: warning: %lld record(s) of an unknown key version in %s-%d skipped\n",
			(long long)l->unknown, TXN_STATE_TOPIC, (int)l->partition);
	int32_t completed = txn_partition_loaded(tc, l->partition, l->p, l->leader_epoch, brk_wall_ms());
	struct txn_loader *ld = tc->loader;
	if (l->quiet) {
		ld->startup.partitions++;
		ld->startup.ids += ids;
		ld->startup.completed += completed;
	} else if (ids > 0 || l->leader_epoch > 0) { /* as group/store.c */
		fprintf(stderr,
			"samsa: %s-%d: loaded %d transactional id(s) at leader epoch %d in %lld ms, %d "
			"prepared transaction(s) completed\n",
			TXN_STATE_TOPIC, (int)l->partition, (int)ids, (int)l->leader_epoch,
			(long long)(brk_mono_ms() - l->start_ms), (int)completed);
	}
}

static void load_free(txn_load *l)
{
	brk_internal_reader_free(&l->rd);
	proto_arena_free(&l->arena);
	free(l);
}

static void dequeue(struct txn_loader *ld, txn_load *l)
{
	txn_load **pp = &ld->head;
	txn_load *prev = NULL;
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
 * the summary lines. */
static void startup_load_ended(txn_coordinator *tc, txn_load *l)
{
	struct txn_loader *ld = tc->loader;
	if (!l->quiet || --ld->startup_left > 0)
		return;
	if (ld->startup.ids > 0)
		fprintf(stderr, "samsa: loaded %d transactional id(s) from %d partition(s) of %s in %lld ms\n",
			(int)ld->startup.ids, (int)ld->startup.partitions, TXN_STATE_TOPIC,
			(long long)(brk_mono_ms() - ld->startup_ms));
	if (ld->startup.completed > 0)
		fprintf(stderr, "samsa: completed %d transaction(s) found prepared in %s\n",
			(int)ld->startup.completed, TXN_STATE_TOPIC);
}

/* One slice: up to budget records read and applied. Returns 1 when the
 * load goes on, 0 at the log end offset, or a negative error. */
static int load_slice(txn_load *l, int64_t budget)
{
	while (budget > 0) {
		proto_batch_info bi;
		const uint8_t *batch;
		int rc = brk_internal_reader_next(&l->rd, &bi, &batch);
		if (rc <= 0)
			return rc;
		int64_t n = load_batch(l, &bi, batch);
		if (n < 0)
			return (int)n;
		budget -= n;
	}
	return 1;
}

static void arm_slice(txn_coordinator *tc);

static void run_slice(txn_coordinator *tc)
{
	struct txn_loader *ld = tc->loader;
	txn_load *l = ld->head;
	if (!l)
		return;
	int rc = load_slice(l, tc->load_slice > 0 ? tc->load_slice : TXN_LOAD_SLICE_RECORDS);
	if (rc == 1)
		return;
	dequeue(ld, l);
	if (rc == 0) {
		load_done(l);
	} else {
		fprintf(stderr,
			"samsa: loading %s-%d failed: %s: its transactional ids are not served here\n",
			TXN_STATE_TOPIC, (int)l->partition,
			rc < 0 && rc >= -4095 ? strerror(-rc) : "corrupt data");
		txn_partition_unload(tc, l->partition);
	}
	startup_load_ended(tc, l);
	load_free(l);
	if (!ld->head)
		maybe_check_orphans(tc);
}

static void on_load_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	txn_coordinator *tc = arg;
	tc->loader->timer = 0;
	run_slice(tc);
	arm_slice(tc);
}

/* The next slice on the next loop iteration, or all now without a loop. */
static void arm_slice(txn_coordinator *tc)
{
	struct txn_loader *ld = tc->loader;
	if (!tc->loop) {
		while (ld->head)
			run_slice(tc);
		return;
	}
	if (ld->head && !ld->timer)
		ld->timer = brk_timer_add(tc->loop, 0, on_load_timer, tc);
}

/* Drop the load of partition index, if one is queued (its ids are
 * unloaded by the caller). Returns whether there was one. */
static bool drop_load(txn_coordinator *tc, int32_t index)
{
	struct txn_loader *ld = tc->loader;
	txn_load *l = ld ? ld->head : NULL;
	while (l && l->partition != index)
		l = l->next;
	if (!l)
		return false;
	dequeue(ld, l);
	startup_load_ended(tc, l);
	load_free(l);
	return true;
}

static int start_load(txn_coordinator *tc, brk_partition *p, bool quiet)
{
	struct txn_loader *ld = tc->loader;
	txn_load *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->tc = tc;
	l->p = p;
	l->partition = p->index;
	l->leader_epoch = p->leader_epoch;
	l->quiet = quiet;
	l->start_ms = brk_mono_ms();
	brk_internal_reader_init(&l->rd, p);
	proto_arena_init(&l->arena, 0);
	txn_partition_loading(tc, l->partition, p, l->leader_epoch);
	if (p->log && log_end_offset(p->log) <= log_start_offset(p->log)) {
		/* Nothing to read (a partition just made): served at once, so a
		 * new topic answers its first requests without
		 * COORDINATOR_LOAD_IN_PROGRESS. */
		load_done(l);
		load_free(l);
		return 0;
	}
	if (quiet && ld->startup_left++ == 0)
		ld->startup_ms = l->start_ms;
	if (ld->tail)
		ld->tail->next = l;
	else
		ld->head = l;
	ld->tail = l;
	arm_slice(tc);
	return 0;
}

/* store_close: the loads in progress go (txn_coordinator_free). */
static void store_close(txn_coordinator *tc)
{
	struct txn_loader *ld = tc->loader;
	if (!ld)
		return;
	while (ld->head) {
		txn_load *l = ld->head;
		dequeue(ld, l);
		load_free(l);
	}
	if (ld->timer && tc->loop)
		brk_timer_cancel(tc->loop, ld->timer);
	free(ld);
	tc->loader = NULL;
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
static int follow_partition(txn_coordinator *tc, brk_partition *p, bool quiet)
{
	if (txn_partitions_known(tc, p->topic->npartitions) < 0)
		return -ENOMEM;
	int32_t index = p->index;
	txn_partition *ps = txn_partition_state(tc, index);
	if (!ps)
		return 0;
	bool lead = p->role == BRK_ROLE_LEADER && p->log;
	if ((ps->loaded || ps->loading) && lead && ps->p == p &&
	    ps->leader_epoch == p->leader_epoch)
		return 0;
	bool was_loading = drop_load(tc, index);
	if (ps->loaded || was_loading) {
		int32_t n = txn_partition_unload(tc, index);
		const char *what = was_loading ? "stopped loading, dropped" : "unloaded";
		if (lead)
			fprintf(stderr, "samsa: %s-%d: %s %d transactional id(s): new leader epoch %d\n",
				TXN_STATE_TOPIC, (int)index, what, (int)n, (int)p->leader_epoch);
		else
			fprintf(stderr, "samsa: %s-%d: %s %d transactional id(s): %s\n",
				TXN_STATE_TOPIC, (int)index, what, (int)n, role_name(p));
	}
	if (!lead) {
		if (p->role == BRK_ROLE_LEADER)
			fprintf(stderr,
				"samsa: warning: %s-%d is offline: its transactional ids are not loaded\n",
				TXN_STATE_TOPIC, (int)index);
		return 0;
	}
	txn_partition_unload(tc, index); /* nothing should be left; be sure */
	return start_load(tc, p, quiet);
}

void txn_store_on_role(void *arg, brk_partition *p)
{
	txn_coordinator *tc = arg;
	if (strcmp(p->topic->name, TXN_STATE_TOPIC) != 0)
		return;
	if (follow_partition(tc, p, false) < 0)
		fprintf(stderr, "samsa: %s-%d: out of memory: its transactional ids are not loaded\n",
			TXN_STATE_TOPIC, (int)p->index);
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

/* The start-up check of orphan transactional offsets (abort_orphan_offsets),
 * once, when neither coordinator has a load left. */
static void maybe_check_orphans(txn_coordinator *tc)
{
	grp_coordinator *gc = tc->groups;
	if (!tc->orphan_check || (tc->loader && tc->loader->head) || (gc && gc->nloading > 0))
		return;
	tc->orphan_check = false;
	if (gc && all_ids_here(tc))
		abort_orphan_offsets(tc, gc, brk_wall_ms());
}

/* grp_coordinator.loads_done: the groups' loads ended. */
static void groups_loaded(void *arg)
{
	maybe_check_orphans(arg);
}

int txn_store_open(txn_coordinator *tc, brk_partitions *reg, grp_coordinator *gc)
{
	tc->partitions = reg;
	tc->groups = gc;
	tc->env = (txn_env){ .arg = tc,
			     .append = txn_store_append,
			     .next_producer_id = next_producer_id,
			     .offsets_partitions = offsets_partitions };
	if (!tc->loader) {
		tc->loader = calloc(1, sizeof(*tc->loader));
		if (!tc->loader)
			return -ENOMEM;
		tc->store_close = store_close;
	}
	if (!tc->observing) {
		int rc = brk_partitions_observe_roles(reg, txn_store_on_role, tc);
		if (rc)
			return rc;
		tc->observing = true;
	}
	tc->orphan_check = tc->cfg->transaction_partition_verification_enable;
	if (gc) {
		gc->loads_done = groups_loaded;
		gc->loads_done_arg = tc;
	}
	brk_topic *t = state_topic(tc);
	for (int32_t i = 0; t && i < t->npartitions; i++) {
		brk_partition *p = brk_topic_partition(t, i);
		int rc = p ? follow_partition(tc, p, true) : 0;
		if (rc)
			return rc;
	}
	txn_coordinator_start(tc);
	maybe_check_orphans(tc); /* nothing to load: at once */
	return 0;
}
