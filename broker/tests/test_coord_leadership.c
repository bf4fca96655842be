/*
 * test_coord_leadership.c - the group and transaction coordinators follow
 * the leadership of their internal partitions, driven through the real
 * partition registry (partitions.c, partition.c) with real logs in a
 * temporary directory: the controller's states are applied as
 * CTL_EV_TOPIC / CTL_EV_PARTITION would apply them, this broker (id 1)
 * with one follower (id 2) in the ISR, so the high watermark moves only
 * when the test makes the follower fetch (brk_partition_follower_fetched).
 *
 * Covered: a partition loaded when this broker becomes its leader and
 * dropped when it becomes a follower (groups: NOT_COORDINATOR, waiting
 * answers failed NOT_COORDINATOR; transactional ids likewise), reloaded
 * from its own log up to the log end offset (a commit above the high
 * watermark included) on a new election; an offset commit's answer that
 * waits until the follower has the write; the markers of a transaction
 * sent only once its PrepareCommit record is committed, a marker written
 * here counted once committed, a marker to another broker's partition
 * sent as WriteTxnMarkers v1 and retried after NOT_LEADER_OR_FOLLOWER.
 * Loading in the background: a partition answers
 * COORDINATOR_LOAD_IN_PROGRESS until the loop has run its slices
 * (settle()); 3,000 groups reloaded in slices of 64 records while the
 * other partition is served and a commit marker written meanwhile is
 * applied; a load dropped half-way (installed groups go) and a queued one
 * dropped before it started; transactional ids loaded in slices, the
 * timers leaving the loading partition alone; both coordinators freed
 * while their loads run.
 *
 * Replaced at link time (the edges of this unit): the controller's wait
 * (brk_ctl_wait_then_retry), producer ids, the cluster's brokers, the peer
 * connections (brk_peers_get / brk_peer_send record the request and let
 * the test answer it), and the connection (brk_request_complete,
 * brk_conn_client_host).
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/coordinator_key.h"
#include "broker/ctl_wait.h"
#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/group/txn_offsets.h"
#include "broker/hw_wait.h"
#include "broker/peers.h"
#include "broker/server.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

brk_server server;

/* ---- fakes at the edges ---- */

static int completed, completed_how;

void brk_request_complete(brk_request *req, int how)
{
	req->cancel = NULL;
	req->delayed = NULL;
	completed++;
	completed_how = how;
}

const char *brk_conn_client_host(const brk_conn *c)
{
	(void)c;
	return "/127.0.0.1";
}

int brk_ctl_wait_then_retry(brk_request *req, brk_cluster *cl, const ctl_op *op, int64_t timeout_ms)
{
	(void)req;
	(void)cl;
	(void)op;
	(void)timeout_ms;
	return BRK_CLOSE;
}

static int64_t next_pid = 1000;

int16_t brk_producer_ids_next(brk_producer_ids *pm, int64_t *out)
{
	(void)pm;
	*out = next_pid++;
	return KERR_NONE;
}

static ctl_broker broker3 = { .id = 3, .host = "127.0.0.1", .port = 9999 };

const ctl_broker *brk_cluster_broker(const brk_cluster *cl, int32_t id)
{
	(void)cl;
	return id == 3 ? &broker3 : NULL;
}

bool brk_cluster_alive(const brk_cluster *cl, int32_t id)
{
	(void)cl;
	return id >= 1 && id <= 3;
}

static int fake_peer; /* its address is the peer */

brk_peer *brk_peers_get(brk_peers *ps, const ctl_broker *b, brk_peer_purpose purpose)
{
	(void)ps;
	ck_assert_int_eq(b->id, 3);
	ck_assert_int_eq(purpose, BRK_PEER_CONTROL);
	return (brk_peer *)&fake_peer;
}

/* The requests sent to broker 3, waiting for the test's answer. */
typedef struct sent {
	int16_t api_key, version;
	proto_writer body;
	brk_peer_done_fn done;
	void *arg;
} sent;
static sent sends[8];
static int nsends;

int brk_peer_send(brk_peer *p, int16_t api_key, int16_t api_version, brk_peer_encode_fn encode,
		  void *encode_arg, brk_peer_done_fn done, void *arg)
{
	ck_assert_ptr_eq(p, (brk_peer *)&fake_peer);
	ck_assert_int_lt(nsends, 8);
	sent *s = &sends[nsends++];
	s->api_key = api_key;
	s->version = api_version;
	proto_writer_init(&s->body);
	ck_assert_int_eq(encode(&s->body, api_version, encode_arg), 0);
	s->done = done;
	s->arg = arg;
	return BRK_PEER_OK;
}

