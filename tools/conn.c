/*
 * conn.c - samsa-admin's blocking connection to one broker (see conn.h).
 *
 * The socket is non-blocking; every wait is a poll(2) bounded by the
 * call's deadline, so a broker that stops answering costs timeout_ms and
 * no more. One request is in flight at a time: a response must carry the
 * correlation id just sent.
 */
#include "tools/conn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "broker/security/sasl.h"
#include "broker/security/sasl_client.h"
#include "broker/security/tls.h"

#include <openssl/crypto.h>
#include "protocol/err.h"
#include "protocol/gen/messages.h"
#include "protocol/header.h"

#define API_VERSIONS_KEY 18
#define SASL_HANDSHAKE_KEY 17
#define SASL_AUTHENTICATE_KEY 36

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_err(adm_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(adm_conn *c, const char *fmt, ...)
{
	char what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->node_id >= 0)
		snprintf(c->err, sizeof(c->err), "broker %d (%s:%d): %s", (int)c->node_id, c->host,
			 c->port, what);
	else
		snprintf(c->err, sizeof(c->err), "%s:%d: %s", c->host, c->port, what);
}

void adm_conn_close(adm_conn *c)
{
	if (c->ssl)
		SSL_free(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int16_t adm_conn_version(const adm_conn *c, int16_t api_key)
{
	if (api_key < 0 || api_key >= ADM_API_KEYS)
		return -1;
	return c->version[api_key];
}

/* OpenSSL's reason from security/tls.h without its "TLS: " (ours says
 * TLS already). */
static const char *tls_why(const char *why)
{
	return strncmp(why, "TLS: ", 5) == 0 ? why + 5 : why;
}

/* Wait for events on the socket until deadline. 0, or -1 with c->err. */
static int wait_fd(adm_conn *c, short events, int64_t deadline, const char *what)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			set_err(c, "%s: no answer within %d ms", what, c->timeout_ms);
			return -1;
		}
		struct pollfd p = { .fd = c->fd, .events = events };
		int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR) {
			set_err(c, "%s: poll: %s", what, strerror(errno));
			return -1;
		}
	}
}

static int send_all(adm_conn *c, const uint8_t *p, size_t len, int64_t deadline, const char *what)
{
	while (len > 0) {
		if (c->ssl) {
			char why[256];
			ssize_t n = brk_tls_write(c->ssl, p, len, why, sizeof(why));
			if (n > 0) {
				p += n;
				len -= (size_t)n;
			} else if (n == BRK_TLS_WANT_READ || n == BRK_TLS_WANT_WRITE) {
				if (wait_fd(c, n == BRK_TLS_WANT_READ ? POLLIN : POLLOUT, deadline,
					    what) < 0)
					return -1;
			} else {
				set_err(c, "%s: TLS: %s", what, tls_why(why));
				return -1;
			}
			continue;
		}
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(c, POLLOUT, deadline, what) < 0)
				return -1;
			continue;
		}
		set_err(c, "%s: send: %s", what, n < 0 ? strerror(errno) : "nothing written");
		return -1;
	}
	return 0;
}

