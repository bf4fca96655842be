/*
 * tls.c - server side TLS contexts from Kafka's ssl.* keys, and the
 * non-blocking session calls conn.c makes (see tls.h).
 *
 * OpenSSL keeps its errors in a per-thread queue; every call here clears it
 * first, so SSL_get_error sees only what the call itself left.
 */
#include "broker/security/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "broker/security/pem.h"
#include "broker/security/principal_mapper.h"

struct brk_tls {
	int refs;
	SSL_CTX *ctx;
	brk_ssl_mapper *mapper;
	char listener[32];
	bool path_noted; /* brk_tls_note_path logged */
};

/* Format "listener <l>: " + fmt + OpenSSL's first queued error, if any. */
static int failf(char *err, size_t errsize, const char *listener, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	unsigned long e = ERR_peek_last_error();
	char why[200] = "";
	if (e)
		snprintf(why, sizeof(why), " (%s)", ERR_reason_error_string(e) ? ERR_reason_error_string(e)
										 : "OpenSSL error");
	snprintf(err, errsize, "listener %s: %s%s", listener, msg, why);
	ERR_clear_error();
	return -1;
}

static const char *get(const brk_config *cfg, const char *l, const char *key)
{
	const char *v = brk_config_security_get(cfg, l, key);
	return v && *v ? v : NULL;
}

/* Password callback: userdata is the password (NULL: none). */
static int pass_cb(char *buf, int size, int rwflag, void *userdata)
{
	(void)rwflag;
	const char *p = userdata;
	if (!p)
		return 0;
	int n = (int)strlen(p);
	if (n > size)
		n = size;
	memcpy(buf, p, (size_t)n);
	return n;
}

/* A BIO over a file (NULL with err set). */
static BIO *open_file(const char *l, const char *key, const char *path, char *err, size_t errsize)
{
	BIO *b = BIO_new_file(path, "rb");
	if (!b)
		failf(err, errsize, l, "%s %s: cannot read: %s", key, path, strerror(errno));
	return b;
}

/* Every certificate of PEM bio into *certs (created). Returns the count. */
static int read_pem_certs(BIO *b, STACK_OF(X509) **certs)
{
	if (!*certs)
		*certs = sk_X509_new_null();
	if (!*certs)
		return 0;
	int n = 0;
	X509 *x;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (!sk_X509_push(*certs, x)) {
			X509_free(x);
			break;
		}
		n++;
	}
	ERR_clear_error(); /* the end of the file reads as an error */
	return n;
}

/*
 * The keystore: *key and *certs (leaf first). Returns 0 or -1 with err.
 */
