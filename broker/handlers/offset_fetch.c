/*
 * offset_fetch.c - OffsetFetch (API key 9), versions 1-10: a group's
 * committed offsets. v1-7 ask for one group (group error at the top, v2+),
 * v8+ for several, each with its own error; v10 names topics by id.
 *
 * As Kafka (GroupCoordinatorService.fetchOffsets / fetchAllOffsets,
 * OffsetMetadataManager):
 *  - a null group id: INVALID_GROUP_ID for that group; an empty one ("")
 *    is looked up like any other ("for backwards compatibility",
 *    GroupCoordinatorService.fetchOffsets / fetchAllOffsets in Kafka 4.x);
 *  - a group this broker does not coordinate: NOT_COORDINATOR for that
 *    group (group.h; v1, without a group error, on every partition asked);
 *    a group of a partition still loading here: COORDINATOR_LOAD_IN_PROGRESS
 *    the same way (the client retries);
 *  - the offsets are read from memory without waiting for the last write
 *    to be committed (group.h);
 *  - topics null (v2+): every committed offset of the group; an unknown
 *    group then has no topics;
 *  - a requested partition without a committed offset, or of an unknown
 *    group: offset -1, leader epoch -1, metadata "", error NONE;
 *  - v10: a topic id that does not exist answers UNKNOWN_TOPIC_ID for its
 *    partitions; offsets of deleted topics are left out of "all";
 *  - require_stable (v7+): a partition with a pending transactional offset
 *    in the group (TxnOffsetCommit of a transaction not ended yet, also
 *    after a restart) answers UNSTABLE_OFFSET_COMMIT at partition level
 *    with offset -1, leader epoch -1 and metadata "", so the consumer
 *    retries; without require_stable the committed offset is answered and
 *    pending ones are ignored. With topics null only committed partitions
 *    are listed (OffsetMetadataManager.fetchOffsets / fetchAllOffsets).
 */
#include <stdlib.h>
#include <string.h>

#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/txn_offsets.h"
#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* One committed offset of a group, for sorting by topic then partition. */
typedef struct fetch_entry {
	const char *topic;
	int32_t tlen;
	int32_t partition;
	const grp_offset *o;
} fetch_entry;

static int entry_cmp(const void *a, const void *b)
{
	const fetch_entry *x = a, *y = b;
	int32_t l = x->tlen < y->tlen ? x->tlen : y->tlen;
	int c = memcmp(x->topic, y->topic, (size_t)l);
	if (c == 0)
		c = (x->tlen > y->tlen) - (x->tlen < y->tlen);
	if (c == 0)
		c = (x->partition > y->partition) - (x->partition < y->partition);
	return c;
}

static bool same_topic(const fetch_entry *a, const fetch_entry *b)
{
	return a->tlen == b->tlen && memcmp(a->topic, b->topic, (size_t)a->tlen) == 0;
}

/* Entries from i on with e[i]'s topic. */
static int32_t topic_run(const fetch_entry *e, int32_t n, int32_t i)
{
	int32_t k = i;
	while (k < n && same_topic(&e[k], &e[i]))
		k++;
	return k - i;
}

/* The group's offsets sorted, in the arena; *ntopics distinct topics.
 * For v10 (by_id) offsets of topics that no longer exist are left out.
 * Returns NULL only on arena exhaustion (n > 0). */
static fetch_entry *sorted_offsets(proto_arena *a, const grp_group *g, bool by_id, int32_t *n,
				   int32_t *ntopics)
{
	int32_t count = g ? grp_offsets_count(g->offsets) : 0;
	*n = 0;
	*ntopics = 0;
	fetch_entry *e = proto_arena_alloc(a, (size_t)(count ? count : 1) * sizeof(*e));
	if (!e)
		return NULL;
	for (int32_t i = 0; i < count; i++) {
		fetch_entry *x = &e[*n];
		x->o = grp_offsets_at(g->offsets, i, &x->topic, &x->tlen, &x->partition);
		if (by_id && !brk_topic_find(&server.partitions, x->topic, x->tlen))
			continue;
		(*n)++;
	}
	qsort(e, (size_t)*n, sizeof(*e), entry_cmp);
	for (int32_t i = 0; i < *n; i++)
		if (i == 0 || !same_topic(&e[i], &e[i - 1]))
			(*ntopics)++;
	return e;
}

