/*
 * zk.h - one ZooKeeper session for cluster mode, over ZooKeeper's
 * multi-threaded C client (zookeeper_mt, Debian's libzookeeper-mt-dev 3.8).
 *
 * Threads. The C client runs two threads of its own per session: an I/O
 * thread and a completion thread. Every function here is synchronous: it
 * sends one request and blocks its caller until the server answers or the
 * connection is lost, which ZooKeeper detects within about 2/3 of the
 * negotiated session timeout. So they are for the controller thread, never
 * for the broker's event loop. One thread owns a ctl_zk: the functions are
 * not meant to be called concurrently on one handle (ctl_zk_reopen and
 * ctl_zk_close replace or free what the others use).
 *
 * Events. Session changes and watch triggers are delivered to the owner's
 * callback (ctl_zk_config.on_event), called on the client's completion
 * thread with (arg, type, state, path). The callback must only record or
 * queue the event and return: it must not block, must not call any ctl_zk_
 * function (the completion thread is the one that would complete that call:
 * a deadlock) and must not free the ctl_zk. Kafka's controller does the
 * same: watch handlers only enqueue controller events (CLUSTER.md 2.1 item 6,
 * 6.2 item 10).
 *
 * Watches (ZooKeeper 3.8's C API): one-shot. A get, get_children or exists
 * with watch=true arms one watch on that path; it fires once (CHANGED or
 * DELETED for a data/exists watch, CREATED for an exists watch on a missing
 * node, CHILD for a children watch) and must be armed again by reading
 * again. Changes between the trigger and the re-read collapse into what the
 * re-read returns. The client re-arms pending watches by itself after a
 * reconnect within the same session; a new session has none.
 *
 * Session. ctl_zk_open connects and waits (connection_timeout_ms) for the
 * session. A disconnect is not an expiry: the client reconnects by itself
 * (events CONNECTING then CONNECTED) and the session, its ephemeral nodes
 * and its watches survive if it is back within the session timeout. Expiry
 * is decided by the server and learnt when the client reconnects: the
 * callback gets (SESSION, EXPIRED_SESSION, NULL) and from then on every call
 * returns CTL_ZK_SESSIONEXPIRED. The owner then calls ctl_zk_reopen, which
 * makes a new session on the same handle, and re-creates its ephemeral
 * nodes and re-arms its watches (Kafka re-registers the broker, CLUSTER.md
 * 1.2, which gives it a new czxid: a new broker epoch).
 *
 * Return codes are ZooKeeper's own (enum ZOO_ERRORS), mirrored below so that
 * callers need not include zookeeper.h: CTL_ZK_OK, CTL_ZK_NONODE, ... A
 * value not listed is another ZooKeeper code; ctl_zk_strerror names any.
 *
 * Logging. ZooKeeper's client library writes its own log lines to stderr;
 * ctl_zk_open sets its process-wide level from ctl_zk_config.log_level
 * (WARN by default, never INFO or DEBUG, so broker logs stay readable).
 */
#ifndef SAMSA_CONTROLLER_ZK_H
#define SAMSA_CONTROLLER_ZK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ZooKeeper's return codes (zookeeper.h, enum ZOO_ERRORS; zk.c checks the
 * values at compile time). */
enum {
	CTL_ZK_OK = 0,
	CTL_ZK_SYSTEMERROR = -1,
	CTL_ZK_RUNTIMEINCONSISTENCY = -2, /* multi: an op after the failing one */
	CTL_ZK_CONNECTIONLOSS = -4,       /* the request may or may not have been applied */
	CTL_ZK_MARSHALLINGERROR = -5,
	CTL_ZK_OPERATIONTIMEOUT = -7,     /* ctl_zk_open: no session in time */
	CTL_ZK_BADARGUMENTS = -8,
	CTL_ZK_INVALIDSTATE = -9,
	CTL_ZK_NONODE = -101,
	CTL_ZK_NOAUTH = -102,
	CTL_ZK_BADVERSION = -103,
	CTL_ZK_NOCHILDRENFOREPHEMERALS = -108,
	CTL_ZK_NODEEXISTS = -110,
	CTL_ZK_NOTEMPTY = -111,
	CTL_ZK_SESSIONEXPIRED = -112,
	CTL_ZK_AUTHFAILED = -115,
	CTL_ZK_CLOSING = -116,
};

