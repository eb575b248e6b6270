/*
 * Kafka's codecs in C for the fused decode path (see _fastcodecs.h).
 *
 * Each codec accepts only the framing Kafka producers write and answers KF_FALLBACK for
 * everything else, so that kafka_format.records.compression (the Python path) decides every
 * unusual or broken payload and reports its exact error:
 *
 *   lz4    Kafka's frame (Lz4BlockInputStream): FLG version 01 + independent blocks (block
 *          checksums verified, content size skipped, content checksum read not verified),
 *          BD block size 4..7, a correct header checksum (magic 2), blocks up to the end
 *          mark; bytes after the end mark are ignored, as Kafka does.  liblz4's
 *          LZ4_decompress_safe per block (liblz4 loaded at import: _codeclibs.h).
 *   zstd   frames back to back (skippable frames skipped) by libzstd's streaming decoder
 *          with the window limit of the Python path (ZSTD_MAX_WINDOW); the input must end
 *          exactly at the end of a frame (libzstd loaded at import: _codeclibs.h).
 *   snappy xerial stream (SnappyInputStream) or one raw block, each chunk decoded by our own
 *          raw-format decoder (snappy_elements: 1.14x libsnappy 1.1.9 here); a concatenated
 *          stream header falls back.
 *   gzip   members with FLG 0 (what GZIPOutputStream writes) back to back up to the end of the
 *          payload, each decoded whole by libdeflate (libdeflate_gzip_decompress_ex, loaded at
 *          import: _codeclibs.h), which checks the trailer's CRC32 and ISIZE; anything else after
 *          a member (GZIPInputStream ignores bytes that are no member header) falls back.  The
 *          trailer's ISIZE only sizes the first attempt (bounded by max_output and deflate's
 *          largest expansion): a buffer too small is grown, doubling, and the member decoded
 *          again.  Without libdeflate: one member with FLG 0, raw inflate by zlib, CRC32 and
 *          ISIZE checked, nothing after the trailer.
 *          libdeflate (1.14, lib/deflate_decompress.c) accepts a few deflate streams zlib
 *          rejects and no compressor writes: HLIT 287-288 or HDIST 31-32, the litlen symbols
 *          286/287 and distance symbols 30/31, a precode of one codeword, the unused codeword of
 *          a one-symbol code, a code-length repeat running past the last length.  Such a
 *          payload decodes here (when its CRC32 matches) where Java's Inflater and the Python
 *          path report corrupt deflate data; KAFKA_FORMAT_C_CODECS=gzip:zlib keeps zlib's
 *          judgement.  A leader rejects one on produce (it decompresses a compressed batch to
 *          validate its records, with Java's Inflater: zlib).
 *
 * Output never exceeds max_output: the buffer grows (doubling) up to max_output + a few
 * bytes, and a payload that would need more falls back (the Python path then raises the
 * DecompressionLimitError).  Untrusted sizes never size an allocation beyond max_output.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "_codeclibs.h"
#include "_fastcodecs.h"
#include "_fastxxh.h"

#ifdef KF_HAVE_ZLIB
#include <zlib.h>
#endif

#define SCRATCH_MIN ((size_t)256 << 10)

static unsigned enabled = 1u;        /* kf_codecs_init's answer */
static int gzip_by_deflate;          /* gzip decoded by libdeflate (else by zlib) */
static const char *const CODEC_NAMES[] = {"none", "gzip", "snappy", "lz4", "zstd"};   /* by codec id */

#define GZIP_BY_ZLIB 1u              /* codecs_named's gzip libraries */
#define GZIP_BY_DEFLATE 2u

/* The library a spec entry names after its codec ("gzip:zlib"): GZIP_BY_* bits, 0 if unknown. */
static unsigned gzip_library_named(const char *lib, size_t n)
{
    if (n == 0)
        return GZIP_BY_ZLIB | GZIP_BY_DEFLATE;
    if (n == 4 && strncasecmp(lib, "zlib", n) == 0)
        return GZIP_BY_ZLIB;
    if (n == 10 && strncasecmp(lib, "libdeflate", n) == 0)
        return GZIP_BY_DEFLATE;
    return 0;
}

