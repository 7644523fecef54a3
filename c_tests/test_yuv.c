/* tensor_copy_yuv_affine_ against a float64 reference of the formula its header documents,
 * for every matrix x range x BGR flag x dst layout x output dtype x I420 / NV12, at odd and
 * even sizes, with padded line sizes (tensor_from_blob_bytes byte strides), for uint8 planes
 * and for 10-bit uint16 planes (low bits: YUV420P10; TENSOR_YUV_MSB: P010); and its error
 * cases, snapshot-on-overlap and version rules. */
// c_api-libs: -lm
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const tensor_device_t CPU = {1, 0};

/* ---- the reference: the header's formula in float64 ---- */
static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* rgb[3] in 0..255 of one pixel. */
static void ref_rgb(int color, double Y, double U, double V, double rgb[3]) {
  double kr, kb;
  switch (color & 0xf) {
    case TENSOR_YUV_BT601: kr = 0.299, kb = 0.114; break;
    case TENSOR_YUV_BT709: kr = 0.2126, kb = 0.0722; break;
    default: kr = 0.2627, kb = 0.0593; break;
  }
  int lim = (color & TENSOR_YUV_LIMITED) != 0;
  double kg = 1 - kr - kb, kc = lim ? 255.0 / 224 : 1.0;
  double yp = (Y - (lim ? 16.0 : 0.0)) * (lim ? 255.0 / 219 : 1.0), u = U - 128.0, v = V - 128.0;
  rgb[0] = clampd(yp + 2 * (1 - kr) * kc * v, 0, 255);
  rgb[1] = clampd(yp - 2 * (1 - kb) * kb / kg * kc * u - 2 * (1 - kr) * kr / kg * kc * v, 0, 255);
  rgb[2] = clampd(yp + 2 * (1 - kb) * kc * u, 0, 255);
}

static float f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (float)((h & 0x8000) ? -v : v);
}
static float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Element e of a tensor as double. */
static double value(const tensor_t *t, int64_t e) {
  const char *p = (const char *)tensor_data_ptr(t);
  switch (tensor_dtype(t)) {
    case TENSOR_FLOAT32: { float f; memcpy(&f, p + 4 * e, 4); return f; }
    case TENSOR_FLOAT16: { uint16_t h; memcpy(&h, p + 2 * e, 2); return f16_to_f32(h); }
    case TENSOR_BFLOAT16: { uint16_t h; memcpy(&h, p + 2 * e, 2); return bf16_to_f32(h); }
    default: return ((const uint8_t *)p)[e];
  }
}

static uint32_t rng = 12345;
static uint8_t rnd8(void) {
  rng = rng * 1103515245u + 12345u;
  return (uint8_t)(rng >> 16);
}

/* The planes under test: 0 uint8; uint16 with 10-bit samples, 1 in the low bits
 * (YUV420P10), 2 in the high bits (P010, TENSOR_YUV_MSB). */
static int wide = 0;
/* Sample e of a plane's buffer on the 8-bit scale, as the header defines it. */
static double sample(const void *buf, int64_t e) {
  if (wide == 0) return ((const uint8_t *)buf)[e];
  uint16_t s;
  memcpy(&s, (const char *)buf + 2 * e, 2);
  return wide == 1 ? s / 4.0 : s / 256.0;
}

/* A w x h plane with `pad` extra elements per row, filled at random; *buf owns the bytes
 * (freed by the caller). */
