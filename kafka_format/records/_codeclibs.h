/*
 * liblz4 and libzstd, found when the module loads (dlopen), not when it is built.
 *
 * The compiled decoder calls a handful of functions of each library.  Linking them at build
 * time needs their development files (liblz4-dev, libzstd-dev), which a fresh machine seldom
 * has, while their run-time libraries are almost always there (systemd, zstd, and the kernel's
 * tools depend on them).  So the decoder declares the entry points it calls from the
 * libraries' stable ABI, below, and loads them by soname when the module is imported; a
 * library that is absent (or too old) leaves its codec to the Python path, as a codec not
 * compiled in always did.  When a library's header is present at build time, _codeclibs.c
 * checks these declarations against it.
 *
 *   liblz4 (lz4.h, any release since r129)
 *     int LZ4_decompress_safe(const char *src, char *dst, int compressedSize, int dstCapacity)
 *     int LZ4_versionNumber(void)                       major*10000 + minor*100 + release
 *   libzstd (zstd.h, >= 1.4.0: the DCtx parameter API became stable there)
 *     ZSTD_DCtx *ZSTD_createDCtx(void)
 *     size_t ZSTD_freeDCtx(ZSTD_DCtx *)
 *     size_t ZSTD_DCtx_setParameter(ZSTD_DCtx *, ZSTD_dParameter, int)   windowLogMax = 100
 *     size_t ZSTD_DCtx_reset(ZSTD_DCtx *, ZSTD_ResetDirective)           session_only = 1
 *     size_t ZSTD_decompressStream(ZSTD_DStream *, ZSTD_outBuffer *, ZSTD_inBuffer *)
 *     unsigned ZSTD_isError(size_t)
 *     unsigned ZSTD_versionNumber(void)
 *
 *   ZSTD_inBuffer  | src  const void * | size size_t | pos size_t |
 *   ZSTD_outBuffer | dst  void *       | size size_t | pos size_t |
 */
#ifndef KF_CODECLIBS_H
#define KF_CODECLIBS_H

#include <stddef.h>

#define KF_ZSTD_D_WINDOWLOGMAX 100     /* ZSTD_d_windowLogMax */
#define KF_ZSTD_RESET_SESSION_ONLY 1   /* ZSTD_reset_session_only */
#define KF_ZSTD_MIN_VERSION 10400      /* 1.4.0 */

typedef struct { const void *src; size_t size; size_t pos; } KfZstdIn;
typedef struct { void *dst; size_t size; size_t pos; } KfZstdOut;

typedef struct {
    int (*decompress_safe)(const char *src, char *dst, int compressed_size, int dst_capacity);
    int (*version_number)(void);
    const char *soname;             /* NULL: not loaded */
} KfLz4Lib;

typedef struct {
    void *(*create_dctx)(void);
    size_t (*free_dctx)(void *dctx);
    size_t (*dctx_set_parameter)(void *dctx, int param, int value);
    size_t (*dctx_reset)(void *dctx, int directive);
    size_t (*decompress_stream)(void *dctx, KfZstdOut *out, KfZstdIn *in);
    unsigned (*is_error)(size_t code);
    unsigned (*version_number)(void);
    const char *soname;             /* NULL: not loaded */
} KfZstdLib;

extern KfLz4Lib kf_lz4;
extern KfZstdLib kf_zstd;

/* Load the libraries (once; later calls do nothing).  `want_lz4`/`want_zstd` 0: leave that one
 * unloaded.  Never fails: a library not found stays unloaded (soname NULL). */
void kf_codeclibs_load(int want_lz4, int want_zstd);

#endif
