/*
 * cluster_torn.c - a broker restarted after its log tail was torn on disk
 * (CLUSTER.md 4.5, 6.5 test 21): kill -9, then the active segment of each
 * of its replicas cut in the middle of a batch (what a crash loses of
 * writes that never reached the disk), then a start.
 *
 * follower, leader: three brokers; topic of 3 partitions, replication
 * factor 3, min.insync.replicas=2, an idempotent acks=all producer at 300
 * records a second. The victim V (not the controller) is the last replica
 * of every partition (follower) or the first, leading them all (leader).
 * After 3 s of load V is killed; each of its replicas loses the second half
 * of its log, cut inside the batch at the middle offset (the leader variant
 * waits first until every partition has another leader). V starts again:
 * its recovery drops the torn batch, it registers, fetches what it lost
 * from the leaders and rejoins every ISR. Then: every record acknowledged
 * (no delivery error), the checker finds nothing lost, duplicated or
 * divergent, and V's replicas verify (logcheck: CRCs, contiguous offsets,
 * indexes) and are identical to the others' batch by batch. Last, the
 * other two brokers are stopped with SIGTERM (exit 0; their controlled
 * shutdowns move every leadership to V) and a consumer reads every
 * partition from V alone: the checker over that read finds every
 * acknowledged record, none twice, nothing at an offset where another
 * value was acknowledged (V serves nothing it lost and nothing of its
 * own).
 *
 * last_replica: the last-replica-standing case (CLUSTER.md 4.5, 4.6,
 * KIP-966). A topic of one partition on V and A (min.insync.replicas=1),
 * the controller on neither. A is stopped (SIGTERM: its controlled shutdown
 * takes it out of the ISR), so V alone acknowledges acks=all records for a
 * while; then V is killed, the producer stopped, and V's log cut halfway
 * between A's log end and its own: acknowledged records that no other
 * replica has are gone from the disk. V starts again: as the last ISR
 * member it is elected (leader epoch + 1, unclean elections off), A starts
 * and follows it. Kafka's ZooKeeper mode loses that tail for good; the
 * test records it: the checker (loss allowed) must find exactly the
 * acknowledged records at or above the cut offset lost and nothing else
 * wrong (no duplicate, no divergence, monotonic), and both replicas
 * identical. The count is printed. (No replica holds those records: the
 * only way not to lose them is not to acknowledge them from one replica's
 * page cache: min.insync.replicas=2, or flush.messages=1 for an fsync
 * before the acknowledgement.)
 *
 * Printed: the records acknowledged from the kill until V was back in
 * every ISR (last_replica: until V was elected again; the partition is
 * offline meanwhile and its producer stopped at the kill) and the longest
 * time without a successful produce; the records cut from each replica.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/cluster_common.h"
#include "compat-tests/logcheck.h"

#define NPART 3
#define RATE 300

static int64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

static int32_t be32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/*
 * Tear broker id's replica of topic/partition (the broker is down): cut its
 * newest .log file in the middle of the batch that holds offset target.
 * Returns the base offset of that batch (the first offset lost); *end gets
 * the log end offset before the cut.
 */
static int64_t tear(hc_cluster *c, int id, const char *topic, int32_t partition, int64_t target,
		    int64_t *end)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], last[64] = "";
	hc_partition_dir(c, id, topic, partition, dir, sizeof(dir));
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "%s: cannot open", dir);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 24 && strcmp(e->d_name + 20, ".log") == 0 &&
		    strcmp(e->d_name, last) > 0)
			memcpy(last, e->d_name, 25); /* 24 characters and the NUL */
	closedir(d);
	ck_assert_msg(last[0], "%s: no segment", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, last);
	int fd = open(path, O_RDWR);
	struct stat st;
	ck_assert_msg(fd >= 0 && fstat(fd, &st) == 0, "%s: cannot open", path);
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	ck_assert(buf && read(fd, buf, (size_t)st.st_size) == st.st_size);
	int64_t cut_base = -1;
	off_t cut_at = -1;
	*end = -1;
	for (size_t pos = 0; pos + 61 <= (size_t)st.st_size;) {
		int64_t base = be64(buf + pos);
		int32_t len = be32(buf + pos + 8);
		ck_assert_msg(len >= 49 && pos + 12 + (size_t)len <= (size_t)st.st_size,
			      "%s: a torn batch at %zu already", path, pos);
		int64_t lastoff = base + be32(buf + pos + 23);
		if (cut_base < 0 && lastoff >= target) {
			cut_base = base;
			cut_at = (off_t)(pos + 12 + (size_t)len / 2);
		}
		*end = lastoff + 1;
		pos += 12 + (size_t)len;
	}
	free(buf);
	ck_assert_msg(cut_base >= 0, "%s: offset %" PRId64 " is not in the active segment (log end "
		      "%" PRId64 ")", path, target, *end);
	ck_assert_msg(ftruncate(fd, cut_at) == 0, "%s: ftruncate", path);
	close(fd);
	cc_log("broker %d, %s-%d: %s cut at byte %lld, inside the batch at offset %" PRId64
	       " (log end was %" PRId64 ")", id, topic, (int)partition, last, (long long)cut_at,
	       cut_base, *end);
	return cut_base;
}

