/*
 * test_client_configs.c - client entity configs: the entity paths of
 * entity.h (Kafka's Sanitizer, the four path forms) and
 * CTL_OP_SET_CLIENT_CONFIGS / CTL_EV_CLIENT_CONFIGS with the local back
 * end: events, versions and conditional writes, removal, persistence
 * across a reopen, errors.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "controller/entity.h"
#include "protocol/err.h"

/* ---- entity paths ---- */

static const char *san(const char *s)
{
	static char out[256];
	ck_assert_int_ge(ctl_entity_sanitize(s, strlen(s), out, sizeof(out)), 0);
	return out;
}

START_TEST(test_sanitize)
{
	/* Kafka's SanitizerTest: URL encoding, '*' and ' ' as %2A and %20 */
	ck_assert_str_eq(san("alice"), "alice");
	ck_assert_str_eq(san("User:CN=Some User,O=A"), "User%3ACN%3DSome%20User%2CO%3DA");
	ck_assert_str_eq(san("a*b.c-d_e"), "a%2Ab.c-d_e");
	ck_assert_str_eq(san("<default>"), "%3Cdefault%3E");
	ck_assert_str_eq(san("\xc3\xa9"), "%C3%A9");
	char out[64];
	ck_assert_int_eq(ctl_entity_desanitize("User%3ACN%3DSome%20User", 23, out, sizeof(out)), 17);
	ck_assert_str_eq(out, "User:CN=Some User");
	ck_assert_int_eq(ctl_entity_desanitize("a+b", 3, out, sizeof(out)), 3);
	ck_assert_str_eq(out, "a b");
	ck_assert_int_eq(ctl_entity_desanitize("a%2", 3, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(ctl_entity_desanitize("a%zz", 4, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(ctl_entity_sanitize("abc", 3, out, 3), -ENAMETOOLONG);
	ck_assert_int_eq(ctl_entity_sanitize("abc", 3, out, 4), 3);
}
END_TEST

START_TEST(test_paths)
{
	char p[CTL_ENTITY_PATH_MAX + 1];
	ck_assert_int_gt(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, "alice", 5, NULL, 0), 0);
	ck_assert_str_eq(p, "users/alice");
	ck_assert_int_gt(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, NULL, 0, NULL, 0), 0);
	ck_assert_str_eq(p, "users/<default>");
	ck_assert_int_gt(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER_CLIENT_ID, "a b", 3, NULL, 0),
			 0);
	ck_assert_str_eq(p, "users/a%20b/clients/<default>");
	ck_assert_int_gt(ctl_entity_path(p, sizeof(p), CTL_ENTITY_CLIENT_ID, "app/1", 5, NULL, 0), 0);
	ck_assert_str_eq(p, "clients/app%2F1");
	ck_assert_int_gt(ctl_entity_path(p, sizeof(p), CTL_ENTITY_IP, "::1", 3, NULL, 0), 0);
	ck_assert_str_eq(p, "ips/%3A%3A1");
	ck_assert_int_eq(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, "", 0, NULL, 0), -EINVAL);
	ck_assert_int_eq(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, "..", 2, NULL, 0), -EINVAL);
	ck_assert_int_eq(ctl_entity_path(p, sizeof(p), 9, "x", 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(ctl_entity_path(p, 8, CTL_ENTITY_USER, "alice", 5, NULL, 0), -ENAMETOOLONG);
	char big[800];
	memset(big, '/', sizeof(big));
	ck_assert_int_eq(ctl_entity_path(p, sizeof(p), CTL_ENTITY_USER, big, sizeof(big), NULL, 0),
			 -ENAMETOOLONG);

	ctl_entity_ref r;
	const char *s = "users/<default>/clients/app";
	ck_assert_int_eq(ctl_entity_parse(s, strlen(s), &r), 0);
	ck_assert_int_eq(r.kind, CTL_ENTITY_USER_CLIENT_ID);
	ck_assert(r.name_default && !r.client_default);
	ck_assert_int_eq((int)r.client_len, 3);
	ck_assert(memcmp(r.client, "app", 3) == 0);
	s = "clients/<default>";
	ck_assert_int_eq(ctl_entity_parse(s, strlen(s), &r), 0);
	ck_assert_int_eq(r.kind, CTL_ENTITY_CLIENT_ID);
	ck_assert(r.name_default);
	static const char *const bad[] = { "", "users", "users/", "users//clients/a",
					   "users/a/clients", "users/a/clients/", "users/a/x/b",
					   "clients/a/clients/b", "topics/t", "users/a b",
					   "users/a%zz", "users/.", "ips/a/b", "users/a/clients/b/c",
					   "/users/a" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_entity_parse(bad[i], strlen(bad[i]), &r) == -EINVAL, "%s", bad[i]);
}
END_TEST

/* ---- the local back end ---- */

static char dir[PATH_MAX];
static ctl *c;

#define MAXE 16
static struct {
	char *entity;
	ctl_config_entry *configs;
	int32_t n;
	int32_t version;
} ents[MAXE];
static int nents;

static void ents_clear(void)
{
	for (int i = 0; i < nents; i++) {
		free(ents[i].entity);
		ctl_configs_free(ents[i].configs, ents[i].n);
	}
	nents = 0;
}

static int ent_find(const char *entity)
{
	for (int i = 0; i < nents; i++)
		if (strcmp(ents[i].entity, entity) == 0)
			return i;
	return -1;
}

static const char *ent_value(const char *entity, const char *name)
{
	int i = ent_find(entity);
	for (int32_t k = 0; i >= 0 && k < ents[i].n; k++)
		if (strcmp(ents[i].configs[k].name, name) == 0)
			return ents[i].configs[k].value;
	return NULL;
}

static int32_t ent_version(const char *entity)
{
	int i = ent_find(entity);
	return i < 0 ? -1 : ents[i].version;
}

static void apply(ctl_event *e)
{
	if (e->type != CTL_EV_CLIENT_CONFIGS)
		return;
	int i = ent_find(e->u.client_configs.entity);
	if (i >= 0) {
		free(ents[i].entity);
		ctl_configs_free(ents[i].configs, ents[i].n);
		ents[i] = ents[--nents];
	}
	if (e->u.client_configs.version < 0)
		return;
	ck_assert_int_lt(nents, MAXE);
	ents[nents].entity = e->u.client_configs.entity;
	ents[nents].configs = e->u.client_configs.configs;
	ents[nents].n = e->u.client_configs.nconfigs;
	ents[nents].version = e->u.client_configs.version;
	nents++;
	e->u.client_configs.entity = NULL;
	e->u.client_configs.configs = NULL;
	e->u.client_configs.nconfigs = 0;
}

static void open_ctl(void)
{
	ctl_options o = { .log_dir = dir, .broker_id = 1 };
	o.self.id = 1;
	snprintf(o.self.host, sizeof(o.self.host), "127.0.0.1");
	o.self.port = 9092;
	ents_clear();
	ck_assert_int_eq(ctl_open(&o, &c), 0);
	ctl_event *e;
	while ((e = ctl_next_event(c))) {
		apply(e);
		ctl_event_free(e);
	}
}

static ctl_result call(const ctl_op *op)
{
	uint64_t id = ctl_submit(c, op);
	ck_assert_uint_gt(id, 0);
	for (;;) {
		ck_assert(ctl_wait_event(c, 5000));
		ctl_event *e;
		while ((e = ctl_next_event(c))) {
			if (e->type == CTL_EV_RESULT) {
				ck_assert_uint_eq(e->u.result.id, id);
				ctl_result r = e->u.result;
				ctl_event_free(e);
				return r;
			}
			apply(e);
			ctl_event_free(e);
		}
	}
}

static ctl_result set(const char *entity, const ctl_config_entry *cfg, int32_t n, bool cond,
		      int32_t expected)
{
	ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = entity, .configs = cfg,
		      .nconfigs = n, .conditional = cond, .expected_version = expected };
	return call(&op);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/samsa-test-clientcfg-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	ents_clear();
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/__samsa_metadata", dir);
	unlink(path);
	rmdir(dir);
}

