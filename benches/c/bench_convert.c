/* float -> integer conversions (to_dtype) through the real libtensor.so, single thread:
 * every pair of {f32, f64, f16, bf16} -> {u8, i8, i16, u16, i32, u32, i64, u64} at 16M
 * elements, each call timed with its output's allocation and release, against memcpy of
 * the larger side's bytes (source or result) into an already-touched buffer, alternately,
 * best of REPS. ratio = t(memcpy) / t(op): >= 1.0 is the issue-10 target.
 * Then the float8 rows: float32 <-> float8_e4m3fn and bfloat16 <-> float8_e4m3fn / e5m2,
 * from values spread over [-250, 250) (in range, with every rounding case).
 * Usage: bench_convert [n_elements [float8]]   (float8: only the float8 rows)
 * Build and run: benches/c/run.sh convert */
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

/* One row: best of REPS of x.to(dst) against memcpy of the larger side. */
static void row(tensor_t *x, tensor_dtype_t dst, int64_t n, char *a, char *b) {
  size_t sb = (size_t)n * tensor_itemsize(x);
  size_t db = (size_t)n * tensor_dtype_itemsize(dst);
  size_t bytes = sb > db ? sb : db;
  double best_op = 1e30, best_mc = 1e30;
  char name[48];
  int r;
  for (r = 0; r < REPS; r++) {
    tensor_t *out = NULL;
    double t0 = now_ms(), t;
    memcpy(b, a, bytes);
    t = now_ms() - t0;
    if (t < best_mc) best_mc = t;
    t0 = now_ms();
    if (tensor_to_dtype(x, dst, &out) != TENSOR_OK) die("to_dtype");
    tensor_release(out);
    t = now_ms() - t0;
    if (t < best_op) best_op = t;
  }
  snprintf(name, sizeof name, "%s->%s", tensor_dtype_name(tensor_dtype(x)), tensor_dtype_name(dst));
  printf("| %-24s | %8.2f | %9.2f | %5.2fx |\n", name, best_op, best_mc, best_mc / best_op);
}

static void float8_rows(int64_t n, char *a, char *b) {
  tensor_t *f = NULL, *bf = NULL, *e4 = NULL, *e5 = NULL;
  float *p;
  int64_t i;
  if (tensor_empty(&n, 1, TENSOR_FLOAT32, &f) != TENSOR_OK) die("empty");
  p = (float *)tensor_data_ptr(f);
  for (i = 0; i < n; i++) p[i] = (float)((uint32_t)i * 2654435761u % 100000u) / 200.0f - 250.0f;
  if (tensor_to_dtype(f, TENSOR_BFLOAT16, &bf) != TENSOR_OK) die("to bf16");
  if (tensor_to_dtype(f, TENSOR_FLOAT8_E4M3FN, &e4) != TENSOR_OK) die("to e4m3fn");
  if (tensor_to_dtype(f, TENSOR_FLOAT8_E5M2, &e5) != TENSOR_OK) die("to e5m2");
  printf("| %-24s | %8s | %9s | %6s |\n", "float8 pair (16M)", "ms", "memcpy ms", "ratio");
  printf("|%s|%s|%s|%s|\n", "--------------------------", "---------:", "----------:", "-------:");
  row(f, TENSOR_FLOAT8_E4M3FN, n, a, b);
  row(e4, TENSOR_FLOAT32, n, a, b);
  row(bf, TENSOR_FLOAT8_E4M3FN, n, a, b);
  row(e4, TENSOR_BFLOAT16, n, a, b);
  row(bf, TENSOR_FLOAT8_E5M2, n, a, b);
  row(e5, TENSOR_BFLOAT16, n, a, b);
  tensor_release(f);
  tensor_release(bf);
  tensor_release(e4);
  tensor_release(e5);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 16 << 20;
  int only_float8 = argc > 2 && strcmp(argv[2], "float8") == 0;
  const tensor_dtype_t srcs[4] = {TENSOR_FLOAT32, TENSOR_FLOAT64, TENSOR_FLOAT16,
                                  TENSOR_BFLOAT16};
  const tensor_dtype_t dsts[8] = {TENSOR_UINT8,  TENSOR_INT8,   TENSOR_INT16, TENSOR_UINT16,
                                  TENSOR_INT32,  TENSOR_UINT32, TENSOR_INT64, TENSOR_UINT64};
  int i, j;
  size_t maxbytes = (size_t)n * 8;
  char *a = malloc(maxbytes), *b = malloc(maxbytes);
  if (!a || !b) die("malloc");
  memset(a, 1, maxbytes);
  memset(b, 2, maxbytes);
  if (only_float8) {
    float8_rows(n, a, b);
    free(a);
    free(b);
    return 0;
  }
  printf("| %-24s | %8s | %9s | %6s |\n", "pair (16M)", "ms", "memcpy ms", "ratio");
  printf("|%s|%s|%s|%s|\n", "--------------------------", "---------:", "----------:", "-------:");
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
    for (j = 0; j < 8; j++) row(x, dsts[j], n, a, b);
    tensor_release(x);
  }
  printf("\n");
  float8_rows(n, a, b);
  free(a);
  free(b);
  return 0;
}
