/*
 * zk_controller.c - the controller of Kafka's ZooKeeper mode
 * (zk_backend.h; CLUSTER.md 2.1-2.4, 2.6, 2.9): the election and its
 * fencing, and the controller's work, which runs on the controller thread
 * like everything else (one job at a time: Kafka's single controller event
 * queue).
 *
 * Election (KafkaZkClient.registerControllerAndIncrementControllerEpoch):
 * one multi that creates /controller (ephemeral) and sets
 * /controller_epoch to epoch + 1 at the version read. The version it
 * leaves is this controller's fencing token: every later write is a multi
 * that first checks it (wrapRequestWithControllerEpochCheck); BADVERSION
 * there means a newer controller exists, and this one resigns at once.
 *
 * The work is a reconciliation of each partition against the rules, done
 * whenever something it depends on may have changed (a new controller, a
 * broker gone, come or re-registered, a new topic or partition, a state
 * written, a config notice). Since the rules only act on what is wrong, a
 * second pass changes nothing:
 *  - a partition without a state gets one: the first live replica leads,
 *    the live replicas are the ISR, leader epoch 0 (Kafka's NewPartition ->
 *    OnlinePartition); without a live replica it waits;
 *  - a leader that is not live is replaced (Kafka's offline election): the
 *    first replica in assignment order that is live, in the ISR and not
 *    shutting down, the ISR becoming the old one's live members; else, only
 *    with unclean.leader.election.enable, the first live replica with ISR
 *    [it]; else leader -1 and the dead removed from the ISR, which is never
 *    emptied (its last member stays, so a clean election can follow);
 *  - a live leader's ISR loses its dead members (Kafka's OfflineReplica).
 * Each change bumps the leader epoch and is conditional on the state's
 * version as last read; BADVERSION re-reads that partition and decides
 * again. A bounce (same id, a new registration czxid: KIP-380) is handled
 * as a failure, then a startup, as Kafka does.
 *
 * Live brokers for the controller are those it last handled (z->ctrl.live,
 * ids and epochs), so that it can tell a bounce from a broker that stayed.
 */
#include "controller/zk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/elect.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

/* A fenced write found another controller's epoch: this one resigned. */
#define FENCED ZKB_FENCED
/* Tries of one partition's write against moving versions. */
#define MAX_TRIES 8
/* Ops per multi when deleting a big topic (ZooKeeper's request size). */
#define DELETE_BATCH 1000

/* ---- brokers as the controller sees them ---- */

static const ctl_broker *live_broker(const zkb *z, int32_t id)
{
	for (int32_t i = 0; i < z->ctrl.nlive; i++)
		if (z->ctrl.live[i].id == id)
			return &z->ctrl.live[i];
	return NULL;
}

static bool is_live(const zkb *z, int32_t id)
{
	return id >= 0 && live_broker(z, id) != NULL;
}

static bool is_shutting(const zkb *z, int32_t id)
{
	for (int32_t i = 0; i < z->ctrl.nshutting; i++)
		if (z->ctrl.shutting[i].id == id)
			return true;
	return false;
}

/* May lead: live and not in controlled shutdown. */
static bool eligible(const zkb *z, int32_t id)
{
	return is_live(z, id) && !is_shutting(z, id);
}

static bool online_cb(const void *arg, int32_t id)
{
	return eligible(arg, id);
}

