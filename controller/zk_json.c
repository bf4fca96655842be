/*
 * zk_json.c - the znode codecs of zk_json.h over json.h.
 *
 * Member order of the encoders. Kafka hands Jackson a Scala or Java map and
 * Jackson writes the members in the map's iteration order:
 *   - Scala Map1..Map4 (up to 4 literal entries): insertion order. /controller,
 *     /cluster/id, the config znode's outer object, config change
 *     notifications, /latest_producer_id_block, isr change notifications.
 *   - Scala 2.13 immutable.HashMap (5+ literal entries, a CHAMP trie): the
 *     partition state. Its fixed order was computed once from the keys'
 *     hashes and checked against znodes written by Kafka.
 *   - Scala 2.13 mutable.HashMap: the broker registration and the topic's
 *     outer object (fixed key sets: fixed order, computed and checked the
 *     same way), and the topic's partitions maps, whose keys vary: ordered
 *     here as that map orders them (scala_order below).
 *   - java.util.Properties (a ConcurrentHashMap inside): a config map
 *     (java_chm_order below).
 */
#include "controller/zk_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/json.h"
#include "storage/logdir.h"

/* ---- hash-map orders ---- */

/* Java's String.hashCode of a UTF-8 string (over its UTF-16 code units).
 * Invalid UTF-8 cannot reach here (json.h refuses it). */
