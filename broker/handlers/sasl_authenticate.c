/*
 * sasl_authenticate.c - SaslAuthenticate (API key 36), versions 0-2
 * (KIP-152; v1 the session lifetime of KIP-368): one token of the SASL
 * exchange begun by SaslHandshake v1, through the connection's SASL session
 * (security/sasl.h):
 *  - accepted: NONE, the server's token, and on completion the session
 *    lifetime (connections.max.reauth.ms, 0 without one);
 *  - refused: SASL_AUTHENTICATION_FAILED with Kafka's message, then the
 *    connection closes;
 *  - out of order (before the handshake, after a v0 handshake):
 *    ILLEGAL_SASL_STATE, then the connection closes; after authentication
 *    or on a listener without SASL: ILLEGAL_SASL_STATE, and it stays open.
 */
#include "broker/conn.h"
#include "broker/loop.h"
#include "broker/request.h"
#include "broker/security/sasl.h"
#include "protocol/gen/messages.h"

int brk_handle_sasl_authenticate(brk_request *req)
{
	SaslAuthenticateRequest m;
	SaslAuthenticateRequest_init(&m);
	if (SaslAuthenticateRequest_decode(&req->body, req->arena, req->api_version, &m) != 0)
		return BRK_CLOSE;
	brk_sasl_session *ss = brk_conn_sasl(req->conn);
	brk_sasl_result res;
	brk_sasl_authenticate(ss, req->conn, req->api_version, m.auth_bytes.ptr,
			      m.auth_bytes.len > 0 ? (size_t)m.auth_bytes.len : 0, brk_mono_ms(), &res);
	SaslAuthenticateResponse resp;
	SaslAuthenticateResponse_init(&resp);
	resp.error_code = res.error_code;
	resp.error_message = res.message[0] ? proto_cstr(res.message) : proto_str_of(NULL, -1);
	resp.auth_bytes.ptr = res.token;
	resp.auth_bytes.len = (int32_t)res.token_len;
	resp.session_lifetime_ms = res.session_lifetime_ms;
	if (res.close)
		brk_conn_close_after_response(req->conn);
	if (SaslAuthenticateResponse_encode(req->out, req->api_version, &resp) != 0)
		return BRK_CLOSE;
	return BRK_RESPOND;
}
