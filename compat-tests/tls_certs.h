/*
 * tls_certs.h - the certificates of the TLS tests, made once per test
 * program with the openssl command in the harness's base dir (certs/): a
 * CA (ca.pem) and a rogue one; the server (CN=localhost, O=first; SAN
 * localhost and 127.0.0.1) as server.key/server.pem, keystore.pem (key
 * encrypted with "keypass" + certificate), server.p12 (password
 * "storepass"); trust.p12 (the CA, "trustpass"); a second server
 * certificate (O=second) as keystore2.pem and server2.p12 (password
 * "storepass2"); clients alice (O=acme, OU=Eng,
 * CN=Alice, from the CA) and mallory (from the rogue CA). Every step that
 * fails fails the running check test.
 */
#ifndef SAMSA_COMPAT_TLS_CERTS_H
#define SAMSA_COMPAT_TLS_CERTS_H

#include <stdbool.h>
#include <stddef.h>

/* Make them unless an earlier test of the program did. */
void make_certs(void);

/* The path of certificate file name (one of a few rotating buffers). */
const char *cert(const char *name);

/* The organisation (O=) of the certificate TLS port serves ("" if none),
 * read with the openssl command. */
void tls_served_org(int port, char *out, size_t size);

/* Wait up to 10 s until port serves organisation want. */
bool tls_wait_org(int port, const char *want);

#endif
