/*
 * kafka_format.records._fastdecode: the compiled columnar hot loop of kafka_format.records.fast.
 *
 * Two entry points, each one C call per file chunk (never per batch or record):
 *
 *   scan(buf, start, end, verify_crc)      walk the framed log entries (spec 2.1,
 *                                          FileLogInputStream.nextBatch) and verify
 *                                          the v2 CRC-32C of every complete entry;
 *   decode_v2(payloads, meta)              decode the records of many v2 batches
 *                                          (spec 2.2-2.3, DefaultRecord.readFrom)
 *                                          straight into column buffers.
 *
 * Output buffers are `Buffer` objects (malloc'd memory exposed through the buffer
 * protocol), wrapped zero-copy by numpy/pyarrow in fast.py.  Every size that drives
 * an allocation is bounded by the input bytes that back it.  Format violations are
 * reported as FormatViolation(batch_index, code, payload_offset); fast.py turns
 * them into the reference decoder's kafka_format.common.errors exception.
 *
 * v2 record layout (clients/.../record/DefaultRecord.java):
 *   length          varint   bytes of the rest of the record
 *   attributes      int8     unused
 *   timestampDelta  varlong
 *   offsetDelta     varint
 *   keyLength       varint   negative = null key (DefaultRecord: keySize >= 0 reads a key)
 *   key             bytes
 *   valueLength     varint   negative = null value
 *   value           bytes
 *   headerCount     varint   >= 0, <= remaining bytes
 *   headers         keyLength varint (>= 0), key (UTF-8), valueLength varint (< 0 = null), value
 * Varints are zigzag LEB128 (ByteUtils.readVarint <= 5 bytes, readVarlong <= 10 bytes).
 */

#include "_fastrecords.h"
#include "_fastcodecs.h"
#include "_fastcrc.h"
#include "_fastxxh.h"

/* ------------------------------------------------------------------ errors */

static PyObject *FormatViolation;

static const char *const violation_names[] = {
    "ok", "negative_count", "count_too_large", "truncated", "varint_too_long",
    "record_length", "header_count", "header_key_length", "header_key_utf8",
    "trailing_bytes", "crc", "decompress", "too_large", "no_memory",
};

static void raise_violation(Py_ssize_t batch, Violation code, Py_ssize_t offset)
{
    PyObject *args = Py_BuildValue("(nsn)", batch, violation_names[code], offset);
    if (args) {
        PyErr_SetObject(FormatViolation, args);
        Py_DECREF(args);
    }
}


/* ------------------------------------------------------------------ decode_v2 */

/* Inner loop over all batches of decode_v2.  Returns V_OK or the violation, with *bad_batch and
 * *bad_offset set.  Runs without the GIL. */
static Violation decode_all(DecodeState *st, const int64_t *meta, Py_ssize_t nbatches,
                            Py_ssize_t *bad_batch, Py_ssize_t *bad_offset)
{
    Out o;
    out_start(st, &o);
    for (Py_ssize_t b = 0; b < nbatches; b++) {
        const int64_t *m = meta + b * META_NCOLS;
        const unsigned char *start = st->views[b].buf;
        const unsigned char *end = start + st->views[b].len;
        *bad_batch = b;
        *bad_offset = 0;
        RunningCrc crc = {0, 0, start};
        if (m[META_FLAGS] & FLAG_CHECK_CRC) {    /* length >= CRC_REGION_HEADER: decode_v2 */
            crc.on = 1;
            start += CRC_REGION_HEADER;
        }
        if (reserve_batch(st, &o, (size_t)m[META_COUNT], (size_t)(end - start)) < 0)
            return V_NO_MEMORY;
        Violation v = decode_records(st, &o, start, end, m, 0, bad_offset, crc.on ? &crc : NULL);
        if (v != V_OK)
            return v;
        if (crc.on && kf_crc32c(crc.value, crc.from, (size_t)(end - crc.from)) != (uint32_t)m[META_CRC]) {
            *bad_offset = 0;
            return V_CRC;
        }
    }
    out_finish(st, &o);
    return V_OK;
}

