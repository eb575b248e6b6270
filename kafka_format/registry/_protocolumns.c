/*
 * kafka_format.registry._protocolumns: Protobuf payloads decoded straight into Arrow column buffers.
 *
 * One entry point, one C call per Arrow batch (never per record): decode(...) of _columns.h.
 * A *program* is the table (reader) message compiled by kafka_format/registry/proto_columns.py
 * against the table type's columns, plus the message-index path that names the table message in
 * one writer schema (made once per schema id): a flat array of nodes (eight int32 each), a
 * child-index array and a tuple of constant byte strings (field-number dispatch tables, enum
 * names, defaults).  The payload after the wire header is Confluent's message-index list
 * (MessageIndexes: a zigzag varint count, then that many zigzag varint indexes; count 0 means
 * [0]), then the message, parsed with the table's message as upb parses it in the reference
 * (registry/protobuf.py):
 *
 *   - fields by number; a field whose wire type is not its type's is an unknown field; unknown
 *     fields are skipped (varint, 64-bit, length-delimited, 32-bit);
 *   - a singular scalar or string keeps its last value; a singular message merges every
 *     occurrence (parsed here as the concatenation of its occurrences, which is what merging
 *     is); setting a oneof member clears the others;
 *   - repeated scalars packed or not, in wire order; map entries (key 1, value 2, defaults when
 *     absent; an entry with an unknown field of its own is not inserted); enums as their value names, an unknown number of an open enum as its decimal text;
 *   - uint32/fixed32 as int64, uint64/fixed64 as decimal(20, 0), float through double, bool as
 *     varint != 0, google.protobuf.Timestamp as microseconds (nanos // 1000) in datetime's range;
 *   - a field with presence is null when absent, any other field its default.
 *
 * Scalars, strings and repeated fields are written to their columns as they come (every field owns
 * its own columns, so order between fields does not matter); a singular one that comes again, or a
 * oneof member another one clears, has its slot taken back first.  The message's *frame* keeps
 * which fields came and where a singular message's occurrences are; when the message ends, those
 * are read, absent fields get their null or default and lists are closed, in declared order
 * (the struct's).  A Timestamp's two fields stay in the frame: they make one value.  The fields
 * of a message usually come in number order, each in its wire type: the next one is tried first,
 * by one compare of its tag.
 *
 * The fast path is conservative: whatever it is not sure decodes exactly as the reference
 * (invalid UTF-8, a group, an unknown value of a closed enum, an unknown field in a map entry, a
 * oneof message member cleared by another member, a map key twice, a field number in an extension
 * range, a varint whose 10th byte carries more than one bit, a timestamp outside datetime's range,
 * a message index path other than the table message's, anything malformed) makes the row *fail*:
 * its output is rolled back and the reference decodes it and words its error.
 */
#include "_columns.h"

#include <stdio.h>

/* ------------------------------------------------------------------ ops (proto_columns.P_*) */
enum {
    P_MSG = 0,      /* message: col struct (or ts), a: first field kid, b: fields, c: dispatch const,
                       d: extension ranges const or -1, e: oneofs, f: flags (M_*) */
    P_INT32,        /* varint -> int32 (low 32 bits) */
    P_INT64,        /* varint -> int64 */
    P_UINT32,       /* varint -> low 32 bits unsigned, int64 column */
    P_UINT64,       /* varint -> unsigned, decimal128 column */
    P_SINT32,       /* zigzag varint (low 32 bits) -> int32 */
    P_SINT64,       /* zigzag varint -> int64 */
    P_FIXED32,      /* 4 bytes unsigned -> int64 */
    P_FIXED64,      /* 8 bytes unsigned -> decimal128 */
    P_SFIXED32,     /* 4 bytes -> int32 */
    P_SFIXED64,     /* 8 bytes -> int64 */
    P_FLOAT,        /* 4 bytes -> float32 (through double, as Python) */
    P_DOUBLE,       /* 8 bytes -> float64 */
    P_BOOL,         /* varint != 0 -> bool */
    P_STRING,       /* length-delimited UTF-8 -> string */
    P_BYTES,        /* length-delimited -> binary */
    P_ENUM,         /* varint -> int32 -> name (const child) */
    P_MESSAGE,      /* length-delimited message (node child) -> struct */
    P_TIMESTAMP,    /* length-delimited google.protobuf.Timestamp (node child) -> int64 us */
    P_MAP,          /* length-delimited map entry (node child) -> entries struct */
    P_FAIL,         /* a field the fast path does not take (a group): the row fails when it appears */
    P_COUNT
};
/* field node: op, col (the value's column: the item's for repeated fields and maps), list col
 * or -1, flags (F_*), child (message node, or enum const), oneof or -1, default const or -1, number */
enum { F_REPEATED = 1, F_PRESENCE = 2, F_CLOSED = 4 };
enum { M_TIMESTAMP = 1, M_ENTRY = 2 };  /* M_ENTRY: a map entry (one with an unknown field is
                                            * not inserted: upb keeps its bytes as unknown) */
