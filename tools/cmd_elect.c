/*
 * cmd_elect.c - elect-leaders (kafka-leader-election.sh): ElectLeaders
 * (key 43, KIP-183 and KIP-460) to the controller, PREFERRED or UNCLEAN,
 * for the partitions named or, with none, for every partition (a null
 * list; the controller then answers only for the partitions that needed an
 * election). A TOPIC without :PARTITION stands for all its partitions
 * (Metadata). ELECTION_NOT_NEEDED is not an error (the leader is the one
 * asked for already); any other error is, as in Kafka's tool.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

#define ELECTION_PREFERRED 0
#define ELECTION_UNCLEAN 1

static bool elect_not_controller(const void *response)
{
	const ElectLeadersResponse *r = response;
	if (r->error_code == KERR_NOT_CONTROLLER)
		return true;
	for (int32_t t = 0; t < r->replica_election_results_count; t++)
		for (int32_t p = 0; p < r->replica_election_results[t].partition_result_count; p++)
			if (r->replica_election_results[t].partition_result[p].error_code ==
			    KERR_NOT_CONTROLLER)
				return true;
	return false;
}

/* The entry of topic in req, added when missing (room for cap partitions). */
static ElectLeadersRequest_TopicPartitions *topic_entry(adm_ctx *ctx, ElectLeadersRequest *req,
							proto_str topic, int32_t cap)
{
	for (int32_t i = 0; i < req->topic_partitions_count; i++) {
		ElectLeadersRequest_TopicPartitions *t = &req->topic_partitions[i];
		if (t->topic.len == topic.len && memcmp(t->topic.ptr, topic.ptr, (size_t)topic.len) == 0)
			return t;
	}
	ElectLeadersRequest_TopicPartitions *t = &req->topic_partitions[req->topic_partitions_count++];
	t->topic = topic;
	t->partitions = adm_alloc(ctx, sizeof(int32_t) * (size_t)(cap ? cap : 1));
	return t;
}

static void add_partition(ElectLeadersRequest_TopicPartitions *t, int32_t p)
{
	for (int32_t i = 0; i < t->partitions_count; i++)
		if (t->partitions[i] == p)
			return;
	t->partitions[t->partitions_count++] = p;
}