static tensor_t *plane(int64_t rows, int64_t cols, int64_t inner, int64_t pad, uint8_t **buf) {
  if (wide) {
    int64_t line = cols * inner + pad;
    size_t items = (size_t)(rows * line) + 1;
    uint16_t *b = malloc(2 * items);
    for (size_t i = 0; i < items; i++) {
      uint16_t x = (uint16_t)((rnd8() << 2 | (rnd8() & 3)) & 0x3ff);
      if (rows > 2 && (int64_t)i < cols * inner && i % 3 != 2) x = i % 3 == 0 ? 0 : 1023;
      b[i] = wide == 1 ? x : (uint16_t)(x << 6);
    }
    *buf = (uint8_t *)b;
    int64_t sizes[3] = {rows, cols, inner}, bs[3] = {2 * line, 2 * inner, 2};
    tensor_t *t = NULL;
    CHECK_OK(tensor_from_blob_bytes(b, sizes, bs, inner > 1 ? 3 : 2, TENSOR_UINT16, CPU, NULL, NULL, &t));
    return t;
  }
  int64_t line = cols * inner + pad;
  size_t bytes = (size_t)(rows * line) + 1;
  *buf = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) (*buf)[i] = rnd8();
  /* sometimes all extremes, to hit the clamps */
  if (rows > 2)
    for (int64_t c = 0; c < cols * inner; c++) (*buf)[c] = (c % 3 == 0) ? 0 : (c % 3 == 1) ? 255 : (*buf)[c];
  int64_t sizes[3] = {rows, cols, inner}, bs[3] = {line, inner, 1};
  tensor_t *t = NULL;
  CHECK_OK(tensor_from_blob_bytes(*buf, sizes, bs, inner > 1 ? 3 : 2, TENSOR_UINT8, CPU, NULL, NULL, &t));
  return t;
}

/* The dst layouts under test. */
enum { CHW, HWC, BCHW, BHWC, CHW_PADDED, NLAYOUTS };
static const char *layout_name[] = {"CHW", "HWC", "1CHW", "1HWC", "CHW padded"};

/* A dst of `layout` for h x w; *cdim its channel dim; *base the tensor owning the memory. */
static tensor_t *make_dst(int layout, int64_t h, int64_t w, tensor_dtype_t dt, int64_t *cdim, tensor_t **base) {
  tensor_t *t = NULL;
  int64_t s[4];
  switch (layout) {
    case CHW: s[0] = 3, s[1] = h, s[2] = w, *cdim = 0; CHECK_OK(tensor_empty(s, 3, dt, &t)); break;
    case HWC: s[0] = h, s[1] = w, s[2] = 3, *cdim = -1; CHECK_OK(tensor_empty(s, 3, dt, &t)); break;
    case BCHW: s[0] = 1, s[1] = 3, s[2] = h, s[3] = w, *cdim = 1; CHECK_OK(tensor_empty(s, 4, dt, &t)); break;
    case BHWC: s[0] = 1, s[1] = h, s[2] = w, s[3] = 3, *cdim = 3; CHECK_OK(tensor_empty(s, 4, dt, &t)); break;
    default: {
      /* channels 1..3 of [5, h + 1, w + 3], rows 1.., cols 2..: every stride padded */
      tensor_t *a = NULL, *b = NULL, *c = NULL;
      s[0] = 5, s[1] = h + 1, s[2] = w + 3;
      CHECK_OK(tensor_zeros(s, 3, dt, base));
      CHECK_OK(tensor_narrow(*base, 0, 1, 3, &a));
      CHECK_OK(tensor_narrow(a, 1, 1, h, &b));
      CHECK_OK(tensor_narrow(b, 2, 2, w, &c));
      tensor_release(a);
      tensor_release(b);
      *cdim = -3;
      return c;
    }
  }
  *base = NULL;
  return t;
}

static double worst_f32 = 0, worst_u8 = 0, worst_half = 0;
static int64_t combos = 0;

