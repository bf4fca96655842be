/*
 * store_codec.c - __transaction_state key/value layouts (store_codec.h).
 */
#include "broker/txn/store_codec.h"

#include <string.h>

#define TXN_STATUS_MAX 7 /* PrepareEpochFence */

/* Tagged fields of TransactionLogValue v1. */
#define TAG_PREV_PRODUCER_ID 0
#define TAG_NEXT_PRODUCER_ID 1
#define TAG_CLIENT_TV 2

/* The reader's error, or PROTO_ERR_INVALID when bytes are left over. */
static int finish(const proto_reader *r)
{
	if (r->err != 0)
		return r->err;
	return proto_reader_left(r) == 0 ? 0 : PROTO_ERR_INVALID;
}

static void skip_tags(proto_reader *r)
{
	uint32_t n = proto_read_uvarint(r);
	for (uint32_t i = 0; i < n && r->err == 0; i++) {
		(void)proto_read_uvarint(r);
		proto_skip(r, proto_read_uvarint(r));
	}
}

/* ---- key ---- */

int txn_key_decode(const uint8_t *p, int32_t len, proto_str *id)
{
	id->ptr = NULL;
	id->len = -1;
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	if (proto_read_int16(&r) != TXN_KEY_VERSION)
		return PROTO_ERR_VERSION;
	proto_read_string(&r, id);
	if (r.err == 0 && id->len < 0)
		return PROTO_ERR_INVALID;
	return finish(&r);
}

void txn_key_encode(proto_writer *w, proto_str id)
{
	proto_write_int16(w, TXN_KEY_VERSION);
	proto_write_string(w, &id);
}

/* ---- value ---- */

/* The value's tagged-field section (v1): the three known tags, the rest skipped. */
static void read_value_tags(proto_reader *r, txn_log_value *out)
{
	uint32_t n = proto_read_uvarint(r);
	for (uint32_t i = 0; i < n && r->err == 0; i++) {
		uint32_t tag = proto_read_uvarint(r);
		uint32_t size = proto_read_uvarint(r);
		if (r->err)
			return;
		if (size > proto_reader_left(r)) {
			r->err = PROTO_ERR_UNDERFLOW;
			return;
		}
		proto_reader f;
		proto_reader_init(&f, r->p, size);
		proto_skip(r, size);
		switch (tag) {
		case TAG_PREV_PRODUCER_ID:
			out->prev_producer_id = proto_read_int64(&f);
			break;
		case TAG_NEXT_PRODUCER_ID:
			out->next_producer_id = proto_read_int64(&f);
			break;
		case TAG_CLIENT_TV:
			out->client_tv = proto_read_int16(&f);
			break;
		default:
			continue; /* a later Kafka's field */
		}
		if (f.err == 0 && proto_reader_left(&f) != 0)
			f.err = PROTO_ERR_INVALID;
		if (f.err)
			r->err = f.err;
	}
}

