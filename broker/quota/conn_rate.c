/*
 * conn_rate.c - connection creation rate quotas (conn_rate.h).
 */
#include "broker/quota/conn_rate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quota/keys.h"
#include "controller/entity.h"

/* Kafka's ConnectionQuotas: IP sensors expire after an hour unused. */
#define IP_SENSOR_EXPIRY_MS (3600 * 1000)
#define SWEEP_MS (60 * 1000)

typedef struct ip_bound {
	char key[INET6_ADDRSTRLEN]; /* the map's key */
	double bound;
} ip_bound;

typedef struct ip_sensor {
	char key[INET6_ADDRSTRLEN];
	int64_t last_ms;
	brk_quota_rate *rate;
} ip_sensor;

/* The canonical text of an IP (IPv4-mapped IPv6 as IPv4) into out;
 * false when s is no IP address. */
static bool canonical_ip(const char *s, char *out)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, s, &a4) == 1)
		return inet_ntop(AF_INET, &a4, out, INET6_ADDRSTRLEN) != NULL;
	if (inet_pton(AF_INET6, s, &a6) != 1)
		return false;
	if (IN6_IS_ADDR_V4MAPPED(&a6))
		return inet_ntop(AF_INET, a6.s6_addr + 12, out, INET6_ADDRSTRLEN) != NULL;
	return inet_ntop(AF_INET6, &a6, out, INET6_ADDRSTRLEN) != NULL;
}

/* A configured rate as a bound: Kafka's default (Int.MaxValue) is none. */
static double bound_of_rate(int64_t v)
{
	return v >= INT32_MAX || v < 0 ? -1 : (double)v;
}

static int parse_rate(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno || end == s || *end || v < 0 || v > INT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* Bound and sensor of one rate: the sensor made when a bound appears
 * (it keeps what it counted while the bound changes), freed when it goes. */
static int set_bound(const brk_conn_rate *cr, double *bound, brk_quota_rate **rate, double b)
{
	*bound = b;
	if (b < 0) {
		free(*rate);
		*rate = NULL;
	} else if (!*rate && !(*rate = brk_quota_rate_new(cr->window_num, 0))) {
		*bound = -1;
		return -ENOMEM;
	}
	return 0;
}

/* The bounds of cfg: max.connection.creation.rate and each listener's. */
static int configure(brk_conn_rate *cr, const brk_config *cfg, char *err, size_t errsize)
{
	int rc = set_bound(cr, &cr->broker_bound, &cr->broker_rate,
			   bound_of_rate(cfg->max_connection_creation_rate));
	for (int i = 0; i < cr->nlisteners && rc == 0; i++) {
		brk_conn_rate_listener *l = &cr->listeners[i];
		int64_t v = cfg->max_connection_creation_rate;
		const char *s = brk_config_security_get(cfg, l->name, "max.connection.creation.rate");
		/* security_get falls back to the key alone, which is no
		 * security key: only a listener's own setting is found */
		if (s && parse_rate(s, &v) != 0) {
			snprintf(err, errsize, "listener %s: max.connection.creation.rate \"%s\" is "
				 "not an integer from 0 to 2147483647", l->name, s);
			return -EINVAL;
		}
		rc = set_bound(cr, &l->bound, &l->rate, bound_of_rate(v));
	}
	if (rc == -ENOMEM)
		snprintf(err, errsize, "out of memory");
	return rc;
}

int brk_conn_rate_init(brk_conn_rate *cr, const brk_config *cfg, brk_client_configs *reg,
		       char *err, size_t errsize)
{
	memset(cr, 0, sizeof(*cr));
	cr->window_num = cfg->quota_window_num > 0 ? cfg->quota_window_num : 11;
	cr->window_ms = (int64_t)(cfg->quota_window_size_seconds > 0 ? cfg->quota_window_size_seconds : 1) * 1000;
	cr->ip_default = -1;
	cr->broker_bound = -1;
	brk_strmap_init(&cr->ip_bounds);
	brk_strmap_init(&cr->ip_sensors);
	for (int i = 0; i < cfg->nlisteners && i < BRK_MAX_LISTENERS; i++) {
		brk_conn_rate_listener *l = &cr->listeners[cr->nlisteners++];
		snprintf(l->name, sizeof(l->name), "%s", cfg->listeners[i].name);
		l->protected_ = cfg->nlisteners > 1 && strcmp(l->name, cfg->inter_broker_listener) == 0;
		l->bound = -1;
	}
	int rc = configure(cr, cfg, err, errsize);
	if (rc == 0 && reg)
		rc = brk_client_configs_listen(reg, brk_conn_rate_on_config, cr);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, errsize, "out of memory");
		brk_conn_rate_free(cr);
		return rc;
	}
	for (int32_t i = 0; reg && i < brk_client_configs_count(reg); i++) {
		const brk_client_config *cc = brk_client_configs_at(reg, i);
		brk_conn_rate_on_config(cr, cc->entity, cc);
	}
	return 0;
}