/* Answer request i with one marker result for producer pid: err for
 * topic-partition. */
static void answer_send(int i, int64_t pid, const char *topic, int32_t partition, int16_t err)
{
	sent *s = &sends[i];
	WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult pr = { partition, err };
	WriteTxnMarkersResponse_WritableTxnMarkerTopicResult tr = { proto_cstr(topic), 1, &pr };
	WriteTxnMarkersResponse_WritableTxnMarkerResult mr = { pid, 1, &tr };
	WriteTxnMarkersResponse r = { 1, &mr };
	proto_writer w;
	proto_writer_init(&w);
	ck_assert_int_eq(WriteTxnMarkersResponse_encode(&w, s->version, &r), 0);
	proto_reader rd;
	proto_reader_init(&rd, w.buf, w.len);
	s->done((brk_peer *)&fake_peer, BRK_PEER_OK, &rd, s->arg);
	proto_writer_free(&w);
	proto_writer_free(&s->body);
	s->done = NULL;
}

/* ---- the registry and the controller's states ---- */

static char dir[64];
static brk_replica_env env = { .broker_id = 1, .replica_lag_time_max_ms = 30000 };

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

/* One loop iteration: the timers due now, a load's next slice among them
 * (a timer re-armed with delay 0 waits for the next iteration). */
static void one_iteration(void)
{
	run_for(0);
}

/* Run the loop until neither coordinator has a load left; returns the
 * iterations it took. */
