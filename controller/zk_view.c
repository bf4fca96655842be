/*
 * zk_view.c - what every broker reads and watches in ZooKeeper (CLUSTER.md
 * 6.3 S1: brokers watch instead of receiving LeaderAndIsr and
 * UpdateMetadata), kept in z->brokers and z->meta, and the events emitted
 * when it changes (zk_backend.h).
 *
 * Watches armed:
 *   /brokers/ids            children, and data of each registration
 *                           (host, port, rack; czxid = broker epoch)
 *   /controller             data, or existence while absent
 *   /brokers/topics         children, and data of each topic (assignment,
 *                           topic id)
 *   .../partitions/<p>/state data of each, existence while absent (the
 *                           controller creates it after the topic)
 *   /config/changes         children: notices naming a topic's or a
 *                           broker's config to read again (Kafka's config
 *                           change protocol, v1 and v2 notices)
 *   /admin/delete_topics    children: topics marked for deletion, which
 *                           are gone for the brokers from then on
 * Topic and broker configs are read when a topic is read, at start, and on
 * a notice, as Kafka's brokers do.
 *
 * Events: CTL_EV_BROKERS (all live brokers) when one comes, goes or
 * re-registers; CTL_EV_CONTROLLER when /controller or the epoch changes;
 * CTL_EV_TOPIC (the whole topic, states included) for a new topic or a
 * changed assignment or config; CTL_EV_TOPIC_DELETED; CTL_EV_PARTITION for
 * a state whose version or content changed; CTL_EV_BROKER_CONFIGS.
 */
#include "controller/zk_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/entity.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

#define NOTICE_PREFIX "config_change_"
/* A decoded znode never needs more (bounds memory on a bad znode). */
#define ARENA_MAX (64u << 20)

/* ---- paths and small helpers ---- */

void zkb_topic_path(char *out, const char *topic)
{
	snprintf(out, ZKB_PATH_MAX, "/brokers/topics/%s", topic);
}

void zkb_partitions_path(char *out, const char *topic)
{
	snprintf(out, ZKB_PATH_MAX, "/brokers/topics/%s/partitions", topic);
}

void zkb_state_path(char *out, const char *topic, int32_t partition)
{
	snprintf(out, ZKB_PATH_MAX, "/brokers/topics/%s/partitions/%d/state", topic, (int)partition);
}

void zkb_topic_config_path(char *out, const char *topic)
{
	snprintf(out, ZKB_PATH_MAX, "/config/topics/%s", topic);
}

static void broker_config_path(char *out, int32_t id)
{
	if (id == CTL_BROKER_DEFAULT)
		snprintf(out, ZKB_PATH_MAX, "/config/brokers/<default>");
	else
		snprintf(out, ZKB_PATH_MAX, "/config/brokers/%d", (int)id);
}

int zkb_state_encode(int32_t controller_epoch, int32_t leader, int32_t leader_epoch,
		     const int32_t *isr, int32_t nisr, char **out, size_t *len)
{
	ctl_zkj_partition_state s = { .controller_epoch = controller_epoch, .leader = leader,
				      .leader_epoch = leader_epoch, .isr = (int32_t *)isr,
				      .nisr = nisr };
	return ctl_zkj_partition_state_encode(&s, out, len);
}

ctl_topic *zkb_view_topic(zkb *z, const char *name)
{
	return (ctl_topic *)ctl_meta_find(&z->meta, name,
					  (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1));
}

const ctl_broker *zkb_view_broker(const zkb *z, int32_t id)
{
	for (int32_t i = 0; i < z->nbrokers; i++)
		if (z->brokers[i].id == id)
			return &z->brokers[i];
	return NULL;
}

bool zkb_configs_equal(const ctl_config_entry *a, int32_t na, const ctl_config_entry *b,
		       int32_t nb)
{
	if (na != nb)
		return false;
	for (int32_t i = 0; i < na; i++) {
		int32_t k = 0;
		while (k < nb && strcmp(a[i].name, b[k].name) != 0)
			k++;
		if (k == nb || strcmp(a[i].value, b[k].value) != 0)
			return false;
	}
	return true;
}

static const char *config_in(const ctl_config_entry *e, int32_t n, const char *name)
{
	for (int32_t i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return e[i].value;
	return NULL;
}

const char *zkb_config_value(const zkb *z, const ctl_topic *t, const char *name)
{
	const char *v = t ? ctl_topic_config(t, name) : NULL;
	const ctl_broker_config_set *bs;
	if (!v && (bs = ctl_meta_broker_configs(&z->meta, z->self.id)))
		v = config_in(bs->configs, bs->nconfigs, name);
	if (!v && (bs = ctl_meta_broker_configs(&z->meta, CTL_BROKER_DEFAULT)))
		v = config_in(bs->configs, bs->nconfigs, name);
	return v;
}

static bool ids_equal(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof(*a)) == 0);
}

