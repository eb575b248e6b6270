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

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_fastbuf.h"
#include "_fastcodecs.h"
#include "_fastcrc.h"

/* ------------------------------------------------------------------ constants */

/* Framing (Records.java / DefaultRecordBatch.java). */
#define LOG_OVERHEAD 12             /* offset int64 + size int32 */
#define HEADER_SIZE_UP_TO_MAGIC 17  /* Records.HEADER_SIZE_UP_TO_MAGIC */
#define MAGIC_OFFSET 16
#define MIN_ENTRY_SIZE 14           /* LegacyRecord.RECORD_OVERHEAD_V0 */
#define V2_CRC_OFFSET 17
#define V2_ATTRIBUTES_OFFSET 21
#define V2_HEADER_SIZE 61           /* DefaultRecordBatch.RECORD_BATCH_OVERHEAD */
#define MIN_V2_RECORD_SIZE 7        /* smallest encodable record: seven one-byte fields */

#define SCAN_INITIAL_ENTRIES 512

/* crc_valid values written by scan. */
#define CRC_NOT_CHECKED 2

/* scan verify_crc modes. */
#define SCAN_VERIFY_DEFER 2         /* leave non-empty uncompressed v2 batches to decode_v2 */
#define V2_COUNT_OFFSET 57
#define V2_CODEC_MASK 7

/* scan status. */
#define SCAN_END 0                  /* stopped: <= 17 bytes left or partial trailing entry */
#define SCAN_ZERO_TAIL 1            /* stopped: size < 14 and every remaining byte is zero */
#define SCAN_CORRUPT_SIZE 2         /* stopped: size < 14 with non-zero bytes */

/* decode_v2 meta columns (int64 each, one row per batch). */
enum {
    META_ROW, META_BASE_OFFSET, META_BASE_TIMESTAMP, META_MAX_TIMESTAMP,
    META_BASE_SEQUENCE, META_COUNT, META_FLAGS, META_CRC, META_NCOLS
};
#define FLAG_LOG_APPEND_TIME 1
/* The payload is the CRC region (attributes..end, uncompressed batch): verify it against
 * META_CRC, then decode the records after the rest of the header (deferred CRC). */
#define FLAG_CHECK_CRC 2
#define CRC_REGION_HEADER (V2_HEADER_SIZE - V2_ATTRIBUTES_OFFSET)
#define NO_SEQUENCE (-1)

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* ------------------------------------------------------------------ errors */

static PyObject *FormatViolation;

/* Violation codes: the kind of rule a batch broke (fast.py re-derives the exact
 * message from the reference decoder). */
typedef enum {
    V_OK = 0,
    V_NEGATIVE_COUNT,          /* recordsCount < 0 */
    V_COUNT_TOO_LARGE,         /* recordsCount > payload_len / 7: cannot be backed by bytes */
    V_TRUNCATED,               /* a field runs past the payload */
    V_VARINT_TOO_LONG,         /* varint > 5 bytes / varlong > 10 bytes */
    V_RECORD_LENGTH,           /* record length does not match the bytes consumed */
    V_HEADER_COUNT,            /* header count < 0 or > remaining bytes */
    V_HEADER_KEY_LENGTH,       /* header key length < 0 */
    V_HEADER_KEY_UTF8,         /* header key is not valid UTF-8 */
    V_TRAILING_BYTES,          /* bytes remain after recordsCount records */
    V_CRC,                     /* deferred CRC-32C mismatch (FLAG_CHECK_CRC) */
    V_DECOMPRESS,              /* not decompressed in C (corrupt, unusual, over the cap, no codec) */
    V_TOO_LARGE,               /* one batch past the int32 offsets of one call */
    V_NO_MEMORY,               /* not a violation: allocation failed */
} Violation;

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

/* ------------------------------------------------------------------ varints */