static int settle(void)
{
	int n = 0;
	while (server.groups.nloading > 0 || server.txns.nloading > 0) {
		ck_assert_int_lt(n, 1000000);
		one_iteration();
		n++;
	}
	return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A topic: npart partitions, each with replicas {1, 2} (or {3} when
 * remote), leader `leader`, ISR all replicas, leader epoch 0. */
static void add_topic(const char *name, int32_t npart, int32_t leader, bool remote)
{
	ctl_topic *t = calloc(1, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	for (int i = 0; i < 16; i++)
		t->id[i] = (uint8_t)(name[0] + i + 1);
	t->id[15] = (uint8_t)strlen(name);
	t->internal = name[0] == '_';
	t->npartitions = npart;
	t->replication_factor = remote ? 1 : 2;
	t->partitions = calloc((size_t)npart, sizeof(*t->partitions));
	for (int32_t i = 0; i < npart; i++) {
		ctl_partition *p = &t->partitions[i];
		p->partition = i;
		p->nreplicas = p->nisr = remote ? 1 : 2;
		p->replicas = calloc(2, sizeof(int32_t));
		p->isr = calloc(2, sizeof(int32_t));
		p->replicas[0] = p->isr[0] = remote ? 3 : 1;
		p->replicas[1] = p->isr[1] = 2;
		p->leader = remote ? 3 : leader;
		p->leader_epoch = 0;
	}
	ck_assert_int_eq(brk_partitions_apply_topic(&server.partitions, t, brk_wall_ms()), 0);
}

static brk_partition *part(const char *topic, int32_t i)
{
	brk_topic *t = brk_topic_find(&server.partitions, topic, (int32_t)strlen(topic));
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->name_len, (int32_t)strlen(topic)); /* kept beside the name */
	return brk_topic_partition(t, i);
}

/* A new leader epoch for partition i of topic (replicas {1, 2}, both in
 * the ISR), as the controller's CTL_EV_PARTITION. */
static void elect(const char *topic, int32_t i, int32_t leader, int32_t epoch)
{
	int32_t replicas[2] = { 1, 2 };
	ctl_partition st = { .partition = i, .replicas = replicas, .nreplicas = 2, .leader = leader,
			     .leader_epoch = epoch, .isr = replicas, .nisr = 2 };
	brk_topic *t = brk_topic_find(&server.partitions, topic, (int32_t)strlen(topic));
	brk_partitions_apply_state(&server.partitions, t->id, &st, brk_wall_ms());
}

/* Broker 2 fetches partition p up to this broker's log end offset: the
 * high watermark follows. */
static void follower_catches_up(brk_partition *p)
{
	brk_partition_follower_fetched(p, 2, log_end_offset(p->log), 0, &env, brk_wall_ms());
}

static void setup(void)
{
	memset(&server, 0, sizeof(server));
	snprintf(dir, sizeof(dir), "/tmp/samsa-coordlead-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	brk_config_defaults(&server.cfg);
	snprintf(server.cfg.log_dir, sizeof(server.cfg.log_dir), "%s", dir);
	server.cfg.broker_id = 1;
	server.cluster.broker_id = 1;
	server.loop = brk_loop_new();
	ck_assert_ptr_nonnull(server.loop);
	ck_assert_int_eq(brk_partitions_init(&server.partitions, server.loop, &server.flusher,
					 &server.cfg, &env, true),
			 0);
	grp_coordinator_init(&server.groups, server.loop, &server.cfg);
	ck_assert_int_eq(grp_store_open(&server.groups, &server.partitions), 0);
	txn_coordinator_init(&server.txns, server.loop, &server.cfg);
	txn_marker_channel_init(&server.txns.channel, &server.txns.markers, &server.partitions,
				&server.cluster, &server.peers);
	ck_assert_int_eq(txn_store_open(&server.txns, &server.partitions, &server.groups), 0);
	completed = completed_how = 0;
	nsends = 0;
}

static void teardown(void)
{
	txn_coordinator_free(&server.txns);
	for (int i = 0; i < nsends; i++)
		if (sends[i].done) {
			sends[i].done((brk_peer *)&fake_peer, BRK_PEER_ERR_DESTROYED, NULL, sends[i].arg);
			proto_writer_free(&sends[i].body);
		}
	txn_marker_channel_close(&server.txns.channel);
	grp_coordinator_free(&server.groups);
	ck_assert_int_eq(brk_partitions_shutdown(&server.partitions), 0);
	brk_loop_free(server.loop);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A request whose answer (in out) is "ok". */
typedef struct fake_req {
	brk_request req;
	proto_arena arena;
	proto_writer out;
} fake_req;

static void req_init(fake_req *f)
{
	memset(f, 0, sizeof(*f));
	proto_arena_init(&f->arena, 0);
	proto_writer_init(&f->out);
	f->req.arena = &f->arena;
	f->req.out = &f->out;
	proto_write_raw(&f->out, "ok", 2);
}

static void req_free(fake_req *f)
{
	proto_arena_free(&f->arena);
	proto_writer_free(&f->out);
}

static int16_t failed_with;

static int fail_fn(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	proto_write_raw(req->out, "err", 3);
	failed_with = err;
	return BRK_RESPOND;
}

/* Commit offset `offset` of topic "t" partition 0 for group g. */
static int commit(grp_group *g, int64_t offset)
{
	grp_offset v = grp_offset_of_commit(offset, -1, proto_cstr(""), brk_wall_ms(), -1);
	grp_store_offset it = { proto_cstr("t"), 0, &v };
	return grp_store_write_offsets(g, &it, 1, brk_wall_ms());
}

/* Group ids in partitions 0 and 1 of a 2-partition __consumer_offsets. */
static const char *group_in(int32_t partition)
{
	static const char *ids[] = { "a", "b", "c", "d" };
	for (int i = 0; i < 4; i++)
		if (brk_coordinator_partition(ids[i], 1, 2) == partition)
			return ids[i];
	ck_abort();
	return NULL;
}

/* ---- groups ---- */

START_TEST(test_groups_follow_leadership)
{
	grp_coordinator *gc = &server.groups;
	const char *mine = group_in(0), *theirs = group_in(1);
	/* __consumer_offsets: partition 0 led here, 1 by broker 2. */
	add_topic("__consumer_offsets", 2, 1, false);
	elect("__consumer_offsets", 1, 2, 1);
	brk_partition *p0 = part("__consumer_offsets", 0);
	ck_assert_int_eq(p0->role, BRK_ROLE_LEADER);
	/* A new, empty partition: nothing to read, served at once. */
	ck_assert(grp_partition_state(gc, 0)->loaded);
	ck_assert(!grp_partition_state(gc, 0)->loading);
	ck_assert_int_eq(gc->nloading, 0);
	ck_assert(!grp_partition_state(gc, 1)->loaded);
	ck_assert_int_eq(grp_coordinator_error(gc, mine, 1), KERR_NONE);
	ck_assert_int_eq(grp_coordinator_error(gc, theirs, 1), KERR_NOT_COORDINATOR);

	/* A commit: appended here, answered once broker 2 has it. */
	grp_group *g = grp_get_or_create(gc, mine, 1);
	ck_assert_int_eq(commit(g, 42), KERR_NONE);
	ck_assert_int_eq(log_end_offset(p0->log), 1);
	ck_assert_int_eq(log_high_watermark(p0->log), 0);
	fake_req f;
	req_init(&f);
	ck_assert_int_eq(grp_answer(gc, &f.req, g->partition, fail_fn, NULL), BRK_DELAYED);
	run_for(20);
	ck_assert_int_eq(completed, 0);
	follower_catches_up(p0);
	ck_assert_int_eq(log_high_watermark(p0->log), 1);
	run_for(20);
	ck_assert_int_eq(completed, 1);
	ck_assert_int_eq(completed_how, BRK_COMPLETE_RESPOND);
	ck_assert_uint_eq(f.out.len, 2); /* "ok" */
	req_free(&f);

	/* A second commit, not on broker 2 yet, when the leadership moves:
	 * the answer fails NOT_COORDINATOR, the groups go. */
	ck_assert_int_eq(commit(g, 43), KERR_NONE);
	req_init(&f);
	ck_assert_int_eq(grp_answer(gc, &f.req, g->partition, fail_fn, NULL), BRK_DELAYED);
	elect("__consumer_offsets", 0, 2, 1);
	ck_assert_int_eq(p0->role, BRK_ROLE_FOLLOWER);
	ck_assert(!grp_partition_state(gc, 0)->loaded);
	ck_assert_ptr_null(grp_find(gc, mine, 1));
	ck_assert_int_eq(grp_coordinator_error(gc, mine, 1), KERR_NOT_COORDINATOR);
	run_for(20);
	ck_assert_int_eq(completed, 2);
	ck_assert_int_eq(failed_with, KERR_NOT_COORDINATOR);
	req_free(&f);
	/* Writes to a partition not led here are refused. */
	grp_group *h = grp_get_or_create(gc, mine, 1);
	ck_assert_int_eq(commit(h, 1), KERR_NOT_COORDINATOR);
	grp_remove(h);

	/* Leader again: reloaded from its log to the log end offset, the
	 * commit above the high watermark included. */
	elect("__consumer_offsets", 0, 1, 2);
	ck_assert_int_eq(grp_coordinator_error(gc, mine, 1), KERR_COORDINATOR_LOAD_IN_PROGRESS);
	settle();
	ck_assert(grp_partition_state(gc, 0)->loaded);
	g = grp_find(gc, mine, 1);
	ck_assert_ptr_nonnull(g);
	const grp_offset *o = grp_offsets_get(g->offsets, "t", 1, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->offset, 43);
	ck_assert_int_eq(o->record_offset, 1);
	/* What was loaded above the high watermark holds answers too. */
	req_init(&f);
	ck_assert_int_eq(grp_answer(gc, &f.req, 0, fail_fn, NULL), BRK_DELAYED);
	follower_catches_up(p0);
	run_for(20);
	ck_assert_int_eq(completed, 3);
	ck_assert_int_eq(completed_how, BRK_COMPLETE_RESPOND);
	req_free(&f);

	/* Partition 1 comes here too; the topic removed drops everything. */
	elect("__consumer_offsets", 1, 1, 2);
	settle();
	ck_assert(grp_partition_state(gc, 1)->loaded);
	brk_topic *t = brk_topic_find(&server.partitions, "__consumer_offsets", 18);
	uint8_t id[16];
	memcpy(id, t->id, 16);
	brk_partitions_remove_topic(&server.partitions, "__consumer_offsets", id);
	ck_assert(!grp_partition_state(gc, 0)->loaded);
	ck_assert(!grp_partition_state(gc, 1)->loaded);
	ck_assert_ptr_null(grp_find(gc, mine, 1));
}
END_TEST

/* ---- transactions ---- */

START_TEST(test_txn_follows_leadership)
{
	txn_coordinator *tc = &server.txns;
	add_topic("__transaction_state", 1, 1, false);
	add_topic("data", 1, 1, false);
	add_topic("remote", 1, 3, true);
	brk_partition *ts = part("__transaction_state", 0);
	brk_partition *data = part("data", 0);
	ck_assert(txn_partition_state(tc, 0)->loaded); /* empty: at once */
	ck_assert_int_eq(tc->nloading, 0);

	int64_t pid;
	int16_t epoch;
	proto_str id = proto_cstr("tx");
	ck_assert_int_eq(txn_init_producer_id(tc, id, 60000, -1, -1, brk_wall_ms(), &pid, &epoch),
			 KERR_NONE);
	txn_tp_ref tps[] = { { proto_cstr("data"), 0 }, { proto_cstr("remote"), 0 } };
	ck_assert_int_eq(txn_add_partitions(tc, id, pid, epoch, tps, 2, TXN_TV0, brk_wall_ms()),
			 KERR_NONE);
	follower_catches_up(ts);
	int64_t np;
	int16_t ne;
	ck_assert_int_eq(txn_end(tc, id, pid, epoch, true, false, brk_wall_ms(), &np, &ne), KERR_NONE);
	txn_meta *m = txn_find(tc, "tx", 2);
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	/* No marker before the PrepareCommit record is on broker 2. */
	run_for(20);
	ck_assert_int_eq(log_end_offset(data->log), 0);
	ck_assert_int_eq(nsends, 0);
	follower_catches_up(ts);
	run_for(20);
	/* The marker here is written, counted once broker 2 has it; the one
	 * of remote-0 goes to broker 3 as WriteTxnMarkers v1. */
	ck_assert_int_eq(log_end_offset(data->log), 1);
	ck_assert_int_eq(nsends, 1);
	ck_assert_int_eq(sends[0].api_key, 27);
	ck_assert_int_eq(sends[0].version, 1);
	WriteTxnMarkersRequest rq;
	proto_arena a;
	proto_arena_init(&a, 0);
	proto_reader rd;
	proto_reader_init(&rd, sends[0].body.buf, sends[0].body.len);
	ck_assert_int_eq(WriteTxnMarkersRequest_decode(&rd, &a, 1, &rq), 0);
	ck_assert_int_eq(rq.markers_count, 1);
	ck_assert_int_eq(rq.markers[0].producer_id, pid);
	ck_assert_int_eq(rq.markers[0].producer_epoch, epoch);
	ck_assert(rq.markers[0].transaction_result);
	ck_assert_int_eq(rq.markers[0].coordinator_epoch, ts->leader_epoch);
	ck_assert_int_eq(rq.markers[0].topics_count, 1);
	ck_assert(proto_str_eq(rq.markers[0].topics[0].name, "remote"));
	ck_assert_int_eq(rq.markers[0].topics[0].partition_indexes_count, 1);
	ck_assert_int_eq(rq.markers[0].topics[0].partition_indexes[0], 0);
	proto_arena_free(&a);
	ck_assert_int_eq(m->ntps, 2);
	follower_catches_up(data);
	run_for(20);
	ck_assert_int_eq(m->ntps, 1); /* data-0 done */
	/* Broker 3 no longer leads it: retried after the backoff. */
	answer_send(0, pid, "remote", 0, KERR_NOT_LEADER_OR_FOLLOWER);
	ck_assert_int_eq(m->state, TXN_PREPARE_COMMIT);
	run_for(150);
	ck_assert_int_eq(nsends, 2);
	int64_t leo = log_end_offset(ts->log);
	answer_send(1, pid, "remote", 0, KERR_NONE);
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(log_end_offset(ts->log), leo + 1);

	/* A follower now: the ids go; a leader again: back from the log. */
	elect("__transaction_state", 0, 2, 1);
	ck_assert(!txn_partition_state(tc, 0)->loaded);
	ck_assert_ptr_null(txn_find(tc, "tx", 2));
	ck_assert_int_eq(txn_coordinator_error(tc, id), KERR_NOT_COORDINATOR);
	ck_assert_int_eq(txn_end(tc, id, pid, epoch, true, false, brk_wall_ms(), &np, &ne),
			 KERR_NOT_COORDINATOR);
	elect("__transaction_state", 0, 1, 2);
	ck_assert_int_eq(txn_end(tc, id, pid, epoch, true, false, brk_wall_ms(), &np, &ne),
			 KERR_COORDINATOR_LOAD_IN_PROGRESS);
	settle();
	m = txn_find(tc, "tx", 2);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->state, TXN_COMPLETE_COMMIT);
	ck_assert_int_eq(m->producer_id, pid);
	ck_assert_int_eq(txn_partition_state(tc, 0)->leader_epoch, 2);
}
END_TEST

/* A transaction left in PrepareAbort is completed by the broker that
 * becomes the coordinator, at its coordinator epoch, once what it loaded
 * is committed. */
START_TEST(test_txn_prepared_completed_on_election)
{
	txn_coordinator *tc = &server.txns;
	add_topic("__transaction_state", 1, 1, false);
	add_topic("data", 1, 1, false);
	brk_partition *ts = part("__transaction_state", 0);
	brk_partition *data = part("data", 0);
	settle();
	int64_t pid;
	int16_t epoch;
	proto_str id = proto_cstr("tx");
	ck_assert_int_eq(txn_init_producer_id(tc, id, 60000, -1, -1, brk_wall_ms(), &pid, &epoch),
			 KERR_NONE);
	txn_tp_ref tp = { proto_cstr("data"), 0 };
	ck_assert_int_eq(txn_add_partitions(tc, id, pid, epoch, &tp, 1, TXN_TV0, brk_wall_ms()),
			 KERR_NONE);
	int64_t np;
	int16_t ne;
	ck_assert_int_eq(txn_end(tc, id, pid, epoch, false, false, brk_wall_ms(), &np, &ne), KERR_NONE);
	/* The leadership moves before the PrepareAbort record is committed. */
	elect("__transaction_state", 0, 2, 1);
	run_for(20);
	ck_assert_int_eq(log_end_offset(data->log), 0); /* no marker was sent */
	/* Back here: loaded (to the log end offset) in PrepareAbort; the
	 * marker waits until that is committed. */
	elect("__transaction_state", 0, 1, 3);
	settle();
	txn_meta *m = txn_find(tc, "tx", 2);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->state, TXN_PREPARE_ABORT);
	run_for(20);
	ck_assert_int_eq(log_end_offset(data->log), 0);
	follower_catches_up(ts);
	run_for(20);
	ck_assert_int_eq(log_end_offset(data->log), 1);
	const log_producer_entry *e = log_producer_find(data->log, pid);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->coordinator_epoch, 3);
	follower_catches_up(data);
	run_for(20);
	ck_assert_int_eq(m->state, TXN_COMPLETE_ABORT);
}
END_TEST

