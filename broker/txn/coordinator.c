/*
 * coordinator.c - the transaction coordinator (txn.h): the registry of
 * transactional ids and the partitions of __transaction_state it serves,
 * the state machine of Kafka's TransactionCoordinator /
 * TransactionMetadata, the markers (a job per transaction, markers.h, once
 * its Prepare record is committed), and the two timers of Kafka's
 * TransactionStateManager (abort of timed-out transactions, expiry of idle
 * transactional ids).
 *
 * A change is computed as a "transit" (Kafka's TxnTransitMetadata) from
 * the current metadata, appended to __transaction_state (env.append) and
 * applied only when that append succeeded.
 */
#include "broker/txn/txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/internal_topic.h"
#include "broker/loop.h"
#include "broker/ratelog.h"
#include "protocol/err.h"

/* Kafka's TransactionMetadata.isEpochExhausted: epochs at or above
 * Short.MaxValue - 1 are kept for fencing. */
#define EPOCH_EXHAUSTED (INT16_MAX - 1)

static bool epoch_exhausted(int16_t e) { return e >= EPOCH_EXHAUSTED; }

static const char *const state_names[TXN_STATE_COUNT] = {
	"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence",
};

const char *txn_state_name(txn_state s)
{
	return (unsigned)s < TXN_STATE_COUNT ? state_names[s] : "Unknown";
}

int txn_state_from_name(proto_str name)
{
	for (int i = 0; i < TXN_STATE_COUNT; i++)
		if (proto_str_eq(name, state_names[i]))
			return i;
	return -1;
}

/* ---- the coordinator and its partitions ---- */

void txn_coordinator_init(txn_coordinator *tc, brk_loop *loop, const brk_config *cfg)
{
	memset(tc, 0, sizeof(*tc));
	tc->loop = loop;
	tc->cfg = cfg;
	brk_strmap_init(&tc->ids);
	tc->load_slice = TXN_LOAD_SLICE_RECORDS;
	proto_writer_init(&tc->batch_buf);
	proto_writer_init(&tc->kv_buf);
}

int txn_partitions_known(txn_coordinator *tc, int32_t npartitions)
{
	if (npartitions > tc->npartitions) {
		txn_partition *n = realloc(tc->parts, (size_t)npartitions * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + tc->npartitions, 0, (size_t)(npartitions - tc->npartitions) * sizeof(*n));
		tc->parts = n;
	}
	if (npartitions > 0)
		tc->npartitions = npartitions;
	return 0;
}

int32_t txn_partition_of(const txn_coordinator *tc, proto_str id)
{
	if (tc->npartitions <= 0)
		return -1;
	return brk_coordinator_partition(id.ptr, id.len > 0 ? id.len : 0, tc->npartitions);
}

txn_partition *txn_partition_state(txn_coordinator *tc, int32_t index)
{
	return index >= 0 && index < tc->npartitions ? &tc->parts[index] : NULL;
}

int16_t txn_coordinator_error(const txn_coordinator *tc, proto_str id)
{
	int32_t i = txn_partition_of(tc, id);
	if (i < 0)
		return KERR_NONE; /* no __transaction_state yet: its writes answer */
	if (tc->parts[i].loaded)
		return KERR_NONE;
	return tc->parts[i].loading ? KERR_COORDINATOR_LOAD_IN_PROGRESS : KERR_NOT_COORDINATOR;
}

/* Whether m's partition is served here: loaded, or none known. */
static bool served(txn_coordinator *tc, const txn_meta *m)
{
	const txn_partition *ps = txn_partition_state(tc, m->partition);
	return !ps || ps->loaded;
}

brk_hw_mark txn_last_write(txn_coordinator *tc, proto_str id)
{
	txn_partition *ps = txn_partition_state(tc, txn_partition_of(tc, id));
	return ps && ps->loaded ? ps->last_write : (brk_hw_mark){ 0 };
}

int txn_answer(txn_coordinator *tc, brk_request *req, proto_str id, brk_hw_fail_fn fail, void *arg)
{
	brk_hw_mark m = txn_last_write(tc, id);
	return brk_hw_answer(req, &m, 1, TXN_WRITE_TIMEOUT_MS, KERR_COORDINATOR_NOT_AVAILABLE, fail,
			     arg);
}

/* ---- registry ---- */

txn_meta *txn_find(txn_coordinator *tc, const char *id, int32_t len)
{
	return brk_strmap_get(&tc->ids, id, len);
}

txn_meta *txn_at(txn_coordinator *tc, int32_t i)
{
	return brk_strmap_at(&tc->ids, i);
}

int32_t txn_count(const txn_coordinator *tc)
{
	return brk_strmap_count(&tc->ids);
}

void txn_meta_free(txn_meta *m)
{
	if (!m)
		return;
	for (int32_t i = 0; i < m->ntps; i++)
		free(m->tps[i].topic);
	free(m->tps);
	free(m->id);
	free(m);
}

/* Add m (not known yet; its own id is the key). Returns 0 or -ENOMEM. */
static int insert(txn_coordinator *tc, txn_meta *m)
{
	if (brk_strmap_put(&tc->ids, m->id, m->id_len, m) < 0)
		return -ENOMEM;
	m->coord = tc;
	return 0;
}

/* Stop m's work in flight: its markers and the wait for its Prepare
 * record. */
static void stop_work(txn_meta *m)
{
	txn_markers_cancel(m->markers);
	m->markers = NULL;
	brk_hw_wait_cancel(m->prepare_wait);
	m->prepare_wait = NULL;
}