PyDoc_STRVAR(decode_v2_doc,
"decode_v2(payloads, meta) -> (batch_row, offset, timestamp,\n"
"    timestamp_type, sequence, key_offsets, key_data, key_valid, value_offsets,\n"
"    value_data, value_valid, header_offsets, header_key_offsets, header_key_data,\n"
"    header_value_offsets, header_value_data, header_value_valid)\n\n"
"Decode the records of len(payloads) v2 batches.  payloads[i] is the records\n"
"region of batch i (any bytes-like object); meta is a C-contiguous int64 buffer of\n"
"len(payloads) rows of META_COLUMNS columns: row, baseOffset, baseTimestamp,\n"
"maxTimestamp, baseSequence, recordsCount, flags, crc.  flags bit 0: LogAppendTime;\n"
"bit 1 (FLAG_CHECK_CRC): payloads[i] is the batch from its attributes field to its\n"
"end, whose CRC-32C must equal crc (else violation 'crc'), records after the header.\n"
"Raises FormatViolation(batch_index, code, payload_offset) on the first violation.");

static PyObject *fd_decode_v2(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *payloads;
    Py_buffer meta_view;
    if (!PyArg_ParseTuple(args, "Oy*", &payloads, &meta_view))
        return NULL;
    DecodeState st;
    memset(&st, 0, sizeof st);
    PyObject *result = NULL;
    PyObject *seq = PySequence_Fast(payloads, "payloads must be a sequence of buffers");
    if (!seq) {
        PyBuffer_Release(&meta_view);
        return NULL;
    }
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(seq);
    if (meta_view.len != nb * META_NCOLS * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "meta must hold META_COLUMNS int64 per payload");
        goto done;
    }
    const int64_t *meta = meta_view.buf;
    st.views = PyMem_Calloc((size_t)(nb ? nb : 1), sizeof(Py_buffer));
    if (!st.views) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total_payload = 0, total_records = 0;
    for (Py_ssize_t i = 0; i < nb; i++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &st.views[i], PyBUF_SIMPLE) < 0)
            goto done;
        st.nviews = i + 1;
        size_t len = (size_t)st.views[i].len;
        int64_t count = meta[i * META_NCOLS + META_COUNT];
        if (meta[i * META_NCOLS + META_FLAGS] & FLAG_CHECK_CRC) {
            if (len < CRC_REGION_HEADER) {
                raise_violation(i, V_TRUNCATED, 0);
                goto done;
            }
            len -= CRC_REGION_HEADER;
        }
        if (count < 0) {
            raise_violation(i, V_NEGATIVE_COUNT, 0);
            goto done;
        }
        if ((uint64_t)count > len / MIN_V2_RECORD_SIZE) {
            raise_violation(i, V_COUNT_TOO_LARGE, 0);
            goto done;
        }
        total_payload += len;
        total_records += (size_t)count;
    }
    if (total_payload > (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "payloads exceed 2 GiB in one call (int32 offsets)");
        goto done;
    }
    /* Sizes: records are bounded by payload/7 (checked per batch above), value bytes by
     * the payload bytes; keys and header arrays grow (each header is backed by >= 2 bytes). */
    size_t n1 = total_records + 1;
    /* keys are usually short: start small and grow (values take the payload bound, so
     * that their block is the one recycled from the previous chunk) */
    size_t key_guess = total_payload / 16 > BLOCK_CACHE_MIN ? total_payload / 16 : BLOCK_CACHE_MIN;
    size_t init[C_NCOLS] = {
        [C_BATCH_ROW] = total_records * 4, [C_OFFSET] = total_records * 8,
        [C_TIMESTAMP] = total_records * 8, [C_TIMESTAMP_TYPE] = total_records,
        [C_SEQUENCE] = total_records * 4, [C_KEY_OFFSETS] = n1 * 4,
        [C_KEY_DATA] = key_guess, [C_KEY_VALID] = total_records,
        [C_VALUE_OFFSETS] = n1 * 4, [C_VALUE_DATA] = total_payload,
        [C_VALUE_VALID] = total_records, [C_HEADER_OFFSETS] = n1 * 4,
        [C_HKEY_OFFSETS] = 256 * 4, [C_HKEY_DATA] = 4096,
        [C_HVALUE_OFFSETS] = 256 * 4, [C_HVALUE_DATA] = 4096, [C_HVALUE_VALID] = 256,
    };
    size_hint_apply(init, total_records, total_payload);
    for (int i = 0; i < C_NCOLS; i++) {
        if (column_init(&st.cols[i], init[i]) < 0)
            goto done;
        st.ncols_ready = i + 1;
    }

    Py_ssize_t bad_batch = 0, bad_offset = 0;
    Violation v;
    Py_BEGIN_ALLOW_THREADS
    v = decode_all(&st, meta, nb, &bad_batch, &bad_offset);
    Py_END_ALLOW_THREADS
    if (v == V_NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (v != V_OK) {
        raise_violation(bad_batch, v, bad_offset);
        goto done;
    }
    Out learned = {st.cols[C_OFFSET].size / 8, st.cols[C_HVALUE_VALID].size, st.cols[C_KEY_DATA].size,
                   st.cols[C_VALUE_DATA].size, st.cols[C_HKEY_DATA].size, st.cols[C_HVALUE_DATA].size};
    size_hint_learn(&learned, total_payload);
    result = PyTuple_New(C_NCOLS);
    if (!result)
        goto done;
    for (int i = 0; i < C_NCOLS; i++) {
        PyObject *b = column_finish(&st.cols[i]);
        if (!b) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, i, b);
    }
