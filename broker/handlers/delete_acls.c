/*
 * delete_acls.c - DeleteAcls (API key 31), versions 1-3, as Kafka's
 * KafkaApis.handleDeleteAcls and AclAuthorizer.deleteAcls answer it:
 *  - no authorizer: every filter SECURITY_DISABLED;
 *  - ALTER on the cluster refused: every filter CLUSTER_AUTHORIZATION_FAILED;
 *  - a filter with UNKNOWN elements: INVALID_REQUEST;
 *  - else the ACLs each filter matches (acl/filter.h) are removed, one
 *    UPDATE_ACLS per resource pattern, and listed with the result of their
 *    pattern's removal (at most MAX_SLOTS patterns per request: a filter
 *    beyond them answers UNKNOWN_SERVER_ERROR and deletes nothing).
 */
#include <string.h>

#include "broker/acl/check.h"
#include "broker/acl/filter.h"
#include "broker/ctl_wait.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

/* The most resource patterns one request removes from. */
#define MAX_SLOTS 4096

typedef struct delete_state {
	DeleteAclsResponse resp;
	int32_t *slot_of;  /* per filter result, per matching ACL: its slot */
} delete_state;

typedef struct match_ctx {
	brk_request *req;
	const brk_acl_filter *f;
	DeleteAclsResponse_DeleteAclsFilterResult *fr;
	int32_t cap;       /* matching ACLs room */
	brk_ctl_wait *w;
	int32_t *nslots;
	int32_t *slots;    /* per matching ACL */
	bool count_only;
	int32_t count;
	int32_t npatterns;
} match_ctx;