/* The codecs named in `spec` ("none", or a comma list such as "lz4,zstd"; NULL: every one) as bits;
 * *gzip_libs: the libraries gzip may use (GZIP_BY_* bits). */
static unsigned codecs_named(const char *spec, unsigned *gzip_libs)
{
    *gzip_libs = GZIP_BY_ZLIB | GZIP_BY_DEFLATE;
    if (!spec)
        return ~0u;
    unsigned bits = 0;
    *gzip_libs = 0;
    while (*spec) {
        while (*spec == ',' || isspace((unsigned char)*spec))
            spec++;
        size_t n = 0, name = 0;
        while (spec[n] && spec[n] != ',' && !isspace((unsigned char)spec[n]))
            n++;
        while (name < n && spec[name] != ':')
            name++;
        const char *lib = name < n ? spec + name + 1 : spec + n;
        size_t lib_n = name < n ? n - name - 1 : 0;
        for (unsigned id = 1; id <= KF_CODEC_ZSTD && name; id++) {
            if (strlen(CODEC_NAMES[id]) != name || strncasecmp(spec, CODEC_NAMES[id], name) != 0)
                continue;
            if (id == KF_CODEC_GZIP) {
                unsigned libs = gzip_library_named(lib, lib_n);
                *gzip_libs |= libs;
                bits |= libs ? 1u << id : 0;
            } else if (lib_n == 0) {
                bits |= 1u << id;
            }
        }
        spec += n;
    }
    return bits;
}

unsigned kf_codecs_init(const char *spec)
{
    unsigned gzip_libs;
    unsigned want = codecs_named(spec, &gzip_libs), bits = 1u;
    int gzip = (want >> KF_CODEC_GZIP) & 1;
    (void)gzip;                          /* unused in a build without zlib and libdeflate */
#ifdef KF_HAVE_ZLIB
    if (gzip && (gzip_libs & GZIP_BY_ZLIB))
        bits |= 1u << KF_CODEC_GZIP;
#endif
#ifdef KF_HAVE_SNAPPY
    bits |= want & (1u << KF_CODEC_SNAPPY);
#endif
    int lz4 = 0, zstd = 0, deflate = 0;  /* loaded only when compiled in and wanted */
#ifdef KF_HAVE_LZ4
    lz4 = (want >> KF_CODEC_LZ4) & 1;
#endif
#ifdef KF_HAVE_ZSTD
    zstd = (want >> KF_CODEC_ZSTD) & 1;
#endif
#ifdef KF_HAVE_DEFLATE
    deflate = gzip && (gzip_libs & GZIP_BY_DEFLATE);
#endif
    kf_codeclibs_load(lz4, zstd, deflate);
    if (deflate && kf_deflate.soname) {
        bits |= 1u << KF_CODEC_GZIP;
        gzip_by_deflate = 1;
    }
    if (lz4 && kf_lz4.soname)
        bits |= 1u << KF_CODEC_LZ4;
    if (zstd && kf_zstd.soname)
        bits |= 1u << KF_CODEC_ZSTD;
    enabled = bits;
    return bits;
}

unsigned kf_codecs_available(void)
{
    return enabled;
}

/* "name version" of a loaded library: liblz4/libzstd encode it as major*10000 + minor*100 + release. */
static PyObject *library(const char *soname, unsigned version)
{
    return PyUnicode_FromFormat("%s %u.%u.%u", soname, version / 10000, version / 100 % 100, version % 100);
}

