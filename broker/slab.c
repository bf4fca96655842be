/*
 * slab.c - fixed-size objects in blocks (see slab.h).
 *
 * A block: its header, then BRK_SLAB_BLOCK_OBJS slots. A slot is the
 * pointer to its block (how brk_slab_free finds the block) followed by the
 * object; a free slot's object bytes hold the next free slot of its block.
 * Blocks with a free slot are on the slab's doubly linked avail list.
 *
 * In an AddressSanitizer build the object bytes of a free slot are
 * poisoned, so a use after brk_slab_free is reported as it would be after
 * free().
 */
#include "broker/slab.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct brk_slab_block {
	brk_slab_block *prev, *next; /* on the avail list */
	bool listed;
	int used;                    /* objects handed out */
	unsigned char *free;         /* first free slot, NULL when full */
	alignas(max_align_t) unsigned char slots[];
};

#define ALIGN (alignof(max_align_t))

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#endif
#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Bytes of a slot after its block pointer. */
static size_t obj_room(const brk_slab *s) { return s->slot - ALIGN; }

void brk_slab_init(brk_slab *s, size_t obj_size)
{
	memset(s, 0, sizeof(*s));
	s->obj_size = obj_size;
	/* The block pointer takes a whole alignment unit; a free slot holds a
	 * pointer where the object goes. */
	size_t slot = ALIGN + (obj_size > sizeof(void *) ? obj_size : sizeof(void *));
	s->slot = (slot + ALIGN - 1) / ALIGN * ALIGN;
}

static void avail_push(brk_slab *s, brk_slab_block *b)
{
	b->prev = NULL;
	b->next = s->avail;
	if (s->avail)
		s->avail->prev = b;
	s->avail = b;
	b->listed = true;
}

static void avail_unlink(brk_slab *s, brk_slab_block *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		s->avail = b->next;
	if (b->next)
		b->next->prev = b->prev;
	b->prev = b->next = NULL;
	b->listed = false;
}

static brk_slab_block *block_new(brk_slab *s)
{
	brk_slab_block *b = malloc(sizeof(*b) + s->slot * BRK_SLAB_BLOCK_OBJS);
	if (!b)
		return NULL;
	b->used = 0;
	b->free = NULL;
	for (int i = BRK_SLAB_BLOCK_OBJS; i-- > 0;) {
		unsigned char *slot = b->slots + (size_t)i * s->slot;
		memcpy(slot, &b, sizeof(b));
		memcpy(slot + ALIGN, &b->free, sizeof(b->free));
		POISON(slot + ALIGN, obj_room(s));
		b->free = slot;
	}
	s->nblocks++;
	s->nempty++;
	avail_push(s, b);
	return b;
}

void *brk_slab_alloc(brk_slab *s)
{
	brk_slab_block *b = s->avail;
	if (!b && !(b = block_new(s)))
		return NULL;
	unsigned char *slot = b->free;
	UNPOISON(slot + ALIGN, obj_room(s));
	memcpy(&b->free, slot + ALIGN, sizeof(b->free));
	if (b->used++ == 0)
		s->nempty--;
	if (!b->free)
		avail_unlink(s, b);
	memset(slot + ALIGN, 0, s->obj_size);
	return slot + ALIGN;
}

void brk_slab_free(brk_slab *s, void *obj)
{
	if (!obj)
		return;
	unsigned char *slot = (unsigned char *)obj - ALIGN;
	brk_slab_block *b;
	memcpy(&b, slot, sizeof(b));
	memcpy(slot + ALIGN, &b->free, sizeof(b->free));
	POISON(slot + ALIGN, obj_room(s));
	b->free = slot;
	if (!b->listed)
		avail_push(s, b);
	if (--b->used > 0)
		return;
	if (s->nempty == 0) {
		s->nempty = 1; /* kept for the next allocation */
		return;
	}
	avail_unlink(s, b);
	s->nblocks--;
	UNPOISON(b->slots, s->slot * BRK_SLAB_BLOCK_OBJS);
	free(b);
}

void brk_slab_destroy(brk_slab *s)
{
	while (s->avail) {
		brk_slab_block *b = s->avail;
		avail_unlink(s, b);
		UNPOISON(b->slots, s->slot * BRK_SLAB_BLOCK_OBJS);
		free(b);
	}
	/* Full blocks are not listed: objects still out would leak here, and
	 * the contract says there are none. */
	s->nblocks = s->nempty = 0;
}
