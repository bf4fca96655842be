/*
 * zk_ops.c - the operations of ctl.h that any broker runs against
 * ZooKeeper (zk_backend.h), as ZooKeeper-mode Kafka's AdminZkClient and
 * KafkaZkClient write them:
 *
 *   CREATE_TOPIC       /config/topics/<t> first, then /brokers/topics/<t>
 *                      (v3, with the topic id); the controller's watch
 *                      makes the partition states (CLUSTER.md 1.3, 2.9)
 *   DELETE_TOPIC       the marker /admin/delete_topics/<t> (the topic is
 *                      gone for the brokers from then on; the controller
 *                      deletes its znodes once every replica's broker is
 *                      registered)
 *   CREATE_PARTITIONS  /brokers/topics/<t> rewritten with the new
 *                      partitions, conditional on its version
 *   SET_*_CONFIGS      the config znode, then a change notice (v2)
 *   PRODUCER_IDS       the next block of /latest_producer_id_block, a set
 *                      conditional on its version (Kafka's
 *                      ZkProducerIdManager)
 *   ALTER_ISR          the leader's own conditional write of the state
 *                      (CLUSTER.md 2.10 path 1, S2)
 *   CONTROLLED_SHUTDOWN on the controller (zk_controller.c)
 *   ALTER_REASSIGNMENT, LIST_REASSIGNMENTS on the controller (zk_reassign.c)
 *   ELECT_LEADER       on the controller (zk_elect.c)
 *
 * What the operation changed is read back into the view before the result
 * is queued, so its events come first. A ZooKeeper failure is
 * REQUEST_TIMED_OUT (connection or session lost: retriable) or
 * UNKNOWN_SERVER_ERROR, and a multi-step write stops at the failing step.
 */
#include "controller/zk_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/assign.h"
#include "controller/zk_json.h"
#include "protocol/err.h"

#define MAX_TRIES 8

static void set_msg(ctl_result *r, const char *msg)
{
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

static int zk_failed(ctl_result *r, const char *what, int zrc)
{
	snprintf(r->msg, sizeof(r->msg), "ZooKeeper: %s failed: %s", what, ctl_zk_strerror(zrc));
	return zkb_kafka_error(zrc);
}

int16_t zkb_op_failed(ctl_result *r, const char *what, int zrc)
{
	return (int16_t)zk_failed(r, what, zrc);
}

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* Kafka's validateManualPartitionAssignment (local.c's messages): ids
 * checked in ascending order, each a live broker and once only, then their
 * number against rf (rf < 0: any). */
