/*
 * cmd_reassign.c - partition reassignment (KIP-455; kafka-reassign-
 * partitions.sh) and draining a broker:
 *
 *   reassign T:P=1,2,3 ...         AlterPartitionReassignments to the
 *                                  controller: the new replica list of
 *                                  each partition, the first the
 *                                  preferred leader;
 *   reassign --cancel T:P ...      the same with null replicas: back to the
 *                                  replicas before the reassignment;
 *   reassignments [TOPIC[:P]...]   ListPartitionReassignments: those in
 *                                  progress, with the replicas being added
 *                                  and removed;
 *   drain BROKER [--execute]       the plan (plan.h) that moves every
 *                                  replica off BROKER, printed in reassign's
 *                                  argument form, and with --execute
 *                                  submitted.
 *
 * The controller answers AlterPartitionReassignments once the reassignment
 * is recorded and started; --wait then polls ListPartitionReassignments
 * every 500 ms until none of the partitions is in progress any more (at
 * most --timeout).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"
#include "tools/plan.h"

#define MAX_REPLICAS 64
#define POLL_MS 500

/* One partition to reassign. */
typedef struct move {
	proto_str topic;
	int32_t partition;
	int32_t nreplicas; /* -1: cancel */
	int32_t *replicas;
} move;

static bool str_same(proto_str a, proto_str b)
{
	return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- AlterPartitionReassignments ---- */

static bool alter_not_controller(const void *response)
{
	return ((const AlterPartitionReassignmentsResponse *)response)->error_code ==
	       KERR_NOT_CONTROLLER;
}

/* Submit the moves (grouped by topic, in order of first mention) and
 * print a line per partition. 0, or -1 (errors printed). */
static int alter(adm_ctx *ctx, const move *m, int n)
{
	AlterPartitionReassignmentsRequest req;
	AlterPartitionReassignmentsRequest_init(&req);
	req.timeout_ms = ctx->timeout_ms;
	req.topics = adm_alloc(ctx, sizeof(*req.topics) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++) {
		AlterPartitionReassignmentsRequest_ReassignableTopic *t = NULL;
		for (int32_t k = 0; k < req.topics_count && !t; k++)
			if (str_same(req.topics[k].name, m[i].topic))
				t = &req.topics[k];
		if (!t) {
			t = &req.topics[req.topics_count++];
			t->name = m[i].topic;
			t->partitions = adm_alloc(ctx, sizeof(*t->partitions) * (size_t)n);
		}
		AlterPartitionReassignmentsRequest_ReassignablePartition *p =
			&t->partitions[t->partitions_count++];
		p->partition_index = m[i].partition;
		p->replicas_count = m[i].nreplicas;
		p->replicas = m[i].replicas;
	}
	AlterPartitionReassignmentsResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_alter_partition_reassignments, &req, &resp, &v,
				alter_not_controller) < 0)
		return -1;
	if (resp.error_code != 0) {
		adm_error(ctx, "%s", adm_errstr(ctx, resp.error_code, resp.error_message));
		return -1;
	}
	int rc = 0;
	for (int32_t t = 0; t < resp.responses_count; t++) {
		const AlterPartitionReassignmentsResponse_ReassignableTopicResponse *tr =
			&resp.responses[t];
		for (int32_t p = 0; p < tr->partitions_count; p++) {
			const AlterPartitionReassignmentsResponse_ReassignablePartitionResponse *pr =
				&tr->partitions[p];
			bool cancel = false;
			for (int i = 0; i < n; i++)
				if (str_same(m[i].topic, tr->name) && m[i].partition == pr->partition_index)
					cancel = m[i].nreplicas < 0;
			if (pr->error_code == 0) {
				printf("%.*s:%d: reassignment %s\n", (int)tr->name.len, tr->name.ptr,
				       (int)pr->partition_index, cancel ? "cancelled" : "started");
			} else {
				adm_error(ctx, "%.*s:%d: %s", (int)tr->name.len, tr->name.ptr,
					  (int)pr->partition_index,
					  adm_errstr(ctx, pr->error_code, pr->error_message));
				rc = -1;
			}
		}
	}
	return rc;
}

