/*
 * test_group.c - the classic group coordinator without sockets: partition
 * hashing against Java String.hashCode vectors, protocol selection, the
 * offset commit rules, and the state machine driven through grp_join /
 * grp_sync / grp_heartbeat / grp_leave_member with requests built in memory
 * (responses decoded from req->out) and the real event loop for the timers:
 * the two-step join (MEMBER_ID_REQUIRED), a rebalance of two members with
 * the leader's assignment, heartbeats during a rebalance, a static member
 * rejoining without a rebalance (old id fenced), session expiry, a closed
 * connection's JoinGroup, group.max.size and inconsistent protocols; the
 * transactional offset commit rules (grp_validate_txn_commit) and pending
 * transactional offsets (txn_offsets.c): commit and abort markers through
 * grp_txn_completed, which of a plain and a transactional commit wins,
 * tombstones; the registry at 20,000 groups (lookup by id, iteration,
 * removal by id and by partition).
 *
 * Each test has its own grp_coordinator, whose store (gc.write_group) is
 * a counter; brk_request_complete / brk_conn_client_host are recorders.
 * Ownership: with __consumer_offsets unknown every group is served; a
 * group of a partition not loaded answers NOT_COORDINATOR, and unloading a
 * partition answers its members' waiting requests NOT_COORDINATOR.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/coordinator_key.h"
#include "broker/group/group.h"
#include "broker/group/offsets.h"
#include "broker/group/store.h"
#include "broker/group/txn_offsets.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

brk_server server;
static grp_coordinator gc;
static brk_config cfg;

/* ---- fakes ---- */

static int store_writes;
static int write_group(grp_coordinator *c, grp_group *g)
{
	(void)g;
	ck_assert_ptr_eq(c, &gc);
	store_writes++;
	return KERR_NONE;
}

#define MAXREQ 16
typedef struct fake_req {
	brk_request req;
	proto_arena arena;
	proto_writer out;
	int completed; /* brk_request_complete calls */
} fake_req;

static fake_req reqs[MAXREQ];

void brk_request_complete(brk_request *req, int no_response)
{
	(void)no_response;
	for (int i = 0; i < MAXREQ; i++)
		if (&reqs[i].req == req)
			reqs[i].completed++;
	req->cancel = NULL;
	req->delayed = NULL;
}

const char *brk_conn_client_host(const brk_conn *c)
{
	(void)c;
	return "/127.0.0.1";
}

static fake_req *new_req(int i, int16_t api_key, int16_t version, const char *client_id)
{
	fake_req *f = &reqs[i];
	proto_writer_free(&f->out);
	proto_arena_free(&f->arena);
	memset(f, 0, sizeof(*f));
	proto_arena_init(&f->arena, 0);
	proto_writer_init(&f->out);
	f->req.api_key = api_key;
	f->req.api_version = version;
	f->req.client_id = proto_cstr(client_id);
	f->req.arena = &f->arena;
	f->req.out = &f->out;
	return f;
}

static void stop_loop(brk_loop *loop, void *arg)
{
	(void)arg;
	brk_loop_stop(loop);
}

/* Run the loop for ms milliseconds. */
static void run_for(int64_t ms)
{
	brk_timer_add(gc.loop, ms, stop_loop, NULL);
	brk_loop_run(gc.loop);
}

static void setup(void)
{
	memset(&server, 0, sizeof(server));
	brk_config_defaults(&cfg);
	cfg.group_initial_rebalance_delay_ms = 0;
	cfg.group_min_session_timeout_ms = 10;
	server.loop = brk_loop_new(); /* the purgatory's */
	ck_assert_ptr_nonnull(server.loop);
	grp_coordinator_init(&gc, server.loop, &cfg);
	gc.write_group = write_group;
	store_writes = 0;
}

static void teardown(void)
{
	grp_coordinator_free(&gc);
	brk_loop_free(server.loop);
	server.loop = NULL;
	for (int i = 0; i < MAXREQ; i++) {
		proto_writer_free(&reqs[i].out);
		proto_arena_free(&reqs[i].arena);
		memset(&reqs[i], 0, sizeof(reqs[i]));
	}
}

/* ---- request builders and response readers ---- */

static const uint8_t META_A[] = { 0, 1, 'a' };
static const uint8_t META_B[] = { 0, 1, 'b' };

static JoinGroupRequest join_msg(const char *group, const char *member_id, const char *instance,
				 int32_t session_ms, const char *ptype, const char *proto1,
				 const char *proto2, const uint8_t *meta)
{
	static JoinGroupRequest_JoinGroupRequestProtocol protos[4][2];
	static int slot;
	JoinGroupRequest_JoinGroupRequestProtocol *p = protos[slot++ % 4];
	JoinGroupRequest m;
	JoinGroupRequest_init(&m);
	m.group_id = proto_cstr(group);
	m.member_id = proto_cstr(member_id);
	m.group_instance_id = proto_cstr(instance);
	m.session_timeout_ms = session_ms;
	m.rebalance_timeout_ms = 5000;
	m.protocol_type = proto_cstr(ptype);
	p[0].name = proto_cstr(proto1);
	p[0].metadata = (proto_bytes){ meta, 3 };
	p[1].name = proto_cstr(proto2);
	p[1].metadata = (proto_bytes){ meta, 3 };
	m.protocols = p;
	m.protocols_count = proto2 ? 2 : 1;
	return m;
}

static JoinGroupResponse join_resp(fake_req *f)
{
	JoinGroupResponse r;
	JoinGroupResponse_init(&r);
	proto_reader rd;
	proto_reader_init(&rd, f->out.buf, f->out.len);
	ck_assert_int_eq(JoinGroupResponse_decode(&rd, f->req.arena, f->req.api_version, &r), 0);
	ck_assert_int_eq(proto_reader_left(&rd), 0);
	return r;
}

static SyncGroupResponse sync_resp(fake_req *f)
{
	SyncGroupResponse r;
	SyncGroupResponse_init(&r);
	proto_reader rd;
	proto_reader_init(&rd, f->out.buf, f->out.len);
	ck_assert_int_eq(SyncGroupResponse_decode(&rd, f->req.arena, f->req.api_version, &r), 0);
	return r;
}

static char *str_copy(proto_str s)
{
	char *c = malloc((size_t)s.len + 1);
	memcpy(c, s.ptr, (size_t)s.len);
	c[s.len] = '\0';
	return c;
}

static SyncGroupRequest sync_msg(const char *group, const char *member, int32_t gen,
				 SyncGroupRequest_SyncGroupRequestAssignment *as, int32_t nas)
{
	SyncGroupRequest m;
	SyncGroupRequest_init(&m);
	m.group_id = proto_cstr(group);
	m.member_id = proto_cstr(member);
	m.generation_id = gen;
	m.assignments = as;
	m.assignments_count = nas;
	return m;
}

