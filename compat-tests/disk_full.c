/*
 * disk_full.c - the broker on a full disk (issue 6, "Disk full"): its log
 * dir is a size-limited tmpfs the test mounts (mount(2), as root; skipped
 * with exit 77 when mounting is not permitted). A ballast file fills the
 * space:
 *   - a Produce that does not fit (the write fails mid-batch, or the first
 *     write into a freshly rolled segment fails) is answered
 *     KAFKA_STORAGE_ERROR (56) and leaves nothing: the partition directory
 *     verifies batch by batch (logcheck.h), no segment file is added, and
 *     the same batch retried gets 56 again at the same offset;
 *   - everything acknowledged fetches back while the disk is full;
 *   - an OffsetCommit that cannot be written is NOT_COORDINATOR (Kafka's
 *     GroupMetadataManager maps KAFKA_STORAGE_ERROR to it) and the group
 *     keeps its previous committed offset;
 *   - an InitProducerId whose __transaction_state record cannot be written
 *     is NOT_COORDINATOR (TransactionStateManager's mapping) and the
 *     transactional id keeps its epoch: the next one after space is freed
 *     bumps it by one, also after a kill -9;
 *   - librdkafka takes 56 as retriable: a record produced while full is
 *     delivered once the ballast is removed, without a broker restart;
 *   - once space is freed producing and committing work again;
 *   - after SIGTERM and after kill -9 every acknowledged record is there
 *     exactly once and in order, and the log verifies;
 *   - a kill -9 while the disk is full: the broker still starts (the
 *     indexes recovery rebuilds stay in memory until there is space) and
 *     serves every acknowledged record; producing works once space is
 *     freed.
 * The mount is detached and removed at the end, also when a test fails or
 * is killed (the parent process cleans up after the forked test).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"
#include "compat-tests/logcheck.h"
#include "compat-tests/wire.h"

#define TOPIC "full"
#define GROUP "full-group"
#define TXN_ID "full-txn"
#define FS_SIZE "8m"
#define SEGMENT_BYTES 1048576 /* the smallest Kafka allows */
#define RECS_PER_BATCH 400 /* about 10 KiB a batch: more than a page */

enum { ERR_NOT_COORDINATOR = 16, ERR_KAFKA_STORAGE_ERROR = 56 };

static char mount_dir[PATH_MAX]; /* the tmpfs, set in the test process */

static void detach_mount(void)
{
	if (mount_dir[0]) {
		umount2(mount_dir, MNT_DETACH);
		mount_dir[0] = '\0';
	}
}

/* Detach every mount under the harness base dir (the parent's clean-up,
 * after a test that failed or was killed before it unmounted). */
static void detach_mounts_under(const char *base)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	if (!f)
		return;
	char line[4096], dev[256], path[PATH_MAX];
	size_t blen = strlen(base);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%255s %4095s", dev, path) == 2 && strncmp(path, base, blen) == 0)
			umount2(path, MNT_DETACH);
	fclose(f);
}

static int64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Fill the file system with path: write 4 KiB pages until ENOSPC. */
static void fill_ballast(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "ballast %s: %s", path, strerror(errno));
	static char page[4096];
	memset(page, 'b', sizeof page);
	for (;;) {
		ssize_t w = write(fd, page, sizeof page);
		if (w < (ssize_t)sizeof page) {
			ck_assert_msg(w >= 0 || errno == ENOSPC, "ballast: %s", strerror(errno));
			break;
		}
	}
	close(fd);
}

static void remove_ballast(const char *path) { ck_assert_int_eq(unlink(path), 0); }

static int count_logs(const char *pdir, long *total)
{
	DIR *d = opendir(pdir);
	ck_assert_msg(d != NULL, "%s: %s", pdir, strerror(errno));
	int n = 0;
	*total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0) {
			char p[2 * PATH_MAX];
			struct stat st;
			snprintf(p, sizeof p, "%s/%s", pdir, e->d_name);
			ck_assert_int_eq(stat(p, &st), 0);
			*total += (long)st.st_size;
			n++;
		}
	}
	closedir(d);
	return n;
}

/* Remove the .index and .timeindex of every segment of pdir (as a crash
 * before they were written would leave them: recovery rebuilds them). */
static void remove_indexes(const char *pdir)
{
	DIR *d = opendir(pdir);
	ck_assert(d != NULL);
	struct dirent *e;
	char path[PATH_MAX + 512];
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if ((l > 6 && strcmp(e->d_name + l - 6, ".index") == 0) ||
		    (l > 10 && strcmp(e->d_name + l - 10, ".timeindex") == 0)) {
			snprintf(path, sizeof path, "%s/%s", pdir, e->d_name);
			ck_assert_int_eq(unlink(path), 0);
		}
	}
	closedir(d);
}

