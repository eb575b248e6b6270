/*
 * kafka_format.log.cleaner._kernels: the log cleaner's per-record work in C, one call per
 * decoded chunk of records (never per record from Python).
 *
 *   md5(data)                         MD5 of one byte string (RFC 1321; tests hold it to hashlib)
 *   digest_keys(koff, kdata, rows)    the 16-byte MD5 of each selected key, concatenated
 *   OffsetMap(slots)                  Kafka's SkimpyOffsetMap: 16-byte MD5 of a key -> offset,
 *     .put_keys(koff, kdata, rows, offsets, capacity)
 *                                     put the selected keys in order; stops before a put when
 *                                     the map already holds `capacity` keys (Cleaner's
 *                                     maxDesiredMapSize check); returns how many were put
 *     .get_keys(koff, kdata, rows, out)
 *                                     the offset of each selected key, -1 when absent
 *   encode_v2_records(...)            the records region of a v2 batch for selected records
 *                                     (DefaultRecord.writeTo), uncompressed
 *
 * Keys are given as Arrow-style columns: koff int32[n+1] (offsets into kdata), kdata bytes;
 * rows int64[k] selects records (in the order given).  Every index and length is checked
 * against the buffers before it is used.
 *
 * The map's table grows on demand up to `slots` entries of 24 bytes (hash + offset, as
 * SkimpyOffsetMap lays them out), so its memory never exceeds Kafka's dedupe buffer share.
 * Probing follows SkimpyOffsetMap.positionOf (4-byte windows of the hash, then linear) over the
 * current table size; an all-zero entry is empty (SkimpyOffsetMap.isEmpty).
 *
 * digest_keys, put_keys and get_keys release the GIL for their loops, so partitions cleaned on
 * threads hash their keys at once; a map is used by one call at a time (another call on it
 * meanwhile raises RuntimeError).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ MD5 (RFC 1321) */

static uint32_t md5_t[64];   /* T[i] = floor(2^32 * |sin(i + 1)|), RFC 1321 section 3.4 */
static const unsigned char md5_s[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static void md5_tables(void)
{
    for (int i = 0; i < 64; i++)
        md5_t[i] = (uint32_t)(fabs(sin((double)(i + 1))) * 4294967296.0);
}

static inline uint32_t rotl32(uint32_t x, unsigned n) { return (x << n) | (x >> (32 - n)); }

/* One 64-byte block into state (RFC 1321 section 3.4, rounds 1-4). */
static void md5_block(uint32_t st[4], const unsigned char *p)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) | ((uint32_t)p[4 * i + 2] << 16)
               | ((uint32_t)p[4 * i + 3] << 24);
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (b & d) | (c & ~d);
            g = (5 * i + 1) & 15;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) & 15;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) & 15;
        }
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rotl32(a + f + md5_t[i] + x[g], md5_s[i]);
        a = t;
    }
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
}

/* MD5 of data[0:n] into out (16 bytes): padding with 0x80, zeros and the bit length (section 3.1-3.2). */
static void md5(const unsigned char *data, size_t n, unsigned char out[16])
{
    uint32_t st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    size_t full = n & ~(size_t)63;
    for (size_t i = 0; i < full; i += 64)
        md5_block(st, data + i);
    unsigned char tail[128];
    size_t rest = n - full;
    memcpy(tail, data + full, rest);
    tail[rest] = 0x80;
    size_t len = rest < 56 ? 64 : 128;
    memset(tail + rest + 1, 0, len - rest - 1);
    uint64_t bits = (uint64_t)n << 3;
    for (int i = 0; i < 8; i++)
        tail[len - 8 + i] = (unsigned char)(bits >> (8 * i));
    md5_block(st, tail);
    if (len == 128)
        md5_block(st, tail + 64);
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (unsigned char)st[i];
        out[4 * i + 1] = (unsigned char)(st[i] >> 8);
        out[4 * i + 2] = (unsigned char)(st[i] >> 16);
        out[4 * i + 3] = (unsigned char)(st[i] >> 24);
    }
}

/* ------------------------------------------------------------------ key columns */

