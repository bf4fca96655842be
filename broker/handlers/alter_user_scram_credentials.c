/*
 * alter_user_scram_credentials.c - AlterUserScramCredentials (API key 51),
 * version 0 (KIP-554), as Kafka's ZooKeeper-mode broker answers it
 * (KafkaApis.handleAlterUserScramCredentialsRequest and
 * ZkAdminManager.alterUserScramCredentials). One result per user named:
 *  - this broker not the controller: NOT_CONTROLLER for every user;
 *  - an empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
 *    a mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512):
 *    UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; iterations
 *    outside 4096..16384: UNACCEPTABLE_CREDENTIAL "Too few iterations" /
 *    "Too many iterations" (a salt above 128 bytes, our bound:
 *    UNACCEPTABLE_CREDENTIAL "Salt too long"). Any of these fails the
 *    user's every change;
 *  - a (user, mechanism) named twice among deletions and upsertions:
 *    DUPLICATE_RESOURCE "A user credential cannot be altered twice in the
 *    same request";
 *  - deleting a credential the user does not have: RESOURCE_NOT_FOUND
 *    "Attempt to delete a user credential that does not exist";
 *  - otherwise the user's configs (/config/users/<user>, the local
 *    metadata on one node) are written through the controller with the
 *    deletions removed and each upsertion stored as Kafka's credential
 *    string built from the salted password (StoredKey, ServerKey; the
 *    password itself never reaches the broker), the user's other keys
 *    (quotas) kept; the controller's error, if any, is the user's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/ctl_wait.h"
#include "broker/acl/check.h"
#include "broker/request.h"
#include "broker/security/scram.h"
#include "broker/security/scram_store.h"
#include "broker/server.h"
#include "broker/strmap.h"
#include "controller/entity.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

typedef struct user_state {
	proto_str name;
	int16_t error;
	const char *message;   /* static, or in the arena */
	bool illegal;          /* failed a check of its own changes */
	int mechs_seen;        /* BRK_SASL_SCRAM_* bits of its changes */
	bool duplicate;
	int32_t slot;          /* controller slot, -1 none */
} user_state;

typedef struct alter_state {
	user_state *users;
	int32_t nusers;
} alter_state;

static int mechanism_bit(int8_t m)
{
	return m == 1 ? BRK_SASL_SCRAM_SHA_256 : m == 2 ? BRK_SASL_SCRAM_SHA_512 : 0;
}

static void fail_user(user_state *u, int16_t error, const char *message)
{
	u->illegal = true;
	u->error = error;
	u->message = message;
}

static int respond(brk_request *req, brk_ctl_wait *w, void *arg)
{
	alter_state *st = arg;
	AlterUserScramCredentialsResponse resp;
	AlterUserScramCredentialsResponse_init(&resp);
	resp.results = proto_arena_alloc(req->arena, (size_t)(st->nusers ? st->nusers : 1) *
							 sizeof(*resp.results));
	if (!resp.results)
		return BRK_CLOSE;
	for (int32_t i = 0; i < st->nusers; i++) {
		user_state *u = &st->users[i];
		if (u->slot >= 0) {
			const ctl_result *res = brk_ctl_wait_result(w, u->slot);
			u->error = res ? res->error : KERR_UNKNOWN_SERVER_ERROR;
			if (res && res->error) {
				char *m = proto_arena_alloc(req->arena, sizeof(res->msg));
				if (!m)
					return BRK_CLOSE;
				memcpy(m, res->msg, sizeof(res->msg));
				u->message = m[0] ? m : NULL;
			}
		}
		AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult *r = &resp.results[i];
		AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult_init(r);
		r->user = u->name;
		r->error_code = u->error;
		r->error_message = u->message ? proto_cstr(u->message) : proto_str_of(NULL, -1);
	}
	resp.results_count = st->nusers;
	return AlterUserScramCredentialsResponse_encode(req->out, req->api_version, &resp) == 0
		       ? BRK_RESPOND
		       : BRK_CLOSE;
}

