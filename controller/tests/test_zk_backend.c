/*
 * test_zk_backend.c - the ZooKeeper back end of the controller (ctl.h with
 * zookeeper_connect set) against a real ZooKeeper (Debian's 3.8, started by
 * compat-tests/harness.h on a free 127.0.0.1 port, stopped and removed with
 * its files at exit). Several ctl instances in one process act as brokers
 * 1, 2 and 3; each test works under its own chroot, so tests do not see each
 * other's znodes. Session timeout 4000 ms (CLUSTER.md 6.4).
 *
 * Each broker's events are applied to a mirror, as the broker's loop would
 * (brokers, controller, topics with their states, deletions, broker
 * configs), and the tests wait on the mirrors; znodes are read with a
 * session of the test's own.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/harness.h"
#include "controller/ctl.h"
#include "controller/elect.h"
#include "controller/zk.h"
#include "controller/zk_backend.h"
#include "controller/zk_json.h"
#include "protocol/err.h"
#include "storage/logdir.h"

#define SESSION_MS 4000
#define WAIT_MS 15000
#define MAXB 4 /* brokers 1..3 (index = id) */
#define MAXT 16

static char zk_hosts[64];

/* ---- a broker's mirror of the events ---- */

typedef struct mirror {
	ctl *c;
	int32_t id;
	char connect[256];
	ctl_broker brokers[8];
	int nbrokers;
	int32_t controller, controller_epoch;
	int controller_events;
	ctl_topic *topics[MAXT];
	int ntopics;
	char deleted[MAXT][CTL_TOPIC_NAME_MAX + 1];
	int ndeleted;
	ctl_config_entry *bconf[MAXB + 1]; /* [0] default, [id] broker id */
	int32_t nbconf[MAXB + 1];
	int bconf_events;
	char *cc_entity[MAXT]; /* client entity configs */
	ctl_config_entry *cc_conf[MAXT];
	int32_t cc_n[MAXT], cc_ver[MAXT];
	int ncc;
	ctl_result results[32];
	int nresults;
	int partition_events;
	long long last_partition_ms;
	ctl_acl_store acls;  /* from CTL_EV_ACLS */
	int acl_events;
} mirror;

static mirror mirrors[MAXB];
static char chroot_path[128];

static const ctl_topic *m_topic(const mirror *m, const char *name)
{
	for (int i = 0; i < m->ntopics; i++)
		if (strcmp(m->topics[i]->name, name) == 0)
			return m->topics[i];
	return NULL;
}

static const ctl_partition *m_part(const mirror *m, const char *name, int32_t p)
{
	const ctl_topic *t = m_topic(m, name);
	return t && p < t->npartitions ? &t->partitions[p] : NULL;
}

static void apply(mirror *m, ctl_event *e)
{
	switch (e->type) {
	case CTL_EV_BROKERS:
		ck_assert_int_le(e->u.brokers.n, 8);
		m->nbrokers = e->u.brokers.n;
		memcpy(m->brokers, e->u.brokers.v, (size_t)e->u.brokers.n * sizeof(ctl_broker));
		break;
	case CTL_EV_CONTROLLER:
		m->controller = e->u.controller.id;
		m->controller_epoch = e->u.controller.epoch;
		m->controller_events++;
		break;
	case CTL_EV_TOPIC: {
		int i;
		for (i = 0; i < m->ntopics; i++)
			if (strcmp(m->topics[i]->name, e->u.topic->name) == 0)
				break;
		ck_assert_int_lt(i, MAXT);
		if (i < m->ntopics)
			ctl_topic_free(m->topics[i]);
		else
			m->ntopics++;
		m->topics[i] = e->u.topic;
		e->u.topic = NULL;
		break;
	}
	case CTL_EV_TOPIC_DELETED:
		if (m->ndeleted < MAXT)
			snprintf(m->deleted[m->ndeleted++], CTL_TOPIC_NAME_MAX + 1, "%s",
				 e->u.deleted.name);
		for (int i = 0; i < m->ntopics; i++)
			if (strcmp(m->topics[i]->name, e->u.deleted.name) == 0) {
				ck_assert(memcmp(m->topics[i]->id, e->u.deleted.id, 16) == 0);
				ctl_topic_free(m->topics[i]);
				m->topics[i] = m->topics[--m->ntopics];
				break;
			}
		break;
	case CTL_EV_PARTITION: {
		m->partition_events++;
		m->last_partition_ms = h_now_ms();
		for (int i = 0; i < m->ntopics; i++) {
			ctl_topic *t = m->topics[i];
			if (memcmp(t->id, e->u.partition.topic_id, 16) != 0)
				continue;
			int32_t p = e->u.partition.state.partition;
			ck_assert_int_lt(p, t->npartitions);
			ctl_partition_clear(&t->partitions[p]);
			t->partitions[p] = e->u.partition.state;
			memset(&e->u.partition.state, 0, sizeof(e->u.partition.state));
		}
		break;
	}
	case CTL_EV_BROKER_CONFIGS: {
		int32_t id = e->u.broker_configs.broker_id;
		int k = id == CTL_BROKER_DEFAULT ? 0 : id;
		ck_assert(k >= 0 && k <= MAXB);
		ctl_configs_free(m->bconf[k], m->nbconf[k]);
		m->bconf[k] = e->u.broker_configs.configs;
		m->nbconf[k] = e->u.broker_configs.nconfigs;
		e->u.broker_configs.configs = NULL;
		e->u.broker_configs.nconfigs = 0;
		m->bconf_events++;
		break;
	}
	case CTL_EV_CLIENT_CONFIGS: {
		int i;
		for (i = 0; i < m->ncc; i++)
			if (strcmp(m->cc_entity[i], e->u.client_configs.entity) == 0)
				break;
		if (i < m->ncc) {
			free(m->cc_entity[i]);
			ctl_configs_free(m->cc_conf[i], m->cc_n[i]);
			m->ncc--;
			m->cc_entity[i] = m->cc_entity[m->ncc];
			m->cc_conf[i] = m->cc_conf[m->ncc];
			m->cc_n[i] = m->cc_n[m->ncc];
			m->cc_ver[i] = m->cc_ver[m->ncc];
		}
		if (e->u.client_configs.version < 0)
			break;
		ck_assert_int_lt(m->ncc, MAXT);
		m->cc_entity[m->ncc] = e->u.client_configs.entity;
		m->cc_conf[m->ncc] = e->u.client_configs.configs;
		m->cc_n[m->ncc] = e->u.client_configs.nconfigs;
		m->cc_ver[m->ncc] = e->u.client_configs.version;
		m->ncc++;
		e->u.client_configs.entity = NULL;
		e->u.client_configs.configs = NULL;
		e->u.client_configs.nconfigs = 0;
		break;
	}
	case CTL_EV_RESULT:
		ck_assert_int_lt(m->nresults, 32);
		m->results[m->nresults++] = e->u.result;
		break;
	case CTL_EV_ACLS:
		ck_assert_int_eq(ctl_acl_store_put(&m->acls, &e->u.acls), 0);
		m->acl_events++;
		break;
	}
}

static void pump(mirror *m)
{
	if (!m->c)
		return;
	ctl_event *e;
	while ((e = ctl_next_event(m->c))) {
		apply(m, e);
		ctl_event_free(e);
	}
}

static void pump_all(void)
{
	for (int i = 0; i < MAXB; i++)
		pump(&mirrors[i]);
}

