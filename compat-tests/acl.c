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

/* Produce one message to topic as the client kv (NULL: anonymous): the
 * delivery error. */
static rd_kafka_resp_err_t produce_as(const h_broker *b, const char *const *kv, const char *topic)
{
	const char *all[32] = { "message.timeout.ms", "5000", "retries", "0" };
	int n = 4;
	for (int i = 0; kv && kv[i] && n < 30; i++)
		all[n++] = kv[i];
	all[n] = NULL;
	rd_kafka_t *p = c_producer(b, all);
	c_delivery d = { 0 };
	c_msg m = { .topic = topic, .partition = 0, .value = "v", .value_len = 1 };
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(15000));
	ck_assert_msg(d.done, "no delivery report for %s", topic);
	rd_kafka_destroy(p);
	return d.err;
}

static rd_kafka_resp_err_t produce_one(const h_broker *b, const char *topic)
{
	return produce_as(b, NULL, topic);
}

/* Fetch partition 0 of topic from the start: the first error (or 0 when a
 * message came). */
static rd_kafka_resp_err_t fetch_as(const h_broker *b, const char *const *kv, const char *topic)
{
	rd_kafka_t *c = c_consumer(b, kv);
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

static rd_kafka_resp_err_t fetch_one(const h_broker *b, const char *topic)
{
	return fetch_as(b, NULL, topic);
}

/* Whether topic is listed in the metadata of all topics. */
static bool listed(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md = c_metadata_all(rk);
	bool found = c_md_topic(md, topic) != NULL;
	rd_kafka_metadata_destroy(md);
	return found;
}

/* A DescribeAcls v2 of everything on fd, raw: its ErrorCode. */
static int describe_acls_fd(int fd)
{
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
	return err;
}

static int describe_acls_raw(const h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	int err = describe_acls_fd(fd);
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

/* ---- the matrix: two SASL PLAIN users, one allowed, one refused ---- */

#define MATRIX_JAAS                                                                              \
	"listener.name.plaintext.plain.sasl.jaas.config="                                        \
	"org.apache.kafka.common.security.plain.PlainLoginModule required "                      \
	"username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" "             \
	"user_alice=\"alice-secret\" user_bob=\"bob-secret\";"

static const char *const matrix_overrides[] = {
	"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT", "sasl.enabled.mechanisms=PLAIN",
	"sasl.mechanism.inter.broker.protocol=PLAIN", MATRIX_JAAS, "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
	"super.users=User:admin", NULL
};

#define AS(user)                                                                                 \
	((const char *const[]){ "security.protocol", "sasl_plaintext", "sasl.mechanisms", "PLAIN", \
				"sasl.username", user, "sasl.password", user "-secret", NULL })

/* A raw connection authenticated as user with SASL PLAIN (SaslHandshake
 * v1, SaslAuthenticate v2). */
static int sasl_connect(const h_broker *b, const char *user, const char *password)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_int_ge(fd, 0);
	k_wbuf w = { .len = 0 };
	kw_i16(&w, 5);
	kw_raw(&w, "PLAIN", 5);
	k_rbuf r;
	uint8_t *frame = k_roundtrip_classic(fd, 17, 1, &w, &r);
	ck_assert_int_eq(kr_i16(&r, "ErrorCode"), 0);
	free(frame);
	char token[128];
	int n = snprintf(token, sizeof(token), "%c%s%c%s", 0, user, 0, password);
	w.len = 0;
	kw_uvarint(&w, (uint64_t)n + 1);
	kw_raw(&w, token, (size_t)n);
	kw_tags0(&w);
	frame = k_roundtrip(fd, 36, 2, &w, &r);
	ck_assert_int_eq(kr_i16(&r, "ErrorCode"), 0);
	free(frame);
	return fd;
}

/* InitProducerId v4 on fd (txn_id NULL: idempotent): its ErrorCode. */
static int init_pid_raw(int fd, const char *txn_id)
{
	k_wbuf w = { .len = 0 };
	kw_cstr(&w, txn_id);
	kw_i32(&w, 60000);
	kw_i64(&w, -1);
	kw_i16(&w, -1);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 22, 4, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	int err = kr_i16(&r, "ErrorCode");
	ck_assert_msg(!r.err, "InitProducerId response: %s", r.err);
	free(frame);
	return err;
}

/* FindCoordinator v3 for group on fd: its ErrorCode. */
static int find_group_coordinator_raw(int fd, const char *group)
{
	k_wbuf w = { .len = 0 };
	kw_cstr(&w, group);
	kw_u8(&w, 0); /* key type: group */
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 10, 3, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	int err = kr_i16(&r, "ErrorCode");
	ck_assert_msg(!r.err, "FindCoordinator response: %s", r.err);
	free(frame);
	return err;
}

/* ListOffsets v6 (latest) of topic partition 0 on fd: its ErrorCode. */
static int list_offsets_raw(int fd, const char *topic)
{
	k_wbuf w = { .len = 0 };
	kw_i32(&w, -1); /* ReplicaId */
	kw_u8(&w, 0);   /* IsolationLevel */
	kw_uvarint(&w, 2);
	kw_cstr(&w, topic);
	kw_uvarint(&w, 2);
	kw_i32(&w, 0);  /* PartitionIndex */
	kw_i32(&w, -1); /* CurrentLeaderEpoch */
	kw_i64(&w, -1); /* Timestamp: latest */
	kw_tags0(&w);
	kw_tags0(&w);
	kw_tags0(&w);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 2, 6, &w, &r);
	kr_i32(&r, "ThrottleTimeMs");
	ck_assert_int_eq(kr_carray(&r, "Topics"), 1);
	char name[64];
	kr_cstr(&r, name, sizeof(name), "Name");
	ck_assert_int_eq(kr_carray(&r, "Partitions"), 1);
	kr_i32(&r, "PartitionIndex");
	int err = kr_i16(&r, "ErrorCode");
	ck_assert_msg(!r.err, "ListOffsets response: %s", r.err);
	free(frame);
	return err;
}

