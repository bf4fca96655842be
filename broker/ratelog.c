/*
 * ratelog.c - a fixed-window line limiter (see ratelog.h).
 */
#include "broker/ratelog.h"

#include <stdarg.h>
#include <stdio.h>

#include "broker/loop.h"

bool brk_ratelog_admit(brk_ratelog *rl, int64_t now_ms, long *dropped)
{
	if (rl->window_start_ms == INT64_MIN || now_ms - rl->window_start_ms >= BRK_RATELOG_WINDOW_MS) {
		rl->window_start_ms = now_ms;
		rl->lines = 0;
	}
	if (rl->lines >= BRK_RATELOG_BURST) {
		rl->dropped++;
		return false;
	}
	rl->lines++;
	*dropped = rl->dropped;
	rl->dropped = 0;
	return true;
}

void brk_ratelog_printf(brk_ratelog *rl, const char *fmt, ...)
{
	long dropped;
	if (!brk_ratelog_admit(rl, brk_mono_ms(), &dropped))
		return;
	if (dropped > 0)
		fprintf(stderr, "samsa: %ld similar lines dropped (at most %d per %d s)\n", dropped,
			BRK_RATELOG_BURST, BRK_RATELOG_WINDOW_MS / 1000);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
