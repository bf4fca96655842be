/*
 * zk_backend.c - the ZooKeeper back end (zk_backend.h): start and stop,
 * this broker's registration, the session, watch triggers handed over to
 * the controller thread, and the dispatch of operations.
 *
 * Start (CLUSTER.md 1, 1.2, 2.1): connect; create Kafka's persistent paths;
 * read or create /cluster/id; note the topics marked for deletion (a
 * deletion that waits for this broker may complete as soon as it
 * registers, before it reads them); register /brokers/ids/<id> with the checked
 * ephemeral create (its czxid is the broker epoch), waiting for a previous
 * session that still holds the id to expire (CLUSTER.md 4.10); read
 * everything with watches and queue its events; take part in the election.
 *
 * Session expiry (CLUSTER.md 1.2, 6.2 item 9): resign if controller, open a
 * new session, register again (a new czxid: the controller sees a bounce),
 * read and emit everything again, rejoin the election. What fails for want
 * of ZooKeeper is tried again by a timer (one thread that only posts a
 * tick). A disconnect that is not an expiry changes nothing: the client
 * reconnects and re-arms its watches by itself.
 */
#include "controller/zk_backend.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "controller/zk_json.h"
#include "protocol/err.h"
#include "storage/logdir.h"

/* Kafka's ZkData.PersistentZkPaths, created at startup when missing. */
static const char *const persistent_paths[] = {
	"/consumers",
	"/brokers/ids",
	"/brokers/topics",
	"/config/changes",
	"/admin/delete_topics",
	"/brokers/seqid",
	"/isr_change_notification",
	"/latest_producer_id_block",
	"/log_dir_event_notification",
	"/config/topics",
	"/config/clients",
	"/config/users",
	"/config/brokers",
	"/config/ips",
	/* Kafka's ZkAclStore paths (the authorizer's ACLs and their
	 * change notifications). */
	"/kafka-acl",
	"/kafka-acl-changes",
	"/kafka-acl-extended/prefixed",
	"/kafka-acl-extended-changes",
};

/* How often a registration held by another session is tried again. */
#define REGISTER_POLL_MS 100
/* After a failure for want of ZooKeeper, the next try. */
#define RETRY_MS 1000
/* leader.imbalance.check.interval.seconds is capped to this (about 30
 * years) so the deadline stays in range. */
#define MAX_INTERVAL_S 1000000000LL

/* ---- clocks and errors ---- */

int64_t zkb_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zkb_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool zkb_transient(int zrc)
{
	return zrc == CTL_ZK_CONNECTIONLOSS || zrc == CTL_ZK_OPERATIONTIMEOUT ||
	       zrc == CTL_ZK_SESSIONEXPIRED || zrc == CTL_ZK_CLOSING ||
	       zrc == CTL_ZK_INVALIDSTATE;
}

int16_t zkb_kafka_error(int zrc)
{
	return zkb_transient(zrc) ? KERR_REQUEST_TIMED_OUT : KERR_UNKNOWN_SERVER_ERROR;
}

/* After the C client refused to start a session: names each host of
 * "host:port[,...][/chroot]" that getaddrinfo(3) cannot resolve (the
 * client says only "system error"). Returns whether there was one. */
static bool report_unresolved(const char *connect)
{
	bool any = false;
	const char *end = connect + strcspn(connect, "/");
	for (const char *h = connect; h < end;) {
		size_t n = strcspn(h, ",/");
		char host[256];
		size_t hlen = strcspn(h, ":,/");
		if (hlen < sizeof(host) && hlen > 0) {
			memcpy(host, h, hlen);
			host[hlen] = '\0';
			struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
			int g = getaddrinfo(host, NULL, &hints, &res);
			if (g != 0) {
				fprintf(stderr, "samsa: zookeeper.connect: cannot resolve host \"%s\": %s\n",
					host, gai_strerror(g));
				any = true;
			} else {
				freeaddrinfo(res);
			}
		}
		h += n + (h[n] == ',' ? 1 : 0);
		if (n == 0)
			break;
	}
	return any;
}

