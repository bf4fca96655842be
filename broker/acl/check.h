/*
 * check.h - the authorizer asked about a request: its connection's
 * principal (brk_conn_principal) and client host (brk_conn_client_host
 * without the leading '/', the bare IP ACL hosts name) against
 * server.acl. Nothing is allocated. With no authorizer every check passes.
 */
#ifndef SAMSA_BROKER_ACL_CHECK_H
#define SAMSA_BROKER_ACL_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/request.h"
#include "controller/acl.h"
#include "protocol/buf.h"

/* Whether an authorizer is configured. */
bool brk_acl_enabled(void);
/* Whether req may do op on resource (type, len bytes of name). */
bool brk_acl_permits(const brk_request *req, int8_t type, const char *name, int32_t len,
		     int8_t op);
/* The same for a name as the request carries it (a null name is ""). */
static inline bool brk_acl_permits_str(const brk_request *req, int8_t type, proto_str name,
				       int8_t op)
{
	return brk_acl_permits(req, type, name.len > 0 ? name.ptr : "", name.len > 0 ? name.len : 0,
			       op);
}
/* The same on a topic: the broker's topic t when it knows it (its name,
 * with the length kept beside it: no strlen per topic per request), else
 * name as the request carries it (a null name is ""). Produce, Fetch,
 * OffsetCommit, Metadata, DeleteTopics ask this way. */
struct brk_topic;
bool brk_acl_permits_topic(const brk_request *req, const struct brk_topic *t, proto_str name,
			   int8_t op);
/* The same on the cluster resource ("kafka-cluster"). */
bool brk_acl_permits_cluster(const brk_request *req, int8_t op);
/* For DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: op
 * (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic for a topic resource
 * (else TOPIC_AUTHORIZATION_FAILED), on the cluster for a broker or broker
 * logger resource (else CLUSTER_AUTHORIZATION_FAILED); 0 when allowed
 * (other resource types are left to the handler). */
int brk_acl_config_error(const brk_request *req, int8_t resource_type, proto_str name, int8_t op);
/* authorizeByResourceType: op on at least one resource of the type. */
bool brk_acl_permits_any(const brk_request *req, int8_t type, int8_t op);
/* Authorized operations as bits among supported (brk_authorized_operations). */
int32_t brk_acl_operations(const brk_request *req, int8_t type, const char *name, int32_t len,
			   int32_t supported);

#endif
