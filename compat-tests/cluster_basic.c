/*
 * cluster_basic.c - three brokers in ZooKeeper mode (CLUSTER.md 6.5 tests 1
 * and 4): the znodes they write are Kafka's (read through the test's own
 * ZooKeeper session and parsed by tjson, not by the broker's codec), a
 * replicated topic is laid out and led as Kafka does, every broker's
 * Metadata agrees with ZooKeeper, and records go round.
 *
 * Layout (CLUSTER.md 1): /brokers/ids/1..3 ephemeral v5 registrations
 * naming each broker's listener; /controller ephemeral naming one of them;
 * /controller_epoch plain text >= 1; /cluster/id {"version":"1","id":<22
 * chars>} equal to Metadata's cluster id; the persistent paths a broker
 * creates at start-up. A topic of 6 partitions with replication factor 3:
 * /brokers/topics/<t> v3 with a topic id and the assignment (every
 * partition 3 distinct live brokers, each broker the first replica, the
 * preferred leader, of exactly 2 partitions), /config/topics/<t> v1, and
 * per partition a v1 state znode: leader = the first replica, leader epoch
 * 0, ISR = all three, controller epoch = /controller_epoch. Metadata v7 of
 * every broker gives the same leader, leader epoch, replicas (in order) and
 * ISR, no offline replica, and names the controller of /controller, as does
 * librdkafka's rd_kafka_controllerid. An idempotent acks=all producer's
 * records (1,500 over 6 partitions) all come back at their offsets
 * (checker), and /latest_producer_id_block holds the producer id block it
 * came from.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/tjson.h"

#define TOPIC "basic"
#define NPART 6

/* The JSON of znode path, parsed; fails the test when missing or bad.
 * *st optional. Free with tj_free. */
static tj *znode_json(hc_cluster *c, const char *path, ctl_zk_stat *st)
{
	char *data;
	int len;
	ctl_zk_stat s;
	int rc = hc_zk_get(c, path, &data, &len, &s);
	ck_assert_msg(rc == CTL_ZK_OK, "%s: %s", path, ctl_zk_strerror(rc));
	ck_assert_msg(data != NULL, "%s holds null data", path);
	char err[128];
	tj *v = tj_parse(data, (size_t)len, err, sizeof(err));
	ck_assert_msg(v && v->type == TJ_OBJ, "%s is not a JSON object (%s): %s", path, err, data);
	free(data);
	if (st)
		*st = s;
	return v;
}

