/*
 * cluster.c - the controller's events applied on the loop, and the
 * operations in flight (cluster.h).
 */
#include "broker/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "broker/acl/authorizer.h"
#include "broker/dynamic_config.h"
#include "broker/partitions.h"

static void wakeup(void *arg)
{
	int efd = *(int *)arg;
	uint64_t one = 1;
	ssize_t n = write(efd, &one, sizeof(one));
	(void)n; /* EAGAIN: the counter is already set, the loop will wake */
}

static void on_efd(brk_loop *loop, int fd, int events, void *arg)
{
	(void)loop;
	(void)events;
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof(v));
	(void)n;
	brk_cluster_pump(arg);
}

static void set_brokers(brk_cluster *cl, ctl_broker *v, int32_t n)
{
	free(cl->brokers);
	cl->brokers = v;
	cl->nbrokers = n;
}

static void result(brk_cluster *cl, const ctl_result *r)
{
	for (int32_t i = 0; i < cl->ncalls; i++) {
		if (cl->calls[i].id != r->id)
			continue;
		brk_ctl_pending c = cl->calls[i];
		cl->calls[i] = cl->calls[--cl->ncalls];
		c.fn(c.arg, r);
		return;
	}
	/* forgotten: its requester went away */
}

static void reencoded(void *arg, const ctl_result *r)
{
	(void)arg;
	if (r->error)
		fprintf(stderr, "samsa: dynamic password configs not stored again with "
			"password.encoder.secret: error %d %s\n", r->error, r->msg);
}

/* Passwords read with password.encoder.old.secret are stored again
 * encrypted with password.encoder.secret (Kafka's maybeReEncodePasswords). */
static void reencode_passwords(brk_cluster *cl, int32_t broker_id)
{
	int32_t n;
	ctl_config_entry *e = brk_dynamic_config_reencoded(cl->dynamic, &n);
	if (!e)
		return;
	ctl_op op = { .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = broker_id, .configs = e,
		      .nconfigs = n };
	if (brk_ctl_call(cl, &op, reencoded, NULL))
		fprintf(stderr, "samsa: dynamic password configs read with "
			"password.encoder.old.secret: storing them encrypted with "
			"password.encoder.secret\n");
	ctl_configs_free(e, n);
}

static void apply(brk_cluster *cl, ctl_event *e, int64_t now)
{
	switch (e->type) {
	case CTL_EV_BROKERS:
		set_brokers(cl, e->u.brokers.v, e->u.brokers.n);
		e->u.brokers.v = NULL;
		break;
	case CTL_EV_CONTROLLER:
		cl->controller_id = e->u.controller.id;
		cl->controller_epoch = e->u.controller.epoch;
		break;
	case CTL_EV_TOPIC:
		if (brk_partitions_apply_topic(cl->partitions, e->u.topic, now) != 0)
			fprintf(stderr, "samsa: out of memory applying topic metadata\n");
		e->u.topic = NULL; /* taken over */
		break;
	case CTL_EV_TOPIC_DELETED:
		brk_partitions_remove_topic(cl->partitions, e->u.deleted.name, e->u.deleted.id);
		break;
	case CTL_EV_PARTITION:
		brk_partitions_apply_state(cl->partitions, e->u.partition.topic_id,
					   &e->u.partition.state, now);
		break;
	case CTL_EV_BROKER_CONFIGS:
		brk_dynamic_config_apply(cl->dynamic, e->u.broker_configs.broker_id,
					 e->u.broker_configs.configs, e->u.broker_configs.nconfigs);
		e->u.broker_configs.configs = NULL; /* taken over */
		e->u.broker_configs.nconfigs = 0;
		reencode_passwords(cl, e->u.broker_configs.broker_id);
		break;
	case CTL_EV_CLIENT_CONFIGS:
		if (brk_client_configs_apply(&cl->client_configs, e->u.client_configs.entity,
					     e->u.client_configs.configs,
					     e->u.client_configs.nconfigs,
					     e->u.client_configs.version) != 0)
			fprintf(stderr, "samsa: out of memory applying client configs\n");
		e->u.client_configs.entity = NULL; /* taken over */
		e->u.client_configs.configs = NULL;
		e->u.client_configs.nconfigs = 0;
		break;
	case CTL_EV_RESULT:
		result(cl, &e->u.result);
		break;
	case CTL_EV_ACLS:
		if (brk_authorizer_set(cl->acl, &e->u.acls) != 0)
			fprintf(stderr, "samsa: cannot apply the ACLs of %s\n", e->u.acls.name);
		break;
	}
}