static int check_replica_list(const zkb *z, const ctl_replica_list *rl, int32_t rf, ctl_result *r)
{
	if (rl->n <= 0 || !rl->ids) {
		set_msg(r, "The manual partition assignment includes an empty replica list.");
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	int32_t *sorted = malloc((size_t)rl->n * sizeof(*sorted));
	if (!sorted)
		return KERR_UNKNOWN_SERVER_ERROR;
	memcpy(sorted, rl->ids, (size_t)rl->n * sizeof(*sorted));
	qsort(sorted, (size_t)rl->n, sizeof(*sorted), cmp_int32);
	int err = KERR_NONE;
	for (int32_t i = 0; i < rl->n && !err; i++) {
		if (!zkb_view_broker(z, sorted[i])) {
			snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes "
				 "broker %d, but no such broker is registered.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		} else if (i > 0 && sorted[i] == sorted[i - 1]) {
			snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes the "
				 "broker %d more than once.", (int)sorted[i]);
			err = KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	free(sorted);
	if (!err && rf >= 0 && rl->n != rf) {
		snprintf(r->msg, sizeof(r->msg), "The manual partition assignment includes a "
			 "partition with %d replica(s), but this is not consistent with previous "
			 "partitions, which have %d replica(s).", (int)rl->n, (int)rf);
		err = KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	return err;
}

static int rf_unreachable(const zkb *z, int32_t rf, ctl_result *r)
{
	snprintf(r->msg, sizeof(r->msg), "Unable to replicate the partition %d time(s): The "
		 "target replication factor of %d cannot be reached because only %d broker(s) "
		 "are registered.", (int)rf, (int)rf, (int)z->nbrokers);
	return KERR_INVALID_REPLICATION_FACTOR;
}

/* Automatic placement of n partitions from start_partition: rows of rf
 * ids into out. fixed_start < 0: random. */
static int place(const zkb *z, int32_t n, int32_t rf, int32_t fixed_start, int32_t start_partition,
		 int32_t *out)
{
	ctl_assign_broker *b = malloc((size_t)(z->nbrokers > 0 ? z->nbrokers : 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (int32_t i = 0; i < z->nbrokers; i++)
		b[i] = (ctl_assign_broker){ z->brokers[i].id, z->brokers[i].rack };
	int rc = ctl_assign_replicas(b, z->nbrokers, n, rf, fixed_start, start_partition, out);
	free(b);
	return rc;
}

/* Write a config znode (set, or create when absent; Kafka's
 * setOrCreateEntityConfigs). */
static int write_config(zkb *z, const char *path, const ctl_config_entry *configs, int32_t n)
{
	ctl_zkj_config_entry *e = calloc((size_t)(n > 0 ? n : 1), sizeof(*e));
	if (!e)
		return CTL_ZK_SYSTEMERROR;
	for (int32_t i = 0; i < n; i++)
		e[i] = (ctl_zkj_config_entry){ configs[i].name ? configs[i].name : "",
					       configs[i].value ? configs[i].value : "" };
	ctl_zkj_config c = { e, n };
	char *json;
	size_t len;
	int rc = ctl_zkj_config_encode(&c, &json, &len);
	free(e);
	if (rc != 0)
		return CTL_ZK_BADARGUMENTS; /* a name given twice */
	rc = ctl_zk_set(z->zk, path, json, (int)len, CTL_ZK_ANY_VERSION, NULL);
	if (rc == CTL_ZK_NONODE) {
		rc = ctl_zk_create(z->zk, path, json, (int)len, CTL_ZK_PERSISTENT, NULL, 0, NULL);
		if (rc == CTL_ZK_NODEEXISTS)
			rc = ctl_zk_set(z->zk, path, json, (int)len, CTL_ZK_ANY_VERSION, NULL);
	}
	free(json);
	return rc;
}

/* A config change notice for entity_type/entity_name (v2). */
int zkb_write_notice(zkb *z, const char *type, const char *name)
{
	char *json;
	size_t len;
	if (ctl_zkj_config_change_encode(type, name, &json, &len) != 0)
		return CTL_ZK_SYSTEMERROR;
	int rc = ctl_zk_create(z->zk, "/config/changes/config_change_", json, (int)len,
			       CTL_ZK_PERSISTENT_SEQUENTIAL, NULL, 0, NULL);
	free(json);
	return rc;
}

/* The topic znode of t's assignment (v3). rows: npartitions rows of the
 * replica lists. */
static int topic_json(const uint8_t id[16], int32_t *const *rows, const int32_t *nrows,
		      int32_t npartitions, char **out, size_t *len)
{
	ctl_zkj_assignment *as = calloc((size_t)npartitions, sizeof(*as));
	if (!as)
		return -ENOMEM;
	for (int32_t p = 0; p < npartitions; p++) {
		as[p].replicas = rows[p];
		as[p].nreplicas = nrows[p];
	}
	ctl_zkj_topic t = { .version = 3, .has_topic_id = true, .partitions = as,
			    .npartitions = npartitions };
	memcpy(t.topic_id, id, 16);
	int rc = ctl_zkj_topic_encode(&t, out, len);
	free(as);
	return rc;
}

/* ---- CREATE_TOPIC ---- */

static int create_topic(zkb *z, const ctl_op *op, ctl_result *r)
{
	const char *name = op->topic;
	int32_t len = (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1);
	if (ctl_validate_topic_name(name, len))
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (zkb_view_marked(z, name)) {
		/* Kafka's AdminZkClient.validateTopicCreate */
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' is marked for deletion.", name);
		return KERR_TOPIC_ALREADY_EXISTS;
	}
	if (zkb_view_topic(z, name)) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' already exists.", name);
		return KERR_TOPIC_ALREADY_EXISTS;
	}
	const ctl_topic *other = ctl_meta_find_colliding(&z->meta, name);
	if (other) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' collides with existing topic: %s", name,
			 other->name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	int32_t partitions = op->assignments ? op->nassignments : op->partitions;
	int32_t rf = op->replication_factor;
	if (op->assignments) {
		rf = op->nassignments > 0 ? op->assignments[0].n : 0;
		for (int32_t i = 0; i < op->nassignments; i++) {
			int err = check_replica_list(z, &op->assignments[i], rf, r);
			if (err)
				return err;
		}
	}
	if (partitions < 1 || partitions > CTL_MAX_PARTITIONS)
		return KERR_INVALID_PARTITIONS;
	if (rf < 1 || rf > z->nbrokers)
		return rf_unreachable(z, rf, r);
	if (op->validate_only)
		return KERR_NONE;

	char tpath[ZKB_PATH_MAX], cpath[ZKB_PATH_MAX];
	zkb_topic_path(tpath, name);
	zkb_topic_config_path(cpath, name);
	/* Not in the view yet (a watch in flight)? ZooKeeper says. Checked
	 * before the config is written, so an existing topic's stays. */
	int rc = ctl_zk_exists(z->zk, tpath, false, NULL);
	if (rc == CTL_ZK_OK) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' already exists.", name);
		return KERR_TOPIC_ALREADY_EXISTS;
	}
	if (rc != CTL_ZK_NONODE)
		return zk_failed(r, "reading the topic", rc);

	int32_t *cells = malloc((size_t)partitions * (size_t)rf * sizeof(*cells));
	int32_t **rows = malloc((size_t)partitions * sizeof(*rows));
	int32_t *nrows = malloc((size_t)partitions * sizeof(*nrows));
	int err = KERR_NONE;
	if (!cells || !rows || !nrows) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	for (int32_t p = 0; p < partitions; p++) {
		rows[p] = &cells[(size_t)p * (size_t)rf];
		nrows[p] = rf;
		if (op->assignments)
			memcpy(rows[p], op->assignments[p].ids, (size_t)rf * sizeof(int32_t));
	}
	if (!op->assignments && place(z, partitions, rf, -1, 0, cells) != 0) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	static const uint8_t zero[16];
	uint8_t id[16];
	if (memcmp(op->topic_id, zero, 16) != 0) {
		if (ctl_meta_find_by_id(&z->meta, op->topic_id)) {
			err = KERR_INVALID_REQUEST; /* an id already taken */
			goto out;
		}
		memcpy(id, op->topic_id, 16);
	} else if (ctl_random_uuid(id) != 0) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	char *json;
	size_t jlen;
	if (topic_json(id, rows, nrows, partitions, &json, &jlen) != 0) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	rc = write_config(z, cpath, op->configs, op->nconfigs);
	if (rc == CTL_ZK_BADARGUMENTS) {
		free(json);
		set_msg(r, "A config is given more than once.");
		err = KERR_INVALID_CONFIG;
		goto out;
	}
	if (rc == CTL_ZK_OK)
		rc = ctl_zk_create(z->zk, tpath, json, (int)jlen, CTL_ZK_PERSISTENT, NULL, 0, NULL);
	free(json);
	if (rc == CTL_ZK_NODEEXISTS) {
		snprintf(r->msg, sizeof(r->msg), "Topic '%s' already exists.", name);
		err = KERR_TOPIC_ALREADY_EXISTS;
		goto out;
	}
	if (rc != CTL_ZK_OK) {
		err = zk_failed(r, "writing the topic", rc);
		goto out;
	}
	memcpy(r->topic_id, id, 16);
	/* The topic's event (and, on the controller, its states) first. */
	zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
	if (z->ctrl.active)
		zkb_ctrl_reconcile_topic(z, name);
out:
	free(cells);
	free(rows);
	free(nrows);
	return err;
}

/* ---- DELETE_TOPIC ---- */

static int delete_topic(zkb *z, const ctl_op *op, ctl_result *r)
{
	const char *name = op->topic;
	if (ctl_validate_topic_name(name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1)))
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	char tpath[ZKB_PATH_MAX], mpath[ZKB_PATH_MAX];
	zkb_topic_path(tpath, name);
	snprintf(mpath, sizeof(mpath), "/admin/delete_topics/%s", name);
	int rc = ctl_zk_exists(z->zk, tpath, false, NULL);
	if (rc == CTL_ZK_NONODE)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rc != CTL_ZK_OK)
		return zk_failed(r, "reading the topic", rc);
	if (op->validate_only)
		return KERR_NONE;
	rc = ctl_zk_create(z->zk, mpath, NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT, NULL, 0, NULL);
	if (rc != CTL_ZK_OK && rc != CTL_ZK_NODEEXISTS) /* marked already: fine (Kafka) */
		return zk_failed(r, "marking the topic for deletion", rc);
	/* its events before the result: gone for this broker's clients */
	zkb_view_refresh_deletions(z);
	if (z->ctrl.active)
		zkb_ctrl_process_deletions(z);
	return KERR_NONE;
}

/* ---- CREATE_PARTITIONS ---- */

static int create_partitions_once(zkb *z, const ctl_op *op, ctl_result *r, bool *again)
{
	*again = false;
	const char *name = op->topic;
	if (ctl_validate_topic_name(name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1)))
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	char tpath[ZKB_PATH_MAX];
	zkb_topic_path(tpath, name);
	char *data;
	int len;
	ctl_zk_stat st;
	int rc = ctl_zk_get(z->zk, tpath, false, &data, &len, &st);
	if (rc == CTL_ZK_NONODE)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rc != CTL_ZK_OK)
		return zk_failed(r, "reading the topic", rc);
	proto_arena a;
	proto_arena_init(&a, 64u << 20);
	ctl_zkj_topic tj;
	int drc = ctl_zkj_topic_decode(data, len, &a, &tj);
	free(data);
	int err = KERR_NONE;
	int32_t *cells = NULL, **rows = NULL, *nrows = NULL;
	if (drc != 0) {
		set_msg(r, "The topic's assignment in ZooKeeper does not parse.");
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	int32_t cur = tj.npartitions, count = op->partitions;
	if (count == cur) {
		snprintf(r->msg, sizeof(r->msg), "Topic already has %d partition(s).", (int)cur);
		err = KERR_INVALID_PARTITIONS;
		goto out;
	}
	if (count < cur) {
		snprintf(r->msg, sizeof(r->msg), "The topic %s currently has %d partition(s); %d would "
			 "not be an increase.", name, (int)cur, (int)count);
		err = KERR_INVALID_PARTITIONS;
		goto out;
	}
	if (count > CTL_MAX_PARTITIONS) {
		snprintf(r->msg, sizeof(r->msg), "Unable to create %d partition(s): a topic has at "
			 "most %d.", (int)count, CTL_MAX_PARTITIONS);
		err = KERR_INVALID_PARTITIONS;
		goto out;
	}
	int32_t add = count - cur;
	if (op->assignments && op->nassignments != add) {
		snprintf(r->msg, sizeof(r->msg), "Attempted to add %d additional partition(s), but "
			 "only %d assignment(s) were specified.", (int)add, (int)op->nassignments);
		err = KERR_INVALID_REPLICA_ASSIGNMENT;
		goto out;
	}
	for (int32_t p = 0; p < cur; p++)
		if (tj.partitions[p].nadding > 0 || tj.partitions[p].nremoving > 0) {
			snprintf(r->msg, sizeof(r->msg), "A partition reassignment is in progress for "
				 "the topic '%s'.", name);
			err = KERR_REASSIGNMENT_IN_PROGRESS;
			goto out;
		}
	int32_t rf = tj.partitions[0].nreplicas;
	if (op->assignments) {
		for (int32_t i = 0; i < op->nassignments; i++) {
			err = check_replica_list(z, &op->assignments[i], rf, r);
			if (err)
				goto out;
		}
	} else if (rf < 1 || rf > z->nbrokers) {
		err = rf_unreachable(z, rf, r);
		goto out;
	}
	if (op->validate_only)
		goto out;
	cells = malloc((size_t)add * (size_t)rf * sizeof(*cells));
	rows = malloc((size_t)count * sizeof(*rows));
	nrows = malloc((size_t)count * sizeof(*nrows));
	if (!cells || !rows || !nrows) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	for (int32_t p = 0; p < cur; p++) {
		rows[p] = tj.partitions[p].replicas;
		nrows[p] = tj.partitions[p].nreplicas;
	}
	for (int32_t i = 0; i < add; i++) {
		rows[cur + i] = &cells[(size_t)i * (size_t)rf];
		nrows[cur + i] = rf;
		if (op->assignments)
			memcpy(rows[cur + i], op->assignments[i].ids, (size_t)rf * sizeof(int32_t));
	}
	if (!op->assignments) {
		/* Kafka continues the pattern: its start index is that of the
		 * first broker whose id is >= partition 0's first replica */
		int32_t start = 0;
		while (start < z->nbrokers && z->brokers[start].id < tj.partitions[0].replicas[0])
			start++;
		if (start == z->nbrokers)
			start = 0;
		if (place(z, add, rf, start, cur, cells) != 0) {
			err = KERR_UNKNOWN_SERVER_ERROR;
			goto out;
		}
	}
	uint8_t id[16];
	if (tj.has_topic_id)
		memcpy(id, tj.topic_id, 16);
	else if (ctl_random_uuid(id) != 0) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	char *json;
	size_t jlen;
	if (topic_json(id, rows, nrows, count, &json, &jlen) != 0) {
		err = KERR_UNKNOWN_SERVER_ERROR;
		goto out;
	}
	rc = ctl_zk_set(z->zk, tpath, json, (int)jlen, st.version, NULL);
	free(json);
	if (rc == CTL_ZK_BADVERSION) {
		*again = true; /* changed meanwhile: read it again */
		goto out;
	}
	if (rc == CTL_ZK_NONODE) {
		err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		goto out;
	}
	if (rc != CTL_ZK_OK) {
		err = zk_failed(r, "writing the topic", rc);
		goto out;
	}
	zkb_view_refresh_topic(z, name, ZKB_READ_NEW);
	if (z->ctrl.active)
		zkb_ctrl_reconcile_topic(z, name);
out:
	free(cells);
	free(rows);
	free(nrows);
	proto_arena_free(&a);
	return err;
}

