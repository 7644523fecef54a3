/* float -> integer conversions (to_dtype) through the real libtensor.so, single thread:
 * every pair of {f32, f64, f16, bf16} -> {u8, i8, i16, u16, i32, u32, i64, u64} at 16M
 * elements, each call timed with its output's allocation and release, against memcpy of
 * the larger side's bytes (source or result) into an already-touched buffer, alternately,
 * best of REPS. ratio = t(memcpy) / t(op): >= 1.0 is the issue-10 target.
 * Then the float8 rows (one thread): float32 <-> float8_e4m3fn and bfloat16 <-> float8_e4m3fn
 * / e5m2, from values spread over [-250, 250) (in range, with every rounding case), each
 * as tensor_copy_ into a preallocated output and as to_dtype + release, against memcpy
 * between warm buffers (see f8_row).
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

/* The malloc(160)+free pair, best of REPS rounds of 20000: the host's noise gauge. */
static void *volatile sink;
static volatile size_t malloc_size = 160;
static double malloc_pair_ns(void) {
  double best = 1e30;
  int r, i;
  for (r = 0; r < REPS; r++) {
    double t0 = now_ms(), t;
    for (i = 0; i < 20000; i++) {
      sink = malloc(malloc_size);
      free(sink);
    }
    t = (now_ms() - t0) * 1e6 / 20000;
    if (t < best) best = t;
  }
  return best;
}

#define F8_REPS 11

/* This thread's CPU time: the host is loaded (2 cores, other jobs), and time spent
 * preempted is not the conversion's. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One float8 pair, three timings in alternating rounds, best of F8_REPS each, against
 * memcpy of the larger side's bytes between two warm buffers:
 *   copy_  tensor_copy_(dst, x) into a preallocated dst of the target dtype, reused (the
 *          conversion itself);
 *   to     tensor_to_dtype(x) + release: a new tensor each time (after the first round its
 *          block comes back from the allocator's cache, already touched). */
static void f8_row(tensor_t *x, tensor_dtype_t dt, int64_t n, char *a, char *b) {
  size_t sb = (size_t)n * tensor_itemsize(x);
  size_t db = (size_t)n * tensor_dtype_itemsize(dt);
  size_t bytes = sb > db ? sb : db;
  double b_cp = 1e30, b_mc = 1e30, b_to = 1e30;
  tensor_t *dst = NULL;
  char name[48];
  int r;
  if (tensor_empty(&n, 1, dt, &dst) != TENSOR_OK) die("empty dst");
  if (tensor_copy_(dst, x) != TENSOR_OK) die("copy_"); /* touched */
  for (r = 0; r < F8_REPS; r++) {
    tensor_t *out = NULL;
    double t0 = cpu_ms(), t;
    memcpy(b, a, bytes);
    t = cpu_ms() - t0;
    if (t < b_mc) b_mc = t;
    t0 = cpu_ms();
    if (tensor_copy_(dst, x) != TENSOR_OK) die("copy_");
    t = cpu_ms() - t0;
    if (t < b_cp) b_cp = t;
    t0 = cpu_ms();
    if (tensor_to_dtype(x, dt, &out) != TENSOR_OK) die("to_dtype");
    tensor_release(out);
    t = cpu_ms() - t0;
    if (t < b_to) b_to = t;
  }
  tensor_release(dst);
  snprintf(name, sizeof name, "%s->%s", tensor_dtype_name(tensor_dtype(x)), tensor_dtype_name(dt));
  printf("| %-28s | %7.2f | %5.2fx | %7.2f | %5.2fx | %7.2f |\n", name, b_cp, b_mc / b_cp, b_to,
         b_mc / b_to, b_mc);
}

static void float8_rows(int64_t n, char *a, char *b) {
  tensor_t *f = NULL, *bf = NULL, *e4 = NULL, *e5 = NULL;
  float *p;
  int64_t i, prev = 0;
  /* One thread, as libtorch at::set_num_threads(1) in bench_torch_convert. */
  if (tensor_set_copy_threads(1, &prev) != TENSOR_OK) die("set_copy_threads");
  if (tensor_empty(&n, 1, TENSOR_FLOAT32, &f) != TENSOR_OK) die("empty");
  p = (float *)tensor_data_ptr(f);
  for (i = 0; i < n; i++) p[i] = (float)((uint32_t)i * 2654435761u % 100000u) / 200.0f - 250.0f;
  if (tensor_to_dtype(f, TENSOR_BFLOAT16, &bf) != TENSOR_OK) die("to bf16");
  if (tensor_to_dtype(f, TENSOR_FLOAT8_E4M3FN, &e4) != TENSOR_OK) die("to e4m3fn");
  if (tensor_to_dtype(f, TENSOR_FLOAT8_E5M2, &e5) != TENSOR_OK) die("to e5m2");
  printf("float8 conversions, %lld elements, 1 thread, best of %d alternating rounds; "
         "malloc(160)+free pair %.1f ns\n",
         (long long)n, F8_REPS, malloc_pair_ns());
  printf("thread CPU ms; ratio = memcpy of the larger side (warm buffers) / the op\n");
  printf("| %-28s | %7s | %6s | %7s | %6s | %7s |\n", "pair", "copy_", "ratio", "to", "ratio",
         "memcpy");
  printf("|------------------------------|--------:|-------:|--------:|-------:|--------:|\n");
  f8_row(f, TENSOR_FLOAT8_E4M3FN, n, a, b);
  f8_row(e4, TENSOR_FLOAT32, n, a, b);
  f8_row(bf, TENSOR_FLOAT8_E4M3FN, n, a, b);
  f8_row(e4, TENSOR_BFLOAT16, n, a, b);
  f8_row(bf, TENSOR_FLOAT8_E5M2, n, a, b);
  f8_row(e5, TENSOR_BFLOAT16, n, a, b);
  tensor_release(f);
  tensor_release(bf);
  tensor_release(e4);
  tensor_release(e5);
  if (tensor_set_copy_threads(prev, NULL) != TENSOR_OK) die("set_copy_threads");
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