/* ---- pure rules ---- */

START_TEST(test_partition_for)
{
	/* abs(Java String.hashCode) % 50, values from Java's definition. */
	static const struct { const char *id; int32_t p; } v[] = {
		{ "foo", 24 },                     /* hashCode 101574 */
		{ "polygenelubricants", 0 },       /* hashCode Integer.MIN_VALUE */
		{ "kafka-conformance-probe", 47 }, /* hashCode -949896047 */
		{ "abcdefghij", 9 },               /* hashCode -634317659 */
		{ "mygroup", 39 },                 /* hashCode 1516409939 */
		{ "\xc3\xa9", 33 },                /* "é": hashCode 233 */
		{ "\xf0\x9f\x98\x80", 49 },        /* U+1F600, a surrogate pair: 1772899 */
		{ "", 0 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_msg(brk_coordinator_partition(v[i].id, (int32_t)strlen(v[i].id), 50) == v[i].p,
			      "%s: %d", v[i].id, brk_coordinator_partition(v[i].id, (int32_t)strlen(v[i].id), 50));
	ck_assert_int_eq(brk_coordinator_partition("foo", 3, 1), 0);
}
END_TEST

static grp_member *member_with(const char *id, const char *p1, const char *p2)
{
	grp_member *m = grp_member_new();
	m->member_id = strdup(id);
	m->protocol_type = strdup("consumer");
	m->nprotocols = p2 ? 2 : 1;
	m->protocols = calloc(2, sizeof(grp_protocol));
	m->protocols[0].name = strdup(p1);
	if (p2)
		m->protocols[1].name = strdup(p2);
	return m;
}

START_TEST(test_select_protocol)
{
	grp_group *g = grp_get_or_create(&gc, "sel", 3);
	ck_assert_ptr_null(grp_select_protocol(g));
	/* range is not supported by the third member: roundrobin. */
	grp_member_add(g, member_with("a", "range", "roundrobin"));
	grp_member_add(g, member_with("b", "roundrobin", "range"));
	grp_member_add(g, member_with("c", "roundrobin", NULL));
	ck_assert_str_eq(grp_select_protocol(g), "roundrobin");

	/* Two of three prefer range: range wins the vote. */
	grp_group *h = grp_get_or_create(&gc, "sel2", 4);
	grp_member_add(h, member_with("a", "range", "roundrobin"));
	grp_member_add(h, member_with("b", "roundrobin", "range"));
	grp_member_add(h, member_with("c", "range", "roundrobin"));
	ck_assert_str_eq(grp_select_protocol(h), "range");

	/* No common protocol. */
	grp_group *k = grp_get_or_create(&gc, "sel3", 4);
	grp_member_add(k, member_with("a", "range", NULL));
	grp_member_add(k, member_with("b", "sticky", NULL));
	ck_assert_ptr_null(grp_select_protocol(k));
}
END_TEST

START_TEST(test_validate_commit)
{
	proto_str none = proto_str_of(NULL, -1);
	grp_group *g = grp_get_or_create(&gc, "c", 1);
	/* Empty group: a simple commit (generation -1, no member) is fine. */
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr(""), -1, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("x"), 1, none), KERR_UNKNOWN_MEMBER_ID);

	grp_member *m = member_with("m1", "range", NULL);
	m->group_instance_id = strdup("inst");
	grp_member_add(g, m);
	g->generation_id = 3;
	g->state = GRP_STABLE;
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr(""), -1, none), KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("zz"), 3, none), KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 2, none), KERR_ILLEGAL_GENERATION);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, proto_cstr("inst")), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("old"), 3, proto_cstr("inst")),
			 KERR_FENCED_INSTANCE_ID);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, proto_cstr("other")),
			 KERR_UNKNOWN_MEMBER_ID);
	/* Commits go on while preparing a rebalance, not before the sync. */
	g->state = GRP_PREPARING_REBALANCE;
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, none), KERR_NONE);
	g->state = GRP_COMPLETING_REBALANCE;
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, none),
			 KERR_REBALANCE_IN_PROGRESS);
}
END_TEST

/* Members found by member id and by group instance id at 5,000 members:
 * duplicates refused, the leader's removal elects the next member, a
 * removed member (by id, or a static one by instance id) is no longer
 * found, the others still are. */
START_TEST(test_members_many)
{
	enum { M = 5000 };
	proto_str none = proto_str_of(NULL, -1);
	char id[32], iid[32];
	grp_group *g = grp_get_or_create(&gc, "big", 3);
	for (int i = 0; i < M; i++) {
		snprintf(id, sizeof(id), "m-%d", i);
		grp_member *m = member_with(id, "range", NULL);
		if (i % 2) {
			snprintf(iid, sizeof(iid), "i-%d", i);
			m->group_instance_id = strdup(iid);
		}
		ck_assert_int_eq(grp_member_add(g, m), 0);
	}
	grp_member *dup = member_with("m-7", "range", NULL);
	ck_assert_int_eq(grp_member_add(g, dup), -EEXIST);
	grp_member_free(dup);
	dup = member_with("m-new", "range", NULL);
	dup->group_instance_id = strdup("i-7");
	ck_assert_int_eq(grp_member_add(g, dup), -EEXIST);
	ck_assert_ptr_null(grp_member_find(g, "m-new", 5));
	grp_member_free(dup);
	ck_assert_int_eq(g->nmembers, M);
	ck_assert_str_eq(g->leader_id, "m-0");
	g->generation_id = 1;
	g->state = GRP_STABLE;
	for (int i = 0; i < M; i++) {
		int len = snprintf(id, sizeof(id), "m-%d", i);
		grp_member *m = grp_member_find(g, id, len);
		ck_assert_ptr_nonnull(m);
		ck_assert_str_eq(m->member_id, id);
		ck_assert_int_eq(grp_validate_commit(g, proto_cstr(id), 1, none), KERR_NONE);
	}
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m-9"), 1, proto_cstr("i-9")), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m-8"), 1, proto_cstr("i-9")),
			 KERR_FENCED_INSTANCE_ID);
	/* Every fourth member leaves by id, the static ones 1 mod 4 by
	 * instance id. */
	for (int i = 0; i < M; i += 4) {
		snprintf(id, sizeof(id), "m-%d", i);
		ck_assert_int_eq(grp_leave_member(g, proto_cstr(id), none), KERR_NONE);
		snprintf(iid, sizeof(iid), "i-%d", i + 1);
		ck_assert_int_eq(grp_leave_member(g, proto_cstr(""), proto_cstr(iid)), KERR_NONE);
	}
	ck_assert_int_eq(g->nmembers, M / 2);
	ck_assert_str_eq(g->leader_id, "m-2");
	for (int i = 0; i < M; i++) {
		int len = snprintf(id, sizeof(id), "m-%d", i);
		ck_assert((grp_member_find(g, id, len) != NULL) == (i % 4 >= 2));
		if (i % 2) {
			len = snprintf(iid, sizeof(iid), "i-%d", i);
			int16_t want = i % 4 >= 2 ? KERR_NONE : KERR_UNKNOWN_MEMBER_ID;
			snprintf(id, sizeof(id), "m-%d", i);
			ck_assert_int_eq(grp_validate_commit(g, proto_cstr(id), 1, proto_str_of(iid, len)),
					 want);
		}
	}
	ck_assert_int_eq(grp_leave_member(g, proto_cstr("m-0"), none), KERR_UNKNOWN_MEMBER_ID);
}
END_TEST


