/*
 * kafka_format.records._fastdecode: CRC-32C (Castagnoli) as Kafka's Crc32C computes it (see _fastcrc.h).
 *
 * Portable slicing-by-8 tables; SSE4.2 crc32 instructions in three interleaved streams; carry-less
 * multiplication folding (PCLMULQDQ) of 16-byte lanes; the same folding on 512-bit registers
 * (VPCLMULQDQ, AVX-512).  The fused copy (kf_crc32c_copy) stores every loaded block to the
 * destination before folding it, so a large key or value is read from memory once for both.
 */

#define _POSIX_C_SOURCE 199309L     /* clock_gettime under -std=c11 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_fastcrc.h"


#define CRC32C_POLY 0x82F63B78u     /* Castagnoli, reflected */
#define CRC_LONG 8192               /* block size of the 3-way interleaved hardware loop */
#define CRC_SHORT 256

static uint32_t crc_table[8][256];            /* slicing-by-8 */
static uint32_t crc_zeros_long[4][256];       /* register shift by CRC_LONG zero bytes */
static uint32_t crc_zeros_short[4][256];      /* register shift by CRC_SHORT zero bytes */
static int crc_level = KF_CRC_PORTABLE;
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

static void crc_tables_init(void)
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

#define CLMUL_K2111 0xe9a5d8be00000000ull  /* D = 256: lo lane (512-bit registers) */
#define CLMUL_K2047 0x1426a81500000000ull  /* D = 256: hi lane */

__attribute__((target("pclmul,sse4.2")))
static inline __m128i clmul_fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* Load 16 bytes, and store them to *dst first when copying. */
__attribute__((target("pclmul,sse4.2")))
static inline __m128i load16(const unsigned char *p, unsigned char *dst)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    if (dst)
        _mm_storeu_si128((__m128i *)dst, v);
    return v;
}

/* The last 64 bytes folded into 16 (four lanes, 16 bytes apart), through the crc32 instruction. */
__attribute__((target("pclmul,sse4.2")))
static inline uint32_t clmul_finish(__m128i x0, __m128i x1, __m128i x2, __m128i x3)
{
    const __m128i k16 = _mm_set_epi64x((long long)CLMUL_K127, (long long)CLMUL_K191);
    __m128i x = _mm_xor_si128(clmul_fold(x0, k16), x1);
    x = _mm_xor_si128(clmul_fold(x, k16), x2);
    x = _mm_xor_si128(clmul_fold(x, k16), x3);
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    return (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
}

/* n >= 64.  With dst, src is also copied there (dst and src do not overlap). */
__attribute__((target("pclmul,sse4.2")))
static uint32_t crc32c_clmul(uint32_t reg, const unsigned char *p, size_t n, unsigned char *dst)
{
    const __m128i k64 = _mm_set_epi64x((long long)CLMUL_K511, (long long)CLMUL_K575);
    __m128i x0 = _mm_xor_si128(load16(p, dst), _mm_cvtsi32_si128((int)reg));
    __m128i x1 = load16(p + 16, dst ? dst + 16 : NULL);
    __m128i x2 = load16(p + 32, dst ? dst + 32 : NULL);
    __m128i x3 = load16(p + 48, dst ? dst + 48 : NULL);
    p += 64;
    n -= 64;
    if (dst) {
        dst += 64;
        while (n >= 64) {
            x0 = _mm_xor_si128(clmul_fold(x0, k64), load16(p, dst));
            x1 = _mm_xor_si128(clmul_fold(x1, k64), load16(p + 16, dst + 16));
            x2 = _mm_xor_si128(clmul_fold(x2, k64), load16(p + 32, dst + 32));
            x3 = _mm_xor_si128(clmul_fold(x3, k64), load16(p + 48, dst + 48));
            p += 64;
            dst += 64;
            n -= 64;
        }
        memcpy(dst, p, n);
    } else {
        while (n >= 64) {
            x0 = _mm_xor_si128(clmul_fold(x0, k64), load16(p, NULL));
            x1 = _mm_xor_si128(clmul_fold(x1, k64), load16(p + 16, NULL));
            x2 = _mm_xor_si128(clmul_fold(x2, k64), load16(p + 32, NULL));
            x3 = _mm_xor_si128(clmul_fold(x3, k64), load16(p + 48, NULL));
            p += 64;
            n -= 64;
        }
    }
    return crc32c_hw(clmul_finish(x0, x1, x2, x3), p, n);
}

/* The same folding on 512-bit registers (four 128-bit lanes each), four registers: 256 bytes a
 * step.  n >= 256. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))
static inline __m512i clmul_fold512(__m512i x, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                     next, 0x96);                          /* a ^ b ^ c */
}

