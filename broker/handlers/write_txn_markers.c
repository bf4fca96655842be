/*
 * write_txn_markers.c - WriteTxnMarkers (API key 27), versions 1-2: a
 * transaction coordinator asks this partition leader to end a transaction
 * (KIP-98) by appending a COMMIT (transaction_result true) or ABORT marker
 * to each listed partition (brk_partition_write_txn_marker).
 *
 * Per marker and partition, as Kafka's KafkaApis.handleWriteTxnMarkersRequest
 * (with the classic group coordinator, which the broker's is):
 *  - a topic or partition this broker does not host, or whose log is
 *    offline: UNKNOWN_TOPIC_OR_PARTITION (ReplicaManager.onlinePartition
 *    finds none);
 *  - transaction version 2 markers (v2 requests, KIP-890 part 2: the
 *    coordinator bumps the epoch before it writes the marker): the epoch
 *    must be above the producer's epoch in the partition, or equal to it
 *    when no transaction is open there (a retried marker, KAFKA-19999);
 *    else INVALID_PRODUCER_EPOCH (ProducerAppendInfo.checkProducerEpoch);
 *  - then the append's errors: INVALID_PRODUCER_EPOCH (epoch below the
 *    producer's), TRANSACTION_COORDINATOR_FENCED (coordinator epoch below
 *    the one of the producer's last marker), KAFKA_STORAGE_ERROR.
 * A marker on a __consumer_offsets partition also applies or drops the
 * producer's pending transactional offset commits (Kafka's
 * GroupCoordinator.onTransactionCompleted, done by
 * brk_partition_write_txn_marker). The markers are written in request
 * order; each partition's result is independent of the others.
 * The response has one entry per marker, in request order, with the topics
 * and partitions as requested (Kafka merges markers of the same producer
 * id into one map entry; clients match by producer id and partition).
 * As Kafka appends the markers with acks=-1, the answer waits until every
 * marker written is committed (hw_wait.h): a partition whose leadership
 * moves meanwhile answers NOT_LEADER_OR_FOLLOWER, and after
 * request.timeout.ms (30 s) those still waiting REQUEST_TIMED_OUT (every
 * marker written then gets that error: the coordinator retries them, and a
 * marker written twice does no harm).
 * Authorization (CLUSTER_ACTION) is not checked: this broker has no ACLs.
 */
#include "broker/hw_wait.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* Kafka's TransactionVersion: 2 = the epoch is bumped at every transaction end. */
#define TV_2 2
/* Kafka's request.timeout.ms, the markers' append timeout. */
#define MARKER_TIMEOUT_MS 30000

/* The transaction version 2 epoch rule for a marker on p (log online). */
static int16_t check_tv2_epoch(const brk_partition *p, int64_t producer_id, int16_t epoch)
{
	const log_producer_entry *e = log_producer_find(p->log, producer_id);
	if (!e || e->epoch < 0)
		return KERR_NONE;
	if (epoch < e->epoch || (epoch == e->epoch && e->txn_first_offset >= 0))
		return KERR_INVALID_PRODUCER_EPOCH;
	return KERR_NONE;
}

static int16_t write_one(const WriteTxnMarkersRequest_WritableTxnMarker *mk, brk_topic *t,
			 int32_t partition, int64_t now_ms, brk_hw_mark *mark)
{
	brk_partition *p = brk_topic_partition(t, partition);
	if (!p)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	int16_t err = brk_partition_leader_error(p, -1);
	if (err)
		return err;
	if (mk->transaction_version >= TV_2) {
		int16_t err = check_tv2_epoch(p, mk->producer_id, mk->producer_epoch);
		if (err != KERR_NONE)
			return err;
	}
	err = brk_partition_write_txn_marker(&server.partitions, p, mk->producer_id, mk->producer_epoch,
					     mk->coordinator_epoch, mk->transaction_result, now_ms);
	/* The loop is the log's only writer: the marker ends at the log end. */
	if (err == KERR_NONE)
		*mark = (brk_hw_mark){ p, p->leader_epoch, log_end_offset(p->log) };
	return err;
}

/* The answer, kept for brk_hw_fail_fn: the markers written get the error. */
typedef struct markers_state {
	WriteTxnMarkersResponse resp;
	int16_t **written; /* the error fields of the markers written */
	int32_t n;
} markers_state;

static int fail(brk_request *req, void *arg, int16_t err)
{
	markers_state *st = arg;
	if (err == KERR_NOT_COORDINATOR)
		err = KERR_NOT_LEADER_OR_FOLLOWER; /* the leadership moved */
	for (int32_t i = 0; i < st->n; i++)
		*st->written[i] = err;
	return WriteTxnMarkersResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND
											  : BRK_CLOSE;
}

