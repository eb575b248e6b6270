/*
 * liblz4, libzstd and libdeflate, found when the module loads (dlopen), not when it is built.
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
 *   libdeflate (libdeflate.h, any release since 1.0: the gzip _ex entry point is in every one;
 *   Debian's libdeflate0, a dependency of libtiff)
 *     struct libdeflate_decompressor *libdeflate_alloc_decompressor(void)
 *     enum libdeflate_result libdeflate_gzip_decompress_ex(struct libdeflate_decompressor *,
 *         const void *in, size_t in_nbytes, void *out, size_t out_nbytes_avail,
 *         size_t *actual_in_nbytes_ret, size_t *actual_out_nbytes_ret)
 *     void libdeflate_free_decompressor(struct libdeflate_decompressor *)
 *   libdeflate_result: SUCCESS 0, BAD_DATA 1, SHORT_OUTPUT 2, INSUFFICIENT_SPACE 3.
 *   libdeflate has no run-time version query (its version is a header macro only).
 */
#ifndef KF_CODECLIBS_H
#define KF_CODECLIBS_H

#include <stddef.h>

#define KF_ZSTD_D_WINDOWLOGMAX 100     /* ZSTD_d_windowLogMax */
#define KF_ZSTD_RESET_SESSION_ONLY 1   /* ZSTD_reset_session_only */
#define KF_ZSTD_MIN_VERSION 10400      /* 1.4.0 */
#define KF_DEFLATE_SUCCESS 0            /* LIBDEFLATE_SUCCESS */
#define KF_DEFLATE_BAD_DATA 1           /* LIBDEFLATE_BAD_DATA */
#define KF_DEFLATE_SHORT_OUTPUT 2       /* LIBDEFLATE_SHORT_OUTPUT */
#define KF_DEFLATE_INSUFFICIENT_SPACE 3 /* LIBDEFLATE_INSUFFICIENT_SPACE */

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

/* libdeflate's opaque decompressor (the same tag as libdeflate.h's, so the declarations below are
 * its own); its enum libdeflate_result is returned as unsigned, the integer type GCC and clang
 * give an enum without negative values. */
struct libdeflate_decompressor;

typedef struct {
    struct libdeflate_decompressor *(*alloc_decompressor)(void);
    unsigned (*gzip_decompress_ex)(struct libdeflate_decompressor *d, const void *in, size_t in_nbytes,
                                   void *out, size_t out_nbytes_avail, size_t *actual_in_nbytes_ret,
                                   size_t *actual_out_nbytes_ret);
    void (*free_decompressor)(struct libdeflate_decompressor *d);
    const char *soname;             /* NULL: not loaded */
} KfDeflateLib;

extern KfLz4Lib kf_lz4;
extern KfZstdLib kf_zstd;
extern KfDeflateLib kf_deflate;

/* Load the libraries (once; later calls do nothing).  `want_lz4`/`want_zstd`/`want_deflate` 0:
 * leave that one unloaded.  Never fails: a library not found stays unloaded (soname NULL). */
void kf_codeclibs_load(int want_lz4, int want_zstd, int want_deflate);

#endif
