/*
 * zk.c - one ZooKeeper session over the multi-threaded C client (zk.h).
 *
 * The handle's global watcher (zk_watcher) receives every session event and
 * every watch trigger on the client's completion thread. It records the
 * session state under conn.mu (ctl_zk_open and ctl_zk_reopen wait on
 * conn.cv for CONNECTED) and forwards the event to the owner's callback.
 * The state is also kept in an atomic so ctl_zk_state needs no lock.
 */
#include "controller/zk.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

/* zk.h mirrors ZooKeeper's return codes. */
#define SAME_CODE(x) _Static_assert((int)CTL_ZK_##x == (int)Z##x, "CTL_ZK_" #x)
SAME_CODE(OK);
SAME_CODE(SYSTEMERROR);
SAME_CODE(RUNTIMEINCONSISTENCY);
SAME_CODE(CONNECTIONLOSS);
SAME_CODE(MARSHALLINGERROR);
SAME_CODE(OPERATIONTIMEOUT);
SAME_CODE(BADARGUMENTS);
SAME_CODE(INVALIDSTATE);
SAME_CODE(NONODE);
SAME_CODE(NOAUTH);
SAME_CODE(BADVERSION);
SAME_CODE(NOCHILDRENFOREPHEMERALS);
SAME_CODE(NODEEXISTS);
SAME_CODE(NOTEMPTY);
SAME_CODE(SESSIONEXPIRED);
SAME_CODE(AUTHFAILED);
SAME_CODE(CLOSING);

/* What a watcher context needs: a state to wait for, and (for the owner's
 * handle) the owner to forward events to. */
typedef struct zk_conn {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* CLOCK_MONOTONIC */
	int state;           /* CTL_ZK_STATE_* of the last session event, 0 none */
	ctl_zk *owner;       /* NULL: a helper session, events not forwarded */
} zk_conn;

struct ctl_zk {
	char *connect;            /* as configured, chroot included */
	char *hosts;              /* without the chroot */
	char *chroot;             /* NULL, or "/kafka" */
	int session_timeout_ms;
	int connection_timeout_ms;
	ctl_zk_event_fn on_event;
	void *arg;
	zhandle_t *zh;            /* NULL after a failed reopen */
	zk_conn conn;
	atomic_int state;         /* mirror of conn.state for ctl_zk_state */
};

/* ---- events ---- */

static int map_state(int s)
{
	if (s == ZOO_CONNECTED_STATE)
		return CTL_ZK_STATE_CONNECTED;
	if (s == ZOO_CONNECTING_STATE)
		return CTL_ZK_STATE_CONNECTING;
	if (s == ZOO_ASSOCIATING_STATE)
		return CTL_ZK_STATE_ASSOCIATING;
	if (s == ZOO_EXPIRED_SESSION_STATE)
		return CTL_ZK_STATE_EXPIRED_SESSION;
	if (s == ZOO_AUTH_FAILED_STATE)
		return CTL_ZK_STATE_AUTH_FAILED;
	if (s == ZOO_READONLY_STATE)
		return CTL_ZK_STATE_READONLY;
	if (s == ZOO_NOTCONNECTED_STATE)
		return CTL_ZK_STATE_NOTCONNECTED;
	return s;
}

static int map_type(int t)
{
	if (t == ZOO_CREATED_EVENT)
		return CTL_ZK_EVENT_CREATED;
	if (t == ZOO_DELETED_EVENT)
		return CTL_ZK_EVENT_DELETED;
	if (t == ZOO_CHANGED_EVENT)
		return CTL_ZK_EVENT_CHANGED;
	if (t == ZOO_CHILD_EVENT)
		return CTL_ZK_EVENT_CHILD;
	if (t == ZOO_SESSION_EVENT)
		return CTL_ZK_EVENT_SESSION;
	if (t == ZOO_NOTWATCHING_EVENT)
		return CTL_ZK_EVENT_NOTWATCHING;
	return t;
}

/* Runs on the client's completion thread. */
static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh;
	zk_conn *c = ctx;
	int t = map_type(type), s = map_state(state);
	if (t == CTL_ZK_EVENT_SESSION) {
		pthread_mutex_lock(&c->mu);
		c->state = s;
		if (c->owner)
			atomic_store(&c->owner->state, s);
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		path = NULL;
	}
	if (c->owner && c->owner->on_event)
		c->owner->on_event(c->owner->arg, t, s, path);
}

