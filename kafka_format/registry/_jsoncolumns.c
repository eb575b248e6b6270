/*
 * kafka_format.registry._jsoncolumns: JSON Schema payloads parsed straight into Arrow column buffers.
 *
 * One entry point, one C call per Arrow batch (never per record): decode(...) of _columns.h.
 * A *program* is the table's JSON Schema compiled by kafka_format/registry/json_columns.py against
 * the table type's columns (the same for every writer schema id: the reference fits every payload
 * to the table schema): a flat array of nodes (six int32 each: op, col, a, b, c, d), a
 * child-index array and a tuple of constant byte strings (property-name hash tables).
 *
 * The payload is parsed as Python's json.loads parses it (the _json scanner, strict: RFC 8259
 * plus NaN, Infinity and -Infinity; whitespace is space, tab, CR and LF; control characters in
 * strings are errors; \uXXXX surrogate pairs combine) and fitted to the table type as
 * registry/jsonschema.py fits it: an object with properties -> struct (properties by name,
 * absent ones null, others ignored), additionalProperties -> map, array -> list, string,
 * integer (an integral float too, in the int64 range), number (an int too, as float), boolean;
 * null anywhere is null.
 *
 * The fast path is conservative: whatever it is not sure reads exactly as the reference (a
 * payload that is not strict UTF-8 or starts with a byte-order mark, a value of another type than
 * declared, a declared property or map key twice, a lone surrogate in a value, a number of more
 * than 400 characters or an integer whose float is infinite, a value of a column typed as JSON
 * text, nesting deeper than 64, anything malformed) makes the row *fail*: its output is rolled
 * back and the reference decodes it and words its error.
 */
#include "_columns.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ ops (json_columns.J_*) */
enum {
    J_OBJECT = 0,   /* struct col; a: first property kid, b: properties, c: name table const */
    J_MAP,          /* list col; a: entries struct col, b: key col (string), c: value node */
    J_ARRAY,        /* list col; a: item node */
    J_STRING,       /* string col */
    J_INTEGER,      /* int64 col */
    J_NUMBER,       /* float64 col */
    J_BOOLEAN,      /* bool col */
    J_TEXT,         /* string col holding the value's JSON text: null only (anything else fails) */
    J_COUNT
};
#define NODE_INTS 6
#define MAX_DEPTH 64
#define MAX_NUMBER 400             /* characters of a number literal (Python's int() stops at 4300 digits) */

typedef struct {
    const int32_t *nodes;
    Py_ssize_t nnodes;
    const int32_t *kids;
    Py_ssize_t nkids;
    PyObject *consts;
    int64_t props;                 /* every object's properties (seen flags) */
    int32_t *first;                /* per node: an object's first entry in names (load's) */
    int32_t *names;                /* per property of every object: (start, length) of its name in
                                    * the object's name table text, in declared order (length -1:
                                    * never matched raw) */
} Program;

typedef struct {
    Cols *c;
    const Program *g;
    const uint8_t *p, *end;
    uint8_t *seen;                 /* per object being read: which properties came */
    int64_t stop;
    uint8_t *buf;                  /* unescaped strings */
    int64_t bcap;
    int depth;
} Ctx;

static locale_t c_locale;

static inline const int32_t *node_at(const Program *g, int node) {
    return g->nodes + (Py_ssize_t)node * NODE_INTS;
}

/* ------------------------------------------------------------------ lexing */
/* JSON whitespace; the usual next byte (no whitespace, or the one space json.dumps writes after
 * ',' and ':') decided by its first compare. */
HOT void ws(Ctx *x) {
    const uint8_t *p = x->p, *end = x->end;
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    x->p = p;
}

/* Past byte ch, after any whitespace; 0 when the next byte is another.  The usual case (no
 * whitespace: ch comes at once) takes one compare. */
HOT int expect(Ctx *x, uint8_t ch) {
    if (x->p < x->end && *x->p == ch) {
        x->p++;
        return 1;
    }
    ws(x);
    if (x->p < x->end && *x->p == ch) {
        x->p++;
        return 1;
    }
    return 0;
}