void brk_conn_rate_reconfigure(brk_conn_rate *cr, const brk_config *cfg)
{
	char err[256];
	if (configure(cr, cfg, err, sizeof(err)) != 0)
		fprintf(stderr, "samsa: connection creation rates: %s; the rest keep their bounds\n",
			err);
}

void brk_conn_rate_free(brk_conn_rate *cr)
{
	free(cr->broker_rate);
	cr->broker_rate = NULL;
	for (int i = 0; i < cr->nlisteners; i++) {
		free(cr->listeners[i].rate);
		cr->listeners[i].rate = NULL;
	}
	for (int32_t i = 0; i < brk_strmap_count(&cr->ip_bounds); i++)
		free(brk_strmap_at(&cr->ip_bounds, i));
	brk_strmap_free(&cr->ip_bounds);
	for (int32_t i = 0; i < brk_strmap_count(&cr->ip_sensors); i++) {
		ip_sensor *s = brk_strmap_at(&cr->ip_sensors, i);
		free(s->rate);
		free(s);
	}
	brk_strmap_free(&cr->ip_sensors);
}

void brk_conn_rate_on_config(void *arg, const char *entity, const brk_client_config *cc)
{
	brk_conn_rate *cr = arg;
	ctl_entity_ref ref;
	if (ctl_entity_parse(entity, strlen(entity), &ref) != 0 || ref.kind != CTL_ENTITY_IP)
		return;
	double bound = -1;
	const char *s = cc ? brk_client_config_value(cc, BRK_QUOTA_CONNECTION_CREATION_RATE) : NULL;
	double v;
	if (s && brk_quota_parse_value(s, &v) == 0 && v >= 0)
		bound = v >= INT32_MAX ? -1 : (double)(int64_t)v;
	if (ref.name_default) {
		cr->ip_default = bound;
		return;
	}
	char raw[INET6_ADDRSTRLEN + 64], ip[INET6_ADDRSTRLEN];
	if (ctl_entity_desanitize(ref.name, ref.name_len, raw, sizeof(raw)) < 0 ||
	    !canonical_ip(raw, ip))
		return;
	int32_t len = (int32_t)strlen(ip);
	ip_bound *old = brk_strmap_remove(&cr->ip_bounds, ip, len);
	free(old);
	if (bound < 0)
		return;
	ip_bound *b = calloc(1, sizeof(*b));
	if (!b)
		return;
	memcpy(b->key, ip, (size_t)len + 1);
	b->bound = bound;
	if (brk_strmap_put(&cr->ip_bounds, b->key, len, b) != 0)
		free(b);
}

int brk_conn_rate_listener_index(const brk_conn_rate *cr, const char *name)
{
	for (int i = 0; i < cr->nlisteners; i++)
		if (strcmp(cr->listeners[i].name, name) == 0)
			return i;
	return -1;
}

/* Record value on r with bound at now_ms (Sensor.record with the quota
 * check); the bounded throttle time, 0 within the bound. */
