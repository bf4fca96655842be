/*
 * scram.c - SCRAM message parsers, credential strings and the RFC 5802
 * computations (scram.h).
 */
#include "broker/security/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t brk_base64_encode(const uint8_t *in, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long brk_base64_decode(const char *in, size_t len, bool strict, uint8_t *out, size_t outsize)
{
	size_t pad = 0;
	while (pad < 2 && len > pad && in[len - 1 - pad] == '=')
		pad++;
	size_t data = len - pad;
	if (strict && len % 4 != 0)
		return -1;
	if (!strict && pad && len % 4 != 0)
		return -1; /* padding, but not to a whole quantum */
	if (data % 4 == 1)
		return -1;
	size_t n = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
	if (n > outsize)
		return -1;
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < data; i++) {
		int v = b64_value(in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)
		return -1; /* leftover bits must be zero (canonical form) */
	return (long)o;
}

/* ---- message grammar ---- */

/* Kafka's VALUE: 0x01-0x7F but ','. */
static bool value_char(unsigned char c) { return c >= 0x01 && c <= 0x7f && c != ','; }
/* PRINTABLE: 0x21-0x7E but ','. */
static bool printable_char(unsigned char c) { return c >= 0x21 && c <= 0x7e && c != ','; }
static bool alpha_char(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* The length of a saslname at s (n bytes): VALUE_SAFE chars or =2C / =3D;
 * 0 when none. */
static size_t saslname_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c == '=') {
			if (i + 3 <= n && s[i + 1] == '2' && s[i + 2] == 'C')
				i += 3;
			else if (i + 3 <= n && s[i + 1] == '3' && s[i + 2] == 'D')
				i += 3;
			else
				break;
		} else if (value_char(c)) {
			i++;
		} else {
			break;
		}
	}
	return i;
}

/* Extensions ",<alpha>=<value>" from s to its end; token_auth set when
 * tokenauth=true. Returns 0 or -1. */
static int parse_extensions(const char *s, size_t n, bool *token_auth)
{
	size_t i = 0;
	while (i < n) {
		if (s[i] != ',')
			return -1;
		i++;
		size_t k = i;
		while (i < n && alpha_char((unsigned char)s[i]))
			i++;
		if (i == k || i >= n || s[i] != '=')
			return -1;
		size_t klen = i - k;
		i++;
		size_t v = i;
		while (i < n && value_char((unsigned char)s[i]))
			i++;
		if (i == v)
			return -1;
		/* Kafka's Utils.parseMap: the later of a key wins. */
		if (token_auth && klen == 9 && strncmp(s + k, "tokenauth", 9) == 0)
			*token_auth = i - v == 4 && strncasecmp(s + v, "true", 4) == 0;
	}
	return 0;
}

int brk_scram_parse_client_first(const uint8_t *msg, size_t len, brk_scram_client_first *out)
{
	const char *s = (const char *)msg;
	size_t i = 0;
	memset(out, 0, sizeof(*out));
	out->authzid = "";
	if (len < 2 || s[0] != 'n' || s[1] != ',')
		return -1;
	i = 2;
	if (i + 2 <= len && s[i] == 'a' && s[i + 1] == '=') {
		size_t a = saslname_len(s + i + 2, len - i - 2);
		if (a == 0)
			return -1;
		out->authzid = s + i + 2;
		out->authzid_len = a;
		i += 2 + a;
	}
	if (i >= len || s[i] != ',')
		return -1;
	i++;
	if (i + 2 <= len && s[i] == 'm' && s[i + 1] == '=') {
		size_t v = i + 2;
		while (v < len && value_char((unsigned char)s[v]))
			v++;
		if (v == i + 2 || v >= len || s[v] != ',')
			return -1;
		i = v + 1;
	}
	if (i + 2 > len || s[i] != 'n' || s[i + 1] != '=')
		return -1;
	out->bare = s + i;
	out->bare_len = len - i;
	i += 2;
	size_t nl = saslname_len(s + i, len - i);
	if (nl == 0)
		return -1;
	/* unescape =2C and =3D (Kafka's ScramFormatter.username) */
	size_t u = 0;
	for (size_t k = 0; k < nl; k++) {
		char c = s[i + k];
		if (c == '=') {
			c = s[i + k + 1] == '2' ? ',' : '=';
			k += 2;
		}
		if (u + 1 >= sizeof(out->username))
			return -1;
		out->username[u++] = c;
	}
	out->username[u] = '\0';
	i += nl;
	if (i + 3 > len || s[i] != ',' || s[i + 1] != 'r' || s[i + 2] != '=')
		return -1;
	i += 3;
	size_t r = i;
	while (i < len && printable_char((unsigned char)s[i]))
		i++;
	if (i == r)
		return -1;
	out->nonce = s + r;
	out->nonce_len = i - r;
	return parse_extensions(s + i, len - i, &out->token_auth);
}