static int run_elect(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "unclean", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool unclean = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'u')
			unclean = true;
		else
			return adm_bad_option(ctx, argv);
	}
	int n = argc - optind;
	ElectLeadersRequest req;
	ElectLeadersRequest_init(&req);
	req.election_type = unclean ? ELECTION_UNCLEAN : ELECTION_PREFERRED;
	req.timeout_ms = ctx->timeout_ms;
	req.topic_partitions_count = -1;
	if (n > 0) {
		proto_str *whole = adm_alloc(ctx, sizeof(*whole) * (size_t)n);
		int nwhole = 0;
		for (int i = 0; i < n; i++) {
			proto_str t;
			int32_t p;
			if (adm_parse_topic_partition(argv[optind + i], &t, &p) < 0)
				return adm_usage(ctx, "'%s' is not TOPIC or TOPIC:PARTITION",
						 argv[optind + i]);
			if (p < 0)
				whole[nwhole++] = t;
		}
		/* the partitions of the topics named whole */
		MetadataResponse md;
		int16_t mv;
		md.topics_count = 0;
		if (nwhole > 0 && adm_metadata(ctx, whole, nwhole, &md, &mv) < 0)
			return 1;
		int32_t cap = n; /* partitions a topic entry may get */
		for (int32_t k = 0; k < md.topics_count; k++)
			cap += md.topics[k].partitions_count;
		req.topic_partitions_count = 0;
		req.topic_partitions = adm_alloc(ctx, sizeof(*req.topic_partitions) * (size_t)n);
		for (int i = 0; i < n; i++) {
			proto_str t;
			int32_t p;
			adm_parse_topic_partition(argv[optind + i], &t, &p);
			ElectLeadersRequest_TopicPartitions *e = topic_entry(ctx, &req, t, cap);
			if (p >= 0) {
				add_partition(e, p);
				continue;
			}
			int32_t k;
			for (k = 0; k < md.topics_count; k++)
				if (md.topics[k].name.len == t.len &&
				    memcmp(md.topics[k].name.ptr, t.ptr, (size_t)t.len) == 0)
					break;
			if (k == md.topics_count || md.topics[k].error_code != 0) {
				adm_error(ctx, "topic '%.*s': %s", (int)t.len, t.ptr,
					  proto_err_name(k == md.topics_count
								 ? KERR_UNKNOWN_TOPIC_OR_PARTITION
								 : md.topics[k].error_code));
				return 1;
			}
			for (int32_t q = 0; q < md.topics[k].partitions_count; q++)
				add_partition(e, md.topics[k].partitions[q].partition_index);
		}
	}
	adm_conn *any = adm_any(ctx);
	if (!any)
		return 1;
	if (unclean && adm_conn_version(any, adm_api_elect_leaders.key) < 1) {
		adm_error(ctx, "the broker serves no version of ElectLeaders with an election type "
			       "(v1+): no unclean election");
		return 1;
	}
	ElectLeadersResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_elect_leaders, &req, &resp, &v,
				elect_not_controller) < 0)
		return 1;
	if (resp.error_code != 0) {
		adm_error(ctx, "%s", proto_err_name(resp.error_code));
		return 1;
	}
	int elected = 0;
	for (int32_t t = 0; t < resp.replica_election_results_count; t++) {
		const ElectLeadersResponse_ReplicaElectionResult *r = &resp.replica_election_results[t];
		for (int32_t p = 0; p < r->partition_result_count; p++) {
			const ElectLeadersResponse_PartitionResult *pr = &r->partition_result[p];
			if (pr->error_code == 0) {
				printf("%.*s:%d: elected\n", (int)r->topic.len, r->topic.ptr,
				       (int)pr->partition_id);
				elected++;
			} else if (pr->error_code == KERR_ELECTION_NOT_NEEDED) {
				printf("%.*s:%d: ELECTION_NOT_NEEDED\n", (int)r->topic.len, r->topic.ptr,
				       (int)pr->partition_id);
			} else {
				adm_error(ctx, "%.*s:%d: %s", (int)r->topic.len, r->topic.ptr,
					  (int)pr->partition_id,
					  adm_errstr(ctx, pr->error_code, pr->error_message));
			}
		}
	}
	if (req.topic_partitions_count < 0 && resp.replica_election_results_count == 0)
		printf("No partition needed an election.\n");
	return adm_status(ctx);
}

const adm_command adm_cmd_elect_leaders = {
	"elect-leaders", "[--unclean] [TOPIC[:PARTITION]...]",
	"make the preferred replicas leaders again (or force an unclean election)",
	"usage: samsa-admin -b HOST:PORT elect-leaders [--unclean] [TOPIC[:PARTITION]...]\n"
	"\n"
	"Ask the controller for leader elections (ElectLeaders, as\n"
	"kafka-leader-election.sh). PREFERRED (the default) makes each partition's\n"
	"preferred replica (its first) leader where it is alive and in sync:\n"
	"after a broker restart this gives it its leaderships back.\n"
	"      --unclean   elect a leader for partitions that have none, even a replica\n"
	"                  that is out of sync: the records only the lost replicas had\n"
	"                  are gone\n"
	"Without partitions every partition of the cluster is considered and only\n"
	"those that needed an election are listed. A line per partition:\n"
	"'TOPIC:PARTITION: elected' or ': ELECTION_NOT_NEEDED'; anything else is an\n"
	"error (PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,\n"
	"UNKNOWN_TOPIC_OR_PARTITION...) and the exit status is 1.\n",
	run_elect,
};