static int load_keystore(const brk_config *cfg, const char *l, EVP_PKEY **key,
			 STACK_OF(X509) **certs, char *err, size_t errsize)
{
	const char *type = get(cfg, l, "ssl.keystore.type");
	const char *loc = get(cfg, l, "ssl.keystore.location");
	const char *chain = get(cfg, l, "ssl.keystore.certificate.chain");
	const char *inline_key = get(cfg, l, "ssl.keystore.key");
	const char *kspass = get(cfg, l, "ssl.keystore.password");
	const char *keypass = get(cfg, l, "ssl.key.password");
	if (chain || inline_key) {
		if (loc)
			return failf(err, errsize, l, "set ssl.keystore.location or the inline "
				     "ssl.keystore.certificate.chain and ssl.keystore.key, not both");
		if (!chain || !inline_key)
			return failf(err, errsize, l, "ssl.keystore.certificate.chain and "
				     "ssl.keystore.key go together");
		if (!type || strcasecmp(type, "PEM") != 0)
			return failf(err, errsize, l, "the inline keystore (ssl.keystore.key) needs "
				     "ssl.keystore.type=PEM");
		/* KIP-651 values as Kafka reads them: white space inside the
		 * base64 allowed (pem.h) */
		char *text = brk_pem_text(inline_key);
		BIO *b = text ? BIO_new_mem_buf(text, -1) : NULL;
		*key = b ? PEM_read_bio_PrivateKey(b, NULL, pass_cb, (void *)keypass) : NULL;
		BIO_free(b);
		free(text);
		if (!*key)
			return failf(err, errsize, l, "ssl.keystore.key: no private key read%s",
				     keypass ? " with ssl.key.password" : "");
		text = brk_pem_text(chain);
		b = text ? BIO_new_mem_buf(text, -1) : NULL;
		int n = b ? read_pem_certs(b, certs) : 0;
		BIO_free(b);
		free(text);
		if (n == 0)
			return failf(err, errsize, l, "ssl.keystore.certificate.chain: no certificate");
		return 0;
	}
	if (!loc)
		return failf(err, errsize, l, "no keystore: set ssl.keystore.location (or "
			     "ssl.keystore.certificate.chain and ssl.keystore.key)");
	if (!type)
		type = "JKS";
	if (strcasecmp(type, "PEM") == 0) {
		BIO *b = open_file(l, "ssl.keystore.location", loc, err, errsize);
		if (!b)
			return -1;
		*key = PEM_read_bio_PrivateKey(b, NULL, pass_cb, (void *)keypass);
		if (!*key) {
			BIO_free(b);
			return failf(err, errsize, l, "ssl.keystore.location %s: no private key read%s",
				     loc, keypass ? " with ssl.key.password" : "");
		}
		(void)BIO_reset(b);
		int n = read_pem_certs(b, certs);
		BIO_free(b);
		if (n == 0)
			return failf(err, errsize, l, "ssl.keystore.location %s: no certificate", loc);
		return 0;
	}
	if (strcasecmp(type, "PKCS12") == 0) {
		BIO *b = open_file(l, "ssl.keystore.location", loc, err, errsize);
		if (!b)
			return -1;
		PKCS12 *p12 = d2i_PKCS12_bio(b, NULL);
		BIO_free(b);
		if (!p12)
			return failf(err, errsize, l, "ssl.keystore.location %s: not a PKCS12 file", loc);
		X509 *cert = NULL;
		STACK_OF(X509) *ca = NULL;
		int ok = PKCS12_parse(p12, kspass ? kspass : "", key, &cert, &ca);
		PKCS12_free(p12);
		if (!ok)
			return failf(err, errsize, l, "ssl.keystore.location %s: cannot open the PKCS12 "
				     "keystore with ssl.keystore.password", loc);
		if (!*key || !cert) {
			X509_free(cert);
			sk_X509_pop_free(ca, X509_free);
			return failf(err, errsize, l, "ssl.keystore.location %s: the PKCS12 keystore has "
				     "no private key with its certificate", loc);
		}
		*certs = sk_X509_new_null();
		if (!*certs || !sk_X509_push(*certs, cert)) {
			X509_free(cert);
			sk_X509_pop_free(ca, X509_free);
			return failf(err, errsize, l, "out of memory");
		}
		while (ca && sk_X509_num(ca) > 0) {
			X509 *x = sk_X509_shift(ca);
			if (!sk_X509_push(*certs, x))
				X509_free(x);
		}
		sk_X509_free(ca);
		return 0;
	}
	return failf(err, errsize, l, "ssl.keystore.type %s is not supported (PKCS12 or PEM)", type);
}

