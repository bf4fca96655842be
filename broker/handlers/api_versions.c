/*
 * api_versions.c - ApiVersions (key 18): the API keys and version ranges of
 * brk_apis (protocol guide; KIP-35, KIP-511 for v3).
 *
 * Kafka's rules (KafkaApis.handleApiVersionsRequest, ApiVersionsRequest):
 *  - any version is accepted on the wire; one the broker does not serve is
 *    answered as v0 with UNSUPPORTED_VERSION and ApiKeys holding only
 *    ApiVersions' own range, so the client can retry with a version it
 *    shares (KIP-511);
 *  - v3+ carries ClientSoftwareName/Version, each of which must match
 *    [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else INVALID_REQUEST with
 *    no ApiKeys;
 *  - the response header is always v0 (header.h does this).
 */
#include <ctype.h>

#include "broker/quota/quota.h"
#include "broker/request.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

#define API_VERSIONS_KEY 18

/* Kafka's SOFTWARE_NAME_VERSION_PATTERN: alphanumerics, '-' and '.' inside. */
static bool software_name_valid(proto_str s)
{
	if (s.len <= 0)
		return false;
	for (int32_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		bool edge = i == 0 || i == s.len - 1;
		if (!isalnum(c) && (edge || (c != '-' && c != '.')))
			return false;
	}
	return true;
}

int brk_handle_api_versions(brk_request *req)
{
	const brk_api *self = &brk_apis[API_VERSIONS_KEY];
	ApiVersionsResponse resp;
	ApiVersionsResponse_init(&resp);
	resp.throttle_time_ms = 0;
	int16_t version = req->api_version;

	if (version < self->min_version || version > self->max_version) {
		/* Not parsed: the body of an unknown version is unknown. */
		ApiVersionsResponse_ApiVersion *own = proto_arena_alloc(req->arena, sizeof(*own));
		if (!own)
			return BRK_CLOSE;
		own->api_key = API_VERSIONS_KEY;
		own->min_version = self->advertised_min;
		own->max_version = self->max_version;
		resp.error_code = KERR_UNSUPPORTED_VERSION;
		resp.api_keys_count = 1;
		resp.api_keys = own;
		version = 0;
	} else {
		ApiVersionsRequest r;
		ApiVersionsRequest_init(&r);
		if (ApiVersionsRequest_decode(&req->body, req->arena, version, &r) != 0)
			return BRK_CLOSE;
		if (version >= 3 && (!software_name_valid(r.client_software_name) ||
				     !software_name_valid(r.client_software_version))) {
			resp.error_code = KERR_INVALID_REQUEST;
			resp.api_keys_count = 0;
		} else {
			int n = 0;
			for (int k = 0; k <= BRK_API_KEY_MAX; k++)
				n += brk_apis[k].handler != NULL &&
				     brk_apis[k].advertised_min != BRK_NOT_ADVERTISED;
			ApiVersionsResponse_ApiVersion *keys =
				proto_arena_alloc(req->arena, (size_t)n * sizeof(*keys));
			if (!keys)
				return BRK_CLOSE;
			n = 0;
			for (int k = 0; k <= BRK_API_KEY_MAX; k++) {
				const brk_api *a = &brk_apis[k];
				if (!a->handler || a->advertised_min == BRK_NOT_ADVERTISED)
					continue;
				keys[n].api_key = (int16_t)k;
				keys[n].min_version = a->advertised_min;
				keys[n].max_version = a->max_version;
				n++;
			}
			resp.error_code = KERR_NONE;
			resp.api_keys_count = n;
			resp.api_keys = keys;
		}
	}
	/* the request quota here: the field follows the key list, out of
	 * reach of brk_quota_request_done's patch (quota/quota.h) */
	if (version >= 1)
		resp.throttle_time_ms = brk_quota_request_throttle(req);
	if (ApiVersionsResponse_encode(req->out, version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
