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

static char base_dir[1024];
static pid_t base_owner;       /* the process that created base_dir */
static int broker_seq;         /* names of data dirs and logs */

/* Brokers started by this process (a forked test child has its own). */
static h_broker *live[H_MAX_BROKERS];
static pid_t live_owner;

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
}

static void register_live(h_broker *b)
{
	if (live_owner != getpid()) {
		/* First broker of this (possibly forked) process: forget the
		 * parent's table, which belongs to the parent. */
		memset(live, 0, sizeof(live));
		live_owner = getpid();
		atexit(cleanup_live);
	}
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
	if (!getenv("SAMSA_KEEP_TMP"))
		h_rm_rf(base_dir);
	base_dir[0] = 0;
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
	fprintf(f, "listeners=PLAINTEXT://127.0.0.1:%d\n", b->port);
	fprintf(f, "log.dirs=%s\n", b->dir);
	return fclose(f) == 0 ? 0 : -1;
}

static h_broker *broker_alloc(const char *const *overrides)
{
	if (!base_dir[0] && h_init() < 0)
		return NULL;
	h_broker *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->last_status = -1;
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
	snprintf(b->bootstrap, sizeof(b->bootstrap), "127.0.0.1:%d", b->port);
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
	for (int i = 0; i < b->noverrides; i++) {
		argv[argc++] = "--override";
		argv[argc++] = b->overrides[i];
	}
	argv[argc] = NULL;

	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
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
		if (w_probe(b->port, 1000) == 0)
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
			snprintf(b->bootstrap, sizeof(b->bootstrap), "127.0.0.1:%d", b->port);
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
