/*
 * test_txn.c - the transaction coordinator's state machine
 * (txn/coordinator.c) and its markers (txn/markers.c) without sockets: the
 * test's own txn_coordinator, whose txn_env records every record appended
 * (decoded through the real codec; it can be made to fail, or to leave its
 * writes uncommitted on a real log whose high watermark the test moves),
 * and whose txn_marker_env is a small topic table: partitions led here are
 * written at once (recorded, or failed on demand), those led by other
 * brokers are handed to the test, which answers them later.
 *
 * Covered: InitProducerId (new id, epoch bumps, timeout bounds, epoch
 * exhaustion -> new producer id, KIP-360 expected id/epoch and retries,
 * fencing of an ongoing transaction), AddPartitionsToTxn (records, sorted
 * and unique partitions, the no-write shortcut, producer id / epoch
 * errors), AddOffsetsToTxn, verification, EndTxn v0-4 (records, markers at
 * the coordinator epoch, repeated ends, INVALID_TXN_STATE) and v5
 * (transaction version 2: epoch bump, retries, abort from Empty, epoch
 * overflow), the transaction timeout (the zombie fenced), expiry of idle
 * ids (tombstone), a failed log write (nothing changes), a failed marker
 * (Prepare* kept, CONCURRENT_TRANSACTIONS, retried after the backoff), a
 * deleted topic (skipped), completion of prepared transactions when a
 * partition is loaded; ownership (NOT_COORDINATOR, unload); markers to
 * other brokers (one request per broker, retries after errors with the
 * leader looked up again, a job cancelled by an unload); markers only once
 * the Prepare record is committed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/coordinator_key.h"
#include "broker/server.h"
#include "broker/txn/store_codec.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/records.h"
#include "storage/log.h"

brk_server server; /* the purgatory's loop */
static txn_coordinator tc;
static brk_config cfg;

/* hw_wait.c answers requests; none here. */
void brk_request_complete(brk_request *req, int how)
{
	(void)req;
	(void)how;
}

/* ---- fakes: __transaction_state ---- */

#define MAXREC 1024
typedef struct rec {
	char id[64];
	int32_t partition;
	bool tombstone;
	int16_t version;
	int status;
	int64_t pid, prev_pid, next_pid;
	int16_t epoch;
	int32_t timeout_ms;
	int64_t start_ms, last_update_ms;
	int16_t client_tv;
	bool partitions_null;
	char tps[256]; /* "t-0,t-2,u-1" */
} rec;

static rec recs[MAXREC];
static int nrecs;
static int16_t store_fail; /* returned by the next appends when set */

/* Uncommitted writes: with hold_hw set, each record is also appended to
 * log_part's real log and its mark returned, the high watermark left where
 * it is (followers that have not fetched yet). */
static bool hold_hw;
static char hw_log_dir[64];
static brk_partition log_part;

static brk_hw_mark append_to_log(void)
{
	proto_writer w;
	proto_writer_init(&w);
	proto_batch_builder b;
	proto_batch_builder_begin(&b, &w);
	proto_batch_builder_add(&b, 1, "k", 1, "v", 1);
	int32_t size = proto_batch_builder_finish(&b);
	int64_t base;
	ck_assert_int_eq(log_append(log_part.log, w.buf + b.start, (size_t)size, log_part.leader_epoch,
				    1, &base),
			 0);
	proto_writer_free(&w);
	return (brk_hw_mark){ &log_part, log_part.leader_epoch, log_end_offset(log_part.log) };
}

static void commit_log(void)
{
	log_set_high_watermark(log_part.log, log_end_offset(log_part.log));
	brk_watchlist_notify(&log_part.hw_waiters, 0);
}

static int16_t fake_append(void *arg, int32_t partition, proto_str id, const txn_log_value *v,
			   int64_t now_ms, brk_hw_mark *mark)
{
	(void)now_ms;
	ck_assert_ptr_eq(arg, &tc);
	if (store_fail)
		return store_fail;
	ck_assert_int_eq(partition, txn_partition_of(&tc, id));
	ck_assert_int_lt(nrecs, MAXREC);
	rec *r = &recs[nrecs++];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%.*s", (int)id.len, id.ptr);
	r->partition = partition;
	*mark = hold_hw ? append_to_log() : (brk_hw_mark){ 0 };
	if (!v) {
		r->tombstone = true;
		return KERR_NONE;
	}
	/* Through the real encoding, as the log would hold it. */
	proto_writer w;
	proto_writer_init(&w);
	txn_value_encode(&w, v);
	proto_arena a;
	proto_arena_init(&a, 0);
	txn_log_value d;
	ck_assert_int_eq(txn_value_decode(w.buf, (int32_t)w.len, &a, &d), 0);
	r->version = d.version;
	r->status = d.status;
	r->pid = d.producer_id;
	r->prev_pid = d.prev_producer_id;
	r->next_pid = d.next_producer_id;
	r->epoch = d.producer_epoch;
	r->timeout_ms = d.timeout_ms;
	r->start_ms = d.start_ms;
	r->last_update_ms = d.last_update_ms;
	r->client_tv = d.client_tv;
	r->partitions_null = d.partitions_null;
	for (int32_t i = 0; i < d.ntps; i++) {
		size_t l = strlen(r->tps);
		snprintf(r->tps + l, sizeof(r->tps) - l, "%s%.*s-%d", i ? "," : "",
			 (int)d.tps[i].topic.len, d.tps[i].topic.ptr, (int)d.tps[i].partition);
	}
	proto_arena_free(&a);
	proto_writer_free(&w);
	return KERR_NONE;
}

static int64_t next_pid;

static int16_t fake_next_producer_id(void *arg, int64_t *out)
{
	(void)arg;
	*out = next_pid++;
	return KERR_NONE;
}

static int32_t fake_offsets_partitions(void *arg)
{
	(void)arg;
	return 4;
}

/* ---- fakes: where partitions are, markers ---- */

/* Topics and their leaders: "t", "u", "__consumer_offsets" here, "r" on
 * another broker (leader per partition in r_leader). */
#define NTOPICS 4
static const char *const topic_names[NTOPICS] = { "t", "u", "__consumer_offsets", "r" };
static bool topic_deleted[NTOPICS];
static int32_t r_leader[4];

static int32_t fake_locate(void *arg, const char *topic, int32_t tlen, int32_t partition)
{
	(void)arg;
	for (int i = 0; i < NTOPICS; i++) {
		if ((int32_t)strlen(topic_names[i]) != tlen || memcmp(topic_names[i], topic, (size_t)tlen))
			continue;
		if (topic_deleted[i] || partition < 0 || partition >= 4)
			return TXN_MARKER_GONE;
		return i == 3 ? r_leader[partition] : TXN_MARKER_HERE;
	}
	return TXN_MARKER_GONE;
}

typedef struct marker {
	char tp[64];
	int64_t pid;
	int16_t epoch;
	int32_t coordinator_epoch;
	bool commit;
} marker;

static marker markers[MAXREC];
static int nmarkers;
static char marker_fail_tp[64]; /* "t-1": that partition's marker fails */
static int16_t marker_fail_err;

/* Deliveries to other brokers, waiting for the test's answer. */
typedef struct remote {
	txn_marker_batch *b;
	txn_marker_done_fn done;
	void *arg;
	char tps[128]; /* "r-0,r-1" */
} remote;
static remote remotes[64];
static int nremotes;
static bool remote_refuse; /* deliver returns -1 (no connection) */

