/*
 * describe_user_scram_credentials.c - DescribeUserScramCredentials (API key
 * 50), version 0 (KIP-554), as Kafka's ZooKeeper-mode broker answers it
 * (ZkAdminManager.describeUserScramCredentials), from the users' client
 * entity configs this broker holds (scram_store.h):
 *  - Users null or empty: every user with a SCRAM credential, sorted by
 *    name;
 *  - else each user named once, in the request's order: an empty name
 *    RESOURCE_NOT_FOUND "Username must not be empty", a name given twice
 *    DUPLICATE_RESOURCE "Cannot describe SCRAM credentials for the same
 *    user twice in a single request: <user>", a user without credentials
 *    RESOURCE_NOT_FOUND "Attempt to describe a user credential that does
 *    not exist: <user>";
 *  - a user's credentials: mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512)
 *    and iterations, never the keys; a stored value that is no credential
 *    string: UNKNOWN_SERVER_ERROR "Error processing describe user SCRAM
 *    credential configs request".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/security/scram.h"
#include "broker/security/scram_store.h"
#include "broker/server.h"
#include "broker/strmap.h"
#include "controller/entity.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult result_t;
typedef DescribeUserScramCredentialsResponse_CredentialInfo info_t;

static const int mechanisms[2] = { BRK_SASL_SCRAM_SHA_256, BRK_SASL_SCRAM_SHA_512 };

/* Whether cc holds a SCRAM credential. */
static bool has_credential(const brk_client_config *cc)
{
	for (int k = 0; k < 2; k++)
		if (brk_client_config_value(cc, brk_sasl_mechanism_name(mechanisms[k])))
			return true;
	return false;
}

/* Fill r's credential infos from cc (which has at least one). Returns 0 or
 * -1 (no memory). */
static int fill(brk_request *req, result_t *r, const brk_client_config *cc)
{
	info_t *infos = proto_arena_alloc(req->arena, 2 * sizeof(*infos));
	if (!infos)
		return -1;
	int32_t n = 0;
	for (int k = 0; k < 2; k++) {
		const char *v = brk_client_config_value(cc, brk_sasl_mechanism_name(mechanisms[k]));
		if (!v)
			continue;
		brk_scram_credential c;
		if (brk_scram_credential_parse(v, strlen(v), &c) < 0) {
			r->error_code = KERR_UNKNOWN_SERVER_ERROR;
			r->error_message = proto_cstr("Error processing describe user SCRAM credential "
						      "configs request");
			r->credential_infos_count = 0;
			return 0;
		}
		DescribeUserScramCredentialsResponse_CredentialInfo_init(&infos[n]);
		infos[n].mechanism = (int8_t)(k + 1);
		infos[n].iterations = c.iterations;
		n++;
	}
	r->credential_infos = infos;
	r->credential_infos_count = n;
	return 0;
}

static char *arena_fmt(brk_request *req, const char *prefix, proto_str user)
{
	size_t n = strlen(prefix) + (size_t)user.len + 1;
	char *s = proto_arena_alloc(req->arena, n);
	if (s)
		snprintf(s, n, "%s%.*s", prefix, (int)user.len, user.ptr ? user.ptr : "");
	return s;
}

static int cmp_user(const void *a, const void *b)
{
	const result_t *x = a, *y = b;
	int32_t n = x->user.len < y->user.len ? x->user.len : y->user.len;
	int c = memcmp(x->user.ptr, y->user.ptr, (size_t)n);
	return c ? c : (x->user.len > y->user.len) - (x->user.len < y->user.len);
}

