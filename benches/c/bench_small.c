/* Small-tensor clone through the real libtensor.so: tensor_clone of a 64-element float32
 * tensor + tensor_release of the copy, against a malloc(160)/free pair, in interleaved
 * rounds (best round of each reported, so machine noise hits both alike).
 * Usage: bench_small [iters_per_round [rounds]]   Build and run: benches/c/run.sh small */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tensor.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *volatile sink;

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
  if (status != 0) {
    fprintf(stderr, "a timed call failed\n");
    return 1;
  }
  printf("| clone 64 f32 + release | %.1f ns | malloc(160)+free %.1f ns | %.2fx |\n", best_clone,
         best_malloc, best_clone / best_malloc);
  return 0;
}
