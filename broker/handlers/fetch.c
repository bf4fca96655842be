/*
 * fetch.c - Fetch (API key 1), versions 4-18, for consumers: read record
 * batches from the partition logs and send them with sendfile(2) (the
 * response carries segment regions, not copies: DESIGN.md decision 4).
 *
 * Fetch sessions (KIP-227, v7+; broker/fetch_session.h, Kafka's
 * FetchManager.newContext and the FetchContexts):
 *   - epoch -1 (or v4-6): sessionless, session id 0; a session id given is
 *     closed (SessionlessFetchContext);
 *   - epoch 0: full fetch; a session id given is closed, and a new session
 *     holding every requested partition is created when the response is
 *     made (FullFetchContext), session id 0 when the cache has no room;
 *   - epoch > 0: incremental. Unknown id -> FETCH_SESSION_ID_NOT_FOUND,
 *     wrong epoch -> INVALID_FETCH_SESSION_EPOCH, a v13+ request on a name
 *     session or the reverse -> FETCH_SESSION_TOPIC_ID_ERROR (each with no
 *     partitions and session id 0: SessionErrorContext). Else the request's
 *     partitions are added or updated, forgotten topics removed (by id
 *     v13+), the epoch moves on, and every partition of the session is read
 *     (and watched by a delayed fetch); the response carries only those
 *     with records, a new high watermark, last stable or log start offset,
 *     or an error (IncrementalFetchContext.updateAndGenerateResponseData),
 *     answered ones moving to the end of the session's order. A session
 *     left with no partitions is closed and the fetch answered sessionless.
 *     When the session went away or moved on while the fetch waited in the
 *     purgatory, the answer is FETCH_SESSION_ID_NOT_FOUND or
 *     INVALID_FETCH_SESSION_EPOCH with no partitions.
 *
 * Per partition (Kafka's ReplicaManager.readFromLog): unknown topic or
 * partition errors, current leader epoch checks (KIP-320), fetch offset
 * outside [log start offset, log end offset] -> OFFSET_OUT_OF_RANGE, else
 * the batches from the fetch offset up to the high watermark
 * (READ_UNCOMMITTED) or the last stable offset (READ_COMMITTED, KIP-98:
 * below the first offset of the earliest open transaction; Kafka's
 * FetchIsolation.TXN_COMMITTED), at most PartitionMaxBytes and what is
 * left of MaxBytes, the first batch always whole (KIP-74). Every answered
 * partition carries its last stable offset (v4+), whatever the isolation,
 * as Kafka fills it.
 *
 * Aborted transactions (Kafka's LocalLog.read / addAbortedTransactions and
 * KafkaApis.handleFetchRequest): null for READ_UNCOMMITTED and for a
 * partition that failed; for READ_COMMITTED the transactions aborted by a
 * marker at or after the fetch offset that began below the end of the data
 * returned (log_aborted_txns with the offset after the last batch sent as
 * the upper bound; Kafka bounds it by the next offset index entry, which
 * can only add transactions the client ignores), an empty list when no
 * data is returned. The consumer drops the records of these producers from
 * their first offset up to the abort marker. The list lives in the request
 * arena; a delayed fetch that re-reads reuses each partition's array.
 *
 * Followers (ReplicaId >= 0 before v15, ReplicaState.ReplicaId from v15;
 * Kafka's ReplicaManager.fetchMessages for a follower): the same checks
 * (this broker must lead at the CurrentLeaderEpoch), but the read goes up
 * to the log end offset, not the high watermark; a fetch offset inside the
 * log is the follower's log end offset, recorded on the first read
 * (isr.h: the high watermark may move, the follower may join the ISR); a
 * broker that is not a replica of the partition gets NOT_LEADER_OR_FOLLOWER.
 *
 * Long poll: when fewer than MinBytes are ready, no partition failed and
 * MaxWaitMs > 0, the request waits in the purgatory on each partition it
 * reads, and is answered when enough bytes are there or at MaxWaitMs
 * (Kafka's DelayedFetch). A follower's fetch waits on appends (the log end
 * offset) and re-reads once the appends it was told of reach MinBytes; a
 * consumer's fetch waits on the high watermark (and role changes) and
 * re-reads on every move, since only bytes below the high watermark or the
 * last stable offset count and one move (a follower's fetch, a
 * transaction marker) can make many appended bytes readable at once.
 */
#include <string.h>

