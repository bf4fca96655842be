/*
 * principal_mapper.h - ssl.principal.mapping.rules: the name of a TLS
 * client's principal from the subject of its certificate, as Kafka's
 * SslPrincipalMapper does it (KIP-371).
 *
 * Rules, comma separated, tried in order; the first that applies names the
 * principal:
 *   DEFAULT                         the distinguished name as it is
 *   RULE:pattern/replacement/[LU]   when the regular expression pattern
 *                                   matches the whole name, the name becomes
 *                                   replacement ($1..$9: the groups, \x: x),
 *                                   then lower case (L) or upper case (U)
 * In pattern and replacement "\/" stands for "/" and "\\" for "\". Spaces
 * around a rule are dropped. The default is "DEFAULT". When no rule
 * applies the client is refused (Kafka's NoMatchingRule fails the
 * authentication).
 *
 * Kafka's patterns are Java regular expressions; here they are POSIX
 * extended ones (regcomp REG_EXTENDED), which cover what mapping rules use
 * in practice (groups, classes, anchors, .*, quantifiers); Java-only syntax
 * (lazy quantifiers, \d, lookaround) is refused when the rules are parsed.
 * A match replaces the whole name once (Java's replaceAll on a full match).
 * So that no rule can make regcomp or regexec run away (glibc's engine
 * does on some), a pattern is at most BRK_SSL_MAPPER_PATTERN_MAX bytes and
 * has no stacked quantifiers ("a++", Java's possessive), no bound above
 * 255 and no back reference.
 *
 * The distinguished name is given as Java's X500Principal.getName() writes
 * it (RFC 2253: most specific first, "CN=alice,OU=eng,O=acme"), which is
 * what brk_tls builds from the certificate.
 */
#ifndef SAMSA_BROKER_SECURITY_PRINCIPAL_MAPPER_H
#define SAMSA_BROKER_SECURITY_PRINCIPAL_MAPPER_H

#include <stddef.h>

typedef struct brk_ssl_mapper brk_ssl_mapper;

/* Longest rules string accepted, bytes. */
#define BRK_SSL_MAPPER_RULES_MAX 4096
/* Longest pattern of one rule, bytes. */
#define BRK_SSL_MAPPER_PATTERN_MAX 512
/* Most rules in one string. */
#define BRK_SSL_MAPPER_MAX_RULES 32

/*
 * Parse rules (NULL or "": "DEFAULT"). Returns the mapper, or NULL with a
 * message for the user in err (errsize bytes): a rule that is neither
 * DEFAULT nor RULE:..., a pattern that does not compile, a bad case flag,
 * too many rules, out of memory.
 */
brk_ssl_mapper *brk_ssl_mapper_new(const char *rules, char *err, size_t errsize);

void brk_ssl_mapper_free(brk_ssl_mapper *m);

/*
 * The short name for distinguished name dn into out (outsize bytes).
 * Returns 0, -ENOENT when no rule applies, -ENAMETOOLONG when the result
 * does not fit.
 */
int brk_ssl_mapper_map(const brk_ssl_mapper *m, const char *dn, char *out, size_t outsize);

#endif