/* Size of the active (highest-named) segment. */
static long active_size(const char *pdir)
{
	DIR *d = opendir(pdir);
	ck_assert(d != NULL);
	char best[32] = "";
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l == 24 && strcmp(e->d_name + 20, ".log") == 0 && strcmp(e->d_name, best) > 0)
			memcpy(best, e->d_name, 25);
	}
	closedir(d);
	char p[2 * PATH_MAX];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", pdir, best);
	ck_assert_int_eq(stat(p, &st), 0);
	return (long)st.st_size;
}

static void check_dir(const char *pdir, int64_t next, const char *when)
{
	lc_options o = { .allow_gaps = false, .first = 0 };
	lc_result r;
	ck_assert_msg(lc_check_dir(pdir, &o, &r) == 0, "%s: %s", when, r.error);
	ck_assert_msg(r.next_offset == next, "%s: the log ends at %lld, %lld acknowledged", when,
		      (long long)r.next_offset, (long long)next);
}

/* One raw Produce v9 (acks=all) of a batch of records rec-<first>..;
 * returns the partition's error code. */
static int16_t produce_raw(int fd, int first, int64_t *base, size_t *batch_len)
{
	static k_wbuf batch, body;
	batch.len = body.len = 0;
	k_build_batch(&batch, RECS_PER_BATCH, first, wall_ms(), 0);
	if (batch_len)
		*batch_len = batch.len;
	k_produce_body(&body, TOPIC, 0, -1, &batch);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 0, 9, &body, &r);
	int16_t err = k_produce_parse(&r, base);
	free(frame);
	return err;
}

/* Bytes of the batch produce_raw sends for first. */
static size_t batch_len(int64_t first)
{
	static k_wbuf batch;
	batch.len = 0;
	k_build_batch(&batch, RECS_PER_BATCH, (int)first, wall_ms(), 0);
	return batch.len;
}

/* Produce one batch that must succeed at offset *next. */
static void produce_ok(int fd, int64_t *next, const char *when)
{
	int64_t base = -1;
	int16_t err = produce_raw(fd, (int)*next, &base, NULL);
	ck_assert_msg(err == 0, "%s: produce error %d", when, err);
	ck_assert_msg(base == *next, "%s: base offset %lld, expected %lld", when, (long long)base,
		      (long long)*next);
	*next += RECS_PER_BATCH;
}

/* A Produce that must fail with 56 and change nothing on disk. */
static void produce_refused(int fd, const char *pdir, int64_t next, const char *when)
{
	long before, after;
	int nbefore = count_logs(pdir, &before);
	for (int i = 0; i < 3; i++) {
		int64_t base;
		int16_t err = produce_raw(fd, (int)next, &base, NULL);
		ck_assert_msg(err == ERR_KAFKA_STORAGE_ERROR, "%s: produce answered %d, expected 56", when,
			      err);
	}
	int nafter = count_logs(pdir, &after);
	ck_assert_msg(nafter == nbefore && after == before,
		      "%s: a refused produce changed the segments: %d files / %ld bytes -> %d / %ld", when,
		      nbefore, before, nafter, after);
	check_dir(pdir, next, when);
}

/* OffsetCommit v8 of offset for TOPIC-0 with metadata of mlen bytes. */
static int16_t commit_raw(int fd, int64_t offset, int mlen)
{
	static k_wbuf body;
	static char meta[4096];
	memset(meta, 'm', (size_t)mlen);
	meta[mlen] = '\0';
	body.len = 0;
	kw_cstr(&body, GROUP);
	kw_i32(&body, -1); /* generation: a simple (unsubscribed) commit */
	kw_cstr(&body, "");
	kw_cstr(&body, NULL); /* group instance id */
	kw_uvarint(&body, 2); /* one topic */
	kw_cstr(&body, TOPIC);
	kw_uvarint(&body, 2); /* one partition */
	kw_i32(&body, 0);
	kw_i64(&body, offset);
	kw_i32(&body, -1);
	kw_cstr(&body, meta);
	kw_tags0(&body);
	kw_tags0(&body);
	kw_tags0(&body);
	k_rbuf r;
	uint8_t *frame = k_roundtrip(fd, 8, 8, &body, &r);
	kr_i32(&r, "throttle");
	ck_assert_int_eq(kr_carray(&r, "topics"), 1);
	char name[64];
	kr_cstr(&r, name, sizeof name, "name");
	ck_assert_int_eq(kr_carray(&r, "partitions"), 1);
	kr_i32(&r, "partition");
	int16_t err = kr_i16(&r, "error");
	ck_assert_msg(r.err == NULL, "OffsetCommit response: %s", r.err);
	free(frame);
	return err;
}

