/*
 * listener.c - listening sockets: bind, listen, accept on the loop.
 *
 * Descriptor shortage (the way libuv and nginx shed load): the process keeps
 * one spare descriptor (the root directory, opened read-only, as libuv does). When accept fails with EMFILE or ENFILE
 * the spare is closed, the connections waiting in the backlog are accepted
 * and closed at once (the client sees the connection end instead of hanging
 * in the backlog), and the spare is opened again. The same happens, before
 * the limit, to a connection whose descriptor is numbered within
 * FD_HEADROOM of the soft RLIMIT_NOFILE (read at every wake-up, so a limit
 * changed under the running broker counts): descriptors are numbered
 * lowest-free first, so such a number means fewer than FD_HEADROOM are left,
 * and those are kept for the broker's own files (a segment roll, a
 * checkpoint, a new partition, a fetch that opens a segment) and its peers.
 * (With holes below, a connection can still take one of the last: the spare
 * covers accept then, and a file open that fails is answered
 * KAFKA_STORAGE_ERROR for that request only.) After shedding, the listener is
 * not watched for ACCEPT_PAUSE_MS, so a shortage is not a busy loop; the
 * connections that the broker has are served all along, and accepting
 * resumes by itself once descriptors are free. The start and the end of a
 * shortage are logged (rate-limited), with how many connections were closed
 * unserved meanwhile. Kafka's acceptor logs the error and retries after a
 * pause, leaving the clients in the backlog.
 *
 * Out of memory (ENOBUFS, ENOMEM) or an unexpected accept error pauses
 * accepting for ACCEPT_PAUSE_MS too, with a rate-limited line.
 *
 * At max.connections open connections accepting pauses too, until the
 * connection set's slot hook says one closed (Kafka's acceptor waits for a
 * connection slot the same way; here nothing is accepted meanwhile).
 *
 * Connection creation rates (quota/conn_rate.h, KIP-612): a connection over
 * the broker's or its listener's rate is held, and the listener accepts
 * nothing, for the throttle time (Kafka's acceptor thread waits in
 * ConnectionQuotas.inc); then the per-IP quota: a connection over its IP's
 * rate is kept unserved (nothing read) and closed when its throttle time
 * has passed (the acceptor's throttledSockets).
 */
#include "broker/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "broker/quota/conn_rate.h"
#include "broker/ratelog.h"

#define LISTEN_BACKLOG 1024
#define ACCEPT_PAUSE_MS 100
#define ACCEPT_BATCH 64 /* accepts per wake-up, so one busy listener cannot hog the loop */
#define SHED_BATCH LISTEN_BACKLOG /* connections shed per wake-up: the backlog */
#define FD_HEADROOM 64  /* descriptors kept for files and peers (at most a quarter of the limit) */

typedef struct brk_listen_sock {
	brk_listeners *owner;
	int fd;
	uint64_t pause_timer;
	bool full; /* paused at max.connections */
	char name[32];
	const brk_listener *listener; /* in the config, which outlives us */
	int rate_index;               /* its listener in the connection rates, -1 none */
	int held_fd;                  /* accepted, waiting out a rate's throttle; -1 none */
	struct sockaddr_storage held_peer;
	socklen_t held_len;
	uint64_t hold_timer;
} brk_listen_sock;

/* A connection over its IP's rate, closed unserved when its time comes. */
typedef struct delayed_close {
	brk_listeners *owner;
	int fd;
	uint64_t timer;
	struct delayed_close *prev, *next;
} delayed_close;

struct brk_listeners {
	brk_loop *loop;
	brk_conns *conns;
	int n;
	int spare_fd;          /* "/" read-only, given up to accept in a shortage; -1 when lost */
	bool short_fds;        /* in a descriptor shortage */
	int64_t short_since;   /* monotonic ms it began */
	long shed;             /* connections closed unserved during it */
	brk_conn_rate *rates;  /* connection creation rates, NULL: none */
	delayed_close *closing; /* connections throttled by their IP */
	brk_listen_sock socks[BRK_MAX_LISTENERS];
};

static void on_accept(brk_loop *loop, int fd, int events, void *arg);

