/*
 * zk_reassign.c - partition reassignment in the ZooKeeper controller
 * (zk_backend.h; CLUSTER.md 2.8, KIP-455; Kafka's ZooKeeper-mode
 * KafkaController.onPartitionReassignment), with its triggers: the
 * AlterPartitionReassignments operation and /admin/reassign_partitions,
 * the znode of Kafka's ZooKeeper-mode kafka-reassign-partitions.sh.
 *
 * The steps of one partition, RS/ORS/TRS/AR/RR as in reassign.h:
 *  U+A  start: the topic znode gets RS = TRS ++ (ORS - TRS) with AR and RR
 *       (adding_replicas, removing_replicas), and the partition state a
 *       new leader epoch, so every replica, the new ones too, starts again
 *       from the state it reads (brokers learn both by their watches: a
 *       new replica creates its log and follows; CLUSTER.md 6.3 S1).
 *       Replicas of a reassignment this one replaces that are in neither
 *       set leave the ISR here (Kafka's U3).
 *  B    complete, once every member of TRS is in the ISR (the state's
 *       watch tells: the leader adds the new replicas as they catch up):
 *       the state gets ISR - RR, a leader from TRS when the leader is not
 *       in it or not live (the first member of TRS that is live, in the
 *       ISR and not shutting down: Kafka's reassign election), a new leader
 *       epoch; the topic znode gets RS = TRS without AR and RR. The removed
 *       replicas' brokers see RS no longer name them and delete their logs
 *       (Kafka's StopReplica with delete).
 * Each step is ONE fenced multi (the controller epoch check, the topic
 * znode at the version just read, the state at the version last read), the
 * topic znode first, so brokers, whose watches fire in that order, see the
 * new replica set before the new epoch. ZooKeeper keeps the topic znode of
 * a reassignment in progress until B: a controller that takes over reads
 * AR/RR there and resumes (a new leader epoch as in A, or B when the ISR
 * is already complete), so nothing is lost between steps.
 *
 * A target whose replicas are all in the ISR already (a new order, fewer
 * replicas), or that does not change the set at all, goes to B at once;
 * a cancellation is B to ORS (the adding replicas leave), as Kafka does.
 * Kafka would cancel even when no original replica is left in the ISR
 * (the partition goes offline); that, and replacing a reassignment whose
 * dropped replicas are the whole ISR, is refused here with
 * INVALID_REPLICA_ASSIGNMENT: it would throw away the only in-sync copies.
 *
 * /admin/reassign_partitions (watched while active, read at failover): each
 * entry starts as an API reassignment would, without the liveness check of
 * the API (Kafka's ZooKeeper path has none: a target broker that is down
 * is waited for); entries that cannot start (unknown partition, a bad
 * list) are dropped, entries whose reassignment completed are removed, and
 * the znode is deleted when empty. An API reassignment of a partition
 * takes its entry out of the znode (the latest request wins).
 */
#include "controller/zk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/reassign.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

#define REASSIGN_PATH "/admin/reassign_partitions"
/* Tries of one step against moving versions. */
#define MAX_TRIES 8
/* A decoded znode never needs more. */
#define ARENA_MAX (64u << 20)

typedef enum step {
	STEP_START,  /* a new target (the API or the znode) */
	STEP_CANCEL, /* back to ORS (the API with no replicas) */
	STEP_RESUME, /* failover: A again, or B when complete */
	STEP_CHECK,  /* B when complete, else nothing */
} step;

/* ---- small helpers ---- */

