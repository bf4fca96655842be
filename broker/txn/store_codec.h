/*
 * store_codec.h - Kafka's record layouts in __transaction_state (the
 * transaction coordinator's TransactionLogKey / TransactionLogValue message
 * definitions, Kafka's TransactionLog), as pure encoders/decoders with no
 * I/O, so store.c and the unit tests share them.
 *
 * Key (never flexible): the coordinator record type int16 0 (written where
 * older Kafka wrote the key version 0: the same bytes), then
 *   transactional_id  string (int16 length)
 * Value: int16 version, then
 *   v0  producer_id int64, producer_epoch int16, transaction_timeout_ms
 *       int32, transaction_status int8, transaction_partitions nullable
 *       array (int32 count, -1 null) of { topic string, partition_ids
 *       array of int32 }, transaction_last_update_timestamp_ms int64,
 *       transaction_start_timestamp_ms int64
 *   v1  the same fields flexible (KIP-482: compact strings and arrays,
 *       uvarint count+1 with 0 = null, a tagged-field section after each
 *       partitions entry and after the value), tagged fields at the end:
 *       tag 0 previous_producer_id int64 (default -1), tag 1
 *       next_producer_id int64 (-1), tag 2 client_transaction_version int16
 *       (0) (KIP-890). Unknown tags are skipped.
 * A record with a null value (a tombstone) removes the transactional id.
 * Status ids: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
 * CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7 (Kafka's
 * TransactionState.id). Kafka writes value v0 while the transaction.version
 * feature is below 2 and v1 from TV2 on (TransactionVersion
 * .transactionLogValueVersion); the partitions array is null for Empty.
 */
#ifndef SAMSA_BROKER_TXN_STORE_CODEC_H
#define SAMSA_BROKER_TXN_STORE_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/buf.h"

#define TXN_KEY_VERSION 0     /* TransactionLogKey's record type / version */
#define TXN_VALUE_VERSION_MAX 1

/* One partition of a transaction in a decoded or to-be-encoded value. */
typedef struct txn_log_tp {
	proto_str topic;
	int32_t partition;
} txn_log_tp;

/* A TransactionLogValue. */
typedef struct txn_log_value {
	int16_t version;           /* 0 or 1 */
	int64_t producer_id;
	int64_t prev_producer_id;  /* v1 tag 0; -1 when absent */
	int64_t next_producer_id;  /* v1 tag 1; -1 when absent */
	int16_t producer_epoch;
	int32_t timeout_ms;
	int8_t status;             /* TransactionState id */
	bool partitions_null;      /* transaction_partitions is null */
	int32_t ntps;
	txn_log_tp *tps;           /* flattened; see txn_value_encode for order */
	int64_t last_update_ms;
	int64_t start_ms;
	int16_t client_tv;         /* v1 tag 2; 0 when absent */
} txn_log_value;

/*
 * Decode a key (len bytes): *id gets a view into p. Returns 0,
 * PROTO_ERR_VERSION for a record type other than 0 (Kafka skips such
 * records as an unknown key version), PROTO_ERR_UNDERFLOW /
 * PROTO_ERR_INVALID for malformed bytes (a null id, bytes left over).
 */
int txn_key_decode(const uint8_t *p, int32_t len, proto_str *id);

/* Append the key of transactional id `id` (Kafka's TransactionLog.keyToBytes). */
void txn_key_encode(proto_writer *w, proto_str id);

/*
 * Decode a value (len bytes, not a tombstone). The partitions are
 * flattened into out->tps, allocated in a (topic names are views into p).
 * Returns 0, PROTO_ERR_VERSION for a version outside 0-1, PROTO_ERR_INVALID
 * for malformed bytes (a null topic, a status id above 7, bytes left over),
 * PROTO_ERR_UNDERFLOW when short, PROTO_ERR_NOMEM when the arena fails.
 */
int txn_value_decode(const uint8_t *p, int32_t len, proto_arena *a, txn_log_value *out);

/*
 * Append the value v in v->version (0 or 1). Consecutive entries of v->tps
 * with the same topic become one partitions entry, so callers keep the
 * partitions grouped by topic. v->partitions_null writes a null array (and
 * ignores tps). In v1 a tagged field is written only when it differs from
 * its default, in tag order, as Kafka's generated code does.
 */
void txn_value_encode(proto_writer *w, const txn_log_value *v);

#endif
