/*
 * quota.c - client quota enforcement (quota.h).
 */
#include "broker/quota/quota.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quota/keys.h"
#include "controller/entity.h"
#include "protocol/err.h"

/* Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds. */
#define SENSOR_EXPIRY_MS (3600 * 1000)
/* How often the sensors are swept for expired ones. */
#define SWEEP_MS (60 * 1000)
/* Longest sanitized user or client id kept for a lookup. */
#define NAME_MAX_S 768

static const char *const type_keys[BRK_QUOTA_NTYPES] = {
	BRK_QUOTA_PRODUCER_BYTE_RATE, BRK_QUOTA_CONSUMER_BYTE_RATE, BRK_QUOTA_REQUEST_PERCENTAGE,
	BRK_QUOTA_CONTROLLER_MUTATION_RATE
};

typedef struct entity_bounds {
	char *entity;                     /* owned, the key */
	double bound[BRK_QUOTA_NTYPES];   /* < 0: none */
} entity_bounds;

typedef struct sensor {
	char *key; /* owned */
	int64_t last_ms;
	brk_quota_rate *rate;
	brk_quota_bucket bucket; /* BRK_QUOTA_CONTROLLER_MUTATION */
} sensor;

/* ---- the rate (Kafka's SampledStat and Rate) ---- */

brk_quota_rate *brk_quota_rate_new(int32_t window_num, int64_t now_ms)
{
	brk_quota_rate *r = calloc(1, sizeof(*r) + (size_t)window_num * sizeof(r->s[0]));
	if (!r)
		return NULL;
	r->nsamples = 1;
	r->current = 0;
	r->s[0].start_ms = now_ms;
	return r;
}

static void purge(brk_quota_rate *r, int32_t window_num, int64_t window_ms, int64_t now_ms)
{
	int64_t expire = (int64_t)window_num * window_ms;
	for (int32_t i = 0; i < r->nsamples; i++)
		if (now_ms - r->s[i].start_ms >= expire) {
			r->s[i].value = 0;
			r->s[i].events = 0;
			r->s[i].start_ms = now_ms;
		}
}

void brk_quota_rate_record(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			   double value, int64_t now_ms)
{
	brk_quota_sample *cur = &r->s[r->current];
	if (now_ms - cur->start_ms >= window_ms) {
		/* SampledStat.advance */
		r->current = (r->current + 1) % window_num;
		if (r->current >= r->nsamples)
			r->nsamples = r->current + 1;
		cur = &r->s[r->current];
		cur->value = 0;
		cur->events = 0;
		cur->start_ms = now_ms;
	}
	cur->value += value;
	cur->events++;
}

int64_t brk_quota_rate_window(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			      int64_t now_ms)
{
	purge(r, window_num, window_ms, now_ms);
	int64_t oldest = r->s[0].start_ms;
	for (int32_t i = 1; i < r->nsamples; i++)
		if (r->s[i].start_ms < oldest)
			oldest = r->s[i].start_ms;
	int64_t elapsed = now_ms - oldest;
	int64_t full = elapsed / window_ms;
	int64_t min_full = window_num - 1;
	if (full < min_full)
		elapsed += (min_full - full) * window_ms;
	return elapsed > 1 ? elapsed : 1;
}

double brk_quota_rate_measure(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			      int64_t now_ms)
{
	purge(r, window_num, window_ms, now_ms);
	double total = 0;
	for (int32_t i = 0; i < r->nsamples; i++)
		total += r->s[i].value;
	return total / ((double)brk_quota_rate_window(r, window_num, window_ms, now_ms) / 1000.0);
}

int32_t brk_quota_throttle_ms(double rate, double bound, int64_t window_ms)
{
	if (!(rate > bound) || !(bound > 0))
		return 0;
	double t = (rate - bound) / bound * (double)window_ms;
	if (t > INT32_MAX)
		return INT32_MAX;
	return (int32_t)(t + 0.5);
}

/* ---- the token bucket (Kafka's TokenBucket, KIP-599) ---- */

static void refill(brk_quota_bucket *b, double bound, double burst, int64_t now_ms)
{
	double t = b->tokens + bound * (double)(now_ms - b->last_ms) / 1000.0;
	b->tokens = t < burst ? t : burst;
	b->last_ms = now_ms;
}

void brk_quota_bucket_record(brk_quota_bucket *b, double bound, double burst, double value,
			     int64_t now_ms)
{
	refill(b, bound, burst, now_ms);
	double t = b->tokens - value;
	b->tokens = t < burst ? t : burst;
}

