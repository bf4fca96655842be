/*
 * markers.c - a transaction's end markers, delivered and retried
 * (markers.h).
 */
#include "broker/txn/markers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/ratelog.h"
#include "protocol/err.h"

enum { PART_IDLE, PART_IN_FLIGHT, PART_BACKOFF, PART_DONE };

typedef struct part {
	char *topic;
	int32_t topic_len;
	int32_t partition;
	int state;
} part;

typedef struct delivery delivery;

struct txn_marker_job {
	brk_loop *loop;
	const txn_marker_env *env;
	txn_marker_cb cb;
	char *txn_id;
	txn_marker_batch m; /* the marker fields (leader and targets unused) */
	part *parts;
	int32_t nparts, ndone;
	uint64_t timer;
	bool running;       /* inside run(): completion waits for its end */
	bool starting;      /* inside txn_markers_start: no complete callback */
	delivery *deliveries; /* in flight */
};

struct delivery {
	txn_marker_job *job; /* NULL once the job is cancelled */
	delivery *next;
	txn_marker_batch b;
	int32_t *part_of;    /* b.targets[i] is job->parts[part_of[i]] */
};

static void run(txn_marker_job *job);

static void unlink_delivery(txn_marker_job *job, delivery *d)
{
	for (delivery **pp = &job->deliveries; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
}

static void delivery_free(delivery *d)
{
	free(d->b.targets);
	free(d->part_of);
	free(d);
}

static void job_free(txn_marker_job *job)
{
	if (job->timer)
		brk_timer_cancel(job->loop, job->timer);
	for (delivery *d = job->deliveries; d; d = d->next)
		d->job = NULL; /* it finishes unseen */
	for (int32_t i = 0; i < job->nparts; i++)
		free(job->parts[i].topic);
	free(job->parts);
	free(job->txn_id);
	free(job);
}

static void part_done(txn_marker_job *job, part *p)
{
	if (p->state == PART_DONE)
		return;
	p->state = PART_DONE;
	job->ndone++;
	if (job->cb.partition_done)
		job->cb.partition_done(job->cb.arg, p->topic, p->topic_len, p->partition);
}

static void on_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	txn_marker_job *job = arg;
	job->timer = 0;
	for (int32_t i = 0; i < job->nparts; i++)
		if (job->parts[i].state == PART_BACKOFF)
			job->parts[i].state = PART_IDLE;
	run(job);
}

/* After a round or a delivery: complete, or arm the backoff for partitions
 * waiting on it. Returns true when the job is complete. */
static bool settle(txn_marker_job *job)
{
	if (job->ndone == job->nparts)
		return true;
	bool backoff = false;
	for (int32_t i = 0; i < job->nparts && !backoff; i++)
		backoff = job->parts[i].state == PART_BACKOFF;
	if (backoff && !job->timer)
		job->timer = brk_timer_add(job->loop, job->env->retry_backoff_ms, on_timer, job);
	return false;
}

/* The end of a round or of a delivery outside one: complete the job when
 * every partition is done (not inside txn_markers_start: its caller sees
 * TXN_MARKERS_DONE). */
static void finish_step(txn_marker_job *job)
{
	if (!settle(job) || job->starting)
		return;
	txn_marker_cb cb = job->cb;
	job_free(job);
	if (cb.complete)
		cb.complete(cb.arg);
}

/* Kafka's TransactionMarkerRequestCompletionHandler, per partition. */
static void apply_result(txn_marker_job *job, part *p, int16_t err)
{
	if (p->state != PART_IN_FLIGHT)
		return;
	if (err == KERR_NONE) {
		part_done(job, p);
		return;
	}
	if (err == KERR_INVALID_PRODUCER_EPOCH || err == KERR_TRANSACTION_COORDINATOR_FENCED) {
		fprintf(stderr,
			"samsa: transactional id %s: the %s marker for %s-%d was refused (error %d): "
			"skipped\n",
			job->txn_id, job->m.commit ? "commit" : "abort", p->topic, (int)p->partition, err);
		part_done(job, p);
		return;
	}
	static brk_ratelog rl = BRK_RATELOG_INIT; /* a partition without a leader for a while */
	brk_ratelog_printf(&rl,
			   "samsa: transactional id %s: the %s marker for %s-%d failed (error %d): "
			   "retried\n",
			   job->txn_id, job->m.commit ? "commit" : "abort", p->topic, (int)p->partition,
			   err);
	p->state = PART_BACKOFF;
}

static void on_delivered(void *arg, txn_marker_batch *b)
{
	delivery *d = arg;
	txn_marker_job *job = d->job;
	if (!job) {
		delivery_free(d);
		return;
	}
	unlink_delivery(job, d);
	for (int32_t i = 0; i < b->ntargets; i++)
		apply_result(job, &job->parts[d->part_of[i]], b->targets[i].error);
	delivery_free(d);
	if (!job->running)
		finish_step(job);
}

