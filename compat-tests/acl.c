/*
 * acl.c - ACLs through librdkafka's admin API (CreateAcls, DescribeAcls,
 * DeleteAcls) and their enforcement on a single node, for the principal
 * every PLAINTEXT client has (User:ANONYMOUS) and the host it comes from
 * (127.0.0.1):
 *  - without authorizer.class.name the ACL APIs answer SECURITY_DISABLED
 *    (54) and everything is allowed;
 *  - with it (allow.everyone.if.no.acl.found=true so the first ACLs can be
 *    made): CreateAcls / DescribeAcls with filters (LITERAL, PREFIXED, ANY,
 *    MATCH) / DeleteAcls return exactly what Kafka does; an invalid binding
 *    is INVALID_REQUEST (42);
 *  - a DENY on a topic refuses Produce and Fetch with
 *    TOPIC_AUTHORIZATION_FAILED (29); without DESCRIBE a topic is left out
 *    of Metadata; an ALLOW from another host only does not let 127.0.0.1
 *    in; a PREFIXED ALLOW does; DENY wins over ALLOW;
 *  - the ACLs survive a restart;
 *  - a DENY of ALTER on the cluster makes CreateAcls
 *    CLUSTER_AUTHORIZATION_FAILED (31).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define ANON "User:ANONYMOUS"

static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
	int left = h_scaled_ms(30000);
	while (left > 0) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 200);
		left -= 200;
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == type)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	return NULL;
}

/* CreateAcls of one binding: its result error. */
static rd_kafka_resp_err_t create_acl(rd_kafka_t *rk, rd_kafka_ResourceType_t type,
				      const char *name, rd_kafka_ResourcePatternType_t pattern,
				      const char *principal, const char *host,
				      rd_kafka_AclOperation_t op, rd_kafka_AclPermissionType_t perm)
{
	char errstr[256];
	rd_kafka_AclBinding_t *b = rd_kafka_AclBinding_new(type, name, pattern, principal, host, op,
							   perm, errstr, sizeof(errstr));
	ck_assert_msg(b != NULL, "AclBinding_new: %s", errstr);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateAcls(rk, &b, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_CREATEACLS_RESULT);
	ck_assert_msg(ev != NULL, "CreateAcls: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_acl_result_t **r =
		    rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
		ck_assert_int_eq(n, 1);
		const rd_kafka_error_t *e = rd_kafka_acl_result_error(r[0]);
		err = e ? rd_kafka_error_code(e) : 0;
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AclBinding_destroy(b);
	return err;
}

static rd_kafka_AclBindingFilter_t *filter(rd_kafka_ResourceType_t type, const char *name,
					   rd_kafka_ResourcePatternType_t pattern,
					   const char *principal)
{
	char errstr[256];
	rd_kafka_AclBindingFilter_t *f = rd_kafka_AclBindingFilter_new(
	    type, name, pattern, principal, NULL, RD_KAFKA_ACL_OPERATION_ANY,
	    RD_KAFKA_ACL_PERMISSION_TYPE_ANY, errstr, sizeof(errstr));
	ck_assert_msg(f != NULL, "AclBindingFilter_new: %s", errstr);
	return f;
}

/* DescribeAcls: the request error; *n the bindings it matched. */
static rd_kafka_resp_err_t describe_acls(rd_kafka_t *rk, rd_kafka_AclBindingFilter_t *f,
					 size_t *n, char *first, size_t firstcap)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeAcls(rk, f, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBEACLS_RESULT);
	ck_assert_msg(ev != NULL, "DescribeAcls: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	*n = 0;
	if (!err) {
		const rd_kafka_AclBinding_t **b =
		    rd_kafka_DescribeAcls_result_acls(rd_kafka_event_DescribeAcls_result(ev), n);
		if (*n > 0 && first)
			snprintf(first, firstcap, "%s %s %s %s %d %d",
				 rd_kafka_ResourceType_name(rd_kafka_AclBinding_restype(b[0])),
				 rd_kafka_AclBinding_name(b[0]), rd_kafka_AclBinding_principal(b[0]),
				 rd_kafka_AclBinding_host(b[0]),
				 (int)rd_kafka_AclBinding_operation(b[0]),
				 (int)rd_kafka_AclBinding_permission_type(b[0]));
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

/* DeleteAcls of one filter: the filter's error; *n the ACLs it deleted. */
static rd_kafka_resp_err_t delete_acls(rd_kafka_t *rk, rd_kafka_AclBindingFilter_t *f, size_t *n)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteAcls(rk, &f, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DELETEACLS_RESULT);
	ck_assert_msg(ev != NULL, "DeleteAcls: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	*n = 0;
	if (!err) {
		size_t nr;
		const rd_kafka_DeleteAcls_result_response_t **r =
		    rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &nr);
		ck_assert_int_eq(nr, 1);
		const rd_kafka_error_t *e = rd_kafka_DeleteAcls_result_response_error(r[0]);
		err = e ? rd_kafka_error_code(e) : 0;
		rd_kafka_DeleteAcls_result_response_matching_acls(r[0], n);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

/* Produce one message to topic: the delivery error. */
static rd_kafka_resp_err_t produce_one(const h_broker *b, const char *topic)
{
	const char *kv[] = { "message.timeout.ms", "5000", "retries", "0", NULL };
	rd_kafka_t *p = c_producer(b, kv);
	c_delivery d = { 0 };
	c_msg m = { .topic = topic, .partition = 0, .value = "v", .value_len = 1 };
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(15000));
	ck_assert_msg(d.done, "no delivery report for %s", topic);
	rd_kafka_destroy(p);
	return d.err;
}

/* Fetch partition 0 of topic from the start: the first error (or 0 when a
 * message came). */
static rd_kafka_resp_err_t fetch_one(const h_broker *b, const char *topic)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
	ck_assert_int_eq(rd_kafka_consume_start(t, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	long long deadline = h_now_ms() + h_scaled_ms(15000);
	while (h_now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consume(t, 0, 200);
		if (!m)
			continue;
		rd_kafka_resp_err_t e = m->err;
		rd_kafka_message_destroy(m);
		if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF)
			continue;
		err = e;
		break;
	}
	rd_kafka_consume_stop(t, 0);
	rd_kafka_topic_destroy(t);
	rd_kafka_destroy(c);
	return err;
}

/* Whether topic is listed in the metadata of all topics. */
static bool listed(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md = c_metadata_all(rk);
	bool found = c_md_topic(md, topic) != NULL;
	rd_kafka_metadata_destroy(md);
	return found;
}

/* A DescribeAcls v2 of everything, raw: its ErrorCode. */
static int describe_acls_raw(const h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	k_wbuf w = { .len = 0 };
	kw_u8(&w, 1);        /* ResourceTypeFilter ANY */
	kw_cstr(&w, NULL);   /* ResourceNameFilter */
	kw_u8(&w, 1);        /* PatternTypeFilter ANY */
	kw_cstr(&w, NULL);   /* PrincipalFilter */
	kw_cstr(&w, NULL);   /* HostFilter */
	kw_u8(&w, 1);        /* Operation ANY */
	kw_u8(&w, 1);        /* PermissionType ANY */
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 29, 2, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	int err = kr_i16(&r, "ErrorCode");
	ck_assert_msg(!r.err, "DescribeAcls response: %s", r.err);
	free(frame);
	close(fd);
	return err;
}

#define ASSERT_ERR(got, want, what)                                                             \
	ck_assert_msg((got) == (want), "%s: %s (%d), expected %s (%d)", what,                  \
		      rd_kafka_err2name(got), (int)(got), rd_kafka_err2name(want), (int)(want))

START_TEST(test_disabled)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	rd_kafka_resp_err_t err = create_acl(p, RD_KAFKA_RESOURCE_TOPIC, "t",
					     RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON, "*",
					     RD_KAFKA_ACL_OPERATION_READ,
					     RD_KAFKA_ACL_PERMISSION_TYPE_DENY);
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_SECURITY_DISABLED, "CreateAcls without authorizer");
	size_t n;
	rd_kafka_AclBindingFilter_t *f = filter(RD_KAFKA_RESOURCE_ANY, NULL,
						RD_KAFKA_RESOURCE_PATTERN_ANY, NULL);
	/* librdkafka drops DescribeAcls' top-level error: read it raw (v2). */
	ck_assert_int_eq(describe_acls_raw(b), RD_KAFKA_RESP_ERR_SECURITY_DISABLED);
	err = delete_acls(p, f, &n);
	ASSERT_ERR(err, RD_KAFKA_RESP_ERR_SECURITY_DISABLED, "DeleteAcls without authorizer");
	rd_kafka_AclBinding_destroy(f);
	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

static const char *const acl_overrides[] = {
	"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
	"allow.everyone.if.no.acl.found=true", NULL
};

START_TEST(test_admin_and_enforcement)
{
	h_broker *b = c_start_broker(acl_overrides);
	rd_kafka_t *a = c_producer(b, NULL);
	char errstr[256];
	const char *topics[] = { "open", "closed", "hostonly", "pre-fixed", "denied-pre" };
	for (int i = 0; i < 5; i++)
		ASSERT_ERR(c_create_topic(a, topics[i], 1, 1, NULL, errstr, sizeof(errstr)),
			   RD_KAFKA_RESP_ERR_NO_ERROR, topics[i]);
	for (int i = 0; i < 5; i++)
		c_wait_topic(a, topics[i], 1, h_scaled_ms(10000));

	/* Everything is open while no ACL applies. */
	ASSERT_ERR(produce_one(b, "closed"), RD_KAFKA_RESP_ERR_NO_ERROR, "produce before ACLs");

	/* ACLs: the cluster stays open to us (so the admin calls go on), the
	 * rest as the header says. */
	struct {
		rd_kafka_ResourceType_t type;
		const char *name;
		rd_kafka_ResourcePatternType_t pattern;
		const char *principal, *host;
		rd_kafka_AclOperation_t op;
		rd_kafka_AclPermissionType_t perm;
	} acls[] = {
		{ RD_KAFKA_RESOURCE_BROKER, "kafka-cluster", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON,
		  "*", RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "closed", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON, "*",
		  RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_DENY },
		{ RD_KAFKA_RESOURCE_TOPIC, "closed", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON, "*",
		  RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_DENY },
		{ RD_KAFKA_RESOURCE_TOPIC, "closed", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:*", "*",
		  RD_KAFKA_ACL_OPERATION_DESCRIBE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "hostonly", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON,
		  "10.9.9.9", RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "pre-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "User:*", "*",
		  RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "pre-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "User:*", "*",
		  RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "denied-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, ANON, "*",
		  RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW },
		{ RD_KAFKA_RESOURCE_TOPIC, "denied-pre", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON,
		  "127.0.0.1", RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_DENY },
	};
	for (size_t i = 0; i < sizeof(acls) / sizeof(acls[0]); i++)
		ASSERT_ERR(create_acl(a, acls[i].type, acls[i].name, acls[i].pattern,
				      acls[i].principal, acls[i].host, acls[i].op, acls[i].perm),
			   RD_KAFKA_RESP_ERR_NO_ERROR, "CreateAcls");
	/* The same ACL again is a success and adds nothing. */
	ASSERT_ERR(create_acl(a, acls[1].type, acls[1].name, acls[1].pattern, acls[1].principal,
			      acls[1].host, acls[1].op, acls[1].perm),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "CreateAcls of an existing ACL");
	/* An invalid binding: a principal without a type. */
	ASSERT_ERR(create_acl(a, RD_KAFKA_RESOURCE_TOPIC, "x", RD_KAFKA_RESOURCE_PATTERN_LITERAL,
			      "alice", "*", RD_KAFKA_ACL_OPERATION_READ,
			      RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
		   RD_KAFKA_RESP_ERR_INVALID_REQUEST, "CreateAcls with principal 'alice'");

	/* DescribeAcls with filters. */
	size_t n;
	char first[512];
	rd_kafka_AclBindingFilter_t *f = filter(RD_KAFKA_RESOURCE_ANY, NULL,
						RD_KAFKA_RESOURCE_PATTERN_ANY, NULL);
	ASSERT_ERR(describe_acls(a, f, &n, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR, "describe all");
	ck_assert_int_eq(n, 9);
	rd_kafka_AclBinding_destroy(f);
	f = filter(RD_KAFKA_RESOURCE_TOPIC, "closed", RD_KAFKA_RESOURCE_PATTERN_LITERAL, NULL);
	ASSERT_ERR(describe_acls(a, f, &n, first, sizeof(first)), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "describe closed");
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(first, "TOPIC closed User:ANONYMOUS * 3 2");
	rd_kafka_AclBinding_destroy(f);
	f = filter(RD_KAFKA_RESOURCE_TOPIC, "pre-fixed", RD_KAFKA_RESOURCE_PATTERN_MATCH, NULL);
	ASSERT_ERR(describe_acls(a, f, &n, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR, "describe MATCH");
	ck_assert_int_eq(n, 2); /* the two of PREFIXED "pre-" */
	rd_kafka_AclBinding_destroy(f);
	f = filter(RD_KAFKA_RESOURCE_TOPIC, NULL, RD_KAFKA_RESOURCE_PATTERN_PREFIXED, NULL);
	ASSERT_ERR(describe_acls(a, f, &n, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "describe PREFIXED");
	ck_assert_int_eq(n, 3);
	rd_kafka_AclBinding_destroy(f);

	/* Enforcement. */
	ASSERT_ERR(produce_one(b, "open"), RD_KAFKA_RESP_ERR_NO_ERROR, "produce to open");
	ASSERT_ERR(produce_one(b, "closed"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "produce to closed");
	ASSERT_ERR(fetch_one(b, "open"), RD_KAFKA_RESP_ERR_NO_ERROR, "fetch open");
	ASSERT_ERR(fetch_one(b, "closed"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "fetch closed");
	ASSERT_ERR(produce_one(b, "hostonly"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "produce from a host the ACL does not name");
	ASSERT_ERR(produce_one(b, "pre-fixed"), RD_KAFKA_RESP_ERR_NO_ERROR, "produce prefixed");
	ASSERT_ERR(fetch_one(b, "pre-fixed"), RD_KAFKA_RESP_ERR_NO_ERROR, "fetch prefixed");
	ASSERT_ERR(produce_one(b, "denied-pre"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "DENY wins over a prefixed ALLOW");
	ck_assert_msg(listed(a, "open"), "open not in metadata");
	ck_assert_msg(listed(a, "pre-fixed"), "pre-fixed not in metadata");
	ck_assert_msg(listed(a, "closed"), "closed (DESCRIBE allowed) not in metadata");
	ck_assert_msg(!listed(a, "hostonly"), "hostonly listed in metadata");

	/* The ACLs survive a restart. */
	rd_kafka_destroy(a);
	int st = h_broker_stop(b, h_scaled_ms(20000));
	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean stop failed");
	ck_assert_int_eq(h_broker_restart(b), 0);
	a = c_producer(b, NULL);
	f = filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, NULL);
	ASSERT_ERR(describe_acls(a, f, &n, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "describe after restart");
	ck_assert_int_eq(n, 9);
	rd_kafka_AclBinding_destroy(f);
	ASSERT_ERR(produce_one(b, "closed"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "produce to closed after restart");

	/* DeleteAcls: the ACLs of closed go, closed opens (no ACL left). */
	f = filter(RD_KAFKA_RESOURCE_TOPIC, "closed", RD_KAFKA_RESOURCE_PATTERN_ANY, NULL);
	ASSERT_ERR(delete_acls(a, f, &n), RD_KAFKA_RESP_ERR_NO_ERROR, "delete closed");
	ck_assert_int_eq(n, 3);
	ASSERT_ERR(delete_acls(a, f, &n), RD_KAFKA_RESP_ERR_NO_ERROR, "delete closed again");
	ck_assert_int_eq(n, 0);
	rd_kafka_AclBinding_destroy(f);
	ASSERT_ERR(produce_one(b, "closed"), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "produce to closed after its ACL was deleted");

	/* A DENY of ALTER on the cluster: no more ACL changes. */
	ASSERT_ERR(create_acl(a, RD_KAFKA_RESOURCE_BROKER, "kafka-cluster",
			      RD_KAFKA_RESOURCE_PATTERN_LITERAL, ANON, "*",
			      RD_KAFKA_ACL_OPERATION_ALTER, RD_KAFKA_ACL_PERMISSION_TYPE_DENY),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "CreateAcls DENY ALTER cluster");
	ASSERT_ERR(create_acl(a, RD_KAFKA_RESOURCE_TOPIC, "x", RD_KAFKA_RESOURCE_PATTERN_LITERAL,
			      ANON, "*", RD_KAFKA_ACL_OPERATION_READ,
			      RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
		   RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, "CreateAcls without ALTER");
	f = filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, NULL);
	ASSERT_ERR(delete_acls(a, f, &n), RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED,
		   "DeleteAcls without ALTER");
	/* DESCRIBE is still allowed (ALL minus ALTER). */
	ASSERT_ERR(describe_acls(a, f, &n, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "DescribeAcls with DESCRIBE");
	ck_assert_int_eq(n, 7);
	rd_kafka_AclBinding_destroy(f);

	rd_kafka_destroy(a);
	c_assert_broker_serving(b);
	c_stop_broker(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_disabled);
	tcase_add_test(tc, test_admin_and_enforcement);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return c_run_suite(suite());
}
