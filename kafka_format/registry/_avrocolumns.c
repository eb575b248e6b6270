/*
 * kafka_format.registry._avrocolumns: Avro payloads decoded straight into Arrow column buffers.
 *
 * One entry point, one C call per Arrow batch (never per record):
 *
 *   decode(programs, cols, root, data, offsets, wide, first, n, validity, keys, slots)
 *
 * A *program* is the compiled resolution of one writer schema to the table (reader) schema,
 * made once per schema id by kafka_format/registry/avro_columns.py: a flat array of nodes
 * (six int32 each: op, col, a, b, c, d), a child-index array and a tuple of constant byte
 * strings (enum symbol tables, default strings).  *cols* describes the output columns (one
 * per Arrow array of the table type, nested ones included): kind, width and children.
 * The rows are an Arrow binary array's values in the Schema Registry wire format: the header
 * (magic byte 0, big-endian int32 schema id) is read here, the id picks the program (keys ->
 * slots); a row without one (null, short, bad magic, an id without a program) is null in the
 * output and its status says why.
 *
 * Avro binary encoding (Avro specification, "Binary Encoding"): int and long are zig-zag
 * varints, float and double little-endian IEEE 754, bytes and string a long length then the
 * bytes (string: UTF-8), fixed its declared size, enum an int index, union a long branch
 * index then the value, arrays and maps blocks of a long count (negative: then a long byte
 * size) ending with a zero count, map keys strings, records their fields in order.
 *
 * The fast path is conservative: whatever it is not sure decodes exactly as the reference
 * (fastavro with the same schemas, then pyarrow) makes the row *fail* here: its partial
 * output is rolled back, the row is null, and its status ST_FAILED tells the caller to decode
 * it with the reference, which also words the error of a row that does not decode.  So a row
 * this code accepts equals the reference, and every other row is the reference's.
 * Every count that drives an allocation is bounded by the payload bytes that back it.
 */

#include "_columns.h"

/* ------------------------------------------------------------------ ops (avro_columns.OP) */
enum {
    OP_NOP = 0,        /* nothing (a writer null that is skipped) */
    OP_ERROR,          /* the writer value does not resolve: the row fails */
    OP_NULL,           /* append null to col */
    OP_BOOL,           /* byte 0/1 -> col (width 1) */
    OP_INT32,          /* varint in int32 range -> col (width 4) */
    OP_INT64,          /* varint -> col (width 8); a = 1: the writer is int (range-checked) */
    OP_TO_F32,         /* varint (a = 1: int range) -> float(value) as float32 */
    OP_TO_F64,         /* varint (a = 1: int range) -> float(value) as float64 */
    OP_F32,            /* 4 bytes -> float32 (through double, as Python does) */
    OP_F32_TO_F64,     /* 4 bytes -> float64 */
    OP_F64,            /* 8 bytes -> float64 */
    OP_BYTES,          /* length + bytes -> var col; a = 1: must be UTF-8 */
    OP_FIXED,          /* a bytes -> var col */
    OP_ENUM,           /* varint index -> symbol of const a (table: see enum_symbol) */
    OP_DATE,           /* varint -> date32 (days; datetime.date's range) */
    OP_TIMESTAMP,      /* varint -> int64 microseconds (a = 1000 for millis); datetime's range */
    OP_TIME,           /* varint in [0, a * 86400000) -> width 4 (a = 1) or 8 (a = 1000) */
    OP_DECIMAL,        /* a: precision, b: fixed size or -1 (bytes) -> int128 */
    OP_UUID,           /* string in canonical 8-4-4-4-12 hex form -> lower case */
    OP_RECORD,         /* valid struct col; children kids[a .. a+b) run in order */
    OP_ARRAY,          /* list col; item node a */
    OP_MAP,            /* map col; a: entries struct col, b: key col, c: value node */
    OP_UNION,          /* branch index -> node kids[a + index], b branches */
    OP_MEMBER,         /* union struct col: member a (child index) gets node b, others null */
    OP_DEFAULT,        /* a: kind (DEF_*), constant in b/c (int64 halves) or const b */
    OP_SKIP_BOOL,
    OP_SKIP_VARINT,    /* a > 0: an enum of a symbols (index range-checked) */
    OP_SKIP_N,         /* a bytes */
    OP_SKIP_BYTES,     /* a = 1: must be UTF-8 */
    OP_SKIP_RECORD,    /* kids[a .. a+b) */
    OP_SKIP_ARRAY,     /* item skip node a */
    OP_SKIP_MAP,       /* value skip node a */
    OP_SKIP_UNION,     /* kids[a .. a+b) */
    OP_COUNT
};