/* Event types given to the callback (ZooKeeper's *_EVENT values). */
enum {
	CTL_ZK_EVENT_CREATED = 1,      /* exists watch: the node was created */
	CTL_ZK_EVENT_DELETED = 2,      /* data or exists watch: deleted */
	CTL_ZK_EVENT_CHANGED = 3,      /* data or exists watch: data set */
	CTL_ZK_EVENT_CHILD = 4,        /* children watch: a child came or went */
	CTL_ZK_EVENT_SESSION = -1,     /* session state change; path is NULL */
	CTL_ZK_EVENT_NOTWATCHING = -2, /* a watch was removed */
};

/* Session states given to the callback (ZooKeeper's *_STATE values). */
enum {
	CTL_ZK_STATE_CONNECTING = 1,
	CTL_ZK_STATE_ASSOCIATING = 2,
	CTL_ZK_STATE_CONNECTED = 3,
	CTL_ZK_STATE_READONLY = 5,
	CTL_ZK_STATE_NOTCONNECTED = 999,
	CTL_ZK_STATE_EXPIRED_SESSION = -112,
	CTL_ZK_STATE_AUTH_FAILED = -113,
};

/* Create modes. */
enum {
	CTL_ZK_PERSISTENT = 0,
	CTL_ZK_EPHEMERAL = 1,
	CTL_ZK_PERSISTENT_SEQUENTIAL = 2, /* the server appends a 10-digit counter */
	CTL_ZK_EPHEMERAL_SEQUENTIAL = 3,
};

/* Log levels of ZooKeeper's client library (process-wide). */
enum {
	CTL_ZK_LOG_WARN = 0,  /* default */
	CTL_ZK_LOG_ERROR = 1,
	CTL_ZK_LOG_QUIET = 2,
};

/* Version argument that matches any version (set, delete). */
#define CTL_ZK_ANY_VERSION (-1)
/* Data length that writes null data (create, set). */
#define CTL_ZK_NULL_DATA (-1)

/* A znode's stat (ZooKeeper's struct Stat). */
typedef struct ctl_zk_stat {
	int64_t czxid;           /* zxid of the create: Kafka's broker epoch for
	                          * /brokers/ids/<id> (KIP-380) */
	int64_t mzxid;           /* zxid of the last data change */
	int64_t pzxid;           /* zxid of the last child change */
	int64_t ctime;           /* ms since the epoch */
	int64_t mtime;
	int32_t version;         /* data version: the zkVersion of Kafka (partition
	                          * epoch of a state znode) */
	int32_t cversion;        /* child version */
	int32_t aversion;        /* ACL version */
	int64_t ephemeral_owner; /* session id of the owner, 0 if persistent */
	int32_t data_length;
	int32_t num_children;
} ctl_zk_stat;

/* Watch and session events; see "Events" above for the rules. type is a
 * CTL_ZK_EVENT_*, state a CTL_ZK_STATE_*, path is relative to the chroot
 * (NULL for session events) and valid only during the call. */
typedef void (*ctl_zk_event_fn)(void *arg, int type, int state, const char *path);

typedef struct ctl_zk_config {
	/* zookeeper.connect: "host:port[,host:port...][/chroot]",
	 * e.g. "127.0.0.1:2181/kafka". With a chroot every path is relative to
	 * it, and ctl_zk_open creates the chroot path when it is missing (as
	 * Kafka does at startup). */
	const char *connect;
	int session_timeout_ms;    /* zookeeper.session.timeout.ms (Kafka: 18000);
	                            * the server clamps it to [2, 20] ticks */
	int connection_timeout_ms; /* zookeeper.connection.timeout.ms: open fails
	                            * when no session is made within it (Kafka's
	                            * default: the session timeout); <= 0 means that */
	ctl_zk_event_fn on_event;  /* optional */
	void *arg;                 /* passed to on_event */
	int log_level;             /* CTL_ZK_LOG_* */
} ctl_zk_config;

