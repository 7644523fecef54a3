/* Opt-in multithreaded big copies (issue 10): the thread count from the environment
 * (TENSOR_COPY_THREADS, read once) and the API, its validation, and big copies (>= 16
 * MiB outputs; complex128 keeps the element count, and the valgrind time, low) giving
 * exactly the single-threaded result: transposing contiguous, channels-last split along
 * dim 1, to_dtype, copy_ from a broadcast source. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

/* Runs `op` on `x` with 1 thread and with `n` threads; the results must be equal. */
static void same_result(tensor_t *x, int op, int64_t n) {
  tensor_t *a = NULL, *b = NULL;
  bool eq = false;
  int64_t prev = 0;
  int k;
  for (k = 0; k < 2; k++) {
    tensor_t **out = k == 0 ? &a : &b;
    CHECK_OK(tensor_set_copy_threads(k == 0 ? 1 : n, &prev));
    if (op == 0) CHECK_OK(tensor_contiguous(x, TENSOR_CONTIGUOUS_FORMAT, out));
    if (op == 1) CHECK_OK(tensor_contiguous(x, TENSOR_CHANNELS_LAST, out));
    if (op == 2) CHECK_OK(tensor_to_dtype(x, TENSOR_COMPLEX128, out));
  }
  if (a && b) {
    CHECK_OK(tensor_equal(a, b, &eq));
    CHECK(eq);
    CHECK(tensor_is_contiguous(a, op == 1 ? TENSOR_CHANNELS_LAST : TENSOR_CONTIGUOUS_FORMAT));
  }
  tensor_release(a);
  tensor_release(b);
}

int main(void) {
  int64_t sq[2] = {1024, 1024}, nchw[4] = {1, 64, 128, 128}, prev = 0;
  tensor_t *base = NULL, *tr = NULL, *img = NULL, *dst = NULL, *row = NULL, *ref = NULL;
  bool eq = false;
  setenv("TENSOR_COPY_THREADS", "3", 1);
  CHECK(tensor_copy_threads() == 3); /* read once, at the first call */
  setenv("TENSOR_COPY_THREADS", "5", 1);
  CHECK(tensor_copy_threads() == 3);

  CHECK_OK(tensor_set_copy_threads(2, &prev));
  CHECK(prev == 3 && tensor_copy_threads() == 2);
  CHECK_OK(tensor_set_copy_threads(2, NULL));
  CHECK_STATUS(tensor_set_copy_threads(0, &prev), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_set_copy_threads");
  CHECK_STATUS(tensor_set_copy_threads(257, NULL), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(tensor_copy_threads() == 2);

  /* 16 MiB c128 transposed, NCHW -> NHWC, f32 -> c128: identical with 1, 2 or 3. */
  CHECK_OK(tensor_arange(1024 * 1024, TENSOR_COMPLEX128, &base));
  {
    tensor_t *v = NULL;
    CHECK_OK(tensor_view(base, sq, 2, &v));
    CHECK_OK(tensor_transpose(v, 0, 1, &tr));
    tensor_release(v);
  }
  same_result(tr, 0, 2);
  {
    tensor_t *f32 = NULL; /* f32 -> c128: a 16 MiB output from 4 MiB */
    CHECK_OK(tensor_arange(1024 * 1024, TENSOR_FLOAT32, &f32));
    same_result(f32, 2, 3);
    tensor_release(f32);
  }
  CHECK_OK(tensor_full(nchw, 4, TENSOR_COMPLEX128, 0, &img));
  {
    tensor_t *flat = NULL, *v = NULL;
    CHECK_OK(tensor_arange(64 * 128 * 128, TENSOR_COMPLEX128, &flat));
    CHECK_OK(tensor_view(flat, nchw, 4, &v));
    CHECK_OK(tensor_copy_(img, v));
    tensor_release(v);
    tensor_release(flat);
  }
  same_result(img, 1, 2);

  /* copy_ of a broadcast row into a 16 MiB destination, split over 2 threads. */
  {
    CHECK_OK(tensor_arange(1024, TENSOR_COMPLEX128, &row));
    CHECK_OK(tensor_empty(sq, 2, TENSOR_COMPLEX128, &dst));
    CHECK_OK(tensor_empty(sq, 2, TENSOR_COMPLEX128, &ref));
    CHECK_OK(tensor_set_copy_threads(1, NULL));
    CHECK_OK(tensor_copy_(ref, row));
    CHECK_OK(tensor_set_copy_threads(2, NULL));
    CHECK_OK(tensor_copy_(dst, row));
    CHECK_OK(tensor_equal(dst, ref, &eq));
    CHECK(eq);
  }
  CHECK_OK(tensor_set_copy_threads(1, NULL));
  tensor_release(row);
  tensor_release(dst);
  tensor_release(ref);
  tensor_release(img);
  tensor_release(tr);
  tensor_release(base);
  return harness_finish("test_copy_threads");
}
