/*
 * password_encoder.c - Kafka's stored form of dynamic password configs:
 * PBKDF2 key, AES, the parameters written beside the ciphertext.
 */
#include "broker/security/password_encoder.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/errbuf.h"
#include "broker/security/scram.h" /* brk_base64_* */

#define SALT_BYTES 256     /* Kafka's encoder: new Array[Byte](256) */
#define CBC_IV_BYTES 16    /* Java's random IV for AES/CBC and AES/CTR */
#define GCM_IV_BYTES 12    /* Java's random IV for AES/GCM */
#define GCM_TAG_BITS 128   /* Java's default tag */
#define MAX_SALT_BYTES 4096

/* ---- algorithms ---- */

static const EVP_MD *key_factory_md(const char *name)
{
	static const struct {
		const char *name;
		const EVP_MD *(*md)(void);
	} kf[] = {
		{ "PBKDF2WithHmacSHA512", EVP_sha512 }, { "PBKDF2WithHmacSHA384", EVP_sha384 },
		{ "PBKDF2WithHmacSHA256", EVP_sha256 }, { "PBKDF2WithHmacSHA224", EVP_sha224 },
		{ "PBKDF2WithHmacSHA1", EVP_sha1 },
	};
	for (size_t i = 0; i < sizeof(kf) / sizeof(kf[0]); i++)
		if (strcasecmp(name, kf[i].name) == 0)
			return kf[i].md();
	return NULL;
}

enum mode { MODE_NONE, MODE_CBC, MODE_CTR, MODE_GCM };

static enum mode cipher_mode(const char *name)
{
	if (strcasecmp(name, "AES/CBC/PKCS5Padding") == 0)
		return MODE_CBC;
	if (strcasecmp(name, "AES/CTR/NoPadding") == 0)
		return MODE_CTR;
	if (strcasecmp(name, "AES/GCM/NoPadding") == 0)
		return MODE_GCM;
	return MODE_NONE;
}

static const EVP_CIPHER *cipher_of(enum mode m, int key_bits)
{
	switch (m) {
	case MODE_CBC:
		return key_bits == 128 ? EVP_aes_128_cbc() : key_bits == 192 ? EVP_aes_192_cbc()
			: key_bits == 256 ? EVP_aes_256_cbc() : NULL;
	case MODE_CTR:
		return key_bits == 128 ? EVP_aes_128_ctr() : key_bits == 192 ? EVP_aes_192_ctr()
			: key_bits == 256 ? EVP_aes_256_ctr() : NULL;
	case MODE_GCM:
		return key_bits == 128 ? EVP_aes_128_gcm() : key_bits == 192 ? EVP_aes_192_gcm()
			: key_bits == 256 ? EVP_aes_256_gcm() : NULL;
	default:
		return NULL;
	}
}

static const char *kf_name(const brk_password_encoder *e)
{
	return e->keyfactory_algorithm && *e->keyfactory_algorithm ? e->keyfactory_algorithm
								   : "PBKDF2WithHmacSHA512";
}

static const char *cipher_name(const brk_password_encoder *e)
{
	return e->cipher_algorithm && *e->cipher_algorithm ? e->cipher_algorithm
							   : "AES/CBC/PKCS5Padding";
}

static int key_bits(const brk_password_encoder *e) { return e->key_length ? e->key_length : 128; }
static int iterations(const brk_password_encoder *e) { return e->iterations ? e->iterations : 4096; }

int brk_password_encoder_check(const brk_password_encoder *e, char *err, size_t errsize)
{
	if (!e->secret || !*e->secret)
		return brk_fail(err, errsize, "Password encoder secret not configured");
	if (!key_factory_md(kf_name(e)))
		return brk_fail(err, errsize, "password.encoder.keyfactory.algorithm=%s: not supported "
			    "(PBKDF2WithHmacSHA512, SHA384, SHA256, SHA224 or SHA1)", kf_name(e));
	enum mode m = cipher_mode(cipher_name(e));
	if (m == MODE_NONE)
		return brk_fail(err, errsize, "password.encoder.cipher.algorithm=%s: not supported "
			    "(AES/CBC/PKCS5Padding, AES/CTR/NoPadding or AES/GCM/NoPadding)",
			    cipher_name(e));
	if (!cipher_of(m, key_bits(e)))
		return brk_fail(err, errsize, "password.encoder.key.length=%d: AES takes 128, 192 or 256",
			    key_bits(e));
	if (iterations(e) < BRK_PASSWORD_MIN_ITERATIONS || iterations(e) > BRK_PASSWORD_MAX_ITERATIONS)
		return brk_fail(err, errsize, "password.encoder.iterations=%d: must be at least %d and at most %d",
			    iterations(e), BRK_PASSWORD_MIN_ITERATIONS, BRK_PASSWORD_MAX_ITERATIONS);
	return 0;
}

