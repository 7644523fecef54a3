/* tensor_memory_snapshot with many live tracked storages, through the real libtensor.so:
 * makes N one-element float32 tensors (a storage and a tensor each) with memory tracking
 * on, plus one 1000-element storage with 64 slices of it (a storage with many ranges),
 * then times full snapshots (capacity N + 1) and reports the best and the median round,
 * with the time per storage. Against the malloc(160)/free pair of the same run.
 * Usage: bench_snapshot [storages [rounds]]   (defaults 1000000, 5)
 * Build and run: benches/c/run.sh snapshot */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tensor.h"

static double clock_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static double now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
/* This thread's CPU time: on a loaded host, what the snapshot itself costs. */
static double cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *volatile sink;

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  if (n < 1 || rounds < 1 || rounds > 101) {
    fprintf(stderr, "usage: %s [storages >= 1 [rounds in 1..101]]\n", argv[0]);
    return 2;
  }
  tensor_set_memory_tracking(1);
  tensor_t **ts = calloc((size_t)n, sizeof *ts);
  tensor_t *slices[64];
  tensor_t *big = NULL;
  const int64_t one[1] = {1}, thousand[1] = {1000};
  struct tensor_storage_info_t *out = calloc((size_t)n + 1, sizeof *out);
  if (!ts || !out) return 1;
  for (long i = 0; i < n; i++)
    if (tensor_empty(one, 1, TENSOR_FLOAT32, &ts[i]) != TENSOR_OK) return 1;
  if (tensor_empty(thousand, 1, TENSOR_FLOAT32, &big) != TENSOR_OK) return 1;
  for (int i = 0; i < 64; i++)
    if (tensor_slice(big, 0, (i * 37) % 900, (i * 37) % 900 + 50, 1, &slices[i]) != TENSOR_OK)
      return 1;
  double ns[101], cpu[101], mal = 1e30;
  size_t count = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns(), c0 = cpu_ns();
    if (tensor_memory_snapshot(out, (size_t)n + 1, &count) != TENSOR_OK) {
      fprintf(stderr, "snapshot failed: %s\n", tensor_last_error());
      return 1;
    }
    ns[r] = now_ns() - t0;
    cpu[r] = cpu_ns() - c0;
    t0 = now_ns();
    for (int i = 0; i < 100000; i++) {
      sink = malloc(160);
      free(sink);
    }
    double m = (now_ns() - t0) / 100000;
    if (m < mal) mal = m;
  }
  /* The big storage is listed first (biggest), with its 65 tensors. */
  if (count != (size_t)n + 1 || out[0].nbytes != 4000 || out[0].tensor_count != 65 ||
      out[0].reachable_bytes != 4000) {
    fprintf(stderr, "unexpected snapshot: count %zu, first %llu bytes, %llu tensors\n", count,
            (unsigned long long)out[0].nbytes, (unsigned long long)out[0].tensor_count);
    return 1;
  }
  qsort(ns, (size_t)rounds, sizeof(double), cmp_double);
  qsort(cpu, (size_t)rounds, sizeof(double), cmp_double);
  printf("| snapshot of %ld storages | best %.3f s (cpu %.3f s) | median %.3f s | %.1f ns per storage | malloc(160)+free %.1f ns |\n",
         n + 1, ns[0] / 1e9, cpu[0] / 1e9, ns[rounds / 2] / 1e9, ns[0] / (double)(n + 1), mal);
  for (int i = 0; i < 64; i++) tensor_release(slices[i]);
  tensor_release(big);
  for (long i = 0; i < n; i++) tensor_release(ts[i]);
  tensor_set_memory_tracking(0);
  free(ts);
  free(out);
  return 0;
}
