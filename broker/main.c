/*
 * main.c - the samsa process: command line, start-up, the loop, shutdown.
 *
 * Start-up: configuration (file, then --override settings, then cross-key
 * checks) -> soft open file limit raised to the hard limit -> lock the log
 * dir -> meta.properties (created with a new random cluster id, or checked
 * against broker.id) -> clean-shutdown marker read and removed -> partition
 * registry -> controller (its initial events open the partition logs) ->
 * stray partition directories set aside -> consumer groups and transactional
 * ids start loading from __consumer_offsets and __transaction_state (in the
 * background, a slice per loop iteration; meanwhile their requests answer
 * COORDINATOR_LOAD_IN_PROGRESS) -> listeners -> loop.
 *
 * Shutdown on SIGTERM/SIGINT (read from a signalfd on the loop): listeners
 * close, idle connections close, requests in flight get up to
 * SHUTDOWN_GRACE_MS to finish and be sent (a second signal cuts that short),
 * then the partition logs are flushed and checkpointed, the clean-shutdown
 * marker is written and the process exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "broker/cleaner.h"
#include "broker/config.h"
#include "broker/conn.h"
#include "broker/dynamic_config.h"
#include "broker/fetch_session.h"
#include "broker/group/group.h"
#include "broker/group/store.h"
#include "broker/isr.h"
#include "broker/listener.h"
#include "broker/loop.h"
#include "broker/ratelog.h"
#include "broker/retention.h"
#include "broker/security/scram_store.h"
#include "broker/security/tls.h"
#include "broker/server.h"
#include "broker/shutdown.h"
#include "broker/txn/store.h"
#include "broker/txn/txn.h"
#include "controller/ctl.h"
#include "storage/logdir.h"

#ifndef SAMSA_VERSION
#define SAMSA_VERSION "unknown"
#endif

#define SHUTDOWN_GRACE_MS 1000 /* longest wait for requests in flight */
#define SHUTDOWN_POLL_MS 10
#define SHUTDOWN_LINGER_MS 100 /* serving on after a controlled shutdown: at least
				 * librdkafka's retry.backoff.ms */

brk_server server;

/* What the signal and shutdown callbacks need (not globals: passed as arg). */
typedef struct run_state {
	int sigfd;
	brk_listeners *listeners;
	brk_conns *conns;
	int64_t deadline; /* monotonic ms; 0 until a stop signal */
	brk_shutdown controlled; /* asking the controller to move leadership */
	/* brk_tls_signature of each TLS listener's context in use (by index
	 * in cfg->listeners). */
	uint64_t tls_sig[BRK_MAX_LISTENERS];
} run_state;

/*
 * The effective config changed (a dynamic config, e.g. Kafka's
 * listener.name.<l>.ssl.keystore.location): each TLS listener whose ssl.*
 * keys or key files changed gets a new context for its new connections;
 * open connections keep theirs. AlterConfigs refuses keys that give no
 * context (brk_dynamic_config_check_rebuild); one that fails here all the same
 * (a file changed since) is logged and the old context stays.
 */
static void refresh_tls(void *arg)
{
	run_state *rs = arg;
	if (!rs->conns)
		return;
	const brk_config *cfg = &server.cfg;
	for (int i = 0; i < cfg->nlisteners; i++) {
		const brk_listener *l = &cfg->listeners[i];
		if (l->security_protocol != BRK_SEC_SSL && l->security_protocol != BRK_SEC_SASL_SSL)
			continue;
		uint64_t sig = brk_tls_signature(cfg, l);
		if (sig == rs->tls_sig[i])
			continue;
		rs->tls_sig[i] = sig;
		char terr[512];
		brk_tls *t = brk_tls_new(cfg, l, terr, sizeof(terr));
		if (!t) {
			fprintf(stderr, "samsa: %s; the listener keeps its TLS context\n", terr);
			continue;
		}
		brk_conns_set_tls(rs->conns, l, t);
		brk_tls_unref(t);
		fprintf(stderr, "samsa: listener %s: a new TLS context (ssl.* keys changed) for new "
			"connections\n", l->name);
	}
}

/* The effective config was rebuilt (a dynamic config changed): the TLS
 * contexts and the connection creation rates follow it. */