/* The truststore's certificates into *certs; none configured: 0 and NULL. */
static int load_truststore(const brk_config *cfg, const char *l, STACK_OF(X509) **certs,
			   char *err, size_t errsize)
{
	const char *type = get(cfg, l, "ssl.truststore.type");
	const char *loc = get(cfg, l, "ssl.truststore.location");
	const char *inline_certs = get(cfg, l, "ssl.truststore.certificates");
	const char *pass = get(cfg, l, "ssl.truststore.password");
	if (inline_certs) {
		if (loc)
			return failf(err, errsize, l, "set ssl.truststore.location or "
				     "ssl.truststore.certificates, not both");
		if (!type || strcasecmp(type, "PEM") != 0)
			return failf(err, errsize, l, "ssl.truststore.certificates needs "
				     "ssl.truststore.type=PEM");
		char *text = brk_pem_text(inline_certs);
		BIO *b = text ? BIO_new_mem_buf(text, -1) : NULL;
		int n = b ? read_pem_certs(b, certs) : 0;
		BIO_free(b);
		free(text);
		return n > 0 ? 0 : failf(err, errsize, l, "ssl.truststore.certificates: no certificate");
	}
	if (!loc)
		return 0;
	if (!type)
		type = "JKS";
	BIO *b;
	if (strcasecmp(type, "PEM") == 0) {
		if (!(b = open_file(l, "ssl.truststore.location", loc, err, errsize)))
			return -1;
		int n = read_pem_certs(b, certs);
		BIO_free(b);
		return n > 0 ? 0 : failf(err, errsize, l, "ssl.truststore.location %s: no certificate", loc);
	}
	if (strcasecmp(type, "PKCS12") == 0) {
		if (!(b = open_file(l, "ssl.truststore.location", loc, err, errsize)))
			return -1;
		PKCS12 *p12 = d2i_PKCS12_bio(b, NULL);
		BIO_free(b);
		if (!p12)
			return failf(err, errsize, l, "ssl.truststore.location %s: not a PKCS12 file", loc);
		EVP_PKEY *k = NULL;
		X509 *cert = NULL;
		STACK_OF(X509) *ca = NULL;
		int ok = PKCS12_parse(p12, pass ? pass : "", &k, &cert, &ca);
		PKCS12_free(p12);
		EVP_PKEY_free(k);
		if (!ok)
			return failf(err, errsize, l, "ssl.truststore.location %s: cannot open the PKCS12 "
				     "truststore with ssl.truststore.password", loc);
		*certs = ca ? ca : sk_X509_new_null();
		if (cert && (!*certs || !sk_X509_push(*certs, cert)))
			X509_free(cert);
		if (!*certs || sk_X509_num(*certs) == 0)
			return failf(err, errsize, l, "ssl.truststore.location %s: no certificate", loc);
		return 0;
	}
	return failf(err, errsize, l, "ssl.truststore.type %s is not supported (PKCS12 or PEM)", type);
}

static int protocol_version(const char *name)
{
	static const struct { const char *name; int v; } vs[] = {
		{ "TLSv1", TLS1_VERSION }, { "TLSv1.1", TLS1_1_VERSION },
		{ "TLSv1.2", TLS1_2_VERSION }, { "TLSv1.3", TLS1_3_VERSION },
	};
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
		if (strcmp(name, vs[i].name) == 0)
			return vs[i].v;
	return -1;
}

/* ssl.enabled.protocols: the versions bound by the lowest and highest. */
static int set_protocols(SSL_CTX *ctx, const char *l, const char *list, char *err, size_t errsize)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", list ? list : "TLSv1.2,TLSv1.3");
	int lo = 0, hi = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		int v = protocol_version(tok);
		if (v < 0)
			return failf(err, errsize, l, "ssl.enabled.protocols: unknown protocol %s "
				     "(TLSv1.2, TLSv1.3)", tok);
		if (!lo || v < lo)
			lo = v;
		if (v > hi)
			hi = v;
	}
	if (!lo)
		return failf(err, errsize, l, "ssl.enabled.protocols: empty");
	if (!SSL_CTX_set_min_proto_version(ctx, lo) || !SSL_CTX_set_max_proto_version(ctx, hi))
		return failf(err, errsize, l, "ssl.enabled.protocols: cannot be set");
	return 0;
}

/* ssl.cipher.suites: IANA (Kafka's) or OpenSSL names, split into the
 * TLSv1.3 suites and the older cipher list. */