static void mirror_clear(mirror *m)
{
	for (int i = 0; i < m->ntopics; i++)
		ctl_topic_free(m->topics[i]);
	for (int i = 0; i <= MAXB; i++)
		ctl_configs_free(m->bconf[i], m->nbconf[i]);
	ctl_acl_store_free(&m->acls);
	for (int i = 0; i < m->ncc; i++) {
		free(m->cc_entity[i]);
		ctl_configs_free(m->cc_conf[i], m->cc_n[i]);
	}
	memset(m, 0, sizeof(*m));
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* What every mirror holds (to stderr, when a wait fails). */
static void dump_mirrors(void)
{
	for (int b = 1; b < MAXB; b++) {
		const mirror *m = &mirrors[b];
		if (!m->c)
			continue;
		fprintf(stderr, "broker %d: controller %d epoch %d; brokers", b, (int)m->controller,
			(int)m->controller_epoch);
		for (int i = 0; i < m->nbrokers; i++)
			fprintf(stderr, " %d@%lld", (int)m->brokers[i].id,
				(long long)m->brokers[i].epoch);
		fprintf(stderr, "\n");
		for (int i = 0; i < m->ntopics; i++) {
			const ctl_topic *t = m->topics[i];
			for (int p = 0; p < t->npartitions; p++) {
				const ctl_partition *cp = &t->partitions[p];
				fprintf(stderr, "  %s-%d leader %d epoch %d version %d isr", t->name, p,
					(int)cp->leader, (int)cp->leader_epoch, (int)cp->partition_epoch);
				for (int k = 0; k < cp->nisr; k++)
					fprintf(stderr, " %d", (int)cp->isr[k]);
				fprintf(stderr, "\n");
			}
		}
	}
}

/* Pump every mirror until cond holds, at most ms. */
#define WAIT_UNTIL(cond, ms, ...)                                               \
	do {                                                                    \
		long long dl_ = h_now_ms() + h_scaled_ms(ms);                   \
		for (;;) {                                                      \
			pump_all();                                             \
			if (cond)                                               \
				break;                                          \
			if (h_now_ms() >= dl_)                                  \
				dump_mirrors();                                 \
			ck_assert_msg(h_now_ms() < dl_, __VA_ARGS__);           \
			sleep_ms(5);                                            \
		}                                                               \
	} while (0)

static void set_chroot(const char *name)
{
	snprintf(chroot_path, sizeof(chroot_path), "/t-%s", name);
}

static ctl_options broker_options(int32_t id, const char *rack, bool unclean)
{
	mirror *m = &mirrors[id];
	snprintf(m->connect, sizeof(m->connect), "%s%s", zk_hosts, chroot_path);
	ctl_options o = { .broker_id = id, .zookeeper_connect = m->connect,
			  .zookeeper_session_timeout_ms = SESSION_MS,
			  .zookeeper_connection_timeout_ms = h_scaled_ms(10000),
			  .unclean_leader_election_enable = unclean };
	o.self.id = id;
	snprintf(o.self.host, sizeof(o.self.host), "127.0.0.1");
	o.self.port = 9000 + id;
	if (rack)
		snprintf(o.self.rack, sizeof(o.self.rack), "%s", rack);
	return o;
}

static void open_broker_opts(int32_t id, const ctl_options *o)
{
	mirror *m = &mirrors[id];
	char connect[256];
	snprintf(connect, sizeof(connect), "%s", m->connect);
	mirror_clear(m);
	snprintf(m->connect, sizeof(m->connect), "%s", connect);
	m->id = id;
	m->controller = -2;
	ctl_options copy = *o;
	copy.zookeeper_connect = m->connect;
	int rc = ctl_open(&copy, &m->c);
	ck_assert_msg(rc == 0, "broker %d: ctl_open: %d", id, rc);
	pump(m);
}

static void open_broker(int32_t id)
{
	ctl_options o = broker_options(id, NULL, false);
	open_broker_opts(id, &o);
}

static void close_broker(int32_t id)
{
	mirror *m = &mirrors[id];
	ctl_close(m->c);
	m->c = NULL;
}

static void close_all(void)
{
	for (int i = 0; i < MAXB; i++) {
		close_broker(i);
		mirror_clear(&mirrors[i]);
	}
}

/* Wait until broker id's view (its mirror, fed by its ctl) holds n
 * registered brokers: a topic created with replicas on a broker that
 * registered a moment ago is refused until the view has it (39). */
static void wait_brokers(int32_t id, int n)
{
	WAIT_UNTIL(mirrors[id].nbrokers == n, WAIT_MS, "broker %d sees %d brokers", (int)id, n);
}

/* Submit op on broker id's ctl and wait for its result. */
static ctl_result call(int32_t id, const ctl_op *op)
{
	mirror *m = &mirrors[id];
	uint64_t rid = ctl_submit(m->c, op);
	ck_assert_uint_gt(rid, 0);
	long long dl = h_now_ms() + h_scaled_ms(WAIT_MS);
	for (;;) {
		pump_all();
		for (int i = 0; i < m->nresults; i++)
			if (m->results[i].id == rid) {
				ctl_result r = m->results[i];
				m->results[i] = m->results[--m->nresults];
				return r;
			}
		ck_assert_msg(h_now_ms() < dl, "no result for op %d on broker %d", (int)op->type,
			      (int)id);
		ctl_wait_event(m->c, 5);
	}
}

static ctl_result create_topic(int32_t on, const char *name, int32_t partitions, int16_t rf,
			       const ctl_replica_list *as, int32_t nas, const ctl_config_entry *cfg,
			       int32_t ncfg)
{
	ctl_op op = { .type = CTL_OP_CREATE_TOPIC, .partitions = partitions,
		      .replication_factor = rf, .assignments = as, .nassignments = nas,
		      .configs = cfg, .nconfigs = ncfg };
	snprintf(op.topic, sizeof(op.topic), "%s", name);
	return call(on, &op);
}

/* Create name with one partition per row of ids (rows of n). */
static void create_manual(int32_t on, const char *name, const int32_t *ids, int32_t rows,
			  int32_t n, const ctl_config_entry *cfg, int32_t ncfg)
{
	ctl_replica_list as[16];
	for (int32_t i = 0; i < rows; i++)
		as[i] = (ctl_replica_list){ &ids[i * n], n };
	ctl_result r = create_topic(on, name, 0, 0, as, rows, cfg, ncfg);
	ck_assert_msg(r.error == 0, "create %s: %d %s", name, r.error, r.msg);
}

static bool ids_are(const int32_t *v, int32_t n, const int32_t *want, int32_t nwant)
{
	return n == nwant && (n == 0 || memcmp(v, want, (size_t)n * sizeof(*v)) == 0);
}

/* Partition p of name, as broker id's mirror has it, is (leader, epoch,
 * isr). */
static bool state_is(int32_t id, const char *name, int32_t p, int32_t leader, int32_t epoch,
		     const int32_t *isr, int32_t nisr)
{
	const ctl_partition *cp = m_part(&mirrors[id], name, p);
	return cp && cp->leader == leader && cp->leader_epoch == epoch &&
	       ids_are(cp->isr, cp->nisr, isr, nisr);
}

static bool all_state_is(const int32_t *on, int non, const char *name, int32_t p, int32_t leader,
			 int32_t epoch, const int32_t *isr, int32_t nisr)
{
	for (int i = 0; i < non; i++)
		if (!state_is(on[i], name, p, leader, epoch, isr, nisr))
			return false;
	return true;
}

/* ---- the test's own session ---- */

static ctl_zk *raw_open(void)
{
	char connect[256];
	snprintf(connect, sizeof(connect), "%s%s", zk_hosts, chroot_path);
	ctl_zk_config cfg = { .connect = connect, .session_timeout_ms = SESSION_MS,
			      .connection_timeout_ms = h_scaled_ms(10000) };
	ctl_zk *zk = NULL;
	int rc = ctl_zk_open(&cfg, &zk);
	ck_assert_msg(rc == CTL_ZK_OK, "open %s: %s", connect, ctl_zk_strerror(rc));
	return zk;
}

/* Data of path (caller frees), NULL when absent. */
static char *raw_get(ctl_zk *zk, const char *path, ctl_zk_stat *st)
{
	char *data;
	int len;
	int rc = ctl_zk_get(zk, path, false, &data, &len, st);
	if (rc == CTL_ZK_NONODE)
		return NULL;
	ck_assert_msg(rc == CTL_ZK_OK, "get %s: %s", path, ctl_zk_strerror(rc));
	return data ? data : strdup("");
}

static bool raw_exists(ctl_zk *zk, const char *path)
{
	int rc = ctl_zk_exists(zk, path, false, NULL);
	ck_assert(rc == CTL_ZK_OK || rc == CTL_ZK_NONODE);
	return rc == CTL_ZK_OK;
}

static int32_t raw_controller_epoch(ctl_zk *zk)
{
	char *d = raw_get(zk, "/controller_epoch", NULL);
	ck_assert_ptr_nonnull(d);
	int32_t e = atoi(d);
	free(d);
	return e;
}

static int32_t raw_controller(ctl_zk *zk)
{
	char *d = raw_get(zk, "/controller", NULL);
	if (!d)
		return -1;
	const char *p = strstr(d, "\"brokerid\":");
	ck_assert_ptr_nonnull(p);
	int32_t id = atoi(p + 11);
	free(d);
	return id;
}

/* The timestamp member of a JSON text ("timestamp":"<digits>"). */
static long long json_timestamp(const char *json)
{
	const char *p = strstr(json, "\"timestamp\":\"");
	ck_assert_ptr_nonnull(p);
	return atoll(p + 13);
}

/* ---- tests ---- */

/* The znodes after three brokers start and a topic is created, byte for
 * byte as Kafka writes them (CLUSTER.md 6.5 test 1). */
START_TEST(test_layout)
{
	set_chroot("layout");
	ctl_options o = broker_options(1, "r1", false);
	open_broker_opts(1, &o);
	open_broker(2);
	open_broker(3);
	ctl_zk *zk = raw_open();
	static const char *const paths[] = {
		"/consumers", "/brokers/ids", "/brokers/topics", "/config/changes",
		"/admin/delete_topics", "/brokers/seqid", "/isr_change_notification",
		"/latest_producer_id_block", "/log_dir_event_notification", "/config/topics",
		"/config/clients", "/config/users", "/config/brokers", "/config/ips",
		"/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended/prefixed",
		"/kafka-acl-extended-changes",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++)
		ck_assert_msg(raw_exists(zk, paths[i]), "%s", paths[i]);

	/* registration v5 (rack after endpoints), epoch = czxid */
	ctl_zk_stat st;
	char *d = raw_get(zk, "/brokers/ids/1", &st);
	char want[512];
	snprintf(want, sizeof(want),
		 "{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":\"PLAINTEXT\"},"
		 "\"endpoints\":[\"PLAINTEXT://127.0.0.1:9001\"],\"rack\":\"r1\",\"jmx_port\":-1,"
		 "\"port\":9001,\"host\":\"127.0.0.1\",\"version\":5,\"timestamp\":\"%lld\"}",
		 json_timestamp(d));
	ck_assert_str_eq(d, want);
	free(d);
	ck_assert(st.ephemeral_owner != 0);
	WAIT_UNTIL(mirrors[1].nbrokers == 3 && mirrors[2].nbrokers == 3 && mirrors[3].nbrokers == 3,
		   WAIT_MS, "every broker sees three");
	for (int b = 1; b <= 3; b++) {
		ck_assert_int_eq(mirrors[b].brokers[0].id, 1);
		ck_assert_int_eq(mirrors[b].brokers[0].epoch, st.czxid);
		ck_assert_str_eq(mirrors[b].brokers[0].rack, "r1");
		ck_assert_int_eq(mirrors[b].brokers[2].port, 9003);
		ck_assert_str_eq(mirrors[b].brokers[2].rack, "");
	}
	d = raw_get(zk, "/brokers/ids/2", NULL);
	ck_assert_ptr_null(strstr(d, "rack")); /* omitted when unset */
	free(d);

	/* the first broker is the controller, epoch 1 */
	d = raw_get(zk, "/controller", &st);
	snprintf(want, sizeof(want), "{\"version\":1,\"brokerid\":1,\"timestamp\":\"%lld\"}",
		 json_timestamp(d));
	ck_assert_str_eq(d, want);
	free(d);
	ck_assert(st.ephemeral_owner != 0);
	d = raw_get(zk, "/controller_epoch", &st);
	ck_assert_str_eq(d, "1");
	free(d);
	for (int b = 1; b <= 3; b++) {
		ck_assert_int_eq(mirrors[b].controller, 1);
		ck_assert_int_eq(mirrors[b].controller_epoch, 1);
	}

	/* /cluster/id: one id, the same for all */
	d = raw_get(zk, "/cluster/id", NULL);
	snprintf(want, sizeof(want), "{\"version\":\"1\",\"id\":\"%s\"}",
		 ctl_cluster_id(mirrors[1].c));
	ck_assert_str_eq(d, want);
	free(d);
	ck_assert_uint_eq(strlen(ctl_cluster_id(mirrors[1].c)), 22);
	ck_assert_str_eq(ctl_cluster_id(mirrors[2].c), ctl_cluster_id(mirrors[1].c));
	ck_assert_str_eq(ctl_cluster_id(mirrors[3].c), ctl_cluster_id(mirrors[1].c));

	/* a topic with a given id, a given assignment and a config (Kafka
	 * 3.x's "demo" topic, CLUSTER.md 1.3) */
	int32_t rows[] = { 2, 3, 1, 3, 1, 2, 1, 2, 3 };
	ctl_replica_list as[3] = { { &rows[0], 3 }, { &rows[3], 3 }, { &rows[6], 3 } };
	ctl_config_entry cfg[] = { { "retention.ms", "86400000" } };
	ctl_op op = { .type = CTL_OP_CREATE_TOPIC, .assignments = as, .nassignments = 3,
		      .configs = cfg, .nconfigs = 1 };
	snprintf(op.topic, sizeof(op.topic), "demo");
	ck_assert_int_eq(logdir_uuid_from_string("cMr3GpVESX2L3byPGf93lQ", op.topic_id), 0);
	ctl_result r = call(2, &op);
	ck_assert_int_eq(r.error, 0);
	ck_assert(memcmp(r.topic_id, op.topic_id, 16) == 0);
	d = raw_get(zk, "/brokers/topics/demo", NULL);
	ck_assert_str_eq(d, "{\"partitions\":{\"0\":[2,3,1],\"1\":[3,1,2],\"2\":[1,2,3]},"
			    "\"topic_id\":\"cMr3GpVESX2L3byPGf93lQ\",\"adding_replicas\":{},"
			    "\"removing_replicas\":{},\"version\":3}");
	free(d);
	d = raw_get(zk, "/config/topics/demo", NULL);
	ck_assert_str_eq(d, "{\"version\":1,\"config\":{\"retention.ms\":\"86400000\"}}");
	free(d);
	/* the controller makes the states: leader = first replica, ISR = all */
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "demo", 0, 2, 0, rows, 3) &&
		   all_state_is(on, 3, "demo", 1, 3, 0, &rows[3], 3) &&
		   all_state_is(on, 3, "demo", 2, 1, 0, &rows[6], 3),
		   WAIT_MS, "states of demo on every broker");
	d = raw_get(zk, "/brokers/topics/demo/partitions/1/state", &st);
	ck_assert_str_eq(d, "{\"controller_epoch\":1,\"leader\":3,\"version\":1,\"leader_epoch\":0,"
			    "\"isr\":[3,1,2]}");
	free(d);
	ck_assert_int_eq(st.version, 0);
	d = raw_get(zk, "/brokers/topics/demo/partitions", NULL);
	ck_assert_str_eq(d, ""); /* null data */
	free(d);
	const ctl_partition *cp = m_part(&mirrors[3], "demo", 1);
	ck_assert_int_eq(cp->partition_epoch, 0);
	ck_assert_int_eq(cp->controller_epoch, 1);
	ck_assert(ids_are(cp->replicas, cp->nreplicas, &rows[3], 3));
	const ctl_topic *t = m_topic(&mirrors[3], "demo");
	ck_assert(memcmp(t->id, op.topic_id, 16) == 0);
	ck_assert_int_eq(t->replication_factor, 3);
	ck_assert_str_eq(ctl_topic_config(t, "retention.ms"), "86400000");
	ctl_zk_close(zk);
	close_all();
}
END_TEST


/* Exactly one controller; the epoch grows by one on each failover
 * (CLUSTER.md 6.5 test 2). */
START_TEST(test_election)
{
	set_chroot("election");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	ctl_zk *zk = raw_open();
	ck_assert_int_eq(raw_controller(zk), 1);
	ck_assert_int_eq(raw_controller_epoch(zk), 1);
	WAIT_UNTIL(mirrors[2].controller == 1 && mirrors[3].controller == 1, WAIT_MS,
		   "all know the controller");
	int32_t gone = 1;
	for (int32_t epoch = 2; epoch <= 3; epoch++) {
		close_broker(gone);
		int a = gone == 1 ? 2 : 1, b = gone == 3 ? 2 : 3;
		if (gone == 2) {
			a = 1;
			b = 3;
		}
		WAIT_UNTIL(mirrors[a].controller_epoch == epoch && mirrors[b].controller_epoch == epoch &&
			   mirrors[a].controller >= 0 && mirrors[a].controller == mirrors[b].controller,
			   WAIT_MS, "a new controller with epoch %d", epoch);
		int32_t now = mirrors[a].controller;
		ck_assert(now != gone && mirrors[now].c);
		ck_assert_int_eq(raw_controller(zk), now);
		ck_assert_int_eq(raw_controller_epoch(zk), epoch);
		/* the one that went comes back: the controller stays */
		open_broker(gone);
		ck_assert_int_eq(mirrors[gone].controller, now);
		ck_assert_int_eq(mirrors[gone].controller_epoch, epoch);
		gone = now;
	}
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* A controller that another controller's election passed by (its epoch
 * moved) has its next write refused, resigns, and a new election follows;
 * nothing is written with the old epoch (CLUSTER.md 6.5 test 3). */
START_TEST(test_zombie_controller)
{
	set_chroot("zombie");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	ctl_zk *zk = raw_open();
	ck_assert_int_eq(raw_controller(zk), 1);
	/* another controller was elected meanwhile (epoch 5), as far as
	 * /controller_epoch says */
	ctl_zk_stat st;
	ck_assert_int_eq(ctl_zk_set(zk, "/controller_epoch", "5", 1, CTL_ZK_ANY_VERSION, &st),
			 CTL_ZK_OK);
	/* the next controller write: the states of a new topic */
	int32_t rows[] = { 1, 2, 3 };
	create_manual(2, "z", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on, 2, "z", 0, 1, 0, rows, 3), WAIT_MS, "states after the new election");
	ck_assert_int_eq(raw_controller_epoch(zk), 6);
	char *d = raw_get(zk, "/brokers/topics/z/partitions/0/state", &st);
	ck_assert_str_eq(d, "{\"controller_epoch\":6,\"leader\":1,\"version\":1,\"leader_epoch\":0,"
			    "\"isr\":[1,2,3]}");
	ck_assert_int_eq(st.version, 0); /* written once, by the new controller */
	free(d);
	WAIT_UNTIL(mirrors[1].controller_epoch == 6 && mirrors[2].controller_epoch == 6 &&
		   mirrors[3].controller_epoch == 6, WAIT_MS, "everyone saw epoch 6");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Leader election when brokers go (CLUSTER.md 2.3, 2.4): the first live ISR
 * member in assignment order; ISR never empty; leader -1 when none is left;
 * unclean only where configured. Also the fail-over time. */
START_TEST(test_failure_election)
{
	set_chroot("failure");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t a[] = { 1, 2, 3 }, b[] = { 2 }, cd[] = { 2, 3 };
	ctl_config_entry unclean[] = { { "unclean.leader.election.enable", "true" } };
	wait_brokers(1, 3);
	create_manual(1, "a", a, 1, 3, NULL, 0);
	create_manual(1, "b", b, 1, 1, NULL, 0);
	create_manual(1, "c", cd, 1, 2, unclean, 1);
	create_manual(1, "d", cd, 1, 2, NULL, 0);
	const int32_t on[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on, 2, "a", 0, 1, 0, a, 3) && all_state_is(on, 2, "b", 0, 2, 0, b, 1) &&
		   all_state_is(on, 2, "c", 0, 2, 0, cd, 2) && all_state_is(on, 2, "d", 0, 2, 0, cd, 2),
		   WAIT_MS, "initial states");
	/* broker 3 falls behind on c and d: their leader shrinks the ISR */
	for (int i = 0; i < 2; i++) {
		ctl_op op = { .type = CTL_OP_ALTER_ISR, .partition = 0, .leader_epoch = 0,
			      .partition_epoch = 0, .isr = b, .nisr = 1 };
		snprintf(op.topic, sizeof(op.topic), "%s", i ? "d" : "c");
		ck_assert_int_eq(call(2, &op).error, 0);
	}
	/* the controller (1) goes: 2 leads a */
	long long t0 = h_now_ms();
	close_broker(1);
	const int32_t a23[] = { 2, 3 };
	WAIT_UNTIL(state_is(3, "a", 0, 2, 1, a23, 2), WAIT_MS, "2 leads a after 1 went");
	long long failover = mirrors[3].last_partition_ms - t0;
	fprintf(stderr, "test_zk_backend: fail-over (ctl_close of leader and controller to the "
		"new state on another broker): %lld ms\n", failover);
	/* 2 goes too (now the controller): 3 is left */
	close_broker(2);
	const int32_t i3[] = { 3 }, i2[] = { 2 };
	WAIT_UNTIL(mirrors[3].controller == 3 && state_is(3, "a", 0, 3, 2, i3, 1) &&
		   state_is(3, "b", 0, -1, 1, i2, 1) && state_is(3, "c", 0, 3, 1, i3, 1) &&
		   state_is(3, "d", 0, -1, 1, i2, 1),
		   WAIT_MS, "3 leads a; b and d have no leader, their ISR [2]; c unclean to 3");
	/* 2 comes back (a new registration): b and d get their leader back */
	open_broker(2);
	const int32_t on23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on23, 2, "b", 0, 2, 2, i2, 1) && all_state_is(on23, 2, "d", 0, 2, 2, i2, 1) &&
		   all_state_is(on23, 2, "a", 0, 3, 2, i3, 1) && all_state_is(on23, 2, "c", 0, 3, 1, i3, 1),
		   WAIT_MS, "offline partitions elect 2 when it returns; the others stay");
	close_all();
}
END_TEST

