/*
 * groups_common.c - shared helpers of the consumer-group compat tests
 * (see groups_common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POSIX and GNU extensions (nftw, strsignal...) */
#endif
#include "compat-tests/groups_common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-tests/wire.h"

/* ---- broker and topic ---- */

h_broker *gt_start_broker(const char *const *extra)
{
	const char *all[H_MAX_OVERRIDES + 1];
	int n = 0;
	all[n++] = "group.initial.rebalance.delay.ms=0";
	all[n++] = "group.min.session.timeout.ms=1000";
	for (int i = 0; extra && extra[i]; i++) {
		ck_assert_msg(n < H_MAX_OVERRIDES, "too many broker overrides");
		all[n++] = extra[i];
	}
	all[n] = NULL;
	return c_start_broker(all);
}

void gt_create_topic(const h_broker *b, const char *topic, int np)
{
	rd_kafka_t *p = c_producer(b, NULL);
	char errstr[512];
	rd_kafka_resp_err_t err = c_create_topic(p, topic, np, 1, NULL, errstr, sizeof(errstr));
	ck_assert_msg(err == 0, "CreateTopics %s: %s %s", topic, rd_kafka_err2name(err), errstr);
	c_wait_topic(p, topic, np, h_scaled_ms(10000));
	rd_kafka_destroy(p);
}

/* ---- members ---- */

static void note_bad(gt_member *m, const char *fmt, const char *detail)
{
	if (m->bad[0])
		return;
	snprintf(m->bad, sizeof(m->bad), fmt, detail);
	fprintf(stderr, "groups: member %s: %s\n", m->name, m->bad);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	gt_member *m = opaque;
	const char *proto = rd_kafka_rebalance_protocol(rk);
	int coop = proto && strcmp(proto, "COOPERATIVE") == 0;
	snprintf(m->protocol, sizeof(m->protocol), "%s", proto ? proto : "NONE");

	for (int i = 0; parts && i < parts->cnt; i++) {
		const rd_kafka_topic_partition_t *tp = &parts->elems[i];
		if (strcmp(tp->topic, m->topic) != 0)
			note_bad(m, "rebalance callback names topic %s", tp->topic);
		else if (tp->partition < 0 || tp->partition >= m->np)
			note_bad(m, "rebalance callback names a partition out of range%s", "");
	}

	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		m->n_assign++;
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
			if (e) {
				note_bad(m, "incremental_assign: %s", rd_kafka_error_string(e));
				rd_kafka_error_destroy(e);
			}
		} else {
			rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
			if (e)
				note_bad(m, "assign: %s", rd_kafka_err2str(e));
			memset(m->assigned, 0, sizeof(m->assigned));
		}
		for (int i = 0; parts && i < parts->cnt; i++)
			if (parts->elems[i].partition >= 0 && parts->elems[i].partition < m->np)
				m->assigned[parts->elems[i].partition] = 1;
	} else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
		m->n_revoke++;
		if (rd_kafka_assignment_lost(rk))
			m->n_lost++;
		m->parts_revoked += parts ? parts->cnt : 0;
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
			if (e) {
				note_bad(m, "incremental_unassign: %s", rd_kafka_error_string(e));
				rd_kafka_error_destroy(e);
			}
			for (int i = 0; parts && i < parts->cnt; i++)
				if (parts->elems[i].partition >= 0 &&
				    parts->elems[i].partition < m->np)
					m->assigned[parts->elems[i].partition] = 0;
		} else {
			rd_kafka_assign(rk, NULL);
			memset(m->assigned, 0, sizeof(m->assigned));
		}
	} else {
		note_bad(m, "rebalance callback with error %s", rd_kafka_err2name(err));
		rd_kafka_assign(rk, NULL);
		memset(m->assigned, 0, sizeof(m->assigned));
	}
	m->last_event_ms = h_now_ms();
}

static const char *const member_defaults[] = {
	"auto.offset.reset", "earliest",
	"enable.partition.eof", "false",
	"heartbeat.interval.ms", "200",
	"session.timeout.ms", "6000",
	"fetch.wait.max.ms", "100",
	"topic.metadata.refresh.interval.ms", "2000",
	NULL,
};

/* No check calls here: the child process uses it outside a check test
 * (where even a passing ck_assert fails, reporting progress to no runner). */
static gt_member *member_alloc_plain(const char *name, const char *topic, int np)
{
	gt_member *m = calloc(1, sizeof(*m));
	if (!m || np <= 0 || np > GT_MAXP) {
		free(m);
		return NULL;
	}
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->topic, sizeof(m->topic), "%s", topic);
	m->np = np;
	m->fd = -1;
	snprintf(m->protocol, sizeof(m->protocol), "NONE");
	return m;
}