static int create_partitions(zkb *z, const ctl_op *op, ctl_result *r)
{
	for (int attempt = 0; attempt < MAX_TRIES; attempt++) {
		bool again;
		int err = create_partitions_once(z, op, r, &again);
		if (!again)
			return err;
	}
	set_msg(r, "The topic kept changing while partitions were added.");
	return KERR_REQUEST_TIMED_OUT;
}

/* ---- configs ---- */

static int set_topic_configs(zkb *z, const ctl_op *op, ctl_result *r)
{
	const char *name = op->topic;
	if (ctl_validate_topic_name(name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1)))
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	char tpath[ZKB_PATH_MAX], cpath[ZKB_PATH_MAX];
	zkb_topic_path(tpath, name);
	zkb_topic_config_path(cpath, name);
	int rc = ctl_zk_exists(z->zk, tpath, false, NULL);
	if (rc == CTL_ZK_NONODE)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rc != CTL_ZK_OK)
		return zk_failed(r, "reading the topic", rc);
	if (op->validate_only)
		return KERR_NONE;
	rc = write_config(z, cpath, op->configs, op->nconfigs);
	if (rc == CTL_ZK_BADARGUMENTS) {
		set_msg(r, "A config is given more than once.");
		return KERR_INVALID_CONFIG;
	}
	if (rc == CTL_ZK_OK)
		rc = zkb_write_notice(z, "topics", name);
	if (rc != CTL_ZK_OK)
		return zk_failed(r, "writing the topic's configs", rc);
	zkb_view_refresh_topic_config(z, name);
	if (z->ctrl.active)
		zkb_ctrl_reconcile_topic(z, name); /* unclean election may be on now */
	return KERR_NONE;
}

