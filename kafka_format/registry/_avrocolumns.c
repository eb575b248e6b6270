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

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

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
enum { ST_OK = 0, ST_NULL, ST_SHORT, ST_BAD_MAGIC, ST_NO_PROGRAM, ST_FAILED, ST_BAD_OFFSETS };
#define WIRE_HEADER 5              /* magic byte + 4-byte schema id (AbstractKafkaSchemaSerDe) */

enum { DEF_NULL = 0, DEF_BOOL, DEF_I32, DEF_I64, DEF_F32, DEF_F64, DEF_BYTES, DEF_EMPTY };

/* column kinds (avro_columns.KIND) */
enum { K_STRUCT = 0, K_FIXED = 1, K_VAR = 2, K_LIST = 3 };

#define NODE_INTS 6
#define MAX_DEPTH 64

/* ------------------------------------------------------------------ growable column buffers */
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

typedef struct {
    const int32_t *nodes;
    Py_ssize_t nnodes;
    const int32_t *kids;
    Py_ssize_t nkids;
    PyObject *consts;              /* tuple of bytes */
} Program;

typedef struct {
    Col *cols;
    int ncols;
    const uint8_t *p, *end;
    const Program *prog;
    int depth;
    int oom;
} Ctx;

#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))

COLD int grow_slow(void **buf, int64_t *cap, int64_t need, size_t item);

HOT int grow(void **buf, int64_t *cap, int64_t need, size_t item) {
    return need <= *cap ? 0 : grow_slow(buf, cap, need, item);
}

COLD int grow_slow(void **buf, int64_t *cap, int64_t need, size_t item) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *b = realloc(*buf, (size_t)c * item);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

/* The validity byte of slot n: stored once a column has had a null (lazily: all ones before). */
COLD int col_slot(Ctx *x, Col *c, uint8_t valid) {
    if (!c->valid) {
        if (valid) return 0;
        int64_t cap = c->vcap > c->n + 1 ? c->vcap : c->n + 64;
        c->valid = malloc((size_t)cap);
        if (!c->valid) { x->oom = 1; return -1; }
        c->vcap = cap;
        memset(c->valid, 1, (size_t)c->n);
    } else if (grow((void **)&c->valid, &c->vcap, c->n + 1, 1)) {
        x->oom = 1;
        return -1;
    }
    c->valid[c->n] = valid;
    return 0;
}

static int col_null(Ctx *x, int ci);