static bool contains(const int32_t *v, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* Set the controller's live brokers to the view's, minus skip[0..nskip). */
static int set_live(zkb *z, const int32_t *skip, int32_t nskip)
{
	ctl_broker *v = malloc((size_t)(z->nbrokers > 0 ? z->nbrokers : 1) * sizeof(*v));
	if (!v)
		return -1;
	int32_t n = 0;
	for (int32_t i = 0; i < z->nbrokers; i++)
		if (!contains(skip, nskip, z->brokers[i].id))
			v[n++] = z->brokers[i];
	free(z->ctrl.live);
	z->ctrl.live = v;
	z->ctrl.nlive = n;
	return 0;
}

void zkb_ctrl_clear(zkb *z)
{
	free(z->ctrl.live);
	free(z->ctrl.shutting);
	memset(&z->ctrl, 0, sizeof(z->ctrl));
}

/* ---- fenced writes ---- */

/*
 * Run ops[0..n) as one multi after check(/controller_epoch). Returns
 * CTL_ZK_OK, FENCED (the check failed: resigned), or the failing op's code
 * with *failed its index in ops (-1 for the whole request). A failure for
 * want of ZooKeeper marks the work for another try.
 */
static int fenced_multi(zkb *z, ctl_zk_op *ops, int n, int *failed)
{
	*failed = -1;
	if (!z->ctrl.active)
		return FENCED;
	ctl_zk_op *all = malloc((size_t)(n + 1) * sizeof(*all));
	if (!all)
		return CTL_ZK_SYSTEMERROR;
	all[0] = ctl_zk_op_check("/controller_epoch", z->ctrl.epoch_zkversion);
	memcpy(&all[1], ops, (size_t)n * sizeof(*ops));
	int f;
	int rc = ctl_zk_multi(z->zk, all, n + 1, &f);
	memcpy(ops, &all[1], (size_t)n * sizeof(*ops));
	free(all);
	if (rc == CTL_ZK_BADVERSION && f == 0) {
		zkb_ctrl_resign(z, "another controller was elected (/controller_epoch moved)");
		return FENCED;
	}
	if (rc == CTL_ZK_NONODE && f == 0) {
		zkb_ctrl_resign(z, "/controller_epoch is gone");
		return FENCED;
	}
	*failed = f > 0 ? f - 1 : -1;
	if (zkb_transient(rc)) {
		z->ctrl.retry = true;
		zkb_retry_in(z, 1000);
	}
	return rc;
}

/* Write partition p's state (a set at the version last read). */
static int write_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, int32_t leader_epoch,
		       const int32_t *isr, int32_t nisr)
{
	char path[ZKB_PATH_MAX];
	zkb_state_path(path, t->name, p);
	char *json;
	size_t len;
	if (zkb_state_encode(z->ctrl.epoch, leader, leader_epoch, isr, nisr, &json, &len) != 0)
		return CTL_ZK_SYSTEMERROR;
	ctl_zk_op op = ctl_zk_op_set(path, json, (int)len, t->partitions[p].partition_epoch);
	int failed;
	int rc = fenced_multi(z, &op, 1, &failed);
	free(json);
	if (rc == CTL_ZK_OK)
		zkb_view_set_state(z, t, p, leader, leader_epoch, isr, nisr, z->ctrl.epoch,
				   op.stat.version);
	return rc;
}

/* Create partition p's state, with .../partitions and .../partitions/<p>
 * (null data) when missing (Kafka's createTopicPartitionStatesRaw). */
static int create_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, const int32_t *isr,
			int32_t nisr)
{
	char parts[ZKB_PATH_MAX], ppath[ZKB_PATH_MAX + 16], spath[ZKB_PATH_MAX];
	zkb_partitions_path(parts, t->name);
	snprintf(ppath, sizeof(ppath), "%s/%d", parts, (int)p);
	zkb_state_path(spath, t->name, p);
	char *json;
	size_t len;
	if (zkb_state_encode(z->ctrl.epoch, leader, 0, isr, nisr, &json, &len) != 0)
		return CTL_ZK_SYSTEMERROR;
	int rc = CTL_ZK_OK, failed;
	/* Most often the parents exist (another partition made them) or none
	 * does (a new topic): try the short form first. */
	for (int attempt = 0; attempt < 3; attempt++) {
		ctl_zk_op ops[3];
		int n = 0;
		if (attempt >= 2)
			ops[n++] = ctl_zk_op_create(parts, NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT);
		if (attempt >= 1)
			ops[n++] = ctl_zk_op_create(ppath, NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT);
		ops[n++] = ctl_zk_op_create(spath, json, (int)len, CTL_ZK_PERSISTENT);
		rc = fenced_multi(z, ops, n, &failed);
		if (rc != CTL_ZK_NONODE)
			break;
		/* a parent is missing: add it */
	}
	free(json);
	if (rc == CTL_ZK_OK)
		zkb_view_set_state(z, t, p, leader, 0, isr, nisr, z->ctrl.epoch, 0);
	return rc;
}

/* ---- decisions ---- */

static bool unclean_enabled(const zkb *z, const ctl_topic *t)
{
	const char *v = zkb_config_value(z, t, "unclean.leader.election.enable");
	if (v)
		return strcasecmp(v, "true") == 0;
	return z->unclean_default;
}

/*
 * What partition cp should be (the rules at the top of the file), into
 * *leader and isr[0..*nisr) (isr has room for cp's ISR and replicas).
 * Returns true when that differs from what it is.
 */
