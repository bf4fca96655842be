/*
 * ratelog.c - a fixed-window line limiter (see ratelog.h).
 */
#include "broker/ratelog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker/loop.h"

/*
 * Limiters that dropped lines since they joined: loop thread only.
 *
 * The one registry of the broker left in a file static (DESIGN.md decision
 * 11), on purpose: it links the limiters, which are themselves
 * process-wide statics, one per call site, whatever server or test runs
 * the code, and it guards a process-wide resource, stderr. A list per
 * server would give a limiter shared by every instance one list among
 * several (told by that one only), and passing a list to each
 * brk_ratelog_printf would thread it through every module that logs. It
 * holds no memory of its own and empties itself (brk_ratelog_next_untold;
 * tests drain it with INT64_MAX).
 */
static brk_ratelog *untold;

bool brk_ratelog_admit(brk_ratelog *rl, int64_t now_ms, long *dropped)
{
	if (rl->window_start_ms == INT64_MIN || now_ms - rl->window_start_ms >= BRK_RATELOG_WINDOW_MS) {
		rl->window_start_ms = now_ms;
		rl->lines = 0;
	}
	if (rl->lines >= BRK_RATELOG_BURST) {
		rl->dropped++;
		if (!rl->listed) {
			rl->listed = true;
			rl->next = untold;
			untold = rl;
		}
		return false;
	}
	rl->lines++;
	*dropped = rl->dropped;
	rl->dropped = 0;
	return true;
}

brk_ratelog *brk_ratelog_next_untold(int64_t now_ms, long *dropped)
{
	for (brk_ratelog **p = &untold; *p;) {
		brk_ratelog *rl = *p;
		bool ended = now_ms - rl->window_start_ms >= BRK_RATELOG_WINDOW_MS;
		if (rl->dropped > 0 && !ended) {
			p = &rl->next;
			continue;
		}
		*p = rl->next;
		rl->next = NULL;
		rl->listed = false;
		if (rl->dropped > 0) {
			*dropped = rl->dropped;
			rl->dropped = 0;
			return rl;
		}
	}
	return NULL;
}

static void tell_dropped(long dropped, const char *like)
{
	fprintf(stderr, "samsa: %ld similar lines dropped (at most %d per %d s)%s%s\n", dropped,
		BRK_RATELOG_BURST, BRK_RATELOG_WINDOW_MS / 1000, *like ? ", like: " : "", like);
}

void brk_ratelog_tell_untold(int64_t now_ms)
{
	long dropped;
	brk_ratelog *rl;
	while ((rl = brk_ratelog_next_untold(now_ms, &dropped)))
		tell_dropped(dropped, rl->last);
}

void brk_ratelog_printf(brk_ratelog *rl, const char *fmt, ...)
{
	long dropped;
	if (!brk_ratelog_admit(rl, brk_mono_ms(), &dropped))
		return;
	if (dropped > 0)
		tell_dropped(dropped, "");
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (len >= (int)sizeof(line))
		line[sizeof(line) - 2] = '\n'; /* cut short, still a line */
	fputs(line, stderr);
	/* Without its newline: it is told inside a line of its own. */
	snprintf(rl->last, sizeof(rl->last), "%.*s", (int)strcspn(line, "\n"), line);
}