static gt_member *member_alloc(const char *name, const char *topic, int np)
{
	gt_member *m = member_alloc_plain(name, topic, np);
	ck_assert_msg(m != NULL, "out of memory, or not 1..%d partitions", GT_MAXP);
	return m;
}

gt_member *gt_member_new(const h_broker *b, const char *name, const char *group,
			 const char *topic, int np, const char *const *kv)
{
	gt_member *m = member_alloc(name, topic, np);
	rd_kafka_conf_t *conf = c_conf(b);
	c_set(conf, "group.id", group);
	c_set(conf, "client.id", name);
	c_set_all(conf, member_defaults);
	c_set_all(conf, kv);
	rd_kafka_conf_set_opaque(conf, m);
	rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	m->rk = c_new(RD_KAFKA_CONSUMER, conf);
	rd_kafka_poll_set_consumer(m->rk);
	return m;
}

void gt_subscribe(gt_member *m)
{
	ck_assert(m->rk != NULL);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, m->topic, RD_KAFKA_PARTITION_UA);
	rd_kafka_resp_err_t err = rd_kafka_subscribe(m->rk, l);
	rd_kafka_topic_partition_list_destroy(l);
	ck_assert_msg(err == 0, "%s: subscribe %s: %s", m->name, m->topic, rd_kafka_err2str(err));
}

static void handle_msg(gt_member *m, rd_kafka_message_t *msg)
{
	if (msg->err) {
		if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
			return;
		m->n_errors++;
		m->last_err = msg->err;
		snprintf(m->last_errstr, sizeof(m->last_errstr), "%s", rd_kafka_message_errstr(msg));
		fprintf(stderr, "groups: member %s: consumer error %s: %s\n", m->name,
			rd_kafka_err2name(msg->err), m->last_errstr);
		return;
	}
	m->n_msgs++;
	if (msg->partition < 0 || msg->partition >= m->np || !m->assigned[msg->partition])
		m->n_foreign++;
	if (m->on_msg)
		m->on_msg(m, msg, m->opaque);
}

/* A line from the child: "E <assigns> <revokes> <lost> <parts_revoked> p,p,p|-"
 * or "X <err> <text>" for a consumer error or "F <err>" for a fatal one. */
static void child_line(gt_member *m, char *line)
{
	if (line[0] == 'E') {
		int a, r, l, pr, off = 0;
		if (sscanf(line, "E %d %d %d %d %n", &a, &r, &l, &pr, &off) < 4)
			return;
		memset(m->assigned, 0, sizeof(m->assigned));
		m->n_assign = a;
		m->n_revoke = r;
		m->n_lost = l;
		m->parts_revoked = pr;
		for (char *s = line + off; *s && *s != '-';) {
			long p = strtol(s, &s, 10);
			if (p >= 0 && p < m->np)
				m->assigned[p] = 1;
			if (*s == ',')
				s++;
			else
				break;
		}
		m->last_event_ms = h_now_ms();
	} else if (line[0] == 'X') {
		m->n_errors++;
		m->last_err = (rd_kafka_resp_err_t)atoi(line + 2);
		snprintf(m->last_errstr, sizeof(m->last_errstr), "%s", line + 2);
	} else if (line[0] == 'F') {
		m->fatal_err = (rd_kafka_resp_err_t)atoi(line + 2);
	} else if (line[0] == 'M') {
		m->n_msgs = atol(line + 2);
	}
}

static void child_read(gt_member *m, int timeout_ms)
{
	if (m->fd < 0)
		return;
	struct pollfd pfd = {.fd = m->fd, .events = POLLIN};
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return;
	for (;;) {
		ssize_t got = read(m->fd, m->line + m->linelen, sizeof(m->line) - 1 - m->linelen);
		if (got <= 0)
			break;
		m->linelen += (size_t)got;
		m->line[m->linelen] = 0;
		char *nl;
		while ((nl = strchr(m->line, '\n'))) {
			*nl = 0;
			child_line(m, m->line);
			size_t rest = m->linelen - (size_t)(nl + 1 - m->line);
			memmove(m->line, nl + 1, rest);
			m->linelen = rest;
			m->line[m->linelen] = 0;
		}
		if (m->linelen == sizeof(m->line) - 1)
			m->linelen = 0; /* a line that long is garbage */
	}
}

void gt_poll(gt_member *m, int timeout_ms)
{
	if (m->pid || m->fd >= 0) {
		child_read(m, timeout_ms);
		return;
	}
	if (!m->rk)
		return;
	rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, timeout_ms);
	for (int k = 0; msg; k++) {
		handle_msg(m, msg);
		rd_kafka_message_destroy(msg);
		if (k >= 1000)
			break;
		msg = rd_kafka_consumer_poll(m->rk, 0);
	}
	if (!m->fatal_err) {
		char es[256];
		m->fatal_err = rd_kafka_fatal_error(m->rk, es, sizeof(es));
		if (m->fatal_err)
			fprintf(stderr, "groups: member %s: fatal error %s: %s\n", m->name,
				rd_kafka_err2name(m->fatal_err), es);
	}
}

