/*
 * Codec libraries side by side (BENCHMARKS.md, "Codec libraries"): every batch payload of a
 * corpus log decompressed into one reused buffer, best of 7 rounds, GB/s of decompressed output
 * (CPU time of the thread).  Measurement only: never built by setup.py.
 *
 *   ours SPEC CODEC LOG       the product's kf_decompress (_fastcodecs.c), kf_codecs_init(SPEC):
 *                             e.g. "gzip:zlib", "gzip:libdeflate", "snappy", "zstd"; CODEC its id
 *   libdeflate SO LOG         libdeflate_gzip_decompress_ex of the library file SO
 *   isal SO LOG               ISA-L's isal_inflate, crc_flag ISAL_GZIP (header and trailer checked)
 *   libsnappy SO LOG          snappy_uncompress of each xerial chunk (the C API of libsnappy)
 *   zstd SO LOG               ZSTD_decompressStream per payload, as kf_unzstd calls it
 *
 * Build (from the checkout; the ISA-L header from libisal-dev, e.g. extracted into /tmp/isal):
 *   R=kafka_format/records; PY=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
 *   gcc -O3 -std=gnu11 -fno-strict-aliasing -DKF_HAVE_DEFLATE=1 -DKF_HAVE_ZLIB=1 -DKF_HAVE_LZ4=1 \
 *       -DKF_HAVE_ZSTD=1 -DKF_HAVE_SNAPPY=1 -I$PY -I$R -I/tmp/isal/usr/include \
 *       tests/benchmarks/codec_libraries.c $R/_fastcodecs.c $R/_codeclibs.c $R/_fastxxh.c \
 *       -L$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))') \
 *       -lpython3.11 -lz -ldl -o build/codec_libraries
 * Corpora: tests/benchmarks/shapes.py's (build/bench-data/shape-*.log).
 */
#define _GNU_SOURCE
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/igzip_lib.h>

#include "_fastcodecs.h"

#define RECORDS_AT 61                 /* a v2 batch's records region */
#define ROUNDS 7
#define MAX_OUTPUT ((size_t)256 << 20)
#define XERIAL_HEADER 16

typedef struct {
    const unsigned char *p;
    size_t n;
} Payload;

static Payload *payloads;
static size_t count;
static unsigned char *out;

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The records regions of every batch of the log at `path`. */
static void load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        perror(path);
        exit(2);
    }
    long n = ftell(f);
    unsigned char *b = malloc((size_t)n);
    rewind(f);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read %ld bytes\n", path, n);
        exit(2);
    }
    fclose(f);
    payloads = malloc(sizeof *payloads * ((size_t)n / RECORDS_AT + 1));
    for (long pos = 0; pos + RECORDS_AT <= n;) {
        size_t size = 12 + be32(b + pos + 8);
        payloads[count].p = b + pos + RECORDS_AT;
        payloads[count].n = size - RECORDS_AT;
        count++;
        pos += (long)size;
    }
}

static void fail(const char *what, size_t i, long code)
{
    fprintf(stderr, "%s: payload %zu not decoded (%ld)\n", what, i, code);
    exit(3);
}

static KfScratch scratch;
static int codec;

static size_t run_ours(void)
{
    size_t total = 0, got = 0;
    for (size_t i = 0; i < count; i++) {
        int rc = kf_decompress(&scratch, codec, payloads[i].p, payloads[i].n, MAX_OUTPUT, &got, 0);
        if (rc != KF_OK)
            fail("ours", i, rc);
        total += got;
    }
    return total;
}

static void *deflater;
static unsigned (*deflate_gzip)(void *, const void *, size_t, void *, size_t, size_t *, size_t *);

static size_t run_libdeflate(void)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        size_t used = 0, got = 0;
        unsigned rc = deflate_gzip(deflater, payloads[i].p, payloads[i].n, out, MAX_OUTPUT, &used, &got);
        if (rc != 0)
            fail("libdeflate", i, rc);
        total += got;
    }
    return total;
}

static struct inflate_state isal_state;
static void (*isal_reset)(struct inflate_state *);
static int (*isal_run)(struct inflate_state *);

static size_t run_isal(void)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        isal_reset(&isal_state);
        isal_state.crc_flag = ISAL_GZIP;
        isal_state.next_in = (uint8_t *)payloads[i].p;
        isal_state.avail_in = (uint32_t)payloads[i].n;
        isal_state.next_out = out;
        isal_state.avail_out = (uint32_t)MAX_OUTPUT;
        int rc = isal_run(&isal_state);
        if (rc != ISAL_DECOMP_OK || isal_state.block_state != ISAL_BLOCK_FINISH)
            fail("isal", i, rc);
        total += isal_state.total_out;
    }
    return total;
}