#include "broker/conn.h"
#include "broker/fetch_session.h"
#include "broker/isr.h"
#include "broker/partitions.h"
#include "broker/purgatory.h"
#include "broker/acl/check.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define READ_COMMITTED 1

/* A partition's aborted transactions array (request arena), kept across
 * the re-reads of a delayed fetch so they do not grow the arena. */
typedef struct abort_buf {
	FetchResponse_AbortedTransaction *v;
	int32_t cap;
} abort_buf;

typedef struct fetch_state {
	FetchRequest m;
	FetchResponse resp;   /* arrays allocated once, refilled on each read */
	int64_t first_bytes;  /* bytes found by the first read */
	proto_arena *arena;   /* the request's */
	abort_buf *aborts;    /* one per requested partition, in request order */
	int ctx;              /* CTX_* */
	int32_t replica;      /* the fetching follower's broker id, -1 for a consumer */
	bool followed;        /* its fetch offsets were recorded (first read) */
	int32_t session_id;   /* CTX_INCREMENTAL: the session */
	int32_t next_epoch;   /* CTX_INCREMENTAL: its epoch after this request */
	brk_request *req;     /* for the authorizer (principal, host) */
} fetch_state;

enum { CTX_SESSIONLESS, CTX_FULL, CTX_INCREMENTAL };

static void release_records(fetch_state *st)
{
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		for (int32_t j = 0; j < tr->partitions_count; j++) {
			proto_records *r = &tr->partitions[j].records;
			if (r->fd >= 0 && r->release && r->ref)
				r->release(r->ref);
			r->ref = NULL;
			r->release = NULL;
			r->fd = -1;
			r->ptr = NULL;
			r->len = 0;
		}
	}
}

static void empty_records(proto_records *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->len = 0;
}

/* Allocate the response skeleton for the request's topics/partitions. */
static int alloc_response(brk_request *req, fetch_state *st)
{
	FetchResponse_init(&st->resp);
	int32_t nt = st->m.topics_count > 0 ? st->m.topics_count : 0;
	int64_t nparts = 0;
	for (int32_t i = 0; i < nt; i++)
		nparts += st->m.topics[i].partitions_count > 0 ? st->m.topics[i].partitions_count : 0;
	st->arena = req->arena;
	st->aborts = proto_arena_alloc(req->arena, (size_t)(nparts ? nparts : 1) * sizeof(*st->aborts));
	if (!st->aborts)
		return -1;
	memset(st->aborts, 0, (size_t)(nparts ? nparts : 1) * sizeof(*st->aborts));
	st->resp.responses_count = nt;
	st->resp.responses = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) *
								  sizeof(*st->resp.responses));
	if (!st->resp.responses)
		return -1;
	for (int32_t i = 0; i < nt; i++) {
		const FetchRequest_FetchTopic *ft = &st->m.topics[i];
		FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		FetchResponse_FetchableTopicResponse_init(tr);
		tr->topic = ft->topic;
		tr->topic_id = ft->topic_id;
		int32_t np = ft->partitions_count > 0 ? ft->partitions_count : 0;
		tr->partitions_count = np;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) *
								       sizeof(*tr->partitions));
		if (!tr->partitions)
			return -1;
		for (int32_t j = 0; j < np; j++) {
			FetchResponse_PartitionData_init(&tr->partitions[j]);
			empty_records(&tr->partitions[j].records);
		}
	}
	return 0;
}

typedef struct abort_fill {
	abort_buf *buf;
	int32_t n;
} abort_fill;

static int add_aborted(void *arg, const log_aborted_txn *a)
{
	abort_fill *f = arg;
	if (f->n < f->buf->cap) {
		f->buf->v[f->n].producer_id = a->producer_id;
		f->buf->v[f->n].first_offset = a->first_offset;
	}
	if (f->n == INT32_MAX)
		return -1;
	f->n++;
	return 0;
}

/*
 * Fill pd's aborted transactions for a read_committed read of lp from
 * fetch_offset whose data ends before upper (exclusive). Counts first into
 * the array already there and grows it from the arena only when it is too
 * small. Returns 0, or -1 on an error (pd keeps an empty list then).
 */
