/*
 * cmd_topics.c - the topic commands (kafka-topics.sh's --list, --describe,
 * --create, --delete and --alter --partitions):
 *
 *   topics                    Metadata of every topic: the names, sorted.
 *   describe [TOPIC...]       Metadata: per partition the leader, leader
 *                             epoch, replicas, ISR and offline replicas;
 *                             DescribeConfigs: the topic's own overrides.
 *   create-topic NAME ...     CreateTopics to the controller.
 *   delete-topic NAME...      DeleteTopics to the controller.
 *   add-partitions NAME N     CreatePartitions to the controller (N is the
 *                             new total, as Kafka's --partitions).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

#define CONFIG_SOURCE_TOPIC 1 /* DescribeConfigs' DYNAMIC_TOPIC_CONFIG */
#define RESOURCE_TOPIC 2

static int cmp_topic(const void *a, const void *b)
{
	const MetadataResponse_MetadataResponseTopic *x = a, *y = b;
	int32_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
	int c = n > 0 ? memcmp(x->name.ptr, y->name.ptr, (size_t)n) : 0;
	if (c)
		return c;
	return (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

static int cmp_partition(const void *a, const void *b)
{
	const MetadataResponse_MetadataResponsePartition *x = a, *y = b;
	return (x->partition_index > y->partition_index) - (x->partition_index < y->partition_index);
}

/* ---- topics ---- */

static int run_topics(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	if (optind < argc)
		return adm_usage(ctx, "unexpected argument '%s'", argv[optind]);
	MetadataResponse md;
	int16_t v;
	if (adm_metadata(ctx, NULL, 0, &md, &v) < 0)
		return 1;
	qsort(md.topics, (size_t)md.topics_count, sizeof(*md.topics), cmp_topic);
	for (int32_t i = 0; i < md.topics_count; i++)
		if (md.topics[i].error_code == 0)
			printf("%.*s\n", (int)md.topics[i].name.len, md.topics[i].name.ptr);
	return adm_status(ctx);
}

const adm_command adm_cmd_topics = {
	"topics", "", "list the topics",
	"usage: samsa-admin -b HOST:PORT topics\n"
	"\n"
	"Print the name of every topic of the cluster, internal ones included, one\n"
	"a line, sorted (Metadata to any broker).\n",
	run_topics,
};

/* ---- describe ---- */

/* The topics' overrides ("k=v,k=v") by DescribeConfigs; NULL entries
 * where the broker gave none or an error (printed). */
static const char **topic_overrides(adm_ctx *ctx, MetadataResponse_MetadataResponseTopic *t,
				    int32_t n)
{
	const char **out = adm_alloc(ctx, sizeof(*out) * (size_t)(n ? n : 1));
	DescribeConfigsRequest req;
	DescribeConfigsRequest_init(&req);
	req.resources = adm_alloc(ctx, sizeof(*req.resources) * (size_t)(n ? n : 1));
	for (int32_t i = 0; i < n; i++) {
		if (t[i].error_code != 0)
			continue;
		DescribeConfigsRequest_DescribeConfigsResource *r = &req.resources[req.resources_count++];
		r->resource_type = RESOURCE_TOPIC;
		r->resource_name = t[i].name;
		r->configuration_keys_count = -1;
	}
	if (req.resources_count == 0)
		return out;
	DescribeConfigsResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_describe_configs, &req, &resp, &v) < 0)
		return out;
	for (int32_t k = 0; k < resp.results_count; k++) {
		const DescribeConfigsResponse_DescribeConfigsResult *res = &resp.results[k];
		int32_t i;
		for (i = 0; i < n; i++)
			if (t[i].name.len == res->resource_name.len &&
			    memcmp(t[i].name.ptr, res->resource_name.ptr, (size_t)t[i].name.len) == 0)
				break;
		if (i == n)
			continue;
		if (res->error_code != 0) {
			adm_error(ctx, "configs of topic '%.*s': %s", (int)res->resource_name.len,
				  res->resource_name.ptr,
				  adm_errstr(ctx, res->error_code, res->error_message));
			continue;
		}
		size_t len = 1;
		for (int32_t c = 0; c < res->configs_count; c++)
			if (res->configs[c].config_source == CONFIG_SOURCE_TOPIC)
				len += (size_t)res->configs[c].name.len +
				       (size_t)(res->configs[c].value.len > 0 ? res->configs[c].value.len : 0) + 2;
		char *s = adm_alloc(ctx, len);
		size_t at = 0;
		for (int32_t c = 0; c < res->configs_count; c++) {
			const DescribeConfigsResponse_DescribeConfigsResourceResult *e = &res->configs[c];
			if (e->config_source != CONFIG_SOURCE_TOPIC)
				continue;
			at += (size_t)snprintf(s + at, len - at, "%s%.*s=%.*s", at ? "," : "",
					       (int)e->name.len, e->name.ptr,
					       e->value.len > 0 ? (int)e->value.len : 0,
					       e->value.len > 0 ? e->value.ptr : "");
		}
		out[i] = s;
	}
	return out;
}