/* row status (avro_columns.ST_*) */

enum { DEF_NULL = 0, DEF_BOOL, DEF_I32, DEF_I64, DEF_F32, DEF_F64, DEF_BYTES, DEF_EMPTY };

#define NODE_INTS 6
#define MAX_DEPTH 64

typedef struct {
    const int32_t *nodes;
    Py_ssize_t nnodes;
    const int32_t *kids;
    Py_ssize_t nkids;
    PyObject *consts;              /* tuple of bytes */
} Program;

typedef struct {
    Cols *c;                       /* the output columns */
    const uint8_t *p, *end;
    const Program *prog;
    int depth;
} Ctx;


/* ------------------------------------------------------------------ primitive readers */
HOT int read_long(Ctx *x, int64_t *out) {
    if (x->p < x->end && !(*x->p & 0x80)) {   /* one byte: the usual small value */
        uint64_t b = *x->p++;
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return 0;
    }
    uint64_t n = 0;
    int shift = 0;
    for (;;) {
        if (x->p >= x->end) return -1;
        uint8_t b = *x->p++;
        if (shift == 63 && (b & 0x7e)) return -1;       /* more than 64 bits */
        n |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) return -1;                       /* an 11th byte */
    }
    *out = (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
    return 0;
}

HOT int read_int(Ctx *x, int64_t *out) {
    if (read_long(x, out)) return -1;
    return (*out < INT32_MIN || *out > INT32_MAX) ? -1 : 0;
}

/* Strict UTF-8, as Python's decoder: no overlong forms, no surrogates, at most U+10FFFF. */
HOT int read_blob(Ctx *x, const uint8_t **v, int64_t *len) {
    if (read_long(x, len)) return -1;
    if (*len < 0 || *len > x->end - x->p) return -1;
    *v = x->p;
    x->p += *len;
    return 0;
}

/* Next block count of an array or map: 0 ends it; a negative count is followed by a byte size.
 * Every item takes at least one byte (the compiler guarantees it), so a count above the bytes
 * left cannot be right: the row fails before anything is allocated for it. */
HOT int block_count(Ctx *x, int64_t *count) {
    if (read_long(x, count)) return -1;
    if (*count < 0) {
        int64_t size;
        if (*count == INT64_MIN) return -1;
        *count = -*count;
        if (read_long(x, &size)) return -1;
    }
    return *count > x->end - x->p ? -1 : 0;
}

/* ------------------------------------------------------------------ the interpreter */
static int run(Ctx *x, const int32_t *nd);

/* Node `node` of a program: every index a node names was checked when the program was loaded
 * (avro_load), so none is checked again per row. */
static inline const int32_t *node_at(const Program *g, int node) {
    return g->nodes + (Py_ssize_t)node * NODE_INTS;
}

/* const bytes of an enum: int32 n, then n pairs int32 (start, length) into the UTF-8 symbol
 * text that follows them; length -1: the writer symbol has no reader symbol (the row fails). */
static int enum_symbol(Ctx *x, int cidx, int64_t index, const uint8_t **s, int64_t *len) {
    PyObject *b = PyTuple_GET_ITEM(x->prog->consts, cidx);
    const char *raw = PyBytes_AS_STRING(b);
    Py_ssize_t size = PyBytes_GET_SIZE(b);
    int32_t n, start, length;
    memcpy(&n, raw, 4);
    if (index < 0 || index >= n || 4 + 8 * ((Py_ssize_t)n) > size) return -1;
    memcpy(&start, raw + 4 + 8 * index, 4);
    memcpy(&length, raw + 8 + 8 * index, 4);
    Py_ssize_t text = 4 + 8 * (Py_ssize_t)n;
    if (length < 0 || start < 0 || text + start + length > size) return -1;
    *s = (const uint8_t *)raw + text + start;
    *len = length;
    return 0;
}

