/*
 * producer_ids.c - producer id blocks from the controller (producer_ids.h).
 */
#include "broker/producer_ids.h"

#include <stdio.h>
#include <string.h>

#include "protocol/err.h"

void brk_producer_ids_init(brk_producer_ids *pm, brk_cluster *cl)
{
	memset(pm, 0, sizeof(*pm));
	pm->cl = cl;
}

void brk_producer_ids_close(brk_producer_ids *pm)
{
	if (pm->call)
		brk_ctl_forget(pm->cl, pm->call);
	pm->call = 0;
	brk_watchlist_detach_all(&pm->waiters);
}

static void on_block(void *arg, const ctl_result *r)
{
	brk_producer_ids *pm = arg;
	pm->call = 0;
	pm->last_error = r->error;
	if (r->error == KERR_NONE) {
		if (pm->next >= pm->end) {
			pm->next = r->producer_id_start;
			pm->end = r->producer_id_end;
		} else {
			pm->spare_start = r->producer_id_start;
			pm->spare_end = r->producer_id_end;
		}
	} else {
		fprintf(stderr, "samsa: no producer id block from the controller (Kafka error %d)\n",
			r->error);
	}
	brk_watchlist_notify(&pm->waiters, 0);
}

static void ask(brk_producer_ids *pm)
{
	if (pm->call || pm->spare_end > pm->spare_start)
		return;
	ctl_op op = { .type = CTL_OP_PRODUCER_IDS };
	pm->call = brk_ctl_call(pm->cl, &op, on_block, pm);
}

/* Move to the spare block when the current one is used up, and ask for
 * the next when 90% of the current one is gone. */
static void refill(brk_producer_ids *pm)
{
	if (pm->next >= pm->end && pm->spare_end > pm->spare_start) {
		pm->next = pm->spare_start;
		pm->end = pm->spare_end;
		pm->spare_start = pm->spare_end = 0;
	}
	int64_t left = pm->end - pm->next;
	if (left <= CTL_PRODUCER_ID_BLOCK / 10)
		ask(pm);
}

bool brk_producer_ids_ready(brk_producer_ids *pm)
{
	refill(pm);
	return pm->next < pm->end;
}

int16_t brk_producer_ids_next(brk_producer_ids *pm, int64_t *out)
{
	*out = -1;
	if (!brk_producer_ids_ready(pm))
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	*out = pm->next++;
	refill(pm);
	return KERR_NONE;
}