static int collect_aborted(fetch_state *st, abort_buf *buf, log_partition *lp, int64_t fetch_offset,
			   int64_t upper, FetchResponse_PartitionData *pd)
{
	abort_fill f = { .buf = buf, .n = 0 };
	int rc = log_aborted_txns(lp, fetch_offset, upper, add_aborted, &f);
	if (rc >= 0 && f.n > buf->cap) {
		FetchResponse_AbortedTransaction *v =
			proto_arena_alloc(st->arena, (size_t)f.n * sizeof(*v));
		if (!v)
			return -1;
		buf->v = v;
		buf->cap = f.n;
		f.n = 0;
		rc = log_aborted_txns(lp, fetch_offset, upper, add_aborted, &f);
		if (f.n > buf->cap) /* cannot change between the two calls */
			f.n = buf->cap;
	}
	if (rc < 0)
		return -1;
	pd->aborted_transactions = buf->v;
	pd->aborted_transactions_count = f.n;
	return 0;
}

static brk_topic *lookup_topic(int16_t v, const FetchRequest_FetchTopic *ft)
{
	if (v >= 13)
		return brk_topic_find_by_id(&server.partitions, ft->topic_id.b);
	return brk_topic_find(&server.partitions, ft->topic.ptr, ft->topic.len);
}

/*
 * Read every partition into st->resp (records referencing segments).
 * *bytes gets the record bytes found; returns true when a partition failed.
 */
static bool read_all(int16_t v, fetch_state *st, int64_t *bytes)
{
	const FetchRequest *m = &st->m;
	int64_t left = m->max_bytes > 0 ? m->max_bytes : 0;
	bool min_one = true;
	bool failed = false;
	bool committed = m->isolation_level == READ_COMMITTED;
	int64_t k = 0; /* partition number in request order */
	*bytes = 0;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const FetchRequest_FetchTopic *ft = &m->topics[i];
		FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		brk_topic *t = lookup_topic(v, ft);
		/* KafkaApis.handleFetchRequest: a follower needs CLUSTER_ACTION
		 * on the cluster, a consumer READ on each topic (checked before
		 * whether the topic exists; an unknown topic id stays unknown). */
		bool denied = st->replica >= 0
				      ? !brk_acl_permits_cluster(st->req, CTL_ACL_OP_CLUSTER_ACTION)
				      : (t || v < 13) &&
						!brk_acl_permits_topic(st->req, t, ft->topic,
								       CTL_ACL_OP_READ);
		for (int32_t j = 0; j < tr->partitions_count; j++) {
			const FetchRequest_FetchPartition *fp = &ft->partitions[j];
			FetchResponse_PartitionData *pd = &tr->partitions[j];
			abort_buf *ab = &st->aborts[k++];
			FetchResponse_PartitionData_init(pd);
			empty_records(&pd->records);
			pd->partition_index = fp->partition;
			pd->high_watermark = -1;
			pd->last_stable_offset = -1;
			pd->log_start_offset = -1;
			pd->aborted_transactions_count = -1;
			pd->aborted_transactions = NULL;
			brk_partition *p = brk_topic_partition(t, fp->partition);
			if (denied) {
				pd->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				failed = true;
				continue;
			}
			if (!t) {
				pd->error_code = v >= 13 ? KERR_UNKNOWN_TOPIC_ID
							 : KERR_UNKNOWN_TOPIC_OR_PARTITION;
				failed = true;
				continue;
			}
			if (!p) {
				pd->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				failed = true;
				continue;
			}
			pd->error_code = brk_partition_leader_error(p, fp->current_leader_epoch);
			/* A follower's fetch offset is its log end offset: recorded
			 * only when it is inside the leader's log (Kafka reads first
			 * and records after, so an out-of-range fetch records
			 * nothing). */
			if (pd->error_code == KERR_NONE && st->replica >= 0 && !st->followed &&
			    fp->fetch_offset >= log_start_offset(p->log) &&
			    fp->fetch_offset <= log_end_offset(p->log) &&
			    !brk_replica_fetched(p, st->replica, fp->fetch_offset, fp->log_start_offset))
				pd->error_code = KERR_NOT_LEADER_OR_FOLLOWER; /* not one of its replicas */
			if (pd->error_code != KERR_NONE) {
				failed = true;
				continue;
			}
			log_partition *lp = p->log;
			int64_t hw = log_high_watermark(lp);
			int64_t lso = log_last_stable_offset(lp);
			pd->high_watermark = hw;
			pd->last_stable_offset = lso;
			pd->log_start_offset = log_start_offset(lp);
			if (fp->fetch_offset < log_start_offset(lp) || fp->fetch_offset > log_end_offset(lp)) {
				pd->error_code = KERR_OFFSET_OUT_OF_RANGE;
				failed = true;
				continue;
			}
			if (committed) {
				/* empty until data is returned (Kafka: an empty
				 * list, not null, for TXN_COMMITTED) */
				pd->aborted_transactions_count = 0;
				pd->aborted_transactions = NULL;
			}
			/* a follower reads up to the log end, a consumer up to
			 * the high watermark or last stable offset */
			int64_t max_offset = st->replica >= 0 ? log_end_offset(lp) : committed ? lso : hw;
			int64_t want = fp->partition_max_bytes < left ? fp->partition_max_bytes : left;
			if (want < 0)
				want = 0;
			if (fp->fetch_offset >= max_offset || (want == 0 && !min_one))
				continue;
			log_read_result rr;
			int rc = log_read(lp, fp->fetch_offset, max_offset, (int32_t)want, min_one, &rr);
			if (rc == LOG_ERR_OFFSET_OUT_OF_RANGE) {
				pd->error_code = KERR_OFFSET_OUT_OF_RANGE;
				failed = true;
				continue;
			}
			if (rc) {
				pd->error_code = KERR_KAFKA_STORAGE_ERROR;
				failed = true;
				continue;
			}
			if (rr.len > 0 && committed &&
			    collect_aborted(st, ab, lp, fp->fetch_offset, rr.next_offset, pd) != 0) {
				/* The .txnindex cannot be read: the records without
				 * their aborted list would pass aborted data off as
				 * committed. */
				log_segment_release(rr.segment);
				pd->error_code = KERR_KAFKA_STORAGE_ERROR;
				pd->aborted_transactions_count = -1;
				pd->aborted_transactions = NULL;
				failed = true;
				continue;
			}
			if (rr.len > 0) {
				pd->records.ptr = NULL;
				pd->records.fd = rr.fd;
				pd->records.file_pos = rr.file_pos;
				pd->records.len = rr.len;
				pd->records.ref = rr.segment;
				pd->records.release = log_segment_release;
				*bytes += rr.len;
				left -= rr.len;
				if (left < 0)
					left = 0;
				min_one = false;
			} else if (rr.segment) {
				log_segment_release(rr.segment);
			}
		}
	}
	st->followed = true;
	return failed;
}

