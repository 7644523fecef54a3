/* Small-tensor clone through the real libtensor.so: tensor_clone of a 64-element float32
 * tensor + tensor_release of the copy, against a malloc(160)/free pair, in interleaved
 * rounds (best round of each reported, so machine noise hits both alike). Then clones of
 * 1, 4, 16 and 64 KiB + release against two loops over the same bytes, the same way
 * (iters_per_round / 8 calls per round):
 *   anchor: malloc + memcpy + free;
 *   floor:  malloc(160) + malloc(192) + malloc(bytes) + memcpy + free x3 (the blocks freed
 *           in reverse order): what any reference-counted clone must at least do, here with
 *           glibc's malloc for a TensorImpl-sized and a StorageImpl-sized object (libtensor's
 *           are 144 and 192 bytes) and the data block, and glibc's memcpy.
 * Then the copy alone for 4 and 16 KiB between two 64-byte-aligned blocks: memcpy against
 * a loop of 32-byte AVX2 loads and stores, four a step, the last step ending on the last
 * byte (the copy libtensor uses for 2-16 KiB when the CPU has AVX2; elsewhere memcpy, and so
 * does this row).
 * Each copy is called through a volatile function pointer, so that the compiler cannot drop
 * a copy into a block freed right after. Last, the resident memory per live small tensor:
 * 10^6 tensor_empty({4}) float32 kept alive, /proc/self/statm's resident pages before and
 * after, divided by the count.
 * Usage: bench_small [iters_per_round [rounds [small | KIB]]]   ("small": the first row
 * only, for callgrind: valgrind --tool=callgrind bench_small 20000 1 small; a number: the
 * clone row of that many KiB only, e.g. 4)
 * Build and run: benches/c/run.sh small */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensor.h"

