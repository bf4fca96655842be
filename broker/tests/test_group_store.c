/*
 * test_group_store.c - unit tests for the group coordinator's storage
 * layer: __consumer_offsets keys and values (store_codec.c) against bytes
 * derived by hand from Kafka's OffsetCommitKey/Value and
 * GroupMetadataKey/Value definitions (every readable version, flexible v4
 * with tagged fields), the consumer subscription, the offset expiry rule,
 * the offsets map (offsets.c) against a naive model, and the partition of a
 * group (coordinator_key.c's brk_coordinator_partition) against Java
 * String.hashCode vectors.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/group/store_codec.h"
#include "broker/server.h"
#include "protocol/buf.h"
#include "protocol/err.h"

/* ---- what group.c needs from the rest of the broker ---- */

brk_server server;
const char *brk_conn_client_host(const brk_conn *c)
{
	(void)c;
	return "/127.0.0.1";
}
void brk_request_complete(brk_request *req, int no_response)
{
	(void)req;
	(void)no_response;
}

/* ---- helpers ---- */

static void expect_bytes(const proto_writer *w, const uint8_t *want, size_t n)
{
	ck_assert_uint_eq(w->len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(w->buf[i] == want[i], "byte %zu: got 0x%02x, want 0x%02x", i, w->buf[i],
			      want[i]);
}

static bool view_is(proto_str s, const char *c)
{
	return s.len == (int32_t)strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

/* ---- keys ---- */

START_TEST(test_keys)
{
	proto_writer w;
	proto_writer_init(&w);
	grp_offset_key_encode(&w, proto_cstr("g"), proto_cstr("t"), 1);
	static const uint8_t okey[] = { 0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 1 };
	expect_bytes(&w, okey, sizeof(okey));
	grp_store_key k;
	ck_assert_int_eq(grp_store_key_decode(okey, sizeof(okey), &k), 0);
	ck_assert_int_eq(k.version, 1);
	ck_assert(view_is(k.group, "g"));
	ck_assert(view_is(k.topic, "t"));
	ck_assert_int_eq(k.partition, 1);

	/* Version 0 has the same layout. */
	static const uint8_t okey0[] = { 0, 0, 0, 2, 'g', 'g', 0, 0, 0, 0, 0, 7 };
	ck_assert_int_eq(grp_store_key_decode(okey0, sizeof(okey0), &k), 0);
	ck_assert_int_eq(k.version, 0);
	ck_assert(view_is(k.group, "gg"));
	ck_assert_int_eq(k.topic.len, 0);
	ck_assert_int_eq(k.partition, 7);

	proto_writer_reset(&w);
	grp_group_key_encode(&w, proto_cstr("grp"));
	static const uint8_t gkey[] = { 0, 2, 0, 3, 'g', 'r', 'p' };
	expect_bytes(&w, gkey, sizeof(gkey));
	ck_assert_int_eq(grp_store_key_decode(gkey, sizeof(gkey), &k), 0);
	ck_assert_int_eq(k.version, 2);
	ck_assert(view_is(k.group, "grp"));

	/* Other record types (share groups, KIP-848 records: versions 3+)
	 * are not ours; truncated and trailing bytes are refused. */
	static const uint8_t other[] = { 0, 3, 0, 1, 'g' };
	ck_assert_int_eq(grp_store_key_decode(other, sizeof(other), &k), PROTO_ERR_VERSION);
	ck_assert_int_eq(grp_store_key_decode(okey, sizeof(okey) - 1, &k), PROTO_ERR_UNDERFLOW);
	static const uint8_t trailing[] = { 0, 2, 0, 1, 'g', 0 };
	ck_assert_int_eq(grp_store_key_decode(trailing, sizeof(trailing), &k), PROTO_ERR_INVALID);
	static const uint8_t null_group[] = { 0, 2, 0xff, 0xff };
	ck_assert_int_eq(grp_store_key_decode(null_group, sizeof(null_group), &k), PROTO_ERR_INVALID);
	ck_assert_int_eq(grp_store_key_decode(NULL, -1, &k), PROTO_ERR_UNDERFLOW);
	proto_writer_free(&w);
}
END_TEST

/* ---- OffsetCommitValue ---- */

START_TEST(test_offset_values)
{
	proto_writer w;
	proto_writer_init(&w);
	grp_offset v = { .offset = 5, .leader_epoch = 7, .metadata = "m", .metadata_len = 1,
			 .commit_timestamp_ms = 1000, .expire_timestamp_ms = -1 };
	grp_offset_value_encode(&w, &v);
	static const uint8_t v3[] = { 0, 3, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 7,
				      0, 1, 'm', 0, 0, 0, 0, 0, 0, 0x03, 0xe8 };
	expect_bytes(&w, v3, sizeof(v3));
	grp_offset d;
	ck_assert_int_eq(grp_offset_value_decode(v3, sizeof(v3), &d), 0);
	ck_assert_int_eq(d.offset, 5);
	ck_assert_int_eq(d.leader_epoch, 7);
	ck_assert_int_eq(d.metadata_len, 1);
	ck_assert(memcmp(d.metadata, "m", 1) == 0);
	ck_assert_int_eq(d.commit_timestamp_ms, 1000);
	ck_assert_int_eq(d.expire_timestamp_ms, -1);

	/* An expire timestamp (OffsetCommit v2-4 retention): version 1, no
	 * leader epoch. */
	proto_writer_reset(&w);
	v.expire_timestamp_ms = 2000;
	v.metadata = NULL;
	v.metadata_len = 0;
	grp_offset_value_encode(&w, &v);
	static const uint8_t v1[] = { 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
				      0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x07, 0xd0 };
	expect_bytes(&w, v1, sizeof(v1));
	ck_assert_int_eq(grp_offset_value_decode(v1, sizeof(v1), &d), 0);
	ck_assert_int_eq(d.leader_epoch, -1);
	ck_assert_int_eq(d.expire_timestamp_ms, 2000);
	ck_assert_int_eq(d.metadata_len, 0);

	/* Version 0 and 2: offset, metadata, commit timestamp. */
	static const uint8_t v0[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 2, 'a', 'b',
				      0, 0, 0, 0, 0, 0, 0, 1 };
	ck_assert_int_eq(grp_offset_value_decode(v0, sizeof(v0), &d), 0);
	ck_assert_int_eq(d.offset, 9);
	ck_assert_int_eq(d.metadata_len, 2);
	ck_assert_int_eq(d.commit_timestamp_ms, 1);
	ck_assert_int_eq(d.expire_timestamp_ms, -1);
	uint8_t v2[sizeof(v0)];
	memcpy(v2, v0, sizeof(v0));
	v2[1] = 2;
	ck_assert_int_eq(grp_offset_value_decode(v2, sizeof(v2), &d), 0);
	ck_assert_int_eq(d.offset, 9);

	/* Version 4 (flexible): compact metadata, a tagged field skipped. */
	static const uint8_t v4[] = { 0, 4, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 2, 0x02, 'x',
				      0, 0, 0, 0, 0, 0, 0, 3, 0x01, 0x05, 0x02, 0xab, 0xcd };
	ck_assert_int_eq(grp_offset_value_decode(v4, sizeof(v4), &d), 0);
	ck_assert_int_eq(d.offset, 6);
	ck_assert_int_eq(d.leader_epoch, 2);
	ck_assert_int_eq(d.metadata_len, 1);
	ck_assert(d.metadata[0] == 'x');
	ck_assert_int_eq(d.commit_timestamp_ms, 3);

	/* Unknown version, truncation, trailing bytes, null metadata. */
	static const uint8_t v5[] = { 0, 5, 0, 0 };
	ck_assert_int_eq(grp_offset_value_decode(v5, sizeof(v5), &d), PROTO_ERR_VERSION);
	ck_assert_int_eq(grp_offset_value_decode(v3, sizeof(v3) - 1, &d), PROTO_ERR_UNDERFLOW);
	uint8_t longer[sizeof(v3) + 1];
	memcpy(longer, v3, sizeof(v3));
	longer[sizeof(v3)] = 0;
	ck_assert_int_eq(grp_offset_value_decode(longer, sizeof(longer), &d), PROTO_ERR_INVALID);
	static const uint8_t nullmd[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff,
					  0, 0, 0, 0, 0, 0, 0, 1 };
	ck_assert_int_eq(grp_offset_value_decode(nullmd, sizeof(nullmd), &d), PROTO_ERR_INVALID);
	proto_writer_free(&w);
}
END_TEST

/* ---- GroupMetadataValue ---- */

/* The value of a group "consumer"/"range", generation 3, leader m1, state
 * time 1000, one member m1 (client c, host /h, rebalance 300000, session
 * 10000, subscription "S", assignment "A"), written by hand. */
static const uint8_t GROUP_V3[] = {
	0, 3,
	0, 8, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r',
	0, 0, 0, 3,
	0, 5, 'r', 'a', 'n', 'g', 'e',
	0, 2, 'm', '1',
	0, 0, 0, 0, 0, 0, 0x03, 0xe8,
	0, 0, 0, 1,
	0, 2, 'm', '1',
	0xff, 0xff,
	0, 1, 'c',
	0, 2, '/', 'h',
	0, 0x04, 0x93, 0xe0,
	0, 0, 0x27, 0x10,
	0, 0, 0, 1, 'S',
	0, 0, 0, 1, 'A',
};

static void make_group(grp_group *g, grp_member *m, grp_member **members, grp_protocol *protos)
{
	memset(g, 0, sizeof(*g));
	memset(m, 0, sizeof(*m));
	protos[0] = (grp_protocol){ "roundrobin", (uint8_t *)"R", 1 };
	protos[1] = (grp_protocol){ "range", (uint8_t *)"S", 1 };
	m->member_id = "m1";
	m->client_id = "c";
	m->client_host = "/h";
	m->rebalance_timeout_ms = 300000;
	m->session_timeout_ms = 10000;
	m->protocol_type = "consumer";
	m->protocols = protos;
	m->nprotocols = 2;
	m->assignment = (uint8_t *)"A";
	m->assignment_len = 1;
	members[0] = m;
	g->group_id = "grp";
	g->state = GRP_STABLE;
	g->generation_id = 3;
	g->protocol_type = "consumer";
	g->protocol_name = "range";
	g->leader_id = "m1";
	g->members = members;
	g->nmembers = 1;
	g->state_timestamp_ms = 1000;
}

START_TEST(test_group_value_v3)
{
	grp_group g;
	grp_member m;
	grp_member *members[1];
	grp_protocol protos[2];
	make_group(&g, &m, members, protos);
	proto_writer w;
	proto_writer_init(&w);
	grp_group_value_encode(&w, &g);
	expect_bytes(&w, GROUP_V3, sizeof(GROUP_V3));

	proto_arena a;
	proto_arena_init(&a, 0);
	grp_store_group v;
	ck_assert_int_eq(grp_group_value_decode(GROUP_V3, sizeof(GROUP_V3), &a, &v), 0);
	ck_assert_int_eq(v.version, 3);
	ck_assert(view_is(v.protocol_type, "consumer"));
	ck_assert_int_eq(v.generation, 3);
	ck_assert(view_is(v.protocol, "range"));
	ck_assert(view_is(v.leader, "m1"));
	ck_assert_int_eq(v.current_state_timestamp_ms, 1000);
	ck_assert_int_eq(v.nmembers, 1);
	ck_assert(view_is(v.members[0].member_id, "m1"));
	ck_assert_int_eq(v.members[0].group_instance_id.len, -1);
	ck_assert(view_is(v.members[0].client_id, "c"));
	ck_assert(view_is(v.members[0].client_host, "/h"));
	ck_assert_int_eq(v.members[0].rebalance_timeout_ms, 300000);
	ck_assert_int_eq(v.members[0].session_timeout_ms, 10000);
	ck_assert_int_eq(v.members[0].subscription.len, 1);
	ck_assert_int_eq(v.members[0].subscription.ptr[0], 'S');
	ck_assert_int_eq(v.members[0].assignment.ptr[0], 'A');

	/* An Empty group: "" protocol type, null protocol and leader. */
	grp_group e;
	memset(&e, 0, sizeof(e));
	e.generation_id = 4;
	e.state_timestamp_ms = 5;
	proto_writer_reset(&w);
	grp_group_value_encode(&w, &e);
	static const uint8_t empty[] = { 0, 3, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff,
					 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0 };
	expect_bytes(&w, empty, sizeof(empty));
	ck_assert_int_eq(grp_group_value_decode(empty, sizeof(empty), &a, &v), 0);
	ck_assert_int_eq(v.protocol.len, -1);
	ck_assert_int_eq(v.leader.len, -1);
	ck_assert_int_eq(v.nmembers, 0);

	/* Malformed: truncated anywhere, trailing byte, member count beyond
	 * the bytes. */
	for (size_t n = 0; n < sizeof(GROUP_V3); n++)
		ck_assert_int_ne(grp_group_value_decode(GROUP_V3, (int32_t)n, &a, &v), 0);
	uint8_t bad[sizeof(GROUP_V3) + 1];
	memcpy(bad, GROUP_V3, sizeof(GROUP_V3));
	bad[sizeof(GROUP_V3)] = 0;
	ck_assert_int_eq(grp_group_value_decode(bad, sizeof(bad), &a, &v), PROTO_ERR_INVALID);
	memcpy(bad, GROUP_V3, sizeof(GROUP_V3));
	bad[36] = 0x7f; /* member count */
	ck_assert_int_ne(grp_group_value_decode(bad, sizeof(GROUP_V3), &a, &v), 0);
	proto_arena_free(&a);
	proto_writer_free(&w);
}
END_TEST

START_TEST(test_group_value_old_and_flexible)
{
	proto_arena a;
	proto_arena_init(&a, 0);
	grp_store_group v;
	/* Version 0: no state timestamp, no instance id, no rebalance
	 * timeout (Kafka then uses the session timeout). */
	static const uint8_t v0[] = {
		0, 0,
		0, 8, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r',
		0, 0, 0, 3,
		0, 5, 'r', 'a', 'n', 'g', 'e',
		0, 2, 'm', '1',
		0, 0, 0, 1,
		0, 2, 'm', '1',
		0, 1, 'c',
		0, 2, '/', 'h',
		0, 0, 0x27, 0x10,
		0, 0, 0, 1, 'S',
		0, 0, 0, 0,
	};
	ck_assert_int_eq(grp_group_value_decode(v0, sizeof(v0), &a, &v), 0);
	ck_assert_int_eq(v.current_state_timestamp_ms, -1);
	ck_assert_int_eq(v.members[0].rebalance_timeout_ms, 10000);
	ck_assert_int_eq(v.members[0].session_timeout_ms, 10000);
	ck_assert_int_eq(v.members[0].group_instance_id.len, -1);
	ck_assert_int_eq(v.members[0].assignment.len, 0);

	/* Version 4 (flexible): compact strings/arrays/bytes, a static
	 * member, tagged fields in the member and at the top. */
	static const uint8_t v4[] = {
		0, 4,
		9, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r',
		0, 0, 0, 3,
		6, 'r', 'a', 'n', 'g', 'e',
		3, 'm', '1',
		0, 0, 0, 0, 0, 0, 0x03, 0xe8,
		2,
		3, 'm', '1',
		3, 'i', '1',
		2, 'c',
		3, '/', 'h',
		0, 0x04, 0x93, 0xe0,
		0, 0, 0x27, 0x10,
		2, 'S',
		2, 'A',
		1, 0, 1, 0x99,
		1, 5, 2, 0xab, 0xcd,
	};
	ck_assert_int_eq(grp_group_value_decode(v4, sizeof(v4), &a, &v), 0);
	ck_assert_int_eq(v.version, 4);
	ck_assert(view_is(v.protocol_type, "consumer"));
	ck_assert(view_is(v.protocol, "range"));
	ck_assert(view_is(v.leader, "m1"));
	ck_assert_int_eq(v.current_state_timestamp_ms, 1000);
	ck_assert_int_eq(v.nmembers, 1);
	ck_assert(view_is(v.members[0].group_instance_id, "i1"));
	ck_assert(view_is(v.members[0].client_host, "/h"));
	ck_assert_int_eq(v.members[0].rebalance_timeout_ms, 300000);
	ck_assert_int_eq(v.members[0].subscription.ptr[0], 'S');
	ck_assert_int_eq(v.members[0].assignment.ptr[0], 'A');
	ck_assert_int_eq(grp_group_value_decode(v4, sizeof(v4) - 1, &a, &v), PROTO_ERR_UNDERFLOW);
	proto_arena_free(&a);
}
END_TEST

/* ---- subscriptions ---- */

START_TEST(test_subscription)
{
	/* ConsumerProtocolSubscription v1: topics [foo, bar], null user
	 * data, no owned partitions. */
	static const uint8_t sub[] = { 0, 1, 0, 0, 0, 2, 0, 3, 'f', 'o', 'o', 0, 3, 'b', 'a', 'r',
				       0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
	ck_assert_int_eq(grp_subscription_has_topic(sub, sizeof(sub), "bar", 3), 1);
	ck_assert_int_eq(grp_subscription_has_topic(sub, sizeof(sub), "foo", 3), 1);
	ck_assert_int_eq(grp_subscription_has_topic(sub, sizeof(sub), "fo", 2), 0);
	ck_assert_int_lt(grp_subscription_has_topic(sub, 9, "foo", 3), 0);
	ck_assert_int_lt(grp_subscription_has_topic(NULL, 0, "foo", 3), 0);

	grp_group g;
	grp_member m;
	grp_member *members[1];
	grp_protocol protos[2];
	make_group(&g, &m, members, protos);
	protos[1].metadata = (uint8_t *)sub;
	protos[1].metadata_len = sizeof(sub);
	ck_assert_int_eq(grp_subscribed_to_topic(&g, "foo", 3), 1);
	ck_assert_int_eq(grp_subscribed_to_topic(&g, "baz", 3), 0);
	/* The chosen protocol only: "roundrobin"'s metadata is not read. */
	g.protocol_name = "roundrobin";
	ck_assert_int_eq(grp_subscribed_to_topic(&g, "foo", 3), -1);
	g.protocol_name = "range";
	g.protocol_type = "connect";
	ck_assert_int_eq(grp_subscribed_to_topic(&g, "foo", 3), -1);
	g.protocol_type = "consumer";
	g.nmembers = 0;
	ck_assert_int_eq(grp_subscribed_to_topic(&g, "foo", 3), 0);
}
END_TEST

/* ---- expiry ---- */

START_TEST(test_expiry_rule)
{
	grp_offset o = { .offset = 1, .commit_timestamp_ms = 500, .expire_timestamp_ms = -1 };
	/* Empty since 1000, committed at 500: counted from 1000. */
	ck_assert(!grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 100, 1099));
	ck_assert(grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 100, 1100));
	/* Committed (2000) after the group became Empty (1000): from 2000. */
	o.commit_timestamp_ms = 2000;
	ck_assert(!grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 100, 2099));
	ck_assert(grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 100, 2100));
	/* Unknown state time (a group known from its offsets alone). */
	o.commit_timestamp_ms = 500;
	ck_assert(grp_offset_expired(&o, GRP_EMPTY, -1, -1, 100, 600));
	ck_assert(!grp_offset_expired(&o, GRP_EMPTY, -1, -1, 100, 599));
	/* An explicit expire timestamp wins over the retention. */
	o.expire_timestamp_ms = 700;
	ck_assert(!grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 1000000, 699));
	ck_assert(grp_offset_expired(&o, GRP_EMPTY, 1000, -1, 1000000, 700));
	o.expire_timestamp_ms = -1;
	/* Stable: only topics nobody subscribes to, from the commit time. */
	ck_assert(grp_offset_expired(&o, GRP_STABLE, 1000, 0, 100, 600));
	ck_assert(!grp_offset_expired(&o, GRP_STABLE, 1000, 0, 100, 599));
	ck_assert(!grp_offset_expired(&o, GRP_STABLE, 1000, 1, 100, 1000000));
	ck_assert(!grp_offset_expired(&o, GRP_STABLE, 1000, -1, 100, 1000000));
	/* Rebalancing groups keep everything. */
	ck_assert(!grp_offset_expired(&o, GRP_PREPARING_REBALANCE, 0, 0, 100, 1000000));
	ck_assert(!grp_offset_expired(&o, GRP_COMPLETING_REBALANCE, 0, 0, 100, 1000000));
}
END_TEST