/* Java's String.length of UTF-8 text s (n bytes): UTF-16 units; -1 when s
 * is not UTF-8 or holds a NUL. */
static long utf16_length(const unsigned char *s, size_t n)
{
	long units = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t extra;
		uint32_t cp;
		if (c == 0)
			return -1;
		if (c < 0x80) {
			extra = 0;
			cp = c;
		} else if ((c & 0xe0) == 0xc0) {
			extra = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			extra = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			extra = 3;
			cp = c & 0x07;
		} else {
			return -1;
		}
		if (n - i - 1 < extra)
			return -1;
		for (size_t k = 1; k <= extra; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return -1;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		static const uint32_t min_cp[] = { 0, 0x80, 0x800, 0x10000 };
		if (cp < min_cp[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1; /* overlong, out of range, surrogate */
		units += cp >= 0x10000 ? 2 : 1;
		i += 1 + extra;
	}
	return units;
}

static int derive_key(const char *secret, const unsigned char *salt, size_t salt_len, int iter,
		      const EVP_MD *md, unsigned char *key, int key_len)
{
	return PKCS5_PBKDF2_HMAC(secret, (int)strlen(secret), salt, (int)salt_len, iter, md, key_len,
				 key) == 1
		       ? 0
		       : -1;
}

/* ---- encode ---- */

/* Append base64 of b (n bytes) to out at *pos. */
static void put_b64(char *out, size_t *pos, const unsigned char *b, size_t n)
{
	*pos += brk_base64_encode(b, n, out + *pos);
}

char *brk_password_encode(const brk_password_encoder *e, const char *password, char *err,
			  size_t errsize)
{
	if (brk_password_encoder_check(e, err, errsize) < 0)
		return NULL;
	size_t plen = strlen(password);
	long units = utf16_length((const unsigned char *)password, plen);
	if (units < 0) {
		brk_fail(err, errsize, "the password is not UTF-8 text");
		return NULL;
	}
	if (plen > BRK_PASSWORD_MAX_ENCODED / 2) {
		brk_fail(err, errsize, "the password is longer than %d bytes", BRK_PASSWORD_MAX_ENCODED / 2);
		return NULL;
	}
	enum mode m = cipher_mode(cipher_name(e));
	const EVP_CIPHER *cipher = cipher_of(m, key_bits(e));
	int key_len = key_bits(e) / 8;
	int iv_len = m == MODE_GCM ? GCM_IV_BYTES : CBC_IV_BYTES;
	unsigned char salt[SALT_BYTES], iv[CBC_IV_BYTES], key[32];
	if (RAND_bytes(salt, sizeof(salt)) != 1 || RAND_bytes(iv, iv_len) != 1) {
		brk_fail(err, errsize, "no random bytes for the salt");
		return NULL;
	}
	char *out = NULL;
	unsigned char *ct = malloc(plen + 16 + GCM_TAG_BITS / 8);
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n1 = 0, n2 = 0;
	if (!ct || !ctx) {
		brk_fail(err, errsize, "out of memory");
		goto done;
	}
	if (derive_key(e->secret, salt, sizeof(salt), iterations(e), key_factory_md(kf_name(e)), key,
		       key_len) < 0 ||
	    EVP_EncryptInit_ex(ctx, cipher, NULL, NULL, NULL) != 1 ||
	    (m == MODE_GCM && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, iv_len, NULL) != 1) ||
	    EVP_EncryptInit_ex(ctx, NULL, NULL, key, iv) != 1 ||
	    EVP_EncryptUpdate(ctx, ct, &n1, (const unsigned char *)password, (int)plen) != 1 ||
	    EVP_EncryptFinal_ex(ctx, ct + n1, &n2) != 1 ||
	    (m == MODE_GCM && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, GCM_TAG_BITS / 8,
						  ct + n1 + n2) != 1)) {
		brk_fail(err, errsize, "the password could not be encrypted");
		goto done;
	}
	size_t ctlen = (size_t)(n1 + n2) + (m == MODE_GCM ? GCM_TAG_BITS / 8 : 0);
	size_t cap = 256 + 4 * (sizeof(salt) / 3 + 1) + 4 * (ctlen / 3 + 1) + 4 * (sizeof(iv) / 3 + 1);
	out = malloc(cap);
	if (!out) {
		brk_fail(err, errsize, "out of memory");
		goto done;
	}
	size_t pos = (size_t)snprintf(out, cap, "keyFactoryAlgorithm:%s,cipherAlgorithm:%s,keyLength:%d,salt:",
				      kf_name(e), cipher_name(e), key_bits(e));
	put_b64(out, &pos, salt, sizeof(salt));
	pos += (size_t)snprintf(out + pos, cap - pos, ",iterations:%d,encryptedPassword:", iterations(e));
	put_b64(out, &pos, ct, ctlen);
	pos += (size_t)snprintf(out + pos, cap - pos, ",passwordLength:%ld,initializationVector:", units);
	put_b64(out, &pos, iv, (size_t)iv_len);
	if (m == MODE_GCM)
		snprintf(out + pos, cap - pos, ",authenticationTagLength:%d", GCM_TAG_BITS);
done:
	OPENSSL_cleanse(key, sizeof(key));
	EVP_CIPHER_CTX_free(ctx);
	free(ct);
	return out;
}