void gt_poll_all(gt_member **ms, int n, int total_ms)
{
	long long end = h_now_ms() + total_ms;
	do {
		for (int i = 0; i < n; i++)
			gt_poll(ms[i], 10);
	} while (h_now_ms() < end);
}

void gt_close(gt_member *m)
{
	if (!m->rk)
		return;
	rd_kafka_resp_err_t err = rd_kafka_consumer_close(m->rk);
	if (err)
		fprintf(stderr, "groups: member %s: consumer_close: %s\n", m->name,
			rd_kafka_err2name(err));
	rd_kafka_destroy(m->rk);
	m->rk = NULL;
	memset(m->assigned, 0, sizeof(m->assigned));
}

void gt_member_free(gt_member *m)
{
	if (!m)
		return;
	if (m->rk)
		rd_kafka_destroy_flags(m->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	if (m->pid)
		gt_child_kill(m);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

int gt_count(const gt_member *m)
{
	int c = 0;
	for (int p = 0; p < m->np; p++)
		c += m->assigned[p];
	return c;
}

const char *gt_describe(gt_member **ms, int n, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < n && len < cap; i++) {
		len += (size_t)snprintf(buf + len, cap - len, "%s%s%s:[", i ? " " : "", ms[i]->name,
					ms[i]->dead ? "(killed)" : (!ms[i]->rk && !ms[i]->pid) ? "(closed)" : "");
		int first = 1;
		for (int p = 0; p < ms[i]->np && len < cap; p++)
			if (ms[i]->assigned[p]) {
				len += (size_t)snprintf(buf + len, cap - len, "%s%d", first ? "" : ",", p);
				first = 0;
			}
		if (len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "]");
	}
	return buf;
}

static int is_live(const gt_member *m)
{
	return !m->dead && (m->rk || m->pid);
}

int gt_settled(gt_member **ms, int n, int balanced, char *why, size_t cap)
{
	int np = ms[0]->np, live = 0;
	int owners[GT_MAXP] = {0};
	for (int i = 0; i < n; i++) {
		gt_member *m = ms[i];
		ck_assert_msg(!m->bad[0], "member %s: %s", m->name, m->bad);
		ck_assert_msg(!m->fatal_err, "member %s: fatal error %s", m->name,
			      rd_kafka_err2name(m->fatal_err));
		if (!is_live(m))
			continue;
		live++;
		for (int p = 0; p < np; p++)
			owners[p] += m->assigned[p];
		if (m->rk) {
			rd_kafka_topic_partition_list_t *l = NULL;
			rd_kafka_resp_err_t err = rd_kafka_assignment(m->rk, &l);
			ck_assert_msg(err == 0, "rd_kafka_assignment: %s", rd_kafka_err2str(err));
			int agree = 1, cnt = 0;
			for (int k = 0; k < l->cnt; k++) {
				int32_t p = l->elems[k].partition;
				if (strcmp(l->elems[k].topic, m->topic) == 0 && p >= 0 && p < np) {
					cnt++;
					if (!m->assigned[p])
						agree = 0;
				}
			}
			rd_kafka_topic_partition_list_destroy(l);
			if (!agree || cnt != gt_count(m)) {
				snprintf(why, cap, "%s: rd_kafka_assignment disagrees with callbacks",
					 m->name);
				return 0;
			}
		}
	}
	if (!live) {
		snprintf(why, cap, "no live member");
		return 0;
	}
	for (int p = 0; p < np; p++)
		if (owners[p] != 1) {
			snprintf(why, cap, "partition %d owned by %d members", p, owners[p]);
			return 0;
		}
	if (balanced) {
		int lo = np / live, hi = (np + live - 1) / live;
		for (int i = 0; i < n; i++) {
			if (!is_live(ms[i]))
				continue;
			int c = gt_count(ms[i]);
			if (c < lo || c > hi) {
				snprintf(why, cap, "%s owns %d partitions, expected %d..%d", ms[i]->name,
					 c, lo, hi);
				return 0;
			}
		}
	}
	return 1;
}

long long gt_wait_settled(gt_member **ms, int n, int balanced, int quiet_ms, int timeout_ms,
			  const char *what)
{
	long long deadline = h_now_ms() + h_scaled_ms(timeout_ms);
	char why[256] = "", desc[1024];
	for (;;) {
		gt_poll_all(ms, n, 50);
		long long last = 0;
		for (int i = 0; i < n; i++)
			if (ms[i]->last_event_ms > last)
				last = ms[i]->last_event_ms;
		if (gt_settled(ms, n, balanced, why, sizeof(why)) && h_now_ms() - last >= quiet_ms)
			return last;
		ck_assert_msg(h_now_ms() < deadline,
			      "%s: group did not settle within %d ms: %s; assignment: %s", what,
			      timeout_ms, why[0] ? why : "rebalance callbacks still coming",
			      gt_describe(ms, n, desc, sizeof(desc)));
	}
}

/* ---- the child-process consumer ---- */

gt_member *gt_child_new(const h_broker *b, const char *name, const char *group,
			const char *topic, int np, const char *const *kv)
{
	gt_member *m = member_alloc(name, topic, np);
	char npbuf[16];
	snprintf(npbuf, sizeof(npbuf), "%d", np);
	char *argv[64];
	char *kvs[32] = {0};
	int argc = 0, nkv = 0;
	argv[argc++] = "/proc/self/exe";
	argv[argc++] = GT_CHILD_ARG;
	argv[argc++] = (char *)b->bootstrap;
	argv[argc++] = (char *)name;
	argv[argc++] = (char *)group;
	argv[argc++] = (char *)topic;
	argv[argc++] = npbuf;
	for (int i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
		ck_assert(nkv < 32 && argc < 62);
		if (asprintf(&kvs[nkv], "%s=%s", kv[i], kv[i + 1]) < 0)
			ck_abort_msg("out of memory");
		argv[argc++] = kvs[nkv++];
	}
	argv[argc] = NULL;

	int pfd[2];
	ck_assert(pipe(pfd) == 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Only async-signal-safe calls until exec: the parent has threads. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	for (int i = 0; i < nkv; i++)
		free(kvs[i]);
	fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);
	m->pid = pid;
	m->fd = pfd[0];
	return m;
}

void gt_child_kill(gt_member *m)
{
	if (m->pid) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, NULL, 0);
		m->pid = 0;
	}
	m->dead = 1;
	memset(m->assigned, 0, sizeof(m->assigned));
}

