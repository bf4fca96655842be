/*
 * security.c - samsa-admin's --command-config (see security.h).
 */
#include "tools/security.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "broker/config.h"
#include "broker/errbuf.h"
#include "broker/security/jaas.h"
#include "broker/security/sasl.h"
#include "broker/security/tls.h"

void adm_security_none(adm_security *s)
{
	memset(s, 0, sizeof(*s));
}

void adm_security_free(adm_security *s)
{
	if (s->ssl_ctx)
		SSL_CTX_free(s->ssl_ctx);
	OPENSSL_cleanse(&s->cred, sizeof(s->cred));
	adm_security_none(s);
}

static int brk_fail(char *err, size_t errsize, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The username and password of sasl.jaas.config's entry for mechanism. */
static int read_jaas(adm_security *s, const brk_config *cfg, const char *path, char *err,
		     size_t errsize)
{
	const char *text = brk_config_security_get(cfg, NULL, "sasl.jaas.config");
	if (!text || !*text)
		return brk_fail(err, errsize, "%s: sasl.jaas.config is not set (a %s client needs "
			    "username= and password=)", path, brk_sasl_mechanism_name(s->cred.mechanism));
	const char *module = s->cred.mechanism == BRK_SASL_PLAIN
				     ? "org.apache.kafka.common.security.plain.PlainLoginModule"
				     : "org.apache.kafka.common.security.scram.ScramLoginModule";
	brk_jaas j;
	char jerr[256];
	if (brk_jaas_parse(text, &j, jerr, sizeof(jerr)) < 0)
		return brk_fail(err, errsize, "%s: sasl.jaas.config: %s", path, jerr);
	int rc = 0;
	const brk_jaas_entry *e = brk_jaas_find(&j, module);
	const char *user = e ? brk_jaas_option_get(e, "username") : NULL;
	const char *pass = e ? brk_jaas_option_get(e, "password") : NULL;
	if (!e)
		rc = brk_fail(err, errsize, "%s: sasl.jaas.config: no %s entry (sasl.mechanism is %s)",
			  path, module, brk_sasl_mechanism_name(s->cred.mechanism));
	else if (!user || !pass)
		rc = brk_fail(err, errsize, "%s: sasl.jaas.config: %s needs username= and password=",
			  path, module);
	else if (strlen(user) >= sizeof(s->cred.username) ||
		 strlen(pass) >= sizeof(s->cred.password))
		rc = brk_fail(err, errsize, "%s: sasl.jaas.config: username or password longer than %zu "
			  "bytes", path, sizeof(s->cred.username) - 1);
	if (rc == 0) {
		snprintf(s->cred.username, sizeof(s->cred.username), "%s", user);
		snprintf(s->cred.password, sizeof(s->cred.password), "%s", pass);
	}
	brk_jaas_free(&j);
	return rc;
}

int adm_security_load(adm_security *s, const char *path, char *err, size_t errsize)
{
	adm_security_none(s);
	brk_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return brk_fail(err, errsize, "%s: out of memory", path);
	brk_config_defaults(cfg);
	char cerr[512];
	int rc = -1;
	/* Unknown keys are a client's keys the broker does not know (e.g.
	 * client.id): no warning. */
	if (brk_config_load(cfg, path, NULL, cerr, sizeof(cerr)) < 0) {
		brk_fail(err, errsize, "%s", cerr);
		goto out;
	}
	const char *proto = brk_config_security_get(cfg, NULL, "security.protocol");
	if (!proto || strcasecmp(proto, "PLAINTEXT") == 0) {
	} else if (strcasecmp(proto, "SSL") == 0) {
		s->tls = true;
	} else if (strcasecmp(proto, "SASL_PLAINTEXT") == 0) {
		s->sasl = true;
	} else if (strcasecmp(proto, "SASL_SSL") == 0) {
		s->tls = s->sasl = true;
	} else {
		brk_fail(err, errsize, "%s: security.protocol %s is not PLAINTEXT, SSL, SASL_PLAINTEXT "
		     "or SASL_SSL", path, proto);
		goto out;
	}
	if (s->sasl) {
		const char *mech = brk_config_security_get(cfg, NULL, "sasl.mechanism");
		if (!mech)
			mech = "GSSAPI"; /* Kafka's default */
		s->cred.mechanism = brk_sasl_mechanism_of(mech, strlen(mech));
		if (!s->cred.mechanism) {
			brk_fail(err, errsize, "%s: sasl.mechanism %s is not served; use PLAIN, "
			     "SCRAM-SHA-256 or SCRAM-SHA-512", path, mech);
			goto out;
		}
		if (read_jaas(s, cfg, path, err, errsize) < 0)
			goto out;
	}
	if (s->tls) {
		brk_listener l;
		memset(&l, 0, sizeof(l));
		s->ssl_ctx = brk_tls_client_ctx_new(cfg, &l, &s->verify_host, cerr, sizeof(cerr));
		if (!s->ssl_ctx) {
			const char *m = strncmp(cerr, "listener : ", 11) == 0 ? cerr + 11 : cerr;
			brk_fail(err, errsize, "%s: %s", path, m);
			goto out;
		}
	}
	rc = 0;
out:
	OPENSSL_cleanse(cfg->security_props, sizeof(cfg->security_props));
	free(cfg);
	if (rc < 0)
		adm_security_free(s);
	return rc;
}
