/*
 * zk_elect.c - the elections the controller of Kafka's ZooKeeper mode runs
 * on request or on its own schedule (zk_backend.h; CLUSTER.md 2.4, 2.7),
 * beside those of zk_controller.c (new partitions, failures, controlled
 * shutdown):
 *
 *   one partition    preferred or unclean, as Kafka's KafkaController.
 *                    processReplicaLeaderElection decides it for one
 *                    partition (ElectLeaders, CTL_OP_ELECT_LEADER);
 *   the znode        /admin/preferred_replica_election, as Kafka 2.x's
 *                    kafka-preferred-replica-election.sh writes it: watched
 *                    (existence) by the controller, a preferred election of
 *                    every partition it names, then deleted (fenced), even
 *                    when an election failed or the data does not parse;
 *   the rebalance    auto.leader.rebalance.enable: 5 s after a controller
 *                    takes office, then every
 *                    leader.imbalance.check.interval.seconds, a preferred
 *                    election of the partitions ctl_rebalance_pick chooses
 *                    (elect.h; Kafka's checkAndTriggerAutoLeaderRebalance),
 *                    none while a partition is being reassigned (zk_reassign.c).
 *
 * An election writes the partition's state with leader epoch + 1 and this
 * controller's epoch, conditional on the version last read and fenced by
 * /controller_epoch (zkb_ctrl_write_state); on BADVERSION (the leader
 * changed the ISR meanwhile) the state is read again and the rules applied
 * again. A preferred election keeps the ISR; an unclean one is Kafka's
 * offline strategy with unclean allowed (the ISR's first online member in
 * assignment order if there is one, else the first online replica, alone
 * in the ISR: records it had not replicated are lost, as Kafka documents).
 *
 * Everything runs on the controller thread.
 */
#include "controller/zk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/elect.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

#define PREFERRED_PATH "/admin/preferred_replica_election"
/* Tries of one partition's write against moving versions. */
#define MAX_TRIES 8
/* The first rebalance check after a controller takes office (Kafka's 5 s). */
#define FIRST_CHECK_MS 5000
/* The largest /admin/preferred_replica_election read (ZooKeeper's own
 * jute.maxbuffer default is 1 MiB). */
#define ZNODE_ARENA (16u << 20)

static bool online(const void *arg, int32_t id)
{
	return zkb_ctrl_online(arg, id);
}

static void set_msg(char *msg, size_t cap, const char *fmt, const char *topic, int32_t p)
{
	if (msg && cap)
		snprintf(msg, cap, fmt, topic, (int)p);
}

/* Whether topic is marked for deletion (/admin/delete_topics/<t>). */
static int being_deleted(zkb *z, const char *topic, bool *yes)
{
	char path[ZKB_PATH_MAX + 32];
	snprintf(path, sizeof(path), "/admin/delete_topics/%s", topic);
	int rc = ctl_zk_exists(z->zk, path, false, NULL);
	*yes = rc == CTL_ZK_OK;
	return rc == CTL_ZK_NONODE ? CTL_ZK_OK : rc;
}