/* Whether (topic, partition) must answer UNSTABLE_OFFSET_COMMIT. */
static bool unstable(const grp_group *g, bool require_stable, const char *topic, int32_t tlen,
		     int32_t partition)
{
	return require_stable && g && tlen >= 0 && grp_txn_pending(g->txns, topic, tlen, partition);
}

/* The answer for one partition: committed offset or -1 / -1 / "";
 * *error UNSTABLE_OFFSET_COMMIT (with -1 / -1 / "") when require_stable
 * and a transactional offset is pending. */
static void lookup(const grp_group *g, bool require_stable, proto_str topic, int32_t partition,
		   int64_t *offset, int32_t *epoch, proto_str *metadata, int16_t *error)
{
	bool pend = unstable(g, require_stable, topic.ptr, topic.len, partition);
	const grp_offset *o = g && topic.len >= 0 && !pend
				      ? grp_offsets_get(g->offsets, topic.ptr, topic.len, partition)
				      : NULL;
	*offset = o ? o->offset : -1;
	*epoch = o ? o->leader_epoch : -1;
	*metadata = o ? proto_str_of(o->metadata, o->metadata_len) : proto_str_of("", 0);
	*error = pend ? KERR_UNSTABLE_OFFSET_COMMIT : KERR_NONE;
}

/* The answer for a listed committed offset (topics null): its value, or
 * UNSTABLE_OFFSET_COMMIT with -1 / -1 / "". */
static void listed(const grp_group *g, bool require_stable, const fetch_entry *e, int64_t *offset,
		   int32_t *epoch, proto_str *metadata, int16_t *error)
{
	bool pend = unstable(g, require_stable, e->topic, e->tlen, e->partition);
	*offset = pend ? -1 : e->o->offset;
	*epoch = pend ? -1 : e->o->leader_epoch;
	*metadata = pend ? proto_str_of("", 0) : proto_str_of(e->o->metadata, e->o->metadata_len);
	*error = pend ? KERR_UNSTABLE_OFFSET_COMMIT : KERR_NONE;
}

/* KafkaApis.handleOffsetFetchRequest: DESCRIBE on the group, then on each
 * topic (a listed partition of a topic not described: TOPIC_AUTHORIZATION_FAILED;
 * such topics are left out of "all topics"). */
static bool topic_ok(const brk_request *req, const char *name, int32_t len)
{
	return brk_acl_permits(req, CTL_ACL_RES_TOPIC, name, len, CTL_ACL_OP_DESCRIBE);
}

static grp_group *find_group(const brk_request *req, proto_str id, int *err)
{
	*err = KERR_NONE;
	if (!brk_acl_permits_str(req, CTL_ACL_RES_GROUP, id, CTL_ACL_OP_DESCRIBE)) {
		*err = KERR_GROUP_AUTHORIZATION_FAILED;
		return NULL;
	}
	if (id.len < 0) {
		*err = KERR_INVALID_GROUP_ID;
		return NULL;
	}
	*err = grp_coordinator_error(&server.groups, id.ptr, id.len);
	if (*err)
		return NULL;
	grp_group *g = grp_find(&server.groups, id.ptr, id.len);
	return g && g->state != GRP_DEAD ? g : NULL;
}

