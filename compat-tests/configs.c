/*
 * configs.c - topic and broker configs through the admin APIs:
 * DescribeConfigs and AlterConfigs with librdkafka's AdminClient,
 * IncrementalAlterConfigs (which librdkafka 2.0.2 lacks) with raw v1
 * requests. Checks Kafka's config sources (DYNAMIC_TOPIC_CONFIG for a topic
 * override, STATIC_BROKER_CONFIG for a server.properties key,
 * DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG for dynamic broker
 * configs, DEFAULT_CONFIG otherwise) and synonyms, SET/DELETE/APPEND/
 * SUBTRACT, the errors (INVALID_CONFIG 40 with nothing changed,
 * INVALID_REQUEST 42 for a duplicate resource and for a broker key that
 * cannot change at runtime, UNKNOWN_TOPIC_OR_PARTITION 3), that a change
 * applies at once to the running log (max.message.bytes lowered: a produce
 * gets MESSAGE_TOO_LARGE; segment.bytes lowered: segments roll earlier) and
 * that every change survives a restart. Rules: KIP-226, KIP-339, Kafka's
 * ConfigHelper, ConfigAdminManager, ConfigurationControlManager.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/wire.h"

#define MAX_ENTRIES 256

typedef struct entry {
	char name[128];
	char value[256];
	int null_value;
	int source;
	int read_only;
	int nsyn;
	char syn_name[4][128];
	int syn_source[4];
} entry;

typedef struct described {
	rd_kafka_resp_err_t err;
	int n;
	entry e[MAX_ENTRIES];
} described;

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

/* AdminClient DescribeConfigs of one resource into *out. */
static void describe(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name, described *out)
{
	memset(out, 0, sizeof(*out));
	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT);
	ck_assert_msg(ev != NULL, "DescribeConfigs %s: no result", name);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "DescribeConfigs %s: %s", name,
		      rd_kafka_event_error_string(ev));
	size_t nr;
	const rd_kafka_ConfigResource_t **rr =
	    rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &nr);
	ck_assert_int_eq(nr, 1);
	out->err = rd_kafka_ConfigResource_error(rr[0]);
	size_t ne;
	const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(rr[0], &ne);
	for (size_t i = 0; i < ne && out->n < MAX_ENTRIES; i++) {
		entry *e = &out->e[out->n++];
		snprintf(e->name, sizeof(e->name), "%s", rd_kafka_ConfigEntry_name(ce[i]));
		const char *v = rd_kafka_ConfigEntry_value(ce[i]);
		e->null_value = v == NULL;
		snprintf(e->value, sizeof(e->value), "%s", v ? v : "");
		e->source = rd_kafka_ConfigEntry_source(ce[i]);
		e->read_only = rd_kafka_ConfigEntry_is_read_only(ce[i]);
		size_t ns;
		const rd_kafka_ConfigEntry_t **syn = rd_kafka_ConfigEntry_synonyms(ce[i], &ns);
		e->nsyn = (int)ns;
		for (size_t k = 0; k < ns && k < 4; k++) {
			snprintf(e->syn_name[k], sizeof(e->syn_name[k]), "%s",
				 rd_kafka_ConfigEntry_name(syn[k]));
			e->syn_source[k] = rd_kafka_ConfigEntry_source(syn[k]);
		}
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_ConfigResource_destroy(res);
}

static const entry *find(const described *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->e[i].name, name) == 0)
			return &d->e[i];
	ck_abort_msg("config %s not described", name);
	return NULL;
}

/* Assert name has value and source in d. */
static void expect(const described *d, const char *name, const char *value, int source)
{
	const entry *e = find(d, name);
	ck_assert_msg(strcmp(e->value, value) == 0, "%s = '%s', expected '%s'", name, e->value, value);
	ck_assert_msg(e->source == source, "%s: source %s, expected %s", name,
		      rd_kafka_ConfigSource_name(e->source), rd_kafka_ConfigSource_name(source));
}

/* AdminClient AlterConfigs of one resource (kv NULL-terminated key, value
 * list); returns the resource's error, its message in errstr. */