#define NODE_INTS 8
/* A field as scan reads it: its node, then [8] the tag it comes with (number << 3 | its type's
 * wire type) and [9] how a value that comes with that tag, in number order, is read (Q_*). */
#define FIELD_INTS 10
enum {
    Q_NONE = 0,     /* scan's general path */
    Q_VALUE,        /* a singular scalar or string outside any oneof (not a Timestamp's): written */
    Q_ITEM,         /* an element of a repeated field in its own wire type (not packed) */
};
#define MAX_DEPTH 64
#define DENSE_MAX 4096

typedef struct {
    const int32_t *nodes;
    Py_ssize_t nnodes;
    const int32_t *kids;
    Py_ssize_t nkids;
    PyObject *consts;              /* tuple of bytes */
    const int32_t *path;           /* the table message's index path in the writer schema */
    Py_ssize_t npath;              /* -1: the writer schema has no such message */
    int64_t slots, oneofs;         /* frame stack sizes: every message's fields and oneofs */
    int32_t *fields;               /* the nodes of kids in kids' order, FIELD_INTS each (a message's
                                    * field i at fields[(a + i) * FIELD_INTS]): the node's eight ints,
                                    * its tag and its quick kind (Q_*) */
} Program;

/* A singular field's state in its message's frame: present when its stamp is the message's (a
 * number no other message of the call has: frames need no clearing). */
typedef struct {
    uint64_t v;                    /* a Timestamp's seconds or nanos (bits) */
    uint64_t stamp;                /* the message's when present (a scalar or string: its slot is written) */
    int32_t head, tail;            /* message: its occurrences (ranges), first and last (when set) */
} Slot;

typedef struct {
    const uint8_t *p;
    int64_t len;
    int32_t next;
} Range;

typedef struct {
    Cols *c;
    const Program *g;
    Slot *slots;                   /* frame stack */
    int64_t top;
    int32_t *act;                  /* active member per oneof, per frame */
    int64_t atop;
    Range *ranges;
    int64_t nranges, rcap;
    int depth;
    uint64_t stamp;                /* the last message's stamp (the call's messages count up from 1) */
} Ctx;

static inline const int32_t *node_at(const Program *g, int node) {
    return g->nodes + (Py_ssize_t)node * NODE_INTS;
}

/* Field i of message node m (program_ok checked m's kids). */
static inline const int32_t *field_at(const Program *g, const int32_t *m, int i) {
    return g->fields + ((Py_ssize_t)m[2] + i) * FIELD_INTS;
}

static inline const uint8_t *const_at(const Program *g, int i, Py_ssize_t *size) {
    PyObject *b = PyTuple_GET_ITEM(g->consts, i);
    *size = PyBytes_GET_SIZE(b);
    return (const uint8_t *)PyBytes_AS_STRING(b);
}

/* ------------------------------------------------------------------ wire readers */
/* A varint of at most 10 bytes whose 10th byte holds at most the 64th bit (upb takes more bits
 * and drops them: left to it). */
HOT int read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    if (p < end && !(*p & 0x80)) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        if (shift == 63 && b > 1) return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A tag: a varint of at most 5 bytes below 2**32. */
HOT int read_tag(const uint8_t **pp, const uint8_t *end, uint32_t *out) {
    const uint8_t *p = *pp;
    if (p < end && !(*p & 0x80)) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (v > UINT32_MAX) return -1;
            *out = (uint32_t)v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

HOT int read_len(const uint8_t **pp, const uint8_t *end, const uint8_t **s, int64_t *len) {
    uint64_t n;
    if (read_varint(pp, end, &n) || n > (uint64_t)(end - *pp)) return -1;
    *s = *pp;
    *len = (int64_t)n;
    *pp += n;
    return 0;
}

static int skip_unknown(const uint8_t **pp, const uint8_t *end, int wt) {
    uint64_t v;
    const uint8_t *s;
    int64_t len;
    switch (wt) {
    case 0: return read_varint(pp, end, &v);
    case 1: if (end - *pp < 8) return -1; *pp += 8; return 0;
    case 2: return read_len(pp, end, &s, &len);
    case 5: if (end - *pp < 4) return -1; *pp += 4; return 0;
    default: return -1;            /* groups (3, 4) are left to upb; 6 and 7 are malformed */
    }
}

/* The wire type of each field kind (a table: no branch on the hot path); P_FAIL has none. */
static const int8_t WIRE_TYPE[P_COUNT] = {
    [P_INT32] = 0, [P_INT64] = 0, [P_UINT32] = 0, [P_UINT64] = 0, [P_SINT32] = 0, [P_SINT64] = 0,
    [P_FIXED32] = 5, [P_FIXED64] = 1, [P_SFIXED32] = 5, [P_SFIXED64] = 1, [P_FLOAT] = 5, [P_DOUBLE] = 1,
    [P_BOOL] = 0, [P_STRING] = 2, [P_BYTES] = 2, [P_ENUM] = 0, [P_MESSAGE] = 2, [P_TIMESTAMP] = 2,
    [P_MAP] = 2, [P_FAIL] = -1,
};

static inline int wire_type(int op) {
    return WIRE_TYPE[op];                  /* op < P_COUNT: program_ok checked every node */
}

/* ------------------------------------------------------------------ values */
/* The name of enum number v: const = int32 n, then n (number, start, length) sorted by number,
 * then the names' text. 1: found; 0: not a value of the enum. */
HOT int enum_name(const Program *g, int ci, int32_t v, const uint8_t **s, int64_t *len) {
    Py_ssize_t size;
    const uint8_t *raw = const_at(g, ci, &size);
    int32_t n;
    memcpy(&n, raw, 4);
    const uint8_t *tab = raw + 4, *text = raw + 4 + 12 * (Py_ssize_t)n;
    int32_t lo = 0, hi = n - 1, num;
    if (v >= 0 && v < n) {                 /* the usual numbering 0, 1, 2 ...: entry v is v */
        memcpy(&num, tab + 12 * (Py_ssize_t)v, 4);
        if (num == v) lo = hi = v;
    }
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2, start, length;
        memcpy(&num, tab + 12 * mid, 4);
        if (num == v) {
            memcpy(&start, tab + 12 * mid + 4, 4);
            memcpy(&length, tab + 12 * mid + 8, 4);
            *s = text + start;
            *len = length;
            return 1;
        }
        if (num < v) lo = mid + 1;
        else hi = mid - 1;
    }
    return 0;
}

