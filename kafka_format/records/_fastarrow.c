/*
 * kafka_format.records._fastdecode Arrow assembly helpers: the per-record columns records.assembly
 * derives from the batches (one pass each, into blocks of the block cache: no numpy temporaries,
 * no fresh pages).  Each returns Buffers (buffer protocol) that pyarrow wraps without a copy.
 */

#include "_fastbuf.h"

#include <stdint.h>
#include <string.h>

PyDoc_STRVAR(repeat_doc,
"repeat(pattern, n) -> Buffer\n\n"
"n copies of the bytes `pattern` (constant columns: a fixed-width value, a string's bytes).");

static PyObject *fd_repeat(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer pat;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &pat, &n))
        return NULL;
    PyObject *result = NULL;
    size_t w = (size_t)pat.len;
    if (n < 0 || (w && (size_t)n > ((size_t)PY_SSIZE_T_MAX) / w)) {
        PyErr_SetString(PyExc_ValueError, "repeat: bad count");
        goto done;
    }
    BufferObject *out = buffer_new(w * (size_t)n);
    if (!out)
        goto done;
    size_t total = w * (size_t)n;
    if (total) {                                  /* doubling copies */
        memcpy(out->data, pat.buf, w);
        size_t have = w;
        while (have < total) {
            size_t step = have < total - have ? have : total - have;
            memcpy(out->data + have, out->data, step);
            have += step;
        }
    }
    result = (PyObject *)out;
done:
    PyBuffer_Release(&pat);
    return result;
}

PyDoc_STRVAR(offsets32_doc,
"offsets32(n, width) -> Buffer\n\n"
"int32 [0, width, 2*width, ..., n*width]: the offsets of n equal strings (n*width < 2^31).");

static PyObject *fd_offsets32(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n, width;
    if (!PyArg_ParseTuple(args, "nn", &n, &width))
        return NULL;
    if (n < 0 || width < 0 || (width && n > INT32_MAX / width)) {
        PyErr_SetString(PyExc_OverflowError, "offsets32: n * width must fit an int32");
        return NULL;
    }
    BufferObject *out = buffer_new((size_t)(n + 1) * 4);
    if (!out)
        return NULL;
    int32_t *o = (int32_t *)out->data;
    int32_t v = 0;
    for (Py_ssize_t i = 0; i <= n; i++, v += (int32_t)width)
        o[i] = v;
    return (PyObject *)out;
}

PyDoc_STRVAR(runs_doc,
"runs(batch_row) -> Buffer\n\n"
"int64 starts of the runs of equal values of the int32 buffer batch_row, then its length:\n"
"run i is [starts[i], starts[i+1]) (a batch's records are consecutive).");

static PyObject *fd_runs(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)view.len / 4;
    const int32_t *rows = view.buf;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += i == 0 || rows[i] != rows[i - 1];
    BufferObject *out = buffer_new((k + 1) * 8);
    if (!out)
        goto done;
    int64_t *starts = (int64_t *)out->data;
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || rows[i] != rows[i - 1])
            starts[k++] = (int64_t)i;
    starts[k] = (int64_t)n;
    result = (PyObject *)out;
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(repeat_runs_doc,
"repeat_runs(values, itemsize, starts) -> Buffer\n\n"
"Item i of values (k items of itemsize 1, 2, 4 or 8 bytes) repeated starts[i+1] - starts[i] times\n"
"(starts: int64[k+1], non-decreasing from 0): a batch field expanded to its records.");

