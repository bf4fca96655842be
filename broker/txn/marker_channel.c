/*
 * marker_channel.c - the transaction coordinator's markers, written here or
 * sent to their partitions' leaders (marker_channel.h).
 */
#include "broker/txn/marker_channel.h"

#include <stdlib.h>
#include <string.h>

#include "broker/cluster.h"
#include "broker/hw_wait.h"
#include "broker/partitions.h"
#include "broker/peers.h"
#include "broker/txn/txn.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"
#include "storage/log.h"

#define API_WRITE_TXN_MARKERS 27

/* ---- where ---- */

static int32_t locate(void *arg, const char *topic, int32_t tlen, int32_t partition)
{
	txn_marker_channel *ch = arg;
	brk_topic *t = brk_topic_find(ch->partitions, topic, tlen);
	brk_partition *p = brk_topic_partition(t, partition);
	if (!p)
		return TXN_MARKER_GONE;
	if (p->leader < 0)
		return TXN_MARKER_NO_LEADER;
	if (p->leader == ch->cluster->broker_id)
		return p->role == BRK_ROLE_LEADER ? TXN_MARKER_HERE : TXN_MARKER_NO_LEADER;
	return brk_cluster_alive(ch->cluster, p->leader) ? p->leader : TXN_MARKER_NO_LEADER;
}

/* ---- markers written here ---- */

/* One target's wait: the arg of its hw wait. */
typedef struct local_target {
	txn_local_write *lw;
	int32_t i;
	brk_hw_wait *wait; /* NULL once settled */
} local_target;

/* A delivery to this broker whose markers wait to be committed. */
struct txn_local_write {
	txn_marker_channel *ch;
	txn_local_write *prev, *next;
	txn_marker_batch *b;
	txn_marker_done_fn done;
	void *done_arg;
	local_target *targets; /* per target */
	int32_t waiting;
};

static void local_unlink(txn_local_write *lw)
{
	if (lw->prev)
		lw->prev->next = lw->next;
	else
		lw->ch->local = lw->next;
	if (lw->next)
		lw->next->prev = lw->prev;
}

static void local_finish(txn_local_write *lw)
{
	local_unlink(lw);
	txn_marker_batch *b = lw->b;
	txn_marker_done_fn done = lw->done;
	void *arg = lw->done_arg;
	free(lw->targets);
	free(lw);
	done(arg, b);
}

static void on_committed(void *arg, int16_t err)
{
	local_target *lt = arg;
	txn_local_write *lw = lt->lw;
	lt->wait = NULL;
	lw->b->targets[lt->i].error = err == KERR_NOT_COORDINATOR ? KERR_NOT_LEADER_OR_FOLLOWER : err;
	if (--lw->waiting == 0)
		local_finish(lw);
}

/* Write one marker here. Returns its error, NONE once committed; *pending
 * is set (with *mark) when it still has to be. */
static int16_t write_here(txn_marker_channel *ch, const txn_marker_batch *b,
			  const txn_marker_target *t, brk_hw_mark *mark, bool *pending)
{
	*pending = false;
	brk_topic *topic = brk_topic_find(ch->partitions, t->topic, t->topic_len);
	brk_partition *p = brk_topic_partition(topic, t->partition);
	if (!p)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int16_t err = brk_partition_write_txn_marker(ch->partitions, p, b->producer_id,
						     b->producer_epoch, b->coordinator_epoch, b->commit,
						     brk_wall_ms());
	if (err)
		return err;
	/* The loop is the log's only writer: the marker ends at the log end. */
	*mark = (brk_hw_mark){ p, p->leader_epoch, log_end_offset(p->log) };
	int st = brk_hw_mark_state(mark);
	*pending = st == BRK_HW_PENDING;
	return st == BRK_HW_LOST ? KERR_NOT_LEADER_OR_FOLLOWER : KERR_NONE;
}

static int deliver_here(txn_marker_channel *ch, txn_marker_batch *b, txn_marker_done_fn done,
			void *done_arg)
{
	txn_local_write *lw = calloc(1, sizeof(*lw));
	local_target *lts = calloc((size_t)(b->ntargets ? b->ntargets : 1), sizeof(*lts));
	if (!lw || !lts) {
		free(lw);
		free(lts);
		return -1;
	}
	*lw = (txn_local_write){ .ch = ch, .b = b, .done = done, .done_arg = done_arg, .targets = lts };
	lw->next = ch->local;
	if (ch->local)
		ch->local->prev = lw;
	ch->local = lw;
	lw->waiting = 1; /* this call's own hold, dropped at the end */
	for (int32_t i = 0; i < b->ntargets; i++) {
		brk_hw_mark mark;
		bool pending;
		b->targets[i].error = write_here(ch, b, &b->targets[i], &mark, &pending);
		if (!pending)
			continue;
		lts[i] = (local_target){ lw, i, NULL };
		lts[i].wait = brk_hw_wait_start(&mark, TXN_WRITE_TIMEOUT_MS, KERR_REQUEST_TIMED_OUT,
						on_committed, &lts[i]);
		if (!lts[i].wait) {
			b->targets[i].error = KERR_REQUEST_TIMED_OUT; /* retried */
			continue;
		}
		lw->waiting++;
	}
	if (--lw->waiting == 0)
		local_finish(lw);
	return 0;
}

/* ---- markers sent to other leaders ---- */

typedef struct remote_send {
	txn_marker_batch *b;
	txn_marker_done_fn done;
	void *done_arg;
	int16_t version;
} remote_send;

