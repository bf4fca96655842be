/*
 * groups_common.h - what the consumer-group compat tests (groups_*.c) share:
 * a broker with fast group timers, high-level consumers whose rebalance
 * callbacks track their assignment (eager and cooperative), polling several
 * consumers from one thread until the group settles, a consumer in a child
 * process (so a test can SIGKILL it), bookkeeping of consumed records, admin
 * helpers for groups, and raw JoinGroup / SyncGroup / Heartbeat / LeaveGroup /
 * OffsetCommit / FindCoordinator requests in their classic (non-flexible)
 * layouts for the cases no client library would produce.
 *
 * Every helper fails the running check test (ck_assert) when something it
 * needs does not work, with a message saying what.
 */
#ifndef SAMSA_COMPAT_GROUPS_COMMON_H
#define SAMSA_COMPAT_GROUPS_COMMON_H

#include <stdint.h>
#include <sys/types.h>

#include "compat-tests/compat.h"
#include "compat-tests/kmsg.h"

#define GT_MAXP 64 /* partitions of the one topic a member follows */

/*
 * A broker for group tests: group.initial.rebalance.delay.ms=0 and
 * group.min.session.timeout.ms=1000 (so tests may use 2 s sessions), then
 * the NULL-terminated "key=value" list extra (may be NULL; a key given
 * there is passed after ours, and the broker takes the last one).
 */
h_broker *gt_start_broker(const char *const *extra);

/* CreateTopics topic with np partitions (replication factor 1) and wait
 * until every partition has a leader. */
void gt_create_topic(const h_broker *b, const char *topic, int np);

/* Called for each record a member consumes. */
struct gt_member;
typedef void (*gt_msg_cb)(struct gt_member *m, const rd_kafka_message_t *msg, void *opaque);

/*
 * A member of a consumer group following one topic of np partitions,
 * either a high-level consumer in this process (rk) or one in a child
 * process (pid, reading its assignment from a pipe).
 */
typedef struct gt_member {
	char name[32];
	char topic[128];
	int np;
	rd_kafka_t *rk;          /* in-process consumer; NULL once closed */
	pid_t pid;               /* child-process consumer, 0 if none */
	int fd;                  /* read end of the child's pipe, -1 if none */
	char line[1024];         /* partial line from the child */
	size_t linelen;
	int dead;                /* child killed: owns nothing any more */

	int assigned[GT_MAXP];   /* 1 = owns partition p (from rebalance callbacks) */
	int n_assign, n_revoke;  /* rebalance callbacks so far */
	int n_lost;              /* revokes with rd_kafka_assignment_lost */
	int parts_revoked;       /* partitions revoked so far, summed */
	long long last_event_ms; /* h_now_ms() of the last rebalance callback */
	char protocol[16];       /* rd_kafka_rebalance_protocol at the last callback */
	char bad[256];           /* first problem seen in a callback, "" if none */

	int n_errors;            /* consumer errors returned by poll */
	rd_kafka_resp_err_t last_err;
	char last_errstr[256];
	rd_kafka_resp_err_t fatal_err; /* rd_kafka_fatal_error once seen */

	long n_msgs;             /* records consumed */
	long n_foreign;          /* records of a partition it did not own */
	gt_msg_cb on_msg;
	void *opaque;
} gt_member;

/*
 * A consumer (not subscribed yet) in group for topic/np: client.id = name,
 * auto.offset.reset=earliest, heartbeat.interval.ms=200,
 * session.timeout.ms=6000, fetch.wait.max.ms=100, rebalance callback that
 * uses incremental assign/unassign when the protocol is COOPERATIVE; then
 * kv (key, value, ... NULL; may be NULL) overrides.
 */
gt_member *gt_member_new(const h_broker *b, const char *name, const char *group,
			 const char *topic, int np, const char *const *kv);

/* Subscribe to the member's topic. */
void gt_subscribe(gt_member *m);

/*
 * The same member in a child process (this test program exec'd again with
 * GT_CHILD_ARG): it subscribes at once and reports every rebalance on its
 * pipe. kv as gt_member_new. The child dies with the test process.
 */
gt_member *gt_child_new(const h_broker *b, const char *name, const char *group,
			const char *topic, int np, const char *const *kv);

/* SIGKILL the child and reap it; it then owns nothing. */
void gt_child_kill(gt_member *m);

/* One poll of up to timeout_ms, then everything already queued. */
void gt_poll(gt_member *m, int timeout_ms);