static uint32_t java_string_hash(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t h = 0;
	while (*p) {
		uint32_t cp;
		if (p[0] < 0x80)
			cp = *p++;
		else if (p[0] < 0xE0) {
			cp = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
			p += 2;
		} else if (p[0] < 0xF0) {
			cp = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
			p += 3;
		} else {
			cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
			     (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
			p += 4;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = 31 * h + (0xD800 + (cp >> 10));
			h = 31 * h + (0xDC00 + (cp & 0x3FF));
		} else
			h = 31 * h + cp;
	}
	return h;
}

/* Table length of a Scala 2.13 mutable.HashMap or a Java ConcurrentHashMap
 * (16 at first, doubled once an insert brings the size to 3/4 of it) after
 * n inserts. */
static uint32_t hash_table_len(size_t n)
{
	uint32_t len = 16;
	while (n >= (size_t)len / 4 * 3 && len < (1u << 30))
		len *= 2;
	return len;
}

typedef struct order_key {
	uint32_t bucket;
	int32_t hash;  /* tie-break inside a bucket (Scala only) */
	uint32_t seq;  /* insertion order */
} order_key;

static int order_cmp(const void *a, const void *b)
{
	const order_key *x = a, *y = b;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Scala 2.13 mutable.HashMap iteration order of keys[0..n) (inserted in that
 * order): bucket (improved hash & (len - 1)) ascending, each bucket's chain
 * sorted by improved hash, where improved = h ^ (h >>> 16). order[] gets the
 * key indexes. With java_chm: a ConcurrentHashMap (java.util.Properties) instead:
 * bucket (spread(h) & (len - 1)), each bin in insertion order (a resize can
 * reorder a bin's first entries in Java; not reproduced).
 */
static int map_order(const char *const *keys, uint32_t n, bool java_chm, uint32_t *order)
{
	order_key *k = malloc((n ? n : 1) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	uint32_t mask = hash_table_len(n) - 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h = java_string_hash(keys[i]);
		uint32_t improved = h ^ (h >> 16);
		if (java_chm)
			improved &= 0x7fffffff;
		k[i].bucket = improved & mask;
		k[i].hash = java_chm ? 0 : (int32_t)improved;
		k[i].seq = i;
	}
	qsort(k, n, sizeof(*k), order_cmp);
	for (uint32_t i = 0; i < n; i++)
		order[i] = k[i].seq;
	free(k);
	return 0;
}

/* ---- small helpers ---- */

/* Parse len bytes of znode data as a JSON object. */
static int open_object(const char *data, int len, proto_arena *a, ctl_json *d)
{
	if (!data || len < 0)
		return -EINVAL;
	int rc = ctl_json_parse(d, data, (size_t)len, a);
	if (rc == -E2BIG)
		return -EINVAL;
	if (rc < 0)
		return rc;
	return ctl_json_type_of(d, 0) == CTL_JSON_OBJECT ? 0 : -EINVAL;
}

/* Member key of the root object as an integer in [min, max]. Returns 0,
 * 1 when absent (and !required), -EINVAL otherwise. */
static int get_int(const ctl_json *d, int obj, const char *key, int64_t min, int64_t max,
		   bool required, int64_t *out)
{
	int t = ctl_json_get(d, obj, key);
	if (t < 0)
		return required ? -EINVAL : 1;
	return ctl_json_int(d, t, min, max, out);
}

static int get_i32(const ctl_json *d, int obj, const char *key, int64_t min, bool required,
		   int32_t *out)
{
	int64_t v;
	int rc = get_int(d, obj, key, min, INT32_MAX, required, &v);
	if (rc == 0)
		*out = (int32_t)v;
	return rc;
}

/* Member key as a string (NULL for JSON null when nullable). 0, 1 absent
 * and !required, -EINVAL, -ENOMEM. */
static int get_str(const ctl_json *d, int obj, const char *key, proto_arena *a, bool required,
		   bool nullable, const char **out)
{
	int t = ctl_json_get(d, obj, key);
	if (t < 0)
		return required ? -EINVAL : 1;
	if (nullable && ctl_json_type_of(d, t) == CTL_JSON_NULL) {
		*out = NULL;
		return 0;
	}
	return ctl_json_str(d, t, a, out, NULL);
}

/* Canonical decimal text of a non-negative integer or, with sign, Java's
 * Long.parseLong/Integer.parseInt syntax (an optional + or -). */
static int parse_dec(const char *s, size_t n, bool sign, int64_t min, int64_t max, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (sign && n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return -EINVAL;
	if (!sign && s[0] == '0' && n > 1)
		return -EINVAL; /* "007": not what Kafka writes */
	int64_t v = 0; /* accumulated negatively so INT64_MIN fits */
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		int dgt = s[i] - '0';
		if (v < (INT64_MIN + dgt) / 10)
			return -EINVAL;
		v = v * 10 - dgt;
	}
	if (!neg) {
		if (v == INT64_MIN)
			return -EINVAL;
		v = -v;
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A member holding a decimal number as a string ("timestamp":"1732..."). */
static int get_dec_str(const ctl_json *d, int obj, const char *key, proto_arena *a,
		       bool required, int64_t min, int64_t max, int64_t *out)
{
	const char *s;
	size_t n;
	int t = ctl_json_get(d, obj, key);
	if (t < 0)
		return required ? -EINVAL : 1;
	int rc = ctl_json_str(d, t, a, &s, &n);
	if (rc < 0)
		return rc;
	return parse_dec(s, n, false, min, max, out);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* true when ids[0..n) repeats a value (sorts a scratch copy from the arena). */
static int has_repeat(const int32_t *ids, int32_t n, proto_arena *a, bool *rep)
{
	*rep = false;
	if (n < 2)
		return 0;
	int32_t *c = proto_arena_alloc(a, (size_t)n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(c, ids, (size_t)n * sizeof(*c));
	qsort(c, (size_t)n, sizeof(*c), cmp_i32);
	for (int32_t i = 1; i < n; i++)
		if (c[i] == c[i - 1])
			*rep = true;
	return 0;
}

/* A JSON array of broker ids (>= 0, no repeats) at token t. */
static int read_id_list(const ctl_json *d, int t, proto_arena *a, bool allow_empty,
			int32_t **out, int32_t *n)
{
	if (ctl_json_type_of(d, t) != CTL_JSON_ARRAY)
		return -EINVAL;
	uint32_t count = d->tok[t].count;
	if (count == 0 && !allow_empty)
		return -EINVAL;
	if (count > INT32_MAX)
		return -EINVAL;
	int32_t *ids = proto_arena_alloc(a, (size_t)count * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	int e = ctl_json_first(d, t);
	for (uint32_t i = 0; i < count; i++, e = ctl_json_next(d, e)) {
		int64_t v;
		if (ctl_json_int(d, e, 0, INT32_MAX, &v) < 0)
			return -EINVAL;
		ids[i] = (int32_t)v;
	}
	bool rep;
	int rc = has_repeat(ids, (int32_t)count, a, &rep);
	if (rc < 0)
		return rc;
	if (rep)
		return -EINVAL;
	*out = ids;
	*n = (int32_t)count;
	return 0;
}

static void w_id_list(ctl_json_w *w, const int32_t *ids, int32_t n)
{
	ctl_json_w_arr_begin(w);
	for (int32_t i = 0; i < n; i++)
		ctl_json_w_int(w, ids[i]);
	ctl_json_w_arr_end(w);
}

static void w_dec_str(ctl_json_w *w, int64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRId64, v);
	ctl_json_w_str(w, b);
}

/* ---- /brokers/ids/<id> ---- */

static bool known_protocol(const char *s)
{
	return strcmp(s, "PLAINTEXT") == 0 || strcmp(s, "SSL") == 0 ||
	       strcmp(s, "SASL_PLAINTEXT") == 0 || strcmp(s, "SASL_SSL") == 0;
}

/* Kafka's listener names: what its listener regex captures before "://";
 * we take letters, digits, '_', '-' and '.'. */
static bool valid_listener(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* Host characters of Kafka's endpoint regex: [0-9a-zA-Z-%._:]. */
static bool valid_host(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '%' || c == '.' || c == '_' || c == ':'))
			return false;
	}
	return true;
}

static char *arena_strndup(proto_arena *a, const char *s, size_t n)
{
	char *c = proto_arena_alloc(a, n + 1);
	if (c) {
		memcpy(c, s, n);
		c[n] = '\0';
	}
	return c;
}

/* "<listener>://<host>:<port>", host possibly "[v6]" or empty. */
static int parse_endpoint(const char *s, proto_arena *a, ctl_zkj_endpoint *ep)
{
	const char *sep = strstr(s, "://");
	if (!sep || !valid_listener(s, (size_t)(sep - s)))
		return -EINVAL;
	const char *hp = sep + 3, *host, *colon;
	size_t hostlen;
	if (*hp == '[') {
		const char *close = strchr(hp, ']');
		if (!close || close[1] != ':')
			return -EINVAL;
		host = hp + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return -EINVAL;
		host = hp;
		hostlen = (size_t)(colon - hp);
	}
	if (!valid_host(host, hostlen))
		return -EINVAL;
	int64_t port;
	if (parse_dec(colon + 1, strlen(colon + 1), false, 0, 65535, &port) < 0)
		return -EINVAL;
	ep->listener = arena_strndup(a, s, (size_t)(sep - s));
	ep->host = arena_strndup(a, host, hostlen);
	if (!ep->listener || !ep->host)
		return -ENOMEM;
	ep->port = (int32_t)port;
	return 0;
}

int ctl_zkj_broker_encode(const ctl_zkj_broker *b, char **out, size_t *len)
{
	*out = NULL;
	if (b->nendpoints < 0 || (b->nendpoints > 0 && !b->endpoints))
		return -EINVAL;
	const ctl_zkj_endpoint *plain = NULL;
	for (int32_t i = 0; i < b->nendpoints; i++) {
		const ctl_zkj_endpoint *e = &b->endpoints[i];
		if (!e->listener || !e->security_protocol || !e->host ||
		    !valid_listener(e->listener, strlen(e->listener)) ||
		    !known_protocol(e->security_protocol) || !valid_host(e->host, strlen(e->host)) ||
		    e->port < 0 || e->port > 65535)
			return -EINVAL;
		for (int32_t j = 0; j < i; j++)
			if (strcmp(b->endpoints[j].listener, e->listener) == 0)
				return -EINVAL;
		if (!plain && strcmp(e->security_protocol, "PLAINTEXT") == 0)
			plain = e;
	}
	if (b->timestamp < 0)
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "features");
	ctl_json_w_obj_begin(&w);
	ctl_json_w_obj_end(&w);
	ctl_json_w_key(&w, "listener_security_protocol_map");
	ctl_json_w_obj_begin(&w);
	for (int32_t i = 0; i < b->nendpoints; i++) {
		ctl_json_w_key(&w, b->endpoints[i].listener);
		ctl_json_w_str(&w, b->endpoints[i].security_protocol);
	}
	ctl_json_w_obj_end(&w);
	ctl_json_w_key(&w, "endpoints");
	ctl_json_w_arr_begin(&w);
	for (int32_t i = 0; i < b->nendpoints; i++) {
		const ctl_zkj_endpoint *e = &b->endpoints[i];
		char s[512];
		bool v6 = strchr(e->host, ':') != NULL;
		int n = snprintf(s, sizeof(s), "%s://%s%s%s:%d", e->listener, v6 ? "[" : "", e->host,
				 v6 ? "]" : "", e->port);
		if (n < 0 || (size_t)n >= sizeof(s)) {
			ctl_json_w_discard(&w);
			return -EINVAL;
		}
		ctl_json_w_str(&w, s);
	}
	ctl_json_w_arr_end(&w);
	if (b->rack) {
		ctl_json_w_key(&w, "rack");
		ctl_json_w_str(&w, b->rack);
	}
	ctl_json_w_key(&w, "jmx_port");
	ctl_json_w_int(&w, b->jmx_port);
	ctl_json_w_key(&w, "port");
	ctl_json_w_int(&w, plain ? plain->port : -1);
	ctl_json_w_key(&w, "host");
	if (plain)
		ctl_json_w_str(&w, plain->host);
	else
		ctl_json_w_null(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 5);
	ctl_json_w_key(&w, "timestamp");
	w_dec_str(&w, b->timestamp);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_broker_decode(const char *data, int len, proto_arena *a, ctl_zkj_broker *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->port = -1;
	if (get_i32(&d, 0, "version", 1, true, &out->version) < 0 || out->version > 5)
		return -EINVAL;
	if (get_i32(&d, 0, "jmx_port", INT32_MIN, true, &out->jmx_port) < 0)
		return -EINVAL;
	bool v1 = out->version == 1;
	if ((rc = get_str(&d, 0, "host", a, v1, !v1, &out->host)) < 0)
		return rc;
	if (get_i32(&d, 0, "port", -1, v1, &out->port) < 0)
		return -EINVAL;
	if (v1 && (!out->host || out->port < 0 || out->port > 65535))
		return -EINVAL;
	out->timestamp = -1;
	if ((rc = get_dec_str(&d, 0, "timestamp", a, false, 0, INT64_MAX, &out->timestamp)) < 0)
		return rc;
	if ((rc = get_str(&d, 0, "rack", a, false, true, &out->rack)) < 0)
		return rc;
	int f = ctl_json_get(&d, 0, "features");
	if (f >= 0 && ctl_json_type_of(&d, f) != CTL_JSON_OBJECT)
		return -EINVAL;

	if (v1) {
		out->endpoints = proto_arena_alloc(a, sizeof(*out->endpoints));
		if (!out->endpoints)
			return -ENOMEM;
		out->endpoints[0] = (ctl_zkj_endpoint){ .listener = "PLAINTEXT",
							.security_protocol = "PLAINTEXT",
							.host = out->host,
							.port = out->port };
		out->nendpoints = 1;
		return 0;
	}
	int m = ctl_json_get(&d, 0, "listener_security_protocol_map");
	if (m >= 0 && ctl_json_type_of(&d, m) != CTL_JSON_OBJECT)
		return -EINVAL;
	int eps = ctl_json_get(&d, 0, "endpoints");
	if (eps < 0 || ctl_json_type_of(&d, eps) != CTL_JSON_ARRAY)
		return -EINVAL;
	uint32_t n = d.tok[eps].count;
	out->endpoints = proto_arena_alloc(a, (size_t)n * sizeof(*out->endpoints));
	if (!out->endpoints)
		return -ENOMEM;
	int e = ctl_json_first(&d, eps);
	for (uint32_t i = 0; i < n; i++, e = ctl_json_next(&d, e)) {
		ctl_zkj_endpoint *ep = &out->endpoints[i];
		const char *s;
		if ((rc = ctl_json_str(&d, e, a, &s, NULL)) < 0)
			return rc;
		if ((rc = parse_endpoint(s, a, ep)) < 0)
			return rc;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(out->endpoints[j].listener, ep->listener) == 0)
				return -EINVAL;
		if (m >= 0) {
			int p = ctl_json_get(&d, m, ep->listener);
			if (p < 0 || (rc = ctl_json_str(&d, p, a, &ep->security_protocol, NULL)) < 0)
				return p < 0 ? -EINVAL : rc;
		} else
			ep->security_protocol = ep->listener;
		if (!known_protocol(ep->security_protocol))
			return -EINVAL;
	}
	out->nendpoints = (int32_t)n;
	return 0;
}

/* ---- /controller ---- */

int ctl_zkj_controller_encode(const ctl_zkj_controller *c, char **out, size_t *len)
{
	*out = NULL;
	if (c->broker_id < 0 || c->timestamp < 0)
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "brokerid");
	ctl_json_w_int(&w, c->broker_id);
	ctl_json_w_key(&w, "timestamp");
	w_dec_str(&w, c->timestamp);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_controller_decode(const char *data, int len, proto_arena *a, ctl_zkj_controller *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->timestamp = -1;
	out->kraft_controller_epoch = -1;
	if (get_i32(&d, 0, "version", 1, true, &out->version) < 0 || out->version > 2)
		return -EINVAL;
	if (get_i32(&d, 0, "brokerid", 0, true, &out->broker_id) < 0)
		return -EINVAL;
	if ((rc = get_dec_str(&d, 0, "timestamp", a, false, 0, INT64_MAX, &out->timestamp)) < 0)
		return rc;
	if (out->version >= 2 &&
	    get_i32(&d, 0, "kraftControllerEpoch", -1, false, &out->kraft_controller_epoch) < 0)
		return -EINVAL;
	return 0;
}

/* ---- /controller_epoch ---- */

int ctl_zkj_controller_epoch_encode(int32_t epoch, char **out, size_t *len)
{
	char b[16];
	int n = snprintf(b, sizeof(b), "%" PRId32, epoch);
	*out = malloc((size_t)n + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, b, (size_t)n + 1);
	if (len)
		*len = (size_t)n;
	return 0;
}

int ctl_zkj_controller_epoch_decode(const char *data, int len, int32_t *epoch)
{
	int64_t v;
	if (!data || len <= 0 || parse_dec(data, (size_t)len, true, INT32_MIN, INT32_MAX, &v) < 0)
		return -EINVAL;
	*epoch = (int32_t)v;
	return 0;
}

/* ---- /brokers/topics/<topic> ---- */

/* Decimal text of 0..n-1, for the partitions maps. */
static int partition_names(int32_t n, char ***names)
{
	char **v = malloc((size_t)n * sizeof(*v) + (size_t)n * 12);
	if (!v)
		return -ENOMEM;
	char *text = (char *)(v + n);
	for (int32_t i = 0; i < n; i++) {
		v[i] = text + (size_t)i * 12;
		snprintf(v[i], 12, "%" PRId32, i);
	}
	*names = v;
	return 0;
}

/* One partitions map: the partitions p (in Scala's order) with which(p)
 * non-empty. */
static int w_partition_map(ctl_json_w *w, const ctl_zkj_topic *t, char **names, int which)
{
	int32_t n = 0;
	const char **keys = calloc((size_t)t->npartitions, sizeof(*keys));
	int32_t *idx = malloc((size_t)t->npartitions * sizeof(*idx));
	uint32_t *order = malloc((size_t)t->npartitions * sizeof(*order));
	int rc = 0;
	if (!keys || !idx || !order) {
		rc = -ENOMEM;
		goto out;
	}
	for (int32_t p = 0; p < t->npartitions; p++) {
		const ctl_zkj_assignment *as = &t->partitions[p];
		int32_t cnt = which == 0 ? as->nreplicas : which == 1 ? as->nadding : as->nremoving;
		if (cnt > 0) {
			keys[n] = names[p];
			idx[n++] = p;
		}
	}
	if ((rc = map_order(keys, (uint32_t)n, false, order)) < 0)
		goto out;
	ctl_json_w_obj_begin(w);
	for (int32_t i = 0; i < n; i++) {
		const ctl_zkj_assignment *as = &t->partitions[idx[order[i]]];
		ctl_json_w_key(w, keys[order[i]]);
		if (which == 0)
			w_id_list(w, as->replicas, as->nreplicas);
		else if (which == 1)
			w_id_list(w, as->adding, as->nadding);
		else
			w_id_list(w, as->removing, as->nremoving);
	}
	ctl_json_w_obj_end(w);
out:
	free(keys);
	free(idx);
	free(order);
	return rc;
}

static bool valid_list(const int32_t *ids, int32_t n, bool allow_empty)
{
	if (n < 0 || (n == 0 && !allow_empty) || (n > 0 && !ids))
		return false;
	for (int32_t i = 0; i < n; i++) {
		if (ids[i] < 0)
			return false;
		for (int32_t j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return false;
	}
	return true;
}

int ctl_zkj_topic_encode(const ctl_zkj_topic *t, char **out, size_t *len)
{
	*out = NULL;
	if (!t->has_topic_id || t->npartitions < 1 || !t->partitions)
		return -EINVAL;
	for (int32_t p = 0; p < t->npartitions; p++) {
		const ctl_zkj_assignment *as = &t->partitions[p];
		if (!valid_list(as->replicas, as->nreplicas, false) ||
		    !valid_list(as->adding, as->nadding, true) ||
		    !valid_list(as->removing, as->nremoving, true))
			return -EINVAL;
	}
	char **names;
	int rc = partition_names(t->npartitions, &names);
	if (rc < 0)
		return rc;
	char id[23];
	logdir_uuid_to_string(t->topic_id, id);
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "partitions");
	rc = w_partition_map(&w, t, names, 0);
	ctl_json_w_key(&w, "topic_id");
	ctl_json_w_str(&w, id);
	ctl_json_w_key(&w, "adding_replicas");
	if (rc == 0)
		rc = w_partition_map(&w, t, names, 1);
	ctl_json_w_key(&w, "removing_replicas");
	if (rc == 0)
		rc = w_partition_map(&w, t, names, 2);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 3);
	ctl_json_w_obj_end(&w);
	free(names);
	if (rc < 0) {
		ctl_json_w_discard(&w);
		return rc;
	}
	return ctl_json_w_finish(&w, out, len);
}

/* A partitions map name: canonical decimal below n. */
static int partition_of(const ctl_json *d, int k, proto_arena *a, int32_t n, int32_t *p)
{
	const char *s;
	size_t len;
	int64_t v;
	int rc = ctl_json_str(d, k, a, &s, &len);
	if (rc < 0)
		return rc;
	if (parse_dec(s, len, false, 0, (int64_t)n - 1, &v) < 0)
		return -EINVAL;
	*p = (int32_t)v;
	return 0;
}

/* adding_replicas or removing_replicas (optional objects). */
static int read_changing(const ctl_json *d, const char *key, proto_arena *a, ctl_zkj_topic *t,
			 bool adding)
{
	int m = ctl_json_get(d, 0, key);
	if (m < 0)
		return 0;
	if (ctl_json_type_of(d, m) != CTL_JSON_OBJECT)
		return -EINVAL;
	int k = ctl_json_first(d, m);
	for (uint32_t i = 0; i < d->tok[m].count; i++, k = ctl_json_next_member(d, k)) {
		int32_t p;
		int rc = partition_of(d, k, a, t->npartitions, &p);
		if (rc < 0)
			return rc;
		ctl_zkj_assignment *as = &t->partitions[p];
		rc = adding ? read_id_list(d, k + 1, a, true, &as->adding, &as->nadding)
			    : read_id_list(d, k + 1, a, true, &as->removing, &as->nremoving);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int ctl_zkj_topic_decode(const char *data, int len, proto_arena *a, ctl_zkj_topic *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	if (get_i32(&d, 0, "version", 1, true, &out->version) < 0 || out->version > 3)
		return -EINVAL;
	int id = ctl_json_get(&d, 0, "topic_id");
	if (id >= 0) {
		const char *s;
		if ((rc = ctl_json_str(&d, id, a, &s, NULL)) < 0)
			return rc;
		if (logdir_uuid_from_string(s, out->topic_id) < 0)
			return -EINVAL;
		out->has_topic_id = true;
	}
	int m = ctl_json_get(&d, 0, "partitions");
	if (m < 0 || ctl_json_type_of(&d, m) != CTL_JSON_OBJECT)
		return -EINVAL;
	uint32_t n = d.tok[m].count;
	if (n == 0 || n > INT32_MAX)
		return -EINVAL;
	out->npartitions = (int32_t)n;
	out->partitions = proto_arena_alloc(a, (size_t)n * sizeof(*out->partitions));
	if (!out->partitions)
		return -ENOMEM;
	int k = ctl_json_first(&d, m);
	for (uint32_t i = 0; i < n; i++, k = ctl_json_next_member(&d, k)) {
		int32_t p;
		if ((rc = partition_of(&d, k, a, out->npartitions, &p)) < 0)
			return rc;
		ctl_zkj_assignment *as = &out->partitions[p];
		if (as->replicas)
			return -EINVAL; /* "1" and "01" are refused, so a repeat is a gap */
		if ((rc = read_id_list(&d, k + 1, a, false, &as->replicas, &as->nreplicas)) < 0)
			return rc;
	}
	if ((rc = read_changing(&d, "adding_replicas", a, out, true)) < 0)
		return rc;
	return read_changing(&d, "removing_replicas", a, out, false);
}

/* ---- partition state ---- */

int ctl_zkj_partition_state_encode(const ctl_zkj_partition_state *s, char **out, size_t *len)
{
	*out = NULL;
	if (s->leader < -1 || s->leader_epoch < 0 || s->controller_epoch < 0 ||
	    !valid_list(s->isr, s->nisr, true) ||
	    (s->leader_recovery_state != 0 && s->leader_recovery_state != 1))
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "controller_epoch");
	ctl_json_w_int(&w, s->controller_epoch);
	ctl_json_w_key(&w, "leader");
	ctl_json_w_int(&w, s->leader);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	if (s->leader_recovery_state) {
		ctl_json_w_key(&w, "leader_recovery_state");
		ctl_json_w_int(&w, s->leader_recovery_state);
	}
	ctl_json_w_key(&w, "leader_epoch");
	ctl_json_w_int(&w, s->leader_epoch);
	ctl_json_w_key(&w, "isr");
	w_id_list(&w, s->isr, s->nisr);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_partition_state_decode(const char *data, int len, proto_arena *a,
				   ctl_zkj_partition_state *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	int32_t version = 0;
	if (get_i32(&d, 0, "version", 1, true, &version) < 0 || version != 1)
		return -EINVAL;
	if (get_i32(&d, 0, "controller_epoch", 0, true, &out->controller_epoch) < 0 ||
	    get_i32(&d, 0, "leader", -1, true, &out->leader) < 0 ||
	    get_i32(&d, 0, "leader_epoch", 0, true, &out->leader_epoch) < 0)
		return -EINVAL;
	if (get_i32(&d, 0, "leader_recovery_state", 0, false, &out->leader_recovery_state) < 0 ||
	    out->leader_recovery_state > 1)
		return -EINVAL;
	int isr = ctl_json_get(&d, 0, "isr");
	if (isr < 0)
		return -EINVAL;
	return read_id_list(&d, isr, a, true, &out->isr, &out->nisr);
}

/* ---- /config/<type>/<name> ---- */

int ctl_zkj_config_encode(const ctl_zkj_config *c, char **out, size_t *len)
{
	*out = NULL;
	if (c->nentries < 0 || (c->nentries > 0 && !c->entries))
		return -EINVAL;
	uint32_t n = (uint32_t)c->nentries;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	int rc = 0;
	if (!keys || !order) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!c->entries[i].name || !c->entries[i].value) {
			rc = -EINVAL;
			goto out;
		}
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(c->entries[j].name, c->entries[i].name) == 0) {
				rc = -EINVAL;
				goto out;
			}
		keys[i] = c->entries[i].name;
	}
	if ((rc = map_order(keys, n, true, order)) < 0)
		goto out;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "config");
	ctl_json_w_obj_begin(&w);
	for (uint32_t i = 0; i < n; i++) {
		ctl_json_w_key(&w, c->entries[order[i]].name);
		ctl_json_w_str(&w, c->entries[order[i]].value);
	}
	ctl_json_w_obj_end(&w);
	ctl_json_w_obj_end(&w);
	rc = ctl_json_w_finish(&w, out, len);
out:
	free(keys);
	free(order);
	return rc;
}

int ctl_zkj_config_decode(const char *data, int len, proto_arena *a, ctl_zkj_config *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	int32_t version = 0;
	if (get_i32(&d, 0, "version", 1, true, &version) < 0 || version != 1)
		return -EINVAL;
	int m = ctl_json_get(&d, 0, "config");
	if (m < 0 || ctl_json_type_of(&d, m) != CTL_JSON_OBJECT)
		return -EINVAL;
	uint32_t n = d.tok[m].count;
	out->entries = proto_arena_alloc(a, (size_t)n * sizeof(*out->entries));
	if (!out->entries)
		return -ENOMEM;
	int k = ctl_json_first(&d, m);
	for (uint32_t i = 0; i < n; i++, k = ctl_json_next_member(&d, k)) {
		if ((rc = ctl_json_str(&d, k, a, &out->entries[i].name, NULL)) < 0 ||
		    (rc = ctl_json_str(&d, k + 1, a, &out->entries[i].value, NULL)) < 0)
			return rc;
	}
	out->nentries = (int32_t)n;
	return 0;
}

/* ---- /config/changes/config_change_<seq> ---- */

int ctl_zkj_config_change_encode(const char *entity_type, const char *entity_name, char **out,
				 size_t *len)
{
	*out = NULL;
	if (!entity_type || !entity_name || !*entity_type || !*entity_name ||
	    strchr(entity_type, '/'))
		return -EINVAL;
	size_t n = strlen(entity_type) + 1 + strlen(entity_name) + 1;
	char *path = malloc(n);
	if (!path)
		return -ENOMEM;
	snprintf(path, n, "%s/%s", entity_type, entity_name);
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 2);
	ctl_json_w_key(&w, "entity_path");
	ctl_json_w_str(&w, path);
	ctl_json_w_obj_end(&w);
	free(path);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_config_change_decode(const char *data, int len, proto_arena *a,
				 ctl_zkj_config_change *out)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	if (get_i32(&d, 0, "version", 1, true, &out->version) < 0 || out->version > 2)
		return -EINVAL;
	if (out->version == 1) {
		if ((rc = get_str(&d, 0, "entity_type", a, true, false, &out->entity_type)) < 0 ||
		    (rc = get_str(&d, 0, "entity_name", a, true, false, &out->entity_name)) < 0)
			return rc;
	} else {
		const char *path;
		if ((rc = get_str(&d, 0, "entity_path", a, true, false, &path)) < 0)
			return rc;
		const char *slash = strchr(path, '/');
		if (!slash)
			return -EINVAL;
		char *type = arena_strndup(a, path, (size_t)(slash - path));
		if (!type)
			return -ENOMEM;
		out->entity_type = type;
		out->entity_name = slash + 1;
	}
	if (!*out->entity_type || !*out->entity_name)
		return -EINVAL;
	return 0;
}