/* DescribeConfigs of one resource: its error. */
static rd_kafka_resp_err_t describe_configs(rd_kafka_t *rk, rd_kafka_ResourceType_t type,
					    const char *name)
{
	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT);
	ck_assert_msg(ev != NULL, "DescribeConfigs: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_ConfigResource_t **rr = rd_kafka_DescribeConfigs_result_resources(
		    rd_kafka_event_DescribeConfigs_result(ev), &n);
		ck_assert_int_eq(n, 1);
		err = rd_kafka_ConfigResource_error(rr[0]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_ConfigResource_destroy(res);
	return err;
}

/* CreatePartitions of topic to total: its error. */
static rd_kafka_resp_err_t create_partitions(rd_kafka_t *rk, const char *topic, int total)
{
	char errstr[256];
	rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, errstr,
								  sizeof(errstr));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT);
	ck_assert_msg(ev != NULL, "CreatePartitions: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_topic_result_t **tr = rd_kafka_CreatePartitions_result_topics(
		    rd_kafka_event_CreatePartitions_result(ev), &n);
		ck_assert_int_eq(n, 1);
		err = rd_kafka_topic_result_error(tr[0]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewPartitions_destroy(np);
	return err;
}

/* The error of a group result, or of its first partition. */
static rd_kafka_resp_err_t group_result_err(const rd_kafka_group_result_t *g)
{
	const rd_kafka_error_t *e = rd_kafka_group_result_error(g);
	if (e)
		return rd_kafka_error_code(e);
	const rd_kafka_topic_partition_list_t *p = rd_kafka_group_result_partitions(g);
	return p && p->cnt > 0 ? p->elems[0].err : RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* OffsetCommit through AlterConsumerGroupOffsets of group, topic:0 = 1. */
static rd_kafka_resp_err_t commit_offset(rd_kafka_t *rk, const char *group, const char *topic)
{
	rd_kafka_topic_partition_list_t *pl = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(pl, topic, 0)->offset = 1;
	rd_kafka_AlterConsumerGroupOffsets_t *a = rd_kafka_AlterConsumerGroupOffsets_new(group, pl);
	rd_kafka_topic_partition_list_destroy(pl);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConsumerGroupOffsets(rk, &a, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT);
	ck_assert_msg(ev != NULL, "AlterConsumerGroupOffsets: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_group_result_t **g = rd_kafka_AlterConsumerGroupOffsets_result_groups(
		    rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
		ck_assert_int_eq(n, 1);
		err = group_result_err(g[0]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AlterConsumerGroupOffsets_destroy(a);
	return err;
}

/* OffsetFetch through ListConsumerGroupOffsets of group (all topics). */
static rd_kafka_resp_err_t fetch_offsets(rd_kafka_t *rk, const char *group)
{
	rd_kafka_ListConsumerGroupOffsets_t *l = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_ListConsumerGroupOffsets(rk, &l, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT);
	ck_assert_msg(ev != NULL, "ListConsumerGroupOffsets: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_group_result_t **g = rd_kafka_ListConsumerGroupOffsets_result_groups(
		    rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
		ck_assert_int_eq(n, 1);
		err = group_result_err(g[0]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_ListConsumerGroupOffsets_destroy(l);
	return err;
}

/* DescribeGroups through DescribeConsumerGroups of group. */
static rd_kafka_resp_err_t describe_group(rd_kafka_t *rk, const char *group)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConsumerGroups(rk, &group, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT);
	ck_assert_msg(ev != NULL, "DescribeConsumerGroups: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_ConsumerGroupDescription_t **g =
		    rd_kafka_DescribeConsumerGroups_result_groups(
			rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
		ck_assert_int_eq(n, 1);
		const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(g[0]);
		err = e ? rd_kafka_error_code(e) : 0;
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

/* DeleteGroups of group. */
static rd_kafka_resp_err_t delete_group(rd_kafka_t *rk, const char *group)
{
	rd_kafka_DeleteGroup_t *d = rd_kafka_DeleteGroup_new(group);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteGroups(rk, &d, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT);
	ck_assert_msg(ev != NULL, "DeleteGroups: no result");
	rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
	if (!err) {
		size_t n;
		const rd_kafka_group_result_t **g = rd_kafka_DeleteGroups_result_groups(
		    rd_kafka_event_DeleteGroups_result(ev), &n);
		ck_assert_int_eq(n, 1);
		err = group_result_err(g[0]);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_DeleteGroup_destroy(d);
	return err;
}

START_TEST(test_matrix)
{
	h_broker *b = c_start_broker(matrix_overrides);
	rd_kafka_t *admin = c_producer(b, AS("admin"));
	rd_kafka_t *alice = c_producer(b, AS("alice"));
	rd_kafka_t *bob = c_producer(b, AS("bob"));
	char errstr[256];
	ASSERT_ERR(c_create_topic(admin, "t", 1, 1, NULL, errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "admin creates t");
	ASSERT_ERR(c_create_topic(admin, "hidden", 1, 1, NULL, errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "admin creates hidden");
	c_wait_topic(admin, "t", 1, h_scaled_ms(10000));
	c_wait_topic(admin, "hidden", 1, h_scaled_ms(10000));
	struct {
		rd_kafka_ResourceType_t type;
		const char *name;
		rd_kafka_ResourcePatternType_t pattern;
		const char *principal;
		rd_kafka_AclOperation_t op;
	} allow[] = {
		{ RD_KAFKA_RESOURCE_TOPIC, "t", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
		  RD_KAFKA_ACL_OPERATION_ALL },
		{ RD_KAFKA_RESOURCE_TOPIC, "t", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:bob",
		  RD_KAFKA_ACL_OPERATION_DESCRIBE },
		{ RD_KAFKA_RESOURCE_TOPIC, "hidden", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
		  RD_KAFKA_ACL_OPERATION_ALL },
		{ RD_KAFKA_RESOURCE_TOPIC, "alice-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "User:alice",
		  RD_KAFKA_ACL_OPERATION_ALL },
		{ RD_KAFKA_RESOURCE_GROUP, "g", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
		  RD_KAFKA_ACL_OPERATION_ALL },
	};
	for (size_t i = 0; i < sizeof(allow) / sizeof(allow[0]); i++)
		ASSERT_ERR(create_acl(admin, allow[i].type, allow[i].name, allow[i].pattern,
				      allow[i].principal, "*", allow[i].op,
				      RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
			   RD_KAFKA_RESP_ERR_NO_ERROR, "admin CreateAcls");

	/* Produce, Fetch (WRITE, READ on the topic). */
	ASSERT_ERR(produce_as(b, AS("alice"), "t"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice produces");
	ASSERT_ERR(produce_as(b, AS("bob"), "t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "bob produces");
	ASSERT_ERR(fetch_as(b, AS("alice"), "t"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice fetches");
	ASSERT_ERR(fetch_as(b, AS("bob"), "t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "bob fetches");
	/* Metadata (DESCRIBE): hidden is left out for bob. */
	ck_assert_msg(listed(alice, "hidden"), "alice does not see hidden");
	ck_assert_msg(!listed(bob, "hidden"), "bob sees hidden");
	ck_assert_msg(listed(bob, "t"), "bob does not see t");
	/* ListOffsets (DESCRIBE), InitProducerId (idempotent: WRITE on some
	 * topic or IDEMPOTENT_WRITE; transactional: WRITE on the id),
	 * DescribeAcls (DESCRIBE on the cluster), raw for the exact codes. */
	int fa = sasl_connect(b, "alice", "alice-secret"), fb = sasl_connect(b, "bob", "bob-secret");
	/* FindCoordinator (DESCRIBE on the group): refused before the
	 * coordinator is looked up, so bob's lookup does not make
	 * __consumer_offsets (Kafka's order). */
	ck_assert_int_eq(find_group_coordinator_raw(fb, "g"),
			 RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
	usleep(300 * 1000);
	ck_assert_msg(!listed(admin, "__consumer_offsets"), "a refused lookup made __consumer_offsets");
	ck_assert_int_eq(list_offsets_raw(fa, "hidden"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ck_assert_int_eq(list_offsets_raw(fb, "hidden"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	ck_assert_int_eq(init_pid_raw(fa, NULL), RD_KAFKA_RESP_ERR_NO_ERROR);
	ck_assert_int_eq(init_pid_raw(fb, NULL), RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
	ck_assert_int_eq(init_pid_raw(fb, "tx"),
			 RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
	ck_assert_int_eq(describe_acls_fd(fa), RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
	close(fa);
	close(fb);
	/* CreateAcls (ALTER on the cluster). */
	ASSERT_ERR(create_acl(bob, RD_KAFKA_RESOURCE_TOPIC, "hidden",
			      RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:bob", "*",
			      RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
		   RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, "bob CreateAcls");
	/* CreateTopics (CREATE), CreatePartitions (ALTER), DescribeConfigs
	 * (DESCRIBE_CONFIGS on the topic; on the cluster for a broker). */
	ASSERT_ERR(c_create_topic(alice, "alice-new", 1, 1, NULL, errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "alice creates alice-new");
	ASSERT_ERR(c_create_topic(bob, "bob-new", 1, 1, NULL, errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "bob creates bob-new");
	ASSERT_ERR(create_partitions(bob, "t", 2), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
		   "bob adds partitions");
	ASSERT_ERR(create_partitions(alice, "t", 2), RD_KAFKA_RESP_ERR_NO_ERROR,
		   "alice adds partitions");
	ASSERT_ERR(describe_configs(alice, RD_KAFKA_RESOURCE_TOPIC, "t"),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "alice describes t's configs");
	ASSERT_ERR(describe_configs(bob, RD_KAFKA_RESOURCE_TOPIC, "t"),
		   RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "bob describes t's configs");
	ASSERT_ERR(describe_configs(admin, RD_KAFKA_RESOURCE_BROKER, "0"),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "admin describes the broker's configs");
	ASSERT_ERR(describe_configs(alice, RD_KAFKA_RESOURCE_BROKER, "0"),
		   RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, "alice describes the broker's");
	/* OffsetCommit, OffsetFetch, DescribeGroups (READ, DESCRIBE on the group). */
	ASSERT_ERR(commit_offset(alice, "g", "t"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice commits");
	ASSERT_ERR(commit_offset(bob, "g", "t"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
		   "bob commits");
	ASSERT_ERR(fetch_offsets(alice, "g"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice fetches offsets");
	ASSERT_ERR(fetch_offsets(bob, "g"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
		   "bob fetches offsets");
	ASSERT_ERR(describe_group(alice, "g"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice describes g");
	ASSERT_ERR(describe_group(bob, "g"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
		   "bob describes g");
	/* DeleteGroups, DeleteTopics (DELETE). */
	ASSERT_ERR(delete_group(bob, "g"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
		   "bob deletes g");
	ASSERT_ERR(delete_group(alice, "g"), RD_KAFKA_RESP_ERR_NO_ERROR, "alice deletes g");
	ASSERT_ERR(c_delete_topic(bob, "alice-new", errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "bob deletes alice-new");
	ASSERT_ERR(c_delete_topic(alice, "alice-new", errstr, sizeof(errstr)),
		   RD_KAFKA_RESP_ERR_NO_ERROR, "alice deletes alice-new");

	rd_kafka_destroy(bob);
	rd_kafka_destroy(alice);
	rd_kafka_destroy(admin);
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
	tcase_add_test(tc, test_matrix);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return c_run_suite(suite());
}
