/*
 * create_acls.c - CreateAcls (API key 30), versions 1-3, as Kafka's
 * KafkaApis.handleCreateAcls and AclAuthorizer.createAcls answer it:
 *  - no authorizer: every result SECURITY_DISABLED;
 *  - ALTER on the cluster refused: every result CLUSTER_AUTHORIZATION_FAILED;
 *  - a creation that is not a valid binding (acl/filter.h): its result is
 *    INVALID_REQUEST with the reason;
 *  - the others are handed to the controller, one UPDATE_ACLS each (the
 *    controller adds them to what the pattern has; an ACL that exists
 *    already is a success), and answered with its result.
 */
#include <string.h>

#include "broker/acl/check.h"
#include "broker/acl/filter.h"
#include "broker/ctl_wait.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	CreateAclsResponse *resp = arg;
	for (int32_t i = 0; i < resp->results_count; i++) {
		const ctl_result *r = brk_ctl_wait_result(w, i);
		if (!r)
			continue;
		resp->results[i].error_code = r->error;
		if (r->error && r->msg[0]) {
			char *msg = proto_arena_alloc(req->arena, strlen(r->msg) + 1);
			if (msg) {
				strcpy(msg, r->msg);
				resp->results[i].error_message = proto_cstr(msg);
			}
		}
	}
	if (CreateAclsResponse_encode(req->out, req->api_version, resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}

int brk_handle_create_acls(brk_request *req)
{
	CreateAclsRequest m;
	CreateAclsRequest_init(&m);
	if (CreateAclsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	int32_t n = m.creations_count;
	CreateAclsResponse *resp = proto_arena_alloc(req->arena, sizeof(*resp));
	if (!resp)
		return BRK_CLOSE;
	CreateAclsResponse_init(resp);
	resp->throttle_time_ms = 0;
	resp->results_count = n;
	resp->results = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) * sizeof(*resp->results));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, n ? n : 1);
	if (!resp->results || !w)
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
	for (int32_t i = 0; i < n; i++) {
		const CreateAclsRequest_AclCreation *c = &m.creations[i];
		CreateAclsResponse_AclCreationResult *r = &resp->results[i];
		CreateAclsResponse_AclCreationResult_init(r);
		r->error_code = all;
		r->error_message = proto_cstr(all_msg);
		if (all)
			continue;
		const char *bad = brk_acl_binding_check(c->resource_type, c->resource_pattern_type,
							c->resource_name.ptr, c->resource_name.len,
							c->principal.ptr, c->principal.len,
							c->host.ptr, c->host.len, c->operation,
							c->permission_type);
		char *name = bad ? NULL : proto_arena_alloc(req->arena,
							    (size_t)c->resource_name.len + 1);
		if (bad) {
			r->error_code = KERR_INVALID_REQUEST;
			r->error_message = proto_cstr(bad);
			continue;
		}
		if (!name)
			return BRK_CLOSE;
		memcpy(name, c->resource_name.ptr, (size_t)c->resource_name.len);
		name[c->resource_name.len] = '\0';
		ctl_acl_entry e;
		memset(&e, 0, sizeof(e));
		memcpy(e.principal, c->principal.ptr, (size_t)c->principal.len);
		memcpy(e.host, c->host.ptr, (size_t)c->host.len);
		e.operation = c->operation;
		e.permission = c->permission_type;
		ctl_op op;
		memset(&op, 0, sizeof(op));
		op.type = CTL_OP_UPDATE_ACLS;
		op.acl_type = c->resource_type;
		op.acl_pattern = c->resource_pattern_type;
		op.acl_name = name;
		op.acl_add = &e;
		op.nacl_add = 1;
		if (brk_ctl_wait_submit(w, i, &op) != 0)
			r->error_code = KERR_UNKNOWN_SERVER_ERROR;
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, resp);
}