/* Resident bytes of this process (Linux /proc/self/statm), or -1. */
static double resident_bytes(void) {
  long pages_total = 0, pages_resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  fclose(f);
  return pages_resident < 0 ? -1 : (double)pages_resident * 4096.0;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *volatile sink;
/* Called through a volatile pointer: the compiler cannot drop a copy into a block freed
 * right after. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* libtensor's copy of 2-16 KiB (src/copy/kernels.rs, copy_bytes_avx2), for n >= 128. */
__attribute__((target("avx2"))) static void *copy_avx2(void *d, const void *s, size_t n) {
  size_t at = 0;
  char *dc = d;
  const char *sc = s;
  for (;;) {
    size_t i = at + 128 <= n ? at : n - 128;
    __m256i a = _mm256_loadu_si256((const __m256i *)(sc + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(sc + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(sc + i + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *)(sc + i + 96));
    _mm256_storeu_si256((__m256i *)(dc + i), a);
    _mm256_storeu_si256((__m256i *)(dc + i + 32), b);
    _mm256_storeu_si256((__m256i *)(dc + i + 64), c);
    _mm256_storeu_si256((__m256i *)(dc + i + 96), e);
    if (i + 128 >= n) return d;
    at += 128;
  }
}
static void *(*pick_loop(size_t n))(void *, const void *, size_t) {
  __builtin_cpu_init();
  return n > 2048 && n <= (16 << 10) && __builtin_cpu_supports("avx2") ? copy_avx2 : memcpy;
}
#else
static void *(*pick_loop(size_t n))(void *, const void *, size_t) {
  (void)n;
  return memcpy;
}
#endif
static void *(*volatile loop_fn)(void *, const void *, size_t) = memcpy;

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000, r, i;
  long rounds = argc > 2 ? atol(argv[2]) : 21;
  int64_t n[1] = {64};
  tensor_t *x = NULL;
  double best_clone = 1e30, best_malloc = 1e30;
  int status = 0;
  long only_kib = argc > 3 ? atol(argv[3]) : 0;
  if (tensor_full(n, 1, TENSOR_FLOAT32, 1.5, &x) != TENSOR_OK) return 1;
  for (r = 0; r < (only_kib > 0 ? 0 : rounds); r++) {
    double t0 = now_ns(), t;
    for (i = 0; i < iters; i++) {
      tensor_t *o = NULL;
      status |= tensor_clone(x, TENSOR_PRESERVE_FORMAT, &o);
      tensor_release(o);
    }
    t = (now_ns() - t0) / iters;
    if (t < best_clone) best_clone = t;
    t0 = now_ns();
    for (i = 0; i < iters; i++) {
      sink = malloc(160);
      free(sink);
    }
    t = (now_ns() - t0) / iters;
    if (t < best_malloc) best_malloc = t;
  }
  tensor_release(x);
  if (only_kib == 0)
    printf("| clone 64 f32 + release | %.1f ns | malloc(160)+free %.1f ns | %.2fx |\n", best_clone,
           best_malloc, best_clone / best_malloc);
  if (argc <= 3 || only_kib > 0) {
    static const int64_t kib[4] = {1, 4, 16, 64};
    long k, mid_iters = iters / 8 > 0 ? iters / 8 : 1;
    for (k = 0; k < 4; k++) {
      size_t bytes = (size_t)kib[k] << 10;
      int64_t m[1] = {(int64_t)(bytes / 4)};
      char *src = malloc(bytes);
      double best_c = 1e30, best_m = 1e30, best_f = 1e30;
      if (only_kib > 0 && kib[k] != only_kib) continue;
      if (src == NULL || tensor_full(m, 1, TENSOR_FLOAT32, 1.5, &x) != TENSOR_OK) return 1;
      memset(src, 1, bytes);
      for (r = 0; r < rounds; r++) {
        double t0 = now_ns(), t;
        for (i = 0; i < mid_iters; i++) {
          tensor_t *o = NULL;
          status |= tensor_clone(x, TENSOR_PRESERVE_FORMAT, &o);
          tensor_release(o);
        }
        t = (now_ns() - t0) / mid_iters;
        if (t < best_c) best_c = t;
        t0 = now_ns();
        for (i = 0; i < mid_iters; i++) {
          char *d = malloc(bytes);
          if (d == NULL) return 1;
          copy_fn(d, src, bytes);
          sink = d;
          free(d);
        }
        t = (now_ns() - t0) / mid_iters;
        if (t < best_m) best_m = t;
        t0 = now_ns();
        for (i = 0; i < mid_iters; i++) {
          void *a = malloc(160), *b = malloc(192);
          char *d = malloc(bytes);
          if (a == NULL || b == NULL || d == NULL) return 1;
          copy_fn(d, src, bytes);
          sink = d;
          free(d);
          free(b);
          free(a);
        }
        t = (now_ns() - t0) / mid_iters;
        if (t < best_f) best_f = t;
      }
      tensor_release(x);
      free(src);
      printf("| clone %lld KiB f32 + release | %.1f ns | malloc+memcpy+free %.1f ns | %.2fx "
             "| floor %.1f ns | %.2fx |\n",
             (long long)kib[k], best_c, best_m, best_c / best_m, best_f, best_c / best_f);
    }
    /* The copy alone, between two live 64-byte-aligned blocks (as libtensor's are): glibc's
     * memcpy against the loop libtensor uses for 2-16 KiB. */
    for (k = 1; k < 3; k++) {
      size_t bytes = (size_t)kib[k] << 10;
      void *sv = NULL, *dv = NULL;
      char *s, *d;
      double best_m = 1e30, best_l = 1e30;
      if (only_kib > 0 && kib[k] != only_kib) continue;
      if (posix_memalign(&sv, 64, bytes) != 0 || posix_memalign(&dv, 64, bytes) != 0) return 1;
      s = sv;
      d = dv;
      memset(s, 1, bytes);
      memset(d, 0, bytes);
      loop_fn = pick_loop(bytes);
      for (r = 0; r < rounds; r++) {
        double t0 = now_ns(), t;
        for (i = 0; i < mid_iters; i++) copy_fn(d, s, bytes);
        t = (now_ns() - t0) / mid_iters;
        if (t < best_m) best_m = t;
        t0 = now_ns();
        for (i = 0; i < mid_iters; i++) loop_fn(d, s, bytes);
        t = (now_ns() - t0) / mid_iters;
        if (t < best_l) best_l = t;
      }
      free(s);
      free(d);
      printf("| copy %lld KiB, 64-byte-aligned blocks | memcpy %.1f ns | libtensor's loop %.1f ns "
             "| %.2fx |\n",
             (long long)kib[k], best_m, best_l, best_l / best_m);
    }
  }
  if (argc <= 3) {
    enum { LIVE = 1000000 };
    int64_t four[1] = {4};
    tensor_t **live = malloc(LIVE * sizeof *live);
    double before, after;
    long k;
    if (live == NULL) return 1;
    before = resident_bytes();
    for (k = 0; k < LIVE; k++) status |= tensor_empty(four, 1, TENSOR_FLOAT32, &live[k]);
    after = resident_bytes();
    for (k = 0; k < LIVE; k++) tensor_release(live[k]);
    free(live);
    /* The handle array's own 8 bytes per tensor are part of the delta: taken out. */
    printf("| live empty({4}) f32 | %.0f B resident per tensor (10^6 live, /proc/self/statm) |\n",
           (after - before) / LIVE - (double)sizeof(tensor_t *));
  }
  if (status != 0) {
    fprintf(stderr, "a timed call failed\n");
    return 1;
  }
  return 0;
}