/* RF 3 on 3 brokers, automatic placement: spread, states made, events on
 * all three; the creation errors. */
START_TEST(test_create_topic)
{
	set_chroot("create");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	wait_brokers(2, 3);
	ctl_result r = create_topic(2, "spread", 6, 3, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, 0);
	const int32_t on[] = { 1, 2, 3 };
	for (int p = 0; p < 6; p++)
		WAIT_UNTIL(m_part(&mirrors[1], "spread", p) && m_part(&mirrors[2], "spread", p) &&
			   m_part(&mirrors[3], "spread", p) &&
			   m_part(&mirrors[3], "spread", p)->leader >= 0 &&
			   all_state_is(on, 3, "spread", p, m_part(&mirrors[3], "spread", p)->replicas[0],
					0, m_part(&mirrors[3], "spread", p)->replicas, 3),
			   WAIT_MS, "partition %d on all three", p);
	int leaders[4] = { 0 };
	const ctl_topic *t = m_topic(&mirrors[1], "spread");
	ck_assert(memcmp(t->id, r.topic_id, 16) == 0);
	for (int p = 0; p < 6; p++) {
		const int32_t *v = t->partitions[p].replicas;
		ck_assert_int_eq(t->partitions[p].nreplicas, 3);
		ck_assert(v[0] != v[1] && v[1] != v[2] && v[0] != v[2]);
		leaders[v[0]]++;
	}
	ck_assert(leaders[1] == 2 && leaders[2] == 2 && leaders[3] == 2);
	/* errors */
	r = create_topic(3, "spread", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_TOPIC_ALREADY_EXISTS);
	r = create_topic(3, "four", 1, 4, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICATION_FACTOR);
	ck_assert_str_eq(r.msg, "Unable to replicate the partition 4 time(s): The target "
			       "replication factor of 4 cannot be reached because only 3 broker(s) "
			       "are registered.");
	int32_t nine[] = { 1, 9 };
	ctl_replica_list as = { nine, 2 };
	r = create_topic(3, "nine", 0, 0, &as, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	r = create_topic(3, "bad/name", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_TOPIC_EXCEPTION);
	r = create_topic(3, "spr.ead", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, 0);
	r = create_topic(3, "spr_ead", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_TOPIC_EXCEPTION);
	r = create_topic(3, "zero", 0, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_PARTITIONS);
	ctl_zk *zk = raw_open();
	ck_assert(!raw_exists(zk, "/brokers/topics/four"));
	ck_assert(!raw_exists(zk, "/config/topics/four"));
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Deletion: the marker, then every znode goes and every broker hears of
 * it (CLUSTER.md 2.9); a marker written by a tool works the same. */
START_TEST(test_delete_topic)
{
	set_chroot("delete");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	wait_brokers(1, 3);
	ck_assert_int_eq(create_topic(1, "gone", 3, 2, NULL, 0, NULL, 0).error, 0);
	ck_assert_int_eq(create_topic(1, "tool", 1, 3, NULL, 0, NULL, 0).error, 0);
	WAIT_UNTIL(m_part(&mirrors[1], "gone", 2) && m_part(&mirrors[2], "gone", 2) &&
		   m_part(&mirrors[3], "gone", 2) && m_part(&mirrors[3], "gone", 2)->leader >= 0 &&
		   m_part(&mirrors[3], "tool", 0) && m_part(&mirrors[3], "tool", 0)->leader >= 0,
		   WAIT_MS, "topics everywhere");
	ctl_op op = { .type = CTL_OP_DELETE_TOPIC };
	snprintf(op.topic, sizeof(op.topic), "gone");
	ck_assert_int_eq(call(3, &op).error, 0);
	WAIT_UNTIL(!m_topic(&mirrors[1], "gone") && !m_topic(&mirrors[2], "gone") &&
		   !m_topic(&mirrors[3], "gone"), WAIT_MS, "deleted everywhere");
	for (int b = 1; b <= 3; b++)
		ck_assert_str_eq(mirrors[b].deleted[0], "gone");
	/* gone for the brokers once marked; the znodes follow at once, every
	 * replica's broker being live */
	ctl_zk *zk = raw_open();
	WAIT_UNTIL(!raw_exists(zk, "/admin/delete_topics/gone"), WAIT_MS, "the mark stays");
	ck_assert(!raw_exists(zk, "/brokers/topics/gone"));
	ck_assert(!raw_exists(zk, "/config/topics/gone"));
	ck_assert_int_eq(call(3, &op).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	/* by hand, as kafka-topics.sh --delete --zookeeper does */
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/delete_topics/tool", NULL, CTL_ZK_NULL_DATA,
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	WAIT_UNTIL(!m_topic(&mirrors[1], "tool") && !m_topic(&mirrors[2], "tool") &&
		   !m_topic(&mirrors[3], "tool"), WAIT_MS, "tool's deletion");
	WAIT_UNTIL(!raw_exists(zk, "/admin/delete_topics/tool"), WAIT_MS, "tool's mark stays");
	ck_assert(!raw_exists(zk, "/brokers/topics/tool"));
	/* a deleted name is free again, with a new id */
	ck_assert_int_eq(create_topic(2, "gone", 1, 1, NULL, 0, NULL, 0).error, 0);
	WAIT_UNTIL(m_topic(&mirrors[1], "gone"), WAIT_MS, "new gone");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* CreatePartitions: the topic znode grows, the new partitions get states
 * everywhere; Kafka's errors. */
START_TEST(test_create_partitions)
{
	set_chroot("partitions");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 1, 2, 2, 3 };
	wait_brokers(1, 3);
	create_manual(1, "grow", rows, 2, 2, NULL, 0);
	ctl_op op = { .type = CTL_OP_CREATE_PARTITIONS, .partitions = 5 };
	snprintf(op.topic, sizeof(op.topic), "grow");
	ctl_result r = call(3, &op);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	for (int p = 0; p < 5; p++)
		WAIT_UNTIL(m_part(&mirrors[1], "grow", p) && m_part(&mirrors[2], "grow", p) &&
			   m_part(&mirrors[3], "grow", p) && m_part(&mirrors[1], "grow", p)->leader >= 0 &&
			   m_part(&mirrors[2], "grow", p)->leader >= 0 &&
			   m_part(&mirrors[3], "grow", p)->leader >= 0,
			   WAIT_MS, "partition %d everywhere", p);
	/* Kafka continues from the index of partition 0's first replica:
	 * partitions 2, 3, 4 lead on brokers 3, 1, 2 */
	const ctl_topic *t = m_topic(&mirrors[2], "grow");
	ck_assert_int_eq(t->partitions[2].replicas[0], 3);
	ck_assert_int_eq(t->partitions[3].replicas[0], 1);
	ck_assert_int_eq(t->partitions[4].replicas[0], 2);
	for (int p = 2; p < 5; p++) {
		ck_assert_int_eq(t->partitions[p].nreplicas, 2);
		ck_assert(t->partitions[p].replicas[0] != t->partitions[p].replicas[1]);
		ck_assert_int_eq(t->partitions[p].leader, t->partitions[p].replicas[0]);
	}
	r = call(3, &op);
	ck_assert_int_eq(r.error, KERR_INVALID_PARTITIONS);
	ck_assert_str_eq(r.msg, "Topic already has 5 partition(s).");
	op.partitions = 3;
	ck_assert_int_eq(call(1, &op).error, KERR_INVALID_PARTITIONS);
	int32_t manual[] = { 3, 1 };
	ctl_replica_list as = { manual, 2 };
	op.partitions = 6;
	op.assignments = &as;
	op.nassignments = 1;
	ck_assert_int_eq(call(1, &op).error, 0);
	WAIT_UNTIL(m_part(&mirrors[2], "grow", 5) && m_part(&mirrors[2], "grow", 5)->leader == 3,
		   WAIT_MS, "manual partition 5");
	manual[1] = 3;
	op.partitions = 7;
	ck_assert_int_eq(call(1, &op).error, KERR_INVALID_REPLICA_ASSIGNMENT);
	snprintf(op.topic, sizeof(op.topic), "nope");
	ck_assert_int_eq(call(1, &op).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	close_all();
}
END_TEST

/* Configs reach the other brokers through the change notices (v2 from us,
 * v1 from an old tool). */
START_TEST(test_configs)
{
	set_chroot("configs");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	wait_brokers(1, 3);
	ck_assert_int_eq(create_topic(1, "cfg", 1, 3, NULL, 0, NULL, 0).error, 0);
	WAIT_UNTIL(m_topic(&mirrors[2], "cfg") && m_topic(&mirrors[3], "cfg"), WAIT_MS, "cfg");
	ctl_config_entry tc[] = { { "retention.ms", "5000" }, { "min.insync.replicas", "2" } };
	ctl_op op = { .type = CTL_OP_SET_TOPIC_CONFIGS, .configs = tc, .nconfigs = 2 };
	snprintf(op.topic, sizeof(op.topic), "cfg");
	ck_assert_int_eq(call(1, &op).error, 0);
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(m_topic(&mirrors[b], "cfg")->nconfigs == 2 &&
			   strcmp(ctl_topic_config(m_topic(&mirrors[b], "cfg"), "retention.ms"),
				  "5000") == 0,
			   WAIT_MS, "topic configs on broker %d", b);
	snprintf(op.topic, sizeof(op.topic), "nope");
	ck_assert_int_eq(call(1, &op).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);

	ctl_config_entry bc[] = { { "log.retention.ms", "1000" } };
	ctl_op bop = { .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = CTL_BROKER_DEFAULT,
		       .configs = bc, .nconfigs = 1 };
	ck_assert_int_eq(call(2, &bop).error, 0);
	bop.broker_id = 3;
	ck_assert_int_eq(call(2, &bop).error, 0);
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(mirrors[b].nbconf[0] == 1 && mirrors[b].nbconf[3] == 1 &&
			   strcmp(mirrors[b].bconf[0][0].value, "1000") == 0,
			   WAIT_MS, "broker configs on broker %d", b);
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/config/brokers/<default>", NULL);
	ck_assert_str_eq(d, "{\"version\":1,\"config\":{\"log.retention.ms\":\"1000\"}}");
	free(d);
	d = raw_get(zk, "/config/changes/config_change_0000000000", NULL);
	ck_assert_str_eq(d, "{\"version\":2,\"entity_path\":\"topics/cfg\"}");
	free(d);
	/* an old tool: the config, then a v1 notice */
	const char *conf = "{\"version\":1,\"config\":{\"cleanup.policy\":\"compact\"}}";
	ck_assert_int_eq(ctl_zk_set(zk, "/config/topics/cfg", conf, (int)strlen(conf),
				    CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	const char *v1 = "{\"version\":1,\"entity_type\":\"topics\",\"entity_name\":\"cfg\"}";
	ck_assert_int_eq(ctl_zk_create(zk, "/config/changes/config_change_", v1, (int)strlen(v1),
				       CTL_ZK_PERSISTENT_SEQUENTIAL, NULL, 0, NULL), CTL_ZK_OK);
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(m_topic(&mirrors[b], "cfg")->nconfigs == 1 &&
			   strcmp(ctl_topic_config(m_topic(&mirrors[b], "cfg"), "cleanup.policy"),
				  "compact") == 0,
			   WAIT_MS, "v1 notice on broker %d", b);
	/* a broker opened now reads them all at start */
	close_broker(3);
	open_broker(3);
	ck_assert_int_eq(mirrors[3].nbconf[0], 1);
	ck_assert_int_eq(mirrors[3].nbconf[3], 1);
	ck_assert_str_eq(ctl_topic_config(m_topic(&mirrors[3], "cfg"), "cleanup.policy"), "compact");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* The value of name in entity's configs as mirror m has them (NULL:
 * none); *version (optional) the entity's version, -1 when absent. */
static const char *cc_value(const mirror *m, const char *entity, const char *name,
			    int32_t *version)
{
	if (version)
		*version = -1;
	for (int i = 0; i < m->ncc; i++) {
		if (strcmp(m->cc_entity[i], entity) != 0)
			continue;
		if (version)
			*version = m->cc_ver[i];
		for (int32_t k = 0; k < m->cc_n[i]; k++)
			if (strcmp(m->cc_conf[i][k].name, name) == 0)
				return m->cc_conf[i][k].value;
	}
	return NULL;
}

static bool cc_is(const mirror *m, const char *entity, const char *name, const char *value)
{
	const char *v = cc_value(m, entity, name, NULL);
	return value ? v && strcmp(v, value) == 0 : !v;
}

static ctl_result set_client(int32_t on, const char *entity, const ctl_config_entry *cfg,
			     int32_t n, bool cond, int32_t expected)
{
	ctl_op op = { .type = CTL_OP_SET_CLIENT_CONFIGS, .entity = entity, .configs = cfg,
		      .nconfigs = n, .conditional = cond, .expected_version = expected };
	return call(on, &op);
}

/* Client entity configs (quotas, SCRAM credentials): Kafka's znodes and
 * notices, every broker's view, conditional writes, removal with the
 * parents Kafka cleans, what an old tool writes, a full read at start. */
START_TEST(test_client_configs)
{
	set_chroot("client-configs");
	open_broker(1);
	open_broker(2);
	ctl_config_entry q[] = { { "producer_byte_rate", "1024" } };
	ctl_result r = set_client(1, "users/alice", q, 1, true, -1);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert_int_eq(r.config_version, 0);
	ck_assert(cc_is(&mirrors[1], "users/alice", "producer_byte_rate", "1024"));
	WAIT_UNTIL(cc_is(&mirrors[2], "users/alice", "producer_byte_rate", "1024"), WAIT_MS,
		   "alice on broker 2");
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/config/users/alice", NULL);
	ck_assert_str_eq(d, "{\"version\":1,\"config\":{\"producer_byte_rate\":\"1024\"}}");
	free(d);
	d = raw_get(zk, "/config/changes/config_change_0000000000", NULL);
	ck_assert_str_eq(d, "{\"version\":2,\"entity_path\":\"users/alice\"}");
	free(d);
	/* a stale version on the other broker: refused, then redone */
	ctl_config_entry both[] = { { "producer_byte_rate", "1024" },
				    { "SCRAM-SHA-256", "salt=YQ==,stored_key=Yg==,server_key=Yw==,"
						       "iterations=4096" } };
	r = set_client(2, "users/alice", both + 1, 1, true, -1);
	ck_assert_int_eq(r.error, KERR_INVALID_UPDATE_VERSION);
	int32_t v;
	cc_value(&mirrors[2], "users/alice", "producer_byte_rate", &v);
	ck_assert_int_eq(v, 0);
	r = set_client(2, "users/alice", both, 2, true, v);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert_int_eq(r.config_version, 1);
	WAIT_UNTIL(cc_is(&mirrors[1], "users/alice", "SCRAM-SHA-256",
			 "salt=YQ==,stored_key=Yg==,server_key=Yw==,iterations=4096"),
		   WAIT_MS, "alice's credential on broker 1");
	/* a (user, client id) pair, then its removal cleans the clients node */
	ctl_config_entry rp[] = { { "request_percentage", "50" } };
	r = set_client(1, "users/alice/clients/app%2F1", rp, 1, false, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert(raw_exists(zk, "/config/users/alice/clients/app%2F1"));
	WAIT_UNTIL(cc_is(&mirrors[2], "users/alice/clients/app%2F1", "request_percentage", "50"),
		   WAIT_MS, "pair on broker 2");
	r = set_client(2, "users/alice/clients/app%2F1", NULL, 0, false, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert(!raw_exists(zk, "/config/users/alice/clients"));
	ck_assert(raw_exists(zk, "/config/users/alice"));
	WAIT_UNTIL(cc_value(&mirrors[1], "users/alice/clients/app%2F1", "request_percentage", &v) ==
			   NULL && v == -1,
		   WAIT_MS, "pair gone on broker 1");
	/* errors */
	ck_assert_int_eq(set_client(1, "brokers/1", q, 1, false, 0).error, KERR_INVALID_REQUEST);
	ctl_config_entry dup[] = { { "a", "1" }, { "a", "2" } };
	ck_assert_int_eq(set_client(1, "clients/x", dup, 2, false, 0).error, KERR_INVALID_CONFIG);
	ck_assert(!raw_exists(zk, "/config/clients/x"));
	/* an old tool: the znode, then a v1 notice */
	const char *conf = "{\"version\":1,\"config\":{\"consumer_byte_rate\":\"2048\"}}";
	ck_assert_int_eq(ctl_zk_create(zk, "/config/clients/<default>", conf, (int)strlen(conf),
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	const char *v1 = "{\"version\":1,\"entity_type\":\"clients\",\"entity_name\":\"<default>\"}";
	ck_assert_int_eq(ctl_zk_create(zk, "/config/changes/config_change_", v1, (int)strlen(v1),
				       CTL_ZK_PERSISTENT_SEQUENTIAL, NULL, 0, NULL), CTL_ZK_OK);
	for (int b = 1; b <= 2; b++)
		WAIT_UNTIL(cc_is(&mirrors[b], "clients/<default>", "consumer_byte_rate", "2048"),
			   WAIT_MS, "v1 notice on broker %d", b);
	/* a broker opened now reads them all at start */
	open_broker(3);
	ck_assert(cc_is(&mirrors[3], "clients/<default>", "consumer_byte_rate", "2048"));
	ck_assert(cc_is(&mirrors[3], "users/alice", "producer_byte_rate", "1024"));
	ck_assert_int_eq(mirrors[3].ncc, 2);
	/* removal everywhere */
	r = set_client(3, "users/alice", NULL, 0, true, 1);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert(!raw_exists(zk, "/config/users/alice"));
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(mirrors[b].ncc == 1, WAIT_MS, "alice gone on broker %d", b);
	ctl_zk_close(zk);
	close_all();
}
END_TEST

static ctl_result update_acls(int32_t on, int8_t type, int8_t pattern, const char *name,
			      const ctl_acl_entry *add, int32_t nadd, const ctl_acl_entry *rm,
			      int32_t nrm)
{
	ctl_op op = { .type = CTL_OP_UPDATE_ACLS, .acl_type = type, .acl_pattern = pattern,
		      .acl_name = name, .acl_add = add, .nacl_add = nadd, .acl_remove = rm,
		      .nacl_remove = nrm };
	return call(on, &op);
}

/* Entries of a pattern on mirror m (-1 when it has none). */
static int32_t acl_count(const mirror *m, int8_t type, int8_t pattern, const char *name)
{
	const ctl_acl_resource *r = ctl_acl_store_find(&m->acls, type, pattern, name);
	return r ? r->n : -1;
}

/* ACLs in Kafka's ZooKeeper layout: the pattern znodes, the literal and
 * extended change notifications, every broker told through them; a
 * broker opened later reads them at start; an ACL written by another
 * tool (Kafka's kafka-acls.sh) with its notification is seen; removal
 * deletes the znode. */
START_TEST(test_acls)
{
	set_chroot("acls");
	open_broker(1);
	open_broker(2);
	ctl_acl_entry e[2] = {
		{ .principal = "User:alice", .host = "*", .operation = CTL_ACL_OP_READ,
		  .permission = CTL_ACL_PERM_ALLOW },
		{ .principal = "User:bob", .host = "10.0.0.1", .operation = CTL_ACL_OP_WRITE,
		  .permission = CTL_ACL_PERM_DENY },
	};
	ctl_result r = update_acls(1, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders", e, 2,
				   NULL, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert_int_eq(acl_count(&mirrors[1], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders"),
			 2);
	WAIT_UNTIL(acl_count(&mirrors[2], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders") == 2,
		   WAIT_MS, "orders' ACLs on broker 2");
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/kafka-acl/Topic/orders", NULL);
	ck_assert_str_eq(d, "{\"version\":1,\"acls\":[{\"principal\":\"User:alice\","
			    "\"permissionType\":\"Allow\",\"operation\":\"Read\",\"host\":\"*\"},"
			    "{\"principal\":\"User:bob\",\"permissionType\":\"Deny\","
			    "\"operation\":\"Write\",\"host\":\"10.0.0.1\"}]}");
	free(d);
	d = raw_get(zk, "/kafka-acl-changes/acl_changes_0000000000", NULL);
	ck_assert_str_eq(d, "Topic:orders");
	free(d);

	r = update_acls(2, CTL_ACL_RES_GROUP, CTL_ACL_PAT_PREFIXED, "app-", e, 1, NULL, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	WAIT_UNTIL(acl_count(&mirrors[1], CTL_ACL_RES_GROUP, CTL_ACL_PAT_PREFIXED, "app-") == 1,
		   WAIT_MS, "the prefixed group ACL on broker 1");
	ck_assert(raw_exists(zk, "/kafka-acl-extended/prefixed/Group/app-"));
	d = raw_get(zk, "/kafka-acl-extended-changes/acl_changes_0000000000", NULL);
	ck_assert_str_eq(d, "{\"version\":1,\"resourceType\":\"GROUP\",\"name\":\"app-\","
			    "\"patternType\":\"PREFIXED\"}");
	free(d);
	/* The same ACL again changes nothing and writes no notification. */
	r = update_acls(2, CTL_ACL_RES_GROUP, CTL_ACL_PAT_PREFIXED, "app-", e, 1, NULL, 0);
	ck_assert_int_eq(r.error, 0);
	ck_assert(!raw_exists(zk, "/kafka-acl-extended-changes/acl_changes_0000000001"));
	/* Two brokers add to one pattern at once: conditional writes keep both
	 * (the loser of a race reads again). */
	ctl_acl_entry many[20];
	for (int i = 0; i < 20; i++) {
		memset(&many[i], 0, sizeof(many[i]));
		snprintf(many[i].principal, sizeof(many[i].principal), "User:u%d", i);
		snprintf(many[i].host, sizeof(many[i].host), "*");
		many[i].operation = CTL_ACL_OP_WRITE;
		many[i].permission = CTL_ACL_PERM_ALLOW;
	}
	uint64_t ids[20];
	for (int i = 0; i < 20; i++) {
		ctl_op op = { .type = CTL_OP_UPDATE_ACLS, .acl_type = CTL_ACL_RES_TOPIC,
			      .acl_pattern = CTL_ACL_PAT_LITERAL, .acl_name = "raced",
			      .acl_add = &many[i], .nacl_add = 1 };
		ids[i] = ctl_submit(mirrors[1 + i % 2].c, &op);
		ck_assert_uint_gt(ids[i], 0);
	}
	for (int i = 0; i < 20; i++) {
		mirror *m = &mirrors[1 + i % 2];
		bool got = false;
		long long dl = h_now_ms() + h_scaled_ms(WAIT_MS);
		while (!got) {
			pump_all();
			for (int k = 0; k < m->nresults && !got; k++)
				if (m->results[k].id == ids[i]) {
					ck_assert_int_eq(m->results[k].error, 0);
					m->results[k] = m->results[--m->nresults];
					got = true;
				}
			ck_assert_msg(got || h_now_ms() < dl, "no result for update %d", i);
			if (!got)
				ctl_wait_event(m->c, 5);
		}
	}
	for (int b = 1; b <= 2; b++)
		WAIT_UNTIL(acl_count(&mirrors[b], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "raced") == 20,
			   WAIT_MS, "all 20 raced ACLs on broker %d", b);
	r = update_acls(1, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "raced", NULL, 0, many, 20);
	ck_assert_int_eq(r.error, 0);
	ck_assert(!raw_exists(zk, "/kafka-acl/Topic/raced"));

	/* Names ZooKeeper cannot hold. */
	r = update_acls(1, CTL_ACL_RES_GROUP, CTL_ACL_PAT_LITERAL, "a/b", e, 1, NULL, 0);
	ck_assert_int_eq(r.error, KERR_INVALID_REQUEST);

	/* Another tool writes a pattern and its notification. */
	const char *acl = "{\"version\":1,\"acls\":[{\"principal\":\"User:*\","
			  "\"permissionType\":\"Allow\",\"operation\":\"Describe\",\"host\":\"*\"}]}";
	ck_assert_int_eq(ctl_zk_ensure_path(zk, "/kafka-acl/TransactionalId"), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_create(zk, "/kafka-acl/TransactionalId/tx", acl, (int)strlen(acl),
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_create(zk, "/kafka-acl-changes/acl_changes_", "TransactionalId:tx",
				       18, CTL_ZK_PERSISTENT_SEQUENTIAL, NULL, 0, NULL), CTL_ZK_OK);
	for (int b = 1; b <= 2; b++)
		WAIT_UNTIL(acl_count(&mirrors[b], CTL_ACL_RES_TRANSACTIONAL_ID, CTL_ACL_PAT_LITERAL,
				     "tx") == 1, WAIT_MS, "tx's ACL on broker %d", b);

	/* A broker opened now reads them all. */
	open_broker(3);
	ck_assert_int_eq(acl_count(&mirrors[3], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders"),
			 2);
	ck_assert_int_eq(acl_count(&mirrors[3], CTL_ACL_RES_GROUP, CTL_ACL_PAT_PREFIXED, "app-"),
			 1);
	ck_assert_int_eq(mirrors[3].acls.n, 3);

	/* Removal, one entry then the last: the znode goes. */
	r = update_acls(3, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders", NULL, 0, e, 1);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(acl_count(&mirrors[b], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL,
				     "orders") == 1, WAIT_MS, "one left on broker %d", b);
	r = update_acls(1, CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL, "orders", NULL, 0, e + 1, 1);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ck_assert(!raw_exists(zk, "/kafka-acl/Topic/orders"));
	for (int b = 1; b <= 3; b++)
		WAIT_UNTIL(acl_count(&mirrors[b], CTL_ACL_RES_TOPIC, CTL_ACL_PAT_LITERAL,
				     "orders") == -1, WAIT_MS, "none left on broker %d", b);
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* The result id of m as a producer id block: its start into *start. */
static bool take_block(mirror *m, uint64_t id, int64_t *start)
{
	for (int i = 0; i < m->nresults; i++)
		if (m->results[i].id == id) {
			ck_assert_int_eq(m->results[i].error, 0);
			ck_assert_int_eq(m->results[i].producer_id_end - m->results[i].producer_id_start,
					 CTL_PRODUCER_ID_BLOCK);
			*start = m->results[i].producer_id_start;
			return true;
		}
	return false;
}

/* Producer id blocks from /latest_producer_id_block: disjoint across
 * brokers, also when asked for at once. */
START_TEST(test_producer_ids)
{
	set_chroot("pids");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	uint64_t ids[3][4];
	ctl_op op = { .type = CTL_OP_PRODUCER_IDS };
	for (int k = 0; k < 4; k++)
		for (int b = 1; b <= 3; b++)
			ids[b - 1][k] = ctl_submit(mirrors[b].c, &op);
	int64_t starts[12];
	int n = 0;
	for (int b = 1; b <= 3; b++)
		for (int k = 0; k < 4; k++) {
			WAIT_UNTIL(take_block(&mirrors[b], ids[b - 1][k], &starts[n]), WAIT_MS, "producer ids");
			n++;
		}
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(starts[i] % CTL_PRODUCER_ID_BLOCK, 0);
		ck_assert(starts[i] >= 0 && starts[i] < 12 * CTL_PRODUCER_ID_BLOCK);
		for (int k = 0; k < i; k++)
			ck_assert(starts[i] != starts[k]);
	}
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/latest_producer_id_block", NULL);
	ck_assert_ptr_nonnull(strstr(d, "\"block_start\":\"11000\",\"block_end\":\"11999\"}"));
	free(d);
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* A leader's ISR change (CLUSTER.md 2.10 path 1): success, a stale
 * version, a fenced epoch, a member that is not live. */
START_TEST(test_alter_isr)
{
	set_chroot("isr");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 1, 2, 3 };
	wait_brokers(1, 3);
	create_manual(1, "isr", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "isr", 0, 1, 0, rows, 3), WAIT_MS, "states");
	int32_t i12[] = { 1, 2 }, i1[] = { 1 }, i129[] = { 1, 2, 9 };
	ctl_op op = { .type = CTL_OP_ALTER_ISR, .partition = 0, .leader_epoch = 0,
		      .partition_epoch = 0, .isr = i12, .nisr = 2 };
	snprintf(op.topic, sizeof(op.topic), "isr");
	ctl_result r = call(1, &op);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.partition_epoch, 1);
	WAIT_UNTIL(all_state_is(on, 3, "isr", 0, 1, 0, i12, 2) &&
		   m_part(&mirrors[3], "isr", 0)->partition_epoch == 1, WAIT_MS, "[1,2] everywhere");
	/* the same write again (a retry after a lost answer): success */
	r = call(1, &op);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.partition_epoch, 1);
	/* another change at the old version */
	op.isr = i1;
	op.nisr = 1;
	ck_assert_int_eq(call(1, &op).error, KERR_INVALID_UPDATE_VERSION);
	/* a leader epoch that is not the state's, or not the leader */
	op.partition_epoch = 1;
	op.leader_epoch = 3;
	ck_assert_int_eq(call(1, &op).error, KERR_FENCED_LEADER_EPOCH);
	op.leader_epoch = 0;
	ck_assert_int_eq(call(2, &op).error, KERR_FENCED_LEADER_EPOCH);
	/* broker 9 is not live */
	op.isr = i129;
	op.nisr = 3;
	ck_assert_int_eq(call(1, &op).error, KERR_INELIGIBLE_REPLICA);
	op.partition = 4;
	ck_assert_int_eq(call(1, &op).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/brokers/topics/isr/partitions/0/state", NULL);
	ck_assert_str_eq(d, "{\"controller_epoch\":1,\"leader\":1,\"version\":1,\"leader_epoch\":0,"
			    "\"isr\":[1,2]}");
	free(d);
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Controlled shutdown (CLUSTER.md 2.6): leadership moves, the broker leaves
 * the ISRs it follows in, and what it still leads is counted. */
START_TEST(test_controlled_shutdown)
{
	set_chroot("shutdown");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 2, 1, 3, 1, 2, 3, 3, 2, 1 }, solo[] = { 2 }, stuck[] = { 2, 3 };
	wait_brokers(1, 3);
	create_manual(1, "cs", rows, 3, 3, NULL, 0);
	create_manual(1, "solo", solo, 1, 1, NULL, 0);
	create_manual(1, "stuck", stuck, 1, 2, NULL, 0);
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "cs", 2, 3, 0, &rows[6], 3) &&
		   all_state_is(on, 3, "stuck", 0, 2, 0, stuck, 2) &&
		   all_state_is(on, 3, "solo", 0, 2, 0, solo, 1),
		   WAIT_MS, "states");
	ctl_op shrink = { .type = CTL_OP_ALTER_ISR, .partition = 0, .leader_epoch = 0,
			  .partition_epoch = 0, .isr = solo, .nisr = 1 };
	snprintf(shrink.topic, sizeof(shrink.topic), "stuck");
	ck_assert_int_eq(call(2, &shrink).error, 0);
	int64_t epoch2 = mirrors[1].brokers[1].epoch;
	ck_assert_int_eq(mirrors[1].brokers[1].id, 2);
	ctl_op op = { .type = CTL_OP_CONTROLLED_SHUTDOWN, .broker_id = 2, .broker_epoch = epoch2 };
	ck_assert_int_eq(call(3, &op).error, KERR_NOT_CONTROLLER);
	op.broker_epoch = epoch2 - 1;
	ck_assert_int_eq(call(1, &op).error, KERR_STALE_BROKER_EPOCH);
	op.broker_id = 9;
	ck_assert_int_eq(call(1, &op).error, KERR_BROKER_NOT_AVAILABLE);
	op.broker_id = 2;
	op.broker_epoch = epoch2;
	ctl_result r = call(1, &op);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.remaining, 1); /* stuck: no other ISR member (solo: one replica) */
	const int32_t i13[] = { 1, 3 }, i31[] = { 3, 1 }, i2[] = { 2 };
	WAIT_UNTIL(all_state_is(on, 3, "cs", 0, 1, 1, i13, 2) && all_state_is(on, 3, "cs", 1, 1, 1, i13, 2) &&
		   all_state_is(on, 3, "cs", 2, 3, 1, i31, 2) &&
		   all_state_is(on, 3, "stuck", 0, 2, 0, i2, 1) &&
		   all_state_is(on, 3, "solo", 0, 2, 0, i2, 1),
		   WAIT_MS, "leadership moved off 2");
	/* asked again: nothing more to do */
	r = call(1, &op);
	ck_assert_int_eq(r.error, 0);
	ck_assert_int_eq(r.remaining, 1);
	/* a broker in controlled shutdown is not elected: 3 goes, cs-2's
	 * leader moves to 1, not 2 */
	close_broker(3);
	const int32_t i1[] = { 1 };
	WAIT_UNTIL(state_is(1, "cs", 2, 1, 2, i1, 1), WAIT_MS, "cs-2 to 1");
	close_all();
}
END_TEST

/* A job that keeps a controller thread busy for a while. */
static void busy_job(ctl *c, void *arg)
{
	(void)c;
	sleep_ms(*(int *)arg);
}

/* A bounce (KIP-380): the controller sees broker 2 with a new registration
 * (czxid) without having seen it go, and handles it as a failure, then a
 * startup (CLUSTER.md 2.3): leadership moves off 2 where another ISR member
 * exists; where 2 is the only one, the epoch goes up twice and 2 leads
 * again. */
START_TEST(test_bounce)
{
	set_chroot("bounce");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 2, 1, 3 }, stuck[] = { 2, 3 }, i2[] = { 2 };
	wait_brokers(1, 3);
	create_manual(1, "b", rows, 1, 3, NULL, 0);
	create_manual(1, "stuck", stuck, 1, 2, NULL, 0);
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "b", 0, 2, 0, rows, 3) &&
		   all_state_is(on, 3, "stuck", 0, 2, 0, stuck, 2), WAIT_MS, "states");
	ctl_op shrink = { .type = CTL_OP_ALTER_ISR, .partition = 0, .leader_epoch = 0,
			  .partition_epoch = 0, .isr = i2, .nisr = 1 };
	snprintf(shrink.topic, sizeof(shrink.topic), "stuck");
	ck_assert_int_eq(call(2, &shrink).error, 0);
	int64_t epoch2 = mirrors[1].brokers[1].epoch;
	/* the controller looks away while 2 restarts */
	static int busy_ms = 1000;
	ck_assert_int_eq(ctl_post(mirrors[1].c, busy_job, &busy_ms), 0);
	close_broker(2);
	open_broker(2);
	const int32_t i13[] = { 1, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "b", 0, 1, 1, i13, 2) &&
		   all_state_is(on, 3, "stuck", 0, 2, 2, i2, 1) && mirrors[1].brokers[1].epoch > epoch2,
		   WAIT_MS, "b moved to 1; stuck back to 2, two epochs later");
	close_all();
}
END_TEST

/* kill -9 of a broker that leads (a process of its own, forked before any
 * thread starts here): its session has to expire first (4 s), then the
 * controller elects. Prints the fail-over time. */
START_TEST(test_kill9_failover)
{
	set_chroot("kill9");
	int ready[2];
	ck_assert_int_eq(pipe(ready), 0);
	ctl_options o2 = broker_options(2, NULL, false);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the test */
		if (getppid() == 1)
			_exit(1);
		ctl *c = NULL;
		char ok = ctl_open(&o2, &c) == 0 ? 'y' : 'n';
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char ok = 0;
	ck_assert_int_eq(read(ready[0], &ok, 1), 1);
	ck_assert_int_eq(ok, 'y');
	close(ready[0]);
	close(ready[1]);
	open_broker(1);
	open_broker(3);
	int32_t rows[] = { 2, 3, 1 };
	wait_brokers(1, 3);
	create_manual(1, "k", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 1, 3 };
	WAIT_UNTIL(all_state_is(on, 2, "k", 0, 2, 0, rows, 3), WAIT_MS, "2 leads k");
	long long t0 = h_now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	const int32_t i31[] = { 3, 1 };
	WAIT_UNTIL(all_state_is(on, 2, "k", 0, 3, 1, i31, 2), WAIT_MS, "3 leads k");
	long long ms = mirrors[3].last_partition_ms - t0;
	fprintf(stderr, "test_zk_backend: fail-over after kill -9 of the leader's broker (session "
		"%d ms) to the new state on another broker: %lld ms\n", SESSION_MS, ms);
	ck_assert(ms >= SESSION_MS / 2); /* the session had to expire */
	close_all();
}
END_TEST

/* ZooKeeper away for a moment (CLUSTER.md 4.9): sessions survive, nothing
 * changes (no election, no new registration, no state written); what is
 * asked meanwhile fails as retriable; afterwards everything works. A
 * ZooKeeper of its own, killed and restarted. */
START_TEST(test_zookeeper_outage)
{
	h_zk *z = h_zk_new();
	ck_assert_ptr_nonnull(z);
	ck_assert_int_eq(h_zk_start(z), 0);
	char saved[sizeof(zk_hosts)];
	snprintf(saved, sizeof(saved), "%s", zk_hosts);
	snprintf(zk_hosts, sizeof(zk_hosts), "%s", z->connect);
	set_chroot("outage");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 1, 2, 3 };
	wait_brokers(2, 3);
	create_manual(2, "o", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "o", 0, 1, 0, rows, 3), WAIT_MS, "states");
	ctl_broker before[3];
	memcpy(before, mirrors[3].brokers, sizeof(before));
	ck_assert_int_eq(h_zk_kill(z), 0);
	sleep_ms(300);
	ctl_result r = create_topic(2, "during", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_REQUEST_TIMED_OUT);
	ck_assert_int_eq(h_zk_restart(z), 0);
	/* the controller works again: states for a new topic */
	WAIT_UNTIL(create_topic(2, "after", 1, 3, NULL, 0, NULL, 0).error == 0, WAIT_MS, "after");
	WAIT_UNTIL(m_part(&mirrors[3], "after", 0) && m_part(&mirrors[3], "after", 0)->leader >= 0,
		   WAIT_MS, "after's state");
	for (int b = 1; b <= 3; b++) {
		ck_assert_int_eq(mirrors[b].controller, 1);
		ck_assert_int_eq(mirrors[b].controller_epoch, 1);
		ck_assert_int_eq(mirrors[b].nbrokers, 3);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(mirrors[b].brokers[i].epoch, before[i].epoch);
		ck_assert(state_is(b, "o", 0, 1, 0, rows, 3));
		ck_assert_int_eq(m_part(&mirrors[b], "o", 0)->partition_epoch, 0);
	}
	close_all();
	snprintf(zk_hosts, sizeof(zk_hosts), "%s", saved);
	h_zk_free(z);
}
END_TEST

typedef struct opener {
	ctl_options o;
	ctl *c;
	int rc;
	long long ms;
} opener;

static void *open_thread(void *arg)
{
	opener *op = arg;
	long long t0 = h_now_ms();
	op->rc = ctl_open(&op->o, &op->c);
	op->ms = h_now_ms() - t0;
	return NULL;
}

/* A restart faster than the old session's expiry (CLUSTER.md 4.10): the
 * registration waits for the old session to go, then succeeds; if it never
 * goes, start fails after the session timeout and a margin. */
START_TEST(test_fast_restart)
{
	set_chroot("fast");
	open_broker(1);
	/* the previous run of broker 3, its session still alive */
	ctl_zk *old = raw_open();
	const char *reg = "{\"features\":{},\"listener_security_protocol_map\":{\"PLAINTEXT\":"
			  "\"PLAINTEXT\"},\"endpoints\":[\"PLAINTEXT://127.0.0.1:9003\"],"
			  "\"jmx_port\":-1,\"port\":9003,\"host\":\"127.0.0.1\",\"version\":5,"
			  "\"timestamp\":\"1\"}";
	int64_t old_epoch;
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(old, "/brokers/ids/3", reg,
							 (int)strlen(reg), &old_epoch), CTL_ZK_OK);
	opener o = { .o = broker_options(3, NULL, false) };
	o.o.zookeeper_connect = mirrors[3].connect;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, open_thread, &o), 0);
	sleep_ms(1500);
	/* ctl_open still waits; the old session goes */
	ck_assert_int_eq(ctl_zk_expire_session_for_test(old), CTL_ZK_OK);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(o.rc, 0);
	ck_assert(o.ms >= 1400);
	mirrors[3].c = o.c;
	mirrors[3].id = 3;
	pump(&mirrors[3]);
	ck_assert_int_eq(mirrors[3].nbrokers, 2);
	ck_assert(mirrors[3].brokers[1].epoch > old_epoch);
	ctl_zk_close(old);
	close_broker(3);

	/* held for good (another broker with id 3): start fails */
	ctl_zk *holder = raw_open();
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(holder, "/brokers/ids/3", reg,
							 (int)strlen(reg), NULL), CTL_ZK_OK);
	o.o.zookeeper_session_timeout_ms = 1000;
	o.c = NULL;
	open_thread(&o);
	ck_assert_int_eq(o.rc, -EEXIST);
	ck_assert_ptr_null(o.c);
	ck_assert(o.ms >= 2000 && o.ms < 6000);
	ctl_zk_close(holder);
	close_all();
}
END_TEST