/* ---- fetch sessions ---- */

/* The broker's fetch session cache; NULL when it could not be made at
 * start-up (then every fetch is answered without a session). */
static fs_cache *session_cache(void)
{
	return server.fetch_sessions;
}

static bool is_follower(const FetchRequest *m, int16_t v)
{
	return (v >= 15 ? m->replica_state.replica_id : m->replica_id) >= 0;
}

static fs_req_partition req_params(const FetchRequest_FetchPartition *fp)
{
	fs_req_partition rq = {
		.max_bytes = fp->partition_max_bytes,
		.fetch_offset = fp->fetch_offset,
		.log_start_offset = fp->log_start_offset,
		.leader_epoch = fp->current_leader_epoch,
		.last_fetched_epoch = fp->last_fetched_epoch,
	};
	return rq;
}

static bool same_topic(const fs_session *s, const fs_partition *a, const fs_partition *b)
{
	if (s->uses_topic_ids)
		return memcmp(a->topic_id, b->topic_id, 16) == 0;
	return a->topic_len == b->topic_len &&
	       (a->topic_len == 0 || memcmp(a->topic, b->topic, (size_t)a->topic_len) == 0);
}

/*
 * Replace st->m.topics with every partition of session s, in the session's
 * order, consecutive partitions of one topic in one entry (as Kafka's
 * FetchResponse.of groups them). Names are copied to the arena: the session
 * may go away while the fetch waits. Returns 0 or -1 (arena full).
 */
