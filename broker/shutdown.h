/*
 * shutdown.h - a controlled shutdown (CLUSTER.md 2.6; Kafka's
 * KafkaServer.controlledShutdown): before a broker of a cluster stops, it
 * asks the controller (ControlledShutdown, API key 7) to move the
 * leadership of its partitions to other in-sync replicas and take it out of
 * the ISRs, so clients switch leaders without losing acknowledged records.
 * It asks again while partitions remain (no other replica could take them)
 * or the request fails (no controller, NOT_CONTROLLER after a change of
 * controller), at most controlled.shutdown.max.retries times,
 * controlled.shutdown.retry.backoff.ms apart, and then stops anyway. The
 * broker keeps serving meanwhile (followers must fetch what they miss).
 *
 * On a single node (the local back end) or with controlled.shutdown.enable
 * false there is nothing to ask: done is called at once.
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_SHUTDOWN_H
#define SAMSA_BROKER_SHUTDOWN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct brk_shutdown {
	void (*done)(void *arg); /* called once, on the loop */
	void *arg;
	int attempts;
	int max_retries;          /* controlled.shutdown.max.retries */
	int64_t backoff_ms;       /* controlled.shutdown.retry.backoff.ms */
	uint64_t timer;
	bool in_flight;
	bool finished;
} brk_shutdown;

/* Start the controlled shutdown (when enable: controlled.shutdown.enable);
 * done(arg) when it is over (moved, gave up, or nothing to move). */
void brk_shutdown_begin(brk_shutdown *s, bool enable, int max_retries, int64_t backoff_ms,
			void (*done)(void *arg), void *arg);

/* Cut it short (a second signal): done is called at once if not yet. */
void brk_shutdown_abort(brk_shutdown *s);

#endif