/* One conversion checked against the reference, element by element. */
static void check_one(int64_t h, int64_t w, int nv12, int color, int layout, tensor_dtype_t dt, int64_t n) {
  int64_t hc = (h + 1) / 2, wc = (w + 1) / 2;
  uint8_t *by, *bu, *bv = NULL;
  tensor_t *y = plane(h, w, 1, 13, &by), *u = NULL, *v = NULL;
  if (nv12) {
    u = plane(hc, wc, 2, 7, &bu);
  } else {
    u = plane(hc, wc, 1, 5, &bu);
    v = plane(hc, wc, 1, 0, &bv);
  }
  int64_t cdim;
  tensor_t *base = NULL, *dst = make_dst(layout, h, w, dt, &cdim, &base);
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double scale[3], shift[3];
  for (int c = 0; c < 3; c++) {
    scale[c] = dt == TENSOR_UINT8 ? (n == 1 ? 1.0 : 0.5 + 0.25 * c) : 1.0 / (255.0 * stdv[c]);
    shift[c] = dt == TENSOR_UINT8 ? (n == 1 ? 0.0 : 10.0 * c - 5.0) : -mean[c] / stdv[c];
  }
  uint64_t v0 = tensor_version(dst);
  tensor_status_t st = tensor_copy_yuv_affine_(dst, y, u, v, color, cdim, scale, shift, n);
  CHECK(st == TENSOR_OK);
  if (st != TENSOR_OK) fprintf(stderr, "  %s\n", tensor_last_error());
  CHECK(tensor_version(dst) == v0 + 1);
  /* element (c, i, j) of dst in elements: the channel dim and the two others in order */
  int64_t nd = tensor_ndim(dst), cd = cdim < 0 ? cdim + nd : cdim;
  const int64_t *ds = tensor_strides(dst);
  int64_t sd[2], k = 0;
  for (int64_t d = nd - 3; d < nd; d++)
    if (d != cd) sd[k++] = ds[d];
  const uint8_t *yb = tensor_data_ptr(y), *ub = tensor_data_ptr(u), *vb = v ? tensor_data_ptr(v) : NULL;
  const int64_t *ys = tensor_strides(y), *us = tensor_strides(u), *vs = v ? tensor_strides(v) : NULL;
  int bgr = (color & TENSOR_YUV_BGR) != 0;
  double worst = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < h; i++)
    for (int64_t j = 0; j < w; j++) {
      double Y = sample(yb, i * ys[0] + j * ys[1]), U, V;
      if (nv12) {
        U = sample(ub, (i / 2) * us[0] + (j / 2) * us[1]);
        V = sample(ub, (i / 2) * us[0] + (j / 2) * us[1] + us[2]);
      } else {
        U = sample(ub, (i / 2) * us[0] + (j / 2) * us[1]);
        V = sample(vb, (i / 2) * vs[0] + (j / 2) * vs[1]);
      }
      double rgb[3];
      ref_rgb(color, Y, U, V, rgb);
      for (int c = 0; c < 3; c++) {
        int comp = bgr ? 2 - c : c;
        int p = n == 1 ? 0 : c;
        double want = rgb[comp] * scale[p] + shift[p];
        double got = value(dst, c * ds[cd] + i * sd[0] + j * sd[1]);
        double full = fabs(scale[p]) * 255;
        if (dt == TENSOR_UINT8) {
          want = floor(clampd(want, 0, 255) + 0.5);
          double e = fabs(got - want);
          if (e > worst) worst = e;
          if (e > 1) bad++;
        } else {
          /* relative to the larger of |want| and the channel's full scale |scale|*255 */
          double e = fabs(got - want) / fmax(fabs(want), full);
          double tol = dt == TENSOR_FLOAT32 ? 1e-5 : dt == TENSOR_FLOAT16 ? 1.0 / 2048 + 1e-5 : 1.0 / 256 + 1e-5;
          if (e > worst) worst = e;
          if (e > tol) bad++;
        }
      }
    }
  if (bad) fprintf(stderr, "  %lldx%lld %s color %#x %s dtype %d n %lld: %lld bad, worst %g\n", (long long)h,
                   (long long)w, nv12 ? "NV12" : "I420", color, layout_name[layout], (int)dt, (long long)n,
                   (long long)bad, worst);
  CHECK(bad == 0);
  if (dt == TENSOR_FLOAT32 && worst > worst_f32) worst_f32 = worst;
  if (dt == TENSOR_UINT8 && worst > worst_u8) worst_u8 = worst;
  if ((dt == TENSOR_FLOAT16 || dt == TENSOR_BFLOAT16) && worst > worst_half) worst_half = worst;
  /* the padding around a padded dst stays untouched */
  if (base) {
    int64_t total = tensor_numel(base), inside = 0, nonzero = 0;
    for (int64_t e = 0; e < total; e++) nonzero += value(base, e) != 0;
    for (int64_t e = 0; e < 3 * h * w; e++) inside++;
    CHECK(nonzero <= inside);
    /* channel 0 of base (before the view) is all zeros */
    int64_t zero0 = 1;
    for (int64_t e = 0; e < (h + 1) * (w + 3); e++) zero0 &= value(base, e) == 0;
    CHECK(zero0);
  }
  combos++;
  tensor_release(dst);
  tensor_release(base);
  tensor_release(y);
  tensor_release(u);
  tensor_release(v);
  free(by);
  free(bu);
  free(bv);
}