/* ---- loading in the background ---- */

/* Commit offset i of "t"-0 for groups "g-<i>" until n of them are in
 * partition 0 of __consumer_offsets; returns how many were made. */
static int commit_groups(int n)
{
	grp_coordinator *gc = &server.groups;
	char id[32];
	int in0 = 0, i;
	for (i = 0; in0 < n; i++) {
		int len = snprintf(id, sizeof(id), "g-%d", i);
		grp_group *g = grp_get_or_create(gc, id, len);
		ck_assert_ptr_nonnull(g);
		ck_assert_int_eq(commit(g, i), KERR_NONE);
		in0 += g->partition == 0;
	}
	return i;
}

/* Every group "g-<i>" (i < made) of partition `partition` has offset i,
 * or (present false) none is in the registry. */
static void check_groups(int made, int32_t partition, bool present)
{
	grp_coordinator *gc = &server.groups;
	char id[32];
	for (int i = 0; i < made; i++) {
		int len = snprintf(id, sizeof(id), "g-%d", i);
		if (brk_coordinator_partition(id, len, 2) != partition)
			continue;
		grp_group *g = grp_find(gc, id, len);
		if (!present) {
			ck_assert_ptr_null(g);
			continue;
		}
		ck_assert_msg(g != NULL, "%s missing", id);
		const grp_offset *o = grp_offsets_get(g->offsets, "t", 1, 0);
		ck_assert_ptr_nonnull(o);
		ck_assert_int_eq(o->offset, i);
	}
}