static int set_broker_configs(zkb *z, const ctl_op *op, ctl_result *r)
{
	if (op->broker_id < 0 && op->broker_id != CTL_BROKER_DEFAULT)
		return KERR_INVALID_REQUEST;
	if (op->validate_only)
		return KERR_NONE;
	char path[ZKB_PATH_MAX], name[16];
	if (op->broker_id == CTL_BROKER_DEFAULT)
		snprintf(name, sizeof(name), "<default>");
	else
		snprintf(name, sizeof(name), "%d", (int)op->broker_id);
	snprintf(path, sizeof(path), "/config/brokers/%s", name);
	int rc = write_config(z, path, op->configs, op->nconfigs);
	if (rc == CTL_ZK_BADARGUMENTS) {
		set_msg(r, "A config is given more than once.");
		return KERR_INVALID_CONFIG;
	}
	if (rc == CTL_ZK_OK)
		rc = zkb_write_notice(z, "brokers", name);
	if (rc != CTL_ZK_OK)
		return zk_failed(r, "writing the broker configs", rc);
	zkb_view_refresh_broker_config(z, op->broker_id, false);
	if (z->ctrl.active)
		zkb_ctrl_reconcile_all(z);
	return KERR_NONE;
}

/* ---- PRODUCER_IDS ---- */

