/*
 * peers.h - this broker's connections to the other brokers (peer.h), one
 * per remote broker and purpose, made on first use from the broker's
 * registration and pointed at its new address when it registers another
 * one. Purposes keep a long-polling Fetch from holding up a request of
 * another kind (Kafka has separate channels for replica fetchers and for
 * the controller and transaction marker requests).
 *
 * Everything runs on the loop thread.
 */
#ifndef SAMSA_BROKER_PEERS_H
#define SAMSA_BROKER_PEERS_H

#include <stdint.h>

#include "broker/loop.h"
#include "broker/peer.h"
#include "controller/meta.h"

typedef enum brk_peer_purpose {
	BRK_PEER_FETCH,   /* replica fetcher: Fetch, OffsetForLeaderEpoch */
	BRK_PEER_CONTROL, /* ControlledShutdown, WriteTxnMarkers, AddPartitionsToTxn */
	BRK_PEER_PURPOSES,
} brk_peer_purpose;

typedef struct brk_peers_entry {
	int32_t broker_id;
	brk_peer *peer[BRK_PEER_PURPOSES];
} brk_peers_entry;

typedef struct brk_peers {
	brk_loop *loop;
	char client_id[64];             /* "broker-<id>" */
	/* inter.broker.listener.name (brk_peers_set_listener): the endpoint of
	 * the other brokers connected to; its TLS client context (owned) or
	 * NULL for a plaintext listener. */
	char listener[32];
	SSL_CTX *tls;
	bool tls_verify_host;
	brk_peer_limits limits[BRK_PEER_PURPOSES];
	const brk_sasl_credentials *sasl; /* inter-broker SASL (brk_peers_set_sasl), or NULL */
	brk_peers_entry *v;
	int32_t n, cap;
} brk_peers;

/* An empty set for broker self_id; limits per purpose (NULL: Kafka's
 * defaults for each). */
void brk_peers_init(brk_peers *ps, brk_loop *loop, int32_t self_id,
		    const brk_peer_limits limits[BRK_PEER_PURPOSES]);

/*
 * Connect to the other brokers' endpoint of listener (Kafka's
 * inter.broker.listener.name), over TLS with tls (a client context from
 * brk_tls_client_ctx_new, taken over; NULL for PLAINTEXT and
 * SASL_PLAINTEXT). Before the first brk_peers_get. A broker that does not
 * advertise that listener is reached at its first endpoint.
 */
void brk_peers_set_listener(brk_peers *ps, const char *listener, SSL_CTX *tls, bool verify_host);

/*
 * The connection to broker b (its live registration) for purpose, made
 * now when there is none, pointed at b's address (its endpoint of the
 * inter-broker listener) when it changed. NULL when it cannot be made (out
 * of memory, an address that does not parse).
 */
brk_peer *brk_peers_get(brk_peers *ps, const ctl_broker *b, brk_peer_purpose purpose);

/* Authenticate every connection made from now on with cred (SASL on the
 * inter-broker listener; peer.h's brk_peer_set_sasl); cred must outlive
 * the set; NULL: none. */
void brk_peers_set_sasl(brk_peers *ps, const brk_sasl_credentials *cred);

/* Destroy every connection (their pending requests fail with
 * BRK_PEER_ERR_DESTROYED, from inside this call) and free the set. */
void brk_peers_free(brk_peers *ps);

#endif
