/*
 * The column buffers and the row loop of the compiled typed-column decoders (see _columns.h).
 * Compiled into each decoder's extension module.
 */
#include "_columns.h"

/* ------------------------------------------------------------------ growable column buffers */
int kc_grow_slow(void **buf, int64_t *cap, int64_t need, size_t item) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *b = realloc(*buf, (size_t)c * item);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

int kc_col_slot(Cols *x, Col *c, uint8_t valid) {
    if (!c->valid) {
        if (valid) return 0;
        int64_t cap = c->vcap > c->n + 1 ? c->vcap : c->n + 64;
        c->valid = malloc((size_t)cap);
        if (!c->valid) { x->oom = 1; return -1; }
        c->vcap = cap;
        memset(c->valid, 1, (size_t)c->n);
    } else if (kc_grow((void **)&c->valid, &c->vcap, c->n + 1, 1)) {
        x->oom = 1;
        return -1;
    }
    c->valid[c->n] = valid;
    return 0;
}

/* Finish a null slot: n += 1 (fixed columns get zero bytes, offsets repeat). */
static int col_close_null(Cols *x, Col *c) {
    switch (c->kind) {
    case K_FIXED:
        if (kc_grow((void **)&c->data, &c->dcap, (c->n + 1) * c->width, 1)) { x->oom = 1; return -1; }
        memset(c->data + c->n * c->width, 0, (size_t)c->width);
        break;
    case K_VAR:
        if (kc_grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
        c->offs[c->n + 1] = (int32_t)c->dlen;
        break;
    case K_LIST:
        if (kc_grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
        c->offs[c->n + 1] = c->offs[c->n];
        break;
    case K_STRUCT:
        for (int i = 0; i < c->nchild; i++)
            if (kc_col_null(x, c->child[i])) return -1;
        break;
    }
    c->n += 1;
    return 0;
}

int kc_col_null(Cols *x, int ci) {
    Col *c = &x->cols[ci];
    if (kc_col_slot(x, c, 0)) return -1;
    return col_close_null(x, c);
}

int kc_utf8_check(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xc0) != 0x80 || (c2 & 0xc0) != 0x80) return 0;
            if (c == 0xe0 && c1 < 0xa0) return 0;        /* overlong */
            if (c == 0xed && c1 > 0x9f) return 0;        /* surrogate */
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            if ((c1 & 0xc0) != 0x80 || (c2 & 0xc0) != 0x80 || (c3 & 0xc0) != 0x80) return 0;
            if (c == 0xf0 && c1 < 0x90) return 0;        /* overlong */
            if (c == 0xf4 && c1 > 0x8f) return 0;        /* above U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

#define MAP_SMALL 16

static uint64_t fnv(const uint8_t *s, int64_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static inline void key_at(const Col *k, int64_t i, const uint8_t **s, int64_t *len) {
    if (k->kind == K_VAR) {
        *s = k->data + k->offs[i];
        *len = k->offs[i + 1] - k->offs[i];
    } else {
        *s = k->data + i * k->width;
        *len = k->width;
    }
}

int kc_keys_repeat(Cols *x, Col *k, int64_t first) {
    int64_t m = k->n - first;
    if (m < 2) return 0;
    if (k->kind != K_VAR && k->kind != K_FIXED) return 1;
    const uint8_t *a, *b;
    int64_t la, lb;
    if (m <= MAP_SMALL) {
        for (int64_t i = first; i < k->n; i++) {
            key_at(k, i, &a, &la);
            for (int64_t j = i + 1; j < k->n; j++) {
                key_at(k, j, &b, &lb);
                if (la == lb && memcmp(a, b, (size_t)la) == 0) return 1;
            }
        }
        return 0;
    }
    int64_t cap = 1;
    while (cap < 2 * m) cap <<= 1;
    int64_t *slot = malloc((size_t)cap * sizeof(int64_t));
    if (!slot) { x->oom = 1; return 1; }
    for (int64_t i = 0; i < cap; i++) slot[i] = -1;
    int dup = 0;
    for (int64_t i = first; i < k->n && !dup; i++) {
        key_at(k, i, &a, &la);
        uint64_t h = fnv(a, la) & (uint64_t)(cap - 1);
        while (slot[h] >= 0) {
            key_at(k, slot[h], &b, &lb);
            if (la == lb && memcmp(a, b, (size_t)la) == 0) {
                dup = 1;
                break;
            }
            h = (h + 1) & (uint64_t)(cap - 1);
        }
        slot[h] = i;
    }
    free(slot);
    return dup;
}

/* ------------------------------------------------------------------ Python glue */
/* Output memory handed to Python without a copy: a malloc'd block behind the buffer protocol. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t size;
} BufObject;

static void Buf_dealloc(BufObject *self) {
    free(self->data);
    PyObject_Free(self);
}

static int Buf_getbuffer(BufObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 1, flags);
}

static PyBufferProcs Buf_as_buffer = {(getbufferproc)Buf_getbuffer, NULL};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_format.registry._columns.Buffer",
    .tp_doc = "Column memory of one decode call (read-only buffer protocol).",
    .tp_basicsize = sizeof(BufObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Buf_dealloc,
    .tp_as_buffer = &Buf_as_buffer,
};

int kc_ready(void) {
    return PyType_Ready(&BufType);
}

/* The first `size` bytes of *mem as a Buffer (*mem is taken: NULL afterwards); None for no memory. */
static PyObject *take_buffer(void **mem, int64_t size) {
    if (!*mem) {
        if (size) Py_RETURN_NONE;
        return PyBytes_FromStringAndSize("", 0);
    }
    BufObject *b = PyObject_New(BufObject, &BufType);
    if (!b) return NULL;
    void *shrunk = size > 0 ? realloc(*mem, (size_t)size) : NULL;
    if (size > 0 && shrunk) *mem = shrunk;
    b->data = *mem;
    b->size = (Py_ssize_t)size;
    *mem = NULL;
    return (PyObject *)b;
}

static void free_cols(Col *cols, int n) {
    if (!cols) return;
    for (int i = 0; i < n; i++) {
        free(cols[i].child);
        free(cols[i].valid);
        free(cols[i].data);
        free(cols[i].offs);
    }
    free(cols);
}

/* cols: tuple of (kind, width, (child, ...), per_row); per_row: one slot per row (reserved up front) */
static Col *make_cols(PyObject *spec, int *ncols) {
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "cols must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    Col *cols = calloc((size_t)(n ? n : 1), sizeof(Col));
    if (!cols) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *children;
        Col *c = &cols[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(spec, i), "iiO!i", &c->kind, &c->width, &PyTuple_Type, &children,
                              &c->per_row))
            goto fail;
        c->nchild = (int)PyTuple_GET_SIZE(children);
        c->child = calloc((size_t)(c->nchild ? c->nchild : 1), sizeof(int));
        if (!c->child) { PyErr_NoMemory(); goto fail; }
        for (int j = 0; j < c->nchild; j++) {
            long k = PyLong_AsLong(PyTuple_GET_ITEM(children, j));
            if (k <= i || k >= n) {                /* children come after their parent: no cycles */
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "column child out of range");
                goto fail;
            }
            c->child[j] = (int)k;
        }
        if (c->kind < K_STRUCT || c->kind > K_LIST || (c->kind == K_FIXED && c->width <= 0) ||
            (c->kind == K_LIST && c->nchild != 1)) {
            PyErr_SetString(PyExc_ValueError, "bad column spec");
            goto fail;
        }
        if (c->kind == K_VAR || c->kind == K_LIST) {
            c->offs = malloc(64 * sizeof(int32_t));
            if (!c->offs) { PyErr_NoMemory(); goto fail; }
            c->ocap = 64;
            c->offs[0] = 0;
        }
    }
    *ncols = (int)n;
    return cols;