static int32_t *ids_dup(const int32_t *v, int32_t n)
{
	int32_t *c = malloc((size_t)(n > 0 ? n : 1) * sizeof(*c));
	if (c && n > 0)
		memcpy(c, v, (size_t)n * sizeof(*c));
	return c;
}

/* A read failed: the view may have missed a change (the watch of what
 * failed is not armed). Read everything again on the next tick, or when the
 * connection is back. */
static void stale(zkb *z, int rc)
{
	if (rc == CTL_ZK_OK)
		return;
	z->stale = true;
	zkb_retry_in(z, 1000);
}

/* ---- brokers ---- */

static int cmp_broker(const void *a, const void *b)
{
	const ctl_broker *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static bool parse_id(const char *s, int32_t *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT32_MAX || s[0] < '0' || s[0] > '9')
		return false;
	*out = (int32_t)v;
	return true;
}

/* Read /brokers/ids/<name> into b. CTL_ZK_OK with *ok false when it is
 * gone or does not parse. */
static int read_broker(zkb *z, const char *name, ctl_broker *b, bool *ok)
{
	*ok = false;
	int32_t id;
	if (!parse_id(name, &id))
		return CTL_ZK_OK;
	char path[ZKB_PATH_MAX];
	snprintf(path, sizeof(path), "/brokers/ids/%s", name);
	char *data;
	int len;
	ctl_zk_stat st;
	int rc = ctl_zk_get(z->zk, path, true, &data, &len, &st);
	if (rc == CTL_ZK_NONODE)
		return CTL_ZK_OK; /* gone meanwhile: the child watch fires */
	if (rc != CTL_ZK_OK)
		return rc;
	proto_arena a;
	proto_arena_init(&a, ARENA_MAX);
	ctl_zkj_broker r;
	if (ctl_zkj_broker_decode(data, len, &a, &r) == 0) {
		memset(b, 0, sizeof(*b));
		b->id = id;
		b->epoch = st.czxid;
		const char *host = r.nendpoints > 0 ? r.endpoints[0].host : r.host;
		b->port = r.nendpoints > 0 ? r.endpoints[0].port : r.port;
		snprintf(b->host, sizeof(b->host), "%s", host ? host : "");
		snprintf(b->rack, sizeof(b->rack), "%s", r.rack ? r.rack : "");
		for (int32_t i = 0; i < r.nendpoints && b->nendpoints < CTL_MAX_ENDPOINTS; i++) {
			const ctl_zkj_endpoint *e = &r.endpoints[i];
			ctl_endpoint *o = &b->endpoints[b->nendpoints++];
			snprintf(o->listener, sizeof(o->listener), "%s", e->listener ? e->listener : "");
			snprintf(o->security_protocol, sizeof(o->security_protocol), "%s",
				 e->security_protocol ? e->security_protocol : "");
			snprintf(o->host, sizeof(o->host), "%s", e->host ? e->host : "");
			o->port = e->port;
		}
		*ok = true;
	} else {
		fprintf(stderr, "samsa: the registration %s does not parse: broker ignored\n", path);
	}
	proto_arena_free(&a);
	free(data);
	return CTL_ZK_OK;
}

static bool brokers_equal(const ctl_broker *a, int32_t na, const ctl_broker *b, int32_t nb)
{
	if (na != nb)
		return false;
	for (int32_t i = 0; i < na; i++)
		if (a[i].id != b[i].id || a[i].epoch != b[i].epoch || a[i].port != b[i].port ||
		    strcmp(a[i].host, b[i].host) != 0 || strcmp(a[i].rack, b[i].rack) != 0 ||
		    a[i].nendpoints != b[i].nendpoints ||
		    memcmp(a[i].endpoints, b[i].endpoints,
			   (size_t)a[i].nendpoints * sizeof(a[i].endpoints[0])) != 0)
			return false;
	return true;
}

int zkb_view_refresh_brokers(zkb *z, bool emit_all, bool *changed)
{
	if (changed)
		*changed = false;
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, "/brokers/ids", true, &ch, NULL);
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	ctl_broker *v = calloc((size_t)(ch.count > 0 ? ch.count : 1), sizeof(*v));
	int32_t n = 0;
	if (!v) {
		ctl_zk_children_free(&ch);
		return CTL_ZK_SYSTEMERROR;
	}
	for (int32_t i = 0; i < ch.count; i++) {
		bool ok;
		rc = read_broker(z, ch.names[i], &v[n], &ok);
		if (rc != CTL_ZK_OK)
			break;
		n += ok;
	}
	ctl_zk_children_free(&ch);
	if (rc != CTL_ZK_OK) {
		free(v);
		stale(z, rc);
		return rc;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_broker);
	bool diff = !brokers_equal(v, n, z->brokers, z->nbrokers);
	free(z->brokers);
	z->brokers = v;
	z->nbrokers = n;
	if (diff || emit_all)
		ctl_emit_brokers(z->c, v, n);
	if (changed)
		*changed = diff;
	return CTL_ZK_OK;
}