/* The new configs of user u: its current ones without the mechanisms it
 * deletes or replaces, plus the upserted credentials. Returns the count,
 * or -1 (no memory), or -2 (a credential could not be made: u's error is
 * set). */
static int32_t build_configs(brk_request *req, const AlterUserScramCredentialsRequest *m,
			     user_state *u, const brk_client_config *cur, ctl_config_entry **out)
{
	int32_t cap = (cur ? cur->nconfigs : 0) + 2;
	ctl_config_entry *e = proto_arena_alloc(req->arena, (size_t)cap * sizeof(*e));
	if (!e)
		return -1;
	int32_t n = 0;
	int changed = u->mechs_seen;
	for (int32_t i = 0; cur && i < cur->nconfigs; i++) {
		int bit = brk_sasl_mechanism_of(cur->configs[i].name, strlen(cur->configs[i].name));
		if (bit & changed)
			continue;
		e[n++] = cur->configs[i];
	}
	for (int32_t i = 0; i < m->upsertions_count; i++) {
		const AlterUserScramCredentialsRequest_ScramCredentialUpsertion *up = &m->upsertions[i];
		if (up->name.len != u->name.len || memcmp(up->name.ptr, u->name.ptr, (size_t)u->name.len))
			continue;
		int bit = mechanism_bit(up->mechanism);
		brk_scram_credential c;
		size_t spl = up->salted_password.len > 0 ? (size_t)up->salted_password.len : 0;
		size_t sl = up->salt.len > 0 ? (size_t)up->salt.len : 0;
		if (brk_scram_credential_from_salted(bit, spl ? up->salted_password.ptr : (const uint8_t *)"",
						     spl, sl ? up->salt.ptr : (const uint8_t *)"", sl,
						     up->iterations, &c) < 0) {
			u->error = KERR_UNKNOWN_SERVER_ERROR;
			u->message = "The credential could not be made";
			return -2;
		}
		char *s = proto_arena_alloc(req->arena, 512);
		if (!s || brk_scram_credential_format(&c, s, 512) < 0)
			return -1;
		e[n].name = (char *)brk_sasl_mechanism_name(bit);
		e[n].value = s;
		n++;
	}
	*out = e;
	return n;
}