/* InitProducerId v4 for TXN_ID (a new epoch each time); *epoch set on
 * success. Returns the error code. */
static int16_t init_txn_raw(int fd, int16_t *epoch)
{
	k_init_pid r;
	int16_t err = k_init_producer_id(fd, 4, TXN_ID, 60000, -1, -1, &r);
	if (err == 0)
		*epoch = r.producer_epoch;
	return err;
}

static int64_t committed(const h_broker *b)
{
	rd_kafka_t *c = c_consumer(b, (const char *const[]){ "group.id", GROUP, NULL });
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, TOPIC, 0);
	rd_kafka_resp_err_t err = rd_kafka_committed(c, l, h_scaled_ms(30000));
	ck_assert_msg(err == 0, "committed: %s", rd_kafka_err2name(err));
	ck_assert_msg(l->elems[0].err == 0, "committed: %s", rd_kafka_err2name(l->elems[0].err));
	int64_t off = l->elems[0].offset;
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_destroy(c);
	return off;
}

typedef struct seq_check {
	int64_t next;
	char error[256];
} seq_check;

static int seq_cb(const rd_kafka_message_t *m, void *opaque)
{
	seq_check *s = opaque;
	char want[32];
	snprintf(want, sizeof want, "rec-%lld", (long long)s->next);
	if (m->offset != s->next || m->len != strlen(want) || memcmp(m->payload, want, m->len) != 0) {
		snprintf(s->error, sizeof s->error, "offset %lld: %.*s, expected %s at %lld",
			 (long long)m->offset, (int)(m->len > 40 ? 40 : m->len),
			 (const char *)m->payload, want, (long long)s->next);
		return 1;
	}
	s->next++;
	return 0;
}

/* Every record 0..n-1 once and in order (value rec-<offset>), and the
 * high watermark is n. */
static void read_all(const h_broker *b, int64_t n, const char *when)
{
	rd_kafka_t *c = c_consumer(b, NULL);
	seq_check s = { 0 };
	long got = c_consume(c, TOPIC, 0, RD_KAFKA_OFFSET_BEGINNING, (long)n, h_scaled_ms(60000), seq_cb,
			     &s);
	ck_assert_msg(!s.error[0], "%s: %s", when, s.error);
	ck_assert_msg(got == n, "%s: read %ld of %lld records", when, got, (long long)n);
	int64_t lo, hi;
	rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(c, TOPIC, 0, &lo, &hi, h_scaled_ms(10000));
	ck_assert_msg(err == 0, "%s: watermarks: %s", when, rd_kafka_err2str(err));
	ck_assert_msg(hi == n, "%s: high watermark %lld, expected %lld", when, (long long)hi, (long long)n);
	rd_kafka_destroy(c);
}

/* SIGTERM, exit code 0 (c_stop_broker would also free b and its dir). */
static void stop_broker(h_broker *b)
{
	int st = h_broker_stop(b, h_scaled_ms(30000));
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "broker did not stop cleanly on SIGTERM (status 0x%x)", (unsigned)st);
}

