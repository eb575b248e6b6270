/*
 * kafka_format.records._fastdecode CRC-32C (Castagnoli, Kafka's Crc32C): one implementation per CPU level,
 * chosen once at import.  Every function is safe without the GIL.
 *
 * Levels (kf_crc_level): 0 portable slicing-by-8 tables, 1 SSE4.2 crc32 instructions, 2 + PCLMULQDQ
 * folding (16-byte lanes), 3 + VPCLMULQDQ on 512-bit registers (AVX-512).  The level used for an
 * input also depends on its length (folding needs at least 64 / 256 bytes).
 */
#ifndef KF_FASTCRC_H
#define KF_FASTCRC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The little-endian 64-bit word at p (unaligned): what the CRC loops fold. */
static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#define KF_CRC_PORTABLE 0
#define KF_CRC_SSE42 1
#define KF_CRC_PCLMUL 2
#define KF_CRC_AVX512 3

/* Tables and the CPU's level (call once, before anything else here). */
void kf_crc_init(void);

/* The best level this CPU supports. */
int kf_crc_level(void);

/* Kafka-style CRC-32C of p[0:n] continuing from `value` (0 for a new checksum). */
uint32_t kf_crc32c(uint32_t value, const unsigned char *p, size_t n);

/* The same at a given level (clamped to the CPU's): the tests compare every level. */
uint32_t kf_crc32c_at(int level, uint32_t value, const unsigned char *p, size_t n);

/* Copy src[0:n] to dst and return the CRC-32C of those bytes continuing from `value`, reading the
 * source once (the fused path of large keys and values: load, fold, store). */
uint32_t kf_crc32c_copy(uint32_t value, unsigned char *dst, const unsigned char *src, size_t n);

/* The same at a given level (tests). */
uint32_t kf_crc32c_copy_at(int level, uint32_t value, unsigned char *dst, const unsigned char *src,
                           size_t n);

/* "table", "sse4.2", "pclmul+sse4.2" or "avx512-vpclmul+sse4.2". */
const char *kf_crc_implementation(void);

#endif