done:
    decode_state_free(&st);
    Py_DECREF(seq);
    PyBuffer_Release(&meta_view);
    return result;
}


/* ------------------------------------------------------------------ decode_v2_chunk */

/* Decompression buffers (and codec contexts) kept between calls: a fresh buffer is fresh pages
 * every call (a 560 KiB large-value batch: a page fault per 4 KiB).  Taken and given back with
 * the GIL held; larger than SCRATCH_KEEP_MAX they are freed. */
#define SCRATCH_POOL 2
#define SCRATCH_KEEP_MAX ((size_t)64 << 20)
static KfScratch scratch_pool[SCRATCH_POOL];
static int scratch_pool_count = 0;

static void scratch_take(KfScratch *s)
{
    if (scratch_pool_count > 0)
        *s = scratch_pool[--scratch_pool_count];
    else
        memset(s, 0, sizeof *s);
}

static void scratch_put(KfScratch *s)
{
    if (scratch_pool_count < SCRATCH_POOL && s->capacity <= SCRATCH_KEEP_MAX)
        scratch_pool[scratch_pool_count++] = *s;
    else
        kf_scratch_free(s);
    memset(s, 0, sizeof *s);
}

#define CM_START META_NCOLS          /* first byte of the batch's region in buf */
#define CM_END (META_NCOLS + 1)      /* end of the region */
#define CM_NCOLS (META_NCOLS + 2)
#define FLAG_CODEC_SHIFT 4           /* flags bits 4-6: the batch's codec id */

#ifdef KF_HAVE_LZ4
/* The block checksums of the lz4 batches from b on (up to KF_LZ4_GROUP, while they are lz4)
 * verified together, while their bytes are read for the first time (xxh32 is a chain of
 * dependent multiplies per block: ~7 GB/s alone, ~35 GB/s four blocks at a time with AVX-512;
 * alone it took a tenth of the medium lz4 decode).  Returns how many: ok[i] of batch b + i. */
