/*
 * kafka_format.records._fastdecode: xxHash32 (seed 0), one buffer or several at once (see
 * _fastxxh.h).
 *
 * The algorithm (xxHash's XXH32 as specified by its author; written here from the description):
 * four 32-bit accumulators take 16-byte stripes, acc = rotl(acc + word * P2, 13) * P1; the
 * result merges them (rotations by 1, 7, 12, 18; P5 alone for inputs under 16 bytes), adds the
 * length, folds the remaining 4-byte words and bytes, and mixes (the avalanche).
 *
 * Several buffers: the stripes every buffer of a group has are run in the lanes of vector
 * registers (each buffer's four accumulators side by side), then each buffer goes on alone.
 * Buffers are grouped by their number of stripes (longest first), so that the lanes of a
 * group are busy together: the lz4 blocks of Kafka batches are mostly full blocks of similar
 * size and a short last one.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "_fastxxh.h"

#define P1 2654435761u
#define P2 2246822519u
#define P3 3266489917u
#define P4 668265263u
#define P5 374761393u

static int xxh_level = KF_XXH_PORTABLE;

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static inline uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint32_t round32(uint32_t acc, uint32_t word)
{
    return rotl32(acc + word * P2, 13) * P1;
}

static inline void acc_init(uint32_t v[4])
{
    v[0] = P1 + P2;
    v[1] = P2;
    v[2] = 0;
    v[3] = 0u - P1;
}

/* `stripes` 16-byte stripes of p into v. */
static inline void acc_stripes(uint32_t v[4], const unsigned char *p, size_t stripes)
{
    uint32_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (size_t i = 0; i < stripes; i++, p += 16) {
        a = round32(a, le32(p));
        b = round32(b, le32(p + 4));
        c = round32(c, le32(p + 8));
        d = round32(d, le32(p + 12));
    }
    v[0] = a;
    v[1] = b;
    v[2] = c;
    v[3] = d;
}

/* The hash of a buffer of n bytes whose n / 16 stripes are in v, from its remaining bytes
 * [rest, end). */
static uint32_t finish(const uint32_t v[4], size_t n, const unsigned char *rest, const unsigned char *end)
{
    uint32_t h = n >= 16 ? rotl32(v[0], 1) + rotl32(v[1], 7) + rotl32(v[2], 12) + rotl32(v[3], 18) : P5;
    h += (uint32_t)n;
    for (; end - rest >= 4; rest += 4)
        h = rotl32(h + le32(rest) * P3, 17) * P4;
    for (; rest < end; rest++)
        h = rotl32(h + *rest * P5, 11) * P1;
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}

uint32_t kf_xxh32(const unsigned char *p, size_t n)
{
    uint32_t v[4];
    acc_init(v);
    acc_stripes(v, p, n / 16);
    return finish(v, n, p + n / 16 * 16, p + n);
}

/* Buffer i of a group after `done` stripes run elsewhere with accumulators v. */
static uint32_t go_on(uint32_t v[4], const unsigned char *p, size_t n, size_t done)
{
    acc_stripes(v, p + 16 * done, n / 16 - done);
    return finish(v, n, p + n / 16 * 16, p + n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Four buffers: their first `stripes` stripes in one 512-bit register (buffer j in lanes
 * 4j..4j+3), the rest alone. */
__attribute__((target("avx512f")))
static void many4_avx512(const unsigned char *const p[4], const size_t n[4], uint32_t out[4], size_t stripes)
{
    __m512i acc = _mm512_setr_epi32((int)(P1 + P2), (int)P2, 0, (int)(0u - P1), (int)(P1 + P2), (int)P2, 0,
                                    (int)(0u - P1), (int)(P1 + P2), (int)P2, 0, (int)(0u - P1),
                                    (int)(P1 + P2), (int)P2, 0, (int)(0u - P1));
    const __m512i p1 = _mm512_set1_epi32((int)P1), p2 = _mm512_set1_epi32((int)P2);
    for (size_t i = 0; i < stripes; i++) {
        size_t at = 16 * i;
        __m512i words = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p[0] + at)));
        words = _mm512_inserti32x4(words, _mm_loadu_si128((const __m128i *)(p[1] + at)), 1);
        words = _mm512_inserti32x4(words, _mm_loadu_si128((const __m128i *)(p[2] + at)), 2);
        words = _mm512_inserti32x4(words, _mm_loadu_si128((const __m128i *)(p[3] + at)), 3);
        acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(words, p2));
        acc = _mm512_mullo_epi32(_mm512_rol_epi32(acc, 13), p1);
    }
    uint32_t lanes[16];
    _mm512_storeu_si512((void *)lanes, acc);
    for (int j = 0; j < 4; j++)
        out[j] = go_on(lanes + 4 * j, p[j], n[j], stripes);
}

__attribute__((target("avx2")))
static inline __m256i round_avx2(__m256i acc, __m256i words, __m256i p1, __m256i p2)
{
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(words, p2));
    acc = _mm256_or_si256(_mm256_slli_epi32(acc, 13), _mm256_srli_epi32(acc, 19));
    return _mm256_mullo_epi32(acc, p1);
}