static void child_report(gt_member *m)
{
	char line[512];
	int len = snprintf(line, sizeof(line), "E %d %d %d %d ", m->n_assign, m->n_revoke,
			   m->n_lost, m->parts_revoked);
	int any = 0;
	for (int p = 0; p < m->np && len < (int)sizeof(line) - 16; p++)
		if (m->assigned[p]) {
			len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%d", any ? "," : "",
					p);
			any = 1;
		}
	if (!any)
		line[len++] = '-';
	line[len++] = '\n';
	if (write(STDOUT_FILENO, line, (size_t)len) < 0)
		_exit(0);
}

int gt_child_main(int argc, char **argv)
{
	if (argc < 7)
		return 2;
	gt_member *m = member_alloc_plain(argv[3], argv[5], atoi(argv[6]));
	if (!m)
		return 2;
	char errstr[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const char *base[] = {"bootstrap.servers", argv[2], "broker.address.family", "v4",
			      "log.connection.close", "false", "group.id", argv[4],
			      "client.id", argv[3], NULL};
	for (int i = 0; base[i]; i += 2)
		if (rd_kafka_conf_set(conf, base[i], base[i + 1], errstr, sizeof(errstr)))
			return 3;
	for (int i = 0; member_defaults[i]; i += 2)
		if (rd_kafka_conf_set(conf, member_defaults[i], member_defaults[i + 1], errstr,
				      sizeof(errstr)))
			return 3;
	for (int i = 7; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq)
			return 3;
		*eq = 0;
		if (rd_kafka_conf_set(conf, argv[i], eq + 1, errstr, sizeof(errstr))) {
			fprintf(stderr, "child %s: %s\n", m->name, errstr);
			return 3;
		}
	}
	rd_kafka_conf_set_opaque(conf, m);
	rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	m->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!m->rk) {
		fprintf(stderr, "child %s: %s\n", m->name, errstr);
		return 4;
	}
	rd_kafka_poll_set_consumer(m->rk);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, m->topic, RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(m->rk, l))
		return 5;
	rd_kafka_topic_partition_list_destroy(l);

	/* Runs until killed (or its parent dies); gives up after 5 minutes. */
	long long end = h_now_ms() + 300000;
	long long seen_event = 0;
	long reported_msgs = 0;
	while (h_now_ms() < end) {
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, 50);
		if (msg) {
			if (msg->err && msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				printf("X %d %s\n", msg->err, rd_kafka_message_errstr(msg));
				fflush(stdout);
			} else if (!msg->err) {
				m->n_msgs++;
			}
			rd_kafka_message_destroy(msg);
		}
		if (m->last_event_ms != seen_event) {
			seen_event = m->last_event_ms;
			child_report(m);
		}
		if (m->n_msgs != reported_msgs) {
			reported_msgs = m->n_msgs;
			printf("M %ld\n", m->n_msgs);
			fflush(stdout);
		}
		if (!m->fatal_err) {
			m->fatal_err = rd_kafka_fatal_error(m->rk, errstr, sizeof(errstr));
			if (m->fatal_err) {
				printf("F %d\n", m->fatal_err);
				fflush(stdout);
			}
		}
	}
	rd_kafka_destroy(m->rk);
	free(m);
	return 0;
}