/* Load 64 bytes, and store them to *dst first when copying: a non-temporal store (no read for
 * ownership, nothing evicted for data the caller will not read soon) when `stream`, dst then
 * being 64-byte aligned. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))
static inline __m512i load64(const unsigned char *p, unsigned char *dst, int stream)
{
    __m512i v = _mm512_loadu_si512((const void *)p);
    if (dst) {
        if (stream)
            _mm512_stream_si512((void *)dst, v);
        else
            _mm512_storeu_si512((void *)dst, v);
    }
    return v;
}

__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))
static uint32_t crc32c_avx512(uint32_t reg, const unsigned char *p, size_t n, unsigned char *dst, int stream)
{
    const __m512i k256 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)CLMUL_K2047, (long long)CLMUL_K2111));
    const __m512i k64 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)CLMUL_K511, (long long)CLMUL_K575));
    stream = stream && dst && !((uintptr_t)dst & 63);
    __m512i x0 = load64(p, dst, stream);
    __m512i x1 = load64(p + 64, dst ? dst + 64 : NULL, stream);
    __m512i x2 = load64(p + 128, dst ? dst + 128 : NULL, stream);
    __m512i x3 = load64(p + 192, dst ? dst + 192 : NULL, stream);
    x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)reg), 0));
    p += 256;
    n -= 256;
    if (dst && stream) {
        dst += 256;
        while (n >= 256) {
            x0 = clmul_fold512(x0, k256, load64(p, dst, 1));
            x1 = clmul_fold512(x1, k256, load64(p + 64, dst + 64, 1));
            x2 = clmul_fold512(x2, k256, load64(p + 128, dst + 128, 1));
            x3 = clmul_fold512(x3, k256, load64(p + 192, dst + 192, 1));
            p += 256;
            dst += 256;
            n -= 256;
        }
        _mm_sfence();               /* the streamed stores ordered before anything after */
        memcpy(dst, p, n);
    } else if (dst) {
        dst += 256;
        while (n >= 256) {
            x0 = clmul_fold512(x0, k256, load64(p, dst, 0));
            x1 = clmul_fold512(x1, k256, load64(p + 64, dst + 64, 0));
            x2 = clmul_fold512(x2, k256, load64(p + 128, dst + 128, 0));
            x3 = clmul_fold512(x3, k256, load64(p + 192, dst + 192, 0));
            p += 256;
            dst += 256;
            n -= 256;
        }
        memcpy(dst, p, n);
    } else {
        while (n >= 256) {
            x0 = clmul_fold512(x0, k256, load64(p, NULL, 0));
            x1 = clmul_fold512(x1, k256, load64(p + 64, NULL, 0));
            x2 = clmul_fold512(x2, k256, load64(p + 128, NULL, 0));
            x3 = clmul_fold512(x3, k256, load64(p + 192, NULL, 0));
            p += 256;
            n -= 256;
        }
    }
    __m512i x = clmul_fold512(x0, k64, x1);
    x = clmul_fold512(x, k64, x2);
    x = clmul_fold512(x, k64, x3);
    uint32_t c = clmul_finish(_mm512_extracti32x4_epi32(x, 0), _mm512_extracti32x4_epi32(x, 1),
                              _mm512_extracti32x4_epi32(x, 2), _mm512_extracti32x4_epi32(x, 3));
    _mm256_zeroupper();     /* clean upper register state before SSE-encoded code (transition penalty) */
    /* the tail (< 256 bytes) was copied above: only its checksum is left */
    if (n >= 64)
        return crc32c_clmul(c, p, n, NULL);
    return crc32c_hw(c, p, n);
}
#endif


/* ------------------------------------------------------------------ dispatch */

#define CRC_LONG_MIN 1024            /* from here the level picked by calibration (crc_long_level) */
#define CRC_STREAM_MIN 4096          /* fused copies from here store non-temporally (AVX-512 level) */
#define CRC_CALIBRATE_BYTES 16384
#define CRC_CALIBRATE_ROUNDS 5

static int crc_long_level = KF_CRC_PORTABLE;

static double crc_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t crc_at(int level, uint32_t reg, const unsigned char *p, size_t n, unsigned char *dst);

/* Which level is fastest on long inputs differs between CPUs (the crc32 instruction's throughput:
 * ~5 GB/s on some Xeons where 16-byte folding runs at ~9, ~26 GB/s on AMD Zen 4 where folding
 * runs at ~15): time each available level on the same bytes (best of a few rounds, ~0.1 ms). */
