/*
 * internal_topic.c - creation, reading back and appending for the
 * coordinators' internal topics (internal_topic.h).
 */
#include "broker/internal_topic.h"

#include <errno.h>
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

int brk_internal_topic_read(brk_partition *p, brk_internal_batch_fn fn, void *arg)
{
	log_partition *lp = p->log;
	if (!lp)
		return -EIO;
	proto_scratch scratch;
	proto_scratch_init(&scratch, LOAD_SCRATCH_MAX);
	uint8_t *buf = NULL;
	size_t cap = 0;
	int rc = 0;
	int64_t off = log_start_offset(lp);
	int64_t end = log_end_offset(lp); /* not the high watermark: see the header */
	while (off < end && rc == 0) {
		log_read_result rr;
		rc = log_read(lp, off, end, LOAD_READ_BYTES, true, &rr);
		if (rc) {
			rc = rc == LOG_ERR_OFFSET_OUT_OF_RANGE ? -ERANGE : -EIO;
			break;
		}
		if (rr.len <= 0) {
			if (rr.segment)
				log_segment_release(rr.segment);
			break;
		}
		if ((size_t)rr.len > cap) {
			uint8_t *nb = realloc(buf, (size_t)rr.len);
			if (!nb) {
				log_segment_release(rr.segment);
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap = (size_t)rr.len;
		}
		size_t got = (size_t)rr.len;
		rc = read_full(rr.fd, buf, got, rr.file_pos);
		log_segment_release(rr.segment);
		if (rc)
			break;
		int64_t start = off;
		for (size_t pos = 0; pos < got && rc == 0;) {
			proto_batch_info bi;
			if (proto_batch_header(buf + pos, got - pos, &bi) != 0)
				break;
			const uint8_t *bp = buf + pos;
			pos += (size_t)bi.size;
			off = bi.base_offset + bi.last_offset_delta + 1;
			rc = fn(arg, &bi, bp, &scratch);
		}
		if (off <= start)
			break; /* no progress: a torn read; stop rather than spin */
	}
	free(buf);
	proto_scratch_free(&scratch);
	return rc;
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
