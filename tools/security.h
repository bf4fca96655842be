/*
 * security.h - how samsa-admin reaches a secured listener: the client keys
 * of Kafka's --command-config properties file, as Kafka's command line
 * tools (kafka-acls.sh, kafka-configs.sh...) read them:
 *
 *   security.protocol   PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
 *   sasl.mechanism      PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's
 *                       default GSSAPI is not served: an error)
 *   sasl.jaas.config    one PlainLoginModule or ScramLoginModule entry with
 *                       username= and password= (broker/security/jaas.h)
 *   ssl.truststore.location/type/password, ssl.truststore.certificates,
 *   ssl.keystore.location/type/password, ssl.key.password (mutual TLS),
 *   ssl.keystore.certificate.chain/key, ssl.enabled.protocols,
 *   ssl.cipher.suites, ssl.endpoint.identification.algorithm ("https", the
 *   default, checks the broker's certificate names the host; "" does not)
 *
 * The file is read by the broker's own properties reader
 * (brk_config_load), the TLS context is the broker's inter-broker client
 * context (brk_tls_client_ctx_new), the SASL exchange the broker's client
 * side (broker/security/sasl_client.h): conn.c runs them per connection.
 *
 * Errors: adm_security_load returns 0, or -1 with one line in err.
 */
#ifndef SAMSA_TOOLS_SECURITY_H
#define SAMSA_TOOLS_SECURITY_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "broker/security/sasl_client.h"

typedef struct adm_security {
	bool tls;                  /* SSL or SASL_SSL */
	bool sasl;                 /* SASL_PLAINTEXT or SASL_SSL */
	SSL_CTX *ssl_ctx;          /* owned; NULL without TLS */
	bool verify_host;          /* ssl.endpoint.identification.algorithm=https */
	brk_sasl_credentials cred; /* with sasl */
} adm_security;

/* Plaintext, no SASL. */
void adm_security_none(adm_security *s);

/* Read the properties file path into s. 0, or -1 with err (s left as
 * adm_security_none). */
int adm_security_load(adm_security *s, const char *path, char *err, size_t errsize);

/* Free the TLS context and forget the password. */
void adm_security_free(adm_security *s);

#endif