/* ---- the controller ---- */

int zkb_view_refresh_controller(zkb *z, bool emit_all, bool *exists)
{
	int32_t id = -1;
	int rc = CTL_ZK_OK;
	*exists = false;
	for (int attempt = 0; attempt < 5; attempt++) {
		char *data;
		int len;
		rc = ctl_zk_get(z->zk, "/controller", true, &data, &len, NULL);
		if (rc == CTL_ZK_OK) {
			proto_arena a;
			proto_arena_init(&a, ARENA_MAX);
			ctl_zkj_controller cj;
			if (ctl_zkj_controller_decode(data, len, &a, &cj) == 0)
				id = cj.broker_id;
			else
				fprintf(stderr, "samsa: /controller does not parse\n");
			proto_arena_free(&a);
			free(data);
			*exists = true;
			break;
		}
		if (rc != CTL_ZK_NONODE)
			break;
		/* absent: watch for its creation */
		rc = ctl_zk_exists(z->zk, "/controller", true, NULL);
		if (rc == CTL_ZK_NONODE) {
			rc = CTL_ZK_OK;
			break;
		}
		if (rc != CTL_ZK_OK)
			break;
		/* created meanwhile: read it */
	}
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	int32_t epoch = z->controller_epoch;
	char *data;
	int len;
	rc = ctl_zk_get(z->zk, "/controller_epoch", false, &data, &len, NULL);
	if (rc == CTL_ZK_OK) {
		if (ctl_zkj_controller_epoch_decode(data, len, &epoch) != 0)
			fprintf(stderr, "samsa: /controller_epoch does not parse\n");
		free(data);
	} else if (rc == CTL_ZK_NONODE) {
		epoch = 0;
	} else {
		stale(z, rc);
		return rc;
	}
	if (emit_all || !z->controller_known || id != z->controller_id ||
	    epoch != z->controller_epoch) {
		z->controller_id = id;
		z->controller_epoch = epoch;
		z->controller_known = true;
		ctl_emit_controller(z->c, id, epoch);
	}
	return CTL_ZK_OK;
}

/* ---- partition states ---- */

static void set_no_state(ctl_partition *p)
{
	free(p->isr);
	p->isr = NULL;
	p->nisr = 0;
	p->leader = CTL_NO_LEADER;
	p->leader_epoch = -1;
	p->controller_epoch = -1;
	p->partition_epoch = ZKB_NO_STATE;
}

/* Read the state of topic's partition p into p's state fields (leader,
 * epochs, ISR), with a watch either way. */
static int read_state(zkb *z, const char *topic, ctl_partition *p)
{
	char path[ZKB_PATH_MAX];
	zkb_state_path(path, topic, p->partition);
	for (int attempt = 0; attempt < 5; attempt++) {
		char *data;
		int len;
		ctl_zk_stat st;
		int rc = ctl_zk_get(z->zk, path, true, &data, &len, &st);
		if (rc == CTL_ZK_OK) {
			proto_arena a;
			proto_arena_init(&a, ARENA_MAX);
			ctl_zkj_partition_state s;
			int drc = ctl_zkj_partition_state_decode(data, len, &a, &s);
			int32_t *isr = drc == 0 ? ids_dup(s.isr, s.nisr) : NULL;
			if (drc == 0 && !isr) {
				proto_arena_free(&a);
				free(data);
				return CTL_ZK_SYSTEMERROR;
			}
			set_no_state(p);
			p->partition_epoch = st.version;
			if (drc == 0) {
				p->isr = isr;
				p->nisr = s.nisr;
				p->leader = s.leader;
				p->leader_epoch = s.leader_epoch;
				p->controller_epoch = s.controller_epoch;
			} else {
				/* leader epoch -1 marks it unreadable: the
				 * controller leaves it to an operator */
				fprintf(stderr, "samsa: %s does not parse\n", path);
			}
			proto_arena_free(&a);
			free(data);
			return CTL_ZK_OK;
		}
		if (rc != CTL_ZK_NONODE)
			return rc;
		rc = ctl_zk_exists(z->zk, path, true, NULL);
		if (rc == CTL_ZK_NONODE) {
			set_no_state(p);
			return CTL_ZK_OK;
		}
		if (rc != CTL_ZK_OK)
			return rc;
	}
	return CTL_ZK_CONNECTIONLOSS;
}