static int fake_deliver(void *arg, txn_marker_batch *b, txn_marker_done_fn done, void *done_arg)
{
	(void)arg;
	if (b->leader != TXN_MARKER_HERE) {
		if (remote_refuse)
			return -1;
		ck_assert_int_lt(nremotes, 64);
		remote *r = &remotes[nremotes++];
		*r = (remote){ b, done, done_arg, "" };
		for (int32_t i = 0; i < b->ntargets; i++) {
			size_t l = strlen(r->tps);
			snprintf(r->tps + l, sizeof(r->tps) - l, "%s%s-%d", i ? "," : "",
				 b->targets[i].topic, (int)b->targets[i].partition);
		}
		return 0;
	}
	ck_assert_int_eq(b->ntargets, 1); /* one delivery per local partition */
	txn_marker_target *t = &b->targets[0];
	char name[64];
	snprintf(name, sizeof(name), "%s-%d", t->topic, (int)t->partition);
	if (marker_fail_tp[0] && strcmp(name, marker_fail_tp) == 0) {
		t->error = marker_fail_err;
	} else {
		ck_assert_int_lt(nmarkers, MAXREC);
		marker *m = &markers[nmarkers++];
		snprintf(m->tp, sizeof(m->tp), "%s", name);
		m->pid = b->producer_id;
		m->epoch = b->producer_epoch;
		m->coordinator_epoch = b->coordinator_epoch;
		m->commit = b->commit;
		t->error = KERR_NONE;
	}
	done(done_arg, b); /* written here, committed at once */
	return 0;
}

/* Answer remote delivery i: err for every partition, or errs[] when not
 * NULL. */
static void answer_remote(int i, int16_t err, const int16_t *errs)
{
	remote *r = &remotes[i];
	ck_assert_ptr_nonnull(r->b);
	for (int32_t k = 0; k < r->b->ntargets; k++)
		r->b->targets[k].error = errs ? errs[k] : err;
	txn_marker_batch *b = r->b;
	r->b = NULL;
	r->done(r->arg, b);
}

static void stop_loop(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

static void run_for(int64_t ms)
{
	brk_timer_add(server.loop, ms, stop_loop, NULL);
	brk_loop_run(server.loop);
}

/* ---- helpers ---- */

/* The coordinator leads every partition of a 4-partition
 * __transaction_state, loaded at leader epoch 5 (the coordinator epoch). */
static void setup(void)
{
	memset(&server, 0, sizeof(server));
	server.loop = brk_loop_new();
	ck_assert_ptr_nonnull(server.loop);
	brk_config_defaults(&cfg);
	txn_coordinator_init(&tc, server.loop, &cfg);
	tc.env = (txn_env){ &tc, fake_append, fake_next_producer_id, fake_offsets_partitions };
	tc.markers = (txn_marker_env){ NULL, fake_locate, fake_deliver, 30 };
	ck_assert_int_eq(txn_partitions_known(&tc, 4), 0);
	for (int32_t i = 0; i < 4; i++)
		txn_partition_loaded(&tc, i, NULL, 5, 0);
	for (int i = 0; i < NTOPICS; i++)
		topic_deleted[i] = false;
	for (int i = 0; i < 4; i++)
		r_leader[i] = 2;
	nrecs = nmarkers = nremotes = 0;
	store_fail = 0;
	remote_refuse = false;
	hold_hw = false;
	marker_fail_tp[0] = '\0';
	next_pid = 1000;
	/* The log behind uncommitted writes. */
	snprintf(hw_log_dir, sizeof(hw_log_dir), "/tmp/samsa-txn-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(hw_log_dir));
	log_config lc;
	log_config_defaults(&lc);
	memset(&log_part, 0, sizeof(log_part));
	ck_assert_int_eq(log_open(hw_log_dir, &lc, true, -1, -1, 0, &log_part.log), 0);
	log_part.role = BRK_ROLE_LEADER;
	log_part.leader_epoch = 5;
}

static void teardown(void)
{
	txn_coordinator_free(&tc);
	/* Deliveries the test never answered: their jobs are gone; the
	 * answers free them. */
	for (int i = 0; i < nremotes; i++)
		if (remotes[i].b)
			answer_remote(i, KERR_NETWORK_EXCEPTION, NULL);
	log_delete(log_part.log);
	log_part.log = NULL;
	rmdir(hw_log_dir);
	brk_loop_free(server.loop);
	server.loop = NULL;
}

static proto_str S(const char *s)
{
	return proto_cstr(s);
}

static const rec *last_rec(void)
{
	ck_assert_int_gt(nrecs, 0);
	return &recs[nrecs - 1];
}

/* InitProducerId without KIP-360 fields; fails the test unless NONE. */
static void init_ok(const char *id, int32_t timeout_ms, int64_t now, int64_t *pid, int16_t *epoch)
{
	int16_t err = txn_init_producer_id(&tc, S(id), timeout_ms, -1, -1, now, pid, epoch);
	ck_assert_msg(err == KERR_NONE, "init %s: error %d", id, err);
}

static int16_t add(const char *id, int64_t pid, int16_t epoch, const char *topic, int32_t part,
		   int64_t now)
{
	txn_tp_ref r = { S(topic), part };
	return txn_add_partitions(&tc, S(id), pid, epoch, &r, 1, TXN_TV0, now);
}

static int16_t end(const char *id, int64_t pid, int16_t epoch, bool commit, int64_t now)
{
	int64_t np;
	int16_t ne;
	int16_t err = txn_end(&tc, S(id), pid, epoch, commit, false, now, &np, &ne);
	ck_assert_int_eq(np, -1);
	ck_assert_int_eq(ne, -1);
	return err;
}

static txn_meta *meta(const char *id)
{
	txn_meta *m = txn_find(&tc, id, (int32_t)strlen(id));
	ck_assert_ptr_nonnull(m);
	return m;
}

/* ---- tests ---- */

START_TEST(test_state_names)
{
	ck_assert_str_eq(txn_state_name(TXN_EMPTY), "Empty");
	ck_assert_str_eq(txn_state_name(TXN_PREPARE_COMMIT), "PrepareCommit");
	ck_assert_str_eq(txn_state_name(TXN_COMPLETE_ABORT), "CompleteAbort");
	ck_assert_str_eq(txn_state_name(TXN_PREPARE_EPOCH_FENCE), "PrepareEpochFence");
	for (int s = 0; s < TXN_STATE_COUNT; s++)
		ck_assert_int_eq(txn_state_from_name(S(txn_state_name((txn_state)s))), s);
	ck_assert_int_eq(txn_state_from_name(S("ongoing")), -1);
	ck_assert_int_eq(txn_state_from_name(S("Ongoing ")), -1);
	ck_assert_int_eq(txn_state_from_name(proto_str_of(NULL, -1)), -1);
}
END_TEST

START_TEST(test_init)
{
	int64_t pid;
	int16_t epoch;
	init_ok("a", 60000, 100, &pid, &epoch);
	ck_assert_int_eq(pid, 1000);
	ck_assert_int_eq(epoch, 0);
	ck_assert_int_eq(nrecs, 1);
	const rec *r = last_rec();
	ck_assert_str_eq(r->id, "a");
	ck_assert_int_eq(r->version, 0);
	ck_assert_int_eq(r->status, TXN_EMPTY);
	ck_assert(r->partitions_null);
	ck_assert_int_eq(r->pid, 1000);
	ck_assert_int_eq(r->epoch, 0);
	ck_assert_int_eq(r->timeout_ms, 60000);
	ck_assert_int_eq(r->start_ms, -1);
	ck_assert_int_eq(r->last_update_ms, 100);

	/* Again: same producer id, the epoch bumped, the new timeout kept. */
	init_ok("a", 30000, 200, &pid, &epoch);
	ck_assert_int_eq(pid, 1000);
	ck_assert_int_eq(epoch, 1);
	ck_assert_int_eq(meta("a")->timeout_ms, 30000);
	ck_assert_int_eq(nrecs, 2);

	/* Timeout bounds: 1..transaction.max.timeout.ms (900000). */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("a"), 0, -1, -1, 300, &pid, &epoch),
			 KERR_INVALID_TRANSACTION_TIMEOUT);
	ck_assert_int_eq(pid, -1);
	ck_assert_int_eq(epoch, -1);
	ck_assert_int_eq(txn_init_producer_id(&tc, S("a"), 900001, -1, -1, 300, &pid, &epoch),
			 KERR_INVALID_TRANSACTION_TIMEOUT);
	init_ok("a", 900000, 300, &pid, &epoch);
	ck_assert_int_eq(txn_init_producer_id(&tc, S(""), 1000, -1, -1, 300, &pid, &epoch),
			 KERR_INVALID_REQUEST);

	/* A failed write: nothing is kept of a new id. */
	store_fail = KERR_NOT_COORDINATOR;
	ck_assert_int_eq(txn_init_producer_id(&tc, S("b"), 1000, -1, -1, 300, &pid, &epoch),
			 KERR_NOT_COORDINATOR);
	ck_assert_ptr_null(txn_find(&tc, "b", 1));
	ck_assert_int_eq(meta("a")->producer_epoch, 2);
	store_fail = 0;
	init_ok("b", 1000, 300, &pid, &epoch);
	ck_assert_int_eq(epoch, 0);
	ck_assert_int_eq(txn_count(&tc), 2);
}
END_TEST

