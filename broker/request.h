/*
 * request.h - what a handler sees of one request, and the dispatch table.
 *
 * The connection reads a frame, decodes the request header, and calls the
 * handler of the API key with a brk_request. The handler decodes the body with
 * the generated codec (protocol/gen/messages.h) into req->arena, does the work
 * and encodes the response body into req->out (the connection adds the size
 * and the response header). Requests on one connection are handled one at a
 * time and answered in order; while a request is delayed the connection reads
 * nothing more.
 */
#ifndef SAMSA_BROKER_REQUEST_H
#define SAMSA_BROKER_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/buf.h"

typedef struct brk_conn brk_conn;
typedef struct brk_request brk_request;

struct brk_request {
	brk_conn *conn;
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	proto_str client_id;  /* view into the frame; may be null */
	proto_reader body;    /* the request body, after the header */
	proto_reader body_start; /* body as it was before the handler read it */
	bool retried;         /* the handler runs again (brk_ctl_wait_then_retry) */
	proto_arena *arena;   /* for the decoded request; reset after the response */
	proto_writer *out;    /* the response body goes here */
	int64_t now_ms;       /* wall clock when the request was read */
	int64_t start_ns;     /* monotonic clock (ns) when its handler started, 0 once
			       * it returned (the request quota counts the handler's
			       * time: quota/quota.h) */
	int64_t thread_ns;    /* the handler's time, once it returned */
	bool quota_recorded;  /* the request quota has counted this request */
	/* For a delayed request: called if the connection closes before
	 * completion, so the handler can drop its purgatory entry. */
	void (*cancel)(brk_request *req);
	void *delayed; /* the handler's state while delayed */
};

/* Handler results. */
enum {
	BRK_RESPOND = 0,      /* req->out holds the response body: send it */
	BRK_NO_RESPONSE = 1,  /* nothing to send (Produce acks=0) */
	BRK_DELAYED = 2,      /* the handler calls brk_request_complete() later */
	BRK_CLOSE = -1,       /* the request did not parse: close the connection */
};

typedef int (*brk_handler_fn)(brk_request *req);

/* One entry per API key: the single truth for dispatch and ApiVersions. */
typedef struct brk_api {
	brk_handler_fn handler;   /* NULL: key not served */
	int16_t min_version;      /* lowest version handled */
	int16_t max_version;
	int16_t advertised_min;   /* lowest version advertised (Produce: 0, KAFKA-18659);
				   * BRK_NOT_ADVERTISED: served to other brokers only */
} brk_api;

/* advertised_min of an API left out of ApiVersions (ZooKeeper-mode APIs
 * brokers send each other, which Kafka 4 no longer defines). */
#define BRK_NOT_ADVERTISED (-1)

/* Authorized operations without an authorizer (Metadata, DescribeCluster,
 * DescribeTopicPartitions): every operation Kafka's
 * AclEntry.supportedOperations allows on the resource type, AclOperation
 * codes as bits. Topic: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
 * DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11. Cluster: CREATE 5,
 * ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS
 * 11, IDEMPOTENT_WRITE 12. */
#define BRK_TOPIC_ALL_OPERATIONS ((1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | \
				  (1 << 8) | (1 << 10) | (1 << 11))
#define BRK_CLUSTER_ALL_OPERATIONS ((1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | \
				    (1 << 11) | (1 << 12))

#define BRK_API_KEY_MAX 100
/* Indexed by API key (bounds-check before use). */
extern const brk_api brk_apis[BRK_API_KEY_MAX + 1];

/* How a delayed request ends (brk_request_complete). */
enum {
	BRK_COMPLETE_RESPOND = 0,     /* send req->out */
	BRK_COMPLETE_NO_RESPONSE = 1, /* send nothing (Produce acks=0) */
	BRK_COMPLETE_CLOSE = 2,       /* the answer could not be built: close */
};

/* End a delayed request as how says (BRK_COMPLETE_*) and resume reading
 * the connection (unless it closes). */
void brk_request_complete(brk_request *req, int how);

/* Handlers, one file each under broker/handlers/. */
int brk_handle_api_versions(brk_request *req);
int brk_handle_metadata(brk_request *req);
int brk_handle_produce(brk_request *req);
int brk_handle_fetch(brk_request *req);
int brk_handle_list_offsets(brk_request *req);
int brk_handle_create_topics(brk_request *req);
int brk_handle_delete_topics(brk_request *req);
int brk_handle_delete_records(brk_request *req);
int brk_handle_find_coordinator(brk_request *req);
int brk_handle_join_group(brk_request *req);
int brk_handle_heartbeat(brk_request *req);
int brk_handle_leave_group(brk_request *req);
int brk_handle_sync_group(brk_request *req);
int brk_handle_describe_groups(brk_request *req);
int brk_handle_list_groups(brk_request *req);
int brk_handle_delete_groups(brk_request *req);
int brk_handle_offset_commit(brk_request *req);
int brk_handle_offset_fetch(brk_request *req);
int brk_handle_offset_delete(brk_request *req);
int brk_handle_init_producer_id(brk_request *req);
int brk_handle_add_partitions_to_txn(brk_request *req);
int brk_handle_add_offsets_to_txn(brk_request *req);
int brk_handle_end_txn(brk_request *req);
int brk_handle_write_txn_markers(brk_request *req);
int brk_handle_txn_offset_commit(brk_request *req);
int brk_handle_describe_producers(brk_request *req);
int brk_handle_describe_transactions(brk_request *req);
int brk_handle_list_transactions(brk_request *req);
int brk_handle_describe_configs(brk_request *req);
int brk_handle_alter_configs(brk_request *req);
int brk_handle_incremental_alter_configs(brk_request *req);
int brk_handle_create_partitions(brk_request *req);
int brk_handle_describe_log_dirs(brk_request *req);
int brk_handle_describe_cluster(brk_request *req);
int brk_handle_offset_for_leader_epoch(brk_request *req);
int brk_handle_controlled_shutdown(brk_request *req);
int brk_handle_alter_partition_reassignments(brk_request *req);
int brk_handle_list_partition_reassignments(brk_request *req);
int brk_handle_elect_leaders(brk_request *req);
int brk_handle_describe_topic_partitions(brk_request *req);
int brk_handle_describe_client_quotas(brk_request *req);
int brk_handle_alter_client_quotas(brk_request *req);
int brk_handle_describe_acls(brk_request *req);
int brk_handle_create_acls(brk_request *req);
int brk_handle_delete_acls(brk_request *req);
int brk_handle_sasl_handshake(brk_request *req);
int brk_handle_sasl_authenticate(brk_request *req);
int brk_handle_describe_user_scram_credentials(brk_request *req);
int brk_handle_alter_user_scram_credentials(brk_request *req);

#endif