/* ---- decode ---- */

enum field { F_KF, F_CIPHER, F_KEYLEN, F_SALT, F_ITER, F_CT, F_PWLEN, F_IV, F_TAGLEN, NFIELDS };
static const char *const field_names[NFIELDS] = {
	"keyFactoryAlgorithm", "cipherAlgorithm", "keyLength", "salt", "iterations",
	"encryptedPassword", "passwordLength", "initializationVector", "authenticationTagLength",
};

typedef struct span {
	const char *p;
	size_t n;
	bool set;
} span;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static span trim(const char *p, size_t n)
{
	while (n && is_ws(*p))
		p++, n--;
	while (n && is_ws(p[n - 1]))
		n--;
	return (span){ p, n, true };
}

/* Kafka's parseCsvMap into the fields we read; -1 when a pair has no ':'. */
static int parse_map(const char *s, size_t len, span *f)
{
	memset(f, 0, sizeof(span) * NFIELDS);
	size_t i = 0;
	while (i <= len) {
		size_t j = i;
		while (j < len && s[j] != ',')
			j++;
		size_t colon = SIZE_MAX;
		for (size_t k = i; k < j; k++)
			if (s[k] == ':')
				colon = k;
		if (colon == SIZE_MAX)
			return -1;
		span key = trim(s + i, colon - i);
		for (int x = 0; x < NFIELDS; x++)
			if (key.n == strlen(field_names[x]) && memcmp(key.p, field_names[x], key.n) == 0)
				f[x] = trim(s + colon + 1, j - colon - 1);
		i = j + 1;
	}
	return 0;
}

/* Java's Integer.parseInt: optional sign, digits, within int. */
static bool parse_int(span v, long *out)
{
	size_t i = 0;
	bool neg = false;
	if (v.n && (v.p[0] == '+' || v.p[0] == '-'))
		neg = v.p[i++] == '-';
	if (i == v.n)
		return false;
	long x = 0;
	for (; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return false;
		x = x * 10 + (v.p[i] - '0');
		if (x > 2147483648L)
			return false;
	}
	if (!neg && x > 2147483647L)
		return false;
	*out = neg ? -x : x;
	return true;
}

/* Java's basic Base64 decoder (padding optional) of v into a malloc'd
 * buffer; -1 on bad input. */
static long b64(span v, unsigned char **out)
{
	*out = malloc(v.n / 4 * 3 + 3);
	if (!*out)
		return -1;
	long n = brk_base64_decode(v.p, v.n, false, *out, v.n / 4 * 3 + 3);
	if (n < 0) {
		free(*out);
		*out = NULL;
	}
	return n;
}

