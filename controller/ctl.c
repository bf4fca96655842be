/*
 * ctl.c - the common part of the controller (ctl.h): the controller thread,
 * its job queue (operations from the loop, work posted by a back end's
 * callbacks) and the event queue back to the loop.
 *
 * One mutex guards both queues; the thread sleeps on a condition variable
 * while it has no job. Events are handed to the loop in the order they were
 * emitted.
 */
#include "controller/ctl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/backend.h"

typedef struct ctl_job {
	struct ctl_job *next;
	void (*fn)(ctl *c, void *arg); /* posted work, or NULL for an operation */
	void *arg;
	uint64_t id;
	ctl_op op; /* deep copy; its arrays owned by the job */
} ctl_job;

struct ctl {
	ctl_options opts;
	char *log_dir, *zookeeper_connect; /* owned copies of opts' strings */
	const ctl_backend_ops *backend;
	void *state;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t jobs_cv;   /* a job was queued, or stop */
	pthread_cond_t events_cv; /* an event was queued (ctl_wait_event) */
	pthread_cond_t start_cv;  /* the back end's start finished */
	ctl_job *jobs, *jobs_tail;
	ctl_event *events, *events_tail;
	uint64_t next_id;
	bool stopping;
	bool started;
	int start_rc;
	char cluster_id[64];
};

const char *ctl_cluster_id(const ctl *c)
{
	return c->cluster_id;
}

void *ctl_backend_state(ctl *c)
{
	return c->state;
}

void ctl_set_cluster_id(ctl *c, const char *id)
{
	snprintf(c->cluster_id, sizeof(c->cluster_id), "%s", id);
}

/* ---- events ---- */

ctl_event *ctl_event_new(ctl_event_type t)
{
	ctl_event *e = calloc(1, sizeof(*e));
	if (e)
		e->type = t;
	return e;
}

void ctl_event_free(ctl_event *e)
{
	if (!e)
		return;
	switch (e->type) {
	case CTL_EV_BROKERS:
		free(e->u.brokers.v);
		break;
	case CTL_EV_TOPIC:
		ctl_topic_free(e->u.topic);
		break;
	case CTL_EV_PARTITION:
		ctl_partition_clear(&e->u.partition.state);
		break;
	case CTL_EV_BROKER_CONFIGS:
		ctl_configs_free(e->u.broker_configs.configs, e->u.broker_configs.nconfigs);
		break;
	case CTL_EV_ACLS:
		ctl_acl_resource_clear(&e->u.acls);
		break;
	case CTL_EV_CLIENT_CONFIGS:
		free(e->u.client_configs.entity);
		ctl_configs_free(e->u.client_configs.configs, e->u.client_configs.nconfigs);
		break;
	default:
		break;
	}
	free(e);
}

void ctl_emit(ctl *c, ctl_event *e)
{
	pthread_mutex_lock(&c->mu);
	e->next = NULL;
	if (c->events_tail)
		c->events_tail->next = e;
	else
		c->events = e;
	c->events_tail = e;
	pthread_cond_broadcast(&c->events_cv);
	pthread_mutex_unlock(&c->mu);
	if (c->opts.wakeup)
		c->opts.wakeup(c->opts.wakeup_arg);
}

