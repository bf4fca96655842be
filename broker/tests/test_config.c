/*
 * test_config.c - server.properties parsing: Kafka's defaults, overrides,
 * synonyms and their precedence, bad values, listener syntax, and the
 * properties file format (comments, separators, continuations, escapes).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config.h"

static brk_config cfg;
static char err[512];

/* Set key=value; returns the result. Warnings go to a scratch file whose
 * content is returned in warnbuf. */
static char warnbuf[1024];
static int set(const char *key, const char *value)
{
	FILE *w = tmpfile();
	ck_assert_ptr_nonnull(w);
	err[0] = '\0';
	int rc = brk_config_set(&cfg, key, value, w, err, sizeof(err));
	rewind(w);
	size_t n = fread(warnbuf, 1, sizeof(warnbuf) - 1, w);
	warnbuf[n] = '\0';
	fclose(w);
	return rc;
}

static void setup(void) { brk_config_defaults(&cfg); }

/* Write text to a temporary file and load it; returns the result. */
static int load_text(const char *text)
{
	char path[] = "/tmp/samsa-test-config-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	size_t len = strlen(text);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	FILE *w = tmpfile();
	err[0] = '\0';
	int rc = brk_config_load(&cfg, path, w, err, sizeof(err));
	rewind(w);
	size_t n = fread(warnbuf, 1, sizeof(warnbuf) - 1, w);
	warnbuf[n] = '\0';
	fclose(w);
	unlink(path);
	return rc;
}

START_TEST(test_defaults)
{
	ck_assert_int_eq(cfg.nlisteners, 1);
	ck_assert_str_eq(cfg.listeners[0].name, "PLAINTEXT");
	ck_assert_str_eq(cfg.listeners[0].host, "");
	ck_assert_int_eq(cfg.listeners[0].port, 9092);
	ck_assert_str_eq(cfg.log_dir, "/tmp/kafka-logs");
	ck_assert_int_eq(cfg.broker_id, 0);
	ck_assert_int_eq(cfg.num_partitions, 1);
	ck_assert_int_eq(cfg.default_replication_factor, 1);
	ck_assert(cfg.auto_create_topics_enable);
	ck_assert(cfg.delete_topic_enable);
	ck_assert_int_eq(cfg.log_segment_bytes, 1073741824);
	ck_assert_int_eq(cfg.log_roll_ms, 168LL * 3600 * 1000);
	ck_assert_int_eq(cfg.log_index_interval_bytes, 4096);
	ck_assert_int_eq(cfg.log_index_size_max_bytes, 10485760);
	ck_assert_int_eq(cfg.message_max_bytes, 1048588);
	ck_assert_int_eq(cfg.socket_request_max_bytes, 104857600);
	ck_assert_int_eq(cfg.log_flush_interval_messages, INT64_MAX);
	ck_assert_int_eq(cfg.log_flush_scheduler_interval_ms, INT64_MAX);
	ck_assert_int_eq(cfg.log_flush_interval_ms, INT64_MAX);
	ck_assert(!cfg.log_append_time);
	ck_assert_int_eq(cfg.log_message_timestamp_before_max_ms, INT64_MAX);
	ck_assert_int_eq(cfg.log_message_timestamp_after_max_ms, 3600000);
	ck_assert_int_eq(cfg.log_retention_ms, 168LL * 3600 * 1000);
	ck_assert_int_eq(cfg.log_retention_bytes, -1);
	ck_assert_int_eq(cfg.log_retention_check_interval_ms, 300000);
	ck_assert_int_eq(cfg.min_insync_replicas, 1);
	ck_assert_int_eq(cfg.socket_send_buffer_bytes, 102400);
	ck_assert_int_eq(cfg.socket_receive_buffer_bytes, 102400);
	ck_assert_int_eq(cfg.group_initial_rebalance_delay_ms, 3000);
	ck_assert_int_eq(cfg.offsets_topic_num_partitions, 50);
	ck_assert_int_eq(cfg.offsets_topic_replication_factor, 3);
	ck_assert_int_eq(cfg.group_min_session_timeout_ms, 6000);
	ck_assert_int_eq(cfg.group_max_session_timeout_ms, 1800000);
	ck_assert_int_eq(cfg.group_max_size, INT32_MAX);
	ck_assert_int_eq(cfg.offsets_topic_segment_bytes, 104857600);
	ck_assert_int_eq(cfg.offset_metadata_max_bytes, 4096);
	ck_assert_int_eq(cfg.offsets_retention_minutes, 10080);
	ck_assert_int_eq(cfg.offsets_retention_check_interval_ms, 600000);
	ck_assert_int_eq(cfg.transaction_state_log_replication_factor, 3);
	ck_assert_int_eq(cfg.transaction_state_log_min_isr, 2);
	ck_assert_str_eq(cfg.zookeeper_connect, "");
	ck_assert_int_eq(cfg.zookeeper_connection_timeout_ms, 18000);
	/* finish: advertised defaults to listeners */
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.nadvertised, 1);
	ck_assert_str_eq(cfg.advertised[0].name, "PLAINTEXT");
	ck_assert_int_eq(cfg.advertised[0].port, 9092);
	/* log.max.open.files: -1 (from the open file limit) or at least 1 */
	cfg.log_max_open_files = 0;
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "log.max.open.files") != NULL, "%s", err);
}
END_TEST

