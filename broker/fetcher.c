/*
 * fetcher.c - follower fetching and truncation (fetcher.h).
 */
#include "broker/fetcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/ratelog.h"
#include "broker/retention.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"
#include "storage/leader_epoch.h"

#define FETCH_VERSION 15
#define EPOCH_VERSION 4
/* Decoding memory of one response (structs, not records: those are read
 * in place from the connection's buffer). */
#define ARENA_MAX (16u << 20)

struct brk_fetcher {
	brk_fetchers *set;
	int32_t leader;
	brk_followed *parts;
	int32_t n, cap;
	bool in_flight;
	bool asked_epochs;   /* the request in flight is OffsetForLeaderEpoch */
	uint64_t timer;      /* the next attempt after a backoff */
	proto_arena arena;   /* the request built, then the response decoded */
	FetchRequest fetch;
	OffsetForLeaderEpochRequest epochs;
};

static void kick(brk_fetcher *f);

/* ---- partitions ---- */

static brk_partition *partition_of(const brk_followed *fp)
{
	return brk_topic_partition(brk_topic_find_by_id(&server.partitions, fp->topic_id),
				   fp->partition);
}

/* Whether fp is still what p follows: a follower of this leader at that
 * epoch, with a log. */
static bool current(const brk_fetcher *f, const brk_followed *fp, const brk_partition *p)
{
	return p && p->role == BRK_ROLE_FOLLOWER && p->leader == f->leader &&
	       p->leader_epoch == fp->leader_epoch && p->log;
}

static brk_fetcher *fetcher_of(brk_fetchers *fs, int32_t leader, bool make)
{
	for (int32_t i = 0; i < fs->n; i++)
		if (fs->v[i]->leader == leader)
			return fs->v[i];
	if (!make)
		return NULL;
	if (fs->n == fs->cap) {
		int32_t cap = fs->cap ? fs->cap * 2 : 4;
		brk_fetcher **v = realloc(fs->v, (size_t)cap * sizeof(*v));
		if (!v)
			return NULL;
		fs->v = v;
		fs->cap = cap;
	}
	brk_fetcher *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->set = fs;
	f->leader = leader;
	proto_arena_init(&f->arena, ARENA_MAX);
	fs->v[fs->n++] = f;
	return f;
}

static brk_followed *find(brk_fetcher *f, const uint8_t id[16], int32_t partition)
{
	for (int32_t i = 0; i < f->n; i++)
		if (f->parts[i].partition == partition && memcmp(f->parts[i].topic_id, id, 16) == 0)
			return &f->parts[i];
	return NULL;
}

static void drop(brk_fetcher *f, brk_followed *fp)
{
	*fp = f->parts[--f->n];
}

void brk_fetchers_update(brk_fetchers *fs, brk_partition *p)
{
	/* out of every fetcher first: its leader may have changed */
	for (int32_t i = 0; i < fs->n; i++) {
		brk_followed *fp = find(fs->v[i], p->topic->id, p->index);
		if (fp)
			drop(fs->v[i], fp);
	}
	if (fs->stopping || p->role != BRK_ROLE_FOLLOWER || p->leader < 0 || !p->log)
		return;
	brk_fetcher *f = fetcher_of(fs, p->leader, true);
	if (!f)
		return;
	if (f->n == f->cap) {
		int32_t cap = f->cap ? f->cap * 2 : 16;
		brk_followed *v = realloc(f->parts, (size_t)cap * sizeof(*v));
		if (!v)
			return;
		f->parts = v;
		f->cap = cap;
	}
	brk_followed *fp = &f->parts[f->n++];
	memset(fp, 0, sizeof(*fp));
	memcpy(fp->topic_id, p->topic->id, 16);
	fp->partition = p->index;
	fp->leader_epoch = p->leader_epoch;
	fp->truncating = true;
	kick(f);
}

static void on_role(void *arg, brk_partition *p)
{
	brk_fetchers_update(arg, p);
}

/* ---- truncation (KIP-101, KIP-279) ---- */

