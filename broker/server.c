/*
 * server.c - the server's objects for callers that are not passed them
 * yet. Each function here is the instance API of a module applied to the
 * member of server; it goes when its last caller takes the object (the
 * callers are named). Nothing else belongs here.
 */
#include "broker/server.h"

/* partitions.c (brk_partitions_init/shutdown, checkpoints, log flushes). */
int brk_flush_start(void)
{
	return brk_flusher_start(&server.flusher, server.loop);
}

void brk_flush_stop(void)
{
	brk_flusher_stop(&server.flusher);
}

int brk_flush_log(log_flush_job *job, brk_flush_done_fn done, void *arg)
{
	return brk_flusher_log(&server.flusher, job, done, arg);
}

int brk_flush_checkpoint(const char *path, logdir_checkpoint_entry *e, int n,
			 brk_flush_done_fn done, void *arg)
{
	return brk_flusher_checkpoint(&server.flusher, path, e, n, done, arg);
}

/* handlers/delete_records.c. */
void brk_retention_schedule_deletion(brk_partition *p)
{
	brk_retention_schedule(&server.retention, p);
}

/* handlers/fetch.c. */
fs_cache *brk_fetch_sessions(int32_t slots)
{
	if (!server.fetch_sessions)
		server.fetch_sessions = fs_cache_new(slots, FS_MIN_EVICTION_MS);
	return server.fetch_sessions;
}
