/*
 * jaas.h - the JAAS configuration text of Kafka's sasl.jaas.config keys, as
 * Kafka's JaasConfig reads it (a java.io.StreamTokenizer with // and / * *
 * / comments):
 *
 *   <login module class> <flag> [<key>=<value> ...] ; [more entries]
 *
 * flag: required, requisite, sufficient or optional (any case). A key is a
 * word ([A-Za-z0-9_$.-] and bytes >= 0x80); a value a word or a quoted
 * string ("..." or '...', backslash escapes \n \t \r \b \f \\ \" \' and
 * octal). No entry at all is an error ("Login module not specified").
 *
 * Pure (no I/O, no globals): fuzzed by fuzz/fuzz_jaas.c.
 */
#ifndef SAMSA_BROKER_SECURITY_JAAS_H
#define SAMSA_BROKER_SECURITY_JAAS_H

#include <stddef.h>

typedef struct brk_jaas_option {
	char *key;
	char *value;
} brk_jaas_option;

typedef struct brk_jaas_entry {
	char *login_module; /* class name, e.g. org.apache.kafka...PlainLoginModule */
	char *flag;         /* as written */
	brk_jaas_option *options;
	int noptions;
} brk_jaas_entry;

typedef struct brk_jaas {
	brk_jaas_entry *entries;
	int nentries;
} brk_jaas;

/* Parse text into *out (owned, brk_jaas_free). Returns 0, or -1 with a
 * message in err (nothing to free then). */
int brk_jaas_parse(const char *text, brk_jaas *out, char *err, size_t errsize);

/* The value of option key of entry e, the last one given; NULL if absent. */
const char *brk_jaas_option_get(const brk_jaas_entry *e, const char *key);

/* The first entry whose login module is module; NULL if none. */
const brk_jaas_entry *brk_jaas_find(const brk_jaas *j, const char *module);

void brk_jaas_free(brk_jaas *j);

#endif