fail:
    free_cols(cols, (int)n);
    return NULL;
}

PyObject *kc_decode(PyObject *args, const Format *format, void *state) {
    PyObject *programs, *spec, *validity_obj;
    int root, wide;
    Py_ssize_t first, rows;
    Py_buffer data = {0}, offsets = {0}, validity = {0}, keys = {0}, slots = {0};
    PyObject *result = NULL;
    Col *cols = NULL;
    int ncols = 0, loaded = 0;
    int64_t *snap = NULL;
    uint8_t *status = NULL;
    int32_t *ids = NULL;
    Py_ssize_t ng = 0;

    if (!PyArg_ParseTuple(args, "O!O!iy*y*innOy*y*", &PyTuple_Type, &programs, &PyTuple_Type, &spec, &root,
                          &data, &offsets, &wide, &first, &rows, &validity_obj, &keys, &slots))
        return NULL;
    if (validity_obj != Py_None && PyObject_GetBuffer(validity_obj, &validity, PyBUF_SIMPLE) < 0) goto done;
    if (first < 0 || rows < 0 || (first + rows + 1) * (wide ? 8 : 4) > offsets.len ||
        (validity.buf && (first + rows + 7) / 8 > validity.len) || keys.len != slots.len) {
        PyErr_SetString(PyExc_ValueError, "offsets, validity or ids do not cover the rows");
        goto done;
    }
    cols = make_cols(spec, &ncols);
    if (!cols) goto done;
    if (root < 0 || root >= ncols) {
        PyErr_SetString(PyExc_ValueError, "root column out of range");
        goto done;
    }
    Cols x = {.cols = cols, .ncols = ncols};
    ng = PyTuple_GET_SIZE(programs);
    if (format->load(state, programs, &x)) goto done;
    loaded = 1;
    for (int k = 0; k < ncols; k++) {          /* one slot per row: no regrowth for those columns */
        Col *c = &cols[k];
        if (!c->per_row || rows == 0) continue;
        int64_t need = rows + 1;
        if ((c->kind == K_FIXED && kc_grow((void **)&c->data, &c->dcap, need * c->width, 1)) ||
            ((c->kind == K_VAR || c->kind == K_LIST) && kc_grow((void **)&c->offs, &c->ocap, need + 1, 4))) {
            PyErr_NoMemory();
            goto done;
        }
    }
    snap = malloc((size_t)(2 * ncols) * sizeof(int64_t));
    status = calloc((size_t)(rows ? rows : 1), 1);
    ids = malloc((size_t)(rows ? rows : 1) * sizeof(int32_t));
    if (!snap || !status || !ids) { PyErr_NoMemory(); goto done; }

    const uint8_t *base = data.buf, *bits = validity.buf;
    const int32_t *key = keys.buf, *slot = slots.buf;
    Py_ssize_t nkeys = keys.len / 4;
    /* Rows fail rarely: a first pass keeps no per-row snapshot of the columns and stops at the first
     * row that fails; only then is the batch decoded again from the start, each row's column
     * lengths kept so that a failing row alone is rolled back. */
    Py_BEGIN_ALLOW_THREADS
    for (int careful = 0; careful < 2; careful++) {
        int failed = 0;
        for (Py_ssize_t r = 0; r < rows && !x.oom; r++) {
            Py_ssize_t i = first + r;
            int64_t st, en;
            if (wide) {
                memcpy(&st, (const char *)offsets.buf + 8 * i, 8);
                memcpy(&en, (const char *)offsets.buf + 8 * (i + 1), 8);
            } else {
                int32_t a32, b32;
                memcpy(&a32, (const char *)offsets.buf + 4 * i, 4);
                memcpy(&b32, (const char *)offsets.buf + 4 * (i + 1), 4);
                st = a32;
                en = b32;
            }
            ids[r] = -1;
            uint8_t state_ = ST_OK;
            int32_t gi = -1;
            if (bits && !((bits[i >> 3] >> (i & 7)) & 1)) {
                state_ = ST_NULL;
            } else if (st < 0 || en < st || en > data.len) {
                state_ = ST_BAD_OFFSETS;
            } else if (en - st < WIRE_HEADER) {
                state_ = ST_SHORT;
            } else if (base[st] != 0) {
                state_ = ST_BAD_MAGIC;
            } else {
                uint32_t id = ((uint32_t)base[st + 1] << 24) | ((uint32_t)base[st + 2] << 16) |
                              ((uint32_t)base[st + 3] << 8) | base[st + 4];
                ids[r] = (int32_t)id;
                for (Py_ssize_t k = 0; k < nkeys; k++)
                    if (key[k] == (int32_t)id) { gi = slot[k]; break; }
                if (gi < 0 || gi >= ng) state_ = ST_NO_PROGRAM;
            }
            if (state_ != ST_OK) {
                status[r] = state_;
                if (kc_col_null(&x, root)) break;
                continue;
            }
            if (careful) {
                for (int k = 0; k < ncols; k++) {
                    snap[2 * k] = cols[k].n;
                    snap[2 * k + 1] = cols[k].dlen;
                }
            }
            if (format->row(state, &x, gi, base + st + WIRE_HEADER, base + en)) {
                if (!careful) {
                    failed = 1;
                    break;
                }
                for (int k = 0; k < ncols; k++) {
                    cols[k].n = snap[2 * k];
                    cols[k].dlen = snap[2 * k + 1];
                }
                status[r] = ST_FAILED;
                if (kc_col_null(&x, root)) break;
            }
        }
        if (!failed || x.oom) break;
        for (int k = 0; k < ncols; k++) {   /* every slot is written again (validity too, once made) */
            cols[k].n = 0;
            cols[k].dlen = 0;
        }
    }
    Py_END_ALLOW_THREADS
    if (x.oom) { PyErr_NoMemory(); goto done; }

    PyObject *out = PyTuple_New(ncols);
    if (!out) goto done;
    for (int k = 0; k < ncols; k++) {
        Col *c = &cols[k];
        int64_t dlen = c->kind == K_FIXED ? c->n * c->width : c->dlen;
        PyObject *valid = c->valid ? take_buffer((void **)&c->valid, c->n) : (Py_INCREF(Py_None), Py_None);
        PyObject *values = (c->kind == K_FIXED || c->kind == K_VAR) ? take_buffer((void **)&c->data, dlen)
                                                                    : (Py_INCREF(Py_None), Py_None);
        PyObject *offs = c->offs ? take_buffer((void **)&c->offs, 4 * (c->n + 1)) : (Py_INCREF(Py_None), Py_None);
        PyObject *t = (valid && values && offs) ? Py_BuildValue("(LNNN)", (long long)c->n, valid, values, offs)
                                                : NULL;
        if (!t) {
            Py_XDECREF(valid);
            Py_XDECREF(values);
            Py_XDECREF(offs);
            Py_DECREF(out);
            goto done;
        }
        PyTuple_SET_ITEM(out, k, t);
    }
    result = Py_BuildValue("(NNN)", out, take_buffer((void **)&status, rows),
                           take_buffer((void **)&ids, 4 * (int64_t)rows));

done:
    if (loaded) format->release(state);
    free_cols(cols, ncols);
    free(snap);
    free(status);
    free(ids);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    if (validity.obj) PyBuffer_Release(&validity);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&slots);
    return result;
}
