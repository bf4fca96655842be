/*
 * throttle.c - the quotas as handlers apply them (quota.h, "for
 * handlers"): the request's size, the request quota of a request
 * answered now and the controller mutation quota, on the server's quotas.
 */
#include <time.h>

#include "broker/conn.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"
#include "protocol/gen/messages.h"

int32_t brk_quota_request_size(const brk_request *req)
{
	/* api key, version, correlation id, client id (int16 length + bytes) */
	int64_t n = (int64_t)proto_reader_left(&req->body_start) + 10 +
		    (req->client_id.len > 0 ? req->client_id.len : 0);
	return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int32_t brk_quota_request_throttle(brk_request *req)
{
	brk_quotas *q = &server.quotas;
	if (req->quota_recorded)
		return 0;
	req->quota_recorded = true;
	if (!brk_quotas_enabled(q, BRK_QUOTA_REQUEST))
		return 0;
	/* the handler's time: so far when it runs, else what it took (a
	 * delayed request's wait is not thread time) */
	int64_t ns = req->start_ns > 0 ? mono_ns() - req->start_ns : req->thread_ns;
	/* Kafka's nanosToPercentage: the share of one thread for a second */
	double pct = (double)ns * 100.0 / 1e9;
	int32_t ms = brk_quota_record(q, BRK_QUOTA_REQUEST, brk_conn_principal(req->conn),
				      req->client_id, pct, brk_mono_ms());
	if (ms > 0)
		brk_conn_throttle(req->conn, ms);
	return ms;
}

/* API keys the request quota leaves alone here: Produce and Fetch count
 * it in their handlers (a follower's fetch and acks=0 are exempt, as in
 * Kafka), and requests between brokers (ControlledShutdown,
 * WriteTxnMarkers: Kafka's cluster actions) are exempt. */
static bool exempt(int16_t key)
{
	return key == 0 || key == 1 || key == 7 || key == 27;
}

void brk_quota_request_done(brk_request *req)
{
	if (req->quota_recorded || exempt(req->api_key))
		return;
	int32_t ms = brk_quota_request_throttle(req);
	if (ms <= 0)
		return;
	/* Kafka's maybeSetThrottleTimeMs on the response built: the field
	 * sits at a fixed place of the encoded body (-1: none there, or no
	 * answer is sent). */
	int32_t at = proto_response_throttle_at(req->api_key, req->api_version);
	proto_writer *w = req->out;
	if (at < 0 || w->len < (size_t)at + 4)
		return;
	const uint8_t *p = w->buf + at;
	int32_t had = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
				(uint32_t)p[2] << 8 | (uint32_t)p[3]);
	if (ms > had)
		proto_writer_patch_int32(w, (size_t)at, ms);
}

/* ---- controller mutations (KIP-599) ---- */

void brk_quota_mutation_begin(brk_request *req, brk_mutation_quota *mq, int16_t strict_since)
{
	mq->strict = req->api_version >= strict_since;
	mq->throttle_ms = 0;
	mq->recorded_ms = 0;
}

int brk_quota_mutation_take(brk_request *req, brk_mutation_quota *mq, int32_t partitions)
{
	return brk_quota_mutation_record(&server.quotas, mq, brk_conn_principal(req->conn),
					 req->client_id, (double)partitions, brk_mono_ms());
}

int32_t brk_quota_mutation_respond(brk_request *req, const brk_mutation_quota *mq)
{
	int32_t mutation = brk_quota_mutation_throttle(mq, brk_mono_ms());
	/* the request quota, counted here so the answer carries it; it mutes
	 * the connection for its own time */
	int32_t request = brk_quota_request_throttle(req);
	if (mutation > request) {
		brk_conn_throttle(req->conn, mutation);
		return mutation;
	}
	return request;
}