PyObject *kf_codec_libraries(void)
{
    PyObject *d = PyDict_New(), *v = NULL;
    if (!d)
        return NULL;
    for (int id = 1; id <= KF_CODEC_ZSTD; id++) {
        if (!((enabled >> id) & 1))
            continue;
        switch (id) {
        case KF_CODEC_GZIP:
            if (gzip_by_deflate)
                v = PyUnicode_FromString(kf_deflate.soname);
#ifdef KF_HAVE_ZLIB
            else
                v = PyUnicode_FromFormat("zlib %s", zlibVersion());
#endif
            break;
        case KF_CODEC_SNAPPY:
            v = PyUnicode_FromString("our raw-format decoder");
            break;
        case KF_CODEC_LZ4:
            v = library(kf_lz4.soname, (unsigned)kf_lz4.version_number());
            break;
        case KF_CODEC_ZSTD:
            v = library(kf_zstd.soname, kf_zstd.version_number());
            break;
        }
        if (!v || PyDict_SetItemString(d, CODEC_NAMES[id], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
        v = NULL;
    }
    return d;
}

/* Make room for `need` bytes of output (need <= max_output + SNAPPY_SLACK by every caller). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))
#endif
static int scratch_reserve(KfScratch *s, size_t need)
{
    if (need <= s->capacity)
        return KF_OK;
    if (s->borrowed)
        return KF_NO_ROOM;
    size_t cap = s->capacity ? s->capacity : SCRATCH_MIN;
    while (cap < need)
        cap *= 2;
    /* never more than needed when doubling overshoots a large request */
    if (cap > need && cap - need > ((size_t)64 << 20))
        cap = need;
    unsigned char *p = PyMem_RawRealloc(s->data, cap);
    if (!p)
        return KF_NO_MEMORY;
    s->data = p;
    s->capacity = cap;
    return KF_OK;
}

void kf_scratch_free(KfScratch *s)
{
    PyMem_RawFree(s->data);
    s->data = NULL;
    s->capacity = 0;
    if (s->zstd)                        /* only ever made by kf_unzstd, with libzstd loaded */
        kf_zstd.free_dctx(s->zstd);
    s->zstd = NULL;
    if (s->deflate)                     /* only ever made by kf_gunzip_deflate, with libdeflate loaded */
        kf_deflate.free_decompressor(s->deflate);
    s->deflate = NULL;
#ifdef KF_HAVE_ZLIB
    if (s->zlib) {
        inflateEnd((z_stream *)s->zlib);
        PyMem_RawFree(s->zlib);
    }
#endif
    s->zlib = NULL;
}

static inline uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint32_t kf_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* ------------------------------------------------------------------ lz4 */

#ifdef KF_HAVE_LZ4
#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_FLG_FIXED_MASK 0xE3      /* version, independence, reserved bits */
#define LZ4_FLG_FIXED 0x60           /* version 01, independent blocks, reserved 0 */
#define LZ4_FLG_BLOCK_CHECKSUM 0x10
#define LZ4_FLG_CONTENT_SIZE 0x08
#define LZ4_FLG_CONTENT_CHECKSUM 0x04
#define LZ4_STORED 0x80000000u

/* The frame of an lz4 payload as kf_unlz4 takes it: its FLG byte, first block and largest
 * block; 0 when it is one, else the payload falls back (not Kafka's framing). */
typedef struct {
    unsigned flg;
    size_t first, max_block, checksum;      /* checksum: bytes after each block (0 or 4) */
} Lz4Frame;

static int lz4_frame(const unsigned char *src, size_t n, Lz4Frame *f)
{
    if (n < 7 || le32(src) != LZ4_FRAME_MAGIC)
        return -1;
    unsigned flg = src[4], bd = src[5];
    unsigned code = (bd >> 4) & 7;
    if ((flg & LZ4_FLG_FIXED_MASK) != LZ4_FLG_FIXED || (bd & 0x8F) || code < 4)
        return -1;
    size_t hc_at = 6 + ((flg & LZ4_FLG_CONTENT_SIZE) ? 8 : 0);   /* content size: skipped */
    if (n <= hc_at || src[hc_at] != ((kf_xxh32(src + 4, hc_at - 4) >> 8) & 0xFF))
        return -1;
    f->flg = flg;
    f->first = hc_at + 1;
    f->max_block = (size_t)1 << (2 * code + 8);
    f->checksum = (flg & LZ4_FLG_BLOCK_CHECKSUM) ? 4 : 0;
    return 0;
}

/* Walk the blocks of a frame: the frame must be complete (up to the end mark).  *bound receives
 * the output bound (a stored block gives its size, a compressed one <= max_block); with `jobs`,
 * each block with a checksum is added to them (at most `room`: -1 beyond). */
static int lz4_blocks(const unsigned char *src, size_t n, const Lz4Frame *f, size_t *bound,
                      const unsigned char **job_p, size_t *job_n, uint32_t *job_want, int *jobs, int room)
{
    size_t pos = f->first;
    *bound = 0;
    for (;;) {
        if (n - pos < 4)
            return -1;
        uint32_t word = le32(src + pos);
        size_t size = word & ~LZ4_STORED;
        if (size == 0) {
            if ((f->flg & LZ4_FLG_CONTENT_CHECKSUM) && n - pos - 4 < 4)
                return -1;                          /* read, never verified, by Kafka */
            return 0;
        }
        if (size > f->max_block || n - pos - 4 < size + f->checksum)
            return -1;
        *bound += (word & LZ4_STORED) ? size : f->max_block;
        if (job_p && f->checksum) {
            if (*jobs == room)
                return -1;
            job_p[*jobs] = src + pos + 4;
            job_n[*jobs] = size;
            job_want[*jobs] = le32(src + pos + 4 + size);
            (*jobs)++;
        }
        pos += 4 + size + f->checksum;
    }
}

void kf_lz4_check_group(const unsigned char *const src[], const size_t n[], int count, unsigned char ok[])
{
    const unsigned char *job_p[KF_XXH_MANY];
    size_t job_n[KF_XXH_MANY];
    uint32_t job_want[KF_XXH_MANY], job_got[KF_XXH_MANY];
    int first_job[KF_LZ4_GROUP + 1], jobs = 0;
    if (count > KF_LZ4_GROUP)
        count = KF_LZ4_GROUP;
    for (int i = 0; i < count; i++) {
        Lz4Frame f;
        size_t bound;
        int before = jobs;
        first_job[i] = jobs;
        ok[i] = lz4_frame(src[i], n[i], &f) == 0 &&
                lz4_blocks(src[i], n[i], &f, &bound, job_p, job_n, job_want, &jobs, KF_XXH_MANY) == 0;
        if (!ok[i])
            jobs = before;                          /* verified by kf_unlz4 itself, if at all */
    }
    first_job[count] = jobs;
    if (jobs > 0)
        kf_xxh32_many(job_p, job_n, job_got, jobs);
    for (int i = 0; i < count; i++)
        for (int j = first_job[i]; ok[i] && j < first_job[i + 1]; j++)
            ok[i] = job_got[j] == job_want[j];
}

static int kf_unlz4(KfScratch *s, const unsigned char *src, size_t n, size_t max_output, size_t *out_len,
                    int checked)
{
    Lz4Frame f;
    size_t bound;
    if (lz4_frame(src, n, &f) < 0 || lz4_blocks(src, n, &f, &bound, NULL, NULL, NULL, NULL, 0) < 0)
        return KF_FALLBACK;
    if (bound > max_output)
        bound = max_output;
    int rc = scratch_reserve(s, bound ? bound : 1);
    if (rc != KF_OK)
        return rc;
    size_t total = 0, pos = f.first;
    for (;;) {
        uint32_t word = le32(src + pos);
        size_t size = word & ~LZ4_STORED;
        if (size == 0)
            break;
        const unsigned char *block = src + pos + 4;
        if (f.checksum && !checked && kf_xxh32(block, size) != le32(block + size))
            return KF_FALLBACK;
        size_t room = bound - total;
        if (word & LZ4_STORED) {
            if (size > room)
                return KF_FALLBACK;
            memcpy(s->data + total, block, size);
            total += size;
        } else {
            size_t cap = room < f.max_block ? room : f.max_block;
            if (cap == 0)
                return KF_FALLBACK;
            int got = kf_lz4.decompress_safe((const char *)block, (char *)s->data + total, (int)size, (int)cap);
            if (got < 0)
                return KF_FALLBACK;
            total += (size_t)got;
        }
        pos += 4 + size + f.checksum;
    }
    *out_len = total;
    return KF_OK;
}
#endif

/* ------------------------------------------------------------------ zstd */

#ifdef KF_HAVE_ZSTD

static int kf_unzstd(KfScratch *s, const unsigned char *src, size_t n, size_t max_output, size_t *out_len)
{
    const KfZstdLib *z = &kf_zstd;
    if (!s->zstd) {
        void *d = z->create_dctx();
        if (!d)
            return KF_NO_MEMORY;
        if (z->is_error(z->dctx_set_parameter(d, KF_ZSTD_D_WINDOWLOGMAX, 27))) {  /* ZSTD_MAX_WINDOW */
            z->free_dctx(d);
            return KF_FALLBACK;
        }
        s->zstd = d;
    } else {
        z->dctx_reset(s->zstd, KF_ZSTD_RESET_SESSION_ONLY);
    }
    void *d = s->zstd;
    size_t want = n * 4 < SCRATCH_MIN ? SCRATCH_MIN : n * 4;
    if (want > max_output + 1)
        want = max_output + 1;
    int rc = scratch_reserve(s, want);
    if (rc != KF_OK)
        return rc;
    KfZstdIn in = {src, n, 0};
    KfZstdOut out = {s->data, s->capacity < max_output + 1 ? s->capacity : max_output + 1, 0};
    size_t ret = 0;
    if (n == 0) {                                     /* no frame: nothing (as the Python path) */
        *out_len = 0;
        return KF_OK;
    }
    for (;;) {
        ret = z->decompress_stream(d, &out, &in);
        if (z->is_error(ret) || out.pos > max_output)
            return KF_FALLBACK;                       /* corrupt, or over the cap */
        if (in.pos == in.size && (ret == 0 || out.pos < out.size))
            break;                                    /* input consumed, everything flushed */
        if (out.pos == out.size) {                    /* output full: grow (bounded by the cap) */
            if (out.size > max_output)
                return KF_FALLBACK;
            size_t grow = out.size * 2 > max_output + 1 ? max_output + 1 : out.size * 2;
            if ((rc = scratch_reserve(s, grow)) != KF_OK)
                return rc;
            out.dst = s->data;
            out.size = grow;
        }
    }
    if (ret != 0)
        return KF_FALLBACK;                           /* a truncated frame */
    *out_len = out.pos;
    return KF_OK;
}
#endif

/* ------------------------------------------------------------------ snappy */

#ifdef KF_HAVE_SNAPPY
static const unsigned char XERIAL_MAGIC[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
#define XERIAL_HEADER 16
#define XERIAL_MAX_CHUNK ((size_t)512 << 20)

/* The raw block's uncompressed length varint (<= 5 bytes, 32 bits), or -1; *used: its bytes. */
static int64_t snappy_declared(const unsigned char *p, size_t n, size_t *used)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 5; i++) {
        v |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) {
            *used = i + 1;
            return v > 0xFFFFFFFFu ? -1 : (int64_t)v;
        }
    }
    return -1;
}

