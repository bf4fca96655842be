/*
 * txn_offset_commit.c - TxnOffsetCommit (API key 28), versions 0-5: a
 * transactional producer commits a consumer group's offsets as part of its
 * transaction (KIP-98; sendOffsetsToTransaction). The offsets are written to
 * __consumer_offsets as one transactional batch and stay pending (not
 * visible to OffsetFetch) until the transaction's marker commits them
 * (grp_txn_completed) or aborts them.
 *
 * Rules, in Kafka's order (KafkaApis.handleTxnOffsetCommitRequest,
 * GroupCoordinatorService.commitTransactionalOffsets, OffsetMetadataManager
 * .commitTransactionalOffset / validateTransactionalOffsetCommit,
 * ClassicGroup.validateOffsetCommit with isTransactional):
 *  - a topic that does not exist, or a partition out of range:
 *    UNKNOWN_TOPIC_OR_PARTITION; the other partitions go on;
 *  - a null or empty group id: INVALID_GROUP_ID (isGroupIdNotEmpty: unlike
 *    OffsetCommit, "" is refused);
 *  - a group this broker does not coordinate: NOT_COORDINATOR (group.h);
 *  - a producer id below 0 (no transaction can have it): the transaction
 *    coordinator's INVALID_PRODUCER_ID_MAPPING;
 *  - an unknown group: with generation -1 a "simple" Empty group is
 *    created (only when the write succeeds), otherwise ILLEGAL_GENERATION
 *    (all versions); an existing group: grp_validate_txn_commit
 *    (COORDINATOR_NOT_AVAILABLE for Dead; v3+ with member id / generation /
 *    instance id: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION;
 *    no REBALANCE_IN_PROGRESS, no heartbeat);
 *  - metadata longer than offset.metadata.max.bytes:
 *    OFFSET_METADATA_TOO_LARGE for that partition (bytes, as OffsetCommit);
 *  - the rest are written together (grp_store_write_txn_offsets) and
 *    answered NONE or the write's error: INVALID_PRODUCER_EPOCH for an epoch
 *    older than the producer's in that partition (every version: Kafka maps
 *    PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for this API,
 *    AddPartitionsToTxnManager, and the log's fencing error is
 *    INVALID_PRODUCER_EPOCH), INVALID_TXN_STATE, COORDINATOR_NOT_AVAILABLE,
 *    NOT_COORDINATOR, UNKNOWN_SERVER_ERROR (batch too large); the answer
 *    waits until the write is committed (grp_answer: NOT_COORDINATOR when
 *    this broker stops leading the partition, COORDINATOR_NOT_AVAILABLE
 *    after offsets.commit.timeout.ms, for the partitions written).
 *
 * Before the group is looked at (after INVALID_GROUP_ID and the producer
 * id check), KIP-890 verification (KAFKA-15449; txn/verify.h, when
 * transaction.partition.verification.enable): the group's
 * __consumer_offsets partition must be in the ongoing transaction of that
 * transactional id, producer id and epoch (AddOffsetsToTxn), unless the
 * producer already wrote to it in this transaction; else, for every
 * partition and with nothing written: INVALID_PRODUCER_ID_MAPPING,
 * INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE (v4:
 * TRANSACTION_ABORTABLE). v5 (transaction version 2) adds the partition to
 * the transaction instead, as Kafka's implicit AddOffsetsToTxn.
 */
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/group/txn_offsets.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "broker/txn/verify.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* KIP-890 verification (txn/verify.h) of the group's __consumer_offsets
 * partition in the producer's transaction: CoordinatorPartitionWriter
 * .maybeStartTransactionVerification, before the group is looked at. */
static int verify_txn(const brk_request *req, const TxnOffsetCommitRequest *m)
{
	brk_topic *t = grp_store_topic(&server.groups);
	if (!t)
		return KERR_NONE; /* the write answers COORDINATOR_NOT_AVAILABLE */
	brk_partition *p = brk_topic_partition(
		t, brk_coordinator_partition(m->group_id.ptr, m->group_id.len, t->npartitions));
	if (!p)
		return KERR_NONE;
	return txn_verify_write(m->transactional_id, m->producer_id, m->producer_epoch, p,
				txn_write_op_for_txn_offset_commit(req->api_version), req->now_ms);
}

/* The group-level error for the request, before any write; *create is set
 * when the group is unknown and must be created for a simple commit. */
static int group_error(const brk_request *req, const TxnOffsetCommitRequest *m, grp_group **g,
		       bool *create)
{
	*g = NULL;
	*create = false;
	/* KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional
	 * id, READ on the group (then READ on each topic). */
	if (!brk_acl_permits_str(req, CTL_ACL_RES_TRANSACTIONAL_ID, m->transactional_id,
				 CTL_ACL_OP_WRITE))
		return KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, m->group_id, CTL_ACL_OP_READ))
		return KERR_GROUP_AUTHORIZATION_FAILED;
	if (m->group_id.len <= 0)
		return KERR_INVALID_GROUP_ID;
	int16_t cerr = grp_coordinator_error(&server.groups, m->group_id.ptr, m->group_id.len);
	if (cerr)
		return cerr;
	if (m->producer_id < 0)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	int err = verify_txn(req, m);
	if (err)
		return err;
	*g = grp_find(&server.groups, m->group_id.ptr, m->group_id.len);
	if (*g)
		return grp_validate_txn_commit(*g, m->member_id, m->generation_id,
					       m->group_instance_id);
	if (m->generation_id >= 0)
		return KERR_ILLEGAL_GENERATION;
	*create = true;
	return KERR_NONE;
}