static void on_config_changed(void *arg)
{
	refresh_tls(arg);
	brk_conn_rate_reconfigure(&server.conn_rate, &server.cfg);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: samsa [CONFIG_FILE] [--override KEY=VALUE]...\n"
		"       samsa --version | --help\n"
		"\n"
		"A Kafka broker. CONFIG_FILE is a Kafka server.properties file; without it\n"
		"Kafka's defaults apply (listeners=PLAINTEXT://:9092, log.dirs=/tmp/kafka-logs).\n"
		"--override KEY=VALUE sets one key after the file is read (may repeat).\n"
		"SIGTERM or SIGINT stops the broker cleanly.\n");
}

static void on_shutdown_poll(brk_loop *loop, void *arg)
{
	run_state *rs = arg;
	if (brk_conns_count(rs->conns) == 0 || brk_mono_ms() >= rs->deadline)
		brk_loop_stop(loop);
	else
		brk_timer_add(loop, SHUTDOWN_POLL_MS, on_shutdown_poll, rs);
}

/* Tell the counts of rate-limited lines whose flood stopped (ratelog.h). */
static void on_ratelog_timer(brk_loop *loop, void *arg)
{
	brk_ratelog_tell_untold(brk_mono_ms());
	brk_timer_add(loop, BRK_RATELOG_WINDOW_MS, on_ratelog_timer, arg);
}

static void stop_serving(brk_loop *loop, void *arg)
{
	(void)loop;
	run_state *rs = arg;
	brk_listeners_close(rs->listeners);
	rs->listeners = NULL;
	brk_conns_drain(rs->conns);
	rs->deadline = brk_mono_ms() + SHUTDOWN_GRACE_MS;
	on_shutdown_poll(server.loop, rs);
}

/* Leadership moved away (or nothing to move): stop serving. In a cluster,
 * after a short linger first: a client writing to this broker gets
 * NOT_LEADER_OR_FOLLOWER and this broker's Metadata names the new leaders,
 * instead of a closed connection and another broker's answer that may not
 * have caught up yet (librdkafka then waits for its next metadata scan). */
static void on_moved(void *arg)
{
	run_state *rs = arg;
	if (server.cluster.local || !brk_timer_add(server.loop, SHUTDOWN_LINGER_MS, stop_serving, rs))
		stop_serving(server.loop, rs);
}

static void on_signal(brk_loop *loop, int fd, int events, void *arg)
{
	(void)events;
	run_state *rs = arg;
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (server.stopping) {
			if (!rs->controlled.finished)
				brk_shutdown_abort(&rs->controlled); /* stop asking */
			else
				brk_loop_stop(loop); /* second signal: stop waiting */
			continue;
		}
		fprintf(stderr, "samsa: %s received, shutting down\n",
			si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
		server.stopping = true;
		/* In a cluster the controller moves this broker's leadership
		 * first, while it still serves (controlled.shutdown.enable).
		 * It stops following at once: a leader must not take it back
		 * into an ISR the controller takes it out of (Kafka's
		 * controller sends it StopReplica). */
		brk_fetchers_stop(&server.fetchers);
		brk_shutdown_begin(&rs->controlled, server.cfg.controlled_shutdown_enable,
				   server.cfg.controlled_shutdown_max_retries,
				   server.cfg.controlled_shutdown_retry_backoff_ms, on_moved, rs);
	}
}

/* brk_replica_env.alive over the live brokers. */
static bool cluster_alive(void *arg, int32_t id)
{
	return brk_cluster_alive(arg, id);
}

/* Connections and the open-file cache of the segment files
 * (log.max.open.files, -1: sized from this limit; partitions.h) share the
 * descriptors. Raise the soft RLIMIT_NOFILE to the hard limit, as the JVM
 * does for Kafka, and log the limit in force. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		fprintf(stderr, "samsa: warning: cannot read the open file limit: %s\n",
			strerror(errno));
		return;
	}
	rlim_t was = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
		/* An infinite hard limit cannot be the soft one (fs.nr_open caps
		 * it): keep what there is then. */
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl.rlim_cur = rl.rlim_max;
		else
			fprintf(stderr, "samsa: warning: cannot raise the open file limit to %llu: %s\n",
				(unsigned long long)rl.rlim_max, strerror(errno));
	}
	if (rl.rlim_cur != was)
		fprintf(stderr, "samsa: open file limit (RLIMIT_NOFILE) raised from %llu to %llu\n",
			(unsigned long long)was, (unsigned long long)rl.rlim_cur);
	else
		fprintf(stderr, "samsa: open file limit (RLIMIT_NOFILE) %llu\n",
			(unsigned long long)rl.rlim_cur);
}

