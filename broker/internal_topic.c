/*
 * internal_topic.c - creation, reading back and appending for the
 * coordinators' internal topics (internal_topic.h).
 */
#include "broker/internal_topic.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/ratelog.h"
#include "protocol/err.h"
#include "storage/log.h"

/* Bytes read from a segment at a time while loading (a larger batch is
 * still read whole: log_read's min_one). */
#define LOAD_READ_BYTES (1 << 20)
/* Cap on one decompressed batch while loading. */
#define LOAD_SCRATCH_MAX (256u << 20)

void brk_internal_topic_op_init(brk_internal_topic_op *o, const char *name, int32_t npartitions,
				int16_t replication_factor, int16_t min_isr, int32_t segment_bytes,
				int32_t live_brokers)
{
	memset(o, 0, sizeof(*o));
	int16_t rf = replication_factor;
	if (live_brokers > 0 && rf > live_brokers) {
		fprintf(stderr,
			"samsa: warning: replication factor %d of %s is above the %d live broker(s): "
			"creating it with replication factor %d\n",
			(int)rf, name, (int)live_brokers, (int)live_brokers);
		rf = (int16_t)live_brokers;
	}
	if (segment_bytes < BRK_INTERNAL_MIN_SEGMENT_BYTES) {
		/* segment.bytes below its minimum would be ignored for the
		 * broker's log.segment.bytes: use the minimum instead */
		fprintf(stderr,
			"samsa: warning: segment size %d of %s is below segment.bytes' minimum: "
			"using %d\n",
			(int)segment_bytes, name, BRK_INTERNAL_MIN_SEGMENT_BYTES);
		segment_bytes = BRK_INTERNAL_MIN_SEGMENT_BYTES;
	}
	if (min_isr > rf) {
		fprintf(stderr,
			"samsa: warning: min.insync.replicas %d of %s is above its replication factor "
			"%d: using %d\n",
			(int)min_isr, name, (int)rf, (int)rf);
		min_isr = rf;
	}
	snprintf(o->names[0], sizeof(o->names[0]), "cleanup.policy");
	snprintf(o->values[0], sizeof(o->values[0]), "compact");
	snprintf(o->names[1], sizeof(o->names[1]), "compression.type");
	snprintf(o->values[1], sizeof(o->values[1]), "producer");
	snprintf(o->names[2], sizeof(o->names[2]), "segment.bytes");
	snprintf(o->values[2], sizeof(o->values[2]), "%d", (int)segment_bytes);
	snprintf(o->names[3], sizeof(o->names[3]), "min.insync.replicas");
	snprintf(o->values[3], sizeof(o->values[3]), "%d", (int)min_isr);
	for (int i = 0; i < 4; i++) {
		o->configs[i].name = o->names[i];
		o->configs[i].value = o->values[i];
	}
	o->op.type = CTL_OP_CREATE_TOPIC;
	snprintf(o->op.topic, sizeof(o->op.topic), "%s", name);
	o->op.partitions = npartitions;
	o->op.replication_factor = rf;
	o->op.configs = o->configs;
	o->op.nconfigs = min_isr > 0 ? 4 : 3;
}

/* pread exactly len bytes at pos. Returns 0 or -errno. */
static int read_full(int fd, uint8_t *buf, size_t len, off_t pos)
{
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(fd, buf + got, len - got, pos + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		got += (size_t)k;
	}
	return 0;
}

void brk_internal_reader_init(brk_internal_reader *r, brk_partition *p)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->next = p->log ? log_start_offset(p->log) : 0;
	proto_scratch_init(&r->scratch, LOAD_SCRATCH_MAX);
}

void brk_internal_reader_free(brk_internal_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = r->len = r->pos = 0;
	proto_scratch_free(&r->scratch);
}

/* Read the batches from r->next on (up to LOAD_READ_BYTES, at least one
 * batch) into r->buf. Returns 1 when there are some, 0 at the log end,
 * or a negative error. */