int brk_scram_parse_client_final(const uint8_t *msg, size_t len, brk_scram_client_final *out)
{
	const char *s = (const char *)msg;
	memset(out, 0, sizeof(*out));
	/* The proof is the text after the last ",p=" (base64 has no ','). */
	size_t p = len;
	while (p >= 3 && !(s[p - 3] == ',' && s[p - 2] == 'p' && s[p - 1] == '='))
		p--;
	if (p < 3)
		return -1;
	out->without_proof = s;
	out->without_proof_len = p - 3;
	long pl = brk_base64_decode(s + p, len - p, true, out->proof, sizeof(out->proof));
	if (pl <= 0)
		return -1;
	out->proof_len = (size_t)pl;
	size_t n = out->without_proof_len, i = 0;
	if (n < 2 || s[0] != 'c' || s[1] != '=')
		return -1;
	i = 2;
	size_t c = i;
	while (i < n && s[i] != ',')
		i++;
	uint8_t cb[128];
	if (brk_base64_decode(s + c, i - c, true, cb, sizeof(cb)) < 0)
		return -1;
	if (i + 3 > n || s[i] != ',' || s[i + 1] != 'r' || s[i + 2] != '=')
		return -1;
	i += 3;
	size_t r = i;
	while (i < n && printable_char((unsigned char)s[i]))
		i++;
	if (i == r)
		return -1;
	out->nonce = s + r;
	out->nonce_len = i - r;
	return parse_extensions(s + i, n - i, NULL);
}

/* ---- credential strings ---- */

int brk_scram_credential_parse(const char *s, size_t len, brk_scram_credential *out)
{
	memset(out, 0, sizeof(*out));
	/* Java's String.split(","): trailing empty parts are dropped. */
	while (len > 0 && s[len - 1] == ',')
		len--;
	const char *val[4] = { 0 };
	size_t vlen[4] = { 0 };
	static const char *const keys[4] = { "salt", "stored_key", "server_key", "iterations" };
	int distinct_other = 0;
	size_t i = 0;
	if (len == 0)
		return -1;
	while (i <= len) {
		size_t start = i;
		while (i < len && s[i] != ',')
			i++;
		const char *tok = s + start;
		size_t tl = i - start;
		const char *eq = memchr(tok, '=', tl);
		if (!eq || eq == tok)
			return -1;
		size_t kl = (size_t)(eq - tok);
		int k;
		for (k = 0; k < 4; k++)
			if (strlen(keys[k]) == kl && memcmp(keys[k], tok, kl) == 0)
				break;
		if (k < 4) {
			val[k] = eq + 1;
			vlen[k] = tl - kl - 1;
		} else {
			distinct_other++;
		}
		i++;
	}
	for (int k = 0; k < 4; k++)
		if (!val[k])
			return -1;
	if (distinct_other)
		return -1; /* Kafka: exactly these four properties */
	long sl = brk_base64_decode(val[0], vlen[0], false, out->salt, sizeof(out->salt));
	long kl1 = brk_base64_decode(val[1], vlen[1], false, out->stored_key, sizeof(out->stored_key));
	long kl2 = brk_base64_decode(val[2], vlen[2], false, out->server_key, sizeof(out->server_key));
	if (sl < 0 || kl1 <= 0 || kl1 != kl2)
		return -1;
	out->salt_len = (size_t)sl;
	out->key_len = (size_t)kl1;
	/* Java's Integer.parseInt: an optional sign, decimal digits, int range. */
	const char *it = val[3];
	size_t il = vlen[3], j = 0;
	bool neg = false;
	if (il > 0 && (it[0] == '-' || it[0] == '+')) {
		neg = it[0] == '-';
		j = 1;
	}
	if (j == il)
		return -1;
	int64_t v = 0;
	for (; j < il; j++) {
		if (it[j] < '0' || it[j] > '9')
			return -1;
		v = v * 10 + (it[j] - '0');
		if (v > (int64_t)INT32_MAX + 1)
			return -1;
	}
	if (neg)
		v = -v;
	if (v > INT32_MAX || v < INT32_MIN)
		return -1;
	out->iterations = (int32_t)v;
	return 0;
}