/* A new cluster id as Kafka's Uuid.randomUuid: a version 4 UUID, never all
 * zero and never one whose base64 form starts with '-'. */
static int new_cluster_id(char out[23])
{
	uint8_t id[16];
	for (;;) {
		size_t got = 0;
		while (got < sizeof(id)) {
			ssize_t n = getrandom(id + got, sizeof(id) - got, 0);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)n;
		}
		id[6] = (uint8_t)((id[6] & 0x0f) | 0x40);
		id[8] = (uint8_t)((id[8] & 0x3f) | 0x80);
		logdir_uuid_to_string(id, out);
		if (out[0] != '-')
			return 0;
	}
}

/* meta.properties: create it (*fresh set: a new log dir), or check that it
 * belongs to this broker. */
static int check_meta(const brk_config *cfg, bool *fresh)
{
	*fresh = false;
	int32_t stored_id;
	char cluster[64];
	int rc = logdir_read_meta(cfg->log_dir, &stored_id, cluster, sizeof(cluster));
	if (rc == -ENOENT) {
		char id[23];
		rc = new_cluster_id(id);
		if (rc == 0)
			rc = logdir_write_meta(cfg->log_dir, cfg->broker_id, id);
		if (rc < 0) {
			fprintf(stderr, "samsa: cannot write %s/meta.properties: %s\n", cfg->log_dir,
				strerror(-rc));
			return -1;
		}
		snprintf(server.cluster_id, sizeof(server.cluster_id), "%s", id);
		*fresh = true;
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "samsa: cannot read %s/meta.properties: %s\n", cfg->log_dir,
			rc >= -4095 ? strerror(-rc) : "the file does not parse");
		return -1;
	}
	if (stored_id != cfg->broker_id) {
		fprintf(stderr,
			"samsa: configured broker.id %d does not match broker.id %d stored in "
			"%s/meta.properties. If you moved your data, configure broker.id %d; to start "
			"a new broker, remove the data in log.dirs.\n",
			(int)cfg->broker_id, (int)stored_id, cfg->log_dir, (int)stored_id);
		return -1;
	}
	snprintf(server.cluster_id, sizeof(server.cluster_id), "%s", cluster);
	return 0;
}

/* In a cluster the cluster id is ZooKeeper's (/cluster/id): a new log dir
 * takes it, an existing one must have it (Kafka's
 * InconsistentClusterIdException). Returns 0 or -1 (reason on stderr). */
static int check_cluster_id(const brk_config *cfg, bool fresh)
{
	const char *id = ctl_cluster_id(server.cluster.ctl);
	if (!id[0] || strcmp(id, server.cluster_id) == 0)
		return 0;
	if (fresh) {
		int rc = logdir_write_meta(cfg->log_dir, cfg->broker_id, id);
		if (rc < 0) {
			fprintf(stderr, "samsa: cannot write %s/meta.properties: %s\n", cfg->log_dir,
				strerror(-rc));
			return -1;
		}
		snprintf(server.cluster_id, sizeof(server.cluster_id), "%s", id);
		return 0;
	}
	fprintf(stderr,
		"samsa: the cluster id %s in ZooKeeper does not match the cluster id %s stored in "
		"%s/meta.properties: this log dir belongs to another cluster (or ZooKeeper's data "
		"was lost). Point zookeeper.connect at its cluster, or remove the data in log.dirs "
		"to join this one.\n",
		id, server.cluster_id, cfg->log_dir);
	return -1;
}

/* Read the command line into server.cfg. Returns -1 to exit 1, 1 to exit 0
 * (help, version), 0 to run. */
