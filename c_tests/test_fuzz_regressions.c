/* Regressions found by the fuzzer (fuzz/fuzz_targets/c_api.rs), one test each. */
#include <stdint.h>

#include "harness.h"

/* A tensor without elements whose other sizes multiply past int64: its transpose and
 * permutations are views without elements too (numel did not depend on the order of the
 * dims: [2^62, 4, 0] answered OVERFLOW where [0, 2^62, 4] was fine), and so are fills
 * and copies of them. */
static void test_zero_numel_with_huge_sizes_reorders(void) {
  int64_t sizes[3] = {0, (int64_t)1 << 62, 4};
  int64_t strides[3] = {1, 1, 1};
  int64_t perm[3] = {2, 1, 0};
  tensor_t *t = NULL, *tt = NULL, *p = NULL, *c = NULL;
  CHECK_OK(tensor_empty_strided(sizes, strides, 3, TENSOR_UINT8, &t));
  CHECK(tensor_numel(t) == 0);
  CHECK_OK(tensor_transpose(t, 0, 2, &tt));
  CHECK(tt != NULL && tensor_numel(tt) == 0 && tensor_sizes(tt)[0] == 4);
  /* the copy engine's size hint multiplied the sizes too: a debug build answered INTERNAL */
  CHECK_OK(tensor_fill_i64(tt, 3));
  CHECK_OK(tensor_copy_(tt, tt));
  /* a copy of it needs contiguous strides 4 * 2^62: OVERFLOW, now documented for clone,
   * contiguous and to_dtype */
  CHECK_STATUS(tensor_clone(t, TENSOR_CONTIGUOUS_FORMAT, &c), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("tensor_clone");
  CHECK(c == NULL);
  CHECK_OK(tensor_permute(t, perm, 3, &p));
  CHECK(p != NULL && tensor_numel(p) == 0);
  CHECK_OK(tensor_contiguous(p, TENSOR_CONTIGUOUS_FORMAT, &c));
  CHECK(c != NULL && tensor_numel(c) == 0);
  tensor_release(c);
  tensor_release(p);
  tensor_release(tt);
  tensor_release(t);
}

/* A view of INT64_MAX elements (an expanded scalar) viewed as sizes whose product passes
 * int64: a saturated product matched the numel and the stride computation overflowed
 * (debug build: INTERNAL). Now SHAPE, as any numel mismatch. */
static void test_view_of_int64_max_elements(void) {
  int64_t big[1] = {INT64_MAX};
  int64_t split[2] = {(int64_t)1 << 62, 4};
  tensor_t *s = NULL, *e = NULL, *v = NULL;
  CHECK_OK(tensor_zeros(NULL, 0, TENSOR_FLOAT32, &s));
  CHECK_OK(tensor_expand(s, big, 1, &e));
  CHECK(e != NULL && tensor_numel(e) == INT64_MAX);
  CHECK_STATUS(tensor_view(e, split, 2, &v), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("tensor_view");
  CHECK(v == NULL);
  tensor_release(e);
  tensor_release(s);
}

/* unfold of a dim of INT64_MAX (an expanded scalar) with step 1: the window count
 * INT64_MAX - size + 1 passes int64 for size 0 (the `+ 1` was unchecked: a debug build
 * panicked, INTERNAL). Now OVERFLOW; size 1 still fits. */
static void test_unfold_window_count_of_int64_max(void) {
  int64_t big[1] = {INT64_MAX};
  tensor_t *s = NULL, *e = NULL, *u = NULL;
  CHECK_OK(tensor_zeros(NULL, 0, TENSOR_FLOAT32, &s));
  CHECK_OK(tensor_expand(s, big, 1, &e));
  CHECK_STATUS(tensor_unfold(e, 0, 0, 1, &u), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("tensor_unfold");
  CHECK(u == NULL);
  CHECK_OK(tensor_unfold(e, 0, 1, 1, &u));
  CHECK(u != NULL && tensor_ndim(u) == 2);
  CHECK(tensor_sizes(u)[0] == INT64_MAX && tensor_sizes(u)[1] == 1);
  tensor_release(u);
  tensor_release(e);
  tensor_release(s);
}

int main(void) {
  test_zero_numel_with_huge_sizes_reorders();
  test_view_of_int64_max_elements();
  test_unfold_window_count_of_int64_max();
  return harness_finish("c_fuzz_regressions");
}