static int skip_string_checked(Ctx *x, int utf8) {
    const uint8_t *v;
    int64_t len;
    if (read_blob(x, &v, &len)) return -1;
    return (utf8 && !utf8_ok(v, len)) ? -1 : 0;
}

/* The leaf ops, one bit each (OP_COUNT < 64): read or skip one value without running other nodes. */
#define BIT(op) (1ULL << (op))
static const uint64_t LEAF_OPS = (BIT(OP_UUID + 1) - 1) | BIT(OP_DEFAULT) | BIT(OP_SKIP_BOOL) | BIT(OP_SKIP_VARINT) |
                                 BIT(OP_SKIP_N) | BIT(OP_SKIP_BYTES);
#define IS_LEAF(op) ((LEAF_OPS >> (op)) & 1)

/* The leaf ops other than hot_leaf's (booleans, floats, fixed, dates and times, decimals, uuids,
 * defaults, skips), out of line. */
static __attribute__((noinline)) int rare_leaf(Ctx *x, const int32_t *nd) {
    const Program *g = x->prog;
    int op = nd[0], col = nd[1], a = nd[2], b = nd[3], c = nd[4];
    int64_t v;
    int rc = 0;
    (void)g;
    (void)c;
    switch (op) {
    case OP_ERROR:
        rc = -1;
        break;
    case OP_BOOL: {
        if (x->p >= x->end || *x->p > 1) { rc = -1; break; }
        uint8_t bit = *x->p++;
        rc = put_fixed(x->c, col, &bit, sizeof(bit));
        break;
    }
    case OP_TO_F32: {
        if (a ? read_int(x, &v) : read_long(x, &v)) { rc = -1; break; }
        float f = (float)(double)v;
        rc = put_fixed(x->c, col, &f, sizeof(f));
        break;
    }
    case OP_TO_F64: {
        if (a ? read_int(x, &v) : read_long(x, &v)) { rc = -1; break; }
        double d = (double)v;
        rc = put_fixed(x->c, col, &d, sizeof(d));
        break;
    }
    case OP_F32:
    case OP_F32_TO_F64: {
        if (x->end - x->p < 4) { rc = -1; break; }
        float f;
        memcpy(&f, x->p, 4);
        x->p += 4;
        double d = (double)f;
        if (op == OP_F32) {
            float back = (float)d;
            rc = put_fixed(x->c, col, &back, sizeof(back));
        } else {
            rc = put_fixed(x->c, col, &d, sizeof(d));
        }
        break;
    }
    case OP_FIXED:
        if (x->end - x->p < a) { rc = -1; break; }
        rc = put_var(x->c, col, x->p, a);
        x->p += a;
        break;
    case OP_DATE: {
        /* datetime.date.fromordinal(days + 719163): ordinals 1 .. 3652059 */
        if (read_long(x, &v) || v < -719162 || v > 2932896) { rc = -1; break; }
        int32_t d = (int32_t)v;
        rc = put_fixed(x->c, col, &d, sizeof(d));
        break;
    }
    case OP_TIMESTAMP: {
        /* epoch + timedelta(microseconds=...): datetime's years 1 .. 9999 */
        const int64_t lo = -62135596800000000LL, hi = 253402300799999999LL;
        if (read_long(x, &v) || v < lo / a || v > hi / a) { rc = -1; break; }
        int64_t us = v * a;
        if (us < lo || us > hi) { rc = -1; break; }
        rc = put_fixed(x->c, col, &us, sizeof(us));
        break;
    }
    case OP_TIME: {
        if (read_long(x, &v) || v < 0 || v >= (int64_t)a * 86400000LL) { rc = -1; break; }
        if (a == 1) {
            int32_t t = (int32_t)v;
            rc = put_fixed(x->c, col, &t, sizeof(t));
        } else {
            rc = put_fixed(x->c, col, &v, sizeof(v));
        }
        break;
    }
    case OP_DECIMAL: {
        const uint8_t *s;
        int64_t len;
        if (b >= 0) {
            if (x->end - x->p < b) { rc = -1; break; }
            s = x->p;
            len = b;
            x->p += b;
        } else if (read_blob(x, &s, &len)) {
            rc = -1;
            break;
        }
        if (len > 16) { rc = -1; break; }
        __int128 u = 0;
        if (len) {
            u = (s[0] & 0x80) ? -1 : 0;
            for (int64_t i = 0; i < len; i++) u = (__int128)(((unsigned __int128)u << 8) | s[i]);
        }
        __int128 limit = 1;
        for (int i = 0; i < a; i++) limit *= 10;
        if (u >= limit || u <= -limit) { rc = -1; break; }
        rc = put_fixed(x->c, col, &u, sizeof(u));
        break;
    }
    case OP_UUID: {
        /* uuid.UUID(text) then str(): the canonical 8-4-4-4-12 form or 32 hex digits, to lower
         * case; any other form uuid.UUID takes (braces, urn:uuid:, ...) is left to it */
        const uint8_t *s;
        int64_t len;
        if (read_blob(x, &s, &len) || (len != 36 && len != 32)) { rc = -1; break; }
        uint8_t hex[32], out[36];
        int nhex = 0;
        for (int64_t i = 0; i < len; i++) {
            uint8_t ch = s[i];
            int dash_at = len == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
            if (dash_at != (ch == '-')) { rc = -1; break; }
            if (dash_at) continue;
            if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')) hex[nhex++] = ch;
            else if (ch >= 'A' && ch <= 'F') hex[nhex++] = (uint8_t)(ch + 32);
            else { rc = -1; break; }
        }
        if (rc || nhex != 32) { rc = -1; break; }
        for (int i = 0, k = 0; i < 36; i++)
            out[i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[k++];
        rc = put_var(x->c, col, out, 36);
        break;
    }
    case OP_DEFAULT: {
        int64_t k = ((int64_t)(uint32_t)c << 32) | (uint32_t)nd[5];
        switch (a) {
        case DEF_NULL:
            rc = put_null(x->c, col);
            break;
        case DEF_BOOL: {
            uint8_t bit = (uint8_t)(k != 0);
            rc = put_fixed(x->c, col, &bit, sizeof(bit));
            break;
        }
        case DEF_I32: {
            int32_t i = (int32_t)k;
            rc = put_fixed(x->c, col, &i, sizeof(i));
            break;
        }
        case DEF_I64:
            rc = put_fixed(x->c, col, &k, sizeof(k));
            break;
        case DEF_F32:
        case DEF_F64:
        case DEF_BYTES: {
            PyObject *cb = PyTuple_GET_ITEM(g->consts, b);
            const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(cb);
            if (a == DEF_BYTES) rc = put_var(x->c, col, s, PyBytes_GET_SIZE(cb));
            else rc = put_fixed(x->c, col, s, x->c->cols[col].width);
            break;
        }
        case DEF_EMPTY: {
            Col *lc = &x->c->cols[col];
            rc = list_close(x->c, lc, lc->offs[lc->n]);
            break;
        }
        default:
            rc = -1;
        }
        break;
    }
    case OP_SKIP_BOOL:
        if (x->p >= x->end || *x->p > 1) { rc = -1; break; }
        x->p++;
        break;
    case OP_SKIP_VARINT:
        if (read_long(x, &v) || (a > 0 && (v < 0 || v >= a))) rc = -1;
        break;
    case OP_SKIP_N:
        if (x->end - x->p < a) { rc = -1; break; }
        x->p += a;
        break;
    case OP_SKIP_BYTES:
        rc = skip_string_checked(x, a);
        break;
    default:
        rc = -1;
    }
    return rc;
}

/* The leaves of most fields (strings, ints, longs, doubles, enums, nulls) without a call; the
 * rest by rare_leaf. */
HOT int hot_leaf(Ctx *x, const int32_t *nd) {
    int64_t v;
    switch (nd[0]) {
    case OP_INT64:
        if (nd[2] ? read_int(x, &v) : read_long(x, &v)) return -1;
        return put_fixed(x->c, nd[1], &v, sizeof(v));
    case OP_INT32: {
        if (read_int(x, &v)) return -1;
        int32_t i = (int32_t)v;
        return put_fixed(x->c, nd[1], &i, sizeof(i));
    }
    case OP_F64: {
        if (x->end - x->p < 8) return -1;
        double d;
        memcpy(&d, x->p, 8);
        x->p += 8;
        return put_fixed(x->c, nd[1], &d, sizeof(d));
    }
    case OP_BYTES: {
        const uint8_t *s;
        int64_t len;
        if (read_blob(x, &s, &len) || (nd[2] && !utf8_ok(s, len))) return -1;
        return put_var(x->c, nd[1], s, len);
    }
    case OP_ENUM: {
        const uint8_t *s;
        int64_t len;
        if (read_long(x, &v) || enum_symbol(x, nd[2], v, &s, &len)) return -1;
        return put_var(x->c, nd[1], s, len);
    }
    case OP_NULL:
        return put_null(x->c, nd[1]);
    case OP_DEFAULT:
        if (nd[2] != DEF_NULL) return rare_leaf(x, nd);
        return put_null(x->c, nd[1]);
    case OP_NOP:
        return 0;
    default:
        return rare_leaf(x, nd);
    }
}

/* An array whose items are leaves (a list of strings, of longs, ...): no call per item. */
static int leaf_array(Ctx *x, const int32_t *nd, const int32_t *item) {
    Col *lc = &x->c->cols[nd[1]];
    int64_t count;
    for (;;) {
        if (block_count(x, &count)) return -1;
        if (count == 0) break;
        for (int64_t i = 0; i < count; i++)
            if (hot_leaf(x, item)) return -1;
    }
    return list_close(x->c, lc, x->c->cols[lc->child[0]].n);
}

/* Run node `node`: leaves, a union's leaf branch (a nullable field) and an array of leaves here,
 * without run()'s call (they nest nothing, so they need no depth). */
HOT int step(Ctx *x, int node) {
    const int32_t *nd = node_at(x->prog, node);
    if (IS_LEAF(nd[0])) return hot_leaf(x, nd);
    if (nd[0] == OP_UNION) {
        int64_t v;
        if (read_long(x, &v) || v < 0 || v >= nd[3]) return -1;
        const int32_t *branch = node_at(x->prog, x->prog->kids[nd[2] + v]);
        if (IS_LEAF(branch[0])) return hot_leaf(x, branch);
        return run(x, branch);
    }
    if (nd[0] == OP_ARRAY) {
        const int32_t *item = node_at(x->prog, nd[2]);
        if (IS_LEAF(item[0])) return leaf_array(x, nd, item);
    }
    return run(x, nd);
}

static int run(Ctx *x, const int32_t *nd) {
    const Program *g = x->prog;
    int op = nd[0], col = nd[1], a = nd[2], b = nd[3], c = nd[4];
    int64_t v;
    if (IS_LEAF(op)) return hot_leaf(x, nd);
    if (++x->depth > MAX_DEPTH) return -1;
    int rc = 0;
    switch (op) {
    case OP_RECORD: {
        if (put_struct(x->c, col)) { rc = -1; break; }
        const int32_t *kid = g->kids + a;
        for (int i = 0; i < b && !rc; i++) rc = step(x, kid[i]);
        break;
    }
    case OP_ARRAY: {
        Col *lc = &x->c->cols[col];
        Col *item = &x->c->cols[lc->child[0]];
        int64_t count;
        for (;;) {
            if (block_count(x, &count)) { rc = -1; break; }
            if (count == 0) break;
            for (int64_t i = 0; i < count && !rc; i++) rc = step(x, a);
            if (rc) break;
        }
        if (rc) break;
        rc = list_close(x->c, lc, item->n);
        break;
    }
    case OP_MAP: {
        Col *mc = &x->c->cols[col];
        Col *keys = &x->c->cols[b];
        int64_t first = keys->n, count;
        for (;;) {
            if (block_count(x, &count)) { rc = -1; break; }
            if (count == 0) break;
            for (int64_t i = 0; i < count && !rc; i++) {
                const uint8_t *s;
                int64_t len;
                if (read_blob(x, &s, &len) || !utf8_ok(s, len) || put_struct(x->c, a) ||
                    put_var(x->c, b, s, len) || step(x, c))
                    rc = -1;
            }
            if (rc) break;
        }
        if (rc || kc_keys_repeat(x->c, keys, first)) { rc = -1; break; }
        rc = list_close(x->c, mc, x->c->cols[a].n);
        break;
    }
    case OP_UNION:
        if (read_long(x, &v) || v < 0 || v >= b) { rc = -1; break; }
        rc = step(x, g->kids[a + v]);
        break;
    case OP_MEMBER: {
        Col *sc = &x->c->cols[col];
        if (put_struct(x->c, col)) { rc = -1; break; }
        for (int i = 0; i < sc->nchild && !rc; i++)
            rc = (i == a) ? step(x, b) : put_null(x->c, sc->child[i]);
        break;
    }
    case OP_SKIP_RECORD:
        for (int i = 0; i < b && !rc; i++) rc = step(x, g->kids[a + i]);
        break;
    case OP_SKIP_ARRAY:
    case OP_SKIP_MAP: {
        int64_t count;
        for (;;) {
            if (block_count(x, &count)) { rc = -1; break; }
            if (count == 0) break;
            for (int64_t i = 0; i < count && !rc; i++) {
                if (op == OP_SKIP_MAP && skip_string_checked(x, 1)) rc = -1;
                else rc = step(x, a);
            }
            if (rc) break;
        }
        break;
    }
    case OP_SKIP_UNION:
        if (read_long(x, &v) || v < 0 || v >= b) { rc = -1; break; }
        rc = step(x, g->kids[a + v]);
        break;
    default:
        rc = -1;
    }
    x->depth--;
    return rc;
}

static int col_fits(const Col *cols, int op, const int32_t *nd, PyObject *consts) {
    int needs = -1, width = 0;
    switch (op) {
    case OP_NOP: case OP_ERROR: case OP_UNION:
        return 1;
    case OP_NULL:
        return nd[1] >= 0;
    case OP_BOOL: needs = K_FIXED; width = 1; break;
    case OP_INT32: case OP_TO_F32: case OP_F32: case OP_DATE: needs = K_FIXED; width = 4; break;
    case OP_INT64: case OP_TO_F64: case OP_F32_TO_F64: case OP_F64: case OP_TIMESTAMP:
        needs = K_FIXED; width = 8; break;
    case OP_TIME: needs = K_FIXED; width = nd[2] == 1 ? 4 : 8; break;
    case OP_DECIMAL: needs = K_FIXED; width = 16; break;
    case OP_BYTES: case OP_FIXED: case OP_ENUM: case OP_UUID: needs = K_VAR; break;
    case OP_RECORD: case OP_MEMBER: needs = K_STRUCT; break;
    case OP_ARRAY: needs = K_LIST; break;
    case OP_MAP:
        if (nd[1] < 0 || cols[nd[1]].kind != K_LIST || cols[nd[2]].kind != K_STRUCT || cols[nd[3]].kind != K_VAR)
            return 0;
        return 1;
    case OP_DEFAULT:
        if (nd[1] < 0) return 0;
        switch (nd[2]) {
        case DEF_NULL: return 1;
        case DEF_BOOL: needs = K_FIXED; width = 1; break;
        case DEF_I32: needs = K_FIXED; width = 4; break;
        case DEF_I64: needs = K_FIXED; width = 8; break;
        case DEF_F32: case DEF_F64:
            return cols[nd[1]].kind == K_FIXED &&
                   PyBytes_GET_SIZE(PyTuple_GET_ITEM(consts, nd[3])) >= cols[nd[1]].width;
        case DEF_BYTES: needs = K_VAR; break;
        case DEF_EMPTY: needs = K_LIST; break;
        default: return 0;
        }
        break;
    default:
        return nd[1] == -1;      /* skips write nothing */
    }
    if (nd[1] < 0 || cols[nd[1]].kind != needs) return 0;
    return width == 0 || cols[nd[1]].width == width;
}

/* ------------------------------------------------------------------ the format (_columns.h) */
typedef struct {
    Program *gs;
    Py_ssize_t ng;
} Avro;

/* Every program of the call, checked against the columns before any runs: every column, kid
 * and const index a node names must exist and fit (programs come from avro_columns.py; a wrong
 * one must fail here, never write past a buffer). */
static int avro_load(void *state, PyObject *programs, const Cols *x) {
    Avro *a = state;
    const Col *cols = x->cols;
    int ncols = x->ncols;
    Py_ssize_t ng = PyTuple_GET_SIZE(programs);
    Program *gs = calloc((size_t)(ng ? ng : 1), sizeof(Program));
    if (!gs) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < ng; i++) {
        PyObject *nodes, *kids, *consts;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(programs, i), "SSO!", &nodes, &kids, &PyTuple_Type, &consts))
            goto fail;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(consts); j++)
            if (!PyBytes_Check(PyTuple_GET_ITEM(consts, j))) {
                PyErr_SetString(PyExc_TypeError, "consts must be bytes");
                goto fail;
            }
        gs[i].nodes = (const int32_t *)PyBytes_AS_STRING(nodes);
        gs[i].nnodes = PyBytes_GET_SIZE(nodes) / (4 * NODE_INTS);
        gs[i].kids = (const int32_t *)PyBytes_AS_STRING(kids);
        gs[i].nkids = PyBytes_GET_SIZE(kids) / 4;
        gs[i].consts = consts;
        for (Py_ssize_t k = 0; k < gs[i].nnodes; k++) {
            const int32_t *nd = node_at(&gs[i], (int)k);
            int op = nd[0];
            if (op < 0 || op >= OP_COUNT || nd[1] < -1 || nd[1] >= ncols) goto bad_program;
            if ((op == OP_RECORD || op == OP_SKIP_RECORD || op == OP_UNION || op == OP_SKIP_UNION) &&
                (nd[2] < 0 || nd[3] < 0 || (Py_ssize_t)nd[2] + nd[3] > gs[i].nkids))
                goto bad_program;
            if (op == OP_ENUM && (nd[2] < 0 || nd[2] >= PyTuple_GET_SIZE(consts) ||
                                  PyBytes_GET_SIZE(PyTuple_GET_ITEM(consts, nd[2])) < 4))
                goto bad_program;
            if (op == OP_DEFAULT && (nd[2] == DEF_F32 || nd[2] == DEF_F64 || nd[2] == DEF_BYTES) &&
                (nd[3] < 0 || nd[3] >= PyTuple_GET_SIZE(consts)))
                goto bad_program;
            if (op == OP_MAP && (nd[2] < 0 || nd[2] >= ncols || nd[3] < 0 || nd[3] >= ncols))
                goto bad_program;
            int ref = op == OP_ARRAY || op == OP_SKIP_ARRAY || op == OP_SKIP_MAP ? nd[2]
                    : op == OP_MEMBER ? nd[3] : op == OP_MAP ? nd[4] : 0;
            if (ref < 0 || ref >= gs[i].nnodes) goto bad_program;       /* the node an item runs */
            if (!col_fits(cols, op, nd, consts)) goto bad_program;
            if (op == OP_MEMBER && (nd[2] < 0 || nd[2] >= cols[nd[1]].nchild)) goto bad_program;
        }
        for (Py_ssize_t k = 0; k < gs[i].nkids; k++)
            if (gs[i].kids[k] < 0 || gs[i].kids[k] >= gs[i].nnodes) goto bad_program;
        if (gs[i].nnodes < 1) goto bad_program;                          /* node 0: the row */
    }
    a->gs = gs;
    a->ng = ng;
    return 0;
