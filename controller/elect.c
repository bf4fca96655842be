/*
 * elect.c - election strategies and the leader imbalance (elect.h).
 */
#include "controller/elect.h"

#include <stdlib.h>

static bool in_list(const int32_t *v, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

int32_t ctl_elect_preferred(const ctl_partition *p, ctl_online_fn online, const void *arg)
{
	if (p->nreplicas <= 0 || p->leader_epoch < 0)
		return CTL_NO_LEADER;
	int32_t pref = p->replicas[0];
	return online(arg, pref) && in_list(p->isr, p->nisr, pref) ? pref : CTL_NO_LEADER;
}

int32_t ctl_elect_offline(const ctl_partition *p, bool unclean, ctl_online_fn online,
			  const void *arg, int32_t *isr, int32_t *nisr, bool *was_unclean)
{
	*was_unclean = false;
	if (p->leader_epoch < 0)
		return CTL_NO_LEADER;
	for (int32_t i = 0; i < p->nreplicas; i++) {
		int32_t id = p->replicas[i];
		if (!in_list(p->isr, p->nisr, id) || !online(arg, id))
			continue;
		int32_t n = 0;
		for (int32_t k = 0; k < p->nisr; k++)
			if (online(arg, p->isr[k]))
				isr[n++] = p->isr[k];
		*nisr = n;
		return id;
	}
	if (!unclean)
		return CTL_NO_LEADER;
	for (int32_t i = 0; i < p->nreplicas; i++) {
		if (!online(arg, p->replicas[i]))
			continue;
		isr[0] = p->replicas[i];
		*nisr = 1;
		*was_unclean = true;
		return p->replicas[i];
	}
	return CTL_NO_LEADER;
}

/* Where broker id is, or would go, in v[0..n) (sorted by id). */
static int32_t position(const ctl_imbalance *v, int32_t n, int32_t id)
{
	int32_t lo = 0, hi = n;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (v[mid].broker < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of broker id in v[0..*n) (sorted by id), added when missing;
 * NULL when out of memory. */
static ctl_imbalance *entry_of(ctl_imbalance **v, int32_t *n, int32_t *cap, int32_t id)
{
	int32_t lo = position(*v, *n, id);
	if (lo < *n && (*v)[lo].broker == id)
		return &(*v)[lo];
	if (*n == *cap) {
		int32_t c = *cap ? *cap * 2 : 8;
		ctl_imbalance *g = realloc(*v, (size_t)c * sizeof(*g));
		if (!g)
			return NULL;
		*v = g;
		*cap = c;
	}
	for (int32_t i = *n; i > lo; i--)
		(*v)[i] = (*v)[i - 1];
	(*v)[lo] = (ctl_imbalance){ .broker = id };
	(*n)++;
	return &(*v)[lo];
}

int32_t ctl_imbalance_compute(ctl_topic *const *topics, int32_t ntopics, ctl_imbalance **out)
{
	ctl_imbalance *v = NULL;
	int32_t n = 0, cap = 0;
	for (int32_t t = 0; t < ntopics; t++) {
		if (topics[t]->deleting)
			continue;
		for (int32_t k = 0; k < topics[t]->npartitions; k++) {
			const ctl_partition *p = &topics[t]->partitions[k];
			if (p->nreplicas <= 0)
				continue;
			ctl_imbalance *e = entry_of(&v, &n, &cap, p->replicas[0]);
			if (!e) {
				free(v);
				*out = NULL;
				return -1;
			}
			e->preferred++;
			if (p->leader_epoch >= 0 && p->leader != p->replicas[0])
				e->led_by_others++;
		}
	}
	*out = v;
	return n;
}

bool ctl_imbalance_above(const ctl_imbalance *b, int32_t pct)
{
	return b->preferred > 0 &&
	       (int64_t)b->led_by_others * 100 > (int64_t)pct * (int64_t)b->preferred;
}

int32_t ctl_rebalance_pick(ctl_topic *const *topics, int32_t ntopics, int32_t pct,
			   ctl_online_fn online, const void *arg, ctl_partition_ref **out)
{
	*out = NULL;
	ctl_imbalance *b;
	int32_t nb = ctl_imbalance_compute(topics, ntopics, &b);
	if (nb < 0)
		return -1;
	ctl_partition_ref *v = NULL;
	int32_t n = 0, cap = 0;
	for (int32_t t = 0; t < ntopics && nb > 0; t++) {
		if (topics[t]->deleting)
			continue;
		for (int32_t k = 0; k < topics[t]->npartitions; k++) {
			const ctl_partition *p = &topics[t]->partitions[k];
			if (p->nreplicas <= 0 || p->leader_epoch < 0 || p->leader == p->replicas[0])
				continue;
			int32_t at = position(b, nb, p->replicas[0]); /* counted above */
			if (at >= nb || b[at].broker != p->replicas[0] ||
			    !ctl_imbalance_above(&b[at], pct) ||
			    ctl_elect_preferred(p, online, arg) == CTL_NO_LEADER)
				continue;
			if (n == cap) {
				int32_t c = cap ? cap * 2 : 16;
				ctl_partition_ref *g = realloc(v, (size_t)c * sizeof(*g));
				if (!g) {
					free(v);
					free(b);
					return -1;
				}
				v = g;
				cap = c;
			}
			v[n++] = (ctl_partition_ref){ t, k };
		}
	}
	free(b);
	*out = v;
	return n;
}