static int reader_fill(brk_internal_reader *r)
{
	log_partition *lp = r->p->log;
	if (!lp)
		return -EIO;
	int64_t end = log_end_offset(lp); /* not the high watermark: see the header */
	if (r->next >= end)
		return 0;
	log_read_result rr;
	int rc = log_read(lp, r->next, end, LOAD_READ_BYTES, true, &rr);
	if (rc)
		return rc == LOG_ERR_OFFSET_OUT_OF_RANGE ? -ERANGE : -EIO;
	if (rr.len <= 0) {
		if (rr.segment)
			log_segment_release(rr.segment);
		return 0;
	}
	if ((size_t)rr.len > r->cap) {
		uint8_t *nb = realloc(r->buf, (size_t)rr.len);
		if (!nb) {
			log_segment_release(rr.segment);
			return -ENOMEM;
		}
		r->buf = nb;
		r->cap = (size_t)rr.len;
	}
	rc = read_full(rr.fd, r->buf, (size_t)rr.len, rr.file_pos);
	log_segment_release(rr.segment);
	if (rc)
		return rc;
	r->len = (size_t)rr.len;
	r->pos = 0;
	return 1;
}

int brk_internal_reader_next(brk_internal_reader *r, proto_batch_info *bi, const uint8_t **batch)
{
	bool filled = false;
	for (;;) {
		if (r->pos >= r->len) {
			/* A fresh read starts at the batch holding r->next, so it
			 * gives at least one batch at or above it; once more would
			 * read the same bytes again. */
			if (filled)
				return 0;
			r->len = r->pos = 0;
			int rc = reader_fill(r);
			if (rc <= 0)
				return rc;
			filled = true;
		}
		if (proto_batch_header(r->buf + r->pos, r->len - r->pos, bi) != 0) {
			/* A torn batch (recovery cuts torn tails, so only a
			 * concurrent truncation): the log ends here for now. */
			r->len = r->pos = 0;
			return 0;
		}
		const uint8_t *b = r->buf + r->pos;
		r->pos += (size_t)bi->size;
		int64_t last = bi->base_offset + bi->last_offset_delta;
		if (last < r->next)
			continue; /* before where the reader stands */
		r->next = last + 1;
		*batch = b;
		return 1;
	}
}

int brk_internal_append(brk_partitions *reg, brk_partition *p, uint8_t *batch, int32_t size,
			const char *owner, int32_t olen, int64_t now_ms, brk_hw_mark *mark)
{
	brk_topic *t = p->topic;
	if (brk_partition_leader_error(p, -1) != KERR_NONE)
		return KERR_NOT_COORDINATOR; /* not the leader here (any more) */
	if (size > t->cfg.max_message_bytes || (int64_t)size > t->cfg.log.segment_bytes) {
		fprintf(stderr,
			"samsa: %.*s: a %d-byte batch for %s-%d is above max.message.bytes (%d) or "
			"segment.bytes (%lld): not written\n",
			(int)olen, owner, (int)size, t->name, (int)p->index,
			(int)t->cfg.max_message_bytes, (long long)t->cfg.log.segment_bytes);
		return BRK_INTERNAL_TOO_LARGE;
	}
	proto_batch_info bi;
	if (proto_batch_header(batch, (size_t)size, &bi) != 0)
		return KERR_UNKNOWN_SERVER_ERROR;
	int64_t base;
	int32_t epoch = p->leader_epoch;
	int rc = (bi.attributes & PROTO_ATTR_TRANSACTIONAL)
			 ? log_append_coordinator(p->log, batch, (size_t)size, epoch, now_ms, &base)
			 : log_append(p->log, batch, (size_t)size, epoch, now_ms, &base);
	if (rc == LOG_ERR_INVALID_PRODUCER_EPOCH)
		return KERR_INVALID_PRODUCER_EPOCH;
	if (rc == LOG_ERR_INVALID_TXN_STATE)
		return KERR_INVALID_TXN_STATE;
	if (rc) {
		static brk_ratelog rl = BRK_RATELOG_INIT; /* e.g. every commit on a full disk */
		brk_ratelog_printf(&rl, "samsa: %.*s: appending to %s-%d failed: %s\n", (int)olen, owner,
				   t->name, (int)p->index, rc > -4096 ? strerror(-rc) : "error");
		return KERR_NOT_COORDINATOR;
	}
	/* The loop is the log's only writer: the batch ends at the log end. */
	if (mark)
		*mark = (brk_hw_mark){ p, epoch, log_end_offset(p->log) };
	brk_partition_appended(reg, p, size, now_ms);
	return KERR_NONE;
}
