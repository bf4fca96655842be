/*
 * principal_mapper.c - ssl.principal.mapping.rules (see the header).
 *
 * A rule's pattern is compiled as "^(" pattern ")$", so a match is a match
 * of the whole name (Java's Matcher.matches); group n of the user's pattern
 * is group n + 1 of the compiled one.
 */
#include "broker/security/principal_mapper.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 10 /* $0..$9 */

typedef struct mapper_rule {
	bool is_default;
	char to_case;      /* 'L', 'U' or 0 */
	regex_t re;        /* "^(" pattern ")$" */
	char *replacement; /* as written (escapes resolved when applied) */
} mapper_rule;

struct brk_ssl_mapper {
	int nrules;
	mapper_rule rules[BRK_SSL_MAPPER_MAX_RULES];
};

static void *fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return NULL;
}

void brk_ssl_mapper_free(brk_ssl_mapper *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nrules; i++) {
		if (!m->rules[i].is_default) {
			regfree(&m->rules[i].re);
			free(m->rules[i].replacement);
		}
	}
	free(m);
}

/*
 * Read up to the next "/" not escaped by "\" from *p into out (outsize
 * bytes, NUL-terminated). "\/" becomes "/" when unescape_slash, every other
 * escape is kept as written. Returns false when there is no closing "/" or
 * out is too small; *p is left after the "/".
 */
static bool read_part(const char **p, char *out, size_t outsize, bool unescape_slash)
{
	const char *s = *p;
	size_t n = 0;
	while (*s && *s != '/') {
		char ch[2];
		int k = 0;
		if (*s == '\\' && s[1]) {
			if (s[1] == '/' && unescape_slash) {
				ch[k++] = '/';
			} else {
				ch[k++] = s[0];
				ch[k++] = s[1];
			}
			s += 2;
		} else {
			ch[k++] = *s++;
		}
		if (n + (size_t)k >= outsize)
			return false;
		memcpy(out + n, ch, (size_t)k);
		n += (size_t)k;
	}
	if (*s != '/')
		return false;
	out[n] = '\0';
	*p = s + 1;
	return true;
}

/* Java-only pattern syntax that POSIX would read differently. */
static const char *java_only(const char *pattern)
{
	static const char *const bad[] = { "*?", "+?", "??", "}?", "(?", "\\d", "\\D", "\\p", "\\Q" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strstr(pattern, bad[i]))
			return bad[i];
	return NULL;
}

/*
 * What glibc's regex engine could spend without bound on (seen by
 * fuzz_principal_mapper: a run of quantifiers makes regcomp exhaust
 * memory): stacked quantifiers ("a++", Java's possessive form), bounds
 * above 255, back references. Returns a description or NULL.
 */
static const char *too_costly(const char *p)
{
	bool after_quant = false;
	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			if (p[1] >= '1' && p[1] <= '9')
				return "a back reference";
			p++;
			after_quant = false;
			continue;
		}
		if (*p == '*' || *p == '+' || *p == '?' || *p == '{') {
			if (after_quant)
				return "stacked quantifiers";
			if (*p == '{') {
				const char *q = p + 1;
				while (*q && *q != '}') {
					if (*q >= '0' && *q <= '9' && strtol(q, NULL, 10) > 255)
						return "a bound above 255";
					while (*q >= '0' && *q <= '9')
						q++;
					if (*q && *q != '}')
						q++;
				}
				p = *q ? q : q - 1;
			}
			after_quant = true;
			continue;
		}
		after_quant = false;
	}
	return NULL;
}

/* The largest $n in a replacement, -1 when none. */
static int max_group_ref(const char *r)
{
	int max = -1;
	for (; *r; r++) {
		if (*r == '\\' && r[1]) {
			r++;
		} else if (*r == '$' && isdigit((unsigned char)r[1])) {
			int g = r[1] - '0';
			if (g > max)
				max = g;
			r++;
		}
	}
	return max;
}

