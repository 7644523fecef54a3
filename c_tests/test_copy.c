/* Data movement through the C API: empty_like, reshape, flatten, contiguous, clone,
 * to_dtype, repeat, copy_, fill_f64/i64 and equal, with their error statuses. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

static double get2(const tensor_t *t, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  double v = NAN;
  tensor_get_f64(t, idx, 2, &v);
  return v;
}

static double get1(const tensor_t *t, int64_t i) {
  double v = NAN;
  tensor_get_f64(t, &i, 1, &v);
  return v;
}

/* arange(n) in dtype, viewed as sizes. */
static tensor_t *arange_view(int64_t n, tensor_dtype_t d, const int64_t *sizes, int64_t ndim) {
  tensor_t *a = NULL, *v = NULL;
  if (tensor_arange(n, d, &a) != TENSOR_OK) return NULL;
  if (tensor_reshape(a, sizes, ndim, &v) != TENSOR_OK) v = NULL;
  tensor_release(a);
  return v;
}

/* A [rows, cols] transposed view of a contiguous [cols, rows] arange. */
static tensor_t *transposed(int64_t rows, int64_t cols, tensor_dtype_t d) {
  tensor_t *a = NULL, *t = NULL;
  int64_t sizes[2] = {rows, cols}, strides[2] = {1, rows};
  if (tensor_arange(rows * cols, d, &a) != TENSOR_OK) return NULL;
  if (tensor_from_storage(tensor_storage(a), 0, sizes, strides, 2, d, &t) != TENSOR_OK) t = NULL;
  tensor_release(a);
  return t;
}

/* clone(PRESERVE) of a non-overlapping and dense tensor that starts inside its storage and
 * is not contiguous: the copy has the same strides at offset 0, a storage of exactly its
 * elements, and the same values (the layout is copied, not validated again). */
static void test_clone_dense_offset(void) {
  int64_t s3[3] = {2, 3, 4}, s4[4] = {2, 1, 3, 4};
  tensor_t *t = arange_view(24, TENSOR_FLOAT32, s3, 3), *sel = NULL, *tr = NULL, *c = NULL;
  tensor_t *u = arange_view(24, TENSOR_INT16, s4, 4), *utr = NULL;
  bool eq = false;
  CHECK(t != NULL && u != NULL);
  CHECK_OK(tensor_select(t, 0, 1, &sel)); /* [3, 4] at offset 12 */
  CHECK_OK(tensor_transpose(sel, 0, 1, &tr)); /* [4, 3], strides (1, 4), offset 12 */
  CHECK(tensor_storage_offset(tr) == 12);
  CHECK_OK(tensor_clone(tr, TENSOR_PRESERVE_FORMAT, &c));
  CHECK(tensor_storage_offset(c) == 0);
  CHECK(tensor_ndim(c) == 2 && tensor_sizes(c)[0] == 4 && tensor_sizes(c)[1] == 3);
  CHECK(tensor_strides(c)[0] == 1 && tensor_strides(c)[1] == 4);
  CHECK(storage_nbytes(tensor_storage(c)) == 12 * sizeof(float));
  /* memory order kept: item 1 is element (1, 0) = 13, item 4 element (0, 1) = 16 */
  CHECK(((const float *)tensor_data_ptr(c))[1] == 13.0f);
  CHECK(((const float *)tensor_data_ptr(c))[4] == 16.0f);
  CHECK_OK(tensor_equal(c, tr, &eq));
  CHECK(eq);
  tensor_release(c);
  /* a size-1 dim (any stride) and a 2-byte dtype: 24 items, 48 bytes */
  CHECK_OK(tensor_transpose(u, 0, 3, &utr));
  CHECK_OK(tensor_clone(utr, TENSOR_PRESERVE_FORMAT, &c));
  CHECK(storage_nbytes(tensor_storage(c)) == 24 * 2);
  CHECK(tensor_strides(c)[0] == 1 && tensor_strides(c)[2] == 4 && tensor_strides(c)[3] == 12);
  CHECK_OK(tensor_equal(c, utr, &eq));
  CHECK(eq);
  tensor_release(c);
  tensor_release(utr);
  tensor_release(tr);
  tensor_release(sel);
  tensor_release(u);
  tensor_release(t);
}