/* ---- /latest_producer_id_block ---- */

int ctl_zkj_pid_block_encode(const ctl_zkj_pid_block *b, char **out, size_t *len)
{
	*out = NULL;
	if (b->broker < 0 || b->block_start < 0 || b->block_end < b->block_start)
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "broker");
	ctl_json_w_int(&w, b->broker);
	ctl_json_w_key(&w, "block_start");
	w_dec_str(&w, b->block_start);
	ctl_json_w_key(&w, "block_end");
	w_dec_str(&w, b->block_end);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_pid_block_decode(const char *data, int len, ctl_zkj_pid_block *out)
{
	/* the strings are small: a local arena keeps the signature arena-free */
	proto_arena a;
	proto_arena_init(&a, 0);
	ctl_json d;
	int rc = open_object(data, len, &a, &d);
	int32_t version = 0;
	memset(out, 0, sizeof(*out));
	if (rc == 0 && (get_i32(&d, 0, "version", 1, true, &version) < 0 || version != 1 ||
			get_i32(&d, 0, "broker", 0, true, &out->broker) < 0))
		rc = -EINVAL;
	if (rc == 0)
		rc = get_dec_str(&d, 0, "block_start", &a, true, 0, INT64_MAX, &out->block_start);
	if (rc == 0)
		rc = get_dec_str(&d, 0, "block_end", &a, true, 0, INT64_MAX, &out->block_end);
	/* Kafka takes end - start + 1 as an int (Math.toIntExact) */
	if (rc == 0 && (out->block_end < out->block_start ||
			out->block_end - out->block_start >= INT32_MAX))
		rc = -EINVAL;
	proto_arena_free(&a);
	return rc;
}