static void print_topic(adm_ctx *ctx, MetadataResponse_MetadataResponseTopic *t, const char *configs)
{
	char idbuf[32] = "", a[256], b[256], c[256];
	qsort(t->partitions, (size_t)t->partitions_count, sizeof(*t->partitions), cmp_partition);
	int32_t rf = t->partitions_count > 0 ? t->partitions[0].replica_nodes_count : 0;
	printf("Topic: %.*s", (int)t->name.len, t->name.ptr);
	if (!adm_uuid_zero(&t->topic_id))
		printf("\tTopicId: %s", adm_fmt_uuid(&t->topic_id, idbuf, sizeof(idbuf)));
	printf("\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s%s\n",
	       (int)t->partitions_count, (int)rf, configs ? configs : "",
	       t->is_internal ? "\tInternal: true" : "");
	for (int32_t i = 0; i < t->partitions_count; i++) {
		const MetadataResponse_MetadataResponsePartition *p = &t->partitions[i];
		char leader[16];
		if (p->leader_id < 0)
			snprintf(leader, sizeof(leader), "none");
		else
			snprintf(leader, sizeof(leader), "%d", (int)p->leader_id);
		printf("\tTopic: %.*s\tPartition: %d\tLeader: %s\tLeaderEpoch: %d\tReplicas: %s\t"
		       "Isr: %s\tOffline: %s",
		       (int)t->name.len, t->name.ptr, (int)p->partition_index, leader,
		       (int)p->leader_epoch,
		       adm_fmt_ids(p->replica_nodes, p->replica_nodes_count, a, sizeof(a)),
		       adm_fmt_ids(p->isr_nodes, p->isr_nodes_count, b, sizeof(b)),
		       adm_fmt_ids(p->offline_replicas, p->offline_replicas_count, c, sizeof(c)));
		if (p->error_code != 0)
			printf("\tError: %s", proto_err_name(p->error_code));
		printf("\n");
	}
	(void)ctx;
}

static int run_describe(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	int n = argc - optind;
	proto_str *names = NULL;
	if (n > 0) {
		names = adm_alloc(ctx, sizeof(*names) * (size_t)n);
		for (int i = 0; i < n; i++)
			names[i] = proto_cstr(argv[optind + i]);
	}
	MetadataResponse md;
	int16_t v;
	if (adm_metadata(ctx, names, n, &md, &v) < 0)
		return 1;
	if (!names)
		qsort(md.topics, (size_t)md.topics_count, sizeof(*md.topics), cmp_topic);
	const char **configs = topic_overrides(ctx, md.topics, md.topics_count);
	if (names) {
		/* in the order asked, each once */
		for (int i = 0; i < n; i++) {
			int32_t k;
			for (k = 0; k < md.topics_count; k++)
				if (proto_str_eq(md.topics[k].name, argv[optind + i]))
					break;
			bool dup = false;
			for (int j = 0; j < i; j++)
				dup = dup || strcmp(argv[optind + j], argv[optind + i]) == 0;
			if (dup)
				continue;
			if (k == md.topics_count) {
				adm_error(ctx, "topic '%s': not in the answer", argv[optind + i]);
				continue;
			}
			if (md.topics[k].error_code != 0) {
				adm_error(ctx, "topic '%s': %s", argv[optind + i],
					  proto_err_name(md.topics[k].error_code));
				continue;
			}
			print_topic(ctx, &md.topics[k], configs[k]);
		}
	} else {
		for (int32_t k = 0; k < md.topics_count; k++)
			if (md.topics[k].error_code == 0)
				print_topic(ctx, &md.topics[k], configs[k]);
	}
	return adm_status(ctx);
}