static int conn_init(zk_conn *c, ctl_zk *owner)
{
	pthread_condattr_t ca;
	c->state = 0;
	c->owner = owner;
	if (pthread_mutex_init(&c->mu, NULL) != 0)
		return -1;
	if (pthread_condattr_init(&ca) != 0 ||
	    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&c->cv, &ca) != 0) {
		pthread_mutex_destroy(&c->mu);
		return -1;
	}
	pthread_condattr_destroy(&ca);
	return 0;
}

static void conn_destroy(zk_conn *c)
{
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
}

/* Wait until c's session is connected, expired or refused, at most
 * timeout_ms. */
static int conn_wait(zk_conn *c, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->mu);
	while (c->state != CTL_ZK_STATE_CONNECTED && c->state != CTL_ZK_STATE_EXPIRED_SESSION &&
	       c->state != CTL_ZK_STATE_AUTH_FAILED) {
		if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT)
			break;
	}
	int s = c->state;
	pthread_mutex_unlock(&c->mu);
	if (s == CTL_ZK_STATE_CONNECTED)
		return ZOK;
	if (s == CTL_ZK_STATE_EXPIRED_SESSION)
		return ZSESSIONEXPIRED;
	if (s == CTL_ZK_STATE_AUTH_FAILED)
		return ZAUTHFAILED;
	return ZOPERATIONTIMEOUT;
}

/* A connected handle on connect (hosts[/chroot]) for context c, or NULL with
 * *rc set. clientid: NULL for a new session. */
static zhandle_t *connect_handle(const char *connect, zk_conn *c, int session_timeout_ms,
				 int connection_timeout_ms, const clientid_t *clientid, int *rc)
{
	pthread_mutex_lock(&c->mu);
	c->state = 0;
	pthread_mutex_unlock(&c->mu);
	errno = 0;
	zhandle_t *zh = zookeeper_init2(connect, zk_watcher, session_timeout_ms, clientid, c,
					ZOO_NO_LOG_CLIENTENV, NULL);
	if (!zh) {
		*rc = errno == EINVAL ? ZBADARGUMENTS : ZSYSTEMERROR;
		return NULL;
	}
	*rc = conn_wait(c, connection_timeout_ms);
	if (*rc != ZOK) {
		zookeeper_close(zh);
		return NULL;
	}
	return zh;
}

/* ---- helpers ---- */

static void stat_from(ctl_zk_stat *out, const struct Stat *s)
{
	out->czxid = s->czxid;
	out->mzxid = s->mzxid;
	out->pzxid = s->pzxid;
	out->ctime = s->ctime;
	out->mtime = s->mtime;
	out->version = s->version;
	out->cversion = s->cversion;
	out->aversion = s->aversion;
	out->ephemeral_owner = s->ephemeralOwner;
	out->data_length = s->dataLength;
	out->num_children = s->numChildren;
}

/* ZooKeeper answers ZINVALIDSTATE once a session is expired; say so. */
static int fix_rc(const ctl_zk *zk, int rc)
{
	if (rc == ZINVALIDSTATE) {
		int s = atomic_load(&zk->state);
		if (s == CTL_ZK_STATE_AUTH_FAILED)
			return ZAUTHFAILED;
		return ZSESSIONEXPIRED;
	}
	return rc;
}

static int create_flags(int mode)
{
	switch (mode) {
	case CTL_ZK_PERSISTENT: return ZOO_PERSISTENT;
	case CTL_ZK_EPHEMERAL: return ZOO_EPHEMERAL;
	case CTL_ZK_PERSISTENT_SEQUENTIAL: return ZOO_PERSISTENT_SEQUENTIAL;
	case CTL_ZK_EPHEMERAL_SEQUENTIAL: return ZOO_EPHEMERAL_SEQUENTIAL;
	default: return -1;
	}
}

/*
 * ZooKeeper's path rules, as the C client checks them (isValidPath): an
 * absolute path, no empty, "." or ".." component, no trailing '/' except for
 * the root or a sequential create's prefix, no control character. zk.c
 * checks every path itself first, for two reasons. Under a chroot the client
 * checks chroot + path, so "relative" would pass as "/chrootrelative". And
 * when the client refuses an op of a multi, zoo_amulti frees that op's path
 * twice (under a chroot) and frees uninitialized pointers for the ops after
 * it (3.8.0's zookeeper.c).
 */
