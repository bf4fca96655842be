/*
 * describe_topic_partitions.c - DescribeTopicPartitions (API key 75),
 * version 0 (KIP-966), as Kafka's DescribeTopicPartitionsRequestHandler
 * and MetadataCache.getTopicMetadataForDescribeTopicResponse answer it,
 * from this broker's partition registry (the view Metadata answers from).
 *
 * Which topics: the requested names, or every topic when the list is
 * empty; only names at or after the cursor's topic (byte order, which is
 * Java's String order for the characters topic names may hold), without
 * repeats, sorted by name.
 *
 * Bad cursors are INVALID_REQUEST, answered as Kafka's error response (every
 * requested topic with that code and no partitions, no next cursor): a
 * cursor whose topic is not in a non-empty request list, or a negative
 * cursor partition.
 *
 * Paging: at most max(min(max.request.partition.size.limit,
 * ResponsePartitionLimit), 1) partitions. The cursor's topic starts at the
 * cursor's partition, the others at 0. A topic cut by the limit ends the
 * answer with NextCursor at its first partition left out; when the limit is
 * used up exactly, NextCursor is the next topic (partition 0), whether it
 * exists or not. A cursor past a topic's last partition gives the topic
 * with no partitions.
 *
 * Per topic: error NONE, id, internal flag, TopicAuthorizedOperations (every
 * topic operation: there is no authorizer), and per partition what
 * brk_partition_describe says (as Metadata): leader (-1 when it has no
 * usable leader; the error stays NONE, as Kafka), leader epoch, replicas,
 * ISR, offline replicas; EligibleLeaderReplicas and LastKnownElr are empty
 * (no ELR in ZooKeeper mode). A requested topic that does not exist is
 * UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name Kafka
 * refuses) with a zero id; when every topic is asked for, there is none.
 * Nothing is created.
 *
 * ZooKeeper-mode Kafka refuses this API (its handler is KRaft-only); it is
 * served here because the registry holds the same view as KRaft's cache.
 */
#include <stdlib.h>
#include <string.h>

#include "broker/partitions.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static int str_cmp(proto_str a, proto_str b)
{
	int32_t n = a.len < b.len ? a.len : b.len;
	int c = n > 0 ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
	if (c)
		return c;
	return a.len < b.len ? -1 : a.len > b.len;
}

static int str_cmp_qsort(const void *a, const void *b)
{
	return str_cmp(*(const proto_str *)a, *(const proto_str *)b);
}

/* The names to describe, sorted, without repeats, at or after from (NULL:
 * no cursor), into *out (arena). Returns the count or -1 (arena full). */
static int32_t names_of(brk_request *req, const DescribeTopicPartitionsRequest *m,
			const proto_str *from, proto_str **out)
{
	bool all = m->topics_count <= 0;
	int32_t cap = all ? brk_partitions_topic_count(&server.partitions) : m->topics_count;
	proto_str *v = proto_arena_alloc(req->arena, (size_t)(cap > 0 ? cap : 1) * sizeof(*v));
	if (!v)
		return -1;
	int32_t n = 0;
	for (int32_t i = 0; i < cap; i++) {
		proto_str s = all ? proto_cstr(brk_partitions_topic_at(&server.partitions, i)->name)
				  : m->topics[i].name;
		if (!from || str_cmp(s, *from) >= 0)
			v[n++] = s;
	}
	if (n > 1)
		qsort(v, (size_t)n, sizeof(*v), str_cmp_qsort);
	int32_t k = 0;
	for (int32_t i = 0; i < n; i++)
		if (k == 0 || str_cmp(v[k - 1], v[i]) != 0)
			v[k++] = v[i];
	*out = v;
	return k;
}

/* Kafka's error response: every requested topic with code, no partitions. */
static int respond_error(brk_request *req, const DescribeTopicPartitionsRequest *m, int16_t code)
{
	DescribeTopicPartitionsResponse resp;
	DescribeTopicPartitionsResponse_init(&resp);
	int32_t n = m->topics_count > 0 ? m->topics_count : 0;
	resp.topics = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	for (int32_t i = 0; i < n; i++) {
		DescribeTopicPartitionsResponse_Topic_init(&resp.topics[i]);
		resp.topics[i].error_code = code;
		resp.topics[i].name = m->topics[i].name;
	}
	resp.topics_count = n;
	return DescribeTopicPartitionsResponse_encode(req->out, req->api_version, &resp) == 0
		       ? BRK_RESPOND
		       : BRK_CLOSE;
}

