/*
 * produce.c - Produce (API key 0), versions 3-13: validate each partition's
 * record batch and append it to the partition log as it came (only the base
 * offset and leader epoch are patched in place, plus the timestamp for
 * LogAppendTime topics: DESIGN.md decision 4).
 *
 * Rules, in Kafka's order (KafkaApis.handleProduceRequest,
 * ProduceRequest.validateRecords, Partition.appendRecordsToLeader,
 * UnifiedLog.append):
 *  - acks not in {0, 1, -1}: INVALID_REQUIRED_ACKS for every partition;
 *  - a first batch with the transactional attribute in a request without a
 *    transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
 *    partition (KafkaApis.handleProduceRequest with
 *    RequestUtils.hasTransactionalRecords: Kafka authorizes the
 *    transactional id, and a null one never passes);
 *  - topic unknown: UNKNOWN_TOPIC_OR_PARTITION (v13, by id: UNKNOWN_TOPIC_ID);
 *    Produce never creates topics;
 *  - a request with a transactional id (KIP-98): its transactional batches
 *    go through the producer state like any idempotent batch and, the
 *    first one of the producer in this partition, start its transaction
 *    there (the last stable offset stays at its first offset until the
 *    coordinator's marker, WriteTxnMarkers). Non-transactional batches in
 *    such a request are appended as usual, as Kafka does (it only looks at
 *    the transactional ones). A plain batch from a producer whose
 *    transaction is open here: INVALID_TXN_STATE;
 *  - a topic of the coordinators (__consumer_offsets,
 *    __transaction_state): INVALID_TOPIC_EXCEPTION unless the client id is
 *    "__admin_client" (ReplicaManager.appendToLocalLog, internalTopicsAllowed);
 *  - KIP-890 verification (txn/verify.h), after the batch checks below:
 *    the first transactional batch (producer id >= 0) of a producer in a
 *    partition must be in its ongoing transaction (v12+: is added to it):
 *    INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE
 *    (v11: TRANSACTION_ABORTABLE), NOT_ENOUGH_REPLICAS when the
 *    coordinator cannot answer now (CONCURRENT_TRANSACTIONS), as
 *    ReplicaManager.handleProduceAppend; a transactional batch with
 *    producer id -1 is a plain batch (Kafka checks batch.hasProducerId);
 *  - acks=-1 and min.insync.replicas above the ISR size: NOT_ENOUGH_REPLICAS
 *    (nothing appended);
 *  - the records: exactly one v2 batch (INVALID_RECORD), then
 *    proto_batches_validate (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
 *    INVALID_TIMESTAMP, ...) with error_message (v8+);
 *  - a batch larger than segment.bytes: RECORD_LIST_TOO_LARGE;
 *  - idempotent producer (producer id >= 0; the partition's producer state,
 *    log_append_checked): an epoch older than the partition knows:
 *    INVALID_PRODUCER_EPOCH (a transactional producer fenced by a newer
 *    epoch included); a sequence gap, or a new epoch not starting at
 *    0: OUT_OF_ORDER_SEQUENCE_NUMBER; a retry of one of the producer's last
 *    5 batches: nothing is written and the answer is NONE with the original
 *    batch's base offset, its max timestamp as log_append_time_ms and the
 *    log start offset, as Kafka's UnifiedLog.append does for a duplicate;
 *  - an I/O error on append (a full disk included): KAFKA_STORAGE_ERROR,
 *    nothing written, the partition stays online (see below).
 * acks=0 gets no response; if any partition failed the connection is closed
 * instead, as Kafka does, so the producer notices and refreshes metadata.
 * acks=-1 (all): the answer waits in the purgatory until the high watermark
 * of every appended partition passes its batch (Kafka's DelayedProduce),
 * woken when it moves: then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when
 * the ISR shrank below min.insync.replicas meanwhile; NOT_LEADER_OR_FOLLOWER
 * when this broker stopped leading the partition first; REQUEST_TIMED_OUT
 * for those still behind at the request's TimeoutMs. On one node (or an
 * ISR of this broker alone) the high watermark moves with the append and
 * nothing waits.
 */
#include <stdio.h>
#include <string.h>