/* A reload of 3,000 groups in slices of 64 records: the partition answers
 * COORDINATOR_LOAD_IN_PROGRESS for dozens of loop iterations while the
 * other partition's groups are served; a commit marker written while it
 * loads is applied by the load; afterwards every offset is back. */
START_TEST(test_groups_load_in_slices)
{
	grp_coordinator *gc = &server.groups;
	add_topic("__consumer_offsets", 2, 1, false);
	settle();
	int made = commit_groups(3000);
	/* A transactional offset commit of producer 5000 in a partition-0
	 * group, its marker not written yet. */
	grp_group *tg = grp_find(gc, "g-0", 3);
	if (tg->partition != 0)
		tg = grp_find(gc, "g-1", 3);
	ck_assert_int_eq(tg->partition, 0);
	char tid[32];
	snprintf(tid, sizeof(tid), "%s", tg->group_id);
	grp_offset v = grp_offset_of_commit(777, -1, proto_cstr("txn"), brk_wall_ms(), -1);
	grp_store_offset it = { proto_cstr("t"), 1, &v };
	ck_assert_int_eq(grp_store_write_txn_offsets(tg, 5000, 0, &it, 1, brk_wall_ms()), KERR_NONE);
	ck_assert_int_eq(grp_txn_group_count(gc), 1);

	gc->load_slice = 64;
	elect("__consumer_offsets", 0, 2, 1);
	check_groups(made, 0, false);
	elect("__consumer_offsets", 0, 1, 2);
	ck_assert(grp_partition_state(gc, 0)->loading);
	one_iteration();
	one_iteration();
	ck_assert(grp_partition_state(gc, 0)->loading);
	ck_assert_int_eq(grp_coordinator_error(gc, tid, (int32_t)strlen(tid)),
			 KERR_COORDINATOR_LOAD_IN_PROGRESS);
	/* Partition 1 is served all along. */
	check_groups(made, 1, true);
	ck_assert_int_eq(grp_coordinator_error(gc, "g-0", 3) == KERR_NONE,
			 brk_coordinator_partition("g-0", 3, 2) == 1);
	/* The transaction commits while partition 0 loads. */
	brk_partition *p0 = part("__consumer_offsets", 0);
	ck_assert_int_eq(brk_partition_write_txn_marker(&server.partitions, p0, 5000, 0, 0, true,
							brk_wall_ms()),
			 KERR_NONE);
	int iterations = settle();
	/* 3,000 records in slices of 64, then the groups installed. */
	ck_assert_int_ge(iterations, 3000 / 64);
	ck_assert(grp_partition_state(gc, 0)->loaded);
	check_groups(made, 0, true);
	tg = grp_find(gc, tid, (int32_t)strlen(tid));
	ck_assert_ptr_nonnull(tg);
	const grp_offset *o = grp_offsets_get(tg->offsets, "t", 1, 1);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->offset, 777);
	ck_assert_str_eq(o->metadata, "txn");
	ck_assert_int_eq(grp_txn_set_count(tg->txns), 0);
	ck_assert_int_eq(grp_txn_group_count(gc), 0);
	ck_assert_int_eq(grp_count(gc), made);
}
END_TEST

