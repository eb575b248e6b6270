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

#include "_fastcodecs.h"

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

/* ------------------------------------------------------------------ CRC-32C */

#define CRC32C_POLY 0x82F63B78u     /* Castagnoli, reflected */
#define CRC_LONG 8192               /* block size of the 3-way interleaved hardware loop */
#define CRC_SHORT 256

static uint32_t crc_table[8][256];            /* slicing-by-8 */
static uint32_t crc_zeros_long[4][256];       /* register shift by CRC_LONG zero bytes */
static uint32_t crc_zeros_short[4][256];      /* register shift by CRC_SHORT zero bytes */
static int crc_have_hw = 0;
static int crc_have_clmul = 0;
#define CRC_CLMUL_MIN 256            /* shorter inputs: the crc32 instructions alone */

/* Advance a raw CRC register over n zero bytes, bytewise (init only). */
static uint32_t crc_feed_zeros_slow(uint32_t reg, size_t n)
{
    while (n--)
        reg = crc_table[0][reg & 0xff] ^ (reg >> 8);
    return reg;
}

/* Tabulate the linear map reg -> reg advanced over n zero bytes. */
static void crc_make_shift_table(uint32_t table[4][256], size_t n)
{
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++)
        basis[bit] = crc_feed_zeros_slow((uint32_t)1 << bit, n);
    for (int k = 0; k < 4; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (b & (1 << i))
                    v ^= basis[8 * k + i];
            table[k][b] = v;
        }
    }
}

static inline uint32_t crc_shift(const uint32_t table[4][256], uint32_t reg)
{
    return table[0][reg & 0xff] ^ table[1][(reg >> 8) & 0xff] ^
           table[2][(reg >> 16) & 0xff] ^ table[3][reg >> 24];
}

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc_table[0][c & 0xff] ^ (c >> 8);
            crc_table[k][n] = c;
        }
    }
    crc_make_shift_table(crc_zeros_long, CRC_LONG);
    crc_make_shift_table(crc_zeros_short, CRC_SHORT);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_have_hw = __builtin_cpu_supports("sse4.2");
    crc_have_clmul = crc_have_hw && __builtin_cpu_supports("pclmul");