static bool same_state(const ctl_partition *a, const ctl_partition *b)
{
	return a->partition_epoch == b->partition_epoch && a->leader == b->leader &&
	       a->leader_epoch == b->leader_epoch && a->controller_epoch == b->controller_epoch &&
	       ids_equal(a->isr, a->nisr, b->isr, b->nisr);
}

void zkb_view_set_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, int32_t leader_epoch,
			const int32_t *isr, int32_t nisr, int32_t controller_epoch, int32_t version)
{
	ctl_partition *cp = &t->partitions[p];
	int32_t *copy = ids_dup(isr, nisr);
	if (!copy) {
		stale(z, CTL_ZK_SYSTEMERROR); /* read it again later */
		return;
	}
	free(cp->isr);
	cp->isr = copy;
	cp->nisr = nisr;
	cp->leader = leader;
	cp->leader_epoch = leader_epoch;
	cp->controller_epoch = controller_epoch;
	cp->partition_epoch = version;
	if (!t->deleting)
		ctl_emit_partition(z->c, t, cp);
}

int zkb_view_refresh_state(zkb *z, const char *topic, int32_t partition)
{
	ctl_topic *t = zkb_view_topic(z, topic);
	if (!t || partition >= t->npartitions)
		return CTL_ZK_OK; /* not a partition we know (a deleted topic's) */
	ctl_partition fresh = { .partition = partition };
	int rc = read_state(z, topic, &fresh);
	if (rc != CTL_ZK_OK) {
		free(fresh.isr);
		stale(z, rc);
		return rc;
	}
	/* the topic may have been replaced meanwhile: look again */
	t = zkb_view_topic(z, topic);
	if (t && partition < t->npartitions && !same_state(&t->partitions[partition], &fresh))
		zkb_view_set_state(z, t, partition, fresh.leader, fresh.leader_epoch, fresh.isr,
				   fresh.nisr, fresh.controller_epoch, fresh.partition_epoch);
	free(fresh.isr);
	return CTL_ZK_OK;
}

/* ---- configs ---- */

int zkb_read_config(zkb *z, const char *path, ctl_config_entry **out, int32_t *n,
		    ctl_zk_stat *st)
{
	*out = NULL;
	*n = 0;
	char *data;
	int len;
	ctl_zk_stat tmp;
	if (!st)
		st = &tmp;
	int rc = ctl_zk_get(z->zk, path, false, &data, &len, st);
	if (rc == CTL_ZK_NONODE)
		st->version = -1;
	if (rc == CTL_ZK_NONODE || (rc == CTL_ZK_OK && len <= 0)) {
		if (rc == CTL_ZK_OK)
			free(data);
		*out = ctl_configs_copy(NULL, 0);
		return *out ? CTL_ZK_OK : CTL_ZK_SYSTEMERROR;
	}
	if (rc != CTL_ZK_OK)
		return rc;
	proto_arena a;
	proto_arena_init(&a, ARENA_MAX);
	ctl_zkj_config cj;
	ctl_config_entry *e = NULL;
	if (ctl_zkj_config_decode(data, len, &a, &cj) == 0) {
		/* ctl_zkj_config_entry and ctl_config_entry differ in const only */
		ctl_config_entry *view = calloc((size_t)(cj.nentries > 0 ? cj.nentries : 1),
						sizeof(*view));
		if (view) {
			for (int32_t i = 0; i < cj.nentries; i++) {
				view[i].name = (char *)cj.entries[i].name;
				view[i].value = (char *)cj.entries[i].value;
			}
			e = ctl_configs_copy(view, cj.nentries);
			free(view);
			*n = cj.nentries;
		}
	} else {
		fprintf(stderr, "samsa: %s does not parse: read as no overrides\n", path);
		e = ctl_configs_copy(NULL, 0);
		*n = 0;
	}
	proto_arena_free(&a);
	free(data);
	if (!e)
		return CTL_ZK_SYSTEMERROR;
	*out = e;
	return CTL_ZK_OK;
}

static int read_config(zkb *z, const char *path, ctl_config_entry **out, int32_t *n)
{
	return zkb_read_config(z, path, out, n, NULL);
}

int zkb_view_refresh_topic_config(zkb *z, const char *topic)
{
	ctl_topic *t = zkb_view_topic(z, topic);
	if (!t)
		return CTL_ZK_OK; /* read with the topic when it comes */
	char path[ZKB_PATH_MAX];
	zkb_topic_config_path(path, topic);
	ctl_config_entry *e;
	int32_t n;
	int rc = read_config(z, path, &e, &n);
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	t = zkb_view_topic(z, topic);
	if (t && !zkb_configs_equal(t->configs, t->nconfigs, e, n)) {
		ctl_configs_free(t->configs, t->nconfigs);
		t->configs = e;
		t->nconfigs = n;
		if (!t->deleting)
			ctl_emit_topic(z->c, t);
	} else {
		ctl_configs_free(e, n);
	}
	return CTL_ZK_OK;
}