static int match_pattern(const ctl_acl_resource *r, void *arg)
{
	match_ctx *c = arg;
	if (!brk_acl_filter_matches_pattern(c->f, r))
		return 0;
	int32_t n = 0;
	for (int32_t i = 0; i < r->n; i++)
		n += brk_acl_filter_matches_entry(c->f, &r->entries[i]);
	if (n == 0)
		return 0;
	if (c->count_only) {
		c->count += n;
		c->npatterns++;
		return 0;
	}
	ctl_acl_entry *rm = proto_arena_alloc(c->req->arena, (size_t)n * sizeof(*rm));
	char *name = proto_arena_alloc(c->req->arena, strlen(r->name) + 1);
	if (!rm || !name)
		return -1;
	strcpy(name, r->name);
	int32_t slot = (*c->nslots)++;
	int32_t k = 0;
	for (int32_t i = 0; i < r->n; i++) {
		const ctl_acl_entry *e = &r->entries[i];
		if (!brk_acl_filter_matches_entry(c->f, e))
			continue;
		rm[k++] = *e;
		DeleteAclsResponse_DeleteAclsMatchingAcl *ma = &c->fr->matching_acls[c->fr->matching_acls_count];
		DeleteAclsResponse_DeleteAclsMatchingAcl_init(ma);
		char *p = proto_arena_alloc(c->req->arena, strlen(e->principal) + strlen(e->host) + 2);
		if (!p)
			return -1;
		strcpy(p, e->principal);
		strcpy(p + strlen(e->principal) + 1, e->host);
		ma->error_code = KERR_NONE;
		ma->error_message = proto_str_of(NULL, -1);
		ma->resource_type = r->type;
		ma->resource_name = proto_cstr(name);
		ma->pattern_type = r->pattern;
		ma->principal = proto_cstr(p);
		ma->host = proto_cstr(p + strlen(e->principal) + 1);
		ma->operation = e->operation;
		ma->permission_type = e->permission;
		c->slots[c->fr->matching_acls_count++] = slot;
	}
	ctl_op op;
	memset(&op, 0, sizeof(op));
	op.type = CTL_OP_UPDATE_ACLS;
	op.acl_type = r->type;
	op.acl_pattern = r->pattern;
	op.acl_name = name;
	op.acl_remove = rm;
	op.nacl_remove = k;
	brk_ctl_wait_submit(c->w, slot, &op); /* a failure reads UNKNOWN_SERVER_ERROR */
	return 0;
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	delete_state *st = arg;
	int32_t k = 0;
	for (int32_t i = 0; i < st->resp.filter_results_count; i++) {
		DeleteAclsResponse_DeleteAclsFilterResult *fr = &st->resp.filter_results[i];
		for (int32_t j = 0; j < fr->matching_acls_count; j++, k++) {
			const ctl_result *r = brk_ctl_wait_result(w, st->slot_of[k]);
			DeleteAclsResponse_DeleteAclsMatchingAcl *ma = &fr->matching_acls[j];
			ma->error_code = r ? r->error : KERR_UNKNOWN_SERVER_ERROR;
			if (ma->error_code && r && r->msg[0]) {
				char *msg = proto_arena_alloc(req->arena, strlen(r->msg) + 1);
				if (msg) {
					strcpy(msg, r->msg);
					ma->error_message = proto_cstr(msg);
				}
			}
		}
	}
	if (DeleteAclsResponse_encode(req->out, req->api_version, &st->resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}

int brk_handle_delete_acls(brk_request *req)
{
	DeleteAclsRequest m;
	DeleteAclsRequest_init(&m);
	if (DeleteAclsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int32_t n = m.filters_count;
	delete_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	if (!st)
		return BRK_CLOSE;
	DeleteAclsResponse_init(&st->resp);
	st->resp.throttle_time_ms = 0;
	st->resp.filter_results_count = n;
	st->resp.filter_results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) *
							       sizeof(*st->resp.filter_results));
	if (!st->resp.filter_results)
		return BRK_CLOSE;
	int16_t all = KERR_NONE;
	const char *all_msg = NULL;
	if (!brk_acl_enabled()) {
		all = KERR_SECURITY_DISABLED;
		all_msg = "No Authorizer is configured.";
	} else if (!brk_acl_permits_cluster(req, CTL_ACL_OP_ALTER)) {
		all = KERR_CLUSTER_AUTHORIZATION_FAILED;
		all_msg = "Cluster authorization failed.";
	}
	/* First pass: validate and count, so the slots and arrays are sized. */
	brk_acl_filter *fs = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*fs));
	if (!fs)
		return BRK_CLOSE;
	int32_t total = 0, npatterns = 0;
	for (int32_t i = 0; i < n; i++) {
		const DeleteAclsRequest_DeleteAclsFilter *q = &m.filters[i];
		DeleteAclsResponse_DeleteAclsFilterResult *fr = &st->resp.filter_results[i];
		DeleteAclsResponse_DeleteAclsFilterResult_init(fr);
		fr->error_code = all;
		fr->error_message = proto_cstr(all_msg);
		fr->matching_acls_count = 0;
		brk_acl_filter f = {
			.type = q->resource_type_filter, .pattern = q->pattern_type_filter,
			.name = q->resource_name_filter.len >= 0 ? q->resource_name_filter.ptr : NULL,
			.nlen = q->resource_name_filter.len,
			.principal = q->principal_filter.len >= 0 ? q->principal_filter.ptr : NULL,
			.plen = q->principal_filter.len,
			.host = q->host_filter.len >= 0 ? q->host_filter.ptr : NULL,
			.hlen = q->host_filter.len,
			.operation = q->operation, .permission = q->permission_type,
		};
		fs[i] = f;
		const char *bad;
		if (all)
			continue;
		if ((bad = brk_acl_filter_check(&f))) {
			fr->error_code = KERR_INVALID_REQUEST;
			fr->error_message = proto_cstr(bad);
			continue;
		}
		match_ctx c = { .req = req, .f = &fs[i], .count_only = true };
		brk_authorizer_each(&server.acl, match_pattern, &c);
		total += c.count;
		npatterns += c.npatterns;
	}
	if (npatterns > MAX_SLOTS)
		npatterns = MAX_SLOTS;
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, npatterns ? npatterns : 1);
	st->slot_of = proto_arena_alloc(req->arena, (size_t)(total ? total : 1) * sizeof(int32_t));
	if (!w || !st->slot_of)
		return BRK_CLOSE;
	int32_t nslots = 0, k = 0;
	for (int32_t i = 0; i < n; i++) {
		DeleteAclsResponse_DeleteAclsFilterResult *fr = &st->resp.filter_results[i];
		if (fr->error_code)
			continue;
		match_ctx c = { .req = req, .f = &fs[i], .count_only = true };
		brk_authorizer_each(&server.acl, match_pattern, &c);
		if (c.count == 0)
			continue;
		if (nslots + c.npatterns > npatterns) {
			fr->error_code = KERR_UNKNOWN_SERVER_ERROR;
			fr->error_message = proto_cstr("Too many resource patterns in one DeleteAcls "
						       "request (at most 4096); nothing deleted");
			continue;
		}
		fr->matching_acls = proto_arena_alloc(req->arena, (size_t)c.count *
								  sizeof(*fr->matching_acls));
		if (!fr->matching_acls)
			return BRK_CLOSE;
		c.count_only = false;
		c.fr = fr;
		c.w = w;
		c.nslots = &nslots;
		c.slots = st->slot_of + k;
		if (brk_authorizer_each(&server.acl, match_pattern, &c) != 0)
			return BRK_CLOSE;
		k += fr->matching_acls_count;
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