static bool valid_path(const char *p, bool sequential)
{
	size_t n = p ? strlen(p) : 0;
	if (n == 0 || p[0] != '/')
		return false;
	if (n == 1)
		return true;
	if (p[n - 1] == '/' && !sequential)
		return false;
	for (size_t i = 1; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c == '/' && p[i - 1] == '/')
			return false;
		if (p[i - 1] == '/' && c == '.') {
			/* "." or ".." as a whole component */
			size_t j = i + 1;
			if (j < n && p[j] == '.')
				j++;
			if (j == n ? !sequential : p[j] == '/')
				return false;
		}
	}
	return true;
}

static int ensure_path_zh(zhandle_t *zh, const char *path, int depth)
{
	if (depth > 64)
		return ZBADARGUMENTS;
	int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
	if (rc == ZNONODE) {
		/* a parent is missing: make it, then try again */
		const char *slash = strrchr(path, '/');
		if (!slash || slash == path)
			return rc;
		size_t n = (size_t)(slash - path);
		char *parent = malloc(n + 1);
		if (!parent)
			return ZSYSTEMERROR;
		memcpy(parent, path, n);
		parent[n] = '\0';
		rc = ensure_path_zh(zh, parent, depth + 1);
		free(parent);
		if (rc == ZOK)
			rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
					NULL, 0);
	}
	return rc == ZNODEEXISTS ? ZOK : rc;
}

/* The chroot of Kafka's zookeeper.connect: from the first '/', "" or "/"
 * meaning none. ZOK, ZBADARGUMENTS (malformed) or ZSYSTEMERROR. */
static int split_connect(const char *connect, char **hosts, char **chroot)
{
	const char *slash = strchr(connect, '/');
	size_t hn = slash ? (size_t)(slash - connect) : strlen(connect);
	*hosts = NULL;
	*chroot = NULL;
	if (hn == 0)
		return ZBADARGUMENTS;
	if (slash && strcmp(slash, "/") != 0 && !valid_path(slash, false))
		return ZBADARGUMENTS;
	*hosts = strndup(connect, hn);
	if (!*hosts)
		return ZSYSTEMERROR;
	if (slash && strcmp(slash, "/") != 0) {
		*chroot = strdup(slash);
		if (!*chroot)
			return ZSYSTEMERROR;
	}
	return ZOK;
}

static void zk_free(ctl_zk *zk)
{
	free(zk->connect);
	free(zk->hosts);
	free(zk->chroot);
	conn_destroy(&zk->conn);
	free(zk);
}

/* ---- session ---- */

int ctl_zk_open(const ctl_zk_config *cfg, ctl_zk **out)
{
	*out = NULL;
	if (!cfg || !cfg->connect || !*cfg->connect || cfg->session_timeout_ms <= 0)
		return ZBADARGUMENTS;
	switch (cfg->log_level) {
	case CTL_ZK_LOG_QUIET: zoo_set_debug_level((ZooLogLevel)0); break;
	case CTL_ZK_LOG_ERROR: zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); break;
	default: zoo_set_debug_level(ZOO_LOG_LEVEL_WARN); break;
	}
	ctl_zk *zk = calloc(1, sizeof(*zk));
	if (!zk)
		return ZSYSTEMERROR;
	if (conn_init(&zk->conn, zk) != 0) {
		free(zk);
		return ZSYSTEMERROR;
	}
	zk->session_timeout_ms = cfg->session_timeout_ms;
	zk->connection_timeout_ms =
		cfg->connection_timeout_ms > 0 ? cfg->connection_timeout_ms : cfg->session_timeout_ms;
	zk->on_event = cfg->on_event;
	zk->arg = cfg->arg;
	zk->connect = strdup(cfg->connect);
	int rc = zk->connect ? split_connect(cfg->connect, &zk->hosts, &zk->chroot) : ZSYSTEMERROR;
	if (rc != ZOK) {
		zk_free(zk);
		return rc;
	}
	if (zk->chroot) {
		/* Kafka makes sure the chroot exists through a session without
		 * it, then connects inside it. */
		zk_conn helper;
		if (conn_init(&helper, NULL) != 0) {
			zk_free(zk);
			return ZSYSTEMERROR;
		}
		zhandle_t *zh = connect_handle(zk->hosts, &helper, zk->session_timeout_ms,
					       zk->connection_timeout_ms, NULL, &rc);
		if (zh) {
			rc = ensure_path_zh(zh, zk->chroot, 0);
			zookeeper_close(zh);
		}
		conn_destroy(&helper);
		if (rc != ZOK) {
			zk_free(zk);
			return rc;
		}
	}
	zk->zh = connect_handle(zk->connect, &zk->conn, zk->session_timeout_ms,
				zk->connection_timeout_ms, NULL, &rc);
	if (!zk->zh) {
		zk_free(zk);
		return rc;
	}
	*out = zk;
	return ZOK;
}