static Py_ssize_t lz4_group(const int64_t *meta, Py_ssize_t nb, const unsigned char *base, Py_ssize_t b,
                            unsigned char ok[KF_LZ4_GROUP])
{
    const unsigned char *src[KF_LZ4_GROUP];
    size_t n[KF_LZ4_GROUP];
    int k = 0;
    for (; k < KF_LZ4_GROUP && b + k < nb; k++) {
        const int64_t *m = meta + (b + k) * CM_NCOLS;
        if (((m[META_FLAGS] >> FLAG_CODEC_SHIFT) & 7) != KF_CODEC_LZ4)
            break;
        src[k] = base + m[CM_START];
        n[k] = (size_t)(m[CM_END] - m[CM_START]);
    }
    kf_lz4_check_group(src, n, k, ok);
    return k;
}
#endif

PyDoc_STRVAR(decode_v2_chunk_doc,
"decode_v2_chunk(buf, meta, max_decompressed, options, max_held=max_decompressed)\n"
"    -> (columns, done, held)\n\n"
"Decode the records of v2 batches lying in one buffer, decompressing in C into one\n"
"reused buffer.  meta: C-contiguous int64 rows of CHUNK_META_COLUMNS columns: the\n"
"decode_v2 columns, then start and end of the batch's region in buf (the records\n"
"region; from the attributes field with FLAG_CHECK_CRC, uncompressed only).  flags\n"
"bits 4-6 hold the codec.  Each payload decompresses to at most max_decompressed bytes;\n"
"batches are taken in order until the decompressed bytes held reach max_held\n"
"(at least one): `done` batches were decoded, `held` bytes decompressed.  Any batch the\n"
"C codecs do not decode (corrupt, unusual framing, over the cap, its library not loaded)\n"
"raises FormatViolation(batch, 'decompress', 0): the caller takes the Python path.\n"
"options: OPT_SKIP_HEADERS (headers read, not output); benchmarks: OPT_NO_COPY, OPT_DECOMPRESS_ONLY.");