/* Poll each of the n members in turn for total_ms. */
void gt_poll_all(gt_member **ms, int n, int total_ms);

/* rd_kafka_consumer_close (which runs the revoke callback), destroy. */
void gt_close(gt_member *m);

/* Close if still open (or kill the child), free. NULL is a no-op. */
void gt_member_free(gt_member *m);

/* Partitions the member owns now. */
int gt_count(const gt_member *m);

/* "name:[0,1] name2:[2,3] ..." of the n members into buf. */
const char *gt_describe(gt_member **ms, int n, char *buf, size_t cap);

/*
 * 1 when the live members among the n own partitions 0..np-1 exactly once
 * between them, (when balanced) each owns np/n or np/n+1 of them and the
 * in-process ones' rd_kafka_assignment agrees with their callbacks; else 0
 * with the reason in why. Fails the test on a member's callback problem or
 * fatal error.
 */
int gt_settled(gt_member **ms, int n, int balanced, char *why, size_t cap);

/*
 * Poll the n members until the live ones own partitions 0..np-1 exactly
 * once between them, (when balanced) each owns np/n or np/n+1 of them,
 * in-process members' rd_kafka_assignment agrees with their callbacks, and
 * no rebalance callback came for quiet_ms. Fails the test after timeout_ms
 * (scaled) with the assignment it last saw. Returns h_now_ms() of the last
 * rebalance callback before the group settled.
 */
long long gt_wait_settled(gt_member **ms, int n, int balanced, int quiet_ms, int timeout_ms,
			  const char *what);

/* Which records were consumed: a count per (partition, offset). */
typedef struct gt_seen {
	int np;
	int cap;           /* offsets 0..cap-1 per partition */
	unsigned *count;   /* np * cap */
	long out_of_range; /* records at an offset >= cap */
} gt_seen;

/* A zeroed tracker for np partitions of cap offsets each (fails the test
 * when out of memory); free with gt_seen_free (NULL is a no-op). */
gt_seen *gt_seen_new(int np, int cap);
void gt_seen_free(gt_seen *s);
/* A gt_msg_cb that counts each record in the gt_seen passed as opaque. */
void gt_seen_cb(gt_member *m, const rd_kafka_message_t *msg, void *opaque);

/*
 * Produce n records with values "<tag>-<i>" to partition i % np of topic
 * (acks=all), wait for every delivery; end[p] (np entries, may be NULL)
 * is increased by the number written to p, and must match the offsets the
 * broker gave (end[] holds the log end offsets when it starts from them).
 */
void gt_produce(const h_broker *b, const char *topic, int np, int n, const char *tag,
		int64_t *end);

/* ---- admin ---- */

/* Wait for the result event of type evtype on q (fails after timeout). */
rd_kafka_event_t *gt_admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t evtype,
				int timeout_ms);

/* DeleteGroups of one group: its per-group error (the request itself must
 * succeed). */
rd_kafka_resp_err_t gt_delete_group(rd_kafka_t *rk, const char *group);

/*
 * ListConsumerGroupOffsets (OffsetFetch) of partitions 0..np-1 of topic:
 * off[p] gets the committed offset (RD_KAFKA_OFFSET_INVALID when none);
 * fails the test on any error.
 */
void gt_committed_admin(rd_kafka_t *rk, const char *group, const char *topic, int np,
			int64_t *off);

/* ---- raw requests (classic request header v1, response header v0) ---- */

/* Connect to the broker's port (fails the test if it cannot). */
int gt_raw_connect(const h_broker *b);

/* Send api key/version with body; returns the correlation id. */
int32_t gt_raw_send(int fd, int16_t key, int16_t ver, const k_wbuf *body);

/* Receive the response with correlation id cid within timeout_ms (scaled
 * by the caller); *r reads the body after the correlation id. Returns the
 * malloc'd frame (caller frees). Fails on timeout or a wrong id. */
uint8_t *gt_raw_recv(int fd, int32_t cid, k_rbuf *r, int timeout_ms);

/* true when nothing arrived on fd within ms (the response is held). */
int gt_raw_pending(int fd, int ms);

/* Classic (int16 length) strings and (int32 length) bytes. */
void gt_kw_str(k_wbuf *w, const char *s); /* NULL = null string */
void gt_kw_bytes(k_wbuf *w, const void *p, int32_t n); /* p NULL = null */
/* Reads a string into out (cut to cap); returns its length, -1 for null. */
int gt_kr_str(k_rbuf *r, char *out, size_t cap, const char *what);
/* Reads bytes into out (cut to cap); returns the length, -1 for null. */
int32_t gt_kr_bytes(k_rbuf *r, void *out, size_t cap, const char *what);