void ctl_zk_close(ctl_zk *zk)
{
	if (!zk)
		return;
	if (zk->zh)
		zookeeper_close(zk->zh);
	zk_free(zk);
}

int ctl_zk_reopen(ctl_zk *zk)
{
	if (zk->zh) {
		zookeeper_close(zk->zh);
		zk->zh = NULL;
	}
	atomic_store(&zk->state, CTL_ZK_STATE_EXPIRED_SESSION);
	int rc;
	zk->zh = connect_handle(zk->connect, &zk->conn, zk->session_timeout_ms,
				zk->connection_timeout_ms, NULL, &rc);
	if (!zk->zh)
		atomic_store(&zk->state, CTL_ZK_STATE_EXPIRED_SESSION);
	return rc;
}

int ctl_zk_state(const ctl_zk *zk)
{
	return atomic_load(&zk->state);
}

int64_t ctl_zk_session_id(const ctl_zk *zk)
{
	if (!zk->zh)
		return 0;
	const clientid_t *id = zoo_client_id(zk->zh);
	return id ? id->client_id : 0;
}

int ctl_zk_session_timeout(const ctl_zk *zk)
{
	return zk->zh ? zoo_recv_timeout(zk->zh) : 0;
}

const char *ctl_zk_strerror(int rc)
{
	return zerror(rc);
}

/* ---- reads ---- */