typedef struct {
    Py_buffer off, data, rows;
    const int32_t *o;
    const unsigned char *d;
    const int64_t *r;
    Py_ssize_t n;      /* records in the columns (koff has n + 1 entries) */
    Py_ssize_t k;      /* selected rows */
} Keys;

static void keys_release(Keys *ks)
{
    if (ks->off.obj) PyBuffer_Release(&ks->off);
    if (ks->data.obj) PyBuffer_Release(&ks->data);
    if (ks->rows.obj) PyBuffer_Release(&ks->rows);
}

/* Check the buffers: koff int32 (n + 1 >= 1 entries), rows int64, every selected row < n. */
static int keys_open(Keys *ks, PyObject *off, PyObject *data, PyObject *rows)
{
    memset(ks, 0, sizeof *ks);
    if (PyObject_GetBuffer(off, &ks->off, PyBUF_C_CONTIGUOUS) < 0
        || PyObject_GetBuffer(data, &ks->data, PyBUF_C_CONTIGUOUS) < 0
        || PyObject_GetBuffer(rows, &ks->rows, PyBUF_C_CONTIGUOUS) < 0) {
        keys_release(ks);
        return -1;
    }
    if (ks->off.len % 4 || ks->off.len < 4 || ks->rows.len % 8) {
        PyErr_SetString(PyExc_ValueError, "key offsets must be int32[n+1] and rows int64");
        keys_release(ks);
        return -1;
    }
    ks->o = (const int32_t *)ks->off.buf;
    ks->d = (const unsigned char *)ks->data.buf;
    ks->r = (const int64_t *)ks->rows.buf;
    ks->n = ks->off.len / 4 - 1;
    ks->k = ks->rows.len / 8;
    return 0;
}

/* What went wrong in a loop that runs without the GIL, raised once it is held again. */
typedef enum { KE_OK, KE_ROW, KE_SPAN, KE_MEMORY, KE_FULL, KE_NO_SLOT } KErrCode;

typedef struct {
    KErrCode code;
    long long a, b, c;
} KErr;

/* Raise `e` (GIL held); returns NULL for the caller to return. */
static PyObject *kerr_raise(const KErr *e, const Keys *ks)
{
    switch (e->code) {
    case KE_ROW:
        PyErr_Format(PyExc_ValueError, "row %lld outside the %zd records", e->a, ks->n);
        break;
    case KE_SPAN:
        PyErr_Format(PyExc_ValueError, "key %lld spans [%lld, %lld) outside %zd bytes", e->a, e->b, e->c,
                     ks->data.len);
        break;
    case KE_MEMORY:
        PyErr_NoMemory();
        break;
    case KE_FULL:
        PyErr_Format(PyExc_ValueError, "Attempted to add a new entry to a full offset map, entries: %lld, slots: %lld",
                     e->a, e->b);
        break;
    case KE_NO_SLOT:
        PyErr_SetString(PyExc_RuntimeError, "offset map: no free slot below its slot count");
        break;
    case KE_OK:
        break;
    }
    return NULL;
}

/* The bytes of selected row j; -1 (`err` set) when out of bounds.  Touches no Python object. */
static int key_at(const Keys *ks, Py_ssize_t j, const unsigned char **p, size_t *len, KErr *err)
{
    int64_t r = ks->r[j];
    if (r < 0 || r >= ks->n) {
        *err = (KErr){KE_ROW, (long long)r, 0, 0};
        return -1;
    }
    int32_t a = ks->o[r], b = ks->o[r + 1];
    if (a < 0 || b < a || (Py_ssize_t)b > ks->data.len) {
        *err = (KErr){KE_SPAN, (long long)r, a, b};
        return -1;
    }
    *p = ks->d + a;
    *len = (size_t)(b - a);
    return 0;
}

/* ------------------------------------------------------------------ module functions */

static PyObject *k_md5(PyObject *self, PyObject *args)
{
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*:md5", &b))
        return NULL;
    unsigned char out[16];
    md5((const unsigned char *)b.buf, (size_t)b.len, out);
    PyBuffer_Release(&b);
    return PyBytes_FromStringAndSize((const char *)out, 16);
}