static bool decide(const zkb *z, const ctl_topic *t, const ctl_partition *cp, int32_t *leader,
		   int32_t *isr, int32_t *nisr)
{
	int32_t n = 0;
	*leader = cp->leader;
	if (cp->leader >= 0 && is_live(z, cp->leader)) {
		for (int32_t i = 0; i < cp->nisr; i++)
			if (is_live(z, cp->isr[i]))
				isr[n++] = cp->isr[i];
		if (n == 0)
			isr[n++] = cp->leader;
	} else {
		bool was_unclean;
		int32_t cand = ctl_elect_offline(cp, unclean_enabled(z, t), online_cb, z, isr, &n,
						 &was_unclean);
		*leader = cand;
		if (cand < 0) {
			/* No leader: the dead leave the ISR, but its last
			 * member stays (the old leader when it is one). */
			for (int32_t i = 0; i < cp->nisr; i++)
				if (is_live(z, cp->isr[i]))
					isr[n++] = cp->isr[i];
			if (n == 0 && cp->nisr > 0)
				isr[n++] = contains(cp->isr, cp->nisr, cp->leader) ? cp->leader
										    : cp->isr[cp->nisr - 1];
		}
	}
	*nisr = n;
	return *leader != cp->leader || n != cp->nisr ||
	       (n > 0 && memcmp(isr, cp->isr, (size_t)n * sizeof(*isr)) != 0);
}

void zkb_ctrl_reconcile_partition(zkb *z, const char *name, int32_t p)
{
	for (int attempt = 0; attempt < MAX_TRIES && z->ctrl.active; attempt++) {
		ctl_topic *t = zkb_view_topic(z, name);
		if (!t || p >= t->npartitions)
			return;
		ctl_partition *cp = &t->partitions[p];
		int32_t *isr = malloc((size_t)(cp->nisr + cp->nreplicas + 1) * sizeof(*isr));
		if (!isr)
			return;
		int32_t leader, nisr = 0;
		int rc;
		if (cp->partition_epoch == ZKB_NO_STATE) {
			for (int32_t i = 0; i < cp->nreplicas; i++)
				if (eligible(z, cp->replicas[i]))
					isr[nisr++] = cp->replicas[i];
			if (nisr == 0) {
				free(isr); /* no live replica: it waits for one */
				return;
			}
			rc = create_state(z, t, p, isr[0], isr, nisr);
		} else if (cp->leader_epoch < 0) {
			free(isr); /* a state that does not parse: an operator's */
			return;
		} else if (decide(z, t, cp, &leader, isr, &nisr)) {
			rc = write_state(z, t, p, leader, cp->leader_epoch + 1, isr, nisr);
		} else {
			rc = CTL_ZK_OK;
		}
		free(isr);
		if (rc == CTL_ZK_OK || rc == FENCED || zkb_transient(rc))
			return;
		if (rc == CTL_ZK_BADVERSION || rc == CTL_ZK_NODEEXISTS) {
			/* someone wrote it meanwhile (a leader's ISR change, or
			 * the state exists): read it and decide again */
			if (zkb_view_refresh_state(z, name, p) != CTL_ZK_OK)
				return;
			continue;
		}
		if (rc == CTL_ZK_NONODE) {
			/* the topic is going away */
			zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
			return;
		}
		fprintf(stderr, "samsa: controller: cannot write the state of %s-%d: %s\n", name,
			(int)p, ctl_zk_strerror(rc));
		return;
	}
}

void zkb_ctrl_reconcile_topic(zkb *z, const char *name)
{
	ctl_topic *t = zkb_view_topic(z, name);
	if (!z->ctrl.active || !t)
		return;
	char copy[CTL_TOPIC_NAME_MAX + 1];
	snprintf(copy, sizeof(copy), "%s", name);
	int32_t n = t->npartitions;
	for (int32_t p = 0; p < n && z->ctrl.active; p++)
		zkb_ctrl_reconcile_partition(z, copy, p);
}

void zkb_ctrl_reconcile_all(zkb *z)
{
	if (!z->ctrl.active)
		return;
	/* names first: the view's topics may move while writing */
	int32_t n = z->meta.ntopics;
	char (*names)[CTL_TOPIC_NAME_MAX + 1] = malloc((size_t)(n > 0 ? n : 1) * sizeof(*names));
	if (!names)
		return;
	for (int32_t i = 0; i < n; i++)
		memcpy(names[i], z->meta.topics[i]->name, sizeof(names[i]));
	for (int32_t i = 0; i < n && z->ctrl.active; i++)
		zkb_ctrl_reconcile_topic(z, names[i]);
	free(names);
}