int64_t brk_fetcher_truncation_offset(const log_partition *lp, int32_t leader_epoch,
				      int64_t end_offset, bool *done)
{
	*done = true;
	int64_t leo = log_end_offset(lp);
	if (end_offset < 0)
		return log_high_watermark(lp); /* the leader knows no end: the old rule */
	if (leader_epoch < 0)
		return end_offset < leo ? end_offset : leo;
	int32_t mine;
	int64_t my_end;
	log_end_offset_for_epoch(lp, leader_epoch, &mine, &my_end);
	if (mine < 0 || my_end < 0)
		return end_offset < leo ? end_offset : leo; /* below every epoch known here */
	if (mine == leader_epoch)
		return end_offset < my_end ? end_offset : my_end;
	/* an epoch this log does not have: cut to the end of the largest one
	 * below it, then ask again */
	*done = false;
	return my_end < leo ? my_end : leo;
}

static void backoff(brk_fetcher *f, brk_followed *fp)
{
	fp->backoff_until = brk_mono_ms() + f->set->cfg.backoff_ms;
}

/* A new leader answers NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH until
 * it has applied the LeaderAndIsr that made it leader, usually a few ms
 * after this follower learned of it: retry soon a few times before waiting
 * the whole replica.fetch.backoff.ms. */
#define QUICK_RETRY_MS 50
#define QUICK_RETRIES 10

static void backoff_error(brk_fetcher *f, brk_followed *fp, int16_t error_code)
{
	if ((error_code == KERR_NOT_LEADER_OR_FOLLOWER || error_code == KERR_UNKNOWN_LEADER_EPOCH) &&
	    fp->quick_retries < QUICK_RETRIES && QUICK_RETRY_MS < f->set->cfg.backoff_ms) {
		fp->quick_retries++;
		fp->backoff_until = brk_mono_ms() + QUICK_RETRY_MS;
		return;
	}
	backoff(f, fp);
}

/* Cut p's log to offset (to an empty log starting there when offset is
 * below its start). Returns 0 or the storage error. */
static int truncate_log(brk_partition *p, int64_t offset)
{
	log_partition *lp = p->log;
	if (offset >= log_end_offset(lp))
		return 0;
	int64_t now = brk_wall_ms();
	int rc = offset < log_start_offset(lp) ? log_truncate_fully_and_start_at(lp, offset, now)
					       : log_truncate_to(lp, offset, now);
	if (rc == 0) {
		fprintf(stderr, "samsa: %s-%d: truncated to offset %lld to follow broker %d "
			"(leader epoch %d)\n", p->topic->name, (int)p->index, (long long)offset,
			(int)p->leader, (int)p->leader_epoch);
		brk_retention_schedule(&server.retention, p);
		brk_partitions_checkpoint(&server.partitions);
	}
	return rc;
}

/* ---- OffsetForLeaderEpoch ---- */

static int encode_epochs(proto_writer *w, int16_t version, void *arg)
{
	brk_fetcher *f = arg;
	return OffsetForLeaderEpochRequest_encode(w, version, &f->epochs);
}

static void on_epochs(brk_peer *peer, int err, proto_reader *body, void *arg)
{
	(void)peer;
	brk_fetcher *f = arg;
	f->in_flight = false;
	if (f->set->stopping)
		return;
	OffsetForLeaderEpochResponse resp;
	OffsetForLeaderEpochResponse_init(&resp);
	proto_arena_reset(&f->arena);
	if (err != BRK_PEER_OK ||
	    OffsetForLeaderEpochResponse_decode(body, &f->arena, EPOCH_VERSION, &resp) != 0) {
		for (int32_t i = 0; i < f->n; i++)
			if (f->parts[i].truncating)
				backoff(f, &f->parts[i]);
		kick(f);
		return;
	}
	for (int32_t i = 0; i < resp.topics_count; i++) {
		const OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *tr = &resp.topics[i];
		brk_topic *t = brk_topic_find(&server.partitions, tr->topic.ptr, tr->topic.len);
		for (int32_t k = 0; t && k < tr->partitions_count; k++) {
			const OffsetForLeaderEpochResponse_EpochEndOffset *eo = &tr->partitions[k];
			brk_followed *fp = find(f, t->id, eo->partition);
			brk_partition *p = fp ? partition_of(fp) : NULL;
			if (!fp || !fp->truncating || !current(f, fp, p))
				continue;
			if (eo->error_code != KERR_NONE) {
				backoff_error(f, fp, eo->error_code);
				continue;
			}
			fp->quick_retries = 0;
			bool done;
			int64_t to = brk_fetcher_truncation_offset(p->log, eo->leader_epoch,
								   eo->end_offset, &done);
			if (truncate_log(p, to) != 0) {
				static brk_ratelog rl = BRK_RATELOG_INIT;
				brk_ratelog_printf(&rl, "samsa: %s-%d: truncation to %lld failed\n",
						   p->topic->name, (int)p->index, (long long)to);
				backoff(f, fp);
				continue;
			}
			fp->truncating = !done;
		}
	}
	kick(f);
}

