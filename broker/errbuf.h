/*
 * errbuf.h - the error text of functions that report failure through a
 * caller's buffer (the `char *err, size_t errsize` pair of config, SASL,
 * JAAS, the password encoder and samsa-admin's security settings).
 */
#ifndef SAMSA_BROKER_ERRBUF_H
#define SAMSA_BROKER_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the message into err (errsize bytes, always terminated when
 * errsize > 0; err may be NULL or errsize 0 to drop it). Returns -1, so a
 * failing function can `return brk_fail(err, errsize, ...)`. */
static inline int brk_fail(char *err, size_t errsize, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int brk_fail(char *err, size_t errsize, const char *fmt, ...)
{
	if (err && errsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return -1;
}

#endif
