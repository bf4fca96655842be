/*
 * test_strmap.c - the string-keyed hash map of the registries (strmap.h):
 * SipHash against the reference vectors of SipHash-2-4 (the paper's key
 * 00..0f, messages 00..n-1), put / get / remove on views (no NUL, the empty
 * key), -EEXIST, 100,000 keys found after growth, removal of every other
 * one, iteration while removing from the end, the index shrinking back
 * once the map empties, and a random sequence of operations checked
 * against a plain array.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/strmap.h"

START_TEST(test_siphash_vectors)
{
	uint8_t key[16], msg[16];
	for (int i = 0; i < 16; i++)
		key[i] = msg[i] = (uint8_t)i;
	/* SipHash-2-4 reference outputs for messages of n bytes 00..n-1. */
	struct {
		size_t n;
		uint64_t want;
	} v[] = {
		{ 0, 0x726fdb47dd0e0e31ull },  { 1, 0x74f839c593dc67fdull },
		{ 8, 0x93f5f5799a932462ull },  { 15, 0xa129ca6149be45e5ull },
		{ 16, 0x3f2acc7f57c29bdbull },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_msg(brk_siphash(key, msg, v[i].n, 2, 4) == v[i].want,
			      "SipHash-2-4 of %zu bytes", v[i].n);
	/* 1-3 is another function of the same key. */
	ck_assert(brk_siphash(key, msg, 15, 1, 3) != brk_siphash(key, msg, 15, 2, 4));
}
END_TEST

START_TEST(test_basics)
{
	brk_strmap m;
	brk_strmap_init(&m);
	ck_assert_ptr_null(brk_strmap_get(&m, "a", 1));
	ck_assert_ptr_null(brk_strmap_remove(&m, "a", 1));
	int va, vb, ve;
	/* Keys are views: "group-a" is found through "group-abc" cut at 7. */
	ck_assert_int_eq(brk_strmap_put(&m, "group-a", 7, &va), 0);
	ck_assert_int_eq(brk_strmap_put(&m, "group-b", 7, &vb), 0);
	ck_assert_int_eq(brk_strmap_put(&m, "", 0, &ve), 0);
	ck_assert_int_eq(brk_strmap_put(&m, "group-axyz", 7, &vb), -EEXIST);
	ck_assert_int_eq(brk_strmap_put(&m, "x", -1, &vb), -EINVAL);
	ck_assert_int_eq(brk_strmap_count(&m), 3);
	ck_assert_ptr_eq(brk_strmap_get(&m, "group-abc", 7), &va);
	ck_assert_ptr_eq(brk_strmap_get(&m, "group-b", 7), &vb);
	ck_assert_ptr_eq(brk_strmap_get(&m, "", 0), &ve);
	ck_assert_ptr_null(brk_strmap_get(&m, "group-", 6));
	ck_assert_ptr_null(brk_strmap_get(&m, "group-ab", 8));
	ck_assert_ptr_null(brk_strmap_get(&m, "x", -1));
	/* Insertion order until the first removal. */
	ck_assert_ptr_eq(brk_strmap_at(&m, 0), &va);
	ck_assert_ptr_eq(brk_strmap_at(&m, 2), &ve);
	ck_assert_ptr_null(brk_strmap_at(&m, 3));
	ck_assert_ptr_null(brk_strmap_at(&m, -1));
	ck_assert_ptr_eq(brk_strmap_remove(&m, "group-a", 7), &va);
	ck_assert_ptr_null(brk_strmap_remove(&m, "group-a", 7));
	ck_assert_int_eq(brk_strmap_count(&m), 2);
	ck_assert_ptr_eq(brk_strmap_at(&m, 0), &ve); /* the last one moved in */
	ck_assert_ptr_eq(brk_strmap_get(&m, "", 0), &ve);
	ck_assert_ptr_eq(brk_strmap_get(&m, "group-b", 7), &vb);
	brk_strmap_free(&m);
	ck_assert_int_eq(brk_strmap_count(&m), 0);
	ck_assert_ptr_null(brk_strmap_get(&m, "group-b", 7));
	/* Usable again after free. */
	ck_assert_int_eq(brk_strmap_put(&m, "z", 1, &va), 0);
	ck_assert_ptr_eq(brk_strmap_get(&m, "z", 1), &va);
	brk_strmap_free(&m);
}
END_TEST

#define MANY 100000

#define KEY_BYTES 24