/* A delivery for leader with room for n partitions; NULL on ENOMEM. */
static delivery *delivery_new(txn_marker_job *job, int32_t leader, int32_t n)
{
	delivery *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->b = job->m;
	d->b.leader = leader;
	d->b.targets = calloc((size_t)n, sizeof(*d->b.targets));
	d->part_of = calloc((size_t)n, sizeof(*d->part_of));
	if (!d->b.targets || !d->part_of) {
		delivery_free(d);
		return NULL;
	}
	d->job = job;
	return d;
}

static void add_target(delivery *d, txn_marker_job *job, int32_t i)
{
	part *p = &job->parts[i];
	d->b.targets[d->b.ntargets] = (txn_marker_target){ p->topic, p->topic_len, p->partition, 0 };
	d->part_of[d->b.ntargets++] = i;
}

/* Hand d to the environment; on a refusal its partitions back off. */
static void send_delivery(txn_marker_job *job, delivery *d)
{
	for (int32_t i = 0; i < d->b.ntargets; i++)
		job->parts[d->part_of[i]].state = PART_IN_FLIGHT;
	d->next = job->deliveries;
	job->deliveries = d;
	if (job->env->deliver(job->env->arg, &d->b, on_delivered, d) < 0) {
		unlink_delivery(job, d);
		for (int32_t i = 0; i < d->b.ntargets; i++)
			job->parts[d->part_of[i]].state = PART_BACKOFF;
		delivery_free(d);
	}
}

/* One round over the idle partitions. */
static void run(txn_marker_job *job)
{
	job->running = true;
	const txn_marker_env *env = job->env;
	int32_t *loc = calloc((size_t)(job->nparts ? job->nparts : 1), sizeof(*loc));
	for (int32_t i = 0; i < job->nparts; i++) {
		part *p = &job->parts[i];
		if (p->state != PART_IDLE)
			continue;
		if (!loc) {
			p->state = PART_BACKOFF; /* no memory for the round: later */
			continue;
		}
		loc[i] = env->locate(env->arg, p->topic, p->topic_len, p->partition);
		if (loc[i] == TXN_MARKER_GONE)
			part_done(job, p);
		else if (loc[i] == TXN_MARKER_NO_LEADER)
			p->state = PART_BACKOFF;
	}
	/* Deliveries: one per partition led here, one per other leader. The
	 * states are looked at again: a delivery may finish inside deliver. */
	for (int32_t i = 0; loc && i < job->nparts; i++) {
		if (job->parts[i].state != PART_IDLE)
			continue;
		int32_t n = 1;
		if (loc[i] != TXN_MARKER_HERE)
			for (int32_t k = i + 1; k < job->nparts; k++)
				n += job->parts[k].state == PART_IDLE && loc[k] == loc[i];
		delivery *d = delivery_new(job, loc[i], n);
		if (!d) {
			job->parts[i].state = PART_BACKOFF;
			continue;
		}
		add_target(d, job, i);
		if (loc[i] != TXN_MARKER_HERE)
			for (int32_t k = i + 1; k < job->nparts; k++)
				if (job->parts[k].state == PART_IDLE && loc[k] == loc[i])
					add_target(d, job, k);
		send_delivery(job, d);
	}
	free(loc);
	job->running = false;
	finish_step(job);
}

int txn_markers_start(brk_loop *loop, const txn_marker_env *env, const char *txn_id,
		      const txn_marker_batch *m, const txn_marker_target *targets, int32_t ntargets,
		      const txn_marker_cb *cb, txn_marker_job **out)
{
	*out = NULL;
	txn_marker_job *job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->loop = loop;
	job->env = env;
	job->cb = *cb;
	job->m = *m;
	job->m.targets = NULL;
	job->m.ntargets = 0;
	job->txn_id = strdup(txn_id ? txn_id : "");
	job->parts = calloc((size_t)(ntargets ? ntargets : 1), sizeof(*job->parts));
	if (!job->txn_id || !job->parts) {
		job_free(job);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < ntargets; i++) {
		part *p = &job->parts[i];
		p->topic = malloc((size_t)targets[i].topic_len + 1);
		if (!p->topic) {
			job_free(job);
			return -ENOMEM;
		}
		memcpy(p->topic, targets[i].topic, (size_t)targets[i].topic_len);
		p->topic[targets[i].topic_len] = '\0';
		p->topic_len = targets[i].topic_len;
		p->partition = targets[i].partition;
		job->nparts++;
	}
	job->starting = true;
	run(job);
	job->starting = false;
	if (job->ndone == job->nparts) {
		job_free(job);
		return TXN_MARKERS_DONE;
	}
	*out = job;
	return TXN_MARKERS_PENDING;
}

void txn_markers_cancel(txn_marker_job *job)
{
	if (job)
		job_free(job);
}

int32_t txn_markers_pending(const txn_marker_job *job)
{
	return job ? job->nparts - job->ndone : 0;
}