/* Four buffers: buffers 0-1 and 2-3 in two 256-bit registers (independent chains). */
__attribute__((target("avx2")))
static void many4_avx2(const unsigned char *const p[4], const size_t n[4], uint32_t out[4], size_t stripes)
{
    __m256i a = _mm256_setr_epi32((int)(P1 + P2), (int)P2, 0, (int)(0u - P1), (int)(P1 + P2), (int)P2, 0,
                                  (int)(0u - P1));
    __m256i b = a;
    const __m256i p1 = _mm256_set1_epi32((int)P1), p2 = _mm256_set1_epi32((int)P2);
    for (size_t i = 0; i < stripes; i++) {
        size_t at = 16 * i;
        __m256i wa = _mm256_loadu2_m128i((const __m128i *)(p[1] + at), (const __m128i *)(p[0] + at));
        __m256i wb = _mm256_loadu2_m128i((const __m128i *)(p[3] + at), (const __m128i *)(p[2] + at));
        a = round_avx2(a, wa, p1, p2);
        b = round_avx2(b, wb, p1, p2);
    }
    uint32_t lanes[16];
    _mm256_storeu_si256((__m256i *)lanes, a);
    _mm256_storeu_si256((__m256i *)(lanes + 8), b);
    for (int j = 0; j < 4; j++)
        out[j] = go_on(lanes + 4 * j, p[j], n[j], stripes);
}
#endif

void kf_xxh32_many_at(int level, const unsigned char *const p[], const size_t n[], uint32_t out[], int k)
{
    if (level > xxh_level)
        level = xxh_level;
    int order[KF_XXH_MANY];
    if (k > KF_XXH_MANY)
        k = KF_XXH_MANY;
    for (int i = 0; i < k; i++) {                 /* by stripes, most first (insertion sort) */
        int j = i;
        while (j > 0 && n[order[j - 1]] / 16 < n[i] / 16) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    for (; level > KF_XXH_PORTABLE && i + 4 <= k; i += 4) {
        const unsigned char *gp[4];
        size_t gn[4];
        uint32_t got[4];
        for (int j = 0; j < 4; j++) {
            gp[j] = p[order[i + j]];
            gn[j] = n[order[i + j]];
        }
        size_t stripes = gn[3] / 16;              /* the group's fewest */
        if (level >= KF_XXH_AVX512)
            many4_avx512(gp, gn, got, stripes);
        else
            many4_avx2(gp, gn, got, stripes);
        for (int j = 0; j < 4; j++)
            out[order[i + j]] = got[j];
    }
#endif
    for (; i < k; i++)
        out[order[i]] = kf_xxh32(p[order[i]], n[order[i]]);
}

void kf_xxh32_many(const unsigned char *const p[], const size_t n[], uint32_t out[], int k)
{
    kf_xxh32_many_at(xxh_level, p, n, out, k);
}

void kf_xxh_init(void)
{
    xxh_level = KF_XXH_PORTABLE;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        xxh_level = __builtin_cpu_supports("avx512f") ? KF_XXH_AVX512 : KF_XXH_AVX2;
#endif
}

int kf_xxh_level(void)
{
    return xxh_level;
}


/* ------------------------------------------------------------------ tests */

PyDoc_STRVAR(xxh32_many_doc,
"xxh32_many(buffers, level) -> list[int]\n\nxxHash32 (seed 0) of each of up to 32 buffers, hashed side by\n"
"side at implementation level <= level (0 portable, 1 AVX2, 2 AVX-512; clamped to the CPU's\n"
"XXH_LEVEL): the lz4 block checksums of the fused path (tests).");

static PyObject *fd_xxh32_many(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *buffers;
    int level;
    if (!PyArg_ParseTuple(args, "Oi", &buffers, &level))
        return NULL;
    PyObject *seq = PySequence_Fast(buffers, "buffers must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL;
    Py_buffer views[KF_XXH_MANY];
    Py_ssize_t got = 0;
    const unsigned char *p[KF_XXH_MANY];
    size_t n[KF_XXH_MANY];
    uint32_t out[KF_XXH_MANY];
    if (k > KF_XXH_MANY) {
        PyErr_SetString(PyExc_ValueError, "at most 32 buffers");
        goto done;
    }
    for (; got < k; got++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_SIMPLE) < 0)
            goto done;
        p[got] = views[got].buf;
        n[got] = (size_t)views[got].len;
    }
    kf_xxh32_many_at(level, p, n, out, (int)k);
    result = PyList_New(k);
    for (Py_ssize_t i = 0; result && i < k; i++) {
        PyObject *v = PyLong_FromUnsignedLong(out[i]);
        if (!v) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, v);
    }
done:
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    Py_DECREF(seq);
    return result;
}

PyMethodDef kf_xxh_methods[] = {
    {"xxh32_many", fd_xxh32_many, METH_VARARGS, xxh32_many_doc},
    {NULL, NULL, 0, NULL},
};