/* Partition p of name is the same on brokers 1-3, led by 1 or 3, its
 * leader in its ISR. */
static bool agreed_and_led(const char *name, int32_t p)
{
	const ctl_partition *p1 = m_part(&mirrors[1], name, p), *p2 = m_part(&mirrors[2], name, p),
			    *p3 = m_part(&mirrors[3], name, p);
	if (!p1 || !p2 || !p3 || p1->partition_epoch != p3->partition_epoch ||
	    p2->partition_epoch != p3->partition_epoch || (p3->leader != 1 && p3->leader != 3))
		return false;
	for (int32_t i = 0; i < p3->nisr; i++)
		if (p3->isr[i] == p3->leader)
			return true;
	return false;
}

/* Session expiry (CLUSTER.md 1.2, 6.2 item 9): the broker registers again
 * with a new epoch, reads and emits everything again; the controller
 * treats it as a bounce; an expired controller resigns and a new election
 * follows. */
START_TEST(test_session_expiry)
{
	set_chroot("expiry");
	open_broker(1);
	open_broker(2);
	open_broker(3);
	int32_t rows[] = { 2, 1, 3 };
	wait_brokers(1, 3);
	create_manual(1, "e", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "e", 0, 2, 0, rows, 3), WAIT_MS, "states");
	int64_t epoch2 = mirrors[1].brokers[1].epoch;
	int before = mirrors[2].controller_events;
	ck_assert_int_eq(ctl_zk_backend_expire_session_for_test(mirrors[2].c), CTL_ZK_OK);
	const int32_t i13[] = { 1, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "e", 0, 1, 1, i13, 2) && mirrors[1].nbrokers == 3 &&
		   mirrors[1].brokers[1].epoch > epoch2 && mirrors[3].brokers[1].epoch > epoch2 &&
		   mirrors[2].controller_events > before,
		   WAIT_MS, "2 re-registered; its partition moved to 1; 2 heard everything again");
	ck_assert_int_eq(mirrors[2].brokers[1].epoch, mirrors[1].brokers[1].epoch);
	/* the controller's session expires */
	ctl_zk *zk = raw_open();
	ck_assert_int_eq(raw_controller(zk), 1);
	ck_assert_int_eq(ctl_zk_backend_expire_session_for_test(mirrors[1].c), CTL_ZK_OK);
	WAIT_UNTIL(mirrors[1].controller_epoch == 2 && mirrors[2].controller_epoch == 2 &&
		   mirrors[3].controller_epoch == 2 && mirrors[1].controller >= 1 &&
		   mirrors[1].controller == mirrors[2].controller &&
		   mirrors[2].controller == mirrors[3].controller &&
		   mirrors[1].nbrokers == 3 && mirrors[3].nbrokers == 3,
		   WAIT_MS, "a new controller, epoch 2");
	ck_assert_int_eq(raw_controller_epoch(zk), 2);
	ck_assert_int_eq(raw_controller(zk), mirrors[1].controller);
	/* 1 led e: the new controller moved it to 3 (ISR [3]), unless it saw
	 * 1 registered again already; either way all agree, and the leader is
	 * live and in the ISR */
	WAIT_UNTIL(agreed_and_led("e", 0), WAIT_MS, "e agreed and led");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* ---- partition reassignment (CLUSTER.md 2.8, KIP-455) ---- */