static PyObject *fd_repeat_runs(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer values, starts_view;
    Py_ssize_t itemsize;
    if (!PyArg_ParseTuple(args, "y*ny*", &values, &itemsize, &starts_view))
        return NULL;
    PyObject *result = NULL;
    const int64_t *starts = starts_view.buf;
    size_t k1 = (size_t)starts_view.len / 8;
    if ((itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) || k1 == 0 ||
        (size_t)values.len != (k1 - 1) * (size_t)itemsize || starts[0] != 0) {
        PyErr_SetString(PyExc_ValueError, "repeat_runs: bad arguments");
        goto done;
    }
    for (size_t i = 0; i + 1 < k1; i++) {
        if (starts[i + 1] < starts[i]) {
            PyErr_SetString(PyExc_ValueError, "repeat_runs: starts must not decrease");
            goto done;
        }
    }
    size_t n = (size_t)starts[k1 - 1];
    BufferObject *out = buffer_new(n * (size_t)itemsize);
    if (!out)
        goto done;
    const char *src = values.buf;
    char *dst = out->data;
    for (size_t i = 0; i + 1 < k1; i++) {
        size_t a = (size_t)starts[i], b = (size_t)starts[i + 1];
        switch (itemsize) {
        case 1:
            memset(dst + a, src[i], b - a);
            break;
        case 2: {
            uint16_t v;
            memcpy(&v, src + 2 * i, 2);
            for (size_t j = a; j < b; j++)
                ((uint16_t *)dst)[j] = v;
            break;
        }
        case 4: {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            for (size_t j = a; j < b; j++)
                ((uint32_t *)dst)[j] = v;
            break;
        }
        default: {
            uint64_t v;
            memcpy(&v, src + 8 * i, 8);
            for (size_t j = a; j < b; j++)
                ((uint64_t *)dst)[j] = v;
            break;
        }
        }
    }
    result = (PyObject *)out;
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&starts_view);
    return result;
}

PyDoc_STRVAR(timestamps_us_doc,
"timestamps_us(ts_ms) -> (Buffer, Buffer | None, nulls)\n\n"
"int64 milliseconds as int64 microseconds; a value whose microseconds do not fit an int64\n"
"(|ms| > INT64_MAX // 1000, only from corrupt data) is null (0 under an LSB-first validity\n"
"bitmap, returned only when there are nulls).");

static PyObject *fd_timestamps_us(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    PyObject *result = NULL;
    const int64_t max_ms = INT64_MAX / 1000;
    size_t n = (size_t)view.len / 8;
    const int64_t *ms = view.buf;
    BufferObject *out = buffer_new(n * 8);
    if (!out)
        goto done;
    int64_t *us = (int64_t *)out->data;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v = ms[i];
        int ok = v <= max_ms && v >= -max_ms;
        bad += !ok;
        us[i] = ok ? v * 1000 : 0;
    }
    if (!bad) {
        result = Py_BuildValue("(NOn)", (PyObject *)out, Py_None, (Py_ssize_t)0);
        goto done;
    }
    BufferObject *bitmap = buffer_new((n + 7) / 8);
    if (!bitmap) {
        Py_DECREF(out);
        goto done;
    }
    memset(bitmap->data, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
        if (ms[i] <= max_ms && ms[i] >= -max_ms)
            bitmap->data[i / 8] |= (char)(1 << (i % 8));
    result = Py_BuildValue("(NNn)", (PyObject *)out, (PyObject *)bitmap, (Py_ssize_t)bad);
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(block_cache_info_doc,
"block_cache_info() -> (hits, misses, cached_blocks, cached_bytes)\n\n"
"Statistics of the cache of large output blocks (tests, benchmarks).");

static PyObject *fd_block_cache_info(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    unsigned long long hits, misses;
    int count;
    size_t bytes;
    block_cache_stats(&hits, &misses, &count, &bytes);
    return Py_BuildValue("(KKin)", hits, misses, count, (Py_ssize_t)bytes);
}

PyMethodDef kf_arrow_methods[] = {
    {"repeat", fd_repeat, METH_VARARGS, repeat_doc},
    {"offsets32", fd_offsets32, METH_VARARGS, offsets32_doc},
    {"runs", fd_runs, METH_VARARGS, runs_doc},
    {"repeat_runs", fd_repeat_runs, METH_VARARGS, repeat_runs_doc},
    {"timestamps_us", fd_timestamps_us, METH_VARARGS, timestamps_us_doc},
    {"block_cache_info", fd_block_cache_info, METH_NOARGS, block_cache_info_doc},
    {NULL, NULL, 0, NULL},
};