/* v1-7: one group. Returns 0 or -1 (arena exhausted). */
static int fetch_single(brk_request *req, const OffsetFetchRequest *m, OffsetFetchResponse *resp)
{
	int err;
	grp_group *g = find_group(req, m->group_id, &err);
	resp->error_code = (int16_t)err;
	/* v1 has no group error: a coordinator error goes on the partitions. */
	bool per_partition = (err == KERR_NOT_COORDINATOR || err == KERR_COORDINATOR_LOAD_IN_PROGRESS ||
			      err == KERR_GROUP_AUTHORIZATION_FAILED) &&
			     req->api_version < 2;
	if (err && !(per_partition && m->topics_count >= 0))
		return 0;
	if (m->topics_count < 0) {
		int32_t n, nt;
		fetch_entry *e = sorted_offsets(req->arena, g, false, &n, &nt);
		if (!e)
			return -1;
		resp->topics_count = nt;
		resp->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp->topics));
		if (!resp->topics)
			return -1;
		resp->topics_count = 0;
		OffsetFetchResponse_OffsetFetchResponseTopic *tr = NULL;
		for (int32_t i = 0; i < n; i++) {
			if (!topic_ok(req, e[i].topic, e[i].tlen))
				continue; /* all of its run: the check is per topic */
			if (!tr || !same_topic(&e[i], &e[i - 1])) {
				tr = &resp->topics[resp->topics_count++];
				OffsetFetchResponse_OffsetFetchResponseTopic_init(tr);
				tr->name = proto_str_of(e[i].topic, e[i].tlen);
				tr->partitions = proto_arena_alloc(
					req->arena, (size_t)topic_run(e, n, i) * sizeof(*tr->partitions));
				if (!tr->partitions)
					return -1;
			}
			OffsetFetchResponse_OffsetFetchResponsePartition *pr =
				&tr->partitions[tr->partitions_count++];
			OffsetFetchResponse_OffsetFetchResponsePartition_init(pr);
			pr->partition_index = e[i].partition;
			listed(g, m->require_stable, &e[i], &pr->committed_offset,
			       &pr->committed_leader_epoch, &pr->metadata, &pr->error_code);
		}
		return 0;
	}
	int32_t nt = m->topics_count;
	resp->topics_count = nt;
	resp->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*resp->topics));
	if (!resp->topics)
		return -1;
	for (int32_t i = 0; i < nt; i++) {
		const OffsetFetchRequest_OffsetFetchRequestTopic *rt = &m->topics[i];
		OffsetFetchResponse_OffsetFetchResponseTopic *tr = &resp->topics[i];
		OffsetFetchResponse_OffsetFetchResponseTopic_init(tr);
		tr->name = rt->name;
		int32_t np = rt->partition_indexes_count > 0 ? rt->partition_indexes_count : 0;
		tr->partitions_count = np;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partitions));
		if (!tr->partitions)
			return -1;
		for (int32_t j = 0; j < np; j++) {
			OffsetFetchResponse_OffsetFetchResponsePartition *pr = &tr->partitions[j];
			OffsetFetchResponse_OffsetFetchResponsePartition_init(pr);
			pr->partition_index = rt->partition_indexes[j];
			lookup(g, m->require_stable, rt->name, pr->partition_index, &pr->committed_offset,
			       &pr->committed_leader_epoch, &pr->metadata, &pr->error_code);
			if (per_partition)
				pr->error_code = (int16_t)err;
			else if (!topic_ok(req, rt->name.len > 0 ? rt->name.ptr : "",
					   rt->name.len > 0 ? rt->name.len : 0)) {
				pr->committed_offset = -1;
				pr->committed_leader_epoch = -1;
				pr->metadata = proto_cstr("");
				pr->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
			}
		}
	}
	return 0;
}

