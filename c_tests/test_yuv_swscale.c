/* tensor_copy_yuv_affine_ against FFmpeg's libswscale: YUV420P and NV12 frames to packed
 * RGB24 with sws_scale (SWS_POINT: nearest-neighbour chroma, the same 2x2 replication) and
 * to a uint8 [H, W, 3] tensor with scale 1, shift 0, for BT.601 / BT.709 / BT.2020 in
 * limited and full range; prints the largest difference and asserts it is at most 2.
 *
 * libswscale is asked for its accurate path (SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT |
 * SWS_BITEXACT); its default table-driven yuv2rgb path is also run and its difference
 * printed (not asserted: its 8-bit tables are off by up to 3 in limited range). Frames
 * have even sizes: for an odd size libswscale's point sampling maps chroma rows/columns by
 * the ratio ceil(n/2)/n, not by i/2 (the 2x2 replication documented here). Limited-range
 * frames hold legal values (Y 16..235, U/V 16..240), as decoders produce: libswscale's
 * accurate path does not clip out-of-range input the way the documented formula does. */
// c_api-pkg: libswscale libavutil
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

static const tensor_device_t CPU = {1, 0};

/* A tensor over plane p of `f` (rows x cols x inner bytes, linesize apart); borrowed: the
 * frame outlives it here. */
static tensor_t *wrap(const AVFrame *f, int p, int64_t rows, int64_t cols, int64_t inner) {
  int64_t sizes[3] = {rows, cols, inner}, bs[3] = {f->linesize[p], inner, 1};
  tensor_t *t = NULL;
  CHECK_OK(tensor_from_blob_bytes(f->data[p], sizes, bs, inner > 1 ? 3 : 2, TENSOR_UINT8, CPU, NULL, NULL, &t));
  return t;
}

static uint32_t rng = 777;
static uint8_t rnd8(void) {
  rng = rng * 1664525u + 1013904223u;
  return (uint8_t)(rng >> 24);
}

/* The largest |ours - swscale| over the frame. */
static int compare(int w, int h, enum AVPixelFormat fmt, int matrix, int full, int flags) {
  AVFrame *f = av_frame_alloc();
  f->format = fmt;
  f->width = w;
  f->height = h;
  CHECK(av_frame_get_buffer(f, 32) == 0);
  int hc = (h + 1) / 2, wc = (w + 1) / 2;
  for (int yy = 0; yy < h; yy++)
    for (int x = 0; x < w; x++) f->data[0][yy * f->linesize[0] + x] = full ? rnd8() : (uint8_t)(16 + rnd8() % 220);
  int planes = fmt == AV_PIX_FMT_NV12 ? 1 : 2, inner = fmt == AV_PIX_FMT_NV12 ? 2 : 1;
  for (int p = 1; p <= planes; p++)
    for (int yy = 0; yy < hc; yy++)
      for (int x = 0; x < wc * inner; x++) f->data[p][yy * f->linesize[p] + x] = full ? rnd8() : (uint8_t)(16 + rnd8() % 225);

  /* swscale: SWS_POINT, the matrix and range set explicitly, RGB output full range */
  struct SwsContext *sws = sws_getContext(w, h, fmt, w, h, AV_PIX_FMT_RGB24, flags, NULL, NULL, NULL);
  CHECK(sws != NULL);
  int cs = matrix == TENSOR_YUV_BT601 ? SWS_CS_ITU601 : matrix == TENSOR_YUV_BT709 ? SWS_CS_ITU709 : SWS_CS_BT2020;
  const int *coefs = sws_getCoefficients(cs);
  CHECK(sws_setColorspaceDetails(sws, coefs, full, coefs, 1, 0, 1 << 16, 1 << 16) >= 0);
  int line = w * 3 + 16;
  /* (libswscale writes up to 8 bytes past a row: slack after the last one) */
  uint8_t *rgb = malloc((size_t)line * (size_t)h + 64);
  uint8_t *dst_planes[4] = {rgb, NULL, NULL, NULL};
  int dst_lines[4] = {line, 0, 0, 0};
  CHECK(sws_scale(sws, (const uint8_t *const *)f->data, f->linesize, 0, h, dst_planes, dst_lines) == h);

  /* ours: uint8 HWC, scale 1, shift 0 */
  tensor_t *y = wrap(f, 0, h, w, 1), *u = wrap(f, 1, hc, wc, inner);
  tensor_t *v = fmt == AV_PIX_FMT_NV12 ? NULL : wrap(f, 2, hc, wc, 1);
  tensor_t *out = NULL;
  int64_t hw3[3] = {h, w, 3};
  CHECK_OK(tensor_empty(hw3, 3, TENSOR_UINT8, &out));
  double one = 1, zero = 0;
  int color = matrix | (full ? TENSOR_YUV_FULL : TENSOR_YUV_LIMITED);
  CHECK_OK(tensor_copy_yuv_affine_(out, y, u, v, color, 2, &one, &zero, 1));
  const uint8_t *o = tensor_data_ptr(out);
  int worst = 0;
  for (int yy = 0; yy < h; yy++)
    for (int x = 0; x < 3 * w; x++) {
      int d = abs((int)o[yy * 3 * w + x] - (int)rgb[yy * line + x]);
      if (d > worst) worst = d;
    }
  tensor_release(out);
  tensor_release(v);
  tensor_release(u);
  tensor_release(y);
  free(rgb);
  sws_freeContext(sws);
  av_frame_free(&f);
  return worst;
}

int main(void) {
  const int matrices[3] = {TENSOR_YUV_BT601, TENSOR_YUV_BT709, TENSOR_YUV_BT2020};
  const char *names[3] = {"BT.601", "BT.709", "BT.2020"};
  const int sizes[2][2] = {{320, 240}, {102, 66}};
  const int accurate = SWS_POINT | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_BITEXACT;
  int overall = 0, fast = 0;
  for (int s = 0; s < 2; s++)
    for (int fmt = 0; fmt < 2; fmt++)
      for (int m = 0; m < 3; m++)
        for (int full = 0; full < 2; full++) {
          enum AVPixelFormat pf = fmt ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P;
          int d = compare(sizes[s][0], sizes[s][1], pf, matrices[m], full, accurate);
          int f = compare(sizes[s][0], sizes[s][1], pf, matrices[m], full, SWS_POINT);
          printf("swscale vs tensor_copy_yuv_affine_ %dx%d %s %s %s: max uint8 difference %d (default path %d)\n",
                 sizes[s][0], sizes[s][1], fmt ? "NV12" : "YUV420P", names[m], full ? "full" : "limited", d, f);
          CHECK(d <= 2);
          if (d > overall) overall = d;
          if (f > fast) fast = f;
        }
  printf("swscale (SWS_POINT, accurate path): max uint8 difference over all frames %d (allowed 2); "
         "default table path %d\n", overall, fast);
  return harness_finish("test_yuv_swscale");
}
