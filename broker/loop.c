/*
 * loop.c - the event loop: level-triggered epoll for file events, a binary
 * min-heap of timers (add and cancel in O(log n)), and a before-sleep hook.
 *
 * One iteration: before-sleep hook, epoll_wait until the nearest timer, the
 * file events (readable first, then writable, each only while the fd is
 * still watched for it), then the timers that were due when the timer phase
 * began (a timer added meanwhile with delay 0 waits for the next iteration,
 * so a timer that re-arms itself cannot starve I/O).
 *
 * Timer ids: (generation << 32) | (slot + 1). The slot's generation changes
 * on every reuse, so a stale id never cancels somebody else's timer.
 */
#include "broker/loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

typedef struct fd_entry {
	brk_io_fn fn;
	void *arg;
	int events;      /* BRK_READABLE | BRK_WRITABLE */
	bool registered; /* added to the epoll set */
} fd_entry;

typedef struct timer_slot {
	int64_t when;     /* monotonic ms */
	uint64_t seq;     /* insertion order: ties run first-in first-out */
	brk_timer_fn fn;
	void *arg;
	uint32_t gen;
	uint32_t heap_at; /* index in heap, or UINT32_MAX when free */
	uint32_t next_free;
} timer_slot;

struct brk_loop {
	int epfd;
	fd_entry *fds;
	int nfds; /* size of fds */
	timer_slot *slots;
	uint32_t nslots;
	uint32_t free_head; /* UINT32_MAX: none */
	uint32_t *heap;     /* slot indexes, a min-heap on (when, seq) */
	uint32_t nheap;
	uint64_t seq;
	brk_timer_fn before_sleep;
	void *before_sleep_arg;
	bool stop;
};

#define NONE UINT32_MAX
#define MAX_EVENTS 256

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t brk_wall_ms(void) { return clock_ms(CLOCK_REALTIME); }
int64_t brk_mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

brk_loop *brk_loop_new(void)
{
	brk_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		free(loop);
		return NULL;
	}
	loop->free_head = NONE;
	return loop;
}

void brk_loop_free(brk_loop *loop)
{
	if (!loop)
		return;
	close(loop->epfd);
	free(loop->fds);
	free(loop->slots);
	free(loop->heap);
	free(loop);
}

/* ---- file events ---- */

/* epoll always reports errors and hang-ups, even for an empty mask; an fd
 * that watches nothing is made edge-triggered so that a hang-up there is
 * reported once instead of waking every iteration. */
static uint32_t to_epoll(int events)
{
	uint32_t ev = ((events & BRK_READABLE) ? EPOLLIN : 0) | ((events & BRK_WRITABLE) ? EPOLLOUT : 0);
	return ev ? ev : EPOLLET;
}