static void test_reference(void) {
  const int matrices[3] = {TENSOR_YUV_BT601, TENSOR_YUV_BT709, TENSOR_YUV_BT2020};
  const int ranges[2] = {TENSOR_YUV_LIMITED, TENSOR_YUV_FULL};
  const tensor_dtype_t dts[4] = {TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_BFLOAT16, TENSOR_UINT8};
  const int64_t sizes[][2] = {{1, 1}, {5, 7}, {6, 37}, {3, 64}};
  for (int s = 0; s < 4; s++)
    for (int m = 0; m < 3; m++)
      for (int r = 0; r < 2; r++)
        for (int b = 0; b < 2; b++)
          for (int l = 0; l < NLAYOUTS; l++)
            for (int d = 0; d < 4; d++)
              for (int f = 0; f < 2; f++)
                check_one(sizes[s][0], sizes[s][1], f, matrices[m] | ranges[r] | (b ? TENSOR_YUV_BGR : 0), l, dts[d],
                          (l + d) % 2 ? 1 : 3);
  printf("test_yuv: %lld combinations; max error: float32 %.3g (relative), float16/bfloat16 %.3g, uint8 %g\n",
         (long long)combos, worst_f32, worst_half, worst_u8);
}

/* 10-bit uint16 planes, low bits (YUV420P10) and high bits (P010, TENSOR_YUV_MSB): the
 * same reference with the samples read as s / 4 and s / 256. */
static void test_reference_10bit(void) {
  const int matrices[3] = {TENSOR_YUV_BT601, TENSOR_YUV_BT709, TENSOR_YUV_BT2020};
  const int ranges[2] = {TENSOR_YUV_LIMITED, TENSOR_YUV_FULL};
  const tensor_dtype_t dts[4] = {TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_BFLOAT16, TENSOR_UINT8};
  const int64_t sizes[][2] = {{1, 1}, {5, 7}, {6, 37}};
  const int layouts[3] = {CHW, HWC, CHW_PADDED};
  int64_t before = combos;
  worst_f32 = worst_half = worst_u8 = 0;
  for (wide = 1; wide <= 2; wide++)
    for (int s = 0; s < 3; s++)
      for (int m = 0; m < 3; m++)
        for (int r = 0; r < 2; r++)
          for (int l = 0; l < 3; l++)
            for (int d = 0; d < 4; d++)
              for (int f = 0; f < 2; f++)
                check_one(sizes[s][0], sizes[s][1], f,
                          matrices[m] | ranges[r] | (wide == 2 ? TENSOR_YUV_MSB : 0) | ((s + l) % 2 ? TENSOR_YUV_BGR : 0),
                          layouts[l], dts[d], (l + d) % 2 ? 1 : 3);
  wide = 0;
  printf("test_yuv 10-bit: %lld combinations; max error: float32 %.3g (relative), float16/bfloat16 %.3g, uint8 %g\n",
         (long long)(combos - before), worst_f32, worst_half, worst_u8);
}