static int parse_args(int argc, char **argv)
{
	char err[1024];
	const char *file = NULL;
	brk_config_defaults(&server.cfg);
	/* The file first, so that overrides win whatever their position. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 1;
		}
		if (strcmp(a, "--version") == 0) {
			printf("samsa %s\n", SAMSA_VERSION);
			return 1;
		}
		if (strcmp(a, "--override") == 0) {
			if (++i == argc) {
				fprintf(stderr, "samsa: --override needs KEY=VALUE\n");
				return -1;
			}
			continue;
		}
		if (strncmp(a, "--override=", 11) == 0)
			continue;
		if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "samsa: unknown option %s\n", a);
			usage(stderr);
			return -1;
		}
		if (file) {
			fprintf(stderr, "samsa: only one configuration file may be given\n");
			return -1;
		}
		file = a;
	}
	if (file && brk_config_load(&server.cfg, file, stderr, err, sizeof(err)) < 0) {
		fprintf(stderr, "samsa: %s\n", err);
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *kv;
		if (strcmp(argv[i], "--override") == 0)
			kv = argv[++i];
		else if (strncmp(argv[i], "--override=", 11) == 0)
			kv = argv[i] + 11;
		else
			continue;
		const char *eq = strchr(kv, '=');
		if (!eq || eq == kv) {
			fprintf(stderr, "samsa: --override %s: expected KEY=VALUE\n", kv);
			return -1;
		}
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		if (brk_config_set(&server.cfg, key, eq + 1, stderr, err, sizeof(err)) < 0) {
			fprintf(stderr, "samsa: --override: %s\n", err);
			return -1;
		}
	}
	if (brk_config_finish(&server.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "samsa: %s\n", err);
		return -1;
	}
	/* SASL listeners' mechanisms and JAAS configs, checked before
	 * anything starts. */
	if (brk_sasl_init(&server.sasl, &server.cfg, stderr, err, sizeof(err)) < 0) {
		fprintf(stderr, "samsa: %s\n", err);
		return -1;
	}
	return 0;
}

/* Advertise the host name where a listener binds every interface, as Kafka
 * does (its canonical host name). */
static void fill_advertised_hosts(brk_config *cfg)
{
	char host[256];
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	for (int i = 0; i < cfg->nadvertised; i++)
		if (!cfg->advertised[i].host[0])
			snprintf(cfg->advertised[i].host, sizeof(cfg->advertised[i].host), "%s", host);
}

/*
 * Give up a start before brk_partitions_started: nothing was appended and
 * no checkpoint rewritten, so the logs opened are flushed and closed and,
 * after a clean start, the clean-shutdown marker goes back (the logs not
 * opened are as the last clean stop left them): the next start recovers
 * nothing because of this one.
 */
static void stop_before_serving(const brk_config *cfg, bool clean)
{
	brk_cluster_close(&server.cluster);
	int rc = brk_partitions_shutdown(&server.partitions);
	brk_dynamic_config_free(&server.dynamic);
	if (rc == 0 && clean && (rc = logdir_set_clean(cfg->log_dir, true)) < 0)
		fprintf(stderr, "samsa: cannot write the clean-shutdown marker: %s\n", strerror(-rc));
}

