/*
 * err.h - Kafka's protocol error codes (Apache Kafka 4.3, clients'
 * org.apache.kafka.common.protocol.Errors; protocol guide "Error Codes").
 * They are used only at the edge, in responses; internal code returns 0 or
 * a negative PROTO_ERR_* / -errno.
 *
 * One list, PROTO_KAFKA_ERRORS, gives code, name and whether Kafka's
 * exception for it is a RetriableException (the "Retriable" column of the
 * protocol guide); the enum and the lookup table in err.c both come from it.
 */
#ifndef SAMSA_PROTOCOL_ERR_H
#define SAMSA_PROTOCOL_ERR_H

#include <stdbool.h>

/* X(code, NAME, retriable) */
#define PROTO_KAFKA_ERRORS(X) \
	X(  -1, UNKNOWN_SERVER_ERROR,                  false) \
	X(   0, NONE,                                  false) \
	X(   1, OFFSET_OUT_OF_RANGE,                   false) \
	X(   2, CORRUPT_MESSAGE,                       true ) \
	X(   3, UNKNOWN_TOPIC_OR_PARTITION,            true ) \
	X(   4, INVALID_FETCH_SIZE,                    false) \
	X(   5, LEADER_NOT_AVAILABLE,                  true ) \
	X(   6, NOT_LEADER_OR_FOLLOWER,                true ) \
	X(   7, REQUEST_TIMED_OUT,                     true ) \
	X(   8, BROKER_NOT_AVAILABLE,                  false) \
	X(   9, REPLICA_NOT_AVAILABLE,                 true ) \
	X(  10, MESSAGE_TOO_LARGE,                     false) \
	X(  11, STALE_CONTROLLER_EPOCH,                false) \
	X(  12, OFFSET_METADATA_TOO_LARGE,             false) \
	X(  13, NETWORK_EXCEPTION,                     true ) \
	X(  14, COORDINATOR_LOAD_IN_PROGRESS,          true ) \
	X(  15, COORDINATOR_NOT_AVAILABLE,             true ) \
	X(  16, NOT_COORDINATOR,                       true ) \
	X(  17, INVALID_TOPIC_EXCEPTION,               false) \
	X(  18, RECORD_LIST_TOO_LARGE,                 false) \
	X(  19, NOT_ENOUGH_REPLICAS,                   true ) \
	X(  20, NOT_ENOUGH_REPLICAS_AFTER_APPEND,      true ) \
	X(  21, INVALID_REQUIRED_ACKS,                 false) \
	X(  22, ILLEGAL_GENERATION,                    false) \
	X(  23, INCONSISTENT_GROUP_PROTOCOL,           false) \
	X(  24, INVALID_GROUP_ID,                      false) \
	X(  25, UNKNOWN_MEMBER_ID,                     false) \
	X(  26, INVALID_SESSION_TIMEOUT,               false) \
	X(  27, REBALANCE_IN_PROGRESS,                 false) \
	X(  28, INVALID_COMMIT_OFFSET_SIZE,            false) \
	X(  29, TOPIC_AUTHORIZATION_FAILED,            false) \
	X(  30, GROUP_AUTHORIZATION_FAILED,            false) \
	X(  31, CLUSTER_AUTHORIZATION_FAILED,          false) \
	X(  32, INVALID_TIMESTAMP,                     false) \
	X(  33, UNSUPPORTED_SASL_MECHANISM,            false) \
	X(  34, ILLEGAL_SASL_STATE,                    false) \
	X(  35, UNSUPPORTED_VERSION,                   false) \
	X(  36, TOPIC_ALREADY_EXISTS,                  false) \
	X(  37, INVALID_PARTITIONS,                    false) \
	X(  38, INVALID_REPLICATION_FACTOR,            false) \
	X(  39, INVALID_REPLICA_ASSIGNMENT,            false) \
	X(  40, INVALID_CONFIG,                        false) \
	X(  41, NOT_CONTROLLER,                        true ) \
	X(  42, INVALID_REQUEST,                       false) \
	X(  43, UNSUPPORTED_FOR_MESSAGE_FORMAT,        false) \
	X(  44, POLICY_VIOLATION,                      false) \
	X(  45, OUT_OF_ORDER_SEQUENCE_NUMBER,          false) \
	X(  46, DUPLICATE_SEQUENCE_NUMBER,             false) \
	X(  47, INVALID_PRODUCER_EPOCH,                false) \
	X(  48, INVALID_TXN_STATE,                     false) \
	X(  49, INVALID_PRODUCER_ID_MAPPING,           false) \
	X(  50, INVALID_TRANSACTION_TIMEOUT,           false) \
	X(  51, CONCURRENT_TRANSACTIONS,               true ) \
	X(  52, TRANSACTION_COORDINATOR_FENCED,        false) \
	X(  53, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, false) \
	X(  54, SECURITY_DISABLED,                     false) \
	X(  55, OPERATION_NOT_ATTEMPTED,               false) \
	X(  56, KAFKA_STORAGE_ERROR,                   true ) \
	X(  57, LOG_DIR_NOT_FOUND,                     false) \
	X(  58, SASL_AUTHENTICATION_FAILED,            false) \
	X(  59, UNKNOWN_PRODUCER_ID,                   false) \
	X(  60, REASSIGNMENT_IN_PROGRESS,              false) \
	X(  61, DELEGATION_TOKEN_AUTH_DISABLED,        false) \
	X(  62, DELEGATION_TOKEN_NOT_FOUND,            false) \
	X(  63, DELEGATION_TOKEN_OWNER_MISMATCH,       false) \
	X(  64, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,  false) \
	X(  65, DELEGATION_TOKEN_AUTHORIZATION_FAILED, false) \
	X(  66, DELEGATION_TOKEN_EXPIRED,              false) \
	X(  67, INVALID_PRINCIPAL_TYPE,                false) \
	X(  68, NON_EMPTY_GROUP,                       false) \
	X(  69, GROUP_ID_NOT_FOUND,                    false) \
	X(  70, FETCH_SESSION_ID_NOT_FOUND,            true ) \
	X(  71, INVALID_FETCH_SESSION_EPOCH,           true ) \
	X(  72, LISTENER_NOT_FOUND,                    true ) \
	X(  73, TOPIC_DELETION_DISABLED,               false) \
	X(  74, FENCED_LEADER_EPOCH,                   true ) \
	X(  75, UNKNOWN_LEADER_EPOCH,                  true ) \
	X(  76, UNSUPPORTED_COMPRESSION_TYPE,          false) \
	X(  77, STALE_BROKER_EPOCH,                    false) \
	X(  78, OFFSET_NOT_AVAILABLE,                  true ) \
	X(  79, MEMBER_ID_REQUIRED,                    false) \
	X(  80, PREFERRED_LEADER_NOT_AVAILABLE,        true ) \
	X(  81, GROUP_MAX_SIZE_REACHED,                false) \
	X(  82, FENCED_INSTANCE_ID,                    false) \
	X(  83, ELIGIBLE_LEADERS_NOT_AVAILABLE,        true ) \
	X(  84, ELECTION_NOT_NEEDED,                   true ) \
	X(  85, NO_REASSIGNMENT_IN_PROGRESS,           false) \
	X(  86, GROUP_SUBSCRIBED_TO_TOPIC,             false) \
	X(  87, INVALID_RECORD,                        false) \
	X(  88, UNSTABLE_OFFSET_COMMIT,                true ) \
	X(  89, THROTTLING_QUOTA_EXCEEDED,             true ) \
	X(  90, PRODUCER_FENCED,                       false) \
	X(  91, RESOURCE_NOT_FOUND,                    false) \
	X(  92, DUPLICATE_RESOURCE,                    false) \
	X(  93, UNACCEPTABLE_CREDENTIAL,               false) \
	X(  94, INCONSISTENT_VOTER_SET,                false) \
	X(  95, INVALID_UPDATE_VERSION,                false) \
	X(  96, FEATURE_UPDATE_FAILED,                 false) \
	X(  97, PRINCIPAL_DESERIALIZATION_FAILURE,     false) \
	X(  98, SNAPSHOT_NOT_FOUND,                    false) \
	X(  99, POSITION_OUT_OF_RANGE,                 false) \
	X( 100, UNKNOWN_TOPIC_ID,                      true ) \
	X( 101, DUPLICATE_BROKER_REGISTRATION,         false) \
	X( 102, BROKER_ID_NOT_REGISTERED,              false) \
	X( 103, INCONSISTENT_TOPIC_ID,                 true ) \
	X( 104, INCONSISTENT_CLUSTER_ID,               false) \
	X( 105, TRANSACTIONAL_ID_NOT_FOUND,            false) \
	X( 106, FETCH_SESSION_TOPIC_ID_ERROR,          true ) \
	X( 107, INELIGIBLE_REPLICA,                    false) \
	X( 108, NEW_LEADER_ELECTED,                    false) \
	X( 109, OFFSET_MOVED_TO_TIERED_STORAGE,        false) \
	X( 110, FENCED_MEMBER_EPOCH,                   false) \
	X( 111, UNRELEASED_INSTANCE_ID,                false) \
	X( 112, UNSUPPORTED_ASSIGNOR,                  false) \
	X( 113, STALE_MEMBER_EPOCH,                    false) \
	X( 114, MISMATCHED_ENDPOINT_TYPE,              false) \
	X( 115, UNSUPPORTED_ENDPOINT_TYPE,             false) \
	X( 116, UNKNOWN_CONTROLLER_ID,                 false) \
	X( 117, UNKNOWN_SUBSCRIPTION_ID,               false) \
	X( 118, TELEMETRY_TOO_LARGE,                   false) \
	X( 119, INVALID_REGISTRATION,                  false) \
	X( 120, TRANSACTION_ABORTABLE,                 false) \
	X( 121, INVALID_RECORD_STATE,                  false) \
	X( 122, SHARE_SESSION_NOT_FOUND,               true ) \
	X( 123, INVALID_SHARE_SESSION_EPOCH,           true ) \
	X( 124, FENCED_STATE_EPOCH,                    false) \
	X( 125, INVALID_VOTER_KEY,                     false) \
	X( 126, DUPLICATE_VOTER,                       false) \
	X( 127, VOTER_NOT_FOUND,                       false) \
	X( 128, INVALID_REGULAR_EXPRESSION,            false) \
	X( 129, REBOOTSTRAP_REQUIRED,                  false) \
	X( 130, STREAMS_INVALID_TOPOLOGY,              false) \
	X( 131, STREAMS_INVALID_TOPOLOGY_EPOCH,        false) \
	X( 132, STREAMS_TOPOLOGY_FENCED,               false) \
	X( 133, SHARE_SESSION_LIMIT_REACHED,           true )

enum kafka_error {
#define PROTO_KERR_ENUM(code, name, retriable) KERR_##name = (code),
	PROTO_KAFKA_ERRORS(PROTO_KERR_ENUM)
#undef PROTO_KERR_ENUM
};

/* Highest code in the list (a test checks the list is dense up to it). */
#define KERR_MAX KERR_SHARE_SESSION_LIMIT_REACHED

/* Kafka's name of an error code ("CORRUPT_MESSAGE"); "UNKNOWN" for a code
 * not in the list. Static string. */
const char *proto_err_name(int code);

/* True when Kafka's clients may retry the request that got this code. False
 * for unknown codes. */
bool proto_err_retriable(int code);

#endif