static PyObject *k_digest_keys(PyObject *self, PyObject *args)
{
    PyObject *off, *data, *rows;
    if (!PyArg_ParseTuple(args, "OOO:digest_keys", &off, &data, &rows))
        return NULL;
    Keys ks;
    if (keys_open(&ks, off, data, rows) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, ks.k * 16);
    if (out) {
        unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out);
        KErr err = {KE_OK, 0, 0, 0};
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < ks.k; j++) {
            const unsigned char *p;
            size_t len;
            if (key_at(&ks, j, &p, &len, &err) < 0)
                break;
            md5(p, len, w + 16 * j);
        }
        Py_END_ALLOW_THREADS
        if (err.code != KE_OK) {
            kerr_raise(&err, &ks);
            Py_CLEAR(out);
        }
    }
    keys_release(&ks);
    return out;
}

/* ------------------------------------------------------------------ OffsetMap */

#define HASH_SIZE 16
#define ENTRY_SIZE 24           /* SkimpyOffsetMap.bytesPerEntry: hash + int64 offset */
#define INITIAL_SLOTS 1024

typedef struct {
    PyObject_HEAD
    int64_t slots;              /* Kafka's slot count: the table never grows past it */
    int64_t size;               /* slots allocated now */
    unsigned char *table;       /* size * ENTRY_SIZE bytes */
    int64_t entries;
    int64_t latest;             /* SkimpyOffsetMap.lastOffset */
    int busy;                   /* a put or get runs without the GIL: no other call may touch it */
} OffsetMap;

/* Refuse (RuntimeError) to touch a map another thread is putting into or reading; GIL held. */
static int om_idle(const OffsetMap *m)
{
    if (m->busy) {
        PyErr_SetString(PyExc_RuntimeError, "offset map in use by another thread");
        return -1;
    }
    return 0;
}

/* SkimpyOffsetMap.positionOf: a 4-byte big-endian window of the hash (then linear steps),
 * Utils.abs, modulo the table size. */
static inline int64_t position_of(const unsigned char *h, int attempt, int64_t size)
{
    int at = attempt < HASH_SIZE - 4 ? attempt : HASH_SIZE - 4;
    uint32_t u = ((uint32_t)h[at] << 24) | ((uint32_t)h[at + 1] << 16) | ((uint32_t)h[at + 2] << 8) | h[at + 3];
    int extra = attempt - HASH_SIZE + 4;
    u += (uint32_t)(extra > 0 ? extra : 0);               /* Java int addition wraps */
    int32_t probe = (int32_t)u;
    int64_t a = probe == INT32_MIN ? 0 : (probe < 0 ? -(int64_t)probe : probe);
    return a % size;
}

static inline int entry_empty(const unsigned char *e)
{
    static const unsigned char zero[ENTRY_SIZE];
    return memcmp(e, zero, ENTRY_SIZE) == 0;
}

/* The entry holding hash h, or the empty entry where it would go; NULL when every slot is
 * taken by other keys (probing past the hash windows is linear, so size + 12 attempts visit
 * every slot; SkimpyOffsetMap.get gives up after `slots` attempts). */
static unsigned char *find_slot(unsigned char *table, int64_t size, const unsigned char *h)
{
    for (int64_t attempt = 0; attempt < size + HASH_SIZE; attempt++) {
        unsigned char *e = table + position_of(h, (int)attempt, size) * ENTRY_SIZE;
        if (entry_empty(e) || memcmp(e, h, HASH_SIZE) == 0)
            return e;
    }
    return NULL;
}

/* Grow the table to `size` slots (PyMem_Raw*: callable without the GIL); -1 when out of memory. */
static int om_resize(OffsetMap *m, int64_t size)
{
    unsigned char *t = PyMem_RawCalloc((size_t)size, ENTRY_SIZE);
    if (!t)
        return -1;
    if (m->table) {
        for (int64_t i = 0; i < m->size; i++) {
            unsigned char *e = m->table + i * ENTRY_SIZE;
            if (!entry_empty(e))
                memcpy(find_slot(t, size, e), e, ENTRY_SIZE);   /* size > entries: always a slot */
        }
        PyMem_RawFree(m->table);
    }
    m->table = t;
    m->size = size;
    return 0;
}

