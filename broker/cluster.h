/*
 * cluster.h - this broker's link to the controller (controller/ctl.h): it
 * owns the ctl, takes its events on the loop and applies them (live
 * brokers and the controller here; topics and partition states to the
 * partition registry; dynamic broker configs to dynamic_config; client
 * entity configs to client_configs), and it
 * routes the results of operations to whoever submitted them.
 *
 * The controller thread wakes the loop through an eventfd; every event
 * queued by then is applied in order in one go, then the requests waiting
 * for a metadata change (meta_waiters) are woken.
 *
 * Everything runs on the event loop thread.
 */
#ifndef SAMSA_BROKER_CLUSTER_H
#define SAMSA_BROKER_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/client_config.h"
#include "broker/loop.h"
#include "broker/purgatory.h"
#include "controller/ctl.h"

struct brk_partitions;
struct brk_dynamic_config;
struct brk_authorizer;

/* Called on the loop with an operation's result (r valid during the call). */
typedef void (*brk_ctl_done_fn)(void *arg, const ctl_result *r);

typedef struct brk_ctl_pending {
	uint64_t id;
	brk_ctl_done_fn fn;
	void *arg;
} brk_ctl_pending;

typedef struct brk_cluster {
	ctl *ctl;
	int efd;                      /* woken by the controller thread */
	brk_loop *loop;
	struct brk_partitions *partitions;     /* topic and partition events go here */
	struct brk_dynamic_config *dynamic;    /* broker config events go here */
	struct brk_authorizer *acl;            /* ACL events go here */
	int32_t broker_id;            /* this broker */
	bool local;                   /* the local back end: one node, no ZooKeeper */
	ctl_broker *brokers;          /* the live brokers, owned */
	int32_t nbrokers;
	int32_t controller_id;        /* -1 when none is known */
	int32_t controller_epoch;
	brk_ctl_pending *calls;       /* operations in flight */
	int32_t ncalls, calls_cap;
	brk_watchlist meta_waiters;   /* requests waiting for a metadata change */
	brk_client_configs client_configs; /* client entity configs (quotas, SCRAM
					    * credentials): CTL_EV_CLIENT_CONFIGS
					    * go here; listeners register after
					    * brk_cluster_open */
} brk_cluster;

/*
 * Open the controller (ctl_open with o; its wakeup is set here) and apply
 * the initial events: brokers, controller, broker configs, topics (their
 * logs are opened by the partition registry), ACLs (into acl). Returns 0 or
 * -errno.
 */
int brk_cluster_open(brk_cluster *cl, brk_loop *loop, struct brk_partitions *partitions,
		     struct brk_dynamic_config *dynamic, struct brk_authorizer *acl,
		     const ctl_options *o);

/* Close the controller; calls in flight are dropped (their fn never runs).
 * A zeroed brk_cluster (never opened) is a no-op. */
void brk_cluster_close(brk_cluster *cl);

/* Apply every queued event now (also done when the eventfd fires). */
void brk_cluster_pump(brk_cluster *cl);

/* A live broker by id, NULL when it is not registered. */
const ctl_broker *brk_cluster_broker(const brk_cluster *cl, int32_t id);
bool brk_cluster_alive(const brk_cluster *cl, int32_t id);
/* Whether this broker is the active controller. */
bool brk_cluster_is_controller(const brk_cluster *cl);

/*
 * Submit op to the controller; fn(arg, result) runs on the loop when the
 * result arrives, after the events the operation caused (where the back
 * end can order them so). Returns the call id (> 0), or 0 when out of
 * memory (fn will not run).
 */
uint64_t brk_ctl_call(brk_cluster *cl, const ctl_op *op, brk_ctl_done_fn fn, void *arg);
/* The caller goes away: fn will not run for call id (no-op when done). */
void brk_ctl_forget(brk_cluster *cl, uint64_t id);

#endif