char *brk_password_decode_bounded(const char *secret, const char *encoded, size_t len,
				  int max_iterations, char *err, size_t errsize)
{
	if (!secret || !*secret) {
		brk_fail(err, errsize, "Password encoder secret not configured");
		return NULL;
	}
	if (len > BRK_PASSWORD_MAX_ENCODED) {
		brk_fail(err, errsize, "the stored value is longer than %d bytes", BRK_PASSWORD_MAX_ENCODED);
		return NULL;
	}
	span f[NFIELDS];
	if (parse_map(encoded, len, f) < 0) {
		brk_fail(err, errsize, "the stored value is not a key:value list");
		return NULL;
	}
	for (int x = 0; x < NFIELDS; x++)
		if (!f[x].set && x != F_TAGLEN) {
			brk_fail(err, errsize, "the stored value has no %s", field_names[x]);
			return NULL;
		}
	char kf[64], cn[64];
	if (f[F_KF].n >= sizeof(kf) || f[F_CIPHER].n >= sizeof(cn)) {
		brk_fail(err, errsize, "algorithm not served");
		return NULL;
	}
	memcpy(kf, f[F_KF].p, f[F_KF].n);
	kf[f[F_KF].n] = '\0';
	memcpy(cn, f[F_CIPHER].p, f[F_CIPHER].n);
	cn[f[F_CIPHER].n] = '\0';
	const EVP_MD *md = key_factory_md(kf);
	enum mode m = cipher_mode(cn);
	long keylen, iter, pwlen, taglen = GCM_TAG_BITS;
	if (!md || m == MODE_NONE) {
		brk_fail(err, errsize, "%s %s not served", md ? "cipher algorithm" : "key factory algorithm",
		     md ? cn : kf);
		return NULL;
	}
	if (!parse_int(f[F_KEYLEN], &keylen) || !parse_int(f[F_ITER], &iter) ||
	    !parse_int(f[F_PWLEN], &pwlen) ||
	    (m == MODE_GCM && (!f[F_TAGLEN].set || !parse_int(f[F_TAGLEN], &taglen)))) {
		brk_fail(err, errsize, "a number of the stored value is not an integer");
		return NULL;
	}
	const EVP_CIPHER *cipher = cipher_of(m, (int)keylen);
	if (!cipher) {
		brk_fail(err, errsize, "keyLength %ld is not an AES key length", keylen);
		return NULL;
	}
	if (iter < 1 || iter > max_iterations) {
		brk_fail(err, errsize, "iterations %ld out of range", iter);
		return NULL;
	}
	if (m == MODE_GCM && (taglen < 96 || taglen > 128 || taglen % 8)) {
		brk_fail(err, errsize, "authenticationTagLength %ld not served", taglen);
		return NULL;
	}
	unsigned char *salt = NULL, *ct = NULL, *iv = NULL, *pt = NULL, key[32];
	char *result = NULL;
	EVP_CIPHER_CTX *ctx = NULL;
	long salt_len = b64(f[F_SALT], &salt), ct_len = b64(f[F_CT], &ct), iv_len = b64(f[F_IV], &iv);
	if (salt_len < 1 || salt_len > MAX_SALT_BYTES || ct_len < 0 || iv_len < 0) {
		brk_fail(err, errsize, "salt, encryptedPassword or initializationVector is not base64");
		goto done;
	}
	size_t tag = m == MODE_GCM ? (size_t)taglen / 8 : 0;
	if ((m != MODE_GCM && iv_len != CBC_IV_BYTES) || (m == MODE_GCM && iv_len < 1) ||
	    (size_t)ct_len < tag || (m == MODE_CBC && (ct_len == 0 || ct_len % 16))) {
		brk_fail(err, errsize, "initializationVector or encryptedPassword of a wrong length");
		goto done;
	}
	pt = malloc((size_t)ct_len + 16 + 1);
	ctx = EVP_CIPHER_CTX_new();
	if (!pt || !ctx) {
		brk_fail(err, errsize, "out of memory");
		goto done;
	}
	int n1 = 0, n2 = 0;
	int body = (int)((size_t)ct_len - tag);
	if (derive_key(secret, salt, (size_t)salt_len, (int)iter, md, key, (int)keylen / 8) < 0 ||
	    EVP_DecryptInit_ex(ctx, cipher, NULL, NULL, NULL) != 1 ||
	    (m == MODE_GCM &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)iv_len, NULL) != 1) ||
	    EVP_DecryptInit_ex(ctx, NULL, NULL, key, iv) != 1 ||
	    EVP_DecryptUpdate(ctx, pt, &n1, ct, body) != 1 ||
	    (m == MODE_GCM &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, (int)tag, ct + body) != 1) ||
	    EVP_DecryptFinal_ex(ctx, pt + n1, &n2) != 1) {
		brk_fail(err, errsize, "Password could not be decoded");
		goto done;
	}
	size_t plen = (size_t)(n1 + n2);
	pt[plen] = '\0';
	long units = utf16_length(pt, plen);
	if (units < 0 || units != pwlen) {
		brk_fail(err, errsize, "Password could not be decoded, sanity check of length failed");
		goto done;
	}
	result = (char *)pt;
	pt = NULL;
done:
	OPENSSL_cleanse(key, sizeof(key));
	if (pt) {
		OPENSSL_cleanse(pt, (size_t)ct_len + 16 + 1);
		free(pt);
	}
	EVP_CIPHER_CTX_free(ctx);
	free(salt);
	free(ct);
	free(iv);
	return result;
}

char *brk_password_decode(const char *secret, const char *encoded, char *err, size_t errsize)
{
	return brk_password_decode_bounded(secret, encoded, strlen(encoded),
					   BRK_PASSWORD_MAX_ITERATIONS, err, errsize);
}

void brk_password_free(char *password)
{
	if (!password)
		return;
	OPENSSL_cleanse(password, strlen(password));
	free(password);
}