int zkb_view_refresh_broker_config(zkb *z, int32_t id, bool emit_all)
{
	char path[ZKB_PATH_MAX];
	broker_config_path(path, id);
	ctl_config_entry *e;
	int32_t n;
	int rc = read_config(z, path, &e, &n);
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	const ctl_broker_config_set *bs = ctl_meta_broker_configs(&z->meta, id);
	if (!emit_all && (bs ? zkb_configs_equal(bs->configs, bs->nconfigs, e, n) : n == 0)) {
		ctl_configs_free(e, n);
		return CTL_ZK_OK;
	}
	ctl_config_entry *old;
	int32_t nold;
	if (ctl_meta_swap_broker_configs(&z->meta, id, e, n, &old, &nold) != 0) {
		ctl_configs_free(e, n);
		return CTL_ZK_SYSTEMERROR;
	}
	ctl_configs_free(old, nold);
	ctl_emit_broker_configs(z->c, id, e, n);
	return CTL_ZK_OK;
}

int zkb_view_refresh_broker_configs(zkb *z, bool emit_all)
{
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, "/config/brokers", false, &ch, NULL);
	if (rc == CTL_ZK_NONODE)
		return CTL_ZK_OK;
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++) {
		int32_t id;
		if (strcmp(ch.names[i], "<default>") == 0)
			id = CTL_BROKER_DEFAULT;
		else if (!parse_id(ch.names[i], &id))
			continue;
		rc = zkb_view_refresh_broker_config(z, id, emit_all);
	}
	ctl_zk_children_free(&ch);
	return rc;
}

/* ---- config change notices ---- */

typedef struct seq_child {
	int64_t seq;
	const char *name;
} seq_child;