static bool contains(const int32_t *v, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* Live and not in controlled shutdown (Kafka's liveBrokerIds): the
 * controller's own rule, zkb_ctrl_online. */
static bool eligible(const zkb *z, int32_t id)
{
	return zkb_ctrl_online(z, id);
}

static bool eligible_cb(const void *arg, int32_t id)
{
	return zkb_ctrl_online(arg, id);
}

/* "1,2,3" of v[0..n) into buf. */
static const char *ids_text(const int32_t *v, int32_t n, char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < n && at + 1 < cap; i++) {
		int w = snprintf(buf + at, cap - at, "%s%d", i ? "," : "", (int)v[i]);
		if (w < 0)
			break;
		at += (size_t)w;
	}
	return buf;
}

/* A copy of src's lists into dst (malloc'ed). Returns 0 or -1. */
static int sets_copy(const ctl_reassign_sets *src, ctl_reassign_sets *dst)
{
	memset(dst, 0, sizeof(*dst));
	dst->replicas = malloc((size_t)(src->nreplicas + 1) * sizeof(int32_t));
	dst->adding = malloc((size_t)(src->nadding + 1) * sizeof(int32_t));
	dst->removing = malloc((size_t)(src->nremoving + 1) * sizeof(int32_t));
	if (!dst->replicas || !dst->adding || !dst->removing) {
		ctl_reassign_sets_free(dst);
		return -1;
	}
	if (src->nreplicas > 0)
		memcpy(dst->replicas, src->replicas, (size_t)src->nreplicas * sizeof(int32_t));
	if (src->nadding > 0)
		memcpy(dst->adding, src->adding, (size_t)src->nadding * sizeof(int32_t));
	if (src->nremoving > 0)
		memcpy(dst->removing, src->removing, (size_t)src->nremoving * sizeof(int32_t));
	dst->nreplicas = src->nreplicas;
	dst->nadding = src->nadding;
	dst->nremoving = src->nremoving;
	return 0;
}

static ctl_reassign_sets sets_of(const ctl_partition *cp)
{
	return (ctl_reassign_sets){ cp->replicas, cp->nreplicas, cp->adding, cp->nadding,
				    cp->removing, cp->nremoving };
}

bool zkb_reasn_topic_busy(const ctl_topic *t)
{
	for (int32_t p = 0; p < t->npartitions; p++)
		if (t->partitions[p].nadding > 0 || t->partitions[p].nremoving > 0)
			return true;
	return false;
}

/* ---- /admin/reassign_partitions ---- */

/*
 * Take out of the znode the entries of topic-partition p whose replicas
 * are want[0..nwant) (want NULL: any), and the entry at index drop_at of
 * the version read (-1: none); delete the znode when nothing is left.
 * A fenced read-modify-write, again when the znode moved.
 */
static void node_remove(zkb *z, const char *topic, int32_t p, const int32_t *want, int32_t nwant,
			int32_t drop_at)
{
	for (int attempt = 0; attempt < MAX_TRIES && z->ctrl.active; attempt++) {
		char *data;
		int len;
		ctl_zk_stat st;
		int rc = ctl_zk_get(z->zk, REASSIGN_PATH, false, &data, &len, &st);
		if (rc != CTL_ZK_OK) {
			if (zkb_transient(rc)) {
				z->ctrl.retry = true;
				zkb_retry_in(z, 1000);
			}
			return; /* NONODE: nothing to remove */
		}
		proto_arena a;
		proto_arena_init(&a, ARENA_MAX);
		ctl_zkj_reassignment *v = NULL;
		int32_t n = 0, k = 0;
		bool parsed = ctl_zkj_reassign_decode(data, len, &a, &v, &n) == 0;
		free(data);
		for (int32_t i = 0; parsed && i < n; i++) {
			bool hit = i == drop_at ||
				   (topic && v[i].partition == p && strcmp(v[i].topic, topic) == 0 &&
				    (!want || (v[i].nreplicas == nwant &&
					       memcmp(v[i].replicas, want,
						      (size_t)nwant * sizeof(*want)) == 0)));
			if (!hit)
				v[k++] = v[i];
		}
		if (parsed && k == n) {
			proto_arena_free(&a);
			return; /* not in it */
		}
		char *json = NULL;
		size_t jlen = 0;
		ctl_zk_op op;
		if (parsed && k > 0 && ctl_zkj_reassign_encode(v, k, &json, &jlen) == 0)
			op = ctl_zk_op_set(REASSIGN_PATH, json, (int)jlen, st.version);
		else
			op = ctl_zk_op_delete(REASSIGN_PATH, st.version); /* empty, or unusable */
		int failed;
		rc = zkb_ctrl_fenced_multi(z, &op, 1, &failed);
		free(json);
		proto_arena_free(&a);
		if (rc != CTL_ZK_BADVERSION)
			return; /* done, fenced, gone, or tried again later */
	}
}

/* ---- one step of one partition ---- */

/* What a step writes. */
typedef struct plan {
	bool write_topic;        /* the partition's entry becomes `to` */
	ctl_reassign_sets to;    /* owned */
	bool write_state;        /* leader, isr with leader epoch + 1 */
	int32_t leader;
	int32_t *isr;            /* owned */
	int32_t nisr;
	bool completes;          /* B */
	int32_t *target;         /* TRS of what completes (owned) */
	int32_t ntarget;
} plan;

static void plan_free(plan *pl)
{
	ctl_reassign_sets_free(&pl->to);
	free(pl->isr);
	free(pl->target);
	memset(pl, 0, sizeof(*pl));
}

/* The first of order[0..n) that is eligible and in isr; -1 when none. */
static int32_t elect(const zkb *z, const int32_t *order, int32_t n, const int32_t *isr,
		     int32_t nisr)
{
	for (int32_t i = 0; i < n; i++)
		if (eligible(z, order[i]) && contains(isr, nisr, order[i]))
			return order[i];
	return -1;
}

/* ISR minus every id of drop[0..ndrop) into pl->isr. */
static int filter_isr(plan *pl, const ctl_partition *cp, const int32_t *drop, int32_t ndrop)
{
	pl->isr = malloc((size_t)(cp->nisr + 1) * sizeof(*pl->isr));
	if (!pl->isr)
		return -1;
	pl->nisr = 0;
	for (int32_t i = 0; i < cp->nisr; i++)
		if (!contains(drop, ndrop, cp->isr[i]))
			pl->isr[pl->nisr++] = cp->isr[i];
	return 0;
}

/*
 * Decide what step s does to a partition whose topic znode entry is cur
 * and whose state is cp (has_state: a state that parses). Returns a Kafka
 * error (msg set), with *pl filled when NONE (nothing to write when neither
 * write flag is set).
 */
static int16_t decide(const zkb *z, step s, const ctl_reassign_sets *cur, const ctl_partition *cp,
		      bool has_state, const int32_t *target, int32_t ntarget, plan *pl, char *msg,
		      size_t cap)
{
	memset(pl, 0, sizeof(*pl));
	int32_t room = cur->nreplicas + ntarget + 1;
	int32_t *tmp = malloc((size_t)room * sizeof(*tmp));
	if (!tmp)
		return KERR_UNKNOWN_SERVER_ERROR;
	int16_t err = KERR_NONE;
	int rc = 0;
	if (s == STEP_START) {
		rc = ctl_reassign_to(cur, target, ntarget, &pl->to);
	} else if (s == STEP_CANCEL) {
		if (!ctl_reassign_in_progress(cur)) {
			free(tmp);
			snprintf(msg, cap, "No partition reassignment is in progress.");
			return KERR_NO_REASSIGNMENT_IN_PROGRESS;
		}
		int32_t nors = ctl_reassign_origin(cur, tmp);
		rc = ctl_reassign_to(cur, tmp, nors, &pl->to);
	} else {
		if (!ctl_reassign_in_progress(cur)) {
			free(tmp);
			return KERR_NONE; /* nothing in progress */
		}
		rc = sets_copy(cur, &pl->to);
	}
	if (rc != 0) {
		free(tmp);
		plan_free(pl);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	pl->target = malloc((size_t)(pl->to.nreplicas + 1) * sizeof(int32_t));
	if (!pl->target) {
		free(tmp);
		plan_free(pl);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	pl->ntarget = ctl_reassign_target(&pl->to, pl->target);
	bool complete = !ctl_reassign_in_progress(&pl->to) ||
			(has_state && ctl_reassign_all_in(pl->target, pl->ntarget, cp->isr, cp->nisr));
	if (complete) {
		/* B: RS = TRS; what is in cur or to but not in TRS goes */
		int32_t ndrop = 0;
		for (int32_t i = 0; i < cur->nreplicas; i++)
			if (!contains(pl->target, pl->ntarget, cur->replicas[i]))
				tmp[ndrop++] = cur->replicas[i];
		for (int32_t i = 0; i < pl->to.nreplicas; i++)
			if (!contains(pl->target, pl->ntarget, pl->to.replicas[i]) &&
			    !contains(tmp, ndrop, pl->to.replicas[i]))
				tmp[ndrop++] = pl->to.replicas[i];
		ctl_reassign_sets final = { pl->target, pl->ntarget, NULL, 0, NULL, 0 };
		pl->write_topic = !ctl_reassign_equal(cur, &final);
		if (pl->write_topic) {
			/* pl->to becomes the final sets */
			ctl_reassign_sets_free(&pl->to);
			pl->to.replicas = malloc((size_t)(pl->ntarget + 1) * sizeof(int32_t));
			if (!pl->to.replicas) {
				err = KERR_UNKNOWN_SERVER_ERROR;
				goto out;
			}
			memcpy(pl->to.replicas, pl->target, (size_t)pl->ntarget * sizeof(int32_t));
			pl->to.nreplicas = pl->ntarget;
		}
		pl->completes = true;
		if (has_state) {
			if (filter_isr(pl, cp, tmp, ndrop) != 0) {
				err = KERR_UNKNOWN_SERVER_ERROR;
				goto out;
			}
			if (pl->nisr == 0) {
				snprintf(msg, cap, "None of the replicas %s is in the ISR: they would "
					 "lose the only in-sync copies.",
					 s == STEP_CANCEL ? "of the original assignment" : "kept");
				err = KERR_INVALID_REPLICA_ASSIGNMENT;
				goto out;
			}
			pl->write_state = true;
			pl->leader = cp->leader;
			if (!contains(pl->target, pl->ntarget, cp->leader) || !eligible(z, cp->leader))
				pl->leader = elect(z, pl->target, pl->ntarget, pl->isr, pl->nisr);
		}
	} else if (s == STEP_START) {
		/* U+A: the new sets; replicas of a replaced reassignment that
		 * are in neither set leave the ISR (Kafka's U3) */
		pl->write_topic = !ctl_reassign_equal(cur, &pl->to);
		if (pl->write_topic && has_state) {
			int32_t ndrop = 0;
			for (int32_t i = 0; i < cur->nreplicas; i++)
				if (!contains(pl->to.replicas, pl->to.nreplicas, cur->replicas[i]))
					tmp[ndrop++] = cur->replicas[i];
			if (filter_isr(pl, cp, tmp, ndrop) != 0) {
				err = KERR_UNKNOWN_SERVER_ERROR;
				goto out;
			}
			if (pl->nisr == 0) {
				snprintf(msg, cap, "The replicas this reassignment drops are the whole "
					 "ISR: they hold the only in-sync copies.");
				err = KERR_INVALID_REPLICA_ASSIGNMENT;
				goto out;
			}
			pl->write_state = true;
			pl->leader = cp->leader;
			if (contains(tmp, ndrop, cp->leader))
				pl->leader = elect(z, pl->to.replicas, pl->to.nreplicas, pl->isr, pl->nisr);
		}
	} else if (s == STEP_RESUME && has_state) {
		/* A again: a new leader epoch, so that every replica starts from
		 * the current state */
		if (filter_isr(pl, cp, NULL, 0) != 0) {
			err = KERR_UNKNOWN_SERVER_ERROR;
			goto out;
		}
		pl->write_state = true;
		pl->leader = cp->leader;
	}
out:
	free(tmp);
	if (err)
		plan_free(pl);
	return err;
}

/* The topic znode of name, read fresh (no watch: the view has its own). */
typedef struct topic_read {
	ctl_zkj_topic tj;
	int32_t version;
} topic_read;

static int read_topic(zkb *z, const char *name, proto_arena *a, topic_read *out)
{
	char path[ZKB_PATH_MAX];
	zkb_topic_path(path, name);
	char *data;
	int len;
	ctl_zk_stat st;
	int rc = ctl_zk_get(z->zk, path, false, &data, &len, &st);
	if (rc != CTL_ZK_OK)
		return rc;
	int drc = ctl_zkj_topic_decode(data, len, a, &out->tj);
	free(data);
	out->version = st.version;
	return drc == 0 && out->tj.has_topic_id ? CTL_ZK_OK : CTL_ZK_MARSHALLINGERROR;
}

static void log_step(const zkb *z, const char *name, int32_t p, const plan *pl)
{
	(void)z;
	char a[128], b[128], c[128];
	if (pl->completes)
		fprintf(stderr, "samsa: controller: reassignment of %s-%d done: replicas [%s], "
			"leader %d\n", name, (int)p, ids_text(pl->target, pl->ntarget, a, sizeof(a)),
			(int)(pl->write_state ? pl->leader : -1));
	else if (pl->write_topic)
		fprintf(stderr, "samsa: controller: reassigning %s-%d: replicas [%s], adding [%s], "
			"removing [%s]\n", name, (int)p,
			ids_text(pl->to.replicas, pl->to.nreplicas, a, sizeof(a)),
			ids_text(pl->to.adding, pl->to.nadding, b, sizeof(b)),
			ids_text(pl->to.removing, pl->to.nremoving, c, sizeof(c)));
}

/*
 * Run step s for partition p of topic name (target[0..ntarget) for START).
 * Returns a Kafka error code; msg gets its message.
 */
static int16_t go(zkb *z, const char *name, int32_t p, step s, const int32_t *target,
		  int32_t ntarget, char *msg, size_t cap)
{
	int16_t err = KERR_NONE;
	for (int attempt = 0; attempt < MAX_TRIES; attempt++) {
		if (!z->ctrl.active)
			return KERR_NOT_CONTROLLER;
		ctl_topic *t = zkb_view_topic(z, name);
		if (!t || p < 0 || p >= t->npartitions ||
		    (t->deleting && (s == STEP_START || s == STEP_CANCEL))) {
			snprintf(msg, cap, "The partition does not exist.");
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		proto_arena a;
		proto_arena_init(&a, ARENA_MAX);
		topic_read tr;
		int rc = read_topic(z, name, &a, &tr);
		if (rc != CTL_ZK_OK || p >= tr.tj.npartitions) {
			proto_arena_free(&a);
			if (rc == CTL_ZK_OK || rc == CTL_ZK_NONODE) {
				/* the view is behind: the topic (or partition) is
				 * gone or not there yet */
				zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
				snprintf(msg, cap, "The partition does not exist.");
				return KERR_UNKNOWN_TOPIC_OR_PARTITION;
			}
			if (rc == CTL_ZK_MARSHALLINGERROR) {
				snprintf(msg, cap, "The topic's assignment in ZooKeeper does not parse.");
				return KERR_UNKNOWN_SERVER_ERROR;
			}
			if (zkb_transient(rc)) {
				z->ctrl.retry = true;
				zkb_retry_in(z, 1000);
			}
			snprintf(msg, cap, "ZooKeeper: reading the topic failed: %s",
				 ctl_zk_strerror(rc));
			return zkb_kafka_error(rc);
		}
		ctl_zkj_assignment *as = &tr.tj.partitions[p];
		ctl_reassign_sets cur = { as->replicas, as->nreplicas, as->adding, as->nadding,
					  as->removing, as->nremoving };
		const ctl_partition *cp = &t->partitions[p];
		bool has_state = cp->partition_epoch != ZKB_NO_STATE && cp->leader_epoch >= 0;
		plan pl;
		err = decide(z, s, &cur, cp, has_state, target, ntarget, &pl, msg, cap);
		if (err || (!pl.write_topic && !pl.write_state)) {
			bool completes = !err && pl.completes;
			int32_t *tgt = pl.target, ntgt = pl.ntarget;
			pl.target = NULL;
			plan_free(&pl);
			proto_arena_free(&a);
			if (completes) /* nothing to write: clean the znode still */
				node_remove(z, name, p, tgt, ntgt, -1);
			free(tgt);
			return err;
		}
		ctl_zk_op ops[2];
		int n = 0;
		char tpath[ZKB_PATH_MAX], spath[ZKB_PATH_MAX];
		char *tjson = NULL, *sjson = NULL;
		size_t tlen = 0, slen = 0;
		int topic_op = -1, state_op = -1;
		if (pl.write_topic) {
			as->replicas = pl.to.replicas;
			as->nreplicas = pl.to.nreplicas;
			as->adding = pl.to.adding;
			as->nadding = pl.to.nadding;
			as->removing = pl.to.removing;
			as->nremoving = pl.to.nremoving;
			tr.tj.version = 3;
			if (ctl_zkj_topic_encode(&tr.tj, &tjson, &tlen) != 0)
				rc = CTL_ZK_SYSTEMERROR;
			zkb_topic_path(tpath, name);
			topic_op = n;
			ops[n++] = ctl_zk_op_set(tpath, tjson, (int)tlen, tr.version);
		}
		int32_t new_epoch = cp->leader_epoch + 1;
		if (rc == CTL_ZK_OK && pl.write_state) {
			if (zkb_state_encode(z->ctrl.epoch, pl.leader, new_epoch, pl.isr, pl.nisr, &sjson,
					     &slen) != 0)
				rc = CTL_ZK_SYSTEMERROR;
			zkb_state_path(spath, name, p);
			state_op = n;
			ops[n++] = ctl_zk_op_set(spath, sjson, (int)slen, cp->partition_epoch);
		}
		int failed = -1;
		if (rc == CTL_ZK_OK)
			rc = zkb_ctrl_fenced_multi(z, ops, n, &failed);
		int32_t state_version = state_op >= 0 ? ops[state_op].stat.version : 0;
		free(tjson);
		free(sjson);
		proto_arena_free(&a);
		if (rc == CTL_ZK_OK) {
			log_step(z, name, p, &pl);
			/* the new assignment first, then the new state (the order
			 * the brokers see them in) */
			if (pl.write_topic)
				zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
			t = zkb_view_topic(z, name);
			if (pl.write_state && t && p < t->npartitions)
				zkb_view_set_state(z, t, p, pl.leader, new_epoch, pl.isr, pl.nisr,
						   z->ctrl.epoch, state_version);
			bool completes = pl.completes;
			int32_t *tgt = pl.target, ntgt = pl.ntarget;
			pl.target = NULL;
			plan_free(&pl);
			if (completes)
				node_remove(z, name, p, tgt, ntgt, -1);
			free(tgt);
			t = zkb_view_topic(z, name);
			if (completes && t && t->deleting && !zkb_reasn_topic_busy(t))
				zkb_ctrl_process_deletions(z); /* it waited for this */
			return KERR_NONE;
		}
		plan_free(&pl);
		if (rc == ZKB_FENCED)
			return KERR_NOT_CONTROLLER;
		if (rc == CTL_ZK_BADVERSION && failed == state_op) {
			/* a leader's ISR change meanwhile: read it, decide again */
			if (zkb_view_refresh_state(z, name, p) != CTL_ZK_OK)
				break;
			continue;
		}
		if (rc == CTL_ZK_BADVERSION && failed == topic_op)
			continue; /* the topic znode moved: read it again */
		if (rc == CTL_ZK_NONODE) {
			zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
			snprintf(msg, cap, "The partition does not exist.");
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		snprintf(msg, cap, "ZooKeeper: writing the reassignment failed: %s",
			 ctl_zk_strerror(rc));
		return zkb_kafka_error(rc);
	}
	snprintf(msg, cap, "The partition kept changing while it was reassigned.");
	return KERR_REQUEST_TIMED_OUT;
}

/* ---- entry points ---- */

int16_t zkb_reasn_alter(zkb *z, const ctl_op *op, ctl_result *r)
{
	if (!z->ctrl.active)
		return KERR_NOT_CONTROLLER;
	const char *name = op->topic;
	int32_t p = op->partition;
	const ctl_topic *t = ctl_validate_topic_name(name, (int32_t)strnlen(name,
									   CTL_TOPIC_NAME_MAX + 1)) == 0
				     ? zkb_view_topic(z, name)
				     : NULL;
	const ctl_partition *cp = t && p >= 0 && p < t->npartitions ? &t->partitions[p] : NULL;
	ctl_reassign_sets cur = cp ? sets_of(cp) : (ctl_reassign_sets){ 0 };
	const ctl_replica_list *target = op->assignments && op->nassignments > 0 ? op->assignments
										   : NULL;
	if (target) {
		int16_t err = ctl_reassign_validate(target->ids, target->n, cp ? &cur : NULL,
						    eligible_cb, z, r->msg, sizeof(r->msg));
		if (err)
			return err;
	} else if (!cp || !ctl_reassign_in_progress(&cur)) {
		snprintf(r->msg, sizeof(r->msg), "No partition reassignment is in progress.");
		return KERR_NO_REASSIGNMENT_IN_PROGRESS;
	}
	if (!cp || t->deleting) {
		/* Kafka: a topic queued for deletion takes no reassignment */
		snprintf(r->msg, sizeof(r->msg), "The partition does not exist.");
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (target && op->no_rf_change) {
		int32_t *ors = malloc((size_t)(cur.nreplicas + 1) * sizeof(*ors));
		if (!ors)
			return KERR_UNKNOWN_SERVER_ERROR;
		int32_t nors = ctl_reassign_origin(&cur, ors);
		free(ors);
		if (nors != target->n) {
			snprintf(r->msg, sizeof(r->msg), "The replication factor would change from %d "
				 "to %d, and AllowReplicationFactorChange is false.", (int)nors,
				 (int)target->n);
			return KERR_INVALID_REPLICATION_FACTOR;
		}
	}
	char topic[CTL_TOPIC_NAME_MAX + 1];
	snprintf(topic, sizeof(topic), "%s", name);
	/* the latest request wins over the znode's entry (Kafka) */
	node_remove(z, topic, p, NULL, 0, -1);
	return go(z, topic, p, target ? STEP_START : STEP_CANCEL, target ? target->ids : NULL,
		  target ? target->n : 0, r->msg, sizeof(r->msg));
}

int16_t zkb_reasn_list(zkb *z)
{
	return z->ctrl.active ? KERR_NONE : KERR_NOT_CONTROLLER;
}

void zkb_reasn_check(zkb *z, const char *topic, int32_t p)
{
	const ctl_topic *t = zkb_view_topic(z, topic);
	if (!z->ctrl.active || !t || p < 0 || p >= t->npartitions ||
	    (t->partitions[p].nadding == 0 && t->partitions[p].nremoving == 0))
		return;
	char copy[CTL_TOPIC_NAME_MAX + 1];
	snprintf(copy, sizeof(copy), "%s", topic);
	char msg[256];
	go(z, copy, p, STEP_CHECK, NULL, 0, msg, sizeof(msg));
}

/* Step s for every partition in progress of topic name. */
static void topic_step(zkb *z, const char *name, step s)
{
	char copy[CTL_TOPIC_NAME_MAX + 1];
	snprintf(copy, sizeof(copy), "%s", name);
	const ctl_topic *t = zkb_view_topic(z, copy);
	int32_t n = t ? t->npartitions : 0;
	for (int32_t p = 0; p < n && z->ctrl.active; p++) {
		t = zkb_view_topic(z, copy);
		if (!t || p >= t->npartitions)
			return;
		if (t->partitions[p].nadding == 0 && t->partitions[p].nremoving == 0)
			continue;
		char msg[256];
		int16_t err = go(z, copy, p, s, NULL, 0, msg, sizeof(msg));
		if (err && err != KERR_NOT_CONTROLLER && err != KERR_REQUEST_TIMED_OUT)
			fprintf(stderr, "samsa: controller: reassignment of %s-%d: %s\n", copy,
				(int)p, msg);
	}
}

void zkb_reasn_check_topic(zkb *z, const char *topic)
{
	if (z->ctrl.active)
		topic_step(z, topic, STEP_CHECK);
}

/* Step s for every topic with a partition in progress. */
static void all_step(zkb *z, step s)
{
	int32_t n = z->meta.ntopics;
	char (*names)[CTL_TOPIC_NAME_MAX + 1] = malloc((size_t)(n > 0 ? n : 1) * sizeof(*names));
	if (!names)
		return;
	int32_t k = 0;
	for (int32_t i = 0; i < n; i++)
		if (zkb_reasn_topic_busy(z->meta.topics[i]))
			memcpy(names[k++], z->meta.topics[i]->name, sizeof(names[0]));
	for (int32_t i = 0; i < k && z->ctrl.active; i++)
		topic_step(z, names[i], s);
	free(names);
}

void zkb_reasn_process_node(zkb *z)
{
	if (!z->ctrl.active)
		return;
	char *data = NULL;
	int len = 0, rc = CTL_ZK_OK;
	for (int attempt = 0; attempt < 3; attempt++) {
		rc = ctl_zk_get(z->zk, REASSIGN_PATH, true, &data, &len, NULL);
		if (rc != CTL_ZK_NONODE)
			break;
		/* absent: watch for its creation */
		rc = ctl_zk_exists(z->zk, REASSIGN_PATH, true, NULL);
		if (rc == CTL_ZK_NONODE)
			return;
		if (rc != CTL_ZK_OK)
			break;
		/* created meanwhile: read it */
	}
	if (rc != CTL_ZK_OK) {
		if (zkb_transient(rc)) {
			z->ctrl.retry = true;
			zkb_retry_in(z, 1000);
		}
		return;
	}
	proto_arena a;
	proto_arena_init(&a, ARENA_MAX);
	ctl_zkj_reassignment *v;
	int32_t n;
	if (ctl_zkj_reassign_decode(data, len, &a, &v, &n) != 0) {
		fprintf(stderr, "samsa: controller: %s does not parse: deleting it\n", REASSIGN_PATH);
		free(data);
		proto_arena_free(&a);
		node_remove(z, NULL, -1, NULL, 0, -1);
		return;
	}
	free(data);
	for (int32_t i = 0; i < n && z->ctrl.active; i++) {
		char msg[640] = "";
		int16_t err = KERR_NONE;
		const ctl_zkj_reassignment *e = &v[i];
		if (ctl_validate_topic_name(e->topic, (int32_t)strlen(e->topic)) != 0) {
			snprintf(msg, sizeof(msg), "not a topic name");
			err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		} else if (e->nreplicas < 1) {
			snprintf(msg, sizeof(msg), "an empty replica list");
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		for (int32_t k = 0; !err && k < e->nreplicas; k++)
			if (e->replicas[k] < 0 || contains(e->replicas, k, e->replicas[k])) {
				snprintf(msg, sizeof(msg), "a negative or repeated broker id");
				err = KERR_INVALID_REPLICA_ASSIGNMENT;
			}
		if (!err)
			err = go(z, e->topic, e->partition, STEP_START, e->replicas, e->nreplicas, msg,
				 sizeof(msg));
		if (err == KERR_NOT_CONTROLLER)
			break;
		if (err == KERR_REQUEST_TIMED_OUT)
			continue; /* ZooKeeper away: the retry reads the znode again */
		if (err) {
			char ids[128];
			fprintf(stderr, "samsa: controller: dropping %s-%d [%s] from %s: %s\n",
				e->topic, (int)e->partition,
				ids_text(e->replicas, e->nreplicas, ids, sizeof(ids)), REASSIGN_PATH, msg);
			node_remove(z, e->topic, e->partition, e->replicas, e->nreplicas, -1);
		}
	}
	proto_arena_free(&a);
}

void zkb_reasn_check_all(zkb *z)
{
	if (!z->ctrl.active)
		return;
	all_step(z, STEP_CHECK);
	zkb_reasn_process_node(z);
}

void zkb_reasn_resume(zkb *z)
{
	if (!z->ctrl.active)
		return;
	all_step(z, STEP_RESUME);
	zkb_reasn_process_node(z);
}
