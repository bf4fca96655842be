/*
 * logdir.h - the files of a log directory (log.dirs) outside the partitions:
 *
 *   .lock                             flock(2)ed while a broker uses the dir
 *   meta.properties                   version=0, broker.id, cluster.id (Kafka's ZK-mode layout)
 *   .kafka_cleanshutdown              present after a clean stop, removed at start
 *   recovery-point-offset-checkpoint  } Kafka's offset checkpoint format:
 *   replication-offset-checkpoint     }   "0\n<n>\n<topic> <partition> <offset>\n"...
 *   log-start-offset-checkpoint       }   written to a .tmp, fsynced, renamed.
 *
 * Errors: 0 or -errno; LOG_ERR_CORRUPT for a file that does not parse.
 */
#ifndef SAMSA_STORAGE_LOGDIR_H
#define SAMSA_STORAGE_LOGDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_TOPIC_MAX 249 /* Kafka's topic name length limit */

/* Create dir (and parents) if needed and take the lock. On success *lock_fd
 * holds the lock until closed. -EWOULDBLOCK when another process holds it. */
int logdir_lock(const char *dir, int *lock_fd);

/* Read meta.properties; -ENOENT when absent. cluster_id gets at most 63 chars. */
int logdir_read_meta(const char *dir, int32_t *broker_id, char *cluster_id, size_t cluster_id_size);
/* Write meta.properties atomically. */
int logdir_write_meta(const char *dir, int32_t broker_id, const char *cluster_id);

/* The clean-shutdown marker. */
bool logdir_was_clean(const char *dir);
int logdir_set_clean(const char *dir, bool clean); /* true creates, false removes (and fsyncs dir) */

typedef struct logdir_checkpoint_entry {
	char topic[LOG_TOPIC_MAX + 1];
	int32_t partition;
	int64_t offset;
} logdir_checkpoint_entry;

/* Read an offset checkpoint file; *out is malloc'ed (caller frees), *n entries.
 * A missing file gives 0 entries and returns 0. */
int logdir_checkpoint_read(const char *path, logdir_checkpoint_entry **out, int *n);
/* Write it atomically (tmp, fsync, rename, fsync dir). */
int logdir_checkpoint_write(const char *path, const logdir_checkpoint_entry *e, int n);

/* partition.metadata in a partition directory (topic id as 16 bytes).
 * Written atomically (tmp, rename) but not fsynced (Kafka's
 * PartitionMetadataFile flushes it later too): the file only repeats the
 * topic id of the controller's metadata, which is durable, and a partition
 * whose file was lost in a crash gets it written again at open. Creating
 * many partitions thus costs no fsync each (a fresh start creates 100 for
 * the internal topics). Returns 0 or -errno. */
int logdir_write_partition_metadata(const char *partition_dir, const uint8_t topic_id[16]);
int logdir_read_partition_metadata(const char *partition_dir, uint8_t topic_id[16]);

/* Base64 (URL-safe, no padding, 22 chars) of a topic or cluster id, as Kafka's Uuid.toString(). */
void logdir_uuid_to_string(const uint8_t id[16], char out[23]);
int logdir_uuid_from_string(const char *s, uint8_t id[16]);

#endif