/* ---- records ---- */

gt_seen *gt_seen_new(int np, int cap)
{
	gt_seen *s = calloc(1, sizeof(*s));
	ck_assert(s != NULL);
	s->np = np;
	s->cap = cap;
	s->count = calloc((size_t)np * (size_t)cap, sizeof(*s->count));
	ck_assert(s->count != NULL);
	return s;
}

void gt_seen_free(gt_seen *s)
{
	if (!s)
		return;
	free(s->count);
	free(s);
}

void gt_seen_cb(gt_member *m, const rd_kafka_message_t *msg, void *opaque)
{
	(void)m;
	gt_seen *s = opaque;
	if (msg->partition < 0 || msg->partition >= s->np || msg->offset < 0 ||
	    msg->offset >= s->cap) {
		s->out_of_range++;
		return;
	}
	s->count[(size_t)msg->partition * (size_t)s->cap + (size_t)msg->offset]++;
}

void gt_produce(const h_broker *b, const char *topic, int np, int n, const char *tag,
		int64_t *end)
{
	rd_kafka_t *p = c_producer(b, (const char *const[]){"acks", "all", "linger.ms", "5", NULL});
	c_delivery *d = calloc((size_t)n, sizeof(*d));
	ck_assert(d != NULL);
	char val[64];
	for (int i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "%s-%d", tag, i);
		c_msg m = {.topic = topic, .partition = i % np, .value = val, .value_len = strlen(val)};
		c_produce(p, &m, &d[i]);
	}
	c_flush(p, h_scaled_ms(20000));
	for (int i = 0; i < n; i++) {
		ck_assert_msg(d[i].done && d[i].err == 0, "produce %s-%d: %s", tag, i,
			      rd_kafka_err2str(d[i].err));
		if (end) {
			ck_assert_msg(d[i].offset == end[i % np],
				      "produce %s-%d: offset %lld in partition %d, expected %lld", tag,
				      i, (long long)d[i].offset, i % np, (long long)end[i % np]);
			end[i % np]++;
		}
	}
	free(d);
	rd_kafka_destroy(p);
}

/* ---- admin ---- */

rd_kafka_event_t *gt_admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t evtype,
				int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	while (h_now_ms() < deadline) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 200);
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == evtype)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	ck_abort_msg("admin request: no result (event type %d) within %d ms", (int)evtype,
		     timeout_ms);
	return NULL;
}

rd_kafka_resp_err_t gt_delete_group(rd_kafka_t *rk, const char *group)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteGroup_t *dg = rd_kafka_DeleteGroup_new(group);
	rd_kafka_DeleteGroups(rk, &dg, 1, NULL, q);
	rd_kafka_DeleteGroup_destroy(dg);
	rd_kafka_event_t *ev = gt_admin_wait(q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT,
					     h_scaled_ms(20000));
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "DeleteGroups %s: request failed: %s", group,
		      rd_kafka_event_error_string(ev));
	size_t n = 0;
	const rd_kafka_group_result_t **gr =
	    rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &n);
	ck_assert_msg(n == 1, "DeleteGroups %s: %zu group results", group, n);
	ck_assert_str_eq(rd_kafka_group_result_name(gr[0]), group);
	const rd_kafka_error_t *e = rd_kafka_group_result_error(gr[0]);
	rd_kafka_resp_err_t err = e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	return err;
}

