/*
 * listener.h - the listening sockets of listeners (server.properties
 * "listeners"): bound with SO_REUSEADDR, non-blocking, accepting on the loop
 * and handing each client socket to the connection set.
 *
 * Out of file descriptors (EMFILE/ENFILE, or a new connection numbered
 * within the last 64 descriptors under the soft RLIMIT_NOFILE, which are
 * kept for the broker's own files and peers): new connections are accepted
 * and closed at once through a spare descriptor (libuv's and nginx's way),
 * the listener rests 100 ms between rounds, the start and the end of the
 * shortage are logged (rate-limited, ratelog.h), and accepting resumes by
 * itself once descriptors are free. Connection creation rates (KIP-612):
 * over the broker's or listener's rate accepting waits; over an IP's rate
 * the connection is closed unserved after its throttle time. listener.c
 * has the details.
 */
#ifndef SAMSA_BROKER_LISTENER_H
#define SAMSA_BROKER_LISTENER_H

#include <stddef.h>

#include "broker/config.h"
#include "broker/conn.h"
#include "broker/loop.h"
#include "broker/quota/conn_rate.h"

typedef struct brk_listeners brk_listeners;

/*
 * Bind and listen on every entry of cfg->listeners (an empty host means
 * every interface, IPv6 and IPv4). A port of 0 is replaced, in
 * cfg->listeners and in the advertised listener of the same name, by the
 * port the OS chose. Accepted sockets go to conns, through the connection
 * creation rates (may be NULL: none; must outlive the listeners). Holds one spare
 * descriptor ("/", read-only) besides the listening sockets.
 * Returns 0 with *out set, or -errno with a message in err (nothing stays
 * bound).
 */
int brk_listeners_open(brk_loop *loop, brk_config *cfg, brk_conns *conns, brk_conn_rate *rates,
		       brk_listeners **out, char *err, size_t errsize);

/* Stop accepting: close every listening socket and free ls (NULL: no-op). */
void brk_listeners_close(brk_listeners *ls);

#endif
