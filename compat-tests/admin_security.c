/*
 * admin_security.c - samsa-admin (tools/, the built binary) against a
 * secured single node: a SASL_SSL listener (PLAIN and SCRAM-SHA-512, the
 * PLAIN user admin a super user, certificates from tls_certs.c), an SSL
 * listener with ssl.client.auth=required whose certificate principal is a
 * super user, AclAuthorizer on:
 *  - first user setup: admin (PLAIN, --command-config with a PEM
 *    truststore) makes the SCRAM user alice, describe lists her mechanism
 *    and iterations; librdkafka then logs in as alice with SCRAM-SHA-512
 *    (and with a wrong password does not); samsa-admin logs in as alice
 *    too (SCRAM, PKCS12 truststore) and, not a super user, is refused
 *    CreateAcls with CLUSTER_AUTHORIZATION_FAILED; deleting the credential
 *    makes describe say RESOURCE_NOT_FOUND;
 *  - an ACL: alice cannot produce, acls --add Write/Describe lets her,
 *    acls --list shows exactly those bindings (and a principal filter
 *    hides them), acls --remove takes them away and she is refused again;
 *    --producer and --consumer make kafka-acls.sh's bindings; PREFIXED;
 *  - mutual TLS: the client certificate of the command config
 *    (ssl.keystore.*) is the super user;
 *  - quotas: set, describe, delete for a user, a user and client id, an IP, and
 *    the defaults; values printed as kafka-configs.sh prints them (1024.0,
 *    Infinity, 1.2345678E7);
 *  - bad input: a wrong password (SASL_AUTHENTICATION_FAILED, exit 1, one
 *    line), a mechanism the listener does not enable, GSSAPI, a missing
 *    command config, a truststore that does not trust the broker, SCRAM
 *    iterations below Kafka's minimum.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/tls_certs.h"

#define MAX_ARGS 40

typedef struct adm_run {
	int status;     /* exit status, -1 when killed */
	char out[16384];
	char err[4096];
} adm_run;

static bool drain_fd(int fd, char *buf, size_t cap, size_t *n)
{
	char tmp[4096];
	ssize_t r = read(fd, tmp, sizeof(tmp));
	if (r <= 0)
		return r < 0 && (errno == EINTR || errno == EAGAIN);
	size_t k = (size_t)r;
	if (*n + k >= cap)
		k = cap - 1 - *n;
	memcpy(buf + *n, tmp, k);
	*n += k;
	buf[*n] = '\0';
	return true;
}

/* samsa-admin -b 127.0.0.1:port [--command-config config] --timeout 10000
 * args... (NULL ended) into r; killed after 40 s. */
