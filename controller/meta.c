/*
 * meta.c - the controller's metadata model and its value types (meta.h).
 */
#include "controller/meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "protocol/err.h"

/* ---- values ---- */

void ctl_configs_free(ctl_config_entry *e, int32_t n)
{
	for (int32_t i = 0; i < n && e; i++) {
		free(e[i].name);
		free(e[i].value);
	}
	free(e);
}

ctl_config_entry *ctl_configs_copy(const ctl_config_entry *configs, int32_t n)
{
	ctl_config_entry *e = calloc(n > 0 ? (size_t)n : 1, sizeof(*e));
	if (!e)
		return NULL;
	for (int32_t i = 0; i < n; i++) {
		e[i].name = strdup(configs[i].name ? configs[i].name : "");
		e[i].value = strdup(configs[i].value ? configs[i].value : "");
		if (!e[i].name || !e[i].value) {
			ctl_configs_free(e, n);
			return NULL;
		}
	}
	return e;
}

void ctl_partition_clear(ctl_partition *p)
{
	free(p->replicas);
	free(p->isr);
	free(p->adding);
	free(p->removing);
	p->replicas = p->isr = p->adding = p->removing = NULL;
	p->nreplicas = p->nisr = p->nadding = p->nremoving = 0;
}

static int32_t *ids_copy(const int32_t *v, int32_t n)
{
	int32_t *c = malloc((size_t)(n > 0 ? n : 1) * sizeof(*c));
	if (c && n > 0)
		memcpy(c, v, (size_t)n * sizeof(*c));
	return c;
}

const ctl_endpoint *ctl_broker_endpoint(const ctl_broker *b, const char *listener)
{
	for (int32_t i = 0; listener && i < b->nendpoints && i < CTL_MAX_ENDPOINTS; i++)
		if (strcasecmp(b->endpoints[i].listener, listener) == 0)
			return &b->endpoints[i];
	return NULL;
}

bool ctl_broker_node(const ctl_broker *b, const char *listener, const char **host,
		     int32_t *port)
{
	const ctl_endpoint *e = ctl_broker_endpoint(b, listener);
	if (!e && listener && b->nendpoints > 0)
		return false;
	if (host)
		*host = e ? e->host : b->host;
	if (port)
		*port = e ? e->port : b->port;
	return true;
}

int ctl_partition_copy(ctl_partition *dst, const ctl_partition *src)
{
	*dst = *src;
	dst->replicas = ids_copy(src->replicas, src->nreplicas);
	dst->isr = ids_copy(src->isr, src->nisr);
	dst->adding = src->nadding > 0 ? ids_copy(src->adding, src->nadding) : NULL;
	dst->removing = src->nremoving > 0 ? ids_copy(src->removing, src->nremoving) : NULL;
	dst->nadding = dst->adding ? src->nadding : 0;
	dst->nremoving = dst->removing ? src->nremoving : 0;
	if (!dst->replicas || !dst->isr || dst->nadding != src->nadding ||
	    dst->nremoving != src->nremoving) {
		ctl_partition_clear(dst);
		return -ENOMEM;
	}
	return 0;
}

void ctl_topic_free(ctl_topic *t)
{
	if (!t)
		return;
	for (int32_t i = 0; i < t->npartitions && t->partitions; i++)
		ctl_partition_clear(&t->partitions[i]);
	free(t->partitions);
	ctl_configs_free(t->configs, t->nconfigs);
	free(t);
}

ctl_topic *ctl_topic_copy(const ctl_topic *t)
{
	ctl_topic *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = *t;
	c->npartitions = 0;
	c->nconfigs = 0;
	c->partitions = calloc((size_t)(t->npartitions > 0 ? t->npartitions : 1), sizeof(*c->partitions));
	c->configs = ctl_configs_copy(t->configs, t->nconfigs);
	if (!c->partitions || !c->configs) {
		ctl_topic_free(c);
		return NULL;
	}
	c->nconfigs = t->nconfigs;
	for (int32_t i = 0; i < t->npartitions; i++) {
		if (ctl_partition_copy(&c->partitions[i], &t->partitions[i]) != 0) {
			ctl_topic_free(c);
			return NULL;
		}
		c->npartitions = i + 1;
	}
	return c;
}

const char *ctl_topic_config(const ctl_topic *t, const char *name)
{
	for (int32_t i = 0; i < t->nconfigs; i++)
		if (strcmp(t->configs[i].name, name) == 0)
			return t->configs[i].value;
	return NULL;
}

