/*
 * test_slab.c - fixed-size objects in blocks: objects are zeroed, distinct
 * and aligned; a block is freed with its last object except one kept empty;
 * a block that was full takes objects again once one is given back.
 */
#include <check.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/slab.h"

typedef struct obj {
	char text[700];
	uint64_t tag;
} obj;

START_TEST(test_alloc_zeroed_distinct_aligned)
{
	brk_slab s;
	brk_slab_init(&s, sizeof(obj));
	enum { N = 3 * BRK_SLAB_BLOCK_OBJS + 5 };
	static obj *o[N];
	for (int i = 0; i < N; i++) {
		o[i] = brk_slab_alloc(&s);
		ck_assert_ptr_nonnull(o[i]);
		ck_assert_int_eq((uintptr_t)o[i] % alignof(max_align_t), 0);
		for (size_t k = 0; k < sizeof(o[i]->text); k++)
			ck_assert_int_eq(o[i]->text[k], 0);
		ck_assert_int_eq(o[i]->tag, 0);
		memset(o[i]->text, 0xa5, sizeof(o[i]->text));
		o[i]->tag = (uint64_t)i;
	}
	ck_assert_int_eq(s.nblocks, 4);
	/* No object overlaps another. */
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(o[i]->tag, (uint64_t)i);
		ck_assert_int_eq((unsigned char)o[i]->text[0], 0xa5);
		ck_assert_int_eq((unsigned char)o[i]->text[sizeof(o[i]->text) - 1], 0xa5);
	}
	/* A slot given back comes back zeroed. */
	brk_slab_free(&s, o[7]);
	obj *again = brk_slab_alloc(&s);
	ck_assert_ptr_eq(again, o[7]);
	ck_assert_int_eq(again->tag, 0);
	ck_assert_int_eq(again->text[0], 0);
	for (int i = 0; i < N; i++)
		brk_slab_free(&s, o[i]);
	/* Every block freed but the one kept empty. */
	ck_assert_int_eq(s.nblocks, 1);
	ck_assert_int_eq(s.nempty, 1);
	brk_slab_free(&s, NULL);
	brk_slab_destroy(&s);
	ck_assert_int_eq(s.nblocks, 0);
}
END_TEST

START_TEST(test_edge_of_a_block)
{
	/* One object coming and going at a block's edge reuses the kept
	 * block instead of allocating one each time. */
	brk_slab s;
	brk_slab_init(&s, sizeof(obj));
	static obj *o[BRK_SLAB_BLOCK_OBJS];
	for (int i = 0; i < BRK_SLAB_BLOCK_OBJS; i++)
		o[i] = brk_slab_alloc(&s);
	ck_assert_int_eq(s.nblocks, 1);
	for (int k = 0; k < 100; k++) {
		obj *x = brk_slab_alloc(&s);
		ck_assert_ptr_nonnull(x);
		ck_assert_int_eq(s.nblocks, 2);
		brk_slab_free(&s, x);
		ck_assert_int_eq(s.nblocks, 2);
		ck_assert_int_eq(s.nempty, 1);
	}
	/* The full block takes objects again once one is given back. */
	brk_slab_free(&s, o[3]);
	obj *y = brk_slab_alloc(&s);
	ck_assert_ptr_nonnull(y);
	o[3] = y;
	/* Emptying the first block frees it: the other is the kept one. */
	for (int i = 0; i < BRK_SLAB_BLOCK_OBJS; i++)
		brk_slab_free(&s, o[i]);
	ck_assert_int_eq(s.nblocks, 1);
	brk_slab_destroy(&s);
}
END_TEST

START_TEST(test_tiny_objects)
{
	/* Objects smaller than a pointer still have room for the free list. */
	brk_slab s;
	brk_slab_init(&s, 1);
	unsigned char *a = brk_slab_alloc(&s), *b = brk_slab_alloc(&s);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	*a = 1;
	*b = 2;
	brk_slab_free(&s, a);
	ck_assert_int_eq(*b, 2);
	brk_slab_free(&s, b);
	brk_slab_destroy(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");
	tcase_add_test(tc, test_alloc_zeroed_distinct_aligned);
	tcase_add_test(tc, test_edge_of_a_block);
	tcase_add_test(tc, test_tiny_objects);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
