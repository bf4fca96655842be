/*
 * isr.c - ISR changes asked for by the leader (isr.h).
 */
#include "broker/isr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/server.h"
#include "protocol/err.h"

/* A change in flight: found again by topic id and index, since the topic
 * may be gone when the answer comes. */
typedef struct isr_call {
	uint8_t topic_id[16];
	int32_t partition;
	uint64_t id;
} isr_call;

static void on_altered(void *arg, const ctl_result *r)
{
	isr_call *c = arg;
	brk_partition *p = brk_topic_partition(brk_topic_find_by_id(&server.partitions, c->topic_id),
					       c->partition);
	if (p && p->isr_call == r->id) {
		if (r->error != KERR_NONE && r->error != KERR_INVALID_UPDATE_VERSION &&
		    r->error != KERR_FENCED_LEADER_EPOCH)
			fprintf(stderr, "samsa: ISR change of %s-%d refused (Kafka error %d)\n",
				p->topic->name, (int)p->index, r->error);
		/* INVALID_UPDATE_VERSION / FENCED_LEADER_EPOCH: the controller
		 * changed the partition meanwhile; its new state follows */
		brk_partition_isr_changed(p, r->error == KERR_NONE, r->partition_epoch,
					  &server.partitions.env, brk_mono_ms());
	}
	free(c);
}

void brk_isr_maybe_change(brk_partition *p)
{
	int32_t *isr, n;
	if (!brk_partition_wanted_isr(p, &server.partitions.env, brk_mono_ms(), &isr, &n))
		return;
	isr_call *c = malloc(sizeof(*c));
	if (!c) {
		free(isr);
		return;
	}
	memcpy(c->topic_id, p->topic->id, 16);
	c->partition = p->index;
	ctl_op op = { .type = CTL_OP_ALTER_ISR, .partition = p->index,
		      .leader_epoch = p->leader_epoch, .partition_epoch = p->partition_epoch,
		      .isr = isr, .nisr = n };
	snprintf(op.topic, sizeof(op.topic), "%s", p->topic->name);
	c->id = brk_ctl_call(&server.cluster, &op, on_altered, c);
	if (!c->id || brk_partition_propose_isr(p, isr, n, c->id) != 0) {
		if (c->id)
			brk_ctl_forget(&server.cluster, c->id);
		free(c);
	}
	free(isr);
}

bool brk_replica_fetched(brk_partition *p, int32_t replica, int64_t fetch_offset,
			 int64_t log_start_offset)
{
	if (!brk_partition_follower_fetched(p, replica, fetch_offset, log_start_offset,
					    &server.partitions.env, brk_mono_ms()))
		return false;
	if (!brk_partition_in_isr(p, replica))
		brk_isr_maybe_change(p); /* may expand */
	return true;
}

static int64_t shrink_interval(void)
{
	int64_t every = server.partitions.env.replica_lag_time_max_ms / 2;
	return every > 0 ? every : 1;
}

static void on_shrink(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_topic *t;
	for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)); i++)
		for (int32_t k = 0; k < t->npartitions; k++)
			if (t->partitions[k]->role == BRK_ROLE_LEADER && t->partitions[k]->nfollowers > 0)
				brk_isr_maybe_change(t->partitions[k]);
	server.partitions.isr_timer = brk_timer_add(loop, shrink_interval(), on_shrink, NULL);
}

void brk_isr_start(void)
{
	server.partitions.isr_timer = brk_timer_add(server.loop, shrink_interval(), on_shrink, NULL);
}

void brk_isr_stop(void)
{
	if (server.partitions.isr_timer)
		brk_timer_cancel(server.loop, server.partitions.isr_timer);
	server.partitions.isr_timer = 0;
}