/* Output bytes past a block's end that its decoding may write (then overwritten or unused). */
#define SNAPPY_SLACK 64

static inline uint32_t le_n(const unsigned char *p, unsigned n)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* The elements of one raw snappy block (after its length varint) into exactly [dst, dst + dlen):
 * literals and copies as the format defines them (snappy's format_description.txt).  Returns 0,
 * or -1 for anything a conforming decoder (or the Python path's) rejects: a tag or literal
 * running past the input, a copy with offset 0 or reaching before the output's start, output
 * past the declared length, or output short of it when the input ends.  The buffer has
 * SNAPPY_SLACK writable bytes past dst + dlen: short literals and copies move 16 (or 8) bytes at
 * a time. */
static int snappy_elements(const unsigned char *ip, const unsigned char *iend, unsigned char *dst, size_t dlen)
{
    unsigned char *op = dst, *oend = dst + dlen;
    while (ip < iend) {
        unsigned tag = *ip++;
        if ((tag & 3) == 0) {                               /* literal */
            size_t len = (tag >> 2) + 1;
            if (len > 60) {
                unsigned extra = (unsigned)len - 60;
                /* < 4 bytes after the tag: declined, as the Python path's decoder (cramjam's
                 * snap) rejects it (it reads the length as 4 bytes); only a non-minimal length
                 * at a block's very end is concerned, which no compressor writes */
                if (iend - ip < 4)
                    return -1;
                len = (size_t)le_n(ip, extra) + 1;
                ip += extra;
            }
            if ((size_t)(iend - ip) < len || (size_t)(oend - op) < len)
                return -1;
            if (len <= 16 && iend - ip >= 16) {
                memcpy(op, ip, 16);
            } else if (len <= SNAPPY_SLACK && iend - ip >= SNAPPY_SLACK) {
                for (size_t i = 0; i < len; i += 16)
                    memcpy(op + i, ip + i, 16);
            } else {
                memcpy(op, ip, len);
            }
            op += len;
            ip += len;
            continue;
        }
        size_t len, off;
        switch (tag & 3) {
        case 1:                                             /* copy, 1-byte offset */
            if (ip >= iend)
                return -1;
            len = 4 + ((tag >> 2) & 7);
            off = ((size_t)(tag >> 5) << 8) | *ip++;
            break;
        case 2:                                             /* copy, 2-byte offset */
            if (iend - ip < 2)
                return -1;
            len = (tag >> 2) + 1;
            off = le_n(ip, 2);
            ip += 2;
            break;
        default:                                            /* copy, 4-byte offset */
            if (iend - ip < 4)
                return -1;
            len = (tag >> 2) + 1;
            off = le_n(ip, 4);
            ip += 4;
            break;
        }
        if (off == 0 || off > (size_t)(op - dst) || len > (size_t)(oend - op))
            return -1;
        const unsigned char *from = op - off;
        if (off >= 16) {                /* whole 16-byte steps: each reads bytes already written */
            for (size_t i = 0; i < len; i += 16)
                memcpy(op + i, from + i, 16);
        } else if (off >= 8) {
            for (size_t i = 0; i < len; i += 8)
                memcpy(op + i, from + i, 8);
        } else {                        /* a short repeating pattern */
            for (size_t i = 0; i < len; i++)
                op[i] = from[i];
        }
        op += len;
    }
    return op == oend ? 0 : -1;
}

static int snappy_block(KfScratch *s, const unsigned char *p, size_t len, size_t *total,
                        size_t max_output)
{
    size_t used = 0;
    int64_t declared = snappy_declared(p, len, &used);
    if (declared < 0 || (size_t)declared > max_output - *total)
        return KF_FALLBACK;
    int rc = scratch_reserve(s, *total + (size_t)declared + SNAPPY_SLACK);
    if (rc != KF_OK)
        return rc;
    if (snappy_elements(p + used, p + len, s->data + *total, (size_t)declared) != 0)
        return KF_FALLBACK;
    *total += (size_t)declared;
    return KF_OK;
}

static int kf_unsnappy(KfScratch *s, const unsigned char *src, size_t n, size_t max_output, size_t *out_len)
{
    size_t total = 0;
    int rc;
    if (n == 0)
        return KF_FALLBACK;
    if (n < XERIAL_HEADER || memcmp(src, XERIAL_MAGIC, 8) != 0) {
        if ((rc = snappy_block(s, src, n, &total, max_output)) != KF_OK)
            return rc;
        *out_len = total;
        return KF_OK;
    }
    size_t pos = XERIAL_HEADER;
    while (n - pos >= 4) {
        uint32_t word = kf_be32(src + pos);
        if (word == kf_be32(XERIAL_MAGIC) || word > XERIAL_MAX_CHUNK)
            return KF_FALLBACK;                  /* concatenated header, negative or huge length */
        size_t start = pos + 4;
        if (n - start < word)
            return KF_FALLBACK;
        if ((rc = snappy_block(s, src + start, word, &total, max_output)) != KF_OK)
            return rc;
        pos = start + word;
    }
    *out_len = total;
    return KF_OK;
}
#endif

/* ------------------------------------------------------------------ gzip */

#define GZIP_HEADER 10
#define GZIP_TRAILER 8

/* Whether `src[0:n]` starts with the member header GZIPOutputStream writes: 1f 8b, CM 8, FLG 0
 * (MTIME, XFL, OS not read), with room for a trailer after it. */
static inline int gzip_plain_member(const unsigned char *src, size_t n)
{
    return n >= GZIP_HEADER + GZIP_TRAILER && src[0] == 0x1f && src[1] == 0x8b && src[2] == 8 && src[3] == 0;
}

#ifdef KF_HAVE_DEFLATE
/* Deflate's largest expansion: a 258-byte match in 2 bits of a dynamic block (1032 bytes a byte). */
#define DEFLATE_MAX_RATIO 1032
/* Input bytes libdeflate may read past a stream's end as zeroes (its bit buffer). */
#define DEFLATE_OVERREAD 16

static int kf_gunzip_deflate(KfScratch *s, const unsigned char *src, size_t n, size_t max_output,
                             size_t *out_len)
{
    if (!gzip_plain_member(src, n))
        return KF_FALLBACK;
    if (!s->deflate && !(s->deflate = kf_deflate.alloc_decompressor()))
        return KF_NO_MEMORY;
    /* First attempt sized by the last member's ISIZE: never beyond max_output nor what the
     * payload's size allows */
    size_t isize = le32(src + n - 4);
    size_t most = (n + DEFLATE_OVERREAD) * DEFLATE_MAX_RATIO;
    size_t first = isize < max_output ? isize : max_output;
    int rc = scratch_reserve(s, first < most ? (first ? first : 1) : most);
    if (rc != KF_OK)
        return rc;
    size_t pos = 0, total = 0;
    for (;;) {
        /* this member and the ones after it: at most max_output in all, and deflate's bound */
        size_t bound = (n - pos + DEFLATE_OVERREAD) * DEFLATE_MAX_RATIO;
        size_t limit = max_output - total < bound ? max_output - total : bound;
        size_t room = s->capacity - total < limit ? s->capacity - total : limit;
        size_t used = 0, got = 0;
        unsigned r = kf_deflate.gzip_decompress_ex(s->deflate, src + pos, n - pos, s->data + total, room,
                                                   &used, &got);
        if (r == KF_DEFLATE_INSUFFICIENT_SPACE) {
            if (room >= limit)
                return KF_FALLBACK;             /* over the cap (or corrupt): the Python path decides */
            size_t grow = s->capacity * 2 - total < limit ? s->capacity * 2 : total + limit;
            if ((rc = scratch_reserve(s, grow)) != KF_OK)
                return rc;
            continue;                           /* the member again, into the larger buffer */
        }
        if (r != KF_DEFLATE_SUCCESS)
            return KF_FALLBACK;                 /* corrupt data, CRC32 or ISIZE mismatch */
        total += got;
        pos += used;
        if (pos == n)
            break;
        if (!gzip_plain_member(src + pos, n - pos))
            return KF_FALLBACK;                 /* bytes after a member, or another header kind */
    }
    *out_len = total;
    return KF_OK;
}
#endif

#ifdef KF_HAVE_ZLIB

static int kf_gunzip(KfScratch *s, const unsigned char *src, size_t n, size_t max_output, size_t *out_len)
{
    if (!gzip_plain_member(src, n))
        return KF_FALLBACK;
    z_stream *z = (z_stream *)s->zlib;
    if (!z) {
        z = PyMem_RawCalloc(1, sizeof *z);
        if (!z)
            return KF_NO_MEMORY;
        if (inflateInit2(z, -15) != Z_OK) {
            PyMem_RawFree(z);
            return KF_NO_MEMORY;
        }
        s->zlib = z;
    } else if (inflateReset(z) != Z_OK) {
        return KF_FALLBACK;
    }
    size_t want = n * 4 < SCRATCH_MIN ? SCRATCH_MIN : n * 4;
    if (want > max_output + 1)
        want = max_output + 1;
    int rc = scratch_reserve(s, want);
    if (rc != KF_OK)
        return rc;
    const unsigned char *in = src + GZIP_HEADER;
    size_t in_left = n - GZIP_HEADER;
    size_t total = 0;
    size_t limit = s->capacity < max_output + 1 ? s->capacity : max_output + 1;
    for (;;) {
        unsigned in_chunk = in_left > 0x40000000u ? 0x40000000u : (unsigned)in_left;
        size_t room = limit - total;
        unsigned out_chunk = room > 0x40000000u ? 0x40000000u : (unsigned)room;
        z->next_in = (Bytef *)in;
        z->avail_in = in_chunk;
        z->next_out = s->data + total;
        z->avail_out = out_chunk;
        int zr = inflate(z, Z_NO_FLUSH);
        size_t used = in_chunk - z->avail_in;
        in += used;
        in_left -= used;
        total += out_chunk - z->avail_out;
        if (zr == Z_STREAM_END)
            break;
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return KF_FALLBACK;
        if (total > max_output)
            return KF_FALLBACK;
        if (z->avail_out == 0) {                 /* output full: grow (bounded by the cap) */
            if (limit > max_output)
                return KF_FALLBACK;
            size_t grow = limit * 2 > max_output + 1 ? max_output + 1 : limit * 2;
            if ((rc = scratch_reserve(s, grow)) != KF_OK)
                return rc;
            limit = grow;
        } else if (in_left == 0 || zr == Z_BUF_ERROR) {
            return KF_FALLBACK;                  /* truncated deflate data */
        }
    }
    if (total > max_output || in_left != GZIP_TRAILER)
        return KF_FALLBACK;                      /* over the cap, truncated, or more members */
    uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
    const unsigned char *p = s->data;
    size_t left = total;
    while (left) {
        uInt step = left > 0x40000000u ? 0x40000000u : (uInt)left;
        crc = (uint32_t)crc32(crc, p, step);
        p += step;
        left -= step;
    }
    if (le32(in) != crc || le32(in + 4) != (uint32_t)(total & 0xFFFFFFFFu))
        return KF_FALLBACK;
    *out_len = total;
    return KF_OK;
}
#endif

int kf_decompress(KfScratch *s, int codec, const unsigned char *src, size_t n, size_t max_output,
                  size_t *out_len, int checked)
{
    (void)s; (void)src; (void)n; (void)max_output; (void)out_len; (void)checked;
    if (codec < 0 || codec > KF_CODEC_ZSTD || !((enabled >> codec) & 1))
        return KF_FALLBACK;             /* not built, its library not loaded, or not wanted */
    switch (codec) {
#ifdef KF_HAVE_LZ4
    case KF_CODEC_LZ4:
        return kf_unlz4(s, src, n, max_output, out_len, checked);
#endif
#ifdef KF_HAVE_ZSTD
    case KF_CODEC_ZSTD:
        return kf_unzstd(s, src, n, max_output, out_len);
#endif
#ifdef KF_HAVE_SNAPPY
    case KF_CODEC_SNAPPY:
        return kf_unsnappy(s, src, n, max_output, out_len);
#endif
    case KF_CODEC_GZIP:
#ifdef KF_HAVE_DEFLATE
        if (gzip_by_deflate)
            return kf_gunzip_deflate(s, src, n, max_output, out_len);
#endif
#ifdef KF_HAVE_ZLIB
        return kf_gunzip(s, src, n, max_output, out_len);
#endif
        return KF_FALLBACK;
    default:
        return KF_FALLBACK;
    }
}
