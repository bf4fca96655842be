/*
 * group.c - the classic group coordinator (Kafka's ClassicGroup and the
 * classic paths of GroupMetadataManager): the registry of groups, members,
 * the state machine, the rebalance (join phase with the initial delay, sync
 * phase), session, rebalance and pending-sync timers on the event loop, and
 * the JoinGroup/SyncGroup/Heartbeat/LeaveGroup operations (see group.h).
 *
 * Waiting requests: a JoinGroup waits until every known member has rejoined
 * (or the rebalance timeout), a follower's SyncGroup until the leader's
 * SyncGroup. Such a request is attached to its member (join_req, sync_req)
 * with req->cancel set: when its connection closes the request is detached
 * and the member stays (it is still counted as rejoined, as Kafka keeps the
 * member's future), so no answer is ever written to a closed connection.
 * Every path that removes a member first answers its attached requests.
 *
 * Kafka's timer keys map to: member->session_timer (heartbeat key),
 * g->rebalance_timer (join key, also the initial delay), g->sync_timer (sync
 * key), and one timer per pending member id.
 *
 * Answers go through finish() / answer(), which hold them until the
 * coordinator's last write to the group's partition is committed
 * (grp_answer).
 */
#include "broker/group/group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker/conn.h"
#include "broker/coordinator_key.h"
#include "broker/group/offsets.h"
#include "broker/group/txn_offsets.h"
#include "broker/ratelog.h"
#include "protocol/err.h"
#include "storage/log.h"

/* API keys of the requests group.c answers itself. */
#define API_JOIN_GROUP 11

/* Kafka's GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS:
 * how long a new member's JoinGroup may wait before the member expires. */
#define NEW_MEMBER_JOIN_TIMEOUT_MS 300000

struct grp_pending {
	grp_group *g;
	char *member_id;
	uint64_t timer;
};

/* ---- small helpers ---- */

static char *dup_view(const char *p, int32_t len)
{
	if (len < 0)
		return NULL;
	char *s = malloc((size_t)len + 1);
	if (!s)
		return NULL;
	if (len)
		memcpy(s, p, (size_t)len);
	s[len] = '\0';
	return s;
}

static bool str_eq_view(const char *s, const char *p, int32_t len)
{
	return s && len >= 0 && strlen(s) == (size_t)len && memcmp(s, p, (size_t)len) == 0;
}

static bool view_null(proto_str s) { return s.len < 0 || !s.ptr; }

static proto_str view(const char *s) { return proto_cstr(s); }

static void cancel_timer(grp_coordinator *gc, uint64_t *id)
{
	if (*id && gc->loop)
		brk_timer_cancel(gc->loop, *id);
	*id = 0;
}

static uint64_t add_timer(grp_coordinator *gc, int64_t ms, brk_timer_fn fn, void *arg)
{
	if (!gc->loop)
		return 0;
	return brk_timer_add(gc->loop, ms < 0 ? 0 : ms, fn, arg);
}

const char *grp_state_name(grp_state s)
{
	switch (s) {
	case GRP_EMPTY: return "Empty";
	case GRP_PREPARING_REBALANCE: return "PreparingRebalance";
	case GRP_COMPLETING_REBALANCE: return "CompletingRebalance";
	case GRP_STABLE: return "Stable";
	case GRP_DEAD: return "Dead";
	}
	return "Dead";
}

static void transition(grp_group *g, grp_state s)
{
	g->previous_state = g->state;
	g->state = s;
	g->state_timestamp_ms = brk_wall_ms();
}

/* ---- the coordinator and its partitions ---- */

void grp_coordinator_init(grp_coordinator *gc, brk_loop *loop, const brk_config *cfg)
{
	memset(gc, 0, sizeof(*gc));
	gc->loop = loop;
	gc->cfg = cfg;
	gc->load_slice = GRP_LOAD_SLICE_RECORDS;
	brk_strmap_init(&gc->groups);
	brk_strmap_init(&gc->open_txns);
	proto_writer_init(&gc->batch_buf);
	proto_writer_init(&gc->kv_buf);
}

int grp_partitions_known(grp_coordinator *gc, int32_t npartitions)
{
	if (npartitions > gc->npartitions) {
		grp_partition *n = realloc(gc->parts, (size_t)npartitions * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + gc->npartitions, 0, (size_t)(npartitions - gc->npartitions) * sizeof(*n));
		gc->parts = n;
	}
	bool was_unknown = gc->npartitions <= 0;
	if (npartitions > 0)
		gc->npartitions = npartitions;
	/* Groups made while the topic was unknown (their writes failed) now
	 * belong to a partition, and go with it when it is (re)loaded. Only
	 * then can a group be without one. */
	grp_group *g;
	for (int32_t i = 0; was_unknown && (g = grp_at(gc, i)) != NULL; i++)
		if (g->partition < 0)
			g->partition = grp_partition_of(gc, g->group_id, (int32_t)strlen(g->group_id));
	return 0;
}

int32_t grp_partition_of(const grp_coordinator *gc, const char *id, int32_t len)
{
	if (gc->npartitions <= 0)
		return -1;
	return brk_coordinator_partition(id, len > 0 ? len : 0, gc->npartitions);
}

grp_partition *grp_partition_state(grp_coordinator *gc, int32_t index)
{
	return index >= 0 && index < gc->npartitions ? &gc->parts[index] : NULL;
}

int16_t grp_coordinator_error(const grp_coordinator *gc, const char *id, int32_t len)
{
	int32_t i = grp_partition_of(gc, id, len);
	if (i < 0)
		return KERR_NONE; /* no __consumer_offsets yet: its writes answer */
	if (gc->parts[i].loaded)
		return KERR_NONE;
	return gc->parts[i].loading ? KERR_COORDINATOR_LOAD_IN_PROGRESS : KERR_NOT_COORDINATOR;
}

void grp_partition_loading(grp_coordinator *gc, int32_t index, struct brk_partition *p,
			   int32_t leader_epoch)
{
	grp_partition *ps = grp_partition_state(gc, index);
	if (!ps)
		return;
	if (!ps->loading)
		gc->nloading++;
	*ps = (grp_partition){ .loading = true, .p = p, .leader_epoch = leader_epoch };
}

void grp_partition_loaded(grp_coordinator *gc, int32_t index, struct brk_partition *p,
			  int32_t leader_epoch)
{
	grp_partition *ps = grp_partition_state(gc, index);
	if (!ps)
		return;
	/* What was loaded reaches the log end offset, maybe above the high
	 * watermark: answers wait for it as for a write made here. */
	brk_hw_mark loaded = { 0 };
	if (p && p->log)
		loaded = (brk_hw_mark){ p, leader_epoch, log_end_offset(p->log) };
	if (ps->loading)
		gc->nloading--;
	*ps = (grp_partition){ .loaded = true, .p = p, .leader_epoch = leader_epoch,
			       .last_write = loaded };
}

int grp_answer(grp_coordinator *gc, brk_request *req, int32_t index, brk_hw_fail_fn fail,
	       void *arg)
{
	grp_partition *ps = grp_partition_state(gc, index);
	if (!ps || !ps->loaded)
		return BRK_RESPOND;
	return brk_hw_answer(req, &ps->last_write, 1, GRP_WRITE_TIMEOUT_MS,
			     KERR_COORDINATOR_NOT_AVAILABLE, fail, arg);
}

/* ---- registry ---- */

grp_group *grp_find(grp_coordinator *gc, const char *group_id, int32_t len)
{
	return brk_strmap_get(&gc->groups, group_id, len);
}

grp_group *grp_at(grp_coordinator *gc, int32_t i)
{
	return brk_strmap_at(&gc->groups, i);
}

