/*
 * slab.h - fixed-size objects allocated in blocks of many.
 *
 * Why: objects that live long and are many (client connections), when each
 * is malloc'd alone, sit between the short-lived buffers malloc hands out in
 * between; freeing the buffers then leaves holes of a few pages around each
 * object, and malloc_trim can give back only the whole pages inside a hole:
 * about 4.7 KiB per idle connection stayed resident that way. Taken from
 * blocks of BRK_SLAB_BLOCK_OBJS, the objects sit together and the buffers'
 * frees join into large holes that go back to the system whole.
 *
 * A block is freed when its last object is, except one empty block kept
 * for the next allocation (so one object coming and going at a block's edge
 * does not malloc and free a block each time). Objects are zeroed when
 * handed out. Not thread-safe: one owner, one thread (the loop's).
 */
#ifndef SAMSA_BROKER_SLAB_H
#define SAMSA_BROKER_SLAB_H

#include <stddef.h>

#define BRK_SLAB_BLOCK_OBJS 64

typedef struct brk_slab_block brk_slab_block;

typedef struct brk_slab {
	size_t slot;            /* bytes per slot: a block pointer, then the object */
	size_t obj_size;        /* bytes of the object, as given to brk_slab_init */
	brk_slab_block *avail;  /* blocks with a free slot (the kept empty one too) */
	size_t nblocks;         /* blocks allocated */
	size_t nempty;          /* of which empty (0 or 1) */
} brk_slab;

/* An empty slab of objects of obj_size bytes (> 0). Allocates nothing. */
void brk_slab_init(brk_slab *s, size_t obj_size);

/* A zeroed object, aligned as malloc aligns; NULL when out of memory. */
void *brk_slab_alloc(brk_slab *s);

/* Give back an object of s (NULL is a no-op). */
void brk_slab_free(brk_slab *s, void *obj);

/* Free every block; every object must have been given back. */
void brk_slab_destroy(brk_slab *s);

#endif