/* ---- /cluster/id ---- */

int ctl_zkj_cluster_id_encode(const char *id, char **out, size_t *len)
{
	*out = NULL;
	if (!id || !*id)
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_str(&w, "1");
	ctl_json_w_key(&w, "id");
	ctl_json_w_str(&w, id);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_cluster_id_decode(const char *data, int len, proto_arena *a, const char **id)
{
	ctl_json d;
	const char *version;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	/* Kafka reads only "id"; a version, when there, is the string "1" */
	if ((rc = get_str(&d, 0, "version", a, false, false, &version)) < 0)
		return rc;
	if (rc == 0 && strcmp(version, "1") != 0)
		return -EINVAL;
	if ((rc = get_str(&d, 0, "id", a, true, false, id)) < 0)
		return rc;
	return **id ? 0 : -EINVAL;
}

/* {"version":1,"partitions":[{"topic":..,"partition":..},...]}, the
 * layout of an ISR change notification and of a preferred replica election;
 * version_required: a missing "version" is an error (else read as 1). */
static int topic_partitions_decode(const char *data, int len, proto_arena *a,
				   bool version_required, ctl_zkj_topic_partition **out, int32_t *n)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	int32_t version = 1;
	if (get_i32(&d, 0, "version", 1, version_required, &version) < 0 || version != 1)
		return -EINVAL;
	int arr = ctl_json_get(&d, 0, "partitions");
	if (arr < 0 || ctl_json_type_of(&d, arr) != CTL_JSON_ARRAY)
		return -EINVAL;
	uint32_t count = d.tok[arr].count;
	ctl_zkj_topic_partition *tp = proto_arena_alloc(a, (size_t)(count ? count : 1) * sizeof(*tp));
	if (!tp)
		return -ENOMEM;
	int e = ctl_json_first(&d, arr);
	for (uint32_t i = 0; i < count; i++, e = ctl_json_next(&d, e)) {
		if (ctl_json_type_of(&d, e) != CTL_JSON_OBJECT)
			return -EINVAL;
		if ((rc = get_str(&d, e, "topic", a, true, false, &tp[i].topic)) < 0)
			return rc;
		if (!*tp[i].topic || get_i32(&d, e, "partition", 0, true, &tp[i].partition) < 0)
			return -EINVAL;
	}
	*out = tp;
	*n = (int32_t)count;
	return 0;
}