/* An enum number the enum does not name: for an open enum its decimal text. */
static __attribute__((noinline)) int put_unnamed_enum(Ctx *x, const int32_t *nd, int col, int32_t v) {
    if (nd[3] & F_CLOSED) return -1;       /* upb keeps it as an unknown field: left to it */
    char buf[16];
    int k = snprintf(buf, sizeof buf, "%d", (int)v);
    return put_var(x->c, col, (const uint8_t *)buf, k);
}

/* Append an enum value: its name, or for an open enum the number's decimal text. */
HOT int put_enum(Ctx *x, const int32_t *nd, int col, uint64_t raw) {
    int32_t v = (int32_t)(uint32_t)raw;
    const uint8_t *s;
    int64_t len;
    if (enum_name(x->g, nd[4], v, &s, &len)) return put_var(x->c, col, s, len);
    return put_unnamed_enum(x, nd, col, v);
}

/* A scalar of kind op whose wire value is v (varint or fixed bits) into column col. */
HOT int put_scalar(Ctx *x, const int32_t *nd, int op, int col, uint64_t v) {
    switch (op) {
    case P_INT32: case P_SFIXED32: {
        int32_t i = (int32_t)(uint32_t)v;
        return put_fixed(x->c, col, &i, 4);
    }
    case P_SINT32: {
        uint32_t u = (uint32_t)v;
        int32_t i = (int32_t)((u >> 1) ^ (0u - (u & 1)));
        return put_fixed(x->c, col, &i, 4);
    }
    case P_INT64: case P_SFIXED64:
        return put_fixed(x->c, col, &v, 8);
    case P_SINT64: {
        int64_t i = (int64_t)((v >> 1) ^ (0ULL - (v & 1)));
        return put_fixed(x->c, col, &i, 8);
    }
    case P_UINT32: case P_FIXED32: {
        int64_t i = (int64_t)(uint32_t)v;
        return put_fixed(x->c, col, &i, 8);
    }
    case P_UINT64: case P_FIXED64: {
        __int128 d = (__int128)(unsigned __int128)v;
        return put_fixed(x->c, col, &d, 16);
    }
    case P_FLOAT: {
        uint32_t b = (uint32_t)v;
        float f;
        memcpy(&f, &b, 4);
        float back = (float)(double)f;
        return put_fixed(x->c, col, &back, 4);
    }
    case P_DOUBLE:
        return put_fixed(x->c, col, &v, 8);
    case P_BOOL: {
        uint8_t b = v != 0;
        return put_fixed(x->c, col, &b, 1);
    }
    case P_ENUM:
        return put_enum(x, nd, col, v);
    default:
        return -1;
    }
}

/* Read one scalar of kind op (its own wire type) at *pp. */
HOT int read_scalar(const uint8_t **pp, const uint8_t *end, int op, uint64_t *v) {
    switch (wire_type(op)) {
    case 0:
        return read_varint(pp, end, v);
    case 1:
        if (end - *pp < 8) return -1;
        memcpy(v, *pp, 8);
        *pp += 8;
        return 0;
    case 5: {
        uint32_t w;
        if (end - *pp < 4) return -1;
        memcpy(&w, *pp, 4);
        *v = w;
        *pp += 4;
        return 0;
    }
    default:
        return -1;
    }
}

/* ------------------------------------------------------------------ messages */
static int message(Ctx *x, int node, int32_t head, const uint8_t *p, int64_t len);