int ctl_zk_get(ctl_zk *zk, const char *path, bool watch, char **data, int *len,
	       ctl_zk_stat *stat)
{
	*data = NULL;
	*len = -1;
	if (!valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	int cap = 4096;
	/* The node may grow between two reads: each retry sizes the buffer
	 * from the stat of the previous read. */
	for (int attempt = 0; attempt < 8; attempt++) {
		char *buf = malloc((size_t)cap + 1);
		if (!buf)
			return ZSYSTEMERROR;
		int n = cap;
		struct Stat st;
		int rc = zoo_get(zk->zh, path, watch, buf, &n, &st);
		if (rc != ZOK) {
			free(buf);
			return fix_rc(zk, rc);
		}
		if (st.dataLength > cap) {
			free(buf);
			cap = st.dataLength;
			continue;
		}
		if (stat)
			stat_from(stat, &st);
		if (n < 0) {
			free(buf); /* null data */
			return ZOK;
		}
		buf[n] = '\0';
		*data = buf;
		*len = n;
		return ZOK;
	}
	return ZMARSHALLINGERROR;
}

int ctl_zk_get_children(ctl_zk *zk, const char *path, bool watch, ctl_zk_children *out,
			ctl_zk_stat *stat)
{
	out->count = 0;
	out->names = NULL;
	if (!valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	struct String_vector v = { 0, NULL };
	struct Stat st;
	int rc = zoo_get_children2(zk->zh, path, watch, &v, &st);
	if (rc != ZOK) {
		deallocate_String_vector(&v);
		return fix_rc(zk, rc);
	}
	/* the client allocated the vector with malloc: it is ours to free */
	out->count = v.count;
	out->names = v.data;
	if (stat)
		stat_from(stat, &st);
	return ZOK;
}

void ctl_zk_children_free(ctl_zk_children *c)
{
	for (int32_t i = 0; i < c->count; i++)
		free(c->names[i]);
	free(c->names);
	c->names = NULL;
	c->count = 0;
}

int ctl_zk_exists(ctl_zk *zk, const char *path, bool watch, ctl_zk_stat *stat)
{
	if (!valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	struct Stat st;
	int rc = zoo_exists(zk->zh, path, watch, &st);
	if (rc == ZOK && stat)
		stat_from(stat, &st);
	return fix_rc(zk, rc);
}

/* ---- writes ---- */

int ctl_zk_create(ctl_zk *zk, const char *path, const char *data, int len, int mode,
		  char *created, size_t cap, ctl_zk_stat *stat)
{
	int flags = create_flags(mode);
	if (flags < 0 || (len < 0 && len != CTL_ZK_NULL_DATA) ||
	    !valid_path(path, mode == CTL_ZK_PERSISTENT_SEQUENTIAL ||
				      mode == CTL_ZK_EPHEMERAL_SEQUENTIAL))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	struct Stat st;
	int rc = zoo_create2(zk->zh, path, len < 0 ? NULL : data, len, &ZOO_OPEN_ACL_UNSAFE, flags,
			     created, created ? (int)(cap > INT_MAX ? INT_MAX : cap) : 0, &st);
	if (rc == ZOK && stat)
		stat_from(stat, &st);
	return fix_rc(zk, rc);
}

int ctl_zk_set(ctl_zk *zk, const char *path, const char *data, int len, int version,
	       ctl_zk_stat *stat)
{
	if ((len < 0 && len != CTL_ZK_NULL_DATA) || !valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	struct Stat st;
	int rc = zoo_set2(zk->zh, path, len < 0 ? NULL : data, len, version, &st);
	if (rc == ZOK && stat)
		stat_from(stat, &st);
	return fix_rc(zk, rc);
}

int ctl_zk_delete(ctl_zk *zk, const char *path, int version)
{
	if (!valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	return fix_rc(zk, zoo_delete(zk->zh, path, version));
}

int ctl_zk_ensure_path(ctl_zk *zk, const char *path)
{
	if (!valid_path(path, false))
		return ZBADARGUMENTS;
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	return fix_rc(zk, ensure_path_zh(zk->zh, path, 0));
}

/* ---- multi ---- */

ctl_zk_op ctl_zk_op_create(const char *path, const char *data, int len, int mode)
{
	return (ctl_zk_op){ .type = CTL_ZK_OP_CREATE, .path = path, .data = data, .len = len,
			    .mode = mode };
}

ctl_zk_op ctl_zk_op_delete(const char *path, int version)
{
	return (ctl_zk_op){ .type = CTL_ZK_OP_DELETE, .path = path, .version = version };
}

ctl_zk_op ctl_zk_op_set(const char *path, const char *data, int len, int version)
{
	return (ctl_zk_op){ .type = CTL_ZK_OP_SET, .path = path, .data = data, .len = len,
			    .version = version };
}

ctl_zk_op ctl_zk_op_check(const char *path, int version)
{
	return (ctl_zk_op){ .type = CTL_ZK_OP_CHECK, .path = path, .version = version };
}

/* results[i].err before the call: no ZooKeeper code is positive */
#define ERR_UNSET 1

int ctl_zk_multi(ctl_zk *zk, ctl_zk_op *ops, int n, int *failed)
{
	if (failed)
		*failed = -1;
	if (n < 1 || n > CTL_ZK_MULTI_MAX)
		return ZBADARGUMENTS;
	for (int i = 0; i < n; i++) {
		ctl_zk_op *o = &ops[i];
		o->err = ERR_UNSET;
		memset(&o->stat, 0, sizeof(o->stat));
		bool seq = o->type == CTL_ZK_OP_CREATE && (o->mode == CTL_ZK_PERSISTENT_SEQUENTIAL ||
							   o->mode == CTL_ZK_EPHEMERAL_SEQUENTIAL);
		if (!valid_path(o->path, seq) ||
		    ((o->type == CTL_ZK_OP_CREATE || o->type == CTL_ZK_OP_SET) && o->len < 0 &&
		     o->len != CTL_ZK_NULL_DATA) ||
		    (o->type == CTL_ZK_OP_CREATE && create_flags(o->mode) < 0) ||
		    o->type < CTL_ZK_OP_CREATE || o->type > CTL_ZK_OP_CHECK)
			return ZBADARGUMENTS;
	}
	/* An expired handle makes zoo_amulti free memory twice (see valid_path):
	 * do not call it then. The handle can still expire between this check
	 * and the client's own, a window of microseconds we cannot close from
	 * outside the library. */
	if (!zk->zh || is_unrecoverable(zk->zh) == ZINVALIDSTATE)
		return fix_rc(zk, ZINVALIDSTATE);
	zoo_op_t *zops = calloc((size_t)n, sizeof(*zops));
	zoo_op_result_t *res = calloc((size_t)n, sizeof(*res));
	struct Stat *stats = calloc((size_t)n, sizeof(*stats));
	if (!zops || !res || !stats) {
		free(zops);
		free(res);
		free(stats);
		return ZSYSTEMERROR;
	}
	for (int i = 0; i < n; i++) {
		ctl_zk_op *o = &ops[i];
		const char *data = o->len < 0 ? NULL : o->data;
		switch (o->type) {
		case CTL_ZK_OP_CREATE:
			zoo_create_op_init(&zops[i], o->path, data, o->len, &ZOO_OPEN_ACL_UNSAFE,
					   create_flags(o->mode), o->created,
					   o->created ? (int)(o->created_cap > INT_MAX ? INT_MAX
										   : o->created_cap)
						      : 0);
			break;
		case CTL_ZK_OP_DELETE:
			zoo_delete_op_init(&zops[i], o->path, o->version);
			break;
		case CTL_ZK_OP_SET:
			zoo_set_op_init(&zops[i], o->path, data, o->len, o->version, &stats[i]);
			break;
		default:
			zoo_check_op_init(&zops[i], o->path, o->version);
			break;
		}
		res[i].err = ERR_UNSET;
	}
	int rc = zoo_multi(zk->zh, n, zops, res);
	int first = -1;
	for (int i = 0; i < n; i++) {
		ops[i].err = res[i].err;
		if (first < 0 && res[i].err != ZOK && res[i].err != ERR_UNSET)
			first = i;
		if (ops[i].type == CTL_ZK_OP_SET && res[i].err == ZOK)
			stat_from(&ops[i].stat, &stats[i]);
	}
	if (rc != ZOK && first < 0) {
		/* the request as a whole failed: no op result */
		rc = fix_rc(zk, rc);
		for (int i = 0; i < n; i++)
			ops[i].err = rc;
	} else if (rc != ZOK && failed)
		*failed = first;
	free(zops);
	free(res);
	free(stats);
	return rc;
}

int ctl_zk_create_ephemeral_checked(ctl_zk *zk, const char *path, const char *data, int len,
				    int64_t *czxid)
{
	for (int attempt = 0;; attempt++) {
		ctl_zk_op ops[2] = {
			ctl_zk_op_create(path, NULL, CTL_ZK_NULL_DATA, CTL_ZK_EPHEMERAL),
			ctl_zk_op_set(path, data, len, 0),
		};
		int failed;
		int rc = ctl_zk_multi(zk, ops, 2, &failed);
		if (rc == ZOK) {
			if (czxid)
				*czxid = ops[1].stat.czxid;
			return ZOK;
		}
		if (rc != ZNODEEXISTS || failed != 0 || attempt > 0)
			return rc;
		ctl_zk_stat st;
		rc = ctl_zk_exists(zk, path, false, &st);
		if (rc == ZNONODE)
			continue; /* gone meanwhile */
		if (rc != ZOK)
			return rc;
		if (st.ephemeral_owner != ctl_zk_session_id(zk))
			return ZNODEEXISTS;
		/* ours, from this session (ZOOKEEPER-2985): make it anew */
		rc = ctl_zk_delete(zk, path, st.version);
		if (rc != ZOK && rc != ZNONODE)
			return rc;
	}
}

int ctl_zk_expire_session_for_test(ctl_zk *zk)
{
	if (!zk->zh)
		return ZSESSIONEXPIRED;
	const clientid_t *id = zoo_client_id(zk->zh);
	if (!id || id->client_id == 0)
		return ZINVALIDSTATE;
	clientid_t copy = *id;
	zk_conn helper;
	if (conn_init(&helper, NULL) != 0)
		return ZSYSTEMERROR;
	/* The server hands the session to the newest connection, so the owner's
	 * client, reconnecting at once, can take it back before the helper's
	 * close arrives. Repeat until a helper finds the session expired. */
	int rc = ZOPERATIONTIMEOUT;
	for (int attempt = 0; attempt < 50; attempt++) {
		zhandle_t *zh = connect_handle(zk->hosts, &helper, zk->session_timeout_ms,
					       zk->connection_timeout_ms, &copy, &rc);
		if (!zh) {
			if (rc == ZSESSIONEXPIRED)
				rc = ZOK; /* gone: done */
			break;
		}
		zookeeper_close(zh);
	}
	conn_destroy(&helper);
	return rc;
}
