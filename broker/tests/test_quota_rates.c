/*
 * test_quota_rates.c - the quotas KIP-599 and KIP-612 add, without a
 * broker: Kafka's TokenBucket (refill, burst, debt), the strict and
 * permissive controller mutation quotas (what is refused, what is
 * counted, the throttle time and how it runs down), and the connection
 * creation rates (broker-wide, per listener with the broker's value as its
 * default, the protected inter-broker listener, per IP with <default>, a
 * throttled connection taken back from every sensor, dynamic changes).
 * Times are given, not read from a clock.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/client_config.h"
#include "broker/config.h"
#include "broker/quota/conn_rate.h"
#include "broker/quota/keys.h"
#include "broker/quota/quota.h"
#include "protocol/err.h"

static void set_entity(brk_client_configs *reg, const char *entity, const char *key,
		       const char *value)
{
	ctl_config_entry *e = calloc(1, sizeof(*e));
	e->name = strdup(key);
	e->value = strdup(value);
	ck_assert_int_eq(brk_client_configs_apply(reg, strdup(entity), e, 1, 0), 0);
}

static void drop_entity(brk_client_configs *reg, const char *entity)
{
	ck_assert_int_eq(brk_client_configs_apply(reg, strdup(entity), NULL, 0, -1), 0);
}

START_TEST(test_token_bucket)
{
	/* bound 2/s, burst 11 samples x 1 s x 2 = 22 */
	brk_quota_bucket b = { 22, 0 };
	brk_quota_bucket_record(&b, 2, 22, 30, 0);
	ck_assert(brk_quota_bucket_measure(&b, 2, 22, 0) == -8.0);
	ck_assert(brk_quota_bucket_measure(&b, 2, 22, 1000) == -6.0);
	ck_assert(brk_quota_bucket_measure(&b, 2, 22, 4000) == 0.0);
	/* refilled up to the burst, never above */
	ck_assert(brk_quota_bucket_measure(&b, 2, 22, 100000) == 22.0);
	/* a negative record (none here) would still be capped at the burst */
	brk_quota_bucket_record(&b, 2, 22, -5, 100000);
	ck_assert(brk_quota_bucket_measure(&b, 2, 22, 100000) == 22.0);
}
END_TEST

static int take(brk_quotas *q, brk_mutation_quota *mq, const char *client, double n, int64_t t)
{
	return brk_quota_mutation_record(q, mq, "User:ANONYMOUS", proto_cstr(client), n, t);
}

START_TEST(test_mutation_quota)
{
	brk_client_configs reg;
	brk_client_configs_init(&reg);
	brk_quotas q;
	ck_assert_int_eq(brk_quotas_init(&q, 11, 1, &reg), 0);
	brk_mutation_quota mq = { .strict = true };
	/* no quota anywhere: free, never refused */
	ck_assert(!brk_quotas_enabled(&q, BRK_QUOTA_CONTROLLER_MUTATION));
	ck_assert_int_eq(take(&q, &mq, "s", 1e6, 1000), KERR_NONE);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 1000), 0);

	set_entity(&reg, "clients/s", BRK_QUOTA_CONTROLLER_MUTATION_RATE, "2");
	set_entity(&reg, "clients/p", BRK_QUOTA_CONTROLLER_MUTATION_RATE, "2");
	ck_assert(brk_quotas_enabled(&q, BRK_QUOTA_CONTROLLER_MUTATION));
	/* strict: the bucket (22) is not below zero, so 30 partitions pass
	 * whole and leave a debt of 8; no throttle for this request */
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "s", 30, 1000), KERR_NONE);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 1000), 0);
	/* the next one is refused, nothing recorded: 8 / 2 s */
	ck_assert_int_eq(take(&q, &mq, "s", 1, 1000), KERR_THROTTLING_QUOTA_EXCEEDED);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 1000), 4000);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 2500), 2500);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 9000), 0);
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "s", 1, 2000), KERR_THROTTLING_QUOTA_EXCEEDED);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 2000), 3000);
	/* paid back after 4 s: accepted again */
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "s", 1, 5000), KERR_NONE);
	/* another client id has its own bucket */
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "p", 1, 5000), KERR_NONE);

	/* permissive: always done, counted, throttled after the fact */
	mq = (brk_mutation_quota){ .strict = false };
	ck_assert_int_eq(take(&q, &mq, "p", 29, 5000), KERR_NONE); /* 22 - 1 - 29 = -8 */
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 5000), 4000);
	ck_assert_int_eq(take(&q, &mq, "p", 1, 5000), KERR_NONE);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 5000), 4500);

	/* removed: free again (dynamic) */
	drop_entity(&reg, "clients/s");
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "s", 1000, 5000), KERR_NONE);
	ck_assert_int_eq(take(&q, &mq, "s", 1000, 5000), KERR_NONE);

	/* controller.quota.window.*: the burst of a new bucket is num x size x bound */
	brk_quotas_set_controller_window(&q, 2, 1);
	set_entity(&reg, "clients/w", BRK_QUOTA_CONTROLLER_MUTATION_RATE, "2");
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(take(&q, &mq, "w", 5, 7000), KERR_NONE); /* 4 - 5 = -1 */
	ck_assert_int_eq(take(&q, &mq, "w", 1, 7000), KERR_THROTTLING_QUOTA_EXCEEDED);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 7000), 500);
	/* a user quota applies to every client id of the user (KIP-55 order) */
	set_entity(&reg, "users/alice", BRK_QUOTA_CONTROLLER_MUTATION_RATE, "1");
	mq = (brk_mutation_quota){ .strict = true };
	ck_assert_int_eq(brk_quota_mutation_record(&q, &mq, "User:alice", proto_cstr("a1"), 3, 7000),
			 KERR_NONE);
	ck_assert_int_eq(brk_quota_mutation_record(&q, &mq, "User:alice", proto_cstr("a2"), 1, 7000),
			 KERR_THROTTLING_QUOTA_EXCEEDED);
	ck_assert_int_eq(brk_quota_mutation_throttle(&mq, 7000), 1000);
	brk_quotas_free(&q);
	brk_client_configs_free(&reg);
}
END_TEST

