/*
 * served_apis.c - the broker's own API table (broker/dispatch.c, compiled
 * here as it is) for fuzz_request, without the broker: the handlers it
 * points to are the stubs of handler_stubs.c, generated from
 * broker/request.h's declarations by fuzz/Makefile.am.
 */
#include "broker/dispatch.c"