static void crc_calibrate(void)
{
    static unsigned char sample[CRC_CALIBRATE_BYTES];
    for (size_t i = 0; i < sizeof sample; i++)
        sample[i] = (unsigned char)(i * 131u + 7u);
    double best_time = 0;
    crc_long_level = crc_level;
    for (int level = KF_CRC_SSE42; level <= crc_level; level++) {
        double best = 1e9;
        volatile uint32_t sink = 0;
        for (int r = 0; r < CRC_CALIBRATE_ROUNDS; r++) {
            double t = crc_clock();
            sink ^= crc_at(level, sink, sample, sizeof sample, NULL);
            t = crc_clock() - t;
            if (t < best)
                best = t;
        }
        if (level == KF_CRC_SSE42 || best < best_time) {
            best_time = best;
            crc_long_level = level;
        }
    }
}

void kf_crc_init(void)
{
    crc_tables_init();
    crc_level = KF_CRC_PORTABLE;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_level = KF_CRC_SSE42;
        if (__builtin_cpu_supports("pclmul")) {
            crc_level = KF_CRC_PCLMUL;
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                __builtin_cpu_supports("vpclmulqdq"))
                crc_level = KF_CRC_AVX512;
        }
    }
#endif
    crc_long_level = crc_level;
    if (crc_level >= KF_CRC_PCLMUL)
        crc_calibrate();
}

int kf_crc_level(void)
{
    return crc_level;
}

const char *kf_crc_implementation(void)
{
    static const char *const names[4][4] = {
        {"table"},
        {"", "sse4.2"},
        {"", "pclmul+sse4.2 (crc32 instruction from 1 KiB)", "pclmul+sse4.2"},
        {"", "avx512-vpclmul+sse4.2 (crc32 instruction from 1 KiB)",
         "avx512-vpclmul+sse4.2 (128-bit folding from 1 KiB)", "avx512-vpclmul+sse4.2"},
    };
    return names[crc_level][crc_long_level];
}

/* Raw register in, raw register out, at `level` (capped by the CPU's); dst: copy too.  Folding
 * of 16-byte lanes from CRC_CLMUL_MIN bytes (faster than the crc32 instruction there on every CPU
 * measured), 512-bit registers from CRC_LONG_MIN. */
static uint32_t crc_at(int level, uint32_t reg, const unsigned char *p, size_t n, unsigned char *dst)
{
    if (level > crc_level)
        level = crc_level;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (level >= KF_CRC_AVX512 && n >= CRC_LONG_MIN) {
        if (dst && n >= CRC_STREAM_MIN) {           /* stores streamed from a 64-byte boundary */
            size_t head = (size_t)(-(uintptr_t)dst & 63);
            reg = crc_at(KF_CRC_SSE42, reg, p, head, dst);
            return crc32c_avx512(reg, p + head, n - head, dst + head, 1);
        }
        return crc32c_avx512(reg, p, n, dst, 0);
    }
    if (level >= KF_CRC_PCLMUL && n >= CRC_CLMUL_MIN)
        return crc32c_clmul(reg, p, n, dst);
    if (dst)
        memcpy(dst, p, n);
    if (level >= KF_CRC_SSE42)
        return crc32c_hw(reg, p, n);
#else
    (void)level;
    if (dst)
        memcpy(dst, p, n);
#endif
    return crc32c_sw(reg, p, n);
}

/* The production choice: the calibrated level from CRC_LONG_MIN bytes, the CPU's below. */
static inline uint32_t crc_raw(uint32_t reg, const unsigned char *p, size_t n, unsigned char *dst)
{
    return crc_at(n >= CRC_LONG_MIN ? crc_long_level : crc_level, reg, p, n, dst);
}

uint32_t kf_crc32c(uint32_t value, const unsigned char *p, size_t n)
{
    return ~crc_raw(~value, p, n, NULL);
}

uint32_t kf_crc32c_at(int level, uint32_t value, const unsigned char *p, size_t n)
{
    return ~crc_at(level, ~value, p, n, NULL);
}

uint32_t kf_crc32c_copy(uint32_t value, unsigned char *dst, const unsigned char *src, size_t n)
{
    return ~crc_raw(~value, src, n, dst);
}

uint32_t kf_crc32c_copy_at(int level, uint32_t value, unsigned char *dst, const unsigned char *src, size_t n)
{
    return ~crc_at(level, ~value, src, n, dst);
}