/* The field index of number fn in message node m (-1: unknown). */
HOT int dispatch(const Program *g, const int32_t *m, uint32_t fn) {
    Py_ssize_t size;
    const uint8_t *raw = const_at(g, m[4], &size);
    int32_t mode, n;
    memcpy(&mode, raw, 4);
    memcpy(&n, raw + 4, 4);
    if (mode == 0) {                       /* dense: n entries, index by number */
        if (fn >= (uint32_t)n) return -1;
        int32_t i;
        memcpy(&i, raw + 8 + 4 * (Py_ssize_t)fn, 4);
        return i;
    }
    int32_t lo = 0, hi = n - 1;            /* sorted (number, index) pairs */
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2, num, i;
        memcpy(&num, raw + 8 + 8 * (Py_ssize_t)mid, 4);
        if ((uint32_t)num == fn) {
            memcpy(&i, raw + 12 + 8 * (Py_ssize_t)mid, 4);
            return i;
        }
        if ((uint32_t)num < fn) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int in_extension_range(const Program *g, const int32_t *m, uint32_t fn) {
    if (m[5] < 0) return 0;
    Py_ssize_t size;
    const uint8_t *raw = const_at(g, m[5], &size);
    for (Py_ssize_t k = 0; k + 8 <= size; k += 8) {
        int32_t a, b;
        memcpy(&a, raw + k, 4);
        memcpy(&b, raw + k + 4, 4);
        if ((int64_t)fn >= a && (int64_t)fn < b) return 1;
    }
    return 0;
}

/* A scalar or string of field nd (in its own wire type) at *pp, appended to its column. */
HOT int read_value(Ctx *x, const int32_t *nd, const uint8_t **pp, const uint8_t *end) {
    int op = nd[0];
    if (op == P_STRING || op == P_BYTES) {
        const uint8_t *s;
        int64_t len;
        if (read_len(pp, end, &s, &len) || (op == P_STRING && !utf8_ok(s, len))) return -1;
        return put_var(x->c, nd[1], s, len);
    }
    uint64_t v;
    if (read_scalar(pp, end, op, &v)) return -1;
    return put_scalar(x, nd, op, nd[1], v);
}

/* One element of a repeated field (or map entry) that arrived with its own wire type. */
HOT int repeated_value(Ctx *x, const int32_t *nd, const uint8_t **pp, const uint8_t *end) {
    int op = nd[0];
    if (op == P_MESSAGE || op == P_TIMESTAMP || op == P_MAP) {
        const uint8_t *s;
        int64_t len;
        if (read_len(pp, end, &s, &len)) return -1;
        return message(x, nd[4], -1, s, len);
    }
    return read_value(x, nd, pp, end);
}

/* Packed elements of a repeated scalar field: the length-delimited block at *pp. */
static int packed(Ctx *x, const int32_t *nd, const uint8_t **pp, const uint8_t *end) {
    const uint8_t *s;
    int64_t len;
    uint64_t v;
    if (read_len(pp, end, &s, &len)) return -1;
    const uint8_t *q = s, *qe = s + len;
    int op = nd[0], col = nd[1];
    while (q < qe) {
        if (read_scalar(&q, qe, op, &v) || put_scalar(x, nd, op, col, v)) return -1;
    }
    return 0;
}

/* Whether field kind op can be packed (numeric scalars, bools and enums). */
static inline int packable(int op) {
    return op >= P_INT32 && op <= P_ENUM && op != P_STRING && op != P_BYTES;
}

/* Take back the last slot of a fixed or variable-width column: a singular field's value that
 * another replaces (the field came again, or a oneof member cleared it). */
HOT void drop_last(Cols *x, int ci) {
    Col *c = &x->cols[ci];
    if (c->n <= 0) return;                 /* never: the field's value was written */
    c->n -= 1;
    if (c->kind == K_VAR) c->dlen = c->offs[c->n];
}

/* Read the bytes [p, end) of a message of node `node`: values to their columns, the frame told
 * which came (a Timestamp's values kept in it). */
static int scan(Ctx *x, const int32_t *m, Slot *f, uint64_t st, int32_t *act, const uint8_t *p, const uint8_t *end) {
    const Program *g = x->g;
    int nf = m[3], hint = 0;               /* the field expected next: writers go in number order */
    int direct = !(m[7] & M_TIMESTAMP);
    int quick = direct ? nf : 0;           /* a Timestamp's fields stay in the frame */
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag)) return -1;
        if (hint < quick) {                /* the usual field: the next one, in its wire type */
            const int32_t *nd = field_at(g, m, hint);
            if ((uint32_t)nd[8] == tag && nd[9] == Q_VALUE) {
                if (f[hint].stamp == st) drop_last(x->c, nd[1]);      /* the last value counts */
                if (read_value(x, nd, &p, end)) return -1;
                f[hint++].stamp = st;
                continue;
            }
            if ((uint32_t)nd[8] == tag && nd[9] == Q_ITEM) {
                if (repeated_value(x, nd, &p, end)) return -1;
                continue;
            }
        }
        uint32_t fn = tag >> 3;
        int wt = (int)(tag & 7);
        if (fn == 0) return -1;
        int i;
        if (hint < nf && (uint32_t)field_at(g, m, hint)[7] == fn) {
            i = hint;                      /* numbers are unique: what dispatch would say */
        } else {
            i = dispatch(g, m, fn);
            if (i < 0) {
                if ((m[7] & M_ENTRY) || in_extension_range(g, m, fn) || skip_unknown(&p, end, wt)) return -1;
                continue;
            }
        }
        const int32_t *nd = field_at(g, m, i);
        int op = nd[0];
        hint = (nd[3] & F_REPEATED) ? i : i + 1;    /* a repeated field's elements come together */
        if (wt != wire_type(op)) {
            if (op == P_FAIL) return -1;
            if ((nd[3] & F_REPEATED) && wt == 2 && packable(op)) {
                if (packed(x, nd, &p, end)) return -1;
                continue;
            }
            if ((m[7] & M_ENTRY) || skip_unknown(&p, end, wt)) return -1;
            continue;
        }
        if (nd[3] & F_REPEATED) {
            if (repeated_value(x, nd, &p, end)) return -1;
            continue;
        }
        Slot *sl = &f[i];
        if (nd[5] >= 0) {                  /* a oneof member: the others are cleared */
            int32_t was = act[nd[5]];
            if (was != i && was >= 0) {
                const int32_t *wd = field_at(g, m, was);
                if (f[was].stamp == st) {
                    if (wd[0] == P_MESSAGE || wd[0] == P_TIMESTAMP) return -1;   /* dropped unread: left to upb */
                    drop_last(x->c, wd[1]);
                }
                f[was].stamp = 0;
            }
            act[nd[5]] = i;
        }
        if (op == P_MESSAGE || op == P_TIMESTAMP) {
            const uint8_t *s;
            int64_t len;
            if (read_len(&p, end, &s, &len)) return -1;
            if (x->nranges >= x->rcap &&
                kc_grow((void **)&x->ranges, &x->rcap, x->nranges + 1, sizeof(Range))) { x->c->oom = 1; return -1; }
            Range *r = &x->ranges[x->nranges];
            r->p = s;
            r->len = len;
            r->next = -1;
            if (sl->stamp != st) sl->head = (int32_t)x->nranges;
            else x->ranges[sl->tail].next = (int32_t)x->nranges;
            sl->tail = (int32_t)x->nranges++;
            sl->stamp = st;
        } else if (!direct) {
            if (read_scalar(&p, end, op, &sl->v)) return -1;
            sl->stamp = st;
        } else {
            if (sl->stamp == st) drop_last(x->c, nd[1]);      /* the last value counts */
            if (read_value(x, nd, &p, end)) return -1;
            sl->stamp = st;
        }
    }
    return 0;
}

