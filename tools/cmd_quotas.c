/*
 * cmd_quotas.c - client quotas (KIP-546; kafka-configs.sh --entity-type
 * users/clients/ips [--entity-name N | --entity-default]):
 *
 *   quotas [ENTITY] --set K=V... --delete K...   AlterClientQuotas, one
 *                          entry: the entity of the options, SET and
 *                          remove ops (producer_byte_rate,
 *                          consumer_byte_rate, request_percentage;
 *                          connection_creation_rate for an IP);
 *   quotas [ENTITY]        DescribeClientQuotas: exactly that entity
 *                          (strict), or every entry without ENTITY.
 *
 * ENTITY: --user U or --user-default, and/or --client-id C or
 * --client-id-default (Kafka's entity types "user" and "client-id"; a
 * default is a null name), or alone --ip ADDR or --ip-default (entity type
 * "ip", KIP-612; which keys an IP may have and whether ADDR is one the
 * broker checks). Each entry is one line: "Entity: user=U,
 * client-id=C<TAB>K=V<TAB>..." (<default> for a default), each value as
 * kafka-configs.sh prints it (Java's Double.toString: 1024.0, Infinity).
 * Requests go to any broker.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/java_double.h"
#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

#define MATCH_EXACT 0
#define MATCH_DEFAULT 1

typedef struct entity {
	bool user, client, ip;        /* given */
	const char *user_name;        /* NULL: the default */
	const char *client_name;
	const char *ip_name;
} entity;

static void print_entity(const DescribeClientQuotasResponse_DescribeClientQuotasEntry *e)
{
	printf("Entity: ");
	for (int32_t i = 0; i < e->entity_count; i++) {
		const DescribeClientQuotasResponse_DescribeClientQuotasEntity *x = &e->entity[i];
		if (x->entity_name.len < 0)
			printf("%s%.*s=<default>", i ? ", " : "", (int)x->entity_type.len,
			       x->entity_type.ptr);
		else
			printf("%s%.*s=%.*s", i ? ", " : "", (int)x->entity_type.len,
			       x->entity_type.ptr, (int)x->entity_name.len, x->entity_name.ptr);
	}
	char num[BRK_JAVA_DOUBLE_MAX];
	for (int32_t i = 0; i < e->values_count; i++) {
		brk_java_double(e->values[i].value, num, sizeof(num));
		printf("\t%.*s=%s", (int)e->values[i].key.len, e->values[i].key.ptr, num);
	}
	printf("\n");
}

static int describe(adm_ctx *ctx, const entity *en)
{
	DescribeClientQuotasRequest_DescribeClientQuotasComponent comp[3];
	DescribeClientQuotasRequest req;
	DescribeClientQuotasRequest_init(&req);
	req.components = comp;
	if (en->user) {
		DescribeClientQuotasRequest_DescribeClientQuotasComponent *c =
		    &comp[req.components_count++];
		DescribeClientQuotasRequest_DescribeClientQuotasComponent_init(c);
		c->entity_type = proto_cstr("user");
		c->match_type = en->user_name ? MATCH_EXACT : MATCH_DEFAULT;
		c->match = proto_cstr(en->user_name);
	}
	if (en->client) {
		DescribeClientQuotasRequest_DescribeClientQuotasComponent *c =
		    &comp[req.components_count++];
		DescribeClientQuotasRequest_DescribeClientQuotasComponent_init(c);
		c->entity_type = proto_cstr("client-id");
		c->match_type = en->client_name ? MATCH_EXACT : MATCH_DEFAULT;
		c->match = proto_cstr(en->client_name);
	}
	if (en->ip) {
		DescribeClientQuotasRequest_DescribeClientQuotasComponent *c =
		    &comp[req.components_count++];
		DescribeClientQuotasRequest_DescribeClientQuotasComponent_init(c);
		c->entity_type = proto_cstr("ip");
		c->match_type = en->ip_name ? MATCH_EXACT : MATCH_DEFAULT;
		c->match = proto_cstr(en->ip_name);
	}
	req.strict = req.components_count > 0;
	DescribeClientQuotasResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_describe_client_quotas, &req, &resp, &v) < 0)
		return 1;
	if (resp.error_code != 0) {
		adm_error(ctx, "%s", adm_errstr(ctx, resp.error_code, resp.error_message));
		return 1;
	}
	for (int32_t i = 0; i < resp.entries_count; i++)
		print_entity(&resp.entries[i]);
	return 0;
}

