/*
 * cmd_cluster.c - the cluster's brokers:
 *
 *   brokers            DescribeCluster (Metadata when a broker does not
 *                      serve it): cluster id, controller, every broker.
 *   log-dirs [ID...]   DescribeLogDirs to each broker (kafka-log-dirs.sh):
 *                      per log directory and partition, the size and the
 *                      offset lag.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* ---- brokers ---- */

typedef struct broker_line {
	int32_t id;
	proto_str host;
	int32_t port;
	proto_str rack;
	bool fenced;
} broker_line;

static int cmp_broker(const void *a, const void *b)
{
	return cmp_int32(&((const broker_line *)a)->id, &((const broker_line *)b)->id);
}

static int run_brokers(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	if (optind < argc)
		return adm_usage(ctx, "unexpected argument '%s'", argv[optind]);
	adm_conn *c = adm_any(ctx);
	if (!c)
		return 1;
	proto_str cluster_id;
	int32_t controller, n;
	broker_line *lines;
	if (adm_conn_version(c, adm_api_describe_cluster.key) >= 0) {
		DescribeClusterRequest req;
		DescribeClusterRequest_init(&req);
		DescribeClusterResponse resp;
		int16_t v;
		if (adm_any_call(ctx, &adm_api_describe_cluster, &req, &resp, &v) < 0)
			return 1;
		if (resp.error_code != 0) {
			adm_error(ctx, "DescribeCluster: %s",
				  adm_errstr(ctx, resp.error_code, resp.error_message));
			return 1;
		}
		cluster_id = resp.cluster_id;
		controller = resp.controller_id;
		n = resp.brokers_count;
		lines = adm_alloc(ctx, sizeof(*lines) * (size_t)(n ? n : 1));
		for (int32_t i = 0; i < n; i++)
			lines[i] = (broker_line){ resp.brokers[i].broker_id, resp.brokers[i].host,
						  resp.brokers[i].port, resp.brokers[i].rack,
						  resp.brokers[i].is_fenced };
	} else {
		MetadataResponse md;
		int16_t v;
		proto_str none = proto_str_of("", 0);
		if (adm_metadata(ctx, &none, 0, &md, &v) < 0)
			return 1;
		cluster_id = md.cluster_id;
		controller = md.controller_id;
		n = md.brokers_count;
		lines = adm_alloc(ctx, sizeof(*lines) * (size_t)(n ? n : 1));
		for (int32_t i = 0; i < n; i++)
			lines[i] = (broker_line){ md.brokers[i].node_id, md.brokers[i].host,
						  md.brokers[i].port, md.brokers[i].rack, false };
	}
	qsort(lines, (size_t)n, sizeof(*lines), cmp_broker);
	printf("ClusterId: %.*s\tController: %d\n", cluster_id.len > 0 ? (int)cluster_id.len : 0,
	       cluster_id.ptr ? cluster_id.ptr : "", (int)controller);
	for (int32_t i = 0; i < n; i++)
		printf("Broker: %d\tHost: %.*s\tPort: %d\tRack: %.*s%s%s\n", (int)lines[i].id,
		       (int)lines[i].host.len, lines[i].host.ptr, (int)lines[i].port,
		       lines[i].rack.len > 0 ? (int)lines[i].rack.len : 1,
		       lines[i].rack.len > 0 ? lines[i].rack.ptr : "-",
		       lines[i].id == controller ? "\tController: true" : "",
		       lines[i].fenced ? "\tFenced: true" : "");
	return adm_status(ctx);
}

const adm_command adm_cmd_brokers = {
	"brokers", "", "the cluster id, the controller and the live brokers",
	"usage: samsa-admin -b HOST:PORT brokers\n"
	"\n"
	"Print the cluster id and the controller's broker id, then a line per live\n"
	"(registered) broker with its advertised host, port and rack\n"
	"(DescribeCluster to any broker; Metadata where it is not served).\n",
	run_brokers,
};

/* ---- log-dirs ---- */

typedef struct dir_part {
	proto_str topic;
	const DescribeLogDirsResponse_DescribeLogDirsPartition *p;
} dir_part;

static int cmp_dir_part(const void *a, const void *b)
{
	const dir_part *x = a, *y = b;
	int32_t n = x->topic.len < y->topic.len ? x->topic.len : y->topic.len;
	int c = n > 0 ? memcmp(x->topic.ptr, y->topic.ptr, (size_t)n) : 0;
	if (c)
		return c;
	if (x->topic.len != y->topic.len)
		return x->topic.len < y->topic.len ? -1 : 1;
	return cmp_int32(&x->p->partition_index, &y->p->partition_index);
}