START_TEST(test_simple_keys)
{
	ck_assert_int_eq(set("num.partitions", " 12 "), 0);
	ck_assert_int_eq(cfg.num_partitions, 12);
	ck_assert_int_eq(set("auto.create.topics.enable", "FALSE"), 0);
	ck_assert(!cfg.auto_create_topics_enable);
	ck_assert_int_eq(set("delete.topic.enable", "false"), 0);
	ck_assert(!cfg.delete_topic_enable);
	ck_assert_int_eq(set("log.segment.bytes", "1048576"), 0);
	ck_assert_int_eq(cfg.log_segment_bytes, 1048576);
	ck_assert_int_eq(set("message.max.bytes", "2000000"), 0);
	ck_assert_int_eq(cfg.message_max_bytes, 2000000);
	ck_assert_int_eq(set("log.message.timestamp.type", "LogAppendTime"), 0);
	ck_assert(cfg.log_append_time);
	ck_assert_int_eq(set("log.message.timestamp.type", "CreateTime"), 0);
	ck_assert(!cfg.log_append_time);
	ck_assert_int_eq(set("offsets.topic.replication.factor", "1"), 0);
	ck_assert_int_eq(cfg.offsets_topic_replication_factor, 1);
	ck_assert_int_eq(set("group.min.session.timeout.ms", "100"), 0);
	ck_assert_int_eq(cfg.group_min_session_timeout_ms, 100);
	ck_assert_int_eq(set("group.max.session.timeout.ms", "60000"), 0);
	ck_assert_int_eq(cfg.group_max_session_timeout_ms, 60000);
	ck_assert_int_eq(set("group.initial.rebalance.delay.ms", "0"), 0);
	ck_assert_int_eq(cfg.group_initial_rebalance_delay_ms, 0);
	ck_assert_int_eq(set("group.max.size", "3"), 0);
	ck_assert_int_eq(cfg.group_max_size, 3);
	ck_assert_int_eq(set("group.max.size", "0"), -1); /* atLeast(1) */
	ck_assert_int_eq(cfg.group_max_size, 3);
	ck_assert_int_eq(cfg.max_request_partition_size_limit, 2000);
	ck_assert_int_eq(set("max.request.partition.size.limit", "5"), 0);
	ck_assert_int_eq(cfg.max_request_partition_size_limit, 5);
	ck_assert_int_eq(set("max.request.partition.size.limit", "0"), -1); /* atLeast(1) */
	ck_assert_int_eq(set("offsets.topic.segment.bytes", "1048576"), 0);
	ck_assert_int_eq(cfg.offsets_topic_segment_bytes, 1048576);
	ck_assert_int_eq(set("offset.metadata.max.bytes", "10"), 0);
	ck_assert_int_eq(cfg.offset_metadata_max_bytes, 10);
	ck_assert_int_eq(set("offsets.retention.minutes", "2"), 0);
	ck_assert_int_eq(cfg.offsets_retention_minutes, 2);
	ck_assert_int_eq(set("offsets.retention.minutes", "0"), -1); /* atLeast(1) */
	ck_assert_int_eq(set("offsets.retention.check.interval.ms", "1000"), 0);
	ck_assert_int_eq(cfg.offsets_retention_check_interval_ms, 1000);
	ck_assert_int_eq(set("transaction.state.log.min.isr", "1"), 0);
	ck_assert_int_eq(cfg.transaction_state_log_min_isr, 1);
	ck_assert_int_eq(set("socket.send.buffer.bytes", "-1"), 0);
	ck_assert_int_eq(cfg.socket_send_buffer_bytes, -1);
	ck_assert_int_eq(set("log.retention.bytes", "-5"), 0);
	ck_assert_int_eq(cfg.log_retention_bytes, -5);
	ck_assert_int_eq(cfg.log_max_open_files, -1);
	ck_assert_int_eq(set("log.max.open.files", "500"), 0);
	ck_assert_int_eq(cfg.log_max_open_files, 500);
	ck_assert_int_eq(set("log.max.open.files", "-2"), -1); /* -1 or >= 1 */
	ck_assert_int_eq(set("zookeeper.connect", " zk1:2181,zk2:2181/kafka "), 0);
	ck_assert_str_eq(cfg.zookeeper_connect, "zk1:2181,zk2:2181/kafka");
	ck_assert_int_eq(set("log.dirs", " /var/a , /var/b"), 0);
	ck_assert_str_eq(cfg.log_dir, "/var/a");
	ck_assert_msg(strstr(warnbuf, "only the first") != NULL, "no warning for a second log dir");
}
END_TEST