static int topics_from_session(brk_request *req, fetch_state *st, const fs_session *s)
{
	int32_t nt = 0;
	for (int32_t i = 0; i < s->n; i++)
		if (i == 0 || !same_topic(s, &s->parts[i - 1], &s->parts[i]))
			nt++;
	FetchRequest_FetchTopic *topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*topics));
	FetchRequest_FetchPartition *parts =
		proto_arena_alloc(req->arena, (size_t)(s->n ? s->n : 1) * sizeof(*parts));
	if (!topics || !parts)
		return -1;
	int32_t t = -1;
	for (int32_t i = 0; i < s->n; i++) {
		const fs_partition *cp = &s->parts[i];
		if (i == 0 || !same_topic(s, &s->parts[i - 1], cp)) {
			t++;
			FetchRequest_FetchTopic_init(&topics[t]);
			memcpy(topics[t].topic_id.b, cp->topic_id, 16);
			if (!s->uses_topic_ids) {
				char *name = proto_arena_alloc(req->arena, (size_t)cp->topic_len + 1);
				if (!name)
					return -1;
				memcpy(name, cp->topic, (size_t)cp->topic_len + 1);
				topics[t].topic.ptr = name;
				topics[t].topic.len = cp->topic_len;
			}
			topics[t].partitions = &parts[i];
			topics[t].partitions_count = 0;
		}
		FetchRequest_FetchPartition *fp = &parts[i];
		FetchRequest_FetchPartition_init(fp);
		fp->partition = cp->partition;
		fp->current_leader_epoch = cp->leader_epoch;
		fp->fetch_offset = cp->fetch_offset;
		fp->last_fetched_epoch = cp->last_fetched_epoch;
		fp->log_start_offset = cp->fetcher_log_start_offset;
		fp->partition_max_bytes = cp->max_bytes;
		topics[t].partitions_count++;
	}
	st->m.topics = topics;
	st->m.topics_count = nt;
	return 0;
}

/*
 * Kafka's FetchManager.newContext: pick the context of the request, close
 * the session a full fetch names, apply an incremental request to its
 * session. Returns KERR_NONE or the top-level session error; -1 when the
 * arena is full.
 */
static int open_context(brk_request *req, fetch_state *st)
{
	int16_t v = req->api_version;
	FetchRequest *m = &st->m;
	fs_cache *c = v >= 7 ? session_cache() : NULL;
	st->ctx = CTX_SESSIONLESS;
	if (!c)
		return KERR_NONE;
	if (m->session_epoch == FS_INITIAL_EPOCH || m->session_epoch == FS_FINAL_EPOCH) {
		if (m->session_id != FS_INVALID_SESSION_ID) {
			fs_session *old = fs_cache_get(c, m->session_id);
			if (old)
				fs_cache_remove(c, old);
		}
		st->ctx = m->session_epoch == FS_INITIAL_EPOCH ? CTX_FULL : CTX_SESSIONLESS;
		return KERR_NONE;
	}
	fs_session *s = fs_cache_get(c, m->session_id);
	if (!s)
		return KERR_FETCH_SESSION_ID_NOT_FOUND;
	if (s->epoch != m->session_epoch)
		return KERR_INVALID_FETCH_SESSION_EPOCH;
	if (s->uses_topic_ids != (v >= 13))
		return KERR_FETCH_SESSION_TOPIC_ID_ERROR;
	for (int32_t i = 0; i < m->topics_count; i++) {
		const FetchRequest_FetchTopic *ft = &m->topics[i];
		for (int32_t j = 0; j < ft->partitions_count; j++) {
			fs_req_partition rq = req_params(&ft->partitions[j]);
			if (!fs_session_upsert(s, ft->topic.ptr, ft->topic.len, ft->topic_id.b,
					       ft->partitions[j].partition, &rq)) {
				/* past this broker's bound on a session: drop it,
				 * the client starts again with a full fetch */
				fs_cache_remove(c, s);
				return KERR_FETCH_SESSION_ID_NOT_FOUND;
			}
		}
	}
	for (int32_t i = 0; i < m->forgotten_topics_data_count; i++) {
		const FetchRequest_ForgottenTopic *ft = &m->forgotten_topics_data[i];
		for (int32_t j = 0; j < ft->partitions_count; j++)
			fs_session_forget(s, ft->topic.ptr, ft->topic.len, ft->topic_id.b, ft->partitions[j]);
	}
	if (s->n == 0) {
		/* nothing left: close it, answer the (empty) request sessionless */
		fs_cache_remove(c, s);
		return KERR_NONE;
	}
	fs_cache_touch(c, s, brk_mono_ms());
	s->epoch = fs_next_epoch(s->epoch);
	st->ctx = CTX_INCREMENTAL;
	st->session_id = s->id;
	st->next_epoch = s->epoch;
	return topics_from_session(req, st, s) == 0 ? KERR_NONE : -1;
}