START_TEST(test_epoch_exhaustion)
{
	int64_t pid;
	int16_t epoch;
	init_ok("x", 1000, 1, &pid, &epoch);
	meta("x")->producer_epoch = 32765;
	init_ok("x", 1000, 2, &pid, &epoch);
	ck_assert_int_eq(pid, 1000);
	ck_assert_int_eq(epoch, 32766);
	/* 32766 is exhausted: a new producer id at epoch 0 (here asked with
	 * KIP-360's expected id and epoch, which become the last epoch). */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("x"), 1000, 1000, 32766, 3, &pid, &epoch), KERR_NONE);
	ck_assert_int_eq(pid, 1001);
	ck_assert_int_eq(epoch, 0);
	ck_assert_int_eq(meta("x")->prev_producer_id, 1000);
	ck_assert_int_eq(meta("x")->last_producer_epoch, 32766);
	ck_assert_int_eq(last_rec()->pid, 1001);
	ck_assert_int_eq(last_rec()->epoch, 0);
	/* Its retry (the old id with the exhausted epoch) is recognized and
	 * answered with the new id, unbumped. */
	int n = nrecs;
	ck_assert_int_eq(txn_init_producer_id(&tc, S("x"), 1000, 1000, 32766, 4, &pid, &epoch), KERR_NONE);
	ck_assert_int_eq(pid, 1001);
	ck_assert_int_eq(epoch, 0);
	ck_assert_int_eq(nrecs, n + 1);
	/* The old id with an epoch that is not exhausted: fenced. */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("x"), 1000, 1000, 32765, 5, &pid, &epoch),
			 KERR_PRODUCER_FENCED);

	/* Without KIP-360 fields the rotation keeps no last epoch. */
	init_ok("y", 1000, 1, &pid, &epoch);
	meta("y")->producer_epoch = 32766;
	init_ok("y", 1000, 2, &pid, &epoch);
	ck_assert_int_eq(pid, 1003);
	ck_assert_int_eq(epoch, 0);
	ck_assert_int_eq(meta("y")->last_producer_epoch, -1);
}
END_TEST

START_TEST(test_kip360)
{
	int64_t pid;
	int16_t epoch;
	init_ok("k", 1000, 1, &pid, &epoch);      /* epoch 0 */
	init_ok("k", 1000, 2, &pid, &epoch);      /* epoch 1 */
	/* The producer bumps its own epoch (expected = current). */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("k"), 1000, pid, 1, 3, &pid, &epoch), KERR_NONE);
	ck_assert_int_eq(epoch, 2);
	ck_assert_int_eq(meta("k")->last_producer_epoch, 1);
	/* Its retry (expected = the last epoch) gets the same epoch. */
	int n = nrecs;
	ck_assert_int_eq(txn_init_producer_id(&tc, S("k"), 1000, pid, 1, 4, &pid, &epoch), KERR_NONE);
	ck_assert_int_eq(epoch, 2);
	ck_assert_int_eq(nrecs, n + 1);
	/* An older epoch, or another producer id: fenced. */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("k"), 1000, pid, 0, 5, &pid, &epoch),
			 KERR_PRODUCER_FENCED);
	ck_assert_int_eq(txn_init_producer_id(&tc, S("k"), 1000, 4242, 2, 5, &pid, &epoch),
			 KERR_PRODUCER_FENCED);
	/* A new transactional id accepts any (its state was lost). */
	ck_assert_int_eq(txn_init_producer_id(&tc, S("new"), 1000, 77, 3, 6, &pid, &epoch), KERR_NONE);
	ck_assert_int_eq(epoch, 0);
}
END_TEST

