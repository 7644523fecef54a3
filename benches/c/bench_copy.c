/* Data-movement benchmark through the C API of the real libtensor.so (single thread).
 * Each op is timed as a user calls it: the call that makes the output (allocation
 * included) plus the release of that output. Every row is compared with memcpy of the
 * same bytes into an already-touched buffer, measured in the same run:
 * ratio = t(memcpy) / t(op), so > 1 is faster than memcpy.
 * Build and run: benches/c/run.sh */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensor.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define REPS 21

/* Best of n: on a shared machine, interference only ever adds time. */
static double best(double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  return v[0];
}

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}

enum op { CLONE, CONTIGUOUS_CL, CONTIGUOUS, TO_DTYPE, FILL, EQUAL };

static tensor_t *equal_other = NULL; /* the right-hand side of EQUAL rows */

/* One op call as a user makes it: the call (output allocation included) and the release
 * of its output. */
static void run_op(enum op op, tensor_t *x, tensor_dtype_t dtype, int i) {
  tensor_t *out = NULL;
  tensor_status_t st = TENSOR_OK;
  switch (op) {
    case CLONE: st = tensor_clone(x, TENSOR_PRESERVE_FORMAT, &out); break;
    case CONTIGUOUS_CL: st = tensor_contiguous(x, TENSOR_CHANNELS_LAST, &out); break;
    case CONTIGUOUS: st = tensor_contiguous(x, TENSOR_CONTIGUOUS_FORMAT, &out); break;
    case TO_DTYPE: st = tensor_to_dtype(x, dtype, &out); break;
    case FILL: st = tensor_fill_f64_(x, (double)i); break;
    case EQUAL: {
      bool eq = false;
      st = tensor_equal(x, equal_other, &eq);
      if (!eq) die("equal");
      break;
    }
  }
  if (st != TENSOR_OK) die("op");
  tensor_release(out);
}

/* Times `op` and memcpy of `nbytes` (into an already-touched buffer) alternately, REPS
 * times each, so that machine noise hits both alike; reports both medians in ms. */
static void time_pair(enum op op, tensor_t *x, tensor_dtype_t dtype, size_t nbytes,
                      double *op_ms, double *memcpy_ms, double *cold_ms) {
  char *src = malloc(nbytes), *dst = malloc(nbytes);
  double t_op[REPS], t_mc[REPS];
  int i;
  if (!src || !dst) die("malloc");
  memset(src, 1, nbytes);
  memset(dst, 2, nbytes);
  /* The first call pays for fresh pages (no freed block to reuse yet): reported apart. */
  *cold_ms = now_ms();
  run_op(op, x, dtype, 0);
  *cold_ms = now_ms() - *cold_ms;
  for (i = 0; i < REPS; i++) {
    double t0 = now_ms();
    memcpy(dst, src, nbytes);
    t_mc[i] = now_ms() - t0;
    t0 = now_ms();
    run_op(op, x, dtype, i);
    t_op[i] = now_ms() - t0;
  }
  if (dst[nbytes - 1] != 1) die("memcpy");
  free(src);
  free(dst);
  *op_ms = best(t_op, REPS);
  *memcpy_ms = best(t_mc, REPS);
}

static void row(const char *name, double ms, size_t bytes, double memcpy_ms, double cold) {
  printf("| %-44s | %8.2f | %6.2f | %9.2f | %5.2fx | %8.2f |\n", name, ms, bytes / ms / 1e6,
         memcpy_ms, memcpy_ms / ms, cold);
}

static tensor_t *ones(const int64_t *sizes, int64_t ndim) {
  tensor_t *t = NULL;
  if (tensor_full(sizes, ndim, TENSOR_FLOAT32, 1.5, &t) != TENSOR_OK) die("tensor_full");
  return t;
}

int main(void) {
  int64_t sq[2] = {4096, 4096}, nchw[4] = {32, 64, 56, 56}, small[4] = {8, 3, 224, 224},
          flat[1] = {16 << 20};
  tensor_t *a, *tr, *b, *c, *f;
  size_t bytes;
  double mc, ms, cold;

  printf("| %-44s | %8s | %6s | %9s | %6s | %8s |\n", "op (f32 unless noted)", "ms", "GB/s",
         "memcpy ms", "ratio", "1st call");
  printf("|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------------", "---------:",
         "-------:", "----------:", "-------:", "---------:");

  a = ones(sq, 2);
  bytes = (size_t)tensor_nbytes(a);
  time_pair(CLONE, a, 0, bytes, &ms, &mc, &cold);
  row("clone, contiguous 4096x4096", ms, bytes, mc, cold);
  {
    int64_t s[2] = {4096, 4096}, st[2] = {1, 4096};
    if (tensor_from_storage(tensor_storage(a), 0, s, st, 2, TENSOR_FLOAT32, &tr) != TENSOR_OK)
      die("transpose");
  }
  time_pair(CONTIGUOUS, tr, 0, bytes, &ms, &mc, &cold);
  row("contiguous(), transposed 4096x4096", ms, bytes, mc, cold);
  tensor_release(tr);
  tensor_release(a);

  { /* not a target row: 8-byte items */
    int64_t sd[2] = {2896, 2896}, st[2] = {1, 2896};
    tensor_t *d = NULL;
    if (tensor_full(sd, 2, TENSOR_FLOAT64, 1.5, &d) != TENSOR_OK) die("tensor_full");
    if (tensor_from_storage(tensor_storage(d), 0, sd, st, 2, TENSOR_FLOAT64, &tr) != TENSOR_OK)
      die("transpose");
    bytes = (size_t)tensor_nbytes(d);
    time_pair(CONTIGUOUS, tr, 0, bytes, &ms, &mc, &cold);
    row("contiguous(), transposed 2896x2896 f64", ms, bytes, mc, cold);
    tensor_release(tr);
    tensor_release(d);
  }

  b = ones(nchw, 4);
  bytes = (size_t)tensor_nbytes(b);
  time_pair(CONTIGUOUS_CL, b, 0, bytes, &ms, &mc, &cold);
  row("contiguous(CHANNELS_LAST), 32x64x56x56", ms, bytes, mc, cold);
  tensor_release(b);

  c = ones(small, 4);
  bytes = (size_t)tensor_nbytes(c);
  time_pair(CONTIGUOUS_CL, c, 0, bytes, &ms, &mc, &cold);
  row("contiguous(CHANNELS_LAST), 8x3x224x224", ms, bytes, mc, cold);
  tensor_release(c);

  f = ones(flat, 1);
  bytes = (size_t)tensor_nbytes(f);
  time_pair(TO_DTYPE, f, TENSOR_BFLOAT16, bytes, &ms, &mc, &cold);
  row("to_dtype bf16, 16M (vs memcpy of f32 bytes)", ms, bytes, mc, cold);
  time_pair(TO_DTYPE, f, TENSOR_FLOAT16, bytes, &ms, &mc, &cold);
  row("to_dtype f16, 16M (vs memcpy of f32 bytes)", ms, bytes, mc, cold);
  time_pair(FILL, f, 0, bytes, &ms, &mc, &cold);
  row("fill_f64 in place, 16M", ms, bytes, mc, cold);
  /* not a target row: equal reads two tensors */
  if (tensor_clone(f, TENSOR_PRESERVE_FORMAT, &equal_other) != TENSOR_OK) die("clone");
  time_pair(EQUAL, f, 0, bytes, &ms, &mc, &cold);
  row("equal, 16M (reads 2 x the memcpy bytes)", ms, bytes, mc, cold);
  tensor_release(equal_other);
  tensor_release(f);
  return 0;
}