/* The 16-bit plane rules: MSB with uint8 planes, mixed plane dtypes, other integer types. */
static void test_errors_10bit(void) {
  uint16_t y16[4] = {64, 940, 512, 100}, c16[1] = {512};
  uint8_t y8[4] = {16, 235, 128, 50}, c8[1] = {128};
  int32_t y32[4] = {0, 0, 0, 0};
  int64_t ys[2] = {2, 2}, cs[2] = {1, 1}, ds[3] = {3, 2, 2};
  tensor_t *Y16 = NULL, *C16 = NULL, *Y8 = NULL, *C8 = NULL, *Y32 = NULL, *dst = NULL;
  CHECK_OK(tensor_from_blob(y16, ys, NULL, 2, TENSOR_UINT16, CPU, NULL, NULL, &Y16));
  CHECK_OK(tensor_from_blob(c16, cs, NULL, 2, TENSOR_UINT16, CPU, NULL, NULL, &C16));
  CHECK_OK(tensor_from_blob(y8, ys, NULL, 2, TENSOR_UINT8, CPU, NULL, NULL, &Y8));
  CHECK_OK(tensor_from_blob(c8, cs, NULL, 2, TENSOR_UINT8, CPU, NULL, NULL, &C8));
  CHECK_OK(tensor_from_blob(y32, ys, NULL, 2, TENSOR_INT32, CPU, NULL, NULL, &Y32));
  CHECK_OK(tensor_empty(ds, 3, TENSOR_FLOAT32, &dst));
  const double one = 1, zero = 0;
  const int c = TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED;
  CHECK(tensor_copy_yuv_affine_(dst, Y8, C8, C8, c | TENSOR_YUV_MSB, 0, &one, &zero, 1) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tensor_last_error(), "TENSOR_YUV_MSB") != NULL);
  CHECK(tensor_copy_yuv_affine_(dst, Y16, C8, C8, c, 0, &one, &zero, 1) == TENSOR_ERR_DTYPE);
  CHECK(tensor_copy_yuv_affine_(dst, Y8, C16, C8, c, 0, &one, &zero, 1) == TENSOR_ERR_DTYPE);
  CHECK(tensor_copy_yuv_affine_(dst, Y32, C8, C8, c, 0, &one, &zero, 1) == TENSOR_ERR_DTYPE);
  /* 10-bit limited range: 64 is black, 940 white (chroma neutral at 512) */
  CHECK_OK(tensor_copy_yuv_affine_(dst, Y16, C16, C16, c, 0, &one, &zero, 1));
  const float *o = tensor_data_ptr(dst);
  CHECK(o[0] == 0.0f && fabsf(o[1] - 255.0f) < 1e-3f && o[4] == 0.0f && fabsf(o[5] - 255.0f) < 1e-3f);
  tensor_release(dst);
  tensor_release(Y32);
  tensor_release(C8);
  tensor_release(Y8);
  tensor_release(C16);
  tensor_release(Y16);
}

/* Luma read with a column stride of 2 bytes (every other byte): the generic loop. */
static void test_strided_luma(void) {
  const int64_t h = 4, w = 9, hc = 2, wc = 5;
  uint8_t ybuf[4 * 18], ubuf[10], vbuf[10];
  for (int i = 0; i < 72; i++) ybuf[i] = (uint8_t)(i * 7);
  for (int i = 0; i < 10; i++) ubuf[i] = (uint8_t)(100 + i * 9), vbuf[i] = (uint8_t)(200 - i * 13);
  int64_t ysz[2] = {h, w}, ybs[2] = {18, 2}, csz[2] = {hc, wc}, dsz[3] = {3, h, w};
  tensor_t *y = NULL, *u = NULL, *v = NULL, *dst = NULL;
  CHECK_OK(tensor_from_blob_bytes(ybuf, ysz, ybs, 2, TENSOR_UINT8, CPU, NULL, NULL, &y));
  CHECK_OK(tensor_from_blob(ubuf, csz, NULL, 2, TENSOR_UINT8, CPU, NULL, NULL, &u));
  CHECK_OK(tensor_from_blob(vbuf, csz, NULL, 2, TENSOR_UINT8, CPU, NULL, NULL, &v));
  CHECK_OK(tensor_empty(dsz, 3, TENSOR_FLOAT32, &dst));
  double one = 1, zero = 0;
  int color = TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED;
  CHECK_OK(tensor_copy_yuv_affine_(dst, y, u, v, color, 0, &one, &zero, 1));
  const float *o = tensor_data_ptr(dst);
  int64_t bad = 0;
  for (int64_t i = 0; i < h; i++)
    for (int64_t j = 0; j < w; j++) {
      double rgb[3];
      ref_rgb(color, ybuf[i * 18 + j * 2], ubuf[(i / 2) * wc + j / 2], vbuf[(i / 2) * wc + j / 2], rgb);
      for (int c = 0; c < 3; c++)
        if (fabs(o[c * h * w + i * w + j] - rgb[c]) > 1e-5 * 255) bad++;
    }
  CHECK(bad == 0);
  tensor_release(dst);
  tensor_release(v);
  tensor_release(u);
  tensor_release(y);
}