static void test_contiguous_and_clone(void) {
  int64_t s4[4] = {2, 3, 4, 5};
  tensor_t *t = arange_view(120, TENSOR_FLOAT32, s4, 4), *c = NULL, *cl = NULL, *back = NULL;
  bool eq = false;
  CHECK(t != NULL);
  /* already contiguous: the same pointer, one more reference */
  CHECK_OK(tensor_contiguous(t, TENSOR_CONTIGUOUS_FORMAT, &c));
  CHECK(c == t);
  CHECK(tensor_use_count(t) == 2);
  tensor_release(c);
  CHECK_OK(tensor_contiguous(t, TENSOR_CHANNELS_LAST, &cl));
  CHECK(cl != t);
  CHECK(tensor_strides(cl)[0] == 60 && tensor_strides(cl)[1] == 1 && tensor_strides(cl)[2] == 15 &&
        tensor_strides(cl)[3] == 3);
  CHECK(tensor_is_contiguous(cl, TENSOR_CHANNELS_LAST));
  CHECK_OK(tensor_equal(cl, t, &eq));
  CHECK(eq);
  CHECK_OK(tensor_contiguous(cl, TENSOR_CONTIGUOUS_FORMAT, &back));
  CHECK(tensor_is_contiguous(back, TENSOR_CONTIGUOUS_FORMAT));
  CHECK_OK(tensor_equal(back, t, &eq));
  CHECK(eq);
  tensor_release(back);
  /* clone(PRESERVE) keeps the channels-last strides; a clone is new memory */
  CHECK_OK(tensor_clone(cl, TENSOR_PRESERVE_FORMAT, &c));
  CHECK(tensor_strides(c)[1] == 1 && tensor_strides(c)[3] == 3);
  CHECK(!tensor_shares_storage(c, cl));
  CHECK(tensor_version(c) == 0);
  tensor_release(c);
  CHECK_OK(tensor_clone(t, TENSOR_CHANNELS_LAST, &c));
  CHECK(tensor_is_contiguous(c, TENSOR_CHANNELS_LAST));
  tensor_release(c);
  /* errors */
  c = (tensor_t *)0x1;
  CHECK_STATUS(tensor_contiguous(t, TENSOR_PRESERVE_FORMAT, &c), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("preserve memory format is unsupported by the contiguous operator");
  CHECK(c == (tensor_t *)0x1); /* out untouched on failure */
  CHECK_STATUS(tensor_contiguous(t, TENSOR_CHANNELS_LAST_3D, &c), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_contiguous(t, (tensor_memory_format_t)42, &c), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unknown memory format code 42");
  CHECK_STATUS(tensor_clone(t, (tensor_memory_format_t)-1, &c), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_contiguous(NULL, TENSOR_CONTIGUOUS_FORMAT, &c), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_contiguous(t, TENSOR_CONTIGUOUS_FORMAT, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_clone(NULL, TENSOR_PRESERVE_FORMAT, &c), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_clone(t, TENSOR_PRESERVE_FORMAT, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK(c == (tensor_t *)0x1);
  tensor_release(cl);
  tensor_release(t);

  /* transposed 2-D: contiguous copies with the right values */
  t = transposed(37, 70, TENSOR_FLOAT64);
  CHECK(t != NULL);
  CHECK_OK(tensor_contiguous(t, TENSOR_CONTIGUOUS_FORMAT, &c));
  CHECK(tensor_strides(c)[0] == 70 && tensor_strides(c)[1] == 1);
  CHECK(get2(c, 5, 9) == get2(t, 5, 9) && get2(c, 5, 9) == 5 + 9 * 37);
  CHECK(get2(c, 36, 69) == 36 + 69 * 37);
  tensor_release(c);
  tensor_release(t);
}

static void test_empty_like(void) {
  int64_t s4[4] = {2, 3, 4, 5};
  tensor_t *t = arange_view(120, TENSOR_INT16, s4, 4), *cl = NULL, *e = NULL;
  CHECK_OK(tensor_contiguous(t, TENSOR_CHANNELS_LAST, &cl));
  CHECK_OK(tensor_empty_like(cl, TENSOR_PRESERVE_FORMAT, &e));
  CHECK(tensor_dtype(e) == TENSOR_INT16 && tensor_ndim(e) == 4);
  CHECK(tensor_strides(e)[1] == 1 && tensor_strides(e)[0] == 60);
  tensor_release(e);
  CHECK_OK(tensor_empty_like(cl, TENSOR_CONTIGUOUS_FORMAT, &e));
  CHECK(tensor_is_contiguous(e, TENSOR_CONTIGUOUS_FORMAT));
  tensor_release(e);
  CHECK_OK(tensor_empty_like(t, TENSOR_CHANNELS_LAST, &e));
  CHECK(tensor_is_contiguous(e, TENSOR_CHANNELS_LAST));
  tensor_release(e);
  CHECK_STATUS(tensor_empty_like(t, TENSOR_CHANNELS_LAST_3D, &e), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_empty_like(t, (tensor_memory_format_t)7, &e), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_empty_like(NULL, TENSOR_PRESERVE_FORMAT, &e), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_empty_like(t, TENSOR_PRESERVE_FORMAT, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(cl);
  tensor_release(t);
}

static void test_reshape_flatten(void) {
  int64_t s3[3] = {2, 3, 4}, s2[2] = {6, -1}, bad[2] = {5, 5}, flat[1] = {-1};
  tensor_t *t = arange_view(24, TENSOR_INT32, s3, 3), *r = NULL, *tr = NULL;
  CHECK_OK(tensor_reshape(t, s2, 2, &r));
  CHECK(tensor_shares_storage(r, t) && tensor_sizes(r)[1] == 4);
  tensor_release(r);
  CHECK_STATUS(tensor_reshape(t, bad, 2, &r), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("tensor_reshape");
  CHECK_ERROR_HAS("shape '[5, 5]' is invalid for input of size 24");
  CHECK_STATUS(tensor_reshape(t, NULL, 2, &r), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_reshape(t, s2, -1, &r), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_reshape(NULL, s2, 2, &r), TENSOR_ERR_NULL_POINTER);
  /* not viewable: a copy */
  tr = transposed(4, 6, TENSOR_INT32);
  CHECK_OK(tensor_reshape(tr, flat, 1, &r));
  CHECK(!tensor_shares_storage(r, tr) && tensor_numel(r) == 24);
  CHECK(get1(r, 1) == get2(tr, 0, 1) && get1(r, 7) == get2(tr, 1, 1));
  tensor_release(r);
  CHECK_OK(tensor_flatten(tr, 0, -1, &r));
  CHECK(tensor_ndim(r) == 1 && get1(r, 23) == get2(tr, 3, 5));
  tensor_release(r);
  CHECK_OK(tensor_flatten(t, 1, 2, &r));
  CHECK(tensor_ndim(r) == 2 && tensor_sizes(r)[1] == 12 && tensor_shares_storage(r, t));
  tensor_release(r);
  CHECK_OK(tensor_flatten(t, 1, 1, &r)); /* alias */
  CHECK(r != t && tensor_shares_storage(r, t) && tensor_ndim(r) == 3);
  tensor_release(r);
  CHECK_STATUS(tensor_flatten(t, 2, 1, &r), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("start_dim cannot come after end_dim");
  CHECK_STATUS(tensor_flatten(t, 0, 3, &r), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_STATUS(tensor_flatten(NULL, 0, 1, &r), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_flatten(t, 0, 1, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(tr);
  tensor_release(t);
  /* 0-dim flattens to [1] */
  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT32, 3.0, &t));
  CHECK_OK(tensor_flatten(t, 0, -1, &r));
  CHECK(tensor_ndim(r) == 1 && tensor_sizes(r)[0] == 1 && get1(r, 0) == 3.0);
  tensor_release(r);
  tensor_release(t);
}

static void test_to_dtype(void) {
  int64_t n = 6;
  tensor_t *f = NULL, *i = NULL, *same = NULL, *tr = NULL, *d = NULL;
  double vals[6] = {NAN, INFINITY, -3.9, 3.9, 300.0, -1.0};
  int64_t k, got;
  CHECK_OK(tensor_empty(&n, 1, TENSOR_FLOAT32, &f));
  for (k = 0; k < 6; k++) CHECK_OK(tensor_set_f64(f, &k, 1, vals[k]));
  CHECK_OK(tensor_to_dtype(f, TENSOR_FLOAT32, &same));
  CHECK(same == f);
  tensor_release(same);
  CHECK_OK(tensor_to_dtype(f, TENSOR_INT32, &i));
  CHECK(tensor_dtype(i) == TENSOR_INT32);
  k = 0;
  CHECK_OK(tensor_get_i64(i, &k, 1, &got));
  CHECK(got == 0); /* NaN -> 0 */
  k = 1;
  CHECK_OK(tensor_get_i64(i, &k, 1, &got));
  CHECK(got == INT32_MAX); /* saturates */
  k = 2;
  CHECK_OK(tensor_get_i64(i, &k, 1, &got));
  CHECK(got == -3); /* truncates */
  tensor_release(i);
  CHECK_OK(tensor_to_dtype(f, TENSOR_UINT8, &i));
  k = 4;
  CHECK_OK(tensor_get_i64(i, &k, 1, &got));
  CHECK(got == 255);
  k = 5;
  CHECK_OK(tensor_get_i64(i, &k, 1, &got));
  CHECK(got == 0);
  tensor_release(i);
  CHECK_OK(tensor_to_dtype(f, TENSOR_BFLOAT16, &i));
  CHECK(get1(i, 3) == 3.90625); /* nearest bfloat16 of 3.9f */
  CHECK(isnan(get1(i, 0)));
  tensor_release(i);
  CHECK_STATUS(tensor_to_dtype(f, (tensor_dtype_t)8, &i), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_to_dtype(NULL, TENSOR_INT32, &i), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_to_dtype(f, TENSOR_INT32, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(f);
  /* a transposed input keeps its strides (preserve format) */
  tr = transposed(3, 5, TENSOR_INT64);
  CHECK_OK(tensor_to_dtype(tr, TENSOR_FLOAT16, &d));
  CHECK(tensor_strides(d)[0] == 1 && tensor_strides(d)[1] == 3);
  CHECK(get2(d, 2, 4) == 2 + 4 * 3);
  tensor_release(d);
  tensor_release(tr);
}

static void test_repeat(void) {
  int64_t s2[2] = {2, 3}, reps[3] = {2, 1, 2}, few[1] = {2}, neg[2] = {-1, 2};
  tensor_t *t = arange_view(6, TENSOR_UINT8, s2, 2), *r = NULL;
  int64_t idx[3] = {1, 1, 4};
  double v = 0;
  CHECK_OK(tensor_repeat(t, reps, 3, &r));
  CHECK(tensor_ndim(r) == 3 && tensor_sizes(r)[0] == 2 && tensor_sizes(r)[2] == 6);
  CHECK_OK(tensor_get_f64(r, idx, 3, &v));
  CHECK(v == get2(t, 1, 1));
  tensor_release(r);
  CHECK_STATUS(tensor_repeat(t, few, 1, &r), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  CHECK_STATUS(tensor_repeat(t, neg, 2, &r), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("negative dimension -2");
  CHECK_STATUS(tensor_repeat(t, NULL, 2, &r), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_repeat(NULL, reps, 3, &r), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_repeat(t, reps, 3, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(t);
}

static void free_ctx(void *data, void *ctx) {
  (void)ctx;
  free(data);
}

static void test_copy_and_fill(void) {
  int64_t s2[2] = {2, 3}, three = 3, ten = 10;
  tensor_t *dst = NULL, *row = NULL, *wrong = NULL, *base = NULL, *a = NULL, *b = NULL, *ex = NULL;
  int64_t exp_sizes[2] = {2, 3}, exp_strides[2] = {0, 1};
  tensor_device_t cuda = {2, 0};
  tensor_t *dev = NULL;
  float *blob;
  CHECK_OK(tensor_zeros(s2, 2, TENSOR_FLOAT64, &dst));
  CHECK_OK(tensor_arange(3, TENSOR_INT32, &row));
  CHECK_OK(tensor_copy_(dst, row)); /* broadcast + convert */
  CHECK(get2(dst, 1, 2) == 2.0 && get2(dst, 0, 1) == 1.0);
  CHECK(tensor_version(dst) == 1);
  CHECK_STATUS(tensor_copy_(row, dst), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("output with shape [3] doesn't match the broadcast shape [2, 3]");
  CHECK(tensor_version(row) == 0);
  CHECK_OK(tensor_zeros(&ten, 1, TENSOR_FLOAT64, &wrong));
  CHECK_STATUS(tensor_copy_(dst, wrong), TENSOR_ERR_SHAPE);
  CHECK_STATUS(tensor_copy_(NULL, row), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_(dst, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(wrong);

  /* fill */
  CHECK_OK(tensor_fill_f64(dst, 2.5));
  CHECK(get2(dst, 1, 1) == 2.5 && tensor_version(dst) == 2);
  CHECK_OK(tensor_fill_i64(row, -7));
  CHECK(get1(row, 2) == -7.0 && tensor_version(row) == 1);
  CHECK_OK(tensor_fill_i64(dst, INT64_MAX));
  CHECK(get2(dst, 0, 0) == 9223372036854775807.0);
  CHECK_STATUS(tensor_fill_f64(NULL, 1.0), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_fill_i64(NULL, 1), TENSOR_ERR_NULL_POINTER);

  /* overlapping source and destination: snapshot semantics */
  CHECK_OK(tensor_arange(10, TENSOR_FLOAT32, &base));
  CHECK_OK(tensor_from_storage(tensor_storage(base), 2, &three, NULL, 1, TENSOR_FLOAT32, &a));
  CHECK_OK(tensor_from_storage(tensor_storage(base), 0, &three, NULL, 1, TENSOR_FLOAT32, &b));
  CHECK_OK(tensor_copy_(a, b)); /* base[2:5] = base[0:3] */
  CHECK(get1(base, 2) == 0.0 && get1(base, 3) == 1.0 && get1(base, 4) == 2.0);
  tensor_release(a);
  tensor_release(b);

  /* internal overlap in dst */
  CHECK_OK(tensor_from_storage(tensor_storage(base), 0, exp_sizes, exp_strides, 2, TENSOR_FLOAT32, &ex));
  CHECK_STATUS(tensor_copy_(ex, dst), TENSOR_ERR_OVERLAP);
  CHECK_OK(tensor_fill_f64(ex, 1.0)); /* as PyTorch: fill_ is idempotent, aliasing is fine */
  CHECK(get1(base, 0) == 1.0 && get2(ex, 1, 0) == 1.0);
  CHECK_OK(tensor_copy_(dst, ex)); /* reading an expanded tensor is fine */
  CHECK(get2(dst, 1, 0) == get1(base, 0));
  tensor_release(ex);

  /* read-only destination */
  storage_mark_read_only(tensor_storage(base));
  CHECK_STATUS(tensor_fill_f64(base, 0.0), TENSOR_ERR_READ_ONLY);
  CHECK_STATUS(tensor_copy_(base, base), TENSOR_ERR_READ_ONLY);
  CHECK(get1(base, 0) == 1.0); /* unchanged: still the value the expanded fill wrote */
  tensor_release(base);

  /* device memory: no element access */
  blob = (float *)malloc(3 * sizeof(float));
  CHECK_OK(tensor_from_blob(blob, &three, NULL, 1, TENSOR_FLOAT32, cuda, free_ctx, NULL, &dev));
  CHECK_STATUS(tensor_fill_f64(dev, 0.0), TENSOR_ERR_DEVICE);
  CHECK_STATUS(tensor_copy_(dev, row), TENSOR_ERR_DEVICE);
  CHECK_STATUS(tensor_copy_(row, dev), TENSOR_ERR_DEVICE);
  CHECK_STATUS(tensor_clone(dev, TENSOR_PRESERVE_FORMAT, &a), TENSOR_ERR_DEVICE);
  CHECK_STATUS(tensor_to_dtype(dev, TENSOR_INT8, &a), TENSOR_ERR_DEVICE);
  CHECK_STATUS(tensor_repeat(dev, &three, 1, &a), TENSOR_ERR_DEVICE);
  {
    bool eq = false;
    CHECK_STATUS(tensor_equal(dev, dev, &eq), TENSOR_ERR_DEVICE);
  }
  tensor_release(dev);
  tensor_release(row);
  tensor_release(dst);
}

static void test_equal(void) {
  int64_t two = 2, three = 3;
  tensor_t *a = NULL, *b = NULL, *c = NULL, *u = NULL, *s = NULL;
  bool eq = true;
  CHECK_OK(tensor_arange(3, TENSOR_INT64, &a));
  CHECK_OK(tensor_arange(3, TENSOR_FLOAT32, &b));
  CHECK_OK(tensor_equal(a, b, &eq));
  CHECK(eq); /* promotion: 0,1,2 == 0.,1.,2. */
  CHECK_OK(tensor_full(&two, 1, TENSOR_FLOAT32, 0.0, &c));
  CHECK_OK(tensor_equal(a, c, &eq));
  CHECK(!eq); /* sizes differ */
  tensor_release(c);
  CHECK_OK(tensor_full(&three, 1, TENSOR_FLOAT64, NAN, &c));
  CHECK_OK(tensor_equal(c, c, &eq));
  CHECK(!eq); /* NaN != NaN */
  tensor_release(c);
  CHECK_OK(tensor_zeros(&three, 1, TENSOR_UINT16, &u));
  CHECK_OK(tensor_zeros(&three, 1, TENSOR_INT8, &s));
  eq = true;
  CHECK_STATUS(tensor_equal(u, s, &eq), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("Promotion for uint16, uint32, uint64 types is not supported");
  CHECK(eq); /* out untouched */
  CHECK_STATUS(tensor_equal(NULL, a, &eq), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_equal(a, NULL, &eq), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_equal(a, b, NULL), TENSOR_ERR_NULL_POINTER);
  tensor_release(u);
  tensor_release(s);
  tensor_release(a);
  tensor_release(b);
}

static void test_big_layouts(void) {
  /* NCHW -> NHWC with 3 channels and a blocked transpose, checked at a few points. */
  int64_t s4[4] = {2, 3, 40, 50}, i4[4] = {1, 2, 33, 47};
  tensor_t *t = arange_view(2 * 3 * 40 * 50, TENSOR_FLOAT32, s4, 4), *cl = NULL, *tr = NULL, *c = NULL;
  double v1 = 0, v2 = 0;
  bool eq = false;
  CHECK_OK(tensor_contiguous(t, TENSOR_CHANNELS_LAST, &cl));
  CHECK_OK(tensor_get_f64(cl, i4, 4, &v1));
  CHECK_OK(tensor_get_f64(t, i4, 4, &v2));
  CHECK(v1 == v2 && v1 == 1 * 6000 + 2 * 2000 + 33 * 50 + 47);
  CHECK_OK(tensor_equal(cl, t, &eq));
  CHECK(eq);
  tensor_release(cl);
  tensor_release(t);
  tr = transposed(300, 200, TENSOR_INT16);
  CHECK_OK(tensor_clone(tr, TENSOR_CONTIGUOUS_FORMAT, &c));
  CHECK_OK(tensor_equal(c, tr, &eq));
  CHECK(eq);
  CHECK(get2(c, 299, 199) == (double)(int16_t)(299 + 199 * 300));
  tensor_release(c);
  tensor_release(tr);

  /* 16 MiB outputs: streaming-store transposes and the allocator's reuse of freed big
   * blocks (the second result lands in the block the first one released). */
  tr = transposed(2048, 2048, TENSOR_FLOAT32);
  {
    int round;
    for (round = 0; round < 2; round++) {
      tensor_t *wide = NULL;
      CHECK_OK(tensor_contiguous(tr, TENSOR_CONTIGUOUS_FORMAT, &c));
      CHECK(tensor_is_contiguous(c, TENSOR_CONTIGUOUS_FORMAT));
      CHECK(get2(c, 2047, 1) == 2047 + 1 * 2048 && get2(c, 5, 2000) == 5 + 2000.0 * 2048);
      if (round == 0) { /* a full check once (slow under valgrind) */
        CHECK_OK(tensor_to_dtype(tr, TENSOR_FLOAT64, &wide));
        CHECK_OK(tensor_equal(c, wide, &eq));
        CHECK(eq);
        tensor_release(wide);
      }
      tensor_release(c);
    }
  }
  tensor_release(tr);
}

/* What the internal-overlap check of copy_ and copy_affine_ covers, exactly (PyTorch's
 * has_internal_overlap): a dim of size > 1 with stride 0 is refused; other layouts whose
 * elements share memory (byte strides {4, 4} over float32: elements (0, 1) and (1, 0) are
 * one float) are PyTorch's TOO_HARD and accepted, every element written gets one of the
 * values written to it. */
static void test_internal_overlap_rule(void) {
  float buf[3] = {-1, -1, -1};
  float vals[4] = {10, 11, 12, 13}; /* src (i, j) = 10 + 2i + j */
  int64_t sizes[2] = {2, 2}, diag_bytes[2] = {4, 4}, zero_bytes[2] = {0, 4};
  int64_t zsizes[2] = {2, 3};
  double one = 1.0, zero = 0.0;
  tensor_t *d = NULL, *src = NULL, *ex = NULL, *src3 = NULL;
  int affine;
  CHECK_OK(tensor_from_blob(vals, sizes, NULL, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0}, NULL,
                            NULL, &src));
  CHECK_OK(tensor_from_blob_bytes(buf, sizes, diag_bytes, 2, TENSOR_FLOAT32,
                                  (tensor_device_t){1, 0}, NULL, NULL, &d));
  CHECK(!tensor_is_non_overlapping_and_dense(d));
  for (affine = 0; affine < 2; affine++) {
    buf[0] = buf[1] = buf[2] = -1;
    if (affine)
      CHECK_OK(tensor_copy_affine_(d, src, 0, &one, &zero, 1));
    else
      CHECK_OK(tensor_copy_(d, src));
    CHECK(buf[0] == 10 && buf[2] == 13);
    CHECK(buf[1] == 11 || buf[1] == 12);
  }
  CHECK(tensor_version(d) == 2);
  /* a stride-0 dim of size > 1: refused by both, nothing written, version unchanged */
  CHECK_OK(tensor_from_blob_bytes(buf, zsizes, zero_bytes, 2, TENSOR_FLOAT32,
                                  (tensor_device_t){1, 0}, NULL, NULL, &ex));
  CHECK_OK(tensor_contiguous(ex, TENSOR_CONTIGUOUS_FORMAT, &src3));
  buf[0] = buf[1] = buf[2] = -1;
  CHECK_STATUS(tensor_copy_(ex, src3), TENSOR_ERR_OVERLAP);
  CHECK_ERROR_HAS("more than one element of the written-to tensor");
  CHECK_STATUS(tensor_copy_affine_(ex, src3, 0, &one, &zero, 1), TENSOR_ERR_OVERLAP);
  CHECK(buf[0] == -1 && buf[1] == -1 && buf[2] == -1 && tensor_version(ex) == 0);
  tensor_release(src3);
  tensor_release(ex);
  tensor_release(d);
  tensor_release(src);
}

int main(void) {
  test_contiguous_and_clone();
  test_empty_like();
  test_reshape_flatten();
  test_to_dtype();
  test_clone_dense_offset();
  test_repeat();
  test_copy_and_fill();
  test_equal();
  test_big_layouts();
  test_internal_overlap_rule();
  return harness_finish("c_copy");
}