int brk_handle_alter_user_scram_credentials(brk_request *req)
{
	AlterUserScramCredentialsRequest m;
	AlterUserScramCredentialsRequest_init(&m);
	if (AlterUserScramCredentialsRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	if (m.deletions_count < 0)
		m.deletions_count = 0;
	if (m.upsertions_count < 0)
		m.upsertions_count = 0;
	int32_t nops = m.deletions_count + m.upsertions_count;
	alter_state *st = proto_arena_alloc(req->arena, sizeof(*st));
	brk_ctl_wait *w = brk_ctl_wait_new(req, &server.cluster, nops);
	if (!st || !w)
		return BRK_CLOSE;
	st->users = proto_arena_alloc(req->arena, (size_t)(nops ? nops : 1) * sizeof(*st->users));
	if (!st->users)
		return BRK_CLOSE;
	st->nusers = 0;

	/* The users, in order of first mention; Kafka's checks of each
	 * change (the later failure of a user is the one reported, the
	 * upsertions' after the deletions'). */
	brk_strmap index;
	brk_strmap_init(&index);
	int rc = 0;
	/* KafkaApis.handleAlterUserScramCredentialsRequest: ALTER on the
	 * cluster, else every user CLUSTER_AUTHORIZATION_FAILED. */
	bool denied = !brk_acl_permits_cluster(req, CTL_ACL_OP_ALTER);
	for (int32_t i = 0; i < nops && rc == 0; i++) {
		bool del = i < m.deletions_count;
		proto_str name = del ? m.deletions[i].name
				     : m.upsertions[i - m.deletions_count].name;
		if (name.len < 0)
			name = proto_str_of("", 0);
		int8_t mech = del ? m.deletions[i].mechanism : m.upsertions[i - m.deletions_count].mechanism;
		user_state *u = brk_strmap_get(&index, name.ptr ? name.ptr : "", name.len);
		if (!u) {
			u = &st->users[st->nusers++];
			memset(u, 0, sizeof(*u));
			u->name = name;
			u->slot = -1;
			if (brk_strmap_put(&index, name.ptr ? name.ptr : "", name.len, u) < 0) {
				rc = -1;
				break;
			}
		}
		int bit = mechanism_bit(mech);
		if (denied) {
			fail_user(u, KERR_CLUSTER_AUTHORIZATION_FAILED, NULL);
			continue;
		}
		if (name.len == 0) {
			fail_user(u, KERR_UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
			continue;
		}
		if (!bit) {
			fail_user(u, KERR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
			continue;
		}
		if (!del) {
			const AlterUserScramCredentialsRequest_ScramCredentialUpsertion *up =
				&m.upsertions[i - m.deletions_count];
			if (up->iterations < BRK_SCRAM_MIN_ITERATIONS) {
				fail_user(u, KERR_UNACCEPTABLE_CREDENTIAL, "Too few iterations");
				continue;
			}
			if (up->iterations > BRK_SCRAM_MAX_ITERATIONS) {
				fail_user(u, KERR_UNACCEPTABLE_CREDENTIAL, "Too many iterations");
				continue;
			}
			if (up->salt.len > BRK_SCRAM_MAX_SALT) {
				fail_user(u, KERR_UNACCEPTABLE_CREDENTIAL, "Salt too long");
				continue;
			}
		}
		if (u->mechs_seen & bit)
			u->duplicate = true;
		u->mechs_seen |= bit;
	}
	brk_strmap_free(&index);
	if (rc < 0)
		return BRK_CLOSE;

	bool controller = brk_cluster_is_controller(&server.cluster);
	int32_t slot = 0;
	for (int32_t i = 0; i < st->nusers; i++) {
		user_state *u = &st->users[i];
		if (!controller) {
			u->error = KERR_NOT_CONTROLLER;
			u->message = "This is not the correct controller for this cluster.";
			continue;
		}
		if (u->illegal)
			continue;
		if (u->duplicate) {
			u->error = KERR_DUPLICATE_RESOURCE;
			u->message = "A user credential cannot be altered twice in the same request";
			continue;
		}
		const brk_client_config *cur =
			brk_scram_store_user(&server.cluster.client_configs, u->name.ptr, (size_t)u->name.len);
		bool missing = false;
		for (int32_t k = 0; k < m.deletions_count; k++) {
			const AlterUserScramCredentialsRequest_ScramCredentialDeletion *d = &m.deletions[k];
			if (d->name.len == u->name.len && !memcmp(d->name.ptr, u->name.ptr, (size_t)u->name.len) &&
			    !brk_client_config_value(cur, brk_sasl_mechanism_name(mechanism_bit(d->mechanism))))
				missing = true;
		}
		if (missing) {
			u->error = KERR_RESOURCE_NOT_FOUND;
			u->message = "Attempt to delete a user credential that does not exist";
			continue;
		}
		char path[CTL_ENTITY_PATH_MAX + 1];
		if (ctl_entity_path(path, sizeof(path), CTL_ENTITY_USER, u->name.ptr, (size_t)u->name.len,
				    NULL, 0) < 0) {
			u->error = KERR_UNACCEPTABLE_CREDENTIAL;
			u->message = "User name too long";
			continue;
		}
		ctl_config_entry *e;
		int32_t n = build_configs(req, &m, u, cur, &e);
		if (n == -1)
			return BRK_CLOSE;
		if (n == -2)
			continue;
		/* Kafka's own write is unconditional (AdminZkClient.changeConfigs). */
		ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = path, .configs = e,
			      .nconfigs = n, .conditional = false, .expected_version = -1 };
		u->slot = slot;
		if (brk_ctl_wait_submit(w, slot++, &op) != 0) {
			u->slot = -1;
			u->error = KERR_UNKNOWN_SERVER_ERROR;
		}
	}
	return brk_ctl_wait_start(w, BRK_ADMIN_WAIT_MS, respond, st);
}
