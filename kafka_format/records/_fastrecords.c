/*
 * kafka_format.records._fastdecode: the record loop (DefaultRecord.readFrom over many batches)
 * straight into column buffers; see the layout of a v2 record in _fastdecode.c.
 */

#include "_fastrecords.h"
#include "_fastcrc.h"

/* ------------------------------------------------------------------ varints */

/* The record loop's helpers are inlined whatever the compiler's size budget says (one loop
 * body per set of options makes the function large). */
#define HOT static inline __attribute__((always_inline))

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

HOT Violation read_varint(const unsigned char **pp, const unsigned char *end, int32_t *out)
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
HOT Violation read_varlong(const unsigned char **pp, const unsigned char *end, int64_t *out)
{
    const unsigned char *p = *pp;
    if (__builtin_expect(end - p >= 2, 1)) {       /* one- and two-byte fast paths (timestamp */
        uint64_t b0 = p[0];                         /* deltas of a batch: mostly under 8 s) */
        if (!(b0 & 0x80)) {
            *out = (int64_t)((b0 >> 1) ^ (0ull - (b0 & 1)));
            *pp = p + 1;
            return V_OK;
        }
        uint64_t b1 = p[1];
        if (!(b1 & 0x80)) {
            uint64_t raw = (b0 & 0x7f) | (b1 << 7);
            *out = (int64_t)((raw >> 1) ^ (0ull - (raw & 1)));
            *pp = p + 2;
            return V_OK;
        }
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


/* ------------------------------------------------------------------ records */

void decode_state_free(DecodeState *st)
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
HOT void copy_field(char *dst, const unsigned char *src, size_t n, const unsigned char *src_end)
{
    if (n <= 32 && src_end - src >= 32) {
        memcpy(dst, src, 16);
        memcpy(dst + 16, src + 16, 16);
    } else {
        memcpy(dst, src, n);
    }
}


/* Room for `rows` more records after o->n and `data_bytes` more value bytes (keys are usually
 * short: their column grows as needed, so that its block stays small). */
int reserve_batch(DecodeState *st, const Out *o, size_t rows, size_t data_bytes)
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

/* Entries of `width` bytes a column holds beyond its first `reserved` ones (or bytes). */
static inline size_t entries_room(const Column *c, size_t width, size_t reserved)
{
    size_t k = c->capacity / width;
    return k > reserved ? k - reserved : 0;
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



/* Copy a key or value of n bytes at src to dst; with a running CRC, large fields are copied
 * and checksummed in one pass (the bytes before them first). */
HOT void copy_value(char *dst, const unsigned char *src, size_t n, const unsigned char *src_end,
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
HOT void touch_lines(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        __builtin_prefetch(p + i);
}

/* Strict UTF-8 of a header key of n bytes at s (readable up to `readable`): the all-ASCII key of
 * at most 16 bytes (nearly every key) is checked with one or two 8-byte loads. */
HOT int header_key_valid(const unsigned char *s, size_t n, const unsigned char *readable)
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
static inline __attribute__((always_inline)) Violation
decode_records_body(DecodeState *st, Out *o, const unsigned char *start, const unsigned char *end,
                    const int64_t *m, const int opts, Py_ssize_t *bad_offset, RunningCrc *crc)
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
    /* header columns and how many headers / bytes fit them without a reserve_headers call */
    int32_t *hko = NULL, *hvo = NULL;
    uint8_t *hvv = NULL;
    char *hkd = NULL, *hvd = NULL;
    size_t h_room = 0, hkey_room = 0, hval_room = 0;

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
                if (opts & OPT_IN_PLACE)         /* down over consumed bytes (see decode_records) */
                    memmove(val_data + val_pos, p, (size_t)val_len);
                else
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
            if (h + (size_t)hcount > h_room || hkey_pos + (size_t)length > hkey_room ||
                hval_pos + (size_t)length > hval_room) {
                Out at = {n, h, key_pos, val_pos, hkey_pos, hval_pos};
                if (reserve_headers(st, &at, (size_t)hcount, (size_t)length) < 0)
                    return V_NO_MEMORY;
                hko = (int32_t *)cols[C_HKEY_OFFSETS].data;
                hvo = (int32_t *)cols[C_HVALUE_OFFSETS].data;
                hvv = (uint8_t *)cols[C_HVALUE_VALID].data;
                hkd = cols[C_HKEY_DATA].data;
                hvd = cols[C_HVALUE_DATA].data;
                h_room = entries_room(&cols[C_HKEY_OFFSETS], 4, 1);
                if (entries_room(&cols[C_HVALUE_OFFSETS], 4, 1) < h_room)
                    h_room = entries_room(&cols[C_HVALUE_OFFSETS], 4, 1);
                if (entries_room(&cols[C_HVALUE_VALID], 1, 0) < h_room)
                    h_room = entries_room(&cols[C_HVALUE_VALID], 1, 0);
                hkey_room = entries_room(&cols[C_HKEY_DATA], 1, COPY_SLACK);
                hval_room = entries_room(&cols[C_HVALUE_DATA], 1, COPY_SLACK);
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

/* The loop compiled three times: for records decompressed into the value column (OPT_IN_PLACE
 * alone, no running CRC: constants, no per-record tests of them), for records decompressed
 * elsewhere (no options), and for everything else.  A copy for uncompressed batches with their
 * running CRC measured slower than the general one (medium records 54-61 -> 67-70 ns).
 *
 * OPT_IN_PLACE: [start, end) is the value column from o->val_pos on.  Each value moves down to
 * val_pos with memmove (exactly its bytes: no wider moves, which would write over fields not
 * read yet), over bytes already consumed: everything below the value's source (the record's
 * framing and key, copied out before it, and earlier records), never past its own end. */
Violation decode_records(DecodeState *st, Out *o, const unsigned char *start, const unsigned char *end,
                         const int64_t *m, int opts, Py_ssize_t *bad_offset, RunningCrc *crc)
{
    if (opts == OPT_IN_PLACE && !crc)
        return decode_records_body(st, o, start, end, m, OPT_IN_PLACE, bad_offset, NULL);
    if (opts == 0 && !crc)
        return decode_records_body(st, o, start, end, m, 0, bad_offset, NULL);
    return decode_records_body(st, o, start, end, m, opts, bad_offset, crc);
}

/* Start the output: the leading zeros of the offset columns (every column has room for them). */
void out_start(DecodeState *st, Out *o)
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
void out_finish(DecodeState *st, const Out *o)
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




/* ------------------------------------------------------------------ size hints */

/* Key, value and header columns are sized from the previous call's shares of its payload
 * bytes: a chunk decoded after another of the same topic rarely grows a column (a grow copies
 * the column; header columns started at 256 entries grew ~8 times per 16 MiB chunk of records
 * with headers), and a value column is not sized by the payload bound that records with small
 * values fill a fraction of (a block that much larger than its data is shrunk: fresh pages
 * the next time).  Shares are in 1/65536 of a payload byte and come from what a call decoded,
 * so a column starts at most 1/8 above what records like the previous call's fill by growing
 * (keys and header fields: at most the payload; header entries: one per >= 2 payload bytes), and
 * memory that a different chunk leaves unused is never touched.  A call of records without
 * headers resets them. */
#define HINT_ONE 65536u
static struct {
    uint32_t headers, key_bytes, value_bytes, hkey_bytes, hval_bytes;  /* per payload byte, x HINT_ONE */
    int known;                                             /* a call has set them */
} size_hint;

static size_t hint_size(uint32_t share, size_t payload, size_t floor)
{
    size_t want = (size_t)((uint64_t)share * payload / HINT_ONE);
    want += want / 8;                   /* some room: the next chunk is rarely the same */
    return want > floor ? want : floor;
}

void size_hint_apply(size_t init[C_NCOLS], size_t rows, size_t payload)
{
    size_t headers = hint_size(size_hint.headers, payload, 256);
    if (rows && headers > 4 * rows)
        headers = 4 * rows;             /* the records of a call rarely hold more (they grow) */
    /* a known share replaces the caller's guess (a floor above it wasted a block's half) */
    if (size_hint.known) {
        init[C_KEY_DATA] = hint_size(size_hint.key_bytes, payload, BLOCK_CACHE_MIN);
        /* values: at most the payload bound the caller gives (no grow), usually less (record
         * framing, keys, headers: a block sized by the bound was mostly unused for small values) */
        size_t values = hint_size(size_hint.value_bytes, payload, BLOCK_CACHE_MIN);
        if (values < init[C_VALUE_DATA])
            init[C_VALUE_DATA] = values;
    }
    init[C_HKEY_OFFSETS] = (headers + 1) * 4;
    init[C_HVALUE_OFFSETS] = (headers + 1) * 4;
    init[C_HVALUE_VALID] = headers;
    init[C_HKEY_DATA] = hint_size(size_hint.hkey_bytes, payload, 4096);
    init[C_HVALUE_DATA] = hint_size(size_hint.hval_bytes, payload, 4096);
}

static uint32_t share_of(size_t part, size_t payload)
{
    uint64_t s = (uint64_t)part * HINT_ONE / payload;
    return s > HINT_ONE ? HINT_ONE : (uint32_t)s;
}

void size_hint_learn(const Out *o, size_t payload)
{
    if (payload < ((size_t)1 << 20))
        return;                         /* a small call says little about the next chunk */
    size_hint.known = 1;
    size_hint.headers = share_of(o->h, payload);
    size_hint.key_bytes = share_of(o->key_pos, payload);
    size_hint.value_bytes = share_of(o->val_pos, payload);
    size_hint.hkey_bytes = share_of(o->hkey_pos, payload);
    size_hint.hval_bytes = share_of(o->hval_pos, payload);
}


/* Decompressed bytes per compressed byte of each codec in the last call that decompressed at
 * least 1 MiB with it (x RATIO_ONE; 0: none yet).  With no ratio yet a payload is expected to
 * decompress to 4x its size. */
#define RATIO_MAX 4096u
static uint32_t unpack_ratio[8];

void size_hint_ratios(uint32_t ratio[8])
{
    for (int c = 0; c < 8; c++)
        ratio[c] = unpack_ratio[c] ? unpack_ratio[c] : 4 * RATIO_ONE;
}

void size_hint_ratio(int codec, size_t packed, size_t unpacked)
{
    if (unpacked < ((size_t)1 << 20) || packed == 0)
        return;
    uint64_t r = (uint64_t)unpacked * RATIO_ONE / packed;
    if (r > RATIO_MAX * RATIO_ONE)
        r = RATIO_MAX * RATIO_ONE;      /* (the expectation is capped anyway) */
    unpack_ratio[codec & 7] = (uint32_t)(r ? r : 1);
}