static int errno_of(int zrc)
{
	switch (zrc) {
	case CTL_ZK_OK: return 0;
	case CTL_ZK_OPERATIONTIMEOUT:
	case CTL_ZK_CONNECTIONLOSS: return -ETIMEDOUT;
	case CTL_ZK_BADARGUMENTS: return -EINVAL;
	case CTL_ZK_NODEEXISTS: return -EEXIST;
	case CTL_ZK_SYSTEMERROR: return -ENOMEM;
	default: return -EIO;
	}
}

/* ---- triggers from ZooKeeper's thread ---- */

static void drain(ctl *c, void *arg);

/* Post the drain job unless one is queued. Under z->mu. */
static void post_drain_locked(zkb *z)
{
	if (z->drain_posted)
		return;
	if (ctl_post(z->c, drain, z) == 0)
		z->drain_posted = true;
	/* out of memory: the next trigger or tick posts it */
}

void zkb_on_zk_event(void *arg, int type, int state, const char *path)
{
	zkb *z = arg;
	pthread_mutex_lock(&z->mu);
	if (type == CTL_ZK_EVENT_SESSION) {
		/* The client library's own lines are off (a line per connect
		 * attempt while ZooKeeper is away): the transitions are told
		 * here instead, once each. */
		if (state == CTL_ZK_STATE_CONNECTING && !z->pending.disconnected) {
			z->pending.disconnected = true;
			fprintf(stderr, "samsa: lost the connection to ZooKeeper; reconnecting (the "
				"session lasts zookeeper.session.timeout.ms)\n");
		} else if (state == CTL_ZK_STATE_CONNECTED && z->pending.disconnected) {
			z->pending.disconnected = false;
			fprintf(stderr, "samsa: connected to ZooKeeper again\n");
		}
		if (state == CTL_ZK_STATE_EXPIRED_SESSION)
			z->pending.expired = true;
		else if (state == CTL_ZK_STATE_CONNECTED)
			z->pending.connected = true;
		else {
			pthread_mutex_unlock(&z->mu);
			return;
		}
	} else if (type == CTL_ZK_EVENT_NOTWATCHING || !path) {
		pthread_mutex_unlock(&z->mu);
		return;
	} else if (!z->pending.tail || strcmp(z->pending.tail->path, path) != 0) {
		zkb_trigger *t = malloc(sizeof(*t));
		if (!t || strlen(path) >= sizeof(t->path)) {
			/* cannot keep it: read everything again instead */
			free(t);
			z->pending.reread = true;
		} else {
			strcpy(t->path, path);
			t->next = NULL;
			if (z->pending.tail)
				z->pending.tail->next = t;
			else
				z->pending.paths = t;
			z->pending.tail = t;
		}
	}
	post_drain_locked(z);
	pthread_mutex_unlock(&z->mu);
}

/* ---- the retry timer ---- */

void zkb_retry_in(zkb *z, int ms)
{
	pthread_mutex_lock(&z->mu);
	int64_t at = zkb_mono_ms() + ms;
	if (z->retry_at == 0 || at < z->retry_at) {
		z->retry_at = at;
		pthread_cond_signal(&z->timer_cv);
	}
	pthread_mutex_unlock(&z->mu);
}

void zkb_rebalance_in(zkb *z, int64_t ms)
{
	pthread_mutex_lock(&z->mu);
	z->rebalance_at = ms < 0 ? 0 : zkb_mono_ms() + ms;
	pthread_cond_signal(&z->timer_cv);
	pthread_mutex_unlock(&z->mu);
}

/* The timer: a tick when retry_at passes, a rebalance check when
 * rebalance_at does. */
static void *timer_main(void *arg)
{
	zkb *z = arg;
	pthread_mutex_lock(&z->mu);
	while (!z->timer_stop) {
		int64_t due = z->retry_at;
		if (z->rebalance_at && (!due || z->rebalance_at < due))
			due = z->rebalance_at;
		if (due == 0) {
			pthread_cond_wait(&z->timer_cv, &z->mu);
			continue;
		}
		int64_t now = zkb_mono_ms();
		if (now >= due) {
			if (z->retry_at && now >= z->retry_at) {
				z->retry_at = 0;
				z->pending.tick = true;
			}
			if (z->rebalance_at && now >= z->rebalance_at) {
				z->rebalance_at = 0;
				z->pending.rebalance = true;
			}
			post_drain_locked(z);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t wait = due - now;
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&z->timer_cv, &z->mu, &ts);
	}
	pthread_mutex_unlock(&z->mu);
	return NULL;
}

