/*
 * tls.h - TLS for the SSL and SASL_SSL listeners, through OpenSSL, driven
 * non-blocking by conn.c on the event loop.
 *
 * One brk_tls per TLS listener holds its SSL_CTX, built from Kafka's ssl.*
 * keys as brk_config_security_get finds them for the listener
 * ("listener.name.<l>.ssl.x" over "ssl.x"):
 *  - the keystore (the broker's certificate and key):
 *    ssl.keystore.type PEM or PKCS12 (Kafka's default JKS is refused: a
 *    Java format) with ssl.keystore.location, ssl.keystore.password (the
 *    PKCS12 file's password) and ssl.key.password (an encrypted PEM key's);
 *    or KIP-651's inline PEM, ssl.keystore.certificate.chain and
 *    ssl.keystore.key (ssl.keystore.type PEM). One of them is required;
 *  - the truststore (who may sign client certificates), used when
 *    ssl.client.auth asks for one: ssl.truststore.type PEM or PKCS12 with
 *    ssl.truststore.location and ssl.truststore.password, or inline PEM in
 *    ssl.truststore.certificates; none given: the system's CAs (OpenSSL's
 *    default paths, as Kafka falls back to the JVM's);
 *  - ssl.client.auth none (default) / requested / required;
 *  - ssl.enabled.protocols (TLSv1.2,TLSv1.3): the lowest and highest named
 *    bound the versions spoken;
 *  - ssl.cipher.suites (default: OpenSSL's): IANA names as Kafka writes
 *    them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256)
 *    or OpenSSL's names;
 *  - ssl.principal.mapping.rules (principal_mapper.h) for the principal of
 *    a client certificate;
 *  - ssl.endpoint.identification.algorithm does not apply to a server
 *    (Kafka checks host names only as a client: peer.c's connections).
 * Anything wrong fails brk_tls_new with a message naming the key, so a bad
 * keystore stops start-up (Kafka's ConfigException from SslFactory).
 *
 * A brk_tls is reference counted (loop thread only): each connection's SSL
 * keeps the context it was made from, so a listener's brk_tls can be
 * replaced (a new keystore) while connections made from the old one live on.
 *
 * Fetch over TLS: contexts ask OpenSSL for kernel TLS (SSL_OP_ENABLE_KTLS).
 * (SAMSA_KTLS=0 in the environment turns that off, for bench/tlsbench's
 * comparison.) When the kernel takes the session (Linux's tls ULP;
 * BIO_get_ktls_send),
 * segment bytes go out with SSL_sendfile (sendfile(2) on the kTLS socket,
 * zero copy as on plaintext); otherwise conn.c reads them (pread) into a
 * bounded buffer and SSL_writes them. brk_tls_note_path logs once per
 * listener which of the two its connections use, and why.
 */
#ifndef SAMSA_BROKER_SECURITY_TLS_H
#define SAMSA_BROKER_SECURITY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "broker/config.h"

typedef struct brk_tls brk_tls;

/* The most plaintext bytes one TLS record carries (RFC 8446 5.1). */
#define BRK_TLS_RECORD_MAX 16384

/*
 * The server side TLS of listener l (SSL or SASL_SSL), from cfg's ssl.*
 * keys for it. Returns it with one reference, or NULL with a message for
 * the user in err ("listener SSL: ssl.keystore.location /x: ...").
 */
brk_tls *brk_tls_new(const brk_config *cfg, const brk_listener *l, char *err, size_t errsize);

brk_tls *brk_tls_ref(brk_tls *t);
/* Drop a reference; the last frees it. NULL is a no-op. */
void brk_tls_unref(brk_tls *t);

/* A server session on accepted socket fd (non-blocking), or NULL (no
 * memory). Free with SSL_free. */
SSL *brk_tls_accept(brk_tls *t, int fd);

/* Results of the I/O calls below besides a byte count. */
#define BRK_TLS_WANT_READ (-2)  /* retry once the socket is readable */
#define BRK_TLS_WANT_WRITE (-3) /* retry once the socket is writable */
#define BRK_TLS_ERROR (-1)      /* the session is broken: close */