START_TEST(test_synonyms)
{
	/* log.roll.ms beats log.roll.hours in either order. */
	ck_assert_int_eq(set("log.roll.ms", "5000"), 0);
	ck_assert_int_eq(set("log.roll.hours", "2"), 0);
	ck_assert_int_eq(cfg.log_roll_ms, 5000);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("log.roll.hours", "2"), 0);
	ck_assert_int_eq(cfg.log_roll_ms, 2 * 3600000LL);
	ck_assert_int_eq(set("log.roll.ms", "7000"), 0);
	ck_assert_int_eq(cfg.log_roll_ms, 7000);

	/* log.retention.ms > minutes > hours, order-independent. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("log.retention.hours", "1"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 3600000);
	ck_assert_int_eq(set("log.retention.minutes", "3"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 180000);
	ck_assert_int_eq(set("log.retention.hours", "5"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 180000);
	ck_assert_int_eq(set("log.retention.ms", "1234"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 1234);
	ck_assert_int_eq(set("log.retention.minutes", "9"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 1234);
	/* Negative: no time limit. */
	ck_assert_int_eq(set("log.retention.ms", "-1"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, -1);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("log.retention.hours", "-1"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, -1);

	/* log.flush.interval.ms follows the scheduler interval unless set. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("log.flush.scheduler.interval.ms", "2000"), 0);
	ck_assert_int_eq(cfg.log_flush_interval_ms, 2000);
	ck_assert_int_eq(set("log.flush.interval.ms", "500"), 0);
	ck_assert_int_eq(set("log.flush.scheduler.interval.ms", "3000"), 0);
	ck_assert_int_eq(cfg.log_flush_interval_ms, 500);
	ck_assert_int_eq(cfg.log_flush_scheduler_interval_ms, 3000);

	/* log.dirs beats log.dir in either order. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("log.dir", "/one"), 0);
	ck_assert_str_eq(cfg.log_dir, "/one");
	ck_assert_int_eq(set("log.dirs", "/two"), 0);
	ck_assert_int_eq(set("log.dir", "/three"), 0);
	ck_assert_str_eq(cfg.log_dir, "/two");

	/* broker.id and node.id */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("node.id", "4"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.broker_id, 4);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("broker.id", "5"), 0);
	ck_assert_int_eq(set("node.id", "5"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.broker_id, 5);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("node.id", "6"), 0);
	ck_assert_int_eq(set("broker.id", "7"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "node.id") != NULL, "message: %s", err);

	/* zookeeper.connect: ZooKeeper's connect string and chroot rules. */
	static const char *const zk_good[] = { "zk1:2181,zk2:2181/kafka", "127.0.0.1:2181",
					       "zk", "zk:2181/", "h:1/a/b.c" };
	for (size_t i = 0; i < sizeof(zk_good) / sizeof(zk_good[0]); i++) {
		brk_config_defaults(&cfg);
		ck_assert_int_eq(set("zookeeper.connect", zk_good[i]), 0);
		ck_assert_msg(brk_config_finish(&cfg, err, sizeof(err)) == 0, "%s refused: %s",
			      zk_good[i], err);
	}
	static const char *const zk_bad[] = { "127.0.0.1:2181/samsa/", "/kafka", "zk:2181,",
					      ",zk:2181", "zk:", "zk:0", "zk:70000", "zk:21x",
					      "zk:2181//a", "zk:2181/a/../b", "zk:2181/a/." };
	for (size_t i = 0; i < sizeof(zk_bad) / sizeof(zk_bad[0]); i++) {
		brk_config_defaults(&cfg);
		ck_assert_int_eq(set("zookeeper.connect", zk_bad[i]), 0);
		ck_assert_msg(brk_config_finish(&cfg, err, sizeof(err)) == -1, "%s accepted",
			      zk_bad[i]);
		ck_assert_msg(strstr(err, "zookeeper.connect") != NULL, "message: %s", err);
	}
	ck_assert_msg(strstr(err, "\"/a/.\"") != NULL, "message: %s", err);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("zookeeper.connect", "127.0.0.1:2181/samsa/"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "must not end with '/'") != NULL, "message: %s", err);
}
END_TEST