static int (*snappy_length)(const char *, size_t, size_t *);
static int (*snappy_raw)(const char *, size_t, char *, size_t *);

static size_t run_libsnappy(void)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        const unsigned char *p = payloads[i].p;
        size_t n = payloads[i].n, pos = XERIAL_HEADER, at = 0;
        while (n - pos >= 4) {
            uint32_t chunk = be32(p + pos);
            size_t len = 0;
            if (snappy_length((const char *)p + pos + 4, chunk, &len) != 0 || len > MAX_OUTPUT - at ||
                snappy_raw((const char *)p + pos + 4, chunk, (char *)out + at, &len) != 0)
                fail("libsnappy", i, (long)pos);
            at += len;
            pos += 4 + chunk;
        }
        total += at;
    }
    return total;
}

typedef struct { const void *src; size_t size; size_t pos; } ZstdIn;
typedef struct { void *dst; size_t size; size_t pos; } ZstdOut;
static void *zstd_dctx;
static size_t (*zstd_stream)(void *, ZstdOut *, ZstdIn *);
static size_t (*zstd_reset)(void *, int);
static unsigned (*zstd_is_error)(size_t);

static size_t run_zstd(void)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        zstd_reset(zstd_dctx, 1);
        ZstdIn in = {payloads[i].p, payloads[i].n, 0};
        ZstdOut o = {out, MAX_OUTPUT, 0};
        size_t rc = zstd_stream(zstd_dctx, &o, &in);
        if (zstd_is_error(rc) || rc != 0)
            fail("zstd", i, (long)rc);
        total += o.pos;
    }
    return total;
}

/* `name` of `lib`, or exit. */
static void *symbol(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "no %s\n", name);
        exit(1);
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s ours SPEC CODEC LOG | libdeflate|isal|libsnappy|zstd SO LOG\n", argv[0]);
        return 1;
    }
    const char *mode = argv[1];
    load(argv[argc - 1]);
    out = malloc(MAX_OUTPUT);
    size_t (*run)(void) = NULL;
    if (strcmp(mode, "ours") == 0) {
        kf_codecs_init(argv[2]);
        codec = atoi(argv[3]);
        run = run_ours;
    } else {
        void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        if (strcmp(mode, "libdeflate") == 0) {
            void *(*alloc)(void);
            *(void **)&alloc = symbol(lib, "libdeflate_alloc_decompressor");
            *(void **)&deflate_gzip = symbol(lib, "libdeflate_gzip_decompress_ex");
            deflater = alloc();
            run = run_libdeflate;
        } else if (strcmp(mode, "isal") == 0) {
            void (*init)(struct inflate_state *);
            *(void **)&init = symbol(lib, "isal_inflate_init");
            *(void **)&isal_reset = symbol(lib, "isal_inflate_reset");
            *(void **)&isal_run = symbol(lib, "isal_inflate");
            init(&isal_state);
            run = run_isal;
        } else if (strcmp(mode, "libsnappy") == 0) {
            *(void **)&snappy_length = symbol(lib, "snappy_uncompressed_length");
            *(void **)&snappy_raw = symbol(lib, "snappy_uncompress");
            run = run_libsnappy;
        } else if (strcmp(mode, "zstd") == 0) {
            void *(*create)(void);
            *(void **)&create = symbol(lib, "ZSTD_createDCtx");
            *(void **)&zstd_stream = symbol(lib, "ZSTD_decompressStream");
            *(void **)&zstd_reset = symbol(lib, "ZSTD_DCtx_reset");
            *(void **)&zstd_is_error = symbol(lib, "ZSTD_isError");
            zstd_dctx = create();
            run = run_zstd;
        } else {
            fprintf(stderr, "unknown mode %s\n", mode);
            return 1;
        }
    }
    double best = 1e30;
    size_t bytes = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double t = cpu_seconds();
        bytes = run();
        t = cpu_seconds() - t;
        best = t < best ? t : best;
    }
    printf("%s %s: %zu payloads, %.1f MB out, %.3f GB/s\n", mode, argv[2], count, (double)bytes / 1e6,
           (double)bytes / best / 1e9);
    return 0;
}