static int32_t record(const brk_conn_rate *cr, brk_quota_rate *r, double bound, double value,
		      int64_t now_ms)
{
	brk_quota_rate_record(r, cr->window_num, cr->window_ms, value, now_ms);
	if (value <= 0)
		return 0;
	double rate = brk_quota_rate_measure(r, cr->window_num, cr->window_ms, now_ms);
	if (rate <= bound)
		return 0;
	if (bound <= 0) /* a bound of 0: every connection waits a window */
		return (int32_t)cr->window_ms;
	int64_t win = brk_quota_rate_window(r, cr->window_num, cr->window_ms, now_ms);
	int32_t ms = brk_quota_throttle_ms(rate, bound, win);
	return ms > cr->window_ms ? (int32_t)cr->window_ms : ms;
}

int32_t brk_conn_rate_accept(brk_conn_rate *cr, int li, int64_t now_ms)
{
	brk_conn_rate_listener *l = li >= 0 && li < cr->nlisteners ? &cr->listeners[li] : NULL;
	int32_t ms = 0;
	if (cr->broker_rate && !(l && l->protected_))
		ms = record(cr, cr->broker_rate, cr->broker_bound, 1, now_ms);
	if (l && l->rate) {
		int32_t lms = record(cr, l->rate, l->bound, 1, now_ms);
		if (lms > ms)
			ms = lms;
	}
	return ms;
}

double brk_conn_rate_ip_bound(const brk_conn_rate *cr, const char *ip)
{
	const ip_bound *b = brk_strmap_get(&cr->ip_bounds, ip, (int32_t)strlen(ip));
	return b ? b->bound : cr->ip_default;
}

static void sweep(brk_conn_rate *cr, int64_t now_ms)
{
	cr->last_sweep_ms = now_ms;
	for (int32_t i = brk_strmap_count(&cr->ip_sensors) - 1; i >= 0; i--) {
		ip_sensor *s = brk_strmap_at(&cr->ip_sensors, i);
		if (now_ms - s->last_ms < IP_SENSOR_EXPIRY_MS)
			continue;
		brk_strmap_remove(&cr->ip_sensors, s->key, (int32_t)strlen(s->key));
		free(s->rate);
		free(s);
	}
}

static ip_sensor *ip_sensor_of(brk_conn_rate *cr, const char *ip, int64_t now_ms)
{
	int32_t len = (int32_t)strlen(ip);
	ip_sensor *s = brk_strmap_get(&cr->ip_sensors, ip, len);
	if (s)
		return s;
	if (now_ms - cr->last_sweep_ms >= SWEEP_MS)
		sweep(cr, now_ms);
	if ((size_t)len >= sizeof(s->key) || !(s = calloc(1, sizeof(*s))))
		return NULL;
	memcpy(s->key, ip, (size_t)len + 1);
	s->rate = brk_quota_rate_new(cr->window_num, now_ms);
	if (!s->rate || brk_strmap_put(&cr->ip_sensors, s->key, len, s) != 0) {
		free(s->rate);
		free(s);
		return NULL;
	}
	return s;
}

int32_t brk_conn_rate_ip(brk_conn_rate *cr, int li, const char *ip, int64_t now_ms)
{
	if (cr->ip_default < 0 && brk_strmap_count(&cr->ip_bounds) == 0)
		return 0;
	double bound = brk_conn_rate_ip_bound(cr, ip);
	if (bound < 0)
		return 0;
	ip_sensor *s = ip_sensor_of(cr, ip, now_ms);
	if (!s)
		return 0;
	s->last_ms = now_ms;
	int32_t ms = record(cr, s->rate, bound, 1, now_ms);
	if (ms <= 0)
		return 0;
	/* not served: taken back everywhere (updateListenerMetrics) */
	record(cr, s->rate, bound, -1, now_ms);
	brk_conn_rate_listener *l = li >= 0 && li < cr->nlisteners ? &cr->listeners[li] : NULL;
	if (cr->broker_rate && !(l && l->protected_))
		record(cr, cr->broker_rate, cr->broker_bound, -1, now_ms);
	if (l && l->rate)
		record(cr, l->rate, l->bound, -1, now_ms);
	return ms;
}
