/*
 * kafka_format.records._fastdecode memory: the block cache, Buffer objects and growable columns (see
 * _fastbuf.h).
 */

#include "_fastbuf.h"

#include <string.h>


#define BLOCK_CACHE_SLOTS 128
#define BLOCK_CACHE_MAX_BYTES ((size_t)64 << 20)     /* retained at most, per process */

static struct {
    char *data;
    size_t capacity;
} block_cache[BLOCK_CACHE_SLOTS];
static int block_cache_count = 0;
static size_t block_cache_bytes = 0;
static unsigned long long block_cache_hits = 0, block_cache_misses = 0;

/* A block of at least `want` bytes (GIL held); *capacity receives its real size. */
char *block_get(size_t want, size_t *capacity)
{
    if (want == 0)
        want = 1;
    if (want >= BLOCK_CACHE_MIN) {
        /* round up so that chunks of similar size reuse each other's blocks */
        size_t grain = want >= ((size_t)1 << 20) ? ((size_t)1 << 20) : BLOCK_CACHE_MIN;
        want = (want + grain - 1) / grain * grain;
        int best = -1;
        for (int i = 0; i < block_cache_count; i++) {
            size_t cap = block_cache[i].capacity;
            if (cap >= want && cap <= 2 * want &&
                (best < 0 || cap < block_cache[best].capacity))
                best = i;
        }
        if (best >= 0) {
            char *data = block_cache[best].data;
            *capacity = block_cache[best].capacity;
            block_cache_bytes -= *capacity;
            block_cache_hits++;
            block_cache_count--;
            memmove(&block_cache[best], &block_cache[best + 1],
                    (size_t)(block_cache_count - best) * sizeof block_cache[0]);
            return data;
        }
    }
    if (want >= BLOCK_CACHE_MIN)
        block_cache_misses++;
    *capacity = want;
    return PyMem_RawMalloc(want);
}

/* Give a block back (GIL held): large blocks are cached, the oldest cached ones freed
 * to make room (the newest are the likeliest to fit the next chunk). */
void block_put(char *data, size_t capacity)
{
    if (!data)
        return;
    if (capacity < BLOCK_CACHE_MIN || capacity > BLOCK_CACHE_MAX_BYTES) {
        PyMem_RawFree(data);
        return;
    }
    while (block_cache_count == BLOCK_CACHE_SLOTS ||
           block_cache_bytes + capacity > BLOCK_CACHE_MAX_BYTES) {
        PyMem_RawFree(block_cache[0].data);
        block_cache_bytes -= block_cache[0].capacity;
        block_cache_count--;
        memmove(&block_cache[0], &block_cache[1], (size_t)block_cache_count * sizeof block_cache[0]);
    }
    block_cache[block_cache_count].data = data;
    block_cache[block_cache_count].capacity = capacity;
    block_cache_count++;
    block_cache_bytes += capacity;
}

/* ------------------------------------------------------------------ Buffer type */


static void Buffer_dealloc(BufferObject *self)
{
    block_put(self->data, self->capacity);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 0, flags);
}

static Py_ssize_t Buffer_length(BufferObject *self)
{
    return self->size;
}

static PyBufferProcs Buffer_as_buffer = {
    (getbufferproc)Buffer_getbuffer,
    NULL,
};

static PySequenceMethods Buffer_as_sequence = {
    .sq_length = (lenfunc)Buffer_length,
};

PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_format.records._fastdecode.Buffer",
    .tp_doc = PyDoc_STR("Column memory filled by the decoder (buffer protocol, zero copy)."),
    .tp_basicsize = sizeof(BufferObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_as_sequence = &Buffer_as_sequence,
};


/* GIL held. */
int column_init(Column *c, size_t capacity)
{
    c->size = 0;
    c->data = block_get(capacity, &c->capacity);
    if (!c->data) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Grow so that `extra` more bytes fit; amortised doubling.  Safe without the GIL:
 * sets no Python error (the caller reports V_NO_MEMORY). */
int column_reserve_slow(Column *c, size_t extra)
{
    size_t need = c->size + extra;
    size_t cap = c->capacity * 2;
    if (cap < need)
        cap = need;
    char *p = PyMem_RawRealloc(c->data, cap);
    if (!p)
        return -1;
    c->data = p;
    c->capacity = cap;
    return 0;
}

/* GIL held. */
void column_free(Column *c)
{
    block_put(c->data, c->capacity);
    c->data = NULL;
}

/* Hand the memory to a Buffer object; the column is emptied (GIL held).  A block mostly
 * unused (under 1/3 filled, e.g. keys sized by the payload bound) is shrunk so that a
 * long-lived Arrow array does not pin it, unless the waste is small (at most SHRINK_SLACK):
 * such blocks go back to the cache at their full size and fit the next chunk's request (a
 * shrunk block never would, costing fresh pages).  1/3 and the slack leave a column sized
 * from the size hints alone (up to 1/4 of room, rounded to 1 MiB, in a cached block of up to
 * twice the size asked for): with 1/2 and 1 MiB, the key column and the last part's value
 * column of every compressed chunk were shrunk, and faulted in afresh in the next. */
#define SHRINK_SLACK ((size_t)2 << 20)
PyObject *column_finish(Column *c)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b) {
        column_free(c);
        return NULL;
    }
    if (c->capacity >= BLOCK_CACHE_MIN && c->size < c->capacity / 3 &&
        c->capacity - c->size > SHRINK_SLACK) {
        size_t keep = c->size ? c->size : 1;
        char *p = PyMem_RawRealloc(c->data, keep);
        if (p) {
            c->data = p;
            c->capacity = keep;
        }
    }
    b->data = c->data;
    b->size = (Py_ssize_t)c->size;
    b->capacity = c->capacity;
    c->data = NULL;
    return (PyObject *)b;
}

/* Grow to at least `bytes` (amortised doubling), called without the GIL: the new block comes
 * from the block cache (taking the GIL for the moment of the exchange), so that a column grown
 * while decompressed batches are decoded reuses the blocks of earlier calls instead of faulting
 * in fresh pages and filling the cache with blocks nobody asks for. */
int column_grow(Column *c, size_t bytes)
{
    size_t cap = c->capacity * 2;
    if (cap < bytes)
        cap = bytes;
    PyGILState_STATE gil = PyGILState_Ensure();
    size_t got;
    char *p = block_get(cap, &got);
    if (p) {
        memcpy(p, c->data, c->capacity);
        block_put(c->data, c->capacity);
        c->data = p;
        c->capacity = got;
    }
    PyGILState_Release(gil);
    return p ? 0 : -1;
}

/* A Buffer of `size` bytes from the block cache (GIL held), or NULL with an exception. */
BufferObject *buffer_new(size_t size)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b)
        return NULL;
    b->data = block_get(size, &b->capacity);
    if (!b->data) {
        b->capacity = 0;
        b->size = 0;
        Py_DECREF(b);
        PyErr_NoMemory();
        return NULL;
    }
    b->size = (Py_ssize_t)size;
    return b;
}

void block_cache_stats(unsigned long long *hits, unsigned long long *misses, int *count, size_t *bytes)
{
    *hits = block_cache_hits;
    *misses = block_cache_misses;
    *count = block_cache_count;
    *bytes = block_cache_bytes;
}