static ctl_result reassign(int32_t on, const char *topic, int32_t p, const int32_t *ids, int32_t n)
{
	ctl_replica_list rl = { ids, n };
	ctl_op op = { .type = CTL_OP_ALTER_REASSIGNMENT, .partition = p,
		      .assignments = ids ? &rl : NULL, .nassignments = ids ? 1 : 0 };
	snprintf(op.topic, sizeof(op.topic), "%s", topic);
	return call(on, &op);
}

/* ---- elections on request and the automatic rebalance (zk_elect.c) ---- */

/* ELECT_LEADER on broker on (type, topic, partition). */
static ctl_result elect(int32_t on, int8_t type, const char *topic, int32_t p)
{
	ctl_op op = { .type = CTL_OP_ELECT_LEADER, .partition = p, .election_type = type };
	snprintf(op.topic, sizeof(op.topic), "%s", topic);
	return call(on, &op);
}

/* The leader (as broker id's mirror has it) writes ISR isr[0..n) of
 * topic-p, as its ISR expansion would (CTL_OP_ALTER_ISR). */
static void leader_sets_isr(int32_t id, const char *topic, int32_t p, const int32_t *isr, int32_t n)
{
	const ctl_partition *cp = m_part(&mirrors[id], topic, p);
	ck_assert_ptr_nonnull(cp);
	ctl_op op = { .type = CTL_OP_ALTER_ISR, .partition = p, .leader_epoch = cp->leader_epoch,
		      .partition_epoch = cp->partition_epoch, .isr = isr, .nisr = n };
	snprintf(op.topic, sizeof(op.topic), "%s", topic);
	ctl_result r = call(cp->leader, &op);
	ck_assert_msg(r.error == 0, "ALTER_ISR by %d: %d %s", (int)cp->leader, r.error, r.msg);
}