START_TEST(test_commit)
{
	int64_t pid;
	int16_t epoch;
	init_ok("c", 60000, 10, &pid, &epoch);
	ck_assert_int_eq(add("c", pid, epoch, "u", 1, 20), KERR_NONE);
	ck_assert_int_eq(last_rec()->status, TXN_ONGOING);
	ck_assert_int_eq(last_rec()->start_ms, 20);
	ck_assert_str_eq(last_rec()->tps, "u-1");
	/* More partitions, unsorted and repeated: one sorted set. */
	txn_tp_ref more[] = { { S("t"), 2 }, { S("u"), 1 }, { S("t"), 0 }, { S("t"), 2 } };
	ck_assert_int_eq(txn_add_partitions(&tc, S("c"), pid, epoch, more, 4, TXN_TV0, 30), KERR_NONE);
	ck_assert_str_eq(last_rec()->tps, "t-0,t-2,u-1");
	ck_assert_int_eq(last_rec()->start_ms, 20);
	ck_assert_int_eq(last_rec()->last_update_ms, 30);
	/* All already in: NONE without a record. */
	int n = nrecs;
	ck_assert_int_eq(txn_add_partitions(&tc, S("c"), pid, epoch, more, 2, TXN_TV0, 40), KERR_NONE);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(meta("c")->ntps, 3);

	ck_assert_int_eq(end("c", pid, epoch, true, 50), KERR_NONE);
	ck_assert_int_eq(nrecs, n + 2);
	ck_assert_int_eq(recs[n].status, TXN_PREPARE_COMMIT);
	ck_assert_str_eq(recs[n].tps, "t-0,t-2,u-1");
	ck_assert_int_eq(recs[n].epoch, epoch);
	ck_assert_int_eq(recs[n + 1].status, TXN_COMPLETE_COMMIT);
	ck_assert_str_eq(recs[n + 1].tps, "");
	ck_assert(!recs[n + 1].partitions_null);
	ck_assert_int_eq(recs[n + 1].start_ms, 20);
	ck_assert_int_eq(nmarkers, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert(markers[i].commit);
		ck_assert_int_eq(markers[i].pid, pid);
		ck_assert_int_eq(markers[i].epoch, epoch);
		ck_assert_int_eq(markers[i].coordinator_epoch, 5);
	}
	ck_assert_str_eq(markers[0].tp, "t-0");
	ck_assert_str_eq(markers[2].tp, "u-1");
	ck_assert_int_eq(meta("c")->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(meta("c")->ntps, 0);

	/* A repeated commit is a retry: NONE; an abort now is invalid. */
	n = nrecs;
	ck_assert_int_eq(end("c", pid, epoch, true, 60), KERR_NONE);
	ck_assert_int_eq(end("c", pid, epoch, false, 60), KERR_INVALID_TXN_STATE);
	ck_assert_int_eq(nrecs, n);
	/* The next transaction starts at its first partition. */
	ck_assert_int_eq(add("c", pid, epoch, "t", 3, 70), KERR_NONE);
	ck_assert_int_eq(last_rec()->start_ms, 70);
	ck_assert_int_eq(end("c", pid, epoch, false, 80), KERR_NONE);
	ck_assert_int_eq(meta("c")->state, TXN_COMPLETE_ABORT);
	ck_assert(!markers[nmarkers - 1].commit);
	ck_assert_int_eq(end("c", pid, epoch, true, 90), KERR_INVALID_TXN_STATE);
	ck_assert_int_eq(end("c", pid, epoch, false, 90), KERR_NONE);

	/* Errors. */
	ck_assert_int_eq(end("nope", pid, epoch, true, 90), KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(end("c", pid + 1, epoch, true, 90), KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(end("c", pid, (int16_t)(epoch + 1), true, 90), KERR_PRODUCER_FENCED);
	ck_assert_int_eq(end("", pid, epoch, true, 90), KERR_INVALID_REQUEST);
	ck_assert_int_eq(add("nope", pid, epoch, "t", 0, 90), KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(add("c", pid + 1, epoch, "t", 0, 90), KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(add("c", pid, (int16_t)(epoch - 1), "t", 0, 90), KERR_PRODUCER_FENCED);

	/* Ending an Empty transaction is invalid (version 0/1). */
	init_ok("e", 1000, 100, &pid, &epoch);
	ck_assert_int_eq(end("e", pid, epoch, true, 110), KERR_INVALID_TXN_STATE);
	ck_assert_int_eq(end("e", pid, epoch, false, 110), KERR_INVALID_TXN_STATE);
}
END_TEST

START_TEST(test_fence)
{
	int64_t pid, pid2;
	int16_t epoch, epoch2;
	init_ok("f", 60000, 10, &pid, &epoch);
	ck_assert_int_eq(add("f", pid, epoch, "t", 1, 20), KERR_NONE);
	int n = nrecs;
	/* A second producer with the same id: the open transaction is
	 * aborted at epoch + 1, then the id is initialized at epoch + 2. */
	init_ok("f", 60000, 30, &pid2, &epoch2);
	ck_assert_int_eq(pid2, pid);
	ck_assert_int_eq(epoch2, epoch + 2);
	ck_assert_int_eq(nrecs, n + 3);
	ck_assert_int_eq(recs[n].status, TXN_PREPARE_ABORT);
	ck_assert_int_eq(recs[n].epoch, epoch + 1);
	ck_assert_str_eq(recs[n].tps, "t-1");
	ck_assert_int_eq(recs[n + 1].status, TXN_COMPLETE_ABORT);
	ck_assert_int_eq(recs[n + 2].status, TXN_EMPTY);
	ck_assert_int_eq(nmarkers, 1);
	ck_assert(!markers[0].commit);
	ck_assert_str_eq(markers[0].tp, "t-1");
	ck_assert_int_eq(markers[0].epoch, epoch + 1);
	/* The zombie is fenced everywhere. */
	ck_assert_int_eq(add("f", pid, epoch, "t", 2, 40), KERR_PRODUCER_FENCED);
	ck_assert_int_eq(end("f", pid, epoch, true, 40), KERR_PRODUCER_FENCED);
	ck_assert_int_eq(txn_add_offsets(&tc, S("f"), pid, epoch, S("g"), 40), KERR_PRODUCER_FENCED);
	ck_assert_int_eq(add("f", pid2, epoch2, "t", 2, 40), KERR_NONE);
}
END_TEST

/* txn_verify_partition (KIP-890 verification of one write): the id, its
 * producer id and epoch, an Ongoing transaction holding the partition. */
START_TEST(test_verify_partition)
{
	int64_t pid;
	int16_t epoch;
	init_ok("vp", 60000, 10, &pid, &epoch);
	/* Empty: nothing added yet */
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "t", 0), KERR_TRANSACTION_ABORTABLE);
	ck_assert_int_eq(add("vp", pid, epoch, "t", 0, 20), KERR_NONE);
	int n = nrecs;
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "t", 0), KERR_NONE);
	ck_assert_int_eq(nrecs, n); /* nothing written */
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "t", 1), KERR_TRANSACTION_ABORTABLE);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "u", 0), KERR_TRANSACTION_ABORTABLE);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid + 1, epoch, "t", 0),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), -1, -1, "t", 0),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, (int16_t)(epoch - 1), "t", 0),
			 KERR_PRODUCER_FENCED);
	ck_assert_int_eq(txn_verify_partition(&tc, S("nope"), pid, epoch, "t", 0),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(txn_verify_partition(&tc, S(""), pid, epoch, "t", 0), KERR_INVALID_REQUEST);
	/* committed: the partition is no longer in an ongoing transaction */
	ck_assert_int_eq(end("vp", pid, epoch, true, 30), KERR_NONE);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "t", 0), KERR_TRANSACTION_ABORTABLE);
	/* a failed marker keeps Prepare*: CONCURRENT_TRANSACTIONS */
	ck_assert_int_eq(add("vp", pid, epoch, "t", 0, 40), KERR_NONE);
	snprintf(marker_fail_tp, sizeof(marker_fail_tp), "t-0");
	marker_fail_err = KERR_KAFKA_STORAGE_ERROR;
	ck_assert_int_eq(end("vp", pid, epoch, false, 50), KERR_NONE);
	ck_assert_int_eq(txn_verify_partition(&tc, S("vp"), pid, epoch, "t", 0),
			 KERR_CONCURRENT_TRANSACTIONS);
	marker_fail_tp[0] = 0;
}
END_TEST

