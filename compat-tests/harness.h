/*
 * harness.h - runs the real samsa binary for black-box tests and the bench:
 * a free loopback port, a temporary data dir, start, wait until it serves,
 * SIGTERM / SIGKILL, restart on the same dir and port, clean-up. The same
 * for a standalone ZooKeeper server (h_zk_*), for the tests of cluster mode.
 *
 * Knows nothing of check or librdkafka, so bench/ can link it too.
 *
 * Every broker or ZooKeeper a process starts is registered; at exit (normal
 * exit, or check's exit on a failed assertion) that process kills what is
 * still running and removes the data dirs. A child also gets
 * PR_SET_PDEATHSIG=SIGKILL, so it dies with the process that started it even
 * when that one is killed (check's timeout). All temporary files live under
 * one base dir per test program (h_init), removed by h_fini in the process
 * that created it.
 */
#ifndef SAMSA_COMPAT_HARNESS_H
#define SAMSA_COMPAT_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define H_MAX_OVERRIDES 32

typedef struct h_broker {
	pid_t pid;                /* running child, 0 when not running */
	int port;                 /* port of the PLAINTEXT listener */
	char host[16];            /* its address: "127.0.0.1", or the namespace's
				   * address after h_broker_set_net */
	char netns[64];           /* named network namespace it runs in, "" none */
	char dir[PATH_MAX];       /* log.dirs */
	char props[PATH_MAX];     /* the server.properties file passed to it */
	char logpath[PATH_MAX];   /* its stdout+stderr (appended across restarts) */
	char bootstrap[64];       /* "HOST:PORT" */
	char *overrides[H_MAX_OVERRIDES]; /* "key=value", owned */
	int noverrides;
	bool owns_dir;            /* remove dir in h_broker_free */
	int last_status;          /* wait status of the last exit, -1 if none */
} h_broker;

/*
 * Create the per-program base dir under $TMPDIR (or /tmp) and register the
 * clean-up. Call once from main before anything else. Returns 0 or -1.
 * The dir is kept when SAMSA_KEEP_TMP is set (its path is printed).
 */
int h_init(void);

/* Remove the base dir (only in the process that called h_init). */
void h_fini(void);

/* The base dir of h_init (for test-owned temp files). */
const char *h_base_dir(void);

/* Path of the broker binary: $SAMSA_BIN, else "../broker/samsa". */
const char *h_samsa_bin(void);

/* A loopback TCP port that was free a moment ago (bind port 0, close).
 * Returns the port or -1. */
int h_free_port(void);

/*
 * A new broker (not started) on a fresh port and a fresh mkdtemp data dir.
 * overrides: NULL-terminated list of "key=value" strings (may be NULL),
 * passed as --override after listeners/log.dirs. Returns NULL on error
 * (message on stderr). Free with h_broker_free.
 */
h_broker *h_broker_new(const char *const *overrides);

/* A second broker on the same data dir as other, a new port, its own log
 * file; does not remove the dir when freed. */
h_broker *h_broker_new_same_dir(const h_broker *other, const char *const *overrides);

/*
 * Run the broker in the named network namespace netns (one of
 * /run/netns, as `ip netns add` makes them; netns.h), listening on host (an
 * IPv4 address of that namespace) and its port: the child joins the
 * namespace (setns) between fork and exec, so b->pid is the broker itself
 * and every fault applies to it. Call before the first launch. 0 or -1.
 */
int h_broker_set_net(h_broker *b, const char *netns, const char *host);

/* Add one "key=value" --override to a broker not yet launched (after those
 * it was made with). 0 or -1. In any override, "${PORT}" stands for the
 * broker's port (its PLAINTEXT listener's), replaced at each launch. */
int h_broker_add_override(h_broker *b, const char *kv);
/* Fork and exec the broker, return at once. 0 or -1. */
int h_broker_launch(h_broker *b);