/* Resignation in the middle of a load: the load stops, what it installed
 * goes, the partition is not served; a new election loads it all. A load
 * queued behind another one is dropped as well. */
START_TEST(test_groups_load_dropped)
{
	grp_coordinator *gc = &server.groups;
	add_topic("__consumer_offsets", 2, 1, false);
	settle();
	int made = commit_groups(2000);
	gc->load_slice = 16;
	elect("__consumer_offsets", 0, 2, 1);
	elect("__consumer_offsets", 1, 2, 1);
	elect("__consumer_offsets", 0, 1, 2);
	elect("__consumer_offsets", 1, 1, 2); /* queued behind partition 0 */
	ck_assert_int_eq(gc->nloading, 2);
	for (int i = 0; i < 200; i++)
		one_iteration(); /* about 3,200 records: partition 0 installs */
	ck_assert(grp_partition_state(gc, 0)->loading);
	ck_assert(grp_partition_state(gc, 1)->loading);
	elect("__consumer_offsets", 0, 2, 3);
	elect("__consumer_offsets", 1, 2, 3);
	ck_assert_int_eq(gc->nloading, 0);
	ck_assert(!grp_partition_state(gc, 0)->loaded);
	ck_assert_int_eq(grp_count(gc), 0);
	ck_assert_int_eq(grp_coordinator_error(gc, "g-0", 3), KERR_NOT_COORDINATOR);
	run_for(10); /* no slice runs any more (ASan: nothing freed is touched) */
	gc->load_slice = GRP_LOAD_SLICE_RECORDS;
	elect("__consumer_offsets", 0, 1, 4);
	elect("__consumer_offsets", 1, 1, 4);
	settle();
	check_groups(made, 0, true);
	check_groups(made, 1, true);
}
END_TEST

