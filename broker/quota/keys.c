/*
 * keys.c - client quota config keys (keys.h).
 */
#include "broker/quota/keys.h"

#include "broker/java_double.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const brk_quota_key keys[] = {
	{ BRK_QUOTA_PRODUCER_BYTE_RATE, BRK_QUOTA_LONG, false },
	{ BRK_QUOTA_CONSUMER_BYTE_RATE, BRK_QUOTA_LONG, false },
	{ BRK_QUOTA_REQUEST_PERCENTAGE, BRK_QUOTA_DOUBLE, false },
	{ "controller_mutation_rate", BRK_QUOTA_DOUBLE, false },
	{ "connection_creation_rate", BRK_QUOTA_INT, true },
};

const brk_quota_key *brk_quota_key_find(const char *name, size_t len, bool ip)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].ip == ip && strlen(keys[i].name) == len &&
		    memcmp(keys[i].name, name, len) == 0)
			return &keys[i];
	return NULL;
}

bool brk_quota_key_known(const char *name, bool ip)
{
	return brk_quota_key_find(name, strlen(name), ip) != NULL;
}

const char *brk_quota_check_value(const brk_quota_key *k, double v, char *msg, size_t cap)
{
	/* NaN passes Kafka's "<= 0.0" test; it is no rate: refused as one. */
	if (!(v > 0.0)) {
		snprintf(msg, cap, "Quota %s must be greater than 0", k->name);
		return msg;
	}
	switch (k->type) {
	case BRK_QUOTA_DOUBLE:
		return NULL;
	case BRK_QUOTA_INT:
		if (v > (double)INT32_MAX) {
			snprintf(msg, cap, "Proposed value for %s is too large for an INT.", k->name);
			return msg;
		}
		break;
	case BRK_QUOTA_LONG:
		if (v > 9223372036854775807.0) {
			snprintf(msg, cap, "Proposed value for %s is too large for a LONG.", k->name);
			return msg;
		}
		break;
	}
	/* doubles from 2^53 up are whole */
	double frac = v < 9e15 ? v - (double)(long long)v : 0.0;
	if (frac > 1e-6) {
		snprintf(msg, cap, "%s cannot be a fractional value.", k->name);
		return msg;
	}
	return NULL;
}

int brk_quota_format_value(const brk_quota_key *k, double v, char *out, size_t cap)
{
	int n;
	if (k->type == BRK_QUOTA_DOUBLE) {
		n = brk_java_double(v, out, cap);
	} else {
		/* Kafka's (value + 1e-6).toLong / .toInt, which saturate at the
		 * type's bounds: 2^63, the double a Java client sends for
		 * Long.MAX_VALUE (the default of the LONG keys), is stored as
		 * 9223372036854775807 (a C cast of it is undefined) */
		double w = v + 1e-6;
		long long max = k->type == BRK_QUOTA_INT ? INT32_MAX : INT64_MAX;
		long long min = k->type == BRK_QUOTA_INT ? INT32_MIN : INT64_MIN;
		long long x = isnan(w) ? 0
			      : w >= (double)max ? max
			      : w <= (double)min ? min
			      : (long long)w;
		n = snprintf(out, cap, "%lld", x);
	}
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

int brk_quota_parse_value(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* Java's trailing type suffixes ("5d", "1f") */
	if (end != s && (*end == 'd' || *end == 'D' || *end == 'f' || *end == 'F'))
		end++;
	if (end == s || *end || isnan(v))
		return -1;
	*out = v;
	return 0;
}