/* ByteUtils.readVarint: <= 5 bytes, bits past 32 of the fifth byte are dropped. */
static Violation read_varint_slow(const unsigned char **pp, const unsigned char *end, int32_t *out)
{
    const unsigned char *p = *pp;
    uint32_t raw = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (p >= end)
            return V_TRUNCATED;
        uint32_t b = *p++;
        raw |= (b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int32_t)((raw >> 1) ^ (0u - (raw & 1)));
            *pp = p;
            return V_OK;
        }
    }
    return V_VARINT_TOO_LONG;
}

static inline Violation read_varint(const unsigned char **pp, const unsigned char *end, int32_t *out)
{
    const unsigned char *p = *pp;
    if (__builtin_expect(end - p >= 2, 1)) {       /* one- and two-byte fast paths */
        uint32_t b0 = p[0];
        if (!(b0 & 0x80)) {
            *out = (int32_t)((b0 >> 1) ^ (0u - (b0 & 1)));
            *pp = p + 1;
            return V_OK;
        }
        uint32_t b1 = p[1];
        if (!(b1 & 0x80)) {
            uint32_t raw = (b0 & 0x7f) | (b1 << 7);
            *out = (int32_t)((raw >> 1) ^ (0u - (raw & 1)));
            *pp = p + 2;
            return V_OK;
        }
    }
    return read_varint_slow(pp, end, out);
}

/* ByteUtils.readVarlong: <= 10 bytes, bits past 64 are dropped. */
static inline Violation read_varlong(const unsigned char **pp, const unsigned char *end, int64_t *out)
{
    const unsigned char *p = *pp;
    if (p < end && !(*p & 0x80)) {
        uint64_t raw = *p;
        *out = (int64_t)((raw >> 1) ^ (0u - (raw & 1)));
        *pp = p + 1;
        return V_OK;
    }
    uint64_t raw = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return V_TRUNCATED;
        uint64_t b = *p++;
        raw |= (b & 0x7f) << shift;    /* shift 63: only the low bit survives, as in Java */
        if (!(b & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (0ull - (raw & 1)));
            *pp = p;
            return V_OK;
        }
    }
    return V_VARINT_TOO_LONG;
}