void gt_committed_admin(rd_kafka_t *rk, const char *group, const char *topic, int np,
			int64_t *off)
{
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(np);
	for (int p = 0; p < np; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p);
	rd_kafka_ListConsumerGroupOffsets_t *lo = rd_kafka_ListConsumerGroupOffsets_new(group, parts);
	rd_kafka_topic_partition_list_destroy(parts);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_ListConsumerGroupOffsets(rk, &lo, 1, NULL, q);
	rd_kafka_ListConsumerGroupOffsets_destroy(lo);
	rd_kafka_event_t *ev = gt_admin_wait(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT,
					     h_scaled_ms(20000));
	ck_assert_msg(rd_kafka_event_error(ev) == 0, "ListConsumerGroupOffsets %s: %s", group,
		      rd_kafka_event_error_string(ev));
	size_t n = 0;
	const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
	    rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
	ck_assert_msg(n == 1, "ListConsumerGroupOffsets %s: %zu group results", group, n);
	const rd_kafka_error_t *e = rd_kafka_group_result_error(gr[0]);
	ck_assert_msg(e == NULL, "ListConsumerGroupOffsets %s: group error %s", group,
		      e ? rd_kafka_error_string(e) : "");
	const rd_kafka_topic_partition_list_t *res = rd_kafka_group_result_partitions(gr[0]);
	ck_assert_msg(res != NULL, "ListConsumerGroupOffsets %s: no partitions", group);
	for (int p = 0; p < np; p++)
		off[p] = -12345;
	for (int k = 0; k < res->cnt; k++) {
		const rd_kafka_topic_partition_t *tp = &res->elems[k];
		ck_assert_msg(tp->err == 0, "ListConsumerGroupOffsets %s: %s [%d]: %s", group,
			      tp->topic, tp->partition, rd_kafka_err2name(tp->err));
		if (strcmp(tp->topic, topic) == 0 && tp->partition >= 0 && tp->partition < np)
			off[tp->partition] = tp->offset;
	}
	for (int p = 0; p < np; p++)
		ck_assert_msg(off[p] != -12345, "ListConsumerGroupOffsets %s: partition %d missing",
			      group, p);
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
}

/* ---- raw requests ---- */

int gt_raw_connect(const h_broker *b)
{
	int fd = w_connect(b->port, h_scaled_ms(5000));
	ck_assert_msg(fd >= 0, "cannot connect to 127.0.0.1:%d", b->port);
	return fd;
}

static int32_t raw_cid = 1000;

int32_t gt_raw_send(int fd, int16_t key, int16_t ver, const k_wbuf *body)
{
	size_t cap = body->len + 128;
	uint8_t *frame = malloc(cap);
	ck_assert(frame != NULL);
	int32_t cid = raw_cid++;
	int len = w_build_request(frame, cap, key, ver, cid, "gt-raw", body->b, body->len);
	ck_assert(len > 0);
	int rc = w_send_all(fd, frame, (size_t)len, h_scaled_ms(5000));
	free(frame);
	ck_assert_msg(rc == 0, "api %d v%d: send failed (%d)", key, ver, rc);
	return cid;
}

uint8_t *gt_raw_recv(int fd, int32_t cid, k_rbuf *r, int timeout_ms)
{
	uint8_t *body = NULL;
	int32_t len = 0;
	int rc = w_recv_frame(fd, &body, &len, 1 << 20, timeout_ms);
	ck_assert_msg(rc == WIRE_OK, "request %d: no response within %d ms (%s)", cid, timeout_ms,
		      rc == WIRE_CLOSED    ? "connection closed"
		      : rc == WIRE_TIMEOUT ? "timeout"
					   : "bad frame");
	*r = (k_rbuf){.b = body, .len = (size_t)len};
	int32_t got = kr_i32(r, "correlation id");
	ck_assert_msg(got == cid, "correlation id %d, expected %d", got, cid);
	return body;
}

int gt_raw_pending(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	return poll(&pfd, 1, ms) == 0;
}

void gt_kw_str(k_wbuf *w, const char *s)
{
	if (!s) {
		kw_i16(w, -1);
		return;
	}
	size_t n = strlen(s);
	kw_i16(w, (int16_t)n);
	kw_raw(w, s, n);
}

void gt_kw_bytes(k_wbuf *w, const void *p, int32_t n)
{
	if (!p) {
		kw_i32(w, -1);
		return;
	}
	kw_i32(w, n);
	kw_raw(w, p, (size_t)n);
}

int gt_kr_str(k_rbuf *r, char *out, size_t cap, const char *what)
{
	int16_t n = kr_i16(r, what);
	if (out && cap)
		out[0] = 0;
	if (n < 0)
		return -1;
	if (!kr_need(r, (size_t)n, what))
		return -1;
	if (out && cap) {
		size_t c = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->b + r->pos, c);
		out[c] = 0;
	}
	r->pos += (size_t)n;
	return n;
}

int32_t gt_kr_bytes(k_rbuf *r, void *out, size_t cap, const char *what)
{
	int32_t n = kr_i32(r, what);
	if (n < 0)
		return -1;
	if (!kr_need(r, (size_t)n, what))
		return -1;
	if (out)
		memcpy(out, r->b + r->pos, (size_t)n < cap ? (size_t)n : cap);
	r->pos += (size_t)n;
	return n;
}

