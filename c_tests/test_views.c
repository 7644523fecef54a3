/* Views (docs/c-api.md, "Views") through the shared library: every function, its results
 * (sizes, strides, offset, shared storage and version counter, values), each of its error
 * cases (status + message substring, out-parameter untouched), and NULL handling. Every
 * handle is released: the program runs clean under valgrind (TENSOR_VALGRIND=1). Expected
 * geometries are PyTorch's. */
#include <stdint.h>

#include "harness.h"

/* The view's geometry equals (sizes, strides, offset). */
static int geom_is(const tensor_t *t, int64_t ndim, const int64_t *sizes, const int64_t *strides,
                   int64_t offset) {
  int64_t d;
  if (t == NULL || tensor_ndim(t) != ndim || tensor_storage_offset(t) != offset) return 0;
  for (d = 0; d < ndim; d++) {
    if (tensor_sizes(t)[d] != sizes[d] || tensor_strides(t)[d] != strides[d]) return 0;
  }
  return 1;
}

/* Value of a float tensor at index (or -999 on failure). */
static double at(const tensor_t *t, const int64_t *index, int64_t n) {
  double v = -999.0;
  if (tensor_get_f64(t, index, n, &v) != TENSOR_OK) return -999.0;
  return v;
}

/* A fresh arange(n) viewed as sizes (contiguous), float32. */
static tensor_t *arange_as(int64_t n, const int64_t *sizes, int64_t ndim) {
  tensor_t *flat = NULL, *t = NULL;
  if (tensor_arange(n, TENSOR_FLOAT32, &flat) != TENSOR_OK) return NULL;
  if (tensor_view(flat, sizes, ndim, &t) != TENSOR_OK) t = NULL;
  tensor_release(flat);
  return t;
}

/* A view result that must be a view of `base`: same storage and version counter. */
static int is_view_of(const tensor_t *v, const tensor_t *base) {
  return v != NULL && v != base && tensor_shares_storage(v, base) &&
         tensor_version(v) == tensor_version(base);
}

static tensor_t *const SENTINEL = (tensor_t *)(uintptr_t)0x1;