int brk_loop_watch(brk_loop *loop, int fd, int events, brk_io_fn fn, void *arg)
{
	if (fd < 0)
		return -EBADF;
	if (fd >= loop->nfds) {
		int n = loop->nfds ? loop->nfds : 64;
		while (n <= fd)
			n *= 2;
		fd_entry *f = realloc(loop->fds, (size_t)n * sizeof(*f));
		if (!f)
			return -ENOMEM;
		memset(f + loop->nfds, 0, (size_t)(n - loop->nfds) * sizeof(*f));
		loop->fds = f;
		loop->nfds = n;
	}
	fd_entry *e = &loop->fds[fd];
	struct epoll_event ev = { .events = to_epoll(events), .data.fd = fd };
	if (epoll_ctl(loop->epfd, e->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	e->registered = true;
	e->fn = fn;
	e->arg = arg;
	e->events = events & (BRK_READABLE | BRK_WRITABLE);
	return 0;
}

void brk_loop_unwatch(brk_loop *loop, int fd)
{
	if (fd < 0 || fd >= loop->nfds || !loop->fds[fd].registered)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	memset(&loop->fds[fd], 0, sizeof(loop->fds[fd]));
}

/* ---- timers ---- */

static bool earlier(const brk_loop *loop, uint32_t a, uint32_t b)
{
	const timer_slot *x = &loop->slots[a], *y = &loop->slots[b];
	return x->when < y->when || (x->when == y->when && x->seq < y->seq);
}

static void heap_set(brk_loop *loop, uint32_t at, uint32_t slot)
{
	loop->heap[at] = slot;
	loop->slots[slot].heap_at = at;
}

static void sift_up(brk_loop *loop, uint32_t at)
{
	uint32_t slot = loop->heap[at];
	while (at > 0) {
		uint32_t parent = (at - 1) / 2;
		if (!earlier(loop, slot, loop->heap[parent]))
			break;
		heap_set(loop, at, loop->heap[parent]);
		at = parent;
	}
	heap_set(loop, at, slot);
}

static void sift_down(brk_loop *loop, uint32_t at)
{
	uint32_t slot = loop->heap[at];
	for (;;) {
		uint32_t child = 2 * at + 1;
		if (child >= loop->nheap)
			break;
		if (child + 1 < loop->nheap && earlier(loop, loop->heap[child + 1], loop->heap[child]))
			child++;
		if (!earlier(loop, loop->heap[child], slot))
			break;
		heap_set(loop, at, loop->heap[child]);
		at = child;
	}
	heap_set(loop, at, slot);
}

/* Take slot out of the heap and put it on the free list. */
static void timer_remove(brk_loop *loop, uint32_t slot)
{
	uint32_t at = loop->slots[slot].heap_at;
	uint32_t last = loop->heap[--loop->nheap];
	if (at != loop->nheap) {
		heap_set(loop, at, last);
		sift_down(loop, at);
		sift_up(loop, loop->slots[last].heap_at);
	}
	timer_slot *t = &loop->slots[slot];
	t->heap_at = NONE;
	t->fn = NULL;
	t->arg = NULL;
	t->gen++;
	t->next_free = loop->free_head;
	loop->free_head = slot;
}

uint64_t brk_timer_add(brk_loop *loop, int64_t delay_ms, brk_timer_fn fn, void *arg)
{
	if (loop->free_head == NONE) {
		uint32_t n = loop->nslots ? loop->nslots * 2 : 64;
		if (n >= NONE)
			return 0;
		timer_slot *s = realloc(loop->slots, n * sizeof(*s));
		if (!s)
			return 0;
		uint32_t *h = realloc(loop->heap, n * sizeof(*h));
		if (!h) {
			loop->slots = s;
			return 0;
		}
		loop->slots = s;
		loop->heap = h;
		for (uint32_t i = n; i > loop->nslots; i--) {
			timer_slot *t = &s[i - 1];
			memset(t, 0, sizeof(*t));
			t->heap_at = NONE;
			t->next_free = loop->free_head;
			loop->free_head = i - 1;
		}
		loop->nslots = n;
	}
	uint32_t slot = loop->free_head;
	timer_slot *t = &loop->slots[slot];
	loop->free_head = t->next_free;
	if (delay_ms < 0)
		delay_ms = 0;
	int64_t now = brk_mono_ms();
	t->when = delay_ms > INT64_MAX - now ? INT64_MAX : now + delay_ms;
	t->seq = ++loop->seq;
	t->fn = fn;
	t->arg = arg;
	t->next_free = NONE;
	loop->heap[loop->nheap] = slot;
	t->heap_at = loop->nheap++;
	sift_up(loop, t->heap_at);
	return ((uint64_t)t->gen << 32) | (slot + 1);
}

void brk_timer_cancel(brk_loop *loop, uint64_t id)
{
	uint64_t low = id & 0xffffffffu;
	if (low == 0 || low > loop->nslots)
		return;
	uint32_t slot = (uint32_t)(low - 1);
	timer_slot *t = &loop->slots[slot];
	if (t->heap_at == NONE || t->gen != (uint32_t)(id >> 32))
		return;
	timer_remove(loop, slot);
}

/* Run the timers due now that were added before this phase began. */
static void run_timers(brk_loop *loop)
{
	int64_t now = brk_mono_ms();
	uint64_t seq_limit = loop->seq;
	while (loop->nheap > 0 && !loop->stop) {
		uint32_t slot = loop->heap[0];
		timer_slot *t = &loop->slots[slot];
		if (t->when > now)
			break;
		if (t->seq > seq_limit) {
			/* Added during this phase: look for an older due one deeper
			 * in the heap would need a scan; defer the rest instead. */
			break;
		}
		brk_timer_fn fn = t->fn;
		void *arg = t->arg;
		timer_remove(loop, slot);
		fn(loop, arg);
	}
}

static int next_timeout_ms(const brk_loop *loop)
{
	if (loop->nheap == 0)
		return -1;
	int64_t d = loop->slots[loop->heap[0]].when - brk_mono_ms();
	if (d <= 0)
		return 0;
	return d > 60000 ? 60000 : (int)d;
}

void brk_loop_set_before_sleep(brk_loop *loop, brk_timer_fn fn, void *arg)
{
	loop->before_sleep = fn;
	loop->before_sleep_arg = arg;
}

void brk_loop_stop(brk_loop *loop) { loop->stop = true; }

void brk_loop_run(brk_loop *loop)
{
	struct epoll_event evs[MAX_EVENTS];
	loop->stop = false;
	while (!loop->stop) {
		if (loop->before_sleep)
			loop->before_sleep(loop, loop->before_sleep_arg);
		if (loop->stop)
			break;
		int n = epoll_wait(loop->epfd, evs, MAX_EVENTS, next_timeout_ms(loop));
		if (n < 0) {
			if (errno != EINTR)
				break; /* EBADF/EINVAL: the loop itself is broken */
			n = 0;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			uint32_t got = evs[i].events;
			/* Errors and hang-ups are reported to whichever side is
			 * watched: the handler's read or write finds out. */
			bool err = got & (EPOLLERR | EPOLLHUP);
			if (fd >= loop->nfds)
				continue;
			fd_entry *e = &loop->fds[fd];
			if ((e->events & BRK_READABLE) && ((got & EPOLLIN) || err))
				e->fn(loop, fd, BRK_READABLE, e->arg);
			e = fd < loop->nfds ? &loop->fds[fd] : NULL; /* fds may have moved */
			if (e && (e->events & BRK_WRITABLE) && ((got & EPOLLOUT) || err))
				e->fn(loop, fd, BRK_WRITABLE, e->arg);
		}
		run_timers(loop);
	}
}