int32_t gt_raw_find_coordinator(const h_broker *b, const char *group)
{
	int fd = gt_raw_connect(b);
	long long deadline = h_now_ms() + h_scaled_ms(20000);
	for (;;) {
		k_wbuf *w = calloc(1, sizeof(*w));
		ck_assert(w != NULL);
		gt_kw_str(w, group);
		kw_u8(w, 0); /* key type: group */
		int32_t cid = gt_raw_send(fd, 10, 1, w);
		free(w);
		k_rbuf r;
		uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
		kr_i32(&r, "throttle_time_ms");
		int16_t err = kr_i16(&r, "error_code");
		char msg[256], host[256];
		gt_kr_str(&r, msg, sizeof(msg), "error_message");
		int32_t node = kr_i32(&r, "node_id");
		gt_kr_str(&r, host, sizeof(host), "host");
		int32_t port = kr_i32(&r, "port");
		kr_done(&r, "FindCoordinator v1 response");
		free(resp);
		if (err == GT_COORDINATOR_NOT_AVAILABLE || err == GT_COORDINATOR_LOAD_IN_PROGRESS) {
			ck_assert_msg(h_now_ms() < deadline,
				      "FindCoordinator %s: still error %d after 20 s (%s)", group, err,
				      msg);
			usleep(100 * 1000);
			continue;
		}
		ck_assert_msg(err == 0, "FindCoordinator %s: error %d (%s)", group, err, msg);
		ck_assert_msg(strcmp(host, "127.0.0.1") == 0 && port == b->port,
			      "FindCoordinator %s: coordinator %s:%d, expected 127.0.0.1:%d", group,
			      host, port, b->port);
		close(fd);
		return node;
	}
}

void gt_subscription_bytes(k_wbuf *w, const char *topic)
{
	kw_i16(w, 0);
	kw_i32(w, 1);
	gt_kw_str(w, topic);
	kw_i32(w, -1); /* user data: null */
}

void gt_assignment_bytes(k_wbuf *w, const char *topic, const int32_t *parts, int n)
{
	kw_i16(w, 0);
	kw_i32(w, 1);
	gt_kw_str(w, topic);
	kw_i32(w, n);
	for (int i = 0; i < n; i++)
		kw_i32(w, parts[i]);
	kw_i32(w, -1); /* user data: null */
}

int32_t gt_join_send(int fd, int16_t ver, const char *group, const char *member_id,
		     const char *instance_id, int session_ms, int rebalance_ms,
		     const char *ptype, const char *const *protos, const char *topic)
{
	ck_assert(ver >= 1 && ver <= 5);
	k_wbuf *w = calloc(1, sizeof(*w));
	k_wbuf *meta = calloc(1, sizeof(*meta));
	ck_assert(w && meta);
	gt_subscription_bytes(meta, topic);
	gt_kw_str(w, group);
	kw_i32(w, session_ms);
	kw_i32(w, rebalance_ms);
	gt_kw_str(w, member_id);
	if (ver >= 5)
		gt_kw_str(w, instance_id);
	gt_kw_str(w, ptype);
	int n = 0;
	while (protos[n])
		n++;
	kw_i32(w, n);
	for (int i = 0; i < n; i++) {
		gt_kw_str(w, protos[i]);
		gt_kw_bytes(w, meta->b, (int32_t)meta->len);
	}
	int32_t cid = gt_raw_send(fd, 11, ver, w);
	free(w);
	free(meta);
	return cid;
}

void gt_join_recv(int fd, int16_t ver, int32_t cid, gt_join_result *out, int timeout_ms)
{
	memset(out, 0, sizeof(*out));
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, timeout_ms);
	if (ver >= 2)
		kr_i32(&r, "throttle_time_ms");
	out->err = kr_i16(&r, "error_code");
	out->generation = kr_i32(&r, "generation_id");
	gt_kr_str(&r, out->protocol, sizeof(out->protocol), "protocol_name");
	gt_kr_str(&r, out->leader, sizeof(out->leader), "leader");
	gt_kr_str(&r, out->member_id, sizeof(out->member_id), "member_id");
	int32_t n = kr_i32(&r, "members count");
	ck_assert_msg(n >= 0 && n < 10000, "JoinGroup v%d: %d members", ver, n);
	out->nmembers = n;
	for (int32_t i = 0; i < n; i++) {
		char id[256];
		gt_kr_str(&r, id, sizeof(id), "member id");
		if (ver >= 5)
			gt_kr_str(&r, NULL, 0, "group_instance_id");
		int32_t ml = gt_kr_bytes(&r, NULL, 0, "member metadata");
		if (i < 8) {
			snprintf(out->members[i], sizeof(out->members[i]), "%s", id);
			out->metadata_len[i] = ml;
		}
	}
	kr_done(&r, "JoinGroup response");
	free(resp);
}