/* A config of listeners (names), window 2 x 1 s, broker rate rate. */
static void config(brk_config *cfg, int32_t rate, const char *l1, const char *l2,
		   const char *inter)
{
	memset(cfg, 0, sizeof(*cfg));
	brk_config_defaults(cfg);
	cfg->quota_window_num = 2;
	cfg->quota_window_size_seconds = 1;
	cfg->max_connection_creation_rate = rate;
	cfg->nlisteners = 0;
	snprintf(cfg->listeners[cfg->nlisteners++].name, 32, "%s", l1);
	if (l2)
		snprintf(cfg->listeners[cfg->nlisteners++].name, 32, "%s", l2);
	snprintf(cfg->inter_broker_listener, sizeof(cfg->inter_broker_listener), "%s", inter);
}

static void set(brk_config *cfg, const char *k, const char *v)
{
	char err[256];
	ck_assert_int_eq(brk_config_set(cfg, k, v, stderr, err, sizeof(err)), 0);
}

/* Accept n connections on listener li at time t; the number not delayed. */
static int accept_n(brk_conn_rate *cr, int li, int n, int64_t t, int32_t *last)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		*last = brk_conn_rate_accept(cr, li, t);
		ok += *last == 0;
	}
	return ok;
}

START_TEST(test_listener_and_broker_rates)
{
	static brk_config cfg;
	char err[256];
	brk_conn_rate cr;
	int32_t last;
	/* nothing configured: never a wait */
	config(&cfg, INT32_MAX, "PLAINTEXT", NULL, "PLAINTEXT");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(accept_n(&cr, 0, 100000, 5000, &last), 100000);
	brk_conn_rate_free(&cr);

	/* a listener's own rate: 10 in the first (1 s minimum) window, then
	 * (11 - 10) / 10 x 1000 ms */
	config(&cfg, INT32_MAX, "PLAINTEXT", NULL, "PLAINTEXT");
	set(&cfg, "listener.name.plaintext.max.connection.creation.rate", "10");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(brk_conn_rate_listener_index(&cr, "PLAINTEXT"), 0);
	ck_assert_int_eq(accept_n(&cr, 0, 10, 5000, &last), 10);
	ck_assert_int_eq(brk_conn_rate_accept(&cr, 0, 5000), 100);
	/* bounded by one window (quota.window.size.seconds) */
	accept_n(&cr, 0, 1000, 5000, &last);
	ck_assert_int_eq(last, 1000);
	brk_conn_rate_free(&cr);

	/* broker-wide: also each listener's default */
	config(&cfg, 5, "PLAINTEXT", NULL, "PLAINTEXT");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(accept_n(&cr, 0, 6, 5000, &last), 5);
	ck_assert_int_eq(last, 200);
	brk_conn_rate_free(&cr);

	/* the inter-broker listener among several is not counted on the
	 * broker's rate (its own rate is set high here) */
	config(&cfg, 5, "PLAINTEXT", "INTERNAL", "INTERNAL");
	set(&cfg, "listener.name.internal.max.connection.creation.rate", "1000");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(accept_n(&cr, 1, 50, 5000, &last), 50);
	ck_assert_int_eq(accept_n(&cr, 0, 5, 5000, &last), 5);
	ck_assert_int_gt(brk_conn_rate_accept(&cr, 0, 5000), 0);
	brk_conn_rate_free(&cr);

	/* dynamic: from no bound to 5 (broker-wide, so each listener's too),
	 * then the listener's own 1000 with the broker's gone */
	config(&cfg, INT32_MAX, "PLAINTEXT", NULL, "PLAINTEXT");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(accept_n(&cr, 0, 100, 5000, &last), 100);
	cfg.max_connection_creation_rate = 5;
	brk_conn_rate_reconfigure(&cr, &cfg);
	ck_assert_int_eq(accept_n(&cr, 0, 6, 20000, &last), 5);
	ck_assert_int_eq(last, 200);
	cfg.max_connection_creation_rate = INT32_MAX;
	set(&cfg, "listener.name.plaintext.max.connection.creation.rate", "1000");
	brk_conn_rate_reconfigure(&cr, &cfg);
	ck_assert_int_eq(accept_n(&cr, 0, 500, 40000, &last), 500);
	/* a bad value leaves the bound as it was */
	set(&cfg, "listener.name.plaintext.max.connection.creation.rate", "x");
	brk_conn_rate_reconfigure(&cr, &cfg);
	ck_assert_int_eq(accept_n(&cr, 0, 600, 40000, &last), 500);
	brk_conn_rate_free(&cr);
	ck_assert(brk_config_is_listener_rate_key("listener.name.plaintext.max.connection.creation.rate"));
	ck_assert(!brk_config_is_listener_rate_key("max.connection.creation.rate"));
	ck_assert(!brk_config_is_listener_rate_key("listener.name..max.connection.creation.rate"));
	ck_assert(!brk_config_is_listener_rate_key("listener.name.plaintext.max.connections"));

	/* a bad listener value stops start-up */
	config(&cfg, INT32_MAX, "PLAINTEXT", NULL, "PLAINTEXT");
	set(&cfg, "listener.name.plaintext.max.connection.creation.rate", "ten");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "max.connection.creation.rate"));
}
END_TEST

