/*
 * sasl_client.c - SASL PLAIN and SCRAM clients (sasl_client.h).
 */
#include "broker/security/sasl_client.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/sasl.h"
#include "broker/security/scram.h"

/* The most iterations a server may ask of us (bounds the work a broken or
 * hostile server can cause; Kafka's servers stay <= 16384). */
#define CLIENT_MAX_ITERATIONS 1000000

/* The mechanism names (declared in sasl.h; here, so that the peer links
 * them without the server side). */
static const struct {
	int bit;
	const char *name;
} mechanisms[] = {
	{ BRK_SASL_PLAIN, "PLAIN" },
	{ BRK_SASL_SCRAM_SHA_256, "SCRAM-SHA-256" },
	{ BRK_SASL_SCRAM_SHA_512, "SCRAM-SHA-512" },
};

const char *brk_sasl_mechanism_name(int m)
{
	for (size_t i = 0; i < sizeof(mechanisms) / sizeof(mechanisms[0]); i++)
		if (mechanisms[i].bit == m)
			return mechanisms[i].name;
	return NULL;
}

int brk_sasl_mechanism_of(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(mechanisms) / sizeof(mechanisms[0]); i++)
		if (strlen(mechanisms[i].name) == len && memcmp(mechanisms[i].name, name, len) == 0)
			return mechanisms[i].bit;
	return 0;
}

void brk_sasl_client_start(brk_sasl_client *c, const brk_sasl_credentials *cred)
{
	memset(c, 0, sizeof(*c));
	c->cred = cred;
}

void brk_sasl_client_end(brk_sasl_client *c) { OPENSSL_cleanse(c, sizeof(*c)); }

static int client_fail(char *err, size_t errsize, const char *msg)
{
	snprintf(err, errsize, "%s", msg);
	return -1;
}

/* The value of attribute a ("r", "s", "i", "v", "e") of a SCRAM server
 * message, as a view; NULL when absent. */
static const char *attr(const char *msg, size_t len, char a, size_t *vlen)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && msg[j] != ',')
			j++;
		if (j - i >= 2 && msg[i] == a && msg[i + 1] == '=') {
			*vlen = j - i - 2;
			return msg + i + 2;
		}
		i = j + 1;
	}
	return NULL;
}