static void print_started(const brk_config *cfg)
{
	printf("samsa started on");
	for (int i = 0; i < cfg->nlisteners; i++) {
		const brk_listener *l = &cfg->listeners[i];
		bool v6 = strchr(l->host, ':') != NULL;
		printf("%s %s%s%s:%d", i ? "," : "", v6 ? "[" : "", l->host[0] ? l->host : "0.0.0.0",
		       v6 ? "]" : "", l->port);
	}
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);
	if (rc != 0)
		return rc < 0 ? 1 : 0;
	brk_config *cfg = &server.cfg;
	fill_advertised_hosts(cfg);
	raise_fd_limit();
	rc = brk_authorizer_init(&server.acl, cfg->authorizer_class_name, cfg->super_users,
				 cfg->allow_everyone_if_no_acl_found);
	if (rc == -EINVAL && cfg->authorizer_class_name[0] &&
	    strcmp(cfg->authorizer_class_name, BRK_ACL_AUTHORIZER_ZK) != 0 &&
	    strcmp(cfg->authorizer_class_name, BRK_ACL_AUTHORIZER_KRAFT) != 0) {
		fprintf(stderr, "samsa: authorizer.class.name=%s: not an authorizer samsa has (%s or "
			"%s)\n", cfg->authorizer_class_name, BRK_ACL_AUTHORIZER_ZK,
			BRK_ACL_AUTHORIZER_KRAFT);
		return 1;
	}
	if (rc != 0) {
		fprintf(stderr, "samsa: super.users=%s: %s\n", cfg->super_users,
			rc == -EINVAL ? "each principal must be TYPE:NAME" : strerror(-rc));
		return 1;
	}

	/* password.encoder.*: bad settings stop start-up (Kafka's config
	 * checks), not the first dynamic password change. */
	{
		char perr[256];
		if (brk_dynamic_config_check_encoder(cfg, perr, sizeof(perr)) < 0) {
			fprintf(stderr, "samsa: %s\n", perr);
			return 1;
		}
	}

	/* The TLS of the SSL listeners first: a bad keystore stops start-up
	 * before anything else is touched. Then the client side of the
	 * inter-broker listener when it is SSL or SASL_SSL. */
	SSL_CTX *inter_tls = NULL;
	bool inter_verify_host = true;
	brk_tls *tls[BRK_MAX_LISTENERS] = { 0 };
	uint64_t tls_sig[BRK_MAX_LISTENERS] = { 0 };
	for (int i = 0; i < cfg->nlisteners; i++) {
		const brk_listener *l = &cfg->listeners[i];
		if (l->security_protocol != BRK_SEC_SSL && l->security_protocol != BRK_SEC_SASL_SSL)
			continue;
		char terr[512];
		tls[i] = brk_tls_new(cfg, l, terr, sizeof(terr));
		tls_sig[i] = brk_tls_signature(cfg, l);
		if (!tls[i]) {
			fprintf(stderr, "samsa: %s\n", terr);
			for (int j = 0; j < i; j++)
				brk_tls_unref(tls[j]);
			return 1;
		}
	}
	for (int i = 0; i < cfg->nadvertised; i++) {
		const brk_listener *a = &cfg->advertised[i];
		if (strcmp(a->name, cfg->inter_broker_listener) != 0 ||
		    (a->security_protocol != BRK_SEC_SSL && a->security_protocol != BRK_SEC_SASL_SSL))
			continue;
		char terr[512];
		inter_tls = brk_tls_client_ctx_new(cfg, a, &inter_verify_host, terr, sizeof(terr));
		if (!inter_tls) {
			fprintf(stderr, "samsa: inter-broker %s\n", terr);
			for (int j = 0; j < cfg->nlisteners; j++)
				brk_tls_unref(tls[j]);
			return 1;
		}
	}

	/* Signals are taken from a signalfd; block them before any thread
	 * starts so that none of them gets one. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* sendfile(2) has no MSG_NOSIGNAL */
	run_state rs = { .sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC) };
	memcpy(rs.tls_sig, tls_sig, sizeof(rs.tls_sig));
	server.lock_fd = -1;
	server.loop = brk_loop_new();
	if (rs.sigfd < 0 || !server.loop) {
		fprintf(stderr, "samsa: cannot set up the event loop: %s\n", strerror(errno));
		return 1;
	}

	rc = logdir_lock(cfg->log_dir, &server.lock_fd);
	if (rc == -EWOULDBLOCK) {
		fprintf(stderr, "samsa: another broker is using log dir %s (its .lock is held)\n",
			cfg->log_dir);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "samsa: cannot use log dir %s: %s\n", cfg->log_dir, strerror(-rc));
		return 1;
	}
	bool fresh;
	if (check_meta(cfg, &fresh) < 0)
		return 1;
	/* A new log dir has nothing to recover. */
	bool clean = fresh || logdir_was_clean(cfg->log_dir);
	rc = logdir_set_clean(cfg->log_dir, false);
	if (rc < 0) {
		fprintf(stderr, "samsa: log dir %s: cannot remove the clean-shutdown marker: %s\n",
			cfg->log_dir, strerror(-rc));
		return 1;
	}
	/* The partition registry, then the controller: its initial events
	 * (brokers, broker configs, topics) open the logs of the replicas
	 * here before any client connects. */
	brk_dynamic_config_init(&server.dynamic, &server.cfg, &server.partitions);
	brk_replica_env env = {
		.broker_id = cfg->broker_id,
		.replica_lag_time_max_ms = cfg->replica_lag_time_max_ms,
		.alive = cluster_alive,
		.alive_arg = &server.cluster,
	};
	brk_retention_init(&server.retention, server.loop, &server.partitions, &server.cfg,
			   &server.flusher);
	rc = brk_partitions_init(&server.partitions, server.loop, &server.flusher, &server.cfg, &env,
				 clean);
	if (rc == 0) {
		ctl_options o = { .log_dir = cfg->log_dir, .broker_id = cfg->broker_id,
				  .zookeeper_connect = cfg->zookeeper_connect };
		const brk_listener *l = brk_config_advertised(cfg);
		o.self.id = cfg->broker_id;
		snprintf(o.self.host, sizeof(o.self.host), "%s", brk_config_advertised_host(l));
		o.self.port = l ? l->port : 9092;
		/* Every advertised listener, for the clients of each and for
		 * the registration (controller/meta.h's endpoints). */
		for (int i = 0; i < cfg->nadvertised && i < CTL_MAX_ENDPOINTS; i++) {
			const brk_listener *a = &cfg->advertised[i];
			ctl_endpoint *e = &o.self.endpoints[o.self.nendpoints++];
			snprintf(e->listener, sizeof(e->listener), "%s", a->name);
			snprintf(e->security_protocol, sizeof(e->security_protocol), "%s",
				 brk_security_protocol_name(a->security_protocol));
			snprintf(e->host, sizeof(e->host), "%s", brk_config_advertised_host(a));
			e->port = a->port;
		}
		snprintf(o.self.rack, sizeof(o.self.rack), "%s", cfg->broker_rack);
		o.zookeeper_session_timeout_ms = cfg->zookeeper_session_timeout_ms;
		o.zookeeper_connection_timeout_ms = cfg->zookeeper_connection_timeout_ms;
		o.unclean_leader_election_enable = cfg->unclean_leader_election_enable;
		o.auto_leader_rebalance_enable = cfg->auto_leader_rebalance_enable;
		o.leader_imbalance_check_interval_seconds =
			cfg->leader_imbalance_check_interval_seconds;
		o.leader_imbalance_per_broker_percentage = cfg->leader_imbalance_per_broker_percentage;
		rc = brk_cluster_open(&server.cluster, server.loop, &server.partitions, &server.dynamic, &server.acl,
				      &o);
		if (rc != 0 && cfg->zookeeper_connect[0])
			fprintf(stderr, "samsa: cannot join the cluster at zookeeper.connect=%s: %s\n",
				cfg->zookeeper_connect,
				rc == -EEXIST ? "broker.id is registered by another live broker"
				: rc == -ETIMEDOUT ? "no ZooKeeper session within "
						     "zookeeper.connection.timeout.ms"
				: rc < 0 && rc >= -4095 ? strerror(-rc) : "error");
		else if (rc != 0)
			fprintf(stderr, "samsa: cannot open the cluster metadata in %s: %s\n",
				cfg->log_dir,
				rc < 0 && rc >= -4095 ? strerror(-rc) : "it does not parse");
	} else {
		fprintf(stderr, "samsa: cannot start the partition logs: %s\n", strerror(-rc));
	}
	if (rc != 0 || brk_partitions_check_loaded(&server.partitions) != 0 ||
	    check_cluster_id(cfg, fresh) != 0) {
		stop_before_serving(cfg, clean);
		return 1;
	}
	brk_partitions_started(&server.partitions);
	brk_producer_ids_init(&server.producer_ids, &server.cluster);
	/* Client quotas follow the client configs (applied by the cluster
	 * link from now on). */
	if (brk_quotas_init(&server.quotas, cfg->quota_window_num, cfg->quota_window_size_seconds,
			    &server.cluster.client_configs) != 0)
		fprintf(stderr, "samsa: client quotas cannot follow their configs\n");
	brk_quotas_set_controller_window(&server.quotas, cfg->controller_quota_window_num,
					 cfg->controller_quota_window_size_seconds);
	/* Connections to the other brokers: a fetcher's requests wait at most
	 * replica.socket.timeout.ms and its answers hold up to
	 * replica.fetch.response.max.bytes (plus the response's own fields);
	 * other requests wait request.timeout.ms. */
	brk_peer_limits limits[BRK_PEER_PURPOSES];
	for (int i = 0; i < BRK_PEER_PURPOSES; i++)
		brk_peer_limits_default(&limits[i]);
	limits[BRK_PEER_FETCH].request_timeout_ms = cfg->replica_socket_timeout_ms;
	if (cfg->replica_fetch_response_max_bytes < INT32_MAX - (1 << 20))
		limits[BRK_PEER_FETCH].max_response_bytes =
			cfg->replica_fetch_response_max_bytes + cfg->replica_fetch_max_bytes + (1 << 20);
	limits[BRK_PEER_CONTROL].request_timeout_ms = cfg->request_timeout_ms;
	brk_peers_init(&server.peers, server.loop, cfg->broker_id, limits);
	brk_peers_set_listener(&server.peers, cfg->inter_broker_listener, inter_tls,
			       inter_verify_host);
	inter_tls = NULL; /* the peers own it */
	if (server.sasl.inter_broker_sasl)
		brk_peers_set_sasl(&server.peers, &server.sasl.inter_broker);
	brk_fetcher_config fc = {
		.wait_max_ms = cfg->replica_fetch_wait_max_ms,
		.min_bytes = cfg->replica_fetch_min_bytes,
		.max_bytes = cfg->replica_fetch_max_bytes,
		.response_max_bytes = cfg->replica_fetch_response_max_bytes,
		.backoff_ms = cfg->replica_fetch_backoff_ms,
	};
	if (brk_fetchers_init(&server.fetchers, &fc) != 0)
		fprintf(stderr, "samsa: cannot start the replica fetchers\n");
	brk_isr_start();
	/* Groups and committed offsets of the partitions led here: their
	 * loads start now and go on in the background once the loop runs
	 * (Metadata, Produce, Fetch... are served meanwhile); later ones as
	 * leadership moves. */
	grp_coordinator_init(&server.groups, server.loop, &server.cfg);
	rc = grp_store_open(&server.groups, &server.partitions);
	if (rc < 0) {
		fprintf(stderr, "samsa: cannot follow the consumer groups of __consumer_offsets: %s\n",
			strerror(-rc));
		grp_coordinator_free(&server.groups);
		brk_cluster_close(&server.cluster);
		brk_partitions_shutdown(&server.partitions);
		brk_dynamic_config_free(&server.dynamic);
		return 1;
	}
	/* Transactional ids of the partitions led here, loaded (and prepared
	 * transactions completed) in the background as the groups; later
	 * ones as leadership moves. Markers go to partitions here or to
	 * their leaders. */
	txn_coordinator_init(&server.txns, server.loop, &server.cfg);
	txn_marker_channel_init(&server.txns.channel, &server.txns.markers, &server.partitions,
				&server.cluster, &server.peers);
	rc = txn_store_open(&server.txns, &server.partitions, &server.groups);
	if (rc < 0) {
		fprintf(stderr, "samsa: cannot follow the transactions of __transaction_state: %s\n",
			strerror(-rc));
		txn_coordinator_free(&server.txns);
		txn_marker_channel_close(&server.txns.channel);
		grp_coordinator_free(&server.groups);
		brk_cluster_close(&server.cluster);
		brk_partitions_shutdown(&server.partitions);
		brk_dynamic_config_free(&server.dynamic);
		return 1;
	}

	/* Retention (log.retention.check.interval.ms), once the logs are up. */
	brk_retention_start(&server.retention);
	/* Compaction (log.cleaner.*), once the logs are up. */
	rc = brk_cleaner_start(&server.cleaner, server.loop, &server.cfg, &server.partitions,
			       &server.flusher);
	if (rc < 0)
		fprintf(stderr, "samsa: cannot start the log cleaner: %s\n", strerror(-rc));

	/* What requests use, before any client connects (a cache that could
	 * not be made is tried again at first use). */
	server.fetch_sessions = fs_cache_new(cfg->max_incremental_fetch_session_cache_slots,
					     FS_MIN_EVICTION_MS);
	proto_scratch_init(&server.produce_scratch, BRK_PRODUCE_SCRATCH_MAX);

	char err[512];
	rs.conns = brk_conns_new(server.loop, cfg);
	for (int i = 0; rs.conns && i < cfg->nlisteners; i++) {
		if (tls[i])
			brk_conns_set_tls(rs.conns, &cfg->listeners[i], tls[i]);
		brk_tls_unref(tls[i]); /* the connection set holds it now */
		tls[i] = NULL;
	}
	/* Dynamic configs read since start-up may name other keystores. */
	refresh_tls(&rs);
	brk_dynamic_config_set_hook(&server.dynamic, on_config_changed, &rs);
	/* SCRAM credentials: the users' client entity configs. */
	brk_sasl_set_scram_lookup(&server.sasl, brk_scram_store_lookup, &server.cluster.client_configs);
	if (rs.conns) {
		brk_conns_set_sasl(rs.conns, &server.sasl);
		brk_conns_set_request_hook(rs.conns, brk_quota_request_done);
	}
	/* Connection creation rates (KIP-612): the configured ones and the
	 * ip entities' quotas, followed as they change. */
	rc = brk_conn_rate_init(&server.conn_rate, cfg, &server.cluster.client_configs, err,
				sizeof(err));
	if (rc == 0)
		rc = rs.conns ? brk_listeners_open(server.loop, cfg, rs.conns, &server.conn_rate,
						   &rs.listeners, err, sizeof(err))
			      : (snprintf(err, sizeof(err), "out of memory"), -ENOMEM);
	if (rc == 0)
		rc = brk_loop_watch(server.loop, rs.sigfd, BRK_READABLE, on_signal, &rs);
	int status = 0;
	if (rc < 0) {
		fprintf(stderr, "samsa: %s\n", err);
		status = 1;
	} else {
		fprintf(stderr, "samsa %s: broker.id %d, cluster id %s, log dir %s%s\n", SAMSA_VERSION,
			(int)cfg->broker_id, server.cluster_id, cfg->log_dir,
			clean ? "" : " (recovered after an unclean shutdown)");
		print_started(cfg);
		brk_timer_add(server.loop, BRK_RATELOG_WINDOW_MS, on_ratelog_timer, NULL);
		brk_loop_run(server.loop);
	}

	/* Connections first (cancelling what still waits), then the logs. */
	brk_listeners_close(rs.listeners);
	brk_dynamic_config_set_hook(&server.dynamic, NULL, NULL);
	brk_conns_free(rs.conns);
	rs.conns = NULL;
	brk_sasl_free(&server.sasl);
	fs_cache_free(server.fetch_sessions); /* no request can use them now */
	server.fetch_sessions = NULL;
	proto_scratch_free(&server.produce_scratch);
	brk_isr_stop();
	brk_fetchers_stop(&server.fetchers);
	brk_peers_free(&server.peers); /* their callbacks see the fetchers stopped */
	brk_fetchers_free(&server.fetchers);
	brk_retention_stop(&server.retention);
	brk_cleaner_stop(&server.cleaner);
	txn_coordinator_free(&server.txns); /* marker jobs first, then their deliveries */
	txn_marker_channel_close(&server.txns.channel);
	grp_coordinator_free(&server.groups);
	brk_producer_ids_close(&server.producer_ids);
	brk_cluster_close(&server.cluster); /* no event after this */
	brk_quotas_free(&server.quotas);
	brk_conn_rate_free(&server.conn_rate);
	rc = brk_partitions_shutdown(&server.partitions);
	if (rc < 0) {
		fprintf(stderr, "samsa: shutdown: flushing the partition logs failed: %s\n",
			strerror(-rc));
		status = 1;
	} else if ((rc = logdir_set_clean(cfg->log_dir, true)) < 0) {
		fprintf(stderr, "samsa: shutdown: cannot write the clean-shutdown marker: %s\n",
			strerror(-rc));
		status = 1;
	}
	brk_ratelog_tell_untold(INT64_MAX);
	brk_dynamic_config_free(&server.dynamic);
	brk_authorizer_free(&server.acl);
	brk_loop_unwatch(server.loop, rs.sigfd);
	close(rs.sigfd);
	brk_loop_free(server.loop);
	close(server.lock_fd);
	if (status == 0)
		fprintf(stderr, "samsa: stopped\n");
	return status;
}