/* Ask for the end of this log's latest epoch of every truncating
 * partition (f->parts sorted by topic). Returns true when a request went. */
static bool send_epochs(brk_fetcher *f, brk_peer *peer, int64_t now)
{
	OffsetForLeaderEpochRequest_init(&f->epochs);
	f->epochs.replica_id = server.cfg.broker_id;
	OffsetForLeaderEpochRequest_OffsetForLeaderTopic *topics =
		proto_arena_alloc(&f->arena, (size_t)f->n * sizeof(*topics));
	OffsetForLeaderEpochRequest_OffsetForLeaderPartition *parts =
		proto_arena_alloc(&f->arena, (size_t)f->n * sizeof(*parts));
	if (!topics || !parts)
		return false;
	int32_t nt = 0, np = 0;
	for (int32_t i = 0; i < f->n; i++) {
		brk_followed *fp = &f->parts[i];
		brk_partition *p = partition_of(fp);
		if (!fp->truncating || fp->backoff_until > now || !current(f, fp, p))
			continue;
		int32_t latest = log_latest_epoch(p->log);
		if (latest < 0) {
			/* no epoch known here (an empty or pre-epoch log):
			 * the high watermark is all there is to go by */
			truncate_log(p, log_high_watermark(p->log));
			fp->truncating = false;
			continue;
		}
		/* f->parts is sorted by topic id: one entry per run */
		OffsetForLeaderEpochRequest_OffsetForLeaderTopic *ot = nt > 0 ? &topics[nt - 1] : NULL;
		if (!ot || strcmp(ot->topic.ptr, p->topic->name) != 0) {
			ot = &topics[nt++];
			OffsetForLeaderEpochRequest_OffsetForLeaderTopic_init(ot);
			ot->topic = proto_cstr(p->topic->name);
			ot->partitions = &parts[np];
			ot->partitions_count = 0;
		}
		OffsetForLeaderEpochRequest_OffsetForLeaderPartition *op = &parts[np++];
		OffsetForLeaderEpochRequest_OffsetForLeaderPartition_init(op);
		op->partition = p->index;
		op->current_leader_epoch = fp->leader_epoch;
		op->leader_epoch = latest;
		ot->partitions_count++;
	}
	if (np == 0)
		return false;
	f->epochs.topics = topics;
	f->epochs.topics_count = nt;
	if (brk_peer_send(peer, 23, EPOCH_VERSION, encode_epochs, f, on_epochs, f) != 0)
		return false;
	f->in_flight = true;
	f->asked_epochs = true;
	return true;
}

/* ---- Fetch ---- */

static int encode_fetch(proto_writer *w, int16_t version, void *arg)
{
	brk_fetcher *f = arg;
	return FetchRequest_encode(w, version, &f->fetch);
}

/* What a fetch of p brought (NONE): append, then the leader's high
 * watermark and log start offset. */