static inline int hex4(const uint8_t *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* The bytes a string's plain ASCII run stops at: its closing quote, a backslash, a control
 * character, a byte of a multi-byte UTF-8 character. */
static const uint8_t STRING_STOP[256] = {
    [0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/* string_span past the plain run: escapes (validated as the _json scanner takes them), control
 * characters, the end of the payload; multi-byte characters checked as strict UTF-8 (the only
 * place a payload may hold them: anywhere else a byte above 0x7f is not JSON). */
static __attribute__((noinline)) int string_rest(Ctx *x, const uint8_t *p, const uint8_t **s, int64_t *len,
                                                 int *esc) {
    const uint8_t *end = x->end;
    int wide = 0;
    for (;;) {
        if (p >= end) return -1;
        uint8_t c = *p;
        if (c == '"') break;
        if (c < 0x20) return -1;
        wide |= c >= 0x80;
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= end) return -1;
            uint8_t e = p[1];
            if (e == 'u') {
                uint32_t u;
                if (end - p < 6 || hex4(p + 2, &u)) return -1;
                p += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) return -1;
            p += 2;
            continue;
        }
        p++;
    }
    *len = p - *s;
    if (wide && !utf8_ok(*s, *len)) return -1;
    x->p = p + 1;
    return 0;
}

/* A string at x->p (after its opening quote): its raw bytes [*s, *s + *len) when it has no escape
 * (*esc = 0); with escapes, *esc = 1 and the caller unescapes.  -1: malformed (strict: no control
 * characters; escapes as the _json scanner takes them).  The plain run is read inline, a byte a
 * table lookup. */
HOT int string_span(Ctx *x, const uint8_t **s, int64_t *len, int *esc) {
    const uint8_t *p = x->p, *end = x->end;
    *s = p;
    *esc = 0;
    while (p < end && !STRING_STOP[*p]) p++;
    if (p < end && *p == '"') {
        *len = p - *s;
        x->p = p + 1;
        return 0;
    }
    return string_rest(x, p, s, len, esc);
}

/* Unescape s[0 .. len) into x->buf as UTF-8.  Returns the length, -1 when malformed or when the
 * text holds a lone surrogate (a str pyarrow refuses: the reference's error; lone ones pass
 * only where the value is skipped, see skip()). */
static int64_t unescape(Ctx *x, const uint8_t *s, int64_t len) {
    if (kc_grow((void **)&x->buf, &x->bcap, len + 4, 1)) { x->c->oom = 1; return -1; }
    uint8_t *o = x->buf;
    int64_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c != '\\') { *o++ = c; i++; continue; }
        uint8_t e = s[i + 1];
        i += 2;
        switch (e) {
        case '"': *o++ = '"'; continue;
        case '\\': *o++ = '\\'; continue;
        case '/': *o++ = '/'; continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        default: break;
        }
        uint32_t u;
        if (hex4(s + i, &u)) return -1;
        i += 4;
        if (u >= 0xd800 && u <= 0xdbff) {
            uint32_t lo;
            if (i + 6 > len || s[i] != '\\' || s[i + 1] != 'u' || hex4(s + i + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
                return -1;                                    /* a lone high surrogate */
            i += 6;
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        } else if (u >= 0xdc00 && u <= 0xdfff) {
            return -1;                                        /* a lone low surrogate */
        }
        if (u < 0x80) {
            *o++ = (uint8_t)u;
        } else if (u < 0x800) {
            *o++ = (uint8_t)(0xc0 | (u >> 6));
            *o++ = (uint8_t)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            *o++ = (uint8_t)(0xe0 | (u >> 12));
            *o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
            *o++ = (uint8_t)(0x80 | (u & 0x3f));
        } else {
            *o++ = (uint8_t)(0xf0 | (u >> 18));
            *o++ = (uint8_t)(0x80 | ((u >> 12) & 0x3f));
            *o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
            *o++ = (uint8_t)(0x80 | (u & 0x3f));
        }
    }
    return o - x->buf;
}

/* A string value (x->p at its opening quote) as UTF-8: *v, *n (into the payload or x->buf). */
HOT int read_string(Ctx *x, const uint8_t **v, int64_t *n) {
    const uint8_t *s;
    int64_t len;
    int esc;
    x->p++;
    if (string_span(x, &s, &len, &esc)) return -1;
    if (!esc) {
        *v = s;
        *n = len;
        return 0;
    }
    int64_t k = unescape(x, s, len);
    if (k < 0) return -1;
    *v = x->buf;
    *n = k;
    return 0;
}

/* A number literal at x->p (the _json scanner's grammar): its span and whether it is an integer
 * (no fraction, no exponent). */
static int number_span(Ctx *x, const uint8_t **s, int64_t *len, int *integer) {
    const uint8_t *p = x->p, *end = x->end;
    *s = p;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return -1;
    }
    *integer = 1;
    if (p + 1 < end && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        p += 2;
        while (p < end && *p >= '0' && *p <= '9') p++;
        *integer = 0;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const uint8_t *q = p + 1;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q < end && *q >= '0' && *q <= '9') {
            while (q < end && *q >= '0' && *q <= '9') q++;
            p = q;
            *integer = 0;
        }
    }
    *len = p - *s;
    if (*len > MAX_NUMBER) return -1;
    x->p = p;
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 5**0 .. 5**27: 5**27 < 2**63. */
static const uint64_t POW5[] = {
    1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL,
    9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL,
    152587890625ULL, 762939453125ULL, 3814697265625ULL, 19073486328125ULL, 95367431640625ULL,
    476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL, 59604644775390625ULL,
    298023223876953125ULL, 1490116119384765625ULL, 7450580596923828125ULL};