/* DefaultRecordBatch.incrementSequence, with Java int arithmetic. */
static inline int32_t increment_sequence(int32_t base, int32_t increment)
{
    int32_t room = (int32_t)((uint32_t)INT32_MAX - (uint32_t)increment);
    if (base > room)
        return (int32_t)((uint32_t)increment - ((uint32_t)INT32_MAX - (uint32_t)base) - 1u);
    return (int32_t)((uint32_t)base + (uint32_t)increment);
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII run, 8 bytes at a time */
        while (i + 8 <= n && !(load_le64(s + i) & 0x8080808080808080ull))
            i += 8;
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1f; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0f; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            unsigned char cc = s[i + k];
            if ((cc & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (cc & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += len;
    }
    return 1;
}

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
        if (verify_crc && buf[pos + MAGIC_OFFSET] == 2 && entry_len >= V2_HEADER_SIZE &&
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

/* ------------------------------------------------------------------ decode_v2 */

enum {
    C_BATCH_ROW, C_OFFSET, C_TIMESTAMP, C_TIMESTAMP_TYPE, C_SEQUENCE,
    C_KEY_OFFSETS, C_KEY_DATA, C_KEY_VALID,
    C_VALUE_OFFSETS, C_VALUE_DATA, C_VALUE_VALID,
    C_HEADER_OFFSETS,
    C_HKEY_OFFSETS, C_HKEY_DATA, C_HVALUE_OFFSETS, C_HVALUE_DATA, C_HVALUE_VALID,
    C_NCOLS
};

typedef struct {
    Py_buffer *views;
    Py_ssize_t nviews;
    Column cols[C_NCOLS];
    int ncols_ready;
} DecodeState;

static void decode_state_free(DecodeState *st)
{
    for (int i = 0; i < st->ncols_ready; i++)
        column_free(&st->cols[i]);
    if (st->views) {
        for (Py_ssize_t i = 0; i < st->nviews; i++)
            PyBuffer_Release(&st->views[i]);
        PyMem_Free(st->views);
    }
}

/* Copy n bytes; short fields (<= 32 bytes, the common key and small value) are copied as two
 * 16-byte moves instead of a libc call when 32 bytes are readable at src (src_end) and the
 * destination has COPY_SLACK bytes of room past its data (reserve_batch, reserve_headers). */
#define COPY_SLACK 32
static inline void copy_field(char *dst, const unsigned char *src, size_t n, const unsigned char *src_end)
{
    if (n <= 32 && src_end - src >= 32) {
        memcpy(dst, src, 16);
        memcpy(dst + 16, src + 16, 16);
    } else {
        memcpy(dst, src, n);
    }
}

/* Output positions while the loop runs. */
typedef struct {
    size_t n;                /* records written */
    size_t h;                /* headers written */
    size_t key_pos, val_pos, hkey_pos, hval_pos;
} Out;

/* Room for `rows` more records after o->n and `data_bytes` more value bytes (keys are usually
 * short: their column grows as needed, so that its block stays small). */
static int reserve_batch(DecodeState *st, const Out *o, size_t rows, size_t data_bytes)
{
    Column *c = st->cols;
    size_t r = o->n + rows, r1 = r + 1;
    if (column_ensure(&c[C_BATCH_ROW], r * 4) || column_ensure(&c[C_OFFSET], r * 8) ||
        column_ensure(&c[C_TIMESTAMP], r * 8) || column_ensure(&c[C_TIMESTAMP_TYPE], r) ||
        column_ensure(&c[C_SEQUENCE], r * 4) || column_ensure(&c[C_KEY_OFFSETS], r1 * 4) ||
        column_ensure(&c[C_KEY_VALID], r) || column_ensure(&c[C_VALUE_OFFSETS], r1 * 4) ||
        column_ensure(&c[C_VALUE_VALID], r) || column_ensure(&c[C_HEADER_OFFSETS], r1 * 4) ||
        column_ensure(&c[C_VALUE_DATA], o->val_pos + data_bytes + COPY_SLACK))
        return -1;
    return 0;
}

/* Room for `count` more headers taking at most `body` bytes of keys and of values (the bytes of
 * their record). */
static int reserve_headers(DecodeState *st, const Out *o, size_t count, size_t body)
{
    Column *c = st->cols;
    size_t h = o->h + count;
    if (column_ensure(&c[C_HKEY_OFFSETS], (h + 1) * 4) || column_ensure(&c[C_HVALUE_OFFSETS], (h + 1) * 4) ||
        column_ensure(&c[C_HVALUE_VALID], h) ||
        column_ensure(&c[C_HKEY_DATA], o->hkey_pos + body + COPY_SLACK) ||
        column_ensure(&c[C_HVALUE_DATA], o->hval_pos + body + COPY_SLACK))
        return -1;
    return 0;
}

/* Decoding options (benchmarks only: phases switched off to see where time goes). */
#define OPT_NO_COPY 1            /* keys and values not copied (lengths still checked; their bytes
                                    are prefetched, so the loop still streams through memory) */
#define OPT_DECOMPRESS_ONLY 2    /* decompress (and CRC), decode nothing: the codec floor */
#define OPT_SKIP_HEADERS 4       /* headers not asked for: read (every length still checked) but
                                    neither copied nor their keys' UTF-8 looked at; none output */

/* CRC-32C computed while the records are decoded (the fused path): the bytes are checksummed
 * in pieces of CRC_PIECE right after the record loop has read them, while they are in cache,
 * so a batch larger than the cache is read from memory once, not twice.  A key or value of at
 * least CRC_FUSE_MIN bytes is checksummed by the copy itself (kf_crc32c_copy: each block is
 * loaded once, stored and folded). */
#define CRC_PIECE 8192
#define CRC_FUSE_MIN 1024
typedef struct {
    int on;
    uint32_t value;                  /* Kafka-style running CRC of [region start, from) */
    const unsigned char *from;
} RunningCrc;

/* Copy a key or value of n bytes at src to dst; with a running CRC, large fields are copied
 * and checksummed in one pass (the bytes before them first). */
static inline void copy_value(char *dst, const unsigned char *src, size_t n, const unsigned char *src_end,
                              RunningCrc *crc)
{
    if (crc && n >= CRC_FUSE_MIN) {
        crc->value = kf_crc32c(crc->value, crc->from, (size_t)(src - crc->from));
        crc->value = kf_crc32c_copy(crc->value, (unsigned char *)dst, src, n);
        crc->from = src + n;
    } else {
        copy_field(dst, src, n, src_end);
    }
}

/* Bring the lines of a field the loop skips into the cache (OPT_NO_COPY: without it a loop that
 * reads only the records' headers would wait on memory for each record). */
static inline void touch_lines(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        __builtin_prefetch(p + i);
}

/* Strict UTF-8 of a header key of n bytes at s (readable up to `readable`): the all-ASCII key of
 * at most 16 bytes (nearly every key) is checked with one or two 8-byte loads. */
static inline int header_key_valid(const unsigned char *s, size_t n, const unsigned char *readable)
{
    const uint64_t high = 0x8080808080808080ull;
    if (n <= 8 && readable - s >= 8) {
        uint64_t keep = n == 8 ? ~0ull : ((uint64_t)1 << (8 * n)) - 1;
        if (!(load_le64(s) & keep & high))
            return 1;
    } else if (n > 8 && n <= 16) {
        if (!((load_le64(s) | load_le64(s + n - 8)) & high))
            return 1;
    }
    return utf8_valid(s, n);
}

/* Decode the `count` records of one batch in [start, end) into the columns at o.  The columns
 * have room for the records, their keys and values (reserve_batch).  Returns V_OK or the
 * violation with *bad_offset (relative to start).  Runs without the GIL.
 *
 * Keys, values and headers are copied only from within the record's declared length (rec_end);
 * a record whose fields run past it, or that ends before it, is a violation (the reference
 * decoder then reports which rule it broke: DefaultRecord.readFrom).  Varints are read within
 * the payload (their own violations keep their names). */
static Violation decode_records(DecodeState *st, Out *o, const unsigned char *start,
                                const unsigned char *end, const int64_t *m, int opts,
                                Py_ssize_t *bad_offset, RunningCrc *crc)
{
    Column *cols = st->cols;
    int64_t *offset_out = (int64_t *)cols[C_OFFSET].data;
    int64_t *ts_out = (int64_t *)cols[C_TIMESTAMP].data;
    int32_t *seq_out = (int32_t *)cols[C_SEQUENCE].data;
    int32_t *key_off = (int32_t *)cols[C_KEY_OFFSETS].data;
    uint8_t *key_valid = (uint8_t *)cols[C_KEY_VALID].data;
    int32_t *val_off = (int32_t *)cols[C_VALUE_OFFSETS].data;
    uint8_t *val_valid = (uint8_t *)cols[C_VALUE_VALID].data;
    int32_t *hdr_off = (int32_t *)cols[C_HEADER_OFFSETS].data;
    Column *key_col = &cols[C_KEY_DATA];
    char *key_data = key_col->data;
    char *val_data = cols[C_VALUE_DATA].data;
    const int copy = !(opts & OPT_NO_COPY);

    const size_t n0 = o->n;
    size_t n = o->n, h = o->h, key_pos = o->key_pos, val_pos = o->val_pos;
    size_t hkey_pos = o->hkey_pos, hval_pos = o->hval_pos;
    const unsigned char *p = start;
    int64_t base_offset = m[META_BASE_OFFSET];
    int64_t base_ts = m[META_BASE_TIMESTAMP];
    int64_t max_ts = m[META_MAX_TIMESTAMP];
    int32_t base_seq = (int32_t)m[META_BASE_SEQUENCE];
    int64_t count = m[META_COUNT];
    int log_append = (m[META_FLAGS] & FLAG_LOG_APPEND_TIME) != 0;
    Violation v = V_OK;

    for (int64_t r = 0; r < count; r++) {
        int32_t length, offset_delta, key_len, val_len, hcount;
        int64_t ts_delta;
        if ((v = read_varint(&p, end, &length)) != V_OK)
            goto fail;
        if (length < 1 || length > end - p) {  /* DefaultRecord.readFrom: remaining < size */
            v = length < 1 ? V_RECORD_LENGTH : V_TRUNCATED;
            goto fail;
        }
        const unsigned char *rec_end = p + length;
        p++;                             /* attributes */
        if ((v = read_varlong(&p, end, &ts_delta)) != V_OK)
            goto fail;
        if ((v = read_varint(&p, end, &offset_delta)) != V_OK)
            goto fail;
        if ((v = read_varint(&p, end, &key_len)) != V_OK)
            goto fail;
        if (key_len >= 0) {
            if (key_len > rec_end - p) {
                v = V_TRUNCATED;
                goto fail;
            }
            if (copy) {
                if (__builtin_expect(key_col->capacity < key_pos + (size_t)key_len + COPY_SLACK, 0)) {
                    if (column_grow(key_col, key_pos + (size_t)key_len + COPY_SLACK) < 0)
                        return V_NO_MEMORY;
                    key_data = key_col->data;
                }
                copy_value(key_data + key_pos, p, (size_t)key_len, end, crc);
                key_pos += (size_t)key_len;
            }
            p += key_len;
            key_valid[n] = 1;
        } else {                         /* any negative length is a null key */
            key_valid[n] = 0;
        }
        if ((v = read_varint(&p, end, &val_len)) != V_OK)
            goto fail;
        if (val_len >= 0) {
            if (val_len > rec_end - p) {
                v = V_TRUNCATED;
                goto fail;
            }
            if (copy) {
                copy_value(val_data + val_pos, p, (size_t)val_len, end, crc);
                val_pos += (size_t)val_len;
            } else {
                touch_lines(p, (size_t)val_len);
            }
            p += val_len;
            val_valid[n] = 1;
        } else {                         /* any negative length is a null value */
            val_valid[n] = 0;
        }
        if ((v = read_varint(&p, end, &hcount)) != V_OK)
            goto fail;
        if (hcount != 0 && (opts & OPT_SKIP_HEADERS)) {
            if (hcount < 0 || hcount > (rec_end - p) / 2) {
                v = V_HEADER_COUNT;
                goto fail;
            }
            for (int32_t k = 0; k < hcount; k++) {
                int32_t hk_len, hv_len;
                if ((v = read_varint(&p, end, &hk_len)) != V_OK)
                    goto fail;
                if (hk_len < 0) {
                    v = V_HEADER_KEY_LENGTH;
                    goto fail;
                }
                if (hk_len > rec_end - p) {
                    v = V_TRUNCATED;
                    goto fail;
                }
                p += hk_len;
                if ((v = read_varint(&p, end, &hv_len)) != V_OK)
                    goto fail;
                if (hv_len > rec_end - p) {
                    v = V_TRUNCATED;
                    goto fail;
                }
                if (hv_len > 0)
                    p += hv_len;
            }
        } else if (hcount != 0) {
            /* each header takes >= 2 bytes of its record, so hcount is backed by the payload */
            if (hcount < 0 || hcount > (rec_end - p) / 2) {
                v = V_HEADER_COUNT;
                goto fail;
            }
            Out at = {n, h, key_pos, val_pos, hkey_pos, hval_pos};
            if (reserve_headers(st, &at, (size_t)hcount, (size_t)length) < 0)
                return V_NO_MEMORY;
            int32_t *hko = (int32_t *)cols[C_HKEY_OFFSETS].data;
            int32_t *hvo = (int32_t *)cols[C_HVALUE_OFFSETS].data;
            uint8_t *hvv = (uint8_t *)cols[C_HVALUE_VALID].data;
            char *hkd = cols[C_HKEY_DATA].data;
            char *hvd = cols[C_HVALUE_DATA].data;
            for (int32_t k = 0; k < hcount; k++) {
                int32_t hk_len, hv_len;
                if ((v = read_varint(&p, end, &hk_len)) != V_OK)
                    goto fail;
                if (hk_len < 0) {
                    v = V_HEADER_KEY_LENGTH;
                    goto fail;
                }
                if (hk_len > rec_end - p) {
                    v = V_TRUNCATED;
                    goto fail;
                }
                if (!header_key_valid(p, (size_t)hk_len, end)) {
                    v = V_HEADER_KEY_UTF8;
                    goto fail;
                }
                copy_field(hkd + hkey_pos, p, (size_t)hk_len, end);
                hkey_pos += (size_t)hk_len;
                p += hk_len;
                if ((v = read_varint(&p, end, &hv_len)) != V_OK)
                    goto fail;
                if (hv_len >= 0) {
                    if (hv_len > rec_end - p) {
                        v = V_TRUNCATED;
                        goto fail;
                    }
                    copy_field(hvd + hval_pos, p, (size_t)hv_len, end);
                    hval_pos += (size_t)hv_len;
                    p += hv_len;
                    hvv[h] = 1;
                } else {                     /* any negative length is a null value */
                    hvv[h] = 0;
                }
                h++;
                hko[h] = (int32_t)hkey_pos;
                hvo[h] = (int32_t)hval_pos;
            }
        }
        if (p != rec_end) {
            v = V_RECORD_LENGTH;
            goto fail;
        }
        offset_out[n] = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)offset_delta);
        ts_out[n] = log_append ? max_ts : (int64_t)((uint64_t)base_ts + (uint64_t)ts_delta);
        /* DefaultRecord.readFrom: baseSequence >= 0 ? incrementSequence(...) : NO_SEQUENCE */
        seq_out[n] = base_seq < 0 ? NO_SEQUENCE : increment_sequence(base_seq, offset_delta);
        n++;
        key_off[n] = (int32_t)key_pos;
        val_off[n] = (int32_t)val_pos;
        hdr_off[n] = (int32_t)h;
        if (crc && p - crc->from >= CRC_PIECE) {
            crc->value = kf_crc32c(crc->value, crc->from, (size_t)(p - crc->from));
            crc->from = p;
        }
    }
    if (p != end) {
        v = V_TRAILING_BYTES;
        goto fail;
    }
    /* the batch's own fields, the same for each of its records */
    int32_t *batch_row = (int32_t *)cols[C_BATCH_ROW].data;
    int32_t row = (int32_t)m[META_ROW];
    for (size_t i = n0; i < n; i++)
        batch_row[i] = row;
    memset(cols[C_TIMESTAMP_TYPE].data + n0, log_append, n - n0);
    o->n = n;
    o->h = h;
    o->key_pos = key_pos;
    o->val_pos = val_pos;
    o->hkey_pos = hkey_pos;
    o->hval_pos = hval_pos;
    return V_OK;
fail:
    *bad_offset = p - start;
    return v;
}

