/*
 * listener.c - listening sockets: bind, listen, accept on the loop.
 *
 * When the process runs out of descriptors (EMFILE/ENFILE) or memory,
 * accepting pauses for ACCEPT_PAUSE_MS instead of spinning on a listening
 * socket that stays readable; the client waits in the backlog meanwhile.
 *
 * At max.connections open connections accepting pauses too, until the
 * connection set's slot hook says one closed (Kafka's acceptor waits for a
 * connection slot the same way; here nothing is accepted meanwhile).
 */
#include "broker/listener.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_BACKLOG 1024
#define ACCEPT_PAUSE_MS 100
#define ACCEPT_BATCH 64 /* accepts per wake-up, so one busy listener cannot hog the loop */

typedef struct brk_listen_sock {
	brk_listeners *owner;
	int fd;
	uint64_t pause_timer;
	bool full; /* paused at max.connections */
	char name[32];
} brk_listen_sock;

struct brk_listeners {
	brk_loop *loop;
	brk_conns *conns;
	int n;
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
		if (!s->pause_timer)
			brk_loop_watch(loop, s->fd, BRK_READABLE, on_accept, s);
	}
}

static void on_resume_accept(brk_loop *loop, void *arg)
{
	brk_listen_sock *s = arg;
	s->pause_timer = 0;
	brk_loop_watch(loop, s->fd, BRK_READABLE, on_accept, s);
}

static void on_accept(brk_loop *loop, int fd, int events, void *arg)
{
	(void)events;
	brk_listen_sock *s = arg;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		if (brk_conns_full(s->owner->conns)) {
			brk_loop_watch(loop, fd, 0, on_accept, s);
			s->full = true;
			return;
		}
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int c = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c >= 0) {
			brk_conn_add(s->owner->conns, c, (struct sockaddr *)&peer, len);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		fprintf(stderr, "samsa: listener %s: accept: %s\n", s->name, strerror(errno));
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			brk_loop_watch(loop, fd, 0, on_accept, s);
			s->pause_timer = brk_timer_add(loop, ACCEPT_PAUSE_MS, on_resume_accept, s);
		}
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

int brk_listeners_open(brk_loop *loop, brk_config *cfg, brk_conns *conns, brk_listeners **out,
		       char *err, size_t errsize)
{
	brk_listeners *ls = calloc(1, sizeof(*ls));
	if (!ls) {
		snprintf(err, errsize, "out of memory");
		return -ENOMEM;
	}
	ls->loop = loop;
	ls->conns = conns;
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
		brk_loop_unwatch(ls->loop, s->fd);
		close(s->fd);
	}
	free(ls);
}
