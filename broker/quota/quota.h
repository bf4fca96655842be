/*
 * quota.h - client quotas enforced as Kafka's ClientQuotaManager does
 * (KIP-13 byte rates, KIP-55 user and (user, client id) quotas, KIP-124
 * request percentage, KIP-219 throttling after the response) and
 * Kafka's ControllerMutationQuotaManager (KIP-599: partitions created or
 * deleted per second).
 *
 * Bounds come from the client entity configs (broker/client_config.h:
 * producer_byte_rate, consumer_byte_rate, request_percentage), followed as
 * they change. Each quota type has its own resolution (Kafka's
 * DefaultQuotaCallback, KIP-55): for the request's user (the principal's
 * name, sanitized) and client id the first entity of
 *    users/U/clients/C, users/U/clients/<default>, users/U,
 *    users/<default>/clients/C, users/<default>/clients/<default>,
 *    users/<default>, clients/C, clients/<default>
 * with a bound of that type gives the bound and the sensor: the pair
 * (U, C) for the (user, client id) entities, (U, "") for the user ones,
 * ("", C) for the client id ones. Every connection whose request resolves
 * to the same sensor shares its rate, as in Kafka.
 *
 * A sensor's rate is Kafka's Rate over a SampledStat: quota.window.num
 * samples of quota.window.size.seconds each; the window the rate is taken
 * over is the time since the oldest sample started, but never less than
 * num - 1 whole samples (Rate.windowSize). A value is recorded, then the
 * rate checked against the bound: above it, the throttle time is
 * (rate - bound) / bound * window, rounded (QuotaUtils.throttleTime), at
 * most one window (quota.window.size.seconds) for the request quota, as
 * Kafka's ClientRequestQuotaManager bounds it.
 *
 * Cost: with no entity holding a bound of a type, recording that type is
 * one test and returns 0. Otherwise a request resolves with at most eight
 * lookups and records into a sensor allocated once per (type, user,
 * client id); sensors unused for an hour go (Kafka's inactive sensor
 * expiry).
 *
 * Loop thread only.
 */
#ifndef SAMSA_BROKER_QUOTA_QUOTA_H
#define SAMSA_BROKER_QUOTA_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/client_config.h"
#include "broker/strmap.h"
#include "protocol/buf.h"

struct brk_request;

typedef enum brk_quota_type {
	BRK_QUOTA_PRODUCE = 0, /* producer_byte_rate, bytes/s of produce requests */
	BRK_QUOTA_FETCH = 1,   /* consumer_byte_rate, bytes/s of fetch responses */
	BRK_QUOTA_REQUEST = 2, /* request_percentage, % of one thread's time */
	/* controller_mutation_rate, partitions created or deleted per second
	 * (KIP-599): a token bucket, brk_quota_mutation_record */
	BRK_QUOTA_CONTROLLER_MUTATION = 3,
	BRK_QUOTA_NTYPES = 4,
} brk_quota_type;

/* Kafka's sample set of one sensor. */
typedef struct brk_quota_sample {
	double value;
	int64_t start_ms;
	int64_t events;
} brk_quota_sample;

typedef struct brk_quota_rate {
	int32_t nsamples;  /* in use (grows to the configured number) */
	int32_t current;
	brk_quota_sample s[]; /* window_num of them */
} brk_quota_rate;

/* Kafka's TokenBucket (KIP-599): the bound is the refill rate per second,
 * the burst window_num * window seconds * bound; a new bucket is full. */
typedef struct brk_quota_bucket {
	double tokens;
	int64_t last_ms;
} brk_quota_bucket;

typedef struct brk_quotas {
	int32_t window_num;      /* quota.window.num */
	int64_t window_ms;       /* quota.window.size.seconds in ms */
	int32_t ctl_window_num;  /* controller.quota.window.num (11) */
	int64_t ctl_window_ms;   /* controller.quota.window.size.seconds (1) in ms */
	brk_strmap bounds;       /* entity path -> bounds of that entity */
	int32_t nbound[BRK_QUOTA_NTYPES]; /* entities with a bound of each type */
	brk_strmap sensors;      /* "type/user/client" -> sensor */
	int64_t last_sweep_ms;
} brk_quotas;

/* Set up q (window_num >= 1, window_seconds >= 1) and follow the client
 * configs of reg (listener, then what is there). Returns 0 or -errno. */
int brk_quotas_init(brk_quotas *q, int32_t window_num, int32_t window_seconds,
		    brk_client_configs *reg);
void brk_quotas_free(brk_quotas *q);

/* The window of the controller mutation buckets (controller.quota.window.num
 * and .size.seconds; 11 and 1 until set). */
void brk_quotas_set_controller_window(brk_quotas *q, int32_t window_num, int32_t window_seconds);

/* A client config changed (the listener; also for tests). */
void brk_quotas_on_config(void *q, const char *entity, const brk_client_config *cc);

/* Whether some entity has a bound of type t (else recording is free). */
static inline bool brk_quotas_enabled(const brk_quotas *q, brk_quota_type t)
{
	return q->nbound[t] > 0;
}

/*
 * Record value for (principal, client_id) in quota type t at now_ms and
 * return the throttle time in ms (0: within the quota, or no quota).
 * principal is Kafka's "User:name" (the name is the user); client_id may
 * be null (len -1: the empty client id).
 */