/* The answer, kept for brk_hw_fail_fn. */
typedef struct commit_state {
	TxnOffsetCommitResponse resp;
	int16_t **pending; /* the error fields of the partitions written */
	int32_t n;
} commit_state;

static int fail(brk_request *req, void *arg, int16_t err)
{
	commit_state *st = arg;
	for (int32_t i = 0; i < st->n; i++)
		*st->pending[i] = err;
	return TxnOffsetCommitResponse_encode(req->out, req->api_version, &st->resp) == 0 ? BRK_RESPOND
											  : BRK_CLOSE;
}

int brk_handle_txn_offset_commit(brk_request *req)
{
	grp_coordinator *gc = &server.groups;
	TxnOffsetCommitRequest m;
	TxnOffsetCommitRequest_init(&m);
	if (TxnOffsetCommitRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	commit_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	int aw = grp_store_await_topic(gc, req); /* made on first use */
	if (aw)
		return aw;
	int16_t v = req->api_version;

	grp_group *g;
	bool create;
	int group_err = group_error(req, &m, &g, &create);

	TxnOffsetCommitResponse resp;
	TxnOffsetCommitResponse_init(&resp);
	int32_t nt = m.topics_count > 0 ? m.topics_count : 0;
	int32_t total = 0;
	for (int32_t i = 0; i < nt; i++)
		total += m.topics[i].partitions_count > 0 ? m.topics[i].partitions_count : 0;
	size_t cap = (size_t)(total ? total : 1);
	resp.topics_count = nt;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp.topics));
	grp_store_offset *items = proto_arena_alloc(req->arena, cap * sizeof(*items));
	grp_offset *values = proto_arena_alloc(req->arena, cap * sizeof(*values));
	int16_t **pending = proto_arena_alloc(req->arena, cap * sizeof(*pending));
	if (!resp.topics || !items || !values || !pending)
		return BRK_CLOSE;

	int32_t n = 0;
	for (int32_t i = 0; i < nt; i++) {
		const TxnOffsetCommitRequest_TxnOffsetCommitRequestTopic *rt = &m.topics[i];
		TxnOffsetCommitResponse_TxnOffsetCommitResponseTopic *tr = &resp.topics[i];
		TxnOffsetCommitResponse_TxnOffsetCommitResponseTopic_init(tr);
		tr->name = rt->name;
		brk_topic *t = rt->name.len > 0 ? brk_topic_find(&server.partitions, rt->name.ptr, rt->name.len) : NULL;
		int32_t np = rt->partitions_count > 0 ? rt->partitions_count : 0;
		tr->partitions_count = np;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partitions));
		if (!tr->partitions)
			return BRK_CLOSE;
		for (int32_t j = 0; j < np; j++) {
			const TxnOffsetCommitRequest_TxnOffsetCommitRequestPartition *rp = &rt->partitions[j];
			TxnOffsetCommitResponse_TxnOffsetCommitResponsePartition *pr = &tr->partitions[j];
			TxnOffsetCommitResponse_TxnOffsetCommitResponsePartition_init(pr);
			pr->partition_index = rp->partition_index;
			if (group_err == KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
			    group_err == KERR_GROUP_AUTHORIZATION_FAILED) {
				pr->error_code = (int16_t)group_err;
				continue;
			}
			if (!brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, rt->name, CTL_ACL_OP_READ)) {
				pr->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (!t || !brk_topic_partition(t, rp->partition_index)) {
				pr->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (group_err) {
				pr->error_code = (int16_t)group_err;
				continue;
			}
			if (rp->committed_metadata.len > server.cfg.offset_metadata_max_bytes) {
				pr->error_code = KERR_OFFSET_METADATA_TOO_LARGE;
				continue;
			}
			grp_offset *val = &values[n];
			*val = grp_offset_of_commit(rp->committed_offset,
						    v >= 2 ? rp->committed_leader_epoch : -1,
						    rp->committed_metadata, req->now_ms, -1);
			items[n] = (grp_store_offset){ proto_cstr(t->name), rp->partition_index, val };
			pending[n] = &pr->error_code;
			n++;
		}
	}

	int32_t partition = group_err ? -1 : grp_partition_of(gc, m.group_id.ptr, m.group_id.len);
	if (n > 0) {
		int err = KERR_NONE;
		if (create) {
			g = grp_get_or_create(gc, m.group_id.ptr, m.group_id.len);
			if (!g)
				err = KERR_UNKNOWN_SERVER_ERROR;
		}
		if (!err)
			err = grp_store_write_txn_offsets(g, m.producer_id, m.producer_epoch, items, n,
							  req->now_ms);
		/* A group created for this commit goes again when nothing was
		 * written (Kafka creates it in the write's own timeline). */
		if (err && create && g && grp_offsets_count(g->offsets) == 0 &&
		    grp_txn_set_count(g->txns) == 0 && g->nmembers == 0)
			grp_remove(g);
		for (int32_t i = 0; i < n; i++)
			*pending[i] = (int16_t)err;
	}

	st->resp = resp;
	st->pending = pending;
	st->n = n;
	if (TxnOffsetCommitResponse_encode(req->out, v, &st->resp) != 0)
		return BRK_CLOSE;
	return grp_answer(gc, req, partition, fail, st);
}