static int cmp_seq_child(const void *a, const void *b)
{
	const seq_child *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One notice: re-read the config it names. */
static int apply_notice(zkb *z, const char *data, int len)
{
	proto_arena a;
	proto_arena_init(&a, ARENA_MAX);
	ctl_zkj_config_change cc;
	int rc = CTL_ZK_OK;
	if (ctl_zkj_config_change_decode(data, len, &a, &cc) == 0) {
		int32_t id;
		if (strcmp(cc.entity_type, "topics") == 0)
			rc = zkb_view_refresh_topic_config(z, cc.entity_name);
		else if (strcmp(cc.entity_type, "brokers") == 0) {
			if (strcmp(cc.entity_name, "<default>") == 0)
				rc = zkb_view_refresh_broker_config(z, CTL_BROKER_DEFAULT, false);
			else if (parse_id(cc.entity_name, &id))
				rc = zkb_view_refresh_broker_config(z, id, false);
		}
		else if (strcmp(cc.entity_type, "users") == 0 ||
			 strcmp(cc.entity_type, "clients") == 0 ||
			 strcmp(cc.entity_type, "ips") == 0) {
			char entity[CTL_ENTITY_PATH_MAX + 1];
			int n = snprintf(entity, sizeof(entity), "%s/%s", cc.entity_type,
					 cc.entity_name);
			ctl_entity_ref ref;
			if (n > 0 && (size_t)n < sizeof(entity) &&
			    ctl_entity_parse(entity, (size_t)n, &ref) == 0)
				rc = zkb_view_refresh_client_config(z, entity, false);
		}
	}
	proto_arena_free(&a);
	return rc;
}

int zkb_process_sequential(zkb *z, const char *root, const char *prefix, int64_t *last, bool skip,
			   int (*apply)(zkb *z, const char *path, const char *data, int len, void *arg),
			   void *arg)
{
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, root, true, &ch, NULL);
	if (rc != CTL_ZK_OK)
		return rc;
	seq_child *v = calloc((size_t)(ch.count > 0 ? ch.count : 1), sizeof(*v));
	if (!v) {
		ctl_zk_children_free(&ch);
		return CTL_ZK_SYSTEMERROR;
	}
	int32_t n = 0;
	size_t plen = strlen(prefix);
	for (int32_t i = 0; i < ch.count; i++) {
		const char *s = ch.names[i];
		char *end;
		if (strncmp(s, prefix, plen) != 0 || s[plen] < '0' || s[plen] > '9')
			continue;
		errno = 0;
		long long seq = strtoll(s + plen, &end, 10);
		if (errno || *end)
			continue;
		v[n].seq = seq;
		v[n].name = s;
		n++;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_seq_child);
	bool any = false;
	int64_t now = zkb_wall_ms();
	for (int32_t i = 0; i < n && rc == CTL_ZK_OK; i++) {
		if (v[i].seq <= *last)
			continue;
		if (skip) {
			*last = v[i].seq;
			continue;
		}
		char path[ZKB_PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", root, v[i].name);
		char *data;
		int len;
		rc = ctl_zk_get(z->zk, path, false, &data, &len, NULL);
		if (rc == CTL_ZK_NONODE) {
			rc = CTL_ZK_OK; /* purged meanwhile */
			continue;
		}
		if (rc != CTL_ZK_OK)
			break;
		rc = apply(z, path, data, len, arg);
		free(data);
		if (rc != CTL_ZK_OK)
			break;
		*last = v[i].seq;
		any = true;
	}
	/* Purge old children (Kafka: every broker does, after it processed
	 * some); a failure is of no consequence. */
	for (int32_t i = 0; any && rc == CTL_ZK_OK && i < n; i++) {
		char path[ZKB_PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", root, v[i].name);
		ctl_zk_stat st;
		if (ctl_zk_exists(z->zk, path, false, &st) == CTL_ZK_OK &&
		    now - st.ctime > ZKB_NOTICE_MAX_AGE_MS)
			ctl_zk_delete(z->zk, path, st.version);
	}
	free(v);
	ctl_zk_children_free(&ch);
	return rc;
}

static int apply_notice_cb(zkb *z, const char *path, const char *data, int len, void *arg)
{
	(void)path;
	(void)arg;
	return apply_notice(z, data, len);
}

int zkb_view_process_notices(zkb *z, bool skip)
{
	int rc = zkb_process_sequential(z, "/config/changes", NOTICE_PREFIX, &z->last_notice, skip,
					apply_notice_cb, NULL);
	stale(z, rc);
	return rc;
}

/* ---- topics ---- */

/* Build a ctl_topic from a decoded topic znode (no states yet). */
static ctl_topic *topic_from(const char *name, const ctl_zkj_topic *tj)
{
	ctl_topic *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	memcpy(t->id, tj->topic_id, 16);
	t->internal = ctl_topic_name_is_internal(name, strlen(name));
	t->partitions = calloc((size_t)tj->npartitions, sizeof(*t->partitions));
	if (!t->partitions) {
		free(t);
		return NULL;
	}
	for (int32_t p = 0; p < tj->npartitions; p++) {
		ctl_partition *cp = &t->partitions[p];
		cp->partition = p;
		cp->replicas = ids_dup(tj->partitions[p].replicas, tj->partitions[p].nreplicas);
		t->npartitions = p + 1;
		if (!cp->replicas) {
			ctl_topic_free(t);
			return NULL;
		}
		cp->nreplicas = tj->partitions[p].nreplicas;
		const ctl_zkj_assignment *as = &tj->partitions[p];
		if (as->nadding > 0 && !(cp->adding = ids_dup(as->adding, as->nadding))) {
			ctl_topic_free(t);
			return NULL;
		}
		cp->nadding = as->nadding > 0 ? as->nadding : 0;
		if (as->nremoving > 0 && !(cp->removing = ids_dup(as->removing, as->nremoving))) {
			ctl_topic_free(t);
			return NULL;
		}
		cp->nremoving = as->nremoving > 0 ? as->nremoving : 0;
		cp->leader = CTL_NO_LEADER;
		cp->leader_epoch = -1;
		cp->controller_epoch = -1;
		cp->partition_epoch = ZKB_NO_STATE;
	}
	t->replication_factor = tj->npartitions > 0 ? tj->partitions[0].nreplicas : 0;
	return t;
}

static bool assignment_equal(const ctl_topic *a, const ctl_topic *b)
{
	if (a->npartitions != b->npartitions)
		return false;
	for (int32_t p = 0; p < a->npartitions; p++)
		if (!ids_equal(a->partitions[p].replicas, a->partitions[p].nreplicas,
			       b->partitions[p].replicas, b->partitions[p].nreplicas) ||
		    !ids_equal(a->partitions[p].adding, a->partitions[p].nadding,
			       b->partitions[p].adding, b->partitions[p].nadding) ||
		    !ids_equal(a->partitions[p].removing, a->partitions[p].nremoving,
			       b->partitions[p].removing, b->partitions[p].nremoving))
			return false;
	return true;
}

/* Remove topic name from the view (its znode is gone). */
static void topic_gone(zkb *z, const char *name)
{
	ctl_topic *old = ctl_meta_take(&z->meta, name, NULL);
	if (old) {
		ctl_emit_topic_deleted(z->c, old);
		ctl_topic_free(old);
	}
}

int zkb_view_refresh_topic(zkb *z, const char *name, zkb_read how)
{
	if (ctl_validate_topic_name(name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1)) != 0)
		return CTL_ZK_OK; /* not a topic Kafka could have made */
	char path[ZKB_PATH_MAX];
	zkb_topic_path(path, name);
	char *data;
	int len;
	ctl_zk_stat st;
	int rc = ctl_zk_get(z->zk, path, true, &data, &len, &st);
	if (rc == CTL_ZK_NONODE) {
		topic_gone(z, name);
		return CTL_ZK_OK;
	}
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	proto_arena a;
	proto_arena_init(&a, ARENA_MAX);
	ctl_zkj_topic tj;
	int drc = ctl_zkj_topic_decode(data, len, &a, &tj);
	free(data);
	if (drc != 0 || !tj.has_topic_id) {
		if (drc != 0)
			fprintf(stderr, "samsa: %s does not parse: topic ignored\n", path);
		else if (z->ctrl.active)
			rc = zkb_ctrl_add_topic_id(z, name, &tj, st.version);
		/* Without an id the broker cannot use it: the controller gives
		 * it one (Kafka 2.8+ does the same), and its watch brings it. */
		proto_arena_free(&a);
		return rc;
	}
	ctl_topic *nt = topic_from(name, &tj);
	proto_arena_free(&a);
	if (!nt)
		return CTL_ZK_SYSTEMERROR;
	nt->deleting = zkb_view_marked(z, name);
	char cpath[ZKB_PATH_MAX];
	zkb_topic_config_path(cpath, name);
	rc = read_config(z, cpath, &nt->configs, &nt->nconfigs);
	ctl_topic *old = zkb_view_topic(z, name);
	bool same_id = old && memcmp(old->id, nt->id, 16) == 0;
	for (int32_t p = 0; rc == CTL_ZK_OK && p < nt->npartitions; p++) {
		ctl_partition *cp = &nt->partitions[p];
		if (same_id && how == ZKB_READ_NEW && p < old->npartitions) {
			const ctl_partition *op = &old->partitions[p];
			cp->isr = ids_dup(op->isr, op->nisr);
			if (!cp->isr) {
				rc = CTL_ZK_SYSTEMERROR;
				break;
			}
			cp->nisr = op->nisr;
			cp->leader = op->leader;
			cp->leader_epoch = op->leader_epoch;
			cp->controller_epoch = op->controller_epoch;
			cp->partition_epoch = op->partition_epoch;
		} else {
			rc = read_state(z, name, cp);
		}
	}
	if (rc != CTL_ZK_OK) {
		ctl_topic_free(nt);
		stale(z, rc);
		return rc;
	}
	old = zkb_view_topic(z, name); /* reads above may not change it, but be sure */
	same_id = old && memcmp(old->id, nt->id, 16) == 0;
	bool changed = !same_id || !assignment_equal(old, nt) || old->deleting != nt->deleting ||
		       !zkb_configs_equal(old->configs, old->nconfigs, nt->configs, nt->nconfigs);
	if (!changed && how != ZKB_READ_ALL_EMIT) {
		/* only states may differ */
		for (int32_t p = 0; p < nt->npartitions; p++)
			if (!same_state(&old->partitions[p], &nt->partitions[p]))
				zkb_view_set_state(z, old, p, nt->partitions[p].leader,
						   nt->partitions[p].leader_epoch, nt->partitions[p].isr,
						   nt->partitions[p].nisr,
						   nt->partitions[p].controller_epoch,
						   nt->partitions[p].partition_epoch);
		ctl_topic_free(nt);
		return CTL_ZK_OK;
	}
	int32_t pos = -1;
	if (old) {
		old = ctl_meta_take(&z->meta, name, &pos);
		if (old && !same_id)
			ctl_emit_topic_deleted(z->c, old); /* the name has a new topic */
		ctl_topic_free(old);
	}
	if (ctl_meta_insert_at(&z->meta, nt, pos) != 0) {
		ctl_topic_free(nt);
		stale(z, CTL_ZK_SYSTEMERROR);
		return CTL_ZK_SYSTEMERROR;
	}
	if (nt->deleting)
		ctl_emit_topic_deleted(z->c, nt); /* gone for the brokers */
	else
		ctl_emit_topic(z->c, nt);
	return CTL_ZK_OK;
}

/* ---- topics marked for deletion ---- */

#define DELETE_TOPICS "/admin/delete_topics"

bool zkb_view_marked(const zkb *z, const char *name)
{
	for (int32_t i = 0; i < z->nmarked; i++)
		if (strcmp(z->marked[i], name) == 0)
			return true;
	return false;
}

void zkb_view_clear_deletions(zkb *z)
{
	for (int32_t i = 0; i < z->nmarked; i++)
		free(z->marked[i]);
	free(z->marked);
	free(z->early);
	z->marked = NULL;
	z->early = NULL;
	z->nmarked = z->nearly = 0;
}

int zkb_view_refresh_deletions(zkb *z)
{
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, DELETE_TOPICS, true, &ch, NULL);
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	for (int32_t i = 0; i < z->nmarked; i++)
		free(z->marked[i]);
	free(z->marked);
	z->marked = ch.names; /* taken over */
	z->nmarked = ch.count;
	for (int32_t i = 0; i < z->meta.ntopics; i++) {
		ctl_topic *t = z->meta.topics[i];
		bool m = zkb_view_marked(z, t->name);
		if (m == t->deleting)
			continue;
		t->deleting = m;
		if (m) {
			fprintf(stderr, "samsa: topic %s is marked for deletion\n", t->name);
			ctl_emit_topic_deleted(z->c, t);
		} else {
			ctl_emit_topic(z->c, t); /* the mark was taken away */
		}
	}
	return CTL_ZK_OK;
}