/* Take m out of the registry and free it. */
static void remove_meta(txn_coordinator *tc, txn_meta *m)
{
	stop_work(m);
	brk_strmap_remove(&tc->ids, m->id, m->id_len);
	txn_meta_free(m);
}

int txn_restore(txn_coordinator *tc, txn_meta *m)
{
	txn_meta *old = txn_find(tc, m->id, m->id_len);
	if (old)
		remove_meta(tc, old);
	if (insert(tc, m) < 0) {
		txn_meta_free(m);
		return -ENOMEM;
	}
	return 0;
}

void txn_forget(txn_coordinator *tc, const char *id, int32_t len)
{
	txn_meta *m = txn_find(tc, id, len);
	if (m)
		remove_meta(tc, m);
}

void txn_coordinator_free(txn_coordinator *tc)
{
	if (tc->store_close)
		tc->store_close(tc); /* the loads in progress first */
	tc->store_close = NULL;
	if (tc->loop) {
		if (tc->abort_timer)
			brk_timer_cancel(tc->loop, tc->abort_timer);
		if (tc->expire_timer)
			brk_timer_cancel(tc->loop, tc->expire_timer);
	}
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(tc, i)) != NULL; i++) {
		stop_work(m);
		txn_meta_free(m);
	}
	brk_strmap_free(&tc->ids);
	free(tc->parts);
	free(tc->log_tps);
	free(tc->refs);
	proto_writer_free(&tc->batch_buf);
	proto_writer_free(&tc->kv_buf);
	tc->parts = NULL;
	tc->log_tps = NULL;
	tc->refs = NULL;
	tc->npartitions = tc->nloading = tc->log_tps_cap = tc->refs_cap = 0;
	tc->abort_timer = tc->expire_timer = 0;
}

/* A new metadata for id (Kafka's handleInitProducerId for an unknown id):
 * Empty, epoch -1, not in the registry yet. NULL on ENOMEM. */
static txn_meta *meta_new(txn_coordinator *tc, proto_str id, int64_t producer_id,
			  int32_t timeout_ms, int64_t now_ms)
{
	txn_meta *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->id = malloc((size_t)id.len + 1);
	if (!m->id) {
		free(m);
		return NULL;
	}
	memcpy(m->id, id.ptr, (size_t)id.len);
	m->id[id.len] = '\0';
	m->id_len = id.len;
	m->producer_id = producer_id;
	m->prev_producer_id = -1;
	m->next_producer_id = -1;
	m->producer_epoch = -1;
	m->last_producer_epoch = -1;
	m->timeout_ms = timeout_ms;
	m->state = TXN_EMPTY;
	m->start_ms = -1;
	m->last_update_ms = now_ms;
	m->client_tv = TXN_TV0;
	m->partition = txn_partition_of(tc, id);
	return m;
}

/* ---- partitions ---- */

