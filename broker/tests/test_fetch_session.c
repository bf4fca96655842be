/*
 * test_fetch_session.c - unit tests of the fetch session cache
 * (broker/fetch_session.c): creation, incremental add/update/forget, the
 * response rule, epochs, eviction (Kafka's FetchSessionCacheTest cases).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "broker/fetch_session.h"

static const uint8_t ID_A[16] = { 1 };
static const uint8_t ID_B[16] = { 2 };
static const uint8_t ZERO[16] = { 0 };

static fs_req_partition rq(int64_t off)
{
	fs_req_partition r = { .max_bytes = 1024, .fetch_offset = off, .log_start_offset = -1,
			       .leader_epoch = -1, .last_fetched_epoch = -1 };
	return r;
}

START_TEST(test_epochs)
{
	ck_assert_int_eq(fs_next_epoch(0), 1);
	ck_assert_int_eq(fs_next_epoch(1), 2);
	ck_assert_int_eq(fs_next_epoch(-1), -1);
	ck_assert_int_eq(fs_next_epoch(INT32_MAX), 1);
}
END_TEST

START_TEST(test_create_and_get)
{
	fs_cache *c = fs_cache_new(10, 1000);
	ck_assert_ptr_nonnull(c);
	fs_session *s = fs_cache_create(c, 0, false, 2, false);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_gt(s->id, 0);
	ck_assert_int_eq(s->epoch, 1);
	ck_assert_ptr_eq(fs_cache_get(c, s->id), s);
	fs_session *s2 = fs_cache_create(c, 0, false, 2, false);
	ck_assert_int_ne(s2->id, s->id);
	ck_assert_int_eq(fs_cache_size(c), 2);
	int32_t id = s->id;
	fs_cache_remove(c, s);
	ck_assert_ptr_null(fs_cache_get(c, id));
	ck_assert_int_eq(fs_cache_size(c), 1);
	fs_cache_free(c);
	/* 0 slots: no sessions at all */
	c = fs_cache_new(0, 1000);
	ck_assert_ptr_null(fs_cache_create(c, 0, false, 1, false));
	fs_cache_free(c);
}
END_TEST

START_TEST(test_partitions)
{
	fs_cache *c = fs_cache_new(10, 1000);
	fs_session *s = fs_cache_create(c, 0, false, 3, false);
	fs_req_partition r = rq(5);
	for (int i = 0; i < 100; i++)
		ck_assert_ptr_nonnull(fs_session_upsert(s, "foo", 3, ZERO, i, &r));
	ck_assert_ptr_nonnull(fs_session_upsert(s, "bar", 3, ZERO, 0, &r));
	ck_assert_int_eq(s->n, 101);
	/* update, not add */
	r = rq(9);
	fs_partition *p = fs_session_upsert(s, "foo", 3, ZERO, 7, &r);
	ck_assert_int_eq(s->n, 101);
	ck_assert_int_eq(p->fetch_offset, 9);
	ck_assert_ptr_eq(fs_session_find(s, "foo", 3, ZERO, 7), p);
	ck_assert_ptr_null(fs_session_find(s, "foo", 3, ZERO, 100));
	ck_assert_ptr_null(fs_session_find(s, "fo", 2, ZERO, 7));
	/* forget */
	ck_assert(fs_session_forget(s, "foo", 3, ZERO, 7));
	ck_assert(!fs_session_forget(s, "foo", 3, ZERO, 7));
	ck_assert_int_eq(s->n, 100);
	ck_assert_ptr_null(fs_session_find(s, "foo", 3, ZERO, 7));
	for (int i = 0; i < 100; i++)
		if (i != 7)
			ck_assert_ptr_nonnull(fs_session_find(s, "foo", 3, ZERO, i));
	ck_assert_ptr_nonnull(fs_session_find(s, "bar", 3, ZERO, 0));
	fs_cache_free(c);
}
END_TEST

START_TEST(test_topic_ids)
{
	fs_cache *c = fs_cache_new(10, 1000);
	fs_session *s = fs_cache_create(c, 0, false, 2, true);
	fs_req_partition r = rq(0);
	ck_assert_ptr_nonnull(fs_session_upsert(s, NULL, 0, ID_A, 0, &r));
	ck_assert_ptr_nonnull(fs_session_upsert(s, NULL, 0, ID_B, 0, &r));
	ck_assert_int_eq(s->n, 2);
	ck_assert_ptr_nonnull(fs_session_find(s, NULL, 0, ID_A, 0));
	ck_assert(fs_session_forget(s, NULL, 0, ID_A, 0));
	ck_assert_ptr_null(fs_session_find(s, NULL, 0, ID_A, 0));
	ck_assert_ptr_nonnull(fs_session_find(s, NULL, 0, ID_B, 0));
	fs_cache_free(c);
}
END_TEST