/* ---- /admin/preferred_replica_election (PreferredReplicaElectionZNode) ---- */

int ctl_zkj_preferred_election_encode(const ctl_zkj_topic_partition *p, int32_t n, char **out,
				      size_t *len)
{
	/* Kafka writes the layout of an ISR change notification */
	return ctl_zkj_isr_change_encode(p, n, out, len);
}

int ctl_zkj_preferred_election_decode(const char *data, int len, proto_arena *a,
				      ctl_zkj_topic_partition **out, int32_t *n)
{
	/* the same layout; a znode written by hand without "version" is read
	 * as Kafka reads it (version 1) */
	return topic_partitions_decode(data, len, a, false, out, n);
}

/* ---- /isr_change_notification/isr_change_<seq> ---- */

int ctl_zkj_isr_change_encode(const ctl_zkj_topic_partition *p, int32_t n, char **out,
			      size_t *len)
{
	*out = NULL;
	if (n < 0 || (n > 0 && !p))
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "partitions");
	ctl_json_w_arr_begin(&w);
	for (int32_t i = 0; i < n; i++) {
		if (!p[i].topic || !*p[i].topic || p[i].partition < 0) {
			ctl_json_w_discard(&w);
			return -EINVAL;
		}
		ctl_json_w_obj_begin(&w);
		ctl_json_w_key(&w, "topic");
		ctl_json_w_str(&w, p[i].topic);
		ctl_json_w_key(&w, "partition");
		ctl_json_w_int(&w, p[i].partition);
		ctl_json_w_obj_end(&w);
	}
	ctl_json_w_arr_end(&w);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_isr_change_decode(const char *data, int len, proto_arena *a,
			      ctl_zkj_topic_partition **out, int32_t *n)
{
	return topic_partitions_decode(data, len, a, true, out, n);
}

