/*
 * err.c - name and retriable flag of each Kafka error code, from the one
 * list in err.h.
 */
#include "protocol/err.h"

#include <stddef.h>

struct err_desc {
	const char *name;
	bool retriable;
};

/* Indexed by code + 1 (UNKNOWN_SERVER_ERROR is -1). */
static const struct err_desc errors[] = {
#define PROTO_KERR_DESC(code, name, retriable) [(code) + 1] = { #name, retriable },
	PROTO_KAFKA_ERRORS(PROTO_KERR_DESC)
#undef PROTO_KERR_DESC
};

static const struct err_desc *lookup(int code)
{
	if (code < -1 || code + 1 >= (int)(sizeof(errors) / sizeof(errors[0])))
		return NULL;
	const struct err_desc *d = &errors[code + 1];
	return d->name != NULL ? d : NULL;
}

const char *proto_err_name(int code)
{
	const struct err_desc *d = lookup(code);
	return d != NULL ? d->name : "UNKNOWN";
}

bool proto_err_retriable(int code)
{
	const struct err_desc *d = lookup(code);
	return d != NULL && d->retriable;
}