double brk_quota_bucket_measure(brk_quota_bucket *b, double bound, double burst, int64_t now_ms)
{
	refill(b, bound, burst, now_ms);
	return b->tokens;
}

/* ---- bounds from the client configs ---- */

static void bounds_free(entity_bounds *b)
{
	if (b) {
		free(b->entity);
		free(b);
	}
}

static void count(brk_quotas *q, const entity_bounds *b, int sign)
{
	for (int t = 0; t < BRK_QUOTA_NTYPES; t++)
		if (b->bound[t] >= 0)
			q->nbound[t] += sign;
}

void brk_quotas_on_config(void *arg, const char *entity, const brk_client_config *cc)
{
	brk_quotas *q = arg;
	ctl_entity_ref ref;
	int32_t len = (int32_t)strlen(entity);
	if (ctl_entity_parse(entity, (size_t)len, &ref) != 0 || ref.kind == CTL_ENTITY_IP)
		return;
	entity_bounds *old = brk_strmap_remove(&q->bounds, entity, len);
	if (old) {
		count(q, old, -1);
		bounds_free(old);
	}
	if (!cc)
		return;
	entity_bounds *b = calloc(1, sizeof(*b));
	if (!b || !(b->entity = strdup(entity))) {
		bounds_free(b);
		return;
	}
	bool any = false;
	for (int t = 0; t < BRK_QUOTA_NTYPES; t++) {
		double v;
		const char *s = brk_client_config_value(cc, type_keys[t]);
		b->bound[t] = s && brk_quota_parse_value(s, &v) == 0 && v > 0 ? v : -1;
		any = any || b->bound[t] >= 0;
	}
	if (!any || brk_strmap_put(&q->bounds, b->entity, len, b) != 0) {
		bounds_free(b);
		return;
	}
	count(q, b, +1);
}

int brk_quotas_init(brk_quotas *q, int32_t window_num, int32_t window_seconds,
		    brk_client_configs *reg)
{
	memset(q, 0, sizeof(*q));
	q->window_num = window_num > 0 ? window_num : 11;
	q->window_ms = (int64_t)(window_seconds > 0 ? window_seconds : 1) * 1000;
	brk_quotas_set_controller_window(q, 11, 1);
	brk_strmap_init(&q->bounds);
	brk_strmap_init(&q->sensors);
	if (!reg)
		return 0;
	int rc = brk_client_configs_listen(reg, brk_quotas_on_config, q);
	if (rc)
		return rc;
	for (int32_t i = 0; i < brk_client_configs_count(reg); i++) {
		const brk_client_config *cc = brk_client_configs_at(reg, i);
		brk_quotas_on_config(q, cc->entity, cc);
	}
	return 0;
}

void brk_quotas_set_controller_window(brk_quotas *q, int32_t window_num, int32_t window_seconds)
{
	q->ctl_window_num = window_num > 0 ? window_num : 11;
	q->ctl_window_ms = (int64_t)(window_seconds > 0 ? window_seconds : 1) * 1000;
}

void brk_quotas_free(brk_quotas *q)
{
	for (int32_t i = 0; i < brk_strmap_count(&q->bounds); i++)
		bounds_free(brk_strmap_at(&q->bounds, i));
	brk_strmap_free(&q->bounds);
	for (int32_t i = 0; i < brk_strmap_count(&q->sensors); i++) {
		sensor *s = brk_strmap_at(&q->sensors, i);
		free(s->key);
		free(s->rate);
		free(s);
	}
	brk_strmap_free(&q->sensors);
}

/* ---- resolution (KIP-55, Kafka's DefaultQuotaCallback) ---- */

static double bound_of(const brk_quotas *q, brk_quota_type t, const char *path, int len)
{
	if (len <= 0)
		return -1;
	const entity_bounds *b = brk_strmap_get(&q->bounds, path, len);
	return b ? b->bound[t] : -1;
}

typedef struct resolved {
	double bound;        /* < 0: none */
	bool user_tag;       /* the sensor's tags: (user?, client?) */
	bool client_tag;
} resolved;