/*
 * Drive the handshake. Returns 1 when it is complete, BRK_TLS_WANT_*, or
 * BRK_TLS_ERROR with the reason in err (OpenSSL's, e.g. "wrong version
 * number" for plaintext sent to the port).
 */
int brk_tls_handshake(SSL *ssl, char *err, size_t errsize);

/*
 * Read up to n bytes. Returns the count (> 0), 0 when the peer closed,
 * BRK_TLS_WANT_*, or BRK_TLS_ERROR (reason in err).
 */
ssize_t brk_tls_read(SSL *ssl, void *buf, size_t n, char *err, size_t errsize);

/*
 * Write up to n (> 0) bytes. Returns the count taken (> 0; partial writes
 * are on), BRK_TLS_WANT_*, or BRK_TLS_ERROR. After a WANT the same call
 * must be repeated with the same bytes (OpenSSL's rule).
 */
ssize_t brk_tls_write(SSL *ssl, const void *buf, size_t n, char *err, size_t errsize);

/* Whether the kernel encrypts what this session sends (kTLS): then
 * brk_tls_sendfile may be used. */
bool brk_tls_ktls_send(SSL *ssl);

/* n bytes of file fd from off, through kernel TLS. Returns the count,
 * BRK_TLS_WANT_*, or BRK_TLS_ERROR. */
ssize_t brk_tls_sendfile(SSL *ssl, int fd, off_t off, size_t n, char *err, size_t errsize);

/* Bytes decrypted and not yet read (SSL_pending): the socket will not
 * signal them. */
bool brk_tls_pending(SSL *ssl);

/*
 * The principal of a completed session, "User:<name>", into out: with a
 * client certificate its subject (RFC 2253) mapped by
 * ssl.principal.mapping.rules, else "User:ANONYMOUS" (Kafka's
 * DefaultKafkaPrincipalBuilder). Returns 0, or -1 with the reason in err
 * when no mapping rule applies (the client is refused).
 */
int brk_tls_principal(const brk_tls *t, SSL *ssl, char *out, size_t outsize, char *err,
		      size_t errsize);

/* Log, the first time only for t, which path fetched segment bytes take
 * on ssl's connection (kernel TLS + sendfile, or pread + SSL_write, and
 * why). */
void brk_tls_note_path(brk_tls *t, SSL *ssl);

/*
 * A hash of what brk_tls_new reads for listener l: every ssl.* key it
 * uses, and the modification times of the keystore and truststore files.
 * A different value means the listener's context must be made again
 * (Kafka's dynamic listener.name.<l>.ssl.keystore.location, or a file
 * replaced at the same path and the config set again).
 */
uint64_t brk_tls_signature(const brk_config *cfg, const brk_listener *l);

/* The listener name t was made for. */
const char *brk_tls_listener_name(const brk_tls *t);

/*
 * The client side, for this broker's connections to the others on
 * listener l (peer.c): the same ssl.* keys of l, read as a Kafka broker's
 * inter-broker client reads them. The keystore, when one is configured, is
 * the client certificate (for a listener with ssl.client.auth); the
 * truststore (else the system's CAs) verifies the other broker;
 * ssl.endpoint.identification.algorithm "https" (Kafka's default) also
 * checks that its certificate names the host connected to (*verify_host),
 * "" does not. Returns the context (SSL_CTX_free) or NULL with err set.
 */
SSL_CTX *brk_tls_client_ctx_new(const brk_config *cfg, const brk_listener *l, bool *verify_host,
				char *err, size_t errsize);

/*
 * A client session on connected socket fd (non-blocking) to host: SNI for
 * a host name, and with verify_host the check that the certificate names
 * it (a DNS name, or an IP address for a literal). NULL when out of memory.
 */
SSL *brk_tls_connect(SSL_CTX *ctx, int fd, const char *host, bool verify_host);

#endif
