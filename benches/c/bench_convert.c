/* float -> integer conversions (to_dtype) through the real libtensor.so, single thread:
 * every pair of {f32, f64, f16, bf16} -> {u8, i8, i16, u16, i32, u32, i64, u64} at 16M
 * elements, each call timed with its output's allocation and release, against memcpy of
 * the larger side's bytes (source or result) into an already-touched buffer, alternately,
 * best of REPS. ratio = t(memcpy) / t(op): >= 1.0 is the issue-10 target.
 * Usage: bench_convert [n_elements]   Build and run: benches/c/run.sh convert */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensor.h"

#define REPS 7

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 16 << 20;
  const tensor_dtype_t srcs[4] = {TENSOR_FLOAT32, TENSOR_FLOAT64, TENSOR_FLOAT16,
                                  TENSOR_BFLOAT16};
  const tensor_dtype_t dsts[8] = {TENSOR_UINT8,  TENSOR_INT8,   TENSOR_INT16, TENSOR_UINT16,
                                  TENSOR_INT32,  TENSOR_UINT32, TENSOR_INT64, TENSOR_UINT64};
  int i, j, r;
  size_t maxbytes = (size_t)n * 8;
  char *a = malloc(maxbytes), *b = malloc(maxbytes);
  if (!a || !b) die("malloc");
  memset(a, 1, maxbytes);
  memset(b, 2, maxbytes);
  printf("| %-14s | %8s | %9s | %6s |\n", "pair (16M)", "ms", "memcpy ms", "ratio");
  printf("|%s|%s|%s|%s|\n", "----------------", "---------:", "----------:", "-------:");
  for (i = 0; i < 4; i++) {
    tensor_t *x = NULL;
    /* values in every integer range, negative ones and some out of range */
    if (tensor_arange(n, TENSOR_FLOAT32, &x) != TENSOR_OK) die("arange");
    {
      tensor_t *y = NULL;
      if (tensor_to_dtype(x, srcs[i], &y) != TENSOR_OK) die("to_dtype src");
      tensor_release(x);
      x = y;
    }
    for (j = 0; j < 8; j++) {
      size_t sb = (size_t)n * tensor_dtype_itemsize(srcs[i]);
      size_t db = (size_t)n * tensor_dtype_itemsize(dsts[j]);
      size_t bytes = sb > db ? sb : db;
      double best_op = 1e30, best_mc = 1e30;
      char name[32];
      for (r = 0; r < REPS; r++) {
        tensor_t *out = NULL;
        double t0 = now_ms(), t;
        memcpy(b, a, bytes);
        t = now_ms() - t0;
        if (t < best_mc) best_mc = t;
        t0 = now_ms();
        if (tensor_to_dtype(x, dsts[j], &out) != TENSOR_OK) die("to_dtype");
        tensor_release(out);
        t = now_ms() - t0;
        if (t < best_op) best_op = t;
      }
      snprintf(name, sizeof name, "%s->%s", tensor_dtype_name(srcs[i]),
               tensor_dtype_name(dsts[j]));
      printf("| %-14s | %8.2f | %9.2f | %5.2fx |\n", name, best_op, best_mc, best_mc / best_op);
    }
    tensor_release(x);
  }
  free(a);
  free(b);
  return 0;
}
