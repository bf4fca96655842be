/*
 * fetch_session.h - incremental fetch sessions (KIP-227), as Kafka's
 * FetchSession.scala: the session cache (FetchSessionCache), a session's
 * cached partitions (CachedPartition) and the epochs of FetchMetadata.
 *
 * Epochs (FetchMetadata): 0 (FS_INITIAL_EPOCH) asks for a full fetch that
 * creates a new session; -1 (FS_FINAL_EPOCH) a full fetch with no session
 * (and closes the one named); > 0 an incremental fetch of the session named,
 * which must carry the session's current epoch. A new session starts at
 * epoch 1 and each accepted incremental request moves it on by one
 * (fs_next_epoch, wrapping from INT32_MAX to 1).
 *
 * Eviction (FetchSessionCache.tryEvict): when the cache is full, a new
 * session may evict B when B was unused for more than the eviction time
 * (stale), or else the least valuable evictable session when the new one
 * is worth at least as much, ordered by (privileged, partition count at
 * B's last use, id). Sessions of followers (replica id >= 0) are
 * privileged: they may evict any unprivileged session and any session
 * created more than the eviction time ago; an unprivileged one only sessions
 * created more than the eviction time ago (judged at their last use).
 * Kafka 3.8+ splits its cache into 8 shards of slots/8 entries each; this
 * broker has one loop thread and keeps one cache of slots entries.
 *
 * Memory: a session holds at most FS_SESSION_MAX_BYTES of cached partitions
 * (entry plus topic name); a request that would make it larger gets no
 * session (full fetch: session id 0) or loses it (incremental fetch:
 * FETCH_SESSION_ID_NOT_FOUND, after which clients start a full fetch).
 * Kafka has no such bound; it keeps a hostile client from growing a session
 * without limit. All memory is malloc'd and freed with the session.
 *
 * Not thread-safe: used from the loop thread only.
 */
#ifndef SAMSA_BROKER_FETCH_SESSION_H
#define SAMSA_BROKER_FETCH_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_INVALID_SESSION_ID 0
#define FS_INITIAL_EPOCH 0
#define FS_FINAL_EPOCH (-1)
/* Kafka's KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (no config). */
#define FS_MIN_EVICTION_MS 120000
/* Most bytes of cached partitions in one session (this broker's bound). */
#define FS_SESSION_MAX_BYTES ((size_t)8 << 20)

/* One cached partition (Kafka's CachedPartition): the request parameters
 * last sent for it and the response values last answered. */
typedef struct fs_partition {
	char *topic;              /* owned, NUL-terminated; NULL in topic-id sessions */
	int32_t topic_len;
	uint8_t topic_id[16];     /* zero in topic-name sessions */
	int32_t partition;
	int32_t max_bytes;
	int64_t fetch_offset;
	int64_t fetcher_log_start_offset;
	int32_t leader_epoch;
	int32_t last_fetched_epoch;
	int64_t high_watermark;   /* last answered; -1 after an error (re-sent later) */
	int64_t last_stable_offset; /* last answered */
	int64_t local_log_start_offset; /* last answered */
} fs_partition;

/* The request parameters of one partition (fetch request fields). */
typedef struct fs_req_partition {
	int32_t max_bytes;
	int64_t fetch_offset;
	int64_t log_start_offset;
	int32_t leader_epoch;
	int32_t last_fetched_epoch;
} fs_req_partition;

/* The response values of one partition that decide whether an incremental
 * response must carry it. */
typedef struct fs_resp_partition {
	int16_t error_code;
	int64_t high_watermark;
	int64_t last_stable_offset;
	int64_t log_start_offset;
	int64_t records_bytes;
} fs_resp_partition;

