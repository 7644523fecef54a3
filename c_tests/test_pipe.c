/* The image pipeline's C entry points: tensor_from_blob_bytes (byte strides, as OpenCV,
 * FFmpeg and NumPy hand them out) and tensor_copy_affine_ (one-pass convert + scale +
 * shift per channel), with every status they document. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int deleted = 0;
static void count_delete(void *data, void *ctx) {
  (void)ctx;
  deleted++;
  free(data);
}

static double at(const tensor_t *t, const int64_t *idx) {
  double v = NAN;
  tensor_get_f64(t, idx, tensor_ndim(t), &v);
  return v;
}

static void test_from_blob_bytes(void) {
  /* A 3x5 float image inside rows of 8 floats (32-byte step, like a padded cv::Mat). */
  float *buf = malloc(3 * 8 * sizeof(float));
  for (int i = 0; i < 24; i++) buf[i] = (float)i;
  int64_t sizes[2] = {3, 5}, bstrides[2] = {32, 4};
  tensor_t *t = NULL;
  deleted = 0;
  CHECK_OK(tensor_from_blob_bytes(buf, sizes, bstrides, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                                  count_delete, NULL, &t));
  CHECK(tensor_data_ptr(t) == buf);
  CHECK(tensor_strides(t)[0] == 8 && tensor_strides(t)[1] == 1);
  int64_t i21[2] = {2, 1};
  CHECK(at(t, i21) == 17.0);
  tensor_release(t);
  CHECK(deleted == 1);

  /* Refusals: no deleter call, the caller keeps the buffer. */
  float *buf2 = malloc(64 * sizeof(float));
  deleted = 0;
  int64_t odd[2] = {30, 4};
  t = NULL;
  CHECK_STATUS(tensor_from_blob_bytes(buf2, sizes, odd, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                                      count_delete, NULL, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("byte stride 30 of dim 0 is not a multiple of the item size 4");
  CHECK(t == NULL);
  int64_t ok[2] = {32, 4};
  CHECK_STATUS(tensor_from_blob_bytes((char *)buf2 + 2, sizes, ok, 2, TENSOR_FLOAT32,
                                      (tensor_device_t){1, 0}, count_delete, NULL, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("not aligned for float");
  int64_t neg[2] = {-32, 4};
  CHECK_STATUS(tensor_from_blob_bytes(buf2, sizes, neg, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                                      count_delete, NULL, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob_bytes(buf2, sizes, ok, 2, 77, (tensor_device_t){1, 0}, count_delete,
                                      NULL, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob_bytes(buf2, NULL, ok, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                                      count_delete, NULL, &t),
               TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_blob_bytes(buf2, sizes, ok, 2, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                                      count_delete, NULL, NULL),
               TENSOR_ERR_NULL_POINTER);
  CHECK(deleted == 0);
  /* uint8 accepts any byte stride and alignment; NULL strides mean contiguous. */
  CHECK_OK(tensor_from_blob_bytes((char *)buf2 + 1, sizes, NULL, 2, TENSOR_UINT8, (tensor_device_t){1, 0},
                                  NULL, NULL, &t));
  CHECK(tensor_strides(t)[0] == 5 && tensor_strides(t)[1] == 1);
  tensor_release(t);
  free(buf2);
}

/* Reference value of the float32 arithmetic: a multiply and an add, each rounded. */
static float ref32(double x, double a, double b) {
  float p = (float)x * (float)a;
  return p + (float)b;
}

static void test_affine_hwc_to_chw(int64_t h, int64_t w) {
  const int64_t c = 3;
  tensor_t *img = NULL, *chw = NULL, *out = NULL;
  int64_t hwc[3] = {h, w, c}, perm[3] = {2, 0, 1}, cs[3] = {c, h, w};
  CHECK_OK(tensor_empty(hwc, 3, TENSOR_UINT8, &img));
  uint8_t *p = tensor_data_ptr(img);
  for (int64_t i = 0; i < h * w * c; i++) p[i] = (uint8_t)(i * 37 + i / 7);
  CHECK_OK(tensor_permute(img, perm, 3, &chw));
  CHECK_OK(tensor_empty(cs, 3, TENSOR_FLOAT32, &out));
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double scale[3], shift[3];
  for (int k = 0; k < 3; k++) {
    scale[k] = 1.0 / (255.0 * stdv[k]);
    shift[k] = -mean[k] / stdv[k];
  }
  uint64_t v0 = tensor_version(out);
  CHECK_OK(tensor_copy_affine_(out, chw, 0, scale, shift, 3));
  CHECK(tensor_version(out) == v0 + 1);
  const float *o = tensor_data_ptr(out);
  int64_t bad = 0;
  for (int64_t k = 0; k < c; k++)
    for (int64_t i = 0; i < h * w; i++) {
      float want = ref32(p[i * c + k], scale[k], shift[k]);
      if (o[k * h * w + i] != want) bad++;
      /* and within one float32 rounding of the plain formula */
      double exact = (p[i * c + k] / 255.0 - mean[k]) / stdv[k];
      if (fabs(o[k * h * w + i] - exact) > 4e-7 * (fabs(exact) + fabs(shift[k]) + 1)) bad++;
    }
  CHECK(bad == 0);
  /* The same with dim -3 and one n == 1 pass (scale/shift shared). */
  double s1 = 2.0, b1 = -1.5;
  CHECK_OK(tensor_copy_affine_(out, chw, -3, &s1, &b1, 1));
  bad = 0;
  for (int64_t k = 0; k < c; k++)
    for (int64_t i = 0; i < h * w; i++)
      if (o[k * h * w + i] != ref32(p[i * c + k], 2.0, -1.5)) bad++;
  CHECK(bad == 0);
  tensor_release(out);
  tensor_release(chw);
  tensor_release(img);
}

static void test_affine_conversions(void) {
  /* float64 source, uint8 / int32 / float64 / bool destinations; broadcast over rows. */
  double vals[4] = {-5.25, 2.7, 130.0, 1e10};
  int64_t n4[1] = {4}, two4[2] = {2, 4};
  tensor_t *src = NULL, *u8 = NULL, *i32 = NULL, *f64 = NULL, *b = NULL;
  CHECK_OK(tensor_from_blob(vals, n4, NULL, 1, TENSOR_FLOAT64, (tensor_device_t){1, 0}, NULL, NULL, &src));
  CHECK_OK(tensor_empty(two4, 2, TENSOR_UINT8, &u8));
  CHECK_OK(tensor_empty(two4, 2, TENSOR_INT32, &i32));
  CHECK_OK(tensor_empty(two4, 2, TENSOR_FLOAT64, &f64));
  CHECK_OK(tensor_empty(two4, 2, TENSOR_BOOL, &b));
  double scale[2] = {2.0, 1.0}, shift[2] = {0.0, 0.1};
  CHECK_OK(tensor_copy_affine_(u8, src, 0, scale, shift, 2));
  CHECK_OK(tensor_copy_affine_(i32, src, 0, scale, shift, 2));
  CHECK_OK(tensor_copy_affine_(f64, src, 0, scale, shift, 2));
  double zs[2] = {0.0, 0.0};
  CHECK_OK(tensor_copy_affine_(b, src, 0, zs, shift, 2));
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < 4; j++) {
      int64_t idx[2] = {r, j};
      double x = vals[j] * scale[r] + shift[r];
      /* float -> integer: truncation toward zero, saturation (copy_'s rule) */
      double sat8 = x < 0 ? 0 : x > 255 ? 255 : trunc(x);
      double sat32 = x < -2147483648.0 ? -2147483648.0 : x > 2147483647.0 ? 2147483647.0 : trunc(x);
      CHECK(at(u8, idx) == sat8);
      CHECK(at(i32, idx) == sat32);
      CHECK(at(f64, idx) == x);
      CHECK(at(b, idx) == (shift[r] != 0.0 ? 1.0 : 0.0));
    }
  tensor_release(b);
  tensor_release(f64);
  tensor_release(i32);
  tensor_release(u8);
  tensor_release(src);
}

static void test_affine_errors(void) {
  int64_t s23[2] = {2, 3}, s3[1] = {3}, s4[1] = {4};
  tensor_t *dst = NULL, *src = NULL, *cplx = NULL, *other = NULL, *expd = NULL, *one = NULL;
  CHECK_OK(tensor_zeros(s23, 2, TENSOR_FLOAT32, &dst));
  CHECK_OK(tensor_arange(3, TENSOR_FLOAT32, &src));
  CHECK_OK(tensor_zeros(s3, 1, TENSOR_COMPLEX64, &cplx));
  CHECK_OK(tensor_zeros(s4, 1, TENSOR_FLOAT32, &other));
  double sc[3] = {1, 2, 3}, sh[3] = {0, 0, 0};
  CHECK_STATUS(tensor_copy_affine_(dst, src, 2, sc, sh, 3), TENSOR_ERR_INDEX);
  CHECK_STATUS(tensor_copy_affine_(dst, src, 0, sc, sh, 3), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("must be 1 or 2");
  CHECK_STATUS(tensor_copy_affine_(dst, src, 1, sc, sh, 0), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_copy_affine_(dst, src, 1, NULL, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_affine_(dst, src, 1, sc, NULL, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_affine_(NULL, src, 1, sc, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_affine_(dst, NULL, 1, sc, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_affine_(dst, cplx, 1, sc, sh, 3), TENSOR_ERR_DTYPE);
  CHECK_STATUS(tensor_copy_affine_(dst, other, 1, sc, sh, 3), TENSOR_ERR_SHAPE);
  /* an expanded destination aliases its elements */
  int64_t s13[2] = {1, 3};
  CHECK_OK(tensor_zeros(s13, 2, TENSOR_FLOAT32, &one));
  CHECK_OK(tensor_expand(one, s23, 2, &expd));
  CHECK_STATUS(tensor_copy_affine_(expd, src, 1, sc, sh, 3), TENSOR_ERR_OVERLAP);
  /* per-column scale: dst[i, j] = src[j] * sc[j] */
  uint64_t v = tensor_version(dst);
  CHECK_OK(tensor_copy_affine_(dst, src, 1, sc, sh, 3));
  CHECK(tensor_version(dst) == v + 1);
  int64_t i12[2] = {1, 2};
  CHECK(at(dst, i12) == 6.0);
  /* in place, src == dst: read as a snapshot */
  double two = 2, onev = 1;
  CHECK_OK(tensor_copy_affine_(dst, dst, 0, &two, &onev, 1));
  CHECK(at(dst, i12) == 13.0);
  /* read-only */
  CHECK_OK(storage_mark_read_only(tensor_storage(dst)));
  CHECK_STATUS(tensor_copy_affine_(dst, src, 1, sc, sh, 3), TENSOR_ERR_READ_ONLY);
  CHECK(tensor_version(dst) == v + 2);
  tensor_release(expd);
  tensor_release(one);
  tensor_release(other);
  tensor_release(cplx);
  tensor_release(src);
  tensor_release(dst);
}

/* tensor_copy_affine_ex: the channel map. BGR (HWC uint8) -> RGB (CHW float32) in one
 * call, BGRA (4 source channels) -> RGB, a broadcast source, NULL map == copy_affine_,
 * and the index checks. */
static void test_affine_ex(int64_t h, int64_t w) {
  tensor_t *img = NULL, *chw = NULL, *out = NULL, *ref = NULL, *bgra = NULL, *bgra_chw = NULL;
  int64_t hwc[3] = {h, w, 3}, hw4[3] = {h, w, 4}, perm[3] = {2, 0, 1}, cs[3] = {3, h, w};
  CHECK_OK(tensor_empty(hwc, 3, TENSOR_UINT8, &img));
  CHECK_OK(tensor_empty(hw4, 3, TENSOR_UINT8, &bgra));
  uint8_t *p = tensor_data_ptr(img), *p4 = tensor_data_ptr(bgra);
  for (int64_t i = 0; i < h * w * 3; i++) p[i] = (uint8_t)(i * 37 + i / 7);
  for (int64_t i = 0; i < h * w * 4; i++) p4[i] = (uint8_t)(i * 11 + i / 5);
  CHECK_OK(tensor_permute(img, perm, 3, &chw));
  CHECK_OK(tensor_permute(bgra, perm, 3, &bgra_chw));
  CHECK_OK(tensor_empty(cs, 3, TENSOR_FLOAT32, &out));
  CHECK_OK(tensor_empty(cs, 3, TENSOR_FLOAT32, &ref));
  const double scale[3] = {0.5, 2.0, -1.0}, shift[3] = {1.0, -3.0, 0.25};
  const int64_t rgb[3] = {2, 1, 0};
  uint64_t v0 = tensor_version(out);
  CHECK_OK(tensor_copy_affine_ex(out, chw, 0, scale, shift, 3, rgb));
  CHECK(tensor_version(out) == v0 + 1);
  const float *o = tensor_data_ptr(out);
  int64_t bad = 0;
  for (int64_t c = 0; c < 3; c++)
    for (int64_t i = 0; i < h * w; i++)
      if (o[c * h * w + i] != ref32(p[i * 3 + (2 - c)], scale[c], shift[c])) bad++;
  CHECK(bad == 0);
  /* BGRA: src's dim has 4 entries, dst's 3; one scale for all (n == 1) */
  const int64_t rgb4[3] = {2, 1, 0};
  CHECK_OK(tensor_copy_affine_ex(out, bgra_chw, -3, scale, shift, 1, rgb4));
  bad = 0;
  for (int64_t c = 0; c < 3; c++)
    for (int64_t i = 0; i < h * w; i++)
      if (o[c * h * w + i] != ref32(p4[i * 4 + (2 - c)], scale[0], shift[0])) bad++;
  CHECK(bad == 0);
  /* NULL map: bit-identical to tensor_copy_affine_ */
  CHECK_OK(tensor_copy_affine_ex(out, chw, 0, scale, shift, 3, NULL));
  CHECK_OK(tensor_copy_affine_(ref, chw, 0, scale, shift, 3));
  CHECK(memcmp(tensor_data_ptr(out), tensor_data_ptr(ref), (size_t)(3 * h * w) * sizeof(float)) == 0);
  /* one source channel ([1, H, W]) read by all three: gray -> RGB */
  tensor_t *gray = NULL;
  int64_t g0[3] = {0, 0, 0};
  CHECK_OK(tensor_narrow(chw, 0, 1, 1, &gray));
  CHECK_OK(tensor_copy_affine_ex(out, gray, 0, scale, shift, 3, g0));
  bad = 0;
  for (int64_t c = 0; c < 3; c++)
    for (int64_t i = 0; i < h * w; i++)
      if (o[c * h * w + i] != ref32(p[i * 3 + 1], scale[c], shift[c])) bad++;
  CHECK(bad == 0);
  /* the checks: each index inside src's dim, named with its value */
  const int64_t past[3] = {0, 1, 3}, neg[3] = {-1, 1, 0}, four[3] = {0, 1, 4};
  v0 = tensor_version(out);
  CHECK_STATUS(tensor_copy_affine_ex(out, chw, 0, scale, shift, 3, past), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("src_index[2] is 3, out of range for size 3");
  CHECK_STATUS(tensor_copy_affine_ex(out, chw, 0, scale, shift, 3, neg), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("src_index[0] is -1");
  CHECK_STATUS(tensor_copy_affine_ex(out, bgra_chw, 0, scale, shift, 3, four), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("out of range for size 4");
  CHECK_STATUS(tensor_copy_affine_ex(out, gray, 0, scale, shift, 3, rgb), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("src_index[0] is 2, out of range for size 1");
  CHECK_ERROR_HAS("tensor_copy_affine_ex");
  /* without a map, a 4-channel src does not broadcast to 3 */
  CHECK_STATUS(tensor_copy_affine_ex(out, bgra_chw, 0, scale, shift, 3, NULL), TENSOR_ERR_SHAPE);
  /* the other dims still follow the broadcast rule */
  tensor_t *wide = NULL;
  int64_t cs2[3] = {3, h, w + 1};
  CHECK_OK(tensor_empty(cs2, 3, TENSOR_FLOAT32, &wide));
  if (w > 1) /* (a width of 1 broadcasts) */
    CHECK_STATUS(tensor_copy_affine_ex(wide, chw, 0, scale, shift, 3, rgb), TENSOR_ERR_SHAPE);
  CHECK(tensor_version(out) == v0);
  tensor_release(wide);
  tensor_release(gray);
  tensor_release(ref);
  tensor_release(out);
  tensor_release(bgra_chw);
  tensor_release(bgra);
  tensor_release(chw);
  tensor_release(img);
}

int main(void) {
  test_from_blob_bytes();
  test_affine_ex(1, 1);
  test_affine_ex(5, 7);
  test_affine_ex(300, 301); /* several 128 KiB blocks per channel */
  test_affine_hwc_to_chw(1, 1);
  test_affine_hwc_to_chw(5, 7);
  test_affine_hwc_to_chw(37, 53);
  test_affine_hwc_to_chw(64, 96);
  test_affine_hwc_to_chw(700, 100); /* several 128 KiB blocks per channel */
  test_affine_conversions();
  test_affine_errors();
  return harness_finish("test_pipe");
}