static int producer_ids(zkb *z, ctl_result *r)
{
	const char *path = "/latest_producer_id_block";
	for (int attempt = 0; attempt < 100; attempt++) {
		char *data;
		int len;
		ctl_zk_stat st;
		int rc = ctl_zk_get(z->zk, path, false, &data, &len, &st);
		if (rc == CTL_ZK_NONODE) {
			rc = ctl_zk_create(z->zk, path, NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT, NULL,
					   0, NULL);
			if (rc == CTL_ZK_OK || rc == CTL_ZK_NODEEXISTS)
				continue;
		}
		if (rc != CTL_ZK_OK)
			return zk_failed(r, "reading the producer id block", rc);
		int64_t start = 0;
		if (len > 0) {
			ctl_zkj_pid_block b;
			int drc = ctl_zkj_pid_block_decode(data, len, &b);
			free(data);
			if (drc != 0) {
				set_msg(r, "/latest_producer_id_block does not parse.");
				return KERR_UNKNOWN_SERVER_ERROR;
			}
			if (b.block_end > INT64_MAX - CTL_PRODUCER_ID_BLOCK)
				return KERR_UNKNOWN_SERVER_ERROR; /* id space exhausted */
			start = b.block_end + 1;
		} else {
			free(data); /* a new znode: the first block */
		}
		ctl_zkj_pid_block nb = { .broker = z->self.id, .block_start = start,
					 .block_end = start + CTL_PRODUCER_ID_BLOCK - 1 };
		char *json;
		size_t jlen;
		if (ctl_zkj_pid_block_encode(&nb, &json, &jlen) != 0)
			return KERR_UNKNOWN_SERVER_ERROR;
		rc = ctl_zk_set(z->zk, path, json, (int)jlen, st.version, NULL);
		free(json);
		if (rc == CTL_ZK_BADVERSION)
			continue; /* another broker took one meanwhile */
		if (rc != CTL_ZK_OK)
			return zk_failed(r, "writing the producer id block", rc);
		r->producer_id_start = start;
		r->producer_id_end = start + CTL_PRODUCER_ID_BLOCK;
		return KERR_NONE;
	}
	set_msg(r, "Too much contention on /latest_producer_id_block.");
	return KERR_REQUEST_TIMED_OUT;
}