static int set_ciphers(SSL_CTX *ctx, const char *l, const char *list, char *err, size_t errsize)
{
	if (!list)
		return 0;
	char buf[2048], tls12[2048] = "", tls13[1024] = "";
	snprintf(buf, sizeof(buf), "%s", list);
	STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		const SSL_CIPHER *found = NULL;
		for (int i = 0; all && i < sk_SSL_CIPHER_num(all) && !found; i++) {
			const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
			const char *std = SSL_CIPHER_standard_name(c);
			if ((std && strcmp(std, tok) == 0) || strcmp(SSL_CIPHER_get_name(c), tok) == 0)
				found = c;
		}
		if (!found)
			return failf(err, errsize, l, "ssl.cipher.suites: %s is not a cipher suite "
				     "OpenSSL offers", tok);
		bool v13 = strcmp(SSL_CIPHER_get_version(found), "TLSv1.3") == 0;
		char *dst = v13 ? tls13 : tls12;
		size_t cap = v13 ? sizeof(tls13) : sizeof(tls12);
		size_t used = strlen(dst);
		snprintf(dst + used, cap - used, "%s%s", used ? ":" : "", SSL_CIPHER_get_name(found));
	}
	if (!SSL_CTX_set_ciphersuites(ctx, tls13))
		return failf(err, errsize, l, "ssl.cipher.suites: cannot be set");
	if (tls12[0] && !SSL_CTX_set_cipher_list(ctx, tls12))
		return failf(err, errsize, l, "ssl.cipher.suites: cannot be set");
	/* Only one family named: the other version cannot be spoken. */
	if (!tls12[0])
		SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	if (!tls13[0] && SSL_CTX_get_max_proto_version(ctx) != TLS1_2_VERSION)
		SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
	return 0;
}

brk_tls *brk_tls_new(const brk_config *cfg, const brk_listener *lst, char *err, size_t errsize)
{
	const char *l = lst->name;
	brk_tls *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errsize, "listener %s: out of memory", l);
		return NULL;
	}
	t->refs = 1;
	snprintf(t->listener, sizeof(t->listener), "%s", l);
	EVP_PKEY *key = NULL;
	STACK_OF(X509) *certs = NULL, *trust = NULL;
	ERR_clear_error();
	t->ctx = SSL_CTX_new(TLS_server_method());
	if (!t->ctx) {
		failf(err, errsize, l, "cannot make an SSL context");
		goto fail;
	}
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_ENABLE_KTLS
	/* SAMSA_KTLS=0 in the environment: not asked for (bench/tlsbench's
	 * comparison; no Kafka key says this). */
	const char *ktls = getenv("SAMSA_KTLS");
	if (!ktls || strcmp(ktls, "0") != 0)
		SSL_CTX_set_options(t->ctx, SSL_OP_ENABLE_KTLS);
#endif
	/* Partial writes (conn.c keeps the cursor), a write buffer that may
	 * move between retries, and no buffers held by a quiet session. */
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_SERVER);
	if (load_keystore(cfg, l, &key, &certs, err, errsize) < 0)
		goto fail;
	if (SSL_CTX_use_certificate(t->ctx, sk_X509_value(certs, 0)) != 1) {
		failf(err, errsize, l, "the keystore's certificate cannot be used");
		goto fail;
	}
	for (int i = 1; i < sk_X509_num(certs); i++) {
		if (SSL_CTX_add1_chain_cert(t->ctx, sk_X509_value(certs, i)) != 1) {
			failf(err, errsize, l, "the keystore's certificate chain cannot be used");
			goto fail;
		}
	}
	if (SSL_CTX_use_PrivateKey(t->ctx, key) != 1 || SSL_CTX_check_private_key(t->ctx) != 1) {
		failf(err, errsize, l, "the keystore's private key does not match its certificate");
		goto fail;
	}
	if (load_truststore(cfg, l, &trust, err, errsize) < 0)
		goto fail;
	X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
	if (trust) {
		for (int i = 0; i < sk_X509_num(trust); i++) {
			X509 *x = sk_X509_value(trust, i);
			X509_STORE_add_cert(store, x);
			SSL_CTX_add_client_CA(t->ctx, x);
		}
		ERR_clear_error(); /* a certificate given twice */
	} else {
		SSL_CTX_set_default_verify_paths(t->ctx);
	}
	const char *auth = get(cfg, l, "ssl.client.auth");
	if (!auth || strcasecmp(auth, "none") == 0) {
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
	} else if (strcasecmp(auth, "requested") == 0) {
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	} else if (strcasecmp(auth, "required") == 0) {
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	} else {
		failf(err, errsize, l, "ssl.client.auth: %s is not none, requested or required", auth);
		goto fail;
	}
	/* Session ids are tied to the listener's context. */
	SSL_CTX_set_session_id_context(t->ctx, (const unsigned char *)t->listener,
				       (unsigned int)strlen(t->listener));
	if (set_protocols(t->ctx, l, get(cfg, l, "ssl.enabled.protocols"), err, errsize) < 0 ||
	    set_ciphers(t->ctx, l, get(cfg, l, "ssl.cipher.suites"), err, errsize) < 0)
		goto fail;
	char merr[256];
	t->mapper = brk_ssl_mapper_new(get(cfg, l, "ssl.principal.mapping.rules"), merr, sizeof(merr));
	if (!t->mapper) {
		snprintf(err, errsize, "listener %s: %s", l, merr);
		goto fail;
	}
	EVP_PKEY_free(key);
	sk_X509_pop_free(certs, X509_free);
	sk_X509_pop_free(trust, X509_free);
	return t;