/* Finish a slot: n += 1 (fixed columns get zero bytes, offsets repeat). */
static int col_close_null(Ctx *x, Col *c) {
    switch (c->kind) {
    case K_FIXED:
        if (grow((void **)&c->data, &c->dcap, (c->n + 1) * c->width, 1)) { x->oom = 1; return -1; }
        memset(c->data + c->n * c->width, 0, (size_t)c->width);
        break;
    case K_VAR:
        if (grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
        c->offs[c->n + 1] = (int32_t)c->dlen;
        break;
    case K_LIST:
        if (grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
        c->offs[c->n + 1] = c->offs[c->n];
        break;
    case K_STRUCT:
        for (int i = 0; i < c->nchild; i++)
            if (col_null(x, c->child[i])) return -1;
        break;
    }
    c->n += 1;
    return 0;
}

static int col_null(Ctx *x, int ci) {
    Col *c = &x->cols[ci];
    if (col_slot(x, c, 0)) return -1;
    return col_close_null(x, c);
}

/* A value of `size` bytes (the column's width: col_fits checked it) into a fixed-width column. */
HOT int put_fixed(Ctx *x, int ci, const void *v, int size) {
    Col *c = &x->cols[ci];
    if (c->valid && col_slot(x, c, 1)) return -1;
    int64_t at = c->n * size;
    if (grow((void **)&c->data, &c->dcap, at + size, 1)) { x->oom = 1; return -1; }
    memcpy(c->data + at, v, (size_t)size);
    c->n += 1;
    return 0;
}

HOT int put_var(Ctx *x, int ci, const uint8_t *v, int64_t len) {
    Col *c = &x->cols[ci];
    if (c->dlen + len > INT32_MAX) return -1;          /* int32 offsets: the row fails */
    if (c->valid && col_slot(x, c, 1)) return -1;
    if ((c->dlen + len > c->dcap && grow((void **)&c->data, &c->dcap, c->dlen + len, 1)) ||
        (c->n + 2 > c->ocap && grow((void **)&c->offs, &c->ocap, c->n + 2, 4))) { x->oom = 1; return -1; }
    if (len) memcpy(c->data + c->dlen, v, (size_t)len);
    c->dlen += len;
    c->offs[c->n + 1] = (int32_t)c->dlen;
    c->n += 1;
    return 0;
}

/* A valid struct slot whose children the caller fills. */
HOT int put_struct(Ctx *x, int ci) {
    Col *c = &x->cols[ci];
    if (c->valid && col_slot(x, c, 1)) return -1;
    c->n += 1;
    return 0;
}

/* A valid list (or map) slot ending at child row `end`. */
HOT int list_close(Ctx *x, Col *c, int64_t end) {
    if (end > INT32_MAX) return -1;                      /* int32 offsets: the row fails */
    if (c->valid && col_slot(x, c, 1)) return -1;
    if (grow((void **)&c->offs, &c->ocap, c->n + 2, 4)) { x->oom = 1; return -1; }
    c->offs[c->n + 1] = (int32_t)end;
    c->n += 1;
    return 0;
}

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
COLD int utf8_check(const uint8_t *s, int64_t n);

HOT int utf8_ok(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {              /* ASCII, eight bytes at a time */
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL) return utf8_check(s + i, n - i);
    }
    for (; i < n; i++)
        if (s[i] & 0x80) return utf8_check(s + i, n - i);
    return 1;
}

COLD int utf8_check(const uint8_t *s, int64_t n) {
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
static int run(Ctx *x, int node);

static const int32_t *node_at(const Program *g, int node) {
    return g->nodes + (Py_ssize_t)node * NODE_INTS;
}

static inline int step(Ctx *x, int node);

static int run_kids(Ctx *x, int first, int count) {
    for (int i = 0; i < count; i++)
        if (step(x, x->prog->kids[first + i])) return -1;
    return 0;
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

#define MAP_SMALL 16

static uint64_t fnv(const uint8_t *s, int64_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* Whether the keys key[first .. n) of a string column repeat (a Python dict keeps one). */
static int keys_repeat(Ctx *x, Col *k, int64_t first) {
    int64_t m = k->n - first;
    if (m < 2) return 0;
    const int32_t *o = k->offs;
    if (m <= MAP_SMALL) {
        for (int64_t i = first; i < k->n; i++)
            for (int64_t j = i + 1; j < k->n; j++)
                if (o[i + 1] - o[i] == o[j + 1] - o[j] &&
                    memcmp(k->data + o[i], k->data + o[j], (size_t)(o[i + 1] - o[i])) == 0)
                    return 1;
        return 0;
    }
    int64_t cap = 1;
    while (cap < 2 * m) cap <<= 1;
    int64_t *slot = malloc((size_t)cap * sizeof(int64_t));
    if (!slot) { x->oom = 1; return 1; }
    for (int64_t i = 0; i < cap; i++) slot[i] = -1;
    int dup = 0;
    for (int64_t i = first; i < k->n && !dup; i++) {
        int64_t len = o[i + 1] - o[i];
        uint64_t h = fnv(k->data + o[i], len) & (uint64_t)(cap - 1);
        while (slot[h] >= 0) {
            int64_t j = slot[h];
            if (o[j + 1] - o[j] == len && memcmp(k->data + o[i], k->data + o[j], (size_t)len) == 0) {
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

#define IS_LEAF(op) ((op) <= OP_UUID || (op) == OP_DEFAULT || ((op) >= OP_SKIP_BOOL && (op) <= OP_SKIP_BYTES))

/* The ops that read one value (or skip one) without running other nodes: inlined where a record's
 * fields and an array's items are run, so most fields cost no call. */
static inline int leaf(Ctx *x, const int32_t *nd) {
    const Program *g = x->prog;
    int op = nd[0], col = nd[1], a = nd[2], b = nd[3], c = nd[4];
    int64_t v;
    int rc = 0;
    (void)g;
    (void)c;
    switch (op) {
    case OP_NOP:
        break;
    case OP_ERROR:
        rc = -1;
        break;
    case OP_NULL:
        rc = col_null(x, col);
        break;
    case OP_BOOL: {
        if (x->p >= x->end || *x->p > 1) { rc = -1; break; }
        uint8_t bit = *x->p++;
        rc = put_fixed(x, col, &bit, sizeof(bit));
        break;
    }
    case OP_INT32: {
        if (read_int(x, &v)) { rc = -1; break; }
        int32_t i = (int32_t)v;
        rc = put_fixed(x, col, &i, sizeof(i));
        break;
    }
    case OP_INT64:
        if (a ? read_int(x, &v) : read_long(x, &v)) { rc = -1; break; }
        rc = put_fixed(x, col, &v, sizeof(v));
        break;
    case OP_TO_F32: {
        if (a ? read_int(x, &v) : read_long(x, &v)) { rc = -1; break; }
        float f = (float)(double)v;
        rc = put_fixed(x, col, &f, sizeof(f));
        break;
    }
    case OP_TO_F64: {
        if (a ? read_int(x, &v) : read_long(x, &v)) { rc = -1; break; }
        double d = (double)v;
        rc = put_fixed(x, col, &d, sizeof(d));
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
            rc = put_fixed(x, col, &back, sizeof(back));
        } else {
            rc = put_fixed(x, col, &d, sizeof(d));
        }
        break;
    }
    case OP_F64: {
        if (x->end - x->p < 8) { rc = -1; break; }
        double d;
        memcpy(&d, x->p, 8);
        x->p += 8;
        rc = put_fixed(x, col, &d, sizeof(d));
        break;
    }
    case OP_BYTES: {
        const uint8_t *s;
        int64_t len;
        if (read_blob(x, &s, &len) || (a && !utf8_ok(s, len))) { rc = -1; break; }
        rc = put_var(x, col, s, len);
        break;
    }
    case OP_FIXED:
        if (x->end - x->p < a) { rc = -1; break; }
        rc = put_var(x, col, x->p, a);
        x->p += a;
        break;
    case OP_ENUM: {
        const uint8_t *s;
        int64_t len;
        if (read_long(x, &v) || enum_symbol(x, a, v, &s, &len)) { rc = -1; break; }
        rc = put_var(x, col, s, len);
        break;
    }
    case OP_DATE: {
        /* datetime.date.fromordinal(days + 719163): ordinals 1 .. 3652059 */
        if (read_long(x, &v) || v < -719162 || v > 2932896) { rc = -1; break; }
        int32_t d = (int32_t)v;
        rc = put_fixed(x, col, &d, sizeof(d));
        break;
    }
    case OP_TIMESTAMP: {
        /* epoch + timedelta(microseconds=...): datetime's years 1 .. 9999 */
        const int64_t lo = -62135596800000000LL, hi = 253402300799999999LL;
        if (read_long(x, &v) || v < lo / a || v > hi / a) { rc = -1; break; }
        int64_t us = v * a;
        if (us < lo || us > hi) { rc = -1; break; }
        rc = put_fixed(x, col, &us, sizeof(us));
        break;
    }
    case OP_TIME: {
        if (read_long(x, &v) || v < 0 || v >= (int64_t)a * 86400000LL) { rc = -1; break; }
        if (a == 1) {
            int32_t t = (int32_t)v;
            rc = put_fixed(x, col, &t, sizeof(t));
        } else {
            rc = put_fixed(x, col, &v, sizeof(v));
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
        rc = put_fixed(x, col, &u, sizeof(u));
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
        rc = put_var(x, col, out, 36);
        break;
    }
    case OP_DEFAULT: {
        int64_t k = ((int64_t)(uint32_t)c << 32) | (uint32_t)nd[5];
        switch (a) {
        case DEF_NULL:
            rc = col_null(x, col);
            break;
        case DEF_BOOL: {
            uint8_t bit = (uint8_t)(k != 0);
            rc = put_fixed(x, col, &bit, sizeof(bit));
            break;
        }
        case DEF_I32: {
            int32_t i = (int32_t)k;
            rc = put_fixed(x, col, &i, sizeof(i));
            break;
        }
        case DEF_I64:
            rc = put_fixed(x, col, &k, sizeof(k));
            break;
        case DEF_F32:
        case DEF_F64:
        case DEF_BYTES: {
            PyObject *cb = PyTuple_GET_ITEM(g->consts, b);
            const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(cb);
            if (a == DEF_BYTES) rc = put_var(x, col, s, PyBytes_GET_SIZE(cb));
            else rc = put_fixed(x, col, s, x->cols[col].width);
            break;
        }
        case DEF_EMPTY: {
            Col *lc = &x->cols[col];
            rc = list_close(x, lc, lc->offs[lc->n]);
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

static inline int step(Ctx *x, int node) {
    if (node < 0 || node >= x->prog->nnodes) return -1;
    const int32_t *nd = node_at(x->prog, node);
    return IS_LEAF(nd[0]) ? leaf(x, nd) : run(x, node);
}

static int run(Ctx *x, int node) {
    const Program *g = x->prog;
    if (node < 0 || node >= g->nnodes) return -1;
    const int32_t *nd = node_at(g, node);
    int op = nd[0], col = nd[1], a = nd[2], b = nd[3], c = nd[4];
    int64_t v;
    if (IS_LEAF(op)) return leaf(x, nd);
    if (++x->depth > MAX_DEPTH) return -1;
    int rc = 0;
    switch (op) {
    case OP_RECORD:
        if (put_struct(x, col)) { rc = -1; break; }
        rc = run_kids(x, a, b);
        break;
    case OP_ARRAY: {
        Col *lc = &x->cols[col];
        Col *item = &x->cols[lc->child[0]];
        int64_t count;
        for (;;) {
            if (block_count(x, &count)) { rc = -1; break; }
            if (count == 0) break;
            for (int64_t i = 0; i < count && !rc; i++) rc = step(x, a);
            if (rc) break;
        }
        if (rc) break;
        rc = list_close(x, lc, item->n);
        break;
    }
    case OP_MAP: {
        Col *mc = &x->cols[col];
        Col *keys = &x->cols[b];
        int64_t first = keys->n, count;
        for (;;) {
            if (block_count(x, &count)) { rc = -1; break; }
            if (count == 0) break;
            for (int64_t i = 0; i < count && !rc; i++) {
                const uint8_t *s;
                int64_t len;
                if (read_blob(x, &s, &len) || !utf8_ok(s, len) || put_struct(x, a) ||
                    put_var(x, b, s, len) || step(x, c))
                    rc = -1;
            }
            if (rc) break;
        }
        if (rc || keys_repeat(x, keys, first)) { rc = -1; break; }
        rc = list_close(x, mc, x->cols[a].n);
        break;
    }
    case OP_UNION:
        if (read_long(x, &v) || v < 0 || v >= b) { rc = -1; break; }
        rc = step(x, g->kids[a + v]);
        break;
    case OP_MEMBER: {
        Col *sc = &x->cols[col];
        if (put_struct(x, col)) { rc = -1; break; }
        for (int i = 0; i < sc->nchild && !rc; i++)
            rc = (i == a) ? step(x, b) : col_null(x, sc->child[i]);
        break;
    }
    case OP_SKIP_RECORD:
        rc = run_kids(x, a, b);
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
    .tp_name = "kafka_format.registry._avrocolumns.Buffer",
    .tp_doc = "Column memory of one decode call (read-only buffer protocol).",
    .tp_basicsize = sizeof(BufObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Buf_dealloc,
    .tp_as_buffer = &Buf_as_buffer,
};

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

/* Whether node nd writes a column of the kind and width its op needs (programs come from
 * avro_columns.py; a wrong one must fail here, never write past a buffer). */
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

PyDoc_STRVAR(decode_doc,
"decode(programs, cols, root, data, offsets, wide, first, n, validity, keys, slots)\n"
"    -> (columns, status, ids)\n\n"
"Rows first .. first+n of an Arrow binary array (data, offsets: int32, or int64 when wide,\n"
"validity: its bitmap or None), each a Schema Registry wire-format value: magic 0, a 4-byte\n"
"big-endian schema id, the Avro payload.  keys/slots: int32 bytes, the schema ids with a\n"
"program and the index of that program in programs (tuple of (nodes, kids, consts)).\n"
"cols: tuple of (kind, width, children, per_row); root: the column of a row's value.\n"
"columns: per column (length, validity or None when every slot is valid, data or None,\n"
"offsets or None), each a buffer (zero-copy); status: one byte per row (ST_*; every row but\n"
"ST_OK is null in columns); ids: int32 per row, the schema id (-1 without a header).");

static PyObject *ac_decode(PyObject *self, PyObject *args) {
    PyObject *programs, *spec, *validity_obj;
    int root, wide;
    Py_ssize_t first, rows;
    Py_buffer data = {0}, offsets = {0}, validity = {0}, keys = {0}, slots = {0};
    PyObject *result = NULL;
    Program *gs = NULL;
    Col *cols = NULL;
    int ncols = 0;
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
    ng = PyTuple_GET_SIZE(programs);
    gs = calloc((size_t)(ng ? ng : 1), sizeof(Program));
    if (!gs) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < ng; i++) {
        PyObject *nodes, *kids, *consts;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(programs, i), "SSO!", &nodes, &kids, &PyTuple_Type, &consts))
            goto done;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(consts); j++)
            if (!PyBytes_Check(PyTuple_GET_ITEM(consts, j))) {
                PyErr_SetString(PyExc_TypeError, "consts must be bytes");
                goto done;
            }
        gs[i].nodes = (const int32_t *)PyBytes_AS_STRING(nodes);
        gs[i].nnodes = PyBytes_GET_SIZE(nodes) / (4 * NODE_INTS);
        gs[i].kids = (const int32_t *)PyBytes_AS_STRING(kids);
        gs[i].nkids = PyBytes_GET_SIZE(kids) / 4;
        gs[i].consts = consts;
        /* every column, kid and const index a node names must exist */
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
            if (!col_fits(cols, op, nd, consts)) goto bad_program;
        }
        for (Py_ssize_t k = 0; k < gs[i].nkids; k++)
            if (gs[i].kids[k] < 0 || gs[i].kids[k] >= gs[i].nnodes) goto bad_program;
        continue;
    bad_program:
        PyErr_SetString(PyExc_ValueError, "malformed Avro column program");
        goto done;
    }
    for (int k = 0; k < ncols; k++) {          /* one slot per row: no regrowth for those columns */
        Col *c = &cols[k];
        if (!c->per_row || rows == 0) continue;
        int64_t need = rows + 1;
        if ((c->kind == K_FIXED && grow((void **)&c->data, &c->dcap, need * c->width, 1)) ||
            ((c->kind == K_VAR || c->kind == K_LIST) && grow((void **)&c->offs, &c->ocap, need + 1, 4))) {
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
    Ctx x = {.cols = cols, .ncols = ncols};
    Py_BEGIN_ALLOW_THREADS
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
        uint8_t state = ST_OK;
        int32_t gi = -1;
        if (bits && !((bits[i >> 3] >> (i & 7)) & 1)) {
            state = ST_NULL;
        } else if (st < 0 || en < st || en > data.len) {
            state = ST_BAD_OFFSETS;
        } else if (en - st < WIRE_HEADER) {
            state = ST_SHORT;
        } else if (base[st] != 0) {
            state = ST_BAD_MAGIC;
        } else {
            uint32_t id = ((uint32_t)base[st + 1] << 24) | ((uint32_t)base[st + 2] << 16) |
                          ((uint32_t)base[st + 3] << 8) | base[st + 4];
            ids[r] = (int32_t)id;
            for (Py_ssize_t k = 0; k < nkeys; k++)
                if (key[k] == (int32_t)id) { gi = slot[k]; break; }
            if (gi < 0 || gi >= ng) state = ST_NO_PROGRAM;
        }
        if (state != ST_OK) {
            status[r] = state;
            if (col_null(&x, root)) break;
            continue;
        }
        for (int k = 0; k < ncols; k++) {
            snap[2 * k] = cols[k].n;
            snap[2 * k + 1] = cols[k].dlen;
        }
        x.p = base + st + WIRE_HEADER;
        x.end = base + en;
        x.prog = &gs[gi];
        x.depth = 0;
        if (run(&x, 0)) {
            for (int k = 0; k < ncols; k++) {
                cols[k].n = snap[2 * k];
                cols[k].dlen = snap[2 * k + 1];
            }
            status[r] = ST_FAILED;
            if (col_null(&x, root)) break;
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
        PyObject *offsets = c->offs ? take_buffer((void **)&c->offs, 4 * (c->n + 1)) : (Py_INCREF(Py_None), Py_None);
        PyObject *t = (valid && values && offsets) ? Py_BuildValue("(LNNN)", (long long)c->n, valid, values, offsets)
                                                   : NULL;
        if (!t) {
            Py_XDECREF(valid);
            Py_XDECREF(values);
            Py_XDECREF(offsets);
            Py_DECREF(out);
            goto done;
        }
        PyTuple_SET_ITEM(out, k, t);
    }
    result = Py_BuildValue("(NNN)", out, take_buffer((void **)&status, rows),
                           take_buffer((void **)&ids, 4 * (int64_t)rows));

done:
    free(gs);
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
    if (PyType_Ready(&BufType) < 0) return NULL;
    return PyModule_Create(&ac_module);
}