/* ---- offsets map ---- */

START_TEST(test_offsets_map)
{
	grp_offsets *o = grp_offsets_new();
	ck_assert_ptr_nonnull(o);
	enum { TOPICS = 7, PARTS = 300 };
	static int64_t model[TOPICS][PARTS];
	memset(model, 0xff, sizeof(model)); /* -1: absent */
	char names[TOPICS][16];
	for (int t = 0; t < TOPICS; t++)
		snprintf(names[t], sizeof(names[t]), "t%d", t);
	srand(7);
	for (int step = 0; step < 20000; step++) {
		int t = rand() % TOPICS, p = rand() % PARTS;
		if (rand() % 3 == 0) {
			bool had = model[t][p] >= 0;
			ck_assert(grp_offsets_delete(o, names[t], (int32_t)strlen(names[t]), p) == had);
			model[t][p] = -1;
		} else {
			char md[16];
			int mlen = snprintf(md, sizeof(md), "m%d", step);
			grp_offset v = { .offset = step, .leader_epoch = -1, .metadata = md,
					 .metadata_len = mlen, .commit_timestamp_ms = step,
					 .expire_timestamp_ms = -1 };
			ck_assert_int_eq(grp_offsets_put(o, names[t], (int32_t)strlen(names[t]), p, &v), 0);
			model[t][p] = step;
		}
	}
	int32_t count = 0;
	for (int t = 0; t < TOPICS; t++)
		for (int p = 0; p < PARTS; p++) {
			const grp_offset *v = grp_offsets_get(o, names[t], (int32_t)strlen(names[t]), p);
			if (model[t][p] < 0) {
				ck_assert_ptr_null(v);
				continue;
			}
			count++;
			ck_assert_ptr_nonnull(v);
			ck_assert_int_eq(v->offset, model[t][p]);
			char md[16];
			snprintf(md, sizeof(md), "m%d", (int)model[t][p]);
			ck_assert_str_eq(v->metadata, md);
		}
	ck_assert_int_eq(grp_offsets_count(o), count);
	int32_t seen = 0;
	const char *topic;
	int32_t tlen, part;
	for (int32_t i = 0; grp_offsets_at(o, i, &topic, &tlen, &part); i++) {
		ck_assert_int_eq(model[topic[1] - '0'][part],
				 grp_offsets_get(o, topic, tlen, part)->offset);
		seen++;
	}
	ck_assert_int_eq(seen, count);
	/* Null metadata is stored as "". */
	grp_offset nv = { .offset = 1, .metadata = NULL, .metadata_len = -1 };
	ck_assert_int_eq(grp_offsets_put(o, "x", 1, 0, &nv), 0);
	ck_assert_str_eq(grp_offsets_get(o, "x", 1, 0)->metadata, "");
	grp_offsets_clear(o);
	ck_assert_int_eq(grp_offsets_count(o), 0);
	ck_assert_ptr_null(grp_offsets_get(o, "x", 1, 0));
	ck_assert_int_eq(grp_offsets_put(o, "x", 1, 0, &nv), 0);
	ck_assert_int_eq(grp_offsets_count(o), 1);
	grp_offsets_free(o);
}
END_TEST

