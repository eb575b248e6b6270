/*
 * kafka_format.records._fastdecode codecs: Kafka's compressed payloads decoded in C into one
 * reused buffer (no Python call and no new bytes object per batch).
 *
 * This is a fast path only.  It accepts a strict subset of what kafka_format.records.compression
 * accepts (the framing every Kafka producer writes) and answers KF_FALLBACK for anything
 * else: a corrupt payload, an unusual but legal framing, output beyond max_output, or a
 * codec not decoded in C (not compiled in, its library not found at import, or left out by
 * KAFKA_FORMAT_C_CODECS).  The caller then runs the Python path, which
 * decides and reports the exact error, so both paths agree by construction.
 */
#ifndef KF_FASTCODECS_H
#define KF_FASTCODECS_H

#include <stddef.h>
#include <stdint.h>

#define KF_OK 0
#define KF_FALLBACK (-1)   /* not decoded here: the Python path decides */
#define KF_NO_MEMORY (-2)
#define KF_NO_ROOM (-3)    /* a borrowed buffer is too small: decompress again into an owned one */

/* One decompression buffer (and codec contexts) reused for every batch of a call.  A borrowed
 * buffer (memory of someone else's, e.g. the room left in an output column) is never grown:
 * a codec needing more answers KF_NO_ROOM. */
typedef struct {
    unsigned char *data;
    size_t capacity;
    void *zstd;       /* ZSTD_DCtx*, created on first use */
    void *zlib;       /* z_stream*, created on first use */
    void *deflate;    /* struct libdeflate_decompressor*, created on first use */
    int borrowed;
} KfScratch;

/* Decide, once at import, which codecs are decoded in C: those compiled in, whose library loads
 * (liblz4, libzstd, libdeflate: _codeclibs.h) and that `spec` names ("none", or a comma list such
 * as "lz4,zstd"; NULL: every one).  A name may choose the library: "gzip:zlib" or
 * "gzip:libdeflate" (plain "gzip": libdeflate when it loads, else zlib).  Returns
 * kf_codecs_available(). */
unsigned kf_codecs_init(const char *spec);

/* Bit i set: codec id i is decoded in C (0 = none is always set). */
unsigned kf_codecs_available(void);

/* {codec name: the library decoding it in C, with its version} (a new reference; NULL on error).
 * Declared as returning a PyObject * by whoever includes Python.h first. */
#ifdef Py_PYTHON_H
PyObject *kf_codec_libraries(void);
#endif

/* Kafka's codec ids (the batch attributes' low 3 bits) */
#define KF_CODEC_GZIP 1
#define KF_CODEC_SNAPPY 2
#define KF_CODEC_LZ4 3
#define KF_CODEC_ZSTD 4

/* Decompress the records region `src[0:n]` of a magic-2 batch with `codec` into
 * s->data; *out_len receives the decompressed size (<= max_output).  `checked`: an lz4
 * payload's block checksums were verified by kf_lz4_check_group.  Safe without the GIL
 * (uses PyMem_Raw* only). */
int kf_decompress(KfScratch *s, int codec, const unsigned char *src, size_t n, size_t max_output,
                  size_t *out_len, int checked);

/* The block checksums of up to KF_LZ4_GROUP lz4 payloads verified together (their blocks
 * hashed side by side, kf_xxh32_many): ok[i] = 1 when payload i is a frame kf_decompress takes
 * and every block checksum it has matches; 0 leaves it to kf_decompress (which verifies, or
 * declines, it). */
#define KF_LZ4_GROUP 8
void kf_lz4_check_group(const unsigned char *const src[], const size_t n[], int count, unsigned char ok[]);

void kf_scratch_free(KfScratch *s);

#endif
