/*
 * cmd_config.c - a topic's or a broker's configs (kafka-configs.sh):
 *
 *   config TOPIC                        DescribeConfigs: every config with
 *                                       its value and where it comes from;
 *   config TOPIC --set K=V --delete K   IncrementalAlterConfigs (SET and
 *                                       DELETE), the other configs kept;
 *   config --broker ID [...]            the same for broker ID's dynamic
 *                                       configs, sent to that broker.
 *
 * A topic's requests go to any broker, a broker's to that broker, as
 * Kafka's admin client routes them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
#define OP_SET 0
#define OP_DELETE 1

/* DescribeConfigs' ConfigSource. */
static const char *source_name(int8_t s)
{
	switch (s) {
	case 1: return "topic";
	case 2: return "dynamic broker";
	case 3: return "dynamic default broker";
	case 4: return "static broker";
	case 5: return "default";
	case 6: return "broker logger";
	default: return "unknown";
	}
}

static int call(adm_ctx *ctx, int32_t broker, const adm_api *api, const void *req, void *resp)
{
	int16_t v;
	if (broker >= 0)
		return adm_broker_call(ctx, broker, api, req, resp, &v);
	return adm_any_call(ctx, api, req, resp, &v);
}

static int describe(adm_ctx *ctx, int8_t type, const char *name, int32_t broker)
{
	DescribeConfigsRequest_DescribeConfigsResource r;
	DescribeConfigsRequest_DescribeConfigsResource_init(&r);
	r.resource_type = type;
	r.resource_name = proto_cstr(name);
	r.configuration_keys_count = -1;
	DescribeConfigsRequest req;
	DescribeConfigsRequest_init(&req);
	req.resources_count = 1;
	req.resources = &r;
	DescribeConfigsResponse resp;
	if (call(ctx, broker, &adm_api_describe_configs, &req, &resp) < 0)
		return 1;
	if (resp.results_count != 1) {
		adm_error(ctx, "%s '%s': the broker answered for %d resources",
			  type == RESOURCE_TOPIC ? "topic" : "broker", name, (int)resp.results_count);
		return 1;
	}
	const DescribeConfigsResponse_DescribeConfigsResult *res = &resp.results[0];
	if (res->error_code != 0) {
		adm_error(ctx, "%s '%s': %s", type == RESOURCE_TOPIC ? "topic" : "broker", name,
			  adm_errstr(ctx, res->error_code, res->error_message));
		return 1;
	}
	for (int32_t i = 0; i < res->configs_count; i++) {
		const DescribeConfigsResponse_DescribeConfigsResourceResult *e = &res->configs[i];
		if (e->is_sensitive || e->value.len < 0)
			printf("%.*s=\t(%s%s)\n", (int)e->name.len, e->name.ptr,
			       source_name(e->config_source), e->is_sensitive ? ", sensitive" : "");
		else
			printf("%.*s=%.*s\t(%s%s)\n", (int)e->name.len, e->name.ptr, (int)e->value.len,
			       e->value.ptr, source_name(e->config_source),
			       e->read_only ? ", read-only" : "");
	}
	return 0;
}

static int run_config(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "set", required_argument, NULL, 's' },
		{ "delete", required_argument, NULL, 'd' },
		{ "broker", required_argument, NULL, 'B' },
		{ "validate-only", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	IncrementalAlterConfigsRequest_AlterConfigsResource r;
	IncrementalAlterConfigsRequest_AlterConfigsResource_init(&r);
	r.configs = adm_alloc(ctx, sizeof(*r.configs) * (size_t)argc);
	long broker = -1;
	bool validate = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		IncrementalAlterConfigsRequest_AlterableConfig *c;
		switch (o) {
		case 's':
			c = &r.configs[r.configs_count++];
			c->config_operation = OP_SET;
			if (adm_parse_kv(optarg, &c->name, &c->value) < 0)
				return adm_usage(ctx, "--set '%s' is not key=value", optarg);
			break;
		case 'd':
			c = &r.configs[r.configs_count++];
			c->config_operation = OP_DELETE;
			c->name = proto_cstr(optarg);
			c->value = proto_cstr(NULL);
			if (!optarg[0] || strchr(optarg, '='))
				return adm_usage(ctx, "--delete takes a config name, not '%s'", optarg);
			break;
		case 'B':
			if (!adm_parse_int(optarg, 0, INT32_MAX, &broker))
				return adm_usage(ctx, "--broker '%s' is not a broker id", optarg);
			break;
		case 'V':
			validate = true;
			break;
		default:
			return adm_bad_option(ctx, argv);
		}
	}
	char idbuf[24];
	const char *name;
	int8_t type;
	if (broker >= 0) {
		if (optind != argc)
			return adm_usage(ctx, "no topic with --broker");
		snprintf(idbuf, sizeof(idbuf), "%ld", broker);
		name = idbuf;
		type = RESOURCE_BROKER;
	} else {
		if (argc - optind != 1)
			return adm_usage(ctx, "one topic name expected");
		name = argv[optind];
		type = RESOURCE_TOPIC;
	}
	const char *what = type == RESOURCE_TOPIC ? "topic" : "broker";
	if (r.configs_count == 0)
		return describe(ctx, type, name, (int32_t)broker);

	r.resource_type = type;
	r.resource_name = proto_cstr(name);
	IncrementalAlterConfigsRequest req;
	IncrementalAlterConfigsRequest_init(&req);
	req.resources_count = 1;
	req.resources = &r;
	req.validate_only = validate;
	IncrementalAlterConfigsResponse resp;
	if (call(ctx, (int32_t)broker, &adm_api_incremental_alter_configs, &req, &resp) < 0)
		return 1;
	if (resp.responses_count != 1) {
		adm_error(ctx, "%s '%s': the broker answered for %d resources", what, name,
			  (int)resp.responses_count);
		return 1;
	}
	if (resp.responses[0].error_code != 0) {
		adm_error(ctx, "%s '%s': %s", what, name,
			  adm_errstr(ctx, resp.responses[0].error_code, resp.responses[0].error_message));
		return 1;
	}
	printf("%s configs of %s %s.\n", validate ? "Validated" : "Updated", what, name);
	return 0;
}

const adm_command adm_cmd_config = {
	"config", "TOPIC|--broker ID [--set K=V]... [--delete K]...", "show or change configs",
	"usage: samsa-admin -b HOST:PORT config TOPIC [--set KEY=VALUE]... [--delete KEY]...\n"
	"       samsa-admin -b HOST:PORT config --broker ID [--set KEY=VALUE]... [--delete KEY]...\n"
	"\n"
	"Without --set or --delete, print every config of the topic (or of broker ID)\n"
	"as KEY=VALUE with where the value comes from (topic, dynamic broker, static\n"
	"broker, default...; DescribeConfigs). With them, change only those configs\n"
	"(IncrementalAlterConfigs SET and DELETE, as kafka-configs.sh --alter\n"
	"--add-config/--delete-config): a deleted config falls back to the broker's\n"
	"value. A topic's requests go to any broker, a broker's to that broker.\n"
	"      --validate-only   check the change, apply nothing\n"
	"Errors are Kafka's: INVALID_CONFIG (unknown name, bad value),\n"
	"UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST (a name twice)...\n",
	run_config,
};
