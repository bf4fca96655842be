/*
 * assign.c - replica placement of new partitions (assign.h).
 */
#include "controller/assign.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* A uniform number in [0, n), n > 0. 0 or -errno. */
static int random_below(int32_t n, int32_t *out)
{
	uint32_t v;
	ssize_t got;
	do
		got = getrandom(&v, sizeof(v), 0);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(v))
		return got < 0 ? -errno : -EIO;
	*out = (int32_t)(v % (uint32_t)n);
	return 0;
}

/* Kafka's replicaIndex: the broker index of replica j + 1 (j from 0) after
 * the first one at first, n > 1. */
static int32_t replica_index(int32_t first, int32_t shift, int32_t j, int32_t n)
{
	int32_t step = 1 + (int32_t)(((int64_t)shift + j) % (n - 1));
	return (int32_t)(((int64_t)first + step) % n);
}

typedef struct slot {
	int32_t id;
	const char *rack;
} slot;

static int by_id(const void *a, const void *b)
{
	const slot *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_rack_then_id(const void *a, const void *b)
{
	const slot *x = a, *y = b;
	int c = strcmp(x->rack, y->rack);
	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

static bool has_rack(const char *rack)
{
	return rack && rack[0];
}

/* Kafka's getRackAlternatedBrokerList: v sorted by (rack, id) into one
 * broker of each rack in turn. */
static int rack_alternate(slot *v, int32_t n)
{
	qsort(v, (size_t)n, sizeof(*v), by_rack_then_id);
	int32_t nracks = 0;
	int32_t *start = malloc((size_t)n * sizeof(*start)); /* first index of each rack */
	int32_t *next = malloc((size_t)n * sizeof(*next));   /* next unused of each rack */
	slot *out = malloc((size_t)n * sizeof(*out));
	if (!start || !next || !out) {
		free(start);
		free(next);
		free(out);
		return -ENOMEM;
	}
	for (int32_t i = 0; i < n; i++)
		if (i == 0 || strcmp(v[i].rack, v[i - 1].rack) != 0) {
			start[nracks] = i;
			next[nracks] = i;
			nracks++;
		}
	int32_t k = 0, r = 0;
	while (k < n) {
		int32_t end = r + 1 < nracks ? start[r + 1] : n;
		if (next[r] < end)
			out[k++] = v[next[r]++];
		r = (r + 1) % nracks;
	}
	memcpy(v, out, (size_t)n * sizeof(*v));
	free(start);
	free(next);
	free(out);
	return nracks;
}

static const char *rack_of(const slot *v, int32_t n, int32_t id)
{
	for (int32_t k = 0; k < n; k++)
		if (v[k].id == id)
			return v[k].rack;
	return "";
}

static bool rack_used(const slot *v, int32_t n, const int32_t *row, int32_t nrow, const char *rack)
{
	for (int32_t i = 0; i < nrow; i++)
		if (strcmp(rack_of(v, n, row[i]), rack) == 0)
			return true;
	return false;
}

static bool id_used(const int32_t *row, int32_t nrow, int32_t id)
{
	for (int32_t i = 0; i < nrow; i++)
		if (row[i] == id)
			return true;
	return false;
}

/* The number of distinct racks among row's brokers. */
static int32_t racks_in(const slot *v, int32_t n, const int32_t *row, int32_t nrow)
{
	int32_t count = 0;
	for (int32_t i = 0; i < nrow; i++)
		count += !rack_used(v, n, row, i, rack_of(v, n, row[i]));
	return count;
}

int ctl_assign_replicas(const ctl_assign_broker *brokers, int32_t nbrokers,
			int32_t npartitions, int32_t rf, int32_t fixed_start_index,
			int32_t start_partition, int32_t *out)
{
	if (npartitions < 1 || rf < 1 || rf > nbrokers || start_partition < 0)
		return -EINVAL;
	int32_t n = nbrokers;
	slot *v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	bool rack_aware = true;
	for (int32_t i = 0; i < n; i++) {
		v[i].id = brokers[i].id;
		v[i].rack = brokers[i].rack ? brokers[i].rack : "";
		rack_aware = rack_aware && has_rack(brokers[i].rack);
	}
	int32_t nracks = 1;
	if (rack_aware) {
		nracks = rack_alternate(v, n);
		if (nracks < 0) {
			free(v);
			return nracks;
		}
	} else {
		qsort(v, (size_t)n, sizeof(*v), by_id);
	}
	int32_t start, shift;
	int rc = 0;
	if (fixed_start_index >= 0) {
		start = shift = fixed_start_index;
	} else if ((rc = random_below(n, &start)) != 0 || (rc = random_below(n, &shift)) != 0) {
		free(v);
		return rc;
	}
	int32_t p = start_partition;
	for (int32_t i = 0; i < npartitions; i++, p++) {
		int32_t *row = &out[(size_t)i * (size_t)rf];
		if (p > 0 && p % n == 0)
			shift++;
		int32_t first = (int32_t)(((int64_t)p + start) % n);
		row[0] = v[first].id;
		if (!rack_aware) {
			for (int32_t j = 0; j < rf - 1; j++)
				row[j + 1] = v[replica_index(first, shift, j, n)].id;
			continue;
		}
		int32_t nrow = 1;
		for (int64_t k = 0; nrow < rf; k++) {
			if (k > (int64_t)n * n + n) {
				free(v); /* cannot happen: some broker always fits */
				return -EINVAL;
			}
			const slot *b = &v[replica_index(first, (int32_t)((int64_t)shift * nracks % (n - 1)),
							 (int32_t)k, n)];
			/* Skip a broker whose rack has a replica while some rack
			 * has none, and a broker with a replica while some broker
			 * has none. */
			bool rack_ok = !rack_used(v, n, row, nrow, b->rack) ||
				       racks_in(v, n, row, nrow) == nracks;
			bool broker_ok = !id_used(row, nrow, b->id) || nrow == n;
			if (rack_ok && broker_ok)
				row[nrow++] = b->id;
		}
	}
	free(v);
	return 0;
}