/* ---- ALTER_ISR ---- */

/* The stored state of a partition, read fresh. */
typedef struct stored_state {
	ctl_zkj_partition_state s;
	int32_t version;
} stored_state;

static int read_stored(zkb *z, const char *path, proto_arena *a, stored_state *out)
{
	char *data;
	int len;
	ctl_zk_stat st;
	int rc = ctl_zk_get(z->zk, path, false, &data, &len, &st);
	if (rc != CTL_ZK_OK)
		return rc;
	int drc = ctl_zkj_partition_state_decode(data, len, a, &out->s);
	free(data);
	out->version = st.version;
	return drc == 0 ? CTL_ZK_OK : CTL_ZK_MARSHALLINGERROR;
}

static bool same_isr(const ctl_zkj_partition_state *s, const int32_t *isr, int32_t n)
{
	return s->nisr == n && (n == 0 || memcmp(s->isr, isr, (size_t)n * sizeof(*isr)) == 0);
}

static int alter_isr(zkb *z, const ctl_op *op, ctl_result *r)
{
	const char *name = op->topic;
	ctl_topic *t = zkb_view_topic(z, name);
	if (!t || op->partition < 0 || op->partition >= t->npartitions)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (!op->isr || op->nisr < 1)
		return KERR_INVALID_REQUEST;
	for (int32_t i = 0; i < op->nisr; i++)
		for (int32_t k = 0; k < i; k++)
			if (op->isr[i] == op->isr[k])
				return KERR_INVALID_REQUEST;
	char path[ZKB_PATH_MAX];
	zkb_state_path(path, name, op->partition);
	proto_arena a;
	proto_arena_init(&a, 1u << 20);
	int err = KERR_NONE;
	for (int attempt = 0; attempt < 2; attempt++) {
		proto_arena_reset(&a);
		stored_state cur;
		int rc = read_stored(z, path, &a, &cur);
		if (rc == CTL_ZK_NONODE) {
			err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			break;
		}
		if (rc != CTL_ZK_OK) {
			err = rc == CTL_ZK_MARSHALLINGERROR ? KERR_UNKNOWN_SERVER_ERROR
							    : zk_failed(r, "reading the state", rc);
			break;
		}
		/* Kafka's order: fencing, an idempotent retry, the version,
		 * then who may be in the ISR. */
		if (cur.s.leader != z->self.id || cur.s.leader_epoch != op->leader_epoch) {
			err = KERR_FENCED_LEADER_EPOCH;
			break;
		}
		if (same_isr(&cur.s, op->isr, op->nisr)) {
			r->partition_epoch = cur.version;
			break;
		}
		if (cur.version != op->partition_epoch) {
			err = KERR_INVALID_UPDATE_VERSION;
			break;
		}
		for (int32_t i = 0; i < op->nisr && !err; i++)
			if (!zkb_view_broker(z, op->isr[i])) {
				snprintf(r->msg, sizeof(r->msg), "Broker %d is not a live broker: it "
					 "may not join the ISR.", (int)op->isr[i]);
				err = KERR_INELIGIBLE_REPLICA;
			}
		if (err)
			break;
		char *json;
		size_t jlen;
		if (zkb_state_encode(cur.s.controller_epoch, cur.s.leader, cur.s.leader_epoch, op->isr,
				     op->nisr, &json, &jlen) != 0) {
			err = KERR_UNKNOWN_SERVER_ERROR;
			break;
		}
		ctl_zk_stat st;
		rc = ctl_zk_set(z->zk, path, json, (int)jlen, op->partition_epoch, &st);
		free(json);
		if (rc == CTL_ZK_OK) {
			r->partition_epoch = st.version;
			t = zkb_view_topic(z, name);
			if (t && op->partition < t->npartitions)
				zkb_view_set_state(z, t, op->partition, cur.s.leader,
						   cur.s.leader_epoch, op->isr, op->nisr,
						   cur.s.controller_epoch, st.version);
			break;
		}
		if (rc != CTL_ZK_BADVERSION) {
			err = zk_failed(r, "writing the state", rc);
			break;
		}
		/* BADVERSION: read it once more: the same data is success (a
		 * retry after a lost connection), else INVALID_UPDATE_VERSION */
	}
	proto_arena_free(&a);
	return err;
}

