/*
 * check.c - authorizer checks for a request (check.h).
 */
#include <string.h>

#include "broker/acl/check.h"
#include "broker/config.h"
#include "broker/conn.h"
#include "broker/partitions.h"
#include "broker/server.h"
#include "protocol/err.h"

static const char *host_of(const brk_request *req)
{
	const char *h = brk_conn_client_host(req->conn);
	if (!h)
		return "";
	return h[0] == '/' ? h + 1 : h;
}

bool brk_acl_enabled(void)
{
	return server.acl.enabled;
}

bool brk_acl_permits(const brk_request *req, int8_t type, const char *name, int32_t len,
		     int8_t op)
{
	if (!server.acl.enabled || !req->conn)
		return true;
	return brk_authorize(&server.acl, brk_conn_principal(req->conn), host_of(req), type, name,
			     len, op);
}

bool brk_acl_permits_topic(const brk_request *req, const brk_topic *t, proto_str name,
			   int8_t op)
{
	if (!server.acl.enabled || !req->conn)
		return true;
	if (t)
		return brk_acl_permits(req, CTL_ACL_RES_TOPIC, t->name, t->name_len, op);
	return brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, name, op);
}

bool brk_acl_permits_cluster(const brk_request *req, int8_t op)
{
	return brk_acl_permits(req, CTL_ACL_RES_CLUSTER, CTL_ACL_CLUSTER_NAME,
			       (int32_t)sizeof(CTL_ACL_CLUSTER_NAME) - 1, op);
}

bool brk_acl_permits_any(const brk_request *req, int8_t type, int8_t op)
{
	if (!server.acl.enabled || !req->conn)
		return true;
	return brk_authorize_any(&server.acl, brk_conn_principal(req->conn), host_of(req), type,
				 op);
}

int32_t brk_acl_operations(const brk_request *req, int8_t type, const char *name, int32_t len,
			   int32_t supported)
{
	if (!server.acl.enabled || !req->conn)
		return supported;
	return brk_authorized_operations(&server.acl, brk_conn_principal(req->conn), host_of(req),
					 type, name, len, supported);
}

int brk_acl_config_error(const brk_request *req, int8_t resource_type, proto_str name, int8_t op)
{
	if (resource_type == BRK_RESOURCE_TOPIC)
		return brk_acl_permits_str(req, CTL_ACL_RES_TOPIC, name, op)
			       ? 0
			       : KERR_TOPIC_AUTHORIZATION_FAILED;
	if (resource_type == BRK_RESOURCE_BROKER || resource_type == BRK_RESOURCE_BROKER_LOGGER)
		return brk_acl_permits_cluster(req, op) ? 0 : KERR_CLUSTER_AUTHORIZATION_FAILED;
	return 0;
}