static void run_admin(adm_run *r, int port, const char *config, ...)
{
	const char *bin = getenv("SAMSA_ADMIN_BIN");
	ck_assert_msg(bin && *bin, "SAMSA_ADMIN_BIN is not set");
	char bootstrap[32];
	snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", port);
	const char *argv[MAX_ARGS + 8] = { bin, "-b", bootstrap, "--timeout", "10000" };
	int argc = 5;
	if (config) {
		argv[argc++] = "--command-config";
		argv[argc++] = config;
	}
	int first = argc;
	va_list ap;
	va_start(ap, config);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && argc < MAX_ARGS + 7)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;

	int po[2], pe[2];
	ck_assert_int_eq(pipe2(po, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(pe, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	memset(r, 0, sizeof(*r));
	size_t no = 0, ne = 0;
	bool open_o = true, open_e = true;
	long long deadline = h_now_ms() + h_scaled_ms(40000);
	while (open_o || open_e) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		long long left = deadline - h_now_ms();
		if (left <= 0)
			break;
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			break;
		if (open_o && (p[0].revents & (POLLIN | POLLHUP)))
			open_o = drain_fd(po[0], r->out, sizeof(r->out), &no);
		if (open_e && (p[1].revents & (POLLIN | POLLHUP)))
			open_e = drain_fd(pe[0], r->err, sizeof(r->err), &ne);
	}
	close(po[0]);
	close(pe[0]);
	if (open_o || open_e)
		kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	fprintf(stderr, "samsa-admin");
	for (int i = first; i < argc; i++)
		fprintf(stderr, " %s", argv[i]);
	fprintf(stderr, ": exit %d\n%s%s", r->status, r->out, r->err);
}

#define ADMIN(r, port, config, ...) \
	run_admin((r), (port), (config), __VA_ARGS__, (const char *)NULL)

static void assert_ok(const adm_run *r)
{
	ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
	ck_assert_msg(r->err[0] == '\0', "stderr: %s", r->err);
}

/* Exit 1 and exactly one line on stderr containing needle. */
static void assert_fails(const adm_run *r, const char *needle)
{
	ck_assert_msg(r->status == 1, "exit %d, not 1: %s", r->status, r->err);
	size_t n = strlen(r->err);
	ck_assert_msg(n > 0 && r->err[n - 1] == '\n' && strchr(r->err, '\n') == r->err + n - 1,
		      "stderr is not one line: '%s'", r->err);
	ck_assert_msg(strncmp(r->err, "samsa-admin: ", 13) == 0, "stderr: %s", r->err);
	ck_assert_msg(strstr(r->err, needle), "stderr lacks %s: %s", needle, r->err);
}

/* The number of lines of s. */
static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A file in the base dir with text; its path (static rotating buffers). */
static const char *write_file(const char *name, const char *fmt, ...)
{
	static char paths[8][512];
	static int next;
	char *path = paths[next++ % 8];
	snprintf(path, 512, "%s/%s", h_base_dir(), name);
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	return path;
}

/* Kafka client properties for SASL_SSL as user with mechanism. */
static const char *sasl_config(const char *name, const char *mech, const char *user,
			       const char *password, const char *trust)
{
	const char *module = strcmp(mech, "PLAIN") == 0
				     ? "org.apache.kafka.common.security.plain.PlainLoginModule"
				     : "org.apache.kafka.common.security.scram.ScramLoginModule";
	return write_file(name,
			  "# a client of the SASL_SSL listener\n"
			  "security.protocol=SASL_SSL\n"
			  "sasl.mechanism=%s\n"
			  "sasl.jaas.config=%s required \\\n"
			  "    username=\"%s\" password=\"%s\";\n"
			  "%s\n",
			  mech, module, user, password, trust);
}

typedef struct secured {
	h_broker *b;
	int sasl_port;  /* SASL_SSL */
	int mtls_port;  /* SSL, client certificate required */
	char pem_trust[600];
	char p12_trust[700];
	const char *admin; /* command config of the PLAIN super user */
} secured;

#define ALICE_DN "CN=Alice,OU=Eng,O=acme"

static void start(secured *s)
{
	make_certs();
	memset(s, 0, sizeof(*s));
	char ks[512], ts[512];
	snprintf(ks, sizeof(ks), "ssl.keystore.location=%s", cert("server.p12"));
	snprintf(ts, sizeof(ts), "ssl.truststore.location=%s", cert("ca.pem"));
	s->b = h_broker_new((const char *const[]){
	    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL",
	    "inter.broker.listener.name=PLAINTEXT",
	    "ssl.keystore.type=PKCS12", ks, "ssl.keystore.password=storepass",
	    "ssl.truststore.type=PEM", ts, "listener.name.mtls.ssl.client.auth=required",
	    "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
	    "listener.name.sasl_ssl.plain.sasl.jaas.config="
	    "org.apache.kafka.common.security.plain.PlainLoginModule required "
	    "user_admin=\"admin-secret\";",
	    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
	    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
	    "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
	    "super.users=User:admin;User:" ALICE_DN, NULL });
	ck_assert_ptr_nonnull(s->b);
	s->sasl_port = h_free_port();
	s->mtls_port = h_free_port();
	char kv[256];
	snprintf(kv, sizeof(kv),
		 "listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,MTLS://127.0.0.1:%d",
		 s->b->port, s->sasl_port, s->mtls_port);
	ck_assert_int_eq(h_broker_add_override(s->b, kv), 0);
	ck_assert_msg(h_broker_start(s->b) == 0, "broker did not start (log above)");
	snprintf(s->pem_trust, sizeof(s->pem_trust),
		 "ssl.truststore.type=PEM\nssl.truststore.location=%s", cert("ca.pem"));
	snprintf(s->p12_trust, sizeof(s->p12_trust),
		 "ssl.truststore.type=PKCS12\nssl.truststore.location=%s\n"
		 "ssl.truststore.password=trustpass", cert("trust.p12"));
	s->admin = sasl_config("admin.properties", "PLAIN", "admin", "admin-secret", s->pem_trust);
}

/* librdkafka over SASL_SSL with SCRAM-SHA-512 as user. */
static const char *const *scram_kv(const char *user, const char *password)
{
	static const char *kv[16];
	int n = 0;
	kv[n++] = "security.protocol", kv[n++] = "SASL_SSL";
	kv[n++] = "sasl.mechanisms", kv[n++] = "SCRAM-SHA-512";
	kv[n++] = "sasl.username", kv[n++] = user;
	kv[n++] = "sasl.password", kv[n++] = password;
	kv[n++] = "ssl.ca.location", kv[n++] = cert("ca.pem");
	kv[n] = NULL;
	return kv;
}

static h_broker sasl_view(const secured *s)
{
	h_broker v = *s->b;
	snprintf(v.bootstrap, sizeof(v.bootstrap), "127.0.0.1:%d", s->sasl_port);
	return v;
}

/* Metadata as user over SASL_SSL: the error. */
static rd_kafka_resp_err_t login(const secured *s, const char *user, const char *password)
{
	h_broker v = sasl_view(s);
	rd_kafka_conf_t *conf = c_conf(&v);
	c_set_all(conf, scram_kv(user, password));
	c_set(conf, "log_level", "2");
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, conf);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, h_scaled_ms(5000));
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
	return err;
}

