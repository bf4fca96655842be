/*
 * sasl_handshake.c - SaslHandshake (API key 17), versions 0-1, through the
 * connection's SASL session (security/sasl.h says when it succeeds, when it
 * is ILLEGAL_SASL_STATE and when the connection closes after the answer):
 *  - the mechanism enabled on the listener: NONE and the enabled list; v0
 *    then takes raw tokens, v1 SaslAuthenticate requests;
 *  - another: UNSUPPORTED_SASL_MECHANISM with the enabled list, then the
 *    connection closes;
 *  - on a listener without SASL, or after authentication (unless it begins
 *    KIP-368 re-authentication): ILLEGAL_SASL_STATE, no mechanisms, as
 *    Kafka's KafkaApis answers.
 */
#include "broker/conn.h"
#include "broker/loop.h"
#include "broker/request.h"
#include "broker/security/sasl.h"
#include "protocol/err.h"
#include "protocol/gen/messages.h"

int brk_handle_sasl_handshake(brk_request *req)
{
	SaslHandshakeRequest m;
	SaslHandshakeRequest_init(&m);
	if (SaslHandshakeRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	brk_sasl_session *ss = brk_conn_sasl(req->conn);
	brk_sasl_result res;
	brk_sasl_handshake(ss, req->api_version, m.mechanism.ptr ? m.mechanism.ptr : "",
			   m.mechanism.len > 0 ? (size_t)m.mechanism.len : 0, brk_mono_ms(), &res);
	SaslHandshakeResponse resp;
	SaslHandshakeResponse_init(&resp);
	resp.error_code = res.error_code;
	const char *names[3];
	proto_str strs[3];
	int n = res.error_code == KERR_ILLEGAL_SASL_STATE ? 0 : brk_sasl_enabled(ss, names);
	for (int i = 0; i < n; i++)
		strs[i] = proto_cstr(names[i]);
	resp.mechanisms = strs;
	resp.mechanisms_count = n;
	if (res.close)
		brk_conn_close_after_response(req->conn);
	if (SaslHandshakeResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
