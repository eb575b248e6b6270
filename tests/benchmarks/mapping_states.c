/*
 * Ways to get a file's bytes into a process, by page-cache state (the numbers in BENCHMARKS.md,
 * "Mapping by page-cache state").  CPU time of the thread (system time included), best of 5, for
 * the whole file in 16 MiB windows as decode_segment reads it.
 *
 *   cc -O2 -o /tmp/mapping_states tests/benchmarks/mapping_states.c
 *   /tmp/mapping_states FILE MODE [TOUCH=1] [WINDOW=16777216]
 *
 * MODE: 0 mmap + MAP_POPULATE, 1 mmap + MADV_POPULATE_READ, 2 mmap (faults on access: fault-around),
 *       3 one mapping of the whole file + MADV_HUGEPAGE + MADV_POPULATE_READ,
 *       4 pread into a reused anonymous buffer, 5 the same buffer 2 MiB-aligned with MADV_HUGEPAGE,
 *       6 mmap + MADV_HUGEPAGE + MADV_POPULATE_READ, 7 readahead() then mmap, 8 mmap + MADV_COLLAPSE.
 * TOUCH=1 also reads one word of every 64-byte line (what any decode pays), TOUCH=0 only maps.
 * Page-cache states are made by how the file was written or read back (one write; one write per
 * batch; `echo 1 > /proc/sys/vm/drop_caches` then `dd bs=4k` or a read through a mapping).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

static uint64_t read_lines(const unsigned char *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= n; i += 64) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        s += v;
    }
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE MODE [TOUCH] [WINDOW]\n", argv[0]);
        return 2;
    }
    int mode = atoi(argv[2]);
    int touch = argc > 3 ? atoi(argv[3]) : 1;
    size_t window = argc > 4 ? strtoul(argv[4], NULL, 10) : ((size_t)16 << 20);
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(argv[1]);
        return 1;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = NULL;
    if (mode == 4 || mode == 5) {
        size_t huge = (size_t)2 << 20;
        unsigned char *raw = mmap(NULL, window + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        buf = (unsigned char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
        if (mode == 5)
            madvise(buf, window, MADV_HUGEPAGE);
        memset(buf, 0, window);
    }
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = cpu_now();
        uint64_t s = 0;
        if (mode == 3) {
            unsigned char *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
            madvise(m, size, MADV_HUGEPAGE);
            madvise(m, size, MADV_POPULATE_READ);
            if (touch)
                s += read_lines(m, size);
            munmap(m, size);
        } else {
            for (size_t pos = 0; pos < size; pos += window) {
                size_t n = size - pos < window ? size - pos : window;
                if (mode == 4 || mode == 5) {
                    size_t got = 0;
                    while (got < n) {
                        ssize_t k = pread(fd, buf + got, n - got, (off_t)(pos + got));
                        if (k <= 0)
                            break;
                        got += (size_t)k;
                    }
                    if (touch)
                        s += read_lines(buf, n);
                    continue;
                }
                if (mode == 7)
                    readahead(fd, (off_t)pos, n);
                unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED | (mode == 0 ? MAP_POPULATE : 0), fd, (off_t)pos);
                if (m == MAP_FAILED) {
                    perror("mmap");
                    return 1;
                }
                if (mode == 1)
                    madvise(m, n, MADV_POPULATE_READ);
                if (mode == 6) {
                    madvise(m, n, MADV_HUGEPAGE);
                    madvise(m, n, MADV_POPULATE_READ);
                }
                if (mode == 8 && madvise(m, n, MADV_COLLAPSE) != 0 && rep == 0 && pos == 0)
                    perror("MADV_COLLAPSE");
                if (touch)
                    s += read_lines(m, n);
                munmap(m, n);
            }
        }
        double dt = cpu_now() - t0;
        sink += s;
        if (dt < best)
            best = dt;
    }
    printf("mode %d touch %d window %zu: %.3f ms, %.4f ns/byte\n", mode, touch, window, best * 1e3, best * 1e9 / (double)size);
    return 0;
}
