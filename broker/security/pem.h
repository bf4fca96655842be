/*
 * pem.h - PEM text as Kafka's inline PEM configs hold it (KIP-651:
 * ssl.keystore.key, ssl.keystore.certificate.chain,
 * ssl.truststore.certificates), made into PEM that OpenSSL reads.
 *
 * Kafka's documentation writes these in server.properties with line
 * continuations ("ssl.keystore.key=-----BEGIN PRIVATE KEY----- \"); the
 * properties reader joins the lines and drops their leading white space, so
 * the value is one line with spaces inside the base64. Kafka's PEM reader
 * (DefaultSslEngineFactory's PemParser) drops white space inside the
 * base64; OpenSSL wants lines. brk_pem_text rebuilds each
 * "-----BEGIN X-----" ... "-----END X-----" block with its base64 (white
 * space dropped) on lines of 64 characters; a value that already has line
 * breaks ("\n"-escaped in the file) comes out the same PEM. Text between
 * blocks is dropped (as Kafka's reader skips it). A block whose body is
 * not plain base64 (RFC 1421 headers such as "Proc-Type:") is kept as it
 * is; so is a value with no block, for OpenSSL to refuse.
 */
#ifndef SAMSA_BROKER_SECURITY_PEM_H
#define SAMSA_BROKER_SECURITY_PEM_H

/* The PEM text of config value v, malloc'd (the caller frees), or NULL when
 * out of memory. */
char *brk_pem_text(const char *v);

#endif
