/*
 * admin.h - one samsa-admin run's view of the cluster: the bootstrap
 * addresses, the connections opened so far, the brokers and controller
 * Metadata names, and the error reporting every command shares.
 *
 * Where requests go, as Kafka's admin client sends them to a ZooKeeper-mode
 * cluster:
 *  - Metadata, DescribeConfigs and IncrementalAlterConfigs of topics,
 *    DescribeCluster: any broker (adm_any: the first bootstrap address that
 *    answers; if a call on it fails, the next one, then the brokers the
 *    last Metadata named);
 *  - DescribeLogDirs and a broker's own configs: that broker (adm_broker,
 *    its address from Metadata);
 *  - CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
 *    AlterPartitionReassignments, ListPartitionReassignments: the
 *    controller (adm_controller_call), found with Metadata. A response
 *    naming NOT_CONTROLLER anywhere (the command says where), or a
 *    controller that cannot be reached or drops the connection, sends the
 *    whole request again to the controller a fresh Metadata names, up to
 *    ADM_CONTROLLER_TRIES times, waiting 100 ms, 200 ms... (at most 1 s)
 *    between tries, and never past the run's timeout (a dead controller
 *    keeps its office until its ZooKeeper session expires). A request answered
 *    partly with NOT_CONTROLLER is sent again whole (the items done the
 *    first time then answer as done already, e.g. TOPIC_ALREADY_EXISTS).
 *
 * Memory: every response and what is decoded from it lives in ctx->arena
 * until adm_fini; commands allocate their requests' arrays there too
 * (adm_alloc).
 *
 * Errors: adm_error prints one line on stderr, "samsa-admin: <command>:
 * <message>", and marks the run failed (adm_status then returns 1).
 * Functions returning int give 0 or -1; on -1 the line is printed already.
 */
#ifndef SAMSA_TOOLS_ADMIN_H
#define SAMSA_TOOLS_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/gen/messages.h"
#include "tools/conn.h"

#define ADM_CONTROLLER_TRIES 60

typedef struct adm_ctx_conn {
	struct adm_ctx_conn *next;
	adm_conn c;
} adm_ctx_conn;

typedef struct adm_ctx {
	const char *cmd;          /* the command, for messages */
	const char *bootstrap;    /* "host:port[,host:port...]" */
	int timeout_ms;           /* per request; also the budget of controller retries */
	const adm_security *sec;  /* how to connect (borrowed); NULL: plaintext */
	proto_arena arena;
	adm_ctx_conn *conns;      /* open (or failed) connections */
	adm_conn *any;            /* the one adm_any returned, NULL before */
	bool failed;              /* adm_error was called */
	bool have_md;             /* md below is set */
	MetadataResponse md;      /* the latest Metadata (brokers, controller) */
} adm_ctx;

void adm_init(adm_ctx *ctx, const char *cmd, const char *bootstrap, int timeout_ms);
/* Close every connection and free the arena. */
void adm_fini(adm_ctx *ctx);

/* Print "samsa-admin: <cmd>: <message>" on stderr; mark the run failed. */
void adm_error(adm_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 after any adm_error, else 0. */
int adm_status(const adm_ctx *ctx);
/* A usage error: "samsa-admin: <cmd>: <message> (see 'samsa-admin <cmd>
 * --help')" on stderr. Returns 2, the exit status for it. */
int adm_usage(adm_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Zeroed memory in ctx->arena; exits the program when memory runs out. */
void *adm_alloc(adm_ctx *ctx, size_t n);
/* A NUL-terminated copy of s (a view) in the arena. */
char *adm_strdup(adm_ctx *ctx, proto_str s);

/* A connection to a bootstrap broker that answered ApiVersions, or NULL
 * (error printed: every address and why it failed). */
adm_conn *adm_any(adm_ctx *ctx);

/*
 * api to any broker: adm_any's, then, if the call fails there, the next
 * bootstrap address, and so on, then the brokers of ctx->md. 0, or -1
 * (error printed).
 */
int adm_any_call(adm_ctx *ctx, const adm_api *api, const void *request, void *response,
		 int16_t *version);

/*
 * Metadata of the named topics (n of them; topics NULL: every topic),
 * never creating one, from any broker; also refreshes ctx->md. 0, or -1
 * (error printed). A topic's own error is in the response.
 */
int adm_metadata(adm_ctx *ctx, const proto_str *topics, int n, MetadataResponse *out,
		 int16_t *version);

/* The connection to broker id (address from ctx->md, fetched if needed),
 * or NULL (error printed). */
adm_conn *adm_broker(adm_ctx *ctx, int32_t id);

/* api to broker id. 0, or -1 (error printed). */
int adm_broker_call(adm_ctx *ctx, int32_t id, const adm_api *api, const void *request,
		    void *response, int16_t *version);

/* true when the decoded response says NOT_CONTROLLER anywhere. */
typedef bool (*adm_not_controller_fn)(const void *response);

/* api to the controller, with the retries above. 0, or -1 (error
 * printed). On 0, not_controller(response) is false. */
int adm_controller_call(adm_ctx *ctx, const adm_api *api, const void *request, void *response,
			int16_t *version, adm_not_controller_fn not_controller);

/* The broker's address in ctx->md, NULL when not listed. */
const MetadataResponse_MetadataResponseBroker *adm_md_broker(const adm_ctx *ctx, int32_t id);

/* Kafka's name of code and its message: "NAME" or "NAME: message". */
const char *adm_errstr(adm_ctx *ctx, int16_t code, proto_str message);

#endif
