/*
 * offsets.h - the committed offsets of one group (Kafka's
 * OffsetAndMetadata per TopicPartition, GroupMetadata.offsets): a map from
 * (topic name, partition) to the offset, its leader epoch, the client's
 * metadata string and the commit / expire timestamps.
 *
 * Memory: the map owns copies of every topic name and metadata string.
 * Pointers returned by grp_offsets_get / grp_offsets_at stay valid until
 * the next put or delete on the same map.
 */
#ifndef SAMSA_BROKER_GROUP_OFFSETS_H
#define SAMSA_BROKER_GROUP_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/group/group.h"
#include "protocol/buf.h"

/* One committed offset (Kafka's OffsetAndMetadata). */
typedef struct grp_offset {
	int64_t offset;              /* the next offset the consumer reads */
	int32_t leader_epoch;        /* committed leader epoch, -1 = none (KIP-320) */
	const char *metadata;        /* client metadata, "" when none; NUL-terminated */
	int32_t metadata_len;        /* bytes */
	int64_t commit_timestamp_ms; /* wall clock of the commit */
	int64_t expire_timestamp_ms; /* OffsetCommit v2-4 retention, -1 = none */
	int64_t record_offset;       /* offset of its record in __consumer_offsets
				      * (Kafka's OffsetAndMetadata.recordOffset), -1 = unknown;
				      * decides which of a transactional and a plain commit wins */
} grp_offset;

/*
 * The offset an OffsetCommit or TxnOffsetCommit partition asks to commit
 * (Kafka's OffsetAndMetadata built by the coordinator): offset, leader
 * epoch (-1 = none), the client's metadata (a view into the request; null
 * or empty gives ""), commit time now_ms, expire timestamp expire_ms (-1 =
 * none), record_offset -1 (the store sets it when the record is written).
 */
grp_offset grp_offset_of_commit(int64_t offset, int32_t leader_epoch, proto_str metadata,
				int64_t now_ms, int64_t expire_ms);

/* An empty map; NULL on allocation failure. */
grp_offsets *grp_offsets_new(void);
/* Free the map and everything it owns (NULL is fine). */
void grp_offsets_free(grp_offsets *o);
/* Number of committed offsets. */
int32_t grp_offsets_count(const grp_offsets *o);

/* The committed offset of (topic, partition) (topic is a view of tlen
 * bytes), or NULL when none. */
const grp_offset *grp_offsets_get(const grp_offsets *o, const char *topic, int32_t tlen,
				  int32_t partition);

/* Set (insert or replace) the offset of (topic, partition); the topic and
 * v->metadata (v->metadata_len bytes; NULL = "") are copied.
 * Returns 0 or -ENOMEM (the map is unchanged then). */
int grp_offsets_put(grp_offsets *o, const char *topic, int32_t tlen, int32_t partition,
		    const grp_offset *v);

/* Remove the offset of (topic, partition). Returns true when there was one. */
bool grp_offsets_delete(grp_offsets *o, const char *topic, int32_t tlen, int32_t partition);

/* Remove every offset. */
void grp_offsets_clear(grp_offsets *o);

/* Iterate: i from 0 while it returns non-NULL; *topic (NUL-terminated,
 * *tlen bytes) and *partition get the key. Order is unspecified; a put or
 * delete invalidates the iteration. */
const grp_offset *grp_offsets_at(const grp_offsets *o, int32_t i, const char **topic,
				 int32_t *tlen, int32_t *partition);

#endif