/* One record to topic as alice (SCRAM): the delivery error. */
static rd_kafka_resp_err_t produce_as_alice(const secured *s, const char *topic)
{
	h_broker v = sasl_view(s);
	const char *const *scram = scram_kv("alice", "alice-secret");
	const char *kv[32] = { "message.timeout.ms", "5000", "retries", "0" };
	int n = 4;
	for (int i = 0; scram[i]; i++)
		kv[n++] = scram[i];
	kv[n] = NULL;
	rd_kafka_t *p = c_producer(&v, kv);
	c_delivery d = { 0 };
	c_msg m = { .topic = topic, .partition = 0, .value = "v", .value_len = 1 };
	c_produce(p, &m, &d);
	c_flush(p, h_scaled_ms(15000));
	ck_assert_msg(d.done, "no delivery report for %s", topic);
	rd_kafka_destroy(p);
	return d.err;
}

static void make_alice(const secured *s)
{
	adm_run r;
	ADMIN(&r, s->sasl_port, s->admin, "scram", "set", "alice", "--mechanism", "SCRAM-SHA-512",
	      "--iterations", "8192", "--password", "alice-secret");
	assert_ok(&r);
}

START_TEST(test_first_user)
{
	secured s;
	start(&s);
	adm_run r;
	/* before: alice cannot log in, and has no credential */
	ck_assert_int_ne(login(&s, "alice", "alice-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ADMIN(&r, s.sasl_port, s.admin, "scram", "describe", "alice");
	assert_fails(&r, "RESOURCE_NOT_FOUND");

	make_alice(&s);
	ADMIN(&r, s.sasl_port, s.admin, "scram", "describe");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "User: alice\tMechanism: SCRAM-SHA-512\tIterations: 8192\n");
	ck_assert_int_eq(login(&s, "alice", "alice-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ck_assert_int_ne(login(&s, "alice", "not-her-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);

	/* alice through samsa-admin (SCRAM, PKCS12 truststore): authenticated,
	 * and not allowed what only a super user may */
	const char *alice = sasl_config("alice.properties", "SCRAM-SHA-512", "alice",
					"alice-secret", s.p12_trust);
	ADMIN(&r, s.sasl_port, alice, "brokers");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, alice, "acls", "--add", "--topic", "x", "--allow-principal",
	      "User:alice");
	assert_fails(&r, "CLUSTER_AUTHORIZATION_FAILED");

	/* a new password replaces the old one */
	ADMIN(&r, s.sasl_port, s.admin, "scram", "set", "alice", "--mechanism", "SCRAM-SHA-512",
	      "--password-file", write_file("pw", "second-secret\n"));
	assert_ok(&r);
	ck_assert_int_ne(login(&s, "alice", "alice-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ck_assert_int_eq(login(&s, "alice", "second-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);

	ADMIN(&r, s.sasl_port, s.admin, "scram", "delete", "alice", "--mechanism",
	      "SCRAM-SHA-512");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "scram", "describe", "alice");
	assert_fails(&r, "RESOURCE_NOT_FOUND");
	ck_assert_int_ne(login(&s, "alice", "second-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
	c_stop_broker(s.b);
}
END_TEST

START_TEST(test_acl)
{
	secured s;
	start(&s);
	adm_run r;
	make_alice(&s);
	ADMIN(&r, s.sasl_port, s.admin, "create-topic", "orders", "--partitions", "1",
	      "--replication-factor", "1");
	assert_ok(&r);
	ck_assert_int_eq(produce_as_alice(&s, "orders"),
			 RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);

	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--topic", "orders", "--allow-principal",
	      "User:alice", "--operation", "Write", "--operation", "Describe");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 2);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--list", "--topic", "orders");
	assert_ok(&r);
	ck_assert_msg(strstr(r.out, "Resource: TOPIC:orders\tPatternType: LITERAL\tPrincipal: "
				    "User:alice\tHost: *\tOperation: WRITE\tPermission: ALLOW\n"),
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "Operation: DESCRIBE\tPermission: ALLOW\n"), "%s", r.out);
	ck_assert_int_eq(lines(r.out), 2);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--list", "--topic", "orders", "--principal",
	      "User:bob");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "");
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--list", "--operation", "Write");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 1);
	ck_assert_int_eq(produce_as_alice(&s, "orders"), RD_KAFKA_RESP_ERR_NO_ERROR);

	/* --remove with a principal removes exactly that binding */
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--remove", "--topic", "orders",
	      "--allow-principal", "User:alice", "--operation", "Write");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 1);
	ck_assert_msg(strstr(r.out, "Removed: Resource: TOPIC:orders") &&
			  strstr(r.out, "Operation: WRITE"), "%s", r.out);
	ck_assert_int_eq(produce_as_alice(&s, "orders"),
			 RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	/* --remove without: everything on the resource */
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--remove", "--topic", "orders");
	assert_ok(&r);
	ck_assert_msg(strstr(r.out, "Operation: DESCRIBE"), "%s", r.out);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--list");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "");

	/* kafka-acls.sh's --producer and --consumer */
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--producer", "--topic", "orders",
	      "--allow-principal", "User:alice");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 3);
	ck_assert_msg(strstr(r.out, "Operation: WRITE") && strstr(r.out, "Operation: DESCRIBE") &&
			  strstr(r.out, "Operation: CREATE"), "%s", r.out);
	ck_assert_int_eq(produce_as_alice(&s, "orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--remove", "--producer", "--topic", "orders",
	      "--allow-principal", "User:alice");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 3);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--consumer", "--topic", "orders",
	      "--group", "readers", "--allow-principal", "User:alice");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 3);
	ck_assert_msg(strstr(r.out, "Resource: GROUP:readers\tPatternType: LITERAL\tPrincipal: "
				    "User:alice\tHost: *\tOperation: READ"), "%s", r.out);
	ck_assert_int_eq(produce_as_alice(&s, "orders"),
			 RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--remove", "--topic", "orders", "--group",
	      "readers");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 3);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--consumer", "--topic", "orders",
	      "--allow-principal", "User:alice");
	ck_assert_int_eq(r.status, 2);

	/* a PREFIXED binding, listed under its pattern type */
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--topic", "ord",
	      "--resource-pattern-type", "PREFIXED", "--allow-principal", "User:alice",
	      "--allow-host", "127.0.0.1", "--operation", "Write");
	assert_ok(&r);
	ck_assert_int_eq(produce_as_alice(&s, "orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--list", "--topic", "orders",
	      "--resource-pattern-type", "MATCH");
	assert_ok(&r);
	ck_assert_msg(strstr(r.out, "Resource: TOPIC:ord\tPatternType: PREFIXED\tPrincipal: "
				    "User:alice\tHost: 127.0.0.1\tOperation: WRITE"), "%s", r.out);

	/* bad input: a usage error is exit 2 */
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--topic", "t", "--allow-principal",
	      "alice");
	ck_assert_int_eq(r.status, 2);
	ADMIN(&r, s.sasl_port, s.admin, "acls", "--add", "--topic", "t", "--allow-principal",
	      "User:alice", "--operation", "Fly");
	ck_assert_int_eq(r.status, 2);
	c_stop_broker(s.b);
}
END_TEST