static void wait_isr(hc_cluster *c, const char *topic, int npart, const int32_t *isr, int n)
{
	for (int p = 0; p < npart; p++)
		ck_assert_msg(hc_wait_isr(c, topic, p, isr, n, 30000) >= 0,
			      "%s-%d: the ISR did not become full again (state above)", topic, p);
}

static void wait_logs_equal(hc_cluster *c, const char *topic, int npart, const int *ids, int n)
{
	for (int q = 0; q < npart; q++) {
		char why[512] = "";
		long long deadline = h_now_ms() + h_scaled_ms(15000);
		while (!cc_logs_equal(c, topic, q, ids, n, why, sizeof(why)) &&
		       h_now_ms() < deadline)
			usleep(200 * 1000);
		ck_assert_msg(cc_logs_equal(c, topic, q, ids, n, why, sizeof(why)),
			      "%s-%d: the replicas' logs differ: %s", topic, q, why);
	}
}

static void verify_dir(hc_cluster *c, int id, const char *topic, int32_t partition)
{
	char dir[PATH_MAX];
	hc_partition_dir(c, id, topic, partition, dir, sizeof(dir));
	lc_result r;
	ck_assert_msg(lc_check_dir(dir, NULL, &r) == 0, "broker %d's %s-%d does not verify: %s", id,
		      topic, (int)partition, r.error);
}

typedef struct led_by_arg {
	const char *topic;
	int npart, id;
	char why[800];
} led_by_arg;

static bool led_by_cond(hc_cluster *c, void *arg)
{
	led_by_arg *a = arg;
	for (int p = 0; p < a->npart; p++) {
		hc_state st;
		if (hc_zk_state(c, a->topic, p, &st) != CTL_ZK_OK || st.leader != a->id) {
			snprintf(a->why, sizeof(a->why), "%s-%d: %s", a->topic, p, st.json);
			return false;
		}
	}
	return true;
}

