/*
 * loop.h - the event loop: epoll file events, timers, and a before-sleep hook.
 * One loop runs on the main thread; nothing on it may block.
 */
#ifndef SAMSA_BROKER_LOOP_H
#define SAMSA_BROKER_LOOP_H

#include <stdint.h>

typedef struct brk_loop brk_loop;

#define BRK_READABLE 1
#define BRK_WRITABLE 2

typedef void (*brk_io_fn)(brk_loop *loop, int fd, int events, void *arg);
typedef void (*brk_timer_fn)(brk_loop *loop, void *arg);

brk_loop *brk_loop_new(void);
void brk_loop_free(brk_loop *loop);
/* Watch fd for events (BRK_READABLE|BRK_WRITABLE; 0 stops watching but keeps
 * the registration). Returns 0 or -errno. */
int brk_loop_watch(brk_loop *loop, int fd, int events, brk_io_fn fn, void *arg);
void brk_loop_unwatch(brk_loop *loop, int fd);
/* Run fn(arg) once after delay_ms milliseconds; returns an id > 0. */
uint64_t brk_timer_add(brk_loop *loop, int64_t delay_ms, brk_timer_fn fn, void *arg);
/* Cancel a pending timer (no effect if it already ran). */
void brk_timer_cancel(brk_loop *loop, uint64_t id);
/* Called once per iteration before waiting for events. */
void brk_loop_set_before_sleep(brk_loop *loop, brk_timer_fn fn, void *arg);
/* Run until brk_loop_stop. */
void brk_loop_run(brk_loop *loop);
void brk_loop_stop(brk_loop *loop);

/* Wall-clock milliseconds since the epoch (record timestamps). */
int64_t brk_wall_ms(void);
/* Monotonic milliseconds (timeouts). */
int64_t brk_mono_ms(void);

#endif
