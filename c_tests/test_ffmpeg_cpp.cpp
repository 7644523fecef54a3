// tensor_ffmpeg.hpp: planes() wraps an AVFrame's planes zero-copy and keeps the frame's
// buffers alive (one av_frame_clone, freed with the last plane tensor); to_rgb converts in
// the colour the frame signals; NV12 and YUV420P, refusals for other formats.
// c_api-pkg: libavutil
#include "tensor_ffmpeg.hpp"

#include <cstdio>
#include <cstring>

extern "C" {
#include <libavutil/buffer.h>
}

#include "harness.h"

static tensor_status_t status_of(void (*f)(const AVFrame*), const AVFrame* fr) {
  try {
    f(fr);
  } catch (const tensor::Error& e) {
    return e.status();
  }
  return TENSOR_OK;
}

static AVFrame* frame(AVPixelFormat fmt, int w, int h) {
  AVFrame* f = av_frame_alloc();
  f->format = fmt;
  f->width = w;
  f->height = h;
  CHECK(av_frame_get_buffer(f, 32) == 0);
  for (int p = 0; p < 3 && f->data[p]; p++)
    for (int y = 0; y < (p ? (h + 1) / 2 : h); y++)
      for (int x = 0; x < f->linesize[p]; x++) f->data[p][y * f->linesize[p] + x] = (uint8_t)(p * 70 + 3 * x + y);
  return f;
}

static void test_i420() {
  AVFrame* f = frame(AV_PIX_FMT_YUV420P, 33, 17);
  f->colorspace = AVCOL_SPC_BT709;
  f->color_range = AVCOL_RANGE_MPEG;
  CHECK(tensor::ffmpeg::color_of(f) == (TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED));
  AVBufferRef* buf = av_buffer_ref(f->buf[0]);  // our own probe of the luma buffer's count
  tensor::ffmpeg::Planes p = tensor::ffmpeg::planes(f);
  CHECK(!p.nv12 && p.v.defined());
  CHECK(p.y.size(0) == 17 && p.y.size(1) == 33 && p.y.stride(0) == f->linesize[0]);
  CHECK(p.u.size(0) == 9 && p.u.size(1) == 17 && p.v.stride(0) == f->linesize[2]);
  CHECK(p.y.data_ptr() == f->data[0] && p.v.data_ptr() == f->data[2]);  // no copy
  CHECK(av_buffer_get_ref_count(buf) == 3);  // frame, probe, and one clone for all planes
  // The expected result: the C call over the same planes.
  tensor::Tensor want = tensor::Tensor::empty({3, 17, 33}, tensor::kFloat32);
  want.copy_yuv_affine_(p.y, p.u, p.v, TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED, 0, {0.5, 1, 2}, {0, 1, 2});
  // The decoder drops its reference: the planes keep the pixels.
  tensor::Tensor got = tensor::Tensor::empty({17, 33, 3}, tensor::kFloat32);
  AVFrame* again = av_frame_clone(f);
  av_frame_free(&f);
  tensor::ffmpeg::to_rgb(got, again, -1, {0.5, 1, 2}, {0, 1, 2});
  CHECK(got.permute({2, 0, 1}).equal(want));
  av_frame_free(&again);
  CHECK(av_buffer_get_ref_count(buf) == 2);  // probe and the planes' clone
  p = tensor::ffmpeg::Planes();             // the last tensors die: the clone is freed
  CHECK(av_buffer_get_ref_count(buf) == 1);
  av_buffer_unref(&buf);
}

static void test_nv12() {
  AVFrame* f = frame(AV_PIX_FMT_NV12, 20, 10);
  f->color_range = AVCOL_RANGE_JPEG;
  CHECK(tensor::ffmpeg::color_of(f) == (TENSOR_YUV_BT601 | TENSOR_YUV_FULL));
  tensor::ffmpeg::Planes p = tensor::ffmpeg::planes(f);
  CHECK(p.nv12 && !p.v.defined());
  CHECK(p.u.dim() == 3 && p.u.size(2) == 2 && p.u.stride(1) == 2 && p.u.stride(0) == f->linesize[1]);
  tensor::Tensor x = tensor::Tensor::empty({1, 3, 10, 20}, tensor::kUInt8);
  tensor::ffmpeg::to_rgb(x, f, 1, {1.0}, {0.0}, TENSOR_YUV_BT601 | TENSOR_YUV_FULL | TENSOR_YUV_BGR);
  // pixel (0, 0): Y = 0, U = 70, V = 73 (full range BT.601): B = 1.772 * (70 - 128) < 0 -> 0
  CHECK((x.accessor<uint8_t, 4>()[0][0][0][0] == 0));
  av_frame_free(&f);
}

static void test_refusals() {
  AVFrame* f = frame(AV_PIX_FMT_YUV420P, 8, 8);
  f->format = AV_PIX_FMT_RGB24;
  CHECK(status_of([](const AVFrame* fr) { tensor::ffmpeg::planes(fr); }, f) == TENSOR_ERR_INVALID_ARGUMENT);
  f->format = AV_PIX_FMT_YUV420P;
  f->linesize[1] = -f->linesize[1];
  CHECK(status_of([](const AVFrame* fr) { tensor::ffmpeg::planes(fr); }, f) == TENSOR_ERR_INVALID_ARGUMENT);
  f->linesize[1] = -f->linesize[1];
  CHECK(status_of([](const AVFrame* fr) { tensor::ffmpeg::planes(fr); }, nullptr) == TENSOR_ERR_NULL_POINTER);
  // A bad dst: the status of the C call (the planes are released, no leak).
  CHECK(status_of(
            [](const AVFrame* fr) {
              tensor::Tensor d = tensor::Tensor::empty({4, 8, 8}, tensor::kFloat32);
              tensor::ffmpeg::to_rgb(d, fr, 0, {1.0}, {0.0});
            },
            f) == TENSOR_ERR_SHAPE);
  av_frame_free(&f);
}

int main() {
  test_i420();
  test_nv12();
  test_refusals();
  return harness_finish("ffmpeg_cpp");
}
