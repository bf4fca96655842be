/*
 * certs.h - test certificates for the TLS benches, made with the openssl
 * command: an EC P-256 CA (ca.pem) and a server certificate for localhost
 * and 127.0.0.1 signed by it, with its key before it in keystore.pem (a
 * PEM keystore as ssl.keystore.type=PEM reads it).
 */
#ifndef SAMSA_BENCH_CERTS_H
#define SAMSA_BENCH_CERTS_H

#include <stddef.h>

/* Make dir and the files in it. Returns 0, or -1 with what failed on
 * stderr. */
int bench_make_certs(const char *dir);

#endif