/* ---- transactional offset commits ---- */

START_TEST(test_validate_txn_commit)
{
	proto_str none = proto_str_of(NULL, -1);
	grp_group *g = grp_get_or_create(&gc, "t", 1);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr(""), -1, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("x"), 1, none),
			 KERR_UNKNOWN_MEMBER_ID);
	grp_member *m = member_with("m1", "range", NULL);
	m->group_instance_id = strdup("inst");
	grp_member_add(g, m);
	g->generation_id = 3;
	g->state = GRP_STABLE;
	/* Without member id and generation (v0-2) a group with members
	 * accepts it, where a plain commit is UNKNOWN_MEMBER_ID. */
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr(""), -1, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr(""), -1, none), KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("zz"), 3, none),
			 KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("m1"), 2, none),
			 KERR_ILLEGAL_GENERATION);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("m1"), 3, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("old"), 3, proto_cstr("inst")),
			 KERR_FENCED_INSTANCE_ID);
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("m1"), 3, proto_cstr("other")),
			 KERR_UNKNOWN_MEMBER_ID);
	/* The group's state is not enforced for transactional commits. */
	g->state = GRP_COMPLETING_REBALANCE;
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("m1"), 3, none), KERR_NONE);
	ck_assert_int_eq(grp_validate_commit(g, proto_cstr("m1"), 3, none),
			 KERR_REBALANCE_IN_PROGRESS);
	g->state = GRP_DEAD;
	ck_assert_int_eq(grp_validate_txn_commit(g, proto_cstr("m1"), 3, none),
			 KERR_COORDINATOR_NOT_AVAILABLE);
}
END_TEST

static grp_offset off_at(int64_t offset, int64_t record_offset)
{
	return (grp_offset){ .offset = offset, .leader_epoch = -1, .metadata = "md", .metadata_len = 2,
			     .commit_timestamp_ms = 1000, .expire_timestamp_ms = -1,
			     .record_offset = record_offset };
}

static int64_t committed(grp_group *g, const char *topic, int32_t partition)
{
	const grp_offset *o = grp_offsets_get(g->offsets, topic, (int32_t)strlen(topic), partition);
	return o ? o->offset : -1;
}

/* grp_txn_put on g's set, then the coordinator's index follows. */
static int put_txn(grp_group *g, int64_t pid, int32_t offsets_partition, const char *topic,
		   int32_t partition, const grp_offset *v)
{
	int rc = grp_txn_put(g->txns, pid, offsets_partition, topic, (int32_t)strlen(topic),
			     partition, v);
	grp_txn_track(g);
	return rc;
}

START_TEST(test_txn_commit_and_abort)
{
	grp_group *g = grp_get_or_create(&gc, "g1", 2);
	grp_group *h = grp_get_or_create(&gc, "g2", 2);
	grp_group *other = grp_get_or_create(&gc, "g3", 2);
	grp_offset v;
	v = off_at(10, 50);
	ck_assert_int_eq(put_txn(g, 100, 5, "t", 0, &v), 0);
	v = off_at(11, 51);
	ck_assert_int_eq(put_txn(g, 100, 5, "t", 1, &v), 0);
	v = off_at(20, 52);
	ck_assert_int_eq(put_txn(g, 200, 5, "t", 0, &v), 0);
	v = off_at(30, 53);
	ck_assert_int_eq(put_txn(h, 100, 5, "u", 0, &v), 0);
	/* The same producer in a group of another __consumer_offsets
	 * partition (one transaction, two coordinators' partitions). */
	v = off_at(40, 7);
	ck_assert_int_eq(put_txn(other, 100, 9, "t", 0, &v), 0);
	ck_assert_int_eq(grp_txn_set_count(g->txns), 2);
	/* A group without a transaction is not visited at transaction ends. */
	grp_group *idle = grp_get_or_create(&gc, "g4", 2);
	ck_assert_ptr_nonnull(idle);
	ck_assert_int_eq(grp_count(&gc), 4);
	ck_assert_int_eq(grp_txn_group_count(&gc), 3);
	for (int32_t i = 0; i < grp_txn_group_count(&gc); i++)
		ck_assert_ptr_ne(grp_txn_group_at(&gc, i), idle);

	/* Pending offsets are not committed. */
	ck_assert(grp_txn_pending(g->txns, "t", 1, 0));
	ck_assert(grp_txn_pending(g->txns, "t", 1, 1));
	ck_assert(!grp_txn_pending(g->txns, "t", 1, 2));
	ck_assert(!grp_txn_pending(g->txns, "u", 1, 0));
	ck_assert_int_eq(grp_offsets_count(g->offsets), 0);
	ck_assert_int_eq(grp_txn_get(g->txns, 200, "t", 1, 0)->offset, 20);
	ck_assert_ptr_null(grp_txn_get(g->txns, 300, "t", 1, 0));

	/* A marker in another partition, or of another producer: nothing. */
	grp_txn_completed(&gc, 4, 100, true);
	grp_txn_completed(&gc, 5, 999, true);
	ck_assert_int_eq(grp_offsets_count(g->offsets), 0);
	ck_assert_int_eq(grp_txn_set_count(g->txns), 2);

	/* Commit of producer 100 in partition 5: every group of it there. */
	grp_txn_completed(&gc, 5, 100, true);
	ck_assert_int_eq(committed(g, "t", 0), 10);
	ck_assert_int_eq(committed(g, "t", 1), 11);
	ck_assert_str_eq(grp_offsets_get(g->offsets, "t", 1, 0)->metadata, "md");
	ck_assert_int_eq(committed(h, "u", 0), 30);
	ck_assert_int_eq(grp_txn_set_count(h->txns), 0);
	ck_assert_int_eq(grp_txn_group_count(&gc), 2); /* h left the index */
	/* Producer 200 is still open on t-0; t-1 no longer pending. */
	ck_assert(grp_txn_pending(g->txns, "t", 1, 0));
	ck_assert(!grp_txn_pending(g->txns, "t", 1, 1));
	ck_assert_int_eq(grp_txn_set_count(g->txns), 1);
	/* The other partition's transaction is untouched. */
	ck_assert_int_eq(grp_offsets_count(other->offsets), 0);
	ck_assert_int_eq(grp_txn_set_count(other->txns), 1);

	/* Abort of producer 200: dropped, committed unchanged. */
	grp_txn_completed(&gc, 5, 200, false);
	ck_assert_int_eq(committed(g, "t", 0), 10);
	ck_assert(!grp_txn_pending(g->txns, "t", 1, 0));
	ck_assert_int_eq(grp_txn_set_count(g->txns), 0);
	/* A second marker for the same producer: ignored. */
	grp_txn_completed(&gc, 5, 200, true);
	ck_assert_int_eq(committed(g, "t", 0), 10);

	grp_txn_completed(&gc, 9, 100, false);
	ck_assert_int_eq(grp_offsets_count(other->offsets), 0);
	ck_assert_int_eq(grp_txn_set_count(other->txns), 0);
	ck_assert_int_eq(grp_txn_group_count(&gc), 0);
	/* A removed group leaves the index too. */
	ck_assert_int_eq(put_txn(h, 300, 5, "u", 0, &v), 0);
	ck_assert_int_eq(grp_txn_group_count(&gc), 1);
	grp_remove(h);
	ck_assert_int_eq(grp_txn_group_count(&gc), 0);
	grp_txn_completed(&gc, 5, 300, true);
}
END_TEST

