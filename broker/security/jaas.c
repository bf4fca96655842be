/*
 * jaas.c - JAAS configuration text (jaas.h): a small tokenizer with the
 * rules of the java.io.StreamTokenizer Kafka's JaasConfig sets up, then the
 * entry grammar.
 */
#include "broker/security/jaas.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/errbuf.h"

enum { TOK_EOF, TOK_WORD, TOK_CHAR, TOK_ERR };

typedef struct tokenizer {
	const char *p;
	int type;
	char ch;      /* TOK_CHAR */
	char *word;   /* TOK_WORD: malloc'd */
} tokenizer;

static bool word_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.' || c == '-' || c >= 0x80;
}

/* The next token; TOK_ERR on an unterminated string or comment, or no
 * memory. */
static int next(tokenizer *t)
{
	free(t->word);
	t->word = NULL;
	for (;;) {
		while (*t->p && (unsigned char)*t->p <= ' ')
			t->p++;
		if (t->p[0] == '/' && t->p[1] == '/') {
			while (*t->p && *t->p != '\n' && *t->p != '\r')
				t->p++;
			continue;
		}
		if (t->p[0] == '/' && t->p[1] == '*') {
			const char *end = strstr(t->p + 2, "*/");
			if (!end)
				return t->type = TOK_ERR;
			t->p = end + 2;
			continue;
		}
		break;
	}
	if (!*t->p)
		return t->type = TOK_EOF;
	unsigned char c = (unsigned char)*t->p;
	if (word_char(c)) {
		const char *s = t->p;
		while (word_char((unsigned char)*t->p))
			t->p++;
		t->word = strndup(s, (size_t)(t->p - s));
		return t->type = t->word ? TOK_WORD : TOK_ERR;
	}
	if (c == '"' || c == '\'') {
		char q = (char)c;
		size_t cap = strlen(t->p) + 1, n = 0;
		char *w = malloc(cap);
		if (!w)
			return t->type = TOK_ERR;
		t->p++;
		for (;;) {
			char d = *t->p;
			if (!d || d == '\n' || d == '\r') { /* StreamTokenizer ends the string at a line end */
				free(w);
				return t->type = TOK_ERR;
			}
			t->p++;
			if (d == q)
				break;
			if (d == '\\' && *t->p) {
				char e = *t->p++;
				switch (e) {
				case 'n': d = '\n'; break;
				case 't': d = '\t'; break;
				case 'r': d = '\r'; break;
				case 'b': d = '\b'; break;
				case 'f': d = '\f'; break;
				case 'a': d = 7; break;
				case 'v': d = 11; break;
				default:
					if (e >= '0' && e <= '7') {
						int v = e - '0';
						for (int k = 0; k < 2 && *t->p >= '0' && *t->p <= '7'; k++)
							v = v * 8 + (*t->p++ - '0');
						d = (char)(v & 0xff);
					} else {
						d = e;
					}
				}
			}
			w[n++] = d;
		}
		w[n] = '\0';
		t->word = w;
		return t->type = TOK_WORD;
	}
	t->p++;
	t->ch = (char)c;
	return t->type = TOK_CHAR;
}

static void entry_free(brk_jaas_entry *e)
{
	free(e->login_module);
	free(e->flag);
	for (int i = 0; i < e->noptions; i++) {
		free(e->options[i].key);
		free(e->options[i].value);
	}
	free(e->options);
}

void brk_jaas_free(brk_jaas *j)
{
	if (!j)
		return;
	for (int i = 0; i < j->nentries; i++)
		entry_free(&j->entries[i]);
	free(j->entries);
	j->entries = NULL;
	j->nentries = 0;
}

static char *take(tokenizer *t)
{
	char *w = t->word;
	t->word = NULL;
	return w;
}

int brk_jaas_parse(const char *text, brk_jaas *out, char *err, size_t errsize)
{
	tokenizer t = { .p = text ? text : "" };
	brk_jaas j = { 0 };
	int rc = -1;
	while (next(&t) != TOK_EOF) {
		if (t.type == TOK_ERR) {
			brk_fail(err, errsize, "JAAS config: unterminated string or comment");
			goto out;
		}
		if (t.type != TOK_WORD) {
			brk_fail(err, errsize, "JAAS config: login module name expected, found '%c'", t.ch);
			goto out;
		}
		brk_jaas_entry *grown = realloc(j.entries, (size_t)(j.nentries + 1) * sizeof(*grown));
		if (!grown) {
			brk_fail(err, errsize, "JAAS config: out of memory");
			goto out;
		}
		j.entries = grown;
		brk_jaas_entry *e = &j.entries[j.nentries++];
		memset(e, 0, sizeof(*e));
		e->login_module = take(&t);
		if (next(&t) != TOK_WORD) {
			brk_fail(err, errsize, "JAAS config: login module control flag not specified");
			goto out;
		}
		if (strcasecmp(t.word, "required") != 0 && strcasecmp(t.word, "requisite") != 0 &&
		    strcasecmp(t.word, "sufficient") != 0 && strcasecmp(t.word, "optional") != 0) {
			brk_fail(err, errsize, "JAAS config: invalid login module control flag '%s'", t.word);
			goto out;
		}
		e->flag = take(&t);
		while (next(&t) == TOK_WORD) {
			char *key = take(&t);
			if (next(&t) != TOK_CHAR || t.ch != '=' || next(&t) != TOK_WORD) {
				brk_fail(err, errsize, "JAAS config: value not specified for key '%s'", key);
				free(key);
				goto out;
			}
			brk_jaas_option *o = realloc(e->options, (size_t)(e->noptions + 1) * sizeof(*o));
			if (!o) {
				free(key);
				brk_fail(err, errsize, "JAAS config: out of memory");
				goto out;
			}
			e->options = o;
			e->options[e->noptions].key = key;
			e->options[e->noptions].value = take(&t);
			e->noptions++;
		}
		if (t.type != TOK_CHAR || t.ch != ';') {
			brk_fail(err, errsize, "JAAS config entry not terminated by semi-colon");
			goto out;
		}
	}
	if (j.nentries == 0) {
		brk_fail(err, errsize, "Login module not specified in JAAS config");
		goto out;
	}
	*out = j;
	j.entries = NULL;
	j.nentries = 0;
	rc = 0;
out:
	free(t.word);
	brk_jaas_free(&j);
	return rc;
}

const char *brk_jaas_option_get(const brk_jaas_entry *e, const char *key)
{
	const char *v = NULL;
	for (int i = 0; i < e->noptions; i++)
		if (strcmp(e->options[i].key, key) == 0)
			v = e->options[i].value;
	return v;
}

const brk_jaas_entry *brk_jaas_find(const brk_jaas *j, const char *module)
{
	for (int i = 0; i < j->nentries; i++)
		if (strcmp(j->entries[i].login_module, module) == 0)
			return &j->entries[i];
	return NULL;
}
