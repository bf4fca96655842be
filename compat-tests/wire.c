/*
 * wire.c - raw Kafka framing over loopback TCP for tests (see wire.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(long long deadline)
{
	long long r = deadline - now_ms();
	return r < 0 ? 0 : (int)r;
}

int w_connect(int port, int timeout_ms)
{
	return w_connect_host("127.0.0.1", port, timeout_ms);
}

int w_connect_host(const char *host, int port, int timeout_ms)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int err = 0;
		socklen_t elen = sizeof(err);
		if (errno != EINPROGRESS || poll(&pfd, 1, timeout_ms) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
			close(fd);
			return -1;
		}
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int w_send_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *p = buf;
	long long deadline = now_ms() + timeout_ms;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			int t = remaining(deadline);
			if (t == 0 || poll(&pfd, 1, t) == 0)
				return WIRE_TIMEOUT;
			continue;
		}
		return WIRE_CLOSED;
	}
	return 0;
}

long w_send_some(int fd, const void *buf, size_t len)
{
	ssize_t n;
	do
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return (long)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return WIRE_CLOSED;
}

/* Read exactly len bytes before the deadline. */
static int recv_exact(int fd, uint8_t *p, size_t len, long long deadline)
{
	while (len > 0) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return WIRE_CLOSED;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			int t = remaining(deadline);
			if (t == 0 || poll(&pfd, 1, t) == 0)
				return WIRE_TIMEOUT;
			continue;
		}
		return WIRE_CLOSED; /* ECONNRESET and friends */
	}
	return WIRE_OK;
}

int w_recv_frame(int fd, uint8_t **body, int32_t *len, int32_t max_len, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	uint8_t hdr[4];
	int rc = recv_exact(fd, hdr, 4, deadline);
	*body = NULL;
	*len = 0;
	if (rc != WIRE_OK)
		return rc;
	int32_t size = w_get32(hdr);
	if (size < 0 || size > max_len)
		return WIRE_ERROR;
	uint8_t *b = malloc(size > 0 ? (size_t)size : 1);
	if (!b)
		return WIRE_ERROR;
	rc = recv_exact(fd, b, (size_t)size, deadline);
	if (rc != WIRE_OK) {
		free(b);
		return rc;
	}
	*body = b;
	*len = size;
	return WIRE_OK;
}

int w_wait_closed(int fd, int timeout_ms, long *nread)
{
	long long deadline = now_ms() + timeout_ms;
	uint8_t buf[65536];
	long total = 0;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			if (nread)
				*nread = total;
			return WIRE_CLOSED;
		}
		if (errno == EINTR)
			continue;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int t = remaining(deadline);
		if (t == 0 || poll(&pfd, 1, t) == 0) {
			if (nread)
				*nread = total;
			return WIRE_TIMEOUT;
		}
	}
}

uint8_t *w_put16(uint8_t *p, int16_t v)
{
	uint16_t u = (uint16_t)v;
	p[0] = (uint8_t)(u >> 8);
	p[1] = (uint8_t)u;
	return p + 2;
}

uint8_t *w_put32(uint8_t *p, int32_t v)
{
	uint32_t u = (uint32_t)v;
	p[0] = (uint8_t)(u >> 24);
	p[1] = (uint8_t)(u >> 16);
	p[2] = (uint8_t)(u >> 8);
	p[3] = (uint8_t)u;
	return p + 4;
}

int16_t w_get16(const uint8_t *p)
{
	return (int16_t)(uint16_t)((p[0] << 8) | p[1]);
}

int32_t w_get32(const uint8_t *p)
{
	return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
			 ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

int w_build_request(uint8_t *out, size_t cap, int16_t api_key, int16_t api_version,
		    int32_t correlation_id, const char *client_id, const void *body,
		    size_t body_len)
{
	size_t cid_len = client_id ? strlen(client_id) : 0;
	size_t total = 4 + 2 + 2 + 4 + 2 + cid_len + body_len;
	if (total > cap || total - 4 > INT32_MAX || cid_len > INT16_MAX)
		return -1;
	uint8_t *p = out;
	p = w_put32(p, (int32_t)(total - 4));
	p = w_put16(p, api_key);
	p = w_put16(p, api_version);
	p = w_put32(p, correlation_id);
	p = w_put16(p, client_id ? (int16_t)cid_len : -1);
	if (cid_len) {
		memcpy(p, client_id, cid_len);
		p += cid_len;
	}
	if (body_len)
		memcpy(p, body, body_len);
	return (int)total;
}

int w_parse_api_versions_v0(const uint8_t *body, int32_t len, int32_t *correlation_id,
			    int16_t *error_code, w_api_range *apis, int max_apis,
			    int32_t *napis)
{
	if (len < 10)
		return WIRE_ERROR;
	*correlation_id = w_get32(body);
	*error_code = w_get16(body + 4);
	int32_t n = w_get32(body + 6);
	*napis = n;
	if (n < 0 || (int64_t)n * 6 > (int64_t)len - 10)
		return WIRE_ERROR;
	for (int32_t i = 0; i < n && apis && i < max_apis; i++) {
		const uint8_t *e = body + 10 + 6 * i;
		apis[i].key = w_get16(e);
		apis[i].min = w_get16(e + 2);
		apis[i].max = w_get16(e + 4);
	}
	return 0;
}

int w_api_versions_v0(int fd, int32_t correlation_id, int timeout_ms)
{
	uint8_t req[64];
	int n = w_build_request(req, sizeof(req), 18, 0, correlation_id, "compat-probe", NULL, 0);
	int rc = w_send_all(fd, req, (size_t)n, timeout_ms);
	if (rc != 0)
		return rc;
	uint8_t *body;
	int32_t len;
	rc = w_recv_frame(fd, &body, &len, 1 << 20, timeout_ms);
	if (rc != WIRE_OK)
		return rc;
	int32_t cid, napis;
	int16_t err;
	rc = w_parse_api_versions_v0(body, len, &cid, &err, NULL, 0, &napis);
	free(body);
	if (rc != 0 || cid != correlation_id || err != 0 || napis <= 0)
		return WIRE_ERROR;
	return 0;
}

int w_probe(int port, int timeout_ms)
{
	return w_probe_host("127.0.0.1", port, timeout_ms);
}

int w_probe_host(const char *host, int port, int timeout_ms)
{
	int fd = w_connect_host(host, port, timeout_ms);
	if (fd < 0)
		return WIRE_CLOSED;
	int rc = w_api_versions_v0(fd, 0x5a5a, timeout_ms);
	close(fd);
	return rc;
}