int32_t brk_quota_record(brk_quotas *q, brk_quota_type t, const char *principal,
			 proto_str client_id, double value, int64_t now_ms);

/* Take back a value recorded (a throttled fetch sends no data: Kafka's
 * unrecordQuotaSensor). */
void brk_quota_unrecord(brk_quotas *q, brk_quota_type t, const char *principal,
			proto_str client_id, double value, int64_t now_ms);

/* The bound of type t for (principal, client_id); < 0 when none. */
double brk_quota_bound(brk_quotas *q, brk_quota_type t, const char *principal,
		       proto_str client_id);

/* Kafka's ClientQuotaManager.getMaxValueInQuotaWindow: bound * (num - 1)
 * * window seconds, the most a fetch response may hold; INT32_MAX when
 * unbounded. */
int32_t brk_quota_max_window_value(brk_quotas *q, brk_quota_type t, const char *principal,
				   proto_str client_id);

/*
 * KIP-599, Kafka's ControllerMutationQuota of one request (the type
 * BRK_QUOTA_CONTROLLER_MUTATION, resolved as the other types). Strict
 * (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a mutation
 * is refused while the bucket is below zero (nothing recorded), else
 * recorded whole, however far below zero that takes the bucket; the
 * throttle time is that of the refusal. Permissive (older versions): every
 * mutation is recorded and never refused; the throttle time is the
 * bucket's debt after the last one. Throttle time: -tokens / bound * 1000
 * ms, rounded (ControllerMutationQuotaManager.throttleTimeMs), less the
 * time passed since it was taken.
 */
typedef struct brk_mutation_quota {
	bool strict;
	int32_t throttle_ms;  /* of the last violation; 0 none */
	int64_t recorded_ms;  /* when it was taken */
} brk_mutation_quota;

/* Record permits (partitions) for (principal, client_id) at now_ms.
 * Returns 0, or KERR_THROTTLING_QUOTA_EXCEEDED (strict only). */
int brk_quota_mutation_record(brk_quotas *q, brk_mutation_quota *mq, const char *principal,
			      proto_str client_id, double permits, int64_t now_ms);

/* The throttle time left at now_ms (Kafka's AbstractControllerMutationQuota
 * .throttleTime). */
int32_t brk_quota_mutation_throttle(const brk_mutation_quota *mq, int64_t now_ms);

/* ---- the rate alone (for its unit test) ---- */

brk_quota_rate *brk_quota_rate_new(int32_t window_num, int64_t now_ms);
void brk_quota_rate_record(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			   double value, int64_t now_ms);
/* The rate per second at now_ms (Kafka's Rate.measure). */
double brk_quota_rate_measure(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			      int64_t now_ms);
/* Kafka's Rate.windowSize in ms at now_ms. */
int64_t brk_quota_rate_window(brk_quota_rate *r, int32_t window_num, int64_t window_ms,
			      int64_t now_ms);
/* Kafka's QuotaUtils.throttleTime for rate over bound. */
int32_t brk_quota_throttle_ms(double rate, double bound, int64_t window_ms);

/* The token bucket alone: refill at bound per second up to burst, then
 * take value (record) or read what is there (measure). */
void brk_quota_bucket_record(brk_quota_bucket *b, double bound, double burst, double value,
			     int64_t now_ms);
double brk_quota_bucket_measure(brk_quota_bucket *b, double bound, double burst, int64_t now_ms);

/* ---- for handlers ---- */

/* The request's size as Kafka counts it for a produce quota (header and
 * body, without the 4-byte length). */
int32_t brk_quota_request_size(const struct brk_request *req);

/* Request quota (KIP-124) of a request answered now: record the handler's
 * thread time (so far, or all of it for a delayed request) once per
 * request and return the throttle time, also muting the connection for it
 * (brk_conn_throttle). 0 when no quota applies or it was counted. */
int32_t brk_quota_request_throttle(struct brk_request *req);

/* The request hook of the connections (brk_conns_set_request_hook): the
 * request quota of a request answered without its handler counting it.
 * The throttle time goes into the encoded response's throttle_time_ms
 * (Kafka's sendResponseMaybeThrottle: every response that has the field,
 * where proto_response_throttle_at finds it; a larger value the handler
 * put there stays) and the connection is muted for it (KIP-219). A
 * response whose field follows variable-size data (ApiVersions) needs its
 * handler to call brk_quota_request_throttle itself. */
void brk_quota_request_done(struct brk_request *req);

/* The controller mutation quota of req (KIP-599), strict from version
 * strict_since of its API. */
void brk_quota_mutation_begin(struct brk_request *req, brk_mutation_quota *mq,
			      int16_t strict_since);

/* Count partitions created or deleted by req: 0, or
 * KERR_THROTTLING_QUOTA_EXCEEDED for a strict quota already exhausted (the
 * mutation must not happen). */
int brk_quota_mutation_take(struct brk_request *req, brk_mutation_quota *mq, int32_t partitions);

/* The throttle_time_ms of req's answer, as Kafka's
 * sendResponseMaybeThrottleWithControllerQuota: the larger of the mutation
 * quota's time left and the request quota's (counted here), the
 * connection muted that long (brk_conn_throttle). */
int32_t brk_quota_mutation_respond(struct brk_request *req, const brk_mutation_quota *mq);

#endif