static void take(brk_fetcher *f, brk_followed *fp, brk_partition *p,
		 const FetchResponse_PartitionData *pd)
{
	log_partition *lp = p->log;
	if (pd->records.len > 0 && pd->records.ptr) {
		log_append_follower_info info;
		int rc = log_append_follower(lp, pd->records.ptr, (size_t)pd->records.len,
					     brk_wall_ms(), &info);
		if (rc == LOG_ERR_UNEXPECTED_OFFSET) {
			fp->truncating = true; /* our log and the leader's disagree */
			return;
		}
		if (rc != 0) {
			static brk_ratelog rl = BRK_RATELOG_INIT;
			brk_ratelog_printf(&rl, "samsa: %s-%d: appending fetched records failed: %s\n",
					   p->topic->name, (int)p->index,
					   rc < 0 && rc > -4096 ? strerror(-rc) : "corrupt data");
			backoff(f, fp);
			return;
		}
		if (info.bytes > 0)
			brk_partition_appended(&server.partitions, p, info.bytes, brk_wall_ms());
	}
	int64_t hw = pd->high_watermark < log_end_offset(lp) ? pd->high_watermark : log_end_offset(lp);
	if (hw >= 0)
		log_set_high_watermark(lp, hw);
	int64_t lso = pd->log_start_offset < log_high_watermark(lp) ? pd->log_start_offset
								    : log_high_watermark(lp);
	if (lso > log_start_offset(lp) && log_advance_start_offset(lp, lso) == 0)
		brk_retention_schedule(&server.retention, p);
}

static void on_fetch(brk_peer *peer, int err, proto_reader *body, void *arg)
{
	(void)peer;
	brk_fetcher *f = arg;
	f->in_flight = false;
	if (f->set->stopping)
		return;
	FetchResponse resp;
	FetchResponse_init(&resp);
	proto_arena_reset(&f->arena);
	if (err != BRK_PEER_OK || FetchResponse_decode(body, &f->arena, FETCH_VERSION, &resp) != 0 ||
	    resp.error_code != KERR_NONE) {
		for (int32_t i = 0; i < f->n; i++)
			backoff(f, &f->parts[i]);
		kick(f);
		return;
	}
	for (int32_t i = 0; i < resp.responses_count; i++) {
		const FetchResponse_FetchableTopicResponse *tr = &resp.responses[i];
		for (int32_t k = 0; k < tr->partitions_count; k++) {
			const FetchResponse_PartitionData *pd = &tr->partitions[k];
			brk_followed *fp = find(f, tr->topic_id.b, pd->partition_index);
			brk_partition *p = fp ? partition_of(fp) : NULL;
			if (!fp || fp->truncating || !current(f, fp, p))
				continue;
			switch (pd->error_code) {
			case KERR_NONE:
				fp->quick_retries = 0;
				take(f, fp, p, pd);
				break;
			case KERR_OFFSET_OUT_OF_RANGE:
				if (pd->log_start_offset > log_end_offset(p->log)) {
					/* behind the leader's log start: start there */
					if (log_truncate_fully_and_start_at(p->log, pd->log_start_offset,
									    brk_wall_ms()) != 0)
						backoff(f, fp);
					else
						brk_partitions_checkpoint(&server.partitions);
				} else {
					fp->truncating = true; /* past the leader's end */
				}
				break;
			default:
				backoff_error(f, fp, pd->error_code);
				break;
			}
		}
	}
	kick(f);
}