ctl_event *ctl_next_event(ctl *c)
{
	pthread_mutex_lock(&c->mu);
	ctl_event *e = c->events;
	if (e) {
		c->events = e->next;
		if (!c->events)
			c->events_tail = NULL;
		e->next = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

bool ctl_wait_event(ctl *c, int64_t timeout_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->mu);
	while (!c->events) {
		if (pthread_cond_timedwait(&c->events_cv, &c->mu, &ts) == ETIMEDOUT)
			break;
	}
	bool have = c->events != NULL;
	pthread_mutex_unlock(&c->mu);
	return have;
}

int ctl_emit_topic(ctl *c, const ctl_topic *t)
{
	ctl_event *e = ctl_event_new(CTL_EV_TOPIC);
	if (!e || !(e->u.topic = ctl_topic_copy(t))) {
		free(e);
		return -ENOMEM;
	}
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_topic_deleted(ctl *c, const ctl_topic *t)
{
	ctl_event *e = ctl_event_new(CTL_EV_TOPIC_DELETED);
	if (!e)
		return -ENOMEM;
	memcpy(e->u.deleted.name, t->name, sizeof(e->u.deleted.name));
	memcpy(e->u.deleted.id, t->id, 16);
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_partition(ctl *c, const ctl_topic *t, const ctl_partition *p)
{
	ctl_event *e = ctl_event_new(CTL_EV_PARTITION);
	if (!e)
		return -ENOMEM;
	memcpy(e->u.partition.topic, t->name, sizeof(e->u.partition.topic));
	memcpy(e->u.partition.topic_id, t->id, 16);
	if (ctl_partition_copy(&e->u.partition.state, p) != 0) {
		free(e);
		return -ENOMEM;
	}
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_brokers(ctl *c, const ctl_broker *v, int32_t n)
{
	ctl_event *e = ctl_event_new(CTL_EV_BROKERS);
	if (!e)
		return -ENOMEM;
	e->u.brokers.v = calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
	if (!e->u.brokers.v) {
		free(e);
		return -ENOMEM;
	}
	if (n > 0)
		memcpy(e->u.brokers.v, v, (size_t)n * sizeof(*v));
	e->u.brokers.n = n;
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_acls(ctl *c, const ctl_acl_resource *r)
{
	ctl_event *e = ctl_event_new(CTL_EV_ACLS);
	if (!e || ctl_acl_resource_copy(&e->u.acls, r) != 0) {
		free(e);
		return -ENOMEM;
	}
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_controller(ctl *c, int32_t id, int32_t epoch)
{
	ctl_event *e = ctl_event_new(CTL_EV_CONTROLLER);
	if (!e)
		return -ENOMEM;
	e->u.controller.id = id;
	e->u.controller.epoch = epoch;
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_broker_configs(ctl *c, int32_t broker_id, const ctl_config_entry *configs, int32_t n)
{
	ctl_event *e = ctl_event_new(CTL_EV_BROKER_CONFIGS);
	if (!e)
		return -ENOMEM;
	e->u.broker_configs.broker_id = broker_id;
	e->u.broker_configs.configs = ctl_configs_copy(configs, n);
	if (!e->u.broker_configs.configs) {
		free(e);
		return -ENOMEM;
	}
	e->u.broker_configs.nconfigs = n;
	ctl_emit(c, e);
	return 0;
}

int ctl_emit_client_configs(ctl *c, const char *entity, const ctl_config_entry *configs,
			    int32_t n, int32_t version)
{
	ctl_event *e = ctl_event_new(CTL_EV_CLIENT_CONFIGS);
	if (!e)
		return -ENOMEM;
	e->u.client_configs.entity = strdup(entity);
	e->u.client_configs.configs = ctl_configs_copy(configs, n);
	if (!e->u.client_configs.entity || !e->u.client_configs.configs) {
		ctl_event_free(e);
		return -ENOMEM;
	}
	e->u.client_configs.nconfigs = n;
	e->u.client_configs.version = version;
	ctl_emit(c, e);
	return 0;
}

/* ---- jobs ---- */

static void job_free(ctl_job *j)
{
	if (!j)
		return;
	free((void *)j->op.isr);
	if (j->op.assignments) {
		for (int32_t i = 0; i < j->op.nassignments; i++)
			free((void *)j->op.assignments[i].ids);
		free((void *)j->op.assignments);
	}
	ctl_configs_free((ctl_config_entry *)j->op.configs, j->op.nconfigs);
	free((void *)j->op.acl_name);
	free((void *)j->op.acl_add);
	free((void *)j->op.acl_remove);
	free((void *)j->op.entity);
	free(j);
}

/* Queue j; returns its id (read under the lock: once it is released the
 * thread may run and free j). */
static uint64_t enqueue(ctl *c, ctl_job *j)
{
	pthread_mutex_lock(&c->mu);
	j->next = NULL;
	if (c->jobs_tail)
		c->jobs_tail->next = j;
	else
		c->jobs = j;
	c->jobs_tail = j;
	if (!j->fn)
		j->id = ++c->next_id;
	uint64_t id = j->id;
	pthread_cond_signal(&c->jobs_cv);
	pthread_mutex_unlock(&c->mu);
	return id;
}

int ctl_post(ctl *c, void (*fn)(ctl *c, void *arg), void *arg)
{
	ctl_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fn = fn;
	j->arg = arg;
	enqueue(c, j);
	return 0;
}

uint64_t ctl_submit(ctl *c, const ctl_op *op)
{
	ctl_job *j = calloc(1, sizeof(*j));
	if (!j)
		return 0;
	j->op = *op;
	j->op.assignments = NULL;
	j->op.nassignments = 0;
	j->op.configs = NULL;
	j->op.nconfigs = 0;
	j->op.isr = NULL;
	j->op.nisr = 0;
	j->op.acl_name = NULL;
	j->op.acl_add = j->op.acl_remove = NULL;
	j->op.nacl_add = j->op.nacl_remove = 0;
	if (op->acl_name && !(j->op.acl_name = strdup(op->acl_name)))
		goto nomem;
	if (op->nacl_add > 0) {
		ctl_acl_entry *v = malloc((size_t)op->nacl_add * sizeof(*v));
		if (!v)
			goto nomem;
		memcpy(v, op->acl_add, (size_t)op->nacl_add * sizeof(*v));
		j->op.acl_add = v;
		j->op.nacl_add = op->nacl_add;
	}
	if (op->nacl_remove > 0) {
		ctl_acl_entry *v = malloc((size_t)op->nacl_remove * sizeof(*v));
		if (!v)
			goto nomem;
		memcpy(v, op->acl_remove, (size_t)op->nacl_remove * sizeof(*v));
		j->op.acl_remove = v;
		j->op.nacl_remove = op->nacl_remove;
	}
	j->op.entity = NULL;
	if (op->entity && !(j->op.entity = strdup(op->entity)))
		goto nomem;
	if (op->isr && op->nisr > 0) {
		int32_t *isr = malloc((size_t)op->nisr * sizeof(*isr));
		if (!isr)
			goto nomem;
		memcpy(isr, op->isr, (size_t)op->nisr * sizeof(*isr));
		j->op.isr = isr;
		j->op.nisr = op->nisr;
	}
	if (op->assignments && op->nassignments > 0) {
		ctl_replica_list *a = calloc((size_t)op->nassignments, sizeof(*a));
		if (!a)
			goto nomem;
		j->op.assignments = a;
		for (int32_t i = 0; i < op->nassignments; i++) {
			int32_t n = op->assignments[i].n;
			int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof(*ids));
			if (!ids)
				goto nomem;
			if (n > 0)
				memcpy(ids, op->assignments[i].ids, (size_t)n * sizeof(*ids));
			a[i].ids = ids;
			a[i].n = n;
			j->op.nassignments = i + 1;
		}
	}
	if (op->nconfigs > 0) {
		j->op.configs = ctl_configs_copy(op->configs, op->nconfigs);
		if (!j->op.configs)
			goto nomem;
		j->op.nconfigs = op->nconfigs;
	}
	return enqueue(c, j);
nomem:
	job_free(j);
	return 0;
}

static void run_job(ctl *c, ctl_job *j)
{
	if (j->fn) {
		j->fn(c, j->arg);
		return;
	}
	ctl_event *e = ctl_event_new(CTL_EV_RESULT);
	ctl_result tmp, *r = e ? &e->u.result : &tmp;
	memset(r, 0, sizeof(*r));
	r->id = j->id;
	r->type = j->op.type;
	c->backend->run(c, c->state, &j->op, r);
	if (e)
		ctl_emit(c, e);
	/* Out of memory for the result event: the operation is done but its
	 * result cannot be told; the broker's wait times out. */
}

static void *thread_main(void *arg)
{
	ctl *c = arg;
	int rc = c->backend->start(c, &c->opts, &c->state);
	pthread_mutex_lock(&c->mu);
	c->start_rc = rc;
	c->started = true;
	pthread_cond_broadcast(&c->start_cv);
	while (rc == 0) {
		while (!c->jobs && !c->stopping)
			pthread_cond_wait(&c->jobs_cv, &c->mu);
		if (c->stopping)
			break;
		ctl_job *j = c->jobs;
		c->jobs = j->next;
		if (!c->jobs)
			c->jobs_tail = NULL;
		pthread_mutex_unlock(&c->mu);
		run_job(c, j);
		job_free(j);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		c->backend->stop(c, c->state);
	c->state = NULL;
	return NULL;
}

/* ---- open/close ---- */

static void free_ctl(ctl *c)
{
	while (c->jobs) {
		ctl_job *j = c->jobs;
		c->jobs = j->next;
		job_free(j);
	}
	while (c->events) {
		ctl_event *e = c->events;
		c->events = e->next;
		ctl_event_free(e);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->jobs_cv);
	pthread_cond_destroy(&c->events_cv);
	pthread_cond_destroy(&c->start_cv);
	free(c->log_dir);
	free(c->zookeeper_connect);
	free(c);
}

int ctl_open(const ctl_options *o, ctl **out)
{
	*out = NULL;
	ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *o;
	c->log_dir = strdup(o->log_dir ? o->log_dir : "");
	c->zookeeper_connect = strdup(o->zookeeper_connect ? o->zookeeper_connect : "");
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->jobs_cv, NULL);
	pthread_cond_init(&c->events_cv, NULL);
	pthread_cond_init(&c->start_cv, NULL);
	if (!c->log_dir || !c->zookeeper_connect) {
		free_ctl(c);
		return -ENOMEM;
	}
	c->opts.log_dir = c->log_dir;
	c->opts.zookeeper_connect = c->zookeeper_connect;
	c->backend = c->zookeeper_connect[0] ? &ctl_zk_backend : &ctl_local_backend;
	int rc = pthread_create(&c->thread, NULL, thread_main, c);
	if (rc) {
		free_ctl(c);
		return -rc;
	}
	c->thread_started = true;
	pthread_mutex_lock(&c->mu);
	while (!c->started)
		pthread_cond_wait(&c->start_cv, &c->mu);
	rc = c->start_rc;
	pthread_mutex_unlock(&c->mu);
	if (rc) {
		pthread_join(c->thread, NULL);
		free_ctl(c);
		return rc;
	}
	*out = c;
	return 0;
}

void ctl_close(ctl *c)
{
	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->mu);
		c->stopping = true;
		pthread_cond_signal(&c->jobs_cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->thread, NULL);
	}
	free_ctl(c);
}