/*
 * Wait until the broker answers an ApiVersions v0 request on its port,
 * at most timeout_ms. Returns 0; -1 if it exited (b->last_status set) or
 * timed out. On failure the tail of its log is printed to stderr.
 */
int h_broker_wait_ready(h_broker *b, int timeout_ms);

/* h_broker_launch + h_broker_wait_ready (default 20 s, times
 * $SAMSA_TIMEOUT_SCALE). On a first start that fails because the port was
 * taken meanwhile, retries on a new port. Returns 0 or -1. */
int h_broker_start(h_broker *b);

/* Start again on the same dir and port (after a stop or a kill). */
int h_broker_restart(h_broker *b);

/*
 * SIGTERM, then wait up to timeout_ms for the exit (then SIGKILL). Returns the
 * wait status (WIFEXITED...) or -1 when it had to be killed or was not
 * running.
 */
int h_broker_stop(h_broker *b, int timeout_ms);

/* SIGKILL (kill -9) and reap. Returns 0 or -1 if it was not running. */
int h_broker_kill(h_broker *b);

/* Wait at most timeout_ms for the child to exit by itself. Returns the wait
 * status, or -1 on timeout (still running) or if not running. */
int h_broker_wait_exit(h_broker *b, int timeout_ms);

/* true while the child has not exited (waitpid WNOHANG; reaps it if it
 * has, recording last_status). */
bool h_broker_alive(h_broker *b);

/* Kill if running, remove its dir if owned, free. NULL is a no-op. */
void h_broker_free(h_broker *b);

/* Print the last max_lines lines of the broker's log to f. */
void h_broker_dump_log(const h_broker *b, FILE *f, int max_lines);

/* Join the named network namespace (/run/netns/<name>) in the calling
 * thread (setns CLONE_NEWNET). 0, or -1 with errno. */
int h_setns(const char *name);

/* Have h_fini (at exit, or on SIGTERM/SIGINT/SIGHUP of the process that
 * called h_init) call fn(arg) after it killed what this process started
 * and before it removes the base dir: for what lives outside the base
 * dir (network namespaces). At most 4. 0 or -1. */
int h_at_fini(void (*fn)(void *), void *arg);
/* Forget a hook of h_at_fini (no-op when not registered). */
void h_at_fini_remove(void (*fn)(void *), void *arg);

/* Print the tail of every broker log under the base dir (named
 * broker-<test pid>-<n>.log): for a run with failures, before h_fini. */
void h_dump_all_logs(FILE *f, int max_lines);

/* Read the whole broker log into a malloc'd NUL-terminated string (caller
 * frees), or NULL. */
char *h_broker_read_log(const h_broker *b);

/* A field of /proc/PID/status in kB ("VmHWM", "VmRSS"), or -1. */
long h_broker_status_kb(const h_broker *b, const char *field);

/* ---- ZooKeeper ----
 *
 * A standalone ZooKeeper server (Debian's zookeeper package, 3.8) on a free
 * 127.0.0.1 port, its JVM started directly (Debian's zkServer.sh insists on
 * /etc/zookeeper/conf):
 *
 *   java -cp <dir>/conf:zookeeper.jar:slf4j-log4j12.jar:log4j-1.2.jar \
 *        org.apache.zookeeper.server.quorum.QuorumPeerMain <dir>/conf/zoo.cfg
 *
 * Debian builds ZooKeeper against log4j 1.2 through SLF4J (upstream 3.8 uses
 * logback): zookeeper.jar's manifest brings slf4j-api but no binding, so the
 * binding and log4j are named on the class path, one binding only (with
 * every jar of /usr/share/java on the class path, SLF4J finds six bindings
 * and takes whichever comes first).
 * log4j.properties in <dir>/conf sends the server's log, at INFO, to
 * <dir>/zookeeper.log; the JVM's own stdout and stderr go to <dir>/java.out.
 *
 * zoo.cfg holds CLUSTER.md 6.4's test settings (tickTime=500,
 * minSessionTimeout=1000, maxSessionTimeout=30000, clientPortAddress,
 * admin.enableServer=false, 4lw.commands.whitelist=ruok,srvr,mntr) plus
 * clientPort, dataDir=<dir>/data, and two test-only settings: no fsync of the
 * transaction log (forceSync=no: a killed server still loses nothing, the
 * page cache survives it) and 1 MB instead of 64 MB preallocated log files.
 * Readiness is the four-letter word "ruok" answered "imok". $JAVA names the
 * java binary (default: java on the PATH).
 */
