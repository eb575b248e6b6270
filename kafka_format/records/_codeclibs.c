/*
 * liblz4, libzstd and libdeflate loaded by soname when the module is imported (see _codeclibs.h).
 */
#include <dlfcn.h>
#include <stddef.h>

#include "_codeclibs.h"

KfLz4Lib kf_lz4;
KfZstdLib kf_zstd;
KfDeflateLib kf_deflate;

/* Our declarations against the libraries' own headers, when the build has them. */
#if defined(__has_include) && !defined(KF_NO_CODEC_HEADERS)
#if __has_include(<lz4.h>)
#include <lz4.h>
_Static_assert(__builtin_types_compatible_p(__typeof__(&LZ4_decompress_safe),
                                            __typeof__(kf_lz4.decompress_safe)), "LZ4_decompress_safe");
_Static_assert(__builtin_types_compatible_p(__typeof__(&LZ4_versionNumber),
                                            __typeof__(kf_lz4.version_number)), "LZ4_versionNumber");
#endif
#if __has_include(<zstd.h>)
#include <zstd.h>
_Static_assert(ZSTD_d_windowLogMax == KF_ZSTD_D_WINDOWLOGMAX, "ZSTD_d_windowLogMax");
_Static_assert(ZSTD_reset_session_only == KF_ZSTD_RESET_SESSION_ONLY, "ZSTD_reset_session_only");
_Static_assert(sizeof(ZSTD_inBuffer) == sizeof(KfZstdIn) && offsetof(ZSTD_inBuffer, src) == offsetof(KfZstdIn, src) &&
               offsetof(ZSTD_inBuffer, size) == offsetof(KfZstdIn, size) &&
               offsetof(ZSTD_inBuffer, pos) == offsetof(KfZstdIn, pos), "ZSTD_inBuffer");
_Static_assert(sizeof(ZSTD_outBuffer) == sizeof(KfZstdOut) && offsetof(ZSTD_outBuffer, dst) == offsetof(KfZstdOut, dst) &&
               offsetof(ZSTD_outBuffer, size) == offsetof(KfZstdOut, size) &&
               offsetof(ZSTD_outBuffer, pos) == offsetof(KfZstdOut, pos), "ZSTD_outBuffer");
_Static_assert(__builtin_types_compatible_p(__typeof__(ZSTD_freeDCtx(NULL)), size_t) &&
               __builtin_types_compatible_p(__typeof__(ZSTD_decompressStream(NULL, NULL, NULL)), size_t) &&
               __builtin_types_compatible_p(__typeof__(ZSTD_isError(0)), unsigned) &&
               __builtin_types_compatible_p(__typeof__(ZSTD_versionNumber()), unsigned), "zstd return types");
#endif
#if __has_include(<libdeflate.h>)
#include <libdeflate.h>
_Static_assert(LIBDEFLATE_SUCCESS == KF_DEFLATE_SUCCESS && LIBDEFLATE_BAD_DATA == KF_DEFLATE_BAD_DATA &&
               LIBDEFLATE_SHORT_OUTPUT == KF_DEFLATE_SHORT_OUTPUT &&
               LIBDEFLATE_INSUFFICIENT_SPACE == KF_DEFLATE_INSUFFICIENT_SPACE, "libdeflate_result");
_Static_assert(__builtin_types_compatible_p(__typeof__(&libdeflate_alloc_decompressor),
                                            __typeof__(kf_deflate.alloc_decompressor)), "libdeflate_alloc_decompressor");
_Static_assert(__builtin_types_compatible_p(__typeof__(&libdeflate_gzip_decompress_ex),
                                            __typeof__(kf_deflate.gzip_decompress_ex)), "libdeflate_gzip_decompress_ex");
_Static_assert(__builtin_types_compatible_p(__typeof__(&libdeflate_free_decompressor),
                                            __typeof__(kf_deflate.free_decompressor)), "libdeflate_free_decompressor");
#endif
#endif

static const char *const LZ4_NAMES[] = {"liblz4.so.1", "liblz4.so", "liblz4.1.dylib", "liblz4.dylib", NULL};
static const char *const ZSTD_NAMES[] = {"libzstd.so.1", "libzstd.so", "libzstd.1.dylib", "libzstd.dylib", NULL};
static const char *const DEFLATE_NAMES[] = {"libdeflate.so.0", "libdeflate.so", "libdeflate.0.dylib",
                                            "libdeflate.dylib", NULL};

/* The first of `names` that opens and has every one of `symbols` (written into `out` in order);
 * NULL when none does. */
static const char *open_with(const char *const names[], const char *const symbols[], void *out[])
{
    for (int i = 0; names[i]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            continue;
        int k = 0;
        for (; symbols[k]; k++)
            if (!(out[k] = dlsym(lib, symbols[k])))
                break;
        if (!symbols[k])
            return names[i];            /* kept open for the life of the process */
        dlclose(lib);
    }
    return NULL;
}

static void load_lz4(void)
{
    static const char *const symbols[] = {"LZ4_decompress_safe", "LZ4_versionNumber", NULL};
    void *f[2];
    const char *name = open_with(LZ4_NAMES, symbols, f);
    if (!name)
        return;
    *(void **)&kf_lz4.decompress_safe = f[0];
    *(void **)&kf_lz4.version_number = f[1];
    kf_lz4.soname = name;
}

static void load_zstd(void)
{
    static const char *const symbols[] = {"ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_DCtx_setParameter",
                                          "ZSTD_DCtx_reset", "ZSTD_decompressStream", "ZSTD_isError",
                                          "ZSTD_versionNumber", NULL};
    void *f[7];
    const char *name = open_with(ZSTD_NAMES, symbols, f);
    if (!name)
        return;
    unsigned (*version)(void);
    *(void **)&version = f[6];
    if (version() < KF_ZSTD_MIN_VERSION)
        return;                         /* its DCtx parameters were experimental then */
    *(void **)&kf_zstd.create_dctx = f[0];
    *(void **)&kf_zstd.free_dctx = f[1];
    *(void **)&kf_zstd.dctx_set_parameter = f[2];
    *(void **)&kf_zstd.dctx_reset = f[3];
    *(void **)&kf_zstd.decompress_stream = f[4];
    *(void **)&kf_zstd.is_error = f[5];
    kf_zstd.version_number = version;
    kf_zstd.soname = name;
}

static void load_deflate(void)
{
    static const char *const symbols[] = {"libdeflate_alloc_decompressor", "libdeflate_gzip_decompress_ex",
                                          "libdeflate_free_decompressor", NULL};
    void *f[3];
    const char *name = open_with(DEFLATE_NAMES, symbols, f);
    if (!name)
        return;
    *(void **)&kf_deflate.alloc_decompressor = f[0];
    *(void **)&kf_deflate.gzip_decompress_ex = f[1];
    *(void **)&kf_deflate.free_decompressor = f[2];
    kf_deflate.soname = name;
}

void kf_codeclibs_load(int want_lz4, int want_zstd, int want_deflate)
{
    static int loaded;
    if (loaded)
        return;
    loaded = 1;
    if (want_lz4)
        load_lz4();
    if (want_zstd)
        load_zstd();
    if (want_deflate)
        load_deflate();
}