static PyObject *fd_decode_v2_chunk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer buf_view, meta_view;
    Py_ssize_t max_output, max_held = -1;
    int opts;
    if (!PyArg_ParseTuple(args, "y*y*ni|n", &buf_view, &meta_view, &max_output, &opts, &max_held))
        return NULL;
    if (max_held < 0 || max_held > max_output)
        max_held = max_output;
    DecodeState st;
    memset(&st, 0, sizeof st);
    KfScratch scratch;
    scratch_take(&scratch);
    PyObject *result = NULL;
    Py_ssize_t nb = meta_view.len / (Py_ssize_t)(CM_NCOLS * sizeof(int64_t));
    if (meta_view.len != nb * CM_NCOLS * (Py_ssize_t)sizeof(int64_t) || max_output < 0) {
        PyErr_SetString(PyExc_ValueError, "meta must hold CHUNK_META_COLUMNS int64 per batch");
        goto done;
    }
    const int64_t *meta = meta_view.buf;
    const unsigned char *base = buf_view.buf;
    unsigned available = kf_codecs_available();
    /* Column sizes: the batches this call will take (until max_held decompressed bytes are held)
     * bound them; decompressed sizes are expected from the codec's ratio in earlier calls
     * (size_hint_ratios), so that the columns of a chunk's short last part fit the blocks
     * they get (a block much larger than what it holds is shrunk, and its next use is fresh
     * pages: measured 10 % of the lz4 decode). */
    size_t rows_est = 0, data_est = 0, packed_est = 0;
    int estimating = 1;
    uint32_t ratio[8];
    size_hint_ratios(ratio);
    for (Py_ssize_t i = 0; i < nb; i++) {
        const int64_t *m = meta + i * CM_NCOLS;
        int64_t a = m[CM_START], e = m[CM_END], count = m[META_COUNT];
        int codec = (int)((m[META_FLAGS] >> FLAG_CODEC_SHIFT) & 7);
        int check = (m[META_FLAGS] & FLAG_CHECK_CRC) != 0;
        if (a < 0 || e < a || e > buf_view.len) {
            PyErr_SetString(PyExc_ValueError, "batch region outside the buffer");
            goto done;
        }
        size_t len = (size_t)(e - a);
        if (count < 0) {
            raise_violation(i, V_NEGATIVE_COUNT, 0);
            goto done;
        }
        if (codec != 0) {
            if (check || !(available & (1u << codec))) {
                raise_violation(i, V_DECOMPRESS, 0);
                goto done;
            }
            if (estimating) {
                size_t expect = expected_unpacked(ratio[codec], len, (size_t)max_output);
                size_t backed = len * 4 / MIN_V2_RECORD_SIZE + 1;    /* a first guess; grows */
                rows_est += (size_t)count < backed ? (size_t)count : backed;
                packed_est += expect;
                estimating = packed_est < (size_t)max_held;          /* the call stops there */
            }
            continue;
        }
        if (check) {
            if (len < CRC_REGION_HEADER) {
                raise_violation(i, V_TRUNCATED, 0);
                goto done;
            }
            len -= CRC_REGION_HEADER;
        }
        if ((uint64_t)count > len / MIN_V2_RECORD_SIZE) {
            raise_violation(i, V_COUNT_TOO_LARGE, 0);
            goto done;
        }
        if (estimating) {
            rows_est += (size_t)count;
            data_est += len;
        }
    }
    /* some room for the expectation's error (the columns grow past it); never more than the
     * held bound and a quarter */
    packed_est += packed_est / 8;
    if (packed_est > (size_t)max_held + (size_t)max_held / 4)
        packed_est = (size_t)max_held + (size_t)max_held / 4;
    data_est += packed_est;
    if (opts & OPT_DECOMPRESS_ONLY)
        rows_est = data_est = 0;
    size_t n1 = rows_est + 1;
    size_t key_guess = data_est / 16 > BLOCK_CACHE_MIN ? data_est / 16 : BLOCK_CACHE_MIN;
    size_t init[C_NCOLS] = {
        [C_BATCH_ROW] = rows_est * 4, [C_OFFSET] = rows_est * 8,
        [C_TIMESTAMP] = rows_est * 8, [C_TIMESTAMP_TYPE] = rows_est,
        [C_SEQUENCE] = rows_est * 4, [C_KEY_OFFSETS] = n1 * 4,
        [C_KEY_DATA] = key_guess, [C_KEY_VALID] = rows_est,
        [C_VALUE_OFFSETS] = n1 * 4, [C_VALUE_DATA] = data_est,
        [C_VALUE_VALID] = rows_est, [C_HEADER_OFFSETS] = n1 * 4,
        [C_HKEY_OFFSETS] = 256 * 4, [C_HKEY_DATA] = 4096,
        [C_HVALUE_OFFSETS] = 256 * 4, [C_HVALUE_DATA] = 4096, [C_HVALUE_VALID] = 256,
    };
    if (!(opts & OPT_DECOMPRESS_ONLY))
        size_hint_apply(init, rows_est, data_est);
    for (int i = 0; i < C_NCOLS; i++) {
        if (column_init(&st.cols[i], init[i]) < 0)
            goto done;
        st.ncols_ready = i + 1;
    }

    Py_ssize_t bad_batch = 0, bad_offset = 0, ndone = 0;
    size_t held = 0, decoded = 0;
    size_t packed_in[8] = {0}, unpacked_out[8] = {0};    /* per codec, for size_hint_ratio */
    Violation v = V_OK;
    Out o;
    /* lz4 block checksums of the next batches, verified together (kf_lz4_check_group) */
    unsigned char lz4_ok[KF_LZ4_GROUP];
    Py_ssize_t lz4_from = 0, lz4_to = 0;
    const int lz4_in_c = (kf_codecs_available() >> KF_CODEC_LZ4) & 1;
    Py_BEGIN_ALLOW_THREADS
    out_start(&st, &o);
    for (Py_ssize_t b = 0; b < nb; b++) {
        if (b > 0 && held >= (size_t)max_held)
            break;                                /* the rest in the next call */
        const int64_t *m = meta + b * CM_NCOLS;
        const unsigned char *start = base + m[CM_START];
        const unsigned char *end = base + m[CM_END];
        int codec = (int)((m[META_FLAGS] >> FLAG_CODEC_SHIFT) & 7);
        bad_batch = b;
        bad_offset = 0;
        RunningCrc crc = {0, 0, start};
        if (m[META_FLAGS] & FLAG_CHECK_CRC) {
            crc.on = 1;
            start += CRC_REGION_HEADER;
        }
        size_t len = (size_t)(end - start);
        int batch_opts = opts;
        if (codec != 0) {
            size_t dlen = 0;
            int checked = 0;
#ifdef KF_HAVE_LZ4
            if (codec == KF_CODEC_LZ4 && lz4_in_c) {
                if (b >= lz4_to) {
                    lz4_from = b;
                    lz4_to = b + lz4_group(meta, nb, base, b, lz4_ok);
                }
                checked = lz4_ok[b - lz4_from];
            }
#endif
            /* Straight into the value column's room when it has room for what the codec's ratio
             * expects (a quarter more): the record loop then moves each value down in place
             * (OPT_IN_PLACE).  The column's lines are written once, by the codec, whose stores
             * overlap its own work, instead of by a copy out of the decompression buffer that
             * waits on memory for every line (medium lz4: -20 ns a record, measured).  A codec
             * needing more room than that answers KF_NO_ROOM: decompressed again, elsewhere. */
            Column *vc = &st.cols[C_VALUE_DATA];
            size_t room = vc->capacity - o.val_pos;          /* reserve_batch kept >= COPY_SLACK */
            size_t expect = expected_unpacked(ratio[codec], len, (size_t)max_output);
            int rc = KF_NO_ROOM, in_place = 0;
            if (!(opts & (OPT_NO_COPY | OPT_DECOMPRESS_ONLY)) && room > COPY_SLACK &&
                expect + expect / 4 < room - COPY_SLACK) {
                KfScratch column = {.data = (unsigned char *)vc->data + o.val_pos, .capacity = room - COPY_SLACK,
                                    .zstd = scratch.zstd, .zlib = scratch.zlib, .deflate = scratch.deflate,
                                    .borrowed = 1};
                rc = kf_decompress(&column, codec, start, len, (size_t)max_output, &dlen, checked);
                scratch.zstd = column.zstd;             /* contexts made on first use: kept */
                scratch.zlib = column.zlib;
                scratch.deflate = column.deflate;
                in_place = rc == KF_OK;
            }
            if (rc == KF_NO_ROOM)
                rc = kf_decompress(&scratch, codec, start, len, (size_t)max_output, &dlen, checked);
            if (rc != KF_OK) {
                v = rc == KF_NO_MEMORY ? V_NO_MEMORY : V_DECOMPRESS;
                break;
            }
            packed_in[codec] += len;
            unpacked_out[codec] += dlen;
            start = in_place ? (const unsigned char *)vc->data + o.val_pos : scratch.data;
            end = start + dlen;
            batch_opts = in_place ? opts | OPT_IN_PLACE : opts;
            len = dlen;
            held += dlen;
            if ((uint64_t)m[META_COUNT] > len / MIN_V2_RECORD_SIZE) {
                v = V_COUNT_TOO_LARGE;
                break;
            }
        }
        if (opts & OPT_DECOMPRESS_ONLY) {
            ndone = b + 1;
            continue;
        }
        /* int32 Arrow offsets: a batch that could pass them starts the next call */
        if (out_would_overflow(&o, len)) {
            if (b == 0)
                v = V_TOO_LARGE;
            break;
        }
        if (reserve_batch(&st, &o, (size_t)m[META_COUNT], len) < 0) {
            v = V_NO_MEMORY;
            break;
        }
        if (batch_opts & OPT_IN_PLACE) {       /* (the value column had the room: not moved) */
            start = (const unsigned char *)st.cols[C_VALUE_DATA].data + o.val_pos;
            end = start + len;
        }
        v = decode_records(&st, &o, start, end, m, batch_opts, &bad_offset, crc.on ? &crc : NULL);
        if (v != V_OK)
            break;                    /* with a bad CRC too: the general path decides which */
        if (crc.on && kf_crc32c(crc.value, crc.from, (size_t)(end - crc.from)) != (uint32_t)m[META_CRC]) {
            v = V_CRC;
            break;
        }
        decoded += len;
        ndone = b + 1;
    }
    out_finish(&st, &o);
    Py_END_ALLOW_THREADS
    if (v == V_OK && !(opts & OPT_DECOMPRESS_ONLY))
        size_hint_learn(&o, decoded);
    if (v == V_OK)
        for (int c = 1; c < 8; c++)
            size_hint_ratio(c, packed_in[c], unpacked_out[c]);
    if (v == V_NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (v != V_OK) {
        raise_violation(bad_batch, v, bad_offset);
        goto done;
    }
    PyObject *cols = PyTuple_New(C_NCOLS);
    if (!cols)
        goto done;
    for (int i = 0; i < C_NCOLS; i++) {
        PyObject *b = column_finish(&st.cols[i]);
        if (!b) {
            Py_DECREF(cols);
            goto done;
        }
        PyTuple_SET_ITEM(cols, i, b);
    }
    result = Py_BuildValue("(Nnn)", cols, ndone, (Py_ssize_t)held);
done:
    scratch_put(&scratch);
    decode_state_free(&st);
    PyBuffer_Release(&buf_view);
    PyBuffer_Release(&meta_view);
    return result;
}