/* ---- registration ---- */

/* The v5 registration of this broker (CLUSTER.md 1.2). */
static int registration_json(const zkb *z, char **out, size_t *len)
{
	ctl_zkj_endpoint ep[CTL_MAX_ENDPOINTS] = { { "PLAINTEXT", "PLAINTEXT", z->self.host,
						     z->self.port } };
	int32_t n = 1;
	if (z->self.nendpoints > 0) {
		n = z->self.nendpoints < CTL_MAX_ENDPOINTS ? z->self.nendpoints : CTL_MAX_ENDPOINTS;
		for (int32_t i = 0; i < n; i++) {
			const ctl_endpoint *e = &z->self.endpoints[i];
			ep[i] = (ctl_zkj_endpoint){ e->listener, e->security_protocol, e->host, e->port };
		}
	}
	ctl_zkj_broker b = { .version = 5, .jmx_port = -1, .timestamp = zkb_wall_ms(),
			     .rack = z->self.rack[0] ? z->self.rack : NULL,
			     .endpoints = ep, .nendpoints = n };
	return ctl_zkj_broker_encode(&b, out, len);
}

/* Register, trying again while another session holds the id, until
 * deadline (monotonic ms; 0: once). */
static int register_self(zkb *z, int64_t deadline)
{
	char path[64];
	snprintf(path, sizeof(path), "/brokers/ids/%d", (int)z->self.id);
	char *json;
	size_t len;
	if (registration_json(z, &json, &len) != 0)
		return CTL_ZK_SYSTEMERROR;
	int rc;
	bool told = false;
	for (;;) {
		int64_t czxid = 0;
		rc = ctl_zk_create_ephemeral_checked(z->zk, path, json, (int)len, &czxid);
		if (rc == CTL_ZK_OK) {
			z->self.epoch = czxid;
			z->registered = true;
			break;
		}
		if ((rc != CTL_ZK_NODEEXISTS && rc != CTL_ZK_CONNECTIONLOSS) ||
		    zkb_mono_ms() >= deadline)
			break;
		if (rc == CTL_ZK_NODEEXISTS && !told) {
			fprintf(stderr, "samsa: broker id %d is registered by another ZooKeeper "
				"session (a previous run of this broker?): waiting for it to "
				"expire\n", (int)z->self.id);
			told = true;
		}
		struct timespec ts = { 0, REGISTER_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	free(json);
	if (rc == CTL_ZK_NODEEXISTS)
		fprintf(stderr, "samsa: broker id %d is still registered by another ZooKeeper "
			"session: is another broker running with this id?\n", (int)z->self.id);
	return rc;
}

/* /cluster/id: read it, or create it with a new id (the first broker). */
static int cluster_id(zkb *z)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		char *data;
		int len;
		int rc = ctl_zk_get(z->zk, "/cluster/id", false, &data, &len, NULL);
		if (rc == CTL_ZK_OK) {
			proto_arena a;
			proto_arena_init(&a, 0);
			const char *id;
			if (ctl_zkj_cluster_id_decode(data, len, &a, &id) == 0)
				ctl_set_cluster_id(z->c, id);
			else
				fprintf(stderr, "samsa: /cluster/id does not parse\n");
			proto_arena_free(&a);
			free(data);
			return CTL_ZK_OK;
		}
		if (rc != CTL_ZK_NONODE)
			return rc;
		uint8_t uuid[16];
		char text[23];
		if (ctl_random_uuid(uuid) != 0)
			return CTL_ZK_SYSTEMERROR;
		logdir_uuid_to_string(uuid, text);
		char *json;
		size_t jlen;
		if (ctl_zkj_cluster_id_encode(text, &json, &jlen) != 0)
			return CTL_ZK_SYSTEMERROR;
		rc = ctl_zk_ensure_path(z->zk, "/cluster");
		if (rc == CTL_ZK_OK)
			rc = ctl_zk_create(z->zk, "/cluster/id", json, (int)jlen, CTL_ZK_PERSISTENT,
					   NULL, 0, NULL);
		free(json);
		if (rc != CTL_ZK_OK && rc != CTL_ZK_NODEEXISTS)
			return rc;
		/* read what is there now (ours, or the winner's of a race) */
	}
	return CTL_ZK_SYSTEMERROR;
}