/* ---- brokers coming and going ---- */

void zkb_ctrl_brokers_changed(zkb *z)
{
	if (!z->ctrl.active)
		return;
	/* bounced: registered again (a new czxid) since this controller
	 * last looked */
	int32_t *bounced = malloc((size_t)(z->nbrokers > 0 ? z->nbrokers : 1) * sizeof(*bounced));
	if (!bounced)
		return;
	int32_t nb = 0;
	for (int32_t i = 0; i < z->nbrokers; i++) {
		const ctl_broker *was = live_broker(z, z->brokers[i].id);
		if (was && was->epoch != z->brokers[i].epoch)
			bounced[nb++] = z->brokers[i].id;
	}
	/* A broker in controlled shutdown stays so while its registration
	 * lasts. */
	int32_t k = 0;
	for (int32_t i = 0; i < z->ctrl.nshutting; i++) {
		const ctl_broker *b = zkb_view_broker(z, z->ctrl.shutting[i].id);
		if (b && b->epoch == z->ctrl.shutting[i].epoch)
			z->ctrl.shutting[k++] = z->ctrl.shutting[i];
	}
	z->ctrl.nshutting = k;
	if (nb > 0 && set_live(z, bounced, nb) == 0)
		zkb_ctrl_reconcile_all(z); /* the failure half of a bounce */
	free(bounced);
	if (z->ctrl.active && set_live(z, NULL, 0) == 0)
		zkb_ctrl_reconcile_all(z);
	if (z->ctrl.active && z->nmarked > 0)
		zkb_ctrl_process_deletions(z); /* a deletion may wait for a broker that came */
}

/* ---- election ---- */

static void failover(zkb *z)
{
	fprintf(stderr, "samsa: broker %d is the controller (epoch %d)\n", (int)z->self.id,
		(int)z->ctrl.epoch);
	/* Read everything afresh: the work starts from ZooKeeper's truth. */
	if (zkb_view_refresh_all(z, ZKB_READ_ALL) != CTL_ZK_OK) {
		z->ctrl.retry = true;
		zkb_retry_in(z, 1000);
	}
	if (!z->ctrl.active)
		return;
	if (set_live(z, NULL, 0) != 0)
		return;
	z->ctrl.nshutting = 0;
	zkb_ctrl_process_deletions(z);
	zkb_ctrl_reconcile_all(z);
	zkb_reasn_resume(z);
	zkb_elect_failover(z);
}