/* Slot hook: a connection closed below max.connections. */
static void on_slot(brk_loop *loop, void *arg)
{
	brk_listeners *ls = arg;
	for (int i = 0; i < ls->n; i++) {
		brk_listen_sock *s = &ls->socks[i];
		if (!s->full)
			continue;
		s->full = false;
		if (!s->pause_timer && !s->hold_timer)
			brk_loop_watch(loop, s->fd, BRK_READABLE, on_accept, s);
	}
}

static void on_resume_accept(brk_loop *loop, void *arg)
{
	brk_listen_sock *s = arg;
	s->pause_timer = 0;
	if (!s->hold_timer)
		brk_loop_watch(loop, s->fd, BRK_READABLE, on_accept, s);
}

static void on_delayed_close(brk_loop *loop, void *arg)
{
	(void)loop;
	delayed_close *d = arg;
	brk_listeners *ls = d->owner;
	if (d->prev)
		d->prev->next = d->next;
	else
		ls->closing = d->next;
	if (d->next)
		d->next->prev = d->prev;
	close(d->fd);
	free(d);
}

/* Serve connection c from peer: the per-IP rate first (Kafka's
 * recordIpConnectionMaybeThrottle). */
static void serve(brk_listen_sock *s, int c, const struct sockaddr *peer, socklen_t len)
{
	brk_listeners *ls = s->owner;
	if (ls->rates) {
		char ip[INET6_ADDRSTRLEN] = "";
		if (peer->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
			inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, ip, sizeof(ip));
		} else if (peer->sa_family == AF_INET6 &&
			   len >= (socklen_t)sizeof(struct sockaddr_in6)) {
			const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
			if (IN6_IS_ADDR_V4MAPPED(a))
				inet_ntop(AF_INET, a->s6_addr + 12, ip, sizeof(ip));
			else
				inet_ntop(AF_INET6, a, ip, sizeof(ip));
		}
		int32_t ms = ip[0] ? brk_conn_rate_ip(ls->rates, s->rate_index, ip, brk_mono_ms()) : 0;
		if (ms > 0) {
			delayed_close *d = calloc(1, sizeof(*d));
			if (d) {
				d->owner = ls;
				d->fd = c;
				d->timer = brk_timer_add(ls->loop, ms, on_delayed_close, d);
			}
			if (!d || !d->timer) {
				free(d);
				close(c);
				return;
			}
			d->next = ls->closing;
			if (d->next)
				d->next->prev = d;
			ls->closing = d;
			return;
		}
	}
	brk_conn_add(ls->conns, c, peer, len, s->listener);
}

/* The broker's or the listener's rate has been waited out: the held
 * connection goes on and the listener accepts again. */
static void on_hold_end(brk_loop *loop, void *arg)
{
	brk_listen_sock *s = arg;
	s->hold_timer = 0;
	int c = s->held_fd;
	s->held_fd = -1;
	if (c >= 0)
		serve(s, c, (const struct sockaddr *)&s->held_peer, s->held_len);
	if (!s->pause_timer && !s->full)
		brk_loop_watch(loop, s->fd, BRK_READABLE, on_accept, s);
}

/* A new connection c: recorded on the broker's and the listener's rates;
 * over them it is held for the throttle time (false: the listener waits),
 * else served (true). */
static bool hand_on(brk_listen_sock *s, int c, const struct sockaddr *peer, socklen_t len)
{
	brk_listeners *ls = s->owner;
	int32_t ms = ls->rates ? brk_conn_rate_accept(ls->rates, s->rate_index, brk_mono_ms()) : 0;
	if (ms > 0) {
		s->hold_timer = brk_timer_add(ls->loop, ms, on_hold_end, s);
		if (s->hold_timer) {
			s->held_fd = c;
			memcpy(&s->held_peer, peer, (size_t)len);
			s->held_len = len;
			brk_loop_watch(ls->loop, s->fd, 0, on_accept, s);
			return false;
		}
	}
	serve(s, c, peer, len);
	return true;
}

static void pause_accepting(brk_listen_sock *s)
{
	brk_loop *loop = s->owner->loop;
	brk_loop_watch(loop, s->fd, 0, on_accept, s);
	if (!s->pause_timer)
		s->pause_timer = brk_timer_add(loop, ACCEPT_PAUSE_MS, on_resume_accept, s);
}