fail:
	EVP_PKEY_free(key);
	sk_X509_pop_free(certs, X509_free);
	sk_X509_pop_free(trust, X509_free);
	brk_tls_unref(t);
	return NULL;
}

brk_tls *brk_tls_ref(brk_tls *t)
{
	t->refs++;
	return t;
}

void brk_tls_unref(brk_tls *t)
{
	if (!t || --t->refs > 0)
		return;
	SSL_CTX_free(t->ctx);
	brk_ssl_mapper_free(t->mapper);
	free(t);
}

const char *brk_tls_listener_name(const brk_tls *t) { return t->listener; }

/* FNV-1a over s (with its NUL; NULL hashes as one byte 0xff). */
static uint64_t fnv(uint64_t h, const void *s, size_t n)
{
	const unsigned char *p = s;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t brk_tls_signature(const brk_config *cfg, const brk_listener *l)
{
	static const char *const keys[] = {
		"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
		"ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
		"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
		"ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols",
		"ssl.cipher.suites", "ssl.principal.mapping.rules",
	};
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = brk_config_security_get(cfg, l->name, keys[i]);
		h = v ? fnv(h, v, strlen(v) + 1) : fnv(h, "\xff", 1);
	}
	const char *files[] = { get(cfg, l->name, "ssl.keystore.location"),
				get(cfg, l->name, "ssl.truststore.location") };
	for (int i = 0; i < 2; i++) {
		struct stat st;
		if (files[i] && stat(files[i], &st) == 0) {
			h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
			h = fnv(h, &st.st_ino, sizeof(st.st_ino));
		}
	}
	return h;
}