const adm_command adm_cmd_describe = {
	"describe", "[TOPIC...]", "partitions: leader, leader epoch, replicas, ISR, offline",
	"usage: samsa-admin -b HOST:PORT describe [TOPIC...]\n"
	"\n"
	"Describe the named topics (all of them without a name), as kafka-topics.sh\n"
	"--describe does: a line per topic with its id, partition count, replication\n"
	"factor and the configs it overrides, then a line per partition with its\n"
	"leader ('none' when offline), leader epoch, replicas (the first is the\n"
	"preferred leader), in-sync replicas and offline replicas. Metadata and\n"
	"DescribeConfigs to any broker. An unknown topic is an error\n"
	"(UNKNOWN_TOPIC_OR_PARTITION); the others are still printed.\n",
	run_describe,
};

/* ---- create-topic ---- */

static bool create_not_controller(const void *response)
{
	const CreateTopicsResponse *r = response;
	for (int32_t i = 0; i < r->topics_count; i++)
		if (r->topics[i].error_code == KERR_NOT_CONTROLLER)
			return true;
	return false;
}

/* --replica-assignment into n CreatableReplicaAssignment (or
 * CreatePartitionsAssignment) entries: returns the ids, NULL on a usage
 * error. */
static int32_t *assignment_arg(adm_ctx *ctx, const char *s, int32_t *nparts, int32_t *width)
{
	int32_t *ids;
	if (adm_parse_assignment(s, nparts, width, &ids) < 0)
		return NULL;
	int32_t *copy = adm_alloc(ctx, sizeof(int32_t) * (size_t)(*nparts) * (size_t)(*width));
	memcpy(copy, ids, sizeof(int32_t) * (size_t)(*nparts) * (size_t)(*width));
	free(ids);
	return copy;
}

static int run_create_topic(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "partitions", required_argument, NULL, 'p' },
		{ "replication-factor", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "replica-assignment", required_argument, NULL, 'a' },
		{ "validate-only", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long partitions = -1, rf = -1;
	const char *assignment = NULL;
	bool validate = false;
	CreateTopicsRequest_CreatableTopic t;
	CreateTopicsRequest_CreatableTopic_init(&t);
	t.configs = adm_alloc(ctx, sizeof(*t.configs) * (size_t)argc);
	int o;
	while ((o = getopt_long(argc, argv, "p:r:c:", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (!adm_parse_int(optarg, 1, INT32_MAX, &partitions))
				return adm_usage(ctx, "--partitions '%s' is not a number >= 1", optarg);
			break;
		case 'r':
			if (!adm_parse_int(optarg, 1, INT16_MAX, &rf))
				return adm_usage(ctx, "--replication-factor '%s' is not a number in 1..32767",
						 optarg);
			break;
		case 'c': {
			CreateTopicsRequest_CreatableTopicConfig *c = &t.configs[t.configs_count++];
			if (adm_parse_kv(optarg, &c->name, &c->value) < 0)
				return adm_usage(ctx, "--config '%s' is not key=value", optarg);
			break;
		}
		case 'a':
			assignment = optarg;
			break;
		case 'V':
			validate = true;
			break;
		default:
			return adm_bad_option(ctx, argv);
		}
	}
	if (argc - optind != 1)
		return adm_usage(ctx, "one topic name expected");
	const char *name = argv[optind];
	t.name = proto_cstr(name);
	if (assignment) {
		if (partitions >= 0 || rf >= 0)
			return adm_usage(ctx, "--replica-assignment replaces --partitions and "
					      "--replication-factor");
		int32_t nparts, width;
		int32_t *ids = assignment_arg(ctx, assignment, &nparts, &width);
		if (!ids)
			return adm_usage(ctx, "--replica-assignment '%s' is not of the form "
					      "1:2:3,2:3:1 (distinct ids, as many per partition)",
					 assignment);
		t.assignments = adm_alloc(ctx, sizeof(*t.assignments) * (size_t)nparts);
		t.assignments_count = nparts;
		for (int32_t i = 0; i < nparts; i++) {
			t.assignments[i].partition_index = i;
			t.assignments[i].broker_ids_count = width;
			t.assignments[i].broker_ids = ids + (size_t)i * width;
		}
	}
	t.num_partitions = (int32_t)partitions;
	t.replication_factor = (int16_t)rf;

	CreateTopicsRequest req;
	CreateTopicsRequest_init(&req);
	req.topics_count = 1;
	req.topics = &t;
	req.timeout_ms = ctx->timeout_ms;
	req.validate_only = validate;
	CreateTopicsResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_create_topics, &req, &resp, &v,
				create_not_controller) < 0)
		return 1;
	if (resp.topics_count != 1) {
		adm_error(ctx, "topic '%s': the controller answered for %d topics", name,
			  (int)resp.topics_count);
		return 1;
	}
	const CreateTopicsResponse_CreatableTopicResult *r = &resp.topics[0];
	if (r->error_code != 0) {
		adm_error(ctx, "topic '%s': %s", name, adm_errstr(ctx, r->error_code, r->error_message));
		return 1;
	}
	printf("%s topic %s", validate ? "Validated" : "Created", name);
	if (r->num_partitions > 0)
		printf(" (%d partitions, replication factor %d)", (int)r->num_partitions,
		       (int)r->replication_factor);
	printf(".\n");
	return 0;
}