/* Key i: "group-<i>" in keys + i * KEY_BYTES, NUL-padded. */
static char *make_keys(int n)
{
	char *keys = calloc((size_t)n, KEY_BYTES);
	ck_assert_ptr_nonnull(keys);
	for (int i = 0; i < n; i++)
		snprintf(keys + (size_t)i * KEY_BYTES, KEY_BYTES, "group-%d", i);
	return keys;
}

static const char *key_of(const char *keys, int i) { return keys + (size_t)i * KEY_BYTES; }

START_TEST(test_many)
{
	char *keys = make_keys(MANY);
	brk_strmap m;
	brk_strmap_init(&m);
	for (int i = 0; i < MANY; i++) {
		const char *k = key_of(keys, i);
		ck_assert_int_eq(brk_strmap_put(&m, k, (int32_t)strlen(k), (void *)k), 0);
	}
	ck_assert_int_eq(brk_strmap_count(&m), MANY);
	ck_assert_uint_ge(m.nslots, 2u * MANY);
	for (int i = 0; i < MANY; i++) {
		const char *k = key_of(keys, i);
		ck_assert_ptr_eq(brk_strmap_get(&m, k, (int32_t)strlen(k)), k);
	}
	/* Every other key goes. */
	for (int i = 0; i < MANY; i += 2) {
		const char *k = key_of(keys, i);
		ck_assert_ptr_eq(brk_strmap_remove(&m, k, (int32_t)strlen(k)), k);
	}
	ck_assert_int_eq(brk_strmap_count(&m), MANY / 2);
	for (int i = 0; i < MANY; i++) {
		const char *k = key_of(keys, i);
		ck_assert_ptr_eq(brk_strmap_get(&m, k, (int32_t)strlen(k)), i % 2 ? k : NULL);
	}
	/* Iteration sees each remaining key once. */
	char *seen = calloc(MANY, 1);
	const char *v;
	int32_t n = 0;
	for (int32_t i = 0; (v = brk_strmap_at(&m, i)) != NULL; i++, n++) {
		int k = atoi(v + 6);
		ck_assert_int_eq(k % 2, 1);
		ck_assert_int_eq(seen[k], 0);
		seen[k] = 1;
	}
	ck_assert_int_eq(n, MANY / 2);
	/* Removing while iterating from the end: each entry once. */
	int32_t removed = 0;
	for (int32_t i = brk_strmap_count(&m) - 1; i >= 0; i--) {
		v = brk_strmap_at(&m, i);
		ck_assert_ptr_nonnull(v);
		ck_assert_ptr_eq(brk_strmap_remove(&m, v, (int32_t)strlen(v)), v);
		removed++;
	}
	ck_assert_int_eq(removed, MANY / 2);
	ck_assert_int_eq(brk_strmap_count(&m), 0);
	/* The index gave its memory back. */
	ck_assert_uint_le(m.nslots, 16u);
	ck_assert_int_le(m.cap, 8);
	free(seen);
	brk_strmap_free(&m);
	free(keys);
}
END_TEST

/* Random puts, removes and gets over a small key space, checked against
 * an array of what each key maps to. */
START_TEST(test_random_ops)
{
	enum { KEYS = 2000, OPS = 200000 };
	char *keys = make_keys(KEYS);
	const char *ref[KEYS] = { 0 };
	int32_t live = 0;
	brk_strmap m;
	brk_strmap_init(&m);
	srand(15);
	for (int op = 0; op < OPS; op++) {
		int i = rand() % KEYS;
		const char *k = key_of(keys, i);
		int32_t len = (int32_t)strlen(k);
		switch (rand() % 3) {
		case 0:
			ck_assert_int_eq(brk_strmap_put(&m, k, len, (void *)k), ref[i] ? -EEXIST : 0);
			if (!ref[i])
				live++;
			ref[i] = k;
			break;
		case 1:
			ck_assert_ptr_eq(brk_strmap_remove(&m, k, len), ref[i]);
			if (ref[i])
				live--;
			ref[i] = NULL;
			break;
		default:
			ck_assert_ptr_eq(brk_strmap_get(&m, k, len), ref[i]);
		}
		ck_assert_int_eq(brk_strmap_count(&m), live);
	}
	for (int i = 0; i < KEYS; i++) {
		const char *k = key_of(keys, i);
		ck_assert_ptr_eq(brk_strmap_get(&m, k, (int32_t)strlen(k)), ref[i]);
	}
	brk_strmap_free(&m);
	free(keys);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strmap");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_siphash_vectors);
	tcase_add_test(tc, test_basics);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_random_ops);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