typedef struct fs_session {
	int32_t id;               /* > 0 */
	int32_t epoch;            /* the epoch the next request must carry */
	bool privileged;
	bool uses_topic_ids;      /* created by a v13+ request */
	int64_t creation_ms;
	int64_t last_used_ms;     /* set by fs_cache_touch */
	int32_t cached_size;      /* partition count at the last touch */
	int32_t n, cap;           /* parts: n used, cap allocated */
	fs_partition *parts;      /* in response order (answered ones move last) */
	int32_t *index;           /* open addressing over parts, index_cap slots, -1 free */
	int32_t index_cap;
	size_t mem;               /* bytes of parts and names counted */
	struct fs_session *hnext; /* cache hash chain */
} fs_session;

typedef struct fs_cache fs_cache;

/* The epoch after prev (FetchMetadata.nextEpoch): -1 stays -1, INT32_MAX
 * wraps to 1, else prev + 1. */
int32_t fs_next_epoch(int32_t prev);

/* A cache of at most max_entries sessions (>= 0; 0 keeps none) whose entries
 * may be evicted after eviction_ms (ms) unused. NULL when out of memory. */
fs_cache *fs_cache_new(int32_t max_entries, int64_t eviction_ms);

/* Free the cache and every session in it. c may be NULL. */
void fs_cache_free(fs_cache *c);

/* Sessions in the cache. */
int32_t fs_cache_size(const fs_cache *c);

/* The session with this id, or NULL. */
fs_session *fs_cache_get(fs_cache *c, int32_t id);

/*
 * A new empty session for a full fetch of size partitions at now (ms), at
 * epoch 1, with a random id unique in the cache (Kafka's maybeCreateSession,
 * evicting as above when the cache is full), touched at now. NULL when there
 * is no room (the fetch is then answered with session id 0) or no memory.
 * The caller adds the partitions and then calls fs_cache_touch.
 */
fs_session *fs_cache_create(fs_cache *c, int64_t now, bool privileged, int32_t size,
			    bool uses_topic_ids);

/* Remove s from the cache and free it. */
void fs_cache_remove(fs_cache *c, fs_session *s);

/* Record a use of s at now (ms): its last-used time and the partition count
 * eviction compares (Kafka's FetchSessionCache.touch). */
void fs_cache_touch(fs_cache *c, fs_session *s, int64_t now);

/* The cached partition of s for (topic name or topic id, partition), or
 * NULL. A topic-id session matches on the id, a name session on the name. */
fs_partition *fs_session_find(fs_session *s, const char *topic, int32_t topic_len,
			      const uint8_t topic_id[16], int32_t partition);

/*
 * Add the partition to s with the request parameters rq, or update its
 * request parameters when it is there (Kafka's FetchSession.update). A new
 * partition starts with high watermark, last stable and log start offsets
 * -1, so its first answer always carries it. topic is copied (name sessions
 * only). Returns the cached partition, or NULL when the session would pass
 * FS_SESSION_MAX_BYTES or memory ran out (s is unchanged then).
 */
fs_partition *fs_session_upsert(fs_session *s, const char *topic, int32_t topic_len,
				const uint8_t topic_id[16], int32_t partition,
				const fs_req_partition *rq);

/* Remove the partition from s (forgotten topics). Returns true when it was
 * there. */
bool fs_session_forget(fs_session *s, const char *topic, int32_t topic_len,
		       const uint8_t topic_id[16], int32_t partition);

/*
 * Whether an incremental response must carry cp given its new response
 * values (Kafka's CachedPartition.maybeUpdateResponseData): records were
 * returned, or the high watermark, last stable offset or log start offset
 * differs from the last answered, or an error. With update the cached values
 * are set to the new ones (the high watermark to -1 on an error, so the
 * partition is answered again once the error is gone). Kafka compares no
 * last stable offset; here it can only move with the high watermark.
 */
bool fs_partition_must_respond(fs_partition *cp, const fs_resp_partition *r, bool update);

/* Reorder s's partitions: those with answered[i] true move to the end, each
 * group keeping its order (Kafka re-adds answered partitions at the end so
 * that MaxBytes does not starve the later ones). answered has s->n entries. */
void fs_session_move_answered_last(fs_session *s, const bool *answered);

#endif
