/*
 * txn_offsets.c - pending transactional offsets of a group (txn_offsets.h)
 * and the group coordinator's side of a transaction's end
 * (grp_txn_completed, group.h), which visits only the groups indexed as
 * having open transactions (grp_txn_track), not every group. A group has
 * few open transactions at a time, so the set is a small array of
 * (producer id, offsets map) searched linearly.
 */
#include "broker/group/txn_offsets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct txn_entry {
	int64_t producer_id;
	int32_t offsets_partition; /* __consumer_offsets partition of its batches */
	grp_offsets *offsets;      /* pending, never NULL */
} txn_entry;

struct grp_txn_set {
	txn_entry *e;
	int32_t n, cap;
};

grp_txn_set *grp_txn_set_new(void) { return calloc(1, sizeof(grp_txn_set)); }

void grp_txn_set_free(grp_txn_set *s)
{
	if (!s)
		return;
	for (int32_t i = 0; i < s->n; i++)
		grp_offsets_free(s->e[i].offsets);
	free(s->e);
	free(s);
}

int32_t grp_txn_set_count(const grp_txn_set *s) { return s ? s->n : 0; }

static int32_t find(const grp_txn_set *s, int64_t producer_id)
{
	for (int32_t i = 0; s && i < s->n; i++)
		if (s->e[i].producer_id == producer_id)
			return i;
	return -1;
}

int grp_txn_put(grp_txn_set *s, int64_t producer_id, int32_t offsets_partition, const char *topic,
		int32_t tlen, int32_t partition, const grp_offset *v)
{
	int32_t i = find(s, producer_id);
	bool created = false;
	if (i < 0) {
		if (s->n == s->cap) {
			int32_t cap = s->cap ? s->cap * 2 : 2;
			txn_entry *ne = realloc(s->e, (size_t)cap * sizeof(*ne));
			if (!ne)
				return -ENOMEM;
			s->e = ne;
			s->cap = cap;
		}
		grp_offsets *o = grp_offsets_new();
		if (!o)
			return -ENOMEM;
		i = s->n++;
		s->e[i] = (txn_entry){ producer_id, offsets_partition, o };
		created = true;
	}
	s->e[i].offsets_partition = offsets_partition;
	if (grp_offsets_put(s->e[i].offsets, topic, tlen, partition, v) < 0) {
		if (created) {
			grp_offsets_free(s->e[i].offsets);
			s->n--;
		}
		return -ENOMEM;
	}
	return 0;
}

bool grp_txn_pending(const grp_txn_set *s, const char *topic, int32_t tlen, int32_t partition)
{
	for (int32_t i = 0; s && i < s->n; i++)
		if (grp_offsets_get(s->e[i].offsets, topic, tlen, partition))
			return true;
	return false;
}

const grp_offset *grp_txn_get(const grp_txn_set *s, int64_t producer_id, const char *topic,
			      int32_t tlen, int32_t partition)
{
	int32_t i = find(s, producer_id);
	return i < 0 ? NULL : grp_offsets_get(s->e[i].offsets, topic, tlen, partition);
}

void grp_txn_forget(grp_txn_set *s, const char *topic, int32_t tlen, int32_t partition)
{
	for (int32_t i = 0; s && i < s->n; i++)
		grp_offsets_delete(s->e[i].offsets, topic, tlen, partition);
}

void grp_txn_forget_all(grp_txn_set *s)
{
	for (int32_t i = 0; s && i < s->n; i++)
		grp_offsets_clear(s->e[i].offsets);
}

int grp_txn_complete(grp_txn_set *s, grp_offsets *committed, int64_t producer_id,
		     int32_t offsets_partition, bool commit)
{
	int32_t i = find(s, producer_id);
	if (i < 0 || s->e[i].offsets_partition != offsets_partition)
		return 0;
	grp_offsets *pending = s->e[i].offsets;
	/* Close the transaction first: the map leaves the set. */
	s->e[i] = s->e[--s->n];
	int rc = 1;
	const char *topic;
	int32_t tlen, partition;
	const grp_offset *o;
	for (int32_t j = 0; commit && (o = grp_offsets_at(pending, j, &topic, &tlen, &partition)); j++) {
		const grp_offset *cur = grp_offsets_get(committed, topic, tlen, partition);
		/* A plain commit whose record came after this one wins. */
		if (cur && cur->record_offset >= 0 && o->record_offset <= cur->record_offset)
			continue;
		if (grp_offsets_put(committed, topic, tlen, partition, o) < 0)
			rc = -ENOMEM;
	}
	grp_offsets_free(pending);
	return rc;
}

const grp_offsets *grp_txn_at(const grp_txn_set *s, int32_t i, int64_t *producer_id)
{
	if (!s || i < 0 || i >= s->n)
		return NULL;
	if (producer_id)
		*producer_id = s->e[i].producer_id;
	return s->e[i].offsets;
}

/* ---- the groups with open transactions, the end of a transaction (group.h) ---- */

void grp_txn_track(grp_group *g)
{
	grp_coordinator *gc = g->coord;
	bool open = grp_txn_set_count(g->txns) > 0;
	if (open == g->txn_tracked)
		return;
	if (!open) {
		brk_strmap_remove(&gc->open_txns, g->group_id, g->group_id_len);
	} else if (brk_strmap_put(&gc->open_txns, g->group_id, g->group_id_len, g) < 0) {
		/* Correct but slow from now on: every group is visited. */
		if (!gc->open_txns_lost)
			fprintf(stderr, "samsa: out of memory indexing the open transactions of "
					"group %s: every group is visited at transaction ends\n",
				g->group_id);
		gc->open_txns_lost = true;
		return;
	}
	g->txn_tracked = open;
}

grp_group *grp_txn_group_at(grp_coordinator *gc, int32_t i)
{
	return gc->open_txns_lost ? grp_at(gc, i) : brk_strmap_at(&gc->open_txns, i);
}

int32_t grp_txn_group_count(const grp_coordinator *gc)
{
	return gc->open_txns_lost ? grp_count(gc) : brk_strmap_count(&gc->open_txns);
}

void grp_txn_completed(grp_coordinator *gc, int32_t offsets_partition, int64_t producer_id,
		       bool commit)
{
	grp_partition *ps = grp_partition_state(gc, offsets_partition);
	if (ps && ps->loading)
		return; /* its load reads the marker from the log */
	/* From the end: a group whose last transaction ends leaves the index. */
	for (int32_t i = grp_txn_group_count(gc) - 1; i >= 0; i--) {
		grp_group *g = grp_txn_group_at(gc, i);
		if (!g || grp_txn_set_count(g->txns) == 0)
			continue;
		if (grp_txn_complete(g->txns, g->offsets, producer_id, offsets_partition, commit) < 0)
			fprintf(stderr,
				"samsa: group %s: out of memory applying the transactional offsets of "
				"producer %lld: some are lost\n",
				g->group_id, (long long)producer_id);
		grp_txn_track(g);
	}
}
