/*
 * harness.c - start, stop, kill and clean up real samsa processes for the
 * black-box tests and the bench (see harness.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compat-tests/wire.h"

#define H_MAX_BROKERS 16
#define H_MAX_ZK 8

static char base_dir[1024];
static pid_t base_owner;       /* the process that created base_dir */
static int broker_seq;         /* names of data dirs and logs */

/* Brokers and ZooKeepers started by this process (a forked test child has
 * its own). */
static h_broker *live[H_MAX_BROKERS];
static h_zk *live_zk[H_MAX_ZK];
static pid_t live_owner;

/* h_at_fini's hooks (run by the process that called h_init). */
#define H_MAX_FINI 4
static struct {
	void (*fn)(void *);
	void *arg;
} fini_hooks[H_MAX_FINI];

long long h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int h_scaled_ms(int ms)
{
	const char *s = getenv("SAMSA_TIMEOUT_SCALE");
	double f = s ? atof(s) : 1.0;
	if (!(f > 0))
		f = 1.0;
	return (int)(ms * f);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int h_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Kill and clean what this process started; runs at exit. (check's fork
 * mode leaves a failed test with _exit, which skips this: then the brokers
 * die of PR_SET_PDEATHSIG and h_fini removes their dirs.) */
static void cleanup_live(void)
{
	if (live_owner != getpid())
		return;
	for (int i = 0; i < H_MAX_BROKERS; i++) {
		if (live[i]) {
			h_broker *b = live[i];
			if (b->pid > 0) {
				kill(b->pid, SIGKILL);
				waitpid(b->pid, NULL, 0);
				b->pid = 0;
			}
			if (b->owns_dir && !getenv("SAMSA_KEEP_TMP"))
				h_rm_rf(b->dir);
			live[i] = NULL;
		}
	}
	for (int i = 0; i < H_MAX_ZK; i++) {
		h_zk *z = live_zk[i];
		if (!z)
			continue;
		if (z->pid > 0) {
			kill(z->pid, SIGKILL);
			waitpid(z->pid, NULL, 0);
			z->pid = 0;
		}
		if (!getenv("SAMSA_KEEP_TMP"))
			h_rm_rf(z->dir);
		live_zk[i] = NULL;
	}
}

/* The tables belong to the process that fills them: the first start in a
 * (possibly forked) process forgets the parent's entries. */
static void own_tables(void)
{
	if (live_owner != getpid()) {
		memset(live, 0, sizeof(live));
		memset(live_zk, 0, sizeof(live_zk));
		live_owner = getpid();
		atexit(cleanup_live);
	}
}

static void register_live(h_broker *b)
{
	own_tables();
	for (int i = 0; i < H_MAX_BROKERS; i++)
		if (live[i] == b)
			return;
	for (int i = 0; i < H_MAX_BROKERS; i++)
		if (!live[i]) {
			live[i] = b;
			return;
		}
}

static void unregister_live(h_broker *b)
{
	if (live_owner != getpid())
		return;
	for (int i = 0; i < H_MAX_BROKERS; i++)
		if (live[i] == b)
			live[i] = NULL;
}

static void fini_atexit(void)
{
	h_fini();
}

/* SIGTERM/SIGINT/SIGHUP (make check interrupted, timeout(1)): clean up as
 * at exit, then die of the signal. */
static void on_fatal_signal(int sig)
{
	cleanup_live();
	h_fini();
	signal(sig, SIG_DFL);
	raise(sig);
}

int h_init(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp || strlen(tmp) > sizeof(base_dir) - 32)
		tmp = "/tmp";
	snprintf(base_dir, sizeof(base_dir), "%s/samsa-compat-XXXXXX", tmp);
	if (!mkdtemp(base_dir)) {
		fprintf(stderr, "harness: mkdtemp %s: %s\n", base_dir, strerror(errno));
		base_dir[0] = 0;
		return -1;
	}
	base_owner = getpid();
	atexit(fini_atexit);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGINT, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
	if (getenv("SAMSA_KEEP_TMP"))
		fprintf(stderr, "harness: temporary files kept in %s\n", base_dir);
	return 0;
}