/* ---- ListPartitionReassignments ---- */

static bool list_not_controller(const void *response)
{
	return ((const ListPartitionReassignmentsResponse *)response)->error_code ==
	       KERR_NOT_CONTROLLER;
}

/* The reassignments in progress of the given partitions (topics NULL:
 * all of them). 0, or -1 (error printed). */
static int list(adm_ctx *ctx, ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *topics,
		int32_t ntopics, ListPartitionReassignmentsResponse *resp)
{
	ListPartitionReassignmentsRequest req;
	ListPartitionReassignmentsRequest_init(&req);
	req.timeout_ms = ctx->timeout_ms;
	req.topics_count = topics ? ntopics : -1;
	req.topics = topics;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_list_partition_reassignments, &req, resp, &v,
				list_not_controller) < 0)
		return -1;
	if (resp->error_code != 0) {
		adm_error(ctx, "%s", adm_errstr(ctx, resp->error_code, resp->error_message));
		return -1;
	}
	return 0;
}

/* The moves' partitions as ListPartitionReassignments topics. */
static ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *
list_topics(adm_ctx *ctx, const move *m, int n, int32_t *ntopics)
{
	ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *t =
		adm_alloc(ctx, sizeof(*t) * (size_t)(n ? n : 1));
	*ntopics = 0;
	for (int i = 0; i < n; i++) {
		int32_t k;
		for (k = 0; k < *ntopics; k++)
			if (str_same(t[k].name, m[i].topic))
				break;
		if (k == *ntopics) {
			t[k].name = m[i].topic;
			t[k].partition_indexes = adm_alloc(ctx, sizeof(int32_t) * (size_t)n);
			(*ntopics)++;
		}
		t[k].partition_indexes[t[k].partition_indexes_count++] = m[i].partition;
	}
	return t;
}