static rd_kafka_resp_err_t alter(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
				 const char *const *kv, int validate_only, char *errstr, size_t errsize)
{
	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
	for (int i = 0; kv && kv[i]; i += 2)
		ck_assert(rd_kafka_ConfigResource_set_config(res, kv[i], kv[i + 1]) == 0);
	char buf[256];
	rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
	rd_kafka_AdminOptions_set_validate_only(opt, validate_only, buf, sizeof(buf));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConfigs(rk, &res, 1, opt, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT);
	ck_assert_msg(ev != NULL, "AlterConfigs %s: no result", name);
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "AlterConfigs %s: %s", name,
		      rd_kafka_event_error_string(ev));
	size_t nr;
	const rd_kafka_ConfigResource_t **rr =
	    rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &nr);
	ck_assert_int_eq(nr, 1);
	rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(rr[0]);
	const char *s = rd_kafka_ConfigResource_error_string(rr[0]);
	snprintf(errstr, errsize, "%s", s ? s : "");
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_ConfigResource_destroy(res);
	return err;
}

/* ---- IncrementalAlterConfigs v1 on a raw connection ---- */

enum { SET = 0, DELETE = 1, APPEND = 2, SUBTRACT = 3 };

typedef struct op {
	const char *name;
	int op;
	const char *value;
} op;

typedef struct iac_resource {
	int type;
	const char *name;
	const op *ops; /* terminated by a NULL name */
} iac_resource;

/* Send one request with nres resources; errors[i] / msgs[i] get the
 * results in order. */
static void incremental(int port, const iac_resource *res, int nres, int validate_only,
			int16_t *errors, char (*msgs)[256])
{
	int fd = w_connect(port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "connect");
	static k_wbuf body;
	body.len = 0;
	kw_uvarint(&body, (uint64_t)nres + 1);
	for (int i = 0; i < nres; i++) {
		kw_u8(&body, (uint8_t)res[i].type);
		kw_cstr(&body, res[i].name);
		int nops = 0;
		while (res[i].ops[nops].name)
			nops++;
		kw_uvarint(&body, (uint64_t)nops + 1);
		for (int k = 0; k < nops; k++) {
			kw_cstr(&body, res[i].ops[k].name);
			kw_u8(&body, (uint8_t)res[i].ops[k].op);
			kw_cstr(&body, res[i].ops[k].value);
			kw_tags0(&body);
		}
		kw_tags0(&body);
	}
	kw_u8(&body, validate_only ? 1 : 0);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 44, 1, &body, &r);
	kr_i32(&r, "throttle");
	int64_t n = kr_carray(&r, "responses");
	ck_assert_int_eq(n, nres);
	for (int i = 0; i < nres; i++) {
		errors[i] = kr_i16(&r, "error");
		char m[256];
		if (kr_cstr(&r, m, sizeof(m), "message") < 0)
			m[0] = '\0';
		if (msgs)
			snprintf(msgs[i], 256, "%s", m);
		ck_assert_int_eq(kr_i8(&r, "type"), res[i].type);
		char nm[256];
		kr_cstr(&r, nm, sizeof(nm), "name");
		ck_assert_str_eq(nm, res[i].name);
		kr_tags(&r, "resource tags");
	}
	kr_tags(&r, "tags");
	kr_done(&r, "IncrementalAlterConfigs response");
	free(frame);
	close(fd);
}

static int16_t incremental1(int port, int type, const char *name, const op *ops, int validate_only,
			    char *msg)
{
	iac_resource res = { type, name, ops };
	int16_t err;
	char m[1][256];
	incremental(port, &res, 1, validate_only, &err, m);
	if (msg)
		snprintf(msg, 256, "%s", m[0]);
	return err;
}

/* Produce one message of len bytes and wait for its delivery result. */
static rd_kafka_resp_err_t produce_len(rd_kafka_t *p, const char *topic, size_t len)
{
	char *v = malloc(len);
	ck_assert(v != NULL);
	memset(v, 'x', len);
	c_delivery d = { 0 };
	c_msg m = { .topic = topic, .partition = 0, .value = v, .value_len = len };
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(20000));
	free(v);
	ck_assert_msg(d.done, "no delivery report");
	return d.err;
}

static int count_segments(const h_broker *b, const char *topic)
{
	char dir[PATH_MAX + 300];
	snprintf(dir, sizeof(dir), "%s/%s-0", b->dir, topic);
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "no partition directory %s", dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0)
			n++;
	}
	closedir(d);
	return n;
}

