/*
 * describe_log_dirs.c - DescribeLogDirs (API key 35), versions 1-5
 * (KIP-113; Kafka's KafkaApis.handleDescribeLogDirsRequest and
 * ReplicaManager.describeLogDirs): one result for the log directory this
 * broker uses (the first of log.dirs; the others are not opened, see
 * broker/config.c), its absolute path, and per topic the requested
 * partitions whose log is in it: the size of the log segments in bytes,
 * the offset lag max(high watermark - log end offset, 0) (0 on one node)
 * and IsFutureKey false (no replica moves between directories). Topics null
 * asks for every partition; a requested partition that does not exist, or
 * whose log is offline, is left out, and so is a topic with none left (as
 * Kafka). v4+ give the total and usable bytes of the directory's volume
 * (statvfs; an error there is UNKNOWN_SERVER_ERROR for the directory, as
 * Kafka's getFileStore failing), v5 IsCordoned false. The top-level error
 * (v3+) is NONE: there is no authorizer.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* One requested partition that has a log here. */
typedef struct wanted {
	brk_topic *topic;
	int32_t index;
} wanted;

static int wanted_cmp(const void *a, const void *b)
{
	const wanted *x = a, *y = b;
	if (x->topic != y->topic)
		return strcmp(x->topic->name, y->topic->name);
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The directory as an absolute path, like Java's Path.toAbsolutePath (no
 * symlinks resolved). NULL when the arena is full. */