int brk_handle_write_txn_markers(brk_request *req)
{
	WriteTxnMarkersRequest m;
	WriteTxnMarkersRequest_init(&m);
	if (WriteTxnMarkersRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;

	markers_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	WriteTxnMarkersResponse resp;
	WriteTxnMarkersResponse_init(&resp);
	int32_t nm = m.markers_count > 0 ? m.markers_count : 0;
	/* KafkaApis.handleWriteTxnMarkersRequest: CLUSTER_ACTION on the
	 * cluster (only brokers send it), else every partition
	 * CLUSTER_AUTHORIZATION_FAILED. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_CLUSTER_ACTION)) {
		resp.markers_count = nm;
		resp.markers = proto_arena_alloc(req->arena, (size_t)(nm ? nm : 1) *
								   sizeof(*resp.markers));
		if (!resp.markers)
			return BRK_CLOSE;
		for (int32_t i = 0; i < nm; i++) {
			const WriteTxnMarkersRequest_WritableTxnMarker *mk = &m.markers[i];
			WriteTxnMarkersResponse_WritableTxnMarkerResult *mr = &resp.markers[i];
			WriteTxnMarkersResponse_WritableTxnMarkerResult_init(mr);
			mr->producer_id = mk->producer_id;
			int32_t nt = mk->topics_count > 0 ? mk->topics_count : 0;
			mr->topics_count = nt;
			mr->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) *
								     sizeof(*mr->topics));
			if (!mr->topics)
				return BRK_CLOSE;
			for (int32_t j = 0; j < nt; j++) {
				const WriteTxnMarkersRequest_WritableTxnMarkerTopic *qt = &mk->topics[j];
				WriteTxnMarkersResponse_WritableTxnMarkerTopicResult *rt = &mr->topics[j];
				WriteTxnMarkersResponse_WritableTxnMarkerTopicResult_init(rt);
				rt->name = qt->name;
				int32_t np = qt->partition_indexes_count > 0 ? qt->partition_indexes_count
									     : 0;
				rt->partitions_count = np;
				rt->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) *
									       sizeof(*rt->partitions));
				if (!rt->partitions)
					return BRK_CLOSE;
				for (int32_t k = 0; k < np; k++) {
					WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult_init(
						&rt->partitions[k]);
					rt->partitions[k].partition_index = qt->partition_indexes[k];
					rt->partitions[k].error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
				}
			}
		}
		return WriteTxnMarkersResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	int32_t total = 0;
	for (int32_t i = 0; i < nm; i++)
		for (int32_t j = 0; j < m.markers[i].topics_count; j++)
			total += m.markers[i].topics[j].partition_indexes_count > 0
					 ? m.markers[i].topics[j].partition_indexes_count
					 : 0;
	brk_hw_mark *marks = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*marks));
	int16_t **written = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(*written));
	if (!marks || !written)
		return BRK_CLOSE;
	int32_t nw = 0;
	resp.markers_count = nm;
	resp.markers = proto_arena_alloc(req->arena, (size_t)(nm ? nm : 1) * sizeof(*resp.markers));
	if (!resp.markers)
		return BRK_CLOSE;
	for (int32_t i = 0; i < nm; i++) {
		const WriteTxnMarkersRequest_WritableTxnMarker *mk = &m.markers[i];
		WriteTxnMarkersResponse_WritableTxnMarkerResult *mr = &resp.markers[i];
		WriteTxnMarkersResponse_WritableTxnMarkerResult_init(mr);
		mr->producer_id = mk->producer_id;
		int32_t nt = mk->topics_count > 0 ? mk->topics_count : 0;
		mr->topics_count = nt;
		mr->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*mr->topics));
		if (!mr->topics)
			return BRK_CLOSE;
		for (int32_t j = 0; j < nt; j++) {
			const WriteTxnMarkersRequest_WritableTxnMarkerTopic *qt = &mk->topics[j];
			WriteTxnMarkersResponse_WritableTxnMarkerTopicResult *rt = &mr->topics[j];
			WriteTxnMarkersResponse_WritableTxnMarkerTopicResult_init(rt);
			rt->name = qt->name;
			brk_topic *t = brk_topic_find(&server.partitions, qt->name.ptr, qt->name.len);
			int32_t np = qt->partition_indexes_count > 0 ? qt->partition_indexes_count : 0;
			rt->partitions_count = np;
			rt->partitions = proto_arena_alloc(req->arena,
							   (size_t)(np ? np : 1) * sizeof(*rt->partitions));
			if (!rt->partitions)
				return BRK_CLOSE;
			for (int32_t k = 0; k < np; k++) {
				WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult *rp = &rt->partitions[k];
				WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult_init(rp);
				rp->partition_index = qt->partition_indexes[k];
				rp->error_code = write_one(mk, t, rp->partition_index, req->now_ms, &marks[nw]);
				if (rp->error_code == KERR_NONE)
					written[nw++] = &rp->error_code;
			}
		}
	}
	st->resp = resp;
	st->written = written;
	st->n = nw;
	if (WriteTxnMarkersResponse_encode(req->out, req->api_version, &st->resp) != 0)
		return BRK_CLOSE;
	return brk_hw_answer(req, marks, nw, MARKER_TIMEOUT_MS, KERR_REQUEST_TIMED_OUT, fail, st);
}