/* The topic znode's text holds want. */
static bool topic_has(ctl_zk *zk, const char *topic, const char *want)
{
	char path[300];
	snprintf(path, sizeof(path), "/brokers/topics/%s", topic);
	char *d = raw_get(zk, path, NULL);
	bool ok = d && strstr(d, want) != NULL;
	if (!ok)
		fprintf(stderr, "%s: %s (wanted %s)\n", path, d ? d : "(none)", want);
	free(d);
	return ok;
}

/* Broker id's mirror has topic-p with replicas, adding and removing. */
static bool assignment_is(int32_t id, const char *topic, int32_t p, const int32_t *rs, int32_t nrs,
			  const int32_t *ar, int32_t nar, const int32_t *rr, int32_t nrr)
{
	const ctl_partition *cp = m_part(&mirrors[id], topic, p);
	return cp && ids_are(cp->replicas, cp->nreplicas, rs, nrs) &&
	       ids_are(cp->adding, cp->nadding, ar, nar) && ids_are(cp->removing, cp->nremoving, rr, nrr);
}

/* path's data holds yes and not no. */
static bool text_is(ctl_zk *zk, const char *path, const char *yes, const char *no)
{
	char *d = raw_get(zk, path, NULL);
	bool ok = d && strstr(d, yes) && !strstr(d, no);
	free(d);
	return ok;
}

static int32_t start_three(const char *chroot)
{
	set_chroot(chroot);
	open_broker(1);
	open_broker(2);
	open_broker(3);
	WAIT_UNTIL(mirrors[1].controller > 0 && mirrors[1].controller == mirrors[2].controller &&
		   mirrors[2].controller == mirrors[3].controller, WAIT_MS, "a controller");
	return mirrors[1].controller;
}

/* {1,2} -> {2,3}: U+A writes RS {2,3,1} with AR {3}, RR {1} and a new
 * leader epoch; once the leader adds 3 to the ISR, B writes RS {2,3}, the
 * ISR without 1, and 2 (the first target live and in sync) leads. Only the
 * controller answers; ListPartitionReassignments likewise. */
START_TEST(test_reassign_move)
{
	int32_t ctrl = start_three("reassign-move");
	int32_t other = ctrl == 1 ? 2 : 1;
	const int32_t row[] = { 1, 2 }, i12[] = { 1, 2 }, on[] = { 1, 2, 3 };
	create_manual(1, "mv", row, 1, 2, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "mv", 0, 1, 0, i12, 2), WAIT_MS, "mv everywhere");
	const int32_t t23[] = { 2, 3 };
	ck_assert_int_eq(reassign(other, "mv", 0, t23, 2).error, KERR_NOT_CONTROLLER);
	ctl_op list = { .type = CTL_OP_LIST_REASSIGNMENTS };
	ck_assert_int_eq(call(other, &list).error, KERR_NOT_CONTROLLER);
	ck_assert_int_eq(call(ctrl, &list).error, 0);
	ctl_result r = reassign(ctrl, "mv", 0, t23, 2);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	ctl_zk *zk = raw_open();
	ck_assert(topic_has(zk, "mv", "\"partitions\":{\"0\":[2,3,1]}"));
	ck_assert(topic_has(zk, "mv", "\"adding_replicas\":{\"0\":[3]},\"removing_replicas\":{\"0\":[1]}"));
	const int32_t rs[] = { 2, 3, 1 }, a3[] = { 3 }, r1[] = { 1 };
	WAIT_UNTIL(assignment_is(1, "mv", 0, rs, 3, a3, 1, r1, 1) &&
		   assignment_is(2, "mv", 0, rs, 3, a3, 1, r1, 1) &&
		   assignment_is(3, "mv", 0, rs, 3, a3, 1, r1, 1) &&
		   all_state_is(on, 3, "mv", 0, 1, 1, i12, 2), WAIT_MS,
		   "RS {2,3,1} with a new leader epoch everywhere");
	/* the same target again changes nothing (no new epoch) */
	ck_assert_int_eq(reassign(ctrl, "mv", 0, t23, 2).error, 0);
	/* not complete while 3 is out of the ISR */
	sleep_ms(300);
	WAIT_UNTIL(all_state_is(on, 3, "mv", 0, 1, 1, i12, 2), WAIT_MS, "unchanged");
	ck_assert(topic_has(zk, "mv", "\"removing_replicas\":{\"0\":[1]}"));
	/* the leader adds 3: B */
	const int32_t i123[] = { 1, 2, 3 }, i23[] = { 2, 3 };
	leader_sets_isr(1, "mv", 0, i123, 3);
	WAIT_UNTIL(all_state_is(on, 3, "mv", 0, 2, 2, i23, 2) &&
		   assignment_is(1, "mv", 0, t23, 2, NULL, 0, NULL, 0) &&
		   assignment_is(3, "mv", 0, t23, 2, NULL, 0, NULL, 0), WAIT_MS,
		   "RS {2,3}, 2 leads, ISR {2,3}");
	ck_assert(topic_has(zk, "mv", "\"partitions\":{\"0\":[2,3]}"));
	ck_assert(topic_has(zk, "mv", "\"adding_replicas\":{},\"removing_replicas\":{}"));
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Kafka's answers: bad lists, brokers that are not alive, unknown
 * partitions, a cancellation of nothing, KIP-860; a new order or fewer
 * replicas (targets already in the ISR) complete at once, the leader kept
 * when it stays a replica. */