START_TEST(test_bad_values)
{
	static const char *const bad[][2] = {
		{ "num.partitions", "abc" },
		{ "num.partitions", "" },
		{ "num.partitions", "0" },
		{ "num.partitions", "1.5" },
		{ "num.partitions", "0x10" },
		{ "num.partitions", "2147483648" },
		{ "default.replication.factor", "40000" },
		{ "log.segment.bytes", "1000" },
		{ "log.segment.bytes", "4294967296" },
		{ "message.max.bytes", "-1" },
		{ "socket.request.max.bytes", "0" },
		{ "log.roll.hours", "0" },
		{ "log.roll.ms", "0" },
		{ "log.retention.ms", "99999999999999999999" },
		{ "log.message.timestamp.type", "createtime" },
		{ "log.message.timestamp.type", "Nope" },
		{ "auto.create.topics.enable", "yes" },
		{ "broker.id", "-1" },
		{ "node.id", "x" },
		{ "min.insync.replicas", "0" },
		{ "log.flush.interval.messages", "0" },
		{ "log.dirs", " , " },
		{ "listeners", "" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brk_config_defaults(&cfg);
		brk_config before = cfg;
		ck_assert_msg(set(bad[i][0], bad[i][1]) == -1, "%s=%s accepted", bad[i][0], bad[i][1]);
		ck_assert_msg(strstr(err, bad[i][0]) != NULL, "%s=%s: message does not name the key: %s",
			      bad[i][0], bad[i][1], err);
		ck_assert_msg(cfg.num_partitions == before.num_partitions &&
				      cfg.log_segment_bytes == before.log_segment_bytes &&
				      cfg.broker_id == before.broker_id,
			      "%s=%s changed the config", bad[i][0], bad[i][1]);
	}
}
END_TEST

START_TEST(test_unknown_keys)
{
	ck_assert_int_eq(set("no.such.key", "1"), 0);
	ck_assert_msg(strstr(warnbuf, "no.such.key") != NULL, "no warning: '%s'", warnbuf);
	/* Kafka keys without effect here: silent. */
	static const char *const silent[] = {
		"num.network.threads", "num.io.threads", "socket.listen.backlog.size",
		"num.replica.alter.log.dirs.threads", "offsets.commit.timeout.ms",
		"transaction.max.timeout.ms", "log.retention.check.interval.ms",
		"zookeeper.session.timeout.ms", "group.consumer.session.timeout.ms",
		"listener.security.protocol.map", "process.roles", "controller.quorum.voters",
	};
	for (size_t i = 0; i < sizeof(silent) / sizeof(silent[0]); i++) {
		ck_assert_int_eq(set(silent[i], "3"), 0);
		ck_assert_msg(warnbuf[0] == '\0', "%s warned: %s", silent[i], warnbuf);
	}
	/* Known-but-stored keys still validate. */
	ck_assert_int_eq(set("num.io.threads", "0"), -1);
}
END_TEST

START_TEST(test_listeners)
{
	ck_assert_int_eq(set("listeners", "PLAINTEXT://127.0.0.1:9093, internal://[::1]:0,X://:9000"), 0);
	ck_assert_int_eq(cfg.nlisteners, 3);
	ck_assert_str_eq(cfg.listeners[0].name, "PLAINTEXT");
	ck_assert_str_eq(cfg.listeners[0].host, "127.0.0.1");
	ck_assert_int_eq(cfg.listeners[0].port, 9093);
	ck_assert_str_eq(cfg.listeners[1].name, "INTERNAL");
	ck_assert_str_eq(cfg.listeners[1].host, "::1");
	ck_assert_int_eq(cfg.listeners[1].port, 0);
	ck_assert_str_eq(cfg.listeners[2].host, "");
	ck_assert_int_eq(cfg.listeners[2].port, 9000);

	static const char *const bad[] = {
		"127.0.0.1:9092",                 /* no name */
		"PLAINTEXT://127.0.0.1",          /* no port */
		"PLAINTEXT://127.0.0.1:99999",    /* port out of range */
		"PLAINTEXT://127.0.0.1:-1",
		"PLAINTEXT://127.0.0.1:abc",
		"PLAINTEXT://host name:9092",     /* space in host */
		"PLAINTEXT://a:1,PLAINTEXT://b:2", /* name twice */
		"A://a:1,B://b:1",                /* port twice */
		"://a:1",
		"A://a:1,B://b:2,C://c:3,D://d:4,E://e:5", /* too many */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brk_config_defaults(&cfg);
		ck_assert_msg(set("listeners", bad[i]) == -1, "listeners=%s accepted", bad[i]);
		ck_assert_msg(strstr(err, "listeners") != NULL, "message: %s", err);
		ck_assert_int_eq(cfg.listeners[0].port, 9092);
	}

	/* advertised.listeners: defaults to listeners; names must exist; no
	 * meta-address. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("listeners", "PLAINTEXT://0.0.0.0:9092"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "0.0.0.0") != NULL, "message: %s", err);
	ck_assert_int_eq(set("advertised.listeners", "PLAINTEXT://broker1.example:9092"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.advertised[0].host, "broker1.example");
	ck_assert_int_eq(set("advertised.listeners", "OTHER://h:1"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "OTHER") != NULL, "message: %s", err);

	/* Every protocol is served. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("listeners", "SSL://127.0.0.1:9093"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.listeners[0].security_protocol, BRK_SEC_SSL);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("listeners", "SASL_SSL://127.0.0.1:9093"), 0);
	ck_assert_msg(brk_config_finish(&cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg.listeners[0].security_protocol, BRK_SEC_SASL_SSL);
}
END_TEST

/* listener.security.protocol.map and the security keys kept per listener
 * (Kafka's ListenerName.configPrefix). */
START_TEST(test_security_keys)
{
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("listeners", "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "INTERNAL") != NULL, "message: %s", err);
	ck_assert_int_eq(set("listener.security.protocol.map", "INTERNAL:PLAINTEXT, PLAINTEXT:PLAINTEXT"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.listeners[1].security_protocol, BRK_SEC_PLAINTEXT);
	ck_assert_int_eq(cfg.advertised[1].security_protocol, BRK_SEC_PLAINTEXT);
	ck_assert_int_eq(set("listener.security.protocol.map", "INTERNAL:SASL_SSL"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.listeners[1].security_protocol, BRK_SEC_SASL_SSL);
	ck_assert_int_eq(set("listener.security.protocol.map", "INTERNAL:TLS"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "TLS") != NULL, "message: %s", err);

	ck_assert_ptr_null(brk_config_security_get(&cfg, "INTERNAL", "ssl.keystore.location"));
	ck_assert_int_eq(set("ssl.keystore.location", "/a"), 0);
	ck_assert_str_eq(brk_config_security_get(&cfg, "INTERNAL", "ssl.keystore.location"), "/a");
	ck_assert_int_eq(set("listener.name.internal.ssl.keystore.location", "/b"), 0);
	ck_assert_str_eq(brk_config_security_get(&cfg, "INTERNAL", "ssl.keystore.location"), "/b");
	ck_assert_str_eq(brk_config_security_get(&cfg, "PLAINTEXT", "ssl.keystore.location"), "/a");
	ck_assert_str_eq(brk_config_security_get(&cfg, NULL, "ssl.keystore.location"), "/a");
	ck_assert_int_eq(set("ssl.keystore.location", "/c"), 0); /* the last setting wins */
	ck_assert_str_eq(brk_config_security_get(&cfg, "PLAINTEXT", "ssl.keystore.location"), "/c");
	ck_assert_str_eq(brk_security_protocol_name(BRK_SEC_SASL_PLAINTEXT), "SASL_PLAINTEXT");
}
END_TEST

START_TEST(test_file)
{
	const char *text =
		"# a comment\n"
		"   ! another comment = not.a.key\n"
		"\n"
		"broker.id=3\n"
		"num.partitions : 4\n"
		"log.dirs /data/one\n"
		"listeners=PLAINTEXT://127.0.0.1:9095,\\\n"
		"          OTHER://127.0.0.1:9096\n"
		"log.retention.hours=1\r\n"
		"log.retention.minutes=2\r"
		"message.max.bytes = 1\\\n"
		"  000\n"
		"zookeeper.connect=a\\:1\\u0041\n"
		"# continuation is not read for comments \\\n"
		"num.io.threads=5\n"
		"log.message.timestamp.type=LogAppendTime";
	ck_assert_int_eq(load_text(text), 0);
	ck_assert_str_eq(warnbuf, "");
	ck_assert_int_eq(cfg.broker_id, 3);
	ck_assert_int_eq(cfg.num_partitions, 4);
	ck_assert_str_eq(cfg.log_dir, "/data/one");
	ck_assert_int_eq(cfg.nlisteners, 2);
	ck_assert_str_eq(cfg.listeners[1].name, "OTHER");
	ck_assert_int_eq(cfg.listeners[1].port, 9096);
	ck_assert_int_eq(cfg.log_retention_ms, 120000);
	ck_assert_int_eq(cfg.message_max_bytes, 1000);
	ck_assert_str_eq(cfg.zookeeper_connect, "a:1A");
	ck_assert_int_eq(cfg.num_io_threads, 5);
	ck_assert(cfg.log_append_time);
}
END_TEST

START_TEST(test_file_errors)
{
	ck_assert_int_eq(load_text("broker.id=1\nnum.partitions=zero\n"), -1);
	ck_assert_msg(strstr(err, ":2:") != NULL && strstr(err, "num.partitions") != NULL,
		      "message: %s", err);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(load_text("zookeeper.connect=\\u12\n"), -1);
	ck_assert_msg(strstr(err, "\\u") != NULL, "message: %s", err);
	brk_config_defaults(&cfg);
	ck_assert_int_eq(brk_config_load(&cfg, "/nonexistent/samsa.properties", stderr, err,
					 sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "/nonexistent/samsa.properties") != NULL, "message: %s", err);
	/* An unknown key in a file: warned, accepted. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(load_text("made.up.key=1\n"), 0);
	ck_assert_msg(strstr(warnbuf, "made.up.key") != NULL, "warning: %s", warnbuf);
}
END_TEST

/* The key table: every default parses with its key's own parser and
 * formats back as written (what DescribeConfigs shows as the default is
 * what brk_config_defaults set), and a key with no default has no value
 * of its own unless set. */
START_TEST(test_table_defaults)
{
	char v[BRK_CONFIG_VALUE_MAX];
	ck_assert_int_gt(brk_config_key_count(), 80);
	for (int i = 0; i < brk_config_key_count(); i++) {
		const brk_config_key *k = brk_config_key_at(i);
		ck_assert_msg(k->doc && k->doc[0], "%s has no documentation", k->name);
		ck_assert(brk_config_format(&cfg, k->name, v, sizeof(v)));
		if (!k->dflt)
			continue;
		ck_assert_msg(strcmp(v, k->dflt) == 0, "%s: default %s but formats as %s", k->name,
			      k->dflt, v);
		brk_config c;
		brk_config_defaults(&c);
		ck_assert_msg(brk_config_set(&c, k->name, k->dflt, NULL, err, sizeof(err)) == 0,
			      "%s: default %s refused: %s", k->name, k->dflt, err);
		ck_assert(brk_config_format(&c, k->name, v, sizeof(v)));
		ck_assert_str_eq(v, k->dflt);
		ck_assert(brk_config_was_given(&c, k->name));
		ck_assert(!brk_config_was_given(&cfg, k->name));
	}
	/* A default does not count as a setting in a synonym group:
	 * log.retention.hours' default leaves log.retention.minutes free. */
	ck_assert_int_eq(set("log.retention.minutes", "2"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 120000);
	ck_assert_int_eq(set("log.retention.hours", "168"), 0);
	ck_assert_int_eq(cfg.log_retention_ms, 120000);
}
END_TEST

/* Cluster mode keys: Kafka 3.x's names, defaults and validators. */
START_TEST(test_cluster_keys)
{
	ck_assert_int_eq(cfg.zookeeper_session_timeout_ms, 18000);
	ck_assert(!cfg.zookeeper_set_acl);
	ck_assert_str_eq(cfg.broker_rack, "");
	ck_assert_int_eq(cfg.request_timeout_ms, 30000);
	ck_assert_int_eq(cfg.controller_socket_timeout_ms, 30000);
	ck_assert_int_eq(cfg.replica_lag_time_max_ms, 30000);
	ck_assert_int_eq(cfg.replica_socket_timeout_ms, 30000);
	ck_assert_int_eq(cfg.replica_socket_receive_buffer_bytes, 65536);
	ck_assert_int_eq(cfg.replica_fetch_max_bytes, 1048576);
	ck_assert_int_eq(cfg.replica_fetch_wait_max_ms, 500);
	ck_assert_int_eq(cfg.replica_fetch_min_bytes, 1);
	ck_assert_int_eq(cfg.replica_fetch_response_max_bytes, 10485760);
	ck_assert_int_eq(cfg.replica_fetch_backoff_ms, 1000);
	ck_assert_int_eq(cfg.num_replica_fetchers, 1);
	ck_assert_int_eq(cfg.replica_high_watermark_checkpoint_interval_ms, 5000);
	ck_assert_int_eq(cfg.log_flush_offset_checkpoint_interval_ms, 60000);
	ck_assert_int_eq(cfg.log_flush_start_offset_checkpoint_interval_ms, 60000);
	ck_assert_int_eq(cfg.num_recovery_threads_per_data_dir, 2);
	ck_assert(cfg.controlled_shutdown_enable);
	ck_assert_int_eq(cfg.controlled_shutdown_max_retries, 3);
	ck_assert_int_eq(cfg.controlled_shutdown_retry_backoff_ms, 5000);
	ck_assert(cfg.auto_leader_rebalance_enable);
	ck_assert_int_eq(cfg.leader_imbalance_check_interval_seconds, 300);
	ck_assert_int_eq(cfg.leader_imbalance_per_broker_percentage, 10);
	ck_assert_int_eq(cfg.offsets_commit_timeout_ms, 5000);
	ck_assert(!cfg.unclean_leader_election_enable);
	ck_assert(cfg.delete_topic_enable);

	/* CLUSTER.md's test settings. */
	static const char *const fast[][2] = {
		{ "zookeeper.session.timeout.ms", "4000" },
		{ "replica.lag.time.max.ms", "3000" },
		{ "replica.fetch.wait.max.ms", "100" },
		{ "leader.imbalance.check.interval.seconds", "5" },
		{ "controlled.shutdown.retry.backoff.ms", "500" },
		{ "replica.high.watermark.checkpoint.interval.ms", "1000" },
		{ "log.flush.offset.checkpoint.interval.ms", "500" },
		{ "log.flush.start.offset.checkpoint.interval.ms", "0" },
		{ "num.recovery.threads.per.data.dir", "8" },
		{ "broker.rack", " rack-a " },
		{ "num.replica.fetchers", "2" },
		{ "auto.leader.rebalance.enable", "false" },
		{ "zookeeper.set.acl", "true" },
	};
	for (size_t i = 0; i < sizeof(fast) / sizeof(fast[0]); i++)
		ck_assert_msg(set(fast[i][0], fast[i][1]) == 0 && warnbuf[0] == '\0', "%s=%s: %s %s",
			      fast[i][0], fast[i][1], err, warnbuf);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.zookeeper_session_timeout_ms, 4000);
	ck_assert_int_eq(cfg.replica_lag_time_max_ms, 3000);
	ck_assert_int_eq(cfg.replica_fetch_wait_max_ms, 100);
	ck_assert_int_eq(cfg.leader_imbalance_check_interval_seconds, 5);
	ck_assert_int_eq(cfg.controlled_shutdown_retry_backoff_ms, 500);
	ck_assert_int_eq(cfg.replica_high_watermark_checkpoint_interval_ms, 1000);
	ck_assert_int_eq(cfg.log_flush_offset_checkpoint_interval_ms, 500);
	ck_assert_int_eq(cfg.log_flush_start_offset_checkpoint_interval_ms, 0);
	ck_assert_int_eq(cfg.num_recovery_threads_per_data_dir, 8);
	ck_assert_str_eq(cfg.broker_rack, "rack-a");
	ck_assert_int_eq(cfg.num_replica_fetchers, 2);
	ck_assert(!cfg.auto_leader_rebalance_enable);
	ck_assert(cfg.zookeeper_set_acl);

	/* Kafka's validators, and ours where Kafka has none. */
	static const char *const bad[][2] = {
		{ "offsets.commit.timeout.ms", "0" },
		{ "leader.imbalance.check.interval.seconds", "0" },
		{ "replica.fetch.backoff.ms", "-1" },
		{ "replica.fetch.max.bytes", "-1" },
		{ "replica.fetch.response.max.bytes", "-1" },
		{ "num.replica.fetchers", "0" },
		{ "replica.high.watermark.checkpoint.interval.ms", "0" },
		{ "log.flush.offset.checkpoint.interval.ms", "-1" },
		{ "num.recovery.threads.per.data.dir", "0" },
		{ "replica.socket.receive.buffer.bytes", "-2" },
		{ "controlled.shutdown.enable", "maybe" },
		{ "zookeeper.session.timeout.ms", "x" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(set(bad[i][0], bad[i][1]) == -1, "%s=%s accepted", bad[i][0], bad[i][1]);
		ck_assert_msg(strstr(err, bad[i][0]) != NULL, "message: %s", err);
	}

	/* zookeeper.connection.timeout.ms follows the session timeout unless
	 * set, in either order (Kafka: null, then zookeeper.session.timeout.ms). */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(cfg.zookeeper_connection_timeout_ms, 18000);
	ck_assert_int_eq(set("zookeeper.session.timeout.ms", "6000"), 0);
	ck_assert_int_eq(cfg.zookeeper_connection_timeout_ms, 6000);
	ck_assert_int_eq(set("zookeeper.connection.timeout.ms", "2500"), 0);
	ck_assert_int_eq(set("zookeeper.session.timeout.ms", "7000"), 0);
	ck_assert_int_eq(cfg.zookeeper_connection_timeout_ms, 2500);
	ck_assert_int_eq(cfg.zookeeper_session_timeout_ms, 7000);
	ck_assert_ptr_null(brk_config_key_find("zookeeper.connection.timeout.ms")->dflt);

	/* Kafka's cross-checks of the fetch wait. */
	brk_config_defaults(&cfg);
	ck_assert_int_eq(set("replica.fetch.wait.max.ms", "40000"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "replica.socket.timeout.ms") != NULL, "message: %s", err);
	ck_assert_int_eq(set("replica.socket.timeout.ms", "60000"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "replica.lag.time.max.ms") != NULL, "message: %s", err);
	ck_assert_int_eq(set("replica.lag.time.max.ms", "40000"), 0);
	ck_assert_int_eq(brk_config_finish(&cfg, err, sizeof(err)), 0);

	/* Read-only except num.replica.fetchers and unclean.leader.election.enable,
	 * as in Kafka; broker.rack has no default. */
	static const char *const keys[] = {
		"replica.lag.time.max.ms", "replica.fetch.wait.max.ms", "replica.fetch.min.bytes",
		"replica.fetch.max.bytes", "replica.fetch.response.max.bytes",
		"replica.fetch.backoff.ms", "replica.socket.timeout.ms",
		"replica.high.watermark.checkpoint.interval.ms", "zookeeper.session.timeout.ms",
		"zookeeper.connection.timeout.ms", "zookeeper.set.acl", "broker.rack",
		"controlled.shutdown.enable", "controlled.shutdown.max.retries",
		"controlled.shutdown.retry.backoff.ms", "auto.leader.rebalance.enable",
		"leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage",
		"offsets.commit.timeout.ms", "delete.topic.enable", "request.timeout.ms",
		"controller.socket.timeout.ms", "replica.socket.receive.buffer.bytes",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const brk_config_key *k = brk_config_key_find(keys[i]);
		ck_assert_msg(k != NULL, "%s is not described", keys[i]);
		ck_assert_msg(!k->dynamic, "%s is dynamic", keys[i]);
	}
	ck_assert(brk_config_key_find("num.replica.fetchers")->dynamic);
	ck_assert(brk_config_key_find("unclean.leader.election.enable")->dynamic);
	ck_assert_ptr_null(brk_config_key_find("broker.rack")->dflt);
	ck_assert_int_eq(brk_config_key_find("replica.lag.time.max.ms")->type, BRK_CONFIG_TYPE_LONG);
	ck_assert_int_eq(brk_config_key_find("replica.fetch.wait.max.ms")->type, BRK_CONFIG_TYPE_INT);
	ck_assert_int_eq(brk_config_key_find("leader.imbalance.check.interval.seconds")->type,
			 BRK_CONFIG_TYPE_LONG);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_simple_keys);
	tcase_add_test(tc, test_synonyms);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_listeners);
	tcase_add_test(tc, test_security_keys);
	tcase_add_test(tc, test_file);
	tcase_add_test(tc, test_file_errors);
	tcase_add_test(tc, test_table_defaults);
	tcase_add_test(tc, test_cluster_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
