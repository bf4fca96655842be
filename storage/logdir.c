/*
 * logdir.c - the files of a log directory outside the partitions (see
 * logdir.h): lock, meta.properties, clean-shutdown marker, offset
 * checkpoints, partition.metadata, and Kafka's Uuid text form.
 */
#include "storage/logdir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fileio.h"
#include "storage/err.h"

#define CLEAN_MARKER ".kafka_cleanshutdown"
#define SMALL_FILE_MAX (1 << 20)
#define CHECKPOINT_MAX (256 << 20)

static int mkdir_p(const char *dir)
{
	char p[PATH_MAX];
	int rc = log_io_path(p, sizeof p, "%s", dir);
	if (rc < 0)
		return rc;
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int logdir_lock(const char *dir, int *lock_fd)
{
	char path[PATH_MAX];
	int rc = mkdir_p(dir);
	if (rc == 0)
		rc = log_io_path(path, sizeof path, "%s/.lock", dir);
	if (rc < 0)
		return rc;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
		close(fd);
		return rc;
	}
	*lock_fd = fd;
	return 0;
}

/* ---- meta.properties (java.util.Properties subset: key=value lines) ---- */

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int logdir_read_meta(const char *dir, int32_t *broker_id, char *cluster_id, size_t cluster_id_size)
{
	char path[PATH_MAX], *text;
	size_t len;
	int rc = log_io_path(path, sizeof path, "%s/meta.properties", dir);
	if (rc == 0)
		rc = log_io_read_small(path, SMALL_FILE_MAX, &text, &len);
	if (rc < 0)
		return rc;
	long long version = -1, id = -1;
	bool have_id = false;
	if (cluster_id_size > 0)
		cluster_id[0] = '\0';
	rc = 0;
	for (char *line = text, *next; line && rc == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line = trim(line);
		if (*line == '#' || *line == '!' || *line == '\0')
			continue;
		char *eq = strchr(line, '=');
		if (!eq) {
			rc = LOG_ERR_CORRUPT;
			break;
		}
		*eq = '\0';
		char *key = trim(line), *val = trim(eq + 1), *end;
		if (strcmp(key, "version") == 0) {
			version = strtoll(val, &end, 10);
			if (end == val || *end)
				rc = LOG_ERR_CORRUPT;
		} else if (strcmp(key, "broker.id") == 0 || strcmp(key, "node.id") == 0) {
			id = strtoll(val, &end, 10);
			if (end == val || *end || id < 0 || id > INT32_MAX)
				rc = LOG_ERR_CORRUPT;
			have_id = true;
		} else if (strcmp(key, "cluster.id") == 0) {
			size_t n = strlen(val);
			if (n > 63 || n >= cluster_id_size)
				rc = LOG_ERR_CORRUPT;
			else
				memcpy(cluster_id, val, n + 1);
		}
	}
	free(text);
	if (rc == 0 && ((version != 0 && version != 1) || !have_id))
		rc = LOG_ERR_CORRUPT;
	if (rc == 0)
		*broker_id = (int32_t)id;
	return rc;
}

int logdir_write_meta(const char *dir, int32_t broker_id, const char *cluster_id)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "#\n#Written by Samsa\nversion=0\nbroker.id=%" PRId32 "\n", broker_id);
	if (cluster_id && *cluster_id) {
		if (strlen(cluster_id) > 63 || strpbrk(cluster_id, "\n\r="))
			return -EINVAL;
		n += snprintf(buf + n, sizeof buf - (size_t)n, "cluster.id=%s\n", cluster_id);
	}
	return log_io_write_atomic(dir, "meta.properties", buf, (size_t)n, true);
}

/* ---- clean-shutdown marker ---- */

bool logdir_was_clean(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	return log_io_path(path, sizeof path, "%s/" CLEAN_MARKER, dir) == 0 && stat(path, &st) == 0;
}

int logdir_set_clean(const char *dir, bool clean)
{
	char path[PATH_MAX];
	int rc = log_io_path(path, sizeof path, "%s/" CLEAN_MARKER, dir);
	if (rc < 0)
		return rc;
	if (clean) {
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		rc = fsync(fd) < 0 ? -errno : 0;
		close(fd);
		if (rc < 0)
			return rc;
	} else if (unlink(path) < 0 && errno != ENOENT) {
		return -errno;
	}
	return log_io_fsync_dir(dir);
}

/* ---- offset checkpoints ---- */