/*
 * FindCoordinator v1 (key type group) until the broker names itself as
 * the coordinator of group (retrying COORDINATOR_NOT_AVAILABLE and
 * COORDINATOR_LOAD_IN_PROGRESS for up to 20 s); checks host 127.0.0.1 and
 * the broker's port. Returns the coordinator's node id.
 */
int32_t gt_raw_find_coordinator(const h_broker *b, const char *group);

/* ConsumerProtocolSubscription v0 for one topic (JoinGroup metadata). */
void gt_subscription_bytes(k_wbuf *w, const char *topic);
/* ConsumerProtocolAssignment v0: topic with partitions parts[0..n-1]. */
void gt_assignment_bytes(k_wbuf *w, const char *topic, const int32_t *parts, int n);

typedef struct gt_join_result {
	int16_t err;
	int32_t generation;
	char protocol[64];
	char leader[256];
	char member_id[256];
	int nmembers;
	char members[8][256]; /* member ids (first 8) */
	int32_t metadata_len[8];
} gt_join_result;

/*
 * JoinGroup (versions 1-5) with protocol type ptype and the protocols named
 * in protos (NULL-terminated), each with the subscription metadata for
 * topic. instance_id NULL = dynamic member (v5 only). Returns the
 * correlation id; the broker may hold the response (gt_join_recv).
 */
int32_t gt_join_send(int fd, int16_t ver, const char *group, const char *member_id,
		     const char *instance_id, int session_ms, int rebalance_ms,
		     const char *ptype, const char *const *protos, const char *topic);
void gt_join_recv(int fd, int16_t ver, int32_t cid, gt_join_result *out, int timeout_ms);

/*
 * SyncGroup v3: the leader passes n assignments (member ids and the
 * partitions of topic each gets: parts[i][0..nparts[i]-1]); a follower
 * passes n = 0. Returns the correlation id.
 */
int32_t gt_sync_send(int fd, const char *group, int32_t generation, const char *member_id,
		     const char *instance_id, int n, const char *const *members,
		     const char *topic, const int32_t *const *parts, const int *nparts);
/* SyncGroup v3 response: the error code; the assignment bytes into out. */
int16_t gt_sync_recv(int fd, int32_t cid, uint8_t *out, size_t cap, int32_t *outlen,
		     int timeout_ms);

/* Heartbeat v3: the error code. */
int16_t gt_heartbeat(int fd, const char *group, int32_t generation, const char *member_id,
		     const char *instance_id);

/* LeaveGroup v3 of one member: the top-level error code; *member_err
 * (may be NULL) gets the member's. */
int16_t gt_leave(int fd, const char *group, const char *member_id, const char *instance_id,
		 int16_t *member_err);

/* OffsetCommit v7 of one partition: that partition's error code. */
int16_t gt_commit_raw(int fd, const char *group, int32_t generation, const char *member_id,
		      const char *instance_id, const char *topic, int32_t partition,
		      int64_t offset, const char *metadata);

/* Kafka error codes the group tests look for (Kafka protocol guide). */
enum {
	GT_NONE = 0,
	GT_COORDINATOR_LOAD_IN_PROGRESS = 14,
	GT_COORDINATOR_NOT_AVAILABLE = 15,
	GT_NOT_COORDINATOR = 16,
	GT_ILLEGAL_GENERATION = 22,
	GT_INCONSISTENT_GROUP_PROTOCOL = 23,
	GT_UNKNOWN_MEMBER_ID = 25,
	GT_INVALID_SESSION_TIMEOUT = 26,
	GT_REBALANCE_IN_PROGRESS = 27,
	GT_MEMBER_ID_REQUIRED = 79,
	GT_GROUP_MAX_SIZE_REACHED = 81,
	GT_FENCED_INSTANCE_ID = 82,
};

/* ---- the child-process consumer ---- */

#define GT_CHILD_ARG "--groups-child-consumer"

/* main() of the child (argv[1] == GT_CHILD_ARG). */
int gt_child_main(int argc, char **argv);

/* main() of a group test program: the child when asked, else the suite. */
#define GT_MAIN(make_suite)                                                        \
	int main(int argc, char **argv)                                                \
	{                                                                              \
		if (argc > 1 && strcmp(argv[1], GT_CHILD_ARG) == 0)                        \
			return gt_child_main(argc, argv);                                      \
		return c_run_suite(make_suite());                                          \
	}

#endif