/* A field's default (implicit presence, absent): const nd[6] in its column's form, or zeros. */
static int put_default(Ctx *x, const int32_t *nd) {
    int col = nd[1];
    Col *c = &x->c->cols[col];
    if (nd[6] >= 0) {
        Py_ssize_t size;
        const uint8_t *raw = const_at(x->g, nd[6], &size);
        return c->kind == K_VAR ? put_var(x->c, col, raw, size) : put_fixed(x->c, col, raw, c->width);
    }
    if (c->kind == K_VAR) return put_var(x->c, col, NULL, 0);
    static const uint8_t zero[16] = {0};
    return put_fixed(x->c, col, zero, c->width);
}

/* End a message: its struct slot, then per field in declared order: a list closed, a singular
 * message read from its occurrences, an absent field's null or default (the values that came are
 * written already). */
static int emit(Ctx *x, const int32_t *m, const Slot *f, uint64_t st) {
    const Program *g = x->g;
    Cols *c = x->c;
    if (m[7] & M_TIMESTAMP) {              /* seconds (field 0) and nanos (field 1) -> microseconds */
        int64_t secs = f[0].stamp == st ? (int64_t)f[0].v : 0;
        int32_t nanos = f[1].stamp == st ? (int32_t)(uint32_t)f[1].v : 0;
        int64_t q = nanos / 1000;
        if (nanos % 1000 < 0) q -= 1;      /* Python's floor division */
        __int128 us = (__int128)secs * 1000000 + q;
        if (us < -62135596800000000LL || us > 253402300799999999LL) return -1;  /* datetime's years 1 .. 9999 */
        int64_t out = (int64_t)us;
        return put_fixed(c, m[1], &out, 8);
    }
    if (put_struct(c, m[1])) return -1;
    for (int i = 0; i < m[3]; i++) {
        const int32_t *nd = field_at(g, m, i);
        int op = nd[0];
        const Slot *sl = &f[i];
        int rc;
        int came = sl->stamp == st;
        if (came && op != P_MESSAGE && op != P_TIMESTAMP) continue;     /* written when it came */
        if (nd[3] & F_REPEATED) {
            Col *lc = &c->cols[nd[2]];
            Col *item = &c->cols[lc->child[0]];
            if (op == P_MAP && kc_keys_repeat(c, &c->cols[c->cols[nd[1]].child[0]], lc->offs[lc->n])) return -1;
            rc = list_close(c, lc, item->n);
        } else if (op == P_MESSAGE || op == P_TIMESTAMP) {
            if (came) rc = message(x, nd[4], sl->head, NULL, 0);
            else if (nd[3] & F_PRESENCE) rc = put_null(c, nd[1]);
            else rc = message(x, nd[4], -1, NULL, 0);
        } else {                           /* absent (a P_FAIL field always: the row failed where it came) */
            rc = (nd[3] & F_PRESENCE) || op == P_FAIL ? put_null(c, nd[1]) : put_default(x, nd);
        }
        if (rc) return -1;
    }
    return 0;
}