int32_t grp_count(const grp_coordinator *gc)
{
	return brk_strmap_count(&gc->groups);
}

grp_group *grp_get_or_create(grp_coordinator *gc, const char *group_id, int32_t len)
{
	grp_group *g = grp_find(gc, group_id, len);
	if (g)
		return g;
	if (len < 0)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->group_id = dup_view(group_id, len);
	g->group_id_len = len;
	g->offsets = grp_offsets_new();
	g->txns = grp_txn_set_new();
	/* The key is the group's own id string (strmap.h: borrowed). */
	if (!g->group_id || !g->offsets || !g->txns ||
	    brk_strmap_put(&gc->groups, g->group_id, len, g) < 0) {
		free(g->group_id);
		grp_offsets_free(g->offsets);
		grp_txn_set_free(g->txns);
		free(g);
		return NULL;
	}
	g->coord = gc;
	g->partition = grp_partition_of(gc, group_id, len);
	g->state = GRP_EMPTY;
	g->previous_state = GRP_EMPTY;
	g->generation_id = 0;
	g->state_timestamp_ms = brk_wall_ms();
	return g;
}

/* A group's members by member id and by group instance id; allocated with
 * the first member, so that the many groups without members (simple
 * commits) pay one pointer. */
struct grp_member_index {
	brk_strmap by_id;
	brk_strmap by_instance;
};

grp_member *grp_member_find(grp_group *g, const char *member_id, int32_t len)
{
	return g->index ? brk_strmap_get(&g->index->by_id, member_id, len) : NULL;
}

static grp_member *member_by_id(grp_group *g, const char *id)
{
	return id ? grp_member_find(g, id, (int32_t)strlen(id)) : NULL;
}

static grp_member *static_member(grp_group *g, const char *iid, int32_t len)
{
	return g->index ? brk_strmap_get(&g->index->by_instance, iid, len) : NULL;
}

/* Index m by member id and group instance id. Returns 0, -EEXIST (an id
 * taken) or -ENOMEM; nothing is indexed then. */
static int index_member(grp_group *g, grp_member *m)
{
	if (!m->member_id)
		return 0;
	if (!g->index && !(g->index = calloc(1, sizeof(*g->index))))
		return -ENOMEM;
	brk_strmap *by_id = &g->index->by_id;
	int rc = brk_strmap_put(by_id, m->member_id, (int32_t)strlen(m->member_id), m);
	if (rc < 0 || !m->group_instance_id)
		return rc;
	rc = brk_strmap_put(&g->index->by_instance, m->group_instance_id,
			    (int32_t)strlen(m->group_instance_id), m);
	if (rc < 0)
		brk_strmap_remove(by_id, m->member_id, (int32_t)strlen(m->member_id));
	return rc;
}

static void unindex_member(grp_group *g, grp_member *m)
{
	if (!g->index)
		return;
	brk_strmap *by_id = &g->index->by_id, *by_instance = &g->index->by_instance;
	if (m->member_id && brk_strmap_get(by_id, m->member_id, (int32_t)strlen(m->member_id)) == m)
		brk_strmap_remove(by_id, m->member_id, (int32_t)strlen(m->member_id));
	if (m->group_instance_id &&
	    brk_strmap_get(by_instance, m->group_instance_id, (int32_t)strlen(m->group_instance_id)) == m)
		brk_strmap_remove(by_instance, m->group_instance_id,
				  (int32_t)strlen(m->group_instance_id));
}

/* ---- members ---- */

grp_member *grp_member_new(void) { return calloc(1, sizeof(grp_member)); }

static void free_protocols(grp_member *m)
{
	for (int32_t i = 0; i < m->nprotocols; i++) {
		free(m->protocols[i].name);
		free(m->protocols[i].metadata);
	}
	free(m->protocols);
	m->protocols = NULL;
	m->nprotocols = 0;
}

void grp_member_free(grp_member *m)
{
	if (!m)
		return;
	if (m->group)
		cancel_timer(m->group->coord, &m->session_timer);
	free(m->member_id);
	free(m->group_instance_id);
	free(m->client_id);
	free(m->client_host);
	free(m->protocol_type);
	free_protocols(m);
	free(m->assignment);
	free(m);
}

