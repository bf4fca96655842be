/*
 * reassign.c - the replica sets of a partition reassignment (reassign.h).
 * Replica lists are short (a handful of brokers): plain scans.
 */
#include "controller/reassign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"

static bool contains(const int32_t *v, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

void ctl_reassign_sets_free(ctl_reassign_sets *s)
{
	free(s->replicas);
	free(s->adding);
	free(s->removing);
	memset(s, 0, sizeof(*s));
}

bool ctl_reassign_in_progress(const ctl_reassign_sets *s)
{
	return s->nadding > 0 || s->nremoving > 0;
}

int32_t ctl_reassign_origin(const ctl_reassign_sets *s, int32_t *out)
{
	int32_t n = 0;
	for (int32_t i = 0; i < s->nreplicas; i++)
		if (!contains(s->adding, s->nadding, s->replicas[i]))
			out[n++] = s->replicas[i];
	return n;
}

int32_t ctl_reassign_target(const ctl_reassign_sets *s, int32_t *out)
{
	int32_t n = 0;
	for (int32_t i = 0; i < s->nreplicas; i++)
		if (!contains(s->removing, s->nremoving, s->replicas[i]))
			out[n++] = s->replicas[i];
	return n;
}

bool ctl_reassign_all_in(const int32_t *v, int32_t n, const int32_t *isr, int32_t nisr)
{
	for (int32_t i = 0; i < n; i++)
		if (!contains(isr, nisr, v[i]))
			return false;
	return true;
}

int ctl_reassign_to(const ctl_reassign_sets *cur, const int32_t *target, int32_t n,
		    ctl_reassign_sets *out)
{
	memset(out, 0, sizeof(*out));
	size_t cap = (size_t)(n + cur->nreplicas + 1);
	int32_t *ors = malloc((size_t)(cur->nreplicas + 1) * sizeof(*ors));
	out->replicas = malloc(cap * sizeof(int32_t));
	out->adding = malloc(cap * sizeof(int32_t));
	out->removing = malloc(cap * sizeof(int32_t));
	if (!ors || !out->replicas || !out->adding || !out->removing) {
		free(ors);
		ctl_reassign_sets_free(out);
		return -ENOMEM;
	}
	int32_t nors = ctl_reassign_origin(cur, ors);
	for (int32_t i = 0; i < n; i++)
		if (!contains(out->replicas, out->nreplicas, target[i]))
			out->replicas[out->nreplicas++] = target[i];
	for (int32_t i = 0; i < nors; i++)
		if (!contains(out->replicas, out->nreplicas, ors[i]))
			out->replicas[out->nreplicas++] = ors[i];
	for (int32_t i = 0; i < out->nreplicas; i++) {
		int32_t id = out->replicas[i];
		if (!contains(ors, nors, id))
			out->adding[out->nadding++] = id;
		if (!contains(target, n, id))
			out->removing[out->nremoving++] = id;
	}
	free(ors);
	return 0;
}

static bool list_equal(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof(*a)) == 0);
}

bool ctl_reassign_equal(const ctl_reassign_sets *a, const ctl_reassign_sets *b)
{
	return list_equal(a->replicas, a->nreplicas, b->replicas, b->nreplicas) &&
	       list_equal(a->adding, a->nadding, b->adding, b->nadding) &&
	       list_equal(a->removing, a->nremoving, b->removing, b->nremoving);
}

/* ids as "1, 2, 3" into buf. */
static void list_text(const int32_t *v, int32_t n, char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < n && at < cap; i++) {
		int w = snprintf(buf + at, cap - at, "%s%d", i ? ", " : "", (int)v[i]);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

int16_t ctl_reassign_validate(const int32_t *target, int32_t n, const ctl_reassign_sets *cur,
			      bool (*live)(const void *arg, int32_t id), const void *arg,
			      char *msg, size_t cap)
{
	char text[256];
	list_text(target, n, text, sizeof(text));
	if (n <= 0) {
		snprintf(msg, cap, "Empty replica list specified in partition reassignment.");
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	for (int32_t i = 0; i < n; i++)
		if (contains(target, i, target[i])) {
			snprintf(msg, cap, "Duplicate replica ids in partition reassignment replica "
				 "list: [%s]", text);
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	for (int32_t i = 0; i < n; i++)
		if (target[i] < 0) {
			snprintf(msg, cap, "Invalid broker id in replica list: [%s]", text);
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	int32_t *ors = malloc((size_t)((cur ? cur->nreplicas : 0) + 1) * sizeof(*ors));
	if (!ors)
		return KERR_UNKNOWN_SERVER_ERROR;
	int32_t nors = cur ? ctl_reassign_origin(cur, ors) : 0;
	int16_t err = KERR_NONE;
	for (int32_t i = 0; i < n && !err; i++)
		if (!contains(ors, nors, target[i]) && !live(arg, target[i])) {
			snprintf(msg, cap, "Replica assignment has brokers that are not alive. Replica "
				 "list: [%s], broker %d is not alive.", text, (int)target[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	free(ors);
	return err;
}