/* A plane sharing memory with dst is read as if snapshotted: uint8 CHW dst whose bytes
 * hold the luma plane one row before channel 1 (luma row i + 1 is channel 1's row i,
 * written while row i is converted, before row i + 1 is read). */
static void test_overlap_snapshot(void) {
  const int64_t h = 6, w = 10;
  int64_t dsz[3] = {3, h, w}, csz[2] = {h / 2, w / 2};
  tensor_t *dst = NULL, *y = NULL, *y0 = NULL, *ycopy = NULL, *u = NULL, *v = NULL, *want = NULL;
  CHECK_OK(tensor_empty(dsz, 3, TENSOR_UINT8, &dst));
  uint8_t *p = tensor_data_ptr(dst);
  for (int64_t i = 0; i < 3 * h * w; i++) p[i] = (uint8_t)(i * 29 + 3);
  int64_t ysz[2] = {h, w}, yst[2] = {w, 1};
  CHECK_OK(tensor_as_strided(dst, ysz, yst, 2, h * w - w, &y0));
  CHECK_OK(tensor_clone(y0, TENSOR_CONTIGUOUS_FORMAT, &ycopy));
  CHECK_OK(tensor_full(csz, 2, TENSOR_UINT8, 90.0, &u));
  CHECK_OK(tensor_full(csz, 2, TENSOR_UINT8, 170.0, &v));
  CHECK_OK(tensor_empty(dsz, 3, TENSOR_UINT8, &want));
  double one = 1, zero = 0;
  int color = TENSOR_YUV_BT601 | TENSOR_YUV_FULL;
  CHECK_OK(tensor_copy_yuv_affine_(want, ycopy, u, v, color, 0, &one, &zero, 1));
  y = y0;
  CHECK_OK(tensor_copy_yuv_affine_(dst, y, u, v, color, 0, &one, &zero, 1));
  CHECK(memcmp(tensor_data_ptr(dst), tensor_data_ptr(want), (size_t)(3 * h * w)) == 0);
  tensor_release(want);
  tensor_release(v);
  tensor_release(u);
  tensor_release(ycopy);
  tensor_release(y0);
  tensor_release(dst);
}

