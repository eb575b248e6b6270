/*
 * kafka_format.records._fastdecode memory: output blocks, the Buffer type that hands them to Python, and
 * the growable Column the loops fill.
 *
 * Fresh pages cost a page fault each (expensive under virtualisation: a fresh 8 MiB column was
 * measured slower than the decode loop itself), so large blocks released by dead Buffers are kept
 * in a small cache (at most 64 MiB per process) and handed to the next call.  The cache is only
 * touched with the GIL held.
 */
#ifndef KF_FASTBUF_H
#define KF_FASTBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

#define BLOCK_CACHE_MIN ((size_t)64 << 10)       /* smaller blocks: plain malloc reuse */

/* A block of memory exposed read-write through the buffer protocol. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
    size_t capacity;
} BufferObject;

extern PyTypeObject BufferType;

/* Working state of one output column while a loop runs (not a Python object yet). */
typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} Column;

/* A block of at least `want` bytes (GIL held); *capacity receives its real size. */
char *block_get(size_t want, size_t *capacity);
/* Give a block back (GIL held). */
void block_put(char *data, size_t capacity);
/* (hits, misses, cached blocks, cached bytes) of the block cache. */
void block_cache_stats(unsigned long long *hits, unsigned long long *misses, int *count, size_t *bytes);

/* A Buffer of `size` bytes from the block cache (GIL held), or NULL with an exception. */
BufferObject *buffer_new(size_t size);

/* GIL held: a column with room for `capacity` bytes; -1 with MemoryError. */
int column_init(Column *c, size_t capacity);
/* Grow so that `extra` more bytes fit after c->size (realloc, no GIL needed); -1 on failure. */
int column_reserve_slow(Column *c, size_t extra);
/* Grow to at least `bytes` through the block cache (no GIL needed: taken for the exchange). */
int column_grow(Column *c, size_t bytes);
/* GIL held. */
void column_free(Column *c);
/* Hand the memory to a Buffer object; the column is emptied (GIL held). */
PyObject *column_finish(Column *c);

static inline int column_reserve(Column *c, size_t extra)
{
    if (c->capacity - c->size >= extra)
        return 0;
    return column_reserve_slow(c, extra);
}

static inline int column_ensure(Column *c, size_t bytes)
{
    return c->capacity >= bytes ? 0 : column_grow(c, bytes);
}

#endif