/* ------------------------------------------------------------------ crc32c */

PyDoc_STRVAR(crc32c_doc,
"crc32c(data, value=0) -> int\n\nCRC-32C (Castagnoli) of data, continuing from value.");

static PyObject *fd_crc32c(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &value))
        return NULL;
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
    crc = kf_crc32c((uint32_t)value, view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(crc32c_at_doc,
"crc32c_at(data, value, level) -> int\n\nCRC-32C at implementation level <= level (0 tables, 1 SSE4.2,\n"
"2 PCLMULQDQ, 3 AVX-512 VPCLMULQDQ; clamped to the CPU's CRC_LEVEL): the tests compare every level.");

static PyObject *fd_crc32c_at(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned long value = 0;
    int level;
    if (!PyArg_ParseTuple(args, "y*ki", &view, &value, &level))
        return NULL;
    uint32_t crc = kf_crc32c_at(level, (uint32_t)value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(crc32c_portable_doc,
"crc32c_portable(data, value=0) -> int\n\nCRC-32C with the portable table loop (tests).");

static PyObject *fd_crc32c_portable(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &value))
        return NULL;
    uint32_t crc = kf_crc32c_at(KF_CRC_PORTABLE, (uint32_t)value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(crc32c_copy_doc,
"crc32c_copy(data, value, level, dst_offset=0) -> (int, bytes)\n\nThe fused copy of large keys and\n"
"values: the CRC-32C of data continuing from value, and the copy made in the same pass into a\n"
"buffer at dst_offset (0-63: the alignment of the destination) (tests).");

static PyObject *fd_crc32c_copy(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned long value = 0;
    int level;
    Py_ssize_t dst_offset = 0;
    if (!PyArg_ParseTuple(args, "y*ki|n", &view, &value, &level, &dst_offset))
        return NULL;
    PyObject *result = NULL;
    if (dst_offset < 0 || dst_offset > 63) {
        PyErr_SetString(PyExc_ValueError, "dst_offset must be 0-63");
        goto done;
    }
    unsigned char *raw = PyMem_Malloc((size_t)view.len + 128);
    if (!raw) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *dst = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63) + dst_offset;
    uint32_t crc = kf_crc32c_copy_at(level, (uint32_t)value, dst, view.buf, (size_t)view.len);
    result = Py_BuildValue("(ky#)", (unsigned long)crc, (const char *)dst, view.len);
    PyMem_Free(raw);
done:
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ module */

extern PyMethodDef kf_arrow_methods[];     /* _fastarrow.c */
extern PyMethodDef kf_dir_methods[];       /* _fastdir.c */
extern PyMethodDef kf_scan_methods[];      /* _fastscan.c */
extern PyMethodDef kf_xxh_methods[];       /* _fastxxh.c */

static PyMethodDef fd_methods[] = {
    {"decode_v2", fd_decode_v2, METH_VARARGS, decode_v2_doc},
    {"decode_v2_chunk", fd_decode_v2_chunk, METH_VARARGS, decode_v2_chunk_doc},
    {"crc32c", fd_crc32c, METH_VARARGS, crc32c_doc},
    {"crc32c_portable", fd_crc32c_portable, METH_VARARGS, crc32c_portable_doc},
    {"crc32c_at", fd_crc32c_at, METH_VARARGS, crc32c_at_doc},
    {"crc32c_copy", fd_crc32c_copy, METH_VARARGS, crc32c_copy_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fd_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_format.records._fastdecode",
    .m_doc = "Compiled columnar decode loop of kafka_format.records.fast (see fast.py).",
    .m_size = -1,
    .m_methods = fd_methods,
};

PyMODINIT_FUNC PyInit__fastdecode(void)
{
    kf_crc_init();
    kf_xxh_init();
    kf_codecs_init(getenv("KAFKA_FORMAT_C_CODECS"));
    if (PyType_Ready(&BufferType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&fd_module);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, kf_arrow_methods) < 0 || PyModule_AddFunctions(m, kf_dir_methods) < 0 ||
        PyModule_AddFunctions(m, kf_scan_methods) < 0 || PyModule_AddFunctions(m, kf_xxh_methods) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    FormatViolation = PyErr_NewExceptionWithDoc(
        "kafka_format.records._fastdecode.FormatViolation",
        "A batch broke a format rule: args are (batch_index, code, payload_offset).",
        PyExc_ValueError, NULL);
    if (!FormatViolation || PyModule_AddObjectRef(m, "FormatViolation", FormatViolation) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *libraries = kf_codec_libraries();
    int added = libraries ? PyModule_AddObjectRef(m, "CODEC_LIBRARIES", libraries) : -1;
    Py_XDECREF(libraries);
    if (added < 0 || PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddStringConstant(m, "CRC32C_IMPLEMENTATION", kf_crc_implementation()) < 0 ||
        PyModule_AddIntConstant(m, "CRC_LEVEL", kf_crc_level()) < 0 ||
        PyModule_AddIntConstant(m, "XXH_LEVEL", kf_xxh_level()) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_END", SCAN_END) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_ZERO_TAIL", SCAN_ZERO_TAIL) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_CORRUPT_SIZE", SCAN_CORRUPT_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "CRC_NOT_CHECKED", CRC_NOT_CHECKED) < 0 ||
        PyModule_AddIntConstant(m, "META_COLUMNS", META_NCOLS) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_LOG_APPEND_TIME", FLAG_LOG_APPEND_TIME) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_CHECK_CRC", FLAG_CHECK_CRC) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_VERIFY_DEFER", SCAN_VERIFY_DEFER) < 0 ||
        PyModule_AddIntConstant(m, "CHUNK_META_COLUMNS", CM_NCOLS) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_CODEC_SHIFT", FLAG_CODEC_SHIFT) < 0 ||
        PyModule_AddIntConstant(m, "C_CODECS", (int)kf_codecs_available()) < 0 ||
        PyModule_AddIntConstant(m, "OPT_NO_COPY", OPT_NO_COPY) < 0 ||
        PyModule_AddIntConstant(m, "OPT_DECOMPRESS_ONLY", OPT_DECOMPRESS_ONLY) < 0 ||
        PyModule_AddIntConstant(m, "OPT_SKIP_HEADERS", OPT_SKIP_HEADERS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