void zkb_ctrl_elect(zkb *z)
{
	if (z->ctrl.active || !z->registered)
		return;
	for (int attempt = 0; attempt < 5; attempt++) {
		char *data;
		int len;
		ctl_zk_stat st;
		int32_t epoch = 0;
		int rc = ctl_zk_get(z->zk, "/controller_epoch", false, &data, &len, &st);
		if (rc == CTL_ZK_NONODE) {
			/* Kafka creates it with 0 at the first election */
			rc = ctl_zk_create(z->zk, "/controller_epoch", "0", 1, CTL_ZK_PERSISTENT, NULL,
					   0, NULL);
			if (rc == CTL_ZK_OK || rc == CTL_ZK_NODEEXISTS)
				continue;
		}
		if (rc != CTL_ZK_OK)
			goto later;
		if (ctl_zkj_controller_epoch_decode(data, len, &epoch) != 0) {
			fprintf(stderr, "samsa: /controller_epoch does not parse: no election\n");
			free(data);
			return;
		}
		free(data);
		char *cj, *ej;
		size_t clen, elen;
		ctl_zkj_controller c = { .version = 1, .broker_id = z->self.id,
					 .timestamp = zkb_wall_ms(), .kraft_controller_epoch = -1 };
		if (ctl_zkj_controller_encode(&c, &cj, &clen) != 0)
			return;
		if (ctl_zkj_controller_epoch_encode(epoch + 1, &ej, &elen) != 0) {
			free(cj);
			return;
		}
		ctl_zk_op ops[2] = {
			ctl_zk_op_create("/controller", cj, (int)clen, CTL_ZK_EPHEMERAL),
			ctl_zk_op_set("/controller_epoch", ej, (int)elen, st.version),
		};
		int failed;
		rc = ctl_zk_multi(z->zk, ops, 2, &failed);
		free(cj);
		free(ej);
		int32_t won_version = ops[1].stat.version;
		if (rc != CTL_ZK_OK && rc != CTL_ZK_NODEEXISTS && rc != CTL_ZK_BADVERSION) {
			/* Lost connection: it may have been applied. Kafka reads
			 * back: /controller ours and the epoch ours means won. */
			ctl_zk_stat cs, es;
			int32_t now_epoch;
			if (ctl_zk_get(z->zk, "/controller", false, &data, &len, &cs) != CTL_ZK_OK)
				goto later;
			free(data);
			if (cs.ephemeral_owner != ctl_zk_session_id(z->zk))
				break; /* someone else's */
			if (ctl_zk_get(z->zk, "/controller_epoch", false, &data, &len, &es) !=
			    CTL_ZK_OK)
				goto later;
			rc = ctl_zkj_controller_epoch_decode(data, len, &now_epoch);
			free(data);
			if (rc != 0 || now_epoch != epoch + 1)
				goto later;
			rc = CTL_ZK_OK;
			won_version = es.version;
		}
		if (rc == CTL_ZK_OK) {
			z->ctrl.active = true;
			z->ctrl.epoch = epoch + 1;
			z->ctrl.epoch_zkversion = won_version;
			z->ctrl.retry = false;
			bool exists;
			zkb_view_refresh_controller(z, false, &exists); /* emits, re-arms the watch */
			failover(z);
			return;
		}
		if (rc == CTL_ZK_NODEEXISTS)
			break; /* another broker is controller */
		/* BADVERSION: the epoch moved under us: read again */
	}
	/* Lost: watch /controller (the caller's read armed it, read again to
	 * be sure and to tell the loop who won). */
	bool exists;
	zkb_view_refresh_controller(z, false, &exists);
	return;
later:
	z->stale = true;
	zkb_retry_in(z, 1000);
}

void zkb_ctrl_resign(zkb *z, const char *why)
{
	if (!z->ctrl.active)
		return;
	fprintf(stderr, "samsa: broker %d resigns as controller (epoch %d): %s\n", (int)z->self.id,
		(int)z->ctrl.epoch, why);
	zkb_ctrl_clear(z);
	/* /controller still ours (this session's): delete it, so that an
	 * election can follow (our own watch sees it go). */
	ctl_zk_stat st;
	char *data;
	int len;
	if (ctl_zk_get(z->zk, "/controller", false, &data, &len, &st) == CTL_ZK_OK) {
		free(data);
		if (st.ephemeral_owner == ctl_zk_session_id(z->zk))
			ctl_zk_delete(z->zk, "/controller", st.version);
	}
}

void zkb_ctrl_controller_changed(zkb *z, int32_t id)
{
	if (z->ctrl.active && id != z->self.id) {
		zkb_ctrl_resign(z, "/controller names another broker");
		return;
	}
	if (!z->ctrl.active && id == z->self.id) {
		/* ours but not acting (a resignation whose delete failed):
		 * delete it so that an election can follow */
		ctl_zk_stat st;
		if (ctl_zk_exists(z->zk, "/controller", false, &st) == CTL_ZK_OK &&
		    st.ephemeral_owner == ctl_zk_session_id(z->zk))
			ctl_zk_delete(z->zk, "/controller", st.version);
	}
}

/* ---- topic ids ---- */

int zkb_ctrl_add_topic_id(zkb *z, const char *name, const struct ctl_zkj_topic *tj,
			  int32_t version)
{
	ctl_zkj_topic copy = *tj;
	copy.version = 3;
	copy.has_topic_id = true;
	if (ctl_random_uuid(copy.topic_id) != 0)
		return CTL_ZK_SYSTEMERROR;
	char *json;
	size_t len;
	if (ctl_zkj_topic_encode(&copy, &json, &len) != 0)
		return CTL_ZK_SYSTEMERROR;
	char path[ZKB_PATH_MAX];
	zkb_topic_path(path, name);
	ctl_zk_op op = ctl_zk_op_set(path, json, (int)len, version);
	int failed;
	int rc = fenced_multi(z, &op, 1, &failed);
	free(json);
	/* OK: the data watch brings the topic; BADVERSION: it changed, and
	 * the watch brings that too */
	return rc == CTL_ZK_OK || rc == CTL_ZK_BADVERSION || rc == FENCED ? CTL_ZK_OK : rc;
}

/* ---- topic deletion ---- */