/* Room for one more key: grow (doubling, at most to `slots`) past 3/4 full; a table at
 * `slots` takes keys up to `slots` (Kafka: put requires entries < slots).  -1 with `err` set. */
static int om_reserve(OffsetMap *m, KErr *err)
{
    if (m->entries >= m->slots) {
        *err = (KErr){KE_FULL, (long long)m->entries, (long long)m->slots, 0};
        return -1;
    }
    if (m->size < m->slots && (m->entries + 1) * 4 > m->size * 3) {
        int64_t want = m->size * 2 < m->slots ? m->size * 2 : m->slots;
        if (om_resize(m, want) < 0) {
            *err = (KErr){KE_MEMORY, 0, 0, 0};
            return -1;
        }
    }
    return 0;
}

static int om_init(OffsetMap *m, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"slots", NULL};
    long long slots;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "L:OffsetMap", names, &slots))
        return -1;
    if (slots < 1) {
        PyErr_SetString(PyExc_ValueError, "an offset map needs at least one slot");
        return -1;
    }
    if (om_idle(m) < 0)
        return -1;
    PyMem_RawFree(m->table);
    m->table = NULL;
    m->slots = slots;
    m->entries = 0;
    m->latest = -1;
    if (om_resize(m, slots < INITIAL_SLOTS ? slots : INITIAL_SLOTS) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void om_dealloc(OffsetMap *m)
{
    PyMem_RawFree(m->table);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* put_keys and get_keys run their loops without the GIL (the local engine cleans partitions on
 * threads): the buffers stay exported meanwhile, the map is marked busy (any other call on it
 * refuses), and an error found in the loop is raised once the GIL is held again. */
static PyObject *om_put_keys(OffsetMap *m, PyObject *args)
{
    PyObject *off, *data, *rows;
    Py_buffer offsets;
    long long capacity;
    if (!PyArg_ParseTuple(args, "OOOy*L:put_keys", &off, &data, &rows, &offsets, &capacity))
        return NULL;
    Keys ks;
    if (keys_open(&ks, off, data, rows) < 0) {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    PyObject *result = NULL;
    if (offsets.len != ks.k * 8) {
        PyErr_SetString(PyExc_ValueError, "one int64 offset per selected row");
        goto done;
    }
    if (om_idle(m) < 0)
        goto done;
    const int64_t *offs = (const int64_t *)offsets.buf;
    Py_ssize_t j = 0;
    KErr err = {KE_OK, 0, 0, 0};
    m->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    for (; j < ks.k; j++) {
        if (m->entries >= capacity)
            break;                                  /* full before this put: the round ends here */
        const unsigned char *p;
        size_t len;
        if (key_at(&ks, j, &p, &len, &err) < 0)
            break;
        unsigned char h[HASH_SIZE];
        md5(p, len, h);
        unsigned char *e = find_slot(m->table, m->size, h);
        if (!e || entry_empty(e)) {
            if (om_reserve(m, &err) < 0)
                break;
            e = find_slot(m->table, m->size, h);    /* the table may have grown */
            if (!e) {
                err = (KErr){KE_NO_SLOT, 0, 0, 0};
                break;
            }
            memcpy(e, h, HASH_SIZE);
            m->entries++;
        }
        memcpy(e + HASH_SIZE, &offs[j], 8);
        m->latest = offs[j];
    }
    Py_END_ALLOW_THREADS
    m->busy = 0;
    result = err.code == KE_OK ? PyLong_FromSsize_t(j) : kerr_raise(&err, &ks);
done:
    keys_release(&ks);
    PyBuffer_Release(&offsets);
    return result;
}

static PyObject *om_get_keys(OffsetMap *m, PyObject *args)
{
    PyObject *off, *data, *rows;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "OOOw*:get_keys", &off, &data, &rows, &out))
        return NULL;
    Keys ks;
    if (keys_open(&ks, off, data, rows) < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    PyObject *result = NULL;
    if (out.len != ks.k * 8) {
        PyErr_SetString(PyExc_ValueError, "out must hold one int64 per selected row");
        goto done;
    }
    if (om_idle(m) < 0)
        goto done;
    int64_t *w = (int64_t *)out.buf;
    KErr err = {KE_OK, 0, 0, 0};
    m->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < ks.k; j++) {
        const unsigned char *p;
        size_t len;
        if (key_at(&ks, j, &p, &len, &err) < 0)
            break;
        unsigned char h[HASH_SIZE];
        md5(p, len, h);
        const unsigned char *e = find_slot(m->table, m->size, h);
        if (!e || entry_empty(e))
            w[j] = -1;
        else
            memcpy(&w[j], e + HASH_SIZE, 8);
    }
    Py_END_ALLOW_THREADS
    m->busy = 0;
    result = err.code == KE_OK ? Py_NewRef(Py_None) : kerr_raise(&err, &ks);
done:
    keys_release(&ks);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *om_clear(OffsetMap *m, PyObject *noargs)
{
    if (om_idle(m) < 0)
        return NULL;
    memset(m->table, 0, (size_t)m->size * ENTRY_SIZE);
    m->entries = 0;
    m->latest = -1;
    Py_RETURN_NONE;
}

/* (slots never changes after __init__, which refuses a busy map) */
static PyObject *om_get_size(OffsetMap *m, void *closure) { return om_idle(m) < 0 ? NULL : PyLong_FromLongLong(m->entries); }
static PyObject *om_get_slots(OffsetMap *m, void *closure) { return PyLong_FromLongLong(m->slots); }
static PyObject *om_get_bytes(OffsetMap *m, void *closure)
{
    return om_idle(m) < 0 ? NULL : PyLong_FromLongLong(m->size * ENTRY_SIZE);
}
static PyObject *om_get_latest(OffsetMap *m, void *closure) { return om_idle(m) < 0 ? NULL : PyLong_FromLongLong(m->latest); }

static int om_set_latest(OffsetMap *m, PyObject *value, void *closure)
{
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "latest_offset cannot be deleted");
        return -1;
    }
    long long v = PyLong_AsLongLong(value);
    if ((v == -1 && PyErr_Occurred()) || om_idle(m) < 0)
        return -1;
    m->latest = v;
    return 0;
}