/* ---- /admin/reassign_partitions ---- */

int ctl_zkj_reassign_encode(const ctl_zkj_reassignment *r, int32_t n, char **out, size_t *len)
{
	*out = NULL;
	if (n < 0 || (n > 0 && !r))
		return -EINVAL;
	ctl_json_w w;
	ctl_json_w_init(&w);
	ctl_json_w_obj_begin(&w);
	ctl_json_w_key(&w, "version");
	ctl_json_w_int(&w, 1);
	ctl_json_w_key(&w, "partitions");
	ctl_json_w_arr_begin(&w);
	for (int32_t i = 0; i < n; i++) {
		bool ok = r[i].topic && *r[i].topic && r[i].partition >= 0 && r[i].nreplicas >= 0 &&
			  (r[i].nreplicas == 0 || r[i].replicas);
		for (int32_t k = 0; ok && k < r[i].nreplicas; k++)
			ok = r[i].replicas[k] >= 0;
		if (!ok) {
			ctl_json_w_discard(&w);
			return -EINVAL;
		}
		ctl_json_w_obj_begin(&w);
		ctl_json_w_key(&w, "topic");
		ctl_json_w_str(&w, r[i].topic);
		ctl_json_w_key(&w, "partition");
		ctl_json_w_int(&w, r[i].partition);
		ctl_json_w_key(&w, "replicas");
		w_id_list(&w, r[i].replicas, r[i].nreplicas);
		ctl_json_w_obj_end(&w);
	}
	ctl_json_w_arr_end(&w);
	ctl_json_w_obj_end(&w);
	return ctl_json_w_finish(&w, out, len);
}