void brk_cluster_pump(brk_cluster *cl)
{
	if (!cl->ctl)
		return;
	bool any = false;
	ctl_event *e;
	while ((e = ctl_next_event(cl->ctl))) {
		apply(cl, e, brk_mono_ms());
		ctl_event_free(e);
		any = true;
	}
	if (any)
		brk_watchlist_notify(&cl->meta_waiters, 0);
}

int brk_cluster_open(brk_cluster *cl, brk_loop *loop, struct brk_partitions *partitions,
		     struct brk_dynamic_config *dynamic, struct brk_authorizer *acl,
		     const ctl_options *o)
{
	memset(cl, 0, sizeof(*cl));
	cl->loop = loop;
	cl->partitions = partitions;
	cl->dynamic = dynamic;
	cl->acl = acl;
	cl->broker_id = o->broker_id;
	cl->local = !o->zookeeper_connect || !o->zookeeper_connect[0];
	cl->controller_id = -1;
	cl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cl->efd < 0)
		return -errno;
	ctl_options opts = *o;
	opts.wakeup = wakeup;
	opts.wakeup_arg = &cl->efd;
	int rc = ctl_open(&opts, &cl->ctl);
	if (!rc)
		rc = brk_loop_watch(loop, cl->efd, BRK_READABLE, on_efd, cl);
	if (rc) {
		ctl_close(cl->ctl);
		cl->ctl = NULL;
		close(cl->efd);
		cl->efd = -1;
		return rc;
	}
	brk_cluster_pump(cl);
	return 0;
}

void brk_cluster_close(brk_cluster *cl)
{
	if (!cl->loop)
		return; /* never opened (zeroed) */
	if (cl->ctl) {
		ctl_close(cl->ctl); /* joins the thread: no wakeup after this */
		cl->ctl = NULL;
	}
	if (cl->efd >= 0) {
		brk_loop_unwatch(cl->loop, cl->efd);
		close(cl->efd);
		cl->efd = -1;
	}
	brk_watchlist_detach_all(&cl->meta_waiters);
	brk_client_configs_free(&cl->client_configs);
	free(cl->brokers);
	free(cl->calls);
	cl->brokers = NULL;
	cl->calls = NULL;
	cl->nbrokers = cl->ncalls = cl->calls_cap = 0;
}

const ctl_broker *brk_cluster_broker(const brk_cluster *cl, int32_t id)
{
	for (int32_t i = 0; i < cl->nbrokers; i++)
		if (cl->brokers[i].id == id)
			return &cl->brokers[i];
	return NULL;
}

bool brk_cluster_alive(const brk_cluster *cl, int32_t id)
{
	return brk_cluster_broker(cl, id) != NULL;
}

bool brk_cluster_is_controller(const brk_cluster *cl)
{
	return cl->controller_id == cl->broker_id;
}

uint64_t brk_ctl_call(brk_cluster *cl, const ctl_op *op, brk_ctl_done_fn fn, void *arg)
{
	if (!cl->ctl)
		return 0;
	if (cl->ncalls == cl->calls_cap) {
		int32_t cap = cl->calls_cap ? cl->calls_cap * 2 : 16;
		brk_ctl_pending *n = realloc(cl->calls, (size_t)cap * sizeof(*n));
		if (!n)
			return 0;
		cl->calls = n;
		cl->calls_cap = cap;
	}
	uint64_t id = ctl_submit(cl->ctl, op);
	if (!id)
		return 0;
	cl->calls[cl->ncalls++] = (brk_ctl_pending){ id, fn, arg };
	return id;
}

void brk_ctl_forget(brk_cluster *cl, uint64_t id)
{
	for (int32_t i = 0; i < cl->ncalls; i++)
		if (cl->calls[i].id == id) {
			cl->calls[i] = cl->calls[--cl->ncalls];
			return;
		}
}