/* Kafka's rule when a plain commit and a transactional one meet: the
 * offset whose record came later in __consumer_offsets wins. */
START_TEST(test_txn_commit_record_order)
{
	grp_group *g = grp_get_or_create(&gc, "ord", 3);
	grp_offset v = off_at(100, 10); /* transactional, record 10 */
	ck_assert_int_eq(put_txn(g, 7, 0, "t", 0, &v), 0);
	v = off_at(200, 20); /* transactional, record 20 */
	ck_assert_int_eq(put_txn(g, 7, 0, "t", 1, &v), 0);
	/* Plain commits: t-0 written after the transactional one (record
	 * 15), t-1 before it (record 5). */
	v = off_at(150, 15);
	ck_assert_int_eq(grp_offsets_put(g->offsets, "t", 1, 0, &v), 0);
	v = off_at(50, 5);
	ck_assert_int_eq(grp_offsets_put(g->offsets, "t", 1, 1, &v), 0);
	grp_txn_completed(&gc, 0, 7, true);
	ck_assert_int_eq(committed(g, "t", 0), 150);
	ck_assert_int_eq(committed(g, "t", 1), 200);
	ck_assert_int_eq(grp_offsets_get(g->offsets, "t", 1, 1)->record_offset, 20);

	/* A later transactional commit of the same partition replaces the
	 * earlier pending one of that producer. */
	v = off_at(300, 30);
	ck_assert_int_eq(put_txn(g, 7, 0, "t", 0, &v), 0);
	v = off_at(301, 31);
	ck_assert_int_eq(put_txn(g, 7, 0, "t", 0, &v), 0);
	grp_txn_completed(&gc, 0, 7, true);
	ck_assert_int_eq(committed(g, "t", 0), 301);
}
END_TEST

/* An offset tombstone (OffsetDelete, expiry) drops the partition's pending
 * offsets of every producer; the transactions stay open. */
START_TEST(test_txn_tombstone)
{
	grp_group *g = grp_get_or_create(&gc, "tomb", 4);
	grp_offset v = off_at(1, 1);
	ck_assert_int_eq(put_txn(g, 1, 0, "t", 0, &v), 0);
	ck_assert_int_eq(put_txn(g, 2, 0, "t", 0, &v), 0);
	ck_assert_int_eq(put_txn(g, 2, 0, "t", 1, &v), 0);
	grp_txn_forget(g->txns, "t", 1, 0);
	ck_assert(!grp_txn_pending(g->txns, "t", 1, 0));
	ck_assert(grp_txn_pending(g->txns, "t", 1, 1));
	ck_assert_int_eq(grp_txn_set_count(g->txns), 2);
	grp_txn_completed(&gc, 0, 1, true);
	grp_txn_completed(&gc, 0, 2, true);
	ck_assert_int_eq(committed(g, "t", 0), -1);
	ck_assert_int_eq(committed(g, "t", 1), 1);

	/* DeleteGroups: every pending offset goes, transactions stay open. */
	ck_assert_int_eq(put_txn(g, 3, 0, "t", 5, &v), 0);
	grp_txn_forget_all(g->txns);
	ck_assert(!grp_txn_pending(g->txns, "t", 1, 5));
	ck_assert_int_eq(grp_txn_set_count(g->txns), 1);
	int64_t pid = 0;
	ck_assert_ptr_nonnull(grp_txn_at(g->txns, 0, &pid));
	ck_assert_int_eq(pid, 3);
	ck_assert_ptr_null(grp_txn_at(g->txns, 1, &pid));
	/* grp_remove frees what is left (the fixture's grp_coordinator_free too). */
	grp_remove(g);
	ck_assert_ptr_null(grp_find(&gc, "tomb", 4));
}
END_TEST

/* ---- the state machine ---- */

/* Join a dynamic member with JoinGroup v5 (two steps), run the loop until
 * the rebalance completes; returns its member id (malloc'ed). */
static char *join_two_step(int slot, const char *group, const char *client, const uint8_t *meta)
{
	fake_req *f = new_req(slot, 11, 5, client);
	JoinGroupRequest m = join_msg(group, "", NULL, 10000, "consumer", "range", "roundrobin", meta);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	JoinGroupResponse r = join_resp(f);
	ck_assert_int_eq(r.error_code, KERR_MEMBER_ID_REQUIRED);
	char *id = str_copy(r.member_id);
	ck_assert_msg(strncmp(id, client, strlen(client)) == 0 && id[strlen(client)] == '-' &&
			      strlen(id) == strlen(client) + 37,
		      "member id %s", id);
	f = new_req(slot, 11, 5, client);
	m = join_msg(group, id, NULL, 10000, "consumer", "range", "roundrobin", meta);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	return id;
}

