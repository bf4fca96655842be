/*
 * parse.c - samsa-admin's text forms (see parse.h).
 */
#include "tools/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool adm_parse_int(const char *s, long min, long max, long *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	/* strtol takes leading blanks and a '+': not here */
	if (s[0] != '-' && (s[0] < '0' || s[0] > '9'))
		return false;
	*out = v;
	return true;
}

int adm_parse_host_port(const char *list, int i, char *host, size_t host_cap, int *port)
{
	const char *p = list;
	for (int k = 0; k < i; k++) {
		p = strchr(p, ',');
		if (!p)
			return 0;
		p++;
	}
	if (!*p && i > 0)
		return 0;
	size_t len = strcspn(p, ",");
	if (len == 0)
		return -1;
	const char *colon;
	const char *h = p;
	size_t hlen;
	if (p[0] == '[') {
		const char *close = memchr(p, ']', len);
		if (!close || close + 1 >= p + len || close[1] != ':')
			return -1;
		h = p + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = NULL;
		for (const char *q = p; q < p + len; q++)
			if (*q == ':')
				colon = q;
		if (!colon)
			return -1;
		hlen = (size_t)(colon - p);
	}
	if (hlen == 0 || hlen >= host_cap)
		return -1;
	char num[8];
	size_t nlen = (size_t)(p + len - (colon + 1));
	if (nlen == 0 || nlen >= sizeof(num))
		return -1;
	memcpy(num, colon + 1, nlen);
	num[nlen] = '\0';
	long v;
	if (!adm_parse_int(num, 1, 65535, &v))
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (int)v;
	return 1;
}

/* ids separated by sep in [s, end): count, or -1. */
static int parse_ids_range(const char *s, const char *end, char sep, int32_t *out, int cap)
{
	int n = 0;
	const char *p = s;
	for (;;) {
		const char *q = memchr(p, sep, (size_t)(end - p));
		if (!q)
			q = end;
		char num[16];
		size_t len = (size_t)(q - p);
		if (len == 0 || len >= sizeof(num) || n >= cap)
			return -1;
		memcpy(num, p, len);
		num[len] = '\0';
		long v;
		if (!adm_parse_int(num, 0, INT32_MAX, &v))
			return -1;
		for (int k = 0; k < n; k++)
			if (out[k] == (int32_t)v)
				return -1;
		out[n++] = (int32_t)v;
		if (q == end)
			return n;
		p = q + 1;
	}
}

int adm_parse_ids(const char *s, int32_t *out, int cap)
{
	if (!s || !*s)
		return -1;
	return parse_ids_range(s, s + strlen(s), ',', out, cap);
}

int adm_parse_assignment(const char *s, int32_t *nparts, int32_t *nreplicas, int32_t **ids)
{
	*ids = NULL;
	if (!s || !*s)
		return -1;
	int32_t parts = 1;
	for (const char *p = s; *p; p++)
		if (*p == ',')
			parts++;
	size_t first = strcspn(s, ",");
	int32_t width = 1;
	for (size_t k = 0; k < first; k++)
		if (s[k] == ':')
			width++;
	if (parts > 100000 || width > 64)
		return -1;
	int32_t *out = malloc(sizeof(int32_t) * (size_t)parts * (size_t)width);
	if (!out)
		return -1;
	const char *p = s;
	for (int32_t i = 0; i < parts; i++) {
		const char *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (parse_ids_range(p, end, ':', out + (size_t)i * width, width) != width) {
			free(out);
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	*nparts = parts;
	*nreplicas = width;
	*ids = out;
	return 0;
}

int adm_parse_topic_partition(const char *s, proto_str *topic, int32_t *partition)
{
	const char *colon = strrchr(s, ':');
	*partition = -1;
	if (!colon) {
		*topic = proto_str_of(s, (int32_t)strlen(s));
		return topic->len > 0 ? 0 : -1;
	}
	long v;
	if (colon == s || !adm_parse_int(colon + 1, 0, INT32_MAX, &v))
		return -1;
	*topic = proto_str_of(s, (int32_t)(colon - s));
	*partition = (int32_t)v;
	return 0;
}

int adm_parse_target(const char *s, proto_str *topic, int32_t *partition, int32_t *ids, int cap)
{
	const char *eq = strchr(s, '=');
	if (!eq)
		return -1;
	const char *colon = NULL;
	for (const char *q = s; q < eq; q++)
		if (*q == ':')
			colon = q;
	if (!colon || colon == s || colon + 1 == eq)
		return -1;
	char num[16];
	size_t len = (size_t)(eq - colon - 1);
	if (len >= sizeof(num))
		return -1;
	memcpy(num, colon + 1, len);
	num[len] = '\0';
	long v;
	if (!adm_parse_int(num, 0, INT32_MAX, &v))
		return -1;
	int n = adm_parse_ids(eq + 1, ids, cap);
	if (n < 1)
		return -1;
	*topic = proto_str_of(s, (int32_t)(colon - s));
	*partition = (int32_t)v;
	return n;
}

int adm_parse_kv(const char *s, proto_str *key, proto_str *value)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return -1;
	*key = proto_str_of(s, (int32_t)(eq - s));
	*value = proto_str_of(eq + 1, (int32_t)strlen(eq + 1));
	return 0;
}

const char *adm_fmt_ids(const int32_t *ids, int32_t n, char *buf, size_t cap)
{
	size_t at = 0;
	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (int32_t i = 0; i < n && at < cap; i++) {
		int w = snprintf(buf + at, cap - at, "%s%d", i ? "," : "", (int)ids[i]);
		if (w < 0)
			break;
		at += (size_t)w;
	}
	return buf;
}

const char *adm_fmt_uuid(const proto_uuid *u, char *buf, size_t cap)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char out[23];
	int o = 0;
	for (int i = 0; i < 16; i += 3) {
		uint32_t v = (uint32_t)u->b[i] << 16;
		int have = 16 - i >= 3 ? 3 : 16 - i;
		if (have > 1)
			v |= (uint32_t)u->b[i + 1] << 8;
		if (have > 2)
			v |= u->b[i + 2];
		out[o++] = abc[(v >> 18) & 63];
		out[o++] = abc[(v >> 12) & 63];
		if (have > 1)
			out[o++] = abc[(v >> 6) & 63];
		if (have > 2)
			out[o++] = abc[v & 63];
	}
	out[o] = '\0';
	snprintf(buf, cap, "%s", out);
	return buf;
}

bool adm_uuid_zero(const proto_uuid *u)
{
	for (int i = 0; i < 16; i++)
		if (u->b[i])
			return false;
	return true;
}