/* Start the output: the leading zeros of the offset columns (every column has room for them). */
static void out_start(DecodeState *st, Out *o)
{
    Column *cols = st->cols;
    memset(o, 0, sizeof *o);
    ((int32_t *)cols[C_KEY_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_VALUE_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_HEADER_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_HKEY_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_HVALUE_OFFSETS].data)[0] = 0;
}

/* Final column sizes. */
static void out_finish(DecodeState *st, const Out *o)
{
    Column *cols = st->cols;
    size_t n = o->n, h = o->h;
    cols[C_BATCH_ROW].size = n * 4;
    cols[C_OFFSET].size = n * 8;
    cols[C_TIMESTAMP].size = n * 8;
    cols[C_TIMESTAMP_TYPE].size = n;
    cols[C_SEQUENCE].size = n * 4;
    cols[C_KEY_OFFSETS].size = (n + 1) * 4;
    cols[C_KEY_DATA].size = o->key_pos;
    cols[C_KEY_VALID].size = n;
    cols[C_VALUE_OFFSETS].size = (n + 1) * 4;
    cols[C_VALUE_DATA].size = o->val_pos;
    cols[C_VALUE_VALID].size = n;
    cols[C_HEADER_OFFSETS].size = (n + 1) * 4;
    cols[C_HKEY_OFFSETS].size = (h + 1) * 4;
    cols[C_HKEY_DATA].size = o->hkey_pos;
    cols[C_HVALUE_OFFSETS].size = (h + 1) * 4;
    cols[C_HVALUE_DATA].size = o->hval_pos;
    cols[C_HVALUE_VALID].size = h;
}