void h_fini(void)
{
	if (!base_dir[0] || base_owner != getpid())
		return;
	cleanup_live();
	for (int i = H_MAX_FINI - 1; i >= 0; i--) {
		if (fini_hooks[i].fn) {
			void (*fn)(void *) = fini_hooks[i].fn;
			fini_hooks[i].fn = NULL;
			fn(fini_hooks[i].arg);
		}
	}
	if (!getenv("SAMSA_KEEP_TMP"))
		h_rm_rf(base_dir);
	base_dir[0] = 0;
}

int h_at_fini(void (*fn)(void *), void *arg)
{
	for (int i = 0; i < H_MAX_FINI; i++)
		if (!fini_hooks[i].fn) {
			fini_hooks[i].fn = fn;
			fini_hooks[i].arg = arg;
			return 0;
		}
	return -1;
}

void h_at_fini_remove(void (*fn)(void *), void *arg)
{
	for (int i = 0; i < H_MAX_FINI; i++)
		if (fini_hooks[i].fn == fn && fini_hooks[i].arg == arg)
			fini_hooks[i].fn = NULL;
}

int h_setns(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = setns(fd, CLONE_NEWNET);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

const char *h_base_dir(void)
{
	return base_dir;
}

const char *h_samsa_bin(void)
{
	const char *s = getenv("SAMSA_BIN");
	return s && *s ? s : "../broker/samsa";
}

int h_free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return ntohs(sa.sin_port);
}

static int write_props(h_broker *b)
{
	FILE *f = fopen(b->props, "w");
	if (!f)
		return -1;
	fprintf(f, "# written by the samsa compat harness\n");
	fprintf(f, "listeners=PLAINTEXT://%s:%d\n", b->host, b->port);
	fprintf(f, "log.dirs=%s\n", b->dir);
	return fclose(f) == 0 ? 0 : -1;
}

int h_broker_add_override(h_broker *b, const char *kv)
{
	if (b->noverrides == H_MAX_OVERRIDES) {
		fprintf(stderr, "harness: too many overrides\n");
		return -1;
	}
	char *copy = strdup(kv);
	if (!copy)
		return -1;
	b->overrides[b->noverrides++] = copy;
	return 0;
}

static h_broker *broker_alloc(const char *const *overrides)
{
	if (!base_dir[0] && h_init() < 0)
		return NULL;
	h_broker *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->last_status = -1;
	snprintf(b->host, sizeof(b->host), "127.0.0.1");
	for (int i = 0; overrides && overrides[i]; i++) {
		if (b->noverrides == H_MAX_OVERRIDES) {
			fprintf(stderr, "harness: too many overrides\n");
			h_broker_free(b);
			return NULL;
		}
		b->overrides[b->noverrides++] = strdup(overrides[i]);
	}
	int seq = ++broker_seq;
	snprintf(b->props, sizeof(b->props), "%s/broker-%d-%d.properties", base_dir,
		 (int)getpid(), seq);
	snprintf(b->logpath, sizeof(b->logpath), "%s/broker-%d-%d.log", base_dir, (int)getpid(),
		 seq);
	b->port = h_free_port();
	if (b->port < 0) {
		fprintf(stderr, "harness: no free port: %s\n", strerror(errno));
		h_broker_free(b);
		return NULL;
	}
	snprintf(b->bootstrap, sizeof(b->bootstrap), "%s:%d", b->host, b->port);
	return b;
}

h_broker *h_broker_new(const char *const *overrides)
{
	h_broker *b = broker_alloc(overrides);
	if (!b)
		return NULL;
	snprintf(b->dir, sizeof(b->dir), "%s/data-XXXXXX", base_dir);
	if (!mkdtemp(b->dir)) {
		fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
		h_broker_free(b);
		return NULL;
	}
	b->owns_dir = true;
	if (write_props(b) < 0) {
		h_broker_free(b);
		return NULL;
	}
	return b;
}

