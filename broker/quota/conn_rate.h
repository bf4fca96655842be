/*
 * conn_rate.h - connection creation rate quotas as Kafka's ConnectionQuotas
 * (SocketServer.scala) enforces them (KIP-612):
 *
 *  - broker-wide max.connection.creation.rate and per listener
 *    listener.name.<l>.max.connection.creation.rate (the broker-wide value
 *    when not set, as Kafka's valuesWithPrefixOverride reads it): each new
 *    connection is recorded on the broker's sensor (not for the
 *    inter-broker listener when there are several listeners: Kafka's
 *    protected listener) and on its listener's; over either bound the
 *    acceptor waits the longer throttle time before it hands the
 *    connection on and accepts the next one (Kafka's waitForConnectionSlot);
 *  - per IP, connection_creation_rate of the ip entity (ips/<ip>) or of
 *    ips/<default> (client configs, followed as they change): a connection
 *    over its IP's bound is not served; it is taken back from the IP's,
 *    the listener's and the broker's sensors and closed once its throttle
 *    time has passed (ConnectionThrottledException, the acceptor's
 *    delayed close).
 *
 * Every sensor is Kafka's Rate (quota.h's brk_quota_rate) over
 * quota.window.num samples of quota.window.size.seconds; a connection is
 * recorded, then the rate checked: over the bound, the throttle time is
 * QuotaUtils.throttleTime, at most one window (boundedThrottleTime). An IP
 * sensor unused for an hour goes. A bound of 2147483647 (Kafka's default)
 * is no bound: nothing is recorded.
 *
 * Loop thread only.
 */
#ifndef SAMSA_BROKER_QUOTA_CONN_RATE_H
#define SAMSA_BROKER_QUOTA_CONN_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/client_config.h"
#include "broker/config.h"
#include "broker/quota/quota.h"
#include "broker/strmap.h"

typedef struct brk_conn_rate_listener {
	char name[32];
	bool protected_;       /* the inter-broker listener among several */
	double bound;          /* < 0: none */
	brk_quota_rate *rate;
} brk_conn_rate_listener;

typedef struct brk_conn_rate {
	int32_t window_num;
	int64_t window_ms;
	double broker_bound;   /* < 0: none */
	brk_quota_rate *broker_rate;
	brk_conn_rate_listener listeners[BRK_MAX_LISTENERS];
	int nlisteners;
	brk_strmap ip_bounds;  /* canonical IP -> bound (heap double) */
	double ip_default;     /* ips/<default>; < 0: none */
	brk_strmap ip_sensors; /* canonical IP -> sensor */
	int64_t last_sweep_ms;
} brk_conn_rate;

/*
 * Set up cr from cfg (quota.window.*, max.connection.creation.rate, the
 * listeners and their listener.name.<l>.max.connection.creation.rate) and
 * follow the ip entities of reg (may be NULL). Returns 0, or -EINVAL with
 * a message in err (a listener's rate that is no integer >= 0), or
 * -ENOMEM.
 */
int brk_conn_rate_init(brk_conn_rate *cr, const brk_config *cfg, brk_client_configs *reg,
		       char *err, size_t errsize);
void brk_conn_rate_free(brk_conn_rate *cr);

/* The effective config changed (dynamic max.connection.creation.rate,
 * listener.name.<l>.max.connection.creation.rate, as Kafka's
 * DynamicConnectionQuota and ListenerConnectionQuota.reconfigure): the
 * bounds of cfg from now on; the sensors keep what they counted. A
 * listener's value that is no integer is reported on stderr and leaves
 * that listener (and those after it) as they were. */
void brk_conn_rate_reconfigure(brk_conn_rate *cr, const brk_config *cfg);

/* A client config changed (reg's listener; also for tests): ip entities
 * set or clear their connection_creation_rate. */
void brk_conn_rate_on_config(void *cr, const char *entity, const brk_client_config *cc);

/* The index of the listener named name, or -1. */
int brk_conn_rate_listener_index(const brk_conn_rate *cr, const char *name);

/* A connection accepted on listener li (an index, or -1) at now_ms:
 * recorded on the broker's and the listener's sensors; returns how long to
 * wait before handing it on and accepting again (0: at once). */
int32_t brk_conn_rate_accept(brk_conn_rate *cr, int li, int64_t now_ms);

/* The per-IP quota of a connection from ip (text, IPv4-mapped addresses
 * as IPv4) on listener li: 0 when it may be served, else the ms after
 * which it is to be closed unserved (then taken back from every sensor). */
int32_t brk_conn_rate_ip(brk_conn_rate *cr, int li, const char *ip, int64_t now_ms);

/* The IP quota bound for ip (< 0: none); for tests and describing. */
double brk_conn_rate_ip_bound(const brk_conn_rate *cr, const char *ip);

#endif