START_TEST(test_rebalance_two_members)
{
	char *a = join_two_step(0, "g", "ca", META_A);
	ck_assert_int_eq(reqs[0].completed, 0);
	grp_group *g = grp_find(&gc, "g", 1);
	ck_assert_int_eq(g->state, GRP_PREPARING_REBALANCE);
	run_for(30); /* the initial delay (0 ms) completes the join */
	ck_assert_int_eq(reqs[0].completed, 1);
	JoinGroupResponse r = join_resp(&reqs[0]);
	ck_assert_int_eq(r.error_code, 0);
	ck_assert_int_eq(r.generation_id, 1);
	ck_assert_int_eq(r.members_count, 1);
	ck_assert(proto_str_eq(r.leader, a));
	ck_assert(proto_str_eq(r.protocol_name, "range"));
	ck_assert_int_eq(r.members[0].metadata.len, 3);
	ck_assert_int_eq(g->state, GRP_COMPLETING_REBALANCE);

	/* A heartbeat before the sync is fine; a wrong generation is not. */
	proto_str none = proto_str_of(NULL, -1);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("g"), proto_cstr(a), 1, none), KERR_NONE);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("g"), proto_cstr(a), 0, none), KERR_ILLEGAL_GENERATION);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("g"), proto_cstr("nobody"), 1, none),
			 KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("nogroup"), proto_cstr(a), 1, none),
			 KERR_UNKNOWN_MEMBER_ID);

	/* The leader's sync: Stable, stored. */
	SyncGroupRequest_SyncGroupRequestAssignment as[2] = {
		{ proto_cstr(a), { (const uint8_t *)"AAA", 3 } },
	};
	fake_req *f = new_req(1, 14, 3, "ca");
	SyncGroupRequest s = sync_msg("g", a, 1, as, 1);
	int w0 = store_writes;
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_DELAYED);
	ck_assert_int_eq(f->completed, 1);
	ck_assert_int_eq(store_writes, w0 + 1);
	SyncGroupResponse sr = sync_resp(f);
	ck_assert_int_eq(sr.error_code, 0);
	ck_assert_int_eq(sr.assignment.len, 3);
	ck_assert_int_eq(g->state, GRP_STABLE);

	/* A second member (v3: gets its id at once) triggers a rebalance. */
	f = new_req(2, 11, 3, "cb");
	JoinGroupRequest jb = join_msg("g", "", NULL, 10000, "consumer", "roundrobin", "range", META_B);
	ck_assert_int_eq(grp_join(&gc, &f->req, &jb), BRK_DELAYED);
	ck_assert_int_eq(g->state, GRP_PREPARING_REBALANCE);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("g"), proto_cstr(a), 1, none),
			 KERR_REBALANCE_IN_PROGRESS);
	/* The stale generation's sync is refused during the rebalance. */
	f = new_req(3, 14, 3, "ca");
	s = sync_msg("g", a, 1, NULL, 0);
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_RESPOND);
	ck_assert_int_eq(sync_resp(f).error_code, KERR_REBALANCE_IN_PROGRESS);

	/* The leader rejoins: everyone is in, generation 2 at once. */
	f = new_req(0, 11, 5, "ca");
	JoinGroupRequest ja = join_msg("g", a, NULL, 10000, "consumer", "range", "roundrobin", META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &ja), BRK_DELAYED);
	ck_assert_int_eq(reqs[0].completed, 1);
	ck_assert_int_eq(reqs[2].completed, 1);
	r = join_resp(&reqs[0]);
	ck_assert_int_eq(r.generation_id, 2);
	ck_assert(proto_str_eq(r.leader, a));
	ck_assert_int_eq(r.members_count, 2);
	/* range: a prefers it, b prefers roundrobin, tie broken by the leader's order */
	ck_assert(proto_str_eq(r.protocol_name, "range"));
	JoinGroupResponse rb = join_resp(&reqs[2]);
	ck_assert_int_eq(rb.error_code, 0);
	ck_assert_int_eq(rb.members_count, 0);
	char *b = str_copy(rb.member_id);
	ck_assert(strncmp(b, "cb-", 3) == 0);

	/* The follower waits for the leader's assignment. */
	f = new_req(4, 14, 5, "cb");
	s = sync_msg("g", b, 2, NULL, 0);
	s.protocol_type = proto_cstr("consumer");
	s.protocol_name = proto_cstr("range");
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_DELAYED);
	ck_assert_int_eq(f->completed, 0);
	/* v5: a different protocol name is refused. */
	f = new_req(5, 14, 5, "ca");
	s = sync_msg("g", a, 2, NULL, 0);
	s.protocol_name = proto_cstr("roundrobin");
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_RESPOND);
	ck_assert_int_eq(sync_resp(f).error_code, KERR_INCONSISTENT_GROUP_PROTOCOL);
	/* The leader assigns only itself: b gets an empty assignment. */
	f = new_req(5, 14, 5, "ca");
	s = sync_msg("g", a, 2, as, 1);
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_DELAYED);
	ck_assert_int_eq(reqs[4].completed, 1);
	sr = sync_resp(&reqs[4]);
	ck_assert_int_eq(sr.error_code, 0);
	ck_assert_int_eq(sr.assignment.len, 0);
	ck_assert(proto_str_eq(sr.protocol_name, "range"));
	ck_assert(proto_str_eq(sr.protocol_type, "consumer"));
	ck_assert_int_eq(g->state, GRP_STABLE);

	/* b leaves: a rebalance; a rejoins alone: generation 3. */
	ck_assert_int_eq(grp_leave_member(g, proto_cstr(b), none), KERR_NONE);
	ck_assert_int_eq(grp_leave_member(g, proto_cstr(b), none), KERR_UNKNOWN_MEMBER_ID);
	grp_leave_done(g);
	ck_assert_int_eq(g->state, GRP_PREPARING_REBALANCE);
	f = new_req(0, 11, 5, "ca");
	ja = join_msg("g", a, NULL, 10000, "consumer", "range", "roundrobin", META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &ja), BRK_DELAYED);
	ck_assert_int_eq(join_resp(f).generation_id, 3);

	/* a leaves too: Empty, the generation still moves, stored. */
	w0 = store_writes;
	ck_assert_int_eq(grp_leave_member(g, proto_cstr(a), none), KERR_NONE);
	grp_leave_done(g);
	ck_assert_int_eq(g->state, GRP_EMPTY);
	ck_assert_int_eq(g->generation_id, 4);
	ck_assert_int_eq(store_writes, w0 + 1);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_static_member_rejoin)
{
	proto_str none = proto_str_of(NULL, -1);
	fake_req *f = new_req(0, 11, 5, "cs");
	JoinGroupRequest m = join_msg("s", "", "inst-1", 10000, "consumer", "range", NULL, META_A);
	/* A static member gets an id at once, even with v5. */
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	run_for(30);
	JoinGroupResponse r = join_resp(f);
	ck_assert_int_eq(r.error_code, 0);
	char *old = str_copy(r.member_id);
	ck_assert(strncmp(old, "inst-1-", 7) == 0);
	SyncGroupRequest_SyncGroupRequestAssignment as[1] = { { proto_cstr(old), { (const uint8_t *)"XY", 2 } } };
	f = new_req(1, 14, 3, "cs");
	SyncGroupRequest s = sync_msg("s", old, 1, as, 1);
	s.group_instance_id = proto_cstr("inst-1");
	grp_sync(&gc, &f->req, &s);
	grp_group *g = grp_find(&gc, "s", 1);
	ck_assert_int_eq(g->state, GRP_STABLE);

	/* Restart: unknown member id, same instance id and protocols. */
	f = new_req(2, 11, 5, "cs");
	m = join_msg("s", "", "inst-1", 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	ck_assert_int_eq(f->completed, 1);
	r = join_resp(f);
	ck_assert_int_eq(r.error_code, 0);
	ck_assert_int_eq(r.generation_id, 1); /* no rebalance */
	ck_assert(!proto_str_eq(r.member_id, old));
	ck_assert(proto_str_eq(r.leader, old)); /* v5: the old leader id, not to lead */
	char *new_id = str_copy(r.member_id);
	ck_assert_int_eq(g->state, GRP_STABLE);
	/* The old id is fenced; the new one gets the kept assignment. */
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("s"), proto_cstr(old), 1, proto_cstr("inst-1")),
			 KERR_FENCED_INSTANCE_ID);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr("s"), proto_cstr(new_id), 1, proto_cstr("inst-1")),
			 KERR_NONE);
	f = new_req(3, 14, 3, "cs");
	s = sync_msg("s", new_id, 1, NULL, 0);
	s.group_instance_id = proto_cstr("inst-1");
	ck_assert_int_eq(grp_sync(&gc, &f->req, &s), BRK_RESPOND);
	SyncGroupResponse sr = sync_resp(f);
	ck_assert_int_eq(sr.error_code, 0);
	ck_assert_int_eq(sr.assignment.len, 2);
	ck_assert_int_eq(memcmp(sr.assignment.ptr, "XY", 2), 0);

	/* Removed by instance id (admin LeaveGroup). */
	ck_assert_int_eq(grp_leave_member(g, proto_cstr(""), proto_cstr("nope")), KERR_UNKNOWN_MEMBER_ID);
	ck_assert_int_eq(grp_leave_member(g, proto_cstr(""), proto_cstr("inst-1")), KERR_NONE);
	grp_leave_done(g);
	ck_assert_int_eq(g->state, GRP_EMPTY);
	(void)none;
	free(old);
	free(new_id);
}
END_TEST