START_TEST(test_mutual_tls)
{
	secured s;
	start(&s);
	adm_run r;
	const char *ks = write_file("alice-ks.pem", "%s", "");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "cat '%s' '%s' > '%s'", cert("alice.key"), cert("alice.pem"), ks);
	ck_assert_int_eq(system(cmd), 0);
	const char *mtls = write_file("mtls.properties",
				      "security.protocol=SSL\n%s\nssl.keystore.type=PEM\n"
				      "ssl.keystore.location=%s\n",
				      s.pem_trust, ks);
	ADMIN(&r, s.mtls_port, mtls, "scram", "set", "carol", "--mechanism", "SCRAM-SHA-512",
	      "--password", "carol-secret");
	assert_ok(&r);
	ck_assert_int_eq(login(&s, "carol", "carol-secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
	/* without the certificate the listener refuses the handshake */
	const char *nocert = write_file("nocert.properties", "security.protocol=SSL\n%s\n",
					s.pem_trust);
	ADMIN(&r, s.mtls_port, nocert, "brokers");
	ck_assert_int_eq(r.status, 1);
	c_stop_broker(s.b);
}
END_TEST

START_TEST(test_quotas)
{
	secured s;
	start(&s);
	adm_run r;
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice", "--set",
	      "producer_byte_rate=1048576", "--set", "consumer_byte_rate=2097152");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice", "--client-id", "app",
	      "--set", "request_percentage=50");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user-default", "--set",
	      "producer_byte_rate=1024");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: user=alice\tproducer_byte_rate=1048576.0"
				"\tconsumer_byte_rate=2097152.0\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user-default");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: user=<default>\tproducer_byte_rate=1024.0\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas");
	assert_ok(&r);
	ck_assert_int_eq(lines(r.out), 3);
	ck_assert_msg(strstr(r.out, "client-id=app") && strstr(r.out, "request_percentage=50.0\n"),
		      "%s", r.out);
	/* values as kafka-configs.sh prints them (Java's Double.toString) */
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--client-id", "big", "--set",
	      "request_percentage=Infinity", "--set", "consumer_byte_rate=12345678", "--set",
	      "controller_mutation_rate=0.00001");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--client-id", "big");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: client-id=big\trequest_percentage=Infinity"
				"\tconsumer_byte_rate=1.2345678E7\tcontroller_mutation_rate=1.0E-5\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice", "--delete",
	      "producer_byte_rate");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: user=alice\tconsumer_byte_rate=2097152.0\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--user", "alice", "--set", "no_such_quota=1");
	assert_fails(&r, "INVALID_REQUEST");

	/* IP entities (kafka-configs.sh --entity-type ips): an address and the
	 * default, connection_creation_rate only (the broker says so) */
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7", "--set",
	      "connection_creation_rate=5");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Updated the quotas of ip=10.0.0.7.\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip-default", "--set",
	      "connection_creation_rate=100");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Updated the quotas of ip=<default>.\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: ip=10.0.0.7\tconnection_creation_rate=5.0\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip-default");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "Entity: ip=<default>\tconnection_creation_rate=100.0\n");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7", "--set",
	      "producer_byte_rate=1024");
	assert_fails(&r, "INVALID_REQUEST");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "not-an-ip", "--set",
	      "connection_creation_rate=5");
	assert_fails(&r, "not a valid IP");
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7", "--user", "alice");
	ck_assert_int_eq(r.status, 2);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7", "--delete",
	      "connection_creation_rate");
	assert_ok(&r);
	ADMIN(&r, s.sasl_port, s.admin, "quotas", "--ip", "10.0.0.7");
	assert_ok(&r);
	ck_assert_str_eq(r.out, "");
	c_stop_broker(s.b);
}
END_TEST