/* Decode one message of node `node`: the chain of ranges from `head` (a merged singular message),
 * or the bytes p[0 .. len) (head -1), into a fresh frame, then write it. */
static int message(Ctx *x, int node, int32_t head, const uint8_t *p, int64_t len) {
    const Program *g = x->g;
    const int32_t *m = node_at(g, node);
    int nf = m[3], no = m[6];
    if (++x->depth > MAX_DEPTH || x->top + nf > g->slots || x->atop + no > g->oneofs) return -1;
    Slot *f = x->slots + x->top;
    int32_t *act = x->act + x->atop;
    uint64_t st = ++x->stamp;
    x->top += nf;
    x->atop += no;
    if (no > 0) memset(act, 0xff, (size_t)no * sizeof(int32_t));     /* -1: no member yet */
    int rc = 0;
    if (head >= 0) {
        for (int32_t ri = head; ri >= 0 && !rc; ri = x->ranges[ri].next) {
            const uint8_t *q = x->ranges[ri].p;    /* read before scan: it may move the ranges */
            rc = scan(x, m, f, st, act, q, q + x->ranges[ri].len);
        }
    } else if (len) {
        rc = scan(x, m, f, st, act, p, p + len);
    }
    if (!rc) rc = emit(x, m, f, st);
    x->top -= nf;
    x->atop -= no;
    x->depth--;
    return rc;
}

/* ------------------------------------------------------------------ the format (_columns.h) */
typedef struct {
    Program *gs;
    Py_ssize_t ng;
    Slot *slots;
    int32_t *act;
    Range *ranges;
    int64_t rcap;
    uint64_t stamp;                /* the last message's stamp, over the call's rows */
} Proto;

/* Message indexes (zigzag varints) at *pp, compared with the program's path. */
static int message_indexes(const Program *g, const uint8_t **pp, const uint8_t *end) {
    uint64_t raw;
    if (read_varint(pp, end, &raw)) return -1;
    int64_t count = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    if (g->npath < 0) return -1;
    if (count == 0) return (g->npath == 1 && g->path[0] == 0) ? 0 : -1;
    if (count != g->npath) return -1;
    for (int64_t k = 0; k < count; k++) {
        if (read_varint(pp, end, &raw)) return -1;
        int64_t v = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        if (v != g->path[k]) return -1;
    }
    return 0;
}

static int proto_row(void *state, Cols *cols, int program, const uint8_t *p, const uint8_t *end) {
    Proto *s = state;
    const Program *g = &s->gs[program];
    if (message_indexes(g, &p, end)) return -1;
    Ctx x = {.c = cols, .g = g, .slots = s->slots, .act = s->act, .ranges = s->ranges, .rcap = s->rcap,
             .stamp = s->stamp};
    int rc = message(&x, 0, -1, p, end - p);
    s->ranges = x.ranges;                  /* grown: kept for the next rows */
    s->rcap = x.rcap;
    s->stamp = x.stamp;
    return rc;
}

static int col_is(const Cols *x, int col, int kind, int width) {
    return col >= 0 && col < x->ncols && x->cols[col].kind == kind && (width == 0 || x->cols[col].width == width);
}

static int const_ok(PyObject *consts, int i, Py_ssize_t min) {
    return i >= 0 && i < PyTuple_GET_SIZE(consts) && PyBytes_GET_SIZE(PyTuple_GET_ITEM(consts, i)) >= min;
}

