/*
 * kafka_format.records._fastdecode: scan, the walk over framed log entries (FileLogInputStream).
 */

#include "_fastbuf.h"
#include "_fastformat.h"
#include "_fastcrc.h"

/* ------------------------------------------------------------------ scan */

static inline uint32_t be32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}

PyDoc_STRVAR(scan_doc,
"scan(buf, start, end, verify_crc) -> (positions, headers, crc_valid, count, stop, status)\n\n"
"Walk the framed entries of buf[start:end] (FileLogInputStream.nextBatch).\n"
"positions: int64 byte offsets of complete entries; headers: the first 61 bytes of\n"
"every entry (zero-padded when shorter), for a big-endian structured view;\n"
"crc_valid: uint8 per entry\n"
"(1 ok, 0 mismatch, 2 not checked: legacy entries, v2 shorter than 61 bytes, or\n"
"verify_crc 0, or with verify_crc 2 (SCAN_VERIFY_DEFER) non-empty uncompressed v2\n"
"batches, whose CRC decode_v2 verifies with FLAG_CHECK_CRC); stop: where the walk stopped; status: 0 end of data / partial\n"
"entry, 1 zero-filled tail, 2 size < 14 with non-zero bytes at `stop`.");

static PyObject *fd_scan(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end;
    int verify_crc;
    if (!PyArg_ParseTuple(args, "y*nni", &view, &start, &end, &verify_crc))
        return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan range outside the buffer");
        return NULL;
    }
    const unsigned char *buf = view.buf;
    /* Entries are usually kilobytes: start small and grow (at most one entry per 26
     * bytes of input, so the arrays stay bounded by the input). */
    size_t max_entries = (size_t)(end - start) / (LOG_OVERHEAD + MIN_ENTRY_SIZE) + 1;
    if (max_entries > SCAN_INITIAL_ENTRIES)
        max_entries = SCAN_INITIAL_ENTRIES;
    Column pos_col, hdr_col, crc_col;
    if (column_init(&pos_col, max_entries * sizeof(int64_t)) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (column_init(&hdr_col, max_entries * V2_HEADER_SIZE) < 0) {
        column_free(&pos_col);
        PyBuffer_Release(&view);
        return NULL;
    }
    if (column_init(&crc_col, max_entries) < 0) {
        column_free(&pos_col);
        column_free(&hdr_col);
        PyBuffer_Release(&view);
        return NULL;
    }
    size_t n = 0;
    Py_ssize_t pos = start;
    int status = SCAN_END;
    int no_memory = 0;

    Py_BEGIN_ALLOW_THREADS
    while (end - pos > HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size = (int32_t)be32(buf + pos + 8);
        if (size < MIN_ENTRY_SIZE) {
            const unsigned char *q = buf + pos, *qe = buf + end;
            while (q < qe && *q == 0)
                q++;
            status = q == qe ? SCAN_ZERO_TAIL : SCAN_CORRUPT_SIZE;
            break;
        }
        if ((int64_t)size > (int64_t)(end - pos - LOG_OVERHEAD))
            break;                                  /* partial trailing entry */
        Py_ssize_t entry_len = LOG_OVERHEAD + (Py_ssize_t)size;
        uint8_t ok = CRC_NOT_CHECKED;
        if (verify_crc && buf[pos + MAGIC_OFFSET] == MAGIC_V2 && entry_len >= V2_HEADER_SIZE &&
            !(verify_crc == SCAN_VERIFY_DEFER && (buf[pos + V2_ATTRIBUTES_OFFSET + 1] & V2_CODEC_MASK) == 0
              && be32(buf + pos + V2_COUNT_OFFSET) != 0)) {
            uint32_t stored = be32(buf + pos + V2_CRC_OFFSET);
            uint32_t actual = kf_crc32c(0, buf + pos + V2_ATTRIBUTES_OFFSET,
                                            (size_t)(entry_len - V2_ATTRIBUTES_OFFSET));
            ok = stored == actual;
        }
        pos_col.size = n * sizeof(int64_t);
        hdr_col.size = n * V2_HEADER_SIZE;
        crc_col.size = n;
        if (column_reserve(&pos_col, sizeof(int64_t)) < 0 ||
            column_reserve(&hdr_col, V2_HEADER_SIZE) < 0 || column_reserve(&crc_col, 1) < 0) {
            no_memory = 1;
            break;
        }
        ((int64_t *)pos_col.data)[n] = pos;
        unsigned char *hdr = (unsigned char *)hdr_col.data + n * V2_HEADER_SIZE;
        if (entry_len >= V2_HEADER_SIZE) {
            memcpy(hdr, buf + pos, V2_HEADER_SIZE);
        } else {
            memcpy(hdr, buf + pos, (size_t)entry_len);
            memset(hdr + entry_len, 0, (size_t)(V2_HEADER_SIZE - entry_len));
        }
        ((uint8_t *)crc_col.data)[n] = ok;
        n++;
        pos += entry_len;
    }
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&view);
    if (no_memory) {
        column_free(&pos_col);
        column_free(&hdr_col);
        column_free(&crc_col);
        return PyErr_NoMemory();
    }
    pos_col.size = n * sizeof(int64_t);
    hdr_col.size = n * V2_HEADER_SIZE;
    crc_col.size = n;
    PyObject *p = column_finish(&pos_col);
    PyObject *hd = p ? column_finish(&hdr_col) : NULL;
    PyObject *c = hd ? column_finish(&crc_col) : NULL;
    if (!c) {
        Py_XDECREF(p);
        Py_XDECREF(hd);
        column_free(&hdr_col);
        column_free(&crc_col);
        return NULL;
    }
    return Py_BuildValue("(NNNnni)", p, hd, c, (Py_ssize_t)n, pos, status);
}


PyMethodDef kf_scan_methods[] = {
    {"scan", fd_scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};
