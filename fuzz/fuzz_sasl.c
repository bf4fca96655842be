/*
 * fuzz_sasl.c - libFuzzer target: the SASL parsers a client (or a stored
 * config) feeds the broker before anyone is authenticated.
 *
 * Input: byte 0 selects the parser (modulo 7), the rest is its input:
 *   0 JAAS config text (jaas.h)          4 SCRAM credential string
 *   1 SASL/PLAIN message (plain.h)       5 base64, strict and lenient
 *   2 SCRAM client-first (scram.h)       6 a server's SCRAM messages as
 *   3 SCRAM client-final (scram.h)         the inter-broker client reads
 *                                          them (sasl_client.h): the
 *                                          server-first is "r=<the client's
 *                                          nonce>" + the input up to a NUL,
 *                                          the server-final what follows
 *
 * Beyond "no crash, no leak, no sanitizer report": views point inside the
 * input; a credential string that parses formats to one that parses to
 * the same credential; base64 that decodes encodes back to its canonical
 * form, which decodes to the same bytes. A break aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/security/jaas.h"
#include "broker/security/plain.h"
#include "broker/security/sasl_client.h"
#include "broker/security/scram.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const void *p, size_t n, const uint8_t *in, size_t len)
{
	if (n && ((const uint8_t *)p < in || (const uint8_t *)p + n > in + len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int which = data[0] % 7;
	const uint8_t *in = data + 1;
	size_t len = size - 1;
	switch (which) {
	case 0: {
		char *text = malloc(len + 1);
		if (!text)
			return 0;
		memcpy(text, in, len);
		text[len] = '\0';
		brk_jaas j;
		char err[256];
		if (brk_jaas_parse(text, &j, err, sizeof(err)) == 0) {
			if (j.nentries < 1)
				abort();
			for (int i = 0; i < j.nentries; i++) {
				const brk_jaas_entry *e = &j.entries[i];
				if (brk_jaas_find(&j, e->login_module) == NULL)
					abort();
				for (int k = 0; k < e->noptions; k++)
					if (!brk_jaas_option_get(e, e->options[k].key))
						abort();
			}
			brk_jaas_free(&j);
		}
		free(text);
		break;
	}
	case 1: {
		brk_plain_token t;
		int bad;
		char msg[256];
		if (brk_plain_parse(in, len, &t, &bad, msg, sizeof(msg)) == 0) {
			inside(t.authzid, t.authzid_len, in, len);
			inside(t.username, t.username_len, in, len);
			inside(t.password, t.password_len, in, len);
			if (!t.username_len || !t.password_len ||
			    t.authzid_len + t.username_len + t.password_len + 2 != len)
				abort();
		}
		break;
	}
	case 2: {
		brk_scram_client_first cf;
		if (brk_scram_parse_client_first(in, len, &cf) == 0) {
			inside(cf.nonce, cf.nonce_len, in, len);
			inside(cf.bare, cf.bare_len, in, len);
			inside(cf.authzid, cf.authzid_len, in, len);
			if (!cf.username[0] || !cf.nonce_len || memchr(cf.nonce, ',', cf.nonce_len))
				abort();
		}
		break;
	}
	case 3: {
		brk_scram_client_final cf;
		if (brk_scram_parse_client_final(in, len, &cf) == 0) {
			inside(cf.without_proof, cf.without_proof_len, in, len);
			inside(cf.nonce, cf.nonce_len, in, len);
			if (!cf.proof_len || cf.proof_len > sizeof(cf.proof))
				abort();
		}
		break;
	}
	case 4: {
		brk_scram_credential c, c2;
		if (brk_scram_credential_parse((const char *)in, len, &c) == 0) {
			char out[1024];
			int n = brk_scram_credential_format(&c, out, sizeof(out));
			if (n < 0 || brk_scram_credential_parse(out, (size_t)n, &c2) != 0 ||
			    memcmp(&c, &c2, sizeof(c)) != 0)
				abort();
		}
		break;
	}
	case 6: {
		static const brk_sasl_credentials cred = { .mechanism = BRK_SASL_SCRAM_SHA_256,
							   .username = "broker", .password = "secret" };
		brk_sasl_client c;
		uint8_t out[BRK_SASL_CLIENT_TOKEN_MAX];
		size_t n;
		char err[200];
		brk_sasl_client_start(&c, &cred);
		if (brk_sasl_client_step(&c, NULL, 0, out, &n, err, sizeof(err)) != 1)
			abort();
		/* The server-first: "r=<our nonce>" then the input up to a
		 * NUL (so the random nonce does not stop the search); the
		 * server-final: what follows the NUL. */
		const uint8_t *nul = memchr(in, 0, len);
		size_t l1 = nul ? (size_t)(nul - in) : len;
		uint8_t *sf = malloc(l1 + 40);
		if (!sf)
			return 0;
		size_t sl = (size_t)snprintf((char *)sf, 40, "r=%s", c.nonce);
		memcpy(sf + sl, in, l1);
		if (brk_sasl_client_step(&c, sf, sl + l1, out, &n, err, sizeof(err)) == 1) {
			if (n == 0 || n > sizeof(out))
				abort();
			const uint8_t *fin = nul ? nul + 1 : in + len;
			(void)brk_sasl_client_step(&c, fin, (size_t)(in + len - fin), out, &n, err,
						   sizeof(err));
		}
		free(sf);
		brk_sasl_client_end(&c);
		break;
	}
	default: {
		uint8_t dec[4096], dec2[4096];
		char enc[4096 / 3 * 4 + 8];
		for (int strict = 0; strict < 2; strict++) {
			long n = brk_base64_decode((const char *)in, len, strict, dec, sizeof(dec));
			if (n < 0)
				continue;
			size_t el = brk_base64_encode(dec, (size_t)n, enc);
			long n2 = brk_base64_decode(enc, el, true, dec2, sizeof(dec2));
			if (n2 != n || memcmp(dec, dec2, (size_t)n) != 0)
				abort();
			if (strict && (el != len || memcmp(enc, in, len) != 0))
				abort(); /* strict input is canonical */
		}
		break;
	}
	}
	return 0;
}