/* --wait: poll until none of the moves is in progress. 0 or -1. */
static int wait_done(adm_ctx *ctx, const move *m, int n)
{
	int32_t ntopics;
	ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *t =
		list_topics(ctx, m, n, &ntopics);
	int64_t deadline = now_ms() + ctx->timeout_ms;
	for (;;) {
		ListPartitionReassignmentsResponse resp;
		if (list(ctx, t, ntopics, &resp) < 0)
			return -1;
		int32_t left = 0;
		const ListPartitionReassignmentsResponse_OngoingTopicReassignment *first = NULL;
		for (int32_t k = 0; k < resp.topics_count; k++) {
			left += resp.topics[k].partitions_count;
			if (!first && resp.topics[k].partitions_count > 0)
				first = &resp.topics[k];
		}
		if (left == 0) {
			printf("Reassignment complete.\n");
			return 0;
		}
		if (now_ms() + POLL_MS > deadline) {
			adm_error(ctx, "%d partition(s) still being reassigned after %d ms (%.*s:%d...); "
				       "see 'samsa-admin reassignments'",
				  (int)left, ctx->timeout_ms, (int)first->name.len, first->name.ptr,
				  (int)first->partitions[0].partition_index);
			return -1;
		}
		struct timespec ts = { 0, POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* ---- reassign ---- */

static int run_reassign(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "cancel", no_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool cancel = false, wait = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'c')
			cancel = true;
		else if (o == 'w')
			wait = true;
		else
			return adm_bad_option(ctx, argv);
	}
	int n = argc - optind;
	if (n < 1)
		return adm_usage(ctx, cancel ? "TOPIC:PARTITION expected" : "TOPIC:PARTITION=IDS expected");
	move *m = adm_alloc(ctx, sizeof(*m) * (size_t)n);
	for (int i = 0; i < n; i++) {
		const char *a = argv[optind + i];
		if (cancel) {
			if (adm_parse_topic_partition(a, &m[i].topic, &m[i].partition) < 0 ||
			    m[i].partition < 0)
				return adm_usage(ctx, "'%s' is not TOPIC:PARTITION", a);
			m[i].nreplicas = -1;
			continue;
		}
		m[i].replicas = adm_alloc(ctx, sizeof(int32_t) * MAX_REPLICAS);
		m[i].nreplicas = adm_parse_target(a, &m[i].topic, &m[i].partition, m[i].replicas,
						  MAX_REPLICAS);
		if (m[i].nreplicas < 1)
			return adm_usage(ctx, "'%s' is not TOPIC:PARTITION=ID,ID,... (distinct ids)", a);
	}
	if (alter(ctx, m, n) < 0)
		return adm_status(ctx);
	if (wait && !cancel)
		wait_done(ctx, m, n);
	return adm_status(ctx);
}

const adm_command adm_cmd_reassign = {
	"reassign", "[--cancel] [--wait] TOPIC:PARTITION[=ID,ID...]...",
	"move partitions to other brokers (or cancel a move)",
	"usage: samsa-admin -b HOST:PORT reassign [--wait] TOPIC:PARTITION=ID,ID,...  ...\n"
	"       samsa-admin -b HOST:PORT reassign --cancel TOPIC:PARTITION ...\n"
	"\n"
	"Give each partition a new replica list (AlterPartitionReassignments to the\n"
	"controller, as kafka-reassign-partitions.sh --execute): the new replicas copy\n"
	"the log and join the ISR, then the leader moves if it must, and the replicas\n"
	"left out are removed. The first id is the preferred leader; a longer or\n"
	"shorter list changes the replication factor. The answer comes once the move\n"
	"started; 'samsa-admin reassignments' shows it until it completes.\n"
	"      --wait     then wait (at most --timeout) until every move completed\n"
	"      --cancel   stop the moves in progress of these partitions: back to their\n"
	"                 replicas before it (NO_REASSIGNMENT_IN_PROGRESS when none)\n"
	"Errors are Kafka's: INVALID_REPLICA_ASSIGNMENT (an id twice, a broker that is\n"
	"not alive), UNKNOWN_TOPIC_OR_PARTITION...\n",
	run_reassign,
};

/* ---- reassignments ---- */

static int run_reassignments(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	int n = argc - optind;
	ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics *topics = NULL;
	int32_t ntopics = 0;
	if (n > 0) {
		/* TOPIC alone: all its partitions (Metadata) */
		proto_str *whole = adm_alloc(ctx, sizeof(*whole) * (size_t)n);
		int nwhole = 0;
		move *m = adm_alloc(ctx, sizeof(*m) * (size_t)n);
		for (int i = 0; i < n; i++) {
			if (adm_parse_topic_partition(argv[optind + i], &m[i].topic, &m[i].partition) < 0)
				return adm_usage(ctx, "'%s' is not TOPIC or TOPIC:PARTITION",
						 argv[optind + i]);
			if (m[i].partition < 0)
				whole[nwhole++] = m[i].topic;
		}
		MetadataResponse md;
		int16_t mv;
		md.topics_count = 0;
		if (nwhole > 0 && adm_metadata(ctx, whole, nwhole, &md, &mv) < 0)
			return 1;
		int32_t cap = n;
		for (int32_t k = 0; k < md.topics_count; k++)
			cap += md.topics[k].partitions_count;
		move *all = adm_alloc(ctx, sizeof(*all) * (size_t)cap);
		int nall = 0;
		for (int i = 0; i < n; i++) {
			if (m[i].partition >= 0) {
				all[nall++] = m[i];
				continue;
			}
			int32_t k;
			for (k = 0; k < md.topics_count; k++)
				if (str_same(md.topics[k].name, m[i].topic))
					break;
			if (k == md.topics_count || md.topics[k].error_code != 0) {
				adm_error(ctx, "topic '%.*s': %s", (int)m[i].topic.len, m[i].topic.ptr,
					  proto_err_name(k == md.topics_count
								 ? KERR_UNKNOWN_TOPIC_OR_PARTITION
								 : md.topics[k].error_code));
				return 1;
			}
			for (int32_t q = 0; q < md.topics[k].partitions_count; q++)
				all[nall++] = (move){ m[i].topic, md.topics[k].partitions[q].partition_index,
						      0, NULL };
		}
		topics = list_topics(ctx, all, nall, &ntopics);
	}
	ListPartitionReassignmentsResponse resp;
	if (list(ctx, topics, ntopics, &resp) < 0)
		return 1;
	char a[256], b[256], c[256];
	for (int32_t k = 0; k < resp.topics_count; k++) {
		const ListPartitionReassignmentsResponse_OngoingTopicReassignment *t = &resp.topics[k];
		for (int32_t p = 0; p < t->partitions_count; p++) {
			const ListPartitionReassignmentsResponse_OngoingPartitionReassignment *r =
				&t->partitions[p];
			printf("%.*s:%d\tReplicas: %s\tAdding: %s\tRemoving: %s\n", (int)t->name.len,
			       t->name.ptr, (int)r->partition_index,
			       adm_fmt_ids(r->replicas, r->replicas_count, a, sizeof(a)),
			       adm_fmt_ids(r->adding_replicas, r->adding_replicas_count, b, sizeof(b)),
			       adm_fmt_ids(r->removing_replicas, r->removing_replicas_count, c,
					   sizeof(c)));
		}
	}
	return adm_status(ctx);
}

const adm_command adm_cmd_reassignments = {
	"reassignments", "[TOPIC[:PARTITION]...]", "the reassignments in progress",
	"usage: samsa-admin -b HOST:PORT reassignments [TOPIC[:PARTITION]...]\n"
	"\n"
	"List the reassignments in progress (of the named partitions, or all;\n"
	"ListPartitionReassignments to the controller, as kafka-reassign-partitions.sh\n"
	"--list): a line per partition with its replicas (the targets first, then\n"
	"those being removed), the replicas being added and those being removed.\n"
	"Nothing is printed when none is in progress.\n",
	run_reassignments,
};

/* ---- drain ---- */

typedef struct drain_part {
	proto_str topic;
	int32_t partition;
	adm_plan_partition plan;
} drain_part;

static int cmp_drain(const void *a, const void *b)
{
	const drain_part *x = a, *y = b;
	int32_t n = x->topic.len < y->topic.len ? x->topic.len : y->topic.len;
	int c = n > 0 ? memcmp(x->topic.ptr, y->topic.ptr, (size_t)n) : 0;
	if (c)
		return c;
	if (x->topic.len != y->topic.len)
		return x->topic.len < y->topic.len ? -1 : 1;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

static int run_drain(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "execute", no_argument, NULL, 'x' },
		{ "wait", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool execute = false, wait = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'x')
			execute = true;
		else if (o == 'w')
			wait = true;
		else
			return adm_bad_option(ctx, argv);
	}
	if (argc - optind != 1)
		return adm_usage(ctx, "one broker id expected");
	long drained;
	if (!adm_parse_int(argv[optind], 0, INT32_MAX, &drained))
		return adm_usage(ctx, "broker id '%s' is not a number", argv[optind]);
	if (wait && !execute)
		return adm_usage(ctx, "--wait goes with --execute");

	MetadataResponse md;
	int16_t v;
	if (adm_metadata(ctx, NULL, 0, &md, &v) < 0)
		return 1;
	int32_t *live = adm_alloc(ctx, sizeof(int32_t) * (size_t)(md.brokers_count + 1));
	int32_t nlive = 0;
	for (int32_t i = 0; i < md.brokers_count; i++)
		if (md.brokers[i].node_id != (int32_t)drained)
			live[nlive++] = md.brokers[i].node_id;
	int32_t nparts = 0;
	for (int32_t t = 0; t < md.topics_count; t++)
		if (md.topics[t].error_code == 0)
			nparts += md.topics[t].partitions_count;
	drain_part *dp = adm_alloc(ctx, sizeof(*dp) * (size_t)(nparts ? nparts : 1));
	nparts = 0;
	for (int32_t t = 0; t < md.topics_count; t++) {
		if (md.topics[t].error_code != 0)
			continue;
		for (int32_t p = 0; p < md.topics[t].partitions_count; p++) {
			const MetadataResponse_MetadataResponsePartition *mp = &md.topics[t].partitions[p];
			drain_part *d = &dp[nparts++];
			d->topic = md.topics[t].name;
			d->partition = mp->partition_index;
			d->plan.nreplicas = mp->replica_nodes_count;
			d->plan.replicas = mp->replica_nodes;
			d->plan.target = adm_alloc(ctx, sizeof(int32_t) *
							       (size_t)(mp->replica_nodes_count + 1));
		}
	}
	qsort(dp, (size_t)nparts, sizeof(*dp), cmp_drain);
	adm_plan_partition *plan = adm_alloc(ctx, sizeof(*plan) * (size_t)(nparts ? nparts : 1));
	for (int32_t i = 0; i < nparts; i++)
		plan[i] = dp[i].plan;
	int bad = adm_plan_drain(plan, nparts, (int32_t)drained, live, nlive);
	if (bad > 0) {
		const drain_part *d = &dp[bad - 1];
		adm_error(ctx, "%.*s:%d has %d replicas and only %d other live broker(s): broker %ld "
			       "cannot be drained without lowering its replication factor",
			  (int)d->topic.len, d->topic.ptr, (int)d->partition, (int)d->plan.nreplicas,
			  (int)nlive, drained);
		return 1;
	}
	move *m = adm_alloc(ctx, sizeof(*m) * (size_t)(nparts ? nparts : 1));
	int nm = 0;
	char a[256], b[256];
	for (int32_t i = 0; i < nparts; i++) {
		if (!plan[i].moved)
			continue;
		m[nm++] = (move){ dp[i].topic, dp[i].partition, plan[i].nreplicas, plan[i].target };
		printf("%.*s:%d=%s\t(was %s)\n", (int)dp[i].topic.len, dp[i].topic.ptr,
		       (int)dp[i].partition, adm_fmt_ids(plan[i].target, plan[i].nreplicas, a, sizeof(a)),
		       adm_fmt_ids(plan[i].replicas, plan[i].nreplicas, b, sizeof(b)));
	}
	if (nm == 0) {
		if (nlive == md.brokers_count) {
			/* not registered and on no replica list: a typo, not a drained broker */
			adm_error(ctx, "broker %ld is not in the cluster (no live broker and no replica "
				       "has that id)", drained);
			return 1;
		}
		printf("Broker %ld holds no replica.\n", drained);
		return 0;
	}
	if (!execute)
		return 0;
	fflush(stdout);
	if (alter(ctx, m, nm) < 0)
		return adm_status(ctx);
	if (wait)
		wait_done(ctx, m, nm);
	return adm_status(ctx);
}

const adm_command adm_cmd_drain = {
	"drain", "BROKER [--execute [--wait]]", "move every replica off a broker",
	"usage: samsa-admin -b HOST:PORT drain BROKER [--execute [--wait]]\n"
	"\n"
	"Plan the moves that take every replica off broker BROKER, keeping each\n"
	"partition's replication factor: BROKER's place in the replica list goes to\n"
	"the live broker holding the fewest replicas that is not a replica of the\n"
	"partition yet (the other replicas keep their order, so the preferred leader\n"
	"stays where it was, and a preferred leadership of BROKER goes to its\n"
	"replacement). Prints one line per partition, 'TOPIC:PARTITION=IDS<tab>(was\n"
	"IDS)', the first field in reassign's form. Every topic counts, internal ones\n"
	"too; a partition with as many replicas as the brokers left is an error and\n"
	"nothing is submitted.\n"
	"      --execute  submit the plan (AlterPartitionReassignments to the controller)\n"
	"      --wait     then wait (at most --timeout) until the moves completed (the\n"
	"                 broker keeps running: stop it yourself, with SIGTERM)\n",
	run_drain,
};
