/* Wrapping the planes of an FFmpeg AVFrame without copying, and converting the frame to a
 * normalized RGB CHW tensor in one pass (tensor_copy_yuv_affine_).
 *
 * A decoder hands you a YUV420P AVFrame whose rows are padded: linesize[p] (BYTES from
 * one row to the next) is larger than the visible width. Each plane becomes a uint8
 * [height, width] tensor through tensor_from_blob_bytes, which takes those byte strides
 * as they are. Each tensor owns one new reference on the frame's buffers (av_frame_clone)
 * as its deleter context, and the deleter av_frame_free()s it: the decoder may reuse or
 * free its own frame at once, and the pixels live exactly as long as the tensors.
 *
 * Build and run: cargo test --test c_api examples_run   (or by hand:
 *   cc -std=c99 -Iinclude examples_c/ffmpeg_planes.c -Ltarget/debug -ltensor -lavutil)
 */
// c_api-pkg: libavutil
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor.h"

#define TRY(call)                                                                            \
  do {                                                                                       \
    tensor_status_t st_ = (call);                                                            \
    if (st_ != TENSOR_OK) {                                                                  \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tensor_status_string(st_), tensor_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

static int frees = 0;

/* The deleter: drops the tensor's reference on the frame's buffers. */
static void free_frame_ref(void *data, void *ctx) {
  AVFrame *ref = ctx;
  (void)data;
  av_frame_free(&ref);
  frees++;
}

/* A tensor over plane p of `frame` (rows x cols visible bytes, linesize apart). */
static tensor_t *wrap_plane(const AVFrame *frame, int p, int64_t rows, int64_t cols) {
  AVFrame *ref = av_frame_clone(frame); /* +1 on the plane buffers */
  int64_t sizes[2] = {rows, cols};
  int64_t byte_strides[2] = {frame->linesize[p], 1};
  tensor_t *t = NULL;
  const tensor_device_t cpu = {1, 0};
  EXPECT(ref != NULL);
  TRY(tensor_from_blob_bytes(ref->data[p], sizes, byte_strides, 2, TENSOR_UINT8, cpu, free_frame_ref, ref, &t));
  return t;
}

int main(void) {
  const int W = 100, H = 60; /* odd sizes: linesize gets padded to the alignment */
  /* What a decoder gives you (here filled by hand). */
  AVFrame *frame = av_frame_alloc();
  EXPECT(frame != NULL);
  frame->format = AV_PIX_FMT_YUV420P;
  frame->width = W;
  frame->height = H;
  EXPECT(av_frame_get_buffer(frame, 64) == 0);
  for (int p = 0; p < 3; p++) {
    int rows = p ? H / 2 : H, cols = p ? W / 2 : W;
    for (int y = 0; y < rows; y++)
      for (int x = 0; x < cols; x++) frame->data[p][y * frame->linesize[p] + x] = (uint8_t)(p * 50 + x + y);
  }
  printf("YUV420P %dx%d: linesize %d/%d/%d bytes (visible widths %d/%d/%d)\n", W, H, frame->linesize[0],
         frame->linesize[1], frame->linesize[2], W, W / 2, W / 2);

  const int luma_linesize = frame->linesize[0];
  tensor_t *y = wrap_plane(frame, 0, H, W);
  tensor_t *u = wrap_plane(frame, 1, H / 2, W / 2);
  tensor_t *v = wrap_plane(frame, 2, H / 2, W / 2);
  av_frame_free(&frame); /* the decoder's own reference: the tensors keep the pixels */

  EXPECT(tensor_strides(y)[0] == luma_linesize && tensor_strides(y)[1] == 1); /* uint8: bytes == elements */
  int64_t idx[2] = {10, 20};
  int64_t val = 0;
  TRY(tensor_get_i64(u, idx, 2, &val));
  EXPECT(val == 50 + 20 + 10);
  char text[512];
  tensor_format(v, text, sizeof text);
  printf("V plane (a view over padded rows, strides [%lld, 1]):\n%.200s...\n", (long long)tensor_strides(v)[0], text);

  /* Luma to float32 in [0, 1] in one pass (the padding is skipped by the strides). */
  int64_t hw[2] = {H, W};
  tensor_t *luma = NULL;
  TRY(tensor_empty(hw, 2, TENSOR_FLOAT32, &luma));
  double scale = 1.0 / 255.0, shift = 0.0;
  TRY(tensor_copy_affine_(luma, y, 0, &scale, &shift, 1));
  double f = 0;
  int64_t last[2] = {H - 1, W - 1};
  TRY(tensor_get_f64(luma, last, 2, &f));
  EXPECT(f == (double)((float)(H - 1 + W - 1) * (float)scale));
  printf("luma[%d][%d] = %.6f\n", H - 1, W - 1, f);

  /* The whole frame to normalized RGB, CHW float32, in one pass: BT.601 limited range (what
   * an SD decoder signals: frame->colorspace, frame->color_range), chroma replicated over
   * each 2x2 block, then (rgb / 255 - mean) / std per channel. The output is reused: a
   * video loop calls this once per decoded frame. */
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double sc[3], sh[3];
  for (int c = 0; c < 3; c++) sc[c] = 1.0 / (255.0 * stdv[c]), sh[c] = -mean[c] / stdv[c];
  int64_t chw[3] = {3, H, W};
  tensor_t *rgb = NULL;
  TRY(tensor_empty(chw, 3, TENSOR_FLOAT32, &rgb));
  TRY(tensor_copy_yuv_affine_(rgb, y, u, v, TENSOR_YUV_BT601 | TENSOR_YUV_LIMITED, 0, sc, sh, 3));
  /* pixel (40, 60): Y = 100, U = 50 + 30 + 20 = 100, V = 150 (chroma sample (20, 30)) */
  {
    double yy = (100 - 16) * 255.0 / 219, uu = 100 - 128.0, vv = 150 - 128.0, kc = 255.0 / 224;
    double r = yy + 1.402 * kc * vv, b = yy + 1.772 * kc * uu;
    double g = yy - 1.772 * 0.114 / 0.587 * kc * uu - 1.402 * 0.299 / 0.587 * kc * vv;
    double want[3] = {r, g, b};
    for (int c = 0; c < 3; c++) {
      double px = want[c] < 0 ? 0 : want[c] > 255 ? 255 : want[c], got = 0;
      int64_t at[3] = {c, 40, 60};
      TRY(tensor_get_f64(rgb, at, 3, &got));
      EXPECT(fabs(got - (px * sc[c] + sh[c])) < 1e-4);
      if (c == 0) printf("normalized RGB [3, %d, %d]: R at (40, 60) = %.5f (rgb %.3f)\n", H, W, got, px);
    }
  }
  tensor_release(rgb);

  tensor_release(luma);
  tensor_release(y);
  tensor_release(u);
  tensor_release(v);
  EXPECT(frees == 3); /* each plane's deleter ran once; the buffers are gone now */
  printf("ffmpeg_planes: ok (3 planes wrapped zero-copy, 3 frame references freed)\n");
  return 0;
}
