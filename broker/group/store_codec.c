/*
 * store_codec.c - __consumer_offsets key/value layouts and the consumer
 * subscription (store_codec.h).
 */
#include "broker/group/store_codec.h"

#include <string.h>

/* A classic or compact string, by the value's flexibility. */
static void read_str(proto_reader *r, bool flex, proto_str *s)
{
	if (flex)
		proto_read_compact_string(r, s);
	else
		proto_read_string(r, s);
}

static void read_bytes(proto_reader *r, bool flex, proto_bytes *b)
{
	if (flex)
		proto_read_compact_bytes(r, b);
	else
		proto_read_bytes(r, b);
}

/* Skip a tagged-field section (KIP-482): count, then tag + size + data. */
static void skip_tags(proto_reader *r)
{
	uint32_t n = proto_read_uvarint(r);
	for (uint32_t i = 0; i < n && r->err == 0; i++) {
		(void)proto_read_uvarint(r);
		uint32_t size = proto_read_uvarint(r);
		proto_skip(r, size);
	}
}

/* The reader's error, or PROTO_ERR_INVALID when bytes are left over. */
static int finish(const proto_reader *r)
{
	if (r->err != 0)
		return r->err;
	return proto_reader_left(r) == 0 ? 0 : PROTO_ERR_INVALID;
}

/* ---- keys ---- */

int grp_store_key_decode(const uint8_t *p, int32_t len, grp_store_key *out)
{
	memset(out, 0, sizeof(*out));
	out->topic.len = -1;
	out->partition = -1;
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	out->version = proto_read_int16(&r);
	if (out->version < 0 || out->version > GRP_KEY_GROUP_METADATA)
		return PROTO_ERR_VERSION;
	proto_read_string(&r, &out->group);
	if (out->version < GRP_KEY_GROUP_METADATA) {
		proto_read_string(&r, &out->topic);
		out->partition = proto_read_int32(&r);
		if (r.err == 0 && out->topic.len < 0)
			return PROTO_ERR_INVALID;
	}
	if (r.err == 0 && out->group.len < 0)
		return PROTO_ERR_INVALID;
	return finish(&r);
}

void grp_offset_key_encode(proto_writer *w, proto_str group, proto_str topic, int32_t partition)
{
	proto_write_int16(w, GRP_KEY_OFFSET_COMMIT);
	proto_write_string(w, &group);
	proto_write_string(w, &topic);
	proto_write_int32(w, partition);
}

void grp_group_key_encode(proto_writer *w, proto_str group)
{
	proto_write_int16(w, GRP_KEY_GROUP_METADATA);
	proto_write_string(w, &group);
}

/* ---- OffsetCommitValue ---- */

int grp_offset_value_decode(const uint8_t *p, int32_t len, grp_offset *out)
{
	memset(out, 0, sizeof(*out));
	out->leader_epoch = -1;
	out->expire_timestamp_ms = -1;
	out->record_offset = -1;
	out->metadata = "";
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	int16_t v = proto_read_int16(&r);
	if (v < 0 || v > 4)
		return PROTO_ERR_VERSION;
	bool flex = v >= 4;
	out->offset = proto_read_int64(&r);
	if (v >= 3)
		out->leader_epoch = proto_read_int32(&r);
	proto_str md;
	read_str(&r, flex, &md);
	out->commit_timestamp_ms = proto_read_int64(&r);
	if (v == 1)
		out->expire_timestamp_ms = proto_read_int64(&r);
	if (flex)
		skip_tags(&r);
	int rc = finish(&r);
	if (rc != 0)
		return rc;
	if (md.len < 0)
		return PROTO_ERR_INVALID; /* metadata is not nullable */
	out->metadata = md.ptr;
	out->metadata_len = md.len;
	return 0;
}

void grp_offset_value_encode(proto_writer *w, const grp_offset *v)
{
	proto_str md = proto_str_of(v->metadata ? v->metadata : "",
				    v->metadata ? v->metadata_len : 0);
	if (v->expire_timestamp_ms != -1) {
		proto_write_int16(w, 1);
		proto_write_int64(w, v->offset);
		proto_write_string(w, &md);
		proto_write_int64(w, v->commit_timestamp_ms);
		proto_write_int64(w, v->expire_timestamp_ms);
		return;
	}
	proto_write_int16(w, 3);
	proto_write_int64(w, v->offset);
	proto_write_int32(w, v->leader_epoch);
	proto_write_string(w, &md);
	proto_write_int64(w, v->commit_timestamp_ms);
}

/* ---- GroupMetadataValue ---- */