/* Whether field node nd (of a message whose nodes are checked) fits its columns and consts. */
static int field_ok(const Program *g, const Cols *x, const int32_t *nd, int nfields, int noneofs) {
    int op = nd[0], col = nd[1];
    PyObject *consts = g->consts;
    static const int width[P_COUNT] = {
        [P_INT32] = 4, [P_INT64] = 8, [P_UINT32] = 8, [P_UINT64] = 16, [P_SINT32] = 4, [P_SINT64] = 8,
        [P_FIXED32] = 8, [P_FIXED64] = 16, [P_SFIXED32] = 4, [P_SFIXED64] = 8, [P_FLOAT] = 4,
        [P_DOUBLE] = 8, [P_BOOL] = 1};
    if (op <= P_MSG || op >= P_COUNT || nd[5] < -1 || nd[5] >= noneofs) return 0;
    if (nd[3] & F_REPEATED) {
        if (!col_is(x, nd[2], K_LIST, 0) || x->cols[nd[2]].child[0] != col || nd[5] >= 0) return 0;
    }
    if (op == P_FAIL) return col >= 0 && col < x->ncols;
    if (op == P_STRING || op == P_BYTES || op == P_ENUM) {
        if (!col_is(x, col, K_VAR, 0)) return 0;
        if (op == P_ENUM && !const_ok(consts, nd[4], 4)) return 0;
    } else if (op == P_MESSAGE || op == P_TIMESTAMP || op == P_MAP) {
        if (nd[4] <= 0 || nd[4] >= g->nnodes) return 0;
        const int32_t *m = node_at(g, nd[4]);
        if (m[0] != P_MSG || m[1] != col || ((m[7] & M_TIMESTAMP) != 0) != (op == P_TIMESTAMP)) return 0;
        if (op == P_MAP && (!(nd[3] & F_REPEATED) || x->cols[col].nchild != 2)) return 0;
    } else if (!col_is(x, col, K_FIXED, width[op])) {
        return 0;
    }
    if (nd[6] >= 0) {
        int w = x->cols[col].kind == K_FIXED ? x->cols[col].width : 0;
        if (!const_ok(consts, nd[6], w)) return 0;
    }
    return 1;
}

/* Every node checked against the columns and consts before any runs (programs come from
 * proto_columns.py; a wrong one must fail here, never read or write past a buffer). */
static int program_ok(Program *g, const Cols *x) {
    for (Py_ssize_t k = 0; k < g->nnodes; k++) {
        const int32_t *m = node_at(g, (int)k);
        if (m[0] != P_MSG) continue;
        int nf = m[3], no = m[6];
        if (m[2] < 0 || nf < 0 || no < 0 || (Py_ssize_t)m[2] + nf > g->nkids || !const_ok(g->consts, m[4], 8))
            return 0;
        if (m[5] >= 0 && !const_ok(g->consts, m[5], 0)) return 0;
        if (m[7] & M_TIMESTAMP) {
            if (nf != 2 || !col_is(x, m[1], K_FIXED, 8)) return 0;
        } else if (!col_is(x, m[1], K_STRUCT, 0) || x->cols[m[1]].nchild != nf) {
            return 0;
        }
        g->slots += nf;
        g->oneofs += no;
        Py_ssize_t size;
        const uint8_t *raw = const_at(g, m[4], &size);
        int32_t mode, n;
        memcpy(&mode, raw, 4);
        memcpy(&n, raw + 4, 4);
        if (n < 0 || (mode == 0 && (n > DENSE_MAX || size < 8 + 4 * (Py_ssize_t)n)) ||
            (mode == 1 && size < 8 + 8 * (Py_ssize_t)n) || mode < 0 || mode > 1)
            return 0;
        for (int32_t j = 0; j < n; j++) {      /* every dispatch entry names a field of m */
            int32_t i;
            memcpy(&i, raw + (mode == 0 ? 8 + 4 * (Py_ssize_t)j : 12 + 8 * (Py_ssize_t)j), 4);
            if (i < -1 || i >= nf) return 0;
        }
        for (int i = 0; i < nf; i++) {
            int32_t kid = g->kids[m[2] + i];
            if (kid <= 0 || kid >= g->nnodes) return 0;
            const int32_t *nd = node_at(g, kid);
            if (nd[7] <= 0 || dispatch(g, m, (uint32_t)nd[7]) != i) return 0;   /* scan's hint relies on it */
            if (m[7] & M_TIMESTAMP) {
                if (nd[0] != (i == 0 ? P_INT64 : P_INT32) || nd[3] != 0 || nd[5] != -1) return 0;
                continue;
            }
            if (!field_ok(g, x, nd, nf, no) || x->cols[m[1]].child[i] != (nd[3] & F_REPEATED ? nd[2] : nd[1]))
                return 0;
        }
    }
    for (Py_ssize_t k = 0; k < g->nkids; k++)
        if (g->kids[k] < 0 || g->kids[k] >= g->nnodes) return 0;
    for (Py_ssize_t k = 0; k < g->nnodes; k++) {   /* enum name tables fit their consts */
        const int32_t *nd = node_at(g, (int)k);
        if (nd[0] != P_ENUM) continue;
        Py_ssize_t size;
        const uint8_t *raw = const_at(g, nd[4], &size);
        int32_t n;
        memcpy(&n, raw, 4);
        if (n < 0 || 4 + 12 * (Py_ssize_t)n > size) return 0;
        Py_ssize_t text = size - 4 - 12 * (Py_ssize_t)n;
        for (int32_t j = 0; j < n; j++) {
            int32_t start, length;
            memcpy(&start, raw + 4 + 12 * (Py_ssize_t)j + 4, 4);
            memcpy(&length, raw + 4 + 12 * (Py_ssize_t)j + 8, 4);
            if (start < 0 || length < 0 || (Py_ssize_t)start + length > text) return 0;
        }
    }
    return g->nnodes > 0 && node_at(g, 0)[0] == P_MSG;
}

