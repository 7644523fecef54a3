/* Small-tensor clone through the real libtensor.so: tensor_clone of a 64-element float32
 * tensor + tensor_release of the copy, against a malloc(160)/free pair, in interleaved
 * rounds (best round of each reported, so machine noise hits both alike). Then clones of
 * 1, 4, 16 and 64 KiB + release against malloc + memcpy + free of the same bytes, the same
 * way (iters_per_round / 8 calls per round). Last, the resident memory per live small tensor:
 * 10^6 tensor_empty({4}) float32 kept alive, /proc/self/statm's resident pages before and
 * after, divided by the count.
 * Usage: bench_small [iters_per_round [rounds [small]]]   ("small": the first row only, for
 * callgrind: valgrind --tool=callgrind bench_small 20000 1 small)
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

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000, r, i;
  long rounds = argc > 2 ? atol(argv[2]) : 21;
  int64_t n[1] = {64};
  tensor_t *x = NULL;
  double best_clone = 1e30, best_malloc = 1e30;
  int status = 0;
  if (tensor_full(n, 1, TENSOR_FLOAT32, 1.5, &x) != TENSOR_OK) return 1;
  for (r = 0; r < rounds; r++) {
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
  printf("| clone 64 f32 + release | %.1f ns | malloc(160)+free %.1f ns | %.2fx |\n", best_clone,
         best_malloc, best_clone / best_malloc);
  if (argc <= 3 || strcmp(argv[3], "small") != 0) {
    static const int64_t kib[4] = {1, 4, 16, 64};
    long k, mid_iters = iters / 8 > 0 ? iters / 8 : 1;
    for (k = 0; k < 4; k++) {
      size_t bytes = (size_t)kib[k] << 10;
      int64_t m[1] = {(int64_t)(bytes / 4)};
      char *src = malloc(bytes);
      double best_c = 1e30, best_m = 1e30;
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
      }
      tensor_release(x);
      free(src);
      printf("| clone %lld KiB f32 + release | %.1f ns | malloc+memcpy+free %.1f ns | %.2fx |\n",
             (long long)kib[k], best_c, best_m, best_c / best_m);
    }
  }
  if (argc <= 3 || strcmp(argv[3], "small") != 0) {
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