h_broker *h_broker_new_same_dir(const h_broker *other, const char *const *overrides)
{
	h_broker *b = broker_alloc(overrides);
	if (!b)
		return NULL;
	snprintf(b->dir, sizeof(b->dir), "%s", other->dir);
	b->owns_dir = false;
	if (write_props(b) < 0) {
		h_broker_free(b);
		return NULL;
	}
	return b;
}

int h_broker_set_net(h_broker *b, const char *netns, const char *host)
{
	if (b->pid > 0 || strlen(netns) >= sizeof(b->netns) || strlen(host) >= sizeof(b->host))
		return -1;
	snprintf(b->netns, sizeof(b->netns), "%s", netns);
	snprintf(b->host, sizeof(b->host), "%s", host);
	snprintf(b->bootstrap, sizeof(b->bootstrap), "%s:%d", b->host, b->port);
	return write_props(b);
}

/* In a child between fork and exec: join netns (if any) or die. */
static void child_setns(const char *netns)
{
	if (!netns[0] || h_setns(netns) == 0)
		return;
	static const char msg[] = "harness: cannot join the network namespace\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(126);
}

int h_broker_launch(h_broker *b)
{
	char *argv[2 * H_MAX_OVERRIDES + 4];
	int argc = 0;
	const char *bin = h_samsa_bin();

	if (b->pid > 0) {
		fprintf(stderr, "harness: broker already running (pid %d)\n", (int)b->pid);
		return -1;
	}
	if (access(bin, X_OK) < 0) {
		fprintf(stderr, "harness: broker binary %s: %s\n", bin, strerror(errno));
		return -1;
	}
	argv[argc++] = (char *)bin;
	argv[argc++] = b->props;
	/* "${PORT}" in an override is the broker's port (h_broker_new). */
	char *expanded[H_MAX_OVERRIDES] = { 0 };
	for (int i = 0; i < b->noverrides; i++) {
		argv[argc++] = "--override";
		const char *o = b->overrides[i], *at = strstr(o, "${PORT}");
		if (at && (expanded[i] = malloc(strlen(o) + 16)))
			sprintf(expanded[i], "%.*s%d%s", (int)(at - o), o, b->port, at + 7);
		argv[argc++] = expanded[i] ? expanded[i] : b->overrides[i];
	}
	argv[argc] = NULL;

	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0)
		for (int i = 0; i < b->noverrides; i++)
			free(expanded[i]);
	if (pid < 0) {
		fprintf(stderr, "harness: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* Die with the test process, whatever kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int in = open("/dev/null", O_RDONLY);
		int out = open(b->logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		child_setns(b->netns);
		/* Do not leak the test's sockets (librdkafka's) into the broker. */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		signal(SIGPIPE, SIG_DFL);
		execv(bin, argv);
		static const char msg[] = "harness: exec of the broker binary failed\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(127);
	}
	b->pid = pid;
	b->last_status = -1;
	register_live(b);
	return 0;
}

/* Reap the child if it has exited. Returns true if it is still running. */
bool h_broker_alive(h_broker *b)
{
	if (b->pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(b->pid, &st, WNOHANG);
	if (r == 0)
		return true;
	if (r == b->pid)
		b->last_status = st;
	b->pid = 0;
	return false;
}

static void describe_status(int st, char *buf, size_t n)
{
	if (st < 0)
		snprintf(buf, n, "not exited");
	else if (WIFEXITED(st))
		snprintf(buf, n, "exit code %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, n, "status 0x%x", st);
}

int h_broker_wait_ready(h_broker *b, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	for (;;) {
		if (!h_broker_alive(b)) {
			char d[128];
			describe_status(b->last_status, d, sizeof(d));
			fprintf(stderr, "harness: broker on port %d exited during start-up (%s)\n",
				b->port, d);
			h_broker_dump_log(b, stderr, 40);
			return -1;
		}
		if (w_probe_host(b->host, b->port, 1000) == 0)
			return 0;
		if (h_now_ms() >= deadline) {
			fprintf(stderr,
				"harness: broker on port %d did not answer ApiVersions within %d ms\n",
				b->port, timeout_ms);
			h_broker_dump_log(b, stderr, 40);
			return -1;
		}
		sleep_ms(50);
	}
}

static bool log_mentions_bind(const h_broker *b)
{
	char *log = h_broker_read_log(b);
	bool r = log && (strstr(log, "in use") || strstr(log, "EADDRINUSE") || strstr(log, "bind"));
	free(log);
	return r;
}

int h_broker_start(h_broker *b)
{
	for (int attempt = 0;; attempt++) {
		if (h_broker_launch(b) < 0)
			return -1;
		if (h_broker_wait_ready(b, h_scaled_ms(20000)) == 0)
			return 0;
		/* The port may have been taken between h_free_port and bind
		 * (another test program running in parallel): try another. */
		if (attempt < 3 && b->pid == 0 && log_mentions_bind(b)) {
			int port = h_free_port();
			if (port < 0)
				return -1;
			b->port = port;
			snprintf(b->bootstrap, sizeof(b->bootstrap), "%s:%d", b->host, b->port);
			if (write_props(b) < 0)
				return -1;
			fprintf(stderr, "harness: retrying on port %d\n", port);
			continue;
		}
		if (b->pid > 0)
			h_broker_kill(b);
		return -1;
	}
}

int h_broker_restart(h_broker *b)
{
	if (h_broker_launch(b) < 0)
		return -1;
	if (h_broker_wait_ready(b, h_scaled_ms(20000)) == 0)
		return 0;
	if (b->pid > 0)
		h_broker_kill(b);
	return -1;
}

int h_broker_wait_exit(h_broker *b, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	for (;;) {
		if (!h_broker_alive(b))
			return b->last_status;
		if (h_now_ms() >= deadline)
			return -1;
		sleep_ms(10);
	}
}

int h_broker_stop(h_broker *b, int timeout_ms)
{
	if (!h_broker_alive(b))
		return -1;
	kill(b->pid, SIGTERM);
	int st = h_broker_wait_exit(b, timeout_ms);
	if (st == -1 && b->pid > 0) {
		fprintf(stderr, "harness: broker pid %d ignored SIGTERM for %d ms; killing it\n",
			(int)b->pid, timeout_ms);
		h_broker_dump_log(b, stderr, 20);
		h_broker_kill(b);
		return -1;
	}
	return st;
}

int h_broker_kill(h_broker *b)
{
	if (b->pid <= 0)
		return -1;
	kill(b->pid, SIGKILL);
	int st;
	if (waitpid(b->pid, &st, 0) == b->pid)
		b->last_status = st;
	b->pid = 0;
	return 0;
}

void h_broker_free(h_broker *b)
{
	if (!b)
		return;
	if (b->pid > 0)
		h_broker_kill(b);
	unregister_live(b);
	if (b->owns_dir && b->dir[0] && !getenv("SAMSA_KEEP_TMP"))
		h_rm_rf(b->dir);
	for (int i = 0; i < b->noverrides; i++)
		free(b->overrides[i]);
	free(b);
}

char *h_broker_read_log(const h_broker *b)
{
	FILE *f = fopen(b->logpath, "r");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *s = malloc(cap);
	for (;;) {
		if (!s) {
			fclose(f);
			return NULL;
		}
		size_t n = fread(s + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
		if (cap - len - 1 == 0) {
			cap *= 2;
			char *t = realloc(s, cap);
			if (!t)
				free(s);
			s = t;
		}
	}
	fclose(f);
	s[len] = 0;
	return s;
}

void h_broker_dump_log(const h_broker *b, FILE *f, int max_lines)
{
	char *log = h_broker_read_log(b);
	if (!log) {
		fprintf(f, "harness: (no broker log at %s)\n", b->logpath);
		return;
	}
	size_t len = strlen(log);
	const char *start = log + len;
	int lines = 0;
	while (start > log && lines <= max_lines) {
		start--;
		if (*start == '\n' && start + 1 < log + len)
			lines++;
	}
	if (lines > max_lines)
		start++;
	const char *name = strrchr(b->logpath, '/');
	fprintf(f, "---- %s (port %d), last %d lines ----\n%s%s---- end ----\n",
		name ? name + 1 : b->logpath, b->port, max_lines, start,
		len && log[len - 1] != '\n' ? "\n" : "");
	free(log);
}

long h_broker_status_kb(const h_broker *b, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long v = -1;
	if (b->pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)b->pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

void h_dump_all_logs(FILE *f, int max_lines)
{
	if (!base_dir[0])
		return;
	DIR *d = opendir(base_dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "broker-", 7) != 0 || n < 4 ||
		    strcmp(e->d_name + n - 4, ".log") != 0)
			continue;
		h_broker tmp;
		memset(&tmp, 0, sizeof(tmp));
		snprintf(tmp.logpath, sizeof(tmp.logpath), "%s/%s", base_dir, e->d_name);
		h_broker_dump_log(&tmp, f, max_lines);
	}
	closedir(d);
}

/* ---- ZooKeeper ---- */

static int zk_seq;

static const char *java_bin(void)
{
	const char *s = getenv("JAVA");
	return s && *s ? s : "java";
}

static void register_zk(h_zk *z)
{
	own_tables();
	for (int i = 0; i < H_MAX_ZK; i++)
		if (live_zk[i] == z)
			return;
	for (int i = 0; i < H_MAX_ZK; i++)
		if (!live_zk[i]) {
			live_zk[i] = z;
			return;
		}
}

static void unregister_zk(h_zk *z)
{
	if (live_owner != getpid())
		return;
	for (int i = 0; i < H_MAX_ZK; i++)
		if (live_zk[i] == z)
			live_zk[i] = NULL;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

/* zoo.cfg for z->port (rewritten when the port changes). */
static int zk_write_cfg(h_zk *z)
{
	char text[PATH_MAX + 1024];
	snprintf(text, sizeof(text),
		 "# written by the samsa test harness (CLUSTER.md 6.4's settings)\n"
		 "tickTime=500\n"
		 "minSessionTimeout=1000\n"
		 "maxSessionTimeout=30000\n"
		 "clientPortAddress=%s\n"
		 "clientPort=%d\n"
		 "dataDir=%s/data\n"
		 "admin.enableServer=false\n"
		 "4lw.commands.whitelist=ruok,srvr,mntr\n"
		 "# test only: no fsync of the transaction log, 1 MB log files\n"
		 "forceSync=no\n"
		 "preAllocSize=1024\n",
		 z->host, z->port, z->dir);
	return write_file(z->cfg, text);
}

h_zk *h_zk_new(void)
{
	if (!base_dir[0] && h_init() < 0)
		return NULL;
	h_zk *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->last_status = -1;
	snprintf(z->host, sizeof(z->host), "127.0.0.1");
	snprintf(z->dir, sizeof(z->dir), "%s/zk-%d-%d-XXXXXX", base_dir, (int)getpid(), ++zk_seq);
	if (!mkdtemp(z->dir)) {
		fprintf(stderr, "harness: mkdtemp %s: %s\n", z->dir, strerror(errno));
		free(z);
		return NULL;
	}
	char conf[PATH_MAX], data[PATH_MAX], props[PATH_MAX], text[PATH_MAX + 512];
	snprintf(conf, sizeof(conf), "%s/conf", z->dir);
	snprintf(data, sizeof(data), "%s/data", z->dir);
	snprintf(z->cfg, sizeof(z->cfg), "%s/conf/zoo.cfg", z->dir);
	snprintf(props, sizeof(props), "%s/conf/log4j.properties", z->dir);
	snprintf(z->logpath, sizeof(z->logpath), "%s/zookeeper.log", z->dir);
	snprintf(z->outpath, sizeof(z->outpath), "%s/java.out", z->dir);
	snprintf(text, sizeof(text),
		 "# written by the samsa test harness: the server's log to one file\n"
		 "log4j.rootLogger=INFO, FILE\n"
		 "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
		 "log4j.appender.FILE.File=%s\n"
		 "log4j.appender.FILE.Append=true\n"
		 "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
		 "log4j.appender.FILE.layout.ConversionPattern=%%d{ISO8601} %%-5p [%%t:%%C{1}@%%L] - %%m%%n\n",
		 z->logpath);
	z->port = h_free_port();
	if (mkdir(conf, 0755) < 0 || mkdir(data, 0755) < 0 || z->port < 0 ||
	    write_file(props, text) < 0 || zk_write_cfg(z) < 0) {
		fprintf(stderr, "harness: cannot prepare %s: %s\n", z->dir, strerror(errno));
		h_rm_rf(z->dir);
		free(z);
		return NULL;
	}
	snprintf(z->connect, sizeof(z->connect), "%s:%d", z->host, z->port);
	return z;
}

int h_zk_set_net(h_zk *z, const char *netns, const char *host)
{
	if (z->pid > 0 || strlen(netns) >= sizeof(z->netns) || strlen(host) >= sizeof(z->host))
		return -1;
	snprintf(z->netns, sizeof(z->netns), "%s", netns);
	snprintf(z->host, sizeof(z->host), "%s", host);
	snprintf(z->connect, sizeof(z->connect), "%s:%d", z->host, z->port);
	return zk_write_cfg(z);
}

int h_zk_launch(h_zk *z)
{
	if (z->pid > 0) {
		fprintf(stderr, "harness: ZooKeeper already running (pid %d)\n", (int)z->pid);
		return -1;
	}
	char cp[PATH_MAX + 256], log4j[PATH_MAX + 64];
	snprintf(cp, sizeof(cp),
		 "%s/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:"
		 "/usr/share/java/log4j-1.2.jar",
		 z->dir);
	snprintf(log4j, sizeof(log4j), "-Dlog4j.configuration=file:%s/conf/log4j.properties",
		 z->dir);
	/* A small heap, one GC thread and the C1 compiler only: a test server
	 * starts faster and weighs less on a 2-core machine. */
	char *argv[] = {
		(char *)java_bin(), "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dzookeeper.jmx.log4j.disable=true", log4j, "-cp", cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", z->cfg, NULL,
	};
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "harness: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int in = open("/dev/null", O_RDONLY);
		int out = open(z->outpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		child_setns(z->netns);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		static const char msg[] = "harness: exec of java failed\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(127);
	}
	z->pid = pid;
	z->last_status = -1;
	register_zk(z);
	return 0;
}

bool h_zk_alive(h_zk *z)
{
	if (z->pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(z->pid, &st, WNOHANG);
	if (r == 0)
		return true;
	if (r == z->pid)
		z->last_status = st;
	z->pid = 0;
	return false;
}

int h_zk_4lw(int port, const char *word, char *buf, size_t cap, int timeout_ms)
{
	return h_zk_4lw_host("127.0.0.1", port, word, buf, cap, timeout_ms);
}

int h_zk_4lw_host(const char *host, int port, const char *word, char *buf, size_t cap,
		  int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	int fd = w_connect_host(host, port, timeout_ms);
	if (fd < 0)
		return -1;
	size_t len = 0;
	int rc = -1;
	if (w_send_all(fd, word, strlen(word), timeout_ms) != WIRE_OK)
		goto out;
	for (;;) {
		long long left = deadline - h_now_ms();
		if (left <= 0)
			goto out;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			goto out;
		char tmp[512];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break; /* the server closes after its answer */
		for (ssize_t i = 0; i < n && cap > 0 && len < cap - 1; i++)
			buf[len++] = tmp[i];
	}
	rc = (int)len;
out:
	if (cap > 0)
		buf[len < cap ? len : cap - 1] = '\0';
	close(fd);
	return rc;
}

/* The tail of a log file, through the broker log printer (the "port" it
 * names is the server's). */
static void dump_tail(const char *path, int port, FILE *f, int max_lines)
{
	h_broker tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.port = port;
	snprintf(tmp.logpath, sizeof(tmp.logpath), "%s", path);
	h_broker_dump_log(&tmp, f, max_lines);
}

void h_zk_dump_log(const h_zk *z, FILE *f, int max_lines)
{
	dump_tail(z->outpath, z->port, f, max_lines);
	dump_tail(z->logpath, z->port, f, max_lines);
}

int h_zk_wait_ready(h_zk *z, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	for (;;) {
		if (!h_zk_alive(z)) {
			char d[128];
			describe_status(z->last_status, d, sizeof(d));
			fprintf(stderr, "harness: ZooKeeper on port %d exited during start-up (%s)\n",
				z->port, d);
			h_zk_dump_log(z, stderr, 30);
			return -1;
		}
		/* A probe that arrives while the server is still starting can go
		 * unanswered until it times out: keep probes short. */
		char ans[16];
		if (h_zk_4lw_host(z->host, z->port, "ruok", ans, sizeof(ans), 200) >= 0 &&
		    strcmp(ans, "imok") == 0)
			return 0;
		if (h_now_ms() >= deadline) {
			fprintf(stderr, "harness: ZooKeeper on port %d did not answer ruok within %d ms\n",
				z->port, timeout_ms);
			h_zk_dump_log(z, stderr, 30);
			return -1;
		}
		sleep_ms(25);
	}
}

static bool zk_log_mentions_bind(const h_zk *z)
{
	bool r = false;
	const char *paths[] = { z->logpath, z->outpath };
	for (int i = 0; i < 2 && !r; i++) {
		h_broker tmp;
		memset(&tmp, 0, sizeof(tmp));
		snprintf(tmp.logpath, sizeof(tmp.logpath), "%s", paths[i]);
		char *log = h_broker_read_log(&tmp);
		r = log && (strstr(log, "Address already in use") || strstr(log, "BindException"));
		free(log);
	}
	return r;
}

int h_zk_start(h_zk *z)
{
	for (int attempt = 0;; attempt++) {
		long long t0 = h_now_ms();
		if (h_zk_launch(z) < 0)
			return -1;
		if (h_zk_wait_ready(z, h_scaled_ms(30000)) == 0) {
			z->start_ms = h_now_ms() - t0;
			return 0;
		}
		if (attempt < 3 && z->pid == 0 && zk_log_mentions_bind(z)) {
			int port = h_free_port();
			if (port < 0)
				return -1;
			z->port = port;
			snprintf(z->connect, sizeof(z->connect), "%s:%d", z->host, z->port);
			if (zk_write_cfg(z) < 0)
				return -1;
			fprintf(stderr, "harness: retrying ZooKeeper on port %d\n", port);
			continue;
		}
		if (z->pid > 0)
			h_zk_kill(z);
		return -1;
	}
}

int h_zk_restart(h_zk *z)
{
	long long t0 = h_now_ms();
	if (h_zk_launch(z) < 0)
		return -1;
	if (h_zk_wait_ready(z, h_scaled_ms(30000)) == 0) {
		z->start_ms = h_now_ms() - t0;
		return 0;
	}
	if (z->pid > 0)
		h_zk_kill(z);
	return -1;
}

int h_zk_stop(h_zk *z, int timeout_ms)
{
	if (!h_zk_alive(z))
		return -1;
	kill(z->pid, SIGTERM);
	long long deadline = h_now_ms() + timeout_ms;
	while (h_zk_alive(z)) {
		if (h_now_ms() >= deadline) {
			fprintf(stderr, "harness: ZooKeeper pid %d ignored SIGTERM for %d ms; killing it\n",
				(int)z->pid, timeout_ms);
			h_zk_kill(z);
			return -1;
		}
		sleep_ms(10);
	}
	return z->last_status;
}

int h_zk_kill(h_zk *z)
{
	if (z->pid <= 0)
		return -1;
	kill(z->pid, SIGKILL);
	int st;
	if (waitpid(z->pid, &st, 0) == z->pid)
		z->last_status = st;
	z->pid = 0;
	return 0;
}

void h_zk_free(h_zk *z)
{
	if (!z)
		return;
	if (z->pid > 0)
		h_zk_kill(z);
	unregister_zk(z);
	if (z->dir[0] && !getenv("SAMSA_KEEP_TMP"))
		h_rm_rf(z->dir);
	free(z);
}