int32_t gt_sync_send(int fd, const char *group, int32_t generation, const char *member_id,
		     const char *instance_id, int n, const char *const *members,
		     const char *topic, const int32_t *const *parts, const int *nparts)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	k_wbuf *a = calloc(1, sizeof(*a));
	ck_assert(w && a);
	gt_kw_str(w, group);
	kw_i32(w, generation);
	gt_kw_str(w, member_id);
	gt_kw_str(w, instance_id);
	kw_i32(w, n);
	for (int i = 0; i < n; i++) {
		a->len = 0;
		gt_assignment_bytes(a, topic, parts[i], nparts[i]);
		gt_kw_str(w, members[i]);
		gt_kw_bytes(w, a->b, (int32_t)a->len);
	}
	int32_t cid = gt_raw_send(fd, 14, 3, w);
	free(w);
	free(a);
	return cid;
}

int16_t gt_sync_recv(int fd, int32_t cid, uint8_t *out, size_t cap, int32_t *outlen,
		     int timeout_ms)
{
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, timeout_ms);
	kr_i32(&r, "throttle_time_ms");
	int16_t err = kr_i16(&r, "error_code");
	int32_t n = gt_kr_bytes(&r, out, cap, "assignment");
	if (outlen)
		*outlen = n;
	kr_done(&r, "SyncGroup v3 response");
	free(resp);
	return err;
}

int16_t gt_heartbeat(int fd, const char *group, int32_t generation, const char *member_id,
		     const char *instance_id)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert(w != NULL);
	gt_kw_str(w, group);
	kw_i32(w, generation);
	gt_kw_str(w, member_id);
	gt_kw_str(w, instance_id);
	int32_t cid = gt_raw_send(fd, 12, 3, w);
	free(w);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	kr_i32(&r, "throttle_time_ms");
	int16_t err = kr_i16(&r, "error_code");
	kr_done(&r, "Heartbeat v3 response");
	free(resp);
	return err;
}

int16_t gt_leave(int fd, const char *group, const char *member_id, const char *instance_id,
		 int16_t *member_err)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert(w != NULL);
	gt_kw_str(w, group);
	kw_i32(w, 1);
	gt_kw_str(w, member_id);
	gt_kw_str(w, instance_id);
	int32_t cid = gt_raw_send(fd, 13, 3, w);
	free(w);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	kr_i32(&r, "throttle_time_ms");
	int16_t err = kr_i16(&r, "error_code");
	int32_t n = kr_i32(&r, "members count");
	int16_t merr = -1;
	for (int32_t i = 0; i < n && !r.err; i++) {
		gt_kr_str(&r, NULL, 0, "member_id");
		gt_kr_str(&r, NULL, 0, "group_instance_id");
		int16_t e = kr_i16(&r, "member error_code");
		if (i == 0)
			merr = e;
	}
	kr_done(&r, "LeaveGroup v3 response");
	free(resp);
	if (member_err)
		*member_err = merr;
	return err;
}

int16_t gt_commit_raw(int fd, const char *group, int32_t generation, const char *member_id,
		      const char *instance_id, const char *topic, int32_t partition,
		      int64_t offset, const char *metadata)
{
	k_wbuf *w = calloc(1, sizeof(*w));
	ck_assert(w != NULL);
	gt_kw_str(w, group);
	kw_i32(w, generation);
	gt_kw_str(w, member_id);
	gt_kw_str(w, instance_id);
	kw_i32(w, 1);
	gt_kw_str(w, topic);
	kw_i32(w, 1);
	kw_i32(w, partition);
	kw_i64(w, offset);
	kw_i32(w, -1); /* committed leader epoch */
	gt_kw_str(w, metadata);
	int32_t cid = gt_raw_send(fd, 8, 7, w);
	free(w);
	k_rbuf r;
	uint8_t *resp = gt_raw_recv(fd, cid, &r, h_scaled_ms(10000));
	kr_i32(&r, "throttle_time_ms");
	int32_t nt = kr_i32(&r, "topics count");
	ck_assert_msg(nt == 1, "OffsetCommit v7: %d topics in the response", nt);
	char name[256];
	gt_kr_str(&r, name, sizeof(name), "topic name");
	ck_assert_str_eq(name, topic);
	int32_t np = kr_i32(&r, "partitions count");
	ck_assert_msg(np == 1, "OffsetCommit v7: %d partitions in the response", np);
	int32_t idx = kr_i32(&r, "partition_index");
	ck_assert_int_eq(idx, partition);
	int16_t err = kr_i16(&r, "error_code");
	kr_done(&r, "OffsetCommit v7 response");
	free(resp);
	return err;
}