int txn_value_decode(const uint8_t *p, int32_t len, proto_arena *a, txn_log_value *out)
{
	memset(out, 0, sizeof(*out));
	out->prev_producer_id = -1;
	out->next_producer_id = -1;
	out->partitions_null = true;
	if (!p || len < 2)
		return PROTO_ERR_UNDERFLOW;
	proto_reader r;
	proto_reader_init(&r, p, (size_t)len);
	out->version = proto_read_int16(&r);
	if (out->version < 0 || out->version > TXN_VALUE_VERSION_MAX)
		return PROTO_ERR_VERSION;
	bool flex = out->version >= 1;
	out->producer_id = proto_read_int64(&r);
	out->producer_epoch = proto_read_int16(&r);
	out->timeout_ms = proto_read_int32(&r);
	out->status = proto_read_int8(&r);
	int32_t ntopics = proto_read_array_len(&r, flex, flex ? 3 : 6);
	if (r.err)
		return r.err;
	out->partitions_null = ntopics < 0;
	/* Two passes: count the partitions, then fill (every count below
	 * was checked against the bytes left, so the total stays small). */
	proto_reader first = r;
	int64_t total = 0;
	for (int32_t t = 0; t < ntopics && r.err == 0; t++) {
		proto_str topic;
		if (flex)
			proto_read_compact_string(&r, &topic);
		else
			proto_read_string(&r, &topic);
		int32_t n = proto_read_array_len(&r, flex, 4);
		if (r.err == 0 && (topic.len < 0 || n < 0))
			return PROTO_ERR_INVALID;
		proto_skip(&r, (size_t)(n > 0 ? n : 0) * 4);
		if (flex)
			skip_tags(&r);
		total += n > 0 ? n : 0;
	}
	if (r.err)
		return r.err;
	if (total > 0) {
		out->tps = proto_arena_alloc(a, (size_t)total * sizeof(*out->tps));
		if (!out->tps)
			return PROTO_ERR_NOMEM;
	}
	r = first;
	for (int32_t t = 0; t < ntopics; t++) {
		proto_str topic;
		if (flex)
			proto_read_compact_string(&r, &topic);
		else
			proto_read_string(&r, &topic);
		int32_t n = proto_read_array_len(&r, flex, 4);
		for (int32_t i = 0; i < n; i++) {
			out->tps[out->ntps].topic = topic;
			out->tps[out->ntps].partition = proto_read_int32(&r);
			out->ntps++;
		}
		if (flex)
			skip_tags(&r);
	}
	out->last_update_ms = proto_read_int64(&r);
	out->start_ms = proto_read_int64(&r);
	if (flex)
		read_value_tags(&r, out);
	int rc = finish(&r);
	if (rc)
		return rc;
	if (out->status < 0 || out->status > TXN_STATUS_MAX)
		return PROTO_ERR_INVALID; /* Kafka's TransactionState.fromId throws */
	return 0;
}

/* Entries of v->tps from i with the same topic as tps[i]. */
static int32_t run_length(const txn_log_value *v, int32_t i)
{
	int32_t j = i + 1;
	while (j < v->ntps && v->tps[j].topic.len == v->tps[i].topic.len &&
	       memcmp(v->tps[j].topic.ptr, v->tps[i].topic.ptr, (size_t)v->tps[i].topic.len) == 0)
		j++;
	return j - i;
}

void txn_value_encode(proto_writer *w, const txn_log_value *v)
{
	bool flex = v->version >= 1;
	proto_write_int16(w, v->version);
	proto_write_int64(w, v->producer_id);
	proto_write_int16(w, v->producer_epoch);
	proto_write_int32(w, v->timeout_ms);
	proto_write_int8(w, v->status);
	if (v->partitions_null) {
		proto_write_array_len(w, flex, -1);
	} else {
		int32_t ntopics = 0;
		for (int32_t i = 0; i < v->ntps; i += run_length(v, i))
			ntopics++;
		proto_write_array_len(w, flex, ntopics);
		for (int32_t i = 0; i < v->ntps;) {
			int32_t n = run_length(v, i);
			if (flex)
				proto_write_compact_string(w, &v->tps[i].topic);
			else
				proto_write_string(w, &v->tps[i].topic);
			proto_write_array_len(w, flex, n);
			for (int32_t k = 0; k < n; k++)
				proto_write_int32(w, v->tps[i + k].partition);
			if (flex)
				proto_write_uvarint(w, 0);
			i += n;
		}
	}
	proto_write_int64(w, v->last_update_ms);
	proto_write_int64(w, v->start_ms);
	if (!flex)
		return;
	uint32_t ntags = (v->prev_producer_id != -1) + (v->next_producer_id != -1) +
			 (v->client_tv != 0);
	proto_write_uvarint(w, ntags);
	if (v->prev_producer_id != -1) {
		proto_write_uvarint(w, TAG_PREV_PRODUCER_ID);
		proto_write_uvarint(w, 8);
		proto_write_int64(w, v->prev_producer_id);
	}
	if (v->next_producer_id != -1) {
		proto_write_uvarint(w, TAG_NEXT_PRODUCER_ID);
		proto_write_uvarint(w, 8);
		proto_write_int64(w, v->next_producer_id);
	}
	if (v->client_tv != 0) {
		proto_write_uvarint(w, TAG_CLIENT_TV);
		proto_write_uvarint(w, 2);
		proto_write_int16(w, v->client_tv);
	}
}