int zkb_view_read_early_deletions(zkb *z)
{
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, DELETE_TOPICS, false, &ch, NULL);
	if (rc == CTL_ZK_NONODE)
		return CTL_ZK_OK;
	if (rc != CTL_ZK_OK)
		return rc;
	free(z->early);
	z->nearly = 0;
	z->early = calloc((size_t)(ch.count > 0 ? ch.count : 1), sizeof(*z->early));
	if (!z->early) {
		ctl_zk_children_free(&ch);
		return CTL_ZK_SYSTEMERROR;
	}
	for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++) {
		const char *name = ch.names[i];
		if (ctl_validate_topic_name(name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1)) != 0)
			continue;
		char path[ZKB_PATH_MAX];
		zkb_topic_path(path, name);
		char *data;
		int len;
		rc = ctl_zk_get(z->zk, path, false, &data, &len, NULL);
		if (rc == CTL_ZK_NONODE) {
			rc = CTL_ZK_OK; /* deleted already: nothing of it to learn */
			continue;
		}
		if (rc != CTL_ZK_OK)
			break;
		proto_arena a;
		proto_arena_init(&a, ARENA_MAX);
		ctl_zkj_topic tj;
		if (ctl_zkj_topic_decode(data, len, &a, &tj) == 0 && tj.has_topic_id) {
			ctl_topic *e = &z->early[z->nearly++];
			snprintf(e->name, sizeof(e->name), "%s", name);
			memcpy(e->id, tj.topic_id, 16);
		}
		proto_arena_free(&a);
		free(data);
	}
	ctl_zk_children_free(&ch);
	return rc;
}