int ctl_zkj_reassign_decode(const char *data, int len, proto_arena *a,
			    ctl_zkj_reassignment **out, int32_t *n)
{
	ctl_json d;
	int rc = open_object(data, len, a, &d);
	if (rc < 0)
		return rc;
	int32_t version = 0;
	if (get_i32(&d, 0, "version", 1, true, &version) < 0 || version != 1)
		return -EINVAL;
	int arr = ctl_json_get(&d, 0, "partitions");
	if (arr < 0 || ctl_json_type_of(&d, arr) != CTL_JSON_ARRAY)
		return -EINVAL;
	uint32_t count = d.tok[arr].count;
	if (count > INT32_MAX)
		return -EINVAL;
	ctl_zkj_reassignment *r = proto_arena_alloc(a, (size_t)count * sizeof(*r) + 1);
	if (!r)
		return -ENOMEM;
	int e = ctl_json_first(&d, arr);
	for (uint32_t i = 0; i < count; i++, e = ctl_json_next(&d, e)) {
		if (ctl_json_type_of(&d, e) != CTL_JSON_OBJECT)
			return -EINVAL;
		if ((rc = get_str(&d, e, "topic", a, true, false, &r[i].topic)) < 0)
			return rc;
		if (!*r[i].topic || get_i32(&d, e, "partition", 0, true, &r[i].partition) < 0)
			return -EINVAL;
		int l = ctl_json_get(&d, e, "replicas");
		if (l < 0 || ctl_json_type_of(&d, l) != CTL_JSON_ARRAY || d.tok[l].count > INT32_MAX)
			return -EINVAL;
		uint32_t k = d.tok[l].count;
		r[i].replicas = proto_arena_alloc(a, (size_t)k * sizeof(int32_t) + 1);
		if (!r[i].replicas)
			return -ENOMEM;
		int t = ctl_json_first(&d, l);
		for (uint32_t j = 0; j < k; j++, t = ctl_json_next(&d, t)) {
			int64_t v;
			if (ctl_json_int(&d, t, INT32_MIN, INT32_MAX, &v) < 0)
				return -EINVAL;
			r[i].replicas[j] = (int32_t)v;
		}
		r[i].nreplicas = (int32_t)k;
	}
	*out = r;
	*n = (int32_t)count;
	return 0;
}