typedef struct ctl_zk ctl_zk;

/*
 * Connect and wait for a session. The config's strings are copied. Returns
 * CTL_ZK_OK with *out, or CTL_ZK_BADARGUMENTS (a malformed connect string),
 * CTL_ZK_OPERATIONTIMEOUT (no session within the connection timeout),
 * CTL_ZK_SYSTEMERROR (out of memory, thread creation...) or the error of
 * creating the chroot path. The callback gets the events of this session
 * from the start (CONNECTED among them).
 */
int ctl_zk_open(const ctl_zk_config *cfg, ctl_zk **out);

/* Close the session (the server deletes its ephemeral nodes at once) and
 * free. No callback runs after it returns. NULL is a no-op. */
void ctl_zk_close(ctl_zk *zk);

/*
 * A new session on the same handle, after expiry (or to drop a session on
 * purpose): closes the old one, then connects as ctl_zk_open does (same
 * config and callback; the chroot is not checked again). Ephemeral nodes
 * and watches of the old session are gone. Same return codes as open; on
 * failure the handle has no session (every call returns
 * CTL_ZK_SESSIONEXPIRED) and reopen may be tried again.
 */
int ctl_zk_reopen(ctl_zk *zk);

/* The last session state seen (CTL_ZK_STATE_*). */
int ctl_zk_state(const ctl_zk *zk);
/* The session id (ZooKeeper's client id; what a node's ephemeral_owner
 * holds), 0 without a session. */
int64_t ctl_zk_session_id(const ctl_zk *zk);
/* The session timeout the server granted, ms (0 without a session). */
int ctl_zk_session_timeout(const ctl_zk *zk);
/* "ZBADVERSION"-style text of a return code (static storage). */
const char *ctl_zk_strerror(int rc);

/*
 * Data of path. *data gets a malloc'd copy (caller frees) with a NUL after
 * its *len bytes, or NULL with *len = -1 when the node holds null data.
 * stat optional. watch arms a data watch if the node exists (on NONODE no
 * watch is left: ctl_zk_exists watches for a creation). CTL_ZK_OK,
 * CTL_ZK_NONODE, CTL_ZK_BADARGUMENTS (a malformed path), or a session or
 * connection error. Paths of every call follow ZooKeeper's rules (absolute,
 * no empty, "." or ".." component, no trailing '/' but for a sequential
 * create, no control character) and are checked before anything is sent.
 */
int ctl_zk_get(ctl_zk *zk, const char *path, bool watch, char **data, int *len,
	       ctl_zk_stat *stat);

/* Children of path: names without the parent path. Free with
 * ctl_zk_children_free. */
typedef struct ctl_zk_children {
	int32_t count;
	char **names;
} ctl_zk_children;

/* stat (of path) optional; watch arms a children watch. */
int ctl_zk_get_children(ctl_zk *zk, const char *path, bool watch, ctl_zk_children *out,
			ctl_zk_stat *stat);
void ctl_zk_children_free(ctl_zk_children *c);

/* CTL_ZK_OK (stat filled when given) or CTL_ZK_NONODE. watch arms a watch
 * in both cases: CREATED when a missing node appears, CHANGED or DELETED
 * when an existing one changes. */
int ctl_zk_exists(ctl_zk *zk, const char *path, bool watch, ctl_zk_stat *stat);

/*
 * Create path with len bytes of data (CTL_ZK_NULL_DATA for null data) in
 * mode CTL_ZK_*, open ACL (Kafka's default without zookeeper.set.acl). The
 * created path (the sequential name for *_SEQUENTIAL; relative to the
 * chroot) goes to created (optional, NUL-terminated, truncated to cap), and
 * its stat to stat (optional). CTL_ZK_NODEEXISTS, CTL_ZK_NONODE (no parent),
 * CTL_ZK_NOCHILDRENFOREPHEMERALS...
 */
int ctl_zk_create(ctl_zk *zk, const char *path, const char *data, int len, int mode,
		  char *created, size_t cap, ctl_zk_stat *stat);