/* The lowest descriptor number that means a shortage: the soft
 * RLIMIT_NOFILE (*limit) less FD_HEADROOM, or less a quarter of it when
 * that is smaller; *limit is 0 and the floor INT_MAX when the limit cannot
 * be read or is unlimited. */
static long fd_floor(long *limit)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (rlim_t)INT_MAX) {
		*limit = 0;
		return INT_MAX;
	}
	*limit = (long)rl.rlim_cur;
	long room = FD_HEADROOM;
	if (room > *limit / 4)
		room = *limit / 4;
	return *limit - room;
}

static void open_spare(brk_listeners *ls)
{
	if (ls->spare_fd < 0)
		ls->spare_fd = open("/", O_RDONLY | O_CLOEXEC);
}

/*
 * A descriptor shortage seen on s: accept failed with EMFILE or ENFILE
 * (got < 0, errno err), or a connection got descriptor number got within
 * the headroom below limit (the caller closed it; counted here). Accept and
 * close what waits in the backlog, then pause.
 */
static void shortage(brk_listen_sock *s, int err, int got, long limit, long floor)
{
	brk_listeners *ls = s->owner;
	if (!ls->short_fds) {
		ls->short_fds = true;
		ls->short_since = brk_mono_ms();
		ls->shed = 0;
		static brk_ratelog began = BRK_RATELOG_INIT;
		char why[160];
		if (got >= 0)
			snprintf(why, sizeof(why), "a new connection got descriptor %d; the last %ld "
				 "under the open file limit of %ld are kept for the broker's files",
				 got, limit - floor, limit);
		else if (limit > 0)
			snprintf(why, sizeof(why), "accept: %s; open file limit %ld", strerror(err), limit);
		else
			snprintf(why, sizeof(why), "accept: %s", strerror(err));
		brk_ratelog_printf(&began,
				   "samsa: listener %s: out of file descriptors (%s): new connections are "
				   "closed at once until descriptors are free\n", s->name, why);
	}
	if (got >= 0)
		ls->shed++;
	for (int i = 0; i < SHED_BATCH; i++) {
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0) {
			close(c);
			ls->shed++;
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if ((errno == EMFILE || errno == ENFILE) && ls->spare_fd >= 0) {
			/* The spare gives accept the one descriptor it needs. */
			close(ls->spare_fd);
			ls->spare_fd = -1;
			continue;
		}
		break; /* EAGAIN: the backlog is empty; else nothing more to do now */
	}
	open_spare(ls); /* may fail while short: tried again on the next wake-up */
	pause_accepting(s);
}

/* A connection was let in: a shortage, if there was one, is over. */
static void shortage_over(brk_listen_sock *s)
{
	brk_listeners *ls = s->owner;
	ls->short_fds = false;
	static brk_ratelog ended = BRK_RATELOG_INIT;
	brk_ratelog_printf(&ended,
			   "samsa: listener %s: file descriptors free again after %lld ms; %ld new "
			   "connections were closed unserved meanwhile\n",
			   s->name, (long long)(brk_mono_ms() - ls->short_since), ls->shed);
}

static void on_accept(brk_loop *loop, int fd, int events, void *arg)
{
	(void)events;
	brk_listen_sock *s = arg;
	brk_listeners *ls = s->owner;
	long limit, floor = fd_floor(&limit);
	open_spare(ls);
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		if (brk_conns_full(ls->conns)) {
			brk_loop_watch(loop, fd, 0, on_accept, s);
			s->full = true;
			return;
		}
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int c = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c >= 0) {
			if (c >= floor) {
				close(c);
				shortage(s, 0, c, limit, floor);
				return;
			}
			if (ls->short_fds)
				shortage_over(s);
			if (!hand_on(s, c, (struct sockaddr *)&peer, len))
				return;
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EMFILE || errno == ENFILE) {
			shortage(s, errno, -1, limit, floor);
			return;
		}
		static brk_ratelog failed = BRK_RATELOG_INIT;
		brk_ratelog_printf(&failed, "samsa: listener %s: accept: %s (accepting again in %d ms)\n",
				   s->name, strerror(errno), ACCEPT_PAUSE_MS);
		pause_accepting(s);
		return;
	}
}