/* u, c: the sanitized user and client id (c may be "": the empty id). */
static resolved resolve(const brk_quotas *q, brk_quota_type t, const char *u, const char *c)
{
	char p[2 * NAME_MAX_S + 32];
	int n;
	resolved r = { -1, true, true };
#define TRY(user_tag_, client_tag_, ...)                                   \
	do {                                                                   \
		n = snprintf(p, sizeof(p), __VA_ARGS__);                       \
		double b_ = n > 0 && (size_t)n < sizeof(p) ? bound_of(q, t, p, n) : -1; \
		if (b_ >= 0) {                                                 \
			r.bound = b_;                                          \
			r.user_tag = user_tag_;                                \
			r.client_tag = client_tag_;                            \
			return r;                                              \
		}                                                              \
	} while (0)
	if (*c)
		TRY(true, true, "users/%s/clients/%s", u, c);
	TRY(true, true, "users/%s/clients/<default>", u);
	TRY(true, false, "users/%s", u);
	if (*c)
		TRY(true, true, "users/<default>/clients/%s", c);
	TRY(true, true, "users/<default>/clients/<default>");
	TRY(true, false, "users/<default>");
	if (*c)
		TRY(false, true, "clients/%s", c);
	TRY(false, true, "clients/<default>");
#undef TRY
	r.user_tag = false;
	return r;
}

/* The sanitized user of principal and client id into u and c. */
static bool names(const char *principal, proto_str client_id, char *u, char *c)
{
	const char *colon = strchr(principal, ':');
	const char *name = colon ? colon + 1 : principal;
	if (ctl_entity_sanitize(name, strlen(name), u, NAME_MAX_S) < 0)
		return false;
	if (client_id.len <= 0) {
		c[0] = '\0';
		return true;
	}
	return ctl_entity_sanitize(client_id.ptr, (size_t)client_id.len, c, NAME_MAX_S) >= 0;
}

double brk_quota_bound(brk_quotas *q, brk_quota_type t, const char *principal,
		       proto_str client_id)
{
	if (!brk_quotas_enabled(q, t))
		return -1;
	char u[NAME_MAX_S], c[NAME_MAX_S];
	if (!names(principal, client_id, u, c))
		return -1;
	return resolve(q, t, u, c).bound;
}