/* Partitions [from, to) of t into rt. Returns 0 or -1 (arena full). */
static int fill_partitions(brk_request *req, DescribeTopicPartitionsResponse_Topic *rt,
			   const brk_topic *t, int32_t from, int32_t to)
{
	int32_t n = to > from ? to - from : 0;
	rt->partitions = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*rt->partitions));
	if (!rt->partitions)
		return -1;
	rt->partitions_count = n;
	for (int32_t i = 0; i < n; i++) {
		const brk_partition *p = t->partitions[from + i];
		DescribeTopicPartitionsResponse_Partition *rp = &rt->partitions[i];
		DescribeTopicPartitionsResponse_Partition_init(rp);
		brk_partition_view pv;
		if (brk_partition_describe(p, &server.partitions.env, req->arena, &pv))
			return -1;
		rp->error_code = KERR_NONE;
		rp->partition_index = p->index;
		rp->leader_id = pv.leader;
		rp->leader_epoch = p->leader_epoch;
		rp->replica_nodes_count = p->nreplicas;
		rp->replica_nodes = p->replicas;
		rp->isr_nodes_count = pv.nisr;
		rp->isr_nodes = pv.isr;
		rp->eligible_leader_replicas_count = 0;
		rp->last_known_elr_count = 0;
		rp->offline_replicas_count = pv.noffline;
		rp->offline_replicas = pv.offline;
	}
	return 0;
}

int brk_handle_describe_topic_partitions(brk_request *req)
{
	DescribeTopicPartitionsRequest m;
	DescribeTopicPartitionsRequest_init(&m);
	if (DescribeTopicPartitionsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	bool all = m.topics_count <= 0;
	const proto_str *cursor = m.cursor_null ? NULL : &m.cursor.topic_name;

	proto_str *names;
	int32_t n = names_of(req, &m, cursor, &names);
	if (n < 0)
		return BRK_CLOSE;
	if (cursor && !all) {
		bool listed = false;
		for (int32_t i = 0; i < n && !listed; i++)
			listed = str_cmp(names[i], *cursor) == 0;
		if (!listed)
			return respond_error(req, &m, KERR_INVALID_REQUEST);
	}
	if (cursor && m.cursor.partition_index < 0)
		return respond_error(req, &m, KERR_INVALID_REQUEST);

	DescribeTopicPartitionsResponse resp;
	DescribeTopicPartitionsResponse_init(&resp);
	resp.topics = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp.topics));
	if (!resp.topics)
		return BRK_CLOSE;
	int32_t limit = server.cfg.max_request_partition_size_limit;
	if (m.response_partition_limit < limit)
		limit = m.response_partition_limit;
	int64_t remaining = limit > 1 ? limit : 1;
	for (int32_t i = 0; i < n; i++) {
		if (remaining == 0) {
			resp.next_cursor_null = false;
			resp.next_cursor.topic_name = names[i];
			resp.next_cursor.partition_index = 0;
			break;
		}
		brk_topic *t = brk_topic_find(&server.partitions, names[i].ptr, names[i].len);
		DescribeTopicPartitionsResponse_Topic *rt = &resp.topics[resp.topics_count];
		DescribeTopicPartitionsResponse_Topic_init(rt);
		rt->name = names[i];
		/* KafkaApis.handleDescribeTopicPartitionsRequest: DESCRIBE on the
		 * topic; unauthorized ones are left out of "all topics". */
		if (!brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, names[i], CTL_ACL_OP_DESCRIBE)) {
			if (all)
				continue;
			rt->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
			resp.topics_count++;
			continue;
		}
		rt->topic_authorized_operations = brk_acl_operations(
			req, CTL_ACL_RES_TOPIC, names[i].len > 0 ? names[i].ptr : "",
			names[i].len > 0 ? names[i].len : 0, BRK_TOPIC_ALL_OPERATIONS);
		if (!t) {
			if (all)
				continue;
			rt->error_code = ctl_validate_topic_name(names[i].ptr, names[i].len)
						 ? KERR_INVALID_TOPIC_EXCEPTION
						 : KERR_UNKNOWN_TOPIC_OR_PARTITION;
			rt->is_internal = ctl_topic_name_is_internal(names[i].ptr, (size_t)names[i].len);
			resp.topics_count++;
			continue;
		}
		int64_t from = cursor && str_cmp(names[i], *cursor) == 0 ? m.cursor.partition_index : 0;
		int64_t to = from + remaining < t->npartitions ? from + remaining : t->npartitions;
		rt->error_code = KERR_NONE;
		memcpy(rt->topic_id.b, t->id, 16);
		rt->is_internal = t->internal;
		if (fill_partitions(req, rt, t, (int32_t)(from < to ? from : to), (int32_t)to))
			return BRK_CLOSE;
		resp.topics_count++;
		if (to < t->npartitions) {
			resp.next_cursor_null = false;
			resp.next_cursor.topic_name = names[i];
			resp.next_cursor.partition_index = (int32_t)to;
			break;
		}
		remaining -= rt->partitions_count;
	}
	if (DescribeTopicPartitionsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