static PyMethodDef om_methods[] = {
    {"put_keys", (PyCFunction)om_put_keys, METH_VARARGS,
     "put_keys(key_offsets, key_data, rows, offsets, capacity) -> int: put the selected keys in order, "
     "stopping before a put when the map holds capacity keys; returns how many were put."},
    {"get_keys", (PyCFunction)om_get_keys, METH_VARARGS,
     "get_keys(key_offsets, key_data, rows, out): out[j] = offset of selected key j, -1 when absent."},
    {"clear", (PyCFunction)om_clear, METH_NOARGS, "Forget every key; latest_offset = -1."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef om_getset[] = {
    {"size", (getter)om_get_size, NULL, "keys held (SkimpyOffsetMap.size)", NULL},
    {"slots", (getter)om_get_slots, NULL, "the most slots the table takes", NULL},
    {"table_bytes", (getter)om_get_bytes, NULL, "bytes of the table now", NULL},
    {"latest_offset", (getter)om_get_latest, (setter)om_set_latest,
     "offset of the last put, or as updateLatestOffset set it", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject OffsetMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_format.log.cleaner._kernels.OffsetMap",
    .tp_basicsize = sizeof(OffsetMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "OffsetMap(slots): Kafka's SkimpyOffsetMap of MD5 key digests (see the module doc).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)om_init,
    .tp_dealloc = (destructor)om_dealloc,
    .tp_methods = om_methods,
    .tp_getset = om_getset,
};

/* ------------------------------------------------------------------ v2 record encoding */

static inline size_t varint_size(uint64_t z)
{
    size_t n = 1;
    while (z >= 0x80) {
        z >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline unsigned char *put_varint(unsigned char *w, uint64_t z)
{
    while (z >= 0x80) {
        *w++ = (unsigned char)((z & 0x7f) | 0x80);
        z >>= 7;
    }
    *w++ = (unsigned char)z;
    return w;
}

typedef struct {
    Py_buffer b;
    Py_ssize_t items;
} Col;

/* The 14 columns encode_v2_records reads (RecordColumns' layout) plus the selected rows. */
enum { C_ROWS, C_OFFSET, C_TS, C_KOFF, C_KDATA, C_KVALID, C_VOFF, C_VDATA, C_VVALID, C_HOFF, C_HKOFF,
       C_HKDATA, C_HVOFF, C_HVDATA, C_HVVALID, C_COUNT };
static const int col_item[C_COUNT] = {8, 8, 8, 4, 1, 1, 4, 1, 1, 4, 4, 1, 4, 1, 1};

/* Bounds of [o[i], o[i+1]) of an int32 offsets column over a data column; -1 when bad. */
static inline int span(const Col *c, const Col *data, int64_t i, int32_t *a, int32_t *b)
{
    if (i < 0 || i + 1 >= c->items)
        return -1;
    const int32_t *o = (const int32_t *)c->b.buf;
    *a = o[i];
    *b = o[i + 1];
    return (*a < 0 || *b < *a || *b > data->items) ? -1 : 0;
}

/* Size of record r's body (after its length prefix); -1 on a bad index. */
static int64_t record_body(Col *c, int64_t r, int64_t base_offset, int64_t base_ts)
{
    const int64_t *off = (const int64_t *)c[C_OFFSET].b.buf, *ts = (const int64_t *)c[C_TS].b.buf;
    const unsigned char *kv = (const unsigned char *)c[C_KVALID].b.buf, *vv = (const unsigned char *)c[C_VVALID].b.buf;
    const unsigned char *hvv = (const unsigned char *)c[C_HVVALID].b.buf;
    int32_t a, b;
    int64_t n = 1 + varint_size(zigzag(ts[r] - base_ts)) + varint_size(zigzag(off[r] - base_offset));
    if (kv[r]) {
        if (span(&c[C_KOFF], &c[C_KDATA], r, &a, &b) < 0) return -1;
        n += varint_size(zigzag(b - a)) + (b - a);
    } else
        n += 1;
    if (vv[r]) {
        if (span(&c[C_VOFF], &c[C_VDATA], r, &a, &b) < 0) return -1;
        n += varint_size(zigzag(b - a)) + (b - a);
    } else
        n += 1;
    int32_t h0, h1;
    if (span(&c[C_HOFF], &c[C_HKOFF], r, &h0, &h1) < 0 || h1 >= c[C_HKOFF].items || h1 >= c[C_HVOFF].items
        || h1 > c[C_HVVALID].items)
        return -1;
    n += varint_size(zigzag(h1 - h0));
    for (int32_t h = h0; h < h1; h++) {
        if (span(&c[C_HKOFF], &c[C_HKDATA], h, &a, &b) < 0) return -1;
        n += varint_size(zigzag(b - a)) + (b - a);
        if (hvv[h]) {
            if (span(&c[C_HVOFF], &c[C_HVDATA], h, &a, &b) < 0) return -1;
            n += varint_size(zigzag(b - a)) + (b - a);
        } else
            n += 1;
    }
    return n;
}

static unsigned char *put_bytes(unsigned char *w, const Col *o, const Col *d, int64_t i)
{
    const int32_t *off = (const int32_t *)o->b.buf;
    int32_t a = off[i], b = off[i + 1];
    w = put_varint(w, zigzag(b - a));
    memcpy(w, (const unsigned char *)d->b.buf + a, (size_t)(b - a));
    return w + (b - a);
}

static unsigned char *write_record(unsigned char *w, Col *c, int64_t r, int64_t body, int64_t base_offset,
                                   int64_t base_ts)
{
    const int64_t *off = (const int64_t *)c[C_OFFSET].b.buf, *ts = (const int64_t *)c[C_TS].b.buf;
    const unsigned char *kv = (const unsigned char *)c[C_KVALID].b.buf, *vv = (const unsigned char *)c[C_VVALID].b.buf;
    const unsigned char *hvv = (const unsigned char *)c[C_HVVALID].b.buf;
    const int32_t *hoff = (const int32_t *)c[C_HOFF].b.buf;
    w = put_varint(w, zigzag(body));
    *w++ = 0;                                               /* attributes: unused */
    w = put_varint(w, zigzag(ts[r] - base_ts));
    w = put_varint(w, zigzag(off[r] - base_offset));
    if (kv[r]) w = put_bytes(w, &c[C_KOFF], &c[C_KDATA], r); else w = put_varint(w, zigzag(-1));
    if (vv[r]) w = put_bytes(w, &c[C_VOFF], &c[C_VDATA], r); else w = put_varint(w, zigzag(-1));
    int32_t h0 = hoff[r], h1 = hoff[r + 1];
    w = put_varint(w, zigzag(h1 - h0));
    for (int32_t h = h0; h < h1; h++) {
        w = put_bytes(w, &c[C_HKOFF], &c[C_HKDATA], h);
        if (hvv[h]) w = put_bytes(w, &c[C_HVOFF], &c[C_HVDATA], h); else w = put_varint(w, zigzag(-1));
    }
    return w;
}

static PyObject *k_encode_v2_records(PyObject *self, PyObject *args)
{
    PyObject *objs[C_COUNT];
    long long base_offset, base_ts;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOLL:encode_v2_records", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11],
                          &objs[12], &objs[13], &objs[14], &base_offset, &base_ts))
        return NULL;
    Col c[C_COUNT];
    int got = 0;
    PyObject *out = NULL;
    for (; got < C_COUNT; got++) {
        if (PyObject_GetBuffer(objs[got], &c[got].b, PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        if (c[got].b.len % col_item[got]) {
            PyErr_Format(PyExc_ValueError, "column %d is not of %d-byte items", got, col_item[got]);
            got++;
            goto done;
        }
        c[got].items = c[got].b.len / col_item[got];
    }
    Py_ssize_t n = c[C_OFFSET].items;
    if (c[C_TS].items != n || c[C_KVALID].items != n || c[C_VVALID].items != n || c[C_KOFF].items != n + 1
        || c[C_VOFF].items != n + 1 || c[C_HOFF].items != n + 1) {
        PyErr_SetString(PyExc_ValueError, "record columns of different lengths");
        goto done;
    }
    const int64_t *rows = (const int64_t *)c[C_ROWS].b.buf;
    Py_ssize_t k = c[C_ROWS].items;
    int64_t total = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        if (rows[j] < 0 || rows[j] >= n) {
            PyErr_Format(PyExc_ValueError, "row %lld outside the %zd records", (long long)rows[j], n);
            goto done;
        }
        int64_t body = record_body(c, rows[j], base_offset, base_ts);
        if (body < 0) {
            PyErr_Format(PyExc_ValueError, "record %lld points outside its columns", (long long)rows[j]);
            goto done;
        }
        total += varint_size(zigzag(body)) + body;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (!out)
        goto done;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t j = 0; j < k; j++)
        w = write_record(w, c, rows[j], record_body(c, rows[j], base_offset, base_ts), base_offset, base_ts);
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&c[i].b);
    return out;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef k_methods[] = {
    {"md5", k_md5, METH_VARARGS, "md5(data) -> the 16-byte MD5 digest (RFC 1321)."},
    {"digest_keys", k_digest_keys, METH_VARARGS,
     "digest_keys(key_offsets, key_data, rows) -> bytes: the MD5 of each selected key, 16 bytes each."},
    {"encode_v2_records", k_encode_v2_records, METH_VARARGS,
     "encode_v2_records(rows, offset, timestamp, key_offsets, key_data, key_valid, value_offsets, value_data, "
     "value_valid, header_offsets, header_key_offsets, header_key_data, header_value_offsets, "
     "header_value_data, header_value_valid, base_offset, base_timestamp) -> bytes: the selected records "
     "as a v2 records region (DefaultRecord.writeTo), deltas from base_offset and base_timestamp."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef k_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_format.log.cleaner._kernels",
    .m_doc = "The log cleaner's per-record work in C: MD5 (RFC 1321), the offset map, v2 record encoding.",
    .m_size = -1,
    .m_methods = k_methods,
};

PyMODINIT_FUNC PyInit__kernels(void)
{
    md5_tables();
    if (PyType_Ready(&OffsetMapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&k_module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "OffsetMap", (PyObject *)&OffsetMapType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