/* Set data if the node's version is version (CTL_ZK_ANY_VERSION: any);
 * stat (optional) gets the new stat. CTL_ZK_BADVERSION when it differs. */
int ctl_zk_set(ctl_zk *zk, const char *path, const char *data, int len, int version,
	       ctl_zk_stat *stat);

/* Delete if the node's version is version (CTL_ZK_ANY_VERSION: any).
 * CTL_ZK_BADVERSION, CTL_ZK_NONODE, CTL_ZK_NOTEMPTY. */
int ctl_zk_delete(ctl_zk *zk, const char *path, int version);

/* ---- multi: all ops or none ---- */

enum {
	CTL_ZK_OP_CREATE = 1,
	CTL_ZK_OP_DELETE = 2,
	CTL_ZK_OP_SET = 3,
	CTL_ZK_OP_CHECK = 4,
};

typedef struct ctl_zk_op {
	int type;            /* CTL_ZK_OP_* */
	const char *path;
	const char *data;    /* create, set */
	int len;             /* create, set: CTL_ZK_NULL_DATA for null data */
	int mode;            /* create: CTL_ZK_* mode */
	int version;         /* set, delete: expected version or CTL_ZK_ANY_VERSION;
	                      * check: the expected version */
	char *created;       /* create: optional buffer for the created path */
	size_t created_cap;
	/* results, filled by ctl_zk_multi */
	int err;             /* this op's code: CTL_ZK_OK for ops before the failing
	                      * one (rolled back), CTL_ZK_RUNTIMEINCONSISTENCY
	                      * after it */
	ctl_zk_stat stat;    /* set: the new stat of the node */
} ctl_zk_op;

/* Op builders (results zeroed). */
ctl_zk_op ctl_zk_op_create(const char *path, const char *data, int len, int mode);
ctl_zk_op ctl_zk_op_delete(const char *path, int version);
ctl_zk_op ctl_zk_op_set(const char *path, const char *data, int len, int version);
ctl_zk_op ctl_zk_op_check(const char *path, int version);

/*
 * Run n ops (1 <= n <= CTL_ZK_MULTI_MAX) as one transaction: all succeed or
 * none is applied. Returns CTL_ZK_OK, or the first failing op's code with
 * *failed (optional) = its index; for a whole-request error (connection
 * loss, expired session) *failed = -1 and the ops' err are not meaningful.
 * Kafka's fencing (CLUSTER.md 2.1, 6.2): a first op
 * ctl_zk_op_check("/controller_epoch", epoch_zk_version) turns any
 * controller write into one that fails with CTL_ZK_BADVERSION once another
 * controller was elected.
 */
#define CTL_ZK_MULTI_MAX 10000
int ctl_zk_multi(ctl_zk *zk, ctl_zk_op *ops, int n, int *failed);

/*
 * Kafka's checked ephemeral create (KafkaZkClient.registerBroker, CLUSTER.md
 * 1.2): one multi that creates path as an EPHEMERAL node with null data and
 * sets data at version 0, so *czxid (optional) is the node's czxid read from
 * the set's stat: the broker epoch. When the node exists and belongs to this
 * same session (a retry after a connection loss, ZOOKEEPER-2985), it is
 * deleted and created again once. CTL_ZK_NODEEXISTS when another session
 * owns it.
 */
int ctl_zk_create_ephemeral_checked(ctl_zk *zk, const char *path, const char *data, int len,
				    int64_t *czxid);

/*
 * Create path and its missing parents as PERSISTENT nodes with null data
 * (Kafka's makeSurePersistentPathExists). CTL_ZK_OK when it exists already.
 */
int ctl_zk_ensure_path(ctl_zk *zk, const char *path);

/*
 * Test aid: expire this handle's session from the server's side, the usual
 * way: a second client attaches to the same session id and password and
 * closes it. The callback then sees the expiry (SESSION, EXPIRED_SESSION)
 * once the client notices, usually within a second. CTL_ZK_OK when the
 * second client closed the session.
 */
int ctl_zk_expire_session_for_test(ctl_zk *zk);

#endif
