/*
 * fuzz_znode.c - libFuzzer target: the znode decoders of cluster mode
 * (controller/zk_json.h) and the JSON reader under them (controller/json.h),
 * fed what a hostile or broken ZooKeeper client could have written.
 *
 * Input: byte 0 selects the codec (modulo 14), the rest is the znode data:
 *    0 /brokers/ids/<id>          6 config change notification
 *    1 /controller                7 /latest_producer_id_block
 *    2 /controller_epoch          8 /cluster/id
 *    3 /brokers/topics/<t>        9 isr change notification
 *    4 partition state           10 the bare JSON reader: walks every token
 *    5 /config/<type>/<name>        and decodes every string
 *                                11 /admin/preferred_replica_election
 *                                12 /admin/reassign_partitions
 *                                13 a client entity: a config change
 *                                   notice naming users/clients/ips taken
 *                                   to its entity path as a broker does,
 *                                   and the bytes as an entity path
 *                                   (controller/entity.h)
 *
 * Beyond "no crash, no leak, no sanitizer report": what decodes is encoded
 * again when the encoder accepts it, that encoding must decode, and encoding
 * the result once more must give the same bytes (the encoders are
 * canonical). A break of that aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/entity.h"
#include "controller/json.h"
#include "controller/zk_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* enc -> dec -> enc must reproduce enc. */
#define ROUND_TRIP(T, encode_call, decode_call)                                           \
	do {                                                                                \
		char *e1, *e2;                                                              \
		size_t n1, n2;                                                              \
		if ((encode_call(&v, &e1, &n1)) != 0)                                       \
			break;                                                              \
		T v2;                                                                       \
		if (decode_call(e1, (int)n1, &v2) != 0)                                     \
			abort();                                                            \
		if (encode_call(&v2, &e2, &n2) != 0 || n1 != n2 || memcmp(e1, e2, n1) != 0) \
			abort();                                                            \
		free(e1);                                                                   \
		free(e2);                                                                   \
	} while (0)

static proto_arena *ar;

#define BROKER_ENC(p, o, n) ctl_zkj_broker_encode(p, o, n)
#define BROKER_DEC(s, n, o) ctl_zkj_broker_decode(s, n, ar, o)
#define CONTROLLER_ENC(p, o, n) ctl_zkj_controller_encode(p, o, n)
#define CONTROLLER_DEC(s, n, o) ctl_zkj_controller_decode(s, n, ar, o)
#define EPOCH_ENC(p, o, n) ctl_zkj_controller_epoch_encode(*(p), o, n)
#define EPOCH_DEC(s, n, o) ctl_zkj_controller_epoch_decode(s, n, o)
#define TOPIC_ENC(p, o, n) ctl_zkj_topic_encode(p, o, n)
#define TOPIC_DEC(s, n, o) ctl_zkj_topic_decode(s, n, ar, o)
#define STATE_ENC(p, o, n) ctl_zkj_partition_state_encode(p, o, n)
#define STATE_DEC(s, n, o) ctl_zkj_partition_state_decode(s, n, ar, o)
#define CONFIG_ENC(p, o, n) ctl_zkj_config_encode(p, o, n)
#define CONFIG_DEC(s, n, o) ctl_zkj_config_decode(s, n, ar, o)
#define CHANGE_ENC(p, o, n) ctl_zkj_config_change_encode((p)->entity_type, (p)->entity_name, o, n)
#define CHANGE_DEC(s, n, o) ctl_zkj_config_change_decode(s, n, ar, o)
#define PID_ENC(p, o, n) ctl_zkj_pid_block_encode(p, o, n)
#define PID_DEC(s, n, o) ctl_zkj_pid_block_decode(s, n, o)
#define CLUSTER_ENC(p, o, n) ctl_zkj_cluster_id_encode(*(p), o, n)
#define CLUSTER_DEC(s, n, o) ctl_zkj_cluster_id_decode(s, n, ar, o)

typedef struct isr_list {
	ctl_zkj_topic_partition *p;
	int32_t n;
} isr_list;
#define ISR_ENC(l, o, len) ctl_zkj_isr_change_encode((l)->p, (l)->n, o, len)
#define ISR_DEC(s, len, l) ctl_zkj_isr_change_decode(s, len, ar, &(l)->p, &(l)->n)
#define PREFERRED_ENC(l, o, len) ctl_zkj_preferred_election_encode((l)->p, (l)->n, o, len)
#define PREFERRED_DEC(s, len, l) ctl_zkj_preferred_election_decode(s, len, ar, &(l)->p, &(l)->n)

typedef struct reassign_list {
	ctl_zkj_reassignment *r;
	int32_t n;
} reassign_list;
#define REASSIGN_ENC(l, o, len) ctl_zkj_reassign_encode((l)->r, (l)->n, o, len)
#define REASSIGN_DEC(s, len, l) ctl_zkj_reassign_decode(s, len, ar, &(l)->r, &(l)->n)