int16_t zkb_elect_partition(zkb *z, const char *topic, int32_t p, int8_t type, char *msg,
			    size_t cap)
{
	if (msg && cap)
		msg[0] = '\0';
	if (type != CTL_ELECTION_PREFERRED && type != CTL_ELECTION_UNCLEAN) {
		if (msg && cap)
			snprintf(msg, cap, "Unknown election type %d", (int)type);
		return KERR_INVALID_REQUEST;
	}
	if (!z->ctrl.active)
		return KERR_NOT_CONTROLLER;
	ctl_topic *t = zkb_view_topic(z, topic);
	if (!t || p < 0 || p >= t->npartitions) {
		set_msg(msg, cap, "The partition does not exist.", topic, p);
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	bool deleting;
	int rc = being_deleted(z, topic, &deleting);
	if (rc != CTL_ZK_OK)
		return zkb_kafka_error(rc);
	if (deleting) {
		set_msg(msg, cap, "The topic is being deleted", topic, p);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	const char *strategy = type == CTL_ELECTION_PREFERRED
				       ? "PreferredReplicaPartitionLeaderElectionStrategy"
				       : "OfflinePartitionLeaderElectionStrategy(true)";
	int16_t no_leader = type == CTL_ELECTION_PREFERRED ? KERR_PREFERRED_LEADER_NOT_AVAILABLE
							   : KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
	for (int attempt = 0; attempt < MAX_TRIES; attempt++) {
		t = zkb_view_topic(z, topic);
		if (!t || p >= t->npartitions) {
			set_msg(msg, cap, "The partition does not exist.", topic, p);
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		ctl_partition *cp = &t->partitions[p];
		if (cp->partition_epoch == ZKB_NO_STATE || cp->leader_epoch < 0 || cp->nreplicas <= 0) {
			set_msg(msg, cap, "LeaderAndIsr information doesn't exist for partition %s-%d",
				topic, p);
			return no_leader;
		}
		/* Kafka's "already valid leader": the preferred replica leads,
		 * or (unclean) an online broker does */
		if (type == CTL_ELECTION_PREFERRED ? cp->leader == cp->replicas[0]
						   : cp->leader >= 0 && online(z, cp->leader)) {
			if (msg && cap)
				snprintf(msg, cap, "Leader election not needed for topic partition.");
			return KERR_ELECTION_NOT_NEEDED;
		}
		int32_t *isr = malloc((size_t)(cp->nisr + 1) * sizeof(*isr));
		if (!isr)
			return KERR_UNKNOWN_SERVER_ERROR;
		int32_t leader, nisr = 0;
		bool unclean = false;
		if (type == CTL_ELECTION_PREFERRED) {
			leader = ctl_elect_preferred(cp, online, z);
			nisr = cp->nisr;
			memcpy(isr, cp->isr, (size_t)nisr * sizeof(*isr));
		} else {
			leader = ctl_elect_offline(cp, true, online, z, isr, &nisr, &unclean);
		}
		if (leader == CTL_NO_LEADER) {
			free(isr);
			char fmt[160];
			snprintf(fmt, sizeof(fmt), "Failed to elect leader for partition %%s-%%d under "
				 "strategy %s", strategy);
			set_msg(msg, cap, fmt, topic, p);
			return no_leader;
		}
		int32_t was = cp->leader, epoch = cp->leader_epoch + 1;
		rc = zkb_ctrl_write_state(z, t, p, leader, epoch, isr, nisr);
		free(isr);
		if (rc == CTL_ZK_OK) {
			fprintf(stderr, "samsa: controller: %s election of %s-%d: leader %d (was %d), "
				"leader epoch %d%s\n",
				type == CTL_ELECTION_PREFERRED ? "preferred" : "unclean", topic, (int)p,
				(int)leader, (int)was, (int)epoch,
				unclean ? " (out of sync: what only the ISR had is lost)" : "");
			return KERR_NONE;
		}
		if (rc == ZKB_FENCED)
			return KERR_NOT_CONTROLLER;
		if (rc == CTL_ZK_BADVERSION) {
			/* the leader changed the ISR meanwhile: read, decide again */
			rc = zkb_view_refresh_state(z, topic, p);
			if (rc != CTL_ZK_OK)
				return zkb_kafka_error(rc);
			continue;
		}
		if (rc == CTL_ZK_NONODE) {
			zkb_view_refresh_topic(z, topic, ZKB_READ_NEW); /* going away */
			set_msg(msg, cap, "The partition does not exist.", topic, p);
			return KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		return zkb_kafka_error(rc);
	}
	set_msg(msg, cap, "The state of %s-%d kept changing; try again", topic, p);
	return KERR_REQUEST_TIMED_OUT;
}

/* ---- /admin/preferred_replica_election ---- */

static int cmp_tp(const void *a, const void *b)
{
	const ctl_zkj_topic_partition *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

void zkb_elect_process_znode(zkb *z)
{
	if (!z->ctrl.active)
		return;
	/* an existence watch: it fires on creation, change and deletion */
	ctl_zk_stat st;
	int rc = ctl_zk_exists(z->zk, PREFERRED_PATH, true, &st);
	if (rc == CTL_ZK_NONODE)
		return;
	char *data = NULL;
	int len = 0;
	if (rc == CTL_ZK_OK)
		rc = ctl_zk_get(z->zk, PREFERRED_PATH, false, &data, &len, &st);
	if (rc == CTL_ZK_NONODE)
		return;
	if (rc != CTL_ZK_OK) {
		if (zkb_transient(rc)) {
			z->ctrl.retry = true;
			zkb_retry_in(z, 1000);
		}
		return;
	}
	proto_arena a;
	proto_arena_init(&a, ZNODE_ARENA);
	ctl_zkj_topic_partition *tp = NULL;
	int32_t n = 0;
	if (ctl_zkj_preferred_election_decode(data, len, &a, &tp, &n) != 0) {
		fprintf(stderr, "samsa: controller: %s does not parse: deleted without an election\n",
			PREFERRED_PATH);
		n = 0;
	}
	free(data);
	if (n > 1)
		qsort(tp, (size_t)n, sizeof(*tp), cmp_tp);
	int32_t elected = 0, not_needed = 0, failed = 0;
	for (int32_t i = 0; i < n && z->ctrl.active; i++) {
		if (i > 0 && cmp_tp(&tp[i - 1], &tp[i]) == 0)
			continue; /* named twice */
		char msg[256];
		int16_t err = zkb_elect_partition(z, tp[i].topic, tp[i].partition,
						  CTL_ELECTION_PREFERRED, msg, sizeof(msg));
		if (err == KERR_NONE) {
			elected++;
		} else if (err == KERR_ELECTION_NOT_NEEDED) {
			not_needed++;
		} else {
			failed++;
			fprintf(stderr, "samsa: controller: preferred election of %.249s-%d asked by %s: "
				"%s%s%s\n", tp[i].topic, (int)tp[i].partition, PREFERRED_PATH,
				proto_err_name(err), msg[0] ? ": " : "", msg);
		}
	}
	proto_arena_free(&a);
	if (!z->ctrl.active)
		return;
	fprintf(stderr, "samsa: controller: %s: %d elected, %d already led by their preferred "
		"replica, %d failed\n", PREFERRED_PATH, (int)elected, (int)not_needed, (int)failed);
	/* done (Kafka deletes it whatever the outcome); its deletion fires
	 * the watch, whose read arms it again */
	ctl_zk_op op = ctl_zk_op_delete(PREFERRED_PATH, CTL_ZK_ANY_VERSION);
	int where;
	rc = zkb_ctrl_fenced_multi(z, &op, 1, &where);
	if (rc != CTL_ZK_OK && rc != CTL_ZK_NONODE && rc != ZKB_FENCED && !zkb_transient(rc))
		fprintf(stderr, "samsa: controller: cannot delete %s: %s\n", PREFERRED_PATH,
			ctl_zk_strerror(rc));
}

/* ---- the automatic rebalance ---- */

void zkb_elect_failover(zkb *z)
{
	zkb_elect_process_znode(z);
	if (z->ctrl.active && z->auto_rebalance)
		zkb_rebalance_in(z, FIRST_CHECK_MS);
}

void zkb_elect_rebalance(zkb *z)
{
	if (!z->ctrl.active || !z->auto_rebalance)
		return;
	/* Kafka rebalances only while no partition is being reassigned */
	for (int32_t i = 0; i < z->meta.ntopics; i++)
		if (zkb_reasn_topic_busy(z->meta.topics[i])) {
			zkb_rebalance_in(z, z->imbalance_check_ms);
			return;
		}
	ctl_partition_ref *refs;
	int32_t n = ctl_rebalance_pick(z->meta.topics, z->meta.ntopics, z->imbalance_pct, online, z,
				       &refs);
	/* names first: the view's topics may move while writing */
	struct pick {
		char topic[CTL_TOPIC_NAME_MAX + 1];
		int32_t partition;
	} *picks = n > 0 ? malloc((size_t)n * sizeof(*picks)) : NULL;
	if (n > 0 && picks) {
		for (int32_t i = 0; i < n; i++) {
			memcpy(picks[i].topic, z->meta.topics[refs[i].topic]->name,
			       sizeof(picks[i].topic));
			picks[i].partition = refs[i].partition;
		}
		fprintf(stderr, "samsa: controller: leader imbalance above %d%%: preferred election "
			"of %d partition(s)\n", (int)z->imbalance_pct, (int)n);
	}
	free(refs);
	for (int32_t i = 0; picks && i < n && z->ctrl.active; i++) {
		char msg[256];
		int16_t err = zkb_elect_partition(z, picks[i].topic, picks[i].partition,
						  CTL_ELECTION_PREFERRED, msg, sizeof(msg));
		if (err != KERR_NONE && err != KERR_ELECTION_NOT_NEEDED)
			fprintf(stderr, "samsa: controller: preferred election of %s-%d: %s%s%s\n",
				picks[i].topic, (int)picks[i].partition, proto_err_name(err),
				msg[0] ? ": " : "", msg);
	}
	free(picks);
	if (z->ctrl.active)
		zkb_rebalance_in(z, z->imbalance_check_ms);
}