/* ---- dispatch ---- */

void zkb_run_op(zkb *z, const ctl_op *op, ctl_result *r)
{
	int err;
	switch (op->type) {
	case CTL_OP_CREATE_TOPIC:
		err = create_topic(z, op, r);
		break;
	case CTL_OP_DELETE_TOPIC:
		err = delete_topic(z, op, r);
		break;
	case CTL_OP_CREATE_PARTITIONS:
		err = create_partitions(z, op, r);
		break;
	case CTL_OP_SET_TOPIC_CONFIGS:
		err = set_topic_configs(z, op, r);
		break;
	case CTL_OP_SET_BROKER_CONFIGS:
		err = set_broker_configs(z, op, r);
		break;
	case CTL_OP_UPDATE_ACLS:
		err = zkb_acl_update(z, op, r);
		break;
	case CTL_OP_SET_CLIENT_CONFIGS:
		err = zkb_clients_set(z, op, r);
		break;
	case CTL_OP_PRODUCER_IDS:
		err = producer_ids(z, r);
		break;
	case CTL_OP_ALTER_ISR:
		err = alter_isr(z, op, r);
		break;
	case CTL_OP_CONTROLLED_SHUTDOWN:
		err = zkb_ctrl_controlled_shutdown(z, op->broker_id, op->broker_epoch, &r->remaining);
		break;
	case CTL_OP_ALTER_REASSIGNMENT:
		err = zkb_reasn_alter(z, op, r);
		break;
	case CTL_OP_LIST_REASSIGNMENTS:
		err = zkb_reasn_list(z);
		break;
	case CTL_OP_ELECT_LEADER:
		err = zkb_elect_partition(z, op->topic, op->partition, op->election_type, r->msg,
					  sizeof(r->msg));
		break;
	default:
		err = KERR_INVALID_REQUEST;
		break;
	}
	r->error = (int16_t)err;
}