int grp_member_add(grp_group *g, grp_member *m)
{
	grp_member **n = realloc(g->members, (size_t)(g->nmembers + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	g->members = n;
	/* The first member sets the group's protocol type (ClassicGroup.add). */
	if (g->nmembers == 0 && m->protocol_type) {
		char *pt = strdup(m->protocol_type);
		if (!pt)
			return -ENOMEM;
		free(g->protocol_type);
		g->protocol_type = pt;
	}
	if (!g->leader_id && m->member_id) {
		g->leader_id = strdup(m->member_id);
		if (!g->leader_id)
			return -ENOMEM;
	}
	int rc = index_member(g, m);
	if (rc < 0)
		return rc;
	g->members[g->nmembers++] = m;
	m->group = g;
	return 0;
}

/* Copy the request's protocols into m (replacing its own). */
static int set_protocols(grp_member *m, const JoinGroupRequest *r)
{
	int32_t n = r->protocols_count > 0 ? r->protocols_count : 0;
	grp_protocol *p = calloc((size_t)(n ? n : 1), sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (int32_t i = 0; i < n; i++) {
		const JoinGroupRequest_JoinGroupRequestProtocol *rp = &r->protocols[i];
		p[i].name = dup_view(rp->name.ptr, rp->name.len < 0 ? 0 : rp->name.len);
		int32_t ml = rp->metadata.len > 0 ? rp->metadata.len : 0;
		p[i].metadata = malloc((size_t)(ml ? ml : 1));
		if (!p[i].name || !p[i].metadata) {
			for (int32_t j = 0; j <= i; j++) {
				free(p[j].name);
				free(p[j].metadata);
			}
			free(p);
			return -ENOMEM;
		}
		if (ml)
			memcpy(p[i].metadata, rp->metadata.ptr, (size_t)ml);
		p[i].metadata_len = ml;
	}
	free_protocols(m);
	m->protocols = p;
	m->nprotocols = n;
	return 0;
}

static const grp_protocol *member_protocol(const grp_member *m, const char *name)
{
	if (!name)
		return NULL;
	for (int32_t i = 0; i < m->nprotocols; i++)
		if (strcmp(m->protocols[i].name, name) == 0)
			return &m->protocols[i];
	return NULL;
}

static bool member_supports(const grp_member *m, const char *name, int32_t len)
{
	for (int32_t i = 0; i < m->nprotocols; i++)
		if (str_eq_view(m->protocols[i].name, name, len))
			return true;
	return false;
}

/* ClassicGroupMember.matches: the same protocols, names and metadata, in
 * the same order. */
static bool member_matches(const grp_member *m, const JoinGroupRequest *r)
{
	int32_t n = r->protocols_count > 0 ? r->protocols_count : 0;
	if (n != m->nprotocols)
		return false;
	for (int32_t i = 0; i < n; i++) {
		const JoinGroupRequest_JoinGroupRequestProtocol *rp = &r->protocols[i];
		const grp_protocol *p = &m->protocols[i];
		int32_t ml = rp->metadata.len > 0 ? rp->metadata.len : 0;
		if (!str_eq_view(p->name, rp->name.ptr, rp->name.len) || p->metadata_len != ml ||
		    (ml && memcmp(p->metadata, rp->metadata.ptr, (size_t)ml) != 0))
			return false;
	}
	return true;
}

/* A protocol is a candidate when every member supports it. */
static bool is_candidate(const grp_group *g, const char *name, int32_t len)
{
	for (int32_t i = 0; i < g->nmembers; i++)
		if (!member_supports(g->members[i], name, len))
			return false;
	return g->nmembers > 0;
}

const char *grp_select_protocol(const grp_group *g)
{
	if (g->nmembers == 0)
		return NULL;
	/* Votes, counted per candidate; candidates are taken in the order of
	 * the first member's preferences, which breaks ties. */
	const grp_member *first = g->members[0];
	const char *best = NULL;
	int32_t best_votes = 0;
	for (int32_t c = 0; c < first->nprotocols; c++) {
		const char *cand = first->protocols[c].name;
		if (!is_candidate(g, cand, (int32_t)strlen(cand)))
			continue;
		int32_t votes = 0;
		for (int32_t i = 0; i < g->nmembers; i++) {
			const grp_member *m = g->members[i];
			for (int32_t k = 0; k < m->nprotocols; k++) {
				const char *name = m->protocols[k].name;
				if (is_candidate(g, name, (int32_t)strlen(name))) {
					if (strcmp(name, cand) == 0)
						votes++;
					break; /* the member's vote: its first candidate */
				}
			}
		}
		if (votes > best_votes) {
			best = cand;
			best_votes = votes;
		}
	}
	return best;
}

/* ClassicGroup.supportsProtocols. */
static bool supports_protocols(const grp_group *g, const JoinGroupRequest *r)
{
	int32_t n = r->protocols_count > 0 ? r->protocols_count : 0;
	if (g->state == GRP_EMPTY)
		return r->protocol_type.len > 0 && n > 0;
	if (!str_eq_view(g->protocol_type, r->protocol_type.ptr, r->protocol_type.len))
		return false;
	for (int32_t i = 0; i < n; i++)
		if (is_candidate(g, r->protocols[i].name.ptr, r->protocols[i].name.len))
			return true;
	return false;
}

static int32_t rebalance_timeout(const grp_group *g)
{
	int32_t t = 0;
	for (int32_t i = 0; i < g->nmembers; i++)
		if (g->members[i]->rebalance_timeout_ms > t)
			t = g->members[i]->rebalance_timeout_ms;
	return t;
}

static int32_t num_awaiting_join(const grp_group *g)
{
	int32_t n = 0;
	for (int32_t i = 0; i < g->nmembers; i++)
		n += g->members[i]->awaiting_join;
	return n;
}

/* ClassicGroup.hasAllMembersJoined. */
static bool all_joined(const grp_group *g)
{
	return num_awaiting_join(g) == g->nmembers && g->npending == 0;
}

static bool is_leader(const grp_group *g, const char *member_id)
{
	return g->leader_id && member_id && strcmp(g->leader_id, member_id) == 0;
}

/* "<prefix>-<random UUID>" (ClassicGroup.generateMemberId). */
static char *generate_member_id(const char *prefix, int32_t len)
{
	uint8_t u[16];
	if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u)) {
		for (size_t i = 0; i < sizeof(u); i++)
			u[i] = (uint8_t)rand();
	}
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80); /* IETF variant */
	if (len < 0)
		len = 0;
	char *s = malloc((size_t)len + 38);
	if (!s)
		return NULL;
	int n = snprintf(s, (size_t)len + 38, "%.*s-", (int)len, prefix ? prefix : "");
	for (int i = 0; i < 16; i++) {
		n += snprintf(s + n, 3, "%02x", u[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			s[n++] = '-';
	}
	s[n] = '\0';
	return s;
}

/* ---- responses to attached requests ---- */

typedef struct join_answer {
	int16_t error;
	const char *member_id;
	int32_t generation_id;
	const char *protocol_type;
	const char *protocol_name;
	const char *leader;
	bool skip_assignment;
	const grp_group *members_of; /* the leader's member list, or NULL */
} join_answer;

/* Encode a JoinGroupResponse for req (v<7 cannot carry a null protocol
 * name: "" as Kafka's JoinGroupResponse does). Returns 0 or -1. */
static int encode_join(brk_request *req, const join_answer *a)
{
	int16_t v = req->api_version;
	JoinGroupResponse r;
	JoinGroupResponse_init(&r);
	r.error_code = a->error;
	r.generation_id = a->generation_id;
	r.protocol_type = view(a->protocol_type);
	r.protocol_name = a->protocol_name ? view(a->protocol_name) : v >= 7 ? view(NULL) : view("");
	r.leader = view(a->leader ? a->leader : "");
	r.skip_assignment = a->skip_assignment;
	r.member_id = view(a->member_id ? a->member_id : "");
	r.members_count = 0;
	const grp_group *g = a->members_of;
	if (g && g->nmembers > 0) {
		r.members = proto_arena_alloc(req->arena, (size_t)g->nmembers * sizeof(*r.members));
		if (!r.members)
			return -1;
		for (int32_t i = 0; i < g->nmembers; i++) {
			const grp_member *m = g->members[i];
			JoinGroupResponse_JoinGroupResponseMember *rm = &r.members[i];
			JoinGroupResponse_JoinGroupResponseMember_init(rm);
			rm->member_id = view(m->member_id);
			rm->group_instance_id = view(m->group_instance_id);
			const grp_protocol *p = member_protocol(m, g->protocol_name);
			rm->metadata.ptr = p ? p->metadata : NULL;
			rm->metadata.len = p ? p->metadata_len : 0;
		}
		r.members_count = g->nmembers;
	}
	return JoinGroupResponse_encode(req->out, v, &r) == 0 ? 0 : -1;
}

static int encode_sync(brk_request *req, int16_t error, const char *ptype, const char *pname,
		       const uint8_t *assignment, int32_t len)
{
	SyncGroupResponse r;
	SyncGroupResponse_init(&r);
	r.error_code = error;
	r.protocol_type = view(ptype);
	r.protocol_name = view(pname);
	r.assignment.ptr = assignment;
	r.assignment.len = assignment ? len : 0;
	return SyncGroupResponse_encode(req->out, req->api_version, &r) == 0 ? 0 : -1;
}

/* The connection of an attached request closed: detach it. */
static void on_request_cancel(brk_request *req)
{
	grp_member *m = req->delayed;
	if (m) {
		if (m->join_req == req)
			m->join_req = NULL;
		if (m->sync_req == req)
			m->sync_req = NULL;
	}
	req->delayed = NULL;
	req->cancel = NULL;
}

static void attach(brk_request *req, grp_member *m)
{
	req->delayed = m;
	req->cancel = on_request_cancel;
}

/* brk_hw_fail_fn of JoinGroup and SyncGroup answers: the error alone. */
static int fail_answer(brk_request *req, void *arg, int16_t err)
{
	(void)arg;
	int rc;
	if (req->api_key == API_JOIN_GROUP) {
		join_answer a = { .error = err, .member_id = "", .generation_id = -1 };
		rc = encode_join(req, &a);
	} else {
		rc = encode_sync(req, err, NULL, NULL, (const uint8_t *)"", 0);
	}
	return rc == 0 ? BRK_RESPOND : BRK_CLOSE;
}

/* The answer in req->out of a request of group g, once g's partition has
 * its writes committed (grp_answer). */
static int answer(grp_group *g, brk_request *req, int rc)
{
	if (rc != BRK_RESPOND || !g)
		return rc;
	return grp_answer(g->coord, req, g->partition, fail_answer, NULL);
}

/* Send an attached request's answer (after answer()'s wait). When encoding
 * failed (only a full arena or writer), the writer's error makes the
 * connection close. */
static void finish(grp_group *g, brk_request *req, int rc)
{
	(void)rc;
	int r = answer(g, req, BRK_RESPOND);
	if (r != BRK_DELAYED)
		brk_request_complete(req, r == BRK_CLOSE ? BRK_COMPLETE_CLOSE : BRK_COMPLETE_RESPOND);
}

/* ClassicGroup.completeJoinFuture: answer the member's JoinGroup (if its
 * connection is still there) and count it as no longer awaiting. */
static void complete_join(grp_member *m, const join_answer *a)
{
	if (!m->awaiting_join)
		return;
	m->awaiting_join = false;
	brk_request *req = m->join_req;
	if (!req)
		return;
	m->join_req = NULL;
	finish(m->group, req, encode_join(req, a));
}

static void complete_sync(grp_member *m, int16_t error, const char *ptype, const char *pname,
			  bool with_assignment)
{
	brk_request *req = m->sync_req;
	if (!req)
		return;
	m->sync_req = NULL;
	finish(m->group, req, encode_sync(req, error, ptype, pname,
				with_assignment ? (m->assignment ? m->assignment : (const uint8_t *)"")
						: (const uint8_t *)"",
				with_assignment ? m->assignment_len : 0));
}

/* Answer whatever the member still has attached (it is leaving the group). */
static void answer_attached(grp_member *m, int16_t error)
{
	join_answer a = { .error = error, .member_id = "", .generation_id = -1 };
	complete_join(m, &a);
	complete_sync(m, error, NULL, NULL, false);
}

/* ---- timers (forward) ---- */

static void on_session_expired(brk_loop *loop, void *arg);
static void on_rebalance_timer(brk_loop *loop, void *arg);
static void on_initial_delay(brk_loop *loop, void *arg);
static void on_sync_expired(brk_loop *loop, void *arg);
static void on_pending_expired(brk_loop *loop, void *arg);

static void reschedule_session(grp_member *m, int64_t timeout_ms)
{
	cancel_timer(m->group->coord, &m->session_timer);
	m->session_timer = add_timer(m->group->coord, timeout_ms, on_session_expired, m);
}

/* ---- pending members (MEMBER_ID_REQUIRED) ---- */

static int32_t pending_index(const grp_group *g, const char *id, int32_t len)
{
	for (int32_t i = 0; i < g->npending; i++)
		if (str_eq_view(g->pending[i]->member_id, id, len))
			return i;
	return -1;
}

static void pending_remove_at(grp_group *g, int32_t i)
{
	grp_pending *p = g->pending[i];
	cancel_timer(g->coord, &p->timer);
	free(p->member_id);
	free(p);
	memmove(&g->pending[i], &g->pending[i + 1], (size_t)(g->npending - i - 1) * sizeof(*g->pending));
	g->npending--;
}

static int pending_add(grp_group *g, char *member_id, int32_t session_timeout_ms)
{
	grp_pending **n = realloc(g->pending, (size_t)(g->npending + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	g->pending = n;
	grp_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->g = g;
	p->member_id = member_id;
	p->timer = add_timer(g->coord, session_timeout_ms, on_pending_expired, p);
	g->pending[g->npending++] = p;
	return 0;
}

/* ---- removal ---- */

/* ClassicGroup.remove: take m out of g (pending requests answered with
 * error), pick a new leader if it led, and free it. */
static void remove_member(grp_group *g, grp_member *m, int16_t error)
{
	answer_attached(m, error);
	int32_t at = -1;
	for (int32_t i = 0; i < g->nmembers; i++)
		if (g->members[i] == m)
			at = i;
	if (at < 0)
		return;
	memmove(&g->members[at], &g->members[at + 1], (size_t)(g->nmembers - at - 1) * sizeof(*g->members));
	g->nmembers--;
	unindex_member(g, m);
	if (is_leader(g, m->member_id)) {
		free(g->leader_id);
		g->leader_id = g->nmembers > 0 ? strdup(g->members[0]->member_id) : NULL;
	}
	grp_member_free(m);
}

/* ---- the rebalance ---- */

static void prepare_rebalance(grp_group *g);
static void complete_join_phase(grp_group *g);

/* The group's record through the coordinator's store (KERR_NONE without
 * one). */
static int write_group(grp_group *g)
{
	grp_coordinator *gc = g->coord;
	return gc->write_group ? gc->write_group(gc, g) : KERR_NONE;
}

static void store_group(grp_group *g)
{
	int rc = write_group(g);
	static brk_ratelog rl = BRK_RATELOG_INIT;
	if (rc != KERR_NONE)
		brk_ratelog_printf(&rl, "samsa: group %s: writing the group metadata failed (error %d)\n",
				   g->group_id, rc);
}

/* Answer every member's SyncGroup; the assignment and protocol only with
 * NONE (GroupMetadataManager.propagateAssignment). */
static void propagate_assignment(grp_group *g, int16_t error)
{
	for (int32_t i = 0; i < g->nmembers; i++) {
		grp_member *m = g->members[i];
		if (!m->sync_req)
			continue;
		if (error == KERR_NONE)
			complete_sync(m, KERR_NONE, g->protocol_type, g->protocol_name, true);
		else
			complete_sync(m, error, NULL, NULL, false);
		reschedule_session(m, m->session_timeout_ms);
	}
}

static void reset_and_propagate(grp_group *g, int16_t error)
{
	for (int32_t i = 0; i < g->nmembers; i++) {
		free(g->members[i]->assignment);
		g->members[i]->assignment = NULL;
		g->members[i]->assignment_len = 0;
	}
	propagate_assignment(g, error);
}

static void clear_pending_sync(grp_group *g)
{
	for (int32_t i = 0; i < g->nmembers; i++)
		g->members[i]->pending_sync = false;
	cancel_timer(g->coord, &g->sync_timer);
}

/* ClassicGroup.maybeElectNewJoinedLeader. */
static bool elect_joined_leader(grp_group *g)
{
	grp_member *leader = member_by_id(g, g->leader_id);
	if (!leader)
		return false;
	if (leader->awaiting_join)
		return true;
	for (int32_t i = 0; i < g->nmembers; i++) {
		if (g->members[i]->awaiting_join) {
			char *id = strdup(g->members[i]->member_id);
			if (!id)
				return false;
			free(g->leader_id);
			g->leader_id = id;
			return true;
		}
	}
	return false;
}

/* ClassicGroup.initNextGeneration. */
static void init_next_generation(grp_group *g)
{
	g->generation_id++;
	free(g->protocol_name);
	g->protocol_name = NULL;
	if (g->nmembers > 0) {
		const char *p = grp_select_protocol(g);
		g->protocol_name = p ? strdup(p) : NULL;
		transition(g, GRP_COMPLETING_REBALANCE);
	} else {
		transition(g, GRP_EMPTY);
	}
	clear_pending_sync(g);
}

/* GroupMetadataManager.completeClassicGroupJoin. */
static void complete_join_phase(grp_group *g)
{
	cancel_timer(g->coord, &g->rebalance_timer);
	/* Dynamic members that did not rejoin are removed. */
	for (int32_t i = 0; i < g->nmembers;) {
		grp_member *m = g->members[i];
		if (!m->awaiting_join && !m->group_instance_id)
			remove_member(g, m, KERR_UNKNOWN_MEMBER_ID);
		else
			i++;
	}
	if (g->state == GRP_DEAD)
		return;
	if (!elect_joined_leader(g) && g->nmembers > 0) {
		/* Nobody rejoined: wait again until session timeouts remove the
		 * silent members. */
		g->rebalance_timer = add_timer(g->coord, rebalance_timeout(g), on_rebalance_timer, g);
		return;
	}
	init_next_generation(g);
	if (g->state == GRP_EMPTY) {
		store_group(g);
		return;
	}
	for (int32_t i = 0; i < g->nmembers; i++) {
		grp_member *m = g->members[i];
		join_answer a = {
			.error = KERR_NONE,
			.member_id = m->member_id,
			.generation_id = g->generation_id,
			.protocol_type = g->protocol_type,
			.protocol_name = g->protocol_name,
			.leader = g->leader_id,
			.members_of = is_leader(g, m->member_id) ? g : NULL,
		};
		complete_join(m, &a);
		reschedule_session(m, m->session_timeout_ms);
		m->is_new = false;
		m->pending_sync = true;
	}
	g->sync_generation = g->generation_id;
	g->sync_timer = add_timer(g->coord, rebalance_timeout(g), on_sync_expired, g);
}

static void maybe_complete_join_else_schedule(grp_group *g)
{
	if (all_joined(g)) {
		complete_join_phase(g);
		return;
	}
	cancel_timer(g->coord, &g->rebalance_timer);
	g->rebalance_timer = add_timer(g->coord, rebalance_timeout(g), on_rebalance_timer, g);
}

/* GroupMetadataManager.prepareRebalance. */
static void prepare_rebalance(grp_group *g)
{
	if (g->state == GRP_COMPLETING_REBALANCE)
		reset_and_propagate(g, KERR_REBALANCE_IN_PROGRESS);
	clear_pending_sync(g);
	bool initial = g->state == GRP_EMPTY;
	if (initial) {
		/* InitialDelayedJoin: wait group.initial.rebalance.delay.ms for
		 * more members, extended while they keep coming, up to the
		 * rebalance timeout. */
		int32_t delay = g->coord->cfg->group_initial_rebalance_delay_ms;
		int32_t rt = rebalance_timeout(g);
		g->initial_delay_ms = delay;
		g->initial_remaining_ms = rt - delay > 0 ? rt - delay : 0;
		g->new_member_added = false;
		cancel_timer(g->coord, &g->rebalance_timer);
		g->rebalance_timer = add_timer(g->coord, delay, on_initial_delay, g);
	}
	transition(g, GRP_PREPARING_REBALANCE);
	if (!initial)
		maybe_complete_join_else_schedule(g);
}

/* GroupMetadataManager.maybeCompleteJoinPhase. */
static void maybe_complete_join(grp_group *g)
{
	if (g->state != GRP_PREPARING_REBALANCE || g->previous_state == GRP_EMPTY || !all_joined(g))
		return;
	complete_join_phase(g);
}

static bool can_rebalance(const grp_group *g)
{
	return g->state == GRP_EMPTY || g->state == GRP_STABLE ||
	       g->state == GRP_COMPLETING_REBALANCE;
}

static void rebalance_or_complete_join(grp_group *g)
{
	if (can_rebalance(g))
		prepare_rebalance(g);
	else
		maybe_complete_join(g);
}

/* removeMemberAndUpdateClassicGroup: a member failed (session expiry). */
static void remove_member_and_update(grp_group *g, grp_member *m)
{
	remove_member(g, m, KERR_UNKNOWN_MEMBER_ID);
	if (g->state == GRP_STABLE || g->state == GRP_COMPLETING_REBALANCE)
		rebalance_or_complete_join(g);
	else if (g->state == GRP_PREPARING_REBALANCE && all_joined(g))
		complete_join_phase(g);
}

/* ---- timers ---- */

static void on_session_expired(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_member *m = arg;
	m->session_timer = 0;
	grp_group *g = m->group;
	if (!g)
		return;
	/* hasSatisfiedHeartbeat: a member waiting in a join or sync phase is
	 * alive, unless it is new (its join may be abandoned). */
	if (!m->is_new && (m->awaiting_join || m->sync_req))
		return;
	remove_member_and_update(g, m);
}

static void on_rebalance_timer(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_group *g = arg;
	g->rebalance_timer = 0;
	complete_join_phase(g);
}

static void on_initial_delay(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_group *g = arg;
	g->rebalance_timer = 0;
	if (g->new_member_added && g->initial_remaining_ms != 0) {
		g->new_member_added = false;
		int32_t cfg_delay = g->coord->cfg->group_initial_rebalance_delay_ms;
		int32_t delay = cfg_delay < g->initial_remaining_ms ? cfg_delay : g->initial_remaining_ms;
		int32_t rem = g->initial_remaining_ms - g->initial_delay_ms;
		g->initial_delay_ms = delay;
		g->initial_remaining_ms = rem > 0 ? rem : 0;
		g->rebalance_timer = add_timer(g->coord, delay, on_initial_delay, g);
		return;
	}
	complete_join_phase(g);
}

static void on_sync_expired(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_group *g = arg;
	g->sync_timer = 0;
	if (g->sync_generation != g->generation_id)
		return;
	if (g->state != GRP_COMPLETING_REBALANCE && g->state != GRP_STABLE)
		return;
	bool removed = false;
	for (int32_t i = 0; i < g->nmembers;) {
		grp_member *m = g->members[i];
		if (m->pending_sync) {
			remove_member(g, m, KERR_UNKNOWN_MEMBER_ID);
			removed = true;
		} else {
			i++;
		}
	}
	if (removed)
		prepare_rebalance(g);
}

static void on_pending_expired(brk_loop *loop, void *arg)
{
	(void)loop;
	grp_pending *p = arg;
	p->timer = 0;
	grp_group *g = p->g;
	int32_t i = pending_index(g, p->member_id, (int32_t)strlen(p->member_id));
	if (i >= 0)
		pending_remove_at(g, i);
	if (g->state == GRP_PREPARING_REBALANCE && all_joined(g))
		complete_join_phase(g);
}

/* ---- JoinGroup ---- */

static int respond_join(brk_request *req, const join_answer *a)
{
	return encode_join(req, a) == 0 ? BRK_RESPOND : BRK_CLOSE;
}

static int respond_join_error(brk_request *req, int16_t error, const char *member_id)
{
	join_answer a = { .error = error, .member_id = member_id, .generation_id = -1 };
	return respond_join(req, &a);
}

/* ClassicGroup.updateMember: new protocols and timeouts, and the request
 * waits for the join phase. */
static int update_member(grp_member *m, brk_request *req, const JoinGroupRequest *r)
{
	if (set_protocols(m, r) < 0)
		return -ENOMEM;
	m->rebalance_timeout_ms = r->rebalance_timeout_ms;
	m->session_timeout_ms = r->session_timeout_ms;
	if (m->join_req && m->join_req != req) {
		/* A previous JoinGroup of the member is still parked (another
		 * connection): it is superseded; tell it to rejoin. */
		join_answer a = { .error = KERR_REBALANCE_IN_PROGRESS, .member_id = m->member_id,
				  .generation_id = -1 };
		brk_request *old = m->join_req;
		m->join_req = NULL;
		finish(m->group, old, encode_join(old, &a));
	}
	m->join_req = req;
	m->awaiting_join = true;
	attach(req, m);
	return 0;
}

static grp_member *new_member(brk_request *req, const JoinGroupRequest *r, const char *member_id)
{
	grp_member *m = grp_member_new();
	if (!m)
		return NULL;
	m->member_id = strdup(member_id);
	m->group_instance_id = view_null(r->group_instance_id)
				       ? NULL
				       : dup_view(r->group_instance_id.ptr, r->group_instance_id.len);
	m->client_id = dup_view(req->client_id.ptr ? req->client_id.ptr : "",
				req->client_id.len > 0 ? req->client_id.len : 0);
	m->client_host = strdup(brk_conn_client_host(req->conn));
	m->protocol_type = dup_view(r->protocol_type.ptr, r->protocol_type.len > 0 ? r->protocol_type.len : 0);
	m->session_timeout_ms = r->session_timeout_ms;
	m->rebalance_timeout_ms = r->rebalance_timeout_ms;
	if (!m->member_id || (!view_null(r->group_instance_id) && !m->group_instance_id) ||
	    !m->client_id || !m->client_host || !m->protocol_type || set_protocols(m, r) < 0) {
		grp_member_free(m);
		return NULL;
	}
	return m;
}

/* addMemberThenRebalanceOrCompleteJoin. */
static int add_member_and_rebalance(brk_request *req, const JoinGroupRequest *r, grp_group *g,
				    const char *member_id)
{
	grp_member *m = new_member(req, r, member_id);
	if (!m || grp_member_add(g, m) < 0) {
		grp_member_free(m);
		return respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, member_id);
	}
	m->is_new = true;
	if (g->state == GRP_PREPARING_REBALANCE && g->previous_state == GRP_EMPTY)
		g->new_member_added = true;
	m->join_req = req;
	m->awaiting_join = true;
	attach(req, m);
	/* New members cannot heartbeat yet: their join times out instead. */
	reschedule_session(m, NEW_MEMBER_JOIN_TIMEOUT_MS);
	rebalance_or_complete_join(g);
	return BRK_DELAYED;
}

/* updateStaticMemberThenRebalanceOrCompleteJoin: a known group instance id
 * joins with an unknown member id; the old member id is fenced. */
static int update_static_member(brk_request *req, const JoinGroupRequest *r, grp_group *g,
				grp_member *m, char *new_id)
{
	char *current_leader = g->leader_id ? strdup(g->leader_id) : NULL;
	/* Fence whatever the old member id still waits for. */
	join_answer fenced = { .error = KERR_FENCED_INSTANCE_ID, .member_id = m->member_id,
			       .generation_id = -1 };
	complete_join(m, &fenced);
	complete_sync(m, KERR_FENCED_INSTANCE_ID, NULL, NULL, false);
	bool was_leader = is_leader(g, m->member_id);
	unindex_member(g, m);
	free(m->member_id);
	m->member_id = new_id;
	if (index_member(g, m) < 0)
		/* Only out of memory: the member is not found by id and rejoins. */
		fprintf(stderr, "samsa: group %s: out of memory indexing member %s\n", g->group_id,
			new_id);
	if (was_leader) {
		char *l = strdup(new_id);
		if (l) {
			free(g->leader_id);
			g->leader_id = l;
		}
	}
	reschedule_session(m, m->session_timeout_ms);
	if (update_member(m, req, r) < 0) {
		free(current_leader);
		m->join_req = NULL;
		m->awaiting_join = false;
		req->cancel = NULL;
		req->delayed = NULL;
		return respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, new_id);
	}
	if (g->state == GRP_STABLE) {
		const char *next = grp_select_protocol(g);
		if (next && g->protocol_name && strcmp(next, g->protocol_name) == 0) {
			/* Same protocol: keep the assignment, no rebalance. */
			store_group(g);
			bool leader = is_leader(g, new_id);
			join_answer a = {
				.error = KERR_NONE,
				.member_id = new_id,
				.generation_id = g->generation_id,
				.protocol_type = g->protocol_type,
				.protocol_name = g->protocol_name,
			};
			if (req->api_version >= 9) {
				a.leader = g->leader_id;
				a.skip_assignment = leader;
				a.members_of = leader ? g : NULL;
			} else {
				/* The old leader id: the member must not think it
				 * leads and compute a new assignment. */
				a.leader = current_leader;
			}
			complete_join(m, &a);
		} else {
			rebalance_or_complete_join(g);
		}
	} else if (g->state == GRP_COMPLETING_REBALANCE) {
		prepare_rebalance(g);
	} else {
		maybe_complete_join(g);
	}
	free(current_leader);
	return BRK_DELAYED;
}

static int join_new_member(brk_request *req, const JoinGroupRequest *r, grp_group *g)
{
	if (!supports_protocols(g, r))
		return respond_join_error(req, KERR_INCONSISTENT_GROUP_PROTOCOL, "");
	bool is_static = !view_null(r->group_instance_id);
	char *id = is_static ? generate_member_id(r->group_instance_id.ptr, r->group_instance_id.len)
			     : generate_member_id(req->client_id.ptr, req->client_id.len);
	if (!id)
		return respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, "");
	if (is_static) {
		grp_member *old = static_member(g, r->group_instance_id.ptr, r->group_instance_id.len);
		if (old)
			return update_static_member(req, r, g, old, id);
		int rc = add_member_and_rebalance(req, r, g, id);
		free(id);
		return rc;
	}
	if (req->api_version >= 4) {
		/* KIP-394: the member must come back with this id. */
		join_answer a = { .error = KERR_MEMBER_ID_REQUIRED, .member_id = id, .generation_id = -1 };
		int rc = respond_join(req, &a);
		if (pending_add(g, id, r->session_timeout_ms) < 0)
			free(id);
		return rc;
	}
	int rc = add_member_and_rebalance(req, r, g, id);
	free(id);
	return rc;
}

/* ClassicGroup.validateMember; NONE or the error. */
static int16_t validate_member(grp_group *g, proto_str member_id, proto_str instance_id)
{
	if (!view_null(instance_id)) {
		grp_member *s = static_member(g, instance_id.ptr, instance_id.len);
		if (!s)
			return KERR_UNKNOWN_MEMBER_ID;
		if (!str_eq_view(s->member_id, member_id.ptr, member_id.len))
			return KERR_FENCED_INSTANCE_ID;
	}
	if (!grp_member_find(g, member_id.ptr, member_id.len))
		return KERR_UNKNOWN_MEMBER_ID;
	return KERR_NONE;
}

static int join_existing_member(brk_request *req, const JoinGroupRequest *r, grp_group *g)
{
	const char *member_id_c = NULL;
	char *member_id = dup_view(r->member_id.ptr, r->member_id.len);
	if (!member_id)
		return respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, "");
	member_id_c = member_id;
	int rc;
	if (g->state == GRP_DEAD) {
		rc = respond_join_error(req, KERR_COORDINATOR_NOT_AVAILABLE, member_id_c);
	} else if (!supports_protocols(g, r)) {
		rc = respond_join_error(req, KERR_INCONSISTENT_GROUP_PROTOCOL, member_id_c);
	} else if (pending_index(g, r->member_id.ptr, r->member_id.len) >= 0) {
		/* A pending member (MEMBER_ID_REQUIRED) comes back: it joins. */
		pending_remove_at(g, pending_index(g, r->member_id.ptr, r->member_id.len));
		rc = add_member_and_rebalance(req, r, g, member_id_c);
	} else {
		int16_t err = validate_member(g, r->member_id, r->group_instance_id);
		grp_member *m = grp_member_find(g, r->member_id.ptr, r->member_id.len);
		if (err != KERR_NONE || !m) {
			rc = respond_join_error(req, err != KERR_NONE ? err : KERR_UNKNOWN_MEMBER_ID,
						member_id_c);
		} else if (g->state == GRP_PREPARING_REBALANCE ||
			   (g->state == GRP_COMPLETING_REBALANCE && !member_matches(m, r)) ||
			   (g->state == GRP_STABLE && (is_leader(g, m->member_id) || !member_matches(m, r)))) {
			/* Rejoin during a rebalance, changed metadata, or the
			 * leader asking for a new assignment. */
			if (update_member(m, req, r) < 0) {
				rc = respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, member_id_c);
			} else {
				rebalance_or_complete_join(g);
				rc = BRK_DELAYED;
			}
		} else if (g->state == GRP_COMPLETING_REBALANCE || g->state == GRP_STABLE) {
			/* Same metadata: the current generation again (a lost
			 * JoinGroup response); the member list for the leader
			 * while the leader still has to sync. */
			join_answer a = {
				.error = KERR_NONE,
				.member_id = m->member_id,
				.generation_id = g->generation_id,
				.protocol_type = g->protocol_type,
				.protocol_name = g->protocol_name,
				.leader = g->leader_id,
				.members_of = g->state == GRP_COMPLETING_REBALANCE &&
							      is_leader(g, m->member_id)
						      ? g
						      : NULL,
			};
			rc = respond_join(req, &a);
		} else {
			/* Empty: let the member reset and rejoin. */
			rc = respond_join_error(req, KERR_UNKNOWN_MEMBER_ID, member_id_c);
		}
	}
	free(member_id);
	return rc;
}