static fs_resp_partition resp_values(const FetchResponse_PartitionData *pd)
{
	fs_resp_partition r = {
		.error_code = pd->error_code,
		.high_watermark = pd->high_watermark,
		.last_stable_offset = pd->last_stable_offset,
		.log_start_offset = pd->log_start_offset,
		.records_bytes = pd->records.len,
	};
	return r;
}

/* Drop every partition from the response (a session error at the end). */
static void clear_partitions(fetch_state *st, int16_t error, int32_t session_id)
{
	release_records(st);
	st->resp.responses_count = 0;
	st->resp.error_code = error;
	st->resp.session_id = session_id;
}

/*
 * The session side of the response, right before it is encoded: create the
 * session of a full fetch (FullFetchContext), or keep only the partitions
 * an incremental response must carry (IncrementalFetchContext).
 */
static void session_respond(brk_request *req, fetch_state *st)
{
	int16_t v = req->api_version;
	st->resp.session_id = FS_INVALID_SESSION_ID;
	if (st->ctx == CTX_SESSIONLESS)
		return;
	fs_cache *c = session_cache();
	if (!c)
		return;
	if (st->ctx == CTX_FULL) {
		int32_t n = 0;
		for (int32_t i = 0; i < st->m.topics_count; i++)
			n += st->m.topics[i].partitions_count;
		fs_session *s = fs_cache_create(c, brk_mono_ms(), is_follower(&st->m, v), n, v >= 13);
		if (!s)
			return;
		for (int32_t i = 0; i < st->m.topics_count; i++) {
			const FetchRequest_FetchTopic *ft = &st->m.topics[i];
			for (int32_t j = 0; j < ft->partitions_count; j++) {
				fs_req_partition rq = req_params(&ft->partitions[j]);
				fs_partition *cp = fs_session_upsert(s, ft->topic.ptr, ft->topic.len,
								     ft->topic_id.b,
								     ft->partitions[j].partition, &rq);
				if (!cp) {
					fs_cache_remove(c, s);
					return;
				}
				fs_resp_partition r = resp_values(&st->resp.responses[i].partitions[j]);
				fs_partition_must_respond(cp, &r, true);
			}
		}
		fs_cache_touch(c, s, brk_mono_ms());
		st->resp.session_id = s->id;
		return;
	}
	/* CTX_INCREMENTAL */
	fs_session *s = fs_cache_get(c, st->session_id);
	if (!s) {
		clear_partitions(st, KERR_FETCH_SESSION_ID_NOT_FOUND, FS_INVALID_SESSION_ID);
		return;
	}
	if (s->epoch != st->next_epoch) {
		clear_partitions(st, KERR_INVALID_FETCH_SESSION_EPOCH, s->id);
		return;
	}
	bool *answered = proto_arena_alloc(st->arena, (size_t)(s->n ? s->n : 1) * sizeof(bool));
	if (answered)
		memset(answered, 0, (size_t)(s->n ? s->n : 1) * sizeof(bool));
	int32_t nt = 0;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const FetchRequest_FetchTopic *ft = &st->m.topics[i];
		FetchResponse_FetchableTopicResponse tr = st->resp.responses[i];
		int32_t np = 0;
		for (int32_t j = 0; j < tr.partitions_count; j++) {
			FetchResponse_PartitionData *pd = &tr.partitions[j];
			fs_partition *cp = fs_session_find(s, ft->topic.ptr, ft->topic.len, ft->topic_id.b,
							   pd->partition_index);
			fs_resp_partition r = resp_values(pd);
			if (cp && !fs_partition_must_respond(cp, &r, true))
				continue; /* unchanged: left out (it holds no records) */
			if (cp && answered)
				answered[cp - s->parts] = true;
			if (np != j)
				tr.partitions[np] = *pd;
			np++;
		}
		tr.partitions_count = np;
		if (np > 0)
			st->resp.responses[nt++] = tr;
	}
	st->resp.responses_count = nt;
	if (answered)
		fs_session_move_answered_last(s, answered);
	st->resp.session_id = s->id;
}