/* g->fields: every message's fields as scan reads them (FIELD_INTS); -1 when out of memory. */
static int build_fields(Program *g) {
    g->fields = calloc((size_t)(g->nkids ? g->nkids : 1), FIELD_INTS * sizeof(int32_t));
    if (!g->fields) return -1;
    for (Py_ssize_t k = 0; k < g->nnodes; k++) {
        const int32_t *m = node_at(g, (int)k);
        if (m[0] != P_MSG) continue;
        for (int i = 0; i < m[3]; i++) {
            int32_t *fd = g->fields + ((Py_ssize_t)m[2] + i) * FIELD_INTS;
            const int32_t *nd = node_at(g, g->kids[m[2] + i]);
            int op = nd[0], wt = wire_type(op);
            memcpy(fd, nd, NODE_INTS * sizeof(int32_t));
            fd[8] = wt < 0 ? -1 : (int32_t)(((uint32_t)nd[7] << 3) | (uint32_t)wt);
            int value = op >= P_INT32 && op <= P_ENUM;              /* scalars, strings, bytes, enums */
            if (wt < 0) fd[9] = Q_NONE;
            else if (nd[3] & F_REPEATED) fd[9] = Q_ITEM;
            else if (value && nd[5] < 0 && !(m[7] & M_TIMESTAMP)) fd[9] = Q_VALUE;
            else fd[9] = Q_NONE;
        }
    }
    return 0;
}

static void free_programs(Program *gs, Py_ssize_t ng) {
    for (Py_ssize_t i = 0; gs && i < ng; i++) {
        free(gs[i].fields);
    }
    free(gs);
}

static int proto_load(void *state, PyObject *programs, const Cols *x) {
    Proto *s = state;
    Py_ssize_t ng = PyTuple_GET_SIZE(programs);
    int64_t slots = 1, oneofs = 1;
    s->gs = calloc((size_t)(ng ? ng : 1), sizeof(Program));
    if (!s->gs) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < ng; i++) {
        PyObject *nodes, *kids, *consts, *path;
        Program *g = &s->gs[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(programs, i), "SSO!O", &nodes, &kids, &PyTuple_Type, &consts, &path))
            goto fail;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(consts); j++)
            if (!PyBytes_Check(PyTuple_GET_ITEM(consts, j))) {
                PyErr_SetString(PyExc_TypeError, "consts must be bytes");
                goto fail;
            }
        g->nodes = (const int32_t *)PyBytes_AS_STRING(nodes);
        g->nnodes = PyBytes_GET_SIZE(nodes) / (4 * NODE_INTS);
        g->kids = (const int32_t *)PyBytes_AS_STRING(kids);
        g->nkids = PyBytes_GET_SIZE(kids) / 4;
        g->consts = consts;
        if (path == Py_None) {
            g->npath = -1;
        } else if (PyBytes_Check(path)) {
            g->path = (const int32_t *)PyBytes_AS_STRING(path);
            g->npath = PyBytes_GET_SIZE(path) / 4;
        } else {
            PyErr_SetString(PyExc_TypeError, "path must be bytes or None");
            goto fail;
        }
        if (!program_ok(g, x)) {
            PyErr_SetString(PyExc_ValueError, "malformed Protobuf column program");
            goto fail;
        }
        if (build_fields(g)) { PyErr_NoMemory(); goto fail; }
        if (g->slots > slots) slots = g->slots;
        if (g->oneofs > oneofs) oneofs = g->oneofs;
    }
    s->ng = ng;
    s->slots = calloc((size_t)slots, sizeof(Slot));     /* stamp 0: no message's */
    s->act = malloc((size_t)oneofs * sizeof(int32_t));
    if (!s->slots || !s->act) { PyErr_NoMemory(); goto fail; }
    return 0;
fail:
    free_programs(s->gs, ng);
    free(s->slots);
    free(s->act);
    s->gs = NULL;
    s->slots = NULL;
    s->act = NULL;
    return -1;
}

static void proto_release(void *state) {
    Proto *s = state;
    free_programs(s->gs, s->ng);
    free(s->slots);
    free(s->act);
    free(s->ranges);
}

static const Format PROTO = {proto_load, proto_row, proto_release};

PyDoc_STRVAR(decode_doc, KC_DECODE_DOC "\n\nA program: (nodes, kids, consts, path) of proto_columns.Program.");

static PyObject *pc_decode(PyObject *self, PyObject *args) {
    Proto state = {0};
    return kc_decode(args, &PROTO, &state);
}

static PyMethodDef pc_methods[] = {
    {"decode", pc_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef pc_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_format.registry._protocolumns",
    .m_doc = "Protobuf payloads decoded into Arrow column buffers (see proto_columns.py).",
    .m_size = -1,
    .m_methods = pc_methods,
};

PyMODINIT_FUNC PyInit__protocolumns(void) {
    if (kc_ready() < 0) return NULL;
    return PyModule_Create(&pc_module);
}