#include "broker/conn.h"
#include "broker/partitions.h"
#include "broker/quota/quota.h"
#include "broker/ratelog.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/verify.h"
#include "controller/ctl.h"
#include "protocol/batch.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Decompression scratch for validation (server.produce_scratch), reused
 * across requests (loop thread only). Bounded so a compression bomb cannot
 * take the memory: a batch whose records decompress to more than
 * BRK_PRODUCE_SCRATCH_MAX bytes (server.h) is refused with
 * MESSAGE_TOO_LARGE. Kafka streams the records through a decompressing
 * reader and sets no such cap, but a producer's batch is at most
 * message.max.bytes compressed (1 MiB by default; the producer's batch.size
 * defaults to 16 KiB), so 64 MiB means a ratio above 64:1 at the default
 * limit, which real record data does not reach (highly repetitive data at a
 * raised max.message.bytes could). After each validation
 * a scratch above PRODUCE_SCRATCH_KEEP is released (proto_scratch_trim), so
 * one large or hostile batch does not keep the process at its peak size;
 * ordinary batches stay below it and reuse the buffer. */
#define PRODUCE_SCRATCH_KEEP (8u << 20)

static bool first_batch_transactional(const proto_records *r)
{
	proto_batch_info b;
	if (r->len <= 0 || !r->ptr || proto_batch_header(r->ptr, (size_t)r->len, &b) != 0)
		return false;
	return (b.attributes & PROTO_ATTR_TRANSACTIONAL) != 0;
}

static void partition_error(ProduceResponse_PartitionProduceResponse *pr, int err, const char *msg)
{
	pr->error_code = (int16_t)err;
	pr->base_offset = -1;
	pr->log_append_time_ms = -1;
	pr->log_start_offset = -1;
	if (msg)
		pr->error_message = proto_cstr(msg);
}

/* KIP-890 partition verification of a transactional batch (txn/verify.h),
 * with ReplicaManager.handleProduceAppend's translation of the
 * coordinator's retriable errors; *msg gets Kafka's message, if any. */
static int16_t verify_txn_batch(brk_request *req, const ProduceRequest *m, brk_partition *p,
				const proto_records *r, const char **msg)
{
	proto_batch_info b;
	*msg = NULL;
	if (m->transactional_id.len < 0 || r->len <= 0 ||
	    proto_batch_header(r->ptr, (size_t)r->len, &b) != 0 ||
	    !(b.attributes & PROTO_ATTR_TRANSACTIONAL) || b.producer_id < 0)
		return KERR_NONE; /* producer id -1: a plain batch, as Kafka's hasProducerId */
	txn_write_op op = txn_write_op_for_produce(req->api_version);
	int16_t err = txn_verify_write(m->transactional_id, b.producer_id, b.producer_epoch, p,
				       op, req->now_ms);
	if (err == KERR_INVALID_TXN_STATE)
		*msg = "Partition was not added to the transaction";
	if (err == KERR_COORDINATOR_NOT_AVAILABLE || err == KERR_NOT_COORDINATOR ||
	    err == KERR_COORDINATOR_LOAD_IN_PROGRESS ||
	    (err == KERR_CONCURRENT_TRANSACTIONS && op != TXN_WRITE_ADD_PARTITION)) {
		*msg = "Unable to verify the partition has been added to the transaction";
		err = KERR_NOT_ENOUGH_REPLICAS;
	}
	return err;
}

