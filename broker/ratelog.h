/*
 * ratelog.h - log lines a client can cause, rate-limited.
 *
 * Lines a peer triggers at will (a connection closed for bad input, a
 * connection refused by max.connections.per.ip, a failed append) go through a
 * limiter, so a hostile or broken client cannot flood the broker's stderr:
 * at most BRK_RATELOG_BURST lines per BRK_RATELOG_WINDOW_MS per limiter; the
 * first line printed after lines were dropped says how many. Kafka logs
 * these at INFO/WARN through log4j, whose appenders do the throttling; Samsa
 * writes to stderr, so it throttles itself. One limiter per call site, used
 * on the loop thread only (no locking).
 */
#ifndef SAMSA_BROKER_RATELOG_H
#define SAMSA_BROKER_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

#define BRK_RATELOG_BURST 10
#define BRK_RATELOG_WINDOW_MS 10000

typedef struct brk_ratelog {
	int64_t window_start_ms; /* monotonic ms; INT64_MIN before the first line */
	int lines;               /* printed in the current window */
	long dropped;            /* dropped since the last printed line */
} brk_ratelog;

#define BRK_RATELOG_INIT { INT64_MIN, 0, 0 }

/*
 * Whether a line may be printed at now_ms (monotonic milliseconds): true
 * for the first BRK_RATELOG_BURST lines of each window of
 * BRK_RATELOG_WINDOW_MS (a window starts with the first line after the last
 * one ended). When true, *dropped is the number of lines refused since the
 * previous admitted one (0 usually), and the count restarts; when false the
 * line is counted as dropped.
 */
bool brk_ratelog_admit(brk_ratelog *rl, int64_t now_ms, long *dropped);

/*
 * printf to stderr through rl at the current monotonic time: the line is
 * dropped when brk_ratelog_admit refuses it, and preceded by
 * "samsa: N similar lines dropped (at most 10 per 10 s)" when lines were
 * dropped before it (a count is told only with the next admitted line, so
 * the count of a flood that stopped stays untold). fmt should end with a
 * newline.
 */
void brk_ratelog_printf(brk_ratelog *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