static int recv_all(adm_conn *c, uint8_t *p, size_t len, int64_t deadline, const char *what)
{
	while (len > 0) {
		if (c->ssl) {
			char why[256];
			ssize_t n = brk_tls_read(c->ssl, p, len, why, sizeof(why));
			if (n > 0) {
				p += n;
				len -= (size_t)n;
			} else if (n == 0) {
				set_err(c, "%s: the broker closed the connection", what);
				return -1;
			} else if (n == BRK_TLS_WANT_READ || n == BRK_TLS_WANT_WRITE) {
				if (wait_fd(c, n == BRK_TLS_WANT_READ ? POLLIN : POLLOUT, deadline,
					    what) < 0)
					return -1;
			} else {
				set_err(c, "%s: TLS: %s", what, tls_why(why));
				return -1;
			}
			continue;
		}
		ssize_t n = recv(c->fd, p, len, 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0) {
			set_err(c, "%s: the broker closed the connection", what);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_fd(c, POLLIN, deadline, what) < 0)
				return -1;
			continue;
		}
		set_err(c, "%s: recv: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Send one request of api_key at version (body written by encode) and
 * read its response; body gets a reader over the response body (in a).
 * 0, or -1 with c->err set; the connection is closed unless nothing was
 * sent (an encoding failure).
 */
static int roundtrip(adm_conn *c, int16_t api_key, const char *name, int16_t version,
		     int (*encode)(proto_writer *, int16_t, const void *), const void *request,
		     proto_arena *a, proto_reader *body)
{
	char what[64];
	snprintf(what, sizeof(what), "%s v%d", name, (int)version);
	if (c->fd < 0) {
		set_err(c, "%s: not connected", what);
		return -1;
	}
	const proto_api_desc *d = proto_api_desc_lookup(api_key);
	if (!d) {
		set_err(c, "%s: API key %d unknown to this program", what, (int)api_key);
		return -1;
	}
	int64_t deadline = mono_ms() + c->timeout_ms;
	int32_t correlation_id = c->next_correlation_id++;

	proto_writer w;
	proto_writer_init(&w);
	size_t at = proto_writer_reserve(&w, 4);
	proto_request_header h = {
		.api_key = api_key,
		.api_version = version,
		.correlation_id = correlation_id,
		.client_id = proto_cstr("samsa-admin"),
	};
	proto_request_header_encode(&w, proto_request_header_version(api_key, version, d->flexible_min),
				    &h);
	int rc = encode(&w, version, request);
	if (rc != 0 || w.err != 0 || w.nchunks > 0 || w.len - 4 > INT32_MAX) {
		proto_writer_free(&w);
		set_err(c, "%s: the request could not be encoded (%d)", what, rc ? rc : w.err);
		return -1;
	}
	proto_writer_patch_int32(&w, at, (int32_t)(w.len - 4));
	rc = send_all(c, w.buf, w.len, deadline, what);
	proto_writer_free(&w);
	if (rc < 0)
		goto fail;

	uint8_t sz[4];
	if (recv_all(c, sz, 4, deadline, what) < 0)
		goto fail;
	uint32_t size = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
	if (size < 4 || size > ADM_MAX_RESPONSE_BYTES) {
		set_err(c, "%s: a response frame of %u bytes", what, size);
		goto fail;
	}
	uint8_t *buf = proto_arena_alloc(a, size);
	if (!buf) {
		set_err(c, "%s: out of memory for a response of %u bytes", what, size);
		goto fail;
	}
	if (recv_all(c, buf, size, deadline, what) < 0)
		goto fail;
	proto_reader_init(body, buf, size);
	int32_t got = 0;
	if (proto_response_header_decode(body, proto_response_header_version(api_key, version,
									      d->flexible_min),
					 &got) != 0) {
		set_err(c, "%s: a response header that does not parse", what);
		goto fail;
	}
	if (got != correlation_id) {
		set_err(c, "%s: a response for correlation id %d where %d was expected", what,
			(int)got, (int)correlation_id);
		goto fail;
	}
	return 0;
fail:
	adm_conn_close(c);
	return -1;
}

int adm_conn_call(adm_conn *c, const adm_api *api, const void *request, proto_arena *a,
		  void *response, int16_t *version)
{
	int16_t v = adm_conn_version(c, api->key);
	*version = v;
	if (v < 0) {
		set_err(c, "the broker serves no version of %s (key %d) that this program knows",
			api->name, (int)api->key);
		return -1;
	}
	proto_reader body;
	if (roundtrip(c, api->key, api->name, v, api->encode, request, a, &body) < 0)
		return -1;
	if (api->decode(&body, a, v, response) != 0) {
		set_err(c, "%s v%d: a response that does not parse", api->name, (int)v);
		adm_conn_close(c);
		return -1;
	}
	return 0;
}

/* ---- connecting ---- */

static int encode_api_versions(proto_writer *w, int16_t version, const void *request)
{
	return ApiVersionsRequest_encode(w, version, request);
}

/* Connect to one address until deadline. 0, or -1 with c->err. */
static int connect_addr(adm_conn *c, const struct addrinfo *ai, int64_t deadline)
{
	c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		set_err(c, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			set_err(c, "connect: %s", strerror(errno));
			adm_conn_close(c);
			return -1;
		}
		if (wait_fd(c, POLLOUT, deadline, "connect") < 0) {
			adm_conn_close(c);
			return -1;
		}
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr != 0) {
			set_err(c, "connect: %s", strerror(soerr));
			adm_conn_close(c);
			return -1;
		}
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/*
 * ApiVersions at version v; on success fills c->version. *broker_max gets
 * the broker's highest ApiVersions version when it answered
 * UNSUPPORTED_VERSION (-1 otherwise).
 */
static int api_versions(adm_conn *c, int16_t v, int16_t *broker_max)
{
	*broker_max = -1;
	proto_arena a;
	proto_arena_init(&a, 0);
	ApiVersionsRequest req;
	ApiVersionsRequest_init(&req);
	req.client_software_name = proto_cstr("samsa-admin");
	req.client_software_version = proto_cstr(PACKAGE_VERSION);
	proto_reader body;
	int rc = roundtrip(c, API_VERSIONS_KEY, "ApiVersions", v, encode_api_versions, &req, &a,
			   &body);
	if (rc < 0)
		goto out;
	/* Every version starts with ErrorCode; an UNSUPPORTED_VERSION answer
	 * is a v0 body (KIP-511). */
	proto_reader peek = body;
	int16_t code = proto_read_int16(&peek);
	int16_t dv = code == KERR_UNSUPPORTED_VERSION ? 0 : v;
	ApiVersionsResponse resp;
	if (ApiVersionsResponse_decode(&body, &a, dv, &resp) != 0) {
		set_err(c, "ApiVersions v%d: a response that does not parse", (int)v);
		adm_conn_close(c);
		rc = -1;
		goto out;
	}
	if (resp.error_code != 0) {
		for (int32_t i = 0; i < resp.api_keys_count; i++)
			if (resp.api_keys[i].api_key == API_VERSIONS_KEY)
				*broker_max = resp.api_keys[i].max_version;
		set_err(c, "ApiVersions v%d: %s", (int)v, proto_err_name(resp.error_code));
		rc = -1;
		goto out;
	}
	for (int k = 0; k < ADM_API_KEYS; k++)
		c->version[k] = -1;
	for (int32_t i = 0; i < resp.api_keys_count; i++) {
		const ApiVersionsResponse_ApiVersion *b = &resp.api_keys[i];
		const proto_api_desc *d = proto_api_desc_lookup(b->api_key);
		if (!d || b->api_key < 0 || b->api_key >= ADM_API_KEYS)
			continue;
		int16_t hi = d->max_version < b->max_version ? d->max_version : b->max_version;
		int16_t lo = d->min_version > b->min_version ? d->min_version : b->min_version;
		c->version[b->api_key] = hi >= lo ? hi : -1;
	}
out:
	proto_arena_free(&a);
	return rc;
}

/* The TLS handshake on the connected socket, until deadline. 0, or -1
 * with c->err. */
static int tls_start(adm_conn *c, int64_t deadline)
{
	c->ssl = brk_tls_connect(c->sec->ssl_ctx, c->fd, c->host, c->sec->verify_host);
	if (!c->ssl) {
		set_err(c, "TLS: out of memory");
		return -1;
	}
	for (;;) {
		char why[256];
		int r = brk_tls_handshake(c->ssl, why, sizeof(why));
		if (r == 1)
			return 0;
		if (r != BRK_TLS_WANT_READ && r != BRK_TLS_WANT_WRITE) {
			set_err(c, "TLS handshake: %s", tls_why(why));
			return -1;
		}
		if (wait_fd(c, r == BRK_TLS_WANT_READ ? POLLIN : POLLOUT, deadline,
			    "TLS handshake") < 0)
			return -1;
	}
}

static int encode_sasl_handshake(proto_writer *w, int16_t version, const void *request)
{
	return SaslHandshakeRequest_encode(w, version, request);
}

static int encode_sasl_authenticate(proto_writer *w, int16_t version, const void *request)
{
	return SaslAuthenticateRequest_encode(w, version, request);
}

/* SaslHandshake v1 and the SaslAuthenticate rounds (conn.h). 0, or -1
 * with c->err (the connection closed). */
static int sasl_authenticate(adm_conn *c)
{
	const brk_sasl_credentials *cred = &c->sec->cred;
	const char *mech = brk_sasl_mechanism_name(cred->mechanism);
	int16_t hv = c->version[SASL_HANDSHAKE_KEY], av = c->version[SASL_AUTHENTICATE_KEY];
	if (hv < 1 || av < 0) {
		set_err(c, "the broker does not serve SaslHandshake v1 and SaslAuthenticate (is "
			   "this a SASL listener?)");
		adm_conn_close(c);
		return -1;
	}
	proto_arena a;
	proto_arena_init(&a, 0);
	brk_sasl_client sc;
	brk_sasl_client_start(&sc, cred);
	int rc = -1;
	SaslHandshakeRequest hreq;
	SaslHandshakeRequest_init(&hreq);
	hreq.mechanism = proto_cstr(mech);
	proto_reader body;
	if (roundtrip(c, SASL_HANDSHAKE_KEY, "SaslHandshake", hv, encode_sasl_handshake, &hreq, &a,
		      &body) < 0)
		goto out;
	SaslHandshakeResponse hresp;
	if (SaslHandshakeResponse_decode(&body, &a, hv, &hresp) != 0) {
		set_err(c, "SaslHandshake v%d: a response that does not parse", (int)hv);
		goto fail;
	}
	if (hresp.error_code != 0) {
		char enabled[256] = "";
		size_t at = 0;
		for (int32_t i = 0; i < hresp.mechanisms_count && at < sizeof(enabled); i++)
			at += (size_t)snprintf(enabled + at, sizeof(enabled) - at, "%s%.*s",
					       i ? ", " : "", (int)hresp.mechanisms[i].len,
					       hresp.mechanisms[i].ptr);
		set_err(c, "SASL handshake for %s refused: %s (the listener enables: %s)", mech,
			proto_err_name(hresp.error_code), at ? enabled : "none");
		goto fail;
	}
	const uint8_t *in = NULL;
	size_t inlen = 0;
	for (;;) {
		uint8_t out[BRK_SASL_CLIENT_TOKEN_MAX];
		size_t outlen = 0;
		char why[256];
		int st = brk_sasl_client_step(&sc, in, inlen, out, &outlen, why, sizeof(why));
		if (st == 0)
			break;
		if (st < 0) {
			set_err(c, "SASL %s: %s", mech, why);
			goto fail;
		}
		SaslAuthenticateRequest areq;
		SaslAuthenticateRequest_init(&areq);
		areq.auth_bytes.ptr = out;
		areq.auth_bytes.len = (int32_t)outlen;
		int r = roundtrip(c, SASL_AUTHENTICATE_KEY, "SaslAuthenticate", av,
				  encode_sasl_authenticate, &areq, &a, &body);
		OPENSSL_cleanse(out, sizeof(out));
		if (r < 0)
			goto out;
		SaslAuthenticateResponse aresp;
		if (SaslAuthenticateResponse_decode(&body, &a, av, &aresp) != 0) {
			set_err(c, "SaslAuthenticate v%d: a response that does not parse", (int)av);
			goto fail;
		}
		if (aresp.error_code != 0) {
			set_err(c, "SASL authentication as %s (%s) failed: %s%s%.*s", cred->username,
				mech, proto_err_name(aresp.error_code),
				aresp.error_message.len > 0 ? ": " : "",
				aresp.error_message.len > 0 ? (int)aresp.error_message.len : 0,
				aresp.error_message.len > 0 ? aresp.error_message.ptr : "");
			goto fail;
		}
		in = aresp.auth_bytes.ptr;
		inlen = aresp.auth_bytes.len > 0 ? (size_t)aresp.auth_bytes.len : 0;
	}
	rc = 0;
	goto out;
fail:
	adm_conn_close(c);
out:
	brk_sasl_client_end(&sc);
	proto_arena_free(&a);
	return rc;
}

int adm_conn_open(adm_conn *c, const char *host, int port, int32_t node_id, int timeout_ms,
		  const adm_security *sec)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->node_id = node_id;
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->timeout_ms = timeout_ms;
	c->next_correlation_id = 1;
	c->sec = sec;
	for (int k = 0; k < ADM_API_KEYS; k++)
		c->version[k] = -1;

	char service[16];
	snprintf(service, sizeof(service), "%d", port);
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int grc = getaddrinfo(host, service, &hints, &res);
	if (grc != 0 || !res) {
		set_err(c, "cannot resolve: %s", grc ? gai_strerror(grc) : "no address");
		return -1;
	}
	int64_t deadline = mono_ms() + timeout_ms;
	int rc = -1;
	for (const struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next)
		rc = connect_addr(c, ai, deadline);
	freeaddrinfo(res);
	if (rc < 0)
		return -1;
	if (sec && sec->tls && tls_start(c, deadline) < 0) {
		adm_conn_close(c);
		return -1;
	}

	const proto_api_desc *d = proto_api_desc_lookup(API_VERSIONS_KEY);
	int16_t broker_max;
	if (api_versions(c, d->max_version, &broker_max) == 0)
		goto versions_known;
	if (c->fd >= 0 && broker_max >= d->min_version && broker_max < d->max_version &&
	    api_versions(c, broker_max, &broker_max) == 0)
		goto versions_known;
	adm_conn_close(c);
	return -1;
versions_known:
	if (sec && sec->sasl && sasl_authenticate(c) < 0)
		return -1;
	return 0;
}