static void produce_one(brk_request *req, const ProduceRequest *m, brk_topic *t, bool internal,
			brk_partition *p, const ProduceRequest_PartitionProduceData *pd,
			ProduceResponse_PartitionProduceResponse *pr, int64_t *required)
{
	*required = -1;
	int16_t v = req->api_version;
	/* ReplicaManager.appendToLocalLog: internalTopicsAllowed only for
	 * Kafka's own admin client id; checked by name before the topic is
	 * looked up (an internal topic not made yet is refused the same way) */
	if (internal &&
	    !(req->client_id.len == 14 && memcmp(req->client_id.ptr, "__admin_client", 14) == 0)) {
		partition_error(pr, KERR_INVALID_TOPIC_EXCEPTION, "Cannot append to internal topic");
		return;
	}
	if (!t) {
		partition_error(pr, v >= 13 ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION, NULL);
		return;
	}
	if (!p) {
		partition_error(pr, KERR_UNKNOWN_TOPIC_OR_PARTITION, NULL);
		return;
	}
	int16_t lerr = brk_partition_leader_error(p, -1);
	if (lerr != KERR_NONE) {
		partition_error(pr, lerr, lerr == KERR_KAFKA_STORAGE_ERROR
					  ? "The partition's log is offline" : NULL);
		return;
	}
	if (m->acks == -1 && t->cfg.min_insync_replicas > p->nisr) {
		partition_error(pr, KERR_NOT_ENOUGH_REPLICAS,
				"The size of the current ISR is below min.insync.replicas");
		return;
	}
	proto_batch_rules rules = {
		.max_batch_bytes = t->cfg.max_message_bytes,
		.now_ms = req->now_ms,
		.timestamp_before_max_ms = t->cfg.timestamp_before_max_ms,
		.timestamp_after_max_ms = t->cfg.timestamp_after_max_ms,
		.log_append_time = t->cfg.log_append_time,
		.allow_zstd = v >= 7,
		.compacted = t->cfg.compact,
	};
	int nbatches = 0;
	int64_t nrecords = 0;
	const char *reason = NULL;
	size_t len = pd->records.len > 0 ? (size_t)pd->records.len : 0;
	int err = proto_batches_validate(pd->records.ptr, len, &rules, &server.produce_scratch,
					 &nbatches, &nrecords, &reason);
	proto_scratch_trim(&server.produce_scratch, PRODUCE_SCRATCH_KEEP);
	if (err == KERR_NONE && nbatches != 1) {
		err = KERR_INVALID_RECORD;
		reason = "Produce requests with version 3+ are only allowed to contain exactly one record batch";
	}
	if (err != KERR_NONE) {
		partition_error(pr, err, reason);
		return;
	}
	if ((int64_t)len > t->cfg.log.segment_bytes) {
		partition_error(pr, KERR_RECORD_LIST_TOO_LARGE,
				"The batch is larger than the topic's segment.bytes");
		return;
	}
	const char *vmsg;
	int16_t verr = verify_txn_batch(req, m, p, &pd->records, &vmsg);
	if (verr != KERR_NONE) {
		partition_error(pr, verr, vmsg);
		return;
	}

	/* The records are a view into the request frame, which the
	 * connection owns and does not reuse until the response: patch it
	 * in place instead of copying. */
	uint8_t *batches = (uint8_t *)(uintptr_t)pd->records.ptr;
	if (t->cfg.log_append_time)
		proto_batch_set_log_append_time(batches, req->now_ms);
	log_append_info info;
	int rc = log_append_checked(p->log, batches, len, p->leader_epoch, req->now_ms,
				    &info);
	if (rc == LOG_ERR_INVALID_PRODUCER_EPOCH) {
		partition_error(pr, KERR_INVALID_PRODUCER_EPOCH,
				"The producer epoch is older than the partition's for this producer id");
		return;
	}
	if (rc == LOG_ERR_OUT_OF_ORDER_SEQUENCE) {
		partition_error(pr, KERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
				"The base sequence does not follow the producer's last sequence");
		return;
	}
	if (rc == LOG_ERR_INVALID_TXN_STATE) {
		partition_error(pr, KERR_INVALID_TXN_STATE,
				"A non-transactional batch from a producer with an open transaction");
		return;
	}
	if (rc == LOG_ERR_TRANSACTION_COORDINATOR_FENCED) {
		/* only markers are checked against the coordinator epoch;
		 * mapped in case the storage rules change */
		partition_error(pr, KERR_TRANSACTION_COORDINATOR_FENCED, NULL);
		return;
	}
	if (rc) {
		/* ENOSPC/EFBIG/EIO: log_append_checked left nothing of the
		 * batch (file, indexes, roll and producer state rolled back),
		 * so the client's retry succeeds once space is freed. Kafka
		 * takes the log dir offline instead (LogDirFailureChannel);
		 * the partition stays online here (issue 6, disk full).
		 * Rate-limited, so a full disk does not also flood the
		 * broker's log. */
		static brk_ratelog failed = BRK_RATELOG_INIT;
		brk_ratelog_printf(&failed, "samsa: appending to %s-%d failed: %s (answered "
				   "KAFKA_STORAGE_ERROR)\n", t->name, (int)p->index,
				   rc < 0 && rc > -4096 ? strerror(-rc) : "error");
		partition_error(pr, KERR_KAFKA_STORAGE_ERROR, "Appending to the log failed");
		return;
	}
	pr->error_code = KERR_NONE;
	pr->base_offset = info.base_offset;
	pr->log_start_offset = log_start_offset(p->log);
	*required = info.last_offset + 1;
	if (info.duplicate) {
		pr->log_append_time_ms = info.dup_max_timestamp;
		return;
	}
	brk_partition_appended(&server.partitions, p, (int64_t)len, req->now_ms);
	pr->log_append_time_ms = t->cfg.log_append_time ? req->now_ms : -1;
}

/* ---- acks=all: the answer waits for the ISR (Kafka's DelayedProduce) ---- */