START_TEST(test_disk_full)
{
	static const char *const ov[] = {
		"log.segment.bytes=1048576",
		"log.index.interval.bytes=1024",
		"offsets.topic.num.partitions=1",
		"offsets.topic.replication.factor=1",
		"transaction.state.log.num.partitions=1",
		"num.partitions=1",
		NULL,
	};
	h_broker *b = h_broker_new(ov);
	ck_assert(b != NULL);
	/* the broker's data dir becomes a small tmpfs (its log file and
	 * properties live outside it) */
	snprintf(mount_dir, sizeof mount_dir, "%s", b->dir);
	atexit(detach_mount);
	ck_assert_msg(mount("tmpfs", b->dir, "tmpfs", 0, "size=" FS_SIZE ",mode=0755") == 0,
		      "mount tmpfs on %s: %s", b->dir, strerror(errno));
	ck_assert_msg(h_broker_start(b) == 0, "broker did not start");
	char pdir[PATH_MAX + 64], ballast[PATH_MAX + 64];
	snprintf(pdir, sizeof pdir, "%s/%s-0", b->dir, TOPIC);
	snprintf(ballast, sizeof ballast, "%s/ballast", b->dir);

	rd_kafka_t *admin = c_producer(b, NULL);
	char errstr[256];
	ck_assert_int_eq(c_create_topic(admin, TOPIC, 1, 1, NULL, errstr, sizeof errstr), 0);
	c_wait_topic(admin, TOPIC, 1, h_scaled_ms(20000));
	rd_kafka_destroy(admin);
	/* the group and __consumer_offsets exist before the disk fills */
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert(fd >= 0);
	{
		rd_kafka_t *c = c_consumer(b, (const char *const[]){ "group.id", GROUP, NULL });
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, TOPIC, 0)->offset = 5;
		rd_kafka_resp_err_t err = rd_kafka_commit(c, l, 0);
		ck_assert_msg(err == 0 && l->elems[0].err == 0, "first commit: %s / %s",
			      rd_kafka_err2name(err), rd_kafka_err2name(l->elems[0].err));
		rd_kafka_topic_partition_list_destroy(l);
		rd_kafka_destroy(c);
	}
	int64_t next = 0, commit_want = 5;
	for (int i = 0; i < 10; i++)
		produce_ok(fd, &next, "before the disk fills");
	/* the transactional id (and __transaction_state) before it fills */
	int16_t epoch = -1;
	ck_assert_int_eq(init_txn_raw(fd, &epoch), 0);

	/* 1. full: the append fails mid-batch */
	fill_ballast(ballast);
	produce_refused(fd, pdir, next, "full, mid-batch");
	/* reads keep working */
	read_all(b, next, "while full");
	/* a group commit that cannot be written: NOT_COORDINATOR, the old
	 * offset stays (records of more than a page: each needs a new one) */
	int16_t cerr = 0;
	for (int i = 0; i < 20 && cerr == 0; i++) {
		cerr = commit_raw(fd, 100 + i, 4000);
		if (cerr == 0)
			commit_want = 100 + i;
	}
	ck_assert_msg(cerr == ERR_NOT_COORDINATOR, "OffsetCommit while full answered %d", cerr);
	ck_assert_int_eq(committed(b), commit_want);
	/* an epoch bump that cannot be written: NOT_COORDINATOR, the epoch
	 * stays (a small record may still fit the last page: go on until one
	 * fails) */
	int16_t terr = 0;
	for (int i = 0; i < 200 && terr == 0; i++)
		terr = init_txn_raw(fd, &epoch);
	ck_assert_msg(terr == ERR_NOT_COORDINATOR, "InitProducerId while full answered %d", terr);

	/* 2. space freed: producing and committing work again */
	remove_ballast(ballast);
	produce_ok(fd, &next, "after freeing space");
	ck_assert_int_eq(commit_raw(fd, 300, 10), 0);
	commit_want = 300;
	int16_t before = epoch;
	ck_assert_int_eq(init_txn_raw(fd, &epoch), 0);
	ck_assert_int_eq(epoch, before + 1);
	check_dir(pdir, next, "after freeing space");

	/* 3. full when the append needs a new segment: the roll is undone */
	while (active_size(pdir) + (long)batch_len(next) <= SEGMENT_BYTES)
		produce_ok(fd, &next, "filling the active segment");
	long total;
	int segs = count_logs(pdir, &total);
	fill_ballast(ballast);
	produce_refused(fd, pdir, next, "full at a roll");
	remove_ballast(ballast);
	produce_ok(fd, &next, "rolled after freeing space");
	ck_assert_int_eq(count_logs(pdir, &total), segs + 1);

	/* 4. librdkafka retries 56: a record sent while full is delivered once
	 * space is freed (the broker is not restarted) */
	fill_ballast(ballast);
	rd_kafka_t *p = c_producer(b, (const char *const[]){ "acks", "all", "linger.ms", "0",
							     "message.timeout.ms", "120000", NULL });
	char val[32];
	c_delivery d = { 0 };
	/* a value as large as a batch would not fail on a half-empty page:
	 * the producer's record is produced after a raw refused batch (which
	 * proves the page is full) */
	produce_refused(fd, pdir, next, "full, before librdkafka");
	snprintf(val, sizeof val, "rec-%lld", (long long)next);
	c_msg m = { .topic = TOPIC, .partition = 0, .key = "k", .key_len = 1, .value = val,
		    .value_len = strlen(val) };
	/* the tail page may still hold one small record: keep the record
	 * count in step by filling it with single records until one fails */
	c_produce(p, &m, &d);
	rd_kafka_poll(p, h_scaled_ms(2000));
	while (d.done && d.err == 0) {
		ck_assert_int_eq(d.offset, next);
		next++;
		snprintf(val, sizeof val, "rec-%lld", (long long)next);
		m.value_len = strlen(val);
		memset(&d, 0, sizeof d);
		c_produce(p, &m, &d);
		rd_kafka_poll(p, h_scaled_ms(2000));
	}
	ck_assert_msg(!d.done, "a record sent while full was reported: %s", rd_kafka_err2name(d.err));
	remove_ballast(ballast);
	c_flush(p, h_scaled_ms(60000));
	ck_assert_msg(d.done && d.err == 0, "delivery after freeing space: %s", rd_kafka_err2name(d.err));
	ck_assert_int_eq(d.offset, next);
	next++;
	rd_kafka_destroy(p);
	check_dir(pdir, next, "after the retried record");
	close(fd);

	/* 5. every acknowledged record exactly once after SIGTERM and kill -9 */
	stop_broker(b);
	check_dir(pdir, next, "after SIGTERM");
	ck_assert_int_eq(h_broker_restart(b), 0);
	read_all(b, next, "after SIGTERM");
	ck_assert_int_eq(committed(b), commit_want);
	fd = w_connect(b->port, h_scaled_ms(5000));
	produce_ok(fd, &next, "after the restart");
	close(fd);
	ck_assert_int_eq(h_broker_kill(b), 0);
	check_dir(pdir, next, "after kill -9");
	ck_assert_int_eq(h_broker_restart(b), 0);
	read_all(b, next, "after kill -9");
	ck_assert_int_eq(committed(b), commit_want);
	fd = w_connect(b->port, h_scaled_ms(5000));
	before = epoch;
	ck_assert_int_eq(init_txn_raw(fd, &epoch), 0);
	ck_assert_int_eq(epoch, before + 1);
	produce_ok(fd, &next, "before the last kill -9");
	close(fd);

	/* 6. kill -9 while full: recovery cannot write the indexes it
	 * rebuilds (they are gone and their space taken), the broker starts
	 * anyway and serves */
	ck_assert_int_eq(h_broker_kill(b), 0);
	remove_indexes(pdir);
	fill_ballast(ballast);
	ck_assert_msg(h_broker_restart(b) == 0, "no restart on a full disk");
	read_all(b, next, "restarted on a full disk");
	ck_assert_int_eq(committed(b), commit_want);
	remove_ballast(ballast);
	fd = w_connect(b->port, h_scaled_ms(5000));
	produce_ok(fd, &next, "after the restart on a full disk");
	close(fd);
	stop_broker(b);
	check_dir(pdir, next, "after the restart on a full disk");
	ck_assert_int_eq(h_broker_restart(b), 0);
	read_all(b, next, "after the last restart");

	stop_broker(b);
	detach_mount();
	h_broker_free(b);
}
END_TEST