/* Append path to the list (a malloc'd copy). */
static int push_path(char ***v, int32_t *n, int32_t *cap, const char *path)
{
	if (*n == *cap) {
		int32_t c = *cap ? *cap * 2 : 16;
		char **g = realloc(*v, (size_t)c * sizeof(*g));
		if (!g)
			return -1;
		*v = g;
		*cap = c;
	}
	if (!((*v)[*n] = strdup(path)))
		return -1;
	(*n)++;
	return 0;
}

/* The znodes of topic name and its marker, deepest first. */
static int deletion_paths(zkb *z, const char *name, char ***out, int32_t *n)
{
	char **v = NULL;
	int32_t cap = 0;
	*n = 0;
	char base[ZKB_PATH_MAX], parts[ZKB_PATH_MAX], path[2 * ZKB_PATH_MAX];
	zkb_topic_path(base, name);
	zkb_partitions_path(parts, name);
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, parts, false, &ch, NULL);
	if (rc == CTL_ZK_OK) {
		for (int32_t i = 0; i < ch.count && rc == CTL_ZK_OK; i++) {
			if (strlen(ch.names[i]) >= ZKB_PATH_MAX - strlen(parts) - 1)
				continue; /* not a partition's */
			snprintf(path, sizeof(path), "%s/%s", parts, ch.names[i]);
			ctl_zk_children leaves;
			rc = ctl_zk_get_children(z->zk, path, false, &leaves, NULL);
			if (rc == CTL_ZK_NONODE) {
				rc = CTL_ZK_OK;
				continue;
			}
			for (int32_t k = 0; k < leaves.count && rc == CTL_ZK_OK; k++) {
				char leaf[3 * ZKB_PATH_MAX];
				snprintf(leaf, sizeof(leaf), "%s/%s", path,
					 strlen(leaves.names[k]) < ZKB_PATH_MAX ? leaves.names[k] : "");
				if (strlen(leaf) >= ZKB_PATH_MAX || push_path(&v, n, &cap, leaf) != 0)
					rc = CTL_ZK_SYSTEMERROR;
			}
			ctl_zk_children_free(&leaves);
			if (rc == CTL_ZK_OK && push_path(&v, n, &cap, path) != 0)
				rc = CTL_ZK_SYSTEMERROR;
		}
		ctl_zk_children_free(&ch);
		if (rc == CTL_ZK_OK && push_path(&v, n, &cap, parts) != 0)
			rc = CTL_ZK_SYSTEMERROR;
	} else if (rc == CTL_ZK_NONODE) {
		rc = CTL_ZK_OK;
	}
	if (rc == CTL_ZK_OK) {
		rc = ctl_zk_exists(z->zk, base, false, NULL);
		if (rc == CTL_ZK_OK && push_path(&v, n, &cap, base) != 0)
			rc = CTL_ZK_SYSTEMERROR;
		else if (rc == CTL_ZK_NONODE)
			rc = CTL_ZK_OK;
	}
	if (rc == CTL_ZK_OK) {
		zkb_topic_config_path(path, name);
		rc = ctl_zk_exists(z->zk, path, false, NULL);
		if (rc == CTL_ZK_OK && push_path(&v, n, &cap, path) != 0)
			rc = CTL_ZK_SYSTEMERROR;
		else if (rc == CTL_ZK_NONODE)
			rc = CTL_ZK_OK;
	}
	if (rc == CTL_ZK_OK) {
		snprintf(path, sizeof(path), "/admin/delete_topics/%s", name);
		if (push_path(&v, n, &cap, path) != 0)
			rc = CTL_ZK_SYSTEMERROR;
	}
	if (rc != CTL_ZK_OK) {
		for (int32_t i = 0; i < *n; i++)
			free(v[i]);
		free(v);
		*n = 0;
		return rc;
	}
	*out = v;
	return CTL_ZK_OK;
}

/*
 * Whether topic t may be deleted now (Kafka's TopicDeletionManager: a topic
 * is ineligible while a replica's broker is down or a partition is being
 * reassigned). The brokers delete their data when they see the mark
 * (zk_view.c; Kafka's StopReplica with delete=true); a broker that is down
 * learns of it when it comes back, before it registers, so the znodes go
 * once every replica's broker is registered (CLUSTER.md 2.9 point 4).
 */