static void log_dirs_of(adm_ctx *ctx, int32_t id)
{
	DescribeLogDirsRequest req;
	DescribeLogDirsRequest_init(&req);
	req.topics_count = -1; /* every partition */
	DescribeLogDirsResponse resp;
	int16_t v;
	if (adm_broker_call(ctx, id, &adm_api_describe_log_dirs, &req, &resp, &v) < 0)
		return;
	if (resp.error_code != 0) {
		adm_error(ctx, "broker %d: %s", (int)id, proto_err_name(resp.error_code));
		return;
	}
	for (int32_t d = 0; d < resp.results_count; d++) {
		const DescribeLogDirsResponse_DescribeLogDirsResult *r = &resp.results[d];
		printf("Broker: %d\tLogDir: %.*s\tError: %s", (int)id, (int)r->log_dir.len,
		       r->log_dir.ptr, proto_err_name(r->error_code));
		if (r->total_bytes >= 0)
			printf("\tTotalBytes: %lld\tUsableBytes: %lld", (long long)r->total_bytes,
			       (long long)r->usable_bytes);
		printf("\n");
		if (r->error_code != 0)
			adm_error(ctx, "broker %d: log dir %.*s: %s", (int)id, (int)r->log_dir.len,
				  r->log_dir.ptr, proto_err_name(r->error_code));
		int32_t n = 0;
		for (int32_t t = 0; t < r->topics_count; t++)
			n += r->topics[t].partitions_count;
		dir_part *parts = adm_alloc(ctx, sizeof(*parts) * (size_t)(n ? n : 1));
		n = 0;
		for (int32_t t = 0; t < r->topics_count; t++)
			for (int32_t p = 0; p < r->topics[t].partitions_count; p++)
				parts[n++] = (dir_part){ r->topics[t].name, &r->topics[t].partitions[p] };
		qsort(parts, (size_t)n, sizeof(*parts), cmp_dir_part);
		for (int32_t i = 0; i < n; i++)
			printf("\tPartition: %.*s:%d\tSize: %lld\tOffsetLag: %lld%s\n",
			       (int)parts[i].topic.len, parts[i].topic.ptr,
			       (int)parts[i].p->partition_index, (long long)parts[i].p->partition_size,
			       (long long)parts[i].p->offset_lag,
			       parts[i].p->is_future_key ? "\tFuture: true" : "");
	}
}

static int run_log_dirs(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	if (getopt_long(argc, argv, "", opts, NULL) != -1)
		return adm_bad_option(ctx, argv);
	int n = argc - optind;
	int32_t *ids;
	if (n > 0) {
		ids = adm_alloc(ctx, sizeof(*ids) * (size_t)n);
		for (int i = 0; i < n; i++) {
			long v;
			if (!adm_parse_int(argv[optind + i], 0, INT32_MAX, &v))
				return adm_usage(ctx, "broker id '%s' is not a number", argv[optind + i]);
			ids[i] = (int32_t)v;
		}
	} else {
		MetadataResponse md;
		int16_t v;
		proto_str none = proto_str_of("", 0);
		if (adm_metadata(ctx, &none, 0, &md, &v) < 0)
			return 1;
		n = md.brokers_count;
		ids = adm_alloc(ctx, sizeof(*ids) * (size_t)(n ? n : 1));
		for (int i = 0; i < n; i++)
			ids[i] = md.brokers[i].node_id;
		qsort(ids, (size_t)n, sizeof(*ids), cmp_int32);
	}
	for (int i = 0; i < n; i++)
		log_dirs_of(ctx, ids[i]);
	return adm_status(ctx);
}

const adm_command adm_cmd_log_dirs = {
	"log-dirs", "[BROKER...]", "log directories: size and offset lag of each partition",
	"usage: samsa-admin -b HOST:PORT log-dirs [BROKER...]\n"
	"\n"
	"Ask each named broker (every live broker without one) for its log\n"
	"directories (DescribeLogDirs, as kafka-log-dirs.sh): a line per directory\n"
	"with its error and the volume's total and usable bytes, then a line per\n"
	"partition replica in it: its size in bytes and its offset lag (how far the\n"
	"replica's log end is behind the high watermark; 0 on the leader).\n",
	run_log_dirs,
};