START_TEST(test_local_set_and_version)
{
	open_ctl();
	ck_assert_int_eq(nents, 0);
	ctl_result r = set("users/alice", (ctl_config_entry[]){ { "producer_byte_rate", "1024" } }, 1,
			   true, -1);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(r.config_version, 0);
	ck_assert_str_eq(ent_value("users/alice", "producer_byte_rate"), "1024");
	ck_assert_int_eq(ent_version("users/alice"), 0);
	/* a stale version: refused, nothing changes */
	r = set("users/alice", (ctl_config_entry[]){ { "SCRAM-SHA-256", "x" } }, 1, true, -1);
	ck_assert_int_eq(r.error, KERR_INVALID_UPDATE_VERSION);
	ck_assert_int_eq(r.config_version, 0);
	ck_assert_ptr_null(ent_value("users/alice", "SCRAM-SHA-256"));
	/* the current one: both keys */
	r = set("users/alice",
		(ctl_config_entry[]){ { "producer_byte_rate", "1024" },
				      { "SCRAM-SHA-256", "salt=c2FsdA==,iterations=4096" } },
		2, true, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(ent_version("users/alice"), 1);
	ck_assert_str_eq(ent_value("users/alice", "SCRAM-SHA-256"), "salt=c2FsdA==,iterations=4096");
	/* unconditional */
	r = set("clients/<default>", (ctl_config_entry[]){ { "consumer_byte_rate", "5e3" } }, 1,
		false, 77);
	ck_assert_int_eq(r.error, KERR_NONE);
	r = set("users/<default>/clients/a%20b",
		(ctl_config_entry[]){ { "request_percentage", "12.5" } }, 1, false, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	/* errors */
	ck_assert_int_eq(set("topics/t", NULL, 0, false, 0).error, KERR_INVALID_REQUEST);
	ck_assert_int_eq(set("users/a b", NULL, 0, false, 0).error, KERR_INVALID_REQUEST);
	ck_assert_int_eq(set("users/x", (ctl_config_entry[]){ { "k", "1" }, { "k", "2" } }, 2, false, 0)
				 .error,
			 KERR_INVALID_CONFIG);
	ck_assert_int_eq(ent_find("users/x"), -1);
	ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = NULL };
	ck_assert_int_eq(call(&op).error, KERR_INVALID_REQUEST);
	ck_assert_int_eq(nents, 3);
	ctl_close(c);

	/* persisted, and read back with their values (odd bytes too) */
	open_ctl();
	ck_assert_int_eq(nents, 3);
	ck_assert_str_eq(ent_value("users/alice", "producer_byte_rate"), "1024");
	ck_assert_str_eq(ent_value("users/alice", "SCRAM-SHA-256"), "salt=c2FsdA==,iterations=4096");
	ck_assert_str_eq(ent_value("clients/<default>", "consumer_byte_rate"), "5e3");
	ck_assert_str_eq(ent_value("users/<default>/clients/a%20b", "request_percentage"), "12.5");
	int32_t v = ent_version("users/alice");
	ck_assert_int_ge(v, 0);
	/* removal: an empty map */
	r = set("users/alice", NULL, 0, true, v);
	ck_assert_int_eq(r.error, KERR_NONE);
	ck_assert_int_eq(r.config_version, -1);
	ck_assert_int_eq(ent_find("users/alice"), -1);
	r = set("clients/<default>", NULL, 0, false, 0);
	ck_assert_int_eq(r.error, KERR_NONE);
	/* validate_only changes nothing */
	op = (ctl_op){ .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = "users/bob",
		       .configs = (ctl_config_entry[]){ { "a", "b" } }, .nconfigs = 1,
		       .validate_only = true };
	ck_assert_int_eq(call(&op).error, KERR_NONE);
	ck_assert_int_eq(ent_find("users/bob"), -1);
	ctl_close(c);
	open_ctl();
	ck_assert_int_eq(nents, 1);
	ck_assert_int_ge(ent_find("users/<default>/clients/a%20b"), 0);
	ctl_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client_configs");
	TCase *tc = tcase_create("entity");
	tcase_add_test(tc, test_sanitize);
	tcase_add_test(tc, test_paths);
	suite_add_tcase(s, tc);
	tc = tcase_create("local");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_local_set_and_version);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
