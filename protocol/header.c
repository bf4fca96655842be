/*
 * header.c - request/response header codecs and the rules that pick their
 * versions (header.h).
 */
#include "protocol/header.h"

#define API_KEY_CONTROLLED_SHUTDOWN 7
#define API_KEY_API_VERSIONS 18

/* Skip a tagged field section: uvarint count, then per field uvarint tag,
 * uvarint size and size bytes (KIP-482). */
static void skip_tagged_fields(proto_reader *r)
{
	uint32_t n = proto_read_uvarint(r);
	/* Each field takes at least two bytes (tag and size). */
	if (r->err == 0 && n > proto_reader_left(r) / 2) {
		r->err = PROTO_ERR_INVALID;
		r->p = r->end;
		return;
	}
	for (uint32_t i = 0; i < n && r->err == 0; i++) {
		(void)proto_read_uvarint(r); /* tag */
		uint32_t size = proto_read_uvarint(r);
		proto_skip(r, size);
	}
}

int proto_request_header_decode(proto_reader *r, int16_t header_version, proto_request_header *h)
{
	h->api_key = 0;
	h->api_version = 0;
	h->correlation_id = 0;
	h->client_id = proto_str_of(NULL, -1);
	if (header_version < 0 || header_version > 2)
		return PROTO_ERR_VERSION;
	h->api_key = proto_read_int16(r);
	h->api_version = proto_read_int16(r);
	h->correlation_id = proto_read_int32(r);
	if (header_version >= 1)
		proto_read_string(r, &h->client_id);
	if (header_version >= 2)
		skip_tagged_fields(r);
	return r->err;
}

void proto_request_header_encode(proto_writer *w, int16_t header_version,
				 const proto_request_header *h)
{
	proto_write_int16(w, h->api_key);
	proto_write_int16(w, h->api_version);
	proto_write_int32(w, h->correlation_id);
	if (header_version >= 1)
		proto_write_string(w, &h->client_id);
	if (header_version >= 2)
		proto_write_uvarint(w, 0);
}

static int is_flexible(int16_t api_version, int16_t flexible_min)
{
	return flexible_min >= 0 && api_version >= flexible_min;
}

int16_t proto_request_header_version(int16_t api_key, int16_t api_version, int16_t flexible_min)
{
	if (api_key == API_KEY_CONTROLLED_SHUTDOWN && api_version == 0)
		return 0;
	return is_flexible(api_version, flexible_min) ? 2 : 1;
}

int16_t proto_response_header_version(int16_t api_key, int16_t api_version, int16_t flexible_min)
{
	if (api_key == API_KEY_API_VERSIONS)
		return 0;
	return is_flexible(api_version, flexible_min) ? 1 : 0;
}

void proto_response_header_encode(proto_writer *w, int16_t header_version, int32_t correlation_id)
{
	proto_write_int32(w, correlation_id);
	if (header_version >= 1)
		proto_write_uvarint(w, 0);
}

int proto_response_header_decode(proto_reader *r, int16_t header_version, int32_t *correlation_id)
{
	*correlation_id = 0;
	if (header_version < 0 || header_version > 1)
		return PROTO_ERR_VERSION;
	*correlation_id = proto_read_int32(r);
	if (header_version >= 1)
		skip_tagged_fields(r);
	return r->err;
}