static void test_view(void) {
  int64_t s34[2] = {3, 4}, s_1_6[2] = {-1, 6}, s46[2] = {4, 6}, st61[2] = {6, 1};
  int64_t s234[3] = {2, 3, 4}, s2x12[2] = {2, 12}, s5_1[2] = {5, -1}, s_1_1[2] = {-1, -1};
  int64_t st0[3] = {12, 1, 4}, s2223[4] = {2, 2, 2, 3}, st2223[4] = {12, 2, 1, 4};
  int64_t s243[3] = {2, 4, 3};
  tensor_t *t = arange_as(24, s234, 3), *v = NULL, *tr = NULL, *out = SENTINEL;
  CHECK(t != NULL);
  CHECK_OK(tensor_view(t, s_1_6, 2, &v));
  CHECK(geom_is(v, 2, s46, st61, 0) && is_view_of(v, t));
  tensor_release(v);
  v = NULL;
  /* transpose(1, 2) of [2,3,4]: [2,4,3] strides [12,1,4] */
  CHECK_OK(tensor_transpose(t, 1, 2, &tr));
  CHECK(geom_is(tr, 3, s243, st0, 0));
  CHECK_OK(tensor_view(tr, s2223, 4, &v));
  CHECK(geom_is(v, 4, s2223, st2223, 0));
  tensor_release(v);
  CHECK_STATUS(tensor_view(tr, s2x12, 2, &out), TENSOR_ERR_NOT_VIEWABLE);
  CHECK_ERROR_HAS("tensor_view: view size is not compatible");
  CHECK_ERROR_HAS("reshape");
  CHECK(out == SENTINEL);
  CHECK_STATUS(tensor_view(t, s5_1, 2, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("shape '[5, -1]' is invalid for input of size 24");
  CHECK_STATUS(tensor_view(t, s_1_1, 2, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("only one dimension can be inferred");
  CHECK_STATUS(tensor_view(t, s34, -1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_view(t, NULL, 2, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_view(NULL, s34, 2, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_view(t, s_1_6, 2, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(tr);
  tensor_release(t);
}

static void test_view_dtype(void) {
  int64_t s34[2] = {3, 4}, s38[2] = {3, 8}, st81[2] = {8, 1}, i1[1] = {1}, i3[1] = {3};
  int64_t s3[1] = {3}, st1[1] = {1};
  tensor_t *t = arange_as(12, s34, 2), *v = NULL, *w = NULL, *tr = NULL, *out = SENTINEL;
  tensor_t *b = NULL, *s = NULL;
  CHECK_OK(tensor_view_dtype(t, TENSOR_FLOAT16, &v));
  CHECK(geom_is(v, 2, s38, st81, 0) && is_view_of(v, t));
  CHECK(tensor_dtype(v) == TENSOR_FLOAT16);
  CHECK_OK(tensor_view_dtype(t, TENSOR_INT32, &w)); /* same size: only the dtype changes */
  CHECK(geom_is(w, 2, s34, tensor_strides(t), 0) && tensor_dtype(w) == TENSOR_INT32);
  {
    /* 1.0f is 0x3F800000 */
    int64_t idx[2] = {0, 1}, got = 0;
    CHECK_OK(tensor_get_i64(w, idx, 2, &got));
    CHECK(got == 0x3F800000);
  }
  CHECK_OK(tensor_transpose(t, 0, 1, &tr));
  CHECK_STATUS(tensor_view_dtype(tr, TENSOR_FLOAT16, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 4");
  CHECK_OK(tensor_arange(3, TENSOR_UINT8, &b));
  CHECK_STATUS(tensor_view_dtype(b, TENSOR_INT16, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("self.size(-1) must be divisible by 2 to view Byte as Short");
  tensor_release(b);
  CHECK_OK(tensor_arange(4, TENSOR_UINT8, &b));
  CHECK_OK(tensor_as_strided(b, s3, st1, 1, 1, &s)); /* offset 1 */
  CHECK_STATUS(tensor_as_strided(b, i3, i1, 1, 2, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  tensor_release(b);
  b = s;
  s = NULL;
  CHECK_OK(tensor_narrow(b, 0, 0, 2, &s));
  CHECK_STATUS(tensor_view_dtype(s, TENSOR_INT16, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("self.storage_offset() must be divisible by 2");
  tensor_release(s);
  tensor_release(b);
  CHECK_OK(tensor_full(NULL, 0, TENSOR_COMPLEX128, 1.0, &b));
  CHECK_STATUS(tensor_view_dtype(b, TENSOR_INT64, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("self.dim() cannot be 0 to view ComplexDouble as Long");
  tensor_release(b);
  CHECK_STATUS(tensor_view_dtype(t, (tensor_dtype_t)8, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unknown dtype code 8");
  CHECK_STATUS(tensor_view_dtype(t, (tensor_dtype_t)-1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_view_dtype(NULL, TENSOR_INT32, &out), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(tr);
  tensor_release(w);
  tensor_release(v);
  tensor_release(t);
}

static void test_as_strided(void) {
  int64_t s23[2] = {2, 3}, st31[2] = {3, 1}, s0[2] = {0, 3}, st0[2] = {100, 1}, n4[1] = {4};
  int64_t s45[2] = {4, 5}, ste[2] = {0, 1}, neg[2] = {-1, 3}, negst[2] = {-3, 1};
  int64_t huge[2] = {INT64_C(1) << 62, 4}, st41[2] = {4, 1}, one[1] = {1};
  tensor_t *t = NULL, *v = NULL, *out = SENTINEL;
  CHECK_OK(tensor_arange(20, TENSOR_FLOAT32, &t));
  CHECK_OK(tensor_as_strided(t, s23, st31, 2, 14, &v)); /* reaches element 19: fits */
  CHECK(geom_is(v, 2, s23, st31, 14) && is_view_of(v, t));
  {
    int64_t idx[2] = {1, 2};
    CHECK(at(v, idx, 2) == 19.0);
  }
  tensor_release(v);
  CHECK_OK(tensor_as_strided(t, s0, st0, 2, 100, &v)); /* size 0 always fits */
  CHECK(geom_is(v, 2, s0, st0, 100));
  tensor_release(v);
  CHECK_OK(tensor_as_strided(t, s45, ste, 2, 0, &v));
  CHECK(!tensor_is_non_overlapping_and_dense(v));
  tensor_release(v);
  CHECK_OK(tensor_as_strided(t, NULL, NULL, 0, 19, &v)); /* 0-dim */
  CHECK(tensor_ndim(v) == 0 && at(v, NULL, 0) == 19.0);
  tensor_release(v);
  CHECK_STATUS(tensor_as_strided(t, s23, st31, 2, 15, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_ERROR_HAS("requiring a storage size of 84 are out of bounds for storage of size 80");
  CHECK_STATUS(tensor_as_strided(t, n4, one, 1, -1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("Tensor: invalid storage offset -1");
  CHECK_STATUS(tensor_as_strided(t, neg, st31, 2, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("Negative sizes are not supported, got sizes: [-1, 3]");
  CHECK_STATUS(tensor_as_strided(t, s23, negst, 2, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("Negative strides are not supported at the moment, got strides: [-3, 1]");
  CHECK_STATUS(tensor_as_strided(t, huge, st41, 2, 0, &out), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("Storage size calculation overflowed");
  CHECK_STATUS(tensor_as_strided(t, s23, NULL, 2, 0, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_as_strided(t, s23, st31, 65, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(out == SENTINEL);
  tensor_release(t);
}

static void test_transpose_permute_movedim(void) {
  int64_t s234[3] = {2, 3, 4}, s432[3] = {4, 3, 2}, st432[3] = {1, 4, 12};
  int64_t perm[3] = {-1, 0, 1}, s423[3] = {4, 2, 3}, st423[3] = {1, 12, 4};
  int64_t dup[3] = {0, 1, -2}, oob[3] = {0, 1, 3}, two[2] = {0, 1};
  int64_t s342[3] = {3, 4, 2}, st342[3] = {4, 1, 12}, s3[1] = {3}, st1[1] = {1};
  int64_t s43[2] = {4, 3}, st43[2] = {1, 4}, s34[2] = {3, 4}, st34[2] = {4, 1};
  tensor_t *t = arange_as(24, s234, 3), *v = NULL, *m = NULL, *out = SENTINEL;
  tensor_t *vec = NULL;
  CHECK_OK(tensor_transpose(t, 0, -1, &v));
  CHECK(geom_is(v, 3, s432, st432, 0) && is_view_of(v, t));
  CHECK(!tensor_is_contiguous(v, TENSOR_CONTIGUOUS_FORMAT) && tensor_is_non_overlapping_and_dense(v));
  {
    int64_t idx[3] = {3, 1, 1}; /* t[1, 1, 3] = 12 + 4 + 3 */
    CHECK(at(v, idx, 3) == 19.0);
  }
  tensor_release(v);
  CHECK_OK(tensor_transpose(t, 1, -2, &v)); /* same dim: an alias */
  CHECK(geom_is(v, 3, s234, tensor_strides(t), 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_STATUS(tensor_transpose(t, 0, 3, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("tensor_transpose: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_STATUS(tensor_transpose(NULL, 0, 1, &out), TENSOR_ERR_NULL_POINTER);

  CHECK_OK(tensor_permute(t, perm, 3, &v));
  CHECK(geom_is(v, 3, s423, st423, 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_STATUS(tensor_permute(t, two, 2, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("input.dim() = 3 is not equal to len(dims) = 2");
  CHECK_STATUS(tensor_permute(t, dup, 3, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("permute(): duplicate dims are not allowed.");
  CHECK_STATUS(tensor_permute(t, oob, 3, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_STATUS(tensor_permute(t, NULL, 3, &out), TENSOR_ERR_NULL_POINTER);

  CHECK_OK(tensor_movedim(t, 0, -1, &m));
  CHECK(geom_is(m, 3, s342, st342, 0) && is_view_of(m, t));
  tensor_release(m);
  CHECK_STATUS(tensor_movedim(t, -4, 0, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("tensor_movedim: Dimension out of range (expected to be in range of [-3, 2], but got -4)");

  /* t(): 2-D swaps, 1-D unchanged, 3-D refused */
  CHECK_OK(tensor_select(t, 0, 0, &m));
  CHECK_OK(tensor_transpose_2d(m, &v));
  CHECK(geom_is(v, 2, s43, st43, 0));
  CHECK(geom_is(m, 2, s34, st34, 0));
  tensor_release(v);
  CHECK_OK(tensor_select(m, 1, 0, &vec));
  CHECK_OK(tensor_transpose_2d(vec, &v));
  CHECK(tensor_ndim(v) == 1 && tensor_sizes(v)[0] == 3 && tensor_strides(v)[0] == 4);
  (void)s3;
  (void)st1;
  tensor_release(v);
  CHECK_STATUS(tensor_transpose_2d(t, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("t() expects a tensor with <= 2 dimensions, but self is 3D");
  CHECK_STATUS(tensor_transpose_2d(NULL, &out), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(vec);
  tensor_release(m);
  tensor_release(t);
}

static void test_slice_narrow_select(void) {
  int64_t s34[2] = {3, 4}, s31[2] = {3, 1}, st42[2] = {4, 2}, s32[2] = {3, 2}, st43[2] = {4, 3};
  int64_t s30[2] = {3, 0}, st41[2] = {4, 1}, s33[2] = {3, 3}, s14[1] = {4}, st1[1] = {1};
  int64_t s04[2] = {0, 4}, s3[1] = {3}, st4[1] = {4};
  tensor_t *t = arange_as(12, s34, 2), *v = NULL, *scalar = NULL, *out = SENTINEL;
  /* Python rules: [:, -3:-1:2] -> one column, from 1 */
  CHECK_OK(tensor_slice(t, 1, -3, -1, 2, &v));
  CHECK(geom_is(v, 2, s31, st42, 1) && is_view_of(v, t));
  tensor_release(v);
  CHECK_OK(tensor_slice(t, -1, -100, 100, 3, &v)); /* clamped */
  CHECK(geom_is(v, 2, s32, st43, 0));
  tensor_release(v);
  CHECK_OK(tensor_slice(t, 1, 3, 1, 1, &v)); /* end < start: empty */
  CHECK(geom_is(v, 2, s30, st41, 3));
  tensor_release(v);
  CHECK_OK(tensor_slice(t, 1, 1, INT64_MAX, 1, &v)); /* to the end */
  CHECK(geom_is(v, 2, s33, st41, 1));
  {
    int64_t idx[2] = {2, 2};
    CHECK(at(v, idx, 2) == 11.0);
  }
  tensor_release(v);
  CHECK_STATUS(tensor_slice(t, 0, 0, 3, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_slice: slice step must be positive");
  CHECK_STATUS(tensor_slice(t, 0, 0, 3, -1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_slice(t, 2, 0, 3, 1, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT32, 5.0, &scalar));
  CHECK_STATUS(tensor_slice(scalar, 0, 0, 1, 1, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("slice() cannot be applied to a 0-dim tensor.");

  CHECK_OK(tensor_narrow(t, 0, -1, 1, &v));
  {
    int64_t n14[2] = {1, 4};
    CHECK(geom_is(v, 2, n14, st41, 8));
  }
  tensor_release(v);
  CHECK_OK(tensor_narrow(t, 0, 3, 0, &v));
  CHECK(tensor_sizes(v)[0] == 0 && tensor_storage_offset(v) == 12);
  tensor_release(v);
  CHECK_STATUS(tensor_narrow(t, 0, 2, 2, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("start (2) + length (2) exceeds dimension size (3).");
  CHECK_STATUS(tensor_narrow(t, 0, 4, 0, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("start out of range (expected to be in range of [-3, 3], but got 4)");
  CHECK_STATUS(tensor_narrow(t, 0, 0, -1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("narrow(): length must be non-negative.");
  CHECK_STATUS(tensor_narrow(scalar, 0, 0, 1, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("narrow() cannot be applied to a 0-dim tensor.");
  CHECK_STATUS(tensor_narrow(t, -3, 0, 1, &out), TENSOR_ERR_INDEX);

  CHECK_OK(tensor_select(t, 0, 2, &v));
  CHECK(geom_is(v, 1, s14, st1, 8) && is_view_of(v, t));
  tensor_release(v);
  CHECK_OK(tensor_select(t, -1, -1, &v));
  CHECK(geom_is(v, 1, s3, st4, 3));
  {
    int64_t idx[1] = {2};
    CHECK(at(v, idx, 1) == 11.0);
  }
  tensor_release(v);
  CHECK_STATUS(tensor_select(t, 0, 5, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("select(): index 5 out of range for tensor of size [3, 4] at dimension 0");
  CHECK_STATUS(tensor_select(t, -1, -5, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("select(): index -5 out of range for tensor of size [3, 4] at dimension 1");
  CHECK_STATUS(tensor_select(scalar, 0, 0, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("select() cannot be applied to a 0-dim tensor.");
  CHECK_STATUS(tensor_select(t, 2, 0, &out), TENSOR_ERR_INDEX);
  CHECK_OK(tensor_slice(t, 0, 0, 0, 1, &v));
  CHECK(geom_is(v, 2, s04, st41, 0));
  CHECK_STATUS(tensor_select(v, 0, 0, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("select(): index 0 out of range for tensor of size [0, 4] at dimension 0");
  tensor_release(v);
  CHECK_STATUS(tensor_slice(NULL, 0, 0, 1, 1, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_narrow(NULL, 0, 0, 1, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_select(t, 0, 0, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(scalar);
  tensor_release(t);
}

static void test_squeeze_unsqueeze_expand(void) {
  int64_t s131[3] = {1, 3, 1}, s3[1] = {3}, st1[1] = {1}, s13[2] = {1, 3}, st31[2] = {3, 1};
  int64_t s34[2] = {3, 4}, s134[3] = {1, 3, 4}, st134[3] = {12, 4, 1}, s341[3] = {3, 4, 1};
  int64_t st341[3] = {4, 1, 1}, e[4] = {2, 4, 3, 5}, se[4] = {2, 4, 3, 5}, ste[4] = {0, 0, 1, 0};
  int64_t keep[3] = {-1, -1, -1}, fewer[1] = {4}, bad[2] = {2, 4}, lead[3] = {-1, 3, 4};
  int64_t s3v[1] = {3}, mism[2] = {2, 4}, sc[2] = {3, 2}, stc[2] = {0, 0};
  tensor_t *t = arange_as(3, s131, 3), *v = NULL, *m = NULL, *scalar = NULL, *vec = NULL;
  tensor_t *out = SENTINEL;
  CHECK_OK(tensor_squeeze(t, &v));
  CHECK(geom_is(v, 1, s3, st1, 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_OK(tensor_squeeze_dim(t, -1, &v));
  CHECK(geom_is(v, 2, s13, st31, 0));
  tensor_release(v);
  CHECK_OK(tensor_squeeze_dim(t, 1, &v)); /* size 3: unchanged */
  CHECK(geom_is(v, 3, s131, tensor_strides(t), 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_STATUS(tensor_squeeze_dim(t, 3, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("tensor_squeeze_dim: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_STATUS(tensor_squeeze(NULL, &out), TENSOR_ERR_NULL_POINTER);

  m = arange_as(12, s34, 2);
  CHECK_OK(tensor_unsqueeze(m, 0, &v));
  CHECK(geom_is(v, 3, s134, st134, 0) && is_view_of(v, m));
  tensor_release(v);
  CHECK_OK(tensor_unsqueeze(m, -1, &v));
  CHECK(geom_is(v, 3, s341, st341, 0));
  tensor_release(v);
  CHECK_STATUS(tensor_unsqueeze(m, 3, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_STATUS(tensor_unsqueeze(m, -4, &out), TENSOR_ERR_INDEX);

  /* expand [1,3,1] -> [2,4,3,5] */
  CHECK_OK(tensor_expand(t, e, 4, &v));
  CHECK(geom_is(v, 4, se, ste, 0) && is_view_of(v, t));
  CHECK(!tensor_is_non_overlapping_and_dense(v));
  {
    int64_t idx[4] = {1, 3, 2, 4};
    CHECK(at(v, idx, 4) == 2.0);
    /* one element is one memory location: writing it through the expanded view is fine
       and bumps the counter shared with the base */
    CHECK_OK(tensor_set_f64(v, idx, 4, 7.0));
    CHECK(tensor_version(t) == 1);
  }
  tensor_release(v);
  CHECK_OK(tensor_expand(t, keep, 3, &v));
  CHECK(geom_is(v, 3, s131, tensor_strides(t), 0));
  tensor_release(v);
  CHECK_STATUS(tensor_expand(m, fewer, 1, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)");
  CHECK_STATUS(tensor_expand(m, bad, 2, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 4]");
  CHECK_STATUS(tensor_expand(m, lead, 3, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
  CHECK_OK(tensor_arange(3, TENSOR_FLOAT32, &vec));
  CHECK(geom_is(vec, 1, s3v, st1, 0));
  CHECK_STATUS(tensor_expand(vec, mism, 2, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]");
  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT32, 5.0, &scalar));
  CHECK_OK(tensor_expand(scalar, sc, 2, &v)); /* 0-dim: all strides 0 */
  CHECK(geom_is(v, 2, sc, stc, 0));
  tensor_release(v);
  CHECK_STATUS(tensor_expand(NULL, sc, 2, &out), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(scalar);
  tensor_release(vec);
  tensor_release(m);
  tensor_release(t);
}

static void test_unflatten_diagonal_unfold(void) {
  int64_t s34[2] = {3, 4}, s322[3] = {3, 2, 2}, st322[3] = {4, 2, 1}, sp[2] = {-1, 2};
  int64_t bad[2] = {3, 2}, two[2] = {-1, -1}, d3[1] = {3}, st5[1] = {5}, s3[1] = {3};
  int64_t s1[1] = {1}, s33[3] = {3, 3, 2}, st33[3] = {4, 1, 1}, s0[1] = {0};
  tensor_t *t = arange_as(12, s34, 2), *v = NULL, *scalar = NULL, *out = SENTINEL;
  CHECK_OK(tensor_unflatten(t, 1, sp, 2, &v));
  CHECK(geom_is(v, 3, s322, st322, 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_STATUS(tensor_unflatten(t, 1, bad, 2, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor");
  CHECK_STATUS(tensor_unflatten(t, 1, NULL, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unflatten: sizes must be non-empty");
  CHECK_STATUS(tensor_unflatten(t, 1, two, 2, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("only one dimension can be inferred");
  CHECK_STATUS(tensor_unflatten(t, 2, sp, 2, &out), TENSOR_ERR_INDEX);
  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT32, 5.0, &scalar));
  CHECK_STATUS(tensor_unflatten(scalar, 0, s1, 1, &out), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("Dimension specified as 0 but tensor has no dimensions");

  CHECK_OK(tensor_diagonal(t, 0, 0, 1, &v));
  CHECK(geom_is(v, 1, d3, st5, 0) && is_view_of(v, t));
  {
    int64_t idx[1] = {2};
    CHECK(at(v, idx, 1) == 10.0);
  }
  tensor_release(v);
  CHECK_OK(tensor_diagonal(t, 1, 0, 1, &v));
  CHECK(geom_is(v, 1, d3, st5, 1));
  tensor_release(v);
  CHECK_OK(tensor_diagonal(t, -10, 0, 1, &v)); /* off the matrix: size 0 */
  CHECK(geom_is(v, 1, s0, st5, 0));
  tensor_release(v);
  CHECK_STATUS(tensor_diagonal(t, 0, 1, -1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("diagonal dimensions cannot be identical 1, -1");
  CHECK_STATUS(tensor_diagonal(t, 0, 0, 2, &out), TENSOR_ERR_INDEX);
  CHECK_STATUS(tensor_diagonal(scalar, 0, 0, 1, &out), TENSOR_ERR_INDEX);

  CHECK_OK(tensor_unfold(t, 1, 2, 1, &v));
  CHECK(geom_is(v, 3, s33, st33, 0) && is_view_of(v, t));
  tensor_release(v);
  CHECK_OK(tensor_unfold(scalar, 0, 1, 1, &v)); /* 0-dim becomes [size] */
  CHECK(geom_is(v, 1, s1, s1, 0));
  tensor_release(v);
  CHECK_STATUS(tensor_unfold(t, 1, 5, 1, &out), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("maximum size for tensor at dimension 1 is 4 but size is 5");
  CHECK_STATUS(tensor_unfold(t, 1, -1, 1, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("size is -1 but must be >= 0");
  CHECK_STATUS(tensor_unfold(t, 1, 2, 0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("step is 0 but must be > 0");
  CHECK_STATUS(tensor_unfold(t, -3, 2, 1, &out), TENSOR_ERR_INDEX);
  CHECK_STATUS(tensor_unflatten(NULL, 0, s3, 1, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_diagonal(NULL, 0, 0, 1, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_unfold(NULL, 0, 1, 1, &out), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(scalar);
  tensor_release(t);
}

static void test_alias_detach_versions(void) {
  int64_t s34[2] = {3, 4}, idx[2] = {1, 2};
  tensor_t *t = arange_as(12, s34, 2), *a = NULL, *d = NULL, *out = SENTINEL;
  CHECK_OK(tensor_alias(t, &a));
  CHECK_OK(tensor_detach(t, &d));
  CHECK(is_view_of(a, t) && is_view_of(d, t) && a != d);
  CHECK(geom_is(a, 2, s34, tensor_strides(t), 0) && geom_is(d, 2, s34, tensor_strides(t), 0));
  CHECK(tensor_use_count(t) == 1 && tensor_use_count(a) == 1);
  /* a write through the detached view lands in the base and bumps the shared counter */
  CHECK_OK(tensor_set_f64(d, idx, 2, -3.0));
  CHECK(at(t, idx, 2) == -3.0 && at(a, idx, 2) == -3.0);
  CHECK(tensor_version(t) == 1 && tensor_version(a) == 1 && tensor_version(d) == 1);
  /* the views keep the storage alive after the base is released */
  tensor_release(t);
  CHECK(at(a, idx, 2) == -3.0);
  CHECK_STATUS(tensor_alias(NULL, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_detach(NULL, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_alias(a, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  tensor_release(d);
  tensor_release(a);
}

static void test_channels_last(void) {
  /* a contiguous NHWC [2,4,5,3] permuted to NCHW is channels-last contiguous */
  int64_t nhwc[4] = {2, 4, 5, 3}, perm[4] = {0, 3, 1, 2}, s[4] = {2, 3, 4, 5};
  int64_t st[4] = {60, 1, 15, 3};
  tensor_t *t = arange_as(120, nhwc, 4), *v = NULL, *w = NULL;
  CHECK_OK(tensor_permute(t, perm, 4, &v));
  CHECK(geom_is(v, 4, s, st, 0));
  CHECK(tensor_is_contiguous(v, TENSOR_CHANNELS_LAST) && !tensor_is_contiguous(v, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(tensor_suggest_memory_format(v) == TENSOR_CHANNELS_LAST);
  /* unsqueeze makes it 5-D: no longer channels-last (4-D only) */
  CHECK_OK(tensor_unsqueeze(v, 0, &w));
  CHECK(!tensor_is_contiguous(w, TENSOR_CHANNELS_LAST));
  tensor_release(w);
  tensor_release(v);
  tensor_release(t);
}

/* Transpose, slice, narrow, select, permute, unsqueeze, view and expand write their layout
 * straight into the new tensor and check it there: a layout past the (shrunk) storage is
 * refused with setStorage's message and leaves nothing behind (a 6- to 8-dim layout's heap
 * block freed: valgrind), `*out` untouched; within it, the views are right, and view's own
 * refusals after its fill leave nothing either. 4 dims (inline layouts) and 7 (heap). */
static void test_views_of_a_shrunk_storage(void) {
  const int64_t sizes4[4] = {2, 3, 4, 5}, sizes7[7] = {2, 2, 2, 2, 2, 2, 3};
  for (int k = 0; k < 2; k++) {
    int64_t nd = k == 0 ? 4 : 7;
    tensor_t *t = NULL, *v = NULL, *out = SENTINEL;
    CHECK_OK(tensor_zeros(k == 0 ? sizes4 : sizes7, nd, TENSOR_FLOAT32, &t));
    storage_t *s = tensor_storage(t);
    size_t full = storage_nbytes(s);
    CHECK_OK(storage_resize(s, 8));
    CHECK_STATUS(tensor_transpose(t, 0, -1, &out), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_transpose: setStorage:");
    CHECK_ERROR_HAS("out of bounds for storage of size 8");
    CHECK_STATUS(tensor_slice(t, -1, 1, INT64_MAX, 2, &out), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_slice: setStorage:");
    CHECK_STATUS(tensor_narrow(t, 0, 1, 1, &out), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_narrow: setStorage:");
    CHECK_STATUS(tensor_select(t, 1, 1, &out), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_select: setStorage:");
    {
      const int64_t rev[7] = {6, 5, 4, 3, 2, 1, 0};
      CHECK_STATUS(tensor_permute(t, rev + 7 - nd, nd, &out), TENSOR_ERR_OUT_OF_BOUNDS);
      CHECK_ERROR_HAS("tensor_permute: setStorage:");
    }
    CHECK_STATUS(tensor_unsqueeze(t, 2, &out), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_unsqueeze: setStorage:");
    {
      const int64_t flat[1] = {-1};
      CHECK_STATUS(tensor_view(t, flat, 1, &out), TENSOR_ERR_OUT_OF_BOUNDS);
      CHECK_ERROR_HAS("tensor_view: setStorage:");
      CHECK_STATUS(tensor_expand(t, tensor_sizes(t), nd, &out), TENSOR_ERR_OUT_OF_BOUNDS);
      CHECK_ERROR_HAS("tensor_expand: setStorage:");
    }
    CHECK(out == SENTINEL);
    CHECK_OK(storage_resize(s, full));
    {
      const int64_t *n = tensor_sizes(t), *st = tensor_strides(t);
      int64_t tn[7], tst[7], sn[6], sst[6];
      for (int64_t d = 0; d < nd; d++) {
        int64_t j = d == 0 ? nd - 1 : d == nd - 1 ? 0 : d;
        tn[d] = n[j];
        tst[d] = st[j];
        if (d != 1) {
          sn[d - (d > 1)] = n[d];
          sst[d - (d > 1)] = st[d];
        }
      }
      CHECK_OK(tensor_transpose(t, 0, -1, &v));
      CHECK(geom_is(v, nd, tn, tst, 0) && is_view_of(v, t));
      tensor_release(v);
      CHECK_OK(tensor_select(t, 1, 1, &v));
      CHECK(geom_is(v, nd - 1, sn, sst, st[1]) && is_view_of(v, t));
      tensor_release(v);
    }
    {
      /* view's fill refuses after writing into the new box: a size list whose product
       * is not numel (SHAPE), and a shape the transposed strides cannot express */
      int64_t bad[7], back[7];
      tensor_t *tr = NULL;
      for (int64_t d = 0; d < nd; d++) bad[d] = back[d] = tensor_sizes(t)[d];
      bad[nd - 1] += 1;
      CHECK_STATUS(tensor_view(t, bad, nd, &out), TENSOR_ERR_SHAPE);
      CHECK_ERROR_HAS("tensor_view: shape '[");
      CHECK_OK(tensor_transpose(t, 0, -1, &tr));
      CHECK_STATUS(tensor_view(tr, back, nd, &out), TENSOR_ERR_NOT_VIEWABLE);
      CHECK_ERROR_HAS("tensor_view: view size is not compatible");
      CHECK(out == SENTINEL);
      tensor_release(tr);
    }
    tensor_release(t);
  }
}

int main(void) {
  test_view();
  test_view_dtype();
  test_as_strided();
  test_transpose_permute_movedim();
  test_slice_narrow_select();
  test_views_of_a_shrunk_storage();
  test_squeeze_unsqueeze_expand();
  test_unflatten_diagonal_unfold();
  test_alias_detach_versions();
  test_channels_last();
  return harness_finish("c_views");
}