/* GroupMetadataManager.acceptJoiningMember (group.max.size). */
static bool accept_joining(grp_group *g, proto_str member_id)
{
	grp_member *m = grp_member_find(g, member_id.ptr, member_id.len);
	int32_t max = g->coord->cfg->group_max_size;
	switch (g->state) {
	case GRP_EMPTY:
	case GRP_DEAD:
		return true;
	case GRP_PREPARING_REBALANCE:
		return (m && m->awaiting_join) || num_awaiting_join(g) < max;
	case GRP_COMPLETING_REBALANCE:
	case GRP_STABLE:
		return m || g->nmembers < max;
	}
	return true;
}

static int join(grp_coordinator *gc, brk_request *req, const JoinGroupRequest *r, grp_group **gp)
{
	bool unknown = r->member_id.len <= 0;
	int16_t err = grp_coordinator_error(gc, r->group_id.ptr, r->group_id.len);
	if (err)
		return respond_join_error(req, err, "");
	grp_group *g = *gp = grp_find(gc, r->group_id.ptr, r->group_id.len);
	if (!g) {
		/* Created only for a member without an id. */
		if (!unknown)
			return respond_join_error(req, KERR_UNKNOWN_MEMBER_ID, "");
		g = *gp = grp_get_or_create(gc, r->group_id.ptr, r->group_id.len);
		if (!g)
			return respond_join_error(req, KERR_UNKNOWN_SERVER_ERROR, "");
		/* A new group is recorded at once (Kafka's empty group
		 * metadata record). */
		store_group(g);
	}
	if (!accept_joining(g, r->member_id)) {
		grp_member *m = grp_member_find(g, r->member_id.ptr, r->member_id.len);
		int32_t pi = pending_index(g, r->member_id.ptr, r->member_id.len);
		if (m)
			remove_member(g, m, KERR_GROUP_MAX_SIZE_REACHED);
		else if (pi >= 0)
			pending_remove_at(g, pi);
		return respond_join_error(req, KERR_GROUP_MAX_SIZE_REACHED, "");
	}
	if (unknown)
		return join_new_member(req, r, g);
	return join_existing_member(req, r, g);
}