static int name_cmp(const char *a, int32_t alen, const char *b, int32_t blen)
{
	int c = memcmp(a, b, (size_t)(alen < blen ? alen : blen));
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int ref_cmp(const void *x, const void *y)
{
	const txn_tp_ref *a = x, *b = y;
	int c = name_cmp(a->topic.ptr, a->topic.len, b->topic.ptr, b->topic.len);
	if (c)
		return c;
	return a->partition < b->partition ? -1 : a->partition > b->partition;
}

static int ref_tp_cmp(const txn_tp_ref *a, const txn_tp *b)
{
	int c = name_cmp(a->topic.ptr, a->topic.len, b->topic, b->topic_len);
	if (c)
		return c;
	return a->partition < b->partition ? -1 : a->partition > b->partition;
}

/* Whether m's (sorted) partitions hold r. */
static bool has_tp(const txn_meta *m, const txn_tp_ref *r)
{
	int32_t lo = 0, hi = m->ntps;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		int c = ref_tp_cmp(r, &m->tps[mid]);
		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

/* ---- transitions ---- */

enum { TPS_KEEP, TPS_CLEAR, TPS_SET };

/* Kafka's TxnTransitMetadata: the metadata a change leads to. */
typedef struct transit {
	int64_t producer_id, prev_producer_id, next_producer_id;
	int16_t producer_epoch, last_producer_epoch;
	int32_t timeout_ms;
	txn_state state;
	int64_t start_ms, last_update_ms;
	int16_t client_tv;
	int tps_mode;
	txn_tp *tps;     /* TPS_SET: the new partitions (topics moved from m or fresh) */
	int32_t ntps;
	uint8_t *fresh;  /* TPS_SET: 1 where the topic string is new */
} transit;

/* A transit to the same metadata; prev_producer_id becomes the current
 * producer id, as Kafka's TransactionMetadata.prepareTransitionTo. */
static void transit_init(transit *t, const txn_meta *m)
{
	memset(t, 0, sizeof(*t));
	t->producer_id = m->producer_id;
	t->prev_producer_id = m->producer_id;
	t->next_producer_id = m->next_producer_id;
	t->producer_epoch = m->producer_epoch;
	t->last_producer_epoch = m->last_producer_epoch;
	t->timeout_ms = m->timeout_ms;
	t->state = m->state;
	t->start_ms = m->start_ms;
	t->last_update_ms = m->last_update_ms;
	t->client_tv = m->client_tv;
	t->tps_mode = TPS_KEEP;
}

static void transit_drop(transit *t)
{
	if (t->tps_mode != TPS_SET)
		return;
	for (int32_t i = 0; i < t->ntps; i++)
		if (t->fresh[i])
			free(t->tps[i].topic);
	free(t->tps);
	free(t->fresh);
	t->tps = NULL;
	t->fresh = NULL;
}

static bool is_prepare(const txn_meta *m)
{
	return m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT;
}

/*
 * Append the record of t for m, then apply t to m (Kafka's
 * appendTransactionToLog + completeTransitionTo, the transition applied
 * at the append: txn.h, "Writes"). The write becomes the partition's last
 * write, and a Prepare* record also m's prepare_mark. Returns a Kafka
 * error; on error m is unchanged and t's own allocations are freed.
 */
static int16_t apply(txn_meta *m, transit *t, int64_t now_ms)
{
	txn_coordinator *tc = m->coord;
	const txn_tp *tps = t->tps_mode == TPS_SET ? t->tps : m->tps;
	int32_t ntps = t->tps_mode == TPS_SET ? t->ntps : t->tps_mode == TPS_CLEAR ? 0 : m->ntps;
	if (ntps > tc->log_tps_cap) {
		txn_log_tp *n = realloc(tc->log_tps, (size_t)ntps * sizeof(*n));
		if (!n) {
			transit_drop(t);
			return KERR_UNKNOWN_SERVER_ERROR;
		}
		tc->log_tps = n;
		tc->log_tps_cap = ntps;
	}
	txn_log_tp *log_tps = tc->log_tps;
	for (int32_t i = 0; i < ntps; i++) {
		log_tps[i].topic = proto_str_of(tps[i].topic, tps[i].topic_len);
		log_tps[i].partition = tps[i].partition;
	}
	/* Kafka writes value v1 (flexible, with the tagged fields) only with
	 * transaction version 2; an Empty transaction has null partitions. */
	txn_log_value v = {
		.version = t->client_tv >= TXN_TV2 ? 1 : 0,
		.producer_id = t->producer_id,
		.prev_producer_id = t->prev_producer_id,
		.next_producer_id = t->next_producer_id,
		.producer_epoch = t->producer_epoch,
		.timeout_ms = t->timeout_ms,
		.status = (int8_t)t->state,
		.partitions_null = t->state == TXN_EMPTY,
		.ntps = ntps,
		.tps = log_tps,
		.last_update_ms = t->last_update_ms,
		.start_ms = t->start_ms,
		.client_tv = t->client_tv,
	};
	brk_hw_mark mark = { 0 };
	int16_t err = tc->env.append(tc->env.arg, m->partition, proto_str_of(m->id, m->id_len), &v,
				     now_ms, &mark);
	if (err) {
		transit_drop(t);
		return err;
	}
	txn_partition *ps = txn_partition_state(tc, m->partition);
	if (ps && ps->loaded)
		ps->last_write = mark;
	m->prepare_mark = t->state == TXN_PREPARE_COMMIT || t->state == TXN_PREPARE_ABORT
				  ? mark
				  : (brk_hw_mark){ 0 };
	m->producer_id = t->producer_id;
	m->prev_producer_id = t->prev_producer_id;
	m->next_producer_id = t->next_producer_id;
	m->producer_epoch = t->producer_epoch;
	m->last_producer_epoch = t->last_producer_epoch;
	m->timeout_ms = t->timeout_ms;
	m->state = t->state;
	m->start_ms = t->start_ms;
	m->last_update_ms = t->last_update_ms;
	m->client_tv = t->client_tv;
	if (t->tps_mode == TPS_CLEAR) {
		for (int32_t i = 0; i < m->ntps; i++)
			free(m->tps[i].topic);
		m->ntps = 0;
	} else if (t->tps_mode == TPS_SET) {
		free(m->tps); /* the strings moved into t->tps */
		m->tps = t->tps;
		m->ntps = m->tps_cap = t->ntps;
		free(t->fresh);
		t->tps = NULL;
		t->fresh = NULL;
	}
	return KERR_NONE;
}

/* ---- markers ---- */

/*
 * The Complete* record of m, whose markers are all written (Kafka's
 * prepareComplete: with transaction version 2 and a next producer id, the
 * producer id rotates to it at epoch 0). Returns its error.
 */
static int16_t write_complete(txn_meta *m, int64_t now_ms)
{
	transit t;
	transit_init(&t, m);
	t.state = m->state == TXN_PREPARE_COMMIT ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT;
	if (m->client_tv >= TXN_TV2 && m->next_producer_id != -1) {
		t.producer_id = m->next_producer_id;
		t.producer_epoch = 0;
	}
	t.next_producer_id = -1;
	t.tps_mode = TPS_CLEAR;
	t.last_update_ms = now_ms;
	int16_t err = apply(m, &t, now_ms);
	static brk_ratelog rl = BRK_RATELOG_INIT;
	if (err)
		brk_ratelog_printf(&rl, "samsa: transactional id %s: writing %s failed (error %d): "
				   "retried later\n", m->id, txn_state_name(t.state), err);
	return err;
}

/* A partition's marker is done: it leaves m->tps (Kafka's
 * TransactionMetadata.removePartition), so DescribeTransactions shows
 * those still pending. */
static void on_marker_done(void *arg, const char *topic, int32_t tlen, int32_t partition)
{
	txn_meta *m = arg;
	for (int32_t i = 0; i < m->ntps; i++) {
		txn_tp *tp = &m->tps[i];
		if (tp->partition != partition || tp->topic_len != tlen ||
		    memcmp(tp->topic, topic, (size_t)tlen) != 0)
			continue;
		free(tp->topic);
		memmove(tp, tp + 1, (size_t)(m->ntps - i - 1) * sizeof(*tp));
		m->ntps--;
		return;
	}
}

/* Every marker of m is done (the job is over): Complete*. A failure of
 * that record is retried by the abort timer (txn_abort_timed_out). */
static void on_markers_complete(void *arg)
{
	txn_meta *m = arg;
	m->markers = NULL;
	(void)write_complete(m, brk_wall_ms());
}

/* Start m's markers (its Prepare* record committed). Returns
 * TXN_MARKERS_DONE, TXN_MARKERS_PENDING (m->markers set) or -ENOMEM. */
static int start_markers(txn_meta *m)
{
	txn_coordinator *tc = m->coord;
	txn_partition *ps = txn_partition_state(tc, m->partition);
	txn_marker_target *targets = calloc((size_t)(m->ntps ? m->ntps : 1), sizeof(*targets));
	if (!targets)
		return -ENOMEM;
	for (int32_t i = 0; i < m->ntps; i++)
		targets[i] = (txn_marker_target){ m->tps[i].topic, m->tps[i].topic_len,
						  m->tps[i].partition, 0 };
	txn_marker_batch mk = {
		.producer_id = m->producer_id,
		.producer_epoch = m->producer_epoch,
		.coordinator_epoch = ps ? ps->leader_epoch : -1,
		.commit = m->state == TXN_PREPARE_COMMIT,
		.transaction_version = (int8_t)(m->client_tv >= TXN_TV2 ? TXN_TV2 : TXN_TV0),
	};
	txn_marker_cb cb = { m, on_marker_done, on_markers_complete };
	int rc = txn_markers_start(tc->loop, &tc->markers, m->id, &mk, targets, m->ntps, &cb,
				   &m->markers);
	free(targets);
	return rc;
}

static int16_t complete(txn_meta *m, int64_t now_ms);

/* m's Prepare* record is committed (or the wait for it ended). */
static void on_prepare_committed(void *arg, int16_t err)
{
	txn_meta *m = arg;
	m->prepare_wait = NULL;
	if (err == KERR_NOT_COORDINATOR)
		return; /* the partition moved: it is being unloaded */
	/* committed: the markers; timed out: wait again (the record is in
	 * this leader's log, committed or gone with the leadership) */
	(void)complete(m, brk_wall_ms());
}

/*
 * Finish a transaction in Prepare*: once its Prepare* record is committed,
 * the markers (markers.h), then the Complete* record. Returns NONE when
 * complete now, CONCURRENT_TRANSACTIONS while the record or a marker is
 * pending (it goes on by itself), NOT_COORDINATOR when the partition moved,
 * or the error of the Complete* record.
 */
static int16_t complete(txn_meta *m, int64_t now_ms)
{
	if (m->markers || m->prepare_wait)
		return KERR_CONCURRENT_TRANSACTIONS;
	switch (brk_hw_mark_state(&m->prepare_mark)) {
	case BRK_HW_LOST:
		return KERR_NOT_COORDINATOR;
	case BRK_HW_PENDING:
		/* Without memory for the wait the abort timer tries again. */
		m->prepare_wait = brk_hw_wait_start(&m->prepare_mark, TXN_WRITE_TIMEOUT_MS,
						    KERR_REQUEST_TIMED_OUT, on_prepare_committed, m);
		return KERR_CONCURRENT_TRANSACTIONS;
	default:
		break;
	}
	m->prepare_mark = (brk_hw_mark){ 0 };
	int rc = start_markers(m);
	if (rc != TXN_MARKERS_DONE)
		return KERR_CONCURRENT_TRANSACTIONS; /* pending, or no memory: the timer */
	return write_complete(m, now_ms);
}

/*
 * Fence the producer of an Ongoing transaction and abort it (Kafka's
 * prepareFenceProducerEpoch, then endTransaction(ABORT, isFromClient =
 * false) with the server's transaction version): PrepareAbort at epoch + 1
 * with no last epoch, markers at that epoch, CompleteAbort. Returns the
 * error of the PrepareAbort record (the completion may stay pending).
 */
static int16_t fence_and_abort(txn_meta *m, int64_t now_ms)
{
	transit t;
	transit_init(&t, m);
	if (m->producer_epoch != INT16_MAX)
		t.producer_epoch = (int16_t)(m->producer_epoch + 1);
	t.last_producer_epoch = -1;
	t.state = TXN_PREPARE_ABORT;
	t.next_producer_id = -1;
	t.last_update_ms = now_ms;
	t.client_tv = TXN_TV0;
	int16_t err = apply(m, &t, now_ms);
	if (err == KERR_NONE)
		(void)complete(m, now_ms);
	return err;
}

/* ---- InitProducerId ---- */

/* KIP-360's producer id check (Kafka's prepareInitProducerIdTransit
 * isValidProducerId). */
static bool valid_producer_id(const txn_meta *m, int64_t pid, int16_t epoch)
{
	return m->producer_epoch == -1 || pid == m->producer_id ||
	       (pid == m->prev_producer_id && epoch_exhausted(epoch));
}

/* The Empty transit of InitProducerId for m in Empty/Complete* (Kafka's
 * prepareProducerIdRotation / prepareIncrementProducerEpoch). */
static int16_t init_transit(txn_meta *m, bool expected, int16_t exp_epoch, int32_t timeout_ms,
			    int64_t now_ms, transit *t)
{
	transit_init(t, m);
	if (epoch_exhausted(m->producer_epoch) && (!expected || exp_epoch == m->producer_epoch)) {
		int64_t pid;
		txn_coordinator *tc = m->coord;
		int16_t err = tc->env.next_producer_id(tc->env.arg, &pid);
		if (err)
			return err;
		t->producer_id = pid;
		t->producer_epoch = 0;
		t->last_producer_epoch = expected ? m->producer_epoch : -1;
	} else if (!expected) {
		t->producer_epoch = (int16_t)(m->producer_epoch + 1);
		t->last_producer_epoch = -1;
	} else if (!epoch_exhausted(m->producer_epoch) &&
		   (m->producer_epoch == -1 || exp_epoch == m->producer_epoch)) {
		t->producer_epoch = (int16_t)(m->producer_epoch + 1);
		t->last_producer_epoch = m->producer_epoch;
	} else if (exp_epoch == m->last_producer_epoch) {
		/* A retry of a bump that succeeded: the current epoch again. */
	} else {
		return KERR_PRODUCER_FENCED;
	}
	t->state = TXN_EMPTY;
	t->timeout_ms = timeout_ms;
	t->tps_mode = TPS_CLEAR;
	t->start_ms = -1;
	t->last_update_ms = now_ms;
	return KERR_NONE;
}

int16_t txn_init_producer_id(txn_coordinator *tc, proto_str id, int32_t timeout_ms,
			     int64_t expected_pid, int16_t expected_epoch, int64_t now_ms, int64_t *pid,
			     int16_t *epoch)
{
	*pid = -1;
	*epoch = -1;
	if (id.len <= 0)
		return KERR_INVALID_REQUEST;
	if (timeout_ms <= 0 || timeout_ms > tc->cfg->transaction_max_timeout_ms)
		return KERR_INVALID_TRANSACTION_TIMEOUT;
	int16_t cerr = txn_coordinator_error(tc, id);
	if (cerr)
		return cerr;
	bool expected = expected_pid != -1;
	txn_meta *m = txn_find(tc, id.ptr, id.len);
	txn_meta *fresh = NULL;
	if (!m) {
		int64_t np;
		int16_t err = tc->env.next_producer_id(tc->env.arg, &np);
		if (err)
			return err;
		fresh = m = meta_new(tc, id, np, timeout_ms, now_ms);
		if (!m)
			return KERR_UNKNOWN_SERVER_ERROR;
		m->coord = tc; /* not in the registry until its record is written */
	}
	int16_t err = KERR_NONE;
	for (int round = 0;; round++) {
		if (expected && !valid_producer_id(m, expected_pid, expected_epoch)) {
			err = KERR_PRODUCER_FENCED;
			break;
		}
		if (is_prepare(m)) {
			/* Markers left from an earlier end: try them again. */
			if (round == 0 && complete(m, now_ms) == KERR_NONE)
				continue;
			err = KERR_CONCURRENT_TRANSACTIONS;
			break;
		}
		if (m->state == TXN_ONGOING) {
			/* Kafka fences and aborts, answers CONCURRENT_TRANSACTIONS
			 * and bumps again on the client's retry; when the
			 * markers are all written at once (a single node) the
			 * retry happens here at once. */
			if (round > 0) {
				err = KERR_CONCURRENT_TRANSACTIONS;
				break;
			}
			err = fence_and_abort(m, now_ms);
			if (err)
				break;
			continue;
		}
		if (m->state != TXN_EMPTY && m->state != TXN_COMPLETE_COMMIT &&
		    m->state != TXN_COMPLETE_ABORT) {
			err = KERR_UNKNOWN_SERVER_ERROR; /* Dead / PrepareEpochFence: never kept */
			break;
		}
		transit t;
		err = init_transit(m, expected, expected_epoch, timeout_ms, now_ms, &t);
		if (err == KERR_NONE)
			err = apply(m, &t, now_ms);
		break;
	}
	if (err == KERR_NONE && fresh && insert(tc, fresh) < 0)
		err = KERR_UNKNOWN_SERVER_ERROR; /* written, but forgotten: the next init redoes it */
	else if (err == KERR_NONE)
		fresh = NULL;
	if (fresh)
		txn_meta_free(fresh);
	if (err == KERR_NONE) {
		*pid = m->producer_id;
		*epoch = m->producer_epoch;
	}
	return err;
}

/* ---- AddPartitionsToTxn / AddOffsetsToTxn ---- */

/* The checks shared by adding and verifying (Kafka's
 * handleAddPartitionsToTransaction / handleVerifyPartitionsInTransaction). */
static int16_t check_producer(txn_meta *m, int64_t pid, int16_t epoch, int64_t now_ms)
{
	if (!m || m->producer_id != pid)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (m->producer_epoch != epoch)
		return KERR_PRODUCER_FENCED;
	if (is_prepare(m) && complete(m, now_ms) != KERR_NONE)
		return KERR_CONCURRENT_TRANSACTIONS;
	return KERR_NONE;
}

int16_t txn_add_partitions(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			   const txn_tp_ref *tps, int32_t n, int16_t client_tv, int64_t now_ms)
{
	if (id.len <= 0)
		return KERR_INVALID_REQUEST;
	int16_t err = txn_coordinator_error(tc, id);
	if (err)
		return err;
	txn_meta *m = txn_find(tc, id.ptr, id.len);
	err = check_producer(m, pid, epoch, now_ms);
	if (err)
		return err;
	if (m->state != TXN_EMPTY && m->state != TXN_ONGOING && m->state != TXN_COMPLETE_COMMIT &&
	    m->state != TXN_COMPLETE_ABORT)
		return KERR_UNKNOWN_SERVER_ERROR;
	if (n > tc->refs_cap) {
		txn_tp_ref *r = realloc(tc->refs, (size_t)n * sizeof(*r));
		if (!r)
			return KERR_UNKNOWN_SERVER_ERROR;
		tc->refs = r;
		tc->refs_cap = n;
	}
	txn_tp_ref *refs = tc->refs;
	/* The partitions not in the transaction yet, sorted, once each. */
	int32_t nnew = 0;
	if (n > 0) {
		memcpy(refs, tps, (size_t)n * sizeof(*refs));
		qsort(refs, (size_t)n, sizeof(*refs), ref_cmp);
	}
	for (int32_t i = 0; i < n; i++) {
		if (nnew > 0 && ref_cmp(&refs[i], &refs[nnew - 1]) == 0)
			continue;
		if (!has_tp(m, &refs[i]))
			refs[nnew++] = refs[i];
	}
	/* Already all in an Ongoing transaction: nothing to write (Kafka's
	 * shortcut). */
	if (m->state == TXN_ONGOING && nnew == 0)
		return KERR_NONE;

	transit t;
	transit_init(&t, m);
	t.tps_mode = TPS_SET;
	int32_t total = m->ntps + nnew;
	t.tps = malloc((size_t)(total ? total : 1) * sizeof(*t.tps));
	t.fresh = calloc((size_t)(total ? total : 1), 1);
	if (!t.tps || !t.fresh) {
		free(t.tps);
		free(t.fresh);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	/* Merge the current partitions with the new ones. */
	int32_t a = 0, b = 0;
	for (int32_t k = 0; k < total; k++) {
		if (b >= nnew || (a < m->ntps && ref_tp_cmp(&refs[b], &m->tps[a]) > 0)) {
			t.tps[k] = m->tps[a++];
		} else {
			txn_tp *tp = &t.tps[k];
			tp->topic = malloc((size_t)refs[b].topic.len + 1);
			tp->topic_len = refs[b].topic.len;
			tp->partition = refs[b].partition;
			if (!tp->topic) {
				t.ntps = k;
				transit_drop(&t);
				return KERR_UNKNOWN_SERVER_ERROR;
			}
			memcpy(tp->topic, refs[b].topic.ptr, (size_t)refs[b].topic.len);
			tp->topic[refs[b].topic.len] = '\0';
			t.fresh[k] = 1;
			b++;
		}
		t.ntps = k + 1;
	}
	/* Kafka's prepareAddPartitions: the transaction starts now unless
	 * it is already Ongoing. */
	if (m->state != TXN_ONGOING)
		t.start_ms = now_ms;
	t.state = TXN_ONGOING;
	t.last_update_ms = now_ms;
	t.client_tv = client_tv;
	return apply(m, &t, now_ms);
}

int16_t txn_verify_partitions(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			      const txn_tp_ref *tps, int32_t n, int16_t missing, int16_t *errs)
{
	if (id.len <= 0)
		return KERR_INVALID_REQUEST;
	int16_t err = txn_coordinator_error(tc, id);
	if (err)
		return err;
	txn_meta *m = txn_find(tc, id.ptr, id.len);
	err = check_producer(m, pid, epoch, brk_wall_ms());
	if (err)
		return err;
	for (int32_t i = 0; i < n; i++)
		errs[i] = has_tp(m, &tps[i]) ? KERR_NONE : missing;
	return KERR_NONE;
}

int16_t txn_verify_partition(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			     const char *topic, int32_t partition)
{
	if (id.len <= 0)
		return KERR_INVALID_REQUEST;
	int16_t err = txn_coordinator_error(tc, id);
	if (err)
		return err;
	txn_meta *m = txn_find(tc, id.ptr, id.len);
	err = check_producer(m, pid, epoch, brk_wall_ms());
	if (err)
		return err;
	txn_tp_ref r = { proto_cstr(topic), partition };
	if (m->state != TXN_ONGOING || !has_tp(m, &r))
		return KERR_TRANSACTION_ABORTABLE;
	return KERR_NONE;
}

int16_t txn_add_offsets(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch,
			proto_str group, int64_t now_ms)
{
	int32_t np = tc->env.offsets_partitions(tc->env.arg);
	if (np <= 0)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	txn_tp_ref r = {
		proto_cstr(BRK_OFFSETS_TOPIC),
		brk_coordinator_partition(group.ptr, group.len > 0 ? group.len : 0, np),
	};
	return txn_add_partitions(tc, id, pid, epoch, &r, 1, TXN_TV0, now_ms);
}

/* ---- EndTxn ---- */

/* Write the Prepare* record of t, then complete at once (the answer does
 * not wait for the markers, as in Kafka). */
static int16_t prepare_and_complete(txn_meta *m, transit *t, int64_t now_ms)
{
	int16_t err = apply(m, t, now_ms);
	if (err == KERR_NONE)
		(void)complete(m, now_ms);
	return err;
}

/* Transaction version 0/1 (Kafka's endTransactionWithTV1, from a client). */
static int16_t end_tv1(txn_meta *m, int16_t epoch, bool commit, int64_t now_ms)
{
	if (m->producer_epoch != epoch)
		return KERR_PRODUCER_FENCED;
	switch (m->state) {
	case TXN_ONGOING: {
		transit t;
		transit_init(&t, m);
		t.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
		t.next_producer_id = -1;
		t.last_update_ms = now_ms;
		t.client_tv = TXN_TV0;
		return prepare_and_complete(m, &t, now_ms);
	}
	case TXN_COMPLETE_COMMIT:
		return commit ? KERR_NONE : KERR_INVALID_TXN_STATE;
	case TXN_COMPLETE_ABORT:
		return commit ? KERR_INVALID_TXN_STATE : KERR_NONE;
	case TXN_PREPARE_COMMIT:
		return commit ? KERR_CONCURRENT_TRANSACTIONS : KERR_INVALID_TXN_STATE;
	case TXN_PREPARE_ABORT:
		return commit ? KERR_INVALID_TXN_STATE : KERR_CONCURRENT_TRANSACTIONS;
	case TXN_EMPTY:
		return KERR_INVALID_TXN_STATE;
	default:
		return KERR_UNKNOWN_SERVER_ERROR;
	}
}

/* The Prepare* transit of transaction version 2 (Kafka's
 * prepareAbortOrCommit with epoch bump; a new producer id is reserved when
 * the epoch is exhausted). */
static int16_t end_tv2_prepare(txn_meta *m, bool commit, bool no_partition_added, int64_t now_ms)
{
	int64_t next_pid = -1;
	if (epoch_exhausted(m->producer_epoch)) {
		txn_coordinator *tc = m->coord;
		int16_t err = tc->env.next_producer_id(tc->env.arg, &next_pid);
		if (err)
			return err;
	}
	transit t;
	transit_init(&t, m);
	t.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
	if (m->producer_epoch != INT16_MAX)
		t.producer_epoch = (int16_t)(m->producer_epoch + 1);
	t.last_producer_epoch = m->producer_epoch;
	if (no_partition_added)
		t.start_ms = now_ms;
	t.next_producer_id = next_pid;
	t.last_update_ms = now_ms;
	t.client_tv = TXN_TV2;
	return prepare_and_complete(m, &t, now_ms);
}

/* Transaction version 2 (Kafka's endTransaction for EndTxn v5+, from a
 * client): the retry rules of its state table. */
static int16_t end_tv2(txn_meta *m, int64_t pid, int16_t epoch, bool commit, int64_t now_ms)
{
	bool retry_on_overflow = m->prev_producer_id == pid && epoch == EPOCH_EXHAUSTED &&
				 m->producer_epoch == 0;
	bool retry_on_bump = m->producer_epoch == epoch + 1;
	bool valid_epoch;
	switch (m->state) {
	case TXN_PREPARE_COMMIT:
	case TXN_PREPARE_ABORT:
		valid_epoch = retry_on_bump;
		break;
	case TXN_COMPLETE_COMMIT:
	case TXN_COMPLETE_ABORT:
		valid_epoch = retry_on_bump || retry_on_overflow || epoch == m->producer_epoch;
		break;
	default:
		valid_epoch = epoch == m->producer_epoch;
	}
	bool retry = retry_on_bump || retry_on_overflow;
	if (m->producer_id != pid && !retry_on_overflow)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (!valid_epoch)
		return KERR_PRODUCER_FENCED;
	switch (m->state) {
	case TXN_ONGOING:
		return end_tv2_prepare(m, commit, false, now_ms);
	case TXN_COMPLETE_COMMIT:
		if (commit)
			return retry ? KERR_NONE : KERR_INVALID_TXN_STATE;
		return retry ? KERR_INVALID_TXN_STATE : end_tv2_prepare(m, false, true, now_ms);
	case TXN_COMPLETE_ABORT:
		if (!commit)
			return retry ? KERR_NONE : end_tv2_prepare(m, false, true, now_ms);
		return KERR_INVALID_TXN_STATE;
	case TXN_PREPARE_COMMIT:
		return commit ? KERR_CONCURRENT_TRANSACTIONS : KERR_INVALID_TXN_STATE;
	case TXN_PREPARE_ABORT:
		return commit ? KERR_INVALID_TXN_STATE : KERR_CONCURRENT_TRANSACTIONS;
	case TXN_EMPTY:
		return commit ? KERR_INVALID_TXN_STATE : end_tv2_prepare(m, false, true, now_ms);
	default:
		return KERR_UNKNOWN_SERVER_ERROR;
	}
}

int16_t txn_end(txn_coordinator *tc, proto_str id, int64_t pid, int16_t epoch, bool commit,
		bool tv2, int64_t now_ms, int64_t *next_pid, int16_t *next_epoch)
{
	*next_pid = -1;
	*next_epoch = -1;
	if (id.len <= 0)
		return KERR_INVALID_REQUEST;
	int16_t cerr = txn_coordinator_error(tc, id);
	if (cerr)
		return cerr;
	txn_meta *m = txn_find(tc, id.ptr, id.len);
	if (!m)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	/* Markers left from an earlier end: try them again first. */
	if (is_prepare(m))
		(void)complete(m, now_ms);
	if (!tv2) {
		if (m->producer_id != pid)
			return KERR_INVALID_PRODUCER_ID_MAPPING;
		return end_tv1(m, epoch, commit, now_ms);
	}
	int16_t err = end_tv2(m, pid, epoch, commit, now_ms);
	if (err == KERR_NONE) {
		/* The producer id and epoch to go on with: after an epoch
		 * overflow still pending in Prepare*, the next id at 0. */
		bool rotating = is_prepare(m) && m->next_producer_id != -1;
		*next_pid = rotating ? m->next_producer_id : m->producer_id;
		*next_epoch = rotating ? 0 : m->producer_epoch;
	}
	return err;
}

/* ---- timers ---- */

void txn_abort_timed_out(txn_coordinator *tc, int64_t now_ms)
{
	txn_meta *m;
	for (int32_t i = 0; (m = txn_at(tc, i)) != NULL; i++) {
		if (!served(tc, m))
			continue; /* its partition is loading */
		if (is_prepare(m)) {
			(void)complete(m, now_ms); /* nothing when its work is in flight */
		} else if (m->state == TXN_ONGOING && m->start_ms + m->timeout_ms < now_ms) {
			int16_t err = fence_and_abort(m, now_ms);
			if (err)
				fprintf(stderr,
					"samsa: transactional id %s: aborting the timed-out transaction "
					"failed (error %d)\n",
					m->id, err);
			else
				fprintf(stderr,
					"samsa: transactional id %s: transaction timed out after %d ms: "
					"aborted, producer %lld fenced at epoch %d\n",
					m->id, (int)m->timeout_ms, (long long)m->producer_id,
					(int)m->producer_epoch);
		}
	}
}

void txn_expire_ids(txn_coordinator *tc, int64_t now_ms)
{
	int64_t horizon = now_ms - tc->cfg->transactional_id_expiration_ms;
	/* Backwards: removal moves the last entry into the freed slot. */
	for (int32_t i = txn_count(tc) - 1; i >= 0; i--) {
		txn_meta *m = txn_at(tc, i);
		bool idle = m->state == TXN_EMPTY || m->state == TXN_COMPLETE_COMMIT ||
			    m->state == TXN_COMPLETE_ABORT;
		if (!idle || m->last_update_ms > horizon || !served(tc, m))
			continue;
		brk_hw_mark mark = { 0 };
		int16_t err = tc->env.append(tc->env.arg, m->partition, proto_str_of(m->id, m->id_len),
					     NULL, now_ms, &mark);
		static brk_ratelog rl = BRK_RATELOG_INIT;
		if (err) {
			brk_ratelog_printf(&rl, "samsa: transactional id %s: writing its tombstone failed "
					   "(error %d)\n", m->id, err);
			continue;
		}
		txn_partition *ps = txn_partition_state(tc, m->partition);
		if (ps && ps->loaded)
			ps->last_write = mark;
		remove_meta(tc, m);
	}
}

static void on_abort_timer(brk_loop *loop, void *arg)
{
	txn_coordinator *tc = arg;
	tc->abort_timer = 0;
	txn_abort_timed_out(tc, brk_wall_ms());
	tc->abort_timer = brk_timer_add(
		loop, tc->cfg->transaction_abort_timed_out_transaction_cleanup_interval_ms,
		on_abort_timer, tc);
}

static void on_expire_timer(brk_loop *loop, void *arg)
{
	txn_coordinator *tc = arg;
	tc->expire_timer = 0;
	txn_expire_ids(tc, brk_wall_ms());
	tc->expire_timer = brk_timer_add(
		loop, tc->cfg->transaction_remove_expired_transaction_cleanup_interval_ms,
		on_expire_timer, tc);
}

void txn_coordinator_start(txn_coordinator *tc)
{
	if (!tc->loop || tc->abort_timer)
		return;
	tc->abort_timer = brk_timer_add(
		tc->loop, tc->cfg->transaction_abort_timed_out_transaction_cleanup_interval_ms,
		on_abort_timer, tc);
	tc->expire_timer = brk_timer_add(
		tc->loop, tc->cfg->transaction_remove_expired_transaction_cleanup_interval_ms,
		on_expire_timer, tc);
}

/* ---- loading and unloading partitions ---- */

int32_t txn_partition_loaded(txn_coordinator *tc, int32_t index, struct brk_partition *p,
			     int32_t leader_epoch, int64_t now_ms)
{
	txn_partition *ps = txn_partition_state(tc, index);
	if (!ps)
		return 0;
	/* What was loaded reaches the log end offset, maybe above the high
	 * watermark: the markers of a Prepare* record loaded wait for it to
	 * be committed, as those of one written here. */
	brk_hw_mark loaded = { 0 };
	if (p && p->log)
		loaded = (brk_hw_mark){ p, leader_epoch, log_end_offset(p->log) };
	if (ps->loading)
		tc->nloading--;
	*ps = (txn_partition){ .loaded = true, .p = p, .leader_epoch = leader_epoch,
			       .last_write = loaded };
	/* Kafka's loadTransactionsForTxnTopicPartition: the transactions
	 * found ending are completed. Backwards: completion does not remove
	 * ids, but keep to one order everywhere. */
	int32_t completed = 0;
	for (int32_t i = txn_count(tc) - 1; i >= 0; i--) {
		txn_meta *m = txn_at(tc, i);
		if (m->partition != index || !is_prepare(m))
			continue;
		m->prepare_mark = loaded;
		if (complete(m, now_ms) == KERR_NONE)
			completed++;
	}
	return completed;
}

void txn_partition_loading(txn_coordinator *tc, int32_t index, struct brk_partition *p,
			   int32_t leader_epoch)
{
	txn_partition *ps = txn_partition_state(tc, index);
	if (!ps)
		return;
	if (!ps->loading)
		tc->nloading++;
	*ps = (txn_partition){ .loading = true, .p = p, .leader_epoch = leader_epoch };
}

int32_t txn_partition_unload(txn_coordinator *tc, int32_t index)
{
	txn_partition *ps = txn_partition_state(tc, index);
	if (ps) {
		if (ps->loading)
			tc->nloading--;
		*ps = (txn_partition){ 0 };
	}
	int32_t n = 0;
	for (int32_t i = txn_count(tc) - 1; i >= 0; i--) {
		txn_meta *m = txn_at(tc, i);
		if (!m)
			continue; /* removals may have shrunk the registry */
		if (m->partition != index)
			continue;
		remove_meta(tc, m);
		n++;
	}
	return n;
}