static bool all_digits(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Kafka's topic and cluster ids: 16 bytes in URL-safe base64 without
 * padding, 22 characters. */
static bool is_base64url_uuid(const char *s)
{
	if (!s || strlen(s) != 22)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
			return false;
	return true;
}

static void check_registration(hc_cluster *c, int id)
{
	char path[64], want[64];
	snprintf(path, sizeof(path), "/brokers/ids/%d", id);
	ctl_zk_stat st;
	tj *v = znode_json(c, path, &st);
	ck_assert_msg(st.ephemeral_owner != 0, "%s is not ephemeral", path);
	int64_t version, port, jmx;
	ck_assert_msg(tj_get_int(v, "version", &version) == 0 && version == 5,
		      "%s: version is not 5", path);
	ck_assert_msg(tj_get_int(v, "port", &port) == 0 && port == c->b[id]->port,
		      "%s: port is not %d", path, c->b[id]->port);
	ck_assert_msg(tj_get_int(v, "jmx_port", &jmx) == 0 && jmx == -1, "%s: jmx_port", path);
	const char *host = tj_get_str(v, "host");
	ck_assert_msg(host && strcmp(host, "127.0.0.1") == 0, "%s: host %s", path,
		      host ? host : "(none)");
	ck_assert_msg(all_digits(tj_get_str(v, "timestamp")), "%s: timestamp is not a string of "
		      "digits", path);
	const tj *ep = tj_get(v, "endpoints");
	snprintf(want, sizeof(want), "PLAINTEXT://127.0.0.1:%d", c->b[id]->port);
	ck_assert_msg(ep && ep->type == TJ_ARR && ep->n == 1 && ep->items[0]->type == TJ_STR &&
			      strcmp(ep->items[0]->s, want) == 0,
		      "%s: endpoints are not [\"%s\"]", path, want);
	const tj *map = tj_get(v, "listener_security_protocol_map");
	const char *pt = tj_get_str(map, "PLAINTEXT");
	ck_assert_msg(pt && strcmp(pt, "PLAINTEXT") == 0,
		      "%s: listener_security_protocol_map has no PLAINTEXT:PLAINTEXT", path);
	const tj *features = tj_get(v, "features");
	ck_assert_msg(features && features->type == TJ_OBJ, "%s: no features object", path);
	ck_assert_msg(tj_get(v, "rack") == NULL, "%s: a rack without broker.rack", path);
	tj_free(v);
}

static void check_cluster_znodes(hc_cluster *c, int64_t *controller_epoch, int *controller)
{
	/* the persistent paths of a broker's start-up that this design keeps
	 * (CLUSTER.md 1, 6.1) */
	static const char *const paths[] = {
		"/brokers/ids", "/brokers/topics", "/config/topics", "/config/changes",
		"/admin/delete_topics",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ctl_zk_stat st;
		int rc = hc_zk_exists(c, paths[i], &st);
		ck_assert_msg(rc == CTL_ZK_OK, "%s: %s", paths[i], ctl_zk_strerror(rc));
		ck_assert_msg(st.ephemeral_owner == 0, "%s is ephemeral", paths[i]);
	}
	ctl_zk_children ch;
	ck_assert_int_eq(hc_zk_children(c, "/brokers/ids", &ch), CTL_ZK_OK);
	ck_assert_msg(ch.count == 3, "/brokers/ids has %d children", ch.count);
	ctl_zk_children_free(&ch);
	for (int id = 1; id <= 3; id++)
		check_registration(c, id);

	ctl_zk_stat st;
	tj *ctl = znode_json(c, "/controller", &st);
	ck_assert_msg(st.ephemeral_owner != 0, "/controller is not ephemeral");
	int64_t version, brokerid;
	ck_assert_msg(tj_get_int(ctl, "version", &version) == 0 && (version == 1 || version == 2),
		      "/controller: version");
	ck_assert_msg(tj_get_int(ctl, "brokerid", &brokerid) == 0 && brokerid >= 1 &&
			      brokerid <= 3,
		      "/controller: brokerid");
	ck_assert_msg(all_digits(tj_get_str(ctl, "timestamp")), "/controller: timestamp");
	tj_free(ctl);
	*controller = (int)brokerid;

	/* /controller_epoch is plain decimal text, not JSON */
	char *data;
	int len;
	ck_assert_int_eq(hc_zk_get(c, "/controller_epoch", &data, &len, NULL), CTL_ZK_OK);
	ck_assert_msg(data && all_digits(data), "/controller_epoch is not a number: %s",
		      data ? data : "(null)");
	*controller_epoch = strtoll(data, NULL, 10);
	ck_assert_msg(*controller_epoch >= 1, "/controller_epoch is %s", data);
	free(data);

	tj *cid = znode_json(c, "/cluster/id", NULL);
	const char *v = tj_get_str(cid, "version"); /* a string, as Kafka writes it */
	ck_assert_msg(v && strcmp(v, "1") == 0, "/cluster/id: version is not the string \"1\"");
	ck_assert_msg(is_base64url_uuid(tj_get_str(cid, "id")), "/cluster/id: id %s",
		      tj_get_str(cid, "id") ? tj_get_str(cid, "id") : "(none)");
	hc_md md;
	ck_assert_int_eq(hc_metadata(c, 1, NULL, &md, 5000), 0);
	ck_assert_msg(strcmp(md.cluster_id, tj_get_str(cid, "id")) == 0,
		      "Metadata's cluster id %s is not /cluster/id's %s", md.cluster_id,
		      tj_get_str(cid, "id"));
	hc_md_free(&md);
	tj_free(cid);
}

/* The topic's znodes; fills assign[p][0..2]. */
static void check_topic_znodes(hc_cluster *c, int64_t controller_epoch, int32_t assign[][3])
{
	tj *t = znode_json(c, "/brokers/topics/" TOPIC, NULL);
	int64_t version;
	ck_assert_msg(tj_get_int(t, "version", &version) == 0 && version == 3,
		      "topic znode: version is not 3");
	ck_assert_msg(is_base64url_uuid(tj_get_str(t, "topic_id")), "topic znode: topic_id");
	const tj *parts = tj_get(t, "partitions");
	ck_assert_msg(parts && parts->type == TJ_OBJ && parts->n == NPART,
		      "topic znode: partitions is not an object of %d", NPART);
	const tj *adding = tj_get(t, "adding_replicas"), *removing = tj_get(t, "removing_replicas");
	ck_assert_msg(adding && adding->type == TJ_OBJ && adding->n == 0 && removing &&
			      removing->type == TJ_OBJ && removing->n == 0,
		      "topic znode: adding_replicas / removing_replicas are not empty objects");
	int first_count[4] = {0};
	for (int p = 0; p < NPART; p++) {
		char key[16];
		snprintf(key, sizeof(key), "%d", p);
		int n = tj_get_int_array(parts, key, assign[p], 3);
		ck_assert_msg(n == 3, "topic znode: partition %d has %d replicas", p, n);
		for (int i = 0; i < 3; i++) {
			ck_assert_msg(assign[p][i] >= 1 && assign[p][i] <= 3,
				      "partition %d: replica %d", p, assign[p][i]);
			for (int k = 0; k < i; k++)
				ck_assert_msg(assign[p][k] != assign[p][i], "partition %d: replica %d "
					      "twice", p, assign[p][i]);
		}
		first_count[assign[p][0]]++;
	}
	for (int id = 1; id <= 3; id++)
		ck_assert_msg(first_count[id] == NPART / 3,
			      "broker %d is the preferred leader of %d partitions, not %d", id,
			      first_count[id], NPART / 3);
	tj_free(t);

	tj *cfg = znode_json(c, "/config/topics/" TOPIC, NULL);
	ck_assert_msg(tj_get_int(cfg, "version", &version) == 0 && version == 1,
		      "/config/topics/" TOPIC ": version");
	const tj *conf = tj_get(cfg, "config");
	ck_assert_msg(conf && conf->type == TJ_OBJ, "/config/topics/" TOPIC ": no config object");
	tj_free(cfg);

	for (int p = 0; p < NPART; p++) {
		hc_state st;
		ck_assert_int_eq(hc_zk_state(c, TOPIC, p, &st), CTL_ZK_OK);
		ck_assert_msg(st.version == 1, "state %d: %s", p, st.json);
		ck_assert_msg(st.leader == assign[p][0],
			      "partition %d: leader %d, not the first replica %d (%s)", p, st.leader,
			      assign[p][0], st.json);
		ck_assert_msg(st.leader_epoch == 0, "partition %d: leader epoch %d (%s)", p,
			      st.leader_epoch, st.json);
		ck_assert_msg(st.nisr == 3 && hc_isr_has(&st, 1) && hc_isr_has(&st, 2) &&
				      hc_isr_has(&st, 3),
			      "partition %d: ISR is not all three (%s)", p, st.json);
		ck_assert_msg(st.controller_epoch == controller_epoch,
			      "partition %d: controller_epoch %d, /controller_epoch %" PRId64, p,
			      st.controller_epoch, controller_epoch);
	}
}

static void check_metadata_agrees(hc_cluster *c, int controller, int32_t assign[][3])
{
	int leaders[4] = {0};
	for (int id = 1; id <= 3; id++) {
		hc_md md;
		ck_assert_int_eq(hc_metadata(c, id, TOPIC, &md, 5000), 0);
		ck_assert_msg(md.controller_id == controller, "broker %d names controller %d, not %d",
			      id, md.controller_id, controller);
		ck_assert_int_eq(md.nbrokers, 3);
		const hc_md_topic *t = hc_md_find(&md, TOPIC);
		ck_assert_msg(t && !t->err && t->npartitions == NPART, "broker %d: topic", id);
		for (int p = 0; p < NPART; p++) {
			const hc_md_partition *mp = hc_md_part(t, p);
			hc_state st;
			ck_assert_int_eq(hc_zk_state(c, TOPIC, p, &st), CTL_ZK_OK);
			ck_assert_msg(mp && mp->err == 0, "broker %d: partition %d error", id, p);
			ck_assert_msg(mp->leader == st.leader && mp->leader_epoch == st.leader_epoch,
				      "broker %d: partition %d leader %d epoch %d; state %s", id, p,
				      mp->leader, mp->leader_epoch, st.json);
			ck_assert_msg(mp->nreplicas == 3 && mp->replicas[0] == assign[p][0] &&
					      mp->replicas[1] == assign[p][1] &&
					      mp->replicas[2] == assign[p][2],
				      "broker %d: partition %d replicas not in assignment order", id, p);
			ck_assert_msg(mp->nisr == 3, "broker %d: partition %d ISR of %d", id, p,
				      mp->nisr);
			for (int i = 0; i < mp->nisr; i++)
				ck_assert_msg(hc_isr_has(&st, mp->isr[i]),
					      "broker %d: partition %d ISR member %d not in %s", id, p,
					      mp->isr[i], st.json);
			ck_assert_msg(mp->noffline == 0, "broker %d: partition %d has offline "
				      "replicas", id, p);
			if (id == 1)
				leaders[mp->leader]++;
		}
		hc_md_free(&md);
	}
	for (int id = 1; id <= 3; id++)
		ck_assert_msg(leaders[id] == NPART / 3, "broker %d leads %d partitions", id,
			      leaders[id]);
}

START_TEST(test_layout_and_round_trip)
{
	hc_cluster c;
	cc_start(&c, NULL, false);
	int64_t controller_epoch;
	int controller;
	check_cluster_znodes(&c, &controller_epoch, &controller);

	cc_create_topic(&c, TOPIC, NPART, 3, NULL, NULL);
	int32_t assign[NPART][3];
	check_topic_znodes(&c, controller_epoch, assign);
	check_metadata_agrees(&c, controller, assign);

	/* librdkafka sees the same controller */
	rd_kafka_t *rk = c_new(RD_KAFKA_PRODUCER, cc_conf(&c));
	int32_t rk_ctl = rd_kafka_controllerid(rk, h_scaled_ms(10000));
	ck_assert_msg(rk_ctl == controller, "rd_kafka_controllerid: %d, /controller: %d", rk_ctl,
		      controller);
	rd_kafka_destroy(rk);

	/* round trip: an idempotent acks=all producer for 3 s at 500/s */
	cc_producer *p = cc_producer_start(&c, TOPIC, NPART, 0, 500, NULL);
	usleep(3000 * 1000);
	cc_producer_stop(p, 30000);
	ck_assert_msg(!p->fatal[0], "producer: %s", p->fatal);
	ck_assert_msg(atomic_load(&p->nacked) == atomic_load(&p->nsent),
		      "%ld of %ld records acknowledged (first error: %s)", atomic_load(&p->nacked),
		      atomic_load(&p->nsent), p->first_error);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	long n = cc_read_all(&c, TOPIC, NPART, h);
	chk_report r;
	chk_options opt = {.idempotent = true};
	cc_check(h, &opt, &r, "round trip");
	ck_assert_int_eq(n, atomic_load(&p->nsent));
	chk_free(h);
	cc_producer_free(p);

	/* the producer id block the idempotent producer came from */
	char *data;
	int len;
	ck_assert_int_eq(hc_zk_get(&c, "/latest_producer_id_block", &data, &len, NULL), CTL_ZK_OK);
	tj *blk = data ? tj_parse(data, (size_t)len, NULL, 0) : NULL;
	int64_t version, broker;
	ck_assert_msg(blk && tj_get_int(blk, "version", &version) == 0 && version == 1 &&
			      tj_get_int(blk, "broker", &broker) == 0 && broker >= 1 && broker <= 3 &&
			      all_digits(tj_get_str(blk, "block_start")) &&
			      all_digits(tj_get_str(blk, "block_end")),
		      "/latest_producer_id_block: %s", data ? data : "(null)");
	ck_assert_msg(strtoll(tj_get_str(blk, "block_end"), NULL, 10) >
			      strtoll(tj_get_str(blk, "block_start"), NULL, 10),
		      "/latest_producer_id_block: empty block %s", data);
	tj_free(blk);
	free(data);

	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_basic");
	TCase *tc = tcase_create("basic");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_layout_and_round_trip);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