const adm_command adm_cmd_create_topic = {
	"create-topic", "NAME [--partitions N] [--replication-factor R] [--config K=V]...",
	"create a topic",
	"usage: samsa-admin -b HOST:PORT create-topic NAME [--partitions N]\n"
	"           [--replication-factor R] [--config KEY=VALUE]...\n"
	"           [--replica-assignment 1:2:3,2:3:1] [--validate-only]\n"
	"\n"
	"Create topic NAME (CreateTopics to the controller).\n"
	"  -p, --partitions N          partition count (default: the broker's num.partitions)\n"
	"  -r, --replication-factor R  replicas per partition (default:\n"
	"                              default.replication.factor)\n"
	"  -c, --config KEY=VALUE      a topic config (repeat for more)\n"
	"      --replica-assignment A  place the replicas yourself instead: partitions\n"
	"                              separated by ',', the brokers of each by ':', the\n"
	"                              first the preferred leader\n"
	"      --validate-only         check everything, create nothing\n"
	"Errors are Kafka's: TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR (more\n"
	"replicas than brokers), INVALID_CONFIG, INVALID_REPLICA_ASSIGNMENT...\n",
	run_create_topic,
};

/* ---- delete-topic ---- */

static bool delete_not_controller(const void *response)
{
	const DeleteTopicsResponse *r = response;
	for (int32_t i = 0; i < r->responses_count; i++)
		if (r->responses[i].error_code == KERR_NOT_CONTROLLER)
			return true;
	return false;
}

static int run_delete_topic(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	int n = argc - optind;
	if (n < 1)
		return adm_usage(ctx, "a topic name expected");
	DeleteTopicsRequest req;
	DeleteTopicsRequest_init(&req);
	/* both forms: v6+ sends Topics, v1-5 TopicNames */
	req.topics_count = n;
	req.topics = adm_alloc(ctx, sizeof(*req.topics) * (size_t)n);
	req.topic_names_count = n;
	req.topic_names = adm_alloc(ctx, sizeof(*req.topic_names) * (size_t)n);
	for (int i = 0; i < n; i++) {
		DeleteTopicsRequest_DeleteTopicState_init(&req.topics[i]);
		req.topics[i].name = proto_cstr(argv[optind + i]);
		req.topic_names[i] = proto_cstr(argv[optind + i]);
	}
	req.timeout_ms = ctx->timeout_ms;
	DeleteTopicsResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_delete_topics, &req, &resp, &v,
				delete_not_controller) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		const char *name = argv[optind + i];
		int32_t k;
		for (k = 0; k < resp.responses_count; k++)
			if (proto_str_eq(resp.responses[k].name, name))
				break;
		if (k == resp.responses_count) {
			adm_error(ctx, "topic '%s': not in the answer", name);
			continue;
		}
		const DeleteTopicsResponse_DeletableTopicResult *r = &resp.responses[k];
		if (r->error_code != 0)
			adm_error(ctx, "topic '%s': %s", name,
				  adm_errstr(ctx, r->error_code, r->error_message));
		else
			printf("Deleted topic %s.\n", name);
	}
	return adm_status(ctx);
}