/* Bind one listener; returns the fd or -errno with err set. */
static int bind_one(brk_listener *l, char *err, size_t errsize)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", l->port);
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	hints.ai_family = l->host[0] ? AF_UNSPEC : AF_INET6;
	int gai = getaddrinfo(l->host[0] ? l->host : NULL, port, &hints, &res);
	if (gai != 0 && !l->host[0]) {
		/* No IPv6 here: all IPv4 interfaces. */
		hints.ai_family = AF_INET;
		gai = getaddrinfo(NULL, port, &hints, &res);
	}
	if (gai != 0) {
		snprintf(err, errsize, "listener %s: cannot resolve \"%s\": %s", l->name, l->host,
			 gai_strerror(gai));
		return -EINVAL;
	}
	int rc = -EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		int one = 1, zero = 0;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6 && !l->host[0])
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0) {
			struct sockaddr_storage ss;
			socklen_t len = sizeof(ss);
			if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
				l->port = ntohs(ss.ss_family == AF_INET6
							? ((struct sockaddr_in6 *)&ss)->sin6_port
							: ((struct sockaddr_in *)&ss)->sin_port);
			freeaddrinfo(res);
			return fd;
		}
		rc = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	snprintf(err, errsize, "listener %s: cannot listen on %s:%d: %s", l->name,
		 l->host[0] ? l->host : "*", l->port, strerror(-rc));
	return rc;
}

int brk_listeners_open(brk_loop *loop, brk_config *cfg, brk_conns *conns, brk_conn_rate *rates,
		       brk_listeners **out, char *err, size_t errsize)
{
	brk_listeners *ls = calloc(1, sizeof(*ls));
	if (!ls) {
		snprintf(err, errsize, "out of memory");
		return -ENOMEM;
	}
	ls->loop = loop;
	ls->conns = conns;
	ls->rates = rates;
	ls->spare_fd = -1;
	open_spare(ls);
	brk_conns_set_slot_hook(conns, on_slot, ls);
	for (int i = 0; i < cfg->nlisteners; i++) {
		brk_listener *l = &cfg->listeners[i];
		bool ephemeral = l->port == 0;
		int fd = bind_one(l, err, errsize);
		if (fd < 0) {
			brk_listeners_close(ls);
			return fd;
		}
		brk_listen_sock *s = &ls->socks[ls->n++];
		s->owner = ls;
		s->fd = fd;
		snprintf(s->name, sizeof(s->name), "%s", l->name);
		s->listener = l;
		s->held_fd = -1;
		s->rate_index = rates ? brk_conn_rate_listener_index(rates, l->name) : -1;
		int rc = brk_loop_watch(loop, fd, BRK_READABLE, on_accept, s);
		if (rc < 0) {
			snprintf(err, errsize, "listener %s: %s", l->name, strerror(-rc));
			brk_listeners_close(ls);
			return rc;
		}
		if (ephemeral)
			for (int j = 0; j < cfg->nadvertised; j++)
				if (strcmp(cfg->advertised[j].name, l->name) == 0 &&
				    cfg->advertised[j].port == 0)
					cfg->advertised[j].port = l->port;
	}
	*out = ls;
	return 0;
}

void brk_listeners_close(brk_listeners *ls)
{
	if (!ls)
		return;
	brk_conns_set_slot_hook(ls->conns, NULL, NULL);
	for (int i = 0; i < ls->n; i++) {
		brk_listen_sock *s = &ls->socks[i];
		if (s->pause_timer)
			brk_timer_cancel(ls->loop, s->pause_timer);
		if (s->hold_timer)
			brk_timer_cancel(ls->loop, s->hold_timer);
		if (s->held_fd >= 0)
			close(s->held_fd);
		brk_loop_unwatch(ls->loop, s->fd);
		close(s->fd);
	}
	while (ls->closing) {
		delayed_close *d = ls->closing;
		ls->closing = d->next;
		brk_timer_cancel(ls->loop, d->timer);
		close(d->fd);
		free(d);
	}
	if (ls->spare_fd >= 0)
		close(ls->spare_fd);
	free(ls);
}
