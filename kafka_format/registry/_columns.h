/*
 * Arrow column buffers filled by the compiled typed-column decoders (_avrocolumns, _protocolumns,
 * _jsoncolumns), and the one row loop they share.
 *
 * A decoder's output is a set of *columns*, one per Arrow array of the table type, nested ones
 * included (registry/columns.py lays them out): a struct's validity, a fixed-width value buffer,
 * a variable-width one (offsets + bytes) or a list's offsets.  Values are appended in row order;
 * each column keeps its own buffers, so the fields of a record may be appended in any order.
 *
 * kc_decode() is the entry point every decoder module exposes as decode(): it reads an Arrow
 * binary array of Schema Registry wire-format values (magic byte 0, big-endian int32 schema id,
 * payload), picks the program of each row's schema id, asks the format's row function to decode
 * the payload, and rolls a row back when that function is not sure of it (status ST_FAILED: the
 * caller decodes the row with the reference decoder).  Every count that drives an allocation is
 * bounded by the payload bytes that back it.
 */
#ifndef KF_COLUMNS_H
#define KF_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* column kinds (registry/columns.py K_*) */
enum { K_STRUCT = 0, K_FIXED = 1, K_VAR = 2, K_LIST = 3 };

/* row status (registry/columns.py ST_*): decoded; null input; shorter than the header; magic byte
 * not 0; no program for the schema id; the decoder did not take the payload (the reference
 * decides); offsets outside the data */
enum { ST_OK = 0, ST_NULL, ST_SHORT, ST_BAD_MAGIC, ST_NO_PROGRAM, ST_FAILED, ST_BAD_OFFSETS };
#define WIRE_HEADER 5              /* magic byte + 4-byte schema id (AbstractKafkaSchemaSerDe) */

#define HOT static inline __attribute__((always_inline))

/* A growable column. */
typedef struct {
    int kind, width, nchild, per_row;
    int *child;
    uint8_t *valid;                /* NULL until the first null (every slot valid so far) */
    int64_t n, vcap;
    uint8_t *data;                 /* K_FIXED: n * width bytes; K_VAR: dlen bytes */
    int64_t dlen, dcap;
    int32_t *offs;                 /* K_VAR / K_LIST: n + 1 entries */
    int64_t ocap;
} Col;

/* The columns of one decode call; oom: an allocation failed (the call raises MemoryError). */
typedef struct {
    Col *cols;
    int ncols;
    int oom;
} Cols;

int kc_grow_slow(void **buf, int64_t *cap, int64_t need, size_t item);

HOT int kc_grow(void **buf, int64_t *cap, int64_t need, size_t item) {
    return need <= *cap ? 0 : kc_grow_slow(buf, cap, need, item);
}

/* Store the validity byte of slot n (lazily: all ones until the first null). */
int kc_col_slot(Cols *x, Col *c, uint8_t valid);
/* A valid slot n in a column that has had a null (kc_col_slot when the bytes must grow). */
HOT int mark_valid(Cols *x, Col *c) {
    if (c->n < c->vcap) {
        c->valid[c->n] = 1;
        return 0;
    }
    return kc_col_slot(x, c, 1);
}

/* Append a null slot to column ci (a struct's children get null slots too). */
int kc_col_null(Cols *x, int ci);

/* kc_col_null's usual case inline: a fixed or variable-width column that has had a null before
 * and has room for the slot. */
HOT int put_null(Cols *x, int ci) {
    Col *c = &x->cols[ci];
    int64_t n = c->n;
    if (!c->valid || n >= c->vcap) return kc_col_null(x, ci);
    if (c->kind == K_VAR && n + 2 <= c->ocap) {
        c->offs[n + 1] = (int32_t)c->dlen;
    } else if (c->kind == K_FIXED && (n + 1) * c->width <= c->dcap) {
        memset(c->data + n * c->width, 0, (size_t)c->width);
    } else {
        return kc_col_null(x, ci);
    }
    c->valid[n] = 0;
    c->n = n + 1;
    return 0;
}
/* Whether the keys key[first .. n) of a K_VAR or K_FIXED column repeat (a Python dict keeps one). */
int kc_keys_repeat(Cols *x, Col *k, int64_t first);
/* Strict UTF-8 past the first non-ASCII byte (see utf8_ok). */
int kc_utf8_check(const uint8_t *s, int64_t n);

/* A value of `size` bytes (the column's width, checked when the program was loaded). */
HOT int put_fixed(Cols *x, int ci, const void *v, int size) {
    Col *c = &x->cols[ci];
    if (c->valid && mark_valid(x, c)) return -1;
    int64_t at = c->n * size;
    if (kc_grow((void **)&c->data, &c->dcap, at + size, 1)) { x->oom = 1; return -1; }
    memcpy(c->data + at, v, (size_t)size);
    c->n += 1;
    return 0;
}

/* Short strings (4 to 16 bytes) are read as two words that overlap: the first and the last w
 * bytes, w = short_word(n); no byte outside the string is read or written. */
HOT int short_word(int64_t n) {
    return n >= 8 ? 8 : 4;
}

