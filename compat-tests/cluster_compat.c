/*
 * cluster_compat.c - runs a single-node compat program against a cluster of
 * three brokers in ZooKeeper mode. Makefile.am builds
 * cluster_compat_<name> from <name>.c and this file: its constructor
 * installs compat.h's cluster hooks before main, so the program's own
 * c_start_broker starts a ZooKeeper and brokers 1..3 (cluster.h, with
 * HC_DEFAULTS) and hands back broker 1, c_create_topic makes a replication
 * factor of 1 into replicas [1, 2, 3] (broker 1 the leader), and
 * c_stop_broker stops the whole cluster, every broker having to exit 0.
 *
 * The test's overrides go to every broker, except the ones naming broker
 * 1's own listener or dir (listeners, advertised.listeners, log.dirs,
 * log.dir), which go to broker 1 only. The test talks to broker 1 (its
 * bootstrap) and librdkafka finds the others through Metadata; a kill -9 or
 * restart of "the broker" is one of broker 1.
 *
 * produce_consume's record count defaults to 20,000 here
 * (SAMSA_PC_RECORDS when set).
 *
 * Which programs: those whose single-node assumptions hold on a cluster
 * once broker 1 leads their topics (produce_consume, transactions,
 * groups_assign, groups_rebalance, groups_commit, groups_static). Not
 * idempotence (its proxy is broker 1's advertised listener, so the other
 * brokers would reach broker 1 through it, and it expects broker 1 to
 * answer a transactional InitProducerId: NOT_COORDINATOR is right on a
 * cluster), nor groups_errors and groups_protocol (raw requests that expect
 * broker 1 to be every group's coordinator).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat-tests/cluster.h"
#include "compat-tests/compat.h"

#define NBROKERS 3
#define MAX_CLUSTERS 8

/* The clusters this (forked test) process started: state of the test
 * process, like harness.c's table of running brokers. */
static hc_cluster *clusters[MAX_CLUSTERS];

static bool broker1_only(const char *kv)
{
	static const char *const keys[] = {"listeners=", "advertised.listeners=", "log.dirs=",
					   "log.dir="};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strncmp(kv, keys[i], strlen(keys[i])) == 0)
			return true;
	return false;
}

static h_broker *cluster_start(const char *const *overrides)
{
	const char *all[H_MAX_OVERRIDES + 1], *one[H_MAX_OVERRIDES + 1];
	int na = 0, n1 = 0;
	for (int i = 0; overrides && overrides[i]; i++) {
		if (na >= H_MAX_OVERRIDES || n1 >= H_MAX_OVERRIDES)
			return NULL;
		if (broker1_only(overrides[i]))
			one[n1++] = overrides[i];
		else
			all[na++] = overrides[i];
	}
	all[na] = NULL;
	one[n1] = NULL;
	int slot = -1;
	for (int i = 0; i < MAX_CLUSTERS && slot < 0; i++)
		if (!clusters[i])
			slot = i;
	if (slot < 0)
		return NULL;
	hc_cluster *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	hc_options o = {.brokers = NBROKERS, .overrides = all};
	o.broker_overrides[1] = one;
	if (hc_start(c, &o) < 0) {
		hc_free(c);
		free(c);
		return NULL;
	}
	clusters[slot] = c;
	return c->b[1];
}

static int cluster_stop(h_broker *b)
{
	for (int i = 0; i < MAX_CLUSTERS; i++) {
		hc_cluster *c = clusters[i];
		if (!c || c->b[1] != b)
			continue;
		int bad = hc_stop(c, 30000);
		hc_free(c);
		free(c);
		clusters[i] = NULL;
		return bad;
	}
	return -1;
}

static const c_cluster_hooks hooks = {
	.start = cluster_start,
	.stop = cluster_stop,
	.replication_factor = NBROKERS,
};

__attribute__((constructor)) static void install_cluster_hooks(void)
{
	c_set_cluster_hooks(&hooks);
	setenv("SAMSA_PC_RECORDS", "20000", 0);
}
