/* certs.c - test certificates for the TLS benches (certs.h). */
#include "bench/certs.h"

#include <stdio.h>
#include <stdlib.h>

/* Run cmd in dir, quietly; 0 when it succeeded. */
static int in_dir(const char *dir, const char *cmd)
{
	char full[4096];
	snprintf(full, sizeof(full), "cd '%s' && (%s) >/dev/null 2>&1", dir, cmd);
	if (system(full) == 0)
		return 0;
	fprintf(stderr, "bench: failed: %s\n", cmd);
	return -1;
}

int bench_make_certs(const char *dir)
{
	char mk[1200];
	snprintf(mk, sizeof(mk), "mkdir -p '%s'", dir);
	if (system(mk) != 0)
		return -1;
	static const char *const steps[] = {
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		"-keyout ca.key -out ca.pem -days 2 -subj '/CN=bench CA'",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key "
		"-out server.csr -subj '/CN=localhost'",
		"printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext",
		"openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
		"-extfile san.ext -out server.pem",
		"cat server.key server.pem > keystore.pem",
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (in_dir(dir, steps[i]) < 0)
			return -1;
	return 0;
}