START_TEST(test_reassign_checks)
{
	int32_t ctrl = start_three("reassign-checks");
	const int32_t row[] = { 1, 2, 3 }, i123[] = { 1, 2, 3 }, on[] = { 1, 2, 3 };
	create_manual(1, "ck", row, 1, 3, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "ck", 0, 1, 0, i123, 3), WAIT_MS, "ck everywhere");
	const int32_t dup[] = { 1, 1 }, neg[] = { 1, -1 }, down[] = { 1, 4 };
	ctl_result r = reassign(ctrl, "ck", 0, dup, 2);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(reassign(ctrl, "ck", 0, neg, 2).error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(reassign(ctrl, "ck", 0, row, 0).error, KERR_INVALID_REPLICA_ASSIGNMENT);
	r = reassign(ctrl, "ck", 0, down, 2);
	ck_assert_int_eq(r.error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_msg(strstr(r.msg, "not alive") != NULL, "%s", r.msg);
	ck_assert_int_eq(reassign(ctrl, "ck", 7, row, 3).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(reassign(ctrl, "nope", 0, row, 3).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	/* an unknown partition's targets are all new: checked for life first */
	ck_assert_int_eq(reassign(ctrl, "nope", 0, down, 2).error, KERR_INVALID_REPLICA_ASSIGNMENT);
	ck_assert_int_eq(reassign(ctrl, "ck", 0, NULL, 0).error, KERR_NO_REASSIGNMENT_IN_PROGRESS);
	ck_assert_int_eq(reassign(ctrl, "nope", 0, NULL, 0).error, KERR_NO_REASSIGNMENT_IN_PROGRESS);
	ctl_replica_list rl = { (const int32_t[]){ 1, 2 }, 2 };
	ctl_op op = { .type = CTL_OP_ALTER_REASSIGNMENT, .assignments = &rl, .nassignments = 1,
		      .no_rf_change = true };
	snprintf(op.topic, sizeof(op.topic), "ck");
	ck_assert_int_eq(call(ctrl, &op).error, KERR_INVALID_REPLICATION_FACTOR);
	/* {1,2,3} -> {2,3,1}: nothing added or removed, done at once; 1 stays
	 * leader (it is in the target and live), the epoch moves */
	const int32_t t231[] = { 2, 3, 1 };
	ck_assert_int_eq(reassign(ctrl, "ck", 0, t231, 3).error, 0);
	WAIT_UNTIL(all_state_is(on, 3, "ck", 0, 1, 1, i123, 3) &&
		   assignment_is(2, "ck", 0, t231, 3, NULL, 0, NULL, 0), WAIT_MS, "{2,3,1}");
	ctl_zk *zk = raw_open();
	ck_assert(topic_has(zk, "ck", "\"partitions\":{\"0\":[2,3,1]}"));
	ck_assert(topic_has(zk, "ck", "\"adding_replicas\":{},\"removing_replicas\":{}"));
	/* {2,3,1} -> {3,2}: the targets are in the ISR, done at once; 1 leaves
	 * the ISR and leadership goes to 3 */
	const int32_t t32[] = { 3, 2 }, i23[] = { 2, 3 };
	ck_assert_int_eq(reassign(ctrl, "ck", 0, t32, 2).error, 0);
	WAIT_UNTIL(all_state_is(on, 3, "ck", 0, 3, 2, i23, 2) &&
		   assignment_is(1, "ck", 0, t32, 2, NULL, 0, NULL, 0), WAIT_MS, "{3,2}");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* A cancellation reverts to the original replicas: the adding replica
 * leaves RS and the ISR. A reassignment that would drop every in-sync
 * replica is refused. */
START_TEST(test_reassign_cancel)
{
	int32_t ctrl = start_three("reassign-cancel");
	const int32_t row[] = { 1, 2 }, i12[] = { 1, 2 }, on[] = { 1, 2, 3 };
	create_manual(1, "cx", row, 1, 2, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "cx", 0, 1, 0, i12, 2), WAIT_MS, "cx everywhere");
	const int32_t t23[] = { 2, 3 };
	ck_assert_int_eq(reassign(ctrl, "cx", 0, t23, 2).error, 0);
	const int32_t rs[] = { 2, 3, 1 }, a3[] = { 3 }, r1[] = { 1 };
	WAIT_UNTIL(assignment_is(2, "cx", 0, rs, 3, a3, 1, r1, 1), WAIT_MS, "in progress");
	/* 3 catches up, then the leader drops 1 and 2 from the ISR: replacing
	 * the target by {1} would leave nobody in sync */
	const int32_t i123[] = { 1, 2, 3 };
	leader_sets_isr(1, "cx", 0, i123, 3);
	WAIT_UNTIL(state_is(2, "cx", 0, 2, 2, (const int32_t[]){ 2, 3 }, 2), WAIT_MS,
		   "completed: 2 leads {2,3}");
	const int32_t t1[] = { 1 };
	/* a new reassignment {2,3} -> {1}: 1 is live, so it starts */
	ck_assert_int_eq(reassign(ctrl, "cx", 0, t1, 1).error, 0);
	const int32_t rs2[] = { 1, 2, 3 }, a1[] = { 1 }, r23[] = { 2, 3 };
	WAIT_UNTIL(assignment_is(3, "cx", 0, rs2, 3, a1, 1, r23, 2), WAIT_MS, "{1} in progress");
	/* cancel: back to {2,3} (ORS), 1 out */
	ctl_result r = reassign(ctrl, "cx", 0, NULL, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	WAIT_UNTIL(assignment_is(1, "cx", 0, t23, 2, NULL, 0, NULL, 0) &&
		   assignment_is(3, "cx", 0, t23, 2, NULL, 0, NULL, 0), WAIT_MS, "reverted");
	ck_assert_int_eq(reassign(ctrl, "cx", 0, NULL, 0).error, KERR_NO_REASSIGNMENT_IN_PROGRESS);
	close_all();
}
END_TEST

/* A job that keeps a controller thread busy for a while. */
static void busy_job(ctl *c, void *arg);

/* A controller that takes over resumes what it finds in topic znodes: an
 * incomplete reassignment gets a new leader epoch (A again) and completes
 * when the ISR does; one whose ISR is complete already is finished at once
 * (the old controller stopped between the two steps). The old controller
 * is made to look away (a busy thread) while its successor is elected. */
START_TEST(test_reassign_failover)
{
	int32_t ctrl = start_three("reassign-failover");
	int32_t a = ctrl == 1 ? 2 : 1, b = 6 - ctrl - a; /* the two others */
	const int32_t row[] = { 1, 2 }, i12[] = { 1, 2 }, r123[] = { 1, 2, 3 }, on[] = { 1, 2, 3 };
	create_manual(1, "fo", row, 1, 2, NULL, 0);
	create_manual(1, "half", r123, 1, 3, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "fo", 0, 1, 0, i12, 2) &&
		   all_state_is(on, 3, "half", 0, 1, 0, r123, 3), WAIT_MS, "topics everywhere");
	const int32_t t23[] = { 2, 3 };
	ck_assert_int_eq(reassign(ctrl, "fo", 0, t23, 2).error, 0);
	WAIT_UNTIL(all_state_is(on, 3, "fo", 0, 1, 1, i12, 2), WAIT_MS, "A: epoch 1");
	/* the controller looks away; "half" gets a U ({1,2,3} with RR {3})
	 * as if a controller wrote it and died before B */
	static int busy_ms = 3000;
	ck_assert_int_eq(ctl_post(mirrors[ctrl].c, busy_job, &busy_ms), 0);
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/brokers/topics/half", NULL);
	ck_assert_ptr_nonnull(d);
	char *at = strstr(d, "\"removing_replicas\":{}");
	ck_assert_ptr_nonnull(at);
	char json[1024];
	snprintf(json, sizeof(json), "%.*s\"removing_replicas\":{\"0\":[3]}%s", (int)(at - d), d,
		 at + strlen("\"removing_replicas\":{}"));
	free(d);
	ck_assert_int_eq(ctl_zk_set(zk, "/brokers/topics/half", json, (int)strlen(json),
				    CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	/* its /controller goes: another broker is elected and resumes */
	ck_assert_int_eq(ctl_zk_delete(zk, "/controller", CTL_ZK_ANY_VERSION), CTL_ZK_OK);
	const int32_t rs[] = { 2, 3, 1 }, a3[] = { 3 }, r1[] = { 1 }, both[] = { a, b };
	WAIT_UNTIL(mirrors[a].controller != ctrl && mirrors[a].controller > 0 &&
		   all_state_is(both, 2, "fo", 0, 1, 2, i12, 2) &&
		   assignment_is(a, "fo", 0, rs, 3, a3, 1, r1, 1), WAIT_MS,
		   "fo resumed: a new leader epoch, still in progress");
	const int32_t t12[] = { 1, 2 };
	WAIT_UNTIL(assignment_is(a, "half", 0, t12, 2, NULL, 0, NULL, 0) &&
		   all_state_is(both, 2, "half", 0, 1, 1, i12, 2), WAIT_MS,
		   "half completed at failover: RS {1,2}, 3 out of the ISR");
	ck_assert(topic_has(zk, "half", "\"adding_replicas\":{},\"removing_replicas\":{}"));
	/* the old controller comes back to its senses and resigns */
	WAIT_UNTIL(mirrors[ctrl].controller == mirrors[a].controller, WAIT_MS, "one controller");
	const int32_t i23[] = { 2, 3 };
	leader_sets_isr(a, "fo", 0, r123, 3);
	WAIT_UNTIL(all_state_is(on, 3, "fo", 0, 2, 3, i23, 2) &&
		   assignment_is(b, "fo", 0, t23, 2, NULL, 0, NULL, 0), WAIT_MS, "fo completed");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* /admin/reassign_partitions as kafka-reassign-partitions.sh (ZooKeeper
 * mode) writes it: valid entries start (a broker that is down is waited
 * for), bad ones are dropped, and the znode goes once all is done. */
START_TEST(test_reassign_znode)
{
	start_three("reassign-znode");
	const int32_t row[] = { 1, 2 }, i12[] = { 1, 2 }, on[] = { 1, 2, 3 };
	create_manual(1, "zn", row, 1, 2, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "zn", 0, 1, 0, i12, 2), WAIT_MS, "zn everywhere");
	/* broker 3 down: a target anyway (the znode path has no liveness check) */
	close_broker(3);
	const int32_t on12[] = { 1, 2 };
	WAIT_UNTIL(mirrors[1].nbrokers == 2 && mirrors[2].nbrokers == 2, WAIT_MS, "3 gone");
	ctl_zk *zk = raw_open();
	const char *js = "{\"version\":1,\"partitions\":[{\"topic\":\"zn\",\"partition\":0,"
			 "\"replicas\":[2,3]},{\"topic\":\"none\",\"partition\":0,\"replicas\":[1]}]}";
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/reassign_partitions", js, (int)strlen(js),
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	const int32_t rs[] = { 2, 3, 1 }, a3[] = { 3 }, r1[] = { 1 };
	WAIT_UNTIL(assignment_is(1, "zn", 0, rs, 3, a3, 1, r1, 1) &&
		   all_state_is(on12, 2, "zn", 0, 1, 1, i12, 2), WAIT_MS, "zn in progress");
	/* the unknown topic's entry is dropped, zn's stays */
	WAIT_UNTIL(text_is(zk, "/admin/reassign_partitions", "\"zn\"", "none"), WAIT_MS,
		   "the bad entry dropped");
	/* 3 comes back and catches up (its leader adds it): done, the znode goes */
	open_broker(3);
	const int32_t i123[] = { 1, 2, 3 }, t23[] = { 2, 3 }, i23[] = { 2, 3 };
	leader_sets_isr(1, "zn", 0, i123, 3);
	WAIT_UNTIL(all_state_is(on, 3, "zn", 0, 2, 2, i23, 2) &&
		   assignment_is(3, "zn", 0, t23, 2, NULL, 0, NULL, 0), WAIT_MS, "zn completed");
	WAIT_UNTIL(!raw_exists(zk, "/admin/reassign_partitions"), WAIT_MS, "the znode deleted");
	/* an unparsable znode is deleted, and the watch stays armed */
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/reassign_partitions", "{", 1, CTL_ZK_PERSISTENT,
				       NULL, 0, NULL), CTL_ZK_OK);
	WAIT_UNTIL(!raw_exists(zk, "/admin/reassign_partitions"), WAIT_MS, "the bad znode deleted");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Deletion with a replica's broker down (CLUSTER.md 2.9 point 4): the topic
 * is gone for the brokers at once and cannot be made again, its znodes stay
 * until the broker is back, which then learns of it; a reassignment in
 * progress holds a deletion back too. */
START_TEST(test_delete_waits)
{
	int32_t ctrl = start_three("delete-waits");
	const int32_t row[] = { 1, 3 }, i13[] = { 1, 3 };
	create_manual(1, "dw", row, 1, 2, NULL, 0);
	WAIT_UNTIL(state_is(3, "dw", 0, 1, 0, i13, 2) && state_is(2, "dw", 0, 1, 0, i13, 2),
		   WAIT_MS, "dw everywhere");
	ck_assert_int_ne(ctrl, 3);
	close_broker(3);
	WAIT_UNTIL(mirrors[1].nbrokers == 2 && mirrors[2].nbrokers == 2, WAIT_MS, "3 gone");
	ctl_op op = { .type = CTL_OP_DELETE_TOPIC };
	snprintf(op.topic, sizeof(op.topic), "dw");
	ck_assert_int_eq(call(2, &op).error, 0);
	WAIT_UNTIL(!m_topic(&mirrors[1], "dw") && !m_topic(&mirrors[2], "dw"), WAIT_MS,
		   "gone for the brokers");
	ctl_zk *zk = raw_open();
	sleep_ms(500);
	pump_all();
	ck_assert(raw_exists(zk, "/brokers/topics/dw"));
	ck_assert(raw_exists(zk, "/admin/delete_topics/dw"));
	ctl_result r = create_topic(ctrl, "dw", 1, 1, NULL, 0, NULL, 0);
	ck_assert_int_eq(r.error, KERR_TOPIC_ALREADY_EXISTS);
	ck_assert_str_eq(r.msg, "Topic 'dw' is marked for deletion.");
	/* 3 comes back: told, and the deletion completes */
	open_broker(3);
	bool told = false;
	for (int i = 0; i < mirrors[3].ndeleted; i++)
		told |= strcmp(mirrors[3].deleted[i], "dw") == 0;
	ck_assert_msg(told, "broker 3 started without learning that dw was deleted");
	ck_assert(!m_topic(&mirrors[3], "dw"));
	WAIT_UNTIL(!raw_exists(zk, "/brokers/topics/dw") && !raw_exists(zk, "/admin/delete_topics/dw"),
		   WAIT_MS, "deleted once 3 is back");
	ck_assert_int_eq(create_topic(ctrl, "dw", 1, 1, NULL, 0, NULL, 0).error, 0);

	/* a reassignment in progress holds a deletion back */
	const int32_t r12[] = { 1, 2 }, i12[] = { 1, 2 }, t23[] = { 2, 3 };
	create_manual(1, "dr", r12, 1, 2, NULL, 0);
	WAIT_UNTIL(state_is(3, "dr", 0, 1, 0, i12, 2), WAIT_MS, "dr everywhere");
	ck_assert_int_eq(reassign(ctrl, "dr", 0, t23, 2).error, 0);
	WAIT_UNTIL(state_is(1, "dr", 0, 1, 1, i12, 2), WAIT_MS, "dr in progress");
	snprintf(op.topic, sizeof(op.topic), "dr");
	ck_assert_int_eq(call(ctrl, &op).error, 0);
	sleep_ms(500);
	ck_assert(raw_exists(zk, "/brokers/topics/dr"));
	/* no reassignment of a topic being deleted */
	ck_assert_int_eq(reassign(ctrl, "dr", 0, r12, 2).error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	/* the leader completes it: then the deletion goes on (the leader's
	 * write, as a broker would still make it from its own log) */
	ctl_op isr = { .type = CTL_OP_ALTER_ISR, .partition = 0, .leader_epoch = 1,
		       .isr = (const int32_t[]){ 1, 2, 3 }, .nisr = 3 };
	snprintf(isr.topic, sizeof(isr.topic), "dr");
	char *d;
	ctl_zk_stat st;
	ck_assert_ptr_nonnull((d = raw_get(zk, "/brokers/topics/dr/partitions/0/state", &st)));
	free(d);
	isr.partition_epoch = st.version;
	ck_assert_int_eq(call(1, &isr).error, 0);
	WAIT_UNTIL(!raw_exists(zk, "/brokers/topics/dr"), WAIT_MS, "dr deleted after its reassignment");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* Preferred elections through CTL_OP_ELECT_LEADER (KIP-460, Kafka's
 * ZooKeeper-mode rules): the preferred replica comes back once it is in the
 * ISR, with the ISR kept and leader epoch + 1; every refusal with its code. */
START_TEST(test_elect_preferred)
{
	set_chroot("elect-preferred");
	open_broker(3); /* the controller, whatever happens to 1 */
	open_broker(1);
	open_broker(2);
	WAIT_UNTIL(mirrors[1].controller == 3, WAIT_MS, "3 is the controller");
	int32_t rows[] = { 1, 2, 3, 2, 3, 1 };
	wait_brokers(3, 3);
	create_manual(3, "pe", rows, 2, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 }, on23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "pe", 0, 1, 0, rows, 3) &&
		   all_state_is(on, 3, "pe", 1, 2, 0, &rows[3], 3), WAIT_MS, "states");
	ctl_result r = elect(3, CTL_ELECTION_PREFERRED, "pe", 0);
	ck_assert_int_eq(r.error, KERR_ELECTION_NOT_NEEDED);
	ck_assert_str_eq(r.msg, "Leader election not needed for topic partition.");
	/* 1 goes: 2 leads pe-0; 1 comes back but is not in the ISR yet */
	close_broker(1);
	const int32_t i23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on23, 2, "pe", 0, 2, 1, i23, 2), WAIT_MS, "2 leads pe-0");
	open_broker(1);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "1 is back");
	r = elect(3, CTL_ELECTION_PREFERRED, "pe", 0);
	ck_assert_int_eq(r.error, KERR_PREFERRED_LEADER_NOT_AVAILABLE);
	ck_assert_str_eq(r.msg, "Failed to elect leader for partition pe-0 under strategy "
				"PreferredReplicaPartitionLeaderElectionStrategy");
	/* not the controller; no such partition; no such type */
	ck_assert_int_eq(elect(1, CTL_ELECTION_PREFERRED, "pe", 0).error, KERR_NOT_CONTROLLER);
	r = elect(3, CTL_ELECTION_PREFERRED, "pe", 2);
	ck_assert_int_eq(r.error, KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_str_eq(r.msg, "The partition does not exist.");
	ck_assert_int_eq(elect(3, CTL_ELECTION_PREFERRED, "nope", 0).error,
			 KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(elect(3, CTL_ELECTION_PREFERRED, "pe", -1).error,
			 KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ck_assert_int_eq(elect(3, 2, "pe", 0).error, KERR_INVALID_REQUEST);
	/* auto.leader.rebalance.enable is off here: nothing moves by itself */
	const int32_t i231[] = { 2, 3, 1 };
	leader_sets_isr(2, "pe", 0, i231, 3);
	WAIT_UNTIL(all_state_is(on, 3, "pe", 0, 2, 1, i231, 3), WAIT_MS, "1 back in the ISR");
	sleep_ms(1500);
	pump_all();
	ck_assert(all_state_is(on, 3, "pe", 0, 2, 1, i231, 3));
	/* now it can lead: leader 1, epoch 2, the ISR as it was; the state's
	 * event reached the controller's own mirror before the result */
	r = elect(3, CTL_ELECTION_PREFERRED, "pe", 0);
	ck_assert_msg(r.error == KERR_NONE, "%d %s", r.error, r.msg);
	ck_assert_str_eq(r.msg, "");
	ck_assert(state_is(3, "pe", 0, 1, 2, i231, 3));
	WAIT_UNTIL(all_state_is(on, 3, "pe", 0, 1, 2, i231, 3), WAIT_MS, "1 leads pe-0 again");
	ctl_zk *zk = raw_open();
	char *d = raw_get(zk, "/brokers/topics/pe/partitions/0/state", NULL);
	ck_assert_str_eq(d, "{\"controller_epoch\":1,\"leader\":1,\"version\":1,\"leader_epoch\":2,"
			    "\"isr\":[2,3,1]}");
	free(d);
	/* a topic being deleted (its marker written by hand, no controller
	 * watch fired yet: the controller is kept busy) */
	static int busy_ms = 800;
	ck_assert_int_eq(ctl_post(mirrors[3].c, busy_job, &busy_ms), 0);
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/delete_topics/pe", NULL, -1, CTL_ZK_PERSISTENT,
				       NULL, 0, NULL), CTL_ZK_OK);
	r = elect(3, CTL_ELECTION_PREFERRED, "pe", 1);
	ck_assert(r.error == KERR_INVALID_TOPIC_EXCEPTION ||
		  r.error == KERR_UNKNOWN_TOPIC_OR_PARTITION); /* or already gone */
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* UNCLEAN elections: not needed while a live broker leads; an ISR member
 * that is alive is taken first (a clean choice); else the first live
 * replica, alone in the ISR; none: ELIGIBLE_LEADERS_NOT_AVAILABLE. Also the
 * failure election with unclean.leader.election.enable from a dynamic
 * broker default (CLUSTER.md 4.6). */
START_TEST(test_elect_unclean)
{
	set_chroot("elect-unclean");
	open_broker(3);
	open_broker(1);
	open_broker(2);
	WAIT_UNTIL(mirrors[1].controller == 3, WAIT_MS, "3 is the controller");
	int32_t u[] = { 1, 2 }, v[] = { 1 }, w[] = { 1, 2 };
	wait_brokers(3, 3);
	create_manual(3, "u", u, 1, 2, NULL, 0);
	create_manual(3, "v", v, 1, 1, NULL, 0);
	create_manual(3, "w", w, 1, 2, NULL, 0);
	const int32_t on[] = { 1, 2, 3 }, on23[] = { 2, 3 }, i1[] = { 1 };
	WAIT_UNTIL(all_state_is(on, 3, "u", 0, 1, 0, u, 2) && all_state_is(on, 3, "v", 0, 1, 0, v, 1) &&
		   all_state_is(on, 3, "w", 0, 1, 0, w, 2), WAIT_MS, "states");
	ck_assert_int_eq(elect(3, CTL_ELECTION_UNCLEAN, "u", 0).error, KERR_ELECTION_NOT_NEEDED);
	/* 2 falls out of the ISRs of u and w; then 1 goes: offline, ISR [1] */
	leader_sets_isr(1, "u", 0, i1, 1);
	leader_sets_isr(1, "w", 0, i1, 1);
	close_broker(1);
	WAIT_UNTIL(all_state_is(on23, 2, "u", 0, -1, 1, i1, 1) &&
		   all_state_is(on23, 2, "w", 0, -1, 1, i1, 1) &&
		   all_state_is(on23, 2, "v", 0, -1, 1, i1, 1), WAIT_MS, "offline, ISR [1]");
	/* preferred cannot help: 1 is gone */
	ck_assert_int_eq(elect(3, CTL_ELECTION_PREFERRED, "u", 0).error,
			 KERR_PREFERRED_LEADER_NOT_AVAILABLE);
	/* unclean: 2 (out of sync) leads u with ISR [2] */
	ctl_result r = elect(3, CTL_ELECTION_UNCLEAN, "u", 0);
	ck_assert_msg(r.error == KERR_NONE, "%d %s", r.error, r.msg);
	const int32_t i2[] = { 2 };
	WAIT_UNTIL(all_state_is(on23, 2, "u", 0, 2, 2, i2, 1), WAIT_MS, "2 leads u, ISR [2]");
	r = elect(3, CTL_ELECTION_UNCLEAN, "v", 0);
	ck_assert_int_eq(r.error, KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE);
	ck_assert_str_eq(r.msg, "Failed to elect leader for partition v-0 under strategy "
				"OfflinePartitionLeaderElectionStrategy(true)");
	/* the failure path: unclean.leader.election.enable=true as the
	 * cluster-wide dynamic default elects 2 for w by itself */
	ctl_config_entry dyn[] = { { "unclean.leader.election.enable", "true" } };
	ctl_op op = { .type = CTL_OP_SET_BROKER_CONFIGS, .broker_id = CTL_BROKER_DEFAULT,
		      .configs = dyn, .nconfigs = 1 };
	ck_assert_int_eq(call(2, &op).error, 0);
	WAIT_UNTIL(all_state_is(on23, 2, "w", 0, 2, 2, i2, 1), WAIT_MS, "2 leads w uncleanly");
	/* 1 comes back: the leaders stay (1 must catch up and rejoin) */
	open_broker(1);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "1 is back");
	WAIT_UNTIL(all_state_is(on, 3, "v", 0, 1, 2, i1, 1), WAIT_MS, "1 leads v again, cleanly");
	ck_assert(all_state_is(on, 3, "u", 0, 2, 2, i2, 1));
	ck_assert_int_eq(elect(3, CTL_ELECTION_UNCLEAN, "v", 0).error, KERR_ELECTION_NOT_NEEDED);
	close_all();
}
END_TEST

/* /admin/preferred_replica_election written as Kafka 2.x's tool writes it:
 * its partitions are elected, then it is deleted; one that does not parse
 * is deleted too; a new one after that is seen (the watch is armed again);
 * one left from before a fail-over is done by the new controller. */
START_TEST(test_preferred_znode)
{
	set_chroot("preferred-znode");
	open_broker(3);
	open_broker(1);
	open_broker(2);
	WAIT_UNTIL(mirrors[1].controller == 3, WAIT_MS, "3 is the controller");
	int32_t rows[] = { 1, 2, 3, 2, 1, 3 };
	wait_brokers(3, 3);
	create_manual(3, "pz", rows, 2, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 }, on23[] = { 2, 3 }, on13[] = { 1, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "pz", 0, 1, 0, rows, 3) &&
		   all_state_is(on, 3, "pz", 1, 2, 0, &rows[3], 3), WAIT_MS, "states");
	/* 1 goes and comes back: 2 leads pz-0, 1 rejoins its ISR */
	close_broker(1);
	const int32_t i23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on23, 2, "pz", 0, 2, 1, i23, 2), WAIT_MS, "2 leads pz-0");
	open_broker(1);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "1 is back");
	const int32_t i231[] = { 2, 3, 1 };
	leader_sets_isr(2, "pz", 0, i231, 3);
	leader_sets_isr(2, "pz", 1, i231, 3);
	WAIT_UNTIL(all_state_is(on, 3, "pz", 0, 2, 1, i231, 3) &&
		   all_state_is(on, 3, "pz", 1, 2, 1, i231, 3), WAIT_MS, "1 back in the ISRs");
	ctl_zk *zk = raw_open();
	/* what does not parse is deleted, nothing elected */
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/preferred_replica_election", "{\"version\":1}", 13,
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	WAIT_UNTIL(!raw_exists(zk, "/admin/preferred_replica_election"), WAIT_MS,
		   "the bad znode is deleted");
	pump_all();
	ck_assert(all_state_is(on, 3, "pz", 0, 2, 1, i231, 3));
	/* pz-0, an unknown partition, pz-0 again: the watch was armed again */
	ctl_zkj_topic_partition tp[] = { { "pz", 0 }, { "nope", 0 }, { "pz", 0 } };
	char *json;
	size_t len;
	ck_assert_int_eq(ctl_zkj_preferred_election_encode(tp, 3, &json, &len), 0);
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/preferred_replica_election", json, (int)len,
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	free(json);
	WAIT_UNTIL(all_state_is(on, 3, "pz", 0, 1, 2, i231, 3) &&
		   !raw_exists(zk, "/admin/preferred_replica_election"), WAIT_MS,
		   "pz-0 led by 1 and the znode deleted");
	/* 2 goes and comes back: 1 leads pz-1, 2 rejoins its ISR */
	close_broker(2);
	const int32_t i31[] = { 3, 1 };
	WAIT_UNTIL(all_state_is(on13, 2, "pz", 1, 1, 2, i31, 2), WAIT_MS, "1 leads pz-1");
	open_broker(2);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "2 is back");
	const int32_t i312[] = { 3, 1, 2 };
	leader_sets_isr(1, "pz", 1, i312, 3);
	WAIT_UNTIL(all_state_is(on, 3, "pz", 1, 1, 2, i312, 3), WAIT_MS, "2 back in the ISR");
	/* written while the controller cannot see it (busy, then gone): the
	 * next controller does it when it takes office, after its own work
	 * (3 leaves the ISR: leader epoch 3, then 4 for the election) */
	static int busy_ms = 1500;
	ck_assert_int_eq(ctl_post(mirrors[3].c, busy_job, &busy_ms), 0);
	ctl_zkj_topic_partition tp1[] = { { "pz", 1 } };
	ck_assert_int_eq(ctl_zkj_preferred_election_encode(tp1, 1, &json, &len), 0);
	ck_assert_int_eq(ctl_zk_create(zk, "/admin/preferred_replica_election", json, (int)len,
				       CTL_ZK_PERSISTENT, NULL, 0, NULL), CTL_ZK_OK);
	free(json);
	close_broker(3);
	const int32_t on12[] = { 1, 2 }, i12[] = { 1, 2 };
	WAIT_UNTIL(mirrors[1].controller >= 1 && mirrors[1].controller != 3 &&
		   all_state_is(on12, 2, "pz", 1, 2, 4, i12, 2) &&
		   !raw_exists(zk, "/admin/preferred_replica_election"), WAIT_MS,
		   "the new controller elected 2 for pz-1 and deleted the znode");
	ctl_zk_close(zk);
	close_all();
}
END_TEST