START_TEST(test_offsets_and_verify)
{
	int64_t pid;
	int16_t epoch;
	init_ok("o", 60000, 10, &pid, &epoch);
	/* "grp": Java hashCode 102629, partition 1 of 4. */
	ck_assert_int_eq(txn_add_offsets(&tc, S("o"), pid, epoch, S("grp"), 20), KERR_NONE);
	ck_assert_str_eq(last_rec()->tps, "__consumer_offsets-1");
	ck_assert_int_eq(add("o", pid, epoch, "t", 0, 30), KERR_NONE);

	txn_tp_ref tps[] = { { S("t"), 0 }, { S("t"), 1 }, { S("__consumer_offsets"), 1 } };
	int16_t errs[3];
	int n = nrecs;
	ck_assert_int_eq(txn_verify_partitions(&tc, S("o"), pid, epoch, tps, 3,
					       KERR_TRANSACTION_ABORTABLE, errs),
			 KERR_NONE);
	ck_assert_int_eq(errs[0], KERR_NONE);
	ck_assert_int_eq(errs[1], KERR_TRANSACTION_ABORTABLE);
	ck_assert_int_eq(errs[2], KERR_NONE);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(txn_verify_partitions(&tc, S("o"), pid, (int16_t)(epoch + 1), tps, 3,
					       KERR_TRANSACTION_ABORTABLE, errs),
			 KERR_PRODUCER_FENCED);
	ck_assert_int_eq(txn_verify_partitions(&tc, S("o"), pid + 5, epoch, tps, 3,
					       KERR_TRANSACTION_ABORTABLE, errs),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
	ck_assert_int_eq(txn_verify_partitions(&tc, S(""), pid, epoch, tps, 3,
					       KERR_TRANSACTION_ABORTABLE, errs),
			 KERR_INVALID_REQUEST);

	ck_assert_int_eq(end("o", pid, epoch, true, 40), KERR_NONE);
	ck_assert_int_eq(nmarkers, 2);
	ck_assert_str_eq(markers[0].tp, "__consumer_offsets-1");
}
END_TEST

START_TEST(test_timeout)
{
	int64_t pid;
	int16_t epoch;
	init_ok("slow", 5000, 10, &pid, &epoch);
	ck_assert_int_eq(add("slow", pid, epoch, "u", 2, 1000), KERR_NONE);
	init_ok("idle", 5000, 10, &pid, &epoch);
	/* Not yet: start + timeout must be passed (strictly). */
	int n = nrecs;
	txn_abort_timed_out(&tc, 6000);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(meta("slow")->state, TXN_ONGOING);
	txn_abort_timed_out(&tc, 6001);
	ck_assert_int_eq(nrecs, n + 2);
	ck_assert_int_eq(recs[n].status, TXN_PREPARE_ABORT);
	ck_assert_int_eq(recs[n + 1].status, TXN_COMPLETE_ABORT);
	txn_meta *m = meta("slow");
	ck_assert_int_eq(m->state, TXN_COMPLETE_ABORT);
	ck_assert_int_eq(m->producer_epoch, 1); /* bumped: the producer is fenced */
	ck_assert_int_eq(nmarkers, 1);
	ck_assert_int_eq(markers[0].epoch, 1);
	ck_assert(!markers[0].commit);
	ck_assert_int_eq(meta("idle")->state, TXN_EMPTY);
	/* The timed-out producer learns it was fenced. */
	ck_assert_int_eq(end("slow", m->producer_id, 0, true, 7000), KERR_PRODUCER_FENCED);
	ck_assert_int_eq(add("slow", m->producer_id, 0, "u", 2, 7000), KERR_PRODUCER_FENCED);
}
END_TEST

START_TEST(test_expire)
{
	int64_t pid;
	int16_t epoch;
	int64_t exp = cfg.transactional_id_expiration_ms;
	ck_assert_int_eq(exp, 604800000);
	init_ok("old", 1000, 100, &pid, &epoch);
	init_ok("open", 1000, 100, &pid, &epoch);
	ck_assert_int_eq(add("open", pid, epoch, "t", 0, 100), KERR_NONE);
	int n = nrecs;
	txn_expire_ids(&tc, 100 + exp - 1);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(txn_count(&tc), 2);
	/* A failed tombstone keeps the id. */
	store_fail = KERR_NOT_COORDINATOR;
	txn_expire_ids(&tc, 100 + exp);
	ck_assert_int_eq(txn_count(&tc), 2);
	store_fail = 0;
	txn_expire_ids(&tc, 100 + exp);
	ck_assert_int_eq(nrecs, n + 1);
	ck_assert(last_rec()->tombstone);
	ck_assert_str_eq(last_rec()->id, "old");
	ck_assert_ptr_null(txn_find(&tc, "old", 3));
	/* An ongoing transaction never expires (it times out instead). */
	ck_assert_ptr_nonnull(txn_find(&tc, "open", 4));
	ck_assert_int_eq(txn_count(&tc), 1);
}
END_TEST

START_TEST(test_store_failure)
{
	int64_t pid;
	int16_t epoch;
	init_ok("s", 60000, 10, &pid, &epoch);
	store_fail = KERR_NOT_COORDINATOR;
	ck_assert_int_eq(add("s", pid, epoch, "t", 0, 20), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(meta("s")->state, TXN_EMPTY);
	ck_assert_int_eq(meta("s")->ntps, 0);
	store_fail = 0;
	ck_assert_int_eq(add("s", pid, epoch, "t", 0, 20), KERR_NONE);
	store_fail = KERR_UNKNOWN_SERVER_ERROR;
	ck_assert_int_eq(add("s", pid, epoch, "t", 1, 30), KERR_UNKNOWN_SERVER_ERROR);
	ck_assert_int_eq(meta("s")->ntps, 1);
	ck_assert_int_eq(end("s", pid, epoch, true, 40), KERR_UNKNOWN_SERVER_ERROR);
	ck_assert_int_eq(meta("s")->state, TXN_ONGOING);
	ck_assert_int_eq(nmarkers, 0);
	store_fail = 0;
	ck_assert_int_eq(end("s", pid, epoch, true, 50), KERR_NONE);
	ck_assert_int_eq(meta("s")->state, TXN_COMPLETE_COMMIT);
}
END_TEST

START_TEST(test_marker_failure)
{
	int64_t pid;
	int16_t epoch;
	init_ok("m", 60000, 10, &pid, &epoch);
	txn_tp_ref tps[] = { { S("t"), 1 }, { S("u"), 0 } };
	ck_assert_int_eq(txn_add_partitions(&tc, S("m"), pid, epoch, tps, 2, TXN_TV0, 20), KERR_NONE);
	snprintf(marker_fail_tp, sizeof(marker_fail_tp), "t-1");
	marker_fail_err = KERR_KAFKA_STORAGE_ERROR;
	/* Answered once PrepareCommit is written; t-1 stays pending. */
	ck_assert_int_eq(end("m", pid, epoch, true, 30), KERR_NONE);
	txn_meta *m = meta("m");
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	ck_assert_int_eq(m->ntps, 1);
	ck_assert_str_eq(m->tps[0].topic, "t");
	ck_assert_int_eq(nmarkers, 1);
	ck_assert_str_eq(markers[0].tp, "u-0");
	/* Meanwhile: CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE for an abort. */
	ck_assert_int_eq(end("m", pid, epoch, true, 40), KERR_CONCURRENT_TRANSACTIONS);
	ck_assert_int_eq(end("m", pid, epoch, false, 40), KERR_INVALID_TXN_STATE);
	ck_assert_int_eq(add("m", pid, epoch, "t", 2, 40), KERR_CONCURRENT_TRANSACTIONS);
	int64_t p2;
	int16_t e2;
	ck_assert_int_eq(txn_init_producer_id(&tc, S("m"), 1000, -1, -1, 40, &p2, &e2),
			 KERR_CONCURRENT_TRANSACTIONS);
	/* The abort timer leaves a transaction whose markers are in progress
	 * alone; the partition is back: the job's retry completes it. */
	txn_abort_timed_out(&tc, 50);
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	marker_fail_tp[0] = '\0';
	run_for(60);
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(nmarkers, 2);
	ck_assert_str_eq(markers[1].tp, "t-1");
	ck_assert(markers[1].commit);

	/* A partition that refuses the epoch is given up, not retried. */
	ck_assert_int_eq(txn_add_partitions(&tc, S("m"), pid, epoch, tps, 2, TXN_TV0, 60), KERR_NONE);
	snprintf(marker_fail_tp, sizeof(marker_fail_tp), "u-0");
	marker_fail_err = KERR_INVALID_PRODUCER_EPOCH;
	ck_assert_int_eq(end("m", pid, epoch, false, 70), KERR_NONE);
	ck_assert_int_eq(m->state, TXN_COMPLETE_ABORT);

	/* A deleted topic is skipped (Kafka: no leader, likely deleted). */
	marker_fail_tp[0] = '\0';
	ck_assert_int_eq(txn_add_partitions(&tc, S("m"), pid, epoch, tps, 2, TXN_TV0, 80), KERR_NONE);
	topic_deleted[1] = true;
	int nm = nmarkers;
	ck_assert_int_eq(end("m", pid, epoch, true, 90), KERR_NONE);
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(nmarkers, nm + 1);
	ck_assert_str_eq(markers[nm].tp, "t-1");
}
END_TEST

START_TEST(test_tv2)
{
	int64_t pid, np;
	int16_t epoch, ne;
	init_ok("v2", 60000, 10, &pid, &epoch); /* epoch 0 */
	txn_tp_ref r = { S("t"), 0 };
	ck_assert_int_eq(txn_add_partitions(&tc, S("v2"), pid, epoch, &r, 1, TXN_TV2, 20), KERR_NONE);
	ck_assert_int_eq(last_rec()->version, 1); /* TV2 writes value v1 */
	ck_assert_int_eq(last_rec()->client_tv, 2);
	int n = nrecs;
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, epoch, true, true, 30, &np, &ne), KERR_NONE);
	/* The epoch is bumped at PrepareCommit, and the markers carry it. */
	ck_assert_int_eq(recs[n].status, TXN_PREPARE_COMMIT);
	ck_assert_int_eq(recs[n].epoch, 1);
	ck_assert_int_eq(recs[n + 1].status, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(markers[0].epoch, 1);
	ck_assert_int_eq(np, pid);
	ck_assert_int_eq(ne, 1);
	ck_assert_int_eq(meta("v2")->last_producer_epoch, 0);
	/* The retry with the old epoch: NONE, same answer, nothing written. */
	n = nrecs;
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 0, true, true, 40, &np, &ne), KERR_NONE);
	ck_assert_int_eq(ne, 1);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 0, false, true, 40, &np, &ne), KERR_INVALID_TXN_STATE);
	ck_assert_int_eq(np, -1);
	/* An abort without a transaction bumps the epoch (TV2 allows it). */
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 1, false, true, 50, &np, &ne), KERR_NONE);
	ck_assert_int_eq(ne, 2);
	ck_assert_int_eq(meta("v2")->state, TXN_COMPLETE_ABORT);
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 2, true, true, 60, &np, &ne), KERR_INVALID_TXN_STATE);
	/* An old epoch that is not the last one: fenced. */
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 0, false, true, 60, &np, &ne), KERR_PRODUCER_FENCED);

	/* Epoch overflow: at 32766 the end rotates to a new producer id. */
	meta("v2")->producer_epoch = 32766;
	ck_assert_int_eq(txn_add_partitions(&tc, S("v2"), pid, 32766, &r, 1, TXN_TV2, 70), KERR_NONE);
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 32766, true, true, 80, &np, &ne), KERR_NONE);
	ck_assert_int_ne(np, pid);
	ck_assert_int_eq(ne, 0);
	txn_meta *m = meta("v2");
	ck_assert_int_eq(m->producer_id, np);
	ck_assert_int_eq(m->producer_epoch, 0);
	ck_assert_int_eq(m->prev_producer_id, pid);
	ck_assert_int_eq(m->next_producer_id, -1);
	ck_assert_int_eq(markers[nmarkers - 1].epoch, 32767);
	ck_assert_int_eq(markers[nmarkers - 1].pid, pid);
	/* Its retry with the old id and epoch is recognized. */
	int64_t np2;
	ck_assert_int_eq(txn_end(&tc, S("v2"), pid, 32766, true, true, 90, &np2, &ne), KERR_NONE);
	ck_assert_int_eq(np2, np);
	ck_assert_int_eq(ne, 0);
}
END_TEST