/* Transactional ids load in slices: COORDINATOR_LOAD_IN_PROGRESS and the
 * timers leave them alone meanwhile (a timed-out transaction is not
 * aborted by a half-loaded coordinator); then every id is back, the
 * Ongoing one aborted by the next timer run. */
START_TEST(test_txn_load_in_slices)
{
	txn_coordinator *tc = &server.txns;
	add_topic("__transaction_state", 1, 1, false);
	add_topic("data", 1, 1, false);
	settle();
	brk_partition *ts = part("__transaction_state", 0);
	char id[32];
	int64_t pid;
	int16_t epoch;
	for (int i = 0; i < 1500; i++) {
		snprintf(id, sizeof(id), "tx-%d", i);
		ck_assert_int_eq(txn_init_producer_id(tc, proto_cstr(id), 1000, -1, -1, brk_wall_ms(),
						      &pid, &epoch),
				 KERR_NONE);
	}
	txn_tp_ref tp = { proto_cstr("data"), 0 };
	const txn_meta *t7 = txn_find(tc, "tx-7", 4);
	ck_assert_int_eq(txn_add_partitions(tc, proto_cstr("tx-7"), t7->producer_id,
					    t7->producer_epoch, &tp, 1, TXN_TV0, brk_wall_ms()),
			 KERR_NONE);
	follower_catches_up(ts);
	tc->load_slice = 16;
	elect("__transaction_state", 0, 2, 1);
	ck_assert_int_eq(txn_count(tc), 0);
	elect("__transaction_state", 0, 1, 2);
	for (int i = 0; i < 20; i++)
		one_iteration();
	ck_assert(txn_partition_state(tc, 0)->loading);
	ck_assert_int_gt(txn_count(tc), 0);
	ck_assert_int_lt(txn_count(tc), 1500);
	ck_assert_int_eq(txn_coordinator_error(tc, proto_cstr("tx-1")), KERR_COORDINATOR_LOAD_IN_PROGRESS);
	int64_t leo = log_end_offset(ts->log);
	txn_abort_timed_out(tc, brk_wall_ms() + 3600000);
	txn_expire_ids(tc, brk_wall_ms() + 365LL * 86400000);
	ck_assert_int_eq(log_end_offset(ts->log), leo); /* nothing written */
	ck_assert_int_ge(20 + settle(), 1500 / 16); /* one slice per 16 records */
	ck_assert_int_eq(txn_count(tc), 1500);
	txn_meta *m = txn_find(tc, "tx-7", 4);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->state, TXN_ONGOING);
	txn_abort_timed_out(tc, brk_wall_ms() + 3600000);
	ck_assert_int_eq(m->state, TXN_PREPARE_ABORT);
}
END_TEST