int32_t brk_quota_max_window_value(brk_quotas *q, brk_quota_type t, const char *principal,
				   proto_str client_id)
{
	double b = brk_quota_bound(q, t, principal, client_id);
	if (b < 0)
		return INT32_MAX;
	double v = b * (double)(q->window_num - 1) * (double)(q->window_ms / 1000);
	return v >= INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* ---- sensors ---- */

static void sweep(brk_quotas *q, int64_t now_ms)
{
	q->last_sweep_ms = now_ms;
	for (int32_t i = brk_strmap_count(&q->sensors) - 1; i >= 0; i--) {
		sensor *s = brk_strmap_at(&q->sensors, i);
		if (now_ms - s->last_ms < SENSOR_EXPIRY_MS)
			continue;
		brk_strmap_remove(&q->sensors, s->key, (int32_t)strlen(s->key));
		free(s->key);
		free(s->rate);
		free(s);
	}
}

/* The burst of a mutation bucket with bound (TokenBucket.burst). */
static double burst_of(const brk_quotas *q, double bound)
{
	return (double)q->ctl_window_num * (double)q->ctl_window_ms / 1000.0 * bound;
}

/* The sensor of (t, tags), created when absent (and create); NULL when
 * out of memory or absent. */
static sensor *sensor_of(brk_quotas *q, brk_quota_type t, const resolved *r, const char *u,
			 const char *c, int64_t now_ms, bool create)
{
	char key[2 * NAME_MAX_S + 8];
	int n = snprintf(key, sizeof(key), "%d/%s/%s", (int)t, r->user_tag ? u : "",
			 r->client_tag ? c : "");
	if (n <= 0 || (size_t)n >= sizeof(key))
		return NULL;
	sensor *s = brk_strmap_get(&q->sensors, key, n);
	if (s || !create)
		return s;
	if (now_ms - q->last_sweep_ms >= SWEEP_MS)
		sweep(q, now_ms);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->key = strdup(key);
	s->rate = brk_quota_rate_new(q->window_num, now_ms);
	/* Kafka's bucket starts empty at time 0, so its first use finds it
	 * full: the same as starting full now */
	s->bucket.tokens = burst_of(q, r->bound);
	s->bucket.last_ms = now_ms;
	if (!s->key || !s->rate || brk_strmap_put(&q->sensors, s->key, n, s) != 0) {
		free(s->key);
		free(s->rate);
		free(s);
		return NULL;
	}
	return s;
}

int32_t brk_quota_record(brk_quotas *q, brk_quota_type t, const char *principal,
			 proto_str client_id, double value, int64_t now_ms)
{
	if (!brk_quotas_enabled(q, t))
		return 0;
	char u[NAME_MAX_S], c[NAME_MAX_S];
	if (!names(principal, client_id, u, c))
		return 0;
	resolved r = resolve(q, t, u, c);
	if (r.bound < 0)
		return 0;
	sensor *s = sensor_of(q, t, &r, u, c, now_ms, true);
	if (!s)
		return 0;
	s->last_ms = now_ms;
	brk_quota_rate_record(s->rate, q->window_num, q->window_ms, value, now_ms);
	double rate = brk_quota_rate_measure(s->rate, q->window_num, q->window_ms, now_ms);
	if (rate <= r.bound)
		return 0;
	int64_t win = brk_quota_rate_window(s->rate, q->window_num, q->window_ms, now_ms);
	int32_t ms = brk_quota_throttle_ms(rate, r.bound, win);
	/* Kafka's ClientRequestQuotaManager caps its throttle at one window
	 * (QuotaUtils.boundedThrottleTime); the byte rates are not capped */
	if (t == BRK_QUOTA_REQUEST && ms > q->window_ms)
		ms = (int32_t)q->window_ms;
	return ms;
}

void brk_quota_unrecord(brk_quotas *q, brk_quota_type t, const char *principal,
			proto_str client_id, double value, int64_t now_ms)
{
	if (!brk_quotas_enabled(q, t))
		return;
	char u[NAME_MAX_S], c[NAME_MAX_S];
	if (!names(principal, client_id, u, c))
		return;
	resolved r = resolve(q, t, u, c);
	if (r.bound < 0)
		return;
	sensor *s = sensor_of(q, t, &r, u, c, now_ms, false);
	if (s)
		brk_quota_rate_record(s->rate, q->window_num, q->window_ms, -value, now_ms);
}

/* ---- controller mutations (KIP-599) ---- */

/* The bucket is tokens below zero: the throttle is the time the rate takes
 * to fill it back (ControllerMutationQuotaManager.throttleTime), from now. */
static void note_throttle(brk_mutation_quota *mq, double tokens, double rate, int64_t now_ms)
{
	double ms = -tokens / rate * 1000.0 + 0.5;
	mq->throttle_ms = ms >= INT32_MAX ? INT32_MAX : (int32_t)ms;
	mq->recorded_ms = now_ms;
}

int brk_quota_mutation_record(brk_quotas *q, brk_mutation_quota *mq, const char *principal,
			      proto_str client_id, double permits, int64_t now_ms)
{
	const brk_quota_type t = BRK_QUOTA_CONTROLLER_MUTATION;
	if (!brk_quotas_enabled(q, t))
		return KERR_NONE;
	char u[NAME_MAX_S], c[NAME_MAX_S];
	if (!names(principal, client_id, u, c))
		return KERR_NONE;
	resolved r = resolve(q, t, u, c);
	if (r.bound <= 0)
		return KERR_NONE;
	sensor *s = sensor_of(q, t, &r, u, c, now_ms, true);
	if (!s)
		return KERR_NONE;
	s->last_ms = now_ms;
	double burst = burst_of(q, r.bound);
	if (mq->strict) {
		/* StrictControllerMutationQuota: Sensor.checkQuotas, then the
		 * record without a check */
		double tokens = brk_quota_bucket_measure(&s->bucket, r.bound, burst, now_ms);
		if (tokens < 0) {
			note_throttle(mq, tokens, r.bound, now_ms);
			return KERR_THROTTLING_QUOTA_EXCEEDED;
		}
		brk_quota_bucket_record(&s->bucket, r.bound, burst, permits, now_ms);
		return KERR_NONE;
	}
	/* PermissiveControllerMutationQuota: record with the check */
	brk_quota_bucket_record(&s->bucket, r.bound, burst, permits, now_ms);
	double tokens = brk_quota_bucket_measure(&s->bucket, r.bound, burst, now_ms);
	if (tokens < 0)
		note_throttle(mq, tokens, r.bound, now_ms);
	return KERR_NONE;
}

int32_t brk_quota_mutation_throttle(const brk_mutation_quota *mq, int64_t now_ms)
{
	int64_t left = (int64_t)mq->throttle_ms - (now_ms - mq->recorded_ms);
	return left > 0 ? (int32_t)left : 0;
}
