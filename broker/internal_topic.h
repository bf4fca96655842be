/*
 * internal_topic.h - what the coordinators share about their internal topics
 * (__consumer_offsets for groups, __transaction_state for transactions;
 * DESIGN.md decision 6): creating one at start-up, reading a partition back
 * batch by batch to load state, and appending one batch the coordinator
 * built itself.
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_INTERNAL_TOPIC_H
#define SAMSA_BROKER_INTERNAL_TOPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/hw_wait.h"
#include "broker/partitions.h"
#include "controller/ctl.h"
#include "protocol/batch.h"

/* The internal topics' names (Kafka's). */
#define BRK_OFFSETS_TOPIC "__consumer_offsets"
#define BRK_TXN_STATE_TOPIC "__transaction_state"

/* segment.bytes' minimum (Kafka's LogConfig: 1 MiB). */
#define BRK_INTERNAL_MIN_SEGMENT_BYTES (1024 * 1024)

/*
 * The creation of an internal topic as a controller operation (o->op, to
 * submit): `name` with npartitions partitions, replication factor
 * min(replication_factor, live_brokers) (a warning on stderr when capped,
 * as Kafka 4 caps neither but a single node must work out of the box),
 * cleanup.policy=compact, compression.type=producer and segment.bytes
 * (bytes; raised to BRK_INTERNAL_MIN_SEGMENT_BYTES with a warning when
 * below), plus min.insync.replicas when min_isr > 0 (also capped to the
 * replication factor, with a warning). Kafka's
 * GroupCoordinator.groupMetadataTopicConfigs and
 * TransactionLog.transactionTopicConfigs. o->op points into o: submit it
 * while o lives (ctl_submit copies it).
 */
typedef struct brk_internal_topic_op {
	ctl_op op;
	ctl_config_entry configs[4];
	char names[4][32];
	char values[4][32];
} brk_internal_topic_op;

void brk_internal_topic_op_init(brk_internal_topic_op *o, const char *name, int32_t npartitions,
				int16_t replication_factor, int16_t min_isr, int32_t segment_bytes,
				int32_t live_brokers);

/*
 * Reading a partition of an internal topic back, batch by batch, from its
 * log start offset to its log end offset, so that a coordinator can load
 * its state a slice at a time on the loop (group/store.h, txn/store.h).
 * The log end offset is looked at again whenever the reader runs dry, so
 * batches appended meanwhile (markers, writes) are read too. A new
 * leader's records above its high watermark are read as well, as Kafka's
 * GroupMetadataManager / TransactionStateManager load to the log end
 * offset: the leader's log is what the followers converge on, and a record
 * the previous leader acknowledged may sit above this broker's high
 * watermark (a follower learns the high watermark one fetch late). On a
 * single node the two are the same.
 *
 * The reader copies up to 1 MiB of whole batches at a time (a larger batch
 * whole) from the segment files into its own buffer, so nothing it hands
 * out depends on a segment staying open. Its partition's log must stay
 * open while it is used: the coordinators drop a reader when the
 * partition changes leader epoch or goes (before a follower truncates).
 */
typedef struct brk_internal_reader {
	brk_partition *p;
	int64_t next;          /* the offset after the last batch handed out */
	uint8_t *buf;          /* batches read and not handed out yet: [pos, len) */
	size_t cap, len, pos;
	proto_scratch scratch; /* for proto_record_iter_init (decompression) */
} brk_internal_reader;

/* A reader of p from its log start offset. */
void brk_internal_reader_init(brk_internal_reader *r, brk_partition *p);
/* Free its buffers (not p). */
void brk_internal_reader_free(brk_internal_reader *r);
/*
 * The next batch in offset order: 1 with *bi its parsed header (base
 * offset and attributes as stored: control, transactional, producer
 * id/epoch) and *batch its bytes (bi->size of them, valid until the next
 * call); 0 at the log end offset (call again later for what is appended);
 * -ENOMEM, or -EIO / -ERANGE when the log cannot be read. A torn batch
 * reads as the end.
 */
int brk_internal_reader_next(brk_internal_reader *r, proto_batch_info *bi, const uint8_t **batch);

/* brk_internal_append's result for a batch larger than the partition
 * accepts (not a Kafka error code: those are >= 0). */
#define BRK_INTERNAL_TOO_LARGE (-1)

/*
 * Append one batch a coordinator built (size bytes at batch; its base
 * offset and leader epoch are patched in place) to p (a partition of
 * registry reg), as Produce does: with the partition's leader epoch, then
 * brk_partition_appended (high watermark, delayed fetches, flush policy).
 * On success *mark (may be NULL) names the write for hw_wait.h: p, its
 * leader epoch and the log end offset after the batch; the caller's answer
 * waits until the high watermark reaches it (Kafka's coordinators append
 * with acks=-1). A transactional batch (a
 * transactional offset commit) goes through log_append_coordinator, any
 * other through log_append. A batch above the topic's max.message.bytes or
 * segment.bytes is not written: BRK_INTERNAL_TOO_LARGE, with a warning
 * naming `owner` (the group or transactional id, olen bytes), as Kafka's
 * CoordinatorRuntime, which builds its batches with the partition's
 * LogConfig.maxMessageSize as the limit.
 * Otherwise returns a Kafka error code: NONE, NOT_COORDINATOR when the log
 * is offline or failed (Kafka's coordinator error mapping), and for a
 * transactional batch INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE from the
 * producer state.
 */
int brk_internal_append(brk_partitions *reg, brk_partition *p, uint8_t *batch, int32_t size,
			const char *owner, int32_t olen, int64_t now_ms, brk_hw_mark *mark);

#endif