/* ---- watch dispatch ---- */

static bool has_prefix(const char *s, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);
	if (strncmp(s, prefix, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

/* /controller was read: resign or elect as it says. */
static void controller_read(zkb *z)
{
	bool exists;
	if (zkb_view_refresh_controller(z, false, &exists) != CTL_ZK_OK)
		return;
	zkb_ctrl_controller_changed(z, z->controller_id);
	if (!exists)
		zkb_ctrl_elect(z);
}

/* Re-read what a watch named, then let the controller react. */
static void on_trigger(zkb *z, const char *path)
{
	const char *rest;
	if (strcmp(path, "/brokers/ids") == 0 || has_prefix(path, "/brokers/ids/", &rest)) {
		bool changed = false;
		if (zkb_view_refresh_brokers(z, false, &changed) == CTL_ZK_OK && changed &&
		    z->ctrl.active)
			zkb_ctrl_brokers_changed(z);
	} else if (strcmp(path, "/controller") == 0) {
		controller_read(z);
	} else if (strcmp(path, "/brokers/topics") == 0) {
		if (zkb_view_refresh_topic_list(z, ZKB_READ_NEW) == CTL_ZK_OK && z->ctrl.active)
			zkb_ctrl_reconcile_all(z);
	} else if (has_prefix(path, "/brokers/topics/", &rest)) {
		char topic[CTL_TOPIC_NAME_MAX + 1];
		const char *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
		if (n == 0 || n > CTL_TOPIC_NAME_MAX)
			return;
		memcpy(topic, rest, n);
		topic[n] = '\0';
		if (!slash) {
			if (zkb_view_refresh_topic(z, topic, ZKB_READ_NEW) == CTL_ZK_OK && z->ctrl.active) {
				zkb_ctrl_reconcile_topic(z, topic);
				zkb_reasn_check_topic(z, topic);
			}
			return;
		}
		int p;
		char tail[8];
		if (sscanf(slash, "/partitions/%d/%7s", &p, tail) == 2 && strcmp(tail, "state") == 0 &&
		    p >= 0) {
			if (zkb_view_refresh_state(z, topic, p) == CTL_ZK_OK && z->ctrl.active) {
				zkb_ctrl_reconcile_partition(z, topic, p);
				zkb_reasn_check(z, topic, p);
			}
		}
	} else if (strcmp(path, "/config/changes") == 0) {
		if (zkb_view_process_notices(z, false) == CTL_ZK_OK && z->ctrl.active)
			zkb_ctrl_reconcile_all(z); /* unclean.leader.election.enable may be new */
	} else if (strcmp(path, "/kafka-acl-changes") == 0) {
		zkb_acl_on_change(z, false);
	} else if (strcmp(path, "/kafka-acl-extended-changes") == 0) {
		zkb_acl_on_change(z, true);
	} else if (strcmp(path, "/admin/delete_topics") == 0) {
		zkb_view_refresh_deletions(z);
		if (z->ctrl.active)
			zkb_ctrl_process_deletions(z);
	} else if (strcmp(path, "/admin/reassign_partitions") == 0) {
		zkb_reasn_process_node(z);
	} else if (strcmp(path, "/admin/preferred_replica_election") == 0) {
		if (z->ctrl.active)
			zkb_elect_process_znode(z);
	}
}

/* After an expiry, or while that is not done: a new session, the
 * registration, everything read and emitted again, the election. */
static void renew_session(zkb *z)
{
	zkb_ctrl_resign(z, "its ZooKeeper session expired");
	z->registered = false;
	if (ctl_zk_state(z->zk) != CTL_ZK_STATE_CONNECTED || ctl_zk_session_id(z->zk) == 0) {
		int rc = ctl_zk_reopen(z->zk);
		if (rc != CTL_ZK_OK) {
			fprintf(stderr, "samsa: ZooKeeper session expired; no new session yet (%s)\n",
				ctl_zk_strerror(rc));
			z->stale = true;
			zkb_retry_in(z, RETRY_MS);
			return;
		}
	}
	/* The expired session's node is gone: no wait for another. */
	int rc = register_self(z, zkb_mono_ms() + z->session_timeout_ms);
	if (rc != CTL_ZK_OK) {
		fprintf(stderr, "samsa: cannot register broker %d again after a session expiry: %s\n",
			(int)z->self.id, ctl_zk_strerror(rc));
		z->stale = true;
		zkb_retry_in(z, RETRY_MS);
		return;
	}
	fprintf(stderr, "samsa: new ZooKeeper session; broker %d registered again (epoch %lld)\n",
		(int)z->self.id, (long long)z->self.epoch);
	if (zkb_view_refresh_all(z, ZKB_READ_ALL_EMIT) != CTL_ZK_OK) {
		zkb_retry_in(z, RETRY_MS);
		return;
	}
	controller_read(z);
}

static void free_triggers(zkb_trigger *t)
{
	while (t) {
		zkb_trigger *next = t->next;
		free(t);
		t = next;
	}
}

static void drain(ctl *c, void *arg)
{
	(void)c;
	zkb *z = arg;
	pthread_mutex_lock(&z->mu);
	zkb_pending p = z->pending;
	memset(&z->pending, 0, sizeof(z->pending));
	z->drain_posted = false;
	pthread_mutex_unlock(&z->mu);

	/* An expiry of this session (not of one renewed since), or a renewal
	 * that did not finish. */
	if ((p.expired && ctl_zk_state(z->zk) == CTL_ZK_STATE_EXPIRED_SESSION) || !z->registered) {
		/* The new session re-reads everything: the triggers are moot. */
		renew_session(z);
		free_triggers(p.paths);
		return;
	}
	if (p.reread) {
		z->stale = true;
		p.tick = true;
	}
	for (zkb_trigger *t = p.paths; t; t = t->next)
		on_trigger(z, t->path);
	free_triggers(p.paths);
	if (z->stale && (p.connected || p.tick)) {
		if (zkb_view_refresh_all(z, ZKB_READ_ALL) != CTL_ZK_OK)
			zkb_retry_in(z, RETRY_MS);
		else
			controller_read(z);
	}
	if (z->ctrl.active && z->ctrl.retry && (p.connected || p.tick)) {
		z->ctrl.retry = false;
		zkb_ctrl_process_deletions(z);
		zkb_ctrl_reconcile_all(z);
		zkb_reasn_check_all(z);
		zkb_elect_process_znode(z);
	}
	if (p.rebalance)
		zkb_elect_rebalance(z);
	if (!z->ctrl.active && z->controller_id < 0 && (p.connected || p.tick))
		zkb_ctrl_elect(z);
}

/* ---- test aid ---- */

typedef struct expire_call {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc;
} expire_call;

static void expire_job(ctl *c, void *arg)
{
	expire_call *e = arg;
	zkb *z = ctl_backend_state(c);
	int rc = z ? ctl_zk_expire_session_for_test(z->zk) : CTL_ZK_INVALIDSTATE;
	pthread_mutex_lock(&e->mu);
	e->rc = rc;
	e->done = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

int ctl_zk_backend_expire_session_for_test(ctl *c)
{
	expire_call e = { .done = false };
	pthread_mutex_init(&e.mu, NULL);
	pthread_cond_init(&e.cv, NULL);
	int rc = ctl_post(c, expire_job, &e);
	if (rc == 0) {
		pthread_mutex_lock(&e.mu);
		while (!e.done)
			pthread_cond_wait(&e.cv, &e.mu);
		rc = e.rc;
		pthread_mutex_unlock(&e.mu);
	}
	pthread_cond_destroy(&e.cv);
	pthread_mutex_destroy(&e.mu);
	return rc;
}

/* ---- the back end ---- */

static void zkb_free(zkb *z)
{
	if (z->timer_started) {
		pthread_mutex_lock(&z->mu);
		z->timer_stop = true;
		pthread_cond_signal(&z->timer_cv);
		pthread_mutex_unlock(&z->mu);
		pthread_join(z->timer, NULL);
	}
	ctl_zk_close(z->zk); /* no callback after this */
	free_triggers(z->pending.paths);
	zkb_ctrl_clear(z);
	zkb_view_clear_deletions(z);
	ctl_meta_destroy(&z->meta);
	ctl_acl_store_free(&z->acls);
	free(z->brokers);
	free(z->connect);
	pthread_cond_destroy(&z->timer_cv);
	pthread_mutex_destroy(&z->mu);
	free(z);
}

static int start(ctl *c, const ctl_options *o, void **state)
{
	*state = NULL;
	zkb *z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->c = c;
	z->self = o->self;
	z->self.id = o->broker_id;
	z->self.epoch = 0;
	z->session_timeout_ms = o->zookeeper_session_timeout_ms > 0 ? o->zookeeper_session_timeout_ms
								    : 18000;
	z->connection_timeout_ms = o->zookeeper_connection_timeout_ms > 0
					   ? o->zookeeper_connection_timeout_ms
					   : z->session_timeout_ms;
	z->unclean_default = o->unclean_leader_election_enable;
	z->auto_rebalance = o->auto_leader_rebalance_enable;
	int64_t every = o->leader_imbalance_check_interval_seconds;
	if (every <= 0)
		every = 300;
	z->imbalance_check_ms = (every < MAX_INTERVAL_S ? every : MAX_INTERVAL_S) * 1000;
	z->imbalance_pct = o->leader_imbalance_per_broker_percentage >= 0
				   ? o->leader_imbalance_per_broker_percentage
				   : 10;
	z->controller_id = -1;
	z->last_notice = -1;
	z->last_acl_change = -1;
	z->last_acl_ext_change = -1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&z->mu, NULL);
	pthread_cond_init(&z->timer_cv, &ca);
	pthread_condattr_destroy(&ca);
	z->connect = strdup(o->zookeeper_connect);
	if (!z->connect || ctl_meta_init(&z->meta) != 0) {
		zkb_free(z);
		return -ENOMEM;
	}
	ctl_zk_config cfg = { .connect = z->connect, .session_timeout_ms = z->session_timeout_ms,
			      .connection_timeout_ms = z->connection_timeout_ms,
			      .on_event = zkb_on_zk_event, .arg = z, .log_level = CTL_ZK_LOG_QUIET };
	int rc = ctl_zk_open(&cfg, &z->zk);
	if (rc != CTL_ZK_OK) {
		fprintf(stderr, "samsa: cannot connect to ZooKeeper at %s: %s\n", z->connect,
			ctl_zk_strerror(rc));
		bool unresolved = (rc == CTL_ZK_SYSTEMERROR || rc == CTL_ZK_BADARGUMENTS) &&
				  report_unresolved(z->connect);
		zkb_free(z);
		return unresolved ? -EINVAL : errno_of(rc);
	}
	if (pthread_create(&z->timer, NULL, timer_main, z) != 0) {
		zkb_free(z);
		return -ENOMEM;
	}
	z->timer_started = true;
	for (size_t i = 0; rc == CTL_ZK_OK && i < sizeof(persistent_paths) / sizeof(*persistent_paths);
	     i++)
		rc = ctl_zk_ensure_path(z->zk, persistent_paths[i]);
	if (rc == CTL_ZK_OK)
		rc = cluster_id(z);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_read_early_deletions(z);
	if (rc == CTL_ZK_OK) {
		/* A previous run's session may hold the id until it expires:
		 * wait for at most a session timeout and a margin. */
		int margin = 1000 + z->session_timeout_ms / 4;
		rc = register_self(z, zkb_mono_ms() + z->session_timeout_ms + margin);
	}
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_all(z, ZKB_READ_ALL_EMIT);
	if (rc == CTL_ZK_OK)
		zkb_view_emit_early_deletions(z);
	if (rc != CTL_ZK_OK) {
		fprintf(stderr, "samsa: ZooKeeper start failed: %s\n", ctl_zk_strerror(rc));
		zkb_free(z);
		return errno_of(rc);
	}
	controller_read(z);
	*state = z;
	return 0;
}

static void run(ctl *c, void *state, const ctl_op *op, ctl_result *r)
{
	(void)c;
	zkb_run_op(state, op, r);
}

static void stop(ctl *c, void *state)
{
	(void)c;
	if (state)
		zkb_free(state);
}

const ctl_backend_ops ctl_zk_backend = { start, run, stop };