static void torn(bool leader)
{
	const char *what = leader ? "leader" : "follower";
	const char *topic = leader ? "tornl" : "tornf";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int ctl = hc_zk_controller(&c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");
	int v = ctl == 3 ? 2 : 3, o = 6 - ctl - v;
	int32_t rows[NPART * 3];
	if (leader) {
		const int32_t r[] = {v, ctl, o, v, o, ctl, v, ctl, o};
		memcpy(rows, r, sizeof(r));
	} else {
		const int32_t r[] = {ctl, o, v, o, ctl, v, ctl, o, v};
		memcpy(rows, r, sizeof(r));
	}
	cc_create_topic(&c, topic, NPART, 3, rows,
			(const char *const[]){"min.insync.replicas", "2", NULL});
	cc_producer *p = cc_producer_start(&c, topic, NPART, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(3000 * 1000);

	int64_t t0 = h_now_ms();
	ck_assert_int_eq(hc_kill(&c, v), 0);
	cc_log("%s %d killed", what, v);
	if (leader)
		for (int q = 0; q < NPART; q++)
			cc_wait_leader(&c, topic, q, v, HC_SESSION_MS + 20000);
	int64_t cut[NPART], end[NPART], lost = 0;
	for (int q = 0; q < NPART; q++) {
		int64_t le = cc_log_end_offset(&c, v, topic, q);
		cut[q] = tear(&c, v, topic, q, le / 2, &end[q]);
		lost += end[q] - cut[q];
	}
	ck_assert_msg(hc_restart(&c, v) == 0, "broker %d did not start again", v);
	cc_log("%d started again", v);
	static const int32_t all[3] = {1, 2, 3};
	wait_isr(&c, topic, NPART, all, 3);
	int64_t t1 = h_now_ms();
	cc_log("%d back in every ISR", v);

	chk_report r;
	char label[128];
	snprintf(label, sizeof(label), "torn log on the %s", what);
	cc_producer_verify(&c, p, topic, NPART, NULL, &r, label);
	static const int ids[3] = {1, 2, 3};
	wait_logs_equal(&c, topic, NPART, ids, 3);
	for (int q = 0; q < NPART; q++)
		verify_dir(&c, v, topic, q);

	/* V alone serves: the others stop cleanly and hand it their leadership */
	int others[2] = {o, ctl};
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(hc_term(&c, others[k]), 0);
		int st = hc_wait_exit(&c, others[k], 30000);
		ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "broker %d did not exit 0 on SIGTERM (status 0x%x)", others[k], st);
	}
	led_by_arg la = {.topic = topic, .npart = NPART, .id = v};
	ck_assert_msg(hc_wait(&c, 20000, led_by_cond, &la) >= 0, "broker %d does not lead every "
		      "partition after the others stopped: %s", v, la.why);
	cc_wait_topic(&c, topic, NPART, 20000);
	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	long n = cc_read_all(&c, topic, NPART, h);
	chk_report rv;
	chk_options opt = {.idempotent = true};
	snprintf(label, sizeof(label), "read from the torn %s %d alone", what, v);
	cc_check(h, &opt, &rv, label);
	chk_free(h);
	ck_assert_int_eq(n, r.acked);

	cc_window w;
	cc_producer_window(p, -1, t0, t1, &w);
	snprintf(label, sizeof(label), "torn log on the %s %d, kill -9 to back in every ISR", what,
		 v);
	cc_print_window("cluster_torn", leader ? "torn_tail_leader" : "torn_tail_follower",
			label, &w);
	printf("cluster_torn: %s: %" PRId64 " records cut from its 3 replicas' tails (%" PRId64
	       ", %" PRId64 ", %" PRId64 "), fetched again; %ld records acknowledged, none lost, "
	       "duplicated or divergent, also as read from it alone\n",
	       what, lost, end[0] - cut[0], end[1] - cut[1], end[2] - cut[2], r.acked);
	cc_producer_free(p);
	cc_finish(&c);
}

START_TEST(test_follower)
{
	torn(false);
}
END_TEST

START_TEST(test_leader)
{
	torn(true);
}
END_TEST

