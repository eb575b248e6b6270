/*
 * kafka_format.records._fastdecode xxHash32 (seed 0): the block and descriptor checksums of lz4
 * frames (Lz4BlockInputStream verifies both).  One buffer at a time, or several at once: xxh32
 * is a chain of dependent multiplies per buffer (about 2 bytes a cycle however wide the CPU),
 * so several buffers are hashed side by side in the lanes of one vector register.  Every
 * function here is safe without the GIL (the unit also holds the module's xxh32_many, a test
 * entry point).
 *
 * Levels (kf_xxh_level): 0 portable, 1 AVX2 (two buffers per 256-bit register, two registers),
 * 2 AVX-512 (four buffers per 512-bit register); chosen once at import.
 */
#ifndef KF_FASTXXH_H
#define KF_FASTXXH_H

#include <stddef.h>
#include <stdint.h>

#define KF_XXH_PORTABLE 0
#define KF_XXH_AVX2 1
#define KF_XXH_AVX512 2
#define KF_XXH_MANY 32             /* buffers of one kf_xxh32_many call, at most */

/* The CPU's level (call once, before anything else here). */
void kf_xxh_init(void);
int kf_xxh_level(void);

/* xxh32 (seed 0) of p[0:n]. */
uint32_t kf_xxh32(const unsigned char *p, size_t n);

/* out[i] = xxh32 of p[i][0:n[i]] for i < k (k <= KF_XXH_MANY). */
void kf_xxh32_many(const unsigned char *const p[], const size_t n[], uint32_t out[], int k);

/* The same at a given level (clamped to the CPU's): the tests compare every level. */
void kf_xxh32_many_at(int level, const unsigned char *const p[], const size_t n[], uint32_t out[], int k);

#endif