int grp_join(grp_coordinator *gc, brk_request *req, const JoinGroupRequest *r)
{
	grp_group *g = NULL;
	int rc = join(gc, req, r, &g);
	return answer(g, req, rc);
}

/* ---- SyncGroup ---- */

static int respond_sync(brk_request *req, int16_t error)
{
	return encode_sync(req, error, NULL, NULL, (const uint8_t *)"", 0) == 0 ? BRK_RESPOND
										 : BRK_CLOSE;
}

/* isProtocolInconsistent: both given and different. */
static bool inconsistent(proto_str req_value, const char *group_value)
{
	return !view_null(req_value) && group_value &&
	       !str_eq_view(group_value, req_value.ptr, req_value.len);
}

static void sync_received(grp_group *g, grp_member *m)
{
	m->pending_sync = false;
	for (int32_t i = 0; i < g->nmembers; i++)
		if (g->members[i]->pending_sync)
			return;
	cancel_timer(g->coord, &g->sync_timer);
}

static int sync_group(grp_coordinator *gc, brk_request *req, const SyncGroupRequest *r,
		      grp_group **gp)
{
	int16_t cerr = grp_coordinator_error(gc, r->group_id.ptr, r->group_id.len);
	if (cerr)
		return respond_sync(req, cerr);
	grp_group *g = *gp = grp_find(gc, r->group_id.ptr, r->group_id.len);
	if (!g || g->state == GRP_EMPTY)
		return respond_sync(req, KERR_UNKNOWN_MEMBER_ID);
	if (g->state == GRP_DEAD)
		return respond_sync(req, KERR_COORDINATOR_NOT_AVAILABLE);
	int16_t err = validate_member(g, r->member_id, r->group_instance_id);
	if (err != KERR_NONE)
		return respond_sync(req, err);
	if (r->generation_id != g->generation_id)
		return respond_sync(req, KERR_ILLEGAL_GENERATION);
	if (inconsistent(r->protocol_type, g->protocol_type) ||
	    inconsistent(r->protocol_name, g->protocol_name))
		return respond_sync(req, KERR_INCONSISTENT_GROUP_PROTOCOL);
	if (g->state == GRP_PREPARING_REBALANCE)
		return respond_sync(req, KERR_REBALANCE_IN_PROGRESS);
	grp_member *m = grp_member_find(g, r->member_id.ptr, r->member_id.len);
	if (g->state == GRP_STABLE) {
		sync_received(g, m);
		const uint8_t *as = m->assignment ? m->assignment : (const uint8_t *)"";
		return encode_sync(req, KERR_NONE, g->protocol_type, g->protocol_name, as,
				   m->assignment_len) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	/* CompletingRebalance: wait for the leader's assignment. */
	if (m->sync_req && m->sync_req != req) {
		brk_request *old = m->sync_req;
		m->sync_req = NULL;
		finish(g, old, encode_sync(old, KERR_REBALANCE_IN_PROGRESS, NULL, NULL,
					(const uint8_t *)"", 0));
	}
	m->sync_req = req;
	attach(req, m);
	sync_received(g, m);
	if (!is_leader(g, m->member_id))
		return BRK_DELAYED;

	/* The leader: every member gets its assignment (an empty one when the
	 * leader gave none), the group is stored, then answered. */
	for (int32_t i = 0; i < g->nmembers; i++) {
		grp_member *x = g->members[i];
		const SyncGroupRequest_SyncGroupRequestAssignment *found = NULL;
		for (int32_t k = 0; k < r->assignments_count; k++)
			if (str_eq_view(x->member_id, r->assignments[k].member_id.ptr,
					r->assignments[k].member_id.len))
				found = &r->assignments[k]; /* the last one wins */
		int32_t len = found && found->assignment.len > 0 ? found->assignment.len : 0;
		uint8_t *copy = malloc((size_t)(len ? len : 1));
		if (!copy) {
			reset_and_propagate(g, KERR_UNKNOWN_SERVER_ERROR);
			rebalance_or_complete_join(g);
			return BRK_DELAYED;
		}
		if (len)
			memcpy(copy, found->assignment.ptr, (size_t)len);
		free(x->assignment);
		x->assignment = copy;
		x->assignment_len = len;
	}
	int rc = write_group(g);
	if (rc != KERR_NONE) {
		static brk_ratelog rl = BRK_RATELOG_INIT;
		brk_ratelog_printf(&rl, "samsa: group %s: storing the assignment failed (error %d)\n",
				   g->group_id, rc);
		reset_and_propagate(g, (int16_t)rc);
		rebalance_or_complete_join(g);
		return BRK_DELAYED;
	}
	propagate_assignment(g, KERR_NONE);
	transition(g, GRP_STABLE);
	return BRK_DELAYED;
}

int grp_sync(grp_coordinator *gc, brk_request *req, const SyncGroupRequest *r)
{
	grp_group *g = NULL;
	int rc = sync_group(gc, req, r, &g);
	return answer(g, req, rc);
}

/* ---- Heartbeat ---- */

int16_t grp_heartbeat(grp_coordinator *gc, proto_str group_id, proto_str member_id,
		      int32_t generation_id, proto_str group_instance_id)
{
	int16_t cerr = grp_coordinator_error(gc, group_id.ptr, group_id.len);
	if (cerr)
		return cerr;
	grp_group *g = grp_find(gc, group_id.ptr, group_id.len);
	if (!g)
		return KERR_UNKNOWN_MEMBER_ID;
	if (g->state == GRP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	int16_t err = validate_member(g, member_id, group_instance_id);
	if (err != KERR_NONE)
		return err;
	if (generation_id != g->generation_id)
		return KERR_ILLEGAL_GENERATION;
	grp_member *m = grp_member_find(g, member_id.ptr, member_id.len);
	switch (g->state) {
	case GRP_EMPTY:
		return KERR_UNKNOWN_MEMBER_ID;
	case GRP_PREPARING_REBALANCE:
		reschedule_session(m, m->session_timeout_ms);
		return KERR_REBALANCE_IN_PROGRESS;
	default:
		reschedule_session(m, m->session_timeout_ms);
		return KERR_NONE;
	}
}

/* ---- LeaveGroup ---- */

int16_t grp_leave_member(grp_group *g, proto_str member_id, proto_str instance_id)
{
	if (member_id.len <= 0) {
		/* Administrative removal of a static member by instance id. */
		grp_member *s = view_null(instance_id)
					? NULL
					: static_member(g, instance_id.ptr, instance_id.len);
		if (!s)
			return KERR_UNKNOWN_MEMBER_ID;
		remove_member(g, s, KERR_UNKNOWN_MEMBER_ID);
		return KERR_NONE;
	}
	int32_t pi = pending_index(g, member_id.ptr, member_id.len);
	if (pi >= 0) {
		pending_remove_at(g, pi);
		return KERR_NONE;
	}
	int16_t err = validate_member(g, member_id, instance_id);
	if (err != KERR_NONE)
		return err;
	remove_member(g, grp_member_find(g, member_id.ptr, member_id.len), KERR_UNKNOWN_MEMBER_ID);
	return KERR_NONE;
}

void grp_leave_done(grp_group *g)
{
	if (g->state == GRP_STABLE || g->state == GRP_COMPLETING_REBALANCE)
		rebalance_or_complete_join(g);
	else if (g->state == GRP_PREPARING_REBALANCE)
		maybe_complete_join(g);
}

/* ---- offsets ---- */

int grp_validate_commit(grp_group *g, proto_str member_id, int32_t generation_id,
			proto_str group_instance_id)
{
	if (g->state == GRP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (generation_id < 0 && g->state == GRP_EMPTY)
		return KERR_NONE; /* a simple (non-group-managed) commit */
	if (generation_id >= 0 || member_id.len > 0 || !view_null(group_instance_id)) {
		int16_t err = validate_member(g, member_id, group_instance_id);
		if (err != KERR_NONE)
			return err;
		if (generation_id != g->generation_id)
			return KERR_ILLEGAL_GENERATION;
	} else if (g->state != GRP_EMPTY) {
		return KERR_UNKNOWN_MEMBER_ID;
	}
	if (g->state == GRP_COMPLETING_REBALANCE)
		return KERR_REBALANCE_IN_PROGRESS;
	/* A member's commit in a Stable group also counts as a heartbeat, as
	 * Kafka's coordinator reschedules the member's session on commit. */
	grp_member *m = g->state == GRP_STABLE && member_id.len > 0
				? grp_member_find(g, member_id.ptr, member_id.len)
				: NULL;
	if (m)
		reschedule_session(m, m->session_timeout_ms);
	return KERR_NONE;
}

int grp_validate_txn_commit(grp_group *g, proto_str member_id, int32_t generation_id,
			    proto_str group_instance_id)
{
	if (g->state == GRP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (generation_id < 0 && g->state == GRP_EMPTY)
		return KERR_NONE;
	/* Without member id, generation and instance id (TxnOffsetCommit
	 * v0-2, or a producer that does not pass the consumer's group
	 * metadata) the commit is accepted whatever the group's state. */
	if (generation_id >= 0 || member_id.len > 0 || !view_null(group_instance_id)) {
		int16_t err = validate_member(g, member_id, group_instance_id);
		if (err != KERR_NONE)
			return err;
		if (generation_id != g->generation_id)
			return KERR_ILLEGAL_GENERATION;
	}
	return KERR_NONE;
}

/* ---- load, removal, shutdown ---- */

void grp_restored(grp_group *g)
{
	g->previous_state = g->state;
	for (int32_t i = 0; i < g->nmembers; i++) {
		grp_member *m = g->members[i];
		m->group = g;
		m->awaiting_join = false;
		m->pending_sync = false;
		reschedule_session(m, m->session_timeout_ms);
	}
}

/* Free g; its members' waiting requests are answered error. */
static void group_free(grp_group *g, int16_t error)
{
	cancel_timer(g->coord, &g->rebalance_timer);
	cancel_timer(g->coord, &g->sync_timer);
	while (g->npending > 0)
		pending_remove_at(g, g->npending - 1);
	free(g->pending);
	for (int32_t i = 0; i < g->nmembers; i++) {
		answer_attached(g->members[i], error);
		grp_member_free(g->members[i]);
	}
	free(g->members);
	if (g->index) {
		brk_strmap_free(&g->index->by_id);
		brk_strmap_free(&g->index->by_instance);
		free(g->index);
	}
	if (g->offsets)
		grp_offsets_free(g->offsets);
	grp_txn_set_free(g->txns);
	free(g->group_id);
	free(g->protocol_type);
	free(g->protocol_name);
	free(g->leader_id);
	free(g);
}

/* Take g out of the registry, Dead, and free it. */
static void remove_group(grp_group *g, int16_t error)
{
	grp_coordinator *gc = g->coord;
	brk_strmap_remove(&gc->groups, g->group_id, g->group_id_len);
	if (g->txn_tracked)
		brk_strmap_remove(&gc->open_txns, g->group_id, g->group_id_len);
	g->state = GRP_DEAD;
	group_free(g, error);
}

void grp_remove(grp_group *g)
{
	remove_group(g, KERR_COORDINATOR_NOT_AVAILABLE);
}

int32_t grp_partition_unload(grp_coordinator *gc, int32_t index)
{
	grp_partition *ps = grp_partition_state(gc, index);
	if (ps) {
		if (ps->loading)
			gc->nloading--;
		*ps = (grp_partition){ 0 }; /* first: the answers below do not wait */
	}
	/* Kafka's onGroupUnloaded: waiting members are told NOT_COORDINATOR
	 * and look for the new coordinator. */
	int32_t n = 0;
	for (int32_t i = grp_count(gc) - 1; i >= 0; i--) {
		grp_group *g = grp_at(gc, i);
		if (!g)
			continue; /* removals below may have shrunk the registry */
		if (g->partition != index)
			continue;
		remove_group(g, KERR_NOT_COORDINATOR);
		n++;
	}
	return n;
}

void grp_coordinator_free(grp_coordinator *gc)
{
	if (gc->store_close)
		gc->store_close(gc); /* the loads in progress first */
	gc->store_close = NULL;
	while (grp_count(gc) > 0)
		grp_remove(grp_at(gc, grp_count(gc) - 1));
	brk_strmap_free(&gc->groups);
	brk_strmap_free(&gc->open_txns);
	gc->open_txns_lost = false;
	cancel_timer(gc, &gc->expiry_timer);
	free(gc->parts);
	gc->parts = NULL;
	gc->npartitions = gc->nloading = 0;
	proto_writer_free(&gc->batch_buf);
	proto_writer_free(&gc->kv_buf);
}