void zkb_view_emit_early_deletions(zkb *z)
{
	for (int32_t i = 0; i < z->nearly; i++) {
		const ctl_topic *e = &z->early[i];
		const ctl_topic *t = zkb_view_topic(z, e->name);
		if (!t || memcmp(t->id, e->id, 16) != 0)
			ctl_emit_topic_deleted(z->c, e); /* deleted while this broker came up */
	}
	free(z->early);
	z->early = NULL;
	z->nearly = 0;
}

int zkb_view_refresh_topic_list(zkb *z, zkb_read how)
{
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, "/brokers/topics", true, &ch, NULL);
	if (rc != CTL_ZK_OK) {
		stale(z, rc);
		return rc;
	}
	for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++)
		if (how != ZKB_READ_NEW || !zkb_view_topic(z, ch.names[i]))
			rc = zkb_view_refresh_topic(z, ch.names[i], how);
	/* Topics of the view that are no longer listed: read them (gone). */
	for (int32_t i = 0; i < z->meta.ntopics && rc == CTL_ZK_OK; i++) {
		const char *name = z->meta.topics[i]->name;
		bool listed = false;
		for (int32_t k = 0; k < ch.count && !listed; k++)
			listed = strcmp(ch.names[k], name) == 0;
		if (listed)
			continue;
		char copy[CTL_TOPIC_NAME_MAX + 1];
		snprintf(copy, sizeof(copy), "%s", name);
		int32_t before = z->meta.ntopics;
		rc = zkb_view_refresh_topic(z, copy, ZKB_READ_NEW);
		if (z->meta.ntopics < before)
			i--; /* removed: the next one moved here */
	}
	ctl_zk_children_free(&ch);
	return rc;
}

int zkb_view_refresh_all(zkb *z, zkb_read how)
{
	bool emit_all = how == ZKB_READ_ALL_EMIT;
	if (how == ZKB_READ_NEW)
		how = ZKB_READ_ALL;
	z->stale = false;
	bool exists;
	int rc = zkb_view_refresh_brokers(z, emit_all, NULL);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_controller(z, emit_all, &exists);
	/* Notices first: any written after this are seen by the watch. */
	if (rc == CTL_ZK_OK)
		rc = zkb_view_process_notices(z, true);
	if (rc == CTL_ZK_OK)
		rc = zkb_acl_refresh_all(z, emit_all);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_broker_configs(z, emit_all);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_client_configs(z, emit_all);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_deletions(z);
	if (rc == CTL_ZK_OK)
		rc = zkb_view_refresh_topic_list(z, how);
	stale(z, rc);
	return rc;
}
