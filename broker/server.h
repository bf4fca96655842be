/*
 * server.h - the one global object of the process: configuration and the
 * long-lived parts, each an object of its module hung off this struct
 * (DESIGN.md decision 11). Nothing else in the broker is a mutable global.
 */
#ifndef SAMSA_BROKER_SERVER_H
#define SAMSA_BROKER_SERVER_H

#include <stdbool.h>

#include "broker/cluster.h"
#include "broker/config.h"
#include "broker/dynamic_config.h"
#include "broker/group/group.h"
#include "broker/loop.h"
#include "broker/partitions.h"
#include "broker/peers.h"
#include "broker/producer_ids.h"
#include "broker/txn/txn.h"

typedef struct brk_server {
	brk_config cfg;              /* the effective config (dynamic layers applied) */
	brk_loop *loop;
	brk_cluster cluster;         /* the controller, live brokers */
	brk_partitions partitions;   /* the cluster's partitions, the logs here */
	brk_dynamic_config dynamic;  /* the broker config layers */
	brk_producer_ids producer_ids; /* blocks of producer ids from the controller */
	brk_peers peers;             /* connections to the other brokers */
	grp_coordinator groups;      /* the group coordinator (group/group.h) */
	txn_coordinator txns;        /* the transaction coordinator (txn/txn.h) */
	char cluster_id[64];         /* from meta.properties */
	int lock_fd;                 /* holds the log dir's .lock */
	bool stopping;               /* SIGTERM/SIGINT seen */
} brk_server;

extern brk_server server;

#endif
