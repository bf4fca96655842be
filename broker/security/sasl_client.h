/*
 * sasl_client.h - the client side of SASL PLAIN and SCRAM-SHA-256/512, for
 * this broker's connections to other brokers (peer.c), as Kafka's
 * PlainSaslClient and ScramSaslClient do it: PLAIN sends
 * NUL username NUL password once; SCRAM sends client-first
 * "n,,n=<user escaped>,r=<nonce>", answers the server-first with the
 * client proof, and checks the server signature of the server-final.
 *
 * Pure computation (OpenSSL for the cryptography and the nonce): the
 * caller carries the tokens.
 */
#ifndef SAMSA_BROKER_SECURITY_SASL_CLIENT_H
#define SAMSA_BROKER_SECURITY_SASL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* Who to authenticate as. */
typedef struct brk_sasl_credentials {
	int mechanism;      /* BRK_SASL_* (sasl.h) */
	char username[256];
	char password[256];
} brk_sasl_credentials;

/* The most bytes of a client token. */
#define BRK_SASL_CLIENT_TOKEN_MAX 1024

typedef struct brk_sasl_client {
	const brk_sasl_credentials *cred;
	int step;
	char nonce[33];
	char first_bare[600];
	char server_signature[100]; /* base64, expected in server-final */
} brk_sasl_client;

void brk_sasl_client_start(brk_sasl_client *c, const brk_sasl_credentials *cred);

/*
 * One step: in is the server's last token (ignored for the first step).
 * Returns 1 with the next token in out (*outlen bytes, out has
 * BRK_SASL_CLIENT_TOKEN_MAX), 0 when the exchange is complete on the
 * client's side (the server's answer to the last token was checked), or
 * -1 with a message in err.
 */
int brk_sasl_client_step(brk_sasl_client *c, const uint8_t *in, size_t inlen, uint8_t *out,
			 size_t *outlen, char *err, size_t errsize);

/* Forget the secrets derived during the exchange. */
void brk_sasl_client_end(brk_sasl_client *c);

#endif
