/*
 * peers.c - connections to the other brokers by id and purpose (peers.h).
 */
#include "broker/peers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void brk_peers_init(brk_peers *ps, brk_loop *loop, int32_t self_id,
		    const brk_peer_limits limits[BRK_PEER_PURPOSES])
{
	memset(ps, 0, sizeof(*ps));
	ps->loop = loop;
	snprintf(ps->client_id, sizeof(ps->client_id), "broker-%d", (int)self_id);
	for (int i = 0; i < BRK_PEER_PURPOSES; i++) {
		if (limits)
			ps->limits[i] = limits[i];
		else
			brk_peer_limits_default(&ps->limits[i]);
	}
}

static brk_peers_entry *entry(brk_peers *ps, int32_t id)
{
	for (int32_t i = 0; i < ps->n; i++)
		if (ps->v[i].broker_id == id)
			return &ps->v[i];
	if (ps->n == ps->cap) {
		int32_t cap = ps->cap ? ps->cap * 2 : 8;
		brk_peers_entry *v = realloc(ps->v, (size_t)cap * sizeof(*v));
		if (!v)
			return NULL;
		ps->v = v;
		ps->cap = cap;
	}
	brk_peers_entry *e = &ps->v[ps->n++];
	memset(e, 0, sizeof(*e));
	e->broker_id = id;
	return e;
}

void brk_peers_set_listener(brk_peers *ps, const char *listener, SSL_CTX *tls, bool verify_host)
{
	snprintf(ps->listener, sizeof(ps->listener), "%s", listener ? listener : "");
	SSL_CTX_free(ps->tls);
	ps->tls = tls;
	ps->tls_verify_host = verify_host;
}

brk_peer *brk_peers_get(brk_peers *ps, const ctl_broker *b, brk_peer_purpose purpose)
{
	brk_peers_entry *e = entry(ps, b->id);
	if (!e)
		return NULL;
	const ctl_endpoint *ep = ctl_broker_endpoint(b, ps->listener[0] ? ps->listener : NULL);
	const char *host = ep ? ep->host : b->host;
	int port = ep ? ep->port : b->port;
	brk_peer *p = e->peer[purpose];
	if (p) {
		/* the same address changes nothing */
		if (brk_peer_set_address(p, host, port) != 0)
			return NULL;
		return p;
	}
	p = brk_peer_new(ps->loop, b->id, host, port, ps->client_id, &ps->limits[purpose], NULL);
	if (p && ps->tls)
		brk_peer_set_tls(p, ps->tls, ps->tls_verify_host);
	if (p && ps->sasl && brk_peer_set_sasl(p, ps->sasl) != 0) {
		brk_peer_destroy(p);
		return NULL;
	}
	e->peer[purpose] = p;
	return p;
}

void brk_peers_set_sasl(brk_peers *ps, const brk_sasl_credentials *cred) { ps->sasl = cred; }

void brk_peers_free(brk_peers *ps)
{
	for (int32_t i = 0; i < ps->n; i++)
		for (int k = 0; k < BRK_PEER_PURPOSES; k++)
			brk_peer_destroy(ps->v[i].peer[k]);
	free(ps->v);
	ps->v = NULL;
	ps->n = ps->cap = 0;
	SSL_CTX_free(ps->tls);
	ps->tls = NULL;
}