int brk_handle_describe_user_scram_credentials(brk_request *req)
{
	DescribeUserScramCredentialsRequest m;
	DescribeUserScramCredentialsRequest_init(&m);
	if (DescribeUserScramCredentialsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	const brk_client_configs *reg = &server.cluster.client_configs;
	DescribeUserScramCredentialsResponse resp;
	DescribeUserScramCredentialsResponse_init(&resp);
	int32_t cap = m.users_count > 0 ? m.users_count : brk_client_configs_count(reg);
	resp.results = proto_arena_alloc(req->arena, (size_t)(cap ? cap : 1) * sizeof(*resp.results));
	if (!resp.results)
		return BRK_CLOSE;
	int32_t n = 0;
	/* KafkaApis.handleDescribeUserScramCredentialsRequest: DESCRIBE on
	 * the cluster. */
	if (!brk_acl_permits_cluster(req, CTL_ACL_OP_DESCRIBE)) {
		resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp.results_count = 0;
		return DescribeUserScramCredentialsResponse_encode(req->out, req->api_version, &resp) == 0
			       ? BRK_RESPOND
			       : BRK_CLOSE;
	}
	if (m.users_count <= 0) {
		for (int32_t i = 0; i < brk_client_configs_count(reg); i++) {
			const brk_client_config *cc = brk_client_configs_at(reg, i);
			ctl_entity_ref ref;
			if (ctl_entity_parse(cc->entity, strlen(cc->entity), &ref) < 0 ||
			    ref.kind != CTL_ENTITY_USER || !has_credential(cc))
				continue;
			/* Kafka lists every child of /config/users, "<default>" too. */
			char *name = proto_arena_alloc(req->arena, ref.name_len + 1);
			if (!name)
				return BRK_CLOSE;
			int len = ref.name_default ? (int)strlen(CTL_ENTITY_DEFAULT)
						   : ctl_entity_desanitize(ref.name, ref.name_len, name,
									   ref.name_len + 1);
			if (ref.name_default)
				name = (char *)CTL_ENTITY_DEFAULT;
			if (len < 0)
				continue;
			result_t *r = &resp.results[n++];
			DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult_init(r);
			r->user = proto_str_of(name, len);
			if (fill(req, r, cc) < 0)
				return BRK_CLOSE;
		}
		qsort(resp.results, (size_t)n, sizeof(*resp.results), cmp_user);
	} else {
		/* How often each name comes (a hash map: the list is the
		 * client's, of any length). */
		int32_t *count = proto_arena_alloc(req->arena, (size_t)m.users_count * sizeof(*count));
		if (!count)
			return BRK_CLOSE;
		brk_strmap index;
		brk_strmap_init(&index);
		for (int32_t i = 0; i < m.users_count; i++) {
			proto_str u = m.users[i].name;
			int32_t len = u.len > 0 ? u.len : 0;
			int32_t *c = brk_strmap_get(&index, u.ptr ? u.ptr : "", len);
			if (c) {
				(*c)++;
				count[i] = -1; /* not its first mention */
				continue;
			}
			count[i] = 1;
			if (brk_strmap_put(&index, u.ptr ? u.ptr : "", len, &count[i]) < 0) {
				brk_strmap_free(&index);
				return BRK_CLOSE;
			}
		}
		brk_strmap_free(&index);
		for (int32_t i = 0; i < m.users_count; i++) {
			proto_str user = m.users[i].name;
			if (user.len < 0)
				user = proto_str_of("", 0);
			if (count[i] < 0)
				continue; /* one result per user */
			bool twice = count[i] > 1;
			result_t *r = &resp.results[n++];
			DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult_init(r);
			r->user = user;
			if (user.len == 0) {
				r->error_code = KERR_RESOURCE_NOT_FOUND;
				r->error_message = proto_cstr("Username must not be empty");
				continue;
			}
			if (twice) {
				char *msg = arena_fmt(req, "Cannot describe SCRAM credentials for the same user "
							   "twice in a single request: ", user);
				if (!msg)
					return BRK_CLOSE;
				r->error_code = KERR_DUPLICATE_RESOURCE;
				r->error_message = proto_cstr(msg);
				continue;
			}
			const brk_client_config *cc = brk_scram_store_user(reg, user.ptr, (size_t)user.len);
			if (!has_credential(cc)) {
				char *msg = arena_fmt(req, "Attempt to describe a user credential that does "
							   "not exist: ", user);
				if (!msg)
					return BRK_CLOSE;
				r->error_code = KERR_RESOURCE_NOT_FOUND;
				r->error_message = proto_cstr(msg);
				continue;
			}
			if (fill(req, r, cc) < 0)
				return BRK_CLOSE;
		}
	}
	resp.results_count = n;
	return DescribeUserScramCredentialsResponse_encode(req->out, req->api_version, &resp) == 0
		       ? BRK_RESPOND
		       : BRK_CLOSE;
}