static int encode_request(proto_writer *w, int16_t version, void *arg)
{
	const txn_marker_batch *b = arg;
	int32_t n = b->ntargets;
	WriteTxnMarkersRequest_WritableTxnMarkerTopic *topics = calloc((size_t)(n ? n : 1), sizeof(*topics));
	int32_t *parts = calloc((size_t)(n ? n : 1), sizeof(*parts));
	if (!topics || !parts) {
		free(topics);
		free(parts);
		return PROTO_ERR_NOMEM;
	}
	/* The targets come sorted by topic: one entry per run of a topic. */
	int32_t nt = 0;
	for (int32_t i = 0; i < n; i++) {
		const txn_marker_target *t = &b->targets[i];
		if (i == 0 || t->topic_len != b->targets[i - 1].topic_len ||
		    memcmp(t->topic, b->targets[i - 1].topic, (size_t)t->topic_len) != 0) {
			WriteTxnMarkersRequest_WritableTxnMarkerTopic_init(&topics[nt]);
			topics[nt].name = proto_str_of(t->topic, t->topic_len);
			topics[nt].partition_indexes = &parts[i];
			nt++;
		}
		parts[i] = t->partition;
		topics[nt - 1].partition_indexes_count++;
	}
	WriteTxnMarkersRequest_WritableTxnMarker mk;
	WriteTxnMarkersRequest_WritableTxnMarker_init(&mk);
	mk.producer_id = b->producer_id;
	mk.producer_epoch = b->producer_epoch;
	mk.transaction_result = b->commit;
	mk.topics = topics;
	mk.topics_count = nt;
	mk.coordinator_epoch = b->coordinator_epoch;
	mk.transaction_version = b->transaction_version;
	WriteTxnMarkersRequest r;
	WriteTxnMarkersRequest_init(&r);
	r.markers = &mk;
	r.markers_count = 1;
	int rc = WriteTxnMarkersRequest_encode(w, version, &r);
	free(topics);
	free(parts);
	return rc;
}

/* The error of b->targets[i] in response r (UNKNOWN_SERVER_ERROR when
 * the response does not name it). */
static int16_t result_of(const WriteTxnMarkersResponse *r, const txn_marker_batch *b,
			 const txn_marker_target *t)
{
	for (int32_t m = 0; m < r->markers_count; m++) {
		const WriteTxnMarkersResponse_WritableTxnMarkerResult *mr = &r->markers[m];
		if (mr->producer_id != b->producer_id)
			continue;
		for (int32_t k = 0; k < mr->topics_count; k++) {
			const WriteTxnMarkersResponse_WritableTxnMarkerTopicResult *tr = &mr->topics[k];
			if (tr->name.len != t->topic_len ||
			    memcmp(tr->name.ptr, t->topic, (size_t)t->topic_len) != 0)
				continue;
			for (int32_t j = 0; j < tr->partitions_count; j++)
				if (tr->partitions[j].partition_index == t->partition)
					return tr->partitions[j].error_code;
		}
	}
	return KERR_UNKNOWN_SERVER_ERROR;
}

static void on_response(brk_peer *peer, int err, proto_reader *body, void *arg)
{
	(void)peer;
	remote_send *rs = arg;
	txn_marker_batch *b = rs->b;
	WriteTxnMarkersResponse r;
	WriteTxnMarkersResponse_init(&r);
	proto_arena a;
	proto_arena_init(&a, 0);
	bool ok = err == BRK_PEER_OK && WriteTxnMarkersResponse_decode(body, &a, rs->version, &r) == 0;
	for (int32_t i = 0; i < b->ntargets; i++)
		b->targets[i].error = ok ? result_of(&r, b, &b->targets[i]) : KERR_NETWORK_EXCEPTION;
	proto_arena_free(&a);
	txn_marker_done_fn done = rs->done;
	void *done_arg = rs->done_arg;
	free(rs);
	done(done_arg, b);
}

static int deliver_remote(txn_marker_channel *ch, txn_marker_batch *b, txn_marker_done_fn done,
			  void *done_arg)
{
	const ctl_broker *br = brk_cluster_broker(ch->cluster, b->leader);
	brk_peer *peer = br ? brk_peers_get(ch->peers, br, BRK_PEER_CONTROL) : NULL;
	if (!peer)
		return -1;
	remote_send *rs = malloc(sizeof(*rs));
	if (!rs)
		return -1;
	*rs = (remote_send){ b, done, done_arg, b->transaction_version >= 2 ? 2 : 1 };
	if (brk_peer_send(peer, API_WRITE_TXN_MARKERS, rs->version, encode_request, b, on_response,
			  rs) != BRK_PEER_OK) {
		free(rs);
		return -1;
	}
	return 0;
}

static int deliver(void *arg, txn_marker_batch *b, txn_marker_done_fn done, void *done_arg)
{
	txn_marker_channel *ch = arg;
	return b->leader == TXN_MARKER_HERE ? deliver_here(ch, b, done, done_arg)
					    : deliver_remote(ch, b, done, done_arg);
}

void txn_marker_channel_init(txn_marker_channel *ch, txn_marker_env *env,
			     struct brk_partitions *reg, struct brk_cluster *cl,
			     struct brk_peers *peers)
{
	*ch = (txn_marker_channel){ .partitions = reg, .cluster = cl, .peers = peers };
	*env = (txn_marker_env){ .arg = ch,
				 .locate = locate,
				 .deliver = deliver,
				 .retry_backoff_ms = TXN_MARKER_BACKOFF_MS };
}

void txn_marker_channel_close(txn_marker_channel *ch)
{
	while (ch->local) {
		txn_local_write *lw = ch->local;
		for (int32_t i = 0; i < lw->b->ntargets; i++) {
			local_target *lt = &lw->targets[i];
			if (!lt->wait)
				continue;
			brk_hw_wait_cancel(lt->wait);
			lt->wait = NULL;
			lw->b->targets[i].error = KERR_NETWORK_EXCEPTION;
		}
		local_finish(lw);
	}
}