static const char *absolute_dir(brk_request *req)
{
	const char *d = server.cfg.log_dir;
	char cwd[PATH_MAX];
	bool relative = d[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL;
	size_t n = strlen(d) + (relative ? strlen(cwd) + 1 : 0) + 1;
	char *s = proto_arena_alloc(req->arena, n);
	if (!s)
		return NULL;
	if (relative)
		snprintf(s, n, "%s/%s", cwd, d);
	else
		snprintf(s, n, "%s", d);
	return s;
}

/*
 * The partitions to describe, sorted by topic name and index without
 * repeats, into *out (arena). Returns the count, or -1 when the arena is
 * full.
 */
static int64_t collect(brk_request *req, const DescribeLogDirsRequest *m, wanted **out)
{
	int64_t cap = 0;
	if (m->topics_count < 0) {
		cap = brk_partitions_partition_count(&server.partitions);
	} else {
		for (int32_t i = 0; i < m->topics_count; i++)
			cap += m->topics[i].partitions_count > 0 ? m->topics[i].partitions_count : 0;
	}
	wanted *w = proto_arena_alloc(req->arena, (size_t)(cap ? cap : 1) * sizeof(*w));
	if (!w)
		return -1;
	int64_t n = 0;
	if (m->topics_count < 0) {
		brk_topic *t;
		for (int32_t i = 0; (t = brk_partitions_topic_at(&server.partitions, i)); i++) {
			for (int32_t p = 0; t && p < t->npartitions; p++)
				if (t->partitions[p]->log)
					w[n++] = (wanted){ t, p };
		}
	} else {
		for (int32_t i = 0; i < m->topics_count; i++) {
			const DescribeLogDirsRequest_DescribableLogDirTopic *q = &m->topics[i];
			brk_topic *t = brk_topic_find(&server.partitions, q->topic.ptr, q->topic.len);
			for (int32_t k = 0; t && k < q->partitions_count; k++) {
				brk_partition *p = brk_topic_partition(t, q->partitions[k]);
				if (p && p->log)
					w[n++] = (wanted){ t, p->index };
			}
		}
	}
	if (n > 1)
		qsort(w, (size_t)n, sizeof(*w), wanted_cmp);
	int64_t k = 0;
	for (int64_t i = 0; i < n; i++)
		if (k == 0 || wanted_cmp(&w[k - 1], &w[i]) != 0)
			w[k++] = w[i];
	*out = w;
	return k;
}

/* Fill the topics of result r from the sorted list w. Returns 0 or -1. */
static int fill_topics(brk_request *req, DescribeLogDirsResponse_DescribeLogDirsResult *r,
		       const wanted *w, int64_t n)
{
	int32_t ntopics = 0;
	for (int64_t i = 0; i < n; i++)
		if (i == 0 || w[i].topic != w[i - 1].topic)
			ntopics++;
	r->topics = proto_arena_alloc(req->arena, (size_t)(ntopics ? ntopics : 1) * sizeof(*r->topics));
	if (!r->topics)
		return -1;
	r->topics_count = ntopics;
	int64_t i = 0;
	for (int32_t t = 0; t < ntopics; t++) {
		DescribeLogDirsResponse_DescribeLogDirsTopic *rt = &r->topics[t];
		DescribeLogDirsResponse_DescribeLogDirsTopic_init(rt);
		int64_t first = i;
		while (i < n && w[i].topic == w[first].topic)
			i++;
		brk_topic *bt = w[first].topic;
		rt->name = proto_cstr(bt->name);
		rt->partitions_count = (int32_t)(i - first);
		rt->partitions = proto_arena_alloc(req->arena, (size_t)rt->partitions_count *
							       sizeof(*rt->partitions));
		if (!rt->partitions)
			return -1;
		for (int64_t k = first; k < i; k++) {
			DescribeLogDirsResponse_DescribeLogDirsPartition *rp = &rt->partitions[k - first];
			DescribeLogDirsResponse_DescribeLogDirsPartition_init(rp);
			log_partition *lp = brk_topic_partition(bt, w[k].index)->log;
			int64_t lag = log_high_watermark(lp) - log_end_offset(lp);
			rp->partition_index = w[k].index;
			rp->partition_size = log_size_bytes(lp);
			rp->offset_lag = lag > 0 ? lag : 0;
			rp->is_future_key = false;
		}
	}
	return 0;
}

int brk_handle_describe_log_dirs(brk_request *req)
{
	DescribeLogDirsRequest m;
	DescribeLogDirsRequest_init(&m);
	if (DescribeLogDirsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;

	DescribeLogDirsResponse resp;
	DescribeLogDirsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.error_code = KERR_NONE;
	/* KafkaApis.handleDescribeLogDirsRequest: DESCRIBE on the cluster,
	 * else no log dirs (and v3+ CLUSTER_AUTHORIZATION_FAILED). */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE)) {
		if (req->api_version >= 3)
			resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp.results_count = 0;
		return DescribeLogDirsResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	resp.results = proto_arena_alloc(req->arena, sizeof(*resp.results));
	if (!resp.results)
		return BRK_CLOSE;
	resp.results_count = 1;
	DescribeLogDirsResponse_DescribeLogDirsResult *r = &resp.results[0];
	DescribeLogDirsResponse_DescribeLogDirsResult_init(r);
	const char *dir = absolute_dir(req);
	if (!dir)
		return BRK_CLOSE;
	r->log_dir = proto_cstr(dir);
	r->topics_count = 0;

	struct statvfs vfs;
	if (statvfs(server.cfg.log_dir, &vfs) != 0) {
		r->error_code = KERR_UNKNOWN_SERVER_ERROR;
	} else {
		/* Java's FileStore.getTotalSpace / getUsableSpace. */
		unsigned long long unit = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
		unsigned long long total = (unsigned long long)vfs.f_blocks * unit;
		unsigned long long usable = (unsigned long long)vfs.f_bavail * unit;
		r->error_code = KERR_NONE;
		r->total_bytes = total > INT64_MAX ? INT64_MAX : (int64_t)total;
		r->usable_bytes = usable > INT64_MAX ? INT64_MAX : (int64_t)usable;
		r->is_cordoned = false;
		wanted *w;
		int64_t n = collect(req, &m, &w);
		if (n < 0 || fill_topics(req, r, w, n))
			return BRK_CLOSE;
	}
	if (DescribeLogDirsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