/* One appended partition whose high watermark has not passed the batch. */
typedef struct acks_wait {
	uint8_t topic_id[16];   /* found again by id: the topic may go meanwhile */
	int32_t partition;
	int32_t led_since;      /* the partition's led_since_epoch when appended */
	int64_t required;       /* the offset after the batch */
	int16_t min_isr;
	ProduceResponse_PartitionProduceResponse *pr;
	bool done;
} acks_wait;

typedef struct produce_state {
	ProduceResponse resp;
	acks_wait *w;
	int32_t n;
} produce_state;

/*
 * Kafka's DelayedProduce.tryComplete for one partition: done when this
 * broker stopped leading it since the append, even if it leads it again
 * (NOT_LEADER_OR_FOLLOWER: the records may or may not survive; a leader
 * epoch bump that keeps this broker leader, an ISR change by the
 * controller, does not count), or when
 * the high watermark reached the batch's end: NONE, or
 * NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR (maximal) shrank below
 * min.insync.replicas meanwhile (the records are in the log).
 */
static bool acks_check(acks_wait *a)
{
	if (a->done)
		return true;
	brk_partition *p = brk_topic_partition(brk_topic_find_by_id(&server.partitions, a->topic_id),
					       a->partition);
	if (!p || p->role != BRK_ROLE_LEADER || p->led_since_epoch != a->led_since || !p->log) {
		partition_error(a->pr, p ? KERR_NOT_LEADER_OR_FOLLOWER : KERR_UNKNOWN_TOPIC_OR_PARTITION,
				NULL);
		a->done = true;
		return true;
	}
	if (log_high_watermark(p->log) < a->required)
		return false;
	if (brk_partition_maximal_isr_size(p) < a->min_isr)
		partition_error(a->pr, KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
				"The ISR shrank below min.insync.replicas after the append");
	a->done = true;
	return true;
}

/*
 * Quotas at response time (Kafka's handleProduceRequest callback): the
 * request's bytes go to the produce quota, its handler time to the request
 * quota (not for acks=0, as in Kafka); the connection is muted for the
 * longer throttle after this response (KIP-219), which carries it.
 */
static int32_t produce_throttle(brk_request *req, bool acks0)
{
	int32_t ms = 0;
	if (brk_quotas_enabled(&server.quotas, BRK_QUOTA_PRODUCE)) {
		ms = brk_quota_record(&server.quotas, BRK_QUOTA_PRODUCE, brk_conn_principal(req->conn),
				      req->client_id, brk_quota_request_size(req), brk_mono_ms());
		if (ms > 0)
			brk_conn_throttle(req->conn, ms);
	}
	int32_t rq = acks0 ? 0 : brk_quota_request_throttle(req);
	return ms > rq ? ms : rq;
}

static void on_acks(brk_delayed *d, bool expired)
{
	produce_state *st = d->arg;
	bool all = true;
	for (int32_t i = 0; i < st->n; i++)
		if (!acks_check(&st->w[i]))
			all = false;
	if (!all && !expired)
		return;
	for (int32_t i = 0; i < st->n; i++)
		if (!st->w[i].done)
			partition_error(st->w[i].pr, KERR_REQUEST_TIMED_OUT, NULL);
	brk_delayed_finish(d);
	brk_request *req = d->req;
	st->resp.throttle_time_ms = produce_throttle(req, false);
	int rc = ProduceResponse_encode(req->out, req->api_version, &st->resp);
	brk_request_complete(req, rc == 0 ? BRK_COMPLETE_RESPOND : BRK_COMPLETE_CLOSE);
}

