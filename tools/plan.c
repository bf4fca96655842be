/*
 * plan.c - the drain plan (see plan.h). Counts are kept per live broker in
 * two arrays indexed like live[]: O(partitions x replicas x brokers), a
 * few milliseconds for a large cluster.
 */
#include "tools/plan.h"

#include <stdlib.h>
#include <string.h>

static int32_t index_of(const int32_t *ids, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	return -1;
}

/* Whether live[k] is a better replacement than live[b]: fewer replicas,
 * then (for a first slot) fewer first slots, then the lower id. */
static int better(int32_t k, int32_t b, int first_slot, const int32_t *load, const int32_t *first,
		  const int32_t *live)
{
	if (load[k] != load[b])
		return load[k] < load[b];
	if (first_slot && first[k] != first[b])
		return first[k] < first[b];
	return live[k] < live[b];
}

int adm_plan_drain(adm_plan_partition *parts, int32_t nparts, int32_t drained, const int32_t *live,
		   int32_t nlive)
{
	int32_t *load = calloc((size_t)(nlive ? nlive : 1), sizeof(int32_t));
	int32_t *first = calloc((size_t)(nlive ? nlive : 1), sizeof(int32_t));
	if (!load || !first) {
		free(load);
		free(first);
		return nparts > 0 ? 1 : 0;
	}
	for (int32_t p = 0; p < nparts; p++)
		for (int32_t r = 0; r < parts[p].nreplicas; r++) {
			int32_t k = index_of(live, nlive, parts[p].replicas[r]);
			if (k >= 0) {
				load[k]++;
				if (r == 0)
					first[k]++;
			}
		}
	int rc = 0;
	for (int32_t p = 0; p < nparts && rc == 0; p++) {
		adm_plan_partition *pp = &parts[p];
		memcpy(pp->target, pp->replicas, sizeof(int32_t) * (size_t)pp->nreplicas);
		pp->moved = 0;
		int32_t slot = index_of(pp->replicas, pp->nreplicas, drained);
		if (slot < 0)
			continue;
		int32_t best = -1;
		for (int32_t k = 0; k < nlive; k++) {
			if (live[k] == drained || index_of(pp->replicas, pp->nreplicas, live[k]) >= 0)
				continue;
			if (best < 0 || better(k, best, slot == 0, load, first, live))
				best = k;
		}
		if (best < 0) {
			rc = (int)p + 1;
			break;
		}
		pp->target[slot] = live[best];
		pp->moved = 1;
		load[best]++;
		if (slot == 0)
			first[best]++;
	}
	free(load);
	free(first);
	return rc;
}
