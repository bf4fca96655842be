/*
 * sasl_parsers.c - the broker's SASL parsers (broker/security: the JAAS
 * config reader, the PLAIN message, the SCRAM messages and credential
 * strings, the client's reading of a server's SCRAM messages), compiled here as they are for fuzz_sasl, without the broker.
 */
#include "broker/security/jaas.c"
#include "broker/security/plain.c"
#include "broker/security/scram.c"
#include "broker/security/sasl_client.c"