START_TEST(test_ip_rates)
{
	static brk_config cfg;
	char err[256];
	brk_conn_rate cr;
	brk_client_configs reg;
	brk_client_configs_init(&reg);
	config(&cfg, 5, "PLAINTEXT", NULL, "PLAINTEXT");
	set_entity(&reg, "ips/127.0.0.1", BRK_QUOTA_CONNECTION_CREATION_RATE, "1");
	ck_assert_int_eq(brk_conn_rate_init(&cr, &cfg, &reg, err, sizeof(err)), 0);
	ck_assert(brk_conn_rate_ip_bound(&cr, "127.0.0.1") == 1.0);
	ck_assert(brk_conn_rate_ip_bound(&cr, "10.0.0.1") < 0);
	/* one a second from 127.0.0.1; the rest closed, after (n - 1) x 1000 ms
	 * bounded by the window */
	ck_assert_int_eq(brk_conn_rate_accept(&cr, 0, 5000), 0);
	ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "127.0.0.1", 5000), 0);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(brk_conn_rate_accept(&cr, 0, 5000), 0);
		ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "127.0.0.1", 5000), 1000);
	}
	/* those 20 were taken back from the broker's rate (5): 4 more from
	 * elsewhere pass, the 5th waits */
	ck_assert_int_eq(accept_n(&cr, 0, 4, 5000, &(int32_t){ 0 }), 4);
	ck_assert_int_gt(brk_conn_rate_accept(&cr, 0, 5000), 0);
	ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "10.0.0.1", 5000), 0);

	/* <default> for every IP without its own; dynamic */
	set_entity(&reg, "ips/<default>", BRK_QUOTA_CONNECTION_CREATION_RATE, "2");
	ck_assert(brk_conn_rate_ip_bound(&cr, "10.0.0.1") == 2.0);
	ck_assert(brk_conn_rate_ip_bound(&cr, "127.0.0.1") == 1.0);
	ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "10.0.0.2", 9000), 0);
	ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "10.0.0.2", 9000), 0);
	ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "10.0.0.2", 9000), 500);
	drop_entity(&reg, "ips/127.0.0.1");
	ck_assert(brk_conn_rate_ip_bound(&cr, "127.0.0.1") == 2.0);
	drop_entity(&reg, "ips/<default>");
	ck_assert(brk_conn_rate_ip_bound(&cr, "127.0.0.1") < 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(brk_conn_rate_ip(&cr, 0, "10.0.0.2", 9000), 0);
	/* IPv6 names are compared in canonical form */
	set_entity(&reg, "ips/0:0:0:0:0:0:0:1", BRK_QUOTA_CONNECTION_CREATION_RATE, "7");
	ck_assert(brk_conn_rate_ip_bound(&cr, "::1") == 7.0);
	brk_conn_rate_free(&cr);
	brk_client_configs_free(&reg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quota_rates");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_token_bucket);
	tcase_add_test(tc, test_mutation_quota);
	tcase_add_test(tc, test_listener_and_broker_rates);
	tcase_add_test(tc, test_ip_rates);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
