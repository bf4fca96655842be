/*
 * server.h - the one global object of the process: configuration and the
 * long-lived parts, each an object of its module hung off this struct
 * (DESIGN.md decision 11). Nothing else in the broker is a mutable global.
 */
#ifndef SAMSA_BROKER_SERVER_H
#define SAMSA_BROKER_SERVER_H

#include <stdbool.h>

#include "broker/acl/authorizer.h"
#include "broker/cleaner.h"
#include "broker/cluster.h"
#include "broker/config.h"
#include "broker/dynamic_config.h"
#include "broker/fetch_session.h"
#include "broker/fetcher.h"
#include "broker/flush.h"
#include "broker/group/group.h"
#include "broker/loop.h"
#include "broker/partitions.h"
#include "broker/peers.h"
#include "broker/producer_ids.h"
#include "broker/quota/conn_rate.h"
#include "broker/quota/quota.h"
#include "broker/retention.h"
#include "broker/security/sasl.h"
#include "broker/txn/txn.h"
#include "protocol/batch.h"

/* The most bytes one produced batch may decompress to while it is
 * validated (handlers/produce.c says why 64 MiB). */
#define BRK_PRODUCE_SCRATCH_MAX (64u << 20)

typedef struct brk_server {
	brk_config cfg;              /* the effective config (dynamic layers applied) */
	brk_loop *loop;
	brk_cluster cluster;         /* the controller, live brokers */
	brk_partitions partitions;   /* the cluster's partitions, the logs here */
	brk_dynamic_config dynamic;  /* the broker config layers */
	brk_producer_ids producer_ids; /* blocks of producer ids from the controller */
	brk_peers peers;             /* connections to the other brokers */
	brk_fetchers fetchers;       /* replica fetchers, one per leader followed */
	brk_flusher flusher;         /* fsyncs and other blocking file work, off the loop */
	brk_retention retention;     /* log.retention.*, delayed segment file deletion */
	brk_cleaner cleaner;         /* compaction (log.cleaner.*) */
	brk_sasl sasl;               /* SASL listeners' mechanisms and credentials */
	fs_cache *fetch_sessions;    /* incremental fetch sessions (KIP-227) */
	/* Produce's decompression scratch for batch validation (loop thread
	 * only): proto_scratch_init(BRK_PRODUCE_SCRATCH_MAX) at start-up,
	 * proto_scratch_trim after each validation, freed at exit. */
	proto_scratch produce_scratch;
	grp_coordinator groups;      /* the group coordinator (group/group.h) */
	txn_coordinator txns;        /* the transaction coordinator (txn/txn.h) */
	brk_quotas quotas;           /* client quotas (quota/quota.h) */
	brk_conn_rate conn_rate;     /* connection creation rates (quota/conn_rate.h) */
	brk_authorizer acl;          /* ACLs (authorizer.class.name; disabled by default) */
	char cluster_id[64];         /* from meta.properties */
	int lock_fd;                 /* holds the log dir's .lock */
	bool stopping;               /* SIGTERM/SIGINT seen */
} brk_server;

extern brk_server server;

#endif