START_TEST(test_bad_input)
{
	secured s;
	start(&s);
	adm_run r;
	const char *wrong = sasl_config("wrong.properties", "PLAIN", "admin", "not-the-secret",
					s.pem_trust);
	ADMIN(&r, s.sasl_port, wrong, "scram", "describe");
	assert_fails(&r, "SASL_AUTHENTICATION_FAILED");
	ck_assert_msg(strstr(r.err, "SASL authentication as admin (PLAIN) failed"), "%s", r.err);

	make_alice(&s);
	const char *wrong_scram = sasl_config("wrong-scram.properties", "SCRAM-SHA-512", "alice",
					      "not-her-secret", s.pem_trust);
	ADMIN(&r, s.sasl_port, wrong_scram, "brokers");
	assert_fails(&r, "SASL_AUTHENTICATION_FAILED");

	const char *sha256 = sasl_config("sha256.properties", "SCRAM-SHA-256", "alice",
					 "alice-secret", s.pem_trust);
	ADMIN(&r, s.sasl_port, sha256, "brokers");
	assert_fails(&r, "UNSUPPORTED_SASL_MECHANISM");
	ck_assert_msg(strstr(r.err, "PLAIN, SCRAM-SHA-512"), "%s", r.err);

	const char *gssapi = write_file("gssapi.properties", "security.protocol=SASL_SSL\n%s\n",
					s.pem_trust);
	ADMIN(&r, s.sasl_port, gssapi, "brokers");
	assert_fails(&r, "sasl.mechanism GSSAPI is not served");

	char missing[600];
	snprintf(missing, sizeof(missing), "%s/no-such.properties", h_base_dir());
	ADMIN(&r, s.sasl_port, missing, "brokers");
	assert_fails(&r, "no-such.properties");

	char rogue[600];
	snprintf(rogue, sizeof(rogue), "ssl.truststore.type=PEM\nssl.truststore.location=%s",
		 cert("rogue-ca.pem"));
	const char *untrusted = sasl_config("rogue.properties", "PLAIN", "admin", "admin-secret",
					    rogue);
	ADMIN(&r, s.sasl_port, untrusted, "brokers");
	assert_fails(&r, "TLS handshake: certificate verify failed");

	/* plaintext to the TLS port: refused, no hang */
	ADMIN(&r, s.sasl_port, NULL, "brokers");
	ck_assert_int_eq(r.status, 1);

	ADMIN(&r, s.sasl_port, s.admin, "scram", "set", "bob", "--mechanism", "SCRAM-SHA-512",
	      "--iterations", "100", "--password", "x");
	assert_fails(&r, "UNACCEPTABLE_CREDENTIAL");
	ADMIN(&r, s.sasl_port, s.admin, "scram", "set", "bob", "--mechanism", "MD5",
	      "--password", "x");
	ck_assert_int_eq(r.status, 2);
	c_stop_broker(s.b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin_security");
	TCase *tc = tcase_create("admin_security");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_first_user);
	tcase_add_test(tc, test_acl);
	tcase_add_test(tc, test_mutual_tls);
	tcase_add_test(tc, test_quotas);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return c_run_suite(s);
}