brk_ssl_mapper *brk_ssl_mapper_new(const char *rules, char *err, size_t errsize)
{
	if (!rules || !*rules)
		rules = "DEFAULT";
	if (strlen(rules) >= BRK_SSL_MAPPER_RULES_MAX)
		return fail(err, errsize, "ssl.principal.mapping.rules: longer than %d bytes",
			    BRK_SSL_MAPPER_RULES_MAX - 1);
	brk_ssl_mapper *m = calloc(1, sizeof(*m));
	if (!m)
		return fail(err, errsize, "ssl.principal.mapping.rules: out of memory");
	char pattern[BRK_SSL_MAPPER_RULES_MAX], replacement[BRK_SSL_MAPPER_RULES_MAX];
	char anchored[BRK_SSL_MAPPER_RULES_MAX + 8];
	const char *p = rules;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		const char *start = p;
		if (m->nrules == BRK_SSL_MAPPER_MAX_RULES) {
			brk_ssl_mapper_free(m);
			return fail(err, errsize, "ssl.principal.mapping.rules: more than %d rules",
				    BRK_SSL_MAPPER_MAX_RULES);
		}
		mapper_rule *r = &m->rules[m->nrules];
		if (strncmp(p, "DEFAULT", 7) == 0) {
			r->is_default = true;
			p += 7;
			m->nrules++;
		} else if (strncmp(p, "RULE:", 5) == 0) {
			p += 5;
			if (!read_part(&p, pattern, sizeof(pattern), true) ||
			    !read_part(&p, replacement, sizeof(replacement), false))
				goto invalid;
			if (*p == 'L' || *p == 'U')
				r->to_case = *p++;
			const char *costly = too_costly(pattern);
			if (strlen(pattern) > BRK_SSL_MAPPER_PATTERN_MAX || costly) {
				brk_ssl_mapper_free(m);
				return fail(err, errsize,
					    "ssl.principal.mapping.rules: pattern \"%.64s\" has %s",
					    pattern, costly ? costly : "more than 512 bytes");
			}
			const char *j = java_only(pattern);
			if (j) {
				brk_ssl_mapper_free(m);
				return fail(err, errsize,
					    "ssl.principal.mapping.rules: pattern \"%s\" uses \"%s\", which "
					    "POSIX regular expressions do not have",
					    pattern, j);
			}
			snprintf(anchored, sizeof(anchored), "^(%s)$", pattern);
			int rc = regcomp(&r->re, anchored, REG_EXTENDED);
			if (rc != 0) {
				char msg[128];
				regerror(rc, &r->re, msg, sizeof(msg));
				brk_ssl_mapper_free(m);
				return fail(err, errsize, "ssl.principal.mapping.rules: pattern \"%s\": %s",
					    pattern, msg);
			}
			int g = max_group_ref(replacement), groups = (int)r->re.re_nsub - 1;
			if (g > groups) {
				regfree(&r->re);
				brk_ssl_mapper_free(m);
				return fail(err, errsize,
					    "ssl.principal.mapping.rules: replacement \"%s\" refers to group "
					    "%d, pattern \"%s\" has %d",
					    replacement, g, pattern, groups);
			}
			r->replacement = strdup(replacement);
			if (!r->replacement) {
				regfree(&r->re);
				brk_ssl_mapper_free(m);
				return fail(err, errsize, "ssl.principal.mapping.rules: out of memory");
			}
			m->nrules++;
		} else {
			goto invalid;
		}
		while (isspace((unsigned char)*p))
			p++;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p)
			goto invalid;
		continue;
	invalid:;
		const char *end = strchr(start, ',');
		int len = end ? (int)(end - start) : (int)strlen(start);
		brk_ssl_mapper_free(m);
		return fail(err, errsize,
			    "ssl.principal.mapping.rules: invalid rule \"%.*s\" (DEFAULT or "
			    "RULE:pattern/replacement/[LU])",
			    len, start);
	}
	if (m->nrules == 0) {
		brk_ssl_mapper_free(m);
		return fail(err, errsize, "ssl.principal.mapping.rules: no rule");
	}
	return m;
}

/* Append n bytes of s to out at *len; false when they do not fit. */
static bool put(char *out, size_t outsize, size_t *len, const char *s, size_t n)
{
	if (*len + n >= outsize)
		return false;
	memcpy(out + *len, s, n);
	*len += n;
	return true;
}

int brk_ssl_mapper_map(const brk_ssl_mapper *m, const char *dn, char *out, size_t outsize)
{
	size_t dnlen = strlen(dn);
	for (int i = 0; i < m->nrules; i++) {
		const mapper_rule *r = &m->rules[i];
		size_t len = 0;
		if (r->is_default) {
			if (!put(out, outsize, &len, dn, dnlen))
				return -ENAMETOOLONG;
			out[len] = '\0';
			return 0;
		}
		regmatch_t pm[MAX_GROUPS + 1];
		if (regexec(&r->re, dn, MAX_GROUPS + 1, pm, 0) != 0)
			continue;
		for (const char *s = r->replacement; *s; s++) {
			bool ok;
			if (*s == '\\' && s[1]) {
				ok = put(out, outsize, &len, s + 1, 1);
				s++;
			} else if (*s == '$' && isdigit((unsigned char)s[1])) {
				int g = s[1] - '0' + 1; /* the whole pattern is group 1 */
				s++;
				ok = pm[g].rm_so < 0 ||
				     put(out, outsize, &len, dn + pm[g].rm_so,
					 (size_t)(pm[g].rm_eo - pm[g].rm_so));
			} else {
				ok = put(out, outsize, &len, s, 1);
			}
			if (!ok)
				return -ENAMETOOLONG;
		}
		out[len] = '\0';
		for (size_t k = 0; k < len; k++) {
			if (r->to_case == 'L')
				out[k] = (char)tolower((unsigned char)out[k]);
			else if (r->to_case == 'U')
				out[k] = (char)toupper((unsigned char)out[k]);
		}
		return 0;
	}
	return -ENOENT;
}
