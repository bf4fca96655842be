/*
 * ratelog.h - log lines a client can cause, rate-limited.
 *
 * Lines a peer triggers at will (a connection closed for bad input, a
 * connection refused by max.connections.per.ip, a failed append) go through a
 * limiter, so a hostile or broken client cannot flood the broker's stderr:
 * at most BRK_RATELOG_BURST lines per BRK_RATELOG_WINDOW_MS per limiter; the
 * first line printed after lines were dropped says how many, and when no
 * line follows, brk_ratelog_tell_untold (on a timer) does. Kafka logs
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
	bool listed;             /* on the list brk_ratelog_next_untold walks */
	struct brk_ratelog *next;
	char last[96];           /* the last printed line, cut short: what the dropped ones were like */
} brk_ratelog;

#define BRK_RATELOG_INIT { INT64_MIN, 0, 0, false, NULL, "" }

/*
 * Whether a line may be printed at now_ms (monotonic milliseconds): true
 * for the first BRK_RATELOG_BURST lines of each window of
 * BRK_RATELOG_WINDOW_MS (a window starts with the first line after the last
 * one ended). When true, *dropped is the number of lines refused since the
 * previous admitted one (0 usually), and the count restarts; when false the
 * line is counted as dropped, and rl joins the list of limiters whose count
 * may go untold (rl must then live until brk_ratelog_next_untold has taken it
 * off: call sites use static limiters).
 */
bool brk_ratelog_admit(brk_ratelog *rl, int64_t now_ms, long *dropped);

/*
 * A limiter whose window ended by now_ms (monotonic milliseconds) with lines
 * dropped and no admitted line since to tell their count: sets *dropped to
 * that count, resets it and takes the limiter off the list. NULL when there
 * is none; limiters whose count was told meanwhile leave the list on the way.
 */
brk_ratelog *brk_ratelog_next_untold(int64_t now_ms, long *dropped);

/*
 * Print "samsa: N similar lines dropped (at most 10 per 10 s), like: LINE"
 * to stderr for every limiter brk_ratelog_next_untold gives at now_ms
 * (monotonic milliseconds; INT64_MAX at shutdown tells every count), LINE
 * being that limiter's last printed line. The broker calls it every
 * BRK_RATELOG_WINDOW_MS, so the count of a flood that stopped is told too,
 * at most two windows after its last line, and at shutdown.
 */
void brk_ratelog_tell_untold(int64_t now_ms);

/*
 * printf to stderr through rl at the current monotonic time: the line is
 * dropped when brk_ratelog_admit refuses it, and preceded by
 * "samsa: N similar lines dropped (at most 10 per 10 s)" when lines were
 * dropped before it (the count of a flood that stopped is told by
 * brk_ratelog_tell_untold). fmt should end with a newline; a line longer
 * than 1023 bytes is cut short.
 */
void brk_ratelog_printf(brk_ratelog *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