static bool send_fetch(brk_fetcher *f, brk_peer *peer, int64_t now)
{
	const brk_fetcher_config *cfg = &f->set->cfg;
	FetchRequest *m = &f->fetch;
	FetchRequest_init(m);
	m->replica_state.replica_id = server.cfg.broker_id;
	const ctl_broker *self = brk_cluster_broker(&server.cluster, server.cfg.broker_id);
	m->replica_state.replica_epoch = self ? self->epoch : -1;
	m->max_wait_ms = cfg->wait_max_ms;
	m->min_bytes = cfg->min_bytes;
	m->max_bytes = cfg->response_max_bytes;
	m->isolation_level = 0;
	m->session_id = 0;
	m->session_epoch = -1; /* no fetch session */
	FetchRequest_FetchTopic *topics = proto_arena_alloc(&f->arena, (size_t)f->n * sizeof(*topics));
	FetchRequest_FetchPartition *parts = proto_arena_alloc(&f->arena, (size_t)f->n * sizeof(*parts));
	if (!topics || !parts)
		return false;
	int32_t nt = 0, np = 0;
	/* one topic entry per run of partitions of one topic in f->parts */
	for (int32_t i = 0; i < f->n; i++) {
		brk_followed *fp = &f->parts[i];
		brk_partition *p = partition_of(fp);
		if (fp->truncating || fp->backoff_until > now || !current(f, fp, p))
			continue;
		FetchRequest_FetchTopic *ft = nt > 0 ? &topics[nt - 1] : NULL;
		if (!ft || memcmp(ft->topic_id.b, fp->topic_id, 16) != 0) {
			ft = &topics[nt++];
			FetchRequest_FetchTopic_init(ft);
			memcpy(ft->topic_id.b, fp->topic_id, 16);
			ft->partitions = &parts[np];
			ft->partitions_count = 0;
		}
		FetchRequest_FetchPartition *pp = &parts[np++];
		FetchRequest_FetchPartition_init(pp);
		pp->partition = fp->partition;
		pp->current_leader_epoch = fp->leader_epoch;
		pp->fetch_offset = log_end_offset(p->log);
		pp->last_fetched_epoch = -1;
		pp->log_start_offset = log_start_offset(p->log);
		pp->partition_max_bytes = cfg->max_bytes;
		ft->partitions_count++;
	}
	if (np == 0)
		return false;
	m->topics = topics;
	m->topics_count = nt;
	if (brk_peer_send(peer, 1, FETCH_VERSION, encode_fetch, f, on_fetch, f) != 0)
		return false;
	f->in_flight = true;
	f->asked_epochs = false;
	return true;
}

/* ---- scheduling ---- */

static int cmp_followed(const void *a, const void *b)
{
	const brk_followed *x = a, *y = b;
	int c = memcmp(x->topic_id, y->topic_id, 16);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static void on_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	brk_fetcher *f = arg;
	f->timer = 0;
	kick(f);
}

/* Send the next request when none is in flight: truncations first, then
 * the fetch; when every partition backs off, come back at the earliest. */
static void kick(brk_fetcher *f)
{
	if (f->in_flight || f->set->stopping || f->n == 0)
		return;
	int64_t now = brk_mono_ms();
	const ctl_broker *b = brk_cluster_broker(&server.cluster, f->leader);
	brk_peer *peer = b ? brk_peers_get(&server.peers, b, BRK_PEER_FETCH) : NULL;
	if (peer) {
		proto_arena_reset(&f->arena);
		qsort(f->parts, (size_t)f->n, sizeof(*f->parts), cmp_followed);
		if (send_epochs(f, peer, now) || send_fetch(f, peer, now))
			return;
	}
	if (f->timer || f->n == 0)
		return;
	int64_t next = now + f->set->cfg.backoff_ms;
	for (int32_t i = 0; i < f->n; i++)
		if (f->parts[i].backoff_until > now && f->parts[i].backoff_until < next)
			next = f->parts[i].backoff_until;
	f->timer = brk_timer_add(server.loop, next - now, on_timer, f);
}

/* ---- life cycle ---- */

int brk_fetchers_init(brk_fetchers *fs, const brk_fetcher_config *cfg)
{
	memset(fs, 0, sizeof(*fs));
	fs->cfg = *cfg;
	int rc = brk_partitions_observe_roles(&server.partitions, on_role, fs);
	if (rc)
		return rc;
	/* what this broker follows already (the controller's first events) */
	brk_topic *t;
	for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)); i++)
		for (int32_t k = 0; k < t->npartitions; k++)
			if (t->partitions[k]->role == BRK_ROLE_FOLLOWER)
				brk_fetchers_update(fs, t->partitions[k]);
	return 0;
}

void brk_fetchers_stop(brk_fetchers *fs)
{
	fs->stopping = true;
	for (int32_t i = 0; i < fs->n; i++)
		if (fs->v[i]->timer) {
			brk_timer_cancel(server.loop, fs->v[i]->timer);
			fs->v[i]->timer = 0;
		}
}

void brk_fetchers_free(brk_fetchers *fs)
{
	for (int32_t i = 0; i < fs->n; i++) {
		if (fs->v[i]->timer)
			brk_timer_cancel(server.loop, fs->v[i]->timer);
		proto_arena_free(&fs->v[i]->arena);
		free(fs->v[i]->parts);
		free(fs->v[i]);
	}
	free(fs->v);
	fs->v = NULL;
	fs->n = fs->cap = 0;
}