int brk_handle_produce(brk_request *req)
{
	ProduceRequest m;
	ProduceRequest_init(&m);
	if (ProduceRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int16_t v = req->api_version;

	int request_error = KERR_NONE;
	if (m.acks != 0 && m.acks != 1 && m.acks != -1)
		request_error = KERR_INVALID_REQUIRED_ACKS;
	/* KafkaApis.handleProduceRequest: WRITE on the transactional id. */
	if (!request_error && m.transactional_id.len >= 0 &&
	    !brk_acl_permits(req, CTL_ACL_RES_TRANSACTIONAL_ID, m.transactional_id.ptr,
			     m.transactional_id.len, CTL_ACL_OP_WRITE))
		request_error = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (!request_error && m.transactional_id.len < 0) {
		for (int32_t i = 0; i < m.topic_data_count && !request_error; i++)
			for (int32_t j = 0; j < m.topic_data[i].partition_data_count; j++)
				if (first_batch_transactional(&m.topic_data[i].partition_data[j].records)) {
					request_error = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
					break;
				}
	}

	ProduceResponse resp;
	ProduceResponse_init(&resp);
	int32_t nt = m.topic_data_count > 0 ? m.topic_data_count : 0;
	resp.responses_count = nt;
	resp.responses = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.responses));
	if (!resp.responses)
		return BRK_CLOSE;
	bool any_error = false;
	int32_t nwait = 0; /* acks=-1: partitions whose high watermark is behind */
	int32_t nparts = 0;
	for (int32_t i = 0; i < nt; i++)
		nparts += m.topic_data[i].partition_data_count > 0 ? m.topic_data[i].partition_data_count : 0;
	produce_state *st = NULL;
	if (m.acks == -1) {
		st = proto_arena_alloc(req->arena, sizeof(*st));
		if (!st || !(st->w = proto_arena_alloc(req->arena, (size_t)(nparts ? nparts : 1) *
									   sizeof(*st->w))))
			return BRK_CLOSE;
	}
	for (int32_t i = 0; i < nt; i++) {
		const ProduceRequest_TopicProduceData *td = &m.topic_data[i];
		ProduceResponse_TopicProduceResponse *tr = &resp.responses[i];
		ProduceResponse_TopicProduceResponse_init(tr);
		tr->name = td->name;
		tr->topic_id = td->topic_id;
		brk_topic *t = NULL;
		if (v >= 13)
			t = brk_topic_find_by_id(&server.partitions, td->topic_id.b);
		else if (td->name.len > 0)
			t = brk_topic_find(&server.partitions, td->name.ptr, td->name.len);
		bool internal = t ? t->internal
				  : v < 13 && td->name.len > 0 &&
					    ctl_topic_name_is_internal(td->name.ptr, (size_t)td->name.len);
		/* WRITE on the topic, checked before whether it exists (a topic
		 * id not known here stays UNKNOWN_TOPIC_ID). */
		bool denied = (t || v < 13) &&
			      !brk_acl_permits_topic(req, t, td->name, CTL_ACL_OP_WRITE);
		int32_t np = td->partition_data_count > 0 ? td->partition_data_count : 0;
		tr->partition_responses_count = np;
		tr->partition_responses = proto_arena_alloc(
			req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partition_responses));
		if (!tr->partition_responses)
			return BRK_CLOSE;
		for (int32_t j = 0; j < np; j++) {
			const ProduceRequest_PartitionProduceData *pd = &td->partition_data[j];
			ProduceResponse_PartitionProduceResponse *pr = &tr->partition_responses[j];
			ProduceResponse_PartitionProduceResponse_init(pr);
			pr->index = pd->index;
			int64_t required = -1;
			brk_partition *p = brk_topic_partition(t, pd->index);
			if (request_error)
				partition_error(pr, request_error, NULL);
			else if (denied)
				partition_error(pr, KERR_TOPIC_AUTHORIZATION_FAILED, NULL);
			else
				produce_one(req, &m, t, internal, p, pd, pr, &required);
			if (pr->error_code != KERR_NONE)
				any_error = true;
			else if (st && required > log_high_watermark(p->log)) {
				acks_wait *a = &st->w[nwait++];
				*a = (acks_wait){ .partition = p->index, .led_since = p->led_since_epoch,
						  .required = required,
						  .min_isr = t->cfg.min_insync_replicas, .pr = pr };
				memcpy(a->topic_id, t->id, 16);
			}
		}
	}
	if (m.acks == 0) {
		if (any_error)
			return BRK_CLOSE;
		produce_throttle(req, true);
		return BRK_NO_RESPONSE;
	}
	if (nwait > 0) {
		/* Wait until the ISR has the batches, within the request's
		 * timeout (REQUEST_TIMED_OUT for those that did not). */
		st->resp = resp;
		st->n = nwait;
		brk_delayed *d = brk_delayed_new(req, nwait);
		if (!d)
			return BRK_CLOSE;
		for (int32_t i = 0; i < nwait; i++) {
			brk_partition *p = brk_topic_partition(
				brk_topic_find_by_id(&server.partitions, st->w[i].topic_id),
				st->w[i].partition);
			brk_delayed_watch(d, i, &p->hw_waiters);
		}
		if (brk_delayed_start(d, m.timeout_ms, on_acks, st) != 0)
			return BRK_CLOSE;
		return BRK_DELAYED;
	}
	resp.throttle_time_ms = produce_throttle(req, false);
	if (ProduceResponse_encode(req->out, v, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
