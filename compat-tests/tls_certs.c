/*
 * tls_certs.c - the TLS tests' certificates (tls_certs.h).
 */
#include "compat-tests/tls_certs.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-tests/harness.h"

static char certs[1024];

/* Run a shell command in the certificate dir; fail the test if it fails. */
static void sh(const char *fmt, ...)
{
	char cmd[4096], full[8400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "cd '%s' && (%s) >>openssl.log 2>&1", certs, cmd);
	int rc = system(full);
	ck_assert_msg(rc == 0, "failed (%d): %s (see %s/openssl.log)", rc, cmd, certs);
}

#define EC "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

/* Make the certificates once per program run (the tests share the dir). */
void make_certs(void)
{
	snprintf(certs, sizeof(certs), "%s/certs", h_base_dir());
	struct stat st;
	if (stat(certs, &st) == 0)
		return; /* made by an earlier test */
	char tmp[sizeof(certs)];
	int tl = snprintf(tmp, sizeof(tmp), "%s.tmp%d", certs, (int)getpid());
	ck_assert_int_lt(tl, (int)sizeof(tmp));
	ck_assert_int_eq(mkdir(tmp, 0700), 0);
	char keep[sizeof(certs)];
	memcpy(keep, certs, sizeof(certs));
	snprintf(certs, sizeof(certs), "%s", tmp);
	sh("openssl req -x509 " EC " -keyout ca.key -out ca.pem -days 2 -subj '/CN=Samsa Test CA'");
	sh("openssl req -x509 " EC " -keyout rogue-ca.key -out rogue-ca.pem -days 2 -subj '/CN=Rogue'");
	sh("printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext");
	sh("openssl req " EC " -keyout server.key -out server.csr -subj '/CN=localhost/O=first'");
	sh("openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
	   "-extfile san.ext -out server.pem");
	sh("openssl pkey -in server.key -aes256 -passout pass:keypass -out server.enc.key");
	sh("cat server.enc.key server.pem > keystore.pem");
	sh("openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem "
	   "-passout pass:storepass -out server.p12");
	sh("openssl pkcs12 -export -nokeys -in ca.pem -passout pass:trustpass -out trust.p12");
	/* a second server certificate, for the replacement without restart */
	sh("openssl req " EC " -keyout server2.key -out server2.csr -subj '/CN=localhost/O=second'");
	sh("openssl x509 -req -in server2.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
	   "-extfile san.ext -out server2.pem");
	sh("cat server2.key server2.pem > keystore2.pem");
	sh("openssl pkcs12 -export -in server2.pem -inkey server2.key -certfile ca.pem "
	   "-passout pass:storepass2 -out server2.p12");
	/* clients: Alice from our CA, Mallory from the rogue one */
	sh("openssl req " EC " -keyout alice.key -out alice.csr -subj '/O=acme/OU=Eng/CN=Alice'");
	sh("openssl x509 -req -in alice.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
	   "-out alice.pem");
	sh("openssl req " EC " -keyout mallory.key -out mallory.csr -subj '/CN=mallory'");
	sh("openssl x509 -req -in mallory.csr -CA rogue-ca.pem -CAkey rogue-ca.key "
	   "-CAcreateserial -days 2 -out mallory.pem");
	/* another test process may have won the race: either dir is complete */
	if (rename(tmp, keep) != 0)
		sh("true");
	memcpy(certs, keep, sizeof(certs));
}

const char *cert(const char *name)
{
	static char paths[8][4400];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, sizeof(paths[0]), "%s/%s", certs, name);
	return p;
}


void tls_served_org(int port, char *out, size_t size)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "openssl s_client -connect 127.0.0.1:%d </dev/null 2>/dev/null | "
		 "openssl x509 -noout -subject 2>/dev/null", port);
	out[0] = '\0';
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	char line[512] = "";
	if (fgets(line, sizeof(line), f)) {
		const char *o = strstr(line, "O = ");
		if (o) {
			size_t n = strcspn(o + 4, ",\n");
			snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), o + 4);
		}
	}
	pclose(f);
}

bool tls_wait_org(int port, const char *want)
{
	char org[64];
	for (int t = 0; t < 100; t++) {
		tls_served_org(port, org, sizeof(org));
		if (strcmp(org, want) == 0)
			return true;
		usleep(100 * 1000);
	}
	return false;
}