/* Parse a non-negative decimal of at most 19 digits ending at a delimiter. */
static bool parse_i64(const char **pp, char delim, int64_t *out)
{
	const char *p = *pp;
	bool neg = *p == '-';
	if (neg)
		p++;
	int64_t v = 0;
	int digits = 0;
	while (*p >= '0' && *p <= '9') {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return false;
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (digits == 0 || *p != delim)
		return false;
	*out = neg ? -v : v;
	*pp = p + 1;
	return true;
}

int logdir_checkpoint_read(const char *path, logdir_checkpoint_entry **out, int *n)
{
	*out = NULL;
	*n = 0;
	char *text;
	size_t len;
	int rc = log_io_read_small(path, CHECKPOINT_MAX, &text, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	const char *p = text;
	int64_t version, count;
	logdir_checkpoint_entry *e = NULL;
	rc = LOG_ERR_CORRUPT;
	if (!parse_i64(&p, '\n', &version) || version != 0 || !parse_i64(&p, '\n', &count) || count < 0 ||
	    count > (int64_t)(len / 6 + 1))
		goto out;
	e = calloc(count ? (size_t)count : 1, sizeof *e);
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	for (int64_t i = 0; i < count; i++) {
		const char *sp = strchr(p, ' ');
		if (!sp || sp == p || sp - p > LOG_TOPIC_MAX || memchr(p, '\n', (size_t)(sp - p)))
			goto out;
		memcpy(e[i].topic, p, (size_t)(sp - p));
		e[i].topic[sp - p] = '\0';
		p = sp + 1;
		int64_t part, off;
		if (!parse_i64(&p, ' ', &part) || part < 0 || part > INT32_MAX || !parse_i64(&p, '\n', &off))
			goto out;
		e[i].partition = (int32_t)part;
		e[i].offset = off;
	}
	if (*p != '\0')
		goto out;
	*out = e;
	*n = (int)count;
	e = NULL;
	rc = 0;
out:
	free(e);
	free(text);
	return rc;
}

int logdir_checkpoint_write(const char *path, const logdir_checkpoint_entry *e, int n)
{
	if (n < 0)
		return -EINVAL;
	char dir[PATH_MAX];
	int rc = log_io_path(dir, sizeof dir, "%s", path);
	if (rc < 0)
		return rc;
	char *slash = strrchr(dir, '/');
	const char *name = path;
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		if (slash == dir)
			strcpy(dir, "/");
	} else {
		strcpy(dir, ".");
	}
	size_t cap = 32 + (size_t)n * (LOG_TOPIC_MAX + 48), len;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	len = (size_t)snprintf(buf, cap, "0\n%d\n", n);
	for (int i = 0; i < n; i++) {
		size_t tl = strnlen(e[i].topic, LOG_TOPIC_MAX + 1);
		if (tl == 0 || tl > LOG_TOPIC_MAX || strpbrk(e[i].topic, " \n")) {
			free(buf);
			return -EINVAL;
		}
		len += (size_t)snprintf(buf + len, cap - len, "%s %" PRId32 " %" PRId64 "\n", e[i].topic,
					e[i].partition, e[i].offset);
	}
	rc = log_io_write_atomic(dir, name, buf, len, true);
	free(buf);
	return rc;
}

/* ---- topic ids ---- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void logdir_uuid_to_string(const uint8_t id[16], char out[23])
{
	int o = 0;
	for (int i = 0; i < 15; i += 3) {
		uint32_t v = (uint32_t)id[i] << 16 | (uint32_t)id[i + 1] << 8 | id[i + 2];
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
		out[o++] = b64url[v >> 6 & 63];
		out[o++] = b64url[v & 63];
	}
	out[o++] = b64url[id[15] >> 2];
	out[o++] = b64url[(id[15] & 3) << 4];
	out[o] = '\0';
}

static int b64val(char c)
{
	const char *p = c ? strchr(b64url, c) : NULL;
	return p ? (int)(p - b64url) : -1;
}

int logdir_uuid_from_string(const char *s, uint8_t id[16])
{
	size_t n = strlen(s);
	if (!(n == 22 || (n == 24 && s[22] == '=' && s[23] == '=')))
		return -EINVAL;
	int v[22];
	for (int i = 0; i < 22; i++)
		if ((v[i] = b64val(s[i])) < 0)
			return -EINVAL;
	int o = 0;
	for (int i = 0; i < 20; i += 4) {
		uint32_t x = (uint32_t)v[i] << 18 | (uint32_t)v[i + 1] << 12 | (uint32_t)v[i + 2] << 6 | (uint32_t)v[i + 3];
		id[o++] = (uint8_t)(x >> 16);
		id[o++] = (uint8_t)(x >> 8);
		id[o++] = (uint8_t)x;
	}
	id[15] = (uint8_t)(v[20] << 2 | v[21] >> 4);
	return 0;
}

/* ---- partition.metadata ---- */

int logdir_write_partition_metadata(const char *partition_dir, const uint8_t topic_id[16])
{
	char id[23], buf[64];
	logdir_uuid_to_string(topic_id, id);
	int n = snprintf(buf, sizeof buf, "version: 0\ntopic_id: %s\n", id);
	return log_io_write_atomic(partition_dir, "partition.metadata", buf, (size_t)n, false);
}

int logdir_read_partition_metadata(const char *partition_dir, uint8_t topic_id[16])
{
	char path[PATH_MAX], *text;
	size_t len;
	int rc = log_io_path(path, sizeof path, "%s/partition.metadata", partition_dir);
	if (rc == 0)
		rc = log_io_read_small(path, SMALL_FILE_MAX, &text, &len);
	if (rc < 0)
		return rc;
	bool have_version = false, have_id = false;
	rc = 0;
	for (char *line = text, *next; line && rc == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line = trim(line);
		if (*line == '\0')
			continue;
		char *colon = strchr(line, ':');
		if (!colon) {
			rc = LOG_ERR_CORRUPT;
			break;
		}
		*colon = '\0';
		char *key = trim(line), *val = trim(colon + 1);
		if (strcmp(key, "version") == 0) {
			have_version = strcmp(val, "0") == 0;
			if (!have_version)
				rc = LOG_ERR_CORRUPT;
		} else if (strcmp(key, "topic_id") == 0) {
			if (logdir_uuid_from_string(val, topic_id) < 0)
				rc = LOG_ERR_CORRUPT;
			have_id = true;
		}
	}
	free(text);
	if (rc == 0 && (!have_version || !have_id))
		rc = LOG_ERR_CORRUPT;
	return rc;
}