static bool deletion_eligible(const zkb *z, const ctl_topic *t)
{
	if (zkb_reasn_topic_busy(t)) {
		fprintf(stderr, "samsa: controller: deletion of topic %s waits: a partition "
			"reassignment is in progress\n", t->name);
		return false;
	}
	for (int32_t p = 0; p < t->npartitions; p++)
		for (int32_t i = 0; i < t->partitions[p].nreplicas; i++)
			if (!is_live(z, t->partitions[p].replicas[i])) {
				fprintf(stderr, "samsa: controller: deletion of topic %s waits for "
					"broker %d to come back\n", t->name,
					(int)t->partitions[p].replicas[i]);
				return false;
			}
	return true;
}

/* Delete topic name's znodes, then its marker (CLUSTER.md 2.9). */
static void delete_topic(zkb *z, const char *name)
{
	int rc = CTL_ZK_OK;
	for (int attempt = 0; attempt < 3 && z->ctrl.active; attempt++) {
		char **paths;
		int32_t n;
		rc = deletion_paths(z, name, &paths, &n);
		if (rc != CTL_ZK_OK)
			break;
		for (int32_t from = 0; from < n && rc == CTL_ZK_OK; from += DELETE_BATCH) {
			int32_t k = n - from < DELETE_BATCH ? n - from : DELETE_BATCH;
			ctl_zk_op *ops = malloc((size_t)k * sizeof(*ops));
			if (!ops) {
				rc = CTL_ZK_SYSTEMERROR;
				break;
			}
			for (int32_t i = 0; i < k; i++)
				ops[i] = ctl_zk_op_delete(paths[from + i], CTL_ZK_ANY_VERSION);
			int failed;
			rc = fenced_multi(z, ops, k, &failed);
			free(ops);
		}
		for (int32_t i = 0; i < n; i++)
			free(paths[i]);
		free(paths);
		if (rc == CTL_ZK_OK) {
			fprintf(stderr, "samsa: controller: topic %s deleted\n", name);
			zkb_view_refresh_topic(z, name, ZKB_READ_NEW); /* gone: emits */
			return;
		}
		if (rc != CTL_ZK_NONODE && rc != CTL_ZK_NOTEMPTY)
			break; /* fenced, or ZooKeeper away (tried again later) */
		/* something moved meanwhile: list again */
	}
	if (rc != CTL_ZK_OK && rc != FENCED && !zkb_transient(rc))
		fprintf(stderr, "samsa: controller: cannot delete topic %s: %s\n", name,
			ctl_zk_strerror(rc));
}

void zkb_ctrl_process_deletions(zkb *z)
{
	if (!z->ctrl.active)
		return;
	ctl_zk_children ch;
	int rc = ctl_zk_get_children(z->zk, "/admin/delete_topics", true, &ch, NULL);
	if (rc != CTL_ZK_OK) {
		if (zkb_transient(rc)) {
			z->ctrl.retry = true;
			zkb_retry_in(z, 1000);
		}
		return;
	}
	for (int32_t i = 0; i < ch.count && z->ctrl.active; i++) {
		if (ctl_validate_topic_name(ch.names[i], (int32_t)strlen(ch.names[i])) != 0) {
			/* not a topic name: drop the marker */
			char path[ZKB_PATH_MAX + 32];
			snprintf(path, sizeof(path), "/admin/delete_topics/%s", ch.names[i]);
			ctl_zk_op op = ctl_zk_op_delete(path, CTL_ZK_ANY_VERSION);
			int failed;
			fenced_multi(z, &op, 1, &failed);
			continue;
		}
		const ctl_topic *t = zkb_view_topic(z, ch.names[i]);
		if (t && !deletion_eligible(z, t))
			continue; /* tried again when a broker comes or a reassignment ends */
		delete_topic(z, ch.names[i]);
	}
	ctl_zk_children_free(&ch);
}

/* ---- controlled shutdown ---- */

/* Move leadership off broker id for partition p of topic name, or take id
 * out of its ISR (Kafka's doControlledShutdown). */
