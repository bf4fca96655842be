/*
 * msg_ops.c - the generated type-erased codec table (proto_msg_ops_all,
 * protocol/gen/messages_fill.c, built with the protocol library's tests),
 * compiled into fuzz_request.
 */
#include "protocol/gen/messages_fill.c"