/* v8+: one entry of the Groups array. Returns 0 or -1. */
static int fetch_group(brk_request *req, const OffsetFetchRequest_OffsetFetchRequestGroup *rg,
		       bool require_stable, OffsetFetchResponse_OffsetFetchResponseGroup *out)
{
	bool by_id = req->api_version >= 10;
	OffsetFetchResponse_OffsetFetchResponseGroup_init(out);
	out->group_id = rg->group_id;
	int err;
	grp_group *g = find_group(req, rg->group_id, &err);
	out->error_code = (int16_t)err;
	if (err)
		return 0;
	if (rg->topics_count < 0) {
		int32_t n, nt;
		fetch_entry *e = sorted_offsets(req->arena, g, by_id, &n, &nt);
		if (!e)
			return -1;
		out->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*out->topics));
		if (!out->topics)
			return -1;
		OffsetFetchResponse_OffsetFetchResponseTopics *tr = NULL;
		for (int32_t i = 0; i < n; i++) {
			if (!topic_ok(req, e[i].topic, e[i].tlen))
				continue; /* all of its run: the check is per topic */
			if (!tr || !same_topic(&e[i], &e[i - 1])) {
				tr = &out->topics[out->topics_count++];
				OffsetFetchResponse_OffsetFetchResponseTopics_init(tr);
				tr->name = proto_str_of(e[i].topic, e[i].tlen);
				if (by_id) {
					brk_topic *t = brk_topic_find(&server.partitions, e[i].topic, e[i].tlen);
					if (t)
						memcpy(tr->topic_id.b, t->id, 16);
				}
				tr->partitions = proto_arena_alloc(
					req->arena, (size_t)topic_run(e, n, i) * sizeof(*tr->partitions));
				if (!tr->partitions)
					return -1;
			}
			OffsetFetchResponse_OffsetFetchResponsePartitions *pr =
				&tr->partitions[tr->partitions_count++];
			OffsetFetchResponse_OffsetFetchResponsePartitions_init(pr);
			pr->partition_index = e[i].partition;
			listed(g, require_stable, &e[i], &pr->committed_offset,
			       &pr->committed_leader_epoch, &pr->metadata, &pr->error_code);
		}
		return 0;
	}
	int32_t nt = rg->topics_count;
	out->topics_count = nt;
	out->topics = proto_arena_alloc(req->arena, (size_t)(nt ? nt : 1) * sizeof(*out->topics));
	if (!out->topics)
		return -1;
	for (int32_t i = 0; i < nt; i++) {
		const OffsetFetchRequest_OffsetFetchRequestTopics *rt = &rg->topics[i];
		OffsetFetchResponse_OffsetFetchResponseTopics *tr = &out->topics[i];
		OffsetFetchResponse_OffsetFetchResponseTopics_init(tr);
		tr->name = rt->name;
		tr->topic_id = rt->topic_id;
		proto_str name = rt->name;
		int perr = KERR_NONE;
		if (by_id) {
			brk_topic *t = brk_topic_find_by_id(&server.partitions, rt->topic_id.b);
			if (t)
				name = proto_cstr(t->name);
			else
				perr = KERR_UNKNOWN_TOPIC_ID;
		}
		int32_t np = rt->partition_indexes_count > 0 ? rt->partition_indexes_count : 0;
		tr->partitions_count = np;
		tr->partitions = proto_arena_alloc(req->arena, (size_t)(np ? np : 1) * sizeof(*tr->partitions));
		if (!tr->partitions)
			return -1;
		for (int32_t j = 0; j < np; j++) {
			OffsetFetchResponse_OffsetFetchResponsePartitions *pr = &tr->partitions[j];
			OffsetFetchResponse_OffsetFetchResponsePartitions_init(pr);
			pr->partition_index = rt->partition_indexes[j];
			int16_t lerr;
			if (!perr && !topic_ok(req, name.len > 0 ? name.ptr : "",
					       name.len > 0 ? name.len : 0))
				perr = KERR_TOPIC_AUTHORIZATION_FAILED;
			lookup(perr ? NULL : g, require_stable, name, pr->partition_index,
			       &pr->committed_offset, &pr->committed_leader_epoch, &pr->metadata, &lerr);
			pr->error_code = perr ? (int16_t)perr : lerr;
		}
	}
	return 0;
}

int brk_handle_offset_fetch(brk_request *req)
{
	OffsetFetchRequest m;
	OffsetFetchRequest_init(&m);
	if (OffsetFetchRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	OffsetFetchResponse resp;
	OffsetFetchResponse_init(&resp);
	if (req->api_version < 8) {
		if (fetch_single(req, &m, &resp) < 0)
			return BRK_CLOSE;
	} else {
		int32_t ng = m.groups_count > 0 ? m.groups_count : 0;
		resp.groups_count = ng;
		resp.groups = proto_arena_alloc(req->arena, (size_t)(ng ? ng : 1) * sizeof(*resp.groups));
		if (!resp.groups)
			return BRK_CLOSE;
		for (int32_t i = 0; i < ng; i++)
			if (fetch_group(req, &m.groups[i], m.require_stable, &resp.groups[i]) < 0)
				return BRK_CLOSE;
	}
	if (OffsetFetchResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
