/*
 * backend.h - what a controller back end implements and what the common
 * part (ctl.c: the controller thread, its job queue and the event queue)
 * gives it. Private to controller/.
 *
 * Every back end function runs on the controller thread, one at a time, so
 * a back end needs no locks of its own for its state. It may block (file
 * writes, ZooKeeper calls): nothing else waits on this thread but ctl_open.
 */
#ifndef SAMSA_CONTROLLER_BACKEND_H
#define SAMSA_CONTROLLER_BACKEND_H

#include "controller/ctl.h"

typedef struct ctl_backend_ops {
	/* Load the initial metadata and queue its events (ctl.h, ctl_open).
	 * *state gets the back end's state. Returns 0 or -errno. */
	int (*start)(ctl *c, const ctl_options *o, void **state);
	/* Carry out op (ctl.h's rules), queue the events it causes and fill
	 * r (id and type are set already). */
	void (*run)(ctl *c, void *state, const ctl_op *op, ctl_result *r);
	/* Free the state (the thread is about to end). */
	void (*stop)(ctl *c, void *state);
} ctl_backend_ops;

/* Set the cluster id ctl_cluster_id reports (from start, before it
 * returns). */
void ctl_set_cluster_id(ctl *c, const char *id);

extern const ctl_backend_ops ctl_local_backend;
extern const ctl_backend_ops ctl_zk_backend; /* zk_backend.h */

/* The back end's state (what start gave), NULL before start returned. For
 * work posted with ctl_post, which runs on the controller thread. */
void *ctl_backend_state(ctl *c);

/* Queue e for the loop (takes it over) and wake the loop. Any thread. */
void ctl_emit(ctl *c, ctl_event *e);
/* A zeroed event of type t; NULL when out of memory. */
ctl_event *ctl_event_new(ctl_event_type t);
/* Queue events describing t: CTL_EV_TOPIC with a deep copy of it. Returns 0
 * or -ENOMEM (nothing queued). */
int ctl_emit_topic(ctl *c, const ctl_topic *t);
int ctl_emit_topic_deleted(ctl *c, const ctl_topic *t);
int ctl_emit_partition(ctl *c, const ctl_topic *t, const ctl_partition *p);
/* CTL_EV_BROKERS with a copy of v[0..n). */
int ctl_emit_brokers(ctl *c, const ctl_broker *v, int32_t n);
int ctl_emit_controller(ctl *c, int32_t id, int32_t epoch);
int ctl_emit_broker_configs(ctl *c, int32_t broker_id, const ctl_config_entry *configs, int32_t n);
/* CTL_EV_ACLS with a copy of r. */
int ctl_emit_acls(ctl *c, const ctl_acl_resource *r);
/* CTL_EV_CLIENT_CONFIGS of entity with a copy of configs[0..n) (n 0 and
 * version -1: gone). */
int ctl_emit_client_configs(ctl *c, const char *entity, const ctl_config_entry *configs,
			    int32_t n, int32_t version);

/* Run fn(c, arg) on the controller thread after what is queued now (a
 * ZooKeeper watch hands its work over this way). Any thread. Returns 0 or
 * -ENOMEM. */
int ctl_post(ctl *c, void (*fn)(ctl *c, void *arg), void *arg);

#endif
