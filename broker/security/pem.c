/*
 * pem.c - inline PEM config values made into line-broken PEM (see pem.h).
 */
#include "broker/security/pem.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f';
}

static bool is_base64(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '+' || ch == '/' || ch == '=';
}

char *brk_pem_text(const char *v)
{
	size_t len = strlen(v);
	/* at most one line break per 64 base64 characters plus each
	 * block's own: twice the input is more than enough */
	char *out = malloc(2 * len + 8);
	if (!out)
		return NULL;
	size_t o = 0;
	const char *p = v;
	bool any = false;
	for (;;) {
		const char *begin = strstr(p, "-----BEGIN ");
		if (!begin)
			break;
		const char *label = begin + 11;
		const char *label_end = strstr(label, "-----");
		if (!label_end)
			break;
		size_t label_len = (size_t)(label_end - label);
		const char *body = label_end + 5;
		/* the matching "-----END <label>-----" */
		const char *end = body;
		for (;;) {
			end = strstr(end, "-----END ");
			if (!end || (strncmp(end + 9, label, label_len) == 0 &&
				     strncmp(end + 9 + label_len, "-----", 5) == 0))
				break;
			end += 9;
		}
		if (!end)
			break;
		const char *after = end + 9 + label_len + 5;
		bool plain = true;
		for (const char *q = body; q < end; q++)
			if (!is_space(*q) && !is_base64(*q))
				plain = false;
		if (!plain) {
			/* headers or other text: as it is, on its own lines */
			memcpy(out + o, begin, (size_t)(after - begin));
			o += (size_t)(after - begin);
			out[o++] = '\n';
		} else {
			memcpy(out + o, begin, (size_t)(body - begin));
			o += (size_t)(body - begin);
			out[o++] = '\n';
			int col = 0;
			for (const char *q = body; q < end; q++) {
				if (is_space(*q))
					continue;
				out[o++] = *q;
				if (++col == 64) {
					out[o++] = '\n';
					col = 0;
				}
			}
			if (col)
				out[o++] = '\n';
			memcpy(out + o, end, (size_t)(after - end));
			o += (size_t)(after - end);
			out[o++] = '\n';
		}
		any = true;
		p = after;
	}
	if (!any) {
		memcpy(out, v, len);
		o = len;
	}
	out[o] = '\0';
	return out;
}