const adm_command adm_cmd_delete_topic = {
	"delete-topic", "NAME...", "delete topics",
	"usage: samsa-admin -b HOST:PORT delete-topic NAME...\n"
	"\n"
	"Delete the named topics (DeleteTopics to the controller). The answer comes\n"
	"once the controller marked them deleted; a replica on a broker that is down\n"
	"is removed when that broker comes back. UNKNOWN_TOPIC_OR_PARTITION for a\n"
	"topic that does not exist.\n",
	run_delete_topic,
};

/* ---- add-partitions ---- */

static bool partitions_not_controller(const void *response)
{
	const CreatePartitionsResponse *r = response;
	for (int32_t i = 0; i < r->results_count; i++)
		if (r->results[i].error_code == KERR_NOT_CONTROLLER)
			return true;
	return false;
}

static int run_add_partitions(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "replica-assignment", required_argument, NULL, 'a' },
		{ "validate-only", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *assignment = NULL;
	bool validate = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'a')
			assignment = optarg;
		else if (o == 'V')
			validate = true;
		else
			return adm_bad_option(ctx, argv);
	}
	if (argc - optind != 2)
		return adm_usage(ctx, "a topic name and a partition count expected");
	const char *name = argv[optind];
	long count;
	if (!adm_parse_int(argv[optind + 1], 1, INT32_MAX, &count))
		return adm_usage(ctx, "partition count '%s' is not a number >= 1", argv[optind + 1]);
	CreatePartitionsRequest_CreatePartitionsTopic t;
	CreatePartitionsRequest_CreatePartitionsTopic_init(&t);
	t.name = proto_cstr(name);
	t.count = (int32_t)count;
	t.assignments_count = -1;
	if (assignment) {
		int32_t nparts, width;
		int32_t *ids = assignment_arg(ctx, assignment, &nparts, &width);
		if (!ids)
			return adm_usage(ctx, "--replica-assignment '%s' is not of the form "
					      "1:2:3,2:3:1", assignment);
		t.assignments = adm_alloc(ctx, sizeof(*t.assignments) * (size_t)nparts);
		t.assignments_count = nparts;
		for (int32_t i = 0; i < nparts; i++) {
			t.assignments[i].broker_ids_count = width;
			t.assignments[i].broker_ids = ids + (size_t)i * width;
		}
	}
	CreatePartitionsRequest req;
	CreatePartitionsRequest_init(&req);
	req.topics_count = 1;
	req.topics = &t;
	req.timeout_ms = ctx->timeout_ms;
	req.validate_only = validate;
	CreatePartitionsResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_create_partitions, &req, &resp, &v,
				partitions_not_controller) < 0)
		return 1;
	if (resp.results_count != 1) {
		adm_error(ctx, "topic '%s': the controller answered for %d topics", name,
			  (int)resp.results_count);
		return 1;
	}
	if (resp.results[0].error_code != 0) {
		adm_error(ctx, "topic '%s': %s", name,
			  adm_errstr(ctx, resp.results[0].error_code, resp.results[0].error_message));
		return 1;
	}
	printf("%s %s: %ld partitions.\n", validate ? "Validated topic" : "Topic", name, count);
	return 0;
}

const adm_command adm_cmd_add_partitions = {
	"add-partitions", "NAME COUNT [--replica-assignment A]", "grow a topic to COUNT partitions",
	"usage: samsa-admin -b HOST:PORT add-partitions NAME COUNT\n"
	"           [--replica-assignment 1:2,2:3] [--validate-only]\n"
	"\n"
	"Give topic NAME COUNT partitions in all (CreatePartitions to the controller;\n"
	"kafka-topics.sh --alter --partitions COUNT). --replica-assignment places the\n"
	"new partitions only, as create-topic's does. INVALID_PARTITIONS when COUNT is\n"
	"not above the current count.\n",
	run_add_partitions,
};
