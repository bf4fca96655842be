/*
 * throttle.c - the quotas as handlers apply them (quota.h, "for
 * handlers"): the request's size, and the request quota of a request
 * answered now, on the server's quotas.
 */
#include <time.h>

#include "broker/conn.h"
#include "broker/quota/quota.h"
#include "broker/request.h"
#include "broker/server.h"

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
	if (!brk_quotas_enabled(q, BRK_QUOTA_REQUEST) || req->start_ns <= 0)
		return 0;
	/* Kafka's nanosToPercentage: the share of one thread for a second */
	double pct = (double)(mono_ns() - req->start_ns) * 100.0 / 1e9;
	int32_t ms = brk_quota_record(q, BRK_QUOTA_REQUEST, brk_conn_principal(req->conn),
				      req->client_id, pct, brk_mono_ms());
	if (ms > 0)
		brk_conn_throttle(req->conn, ms);
	return ms;
}