/* auto.leader.rebalance.enable: after broker 1 returns to the ISR of the
 * partitions it prefers, the controller gives them back at its next check
 * (every second here); the other partitions stay. */
START_TEST(test_auto_rebalance)
{
	set_chroot("auto-rebalance");
	int32_t order[] = { 3, 1, 2 };
	for (int i = 0; i < 3; i++) {
		ctl_options o = broker_options(order[i], NULL, false);
		o.auto_leader_rebalance_enable = true;
		o.leader_imbalance_check_interval_seconds = 1;
		o.leader_imbalance_per_broker_percentage = 10;
		open_broker_opts(order[i], &o);
	}
	WAIT_UNTIL(mirrors[1].controller == 3, WAIT_MS, "3 is the controller");
	int32_t rows[] = { 1, 2, 3, 2, 3, 1, 3, 1, 2 };
	create_manual(3, "rb", rows, 3, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 }, on23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "rb", 0, 1, 0, rows, 3), WAIT_MS, "states");
	close_broker(1);
	const int32_t i23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on23, 2, "rb", 0, 2, 1, i23, 2), WAIT_MS, "2 leads rb-0");
	ctl_options o = broker_options(1, NULL, false);
	o.auto_leader_rebalance_enable = true;
	o.leader_imbalance_check_interval_seconds = 1;
	open_broker_opts(1, &o);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "1 is back");
	/* not in the ISR: the checks leave rb-0 alone */
	sleep_ms(2500);
	pump_all();
	ck_assert(all_state_is(on, 3, "rb", 0, 2, 1, i23, 2));
	const int32_t i231[] = { 2, 3, 1 };
	long long t0 = h_now_ms();
	leader_sets_isr(2, "rb", 0, i231, 3);
	WAIT_UNTIL(all_state_is(on, 3, "rb", 0, 1, 2, i231, 3), WAIT_MS, "1 leads rb-0 again");
	fprintf(stderr, "test_zk_backend: preferred leader back %lld ms after it rejoined the ISR "
		"(check every 1 s)\n", h_now_ms() - t0);
	/* the others were led by their preferred replica all along */
	const int32_t i32[] = { 3, 2 };
	ck_assert(all_state_is(on, 3, "rb", 1, 2, 1, i23, 2));
	ck_assert(all_state_is(on, 3, "rb", 2, 3, 1, i32, 2));
	close_all();
}
END_TEST

/* Kafka's automatic rebalance waits while a partition is being
 * reassigned: broker 1 back in rb-0's ISR is not made its leader until the
 * reassignment of another topic ends (here cancelled). */
START_TEST(test_rebalance_waits_for_reassignment)
{
	set_chroot("rebalance-reassign");
	int32_t order[] = { 3, 1, 2 };
	for (int i = 0; i < 3; i++) {
		ctl_options o = broker_options(order[i], NULL, false);
		o.auto_leader_rebalance_enable = true;
		o.leader_imbalance_check_interval_seconds = 1;
		o.leader_imbalance_per_broker_percentage = 10;
		open_broker_opts(order[i], &o);
	}
	WAIT_UNTIL(mirrors[1].controller == 3, WAIT_MS, "3 is the controller");
	long long elected = h_now_ms();
	int32_t rows[] = { 1, 2, 3 };
	create_manual(3, "rb", rows, 1, 3, NULL, 0);
	const int32_t on[] = { 1, 2, 3 }, on23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on, 3, "rb", 0, 1, 0, rows, 3), WAIT_MS, "states");
	close_broker(1);
	const int32_t i23[] = { 2, 3 };
	WAIT_UNTIL(all_state_is(on23, 2, "rb", 0, 2, 1, i23, 2), WAIT_MS, "2 leads rb-0");
	ctl_options o = broker_options(1, NULL, false);
	o.auto_leader_rebalance_enable = true;
	o.leader_imbalance_check_interval_seconds = 1;
	open_broker_opts(1, &o);
	WAIT_UNTIL(mirrors[3].nbrokers == 3, WAIT_MS, "1 is back");
	/* hold-0 {2,3} -> {2,1}: in progress while 1 is out of its ISR */
	create_manual(3, "hold", i23, 1, 2, NULL, 0);
	WAIT_UNTIL(all_state_is(on, 3, "hold", 0, 2, 0, i23, 2), WAIT_MS, "hold everywhere");
	const int32_t t21[] = { 2, 1 }, rs[] = { 2, 1, 3 }, a1[] = { 1 }, r3[] = { 3 };
	ctl_result r = reassign(3, "hold", 0, t21, 2);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	WAIT_UNTIL(assignment_is(3, "hold", 0, rs, 3, a1, 1, r3, 1), WAIT_MS, "hold in progress");
	/* 1 rejoins rb-0's ISR: the checks (5 s after the election, then
	 * every second) leave it alone; three of them at least */
	const int32_t i231[] = { 2, 3, 1 };
	leader_sets_isr(2, "rb", 0, i231, 3);
	WAIT_UNTIL(all_state_is(on, 3, "rb", 0, 2, 1, i231, 3), WAIT_MS, "1 back in the ISR");
	long long quiet = elected + 5000 + 3000 - h_now_ms();
	sleep_ms((int)(quiet > 3000 ? quiet : 3000));
	pump_all();
	ck_assert(all_state_is(on, 3, "rb", 0, 2, 1, i231, 3));
	/* the reassignment ends: the next check gives rb-0 back to 1 */
	r = reassign(3, "hold", 0, NULL, 0);
	ck_assert_msg(r.error == 0, "%d %s", r.error, r.msg);
	WAIT_UNTIL(assignment_is(3, "hold", 0, i23, 2, NULL, 0, NULL, 0), WAIT_MS, "hold reverted");
	WAIT_UNTIL(all_state_is(on, 3, "rb", 0, 1, 2, i231, 3), WAIT_MS, "1 leads rb-0 again");
	close_all();
}
END_TEST

int main(void)
{
	if (h_init() != 0)
		return 99;
	h_zk *z = h_zk_new();
	if (!z || h_zk_start(z) < 0) {
		fprintf(stderr, "cannot start ZooKeeper\n");
		h_zk_free(z);
		h_fini();
		return 99;
	}
	snprintf(zk_hosts, sizeof(zk_hosts), "%s", z->connect);
	Suite *s = suite_create("zk_backend");
	/* one case per test, so CK_RUN_CASE=<test name> runs one */
#define ADD(fn)                                          \
	do {                                             \
		TCase *tc = tcase_create(#fn);           \
		tcase_set_timeout(tc, 60);               \
		tcase_add_test(tc, fn);                  \
		suite_add_tcase(s, tc);                  \
	} while (0)
	ADD(test_layout);
	ADD(test_election);
	ADD(test_zombie_controller);
	ADD(test_failure_election);
	ADD(test_create_topic);
	ADD(test_delete_topic);
	ADD(test_create_partitions);
	ADD(test_configs);
	ADD(test_client_configs);
	ADD(test_acls);
	ADD(test_producer_ids);
	ADD(test_alter_isr);
	ADD(test_controlled_shutdown);
	ADD(test_bounce);
	ADD(test_kill9_failover);
	ADD(test_fast_restart);
	ADD(test_session_expiry);
	ADD(test_zookeeper_outage);
	ADD(test_reassign_move);
	ADD(test_reassign_checks);
	ADD(test_reassign_cancel);
	ADD(test_reassign_failover);
	ADD(test_reassign_znode);
	ADD(test_delete_waits);
	ADD(test_elect_preferred);
	ADD(test_elect_unclean);
	ADD(test_preferred_znode);
	ADD(test_auto_rebalance);
	ADD(test_rebalance_waits_for_reassignment);
#undef ADD
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		h_zk_dump_log(z, stderr, 40);
	h_zk_free(z);
	h_fini();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
