/*
 * kafka_format.records._fastdecode: the record loop (_fastrecords.c), what its callers (the entry
 * points in _fastdecode.c) see of it: its violation codes, output columns, state, options and
 * functions.
 */
#ifndef KF_FASTRECORDS_H
#define KF_FASTRECORDS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_fastbuf.h"
#include "_fastformat.h"

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

/* Output positions while the loop runs. */
typedef struct {
    size_t n;                /* records written */
    size_t h;                /* headers written */
    size_t key_pos, val_pos, hkey_pos, hval_pos;
} Out;

/* Decoding options (benchmarks only: phases switched off to see where time goes). */
#define OPT_NO_COPY 1            /* keys and values not copied (lengths still checked; their bytes
                                    are prefetched, so the loop still streams through memory) */
#define OPT_DECOMPRESS_ONLY 2    /* decompress (and CRC), decode nothing: the codec floor */
#define OPT_SKIP_HEADERS 4       /* headers not asked for: read (every length still checked) but
                                    neither copied nor their keys' UTF-8 looked at; none output */
#define OPT_IN_PLACE 256         /* internal: the batch's records lie in the value column at its
                                    end (decompressed there); values are moved down in place */

/* CRC-32C computed while the records are decoded (the fused path): the bytes are checksummed
 * in pieces of CRC_PIECE right after the record loop has read them, while they are in cache,
 * so a batch larger than the cache is read from memory once, not twice.  A key or value of at
 * least CRC_FUSE_MIN bytes is checksummed by the copy itself (kf_crc32c_copy: each block is
 * loaded once, stored and folded). */
#define CRC_PIECE 8192
#define CRC_FUSE_MIN 1024
typedef struct {
    int on;
    uint32_t value;                  /* Kafka-style running CRC of [region start, from) */
    const unsigned char *from;
} RunningCrc;

/* Room past a column's data that short copies may write into (two 16-byte moves). */
#define COPY_SLACK 32

/* int32 Arrow offsets: whether `len` more payload bytes could pass them in some column. */
static inline int out_would_overflow(const Out *o, size_t len)
{
    return o->val_pos + len > (size_t)INT32_MAX || o->key_pos + len > (size_t)INT32_MAX ||
           o->hkey_pos + len > (size_t)INT32_MAX || o->hval_pos + len > (size_t)INT32_MAX;
}

/* _fastrecords.c: the record loop. */
void decode_state_free(DecodeState *st);
int reserve_batch(DecodeState *st, const Out *o, size_t rows, size_t data_bytes);
Violation decode_records(DecodeState *st, Out *o, const unsigned char *start, const unsigned char *end,
                         const int64_t *m, int opts, Py_ssize_t *bad_offset, RunningCrc *crc);
void out_start(DecodeState *st, Out *o);
void out_finish(DecodeState *st, const Out *o);
/* Initial sizes of the columns that grow (keys, headers) for a call decoding about `rows`
 * records from `payload` bytes, from what earlier calls of the process decoded (GIL held). */
void size_hint_apply(size_t init[C_NCOLS], size_t rows, size_t payload);
void size_hint_learn(const Out *o, size_t payload);
/* The expected decompressed bytes per compressed byte of every codec, x RATIO_ONE, from what
 * earlier calls decompressed (GIL held); size_hint_ratio records a call's bytes. */
#define RATIO_ONE 256u
void size_hint_ratios(uint32_t ratio[8]);
void size_hint_ratio(int codec, size_t packed, size_t unpacked);

/* The expected decompressed size of `packed` bytes at `ratio` (x RATIO_ONE), at most `cap`. */
static inline size_t expected_unpacked(uint32_t ratio, size_t packed, size_t cap)
{
    uint64_t want = (uint64_t)packed * ratio / RATIO_ONE;
    return want > cap ? cap : (size_t)want;
}

#endif