#endif
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Portable slicing-by-8 over a raw register. */
static uint32_t crc32c_sw(uint32_t reg, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = load_le64(p) ^ reg;
        reg = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
    return reg;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* SSE4.2 crc32 instructions; three independent streams hide the 3-cycle latency. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t reg, const unsigned char *p, size_t n)
{
    uint64_t c0 = reg;
    while (n && ((uintptr_t)p & 7)) {
        c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * CRC_LONG) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + CRC_LONG;
        do {
            c0 = __builtin_ia32_crc32di(c0, load_le64(p));
            c1 = __builtin_ia32_crc32di(c1, load_le64(p + CRC_LONG));
            c2 = __builtin_ia32_crc32di(c2, load_le64(p + 2 * CRC_LONG));
            p += 8;
        } while (p < end);
        c0 = crc_shift(crc_zeros_long, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc_shift(crc_zeros_long, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_LONG;
        n -= 3 * CRC_LONG;
    }
    while (n >= 3 * CRC_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + CRC_SHORT;
        do {
            c0 = __builtin_ia32_crc32di(c0, load_le64(p));
            c1 = __builtin_ia32_crc32di(c1, load_le64(p + CRC_SHORT));
            c2 = __builtin_ia32_crc32di(c2, load_le64(p + 2 * CRC_SHORT));
            p += 8;
        } while (p < end);
        c0 = crc_shift(crc_zeros_short, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc_shift(crc_zeros_short, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_SHORT;
        n -= 3 * CRC_SHORT;
    }
    while (n >= 8) {
        c0 = __builtin_ia32_crc32di(c0, load_le64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* Carry-less multiplication folding (PCLMULQDQ), for CPUs whose crc32 instruction is the limit:
 * four 16-byte lanes; a lane block A is replaced by F(A) XOR the lane's next block, where
 * F(A) = clmul(A.lo, K(8D+63)) ^ clmul(A.hi, K(8D-1)) is congruent to A * x^(8D) mod P for a
 * distance of D bytes (K(e) = x^e mod P, bit-reflected into 64 bits; a product of reflected
 * operands carries one extra factor x, hence the -1).  The folded 16 bytes then go through the
 * crc32 instruction from register 0: the same register as the whole input.  The initial
 * register is XORed into the first 4 bytes (the CRC of a message is linear in its first bits). */
#define CLMUL_K575 0x1c19243b00000000ull   /* D = 64: lo lane */
#define CLMUL_K511 0x75bba45b00000000ull   /* D = 64: hi lane */
#define CLMUL_K191 0x3743f7bd00000000ull   /* D = 16: lo lane */
#define CLMUL_K127 0x3171d43000000000ull   /* D = 16: hi lane */

__attribute__((target("pclmul,sse4.2")))
static inline __m128i clmul_fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse4.2")))
static uint32_t crc32c_clmul(uint32_t reg, const unsigned char *p, size_t n)
{
    const __m128i k64 = _mm_set_epi64x((long long)CLMUL_K511, (long long)CLMUL_K575);
    const __m128i k16 = _mm_set_epi64x((long long)CLMUL_K127, (long long)CLMUL_K191);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)reg));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(clmul_fold(x0, k64), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(clmul_fold(x1, k64), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(clmul_fold(x2, k64), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(clmul_fold(x3, k64), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    __m128i x = _mm_xor_si128(clmul_fold(x0, k16), x1);
    x = _mm_xor_si128(clmul_fold(x, k16), x2);
    x = _mm_xor_si128(clmul_fold(x, k16), x3);
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
    return crc32c_hw((uint32_t)c, p, n);
}
#endif

/* CRC-32C as Kafka's Crc32C: register starts at ~value, result is inverted. */
static uint32_t crc32c_update(uint32_t value, const unsigned char *p, size_t n)
{
    uint32_t reg = ~value;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (crc_have_clmul && n >= CRC_CLMUL_MIN)
        return ~crc32c_clmul(reg, p, n);
    if (crc_have_hw)
        return ~crc32c_hw(reg, p, n);
#endif
    return ~crc32c_sw(reg, p, n);
}

/* ------------------------------------------------------------------ memory blocks */

/* Fresh pages cost a page fault each (expensive under virtualisation: a fresh 8 MiB
 * column was measured slower than the decode loop itself), so large blocks released
 * by dead Buffers are kept in a small cache and handed to the next call.  The cache
 * is only touched with the GIL held. */
#define BLOCK_CACHE_SLOTS 32
#define BLOCK_CACHE_MIN ((size_t)64 << 10)       /* smaller blocks: plain malloc reuse */
#define BLOCK_CACHE_MAX_BYTES ((size_t)64 << 20)     /* retained at most, per process */

static struct {
    char *data;
    size_t capacity;
} block_cache[BLOCK_CACHE_SLOTS];
static int block_cache_count = 0;
static size_t block_cache_bytes = 0;
static unsigned long long block_cache_hits = 0, block_cache_misses = 0;

/* A block of at least `want` bytes (GIL held); *capacity receives its real size. */
static char *block_get(size_t want, size_t *capacity)
{
    if (want == 0)
        want = 1;
    if (want >= BLOCK_CACHE_MIN) {
        /* round up so that chunks of similar size reuse each other's blocks */
        size_t grain = want >= ((size_t)1 << 20) ? ((size_t)1 << 20) : BLOCK_CACHE_MIN;
        want = (want + grain - 1) / grain * grain;
        int best = -1;
        for (int i = 0; i < block_cache_count; i++) {
            size_t cap = block_cache[i].capacity;
            if (cap >= want && cap <= 2 * want &&
                (best < 0 || cap < block_cache[best].capacity))
                best = i;
        }
        if (best >= 0) {
            char *data = block_cache[best].data;
            *capacity = block_cache[best].capacity;
            block_cache_bytes -= *capacity;
            block_cache_hits++;
            block_cache_count--;
            memmove(&block_cache[best], &block_cache[best + 1],
                    (size_t)(block_cache_count - best) * sizeof block_cache[0]);
            return data;
        }
    }
    if (want >= BLOCK_CACHE_MIN)
        block_cache_misses++;
    *capacity = want;
    return PyMem_RawMalloc(want);
}

/* Give a block back (GIL held): large blocks are cached, the oldest cached ones freed
 * to make room (the newest are the likeliest to fit the next chunk). */
static void block_put(char *data, size_t capacity)
{
    if (!data)
        return;
    if (capacity < BLOCK_CACHE_MIN || capacity > BLOCK_CACHE_MAX_BYTES) {
        PyMem_RawFree(data);
        return;
    }
    while (block_cache_count == BLOCK_CACHE_SLOTS ||
           block_cache_bytes + capacity > BLOCK_CACHE_MAX_BYTES) {
        PyMem_RawFree(block_cache[0].data);
        block_cache_bytes -= block_cache[0].capacity;
        block_cache_count--;
        memmove(&block_cache[0], &block_cache[1], (size_t)block_cache_count * sizeof block_cache[0]);
    }
    block_cache[block_cache_count].data = data;
    block_cache[block_cache_count].capacity = capacity;
    block_cache_count++;
    block_cache_bytes += capacity;
}

/* ------------------------------------------------------------------ Buffer type */

/* A block of memory exposed read-write through the buffer protocol. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
    size_t capacity;
} BufferObject;

static void Buffer_dealloc(BufferObject *self)
{
    block_put(self->data, self->capacity);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 0, flags);
}

static Py_ssize_t Buffer_length(BufferObject *self)
{
    return self->size;
}

static PyBufferProcs Buffer_as_buffer = {
    (getbufferproc)Buffer_getbuffer,
    NULL,
};

static PySequenceMethods Buffer_as_sequence = {
    .sq_length = (lenfunc)Buffer_length,
};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_format.records._fastdecode.Buffer",
    .tp_doc = PyDoc_STR("Column memory filled by the decoder (buffer protocol, zero copy)."),
    .tp_basicsize = sizeof(BufferObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_as_sequence = &Buffer_as_sequence,
};

/* Working state of one output column while the loop runs (not a Python object yet). */
typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} Column;

/* GIL held. */
static int column_init(Column *c, size_t capacity)
{
    c->size = 0;
    c->data = block_get(capacity, &c->capacity);
    if (!c->data) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Grow so that `extra` more bytes fit; amortised doubling.  Safe without the GIL:
 * sets no Python error (the caller reports V_NO_MEMORY). */
static int column_reserve_slow(Column *c, size_t extra)
{
    size_t need = c->size + extra;
    size_t cap = c->capacity * 2;
    if (cap < need)
        cap = need;
    char *p = PyMem_RawRealloc(c->data, cap);
    if (!p)
        return -1;
    c->data = p;
    c->capacity = cap;
    return 0;
}

static inline int column_reserve(Column *c, size_t extra)
{
    if (c->capacity - c->size >= extra)
        return 0;
    return column_reserve_slow(c, extra);
}

/* GIL held. */
static void column_free(Column *c)
{
    block_put(c->data, c->capacity);
    c->data = NULL;
}

/* Hand the memory to a Buffer object; the column is emptied (GIL held).  A block
 * mostly unused (e.g. keys sized by the payload bound) is shrunk so that a
 * long-lived Arrow array does not pin it, unless the waste is small (at most
 * SHRINK_SLACK): such blocks go back to the cache at their full size and fit the
 * next chunk's request (a shrunk block never would, costing fresh pages). */
#define SHRINK_SLACK ((size_t)1 << 20)
static PyObject *column_finish(Column *c)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b) {
        column_free(c);
        return NULL;
    }
    if (c->capacity >= BLOCK_CACHE_MIN && c->size < c->capacity / 2 &&
        c->capacity - c->size > SHRINK_SLACK) {
        size_t keep = c->size ? c->size : 1;
        char *p = PyMem_RawRealloc(c->data, keep);
        if (p) {
            c->data = p;
            c->capacity = keep;
        }
    }
    b->data = c->data;
    b->size = (Py_ssize_t)c->size;
    b->capacity = c->capacity;
    c->data = NULL;
    return (PyObject *)b;
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
static inline Violation read_varint(const unsigned char **pp, const unsigned char *end, int32_t *out)
{
    const unsigned char *p = *pp;
    if (end - p >= 2) {                            /* one- and two-byte fast paths */
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
            uint32_t actual = crc32c_update(0, buf + pos + V2_ATTRIBUTES_OFFSET,
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
 * destination has COPY_SLACK bytes of room past its data (reserve_batch, key reserve). */
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
    size_t key_pos, val_pos;
} Out;

/* Grow to at least `bytes` (amortised doubling), called without the GIL: the new block comes
 * from the block cache (taking the GIL for the moment of the exchange), so that a column grown
 * while decompressed batches are decoded reuses the blocks of earlier calls instead of faulting
 * in fresh pages and filling the cache with blocks nobody asks for. */
static int column_grow(Column *c, size_t bytes)
{
    size_t cap = c->capacity * 2;
    if (cap < bytes)
        cap = bytes;
    PyGILState_STATE gil = PyGILState_Ensure();
    size_t got;
    char *p = block_get(cap, &got);
    if (p) {
        memcpy(p, c->data, c->capacity);
        block_put(c->data, c->capacity);
        c->data = p;
        c->capacity = got;
    }
    PyGILState_Release(gil);
    return p ? 0 : -1;
}

static inline int column_ensure(Column *c, size_t bytes)
{
    return c->capacity >= bytes ? 0 : column_grow(c, bytes);
}

/* Room for `rows` more records after o->n and `data_bytes` more value bytes. */
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

/* Decoding options (benchmarks only: phases switched off to see where time goes). */
#define OPT_NO_COPY 1            /* keys and values not copied (lengths still checked) */
#define OPT_DECOMPRESS_ONLY 2    /* decompress (and CRC), decode nothing: the codec floor */

/* Decode the `count` records of one batch in [start, end) into the columns at o.  The
 * columns have room for the records and the value bytes (reserve_batch).  Returns V_OK
 * or the violation with *bad_offset (relative to start).  Runs without the GIL. */
/* CRC-32C computed while the records are decoded (the fused path): the bytes are checksummed
 * in pieces of CRC_PIECE right after the record loop has read them, while they are in cache,
 * so a batch larger than the cache is read from memory once, not twice. */
#define CRC_PIECE 8192
typedef struct {
    int on;
    uint32_t value;                  /* Kafka-style running CRC of [region start, from) */
    const unsigned char *from;
} RunningCrc;

static Violation decode_records(DecodeState *st, Out *o, const unsigned char *start,
                                const unsigned char *end, const int64_t *m, int opts,
                                Py_ssize_t *bad_offset, RunningCrc *crc)
{
    Column *cols = st->cols;
    int32_t *batch_row = (int32_t *)cols[C_BATCH_ROW].data;
    int64_t *offset_out = (int64_t *)cols[C_OFFSET].data;
    int64_t *ts_out = (int64_t *)cols[C_TIMESTAMP].data;
    int8_t *tstype_out = (int8_t *)cols[C_TIMESTAMP_TYPE].data;
    int32_t *seq_out = (int32_t *)cols[C_SEQUENCE].data;
    int32_t *key_off = (int32_t *)cols[C_KEY_OFFSETS].data;
    uint8_t *key_valid = (uint8_t *)cols[C_KEY_VALID].data;
    int32_t *val_off = (int32_t *)cols[C_VALUE_OFFSETS].data;
    uint8_t *val_valid = (uint8_t *)cols[C_VALUE_VALID].data;
    int32_t *hdr_off = (int32_t *)cols[C_HEADER_OFFSETS].data;
    Column *key_col = &cols[C_KEY_DATA];
    char *val_data = cols[C_VALUE_DATA].data;
    Column *hk_off = &cols[C_HKEY_OFFSETS], *hk_data = &cols[C_HKEY_DATA];
    Column *hv_off = &cols[C_HVALUE_OFFSETS], *hv_data = &cols[C_HVALUE_DATA];
    Column *hv_valid = &cols[C_HVALUE_VALID];
    const int copy = !(opts & OPT_NO_COPY);

    size_t n = o->n, h = o->h, key_pos = o->key_pos, val_pos = o->val_pos;
    const unsigned char *p = start;
    int32_t row = (int32_t)m[META_ROW];
    int64_t base_offset = m[META_BASE_OFFSET];
    int64_t base_ts = m[META_BASE_TIMESTAMP];
    int64_t max_ts = m[META_MAX_TIMESTAMP];
    int32_t base_seq = (int32_t)m[META_BASE_SEQUENCE];
    int64_t count = m[META_COUNT];
    int log_append = (m[META_FLAGS] & FLAG_LOG_APPEND_TIME) != 0;
    int8_t ts_type = (int8_t)log_append;
    Violation v = V_OK;

    for (int64_t r = 0; r < count; r++) {
        int32_t length, offset_delta, key_len, val_len, hcount;
        int64_t ts_delta;
        if ((v = read_varint(&p, end, &length)) != V_OK)
            goto fail;
        const unsigned char *body = p;
        if (length > end - p) {          /* DefaultRecord.readFrom: remaining < size */
            v = V_TRUNCATED;
            goto fail;
        }
        if (p >= end) {
            v = V_TRUNCATED;
            goto fail;
        }
        p++;                             /* attributes */
        if ((v = read_varlong(&p, end, &ts_delta)) != V_OK)
            goto fail;
        if ((v = read_varint(&p, end, &offset_delta)) != V_OK)
            goto fail;
        if ((v = read_varint(&p, end, &key_len)) != V_OK)
            goto fail;
        if (key_len >= 0) {
            if (key_len > end - p) {
                v = V_TRUNCATED;
                goto fail;
            }
            if (copy) {
                if (key_col->capacity - key_pos < (size_t)key_len + COPY_SLACK) {
                    key_col->size = key_pos;
                    if (column_reserve_slow(key_col, (size_t)key_len + COPY_SLACK) < 0)
                        return V_NO_MEMORY;
                }
                copy_field(key_col->data + key_pos, p, (size_t)key_len, end);
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
            if (val_len > end - p) {
                v = V_TRUNCATED;
                goto fail;
            }
            if (copy) {
                copy_field(val_data + val_pos, p, (size_t)val_len, end);
                val_pos += (size_t)val_len;
            }
            p += val_len;
            val_valid[n] = 1;
        } else {                         /* any negative length is a null value */
            val_valid[n] = 0;
        }
        if ((v = read_varint(&p, end, &hcount)) != V_OK)
            goto fail;
        if (hcount < 0 || hcount > end - p) {
            v = V_HEADER_COUNT;
            goto fail;
        }
        if (hcount > 0) {
            /* each header takes >= 2 bytes, so hcount is backed by the payload */
            if (column_reserve(hk_off, (size_t)hcount * 4) < 0 ||
                column_reserve(hv_off, (size_t)hcount * 4) < 0 ||
                column_reserve(hv_valid, (size_t)hcount) < 0)
                return V_NO_MEMORY;
            int32_t *hko = (int32_t *)hk_off->data;
            int32_t *hvo = (int32_t *)hv_off->data;
            uint8_t *hvv = (uint8_t *)hv_valid->data;
            for (int32_t k = 0; k < hcount; k++) {
                int32_t hk_len, hv_len;
                if ((v = read_varint(&p, end, &hk_len)) != V_OK)
                    goto fail;
                if (hk_len < 0) {
                    v = V_HEADER_KEY_LENGTH;
                    goto fail;
                }
                if (hk_len > end - p) {
                    v = V_TRUNCATED;
                    goto fail;
                }
                if (!utf8_valid(p, (size_t)hk_len)) {
                    v = V_HEADER_KEY_UTF8;
                    goto fail;
                }
                if (column_reserve(hk_data, (size_t)hk_len) < 0)
                    return V_NO_MEMORY;
                memcpy(hk_data->data + hk_data->size, p, (size_t)hk_len);
                hk_data->size += (size_t)hk_len;
                p += hk_len;
                if ((v = read_varint(&p, end, &hv_len)) != V_OK)
                    goto fail;
                if (hv_len >= 0) {
                    if (hv_len > end - p) {
                        v = V_TRUNCATED;
                        goto fail;
                    }
                    if (column_reserve(hv_data, (size_t)hv_len) < 0)
                        return V_NO_MEMORY;
                    memcpy(hv_data->data + hv_data->size, p, (size_t)hv_len);
                    hv_data->size += (size_t)hv_len;
                    p += hv_len;
                    hvv[h] = 1;
                } else {                     /* any negative length is a null value */
                    hvv[h] = 0;
                }
                h++;
                hko[h] = (int32_t)hk_data->size;
                hvo[h] = (int32_t)hv_data->size;
            }
            hk_off->size = (h + 1) * 4;
            hv_off->size = (h + 1) * 4;
            hv_valid->size = h;
        }
        if (p - body != length) {
            v = V_RECORD_LENGTH;
            goto fail;
        }
        batch_row[n] = row;
        offset_out[n] = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)offset_delta);
        ts_out[n] = log_append ? max_ts : (int64_t)((uint64_t)base_ts + (uint64_t)ts_delta);
        tstype_out[n] = ts_type;
        /* DefaultRecord.readFrom: baseSequence >= 0 ? incrementSequence(...) : NO_SEQUENCE */
        seq_out[n] = base_seq < 0 ? NO_SEQUENCE : increment_sequence(base_seq, offset_delta);
        n++;
        key_off[n] = (int32_t)key_pos;
        val_off[n] = (int32_t)val_pos;
        hdr_off[n] = (int32_t)h;
        if (crc && p - crc->from >= CRC_PIECE) {
            crc->value = crc32c_update(crc->value, crc->from, (size_t)(p - crc->from));
            crc->from = p;
        }
    }
    if (p != end) {
        v = V_TRAILING_BYTES;
        goto fail;
    }
    o->n = n;
    o->h = h;
    o->key_pos = key_pos;
    o->val_pos = val_pos;
    return V_OK;
fail:
    *bad_offset = p - start;
    return v;
}

/* Start the output: the leading zeros of the offset columns. */
static void out_start(DecodeState *st, Out *o)
{
    Column *cols = st->cols;
    memset(o, 0, sizeof *o);
    ((int32_t *)cols[C_KEY_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_VALUE_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_HEADER_OFFSETS].data)[0] = 0;
    ((int32_t *)cols[C_HKEY_OFFSETS].data)[0] = 0;      /* capacity >= 256 entries */
    ((int32_t *)cols[C_HVALUE_OFFSETS].data)[0] = 0;
    cols[C_HKEY_OFFSETS].size = 4;                       /* the leading 0 counts for column_reserve */
    cols[C_HVALUE_OFFSETS].size = 4;
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
    cols[C_HVALUE_OFFSETS].size = (h + 1) * 4;
    cols[C_HVALUE_VALID].size = h;
}

/* Inner loop over all batches of decode_v2 (columns pre-sized by the caller).  Returns
 * V_OK or the violation, with *bad_batch and *bad_offset set.  Runs without the GIL. */
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
        if (m[META_FLAGS] & FLAG_CHECK_CRC) {    /* length >= CRC_REGION_HEADER: decode_v2 */
            if (crc32c_update(0, start, (size_t)(end - start)) != (uint32_t)m[META_CRC]) {
                *bad_offset = 0;
                return V_CRC;
            }
            start += CRC_REGION_HEADER;
        }
        Violation v = decode_records(st, &o, start, end, m, 0, bad_offset, NULL);
        if (v != V_OK)
            return v;
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

#define CM_START META_NCOLS          /* first byte of the batch's region in buf */
#define CM_END (META_NCOLS + 1)      /* end of the region */
#define CM_NCOLS (META_NCOLS + 2)
#define FLAG_CODEC_SHIFT 4           /* flags bits 4-6: the batch's codec id */

PyDoc_STRVAR(decode_v2_chunk_doc,
"decode_v2_chunk(buf, meta, max_decompressed, options) -> (columns, done, held)\n\n"
"Decode the records of v2 batches lying in one buffer, decompressing in C into one\n"
"reused buffer.  meta: C-contiguous int64 rows of CHUNK_META_COLUMNS columns: the\n"
"decode_v2 columns, then start and end of the batch's region in buf (the records\n"
"region; from the attributes field with FLAG_CHECK_CRC, uncompressed only).  flags\n"
"bits 4-6 hold the codec.  Each payload decompresses to at most max_decompressed bytes;\n"
"batches are taken in order until the decompressed bytes held reach max_decompressed\n"
"(at least one): `done` batches were decoded, `held` bytes decompressed.  Any batch the\n"
"C codecs do not decode (corrupt, unusual framing, over the cap, codec not compiled in)\n"
"raises FormatViolation(batch, 'decompress', 0): the caller takes the Python path.\n"
"options (benchmarks): OPT_NO_COPY, OPT_DECOMPRESS_ONLY.");

static PyObject *fd_decode_v2_chunk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer buf_view, meta_view;
    Py_ssize_t max_held;
    int opts;
    if (!PyArg_ParseTuple(args, "y*y*ni", &buf_view, &meta_view, &max_held, &opts))
        return NULL;
    DecodeState st;
    memset(&st, 0, sizeof st);
    KfScratch scratch;
    memset(&scratch, 0, sizeof scratch);
    PyObject *result = NULL;
    Py_ssize_t nb = meta_view.len / (Py_ssize_t)(CM_NCOLS * sizeof(int64_t));
    if (meta_view.len != nb * CM_NCOLS * (Py_ssize_t)sizeof(int64_t) || max_held < 0) {
        PyErr_SetString(PyExc_ValueError, "meta must hold CHUNK_META_COLUMNS int64 per batch");
        goto done;
    }
    const int64_t *meta = meta_view.buf;
    const unsigned char *base = buf_view.buf;
    unsigned available = kf_codecs_available();
    size_t rows_est = 0, data_est = 0;
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
            data_est += len * 4;
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
            int rc = kf_decompress(&scratch, codec, start, len, (size_t)max_held, &dlen);
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
        if (o.val_pos + len > (size_t)INT32_MAX || o.key_pos + len > (size_t)INT32_MAX ||
            st.cols[C_HKEY_DATA].size + len > (size_t)INT32_MAX ||
            st.cols[C_HVALUE_DATA].size + len > (size_t)INT32_MAX) {
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
        if (crc.on && crc32c_update(crc.value, crc.from, (size_t)(end - crc.from)) != (uint32_t)m[META_CRC]) {
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
    kf_scratch_free(&scratch);
    decode_state_free(&st);
    PyBuffer_Release(&buf_view);
    PyBuffer_Release(&meta_view);
    return result;
}


/* ------------------------------------------------------------------ Arrow assembly helpers */

/* A Buffer of `size` bytes from the block cache (GIL held), or NULL with an exception. */
static BufferObject *buffer_new(size_t size)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b)
        return NULL;
    b->data = block_get(size, &b->capacity);
    if (!b->data) {
        b->capacity = 0;
        b->size = 0;
        Py_DECREF(b);
        PyErr_NoMemory();
        return NULL;
    }
    b->size = (Py_ssize_t)size;
    return b;
}

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
    crc = crc32c_update((uint32_t)value, view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(crc32c_sw_doc,
"crc32c_portable(data, value=0) -> int\n\nCRC-32C with the portable table loop (tests).");

static PyObject *fd_crc32c_sw(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &value))
        return NULL;
    uint32_t crc = ~crc32c_sw(~(uint32_t)value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(block_cache_info_doc,
"block_cache_info() -> (hits, misses, cached_blocks, cached_bytes)\n\n"
"Statistics of the cache of large output blocks (tests, benchmarks).");

static PyObject *fd_block_cache_info(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return Py_BuildValue("(KKin)", block_cache_hits, block_cache_misses, block_cache_count,
                         (Py_ssize_t)block_cache_bytes);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef fd_methods[] = {
    {"scan", fd_scan, METH_VARARGS, scan_doc},
    {"decode_v2", fd_decode_v2, METH_VARARGS, decode_v2_doc},
    {"decode_v2_chunk", fd_decode_v2_chunk, METH_VARARGS, decode_v2_chunk_doc},
    {"repeat", fd_repeat, METH_VARARGS, repeat_doc},
    {"offsets32", fd_offsets32, METH_VARARGS, offsets32_doc},
    {"crc32c", fd_crc32c, METH_VARARGS, crc32c_doc},
    {"crc32c_portable", fd_crc32c_sw, METH_VARARGS, crc32c_sw_doc},
    {"block_cache_info", fd_block_cache_info, METH_NOARGS, block_cache_info_doc},
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
    crc_init();
    if (PyType_Ready(&BufferType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&fd_module);
    if (!m)
        return NULL;
    FormatViolation = PyErr_NewExceptionWithDoc(
        "kafka_format.records._fastdecode.FormatViolation",
        "A batch broke a format rule: args are (batch_index, code, payload_offset).",
        PyExc_ValueError, NULL);
    if (!FormatViolation || PyModule_AddObjectRef(m, "FormatViolation", FormatViolation) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddStringConstant(m, "CRC32C_IMPLEMENTATION",
                                   crc_have_clmul ? "pclmul+sse4.2" : crc_have_hw ? "sse4.2" : "table") < 0 ||
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
        PyModule_AddIntConstant(m, "OPT_DECOMPRESS_ONLY", OPT_DECOMPRESS_ONLY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