#define EXACT_POW 27

static int bit_length128(unsigned __int128 v) {
    uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
    return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* (v + f) * 2**e2 to the nearest double, ties to even, for an integer v > 0 and 0 <= f < 1, where
 * f > 0 exactly when `sticky`: v is cut to 53 bits and rounded by the bits cut and the sticky bit,
 * then scaled by a power of two built from its bits (exact: the callers stay in the normal range). */
static double round_scaled(unsigned __int128 v, int sticky, int e2) {
    int cut = bit_length128(v) - 53;
    uint64_t mant;
    if (cut <= 0) {
        mant = (uint64_t)v;                         /* exact: sticky is 0 here (see the callers) */
    } else {
        unsigned __int128 rest = v & ((((unsigned __int128)1) << cut) - 1);
        unsigned __int128 half = ((unsigned __int128)1) << (cut - 1);
        mant = (uint64_t)(v >> cut);
        if (rest > half || (rest == half && (sticky || (mant & 1)))) mant++;   /* 2**53 is exact too */
        e2 += cut;
    }
    uint64_t bits = (uint64_t)(e2 + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, 8);
    return (double)mant * scale;
}

/* m * 10**e to the nearest double, ties to even, for 0 < m < 2**64 and |e| <= EXACT_POW, in integer
 * arithmetic: m * 5**e exactly (under 2**127) when e >= 0; else m * 2**s / 5**-e, its quotient of 63
 * or 64 bits and whether a remainder is left.  10**e = 5**e * 2**e puts the rest in the exponent.
 * Every result lies between 1e-27 and 1e47: normal doubles. */
static double scaled_exact(uint64_t m, int e) {
    if (e >= 0) return round_scaled((unsigned __int128)m * POW5[e], 0, e);
    uint64_t d = POW5[-e];
    int s = 63 - (64 - __builtin_clzll(m)) + (64 - __builtin_clzll(d));
    unsigned __int128 n = (unsigned __int128)m << s;       /* n / d < 2**64 by the choice of s */
    uint64_t q = (uint64_t)(n / d), r = (uint64_t)(n % d);
    return round_scaled(q, r != 0, e - s);
}

/* The double nearest to a literal (as Python's float(), correctly rounded): exact arithmetic when
 * the digits fit 53 bits and the power of ten 22 (one IEEE operation), or in integers when they fit
 * 19 digits and the power of ten 27 (scaled_exact: the 16-17 digit reprs of computed amounts), else
 * strtod_l in the C locale. */
static double to_double(const uint8_t *s, int64_t len) {
    uint64_t m = 0;
    int digits = 0, frac = 0, neg = 0, ok = 1;
    int64_t i = 0, exp = 0;
    if (s[0] == '-') { neg = 1; i = 1; }
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (m || s[i] != '0') digits++;
        if (digits > 19) ok = 0; else m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (m || s[i] != '0') digits++;
            if (digits > 19) ok = 0; else { m = m * 10 + (uint64_t)(s[i] - '0'); frac++; }
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        i++;
        if (s[i] == '+' || s[i] == '-') { eneg = s[i] == '-'; i++; }
        for (; i < len; i++) {
            exp = exp * 10 + (s[i] - '0');
            if (exp > 100000) { ok = 0; break; }
        }
        if (eneg) exp = -exp;
    }
    exp -= frac;
    if (ok && digits <= 15 && exp >= -22 && exp <= 22) {
        double d = (double)m;                 /* m < 10**15 < 2**53: exact */
        d = exp < 0 ? d / POW10[-exp] : d * POW10[exp];
        return neg ? -d : d;
    }
    if (ok && m && exp >= -EXACT_POW && exp <= EXACT_POW) {
        double d = scaled_exact(m, (int)exp);  /* m < 10**19 < 2**64 */
        return neg ? -d : d;
    }
    char tmp[MAX_NUMBER + 1];
    memcpy(tmp, s, (size_t)len);
    tmp[len] = 0;
    return strtod_l(tmp, NULL, c_locale);
}