/* ---- partition of a group ---- */

START_TEST(test_partition_for)
{
	/* Java: "foo".hashCode() = 101574 -> 101574 % 50 = 24. */
	ck_assert_int_eq(brk_coordinator_partition("foo", 3, 50), 24);
	ck_assert_int_eq(brk_coordinator_partition("foo", 3, 7), 4);
	/* "polygenelubricants".hashCode() = Integer.MIN_VALUE; Kafka's
	 * Utils.abs maps it to 0. */
	ck_assert_int_eq(brk_coordinator_partition("polygenelubricants", 18, 50), 0);
	ck_assert_int_eq(brk_coordinator_partition("polygenelubricants", 18, 7), 0);
	/* Negative hash: "my-group".hashCode() = -1906497762. */
	ck_assert_int_eq(brk_coordinator_partition("my-group", 8, 50), 12);
	ck_assert_int_eq(brk_coordinator_partition("my-group", 8, 7), 1);
	ck_assert_int_eq(brk_coordinator_partition("console-consumer-40000", 22, 50), 25);
	/* UTF-16 code units: "grüppe" = -1233264812; "g" + U+1F600 (a
	 * surrogate pair) = 1871882. */
	ck_assert_int_eq(brk_coordinator_partition("gr\xc3\xbcppe", 7, 50), 12);
	ck_assert_int_eq(brk_coordinator_partition("g\xf0\x9f\x98\x80", 5, 50), 32);
	ck_assert_int_eq(brk_coordinator_partition("", 0, 50), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("group_store");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_offset_values);
	tcase_add_test(tc, test_group_value_v3);
	tcase_add_test(tc, test_group_value_old_and_flexible);
	tcase_add_test(tc, test_subscription);
	tcase_add_test(tc, test_expiry_rule);
	tcase_add_test(tc, test_offsets_map);
	tcase_add_test(tc, test_partition_for);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