START_TEST(test_start_completes_prepared)
{
	/* What store.c would load: a transaction left in PrepareAbort, one
	 * Ongoing (kept with its timeout). */
	txn_meta *m = calloc(1, sizeof(*m));
	m->id = strdup("loaded");
	m->id_len = 6;
	m->producer_id = 5;
	m->prev_producer_id = m->next_producer_id = -1;
	m->producer_epoch = 3;
	m->last_producer_epoch = -1;
	m->timeout_ms = 1000;
	m->state = TXN_PREPARE_ABORT;
	m->start_ms = 100;
	m->last_update_ms = 100;
	m->tps = calloc(2, sizeof(*m->tps));
	m->tps[0] = (txn_tp){ strdup("t"), 1, 0 };
	m->tps[1] = (txn_tp){ strdup("u"), 1, 3 };
	m->ntps = m->tps_cap = 2;
	m->partition = txn_partition_of(&tc, S("loaded"));
	ck_assert_int_eq(txn_restore(&tc, m), 0);
	txn_meta *o = calloc(1, sizeof(*o));
	*o = *m;
	o->id = strdup("open");
	o->id_len = 4;
	o->state = TXN_ONGOING;
	o->tps = calloc(1, sizeof(*o->tps));
	o->tps[0] = (txn_tp){ strdup("t"), 1, 2 };
	o->ntps = o->tps_cap = 1;
	o->partition = txn_partition_of(&tc, S("open"));
	ck_assert_int_eq(txn_restore(&tc, o), 0);

	/* Both partitions are (re)loaded: the prepared one completes. */
	txn_partition_loaded(&tc, o->partition, NULL, 5, 200);
	ck_assert_int_eq(nmarkers, 0);
	ck_assert_int_eq(txn_partition_loaded(&tc, m->partition, NULL, 5, 200), 1);
	m = meta("loaded");
	ck_assert_int_eq(m->state, TXN_COMPLETE_ABORT);
	ck_assert_int_eq(m->producer_epoch, 3);
	ck_assert_int_eq(nmarkers, 2);
	ck_assert_str_eq(markers[0].tp, "t-0");
	ck_assert_str_eq(markers[1].tp, "u-3");
	ck_assert(!markers[0].commit);
	ck_assert_int_eq(markers[0].epoch, 3);
	ck_assert_int_eq(meta("open")->state, TXN_ONGOING);
	/* The loaded Ongoing one times out as usual. */
	txn_abort_timed_out(&tc, 1101);
	ck_assert_int_eq(meta("open")->state, TXN_COMPLETE_ABORT);
	ck_assert_int_eq(meta("open")->producer_epoch, 4);

	/* Restoring an id again replaces it; forgetting removes it. */
	txn_meta *again = calloc(1, sizeof(*again));
	again->id = strdup("open");
	again->id_len = 4;
	again->state = TXN_EMPTY;
	again->partition = txn_partition_of(&tc, S("open"));
	ck_assert_int_eq(txn_restore(&tc, again), 0);
	ck_assert_int_eq(txn_count(&tc), 2);
	ck_assert_int_eq(meta("open")->state, TXN_EMPTY);
	txn_forget(&tc, "open", 4);
	txn_forget(&tc, "open", 4);
	ck_assert_int_eq(txn_count(&tc), 1);
}
END_TEST

START_TEST(test_many_ids)
{
	/* The registry grows and iterates every id once. */
	int64_t pid;
	int16_t epoch;
	char id[32];
	for (int i = 0; i < 500; i++) {
		snprintf(id, sizeof(id), "id-%d", i);
		init_ok(id, 1000, 1, &pid, &epoch);
	}
	ck_assert_int_eq(txn_count(&tc), 500);
	int seen = 0;
	for (int32_t i = 0; txn_at(&tc, i); i++)
		seen++;
	ck_assert_int_eq(seen, 500);
	for (int i = 0; i < 500; i += 2) {
		snprintf(id, sizeof(id), "id-%d", i);
		txn_forget(&tc, id, (int32_t)strlen(id));
	}
	ck_assert_int_eq(txn_count(&tc), 250);
	for (int i = 0; i < 500; i++) {
		snprintf(id, sizeof(id), "id-%d", i);
		ck_assert((txn_find(&tc, id, (int32_t)strlen(id)) != NULL) == (i % 2 == 1));
	}
}
END_TEST