/* int32 Arrow offsets: whether `len` more payload bytes could pass them in some column. */
static inline int out_would_overflow(const Out *o, size_t len)
{
    return o->val_pos + len > (size_t)INT32_MAX || o->key_pos + len > (size_t)INT32_MAX ||
           o->hkey_pos + len > (size_t)INT32_MAX || o->hval_pos + len > (size_t)INT32_MAX;
}

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
    size_t n = st.cols[C_OFFSET].size / 8;
    size_t h = st.cols[C_HVALUE_VALID].size;
    (void)n;
    (void)h;
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
"C codecs do not decode (corrupt, unusual framing, over the cap, codec not compiled in)\n"
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
    size_t rows_est = 0, data_est = 0, compressed_est = 0;
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
            size_t backed = len * 4 / MIN_V2_RECORD_SIZE + 1;  /* a first guess; grows */
            rows_est += (size_t)count < backed ? (size_t)count : backed;
            compressed_est += len * 4;
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
        rows_est += (size_t)count;
        data_est += len;
    }
    /* compressed batches are taken until max_held decompressed bytes: size for that, not for
     * every batch of the chunk (a column larger than the block cache is fresh pages each call) */
    if (compressed_est > (size_t)max_held + (size_t)max_held / 4)
        compressed_est = (size_t)max_held + (size_t)max_held / 4;
    data_est += compressed_est;
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
    for (int i = 0; i < C_NCOLS; i++) {
        if (column_init(&st.cols[i], init[i]) < 0)
            goto done;
        st.ncols_ready = i + 1;
    }

    Py_ssize_t bad_batch = 0, bad_offset = 0, ndone = 0;
    size_t held = 0;
    Violation v = V_OK;
    Py_BEGIN_ALLOW_THREADS
    Out o;
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
        if (codec != 0) {
            size_t dlen = 0;
            int rc = kf_decompress(&scratch, codec, start, len, (size_t)max_output, &dlen);
            if (rc != KF_OK) {
                v = rc == KF_NO_MEMORY ? V_NO_MEMORY : V_DECOMPRESS;
                break;
            }
            start = scratch.data;
            end = start + dlen;
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
        v = decode_records(&st, &o, start, end, m, opts, &bad_offset, crc.on ? &crc : NULL);
        if (v != V_OK)
            break;                    /* with a bad CRC too: the general path decides which */
        if (crc.on && kf_crc32c(crc.value, crc.from, (size_t)(end - crc.from)) != (uint32_t)m[META_CRC]) {
            v = V_CRC;
            break;
        }
        ndone = b + 1;
    }
    out_finish(&st, &o);
    Py_END_ALLOW_THREADS
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

static PyMethodDef fd_methods[] = {
    {"scan", fd_scan, METH_VARARGS, scan_doc},
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
    if (PyType_Ready(&BufferType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&fd_module);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, kf_arrow_methods) < 0 || PyModule_AddFunctions(m, kf_dir_methods) < 0) {
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
    if (PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddStringConstant(m, "CRC32C_IMPLEMENTATION", kf_crc_implementation()) < 0 ||
        PyModule_AddIntConstant(m, "CRC_LEVEL", kf_crc_level()) < 0 ||
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