int ctl_validate_topic_name(const char *name, int32_t len)
{
	if (!name || len <= 0 || len > CTL_TOPIC_NAME_MAX)
		return KERR_INVALID_TOPIC_EXCEPTION;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return KERR_INVALID_TOPIC_EXCEPTION;
	for (int32_t i = 0; i < len; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return KERR_INVALID_TOPIC_EXCEPTION;
	}
	return 0;
}

bool ctl_topic_name_is_internal(const char *name, size_t len)
{
	static const char *const internal[] = { "__consumer_offsets", "__transaction_state" };
	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (len == strlen(internal[i]) && memcmp(name, internal[i], len) == 0)
			return true;
	return false;
}

bool ctl_topic_names_collide(const char *a, const char *b)
{
	if (strcmp(a, b) == 0)
		return false;
	for (; *a && *b; a++, b++) {
		char x = *a == '.' ? '_' : *a, y = *b == '.' ? '_' : *b;
		if (x != y)
			return false;
	}
	return *a == *b;
}

int ctl_random_uuid(uint8_t id[16])
{
	for (;;) {
		size_t got = 0;
		while (got < 16) {
			ssize_t n = getrandom(id + got, 16 - got, 0);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)n;
		}
		bool hi_zero = true, lo_zero_or_one = id[15] <= 1;
		for (int i = 0; i < 8; i++)
			if (id[i])
				hi_zero = false;
		for (int i = 8; i < 15; i++)
			if (id[i])
				lo_zero_or_one = false;
		if (hi_zero && lo_zero_or_one)
			continue; /* ZERO_UUID or METADATA_TOPIC_ID */
		if ((id[0] >> 2) == 62)
			continue; /* base64url '-' first */
		return 0;
	}
}

/* ---- the model ---- */

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	return h;
}

static int index_rebuild(ctl_meta *m)
{
	uint32_t cap = 16;
	while (cap < (uint32_t)m->ntopics * 2 + 2)
		cap <<= 1;
	int32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (int32_t i = 0; i < m->ntopics; i++) {
		const char *n = m->topics[i]->name;
		uint32_t h = name_hash(n, strlen(n)) & (cap - 1);
		while (idx[h])
			h = (h + 1) & (cap - 1);
		idx[h] = i + 1;
	}
	free(m->index);
	m->index = idx;
	m->index_cap = cap;
	return 0;
}

int ctl_meta_init(ctl_meta *m)
{
	memset(m, 0, sizeof(*m));
	return index_rebuild(m);
}

void ctl_meta_destroy(ctl_meta *m)
{
	for (int32_t i = 0; i < m->ntopics; i++)
		ctl_topic_free(m->topics[i]);
	free(m->topics);
	free(m->index);
	for (int32_t i = 0; i < m->nbroker_configs; i++)
		ctl_configs_free(m->broker_configs[i].configs, m->broker_configs[i].nconfigs);
	free(m->broker_configs);
	for (int32_t i = 0; i < m->nclient_configs; i++) {
		free(m->client_configs[i].entity);
		ctl_configs_free(m->client_configs[i].configs, m->client_configs[i].nconfigs);
	}
	free(m->client_configs);
	memset(m, 0, sizeof(*m));
}

const ctl_topic *ctl_meta_find(const ctl_meta *m, const char *name, int32_t len)
{
	if (!name || len <= 0 || len > CTL_TOPIC_NAME_MAX || !m->index)
		return NULL;
	uint32_t h = name_hash(name, (size_t)len) & (m->index_cap - 1);
	while (m->index[h]) {
		const ctl_topic *t = m->topics[m->index[h] - 1];
		if (strncmp(t->name, name, (size_t)len) == 0 && t->name[len] == '\0')
			return t;
		h = (h + 1) & (m->index_cap - 1);
	}
	return NULL;
}

const ctl_topic *ctl_meta_find_by_id(const ctl_meta *m, const uint8_t id[16])
{
	static const uint8_t zero[16];
	if (memcmp(id, zero, 16) == 0)
		return NULL;
	for (int32_t i = 0; i < m->ntopics; i++)
		if (memcmp(m->topics[i]->id, id, 16) == 0)
			return m->topics[i];
	return NULL;
}

const ctl_topic *ctl_meta_find_colliding(const ctl_meta *m, const char *name)
{
	if (!strchr(name, '.') && !strchr(name, '_'))
		return NULL;
	for (int32_t i = 0; i < m->ntopics; i++)
		if (ctl_topic_names_collide(m->topics[i]->name, name))
			return m->topics[i];
	return NULL;
}