#define TOPIC RD_KAFKA_RESOURCE_TOPIC
#define BROKER RD_KAFKA_RESOURCE_BROKER

START_TEST(test_describe_sources)
{
	h_broker *b = c_start_broker((const char *const[]){ "log.retention.bytes=123456789",
							    "replica.lag.time.max.ms=3000", NULL });
	rd_kafka_t *p = c_producer(b, NULL);
	const char *t = "cfg-describe";
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, t, 1, 1,
					(const char *const[]){ "retention.ms", "3600000",
							       "cleanup.policy", "compact", NULL },
					errstr, sizeof(errstr)),
			 0);
	described d;
	describe(p, TOPIC, t, &d);
	ck_assert_int_eq(d.err, 0);
	ck_assert_int_ge(d.n, 30);
	expect(&d, "retention.ms", "3600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "cleanup.policy", "compact", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "retention.bytes", "123456789", RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	expect(&d, "segment.bytes", "1073741824", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "max.message.bytes", "1048588", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "message.timestamp.type", "CreateTime", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	/* Synonyms (librdkafka asks for them): the override, then the broker
	 * key it would otherwise come from. */
	const entry *e = find(&d, "retention.bytes");
	ck_assert_int_eq(e->nsyn, 2);
	ck_assert_str_eq(e->syn_name[0], "log.retention.bytes");
	ck_assert_int_eq(e->syn_source[0], RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	ck_assert_int_eq(e->syn_source[1], RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	e = find(&d, "cleanup.policy");
	ck_assert_int_ge(e->nsyn, 2);
	ck_assert_str_eq(e->syn_name[0], "cleanup.policy");
	ck_assert_str_eq(e->syn_name[1], "log.cleanup.policy");
	ck_assert(!e->read_only);

	/* This broker: static and default keys, read-only ones. */
	describe(p, BROKER, "0", &d);
	ck_assert_int_eq(d.err, 0);
	expect(&d, "log.retention.bytes", "123456789", RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	expect(&d, "log.segment.bytes", "1073741824", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	ck_assert(!find(&d, "log.retention.bytes")->read_only);
	ck_assert(find(&d, "listeners")->read_only);
	ck_assert(find(&d, "log.dirs")->read_only);
	/* Cluster mode keys: Kafka's defaults, read-only but for
	 * num.replica.fetchers; broker.rack is null. */
	expect(&d, "replica.lag.time.max.ms", "3000", RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	expect(&d, "replica.fetch.wait.max.ms", "500", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "zookeeper.session.timeout.ms", "18000", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "controlled.shutdown.enable", "true", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	ck_assert(find(&d, "replica.lag.time.max.ms")->read_only);
	ck_assert(find(&d, "replica.fetch.wait.max.ms")->read_only);
	ck_assert(!find(&d, "num.replica.fetchers")->read_only);
	ck_assert(find(&d, "broker.rack")->null_value);
	ck_assert(find(&d, "zookeeper.connection.timeout.ms")->null_value);
	ck_assert_int_lt(d.n, MAX_ENTRIES);

	/* Unknown topic, another broker. */
	describe(p, TOPIC, "cfg-no-such-topic", &d);
	ck_assert_int_eq(d.err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);

	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_alter_and_incremental)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, NULL);
	const char *t = "cfg-alter";
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, t, 1, 1,
					(const char *const[]){ "retention.ms", "3600000",
							       "cleanup.policy", "compact", NULL },
					errstr, sizeof(errstr)),
			 0);
	described d;

	/* AlterConfigs replaces the whole set: cleanup.policy goes back to
	 * its default. */
	ck_assert_int_eq(alter(p, TOPIC, t, (const char *const[]){ "retention.ms", "7200000",
								     "segment.ms", "600000", NULL },
			       0, errstr, sizeof(errstr)),
			 0);
	describe(p, TOPIC, t, &d);
	expect(&d, "retention.ms", "7200000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "segment.ms", "600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "cleanup.policy", "delete", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);

	/* An invalid value: INVALID_CONFIG with Kafka's message, nothing
	 * changed (not even the valid key beside it). */
	rd_kafka_resp_err_t err = alter(p, TOPIC, t,
					(const char *const[]){ "retention.ms", "1", "segment.bytes",
							       "abc", NULL },
					0, errstr, sizeof(errstr));
	ck_assert_int_eq(err, RD_KAFKA_RESP_ERR_INVALID_CONFIG);
	ck_assert_msg(strstr(errstr, "segment.bytes"), "message: %s", errstr);
	err = alter(p, TOPIC, t, (const char *const[]){ "no.such.config", "1", NULL }, 0, errstr,
		    sizeof(errstr));
	ck_assert_int_eq(err, RD_KAFKA_RESP_ERR_INVALID_CONFIG);
	/* validate_only: accepted, nothing changed */
	ck_assert_int_eq(alter(p, TOPIC, t, (const char *const[]){ "retention.ms", "5", NULL }, 1,
			       errstr, sizeof(errstr)),
			 0);
	describe(p, TOPIC, t, &d);
	expect(&d, "retention.ms", "7200000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "segment.ms", "600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	err = alter(p, TOPIC, "cfg-no-such-topic", (const char *const[]){ "retention.ms", "5", NULL },
		    0, errstr, sizeof(errstr));
	ck_assert_int_eq(err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);

	/* IncrementalAlterConfigs: SET, APPEND to the default, DELETE. */
	char msg[256];
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "segment.bytes", SET, "2097152" },
						    { "cleanup.policy", APPEND, "compact" },
						    { "segment.ms", DELETE, NULL },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	describe(p, TOPIC, t, &d);
	expect(&d, "segment.bytes", "2097152", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "cleanup.policy", "delete,compact", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "segment.ms", "604800000", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "retention.ms", "7200000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "cleanup.policy", SUBTRACT, "delete" },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	describe(p, TOPIC, t, &d);
	expect(&d, "cleanup.policy", "compact", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);

	/* Refused, all or nothing: an invalid value beside a valid SET. */
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "retention.ms", SET, "1000" },
						    { "min.cleanable.dirty.ratio", SET, "1.5" },
						    { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_CONFIG);
	ck_assert_msg(strstr(msg, "min.cleanable.dirty.ratio"), "message: %s", msg);
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "retention.ms", APPEND, "5" }, { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_CONFIG);
	ck_assert_str_eq(msg, "Can't APPEND to key retention.ms because its type is not LIST.");
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "retention.ms", SET, "1000" }, { NULL, 0, NULL } },
				      1, msg),
			 0);
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "retention.ms", SET, NULL }, { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	/* The same resource twice: INVALID_REQUEST for both. */
	const op one[] = { { "retention.ms", SET, "1000" }, { NULL, 0, NULL } };
	iac_resource twice[2] = { { TOPIC, t, one }, { TOPIC, t, one } };
	int16_t errs[2];
	incremental(b->port, twice, 2, 0, errs, NULL);
	ck_assert_int_eq(errs[0], RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	ck_assert_int_eq(errs[1], RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	describe(p, TOPIC, t, &d);
	expect(&d, "retention.ms", "7200000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "min.cleanable.dirty.ratio", "0.5", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
	expect(&d, "cleanup.policy", "compact", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);

	/* Everything survives a restart. */
	rd_kafka_destroy(p);
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(30000)), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	p = c_producer(b, NULL);
	describe(p, TOPIC, t, &d);
	expect(&d, "retention.ms", "7200000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "segment.bytes", "2097152", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "cleanup.policy", "compact", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	expect(&d, "segment.ms", "604800000", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);

	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

START_TEST(test_applies_at_once)
{
	h_broker *b = c_start_broker(NULL);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "linger.ms", "0", NULL });
	const char *t = "cfg-live", *t2 = "cfg-live-default";
	char errstr[512];
	ck_assert_int_eq(c_create_topic(p, t, 1, 1, NULL, errstr, sizeof(errstr)), 0);
	ck_assert_int_eq(c_create_topic(p, t2, 1, 1, NULL, errstr, sizeof(errstr)), 0);
	c_wait_topic(p, t, 1, h_scaled_ms(10000));
	c_wait_topic(p, t2, 1, h_scaled_ms(10000));
	ck_assert_int_eq(produce_len(p, t, 4000), 0);

	/* A topic override: max.message.bytes lowered, the next batch of
	 * 4000 bytes is too large. */
	char msg[256];
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "max.message.bytes", SET, "1024" },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	ck_assert_int_eq(produce_len(p, t, 4000), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert_int_eq(produce_len(p, t, 100), 0);

	/* segment.bytes lowered to 1 MiB: 3 MiB more make new segments. */
	ck_assert_int_eq(count_segments(b, t), 1);
	ck_assert_int_eq(incremental1(b->port, TOPIC, t,
				      (const op[]){ { "segment.bytes", SET, "1048576" },
						    { "max.message.bytes", DELETE, NULL },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	for (int i = 0; i < 48; i++)
		ck_assert_int_eq(produce_len(p, t, 65536), 0);
	ck_assert_int_ge(count_segments(b, t), 3);

	/* A dynamic broker config on this broker (AdminClient, BROKER "0"):
	 * topics without an override follow at once. */
	ck_assert_int_eq(produce_len(p, t2, 4000), 0);
	ck_assert_int_eq(alter(p, BROKER, "0", (const char *const[]){ "message.max.bytes", "2048", NULL },
			       0, errstr, sizeof(errstr)),
			 0);
	ck_assert_int_eq(produce_len(p, t2, 4000), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	described d;
	describe(p, TOPIC, t2, &d);
	expect(&d, "max.message.bytes", "2048", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
	describe(p, BROKER, "0", &d);
	expect(&d, "message.max.bytes", "2048", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);

	/* The cluster-wide default (BROKER ""), below the per-broker value. */
	ck_assert_int_eq(incremental1(b->port, BROKER, "",
				      (const op[]){ { "log.retention.ms", SET, "3600000" },
						    { "message.max.bytes", SET, "3000" },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	describe(p, TOPIC, t2, &d);
	expect(&d, "retention.ms", "3600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	expect(&d, "max.message.bytes", "2048", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);

	/* The cleaner's keys change at runtime too (LogCleaner's
	 * reconfigurable configs). */
	ck_assert_int_eq(incremental1(b->port, BROKER, "0",
				      (const op[]){ { "log.cleaner.backoff.ms", SET, "1234" },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	describe(p, BROKER, "0", &d);
	expect(&d, "log.cleaner.backoff.ms", "1234", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);

	/* Keys that cannot change at runtime, another broker id, bad values. */
	ck_assert_int_eq(incremental1(b->port, BROKER, "0",
				      (const op[]){ { "listeners", SET, "PLAINTEXT://:1" },
						    { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	ck_assert_str_eq(msg, "Cannot update these configs dynamically: [listeners]");
	ck_assert_int_eq(incremental1(b->port, BROKER, "7",
				      (const op[]){ { "message.max.bytes", SET, "1" }, { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_REQUEST);
	ck_assert_int_eq(incremental1(b->port, BROKER, "0",
				      (const op[]){ { "message.max.bytes", SET, "many" },
						    { NULL, 0, NULL } },
				      0, msg),
			 RD_KAFKA_RESP_ERR_INVALID_REQUEST);

	/* Dynamic broker configs survive a restart. */
	rd_kafka_destroy(p);
	ck_assert_int_eq(h_broker_stop(b, h_scaled_ms(30000)), 0);
	ck_assert_int_eq(h_broker_restart(b), 0);
	p = c_producer(b, (const char *const[]){ "linger.ms", "0", NULL });
	describe(p, TOPIC, t2, &d);
	expect(&d, "retention.ms", "3600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	expect(&d, "max.message.bytes", "2048", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
	ck_assert_int_eq(produce_len(p, t2, 4000), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	/* Removing the per-broker value: the cluster default applies. */
	ck_assert_int_eq(incremental1(b->port, BROKER, "0",
				      (const op[]){ { "message.max.bytes", DELETE, NULL },
						    { NULL, 0, NULL } },
				      0, msg),
			 0);
	describe(p, TOPIC, t2, &d);
	expect(&d, "max.message.bytes", "3000",
	       RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	ck_assert_int_eq(produce_len(p, t2, 2500), 0);

	rd_kafka_destroy(p);
	c_stop_broker(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("configs");
	TCase *tc = tcase_create("configs");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_describe_sources);
	tcase_add_test(tc, test_alter_and_incremental);
	tcase_add_test(tc, test_applies_at_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return c_run_suite(suite());
}