START_TEST(test_last_replica)
{
	const char *topic = "tornx";
	hc_cluster c;
	cc_start(&c, NULL, false);
	int ctl = hc_zk_controller(&c);
	ck_assert_msg(ctl >= 1 && ctl <= 3, "no controller");
	int v = ctl == 3 ? 2 : 3, a = 6 - ctl - v;
	const int32_t rows[2] = {v, a};
	cc_create_topic(&c, topic, 1, 2, rows,
			(const char *const[]){"min.insync.replicas", "1", NULL});
	cc_producer *p = cc_producer_start(&c, topic, 1, 0, RATE, NULL);
	ck_assert_msg(cc_producer_wait_ack_after(p, -1, 0, 20000) >= 0, "no acknowledgement");
	usleep(1000 * 1000);

	/* A leaves: V is the last replica standing */
	ck_assert_int_eq(hc_term(&c, a), 0);
	int st = hc_wait_exit(&c, a, 30000);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "broker %d did not exit 0 on SIGTERM (status 0x%x)", a, st);
	const int32_t only_v[1] = {v};
	ck_assert_msg(hc_wait_isr(&c, topic, 0, only_v, 1, 10000) >= 0, "the ISR is not V alone");
	int64_t a_end = cc_log_end_offset(&c, a, topic, 0);
	int64_t t_alone = h_now_ms();
	ck_assert_msg(cc_producer_wait_ack_after(p, 0, t_alone, 10000) >= 0,
		      "no acknowledgement from V alone");
	usleep(1500 * 1000);
	hc_state s0;
	ck_assert_int_eq(hc_zk_state(&c, topic, 0, &s0), CTL_ZK_OK);

	int64_t t0 = h_now_ms();
	ck_assert_int_eq(hc_kill(&c, v), 0);
	cc_producer_stop(p, 2000); /* nothing can be acknowledged now: the rest is indeterminate */
	int64_t v_end = cc_log_end_offset(&c, v, topic, 0);
	ck_assert_msg(v_end > a_end + 100, "V wrote too little alone: %" PRId64 " to %" PRId64,
		      a_end, v_end);
	int64_t end;
	int64_t cut = tear(&c, v, topic, 0, (a_end + v_end) / 2, &end);
	long acked_cut = 0;
	for (long i = 0; i < atomic_load(&p->nsent); i++) {
		cc_rec *rec = cc_producer_rec(p, i);
		if (rec->state == CC_ACKED && rec->offset >= cut)
			acked_cut++;
	}
	cc_log("V (%d) killed; its log cut at %" PRId64 " (A's ends at %" PRId64 ", V's at %" PRId64
	       "): %ld acknowledged records cut", v, cut, a_end, end, acked_cut);
	ck_assert_msg(acked_cut > 0, "the cut holds no acknowledged record");

	/* V is still the ISR: it is elected when it returns */
	ck_assert_msg(hc_restart(&c, v) == 0, "broker %d did not start again", v);
	cc_wait_topic(&c, topic, 1, HC_SESSION_MS + 20000);
	hc_state s1;
	ck_assert_int_eq(hc_zk_state(&c, topic, 0, &s1), CTL_ZK_OK);
	ck_assert_msg(s1.leader == v && s1.leader_epoch > s0.leader_epoch,
		      "after V's return: %s (was %s)", s1.json, s0.json);
	int64_t t1 = h_now_ms();
	ck_assert_msg(hc_restart(&c, a) == 0, "broker %d did not start again", a);
	const int32_t both[2] = {v, a};
	ck_assert_msg(hc_wait_isr(&c, topic, 0, both, 2, 30000) >= 0, "A did not rejoin the ISR");
	const int ids[2] = {v, a};
	wait_logs_equal(&c, topic, 1, ids, 2);
	verify_dir(&c, v, topic, 0);

	chk *h = chk_new();
	cc_producer_feed(p, h);
	chk_span(h, p->start_ms, p->end_ms);
	cc_read_all(&c, topic, 1, h);
	chk_report r;
	chk_options opt = {.idempotent = true, .allow_loss = true};
	cc_check(h, &opt, &r, "torn log on the last replica standing");
	chk_free(h);
	ck_assert_msg(r.lost == acked_cut,
		      "%ld acknowledged records lost, but the cut held %ld: the loss is not (only) "
		      "the torn tail", r.lost, acked_cut);
	ck_assert_int_eq(r.misplaced, 0);

	cc_window w;
	cc_producer_window(p, -1, t_alone, t0, &w);
	cc_print_window("cluster_torn", NULL, "last replica standing, acknowledging alone", &w);
	/* the producer stopped at the kill (its sequences above the cut are gone
	 * for good); nothing could be acknowledged anyway: the partition had no
	 * leader until V was elected again */
	cc_producer_window(p, -1, t0, t1, &w);
	cc_print_window("cluster_torn", "torn_tail_last_replica", "last replica killed and its "
			"tail torn, kill -9 to its re-election (offline; the producer stopped at "
			"the kill)", &w);
	printf("cluster_torn: last replica standing: V (ISR of one, min.insync.replicas=1) killed "
	       "and its tail cut: re-elected %" PRId64 " ms after the kill with leader epoch %d; "
	       "%ld of %ld acknowledged records lost (all of them in the torn tail: Kafka's "
	       "documented outcome, KIP-966), no duplicate, no divergence\n",
	       t1 - t0, s1.leader_epoch, r.lost, r.acked);
	cc_producer_free(p);
	cc_finish(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_torn");
	TCase *tc = tcase_create("torn");
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, test_follower);
	tcase_add_test(tc, test_leader);
	tcase_add_test(tc, test_last_replica);
	suite_add_tcase(s, tc);
	return cc_run_suite(s);
}
