/*
 * server.h - the one global object of the process: configuration and the
 * long-lived parts. Nothing else in the broker is a mutable global.
 */
#ifndef SAMSA_BROKER_SERVER_H
#define SAMSA_BROKER_SERVER_H

#include <stdbool.h>

#include "broker/config.h"
#include "broker/loop.h"
#include "controller/ctl.h"

typedef struct brk_server {
	brk_config cfg;
	brk_loop *loop;
	ctl *ctl;              /* cluster metadata */
	char cluster_id[64];   /* from meta.properties */
	int lock_fd;           /* holds the log dir's .lock */
	bool stopping;         /* SIGTERM/SIGINT seen */
} brk_server;

extern brk_server server;

/*
 * Partition logs of this broker (broker/partitions.c):
 * open every partition of every topic in server.ctl at start-up, using the
 * log dir's checkpoints and the clean-shutdown marker, and remove the
 * partition directories that belong to no partition of a known topic;
 * flush and write the checkpoints at shutdown. Both return 0 or -errno.
 */
int brk_partitions_open(bool clean);
int brk_partitions_shutdown(void);

#endif