int main(void)
{
	/* Mounting needs CAP_SYS_ADMIN: skip (77) where it is not permitted. */
	char probe[] = "/tmp/samsa-disk-full-probe-XXXXXX";
	if (!mkdtemp(probe)) {
		perror("disk_full: mkdtemp");
		return 99;
	}
	if (mount("tmpfs", probe, "tmpfs", 0, "size=64k") < 0) {
		int e = errno;
		rmdir(probe);
		if (e == EPERM || e == EACCES) {
			fprintf(stderr, "disk_full: SKIP: cannot mount a tmpfs (%s); run as root\n",
				strerror(e));
			return 77;
		}
		fprintf(stderr, "disk_full: mount tmpfs: %s\n", strerror(e));
		return 99;
	}
	umount2(probe, MNT_DETACH);
	rmdir(probe);

	if (h_init() < 0)
		return 99;
	if (access(h_samsa_bin(), X_OK) < 0) {
		fprintf(stderr, "disk_full: broker binary %s: %s (set SAMSA_BIN)\n", h_samsa_bin(),
			strerror(errno));
		h_fini();
		return 99;
	}
	Suite *s = suite_create("disk_full");
	TCase *tc = tcase_create("disk_full");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_disk_full);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed) {
		fprintf(stderr, "\ndisk_full: broker logs of this run (tails):\n");
		h_dump_all_logs(stderr, 40);
	}
	/* a failed or killed test may have left its broker and mount */
	detach_mounts_under(h_base_dir());
	h_fini();
	return failed ? 1 : 0;
}
