/*
 * netns.h - a private network on this machine for the partition tests
 * (CLUSTER.md 6.5, harness B): one network namespace per node (ZooKeeper,
 * each broker, client namespaces), each with a veth pair whose other end
 * is a port of a bridge in the root namespace, all in one /24 of
 * 10.99.0.0/16 (10.99.0.0/24 unless a run beside this one holds it):
 *
 *   root namespace (the test process: its clients, its ZooKeeper session,
 *   the checker)   bridge "samsa<pid>"   10.99.X.1
 *   node i         namespace "samsa-<pid>-<name>", eth0   10.99.X.(10+i)
 *
 * Partitions are nftables rules inside the namespaces (never in the root
 * namespace): each node's namespace holds a table "inet samsa" with a set
 * of blocked addresses, dropped on input (from them) and output (to them).
 * A cut between two nodes puts each in the other's set, so both
 * directions go silent, as in a real partition (no reset, no ICMP): open
 * TCP connections stall and retransmit, new ones time out. A cut between a
 * node and the root namespace (HN_ROOT: "cut off from the clients") is a
 * rule in the node's namespace against the root's address. Healing takes
 * the addresses out again; connections that have not timed out go on.
 *
 * Traffic only ever goes to loopback or to addresses of these namespaces.
 * Names carry the pid of the process that made them, so runs side by side
 * do not meet. hn_new registers hn_free with h_at_fini (harness.h): the
 * namespaces, veths and bridge go at exit and on SIGTERM/SIGINT/SIGHUP of
 * the owner process; a process forked from it (check's fork mode) may
 * change the rules but removes nothing. hn_new also removes what an
 * earlier run killed with SIGKILL left behind (names of this scheme whose
 * pid no longer runs). Tables inside a namespace go with it.
 *
 * Needs root (CAP_SYS_ADMIN for `ip netns add`, CAP_NET_ADMIN) and the
 * `ip` (iproute2) and `nft` (nftables) programs; hn_available says whether
 * they are there. Functions return 0 or -1 with a line on stderr. Knows
 * nothing of check, brokers or librdkafka.
 */
#ifndef SAMSA_COMPAT_NETNS_H
#define SAMSA_COMPAT_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HN_MAX_NODES 8
/* The root namespace as a node: the test process itself (clients). */
#define HN_ROOT 0

typedef struct hn_node {
	char name[16];  /* "zk", "b1", ...; "root" for HN_ROOT */
	char ns[64];    /* "samsa-<pid>-<name>"; "" for HN_ROOT */
	char ip[16];    /* its address */
	char veth[16];  /* the root-side end of its veth pair */
} hn_node;

typedef struct hn_net {
	pid_t owner;            /* the process that made it (removes it) */
	int subnet;             /* X of 10.99.X.0/24 */
	char bridge[16];
	char ip_bin[64], nft_bin[64]; /* the programs */
	int n;                  /* nodes 1..n; node[HN_ROOT] is the root namespace */
	hn_node node[HN_MAX_NODES + 1];
	/* cut[a][b]: a drops traffic from and to b (as this process last set
	 * it; a forked child's changes stay in its copy) */
	bool cut[HN_MAX_NODES + 1][HN_MAX_NODES + 1];
	bool made;              /* hn_free has something to remove */
} hn_net;

/* 0 when this process can make namespaces (the programs are found and a
 * probe namespace can be added and removed); -1 with the reason in why. */
int hn_available(char *why, size_t cap);

/* Make the network with the nodes named in names (NULL-terminated, at
 * most HN_MAX_NODES, each at most 15 characters of [a-z0-9]). NULL with
 * the reason in why; whatever was made is removed again. */
hn_net *hn_new(const char *const *names, char *why, size_t cap);

/* Remove the namespaces, veths and bridge (owner process only; elsewhere
 * only the memory), free. NULL is a no-op. */
void hn_free(hn_net *n);

/* The node called name, or -1 ("root" is HN_ROOT). */
int hn_find(const hn_net *n, const char *name);

/* A node's address and namespace name ("" for the root). */
const char *hn_ip(const hn_net *n, int node);
const char *hn_ns(const hn_net *n, int node);

/* Partition a from b (both directions silent). a != b; either may be
 * HN_ROOT (then only the other's namespace gets a rule). */
int hn_cut(hn_net *n, int a, int b);

/* Undo hn_cut(a, b). */
int hn_heal(hn_net *n, int a, int b);

/* Every node of side_a[0..na) from every node of side_b[0..nb). */
int hn_partition(hn_net *n, const int *side_a, int na, const int *side_b, int nb);

/* Node a from every other node and from the root. */
int hn_isolate(hn_net *n, int a);

/* Empty every namespace's set of blocked addresses, whatever this
 * process believes (a test after one that failed mid-partition). */
int hn_heal_all(hn_net *n);

/* Whether a and b are cut (in this process's view). */
bool hn_is_cut(const hn_net *n, int a, int b);

/* The current cuts as text ("b1|zk b1|b2", "" when none) into buf. */
const char *hn_describe(const hn_net *n, char *buf, size_t cap);

/*
 * Move the calling thread into node's namespace (HN_ROOT: back to the
 * root); *saved gets a descriptor of the namespace it was in, for
 * hn_leave. Threads it creates afterwards (a librdkafka client made now)
 * live there too; sockets stay in the namespace they were made in.
 */
int hn_enter(const hn_net *n, int node, int *saved);
int hn_leave(int saved);

#endif