START_TEST(test_config_keys)
{
	/* Kafka's names and defaults (TransactionLogConfig,
	 * TransactionStateManagerConfig), each at least 1. */
	brk_config c;
	brk_config_defaults(&c);
	ck_assert_int_eq(c.transaction_state_log_num_partitions, 50);
	ck_assert_int_eq(c.transaction_state_log_replication_factor, 3);
	ck_assert_int_eq(c.transaction_state_log_min_isr, 2);
	ck_assert_int_eq(c.transaction_state_log_segment_bytes, 104857600);
	ck_assert_int_eq(c.transaction_max_timeout_ms, 900000);
	ck_assert_int_eq(c.transactional_id_expiration_ms, 604800000);
	ck_assert_int_eq(c.transaction_abort_timed_out_transaction_cleanup_interval_ms, 10000);
	ck_assert_int_eq(c.transaction_remove_expired_transaction_cleanup_interval_ms, 3600000);
	char err[256], wbuf[512] = "";
	FILE *warn = fmemopen(wbuf, sizeof(wbuf), "w");
	ck_assert_ptr_nonnull(warn);
	static const char *const keys[] = {
		"transaction.state.log.num.partitions", "transaction.state.log.segment.bytes",
		"transaction.max.timeout.ms", "transactional.id.expiration.ms",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms",
		"transaction.remove.expired.transaction.cleanup.interval.ms",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		ck_assert_int_eq(brk_config_set(&c, keys[i], "0", warn, err, sizeof(err)), -1);
		ck_assert_int_eq(brk_config_set(&c, keys[i], "x", warn, err, sizeof(err)), -1);
		ck_assert_int_eq(brk_config_set(&c, keys[i], "2147483648", warn, err, sizeof(err)), -1);
		ck_assert_int_eq(brk_config_set(&c, keys[i], "7", warn, err, sizeof(err)), 0);
	}
	fclose(warn);
	ck_assert_str_eq(wbuf, ""); /* known keys: no warning */
	ck_assert_int_eq(c.transaction_max_timeout_ms, 7);
	ck_assert_int_eq(c.transactional_id_expiration_ms, 7);
	ck_assert_int_eq(c.transaction_state_log_num_partitions, 7);
}
END_TEST

/* ---- ownership ---- */