/*
 * Encode st->resp into req->out.
 *
 * Segment reference ownership: read_all leaves st holding one reference per
 * partition with records. The generated encoder stops writing at the first
 * failure (w->err, e.g. a failed growth), so partitions after it never reach
 * the writer: handing st's references to the writer would leak exactly those
 * (their segment fds and disk space pinned for the broker's lifetime).
 * Instead ownership is unconditional on both sides:
 *   - the records are encoded without a release callback, so the writer only
 *     borrows the regions it actually receives and never frees st's refs;
 *   - after a successful encode each file chunk the writer took gets its own
 *     reference (log_segment_keep) and the release callback, so the writer
 *     owns exactly what it will send and drops it on reset/free, and the
 *     pin/unpin callbacks: the segment's descriptor is taken (opened again
 *     if the open-file cache closed it) when its bytes go out, so a
 *     response of thousands of partitions holds no descriptor while it
 *     waits;
 *   - st's references are always released here, whatever happened.
 * One atomic increment and one decrement per partition sent. On return st
 * holds no references and its records are empty.
 */
/* The bytes a response of st holds, near enough for the fetch quota (the
 * records dominate; Kafka counts the exact encoded size). */
static int64_t response_size(const fetch_state *st)
{
	int64_t n = 16;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		const FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		n += 24 + (tr->topic.len > 0 ? tr->topic.len : 0);
		for (int32_t j = 0; j < tr->partitions_count; j++)
			n += 48 + tr->partitions[j].records.len;
	}
	return n;
}

/*
 * A consumer's quotas (Kafka's handleFetchRequest): the handler time goes
 * to the request quota, the response's bytes to the fetch quota; when
 * either is violated the bytes are taken back and the answer is empty,
 * carrying the throttle time, and the connection is muted for it after
 * the response (KIP-219). Returns the throttle time (0: answer normally).
 */
static int32_t fetch_throttle(brk_request *req, fetch_state *st)
{
	if (st->replica >= 0)
		return 0;
	int32_t rq = brk_quota_request_throttle(req);
	if (!brk_quotas_enabled(&server.quotas, BRK_QUOTA_FETCH))
		return rq;
	const char *principal = brk_conn_principal(req->conn);
	int64_t now = brk_mono_ms();
	double size = (double)response_size(st);
	int32_t ms = brk_quota_record(&server.quotas, BRK_QUOTA_FETCH, principal, req->client_id,
				      size, now);
	if (ms <= 0 && rq <= 0)
		return 0;
	brk_quota_unrecord(&server.quotas, BRK_QUOTA_FETCH, principal, req->client_id, size, now);
	if (ms > 0)
		brk_conn_throttle(req->conn, ms);
	return ms > rq ? ms : rq;
}

static int respond(brk_request *req, fetch_state *st)
{
	int32_t throttle = fetch_throttle(req, st);
	if (throttle > 0) {
		/* Kafka's getThrottledResponse: no partitions, no new session */
		release_records(st);
		st->resp.responses_count = 0;
		st->resp.error_code = KERR_NONE;
		st->resp.throttle_time_ms = throttle;
		st->resp.session_id = st->ctx == CTX_INCREMENTAL ? st->session_id
								 : FS_INVALID_SESSION_ID;
		return FetchResponse_encode(req->out, req->api_version, &st->resp);
	}
	session_respond(req, st);
	proto_writer *w = req->out;
	int first_chunk = w->nchunks;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		for (int32_t j = 0; j < tr->partitions_count; j++)
			tr->partitions[j].records.release = NULL; /* borrowed by the writer */
	}
	int rc = FetchResponse_encode(w, req->api_version, &st->resp);
	if (rc == 0) {
		for (int k = first_chunk; k < w->nchunks; k++) {
			proto_file_chunk *c = &w->chunks[k];
			if (c->ref) {
				log_segment_keep(c->ref);
				c->release = log_segment_release;
				/* the descriptor only while the chunk is sent: the
				 * open-file cache may close it while it waits */
				c->pin = log_segment_pin;
				c->unpin = log_segment_unpin;
			}
		}
	}
	/* st's own references, now or never released */
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		FetchResponse_FetchableTopicResponse *tr = &st->resp.responses[i];
		for (int32_t j = 0; j < tr->partitions_count; j++)
			tr->partitions[j].records.release = log_segment_release;
	}
	release_records(st);
	if (rc != 0) {
		/* Only a failed allocation gets here. The writer holds no
		 * reference of this response (its chunks were borrowed):
		 * answer with a top-level error instead. */
		proto_writer_reset(w);
		FetchResponse err;
		FetchResponse_init(&err);
		err.error_code = KERR_UNKNOWN_SERVER_ERROR;
		rc = FetchResponse_encode(w, req->api_version, &err);
	}
	return rc;
}