/* The w-byte word (w: 4 or 8) at s, unaligned, zero-extended. */
HOT uint64_t word_at(const uint8_t *s, int w) {
    if (w == 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        return v;
    }
    uint32_t v;
    memcpy(&v, s, 4);
    return v;
}

/* Store the low w bytes (w: 4 or 8) of v at d, unaligned. */
HOT void word_put(uint8_t *d, uint64_t v, int w) {
    if (w == 8) {
        memcpy(d, &v, 8);
    } else {
        uint32_t u = (uint32_t)v;
        memcpy(d, &u, 4);
    }
}

/* Copy n bytes, reading and writing none outside [s, s+n) and [d, d+n): the short strings of
 * typed values (ids, enum symbols, tags) copied without a call. */
HOT void copy_short(uint8_t *d, const uint8_t *s, int64_t n) {
    if (n >= 4 && n <= 16) {
        int w = short_word(n);
        uint64_t head = word_at(s, w), tail = word_at(s + n - w, w);
        word_put(d, head, w);
        word_put(d + n - w, tail, w);
    } else if (n > 16) {
        memcpy(d, s, (size_t)n);
    } else if (n > 0) {                      /* 1 to 3 bytes */
        d[0] = s[0];
        d[n >> 1] = s[n >> 1];
        d[n - 1] = s[n - 1];
    }
}

HOT int put_var(Cols *x, int ci, const uint8_t *v, int64_t len) {
    Col *c = &x->cols[ci];
    if (c->dlen + len > INT32_MAX) return -1;          /* int32 offsets: the row fails */
    if (c->valid && mark_valid(x, c)) return -1;
    if ((c->dlen + len > c->dcap && kc_grow((void **)&c->data, &c->dcap, c->dlen + len, 1)) ||
        (c->n + 2 > c->ocap && kc_grow((void **)&c->offs, &c->ocap, c->n + 2, 4))) { x->oom = 1; return -1; }
    copy_short(c->data + c->dlen, v, len);
    c->dlen += len;
    c->offs[c->n + 1] = (int32_t)c->dlen;
    c->n += 1;
    return 0;
}

/* A valid struct slot whose children the caller fills. */
HOT int put_struct(Cols *x, int ci) {
    Col *c = &x->cols[ci];
    if (c->valid && mark_valid(x, c)) return -1;
    c->n += 1;
    return 0;
}

/* A valid list (or map) slot ending at child row `end`. */
HOT int list_close(Cols *x, Col *c, int64_t end) {
    if (end > INT32_MAX) return -1;                      /* int32 offsets: the row fails */
    if (c->valid && mark_valid(x, c)) return -1;
    if (kc_grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
    c->offs[c->n + 1] = (int32_t)end;
    c->n += 1;
    return 0;
}

/* Strict UTF-8, as Python's decoder: no overlong forms, no surrogates, at most U+10FFFF. */
HOT int utf8_ok(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {              /* ASCII, eight bytes at a time */
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL) return kc_utf8_check(s + i, n - i);
    }
    int64_t left = n - i;                     /* 0 to 7 bytes: two overlapping words, or bytes */
    uint64_t w = left >= 4 ? word_at(s + i, 4) | word_at(s + n - 4, 4)
               : left > 0 ? (uint64_t)(s[i] | s[i + (left >> 1)] | s[n - 1]) : 0;
    return (w & 0x80808080U) ? kc_utf8_check(s + i, left) : 1;
}

/* ------------------------------------------------------------------ the shared decode call */
/* A format: load its programs (GIL held; -1 with a Python error when one is malformed), decode one
 * payload with program `program` (no GIL; 0: decoded, anything else: the row fails and is rolled
 * back), and free what load made. */
typedef struct {
    int (*load)(void *state, PyObject *programs, const Cols *cols);
    int (*row)(void *state, Cols *cols, int program, const uint8_t *p, const uint8_t *end);
    void (*release)(void *state);
} Format;

/* decode(programs, cols, root, data, offsets, wide, first, n, validity, keys, slots) of a
 * format's module (see kc_decode_doc). */
PyObject *kc_decode(PyObject *args, const Format *format, void *state);
/* Ready the Buffer type (once per module, at init); -1 with an exception. */
int kc_ready(void);

#define KC_DECODE_DOC \
"decode(programs, cols, root, data, offsets, wide, first, n, validity, keys, slots)\n" \
"    -> (columns, status, ids)\n\n" \
"Rows first .. first+n of an Arrow binary array (data, offsets: int32, or int64 when wide,\n" \
"validity: its bitmap or None), each a Schema Registry wire-format value: magic 0, a 4-byte\n" \
"big-endian schema id, the payload.  keys/slots: int32 bytes, the schema ids with a program\n" \
"and the index of that program in programs (the format's compiled programs).\n" \
"cols: tuple of (kind, width, children, per_row); root: the column of a row's value.\n" \
"columns: per column (length, validity or None when every slot is valid, data or None,\n" \
"offsets or None), each a buffer (zero-copy); status: one byte per row (ST_*; every row but\n" \
"ST_OK is null in columns); ids: int32 per row, the schema id (-1 without a header)."

#endif