static void walk_json(const char *s, size_t n)
{
	ctl_json d;
	if (ctl_json_parse(&d, s, n, ar) != 0)
		return;
	for (uint32_t t = 0; t < d.ntok; t++) {
		const char *str;
		size_t len;
		if (d.tok[t].end <= t || d.tok[t].end > d.ntok)
			abort(); /* a subtree always ends after its root, inside the doc */
		if (ctl_json_type_of(&d, (int)t) == CTL_JSON_STRING &&
		    (ctl_json_str(&d, (int)t, ar, &str, &len) != 0 || strlen(str) != len))
			abort(); /* decoded strings hold no NUL */
		if (ctl_json_type_of(&d, (int)t) == CTL_JSON_OBJECT)
			(void)ctl_json_get(&d, (int)t, "version");
	}
}

/* An entity path that parses: every name desanitizes, and a name
 * sanitized again (by ctl_entity_path) gives a path that parses too. */
static void check_entity(const char *path, size_t len)
{
	ctl_entity_ref r;
	if (ctl_entity_parse(path, len, &r) != 0)
		return;
	static char raw[CTL_ENTITY_PATH_MAX + 1], raw2[CTL_ENTITY_PATH_MAX + 1];
	static char again[CTL_ENTITY_PATH_MAX + 1];
	int n = ctl_entity_desanitize(r.name, r.name_len, raw, sizeof(raw));
	if (n < 0)
		abort();
	int n2 = 0;
	if (r.kind == CTL_ENTITY_USER_CLIENT_ID &&
	    (n2 = ctl_entity_desanitize(r.client, r.client_len, raw2, sizeof(raw2))) < 0)
		abort();
	int m = ctl_entity_path(again, sizeof(again), r.kind, r.name_default ? NULL : raw,
				(size_t)n, r.client_default ? NULL : raw2, (size_t)n2);
	ctl_entity_ref r2;
	if (m >= 0 && ctl_entity_parse(again, (size_t)m, &r2) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > CTL_JSON_MAX_SIZE + 16)
		return 0;
	proto_arena a;
	proto_arena_init(&a, 256u << 20);
	ar = &a;
	const char *s = (const char *)data + 1;
	int n = (int)(size - 1);
	switch (data[0] % 14) {
	case 0: {
		ctl_zkj_broker v;
		if (BROKER_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_broker, BROKER_ENC, BROKER_DEC);
		break;
	}
	case 1: {
		ctl_zkj_controller v;
		if (CONTROLLER_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_controller, CONTROLLER_ENC, CONTROLLER_DEC);
		break;
	}
	case 2: {
		int32_t v;
		if (EPOCH_DEC(s, n, &v) == 0)
			ROUND_TRIP(int32_t, EPOCH_ENC, EPOCH_DEC);
		break;
	}
	case 3: {
		ctl_zkj_topic v;
		if (TOPIC_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_topic, TOPIC_ENC, TOPIC_DEC);
		break;
	}
	case 4: {
		ctl_zkj_partition_state v;
		if (STATE_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_partition_state, STATE_ENC, STATE_DEC);
		break;
	}
	case 5: {
		ctl_zkj_config v;
		if (CONFIG_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_config, CONFIG_ENC, CONFIG_DEC);
		break;
	}
	case 6: {
		ctl_zkj_config_change v;
		if (CHANGE_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_config_change, CHANGE_ENC, CHANGE_DEC);
		break;
	}
	case 7: {
		ctl_zkj_pid_block v;
		if (PID_DEC(s, n, &v) == 0)
			ROUND_TRIP(ctl_zkj_pid_block, PID_ENC, PID_DEC);
		break;
	}
	case 8: {
		const char *v;
		if (CLUSTER_DEC(s, n, &v) == 0)
			ROUND_TRIP(const char *, CLUSTER_ENC, CLUSTER_DEC);
		break;
	}
	case 9: {
		isr_list v;
		if (ISR_DEC(s, n, &v) == 0)
			ROUND_TRIP(isr_list, ISR_ENC, ISR_DEC);
		break;
	}
	case 11: {
		isr_list v;
		if (PREFERRED_DEC(s, n, &v) == 0)
			ROUND_TRIP(isr_list, PREFERRED_ENC, PREFERRED_DEC);
		break;
	}
	case 12: {
		reassign_list v;
		if (REASSIGN_DEC(s, n, &v) == 0)
			ROUND_TRIP(reassign_list, REASSIGN_ENC, REASSIGN_DEC);
		break;
	}
	case 13: {
		check_entity(s, (size_t)n);
		ctl_zkj_config_change v;
		char path[CTL_ENTITY_PATH_MAX + 1];
		if (CHANGE_DEC(s, n, &v) == 0) {
			int k = snprintf(path, sizeof(path), "%s/%s", v.entity_type, v.entity_name);
			if (k > 0 && (size_t)k < sizeof(path))
				check_entity(path, (size_t)k);
		}
		break;
	}
	default:
		walk_json(s, (size_t)n);
		break;
	}
	proto_arena_free(&a);
	return 0;
}