static void on_delayed(brk_delayed *d, bool expired)
{
	fetch_state *st = d->arg;
	brk_request *req = d->req;
	/* A follower's fetch is woken by appends and re-reads once they
	 * brought MinBytes. A consumer's fetch is woken when the high
	 * watermark moves (or the partition's role changes) and re-reads:
	 * what counts is the bytes below the high watermark or last stable
	 * offset, which one move can bring many of at once (Kafka's
	 * DelayedFetch.tryComplete). */
	if (!expired && !d->detached && st->replica >= 0 && st->first_bytes + d->bytes < st->m.min_bytes)
		return;
	int64_t bytes;
	bool failed = read_all(req->api_version, st, &bytes);
	if (!expired && !failed && !d->detached && bytes < st->m.min_bytes) {
		release_records(st);
		/* Appends went to batches this fetch cannot take yet: count
		 * from what is actually readable now. */
		st->first_bytes = bytes;
		d->bytes = 0;
		return;
	}
	brk_delayed_finish(d);
	respond(req, st);
	brk_request_complete(req, 0);
}

int brk_handle_fetch(brk_request *req)
{
	int16_t v = req->api_version;
	fetch_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	FetchRequest_init(&st->m);
	if (FetchRequest_decode(&req->body, req->arena, v, &st->m) != 0)
		return BRK_CLOSE;
	FetchRequest *m = &st->m;
	st->req = req;
	st->replica = is_follower(m, v) ? (v >= 15 ? m->replica_state.replica_id : m->replica_id) : -1;
	if (st->replica < 0 && brk_quotas_enabled(&server.quotas, BRK_QUOTA_FETCH)) {
		/* Kafka: a consumer's fetch holds at most what its quota allows
		 * over the window (getMaxValueInQuotaWindow) */
		int32_t cap = brk_quota_max_window_value(&server.quotas, BRK_QUOTA_FETCH,
							 brk_conn_principal(req->conn),
							 req->client_id);
		if (v >= 3 && m->max_bytes > cap)
			m->max_bytes = cap;
		if (m->min_bytes > m->max_bytes)
			m->min_bytes = m->max_bytes;
	}

	int serr = open_context(req, st);
	if (serr < 0)
		return BRK_CLOSE;
	if (serr != KERR_NONE) {
		/* SessionErrorContext: no partitions, session id 0 */
		FetchResponse_init(&st->resp);
		st->resp.error_code = (int16_t)serr;
		st->resp.session_id = FS_INVALID_SESSION_ID;
		return FetchResponse_encode(req->out, v, &st->resp) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	if (alloc_response(req, st))
		return BRK_CLOSE;
	st->resp.error_code = KERR_NONE;
	st->resp.session_id = FS_INVALID_SESSION_ID;

	int64_t bytes;
	bool failed = read_all(v, st, &bytes);
	int32_t nparts = 0;
	for (int32_t i = 0; i < st->resp.responses_count; i++)
		nparts += st->resp.responses[i].partitions_count;
	if (failed || m->max_wait_ms <= 0 || bytes >= m->min_bytes || nparts == 0)
		return respond(req, st) == 0 ? BRK_RESPOND : BRK_CLOSE;

	/* Wait in the purgatory on every partition read. */
	release_records(st);
	brk_delayed *d = brk_delayed_new(req, nparts);
	if (!d) {
		read_all(v, st, &bytes);
		return respond(req, st) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	int k = 0;
	for (int32_t i = 0; i < st->resp.responses_count; i++) {
		brk_topic *t = lookup_topic(v, &m->topics[i]);
		for (int32_t j = 0; j < m->topics[i].partitions_count; j++) {
			brk_partition *p = brk_topic_partition(t, m->topics[i].partitions[j].partition);
			if (p)
				brk_delayed_watch(d, k++, st->replica >= 0 ? &p->log_waiters
									   : &p->hw_waiters);
		}
	}
	st->first_bytes = bytes;
	if (brk_delayed_start(d, m->max_wait_ms, on_delayed, st) != 0) {
		/* No timer to end the wait: answer with what is there now. */
		read_all(v, st, &bytes);
		return respond(req, st) == 0 ? BRK_RESPOND : BRK_CLOSE;
	}
	return BRK_DELAYED;
}