/* The coordinators freed while loads run (a shutdown during start-up):
 * the loads, their staged and installed groups and ids go, nothing runs
 * afterwards (the sanitizer build checks for leaks and use after free). */
START_TEST(test_free_while_loading)
{
	add_topic("__consumer_offsets", 2, 1, false);
	add_topic("__transaction_state", 1, 1, false);
	settle();
	commit_groups(500);
	char id[32];
	int64_t pid;
	int16_t epoch;
	for (int i = 0; i < 1000; i++) {
		snprintf(id, sizeof(id), "tx-%d", i);
		ck_assert_int_eq(txn_init_producer_id(&server.txns, proto_cstr(id), 1000, -1, -1,
						      brk_wall_ms(), &pid, &epoch),
				 KERR_NONE);
	}
	server.groups.load_slice = 8;
	server.txns.load_slice = 8;
	elect("__consumer_offsets", 0, 2, 1);
	elect("__consumer_offsets", 1, 2, 1);
	elect("__transaction_state", 0, 2, 1);
	elect("__consumer_offsets", 0, 1, 2);
	elect("__consumer_offsets", 1, 1, 2);
	elect("__transaction_state", 0, 1, 2);
	for (int i = 0; i < 80; i++)
		one_iteration(); /* partition 0 installing, 1 queued, ids half read */
	ck_assert_int_eq(server.groups.nloading, 2);
	ck_assert_int_eq(server.txns.nloading, 1);
	ck_assert_int_gt(grp_count(&server.groups), 0);
	ck_assert_int_gt(txn_count(&server.txns), 0);
	/* The teardown frees both coordinators now. */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coord_leadership");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_groups_follow_leadership);
	tcase_add_test(tc, test_txn_follows_leadership);
	tcase_add_test(tc, test_txn_prepared_completed_on_election);
	tcase_add_test(tc, test_groups_load_in_slices);
	tcase_add_test(tc, test_groups_load_dropped);
	tcase_add_test(tc, test_txn_load_in_slices);
	tcase_add_test(tc, test_free_while_loading);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