int brk_scram_credential_format(const brk_scram_credential *c, char *out, size_t outsize)
{
	char salt[4 * (BRK_SCRAM_MAX_SALT / 3 + 1) + 1];
	char sk[4 * (BRK_SCRAM_MAX_KEY / 3 + 1) + 1], vk[sizeof(sk)];
	brk_base64_encode(c->salt, c->salt_len, salt);
	brk_base64_encode(c->stored_key, c->key_len, sk);
	brk_base64_encode(c->server_key, c->key_len, vk);
	int n = snprintf(out, outsize, "salt=%s,stored_key=%s,server_key=%s,iterations=%d", salt, sk,
			 vk, (int)c->iterations);
	return n < 0 || (size_t)n >= outsize ? -1 : n;
}

/* ---- cryptography ---- */

static const EVP_MD *digest(int mechanism)
{
	switch (mechanism) {
	case BRK_SASL_SCRAM_SHA_256:
		return EVP_sha256();
	case BRK_SASL_SCRAM_SHA_512:
		return EVP_sha512();
	default:
		return NULL;
	}
}

size_t brk_scram_key_len(int mechanism)
{
	return mechanism == BRK_SASL_SCRAM_SHA_256 ? 32 : mechanism == BRK_SASL_SCRAM_SHA_512 ? 64 : 0;
}

int brk_scram_hmac(int mechanism, const uint8_t *key, size_t key_len, const void *data,
		   size_t len, uint8_t *out)
{
	const EVP_MD *md = digest(mechanism);
	unsigned int ol = 0;
	if (!md || key_len > INT32_MAX)
		return -1;
	return HMAC(md, key, (int)key_len, data, len, out, &ol) ? 0 : -1;
}

int brk_scram_hash(int mechanism, const void *data, size_t len, uint8_t *out)
{
	const EVP_MD *md = digest(mechanism);
	unsigned int ol = 0;
	return md && EVP_Digest(data, len, out, &ol, md, NULL) == 1 ? 0 : -1;
}

int brk_scram_salted_password(int mechanism, const char *password, size_t password_len,
			      const uint8_t *salt, size_t salt_len, int32_t iterations,
			      uint8_t *out)
{
	const EVP_MD *md = digest(mechanism);
	if (!md || iterations < 1 || password_len > INT32_MAX || salt_len > INT32_MAX)
		return -1;
	return PKCS5_PBKDF2_HMAC(password, (int)password_len, salt, (int)salt_len, iterations, md,
				 (int)brk_scram_key_len(mechanism), out) == 1 ? 0 : -1;
}

int brk_scram_credential_from_salted(int mechanism, const uint8_t *salted, size_t salted_len,
				     const uint8_t *salt, size_t salt_len, int32_t iterations,
				     brk_scram_credential *out)
{
	size_t kl = brk_scram_key_len(mechanism);
	uint8_t client_key[BRK_SCRAM_MAX_KEY];
	if (!kl || salt_len > sizeof(out->salt))
		return -1;
	memset(out, 0, sizeof(*out));
	if (brk_scram_hmac(mechanism, salted, salted_len, "Client Key", 10, client_key) < 0 ||
	    brk_scram_hash(mechanism, client_key, kl, out->stored_key) < 0 ||
	    brk_scram_hmac(mechanism, salted, salted_len, "Server Key", 10, out->server_key) < 0)
		return -1;
	OPENSSL_cleanse(client_key, sizeof(client_key));
	if (salt_len)
		memcpy(out->salt, salt, salt_len);
	out->salt_len = salt_len;
	out->key_len = kl;
	out->iterations = iterations;
	return 0;
}

bool brk_scram_verify_proof(int mechanism, const brk_scram_credential *c,
			    const char *auth_message, size_t auth_len, const uint8_t *proof,
			    size_t proof_len)
{
	size_t kl = brk_scram_key_len(mechanism);
	uint8_t sig[BRK_SCRAM_MAX_KEY], client_key[BRK_SCRAM_MAX_KEY], stored[BRK_SCRAM_MAX_KEY];
	if (!kl || c->key_len != kl || proof_len != kl)
		return false;
	if (brk_scram_hmac(mechanism, c->stored_key, kl, auth_message, auth_len, sig) < 0)
		return false;
	for (size_t i = 0; i < kl; i++)
		client_key[i] = proof[i] ^ sig[i];
	bool ok = brk_scram_hash(mechanism, client_key, kl, stored) == 0 &&
		  CRYPTO_memcmp(stored, c->stored_key, kl) == 0;
	OPENSSL_cleanse(client_key, sizeof(client_key));
	return ok;
}
