/*
 * netns.c - network namespaces, a bridge and nftables partitions for the
 * partition tests (see netns.h). Everything is done by running `ip` and
 * `nft` (found once, run without a shell).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setns, pipe2 */
#endif
#include "compat-tests/netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/harness.h"

/* ---- running ip and nft ---- */

static bool find_bin(const char *name, char *out, size_t cap)
{
	static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, cap, "%s/%s", dirs[i], name);
		if (access(out, X_OK) == 0)
			return true;
	}
	out[0] = 0;
	return false;
}

/*
 * Run argv (argv[0] an absolute path) in namespace netns ("" or NULL: this
 * one) with input (NULL: none) on its standard input; its output (stdout
 * and stderr, cut) into out. Returns its exit code, or -1.
 */
static int run(const char *netns, const char *input, char *const argv[], char *out, size_t cap)
{
	int ip[2] = {-1, -1}, op[2];
	if (out && cap)
		out[0] = 0;
	if (pipe2(op, O_CLOEXEC) < 0)
		return -1;
	if (input && pipe2(ip, O_CLOEXEC) < 0) {
		close(op[0]);
		close(op[1]);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(op[0]);
		close(op[1]);
		if (input) {
			close(ip[0]);
			close(ip[1]);
		}
		return -1;
	}
	if (pid == 0) {
		int in = input ? ip[0] : open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(op[1], 1) < 0 || dup2(op[1], 2) < 0)
			_exit(127);
		if (netns && *netns && h_setns(netns) < 0) {
			static const char msg[] = "cannot join the namespace\n";
			ssize_t w = write(2, msg, sizeof(msg) - 1);
			(void)w;
			_exit(126);
		}
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(op[1]);
	if (input) {
		close(ip[0]);
		size_t len = strlen(input), off = 0;
		while (off < len) {
			ssize_t w = write(ip[1], input + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(ip[1]);
	}
	size_t len = 0;
	char buf[512];
	for (;;) {
		ssize_t r = read(op[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && out && len + 1 < cap; i++)
			out[len++] = buf[i];
	}
	if (out && cap)
		out[len] = 0;
	close(op[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `ip <args...>` (NULL-terminated; quiet is an int: va_start after a
 * promoted bool is undefined); 0, or -1 with the command and its
 * output on stderr unless quiet. */
static int ip_cmd(const char *ip_bin, int quiet, ...)
{
	char *argv[24];
	int argc = 0;
	argv[argc++] = (char *)ip_bin;
	va_list ap;
	va_start(ap, quiet);
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 23)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	char out[512];
	int rc = run(NULL, NULL, argv, out, sizeof(out));
	if (rc != 0 && !quiet) {
		fprintf(stderr, "netns: failed (%d):", rc);
		for (int i = 0; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fprintf(stderr, ": %s%s", out, out[0] && out[strlen(out) - 1] == '\n' ? "" : "\n");
	}
	return rc == 0 ? 0 : -1;
}

/* An nft script run in node's namespace; 0 or -1 (on stderr). */
static int nft_script(const hn_net *n, int node, const char *script)
{
	char *argv[] = {(char *)n->nft_bin, "-f", "-", NULL};
	char out[512];
	int rc = run(n->node[node].ns, script, argv, out, sizeof(out));
	if (rc != 0)
		fprintf(stderr, "netns: nft in %s failed (%d): %s\nscript:\n%s", n->node[node].ns, rc,
			out, script);
	return rc == 0 ? 0 : -1;
}

/* ---- availability and leftovers ---- */

int hn_available(char *why, size_t cap)
{
	char ip_bin[64], nft_bin[64];
	if (!find_bin("ip", ip_bin, sizeof(ip_bin))) {
		snprintf(why, cap, "the ip program (iproute2) is not installed");
		return -1;
	}
	if (!find_bin("nft", nft_bin, sizeof(nft_bin))) {
		snprintf(why, cap, "the nft program (nftables) is not installed");
		return -1;
	}
	if (geteuid() != 0) {
		snprintf(why, cap, "not root (network namespaces need CAP_SYS_ADMIN and "
			 "CAP_NET_ADMIN)");
		return -1;
	}
	char name[64];
	snprintf(name, sizeof(name), "samsa-%d-probe", (int)getpid());
	char *add[] = {ip_bin, "netns", "add", name, NULL};
	char out[256];
	if (run(NULL, NULL, add, out, sizeof(out)) != 0) {
		char *nl = strchr(out, '\n');
		if (nl)
			*nl = 0;
		snprintf(why, cap, "cannot make a network namespace (ip netns add: %s)", out);
		return -1;
	}
	char *del[] = {ip_bin, "netns", "del", name, NULL};
	run(NULL, NULL, del, NULL, 0);
	return 0;
}

/* Is pid (from a name of ours) gone? */
static bool pid_gone(const char *digits)
{
	char *end;
	long pid = strtol(digits, &end, 10);
	if (end == digits || pid <= 1 || pid == getpid())
		return false;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Remove namespaces "samsa-<pid>-*" and links "samsa<pid>*" of pids that
 * no longer run (a run killed with SIGKILL). */
static void reap_stale(const char *ip_bin)
{
	DIR *d = opendir("/run/netns");
	if (d) {
		struct dirent *e;
		char names[64][256];
		int k = 0;
		while ((e = readdir(d)) && k < 64)
			if (strncmp(e->d_name, "samsa-", 6) == 0 && pid_gone(e->d_name + 6) &&
			    strlen(e->d_name) < sizeof(names[0]))
				snprintf(names[k++], sizeof(names[0]), "%s", e->d_name);
		closedir(d);
		for (int i = 0; i < k; i++) {
			fprintf(stderr, "netns: removing namespace %s left by a run that is gone\n",
				names[i]);
			ip_cmd(ip_bin, true, "netns", "del", names[i], NULL);
		}
	}
	struct if_nameindex *ifs = if_nameindex();
	if (!ifs)
		return;
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		const char *s = i->if_name;
		if (strncmp(s, "samsa", 5) == 0 && s[5] >= '0' && s[5] <= '9' && pid_gone(s + 5)) {
			fprintf(stderr, "netns: removing link %s left by a run that is gone\n", s);
			ip_cmd(ip_bin, true, "link", "del", s, NULL);
		}
	}
	if_freenameindex(ifs);
}

/* A /24 of 10.99.0.0/16 that no address of this namespace is in. */
static int free_subnet(void)
{
	bool used[256] = {false};
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0)
		return 0;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		if ((a >> 16) == ((10u << 8) | 99u))
			used[(a >> 8) & 0xff] = true;
	}
	freeifaddrs(ifa);
	for (int x = 0; x < 256; x++)
		if (!used[x])
			return x;
	return -1;
}

/* ---- making and removing ---- */

static const char nft_table[] =
    "table inet samsa {\n"
    "  set blocked { type ipv4_addr; }\n"
    "  chain input { type filter hook input priority 0; policy accept; "
    "ip saddr @blocked drop; }\n"
    "  chain output { type filter hook output priority 0; policy accept; "
    "ip daddr @blocked drop; }\n"
    "}\n";

static bool valid_name(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > 15 || strcmp(s, "root") == 0)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static void remove_all(hn_net *n)
{
	for (int i = 1; i <= n->n; i++) {
		ip_cmd(n->ip_bin, true, "link", "del", n->node[i].veth, NULL);
		ip_cmd(n->ip_bin, true, "netns", "del", n->node[i].ns, NULL);
	}
	ip_cmd(n->ip_bin, true, "link", "del", n->bridge, NULL);
	n->made = false;
}

static void free_at_fini(void *arg)
{
	hn_free(arg);
}

hn_net *hn_new(const char *const *names, char *why, size_t cap)
{
	if (cap)
		why[0] = 0;
	hn_net *n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	n->owner = getpid();
	if (!find_bin("ip", n->ip_bin, sizeof(n->ip_bin)) ||
	    !find_bin("nft", n->nft_bin, sizeof(n->nft_bin))) {
		snprintf(why, cap, "ip or nft not found");
		free(n);
		return NULL;
	}
	for (int i = 0; names[i]; i++) {
		if (i >= HN_MAX_NODES || !valid_name(names[i])) {
			snprintf(why, cap, "node %d (%s): more than %d nodes, or not a name of "
				 "[a-z0-9]{1,15}", i + 1, names[i], HN_MAX_NODES);
			free(n);
			return NULL;
		}
		n->n = i + 1;
	}
	reap_stale(n->ip_bin);
	n->subnet = free_subnet();
	if (n->subnet < 0) {
		snprintf(why, cap, "every /24 of 10.99.0.0/16 is in use here");
		free(n);
		return NULL;
	}
	/* Linux's pids have at most 7 digits (pid_max <= 4194304): interface
	 * names stay within their 15 characters */
	unsigned pid = (unsigned)n->owner % 10000000u;
	snprintf(n->bridge, sizeof(n->bridge), "samsa%u", pid);
	snprintf(n->node[HN_ROOT].name, sizeof(n->node[0].name), "root");
	snprintf(n->node[HN_ROOT].ip, sizeof(n->node[0].ip), "10.99.%d.1", n->subnet & 0xff);
	for (int i = 1; i <= n->n; i++) {
		hn_node *d = &n->node[i];
		snprintf(d->name, sizeof(d->name), "%s", names[i - 1]);
		snprintf(d->ns, sizeof(d->ns), "samsa-%u-%s", pid, names[i - 1]);
		snprintf(d->ip, sizeof(d->ip), "10.99.%u.%u", (unsigned)n->subnet & 0xffu,
			 (unsigned)(10 + i) & 0xffu);
		snprintf(d->veth, sizeof(d->veth), "samsa%uv%u", pid, (unsigned)i % 10u);
	}
	n->made = true;
	h_at_fini(free_at_fini, n);

	char cidr[32];
	snprintf(cidr, sizeof(cidr), "%s/24", n->node[HN_ROOT].ip);
	const char *ipb = n->ip_bin;
	bool ok = ip_cmd(ipb, false, "link", "add", n->bridge, "type", "bridge", NULL) == 0 &&
		  ip_cmd(ipb, false, "addr", "add", cidr, "dev", n->bridge, NULL) == 0 &&
		  ip_cmd(ipb, false, "link", "set", n->bridge, "up", NULL) == 0;
	for (int i = 1; ok && i <= n->n; i++) {
		hn_node *d = &n->node[i];
		snprintf(cidr, sizeof(cidr), "%s/24", d->ip);
		ok = ip_cmd(ipb, false, "netns", "add", d->ns, NULL) == 0 &&
		     ip_cmd(ipb, false, "link", "add", d->veth, "type", "veth", "peer", "name", "eth0",
			    "netns", d->ns, NULL) == 0 &&
		     ip_cmd(ipb, false, "link", "set", d->veth, "master", n->bridge, "up", NULL) == 0 &&
		     ip_cmd(ipb, false, "-n", d->ns, "addr", "add", cidr, "dev", "eth0", NULL) == 0 &&
		     ip_cmd(ipb, false, "-n", d->ns, "link", "set", "eth0", "up", NULL) == 0 &&
		     ip_cmd(ipb, false, "-n", d->ns, "link", "set", "lo", "up", NULL) == 0 &&
		     nft_script(n, i, nft_table) == 0;
	}
	/* Another run may have taken the same /24 meanwhile: then both would
	 * answer for the same addresses. */
	if (ok) {
		struct ifaddrs *ifa;
		int same = 0;
		if (getifaddrs(&ifa) == 0) {
			for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
				if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
					uint32_t a = ntohl(
					    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
					same += (a >> 8) == ((10u << 16) | (99u << 8) | (uint32_t)n->subnet);
				}
			freeifaddrs(ifa);
		}
		if (same != 1) {
			snprintf(why, cap, "10.99.%d.0/24 was taken by another run meanwhile",
				 n->subnet);
			ok = false;
		}
	}
	if (!ok) {
		if (!why[0])
			snprintf(why, cap, "could not build the network (commands above)");
		hn_free(n);
		return NULL;
	}
	return n;
}

void hn_free(hn_net *n)
{
	if (!n)
		return;
	if (n->made && n->owner == getpid())
		remove_all(n);
	h_at_fini_remove(free_at_fini, n);
	free(n);
}

/* ---- nodes ---- */

int hn_find(const hn_net *n, const char *name)
{
	if (strcmp(name, "root") == 0)
		return HN_ROOT;
	for (int i = 1; i <= n->n; i++)
		if (strcmp(n->node[i].name, name) == 0)
			return i;
	return -1;
}

const char *hn_ip(const hn_net *n, int node)
{
	return node >= 0 && node <= n->n ? n->node[node].ip : "";
}

const char *hn_ns(const hn_net *n, int node)
{
	return node >= 0 && node <= n->n ? n->node[node].ns : "";
}

/* ---- rules ---- */

/* Write node's set of blocked addresses from n->cut[node]. */
static int sync_node(hn_net *n, int node)
{
	if (node == HN_ROOT)
		return 0;
	char script[1024];
	size_t len = (size_t)snprintf(script, sizeof(script), "flush set inet samsa blocked\n");
	int k = 0;
	for (int o = 0; o <= n->n; o++) {
		if (!n->cut[node][o])
			continue;
		len += (size_t)snprintf(script + len, sizeof(script) - len, "%s%s",
					k++ ? ", " : "add element inet samsa blocked { ",
					n->node[o].ip);
		if (len >= sizeof(script))
			return -1;
	}
	if (k)
		snprintf(script + len, sizeof(script) - len, " }\n");
	return nft_script(n, node, script);
}

static bool valid_pair(const hn_net *n, int a, int b)
{
	if (a < 0 || b < 0 || a > n->n || b > n->n || a == b) {
		fprintf(stderr, "netns: no link between nodes %d and %d\n", a, b);
		return false;
	}
	return true;
}

static int set_pair(hn_net *n, int a, int b, bool cut)
{
	if (!valid_pair(n, a, b))
		return -1;
	n->cut[a][b] = n->cut[b][a] = cut;
	int rc = sync_node(n, a);
	return sync_node(n, b) == 0 && rc == 0 ? 0 : -1;
}

int hn_cut(hn_net *n, int a, int b)
{
	return set_pair(n, a, b, true);
}

int hn_heal(hn_net *n, int a, int b)
{
	return set_pair(n, a, b, false);
}

int hn_partition(hn_net *n, const int *side_a, int na, const int *side_b, int nb)
{
	bool touched[HN_MAX_NODES + 1] = {false};
	for (int i = 0; i < na; i++)
		for (int k = 0; k < nb; k++) {
			int a = side_a[i], b = side_b[k];
			if (!valid_pair(n, a, b))
				return -1;
			n->cut[a][b] = n->cut[b][a] = true;
			touched[a] = touched[b] = true;
		}
	int rc = 0;
	for (int i = 1; i <= n->n; i++)
		if (touched[i] && sync_node(n, i) < 0)
			rc = -1;
	return rc;
}

int hn_isolate(hn_net *n, int a)
{
	int others[HN_MAX_NODES + 1], k = 0;
	for (int i = 0; i <= n->n; i++)
		if (i != a)
			others[k++] = i;
	return hn_partition(n, &a, 1, others, k);
}

int hn_heal_all(hn_net *n)
{
	memset(n->cut, 0, sizeof(n->cut));
	int rc = 0;
	for (int i = 1; i <= n->n; i++)
		if (sync_node(n, i) < 0)
			rc = -1;
	return rc;
}

bool hn_is_cut(const hn_net *n, int a, int b)
{
	return a >= 0 && b >= 0 && a <= n->n && b <= n->n && n->cut[a][b];
}

const char *hn_describe(const hn_net *n, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (int a = 0; a <= n->n; a++)
		for (int b = a + 1; b <= n->n; b++)
			if (n->cut[a][b] && len < cap)
				len += (size_t)snprintf(buf + len, cap - len, "%s%s|%s", len ? " " : "",
							n->node[a].name, n->node[b].name);
	return buf;
}

/* ---- threads ---- */

int hn_enter(const hn_net *n, int node, int *saved)
{
	*saved = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*saved < 0)
		return -1;
	if (node == HN_ROOT) {
		/* the root namespace: the one of the owner process's first thread */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)n->owner);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int rc = fd >= 0 ? setns(fd, CLONE_NEWNET) : -1;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (node < 0 || node > n->n || h_setns(n->node[node].ns) < 0) {
		fprintf(stderr, "netns: cannot enter node %d: %s\n", node, strerror(errno));
		close(*saved);
		*saved = -1;
		return -1;
	}
	return 0;
}

int hn_leave(int saved)
{
	if (saved < 0)
		return -1;
	int rc = setns(saved, CLONE_NEWNET);
	close(saved);
	return rc;
}
