/*
 * describe_acls.c - DescribeAcls (API key 29), versions 1-3, as Kafka's
 * KafkaApis.handleDescribeAcls / AclApis answer it:
 *  - no authorizer: SECURITY_DISABLED "No Authorizer is configured.";
 *  - DESCRIBE on the cluster refused: CLUSTER_AUTHORIZATION_FAILED;
 *  - a filter with UNKNOWN elements: INVALID_REQUEST;
 *  - else every resource pattern with ACLs the filter matches, with those
 *    of its ACLs it matches (acl/filter.h).
 */
#include <string.h>

#include "broker/acl/check.h"
#include "broker/acl/filter.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef struct describe_ctx {
	brk_request *req;
	const brk_acl_filter *f;
	DescribeAclsResponse *resp;
	int32_t cap;
} describe_ctx;

static int count_pattern(const ctl_acl_resource *r, void *arg)
{
	(*(int32_t *)arg)++;
	(void)r;
	return 0;
}

static int add_pattern(const ctl_acl_resource *r, void *arg)
{
	describe_ctx *c = arg;
	if (!brk_acl_filter_matches_pattern(c->f, r))
		return 0;
	int32_t n = 0;
	for (int32_t i = 0; i < r->n; i++)
		n += brk_acl_filter_matches_entry(c->f, &r->entries[i]);
	if (n == 0 || c->resp->resources_count >= c->cap)
		return 0;
	DescribeAclsResponse_DescribeAclsResource *res = &c->resp->resources[c->resp->resources_count];
	DescribeAclsResponse_DescribeAclsResource_init(res);
	res->resource_type = r->type;
	res->resource_name = proto_cstr(r->name);
	res->pattern_type = r->pattern;
	res->acls = proto_arena_alloc(c->req->arena, (size_t)n * sizeof(*res->acls));
	if (!res->acls)
		return -1;
	for (int32_t i = 0; i < r->n; i++) {
		const ctl_acl_entry *e = &r->entries[i];
		if (!brk_acl_filter_matches_entry(c->f, e))
			continue;
		DescribeAclsResponse_AclDescription *d = &res->acls[res->acls_count++];
		DescribeAclsResponse_AclDescription_init(d);
		d->principal = proto_cstr(e->principal);
		d->host = proto_cstr(e->host);
		d->operation = e->operation;
		d->permission_type = e->permission;
	}
	c->resp->resources_count++;
	return 0;
}

int brk_handle_describe_acls(brk_request *req)
{
	DescribeAclsRequest m;
	DescribeAclsRequest_init(&m);
	if (DescribeAclsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	DescribeAclsResponse resp;
	DescribeAclsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	resp.error_message = proto_str_of(NULL, -1);
	resp.resources_count = 0;
	brk_acl_filter f = {
		.type = m.resource_type_filter, .pattern = m.pattern_type_filter,
		.name = m.resource_name_filter.len >= 0 ? m.resource_name_filter.ptr : NULL,
		.nlen = m.resource_name_filter.len,
		.principal = m.principal_filter.len >= 0 ? m.principal_filter.ptr : NULL,
		.plen = m.principal_filter.len,
		.host = m.host_filter.len >= 0 ? m.host_filter.ptr : NULL,
		.hlen = m.host_filter.len,
		.operation = m.operation, .permission = m.permission_type,
	};
	const char *bad;
	if (!brk_acl_enabled()) {
		resp.error_code = KERR_SECURITY_DISABLED;
		resp.error_message = proto_cstr("No Authorizer is configured.");
	} else if (!brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE)) {
		resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp.error_message = proto_cstr("Cluster authorization failed.");
	} else if ((bad = brk_acl_filter_check(&f))) {
		resp.error_code = KERR_INVALID_REQUEST;
		resp.error_message = proto_cstr(bad);
	} else {
		int32_t n = 0;
		brk_authorizer_each(&server.acl, count_pattern, &n);
		resp.resources = proto_arena_alloc(req->arena, (size_t)(n ? n : 1) *
								   sizeof(*resp.resources));
		if (!resp.resources)
			return BRK_CLOSE;
		describe_ctx c = { req, &f, &resp, n };
		if (brk_authorizer_each(&server.acl, add_pattern, &c) != 0)
			return BRK_CLOSE;
		resp.error_code = KERR_NONE;
	}
	if (DescribeAclsResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
