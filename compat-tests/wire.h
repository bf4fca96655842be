/*
 * wire.h - raw Kafka framing over a loopback TCP socket, for tests that must
 * send what no client library would (bad frames, unknown keys) and for the
 * harness's readiness probe. Big-endian helpers, frame send/receive with
 * timeouts, and ApiVersions v0 (the one request every broker must answer in
 * the v0 layout; Kafka protocol guide, KIP-35/KIP-511).
 */
#ifndef SAMSA_COMPAT_WIRE_H
#define SAMSA_COMPAT_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Results of the receive functions. */
enum {
	WIRE_OK = 0,
	WIRE_CLOSED = -1,   /* peer closed (EOF or reset) */
	WIRE_TIMEOUT = -2,  /* nothing (or not enough) within the timeout */
	WIRE_ERROR = -3,    /* local error, or a malformed frame from the peer */
};

/* Connect to 127.0.0.1:port (blocking connect, fd left non-blocking).
 * Returns the fd or -1. */
int w_connect(int port, int timeout_ms);

/* The same to host (a dotted IPv4 address: a broker in a network
 * namespace of netns.h). -1 also when host is not an address. */
int w_connect_host(const char *host, int port, int timeout_ms);

/* Send all len bytes within timeout_ms. Returns 0, WIRE_CLOSED, WIRE_TIMEOUT. */
int w_send_all(int fd, const void *buf, size_t len, int timeout_ms);

/* Send as much of buf as the socket takes now without blocking; returns
 * the number of bytes sent (0 when full) or WIRE_CLOSED. */
long w_send_some(int fd, const void *buf, size_t len);

/*
 * Receive one response frame: the 4-byte size then the body. *body is
 * malloc'd (caller frees) and *len is the body size. Frames larger than
 * max_len are WIRE_ERROR. Returns WIRE_OK, WIRE_CLOSED, WIRE_TIMEOUT or WIRE_ERROR.
 */
int w_recv_frame(int fd, uint8_t **body, int32_t *len, int32_t max_len, int timeout_ms);

/*
 * Wait until the peer closes, discarding what it sends. Returns WIRE_CLOSED
 * when it closed within timeout_ms, WIRE_TIMEOUT when it did not. *nread
 * (optional) gets the number of bytes discarded.
 */
int w_wait_closed(int fd, int timeout_ms, long *nread);

/* Big-endian encoders into p; return p + width. */
uint8_t *w_put16(uint8_t *p, int16_t v);
uint8_t *w_put32(uint8_t *p, int32_t v);
int16_t w_get16(const uint8_t *p);
int32_t w_get32(const uint8_t *p);

/*
 * Write a complete classic request frame (size, api_key, api_version,
 * correlation_id, client_id as int16-length string, header v1) followed by
 * body (body_len bytes) into out (capacity cap). Returns the frame length or
 * -1 if it does not fit.
 */
int w_build_request(uint8_t *out, size_t cap, int16_t api_key, int16_t api_version,
		    int32_t correlation_id, const char *client_id, const void *body,
		    size_t body_len);

typedef struct w_api_range {
	int16_t key, min, max;
} w_api_range;

/*
 * Parse an ApiVersions response body in the v0 layout (correlation_id,
 * error_code, array of {key, min, max}; no throttle time). Fills at most
 * max_apis entries of apis (may be NULL) and sets *napis to the array
 * count. Returns 0 or WIRE_ERROR if the body is shorter than it says.
 */
int w_parse_api_versions_v0(const uint8_t *body, int32_t len, int32_t *correlation_id,
			    int16_t *error_code, w_api_range *apis, int max_apis,
			    int32_t *napis);

/*
 * On an open connection: send ApiVersions v0 with correlation_id and read
 * the reply. Returns 0 when the reply has that correlation id, error code 0
 * and a non-empty api list; else WIRE_CLOSED, WIRE_TIMEOUT or WIRE_ERROR.
 */
int w_api_versions_v0(int fd, int32_t correlation_id, int timeout_ms);

/* Connect, w_api_versions_v0, close. Returns 0 or a W_* error. */
int w_probe(int port, int timeout_ms);
/* The same to host:port. */
int w_probe_host(const char *host, int port, int timeout_ms);

#endif