SSL_CTX *brk_tls_client_ctx_new(const brk_config *cfg, const brk_listener *lst, bool *verify_host,
				char *err, size_t errsize)
{
	const char *l = lst->name;
	EVP_PKEY *key = NULL;
	STACK_OF(X509) *certs = NULL, *trust = NULL;
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		failf(err, errsize, l, "cannot make an SSL context");
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	bool has_keystore = get(cfg, l, "ssl.keystore.location") ||
			    get(cfg, l, "ssl.keystore.certificate.chain") ||
			    get(cfg, l, "ssl.keystore.key");
	if (has_keystore) {
		if (load_keystore(cfg, l, &key, &certs, err, errsize) < 0)
			goto fail;
		if (SSL_CTX_use_certificate(ctx, sk_X509_value(certs, 0)) != 1 ||
		    SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
			failf(err, errsize, l, "the keystore cannot be used as a client certificate");
			goto fail;
		}
		for (int i = 1; i < sk_X509_num(certs); i++)
			SSL_CTX_add1_chain_cert(ctx, sk_X509_value(certs, i));
	}
	if (load_truststore(cfg, l, &trust, err, errsize) < 0)
		goto fail;
	if (trust) {
		X509_STORE *store = SSL_CTX_get_cert_store(ctx);
		for (int i = 0; i < sk_X509_num(trust); i++)
			X509_STORE_add_cert(store, sk_X509_value(trust, i));
		ERR_clear_error();
	} else {
		SSL_CTX_set_default_verify_paths(ctx);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (set_protocols(ctx, l, get(cfg, l, "ssl.enabled.protocols"), err, errsize) < 0 ||
	    set_ciphers(ctx, l, get(cfg, l, "ssl.cipher.suites"), err, errsize) < 0)
		goto fail;
	/* Kafka's default is https; an empty value turns the check off (get()
	 * reads "" as unset, so look at the raw value). */
	const char *alg = brk_config_security_get(cfg, l, "ssl.endpoint.identification.algorithm");
	if (!alg || strcasecmp(alg, "https") == 0) {
		*verify_host = true;
	} else if (!*alg) {
		*verify_host = false;
	} else {
		failf(err, errsize, l, "ssl.endpoint.identification.algorithm: %s is not https or empty",
		      alg);
		goto fail;
	}
	EVP_PKEY_free(key);
	sk_X509_pop_free(certs, X509_free);
	sk_X509_pop_free(trust, X509_free);
	return ctx;
fail:
	EVP_PKEY_free(key);
	sk_X509_pop_free(certs, X509_free);
	sk_X509_pop_free(trust, X509_free);
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *brk_tls_connect(SSL_CTX *ctx, int fd, const char *host, bool verify_host)
{
	ERR_clear_error();
	SSL *ssl = SSL_new(ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1)
		goto fail;
	SSL_set_connect_state(ssl);
	unsigned char addr[16];
	bool literal = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
	if (!literal && SSL_set_tlsext_host_name(ssl, host) != 1)
		goto fail;
	if (verify_host) {
		X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
		if (literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1
			    : SSL_set1_host(ssl, host) != 1)
			goto fail;
	}
	return ssl;
fail:
	SSL_free(ssl);
	ERR_clear_error();
	return NULL;
}

SSL *brk_tls_accept(brk_tls *t, int fd)
{
	ERR_clear_error();
	SSL *ssl = SSL_new(t->ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

/* What a failed call means; reason into err for BRK_TLS_ERROR. */
static int outcome(SSL *ssl, int rc, char *err, size_t errsize)
{
	int e = SSL_get_error(ssl, rc);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		return BRK_TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return BRK_TLS_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		snprintf(err, errsize, "TLS: the peer closed the session");
		return 0;
	case SSL_ERROR_SYSCALL:
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return BRK_TLS_WANT_READ;
		snprintf(err, errsize, "TLS: %s", errno ? strerror(errno) : "the peer went away");
		break;
	default: {
		unsigned long q = ERR_peek_error();
		const char *r = q ? ERR_reason_error_string(q) : NULL;
		snprintf(err, errsize, "TLS: %s", r ? r : "protocol error");
		break;
	}
	}
	ERR_clear_error();
	return BRK_TLS_ERROR;
}

int brk_tls_handshake(SSL *ssl, char *err, size_t errsize)
{
	ERR_clear_error();
	errno = 0;
	int rc = SSL_do_handshake(ssl);
	if (rc == 1)
		return 1;
	int o = outcome(ssl, rc, err, errsize);
	return o == 0 ? BRK_TLS_ERROR : o; /* closed during the handshake */
}

ssize_t brk_tls_read(SSL *ssl, void *buf, size_t n, char *err, size_t errsize)
{
	ERR_clear_error();
	errno = 0;
	int cap = n > INT32_MAX ? INT32_MAX : (int)n;
	int rc = SSL_read(ssl, buf, cap);
	if (rc > 0)
		return rc;
	return outcome(ssl, rc, err, errsize);
}

ssize_t brk_tls_write(SSL *ssl, const void *buf, size_t n, char *err, size_t errsize)
{
	ERR_clear_error();
	errno = 0;
	int cap = n > (1u << 30) ? (1 << 30) : (int)n;
	int rc = SSL_write(ssl, buf, cap);
	if (rc > 0)
		return rc;
	int o = outcome(ssl, rc, err, errsize);
	return o == 0 ? BRK_TLS_ERROR : o;
}

bool brk_tls_ktls_send(SSL *ssl)
{
#ifndef OPENSSL_NO_KTLS
	return BIO_get_ktls_send(SSL_get_wbio(ssl));
#else
	(void)ssl;
	return false;
#endif
}

ssize_t brk_tls_sendfile(SSL *ssl, int fd, off_t off, size_t n, char *err, size_t errsize)
{
#ifndef OPENSSL_NO_KTLS
	ERR_clear_error();
	errno = 0;
	ossl_ssize_t rc = SSL_sendfile(ssl, fd, off, n, 0);
	if (rc > 0)
		return (ssize_t)rc;
	if (rc == 0) {
		snprintf(err, errsize, "segment file shorter than the response");
		return BRK_TLS_ERROR;
	}
	int o = outcome(ssl, (int)rc, err, errsize);
	return o == 0 ? BRK_TLS_ERROR : o;
#else
	(void)ssl, (void)fd, (void)off, (void)n;
	snprintf(err, errsize, "kernel TLS is not built in");
	return BRK_TLS_ERROR;
#endif
}

bool brk_tls_pending(SSL *ssl) { return SSL_pending(ssl) > 0; }

int brk_tls_principal(const brk_tls *t, SSL *ssl, char *out, size_t outsize, char *err,
		      size_t errsize)
{
	X509 *peer = SSL_get1_peer_certificate(ssl);
	if (!peer) {
		snprintf(out, outsize, "User:ANONYMOUS");
		return 0;
	}
	char dn[1024] = "";
	BIO *b = BIO_new(BIO_s_mem());
	if (b) {
		/* RFC 2253 without the multi-byte escapes: Java's
		 * X500Principal.getName() form. */
		X509_NAME_print_ex(b, X509_get_subject_name(peer), 0,
				   XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
		int n = BIO_read(b, dn, (int)sizeof(dn) - 1);
		dn[n > 0 ? n : 0] = '\0';
		BIO_free(b);
	}
	X509_free(peer);
	char name[512];
	int rc = brk_ssl_mapper_map(t->mapper, dn, name, sizeof(name));
	if (rc == -ENAMETOOLONG) {
		snprintf(err, errsize, "the principal mapped from \"%s\" is too long", dn);
		return -1;
	}
	if (rc < 0) {
		snprintf(err, errsize, "no ssl.principal.mapping.rules rule applies to \"%s\"", dn);
		return -1;
	}
	if ((size_t)snprintf(out, outsize, "User:%s", name) >= outsize) {
		snprintf(err, errsize, "the principal mapped from \"%s\" is too long", dn);
		return -1;
	}
	return 0;
}

void brk_tls_note_path(brk_tls *t, SSL *ssl)
{
	if (t->path_noted)
		return;
	t->path_noted = true;
	const char *v = SSL_get_version(ssl);
	const char *c = SSL_get_cipher_name(ssl);
	if (brk_tls_ktls_send(ssl)) {
		fprintf(stderr, "samsa: listener %s (%s, %s): fetch sends segment bytes with kernel TLS "
			"and sendfile\n", t->listener, v, c);
		return;
	}
	const char *why;
#ifdef OPENSSL_NO_KTLS
	why = "this OpenSSL is built without kernel TLS";
#else
	const char *ktls = getenv("SAMSA_KTLS");
	if (ktls && strcmp(ktls, "0") == 0)
		why = "not asked for, SAMSA_KTLS=0";
	else if (access("/proc/net/tls_stat", F_OK) != 0)
		why = "the kernel has no tls module, /proc/net/tls_stat is absent";
	else
		why = "the kernel did not take this session (version or cipher not offloaded)";
#endif
	fprintf(stderr, "samsa: listener %s (%s, %s): fetch reads segment bytes and writes them "
		"through OpenSSL (no kernel TLS: %s)\n", t->listener, v, c, why);
}