typedef struct h_zk {
	pid_t pid;                /* running JVM, 0 when not running */
	int port;                 /* client port */
	char host[16];            /* its clientPortAddress: "127.0.0.1", or the
				   * namespace's address (h_zk_set_net) */
	char netns[64];           /* named network namespace it runs in, "" none */
	char dir[PATH_MAX / 2];   /* its dir under the base dir */
	char cfg[PATH_MAX];       /* <dir>/conf/zoo.cfg */
	char logpath[PATH_MAX];   /* <dir>/zookeeper.log (the server's log4j log) */
	char outpath[PATH_MAX];   /* <dir>/java.out (the JVM's stdout+stderr) */
	char connect[64];         /* connect string "HOST:PORT" */
	int last_status;          /* wait status of the last exit, -1 if none */
	long long start_ms;       /* launch to "imok" of the last (re)start, ms */
} h_zk;

/* A new server (not started) on a fresh port with an empty data dir under
 * the base dir. NULL on error (message on stderr). Free with h_zk_free. */
h_zk *h_zk_new(void);

/* Run the server in network namespace netns on host (as
 * h_broker_set_net). Before the first launch. 0 or -1. */
int h_zk_set_net(h_zk *z, const char *netns, const char *host);

/* Fork and exec the JVM, return at once. 0 or -1. */
int h_zk_launch(h_zk *z);

/* Wait until the server answers "ruok" with "imok", at most timeout_ms.
 * 0; -1 if it exited (z->last_status set) or timed out (log tail on stderr). */
int h_zk_wait_ready(h_zk *z, int timeout_ms);

/* h_zk_launch + h_zk_wait_ready (30 s times $SAMSA_TIMEOUT_SCALE), sets
 * z->start_ms. On a first start whose port was taken meanwhile, retries on
 * a new port. 0 or -1. */
int h_zk_start(h_zk *z);

/* Start again on the same port and data dir (after a stop or a kill): the
 * znodes and the sessions that have not expired are still there. */
int h_zk_restart(h_zk *z);

/* SIGTERM, wait up to timeout_ms (then SIGKILL). The wait status, or -1
 * when it had to be killed or was not running. */
int h_zk_stop(h_zk *z, int timeout_ms);

/* SIGKILL and reap. 0, or -1 if it was not running. */
int h_zk_kill(h_zk *z);

/* true while the JVM has not exited (reaps it if it has). */
bool h_zk_alive(h_zk *z);

/* Kill if running, remove its dir, free. NULL is a no-op. */
void h_zk_free(h_zk *z);

/* Send a four-letter word ("ruok", "srvr", "mntr") to 127.0.0.1:port and
 * read the answer until the server closes, at most timeout_ms, into buf
 * (NUL-terminated, truncated to cap). Returns the answer's length or -1. */
int h_zk_4lw(int port, const char *word, char *buf, size_t cap, int timeout_ms);
/* The same to host:port. */
int h_zk_4lw_host(const char *host, int port, const char *word, char *buf, size_t cap,
		  int timeout_ms);

/* Print the last max_lines lines of the server's log (and of java.out) to f. */
void h_zk_dump_log(const h_zk *z, FILE *f, int max_lines);

/* Recursively remove path (no error if missing). Returns 0 or -1. */
int h_rm_rf(const char *path);

/* Monotonic clock in ms. */
long long h_now_ms(void);

/* ms scaled by $SAMSA_TIMEOUT_SCALE (a positive number, default 1). */
int h_scaled_ms(int ms);

#endif