START_TEST(test_must_respond)
{
	fs_cache *c = fs_cache_new(10, 1000);
	fs_session *s = fs_cache_create(c, 0, false, 1, false);
	fs_req_partition r = rq(0);
	fs_partition *p = fs_session_upsert(s, "t", 1, ZERO, 0, &r);
	fs_resp_partition resp = { .error_code = 0, .high_watermark = 10,
				   .last_stable_offset = 10, .log_start_offset = 0 };
	/* new partition: always answered once */
	ck_assert(fs_partition_must_respond(p, &resp, true));
	ck_assert(!fs_partition_must_respond(p, &resp, true));
	/* records */
	resp.records_bytes = 100;
	ck_assert(fs_partition_must_respond(p, &resp, true));
	resp.records_bytes = 0;
	/* high watermark; without update it stays pending */
	resp.high_watermark = 11;
	resp.last_stable_offset = 11;
	ck_assert(fs_partition_must_respond(p, &resp, false));
	ck_assert(fs_partition_must_respond(p, &resp, true));
	ck_assert(!fs_partition_must_respond(p, &resp, true));
	/* log start offset */
	resp.log_start_offset = 3;
	ck_assert(fs_partition_must_respond(p, &resp, true));
	ck_assert(!fs_partition_must_respond(p, &resp, true));
	/* an error, then the same values again are answered once more */
	resp.error_code = 6;
	ck_assert(fs_partition_must_respond(p, &resp, true));
	ck_assert_int_eq(p->high_watermark, -1);
	resp.error_code = 0;
	ck_assert(fs_partition_must_respond(p, &resp, true));
	ck_assert(!fs_partition_must_respond(p, &resp, true));
	fs_cache_free(c);
}
END_TEST

START_TEST(test_move_answered_last)
{
	fs_cache *c = fs_cache_new(10, 1000);
	fs_session *s = fs_cache_create(c, 0, false, 4, false);
	fs_req_partition r = rq(0);
	for (int i = 0; i < 4; i++)
		fs_session_upsert(s, "t", 1, ZERO, i, &r);
	bool answered[4] = { true, false, true, false };
	fs_session_move_answered_last(s, answered);
	ck_assert_int_eq(s->parts[0].partition, 1);
	ck_assert_int_eq(s->parts[1].partition, 3);
	ck_assert_int_eq(s->parts[2].partition, 0);
	ck_assert_int_eq(s->parts[3].partition, 2);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(fs_session_find(s, "t", 1, ZERO, i)->partition, i);
	fs_cache_free(c);
}
END_TEST

/* Give s size partitions and touch it at now (as the fetch handler does). */
static void fill(fs_cache *c, fs_session *s, int size, int64_t now)
{
	fs_req_partition r = rq(0);
	for (int i = 0; i < size; i++)
		ck_assert_ptr_nonnull(fs_session_upsert(s, "t", 1, ZERO, i, &r));
	fs_cache_touch(c, s, now);
}

/* Kafka's FetchSessionCacheTest.testSessionCache / eviction rules with an
 * eviction time of 10 ms. */
START_TEST(test_eviction)
{
	fs_cache *c = fs_cache_new(3, 10);
	fs_session *a = fs_cache_create(c, 0, false, 10, false);
	fs_session *b = fs_cache_create(c, 1, false, 20, false);
	fs_session *d = fs_cache_create(c, 2, false, 30, false);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(d);
	fill(c, a, 10, 0);
	fill(c, b, 20, 1);
	fill(c, d, 30, 2);
	/* full; nothing stale, nothing created long enough ago */
	ck_assert_ptr_null(fs_cache_create(c, 3, false, 40, false));
	ck_assert_int_eq(fs_cache_size(c), 3);
	/* a privileged newcomer evicts the smallest unprivileged one */
	int32_t aid = a->id, bid = b->id, did = d->id;
	fs_session *p = fs_cache_create(c, 4, true, 5, false);
	ck_assert_ptr_nonnull(p);
	fill(c, p, 5, 4);
	ck_assert_ptr_null(fs_cache_get(c, aid));
	ck_assert_int_eq(fs_cache_size(c), 3);
	/* touch b and d late so they are old enough to be evictable, p stays
	 * recently used */
	b = fs_cache_get(c, bid);
	d = fs_cache_get(c, did);
	fs_cache_touch(c, b, 14);
	fs_cache_touch(c, d, 14);
	fs_cache_touch(c, p, 14);
	/* an unprivileged newcomer with fewer partitions than b cannot evict */
	ck_assert_ptr_null(fs_cache_create(c, 15, false, 10, false));
	/* with more partitions than b it evicts b (the smallest evictable) */
	fs_session *e = fs_cache_create(c, 15, false, 25, false);
	ck_assert_ptr_nonnull(e);
	fill(c, e, 25, 15);
	ck_assert_ptr_null(fs_cache_get(c, bid));
	ck_assert_ptr_nonnull(fs_cache_get(c, did));
	/* stale: unused for more than 10 ms, evicted by anyone */
	fs_cache_touch(c, e, 30);
	fs_cache_touch(c, p, 30);
	fs_session *f = fs_cache_create(c, 30, false, 1, false);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_null(fs_cache_get(c, did));
	ck_assert_int_eq(fs_cache_size(c), 3);
	fs_cache_free(c);
}
END_TEST

START_TEST(test_memory_bound)
{
	fs_cache *c = fs_cache_new(1, 1000);
	fs_session *s = fs_cache_create(c, 0, false, 1, false);
	static char name[32000];
	memset(name, 'x', sizeof(name));
	fs_req_partition r = rq(0);
	int32_t i = 0;
	while (fs_session_upsert(s, name, (int32_t)sizeof(name), ZERO, i, &r))
		i++;
	ck_assert_int_gt(i, 10);
	ck_assert_uint_le(s->mem, FS_SESSION_MAX_BYTES);
	ck_assert_int_eq(s->n, i);
	fs_cache_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fetch_session");
	TCase *tc = tcase_create("cache");
	tcase_add_test(tc, test_epochs);
	tcase_add_test(tc, test_create_and_get);
	tcase_add_test(tc, test_partitions);
	tcase_add_test(tc, test_topic_ids);
	tcase_add_test(tc, test_must_respond);
	tcase_add_test(tc, test_move_answered_last);
	tcase_add_test(tc, test_eviction);
	tcase_add_test(tc, test_memory_bound);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