static void shutdown_partition(zkb *z, const char *name, int32_t p, int32_t id)
{
	for (int attempt = 0; attempt < MAX_TRIES && z->ctrl.active; attempt++) {
		ctl_topic *t = zkb_view_topic(z, name);
		if (!t || p >= t->npartitions)
			return;
		ctl_partition *cp = &t->partitions[p];
		if (cp->nreplicas <= 1 || !contains(cp->replicas, cp->nreplicas, id) ||
		    cp->partition_epoch == ZKB_NO_STATE || cp->leader_epoch < 0)
			return;
		int32_t *isr = malloc((size_t)(cp->nisr + 1) * sizeof(*isr));
		if (!isr)
			return;
		int32_t leader = cp->leader, nisr = 0;
		if (cp->leader == id) {
			/* controlled-shutdown election: the first replica live, in
			 * the ISR and not shutting down; ISR minus the shutting */
			leader = -1;
			for (int32_t i = 0; i < cp->nreplicas && leader < 0; i++)
				if (contains(cp->isr, cp->nisr, cp->replicas[i]) &&
				    eligible(z, cp->replicas[i]))
					leader = cp->replicas[i];
			if (leader < 0) {
				free(isr);
				return; /* stays: it is counted as remaining */
			}
			for (int32_t i = 0; i < cp->nisr; i++)
				if (!is_shutting(z, cp->isr[i]))
					isr[nisr++] = cp->isr[i];
		} else {
			for (int32_t i = 0; i < cp->nisr; i++)
				if (cp->isr[i] != id)
					isr[nisr++] = cp->isr[i];
			if (nisr == cp->nisr || nisr == 0) {
				free(isr); /* not in it, or its last member */
				return;
			}
		}
		int rc = write_state(z, t, p, leader, cp->leader_epoch + 1, isr, nisr);
		free(isr);
		if (rc != CTL_ZK_BADVERSION)
			return;
		if (zkb_view_refresh_state(z, name, p) != CTL_ZK_OK)
			return;
	}
}

int16_t zkb_ctrl_controlled_shutdown(zkb *z, int32_t broker_id, int64_t broker_epoch,
				     int32_t *remaining)
{
	*remaining = 0;
	if (!z->ctrl.active)
		return KERR_NOT_CONTROLLER;
	const ctl_broker *b = live_broker(z, broker_id);
	if (!b)
		return KERR_BROKER_NOT_AVAILABLE;
	/* -1: a request version without the epoch (Kafka accepts it) */
	if (broker_epoch != -1 && broker_epoch != b->epoch)
		return KERR_STALE_BROKER_EPOCH;
	if (!is_shutting(z, broker_id)) {
		zkb_shutting *g = realloc(z->ctrl.shutting,
					  (size_t)(z->ctrl.nshutting + 1) * sizeof(*g));
		if (!g)
			return KERR_UNKNOWN_SERVER_ERROR;
		z->ctrl.shutting = g;
		g[z->ctrl.nshutting++] = (zkb_shutting){ broker_id, b->epoch };
	}
	int32_t n = z->meta.ntopics;
	char (*names)[CTL_TOPIC_NAME_MAX + 1] = malloc((size_t)(n > 0 ? n : 1) * sizeof(*names));
	if (!names)
		return KERR_UNKNOWN_SERVER_ERROR;
	for (int32_t i = 0; i < n; i++)
		memcpy(names[i], z->meta.topics[i]->name, sizeof(names[i]));
	for (int32_t i = 0; i < n && z->ctrl.active; i++) {
		ctl_topic *t = zkb_view_topic(z, names[i]);
		int32_t np = t ? t->npartitions : 0;
		for (int32_t p = 0; p < np && z->ctrl.active; p++)
			shutdown_partition(z, names[i], p, broker_id);
	}
	free(names);
	if (!z->ctrl.active)
		return KERR_NOT_CONTROLLER;
	/* What it still leads among replicated partitions (Kafka counts
	 * those: a single replica cannot move). */
	for (int32_t i = 0; i < z->meta.ntopics; i++) {
		const ctl_topic *t = z->meta.topics[i];
		for (int32_t p = 0; p < t->npartitions; p++)
			if (t->partitions[p].leader == broker_id && t->partitions[p].nreplicas > 1)
				(*remaining)++;
	}
	return KERR_NONE;
}

/* ---- for zk_reassign.c and zk_elect.c ---- */

bool zkb_ctrl_online(const zkb *z, int32_t id)
{
	return eligible(z, id);
}

int zkb_ctrl_write_state(zkb *z, ctl_topic *t, int32_t p, int32_t leader, int32_t leader_epoch,
			 const int32_t *isr, int32_t nisr)
{
	return write_state(z, t, p, leader, leader_epoch, isr, nisr);
}

int zkb_ctrl_fenced_multi(zkb *z, ctl_zk_op *ops, int n, int *failed)
{
	return fenced_multi(z, ops, n, failed);
}