int ctl_meta_insert_at(ctl_meta *m, ctl_topic *t, int32_t pos)
{
	if (m->ntopics == m->cap) {
		int32_t cap = m->cap ? m->cap * 2 : 16;
		ctl_topic **n = realloc(m->topics, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		m->topics = n;
		m->cap = cap;
	}
	if (pos < 0 || pos > m->ntopics)
		pos = m->ntopics;
	memmove(&m->topics[pos + 1], &m->topics[pos], (size_t)(m->ntopics - pos) * sizeof(*m->topics));
	m->topics[pos] = t;
	m->ntopics++;
	if (index_rebuild(m) != 0) {
		memmove(&m->topics[pos], &m->topics[pos + 1],
			(size_t)(m->ntopics - pos - 1) * sizeof(*m->topics));
		m->ntopics--;
		return -ENOMEM;
	}
	return 0;
}

int ctl_meta_add(ctl_meta *m, ctl_topic *t)
{
	return ctl_meta_insert_at(m, t, m->ntopics);
}

ctl_topic *ctl_meta_take(ctl_meta *m, const char *name, int32_t *pos)
{
	const ctl_topic *t = ctl_meta_find(m, name, (int32_t)strnlen(name, CTL_TOPIC_NAME_MAX + 1));
	if (!t)
		return NULL;
	int32_t i = 0;
	while (m->topics[i] != t)
		i++;
	ctl_topic *victim = m->topics[i];
	memmove(&m->topics[i], &m->topics[i + 1], (size_t)(m->ntopics - i - 1) * sizeof(*m->topics));
	m->ntopics--;
	if (index_rebuild(m) != 0) {
		/* keep a usable index: put it back, report nothing taken */
		memmove(&m->topics[i + 1], &m->topics[i], (size_t)(m->ntopics - i) * sizeof(*m->topics));
		m->topics[i] = victim;
		m->ntopics++;
		return NULL;
	}
	if (pos)
		*pos = i;
	return victim;
}

const ctl_broker_config_set *ctl_meta_broker_configs(const ctl_meta *m, int32_t broker_id)
{
	for (int32_t i = 0; i < m->nbroker_configs; i++)
		if (m->broker_configs[i].broker_id == broker_id)
			return &m->broker_configs[i];
	return NULL;
}

int ctl_meta_swap_broker_configs(ctl_meta *m, int32_t broker_id, ctl_config_entry *configs,
				 int32_t nconfigs, ctl_config_entry **old, int32_t *nold)
{
	ctl_broker_config_set *bs = (ctl_broker_config_set *)ctl_meta_broker_configs(m, broker_id);
	if (!bs) {
		ctl_broker_config_set *n = realloc(m->broker_configs,
						   (size_t)(m->nbroker_configs + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		m->broker_configs = n;
		bs = &n[m->nbroker_configs++];
		memset(bs, 0, sizeof(*bs));
		bs->broker_id = broker_id;
	}
	*old = bs->configs;
	*nold = bs->nconfigs;
	bs->configs = configs;
	bs->nconfigs = nconfigs;
	return 0;
}

const ctl_client_config_set *ctl_meta_client_configs(const ctl_meta *m, const char *entity)
{
	for (int32_t i = 0; i < m->nclient_configs; i++)
		if (strcmp(m->client_configs[i].entity, entity) == 0)
			return &m->client_configs[i];
	return NULL;
}

int ctl_meta_set_client_configs(ctl_meta *m, const char *entity, ctl_config_entry *configs,
				int32_t n, int32_t version)
{
	ctl_client_config_set *cs = (ctl_client_config_set *)ctl_meta_client_configs(m, entity);
	if (version < 0) {
		ctl_configs_free(configs, n);
		if (cs) {
			free(cs->entity);
			ctl_configs_free(cs->configs, cs->nconfigs);
			*cs = m->client_configs[--m->nclient_configs];
		}
		return 0;
	}
	if (!cs) {
		char *name = strdup(entity);
		ctl_client_config_set *v = name ? realloc(m->client_configs,
							  (size_t)(m->nclient_configs + 1) *
								  sizeof(*v))
						: NULL;
		if (!v) {
			free(name);
			return -ENOMEM;
		}
		m->client_configs = v;
		cs = &v[m->nclient_configs++];
		cs->entity = name;
		cs->configs = NULL;
		cs->nconfigs = 0;
	}
	ctl_configs_free(cs->configs, cs->nconfigs);
	cs->configs = configs;
	cs->nconfigs = n;
	cs->version = version;
	return 0;
}
