/*
 * entity.c - client config entity paths (entity.h).
 */
#include "controller/entity.h"

#include <errno.h>
#include <string.h>

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* The bytes URLEncoder leaves alone ('*' too, which Sanitizer encodes). */
static bool unreserved(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '-' || ch == '_';
}

int ctl_entity_sanitize(const char *name, size_t len, char *out, size_t cap)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (unreserved(ch)) {
			if (j + 1 >= cap)
				return -ENAMETOOLONG;
			out[j++] = (char)ch;
		} else {
			if (j + 3 >= cap)
				return -ENAMETOOLONG;
			out[j++] = '%';
			out[j++] = digits[ch >> 4];
			out[j++] = digits[ch & 15];
		}
	}
	if (j >= cap)
		return -ENAMETOOLONG;
	out[j] = '\0';
	return (int)j;
}

int ctl_entity_desanitize(const char *s, size_t len, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		int ch = (unsigned char)s[i];
		if (ch == '%') {
			int hi = i + 1 < len ? hexval((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval((unsigned char)s[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				return -EINVAL;
			ch = hi << 4 | lo;
			i += 2;
		} else if (ch == '+') {
			ch = ' ';
		}
		if (j + 1 >= cap)
			return -ENAMETOOLONG;
		out[j++] = (char)ch;
	}
	if (j >= cap)
		return -ENAMETOOLONG;
	out[j] = '\0';
	return (int)j;
}

/* Append one sanitized name (NULL: "<default>") at *pos. */
static int put_name(char *out, size_t cap, size_t *pos, const char *name, size_t len)
{
	if (name && len == 0)
		return -EINVAL;
	if (!name) {
		size_t n = strlen(CTL_ENTITY_DEFAULT);
		if (*pos + n >= cap)
			return -ENAMETOOLONG;
		memcpy(out + *pos, CTL_ENTITY_DEFAULT, n + 1);
		*pos += n;
		return 0;
	}
	int n = ctl_entity_sanitize(name, len, out + *pos, cap - *pos);
	if (n < 0)
		return n;
	*pos += (size_t)n;
	return 0;
}

static int put_lit(char *out, size_t cap, size_t *pos, const char *lit)
{
	size_t n = strlen(lit);
	if (*pos + n >= cap)
		return -ENAMETOOLONG;
	memcpy(out + *pos, lit, n + 1);
	*pos += n;
	return 0;
}

int ctl_entity_path(char *out, size_t cap, ctl_entity_kind kind, const char *name,
		    size_t name_len, const char *client, size_t client_len)
{
	if (cap > CTL_ENTITY_PATH_MAX + 1)
		cap = CTL_ENTITY_PATH_MAX + 1;
	if (cap == 0)
		return -ENAMETOOLONG;
	size_t pos = 0;
	int rc;
	out[0] = '\0';
	switch (kind) {
	case CTL_ENTITY_USER:
		if ((rc = put_lit(out, cap, &pos, "users/")) < 0 ||
		    (rc = put_name(out, cap, &pos, name, name_len)) < 0)
			return rc;
		break;
	case CTL_ENTITY_USER_CLIENT_ID:
		if ((rc = put_lit(out, cap, &pos, "users/")) < 0 ||
		    (rc = put_name(out, cap, &pos, name, name_len)) < 0 ||
		    (rc = put_lit(out, cap, &pos, "/clients/")) < 0 ||
		    (rc = put_name(out, cap, &pos, client, client_len)) < 0)
			return rc;
		break;
	case CTL_ENTITY_CLIENT_ID:
		if ((rc = put_lit(out, cap, &pos, "clients/")) < 0 ||
		    (rc = put_name(out, cap, &pos, name, name_len)) < 0)
			return rc;
		break;
	case CTL_ENTITY_IP:
		if ((rc = put_lit(out, cap, &pos, "ips/")) < 0 ||
		    (rc = put_name(out, cap, &pos, name, name_len)) < 0)
			return rc;
		break;
	default:
		return -EINVAL;
	}
	/* "." and ".." are unreserved: a name of dots alone would make a path
	 * ZooKeeper refuses. */
	ctl_entity_ref ref;
	if (ctl_entity_parse(out, pos, &ref) != 0)
		return -EINVAL;
	return (int)pos;
}

/* One name component: non-empty, printable ASCII but '/', not "." or "..",
 * and decodable. */
static bool valid_component(const char *s, size_t len)
{
	if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch <= ' ' || ch >= 0x7f || ch == '/')
			return false;
		if (ch == '%' && (i + 2 >= len || hexval((unsigned char)s[i + 1]) < 0 ||
				  hexval((unsigned char)s[i + 2]) < 0))
			return false;
	}
	return true;
}

static bool is_default(const char *s, size_t len)
{
	return len == strlen(CTL_ENTITY_DEFAULT) && memcmp(s, CTL_ENTITY_DEFAULT, len) == 0;
}

/* The next component of path[*pos, len): up to '/' or the end. */
static bool next_component(const char *path, size_t len, size_t *pos, const char **s,
			   size_t *n)
{
	if (*pos > len)
		return false;
	const char *start = path + *pos;
	const char *slash = memchr(start, '/', len - *pos);
	*s = start;
	*n = slash ? (size_t)(slash - start) : len - *pos;
	*pos += *n + 1; /* past the '/' (or one past the end) */
	return true;
}

static bool lit_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

int ctl_entity_parse(const char *path, size_t len, ctl_entity_ref *out)
{
	memset(out, 0, sizeof(*out));
	if (!path || len == 0 || len > CTL_ENTITY_PATH_MAX)
		return -EINVAL;
	size_t pos = 0;
	const char *type, *name, *sub = NULL, *client = NULL;
	size_t ntype, nname, nsub = 0, nclient = 0;
	if (!next_component(path, len, &pos, &type, &ntype) ||
	    !next_component(path, len, &pos, &name, &nname))
		return -EINVAL;
	if (pos <= len) {
		if (!next_component(path, len, &pos, &sub, &nsub) ||
		    !next_component(path, len, &pos, &client, &nclient) || pos <= len)
			return -EINVAL;
	}
	if (!valid_component(name, nname))
		return -EINVAL;
	out->name = name;
	out->name_len = nname;
	out->name_default = is_default(name, nname);
	if (lit_eq(type, ntype, "users")) {
		if (!sub) {
			out->kind = CTL_ENTITY_USER;
			return 0;
		}
		if (!lit_eq(sub, nsub, "clients") || !valid_component(client, nclient))
			return -EINVAL;
		out->kind = CTL_ENTITY_USER_CLIENT_ID;
		out->client = client;
		out->client_len = nclient;
		out->client_default = is_default(client, nclient);
		return 0;
	}
	if (sub)
		return -EINVAL;
	if (lit_eq(type, ntype, "clients"))
		out->kind = CTL_ENTITY_CLIENT_ID;
	else if (lit_eq(type, ntype, "ips"))
		out->kind = CTL_ENTITY_IP;
	else
		return -EINVAL;
	return 0;
}