/* An integer literal (no fraction or exponent) in the int64 range: 0, or -1 when it is not. */
static int to_int64(const uint8_t *s, int64_t len, int64_t *out) {
    int neg = s[0] == '-';
    uint64_t v = 0;
    for (int64_t i = neg; i < len; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static inline int literal(Ctx *x, const char *word, size_t n) {
    if ((size_t)(x->end - x->p) < n || memcmp(x->p, word, n) != 0) return 0;
    x->p += n;
    return 1;
}

/* ------------------------------------------------------------------ skipping (undeclared properties) */
/* A value read and dropped: validated as json.loads validates it (lone surrogates are fine here). */
static int skip(Ctx *x) {
    const uint8_t *s;
    int64_t len;
    int esc, integer;
    if (x->p >= x->end) return -1;
    if (++x->depth > MAX_DEPTH) return -1;
    int rc = 0;
    switch (*x->p) {
    case '"':
        x->p++;
        rc = string_span(x, &s, &len, &esc);
        break;
    case '{':
        x->p++;
        ws(x);
        if (x->p < x->end && *x->p == '}') { x->p++; break; }
        for (;;) {
            if (x->p >= x->end || *x->p != '"') { rc = -1; break; }
            x->p++;
            if (string_span(x, &s, &len, &esc)) { rc = -1; break; }
            ws(x);
            if (x->p >= x->end || *x->p != ':') { rc = -1; break; }
            x->p++;
            ws(x);
            if (skip(x)) { rc = -1; break; }
            ws(x);
            if (x->p < x->end && *x->p == ',') { x->p++; ws(x); continue; }
            if (x->p < x->end && *x->p == '}') { x->p++; break; }
            rc = -1;
            break;
        }
        break;
    case '[':
        x->p++;
        ws(x);
        if (x->p < x->end && *x->p == ']') { x->p++; break; }
        for (;;) {
            if (skip(x)) { rc = -1; break; }
            ws(x);
            if (x->p < x->end && *x->p == ',') { x->p++; ws(x); continue; }
            if (x->p < x->end && *x->p == ']') { x->p++; break; }
            rc = -1;
            break;
        }
        break;
    case 'n': rc = literal(x, "null", 4) ? 0 : -1; break;
    case 't': rc = literal(x, "true", 4) ? 0 : -1; break;
    case 'f': rc = literal(x, "false", 5) ? 0 : -1; break;
    case 'N': rc = literal(x, "NaN", 3) ? 0 : -1; break;
    case 'I': rc = literal(x, "Infinity", 8) ? 0 : -1; break;
    default:
        if (literal(x, "-Infinity", 9)) break;
        rc = number_span(x, &s, &len, &integer);
    }
    x->depth--;
    return rc;
}

/* ------------------------------------------------------------------ values into columns */
static int value(Ctx *x, int node);
HOT int member(Ctx *x, int node);

/* The names' text of an object node's name table (const ci; its layout: see property()). */
static inline const uint8_t *name_text(const Program *g, int ci) {
    PyObject *b = PyTuple_GET_ITEM(g->consts, ci);
    const uint8_t *raw = (const uint8_t *)PyBytes_AS_STRING(b);
    int32_t cap;
    memcpy(&cap, raw, 4);
    return raw + 4 + 12 * (Py_ssize_t)cap;
}

/* a[0 .. n) == b[0 .. n) for the short strings property names are (no call for them) */
HOT int same(const uint8_t *a, const uint8_t *b, int64_t n) {
    if (n >= 4 && n <= 16) {
        int w = short_word(n);
        return ((word_at(a, w) ^ word_at(b, w)) | (word_at(a + n - w, w) ^ word_at(b + n - w, w))) == 0;
    }
    if (n > 16) return memcmp(a, b, (size_t)n) == 0;
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The property index of name n[0 .. len) in an object node's table (-1: undeclared).  Table:
 * int32 cap (a power of two), cap slots of (start, length, index; index -1: empty), the names'
 * text; FNV-1a 32-bit hash, linear probing (json_columns.py builds it). */
static int property(const Program *g, int ci, const uint8_t *n, int64_t len) {
    PyObject *b = PyTuple_GET_ITEM(g->consts, ci);
    const uint8_t *raw = (const uint8_t *)PyBytes_AS_STRING(b);
    int32_t cap;
    memcpy(&cap, raw, 4);
    const uint8_t *text = raw + 4 + 12 * (Py_ssize_t)cap;
    uint32_t h = 2166136261u;
    for (int64_t i = 0; i < len; i++) h = (h ^ n[i]) * 16777619u;
    for (int32_t k = 0; k < cap; k++) {
        const uint8_t *slot = raw + 4 + 12 * (Py_ssize_t)((h + (uint32_t)k) & (uint32_t)(cap - 1));
        int32_t start, length, index;
        memcpy(&start, slot, 4);
        memcpy(&length, slot + 4, 4);
        memcpy(&index, slot + 8, 4);
        if (index < 0) return -1;
        if (length == len && same(text + start, n, len)) return index;
    }
    return -1;
}

static int object(Ctx *x, const int32_t *nd) {
    const Program *g = x->g;
    Cols *c = x->c;
    int n = nd[3];
    if (x->stop + n > g->props) return -1;
    uint8_t *seen = x->seen + x->stop;
    x->stop += n;
    memset(seen, 0, (size_t)n);
    int rc = put_struct(c, nd[1]);
    const int32_t *names = g->names + 2 * (Py_ssize_t)g->first[(nd - g->nodes) / NODE_INTS];
    const uint8_t *text = name_text(g, nd[4]);
    int next = 0, came = 0;
    x->p++;
    ws(x);
    if (!rc && x->p < x->end && *x->p == '}') {
        x->p++;
    } else {
        while (!rc) {
            const uint8_t *s;
            int64_t len;
            int esc;
            if (!expect(x, '"')) { rc = -1; break; }
            int i;
            int64_t want = next < n ? names[2 * next + 1] : -1;
            if (want >= 0 && x->end - x->p > want + 1 && x->p[want] == '"' && x->p[want + 1] == ':' &&
                same(text + names[2 * next], x->p, want)) {
                i = next;              /* the usual case: the next declared property, spelled plainly, */
                x->p += want + 2;      /* and its colon */
            } else {
                if (string_span(x, &s, &len, &esc)) { rc = -1; break; }
                if (esc) {
                    int64_t k = unescape(x, s, len);
                    i = k < 0 ? -2 : property(g, nd[4], x->buf, k);
                } else {
                    i = property(g, nd[4], s, len);
                }
                if (i == -2 || !expect(x, ':')) { rc = -1; break; }
            }
            ws(x);
            if (i < 0) {
                if (skip(x)) { rc = -1; break; }
            } else {
                if (seen[i]) { rc = -1; break; }   /* twice: Python's dict keeps the last */
                seen[i] = 1;
                came++;
                next = i + 1;
                if (member(x, g->kids[nd[2] + i])) { rc = -1; break; }
            }
            if (expect(x, ',')) continue;             /* the next name's quote: after whitespace */
            if (x->p < x->end && *x->p == '}') { x->p++; break; }
            rc = -1;
        }
    }
    const Col *sc = &c->cols[nd[1]];
    for (int i = 0; i < n && came < n && !rc; i++)
        if (!seen[i]) rc = put_null(c, sc->child[i]);
    x->stop -= n;
    return rc;
}

static int map(Ctx *x, const int32_t *nd) {
    Cols *c = x->c;
    Col *lc = &c->cols[nd[1]], *keys = &c->cols[nd[3]];
    int64_t first = keys->n;
    x->p++;
    ws(x);
    if (x->p < x->end && *x->p == '}') {
        x->p++;
    } else {
        for (;;) {
            const uint8_t *s;
            int64_t len;
            if (x->p >= x->end || *x->p != '"' || read_string(x, &s, &len) || put_struct(c, nd[2]) ||
                put_var(c, nd[3], s, len))
                return -1;
            if (!expect(x, ':')) return -1;
            ws(x);
            if (member(x, nd[4])) return -1;
            if (expect(x, ',')) { ws(x); continue; }
            if (x->p < x->end && *x->p == '}') { x->p++; break; }
            return -1;
        }
    }
    if (kc_keys_repeat(c, keys, first)) return -1;
    return list_close(c, lc, c->cols[nd[2]].n);
}

static int array(Ctx *x, const int32_t *nd) {
    Cols *c = x->c;
    Col *lc = &c->cols[nd[1]];
    x->p++;
    ws(x);
    if (x->p < x->end && *x->p == ']') {
        x->p++;
    } else {
        for (;;) {
            if (member(x, nd[2])) return -1;
            if (expect(x, ',')) { ws(x); continue; }
            if (x->p < x->end && *x->p == ']') { x->p++; break; }
            return -1;
        }
    }
    return list_close(c, lc, c->cols[lc->child[0]].n);
}

/* The usual number literal read in one pass: an integer of at most 18 digits, or a fraction of at
 * most 15 digits in all, with no exponent: *integer, its value in *iv (an integer) or *dv (a
 * fraction), x->p past it.  0 when it is not one of those (x->p unmoved): number_span and
 * to_int64 / to_double read it then, and give the same values for these (m < 10**18 is exact in
 * int64, m < 10**15 exact in a double, and dividing by a power of ten up to 1e15 is to_double's
 * own fast path). */
HOT int quick_number(Ctx *x, int *integer, int64_t *iv, double *dv) {
    const uint8_t *p = x->p, *end = x->end;
    int neg = p < end && *p == '-';
    p += neg;
    if (p >= end || (unsigned)(*p - '0') > 9) return 0;
    const uint8_t *first = p;
    uint64_t m = 0;
    if (*p == '0') {
        p++;
    } else {
        const uint8_t *stop = end - p > 18 ? p + 18 : end;
        while (p < stop && (unsigned)(*p - '0') <= 9) m = m * 10 + (uint64_t)(*p++ - '0');
    }
    int digits = (int)(p - first), frac = 0;
    if (p < end && (unsigned)(*p - '0') <= 9) return 0;          /* a 19th digit (or 0 then a digit) */
    if (p + 1 < end && *p == '.' && (unsigned)(p[1] - '0') <= 9) {
        for (p++; p < end && (unsigned)(*p - '0') <= 9; p++, frac++) {
            if (digits + frac >= 15) return 0;
            m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    x->p = p;
    *integer = frac == 0;
    if (frac == 0) {
        *iv = neg ? -(int64_t)m : (int64_t)m;
    } else {
        double d = (double)m / POW10[frac];
        *dv = neg ? -d : d;
    }
    return 1;
}

/* A float value into an integer or number column (into an integer column: int(v) when it is
 * integral and in the int64 range). */
static int put_float(Ctx *x, const int32_t *nd, double d) {
    if (nd[0] == J_NUMBER) return put_fixed(x->c, nd[1], &d, 8);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d)) return -1;
    int64_t v = (int64_t)d;
    return put_fixed(x->c, nd[1], &v, 8);
}

/* A number quick_number does not take: any other literal of the grammar, NaN and the infinities. */
static __attribute__((noinline)) int other_number(Ctx *x, const int32_t *nd) {
    const uint8_t *s;
    int64_t len;
    int integer;
    double d;
    uint8_t ch = *x->p;                        /* value() checked there is one */
    if (ch != 'N' && ch != 'I' && !(ch == '-' && x->end - x->p > 1 && x->p[1] == 'I')) {
        if (number_span(x, &s, &len, &integer)) return -1;
        if (integer && nd[0] == J_INTEGER) {
            int64_t v;
            if (to_int64(s, len, &v)) return -1;
            return put_fixed(x->c, nd[1], &v, 8);
        }
        d = to_double(s, len);
        if (integer && isinf(d)) return -1;   /* float(int) raises for it */
        if (integer && d == 0) d = 0.0;       /* float(int("-0")) is 0.0 */
    } else if (literal(x, "NaN", 3)) {
        uint64_t bits = 0x7ff8000000000000ULL;
        memcpy(&d, &bits, 8);
    } else if (literal(x, "Infinity", 8)) {
        d = INFINITY;
    } else if (literal(x, "-Infinity", 9)) {
        d = -INFINITY;
    } else {
        return -1;                             /* N, I or -I not starting a literal Python takes */
    }
    return put_float(x, nd, d);
}

/* A number (x->p at its first character) into an integer or number column. */
HOT int number(Ctx *x, const int32_t *nd) {
    int integer;
    int64_t quick;
    double d;
    if (!quick_number(x, &integer, &quick, &d)) return other_number(x, nd);
    if (!integer) return nd[0] == J_NUMBER ? put_fixed(x->c, nd[1], &d, 8) : put_float(x, nd, d);
    if (nd[0] == J_INTEGER) return put_fixed(x->c, nd[1], &quick, 8);
    d = (double)quick;                         /* float(int): exact below 2**53, else rounded */
    if (d == 0) d = 0.0;                       /* float(int("-0")) is 0.0 */
    return put_fixed(x->c, nd[1], &d, 8);
}

/* A string, integer, number or boolean node: no nesting, so no depth to keep. */
#define IS_SCALAR(op) ((op) >= J_STRING && (op) <= J_BOOLEAN)

/* The value at x->p (or null) into scalar node nd's column: inlined where an object's properties
 * and an array's items are read. */
HOT int scalar(Ctx *x, const int32_t *nd) {
    Cols *c = x->c;
    if (x->p >= x->end) return -1;
    uint8_t ch = *x->p;
    if (ch == 'n') return literal(x, "null", 4) ? put_null(c, nd[1]) : -1;
    switch (nd[0]) {
    case J_STRING: {
        const uint8_t *s;
        int64_t len;
        if (ch != '"' || read_string(x, &s, &len)) return -1;
        return put_var(c, nd[1], s, len);
    }
    case J_INTEGER:
    case J_NUMBER:
        if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 'N' || ch == 'I') return number(x, nd);
        return -1;
    default: {                 /* J_BOOLEAN */
        uint8_t b;
        if (literal(x, "true", 4)) b = 1;
        else if (literal(x, "false", 5)) b = 0;
        else return -1;
        return put_fixed(c, nd[1], &b, 1);
    }
    }
}

/* A nesting node (object, map, array) or one typed as JSON text: scalars go to scalar() (member()). */
static int value(Ctx *x, int node) {
    const Program *g = x->g;
    const int32_t *nd = node_at(g, node);
    Cols *c = x->c;
    if (x->p >= x->end) return -1;
    uint8_t ch = *x->p;
    if (ch == 'n') return literal(x, "null", 4) ? put_null(c, nd[1]) : -1;
    if (++x->depth > MAX_DEPTH) return -1;
    int rc = -1;
    switch (nd[0]) {
    case J_OBJECT:
        if (ch == '{') rc = object(x, nd);
        break;
    case J_MAP:
        if (ch == '{') rc = map(x, nd);
        break;
    case J_ARRAY:
        if (ch == '[') rc = array(x, nd);
        break;
    default:
        break;                 /* J_TEXT: a value's JSON text is left to the reference */
    }
    x->depth--;
    return rc;
}

/* Node `node` at x->p (a row's root, a property, an item, a map value): scalars without a call. */
HOT int member(Ctx *x, int node) {
    const int32_t *nd = node_at(x->g, node);
    return IS_SCALAR(nd[0]) ? scalar(x, nd) : value(x, node);
}

/* ------------------------------------------------------------------ the format (_columns.h) */
typedef struct {
    Program *gs;
    Py_ssize_t ng;
    uint8_t *seen;
    uint8_t *buf;
    int64_t bcap;
} Json;

static int json_row(void *state, Cols *cols, int program, const uint8_t *p, const uint8_t *end) {
    Json *s = state;
    /* json.loads(bytes) decodes by the encoding it detects: a BOM or a zero byte first is not
     * plain UTF-8; neither is anything utf8_ok refuses (surrogatepass takes encoded surrogates),
     * which string_span checks in the strings, the only place a byte above 0x7f may be */
    if (p >= end || p[0] == 0 || (end - p >= 2 && p[1] == 0) || p[0] == 0xef) return -1;
    Ctx x = {.c = cols, .g = &s->gs[program], .p = p, .end = end, .seen = s->seen, .buf = s->buf, .bcap = s->bcap};
    ws(&x);
    int rc = member(&x, 0);
    if (!rc) {
        ws(&x);
        rc = x.p == x.end ? 0 : -1;
    }
    s->buf = x.buf;
    s->bcap = x.bcap;
    return rc;
}

static int col_is(const Cols *x, int col, int kind, int width) {
    return col >= 0 && col < x->ncols && x->cols[col].kind == kind && (width == 0 || x->cols[col].width == width);
}

/* Every node checked against the columns and consts before any runs (programs come from
 * json_columns.py; a wrong one must fail here, never read or write past a buffer). */
static int program_ok(Program *g, const Cols *x) {
    PyObject *consts = g->consts;
    for (Py_ssize_t k = 0; k < g->nnodes; k++) {
        const int32_t *nd = node_at(g, (int)k);
        int op = nd[0], col = nd[1];
        switch (op) {
        case J_OBJECT: {
            int n = nd[3];
            if (!col_is(x, col, K_STRUCT, 0) || n < 0 || nd[2] < 0 || (Py_ssize_t)nd[2] + n > g->nkids ||
                x->cols[col].nchild != n || nd[4] < 0 || nd[4] >= PyTuple_GET_SIZE(consts))
                return 0;
            for (int i = 0; i < n; i++) {
                int32_t kid = g->kids[nd[2] + i];
                if (kid <= k || kid >= g->nnodes || node_at(g, kid)[1] != x->cols[col].child[i]) return 0;
            }
            PyObject *b = PyTuple_GET_ITEM(consts, nd[4]);
            Py_ssize_t size = PyBytes_GET_SIZE(b);
            const uint8_t *raw = (const uint8_t *)PyBytes_AS_STRING(b);
            int32_t cap;
            if (size < 4) return 0;
            memcpy(&cap, raw, 4);
            if (cap <= 0 || (cap & (cap - 1)) || 4 + 12 * (Py_ssize_t)cap > size) return 0;
            Py_ssize_t text = size - 4 - 12 * (Py_ssize_t)cap;
            int empty = 0;
            for (int32_t j = 0; j < cap; j++) {
                int32_t start, length, index;
                memcpy(&start, raw + 4 + 12 * (Py_ssize_t)j, 4);
                memcpy(&length, raw + 8 + 12 * (Py_ssize_t)j, 4);
                memcpy(&index, raw + 12 + 12 * (Py_ssize_t)j, 4);
                if (index < 0) { empty = 1; continue; }
                if (index >= n || start < 0 || length < 0 || (Py_ssize_t)start + length > text) return 0;
            }
            if (!empty) return 0;                 /* a lookup always ends */
            g->props += n;
            break;
        }
        case J_MAP:
            if (!col_is(x, col, K_LIST, 0) || !col_is(x, nd[2], K_STRUCT, 0) || x->cols[col].child[0] != nd[2] ||
                x->cols[nd[2]].nchild != 2 || x->cols[nd[2]].child[0] != nd[3] || !col_is(x, nd[3], K_VAR, 0) ||
                nd[4] <= k || nd[4] >= g->nnodes || node_at(g, nd[4])[1] != x->cols[nd[2]].child[1])
                return 0;
            break;
        case J_ARRAY:
            if (!col_is(x, col, K_LIST, 0) || nd[2] <= k || nd[2] >= g->nnodes ||
                node_at(g, nd[2])[1] != x->cols[col].child[0])
                return 0;
            break;
        case J_STRING: case J_TEXT:
            if (!col_is(x, col, K_VAR, 0)) return 0;
            break;
        case J_INTEGER: case J_NUMBER:
            if (!col_is(x, col, K_FIXED, 8)) return 0;
            break;
        case J_BOOLEAN:
            if (!col_is(x, col, K_FIXED, 1)) return 0;
            break;
        default:
            return 0;
        }
    }
    for (Py_ssize_t k = 0; k < g->nkids; k++)
        if (g->kids[k] <= 0 || g->kids[k] >= g->nnodes) return 0;
    return g->nnodes > 0;
}

/* Each object's property names by declared index (after program_ok): g->first, g->names.  An index
 * the table does not hold keeps length -1 and never matches.  -1: out of memory. */
static int index_names(Program *g) {
    g->first = calloc((size_t)g->nnodes, sizeof(int32_t));
    g->names = malloc((size_t)(g->props ? g->props : 1) * 2 * sizeof(int32_t));
    if (!g->first || !g->names) return -1;
    int32_t at = 0;
    for (Py_ssize_t k = 0; k < g->nnodes; k++) {
        const int32_t *nd = node_at(g, (int)k);
        if (nd[0] != J_OBJECT) continue;
        g->first[k] = at;
        for (int i = 0; i < nd[3]; i++) {
            g->names[2 * (at + i)] = 0;
            g->names[2 * (at + i) + 1] = -1;
        }
        const uint8_t *raw = (const uint8_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(g->consts, nd[4]));
        int32_t cap;
        memcpy(&cap, raw, 4);
        const uint8_t *text = raw + 4 + 12 * (Py_ssize_t)cap;
        for (int32_t j = 0; j < cap; j++) {
            int32_t slot[3];
            memcpy(slot, raw + 4 + 12 * (Py_ssize_t)j, 12);
            if (slot[2] < 0) continue;
            /* only a name that reads the same raw in a JSON string (no quote, backslash or control
             * character) is matched byte for byte */
            const uint8_t *name = text + slot[0];
            int plain = 1;
            for (int32_t b = 0; b < slot[1]; b++)
                if (name[b] == '"' || name[b] == '\\' || name[b] < 0x20) plain = 0;
            g->names[2 * (at + slot[2])] = slot[0];
            g->names[2 * (at + slot[2]) + 1] = plain ? slot[1] : -1;
        }
        at += nd[3];
    }
    return 0;
}

static void free_programs(Json *s, Py_ssize_t ng) {
    for (Py_ssize_t i = 0; s->gs && i < ng; i++) {
        free(s->gs[i].first);
        free(s->gs[i].names);
    }
    free(s->gs);
    s->gs = NULL;
}

static int json_load(void *state, PyObject *programs, const Cols *x) {
    Json *s = state;
    Py_ssize_t ng = PyTuple_GET_SIZE(programs);
    int64_t props = 1;
    s->gs = calloc((size_t)(ng ? ng : 1), sizeof(Program));
    if (!s->gs) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < ng; i++) {
        PyObject *nodes, *kids, *consts;
        Program *g = &s->gs[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(programs, i), "SSO!", &nodes, &kids, &PyTuple_Type, &consts))
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
        if (!program_ok(g, x)) {
            PyErr_SetString(PyExc_ValueError, "malformed JSON column program");
            goto fail;
        }
        if (index_names(g)) {
            PyErr_NoMemory();
            goto fail;
        }
        if (g->props > props) props = g->props;
    }
    s->ng = ng;
    s->seen = malloc((size_t)props);
    if (!s->seen) { PyErr_NoMemory(); goto fail; }
    return 0;
fail:
    free_programs(s, ng);
    return -1;
}

static void json_release(void *state) {
    Json *s = state;
    free_programs(s, s->ng);
    free(s->seen);
    free(s->buf);
}

static const Format JSON = {json_load, json_row, json_release};

PyDoc_STRVAR(decode_doc, KC_DECODE_DOC "\n\nA program: (nodes, kids, consts) of json_columns.Program.");

static PyObject *jc_decode(PyObject *self, PyObject *args) {
    Json state = {0};
    return kc_decode(args, &JSON, &state);
}

static PyMethodDef jc_methods[] = {
    {"decode", jc_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef jc_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_format.registry._jsoncolumns",
    .m_doc = "JSON Schema payloads parsed into Arrow column buffers (see json_columns.py).",
    .m_size = -1,
    .m_methods = jc_methods,
};

PyMODINIT_FUNC PyInit__jsoncolumns(void) {
    if (kc_ready() < 0) return NULL;
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale) {
        PyErr_SetString(PyExc_OSError, "no C locale for number parsing");
        return NULL;
    }
    return PyModule_Create(&jc_module);
}