START_TEST(test_session_expiry)
{
	fake_req *f = new_req(0, 11, 2, "ce");
	JoinGroupRequest m = join_msg("e", "", NULL, 50, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	run_for(20);
	JoinGroupResponse r = join_resp(f);
	ck_assert_int_eq(r.error_code, 0);
	grp_group *g = grp_find(&gc, "e", 1);
	ck_assert_int_eq(g->nmembers, 1);
	/* No heartbeat for longer than the session timeout (50 ms). */
	run_for(200);
	ck_assert_int_eq(g->nmembers, 0);
	ck_assert_int_eq(g->state, GRP_EMPTY);
	ck_assert_int_eq(g->generation_id, 2);
}
END_TEST

/* An offset commit from a member of a Stable group keeps its session alive,
 * as a heartbeat does; without either the member expires. */
START_TEST(test_commit_counts_as_heartbeat)
{
	fake_req *f = new_req(0, 11, 2, "ch");
	JoinGroupRequest m = join_msg("hc", "", NULL, 300, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	run_for(20);
	JoinGroupResponse r = join_resp(f);
	ck_assert_int_eq(r.error_code, 0);
	char *id = str_copy(r.member_id);
	SyncGroupRequest_SyncGroupRequestAssignment as[1] = {
		{ proto_cstr(id), { (const uint8_t *)"A", 1 } },
	};
	fake_req *fs = new_req(1, 14, 3, "ch");
	SyncGroupRequest s = sync_msg("hc", id, r.generation_id, as, 1);
	ck_assert_int_eq(grp_sync(&gc, &fs->req, &s), BRK_DELAYED);
	grp_group *g = grp_find(&gc, "hc", 2);
	ck_assert_int_eq(g->state, GRP_STABLE);
	proto_str none = proto_str_of(NULL, -1);
	/* 12 x 40 ms = 480 ms, well past the 300 ms session, with commits only
	 * (each gap leaves 260 ms of slack for a slow sanitizer build). */
	for (int i = 0; i < 12; i++) {
		run_for(40);
		ck_assert_int_eq(grp_validate_commit(g, proto_cstr(id), r.generation_id, none),
				 KERR_NONE);
	}
	ck_assert_int_eq(g->nmembers, 1);
	run_for(800);
	ck_assert_int_eq(g->nmembers, 0);
	free(id);
}
END_TEST

START_TEST(test_closed_connection_join)
{
	/* Member a is Stable; b joins and its connection closes while it
	 * waits: nothing is answered to it, and the rebalance still
	 * completes when a rejoins. */
	char *a = join_two_step(0, "k", "ca", META_A);
	run_for(20);
	fake_req *f = new_req(1, 14, 3, "ca");
	SyncGroupRequest s = sync_msg("k", a, 1, NULL, 0);
	grp_sync(&gc, &f->req, &s);
	f = new_req(2, 11, 3, "cb");
	JoinGroupRequest jb = join_msg("k", "", NULL, 10000, "consumer", "range", NULL, META_B);
	ck_assert_int_eq(grp_join(&gc, &f->req, &jb), BRK_DELAYED);
	ck_assert_ptr_nonnull(f->req.cancel);
	f->req.cancel(&f->req);
	f = new_req(0, 11, 5, "ca");
	JoinGroupRequest ja = join_msg("k", a, NULL, 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &ja), BRK_DELAYED);
	ck_assert_int_eq(reqs[0].completed, 1);
	ck_assert_int_eq(reqs[2].completed, 0);
	JoinGroupResponse r = join_resp(&reqs[0]);
	ck_assert_int_eq(r.generation_id, 2);
	ck_assert_int_eq(r.members_count, 2); /* b stays a member */
	free(a);
}
END_TEST

START_TEST(test_join_errors)
{
	/* Different protocol type than the group's. */
	char *a = join_two_step(0, "p", "ca", META_A);
	run_for(20);
	fake_req *f = new_req(1, 11, 7, "cx");
	JoinGroupRequest m = join_msg("p", "", NULL, 10000, "other", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	JoinGroupResponse r = join_resp(f);
	ck_assert_int_eq(r.error_code, KERR_INCONSISTENT_GROUP_PROTOCOL);
	ck_assert_int_eq(r.protocol_name.len, -1); /* v7+: null */
	/* No common protocol. */
	f = new_req(1, 11, 3, "cx");
	m = join_msg("p", "", NULL, 10000, "consumer", "sticky", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	r = join_resp(f);
	ck_assert_int_eq(r.error_code, KERR_INCONSISTENT_GROUP_PROTOCOL);
	ck_assert_int_eq(r.protocol_name.len, 0); /* v3: "" */
	/* A member id for a group that does not exist. */
	f = new_req(1, 11, 5, "cx");
	m = join_msg("nosuch", "someone", NULL, 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_UNKNOWN_MEMBER_ID);
	ck_assert_ptr_null(grp_find(&gc, "nosuch", 6));
	/* group.max.size = 1: a second member is refused. */
	cfg.group_max_size = 1;
	f = new_req(1, 11, 3, "cx");
	m = join_msg("p", "", NULL, 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_GROUP_MAX_SIZE_REACHED);
	/* An empty protocol type cannot start a group. */
	f = new_req(1, 11, 3, "cx");
	m = join_msg("q", "", NULL, 10000, "", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_INCONSISTENT_GROUP_PROTOCOL);
	free(a);
}
END_TEST

START_TEST(test_pending_member_expiry)
{
	/* A MEMBER_ID_REQUIRED member that never comes back holds the
	 * rebalance until its session timeout, then it completes. */
	char *a = join_two_step(0, "x", "ca", META_A);
	run_for(20);
	fake_req *f = new_req(1, 14, 3, "ca");
	SyncGroupRequest s = sync_msg("x", a, 1, NULL, 0);
	grp_sync(&gc, &f->req, &s);
	f = new_req(2, 11, 5, "cb");
	JoinGroupRequest m = join_msg("x", "", NULL, 60, "consumer", "range", NULL, META_B);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_MEMBER_ID_REQUIRED);
	grp_group *g = grp_find(&gc, "x", 1);
	ck_assert_int_eq(g->npending, 1);
	/* The leader asks for a rebalance (a leader's JoinGroup in Stable). */
	f = new_req(0, 11, 5, "ca");
	JoinGroupRequest ja = join_msg("x", a, NULL, 10000, "consumer", "range", "roundrobin", META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &ja), BRK_DELAYED);
	ck_assert_int_eq(f->completed, 0);
	run_for(150);
	ck_assert_int_eq(g->npending, 0);
	ck_assert_int_eq(f->completed, 1);
	ck_assert_int_eq(join_resp(f).generation_id, 2);
	free(a);
}
END_TEST

/* ---- ownership (onElection / onResignation) ---- */

/* Two ids in different partitions of a 4-partition __consumer_offsets. */
static void two_ids(const char **mine, const char **theirs)
{
	static const char *ids[] = { "a", "b", "c", "d", "e", "f" };
	*mine = *theirs = NULL;
	for (size_t i = 0; i < 6; i++) {
		int32_t p = brk_coordinator_partition(ids[i], 1, 4);
		if (p == 1 && !*mine)
			*mine = ids[i];
		else if (p != 1 && !*theirs)
			*theirs = ids[i];
	}
	ck_assert_ptr_nonnull(*mine);
	ck_assert_ptr_nonnull(*theirs);
}

START_TEST(test_not_coordinator)
{
	const char *mine, *theirs;
	two_ids(&mine, &theirs);
	/* Unknown topic: every group is served, as on one node before. */
	ck_assert_int_eq(grp_coordinator_error(&gc, theirs, 1), KERR_NONE);
	ck_assert_int_eq(grp_partitions_known(&gc, 4), 0);
	ck_assert_int_eq(grp_coordinator_error(&gc, mine, 1), KERR_NOT_COORDINATOR);
	grp_partition_loaded(&gc, 1, NULL, 3);
	ck_assert_int_eq(grp_coordinator_error(&gc, mine, 1), KERR_NONE);
	ck_assert_int_eq(grp_coordinator_error(&gc, theirs, 1), KERR_NOT_COORDINATOR);

	fake_req *f = new_req(0, 11, 5, "c");
	JoinGroupRequest m = join_msg(theirs, "", NULL, 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_NOT_COORDINATOR);
	ck_assert_ptr_null(grp_find(&gc, theirs, 1)); /* nothing made */
	ck_assert_int_eq(store_writes, 0);
	f = new_req(1, 14, 3, "c");
	SyncGroupRequest sm = sync_msg(theirs, "m", 1, NULL, 0);
	ck_assert_int_eq(grp_sync(&gc, &f->req, &sm), BRK_RESPOND);
	ck_assert_int_eq(sync_resp(f).error_code, KERR_NOT_COORDINATOR);
	ck_assert_int_eq(grp_heartbeat(&gc, proto_cstr(theirs), proto_cstr("m"), 1, proto_str_of(NULL, -1)),
			 KERR_NOT_COORDINATOR);

	/* Its own partition: served, in the right partition. */
	f = new_req(2, 11, 3, "c");
	m = join_msg(mine, "", NULL, 10000, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	grp_group *g = grp_find(&gc, mine, 1);
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(g->partition, 1);
	run_for(20);
	ck_assert_int_eq(f->completed, 1);
	ck_assert_int_eq(join_resp(f).error_code, KERR_NONE);
}
END_TEST

/* A group made while the topic was unknown gets its partition when the
 * topic appears. */
START_TEST(test_partition_assigned_later)
{
	grp_group *g = grp_get_or_create(&gc, "late", 4);
	ck_assert_int_eq(g->partition, -1);
	ck_assert_int_eq(grp_partitions_known(&gc, 50), 0);
	ck_assert_int_eq(g->partition, brk_coordinator_partition("late", 4, 50));
	ck_assert_int_eq(grp_partition_unload(&gc, g->partition), 1);
	ck_assert_ptr_null(grp_find(&gc, "late", 4));
}
END_TEST

/* Resignation: the partition's groups go, waiting JoinGroup and SyncGroup
 * are answered NOT_COORDINATOR, their timers do not fire afterwards, and
 * the other partitions' groups stay. */
START_TEST(test_unload)
{
	const char *mine, *theirs;
	two_ids(&mine, &theirs);
	ck_assert_int_eq(grp_partitions_known(&gc, 4), 0);
	int32_t other = brk_coordinator_partition(theirs, 1, 4);
	grp_partition_loaded(&gc, 1, NULL, 3);
	grp_partition_loaded(&gc, other, NULL, 3);

	/* Two members of mine: the first waits in its SyncGroup, the second
	 * in a JoinGroup of the next rebalance. */
	fake_req *f = new_req(0, 11, 3, "c1");
	JoinGroupRequest m = join_msg(mine, "", NULL, 100, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	run_for(20);
	char *a = str_copy(join_resp(f).member_id);
	f = new_req(1, 14, 3, "c1");
	SyncGroupRequest_SyncGroupRequestAssignment as[1] = { { proto_cstr(a), { (const uint8_t *)"A", 1 } } };
	SyncGroupRequest sm = sync_msg(mine, a, 1, as, 1);
	ck_assert_int_eq(grp_sync(&gc, &f->req, &sm), BRK_DELAYED); /* answered at once */
	ck_assert_int_eq(f->completed, 1);
	f = new_req(2, 11, 3, "c2");
	m = join_msg(mine, "", NULL, 100, "consumer", "range", NULL, META_B);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);
	ck_assert_int_eq(f->completed, 0);
	/* A group of the other partition. */
	f = new_req(3, 11, 3, "c3");
	m = join_msg(theirs, "", NULL, 100, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_DELAYED);

	ck_assert_int_eq(grp_partition_unload(&gc, 1), 1);
	ck_assert_int_eq(reqs[2].completed, 1);
	JoinGroupResponse r = join_resp(&reqs[2]);
	ck_assert_int_eq(r.error_code, KERR_NOT_COORDINATOR);
	ck_assert_ptr_null(grp_find(&gc, mine, 1));
	ck_assert_ptr_nonnull(grp_find(&gc, theirs, 1));
	ck_assert_int_eq(grp_coordinator_error(&gc, mine, 1), KERR_NOT_COORDINATOR);
	/* Session and rebalance timers of the dropped group are gone (ASan
	 * would see a use after free). */
	run_for(250);
	ck_assert_int_eq(reqs[3].completed, 1);
	ck_assert_int_eq(join_resp(&reqs[3]).error_code, KERR_NONE);
	f = new_req(4, 11, 3, "c1");
	m = join_msg(mine, a, NULL, 100, "consumer", "range", NULL, META_A);
	ck_assert_int_eq(grp_join(&gc, &f->req, &m), BRK_RESPOND);
	ck_assert_int_eq(join_resp(f).error_code, KERR_NOT_COORDINATOR);
	free(a);
}
END_TEST

/* The registry at scale: 20,000 groups found by id (views without a NUL),
 * iterated once each, removed one by one (grp_remove) and by partition
 * (grp_partition_unload: exactly that partition's groups), an id with an
 * embedded NUL a group of its own. */
START_TEST(test_registry_many)
{
	enum { N = 20000, NP = 8 };
	char id[32];
	ck_assert_int_eq(grp_partitions_known(&gc, NP), 0);
	int32_t per_partition[NP] = { 0 };
	for (int i = 0; i < N; i++) {
		int len = snprintf(id, sizeof(id), "group-%d", i);
		grp_group *g = grp_get_or_create(&gc, id, len);
		ck_assert_ptr_nonnull(g);
		ck_assert_int_eq(g->partition, brk_coordinator_partition(id, len, NP));
		per_partition[g->partition]++;
	}
	ck_assert_int_eq(grp_count(&gc), N);
	for (int i = 0; i < N; i++) {
		/* a view into a longer buffer: "group-<i>" then "xyz" */
		int len = snprintf(id, sizeof(id), "group-%dxyz", i) - 3;
		grp_group *g = grp_find(&gc, id, len);
		ck_assert_ptr_nonnull(g);
		ck_assert_int_eq(g->group_id_len, len);
		ck_assert(memcmp(g->group_id, id, (size_t)len) == 0);
		ck_assert_ptr_eq(grp_get_or_create(&gc, id, len), g); /* no second one */
	}
	ck_assert_int_eq(grp_count(&gc), N);
	ck_assert_ptr_null(grp_find(&gc, "group-", 6));
	ck_assert_ptr_null(grp_find(&gc, "group-1x", 8));
	/* "a\0b" and "a" are two groups. */
	grp_group *nul = grp_get_or_create(&gc, "a\0b", 3);
	grp_group *a = grp_get_or_create(&gc, "a", 1);
	ck_assert_ptr_nonnull(nul);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_ne(nul, a);
	ck_assert_ptr_eq(grp_find(&gc, "a\0b", 3), nul);
	grp_remove(nul);
	ck_assert_ptr_null(grp_find(&gc, "a\0b", 3));
	ck_assert_ptr_eq(grp_find(&gc, "a", 1), a);
	per_partition[a->partition]++;

	/* Iteration: every group once. */
	char *seen = calloc(N + 1, 1);
	grp_group *g;
	int32_t n = 0;
	for (int32_t i = 0; (g = grp_at(&gc, i)) != NULL; i++, n++) {
		int k = g->group_id[0] == 'a' ? N : atoi(g->group_id + 6);
		ck_assert_int_eq(seen[k], 0);
		seen[k] = 1;
	}
	ck_assert_int_eq(n, N + 1);
	free(seen);

	/* Every third group removed by id. */
	int32_t removed = 0;
	for (int i = 0; i < N; i += 3) {
		int len = snprintf(id, sizeof(id), "group-%d", i);
		g = grp_find(&gc, id, len);
		per_partition[g->partition]--;
		grp_remove(g);
		removed++;
	}
	ck_assert_int_eq(grp_count(&gc), N + 1 - removed);
	for (int i = 0; i < N; i++) {
		int len = snprintf(id, sizeof(id), "group-%d", i);
		g = grp_find(&gc, id, len);
		ck_assert(i % 3 == 0 ? g == NULL : g != NULL);
	}
	/* Unloading a partition takes exactly its groups. */
	int32_t left = grp_count(&gc);
	ck_assert_int_eq(grp_partition_unload(&gc, 3), per_partition[3]);
	ck_assert_int_eq(grp_count(&gc), left - per_partition[3]);
	for (int32_t i = 0; (g = grp_at(&gc, i)) != NULL; i++)
		ck_assert_int_ne(g->partition, 3);
	for (int p = 0; p < NP; p++)
		if (p != 3)
			ck_assert_int_eq(grp_partition_unload(&gc, p), per_partition[p]);
	ck_assert_int_eq(grp_count(&gc), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("group");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_partition_for);
	tcase_add_test(tc, test_select_protocol);
	tcase_add_test(tc, test_validate_commit);
	tcase_add_test(tc, test_members_many);
	tcase_add_test(tc, test_validate_txn_commit);
	tcase_add_test(tc, test_txn_commit_and_abort);
	tcase_add_test(tc, test_txn_commit_record_order);
	tcase_add_test(tc, test_txn_tombstone);
	tcase_add_test(tc, test_rebalance_two_members);
	tcase_add_test(tc, test_static_member_rejoin);
	tcase_add_test(tc, test_session_expiry);
	tcase_add_test(tc, test_commit_counts_as_heartbeat);
	tcase_add_test(tc, test_closed_connection_join);
	tcase_add_test(tc, test_join_errors);
	tcase_add_test(tc, test_pending_member_expiry);
	tcase_add_test(tc, test_not_coordinator);
	tcase_add_test(tc, test_partition_assigned_later);
	tcase_add_test(tc, test_unload);
	tcase_add_test(tc, test_registry_many);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
