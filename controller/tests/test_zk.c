/*
 * test_zk.c - the ZooKeeper session wrapper (zk.h) against a real ZooKeeper
 * server (Debian's 3.8, started by compat-tests/harness.h on a free
 * 127.0.0.1 port, removed with its files at exit).
 *
 * One server serves every test; each test works under its own chroot
 * ("/t-<name>"), so they do not see each other's nodes. The outage test
 * kills and restarts a server of its own.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/harness.h"
#include "controller/zk.h"

#define SESSION_MS 6000

static char zk_hosts[64]; /* "127.0.0.1:PORT" of the shared server */

/* ---- events recorded by the callback ---- */

#define MAX_EVENTS 256

typedef struct event {
	int type, state;
	char path[128];
} event;

typedef struct recorder {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	event ev[MAX_EVENTS];
	int n;
} recorder;

/* The callback as zk.h wants it: record and return. */
static void record(void *arg, int type, int state, const char *path)
{
	recorder *r = arg;
	pthread_mutex_lock(&r->mu);
	if (r->n < MAX_EVENTS) {
		event *e = &r->ev[r->n++];
		e->type = type;
		e->state = state;
		snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void rec_init(recorder *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

/* Index of the first event at or after *from matching (type, state or -1
 * for any, path or NULL for any), waiting up to timeout_ms; -1 if none.
 * *from moves past it. */
static int rec_wait(recorder *r, int *from, int type, int state, const char *path, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	int found = -1;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		for (int i = *from; i < r->n; i++) {
			event *e = &r->ev[i];
			if (e->type == type && (state == -1 || e->state == state) &&
			    (!path || strcmp(e->path, path) == 0)) {
				found = i;
				*from = i + 1;
				break;
			}
		}
		if (found >= 0 || pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&r->mu);
	return found;
}

/* Events of the given type recorded from index from on. */
static int rec_count(recorder *r, int from, int type)
{
	int n = 0;
	pthread_mutex_lock(&r->mu);
	for (int i = from; i < r->n; i++)
		n += r->ev[i].type == type;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static int rec_len(recorder *r)
{
	pthread_mutex_lock(&r->mu);
	int n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* ---- helpers ---- */

static ctl_zk *open_at(const char *hosts, const char *chroot, recorder *r)
{
	char connect[256];
	snprintf(connect, sizeof(connect), "%s%s", hosts, chroot ? chroot : "");
	ctl_zk_config cfg = { .connect = connect, .session_timeout_ms = SESSION_MS,
			      .connection_timeout_ms = h_scaled_ms(10000),
			      .on_event = r ? record : NULL, .arg = r };
	ctl_zk *zk = NULL;
	int rc = ctl_zk_open(&cfg, &zk);
	ck_assert_msg(rc == CTL_ZK_OK, "open %s: %s", connect, ctl_zk_strerror(rc));
	return zk;
}

static ctl_zk *open_chroot(const char *chroot, recorder *r)
{
	return open_at(zk_hosts, chroot, r);
}

static char *get_str(ctl_zk *zk, const char *path, ctl_zk_stat *st)
{
	char *data;
	int len;
	ck_assert_int_eq(ctl_zk_get(zk, path, false, &data, &len, st), CTL_ZK_OK);
	return data;
}

/* ---- tests ---- */

START_TEST(test_create_get_set_delete)
{
	ctl_zk *zk = open_chroot("/t-crud", NULL);
	ctl_zk_stat st;
	char created[64];
	ck_assert_int_eq(ctl_zk_create(zk, "/n", "v0", 2, CTL_ZK_PERSISTENT, created,
				       sizeof(created), &st),
			 CTL_ZK_OK);
	ck_assert_str_eq(created, "/n"); /* relative to the chroot */
	ck_assert_int_eq(st.version, 0);
	ck_assert(st.czxid > 0 && st.ephemeral_owner == 0);
	int64_t czxid = st.czxid;
	ck_assert_int_eq(ctl_zk_create(zk, "/n", "x", 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_NODEEXISTS);
	ck_assert_int_eq(ctl_zk_create(zk, "/no/parent", "x", 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_NONODE);

	char *data = get_str(zk, "/n", &st);
	ck_assert_str_eq(data, "v0");
	free(data);
	ck_assert_int_eq(st.version, 0);
	ck_assert(st.czxid == czxid);
	ck_assert_int_eq(st.data_length, 2);

	/* conditional set: the version moves on, a stale one is refused */
	ck_assert_int_eq(ctl_zk_set(zk, "/n", "v1", 2, 0, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.version, 1);
	ck_assert(st.czxid == czxid && st.mzxid > czxid);
	ck_assert_int_eq(ctl_zk_set(zk, "/n", "v2", 2, 0, &st), CTL_ZK_BADVERSION);
	data = get_str(zk, "/n", &st);
	ck_assert_str_eq(data, "v1");
	free(data);
	ck_assert_int_eq(ctl_zk_set(zk, "/n", "v2", 2, CTL_ZK_ANY_VERSION, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.version, 2);

	/* null data and empty data are different things */
	int len;
	ck_assert_int_eq(ctl_zk_create(zk, "/null", NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT, NULL,
				       0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_get(zk, "/null", false, &data, &len, NULL), CTL_ZK_OK);
	ck_assert_ptr_null(data);
	ck_assert_int_eq(len, -1);
	ck_assert_int_eq(ctl_zk_create(zk, "/empty", "", 0, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_get(zk, "/empty", false, &data, &len, NULL), CTL_ZK_OK);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(len, 0);
	free(data);

	/* data bigger than the first read buffer */
	size_t big = 300 * 1000;
	char *blob = malloc(big);
	for (size_t i = 0; i < big; i++)
		blob[i] = (char)('a' + i % 26);
	ck_assert_int_eq(ctl_zk_set(zk, "/empty", blob, (int)big, 0, NULL), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_get(zk, "/empty", false, &data, &len, &st), CTL_ZK_OK);
	ck_assert_int_eq(len, (int)big);
	ck_assert_mem_eq(data, blob, big);
	free(data);
	free(blob);

	/* sequential children */
	char s1[64], s2[64];
	ck_assert_int_eq(ctl_zk_create(zk, "/n/c-", "", 0, CTL_ZK_PERSISTENT_SEQUENTIAL, s1,
				       sizeof(s1), NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_create(zk, "/n/c-", "", 0, CTL_ZK_PERSISTENT_SEQUENTIAL, s2,
				       sizeof(s2), NULL),
			 CTL_ZK_OK);
	ck_assert_str_eq(s1, "/n/c-0000000000");
	ck_assert_str_eq(s2, "/n/c-0000000001");
	ctl_zk_children ch;
	ck_assert_int_eq(ctl_zk_get_children(zk, "/n", false, &ch, &st), CTL_ZK_OK);
	ck_assert_int_eq(ch.count, 2);
	ck_assert_int_eq(st.num_children, 2);
	ck_assert(strncmp(ch.names[0], "c-000000000", 11) == 0);
	ctl_zk_children_free(&ch);

	/* conditional delete; a node with children is refused */
	ck_assert_int_eq(ctl_zk_delete(zk, "/n", CTL_ZK_ANY_VERSION), CTL_ZK_NOTEMPTY);
	ck_assert_int_eq(ctl_zk_delete(zk, "/n/c-0000000000", 3), CTL_ZK_BADVERSION);
	ck_assert_int_eq(ctl_zk_delete(zk, "/n/c-0000000000", 0), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_delete(zk, "/n/c-0000000001", CTL_ZK_ANY_VERSION), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_delete(zk, "/n", 2), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_get(zk, "/n", false, &data, &len, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_exists(zk, "/n", false, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_delete(zk, "/n", CTL_ZK_ANY_VERSION), CTL_ZK_NONODE);

	ck_assert_int_eq(ctl_zk_ensure_path(zk, "/a/b/c"), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_ensure_path(zk, "/a/b/c"), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(zk, "/a/b/c", false, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.data_length, 0);
	ctl_zk_close(zk);
}
END_TEST

/* CLUSTER.md 2.1: the election multi, then fenced writes; a stale
 * controller epoch version fails the whole multi with ZBADVERSION (-103). */
START_TEST(test_multi_fencing)
{
	ctl_zk *zk = open_chroot("/t-multi", NULL);
	ctl_zk_stat st;
	ck_assert_int_eq(ctl_zk_create(zk, "/controller_epoch", "0", 1, CTL_ZK_PERSISTENT, NULL, 0,
				       &st),
			 CTL_ZK_OK);
	int epoch_version = st.version;
	/* win the election: create /controller and bump the epoch together */
	const char *me = "{\"version\":1,\"brokerid\":1,\"timestamp\":\"1\"}";
	ctl_zk_op elect[] = {
		ctl_zk_op_create("/controller", me, (int)strlen(me), CTL_ZK_EPHEMERAL),
		ctl_zk_op_set("/controller_epoch", "1", 1, epoch_version),
	};
	int failed = 7;
	ck_assert_int_eq(ctl_zk_multi(zk, elect, 2, &failed), CTL_ZK_OK);
	ck_assert_int_eq(failed, -1);
	ck_assert_int_eq(elect[0].err, CTL_ZK_OK);
	ck_assert_int_eq(elect[1].stat.version, 1);
	int epoch_zk_version = elect[1].stat.version;

	/* a fenced write by the current controller */
	char created[64];
	ctl_zk_op ok[] = {
		ctl_zk_op_check("/controller_epoch", epoch_zk_version),
		ctl_zk_op_create("/state", "{}", 2, CTL_ZK_PERSISTENT),
	};
	ok[1].created = created;
	ok[1].created_cap = sizeof(created);
	ck_assert_int_eq(ctl_zk_multi(zk, ok, 2, &failed), CTL_ZK_OK);
	ck_assert_str_eq(created, "/state");

	/* a zombie controller still holding the old epoch version */
	ctl_zk_op stale[] = {
		ctl_zk_op_check("/controller_epoch", epoch_version),
		ctl_zk_op_set("/state", "zombie", 6, 0),
		ctl_zk_op_create("/other", "x", 1, CTL_ZK_PERSISTENT),
	};
	ck_assert_int_eq(ctl_zk_multi(zk, stale, 3, &failed), -103);
	ck_assert_int_eq(CTL_ZK_BADVERSION, -103);
	ck_assert_int_eq(failed, 0);
	ck_assert_int_eq(stale[0].err, CTL_ZK_BADVERSION);
	ck_assert_int_eq(stale[1].err, CTL_ZK_RUNTIMEINCONSISTENCY);
	ck_assert_int_eq(stale[2].err, CTL_ZK_RUNTIMEINCONSISTENCY);
	/* nothing of it happened */
	char *data = get_str(zk, "/state", &st);
	ck_assert_str_eq(data, "{}");
	ck_assert_int_eq(st.version, 0);
	free(data);
	ck_assert_int_eq(ctl_zk_exists(zk, "/other", false, NULL), CTL_ZK_NONODE);

	/* a failure in a later op: the earlier ones are rolled back */
	ctl_zk_op later[] = {
		ctl_zk_op_create("/c", NULL, CTL_ZK_NULL_DATA, CTL_ZK_PERSISTENT),
		ctl_zk_op_delete("/state", 0),
		ctl_zk_op_create("/controller", "x", 1, CTL_ZK_PERSISTENT),
	};
	ck_assert_int_eq(ctl_zk_multi(zk, later, 3, &failed), CTL_ZK_NODEEXISTS);
	ck_assert_int_eq(failed, 2);
	ck_assert_int_eq(later[0].err, CTL_ZK_OK);
	ck_assert_int_eq(later[1].err, CTL_ZK_OK);
	ck_assert_int_eq(later[2].err, CTL_ZK_NODEEXISTS);
	ck_assert_int_eq(ctl_zk_exists(zk, "/c", false, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_exists(zk, "/state", false, NULL), CTL_ZK_OK);

	/* bad arguments are refused before anything is sent (the C client's
	 * zoo_amulti would free a refused op's path twice under a chroot) */
	ck_assert_int_eq(ctl_zk_multi(zk, later, 0, &failed), CTL_ZK_BADARGUMENTS);
	static const char *const bad_paths[] = { "relative", "/a//b", "/a/", "/a/./b", "/..",
						 "/a\nb", "" };
	for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
		ctl_zk_op bad[] = {
			ctl_zk_op_check("/controller_epoch", epoch_zk_version),
			ctl_zk_op_create(bad_paths[i], "x", 1, CTL_ZK_PERSISTENT),
			ctl_zk_op_delete("/state", 0),
		};
		ck_assert_int_eq(ctl_zk_multi(zk, bad, 3, &failed), CTL_ZK_BADARGUMENTS);
		ck_assert_int_eq(failed, -1);
		ck_assert_int_eq(ctl_zk_create(zk, bad_paths[i], "x", 1, CTL_ZK_PERSISTENT, NULL, 0,
					       NULL),
				 CTL_ZK_BADARGUMENTS);
	}
	/* a sequential create may end with '/' */
	ctl_zk_op seq = ctl_zk_op_create("/state/", "x", 1, CTL_ZK_PERSISTENT_SEQUENTIAL);
	ck_assert_int_eq(ctl_zk_multi(zk, &seq, 1, &failed), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(zk, "/state", false, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.num_children, 1);
	ctl_zk_close(zk);
}
END_TEST

/* CLUSTER.md 1.2: registration as one multi (create EPHEMERAL with null
 * data, set at version 0) whose czxid is the broker epoch. */
START_TEST(test_checked_ephemeral)
{
	ctl_zk *a = open_chroot("/t-reg", NULL);
	ctl_zk *b = open_chroot("/t-reg", NULL);
	ck_assert_int_eq(ctl_zk_ensure_path(a, "/brokers/ids"), CTL_ZK_OK);
	const char *json = "{\"version\":5}";
	int64_t epoch1 = 0, epoch2 = 0, epoch3 = 0;
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(a, "/brokers/ids/1", json, (int)strlen(json),
							 &epoch1),
			 CTL_ZK_OK);
	ck_assert(epoch1 > 0);
	ctl_zk_stat st;
	char *data = get_str(b, "/brokers/ids/1", &st);
	ck_assert_str_eq(data, json);
	free(data);
	ck_assert(st.czxid == epoch1);
	ck_assert_int_eq(st.version, 1); /* created empty, then set once */
	ck_assert(st.ephemeral_owner == ctl_zk_session_id(a));
	ck_assert(st.ephemeral_owner != 0);

	/* another session cannot take the id */
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(b, "/brokers/ids/1", json, (int)strlen(json),
							 &epoch2),
			 CTL_ZK_NODEEXISTS);
	/* the same session again (a retry after a connection loss): made anew */
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(a, "/brokers/ids/1", json, (int)strlen(json),
							 &epoch2),
			 CTL_ZK_OK);
	ck_assert(epoch2 > epoch1);

	/* the ephemeral node goes with its session; another may register */
	ctl_zk_close(a);
	ck_assert_int_eq(ctl_zk_exists(b, "/brokers/ids/1", false, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_create_ephemeral_checked(b, "/brokers/ids/1", json, (int)strlen(json),
							 &epoch3),
			 CTL_ZK_OK);
	ck_assert(epoch3 > epoch2);
	ctl_zk_close(b);
}
END_TEST

START_TEST(test_ephemeral_gone_after_close)
{
	ctl_zk *a = open_chroot("/t-eph", NULL);
	ctl_zk *b = open_chroot("/t-eph", NULL);
	ctl_zk_stat st;
	ck_assert_int_eq(ctl_zk_create(a, "/e", "x", 1, CTL_ZK_EPHEMERAL, NULL, 0, &st), CTL_ZK_OK);
	ck_assert(st.ephemeral_owner == ctl_zk_session_id(a));
	ck_assert_int_eq(ctl_zk_create(a, "/e/child", "x", 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_NOCHILDRENFOREPHEMERALS);
	char seq[64];
	ck_assert_int_eq(ctl_zk_create(a, "/s-", "x", 1, CTL_ZK_EPHEMERAL_SEQUENTIAL, seq,
				       sizeof(seq), NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(b, "/e", false, NULL), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(b, seq, false, NULL), CTL_ZK_OK);
	ctl_zk_close(a);
	ck_assert_int_eq(ctl_zk_exists(b, "/e", false, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_exists(b, seq, false, NULL), CTL_ZK_NONODE);
	ctl_zk_close(b);
}
END_TEST

/* Watches fire once and must be armed again (no persistent watches in the
 * 3.8 C API). */
START_TEST(test_watch_once)
{
	recorder r;
	rec_init(&r);
	ctl_zk *zk = open_chroot("/t-watch", &r);
	ctl_zk *other = open_chroot("/t-watch", NULL);
	int at = 0;
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTED, NULL, 1000),
			 0);

	/* exists on a missing node: fires on its creation */
	ck_assert_int_eq(ctl_zk_exists(zk, "/w", true, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_create(other, "/w", "1", 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_CREATED, -1, "/w", 5000), 0);

	/* fired: a change now goes unseen */
	int mark = rec_len(&r);
	ck_assert_int_eq(ctl_zk_set(other, "/w", "2", 1, CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	/* a round trip on the same session orders us after any event of that set */
	ck_assert_int_eq(ctl_zk_exists(zk, "/w", false, NULL), CTL_ZK_OK);
	usleep(300 * 1000);
	ck_assert_int_eq(rec_len(&r), mark);

	/* armed again by a read: one CHANGED for two sets */
	char *data;
	int len;
	ck_assert_int_eq(ctl_zk_get(zk, "/w", true, &data, &len, NULL), CTL_ZK_OK);
	free(data);
	ck_assert_int_eq(ctl_zk_set(other, "/w", "3", 1, CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_set(other, "/w", "4", 1, CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_CHANGED, -1, "/w", 5000), 0);
	ck_assert_int_eq(ctl_zk_exists(zk, "/w", false, NULL), CTL_ZK_OK);
	usleep(300 * 1000);
	ck_assert_int_eq(rec_count(&r, mark, CTL_ZK_EVENT_CHANGED), 1);

	/* children watch */
	ctl_zk_children ch;
	ck_assert_int_eq(ctl_zk_get_children(zk, "/w", true, &ch, NULL), CTL_ZK_OK);
	ck_assert_int_eq(ch.count, 0);
	ctl_zk_children_free(&ch);
	ck_assert_int_eq(ctl_zk_create(other, "/w/c", "", 0, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_CHILD, -1, "/w", 5000), 0);

	/* a data watch sees the deletion */
	ck_assert_int_eq(ctl_zk_get(zk, "/w/c", true, &data, &len, NULL), CTL_ZK_OK);
	free(data);
	ck_assert_int_eq(ctl_zk_delete(other, "/w/c", CTL_ZK_ANY_VERSION), CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_DELETED, -1, "/w/c", 5000), 0);
	ctl_zk_close(other);
	ctl_zk_close(zk);
}
END_TEST

/* The usual trick: a second client takes the session id and password and
 * closes the session. The owner learns it through the callback, every call
 * then says SESSIONEXPIRED, and reopen makes a new session. */
START_TEST(test_session_expiry)
{
	recorder r;
	rec_init(&r);
	ctl_zk *zk = open_chroot("/t-expiry", &r);
	ctl_zk *other = open_chroot("/t-expiry", NULL);
	int at = 0;
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTED, NULL, 1000),
			 0);
	int64_t sid = ctl_zk_session_id(zk);
	ck_assert(sid != 0);
	ck_assert_int_ge(ctl_zk_session_timeout(zk), 1000);
	ck_assert_int_eq(ctl_zk_create(zk, "/mine", "x", 1, CTL_ZK_EPHEMERAL, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(zk, "/mine", true, NULL), CTL_ZK_OK);

	ck_assert_int_eq(ctl_zk_expire_session_for_test(zk), CTL_ZK_OK);
	ck_assert_msg(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_EXPIRED_SESSION, NULL,
			       h_scaled_ms(15000)) >= 0,
		      "no expiry event");
	ck_assert_int_eq(ctl_zk_state(zk), CTL_ZK_STATE_EXPIRED_SESSION);
	char *data;
	int len;
	ck_assert_int_eq(ctl_zk_get(zk, "/mine", false, &data, &len, NULL), CTL_ZK_SESSIONEXPIRED);
	ck_assert_int_eq(ctl_zk_create(zk, "/x", "x", 1, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_SESSIONEXPIRED);
	ctl_zk_op op = ctl_zk_op_check("/", 0);
	int failed;
	ck_assert_int_eq(ctl_zk_multi(zk, &op, 1, &failed), CTL_ZK_SESSIONEXPIRED);
	ck_assert_int_eq(failed, -1);
	/* the server dropped the session's ephemeral node */
	ck_assert_int_eq(ctl_zk_exists(other, "/mine", false, NULL), CTL_ZK_NONODE);

	/* a new session; the owner registers again */
	ck_assert_int_eq(ctl_zk_reopen(zk), CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTED, NULL, 1000),
			 0);
	ck_assert_int_eq(ctl_zk_state(zk), CTL_ZK_STATE_CONNECTED);
	ck_assert(ctl_zk_session_id(zk) != sid);
	ck_assert_int_eq(ctl_zk_exists(zk, "/mine", false, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_create(zk, "/mine", "y", 1, CTL_ZK_EPHEMERAL, NULL, 0, NULL),
			 CTL_ZK_OK);
	ctl_zk_close(zk);
	ck_assert_int_eq(ctl_zk_exists(other, "/mine", false, NULL), CTL_ZK_NONODE);
	ctl_zk_close(other);
}
END_TEST

START_TEST(test_chroot_created)
{
	recorder r;
	rec_init(&r);
	ctl_zk *root = open_chroot(NULL, NULL);
	ck_assert_int_eq(ctl_zk_exists(root, "/t-chroot", false, NULL), CTL_ZK_NONODE);
	ctl_zk *zk = open_chroot("/t-chroot/kafka", &r);
	ctl_zk_stat st;
	ck_assert_int_eq(ctl_zk_exists(root, "/t-chroot/kafka", false, &st), CTL_ZK_OK);
	ck_assert_int_eq(st.data_length, 0);
	/* paths inside are relative to the chroot, events too */
	ck_assert_int_eq(ctl_zk_exists(zk, "/brokers", true, NULL), CTL_ZK_NONODE);
	ck_assert_int_eq(ctl_zk_create(root, "/t-chroot/kafka/brokers", "b", 1, CTL_ZK_PERSISTENT,
				       NULL, 0, NULL),
			 CTL_ZK_OK);
	int at = 0;
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_CREATED, -1, "/brokers", 5000), 0);
	char *data = get_str(zk, "/brokers", NULL);
	ck_assert_str_eq(data, "b");
	free(data);
	ctl_zk_close(zk);
	/* an existing chroot is fine; "/" means none */
	zk = open_chroot("/t-chroot/kafka", NULL);
	ctl_zk_close(zk);
	zk = open_chroot("/", NULL);
	ck_assert_int_eq(ctl_zk_exists(zk, "/t-chroot/kafka/brokers", false, NULL), CTL_ZK_OK);
	ctl_zk_close(zk);
	ctl_zk_close(root);
}
END_TEST

START_TEST(test_open_refused)
{
	ctl_zk *zk = (ctl_zk *)&zk; /* must be cleared */
	ctl_zk_config cfg = { .connect = "", .session_timeout_ms = SESSION_MS };
	ck_assert_int_eq(ctl_zk_open(&cfg, &zk), CTL_ZK_BADARGUMENTS);
	ck_assert_ptr_null(zk);
	cfg.connect = "/only-a-chroot";
	ck_assert_int_eq(ctl_zk_open(&cfg, &zk), CTL_ZK_BADARGUMENTS);
	char bad[96];
	snprintf(bad, sizeof(bad), "%s/trailing/", zk_hosts);
	cfg.connect = bad;
	ck_assert_int_eq(ctl_zk_open(&cfg, &zk), CTL_ZK_BADARGUMENTS);
	/* nobody listens: the connection timeout ends the wait */
	char none[64];
	snprintf(none, sizeof(none), "127.0.0.1:%d", h_free_port());
	cfg.connect = none;
	cfg.connection_timeout_ms = 1500;
	cfg.log_level = CTL_ZK_LOG_QUIET;
	long long t0 = h_now_ms();
	ck_assert_int_eq(ctl_zk_open(&cfg, &zk), CTL_ZK_OPERATIONTIMEOUT);
	long long took = h_now_ms() - t0;
	ck_assert_msg(took >= 1400 && took < h_scaled_ms(5000), "took %lld ms", took);
	ck_assert_ptr_null(zk);
}
END_TEST

/* The harness's kill -9 and restart on the same port and data dir, as the
 * ZooKeeper-outage tests will use them: the client sees the disconnect,
 * calls fail fast meanwhile, and the session (with its ephemeral node)
 * survives a restart within the session timeout. */
START_TEST(test_zookeeper_outage)
{
	h_zk *z = h_zk_new();
	ck_assert_ptr_nonnull(z);
	ck_assert_int_eq(h_zk_start(z), 0);
	recorder r;
	rec_init(&r);
	ctl_zk *zk = open_at(z->connect, "/kafka", &r);
	int at = 0;
	int64_t sid = ctl_zk_session_id(zk);
	ck_assert_int_eq(ctl_zk_create(zk, "/p", "persistent", 10, CTL_ZK_PERSISTENT, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_create(zk, "/e", "ephemeral", 9, CTL_ZK_EPHEMERAL, NULL, 0, NULL),
			 CTL_ZK_OK);
	ck_assert_int_eq(ctl_zk_exists(zk, "/p", true, NULL), CTL_ZK_OK);

	ck_assert_int_eq(h_zk_kill(z), 0);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTING, NULL,
				  h_scaled_ms(10000)),
			 0);
	char *data;
	int len;
	long long t0 = h_now_ms();
	ck_assert_int_eq(ctl_zk_get(zk, "/p", false, &data, &len, NULL), CTL_ZK_CONNECTIONLOSS);
	ck_assert_int_lt(h_now_ms() - t0, SESSION_MS);

	ck_assert_int_eq(h_zk_restart(z), 0);
	fprintf(stderr, "test_zk: ZooKeeper restarted in %lld ms\n", z->start_ms);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTED, NULL,
				  h_scaled_ms(10000)),
			 0);
	ck_assert(ctl_zk_session_id(zk) == sid);
	data = get_str(zk, "/p", NULL);
	ck_assert_str_eq(data, "persistent");
	free(data);
	ck_assert_int_eq(ctl_zk_exists(zk, "/e", false, NULL), CTL_ZK_OK);
	/* the watch armed before the outage was set again on reconnect */
	ck_assert_int_eq(ctl_zk_set(zk, "/p", "changed", 7, CTL_ZK_ANY_VERSION, NULL), CTL_ZK_OK);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_CHANGED, -1, "/p", 5000), 0);

	/* a clean stop, then a restart again */
	ck_assert_int_ge(h_zk_stop(z, h_scaled_ms(10000)), 0);
	ck_assert(!h_zk_alive(z));
	ck_assert_int_eq(h_zk_restart(z), 0);
	ck_assert_int_ge(rec_wait(&r, &at, CTL_ZK_EVENT_SESSION, CTL_ZK_STATE_CONNECTED, NULL,
				  h_scaled_ms(10000)),
			 0);
	ck_assert_int_eq(ctl_zk_exists(zk, "/e", false, NULL), CTL_ZK_OK);
	ctl_zk_close(zk);
	h_zk_free(z);
}
END_TEST

int main(void)
{
	if (h_init() < 0)
		return EXIT_FAILURE;
	h_zk *z = h_zk_new();
	if (!z || h_zk_start(z) < 0) {
		fprintf(stderr, "test_zk: cannot start ZooKeeper\n");
		h_zk_free(z);
		return EXIT_FAILURE;
	}
	fprintf(stderr, "test_zk: ZooKeeper on %s ready in %lld ms\n", z->connect, z->start_ms);
	snprintf(zk_hosts, sizeof(zk_hosts), "%s", z->connect);

	Suite *s = suite_create("zk");
	TCase *tc = tcase_create("zookeeper");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_get_set_delete);
	tcase_add_test(tc, test_multi_fencing);
	tcase_add_test(tc, test_checked_ephemeral);
	tcase_add_test(tc, test_ephemeral_gone_after_close);
	tcase_add_test(tc, test_watch_once);
	tcase_add_test(tc, test_session_expiry);
	tcase_add_test(tc, test_chroot_created);
	tcase_add_test(tc, test_open_refused);
	tcase_add_test(tc, test_zookeeper_outage);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		h_zk_dump_log(z, stderr, 40);
	h_zk_free(z);
	h_fini();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