START_TEST(test_not_coordinator)
{
	int64_t pid;
	int16_t epoch;
	/* "a" and "e" live in partition 1, "b" in 2. */
	init_ok("a", 60000, 10, &pid, &epoch);
	ck_assert_int_eq(add("a", pid, epoch, "t", 0, 20), KERR_NONE);
	init_ok("e", 60000, 10, &pid, &epoch);
	int64_t bpid;
	int16_t bepoch;
	init_ok("b", 60000, 10, &bpid, &bepoch);
	ck_assert_int_eq(txn_partition_unload(&tc, 1), 2);
	ck_assert_ptr_null(txn_find(&tc, "a", 1));
	ck_assert_ptr_null(txn_find(&tc, "e", 1));
	ck_assert_ptr_nonnull(txn_find(&tc, "b", 1));
	ck_assert_int_eq(txn_coordinator_error(&tc, S("a")), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(txn_coordinator_error(&tc, S("b")), KERR_NONE);
	int n = nrecs;
	int64_t p2;
	int16_t e2;
	ck_assert_int_eq(txn_init_producer_id(&tc, S("a"), 1000, -1, -1, 30, &p2, &e2),
			 KERR_NOT_COORDINATOR);
	ck_assert_int_eq(add("a", pid, epoch, "t", 1, 30), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(end("a", pid, epoch, true, 30), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(txn_add_offsets(&tc, S("a"), pid, epoch, S("g"), 30), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(txn_verify_partition(&tc, S("a"), pid, epoch, "t", 0), KERR_NOT_COORDINATOR);
	int16_t errs[1];
	txn_tp_ref r = { S("t"), 0 };
	ck_assert_int_eq(txn_verify_partitions(&tc, S("a"), pid, epoch, &r, 1,
					       KERR_TRANSACTION_ABORTABLE, errs),
			 KERR_NOT_COORDINATOR);
	ck_assert_int_eq(nrecs, n); /* nothing written */
	/* The timers leave the other partitions' ids alone. */
	txn_abort_timed_out(&tc, 10 + 60001);
	ck_assert_int_eq(nrecs, n);
	ck_assert_ptr_null(txn_find(&tc, "a", 1));
	/* The partition comes back (loaded again at a new epoch). */
	txn_partition_loaded(&tc, 1, NULL, 6, 40);
	init_ok("a", 60000, 50, &pid, &epoch);
	ck_assert_int_eq(pid, next_pid - 1); /* unknown here: a new producer id */
	/* Without __transaction_state every id is served. */
	txn_coordinator_free(&tc);
	txn_coordinator_init(&tc, server.loop, &cfg);
	tc.env = (txn_env){ &tc, fake_append, fake_next_producer_id, fake_offsets_partitions };
	tc.markers = (txn_marker_env){ NULL, fake_locate, fake_deliver, 30 };
	ck_assert_int_eq(txn_coordinator_error(&tc, S("a")), KERR_NONE);
	ck_assert_int_eq(txn_partition_of(&tc, S("a")), -1);
}
END_TEST

/* An unload cancels the markers in progress; the delivery that comes back
 * afterwards finds nothing (ASan would see a use after free). */
START_TEST(test_unload_cancels_markers)
{
	int64_t pid;
	int16_t epoch;
	init_ok("rm", 60000, 10, &pid, &epoch); /* partition 3 */
	ck_assert_int_eq(add("rm", pid, epoch, "r", 0, 20), KERR_NONE);
	ck_assert_int_eq(end("rm", pid, epoch, true, 30), KERR_NONE);
	ck_assert_int_eq(nremotes, 1);
	ck_assert_ptr_nonnull(meta("rm")->markers);
	ck_assert_int_eq(txn_partition_unload(&tc, 3), 1);
	int n = nrecs;
	answer_remote(0, KERR_NONE, NULL);
	run_for(50);
	ck_assert_int_eq(nrecs, n);
	ck_assert_int_eq(nremotes, 1);
}
END_TEST

/* ---- markers to other brokers ---- */

START_TEST(test_remote_markers)
{
	int64_t pid;
	int16_t epoch;
	init_ok("r1", 60000, 10, &pid, &epoch);
	txn_tp_ref tps[] = { { S("t"), 0 }, { S("r"), 0 }, { S("r"), 1 }, { S("r"), 2 } };
	r_leader[2] = 3;
	ck_assert_int_eq(txn_add_partitions(&tc, S("r1"), pid, epoch, tps, 4, TXN_TV0, 20), KERR_NONE);
	int n = nrecs;
	ck_assert_int_eq(end("r1", pid, epoch, true, 30), KERR_NONE);
	/* PrepareCommit written, t-0 done here, r-0 and r-1 in one request to
	 * broker 2, r-2 in one to broker 3. */
	ck_assert_int_eq(nrecs, n + 1);
	ck_assert_int_eq(recs[n].status, TXN_PREPARE_COMMIT);
	ck_assert_int_eq(nmarkers, 1);
	ck_assert_str_eq(markers[0].tp, "t-0");
	ck_assert_int_eq(nremotes, 2);
	ck_assert_int_eq(remotes[0].b->leader, 2);
	ck_assert_str_eq(remotes[0].tps, "r-0,r-1");
	ck_assert_int_eq(remotes[1].b->leader, 3);
	ck_assert_str_eq(remotes[1].tps, "r-2");
	ck_assert_int_eq(remotes[0].b->producer_id, pid);
	ck_assert_int_eq(remotes[0].b->producer_epoch, epoch);
	ck_assert_int_eq(remotes[0].b->coordinator_epoch, 5);
	ck_assert(remotes[0].b->commit);
	txn_meta *m = meta("r1");
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	ck_assert_int_eq(m->ntps, 3); /* the pending ones */
	/* Meanwhile the transaction is busy. */
	ck_assert_int_eq(end("r1", pid, epoch, true, 40), KERR_CONCURRENT_TRANSACTIONS);
	ck_assert_int_eq(add("r1", pid, epoch, "t", 1, 40), KERR_CONCURRENT_TRANSACTIONS);

	/* Broker 2: r-0 written, r-1 no longer led there; broker 3 down. */
	int16_t errs[2] = { KERR_NONE, KERR_NOT_LEADER_OR_FOLLOWER };
	answer_remote(0, 0, errs);
	answer_remote(1, KERR_NETWORK_EXCEPTION, NULL);
	ck_assert_int_eq(m->ntps, 2);
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	/* Retried after the backoff (30 ms), the leaders looked up again:
	 * r-1 moved to broker 3 too, so one request carries both. */
	r_leader[1] = 3;
	run_for(10);
	ck_assert_int_eq(nremotes, 2);
	run_for(40);
	ck_assert_int_eq(nremotes, 3);
	ck_assert_int_eq(remotes[2].b->leader, 3);
	ck_assert_str_eq(remotes[2].tps, "r-1,r-2");
	/* No connection at the next try: backed off again. */
	errs[0] = KERR_NONE;
	errs[1] = KERR_REQUEST_TIMED_OUT;
	answer_remote(2, 0, errs);
	remote_refuse = true;
	run_for(50);
	ck_assert_int_eq(nremotes, 3);
	ck_assert_int_eq(m->ntps, 1);
	remote_refuse = false;
	run_for(50);
	ck_assert_int_eq(nremotes, 4);
	ck_assert_str_eq(remotes[3].tps, "r-2");
	/* Done: CompleteCommit follows. */
	n = nrecs;
	answer_remote(3, KERR_NONE, NULL);
	ck_assert_int_eq(nrecs, n + 1);
	ck_assert_int_eq(recs[n].status, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(m->ntps, 0);
	ck_assert_ptr_null(m->markers);
	run_for(50);
	ck_assert_int_eq(nremotes, 4);
}
END_TEST

/* A refused epoch gives the partition up; a deleted topic is skipped at
 * the next look-up; an abort marker goes the same way. */
START_TEST(test_remote_markers_refused_and_gone)
{
	int64_t pid;
	int16_t epoch;
	init_ok("r1", 60000, 10, &pid, &epoch);
	txn_tp_ref tps[] = { { S("r"), 0 }, { S("r"), 1 } };
	ck_assert_int_eq(txn_add_partitions(&tc, S("r1"), pid, epoch, tps, 2, TXN_TV0, 20), KERR_NONE);
	ck_assert_int_eq(end("r1", pid, epoch, false, 30), KERR_NONE);
	ck_assert_int_eq(nremotes, 1);
	ck_assert(!remotes[0].b->commit);
	int16_t errs[2] = { KERR_TRANSACTION_COORDINATOR_FENCED, KERR_UNKNOWN_TOPIC_OR_PARTITION };
	answer_remote(0, 0, errs);
	txn_meta *m = meta("r1");
	ck_assert_int_eq(m->ntps, 1);
	topic_deleted[3] = true;
	int n = nrecs;
	run_for(50);
	ck_assert_int_eq(nremotes, 1);
	ck_assert_int_eq(nrecs, n + 1);
	ck_assert_int_eq(m->state, TXN_COMPLETE_ABORT);
}
END_TEST

/* ---- replicated writes ---- */

/* The markers wait until the Prepare record is committed; the abort timer
 * does not start them earlier. */
START_TEST(test_markers_after_prepare_committed)
{
	int64_t pid;
	int16_t epoch;
	init_ok("q", 60000, 10, &pid, &epoch);
	ck_assert_int_eq(add("q", pid, epoch, "t", 0, 20), KERR_NONE);
	hold_hw = true;
	ck_assert_int_eq(end("q", pid, epoch, true, 30), KERR_NONE);
	txn_meta *m = meta("q");
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	ck_assert_ptr_nonnull(m->prepare_wait);
	ck_assert_int_eq(nmarkers, 0);
	txn_abort_timed_out(&tc, 40);
	run_for(20);
	ck_assert_int_eq(nmarkers, 0);
	ck_assert_int_eq(end("q", pid, epoch, true, 50), KERR_CONCURRENT_TRANSACTIONS);
	/* The followers caught up: markers, then CompleteCommit. */
	commit_log();
	run_for(20);
	ck_assert_int_eq(nmarkers, 1);
	ck_assert_str_eq(markers[0].tp, "t-0");
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_ptr_null(m->prepare_wait);

	/* A leadership lost while waiting: nothing is sent. */
	ck_assert_int_eq(add("q", pid, epoch, "t", 1, 60), KERR_NONE);
	commit_log();
	ck_assert_int_eq(end("q", pid, epoch, false, 70), KERR_NONE);
	ck_assert_ptr_nonnull(m->prepare_wait);
	log_part.role = BRK_ROLE_FOLLOWER;
	brk_watchlist_notify(&log_part.hw_waiters, 0);
	run_for(20);
	ck_assert_ptr_null(m->prepare_wait);
	ck_assert_int_eq(nmarkers, 1);
	ck_assert_int_eq(m->state, TXN_PREPARE_ABORT);
	ck_assert_int_eq(end("q", pid, epoch, false, 80), KERR_CONCURRENT_TRANSACTIONS);
	/* Then the role observer drops the partition. */
	ck_assert_int_eq(txn_partition_unload(&tc, txn_partition_of(&tc, S("q"))), 1);
	ck_assert_int_eq(end("q", pid, epoch, false, 90), KERR_NOT_COORDINATOR);
	log_part.role = BRK_ROLE_LEADER;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txn");
	TCase *tcase = tcase_create("coordinator");
	tcase_add_checked_fixture(tcase, setup, teardown);
	tcase_add_test(tcase, test_state_names);
	tcase_add_test(tcase, test_init);
	tcase_add_test(tcase, test_epoch_exhaustion);
	tcase_add_test(tcase, test_kip360);
	tcase_add_test(tcase, test_commit);
	tcase_add_test(tcase, test_fence);
	tcase_add_test(tcase, test_offsets_and_verify);
	tcase_add_test(tcase, test_timeout);
	tcase_add_test(tcase, test_expire);
	tcase_add_test(tcase, test_store_failure);
	tcase_add_test(tcase, test_marker_failure);
	tcase_add_test(tcase, test_tv2);
	tcase_add_test(tcase, test_start_completes_prepared);
	tcase_add_test(tcase, test_many_ids);
	tcase_add_test(tcase, test_config_keys);
	tcase_add_test(tcase, test_verify_partition);
	tcase_add_test(tcase, test_not_coordinator);
	tcase_add_test(tcase, test_unload_cancels_markers);
	tcase_add_test(tcase, test_remote_markers);
	tcase_add_test(tcase, test_remote_markers_refused_and_gone);
	tcase_add_test(tcase, test_markers_after_prepare_committed);
	suite_add_tcase(s, tcase);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