bad_program:
    PyErr_SetString(PyExc_ValueError, "malformed Avro column program");
fail:
    free(gs);
    return -1;
}

static int avro_row(void *state, Cols *cols, int program, const uint8_t *p, const uint8_t *end) {
    Avro *a = state;
    Ctx x = {.c = cols, .p = p, .end = end, .prog = &a->gs[program], .depth = 0};
    return run(&x, node_at(x.prog, 0));
}

static void avro_release(void *state) {
    Avro *a = state;
    free(a->gs);
    a->gs = NULL;
}

static const Format AVRO = {avro_load, avro_row, avro_release};

PyDoc_STRVAR(decode_doc, KC_DECODE_DOC "\n\nA program: (nodes, kids, consts) of avro_columns.Program.");

static PyObject *ac_decode(PyObject *self, PyObject *args) {
    Avro state = {0};
    return kc_decode(args, &AVRO, &state);
}

static PyMethodDef ac_methods[] = {
    {"decode", ac_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ac_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_format.registry._avrocolumns",
    .m_doc = "Avro payloads decoded into Arrow column buffers (see avro_columns.py).",
    .m_size = -1,
    .m_methods = ac_methods,
};

PyMODINIT_FUNC PyInit__avrocolumns(void) {
    if (kc_ready() < 0) return NULL;
    return PyModule_Create(&ac_module);
}