static int scram_step(brk_sasl_client *c, const uint8_t *in, size_t inlen, uint8_t *out,
		      size_t *outlen, char *err, size_t errsize)
{
	int m = c->cred->mechanism;
	size_t kl = brk_scram_key_len(m);
	if (c->step == 0) {
		static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
		uint8_t rnd[32];
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return client_fail(err, errsize, "no random bytes for the SCRAM nonce");
		for (size_t i = 0; i < sizeof(rnd); i++)
			c->nonce[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
		c->nonce[32] = '\0';
		/* the user name with ',' and '=' escaped (RFC 5802 saslname) */
		char user[3 * 256];
		size_t u = 0;
		for (const char *s = c->cred->username; *s; s++) {
			if (*s == ',' || *s == '=') {
				memcpy(user + u, *s == ',' ? "=2C" : "=3D", 3);
				u += 3;
			} else {
				user[u++] = *s;
			}
		}
		user[u] = '\0';
		int n = snprintf(c->first_bare, sizeof(c->first_bare), "n=%s,r=%s", user, c->nonce);
		if (n < 0 || (size_t)n >= sizeof(c->first_bare))
			return client_fail(err, errsize, "SCRAM user name too long");
		*outlen = (size_t)snprintf((char *)out, BRK_SASL_CLIENT_TOKEN_MAX, "n,,%s", c->first_bare);
		c->step = 1;
		return 1;
	}
	const char *msg = (const char *)in;
	if (c->step == 1) {
		size_t rl, sl, il;
		const char *r = attr(msg, inlen, 'r', &rl), *s = attr(msg, inlen, 's', &sl),
			   *it = attr(msg, inlen, 'i', &il);
		if (attr(msg, inlen, 'm', &rl) || !r || !s || !it)
			return client_fail(err, errsize, "SCRAM server-first message does not parse");
		r = attr(msg, inlen, 'r', &rl);
		if (rl <= 32 || memcmp(r, c->nonce, 32) != 0 || memchr(r, ',', rl))
			return client_fail(err, errsize, "SCRAM server nonce does not extend ours");
		uint8_t salt[BRK_SCRAM_MAX_SALT];
		long saltlen = brk_base64_decode(s, sl, false, salt, sizeof(salt));
		long iterations = 0;
		for (size_t i = 0; i < il && iterations <= CLIENT_MAX_ITERATIONS; i++) {
			if (it[i] < '0' || it[i] > '9')
				return client_fail(err, errsize, "SCRAM iteration count does not parse");
			iterations = iterations * 10 + (it[i] - '0');
		}
		if (saltlen < 0 || il == 0 || iterations < BRK_SCRAM_MIN_ITERATIONS ||
		    iterations > CLIENT_MAX_ITERATIONS)
			return client_fail(err, errsize, "SCRAM salt or iteration count refused");
		uint8_t salted[BRK_SCRAM_MAX_KEY];
		brk_scram_credential cred;
		if (brk_scram_salted_password(m, c->cred->password, strlen(c->cred->password), salt,
					      (size_t)saltlen, (int32_t)iterations, salted) < 0 ||
		    brk_scram_credential_from_salted(m, salted, kl, salt, (size_t)saltlen,
						     (int32_t)iterations, &cred) < 0)
			return client_fail(err, errsize, "SCRAM computation failed");
		uint8_t client_key[BRK_SCRAM_MAX_KEY];
		brk_scram_hmac(m, salted, kl, "Client Key", 10, client_key);
		char without_proof[400];
		int wl = snprintf(without_proof, sizeof(without_proof), "c=biws,r=%.*s", (int)rl, r);
		size_t alen = strlen(c->first_bare) + 1 + inlen + 1 + (size_t)wl;
		char *auth = malloc(alen + 1);
		if (!auth || wl < 0 || (size_t)wl >= sizeof(without_proof)) {
			free(auth);
			return client_fail(err, errsize, "SCRAM messages too long");
		}
		snprintf(auth, alen + 1, "%s,%.*s,%s", c->first_bare, (int)inlen, msg, without_proof);
		uint8_t sig[BRK_SCRAM_MAX_KEY], ssig[BRK_SCRAM_MAX_KEY], proof[BRK_SCRAM_MAX_KEY];
		brk_scram_hmac(m, cred.stored_key, kl, auth, alen, sig);
		brk_scram_hmac(m, cred.server_key, kl, auth, alen, ssig);
		free(auth);
		for (size_t i = 0; i < kl; i++)
			proof[i] = client_key[i] ^ sig[i];
		char proof64[4 * (BRK_SCRAM_MAX_KEY / 3 + 1) + 1];
		brk_base64_encode(proof, kl, proof64);
		brk_base64_encode(ssig, kl, c->server_signature);
		OPENSSL_cleanse(salted, sizeof(salted));
		OPENSSL_cleanse(client_key, sizeof(client_key));
		OPENSSL_cleanse(&cred, sizeof(cred));
		int n = snprintf((char *)out, BRK_SASL_CLIENT_TOKEN_MAX, "%s,p=%s", without_proof, proof64);
		if (n < 0 || n >= BRK_SASL_CLIENT_TOKEN_MAX)
			return client_fail(err, errsize, "SCRAM messages too long");
		*outlen = (size_t)n;
		c->step = 2;
		return 1;
	}
	size_t vl;
	const char *v = attr(msg, inlen, 'v', &vl);
	if (attr(msg, inlen, 'e', &vl))
		return client_fail(err, errsize, "SCRAM server-final carries an error");
	if (!v || vl != strlen(c->server_signature) || CRYPTO_memcmp(v, c->server_signature, vl) != 0)
		return client_fail(err, errsize, "SCRAM server signature does not match");
	return 0;
}

int brk_sasl_client_step(brk_sasl_client *c, const uint8_t *in, size_t inlen, uint8_t *out,
			 size_t *outlen, char *err, size_t errsize)
{
	if (c->cred->mechanism == BRK_SASL_PLAIN) {
		if (c->step == 1)
			return 0; /* the server's (empty) answer: done */
		size_t ul = strlen(c->cred->username), pl = strlen(c->cred->password);
		if (ul + pl + 2 > BRK_SASL_CLIENT_TOKEN_MAX)
			return client_fail(err, errsize, "PLAIN credentials too long");
		out[0] = 0;
		memcpy(out + 1, c->cred->username, ul);
		out[1 + ul] = 0;
		memcpy(out + 2 + ul, c->cred->password, pl);
		*outlen = ul + pl + 2;
		c->step = 1;
		return 1;
	}
	if (brk_scram_key_len(c->cred->mechanism) == 0)
		return client_fail(err, errsize, "mechanism not supported");
	return scram_step(c, in, inlen, out, outlen, err, errsize);
}
