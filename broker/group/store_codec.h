/*
 * store_codec.h - Kafka's record layouts in __consumer_offsets (the group
 * coordinator's OffsetCommitKey/Value, GroupMetadataKey/Value message
 * definitions in Kafka's group-coordinator module) and the consumer
 * protocol's subscription (ConsumerProtocolSubscription), as pure
 * encoders/decoders with no I/O, so store.c and the unit tests share them.
 *
 * Every key and value starts with its int16 version. Versions 0-3 use the
 * classic encodings (int16-length strings, int32-length bytes and arrays,
 * big endian); version 4 of the values is flexible (compact strings, bytes
 * and arrays, tagged-field sections, KIP-482).
 *
 *   key v0/v1 OffsetCommitKey     group string, topic string, partition int32
 *   key v2    GroupMetadataKey    group string
 *   OffsetCommitValue  v0 offset int64, metadata string, commit_timestamp int64
 *                      v1 v0 + expire_timestamp int64
 *                      v2 as v0
 *                      v3 offset, leader_epoch int32, metadata, commit_timestamp
 *                      v4 v3, flexible
 *   GroupMetadataValue protocol_type string, generation int32, protocol
 *                      nullable string, leader nullable string,
 *                      current_state_timestamp int64 (v2+), members array of
 *                      { member_id, group_instance_id nullable (v3+),
 *                        client_id, client_host, rebalance_timeout int32
 *                        (v1+), session_timeout int32, subscription bytes,
 *                        assignment bytes }; v4 flexible.
 * Kafka 3/4 write key v1, OffsetCommitValue v3 (v1 when an expire timestamp
 * is set, OffsetCommit v2-4 retention) and GroupMetadataValue v3; so do we.
 */
#ifndef SAMSA_BROKER_GROUP_STORE_CODEC_H
#define SAMSA_BROKER_GROUP_STORE_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "protocol/buf.h"

#define GRP_KEY_OFFSET_COMMIT 1  /* version written (0 is read too) */
#define GRP_KEY_GROUP_METADATA 2

/* A decoded key; strings are views into the key bytes. */
typedef struct grp_store_key {
	int16_t version; /* 0/1 offset commit, 2 group metadata */
	proto_str group;
	proto_str topic;   /* offset commit keys only */
	int32_t partition; /* offset commit keys only */
} grp_store_key;

/* Decode a key (len bytes). Returns 0, PROTO_ERR_VERSION for a version
 * other than 0-2 (Kafka skips such records: other coordinators' types), or
 * PROTO_ERR_UNDERFLOW / PROTO_ERR_INVALID for malformed bytes. */
int grp_store_key_decode(const uint8_t *p, int32_t len, grp_store_key *out);

/* Append an OffsetCommitKey (version 1) / GroupMetadataKey (version 2). */
void grp_offset_key_encode(proto_writer *w, proto_str group, proto_str topic, int32_t partition);
void grp_group_key_encode(proto_writer *w, proto_str group);

/* Decode an OffsetCommitValue v0-4 (len bytes): out->metadata is a view
 * into p (not NUL-terminated; the offsets map copies it), leader_epoch -1
 * below v3, expire_timestamp_ms -1 except in v1, record_offset -1 (the
 * caller knows the record's offset).
 * Returns 0 or PROTO_ERR_VERSION / PROTO_ERR_UNDERFLOW / PROTO_ERR_INVALID. */
int grp_offset_value_decode(const uint8_t *p, int32_t len, grp_offset *out);

/* Append an OffsetCommitValue: version 3, or version 1 when
 * v->expire_timestamp_ms != -1 (Kafka's GroupCoordinatorRecordHelpers). */
void grp_offset_value_encode(proto_writer *w, const grp_offset *v);

/* One member of a decoded GroupMetadataValue (views into the value). */
typedef struct grp_store_member {
	proto_str member_id;
	proto_str group_instance_id; /* len -1 = null (and below v3) */
	proto_str client_id;
	proto_str client_host;
	int32_t rebalance_timeout_ms; /* v0: the session timeout, as Kafka */
	int32_t session_timeout_ms;
	proto_bytes subscription;
	proto_bytes assignment;
} grp_store_member;

typedef struct grp_store_group {
	int16_t version;
	proto_str protocol_type;
	int32_t generation;
	proto_str protocol; /* len -1 = null */
	proto_str leader;   /* len -1 = null */
	int64_t current_state_timestamp_ms; /* -1 below v2 */
	int32_t nmembers;
	grp_store_member *members; /* in the arena */
} grp_store_group;

/* Decode a GroupMetadataValue v0-4 (len bytes); the members array is
 * allocated in a. Returns 0, PROTO_ERR_VERSION, PROTO_ERR_UNDERFLOW,
 * PROTO_ERR_INVALID or PROTO_ERR_NOMEM (arena). */
int grp_group_value_decode(const uint8_t *p, int32_t len, proto_arena *a, grp_store_group *out);

/* Append the GroupMetadataValue (version 3) of g: protocol type ("" when
 * none), generation, chosen protocol and leader (null when none), state
 * timestamp, and each member with the subscription of the chosen protocol
 * and its assignment (empty bytes when none), as Kafka's
 * newGroupMetadataRecord. */
void grp_group_value_encode(proto_writer *w, const grp_group *g);

/*
 * Whether a ConsumerProtocolSubscription (versions 0-3: int16 version,
 * topics array of strings, then fields not needed here) names topic.
 * Returns 1 (yes), 0 (no) or a negative PROTO_ERR_* when it does not parse.
 */
int grp_subscription_has_topic(const uint8_t *p, int32_t len, const char *topic, int32_t tlen);

/*
 * Kafka's offset expiry rule (ClassicGroup.offsetExpirationCondition,
 * OffsetExpirationConditionImpl; KIP-211, Kafka 2.1+). Offsets may expire
 * only in an Empty group, or, in a Stable "consumer" group, for topics no
 * member subscribes to (subscribed == 0); in any other case never. An
 * eligible offset with an expire timestamp (OffsetCommit v2-4 retention)
 * expires at that time; otherwise once retention_ms have passed since its
 * base time: in an Empty group the later of its commit time and the time
 * the group became Empty (state_timestamp_ms, -1 when unknown; Kafka takes
 * the state time alone when known, which would expire an offset committed
 * to a long-Empty group at once), in a Stable group its commit time.
 * subscribed: 1 subscribed, 0 not, -1 unknown (grp_subscribed_to_topic).
 */
bool grp_offset_expired(const grp_offset *o, grp_state state, int64_t state_timestamp_ms,
			int subscribed, int64_t retention_ms, int64_t now_ms);

/*
 * Whether a member of g subscribes to topic (tlen bytes), from the
 * ConsumerProtocolSubscription of the group's chosen protocol (Kafka's
 * ClassicGroup.isSubscribedToTopic / computeSubscribedTopics): 1 yes, 0 no
 * (also for an Empty group), -1 unknown (protocol type other than
 * "consumer", no chosen protocol, or a subscription that does not parse).
 */
int grp_subscribed_to_topic(const grp_group *g, const char *topic, int32_t tlen);

#endif