static int run_quotas(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "user-default", no_argument, NULL, 'U' },
		{ "client-id", required_argument, NULL, 'c' },
		{ "client-id-default", no_argument, NULL, 'C' },
		{ "ip", required_argument, NULL, 'i' },
		{ "ip-default", no_argument, NULL, 'I' },
		{ "set", required_argument, NULL, 's' },
		{ "delete", required_argument, NULL, 'd' },
		{ "validate-only", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	entity en = { 0 };
	AlterClientQuotasRequest_AlterClientQuotasOp *ops =
	    adm_alloc(ctx, sizeof(*ops) * (size_t)argc);
	int32_t nops = 0;
	bool validate = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'u':
		case 'U':
			if (en.user)
				return adm_usage(ctx, "one --user or --user-default");
			en.user = true;
			en.user_name = o == 'u' ? optarg : NULL;
			break;
		case 'c':
		case 'C':
			if (en.client)
				return adm_usage(ctx, "one --client-id or --client-id-default");
			en.client = true;
			en.client_name = o == 'c' ? optarg : NULL;
			break;
		case 'i':
		case 'I':
			if (en.ip)
				return adm_usage(ctx, "one --ip or --ip-default");
			en.ip = true;
			en.ip_name = o == 'i' ? optarg : NULL;
			break;
		case 's': {
			AlterClientQuotasRequest_AlterClientQuotasOp *op = &ops[nops++];
			AlterClientQuotasRequest_AlterClientQuotasOp_init(op);
			proto_str k, val;
			if (adm_parse_kv(optarg, &k, &val) < 0)
				return adm_usage(ctx, "--set '%s' is not key=value", optarg);
			char *end;
			char *vs = adm_strdup(ctx, val);
			op->value = strtod(vs, &end);
			if (!*vs || *end)
				return adm_usage(ctx, "--set '%s': the value is not a number", optarg);
			op->key = k;
			break;
		}
		case 'd': {
			AlterClientQuotasRequest_AlterClientQuotasOp *op = &ops[nops++];
			AlterClientQuotasRequest_AlterClientQuotasOp_init(op);
			if (!optarg[0] || strchr(optarg, '='))
				return adm_usage(ctx, "--delete takes a quota name, not '%s'", optarg);
			op->key = proto_cstr(optarg);
			op->remove = true;
			break;
		}
		case 'V':
			validate = true;
			break;
		default:
			return adm_bad_option(ctx, argv);
		}
	}
	if (optind != argc)
		return adm_usage(ctx, "unexpected argument '%s'", argv[optind]);
	/* as kafka-configs.sh: an IP entity is never combined with the others */
	if (en.ip && (en.user || en.client))
		return adm_usage(ctx, "--ip/--ip-default cannot be combined with --user or "
				      "--client-id");
	if (nops == 0)
		return describe(ctx, &en);
	if (!en.user && !en.client && !en.ip)
		return adm_usage(ctx, "--set and --delete need --user/--user-default and/or "
				      "--client-id/--client-id-default, or --ip/--ip-default");
	AlterClientQuotasRequest_AlterClientQuotasEntity ents[2];
	AlterClientQuotasRequest_AlterClientQuotasEntry entry;
	AlterClientQuotasRequest_AlterClientQuotasEntry_init(&entry);
	entry.entity = ents;
	if (en.user) {
		AlterClientQuotasRequest_AlterClientQuotasEntity *e = &ents[entry.entity_count++];
		AlterClientQuotasRequest_AlterClientQuotasEntity_init(e);
		e->entity_type = proto_cstr("user");
		e->entity_name = proto_cstr(en.user_name);
	}
	if (en.client) {
		AlterClientQuotasRequest_AlterClientQuotasEntity *e = &ents[entry.entity_count++];
		AlterClientQuotasRequest_AlterClientQuotasEntity_init(e);
		e->entity_type = proto_cstr("client-id");
		e->entity_name = proto_cstr(en.client_name);
	}
	if (en.ip) {
		AlterClientQuotasRequest_AlterClientQuotasEntity *e = &ents[entry.entity_count++];
		AlterClientQuotasRequest_AlterClientQuotasEntity_init(e);
		e->entity_type = proto_cstr("ip");
		e->entity_name = proto_cstr(en.ip_name);
	}
	entry.ops = ops;
	entry.ops_count = nops;
	AlterClientQuotasRequest req;
	AlterClientQuotasRequest_init(&req);
	req.entries = &entry;
	req.entries_count = 1;
	req.validate_only = validate;
	AlterClientQuotasResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_alter_client_quotas, &req, &resp, &v) < 0)
		return 1;
	if (resp.entries_count != 1) {
		adm_error(ctx, "AlterClientQuotas: %d results for 1 entry", (int)resp.entries_count);
		return 1;
	}
	if (resp.entries[0].error_code != 0) {
		adm_error(ctx, "%s",
			  adm_errstr(ctx, resp.entries[0].error_code, resp.entries[0].error_message));
		return 1;
	}
	if (en.ip)
		printf("%s the quotas of ip=%s.\n", validate ? "Validated" : "Updated",
		       en.ip_name ? en.ip_name : "<default>");
	else
		printf("%s the quotas of user=%s, client-id=%s.\n", validate ? "Validated" : "Updated",
		       !en.user ? "-" : en.user_name ? en.user_name : "<default>",
		       !en.client ? "-" : en.client_name ? en.client_name : "<default>");
	return 0;
}

const adm_command adm_cmd_quotas = {
	"quotas",
	"[--user U|--user-default] [--client-id C|--client-id-default] | [--ip A|--ip-default] "
	"[--set K=V]...",
	"show or change client quotas",
	"usage: samsa-admin -b HOST:PORT quotas [ENTITY] [--set KEY=VALUE]... [--delete KEY]...\n"
	"\n"
	"Client quotas (KIP-546: AlterClientQuotas, DescribeClientQuotas), what\n"
	"kafka-configs.sh --entity-type users/clients/ips does. ENTITY: --user U or\n"
	"--user-default, and/or --client-id C or --client-id-default; or alone\n"
	"--ip ADDR or --ip-default (an IP's quota: connection_creation_rate,\n"
	"connections accepted per second).\n"
	"Without --set or --delete, print the quotas of exactly that entity (or of\n"
	"every entity), one line each: 'Entity: user=U, client-id=C<TAB>KEY=VALUE...'\n"
	"('Entity: ip=ADDR<TAB>...' for an IP).\n"
	"With them, set or remove those quotas (producer_byte_rate,\n"
	"consumer_byte_rate in bytes/s, request_percentage), the others kept.\n"
	"      --validate-only   check the change, apply nothing\n",
	run_quotas,
};