int grp_group_value_decode(const uint8_t *p, int32_t len, proto_arena *a, grp_store_group *out)
{
	memset(out, 0, sizeof(*out));
	out->current_state_timestamp_ms = -1;
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	int16_t v = proto_read_int16(&r);
	if (v < 0 || v > 4)
		return PROTO_ERR_VERSION;
	out->version = v;
	bool flex = v >= 4;
	read_str(&r, flex, &out->protocol_type);
	out->generation = proto_read_int32(&r);
	read_str(&r, flex, &out->protocol);
	read_str(&r, flex, &out->leader);
	if (v >= 2)
		out->current_state_timestamp_ms = proto_read_int64(&r);
	/* Smallest member: four empty strings, two int32, two empty bytes. */
	int32_t n = proto_read_array_len(&r, flex, flex ? 14 : 24);
	if (r.err != 0)
		return r.err;
	if (n < 0 || out->protocol_type.len < 0)
		return PROTO_ERR_INVALID;
	out->nmembers = n;
	if (n > 0) {
		out->members = proto_arena_alloc(a, (size_t)n * sizeof(*out->members));
		if (!out->members)
			return PROTO_ERR_NOMEM;
	}
	for (int32_t i = 0; i < n && r.err == 0; i++) {
		grp_store_member *m = &out->members[i];
		read_str(&r, flex, &m->member_id);
		m->group_instance_id.len = -1;
		if (v >= 3)
			read_str(&r, flex, &m->group_instance_id);
		read_str(&r, flex, &m->client_id);
		read_str(&r, flex, &m->client_host);
		if (v >= 1)
			m->rebalance_timeout_ms = proto_read_int32(&r);
		m->session_timeout_ms = proto_read_int32(&r);
		if (v == 0)
			m->rebalance_timeout_ms = m->session_timeout_ms;
		read_bytes(&r, flex, &m->subscription);
		read_bytes(&r, flex, &m->assignment);
		if (flex)
			skip_tags(&r);
		if (r.err == 0 && (m->member_id.len < 0 || m->client_id.len < 0 ||
				   m->client_host.len < 0 || m->subscription.len < 0 ||
				   m->assignment.len < 0))
			return PROTO_ERR_INVALID;
	}
	if (flex)
		skip_tags(&r);
	return finish(&r);
}

static proto_str str_or(const char *s, bool nullable)
{
	if (s)
		return proto_cstr(s);
	return nullable ? proto_str_of(NULL, -1) : proto_str_of("", 0);
}

void grp_group_value_encode(proto_writer *w, const grp_group *g)
{
	proto_write_int16(w, 3);
	proto_str s = str_or(g->protocol_type, false);
	proto_write_string(w, &s);
	proto_write_int32(w, g->generation_id);
	s = str_or(g->protocol_name, true);
	proto_write_string(w, &s);
	s = str_or(g->leader_id, true);
	proto_write_string(w, &s);
	proto_write_int64(w, g->state_timestamp_ms);
	proto_write_int32(w, g->nmembers);
	for (int32_t i = 0; i < g->nmembers; i++) {
		const grp_member *m = g->members[i];
		s = str_or(m->member_id, false);
		proto_write_string(w, &s);
		s = str_or(m->group_instance_id, true);
		proto_write_string(w, &s);
		s = str_or(m->client_id, false);
		proto_write_string(w, &s);
		s = str_or(m->client_host, false);
		proto_write_string(w, &s);
		proto_write_int32(w, m->rebalance_timeout_ms);
		proto_write_int32(w, m->session_timeout_ms);
		proto_bytes sub = { (const uint8_t *)"", 0 };
		for (int32_t j = 0; g->protocol_name && j < m->nprotocols; j++)
			if (m->protocols[j].name && strcmp(m->protocols[j].name, g->protocol_name) == 0) {
				sub.ptr = m->protocols[j].metadata;
				sub.len = m->protocols[j].metadata ? m->protocols[j].metadata_len : 0;
				break;
			}
		proto_write_bytes(w, &sub);
		proto_bytes asg = { m->assignment ? m->assignment : (const uint8_t *)"",
				    m->assignment ? m->assignment_len : 0 };
		proto_write_bytes(w, &asg);
	}
}

/* ---- ConsumerProtocolSubscription ---- */

int grp_subscription_has_topic(const uint8_t *p, int32_t len, const char *topic, int32_t tlen)
{
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	int16_t v = proto_read_int16(&r);
	if (v < 0)
		return PROTO_ERR_VERSION;
	int32_t n = proto_read_array_len(&r, false, 2);
	if (r.err != 0)
		return r.err;
	if (n < 0)
		return PROTO_ERR_INVALID;
	int found = 0;
	for (int32_t i = 0; i < n; i++) {
		proto_str t;
		proto_read_string(&r, &t);
		if (r.err != 0)
			return r.err;
		if (t.len == tlen && memcmp(t.ptr, topic, (size_t)tlen) == 0)
			found = 1;
	}
	return found;
}

/* ---- expiry and subscriptions ---- */

bool grp_offset_expired(const grp_offset *o, grp_state state, int64_t state_timestamp_ms,
			int subscribed, int64_t retention_ms, int64_t now_ms)
{
	int64_t base;
	if (state == GRP_EMPTY)
		base = state_timestamp_ms > o->commit_timestamp_ms ? state_timestamp_ms
								   : o->commit_timestamp_ms;
	else if (state == GRP_STABLE && subscribed == 0)
		base = o->commit_timestamp_ms;
	else
		return false;
	if (o->expire_timestamp_ms != -1)
		return now_ms >= o->expire_timestamp_ms;
	int64_t age;
	if (__builtin_sub_overflow(now_ms, base, &age))
		return base < 0;
	return age >= retention_ms;
}

int grp_subscribed_to_topic(const grp_group *g, const char *topic, int32_t tlen)
{
	if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0)
		return -1;
	if (g->nmembers == 0)
		return 0;
	if (!g->protocol_name)
		return -1;
	int found = 0;
	for (int32_t i = 0; i < g->nmembers; i++) {
		const grp_member *m = g->members[i];
		const grp_protocol *p = NULL;
		for (int32_t j = 0; j < m->nprotocols; j++)
			if (m->protocols[j].name && strcmp(m->protocols[j].name, g->protocol_name) == 0) {
				p = &m->protocols[j];
				break;
			}
		if (!p)
			return -1;
		int rc = grp_subscription_has_topic(p->metadata, p->metadata_len, topic, tlen);
		if (rc < 0)
			return -1;
		if (rc)
			found = 1;
	}
	return found;
}