static void test_errors(void) {
  const int64_t h = 4, w = 6;
  int64_t ysz[2] = {h, w}, csz[2] = {2, 3}, nvsz[3] = {2, 3, 2}, dsz[3] = {3, h, w};
  tensor_t *y = NULL, *u = NULL, *v = NULL, *nv = NULL, *dst = NULL, *tmp = NULL;
  CHECK_OK(tensor_zeros(ysz, 2, TENSOR_UINT8, &y));
  CHECK_OK(tensor_zeros(csz, 2, TENSOR_UINT8, &u));
  CHECK_OK(tensor_zeros(csz, 2, TENSOR_UINT8, &v));
  CHECK_OK(tensor_zeros(nvsz, 3, TENSOR_UINT8, &nv));
  CHECK_OK(tensor_zeros(dsz, 3, TENSOR_FLOAT32, &dst));
  double sc[3] = {1, 1, 1}, sh[3] = {0, 0, 0};
  const int ok = TENSOR_YUV_BT601 | TENSOR_YUV_LIMITED;
  CHECK_OK(tensor_copy_yuv_affine_(dst, y, u, v, ok, 0, sc, sh, 3));
  CHECK_OK(tensor_copy_yuv_affine_(dst, y, nv, NULL, ok, 0, sc, sh, 3));
  uint64_t v0 = tensor_version(dst);
  /* unknown colors */
  const int bad_colors[] = {0, TENSOR_YUV_BT601, TENSOR_YUV_LIMITED, 4 | TENSOR_YUV_FULL,
                            TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED | TENSOR_YUV_FULL, ok | 0x200, -1};
  for (size_t i = 0; i < sizeof bad_colors / sizeof *bad_colors; i++)
    CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, bad_colors[i], 0, sc, sh, 3), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unknown color");
  CHECK_ERROR_HAS("tensor_copy_yuv_affine_");
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 0, sc, sh, 2), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("got 2");
  /* NULLs */
  CHECK_STATUS(tensor_copy_yuv_affine_(NULL, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, NULL, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, NULL, v, ok, 0, sc, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 0, NULL, sh, 3), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 0, sc, NULL, 3), TENSOR_ERR_NULL_POINTER);
  /* plane shapes */
  int64_t y2[2] = {h, w + 2}, c2[2] = {3, 3}, c3[2] = {2, 4};
  CHECK_OK(tensor_zeros(y2, 2, TENSOR_UINT8, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, tmp, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("plane y has sizes [4, 8], expected [4, 6]");
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(c2, 2, TENSOR_UINT8, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, tmp, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, tmp, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  CHECK_ERROR_HAS("plane v has sizes [3, 3], expected [2, 3]");
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(c3, 2, TENSOR_UINT8, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, tmp, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  tensor_release(tmp);
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, NULL, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE); /* NV12 wants [2,3,2] */
  CHECK_ERROR_HAS("NV12");
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, nv, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE); /* I420 wants 2-D */
  /* dst shapes and channel_dim */
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 1, sc, sh, 3), TENSOR_ERR_SHAPE); /* dim 1 has 4 */
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 3, sc, sh, 3), TENSOR_ERR_INDEX);
  int64_t b2[4] = {2, 3, h, w}, d2[2] = {h, w}, d4[3] = {4, h, w};
  CHECK_OK(tensor_zeros(b2, 4, TENSOR_FLOAT32, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 1, sc, sh, 3), TENSOR_ERR_SHAPE); /* batch 2 */
  CHECK_ERROR_HAS("leading batch dim of 1");
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(d2, 2, TENSOR_FLOAT32, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(d4, 3, TENSOR_FLOAT32, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_SHAPE);
  tensor_release(tmp);
  /* dtypes */
  CHECK_OK(tensor_zeros(dsz, 3, TENSOR_INT32, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("got int32");
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(dsz, 3, TENSOR_FLOAT64, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_DTYPE);
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(ysz, 2, TENSOR_FLOAT32, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, tmp, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("plane y must be uint8");
  tensor_release(tmp);
  CHECK_OK(tensor_zeros(csz, 2, TENSOR_UINT16, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, tmp, ok, 0, sc, sh, 3), TENSOR_ERR_DTYPE);
  tensor_release(tmp);
  /* an expanded dst */
  int64_t e1[3] = {3, 1, w};
  tensor_t *one = NULL;
  CHECK_OK(tensor_zeros(e1, 3, TENSOR_FLOAT32, &one));
  CHECK_OK(tensor_expand(one, dsz, 3, &tmp));
  CHECK_STATUS(tensor_copy_yuv_affine_(tmp, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_OVERLAP);
  tensor_release(tmp);
  tensor_release(one);
  CHECK(tensor_version(dst) == v0); /* no failed call bumped it */
  /* read-only */
  CHECK_OK(storage_mark_read_only(tensor_storage(dst)));
  CHECK_STATUS(tensor_copy_yuv_affine_(dst, y, u, v, ok, 0, sc, sh, 3), TENSOR_ERR_READ_ONLY);
  /* empty frames: nothing to do, still one version bump */
  int64_t z[3] = {3, 0, 5}, zy[2] = {0, 5}, zc[2] = {0, 3};
  tensor_t *zd = NULL, *zyt = NULL, *zct = NULL;
  CHECK_OK(tensor_zeros(z, 3, TENSOR_FLOAT32, &zd));
  CHECK_OK(tensor_zeros(zy, 2, TENSOR_UINT8, &zyt));
  CHECK_OK(tensor_zeros(zc, 2, TENSOR_UINT8, &zct));
  uint64_t zv = tensor_version(zd);
  CHECK_OK(tensor_copy_yuv_affine_(zd, zyt, zct, zct, ok, 0, sc, sh, 3));
  CHECK(tensor_version(zd) == zv + 1);
  tensor_release(zct);
  tensor_release(zyt);
  tensor_release(zd);
  tensor_release(dst);
  tensor_release(nv);
  tensor_release(v);
  tensor_release(u);
  tensor_release(y);
}

int main(void) {
  test_reference();
  test_reference_10bit();
  test_errors_10bit();
  test_strided_luma();
  test_overlap_snapshot();
  test_errors();
  return harness_finish("test_yuv");
}
