/*
 * header.h - Kafka request header v0-v2 and response header v0-v1
 * (protocol guide "Headers"; KIP-482 for the flexible v2/v1 forms; KIP-511
 * for ApiVersions' response header always being v0).
 *
 *   request header v0: api_key int16, api_version int16, correlation_id int32
 *                  v1: + client_id NULLABLE_STRING (int16 length, -1 null;
 *                        classic even in v2)
 *                  v2: + tagged fields (none are defined; all are skipped)
 *   response header v0: correlation_id int32
 *                   v1: + tagged fields (written empty)
 */
#ifndef SAMSA_PROTOCOL_HEADER_H
#define SAMSA_PROTOCOL_HEADER_H

#include <stdint.h>

#include "protocol/buf.h"

typedef struct proto_request_header {
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	proto_str client_id; /* view into the request; len -1: null or absent (v0) */
} proto_request_header;

/*
 * Decode a request header of the given header version (0, 1 or 2) from r.
 * client_id is a borrowed view into r's buffer. Unknown tagged fields in v2
 * are skipped. Returns 0, the reader's PROTO_ERR_* (UNDERFLOW / INVALID,
 * r->err is set) or PROTO_ERR_VERSION for a header version outside 0..2.
 */
int proto_request_header_decode(proto_reader *r, int16_t header_version, proto_request_header *h);

/*
 * Encode a request header (for clients, replica fetchers and tests).
 * client_id is written for v1+ (len -1: null); v2 ends with an empty tagged
 * field section. Errors land in w->err.
 */
void proto_request_header_encode(proto_writer *w, int16_t header_version,
				 const proto_request_header *h);

/*
 * Request header version of an API version: 2 when the API version is
 * flexible (flexible_min >= 0 and api_version >= flexible_min, from the
 * generated proto_api_desc), else 1. ControlledShutdown (key 7) v0 uses
 * header v0 (Kafka's ControlledShutdownRequest.json note).
 */
int16_t proto_request_header_version(int16_t api_key, int16_t api_version, int16_t flexible_min);

/*
 * Response header version: ApiVersions (key 18) always 0 so a client that
 * sent a version the broker does not know can still read the error
 * (KIP-511); otherwise 1 when flexible, else 0.
 */
int16_t proto_response_header_version(int16_t api_key, int16_t api_version, int16_t flexible_min);

/* Write a response header (v1 adds an empty tagged field section). */
void proto_response_header_encode(proto_writer *w, int16_t header_version, int32_t correlation_id);

/*
 * Decode a response header (for clients and replica fetchers), skipping
 * v1's tagged fields. Returns 0, the reader's PROTO_ERR_*, or
 * PROTO_ERR_VERSION for a header version outside 0..1.
 */
int proto_response_header_decode(proto_reader *r, int16_t header_version, int32_t *correlation_id);

#endif
